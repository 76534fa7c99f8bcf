"""The timestamp audit: every frame's PTS from the sample tables equals what FFmpeg demuxes, every cause fixture raises
exactly its finding and its smallest tolerance_s, and every verdict agrees with a real decode of the queried frames.

The frames of the synthetic videos draw their (episode, frame) (``lerobot_tools.testing.synth.frame_pixels``), so a
decoded frame says which frame a query really got. The decode below is an independent implementation of the PyAV
rule of lerobot 0.4.4 (``decode_video_frames_torchvision``: decode, keep the frame with the nearest timestamp).
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from lerobot_tools.checks.engine import ValidateOptions
from lerobot_tools.checks.timestamps import query_verdicts
from lerobot_tools.dataset.model import Dataset
from lerobot_tools.testing.synth import SynthSpec, build_dataset, read_frame_id
from lerobot_tools.testing.synth.timing import CASES, write_timed_video
from lerobot_tools.validate import validate
from lerobot_tools.video.mp4 import walk_mp4
from lerobot_tools.video.probe import VideoProbe, probe_video
from lerobot_tools.video.timing import FrameTimes, UnknownTimes, analyse, demux_frame_times, frame_times

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
MANIFEST = {f["name"]: f for f in json.loads((FIXTURES / "manifest.json").read_text())["fixtures"]}
BY_CASE = {c.name: c for c in CASES}


def _ffmpeg(out: Path, *args: str, frames: int = 40, fps: int = 30) -> Path:
    subprocess.run(["ffmpeg", "-v", "error", "-y", "-f", "lavfi", "-i", f"testsrc2=s=64x64:r={fps}", "-frames:v",
                    str(frames), *args, str(out)], check=True)
    return out


ENCODES = {
    "x264_bframes": ("-c:v", "libx264", "-pix_fmt", "yuv420p"),
    "x264_g2": ("-c:v", "libx264", "-g", "2", "-pix_fmt", "yuv420p"),
    "x265": ("-c:v", "libx265", "-x265-params", "log-level=error", "-pix_fmt", "yuv420p"),
    "svtav1": ("-c:v", "libsvtav1", "-preset", "12", "-g", "2", "-pix_fmt", "yuv420p"),
    "mpeg4_timescale_1000": ("-c:v", "mpeg4", "-video_track_timescale", "1000"),
    "x264_fragmented": ("-c:v", "libx264", "-pix_fmt", "yuv420p", "-movflags", "frag_keyframe+empty_moov"),
    "x264_empty_edit": ("-c:v", "libx264", "-pix_fmt", "yuv420p", "-output_ts_offset", "0.3333"),
    "x264_no_bframes_empty_edit": ("-c:v", "libx264", "-bf", "0", "-pix_fmt", "yuv420p", "-output_ts_offset", "0.3333"),
}


# ------------------------------------------------------------------------------------------ PTS from the boxes
@pytest.mark.parametrize("name", list(ENCODES))
def test_box_timestamps_equal_ffmpegs_packet_timestamps(name, tmp_path):
    path = _ffmpeg(tmp_path / f"{name}.mp4", *ENCODES[name])
    ft = frame_times(walk_mp4(path, fragments=True))
    demuxed = demux_frame_times(path)
    assert ft.timescale == demuxed.timescale
    assert ft.ticks.tolist() == demuxed.ticks.tolist() and ft.count == 40
    assert ft.end == demuxed.end


def test_what_the_boxes_say_about_the_start(tmp_path):
    # x264's B-frames: the edit list hides the 2-frame reorder delay, the first frame is at 0
    ft = frame_times(walk_mp4(_ffmpeg(tmp_path / "b.mp4", *ENCODES["x264_bframes"])))
    assert ft.ticks[0] == 0 and ft.reordered and ft.edit == "media time 1024"
    # fragmented: no edit list, the delay shows (1024 ticks = 2 frames at 30 fps)
    path = _ffmpeg(tmp_path / "f.mp4", *ENCODES["x264_fragmented"])
    with pytest.raises(UnknownTimes, match="fragmented"):
        frame_times(walk_mp4(path))  # the fragments were not read
    ft = frame_times(walk_mp4(path, fragments=True))
    assert ft.source == "fragments" and ft.ticks[0] == 1024 and "reorder delay" in ft.start_note
    # an empty edit of 1/3 s is stored as 333 ms: 5114.88 ticks, rounded to 5115, as FFmpeg does
    ft = frame_times(walk_mp4(_ffmpeg(tmp_path / "e.mp4", *ENCODES["x264_empty_edit"])))
    assert ft.ticks[0] == 5115 and "rounded from 5114.88" in ft.start_note
    causes = analyse(ft, 30, 1e-4)
    assert causes.names()[0].startswith("start offset: the first frame is at 0.333008 s")


def test_a_timescale_that_cannot_hold_one_frame_is_named(tmp_path):
    ft = frame_times(walk_mp4(_ffmpeg(tmp_path / "m.mp4", *ENCODES["mpeg4_timescale_1000"])))
    assert ft.timescale == 1000 and ft.ticks[:4].tolist() == [0, 33, 67, 100]
    (name,) = analyse(ft, 30, 1e-4).names()
    assert name == "the time base cannot hold 1/fps: frame times are rounded, up to 3.33e-04 s off the grid"


def test_frame_times_round_trip_through_the_probe_json(tmp_path):
    path = write_timed_video(tmp_path / "v.mp4", 0, list(range(12)), [0, 1024, 2048, 5000, 6000, 7168, 8192, 9216,
                                                                     10240, 11264, 12288, 13312], timescale=10240,
                             fps=10)
    probe = probe_video(path, pyav=False)
    again = VideoProbe(**json.loads(json.dumps(probe.to_dict())))  # what a distributed validate records and replays
    ft, back = frame_times(walk_mp4(path)), FrameTimes.from_dict(again.frame_times)
    assert back.ticks.tolist() == ft.ticks.tolist() and back.end == ft.end and back.timescale == 10240
    assert probe.frame_times["runs"] == [[1024, 2], [2952, 1], [1000, 1], [1168, 1], [1024, 6]]  # steps, run-length


def test_an_edit_list_the_model_does_not_reproduce_is_demuxed_or_not_checked(tmp_path):
    path = _ffmpeg(tmp_path / "v.mp4", "-c:v", "libx264", "-bf", "0")
    ft = frame_times(walk_mp4(path))
    boxes = walk_mp4(path)
    boxes.tables.elst = [(500, 0, 1.0), (500, 10240, 1.0)]  # two media segments
    with pytest.raises(UnknownTimes, match="2 media segments"):
        frame_times(boxes)
    boxes.tables.elst = [(1333, 0, 2.0)]
    with pytest.raises(UnknownTimes, match="rate 2"):
        frame_times(boxes)
    assert ft.count == 40


# ------------------------------------------------------------------------------------------ the cause fixtures
def _ids(report):
    return {f.check for f in report.findings if f.severity in ("error", "warning")}


def _decode_all(path: Path) -> tuple[list[float], list[tuple[int, int]]]:
    """Every decoded frame's PTS (seconds) and the (episode, frame) it draws, in presentation order."""
    import av

    out = []
    with av.open(str(path)) as c:
        s = c.streams.video[0]
        for f in c.decode(s):
            out.append((float(f.pts * s.time_base), read_frame_id(f.to_ndarray(format="rgb24"))))
    out.sort(key=lambda x: x[0])
    return [t for t, _ in out], [i for _, i in out]


def _nearest(times: list[float], q: float) -> int:
    best = 0
    for i, t in enumerate(times):
        if abs(t - q) < abs(times[best] - q):
            best = i
    return best


def _episodes(ds: Dataset, vf) -> list[tuple[int, float, int]]:
    from lerobot_tools.checks.timestamps import _episodes_of

    return _episodes_of(ds, vf)


def _columns(ds: Dataset) -> dict[int, tuple[list[int], list[float]]]:
    """Every row's timestamp that is not k / fps, per episode (what the deep scan hands the audit)."""
    out: dict[int, tuple[list[int], list[float]]] = {}
    for df in ds.data_files():
        t = pq.read_table(ds.path(df.relpath), columns=["episode_index", "frame_index", "timestamp"]).to_pylist()
        for r in t:
            if abs(r["timestamp"] - r["frame_index"] / ds.fps) > 1e-9:
                p, v = out.setdefault(r["episode_index"], ([], []))
                p.append(r["frame_index"])
                v.append(r["timestamp"])
    return out


@pytest.mark.parametrize("name", [c.name for c in CASES])
def test_each_cause_raises_its_finding_and_its_smallest_tolerance(name):
    fx = MANIFEST[name]
    root = FIXTURES / "datasets" / name
    (report,) = validate([str(root)], ValidateOptions(deep=fx["deep_only"]))
    assert _ids(report) == set(fx["expect"]) == set(BY_CASE[name].expect)
    f021 = [f for f in report.findings if f.check == "F021"]
    tol = fx["tolerance_s"]
    if tol == 0.0:
        assert f021 == []
    elif tol is None:
        (f,) = f021
        assert f.message.startswith("no tolerance_s makes every frame query land on its own frame")
    else:
        (f,) = f021
        assert f.message.startswith(f"every frame query lands on its own frame with a tolerance_s above {tol:g} s")
        # just above it the PyAV rule lands every query: only torchcodec's index past the file may remain
        (again,) = validate([str(root)], ValidateOptions(deep=fx["deep_only"], tolerance_s=tol * 1.0001))
        left = [x.message for x in again.findings if x.severity == "error"]
        assert all("IndexError" in m for m in left), left


@pytest.mark.parametrize("name", [c.name for c in CASES])
def test_every_verdict_agrees_with_a_real_decode_of_the_queried_frames(name):
    """For every query of every file: the frame the audit predicts is the frame the PyAV rule decodes, its
    distance is the decoded frame's, and 'its own frame' means the decoded frame draws that episode and frame."""
    ds = Dataset(FIXTURES / "datasets" / name)
    columns = _columns(ds)
    checked = 0
    for vf in ds.video_files():
        path = ds.path(vf.relpath)
        eps = _episodes(ds, vf)
        v = query_verdicts(demux_frame_times(path), eps, ds.fps, columns)
        times, ids = _decode_all(path)
        for i in range(len(v.query)):
            e = eps[v.slot[i]][0]
            got = _nearest(times, float(v.query[i]))
            assert got == v.frame[i], (vf.relpath, e, int(v.k[i]))
            assert abs(times[got] - v.query[i]) == pytest.approx(float(v.distance[i]), abs=1e-9)
            assert (ids[got] == (e, int(v.k[i]))) == bool(v.own[i]), (vf.relpath, e, int(v.k[i]), ids[got])
            checked += 1
    assert checked == sum(ds.fps and e.length for e in ds.episodes) * len(ds.video_keys)


# ------------------------------------------------------------------------------------------ blame, once
def test_a_clean_dataset_and_the_real_writer_raise_nothing():
    for root in [FIXTURES / "datasets" / "clean_v30", *sorted((FIXTURES / "real").glob("*-pandas3"))]:
        (r,) = validate([str(root)], ValidateOptions(deep=True, all_videos=True))
        assert not {"F020", "F021"} & {f.check for f in r.findings}, root


def test_the_drift_is_named_by_f010_once_and_the_file_is_not_blamed():
    (r,) = validate([str(FIXTURES / "datasets" / "broken_segment_drift")])
    (f010,) = [f for f in r.findings if f.check == "F010"]
    assert f010.count == 4 and "the segments drift off the frames along the file, up to 2.00e-03 s" in f010.message
    assert "huggingface/lerobot#3177" in f010.message and "F020" not in {f.check for f in r.findings}


def test_wall_clock_timestamps_are_blamed_on_the_column_with_what_the_queries_do():
    (r,) = validate([str(FIXTURES / "datasets" / "broken_wallclock_timestamps")], ValidateOptions(deep=True))
    (d003,) = [f for f in r.findings if f.check == "D003"]
    assert d003.severity == "error" and "observation.images.front frame queries miss or land on another frame" \
        in d003.message
    assert "F020" not in {f.check for f in r.findings}


def _v21_with_episode0(root: Path, fps: int, frames: int, step: int, timescale: int) -> Path:
    """A clean v2.1 dataset (10 fps unless ``fps``) whose episode 0 mp4 holds ``frames`` frames ``step`` ticks apart."""
    build_dataset(root, SynthSpec(version="v2.1", fps=fps, episode_lengths=(20, 15)))
    rel = "videos/chunk-000/observation.images.front/episode_000000.mp4"
    write_timed_video(root / rel, 0, list(range(frames)), [k * step for k in range(frames)], timescale=timescale,
                      fps=round(timescale / step))
    return root


def _rate_findings(root: Path, **options) -> list[tuple[str, str, str]]:
    (r,) = validate([str(root)], ValidateOptions(**options))
    return [(f.check, f.severity, f.message) for f in r.findings if f.check in ("F009", "F020")]


def test_a_video_at_another_frame_rate_is_one_finding_owned_by_what_the_loader_does(tmp_path):
    """One defect, one finding: a 15 fps file under info.json fps 10 fails every odd frame query (FrameTimestampError):
    F020, an error naming the rate and the failing queries, and no F009 beside it (both used to report it); F009
    keeps it when F020 is not selected. A 20 fps file of twice the frames loads (every query lands on every other
    frame): F009, a warning saying so, and no F020 (it used to add a warning of its own)."""
    root = _v21_with_episode0(tmp_path / "r15", 10, 30, 1024, 15360)
    ((check, severity, msg),) = _rate_findings(root)
    assert (check, severity) == ("F020", "error"), msg
    assert msg.startswith("observation.images.front: another frame rate: the frames are spaced at 15.000 fps, not "
                          "info.json's 10: 10 of 20 frame queries of episode(s) 0 fail (10 miss their frame by up to "
                          "3.33e-02 s; first: episode 0 frame 1 queried at 0.100000 s"), msg
    assert [c for c, _, _ in _rate_findings(root, select={"F009"})] == ["F009"]

    root = _v21_with_episode0(tmp_path / "r20", 10, 40, 512, 10240)
    assert _rate_findings(root) == [("F009", "warning", "observation.images.front: frame rate is 20.000 but info.json "
                                     "fps is 10: every frame query still lands on its own frame within tolerance_s "
                                     "(loads; the frames are read at info.json's 10 fps)")]


def test_a_close_frame_rate_that_drifts_off_the_grid_is_named(tmp_path):
    """29.97 fps (steps of 1001/30000 s) under fps 30 is within F009's 1 %, but drifts 33 us a frame: from frame 4 on
    the queries miss. F020 names the rate (it named no cause: "the frames' timestamps do not follow the episodes'
    segments"); a rounding of 1/fps to the timescale (steps within a tick of timescale / fps) is not a rate."""
    root = _v21_with_episode0(tmp_path / "ds", 30, 40, 1001, 30000)
    ((check, severity, msg),) = _rate_findings(root)
    assert (check, severity) == ("F020", "error")
    assert "another frame rate: the frames are spaced at 29.970 fps, not info.json's 30: 16 of 20 frame queries" in msg
    ft = FrameTimes(1000, np.array([round(k * 1000 / 7) for k in range(70)]), 10000)  # 143 ticks, a 142 in 7
    causes = analyse(ft, 7, 1e-4)
    assert causes.rate is None and causes.rounded


def test_a_v30_column_timed_like_its_videos_loads_and_d003_is_a_warning(tmp_path):
    """Videos whose frames carry the same host-clock times as the timestamp column: every query lands on its own
    frame, so the v3.0 loaders read the right frames; D003 stays (not k / fps) as a warning, F020 as a warning."""
    spec = SynthSpec(episode_lengths=(12,), episodes_per_file=1)
    times = [0.0] + list(np.cumsum(np.random.default_rng(3).uniform(0.09, 0.11, 11)))

    def hook(ep, cols):
        cols["timestamp"][:] = np.asarray(times, dtype=cols["timestamp"].dtype)

    root = build_dataset(tmp_path / "ds", spec, episode_hook=hook)
    stored = pq.read_table(next((root / "data").rglob("*.parquet")), columns=["timestamp"]).column(0).to_pylist()
    write_timed_video(root / "videos/observation.images.front/chunk-000/file-000.mp4", 0, list(range(12)),
                      [round(t * 10240) for t in stored], timescale=10240, fps=10)
    (r,) = validate([str(root)], ValidateOptions(deep=True))
    # F009 is silent: the frames' rate (10.213 fps on average over these 12 frames) is what F020 names
    got = {(f.check, f.severity) for f in r.findings if f.check in ("D003", "F009", "F020", "F021")}
    assert got == {("D003", "warning"), ("F020", "warning")}, [f.message for f in r.findings]
    (d003,) = [f for f in r.findings if f.check == "D003"]
    assert "every frame query still lands on its own frame" in d003.message
    (f020,) = [f for f in r.findings if f.check == "F020"]
    assert "variable frame rate: " in f020.message and " ms, 10.213 fps on average; first at " in f020.message


def test_a_fragmented_file_is_not_checked_by_default_and_audited_with_all_videos(tmp_path):
    root = tmp_path / "ds"
    shutil.copytree(FIXTURES / "datasets" / "clean_v21", root)
    rel = "videos/chunk-000/observation.images.front/episode_000002.mp4"  # not the first file of the camera
    n = next(e for e in Dataset(root).episodes if e.episode_index == 2).length
    write_timed_video(root / rel, 2, list(range(n)), [k * 1024 for k in range(n)], timescale=10240, fps=10,
                      bframes=True, fragmented=True, gop=12)
    (r,) = validate([str(root)])
    notes = {n.checks: n.reason for n in r.not_checked}
    assert "F020" not in _ids(r) and notes["F020, F021 (frame timestamps)"].startswith(f"1 video file(s), e.g. {rel}: "
                                                                                     "fragmented MP4")
    (r,) = validate([str(root)], ValidateOptions(all_videos=True))
    (f,) = [f for f in r.findings if f.check == "F020"]
    assert f.path == rel and "start offset: the first frame is at 0.200000 s" in f.message


def test_the_tolerance_decides_between_a_miss_and_a_landing():
    root = FIXTURES / "datasets" / "broken_frame_rate_variable"
    (r,) = validate([str(root)], ValidateOptions(tolerance_s=0.0249))
    assert [(f.check, f.severity) for f in r.findings if f.check in ("F020", "F021")] == [("F020", "error"),
                                                                                            ("F021", "info")]
    # 25 ms of jitter within the tolerance is no variable frame rate for the loader: every query lands
    (r,) = validate([str(root)], ValidateOptions(tolerance_s=0.02501))
    assert not {"F020", "F021"} & {f.check for f in r.findings}


def test_the_deep_scan_keeps_only_what_it_needs_and_says_when_it_stopped(tmp_path, monkeypatch):
    from lerobot_tools.checks import deep

    path = tmp_path / "f.parquet"
    ts = (np.arange(30) / 10).astype(np.float32)
    ts[5] += 0.00002  # within a quarter of the tolerance: not kept
    ts[7] += 0.5
    ts[9] += 0.5
    pq.write_table(pa.table({"episode_index": np.zeros(30, np.int64), "frame_index": np.arange(30),
                             "timestamp": ts}), path)
    scan = deep.scan_file(path, fps=10, tolerance_s=1e-4, index_offset=None, list_columns={})
    assert scan.ts_off[0][0] == [7, 9] and not scan.ts_off_truncated
    monkeypatch.setattr(deep, "MAX_TS_KEPT", 1)
    scan = deep.scan_file(path, fps=10, tolerance_s=1e-4, index_offset=None, list_columns={})
    assert scan.ts_off[0][0] == [7] and scan.ts_off_truncated


@pytest.mark.parametrize("name", list(ENCODES))
def test_the_fast_path_of_the_probe_equals_the_full_computation(name, tmp_path):
    """The probe's numpy-free path for one-run files gives exactly what the full computation gives."""
    from lerobot_tools.video.timing import frame_times_dict, nominal_rate

    path = _ffmpeg(tmp_path / f"{name}.mp4", *ENCODES[name])
    boxes = walk_mp4(path, fragments=True)
    d, rate = frame_times_dict(boxes)
    ft = frame_times(boxes)
    assert d == ft.to_dict() and rate == nominal_rate(ft)
    if name in ("svtav1", "x264_no_bframes_empty_edit"):  # one stts run, no ctts: the numpy-free path
        assert boxes.tables.ctts is None and len(boxes.tables.stts[0]) == 1
