"""Files in the wrong place: validate says where the missing files are and how many are absent everywhere;
repair points video_path there or moves the files, and reports the rest as missing.

The v3.0 fixtures are copies of datasets written by lerobot 0.4.4 (``fixtures/real/``); the v2.1 one is built
by the synthetic writer (lerobot 0.4.4 writes v3.0 only).
"""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

from click.testing import CliRunner

from lerobot_tools.checks.engine import ValidateOptions
from lerobot_tools.cli import cli
from lerobot_tools.dataset.relocate import Expected, candidate_templates, locate_missing
from lerobot_tools.dataset.targets import resolve_targets
from lerobot_tools.repair import RepairOptions, repair_target
from lerobot_tools.validate import validate

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
DS = FIXTURES / "datasets"
FRONT = "observation.images.front"


def report(root: Path):
    (r,) = validate([str(root)], ValidateOptions(deep=True, all_videos=True))
    return r


def loud(r):
    return sorted((f.check, f.severity, f.path, f.message) for f in r.findings if f.severity in ("error", "warning"))


def sha(p: Path) -> str:
    return hashlib.sha256(p.read_bytes()).hexdigest()


def repair(root: Path, dry_run: bool = False, **opts):
    (t,) = resolve_targets([str(root)])
    return repair_target(t, RepairOptions(**opts), dry_run=dry_run)


# ---------------------------------------------------------------------- validate
def test_videos_under_another_top_folder_partly_found():
    r = report(DS / "broken_videos_elsewhere")
    assert loud(r) == [("F002", "error", None,
                        f"2 of the 3 expected video files are under video/… (e.g. video/{FRONT}/chunk-000/file-000.mp4); "
                        f"1 is absent everywhere (e.g. videos/{FRONT}/chunk-000/file-002.mp4)")]
    (f,) = [f for f in r.findings if f.check == "F002"]
    assert f.subject == {"file_kind": "video"}
    assert "F003" not in {f.check for f in r.findings}  # the misplaced files are not called unreferenced


def test_data_file_in_another_chunk_folder():
    r = report(DS / "broken_data_elsewhere")
    assert loud(r) == [("F001", "error", None,
                        "1 of the 3 expected data files is missing where data_path points: 1 is under another chunk "
                        "folder (e.g. data/chunk-001/file-002.parquet)")]
    assert not {"F003", "C002", "C005", "S001"} & {f.check for f in r.findings}


def test_v21_videos_in_the_other_versions_folder_order():
    r = report(DS / "broken_video_path")
    assert loud(r) == [("F002", "error", None,
                        "all 3 expected video files are under videos/chunk-…/<key>/episode_….mp4 (the camera and chunk "
                        f"folders in the other order) (e.g. videos/chunk-000/{FRONT}/episode_000000.mp4)")]


def test_missing_files_found_nowhere_keep_the_plain_message(tmp_path):
    root = tmp_path / "ds"
    shutil.copytree(DS / "broken_videos_elsewhere", root)
    shutil.rmtree(root / "video")
    r = report(root)
    assert [f.message for f in r.findings if f.check == "F002"] == [
        f"all 3 referenced video file(s) are missing (e.g. videos/{FRONT}/chunk-000/file-000.mp4, "
        f"videos/{FRONT}/chunk-000/file-001.mp4, videos/{FRONT}/chunk-000/file-002.mp4)"]


def test_candidate_layouts_and_search(tmp_path):
    (tmp_path / "videos_old").mkdir()
    (tmp_path / "meta").mkdir()
    cands = candidate_templates(tmp_path, "videos/{video_key}/chunk-{chunk_index:03d}/file-{file_index:03d}.mp4",
                                "v3", "video")
    assert cands[0] == "videos/chunk-{chunk_index:03d}/{video_key}/file-{file_index:03d}.mp4"
    assert "videos_old/{video_key}/chunk-{chunk_index:03d}/file-{file_index:03d}.mp4" in cands
    assert not any(c.startswith("meta/") for c in cands)
    p = tmp_path / "videos_old/cam/chunk-000/file-000.mp4"
    p.parent.mkdir(parents=True)
    p.write_bytes(b"x")
    want = [Expected("videos/cam/chunk-000/file-000.mp4", {"video_key": "cam", "chunk_index": 0, "file_index": 0}),
            Expected("videos/cam/chunk-000/file-001.mp4", {"video_key": "cam", "chunk_index": 0, "file_index": 1})]
    reloc = locate_missing(tmp_path, "videos/{video_key}/chunk-{chunk_index:03d}/file-{file_index:03d}.mp4", "v3",
                           "video", want, want)
    assert [(lay.where, lay.pairs) for lay in reloc.layouts] == [
        ("videos_old/…", [("videos/cam/chunk-000/file-000.mp4", "videos_old/cam/chunk-000/file-000.mp4")])]
    assert reloc.absent == ["videos/cam/chunk-000/file-001.mp4"]


# ---------------------------------------------------------------------- repair
def test_move_files_moves_what_was_found_and_reports_the_rest(tmp_path):
    root = tmp_path / "ds"
    shutil.copytree(DS / "broken_videos_elsewhere", root)
    originals = {n: sha(root / f"video/{FRONT}/chunk-000/{n}") for n in ("file-000.mp4", "file-001.mp4")}
    dry = repair(root, dry_run=True)
    (d,) = [d for d in dry.plan.dispositions if d.finding.check == "F002"]
    assert d.action == "not-repairable" and "non-default v3.0 layout" in d.reason and "--move-files" in d.todo
    res = repair(root, move_files=True)
    (rep,) = res.plan.repairs
    assert rep.summary == (f"move 2 video file(s) from video/… to where video_path points "
                           f"('videos/{{video_key}}/chunk-{{chunk_index:03d}}/file-{{file_index:03d}}.mp4'); 1 absent "
                           f"everywhere stay missing (e.g. videos/{FRONT}/chunk-000/file-002.mp4)")
    for n, digest in originals.items():
        assert sha(root / f"videos/{FRONT}/chunk-000/{n}") == digest
    assert res.status == 1  # one video is still missing
    assert [f.message for f in report(root).findings if f.check == "F002"] == [
        f"video file of {FRONT} for episode(s) 4 is missing"]
    assert CliRunner().invoke(cli, ["repair", "--undo", str(root)]).exit_code == 0
    assert sha(root / f"video/{FRONT}/chunk-000/file-000.mp4") == originals["file-000.mp4"]


def test_data_file_in_another_chunk_folder_is_moved_back_with_move_files(tmp_path):
    root = tmp_path / "ds"
    shutil.copytree(DS / "broken_data_elsewhere", root)
    found = root / "data/chunk-001/file-002.parquet"
    digest = sha(found)
    dry = repair(root, dry_run=True)
    (d,) = [d for d in dry.plan.dispositions if d.finding.check == "F001"]
    assert d.action == "not-repairable" and "--move-files" in d.todo
    assert "1 of the 1 missing data file(s) are under another chunk folder" in d.reason
    assert found.is_file() and not (root / "data/chunk-000/file-002.parquet").exists()  # dry run moved nothing
    res = repair(root, move_files=True)
    (rep,) = [r for r in res.plan.repairs if r.check == "F001"]
    assert rep.summary.startswith("move 1 data file(s) from another chunk folder to where data_path points")
    assert res.status == 0 and sha(root / "data/chunk-000/file-002.parquet") == digest and not found.exists()
    assert loud(report(root)) == []
    assert CliRunner().invoke(cli, ["repair", "--undo", str(root)]).exit_code == 0
    assert sha(found) == digest and not (root / "data/chunk-000/file-002.parquet").exists()


def test_moved_files_findings_do_not_count_as_worse_but_other_growth_does():
    from lerobot_tools.findings import DatasetReport, Finding
    from lerobot_tools.repair.apply import compare

    def rep(*paths):
        return DatasetReport(target="t", root=None, codebase_version="v3.0", findings=[
            Finding("R003", "info", None, "no page index", count=len(paths), paths=list(paths), group="no page index")])

    before, after = rep("a", "b"), rep("a", "b", "c")
    assert compare(before, after, frozenset({"c"}))[3] == []
    assert compare(before, after)[3] == ["R003/info"]
    assert compare(before, rep("a", "b", "d"), frozenset({"c"}))[3] == ["R003/info"]


def test_video_path_pointed_at_a_partly_found_layout(tmp_path):
    root = tmp_path / "ds"
    shutil.copytree(DS / "broken_video_path", root)
    (root / f"videos/chunk-000/{FRONT}/episode_000002.mp4").unlink()
    assert loud(report(root)) == [("F002", "error", None,
                                   "2 of the 3 expected video files are under videos/chunk-…/<key>/episode_….mp4 (the "
                                   f"camera and chunk folders in the other order) (e.g. videos/chunk-000/{FRONT}/"
                                   f"episode_000000.mp4); 1 is absent everywhere (e.g. videos/{FRONT}/chunk-000/"
                                   "episode_000002.mp4)")]
    res = repair(root)
    (rep,) = res.plan.repairs
    assert rep.check == "F002" and rep.summary.startswith(
        "video_path 'videos/{video_key}/chunk-{episode_chunk:03d}/episode_{episode_index:06d}.mp4' -> "
        "'videos/chunk-{episode_chunk:03d}/{video_key}/episode_{episode_index:06d}.mp4' (where 2 of the 3 referenced "
        "video files are); 1 absent everywhere stay missing")
    info = json.loads((root / "meta/info.json").read_text())
    assert info["video_path"] == "videos/chunk-{episode_chunk:03d}/{video_key}/episode_{episode_index:06d}.mp4"
    assert [f.message for f in report(root).findings if f.check == "F002"] == [
        f"video file of {FRONT} for episode(s) 2 is missing"]


def test_video_path_is_not_rewritten_when_some_files_are_where_it_points(tmp_path):
    root = tmp_path / "ds"
    shutil.copytree(DS / "broken_video_path", root)
    dst = root / f"videos/{FRONT}/chunk-000/episode_000000.mp4"
    dst.parent.mkdir(parents=True)
    (root / f"videos/chunk-000/{FRONT}/episode_000000.mp4").rename(dst)
    res = repair(root, dry_run=True)
    (d,) = [d for d in res.plan.dispositions if d.finding.check == "F002"]
    assert d.action == "not-repairable" and "one video_path cannot point at both" in d.reason
    res = repair(root, move_files=True)
    assert res.status == 0 and "F002" not in {f.check for f in report(root).findings}


def test_diagnose_decode_says_where_the_missing_videos_are():
    from lerobot_tools.diagnose import DiagnoseOptions, diagnose

    diag = diagnose([str(DS / "broken_videos_elsewhere")], DiagnoseOptions(frames=0))
    (dd,) = diag.datasets
    assert diag.exit_status == 1 and diag.summary()["unusable_files"] == 3
    assert [(p.check, p.message, p.count) for p in dd.problems] == [
        ("F002", f"2 of the 3 expected video files are under video/… (e.g. video/{FRONT}/chunk-000/file-000.mp4); 1 is "
                 f"absent everywhere (e.g. videos/{FRONT}/chunk-000/file-002.mp4)", 3)]
