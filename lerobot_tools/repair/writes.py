"""Writing one planned repair change below a root (the dataset, or its shadow), atomically and verified, and the
order in which a plan's changes are written. Used by the real run (:mod:`lerobot_tools.repair.apply`) and by the
trial of a plan on a shadow (:mod:`lerobot_tools.repair.judge`).

Every rewrite goes to a temporary file next to its target, is verified, then replaces the target with
``os.replace`` (:func:`lerobot_tools._io.atomic_path`); a move is one ``os.rename`` with both folders fsynced.
"""

from __future__ import annotations

import os
from pathlib import Path

from lerobot_tools._io import atomic_path, fsync_dir
from lerobot_tools.errors import LrtoolError
from lerobot_tools.repair import parquet as pqrw
from lerobot_tools.repair.model import Move, ParquetChange, RepairPlan, TasksRewrite, TextChange


def write_one(root: Path, change: ParquetChange | TasksRewrite | TextChange | Move) -> None:
    """Write one planned change below ``root`` (the dataset, or its shadow), atomically and verified.

    Raises:
        LrtoolError, OSError, ValueError: the change could not be written or did not verify (the file is then
            untouched).
    """
    if isinstance(change, ParquetChange):
        import pyarrow.parquet as pq

        path = root / change.relpath
        schema = pq.read_schema(path)
        hf = None if change.hf_features is None else pqrw_dump(change.hf_features)
        dropped = [op.column for op in change.ops if op.kind == "drop"]
        md = pqrw.new_metadata(schema, hf, dropped)
        pqrw.rewrite_parquet(path, change.ops, md)
    elif isinstance(change, TasksRewrite):
        pqrw.write_tasks_parquet(root / change.relpath, change.rows)
    elif isinstance(change, TextChange):
        def verify(tmp: Path, change=change) -> None:
            text = tmp.read_text(encoding="utf-8")
            if text != change.new_text:
                raise ValueError(f"{change.relpath}: written text differs from the plan")
            if change.verify is not None:
                change.verify(text)

        with atomic_path(root / change.relpath, verify=verify) as tmp:
            tmp.write_bytes(change.new_text.encode("utf-8"))
    elif hasattr(change, "write"):  # a rewrite that writes and verifies itself (e.g. statistics cells)
        change.write(root)
    elif isinstance(change, Move):
        src, dst = root / change.src, root / change.dst
        if not src.is_file():
            if dst.is_file():
                return  # already moved (a resumed run)
            raise LrtoolError("file to move is missing", change.src)
        if dst.exists():
            raise LrtoolError("destination already exists", change.dst)
        dst.parent.mkdir(parents=True, exist_ok=True)
        os.rename(src, dst)
        fsync_dir(dst.parent)
        fsync_dir(src.parent)
        _prune_empty(root, src.parent)
    else:  # pragma: no cover
        raise TypeError(type(change).__name__)


def pqrw_dump(doc: dict) -> bytes:
    from lerobot_tools.repair.hfmeta import dump

    return dump(doc)


def _prune_empty(root: Path, d: Path) -> None:
    """Remove folders emptied by moves, up to (not including) the top-level folder (``videos/``)."""
    root = Path(root)
    while d != root and d.parent != root:
        try:
            d.rmdir()
        except OSError:
            return
        d = d.parent


def ordered_changes(plan: RepairPlan) -> list:
    """The writes of a plan in order: data parquet, task table, moves, other JSON, meta/info.json last."""
    out: list = list(plan.parquet_changes)
    if plan.tasks_rewrite is not None:
        out.append(plan.tasks_rewrite)
    out += plan.rewrites
    out += plan.moves
    out += sorted(plan.text_changes, key=lambda c: c.relpath == "meta/info.json")
    return out
