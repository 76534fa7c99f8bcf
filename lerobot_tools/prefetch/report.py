"""The outcome of a prefetch: per-repo results, the whole report, and the text table."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lerobot_tools.prefetch.hub import CallStats
from lerobot_tools.prefetch.local import TreeFile, check_listing
from lerobot_tools.prefetch.plan import RepoJob

MAX_PROBLEMS_SHOWN = 5


@dataclass
class RepoResult:
    """The outcome for one repo job.

    Attributes:
        status: ``complete`` (every needed file is on disk and verified), ``incomplete`` (some are
            missing or failed, or the entry has a problem) or ``error`` (the job could not run:
            malformed entry, repo/revision not found, listing failed).
        commit, commit_from: the commit used and where it came from (``sha``, ``lock``,
            ``resolved``, ``hub-cache-ref``, ``tree-cache``).
        needed: files the entries need. present: already on disk before downloading (or, offline,
            on disk). downloaded, failed: this run. missing: still needed and not on disk (dry run,
            offline). missing_upstream: needed by the metadata but absent from the repo.
        bytes_downloaded: bytes received. bytes_missing: size of ``missing`` (dry run/offline).
        requests: HTTP requests made for this repo. seconds: wall time from start to last file.
        waited_s: seconds spent waiting on rate limits/backoff. problems: one-line messages.
    """

    repo_id: str | None
    revision: str
    dest: Path
    sources: list[str]
    specs: list[str]
    kind: str
    status: str = "pending"
    commit: str | None = None
    commit_from: str | None = None
    needed: int = 0
    present: int = 0
    downloaded: int = 0
    failed: int = 0
    missing: int = 0
    missing_upstream: int = 0
    bytes_downloaded: int = 0
    bytes_missing: int = 0
    seconds: float = 0.0
    problems: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    stats: CallStats = field(default_factory=CallStats)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)
    _consecutive_failures: int = 0
    _skipped: int = 0
    _t0: float = 0.0
    _t1: float = 0.0

    @property
    def requests(self) -> int:
        return self.stats.requests

    @property
    def complete(self) -> bool:
        return self.status == "complete"

    @property
    def label(self) -> str:
        return f"{self.repo_id}@{self.revision}" if self.repo_id else str(self.dest)

    def problem(self, message: str) -> None:
        with self._lock:
            self.problems.append(message)

    def to_dict(self) -> dict[str, Any]:
        return {
            "target": self.label, "root": str(self.dest),
            "repo_id": self.repo_id, "revision": self.revision, "commit": self.commit,
            "commit_from": self.commit_from, "dest": str(self.dest), "sources": self.sources,
            "kind": self.kind, "status": self.status, "needed": self.needed, "present": self.present,
            "downloaded": self.downloaded, "failed": self.failed, "missing": self.missing,
            "missing_upstream": self.missing_upstream, "bytes_downloaded": self.bytes_downloaded,
            "bytes_missing": self.bytes_missing, "requests": self.requests,
            "requests_by_kind": dict(self.stats.by_kind), "requests_by_bucket": dict(self.stats.by_bucket),
            "rate_limited": self.stats.status.get("429", 0), "waited_s": round(self.stats.waited_s, 3),
            "seconds": round(self.seconds, 3), "problems": self.problems, "notes": self.notes,
        }


@dataclass
class PrefetchReport:
    """Everything a prefetch did. ``exit_status`` is 0 when every job is complete, else 1.

    ``budgets`` is, per Hub rate-limit bucket (``api``, ``resolvers``, ``cdn``...), the requests granted,
    the 429 answers, the seconds waited and the limits in force at the end (:meth:`Budgets.to_dict
    <lerobot_tools.prefetch.budget.Budgets.to_dict>`); empty offline.
    """

    mixture: Path
    results: list[RepoResult]
    endpoint: str | None
    offline: bool
    dry_run: bool
    lock_path: Path | None
    lock_written: bool = False
    requests: int = 0
    seconds: float = 0.0
    notes: list[str] = field(default_factory=list)
    budgets: dict[str, Any] = field(default_factory=dict)

    @property
    def requests_by_bucket(self) -> dict[str, int]:
        """Requests per bucket, summed over repos."""
        out: dict[str, int] = {}
        for r in self.results:
            for b, n in r.stats.by_bucket.items():
                out[b] = out.get(b, 0) + n
        return dict(sorted(out.items()))

    @property
    def rate_limited(self) -> int:
        """HTTP 429 answers received, all repos."""
        return sum(r.stats.status.get("429", 0) for r in self.results)

    @property
    def exit_status(self) -> int:
        return 0 if all(r.complete for r in self.results) else 1

    def summary(self) -> dict[str, Any]:
        """Totals: repos (``datasets``) by status, requests, 429 answers, bytes downloaded and missing, seconds."""
        by = {s: sum(1 for r in self.results if r.status == s) for s in ("complete", "incomplete", "error")}
        return {"datasets": len(self.results), **by, "requests": self.requests, "rate_limited": self.rate_limited,
                "bytes_downloaded": sum(r.bytes_downloaded for r in self.results),
                "bytes_missing": sum(r.bytes_missing for r in self.results), "seconds": round(self.seconds, 3)}

    def to_dict(self) -> dict[str, Any]:
        """The JSON document (docs/output.md): ``datasets`` (one per repo and destination), ``summary``,
        ``exit_status``, then the run's own keys (mixture, endpoint, mode, lock file, requests per bucket,
        budgets)."""
        from lerobot_tools.exitcodes import document

        return document("prefetch", [r.to_dict() for r in self.results], self.summary(), self.exit_status,
                        mixture=str(self.mixture), endpoint=self.endpoint, offline=self.offline, dry_run=self.dry_run,
                        lock=str(self.lock_path) if self.lock_path else None, lock_written=self.lock_written,
                        requests=self.requests, requests_by_bucket=self.requests_by_bucket,
                        rate_limited=self.rate_limited, budgets=self.budgets, seconds=round(self.seconds, 3),
                        notes=self.notes)


def new_result(job: RepoJob) -> RepoResult:
    kind = "local" if job.is_local else ("whole" if job.whole else "episodes")
    return RepoResult(job.repo_id, job.revision, job.dest, list(job.sources), list(job.specs), kind)


def summarise_paths(label: str, paths: list[str]) -> str:
    shown = ", ".join(paths[:3]) + (f" and {len(paths) - 3} more" if len(paths) > 3 else "")
    return f"{len(paths)} {label}: {shown}"


def screen_listing(job: RepoJob, res: RepoResult, tree: dict[str, TreeFile]) -> dict[str, TreeFile]:
    """The listing to work from: every path checked (:func:`lerobot_tools.prefetch.local.check_listing`),
    entries in reserved folders (``.lrtool/``, ``.cache/huggingface/``) dropped with a note.

    Raises:
        LrtoolError: a path is unusable or resolves outside ``job.dest``: the repo is refused.
    """
    usable, reserved = check_listing(job.dest, tree)
    if reserved:
        res.notes.append(summarise_paths("listed files in folders reserved for lrtool and huggingface_hub "
                                         "bookkeeping (.lrtool/, .cache/huggingface/) skipped", reserved))
    return usable


def human_bytes(n: int) -> str:
    """``1536`` -> ``"1.5 KiB"``."""
    value = float(n)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if value < 1024 or unit == "TiB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{n} B"  # pragma: no cover


def render_text(report: PrefetchReport, out) -> None:
    """The per-repo table (files present, downloaded, failed, bytes, requests in all and in the Hub's
    ``api`` / ``resolvers`` buckets, seconds), problems, the budgets and a summary line."""
    mode = "offline check" if report.offline else ("dry run" if report.dry_run else "prefetch")
    headers = ["repo", "revision", "commit", "status", "needed", "present",
               "missing" if (report.offline or report.dry_run) else "downloaded", "failed",
               "to fetch" if (report.offline or report.dry_run) else "bytes", "requests", "api", "resolve",
               "seconds"]
    rows = []
    for r in report.results:
        moved = r.missing if (report.offline or report.dry_run) else r.downloaded
        nbytes = r.bytes_missing if (report.offline or report.dry_run) else r.bytes_downloaded
        rows.append([r.label if r.repo_id else str(r.dest), "" if r.repo_id is None else r.revision,
                     (r.commit or "")[:12], r.status, str(r.needed), str(r.present), str(moved), str(r.failed),
                     human_bytes(nbytes), str(r.requests), str(r.stats.by_bucket.get("api", 0)),
                     str(r.stats.by_bucket.get("resolvers", 0)), f"{r.seconds:.1f}"])
    widths = [max(len(h), *(len(row[i]) for row in rows)) if rows else len(h) for i, h in enumerate(headers)]
    right = set(range(4, len(headers)))

    def fmt(cells):
        return "  ".join(c.rjust(widths[i]) if i in right else c.ljust(widths[i]) for i, c in enumerate(cells)).rstrip()

    out.write(fmt(headers) + "\n")
    for row in rows:
        out.write(fmt(row) + "\n")
    for r in report.results:
        # an entry that could not run (a malformed line) is named with the mixture file and line it comes from
        label = f"{r.sources[0]}: {r.label}" if r.status == "error" and r.sources else r.label
        for p in r.problems[:MAX_PROBLEMS_SHOWN]:
            out.write(f"{label}: {p}\n")
        if len(r.problems) > MAX_PROBLEMS_SHOWN:
            out.write(f"{label}: ... and {len(r.problems) - MAX_PROBLEMS_SHOWN} more problems\n")
        for n in r.notes:
            out.write(f"{label}: note: {n}\n")
    for n in report.notes:
        out.write(f"note: {n}\n")
    n_ok = sum(r.complete for r in report.results)
    total_dl = sum(r.bytes_downloaded for r in report.results)
    for name, b in report.budgets.items():
        if not b.get("used"):
            continue
        limits = "; ".join(f"{lim['quota']} per {lim['window_s']:g} s ({lim['source']})" for lim in b["limits"])
        out.write(f"budget {name}: {b['used']} requests, {b['rate_limited']} answered 429, waited "
                  f"{b['waited_s']:.1f} s; limit {limits or 'none'}\n")
    by_bucket = ", ".join(f"{k} {v}" for k, v in report.requests_by_bucket.items())
    summary = (f"{mode}: {n_ok}/{len(report.results)} complete, {report.requests} requests"
               + (f" ({by_bucket})" if by_bucket else "") + f", {report.rate_limited} rate limited (429), "
               f"{human_bytes(total_dl)} downloaded in {report.seconds:.1f} s")
    if report.lock_path is not None and not report.offline and not report.dry_run:
        summary += f"; lock {report.lock_path}{' updated' if report.lock_written else ' unchanged'}"
    out.write(summary + "\n")
