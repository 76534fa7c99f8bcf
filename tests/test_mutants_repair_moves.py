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

from lerobot_tools.dataset.targets import resolve_targets
from lerobot_tools.repair import RepairOptions, plan_repair, repair_target, undo
from lerobot_tools.repair.model import Move

DATASETS = Path(__file__).resolve().parent.parent / "fixtures" / "datasets"
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
