"""``repair --move-files`` (``lerobot_tools/repair/fixes/files.py``): the behaviour that planted single-line bugs went
unnoticed by (``benchmarks/mutation.py``): files found nowhere, partial finds, the ``--only`` selection, and the last
check before a move (a source or a destination reached through a folder linked out of the dataset).

Each test copies a fixture dataset, moves or links its files the way a sync tool or a user does, and checks the
plan's words, what ``repair`` does on disk, and what ``repair --undo`` restores.
"""

from __future__ import annotations

import hashlib
import os
import shutil
from pathlib import Path

import pytest

from lerobot_tools.dataset.targets import resolve_targets
from lerobot_tools.repair import RepairOptions, plan_repair, repair_target, undo
from lerobot_tools.repair.model import Move

DATASETS = Path(__file__).resolve().parents[2] / "fixtures" / "datasets"
TEMPLATE = "data/chunk-{chunk_index:03d}/file-{file_index:03d}.parquet"
FRONT = "observation.images.front"


def target(root: Path):
    (t,) = resolve_targets([str(root)])
    return t


def copy(fixture: str, tmp_path: Path) -> Path:
    root = tmp_path / "ds"
    shutil.copytree(DATASETS / fixture, root)
    return root


def sha(p: Path) -> str:
    return hashlib.sha256(p.read_bytes()).hexdigest()


def tree(root: Path) -> dict[str, str]:
    """sha256 of every regular file below ``root`` (``.lrtool/`` left out), ``->target`` for every symlink."""
    out = {}
    for p in sorted(root.rglob("*")):
        rel = p.relative_to(root).as_posix()
        if rel.startswith(".lrtool"):
            continue
        if p.is_symlink():
            out[rel] = "->" + os.readlink(p)
        elif p.is_file():
            out[rel] = sha(p)
    return out


def refusal(plan, check: str) -> tuple[str, str]:
    (d,) = [d for d in plan.dispositions if d.finding.check == check]
    assert d.action == "not-repairable", d
    return d.reason, d.todo


def test_data_files_found_nowhere_are_not_moved_and_the_repair_says_to_restore_them(tmp_path):
    root = copy("broken_data_elsewhere", tmp_path)
    (root / "data" / "chunk-001" / "file-002.parquet").unlink()  # the misplaced file is gone too
    before = tree(root)
    plan = plan_repair(target(root), RepairOptions(move_files=True))
    assert plan.moves == [] and not [r for r in plan.repairs if r.check == "F001"]
    assert refusal(plan, "F001") == ("the 1 missing data file(s) are in no neighbouring layout",
                                     "restore the missing data files (re-download them: `lrtool prefetch` or "
                                     "`hf download`)")
    repair_target(target(root), RepairOptions(move_files=True))
    assert tree(root) == before


def test_video_files_found_nowhere_say_the_same_for_videos(tmp_path):
    root = copy("broken_videos_elsewhere", tmp_path)
    shutil.rmtree(root / "video")
    assert refusal(plan_repair(target(root), RepairOptions(move_files=True)), "F002") == (
        "the 3 missing video file(s) are in no neighbouring layout",
        "restore the missing video files (re-download them: `lrtool prefetch` or `hf download`)")


def test_a_partial_find_moves_what_was_found_names_the_rest_and_undoes(tmp_path):
    root = copy("broken_data_elsewhere", tmp_path)
    (root / "data" / "chunk-000" / "file-001.parquet").unlink()  # absent everywhere
    found = root / "data" / "chunk-001" / "file-002.parquet"
    digest = sha(found)
    plan = plan_repair(target(root), RepairOptions(move_files=True))
    assert plan.moves == [Move(src="data/chunk-001/file-002.parquet", dst="data/chunk-000/file-002.parquet",
                               check="F001")]
    (rep,) = [r for r in plan.repairs if r.check == "F001"]
    assert rep.summary == (f"move 1 data file(s) from another chunk folder to where data_path points ({TEMPLATE!r}); "
                           "1 absent everywhere stay missing (e.g. data/chunk-000/file-001.parquet)")
    assert rep.files == ["data/chunk-001/file-002.parquet", "data/chunk-000/file-002.parquet"]
    before = tree(root)
    res = repair_target(target(root), RepairOptions(move_files=True))
    assert res.status == 1  # one data file is still missing
    assert sha(root / "data" / "chunk-000" / "file-002.parquet") == digest and not found.exists()
    assert undo(target(root)).status == 0
    assert tree(root) == before


def test_files_are_moved_only_when_f001_is_selected(tmp_path):
    root = copy("broken_data_elsewhere", tmp_path)
    plan = plan_repair(target(root), RepairOptions(move_files=True, only={"F003"}))
    assert plan.moves == [] and not [r for r in plan.repairs if r.check == "F001"]
    (d,) = [d for d in plan.dispositions if d.finding.check == "F001"]
    assert d.action == "not-selected"
    assert plan_repair(target(root), RepairOptions(move_files=True, only={"F001"})).moves == [
        Move(src="data/chunk-001/file-002.parquet", dst="data/chunk-000/file-002.parquet", check="F001")]


def test_the_last_check_before_a_move_follows_folders_linked_out(tmp_path):
    """What :func:`_move_problem` refuses that the search for misplaced files never offers (it does not walk out of
    the dataset): a source reached through a folder linked out; and what it lets through: links that stay inside."""
    from lerobot_tools.repair.fixes.files import _move_problem

    root, outside = copy("broken_data_elsewhere", tmp_path), tmp_path / "outside"
    outside.mkdir()
    (root / "data" / "chunk-001").rename(outside / "chunk-001")
    os.symlink(outside / "chunk-001", root / "data" / "chunk-001")
    pair = ("data/chunk-000/file-002.parquet", "data/chunk-001/file-002.parquet")
    assert _move_problem(root, [pair]) == "data/chunk-001/file-002.parquet resolves outside the dataset (through a " \
                                          "symlink)"
    os.unlink(root / "data" / "chunk-001")
    (outside / "chunk-001").rename(root / "store")
    os.symlink(Path("..") / "store", root / "data" / "chunk-001")  # a link that stays inside the dataset
    assert _move_problem(root, [pair]) is None
    os.symlink(Path("..") / "store", root / "data" / "chunk-009")
    assert _move_problem(root, [("data/chunk-009/file-002.parquet", "store/file-002.parquet"), pair]) is None
    os.unlink(root / "data" / "chunk-009")
    os.symlink(outside, root / "data" / "chunk-009")
    assert _move_problem(root, [pair, ("data/chunk-009/file-002.parquet", "store/file-002.parquet")]) == (
        f"data/chunk-009/file-002.parquet would be written outside the dataset (it resolves to "
        f"{outside / 'file-002.parquet'})")


def test_data_files_found_in_two_layouts_are_named_and_moved_from_both(tmp_path):
    root = copy("broken_data_elsewhere", tmp_path)
    (root / "data_old" / "chunk-000").mkdir(parents=True)  # one file under another top folder, one in chunk-001
    (root / "data" / "chunk-000" / "file-001.parquet").rename(root / "data_old" / "chunk-000" / "file-001.parquet")
    assert refusal(plan_repair(target(root), RepairOptions()), "F001") == (
        "2 of the 2 missing data file(s) are under data_old/…, another chunk folder; loaders read data files only "
        "where data_path points", "rerun with --move-files to move them there")
    digests = {rel: sha(root / rel) for rel in ("data_old/chunk-000/file-001.parquet",
                                                "data/chunk-001/file-002.parquet")}
    res = repair_target(target(root), RepairOptions(move_files=True))
    (rep,) = [r for r in res.plan.repairs if r.check == "F001"]
    assert rep.summary == (f"move 2 data file(s) from data_old/…, another chunk folder to where data_path points "
                           f"({TEMPLATE!r})")
    assert res.status == 0
    assert [sha(root / f"data/chunk-000/file-00{i}.parquet") for i in (1, 2)] == list(digests.values())


def test_a_dataset_whose_videos_cannot_be_listed_is_planned_without_a_move(tmp_path):
    """video_path null with video features declared (I008), or episode metadata that cannot be read: there is no
    list of video files to look for elsewhere; the repair plans no move and still runs."""
    import json

    for change in ("video_path", "episodes"):
        root = tmp_path / change
        shutil.copytree(DATASETS / "clean_v30", root)
        if change == "video_path":
            info = json.loads((root / "meta" / "info.json").read_text())
            info["video_path"] = None
            (root / "meta" / "info.json").write_text(json.dumps(info))
        else:
            (root / "meta" / "episodes" / "chunk-000" / "file-000.parquet").write_bytes(b"garbage")
        plan = plan_repair(target(root), RepairOptions(move_files=True))
        assert plan.cannot_run is None and plan.moves == [], change
        assert not [d for d in plan.dispositions if d.finding.check == "F002"], change
        before = tree(root)
        res = repair_target(target(root), RepairOptions(move_files=True), dry_run=True)
        assert res.plan.moves == [] and tree(root) == before


# ---------------------------------------------------------------------------------------------- the shared helpers
# find_elsewhere and plan_moves serve F001 (data) and F002 (video, lerobot_tools/repair/fixes/videos.py). Their
# refusals for a template that is unset, unreadable or invalid are the last line of defence: validate reports no
# F001/F002 for such a template, so repair never reaches them; they are checked here on the helpers themselves.
def _context(root: Path):
    from lerobot_tools.checks.engine import ValidateOptions, validate_target
    from lerobot_tools.dataset.model import Dataset
    from lerobot_tools.repair.fixes.context import RepairContext

    return RepairContext(Dataset(root), validate_target(target(root), ValidateOptions()),
                         RepairOptions(move_files=True))


def test_the_search_refuses_an_unset_template_and_an_unreadable_listing(tmp_path):
    from lerobot_tools.errors import DatasetError
    from lerobot_tools.repair.fixes.files import find_elsewhere
    from lerobot_tools.repair.model import Unrepairable

    root = copy("broken_video_path", tmp_path)
    for check, kind, name in (("F001", "data", "data_path"), ("F002", "video", "video_path")):
        rc = _context(root)
        assert find_elsewhere(rc, check, kind, None, rc.ds.video_files, "do this") is None
        assert rc.unrepairable == [Unrepairable(check, f"{name} is not set", "do this")] and rc.moves == []

    broken = copy("clean_v30", tmp_path / "broken")  # its episode metadata cannot be read: no list of videos
    (broken / "meta" / "episodes" / "chunk-000" / "file-000.parquet").write_bytes(b"garbage")
    rc = _context(broken)
    with pytest.raises(DatasetError) as info:
        rc.ds.video_files()
    assert find_elsewhere(rc, "F002", "video", rc.ds.video_path, rc.ds.video_files, "do this") is None
    assert rc.unrepairable == [Unrepairable("F002", info.value.message, "do this")]
    assert info.value.message == "is a text file (7 B), not data: 'garbage'"
    rc = _context(root)  # the data files' paths read against video_path: they cannot be read back
    assert find_elsewhere(rc, "F002", "video", rc.ds.video_path, rc.ds.data_files, "do this") is None
    assert rc.unrepairable == [Unrepairable(
        "F002", f"video_path {rc.ds.video_path!r} cannot be read back from the referenced paths", "do this")]
    rc = _context(root)  # the videos are found under the other camera/chunk order
    found = find_elsewhere(rc, "F002", "video", rc.ds.video_path, rc.ds.video_files, "do this")
    assert found is not None and found[0] == rc.ds.video_path and found[2] == 3 and rc.unrepairable == []


def test_moves_to_an_invalid_template_are_refused(tmp_path):
    from lerobot_tools.repair.fixes.files import find_elsewhere, plan_moves
    from lerobot_tools.repair.model import Unrepairable

    root = copy("broken_data_elsewhere", tmp_path)
    rc = _context(root)
    _, reloc, _ = find_elsewhere(rc, "F001", "data", rc.ds.data_path, rc.ds.data_files, "do this")
    plan_moves(rc, "F001", "data", "data/chunk-{chunk_index:03d}/file.parquet", reloc)
    assert rc.moves == [] and rc.repairs == []
    assert rc.unrepairable == [Unrepairable(
        "F001", "data_path 'data/chunk-{chunk_index:03d}/file.parquet' must contain {chunk_index} and {file_index}",
        "fix data_path, then rerun")]
    plan_moves(rc, "F001", "data", TEMPLATE, reloc)  # the valid template: the move is planned
    assert rc.moves == [Move(src="data/chunk-001/file-002.parquet", dst="data/chunk-000/file-002.parquet",
                             check="F001")]
    root = copy("broken_video_path", tmp_path / "v")
    rc = _context(root)
    _, reloc, _ = find_elsewhere(rc, "F002", "video", rc.ds.video_path, rc.ds.video_files, "do this")
    bad = "videos/chunk-{episode_chunk:03d}/episode_{episode_index:06d}.mp4"
    plan_moves(rc, "F002", "video", bad, reloc)
    assert rc.moves == [] and rc.unrepairable == [Unrepairable(
        "F002", f"video_path {bad!r} has no {{video_key}} placeholder, so every camera would share one file",
        "fix video_path, then rerun")]
