"""``lerobot_tools.reshard.verify`` on its own: real parquet files written with pyarrow, a planned layout, and a
candidate that is right or wrong in exactly one way. Complements tests/reshard/test_verifiers.py (which goes through
``reshard_file``) with exact messages, the size-limit re-plan signal, per-column codecs, list-typed episode
indices and the content comparison's edge cases (NaN payloads, nulls, list boundaries, structs, batch seams).
"""

from __future__ import annotations

import re
import struct
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from lerobot_tools.reshard.model import PlannedGroup, ReshardOptions, VerifyError, Oversize
from lerobot_tools._arrow_equal import values_equal
from lerobot_tools.reshard.verify import _compare_content, verify_rewrite

LENGTHS = (3, 4, 2)  # episodes 0, 1, 2


def _table(list_episode: bool = False) -> pa.Table:
    n = sum(LENGTHS)
    ep = [e for e, k in enumerate(LENGTHS) for _ in range(k)]
    cols = {
        "episode_index": pa.array([[e] for e in ep], pa.list_(pa.int64())) if list_episode else pa.array(ep, pa.int64()),
        "x": pa.array(np.linspace(0, 1, n), pa.float32()),
        "v": pa.array([[float(i), float(-i)] for i in range(n)], pa.list_(pa.float32())),
        "name": pa.array([f"row{i}" for i in range(n)]),
    }
    t = pa.table(cols)
    return t.replace_schema_metadata({b"huggingface": b'{"info": {"features": {"x": {}}}}'})


def _groups(est: int = 10**6) -> list[PlannedGroup]:
    out, start = [], 0
    for e, k in enumerate(LENGTHS):
        out.append(PlannedGroup(e, start, k, est))
        start += k
    return out


def _write(path: Path, t: pa.Table, sizes=LENGTHS, **kw) -> Path:
    kw.setdefault("write_page_index", True)
    with pq.ParquetWriter(path, t.schema, **kw) as w:
        off = 0
        for n in sizes:
            w.write_table(t.slice(off, n), row_group_size=max(1, n))
            off += n
    return path


@pytest.fixture
def files(tmp_path):
    t = _table()
    original = _write(tmp_path / "orig.parquet", t, sizes=(sum(LENGTHS),), write_page_index=False)
    return original, t, tmp_path


def _refused(original, candidate, groups=None, options=None, **kw) -> str:
    with pytest.raises(VerifyError) as exc:
        verify_rewrite(original, candidate, groups or _groups(), options or ReshardOptions(), **kw)
    return str(exc.value)


def test_a_faithful_rewrite_passes(files):
    original, t, tmp = files
    verify_rewrite(original, _write(tmp / "new.parquet", t), _groups(), ReshardOptions())


# ------------------------------------------------------------------------------------------- exact messages
def test_messages_of_each_refusal(files):
    original, t, tmp = files
    cand = tmp / "new.parquet"
    _write(cand, t.slice(0, 8), sizes=(3, 4, 1))
    assert _refused(original, cand) == "verification failed: 8 rows written, 9 expected"
    _write(cand, t.replace_schema_metadata({b"huggingface": b"{}"}))
    assert _refused(original, cand) == "verification failed: the Arrow schema or its metadata changed"
    with pq.ParquetWriter(cand, t.schema, write_page_index=True) as w:
        w.write_table(t, row_group_size=3)
        w.add_key_value_metadata({"k": "v"})
    assert _refused(original, cand) == "verification failed: the parquet key-value metadata changed"
    _write(cand, t, sizes=(7, 2))
    assert _refused(original, cand) == "verification failed: 2 row groups written, 3 planned"
    _write(cand, t, sizes=(3, 3, 3))
    assert _refused(original, cand) == "verification failed: row group 1 has 3 rows, 4 planned"
    _write(cand, t, write_page_index=False)
    assert _refused(original, cand) == "verification failed: row group 0 column episode_index has no page index"
    ep = t.column("episode_index").to_pylist()
    ep[3:7] = [5] * 4
    _write(cand, t.set_column(0, t.schema.field(0), pa.array(ep, pa.int64())))
    assert _refused(original, cand) == "verification failed: row group 1 does not hold exactly episode 1"
    names = t.column("name").to_pylist()
    names[4] = "changed"
    _write(cand, t.set_column(3, t.schema.field(3), pa.array(names)))
    assert _refused(original, cand) == "verification failed: column name differs in rows 0-8"
    assert _refused(original, cand, batch_rows=2) == "verification failed: column name differs in rows 4-5"


def test_equal_min_max_of_another_episode_is_refused_only_where_it_differs(files):
    """Statistics min == max == 1 in group 1 pass; min == max == 7 in group 2 (planned 2) do not."""
    original, t, tmp = files
    ep = t.column("episode_index").to_pylist()
    ep[7:] = [7, 7]
    cand = _write(tmp / "new.parquet", t.set_column(0, t.schema.field(0), pa.array(ep, pa.int64())))
    assert _refused(original, cand) == "verification failed: row group 2 does not hold exactly episode 2"


def test_list_typed_episode_index_is_checked_through_its_leaf(tmp_path):
    """``episode_index`` stored as ``list<int64>`` (a [1]-shaped feature): its leaf column's statistics are used."""
    t = _table(list_episode=True)
    original = _write(tmp_path / "orig.parquet", t, sizes=(9,), write_page_index=False)
    verify_rewrite(original, _write(tmp_path / "ok.parquet", t), _groups(), ReshardOptions())
    ep = t.column("episode_index").to_pylist()
    ep[3] = [0]  # group 1 now spans episodes 0 and 1
    bad = _write(tmp_path / "bad.parquet", t.set_column(0, t.schema.field(0), pa.array(ep, t.schema.field(0).type)))
    assert _refused(original, bad) == "verification failed: row group 1 does not hold exactly episode 1"


# ------------------------------------------------------------------------------------------------- codecs
def test_codec_per_column_when_the_writer_was_asked_for_one(files):
    original, t, tmp = files
    cand = _write(tmp / "new.parquet", t, compression={"episode_index": "snappy", "x": "zstd", "v.list.element": "gzip",
                                                        "name": "none"})
    ok = {"compression": {"episode_index": "snappy", "x": "zstd", "v.list.element": "gzip", "name": "none"}}
    verify_rewrite(original, cand, _groups(), ReshardOptions(), writer_kwargs=ok)
    verify_rewrite(original, cand, _groups(), ReshardOptions(), writer_kwargs={"compression": {"x": "zstd"}})
    verify_rewrite(original, cand, _groups(), ReshardOptions(), writer_kwargs={"compression": "brotli"})  # not per column
    verify_rewrite(original, cand, _groups(), ReshardOptions(), writer_kwargs=None)
    msg = _refused(original, cand, writer_kwargs={"compression": {"x": "snappy"}})
    assert msg == "verification failed: column x written as ZSTD, snappy expected", msg
    msg = _refused(original, cand, writer_kwargs={"compression": {"name": "gzip"}})
    assert msg == "verification failed: column name written as UNCOMPRESSED, gzip expected", msg


# -------------------------------------------------------------------------------------------- size limit
def _sizes(path: Path) -> list[int]:
    md = pq.ParquetFile(path).metadata
    return [md.row_group(i).total_byte_size for i in range(md.num_row_groups)]


def test_oversize_groups_ask_for_a_replan_with_the_worst_ratio(files):
    original, t, tmp = files
    cand = _write(tmp / "new.parquet", t)
    sizes = _sizes(cand)
    big = max(sizes)
    j = sizes.index(big)
    # limit just below the largest group: only it is over; estimates make group j the worst ratio
    opts = ReshardOptions(row_group_mb=(big - 1) / 2**20)
    groups = _groups(est=100)
    groups[j].est_bytes = 10
    with pytest.raises(Oversize) as exc:
        verify_rewrite(original, cand, groups, opts)
    assert exc.value.worst == big and exc.value.ratio == pytest.approx(big / 10)
    # several groups over the limit: the worst ratio wins, not the largest group
    small = min(s for k, s in enumerate(sizes) if k != j)
    k = sizes.index(small)
    opts = ReshardOptions(row_group_mb=(small - 1) / 2**20)
    groups = _groups(est=10**6)
    groups[k].est_bytes = 1
    with pytest.raises(Oversize) as exc:
        verify_rewrite(original, cand, groups, opts)
    assert exc.value.worst == small and exc.value.ratio == pytest.approx(small)
    # an estimate of 0 counts as 1 byte
    groups[k].est_bytes = 0
    with pytest.raises(Oversize) as exc:
        verify_rewrite(original, cand, groups, opts)
    assert exc.value.ratio == pytest.approx(small)


def test_a_group_exactly_at_the_limit_or_of_one_row_is_not_oversize(files, tmp_path):
    original, t, tmp = files
    cand = _write(tmp / "new.parquet", t)
    verify_rewrite(original, cand, _groups(), ReshardOptions(row_group_mb=max(_sizes(cand)) / 2**20))
    rows = np.random.default_rng(2).normal(size=(3, 1000)).tolist()
    one = pa.table({"episode_index": pa.array([0, 1, 2], pa.int64()), "blob": pa.array(rows)})
    o = _write(tmp_path / "o1.parquet", one, sizes=(3,), write_page_index=False)
    c = _write(tmp_path / "c1.parquet", one, sizes=(1, 1, 1), use_dictionary=False)
    assert min(_sizes(c)) > 1000  # every group is above the limit below
    groups = [PlannedGroup(e, e, 1, 1) for e in range(3)]
    verify_rewrite(o, c, groups, ReshardOptions(row_group_mb=1000 / 2**20))  # every group is one row: allowed


# ---------------------------------------------------------------------------------------- content comparison
def _nan(payload: int) -> float:
    return struct.unpack("<d", struct.pack("<Q", 0x7FF8000000000000 | payload))[0]


@pytest.mark.parametrize("a,b,equal", [
    (pa.array([1.0, _nan(1), 3.0]), pa.array([1.0, _nan(2), 3.0]), True),  # NaN == NaN whatever the payload
    (pa.array([1.0, None, 3.0]), pa.array([1.0, None, 3.0]), True),
    (pa.array([1.0, None, float("nan")]), pa.array([1.0, None, float("nan")]), True),
    (pa.array([1.0, None, float("nan")]), pa.array([1.0, 0.0, float("nan")]), False),  # null vs 0: not equal
    (pa.array([None, 0.0, float("nan")]), pa.array([0.0, None, float("nan")]), False),  # same count, other place
    (pa.array([1.0, 2.0, float("nan")]), pa.array([1.0, 2.5, float("nan")]), False),
    (pa.array([1.0, float("nan")]), pa.array([1.0, float("nan")], pa.float32()), False),  # type differs
    (pa.array([1.0, float("nan")]), pa.array([1.0, float("nan"), 1.0]), False),  # length differs
    (pa.array([[1.0, float("nan")], [3.0]]), pa.array([[1.0, float("nan")], [3.0]]), True),
    (pa.array([[1.0, float("nan")], [3.0]]), pa.array([[1.0], [float("nan"), 3.0]]), False),  # same values, other rows
    (pa.array([[float("nan")], None]), pa.array([[float("nan")], []], pa.list_(pa.float64())), False),  # null vs []
    (pa.array([[float("nan")], []], pa.large_list(pa.float64())),
     pa.array([[float("nan")], []], pa.large_list(pa.float64())), True),
    (pa.array([[float("nan"), 1.0]], pa.list_(pa.float64(), 2)), pa.array([[float("nan"), 1.0]], pa.list_(pa.float64(), 2)),
     True),
    (pa.array([[float("nan"), 1.0]], pa.list_(pa.float64(), 2)), pa.array([[float("nan"), 2.0]], pa.list_(pa.float64(), 2)),
     False),
    (pa.array([{"a": float("nan"), "b": 1}]), pa.array([{"a": float("nan"), "b": 1}]), True),
    (pa.array([{"a": float("nan"), "b": 1}]), pa.array([{"a": float("nan"), "b": 2}]), False),
    (pa.array([{"a": float("nan"), "b": 1}]), pa.array([{"a": 0.0, "b": 1}]), False),
    (pa.array(["a", "b"]), pa.array(["a", "c"]), False),
    (pa.array([1, 2]), pa.array([1, 2]), True),
])
def testvalues_equal(a, b, equal):
    assert values_equal(a, b) is equal
    assert values_equal(b, a) is equal


@pytest.mark.parametrize("batch_rows", [1, 2, 4, 4096])
def test_content_comparison_across_batch_seams(tmp_path, batch_rows):
    """Original and candidate with different row-group boundaries (pyarrow's record batches run across row groups,
    so both sides are read in batches of ``batch_rows``): equal content passes at every batch size; one changed
    value is located to its batch."""
    t = pa.table({"episode_index": pa.array([0] * 5 + [1] * 4, pa.int64()),
                  "x": pa.array([0.5, float("nan"), 2.0, 3.0, 4.0, 5.0, None, 7.0, 8.0])})
    a = _write(tmp_path / "a.parquet", t, sizes=(2, 5, 2))
    b = _write(tmp_path / "b.parquet", t, sizes=(5, 4))
    assert _compare_content(a, b, batch_rows) == 9
    x = t.column("x").to_pylist()
    x[6] = 6.0  # was null
    c = _write(tmp_path / "c.parquet", t.set_column(1, t.schema.field(1), pa.array(x)), sizes=(5, 4))
    with pytest.raises(VerifyError) as exc:
        _compare_content(a, c, batch_rows)
    m = re.fullmatch(r"verification failed: column x differs in rows (\d+)-(\d+)", str(exc.value))
    assert m and int(m.group(1)) <= 6 <= int(m.group(2)), str(exc.value)
    if batch_rows == 1:
        assert (m.group(1), m.group(2)) == ("6", "6")


def test_content_comparison_with_empty_row_groups(tmp_path):
    """Empty record batches (a row group of 0 rows) are skipped on either side."""
    t = pa.table({"episode_index": pa.array([0, 0, 1], pa.int64()), "x": pa.array([1.0, 2.0, 3.0])})
    a = _write(tmp_path / "a.parquet", t, sizes=(3,))
    b = tmp_path / "b.parquet"
    with pq.ParquetWriter(b, t.schema) as w:
        w.write_table(t.slice(0, 2))
        w.write_table(t.slice(2, 0))
        w.write_table(t.slice(2, 1))
    assert [pq.ParquetFile(b).metadata.row_group(i).num_rows for i in range(pq.ParquetFile(b).metadata.num_row_groups)] \
        in ([2, 0, 1], [2, 1])
    assert _compare_content(a, b, 1) == 3
    assert _compare_content(b, a, 2) == 3


@pytest.mark.parametrize("typ", [pa.list_(pa.float64()), pa.large_list(pa.float64()), pa.list_view(pa.float64())])
def test_lists_with_nulls_in_the_same_rows_and_nan(typ):
    """Null lists in the same rows and NaN inside: equal (lengths compared with the nulls filled alike); one element
    more in a row, or a value changed: not equal. ``list_view`` (Arrow >= 16) is compared like ``list``."""
    nan = float("nan")
    a = pa.array([[nan, 1.0], None, [3.0]], typ)
    assert values_equal(a, pa.array([[nan, 1.0], None, [3.0]], typ)) is True
    assert values_equal(a, pa.array([[nan, 1.0], None, [4.0]], typ)) is False
    assert values_equal(a, pa.array([[nan], None, [1.0, 3.0]], typ)) is False


# ------------------------------------------------------------------------------------------- unreadable pages
def _corrupt_pages(path: Path, column: str) -> None:
    """Overwrite the page header of ``column``'s first page in row group 0 (footer intact)."""
    md = pq.ParquetFile(path).metadata
    rg = md.row_group(0)
    col = next(rg.column(c) for c in range(rg.num_columns) if rg.column(c).path_in_schema == column)
    start = col.dictionary_page_offset if col.has_dictionary_page else col.data_page_offset
    size = col.total_compressed_size
    data = bytearray(path.read_bytes())
    for k in range(start, start + min(size, 16)):
        data[k] = 0xFF
    path.write_bytes(bytes(data))


def test_unreadable_pages_of_either_file_are_named(tmp_path):
    from lerobot_tools.reshard.read import ReadError

    t = pa.table({"episode_index": pa.array([0] * 200, pa.int64()),
                  "x": pa.array(np.random.default_rng(0).normal(size=200))})
    good = _write(tmp_path / "good.parquet", t, sizes=(200,))
    bad = _write(tmp_path / "bad.parquet", t, sizes=(200,), use_dictionary=False)
    _corrupt_pages(bad, "x")
    with pytest.raises(ReadError) as exc:
        _compare_content(good, bad, 64)
    assert str(exc.value).startswith("cannot read the new file back (verification failed) ("), str(exc.value)
    with pytest.raises(ReadError) as exc:
        _compare_content(bad, good, 64)
    assert str(exc.value).startswith("cannot read the data pages ("), str(exc.value)


# ------------------------------------------------------------------------------------------ more layout cases
def test_equal_ratios_keep_the_first_oversize_group(files):
    """Two groups over the limit measured at exactly their estimates (ratio 1.0): the first one is reported."""
    original, t, tmp = files
    cand = _write(tmp / "new.parquet", t)
    sizes = _sizes(cand)
    groups = _groups()
    for g, s in zip(groups, sizes):
        g.est_bytes = s
    with pytest.raises(Oversize) as exc:
        verify_rewrite(original, cand, groups, ReshardOptions(row_group_mb=(min(sizes) - 1) / 2**20))
    assert exc.value.ratio == 1.0 and exc.value.worst == sizes[0], (sizes, exc.value.worst)


def test_a_two_row_group_above_the_limit_is_oversize(tmp_path):
    rows = np.random.default_rng(1).normal(size=(3, 1000)).tolist()
    t = pa.table({"episode_index": pa.array([0, 1, 1], pa.int64()), "blob": pa.array(rows)})
    o = _write(tmp_path / "o.parquet", t, sizes=(3,), write_page_index=False)
    c = _write(tmp_path / "c.parquet", t, sizes=(1, 2), use_dictionary=False)
    assert min(_sizes(c)) > 1000
    groups = [PlannedGroup(0, 0, 1, 100), PlannedGroup(1, 1, 2, 100)]
    with pytest.raises(Oversize) as exc:
        verify_rewrite(o, c, groups, ReshardOptions(row_group_mb=1000 / 2**20))
    assert exc.value.worst == _sizes(c)[1]


def test_a_file_without_episode_index_is_checked_without_it(tmp_path):
    t = pa.table({"frame_index": pa.array([0, 1, 2, 0, 1], pa.int64()), "x": pa.array([1.0, 2.0, 3.0, 4.0, 5.0])})
    o = _write(tmp_path / "o.parquet", t, sizes=(5,), write_page_index=False)
    c = _write(tmp_path / "c.parquet", t, sizes=(3, 2))
    verify_rewrite(o, c, [PlannedGroup(0, 0, 3, 100), PlannedGroup(1, 3, 2, 100)], ReshardOptions())


def test_no_statistics_means_no_page_index(files):
    """Without statistics pyarrow writes the offset index but no column index: that is a missing page index."""
    original, t, tmp = files
    cand = _write(tmp / "new.parquet", t, write_statistics=False)
    col = pq.ParquetFile(cand).metadata.row_group(0).column(0)
    assert col.has_offset_index and not col.has_column_index
    assert _refused(original, cand) == "verification failed: row group 0 column episode_index has no page index"


def test_a_group_whose_episode_index_is_all_null_is_refused(files):
    original, t, tmp = files
    ep = t.column("episode_index").to_pylist()
    ep[3:7] = [None] * 4
    cand = _write(tmp / "new.parquet", t.set_column(0, t.schema.field(0), pa.array(ep, pa.int64())))
    st = pq.ParquetFile(cand).metadata.row_group(1).column(0).statistics
    assert st is not None and not st.has_min_max
    assert _refused(original, cand) == "verification failed: row group 1 does not hold exactly episode 1"


def test_content_comparison_of_different_lengths_with_a_partial_batch(tmp_path):
    """5 rows against 4 in batches of 3: the original's second batch (2 rows) is compared with the new file's last
    row, and its remaining row is what makes the lengths differ (not a value)."""
    t = pa.table({"episode_index": pa.array([0, 0, 1, 1, 1], pa.int64()), "x": pa.array([1.0, 2.0, 3.0, 4.0, 5.0])})
    a = _write(tmp_path / "a.parquet", t, sizes=(5,))
    b = _write(tmp_path / "b.parquet", t.slice(0, 4), sizes=(4,))
    for first, second in ((a, b), (b, a)):
        with pytest.raises(VerifyError) as exc:
            _compare_content(first, second, 3)
        assert str(exc.value) == "verification failed: the files differ in row count after 4 rows"
