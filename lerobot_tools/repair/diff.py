"""Show what a repair changes: a unified diff of every JSON/JSONL file, and for each parquet file its columns
and types (and key-value metadata) before and after; plus the text and JSON reports of ``lrtool repair``."""

from __future__ import annotations

import difflib
import json
from pathlib import Path
from typing import IO, Any

from lerobot_tools.repair.model import ParquetChange, RepairPlan, TasksRewrite, TextChange


def unified(change: TextChange) -> str:
    """Unified diff (``a/<path>`` -> ``b/<path>``, 3 lines of context) of a JSON / JSONL file."""
    return "".join(difflib.unified_diff(
        change.old_text.splitlines(keepends=True), change.new_text.splitlines(keepends=True),
        fromfile=f"a/{change.relpath}", tofile=f"b/{change.relpath}", n=3))


def _meta_state(md: dict, key: bytes) -> str:
    return "present" if key in (md or {}) else "absent"


def parquet_summary(root: Path, change: ParquetChange) -> dict[str, Any]:
    """Columns ``[(name, Arrow type)]`` before and after, and what happens to the ``huggingface`` metadata."""
    import pyarrow.parquet as pq

    from lerobot_tools.repair.parquet import new_schema

    schema = pq.read_schema(root / change.relpath)
    after = new_schema(schema, change.ops, None)
    hf_before = _meta_state(schema.metadata, b"huggingface")
    if change.hf_features is None:
        hf_after = hf_before if not any(op.kind == "drop" for op in change.ops) or hf_before == "absent" else "updated"
    else:
        hf_after = "restored" if hf_before == "absent" else "updated"
    return {
        "path": change.relpath,
        "checks": change.checks,
        "before": [[f.name, str(f.type)] for f in schema],
        "after": [[f.name, str(f.type)] for f in after],
        "huggingface_metadata": [hf_before, hf_after],
    }


def tasks_summary(root: Path, change: TasksRewrite) -> dict[str, Any]:
    """Columns before and after of a ``tasks.parquet`` rewrite, its form, and the rows that change."""
    import pyarrow.parquet as pq

    schema = pq.read_schema(root / change.relpath)
    old = dict(change.old_rows)
    appended = [[i, label] for i, label in change.rows if i not in old]
    return {
        "path": change.relpath,
        "checks": change.checks,
        "before": [[f.name, str(f.type)] for f in schema],
        "after": [["task_index", "int64"], ["task", "large_string (pandas index)"]],
        "form": [change.old_form, "pandas-index"],
        "rows": [len(change.old_rows), len(change.rows)],
        "reordered": [i for i, _ in change.rows if i in old] != [i for i, _ in change.old_rows],
        "appended": appended,
    }


def plan_changes(plan: RepairPlan) -> dict[str, Any]:
    """The concrete changes of a plan as plain data (JSON output, and the source of the text output)."""
    root = Path(plan.root) if plan.root else Path(".")
    return {
        "json": [{"path": c.relpath, "checks": c.checks, "diff": unified(c)} for c in plan.text_changes],
        "parquet": [parquet_summary(root, c) for c in plan.parquet_changes]
                   + ([tasks_summary(root, plan.tasks_rewrite)] if plan.tasks_rewrite else []),
        "moves": [m.to_dict() for m in plan.moves],
        "cells": [c.summary() for c in plan.rewrites],
    }


def _cols(cols: list[list[str]]) -> dict[str, str]:
    return {n: t for n, t in cols}


def render_changes(changes: dict[str, Any], out: IO[str], indent: str = "  ") -> None:
    """Text form of :func:`plan_changes`: diffs verbatim, parquet columns whose type changes or that appear /
    disappear, then moves."""
    for c in changes["json"]:
        for line in c["diff"].splitlines():
            out.write(f"{indent}{line}\n")
    for p in changes["parquet"]:
        out.write(f"{indent}{p['path']}  ({', '.join(p['checks'])})\n")
        before, after = _cols(p["before"]), _cols(p["after"])
        for name in list(before) + [n for n in after if n not in before]:
            a, b = before.get(name), after.get(name)
            if a == b:
                continue
            out.write(f"{indent}  {name}: {a or '(absent)'} -> {b or '(dropped)'}\n")
        if "huggingface_metadata" in p and p["huggingface_metadata"][0] != p["huggingface_metadata"][1]:
            out.write(f"{indent}  `huggingface` metadata: {p['huggingface_metadata'][0]} -> {p['huggingface_metadata'][1]}\n")
        elif "huggingface_metadata" in p and p["huggingface_metadata"][1] == "updated":
            out.write(f"{indent}  `huggingface` metadata: updated\n")
        if "form" in p and p["form"][0] != p["form"][1]:
            out.write(f"{indent}  form: {p['form'][0]} -> {p['form'][1]}\n")
        if "rows" in p:
            out.write(f"{indent}  rows: {p['rows'][0]} -> {p['rows'][1]}"
                      + (" (sorted by task_index)" if p["reordered"] else "")
                      + "".join(f"; appended {i}: {label!r}" for i, label in p["appended"]) + "\n")
        unchanged = [n for n in before if before.get(n) == after.get(n)]
        if unchanged and "rows" not in p:
            out.write(f"{indent}  unchanged: {', '.join(unchanged)}\n")
    for c in changes.get("cells", []):
        out.write(f"{indent}{c['path']}  ({', '.join(c['checks'])})\n")
        for cell in c["cells"]:
            out.write(f"{indent}  episode {cell['episode']} {cell['column']}: {_brief(cell['before'])} -> {_brief(cell['after'])}\n")
    for m in changes["moves"]:
        out.write(f"{indent}move {m['src']} -> {m['dst']}\n")


def _brief(v: Any, limit: int = 100) -> str:
    text = json.dumps(v)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def result_to_dict(result) -> dict[str, Any]:
    """One dataset's repair result as plain data (``--format json``)."""
    plan = result.plan
    d: dict[str, Any] = {
        "target": plan.target,
        "root": str(plan.root) if plan.root else None,
        "codebase_version": plan.codebase_version,
        "dry_run": result.dry_run,
        "status": result.status,
    }
    if plan.cannot_run:
        d["error"] = plan.cannot_run
        return d
    if plan.refused:
        d["refused"] = plan.refused
    d["repairs"] = [r.to_dict() for r in plan.repairs]
    d["findings"] = [disp.to_dict() for disp in plan.dispositions]
    d["changes"] = result.changes if getattr(result, "changes", None) is not None else plan_changes(plan)
    d["applied"] = result.applied
    d["backup"] = result.backup
    if result.failed:
        d["failed"] = result.failed
    d["rolled_back"] = result.rolled_back
    if result.after is not None:
        d["after"] = {
            "gone": [f.to_dict() for f in result.gone],
            "remaining": [f.to_dict() for f in result.remaining],
            "new": [f.to_dict() for f in result.new],
            "worse": result.worse,
        }
    return d


def render_result(result, out: IO[str]) -> None:
    """Text report of one dataset's repair (or dry run)."""
    plan = result.plan
    version = f" ({plan.codebase_version})" if plan.codebase_version else ""
    out.write(f"{plan.target}{version}\n")
    if plan.root and str(plan.root) != plan.target:
        out.write(f"  root: {plan.root}\n")
    if plan.cannot_run:
        out.write(f"  cannot repair: {plan.cannot_run}\n\n")
        return
    others = [d for d in plan.dispositions if d.action != "repair"]
    if plan.refused:
        out.write(f"  refused: {plan.refused}\n  nothing is repaired until the cause is fixed\n")
    elif not plan.repairs:
        out.write("  nothing to repair\n")
    else:
        out.write("  would repair:\n" if result.dry_run else "  repairs:\n")
        for r in plan.repairs:
            out.write(f"    {r.check}  {r.summary}\n")
    if others:
        out.write("  left alone:\n")
        for d in others:
            f = d.finding
            where = f"  {f.path}" if f.path and f.count == 1 else ""
            out.write(f"    {f.severity:<7} {f.check}{where}: {f.message}\n")
            if d.action == "not-selected":
                out.write(f"            {d.reason or 'not selected by --only'}\n")
            else:
                out.write(f"            not repairable: {d.reason}\n            to do: {d.todo}\n")
    changes = getattr(result, "changes", None) or (plan_changes(plan) if not plan.empty else None)
    if changes and (changes["json"] or changes["parquet"] or changes["moves"] or changes.get("cells")):
        out.write("  changes:\n" if not result.dry_run else "  changes (dry run, nothing written):\n")
        render_changes(changes, out, indent="    ")
    if result.failed:
        out.write(f"  FAILED: {result.failed}\n")
    if result.rolled_back:
        out.write(f"  ROLLED BACK: validation got worse ({', '.join(result.worse)}); every file was restored\n")
        for f in result.new:
            out.write(f"    new: {f.severity} {f.check}: {f.message}\n")
    elif result.after is not None:
        out.write(f"  backup: {result.backup}  (undo: lrtool repair --undo {plan.target})\n")
        out.write(f"  after: {len(result.gone)} finding(s) gone, {len(result.remaining)} remaining, "
                  f"{len(result.new)} new\n")
        for f in result.gone:
            out.write(f"    gone:      {f.check}: {f.message}\n")
        for f in result.remaining:
            out.write(f"    remaining: {f.severity} {f.check}: {f.message}\n")
        for f in result.new:
            out.write(f"    new:       {f.severity} {f.check}: {f.message}\n")
    out.write("\n")


def undo_to_dict(res) -> dict[str, Any]:
    d = {"target": res.target, "root": res.root, "undo": True, "dry_run": res.dry_run, "status": res.status,
         "backup": res.backup, "state": res.state, "restored": res.restored, "removed": res.removed,
         "moved_back": res.moved_back}
    if res.partial:
        d["partial_backups_removed" if not res.dry_run else "partial_backups"] = res.partial
    if res.cannot_run:
        d["error"] = res.cannot_run
    elif res.error:
        d["error"] = res.error
    return d


def render_undo(res, out: IO[str]) -> None:
    out.write(f"{res.target}\n")
    for p in res.partial:
        out.write(f"  {'would remove' if res.dry_run else 'removed'} the incomplete backup {p} of a repair killed "
                  "while writing its backup (no dataset file had changed)\n")
    if res.cannot_run:
        out.write(f"  cannot undo: {res.cannot_run}\n\n")
        return
    if res.backup is None:
        out.write("  no other backup to undo\n\n")
        return
    verb = "would restore" if res.dry_run else "restored"
    out.write(f"  backup: {res.backup} (state: {res.state})\n")
    if res.error:
        out.write(f"  FAILED: {res.error}\n")
    for p in res.restored:
        out.write(f"  {verb} {p}\n")
    for p in res.removed:
        out.write(f"  {'would remove' if res.dry_run else 'removed'} {p} (created by the repair)\n")
    for p in res.moved_back:
        out.write(f"  {'would move back' if res.dry_run else 'moved back'} {p}\n")
    if not res.error and not res.dry_run:
        out.write("  the dataset is as it was before the repair; the backup was deleted\n")
    out.write("\n")


def dumps(doc: Any) -> str:
    return json.dumps(doc, indent=2, ensure_ascii=False) + "\n"
