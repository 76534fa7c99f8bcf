"""Family S: info.json features against the parquet schema, from footers only.

Sources: lerobot-format §5 (features -> HF features -> Arrow; physical variants; the ``huggingface`` key),
§14 I9; pitfalls A1-A5. The helpers :func:`column_form` and :func:`compare_feature` are public so that
``lrtool repair`` decides what to cast with the same rules validate reports with.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any

from lerobot_tools.checks.context import CheckContext
from lerobot_tools.findings import ERROR, INFO, WARNING

ARROW_TO_NUMPY = {
    "bool": "bool", "int8": "int8", "int16": "int16", "int32": "int32", "int64": "int64",
    "uint8": "uint8", "uint16": "uint16", "uint32": "uint32", "uint64": "uint64",
    "halffloat": "float16", "float": "float32", "double": "float64",
}


@dataclass(frozen=True)
class ColumnForm:
    """The physical form of an Arrow column type, reduced to what matters for a LeRobot feature.

    Attributes:
        kind: ``"scalar"`` (numeric/bool), ``"string"``, ``"binary"``, ``"struct"``, ``"list"`` (any list),
            ``"other"``.
        value: numpy dtype name of the innermost numeric element (``"float32"``), ``"string"``, or None.
        depth: list nesting depth (0 for scalars).
        lengths: per nesting level, the fixed size (``fixed_size_list``) or None (variable ``list``).
        arrow: the Arrow type as text, for messages.
    """

    kind: str
    value: str | None
    depth: int
    lengths: tuple[int | None, ...]
    arrow: str

    @property
    def fixed(self) -> bool:
        return all(n is not None for n in self.lengths)


def column_form(t: Any) -> ColumnForm:
    """Describe a ``pyarrow.DataType`` (extension types are described by their storage type)."""
    import pyarrow as pa

    arrow = str(t)
    if isinstance(t, pa.ExtensionType):
        t = t.storage_type
    lengths: list[int | None] = []
    while pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t) \
            or pa.types.is_list_view(t) or pa.types.is_large_list_view(t):
        lengths.append(t.list_size if pa.types.is_fixed_size_list(t) else None)
        t = t.value_type
        if isinstance(t, pa.ExtensionType):
            t = t.storage_type
    name = str(t)
    if name in ARROW_TO_NUMPY:
        kind, value = "scalar", ARROW_TO_NUMPY[name]
    elif pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_string_view(t):
        kind, value = "string", "string"
    elif pa.types.is_binary(t) or pa.types.is_large_binary(t):
        kind, value = "binary", None
    elif pa.types.is_struct(t):
        kind, value = "struct", None
    else:
        kind, value = "other", None
    if lengths:
        kind = "list"
    return ColumnForm(kind, value, len(lengths), tuple(lengths), arrow)


def compare_feature(name: str, feat: dict, t: Any) -> list[tuple[str, str, str]]:
    """Compare one declared feature with its Arrow column type.

    Returns:
        ``(check_id, severity, message)`` triples; empty when the column matches the declaration.
    """
    form = column_form(t)
    dtype, shape = feat.get("dtype"), feat.get("shape")
    out: list[tuple[str, str, str]] = []
    col = f"column {name!r}"
    if dtype == "video":
        return [("S002", ERROR, f"{col} exists in the data but {name!r} is declared as a video feature "
                 "(its frames belong in mp4 files)")]
    if dtype == "image":
        import pyarrow as pa

        base = t.storage_type if isinstance(t, pa.ExtensionType) else t
        ok = form.kind == "binary" or (form.kind == "struct" and base.get_field_index("bytes") >= 0)
        if not ok:
            out.append(("S003", ERROR, f"{col} is {form.arrow}; an image feature is struct<bytes, path>"))
        return out
    if dtype == "string":
        if form.kind == "list":
            out.append(("S004", ERROR, f"{col} is {form.arrow}; a string feature is a plain string column"))
        elif form.kind != "string":
            out.append(("S003", ERROR, f"{col} is {form.arrow}; declared string"))
        return out
    if dtype == "language":
        if form.kind not in ("list", "string", "struct"):
            out.append(("S003", ERROR, f"{col} is {form.arrow}; a language feature is a list of structs"))
        return out
    if not isinstance(shape, list) or not shape or not all(isinstance(s, int) for s in shape):
        return out  # malformed declaration: reported by I006
    rank = len(shape)
    if shape == [1]:
        if form.kind == "list":
            if form.depth == 1 and form.lengths[0] in (1, None):
                out.append(("S004", ERROR, f"{col} is a one-element list ({form.arrow}) but shape [1] declares a "
                            "scalar: the cast fails (TypeError: Couldn't cast array of type ... to float)"))
            else:
                out.append(("S004", ERROR, f"{col} is {form.arrow} but shape [1] declares a scalar"))
    elif rank == 1:
        n = shape[0]
        if form.kind in ("scalar", "string"):
            out.append(("S004", ERROR, f"{col} is a scalar ({form.arrow}) but shape {shape} declares a vector"))
        elif form.kind == "list":
            if form.depth != 1:
                out.append(("S004", ERROR, f"{col} is {form.arrow}, nested {form.depth} deep, but shape {shape} is rank 1"))
            elif form.lengths[0] is None:
                out.append(("S005", WARNING, f"{col} is a variable-length list ({form.arrow}) where shape {shape} "
                            f"declares fixed_size_list[{n}]"))
            elif form.lengths[0] != n:
                out.append(("S004", ERROR, f"{col} is {form.arrow} but shape {shape} declares length {n}"))
    else:
        if form.kind != "list" or form.depth != rank:
            out.append(("S004", ERROR, f"{col} is {form.arrow} but shape {shape} needs {rank} nested list levels"))
        else:
            for level, (declared, stored) in enumerate(zip(shape, form.lengths)):
                if stored is not None and stored != declared:
                    out.append(("S004", ERROR, f"{col} is {form.arrow} but shape {shape} declares {declared} at level {level}"))
                    break
    if form.value is None or form.value == "string":
        out.append(("S003", ERROR, f"{col} holds {form.arrow} values; declared {dtype}"))
    elif form.value != dtype:
        out.append(("S003", ERROR, f"{col} stores {form.value} ({form.arrow}) but info.json declares {dtype}"))
    return out


def hf_dtype_shape(hf: Any) -> tuple[str, list[int | None] | None] | None:
    """``(dtype, shape)`` described by one ``huggingface`` metadata feature JSON, or None if not understood.

    ``Value`` -> ``(dtype, [1])``; ``List``/``Sequence`` of a ``Value`` -> ``(dtype, [length])`` with None for
    a variable length (-1); ``Array2D``..``Array5D`` -> ``(dtype, shape)``; ``Image`` -> ``("image", None)``.
    """
    if not isinstance(hf, dict):
        return None
    kind = hf.get("_type")
    if kind == "Value":
        return str(hf.get("dtype")), [1]
    if kind in ("List", "Sequence", "LargeList"):
        inner = hf.get("feature")
        if isinstance(inner, dict) and inner.get("_type") == "Value":
            n = hf.get("length", -1)
            return str(inner.get("dtype")), [n if isinstance(n, int) and n >= 0 else None]
        return None
    if isinstance(kind, str) and kind.startswith("Array") and kind.endswith("D"):
        shape = hf.get("shape")
        return str(hf.get("dtype")), list(shape) if isinstance(shape, list) else None
    if kind == "Image":
        return "image", None
    return None


def _numpy_hf_dtype(d: str) -> str:
    return {"float": "float32", "double": "float64"}.get(d, d)


def run(ctx: CheckContext) -> None:
    """Family S: info.json features against every readable data file's Arrow schema (footers only).

    Emits S001-S007. Reads ``ctx.footers``, ``ctx.episodes_ok``, ``ctx.bad_data_files`` and
    ``ctx.data_files``; sets nothing.
    """
    ds = ctx.dataset
    if not ctx.footers:
        if ctx.episodes_ok and not ctx.bad_data_files and not ctx.data_files:
            ctx.skip("S001-S007", "the metadata references no data files")
        return
    feats = ds.features
    declared = [k for k, v in feats.items() if v.get("dtype") != "video"]
    video_names = {k for k, v in feats.items() if v.get("dtype") == "video"}
    for rel, footer in ctx.footers.items():
        schema = footer.schema
        names = schema.names
        present = set(names)
        for name in declared:
            if name not in present:
                msg = f"declared feature {name!r} has no column in the data (datasets fills it with None)"
                ctx.emit("S001", msg, rel, group=msg)
        drifted = set()
        for name in names:
            if name not in feats:
                msg = f"column {name!r} ({schema.field(name).type}) is not declared in info.json features"
                ctx.emit("S002", msg, rel, group=msg)
                drifted.add(name)
                continue
            for check, sev, msg in compare_feature(name, feats[name], schema.field(name).type):
                ctx.emit(check, msg, rel, severity=sev, group=msg)
                drifted.add(name)
        _check_hf_metadata(ctx, rel, footer, feats, video_names, drifted)
    _check_cross_file(ctx)


def _check_hf_metadata(ctx: CheckContext, rel: str, footer, feats: dict, video_names: set[str],
                       drifted: set[str]) -> None:
    """S006. Columns already reported by S002-S005 (``drifted``) are skipped: the metadata describing the
    file as it is adds nothing to that finding."""
    if not ctx.enabled("S006"):
        return
    if "huggingface" not in footer.metadata:
        if "pandas" in footer.metadata:
            msg = "no `huggingface` schema metadata: replaced by `pandas` metadata (a pandas round-trip)"
            ctx.emit("S006", msg, rel, group=msg)
        else:
            msg = "no `huggingface` schema metadata"
            ctx.emit("S006", msg, rel, severity=INFO, group=msg)
        return
    hf = footer.hf_features()
    if hf is None:
        msg = "the `huggingface` schema metadata cannot be parsed"
        ctx.emit("S006", msg, rel, group=msg)
        return
    for name, feat in feats.items():
        if name in video_names or name not in footer.schema.names or name in drifted:
            continue
        if name not in hf:
            msg = f"`huggingface` metadata does not describe column {name!r}"
            ctx.emit("S006", msg, rel, group=msg)
            continue
        got = hf_dtype_shape(hf[name])
        dtype, shape = feat.get("dtype"), feat.get("shape")
        if got is None or dtype in ("string", "language", "image") or not isinstance(shape, list):
            continue
        hdtype, hshape = got
        hdtype = _numpy_hf_dtype(hdtype)
        if hdtype != dtype or (hshape is not None and hshape != shape and not (len(shape) == 1 and hshape == [None])):
            msg = (f"`huggingface` metadata describes {name!r} as {hdtype} {hshape}, info.json declares "
                   f"{dtype} {shape}")
            ctx.emit("S006", msg, rel, group=msg)
    for name in hf:
        if name not in feats and name not in footer.schema.names:
            msg = f"`huggingface` metadata describes {name!r}, which is neither declared nor a column"
            ctx.emit("S006", msg, rel, group=msg)


def _signature(schema) -> tuple[tuple[str, str], ...]:
    return tuple(sorted((f.name, str(f.type)) for f in schema))


def _check_cross_file(ctx: CheckContext) -> None:
    if not ctx.enabled("S007") or len(ctx.footers) < 2:
        return
    sigs: dict[tuple, list[str]] = {}
    for rel, footer in ctx.footers.items():
        sigs.setdefault(_signature(footer.schema), []).append(rel)
    if len(sigs) < 2:
        return
    counts = Counter({sig: len(files) for sig, files in sigs.items()})
    majority, n_major = counts.most_common(1)[0]
    major = dict(majority)
    for sig, files in sigs.items():
        if sig is majority:
            continue
        other = dict(sig)
        diffs = []
        for name in sorted(set(major) | set(other)):
            a, b = major.get(name), other.get(name)
            if a == b:
                continue
            if a is None:
                diffs.append(f"extra column {name!r}")
            elif b is None:
                diffs.append(f"no column {name!r}")
            else:
                diffs.append(f"{name!r} is {b} (others: {a})")
        shown = "; ".join(diffs[:4]) + ("; ..." if len(diffs) > 4 else "")
        ctx.emit("S007", f"{len(files)} data file(s) differ from the schema of the other {n_major}: {shown}", files[0])
