"""Tolerances that tests/checks/test_boundaries.py does not cover, each placed just inside (passes) and just outside
(fails):

* F009: the stream frame rate against ``info.json`` ``fps`` (relative tolerance
  :data:`lerobot_tools.video.compare.FPS_TOLERANCE`);
* F010 / F012: a v3.0 episode's segment duration against ``length / fps`` (half a frame: exact; up to one frame
  plus ``tolerance_s``: F012 warning; beyond: F010), its last frame query against the frames in the file, the
  first segment's start and overlapping or skipped frames between segments (frame rounding, half a frame), the
  frame-grid test of ``from_timestamp`` against ``--tolerance-s``, and the v2.x episode length against its file;
* the loaders' decoder ``tolerance_s`` (``FrameDataset`` and ``lrtool smoke --tolerance-s``).

Datasets are real: :mod:`lerobot_tools.testing.synth` writes parquet and h264 mp4 (ffmpeg), then one number in the
metadata is moved to either side of the boundary.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from lerobot_tools.cli import cli
from lerobot_tools.testing.synth import SynthSpec, build_dataset

pytestmark = pytest.mark.skipif(shutil.which("ffmpeg") is None, reason="system ffmpeg not installed")

KEY = "observation.images.front"
EPS = 1e-3  # seconds either side of a half-frame boundary (0.05 s at 10 fps): far above float noise


def findings(*args: str) -> list[dict]:
    """Every finding of ``lrtool validate ARGS --format json``."""
    r = CliRunner().invoke(cli, ["validate", *map(str, args), "--format", "json"])
    assert r.exit_code in (0, 1), r.output
    return [f for d in json.loads(r.stdout)["datasets"] for f in d["findings"]]


def of(check: str, found: list[dict]) -> list[str]:
    return [f["message"] for f in found if f["check"] == check]


@pytest.fixture(scope="module")
def v30(tmp_path_factory) -> Path:
    """v3.0, 10 fps, episodes of 20 and 15 frames in one video file: segments [0, 2.0] and [2.0, 3.5]."""
    root = tmp_path_factory.mktemp("v30") / "ds"
    return build_dataset(root, SynthSpec(episode_lengths=(20, 15), state_dim=2, action_dim=2))


def _copy(src: Path, tmp_path: Path) -> Path:
    dst = tmp_path / "ds"
    shutil.copytree(src, dst)
    return dst


def _set_segments(root: Path, segments: list[tuple[float, float]]) -> None:
    """Rewrite the v3.0 episode metadata's (from_timestamp, to_timestamp) of KEY, one pair per episode."""
    f = next((root / "meta/episodes").rglob("*.parquet"))
    t = pq.read_table(f)
    for side, values in (("from", [s[0] for s in segments]), ("to", [s[1] for s in segments])):
        name = f"videos/{KEY}/{side}_timestamp"
        i = t.column_names.index(name)
        t = t.set_column(i, t.schema.field(i), pa.array(values, t.schema.field(i).type))
    pq.write_table(t, f)


def _f010(root: Path, *extra: str) -> dict[int, str]:
    """episode -> F010 message."""
    out = {}
    for f in findings(root, *extra):
        if f["check"] == "F010":
            out[int(f["message"].split()[1])] = f["message"]
    return out


def test_the_unchanged_dataset_has_no_f009_or_f010(v30):
    found = findings(v30, "--all-videos")
    assert not of("F009", found) and not of("F010", found), found


# ------------------------------------------------------------------------------------------------------ F010
def _set_length(root: Path, episode: int, length: int) -> None:
    f = next((root / "meta/episodes").rglob("*.parquet"))
    t = pq.read_table(f)
    i = t.column_names.index("length")
    v = t.column(i).to_pylist()
    v[episode] = length
    t = t.set_column(i, t.schema.field(i), pa.array(v, t.schema.field(i).type))
    pq.write_table(t, f)


def _f012(root: Path, *extra: str) -> dict[int, str]:
    return {int(f["message"].split()[1]): f["message"] for f in findings(root, *extra) if f["check"] == "F012"}


@pytest.mark.parametrize("sign", [1, -1])
def test_f010_f012_segment_duration_against_length_over_fps(v30, tmp_path, sign):
    """Episode 1 (15 frames = 1.5 s): a segment within half a frame of 1.5 s is exact, up to one frame (+ tolerance_s)
    off is a writer convention (F012 warning), beyond that an error (F010)."""
    root = _copy(v30, tmp_path)
    tol = 1e-4  # the default --tolerance-s

    def with_d(d: float) -> tuple[dict, dict]:
        _set_segments(root, [(0.0, 2.0), (2.0, 3.5 + sign * d)])
        return _f010(root), _f012(root)

    assert with_d(0.05 - EPS) == ({}, {})
    f010, f012 = with_d(0.05 + EPS)
    assert f010 == {} and list(f012) == [1] and "frame off length / fps = 1.5000 s" in f012[1], (f010, f012)
    f010, f012 = with_d(0.1 + tol - 1e-5)
    assert f010 == {} and list(f012) == [1], (f010, f012)
    f010, f012 = with_d(0.1 + tol + 1e-5)
    assert f012 == {} and list(f010) == [1] and "segment lasts" in f010[1] and "has 15 frames" in f010[1], f010


def test_f010_last_frame_query_against_the_frames_in_the_file(v30, tmp_path):
    """The file holds 35 frames; episode 1 starts at frame 20: 15 frames end on the last one, 16 run past it."""
    root = _copy(v30, tmp_path)
    _set_length(root, 1, 15)
    assert _f010(root) == {}
    _set_length(root, 1, 16)
    got = _f010(root)
    assert list(got) == [1] and "past the last frame of the video (35 frames)" in got[1], got


def test_f010_first_segment_starts_on_frame_0(v30, tmp_path):
    """from_timestamp rounds to a frame (grid test off): up to half a frame after 0 is frame 0, beyond is frame 1."""
    root = _copy(v30, tmp_path)
    for s, bad in ((0.05 - EPS, False), (0.05 + EPS, True)):
        _set_segments(root, [(s, 2.0), (2.0, 3.5)])
        got = _f010(root, "--tolerance-s", "1")
        if bad:
            assert "the first episode in the file starts at 0.0510 s, not 0" in got.get(0, ""), got
        else:
            assert got == {}, (s, got)


def test_f010_overlapping_segments_by_rounding(v30, tmp_path):
    """Episode 1 starting just after frame 19.5 is frame 20 (no overlap); just before, frame 19: read twice."""
    root = _copy(v30, tmp_path)
    _set_segments(root, [(0.0, 2.0), (1.95 + EPS, 3.5)])
    assert _f010(root, "--tolerance-s", "1") == {}
    _set_segments(root, [(0.0, 2.0), (1.95 - EPS, 3.5)])
    got = _f010(root, "--tolerance-s", "1")
    assert list(got) == [1] and "1 frame(s) are read for both episodes" in got[1], got


def test_f010_skipped_frames_between_segments_half_a_frame(v30, tmp_path):
    """Episode 1 shortened to 14 frames starts at frame 21 (one frame skipped): its from_timestamp may be up to half
    a frame after episode 0's to_timestamp."""
    root = _copy(v30, tmp_path)
    _set_length(root, 1, 14)
    for b0, bad in ((2.05 + EPS, False), (2.05 - EPS, True)):
        _set_segments(root, [(0.0, b0), (2.1, 3.5)])
        got = _f010(root)
        if bad:
            assert list(got) == [1] and "does not follow the previous episode's to_timestamp 2.0490 s" in got[1], got
        else:
            assert got == {}, (b0, got)


def test_f010_from_timestamp_on_the_frame_grid_within_tolerance_s(v30, tmp_path):
    root = _copy(v30, tmp_path)
    off = 0.01  # episode 1 starts 10 ms after a frame boundary: every query of it misses its frame by 10 ms
    _set_segments(root, [(0.0, 2.0), (2.0 + off, 3.5)])
    err = abs((2.0 + off) * 10 - round((2.0 + off) * 10)) / 10
    got = _f010(root)  # default tolerance 1e-4
    assert list(got) == [1] and "off the 1/10 s frame grid" in got[1], got
    assert _f010(root, "--tolerance-s", repr(err * (1 + 1e-6))) == {}
    got = _f010(root, "--tolerance-s", repr(err * (1 - 1e-6)))
    assert list(got) == [1] and "off the 1/10 s frame grid" in got[1], got


def test_f010_v2_episode_length_against_the_frames_in_its_file(tmp_path):
    """v2.x: one file per episode; its last frame query (length - 1) must be a frame of the file."""
    root = build_dataset(tmp_path / "ds", SynthSpec(version="v2.1", episode_lengths=(20, 15), state_dim=2,
                                                   action_dim=2))
    ep_file = root / "meta/episodes.jsonl"
    rows = [json.loads(x) for x in ep_file.read_text().splitlines()]

    def with_length(n: int) -> dict[int, str]:
        rows[0]["length"] = n
        ep_file.write_text("".join(json.dumps(r) + "\n" for r in rows))
        return _f010(root)

    assert with_length(20) == {}
    got = with_length(21)
    assert list(got) == [0] and "has 21 frames (2.100 s) but its" in got[0] and "holds 20 frames" in got[0], got


# ------------------------------------------------------------------------------------------------------ F009
def test_f009_stream_fps_against_info_fps_relative_tolerance(tmp_path):
    """The stream runs at 100 fps; info.json fps 101 is 0.99 % away (inside F009's 1 %), 99 is 1.01 % away (outside).

    At each of them the frame queries k / fps miss the frames j / 100 after a frame or two, so the one finding is the
    timestamp audit's F020 (error) naming the rate; F009's fps comparison is silent for that cause (it used to
    report the same file as a warning beside the F020 error). The 1 % boundary itself is F009's, checked on the
    file's real probe."""
    from lerobot_tools.video.compare import compare_header
    from lerobot_tools.video.probe import probe_video

    root = build_dataset(tmp_path / "ds", SynthSpec(episode_lengths=(12,), fps=100, state_dim=2, action_dim=2))
    info_path = root / "meta/info.json"
    info = json.loads(info_path.read_text())
    probe = probe_video(root / f"videos/{KEY}/chunk-000/file-000.mp4", pyav=True)
    feature = info["features"][KEY]

    def with_fps(fps: int) -> tuple[list[str], list[tuple[str, str]]]:
        info["fps"] = fps
        info_path.write_text(json.dumps(info, indent=4))
        mismatch = [m.message for m in compare_header(feature, fps, probe) if m.field == "fps"]
        return mismatch, [(f["check"], f["severity"]) for f in findings(root) if f["check"] in ("F009", "F020")]

    assert with_fps(100) == ([], [])
    mismatch, found = with_fps(101)
    assert mismatch == [] and found == [("F020", "error")], found
    assert "another frame rate: the frames are spaced at 100.000 fps, not info.json's 101" in of("F020", findings(root))[0]
    for fps in (99, 102):  # 102: 1.96 % of 102
        mismatch, found = with_fps(fps)
        assert mismatch == [f"frame rate is 100.000 but info.json fps is {fps}"], mismatch
        assert found == [("F020", "error")], found
        msg = of("F020", findings(root))[0]
        assert f"another frame rate: the frames are spaced at 100.000 fps, not info.json's {fps}: " in msg, msg
        assert "frame queries of episode(s) 0 fail" in msg, msg


# ------------------------------------------------------------------------------------------- decoder tolerance_s
@pytest.fixture(scope="module")
def shifted_v21(tmp_path_factory) -> tuple[Path, float, float]:
    """v2.1 with every timestamp of episode 1 3 ms late (float32); returns (root, smallest, largest) query error."""
    root = tmp_path_factory.mktemp("shift") / "ds"
    build_dataset(root, SynthSpec(version="v2.1", episode_lengths=(6, 5), state_dim=2, action_dim=2))
    f = root / "data/chunk-000/episode_000001.parquet"
    t = pq.read_table(f)
    i = t.column_names.index("timestamp")
    ts = t.column(i).to_numpy().astype(np.float32) + np.float32(0.003)
    t = t.set_column(i, t.schema.field(i), pa.array(ts, pa.float32()))
    pq.write_table(t, f)
    err = np.abs(ts.astype(np.float64) - np.arange(len(ts)) / 10)
    return root, float(err.min()), float(err.max())


def test_frame_dataset_tolerance_s_boundary(shifted_v21, tmp_path):
    from lerobot_tools.loaders import FrameDataset
    from lerobot_tools.loaders.video import FrameTimestampError

    root, lo, hi = shifted_v21
    assert 0.0029 < lo <= hi < 0.0031 and hi - lo < 1e-6
    first = 6  # episode 1, frame 0
    ok = FrameDataset(root, cache_dir=tmp_path / "c", tolerance_s=hi + 1e-7)
    for k in range(first, first + 5):
        ok[k]  # every frame of episode 1 is within the tolerance
    tight = FrameDataset(root, cache_dir=tmp_path / "c", tolerance_s=lo - 1e-7)
    assert tight[first - 1]["frame_index"].item() == 5  # episode 0 is untouched
    for k in range(first, first + 5):
        with pytest.raises(FrameTimestampError, match="no frame within tolerance_s"):
            tight[k]


def test_smoke_tolerance_s_boundary(shifted_v21, tmp_path):
    root, lo, hi = shifted_v21
    base = ["smoke", str(root), "--loader", "map", "-n", "3", "-b", "4", "-w", "0", "--format", "json",
            "--cache-dir", str(tmp_path / "c")]
    r = CliRunner().invoke(cli, [*base, "--tolerance-s", repr(hi + 1e-7)])
    assert r.exit_code == 0, r.output
    r = CliRunner().invoke(cli, [*base, "--tolerance-s", repr(lo - 1e-7)])
    assert r.exit_code != 0 and "no frame within tolerance_s" in r.output, r.output
