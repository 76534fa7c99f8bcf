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
    docs/failure-modes.md#counters). A counter of data that cannot be read is never guessed or zeroed."""
    ds = rc.ds
    try:
        episodes = ds.episodes
        eps_ok = not ds.episode_problems and not rc.has("C004")
        eps_error = "the episode metadata has malformed rows or duplicate indices" if not eps_ok else ""
    except DatasetError as exc:
        episodes, eps_ok, eps_error = [], False, exc.message
    fix_eps = "fix the episode metadata (C004/C007) first"

    if rc.wants("C001"):
        if not eps_ok:
            rc.cannot("C001", f"episodes cannot be counted: {eps_error}", fix_eps)
        else:
            _set_counter(rc, "C001", "total_episodes", len(episodes), f"{len(episodes)} episode(s) in the metadata")

    if rc.wants("C002"):
        if not eps_ok:
            rc.cannot("C002", f"frames cannot be counted: {eps_error}", fix_eps)
        elif rc.bad_data_files or not rc.data_files:
            bad = sorted(rc.bad_data_files)
            rc.cannot("C002", f"{len(bad)} data file(s) are missing or unreadable (e.g. {bad[0]}); lrtool does not "
                      "guess the frames it cannot read" if bad else "no data file is referenced",
                      "restore the data files (F001/F007), then rerun")
        else:
            rows = sum(f.num_rows for f in rc.footers.values())
            lengths = [e.length for e in episodes]
            if all(n is not None for n in lengths) and sum(lengths) != rows:
                rc.cannot("C002", f"the data files hold {rows} rows but the episode lengths sum to {sum(lengths)}",
                          "fix the episode lengths or the data (C005) first")
            else:
                _set_counter(rc, "C002", "total_frames", rows, f"{rows} rows in {len(rc.footers)} data file(s)")

    if rc.wants("T006"):
        try:
            table = ds.tasks
            rows = rc.task_rows if rc.task_rows is not None else table.rows
            if table.problems:
                raise DatasetError(f"has malformed rows ({table.problems[0]})", table.path)
            _set_counter(rc, "T006", "total_tasks", len(rows), f"{len(rows)} task(s) in {table.path}")
        except DatasetError as exc:
            rc.cannot("T006", f"tasks cannot be counted: {exc}", "restore the task table (T001) first")

    if rc.wants("C003") and ds.layout == "v2":
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

    if rc.wants("C008"):
        splits = rc.info.get("splits")
        if not eps_ok:
            rc.cannot("C008", f"episodes cannot be counted: {eps_error}", fix_eps)
        elif isinstance(splits, dict) and len(splits) == 1:
            key = next(iter(splits))
            new = f"0:{len(episodes)}"
            if splits[key] != new:
                rc.info["splits"] = {key: new}
                rc.repair("C008", f"splits {{{key!r}: {splits[key]!r}}} -> {{{key!r}: {new!r}}} (all {len(episodes)} "
                          "episodes, as lerobot writes it)", [INFO_PATH])
        else:
            rc.cannot("C008", "splits names several splits; which episodes belong to which is not mechanical",
                      "correct the ranges by hand ('start:end' within 0:total_episodes)")


def _set_counter(rc: RepairContext, check: str, key: str, value: int, why: str) -> None:
    old = rc.info.get(key)
    if old == value and not isinstance(old, bool):
        return
    rc.info[key] = value
    rc.repair(check, f"{key} {old!r} -> {value} ({why})", [INFO_PATH], {"key": key})
