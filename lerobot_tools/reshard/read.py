"""Reading a data parquet file for resharding: buffered opening, guarded and prefetched record batches,
one-line read errors, footer conformance and the writer options that keep each column's encoding."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Iterator

from lerobot_tools._parallel import read_ahead
from lerobot_tools.errors import DatasetError, one_line
from lerobot_tools.reshard.model import (
    DICT_DISTINCT_RATIO,
    DICT_MIN_SAMPLE,
    DICT_SAMPLE_VALUES,
    MB,
    PREFETCH,
    READ_BUFFER,
    CODEC_NAMES,
    DICT_ENCODINGS,
    ReshardOptions,
)


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
            raise ReadError(f"cannot read {what} ({one_line(exc, 160, typed=True)})") from None
        yield batch


def decode_threads() -> bool:
    """``use_threads`` for verification's two streams of record batches: each is decoded in its own read-ahead
    thread beside the thread that compares, so pyarrow's own pool only pays where there are more than two cores;
    on two, its hand-offs cost more than they save (comparing two 1 GB files: 3.3-3.8 s of CPU without the pool,
    3.9-4.0 s with it). The write pass keeps the pool: there one stream is decoded while the main thread encodes."""
    import os

    return (os.cpu_count() or 1) > 2


def _prefetched(items: Iterator, depth: int = PREFETCH) -> Iterator:
    """Iterate ``items`` in a background thread, ``depth`` items ahead (:func:`lerobot_tools._parallel.read_ahead`).

    Decoding the next record batch (pyarrow releases the GIL) then overlaps with encoding and compressing the
    current one, or with decoding the other file while verifying.
    """
    return read_ahead(items, depth, name="lrtool-reshard-read")


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
    spans = sum(1 for rg in groups if (mm := rg.minmax_of("episode_index")) is not None and mm[0] != mm[1])
    no_stats = sum(1 for rg in groups if rg.num_rows and rg.minmax_of("episode_index") is None)
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


def writer_options(pf, options: ReshardOptions, sample=None) -> dict[str, Any]:
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
            if name not in CODEC_NAMES:
                raise DatasetError(f"column {path} uses codec {name}, which pyarrow cannot write; "
                                   "use --compression zstd or snappy")
            codecs[path] = CODEC_NAMES[name]
        else:
            codecs[path] = options.compression
        used = col is None or bool(DICT_ENCODINGS & set(col.encodings))
        if used and (leaves is None or _dictionary_pays(leaves[i])):
            dictionary.append(path)
    return {
        "compression": codecs,
        "use_dictionary": dictionary if dictionary else False,
        "write_statistics": True,
        "write_page_index": True,
    }
