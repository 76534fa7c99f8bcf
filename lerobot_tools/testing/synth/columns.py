"""Data parquet writing: the ``huggingface`` schema-metadata key, the Arrow schema of the data columns, one
episode's column values and the parquet writer settings."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from lerobot_tools.testing.synth.spec import SynthSpec

# ----------------------------------------------------------------------------------------------
# HF `datasets` feature JSON (schema metadata key "huggingface")
# ----------------------------------------------------------------------------------------------

def hf_feature_json(dtype: str, shape: Sequence[int]) -> dict:
    """Feature JSON as ``datasets`` >= 4 writes it into the ``huggingface`` parquet metadata.

    ``[1]`` -> ``{"dtype": dtype, "_type": "Value"}``; ``[N]`` -> ``{"feature": {...}, "length": N,
    "_type": "List"}`` (docs/format.md#columns, verified with datasets 4.8.5).
    """
    value = {"dtype": dtype, "_type": "Value"}
    if list(shape) == [1]:
        return value
    if len(shape) != 1:
        raise ValueError(f"hf_feature_json: only 1-D shapes are supported, got {list(shape)}")
    return {"feature": value, "length": int(shape[0]), "_type": "List"}


def hf_schema_metadata(hf_features: dict[str, dict]) -> dict[bytes, bytes]:
    """Parquet key-value metadata ``{b"huggingface": b'{"info": {"features": ...}}'}``."""
    return {b"huggingface": json.dumps({"info": {"features": hf_features}}).encode()}


def _arrow_type(dtype: str, shape: Sequence[int]) -> pa.DataType:
    value = pa.from_numpy_dtype(np.dtype(dtype))
    return value if list(shape) == [1] else pa.list_(value, int(shape[0]))


def data_schema(features: dict[str, dict]) -> pa.Schema:
    cols = {k: v for k, v in features.items() if v["dtype"] not in ("video", "image", "string")}
    fields = [pa.field(k, _arrow_type(v["dtype"], v["shape"])) for k, v in cols.items()]
    hf = {k: hf_feature_json(v["dtype"], v["shape"]) for k, v in cols.items()}
    return pa.schema(fields, metadata=hf_schema_metadata(hf))


def _to_arrow(col: np.ndarray, typ: pa.DataType) -> pa.Array:
    if pa.types.is_fixed_size_list(typ):
        flat = pa.array(np.ascontiguousarray(col).reshape(-1), type=typ.value_type)
        return pa.FixedSizeListArray.from_arrays(flat, typ.list_size)
    return pa.array(col, type=typ)


# ----------------------------------------------------------------------------------------------
# Episode content and parquet writing
# ----------------------------------------------------------------------------------------------


def episode_columns(
    spec: SynthSpec, ep: int, length: int, start_index: int, task: int
) -> dict[str, np.ndarray]:
    """Data columns of one episode (numpy), values depending only on (seed, episode)."""
    rng = np.random.default_rng([int(spec.seed), ep])
    cols: dict[str, np.ndarray] = {}
    vec = spec.user_vector_features()
    state = None
    if "observation.state" in vec or "action" in vec:
        d = max(spec.state_dim, spec.action_dim)
        # a smooth joint trajectory in degrees: random start + random walk
        start = rng.uniform(-60.0, 60.0, size=d)
        walk = np.cumsum(rng.normal(0.0, 0.8, size=(length + 1, d)), axis=0)
        state = start + walk
    for name, n in vec.items():
        if name == "action":
            # the commanded position leads the measured one by a frame, plus command noise
            cols[name] = (state[1:, :n] + rng.normal(0.0, 0.2, size=(length, n))).astype(np.float32)
        elif name == "observation.state":
            cols[name] = state[:-1, :n].astype(np.float32)
        else:
            cols[name] = rng.standard_normal((length, n), dtype=np.float32)
    fi = np.arange(length, dtype=np.int64)
    cols["timestamp"] = (fi / spec.fps).astype(np.float32)
    cols["frame_index"] = fi
    cols["episode_index"] = np.full(length, ep, dtype=np.int64)
    cols["index"] = np.arange(start_index, start_index + length, dtype=np.int64)
    cols["task_index"] = np.full(length, task, dtype=np.int64)
    return cols


def parquet_writer(path: Path, schema: pa.Schema, spec: SynthSpec) -> pq.ParquetWriter:
    path.parent.mkdir(parents=True, exist_ok=True)
    return pq.ParquetWriter(
        str(path), schema, compression="snappy", use_dictionary=True, write_page_index=spec.write_page_index
    )


def episode_table(cols: dict[str, np.ndarray], schema: pa.Schema) -> pa.Table:
    return pa.Table.from_arrays([_to_arrow(cols[f.name], f.type) for f in schema], schema=schema)
