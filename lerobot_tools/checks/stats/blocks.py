"""Stored per-episode statistics as arrays: blocks of a few hundred episodes, one column per feature and statistic.

The checks (:mod:`.meta`, :mod:`.deep`) read the per-episode statistics through :class:`StatsBlocks`, which
streams them in file order, v2.1 ``meta/episodes_stats.jsonl`` :data:`StatsBlocks.BLOCK_LINES` lines at a time
and v3.0 ``meta/episodes/*/*.parquet`` :data:`StatsBlocks.BLOCK_ROWS` episodes at a time, and looks episodes up
again afterwards. What each layout stores and how a value is read (shapes, size caps) is in :mod:`.stored`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterator

import numpy as np

from lerobot_tools._arrow_numpy import list_lengths, list_values, numpy_values
from lerobot_tools._parallel import thread_map
from lerobot_tools.checks.stats.stored import (
    BASE_STATS,
    QUANTILES,
    MAX_JSONL_LINE_BYTES,
    NOT_AN_OBJECT,
    EpisodeStatsReader,
    stats_jsonl_lines,
    accepted_shapes,
    to_array,
    whole_counts,
)
from lerobot_tools.dataset.footers import row_group_rows
from lerobot_tools.dataset.model import V2_EPISODES_STATS_PATH, Dataset
from lerobot_tools.errors import one_line


#: threads opening and reading small ``meta/episodes`` files ahead of the statistics stream (lerobot writes one
#: per recording session: hundreds of files of a few episodes and ~100 columns each, ~1.5 ms apiece)
OPEN_THREADS = 2
#: files larger than this are opened by the stream itself, one at a time (their parsed footers can be ~100 MB)
OPEN_AHEAD_BYTES = 4 * 2**20


@dataclass
class StatColumn:
    """One statistic of one feature over a block of k episodes.

    Attributes:
        values: ``(k, *shape)`` float64 (``count``: int64); rows that are not ``ok`` hold NaN / 0. After
            :meth:`StatsBlocks.keep_quantiles_of`, a quantile's values of the rows kept only: read a row with
            :meth:`row`.
        ok: ``(k,)`` bool: the row holds a readable value of ``shape``.
        shapes: per row, the stored shape (None: absent; ``"unreadable"``: not a rectangular list of numbers;
            :data:`NOT_AN_OBJECT`: the feature's whole entry is not an object), only materialised for the rows that
            are not ``ok``.
        kept: row -> row of ``values`` when only some rows' values are kept (None: every row's).
    """

    values: np.ndarray
    ok: np.ndarray
    shapes: dict[int, Any]
    kept: dict[int, int] | None = None

    def row(self, i: int) -> np.ndarray:
        """The value of row ``i`` (its stored shape; NaN / 0 when the row is not ``ok``)."""
        return self.values[i] if self.kept is None else self.values[self.kept[i]]


@dataclass
class StatsBlock:
    """Stored per-episode statistics of k consecutive episodes, as arrays (one entry per feature and statistic).

    A v3.0 block may gather the row groups of several consecutive files (lerobot writes a new episodes file per
    recording session and per aggregated source, often of a few episodes each): ``spans`` says which rows came from
    which file.

    Attributes:
        source: the file (relative path) of the first row.
        first_row: row (v3.0) / line (v2.1, 1-based) of the first episode in that file.
        episodes: ``(k,)`` episode indices.
        features: feature -> statistic -> :class:`StatColumn`.
        spans: ``(first row in the block, file)`` of each file the rows come from, in row order; empty when every
            row comes from ``source``.
    """

    source: str
    first_row: int
    episodes: np.ndarray
    features: dict[str, dict[str, StatColumn]]
    where_kind: str = "row"
    spans: tuple[tuple[int, str], ...] = ()

    def where(self, i: int) -> str:
        return f"episode {int(self.episodes[i])}"

    def source_at(self, i: int) -> str:
        """The file (relative path) row ``i`` of the block was read from."""
        src = self.source
        for start, rel in self.spans:
            if start > i:
                break
            src = rel
        return src

    @property
    def nbytes(self) -> int:
        """Bytes held by the block's arrays."""
        return int(self.episodes.nbytes) + sum(int(c.values.nbytes) + int(c.ok.nbytes)
                                               for stats in self.features.values() for c in stats.values())


def _target_shape(feat: dict | None, shapes: list[tuple[int, ...]]) -> tuple[int, ...] | None:
    """The accepted shape most rows use (None when no row has an accepted one)."""
    accepted = accepted_shapes(feat) if feat is not None else []
    counts: dict[tuple[int, ...], int] = {}
    for s in shapes:
        if s is not None and (not accepted or s in accepted):
            counts[s] = counts.get(s, 0) + 1
    if not counts:
        return None
    return max(counts, key=lambda s: counts[s])


def _count_column(arr: np.ndarray) -> StatColumn:
    """The ``count`` column of a block from its rectangular ``(k, *shape)`` numbers: a row is ``ok`` when its
    shape is ``(1,)`` and it holds a whole number below 2**63; other rows hold 0 and say why in ``shapes``."""
    k = len(arr)
    if arr.shape[1:] != (1,):
        return StatColumn(np.zeros((k, 1), dtype=np.int64), np.zeros(k, dtype=bool),
                          {i: arr.shape[1:] for i in range(k)})
    good = whole_counts(arr[:, 0])
    return StatColumn(np.where(good[:, None], arr, 0).astype(np.int64), good,
                      {int(i): "unreadable" for i in np.flatnonzero(~good)})


def column_from_values(values: list[Any], stat: str, feat: dict | None) -> StatColumn:
    """A :class:`StatColumn` from per-row Python values (lists / None); rectangular fast path via numpy."""
    k = len(values)
    dtype = np.int64 if stat == "count" else np.float64
    try:
        raw = np.asarray(values) if all(v is not None for v in values) else None
    except (TypeError, ValueError):
        raw = None
    # numbers only (text, or None inside a row: row by row, see to_array)
    arr = raw.astype(np.float64, copy=False) if raw is not None and raw.dtype.kind in "biuf" else None
    if arr is not None and arr.ndim >= 2 and (
            not accepted_shapes(feat or {}) or stat == "count" or arr.shape[1:] in accepted_shapes(feat or {})):
        if stat == "count":
            return _count_column(arr)
        return StatColumn(arr, np.ones(k, dtype=bool), {})
    per_row = [to_array(v, stat) if v is not None else None for v in values]
    row_shapes = [None if a is None else a.shape for a in per_row]
    target = (1,) if stat == "count" else _target_shape(feat, row_shapes)
    if target is None:
        target = next((s for s in row_shapes if s is not None), (1,))
    out = np.full((k, *target), 0 if stat == "count" else np.nan, dtype=dtype)
    ok = np.zeros(k, dtype=bool)
    shapes = {}
    for i, (a, v) in enumerate(zip(per_row, values)):
        if a is not None and a.shape == target:
            out[i] = a
            ok[i] = True
        else:
            shapes[i] = None if v is None else ("unreadable" if a is None else a.shape)
    return StatColumn(out, ok, shapes)


def arrow_column(col, stat: str, feat: dict | None) -> StatColumn:
    """A :class:`StatColumn` from an Arrow column of (nested) lists: zero-copy reshape when every row has the
    same nested lengths, else the per-row path."""
    import pyarrow as pa

    k = len(col)
    arr = col.combine_chunks() if hasattr(col, "combine_chunks") else col
    dims: list[int] = []
    cur = arr
    fast = cur.null_count == 0
    while fast and (pa.types.is_list(cur.type) or pa.types.is_large_list(cur.type) or pa.types.is_fixed_size_list(cur.type)):
        # the child values this array's rows cover (``.values`` ignores the array's own offset); not
        # ``flatten()``, which imports pyarrow.compute (~50 ms) in a default validate that needs nothing else of it
        if pa.types.is_fixed_size_list(cur.type):
            n = cur.type.list_size
        else:
            lengths = list_lengths(cur)
            if len(lengths) == 0 or lengths.min() != lengths.max():
                fast = False
                break
            n = int(lengths[0])
        child = list_values(cur)
        dims.append(n)
        cur = child
        fast = cur.null_count == 0
    if fast and (pa.types.is_floating(cur.type) or pa.types.is_integer(cur.type)) and dims:
        shape = tuple(dims)
        accepted = accepted_shapes(feat or {})
        if stat == "count" or not accepted or shape in accepted:
            flat = numpy_values(cur)
            if len(flat) == k * int(np.prod(shape)):
                vals = flat.reshape((k, *shape))
                if stat == "count":
                    return _count_column(vals)
                return StatColumn(vals.astype(np.float64), np.ones(k, dtype=bool), {})
    return column_from_values(arr.to_pylist(), stat, feat)


def _split_stats_column(name: str) -> tuple[str, str] | None:
    feature, _, stat = name[len("stats/"):].rpartition("/")
    return (feature, stat) if feature else None


class StatsBlocks:
    """Per-episode statistics as :class:`StatsBlock` arrays: streamed in file order (:meth:`__iter__`) and looked
    up again for a set of episodes (:meth:`lookup`, after one full iteration).

    v3.0 reads :data:`BLOCK_ROWS` episodes' row groups at a time (files kept open), gathering the row groups of
    consecutive small files with the same statistics columns into one block. A small file's statistics columns
    come from the episode metadata read when it kept them (:mod:`lerobot_tools.dataset.episode_tables`); the
    other small files are opened and read :data:`OPEN_THREADS` at a time ahead of the stream. With ``keep=True`` the first
    blocks read are kept while they total at most :data:`KEEP_BYTES`; otherwise (and beyond that) only the last
    two are: ``--deep`` looks the statistics up twice after the stream (quantile thresholds before a data file is
    scanned, the comparison after it), and reading a block of lerobot's small row groups again costs as much as the
    first time (on 14,000 episodes, ~20 ms a block). A file whose blocks are all kept is closed after the stream.
    v2.1 parses :data:`BLOCK_LINES` lines at a time and remembers each episode's byte offset.
    """

    BLOCK_LINES = 512
    BLOCK_ROWS = 512
    #: bytes of parsed v3.0 blocks kept for the lookups after the stream (beyond it, blocks are read again)
    KEEP_BYTES = 48 * 2**20

    def __init__(self, ds: Dataset, *, keep: bool = False):
        self.ds = ds
        self.keep_bytes = self.KEEP_BYTES if keep else 0
        self.feats = ds.features
        self.kind: str | None = None
        if ds.layout == "v3":
            self.kind = "parquet" if ds.episode_files else None
        elif ds.layout == "v2" and (ds.root / V2_EPISODES_STATS_PATH).is_file():
            self.kind = "jsonl"
        self.problems: list[tuple[str, str]] = []
        self._files: dict[str, Any] = {}
        self._where: dict[int, tuple] = {}  # episode -> (block, row in block) | (file, jsonl offset, line)
        self._plan: list[list[tuple[str, int]]] = []  # block -> its (file, chunk) pieces
        self._cache: dict[int, StatsBlock] = {}
        self._kept: dict[int, StatsBlock] = {}
        self._kept_bytes = 0
        self._ranges: dict[str, list[tuple[int, int]]] = {}

    # ------------------------------------------------------------------ streaming
    def __iter__(self) -> Iterator[StatsBlock]:
        if self.kind == "parquet":
            yield from self._iter_parquet()
        elif self.kind == "jsonl":
            yield from self._iter_jsonl()

    def _pf(self, rel: str):
        import pyarrow.parquet as pq

        pf = self._files.get(rel)
        if pf is None:
            pf = self._files[rel] = pq.ParquetFile(self.ds.root / rel, pre_buffer=False)
        return pf

    def _open_ahead(self, rel: str):
        """Open one episodes file of at most :data:`OPEN_AHEAD_BYTES` ahead of the stream, in a pool thread
        (pyarrow parses footers and decodes without the GIL).

        Returns:
            ``(ParquetFile or None, Arrow schema, table or None, chunk ranges)``. A file read in one chunk
            (:meth:`_chunks`) comes with the table of its ``episode_index`` and ``stats/...`` columns (None when it
            has no ``episode_index``) and without its ParquetFile; it is taken from what the episode metadata read
            kept (:attr:`Dataset.stats_tables`) when it can. A file of several chunks comes open, without a table.
            None for a larger file: the stream opens it itself, so that no more than one large footer is parsed at
            once. The exception pyarrow raised, returned, not raised.
        """
        import pyarrow.parquet as pq

        path = self.ds.root / rel
        try:
            kept = self.ds.stats_tables.take(rel, path)
            if kept is not None:
                table, group_rows = kept
                ranges = self._ranges_of(group_rows)
                if len(ranges) == 1:
                    return None, table.schema, table, ranges
            if path.stat().st_size > OPEN_AHEAD_BYTES:
                return None
            pf = pq.ParquetFile(path, pre_buffer=False)
            md = pf.metadata
            ranges = self._ranges_of(row_group_rows(md))
            schema = pf.schema_arrow  # pyarrow converts it anew on every access
            if len(ranges) > 1:
                return pf, schema, None, ranges  # read chunk by chunk by the stream
            if "episode_index" not in schema.names:
                return None, schema, None, ranges
            cols = [n for n in schema.names if n.startswith("stats/")]
            table = pf.read_row_groups(list(range(md.num_row_groups)), columns=["episode_index", *cols],
                                       use_threads=False)
            return None, schema, table, ranges
        except Exception as exc:
            return exc

    def _chunks(self, rel: str) -> list[tuple[int, int]]:
        """Row-group ranges ``[first, last)`` of a file read together: at least :data:`BLOCK_ROWS` episodes each
        (lerobot writes a row group per 10 episodes; reading them one by one costs a footer walk each)."""
        ranges = self._ranges.get(rel)
        if ranges is None:
            md = self._pf(rel).metadata
            ranges = self._ranges_of(row_group_rows(md))
            self._ranges[rel] = ranges
        return ranges

    def _ranges_of(self, group_rows: list[int]) -> list[tuple[int, int]]:
        """:meth:`_chunks` of a file whose row groups hold ``group_rows`` rows."""
        ranges, start, rows = [], 0, 0
        for rg, n in enumerate(group_rows):
            rows += n
            if rows >= self.BLOCK_ROWS:
                ranges.append((start, rg + 1))
                start, rows = rg + 1, 0
        if start < len(group_rows):
            ranges.append((start, len(group_rows)))
        return ranges

    def _read_piece(self, rel: str, chunk: int, cols: list[str] | None = None) -> tuple[Any, int]:
        """The ``episode_index`` and ``stats/...`` columns (``cols``, else all of the file's) of one chunk of row
        groups (an Arrow table) and the file row of its first episode."""
        pf = self._pf(rel)
        first, last = self._chunks(rel)[chunk]
        if cols is None:
            cols = [n for n in pf.schema_arrow.names if n.startswith("stats/")]
        table = pf.read_row_groups(list(range(first, last)), columns=["episode_index", *cols])
        return table, sum(pf.metadata.row_group(i).num_rows for i in range(first))

    def _build(self, pieces: list[tuple[str, int]], tables: list[Any], first_row: int) -> StatsBlock:
        """One block from the tables of ``pieces`` ((file, chunk) pairs, all with the same columns and types, at
        least one); ``first_row``: the row of the first piece's first episode in its file."""
        import pyarrow as pa

        # one table over every piece's chunks, no copy (the pieces' types are the same; their metadata and the
        # nullability of a field may differ between files written by different versions)
        whole = tables[0] if len(tables) == 1 else pa.concat_tables(tables, promote_options="default")
        eps = numpy_values(whole.column("episode_index")).astype(np.int64)
        features: dict[str, dict[str, StatColumn]] = {}
        for c in whole.column_names:
            split = _split_stats_column(c) if c.startswith("stats/") else None
            if split is None:
                continue
            feature, stat = split
            features.setdefault(feature, {})[stat] = arrow_column(whole.column(c), stat, self.feats.get(feature))
        spans: list[tuple[int, str]] = []
        start = 0
        for (rel, _), t in zip(pieces, tables):
            if not spans or spans[-1][1] != rel:
                spans.append((start, rel))
            start += t.num_rows
        return StatsBlock(pieces[0][0], first_row, eps, features, spans=tuple(spans) if len(spans) > 1 else ())

    def _block(self, bid: int) -> StatsBlock:
        """Block ``bid`` of the stream, from memory or read again."""
        block = self._kept.get(bid) or self._cache.get(bid)
        if block is not None:
            return block
        pieces = self._plan[bid]
        read = [self._read_piece(rel, chunk) for rel, chunk in pieces]
        return self._hold(bid, self._build(pieces, [table for table, _ in read], read[0][1]))

    def _hold(self, bid: int, block: StatsBlock) -> StatsBlock:
        size = block.nbytes
        if self._kept_bytes + size <= self.keep_bytes:
            self._kept[bid] = block
            self._kept_bytes += size
            return block
        if len(self._cache) >= 2:
            self._cache.pop(next(iter(self._cache)))
        self._cache[bid] = block
        return block

    def _iter_parquet(self) -> Iterator[StatsBlock]:
        # chunks of at least BLOCK_ROWS episodes; the chunks of small consecutive files with the same statistics
        # columns are gathered into one block (converting a column costs the same for 3 rows as for 500)
        pieces: list[tuple[str, int]] = []
        tables: list[Any] = []
        first_row = 0
        key = None
        rows = 0
        key_schema = schema_key = None  # the last schema seen and its statistics columns

        def flush() -> Iterator[StatsBlock]:
            nonlocal pieces, tables, rows
            if not pieces:
                return
            bid = len(self._plan)
            self._plan.append(pieces)
            block = self._hold(bid, self._build(pieces, tables, first_row))
            for i, e in enumerate(block.episodes.tolist()):
                self._where.setdefault(e, (bid, i))
            pieces, tables, rows = [], [], 0
            yield block

        opened = thread_map(self._open_ahead, self.ds.episode_files, threads=OPEN_THREADS)
        try:
            for rel in self.ds.episode_files:
                got = next(opened)
                try:
                    if isinstance(got, Exception):
                        raise got
                    first = None
                    if got is None:  # a large file: opened here, and read one chunk at a time
                        schema = self._pf(rel).schema_arrow
                    else:
                        pf, schema, first, ranges = got
                        self._ranges[rel] = ranges
                        if pf is not None:
                            self._files[rel] = pf
                    if "episode_index" not in schema.names:
                        continue  # C007 reports it
                    if key_schema is None or not schema.equals(key_schema):  # most files share one schema
                        key_schema = schema
                        schema_key = tuple((n, str(t)) for n, t in zip(schema.names, schema.types)
                                           if n == "episode_index" or n.startswith("stats/"))
                    this_key = schema_key
                    cols = [n for n, _ in this_key if n != "episode_index"]
                    n_chunks = len(self._chunks(rel))
                    for chunk in range(n_chunks):
                        table, row0 = (first, 0) if chunk == 0 and first is not None else \
                            self._read_piece(rel, chunk, cols)
                        if table.num_rows == 0:  # a file of 0 rows: nothing to check (C007 reports it)
                            continue
                        if pieces and (this_key != key or rows >= self.BLOCK_ROWS):
                            yield from flush()
                        if not pieces:
                            first_row = row0
                        key = this_key
                        pieces.append((rel, chunk))
                        tables.append(table)
                        rows += table.num_rows
                    if n_chunks == 1:
                        # a file read in one piece is opened again by a lookup (cheaper than holding hundreds of
                        # parsed footers); a larger one stays open until its blocks are all kept
                        self._files.pop(rel, None)
                except Exception as exc:  # pyarrow: a corrupt file; C007 reports unreadable metadata
                    self.problems.append((rel, f"stats columns cannot be read ({one_line(exc, 160)})"))
        finally:
            opened.close()  # joins the pool's threads, also when the caller stops iterating early
        yield from flush()
        # a file no block needs to read again is let go: its footer (over 100 MB parsed for 14,000 episodes in
        # lerobot's row groups of 10) is not needed once every block it holds is kept
        needed = {rel for bid, plan in enumerate(self._plan) if bid not in self._kept for rel, _ in plan}
        for rel in [rel for rel in self._files if rel not in needed]:
            self._files.pop(rel)

    def _lines_block(self, items: list[tuple[int, int, dict]]) -> StatsBlock:
        """``items``: (line number, episode, stats object) -> a block."""
        names: dict[str, set[str]] = {}
        for _, _, stats in items:
            for f, entry in stats.items():
                if isinstance(entry, dict):
                    names.setdefault(f, set()).update(entry)
                else:
                    names.setdefault(f, set())
        features: dict[str, dict[str, StatColumn]] = {}
        for f, stats_names in names.items():
            features[f] = {}
            # rows whose entry is there but not an object: every statistic of the row says so (G004, not absent)
            odd = [i for i, (_, _, stats) in enumerate(items) if f in stats and not isinstance(stats[f], dict)]
            for s in sorted(stats_names or BASE_STATS):
                vals = [(stats.get(f) or {}).get(s) if isinstance(stats.get(f), dict) else None for _, _, stats in items]
                col = column_from_values(vals, s, self.feats.get(f))
                for i in odd:
                    col.shapes[i] = NOT_AN_OBJECT
                features[f][s] = col
        return StatsBlock(V2_EPISODES_STATS_PATH, items[0][0] if items else 0,
                          np.asarray([e for _, e, _ in items], dtype=np.int64), features, where_kind="line")

    def _iter_jsonl(self) -> Iterator[StatsBlock]:
        rel = V2_EPISODES_STATS_PATH
        parser = EpisodeStatsReader(self.ds)
        items: list[tuple[int, int, dict]] = []
        for offset, lineno, line in stats_jsonl_lines(self.ds.root, self.problems):
            row = parser._parse_line(line, lineno)
            if row is None:
                continue
            self._where.setdefault(row.episode_index, (rel, offset, lineno))
            items.append((lineno, row.episode_index, row.stats))
            if len(items) >= self.BLOCK_LINES:
                yield self._lines_block(items)
                items = []
        self.problems.extend(parser.problems)
        if items:
            yield self._lines_block(items)

    def keep_quantiles_of(self, episodes: set[int]) -> None:
        """Free the stored quantiles of the kept blocks' rows except those of ``episodes``; the other rows then
        read as having no quantiles (``ok`` False).

        ``--deep`` verifies quantiles on sampled episodes only (:class:`~.deep.StatsComparison`), and the kept
        blocks stay alive through the scan of the data files, beside a data file's parsed footer. Five quantiles
        of ten statistics are half their bytes (16 MB of 32 MB on 14,000 episodes of two 14-value features).
        Blocks read again by :meth:`lookup` later hold every row.
        """
        want = np.fromiter(episodes, dtype=np.int64, count=len(episodes))
        for block in self._kept.values():
            hold = np.isin(block.episodes, want)
            rows = np.flatnonzero(hold)
            kept = {int(i): j for j, i in enumerate(rows.tolist())}  # the same for every column of the block
            for stats in block.features.values():
                for name, c in stats.items():
                    if name not in QUANTILES or c.kept is not None:
                        continue
                    stats[name] = StatColumn(np.ascontiguousarray(c.values[rows]), c.ok & hold,
                                             {i: v for i, v in c.shapes.items() if hold[i]}, kept)
        self._kept_bytes = sum(b.nbytes for b in self._kept.values())

    # ------------------------------------------------------------------ lookup
    def lookup(self, episodes: list[int]) -> dict[int, tuple[StatsBlock, int]]:
        """episode -> (block, row in block) for the episodes that have stored statistics (after iterating)."""
        out: dict[int, tuple[StatsBlock, int]] = {}
        if self.kind == "parquet":
            by_block: dict[int, list[tuple[int, int]]] = {}
            for e in episodes:
                loc = self._where.get(e)
                if loc is not None:
                    by_block.setdefault(loc[0], []).append((e, loc[1]))
            for bid, items in by_block.items():
                try:
                    block = self._block(bid)
                except Exception:
                    continue
                for e, i in items:
                    out[e] = (block, i)
        elif self.kind == "jsonl":
            parser = EpisodeStatsReader(self.ds)
            items = []
            try:
                with (self.ds.root / V2_EPISODES_STATS_PATH).open("rb") as fh:
                    for e in episodes:
                        loc = self._where.get(e)
                        if loc is None:
                            continue
                        fh.seek(loc[1])
                        row = parser._parse_line(fh.readline(MAX_JSONL_LINE_BYTES + 1), loc[2])
                        if row is not None:
                            items.append((loc[2], e, row.stats))
            except OSError:
                return out
            if items:
                block = self._lines_block(items)
                out = {e: (block, i) for i, (_, e, _) in enumerate(items)}
        return out

    def close(self) -> None:
        self._files.clear()
        self._cache.clear()
        self._kept.clear()
        self._kept_bytes = 0
