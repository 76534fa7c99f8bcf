"""Parquet footers: everything the default checks need, read without touching data pages.

Opening a ``pyarrow.parquet.ParquetFile`` reads only the footer (schema, key-value metadata, row-group
and column-chunk metadata with min/max statistics), a few KB per file. Validate's default mode never
reads more than this from a data file.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lerobot_tools.errors import DatasetError, one_line

#: integer index columns whose per-row-group min/max are collected from the footer statistics
INDEX_COLUMNS = ("episode_index", "task_index", "index", "frame_index")


def row_group_rows(metadata: Any) -> list[int]:
    """The row count of each row group of a parsed footer (``pyarrow.parquet.FileMetaData``), in file order."""
    return [metadata.row_group(i).num_rows for i in range(metadata.num_row_groups)]


class RowGroupInfo:
    """One row group, from the footer.

    Attributes:
        num_rows: rows in the group.
        uncompressed_bytes: ``total_byte_size`` (uncompressed, bytes), what a reader materialises.
        compressed_bytes: sum of the column chunks' compressed sizes (bytes on disk).
        page_index: every column chunk has both a column index and an offset index.
        minmax: ``column -> (min, max)`` for the :data:`INDEX_COLUMNS` that have statistics (a new dict on each
            access; kept as one flat tuple: a 1 GB v3.0 file has 14,000 row groups, and their dicts took ~6 MB for
            the whole run).
    """

    __slots__ = ("num_rows", "uncompressed_bytes", "compressed_bytes", "page_index", "_minmax")

    def __init__(self, num_rows: int, uncompressed_bytes: int, compressed_bytes: int, page_index: bool,
                 minmax: dict[str, tuple[Any, Any]] | None = None):
        self.num_rows = num_rows
        self.uncompressed_bytes = uncompressed_bytes
        self.compressed_bytes = compressed_bytes
        self.page_index = page_index
        self._minmax = tuple(x for name, (lo, hi) in (minmax or {}).items() for x in (name, lo, hi))

    @property
    def minmax(self) -> dict[str, tuple[Any, Any]]:
        flat = self._minmax
        return {flat[i]: (flat[i + 1], flat[i + 2]) for i in range(0, len(flat), 3)}

    def minmax_of(self, column: str) -> tuple[Any, Any] | None:
        """``minmax.get(column)`` without building the dict."""
        flat = self._minmax
        for i in range(0, len(flat), 3):
            if flat[i] == column:
                return flat[i + 1], flat[i + 2]
        return None

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, RowGroupInfo):
            return NotImplemented
        return (self.num_rows, self.uncompressed_bytes, self.compressed_bytes, self.page_index, self.minmax) == \
            (other.num_rows, other.uncompressed_bytes, other.compressed_bytes, other.page_index, other.minmax)

    def __repr__(self) -> str:
        return (f"RowGroupInfo(num_rows={self.num_rows}, uncompressed_bytes={self.uncompressed_bytes}, "
                f"compressed_bytes={self.compressed_bytes}, page_index={self.page_index}, minmax={self.minmax})")


@dataclass
class FooterInfo:
    """The footer of one parquet file.

    Attributes:
        num_rows: rows in the file.
        schema: the Arrow schema (``pyarrow.Schema``, with key-value metadata).
        metadata: the Arrow schema's key-value metadata decoded to ``str -> str`` (``huggingface``, ``pandas``; not
            ``ARROW:schema``, which pyarrow consumes to rebuild the schema); undecodable entries are left out.
        row_groups: per row group, see :class:`RowGroupInfo`.
        compression: codec of the first column chunk (``SNAPPY``, ``ZSTD``, ``UNCOMPRESSED``...).
        created_by: writer string.
    """

    num_rows: int
    schema: Any
    metadata: dict[str, str]
    row_groups: list[RowGroupInfo]
    compression: str | None
    created_by: str | None

    def column_minmax(self, column: str) -> tuple[Any, Any] | None:
        """``(min, max)`` of an index column over the whole file, or None when any row group lacks statistics."""
        lo = hi = None
        for rg in self.row_groups:
            mm = rg.minmax_of(column)
            if mm is None:
                if rg.num_rows == 0:
                    continue
                return None
            lo = mm[0] if lo is None else min(lo, mm[0])
            hi = mm[1] if hi is None else max(hi, mm[1])
        return None if lo is None else (lo, hi)


def read_footer(path: Path, rel: str | None = None) -> FooterInfo:
    """Read a parquet footer.

    Raises:
        DatasetError: the file cannot be opened (missing, a path that is not valid UTF-8) or has no valid footer
            (message names ``rel``).
    """
    import pyarrow.parquet as pq

    rel = rel or str(path)
    try:
        pf = pq.ParquetFile(path)
        md = pf.metadata
        schema = pf.schema_arrow
    except FileNotFoundError:
        raise DatasetError("file is missing", rel) from None
    except UnicodeEncodeError:  # a name byte that is not UTF-8 (Python keeps it as a surrogate escape)
        raise DatasetError("path is not valid UTF-8, so pyarrow (and every loader built on it, lerobot's "
                           "included) cannot open the file; rename the folder or file", rel) from None
    except Exception as exc:  # ArrowInvalid, OSError ...
        raise DatasetError(f"not a readable parquet file ({one_line(exc, 160)})", rel) from None
    meta = {}
    for k, v in (schema.metadata or {}).items():
        try:
            meta[k.decode("utf-8")] = v.decode("utf-8")
        except UnicodeDecodeError:
            continue
    # Leaf column positions of the top-level integer index columns, named by the first row group's column
    # chunks. Not from ``md.schema``: the ParquetSchema it makes and the FileMetaData refer to each other, so the
    # whole parsed footer (~100 MB for 14,000 row groups) would outlive this call until Python's cycle collector
    # ran.
    positions: dict[int, str] | None = None
    groups = []
    compression = None
    for r in range(md.num_row_groups):
        rg = md.row_group(r)
        ncols = rg.num_columns
        if positions is None:
            positions = {c: p for c in range(ncols) if (p := rg.column(c).path_in_schema) in INDEX_COLUMNS}
        page_index = ncols > 0
        compressed = 0
        minmax = {}
        for c in range(ncols):  # one metadata object per column chunk, every fact read from it once
            col = rg.column(c)
            compressed += col.total_compressed_size
            if page_index and not (col.has_column_index and col.has_offset_index):
                page_index = False
            if compression is None:
                compression = col.compression
            name = positions.get(c)
            if name is not None:
                st = col.statistics
                if st is not None and st.has_min_max:
                    minmax[name] = (st.min, st.max)
        groups.append(RowGroupInfo(rg.num_rows, rg.total_byte_size, compressed, page_index, minmax))
    return FooterInfo(md.num_rows, schema, meta, groups, compression, md.created_by)
