"""Show what a repair changes: a unified diff of every JSON/JSONL file, and for each parquet file its columns
and types (and key-value metadata) before and after; plus the text and JSON reports of ``lrtool repair``.

The text scales with the dataset: per-file changes that are the same are one block with the count and the first
paths, long diffs, statistics cells, moves and undo lists are cut to a count and the first entries; ``--verbose``
shows everything, and ``--format json`` always has everything."""

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


def _leaf_paths(a: Any, b: Any, where: str, out: list[str]) -> None:
    if isinstance(a, dict) and isinstance(b, dict):
        for k in list(a) + [k for k in b if k not in a]:
            if k not in a or k not in b:
                out.append(f"{where}{k}")
            else:
                _leaf_paths(a[k], b[k], f"{where}{k}/", out)
    elif json.dumps(a) != json.dumps(b):
        out.append(where.rstrip("/") or "(whole file)")


def changed_keys(change: TextChange) -> list[str]:
    """Where a JSON / JSON Lines rewrite differs, as key paths (``features/action/names``, ``actions/std``;
    lists are one leaf); for JSON Lines, ``line N: <paths>`` per changed line. Empty when it cannot be parsed."""
    out: list[str] = []
    try:
        if change.relpath.endswith(".jsonl"):
            old, new = change.old_text.splitlines(), change.new_text.splitlines()
            for i, (a, b) in enumerate(zip(old + [""] * (len(new) - len(old)), new)):
                if a != b:
                    sub: list[str] = []
                    _leaf_paths(json.loads(a) if a.strip() else {}, json.loads(b) if b.strip() else {}, "", sub)
                    out.append(f"line {i + 1}: {', '.join(sub)}")
            return out
        _leaf_paths(json.loads(change.old_text), json.loads(change.new_text), "", out)
    except ValueError:
        return []
    return out


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
        "json": [{"path": c.relpath, "checks": c.checks, "diff": unified(c), "changed": changed_keys(c)}
                 for c in plan.text_changes],
        "parquet": [parquet_summary(root, c) for c in plan.parquet_changes]
                   + ([tasks_summary(root, plan.tasks_rewrite)] if plan.tasks_rewrite else []),
        "moves": [m.to_dict() for m in plan.moves],
        "cells": [c.summary() for c in plan.rewrites],
    }


def _cols(cols: list[list[str]]) -> dict[str, str]:
    return {n: t for n, t in cols}


#: files, moves and cells shown one per line up to this many; above it a count and the first
#: :data:`EXAMPLES` (``--verbose`` lists every one)
MAX_LISTED = 5
EXAMPLES = 3
#: lines of one file's unified diff shown without ``--verbose`` (``--format json`` always has the whole diff)
MAX_DIFF_LINES = 30


def examples(paths: list[str], verbose: bool = False, limit: int = EXAMPLES) -> str:
    """``"a, b, c and 47 more"`` (every path with ``verbose``)."""
    if verbose or len(paths) <= limit:
        return ", ".join(paths)
    return f"{', '.join(paths[:limit])} and {len(paths) - limit} more"


def _parquet_lines(p: dict[str, Any]) -> list[str]:
    """What one parquet summary changes, one line each (the file's path not included)."""
    out = []
    before, after = _cols(p["before"]), _cols(p["after"])
    for name in list(before) + [n for n in after if n not in before]:
        a, b = before.get(name), after.get(name)
        if a != b:
            out.append(f"{name}: {a or '(absent)'} -> {b or '(dropped)'}")
    hf = p.get("huggingface_metadata")
    if hf and hf[0] != hf[1]:
        out.append(f"`huggingface` metadata: {hf[0]} -> {hf[1]}")
    elif hf and hf[1] == "updated":
        out.append("`huggingface` metadata: updated")
    if "form" in p and p["form"][0] != p["form"][1]:
        out.append(f"form: {p['form'][0]} -> {p['form'][1]}")
    if "rows" in p:
        out.append(f"rows: {p['rows'][0]} -> {p['rows'][1]}" + (" (sorted by task_index)" if p["reordered"] else "")
                   + "".join(f"; appended {i}: {label!r}" for i, label in p["appended"]))
    unchanged = [n for n in before if before.get(n) == after.get(n)]
    if unchanged and "rows" not in p:
        out.append(f"unchanged: {', '.join(unchanged)}")
    return out


def _cell_lines(c: dict[str, Any], verbose: bool) -> list[str]:
    cells = c["cells"]
    if verbose or len(cells) <= MAX_LISTED:
        return [f"episode {x['episode']} {x['column']}: {_brief(x['before'])} -> {_brief(x['after'])}" for x in cells]
    eps = sorted({x["episode"] for x in cells if x["episode"] is not None})
    cols = list(dict.fromkeys(x["column"] for x in cells))
    return [f"{len(cells)} cell(s) of {len(eps)} episode(s) ({examples([str(e) for e in eps])}): "
            f"{examples(cols, limit=4)} (--verbose shows each value)"]


def render_changes(changes: dict[str, Any], out: IO[str], indent: str = "  ", *, verbose: bool = False) -> None:
    """Text form of :func:`plan_changes`: diffs (the first :data:`MAX_DIFF_LINES` lines of each file unless
    ``verbose``), parquet columns whose type changes or that appear / disappear, statistics cells, then moves.
    Files that change identically (same checks, same column changes) are one block with their count and the
    first paths; ``verbose`` lists every path, cell and move."""
    for c in changes["json"]:
        lines = c["diff"].splitlines()
        if verbose or len(lines) <= MAX_DIFF_LINES:
            for line in lines:
                out.write(f"{indent}{line}\n")
            continue
        where = c.get("changed") or []
        out.write(f"{indent}{c['path']}  ({', '.join(c['checks'])}): {len(lines)} diff line(s)"
                  + (f" in {examples(where, limit=4)}" if where else "") + " (--verbose shows the diff)\n")
    blocks: dict[tuple, list[str]] = {}
    for p in changes["parquet"]:
        blocks.setdefault((tuple(p["checks"]), tuple(_parquet_lines(p))), []).append(p["path"])
    for (checks, lines), paths in blocks.items():
        if len(paths) == 1:
            out.write(f"{indent}{paths[0]}  ({', '.join(checks)})\n")
        else:
            out.write(f"{indent}{len(paths)} files, each:  ({', '.join(checks)})\n")
        for line in lines:
            out.write(f"{indent}  {line}\n")
        if len(paths) > 1:
            out.write(f"{indent}  files: {examples(paths, verbose)}"
                      + ("" if verbose or len(paths) <= EXAMPLES else " (--verbose lists them all)") + "\n")
    for c in changes.get("cells", []):
        out.write(f"{indent}{c['path']}  ({', '.join(c['checks'])})\n")
        for line in _cell_lines(c, verbose):
            out.write(f"{indent}  {line}\n")
    moves = changes["moves"]
    shown = moves if verbose or len(moves) <= MAX_LISTED else moves[:EXAMPLES]
    for m in shown:
        out.write(f"{indent}move {m['src']} -> {m['dst']}\n")
    if len(shown) < len(moves):
        out.write(f"{indent}... and {len(moves) - len(shown)} more move(s) (--verbose lists them all)\n")


def _brief(v: Any, limit: int = 100) -> str:
    text = json.dumps(v)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def result_to_dict(result) -> dict[str, Any]:
    """One dataset's repair result as plain data (``--format json``). A dry run carries the same keys as the real
    run it predicts (``after`` is then the shadow's outcome, with ``"predicted": true``)."""
    plan = result.plan
    d: dict[str, Any] = {
        "target": plan.target,
        "root": str(plan.root) if plan.root else None,
        "codebase_version": plan.codebase_version,
        "dry_run": result.dry_run,
        "status": result.status,
    }
    if plan.before is not None and plan.before.notes:
        d["notes"] = list(plan.before.notes)
    if plan.cannot_run:
        d["error"] = plan.cannot_run
        return d
    if plan.refused:
        d["refused"] = plan.refused
    d["repairs"] = [r.to_dict() for r in plan.repairs]
    d["rejected"] = [r.to_dict() for r in getattr(result, "rejected", [])]
    d["findings"] = [disp.to_dict() for disp in plan.dispositions]
    d["changes"] = result.changes if getattr(result, "changes", None) is not None else plan_changes(plan)
    d["applied"] = result.applied
    d["backup"] = result.backup
    if result.failed:
        d["failed"] = result.failed
    d["rolled_back"] = result.rolled_back
    if getattr(result, "unpredicted", None):
        d["unpredicted"] = result.unpredicted
    if result.after is not None:
        d["after"] = {
            "predicted": bool(getattr(result, "predicted", False)),
            "gone": [f.to_dict() for f in result.gone],
            "remaining": [f.to_dict() for f in result.remaining],
            "now_visible": [v.to_dict() for v in getattr(result, "visible", [])],
            "new": [f.to_dict() for f in result.new],
            "worse": result.worse,
        }
    return d


#: :data:`~lerobot_tools.repair.judge.VISIBLE_WHY` in a few words, for the text report
_WHY_SHORT = {"info": "info", "warning": "warning, loads", "moved": "in a file moved into place",
              "unchecked": "not checked before", "rest": "rest of a finding said anew"}


def _by_check(findings) -> str:
    counts: dict[str, int] = {}
    for f in findings:
        counts[f.check] = counts.get(f.check, 0) + 1
    return ", ".join(f"{c} x{n}" if n > 1 else c for c, n in sorted(counts.items()))


def _render_after(result, out: IO[str], verbose: bool) -> None:
    """The outcome: counts by check; then the repaired findings still reported and the findings now visible (and,
    with ``verbose``, every finding gone and remaining)."""
    visible = getattr(result, "visible", [])
    head = "after (tried on a shadow of the dataset)" if getattr(result, "predicted", False) else "after"
    out.write(f"  {head}: {len(result.gone)} gone ({_by_check(result.gone)}), {len(result.remaining)} remaining"
              + (f" ({_by_check(result.remaining)})" if result.remaining else "")
              + f", {len(visible)} now visible\n")
    repaired = {id(d.finding) for d in result.plan.dispositions if d.action == "repair"}
    for f in result.gone if verbose else []:
        out.write(f"    gone:      {f.check}: {f.message}\n")
    for f in result.remaining:
        if verbose or id(f) in repaired:
            out.write(f"    {'remaining' if id(f) not in repaired else 'NOT FIXED'}: {f.severity} {f.check}: "
                      f"{f.message}\n")
    if visible:
        out.write("    now visible (no reason to reject a fix):\n")
        for v in visible:
            out.write(f"      {v.finding.severity} {v.finding.check} [{_WHY_SHORT[v.why]}]: {v.finding.message}\n")


def _finding_line(f) -> str:
    where = f"  {f.path}" if f.path and f.count == 1 else ""
    return f"{f.severity:<7} {f.check}{where}: {f.message}"


def render_result(result, out: IO[str], *, verbose: bool = False) -> None:
    """Text report of one dataset's repair (or dry run): what is repaired, what is not applied and why, what is
    left alone, the changes (identical per-file changes as one block; ``verbose`` lists every file), and the
    outcome (in a dry run, the outcome of the same changes written to a shadow of the dataset)."""
    plan = result.plan
    version = f" ({plan.codebase_version})" if plan.codebase_version else ""
    out.write(f"{plan.target}{version}\n")
    if plan.root and str(plan.root) != plan.target:
        out.write(f"  root: {plan.root}\n")
    for note in plan.before.notes if plan.before is not None else []:
        out.write(f"  note: {note}\n")
    if plan.cannot_run:
        out.write(f"  cannot repair: {plan.cannot_run}\n\n")
        return
    rejected = getattr(result, "rejected", [])
    others = [d for d in plan.dispositions if d.action not in ("repair", "rejected")]
    if plan.refused:
        out.write(f"  refused: {plan.refused}\n  nothing is repaired until the cause is fixed\n")
    elif not plan.repairs and not rejected:
        out.write("  nothing to repair\n")
    elif plan.repairs:
        out.write("  would repair:\n" if result.dry_run else "  repairs:\n")
        for r in plan.repairs:
            out.write(f"    {r.check}  {r.summary}\n")
    if rejected:
        out.write("  will not apply:\n" if result.dry_run else "  not applied:\n")
        for rj in rejected:
            for r in rj.repairs:
                out.write(f"    {r.check}  {r.summary}\n")
            out.write(f"          {rj.reason}\n")
    if others:
        out.write("  left alone:\n")
        for d in others:
            out.write(f"    {_finding_line(d.finding)}\n")
            if d.action == "not-selected":
                out.write(f"            {d.reason or 'not selected by --only'}\n")
            else:
                out.write(f"            not repairable: {d.reason}; to do: {d.todo}\n")
    changes = getattr(result, "changes", None) or (plan_changes(plan) if not plan.empty else None)
    if changes and (changes["json"] or changes["parquet"] or changes["moves"] or changes.get("cells")):
        out.write("  changes:\n" if not result.dry_run else "  changes (dry run, nothing written):\n")
        render_changes(changes, out, indent="    ", verbose=verbose)
    if getattr(result, "unpredicted", None):
        out.write(f"  not tried first: {result.unpredicted}\n")
    if result.failed:
        out.write(f"  FAILED: {result.failed}\n")
    if result.rolled_back:
        out.write(f"  ROLLED BACK: validation got worse ({', '.join(result.worse)}); every file was restored\n")
        for f in result.new:
            if f"{f.check}/{f.severity}" in result.worse:
                out.write(f"    new: {f.severity} {f.check}: {f.message}\n")
    elif result.after is not None:
        if result.backup:
            out.write(f"  backup: {result.backup}  (undo: lrtool repair --undo {plan.target})\n")
        _render_after(result, out, verbose)
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


def _listed(out: IO[str], verb: str, paths: list[str], verbose: bool, tail: str = "") -> None:
    """One line per path up to :data:`MAX_LISTED` (or ``verbose``), else one line with the count and the first."""
    if not paths:
        return
    if verbose or len(paths) <= MAX_LISTED:
        for p in paths:
            out.write(f"  {verb} {p}{tail}\n")
        return
    out.write(f"  {verb} {len(paths)} files{tail}: {examples(paths)} (--verbose lists them all)\n")


def render_undo(res, out: IO[str], *, verbose: bool = False) -> None:
    """Text report of one dataset's ``--undo``: the files restored, removed and moved back (more than
    :data:`MAX_LISTED` of a kind as a count and the first paths unless ``verbose``)."""
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
    out.write(f"  backup: {res.backup} (state: {res.state})\n")
    if res.error:
        out.write(f"  FAILED: {res.error}\n")
    _listed(out, "would restore" if res.dry_run else "restored", res.restored, verbose)
    _listed(out, "would remove" if res.dry_run else "removed", res.removed, verbose, " (created by the repair)")
    _listed(out, "would move back" if res.dry_run else "moved back", res.moved_back, verbose)
    if not res.error and not res.dry_run:
        out.write("  the dataset is as it was before the repair; the backup was deleted\n")
    out.write("\n")


def dumps(doc: Any) -> str:
    return json.dumps(doc, indent=2, ensure_ascii=False) + "\n"
