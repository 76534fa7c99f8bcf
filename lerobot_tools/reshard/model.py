"""Options, limits and results of :func:`lerobot_tools.reshard.reshard` (per file, per dataset, per run)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import IO, Any

from lerobot_tools.errors import LrtoolError


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
CODEC_NAMES = {
    "UNCOMPRESSED": "none",
    "SNAPPY": "snappy",
    "GZIP": "gzip",
    "BROTLI": "brotli",
    "LZ4": "lz4",
    "LZ4_RAW": "lz4",
    "ZSTD": "zstd",
}
DICT_ENCODINGS = {"PLAIN_DICTIONARY", "RLE_DICTIONARY"}


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
        lock_timeout: seconds to wait for another lrtool run writing the same dataset
            (:func:`lerobot_tools._lock.dataset_lock`); then that dataset fails with a one-line error.
    """

    row_group_mb: float = 32.0
    compression: str = "keep"
    dry_run: bool = False
    world_size: int | None = None
    verify: bool = True
    lock_timeout: float = 60.0

    def check(self) -> None:
        """Raise :class:`~lerobot_tools.errors.UsageError` for values that cannot work."""
        from lerobot_tools.errors import UsageError

        if not (self.row_group_mb > 0 and math.isfinite(self.row_group_mb)):
            raise UsageError(f"--row-group-mb must be a positive number, got {self.row_group_mb!r}")
        if self.compression not in COMPRESSIONS:
            raise UsageError(f"--compression must be one of {', '.join(COMPRESSIONS)}, got {self.compression!r}")
        if self.world_size is not None and self.world_size < 1:
            raise UsageError(f"--world-size must be >= 1, got {self.world_size!r}")
        if not (self.lock_timeout >= 0 and math.isfinite(self.lock_timeout)):
            raise UsageError(f"--lock-timeout must be a finite number >= 0, got {self.lock_timeout!r}")

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
            rewritten), ``"skipped"`` (a placeholder: Git LFS pointer, error page, empty file; see ``error``),
            ``"failed"`` (left untouched; see ``error``).
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

    # the command result protocol (lerobot_tools.exitcodes.CommandResult); the reporters live in .render
    @property
    def exit_status(self) -> int:
        """0 = every file resharded, conforming or planned; 1 = a file or a dataset failed."""
        from lerobot_tools.reshard.render import exit_status

        return exit_status(self)

    def to_dict(self) -> dict[str, Any]:
        """The JSON document (:func:`lerobot_tools.reshard.render.to_json`)."""
        from lerobot_tools.reshard.render import to_json

        return to_json(self)

    def render_text(self, out: IO[str], *, color: bool = False, verbose: bool = False) -> None:
        """The human report (:func:`lerobot_tools.reshard.render.render_text`; no colours; ``verbose``: one line per
        file)."""
        from lerobot_tools.reshard.render import render_text

        render_text(self, out, verbose=verbose)

    def error_lines(self) -> list[str]:
        """One line per failed dataset or file (:func:`lerobot_tools.reshard.render.errors`)."""
        from lerobot_tools.reshard.render import errors

        return list(errors(self))

    def summary(self) -> dict[str, Any]:
        """Counts and byte totals over the run."""
        files = self.files()
        by = {s: sum(1 for f in files if f.status == s)
              for s in ("resharded", "conforms", "planned", "skipped", "failed")}
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


class Oversize(Exception):
    """Written row groups exceed the limit; ``ratio`` = worst measured / estimated bytes."""

    def __init__(self, ratio: float, worst: int):
        super().__init__(f"row group of {worst} bytes above the limit")
        self.ratio = ratio
        self.worst = worst
