"""``lrtool prefetch`` as a distributed job.

Work items are the prefetch's repo jobs (:func:`lerobot_tools.prefetch.plan.plan_jobs`: the mixture's
entries grouped by destination folder, one revision per folder), so two tasks never write the same folder,
let alone the same file. Their weight is the size of the repo's cached tree listing when an earlier run left
one (else one byte each: balanced by count).

The Hub's rate limits are per IP address or per user, not per process, so each task takes
``budget_fraction / concurrent`` of every bucket, where ``concurrent`` is the number of tasks that may run
at once (``--workers``, else ``--tasks``; WORLD for ``--shard``): the whole run stays within one process's
budget. A task runs all its repos in one prefetch (shared threads and budget). Tasks read the lock file but
never write it; the merge sums the requests, 429s and waits, and the process that merges writes the lock once
with every resolved commit, at the path its own command line names (the launching command's ``--lock`` or the
default beside its mixture; ``lrtool report DIR --lock FILE``): never at a path read from the run folder.
"""

from __future__ import annotations

from dataclasses import fields
from pathlib import Path
from typing import IO, Any

from lerobot_tools.distributed.partition import DatasetSize

#: PrefetchOptions fields a plan carries (the rest are test hooks)
_OPTION_FIELDS = ("local_dir_root", "max_workers", "dry_run", "offline", "lock_path", "use_lock", "update_lock",
                  "api_requests", "resolve_requests", "window_s", "budget_fraction", "max_wait_s", "meta_only")


def make_spec(mixture: Path, options, concurrent: int) -> dict[str, Any]:
    """The plan spec: the mixture (absolute), its repo jobs, the options, and how many tasks run at once.

    Raises:
        UsageError: the mixture cannot be read.
    """
    from lerobot_tools.dataset.mixture import read_mixture
    from lerobot_tools.prefetch.plan import plan_jobs

    jobs = plan_jobs(read_mixture(Path(mixture)), options.local_dir_root)
    opts = {}
    for name in _OPTION_FIELDS:
        v = getattr(options, name)
        opts[name] = str(Path(v).absolute()) if isinstance(v, Path) else v
    return {"mixture": str(Path(mixture).absolute()), "mixture_arg": str(mixture), "options": opts,
            "concurrent": max(1, int(concurrent)), "targets": [j.key for j in jobs]}


def _options(spec: dict, *, task: bool):
    from lerobot_tools.prefetch.run import PrefetchOptions

    d = dict(spec["options"])
    d.setdefault("meta_only", False)  # a plan written before the option existed
    for name in ("local_dir_root", "lock_path"):
        if d.get(name) is not None:
            d[name] = Path(d[name])
    if task:
        d["budget_fraction"] = d["budget_fraction"] / spec["concurrent"]
        d["progress"] = False
    return PrefetchOptions(**d)


def _jobs(spec: dict):
    from lerobot_tools.dataset.mixture import read_mixture
    from lerobot_tools.prefetch.plan import plan_jobs

    o = spec["options"]
    jobs = plan_jobs(read_mixture(Path(spec["mixture"])), Path(o["local_dir_root"]) if o["local_dir_root"] else None)
    if [j.key for j in jobs] != spec["targets"]:
        from lerobot_tools.errors import UsageError

        raise UsageError("the mixture changed since the run was planned; start a new run", spec["mixture"])
    return jobs


def result_to_dict(r) -> dict[str, Any]:
    """A :class:`~lerobot_tools.prefetch.report.RepoResult` as JSON, every public field and its call counters."""
    d = {f.name: getattr(r, f.name) for f in fields(r) if not f.name.startswith("_") and f.name != "stats"}
    d["dest"] = str(r.dest)
    s = r.stats
    d["stats"] = {"requests": s.requests, "by_kind": dict(s.by_kind), "by_bucket": dict(s.by_bucket),
                  "status": dict(s.status), "waited_s": s.waited_s}
    return d


def result_from_dict(d: dict[str, Any]):
    """Inverse of :func:`result_to_dict`."""
    from collections import Counter

    from lerobot_tools.prefetch.hub import CallStats
    from lerobot_tools.prefetch.report import RepoResult

    d = dict(d)
    st = d.pop("stats")
    d["dest"] = Path(d["dest"])
    r = RepoResult(**d)
    r.stats = CallStats(requests=st["requests"], by_kind=Counter(st["by_kind"]), by_bucket=Counter(st["by_bucket"]),
                        status=Counter(st["status"]), waited_s=st["waited_s"])
    return r


class PrefetchJob:
    """See the module docstring."""

    command = "prefetch"

    def sizes(self, spec: dict) -> list[DatasetSize]:
        from lerobot_tools.prefetch.local import cached_tree_commits, read_tree_cache

        out = []
        for job in _jobs(spec):
            n = 0
            if job.repo_id and job.error is None:
                for commit in cached_tree_commits(job.dest)[:1]:
                    tree = read_tree_cache(job.dest, commit) or {}
                    n = sum(max(0, getattr(tf, "size", 0) or 0) for tf in tree.values())
            out.append(DatasetSize(max(1, n)))
        return out

    def run_datasets(self, spec: dict, indices: list[int]) -> list[dict]:
        """Prefetch the repo jobs ``indices`` in one run (shared threads and request budget)."""
        from lerobot_tools.prefetch.run import prefetch

        _jobs(spec)  # refuse a mixture that changed since the plan
        report = prefetch(Path(spec["mixture"]), _options(spec, task=True), only=list(indices), write_lock=False)
        task = {"endpoint": report.endpoint, "requests": report.requests, "seconds": report.seconds,
                "budgets": report.budgets, "notes": report.notes}
        out = [{"result": result_to_dict(r)} for r in report.results]
        if out:
            out[0]["task"] = task
        return out

    def run_dataset(self, spec: dict, index: int) -> dict:
        return self.run_datasets(spec, [index])[0]

    def run_head(self, spec: dict, index: int) -> None:  # never split: a repo is one folder
        return None

    def run_files(self, spec: dict, index: int, relpaths: list[str]) -> None:
        return None

    def merge(self, spec: dict, datasets: list) -> Any:
        """The :class:`~lerobot_tools.prefetch.report.PrefetchReport` of the whole run (the lock file is written by
        :meth:`write_outputs`)."""
        from lerobot_tools import _env
        from lerobot_tools.prefetch.report import PrefetchReport

        o = _options(spec, task=False)
        results = [result_from_dict(d.whole["result"]) for d in datasets]
        tasks = [d.whole["task"] for d in datasets if "task" in d.whole]
        offline = _env.hub_offline() if o.offline is None else bool(o.offline)
        budgets: dict[str, Any] = {}
        for t in tasks:
            for name, b in (t.get("budgets") or {}).items():
                m = budgets.setdefault(name, {"used": 0, "rate_limited": 0, "waited_s": 0.0, "limits": b["limits"]})
                m["used"] += b["used"]
                m["rate_limited"] += b["rate_limited"]
                m["waited_s"] = round(m["waited_s"] + b["waited_s"], 3)
        notes: list[str] = []
        for t in tasks:
            notes += [n for n in t.get("notes") or [] if n not in notes]
        if len(tasks) > 1 and not offline:
            notes.append(f"{len(tasks)} tasks shared the request budget, each taking 1/{spec['concurrent']} of "
                         "every bucket (the limits shown are one task's)")
        report = PrefetchReport(Path(spec["mixture_arg"]), results,
                                next((t["endpoint"] for t in tasks if t.get("endpoint")), None), offline, o.dry_run,
                                None, False, sum(t["requests"] for t in tasks),
                                max((t["seconds"] for t in tasks), default=0.0), notes, budgets)
        return report

    def write_outputs(self, result: Any, spec: dict, outputs: dict) -> list[str]:
        """Write the lock file at ``outputs["lock"]`` (a path from the command line of the process that merges)
        with every commit the tasks resolved; without it (``lrtool report`` given no ``--lock``) note that none
        was written. Nothing on a dry or offline run, or with ``--no-lock``."""
        from lerobot_tools.prefetch.lock import LockFile

        o = _options(spec, task=False)
        if not o.use_lock or o.dry_run or result.offline:
            return []
        path = outputs.get("lock")
        if path is None:
            result.notes.append("lock file not written: `lrtool report DIR --lock FILE` writes it (a run folder "
                                "never names a file lrtool writes outside it)")
            return []
        lock = LockFile.read(Path(path))
        jobs = _jobs(spec)
        lock.retain({job.key for job in jobs if job.repo_id})
        for job, res in zip(jobs, result.results):
            if job.repo_id and res.commit and res.status != "error":
                lock.set(job.repo_id, job.revision, res.commit)
        lock.endpoint = result.endpoint
        result.lock_path = Path(path)
        try:
            result.lock_written = lock.write()
        except OSError as exc:
            result.notes.append(f"lock file {lock.path} not written ({exc.strerror or exc})")
        return []

    def report(self, result: Any, render: dict, out: IO[str]) -> int:
        import json

        from lerobot_tools.prefetch.report import render_text

        if render.get("format") == "json":
            json.dump(result.to_dict(), out, indent=2)
            out.write("\n")
        else:
            render_text(result, out)
        return result.exit_status


JOB = PrefetchJob()
