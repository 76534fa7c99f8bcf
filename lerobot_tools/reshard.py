"""Reshard data parquet: one episode per row group, bounded row groups, page index, nothing lost.

Library behind ``lrtool reshard``. For every data parquet file a dataset's metadata references
(:meth:`lerobot_tools.dataset.model.Dataset.data_files`), the footer says whether the file already
*conforms*: every row group holds exactly one episode (``episode_index`` statistics min == max), is at
most ``row_group_mb`` uncompressed (the footer's ``total_byte_size``, what validate's R002 measures) and
has a page index (column index + offset index on every column chunk). A file that does not is rewritten:

* rows are streamed record batch by record batch (``ParquetFile.iter_batches`` over a buffered,
  non-pre-buffered reader, decoded one or two batches ahead in a background thread), so memory is
  bounded by one output row group plus a few ~8 MB batches, never by the file or by an input row
  group, however large;
* row groups are cut where the ``episode_index`` *values* change (read from the column, not trusted
  from metadata); an episode larger than ``row_group_mb`` is split into consecutive row groups of
  equal row counts, each at most that size; small episodes still get their own row group;
* written with ``pq.ParquetWriter(..., write_page_index=True, write_statistics=True)``, the same Arrow
  schema and schema metadata (the ``huggingface`` key included), the source's codec per column
  (or ``zstd``/``snappy`` when asked), dictionary encoding where the source used it and a sample of
  the column shows it pays (at most 30 % distinct values; unique floats in small row groups would
  otherwise grow ~1.5x), rows in the same order, under the same file name, so v3.0 ``meta/episodes``
  (chunk/file indices,
  ``dataset_from_index``/``dataset_to_index``) and v2.1 layouts stay valid untouched;
* the new file goes to a temporary file in the same folder (:func:`lerobot_tools._io.atomic_path`),
  is fsynced and verified (row count, schema and key-value metadata, row-group layout, page index,
  and every column's content compared with the original batch by batch), then atomically replaces
  the original. A killed run leaves the original or the finished new file, plus at most a
  ``.lrtool-tmp-*`` file that the next run removes (:func:`lerobot_tools._io.clean_stale_temps`).

Sources: lerobot-format §6 (row order, file naming), §11 (the native writer emits one row group per
episode, snappy, dictionary, no page index; ``delete_episodes``/``split``/converter/pandas writers emit
one row group per file), pitfalls E2; datasets 5.2 ``packaged_modules/parquet`` and
``iterable_dataset.py`` for how shards are counted (see :class:`ShardCount`).

>>> from lerobot_tools.reshard import ReshardOptions, reshard
>>> run = reshard(["path/to/dataset"], ReshardOptions(row_group_mb=32))   # doctest: +SKIP
>>> [(f.relpath, f.status, f.row_groups_before, f.row_groups_after) for f in run.files()]   # doctest: +SKIP
"""

from __future__ import annotations

import contextlib
import errno as errno_mod
import json
import math
import os
import stat
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import IO, Any, Callable, Iterable, Iterator

from lerobot_tools import _io
from lerobot_tools.errors import DatasetError, LrtoolError

MB = 1024 * 1024
"""``--row-group-mb`` unit (MiB), the same as validate's R002."""

COMPRESSIONS = ("keep", "zstd", "snappy")
"""Accepted ``ReshardOptions.compression`` values: ``keep`` = the codec each column already uses."""

PLAN_MARGIN = 0.9
"""Episodes are split so that each planned row group is estimated at most this fraction of the limit
(the estimate is the source row groups' uncompressed bytes per row; dictionary encoding of small
groups can come out larger, see :data:`MAX_ATTEMPTS`)."""

MAX_ATTEMPTS = 3
"""A file whose written row groups still exceed the limit (the per-row estimate was off, typically
dictionary-encoded high-cardinality columns in small groups) is re-planned with the measured ratio
and rewritten, at most this many times in all."""

BATCH_BYTES = 8 * MB
"""Target uncompressed size of one record batch read from the source (bounds memory with the limit)."""

MAX_ROWS_PER_GROUP = 64 * 1024 * 1024
"""pyarrow's hard cap on ``row_group_size``."""

DICT_SAMPLE_VALUES = 65536
"""Leaf values sampled (from the file's first record batch) to decide dictionary encoding per column."""

DICT_MIN_SAMPLE = 1000
"""Below this many sampled values the source's dictionary setting is kept as is."""

DICT_DISTINCT_RATIO = 0.3
"""Dictionary encoding is kept for a column whose sample has at most this fraction of distinct values."""

PREFETCH = 2
"""Record batches decoded ahead in a background thread (memory: this many batches of ``BATCH_BYTES``)."""

READ_BUFFER = 1 * MB
"""``ParquetFile(buffer_size=...)``: stream column chunks instead of reading each one whole."""

# Footer codec names -> names pq.ParquetWriter accepts.
_CODEC_NAMES = {
    "UNCOMPRESSED": "none",
    "SNAPPY": "snappy",
    "GZIP": "gzip",
    "BROTLI": "brotli",
    "LZ4": "lz4",
    "LZ4_RAW": "lz4",
    "ZSTD": "zstd",
}
_DICT_ENCODINGS = {"PLAIN_DICTIONARY", "RLE_DICTIONARY"}


# ----------------------------------------------------------------------------------------------
# Options and results
# ----------------------------------------------------------------------------------------------


@dataclass
class ReshardOptions:
    """What :func:`reshard` does.

    Attributes:
        row_group_mb: row-group size limit in MiB of uncompressed data (footer ``total_byte_size``);
            episodes above it are split. Must be > 0.
        compression: ``"keep"`` (each column keeps its codec), ``"zstd"`` or ``"snappy"``. A file
            whose codec differs from a requested one does not conform and is rewritten.
        dry_run: plan and report, write nothing (stale temporary files are listed, not removed).
        world_size: report whether the resulting shard count divides across this many ranks.
        verify: compare the new file with the original before replacing it (always on in the CLI).
    """

    row_group_mb: float = 32.0
    compression: str = "keep"
    dry_run: bool = False
    world_size: int | None = None
    verify: bool = True

    def check(self) -> None:
        """Raise :class:`~lerobot_tools.errors.UsageError` for values that cannot work."""
        from lerobot_tools.errors import UsageError

        if not (self.row_group_mb > 0 and math.isfinite(self.row_group_mb)):
            raise UsageError(f"--row-group-mb must be a positive number, got {self.row_group_mb!r}")
        if self.compression not in COMPRESSIONS:
            raise UsageError(f"--compression must be one of {', '.join(COMPRESSIONS)}, got {self.compression!r}")
        if self.world_size is not None and self.world_size < 1:
            raise UsageError(f"--world-size must be >= 1, got {self.world_size!r}")

    @property
    def limit_bytes(self) -> int:
        """The limit in bytes (``row_group_mb * 2**20``)."""
        return int(self.row_group_mb * MB)


@dataclass
class PlannedGroup:
    """One row group of the new layout: ``num_rows`` rows of episode ``episode_index`` starting at
    row ``start`` of the file (0-based), estimated ``est_bytes`` uncompressed."""

    episode_index: int
    start: int
    num_rows: int
    est_bytes: int


@dataclass
class FileResult:
    """Outcome for one data parquet file.

    Attributes:
        dataset: the TARGET (spec) the file belongs to.
        relpath: path relative to the dataset root (``data/chunk-000/file-000.parquet``).
        status: ``"resharded"`` (rewritten, verified, replaced), ``"conforms"`` (already episode
            aligned, within the limit, page-indexed: skipped), ``"planned"`` (``--dry-run``: would be
            rewritten), ``"failed"`` (left untouched; see ``error``).
        reasons: why the file does not conform (empty when it does).
        rows: rows in the file (None when unreadable).
        episodes: distinct episodes found in the ``episode_index`` column (None when not read).
        row_groups_before, row_groups_after: row-group counts (after = planned on a dry run, = before
            for a conforming file, None for a failed one, which is unchanged).
        bytes_before, bytes_after: file sizes in bytes (after: None for a failed or planned file).
        seconds: wall time spent on the file.
        compression_before, compression_after: codec of the first column chunk (``SNAPPY``...).
        error: one-line reason for ``"failed"``.
        notes: remarks (symlink replaced, rewritten again to meet the limit, episodes not in metadata ...).
        layout: the planned/new layout as ``[[episode_index, num_rows], ...]`` (dry run and rewrites).
    """

    dataset: str
    relpath: str
    status: str = "failed"
    reasons: list[str] = field(default_factory=list)
    rows: int | None = None
    episodes: int | None = None
    row_groups_before: int | None = None
    row_groups_after: int | None = None
    bytes_before: int | None = None
    bytes_after: int | None = None
    seconds: float = 0.0
    compression_before: str | None = None
    compression_after: str | None = None
    error: str | None = None
    notes: list[str] = field(default_factory=list)
    layout: list[list[int]] | None = None


@dataclass
class ShardCount:
    """Whether a dataset's shards divide across ``world_size`` ranks.

    How ``datasets`` 5.2 counts shards of a parquet-backed ``IterableDataset``
    (``load_dataset("parquet", data_files=..., streaming=True)``): ``Parquet._split_generators``
    gives one shard per **file** (``num_shards == len(files)``); ``IterableDataset.reshard()``
    splits them into one shard per **row group** (``Parquet._generate_more_gen_kwargs``).
    ``split_dataset_by_node(strategy="auto")`` uses the ``"shards"`` strategy only when
    ``num_shards % world_size == 0``; otherwise every rank iterates over every shard and keeps
    1 example out of ``world_size`` (``StepExamplesIterable``).

    Attributes:
        world_size: ranks (None = not asked).
        files: data parquet files of the dataset (the default shard unit).
        row_groups: their row groups after the run (the shard unit after ``IterableDataset.reshard()``).
        unknown: files whose row groups could not be counted (unreadable); not in ``row_groups``.
    """

    world_size: int | None
    files: int
    row_groups: int
    unknown: int = 0

    @property
    def files_divide(self) -> bool | None:
        return None if not self.world_size else self.files % self.world_size == 0

    @property
    def row_groups_divide(self) -> bool | None:
        return None if not self.world_size else self.row_groups % self.world_size == 0

    @property
    def even(self) -> bool | None:
        """True when ``split_dataset_by_node`` can shard without every rank reading everything
        (files divide, or row groups divide and the caller uses ``IterableDataset.reshard()``)."""
        return None if not self.world_size else bool(self.files_divide or self.row_groups_divide)

    def message(self) -> str:
        """One line for the report."""
        ws = self.world_size
        base = f"{self.files} file(s), {self.row_groups} row group(s)"
        if self.unknown:
            base += f" (+ those of {self.unknown} unreadable file(s))"
        if not ws:
            return base
        if self.files_divide:
            return (f"{base}: the files divide across world size {ws} ({self.files // ws} per rank); "
                    "split_dataset_by_node shards by file")
        if self.row_groups_divide:
            return (f"{base}: the files do not divide across world size {ws}, the row groups do "
                    f"({self.row_groups // ws} per rank): call IterableDataset.reshard() (one shard per "
                    "row group) before split_dataset_by_node, or every rank reads every file")
        return (f"{base}: neither divides across world size {ws}: split_dataset_by_node falls back to "
                "every rank reading every shard and keeping 1 example in " + str(ws))


@dataclass
class DatasetResult:
    """Outcome for one TARGET.

    Attributes:
        target: what the user wrote.
        root: resolved dataset folder (None when unresolved).
        codebase_version: from ``info.json``.
        error: one-line reason the dataset could not be processed at all (None otherwise).
        files: per data file, in loader order.
        removed_temps: stale ``.lrtool-tmp-*`` files removed (or, on a dry run, found) below the root.
        shards: shard count after the run (planned on a dry run).
        notes: remarks (episode subset of a mixture ignored, hub snapshot cache...).
    """

    target: str
    root: str | None
    codebase_version: str | None = None
    error: str | None = None
    files: list[FileResult] = field(default_factory=list)
    removed_temps: list[str] = field(default_factory=list)
    shards: ShardCount | None = None
    notes: list[str] = field(default_factory=list)


@dataclass
class ReshardRun:
    """Everything one :func:`reshard` call did."""

    options: ReshardOptions
    datasets: list[DatasetResult] = field(default_factory=list)
    seconds: float = 0.0

    def files(self) -> list[FileResult]:
        """Every file result, dataset by dataset."""
        return [f for d in self.datasets for f in d.files]

    def summary(self) -> dict[str, Any]:
        """Counts and byte totals over the run."""
        files = self.files()
        by = {s: sum(1 for f in files if f.status == s) for s in ("resharded", "conforms", "planned", "failed")}
        return {
            "datasets": len(self.datasets),
            "datasets_failed": sum(1 for d in self.datasets if d.error),
            "files": len(files),
            **by,
            "bytes_before": sum(f.bytes_before or 0 for f in files),
            "bytes_after": sum((f.bytes_after if f.bytes_after is not None else f.bytes_before or 0) for f in files),
            "row_groups_before": sum(f.row_groups_before or 0 for f in files),
            "row_groups_after": sum((f.row_groups_after if f.row_groups_after is not None
                                     else f.row_groups_before or 0) for f in files),
            "seconds": round(self.seconds, 3),
        }


class VerifyError(LrtoolError):
    """The rewritten file differs from the original (the original is left untouched)."""


class _Oversize(Exception):
    """Written row groups exceed the limit; ``ratio`` = worst measured / estimated bytes."""

    def __init__(self, ratio: float, worst: int):
        super().__init__(f"row group of {worst} bytes above the limit")
        self.ratio = ratio
        self.worst = worst


# ----------------------------------------------------------------------------------------------
# Footer-level helpers
# ----------------------------------------------------------------------------------------------


def _open(path: Path):
    """A streaming ``ParquetFile``: buffered column-chunk reads, no pre-buffering of whole row groups."""
    import pyarrow.parquet as pq

    return pq.ParquetFile(path, pre_buffer=False, buffer_size=READ_BUFFER, memory_map=False)


class ReadError(DatasetError):
    """A data page of the source (or of the new file, while verifying) cannot be decoded."""


def _guarded(batches: Iterator, what: str) -> Iterator:
    """Re-raise any error of a record-batch iterator as a one-line :class:`ReadError`.

    pyarrow reports corrupt pages as ``OSError`` ("Couldn't deserialize thrift") or ``ArrowInvalid``;
    this keeps them apart from write errors (a full disk is also an ``OSError``).
    """
    while True:
        try:
            batch = next(batches)
        except StopIteration:
            return
        except Exception as exc:
            raise ReadError(f"cannot read {what} ({type(exc).__name__}: {_short(exc, 160)})") from None
        yield batch


class _Failure:
    def __init__(self, exc: BaseException):
        self.exc = exc


def _prefetched(items: Iterator, depth: int = PREFETCH) -> Iterator:
    """Iterate ``items`` in a background thread, ``depth`` items ahead (bounded memory).

    Decoding the next record batch (pyarrow releases the GIL) then overlaps with encoding and
    compressing the current one, or with decoding the other file while verifying. Errors are
    re-raised in the caller; closing the generator stops and joins the thread, so the file the
    items come from can be closed safely afterwards.
    """
    import queue
    import threading

    q: queue.Queue = queue.Queue(maxsize=depth)
    stop = threading.Event()
    done = object()

    def put(item) -> bool:
        while not stop.is_set():
            try:
                q.put(item, timeout=0.05)
                return True
            except queue.Full:
                continue
        return False

    def work() -> None:
        try:
            for item in items:
                if not put(item):
                    return
            put(done)
        except BaseException as exc:  # handed to the consumer
            put(_Failure(exc))

    thread = threading.Thread(target=work, name="lrtool-reshard-read", daemon=True)
    thread.start()
    try:
        while True:
            item = q.get()
            if item is done:
                return
            if isinstance(item, _Failure):
                raise item.exc
            yield item
    finally:
        stop.set()
        while thread.is_alive():
            try:
                q.get(timeout=0.05)
            except queue.Empty:
                pass
        thread.join()


def _short(exc: BaseException, limit: int = 200) -> str:
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _os_message(exc: OSError) -> str:
    """``No space left on device (errno 28)`` from an OSError raised by Python or pyarrow."""
    code = exc.errno
    if code is None:  # pyarrow: "[Errno 28] Error writing bytes to file. Detail: [errno 28] No space left on device"
        import re

        m = re.search(r"\[errno (\d+)\]", str(exc), re.IGNORECASE)
        code = int(m.group(1)) if m else None
    if code:
        return f"{os.strerror(code)} (errno {code}: {errno_mod.errorcode.get(code, '?')})"
    return _short(exc)


def file_conformance(footer, options: ReshardOptions) -> list[str]:
    """Why a file's footer does not conform (empty list = conforms).

    Args:
        footer: :class:`lerobot_tools.dataset.footers.FooterInfo`.
        options: the limit (``row_group_mb``) and the requested compression.

    Returns:
        One short reason per kind of defect, e.g. ``"1 of 1 row group(s) span several episodes"``,
        ``"2 row group(s) above 32 MB uncompressed"``, ``"no page index"``,
        ``"episode_index has no statistics"``, ``"compression SNAPPY, zstd requested"``.
    """
    reasons: list[str] = []
    groups = footer.row_groups
    n = len(groups)
    if "episode_index" not in footer.schema.names:
        return ["no episode_index column"]
    spans = sum(1 for rg in groups if (mm := rg.minmax.get("episode_index")) is not None and mm[0] != mm[1])
    no_stats = sum(1 for rg in groups if rg.num_rows and "episode_index" not in rg.minmax)
    if spans:
        reasons.append(f"{spans} of {n} row group(s) span several episodes")
    if no_stats:
        reasons.append(f"{no_stats} row group(s) without episode_index statistics")
    limit = options.limit_bytes
    over = [rg for rg in groups if rg.uncompressed_bytes > limit and rg.num_rows > 1]
    if over:
        reasons.append(f"{len(over)} row group(s) above {options.row_group_mb:g} MB uncompressed "
                       f"(largest {max(rg.uncompressed_bytes for rg in over) / MB:.1f} MB)")
    if any(not rg.page_index for rg in groups):
        reasons.append("no page index")
    if options.compression != "keep" and footer.compression and footer.compression.upper() != options.compression.upper():
        reasons.append(f"compression {footer.compression}, {options.compression} requested")
    return reasons


def _leaves(arr) -> list:
    """The leaf value arrays of an Arrow array, in parquet leaf-column order."""
    import pyarrow as pa
    import pyarrow.compute as pc

    t = arr.type
    if pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t):
        return _leaves(pc.list_flatten(arr))
    if pa.types.is_map(t):
        flat = pc.list_flatten(arr)
        return _leaves(flat.field(0)) + _leaves(flat.field(1))
    if pa.types.is_struct(t):
        return [leaf for child in arr.flatten() for leaf in _leaves(child)]
    return [arr]


def _dictionary_pays(values) -> bool:
    """Whether dictionary encoding is worth it for a sample of leaf values: distinct values at most
    :data:`DICT_DISTINCT_RATIO` of the sample (parquet-mr falls back to plain when the dictionary does not
    shrink the data; parquet-cpp never does, so unique floats in small row groups grow ~1.5x)."""
    import pyarrow.compute as pc

    n = len(values) - values.null_count
    if n < DICT_MIN_SAMPLE:
        return True
    return pc.count_distinct(values).as_py() <= DICT_DISTINCT_RATIO * n


def _writer_options(pf, options: ReshardOptions, sample=None) -> dict[str, Any]:
    """``pq.ParquetWriter`` keyword arguments: the source's codec per column (or the requested one),
    dictionary encoding where the source used it and a sample shows it pays, page index, statistics.

    Per-column settings are keyed by leaf column path (``observation.state.list.element``); the
    paths the new file will have are taken from an empty file written with the same schema, matched
    to the source's leaves by position.

    Raises:
        DatasetError: a column uses a codec pyarrow cannot write (``LZO``) and ``compression="keep"``.
    """
    import io

    import pyarrow as pa
    import pyarrow.parquet as pq

    md = pf.metadata
    schema = pf.schema_arrow
    buf = io.BytesIO()
    pq.write_table(pa.Table.from_batches([], schema=schema), buf)
    new_paths = [c.path for c in pq.ParquetFile(io.BytesIO(buf.getvalue())).metadata.schema]
    src = md.row_group(0) if md.num_row_groups else None
    leaves = None
    if sample is not None:
        leaves = [leaf.slice(0, DICT_SAMPLE_VALUES) for col in sample.columns for leaf in _leaves(col)]
        if len(leaves) != len(new_paths):
            leaves = None
    codecs: dict[str, str] = {}
    dictionary: list[str] = []
    for i, path in enumerate(new_paths):
        col = src.column(i) if src is not None and i < src.num_columns else None
        if options.compression == "keep":
            name = (col.compression if col is not None else "SNAPPY").upper()
            if name not in _CODEC_NAMES:
                raise DatasetError(f"column {path} uses codec {name}, which pyarrow cannot write; "
                                   "use --compression zstd or snappy")
            codecs[path] = _CODEC_NAMES[name]
        else:
            codecs[path] = options.compression
        used = col is None or bool(_DICT_ENCODINGS & set(col.encodings))
        if used and (leaves is None or _dictionary_pays(leaves[i])):
            dictionary.append(path)
    return {
        "compression": codecs,
        "use_dictionary": dictionary if dictionary else False,
        "write_statistics": True,
        "write_page_index": True,
    }


# ----------------------------------------------------------------------------------------------
# Planning
# ----------------------------------------------------------------------------------------------


def episode_runs(pf) -> list[tuple[int, int, int]]:
    """Maximal runs of equal ``episode_index`` values, in row order.

    Reads only the ``episode_index`` column, streamed (64 Ki rows at a time).

    Returns:
        ``[(episode_index, start_row, num_rows), ...]`` covering every row of the file.

    Raises:
        DatasetError: no ``episode_index`` column, null values, or a non-integer type.
    """
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    if "episode_index" not in pf.schema_arrow.names:
        raise DatasetError("no episode_index column: row groups cannot be aligned to episodes")
    runs: list[list[int]] = []
    pos = 0
    for batch in _guarded(pf.iter_batches(batch_size=65536, columns=["episode_index"], use_threads=False),
                          "the episode_index column"):
        col = batch.column(0)
        if pa.types.is_list(col.type) or pa.types.is_fixed_size_list(col.type) or pa.types.is_large_list(col.type):
            if col.null_count or pc.min(pc.list_value_length(col)).as_py() != 1 or pc.max(pc.list_value_length(col)).as_py() != 1:
                raise DatasetError("episode_index is a list column with other than one value per row")
            col = pc.list_flatten(col)
        if not pa.types.is_integer(col.type):
            raise DatasetError(f"episode_index has type {col.type}, not an integer")
        if col.null_count:
            raise DatasetError(f"episode_index has {col.null_count} null value(s) near row {pos}")
        a = col.to_numpy(zero_copy_only=False)
        if len(a) == 0:
            continue
        cuts = np.flatnonzero(a[1:] != a[:-1]) + 1
        starts = np.concatenate(([0], cuts))
        ends = np.concatenate((cuts, [len(a)]))
        for s, e in zip(starts.tolist(), ends.tolist()):
            v = int(a[s])
            if runs and runs[-1][0] == v and runs[-1][1] + runs[-1][2] == pos + s:
                runs[-1][2] += e - s
            else:
                runs.append([v, pos + s, e - s])
        pos += len(a)
    return [(r[0], r[1], r[2]) for r in runs]


def _bytes_per_row(footer) -> list[tuple[int, float]]:
    """``[(first_row, uncompressed bytes per row), ...]`` of each source row group."""
    out = []
    row = 0
    for rg in footer.row_groups:
        if rg.num_rows:
            out.append((row, rg.uncompressed_bytes / rg.num_rows))
        row += rg.num_rows
    return out


def _estimate(bpr: list[tuple[int, float]], start: int, n: int) -> float:
    """Estimated uncompressed bytes of rows ``[start, start+n)`` from the source row groups' bytes/row."""
    total = 0.0
    end = start + n
    for i, (first, per_row) in enumerate(bpr):
        last = bpr[i + 1][0] if i + 1 < len(bpr) else math.inf
        lo, hi = max(first, start), min(last, end)
        if hi > lo:
            total += (hi - lo) * per_row
    return total


def plan_groups(runs: list[tuple[int, int, int]], bpr: list[tuple[int, float]], limit_bytes: int,
                scale: float = 1.0) -> list[PlannedGroup]:
    """The new row-group layout: one group per episode run, runs above the limit split evenly.

    Args:
        runs: from :func:`episode_runs`.
        bpr: from :func:`_bytes_per_row` (source bytes per row, by row range).
        limit_bytes: the row-group size limit.
        scale: multiply the estimates by this (after a rewrite measured them too low).

    Returns:
        Consecutive :class:`PlannedGroup` covering every row in order; each is estimated at most
        ``PLAN_MARGIN * limit_bytes`` unless it is a single row.
    """
    target = max(1.0, PLAN_MARGIN * limit_bytes)
    out: list[PlannedGroup] = []
    for ep, start, n in runs:
        est = _estimate(bpr, start, n) * scale
        k = max(1, math.ceil(est / target), math.ceil(n / MAX_ROWS_PER_GROUP))
        k = min(k, n)
        base, extra = divmod(n, k)
        row = start
        for i in range(k):
            m = base + (1 if i < extra else 0)
            out.append(PlannedGroup(ep, row, m, int(round(_estimate(bpr, row, m) * scale))))
            row += m
    return out


# ----------------------------------------------------------------------------------------------
# Writing and verification
# ----------------------------------------------------------------------------------------------


def _batch_rows(footer) -> int:
    per_row = max((rg.uncompressed_bytes / rg.num_rows for rg in footer.row_groups if rg.num_rows), default=1.0)
    return int(max(1, min(65536, BATCH_BYTES // max(per_row, 1.0))))


def _write_layout(src: Path, tmp: Path, groups: list[PlannedGroup], writer_kwargs: dict, batch_rows: int,
                  progress: Callable[[int], None] | None, bytes_total: int) -> None:
    """Stream ``src`` into ``tmp``, one ``write_table`` call (= one row group) per planned group."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    with _open(src) as pf, pq.ParquetWriter(tmp, pf.schema_arrow, **writer_kwargs) as writer, \
            contextlib.closing(_prefetched(_guarded(pf.iter_batches(batch_size=batch_rows, use_threads=True),
                                         "the data pages"))) as batches:
        schema = pf.schema_arrow
        num_rows = pf.metadata.num_rows
        gi = 0
        need = groups[0].num_rows if groups else 0
        pieces: list = []
        for batch in batches:
            off = 0
            while off < batch.num_rows:
                if gi >= len(groups):
                    raise DatasetError("file has more rows than its row groups declared while it was read")
                take = min(need, batch.num_rows - off)
                pieces.append(batch.slice(off, take))
                off += take
                need -= take
                if need == 0:
                    table = pa.Table.from_batches(pieces, schema=schema)
                    writer.write_table(table, row_group_size=max(1, table.num_rows))
                    if progress is not None and num_rows:
                        progress(int(bytes_total * table.num_rows / num_rows))
                    pieces = []
                    gi += 1
                    need = groups[gi].num_rows if gi < len(groups) else 0
        if gi != len(groups):
            raise DatasetError("file has fewer rows than its footer declares")


def _arrays_equal(a, b) -> bool:
    """Content equality of two Arrow arrays of the same length, NaN == NaN (any payload)."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    if a.type != b.type or len(a) != len(b):
        return False
    if a.equals(b):
        return True
    t = a.type
    if a.null_count != b.null_count or not a.is_null().equals(b.is_null()):
        return False
    if pa.types.is_floating(t):
        x = a.fill_null(0).to_numpy(zero_copy_only=False)
        y = b.fill_null(0).to_numpy(zero_copy_only=False)
        return bool(np.array_equal(x, y, equal_nan=True))
    if (pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t)
            or getattr(pa.types, "is_list_view", lambda _: False)(t)):
        if not pc.list_value_length(a).fill_null(-1).equals(pc.list_value_length(b).fill_null(-1)):
            return False
        return _arrays_equal(pc.list_flatten(a), pc.list_flatten(b))
    if pa.types.is_struct(t):
        return all(_arrays_equal(x, y) for x, y in zip(a.flatten(), b.flatten()))
    return False  # strings, integers, binaries...: Arrow equality is exact


def _compare_content(original: Path, new: Path, batch_rows: int) -> int:
    """Compare every column of two parquet files row by row, streaming; return the row count.

    Raises:
        VerifyError: a value, a column or the row count differs.
    """
    with _open(original) as pa_orig, _open(new) as pa_new, \
            contextlib.closing(_prefetched(_guarded(pa_orig.iter_batches(batch_size=batch_rows, use_threads=True),
                                         "the data pages"))) as it_a, \
            contextlib.closing(_prefetched(_guarded(pa_new.iter_batches(batch_size=batch_rows, use_threads=True),
                                         "the new file back (verification failed)"))) as it_b:
        names = pa_orig.schema_arrow.names
        a = b = None
        pos = 0
        while True:
            while a is None or a.num_rows == 0:
                a = next(it_a, None)
                if a is None:
                    break
            while b is None or b.num_rows == 0:
                b = next(it_b, None)
                if b is None:
                    break
            if a is None or b is None:
                break
            n = min(a.num_rows, b.num_rows)
            for i, name in enumerate(names):
                if not _arrays_equal(a.column(i).slice(0, n), b.column(i).slice(0, n)):
                    raise VerifyError(f"verification failed: column {name} differs in rows {pos}-{pos + n - 1}")
            a = a.slice(n)
            b = b.slice(n)
            pos += n
        if a is not None or b is not None:
            raise VerifyError(f"verification failed: the files differ in row count after {pos} rows")
        return pos


def verify_rewrite(original: Path, new: Path, groups: list[PlannedGroup], options: ReshardOptions,
                   writer_kwargs: dict | None = None, batch_rows: int = 4096) -> None:
    """Check that ``new`` holds exactly ``original``'s rows in the planned row-group layout.

    Checks, in order: row count; Arrow schema including schema metadata (``huggingface``, ``pandas``)
    and every parquet key-value entry except ``ARROW:schema`` (re-serialised by the writer); one row
    group per planned group with the planned row count and ``episode_index`` statistics
    ``min == max == planned episode``; a page index on every column chunk; every group at most the
    limit (single-row groups excepted); the codec per column when ``writer_kwargs`` is given; then
    the content of every column, compared batch by batch (bounded memory; NaN equals NaN).

    Raises:
        VerifyError: anything differs (message says what, one line).
        _Oversize: only the size limit was missed (the caller re-plans).
    """
    with _open(original) as po, _open(new) as pn:
        mo, mn = po.metadata, pn.metadata
        if mn.num_rows != mo.num_rows:
            raise VerifyError(f"verification failed: {mn.num_rows} rows written, {mo.num_rows} expected")
        if not pn.schema_arrow.equals(po.schema_arrow, check_metadata=True):
            raise VerifyError("verification failed: the Arrow schema or its metadata changed")
        kv_o = {k: v for k, v in (mo.metadata or {}).items() if k != b"ARROW:schema"}
        kv_n = {k: v for k, v in (mn.metadata or {}).items() if k != b"ARROW:schema"}
        if kv_o != kv_n:
            raise VerifyError("verification failed: the parquet key-value metadata changed")
        if mn.num_row_groups != len(groups):
            raise VerifyError(f"verification failed: {mn.num_row_groups} row groups written, {len(groups)} planned")
        leaf = next((i for i in range(mn.num_columns)
                     if mn.schema.column(i).path == "episode_index"
                     or mn.schema.column(i).path.startswith("episode_index.list.")), None)
        worst_ratio, worst = 0.0, 0
        codecs = (writer_kwargs or {}).get("compression")
        for j, g in enumerate(groups):
            rg = mn.row_group(j)
            if rg.num_rows != g.num_rows:
                raise VerifyError(f"verification failed: row group {j} has {rg.num_rows} rows, {g.num_rows} planned")
            for c in range(rg.num_columns):
                col = rg.column(c)
                if not (col.has_column_index and col.has_offset_index):
                    raise VerifyError(f"verification failed: row group {j} column {col.path_in_schema} has no page index")
                if isinstance(codecs, dict):
                    want = codecs.get(col.path_in_schema)
                    if want is not None and _CODEC_NAMES.get(col.compression.upper(), "?") != want:
                        raise VerifyError(f"verification failed: column {col.path_in_schema} written as "
                                          f"{col.compression}, {want} expected")
            if leaf is not None:
                st = rg.column(leaf).statistics
                if st is None or not st.has_min_max or st.min != st.max or int(st.min) != g.episode_index:
                    raise VerifyError(f"verification failed: row group {j} does not hold exactly episode {g.episode_index}")
            if rg.total_byte_size > options.limit_bytes and rg.num_rows > 1:
                ratio = rg.total_byte_size / max(1, g.est_bytes)
                if ratio > worst_ratio:
                    worst_ratio, worst = ratio, rg.total_byte_size
        if worst:
            raise _Oversize(worst_ratio, worst)
    _compare_content(original, new, batch_rows)


# ----------------------------------------------------------------------------------------------
# One file
# ----------------------------------------------------------------------------------------------


def _write_problem(path: Path) -> str | None:
    """A one-line reason ``path`` must not be replaced (read-only file or folder), else None.

    Permission *bits* are honoured even for root (who could override them): a file the user made
    read-only is not rewritten.
    """
    try:
        st = path.stat()
    except OSError as exc:
        return _os_message(exc)
    if not st.st_mode & (stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH):
        return "file is read-only (no write permission)"
    parent = path.parent
    try:
        pst = parent.stat()
        vfs = os.statvfs(parent)
    except OSError as exc:
        return _os_message(exc)
    if vfs.f_flag & os.ST_RDONLY:
        return "the file system is mounted read-only (Read-only file system); the file cannot be replaced"
    if not pst.st_mode & (stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH):
        return f"folder {parent.name}/ is read-only; the file cannot be replaced"
    if not os.access(parent, os.W_OK | os.X_OK):
        return f"no write permission on folder {parent.name}/; the file cannot be replaced"
    return None


def reshard_file(path: Path, relpath: str, options: ReshardOptions, *, dataset: str = "",
                 expected_episodes: Iterable[int] | None = None,
                 progress: Callable[[int], None] | None = None) -> FileResult:
    """Reshard one data parquet file in place (see the module docstring). Never raises for bad input.

    Args:
        path: the file.
        relpath: its path relative to the dataset root (used in messages).
        options: limit, compression, dry run.
        dataset: the TARGET it belongs to (copied into the result).
        expected_episodes: the episodes the metadata says the file holds; a difference is noted
            (never changed).
        progress: called with byte increments while the file is written (for a progress bar).

    Returns:
        A :class:`FileResult`; ``status == "failed"`` with a one-line ``error`` when the file is
        missing, not parquet, corrupt, read-only, the disk is full, or verification fails; the
        original is then untouched.
    """
    from lerobot_tools.dataset.footers import read_footer
    from lerobot_tools.sniff import sniff

    t0 = time.perf_counter()
    res = FileResult(dataset=dataset, relpath=relpath)
    try:
        s = sniff(path)
        if s.kind == "missing":
            raise DatasetError("data file is missing")
        if s.kind != "ok":
            raise DatasetError(f"not a parquet file: {s.detail}")
        res.bytes_before = s.size
        footer = read_footer(path, relpath)
        res.rows = footer.num_rows
        res.row_groups_before = len(footer.row_groups)
        res.compression_before = footer.compression
        reasons = file_conformance(footer, options)
        res.reasons = reasons
        if not reasons:
            res.status = "conforms"
            res.row_groups_after = res.row_groups_before
            res.bytes_after = res.bytes_before
            res.compression_after = res.compression_before
            return res
        if reasons == ["no episode_index column"]:
            raise DatasetError("no episode_index column: row groups cannot be aligned to episodes")
        problem = _write_problem(path)  # also on a dry run: say now what the real run would hit
        if problem:
            raise DatasetError(problem)
        if path.is_symlink():
            res.notes.append("was a symlink (hub cache blob): replaced by a regular file, the blob is left untouched")
        bpr = _bytes_per_row(footer)
        with _open(path) as pf:
            runs = episode_runs(pf)
            sample = next(_guarded(pf.iter_batches(batch_size=_batch_rows(footer), use_threads=True),
                                   "the data pages"), None)
            writer_kwargs = _writer_options(pf, options, sample)
            del sample
        found = {r[0] for r in runs}
        res.episodes = len(found)
        _note_episodes(res, runs, found, expected_episodes)
        groups = plan_groups(runs, bpr, options.limit_bytes)
        res.layout = [[g.episode_index, g.num_rows] for g in groups]
        if options.dry_run:
            res.status = "planned"
            res.row_groups_after = len(groups)
            res.compression_after = (res.compression_before if options.compression == "keep"
                                     else options.compression.upper())
            return res
        batch_rows = _batch_rows(footer)
        scale = 1.0
        for attempt in range(1, MAX_ATTEMPTS + 1):
            try:
                def check(tmp: Path, groups=groups) -> None:
                    if options.verify:
                        verify_rewrite(path, tmp, groups, options, writer_kwargs, batch_rows)

                with _io.atomic_path(path, verify=check) as tmp:
                    _write_layout(path, tmp, groups, writer_kwargs, batch_rows,
                                  progress if attempt == 1 else None, res.bytes_before or 0)
                break
            except _Oversize as over:
                if attempt == MAX_ATTEMPTS:
                    raise VerifyError(f"row groups still above {options.row_group_mb:g} MB after {attempt} "
                                      f"attempts (largest {over.worst / MB:.2f} MB)") from None
                scale *= over.ratio * 1.05
                groups = plan_groups(runs, bpr, options.limit_bytes, scale)
                res.notes.append(f"rewritten again: measured row groups were {over.ratio:.2f}x the estimate")
        res.layout = [[g.episode_index, g.num_rows] for g in groups]
        res.status = "resharded"
        res.row_groups_after = len(groups)
        res.bytes_after = path.stat().st_size
        after = read_footer(path, relpath)
        res.compression_after = after.compression
    except LrtoolError as exc:
        res.status = "failed"
        res.error = exc.message + ("; original left untouched" if res.reasons else "")
    except OSError as exc:  # creating, writing, fsyncing or renaming the temporary file
        res.status = "failed"
        res.error = f"cannot write the new file: {_os_message(exc)}; original left untouched"
    except Exception as exc:  # pyarrow refusing to write what it read: a bug worth reporting
        res.status = "failed"
        res.error = f"cannot rewrite ({type(exc).__name__}: {_short(exc)}); original left untouched"
    finally:
        res.seconds = round(time.perf_counter() - t0, 3)
    return res


def _note_episodes(res: FileResult, runs, found: set[int], expected: Iterable[int] | None) -> None:
    if len(runs) != len(found):
        from collections import Counter

        split = sorted(ep for ep, n in Counter(r[0] for r in runs).items() if n > 1)
        res.notes.append(f"episode(s) {_fmt(split)} appear in several separate row ranges "
                         "(each range gets its own row group; row order is kept)")
    if expected is None:
        return
    exp = set(int(e) for e in expected)
    extra, missing = sorted(found - exp), sorted(exp - found)
    if extra:
        res.notes.append(f"holds episode(s) not listed for it in the metadata: {_fmt(extra)}")
    if missing:
        res.notes.append(f"lacks episode(s) the metadata lists for it: {_fmt(missing)}")


def _fmt(eps: list[int], limit: int = 8) -> str:
    s = ", ".join(str(e) for e in eps[:limit])
    return s + (f" ... ({len(eps)} in all)" if len(eps) > limit else "")


# ----------------------------------------------------------------------------------------------
# Datasets and runs
# ----------------------------------------------------------------------------------------------


@dataclass
class _Work:
    index: int  # dataset position
    path: str
    relpath: str
    dataset: str
    expected: list[int]
    options: ReshardOptions
    size: int


def _run_work(w: _Work) -> FileResult:
    return reshard_file(Path(w.path), w.relpath, w.options, dataset=w.dataset, expected_episodes=w.expected)


def _prepare(target, options: ReshardOptions) -> tuple[DatasetResult, list[tuple[str, str, list[int]]]]:
    """Open one target; return its result shell and its data files ``(abs path, relpath, episodes)``."""
    from lerobot_tools.dataset.model import Dataset

    dres = DatasetResult(target=target.spec, root=str(target.root) if target.root else None)
    if target.error:
        dres.error = target.error
        return dres, []
    if target.episodes is not None or target.excluded_episodes is not None:
        dres.notes.append("the mixture's episode subset is ignored: whole data files are resharded")
    if target.origin == "hub-cache":
        dres.notes.append("hub snapshot cache: rewritten files replace their symlinks; the blobs are not modified")
    try:
        ds = Dataset(target.root)
        dres.codebase_version = ds.codebase_version
        if ds.layout is None:
            raise DatasetError(f"unknown codebase_version {ds.codebase_version!r}", "meta/info.json")
        data_files = ds.data_files()
        files = [(str(ds.path(df.relpath)), df.relpath, df.episodes) for df in data_files]
    except LrtoolError as exc:
        dres.error = str(exc)
        return dres, []
    if not files:
        dres.error = "the episode metadata references no data files"
    root = Path(target.root)
    if options.dry_run:
        dres.removed_temps = sorted(str(p.relative_to(root)) for p in _find_temps(root))
    else:
        dres.removed_temps = sorted(str(p.relative_to(root)) for p in _io.clean_stale_temps(root))
    return dres, files


def _find_temps(root: Path) -> list[Path]:
    out = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames if d != ".git"]
        out += [Path(dirpath, n) for n in filenames if n.startswith(_io.TMP_PREFIX)]
    return out


def reshard_resolved(targets: list, options: ReshardOptions | None = None, *, jobs: int = 1,
                     progress: bool | None = None) -> ReshardRun:
    """Reshard resolved targets (:func:`lerobot_tools.dataset.resolve_targets`).

    Each dataset's stale temporary files are removed first (listed only on a dry run); then every
    data file is processed by :func:`reshard_file`, in ``jobs`` worker processes (1 = this process,
    0 = one per CPU). A dataset listed twice (a mixture naming it twice) is processed once.

    Args:
        targets: resolved targets; unresolved ones are reported with their error.
        options: see :class:`ReshardOptions`.
        jobs: parallel files.
        progress: tqdm bar (bytes) on stderr; None = only on a terminal.

    Returns:
        A :class:`ReshardRun` (never raises for bad datasets or files; see ``error`` fields).
    """
    from tqdm import tqdm

    options = options or ReshardOptions()
    options.check()
    t0 = time.perf_counter()
    if jobs == 0:
        jobs = os.cpu_count() or 1
    run = ReshardRun(options=options)
    work: list[_Work] = []
    seen: dict[str, int] = {}
    for target in targets:
        key = str(Path(target.root).resolve()) if target.root else None
        if key is not None and key in seen:
            dres = DatasetResult(target=target.spec, root=str(target.root))
            dres.notes.append(f"same dataset as {run.datasets[seen[key]].target}: processed once")
            run.datasets.append(dres)
            continue
        dres, files = _prepare(target, options)
        if key is not None:
            seen[key] = len(run.datasets)
        run.datasets.append(dres)
        for p, rel, eps in files:
            try:
                size = os.path.getsize(p)
            except OSError:
                size = 0
            work.append(_Work(len(run.datasets) - 1, p, rel, target.spec, eps, options, size))

    show = progress if progress is not None else sys.stderr.isatty()
    bar = tqdm(total=sum(w.size for w in work), desc="reshard", unit="B", unit_scale=True,
               file=sys.stderr, disable=not show, leave=False)
    results: list[FileResult | None] = [None] * len(work)
    try:
        if jobs > 1 and len(work) > 1:
            import multiprocessing as mp
            from concurrent.futures import ProcessPoolExecutor, as_completed

            ctx = mp.get_context("fork") if hasattr(os, "fork") else None
            with ProcessPoolExecutor(max_workers=jobs, mp_context=ctx) as pool:
                futures = {pool.submit(_run_work, w): i for i, w in enumerate(work)}
                for fut in as_completed(futures):
                    i = futures[fut]
                    try:
                        results[i] = fut.result()
                    except Exception as exc:  # a worker died (OOM-killed...): report, keep going
                        w = work[i]
                        results[i] = FileResult(dataset=w.dataset, relpath=w.relpath,
                                                error=f"worker process failed ({type(exc).__name__}: {_short(exc)}); "
                                                      "original left untouched")
                    bar.update(work[i].size)
        else:
            for i, w in enumerate(work):
                done = 0

                def tick(n: int) -> None:
                    nonlocal done
                    done += n
                    bar.update(n)

                bar.set_postfix_str(w.relpath[-40:], refresh=False)
                results[i] = reshard_file(Path(w.path), w.relpath, options, dataset=w.dataset,
                                          expected_episodes=w.expected, progress=tick)
                bar.update(max(0, w.size - done))
    finally:
        bar.close()
    for w, r in zip(work, results):
        assert r is not None
        run.datasets[w.index].files.append(r)
    for d in run.datasets:
        if d.error or not d.files:
            continue
        counts = [f.row_groups_after if f.row_groups_after is not None else f.row_groups_before for f in d.files]
        d.shards = ShardCount(options.world_size, len(d.files), sum(c for c in counts if c is not None),
                              sum(1 for c in counts if c is None))
    run.seconds = time.perf_counter() - t0
    return run


def reshard(target_args: Iterable[str], options: ReshardOptions | None = None, *, jobs: int = 1,
            progress: bool | None = None) -> ReshardRun:
    """Resolve TARGET arguments (folders, repo ids in the local caches, mixture files) and reshard.

    Raises:
        UsageError: bad options, or a mixture file cannot be read or parsed.
    """
    from lerobot_tools.dataset.targets import resolve_targets

    options = options or ReshardOptions()
    options.check()
    return reshard_resolved(resolve_targets(list(target_args)), options, jobs=jobs, progress=progress)


# ----------------------------------------------------------------------------------------------
# Reporting
# ----------------------------------------------------------------------------------------------


def exit_status(run: ReshardRun) -> int:
    """0 = every file resharded, conforming or planned; 1 = a file or a dataset failed."""
    if any(d.error for d in run.datasets) or any(f.status == "failed" for f in run.files()):
        return 1
    return 0


def errors(run: ReshardRun) -> Iterator[str]:
    """One line per failure: ``<dataset>/<relpath>: <problem>`` or ``<dataset>: <problem>``."""
    for d in run.datasets:
        if d.error:
            yield f"{d.target}: {d.error}"
        for f in d.files:
            if f.status == "failed":
                yield f"{_join(d.root or d.target, f.relpath)}: {f.error}"


def _join(root: str, rel: str) -> str:
    return str(Path(root) / rel)


def render_text(run: ReshardRun, out: IO[str]) -> None:
    """Per dataset: one line per file (status, row groups before -> after, bytes, seconds, why), the
    shard count, then a summary line."""
    from lerobot_tools.sniff import human_size

    dry = run.options.dry_run
    for d in run.datasets:
        head = d.target + (f" ({d.codebase_version})" if d.codebase_version else "")
        out.write(head + "\n")
        if d.error:
            out.write(f"  failed: {d.error}\n")
        for note in d.notes:
            out.write(f"  note: {note}\n")
        if d.removed_temps:
            verb = "would remove" if dry else "removed"
            out.write(f"  {verb} {len(d.removed_temps)} stale temporary file(s) from an interrupted run: "
                      f"{', '.join(d.removed_temps[:3])}{' ...' if len(d.removed_temps) > 3 else ''}\n")
        for f in d.files:
            label = {"resharded": "resharded", "conforms": "conforms", "planned": "would reshard",
                     "failed": "FAILED"}[f.status]
            if f.status == "failed":
                out.write(f"  {label:<13} {f.relpath}: {f.error}\n")
                continue
            rg = (f"row groups {f.row_groups_before}" if f.status == "conforms"
                  else f"row groups {f.row_groups_before} -> {f.row_groups_after}")
            if f.status == "resharded":
                size = f"{human_size(f.bytes_before)} -> {human_size(f.bytes_after)}"
            else:
                size = human_size(f.bytes_before)
            tail = "already episode-aligned, skipped" if f.status == "conforms" else "; ".join(f.reasons)
            out.write(f"  {label:<13} {f.relpath}  {rg}  {size}  {f.seconds:.2f} s  ({tail})\n")
            for note in f.notes:
                out.write(f"                note: {note}\n")
        if d.shards is not None:
            pre = "planned shards" if dry else "shards"
            out.write(f"  {pre}: {d.shards.message()}\n")
        out.write("\n")
    s = run.summary()
    failed_ds = f"; {s['datasets_failed']} dataset(s) could not be processed" if s["datasets_failed"] else ""
    if dry:
        out.write(f"Dry run: {s['files']} file(s) in {s['datasets']} dataset(s): {s['planned']} would be resharded "
                  f"(row groups {s['row_groups_before']} -> {s['row_groups_after']}), {s['conforms']} already conform, "
                  f"{s['failed']} failed{failed_ds}; nothing written\n")
    else:
        out.write(f"Summary: {s['files']} file(s) in {s['datasets']} dataset(s): {s['resharded']} resharded, "
                  f"{s['conforms']} already conform, {s['failed']} failed{failed_ds}; row groups {s['row_groups_before']} -> "
                  f"{s['row_groups_after']}; {human_size(s['bytes_before'])} -> {human_size(s['bytes_after'])}; "
                  f"{s['seconds']:.1f} s\n")


def to_json(run: ReshardRun) -> dict[str, Any]:
    """The run as a JSON-able dict (``options``, ``datasets`` with ``files`` and ``shards``, ``summary``)."""
    datasets = []
    for d in run.datasets:
        dd = asdict(d)
        if d.shards is not None:
            dd["shards"] = {**asdict(d.shards), "files_divide": d.shards.files_divide,
                            "row_groups_divide": d.shards.row_groups_divide, "even": d.shards.even,
                            "message": d.shards.message()}
        datasets.append(dd)
    return {"options": asdict(run.options), "datasets": datasets, "summary": run.summary(),
            "exit_status": exit_status(run)}


def render_json(run: ReshardRun, out: IO[str]) -> None:
    """One JSON document (see :func:`to_json`)."""
    json.dump(to_json(run), out, indent=2)
    out.write("\n")
