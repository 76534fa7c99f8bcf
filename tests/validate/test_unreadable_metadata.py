"""Unreadable metadata does not blind validate: the file is reported as what it is, the cause once, no cascade.

The fixtures (``fixtures/generate.py``) are copies of datasets written by lerobot 0.4.4's own writer
(``fixtures/real/``), except the v2.1 one (lerobot 0.4.4 writes v3.0 only; it is built by the synthetic
writer). Every test asserts the exact findings (check, severity, path, message) and that nothing derived from
the unreadable file appears: no "0 episodes", no splits out of range, no unreferenced files.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from lerobot_tools.checks.engine import ValidateOptions
from lerobot_tools.cli import cli
from lerobot_tools.dataset.placeholders import UnreadableFileError, check_metadata_file
from lerobot_tools.validate import validate

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
DS = FIXTURES / "datasets"


def report(root: Path, **opts):
    (r,) = validate([str(root)], ValidateOptions(**opts))
    return r


def loud(r):
    """(check, severity, path, message, count) of every error and warning."""
    return sorted((f.check, f.severity, f.path, f.message, f.count) for f in r.findings
                  if f.severity in ("error", "warning"))


# ---------------------------------------------------------------------- the sniffer for metadata files
@pytest.mark.parametrize("name,data,fmt,kind,message", [
    ("episodes.jsonl", b"version https://git-lfs.github.com/spec/v1\noid sha256:" + b"a" * 64 + b"\nsize 1890\n",
     "jsonl", "lfs-pointer", "is a Git LFS pointer (object of 1,890 bytes not fetched)"),
    ("info.json", b'{"error":"Entry not found"}', "json", "json",
     'is a JSON error body (27 B), not data: {"error":"Entry not found"}'),
    ("stats.json", b"<!DOCTYPE html><html><head><title>429 Too Many Requests</title></head></html>", "json", "html",
     'is an HTML page (77 B), not data: "429 Too Many Requests"'),
    ("tasks.jsonl", b"", "jsonl", "empty", "is empty (0 bytes)"),
    ("info.json", b'{"codebase_version": "v2.1", "fps": 1', "json", "truncated",
     "is truncated: the JSON document stops before its closing bracket (37 B on disk, a partial download or an "
     "interrupted write)"),
    ("episodes.jsonl", b'{"episode_index": 0, "length": 3}\n{"episode_ind', "jsonl", "truncated",
     "is truncated: its last line is cut off (47 B on disk, a partial download or an interrupted write)"),
    ("tasks.parquet", b"PAR1" + b"\0" * 60, "parquet", "truncated",
     "is truncated: no parquet footer (the file does not end with the PAR1 magic; 64 B on disk, a partial "
     "download or an interrupted write)"),
    ("tasks.parquet", b"Entry not found", "parquet", "text", "is a text file (15 B), not data: 'Entry not found'"),
])
def test_metadata_files_are_sniffed_before_parsing(tmp_path, name, data, fmt, kind, message):
    p = tmp_path / name
    p.write_bytes(data)
    with pytest.raises(UnreadableFileError) as ei:
        check_metadata_file(p, f"meta/{name}", fmt)
    assert ei.value.kind == kind and ei.value.message == message and ei.value.path == f"meta/{name}"


def test_real_metadata_files_pass_the_sniffer():
    root = FIXTURES / "real" / "multifile-pandas3"
    for rel, fmt in [("meta/info.json", "json"), ("meta/stats.json", "json"), ("meta/tasks.parquet", "parquet"),
                     ("meta/episodes/chunk-000/file-001.parquet", "parquet")]:
        assert check_metadata_file(root / rel, rel, fmt).kind == ("ok" if fmt == "parquet" else "json")
    v21 = DS / "clean_v21"
    for rel in ("meta/episodes.jsonl", "meta/tasks.jsonl", "meta/episodes_stats.jsonl"):
        check_metadata_file(v21 / rel, rel, "jsonl")  # does not raise
    assert check_metadata_file(v21 / "meta/nothing.json", "meta/nothing.json", "json").kind == "missing"


# ---------------------------------------------------------------------- validate on the broken fixtures
def test_episodes_jsonl_lfs_pointer_is_its_one_finding_and_the_files_are_still_checked():
    r = report(DS / "broken_episodes_lfs", deep=True, all_videos=True)
    assert loud(r) == [("F004", "error", "meta/episodes.jsonl",
                        "episode metadata file is a Git LFS pointer (object of 207 bytes not fetched)", 1)]
    (f,) = [f for f in r.findings if f.check == "F004"]
    assert f.subject == {"file_kind": "episodes"}
    assert r.causes == []  # a single placeholder is its own finding
    # the data files were still found (data_path and total_episodes) and their footers read: R003 per file
    (r003,) = [f for f in r.findings if f.check == "R003"]
    assert r003.count == 3
    reasons = {n.checks: n.reason for n in r.not_checked}
    assert reasons["C001, C003-C006, T002, D001-D005, F010"] == (
        "meta/episodes.jsonl is a Git LFS pointer (object of 207 bytes not fetched): nothing is derived from it")
    assert "data_path and info.json total_episodes = 3" in reasons["C005, F003 for names that fit data_path"]


def test_episodes_lfs_with_a_missing_data_file_and_wrong_splits_reports_only_true_things(tmp_path):
    root = tmp_path / "ds"
    shutil.copytree(DS / "broken_episodes_lfs", root)
    (root / "data/chunk-000/episode_000002.parquet").unlink()
    info = json.loads((root / "meta/info.json").read_text())
    info["splits"] = {"train": "0:2"}
    (root / "meta/info.json").write_text(json.dumps(info, indent=4))
    r = report(root)
    assert loud(r) == [
        ("C008", "warning", "meta/info.json",
         "splits leave 1 of the 3 episode(s) of total_episodes out of every split: episode(s) 2", 1),
        ("F001", "error", "data/chunk-000/episode_000002.parquet",
         "data file for episode 2 is missing (named by data_path and info.json total_episodes = 3)", 1),
        ("F004", "error", "meta/episodes.jsonl",
         "episode metadata file is a Git LFS pointer (object of 207 bytes not fetched)", 1),
    ]


def test_lfs_clone_says_the_cause_once_with_the_count_per_folder():
    r = report(DS / "broken_lfs_clone", deep=True, all_videos=True)
    (cause,) = r.causes
    assert (cause.check, cause.count) == ("F004", 10)
    assert cause.by_folder == {"data/chunk-000": 3, "meta": 1, "meta/episodes/chunk-000": 3,
                               "videos/observation.images.front/chunk-000": 3}
    assert "`git lfs pull`" in cause.fix
    assert loud(r) == sorted([
        ("F004", "error", "meta/episodes/chunk-000/file-000.parquet",
         "episode metadata file is a Git LFS pointer (object of 45,412 bytes not fetched) (3 occurrences: episode "
         "metadata files under meta/episodes/chunk-000/ are Git LFS pointers; e.g. meta/episodes/chunk-000/"
         "file-000.parquet, meta/episodes/chunk-000/file-001.parquet, meta/episodes/chunk-000/file-002.parquet)", 3),
        ("F004", "error", "meta/tasks.parquet", "task table is a Git LFS pointer (object of 2,215 bytes not fetched)", 1),
        ("F004", "error", "data/chunk-000/file-000.parquet",
         "data file is a Git LFS pointer (object of 8,492 bytes not fetched) (3 occurrences: data files under "
         "data/chunk-000/ are Git LFS pointers; e.g. data/chunk-000/file-000.parquet, data/chunk-000/file-001.parquet, "
         "data/chunk-000/file-002.parquet)", 3),
        ("F004", "error", "videos/observation.images.front/chunk-000/file-000.mp4",
         "video file is a Git LFS pointer (object of 9,436 bytes not fetched) (3 occurrences: video files under "
         "videos/observation.images.front/chunk-000/ are Git LFS pointers; e.g. "
         "videos/observation.images.front/chunk-000/file-000.mp4, videos/observation.images.front/chunk-000/"
         "file-001.mp4, videos/observation.images.front/chunk-000/file-002.mp4)", 3),
    ])
    assert {f.check for f in r.findings} == {"F004"}


def test_cause_is_printed_before_the_findings_and_in_json():
    res = CliRunner().invoke(cli, ["validate", str(DS / "broken_lfs_clone")])
    assert res.exit_code == 1
    lines = res.output.splitlines()
    assert lines[1].startswith("  cause: 10 files are Git LFS pointers whose content was never fetched")
    assert "(data/chunk-000/: 3, meta/episodes/chunk-000/: 3, meta/: 1, videos/observation.images.front/chunk-000/: 3)" \
        in lines[1] and "fix: run `git lfs pull` in the dataset folder" in lines[1]
    assert all(" F004" in ln for ln in lines[2:6])
    res = CliRunner().invoke(cli, ["validate", "--format", "json", str(DS / "broken_lfs_clone")])
    (d,) = json.loads(res.output)["datasets"]
    assert d["causes"] == [{"check": "F004", "count": 10, "title": r.causes[0].title, "fix": r.causes[0].fix,
                            "by_folder": r.causes[0].by_folder} for r in [report(DS / "broken_lfs_clone")]]


def test_error_pages_are_reported_as_error_pages():
    r = report(DS / "broken_error_pages", all_videos=True)
    assert loud(r) == sorted([
        ("F005", "error", "meta/episodes/chunk-000/file-000.parquet",
         'episode metadata file is an HTML page (163 B), not data: "429 Too Many Requests"', 1),
        ("F005", "error", "videos/observation.images.front/chunk-000/file-000.mp4",
         'video file is a JSON error body (41 B), not data: {"error":"Invalid username or password."}', 1),
        ("F005", "error", "videos/observation.images.wrist/chunk-000/file-000.mp4",
         'video file is a JSON error body (41 B), not data: {"error":"Invalid username or password."}', 1),
    ])
    (cause,) = r.causes
    assert cause.check == "F005" and cause.count == 3 and "error responses" in cause.title
    # the data file was found from data_path on disk and fully checked: its schema and counts are clean
    assert {f.check for f in r.findings} == {"F005", "R003", "T004"}


def test_truncated_episode_metadata_is_c007_and_counts_come_from_disk():
    r = report(DS / "broken_truncated_episodes", deep=True, all_videos=True)
    assert loud(r) == [("C007", "error", "meta/episodes/chunk-000/file-001.parquet",
                        "episode metadata file is truncated: no parquet footer (the file does not end with the PAR1 "
                        "magic; 22.7 kB on disk, a partial download or an interrupted write)", 1)]
    assert r.causes == []


def test_total_frames_is_compared_with_the_data_on_disk_when_the_metadata_is_unreadable(tmp_path):
    root = tmp_path / "ds"
    shutil.copytree(DS / "broken_truncated_episodes", root)
    info = json.loads((root / "meta/info.json").read_text())
    info["total_frames"] = 90
    (root / "meta/info.json").write_text(json.dumps(info, indent=4))
    r = report(root)
    assert ("C002", "error", "meta/info.json",
            "total_frames is 90 but the 3 data file(s) on disk that fit data_path hold 98 rows", 1) in loud(r)


def test_every_file_of_a_clone_including_info_json(tmp_path):
    import hashlib

    root = tmp_path / "ds"
    shutil.copytree(FIXTURES / "real" / "h264-pandas3", root)
    for p in sorted(root.rglob("*")):
        if p.is_file() and p.name != "stats.json":
            data = p.read_bytes()
            p.write_bytes(f"version https://git-lfs.github.com/spec/v1\noid sha256:{hashlib.sha256(data).hexdigest()}\n"
                          f"size {len(data)}\n".encode())
    r = report(root)
    (cause,) = r.causes
    assert cause.count == 6 and cause.by_folder == {
        "data/chunk-000": 1, "meta": 2, "meta/episodes/chunk-000": 1,
        "videos/observation.images.front/chunk-000": 1, "videos/observation.images.wrist/chunk-000": 1}
    assert {(f.check, f.path) for f in r.findings} >= {("F004", "meta/info.json")}
    assert {f.check for f in r.findings} == {"F004"}  # stats.json (real JSON) is not called a placeholder
    assert [n.checks for n in r.not_checked] == ["all other checks"]


# ---------------------------------------------------------------------- the other commands, same logic
def test_diagnose_decode_names_placeholder_videos_and_exits_1():
    from lerobot_tools.diagnose import DiagnoseOptions, diagnose

    diag = diagnose([str(DS / "broken_lfs_clone")], DiagnoseOptions(frames=0))
    (dd,) = diag.datasets
    assert diag.exit_status == 1
    (cause,) = dd.causes
    assert cause.count == 6 and cause.by_folder == {"meta/episodes/chunk-000": 3,
                                                    "videos/observation.images.front/chunk-000": 3}
    probs = {(p.check, p.message.split(" (3 occurrences")[0], p.count) for p in dd.problems}
    assert ("F004", "observation.images.front: video file is a Git LFS pointer (object of 9,436 bytes not fetched)",
            3) in probs
    assert ("F004", "episode metadata file is a Git LFS pointer (object of 45,412 bytes not fetched)", 3) in probs
    assert diag.summary()["unusable_files"] == 3  # the 3 videos; the metadata files are not video files
    res = CliRunner().invoke(cli, ["diagnose-decode", "--frames", "0", str(DS / "broken_lfs_clone")])
    assert res.exit_code == 1 and "nothing to decode" not in res.output
    assert "  cause: 6 files are Git LFS pointers" in res.output


def test_diagnose_decode_without_info_json_still_names_the_placeholder_videos(tmp_path):
    import hashlib

    from lerobot_tools.diagnose import DiagnoseOptions, diagnose

    root = tmp_path / "ds"
    shutil.copytree(FIXTURES / "real" / "h264-pandas3", root)
    for p in [root / "meta/info.json", *sorted((root / "videos").rglob("*.mp4"))]:
        data = p.read_bytes()
        p.write_bytes(f"version https://git-lfs.github.com/spec/v1\noid sha256:{hashlib.sha256(data).hexdigest()}\n"
                      f"size {len(data)}\n".encode())
    diag = diagnose([str(root)], DiagnoseOptions(frames=0))
    (dd,) = diag.datasets
    assert diag.exit_status == 1 and dd.causes[0].count == 3
    assert sorted((p.check, p.paths[0]) for p in dd.problems) == [
        ("F004", "meta/info.json"), ("F004", "videos/observation.images.front/chunk-000/file-000.mp4"),
        ("F004", "videos/observation.images.wrist/chunk-000/file-000.mp4")]


def test_diagnose_decode_reports_unreadable_episode_metadata_with_healthy_videos():
    from lerobot_tools.diagnose import DiagnoseOptions, diagnose

    diag = diagnose([str(DS / "broken_episodes_lfs")], DiagnoseOptions(frames=0))
    (dd,) = diag.datasets
    assert diag.exit_status == 1
    assert [(p.check, p.paths, p.message) for p in dd.problems if p.severity == "error"] == [
        ("F004", ["meta/episodes.jsonl"], "episode metadata file is a Git LFS pointer (object of 207 bytes not fetched)")]
    assert dd.files_per_key == {"observation.images.front": 3} and dd.groups  # the 3 videos were still probed


def _tree(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.mark.parametrize("name,refusal", [
    ("broken_lfs_clone", "10 files are Git LFS pointers whose content was never fetched"),
    ("broken_episodes_lfs", "meta/episodes.jsonl: episode metadata file is a Git LFS pointer (object of 207 bytes "
                            "not fetched); fix: fetch the content: `git lfs pull`"),
    ("broken_truncated_episodes", "meta/episodes/chunk-000/file-001.parquet: episode metadata file is truncated"),
])
def test_repair_refuses_with_the_root_cause_and_writes_nothing(tmp_path, name, refusal):
    root = tmp_path / name
    shutil.copytree(DS / name, root)
    info = json.loads((root / "meta/info.json").read_text())
    info["total_episodes"] += 7  # a counter repair would "fix" from what it cannot read
    (root / "meta/info.json").write_text(json.dumps(info, indent=4))
    before = _tree(root)
    res = CliRunner().invoke(cli, ["repair", str(root)])
    assert res.exit_code == 1, res.output
    assert f"  refused: {refusal}" in res.output and "nothing is repaired until the cause is fixed" in res.output
    assert _tree(root) == before and not (root / ".lrtool").exists()
    res = CliRunner().invoke(cli, ["repair", "--format", "json", str(root)])
    (d,) = json.loads(res.output)["datasets"]
    assert d["refused"].startswith(refusal.split(";")[0]) and d["repairs"] == []


def test_smoke_refuses_with_the_root_cause():
    from io import StringIO

    from lerobot_tools.smoke import SmokeOptions
    from lerobot_tools.smoke.pipeline import smoke
    from lerobot_tools.smoke.render import render_text

    reports = smoke([str(DS / "broken_lfs_clone")], SmokeOptions())
    assert [r.status for r in reports] == ["blocked"]
    out = StringIO()
    render_text(reports, out)
    assert ("smoke: " + str(DS / "broken_lfs_clone") + ": not run: validate found errors that break loading (F004); "
            "cause: 10 files are Git LFS pointers whose content was never fetched") in out.getvalue()


def test_reshard_skips_placeholders_with_one_line_each(tmp_path):
    import hashlib

    root = tmp_path / "ds"
    shutil.copytree(FIXTURES / "real" / "multifile-pandas3", root)
    for i in (1, 2):
        p = root / f"data/chunk-000/file-00{i}.parquet"
        data = p.read_bytes()
        p.write_bytes(f"version https://git-lfs.github.com/spec/v1\noid sha256:{hashlib.sha256(data).hexdigest()}\n"
                      f"size {len(data)}\n".encode())
    before = _tree(root)
    res = CliRunner().invoke(cli, ["reshard", str(root)])
    assert res.exit_code == 1
    lines = [ln for ln in res.output.splitlines() if ln.strip().startswith("skipped")]
    assert lines == [
        "  skipped       data/chunk-000/file-001.parquet: data file is a Git LFS pointer (object of 7,869 bytes not "
        "fetched); skipped (restore its content, then rerun)",
        "  skipped       data/chunk-000/file-002.parquet: data file is a Git LFS pointer (object of 5,133 bytes not "
        "fetched); skipped (restore its content, then rerun)",
    ]
    after = _tree(root)
    for i in (1, 2):  # the placeholders are left as they are
        rel = f"data/chunk-000/file-00{i}.parquet"
        assert after[rel] == before[rel]
    res = CliRunner().invoke(cli, ["reshard", str(DS / "broken_episodes_lfs"), "--dry-run"])
    assert res.exit_code == 1 and ("failed: meta/episodes.jsonl is a Git LFS pointer (object of 207 bytes not fetched): "
                                   "the episodes of the data files are unknown, nothing is resharded") in res.output
