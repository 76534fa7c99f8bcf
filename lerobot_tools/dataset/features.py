"""Declared features against stored columns: the one home of the form rules validate and repair share.

A LeRobot feature (``info.json`` ``features[name]``: ``dtype``, ``shape``) becomes an Arrow column the way
lerobot's ``get_hf_features_from_features`` (``src/lerobot/datasets/feature_utils.py``, lerobot 7427f318)
maps it through ``datasets`` features: a numeric ``[1]`` feature is a plain scalar column, ``[N]`` a
``fixed_size_list<T>[N]``, 2-D..5-D an ``ArrayND`` extension over nested lists, ``image`` a
``struct<bytes, path>``, ``string`` a string column; ``video`` features have no column.

Files written through ``datasets`` also carry the parquet key-value metadata ``huggingface``:
``{"info": {"features": {<column>: <feature JSON>}}}`` (``Value``, ``List``/``Sequence``/``LargeList``,
``Array2D``..``Array5D``, ``Image``; checked against datasets 4.8.5 and 5.2). This module decides

* the physical form of a column (:func:`column_form`) and how it differs from its declaration
  (:func:`compare_feature`, the rule of checks S002-S005, which repair casts by);
* which columns drift from their declaration (:func:`drifted_columns`);
* what one ``huggingface`` metadata entry describes (:func:`hf_dtype_shape`), whether it agrees with a
  declaration (:func:`hf_entry_agrees`) and with the stored type (:func:`hf_entry_fits_type`), and
  everything wrong with a file's metadata (:func:`hf_metadata_problems`, the rule of check S006, which repair
  rewrites by).

pyarrow is imported inside the functions that need it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from lerobot_tools._io import loads_json
from lerobot_tools.errors import LrtoolError
from lerobot_tools.findings import ERROR, WARNING

#: Arrow scalar type names -> numpy dtype names (the ``dtype`` lerobot declares and ``datasets`` writes in a
#: ``Value``). Names not listed (``string``, ``large_string``...) are the same in both.
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


def value_dtype(t: Any) -> str:
    """``datasets`` ``Value`` dtype name of a scalar Arrow type (``float`` -> ``float32``; ``large_string`` stays)."""
    import pyarrow as pa

    if isinstance(t, pa.ExtensionType):
        t = t.storage_type
    name = str(t)
    return ARROW_TO_NUMPY.get(name, name)


def compare_feature(name: str, feat: dict, t: Any) -> list[tuple[str, str, str]]:
    """Compare one declared feature with its Arrow column type (checks S002-S005).

    Args:
        name: the feature (= column) name.
        feat: its info.json declaration (a dict with ``dtype`` and ``shape``).
        t: the column's ``pyarrow.DataType``.

    Returns:
        ``(check_id, severity, message)`` triples; empty when the column matches the declaration. A
        malformed declaration (I006's finding) yields no shape finding.
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
                            f"scalar: the cast fails (TypeError: Couldn't cast array of type ... to {dtype})"))
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
        if form.value in FLOAT_DTYPES and dtype in FLOAT_DTYPES:
            out.append(("S003", WARNING, f"{col} stores {form.value} ({form.arrow}) but info.json declares {dtype} "
                        "(a warning: loaders hand out the declared float type, lerobot 0.4.4 through datasets' cast "
                        "to the features, lerobot 0.3.3 through torch.tensor of Python floats)"))
        else:
            out.append(("S003", ERROR, f"{col} stores {form.value} ({form.arrow}) but info.json declares {dtype}"))
    return out


#: float dtypes one another's values cast to without failing (a float32/float64 difference loads everywhere)
FLOAT_DTYPES = ("float16", "float32", "float64")


def drifted_columns(feats: dict, schema: Any) -> set[str]:
    """Columns of Arrow ``schema`` stored otherwise than declared: undeclared (no dict in ``feats``), or with a
    :func:`compare_feature` finding (S002-S005). S006 leaves their metadata entries to those findings."""
    out = set()
    for f in schema:
        feat = feats.get(f.name)
        if not isinstance(feat, dict) or compare_feature(f.name, feat, f.type):
            out.add(f.name)
    return out


# ---------------------------------------------------------------------- the `huggingface` metadata key
def hf_numpy_dtype(d: str) -> str:
    """A ``Value``/``ArrayND`` dtype of ``huggingface`` metadata as a numpy name (``float`` -> ``float32``,
    ``double`` -> ``float64``; datasets also accepts the Arrow spellings)."""
    return {"float": "float32", "double": "float64"}.get(d, d)


def hf_dtype_shape(hf: Any) -> tuple[str, list[int | None] | None] | None:
    """``(dtype, shape)`` described by one ``huggingface`` metadata feature JSON, or None if not understood.

    ``Value`` -> ``(dtype, [1])``; ``List``/``Sequence`` of a ``Value`` -> ``(dtype, [length])`` with None for
    a variable length (-1); ``Array2D``..``Array5D`` -> ``(dtype, shape)``; ``Image`` -> ``("image", None)``.
    The dtype is as written (see :func:`hf_numpy_dtype`).
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


def _hf_disagreement(feat: dict, entry: Any) -> tuple[str, list[int | None] | None] | None:
    """The ``(dtype, shape)`` an entry describes when it contradicts the numeric declaration ``feat``, else None.

    Agreement: same dtype, and the same shape, an unknown shape, or a variable-length list for a 1-D feature.
    Entries of string/language/image features and entries not understood are not compared.
    """
    got = hf_dtype_shape(entry)
    dtype, shape = feat.get("dtype"), feat.get("shape")
    if got is None or dtype in ("string", "language", "image") or not isinstance(shape, list):
        return None
    hdtype, hshape = got
    hdtype = hf_numpy_dtype(hdtype)
    if hdtype != dtype or (hshape is not None and hshape != shape and not (len(shape) == 1 and hshape == [None])):
        return hdtype, hshape
    return None


def hf_entry_agrees(feat: dict | None, entry: Any) -> bool:
    """True when a metadata ``entry`` describes the declared feature ``feat`` as S006 reads it. For an
    undeclared column (``feat`` None) any entry agrees."""
    if not isinstance(feat, dict):
        return entry is not None
    return _hf_disagreement(feat, entry) is None


def hf_entry_fits_type(entry: Any, t: Any) -> bool:
    """True when a metadata ``entry``'s list-ness matches the Arrow type ``t`` (a ``List`` entry for a scalar
    column is stale; a fixed list's entry carries its length, as datasets writes it)."""
    import pyarrow as pa

    if isinstance(t, pa.ExtensionType):
        t = t.storage_type
    is_list = pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t)
    if not isinstance(entry, dict):
        return False
    kind = entry.get("_type")
    if kind == "Value":
        return not is_list and not pa.types.is_struct(t)
    if kind in ("List", "Sequence", "LargeList"):
        if not is_list:
            return False
        if pa.types.is_fixed_size_list(t):
            return entry.get("length") == t.list_size  # datasets writes the length of a fixed list
        return True
    return True


def parse_hf_metadata(raw: bytes | str | None) -> dict | None:
    """The parsed ``huggingface`` metadata document, or None when absent or not a JSON object with
    ``info.features`` as a dict (or nested deeper than :data:`lerobot_tools._io.MAX_JSON_DEPTH` levels)."""
    if raw is None:
        return None
    try:
        doc = loads_json(raw)
    except LrtoolError:
        return None
    if not isinstance(doc, dict) or not isinstance(doc.get("info"), dict) \
            or not isinstance(doc["info"].get("features"), dict):
        return None
    return doc


@dataclass(frozen=True)
class HfProblem:
    """One way a file's ``huggingface`` metadata is missing or contradicts info.json (check S006).

    Attributes:
        kind: ``"missing"`` (no key), ``"pandas"`` (no key, a ``pandas`` key instead: a pandas round-trip),
            ``"unparseable"``, ``"undescribed"`` (a declared column has no entry), ``"disagrees"`` (the entry
            describes another dtype/shape), ``"stale"`` (an entry for neither a declared feature nor a column).
        feature: the feature/column concerned (None for the whole key).
        message: the one-line finding message.
    """

    kind: str
    feature: str | None
    message: str


def hf_metadata_problems(feats: dict, schema: Any, raw: bytes | str | None, *, has_pandas: bool = False,
                         drifted: set[str] | frozenset = frozenset()) -> list[HfProblem]:
    """Everything S006 reports about one data file's ``huggingface`` metadata.

    Args:
        feats: info.json ``features`` (name -> declaration; non-dict values count as undeclared).
        schema: the file's ``pyarrow.Schema``.
        raw: the ``huggingface`` key-value metadata value (None when absent).
        has_pandas: the file carries ``pandas`` metadata (tells a pandas round-trip from a bare file).
        drifted: columns with S002-S005 findings (:func:`drifted_columns`): skipped, the metadata describing
            the file as it is adds nothing to those findings.

    Returns:
        The problems, declared features first (declaration order), then stale entries; empty when the metadata
        is right.
    """
    if raw is None:
        if has_pandas:
            return [HfProblem("pandas", None, "no `huggingface` schema metadata: replaced by `pandas` metadata "
                              "(a pandas round-trip)")]
        return [HfProblem("missing", None, "no `huggingface` schema metadata")]
    doc = parse_hf_metadata(raw)
    if doc is None:
        return [HfProblem("unparseable", None, "the `huggingface` schema metadata cannot be parsed")]
    hf = doc["info"]["features"]
    columns = set(schema.names)
    out = []
    for name, feat in feats.items():
        if not isinstance(feat, dict) or feat.get("dtype") == "video" or name not in columns or name in drifted:
            continue
        if name not in hf:
            out.append(HfProblem("undescribed", name, f"`huggingface` metadata does not describe column {name!r}"))
            continue
        got = _hf_disagreement(feat, hf[name])
        if got is not None:
            out.append(HfProblem("disagrees", name, f"`huggingface` metadata describes {name!r} as {got[0]} {got[1]}, "
                                 f"info.json declares {feat.get('dtype')} {feat.get('shape')}"))
    for name in hf:
        if name not in feats and name not in columns:
            out.append(HfProblem("stale", name, f"`huggingface` metadata describes {name!r}, which is neither "
                                 "declared nor a column"))
    return out
