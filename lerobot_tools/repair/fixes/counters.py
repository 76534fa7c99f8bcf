"""Counter fixes: C001 ``total_episodes``, C002 ``total_frames``, T006 ``total_tasks``, C003 ``total_videos`` /
``total_chunks`` and C008 ``splits``, recomputed from what is on disk.
"""

from __future__ import annotations

import math

from lerobot_tools.dataset.model import INFO_PATH
from lerobot_tools.errors import DatasetError
from lerobot_tools.repair.fixes.context import RepairContext


# =========================================================================== counters
def fix_counters(rc: RepairContext) -> None:
    """C001 ``total_episodes``, C002 ``total_frames``, T006 ``total_tasks``, C003 ``total_videos`` /
    ``total_chunks`` (v2.x) and C008 ``splits``, recomputed from what is on disk (docs/format.md#info-json,
    docs/failure-modes.md#counters). A counter of data that cannot be read is never guessed or zeroed.

    The counters derived from the same counts are rewritten together: a corrected ``total_episodes`` takes
    ``splits``, ``total_chunks`` and ``total_videos`` with it (when ``--only`` selects C008 / C003), so fixing
    one never leaves another stale. A single split that covered every
    episode from 0 (``{"train": "0:N"}``, as lerobot writes it) follows the episode count; several splits are not
    mechanical. On v2.0 (statistics counted over ``total_frames``, no per-episode statistics), a corrected
    ``total_frames`` that the stored statistics' counts contradict calls for the statistics fix too (G007,
    :attr:`RepairContext.implied`)."""
    ds = rc.ds
    may = rc.options.selected
    try:
        episodes = ds.episodes
        eps_ok = not ds.episode_problems and not rc.has("C004")
        eps_error = "the episode metadata has malformed rows or duplicate indices" if not eps_ok else ""
    except DatasetError as exc:
        episodes, eps_ok, eps_error = [], False, exc.message
    fix_eps = "fix the episode metadata (C004/C007) first"

    # a counter validate did not report is rewritten only when it follows total_episodes, which is corrected
    follows = rc.wants("C001") and eps_ok
    if rc.wants("C001"):
        if eps_ok:
            _set_counter(rc, "C001", "total_episodes", len(episodes), f"{len(episodes)} episode(s) in the metadata")
        else:
            rc.cannot("C001", f"episodes cannot be counted: {eps_error}", fix_eps)

    if rc.wants("C002"):
        _total_frames(rc, episodes, eps_ok, eps_error, fix_eps)

    if rc.wants("T006"):
        try:
            table = ds.tasks
            rows = rc.task_rows if rc.task_rows is not None else table.rows
            if table.problems:
                raise DatasetError(f"has malformed rows ({table.problems[0]})", table.path)
            _set_counter(rc, "T006", "total_tasks", len(rows), f"{len(rows)} task(s) in {table.path}")
        except DatasetError as exc:
            rc.cannot("T006", f"tasks cannot be counted: {exc}", "restore the task table (T001) first")

    if (rc.wants("C003") or follows and may("C003")) and ds.layout == "v2":
        if not eps_ok:
            rc.cannot("C003", f"episodes cannot be counted: {eps_error}", fix_eps)
        else:
            n_keys = len(ds.video_keys)
            if ds.total("total_videos") is not None:
                _set_counter(rc, "C003", "total_videos", len(episodes) * n_keys,
                             f"{len(episodes)} episode(s) x {n_keys} video key(s)")
            if ds.total("total_chunks") is not None:
                _set_counter(rc, "C003", "total_chunks", math.ceil(len(episodes) / ds.chunks_size) if episodes else 0,
                             f"ceil({len(episodes)} / {ds.chunks_size})")

    if rc.wants("C008") or follows and may("C008"):
        _splits(rc, episodes, eps_ok, eps_error, fix_eps)


def _total_frames(rc: RepairContext, episodes, eps_ok: bool, eps_error: str, fix_eps: str) -> None:
    ds = rc.ds
    if not eps_ok:
        rc.cannot("C002", f"frames cannot be counted: {eps_error}", fix_eps)
        return
    if rc.bad_data_files or not rc.data_files:
        bad = sorted(rc.bad_data_files)
        rc.cannot("C002", f"{len(bad)} data file(s) are missing or unreadable (e.g. {bad[0]}); lrtool does not "
                  "guess the frames it cannot read" if bad else "no data file is referenced",
                  "restore the data files (F001/F007), then rerun")
        return
    rows = sum(f.num_rows for f in rc.footers.values())
    lengths = [e.length for e in episodes]
    if all(n is not None for n in lengths) and sum(lengths) != rows:
        rc.cannot("C002", f"the data files hold {rows} rows but the episode lengths sum to {sum(lengths)}",
                  "fix the episode lengths or the data (C005) first")
        return
    old = rc.info.get("total_frames")
    _set_counter(rc, "C002", "total_frames", rows, f"{rows} rows in {len(rc.footers)} data file(s)")
    if old != rows and ds.codebase_version == "v2.0" and rc.options.selected("G007"):
        rc.implied.add("G007")  # v2.0 statistics are counted over total_frames: recomputed if theirs differ


def _splits(rc: RepairContext, episodes, eps_ok: bool, eps_error: str, fix_eps: str) -> None:
    splits = rc.info.get("splits")
    if not isinstance(splits, dict) or not splits:
        return
    if not eps_ok:
        if rc.wants("C008"):
            rc.cannot("C008", f"episodes cannot be counted: {eps_error}", fix_eps)
        return
    key = next(iter(splits))
    value = splits[key]
    start = value.split(":", 1)[0].strip() if isinstance(value, str) else None
    new = f"0:{len(episodes)}"
    if len(splits) != 1 or start != "0":
        if rc.wants("C008"):
            rc.cannot("C008", "splits names several splits, or one that does not start at episode 0; which episodes "
                      "belong to which is not mechanical",
                      "correct the ranges by hand ('start:end' within 0:total_episodes)")
        return
    if value != new:
        rc.info["splits"] = {key: new}
        why = "all" if rc.wants("C008") else "follows the episode count: all"
        rc.repair("C008", f"splits {{{key!r}: {value!r}}} -> {{{key!r}: {new!r}}} ({why} {len(episodes)} episodes, "
                  "as lerobot writes it)", [INFO_PATH], {"key": "splits"})
def _set_counter(rc: RepairContext, check: str, key: str, value: int, why: str) -> None:
    old = rc.info.get(key)
    if old == value and type(old) is int:
        return
    rc.info[key] = value
    rc.repair(check, f"{key} {old!r} -> {value} ({why})", [INFO_PATH], {"key": key})
