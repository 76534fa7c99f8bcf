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

Sources: docs/format.md#data-files (row order, file naming), docs/format.md#row-groups (the native writer,
lerobot 0.4.4 ``LeRobotDataset._save_episode_data``, emits one row group per episode, snappy, dictionary, no page index;
``delete_episodes``/``split``/converter/pandas writers emit one row group per file),
docs/failure-modes.md#row-groups; datasets 5.2 ``packaged_modules/parquet`` and
``iterable_dataset.py`` for how shards are counted (see :class:`ShardCount`).

>>> from lerobot_tools.reshard import ReshardOptions, reshard
>>> run = reshard(["path/to/dataset"], ReshardOptions(row_group_mb=32))   # doctest: +SKIP
>>> [(f.relpath, f.status, f.row_groups_before, f.row_groups_after) for f in run.files()]   # doctest: +SKIP

Modules: :mod:`.model` (options, limits, results), :mod:`.read` (streaming reads, conformance),
:mod:`.plan` (row-group plan), :mod:`.write` and :mod:`.verify` (one file), :mod:`.run` (datasets, worker
processes), :mod:`.render` (exit status and reports).
"""

from lerobot_tools.reshard.model import (
    BATCH_BYTES,
    COMPRESSIONS,
    DICT_DISTINCT_RATIO,
    DICT_MIN_SAMPLE,
    DICT_SAMPLE_VALUES,
    DatasetResult,
    FileResult,
    MAX_ATTEMPTS,
    MAX_ROWS_PER_GROUP,
    MB,
    PLAN_MARGIN,
    PREFETCH,
    PlannedGroup,
    READ_BUFFER,
    ReshardOptions,
    ReshardRun,
    ShardCount,
    VerifyError,
)
from lerobot_tools.reshard.read import ReadError, file_conformance
from lerobot_tools.reshard.plan import episode_runs, plan_groups
from lerobot_tools.reshard.verify import verify_rewrite
from lerobot_tools.reshard.write import reshard_file
from lerobot_tools.reshard.run import reshard, reshard_resolved
from lerobot_tools.reshard.render import errors, exit_status, render_json, render_text, to_json

__all__ = [
    "BATCH_BYTES",
    "COMPRESSIONS",
    "DICT_DISTINCT_RATIO",
    "DICT_MIN_SAMPLE",
    "DICT_SAMPLE_VALUES",
    "DatasetResult",
    "FileResult",
    "MAX_ATTEMPTS",
    "MAX_ROWS_PER_GROUP",
    "MB",
    "PLAN_MARGIN",
    "PREFETCH",
    "PlannedGroup",
    "READ_BUFFER",
    "ReadError",
    "ReshardOptions",
    "ReshardRun",
    "ShardCount",
    "VerifyError",
    "episode_runs",
    "errors",
    "exit_status",
    "file_conformance",
    "plan_groups",
    "render_json",
    "render_text",
    "reshard",
    "reshard_file",
    "reshard_resolved",
    "to_json",
    "verify_rewrite",
]
