"""``lrtool reshard``: episode-aligned, page-indexed row groups, never a lost row.

Everything runs on real parquet files: copies of the committed fixtures (copied to tmp_path first, the
fixtures are never modified) and datasets built with :mod:`lerobot_tools.testing.synth`. The kill test runs
``lrtool reshard`` in a subprocess and SIGKILLs it; the full-disk and read-only-filesystem tests use a
real tmpfs when the test runs as root (skipped otherwise; a monkeypatched ENOSPC covers the same path).
"""

from __future__ import annotations

import errno
import glob
import hashlib
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from lerobot_tools._io import TMP_PREFIX
from lerobot_tools.checks.engine import ValidateOptions
from lerobot_tools.cli import cli
from lerobot_tools.dataset.model import Dataset
from lerobot_tools.reshard import ReshardOptions, reshard, reshard_file
from lerobot_tools.testing.synth import SynthSpec, build_dataset
from lerobot_tools.validate import validate

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "fixtures" / "datasets"
MB = 1024 * 1024
ROW_GROUP_CHECKS = {"R001", "R002", "R003"}


# ----------------------------------------------------------------------------------------------
# helpers
# ----------------------------------------------------------------------------------------------


def copy_fixture(name: str, tmp_path: Path) -> Path:
    dst = tmp_path / name
    shutil.copytree(FIXTURES / name, dst, symlinks=True)
    return dst


def synth(root: Path, **kw) -> Path:
    spec = dict(video_keys=(), video_codec=None)
    spec.update(kw)
    return build_dataset(root, SynthSpec(**spec))


def run_cli(*args: str):
    return CliRunner().invoke(cli, ["reshard", *args], catch_exceptions=False)


def tree_hash(root: Path) -> dict[str, str]:
    return {p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file()}


def data_paths(root: Path) -> list[Path]:
    return [root / df.relpath for df in Dataset(root).data_files()]


def read_tables(root: Path) -> dict[str, pa.Table]:
    return {p.relative_to(root).as_posix(): pq.read_table(p) for p in data_paths(root)}


def findings(root: Path, **opts) -> list[tuple[str, str, str | None, str]]:
    (rep,) = validate([str(root)], ValidateOptions(**opts))
    return sorted((f.check, f.severity, f.path, f.message) for f in rep.findings)


def assert_episode_aligned(path: Path, limit_mb: float | None = None) -> list[int]:
    """Every row group holds exactly one episode (read back with read_row_group), has a page index,
    and is within the limit; returns the episode of each row group."""
    pf = pq.ParquetFile(path)
    md = pf.metadata
    eps = []
    for i in range(md.num_row_groups):
        values = pf.read_row_group(i, columns=["episode_index"]).column(0).unique().to_pylist()
        assert len(values) == 1, f"{path.name} row group {i} holds episodes {values}"
        eps.append(values[0])
        rg = md.row_group(i)
        for c in range(rg.num_columns):
            col = rg.column(c)
            assert col.has_column_index and col.has_offset_index, f"{path.name} rg {i} {col.path_in_schema}: no page index"
            assert col.statistics is not None and col.statistics.has_min_max
        if limit_mb is not None and rg.num_rows > 1:
            assert rg.total_byte_size <= limit_mb * MB, (i, rg.total_byte_size)
    return eps


def assert_same_content(before: dict[str, pa.Table], root: Path) -> None:
    after = read_tables(root)
    assert after.keys() == before.keys()
    for rel, t in before.items():
        assert after[rel].schema.equals(t.schema, check_metadata=True), rel
        assert after[rel].equals(t), rel


def one_line_errors(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.startswith("lrtool: error: ")]


# ----------------------------------------------------------------------------------------------
# behaviour on the bundled fixtures
# ----------------------------------------------------------------------------------------------


def test_collapsed_fixture_is_resharded_and_validates_clean(tmp_path):
    root = copy_fixture("broken_collapsed_row_group", tmp_path)
    before_tables = read_tables(root)
    before_hash = tree_hash(root)
    before = findings(root)
    assert "R001" in {f[0] for f in before}
    pf = pq.ParquetFile(root / "data/chunk-000/file-000.parquet")
    assert pf.num_row_groups == 1 and len(pf.read_row_group(0).column("episode_index").unique()) > 1

    res = run_cli(str(root), "--format", "json")
    assert res.exit_code == 0, res.output
    doc = json.loads(res.stdout)
    files = doc["datasets"][0]["files"]
    assert {f["status"] for f in files} == {"resharded"}
    f0 = next(f for f in files if f["relpath"] == "data/chunk-000/file-000.parquet")
    assert f0["row_groups_before"] == 1 and f0["row_groups_after"] == f0["episodes"] > 1
    assert any("span several episodes" in r for r in f0["reasons"])
    assert f0["bytes_before"] > 0 and f0["bytes_after"] == (root / f0["relpath"]).stat().st_size
    assert 0 < f0["seconds"] < 600

    # one episode per row group, in metadata order, page index everywhere
    for p in data_paths(root):
        eps = assert_episode_aligned(p)
        expected = next(df.episodes for df in Dataset(root).data_files() if root / df.relpath == p)
        assert eps == expected
    # same rows, same schema and metadata (huggingface key included), nothing else touched
    assert_same_content(before_tables, root)
    for p in data_paths(root):
        assert b"huggingface" in pq.ParquetFile(p).metadata.metadata
    after_hash = tree_hash(root)
    changed = {k for k in after_hash if after_hash[k] != before_hash.get(k)}
    assert changed == {p.relative_to(root).as_posix() for p in data_paths(root)}
    assert after_hash.keys() == before_hash.keys()  # no temp file left, nothing added
    # validate: the row-group checks are gone, everything else is unchanged
    after = findings(root)
    assert not {f[0] for f in after} & ROW_GROUP_CHECKS
    assert after == [f for f in before if f[0] not in ROW_GROUP_CHECKS]


@pytest.mark.parametrize("name", ["clean_v21", "clean_v30"])
def test_clean_fixtures_survive_unchanged_and_conforming_files_are_skipped(tmp_path, name):
    root = copy_fixture(name, tmp_path)
    before_tables = read_tables(root)
    before = findings(root, deep=True)
    res = run_cli(str(root))
    assert res.exit_code == 0, res.output
    # native layout (one group per episode) but no page index: rewritten for the page index only
    assert res.stdout.count("resharded ") == len(before_tables)
    assert "no page index" in res.stdout
    assert_same_content(before_tables, root)
    for p in data_paths(root):
        assert_episode_aligned(p)
    after = findings(root, deep=True)
    assert after == [f for f in before if f[0] not in ROW_GROUP_CHECKS]

    snapshot = tree_hash(root)
    again = run_cli(str(root), "--format", "json")
    assert again.exit_code == 0
    files = json.loads(again.stdout)["datasets"][0]["files"]
    assert [f["status"] for f in files] == ["conforms"] * len(before_tables)
    assert all(f["row_groups_after"] == f["row_groups_before"] and f["reasons"] == [] for f in files)
    assert tree_hash(root) == snapshot
    text = run_cli(str(root)).stdout
    assert text.count("already episode-aligned, skipped") == len(before_tables)
    assert "0 resharded, %d already conform" % len(before_tables) in text


def test_datasets_load_dataset_yields_the_same_rows_and_counts_shards_by_file(tmp_path):
    datasets = pytest.importorskip("datasets")
    root = synth(tmp_path / "ds", episode_lengths=[30, 12, 25, 40, 7], episodes_per_file=2, row_groups="file",
                 extra_vector_features={"observation.extra": 8})
    files = [str(p) for p in data_paths(root)]

    def rows():
        ds = datasets.load_dataset("parquet", data_files=files, split="train", cache_dir=str(tmp_path / "hf"))
        return ds.to_list()

    before = rows()
    res = run_cli(str(root), "--world-size", "2", "--format", "json")
    assert res.exit_code == 0, res.output
    assert rows() == before
    # datasets 5.x: streaming parquet = one shard per file; IterableDataset.reshard() = one per row group
    stream = datasets.load_dataset("parquet", data_files=files, split="train", streaming=True)
    total_groups = sum(pq.ParquetFile(f).num_row_groups for f in files)
    assert total_groups == 5
    shards = json.loads(res.stdout)["datasets"][0]["shards"]
    assert stream.num_shards == shards["files"] == 3
    if hasattr(stream, "reshard"):
        assert stream.reshard().num_shards == shards["row_groups"] == total_groups
    assert shards["world_size"] == 2 and shards["files_divide"] is False and shards["row_groups_divide"] is False
    assert shards["even"] is False and "every rank reading every shard" in shards["message"]
    text = run_cli(str(root), "--world-size", "5").stdout
    assert "the row groups do (1 per rank)" in text and "IterableDataset.reshard()" in text
    assert "the files divide across world size 3" in run_cli(str(root), "--world-size", "3").stdout


# ----------------------------------------------------------------------------------------------
# layout rules
# ----------------------------------------------------------------------------------------------


def test_episode_larger_than_the_limit_is_split_into_consecutive_groups(tmp_path):
    root = synth(tmp_path / "ds", episode_lengths=[400, 30, 250], episodes_per_file=3, row_groups="file",
                 extra_vector_features={"observation.extra": 64})
    before_tables = read_tables(root)
    path = data_paths(root)[0]
    res = run_cli(str(root), "--row-group-mb", "0.05")
    assert res.exit_code == 0, res.output
    eps = assert_episode_aligned(path, limit_mb=0.05)
    # episode 0 (~120 kB) and 2 (~75 kB) are split, in order, into consecutive groups; episode 1 keeps one
    assert eps == sorted(eps) and eps.count(1) == 1
    assert eps.count(0) >= 3 and eps.count(2) >= 2
    md = pq.ParquetFile(path).metadata
    sizes = [md.row_group(i).num_rows for i in range(md.num_row_groups)]
    ep0 = sizes[: eps.count(0)]
    assert sum(ep0) == 400 and max(ep0) - min(ep0) <= 1  # even split
    assert_same_content(before_tables, root)
    assert not {f[0] for f in findings(root, row_group_mb=0.05)} & ROW_GROUP_CHECKS


def test_rows_split_by_episode_values_nan_nulls_and_nested_types_survive(tmp_path):
    # a hand-written file: episode 0 appears twice (separate row ranges), NaN and nulls, strings, a struct,
    # per-column codecs (zstd + uncompressed), schema metadata; footer says one group spanning 0..1
    n = 600
    ep = [0] * 200 + [1] * 200 + [0] * 200
    table = pa.table({
        "episode_index": pa.array(ep, pa.int64()),
        "index": pa.array(range(n), pa.int64()),
        "value": pa.array([float("nan") if i % 7 == 0 else (None if i % 11 == 0 else i / 3) for i in range(n)],
                          pa.float64()),
        "vec": pa.FixedSizeListArray.from_arrays(pa.array([float(i % 5) for i in range(3 * n)], pa.float32()), 3),
        "label": pa.array([f"task {i % 4}" if i % 13 else None for i in range(n)]),
        "pose": pa.array([{"x": i * 0.5, "y": None if i % 3 else i} for i in range(n)],
                         pa.struct([("x", pa.float64()), ("y", pa.int32())])),
    }).replace_schema_metadata({b"huggingface": b'{"info": {"features": {}}}', b"note": b"kept"})
    path = tmp_path / "file-000.parquet"
    pq.write_table(table, path, compression={"episode_index": "zstd", "index": "zstd", "value": "zstd",
                                             "vec.list.element": "none", "label": "zstd", "pose.x": "zstd",
                                             "pose.y": "zstd"}, row_group_size=n)
    table = pq.read_table(path)  # as read back (the list child is named "element" once written)
    res = reshard_file(path, "file-000.parquet", ReshardOptions())
    assert res.status == "resharded", res.error
    assert res.layout == [[0, 200], [1, 200], [0, 200]]
    assert any("several separate row ranges" in note for note in res.notes)
    assert assert_episode_aligned(path) == [0, 1, 0]
    after = pq.read_table(path)
    assert after.schema.equals(table.schema, check_metadata=True)
    assert after.to_pandas().equals(table.to_pandas())
    assert [None if v != v else v for v in after.column("value").to_pylist()] == \
           [None if v != v else v for v in table.column("value").to_pylist()]
    md = pq.ParquetFile(path).metadata
    codecs = {md.row_group(0).column(c).path_in_schema: md.row_group(0).column(c).compression
              for c in range(md.num_columns)}
    assert codecs["vec.list.element"] == "UNCOMPRESSED" and codecs["index"] == "ZSTD"  # per-column codec kept


def test_compression_option(tmp_path):
    root = copy_fixture("clean_v30", tmp_path)
    before_tables = read_tables(root)
    assert run_cli(str(root), "--compression", "zstd").exit_code == 0
    for p in data_paths(root):
        md = pq.ParquetFile(p).metadata
        assert {md.row_group(i).column(c).compression for i in range(md.num_row_groups)
                for c in range(md.num_columns)} == {"ZSTD"}
    assert_same_content(before_tables, root)
    doc = json.loads(run_cli(str(root), "--compression", "zstd", "--format", "json").stdout)
    assert {f["status"] for f in doc["datasets"][0]["files"]} == {"conforms"}
    doc = json.loads(run_cli(str(root), "--compression", "snappy", "--format", "json").stdout)
    files = doc["datasets"][0]["files"]
    assert {f["status"] for f in files} == {"resharded"}
    assert files[0]["reasons"] == ["compression ZSTD, snappy requested"] and files[0]["compression_after"] == "SNAPPY"


def test_dry_run_writes_nothing_and_lists_the_plan(tmp_path):
    root = copy_fixture("broken_collapsed_row_group", tmp_path)
    stale = root / "data/chunk-000" / f"{TMP_PREFIX}abc123-file-000.parquet"
    stale.write_bytes(b"half a file")
    snapshot = tree_hash(root)
    res = run_cli(str(root), "--dry-run", "--format", "json", "--world-size", "2")
    assert res.exit_code == 0, res.output
    doc = json.loads(res.stdout)
    d = doc["datasets"][0]
    assert d["removed_temps"] == [stale.relative_to(root).as_posix()]
    f0 = d["files"][0]
    assert f0["status"] == "planned" and f0["row_groups_before"] == 1
    assert f0["row_groups_after"] == len(f0["layout"]) == f0["episodes"]
    assert [ep for ep, _ in f0["layout"]] == Dataset(root).data_files()[0].episodes
    assert sum(n for _, n in f0["layout"]) == f0["rows"]
    assert d["shards"]["row_groups"] == sum(f["row_groups_after"] for f in d["files"])
    text = run_cli(str(root), "--dry-run").stdout
    assert "would reshard" in text and "row groups 1 -> " in text and "nothing written" in text
    assert "would remove 1 stale temporary file" in text
    assert tree_hash(root) == snapshot


def test_stale_temp_files_are_removed_on_the_next_run(tmp_path):
    root = copy_fixture("clean_v21", tmp_path)
    stale = [root / "data/chunk-000" / f"{TMP_PREFIX}x1-episode_000000.parquet", root / "meta" / f"{TMP_PREFIX}y2-info.json"]
    for p in stale:
        p.write_bytes(b"\0" * 100)
    res = run_cli(str(root), "--format", "json")
    assert res.exit_code == 0
    assert sorted(json.loads(res.stdout)["datasets"][0]["removed_temps"]) == sorted(
        p.relative_to(root).as_posix() for p in stale)
    assert not any(p.exists() for p in stale)


def test_jobs_run_files_in_parallel_with_the_same_result(tmp_path):
    kw = dict(episode_lengths=[40, 30, 20, 35, 25, 15, 45, 10], episodes_per_file=2, row_groups="file")
    a = synth(tmp_path / "a", **kw)
    b = synth(tmp_path / "b", **kw)
    assert run_cli(str(a), "--jobs", "1").exit_code == 0
    res = run_cli(str(b), "--jobs", "2", "--format", "json")
    assert res.exit_code == 0
    assert [f["status"] for f in json.loads(res.stdout)["datasets"][0]["files"]] == ["resharded"] * 4
    for pa_, pb in zip(data_paths(a), data_paths(b)):
        assert assert_episode_aligned(pa_) == assert_episode_aligned(pb)
        assert pq.read_table(pa_).equals(pq.read_table(pb))


def test_mixture_target_and_duplicate_entries(tmp_path):
    a = copy_fixture("broken_collapsed_row_group", tmp_path)
    b = copy_fixture("clean_v21", tmp_path)
    mix = tmp_path / "mix.txt"
    mix.write_text(f"# two datasets, one listed twice\n{a}\n{b} episodes=0-1\n{a}\n")
    res = run_cli(str(mix), "--format", "json")
    assert res.exit_code == 0, res.output
    ds = json.loads(res.stdout)["datasets"]
    assert len(ds) == 3 and not ds[2]["files"] and "processed once" in ds[2]["notes"][0]
    assert any("episode subset is ignored" in n for n in ds[1]["notes"])
    assert all(f["status"] == "resharded" for d in ds for f in d["files"])


def test_hub_cache_symlinks_are_replaced_and_blobs_left_untouched(tmp_path, monkeypatch):
    src = copy_fixture("broken_collapsed_row_group", tmp_path)
    sha = "0123456789abcdef0123456789abcdef01234567"
    repo = tmp_path / "hub" / "datasets--lrtool--collapsed"
    snap = repo / "snapshots" / sha
    (repo / "refs").mkdir(parents=True)
    (repo / "refs" / "main").write_text(sha)
    blobs = repo / "blobs"
    blobs.mkdir()
    for p in sorted(src.rglob("*")):
        if p.is_file():
            digest = hashlib.sha256(p.read_bytes()).hexdigest()
            shutil.copy2(p, blobs / digest)
            link = snap / p.relative_to(src)
            link.parent.mkdir(parents=True, exist_ok=True)
            link.symlink_to(os.path.relpath(blobs / digest, link.parent))
    blob_hashes = tree_hash(blobs)
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))
    monkeypatch.setenv("HF_LEROBOT_HOME", str(tmp_path / "lerobot"))
    res = run_cli("lrtool/collapsed", "--format", "json")
    assert res.exit_code == 0, res.output
    d = json.loads(res.stdout)["datasets"][0]
    assert any("symlink" in n for n in d["notes"])
    for f in d["files"]:
        assert f["status"] == "resharded"
        p = snap / f["relpath"]
        assert p.is_file() and not p.is_symlink()
        assert_episode_aligned(p)
        assert pq.read_table(p).equals(pq.read_table(src / f["relpath"]))
    assert tree_hash(blobs) == blob_hashes  # shared blobs never written


# ----------------------------------------------------------------------------------------------
# never lose data: failures per file
# ----------------------------------------------------------------------------------------------


def v21(tmp_path: Path, name="ds", lengths=(30, 40, 50)) -> Path:
    return synth(tmp_path / name, version="v2.1", episode_lengths=list(lengths))


def test_corrupt_and_placeholder_parquet_fail_one_line_and_the_rest_is_processed(tmp_path):
    root = v21(tmp_path, lengths=(30, 40, 50, 60))
    d = root / "data/chunk-000"
    p1, p2, p3 = (d / f"episode_00000{i}.parquet" for i in (1, 2, 3))
    p1.write_bytes(p1.read_bytes()[:-200])  # footer cut off
    raw = bytearray(p2.read_bytes())
    raw[4:300] = b"\xff" * 296  # first page header garbage, footer intact
    p2.write_bytes(bytes(raw))
    p3.write_text("version https://git-lfs.github.com/spec/v1\noid sha256:" + "ab" * 32 + "\nsize 9999\n")
    bad = {p: p.read_bytes() for p in (p1, p2, p3)}
    res = run_cli(str(root), "--format", "json")
    assert res.exit_code == 1
    errs = one_line_errors(res.stderr)
    assert len(errs) == 3 and "Traceback" not in res.output
    assert any("episode_000001.parquet: not a readable parquet file" in e for e in errs)
    assert any("episode_000002.parquet: cannot read the data pages" in e for e in errs)
    assert any("episode_000003.parquet: data file is a Git LFS pointer (object of 9,999 bytes not fetched); skipped"
               in e for e in errs)
    files = {f["relpath"]: f for f in json.loads(res.stdout)["datasets"][0]["files"]}
    assert files["data/chunk-000/episode_000000.parquet"]["status"] == "resharded"
    assert_episode_aligned(d / "episode_000000.parquet")
    for p, content in bad.items():
        assert p.read_bytes() == content
    assert not glob.glob(str(d / f"{TMP_PREFIX}*"))
    text = run_cli(str(root))
    assert text.exit_code == 1 and text.stdout.count("FAILED") == 2 and "1 already conform" in text.stdout
    assert "1 skipped (placeholders)" in text.stdout  # the LFS pointer is skipped with its one line


def test_corrupt_page_deep_in_the_file_fails_mid_stream_and_leaves_no_temp(tmp_path):
    # row group 0 is bigger than the first record batches, so the plan and the sample succeed and the
    # broken page header of row group 1 is hit while streaming the rewrite (read-ahead thread)
    root = synth(tmp_path / "ds", episode_lengths=[600, 50], episodes_per_file=2,
                 extra_vector_features={"observation.extra": 4096})
    path = data_paths(root)[0]
    col = pq.ParquetFile(path).metadata.row_group(1).column(0)
    off = col.dictionary_page_offset or col.data_page_offset
    raw = bytearray(path.read_bytes())
    raw[off:off + 64] = b"\xff" * 64
    path.write_bytes(bytes(raw))
    res = run_cli(str(root), "--format", "json")
    assert res.exit_code == 1
    (err,) = one_line_errors(res.stderr)
    assert "file-000.parquet: cannot read the data pages (" in err and err.endswith("original left untouched")
    assert path.read_bytes() == bytes(raw)
    assert sorted(p.name for p in path.parent.iterdir()) == ["file-000.parquet"]


def test_read_ahead_thread_reraises_and_stops():
    from lerobot_tools.reshard.read import _prefetched

    def items():
        yield 1
        yield 2
        raise ValueError("page 3 is corrupt")

    it = _prefetched(items())
    assert next(it) == 1 and next(it) == 2
    with pytest.raises(ValueError, match="page 3 is corrupt"):
        next(it)
    produced = []

    def endless():
        i = 0
        while True:
            produced.append(i)
            yield i
            i += 1

    it = _prefetched(endless(), depth=2)
    assert [next(it) for _ in range(3)] == [0, 1, 2]
    it.close()  # joins the thread: nothing more is produced afterwards
    n = len(produced)
    time.sleep(0.1)
    assert len(produced) == n and n <= 3 + 2 + 1


def test_read_only_file_and_folder(tmp_path):
    root = v21(tmp_path)
    d = root / "data/chunk-000"
    ro = d / "episode_000001.parquet"
    content = ro.read_bytes()
    ro.chmod(0o444)
    dry = run_cli(str(root), "--dry-run")  # the dry run already says what the real run will hit
    assert dry.exit_code == 1 and "FAILED        data/chunk-000/episode_000001.parquet: file is read-only" in dry.stdout
    res = run_cli(str(root), "--format", "json")
    assert res.exit_code == 1
    (err,) = one_line_errors(res.stderr)
    assert err.endswith("episode_000001.parquet: file is read-only (no write permission); original left untouched")
    status = {f["relpath"][-22:]: f["status"] for f in json.loads(res.stdout)["datasets"][0]["files"]}
    assert status == {"episode_000000.parquet": "resharded", "episode_000001.parquet": "failed",
                      "episode_000002.parquet": "resharded"}
    assert ro.read_bytes() == content and (ro.stat().st_mode & 0o777) == 0o444

    root2 = v21(tmp_path, "ds2")
    d2 = root2 / "data/chunk-000"
    snapshot = tree_hash(root2)
    d2.chmod(0o555)
    try:
        res = run_cli(str(root2), "--format", "json")
    finally:
        d2.chmod(0o755)
    assert res.exit_code == 1
    errs = one_line_errors(res.stderr)
    assert len(errs) == 3 and all("folder chunk-000/ is read-only" in e for e in errs)
    assert tree_hash(root2) == snapshot


def test_full_disk_monkeypatched_enospc(tmp_path, monkeypatch):
    root = v21(tmp_path)
    victim = root / "data/chunk-000/episode_000001.parquet"
    content = victim.read_bytes()
    real = pq.ParquetWriter.write_table

    def full_disk(self, table, *a, **kw):
        if str(self.where).endswith("-episode_000001.parquet"):
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return real(self, table, *a, **kw)

    monkeypatch.setattr(pq.ParquetWriter, "write_table", full_disk)
    res = run_cli(str(root), "--format", "json")
    assert res.exit_code == 1
    (err,) = one_line_errors(res.stderr)
    assert "episode_000001.parquet: cannot write the new file: No space left on device (errno 28: ENOSPC)" in err
    assert victim.read_bytes() == content
    assert [f["status"] for f in json.loads(res.stdout)["datasets"][0]["files"]] == ["resharded", "failed", "resharded"]
    assert not glob.glob(str(victim.parent / f"{TMP_PREFIX}*"))


def test_full_disk_real_tmpfs_and_read_only_filesystem(tmp_path, tmpfs):
    src = synth(tmp_path / "src", version="v2.1", episode_lengths=[3000, 20, 20],
                extra_vector_features={"observation.extra": 128})
    size = sum(p.stat().st_size for p in src.rglob("*") if p.is_file())
    big = src / "data/chunk-000/episode_000000.parquet"
    assert big.stat().st_size > 1_000_000
    mnt = tmpfs(size + 300_000)  # room for the small rewrites, not for the big one
    root = mnt / "ds"
    shutil.copytree(src, root)
    res = run_cli(str(root), "--format", "json")
    assert res.exit_code == 1, res.output
    (err,) = one_line_errors(res.stderr)
    assert "episode_000000.parquet: cannot write the new file: No space left on device" in err
    files = json.loads(res.stdout)["datasets"][0]["files"]
    assert [f["status"] for f in files] == ["failed", "resharded", "resharded"]
    assert (root / "data/chunk-000/episode_000000.parquet").read_bytes() == big.read_bytes()
    assert not glob.glob(str(root / "data/chunk-000" / f"{TMP_PREFIX}*"))

    snapshot = tree_hash(root)
    r = subprocess.run(["mount", "-o", "remount,ro", str(mnt)], capture_output=True)
    if r.returncode != 0:
        pytest.skip("cannot remount read-only")
    res = run_cli(str(root), "--format", "json")
    assert res.exit_code == 1
    errs = one_line_errors(res.stderr)
    assert len(errs) == 1 and "episode_000000.parquet: " in errs[0] and "Read-only file system" in errs[0]
    assert tree_hash(root) == snapshot


def test_verification_failure_leaves_the_original_untouched(tmp_path, monkeypatch):
    root = copy_fixture("broken_collapsed_row_group", tmp_path)
    snapshot = tree_hash(root)
    real = pq.ParquetWriter.write_table
    calls = []

    def corrupt_second_group(self, table, *a, **kw):
        calls.append(table.num_rows)
        if len(calls) == 2:  # a silently wrong value in the 2nd row group written
            i = table.schema.get_field_index("index")
            table = table.set_column(i, "index", pa.compute.add(table.column("index"), 1))
        return real(self, table, *a, **kw)

    monkeypatch.setattr(pq.ParquetWriter, "write_table", corrupt_second_group)
    res = run_cli(str(root), "--format", "json")
    assert res.exit_code == 1
    errs = one_line_errors(res.stderr)
    assert len(errs) == 1 and "file-000.parquet: verification failed: column index differs in rows" in errs[0]
    after = tree_hash(root)
    assert after.keys() == snapshot.keys()  # no temp file left behind
    changed = {k for k in after if after[k] != snapshot[k]}
    assert changed == {"data/chunk-000/file-001.parquet"}  # file-000 untouched, file-001 resharded
    files = {f["relpath"]: f["status"] for f in json.loads(res.stdout)["datasets"][0]["files"]}
    assert files == {"data/chunk-000/file-000.parquet": "failed", "data/chunk-000/file-001.parquet": "resharded"}


def test_unresolvable_target_and_bad_options(tmp_path):
    res = run_cli(str(tmp_path / "nope"))
    assert res.exit_code == 1
    res = run_cli(str(tmp_path), "--row-group-mb", "0")
    assert res.exit_code == 2
    res = run_cli(str(tmp_path), "--compression", "lzo")
    assert res.exit_code == 2


def test_cli_help_and_import_stay_light():
    code = ("import sys; from lerobot_tools.cli import cli; import lerobot_tools.commands.reshard, lerobot_tools.reshard; "
            "bad = [m for m in ('torch', 'torchcodec', 'datasets', 'pandas') if m in sys.modules]; "
            "assert not bad, bad")
    subprocess.run([sys.executable, "-c", code], check=True)
    out = subprocess.run([sys.executable, "-m", "lerobot_tools", "reshard", "--help"], capture_output=True, text=True)
    assert out.returncode == 0 and "--row-group-mb" in out.stdout and "--world-size" in out.stdout


# ----------------------------------------------------------------------------------------------
# never lose data: SIGKILL at any moment
# ----------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def kill_source(tmp_path_factory):
    """A v3.0 dataset of 6 data files (~6 MB each, 6 episodes in one collapsed row group per file):
    ``lrtool reshard`` takes 1-2 s on it. Returns (root, {relpath: sha256}, {relpath: table})."""
    root = tmp_path_factory.mktemp("kill") / "src"
    synth(root, episode_lengths=[800] * 36, episodes_per_file=6, row_groups="file",
          extra_vector_features={"observation.extra": 256})
    return root, tree_hash(root), read_tables(root)


def _spawn(root: Path, *extra: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "lerobot_tools", "reshard", str(root), "--no-progress", *extra],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)


def _kill(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)  # the whole group: --jobs workers die too
    except ProcessLookupError:
        pass
    proc.wait()


def _check_after_kill(root: Path, src_hashes: dict, src_tables: dict) -> tuple[int, int, list[str]]:
    """Each data file is byte-identical to the original or fully resharded and equal in content;
    returns (#original, #resharded, leftover temp names)."""
    n_orig = n_new = 0
    for rel, table in src_tables.items():
        p = root / rel
        assert p.is_file() and not p.name.startswith(TMP_PREFIX)
        if hashlib.sha256(p.read_bytes()).hexdigest() == src_hashes[rel]:
            n_orig += 1
            continue
        assert_episode_aligned(p)  # a replaced file is complete, never half written
        assert pq.read_table(p).equals(table), rel
        n_new += 1
    # nothing but the data files changed; the only extra files are lrtool temps and the (empty, unlocked) lock file
    # of the killed run, which the next run removes
    now = tree_hash(root)
    temps = sorted(k for k in now if Path(k).name.startswith(TMP_PREFIX))
    assert set(now) - set(temps) - {".lrtool/lock"} == set(src_hashes)
    for k in src_hashes:
        if k not in src_tables:
            assert now[k] == src_hashes[k]
    return n_orig, n_new, temps


def _rerun_completes(root: Path, temps: list[str], src_tables: dict) -> None:
    run = reshard([str(root)], ReshardOptions(), progress=False)
    (d,) = run.datasets
    assert d.removed_temps == temps
    assert {f.status for f in d.files} <= {"resharded", "conforms"} and not d.error
    for rel, table in src_tables.items():
        assert_episode_aligned(root / rel)
        assert pq.read_table(root / rel).equals(table)
    assert not [p for p in root.rglob(f"{TMP_PREFIX}*")]
    assert not (root / ".lrtool").exists()


def test_sigkill_at_any_moment_never_loses_data(tmp_path, kill_source):
    src, src_hashes, src_tables = kill_source
    rng = random.Random(3)
    delays = [0.15, *(rng.uniform(0.3, 1.6) for _ in range(3))]
    outcomes = []
    for i, delay in enumerate(delays):
        root = tmp_path / f"run{i}"
        shutil.copytree(src, root)
        proc = _spawn(root)
        time.sleep(delay)
        _kill(proc)
        n_orig, n_new, temps = _check_after_kill(root, src_hashes, src_tables)
        outcomes.append((delay, n_orig, n_new, len(temps)))
        _rerun_completes(root, temps, src_tables)
        shutil.rmtree(root)

    # once right when a temporary file appears (the rewrite of the first file has begun)
    root = tmp_path / "at-temp"
    shutil.copytree(src, root)
    data_dir = root / "data/chunk-000"
    proc = _spawn(root)
    deadline = time.monotonic() + 30
    while not any(n.startswith(TMP_PREFIX) for n in os.listdir(data_dir)):
        assert proc.poll() is None and time.monotonic() < deadline, "no temporary file appeared"
        time.sleep(0.0005)
    _kill(proc)
    n_orig, n_new, temps = _check_after_kill(root, src_hashes, src_tables)
    assert temps, "the temporary file was expected to be left behind"
    assert n_orig >= 1
    _rerun_completes(root, temps, src_tables)

    # once right after the first file was replaced (its inode changes), while the run goes on
    root = tmp_path / "after-replace"
    shutil.copytree(src, root)
    first = root / next(iter(src_tables))
    ino = first.stat().st_ino
    proc = _spawn(root)
    deadline = time.monotonic() + 30
    while first.stat().st_ino == ino:
        assert proc.poll() is None and time.monotonic() < deadline, "the first file was never replaced"
        time.sleep(0.0005)
    _kill(proc)
    n_orig, n_new, temps = _check_after_kill(root, src_hashes, src_tables)
    assert n_new >= 1 and n_orig >= 1
    _rerun_completes(root, temps, src_tables)

    # with --jobs 2 (worker processes killed with the group)
    root = tmp_path / "jobs"
    shutil.copytree(src, root)
    proc = _spawn(root, "--jobs", "2")
    time.sleep(1.0)
    _kill(proc)
    _, _, temps = _check_after_kill(root, src_hashes, src_tables)
    _rerun_completes(root, temps, src_tables)
    print("random-delay kills (delay s, originals, resharded, temps):", outcomes)


# ----------------------------------------------------------------------------------------------
# SIGTERM (a scheduler's time limit, `kill`): handled like Ctrl-C
# ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("sig,jobs", [(signal.SIGTERM, "1"), (signal.SIGTERM, "2"), (signal.SIGINT, "2")])
def test_sigterm_exits_143_with_one_line_no_temp_files_originals_intact(tmp_path, kill_source, sig, jobs):
    """SIGTERM exits 143, Ctrl-C (SIGINT) 130; either way one line, no temporary file, originals intact."""
    src, src_hashes, src_tables = kill_source
    root = tmp_path / "ds"
    shutil.copytree(src, root)
    data_dir = root / "data/chunk-000"
    proc = subprocess.Popen([sys.executable, "-m", "lerobot_tools", "reshard", str(root), "--no-progress", "--jobs", jobs],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
    try:
        deadline = time.monotonic() + 30
        while not any(n.startswith(TMP_PREFIX) for n in os.listdir(data_dir)):  # a rewrite is under way
            assert proc.poll() is None and time.monotonic() < deadline, "no temporary file appeared"
            time.sleep(0.0005)
        proc.send_signal(sig)  # the lrtool process only: its workers must stop with it
        _, err = proc.communicate(timeout=60)
    finally:
        _kill(proc)
    assert proc.returncode == (143 if sig == signal.SIGTERM else 130)
    lines = err.decode().splitlines()
    what = "terminated (SIGTERM)" if sig == signal.SIGTERM else "interrupted"
    assert lines == [f"lrtool: {what}: each data file is either its original or its complete, "
                     "verified rewrite; run again to finish"], lines
    n_orig, n_new, temps = _check_after_kill(root, src_hashes, src_tables)
    assert temps == [] and n_orig >= 1  # the interrupted rewrite removed its temporary file
    with pytest.raises(ProcessLookupError):
        os.killpg(proc.pid, 0)  # no worker process outlived the run
    _rerun_completes(root, [], src_tables)


def test_workers_stop_when_the_parent_dies(tmp_path, kill_source):
    src, src_hashes, src_tables = kill_source
    root = tmp_path / "ds"
    shutil.copytree(src, root)
    data_dir = root / "data/chunk-000"
    proc = _spawn(root, "--jobs", "2")
    try:
        deadline = time.monotonic() + 30
        while not any(n.startswith(TMP_PREFIX) for n in os.listdir(data_dir)):
            assert proc.poll() is None and time.monotonic() < deadline, "no temporary file appeared"
            time.sleep(0.0005)
        proc.kill()  # SIGKILL to the parent only: no handler runs there
        proc.wait()
        deadline = time.monotonic() + 30
        while True:  # the workers get SIGTERM from the kernel (parent-death signal) and exit
            try:
                os.killpg(proc.pid, 0)
            except ProcessLookupError:
                break
            assert time.monotonic() < deadline, "worker processes outlived their parent"
            time.sleep(0.05)
    finally:
        _kill(proc)
    n_orig, n_new, temps = _check_after_kill(root, src_hashes, src_tables)
    assert temps == [] and n_orig >= 1  # each worker unwound its rewrite and removed its temporary file
    _rerun_completes(root, [], src_tables)
