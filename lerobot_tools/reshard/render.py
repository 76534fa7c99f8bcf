"""Exit status, error lines and the text/JSON reports of a :class:`~lerobot_tools.reshard.model.ReshardRun`.

The functions read the model's objects (:mod:`lerobot_tools.reshard.model`) by attribute and import nothing from it:
the model imports this module lazily to render itself, so the two do not import each other.
"""


from __future__ import annotations

import json
import re
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


#: a run of more than this many files with the same action is one summary line (``--verbose`` lists them all)
MAX_LISTED = 3

_LABELS = {"resharded": "resharded", "conforms": "conforms", "planned": "would reshard", "skipped": "skipped",
           "failed": "FAILED"}
_NUMBER = re.compile(r"\d+(\.\d+)?")


def _action_key(f: Any) -> tuple:
    """What makes two files' actions the same: status, why (numbers aside: "1 of 1" and "2 of 3 row group(s) span
    several episodes" are one reason), the kinds of notes, and the error of a failed or skipped file."""
    def norm(texts: list[str]) -> tuple[str, ...]:
        return tuple(_NUMBER.sub("#", t) for t in texts)

    return f.status, norm(f.reasons), norm(f.notes), f.error


def _file_line(f: Any, out: IO[str]) -> None:
    """Today's per-file line (status, row groups before -> after, bytes, seconds, why) and its notes."""
    from lerobot_tools.sniff import human_size

    label = _LABELS[f.status]
    if f.status in ("failed", "skipped"):
        out.write(f"  {label:<13} {f.relpath}: {f.error}\n")
        return
    rg = (f"row groups {f.row_groups_before}" if f.status == "conforms"
          else f"row groups {f.row_groups_before} -> {f.row_groups_after}")
    size = (f"{human_size(f.bytes_before)} -> {human_size(f.bytes_after)}" if f.status == "resharded"
            else human_size(f.bytes_before))
    tail = "already episode-aligned, skipped" if f.status == "conforms" else "; ".join(f.reasons)
    out.write(f"  {label:<13} {f.relpath}  {rg}  {size}  {f.seconds:.2f} s  ({tail})\n")
    for note in f.notes:
        out.write(f"                note: {note}\n")


def _group_lines(files: list[Any], out: IO[str]) -> None:
    """One summary of files whose action is the same (:func:`_action_key`): the count, the totals, the first
    file's reasons and notes, then the first :data:`MAX_LISTED` paths and how many more."""
    from lerobot_tools.sniff import human_size

    f0, n = files[0], len(files)
    label = _LABELS[f0.status]
    if f0.status in ("failed", "skipped"):
        head = f"{n} files: {f0.error}"
    else:
        def total(attr: str) -> int:
            return sum(getattr(f, attr) or 0 for f in files)

        rg = (f"row groups {total('row_groups_before')}" if f0.status == "conforms"
              else f"row groups {total('row_groups_before')} -> {total('row_groups_after')}")
        size = (f"{human_size(total('bytes_before'))} -> {human_size(total('bytes_after'))}"
                if f0.status == "resharded" else human_size(total("bytes_before")))
        why = "already episode-aligned, skipped" if f0.status == "conforms" else "; ".join(f0.reasons)
        if f0.status != "conforms" and any(f.reasons != f0.reasons for f in files):
            why = f"e.g. {why}"
        head = f"{n} files  {rg}  {size}  {sum(f.seconds for f in files):.2f} s  ({why})"
    out.write(f"  {label:<13} {head}\n")
    for note in f0.notes:
        out.write(f"                note: {note}" + ("" if all(f.notes == f0.notes for f in files)
                                                     else " (first file; the others alike)") + "\n")
    shown = ", ".join(f.relpath for f in files[:MAX_LISTED])
    out.write(f"                {shown} and {n - MAX_LISTED} more (--verbose lists every file)\n")


def render_text(run: Any, out: IO[str], *, verbose: bool = False) -> None:
    """Per dataset: the files by action, then the shard count, then a summary line.

    A run of more than :data:`MAX_LISTED` files with the same action (same status and reasons, numbers aside; the
    same error) is summarised in two lines: the count with the totals (row groups, bytes, seconds) and the first
    paths; so a 1,000-file dataset fits a screen. ``verbose`` lists one line per file."""
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
        if verbose:
            for f in d.files:
                _file_line(f, out)
        else:
            groups: dict[tuple, list[Any]] = {}
            for f in d.files:
                groups.setdefault(_action_key(f), []).append(f)
            for files in groups.values():
                if len(files) > MAX_LISTED:
                    _group_lines(files, out)
                else:
                    for f in files:
                        _file_line(f, out)
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
        from lerobot_tools.sniff import human_size

        out.write(f"Summary: {s['files']} file(s) in {s['datasets']} dataset(s): {s['resharded']} resharded, "
                  f"{s['conforms']} already conform, {_skipped(s)}{s['failed']} failed{failed_ds}; row groups "
                  f"{s['row_groups_before']} -> {s['row_groups_after']}; {human_size(s['bytes_before'])} -> "
                  f"{human_size(s['bytes_after'])}; {s['seconds']:.1f} s\n")


def _skipped(summary: dict) -> str:
    return f"{summary['skipped']} skipped (placeholders), " if summary.get("skipped") else ""


def to_json(run: Any) -> dict[str, Any]:
    """The run as a JSON-able dict (docs/output.md): ``datasets`` with ``files`` and ``shards``, ``summary``,
    ``exit_status``, and ``options``."""
    from lerobot_tools.exitcodes import document

    datasets = []
    for d in run.datasets:
        dd = asdict(d)
        if d.shards is not None:
            dd["shards"] = {**asdict(d.shards), "files_divide": d.shards.files_divide,
                            "row_groups_divide": d.shards.row_groups_divide, "even": d.shards.even,
                            "message": d.shards.message()}
        datasets.append(dd)
    return document("reshard", datasets, run.summary(), exit_status(run), options=asdict(run.options))


def render_json(run: Any, out: IO[str]) -> None:
    """One JSON document (see :func:`to_json`)."""
    json.dump(to_json(run), out, indent=2)
    out.write("\n")
