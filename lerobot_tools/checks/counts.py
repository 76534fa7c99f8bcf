"""Family C: info.json counters, episode indices, per-episode lengths, v3.0 index ranges.

Sources: lerobot-format §3.1 (counters), §8 (episode metadata), §14 I1-I3, I6, I7; pitfalls B3, C1-C3, C9, C11.
Lengths are compared with parquet footers (row counts), never by reading data.
"""

from __future__ import annotations

import math
import re

from lerobot_tools.checks.context import CheckContext
from lerobot_tools.dataset.model import INFO_PATH, V2_EPISODES_PATH
from lerobot_tools.errors import DatasetError


def run_metadata(ctx: CheckContext) -> None:
    """Checks that need only info.json and the episode metadata.

    Emits C001, C003, C004, C006, C007, C008. Reads ``ctx.dataset`` (info.json, episode metadata); sets
    ``ctx.episodes_ok`` when the episode metadata could be read.
    """
    ds = ctx.dataset
    assert ds is not None
    try:
        episodes = ds.episodes
    except DatasetError as exc:
        ctx.emit("C007", exc.message, exc.path)
        ctx.skip("C001-C006, F001-F010, S, R, T002, D", "the episode metadata could not be read")
        return
    ctx.episodes_ok = True
    src = V2_EPISODES_PATH if ds.layout == "v2" else None
    for p in ds.episode_problems:
        ctx.emit("C007", p, src, group="episode metadata rows are malformed")
    if not episodes:
        ctx.emit("C007", "the episode metadata has no rows", src or "meta/episodes")
    missing_cols: list[tuple[str, dict]] = []  # (column(s) as shown, subject)
    if episodes and all(e.length is None for e in episodes):
        missing_cols.append(("length", {"key": "length"}))
    if ds.layout == "v3" and episodes:
        if all(e.data_chunk is None or e.data_file is None for e in episodes):
            missing_cols.append(("data/chunk_index, data/file_index", {"key": "data/chunk_index"}))
        if all(e.from_index is None or e.to_index is None for e in episodes):
            missing_cols.append(("dataset_from_index, dataset_to_index", {"key": "dataset_from_index"}))
        for key in ds.video_keys:
            if all(key not in e.videos for e in episodes):
                missing_cols.append((f"videos/{key}/*", {"video_key": key}))
    for col, subject in missing_cols:
        ctx.emit("C007", f"episode metadata has no {col} column(s)", src or (ds.episode_files[0] if ds.episode_files else None),
                 **subject)

    # C004: episode_index == position, unique
    seen: dict[int, int] = {}
    bad_pos = []
    for e in episodes:
        if e.episode_index in seen:
            ctx.emit("C004", f"episode_index {e.episode_index} appears twice (rows {seen[e.episode_index]} and {e.position})",
                     e.source, group="duplicate episode indices", episode=e.episode_index)
        seen.setdefault(e.episode_index, e.position)
        if e.episode_index != e.position:
            bad_pos.append(e)
    if bad_pos:
        first = bad_pos[0]
        ctx.emit("C004", f"{len(bad_pos)} episode row(s) have episode_index != row position "
                 f"(first: row {first.position} holds episode {first.episode_index}); loaders index episodes by position",
                 first.source)

    # C001 total_episodes
    total_eps = ds.total("total_episodes")
    if total_eps is not None and total_eps != len(episodes):
        ctx.emit("C001", f"total_episodes is {total_eps} but the episode metadata has {len(episodes)} episode(s)", INFO_PATH,
                 key="total_episodes")

    # C006 v3 index ranges
    if ds.layout == "v3":
        expected_from = 0
        for e in episodes:
            if e.from_index is None or e.to_index is None:
                continue
            problem = None
            if e.length is not None and e.to_index - e.from_index != e.length:
                problem = f"dataset_to_index - dataset_from_index = {e.to_index - e.from_index} but length = {e.length}"
            elif e.from_index != expected_from:
                problem = f"dataset_from_index = {e.from_index}, expected {expected_from} (ranges must be back to back from 0)"
            if problem:
                ctx.emit("C006", f"episode {e.episode_index}: {problem}", e.source, group="index ranges are not contiguous",
                         episode=e.episode_index)
            expected_from = e.to_index

    # C008 splits
    splits = ds.info.get("splits")
    if isinstance(splits, dict):
        for name, rng in splits.items():
            m = re.fullmatch(r"\s*(\d+)\s*:\s*(\d+)\s*", rng) if isinstance(rng, str) else None
            if not m:
                ctx.emit("C008", f"splits[{name!r}] = {rng!r} is not a 'start:end' range", INFO_PATH, key="splits")
            elif int(m.group(1)) > int(m.group(2)) or int(m.group(2)) > len(episodes):
                ctx.emit("C008", f"splits[{name!r}] = {rng!r} is outside 0:{len(episodes)}", INFO_PATH, key="splits")

    # C003 v2 counters
    if ds.layout == "v2":
        n_keys = len(ds.video_keys)
        tv = ds.total("total_videos")
        if tv is not None and tv != len(episodes) * n_keys:
            ctx.emit("C003", f"total_videos is {tv}, expected {len(episodes)} episodes x {n_keys} video key(s) = {len(episodes) * n_keys}",
                     INFO_PATH, key="total_videos")
        tc = ds.total("total_chunks")
        expected_chunks = math.ceil(len(episodes) / ds.chunks_size) if episodes else 0
        if tc is not None and tc != expected_chunks:
            ctx.emit("C003", f"total_chunks is {tc}, expected ceil({len(episodes)} / {ds.chunks_size}) = {expected_chunks}",
                     INFO_PATH, key="total_chunks")


def run_data(ctx: CheckContext) -> None:
    """Counts against the parquet footers.

    Emits C002 (total_frames) and C005 (rows per data file). Reads ``ctx.episodes_ok``, ``ctx.data_files``,
    ``ctx.footers`` and ``ctx.bad_data_files`` (set by :func:`lerobot_tools.checks.files.run`); sets nothing.
    """
    ds = ctx.dataset
    if not ctx.episodes_ok:
        return
    episodes = ds.episodes
    by_index = {e.episode_index: e for e in episodes}
    data_files = ctx.data_files
    sum_lengths = sum(e.length for e in episodes if e.length is not None)
    # C005: rows per file against the lengths of the episodes the metadata places there
    for df in data_files:
        footer = ctx.footers.get(df.relpath)
        if footer is None:
            continue
        lengths = [by_index[i].length for i in df.episodes if i in by_index]
        if any(length is None for length in lengths):
            continue
        expected = sum(lengths)
        if footer.num_rows != expected:
            single = df.episodes[0] if len(df.episodes) == 1 else None
            if single is not None:
                msg = f"episode {single} has length {expected} but its file has {footer.num_rows} rows"
            else:
                msg = (f"file has {footer.num_rows} rows but its {len(df.episodes)} episodes sum to {expected} frames")
            ctx.emit("C005", msg, df.relpath, group="episode lengths disagree with the rows in the data files", episode=single)
    # C002 total_frames
    total_frames = ds.total("total_frames")
    if total_frames is None:
        return
    if data_files and not ctx.bad_data_files:
        rows = sum(ctx.footers[df.relpath].num_rows for df in data_files)
        if rows != total_frames:
            ctx.emit("C002", f"total_frames is {total_frames} but the data files hold {rows} rows", INFO_PATH,
                     key="total_frames")
        elif sum_lengths != total_frames and all(e.length is not None for e in episodes):
            ctx.emit("C002", f"total_frames is {total_frames} but the episode lengths sum to {sum_lengths}", INFO_PATH,
                     key="total_frames")
    elif all(e.length is not None for e in episodes) and sum_lengths != total_frames:
        ctx.emit("C002", f"total_frames is {total_frames} but the episode lengths sum to {sum_lengths} "
                 "(data files not all readable)", INFO_PATH, key="total_frames")
