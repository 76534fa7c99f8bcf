"""Tests for lerobot_tools.testing.synth (synthetic LeRobot datasets) and the committed fixtures.

Everything is checked on real files: parquet read back with pyarrow/pandas, mp4 files encoded by the
system ffmpeg and decoded with PyAV.
"""

from __future__ import annotations

import importlib.util
import json
import shutil
import sys
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from lerobot_tools.errors import LrtoolError
from lerobot_tools.testing.synth import (
    DEFAULT_FEATURES,
    FrameIdError,
    SynthSpec,
    build_dataset,
    concat_videos,
    encode_video,
    frame_pixels,
    read_frame_id,
)

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "fixtures"

needs_ffmpeg = pytest.mark.skipif(shutil.which("ffmpeg") is None, reason="system ffmpeg not installed")

V30_INFO_KEYS = [
    "codebase_version", "fps", "features", "total_episodes", "total_frames", "total_tasks",
    "chunks_size", "data_files_size_in_mb", "video_files_size_in_mb", "data_path", "video_path",
    "robot_type", "splits",
]  # fmt: skip
V21_INFO_KEYS = [
    "codebase_version", "robot_type", "total_episodes", "total_frames", "total_tasks", "total_videos",
    "total_chunks", "chunks_size", "fps", "splits", "data_path", "video_path", "features",
]  # fmt: skip


def load_generate():
    """Import fixtures/generate.py (a script, not a package module)."""
    name = "lrtool_fixtures_generate"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, FIXTURES / "generate.py")
        mod = importlib.util.module_from_spec(spec)
        sys.modules[name] = mod  # dataclasses resolve annotations through sys.modules
        spec.loader.exec_module(mod)
    return sys.modules[name]


def decode_frames(path: Path) -> list[tuple[float, np.ndarray]]:
    import av

    with av.open(str(path)) as c:
        return [(float(f.time), f.to_ndarray(format="rgb24")) for f in c.decode(video=0)]


# ----------------------------------------------------------------------------------------------
# Built datasets shared by several tests
# ----------------------------------------------------------------------------------------------

V30_SPEC = SynthSpec(
    episode_lengths=(7, 5, 9, 4, 6),
    tasks=("pick", "place", "push"),
    video_keys=("observation.images.front",),
    video_codec="h264",
    episodes_per_file=2,
    seed=3,
)
V21_SPEC = SynthSpec(version="v2.1", episode_lengths=(6, 4, 8), video_codec="h264", seed=5)


@pytest.fixture(scope="module")
def v30(tmp_path_factory) -> Path:
    if shutil.which("ffmpeg") is None:
        pytest.skip("system ffmpeg not installed")
    return build_dataset(tmp_path_factory.mktemp("synth") / "v30", V30_SPEC)


@pytest.fixture(scope="module")
def v21(tmp_path_factory) -> Path:
    if shutil.which("ffmpeg") is None:
        pytest.skip("system ffmpeg not installed")
    return build_dataset(tmp_path_factory.mktemp("synth") / "v21", V21_SPEC)


# ----------------------------------------------------------------------------------------------
# v3.0 layout
# ----------------------------------------------------------------------------------------------


def test_v30_info_json(v30: Path):
    text = (v30 / "meta/info.json").read_text()
    info = json.loads(text)
    assert list(info) == V30_INFO_KEYS
    assert text.startswith('{\n    "codebase_version": "v3.0"')  # 4-space indent
    assert info["total_episodes"] == 5 and info["total_frames"] == 31 and info["total_tasks"] == 3
    assert info["data_path"] == "data/chunk-{chunk_index:03d}/file-{file_index:03d}.parquet"
    assert info["video_path"] == "videos/{video_key}/chunk-{chunk_index:03d}/file-{file_index:03d}.mp4"
    feats = info["features"]
    assert list(feats) == ["action", "observation.state", "observation.images.front", *DEFAULT_FEATURES]
    for name, ft in DEFAULT_FEATURES.items():
        assert feats[name] == ft
    assert feats["timestamp"]["dtype"] == "float32" and feats["index"]["dtype"] == "int64"
    cam = feats["observation.images.front"]
    assert cam["shape"] == [64, 64, 3] and cam["names"] == ["height", "width", "channels"]
    assert cam["info"]["video.codec"] == "h264" and cam["info"]["video.fps"] == 10
    assert cam["info"]["has_audio"] is False


def test_v30_data_files(v30: Path):
    files = sorted((v30 / "data").glob("*/*.parquet"))
    assert [f.relative_to(v30).as_posix() for f in files] == [
        "data/chunk-000/file-000.parquet",
        "data/chunk-000/file-001.parquet",
        "data/chunk-000/file-002.parquet",
    ]
    expected_eps = [[0, 1], [2, 3], [4]]
    total = 0
    for f, eps in zip(files, expected_eps):
        pf = pq.ParquetFile(f)
        # one row group per episode, in order
        assert pf.metadata.num_row_groups == len(eps)
        for i, ep in enumerate(eps):
            rg = pf.read_row_group(i)
            assert set(rg["episode_index"].to_pylist()) == {ep}
            assert rg.num_rows == V30_SPEC.episode_lengths[ep]
            assert rg["frame_index"].to_pylist() == list(range(rg.num_rows))
        col = pf.metadata.row_group(0).column(0)
        assert col.compression == "SNAPPY"
        schema = pf.schema_arrow
        assert schema.field("action").type == pa.list_(pa.float32(), 6)
        assert schema.field("observation.state").type == pa.list_(pa.float32(), 6)
        assert schema.field("timestamp").type == pa.float32()
        for name in ("frame_index", "episode_index", "index", "task_index"):
            assert schema.field(name).type == pa.int64()
        assert "observation.images.front" not in schema.names
        hf = json.loads(schema.metadata[b"huggingface"])
        assert hf["info"]["features"]["action"] == {
            "feature": {"dtype": "float32", "_type": "Value"},
            "length": 6,
            "_type": "List",
        }
        assert hf["info"]["features"]["timestamp"] == {"dtype": "float32", "_type": "Value"}
        assert list(hf["info"]["features"]) == schema.names
        total += pf.metadata.num_rows
    assert total == sum(V30_SPEC.episode_lengths)

    table = pa.concat_tables(pq.read_table(f) for f in files)
    assert table["index"].to_pylist() == list(range(total))
    ts = table["timestamp"].to_numpy()
    fi = table["frame_index"].to_numpy()
    assert np.array_equal(ts, (fi / V30_SPEC.fps).astype(np.float32))
    tasks = table["task_index"].to_numpy()
    eps = table["episode_index"].to_numpy()
    assert np.array_equal(tasks, eps % 3)


def test_v30_episodes_metadata(v30: Path):
    ep_file = v30 / "meta/episodes/chunk-000/file-000.parquet"
    assert sorted(p.relative_to(v30).as_posix() for p in (v30 / "meta/episodes").rglob("*")) == [
        "meta/episodes/chunk-000",
        "meta/episodes/chunk-000/file-000.parquet",
    ]
    t = pq.read_table(ep_file)
    key = "observation.images.front"
    assert t.column_names[:11] == [
        "episode_index", "tasks", "length", "data/chunk_index", "data/file_index",
        "dataset_from_index", "dataset_to_index", f"videos/{key}/chunk_index",
        f"videos/{key}/file_index", f"videos/{key}/from_timestamp", f"videos/{key}/to_timestamp",
    ]  # fmt: skip
    assert t.column_names[-2:] == ["meta/episodes/chunk_index", "meta/episodes/file_index"]
    assert t.schema.field("tasks").type == pa.list_(pa.string())
    assert t.schema.field(f"videos/{key}/from_timestamp").type == pa.float64()
    assert t.schema.field("stats/action/min").type == pa.list_(pa.float64())
    assert t.schema.field("stats/frame_index/min").type == pa.list_(pa.int64())
    assert t.schema.field("stats/action/count").type == pa.list_(pa.int64())
    assert t.schema.field(f"stats/{key}/mean").type == pa.list_(pa.list_(pa.list_(pa.float64())))
    rows = t.to_pylist()
    assert [r["episode_index"] for r in rows] == list(range(5))
    assert [r["length"] for r in rows] == list(V30_SPEC.episode_lengths)
    # contiguous half-open global index ranges
    assert rows[0]["dataset_from_index"] == 0
    for a, b in zip(rows, rows[1:]):
        assert b["dataset_from_index"] == a["dataset_to_index"]
    for r in rows:
        assert r["dataset_to_index"] - r["dataset_from_index"] == r["length"]
        assert r["tasks"] == [V30_SPEC.tasks[r["episode_index"] % 3]]
    assert rows[-1]["dataset_to_index"] == 31
    # data/video file of each episode; video timestamps restart at 0 in each file
    assert [r["data/file_index"] for r in rows] == [0, 0, 1, 1, 2]
    assert [r[f"videos/{key}/file_index"] for r in rows] == [0, 0, 1, 1, 2]
    assert [r[f"videos/{key}/from_timestamp"] for r in rows] == [0.0, 0.7, 0.0, 0.9, 0.0]
    for r in rows:
        start = r[f"videos/{key}/from_timestamp"]
        assert r[f"videos/{key}/to_timestamp"] == pytest.approx(start + r["length"] / 10)
    # episode rows really are where data/file_index says
    for r in rows:
        f = v30 / f"data/chunk-000/file-{r['data/file_index']:03d}.parquet"
        idx = pq.read_table(f, columns=["index", "episode_index"]).to_pandas()
        sel = idx[idx.episode_index == r["episode_index"]]["index"]
        assert list(sel) == list(range(r["dataset_from_index"], r["dataset_to_index"]))
    # per-episode stats agree with the data
    data = pa.concat_tables(pq.read_table(f) for f in sorted((v30 / "data").glob("*/*.parquet")))
    state = np.stack(data["observation.state"].to_numpy(zero_copy_only=False))
    for r in rows:
        s = state[r["dataset_from_index"] : r["dataset_to_index"]]
        assert np.allclose(r["stats/observation.state/min"], s.min(0))
        assert np.allclose(r["stats/observation.state/mean"], s.astype(np.float64).mean(0))
        assert np.allclose(r["stats/observation.state/q50"], np.quantile(s.astype(np.float64), 0.5, axis=0))
        assert r["stats/observation.state/count"] == [r["length"]]
    # global stats.json = aggregate over the whole dataset
    stats = json.loads((v30 / "meta/stats.json").read_text())
    assert stats["observation.state"]["count"] == [31]
    assert np.allclose(stats["observation.state"]["mean"], state.astype(np.float64).mean(0))
    assert np.allclose(stats["observation.state"]["std"], state.astype(np.float64).std(0))
    assert np.allclose(stats["observation.state"]["max"], state.max(0))
    assert np.array(stats[key]["mean"]).shape == (3, 1, 1)
    assert stats["index"]["max"] == [30]


def test_v30_tasks_parquet_is_pandas_indexed(v30: Path):
    import pandas as pd

    df = pd.read_parquet(v30 / "meta/tasks.parquet")
    assert df.index.name == "task"
    assert list(df.index) == list(V30_SPEC.tasks)
    assert list(df.columns) == ["task_index"]
    assert df["task_index"].tolist() == [0, 1, 2]
    md = json.loads(pq.read_schema(v30 / "meta/tasks.parquet").metadata[b"pandas"])
    assert md["index_columns"] == ["task"]


@needs_ffmpeg
def test_v30_h264_videos_decode_to_the_right_frames(v30: Path):
    import av

    ep_rows = pq.read_table(v30 / "meta/episodes/chunk-000/file-000.parquet").to_pylist()
    key = "observation.images.front"
    for file_index, eps in enumerate([[0, 1], [2, 3], [4]]):
        path = v30 / f"videos/{key}/chunk-000/file-{file_index:03d}.mp4"
        with av.open(str(path)) as c:
            stream = c.streams.video[0]
            assert stream.codec_context.name == "h264"
            assert (stream.width, stream.height) == (64, 64)
            assert int(stream.average_rate) == 10
            keyframes = [p.is_keyframe for p in c.demux(stream) if p.size]
        frames = decode_frames(path)
        assert len(frames) == sum(V30_SPEC.episode_lengths[e] for e in eps)
        for ep in eps:
            row = ep_rows[ep]
            first = round(row[f"videos/{key}/from_timestamp"] * 10)
            assert keyframes[first], "every episode starts on a keyframe (stream-copy concatenation)"
            for k in range(row["length"]):
                t, img = frames[first + k]
                assert abs(t - (row[f"videos/{key}/from_timestamp"] + k / 10)) <= 1e-4
                assert read_frame_id(img) == (ep, k)


@needs_ffmpeg
@pytest.mark.parametrize("fps", [10, 15, 25, 30, 50, 60])
def test_v30_joins_keep_exact_frame_times_at_any_fps(tmp_path: Path, fps: int):
    """Every frame of a joined v3.0 file sits at exactly k / fps (upstream's PyAV concat); validate finds no timing
    finding. The system FFmpeg 5.1's concat demuxer left steps of 33.66 ms at the joins of a 30 fps file (F020)."""
    from lerobot_tools.validate import validate
    from lerobot_tools.video.timing import demux_frame_times

    spec = SynthSpec(version="v3.0", fps=fps, episode_lengths=(20, 17, 23, 19), episodes_per_file=4,
                     video_size=(32, 32))
    root = build_dataset(tmp_path / "ds", spec)
    key = spec.video_keys[0]
    ft = demux_frame_times(root / f"videos/{key}/chunk-000/file-000.mp4")
    n = sum(spec.episode_lengths)
    assert ft.count == n and ft.timescale % fps == 0
    assert ft.ticks.tolist() == [k * ft.timescale // fps for k in range(n)]
    rows = pq.read_table(root / "meta/episodes/chunk-000/file-000.parquet").to_pylist()
    for row in rows:
        first = row["dataset_from_index"]
        assert abs(row[f"videos/{key}/from_timestamp"] - ft.seconds[first]) < 1e-9
    findings = [f for report in validate([str(root)]) for f in report.findings]
    assert [(f.check, f.severity) for f in findings if f.severity != "info" or f.check.startswith("F")] == []


def test_concat_videos_errors(tmp_path: Path):
    with pytest.raises(ValueError, match="no parts"):
        concat_videos(tmp_path / "out.mp4", [])
    bad = tmp_path / "bad.mp4"
    bad.write_bytes(b"not an mp4 at all")
    with pytest.raises(LrtoolError, match="joining 1 episode videos failed"):
        concat_videos(tmp_path / "out.mp4", [bad])
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.mp4"], "no output, listing or temporary left"


# ----------------------------------------------------------------------------------------------
# v2.1 layout
# ----------------------------------------------------------------------------------------------


def test_v21_layout(v21: Path):
    info = json.loads((v21 / "meta/info.json").read_text())
    assert list(info) == V21_INFO_KEYS
    assert info["total_episodes"] == 3 and info["total_frames"] == 18
    assert info["total_videos"] == 3 and info["total_chunks"] == 1 and info["chunks_size"] == 1000
    assert info["splits"] == {"train": "0:3"}
    assert info["data_path"] == "data/chunk-{episode_chunk:03d}/episode_{episode_index:06d}.parquet"
    assert info["video_path"] == "videos/chunk-{episode_chunk:03d}/{video_key}/episode_{episode_index:06d}.mp4"
    tasks = [json.loads(x) for x in (v21 / "meta/tasks.jsonl").read_text().splitlines()]
    assert tasks == [{"task_index": i, "task": t} for i, t in enumerate(V21_SPEC.tasks)]
    episodes = [json.loads(x) for x in (v21 / "meta/episodes.jsonl").read_text().splitlines()]
    assert episodes == [
        {"episode_index": 0, "tasks": ["pick up the cube"], "length": 6},
        {"episode_index": 1, "tasks": ["place the cube in the bin"], "length": 4},
        {"episode_index": 2, "tasks": ["pick up the cube"], "length": 8},
    ]
    ep_stats = [json.loads(x) for x in (v21 / "meta/episodes_stats.jsonl").read_text().splitlines()]
    assert [e["episode_index"] for e in ep_stats] == [0, 1, 2]
    assert set(ep_stats[0]["stats"]) == set(info["features"])
    assert ep_stats[1]["stats"]["action"]["count"] == [4]
    assert "q01" not in ep_stats[0]["stats"]["action"]  # v2.1-era stats carry no quantiles
    img = np.array(ep_stats[0]["stats"]["observation.images.front"]["mean"])
    assert img.shape == (3, 1, 1) and 0 < img.min() <= img.max() < 1
    stats = json.loads((v21 / "meta/stats.json").read_text())
    assert stats["frame_index"]["count"] == [18] and stats["frame_index"]["max"] == [7]

    index = 0
    for ep, length in enumerate(V21_SPEC.episode_lengths):
        f = v21 / f"data/chunk-000/episode_{ep:06d}.parquet"
        pf = pq.ParquetFile(f)
        assert pf.metadata.num_row_groups == 1 and pf.metadata.num_rows == length
        assert pf.schema_arrow.field("action").type == pa.list_(pa.float32(), 6)
        assert json.loads(pf.schema_arrow.metadata[b"huggingface"])["info"]["features"]["index"] == {
            "dtype": "int64",
            "_type": "Value",
        }
        t = pf.read()
        assert t["index"].to_pylist() == list(range(index, index + length))
        index += length
        video = v21 / f"videos/chunk-000/observation.images.front/episode_{ep:06d}.mp4"
        frames = decode_frames(video)
        assert len(frames) == length
        assert [read_frame_id(img) for _, img in frames] == [(ep, k) for k in range(length)]
        assert frames[-1][0] == pytest.approx((length - 1) / 10, abs=1e-4)


# ----------------------------------------------------------------------------------------------
# Other spec options
# ----------------------------------------------------------------------------------------------


@needs_ffmpeg
def test_av1_two_cameras_decode(tmp_path: Path):
    spec = SynthSpec(
        episode_lengths=(5, 3, 4),
        video_keys=("observation.images.front", "observation.images.top"),
        video_codec="av1",
        episodes_per_file=2,
    )
    root = build_dataset(tmp_path / "ds", spec)
    info = json.loads((root / "meta/info.json").read_text())
    for key in spec.video_keys:
        assert info["features"][key]["info"]["video.codec"] == "av1"
        first = decode_frames(root / f"videos/{key}/chunk-000/file-000.mp4")
        second = decode_frames(root / f"videos/{key}/chunk-000/file-001.mp4")
        assert [read_frame_id(i) for _, i in first] == [(0, k) for k in range(5)] + [(1, k) for k in range(3)]
        assert [read_frame_id(i) for _, i in second] == [(2, k) for k in range(4)]
        assert [round(t, 4) for t, _ in first] == [round(k / 10, 4) for k in range(8)]
    import av

    with av.open(str(root / "videos/observation.images.top/chunk-000/file-000.mp4")) as c:
        assert c.streams.video[0].codec_context.codec.name in ("libdav1d", "libaom-av1", "av1")


@needs_ffmpeg
def test_encode_video_hevc_and_frame_ids(tmp_path: Path):
    frames = np.stack([frame_pixels(300, 1000 + k, 48, 80) for k in range(6)])
    out = tmp_path / "sub" / "clip.mp4"
    encode_video(out, frames, fps=15, codec="hevc", gop=2)
    decoded = decode_frames(out)
    assert [read_frame_id(img) for _, img in decoded] == [(300, 1000 + k) for k in range(6)]
    # lossy coding stays far inside the read tolerance
    assert max(np.abs(img.astype(int) - frames[i].astype(int)).mean() for i, (_, img) in enumerate(decoded)) < 4


def test_encode_video_errors(tmp_path: Path):
    frames = np.zeros((2, 16, 16, 3), np.uint8)
    with pytest.raises(LrtoolError, match="not found"):
        encode_video(tmp_path / "a.mp4", frames, 10, "h264", ffmpeg="no-such-ffmpeg-binary")
    with pytest.raises(ValueError, match="unknown codec"):
        encode_video(tmp_path / "a.mp4", frames, 10, "vp9")
    with pytest.raises(ValueError, match="uint8"):
        encode_video(tmp_path / "a.mp4", frames.astype(np.float32), 10, "h264")


def test_frame_pixels_round_trip_and_rejects_other_images():
    for ep, fr in [(0, 0), (1, 2), (4095, 65535), (65535, 17)]:
        img = frame_pixels(ep, fr, 64, 64)
        assert img.shape == (64, 64, 3) and img.dtype == np.uint8
        assert read_frame_id(img) == (ep, fr)
        assert read_frame_id(np.moveaxis(img, -1, 0)) == (ep, fr)  # CHW
        noisy = np.clip(img.astype(int) + np.random.default_rng(0).integers(-20, 21, img.shape), 0, 255)
        assert read_frame_id(noisy) == (ep, fr)
    assert read_frame_id(frame_pixels(7, 9, 50, 70)) == (7, 9)  # not a multiple of the grid
    with pytest.raises(FrameIdError):
        read_frame_id(np.full((64, 64, 3), 128, np.uint8))
    with pytest.raises(ValueError):
        frame_pixels(65536, 0, 64, 64)


def test_collapsed_row_groups_no_video_and_extra_features(tmp_path: Path):
    spec = SynthSpec(
        episode_lengths=(4, 6, 5),
        extra_vector_features={"observation.embedding": 32},
        video_codec=None,
        row_groups="file",
        write_page_index=True,
    )
    root = build_dataset(tmp_path / "ds", spec)
    assert not (root / "videos").exists()
    info = json.loads((root / "meta/info.json").read_text())
    cam = info["features"]["observation.images.front"]
    assert cam["dtype"] == "video" and "info" not in cam
    f0 = pq.ParquetFile(root / "data/chunk-000/file-000.parquet")
    assert f0.metadata.num_row_groups == 1 and f0.metadata.num_rows == 10
    assert f0.schema_arrow.field("observation.embedding").type == pa.list_(pa.float32(), 32)
    assert f0.metadata.row_group(0).column(0).has_offset_index  # page index written on request
    native = build_dataset(tmp_path / "native", SynthSpec(episode_lengths=(4,), video_keys=()))
    nf = pq.ParquetFile(native / "data/chunk-000/file-000.parquet")
    assert not nf.metadata.row_group(0).column(0).has_offset_index  # pyarrow/native default
    assert json.loads((native / "meta/info.json").read_text())["video_path"] is None


def test_deterministic_and_seeded(tmp_path: Path):
    spec = SynthSpec(episode_lengths=(5, 4), video_keys=(), seed=11)
    a = build_dataset(tmp_path / "a", spec)
    b = build_dataset(tmp_path / "b", spec)
    c = build_dataset(tmp_path / "c", SynthSpec(episode_lengths=(5, 4), video_keys=(), seed=12))
    parquet = ["data/chunk-000/file-000.parquet", "meta/episodes/chunk-000/file-000.parquet", "meta/tasks.parquet"]
    for rel in parquet:
        assert pq.read_table(a / rel).equals(pq.read_table(b / rel))
    assert (a / "meta/stats.json").read_text() == (b / "meta/stats.json").read_text()
    assert not pq.read_table(a / "data/chunk-000/file-000.parquet").equals(
        pq.read_table(c / "data/chunk-000/file-000.parquet")
    )


def test_build_refuses_non_empty_root_and_bad_spec(tmp_path: Path):
    (tmp_path / "x").mkdir()
    (tmp_path / "x" / "keep.txt").write_text("mine")
    with pytest.raises(FileExistsError):
        build_dataset(tmp_path / "x", SynthSpec(video_keys=()))
    assert (tmp_path / "x" / "keep.txt").read_text() == "mine"
    with pytest.raises(ValueError, match="episode_lengths"):
        build_dataset(tmp_path / "y", SynthSpec(episode_lengths=(3, 0)))
    with pytest.raises(ValueError, match="64x64"):
        build_dataset(tmp_path / "y", SynthSpec(video_codec="av1", video_size=(32, 32)))
    assert not (tmp_path / "y").exists()


def test_episode_hook_changes_values_and_stats(tmp_path: Path):
    def hook(ep, cols):
        if ep == 1:
            cols["task_index"][:] = 1

    spec = SynthSpec(episode_lengths=(3, 3), episode_task=(0, 0), video_keys=())
    root = build_dataset(tmp_path / "ds", spec, episode_hook=hook)
    rows = pq.read_table(root / "meta/episodes/chunk-000/file-000.parquet").to_pylist()
    assert rows[1]["tasks"] == ["place the cube in the bin"]
    assert rows[1]["stats/task_index/max"] == [1]


# ----------------------------------------------------------------------------------------------
# Committed fixtures
# ----------------------------------------------------------------------------------------------

CHECK_ID = r"^[A-Z][0-9]{3}$"


def test_manifest_matches_fixture_folders():
    gen = load_generate()
    manifest = json.loads((FIXTURES / "manifest.json").read_text())
    assert manifest == gen.manifest()
    names = [f["name"] for f in manifest["fixtures"]]
    assert len(names) == len(set(names))
    on_disk = sorted(p.name for p in (FIXTURES / "datasets").iterdir() if p.is_dir())
    assert sorted(names) == on_disk
    import re

    for f in manifest["fixtures"]:
        # the timestamp causes also carry the smallest tolerance_s that loads them (docs/video-timestamps.md);
        # camera_frames: the decoded frames per episode the camera content checks (Q011-Q014) need
        extra = {"tolerance_s"} if f["name"] in TIMING_CASES else set()
        assert set(f) - {"camera_frames"} == {"name", "layout", "defect", "expect", "deep_only"} | extra
        assert f["layout"] in ("v2.1", "v3.0")
        assert all(re.match(CHECK_ID, e) for e in f["expect"])
        assert (f["expect"] == []) == f["name"].startswith(("clean_", "mixpart_"))  # mixture parts: clean alone
        assert "\n" not in f["defect"]
    size = sum(p.stat().st_size for p in FIXTURES.rglob("*") if p.is_file())
    # the committed fixtures (synthetic, real-writer copies, mixture parts: about 75 datasets, one per defect class)
    # stay small enough to clone quickly
    assert size < 6 * 1024 * 1024


def test_mixture_files():
    lines = [x for x in (FIXTURES / "mixture.txt").read_text().splitlines() if x and not x.startswith("#")]
    assert lines == [
        "datasets/clean_v21",
        "datasets/clean_v30 episodes=0-1,3",
        "datasets/broken_undeclared_column",
        "datasets/broken_missing_task_label",
    ]
    for line in lines:
        assert (FIXTURES / line.split()[0] / "meta").is_dir()
    mix = json.loads((FIXTURES / "mixture.json").read_text())
    assert mix["dataset_mixture"]["datasets"][1] == {"$ref": "mixture_ref.json"}
    ref = json.loads((FIXTURES / "mixture_ref.json").read_text())
    assert ref == {"root": "datasets/clean_v30", "episodes": [0, 2]}
    assert (FIXTURES / ref["root"] / "meta/info.json").is_file()


def _ds(name: str) -> Path:
    return FIXTURES / "datasets" / name


def _info(name: str) -> dict:
    return json.loads((_ds(name) / "meta/info.json").read_text())


def _schema(name: str, rel: str) -> pa.Schema:
    return pq.read_schema(_ds(name) / rel)


V3F0 = "data/chunk-000/file-000.parquet"
V2E0 = "data/chunk-000/episode_000000.parquet"
V2E1 = "data/chunk-000/episode_000001.parquet"
FRONT = "observation.images.front"


def defect_present(name: str) -> bool:
    """Probe one committed fixture: its claimed defect is really on disk (clean ones look complete)."""
    d = _ds(name)
    if name == "clean_v21":
        return _info(name)["total_videos"] == 3 and len(list((d / "videos").rglob("*.mp4"))) == 3
    if name == "clean_v30":
        return (
            len(list((d / "videos").rglob("*.mp4"))) == 4
            and len(list((d / "data").rglob("*.parquet"))) == 2
            and _info(name)["features"]["observation.images.top"]["info"]["video.codec"] == "av1"
        )
    if name == "broken_undeclared_column":
        return "language_events" in _schema(name, V3F0).names and "language_events" not in _info(name)["features"]
    if name == "broken_missing_column":
        declared = "observation.state" in _info(name)["features"]
        return declared and "observation.state" not in _schema(name, V2E1).names
    if name == "broken_dtype_drift":
        return _schema(name, V3F0).field("observation.state").type == pa.list_(pa.float64(), 6)
    if name == "broken_cross_file_drift":
        return _schema(name, V2E1).field("action").type == pa.list_(pa.float64(), 6) and _schema(
            name, V2E0
        ).field("action").type == pa.list_(pa.float32(), 6)
    if name == "broken_scalar_as_list":
        return _schema(name, V3F0).field("timestamp").type == pa.list_(pa.float32(), 1)
    if name == "broken_variable_list":
        schema = _schema(name, V3F0)
        return (
            pa.types.is_list(schema.field("action").type)
            and b"huggingface" not in schema.metadata
            and b"pandas" in schema.metadata
            and pq.ParquetFile(d / V3F0).metadata.num_row_groups == 2  # row groups kept: no R001
        )
    if name == "broken_missing_task_label":
        return "pick up the red cube" in (d / "meta/episodes.jsonl").read_text() and "red" not in (
            d / "meta/tasks.jsonl"
        ).read_text()
    if name == "broken_task_index_range":
        return 7 in pq.read_table(d / V3F0)["task_index"].to_pylist()
    if name == "broken_tasks_parquet_form":
        schema = _schema(name, "meta/tasks.parquet")
        return schema.names == ["task_index", "task"] and b"pandas" not in (schema.metadata or {})
    if name == "broken_wrong_totals":
        info = _info(name)
        return (info["total_episodes"], info["total_frames"]) == (5, 50)
    if name == "broken_timestamps":
        ts = pq.read_table(d / V2E0)["timestamp"].to_numpy()
        return np.abs(ts - np.arange(len(ts)) / 10).min() > 2e-3
    if name == "broken_lfs_video":
        head = (d / f"videos/{FRONT}/chunk-000/file-001.mp4").read_bytes()
        return head.startswith(b"version https://git-lfs.github.com/spec/v1\noid sha256:")
    if name == "broken_no_footer":
        return (d / V2E1).read_bytes()[-4:] != b"PAR1"
    if name == "broken_orphan_file":
        return (d / "data/chunk-000/file-000 (1).parquet").is_file()
    if name == "broken_collapsed_row_group":
        return pq.ParquetFile(d / V3F0).metadata.num_row_groups == 1
    if name == "broken_info_json":
        try:
            _info(name)
        except json.JSONDecodeError:
            return True
        return False
    if name == "broken_video_path":
        return (
            _info(name)["video_path"].startswith("videos/{video_key}/")
            and (d / f"videos/chunk-000/{FRONT}/episode_000000.mp4").is_file()
        )
    if name == "broken_names_nested":
        return isinstance(_info(name)["features"]["observation.state"]["names"][0], list)
    if name == "broken_codec_mismatch":
        return _info(name)["features"][FRONT]["info"]["video.codec"] == "av1"
    lfs = b"version https://git-lfs.github.com/spec/v1\noid sha256:"
    if name == "broken_lfs_clone":
        binaries = [p for p in d.rglob("*") if p.suffix in (".parquet", ".mp4")]
        return len(binaries) == 10 and all(p.read_bytes().startswith(lfs) for p in binaries) and "features" in _info(name)
    if name == "broken_episodes_lfs":
        return (d / "meta/episodes.jsonl").read_bytes().startswith(lfs) and (d / V2E0).read_bytes()[:4] == b"PAR1"
    if name == "broken_error_pages":
        return (d / "meta/episodes/chunk-000/file-000.parquet").read_bytes().startswith(b"<!DOCTYPE html>") and all(
            p.read_bytes().startswith(b'{"error"') for p in (d / "videos").rglob("*.mp4"))
    if name == "broken_truncated_episodes":
        return (d / "meta/episodes/chunk-000/file-001.parquet").read_bytes()[-4:] != b"PAR1"
    if name == "broken_no_segment_times":
        names = _schema(name, "meta/episodes/chunk-000/file-000.parquet").names
        return f"videos/{FRONT}/chunk_index" in names and not [n for n in names if n.endswith("_timestamp")]
    if name == "broken_videos_elsewhere":
        moved = sorted(p.name for p in (d / "video").rglob("*.mp4"))
        return moved == ["file-000.mp4", "file-001.mp4"] and not list((d / "videos").rglob("*.mp4"))
    if name == "broken_data_elsewhere":
        return (d / "data/chunk-001/file-002.parquet").is_file() and not (d / "data/chunk-000/file-002.parquet").exists()
    if name == "broken_stats_std_zeroed":
        rows = pq.read_table(d / "meta/episodes/chunk-000/file-000.parquet").to_pylist()
        ep1 = next(r for r in rows if r["episode_index"] == 1)
        return ep1["stats/action/std"][2] == 0 and ep1["stats/action/max"][2] > ep1["stats/action/min"][2]
    if name == "broken_stats_stale":
        stats = json.loads((d / "meta/stats.json").read_text())
        return stats["action"]["count"][0] > _info(name)["total_frames"]
    if name == "broken_stats_count":
        lengths = {e["episode_index"]: e["length"]
                   for e in map(json.loads, (d / "meta/episodes.jsonl").read_text().splitlines())}
        stats = {e["episode_index"]: e["stats"]
                 for e in map(json.loads, (d / "meta/episodes_stats.jsonl").read_text().splitlines())}
        return stats[1]["observation.state"]["count"] == [lengths[1] + 5]
    if name == "broken_stats_shape":
        stats = json.loads((d / "meta/stats.json").read_text())
        return len(stats["action"]["mean"]) == 5 and _info(name)["features"]["action"]["shape"] == [6]
    if name == "broken_segment_convention":
        rows = [r for f in sorted((d / "meta/episodes").glob("*/*.parquet")) for r in pq.read_table(f).to_pylist()]
        k = f"videos/{FRONT}"
        return all(abs(r[f"{k}/to_timestamp"] - r[f"{k}/from_timestamp"] - (r["length"] - 1) / 30) < 1e-9 for r in rows)
    if name == "broken_splits":
        return _info(name)["splits"] == {"train": "0:1", "test": "2:4"} and _info(name)["total_episodes"] == 2
    if name == "broken_episode_content":
        return _content_present(d)
    if name == "broken_camera_content":
        front = sorted((d / "meta").glob("episodes_stats.jsonl"))[0].read_text().splitlines()
        means = [json.loads(x)["stats"][FRONT]["mean"] for x in front]
        return np.mean(means[1]) < 0.01 and np.mean(means[3]) > 0.97 and 0.1 < np.mean(means[0]) < 0.9
    if name == "broken_converter_2401":
        rows = pq.read_table(d / "meta/episodes/chunk-000/file-000.parquet").to_pylist()
        files = {r["episode_index"]: r["data/file_index"] for r in rows}
        return files == {0: 0, 1: 0, 2: 0, 3: 1, 4: 1} and (d / "data/chunk-000/file-002.parquet").is_file()
    if name == "broken_data_symlink_out":
        real = FIXTURES / "real" / "h264-pandas3" / "data"
        return (d / "data").is_symlink() and (d / "data").resolve() == real.resolve() and (d / "meta").is_dir() \
            and not (d / "meta").is_symlink()
    if name.startswith("mixpart_"):
        return _mixpart_present(name)
    if name in TIMING_CASES:
        return _timing_present(name)
    if name in CORPUS_PROBES:
        return CORPUS_PROBES[name](d)
    raise AssertionError(f"no probe for fixture {name}")


#: the timestamp-cause fixtures (lerobot_tools.testing.synth.timing.CASES)
TIMING_CASES = {"broken_frame_dropped", "broken_frame_duplicated", "broken_frame_rate_variable",
                "broken_bframes_fragmented", "broken_edit_list", "broken_segment_drift", "broken_wallclock_timestamps"}


def _pts(path: Path) -> list[int]:
    """The video packets' presentation timestamps as FFmpeg demuxes them (PyAV), sorted."""
    import av

    with av.open(str(path)) as c:
        return sorted(p.pts for p in c.demux(c.streams.video[0]) if p.size)


def _timing_present(name: str) -> bool:
    """Each timestamp cause, seen through FFmpeg's demuxer (not lrtool's box model) or the metadata."""
    d = _ds(name)
    ep0 = d / "videos/chunk-000" / FRONT / "episode_000000.mp4"
    if name == "broken_frame_dropped":
        return _pts(ep0) == [k * 1024 for k in range(20) if k != 7]
    if name == "broken_frame_duplicated":
        pts = _pts(ep0)
        return len(pts) == 21 and pts[8] - pts[7] == 1
    if name == "broken_frame_rate_variable":
        return set(np.diff(_pts(ep0)).tolist()) == {1280, 768}
    if name == "broken_bframes_fragmented":
        return _pts(ep0)[0] == 2048 and b"moof" in ep0.read_bytes()
    if name == "broken_edit_list":
        return _pts(ep0)[0] == 2560 and b"elst" in ep0.read_bytes()
    if name == "broken_segment_drift":
        rows = pq.read_table(d / "meta/episodes/chunk-000/file-000.parquet").to_pylist()
        starts = [r[f"videos/{FRONT}/from_timestamp"] for r in rows]
        exact = np.concatenate(([0], np.cumsum([r["length"] for r in rows])[:-1])) / 30
        return starts[0] == 0 and all(0 < e - a < 0.0021 for a, e in zip(starts[1:], exact[1:]))
    if name == "broken_wallclock_timestamps":
        t = pq.read_table(sorted((d / "data").rglob("*.parquet"))[0]).to_pylist()
        steps = [b["timestamp"] - a["timestamp"] for a, b in zip(t, t[1:]) if a["episode_index"] == b["episode_index"]]
        return all(0.06 - 1e-6 <= x <= 0.25 + 1e-6 for x in steps) and abs(t[10]["timestamp"] - 1.0) > 0.1
    raise AssertionError(f"no probe for fixture {name}")


def _only_meta(d: Path, names: set[str]) -> bool:
    return {p.name for p in d.iterdir()} == {"meta"} and {p.name for p in (d / "meta").iterdir()} == names


def _stats(d: Path) -> dict:
    return json.loads((d / "meta/stats.json").read_text())


#: probes of the fixtures of fixtures/corpus_classes.py (the classes of defect real published datasets taught)
CORPUS_PROBES = {
    "broken_no_data_v30": lambda d: not (d / "data").exists() and any((d / "meta/episodes").rglob("*.parquet")),
    "broken_info_only_v30": lambda d: _only_meta(d, {"info.json"})
    and json.loads((d / "meta/info.json").read_text())["total_episodes"] == 0,
    "broken_metadata_only_v21": lambda d: _only_meta(d, {"info.json", "episodes.jsonl", "episodes_stats.jsonl",
                                                         "tasks.jsonl", "stats.json"}),
    "broken_info_only_v21": lambda d: _only_meta(d, {"info.json"})
    and FRONT in json.loads((d / "meta/info.json").read_text())["features"],
    "broken_template_placeholder_v21": lambda d: "{episode_idx" in json.loads((d / "meta/info.json").read_text())[
        "data_path"] and pq.read_schema(d / V2E0).field("action").type == pa.list_(pa.float64()),
    "broken_no_episodes_stats_v21": lambda d: not (d / "meta/episodes_stats.jsonl").exists()
    and (d / "meta/stats.json").exists(),
    "broken_loader_columns_v21": lambda d: not {"index", "task_index"} & set(pq.read_schema(d / V2E0).names)
    and not {"index", "task_index"} & set(json.loads((d / "meta/info.json").read_text())["features"]),
    "broken_foreign_files_v21": lambda d: (d / "data/annotations/labels.parquet").is_file()
    and (d / "data/chunk-000/notes.txt").is_file(),
    "broken_camera_stats_flat": lambda d: len(_stats(d)[FRONT]["mean"]) == 3
    and not isinstance(_stats(d)[FRONT]["mean"][0], list),
    "broken_constant_float32_noise": lambda d: _stats(d)["action"]["std"][2] == 1.3e-05
    and _stats(d)["action"]["min"][2] == _stats(d)["action"]["max"][2],
    "broken_stats_count_missing_v30": lambda d: all("count" not in v for v in _stats(d).values()),
}


def _content_present(d: Path) -> bool:
    """broken_episode_content: the planted values are in the data (lerobot_tools.testing.planted)."""
    t = pq.read_table(d / V3F0, columns=["episode_index", "action", "observation.state"])
    ep = np.asarray(t["episode_index"].to_pylist())
    act = np.asarray(t["action"].to_pylist(), dtype=np.float64)
    state = np.asarray(t["observation.state"].to_pylist(), dtype=np.float64)
    frozen = np.ptp(act[ep == 3], axis=0).max() == 0 and np.ptp(state[ep == 3], axis=0).max() == 0
    nan = np.isnan(act[ep == 4]).sum() == 3
    copy = np.array_equal(act[ep == 9], act[ep == 0])
    return bool(frozen and nan and copy)


def _mixpart_present(name: str) -> bool:
    """Mixture parts (clean alone): each differs from mixpart_base in the one way its name says."""
    d, info = _ds(name), _info(name)
    data = sorted((d / "data").rglob("*.parquet"))
    schema = pq.read_schema(data[0])
    if name == "mixpart_base":
        return (info["codebase_version"], info["fps"], info["features"]["action"]["shape"]) == ("v2.1", 10, [6]) \
            and not (d / "videos").exists()
    if name == "mixpart_action8":
        return info["features"]["action"]["shape"] == [8] and schema.field("action").type == pa.list_(pa.float32(), 8)
    if name == "mixpart_fps15":
        ts = pq.read_table(data[0])["timestamp"].to_numpy()
        return info["fps"] == 15 and np.allclose(ts, np.arange(len(ts)) / 15)
    if name == "mixpart_v30":
        return info["codebase_version"] == "v3.0"
    if name == "mixpart_task_case":
        return "Pick up the cube" in (d / "meta/tasks.jsonl").read_text()
    if name == "mixpart_cam32":
        return info["features"][FRONT]["shape"] == [32, 32, 3] and len(list((d / "videos").rglob("*.mp4"))) == 2
    if name == "mixpart_state_float64":
        return (info["features"]["observation.state"]["dtype"] == "float64"
                and schema.field("observation.state").type == pa.list_(pa.float64(), 6))
    if name.startswith("mixpart_card_"):
        card = (d / "README.md").read_text()
        want = {"nc": "license: cc-by-nc-4.0", "mit": "license: mit", "none": None}[name.rsplit("_", 1)[1]]
        return card.startswith("---") and (want in card if want else "license" not in card)
    if name == "mixpart_dup_b":
        return info["total_episodes"] == 3 and info["fps"] == 10
    if name == "mixpart_no_action_stats":
        stats = json.loads((d / "meta/stats.json").read_text())
        lines = [json.loads(x)["stats"] for x in (d / "meta/episodes_stats.jsonl").read_text().splitlines()]
        return "action" not in stats and "observation.state" in stats and all("action" not in x for x in lines)
    if name == "mixpart_wrist":
        wrist = "observation.images.wrist"
        return (info["features"][wrist]["dtype"] == "video" and FRONT in info["features"]
                and len(list((d / "videos/chunk-000" / wrist).glob("*.mp4"))) == 2)
    raise AssertionError(f"no probe for fixture {name}")


MANIFEST_NAMES = [e["name"] for e in json.loads((FIXTURES / "manifest.json").read_text())["fixtures"]]


@pytest.mark.parametrize("name", MANIFEST_NAMES)
def test_fixture_carries_its_defect(name):
    assert defect_present(name), f"fixture {name} does not show its defect"


def _content_files(root: Path) -> list[str]:
    return sorted(p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file())


@needs_ffmpeg
@pytest.mark.parametrize("name", ["broken_variable_list", "broken_cross_file_drift", "broken_task_index_range"])
def test_regenerated_fixture_equals_committed(tmp_path: Path, name: str):
    gen = load_generate()
    gen.generate(tmp_path, [name])
    new, old = tmp_path / "datasets" / name, FIXTURES / "datasets" / name
    assert _content_files(new) == _content_files(old)
    for rel in _content_files(old):
        if rel.endswith(".parquet"):
            assert pq.read_table(new / rel).equals(pq.read_table(old / rel)), rel
            assert pq.read_schema(new / rel).metadata == pq.read_schema(old / rel).metadata, rel
        elif rel.endswith((".json", ".jsonl")):
            assert (new / rel).read_text() == (old / rel).read_text(), rel
    assert json.loads((tmp_path / "manifest.json").read_text()) == gen.manifest()
