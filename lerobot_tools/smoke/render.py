"""Exit status and the text/JSON reports of a smoke run.

The functions read the model's objects (:mod:`lerobot_tools.smoke.model`) by attribute and import nothing from it:
the model imports this module lazily to render itself, so the two do not import each other.
"""


from __future__ import annotations

import json
from typing import IO, Any


def exit_status(reports: list[Any]) -> int:
    """0 when every target passed, else 1."""
    return 1 if any(r.failed for r in reports) else 0


def mb(n: int | None) -> str:
    return "n/a" if n is None else f"{n / 2**20:.0f} MB"


def fmt(v: float | None, unit: str = "", digits: int = 1) -> str:
    return "n/a" if v is None else f"{v:.{digits}f}{unit}"


def render_text(reports: list[Any], out: IO[str]) -> None:
    """Text report: validate's own report for blocked targets, then per target the runs and checks."""
    from lerobot_tools.report import render_text as render_validate

    blocked = [r for r in reports if r.blocked]
    if blocked:
        render_validate([r.validate for r in blocked], out)
        for r in blocked:
            ids = ", ".join(sorted({f.check for f in r.blocked}))
            cause = r.validate.root_cause()
            why = f"; cause: {cause[0]}" if cause else ""
            out.write(f"smoke: {r.target}: not run: validate found errors that break loading ({ids}){why}\n")
        out.write("\n")
    for r in reports:
        if r.blocked:
            continue
        version = f" ({r.codebase_version})" if r.codebase_version else ""
        out.write(f"{r.target}{version}\n")
        if r.frames is not None:
            out.write(f"  {r.episodes} episode(s), {r.frames} frame(s), video keys: "
                      f"{', '.join(r.video_keys) or 'none'}\n")
        other = [f for f in r.validate.findings if not f.known]
        if other:
            ids = ", ".join(f"{f.check} ({f.severity})" for f in other)
            out.write(f"  validate: not blocking: {ids}\n")
        for w in r.warnings:
            out.write(f"  warning: {w}\n")
        render_runs(r.runs, r.checks, out)
        if r.error:
            out.write(f"  FAIL  loader error: {r.error}\n")
        out.write(f"  peak RSS of the process tree: {mb(r.peak_rss_bytes)} (PSS {mb(r.peak_pss_bytes)}, "
                  f"shared pages counted once); {r.seconds:.1f} s\n\n")
    n_fail = sum(1 for r in reports if r.failed)
    out.write(f"Smoke: {len(reports)} dataset(s), {n_fail} failed, {len(blocked)} blocked by validate\n")


def _check_line(c: Any, prefix: str) -> str:
    tag = {True: "pass", False: "FAIL", None: "skip"}[c.ok]
    return f"  {tag:<5} {prefix}{c.name}: {c.detail}\n"


def render_runs(runs: list[Any], checks: list[Any], out: IO[str]) -> None:
    """The loader runs (figures, then their checks) and the target-level checks, one line each; shared by the
    single-dataset and the mixture report."""
    for run in runs:
        if run.error:
            out.write(f"  FAIL  loader {run.loader}: {run.error}\n")
            continue
        out.write(f"  loader {run.loader}: {run.batches} batch(es), {run.samples} samples; "
                  f"{fmt(run.samples_per_s)} samples/s, {fmt(run.decoded_frames_per_s)} decoded frames/s; "
                  f"first batch {fmt(run.first_batch_s and run.first_batch_s * 1e3, ' ms', 0)}; "
                  f"batch p50/p95/p99 {fmt(run.p50_ms)}/{fmt(run.p95_ms)}/{fmt(run.p99_ms)} ms; "
                  f"peak RSS {mb(run.peak_rss_bytes)} (PSS {mb(run.peak_pss_bytes)})\n")
        for c in run.checks:
            out.write(_check_line(c, f"{run.loader} "))
    for c in checks:
        out.write(_check_line(c, ""))


def to_dict(reports: list[Any]) -> dict:
    """The JSON document (docs/output.md): ``datasets`` (per target, with the validate report embedded),
    ``summary`` and ``exit_status``."""
    from lerobot_tools.exitcodes import document

    return document("smoke", [r.to_dict() for r in reports],
                    {"datasets": len(reports), "failed": sum(1 for r in reports if r.failed),
                     "blocked": sum(1 for r in reports if r.blocked)}, exit_status(reports))


def render_json(reports: list[Any], out: IO[str]) -> None:
    """One JSON document (:func:`to_dict`)."""
    json.dump(to_dict(reports), out, indent=2, ensure_ascii=False)
    out.write("\n")
