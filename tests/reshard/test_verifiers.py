"""Every verification that guards data is made to fail: a candidate wrong in exactly one way is fed to it, the
specific error is asserted, and the original is byte-identical afterwards.

The wrong candidates are real files: the writer is monkeypatched to write the correct new file and then spoil it
in one way (reshard, repair), the restore copy writes wrong bytes (``repair --undo``), or the local Hub server
serves a body that does not match its tree listing (``prefetch``).
"""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from lerobot_tools import _io
from lerobot_tools._arrow_equal import values_equal
from lerobot_tools.reshard import ReshardOptions, reshard_file
from lerobot_tools.reshard import write as reshard_write

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "fixtures" / "datasets"


def tree_hash(root: Path) -> dict[str, str]:
    return {p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file()}


# ------------------------------------------------------------------------------------------------ reshard
COLLAPSED = "data/chunk-000/file-000.parquet"  # one row group holding several episodes: reshard rewrites it


def _layout(tmp: Path) -> list[int]:
    md = pq.ParquetFile(tmp).metadata
    return [md.row_group(i).num_rows for i in range(md.num_row_groups)]


def _rewrite(tmp: Path, table: pa.Table, sizes: list[int], **kw) -> None:
    """Write ``table`` to ``tmp`` with one row group per entry of ``sizes``."""
    with pq.ParquetWriter(tmp, table.schema, **kw) as w:
        off = 0
        for n in sizes:
            w.write_table(table.slice(off, n), row_group_size=max(1, n))
            off += n


def _spoil_rows(tmp, table, sizes):
    _rewrite(tmp, table.slice(0, table.num_rows - 1), sizes[:-1] + [sizes[-1] - 1])


def _spoil_type(tmp, table, sizes):
    i = table.schema.get_field_index("index")
    _rewrite(tmp, table.set_column(i, pa.field("index", pa.int32()), pc.cast(table.column(i), pa.int32())), sizes)


def _spoil_schema_metadata(tmp, table, sizes):
    md = dict(table.schema.metadata or {})
    md[b"huggingface"] = b'{"info": {"features": {}}}'
    _rewrite(tmp, table.replace_schema_metadata(md), sizes)


def _spoil_kv_metadata(tmp, table, sizes):
    with pq.ParquetWriter(tmp, table.schema) as w:
        off = 0
        for n in sizes:
            w.write_table(table.slice(off, n), row_group_size=n)
            off += n
        w.add_key_value_metadata({"written_by": "something else"})


def _spoil_group_count(tmp, table, sizes):
    _rewrite(tmp, table, [sum(sizes)])


def _spoil_group_rows(tmp, table, sizes):
    _rewrite(tmp, table, [sizes[0] + 1, sizes[1] - 1] + sizes[2:])


def _spoil_page_index(tmp, table, sizes):
    _rewrite(tmp, table, sizes, write_page_index=False)


def _spoil_episode_label(tmp, table, sizes):
    """Same layout, group 0 relabelled as another episode (min == max, but not the planned episode)."""
    i = table.schema.get_field_index("episode_index")
    ep = table.column(i).to_pylist()
    ep[:sizes[0]] = [99] * sizes[0]
    _rewrite(tmp, table.set_column(i, table.schema.field(i), pa.array(ep, table.schema.field(i).type)), sizes,
             write_page_index=True)


def _spoil_mixed_episode(tmp, table, sizes):
    """Same layout, but the last row of group 0 carries group 1's episode (a row moved across episodes)."""
    i = table.schema.get_field_index("episode_index")
    ep = table.column(i).to_pylist()
    ep[sizes[0] - 1] = ep[sizes[0]]
    _rewrite(tmp, table.set_column(i, table.schema.field(i), pa.array(ep, table.schema.field(i).type)), sizes,
             write_page_index=True)


def _spoil_codec(tmp, table, sizes):
    _rewrite(tmp, table, sizes, write_page_index=True, compression="gzip")


def _spoil_value(tmp, table, sizes):
    i = table.schema.get_field_index("timestamp")
    ts = table.column(i).to_pylist()
    ts[-1] = ts[-1] + 1.0
    _rewrite(tmp, table.set_column(i, table.schema.field(i), pa.array(ts, table.schema.field(i).type)), sizes,
             write_page_index=True)


@pytest.mark.parametrize("spoil, words", [
    (_spoil_rows, "rows written"),
    (_spoil_type, "Arrow schema or its metadata changed"),
    (_spoil_schema_metadata, "Arrow schema or its metadata changed"),
    (_spoil_kv_metadata, "parquet key-value metadata changed"),
    (_spoil_group_count, "row groups written"),
    (_spoil_group_rows, "row group 0 has"),
    (_spoil_page_index, "has no page index"),
    (_spoil_mixed_episode, "does not hold exactly episode"),
    (_spoil_episode_label, "row group 0 does not hold exactly episode 0"),
    (_spoil_codec, "expected"),
    (_spoil_value, "column timestamp differs in rows"),
])
def test_reshard_verification_refuses_a_candidate_wrong_in_one_way(tmp_path, monkeypatch, spoil, words):
    root = tmp_path / "ds"
    shutil.copytree(FIXTURES / "broken_collapsed_row_group", root)
    before = tree_hash(root)
    real = reshard_write._write_layout
    seen = {}

    def write_then_spoil(src, tmp, groups, *a, **kw):
        real(src, tmp, groups, *a, **kw)
        sizes = _layout(tmp)
        assert sizes == [g.num_rows for g in groups] and len(sizes) >= 2
        seen["planned"] = sizes
        spoil(tmp, pq.read_table(tmp), sizes)

    monkeypatch.setattr(reshard_write, "_write_layout", write_then_spoil)
    res = reshard_file(root / COLLAPSED, COLLAPSED, ReshardOptions())
    assert seen, "the writer was not called"
    assert res.status == "failed", res
    assert "verification failed" in res.error and words in res.error, res.error
    assert res.error.endswith("original left untouched")
    assert tree_hash(root) == before  # original byte-identical, no temporary file left


def test_reshard_without_verification_would_have_replaced_the_file(tmp_path, monkeypatch):
    """The spoiled candidates above are only stopped by the verifier: with ``verify=False`` one replaces the file."""
    root = tmp_path / "ds"
    shutil.copytree(FIXTURES / "broken_collapsed_row_group", root)
    before = tree_hash(root)
    real = reshard_write._write_layout

    def write_then_spoil(src, tmp, groups, *a, **kw):
        real(src, tmp, groups, *a, **kw)
        _spoil_value(tmp, pq.read_table(tmp), _layout(tmp))

    monkeypatch.setattr(reshard_write, "_write_layout", write_then_spoil)
    res = reshard_file(root / COLLAPSED, COLLAPSED, ReshardOptions(verify=False))
    assert res.status == "resharded"
    assert tree_hash(root)[COLLAPSED] != before[COLLAPSED]


def test_reshard_oversize_groups_are_replanned_then_refused(tmp_path, monkeypatch):
    """Row groups measured above ``--row-group-mb`` make the verifier ask for a re-plan; when the last attempt is
    still over the limit the file fails and is left untouched."""
    root = tmp_path / "ds"
    shutil.copytree(FIXTURES / "broken_collapsed_row_group", root)
    before = tree_hash(root)
    # the planner believes rows are 1000x smaller than they are: every episode fits in one (too large) group
    real_bpr = reshard_write.bytes_per_row
    monkeypatch.setattr(reshard_write, "bytes_per_row", lambda footer: [(row, b / 1000) for row, b in real_bpr(footer)])
    limit_mb = 0.001  # 1 kB: the fixture's episodes are larger
    res = reshard_file(root / COLLAPSED, COLLAPSED, ReshardOptions(row_group_mb=limit_mb))
    assert res.status == "resharded", res
    assert any("rewritten again" in n for n in res.notes), res.notes
    md = pq.ParquetFile(root / COLLAPSED).metadata
    for i in range(md.num_row_groups):
        rg = md.row_group(i)
        assert rg.num_rows == 1 or rg.total_byte_size <= limit_mb * 1024 * 1024

    shutil.rmtree(root)
    shutil.copytree(FIXTURES / "broken_collapsed_row_group", root)
    monkeypatch.setattr(reshard_write, "MAX_ATTEMPTS", 1)
    res = reshard_file(root / COLLAPSED, COLLAPSED, ReshardOptions(row_group_mb=limit_mb))
    assert res.status == "failed" and "row groups still above 0.001 MB after 1 attempts" in res.error, res
    assert tree_hash(root) == before


def test_reshard_content_comparison_counts_rows(tmp_path):
    """The streaming content comparison refuses files of different lengths on its own (not only through the
    footer's row count, which is checked first)."""
    from lerobot_tools.reshard.model import VerifyError
    from lerobot_tools.reshard.verify import _compare_content

    t = pa.table({"episode_index": [0, 0, 1, 1, 1], "x": [1.0, float("nan"), 3.0, 4.0, 5.0]})
    a, b = tmp_path / "a.parquet", tmp_path / "b.parquet"
    pq.write_table(t, a)
    pq.write_table(t.slice(0, 4), b)
    with pytest.raises(VerifyError, match="differ in row count after 4 rows"):
        _compare_content(a, b, 2)
    with pytest.raises(VerifyError, match="differ in row count after 4 rows"):
        _compare_content(b, a, 3)
    assert _compare_content(a, a, 2) == 5  # NaN equals NaN


# ------------------------------------------------------------------------------------------------ repair
from lerobot_tools.repair import parquet as repair_pq  # noqa: E402
from lerobot_tools.repair.model import ColumnOp  # noqa: E402
from lerobot_tools.repair.parquet import RewriteError  # noqa: E402


def _episode_file(path: Path) -> Path:
    """Two row groups (one per episode): an int64 index, a float64 value exactly representable as float32 (with
    a NaN and a null), a variable-length list whose rows all have 2 elements, and one-element lists."""
    t = pa.table({
        "index": pa.array([0, 1, 2, 3, 4], pa.int64()),
        "episode_index": pa.array([0, 0, 0, 1, 1], pa.int64()),
        "x": pa.array([0.5, float("nan"), None, 2.25, -1.0], pa.float64()),
        "v": pa.array([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0], None, [9.0, 10.0]], pa.list_(pa.float32())),
        "s": pa.array([[1], [2], None, [4], [5]], pa.list_(pa.int64())),
    }).replace_schema_metadata({b"huggingface": b'{"info": {"features": {}}}'})
    with pq.ParquetWriter(path, t.schema, write_page_index=True) as w:
        w.write_table(t.slice(0, 3), row_group_size=3)
        w.write_table(t.slice(3, 2), row_group_size=2)
    return path


OPS = {
    "dtype": ColumnOp("dtype", "x", dtype="float32"),
    "fixed": ColumnOp("fixed", "v", length=2),
    "scalar": ColumnOp("scalar", "s"),
}


def _rewrite_repair(path: Path, ops: list[ColumnOp]) -> None:
    md = repair_pq.new_metadata(pq.read_schema(path), None, [op.column for op in ops if op.kind == "drop"])
    repair_pq.rewrite_parquet(path, ops, md)


@pytest.mark.parametrize("kind", sorted(OPS))
def test_repair_rewrite_applies_each_operation_and_verifies(tmp_path, kind):
    f = _episode_file(tmp_path / "f.parquet")
    _rewrite_repair(f, [OPS[kind]])
    t = pq.read_table(f)
    want = {"dtype": pa.float32(), "fixed": pa.list_(pa.field("element", pa.float32()), 2), "scalar": pa.int64()}
    assert t.schema.field(OPS[kind].column).type == want[kind]
    assert [pq.ParquetFile(f).metadata.row_group(i).num_rows for i in range(2)] == [3, 2]


def _spoil_written_table(monkeypatch, spoil) -> None:
    """Every ``write_table`` of the repair writer writes ``spoil(table, call_number)`` instead."""
    real = pq.ParquetWriter.write_table
    calls = []

    def spoiled(self, table, *a, **kw):
        calls.append(1)
        t = spoil(table, len(calls))
        if t is None:
            return None
        kw["row_group_size"] = max(1, t.num_rows)  # one row group per call, whatever its length
        return real(self, t, *a, **kw)

    monkeypatch.setattr(pq.ParquetWriter, "write_table", spoiled)


def _set(table: pa.Table, name: str, values) -> pa.Table:
    i = table.schema.get_field_index(name)
    return table.set_column(i, table.schema.field(i), pa.array(values, table.schema.field(i).type))


@pytest.mark.parametrize("spoil, words", [
    (lambda t, n: t.slice(0, t.num_rows - 1) if n == 2 else t,
     "rewrite has 4 rows in 2 row group(s), the original 5 in 2"),
    (lambda t, n: None if n == 2 else t, "rewrite has 3 rows in 1 row group(s), the original 5 in 2"),
    (lambda t, n: _set(t, "index", [v + 1 for v in t.column("index").to_pylist()]) if n == 2 else t,
     "row group 1: column 'index' differs from the original"),
    (lambda t, n: _set(t, "x", [None] * t.num_rows) if n == 1 else t,
     "row group 0: column 'x' differs from the original"),
])
def test_repair_verification_refuses_a_wrong_rewrite(tmp_path, monkeypatch, spoil, words):
    f = _episode_file(tmp_path / "f.parquet")
    before = tree_hash(tmp_path)
    _spoil_written_table(monkeypatch, spoil)
    with pytest.raises(RewriteError) as exc:
        _rewrite_repair(f, [OPS["dtype"]])
    assert str(exc.value) == "f.parquet: " + words  # the message names the file
    assert tree_hash(tmp_path) == before


def test_repair_verification_refuses_a_shifted_row_group_boundary(tmp_path, monkeypatch):
    f = _episode_file(tmp_path / "f.parquet")
    before = tree_hash(tmp_path)
    held = {}

    def shift(t, n):  # group sizes 3, 2 become 2, 3: same totals, rows moved across episodes
        if n == 1:
            held["t"] = t
            return t.slice(0, 2)
        return pa.concat_tables([held["t"].slice(2), t])

    _spoil_written_table(monkeypatch, shift)
    with pytest.raises(RewriteError) as exc:
        _rewrite_repair(f, [OPS["fixed"]])
    assert str(exc.value) == "f.parquet: row group 0 has 2 rows instead of 3"
    assert tree_hash(tmp_path) == before


@pytest.mark.parametrize("kind, bad", [
    ("dtype", lambda arr: pc.multiply(arr.cast(pa.float32()), pa.scalar(2.0, pa.float32()))),
    ("fixed", lambda arr: pa.array([None if r is None else r[::-1] for r in arr.to_pylist()],
                                   pa.list_(pa.field("element", pa.float32()), 2))),
    ("scalar", lambda arr: pa.array([None if r is None else r[0] + 1 for r in arr.to_pylist()], pa.int64())),
])
def test_repair_independent_value_check_catches_a_wrong_operation(tmp_path, monkeypatch, kind, bad):
    """The column operation itself is wrong (so the new file equals what the operation predicts): the check of
    the new values against the original values after the intended cast still refuses the file."""
    f = _episode_file(tmp_path / "f.parquet")
    before = tree_hash(tmp_path)
    monkeypatch.setattr(repair_pq, "apply_op", lambda arr, op: bad(arr))
    with pytest.raises(RewriteError) as exc:
        _rewrite_repair(f, [OPS[kind]])
    assert str(exc.value) == f"f.parquet: row group 0: values of '{OPS[kind].column}' changed"
    assert tree_hash(tmp_path) == before


def test_repair_verifier_refuses_schema_metadata_and_columns_it_was_not_told_about(tmp_path):
    f = _episode_file(tmp_path / "f.parquet")
    t = pq.read_table(f)
    ops = [OPS["dtype"]]
    intended = repair_pq.new_schema(t.schema, ops, repair_pq.new_metadata(t.schema, None, []))
    good = tmp_path / "good.parquet"
    shutil.copy(f, good)
    _rewrite_repair(good, ops)
    repair_pq.verify_rewrite(f, good, ops, intended)  # the real rewrite verifies

    with pytest.raises(RewriteError) as exc:
        repair_pq.verify_rewrite(f, f, ops, intended)  # x still float64
    assert str(exc.value) == f"f.parquet: rewrite has schema {t.schema} instead of {intended}"
    other = intended.with_metadata({b"huggingface": b"{}"})
    with pytest.raises(RewriteError) as exc:
        repair_pq.verify_rewrite(f, good, ops, other)
    assert str(exc.value) == "f.parquet: rewrite does not carry the intended key-value metadata"
    # a drop the schema does not reflect: the new file has a column the operations remove
    drop = [ColumnOp("drop", "s")]
    with pytest.raises(RewriteError) as exc:
        repair_pq.verify_rewrite(f, f, drop, t.schema)
    assert str(exc.value) == ("f.parquet: row group 0: columns ['index', 'episode_index', 'x', 'v', 's'] "
                              "instead of ['index', 'episode_index', 'x', 'v']")
    # ``ARROW:schema`` (pyarrow's own serialized schema) in the intended metadata is not a difference
    repair_pq.verify_rewrite(f, good, ops, intended.with_metadata({**intended.metadata, b"ARROW:schema": b"x"}))


def test_tasks_parquet_rewrite_is_verified(tmp_path, monkeypatch):
    import pandas as pd

    p = tmp_path / "tasks.parquet"
    repair_pq.write_tasks_parquet(p, [(0, "pick"), (1, "place")])
    back = pd.read_parquet(p)
    assert list(back.index) == ["pick", "place"] and list(back["task_index"]) == [0, 1]
    before = p.read_bytes()
    real = pd.DataFrame.to_parquet

    def unnamed_index(self, path, **kw):
        return real(self.rename_axis(None), path, **kw)

    monkeypatch.setattr(pd.DataFrame, "to_parquet", unnamed_index)
    with pytest.raises(RewriteError, match="not indexed by 'task'"):
        repair_pq.write_tasks_parquet(p, [(0, "pick"), (1, "stack")])
    assert p.read_bytes() == before

    def swapped(self, path, **kw):
        return real(self.iloc[::-1], path, **kw)

    monkeypatch.setattr(pd.DataFrame, "to_parquet", swapped)
    with pytest.raises(RewriteError, match="does not read back with the same tasks"):
        repair_pq.write_tasks_parquet(p, [(0, "pick"), (1, "stack")])
    assert p.read_bytes() == before
    assert [q.name for q in tmp_path.iterdir()] == ["tasks.parquet"]


# ------------------------------------------------------------------------------------------------ repair --undo
from click.testing import CliRunner  # noqa: E402

from lerobot_tools.cli import cli  # noqa: E402
from lerobot_tools.repair import backup as backup_mod  # noqa: E402


@pytest.fixture
def repaired(tmp_path):
    """A repaired copy of broken_wrong_totals: meta/info.json changed, its original in the backup."""
    root = tmp_path / "ds"
    shutil.copytree(FIXTURES / "broken_wrong_totals", root)
    original = (root / "meta/info.json").read_bytes()
    r = CliRunner().invoke(cli, ["repair", str(root)])
    assert r.exit_code == 0, r.output
    assert (root / "meta/info.json").read_bytes() != original
    return root, original


def test_undo_refuses_restored_bytes_that_differ_from_the_manifest(repaired, monkeypatch):
    root, original = repaired
    before = tree_hash(root)
    real = shutil.copyfile

    def flipped(src, dst, *a, **kw):
        out = real(src, dst, *a, **kw)
        data = bytearray(Path(dst).read_bytes())
        data[len(data) // 2] ^= 0x01  # one bit wrong in the restored copy
        Path(dst).write_bytes(bytes(data))
        return out

    monkeypatch.setattr(shutil, "copyfile", flipped)
    r = CliRunner().invoke(cli, ["repair", "--undo", str(root)])
    assert r.exit_code != 0 and "restored bytes do not match the backup manifest" in r.output, r.output
    assert "Traceback" not in r.output
    assert tree_hash(root) == before  # the repaired file and the backup stay as they were
    monkeypatch.setattr(shutil, "copyfile", real)
    r = CliRunner().invoke(cli, ["repair", "--undo", str(root)])
    assert r.exit_code == 0, r.output
    assert (root / "meta/info.json").read_bytes() == original


def test_undo_checks_every_file_after_restoring(repaired, monkeypatch):
    """A restore step that silently does nothing is caught by the final check of every file."""
    import contextlib

    root, original = repaired
    before = tree_hash(root)

    @contextlib.contextmanager
    def discarding(target, verify=None, keep_mode=True):
        tmp = Path(target).with_name(_io.TMP_PREFIX + "discard")
        yield tmp
        tmp.unlink()

    monkeypatch.setattr(backup_mod, "atomic_path", discarding)
    with pytest.raises(backup_mod.BackupError, match=r"1 file\(s\) could not be restored \(e.g. meta/info.json\)"):
        backup_mod.restore(root, backup_mod.latest(root))
    assert tree_hash(root) == before


# ------------------------------------------------------------------------------------------------ atomic writes
def test_atomic_path_verifier_failure_leaves_the_target_and_no_temp(tmp_path):
    target = tmp_path / "f.bin"
    target.write_bytes(b"original")
    target.chmod(0o640)

    def refuse(tmp: Path) -> None:
        assert tmp.read_bytes() == b"candidate" and tmp.parent == target.parent
        raise ValueError("candidate refused")

    with pytest.raises(ValueError, match="candidate refused"):
        with _io.atomic_path(target, verify=refuse) as tmp:
            tmp.write_bytes(b"candidate")
    assert target.read_bytes() == b"original" and sorted(p.name for p in tmp_path.iterdir()) == ["f.bin"]

    with pytest.raises(KeyboardInterrupt):  # an interrupt while writing: same
        with _io.atomic_path(target) as tmp:
            tmp.write_bytes(b"half")
            raise KeyboardInterrupt
    assert target.read_bytes() == b"original" and sorted(p.name for p in tmp_path.iterdir()) == ["f.bin"]

    with _io.atomic_path(target, verify=lambda tmp: None) as tmp:
        tmp.write_bytes(b"new")
    assert target.read_bytes() == b"new" and (target.stat().st_mode & 0o777) == 0o640  # permission bits kept
    _io.atomic_write_text(tmp_path / "g.txt", "é")
    assert (tmp_path / "g.txt").read_bytes() == "é".encode()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["f.bin", "g.txt"]


# ------------------------------------------------------------------------------------------------ prefetch
from lerobot_tools.prefetch import PrefetchOptions, prefetch  # noqa: E402
from tests.hubserver import HubServer, read_folder  # noqa: E402

V21 = read_folder(FIXTURES / "clean_v21")
LFS_MIN = 2000  # files of at least this many bytes are served as LFS (302 to the CDN, sha256 listed)


def _prefetch(mix: Path, srv: HubServer, root: Path, **kw):
    return prefetch(mix, PrefetchOptions(local_dir_root=root, endpoint=srv.url, progress=False, **kw))


def _files(dest: Path) -> dict[str, bytes]:
    """Every file below ``dest`` outside ``.cache/`` (temporary files included, so a leftover shows)."""
    return {p.relative_to(dest).as_posix(): p.read_bytes() for p in sorted(dest.rglob("*"))
            if p.is_file() and not p.relative_to(dest).as_posix().startswith(".cache/")}


@pytest.mark.usefixtures("isolated_hub_env")
@pytest.mark.parametrize("tamper, words", [
    (lambda d: d[:100] + bytes([d[100] ^ 1]) + d[101:], "does not match the listing"),
    (lambda d: d + b"\0" * 10, "the tree listing says"),
])
def test_prefetch_refuses_a_body_that_does_not_match_the_listing(tmp_path, tamper, words):
    """The server lists a file's size and sha256 but serves other bytes: the file is counted failed, never put
    under its final name, and an older complete copy is left as it was."""
    big = sorted(p for p, d in V21.items() if len(d) >= LFS_MIN and p.endswith(".mp4"))[0]
    root = tmp_path / "out"
    dest = root / "org/v21"
    mix = tmp_path / "mixture.txt"
    mix.write_text("org/v21\n")
    with HubServer(lfs_threshold=LFS_MIN) as srv:
        srv.add_repo("org/v21", V21)
        sha = hashlib.sha256(V21[big]).hexdigest()
        srv.blobs[sha] = tamper(V21[big])
        rep = _prefetch(mix, srv, root)
        (res,) = rep.results
        assert rep.exit_status == 1 and res.failed == 1 and res.downloaded == len(V21) - 1
        assert any(big in p and words in p for p in res.problems), res.problems
        assert _files(dest) == {p: d for p, d in V21.items() if p != big}  # nothing under the final name

        # an old complete copy of the file (another commit) is not replaced by the wrong body
        (dest / big).write_bytes(b"old complete copy")
        old = _files(dest)
        rep = _prefetch(mix, srv, root)
        assert rep.exit_status == 1 and rep.results[0].failed == 1
        assert _files(dest) == old

        srv.blobs[sha] = V21[big]  # the server is fixed: the next run completes
        rep = _prefetch(mix, srv, root)
        assert rep.exit_status == 0 and _files(dest) == V21


@pytest.mark.usefixtures("isolated_hub_env")
def test_prefetch_dry_run_checks_files_on_disk(tmp_path):
    """With the files present, ``--dry-run`` lists exactly the ones missing, of the wrong size or with the wrong
    content (a copy without download metadata is hashed and counted present), and writes nothing."""
    import os

    root = tmp_path / "out"
    dest = root / "org/v21"
    mix = tmp_path / "mixture.txt"
    mix.write_text("org/v21\n")
    with HubServer() as srv:
        srv.add_repo("org/v21", V21)
        assert _prefetch(mix, srv, root).exit_status == 0
        rep = _prefetch(mix, srv, root, dry_run=True)
        assert rep.exit_status == 0 and rep.results[0].missing == 0 and rep.results[0].present == len(V21)

        files = sorted(V21)
        gone, short, wrong, no_meta = files[0], files[1], files[2], files[3]
        (dest / gone).unlink()
        (dest / short).write_bytes(V21[short][:-1])
        data = bytearray(V21[wrong])
        data[0] ^= 1
        (dest / wrong).write_bytes(bytes(data))
        later = (dest / wrong).stat().st_mtime + 10  # newer than its download metadata: re-hashed
        os.utime(dest / wrong, (later, later))
        metas = [m for m in (dest / ".cache").rglob("*.metadata") if m.name == Path(no_meta).name + ".metadata"]
        assert len(metas) == 1
        metas[0].unlink()
        snapshot = {p.relative_to(dest).as_posix(): p.read_bytes() for p in dest.rglob("*") if p.is_file()}
        srv.reset()
        rep = _prefetch(mix, srv, root, dry_run=True)
        (res,) = rep.results
        assert rep.exit_status == 1
        assert (res.missing, res.present) == (3, len(V21) - 3)
        assert res.bytes_missing == len(V21[gone]) + len(V21[short]) + len(V21[wrong])
        assert srv.counts().get("get", 0) == 0 and res.downloaded == 0
        after = {p.relative_to(dest).as_posix(): p.read_bytes() for p in dest.rglob("*") if p.is_file()}
        assert after == snapshot  # nothing written, not even the metadata of the hashed copy


# ------------------------------------------------------------------------------------------------ reshard content
def _eq(a, b) -> bool:
    from lerobot_tools._arrow_equal import values_equal

    return values_equal(a, b)


@pytest.mark.parametrize("a, b, equal", [
    (pa.array([1, 2]), pa.array([1, 2]), True),
    (pa.array([1, 2]), pa.array([1, 2], pa.int32()), False),  # type
    (pa.array([1, 2]), pa.array([1, 2, 3]), False),  # length
    (pa.array([1.0, None]), pa.array([None, 1.0]), False),  # null positions
    (pa.array([1.0, None, 3.0]), pa.array([1.0, 0.0, 3.0]), False),  # a null is not the value 0
    (pa.array([float("nan"), 1.0]), pa.array([float("nan"), 1.0]), True),  # NaN equals NaN
    (pa.array([float("nan"), None]), pa.array([float("nan"), None]), True),
    (pa.array([float("nan"), 1.0]), pa.array([float("nan"), 2.0]), False),
    (pa.array([float("nan")]), pa.array([0.0]), False),
    (pa.array([[1.0, float("nan")], [2.0]]), pa.array([[1.0, float("nan")], [2.0]]), True),
    (pa.array([[1.0, float("nan")], [2.0]]), pa.array([[1.0], [float("nan"), 2.0]]), False),  # list lengths
    (pa.array([[1.0, float("nan")], None]), pa.array([[1.0, float("nan")], []]), False),  # null list vs empty
    (pa.array([[1.0, float("nan")], [2.0]]), pa.array([[1.0, float("nan")], [3.0]]), False),
    (pa.array([{"x": float("nan"), "y": 1}]), pa.array([{"x": float("nan"), "y": 1}]), True),
    (pa.array([{"x": float("nan"), "y": 1}]), pa.array([{"x": float("nan"), "y": 2}]), False),
    (pa.array(["a", "b"]), pa.array(["a", "c"]), False),
    (pa.array([1, None]), pa.array([1, 2]), False),
])
def test_reshard_array_equality(a, b, equal):
    assert _eq(a, b) is equal
    assert _eq(b, a) is equal


def test_reshard_content_comparison_across_batch_and_row_group_boundaries(tmp_path):
    """Files with different row-group layouts, read in batches of different sizes, are compared row by row; a
    difference is reported with the rows of the batch it is in."""
    from lerobot_tools.reshard.model import VerifyError
    from lerobot_tools.reshard.verify import _compare_content

    n = 23
    t = pa.table({"episode_index": [i // 5 for i in range(n)], "x": [float(i) for i in range(n)]})
    a, b, c = tmp_path / "a.parquet", tmp_path / "b.parquet", tmp_path / "c.parquet"
    pq.write_table(t, a, row_group_size=n)
    pq.write_table(t, b, row_group_size=4)
    for batch in (1, 3, 7, 64):
        assert _compare_content(a, b, batch) == n
        assert _compare_content(b, a, batch) == n
    x = t.column("x").to_pylist()
    x[17] = -1.0
    pq.write_table(t.set_column(1, "x", pa.array(x)), c, row_group_size=4)
    with pytest.raises(VerifyError, match=r"column x differs in rows 0-22$"):
        _compare_content(a, c, 64)
    with pytest.raises(VerifyError, match=r"column x differs in rows 15-19$"):
        _compare_content(a, c, 5)
    with pytest.raises(VerifyError, match=r"column x differs in rows 17-17$"):
        _compare_content(b, c, 1)
    empty = tmp_path / "e.parquet"
    pq.write_table(t.slice(0, 0), empty)
    assert _compare_content(empty, empty, 4) == 0
    with pytest.raises(VerifyError, match="differ in row count after 0 rows"):
        _compare_content(empty, a, 4)


@pytest.mark.parametrize("op, words", [
    (ColumnOp("dtype", "x", dtype="int64"), "column 'x': some values do not convert exactly to int64"),
    (ColumnOp("dtype", "v", dtype="float16"), "column 'v': some values do not convert exactly to float16"),
    (ColumnOp("fixed", "v", length=3), "column 'v': 3 row(s) do not have 3 element(s)"),
    (ColumnOp("scalar", "v"), "column 'v': 3 row(s) do not have 1 element(s)"),
    (ColumnOp("fixed", "x", length=2), "column 'x' is double, not a list"),
    (ColumnOp("scalar", "index"), "column 'index' is int64, not a list"),
])
def test_repair_rewrite_refuses_an_operation_that_would_change_values(tmp_path, op, words):
    """The operations themselves refuse before a byte is written: a cast that loses values (0.5 -> int64, a
    float32 beyond float16), a list of the wrong length for ``fixed``/``scalar`` (counted in the first row group
    that has one), a list operation on a scalar
    column. The original stays byte-identical and no temporary file is left."""
    f = _episode_file(tmp_path / "f.parquet")
    if op.column == "v" and op.kind == "dtype":  # a float32 value float16 cannot hold exactly
        t = pq.read_table(f)
        t = _set(t, "v", [[1.0, 2.0], [3.0, 4.0], [5.0, 1e-8], None, [9.0, 10.0]])
        pq.write_table(t, f)
    before = tree_hash(tmp_path)
    with pytest.raises(RewriteError) as exc:
        _rewrite_repair(f, [op])
    assert str(exc.value) == words
    assert tree_hash(tmp_path) == before


def test_repair_rewrite_exact_casts_pass_at_the_boundary(tmp_path):
    """The boundary of the refusals above: whole floats cast to int64 exactly, NaN/null kept by float32."""
    f = tmp_path / "f.parquet"
    t = pa.table({"episode_index": pa.array([0, 0], pa.int64()), "w": pa.array([2.0, -3.0], pa.float64()),
                  "x": pa.array([float("nan"), None], pa.float64())})
    pq.write_table(t, f)
    _rewrite_repair(f, [ColumnOp("dtype", "w", dtype="int64"), ColumnOp("dtype", "x", dtype="float32")])
    out = pq.read_table(f)
    assert out.column("w").to_pylist() == [2, -3] and out.schema.field("w").type == pa.int64()
    x = out.column("x").to_pylist()
    assert x[0] != x[0] and x[1] is None and out.schema.field("x").type == pa.float32()


def test_repair_op_type_refuses_an_unknown_operation():
    with pytest.raises(ValueError, match="unknown column operation 'reverse'"):
        repair_pq.op_type(ColumnOp("reverse", "v"), pa.list_(pa.float32()))


# ------------------------------------------------------------------------------------------------ repair: metadata
_HF_COMPACT = (b'{"info":{"features":{"x":{"dtype":"float64","_type":"Value"},'
               b'"s":{"dtype":"int64","_type":"Value"}}},"z":1}')
_PANDAS = json.dumps({"index_columns": [], "columns": [
    {"name": "x", "numpy_type": "float64"}, "not-a-dict", {"name": "s", "numpy_type": "int64"}],
    "pandas_version": "2.2"}).encode()


def _md_schema(md: dict[bytes, bytes] | None) -> pa.Schema:
    return pa.schema([("x", pa.float64()), ("s", pa.int64())], metadata=md)


def test_repair_new_metadata_after_a_drop(tmp_path):
    """A dropped column leaves the ``huggingface`` features and the ``pandas`` column list (other entries, other
    keys and their order kept); a dropped name the features do not list changes nothing else; pyarrow's own
    ``ARROW:schema`` is not carried over."""
    schema = _md_schema({b"ARROW:schema": b"serialized", b"huggingface": _HF_COMPACT, b"pandas": _PANDAS,
                         b"other": b"kept"})
    md = repair_pq.new_metadata(schema, None, ["s", "not-a-feature"])
    assert list(md) == [b"huggingface", b"pandas", b"other"]
    assert md[b"huggingface"] == b'{"info": {"features": {"x": {"dtype": "float64", "_type": "Value"}}}, "z": 1}'
    assert md[b"pandas"] == (b'{"index_columns": [], "columns": [{"name": "x", "numpy_type": "float64"}, '
                             b'"not-a-dict"], "pandas_version": "2.2"}')
    assert md[b"other"] == b"kept"
    # the same through a real file: the rewrite carries exactly this metadata
    f = tmp_path / "f.parquet"
    pq.write_table(pa.table({"x": [1.0], "s": [2]}).replace_schema_metadata(
        {b"huggingface": _HF_COMPACT, b"pandas": _PANDAS, b"other": b"kept"}), f)
    ops = [ColumnOp("drop", "s")]
    repair_pq.rewrite_parquet(f, ops, repair_pq.new_metadata(pq.read_schema(f), None, ["s"]))
    assert pq.read_schema(f).metadata == md and pq.read_table(f).column_names == ["x"]


def test_repair_new_metadata_without_a_drop_keeps_the_bytes():
    schema = _md_schema({b"ARROW:schema": b"serialized", b"huggingface": _HF_COMPACT, b"pandas": _PANDAS})
    assert repair_pq.new_metadata(schema, None, []) == {b"huggingface": _HF_COMPACT, b"pandas": _PANDAS}
    assert repair_pq.new_metadata(_md_schema(None), None, ["s"]) == {}
    new = b'{"info":{"features":{"x":{"dtype":"float32","_type":"Value"}}}}'
    assert repair_pq.new_metadata(schema, new, []) == {b"huggingface": new, b"pandas": _PANDAS}


def test_repair_new_metadata_given_doc_is_written_as_given_with_a_drop():
    """The given ``huggingface`` document is the caller's: written byte for byte even when it still lists the
    dropped column; the ``pandas`` description loses the column."""
    schema = _md_schema({b"huggingface": _HF_COMPACT, b"pandas": _PANDAS})
    new = b'{"info":{"features":{"s":{"dtype":"int64","_type":"Value"}}}}'
    md = repair_pq.new_metadata(schema, new, ["s"])
    assert md == {b"huggingface": new, b"pandas": (b'{"index_columns": [], "columns": [{"name": "x", '
                                                   b'"numpy_type": "float64"}, "not-a-dict"], '
                                                   b'"pandas_version": "2.2"}')}


@pytest.mark.parametrize("md", [
    {b"huggingface": b"not json", b"pandas": b"not json"},
    {b"huggingface": b'{"info": []}', b"pandas": b'{"columns": "x"}'},
    {b"huggingface": b'{"no_info": 1}', b"pandas": b"[1]"},
])
def test_repair_new_metadata_leaves_unreadable_entries_as_they_are(md):
    assert repair_pq.new_metadata(_md_schema(md), None, ["s"]) == md


def test_repair_new_schema_keeps_or_replaces_the_metadata():
    schema = _md_schema({b"huggingface": _HF_COMPACT})
    ops = [ColumnOp("dtype", "x", dtype="float32")]
    kept = repair_pq.new_schema(schema, ops, None)
    assert kept.metadata == {b"huggingface": _HF_COMPACT} and kept.field("x").type == pa.float32()
    assert repair_pq.new_schema(schema, ops, {b"k": b"v"}).metadata == {b"k": b"v"}


# ------------------------------------------------------------------------------------------------ repair: writer
def _opts(**kw):
    return {"compression": "snappy", "use_dictionary": True, "write_statistics": True, "write_page_index": False,
            "version": "2.6", **kw}


@pytest.mark.parametrize("write, want", [
    ({"compression": "zstd", "write_page_index": True}, _opts(compression="zstd", write_page_index=True)),
    ({"compression": "snappy", "version": "1.0"}, _opts(version="1.0")),
    ({"compression": "gzip", "version": "2.4", "write_page_index": True},  # pyarrow reads 2.4 back as 2.6
     _opts(compression="gzip", write_page_index=True)),
    ({"compression": "none", "version": "2.6"}, _opts(compression="none")),
    ({"compression": "brotli", "row_group_size": 2, "write_page_index": True},
     _opts(compression="brotli", write_page_index=True)),
    # an offset index without a column index (no statistics) is no page index to keep
    ({"compression": "zstd", "write_statistics": False, "write_page_index": True}, _opts(compression="zstd")),
])
def test_repair_writer_options_from_the_source_file(tmp_path, write, want):
    f = tmp_path / "f.parquet"
    pq.write_table(pa.table({"a": [1, 2, 3], "b": [1.0, 2.0, 3.0]}), f, **write)
    assert repair_pq.writer_options(pq.ParquetFile(f)) == want


def test_repair_writer_options_of_a_file_without_row_groups_and_an_unknown_codec(tmp_path):
    f = tmp_path / "empty.parquet"
    pq.ParquetWriter(f, pa.schema([("a", pa.int64())]), compression="zstd", write_page_index=True).close()
    assert pq.ParquetFile(f).metadata.num_row_groups == 0
    assert repair_pq.writer_options(pq.ParquetFile(f)) == _opts()
    # a codec pyarrow cannot write (LZO, set in the footer of an uncompressed file): snappy
    g = tmp_path / "lzo.parquet"
    pq.write_table(pa.table({"qqq": [1, 2, 3]}), g, compression="none", version="1.0")
    data = bytearray(g.read_bytes())
    i = data.index(b"qqq\x15\x00", len(data) - 8 - int.from_bytes(data[-8:-4], "little"))
    data[i + 4] = 3 * 2  # ColumnMetaData.codec = 3 (LZO), zigzag varint
    g.write_bytes(bytes(data))
    assert pq.ParquetFile(g).metadata.row_group(0).column(0).compression == "LZO"
    assert repair_pq.writer_options(pq.ParquetFile(g)) == _opts(version="1.0")


def test_repair_rewrite_keeps_codec_page_index_statistics_and_format_version(tmp_path):
    f = _episode_file(tmp_path / "f.parquet")
    t = pq.read_table(f)
    g = tmp_path / "g.parquet"
    with pq.ParquetWriter(g, t.schema, compression="zstd", write_page_index=True, version="1.0") as w:
        w.write_table(t.slice(0, 3), row_group_size=3)
        w.write_table(t.slice(3, 2), row_group_size=2)
    _rewrite_repair(g, [OPS["dtype"], OPS["fixed"]])
    md = pq.ParquetFile(g).metadata
    assert md.format_version == "1.0" and md.num_row_groups == 2
    cols = [md.row_group(r).column(c) for r in range(2) for c in range(md.num_columns)]
    assert {c.compression for c in cols} == {"ZSTD"}
    assert all(c.has_column_index and c.has_offset_index and c.is_stats_set for c in cols)
    assert pq.read_table(g).schema.field("x").type == pa.float32()


def test_repair_rewrite_keeps_a_row_group_larger_than_the_writer_default(tmp_path):
    """A row group of more than 1Mi rows (pyarrow's default row-group length) stays one row group."""
    import numpy as np

    n = 1024 * 1024 + 1
    f = tmp_path / "big.parquet"
    pq.write_table(pa.table({"a": pa.array(np.arange(n) % 100, pa.int8())}), f, row_group_size=n)
    _rewrite_repair(f, [ColumnOp("dtype", "a", dtype="int16")])
    md = pq.ParquetFile(f).metadata
    assert (md.num_row_groups, md.row_group(0).num_rows) == (1, n)
    assert pq.read_schema(f).field("a").type == pa.int16()


# ------------------------------------------------------------------------------------------------ repair: values
def test_repair_rewrite_casts_large_integers_exactly(tmp_path):
    """2**60 is exact in both int64 and float64, but beyond 2**53 a *safe* Arrow cast from int64 to float64
    refuses it: the rewrite casts with ``safe=False`` after its own exactness check."""
    f = tmp_path / "f.parquet"
    big = [2**60, -(2**60), 0, None]
    as_float = [None if v is None else float(v) for v in big]
    pq.write_table(pa.table({"i": pa.array(big, pa.int64()), "d": pa.array(as_float, pa.float64())}), f)
    _rewrite_repair(f, [ColumnOp("dtype", "i", dtype="float64"), ColumnOp("dtype", "d", dtype="int64")])
    t = pq.read_table(f)
    assert t.schema.field("i").type == pa.float64() and t.schema.field("d").type == pa.int64()
    assert t.column("i").to_pylist() == as_float
    assert t.column("d").to_pylist() == big


def test_repair_scalar_and_fixed_on_fixed_size_lists(tmp_path):
    """``scalar`` of a fixed-size list of one element takes that element; of two elements it refuses; ``fixed``
    to another length refuses too. The original stays byte-identical."""
    f = tmp_path / "f.parquet"
    pq.write_table(pa.table({
        "one": pa.array([[1], [2], None, [4]], pa.list_(pa.int64(), 1)),
        "two": pa.array([[1, 2], None, [3, 4], [5, 6]], pa.list_(pa.int64(), 2)),
    }), f)
    before = tree_hash(tmp_path)
    for op, words in [(ColumnOp("scalar", "two"), "column 'two': 3 row(s) do not have 1 element(s)"),
                      (ColumnOp("fixed", "one", length=2), "column 'one': 3 row(s) do not have 2 element(s)")]:
        with pytest.raises(RewriteError) as exc:
            _rewrite_repair(f, [op])
        assert str(exc.value) == words
        assert tree_hash(tmp_path) == before
    _rewrite_repair(f, [ColumnOp("scalar", "one")])
    t = pq.read_table(f)
    assert t.column("one").to_pylist() == [1, 2, None, 4] and t.schema.field("one").type == pa.int64()


def test_repair_apply_ops_goes_on_after_a_missing_column_and_a_drop():
    t = pa.table({"x": pa.array([0.5, 1.0]), "s": pa.array([[1], [2]]), "y": pa.array([1.5, 2.0])})
    out = repair_pq.apply_ops(t, [ColumnOp("dtype", "gone", dtype="float32"), ColumnOp("drop", "s"),
                                  ColumnOp("dtype", "x", dtype="float32"), ColumnOp("drop", "gone"),
                                  ColumnOp("dtype", "y", dtype="float32")])
    assert out.schema == pa.schema([("x", pa.float32()), ("y", pa.float32())])
    assert out.column("x").to_pylist() == [0.5, 1.0] and out.column("y").to_pylist() == [1.5, 2.0]


def test_repair_with_value_type_keeps_the_list_structure():
    wv = repair_pq.with_value_type
    assert wv(pa.large_list(pa.field("e", pa.float64())), "float32") == pa.large_list(pa.field("e", pa.float32()))
    assert wv(pa.list_(pa.large_list(pa.float64()), 3), "int32") == pa.list_(pa.large_list(pa.int32()), 3)
    assert wv(pa.list_(pa.field("element", pa.float64())), "float16") == pa.list_(pa.field("element", pa.float16()))
    assert wv(pa.float64(), "uint8") == pa.uint8()


def test_repair_rewrite_of_a_large_list_column(tmp_path):
    f = tmp_path / "f.parquet"
    pq.write_table(pa.table({"v": pa.array([[1.0, 2.5], None, []], pa.large_list(pa.float64()))}), f)
    _rewrite_repair(f, [ColumnOp("dtype", "v", dtype="float32")])
    t = pq.read_table(f)
    assert t.schema.field("v").type == pa.large_list(pa.field("element", pa.float32()))
    assert t.column("v").to_pylist() == [[1.0, 2.5], None, []]


def test_repair_two_operations_on_one_column_are_checked_together(tmp_path):
    """``scalar`` then ``dtype`` on one column: the value check is the combined one (no single operation to check
    the new values against)."""
    f = _episode_file(tmp_path / "f.parquet")
    _rewrite_repair(f, [ColumnOp("scalar", "s"), ColumnOp("dtype", "s", dtype="float64")])
    t = pq.read_table(f)
    assert t.schema.field("s").type == pa.float64() and t.column("s").to_pylist() == [1.0, 2.0, None, 4.0, 5.0]


@pytest.mark.parametrize("ops, wrong", [
    ([ColumnOp("drop", "s"), OPS["dtype"]], "x"),  # a drop before does not end the checks
    ([OPS["dtype"], OPS["fixed"]], "v"),  # nor does a dtype operation before
])
def test_repair_independent_value_check_covers_every_column(tmp_path, monkeypatch, ops, wrong):
    f = _episode_file(tmp_path / "f.parquet")
    before = tree_hash(tmp_path)
    real = repair_pq.apply_op

    def wrong_for_one(arr, op):
        new = real(arr, op)
        if op.column != wrong:
            return new
        if pa.types.is_fixed_size_list(new.type):
            return pa.array([None if r is None else r[::-1] for r in new.to_pylist()], new.type)
        return pc.multiply(new, pa.scalar(2.0, new.type))

    monkeypatch.setattr(repair_pq, "apply_op", wrong_for_one)
    with pytest.raises(RewriteError) as exc:
        _rewrite_repair(f, ops)
    assert str(exc.value) == f"f.parquet: row group 0: values of '{wrong}' changed"
    assert tree_hash(tmp_path) == before


@pytest.mark.parametrize("arr, t, exact", [
    (pa.array([None, None], pa.float64()), pa.float32(), True),  # all null
    (pa.array([], pa.float64()), pa.float32(), True),
    (pa.array([[], None], pa.list_(pa.float64())), pa.list_(pa.float32()), True),  # no leaf values
    (pa.array(["1", "a"]), pa.int64(), False),  # the cast itself fails
    (pa.array([{"a": 1}]), pa.int64(), False),  # no such cast
    (pa.array([float(2**24), -float(2**24)]), pa.float32(), True),  # largest exact integers of float32
    (pa.array([float(2**24 + 1)]), pa.float32(), False),
    (pa.array([2**24, -(2**24)]), pa.float32(), True),
    (pa.array([2**24 + 1]), pa.float32(), False),
    (pa.array([2048.0, -2048.0, 65504.0]), pa.float16(), True),  # float16: 2048 exact, 65504 its largest value
    (pa.array([2049.0]), pa.float16(), False),
    (pa.array([65536.0]), pa.float16(), False),  # beyond float16: inf
    (pa.array([-0.0, float("inf"), float("-inf"), float("nan")]), pa.float32(), True),
    (pa.array([1e39]), pa.float32(), False),  # inf in float32
    (pa.array([1e-46]), pa.float32(), False),  # 0 in float32
    (pa.array([0.5, None]), pa.int64(), False),
    (pa.array([2.0**63]), pa.int64(), False),  # one beyond int64
])
def test_repair_exact_conversion_boundaries(arr, t, exact):
    assert repair_pq.exact_conversion(arr, t) is exact


def test_repair_scan_exact_counts_record_batches(tmp_path):
    """Batches of 65536 rows: inexact values in the first row of the first and of the second batch are two bad
    batches; a list column is scanned by its leaf values."""
    import numpy as np

    n = 2 * 65536 + 5
    x = np.zeros(n)
    x[0] = x[65536] = 0.1  # not a float32
    f = tmp_path / "f.parquet"
    pq.write_table(pa.table({"x": x, "y": np.ones(n)}), f)
    assert repair_pq.scan_exact(f, "x", "float32") == 2
    assert repair_pq.scan_exact(f, "y", "float32") == 0
    assert repair_pq.scan_exact(f, "x", "float64") == 0
    g = tmp_path / "g.parquet"
    pq.write_table(pa.table({"v": pa.array([[1.0, 2.0**24], None, [-0.0]]),
                             "w": pa.array([[1.0], [2.0**24 + 1], None])}), g)
    assert repair_pq.scan_exact(g, "v", "float32") == 0
    assert repair_pq.scan_exact(g, "w", "float32") == 1


def test_repair_scan_list_lengths_counts_over_every_batch(tmp_path):
    n = 2 * 65536 + 5
    import numpy as np

    sizes = np.full(n, 2, dtype=np.int32)
    sizes[[3, 70000, n - 1]] = 3  # wrong length in the first, second and third batch
    offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int32)
    values = pa.array(np.ones(int(offsets[-1])), pa.float32())
    mask = np.zeros(n, dtype=bool)
    mask[[5, 65540, 131073]] = True  # null rows in every batch
    v = pa.ListArray.from_arrays(pa.array(offsets), values, mask=pa.array(mask))
    f = tmp_path / "f.parquet"
    pq.write_table(pa.table({"v": v}), f)
    assert repair_pq.scan_list_lengths(f, "v", 2) == (3, 3)
    assert repair_pq.scan_list_lengths(f, "v", 3) == (n - 6, 3)
    assert repair_pq.distinct_list_lengths(f, "v") == {2, 3}


@pytest.mark.parametrize("x, y, same", [
    (pa.array([1.0]), pa.array([1.0], pa.float32()), False),  # types differ
    (pa.array([1.0, float("nan")]), pa.array([1.0, float("nan")]), True),
    (pa.array([float("nan")]), pa.array([1.0]), False),
    (pa.array([None, 1.0]), pa.array([1.0, 1.0]), False),
    (pa.array([[1.0, float("nan")], None]), pa.array([[1.0, float("nan")], None]), True),
    (pa.array([[1.0], [2.0, 3.0]]), pa.array([[1.0, 2.0], [3.0]]), False),  # list lengths, same leaves
    (pa.array([[1.0, None, float("nan")]]), pa.array([[None, 1.0, float("nan")]]), False),  # inner nulls
    (pa.array([[1.0, float("nan")], None]), pa.array([[1.0, float("nan")], []]), False),  # null list vs empty
    (pa.array([[[1.0], [float("nan"), 2.0]]]), pa.array([[[1.0], [float("nan"), 2.0]]]), True),  # nested
    (pa.array([[[1.0], [float("nan"), 2.0]]]), pa.array([[[1.0, float("nan")], [2.0]]]), False),
    (pa.array([[[1.0, None]], [[float("nan")]]]), pa.array([[[1.0, 1.0]], [[float("nan")]]]), False),
    (pa.array([[1.0, float("nan")]], pa.list_(pa.float32(), 2)),
     pa.array([[1.0, float("nan")]], pa.list_(pa.float32(), 2)), True),
    (pa.array([[1, 2]], pa.large_list(pa.int64())), pa.array([[1, 3]], pa.large_list(pa.int64())), False),
    (pa.array([{"x": 1.0, "y": 1}]), pa.array([{"x": 1.0, "y": 1}]), True),
    (pa.array([{"x": 1.0, "y": 1}]), pa.array([{"x": 1.0, "y": 2}]), False),
    (pa.chunked_array([[1.0], [float("nan")]]), pa.chunked_array([[1.0, float("nan")]]), True),
])
def test_values_equal_as_repair_uses_it(x, y, same):
    assert values_equal(x, y) is same
    assert values_equal(y, x) is same


# ------------------------------------------------------------------------------------------------ tasks.parquet
def test_tasks_parquet_is_written_as_lerobot_writes_it(tmp_path):
    import pandas as pd

    p = tmp_path / "tasks.parquet"
    repair_pq.write_tasks_parquet(p, [(0, "pick"), (2, "place"), (1, "stack")])
    schema = pq.read_schema(p)
    assert schema.names == ["task_index", "task"] and schema.field("task_index").type == pa.int64()
    assert json.loads(schema.metadata[b"pandas"])["index_columns"] == ["task"]
    back = pd.read_parquet(p)
    assert back.index.name == "task" and list(back.index) == ["pick", "place", "stack"]
    assert list(back.columns) == ["task_index"] and list(back["task_index"]) == [0, 2, 1]
    repair_pq.write_tasks_parquet(p, [])  # no tasks: still an int64 column
    assert pq.read_schema(p).field("task_index").type == pa.int64() and len(pd.read_parquet(p)) == 0


def _no_pandas_metadata(real):
    def write(self, path, **kw):
        t = pa.Table.from_pandas(self)
        pq.write_table(t.replace_schema_metadata(None), path)
    return write


@pytest.mark.parametrize("wrong, words", [
    (lambda real: (lambda self, path, **kw: real(self.reset_index(drop=True).rename_axis("task"), path, **kw)),
     "tasks.parquet rewrite is not indexed by 'task'"),  # a range index named task
    (_no_pandas_metadata, "tasks.parquet rewrite is not indexed by 'task'"),
    (lambda real: (lambda self, path, **kw: real(self.assign(extra=1), path, **kw)),
     "tasks.parquet rewrite does not read back with the same tasks"),  # one column too many
    (lambda real: (lambda self, path, **kw: real(self.set_axis(["a", "b"]).rename_axis("task"), path, **kw)),
     "tasks.parquet rewrite does not read back with the same tasks"),  # labels wrong, indices right
    (lambda real: (lambda self, path, **kw: real(self.assign(task_index=[0, 5]), path, **kw)),
     "tasks.parquet rewrite does not read back with the same tasks"),  # indices wrong, labels right
])
def test_tasks_parquet_rewrite_refuses_a_file_wrong_in_one_way(tmp_path, monkeypatch, wrong, words):
    import pandas as pd

    p = tmp_path / "tasks.parquet"
    repair_pq.write_tasks_parquet(p, [(0, "pick"), (1, "place")])
    before = tree_hash(tmp_path)
    monkeypatch.setattr(pd.DataFrame, "to_parquet", wrong(pd.DataFrame.to_parquet))
    with pytest.raises(RewriteError) as exc:
        repair_pq.write_tasks_parquet(p, [(0, "pick"), (1, "stack")])
    assert str(exc.value) == f"{p}: {words}"
    assert tree_hash(tmp_path) == before


def test_repair_rewrite_keeps_a_struct_column_holding_nan(tmp_path):
    """A struct column with a NaN inside (Arrow's ``equals`` says NaN != NaN) is not "changed" by a rewrite of
    another column: the verification compares struct fields one by one, NaN equal to NaN."""
    f = tmp_path / "st.parquet"
    st = pa.array([{"x": float("nan"), "y": 1}, {"x": 2.5, "y": None}, None], pa.struct([("x", pa.float64()),
                                                                                           ("y", pa.int64())]))
    pq.write_table(pa.table({"episode_index": pa.array([0, 0, 0], pa.int64()), "st": st,
                             "a": pa.array([1.0, 2.0, 3.0], pa.float64())}), f)
    _rewrite_repair(f, [ColumnOp("dtype", "a", dtype="float32")])
    out = pq.read_table(f)
    assert out.schema.field("a").type == pa.float32()
    got = out.column("st").to_pylist()
    assert got[0]["x"] != got[0]["x"] and got[0]["y"] == 1 and got[1] == {"x": 2.5, "y": None} and got[2] is None
    assert values_equal(st, st)
    assert not values_equal(st, pa.array([{"x": 1.0, "y": 1}, {"x": 2.5, "y": None}, None], st.type))
