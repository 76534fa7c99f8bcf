"""Rewrite one parquet file with column operations, keeping everything else as it was.

The file is read and written one row group at a time (memory = one row group), so the row-group layout
(one group per episode for native files, docs/failure-modes.md#row-groups), the compression codec, the page
index and the statistics stay as they were; only the named columns and the ``huggingface`` / ``pandas`` key-value
metadata change. The new file is written next to the old one through :func:`lerobot_tools._io.atomic_path`
and verified before it replaces the original: same row count per row group, the expected schema, and
every column equal to the original after the intended operation (lists additionally compared value by
value after flattening).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Iterable

from lerobot_tools._arrow_equal import is_list_type, values_equal
from lerobot_tools.errors import DatasetError
from lerobot_tools.repair.model import ColumnOp

#: Parquet codec names (footer) -> ``pyarrow.parquet.ParquetWriter`` compression names.
_CODECS = {"SNAPPY": "snappy", "GZIP": "gzip", "BROTLI": "brotli", "ZSTD": "zstd", "LZ4": "lz4",
           "LZ4_RAW": "lz4", "UNCOMPRESSED": "none"}


class RewriteError(DatasetError):
    """A column operation cannot be applied without changing values (wrong list length, ...)."""


def op_type(op: ColumnOp, t: Any) -> Any:
    """The Arrow type of column ``op.column`` after ``op`` (None for a dropped column).

    Raises:
        RewriteError: ``op`` does not apply to a column of type ``t``.
    """
    import pyarrow as pa

    if op.kind == "drop":
        return None
    if op.kind == "dtype":
        return with_value_type(t, op.dtype)
    if not is_list_type(t):
        raise RewriteError(f"column {op.column!r} is {t}, not a list", None)
    if op.kind == "fixed":
        return pa.list_(t.value_field, op.length)
    if op.kind == "scalar":
        return t.value_type
    raise ValueError(f"unknown column operation {op.kind!r}")


def with_value_type(t: Any, dtype: str) -> Any:
    """``t`` with its innermost element type replaced by the numpy ``dtype`` (list structure kept)."""
    import numpy as np
    import pyarrow as pa

    if pa.types.is_fixed_size_list(t):
        return pa.list_(t.value_field.with_type(with_value_type(t.value_type, dtype)), t.list_size)
    if pa.types.is_large_list(t):
        return pa.large_list(t.value_field.with_type(with_value_type(t.value_type, dtype)))
    if pa.types.is_list(t):
        return pa.list_(t.value_field.with_type(with_value_type(t.value_type, dtype)))
    return pa.from_numpy_dtype(np.dtype(dtype))


def leaf_values(arr: Any) -> Any:
    """The innermost values of a (nested) list array, flattened (null lists contribute nothing)."""
    import pyarrow.compute as pc

    while is_list_type(arr.type):
        arr = pc.list_flatten(arr)
    return arr


def exact_conversion(arr: Any, t: Any) -> bool:
    """True when converting ``arr`` to type ``t`` and back gives every value (and null) unchanged; NaN
    counts as equal to NaN."""
    import pyarrow as pa
    import pyarrow.compute as pc

    try:
        back = arr.cast(t, safe=False).cast(arr.type, safe=False)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        return False
    a, b = leaf_values(arr), leaf_values(back)
    if len(a) != len(b) or a.null_count != b.null_count:
        return False
    eq = pc.equal(a, b)
    if pa.types.is_floating(a.type):
        eq = pc.or_kleene(eq, pc.and_(pc.is_nan(a), pc.is_nan(b)))
    eq = eq.fill_null(True)
    return bool(pc.all(eq).as_py() if len(eq) else True)


def list_length_problems(arr: Any, length: int) -> int:
    """Number of non-null rows of a list array whose length is not ``length``."""
    import pyarrow.compute as pc

    lengths = pc.list_value_length(arr)
    bad = pc.sum(pc.cast(pc.not_equal(lengths, length), "int64")).as_py()
    return int(bad or 0)


def apply_op(arr: Any, op: ColumnOp) -> Any:
    """Apply a ``fixed`` / ``scalar`` operation to one column (Array or ChunkedArray).

    Raises:
        RewriteError: some row does not have the length the operation needs.
    """
    import pyarrow.compute as pc

    if op.kind == "dtype":
        new_type = op_type(op, arr.type)
        if not exact_conversion(arr, new_type):
            raise RewriteError(f"column {op.column!r}: some values do not convert exactly to {op.dtype}", None)
        return arr.cast(new_type, safe=False)
    need = op.length if op.kind == "fixed" else 1
    if not (op.kind == "scalar" and _fixed_one(arr.type)):
        bad = list_length_problems(arr, need)
        if bad:
            raise RewriteError(f"column {op.column!r}: {bad} row(s) do not have {need} element(s)", None)
    if op.kind == "fixed":
        return arr.cast(op_type(op, arr.type))
    return pc.list_element(arr, 0)


def _fixed_one(t) -> bool:
    import pyarrow as pa

    return pa.types.is_fixed_size_list(t) and t.list_size == 1


def apply_ops(table: Any, ops: Iterable[ColumnOp]) -> Any:
    """The table after the column operations (column order kept; dropped columns removed)."""
    for op in ops:
        if op.column not in table.column_names:
            continue
        if op.kind == "drop":
            table = table.drop_columns([op.column])
            continue
        i = table.schema.get_field_index(op.column)
        field = table.schema.field(i)
        new = apply_op(table.column(i), op)
        table = table.set_column(i, field.with_type(new.type), new)
    return table


def new_schema(schema: Any, ops: Iterable[ColumnOp], metadata: dict[bytes, bytes] | None) -> Any:
    """The schema after ``ops``, with key-value ``metadata`` (None = keep the old metadata)."""
    import pyarrow as pa

    fields = []
    for f in schema:
        t = f.type
        for op in ops:  # in order: a column may get several operations (e.g. fixed, then dtype)
            if op.column == f.name and t is not None:
                t = op_type(op, t)
        if t is not None:
            fields.append(f.with_type(t))
    return pa.schema(fields, metadata=schema.metadata if metadata is None else metadata)


def new_metadata(schema: Any, hf_doc: bytes | None, dropped: Iterable[str]) -> dict[bytes, bytes]:
    """Key-value metadata of the rewritten file: the old keys, ``huggingface`` replaced when ``hf_doc`` is
    given, entries of dropped columns removed from the ``pandas`` description."""
    md = dict(schema.metadata or {})
    md.pop(b"ARROW:schema", None)
    if hf_doc is not None:
        md[b"huggingface"] = hf_doc
    dropped = set(dropped)
    if dropped and b"pandas" in md:
        try:
            pd_meta = json.loads(md[b"pandas"])
            cols = pd_meta.get("columns")
            if isinstance(cols, list):
                pd_meta["columns"] = [c for c in cols if not (isinstance(c, dict) and c.get("name") in dropped)]
                md[b"pandas"] = json.dumps(pd_meta).encode("utf-8")
        except (ValueError, AttributeError, RecursionError):
            pass
    if dropped and b"huggingface" in md and hf_doc is None:
        try:
            doc = json.loads(md[b"huggingface"])
            feats = doc["info"]["features"]
            for name in dropped:
                feats.pop(name, None)
            md[b"huggingface"] = json.dumps(doc).encode("utf-8")
        except (ValueError, KeyError, TypeError, AttributeError, RecursionError):
            pass
    return md


def writer_options(pf: Any) -> dict[str, Any]:
    """ParquetWriter options reproducing a file's codec, page index and format version."""
    md = pf.metadata
    codec, page_index = None, md.num_row_groups > 0
    for r in range(md.num_row_groups):
        rg = md.row_group(r)
        for c in range(rg.num_columns):
            col = rg.column(c)
            codec = codec or col.compression
            if not (col.has_column_index and col.has_offset_index):
                page_index = False
    version = md.format_version if md.format_version in ("1.0", "2.4", "2.6") else "2.6"
    return {
        "compression": _CODECS.get(str(codec).upper(), "snappy") if codec else "snappy",
        "use_dictionary": True,
        "write_statistics": True,
        "write_page_index": page_index,
        "version": version,
    }


def rewrite_parquet(path: Path, ops: list[ColumnOp], metadata: dict[bytes, bytes]) -> None:
    """Rewrite ``path`` with ``ops`` applied and key-value ``metadata``, atomically and verified.

    Args:
        path: the parquet file (replaced in place).
        ops: column operations.
        metadata: the new schema key-value metadata (see :func:`new_metadata`).

    Raises:
        RewriteError: an operation does not apply (a row of the wrong length), or the written file does not
            verify; the original is then untouched.
        OSError: the folder is not writable, the disk is full (original untouched).
    """
    import pyarrow.parquet as pq

    from lerobot_tools._io import atomic_path

    path = Path(path)
    pf = pq.ParquetFile(path)
    schema = new_schema(pf.schema_arrow, ops, metadata)
    opts = writer_options(pf)

    def verify(tmp: Path) -> None:
        verify_rewrite(path, tmp, ops, schema)

    with atomic_path(path, verify=verify) as tmp:
        with pq.ParquetWriter(str(tmp), schema, **opts) as w:
            for i in range(pf.metadata.num_row_groups):
                t = apply_ops(pf.read_row_group(i), ops)
                t = t.replace_schema_metadata(schema.metadata)
                if not t.schema.equals(schema, check_metadata=False):
                    t = t.cast(schema)
                w.write_table(t, row_group_size=max(t.num_rows, 1))
    pf.close()


def verify_rewrite(old_path: Path, new_path: Path, ops: list[ColumnOp], schema: Any) -> None:
    """Check a rewritten file against the original (see module docstring).

    Raises:
        RewriteError: a difference, named.
    """
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    rel = Path(old_path).name
    old = pq.ParquetFile(old_path)
    new = pq.ParquetFile(new_path)
    try:
        if new.metadata.num_row_groups != old.metadata.num_row_groups or new.metadata.num_rows != old.metadata.num_rows:
            raise RewriteError(f"rewrite has {new.metadata.num_rows} rows in {new.metadata.num_row_groups} row "
                               f"group(s), the original {old.metadata.num_rows} in {old.metadata.num_row_groups}", rel)
        if not new.schema_arrow.equals(schema, check_metadata=False):
            raise RewriteError(f"rewrite has schema {new.schema_arrow} instead of {schema}", rel)
        want_md = {k: v for k, v in (schema.metadata or {}).items() if k != b"ARROW:schema"}
        got_md = {k: v for k, v in (new.schema_arrow.metadata or {}).items() if k != b"ARROW:schema"}
        if want_md != got_md:
            raise RewriteError("rewrite does not carry the intended key-value metadata", rel)
        single: dict[str, ColumnOp] = {}
        for op in ops:  # the independent value check below is for columns with exactly one operation
            single[op.column] = op if op.column not in single else None
        by_col = {c: op for c, op in single.items() if op is not None}
        for i in range(old.metadata.num_row_groups):
            a = old.read_row_group(i)
            b = new.read_row_group(i)
            if a.num_rows != b.num_rows:
                raise RewriteError(f"row group {i} has {b.num_rows} rows instead of {a.num_rows}", rel)
            expected = apply_ops(a, ops)
            for name in expected.column_names:
                if not values_equal(b.column(name), expected.column(name).cast(b.schema.field(name).type)):
                    raise RewriteError(f"row group {i}: column {name!r} differs from the original", rel)
            for name, op in by_col.items():
                if op.kind == "drop" or name not in a.column_names:
                    continue
                # independent value check: the flattened original values equal the new values
                if op.kind == "dtype":
                    if not values_equal(b.column(name).cast(a.column(name).type, safe=False), a.column(name)):
                        raise RewriteError(f"row group {i}: values of {name!r} changed", rel)
                    continue
                before = pc.list_flatten(a.column(name))
                if op.kind == "scalar":  # null lists have no element; every other row keeps its one value
                    after = b.column(name).filter(pc.is_valid(a.column(name)))
                else:
                    after = pc.list_flatten(b.column(name))
                if not values_equal(before, after):
                    raise RewriteError(f"row group {i}: values of {name!r} changed", rel)
            if len(b.column_names) != len(expected.column_names):
                raise RewriteError(f"row group {i}: columns {b.column_names} instead of {expected.column_names}", rel)
    finally:
        old.close()
        new.close()


def scan_list_lengths(path: Path, column: str, length: int) -> tuple[int, int]:
    """Stream one list column and count rows whose length is not ``length``.

    Returns:
        ``(bad_rows, null_rows)``.
    """
    import pyarrow.parquet as pq

    bad = nulls = 0
    pf = pq.ParquetFile(path)
    try:
        for batch in pf.iter_batches(batch_size=65_536, columns=[column]):
            col = batch.column(0)
            nulls += col.null_count
            bad += list_length_problems(col, length)
    finally:
        pf.close()
    return bad, nulls


def scan_exact(path: Path, column: str, dtype: str) -> int:
    """Stream one column and count the record batches whose values do not convert exactly to ``dtype``
    (0 = the whole column converts without changing a value)."""
    import pyarrow.parquet as pq

    bad = 0
    pf = pq.ParquetFile(path)
    try:
        for batch in pf.iter_batches(batch_size=65_536, columns=[column]):
            col = batch.column(0)
            if not exact_conversion(col, with_value_type(col.type, dtype)):
                bad += 1
    finally:
        pf.close()
    return bad


def distinct_list_lengths(path: Path, column: str) -> set[int] | None:
    """Distinct lengths of the non-null rows of a list column (streamed); None when it cannot be read."""
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    seen: set[int] = set()
    try:
        pf = pq.ParquetFile(path)
    except Exception:
        return None
    try:
        for batch in pf.iter_batches(batch_size=65_536, columns=[column]):
            lengths = pc.unique(pc.list_value_length(batch.column(0)).drop_null())
            seen.update(int(v) for v in lengths.to_pylist())
    except Exception:
        return None
    finally:
        pf.close()
    return seen


def write_tasks_parquet(path: Path, rows: list[tuple[int, str]]) -> None:
    """Write ``meta/tasks.parquet`` as lerobot writes it (lerobot 0.4.4 ``datasets/utils.py`` ``write_tasks``,
    docs/format.md#tasks): ``pandas.DataFrame`` whose
    index is the task string named ``task`` with one int64 ``task_index`` column, rows in order; atomic and
    verified by reading it back through pandas (index name, labels and indices equal).

    Raises:
        RewriteError: the written file does not read back as ``rows``.
    """
    import numpy as np
    import pandas as pd

    from lerobot_tools._io import atomic_path

    labels = [label for _, label in rows]
    indices = [i for i, _ in rows]

    def verify(tmp: Path) -> None:
        back = pd.read_parquet(tmp)
        md = json.loads((pq_schema(tmp).metadata or {}).get(b"pandas", b"{}"))
        if back.index.name != "task" or md.get("index_columns") != ["task"]:
            raise RewriteError("tasks.parquet rewrite is not indexed by 'task'", path)
        if list(back.index) != labels or [int(v) for v in back["task_index"]] != indices \
                or list(back.columns) != ["task_index"]:
            raise RewriteError("tasks.parquet rewrite does not read back with the same tasks", path)

    with atomic_path(Path(path), verify=verify) as tmp:
        df = pd.DataFrame({"task_index": np.asarray(indices, dtype=np.int64)},
                          index=pd.Index(labels, name="task"))
        df.to_parquet(tmp, engine="pyarrow")


def pq_schema(path: Path) -> Any:
    import pyarrow.parquet as pq

    return pq.read_schema(path)
