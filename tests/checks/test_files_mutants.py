"""Family F, data side (F001, F003-F007, F011, I008 for data paths) held to its exact messages, severities, paths,
counts, subjects and "not checked" notes.

Each dataset is written by :mod:`lerobot_tools.testing.synth` (real parquet, no video files) and then broken in one
way on disk. The default v3.0 dataset has 3 episodes of 20, 15 and 25 frames: ``data/chunk-000/file-000.parquet``
holds episodes 0-1 and ``file-001.parquet`` episode 2; in v2.1 each episode has its own file. Every expected value
follows from those numbers and from the edit made.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from lerobot_tools.checks import files
from lerobot_tools.checks.context import CheckContext
from lerobot_tools.checks.engine import ValidateOptions
from lerobot_tools.checks.files import format_episodes, placeholder_finding
from lerobot_tools.sniff import sniff
from lerobot_tools.testing.synth import SynthSpec, build_dataset
from lerobot_tools.validate import validate

INFO = "meta/info.json"
D0, D1 = "data/chunk-000/file-000.parquet", "data/chunk-000/file-001.parquet"
V2 = [f"data/chunk-000/episode_{i:06d}.parquet" for i in range(6)]
LFS = "version https://git-lfs.github.com/spec/v1\noid sha256:" + "a" * 64 + "\nsize 13412\n"
HTML = "<!DOCTYPE html><html><body>404</body></html>\n"
UNREADABLE = "S001-S007, R001-R004, C002/C005 for unreadable files"
NO_DATA = "F001, F003-F007 (data files)"
FROM_LAYOUT = "C005, F003 for names that fit data_path"


# ----------------------------------------------------------------------------------------------------- helpers
def _build(tmp_path: Path, version: str = "v3.0", *, name: str = "ds", **spec) -> Path:
    return build_dataset(tmp_path / name, SynthSpec(version=version, video_codec=None,
                                                    video_keys=spec.pop("video_keys", ()), **spec))


def _set_info(root: Path, **changes) -> None:
    info = json.loads((root / INFO).read_text())
    info.update(changes)
    (root / INFO).write_text(json.dumps(info))


def _report(root: Path, **opts):
    (r,) = validate([str(root)], ValidateOptions(**opts))
    return r


def _f(report, *checks: str) -> list[tuple]:
    """``(check, severity, path, message, count, subject)`` of every finding of ``checks``, in report order."""
    return [(f.check, f.severity, f.path, f.message, f.count, f.subject) for f in report.findings
            if f.check in checks]


def _notes(report) -> dict[str, str]:
    return {n.checks: n.reason for n in report.not_checked}


DATA = {"file_kind": "data"}


# ------------------------------------------------------------------------------------------------ pure helpers
@pytest.mark.parametrize("eps,expected", [
    ([], ""), ([3], "3"), ([0, 1], "0, 1"), ([0, 1, 2, 3], "0, 1, 2, 3"),
    ([0, 1, 2, 3, 4], "0-4 (5)"), (list(range(500)), "0-499 (500)"),
])
def test_format_episodes(eps, expected):
    assert format_episodes(eps) == expected


def test_placeholder_finding_on_its_own(tmp_path):
    (tmp_path / "pointer.bin").write_text(LFS)
    (tmp_path / "real.bin").write_bytes(b"PAR1" + b"\0" * 64 + b"PAR1")
    ctx = CheckContext(None, ValidateOptions(), None)
    s = sniff(tmp_path / "pointer.bin")
    # a file kind without a label is called a "file"
    assert placeholder_finding(ctx, s, "x/pointer.bin", "not-a-kind") is True
    assert placeholder_finding(ctx, s, "x/y/pointer.bin", "data") is True
    assert placeholder_finding(ctx, sniff(tmp_path / "real.bin"), "x/real.bin", "data") is False
    assert [(f.check, f.path, f.message, f.group, f.subject) for f in ctx.findings] == [
        ("F004", "x/pointer.bin", "file is a Git LFS pointer (object of 13,412 bytes not fetched)",
         "files under x/ are Git LFS pointers", {"file_kind": "not-a-kind"}),
        ("F004", "x/y/pointer.bin", "data file is a Git LFS pointer (object of 13,412 bytes not fetched)",
         "data files under x/y/ are Git LFS pointers", DATA),
    ]
    assert ctx.placeholders == {"x/pointer.bin": s, "x/y/pointer.bin": s}


# -------------------------------------------------------------------------------------------------- clean side
def test_clean_dataset_has_no_file_findings_and_no_unreadable_note(tmp_path):
    r = _report(_build(tmp_path))
    assert [f for f in r.findings if f.check[0] == "F" or f.check == "I008"] == []
    assert UNREADABLE not in _notes(r) and NO_DATA not in _notes(r) and FROM_LAYOUT not in _notes(r)


# ------------------------------------------------------------------------------------------------------- F001
def test_missing_data_file_names_its_episodes(tmp_path):
    root = _build(tmp_path)
    (root / D1).unlink()
    r = _report(root)
    assert _f(r, "F001", "F003") == [("F001", "error", D1, "data file for episode(s) 2 is missing", 1, DATA)]
    assert _notes(r)[UNREADABLE] == "1 of 2 data file(s) missing or unreadable"


def test_missing_data_file_of_five_episodes_shows_a_range(tmp_path):
    # 6 episodes, 5 per file: file-000 holds episodes 0-4
    root = _build(tmp_path, episode_lengths=(5,) * 6, episodes_per_file=5)
    (root / D0).unlink()
    r = _report(root)
    assert _f(r, "F001") == [("F001", "error", D0, "data file for episode(s) 0-4 (5) is missing", 1, DATA)]


def test_two_missing_v2_files_are_one_grouped_finding(tmp_path):
    root = _build(tmp_path, "v2.1", episode_lengths=(5,) * 6)
    (root / V2[1]).unlink()
    (root / V2[4]).unlink()
    r = _report(root)
    (f,) = [f for f in r.findings if f.check == "F001"]
    assert (f.severity, f.count, f.paths, f.group) == ("error", 2, [V2[1], V2[4]], "data files are missing")
    # the headline names every missing episode, not the first one's (the group's title and its episodes)
    assert f.message == f"data files are missing for episodes 1 and 4 (2 occurrences; e.g. {V2[1]}, {V2[4]})"
    assert _notes(r)[UNREADABLE] == "2 of 6 data file(s) missing or unreadable"


def test_moved_data_file_is_one_relocation_finding_not_a_missing_file_nor_an_orphan(tmp_path):
    root = _build(tmp_path)
    moved = "data/chunk-001/file-001.parquet"
    (root / "data/chunk-001").mkdir()
    shutil.move(root / D1, root / moved)
    r = _report(root)
    assert _f(r, "F001", "F003") == [
        ("F001", "error", None, "1 of the 2 expected data files is missing where data_path points: 1 is under "
                                f"another chunk folder (e.g. {moved})", 1, DATA)]
    assert _notes(r)[UNREADABLE] == "1 of 2 data file(s) missing or unreadable"


def test_moved_video_file_names_video_path(tmp_path):
    # no mp4 is written; a file of the right name is enough for the relocation search. The one finding speaks
    # for every camera, so it names none
    key = "observation.images.front"
    root = _build(tmp_path, video_keys=(key,))
    (root / f"videos/{key}/chunk-000").mkdir(parents=True)
    (root / f"videos/{key}/chunk-001").mkdir(parents=True)
    (root / f"videos/{key}/chunk-000/file-000.mp4").write_bytes(b"\0" * 64)
    moved = f"videos/{key}/chunk-001/file-001.mp4"
    (root / moved).write_bytes(b"\0" * 64)
    r = _report(root)
    assert _f(r, "F002") == [
        ("F002", "error", None, "1 of the 2 expected video files is missing where video_path points: 1 is under "
                                f"another chunk folder (e.g. {moved})", 1, {"file_kind": "video"})]


# ------------------------------------------------------------------------------------------------- F004-F006
@pytest.mark.parametrize("content,check,message,cause", [
    (LFS, "F004", "data file is a Git LFS pointer (object of 13,412 bytes not fetched)", "are Git LFS pointers"),
    (HTML, "F005", f"data file is an HTML page ({len(HTML)} B), not data", "are error pages or text, not data"),
    ("", "F006", "data file is empty (0 bytes)", "are empty (0 bytes)"),
])
def test_placeholder_data_file(tmp_path, content, check, message, cause):
    root = _build(tmp_path)
    (root / D1).write_text(content)
    r = _report(root)
    (f,) = [f for f in r.findings if f.check[0] == "F"]
    assert (f.check, f.severity, f.path, f.message, f.count, f.subject) == (check, "error", D1, message, 1, DATA)
    assert f.group == f"data files under data/chunk-000/ {cause}"
    assert _notes(r)[UNREADABLE] == "1 of 2 data file(s) missing or unreadable"


def test_two_lfs_pointers_in_one_folder_are_one_finding(tmp_path):
    root = _build(tmp_path)
    (root / D0).write_text(LFS)
    (root / D1).write_text(LFS)
    r = _report(root)
    msg = "data file is a Git LFS pointer (object of 13,412 bytes not fetched)"
    assert _f(r, "F004") == [("F004", "error", D0, f"{msg} (2 occurrences; e.g. {D0}, {D1})", 2, DATA)]
    assert _notes(r)[UNREADABLE] == "2 of 2 data file(s) missing or unreadable"


# ------------------------------------------------------------------------------------------------------- F007
def test_truncated_data_file_has_no_footer(tmp_path):
    root = _build(tmp_path)
    data = (root / D1).read_bytes()
    (root / D1).write_bytes(data[: len(data) // 2])
    r = _report(root)
    (f,) = [f for f in r.findings if f.check[0] == "F"]
    assert (f.check, f.severity, f.path, f.count, f.subject) == ("F007", "error", D1, 1, DATA)
    assert f.message.startswith("not a readable parquet file (")
    assert f.group == "parquet files have no valid footer"
    assert _notes(r)[UNREADABLE] == "1 of 2 data file(s) missing or unreadable"


def test_directory_in_place_of_a_data_file_cannot_be_read(tmp_path):
    root = _build(tmp_path)
    (root / D1).unlink()
    (root / D1).mkdir()
    r = _report(root)
    assert _f(r, "F007", "F001") == [("F007", "error", D1, "data file cannot be read: is a directory, not a file",
                                      1, DATA)]
    assert [f.group for f in r.findings if f.check == "F007"] == ["data files cannot be read"]
    assert _notes(r)[UNREADABLE] == "1 of 2 data file(s) missing or unreadable"


# ------------------------------------------------------------------------------------------------------- F003
def test_orphan_parquet_under_data(tmp_path):
    root = _build(tmp_path)
    orphan = "data/chunk-000/file-007.parquet"
    shutil.copy(root / D1, root / orphan)
    r = _report(root)
    assert _f(r, "F003", "F001") == [
        ("F003", "error", orphan, "parquet file under data/ is not referenced by the episode metadata; loaders "
                                  "that glob data/ will read its rows", 1, DATA)]
    assert UNREADABLE not in _notes(r)


def test_stray_file_under_meta_episodes(tmp_path):
    root = _build(tmp_path)
    shutil.copy(root / "meta/episodes/chunk-000/file-000.parquet", root / "meta/episodes/extra.parquet")
    r = _report(root)
    assert _f(r, "F003") == [
        ("F003", "error", "meta/episodes/extra.parquet", "file under meta/episodes/ is not a "
         "chunk-XXX/file-YYY.parquet; the loader globs meta/episodes/*/*.parquet and may read it as episodes",
         1, {"file_kind": "episodes"})]


def test_unreadable_episode_metadata_takes_data_files_from_the_template(tmp_path):
    # v2.1, 3 episodes; episodes.jsonl gone, episode 1's file gone, and a parquet file whose name fits no template
    root = _build(tmp_path, "v2.1")
    (root / "meta/episodes.jsonl").unlink()
    (root / V2[1]).unlink()
    shutil.copy(root / V2[0], root / "data/chunk-000/stray.parquet")
    r = _report(root)
    source = "data_path and info.json total_episodes = 3"
    assert _f(r, "F001") == [("F001", "error", V2[1], f"data file for episode 1 is missing (named by {source})",
                              1, DATA)]
    (f003,) = [f for f in r.findings if f.check == "F003"]
    assert (f003.severity, f003.path, f003.count, f003.subject) == ("error", "data/chunk-000/stray.parquet", 1, DATA)
    assert f003.message == "parquet file under data/ is not named by data_path; loaders that glob data/ will read its rows"
    notes = _notes(r)
    assert notes[FROM_LAYOUT] == f"the episode metadata is unreadable; data files taken from {source}"
    assert notes[UNREADABLE] == "1 of 3 data file(s) missing or unreadable"


def test_incomplete_episode_metadata_never_calls_a_file_that_fits_data_path_an_orphan(tmp_path):
    # v2.1, 3 episodes: row 1 is not JSON and row 2 is gone, so episode 2's file is referenced by no row read
    root = _build(tmp_path, "v2.1")
    rows = (root / "meta/episodes.jsonl").read_text().splitlines()
    (root / "meta/episodes.jsonl").write_text(f"{rows[0]}\nnot json\n{rows[1]}\n")
    shutil.copy(root / V2[0], root / "data/chunk-000/stray.parquet")
    r = _report(root)
    assert [(f.path, f.count) for f in r.findings if f.check == "F003"] == [("data/chunk-000/stray.parquet", 1)]
    assert r.findings[[f.check for f in r.findings].index("F003")].message == (
        "parquet file under data/ is not named by data_path; loaders that glob data/ will read its rows")
    assert _f(r, "F001") == []
    assert UNREADABLE not in _notes(r)


def test_bad_data_path_checks_the_files_the_loader_globs(tmp_path):
    # the loader does not need data_path to read the data (lerobot 0.4.4 globs data/*/*.parquet): the files it
    # reads are checked, the template is reported once (I008), and no file is called missing or an orphan
    root = _build(tmp_path)
    tpl = "data/chunk-{chunk_index:03d}/file-{bogus}.parquet"
    _set_info(root, data_path=tpl)
    r = _report(root)
    assert _f(r, "F001", "F003", "F004", "F005", "F006", "F007") == []
    assert [(f.check, f.path) for f in r.findings if f.check == "I008"] == [("I008", INFO)]
    allowed = "(allowed: chunk_index, episode_chunk, episode_index, file_index, video_key)"
    globbed = "the 2 parquet file(s) the loader reads without it (data/*/*.parquet) are checked instead"
    assert _notes(r)["F001 (data files named by data_path)"] == (
        f"{INFO}: data_path template '{tpl}' uses unknown placeholder {{bogus}} {allowed}; {globbed}")
    assert NO_DATA not in _notes(r)
    # a defect of those files is still found behind the bad template
    import pyarrow.parquet as pq
    t = pq.read_table(root / D0)
    pq.write_table(t.drop_columns(["action"]).replace_schema_metadata(t.schema.metadata), root / D0)
    r = _report(root)
    assert [(f.check, f.path) for f in r.findings if f.check == "S001"] == [("S001", D0)]
    # and with the episode metadata gone too, the template cannot give the files either: the glob still does
    shutil.rmtree(root / "meta/episodes")
    r = _report(root)
    assert _notes(r)["F001 (data files named by data_path)"] == (
        f"the episode metadata is unreadable and {INFO}: template '{tpl}' cannot be parsed "
        f"(template '{tpl}' uses unknown placeholder {{bogus}} {allowed}); {globbed}")
    assert FROM_LAYOUT not in _notes(r)


def test_data_path_outside_the_root_is_i008_per_file(tmp_path):
    root = _build(tmp_path)
    _set_info(root, data_path="../outside/chunk-{chunk_index:03d}/file-{file_index:03d}.parquet")
    r = _report(root)
    per_file = [(f.check, f.severity, f.path, f.message, f.subject) for f in r.findings
                if f.check == "I008" and f.path != INFO]
    assert per_file == [
        ("I008", "error", f"../outside/chunk-000/file-{i:03d}.parquet", "path points outside the dataset root",
         {"key": "data_path"}) for i in (0, 1)]
    assert _notes(r)[UNREADABLE] == "2 of 2 data file(s) missing or unreadable"


# ------------------------------------------------------------------------------------------------------- F011
def test_staged_images_folder(tmp_path):
    root = _build(tmp_path)
    r = _report(root)
    assert _f(r, "F011") == []
    (root / "images/cam/ep0").mkdir(parents=True)
    r = _report(root)
    assert _f(r, "F011") == []  # folders alone are not staged frames
    for i in range(3):
        (root / f"images/cam/ep0/frame_{i:06d}.png").write_bytes(b"x")
    r = _report(root)
    assert _f(r, "F011") == [("F011", "warning", "images", "images/ holds 3 staged frame file(s): the recording may "
                                                          "have been interrupted", 1, {})]


# --------------------------------------------------------------------------------------------- report_unreadable
def test_truncated_task_table_is_named_by_its_kind(tmp_path):
    root = _build(tmp_path)
    data = (root / "meta/tasks.parquet").read_bytes()
    (root / "meta/tasks.parquet").write_bytes(data[: len(data) // 2])
    r = _report(root)
    (t001,) = [f for f in r.findings if f.check == "T001"]
    assert (t001.severity, t001.path, t001.subject) == ("error", "meta/tasks.parquet", {"file_kind": "tasks"})
    assert t001.message.startswith("task table is truncated: no parquet footer")
    reason = t001.message[len("task table "):]
    assert _notes(r)["T002-T007"] == f"the task table could not be read (meta/tasks.parquet: {reason})"


# ------------------------------------------------------------------------------------------------------ scan_tree
def _placeholder_tree(tmp_path: Path) -> Path:
    """info.json an LFS pointer; under it a data LFS pointer, an HTML stats.json, an empty mp4, and placeholders
    that are not looked at (README.md, a hidden folder, a hidden file)."""
    root = _build(tmp_path)
    (root / INFO).write_text(LFS.replace("13412", "999"))
    (root / D1).write_text(LFS)
    (root / "meta/stats.json").write_text(HTML)
    (root / "videos/cam/chunk-000").mkdir(parents=True)
    (root / "videos/cam/chunk-000/file-000.mp4").write_bytes(b"")
    (root / "README.md").write_text(LFS)
    (root / ".git").mkdir()
    (root / ".git/x.parquet").write_text(LFS)
    (root / "data/chunk-000/.partial.parquet").write_text(LFS)
    return root


def test_placeholder_info_json_sniffs_the_whole_tree(tmp_path):
    root = _placeholder_tree(tmp_path)
    r = _report(root)
    assert _f(r, "F004", "F005", "F006") == [
        ("F004", "error", INFO, "info.json is a Git LFS pointer (object of 999 bytes not fetched)", 1,
         {"file_kind": "info"}),
        ("F004", "error", D1, "data file is a Git LFS pointer (object of 13,412 bytes not fetched)", 1, DATA),
        ("F005", "error", "meta/stats.json", f"statistics file is an HTML page ({len(HTML)} B), not data", 1,
         {"file_kind": "stats"}),
        ("F006", "error", "videos/cam/chunk-000/file-000.mp4", "video file is empty (0 bytes)", 1,
         {"file_kind": "video"}),
    ]
    assert "F004-F006 (other files)" not in _notes(r)


def test_scan_tree_stops_after_max_scanned_files(tmp_path, monkeypatch):
    root = _placeholder_tree(tmp_path)
    # in walk order README.md, file-000.parquet and file-001.parquet are the first three files (hidden ones are
    # not counted); meta/ and videos/ are not reached
    monkeypatch.setattr(files, "MAX_SCANNED", 3)
    r = _report(root)
    assert [(f.check, f.path) for f in r.findings if f.check in ("F004", "F005", "F006")] == [
        ("F004", INFO), ("F004", D1)]
    assert _notes(r)["F004-F006 (other files)"] == "only the first 3 files were sniffed"


def test_a_stray_video_while_the_episode_metadata_is_unreadable_is_said_not_named_by_video_path(tmp_path):
    """v2.1 with a camera: episodes.jsonl gone, so the videos come from video_path; a copy under another name is F003."""
    root = build_dataset(tmp_path / "cam", SynthSpec(version="v2.1", episode_lengths=(4, 4)))
    key = "observation.images.front"
    (root / "meta/episodes.jsonl").unlink()
    src = root / f"videos/chunk-000/{key}/episode_000000.mp4"
    shutil.copy(src, src.with_name("stray.mp4"))
    r = _report(root)
    f003 = [(f.severity, f.path, f.message) for f in r.findings if f.check == "F003"]
    assert f003 == [("warning", f"videos/chunk-000/{key}/stray.mp4",
                     "video file is not named by video_path for any video key")]
