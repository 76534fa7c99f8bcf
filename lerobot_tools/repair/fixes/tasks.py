"""Task-table fixes: T004 / T007 ``tasks.parquet`` rewritten in the form lerobot reads, T002 missing labels
appended.
"""

from __future__ import annotations

from lerobot_tools.dataset.model import INFO_PATH
from lerobot_tools.errors import DatasetError
from lerobot_tools.repair.fixes.context import RepairContext
from lerobot_tools.repair.model import TasksRewrite


# =========================================================================== T004/T007/T002 task table
def fix_tasks(rc: RepairContext) -> None:
    """T004 and T007 (v3.0): ``tasks.parquet`` rewritten as lerobot writes it (pandas index ``task``, one
    ``task_index`` column, rows by position) with the same task_index -> task mapping (docs/failure-modes.md
    (#tasks-without-index, #positional-tasks)). T002: labels referenced by episodes but missing from the table are
    appended with new indices (``tasks.jsonl`` line / ``tasks.parquet`` row,
    docs/failure-modes.md#episode-task-drift); ``total_tasks`` follows."""
    ds = rc.ds
    wants = [c for c in ("T004", "T007", "T002") if rc.wants(c)]
    if not wants:
        return
    try:
        table = ds.tasks
    except DatasetError as exc:
        for c in wants:
            rc.cannot(c, exc.message, "restore the task table (T001) first")
        return
    if table.problems:
        for c in wants:
            rc.cannot(c, f"{table.path} has malformed rows ({table.problems[0]}); a rewrite would drop them",
                      "fix the malformed rows by hand, then rerun")
        return
    rows = list(table.rows)
    indices = [i for i, _ in rows]
    positional = sorted(indices) == list(range(len(indices)))
    rewrite: list[str] = []
    if ds.layout == "v3":
        if "T004" in wants:
            if table.form == "unknown":
                rc.cannot("T004", "tasks.parquet has no column holding the task strings",
                          "rebuild meta/tasks.parquet (task string index 'task', task_index column) by hand")
            elif table.form != "pandas-index":
                rewrite.append("T004")
                rc.repair("T004", f"rewrite {table.path} from the {table.form} form to the pandas-index form "
                          f"(index 'task', column task_index), same {len(rows)} task(s)", [table.path])
        if "T007" in wants:
            if positional:
                rows.sort()
                rewrite.append("T007")
                rc.repair("T007", f"sort {table.path} rows by task_index so that task_index == row position "
                          "(mapping unchanged)", [table.path])
            else:
                rc.cannot("T007", f"task_index values {sorted(indices)[:8]} are not 0..{len(indices) - 1}",
                          "renumber the tasks and the task_index column of every data file (not mechanical)")
    elif "T007" in wants:
        rc.cannot("T007", f"task_index values in {table.path} are not 0..{len(indices) - 1}",
                  "renumber the tasks and the task_index column of every data file (not mechanical)")
    if "T002" in wants:
        _append_missing_labels(rc, table, rows, positional, rewrite)
    if rewrite and ds.layout == "v3":
        rc.tasks_rewrite = TasksRewrite(table.path, list(table.rows), rows, table.form, sorted(set(rewrite)))
    if rows != table.rows:
        rc.task_rows = rows


def _append_missing_labels(rc: RepairContext, table, rows: list[tuple[int, str]], positional: bool,
                           rewrite: list[str]) -> None:
    ds = rc.ds
    known = {label for _, label in rows}
    missing: list[str] = []
    int_refs = False
    try:
        episodes = ds.episodes
    except DatasetError as exc:
        rc.cannot("T002", exc.message, "fix the episode metadata first")
        return
    by_index = {i for i, _ in rows}
    for e in episodes:
        for t in e.tasks:
            if isinstance(t, bool):
                continue
            if isinstance(t, int):
                int_refs = True
                if t not in by_index:
                    rc.cannot("T002", f"episode {e.episode_index} references task index {t}, which has no task",
                              "give the episode its task string", {"task": t})
            elif isinstance(t, str) and t not in known and t not in missing:
                missing.append(t)
    if int_refs:
        rc.cannot("T002", "some episodes list task indices instead of task strings",
                  "replace the integers in the episodes' tasks lists with the task strings", {"key": "tasks"})
    if not missing:
        return
    if ds.layout == "v3" and not positional:
        rc.cannot("T002", f"{table.path} rows are not 0..N-1 by position, so new rows have no safe index",
                  "renumber the task table first (T007)")
        return
    nxt = (max(i for i, _ in rows) + 1) if rows else 0
    for label in missing:
        rows.append((nxt, label))
        rc.repair("T002", f"append task {label!r} as task_index {nxt} to {table.path}", [table.path], {"task": label})
        if ds.layout != "v3":
            rc.v2_task_lines.append((nxt, label))
        nxt += 1
    if ds.layout == "v3":
        rewrite.append("T002")
    total = ds.total("total_tasks")
    if total is not None and total == len(table.rows):
        rc.info["total_tasks"] = len(rows)  # the counter was right; keep it right (T006 would fire otherwise)
        rc.repair("T002", f"total_tasks {total} -> {len(rows)} (labels appended)", [INFO_PATH], {"task": missing[0]})
