"""Family D (``--deep``): stream the index and timestamp columns of every data file.

Only the columns the checks need are read, in record batches (``ParquetFile.iter_batches``), so memory is
bounded by one batch whatever the file size. Checks: rows grouped and ordered by episode in the file the
metadata names (D004), per-episode row counts (C005), ``frame_index`` 0..length-1 (D001), global ``index``
contiguous (D002), ``|timestamp - k/fps| <= tolerance_s`` for the episode's k-th row (D003; k is what frame_index
should hold, so a wrong frame_index is D001 alone), and the row lengths of
variable-length list columns (D005). Sources: docs/format.md#data-files, docs/format.md#loader-assumptions
(L2-L4); docs/failure-modes.md (#variable-lists, #rows-out-of-order, #timestamps, #float32-timestamps).

When G010 is selected the same read also carries every numeric feature column to a
:class:`~lerobot_tools.checks.stats.deep.FileStatsBuilder` (the data is read once): the scan then returns each
episode's moments too (:attr:`FileScan.stats`), the batches shrink so the decoded columns stay near 4 MiB, and
worker threads decode the next batches while the current one is processed (:func:`_decode_ahead`).
"""

from __future__ import annotations

import contextlib
import time
from dataclasses import dataclass, field

import numpy as np

from lerobot_tools._arrow_numpy import list_lengths, numpy_values
from lerobot_tools._memory import release_freed, resident_bytes
from lerobot_tools._parallel import read_ahead, thread_map
from lerobot_tools.checks.content import run as content_run
from lerobot_tools.checks.content.episode import ContentBuilder, ContentRequest, EpisodeSummary
from lerobot_tools.checks.context import CheckContext
from lerobot_tools.checks.stats import deep as stats_deep
from lerobot_tools.dataset.footers import row_group_rows
from lerobot_tools.errors import one_line

BATCH_ROWS = 65_536
#: the most off-grid timestamps one data file's scan keeps for the timestamp audit (16 bytes each)
MAX_TS_KEPT = 2_000_000
#: while statistics are accumulated and the process holds more than this many bytes, pyarrow's pool hands the
#: pages of the batches already reduced back to the system after every batch: its default allocator, mimalloc,
#: keeps freed pages for a second, ~60 MB more at the peak on a 1 GB file of 14,000 row groups (whose parsed footer
#: alone is ~100 MB). Below it the pages are left for reuse: releasing after every batch costs up to a third more
#: time on a file of wide rows, whose column chunks are then mapped afresh for each batch. Where resident memory
#: cannot be read, the pool is released every :data:`RELEASE_EVERY_S` seconds.
RELEASE_ABOVE = 192 * 2**20
RELEASE_EVERY_S = 0.2


@dataclass(slots=True)  # one per episode of the file
class _EpisodeStats:
    rows: int = 0
    bad_frame: int = 0
    first_bad_frame: tuple[int, int, int] | None = None  # (row in episode, got, expected)
    bad_ts: int = 0
    max_ts_err: float = 0.0


@dataclass
class FileScan:
    runs: list[list[int]] = field(default_factory=list)  # [episode, rows] in row order
    episodes: dict[int, _EpisodeStats] = field(default_factory=dict)
    bad_index: int = 0
    first_bad_index: tuple[int, int, int] | None = None  # (row in file, got, expected)
    list_bad: dict[str, int] = field(default_factory=dict)
    rows: int = 0
    #: per-episode moments of the numeric columns when a statistics request was given (G010)
    stats: "stats_deep.FileStats | None" = None
    #: the timestamps that differ from k / fps by more than a quarter of the tolerance, for the timestamp audit
    #: (:mod:`lerobot_tools.checks.timestamps`): episode -> (positions in the episode, timestamps in seconds)
    ts_off: dict[int, tuple[list[int], list[float]]] = field(default_factory=dict)
    #: more than :data:`MAX_TS_KEPT` such timestamps: the rest were not kept
    ts_off_truncated: bool = False
    #: per-episode content summaries when a content request was given (family Q)
    content: "list[EpisodeSummary] | None" = None
    #: episodes too long to summarise within the memory bound (not judged by family Q)
    content_too_long: list[int] = field(default_factory=list)
    #: content features whose rows do not all hold the declared number of values (D005/S004; not judged)
    content_unusable: list[str] = field(default_factory=list)


def scan_to_dict(scan: FileScan) -> dict:
    """A scan as plain JSON (to carry it between processes); :func:`scan_from_dict` inverts it exactly."""
    d = {
        "runs": [list(r) for r in scan.runs],
        "episodes": [[e, st.rows, st.bad_frame, list(st.first_bad_frame) if st.first_bad_frame else None,
                      st.bad_ts, st.max_ts_err] for e, st in scan.episodes.items()],
        "bad_index": scan.bad_index,
        "first_bad_index": list(scan.first_bad_index) if scan.first_bad_index else None,
        "list_bad": [[k, v] for k, v in scan.list_bad.items()],
        "rows": scan.rows,
        "stats": scan.stats.to_dict() if scan.stats is not None else None,
        "ts_off": [[e, list(pos), list(ts)] for e, (pos, ts) in scan.ts_off.items()],
        "ts_off_truncated": scan.ts_off_truncated,
    }
    if scan.content is not None:
        d["content"] = [c.to_dict() for c in scan.content]
    if scan.content_too_long:
        d["content_too_long"] = list(scan.content_too_long)
    if scan.content_unusable:
        d["content_unusable"] = list(scan.content_unusable)
    return d


def scan_from_dict(d: dict) -> FileScan:
    """Inverse of :func:`scan_to_dict`.

    Raises:
        KeyError, TypeError, ValueError: ``d`` is not a serialised scan.
    """
    scan = FileScan(runs=[[int(e), int(n)] for e, n in d["runs"]], bad_index=int(d["bad_index"]),
                     rows=int(d["rows"]))
    for e, rows, bad_frame, first, bad_ts, max_err in d["episodes"]:
        scan.episodes[int(e)] = _EpisodeStats(int(rows), int(bad_frame), tuple(first) if first else None,
                                              int(bad_ts), float(max_err))
    if d["first_bad_index"]:
        scan.first_bad_index = tuple(d["first_bad_index"])
    scan.list_bad = {str(k): int(v) for k, v in d["list_bad"]}
    if d.get("stats") is not None:
        scan.stats = stats_deep.FileStats.from_dict(d["stats"])
    scan.ts_off = {int(e): ([int(x) for x in pos], [float(x) for x in ts]) for e, pos, ts in d.get("ts_off") or []}
    scan.ts_off_truncated = bool(d.get("ts_off_truncated"))
    if d.get("content") is not None:
        scan.content = [EpisodeSummary.from_dict(c) for c in d["content"]]
    scan.content_too_long = [int(e) for e in d.get("content_too_long", [])]
    scan.content_unusable = [str(n) for n in d.get("content_unusable", [])]
    return scan


def scan_file(path, *, fps: float | None, tolerance_s: float, index_offset: int | None,
              list_columns: dict[str, int], stats: "stats_deep.StatsRequest | None" = None,
              content: ContentRequest | None = None) -> FileScan:
    """Stream one data file's index columns and return what was seen (see module docstring).

    Args:
        path: the parquet file.
        fps: frames per second for the timestamp check (None skips it).
        tolerance_s: allowed timestamp error in seconds.
        index_offset: the global ``index`` expected on the first row (None skips D002).
        list_columns: variable-length list columns to check, name -> declared length.
        stats: the numeric columns (and quantile thresholds) to accumulate per episode for G010, or None.
        content: the action/state columns to summarise per episode for family Q
            (:mod:`lerobot_tools.checks.content.episode`), or None.

    Raises:
        Exception: pyarrow errors for unreadable data pages (the caller reports them).
    """
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    pf = pq.ParquetFile(path, pre_buffer=False)  # pre-buffering holds every row group's chunks: memory grows
    names = set(pf.schema_arrow.names)

    def usable(c: str) -> bool:  # a list-typed index column is S004's finding, not read here
        if c not in names:
            return False
        t = pf.schema_arrow.field(c).type
        return pa.types.is_floating(t) if c == "timestamp" else pa.types.is_integer(t)

    wanted = [c for c in ("episode_index", "frame_index", "index", "timestamp") if usable(c)]
    cols = wanted + [c for c in list_columns if c in names]
    builder = stats_deep.FileStatsBuilder(stats) if stats is not None else None
    summariser = ContentBuilder(content) if content is not None else None
    batch_rows = BATCH_ROWS
    numeric: dict = {}
    if builder is not None:
        cols += [c for c in builder.names if c in names and c not in cols]
        numeric.update(builder.columns)
    if summariser is not None:
        cols += [c for c in summariser.names if c in names and c not in cols]
        numeric.update({n: (d, np.dtype(np.float64)) for n, (d, _) in content.columns.items() if n not in numeric})
    if numeric:
        batch_rows = stats_deep.batch_rows_for(pf.schema_arrow, numeric, BATCH_ROWS)
    scan = FileScan()
    if "episode_index" not in wanted or not cols:
        return scan
    reducing = builder is not None or summariser is not None
    if reducing:  # statistics or content: decode the next batches while the numpy pass runs on this one
        batches = _decode_ahead(path, pf, cols, batch_rows)
    else:
        batches = pf.iter_batches(batch_size=batch_rows, columns=cols)
    req = _BatchChecks(wanted, names, fps, tolerance_s, index_offset, list_columns, builder, summariser)
    with contextlib.closing(batches):  # stops and joins the read-ahead thread whatever happens in the loop
        _scan_batches(scan, batches, req)

    if summariser is not None:
        scan.content = summariser.result()
        scan.content_too_long = list(summariser.too_long)
        scan.content_unusable = sorted(summariser.unusable)
    if builder is not None:
        # the parsed footer (~100 MB for 14,000 row groups) is not needed to merge the moments: free it first
        del batches, pf, req
        release_freed()
        scan.stats = builder.result()
    return scan


@dataclass
class _BatchChecks:
    """What :func:`_scan_batches` checks and accumulates in each record batch (see :func:`scan_file`)."""

    wanted: list[str]          # the usable index columns among episode_index, frame_index, index, timestamp
    names: set[str]            # every column of the file
    fps: float | None
    tolerance_s: float
    index_offset: int | None
    list_columns: dict[str, int]
    builder: object | None     # stats_deep.FileStatsBuilder
    summariser: object | None  # ContentBuilder


def _scan_batches(scan: FileScan, batches, req: _BatchChecks) -> None:
    """Stream the record batches: episode runs, D001 (frame_index), D003 (timestamps), D002 (index), list lengths,
    and the statistics / content accumulation, with pyarrow's pool handed back while the process is large."""
    import pyarrow as pa

    reducing = req.builder is not None or req.summariser is not None
    pool = pa.default_memory_pool() if reducing else None
    released = time.perf_counter()
    carry = [None, 0]  # the episode the previous batch ended in, and its rows so far
    for batch in batches:
        n = batch.num_rows
        if n == 0:
            continue
        ep = numpy_values(batch.column("episode_index")).astype(np.int64, copy=False)
        starts, lens, pos = _episode_runs(scan, ep, carry)
        if req.summariser is not None:
            req.summariser.add(batch, ep[starts], starts, lens)
        if req.builder is not None:
            req.builder.add(batch, ep[starts], starts, lens)
        if reducing:
            now = resident_bytes()
            if now is None:
                due = time.perf_counter() - released >= RELEASE_EVERY_S
            else:
                due = now >= RELEASE_ABOVE
            if due:
                pool.release_unused()
                released = time.perf_counter()
        if "frame_index" in req.wanted:
            _check_frame_index(scan, ep, pos, batch)
        if req.fps and "timestamp" in req.wanted:
            _check_timestamps(scan, ep, pos, batch, req.fps, req.tolerance_s)
        if "index" in req.wanted and req.index_offset is not None:
            _check_index(scan, batch, req.index_offset)
        _check_list_lengths(scan, batch, req.list_columns, req.names)
        scan.rows += n


def _episode_runs(scan: FileScan, ep, carry: list):
    """Record the batch's runs of equal ``episode_index`` in ``scan`` (continuing the previous batch's run, as
    ``carry`` says, which is updated). Returns ``(starts, lens, pos)``: run starts and lengths, and each row's
    position in its episode."""

    n = len(ep)
    carry_ep, carry_pos = carry
    change = np.flatnonzero(ep[1:] != ep[:-1]) + 1
    starts = np.concatenate(([0], change))
    lens = np.diff(np.concatenate((starts, [n])))
    # position of each row inside its run of equal episode_index
    pos = np.arange(n, dtype=np.int64) - np.repeat(starts, lens)
    if carry_ep is not None and ep[0] == carry_ep:
        pos[: lens[0]] += carry_pos
    for s, ln in zip(starts, lens):
        e = int(ep[s])
        if scan.runs and scan.runs[-1][0] == e and s == 0 and carry_ep == e:
            scan.runs[-1][1] += int(ln)
        else:
            scan.runs.append([e, int(ln)])
        scan.episodes.setdefault(e, _EpisodeStats()).rows += int(ln)
    carry[0], carry[1] = int(ep[-1]), int(pos[-1]) + 1
    return starts, lens, pos


def _check_frame_index(scan: FileScan, ep, pos, batch) -> None:
    """D001: ``frame_index`` is each row's position in its episode; per episode the wrong rows and the first."""

    fi = numpy_values(batch.column("frame_index")).astype(np.int64, copy=False)
    bad = np.flatnonzero(fi != pos)
    if not len(bad):
        return
    # per episode: how many rows are wrong, and the first of them (bad is in row order)
    bad_eps, first, counts = np.unique(ep[bad], return_index=True, return_counts=True)
    for e, i, c in zip(bad_eps.tolist(), first.tolist(), counts.tolist()):
        st = scan.episodes[e]
        st.bad_frame += c
        if st.first_bad_frame is None:
            r = bad[i]
            st.first_bad_frame = (int(pos[r]), int(fi[r]), int(pos[r]))


def _check_timestamps(scan: FileScan, ep, pos, batch, fps: float, tolerance_s: float) -> None:
    """D003: the k-th frame of an episode is at k / fps within ``tolerance_s``; rows off the grid are kept for
    the timestamp audit."""

    ts = numpy_values(batch.column("timestamp")).astype(np.float64)
    err = np.abs(ts - pos / fps)  # the k-th frame of an episode is at k / fps (D001 checks frame_index == k)
    bad_ts = np.flatnonzero(err > tolerance_s + 1e-9)
    _keep_off_grid(scan, ep, pos, ts, np.flatnonzero(err > tolerance_s / 4))
    if len(bad_ts):
        for e in np.unique(ep[bad_ts]):
            sel = bad_ts[ep[bad_ts] == e]
            st = scan.episodes[int(e)]
            st.bad_ts += len(sel)
            st.max_ts_err = max(st.max_ts_err, float(err[sel].max()))


def _check_index(scan: FileScan, batch, index_offset: int) -> None:
    """D002: the global ``index`` counts rows from ``index_offset`` (the file's first row)."""

    n = batch.num_rows
    idx = numpy_values(batch.column("index")).astype(np.int64, copy=False)
    expected = np.arange(scan.rows, scan.rows + n, dtype=np.int64) + index_offset
    bad = np.flatnonzero(idx != expected)
    if len(bad):
        scan.bad_index += len(bad)
        if scan.first_bad_index is None:
            r = int(bad[0])
            scan.first_bad_index = (scan.rows + r, int(idx[r]), int(expected[r]))


def _check_list_lengths(scan: FileScan, batch, list_columns: dict[str, int], names: set[str]) -> None:
    """Variable-length list columns: rows whose length is not the declared one (null rows count as wrong)."""

    for name, length in list_columns.items():
        if name not in names:
            continue
        col = batch.column(name)
        lengths = list_lengths(col)
        if lengths is None:  # null rows: pyarrow.compute gives them no length, so they count as wrong
            import pyarrow.compute as pc

            lengths = numpy_values(pc.list_value_length(col))
        nbad = int(np.count_nonzero(lengths != length))
        if nbad:
            scan.list_bad[name] = scan.list_bad.get(name, 0) + nbad


def _keep_off_grid(scan: FileScan, ep, pos, ts, rows) -> None:
    """Keep the rows ``rows`` (timestamps off k / fps) per episode for the timestamp audit, up to MAX_TS_KEPT."""
    import numpy as np

    if not len(rows):
        return
    kept = sum(len(p) for p, _ in scan.ts_off.values())
    if kept + len(rows) > MAX_TS_KEPT:
        scan.ts_off_truncated = True
        rows = rows[: max(0, MAX_TS_KEPT - kept)]
    for e in np.unique(ep[rows]).tolist():
        sel = rows[ep[rows] == e]
        p, t = scan.ts_off.setdefault(int(e), ([], []))
        p.extend(pos[sel].tolist())
        t.extend(ts[sel].tolist())


#: threads decoding record batches ahead of the statistics pass (pyarrow decodes without the GIL); None: one CPU
#: fewer than the machine has, at most 4 (the calling thread reduces the batches on the remaining one)
DECODE_THREADS: int | None = None


def _decode_ahead(path, pf, cols: list[str], batch_rows: int):
    """Record batches of ``cols`` in file order, about ``batch_rows`` rows each, decoded ahead of the caller.

    Decoding the numeric columns of a list type is most of the statistics pass's cost (pyarrow turns every
    value's repetition/definition levels into list offsets), so consecutive row groups are grouped into batches
    of about ``batch_rows`` rows, and up to :data:`DECODE_THREADS` of them are decoded at once, each by its own
    reader sharing the parsed footer; at most that many batches are held beyond the caller's. With one thread (a
    2-core machine, where the other core reduces the batches) or a row group of more than ``2 * batch_rows`` rows
    (decoding a whole large row group at once would not keep memory bounded) the file is streamed by one
    read-ahead thread instead. The caller must close the returned generator (it joins the threads).
    """
    import os

    import pyarrow.parquet as pq

    md = pf.metadata
    sizes = row_group_rows(md)
    threads = DECODE_THREADS if DECODE_THREADS is not None else min(4, (os.cpu_count() or 1) - 1)
    if threads <= 1 or len(sizes) < 2 or max(sizes) > 2 * batch_rows:
        return read_ahead(pf.iter_batches(batch_size=batch_rows, columns=cols), name="lrtool-deep-read")
    groups: list[tuple[list[int], int]] = []
    cur: list[int] = []
    rows = 0
    for i, n in enumerate(sizes):
        if cur and rows + n > batch_rows:
            groups.append((cur, rows))
            cur, rows = [], 0
        cur.append(i)
        rows += n
    if cur:
        groups.append((cur, rows))

    def decode(group: tuple[list[int], int]) -> list:
        rgs, n = group
        if n == 0:
            return []
        with pq.ParquetFile(path, metadata=md, pre_buffer=False) as reader:
            return list(reader.iter_batches(batch_size=n, row_groups=rgs, columns=cols, use_threads=False))

    def flat():
        parts = thread_map(decode, groups, threads=threads, ahead=threads)
        try:
            for part in parts:
                yield from part
        finally:
            parts.close()  # cancels what is queued and joins the decoding threads

    return flat()


def run(ctx: CheckContext) -> None:
    """Family D (``--deep``): stream the index columns of every readable data file.

    Emits D001-D005, C005 per episode, F007 for data pages that cannot be read behind a valid footer,
    (through :mod:`lerobot_tools.checks.stats.deep`) G010, and (through :mod:`lerobot_tools.checks.content.run`)
    the episode content checks of family Q. Reads the options ``deep`` and ``tolerance_s``,
    ``ctx.episodes_ok``, ``ctx.data_files``, ``ctx.footers``, ``ctx.bad_data_files`` and ``ctx.stats_facts``;
    sets nothing.
    """
    if not ctx.options.deep:
        ctx.skip("D001-D005, C005 per episode", "--deep not given (footers only)")
        if ctx.enabled("G010") and ctx.stats_facts is not None:
            ctx.skip("G010 (stored statistics against the data)", "--deep not given")
        content_run.not_deep(ctx)
        return
    ds = ctx.dataset
    if not ctx.episodes_ok or not ctx.data_files:
        ctx.skip("D001-D005", "no readable episode metadata or data files")
        content_run.not_deep(ctx, "no readable episode metadata or data files")
        return
    import pyarrow as pa

    by_ep = {e.episode_index: e for e in ds.episodes}
    fps = ds.fps
    if fps is None:  # the info family says why (I003 / I005)
        ctx.skip("D003", "info.json has no usable fps, so the time of the k-th frame is unknown")
    tol = ctx.options.tolerance_s
    feats = ds.features
    global_offset: int | None = 0
    prev_last_ep = None
    if ctx.bad_data_files:
        ctx.skip("D002 across files", "some data files are missing or unreadable, so global index positions are unknown")
    stats = _stats_comparison(ctx, by_ep)
    stats_complete = not ctx.bad_data_files
    content = content_run.start(ctx, next((ctx.footers[df.relpath] for df in ctx.data_files
                                           if df.relpath in ctx.footers), None))
    for df in ctx.data_files:
        rel = df.relpath
        footer = ctx.footers.get(rel)
        if footer is None:
            global_offset = None
            continue
        list_cols = {}
        for name, feat in feats.items():
            shape = feat.get("shape")
            # a shape that is not [int] is I006's finding; here it must not raise (e.g. [null] or ["1"])
            if name in footer.schema.names and isinstance(shape, list) and len(shape) == 1 \
                    and isinstance(shape[0], int) and not isinstance(shape[0], bool) and shape[0] > 1 \
                    and feat.get("dtype") not in ("string", "image", "video", "language"):
                t = footer.schema.field(name).type
                if pa.types.is_list(t) or pa.types.is_large_list(t):
                    list_cols[name] = shape[0]
        offset = global_offset
        first = by_ep.get(df.episodes[0]) if df.episodes else None
        if offset is None and ds.layout == "v3" and first is not None:
            offset = first.from_index  # after an unreadable file, v3 metadata still says where this one starts
        kw = {} if stats is None else {"stats": stats.request(df.episodes)}
        if content is not None:
            kw["content"] = content.request
        try:
            scan = ctx.observer.scan_file(rel, ds.path(rel), fps=fps, tolerance_s=tol, index_offset=offset,
                                          list_columns=list_cols, **kw)
        except Exception as exc:  # corrupt data pages behind a valid footer
            ctx.emit("F007", f"data pages cannot be read ({one_line(exc, 160)})", rel, file_kind="data")
            global_offset = None
            stats_complete = False
            continue
        if stats is not None:
            if scan.stats is None or any(c not in footer.schema.names for c in stats.columns):
                stats_complete = False
            else:
                stats.add_file(scan.stats)
        if content is not None:
            content.add(scan.content, scan.content_too_long, scan.content_unusable)
        if global_offset is not None:
            global_offset += footer.num_rows
        _report_file(ctx, df, scan, by_ep, prev_last_ep, tol)
        if fps is not None and "timestamp" in footer.schema.names:
            ctx.timestamps_read.update(e for e, _ in scan.runs)
            ctx.timestamps_off.update(scan.ts_off)
            ctx.timestamps_truncated |= scan.ts_off_truncated
        if scan.runs:
            prev_last_ep = scan.runs[-1][0]
    if stats is not None:
        stats_deep.report(ctx, stats, complete=stats_complete and not stats.split)
    if content is not None:
        content.finish(ctx)
    content_run.cameras(ctx, content)


def _stats_comparison(ctx: CheckContext, by_ep: dict) -> "stats_deep.StatsComparison | None":
    """The G010 comparison for this dataset, or None when G010 is not selected or the statistics family did not
    run (camera statistics are noted as not recomputed)."""
    facts = ctx.stats_facts
    if facts is None or not ctx.enabled("G010"):
        return None
    footer = next((ctx.footers[df.relpath] for df in ctx.data_files if df.relpath in ctx.footers), None)
    if footer is None:
        return None
    stats_deep.camera_note(ctx)
    return stats_deep.StatsComparison.for_dataset(ctx.dataset, footer.schema, facts, by_ep)


def _report_file(ctx: CheckContext, df, scan: FileScan, by_ep: dict, prev_last_ep, tol: float) -> None:
    rel = df.relpath
    order = [e for e, _ in scan.runs]
    if len(order) != len(set(order)):
        ctx.emit("D004", "rows of an episode are not contiguous (episode_index sequence "
                 f"{_short_seq(order)})", rel, group="episode rows are not contiguous")
    elif order != sorted(order) or (prev_last_ep is not None and order and order[0] < prev_last_ep):
        ctx.emit("D004", f"episodes are not in ascending order ({_short_seq(order)})", rel,
                 group="episodes are not in ascending order")
    # a file the loader globs but no template names (checks.files): its episodes are what it holds
    present = set(order)
    expected = set(df.episodes) if df.episodes else present
    if present != expected:
        extra = sorted(present - expected)
        absent = sorted(expected - present)
        parts = []
        if extra:
            parts.append(f"holds episode(s) {extra[:6]} the metadata places elsewhere")
        if absent:
            parts.append(f"lacks episode(s) {absent[:6]} the metadata places here")
        ctx.emit("D004", "file " + " and ".join(parts), rel, group="data files hold other episodes than the metadata says")
    for e, st in sorted(scan.episodes.items()):
        meta = by_ep.get(e)
        if meta is not None and meta.length is not None and e in expected and st.rows != meta.length:
            ctx.emit("C005", f"episode {e} has {st.rows} rows but length {meta.length}", rel,
                     group="episode lengths disagree with the rows in the data files", episode=e)
        if st.bad_frame:
            row, got, want = st.first_bad_frame
            ctx.emit("D001", f"episode {e}: {st.bad_frame} row(s) with frame_index out of sequence "
                     f"(first at row {row} of the episode: {got}, expected {want})", rel,
                     group="frame_index does not run 0..length-1", episode=e)
        if st.bad_ts:
            ctx.emit("D003", f"episode {e}: {st.bad_ts} of {st.rows} timestamp(s) differ from k/fps (the k-th frame's time) by up to "
                     f"{st.max_ts_err:.2e} s (tolerance {tol:g} s)", rel, group="timestamps are not k / fps",
                     episode=e)
    if scan.bad_index:
        row, got, want = scan.first_bad_index
        ctx.emit("D002", f"{scan.bad_index} row(s) with index out of sequence (first at row {row} of the file: "
                 f"{got}, expected {want})", rel, group="the global index is not contiguous")
    for name, nbad in scan.list_bad.items():
        ctx.emit("D005", f"column {name!r}: {nbad} row(s) do not have the declared length", rel,
                 group=f"column {name!r} has rows of the wrong length", feature=name)


def _short_seq(seq: list[int]) -> str:
    return ", ".join(map(str, seq[:8])) + (", ..." if len(seq) > 8 else "")
