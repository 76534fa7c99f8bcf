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
from lerobot_tools.reshard import ReshardOptions, reshard_file
from lerobot_tools.reshard import write as reshard_write

REPO = Path(__file__).resolve().parents[1]
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
    real_bpr = reshard_write._bytes_per_row
    monkeypatch.setattr(reshard_write, "_bytes_per_row", lambda footer: [(row, b / 1000) for row, b in real_bpr(footer)])
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
    (lambda t, n: _set(t, "x", [None] * t.num_rows) if n == 1 else t, "row group 0: column 'x' differs from the original"),
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
    from lerobot_tools.reshard.verify import _arrays_equal

    return _arrays_equal(a, b)


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
