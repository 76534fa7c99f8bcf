"""What lrtool writes into a dataset stays inside it, through every symlink (lerobot_tools/_contain.py).

A dataset folder that is a symlink out of the dataset (``data/``, ``videos/``, a chunk folder, a file) is an F013
warning in validate, and ``repair``, ``repair --undo`` and ``reshard`` refuse the dataset before a byte changes;
no walk of validate leaves the dataset through such a link. Links of a Hub snapshot into its repository's
``blobs/`` stay inside. Each test builds the links on real copies of the fixtures and checks what is on disk
afterwards, inside and outside the dataset.
"""

from __future__ import annotations

import hashlib
import os
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from lerobot_tools.checks.engine import ValidateOptions, validate_target
from lerobot_tools.cli import cli
from lerobot_tools.dataset import resolve_targets
from lerobot_tools.dataset.model import files_under
from lerobot_tools.repair import RepairOptions, plan_repair, repair_target, undo
from lerobot_tools.repair.apply import write_change
from lerobot_tools.repair.model import Move
from lerobot_tools.reshard import ReshardOptions, reshard

DATASETS = Path(__file__).resolve().parents[2] / "fixtures" / "datasets"


def tree(root: Path) -> dict[str, str]:
    """sha256 of every file below ``root`` (links followed), and ``->target`` for every symlink."""
    out = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in sorted(dirnames + filenames):
            p = Path(dirpath, name)
            rel = p.relative_to(root).as_posix()
            if p.is_symlink():
                out[rel] = "->" + os.readlink(p)
            elif p.is_file():
                out[rel] = hashlib.sha256(p.read_bytes()).hexdigest()
    return out


def linked_pair(tmp_path: Path, fixture: str, folder: str = "data") -> tuple[Path, Path]:
    """Two copies of ``fixture``: ``other`` and ``ds``, whose ``folder`` is a relative symlink to other's."""
    other, ds = tmp_path / "other", tmp_path / "ds"
    shutil.copytree(DATASETS / fixture, other)
    shutil.copytree(DATASETS / fixture, ds)
    shutil.rmtree(ds / folder)
    os.symlink(Path("..") / "other" / folder, ds / folder)
    return ds, other


def target(root: Path):
    (t,) = resolve_targets([str(root)])
    return t


def findings(root: Path, check: str | None = None) -> list:
    rep = validate_target(target(root), ValidateOptions())
    return [f for f in rep.findings if check is None or f.check == check]


# ---------------------------------------------------------------------- writers refuse, nothing changes
def test_reshard_refuses_a_data_folder_linked_to_another_dataset(tmp_path):
    ds, other = linked_pair(tmp_path, "clean_v21")
    before, before_ds = tree(other), tree(ds)
    run = reshard([str(ds)], ReshardOptions())
    (d,) = run.datasets
    assert d.error == (f"data is a symlink to {other / 'data'} (folder), outside the dataset; lrtool does not reshard "
                       "through a symlink out of the dataset (it would change files of another folder, under this "
                       "dataset's lock only); nothing was changed: replace the link with a copy of what it points to")
    assert d.files == [] and run.exit_status == 1
    assert tree(other) == before and tree(ds) == before_ds  # not even .lrtool/ (the lock) was created


def test_reshard_dry_run_refuses_too(tmp_path):
    ds, _ = linked_pair(tmp_path, "clean_v21")
    (d,) = reshard([str(ds)], ReshardOptions(dry_run=True)).datasets
    assert "data is a symlink to" in d.error and d.files == []


def test_repair_refuses_a_data_folder_linked_to_another_dataset(tmp_path):
    # the repair rewrites both data files (S005, S006): through the link they were the other dataset's
    ds, other = linked_pair(tmp_path, "broken_variable_list")
    before, before_ds = tree(other), tree(ds)
    for dry in (True, False):
        res = repair_target(target(ds), RepairOptions(), dry_run=dry)
        assert res.status == 2 and not res.applied
        assert res.plan.cannot_run.startswith(f"data is a symlink to {other / 'data'} (folder), outside the dataset; "
                                              "lrtool does not repair through a symlink out of the dataset")
    assert tree(other) == before and tree(ds) == before_ds


def test_repair_cli_is_one_line_exit_2(tmp_path):
    ds, other = linked_pair(tmp_path, "broken_variable_list")
    before = tree(other)
    r = CliRunner().invoke(cli, ["repair", str(ds)])
    assert r.exit_code == 2, r.output
    assert "cannot repair: data is a symlink to" in r.output and "Traceback" not in r.output
    assert tree(other) == before


def test_undo_refuses_once_a_folder_links_out(tmp_path):
    root = tmp_path / "ds"
    shutil.copytree(DATASETS / "broken_wrong_totals", root)
    assert repair_target(target(root), RepairOptions()).applied
    repaired = tree(root)
    outside = tmp_path / "videos-elsewhere"
    (root / "videos").rename(outside)
    os.symlink(outside, root / "videos")
    res = undo(target(root))
    assert res.status == 2 and res.restored == []
    assert res.cannot_run.startswith(f"videos is a symlink to {outside} (folder), outside the dataset; lrtool does "
                                     "not undo a repair through a symlink out of the dataset")
    dry = undo(target(root), dry_run=True)
    assert dry.status == 2 and dry.cannot_run == res.cannot_run
    os.unlink(root / "videos")
    outside.rename(root / "videos")
    assert tree(root) == repaired  # the backup is still there and the repair still applied
    assert undo(target(root)).status == 0


def test_move_files_refuses_a_destination_chunk_folder_linked_out(tmp_path):
    # data/chunk-000 is a link to a folder outside; the misplaced file-002 would be moved there, out of the dataset
    root, outside = tmp_path / "ds", tmp_path / "outside"
    shutil.copytree(DATASETS / "broken_data_elsewhere", root)
    outside.mkdir()
    (root / "data" / "chunk-000").rename(outside / "chunk-000")
    os.symlink(outside / "chunk-000", root / "data" / "chunk-000")
    before, before_out = tree(root), tree(outside)
    res = repair_target(target(root), RepairOptions(move_files=True))
    assert res.status == 2 and "data/chunk-000 is a symlink to" in res.plan.cannot_run
    assert tree(root) == before and tree(outside) == before_out
    assert (root / "data" / "chunk-001" / "file-002.parquet").is_file()
    # the plan itself (without the refusal at the entry point) plans no move out of the dataset either
    plan = plan_repair(target(root), RepairOptions(move_files=True))
    assert plan.moves == []
    refused = [d for d in plan.dispositions if d.finding.check == "F001"]
    assert refused and all(d.action != "repair" for d in refused)
    assert any(f"data/chunk-000/file-002.parquet would be written outside the dataset (it resolves to "
               f"{outside / 'chunk-000' / 'file-002.parquet'})" in (d.reason or "") for d in refused), \
        [d.reason for d in refused]


def test_move_files_refuses_a_file_to_move_that_is_a_symlink(tmp_path):
    # the misplaced file is a link to a file kept elsewhere inside the dataset: moving the link is refused
    root = tmp_path / "ds"
    shutil.copytree(DATASETS / "broken_data_elsewhere", root)
    store = root / "store"
    store.mkdir()
    (root / "data" / "chunk-001" / "file-002.parquet").rename(store / "file-002.parquet")
    os.symlink(Path("..") / ".." / "store" / "file-002.parquet", root / "data" / "chunk-001" / "file-002.parquet")
    before = tree(root)
    res = repair_target(target(root), RepairOptions(move_files=True))
    assert res.plan.moves == [] and not res.applied
    assert any("data/chunk-001/file-002.parquet is a symlink, not a file; lrtool moves only regular files"
               in (d.reason or "") for d in res.plan.dispositions), [d.reason for d in res.plan.dispositions]
    assert tree(root) == before


def test_move_files_with_the_file_to_move_linked_out_is_refused_whole(tmp_path):
    root, outside = tmp_path / "ds", tmp_path / "outside"
    shutil.copytree(DATASETS / "broken_data_elsewhere", root)
    outside.mkdir()
    (root / "data" / "chunk-001" / "file-002.parquet").rename(outside / "file-002.parquet")
    os.symlink(outside / "file-002.parquet", root / "data" / "chunk-001" / "file-002.parquet")
    before, before_out = tree(root), tree(outside)
    res = repair_target(target(root), RepairOptions(move_files=True))
    assert res.status == 2
    assert res.plan.cannot_run.startswith(f"data/chunk-001/file-002.parquet is a symlink to "
                                          f"{outside / 'file-002.parquet'} (file), outside the dataset")
    assert tree(root) == before and tree(outside) == before_out
    assert undo(target(root)).status == 2  # nothing to undo: no backup was made


def test_a_move_never_replaces_an_existing_destination(tmp_path):
    # the last line of defence: the planned destination appeared after the plan was made
    root = tmp_path / "ds"
    (root / "a").mkdir(parents=True)
    (root / "b").mkdir()
    (root / "a" / "f.parquet").write_bytes(b"moved")
    (root / "b" / "f.parquet").write_bytes(b"already there")
    with pytest.raises(Exception) as exc:
        write_change(root, Move(src="a/f.parquet", dst="b/f.parquet", check="F001"))
    assert "destination already exists" in str(exc.value)
    assert (root / "b" / "f.parquet").read_bytes() == b"already there"
    assert (root / "a" / "f.parquet").read_bytes() == b"moved"


def test_move_files_plan_refuses_a_dangling_symlink_at_the_destination(tmp_path):
    # the referenced file is missing (F001: a dangling link opens nothing), but the name is taken: a rename would
    # silently replace the link
    root = tmp_path / "ds"
    shutil.copytree(DATASETS / "broken_data_elsewhere", root)
    os.symlink("nowhere.parquet", root / "data" / "chunk-000" / "file-002.parquet")
    plan = plan_repair(target(root), RepairOptions(move_files=True))
    assert plan.moves == []
    assert any("data/chunk-000/file-002.parquet already exists" in (d.reason or "")
               for d in plan.dispositions), [d.reason for d in plan.dispositions]
    assert os.readlink(root / "data" / "chunk-000" / "file-002.parquet") == "nowhere.parquet"


# ---------------------------------------------------------------------- validate: F013, and no walk out
def test_validate_reports_each_link_out_as_f013(tmp_path):
    ds, other = linked_pair(tmp_path, "clean_v21")
    (f,) = findings(ds, "F013")
    assert (f.severity, f.path, f.subject) == ("warning", "data", {"file_kind": "data"})
    assert f.message.startswith(f"folder is a symlink to {other / 'data'}, outside the dataset: loaders read through "
                                "it")
    # the referenced files are still checked through the link, as the loaders read them
    assert [x.check for x in findings(ds) if x.severity != "info"] == ["F013"]


def test_f013_groups_many_file_links_per_folder(tmp_path):
    ds, other = tmp_path / "ds", tmp_path / "other"
    shutil.copytree(DATASETS / "clean_v21", other)
    shutil.copytree(DATASETS / "clean_v21", ds)
    for p in sorted((ds / "data" / "chunk-000").iterdir()):
        p.unlink()
        os.symlink(other / "data" / "chunk-000" / p.name, p)
    (f,) = findings(ds, "F013")
    assert f.count == 3 and f.group == "symlinks under data/chunk-000/ lead outside the dataset"
    assert f.message.startswith("file is a symlink to ")


def test_links_inside_the_dataset_and_into_a_hub_snapshots_blobs_are_not_reported(tmp_path):
    from lerobot_tools import _contain

    ds = tmp_path / "ds"
    shutil.copytree(DATASETS / "clean_v21", ds)
    os.symlink("episode_000000.parquet", ds / "meta" / "alias.parquet")  # inside: not reported
    os.symlink(Path("..") / "data", ds / "meta" / "data-alias")
    assert findings(ds, "F013") == []
    # a hub snapshot: every file a link into <repo>/blobs
    repo = tmp_path / "hub" / "datasets--org--ds"
    snap = repo / "snapshots" / ("a" * 40)
    shutil.copytree(DATASETS / "clean_v21", snap)
    (repo / "blobs").mkdir()
    for p in sorted(q for q in snap.rglob("*") if q.is_file()):
        blob = repo / "blobs" / hashlib.sha256(str(p).encode()).hexdigest()
        p.rename(blob)
        os.symlink(os.path.relpath(blob, p.parent), p)
    assert _contain.containment_root(snap) == repo.resolve()
    assert findings(snap, "F013") == []
    assert _contain.escaping_symlinks(snap) == []
    _contain.refuse_escaping_symlinks(snap, "reshard")  # no refusal


def test_validate_does_not_look_for_orphans_through_a_link_out(tmp_path):
    # data/ and videos/ link to folders outside holding stray files: they are not this dataset's orphans
    ds, other = linked_pair(tmp_path, "clean_v21")
    shutil.copy(other / "data" / "chunk-000" / "episode_000000.parquet",
                other / "data" / "chunk-000" / "episode_000009.parquet")
    vids = tmp_path / "vids"
    shutil.copytree(ds / "videos", vids)
    shutil.copy(next(vids.rglob("*.mp4")), vids / "chunk-000" / "observation.images.front" / "episode_000009.mp4")
    shutil.rmtree(ds / "videos")
    os.symlink(vids, ds / "videos")
    got = findings(ds)
    assert [f.check for f in got if f.check == "F003"] == []
    assert sorted(f.path for f in got if f.check == "F013") == ["data", "videos"]
    assert files_under(ds, "data", ".parquet") == [] and files_under(ds, "videos", ".mp4") == []
    assert files_under(other, "data", ".parquet")  # the same walk inside a dataset lists its files


def test_validate_does_not_walk_the_file_system_through_a_link_to_root(tmp_path, monkeypatch):
    ds = tmp_path / "ds"
    shutil.copytree(DATASETS / "clean_v21", ds)
    shutil.rmtree(ds / "videos")
    os.symlink("/", ds / "videos")
    os.symlink("/", ds / "images")
    walked: list[str] = []
    real_walk = os.walk

    def walk(top, *a, **k):
        walked.append(os.fspath(top))
        return real_walk(top, *a, **k)

    monkeypatch.setattr(os, "walk", walk)
    got = findings(ds)
    assert not any(os.path.realpath(w) == "/" for w in walked), walked
    assert sorted(f.path for f in got if f.check == "F013") == ["images", "videos"]
    assert not [f for f in got if f.check in ("F003", "F011")]


def test_escaping_symlinks_lists_folders_files_and_dangling_links(tmp_path):
    from lerobot_tools import _contain

    root = tmp_path / "ds"
    (root / "a" / "b").mkdir(parents=True)
    (root / ".git").mkdir()
    (root / ".lrtool").mkdir()
    os.symlink("/", root / "a" / "to-root")
    os.symlink(tmp_path / "nowhere", root / "a" / "b" / "dangling")
    os.symlink("/etc/hostname", root / "file")
    os.symlink("/", root / ".git" / "x")  # .git and .lrtool are not the dataset's files
    os.symlink("/", root / ".lrtool" / "x")
    os.symlink("a", root / "inside")
    got = _contain.escaping_symlinks(root)
    assert [(e.relpath, e.target, e.is_dir) for e in got] == [
        ("a/b/dangling", str(tmp_path / "nowhere"), False), ("a/to-root", "/", True),
        ("file", os.path.realpath("/etc/hostname"), False)]
    assert [e.relpath for e in _contain.escaping_symlinks(root, limit=2)] == ["a/b/dangling", "a/to-root"]
    assert got[1].describe() == "a/to-root is a symlink to / (folder), outside the dataset"
    with pytest.raises(_contain.EscapingSymlink) as exc:
        _contain.refuse_escaping_symlinks(root, "reshard")
    assert exc.value.path == str(root)
    assert exc.value.message.startswith(f"a/b/dangling is a symlink to {tmp_path / 'nowhere'} (file), outside the "
                                        "dataset (and 2 other symlink(s) out, e.g. a/to-root); lrtool does not reshard")
    # a dataset root that is itself a link is where the dataset is, not a link out of it
    os.symlink(root / "a", tmp_path / "link-root")
    assert [e.relpath for e in _contain.escaping_symlinks(tmp_path / "link-root")] == ["b/dangling", "to-root"]


def test_is_inside_and_walk_root(tmp_path):
    from lerobot_tools import _contain

    base = tmp_path.resolve()
    (tmp_path / "ds" / "data").mkdir(parents=True)
    (tmp_path / "dsx").mkdir()
    assert _contain.is_inside(tmp_path / "ds", base) and _contain.is_inside(tmp_path, base)
    assert not _contain.is_inside(tmp_path / "ds", base / "d")  # a prefix of the name is not a parent
    assert not _contain.is_inside(tmp_path / "dsx", base / "ds")
    os.symlink(tmp_path / "dsx", tmp_path / "ds" / "out")
    assert _contain.walk_root(tmp_path / "ds", "data") and not _contain.walk_root(tmp_path / "ds", "out")
    assert not _contain.walk_root(tmp_path / "ds", "missing")


def test_refusal_counts_the_other_links_out_and_says_when_it_stopped_looking(tmp_path, monkeypatch):
    from lerobot_tools import _contain

    monkeypatch.setattr(_contain, "REFUSAL_SCAN_LIMIT", 3)
    root = tmp_path / "ds"
    root.mkdir()
    for n, expected in ((1, ""), (2, " (and 1 other symlink(s) out, e.g. l1)"),
                        (3, " (and 2+ other symlink(s) out, e.g. l1)"), (5, " (and 2+ other symlink(s) out, e.g. l1)")):
        for i in range(n):
            if not os.path.lexists(root / f"l{i}"):
                os.symlink("/", root / f"l{i}")
        with pytest.raises(_contain.EscapingSymlink) as exc:
            _contain.refuse_escaping_symlinks(root, "reshard")
        assert exc.value.message.startswith(f"l0 is a symlink to / (folder), outside the dataset{expected}; "), n


def test_containment_root_widens_only_to_a_hub_repository_folder(tmp_path):
    from lerobot_tools import _contain

    for parts, blobs, widened in ((("x", "snapshots", "ds"), False, False), (("y", "other", "ds"), True, False),
                                  (("z", "snapshots", "ds"), True, True)):
        root = tmp_path.joinpath(*parts)
        root.mkdir(parents=True)
        if blobs:
            (root.parent.parent / "blobs").mkdir()
        assert _contain.containment_root(root) == (root.parent.parent if widened else root).resolve(), parts
    assert _contain.is_inside("/etc", "/") and _contain.is_inside("/", "/")


def test_f013_message_whole_and_the_scan_skipped_when_f013_is_not_selected(tmp_path, monkeypatch):
    from lerobot_tools.checks import symlinks

    ds, other = linked_pair(tmp_path, "clean_v21")
    (f,) = findings(ds, "F013")
    assert f.message == (f"folder is a symlink to {other / 'data'}, outside the dataset: loaders read through it, "
                         "lrtool does not write through it (repair and reshard refuse the dataset) nor look there for "
                         "unreferenced files")

    def no_scan(*a, **k):
        raise AssertionError("scanned for links although F013 is not selected")

    monkeypatch.setattr(symlinks, "escaping_symlinks", no_scan)
    rep = validate_target(target(ds), ValidateOptions(ignore={"F013"}))
    assert not [x for x in rep.findings if x.check == "F013"]


def test_f013_says_when_it_stopped_listing_links(tmp_path, monkeypatch):
    from lerobot_tools.checks import symlinks

    monkeypatch.setattr(symlinks, "MAX_REPORTED", 2)
    ds, other = tmp_path / "ds", tmp_path / "other"
    shutil.copytree(DATASETS / "clean_v21", other)
    shutil.copytree(DATASETS / "clean_v21", ds)
    for p in sorted((ds / "data" / "chunk-000").iterdir())[:2]:
        p.unlink()
        os.symlink(other / "data" / "chunk-000" / p.name, p)
    rep = validate_target(target(ds), ValidateOptions())
    assert [(f.check, f.count) for f in rep.findings if f.check == "F013"] == [("F013", 2)]
    assert [(n.checks, n.reason) for n in rep.not_checked if "F013" in n.checks] == [
        ("F013 (other symlinks)", "only the first 2 symlinks out of the dataset are listed")]
    p = sorted((ds / "data" / "chunk-000").iterdir())[2]  # a third link: still 2 listed
    p.unlink()
    os.symlink(other / "data" / "chunk-000" / p.name, p)
    rep = validate_target(target(ds), ValidateOptions())
    assert [(f.check, f.count) for f in rep.findings if f.check == "F013"] == [("F013", 2)]
    monkeypatch.setattr(symlinks, "MAX_REPORTED", 4)  # 3 of at most 4: all listed, nothing said
    rep = validate_target(target(ds), ValidateOptions())
    assert [(f.check, f.count) for f in rep.findings if f.check == "F013"] == [("F013", 3)]
    assert not [n for n in rep.not_checked if "F013" in n.checks]


def test_move_files_plan_of_a_misplaced_data_file_in_full(tmp_path):
    root = tmp_path / "ds"
    shutil.copytree(DATASETS / "broken_data_elsewhere", root)
    plan = plan_repair(target(root), RepairOptions(move_files=True, only={"F001"}))
    assert plan.moves == [Move(src="data/chunk-001/file-002.parquet", dst="data/chunk-000/file-002.parquet",
                               check="F001")]
    assert [(r.check, r.summary) for r in plan.repairs] == [
        ("F001", "move 1 data file(s) from another chunk folder to where data_path points "
                 "('data/chunk-{chunk_index:03d}/file-{file_index:03d}.parquet')")]
    plain = plan_repair(target(root), RepairOptions())
    (d,) = [d for d in plain.dispositions if d.finding.check == "F001"]
    assert (d.reason, d.todo) == ("1 of the 1 missing data file(s) are under another chunk folder; loaders read data "
                                  "files only where data_path points", "rerun with --move-files to move them there")


def test_move_files_refusals_say_what_to_do(tmp_path):
    root = tmp_path / "ds"
    shutil.copytree(DATASETS / "broken_data_elsewhere", root)
    os.symlink("nowhere.parquet", root / "data" / "chunk-000" / "file-002.parquet")
    (d,) = [d for d in plan_repair(target(root), RepairOptions(move_files=True)).dispositions
            if d.finding.check == "F001"]
    assert (d.reason, d.todo) == ("data/chunk-000/file-002.parquet already exists", "move it away, then rerun")
    os.unlink(root / "data" / "chunk-000" / "file-002.parquet")
    src = root / "data" / "chunk-001" / "file-002.parquet"
    src.rename(root / "kept.parquet")
    os.symlink(Path("..") / ".." / "kept.parquet", src)
    (d,) = [d for d in plan_repair(target(root), RepairOptions(move_files=True)).dispositions
            if d.finding.check == "F001"]
    assert (d.reason, d.todo) == ("data/chunk-001/file-002.parquet is a symlink, not a file; lrtool moves only regular "
                                  "files", "replace the link with the file it points to, then rerun")


def test_a_scaled_out_plan_does_not_walk_a_meta_folder_linked_out(tmp_path):
    """Sizing a split dataset for ``--shard``/``--executor`` counts the bytes under meta/; a meta/ linked out of
    the dataset (to / at worst) is not walked: it counts 0 while a real meta/ counts its files."""
    from lerobot_tools.dataset.model import Dataset
    from lerobot_tools.distributed.validate_job import _meta_bytes

    ds, other = linked_pair(tmp_path, "clean_v30", "meta")
    real = Dataset(other)
    assert _meta_bytes(real) == sum(p.stat().st_size for p in (other / "meta").rglob("*") if p.is_file()) > 0
    assert _meta_bytes(Dataset(ds)) == 0
