"""``numpy_values``: Arrow arrays to numpy without pyarrow's pandas-backed conversion, same values as ``to_numpy``."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from lerobot_tools._arrow_numpy import list_lengths, list_values, numpy_values


def _child_env() -> dict:
    """The environment for a child Python that imports lerobot_tools from where this process does (a mutated copy
    included), read when the child starts."""
    return dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))


NUMERIC = [pa.int8(), pa.int16(), pa.int32(), pa.int64(), pa.uint8(), pa.uint16(), pa.uint32(), pa.uint64(),
           pa.float16(), pa.float32(), pa.float64()]


@pytest.mark.parametrize("typ", NUMERIC, ids=str)
def test_numeric_arrays_are_read_from_the_buffer_with_the_numpy_dtype(typ):
    values = np.array([0, 1, 2, 3, 100, 7, 5], dtype=typ.to_pandas_dtype())
    arr = pa.array(values, type=typ)
    got = numpy_values(arr)
    assert got.dtype == values.dtype and got.tolist() == values.tolist()
    assert not got.flags.writeable  # a view of Arrow's buffer, as to_numpy gives
    # a slice starts at the array's offset in the buffer
    part = numpy_values(arr.slice(2, 3))
    assert part.dtype == values.dtype and part.tolist() == values[2:5].tolist()
    assert numpy_values(arr.slice(7, 0)).tolist() == [] and numpy_values(arr.slice(7, 0)).dtype == values.dtype


def test_chunked_arrays_and_parquet_columns():
    chunked = pa.chunked_array([pa.array([1, 2], pa.int64()), pa.array([3], pa.int64()), pa.array([], pa.int64())])
    assert numpy_values(chunked).tolist() == [1, 2, 3] and numpy_values(chunked).dtype == np.int64
    one = pa.chunked_array([pa.array([1.5, 2.5], pa.float32()).slice(1)])
    assert numpy_values(one).tolist() == [2.5] and numpy_values(one).dtype == np.float32
    assert numpy_values(pa.chunked_array([], pa.float64())).tolist() == []
    flat = pa.array([[1.0, 2.0], [3.0, 4.0]], pa.list_(pa.float32())).slice(1).flatten()
    assert numpy_values(flat).tolist() == [3.0, 4.0]
    offsets = pa.array([[1], [2, 3], []], pa.list_(pa.int64())).slice(1).offsets
    assert numpy_values(offsets).tolist() == [1, 3, 3]


def test_what_has_no_plain_buffer_goes_through_to_numpy():
    with_nulls = pa.array([1, None, 3], pa.int64())
    got = numpy_values(with_nulls)
    assert got[0] == 1 and np.isnan(got[1]) and got[2] == 3
    assert numpy_values(pa.array([True, False, True])).tolist() == [True, False, True]  # bit-packed
    assert numpy_values(pa.array(["a", "b"])).tolist() == ["a", "b"]


def test_reading_parquet_columns_does_not_import_pandas(tmp_path):
    # called here too, so that a mutation tool that picks tests by the functions they call runs this one
    assert numpy_values(pa.array([1], pa.int64())).tolist() == [1]
    path = tmp_path / "x.parquet"
    pq.write_table(pa.table({"i": pa.array(range(5), pa.int64()), "f": pa.array([0.5] * 5, pa.float32())}), path)
    code = (
        "import sys, pyarrow.parquet as pq\n"
        "from lerobot_tools._arrow_numpy import numpy_values\n"
        f"t = pq.ParquetFile({str(path)!r}).read()\n"
        "print(numpy_values(t.column('i')).sum(), numpy_values(t.column('f')).sum(), 'pandas' in sys.modules)\n"
        "t.column('i').to_numpy()\n"
        "print('pandas' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env=_child_env()).stdout.split("\n")
    # pyarrow's own to_numpy imports pandas where it is installed (the reason for numpy_values)
    pandas_installed = subprocess.run([sys.executable, "-c", "import pandas"], capture_output=True).returncode == 0
    assert out[0] == "10 2.5 False" and out[1] == str(pandas_installed)


def test_reshard_does_not_import_pandas(tmp_path):
    import shutil
    from pathlib import Path

    src = Path(__file__).resolve().parents[2] / "fixtures/datasets/broken_collapsed_row_group"
    shutil.copytree(src, tmp_path / "ds")
    probe = (
        "import sys\n"
        "from lerobot_tools.cli import main\n"
        "try:\n    main(sys.argv[1:])\nexcept SystemExit as exc:\n    print('EXIT', exc.code)\n"
        "print('PANDAS', 'pandas' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", probe, "reshard", str(tmp_path / "ds"), "--no-progress"],
                         capture_output=True, text=True, check=True, env=_child_env()).stdout
    assert "2 resharded" in out and out.strip().endswith("EXIT 0\nPANDAS False"), out


# ------------------------------------------------------------------ list_lengths / list_values
LIST_TYPES = [pa.list_(pa.float32()), pa.large_list(pa.float32()), pa.list_(pa.float32(), 3)]


@pytest.mark.parametrize("typ", LIST_TYPES, ids=str)
def test_list_lengths_and_values_match_pyarrow_compute_on_whole_and_sliced_arrays(typ):
    import pyarrow.compute as pc

    fixed = pa.types.is_fixed_size_list(typ)
    rows = [[float(i), i + 0.5, -i] if fixed else [float(i)] * (i % 4) for i in range(11)]
    arr = pa.array(rows, type=typ)
    for part in (arr, arr.slice(3, 5), arr.slice(10, 1), arr.slice(4, 0)):
        lengths = list_lengths(part)
        assert lengths.dtype == np.int64
        assert lengths.tolist() == pc.list_value_length(part).to_pylist()
        values = list_values(part)
        assert values.equals(pc.list_flatten(part)), part.offset  # honours the slice's offset into the child
        assert values.type == pa.float32()


@pytest.mark.parametrize("typ", LIST_TYPES, ids=str)
def test_list_lengths_is_none_for_nulls_and_for_other_types(typ):
    fixed = pa.types.is_fixed_size_list(typ)
    arr = pa.array([[1.0, 2.0, 3.0], None, [4.0, 5.0, 6.0] if fixed else [4.0]], type=typ)
    assert list_lengths(arr) is None  # a null row has no length (offsets would say 0)
    assert list_lengths(arr.slice(2, 1)).tolist() == [3 if fixed else 1]  # the null is outside the slice
    assert list_lengths(pa.array([1.0, 2.0])) is None
    assert list_lengths(pa.array(["a"])) is None
    with pytest.raises(TypeError, match="not a list array"):
        list_values(pa.array([1, 2]))


def test_validate_deep_of_list_columns_does_not_import_pyarrow_compute(tmp_path):
    from lerobot_tools.testing.synth import SynthSpec, build_dataset

    root = build_dataset(tmp_path / "ds", SynthSpec(episode_lengths=[30, 20], video_codec=None, video_keys=()))
    code = ("import sys\nfrom lerobot_tools.cli import main\n"
            f"sys.argv = ['lrtool', 'validate', '--deep', {str(root)!r}]\n"
            "try:\n    main()\nexcept SystemExit as e:\n    code = e.code\n"
            "print(code, 'pyarrow.compute' in sys.modules, 'pandas' in sys.modules)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=_child_env(), timeout=120)
    assert out.stdout.split()[-3:] == ["0", "False", "False"], out.stdout + out.stderr
