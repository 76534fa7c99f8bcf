"""``read_footer``: every fact the default checks take from a parquet footer, held to pyarrow's own reading of real
files, and each way a file can fail to give one.

Expected values come from ``pyarrow.parquet.read_metadata`` on the same file, never from lrtool.
"""

from __future__ import annotations

import os
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from lerobot_tools.dataset.footers import FooterInfo, RowGroupInfo, read_footer
from lerobot_tools.errors import DatasetError, one_line


def _table(rows: int = 30) -> pa.Table:
    return pa.table({
        "observation.state": pa.array([[float(i), float(-i)] for i in range(rows)], pa.list_(pa.float32())),
        "episode_index": pa.array([i // 10 for i in range(rows)], pa.int64()),
        "frame_index": pa.array([i % 10 for i in range(rows)], pa.int64()),
        "index": pa.array(range(100, 100 + rows), pa.int64()),
        "task_index": pa.array([7] * rows, pa.int64()),
    })


def test_every_fact_of_a_multi_row_group_file(tmp_path):
    path = tmp_path / "f.parquet"
    table = _table().replace_schema_metadata({"huggingface": '{"info": 1}', "other": "x"})
    # the list column's leaf zstd, the others left uncompressed
    pq.write_table(table, path, row_group_size=10, compression={"observation.state.list.element": "zstd"})
    md = pq.read_metadata(path)
    f = read_footer(path, "data/f.parquet")
    assert (f.num_rows, f.created_by) == (30, md.created_by) and f.created_by.startswith("parquet-cpp-arrow")
    assert f.compression == "ZSTD"  # the first column chunk's codec (observation.state), not a later one's
    assert md.row_group(0).column(4).compression == "UNCOMPRESSED"
    assert f.schema.names == table.schema.names
    assert f.metadata == {"huggingface": '{"info": 1}', "other": "x"}
    assert len(f.row_groups) == 3
    for r, rg in enumerate(f.row_groups):
        m = md.row_group(r)
        assert rg.num_rows == 10
        assert rg.uncompressed_bytes == m.total_byte_size
        assert rg.compressed_bytes == sum(m.column(c).total_compressed_size for c in range(m.num_columns))
        assert rg.compressed_bytes > m.column(0).total_compressed_size  # every column counts, not the last one
        assert rg.page_index is False  # pyarrow writes no page index unless asked
        # the four index columns, found at their leaf positions behind a list column (two leaves before them)
        assert rg.minmax == {"episode_index": (r, r), "frame_index": (0, 9), "index": (100 + 10 * r, 109 + 10 * r),
                             "task_index": (7, 7)}
    assert f.column_minmax("index") == (100, 129)
    assert f.column_minmax("episode_index") == (0, 2)
    assert f.column_minmax("observation.state") is None  # not an index column: no statistics collected
    for r, rg in enumerate(f.row_groups):  # minmax_of reads the same facts without building the dict
        assert [rg.minmax_of(c) for c in ("episode_index", "frame_index", "index", "task_index", "timestamp")] == \
            [(r, r), (0, 9), (100 + 10 * r, 109 + 10 * r), (7, 7), None]


def test_row_group_info_equality_and_repr():
    a = RowGroupInfo(5, 10, 4, True, {"index": (0, 4), "episode_index": (1, 1)})
    assert a == RowGroupInfo(5, 10, 4, True, {"episode_index": (1, 1), "index": (0, 4)})  # key order is no fact
    for other in (RowGroupInfo(6, 10, 4, True, a.minmax), RowGroupInfo(5, 11, 4, True, a.minmax),
                  RowGroupInfo(5, 10, 5, True, a.minmax), RowGroupInfo(5, 10, 4, False, a.minmax),
                  RowGroupInfo(5, 10, 4, True, {"index": (0, 4)}),
                  RowGroupInfo(5, 10, 4, True, {"index": (0, 5), "episode_index": (1, 1)})):
        assert a != other
    assert a != (5, 10, 4, True) and RowGroupInfo(0, 0, 0, False) == RowGroupInfo(0, 0, 0, False, {})
    assert RowGroupInfo(0, 0, 0, False).minmax == {} and RowGroupInfo(0, 0, 0, False).minmax_of("index") is None
    # a string index column (hostile data) whose min/max are other columns' names: only names are looked up
    odd = RowGroupInfo(1, 1, 1, False, {"episode_index": ("frame_index", "index")})
    assert odd.minmax_of("frame_index") is None and odd.minmax_of("index") is None
    assert odd.minmax_of("episode_index") == ("frame_index", "index")
    assert repr(a) == ("RowGroupInfo(num_rows=5, uncompressed_bytes=10, compressed_bytes=4, page_index=True, "
                       "minmax={'index': (0, 4), 'episode_index': (1, 1)})")


def test_page_index_needs_both_indexes_on_every_column_chunk(tmp_path):
    path = tmp_path / "f.parquet"
    pq.write_table(_table(), path, row_group_size=10, write_page_index=True)
    assert [rg.page_index for rg in read_footer(path).row_groups] == [True, True, True]
    one = tmp_path / "one.parquet"
    pq.write_table(_table().select(["index"]), one, write_page_index=True)
    assert [rg.page_index for rg in read_footer(one).row_groups] == [True]  # a single column chunk is enough
    # a file of 0 columns has no column chunk to carry an index: not "every chunk has one"
    empty = tmp_path / "empty.parquet"
    pq.write_table(pa.table({}), empty)
    assert read_footer(empty).row_groups in ([], [RowGroupInfo(0, 0, 0, False, {})])


def test_row_groups_without_statistics_and_empty_row_groups(tmp_path):
    path = tmp_path / "f.parquet"
    pq.write_table(_table(), path, row_group_size=10, write_statistics=["index"])
    f = read_footer(path)
    assert [rg.minmax for rg in f.row_groups] == [{"index": (100 + 10 * r, 109 + 10 * r)} for r in range(3)]
    assert f.column_minmax("episode_index") is None  # a row group without statistics: the whole file unknown
    # an empty row group among others is skipped, not "unknown"; a file of empty groups only has no range
    with pq.ParquetWriter(tmp_path / "g.parquet", _table().schema) as w:
        w.write_table(_table().slice(0, 0))
        w.write_table(_table().slice(10, 10))
        w.write_table(_table().slice(0, 0))
        w.write_table(_table().slice(25, 5))
    f = read_footer(tmp_path / "g.parquet")
    sizes = [rg.num_rows for rg in f.row_groups]
    assert sizes.count(0) >= 1 and sum(sizes) == 15, sizes
    assert f.column_minmax("index") == (110, 129)
    assert f.column_minmax("frame_index") == (0, 9)
    only_empty = FooterInfo(0, None, {}, [RowGroupInfo(0, 0, 0, False, {})], None, None)
    assert only_empty.column_minmax("index") is None
    # the smallest minimum and the largest maximum, whichever group holds them
    groups = [RowGroupInfo(5, 0, 0, False, {"index": (50, 60)}), RowGroupInfo(5, 0, 0, False, {"index": (10, 20)}),
              RowGroupInfo(5, 0, 0, False, {"index": (30, 40)})]
    assert FooterInfo(15, None, {}, groups, None, None).column_minmax("index") == (10, 60)


def test_key_value_metadata_that_is_not_utf8_is_left_out(tmp_path):
    path = tmp_path / "f.parquet"
    table = _table().replace_schema_metadata({b"bad": b"\xff\xfe", b"\xc3": b"v", b"huggingface": b"{}"})
    pq.write_table(table, path)
    meta = read_footer(path).metadata
    assert meta["huggingface"] == "{}"  # read after the undecodable entries (they are skipped, not the end)
    assert meta == {"huggingface": "{}"}


@pytest.mark.parametrize("make,message", [
    (lambda p: None, "file is missing"),
    (lambda p: p.write_bytes(b"PAR1 not really parquet PAR1"), "not a readable parquet file ("),
    (lambda p: p.write_text("version https://git-lfs.github.com/spec/v1\n"), "not a readable parquet file ("),
], ids=["missing", "corrupt", "lfs-pointer"])
def test_unreadable_files_raise_one_line_naming_the_file(tmp_path, make, message):
    path = tmp_path / "f.parquet"
    make(path)
    with pytest.raises(DatasetError) as err:
        read_footer(path, "data/chunk-000/f.parquet")
    assert err.value.path == "data/chunk-000/f.parquet"
    assert err.value.message.startswith(message) and "\n" not in err.value.message
    if message.endswith("("):  # pyarrow's own words, on one line, inside the parentheses
        try:
            pq.read_metadata(path)
        except Exception as exc:  # noqa: BLE001 - whatever pyarrow raises is what the message carries
            assert err.value.message == f"{message}{one_line(exc, 160)})"
        else:
            raise AssertionError("pyarrow read the file")
    # without a relative name the path itself is named
    with pytest.raises(DatasetError) as err:
        read_footer(path)
    assert err.value.path == str(path)


@pytest.mark.skipif(os.name != "posix", reason="bytes file names")
def test_a_path_that_is_not_utf8_is_named_as_such(tmp_path):
    folder = Path(os.fsdecode(os.fsencode(tmp_path) + b"/caf\xe9"))
    folder.mkdir()
    path = folder / "f.parquet"
    with open(path, "wb") as fh:  # pyarrow cannot open the name itself, which is the point
        pq.write_table(_table(), fh)
    with pytest.raises(DatasetError) as err:
        read_footer(path, "data/f.parquet")
    assert err.value.path == "data/f.parquet"
    assert err.value.message == ("path is not valid UTF-8, so pyarrow (and every loader built on it, lerobot's "
                                 "included) cannot open the file; rename the folder or file")
