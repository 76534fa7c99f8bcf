"""Verification of a rewritten parquet file against the original (row count, schema and metadata, row-group
layout, page index, and every column's content) before it replaces the original."""

from __future__ import annotations

import contextlib
from pathlib import Path

from lerobot_tools._arrow_equal import values_equal
from lerobot_tools.reshard.model import CODEC_NAMES, PlannedGroup, ReshardOptions, VerifyError, Oversize
from lerobot_tools.reshard.read import _guarded, _open, _prefetched, decode_threads


def _compare_content(original: Path, new: Path, batch_rows: int) -> int:
    """Compare every column of two parquet files row by row, streaming; return the row count.

    Raises:
        VerifyError: a value, a column or the row count differs.
    """
    threads = decode_threads()
    with _open(original) as pa_orig, _open(new) as pa_new, \
            contextlib.closing(_prefetched(_guarded(pa_orig.iter_batches(batch_size=batch_rows, use_threads=threads),
                                         "the data pages"))) as it_a, \
            contextlib.closing(_prefetched(_guarded(pa_new.iter_batches(batch_size=batch_rows, use_threads=threads),
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
                if not values_equal(a.column(i).slice(0, n), b.column(i).slice(0, n)):
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
        Oversize: only the size limit was missed (the caller re-plans).
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
                    if want is not None and CODEC_NAMES.get(col.compression.upper(), "?") != want:
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
            raise Oversize(worst_ratio, worst)
    _compare_content(original, new, batch_rows)
