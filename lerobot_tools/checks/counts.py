"""Family C: info.json counters, episode indices, per-episode lengths, v3.0 index ranges.

Sources: docs/format.md#info-json (counters), docs/format.md#episodes (episode metadata),
docs/format.md#loader-assumptions (L1-L3, L6, L7); docs/failure-modes.md (#counters, #scrambled-ranges,
#rows-out-of-order). Lengths are compared with parquet footers (row counts), never by reading data.
"""

from __future__ import annotations

import math
import re

from lerobot_tools.checks.context import CheckContext
from lerobot_tools.checks.files import format_episodes, report_unreadable
from lerobot_tools.dataset.model import INFO_PATH, V2_EPISODES_PATH
from lerobot_tools.dataset.placeholders import UnreadableFileError
from lerobot_tools.errors import DatasetError


def run_metadata(ctx: CheckContext) -> None:
    """Checks that need only info.json and the episode metadata.

    Emits C001, C003, C004, C006, C007, C008 (and F004-F006 for an episode-metadata file that is a
    placeholder). Reads ``ctx.dataset`` (info.json, episode metadata); sets ``ctx.episodes_ok`` when the
    episode metadata could be read, ``ctx.episodes_complete`` (no malformed row) and ``ctx.episodes_cause``.

    Nothing is derived from unreadable metadata: when the file(s) cannot be read, the cause is reported once
    and every count check that needs them is listed as not checked; when some rows are malformed, the
    counts that would include them (C001, C003) are not compared.
    """
    ds = ctx.dataset
    assert ds is not None
    try:
        episodes = ds.episodes
    except DatasetError as exc:
        ctx.episodes_cause = report_unreadable(ctx, exc, "C007", "episodes")
        if isinstance(exc, UnreadableFileError):
            # v3.0 splits the metadata over several files: report every one that is unreadable, not the first
            for other in ds.unreadable_episode_files():
                if other.path != exc.path:
                    report_unreadable(ctx, other, "C007", "episodes")
        ctx.skip("C001, C003-C006, T002, D001-D005, F010", f"{ctx.episodes_cause}: nothing is derived from it")
        _check_splits(ctx, None)
        return
    ctx.episodes_ok = True
    src = V2_EPISODES_PATH if ds.layout == "v2" else None
    for p in ds.episode_problems:
        ctx.emit("C007", p, src, group="episode metadata rows are malformed")
    if ds.episode_problems:
        ctx.episodes_complete = False
        ctx.episodes_cause = f"{len(ds.episode_problems)} episode-metadata row(s) are malformed"
        ctx.skip("C001, C003, F003 for names that fit the templates",
                 f"{ctx.episodes_cause}: the episode count is incomplete")
    if not episodes:
        ctx.emit("C007", "the episode metadata has no rows", src or "meta/episodes")
    _check_columns(ctx, episodes, src)
    _check_positions(ctx, episodes)
    # C001 total_episodes
    total_eps = ds.total("total_episodes")
    if total_eps is not None and total_eps != len(episodes) and ctx.episodes_complete:
        ctx.emit("C001", f"total_episodes is {total_eps} but the episode metadata has {len(episodes)} episode(s)", INFO_PATH,
                 key="total_episodes")
    if ds.layout == "v3":
        _check_index_ranges(ctx, episodes)
    _check_splits(ctx, len(episodes) if ctx.episodes_complete else None)
    if ds.layout == "v2" and ctx.episodes_complete:
        _check_v2_counters(ctx, episodes)


def _check_columns(ctx: CheckContext, episodes: list, src: str | None) -> None:
    """C007: a column no episode row has (length; v3.0: the data file, the index range, a camera's segment)."""
    ds = ctx.dataset
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
    if ds.layout == "v3" and episodes:
        _check_segment_columns(ctx, episodes)


def _check_positions(ctx: CheckContext, episodes: list) -> None:
    """C004: episode_index == position, unique."""
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


def _check_index_ranges(ctx: CheckContext, episodes: list) -> None:
    """C006 (v3.0): dataset_from_index/dataset_to_index ranges back to back from 0, each as long as the episode."""
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


def _check_v2_counters(ctx: CheckContext, episodes: list) -> None:
    """C003 (v2.x): total_videos and total_chunks agree with the episodes."""
    ds = ctx.dataset
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


def _check_segment_columns(ctx: CheckContext, episodes: list) -> None:
    """C007, v3.0: ``videos/<key>/from_timestamp`` and ``to_timestamp`` beside a camera's chunk and file indices.

    lerobot 0.4.4 ``LeRobotDataset._query_videos`` (``datasets/lerobot_dataset.py``) reads
    ``ep[f"videos/{key}/from_timestamp"]`` for every frame query (KeyError when the column is absent, a TypeError on
    ``None + timestamp`` when the row's value is null); ``StreamingLeRobotDataset.make_frame``
    (``datasets/streaming_dataset.py``) reads ``to_timestamp`` too, and so does the recorder appending an episode.
    Reported once per camera, naming the columns (every row lacks them) or the episodes (some rows do); the frame
    queries of those episodes are unknown, so F010, F020 and F021 are listed as not checked for them instead of
    reporting every query."""
    ds = ctx.dataset
    for key in ds.video_keys:
        rows = [e for e in episodes if key in e.videos]
        if not rows:
            continue  # no videos/<key>/chunk_index: "videos/<key>/*" above
        lacking = {end: [e for e in rows if getattr(e.videos[key], end) is None]
                   for end in ("from_timestamp", "to_timestamp")}
        absent = [end for end, lack in lacking.items() if len(lack) == len(rows)]
        if absent:
            cols = ", ".join(f"videos/{key}/{end}" for end in absent)
            why = ("no frame of the camera can be located (lerobot 0.4.4 _query_videos raises KeyError)"
                   if "from_timestamp" in absent else
                   "lerobot 0.4.4's StreamingLeRobotDataset raises KeyError (LeRobotDataset reads from_timestamp only)")
            ctx.emit("C007", f"episode metadata has no {cols} column(s): {why}", rows[0].source, video_key=key,
                     key=f"videos/{key}/{absent[0]}")
        for end, lack in lacking.items():
            if lack and end not in absent:
                eps = sorted(e.episode_index for e in lack)
                why = ("their frames cannot be located (lerobot 0.4.4 _query_videos raises TypeError on None + "
                       "timestamp)" if end == "from_timestamp" else
                       "lerobot 0.4.4's StreamingLeRobotDataset reads it for every frame")
                ctx.emit("C007", f"episode(s) {format_episodes(eps)} have no videos/{key}/{end} value (null): {why}",
                         lack[0].source, video_key=key, key=f"videos/{key}/{end}")
        unlocated = lacking["from_timestamp"]
        if unlocated:
            ctx.skip(f"F010, F020, F021 for {key}", f"{len(unlocated)} episode(s) have no "
                     f"videos/{key}/from_timestamp: where their frame queries land is unknown")


def _check_splits(ctx: CheckContext, on_disk: int | None) -> None:
    """C008: every split is a ``start:end`` episode range within ``total_episodes``, and together they leave no
    episode out.

    Args:
        on_disk: the number of episodes the readable episode metadata holds, or None when it cannot be read
            (or has malformed rows): then only info.json's ``total_episodes`` is the reference, never a count
            from an unreadable file. When both are known and differ (C001 reports that), a split is flagged
            only if it is wrong against both.
    """
    ds = ctx.dataset
    splits = ds.info.get("splits")
    if not isinstance(splits, dict):
        return
    ranges: dict[str, tuple[int, int]] = {}
    for name, rng in splits.items():
        m = re.fullmatch(r"\s*(\d+)\s*:\s*(\d+)\s*", rng) if isinstance(rng, str) else None
        if not m:
            ctx.emit("C008", f"splits[{name!r}] = {rng!r} is not a 'start:end' range", INFO_PATH, key="splits")
        elif int(m.group(1)) > int(m.group(2)):
            ctx.emit("C008", f"splits[{name!r}] = {rng!r} ends before it starts", INFO_PATH, key="splits")
        else:
            ranges[name] = (int(m.group(1)), int(m.group(2)))
    total = ds.total("total_episodes")
    refs = [(n, what) for n, what in ((total, "total_episodes"), (on_disk, "the episode metadata"))
            if n is not None]
    if not refs or not ranges:
        return
    if len(refs) == 2 and refs[0][0] == refs[1][0]:
        refs = refs[:1]
    for name, (a, b) in ranges.items():
        if all(b > n for n, _ in refs):
            known = " and ".join(f"total_episodes = {n}" if what == "total_episodes" else f"{n} in {what}"
                                 for n, what in refs)
            ctx.emit("C008", f"splits[{name!r}] = '{a}:{b}' points past the last episode ({known}); a split-aware "
                     f"reader asks for episodes that do not exist", INFO_PATH, key="splits")
    # the episodes left out as ranges, never one set entry per episode: total_episodes and a split's end are numbers
    # read from a file (10**30 is a valid JSON integer)
    left = [(n, what, uncovered(ranges.values(), n)) for n, what in refs]
    if all(gaps for _, _, gaps in left):
        n, what, gaps = left[0]
        count = sum(b - a for a, b in gaps)
        first = [ep for a, b in gaps for ep in range(a, min(b, a + 6))][:6]
        shown = ", ".join(map(str, first[:5])) + (f" and {count - 5} more" if count > 5 else "")
        src = "total_episodes" if what == "total_episodes" else what
        ctx.emit("C008", f"splits leave {count} of the {n} episode(s) of {src} out of every split: episode(s) "
                 f"{shown}", INFO_PATH, key="splits")


def uncovered(ranges, n: int) -> list[tuple[int, int]]:
    """The half-open ranges of ``0 .. n - 1`` that none of ``ranges`` (half-open ``(start, end)``) covers, in order.

    Time and memory grow with the number of ranges, not with ``n`` or the ranges' ends.
    """
    gaps: list[tuple[int, int]] = []
    pos = 0
    for a, b in sorted(ranges):
        if a >= n:
            break
        if b <= a:  # an empty split ('2:2') covers nothing
            continue
        if a > pos:
            gaps.append((pos, a))
        pos = max(pos, b)
    if pos < n:
        gaps.append((pos, n))
    return gaps


def run_data(ctx: CheckContext) -> None:
    """Counts against the parquet footers.

    Emits C002 (total_frames) and C005 (rows per data file). Reads ``ctx.episodes_ok``, ``ctx.data_files``,
    ``ctx.footers`` and ``ctx.bad_data_files`` (set by :func:`lerobot_tools.checks.files.run`); sets nothing.
    """
    ds = ctx.dataset
    if not ctx.episodes_ok:
        _layout_counts(ctx)
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
        if not df.episodes:  # a file the loader globs that no template names (files.run): its episodes are unknown
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
            _c002(ctx, f"total_frames is {total_frames} but the data files hold {rows} rows")
        elif sum_lengths != total_frames and all(e.length is not None for e in episodes):
            _c002(ctx, f"total_frames is {total_frames} but the episode lengths sum to {sum_lengths}")
    elif all(e.length is not None for e in episodes) and sum_lengths != total_frames:
        why = "data files not all readable" if data_files else "no data file is referenced"
        _c002(ctx, f"total_frames is {total_frames} but the episode lengths sum to {sum_lengths} ({why})")


def _c002(ctx: CheckContext, message: str) -> None:
    """C002: an error for v3.0 (lerobot 0.4.4 ``LeRobotDataset.num_frames`` is ``total_frames`` for a whole
    dataset, so its ``len`` is wrong); a warning for v2.x (lerobot 0.3.3's ``num_frames`` is the rows it loaded,
    ``total_frames`` is only written)."""
    if ctx.dataset.layout == "v2":
        ctx.emit("C002", f"{message} (a warning: lerobot 0.3.3 counts the rows it loads, not total_frames)",
                 INFO_PATH, severity="warning", key="total_frames")
    else:
        ctx.emit("C002", message, INFO_PATH, key="total_frames")


def _layout_counts(ctx: CheckContext) -> None:
    """Without episode metadata: info.json's counters against the data files found from ``data_path`` and the
    folders on disk (``ctx.data_layout``). C002 when every file is readable (v2.x: every file ``total_episodes``
    names; v3.0: every file on disk that fits ``data_path``, which is what the v3 loader globs); C001 when v2.x
    data files exist for episodes past ``total_episodes``, or when ``total_episodes`` names more files than were
    looked for (:data:`lerobot_tools.dataset.ondisk.MAX_MISSING_NAMED` more than the files on disk)."""
    ds = ctx.dataset
    layout = ctx.data_layout
    if layout is None:
        return
    total_eps = ds.total("total_episodes")
    if ds.layout == "v2" and layout.unnamed:
        ctx.emit("C001", f"total_episodes is {total_eps} but only {len(layout.on_disk)} data file(s) on disk fit "
                 f"data_path: the files of its first {layout.named} episode(s) are checked, the other "
                 f"{layout.unnamed} are not looked for", INFO_PATH, key="total_episodes")
    if ds.layout == "v2" and total_eps is not None:
        extra = sorted({ep for df in ctx.data_files if df.relpath not in layout.expected for ep in df.episodes
                        if ep >= total_eps})
        if extra:
            shown = ", ".join(map(str, extra[:5])) + (f" and {len(extra) - 5} more" if len(extra) > 5 else "")
            ctx.emit("C001", f"total_episodes is {total_eps} but data/ holds data files named for episode(s) {shown} "
                     "as well", INFO_PATH, key="total_episodes")
    total_frames = ds.total("total_frames")
    counted = [df for df in ctx.data_files if ds.layout != "v2" or df.relpath in layout.expected]
    if total_frames is None or not counted or any(df.relpath in ctx.bad_data_files for df in counted):
        return
    rows = sum(ctx.footers[df.relpath].num_rows for df in counted)
    if rows != total_frames:
        what = (f"the {len(counted)} data file(s) data_path names for them" if ds.layout == "v2" else
                f"the {len(counted)} data file(s) on disk that fit data_path")
        _c002(ctx, f"total_frames is {total_frames} but {what} hold {rows} rows")
