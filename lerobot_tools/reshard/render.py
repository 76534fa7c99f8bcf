"""Exit status, error lines and the text/JSON reports of a :class:`~lerobot_tools.reshard.model.ReshardRun`.

The functions read the model's objects (:mod:`lerobot_tools.reshard.model`) by attribute and import nothing from it:
the model imports this module lazily to render itself, so the two do not import each other.
"""


from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path
from typing import Any, IO, Iterator


def exit_status(run: Any) -> int:
    """0 = every file resharded, conforming or planned; 1 = a file or a dataset failed, or a placeholder file
    was skipped (its dataset is not resharded in full)."""
    if any(d.error for d in run.datasets) or any(f.status in ("failed", "skipped") for f in run.files()):
        return 1
    return 0


def errors(run: Any) -> Iterator[str]:
    """One line per failure: ``<dataset>/<relpath>: <problem>`` or ``<dataset>: <problem>``."""
    for d in run.datasets:
        if d.error:
            yield f"{d.target}: {d.error}"
        for f in d.files:
            if f.status in ("failed", "skipped"):
                yield f"{_join(d.root or d.target, f.relpath)}: {f.error}"


def _join(root: str, rel: str) -> str:
    return str(Path(root) / rel)


def render_text(run: Any, out: IO[str]) -> None:
    """Per dataset: one line per file (status, row groups before -> after, bytes, seconds, why), the
    shard count, then a summary line."""
    from lerobot_tools.sniff import human_size

    dry = run.options.dry_run
    for d in run.datasets:
        head = d.target + (f" ({d.codebase_version})" if d.codebase_version else "")
        out.write(head + "\n")
        if d.error:
            out.write(f"  failed: {d.error}\n")
        for note in d.notes:
            out.write(f"  note: {note}\n")
        if d.removed_temps:
            verb = "would remove" if dry else "removed"
            out.write(f"  {verb} {len(d.removed_temps)} stale temporary file(s) from an interrupted run: "
                      f"{', '.join(d.removed_temps[:3])}{' ...' if len(d.removed_temps) > 3 else ''}\n")
        for f in d.files:
            label = {"resharded": "resharded", "conforms": "conforms", "planned": "would reshard",
                     "skipped": "skipped", "failed": "FAILED"}[f.status]
            if f.status in ("failed", "skipped"):
                out.write(f"  {label:<13} {f.relpath}: {f.error}\n")
                continue
            rg = (f"row groups {f.row_groups_before}" if f.status == "conforms"
                  else f"row groups {f.row_groups_before} -> {f.row_groups_after}")
            if f.status == "resharded":
                size = f"{human_size(f.bytes_before)} -> {human_size(f.bytes_after)}"
            else:
                size = human_size(f.bytes_before)
            tail = "already episode-aligned, skipped" if f.status == "conforms" else "; ".join(f.reasons)
            out.write(f"  {label:<13} {f.relpath}  {rg}  {size}  {f.seconds:.2f} s  ({tail})\n")
            for note in f.notes:
                out.write(f"                note: {note}\n")
        if d.shards is not None:
            pre = "planned shards" if dry else "shards"
            out.write(f"  {pre}: {d.shards.message()}\n")
        out.write("\n")
    s = run.summary()
    failed_ds = f"; {s['datasets_failed']} dataset(s) could not be processed" if s["datasets_failed"] else ""
    if dry:
        out.write(f"Dry run: {s['files']} file(s) in {s['datasets']} dataset(s): {s['planned']} would be resharded "
                  f"(row groups {s['row_groups_before']} -> {s['row_groups_after']}), {s['conforms']} already conform, "
                  f"{_skipped(s)}{s['failed']} failed{failed_ds}; nothing written\n")
    else:
        out.write(f"Summary: {s['files']} file(s) in {s['datasets']} dataset(s): {s['resharded']} resharded, "
                  f"{s['conforms']} already conform, {_skipped(s)}{s['failed']} failed{failed_ds}; row groups {s['row_groups_before']} -> "
                  f"{s['row_groups_after']}; {human_size(s['bytes_before'])} -> {human_size(s['bytes_after'])}; "
                  f"{s['seconds']:.1f} s\n")


def _skipped(summary: dict) -> str:
    return f"{summary['skipped']} skipped (placeholders), " if summary.get("skipped") else ""


def to_json(run: Any) -> dict[str, Any]:
    """The run as a JSON-able dict (``options``, ``datasets`` with ``files`` and ``shards``, ``summary``)."""
    datasets = []
    for d in run.datasets:
        dd = asdict(d)
        if d.shards is not None:
            dd["shards"] = {**asdict(d.shards), "files_divide": d.shards.files_divide,
                            "row_groups_divide": d.shards.row_groups_divide, "even": d.shards.even,
                            "message": d.shards.message()}
        datasets.append(dd)
    return {"options": asdict(run.options), "datasets": datasets, "summary": run.summary(),
            "exit_status": exit_status(run)}


def render_json(run: Any, out: IO[str]) -> None:
    """One JSON document (see :func:`to_json`)."""
    json.dump(to_json(run), out, indent=2)
    out.write("\n")
