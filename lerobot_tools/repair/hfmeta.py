"""The ``huggingface`` parquet schema-metadata key, rebuilt the way ``datasets`` writes it.

``datasets`` stores ``{"info": {"features": {<column>: <feature JSON>}}}`` under the key ``huggingface``
(docs/format.md#columns, verified with datasets 4.8.5 and 5.2). Feature JSON per type:

* scalar ``Value``: ``{"dtype": "float32", "_type": "Value"}`` (numpy dtype names; Arrow ``float`` is
  ``float32``, ``double`` is ``float64``, ``large_string`` stays ``large_string``);
* fixed vector: ``{"feature": {...}, "length": N, "_type": "List"}``; variable list: no ``length``;
  ``large_list``: ``"_type": "LargeList"``;
* 2-D..5-D: ``{"shape": [...], "dtype": ..., "_type": "Array2D"}``;
* image: ``{"_type": "Image"}``; struct: a plain dict of field features.

For declared features the JSON follows info.json (lerobot builds its ``datasets.Features`` from info.json,
``feature_utils.get_hf_features_from_features``); undeclared columns are described from their Arrow type.
This module *writes* the key; what counts as wrong metadata (check S006) and how an entry is read are
decided in :mod:`lerobot_tools.dataset.features`, the same rules validate reports with.
"""

from __future__ import annotations

import json
from typing import Any

from lerobot_tools.dataset.features import hf_entry_agrees, hf_entry_fits_type, value_dtype


def arrow_feature_json(t: Any) -> Any:
    """Feature JSON that ``datasets`` infers for an Arrow type (``Features.from_arrow_schema``)."""
    import pyarrow as pa

    if isinstance(t, pa.ExtensionType):
        t = t.storage_type
    if pa.types.is_fixed_size_list(t):
        return {"feature": arrow_feature_json(t.value_type), "length": t.list_size, "_type": "List"}
    if pa.types.is_large_list(t):
        return {"feature": arrow_feature_json(t.value_type), "_type": "LargeList"}
    if pa.types.is_list(t):
        return {"feature": arrow_feature_json(t.value_type), "_type": "List"}
    if pa.types.is_struct(t):
        return {t.field(i).name: arrow_feature_json(t.field(i).type) for i in range(t.num_fields)}
    return {"dtype": value_dtype(t), "_type": "Value"}


def declared_feature_json(feat: dict | None, t: Any) -> Any:
    """Feature JSON for a column: from its info.json declaration ``feat`` when it has a numeric dtype or is an
    image, otherwise (string, language, undeclared) from its Arrow type ``t``."""
    if not isinstance(feat, dict):
        return arrow_feature_json(t)
    dtype, shape = feat.get("dtype"), feat.get("shape")
    if dtype == "image":
        return {"_type": "Image"}
    if dtype in ("string", "language", "video") or not isinstance(shape, list) or not shape \
            or not all(isinstance(s, int) and not isinstance(s, bool) for s in shape):
        return arrow_feature_json(t)
    value = {"dtype": dtype, "_type": "Value"}
    if shape == [1]:
        return value
    if len(shape) == 1:
        return {"feature": value, "length": shape[0], "_type": "List"}
    return {"shape": list(shape), "dtype": dtype, "_type": f"Array{len(shape)}D"}


def rebuild_features(feats: dict, schema: Any, old: dict | None, drifted: set[str] | frozenset = frozenset()) -> dict:
    """``info.features`` for a file with Arrow ``schema``: entries of ``old`` that still agree are kept as
    they are (e.g. a ``Sequence`` written by datasets < 4 stays), the others are rebuilt; order = columns.
    Columns in ``drifted`` (stored otherwise than declared) are described as stored, never as declared."""
    out = {}
    for f in schema:
        feat = feats.get(f.name)
        prev = (old or {}).get(f.name)
        if f.name in drifted:
            out[f.name] = prev if prev is not None and hf_entry_fits_type(prev, f.type) else arrow_feature_json(f.type)
            continue
        if prev is not None and hf_entry_agrees(feat, prev) and hf_entry_fits_type(prev, f.type):
            out[f.name] = prev
        else:
            out[f.name] = declared_feature_json(feat, f.type)
    return out


def dump(doc: dict) -> bytes:
    """Serialise a metadata document as ``datasets`` does (``json.dumps`` defaults)."""
    return json.dumps(doc).encode("utf-8")
