"""v3.0 episode metadata files are read once: the statistics columns the episode read decoded are handed to the
statistics stream (``lerobot_tools.dataset.episode_tables``), gathered, budgeted, once each, and never stale.

Real parquet files (a synthetic v3.0 dataset whose episode metadata is split into one small file per episode, as
lerobot writes one per recording session)."""

from __future__ import annotations

import threading
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from lerobot_tools.checks.stats import blocks as sb
from lerobot_tools.dataset import episode_tables as et
from lerobot_tools.dataset.model import Dataset
from lerobot_tools.testing.synth import SynthSpec, build_dataset
from lerobot_tools.validate import validate

EPS = "meta/episodes/chunk-000"


def _split(tmp_path: Path, episodes: int = 6) -> tuple[Path, pa.Table]:
    """A v3.0 dataset whose episode metadata is one file per episode; returns it and the whole table."""
    root = build_dataset(tmp_path / "ds", SynthSpec(episode_lengths=[12] * episodes, video_codec=None,
                                                    video_keys=(), episodes_per_file=episodes))
    files = sorted((root / EPS).glob("*.parquet"))
    whole = pa.concat_tables([pq.read_table(f) for f in files])
    for f in files:
        f.unlink()
    for i in range(whole.num_rows):
        pq.write_table(whole.slice(i, 1), root / EPS / f"file-{i:03d}.parquet")
    return root, whole


def _count_opens(monkeypatch) -> list[str]:
    opened: list[str] = []
    real = pq.ParquetFile

    class Counting(real):
        def __init__(self, source, *a, **kw):
            opened.append(Path(source).as_posix())
            super().__init__(source, *a, **kw)

    monkeypatch.setattr(pq, "ParquetFile", Counting)
    return opened


def _stats_of(table: pa.Table) -> pa.Table:
    return table.select(["episode_index", *[n for n in table.column_names if n.startswith("stats/")]])


def test_validate_opens_each_small_episodes_file_once_and_finds_the_same(tmp_path, monkeypatch):
    root, _ = _split(tmp_path)
    opened = _count_opens(monkeypatch)
    (report,) = validate([str(root)])
    episode_opens = [p for p in opened if "/meta/episodes/" in p]
    assert len(episode_opens) == 6 and len(set(episode_opens)) == 6  # was twice each: rows, then statistics
    assert not [f for f in report.findings if f.severity == "error"]
    monkeypatch.setattr(et, "MAX_FILE_BYTES", 0)  # nothing kept: every file read again by the statistics
    opened.clear()
    (again,) = validate([str(root)])
    assert len([p for p in opened if "/meta/episodes/" in p]) == 12
    assert [(f.check, f.message) for f in again.findings] == [(f.check, f.message) for f in report.findings]


def test_the_statistics_stream_gets_what_the_episode_read_kept(tmp_path, monkeypatch):
    root, whole = _split(tmp_path)
    monkeypatch.setattr(et, "GATHER_FILES", 4)  # two groups: 4 files, then 2
    ds = Dataset(root)
    assert len(ds.episodes) == 6
    opened = _count_opens(monkeypatch)
    blocks = list(sb.StatsBlocks(ds))
    assert opened == []
    got = pa.concat_tables([pa.table({"episode_index": b.episodes}) for b in blocks])
    assert got.column("episode_index").to_pylist() == list(range(6))
    mean = whole.column("stats/action/mean").to_pylist()
    assert [row for b in blocks for row in b.features["action"]["mean"].values.tolist()] == mean
    assert ds.stats_tables.take(f"{EPS}/file-000.parquet", root / EPS / "file-000.parquet") is None  # once


def test_a_file_rewritten_after_the_episode_read_is_read_again(tmp_path):
    root, whole = _split(tmp_path)
    ds = Dataset(root)
    ds.episodes  # keeps every file's statistics
    rel = f"{EPS}/file-002.parquet"
    t = pq.read_table(root / rel)
    i = t.schema.get_field_index("stats/action/mean")
    t = t.set_column(i, "stats/action/mean", pa.array([[9.5] * 6], t.schema.field(i).type))
    pq.write_table(t, root / rel)  # what repair does between its plan and its check
    blocks = list(sb.StatsBlocks(ds))
    means = [row for b in blocks for row in b.features["action"]["mean"].values.tolist()]
    assert means[2] == [9.5] * 6 and means[1] == whole.column("stats/action/mean")[1].as_py()


def _tables(n: int, rows: int = 2, typ=pa.float64()) -> list[pa.Table]:
    return [pa.table({"episode_index": pa.array([rows * i + k for k in range(rows)], pa.int64()),
                      "stats/a/mean": pa.array([[float(i), float(k)] for k in range(rows)], pa.list_(typ))})
            for i in range(n)]


def _keep_all(store: et.EpisodeStatsTables, tmp_path: Path, tables: list[pa.Table]) -> list[Path]:
    paths = []
    for i, t in enumerate(tables):
        p = tmp_path / f"f{i}.parquet"
        p.write_bytes(b"x" * (i + 1))
        ident = store.wants(p)
        assert ident is not None
        store.keep(f"f{i}", ident, t, [t.num_rows])
        paths.append(p)
    return paths


def test_tables_are_gathered_by_schema_and_handed_out_once_as_equal_slices(tmp_path, monkeypatch):
    monkeypatch.setattr(et, "GATHER_FILES", 3)
    store = et.EpisodeStatsTables()
    tables = _tables(4) + _tables(2, typ=pa.float32())  # another schema starts another group
    paths = _keep_all(store, tmp_path, tables)
    # gathered when 3 files are pending and when the schema changes; the last 2 wait for a take
    assert [g[1] for g in store._groups.values()] == [3, 1] and len(store._pending) == 2
    assert store.take("nowhere", tmp_path / "nowhere") is None
    for i in (5, 0, 3, 1, 2, 4):
        got, group_rows = store.take(f"f{i}", paths[i])
        assert got.equals(tables[i]) and group_rows == [2]
        assert store.take(f"f{i}", paths[i]) is None
    assert store._groups == {} and store._bytes == 0  # every group handed out: nothing held


def test_a_changed_file_is_not_handed_out(tmp_path):
    store = et.EpisodeStatsTables()
    paths = _keep_all(store, tmp_path, _tables(2))
    paths[0].write_bytes(b"longer now")
    assert store.take("f0", paths[0]) is None
    paths[1].unlink()
    assert store.take("f1", paths[1]) is None


def test_large_files_and_the_budget(tmp_path, monkeypatch):
    store = et.EpisodeStatsTables()
    big = tmp_path / "big"
    big.write_bytes(b"x" * 11)
    monkeypatch.setattr(et, "MAX_FILE_BYTES", 10)
    assert store.wants(big) is None and store.wants(tmp_path / "missing") is None
    monkeypatch.setattr(et, "MAX_FILE_BYTES", 4 * 2**20)
    tables = _tables(3, rows=200)
    size = pa.concat_tables(tables).combine_chunks().get_total_buffer_size()
    monkeypatch.setattr(et, "MAX_TOTAL_BYTES", size - 1)  # one gathered group too many: not kept
    paths = _keep_all(store, tmp_path, tables)
    assert [store.take(f"f{i}", paths[i]) for i in range(3)] == [None, None, None]
    monkeypatch.setattr(et, "MAX_TOTAL_BYTES", size)
    paths = _keep_all(store, tmp_path, tables)
    assert store.take("f0", paths[0])[0].equals(tables[0])
    assert store.wants(paths[0]) is None  # the budget is spent until the group is handed out
    store.take("f1", paths[1]), store.take("f2", paths[2])
    assert store.wants(paths[0]) is not None


def test_concurrent_takes_hand_out_each_table_once(tmp_path, monkeypatch):
    monkeypatch.setattr(et, "GATHER_FILES", 8)
    store = et.EpisodeStatsTables()
    tables = _tables(40)
    paths = _keep_all(store, tmp_path, tables)
    got: list[int] = []
    lock = threading.Lock()

    def worker(ids):
        for i in ids:
            t = store.take(f"f{i}", paths[i])
            if t is not None:
                assert t[0].equals(tables[i])
                with lock:
                    got.append(i)

    threads = [threading.Thread(target=worker, args=(list(range(40)),)) for _ in range(4)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert sorted(got) == list(range(40)) and store._groups == {} and store._bytes == 0


@pytest.mark.parametrize("block_rows,opens", [(512, []), (1, ["file-001.parquet"])])
def test_a_kept_file_of_several_chunks_is_read_chunk_by_chunk(tmp_path, monkeypatch, block_rows, opens):
    root, whole = _split(tmp_path)
    # file-001 holds episodes 1 and 2 in two row groups: two chunks when a chunk is one episode
    pq.write_table(whole.slice(1, 2), root / EPS / "file-001.parquet", row_group_size=1)
    (root / EPS / "file-002.parquet").unlink()
    monkeypatch.setattr(sb.StatsBlocks, "BLOCK_ROWS", block_rows)
    ds = Dataset(root)
    ds.episodes
    opened = _count_opens(monkeypatch)
    blocks = list(sb.StatsBlocks(ds))
    assert [e for b in blocks for e in b.episodes.tolist()] == list(range(6))
    assert [Path(p).name for p in opened] == opens
    mean = whole.column("stats/action/mean").to_pylist()
    assert [row for b in blocks for row in b.features["action"]["mean"].values.tolist()] == mean


def test_a_pickled_store_holds_nothing(tmp_path):
    import pickle

    store = et.EpisodeStatsTables()
    paths = _keep_all(store, tmp_path, _tables(2))
    copy = pickle.loads(pickle.dumps(store))
    assert copy.take("f0", paths[0]) is None and copy._bytes == 0
    assert store.take("f0", paths[0]) is not None  # the original keeps its tables


def test_pending_files_are_gathered_once_their_size_reaches_a_file_limit_and_count_in_the_budget(tmp_path, monkeypatch):
    store = et.EpisodeStatsTables()
    monkeypatch.setattr(et, "MAX_FILE_BYTES", 6)  # files of 1, 2, 3 bytes: gathered once 1 + 2 + 3 reaches 6
    paths = _keep_all(store, tmp_path, _tables(3))
    assert len(store._groups) == 1 and store._pending == [] and store._pending_bytes == 0
    monkeypatch.setattr(et, "MAX_FILE_BYTES", 4 * 2**20)
    store = et.EpisodeStatsTables()
    _keep_all(store, tmp_path, _tables(2))  # 1 + 2 bytes pending, nothing gathered yet
    assert store._pending_bytes == 3 and store._groups == {}
    monkeypatch.setattr(et, "MAX_TOTAL_BYTES", 3)  # the pending files' sizes count in the budget
    assert store.wants(paths[0]) is None
    monkeypatch.setattr(et, "MAX_TOTAL_BYTES", 4)
    assert store.wants(paths[0]) is not None
    limit = tmp_path / "limit"
    limit.write_bytes(b"x" * 7)
    monkeypatch.setattr(et, "MAX_FILE_BYTES", 7)  # a file of exactly the limit is kept
    assert et.EpisodeStatsTables().wants(limit) is not None


def test_an_episodes_file_without_episode_index_is_reported_not_kept(tmp_path):
    root, whole = _split(tmp_path)
    pq.write_table(whole.slice(3, 1).drop_columns(["episode_index"]), root / EPS / "file-003.parquet")
    ds = Dataset(root)
    with pytest.raises(Exception) as err:
        ds.episodes
    assert type(err.value).__name__ == "DatasetError" and "has no episode_index column" in str(err.value)
    assert "file-003.parquet" in str(err.value)


def test_an_unreadable_episodes_file_is_named_in_one_line(tmp_path):
    root, _ = _split(tmp_path)
    bad = root / EPS / "file-004.parquet"
    data = bad.read_bytes()
    bad.write_bytes(data[:8] + b"\0" * (len(data) - 16) + data[-8:])  # the footer's bytes zeroed, magic kept
    with pytest.raises(Exception) as err:
        Dataset(root).episodes
    text = str(err.value)
    assert type(err.value).__name__ == "DatasetError" and "\n" not in text
    assert text.startswith(f"{EPS}/file-004.parquet: cannot be read as parquet (") and len(text) < 260
    assert "deserialize thrift" in text  # pyarrow's own reason, on the same line
