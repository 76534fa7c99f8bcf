"""The Arrow cache behind FrameDataset: a warm open maps the cache directly, and never trusts a stale one."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("datasets")

from lerobot_tools.loaders import FrameDataset  # noqa: E402
from lerobot_tools.loaders._arrow import INDEX_DIRNAME, ArrowRows  # noqa: E402
from lerobot_tools.testing.synth import SynthSpec, build_dataset  # noqa: E402

SPEC = SynthSpec(version="v3.0", episode_lengths=(7, 5, 9), episodes_per_file=2, video_codec=None, video_keys=())


@pytest.fixture
def ds_root(tmp_path):
    return build_dataset(tmp_path / "ds", SPEC)


def actions(ds: FrameDataset) -> np.ndarray:
    return np.stack([s["action"].numpy() for s in ds.__getitems__(list(range(len(ds))))])


def test_second_open_is_warm_and_reads_the_same_rows(ds_root, tmp_path):
    cold = FrameDataset(ds_root, cache_dir=tmp_path / "c", decode_video=False)
    assert cold._rows.warm is False and cold.cache_files
    assert len(list((tmp_path / "c" / INDEX_DIRNAME).glob("*.json"))) == 1
    warm = FrameDataset(ds_root, cache_dir=tmp_path / "c", decode_video=False)
    assert warm._rows.warm is True and warm.cache_files == cold.cache_files
    np.testing.assert_array_equal(actions(warm), actions(cold))
    # and the same as reading the parquet directly
    want = np.concatenate([np.asarray(pq.read_table(f).column("action").to_pylist(), dtype=np.float32)
                           for f in sorted((ds_root / "data").rglob("*.parquet"))])
    np.testing.assert_array_equal(actions(warm), want)
    # hf_dataset is still available, over the same cache files
    assert [f["filename"] for f in warm.hf_dataset.cache_files] == warm.cache_files


def test_a_warm_open_does_not_import_datasets(ds_root, tmp_path):
    FrameDataset(ds_root, cache_dir=tmp_path / "c", decode_video=False)
    code = textwrap.dedent(f"""
        import sys
        from lerobot_tools.loaders import FrameDataset
        ds = FrameDataset({str(ds_root)!r}, cache_dir={str(tmp_path / 'c')!r}, decode_video=False)
        assert ds._rows.warm, "not warm"
        ds[3]
        print("datasets" in sys.modules)
    """)
    env = {**os.environ, "PYTHONWARNINGS": "ignore"}
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, env=env)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip().splitlines()[-1] == "False"


def test_a_changed_data_file_is_rebuilt_not_served_stale(ds_root, tmp_path):
    first = FrameDataset(ds_root, cache_dir=tmp_path / "c", decode_video=False)
    before = actions(first)
    f = sorted((ds_root / "data").rglob("*.parquet"))[0]
    t = pq.read_table(f)
    col = t.column("action").combine_chunks()
    doubled = pa.FixedSizeListArray.from_arrays(pa.compute.multiply(col.flatten(), 2.0).cast(pa.float32()),
                                                col.type.list_size)
    t = t.set_column(t.schema.get_field_index("action"), "action", doubled)
    pq.write_table(t, f)
    st = os.stat(f)
    os.utime(f, ns=(st.st_atime_ns, st.st_mtime_ns + 10**9))
    again = FrameDataset(ds_root, cache_dir=tmp_path / "c", decode_video=False)
    assert again._rows.warm is False
    n0 = t.num_rows
    np.testing.assert_allclose(actions(again)[:n0], 2 * before[:n0])
    np.testing.assert_array_equal(actions(again)[n0:], before[n0:])


@pytest.mark.parametrize("damage", ["delete-cache", "truncate-cache", "garbage-index"])
def test_a_damaged_cache_or_index_falls_back_to_a_rebuild(ds_root, tmp_path, damage):
    first = FrameDataset(ds_root, cache_dir=tmp_path / "c", decode_video=False)
    want = actions(first)
    index = next((tmp_path / "c" / INDEX_DIRNAME).glob("*.json"))
    if damage == "delete-cache":
        os.unlink(first.cache_files[0])
    elif damage == "truncate-cache":
        with open(first.cache_files[0], "r+b") as fh:
            fh.truncate(100)
    else:
        index.write_text("{not json")
    del first
    again = FrameDataset(ds_root, cache_dir=tmp_path / "c", decode_video=False)
    assert again._rows.warm is False
    np.testing.assert_array_equal(actions(again), want)
    assert json.loads(index.read_text())["version"] == 1  # rewritten


def test_arrow_rows_take_any_order_with_repeats():
    batches = [pa.record_batch({"x": pa.array(np.arange(a, b))}) for a, b in [(0, 3), (3, 4), (4, 10)]]
    rows = ArrowRows(pa.Table.from_batches(batches), [], warm=False)
    idx = np.asarray([9, 0, 3, 3, 5, 2, 9])
    assert rows.take(idx).column("x").to_pylist() == idx.tolist()
    assert rows.take(np.asarray([], dtype=np.int64)).num_rows == 0
