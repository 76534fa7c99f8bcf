"""Family F, video side (F002, F003, F004-F006, F008, F009, F010, F012 and I008 for video paths), held to its exact
messages, severities, paths, counts, groups, subjects and "not checked" notes, and to which files get their decoder
header read.

Datasets are real: :mod:`lerobot_tools.testing.synth` writes parquet and h264 mp4 (ffmpeg) once per module, each test
copies one and breaks it in one way. Both have 8 fps, so every frame time is an exact binary fraction and a
boundary can be hit exactly, and two cameras (``front`` and ``wrist`` below):

* v3.0: episodes of 16, 8 and 8 frames, two per video file: ``file-000.mp4`` of each camera holds episodes 0-1
  (24 frames, segments [0, 2.0] and [2.0, 3.0]) and ``file-001.mp4`` episode 2 (8 frames, [0, 1.0]);
* v2.1: the same episodes, one mp4 per episode and camera.

Which files get their decoder header read (PyAV) is seen through a :class:`FileObserver` subclass that records the
probes the family asks for and then reads them from disk as the default observer does.
"""

from __future__ import annotations

import json
import shutil
import struct
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from lerobot_tools.checks.engine import ValidateOptions, validate_target
from lerobot_tools.checks.observer import FileObserver
from lerobot_tools.checks.videos import _lands, _segment_convention
from lerobot_tools.dataset.targets import resolve_target
from lerobot_tools.sniff import sniff
from lerobot_tools.testing.synth import SynthSpec, build_dataset
from tests.videoclips import FFMPEG, LFS_POINTER, encode, make_placeholders

pytestmark = pytest.mark.skipif(FFMPEG is None, reason="system ffmpeg not installed")

FRONT, WRIST = "observation.images.front", "observation.images.wrist"
INFO = "meta/info.json"
# v3.0 video files
F0, F1 = (f"videos/{FRONT}/chunk-000/file-00{i}.mp4" for i in (0, 1))
W0, W1 = (f"videos/{WRIST}/chunk-000/file-00{i}.mp4" for i in (0, 1))
# v2.1 video files, by episode
V2F = [f"videos/chunk-000/{FRONT}/episode_{i:06d}.mp4" for i in range(3)]
V2W = [f"videos/chunk-000/{WRIST}/episode_{i:06d}.mp4" for i in range(3)]

# the "not checked" notes this family writes, by their checks
NO_VIDEOS = "F002, F004-F010 (videos)"
FROM_LAYOUT = "F010, F003 for names that fit video_path"
NO_PYAV = "F008 (decoder header), F009"
EVERY = "F009 (codec/pix_fmt of every file)"
NO_FPS = "F010"
MISSING = "F010 (missing videos)"
UNKNOWN_LENGTH = "F010 (videos of unknown length)"
VIDEO_NOTES = (NO_VIDEOS, FROM_LAYOUT, NO_PYAV, EVERY, NO_FPS, MISSING, UNKNOWN_LENGTH)
FIRST_ONLY = "decoder headers read for the first file of each video key only; use --deep or --all-videos to read all"

VIDEO = {"file_kind": "video"}
SEG_GROUP = f"episode video segments of {FRONT} do not fit their files"
CONV_GROUP = f"episode video segments of {FRONT} follow a one-frame-off convention"
CAN_NOT_READ = "video files cannot be read"


# ----------------------------------------------------------------------------------------------------- datasets
@pytest.fixture(scope="module")
def v3(tmp_path_factory) -> Path:
    return build_dataset(tmp_path_factory.mktemp("v3") / "ds", SynthSpec(
        episode_lengths=(16, 8, 8), fps=8, video_keys=(FRONT, WRIST), state_dim=2, action_dim=2))


@pytest.fixture(scope="module")
def v2(tmp_path_factory) -> Path:
    return build_dataset(tmp_path_factory.mktemp("v2") / "ds", SynthSpec(
        version="v2.1", episode_lengths=(16, 8, 8), fps=8, video_keys=(FRONT, WRIST), state_dim=2, action_dim=2))


@pytest.fixture(scope="module")
def fragmented(tmp_path_factory) -> Path:
    """A fragmented mp4 of 6 frames at 8 fps: no frame count in its header, and a duration (0.75 s) only PyAV gives."""
    return encode(tmp_path_factory.mktemp("frag") / "frag.mp4", frames=6, fps=8, gop=2,
                  movflags="frag_keyframe+empty_moov")


def _copy(src: Path, tmp_path: Path, name: str = "ds") -> Path:
    return Path(shutil.copytree(src, tmp_path / name))


# ----------------------------------------------------------------------------------------------------- running
class _Recorder(FileObserver):
    """The default observer, recording each video probe asked for: (relpath, pyav, sniffed)."""

    def __init__(self):
        self.calls: list[tuple] = []

    def probe_video(self, rel, path, *, pyav, sniffed):
        self.calls.append((rel, pyav, sniffed))
        return super().probe_video(rel, path, pyav=pyav, sniffed=sniffed)


def _run(root: Path, **opts):
    """(report, [(relpath, pyav) of every video probe, sorted]). Each probe must be handed the file's own sniff."""
    rec = _Recorder()
    (target,) = resolve_target(str(root))
    report = validate_target(target, ValidateOptions(**opts), observer=rec)
    for rel, _, sniffed in rec.calls:
        assert sniffed == sniff(root / rel), rel
    return report, sorted((rel, pyav) for rel, pyav, _ in rec.calls)


def _f(report, *checks: str) -> list[tuple]:
    """``(check, severity, path, message, count, group, subject)`` of the findings of ``checks``, in report order."""
    return [(f.check, f.severity, f.path, f.message, f.count, f.group, f.subject) for f in report.findings
            if f.check in checks]


def _notes(report) -> dict[str, str]:
    """The "not checked" notes of this family."""
    return {n.checks: n.reason for n in report.not_checked if n.checks in VIDEO_NOTES}


def _set_info(root: Path, **changes) -> None:
    info = json.loads((root / INFO).read_text())
    info.update(changes)
    (root / INFO).write_text(json.dumps(info))


def _declare(root: Path, **video_info) -> None:
    """Change the ``info`` block of both cameras in info.json."""
    info = json.loads((root / INFO).read_text())
    for key in (FRONT, WRIST):
        info["features"][key]["info"].update(video_info)
    (root / INFO).write_text(json.dumps(info))


def _drop_wrist(root: Path) -> None:
    info = json.loads((root / INFO).read_text())
    del info["features"][WRIST]
    (root / INFO).write_text(json.dumps(info))


def _set_episode_column(root: Path, name: str, values: dict[int, object]) -> None:
    """v3.0: set ``name`` of the given episodes (episode -> value; None writes a null) in the episode metadata."""
    f = next((root / "meta/episodes").rglob("*.parquet"))
    t = pq.read_table(f)
    i = t.column_names.index(name)
    column = t.column(i).to_pylist()
    for ep, v in values.items():
        column[ep] = v
    pq.write_table(t.set_column(i, t.schema.field(i), pa.array(column, t.schema.field(i).type)), f)


def _segments(root: Path, **by_episode: tuple) -> None:
    """v3.0: ``_segments(root, e1=(from, to))`` sets FRONT's segment of episode 1."""
    eps = {int(k[1:]): v for k, v in by_episode.items()}
    _set_episode_column(root, f"videos/{FRONT}/from_timestamp", {e: a for e, (a, _) in eps.items()})
    _set_episode_column(root, f"videos/{FRONT}/to_timestamp", {e: b for e, (_, b) in eps.items()})


def _v2_lengths(root: Path, lengths: dict[int, int]) -> None:
    path = root / "meta/episodes.jsonl"
    rows = [json.loads(x) for x in path.read_text().splitlines()]
    for ep, n in lengths.items():
        rows[ep]["length"] = n
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))


# ------------------------------------------------------------------------------------------------ pure helpers
@pytest.mark.parametrize("q,frames,duration,expected", [
    (7, 8, None, True), (8, 8, None, False),
    (7, 8, 0.0, True), (8, 8, 100.0, False),  # a frame count is used before a duration
    # no frame count: the query's frame must end within half a frame after the duration, (q + 1) / 8 <= d + 1/16
    (5, None, 0.75, True), (6, None, 0.75, False),
    (6, None, 0.8125, True), (6, None, 0.8125 - 2 ** -10, False),
    (0, None, None, False),
])
def test_lands(q, frames, duration, expected):
    assert _lands(q, 8.0, frames, duration) is expected


LAST_FRAME = "to_timestamp is the last frame's timestamp, from_timestamp + (length - 1) / fps"
ONE_MORE = "the segment counts one frame more than the episode, e.g. the container duration of its mp4"
CONTAINER = "to_timestamp - from_timestamp is the container duration of the episode's mp4, not length / fps"


@pytest.mark.parametrize("d_frames,expected", [
    (-1.0, LAST_FRAME), (-1.04, LAST_FRAME), (-0.96, LAST_FRAME), (-1.06, CONTAINER), (-0.94, CONTAINER),
    (1.0, ONE_MORE), (1.04, ONE_MORE), (0.96, ONE_MORE), (1.06, CONTAINER), (0.94, CONTAINER),
    (-2.0, CONTAINER), (2.0, CONTAINER), (0.8, CONTAINER), (0.0, CONTAINER),
])
def test_segment_convention(d_frames, expected):
    assert _segment_convention(d_frames) == expected


# ------------------------------------------------------------------------------------- clean data, header reads
def test_clean_datasets_read_the_first_header_of_each_camera(v3, v2):
    for root, files in ((v3, [F0, F1, W0, W1]), (v2, V2F + V2W)):
        first = {files[0], files[len(files) // 2]}
        r, probed = _run(root)
        assert [f for f in r.findings if f.check[0] == "F" or f.check == "I008"] == []
        assert probed == [(rel, rel in first) for rel in sorted(files)]
        assert _notes(r) == {EVERY: FIRST_ONLY}
        for opts in ({"all_videos": True}, {"deep": True}):
            r, probed = _run(root, **opts)
            assert [f for f in r.findings if f.check[0] == "F" or f.check == "I008"] == []
            assert probed == [(rel, True) for rel in sorted(files)]
            assert _notes(r) == {}


def test_a_dataset_without_cameras_has_no_video_notes(tmp_path):
    root = build_dataset(tmp_path / "ds", SynthSpec(video_keys=(), video_codec=None, state_dim=2, action_dim=2))
    r, probed = _run(root)
    assert probed == [] and _notes(r) == {}


# ------------------------------------------------------------------------------------------------------- F009
def test_pix_fmt_is_compared_where_the_decoder_header_was_read(v3, tmp_path):
    root = _copy(v3, tmp_path)
    _declare(root, **{"video.pix_fmt": "yuv444p"})
    msg = {k: f"{k}: pix_fmt is yuv420p but info.json says yuv444p" for k in (FRONT, WRIST)}
    r, _ = _run(root)
    assert _f(r, "F009") == [
        ("F009", "warning", F0, msg[FRONT], 1, msg[FRONT], {"video_key": FRONT, "key": "video.pix_fmt"}),
        ("F009", "warning", W0, msg[WRIST], 1, msg[WRIST], {"video_key": WRIST, "key": "video.pix_fmt"}),
    ]
    assert _notes(r) == {EVERY: FIRST_ONLY}
    r, _ = _run(root, all_videos=True)
    assert _f(r, "F009") == [
        ("F009", "warning", F0, f"{msg[FRONT]} (2 occurrences; e.g. {F0}, {F1})", 2, msg[FRONT],
         {"video_key": FRONT, "key": "video.pix_fmt"}),
        ("F009", "warning", W0, f"{msg[WRIST]} (2 occurrences; e.g. {W0}, {W1})", 2, msg[WRIST],
         {"video_key": WRIST, "key": "video.pix_fmt"}),
    ]
    assert [f.paths for f in r.findings if f.check == "F009"] == [[F0, F1], [W0, W1]]
    assert _notes(r) == {}


def test_without_pyav_only_the_mp4_boxes_are_read(v3, tmp_path, monkeypatch):
    root = _copy(v3, tmp_path)
    _declare(root, **{"video.pix_fmt": "yuv444p", "video.codec": "hevc"})
    monkeypatch.setitem(sys.modules, "av", None)  # `import av` raises ImportError: PyAV is not installed
    r, probed = _run(root)
    assert probed == [(rel, False) for rel in (F0, F1, W0, W1)]
    # the codec comes from the MP4 sample entry, for every file; the pix_fmt from no file
    msg = {k: f"{k}: codec is h264 but info.json says hevc" for k in (FRONT, WRIST)}
    assert _f(r, "F009") == [
        ("F009", "warning", F0, f"{msg[FRONT]} (2 occurrences; e.g. {F0}, {F1})", 2, msg[FRONT],
         {"video_key": FRONT, "key": "video.codec"}),
        ("F009", "warning", W0, f"{msg[WRIST]} (2 occurrences; e.g. {W0}, {W1})", 2, msg[WRIST],
         {"video_key": WRIST, "key": "video.codec"}),
    ]
    assert _notes(r) == {NO_PYAV: "PyAV is not installed: only MP4 boxes were read"}


# ------------------------------------------------------------------------------------ video_path cannot be used
def test_a_video_path_that_cannot_be_expanded_skips_the_videos(v3, tmp_path):
    root = _copy(v3, tmp_path)
    tpl = "videos/{video_key}/chunk-{chunk_index:03d}/file-{bogus}.mp4"
    _set_info(root, video_path=tpl)
    allowed = "(allowed: chunk_index, episode_chunk, episode_index, file_index, video_key)"
    r, probed = _run(root)
    assert probed == [] and _f(r, "F002", "F003", "F004", "F005", "F006", "F008", "F009", "F010", "F012") == []
    assert _notes(r) == {NO_VIDEOS: f"{INFO}: video_path template '{tpl}' uses unknown placeholder {{bogus}} {allowed}"}
    shutil.rmtree(root / "meta/episodes")
    r, probed = _run(root)
    assert probed == [] and _f(r, "F002", "F003", "F004", "F005", "F006", "F008", "F009", "F010", "F012") == []
    assert _notes(r) == {NO_VIDEOS: f"the episode metadata is unreadable and {INFO}: template '{tpl}' cannot be parsed "
                                    f"(template '{tpl}' uses unknown placeholder {{bogus}} {allowed})"}


def test_a_null_video_path_skips_the_videos(v2, tmp_path):
    root = _copy(v2, tmp_path)
    _set_info(root, video_path=None)
    r, probed = _run(root)
    assert probed == [] and _f(r, "F002", "F003") == []
    assert _notes(r) == {NO_VIDEOS: f"{INFO}: video_path is null while video features are declared"}
    (root / "meta/episodes.jsonl").unlink()
    r, probed = _run(root)
    assert probed == [] and _f(r, "F002", "F003") == []
    assert _notes(r) == {NO_VIDEOS: f"the episode metadata is unreadable and {INFO}: video_path is null while video "
                                    "features are declared"}


def test_video_path_outside_the_root_is_i008_per_file_and_the_files_on_disk_are_unreferenced(v3, tmp_path):
    root = _copy(v3, tmp_path)
    _set_info(root, video_path="../outside/{video_key}/chunk-{chunk_index:03d}/file-{file_index:03d}.mp4")
    r, probed = _run(root)
    assert probed == []
    assert [f for f in _f(r, "I008") if f[2] != INFO] == [
        ("I008", "error", f"../outside/{key}/chunk-000/file-00{i}.mp4", "path points outside the dataset root", 1,
         None, {"key": "video_path", "video_key": key}) for key in (FRONT, WRIST) for i in (0, 1)]
    assert _f(r, "F003") == [
        ("F003", "warning", F0, f"video file is not referenced by the episode metadata and video_path (4 occurrences; "
                                f"e.g. {F0}, {F1}, {W0} and 1 more)", 4, "unreferenced video files under videos/",
         VIDEO)]
    assert [f.paths for f in r.findings if f.check == "F003"] == [[F0, F1, W0]]
    assert _f(r, "F002", "F008", "F010") == [] and _notes(r) == {}


# ------------------------------------------------------------------------------------ files that are no video
def test_a_directory_in_place_of_a_video_cannot_be_read_and_is_never_probed(v3, tmp_path):
    root = _copy(v3, tmp_path)
    (root / F0).unlink()
    (root / F0).mkdir()
    r, probed = _run(root)
    assert _f(r, "F008", "F002") == [
        ("F008", "error", F0, "video file cannot be read: is a directory, not a file", 1, CAN_NOT_READ,
         {"file_kind": "video", "video_key": FRONT})]
    # the next file of the camera gets the decoder header
    assert probed == [(F1, True), (W0, True), (W1, False)]
    assert _notes(r) == {EVERY: FIRST_ONLY}


def test_a_file_the_probe_cannot_read_uses_up_the_header_and_later_files_are_still_checked(v3, tmp_path):
    root = _copy(v3, tmp_path)
    (root / F0).write_bytes(struct.pack(">I4s4sI", 16, b"ftyp", b"isom", 0))  # an MP4 with no moov box
    (root / W1).write_text(LFS_POINTER)
    r, probed = _run(root)
    assert _f(r, "F008", "F004") == [
        ("F008", "error", F0, "video cannot be read: no moov box: not a playable MP4", 1, CAN_NOT_READ,
         {"file_kind": "video", "video_key": FRONT}),
        ("F004", "error", W1, "video file is a Git LFS pointer (object of 3,123,456 bytes not fetched)", 1,
         f"video files under videos/{WRIST}/chunk-000/ are Git LFS pointers", VIDEO),
    ]
    assert probed == [(F0, True), (F1, False), (W0, True)]



def test_a_file_whose_header_was_not_read_is_said_so_when_the_first_of_its_camera_could_not_be_read(v3, tmp_path):
    """front: file-000 cannot be read (it had the header read), so file-001's pix_fmt is never read; wrist: file-000
    has its header read and file-001 is a placeholder. One readable file per camera, one header per camera, yet
    file-001 of front is not compared: the report must say so."""
    root = _copy(v3, tmp_path)
    _declare(root, **{"video.pix_fmt": "yuv444p"})
    (root / F0).write_bytes(struct.pack(">I4s4sI", 16, b"ftyp", b"isom", 0))
    (root / W1).write_text(LFS_POINTER)
    r, probed = _run(root)
    assert probed == [(F0, True), (F1, False), (W0, True)]
    msg = f"{WRIST}: pix_fmt is yuv420p but info.json says yuv444p"
    assert _f(r, "F009") == [("F009", "warning", W0, msg, 1, msg, {"video_key": WRIST, "key": "video.pix_fmt"})]
    assert _notes(r) == {EVERY: FIRST_ONLY}
    r, probed = _run(root, all_videos=True)
    assert probed == [(F0, True), (F1, True), (W0, True)]
    assert [f.path for f in r.findings if f.check == "F009"] == [F1, W0]
    assert _notes(r) == {}

def test_random_bytes_under_a_video_name_are_f008(v3, tmp_path):
    root = _copy(v3, tmp_path)
    shutil.copy(make_placeholders(tmp_path / "ph")["random"], root / F1)
    r, probed = _run(root)
    assert _f(r, "F008") == [
        ("F008", "error", F1, "video cannot be read: not a video: unrecognised file type, 4.1 kB (first bytes a7 00 ff "
                              "13 f7 c7 70 1d)", 1, CAN_NOT_READ, {"file_kind": "video", "video_key": FRONT})]
    assert probed == [(F0, True), (F1, False), (W0, True), (W1, False)]
    assert _notes(r) == {EVERY: FIRST_ONLY}


@pytest.mark.parametrize("kind,check,message,cause", [
    ("empty", "F006", "video file is empty (0 bytes)", "are empty (0 bytes)"),
    ("lfs-pointer", "F004", "video file is a Git LFS pointer (object of 3,123,456 bytes not fetched)",
     "are Git LFS pointers"),
    ("html", "F005", 'video file is an HTML page (187 B), not data: "429 Too Many Requests"',
     "are error pages or text, not data"),
    ("json", "F005", 'video file is a JSON error body (27 B), not data: {"error":"Entry not found"}',
     "are error pages or text, not data"),
    ("xml", "F005", "video file is an XML error body (141 B), not data: AccessDenied",
     "are error pages or text, not data"),
    ("text", "F005", "video file is a text file (10 B), not data: 'Not Found'", "are error pages or text, not data"),
])
def test_a_placeholder_video_is_reported_and_never_probed(v3, tmp_path, kind, check, message, cause):
    root = _copy(v3, tmp_path)
    shutil.copy(make_placeholders(tmp_path / "ph")[kind], root / F0)
    r, probed = _run(root)
    assert _f(r, "F002", "F004", "F005", "F006", "F008", "F010") == [
        (check, "error", F0, message, 1, f"video files under videos/{FRONT}/chunk-000/ {cause}", VIDEO)]
    assert probed == [(F1, True), (W0, True), (W1, False)]
    assert _notes(r) == {EVERY: FIRST_ONLY}


# ------------------------------------------------------------------------------------------------------- F002
def test_missing_first_files_are_named_per_camera_and_the_next_file_gets_the_header(v3, tmp_path):
    root = _copy(v3, tmp_path)
    (root / F0).unlink()
    (root / W0).unlink()
    r, probed = _run(root)
    assert _f(r, "F002", "F008") == [
        ("F002", "error", path, f"video file of {key} for episode(s) 0, 1 is missing", 1,
         f"video files of {key} are missing", {"file_kind": "video", "video_key": key})
        for path, key in ((F0, FRONT), (W0, WRIST))]
    assert probed == [(F1, True), (W1, True)]
    assert _notes(r) == {MISSING: "2 video file(s) missing, their segments not checked"}


def test_two_missing_files_of_one_camera_are_one_grouped_finding(v2, tmp_path):
    root = _copy(v2, tmp_path)
    (root / V2F[0]).unlink()
    (root / V2F[2]).unlink()
    r, probed = _run(root)
    group = f"video files of {FRONT} are missing"
    assert _f(r, "F002") == [
        ("F002", "error", V2F[0], f"{group} for episodes 0 and 2 (2 occurrences; e.g. {V2F[0]}, {V2F[2]})", 2, group,
         {"file_kind": "video", "video_key": FRONT})]
    assert probed == [(V2F[1], True), (V2W[0], True), (V2W[1], False), (V2W[2], False)]
    assert _notes(r) == {EVERY: FIRST_ONLY, MISSING: "2 video file(s) missing, their segments not checked"}


def test_all_referenced_videos_missing_is_one_finding(v3, v2, tmp_path):
    root = _copy(v3, tmp_path, "v3")
    for rel in (F0, F1, W0, W1):
        (root / rel).unlink()
    r, probed = _run(root)
    assert probed == []
    assert _f(r, "F002", "F003") == [
        ("F002", "error", None, f"all 4 referenced video file(s) are missing (e.g. {F0}, {F1}, {W0} and 1 more)", 1,
         None, VIDEO)]
    assert _notes(r) == {MISSING: "4 video file(s) missing, their segments not checked"}
    # three files: no "more"
    root = _copy(v2, tmp_path, "v2")
    _drop_wrist(root)
    for rel in V2F + V2W:
        (root / rel).unlink()
    r, _ = _run(root)
    assert _f(r, "F002", "F003") == [
        ("F002", "error", None, f"all 3 referenced video file(s) are missing (e.g. {', '.join(V2F)})", 1, None, VIDEO)]
    assert _notes(r) == {MISSING: "3 video file(s) missing, their segments not checked"}
    # one file (only episode 0 left in the metadata and on disk): the finding names it
    path = root / "meta/episodes.jsonl"
    path.write_text(path.read_text().splitlines()[0] + "\n")
    for ep in (1, 2):
        (root / f"data/chunk-000/episode_{ep:06d}.parquet").unlink()
    r, _ = _run(root)
    assert _f(r, "F002", "F003") == [
        ("F002", "error", V2F[0], f"all 1 referenced video file(s) are missing (e.g. {V2F[0]})", 1, None, VIDEO)]
    assert _notes(r) == {MISSING: "1 video file(s) missing, their segments not checked"}


def test_a_moved_video_is_one_relocation_finding_not_an_orphan(v3, tmp_path):
    root = _copy(v3, tmp_path)
    moved = f"videos/{FRONT}/chunk-001/file-001.mp4"
    (root / moved).parent.mkdir()
    shutil.move(root / F1, root / moved)
    r, probed = _run(root)
    assert _f(r, "F002", "F003") == [
        ("F002", "error", None, "1 of the 4 expected video files is missing where video_path points: 1 is under "
                                f"another chunk folder (e.g. {moved})", 1, None, VIDEO)]
    assert probed == [(F0, True), (W0, True), (W1, False)]
    assert _notes(r) == {EVERY: FIRST_ONLY, MISSING: "1 video file(s) missing, their segments not checked"}


# ------------------------------------------------------------------------------- episode metadata unreadable
def test_unreadable_v2_episode_metadata_takes_the_videos_from_video_path(v2, tmp_path):
    root = _copy(v2, tmp_path)
    (root / "meta/episodes.jsonl").unlink()
    (root / V2F[1]).unlink()
    stray = f"videos/chunk-000/{WRIST}/stray.mp4"
    other = "videos/chunk-000/observation.images.other/episode_000000.mp4"  # fits video_path, for no declared key
    shutil.copy(root / V2W[0], root / stray)
    (root / other).parent.mkdir()
    shutil.copy(root / V2W[0], root / other)
    r, probed = _run(root)
    source = "video_path and info.json total_episodes = 3"
    assert _f(r, "F002", "F003", "F010") == [
        ("F002", "error", V2F[1], f"video file of {FRONT} for episode(s) 1 is missing", 1,
         f"video files of {FRONT} are missing", {"file_kind": "video", "video_key": FRONT}),
        ("F003", "warning", other, f"video file is not named by video_path for any video key (2 occurrences; e.g. "
                                   f"{other}, {stray})", 2, "unreferenced video files under videos/", VIDEO),
    ]
    assert probed == [(V2F[0], True), (V2F[2], False), (V2W[0], True), (V2W[1], False), (V2W[2], False)]
    assert _notes(r) == {FROM_LAYOUT: f"the episode metadata is unreadable; video files taken from {source}",
                         EVERY: FIRST_ONLY}
    # every expected file gone: one finding, saying where the list came from
    for rel in V2F + V2W + [stray, other]:
        (root / rel).unlink(missing_ok=True)
    r, probed = _run(root)
    assert probed == []
    assert _f(r, "F002", "F003") == [
        ("F002", "error", None, f"all 6 expected ({source}) video file(s) are missing (e.g. {V2F[0]}, {V2F[1]}, "
                                f"{V2F[2]} and 3 more)", 1, None, VIDEO)]
    assert _notes(r) == {FROM_LAYOUT: f"the episode metadata is unreadable; video files taken from {source}"}


def test_unreadable_v3_episode_metadata_takes_the_videos_on_disk_and_checks_no_segment(v3, tmp_path):
    root = _copy(v3, tmp_path)
    shutil.rmtree(root / "meta/episodes")
    stray = f"videos/{FRONT}/chunk-000/stray.mp4"
    shutil.copy(root / F0, root / stray)
    (root / F1).write_text(LFS_POINTER)
    r, probed = _run(root)
    assert _f(r, "F002", "F003", "F004", "F010") == [
        ("F004", "error", F1, "video file is a Git LFS pointer (object of 3,123,456 bytes not fetched)", 1,
         f"video files under videos/{FRONT}/chunk-000/ are Git LFS pointers", VIDEO),
        ("F003", "warning", stray, "video file is not named by video_path for any video key", 1,
         "unreferenced video files under videos/", VIDEO),
    ]
    assert probed == [(F0, True), (W0, True), (W1, False)]
    assert _notes(r) == {FROM_LAYOUT: "the episode metadata is unreadable; video files taken from the files on disk "
                                      "that fit video_path", EVERY: FIRST_ONLY}


def test_incomplete_episode_metadata_never_calls_a_video_that_fits_video_path_unreferenced(v2, tmp_path):
    # row 1 is not JSON and row 2 is gone: episode 2's videos are referenced by no row that was read
    root = _copy(v2, tmp_path)
    rows = (root / "meta/episodes.jsonl").read_text().splitlines()
    (root / "meta/episodes.jsonl").write_text(f"{rows[0]}\nnot json\n{rows[1]}\n")
    stray = f"videos/chunk-000/{FRONT}/stray.mp4"
    shutil.copy(root / V2F[0], root / stray)
    r, probed = _run(root)
    assert _f(r, "F002", "F003") == [
        ("F003", "warning", stray, "video file is not named by video_path for any video key", 1,
         "unreferenced video files under videos/", VIDEO)]
    assert probed == [(V2F[0], True), (V2F[1], False), (V2W[0], True), (V2W[1], False)]
    assert _notes(r) == {EVERY: FIRST_ONLY}


def test_a_stray_video_next_to_complete_metadata_is_not_referenced(v3, tmp_path):
    root = _copy(v3, tmp_path)
    stray = f"videos/{WRIST}/chunk-000/file-007.mp4"
    shutil.copy(root / W1, root / stray)
    r, _ = _run(root)
    assert _f(r, "F003") == [
        ("F003", "warning", stray, "video file is not referenced by the episode metadata and video_path", 1,
         "unreferenced video files under videos/", VIDEO)]


# ------------------------------------------------------------------------------------------ F010 / F012, v3.0
def _seg(report) -> list[tuple]:
    return _f(report, "F010", "F012")


def _f010(ep: int, text: str, path: str = F0, key: str = FRONT) -> tuple:
    return ("F010", "error", path, f"episode {ep} ({key}): {text}", 1,
            f"episode video segments of {key} do not fit their files", {"video_key": key, "episode": ep})


def _f012(ep: int, span: float, d: str, length_s: float, convention: str, path: str = F0, key: str = FRONT) -> tuple:
    return ("F012", "warning", path, f"episode {ep} ({key}): to_timestamp - from_timestamp = {span:.4f} s is {d} "
                                     f"frame off length / fps = {length_s:.4f} s ({convention}); every frame query "
                                     "from_timestamp + k/8 lands on a frame within tolerance_s", 1,
            f"episode video segments of {key} follow a one-frame-off convention", {"video_key": key, "episode": ep})


def test_from_timestamp_off_the_frame_grid(v3, tmp_path):
    root = _copy(v3, tmp_path)
    _segments(root, e1=(2.01, 3.0))
    assert _seg(_run(root)[0]) == [_f010(1, "from_timestamp 2.010000 s is 1.00e-02 s off the 1/8 s frame grid: every "
                                            "frame of the episode misses by more than tolerance_s")]
    # episode 0 a 32nd of a second late: 1/32 s off the grid, exactly; a tolerance of 1/32 s lets it pass
    _segments(root, e0=(0.03125, 2.0), e1=(2.0, 3.0))
    assert _seg(_run(root, tolerance_s=0.03125)[0]) == []
    assert _seg(_run(root, tolerance_s=0.0312)[0]) == [
        _f010(0, "from_timestamp 0.031250 s is 3.12e-02 s off the 1/8 s frame grid: every frame of the episode misses "
                 "by more than tolerance_s")]


def test_last_frame_query_past_the_frames_of_the_file(v3, tmp_path):
    root = _copy(v3, tmp_path)
    _set_episode_column(root, "length", {1: 9})  # both cameras: 16 + 9 frames in a file of 24
    assert _seg(_run(root)[0]) == [
        _f010(1, "its last frame query (from_timestamp + 8/8 = 3.0000 s) is past the last frame of the video "
                 "(24 frames)", path, key) for path, key in ((F0, FRONT), (W0, WRIST))]


def test_a_one_frame_episode_past_the_end_of_its_file(v3, tmp_path):
    root = _copy(v3, tmp_path)
    _set_episode_column(root, "length", {1: 1})
    _segments(root, e1=(3.0, 3.125))  # frame 24 of a file of 24 frames
    assert _seg(_run(root)[0]) == [
        _f010(1, "its last frame query (from_timestamp + 0/8 = 3.0000 s) is past the last frame of the video "
                 "(24 frames)"),
        _f010(1, "segment lasts 1.0000 s but the episode has 1 frames (0.1250 s)", W0, WRIST),
    ]


def test_to_timestamp_past_the_end_when_the_length_is_unknown(v3, tmp_path):
    root = _copy(v3, tmp_path)
    _set_episode_column(root, "length", {1: None})
    _segments(root, e1=(2.0, 3.0625))  # half a frame past the 3.0 s of the file: still a frame
    assert _seg(_run(root)[0]) == []
    _segments(root, e1=(2.0, 3.0626))
    assert _seg(_run(root)[0]) == [_f010(1, "to_timestamp 3.0626 s is past the end of the video (3.0000 s)")]


def test_an_episode_of_unknown_length_ends_at_its_to_timestamp(v3, tmp_path):
    root = _copy(v3, tmp_path)
    _set_episode_column(root, "length", {0: None})
    assert _seg(_run(root)[0]) == []
    _segments(root, e0=(0.0, 2.25))  # episode 0 runs to frame 18
    assert _seg(_run(root)[0]) == [
        _f010(1, "from_timestamp 2.0000 s is frame 16, but the previous episode's frames run to frame 17: 2 frame(s) "
                 "are read for both episodes")]


@pytest.mark.parametrize("e1,message", [
    ((1.875, 3.0), "from_timestamp 1.8750 s is frame 15, but the previous episode's frames run to frame 15: 1 frame(s) "
                   "are read for both episodes"),
    ((0.0, 2.0), "from_timestamp 0.0000 s is frame 0, but the previous episode's frames run to frame 15: 16 frame(s) "
                 "are read for both episodes"),
], ids=["overlapping", "same-segment"])
def test_segments_overlapping_the_previous_episode(v3, tmp_path, e1, message):
    root = _copy(v3, tmp_path)
    _segments(root, e1=e1)
    assert _seg(_run(root)[0]) == [_f010(1, message)]


def test_segments_are_taken_in_file_order(v3, tmp_path):
    root = _copy(v3, tmp_path)
    _segments(root, e0=(1.0, 3.0), e1=(0.0, 1.0))  # episode 1 first in the file, then episode 0
    assert _seg(_run(root)[0]) == []
    _segments(root, e0=(0.0, 2.0), e1=(2.0, 1.0))  # ends before it starts: still after episode 0 in the file
    assert _seg(_run(root)[0]) == [_f010(1, "segment lasts -1.0000 s but the episode has 8 frames (1.0000 s)")]


def test_the_first_episode_of_a_file_starts_at_0(v3, tmp_path):
    root = _copy(v3, tmp_path)
    _set_episode_column(root, "length", {2: 7})
    _segments(root, e2=(0.125, 1.0))
    assert _seg(_run(root)[0]) == [
        _f010(2, "the first episode in the file starts at 0.1250 s, not 0", F1),
        _f012(2, 1.0, "+1.00", 0.875, ONE_MORE, W1, WRIST),
    ]


def test_an_episode_without_a_segment_is_left_out(v3, tmp_path):
    root = _copy(v3, tmp_path)
    _segments(root, e0=(None, 2.0))  # episode 1 is now the first segment of the file
    assert _seg(_run(root)[0]) == [_f010(1, "the first episode in the file starts at 2.0000 s, not 0")]


def test_skipped_frames_between_segments_half_a_frame(v3, tmp_path):
    root = _copy(v3, tmp_path)
    _set_episode_column(root, "length", {1: 7})  # episode 1 starts at frame 17: frame 16 is skipped
    wrist = _f012(1, 1.0, "+1.00", 0.875, ONE_MORE, W0, WRIST)
    _segments(root, e0=(0.0, 2.0625), e1=(2.125, 3.0))  # half a frame after episode 0's to_timestamp: follows it
    assert _seg(_run(root)[0]) == [wrist]
    _segments(root, e0=(0.0, 2.0625 - 2 ** -10), e1=(2.125, 3.0))
    assert _seg(_run(root)[0]) == [
        _f010(1, "from_timestamp 2.1250 s does not follow the previous episode's to_timestamp 2.0615 s"), wrist]


def test_segment_duration_against_length_over_fps(v3, tmp_path):
    root = _copy(v3, tmp_path)
    _segments(root, e1=(2.0, 3.2))
    assert _seg(_run(root)[0]) == [_f010(1, "segment lasts 1.2000 s but the episode has 8 frames (1.0000 s)")]
    _segments(root, e1=(2.0, 2.875))
    assert _seg(_run(root)[0]) == [_f012(1, 0.875, "-1.00", 1.0, LAST_FRAME)]
    _segments(root, e1=(2.0, 3.125))
    assert _seg(_run(root)[0]) == [_f012(1, 1.125, "+1.00", 1.0, ONE_MORE)]
    # two frames off with a tolerance of one frame: exactly at frame + tolerance_s, still a convention
    _segments(root, e1=(2.0, 3.25))
    assert _seg(_run(root, tolerance_s=0.125)[0]) == [_f012(1, 1.25, "+2.00", 1.0, CONTAINER)]
    assert _seg(_run(root, tolerance_s=0.124)[0]) == [
        _f010(1, "segment lasts 1.2500 s but the episode has 8 frames (1.0000 s)")]


def test_a_file_shorter_than_its_segments_by_duration(v3, fragmented, tmp_path):
    """A fragmented mp4 has no frame count in its header; read with its decoder header, its fragments give every
    frame's timestamp: 6 frames from 0.125 s (x264's reorder delay, no edit list) to 0.875 s, where F010 ends it."""
    root = _copy(v3, tmp_path)
    shutil.copy(fragmented, root / F0)
    r, probed = _run(root)
    assert (F0, True) in probed
    assert _seg(r) == [
        ("F010", "error", F0, f"episode 0 ({FRONT}): its last frame query (from_timestamp + 15/8 = 1.8750 s) is past "
                              f"the last frame of the video (0.8750 s) (2 occurrences: {SEG_GROUP}, for episodes 0 "
                              f"and 1; e.g. {F0})", 2,
         SEG_GROUP, {"video_key": FRONT})]
    assert UNKNOWN_LENGTH not in _notes(r)
    # not the first file of its camera: no header, no duration, the segment is not checked, and the report says so
    root = _copy(v3, tmp_path, "second")
    shutil.copy(fragmented, root / F1)
    r, _ = _run(root)
    assert _seg(r) == []
    assert _notes(r)[UNKNOWN_LENGTH] == (
        f"1 video file(s), e.g. {F1}: neither a frame count nor a duration in the MP4 header (a fragmented MP4 "
        "indexes its frames in its fragments); --all-videos takes the duration from each file's decoder header")
    assert _seg(_run(root, all_videos=True)[0]) == [
        _f010(2, "its last frame query (from_timestamp + 7/8 = 0.8750 s) is past the last frame of the video "
                 "(0.8750 s)", F1)]


def test_missing_video_leaves_its_segments_unchecked(v3, tmp_path):
    root = _copy(v3, tmp_path)
    (root / F1).unlink()
    _set_episode_column(root, "length", {2: 9})
    r, _ = _run(root)
    assert _seg(r) == [_f010(2, "its last frame query (from_timestamp + 8/8 = 1.0000 s) is past the last frame of the "
                                "video (8 frames)", W1, WRIST)]
    assert _notes(r) == {EVERY: FIRST_ONLY, MISSING: "1 video file(s) missing, their segments not checked"}


def test_no_valid_fps_no_segment_check(v3, tmp_path):
    root = _copy(v3, tmp_path)
    _set_info(root, fps=0)
    _set_episode_column(root, "length", {1: 9})
    r, _ = _run(root)
    assert _seg(r) == []
    assert _notes(r) == {EVERY: FIRST_ONLY, NO_FPS: "info.json fps is not a valid frame rate"}


# ------------------------------------------------------------------------------------------------ F010, v2.1
def _v2_f010(ep: int, length: int, key: str, held: str, path: str) -> tuple:
    return ("F010", "error", path, f"episode {ep} has {length} frames ({length / 8:.3f} s) but its {key} video {held}: "
                                   "the last frame queries land past the end", 1,
            "videos are shorter than their episodes", {"video_key": key, "episode": ep})


def test_v2_episode_longer_than_its_file(v2, tmp_path):
    root = _copy(v2, tmp_path)
    _v2_lengths(root, {2: 8})
    assert _seg(_run(root)[0]) == []
    _v2_lengths(root, {2: 9})
    r, _ = _run(root)
    first = _v2_f010(2, 9, FRONT, "holds 8 frames", V2F[2])
    assert _seg(r) == [first[:3] + (f"{first[3]} (2 occurrences: videos are shorter than their episodes; e.g. "
                                    f"{V2F[2]}, {V2W[2]})", 2, first[5], {"episode": 2})]


def test_v2_episode_longer_than_its_file_by_duration(v2, fragmented, tmp_path):
    root = _copy(v2, tmp_path)
    for rel in (V2F[0], V2F[1]):
        shutil.copy(fragmented, root / rel)
    # episode 0: the first file of the camera, its header gives 0.75 s; episode 1 (no header) is not checked
    assert _seg(_run(root)[0]) == [_v2_f010(0, 16, FRONT, "lasts 0.875 s", V2F[0])]
    r, _ = _run(root, all_videos=True)
    first = _v2_f010(0, 16, FRONT, "lasts 0.875 s", V2F[0])
    assert _seg(r) == [first[:3] + (f"{first[3]} (2 occurrences: videos are shorter than their episodes, for "
                                    f"episodes 0 and 1; e.g. {V2F[0]}, {V2F[1]})", 2, first[5], {"video_key": FRONT})]
    # the six frames (x264's reorder delay left in a fragmented file: 0.125 s to 0.75 s) end at 0.875 s: a 7-frame
    # episode fits the span, an 8-frame one does not; the start offset itself is the timestamp audit's (F020)
    _v2_lengths(root, {0: 7, 1: 8})
    r, _ = _run(root, all_videos=True)
    assert _seg(r) == [_v2_f010(1, 8, FRONT, "lasts 0.875 s", V2F[1])]
    assert {(f.check, f.severity) for f in r.findings if f.check == "F020"} == {("F020", "error")}
