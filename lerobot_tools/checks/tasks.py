"""Family T: the task table and every reference to it.

Sources: docs/format.md#tasks (tasks.jsonl / tasks.parquet forms and positional lookup; lerobot 0.4.4
``datasets/utils.py`` ``load_tasks``), docs/format.md#episodes (episode ``tasks`` lists); docs/failure-modes.md
(#tasks-without-index, #positional-tasks, #episode-task-drift, #duplicate-tasks, #missing-task-label). task_index
values in the data are read from footer min/max statistics, and from the ``task_index`` column only for files
written without statistics.
"""

from __future__ import annotations

from collections import Counter

from lerobot_tools.checks.context import CheckContext
from lerobot_tools.checks.files import report_unreadable
from lerobot_tools.dataset.model import INFO_PATH
from lerobot_tools.errors import DatasetError
from lerobot_tools.findings import INFO


def run(ctx: CheckContext) -> None:
    """The task table and the episodes' references to it.

    Emits T001, T002, T004, T005, T006, T007. Reads ``ctx.dataset`` and ``ctx.episodes_ok`` (T002 needs the
    episode metadata); sets ``ctx.tasks_ok`` when the task table could be read.
    """
    ds = ctx.dataset
    assert ds is not None
    try:
        table = ds.tasks
    except DatasetError as exc:
        cause = report_unreadable(ctx, exc, "T001", "tasks")
        ctx.skip("T002-T007", f"the task table could not be read ({cause})")
        return
    ctx.tasks_ok = True
    for p in table.problems:
        ctx.emit("T001", p, table.path, group="task table rows are malformed")

    # T004 v3 form
    if ds.layout == "v3":
        if table.form == "plain-columns":
            ctx.emit("T004", "tasks.parquet has the task string as a plain column, not the pandas index; lerobot "
                     "would return the row number as each sample's task text", table.path)
        elif table.form == "unknown":
            ctx.emit("T004", "tasks.parquet has no task string column (expected the pandas index named 'task')", table.path)
        elif table.form == "unnamed-index":
            # The form upstream lerobot's own writer produces (pandas DataFrame indexed by the task strings,
            # DataFrame.to_parquet): lerobot reads it back with pandas, which restores the index. Never a defect.
            ctx.emit("T004", "tasks.parquet stores the task strings in an unnamed pandas index (__index_level_0__), "
                     "as lerobot's own writer does; lerobot reads it, a reader that looks for a 'task' column does "
                     "not", table.path, severity=INFO)

    # T007 indices
    indices = [i for i, _ in table.rows]
    if ds.layout == "v3":
        bad = [(pos, i) for pos, i in enumerate(indices) if i != pos]
        if bad:
            pos, i = bad[0]
            ctx.emit("T007", f"{len(bad)} row(s) have task_index != row position (first: row {pos} has task_index {i}); "
                     "lerobot looks tasks up by position", table.path)
    elif sorted(indices) != list(range(len(indices))):
        dup = [i for i, c in Counter(indices).items() if c > 1]
        detail = f"duplicates {dup[:5]}" if dup else f"values {sorted(indices)[:8]}"
        ctx.emit("T007", f"task_index values are not 0..{len(indices) - 1} ({detail})", table.path)

    # T005 duplicates
    for label, n in Counter(table.labels).items():
        if n > 1:
            ctx.emit("T005", f"task {label!r} appears {n} times", table.path, group="task labels are duplicated", task=label)

    # T006 total_tasks
    total = ds.total("total_tasks")
    if total is not None and total != len(table):
        ctx.emit("T006", f"total_tasks is {total} but {table.path} has {len(table)} task(s)", INFO_PATH, key="total_tasks")

    # T002 labels referenced by episodes
    if ctx.episodes_ok:
        known = set(table.labels)
        by_index = table.by_index
        missing: dict[str | int, list[int]] = {}  # label or task index -> episodes
        int_refs = 0
        for e in ds.episodes:
            for t in e.tasks:
                if isinstance(t, bool) or not isinstance(t, (str, int)):
                    continue
                if isinstance(t, int):
                    int_refs += 1
                    if t not in by_index:
                        missing.setdefault(t, []).append(e.episode_index)
                elif t not in known:
                    missing.setdefault(t, []).append(e.episode_index)
        for task, eps in missing.items():
            shown = ", ".join(map(str, eps[:5])) + (f" and {len(eps) - 5} more" if len(eps) > 5 else "")
            label = f"task index {task}" if isinstance(task, int) else task
            ctx.emit("T002", f"task {label!r} of episode(s) {shown} is not in {table.path}", ds.episodes[0].source, task=task)
        if int_refs:
            ctx.emit("T002", f"{int_refs} episode task reference(s) are integers, not task strings "
                     "(ported data; lerobot expects strings)", ds.episodes[0].source, severity="warning", key="tasks")


def run_data(ctx: CheckContext) -> None:
    """T003: every data row's task_index resolves in the task table.

    Emits T003. Reads ``ctx.tasks_ok`` and ``ctx.footers`` (task_index min/max statistics; the column itself
    only for files without them); sets nothing.
    """
    ds = ctx.dataset
    if not ctx.tasks_ok or not ctx.footers:
        if not ctx.tasks_ok:
            ctx.skip("T003", "the task table could not be read")
        return
    valid = set(ds.tasks.by_index)
    if not valid:
        lo_ok, hi_ok = 0, -1
    else:
        lo_ok, hi_ok = min(valid), max(valid)
    contiguous = len(valid) == hi_ok - lo_ok + 1  # distinct integers: contiguous when they fill their span (never
    # set(range(...)): a task_index of 10**12 in the table would allocate a trillion entries)
    for rel, footer in ctx.footers.items():
        if "task_index" not in footer.schema.names:
            continue
        mm = footer.column_minmax("task_index")
        if mm is not None and contiguous and lo_ok <= mm[0] and mm[1] <= hi_ok:
            continue
        values = _distinct_task_indices(ds.path(rel))
        if values is None:
            continue
        bad = sorted(v for v in values if v not in valid)
        if bad:
            ctx.emit("T003", f"task_index value(s) {bad[:6]} have no task (the table has {len(valid)})", rel,
                     group="data rows carry task_index values with no task")


def _distinct_task_indices(path) -> set[int] | None:
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    import pyarrow as pa

    try:
        col = pq.read_table(path, columns=["task_index"]).column("task_index")
    except Exception:
        return None
    if not pa.types.is_integer(col.type):
        return None  # a non-scalar task_index is reported by S003/S004
    return {v for v in pc.unique(col).to_pylist() if v is not None}
