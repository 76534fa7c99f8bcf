"""FrameDataset on real files: rows aligned to episodes, windows, video frames by time, tasks, decoders.

Video frames are synthetic (lerobot_tools.testing.synth): every decoded frame carries its (episode, frame) identity,
read back with synth.read_frame_id, so each test proves the RIGHT frame was decoded, including episodes
that start in the middle of a v3.0 mp4.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("torchcodec")
pytest.importorskip("datasets")

from lerobot_tools.errors import DatasetError  # noqa: E402
from lerobot_tools.loaders import (  # noqa: E402
    EpisodeAwareSampler,
    FrameDataset,
    FrameTimestampError,
    LoaderWarning,
    collate_frames,
)
from lerobot_tools.testing.synth import SynthSpec, build_dataset, encode_video, frame_pixels, read_frame_id  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "fixtures" / "datasets"
needs_ffmpeg = pytest.mark.skipif(shutil.which("ffmpeg") is None, reason="system ffmpeg not installed")

V30_LENGTHS = (7, 5, 9, 6, 8)  # files hold episodes [0, 1], [2, 3], [4]: episodes 1 and 3 start mid-file


def frame_id(t: torch.Tensor) -> tuple[int, int]:
    """(episode, frame) carried by a decoded (C, H, W) frame, float in [0, 1] or uint8."""
    a = t.numpy()
    return read_frame_id(a * 255.0 if a.dtype != np.uint8 else a)


def copy_fixture(name: str, dst: Path) -> Path:
    out = dst / name
    shutil.copytree(FIXTURES / name, out)
    return out


@pytest.fixture(scope="module")
def v30(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("v30") / "ds"
    build_dataset(root, SynthSpec(version="v3.0", episode_lengths=V30_LENGTHS, episodes_per_file=2, fps=10,
                                  video_codec="h264"))
    return root


@pytest.fixture(scope="module")
def cache(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("hf-cache")


def direct_rows(root: Path, column: str) -> dict[tuple[int, int], object]:
    """(episode, frame) -> value of ``column``, read straight from every data parquet with pyarrow."""
    out = {}
    for f in sorted((root / "data").rglob("*.parquet")):
        t = pq.read_table(f, columns=["episode_index", "frame_index", column])
        for e, fr, v in zip(*(t.column(c).to_pylist() for c in ("episode_index", "frame_index", column))):
            out[(e, fr)] = v
    return out


# ------------------------------------------------------------------ rows and frames
@needs_ffmpeg
def test_v30_every_frame_is_the_right_one_including_mid_file_episodes(v30, cache):
    ds = FrameDataset(v30, cache_dir=cache)
    assert len(ds) == sum(V30_LENGTHS)
    assert ds.episodes == [0, 1, 2, 3, 4]
    samples = ds.__getitems__(list(range(len(ds))))
    actions = direct_rows(v30, "action")
    for i, s in enumerate(samples):
        ep, fr = int(s["episode_index"]), int(s["frame_index"])
        assert (ep, fr) == tuple(int(x[0]) for x in ds.locate([i]))
        assert frame_id(s["observation.images.front"]) == (ep, fr)
        assert s["action"].dtype == torch.float32 and s["action"].shape == (6,)
        np.testing.assert_array_equal(s["action"].numpy(), np.asarray(actions[(ep, fr)], dtype=np.float32))
        assert s["timestamp"].shape == () and s["timestamp"].dtype == torch.float32
        assert s["observation.images.front"].shape == (3, 64, 64)
        assert s["observation.images.front"].dtype == torch.float32
        assert 0.0 <= float(s["observation.images.front"].min()) and float(s["observation.images.front"].max()) <= 1.0
    # the middle of file-000 (episode 1) and of file-001 (episode 3), one at a time through __getitem__
    assert frame_id(ds[7]["observation.images.front"]) == (1, 0)
    assert frame_id(ds[7 + 5 + 9 + 5]["observation.images.front"]) == (3, 5)
    assert frame_id(ds[-1]["observation.images.front"]) == (4, 7)
    assert ds.hf_dataset.cache_files and all(str(cache) in f["filename"] for f in ds.hf_dataset.cache_files)


@needs_ffmpeg
def test_v30_av1_fixture_two_cameras_uint8(tmp_path, cache):
    root = copy_fixture("clean_v30", tmp_path)
    ds = FrameDataset(root, cache_dir=cache, frames_dtype="uint8")
    for s in ds.__getitems__(list(range(len(ds)))):
        want = (int(s["episode_index"]), int(s["frame_index"]))
        for key in ("observation.images.front", "observation.images.top"):
            assert s[key].dtype == torch.uint8 and s[key].shape == (3, 64, 64)
            assert frame_id(s[key]) == want


@needs_ffmpeg
def test_v21_fixture_frames_and_tasks(tmp_path, cache):
    root = copy_fixture("clean_v21", tmp_path)
    ds = FrameDataset(root, cache_dir=cache)
    tasks = {json.loads(x)["task_index"]: json.loads(x)["task"] for x in (root / "meta/tasks.jsonl").read_text().splitlines()}
    assert len(ds) == 60
    for i in range(len(ds)):
        s = ds[i]
        assert frame_id(s["observation.images.front"]) == (int(s["episode_index"]), int(s["frame_index"]))
        assert s["task"] == tasks[int(s["task_index"])]


@needs_ffmpeg
def test_unsorted_sparse_episode_subset_aligns_exactly(v30, cache):
    ds = FrameDataset(v30, episodes=[4, 1, 3, 1], cache_dir=cache)
    assert ds.episodes == [1, 3, 4]
    assert ds.episode_lengths.tolist() == [5, 6, 8]
    assert len(ds) == 19
    eps, frames = ds.locate(np.arange(len(ds)))
    assert eps.tolist() == [1] * 5 + [3] * 6 + [4] * 8
    assert frames.tolist() == list(range(5)) + list(range(6)) + list(range(8))
    index = direct_rows(v30, "index")
    loader = torch.utils.data.DataLoader(ds, batch_size=4, collate_fn=collate_frames)
    seen = []
    for batch in loader:
        for k in range(len(batch["index"])):
            ep, fr = int(batch["episode_index"][k]), int(batch["frame_index"][k])
            assert frame_id(batch["observation.images.front"][k]) == (ep, fr)
            assert int(batch["index"][k]) == index[(ep, fr)]
            seen.append((ep, fr))
    assert seen == list(zip(eps.tolist(), frames.tolist()))


def test_unknown_episode_is_a_one_line_error(v30, cache):
    with pytest.raises(DatasetError, match=r"episode\(s\) 9 are not in the episode metadata"):
        FrameDataset(v30, episodes=[1, 9], cache_dir=cache, decode_video=False)


# ------------------------------------------------------------------ windows
@needs_ffmpeg
def test_delta_timestamps_windows_and_padding_at_episode_boundaries(v30, cache):
    deltas = {"action": [-0.2, -0.1, 0.0, 0.1], "observation.images.front": [-0.1, 0.0, 0.2]}
    ds = FrameDataset(v30, episodes=[1, 2], delta_timestamps=deltas, cache_dir=cache)
    assert ds.delta_indices["action"].tolist() == [-2, -1, 0, 1]
    actions = direct_rows(v30, "action")
    spec = ds.item_spec()
    assert spec["action"] == ("float32", (4, 6)) and spec["action_is_pad"] == ("bool", (4,))
    assert spec["observation.images.front"] == ("float32", (3, 3, 64, 64))
    for i in range(len(ds)):
        s = ds[i]
        ep, fr = int(s["episode_index"]), int(s["frame_index"])
        length = V30_LENGTHS[ep]
        assert s["action"].shape == (4, 6)
        for k, off in enumerate([-2, -1, 0, 1]):
            want = fr + off
            assert bool(s["action_is_pad"][k]) == (want < 0 or want >= length)
            clamped = min(max(want, 0), length - 1)
            np.testing.assert_array_equal(s["action"][k].numpy(), np.asarray(actions[(ep, clamped)], np.float32))
        assert s["observation.images.front"].shape == (3, 3, 64, 64)
        for k, off in enumerate([-1, 0, 2]):
            want = fr + off
            assert bool(s["observation.images.front_is_pad"][k]) == (want < 0 or want >= length)
            assert frame_id(s["observation.images.front"][k]) == (ep, min(max(want, 0), length - 1))
    batch = collate_frames(ds.__getitems__([0, 4, 5]))
    assert batch["action"].shape == (3, 4, 6) and batch["action_is_pad"].shape == (3, 4)
    assert batch["action_is_pad"].tolist() == [[True, True, False, False], [False, False, False, True],
                                               [True, True, False, False]]


def test_delta_timestamps_off_the_frame_grid_or_unknown_key(v30, cache):
    with pytest.raises(ValueError, match="not a multiple of 1/fps"):
        FrameDataset(v30, delta_timestamps={"action": [0.0, 0.05]}, cache_dir=cache, decode_video=False)
    with pytest.raises(DatasetError, match="neither a data column nor a video key"):
        FrameDataset(v30, delta_timestamps={"nope": [0.0]}, cache_dir=cache, decode_video=False)


# ------------------------------------------------------------------ tolerance and broken videos
def _rewrite_column(path: Path, name: str, fn) -> None:
    t = pq.read_table(path)
    i = t.column_names.index(name)
    t = t.set_column(i, t.schema.field(i), fn(t.column(name)))
    pq.write_table(t, path)


@needs_ffmpeg
def test_timestamps_off_by_3ms_raise_frame_timestamp_error_naming_the_file(tmp_path, cache):
    root = copy_fixture("clean_v21", tmp_path)
    f = root / "data/chunk-000/episode_000001.parquet"
    _rewrite_column(f, "timestamp", lambda c: pa.array(np.asarray(c.to_numpy()) + np.float32(0.003), pa.float32()))
    ds = FrameDataset(root, cache_dir=tmp_path / "c", tolerance_s=1e-4)
    assert frame_id(ds[0]["observation.images.front"]) == (0, 0)
    with pytest.raises(FrameTimestampError, match=r"episode_000001\.mp4: episode 1: query .* no frame within tolerance_s"):
        ds[20]
    loose = FrameDataset(root, cache_dir=tmp_path / "c", tolerance_s=0.01)
    assert frame_id(loose[20]["observation.images.front"]) == (1, 0)


@needs_ffmpeg
def test_video_shorter_than_metadata_is_reported_not_clamped(tmp_path, cache):
    root = copy_fixture("clean_v21", tmp_path)
    mp4 = root / "videos/chunk-000/observation.images.front/episode_000000.mp4"
    encode_video(mp4, np.stack([frame_pixels(0, k, 64, 64) for k in range(15)]), fps=10, codec="h264")
    ds = FrameDataset(root, cache_dir=cache)
    assert frame_id(ds[14]["observation.images.front"]) == (0, 14)
    with pytest.raises(FrameTimestampError, match="video holds frames 0-14.*shorter than its metadata"):
        ds[15]


def test_missing_video_file_is_a_one_line_error(tmp_path, cache):
    root = copy_fixture("clean_v30", tmp_path)
    (root / "videos/observation.images.top/chunk-000/file-001.mp4").unlink()
    with pytest.raises(DatasetError, match="file-001.mp4: video file is missing"):
        FrameDataset(root, cache_dir=cache)
    FrameDataset(root, cache_dir=cache, episodes=[0, 1])  # the missing file holds episodes 2-3 only


# ------------------------------------------------------------------ row alignment defects
def test_rows_not_grouped_by_episode_and_wrong_lengths_are_caught(tmp_path):
    root = tmp_path / "ds"
    build_dataset(root, SynthSpec(version="v3.0", episode_lengths=(4, 3, 5), episodes_per_file=3, video_codec=None,
                                  video_keys=()))
    f = root / "data/chunk-000/file-000.parquet"
    t = pq.read_table(f)
    order = [0, 1, 4, 5, 6, 2, 3, 7, 8, 9, 10, 11]  # episode 0's last two rows after episode 1
    pq.write_table(t.take(order), f)
    with pytest.raises(DatasetError, match="rows of episode 0 are not contiguous"):
        FrameDataset(root, cache_dir=tmp_path / "c1", decode_video=False)
    pq.write_table(t.slice(0, 11), f)  # episode 2 loses its last row
    with pytest.raises(DatasetError, match="episode 2 has 4 rows but the episode metadata says length 5"):
        FrameDataset(root, cache_dir=tmp_path / "c2", decode_video=False)


# ------------------------------------------------------------------ tasks
def test_missing_task_label_warns_once_and_samples_carry_no_task(tmp_path):
    root = copy_fixture("broken_missing_task_label", tmp_path)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        ds = FrameDataset(root, cache_dir=tmp_path / "c", decode_video=False)
        FrameDataset(root, cache_dir=tmp_path / "c", decode_video=False)  # second object: no second warning
        samples = ds.__getitems__(list(range(len(ds))))
        loader = torch.utils.data.DataLoader(ds, batch_size=16, num_workers=2, collate_fn=collate_frames)
        batches = list(loader)
    ours = [w for w in caught if issubclass(w.category, LoaderWarning)]
    assert len(ours) == 1
    assert "'pick up the red cube'" in str(ours[0].message) and "episode(s) 2" in str(ours[0].message)
    for s in samples:
        assert ("task" in s) == (int(s["episode_index"]) != 2)
        if "task" in s:
            assert s["task"] in ("pick up the cube", "place the cube in the bin")
    tasks = [t for b in batches for t in b.get("task", [None] * len(b["index"]))]
    eps = [int(e) for b in batches for e in b["episode_index"]]
    assert [t is None for t in tasks] == [e == 2 for e in eps]


def test_task_index_without_a_row_warns_once(tmp_path):
    root = copy_fixture("broken_task_index_range", tmp_path)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        ds = FrameDataset(root, cache_dir=tmp_path / "c", decode_video=False)
        samples = ds.__getitems__(list(range(len(ds))))
    ours = [str(w.message) for w in caught if issubclass(w.category, LoaderWarning)]
    assert len(ours) == 1 and "task_index 7" in ours[0]
    bad = [s for s in samples if int(s["task_index"]) == 7]
    assert len(bad) == 5 and all("task" not in s for s in bad)
    assert all("task" in s for s in samples if int(s["task_index"]) != 7)


def test_collate_frames_keeps_missing_keys_as_none():
    b = collate_frames([{"x": torch.tensor(1), "task": "a"}, {"x": torch.tensor(2)}])
    assert b["x"].tolist() == [1, 2] and b["task"] == ["a", None]


# ------------------------------------------------------------------ decoders
@needs_ffmpeg
def test_decoder_lru_is_bounded_and_frames_stay_right(v30, cache):
    ds = FrameDataset(v30, cache_dir=cache, decoder_cache_size=1, frames_dtype="uint8")
    order = [0, 20, 1, 30, 2, 21]  # alternate between file-000, file-001 and file-002
    for i in order:
        s = ds[i]
        assert frame_id(s["observation.images.front"]) == (int(s["episode_index"]), int(s["frame_index"]))
        assert len(ds._decoders) <= 1
    st = ds.decoder_stats
    assert st.opens == 6 and st.evictions == 5 and st.frames == 6


@needs_ffmpeg
def test_decoding_in_the_parent_then_in_forked_workers(v30, cache):
    ds = FrameDataset(v30, cache_dir=cache, frames_dtype="uint8")
    assert frame_id(ds[3]["observation.images.front"]) == (0, 3)  # the parent now holds open decoders
    sampler = EpisodeAwareSampler(ds, seed=5)
    loader = torch.utils.data.DataLoader(ds, batch_size=5, sampler=sampler, num_workers=2,
                                         collate_fn=collate_frames, multiprocessing_context="fork")
    got = []
    for b in loader:
        for k in range(len(b["index"])):
            pair = (int(b["episode_index"][k]), int(b["frame_index"][k]))
            assert frame_id(b["observation.images.front"][k]) == pair
            got.append(pair)
    assert len(got) == len(set(got)) == len(ds)
    assert ds.decoder_stats.opens == 1  # the workers used their own caches, not the parent's
    import multiprocessing as mp

    ctx = mp.get_context("fork")
    q = ctx.Queue()
    p = ctx.Process(target=_child_cache_size, args=(ds, q))
    p.start()
    assert q.get(timeout=30) == (0, 1)  # a forked child starts with an empty cache, then opens its own
    p.join(timeout=60)
    assert len(ds._decoders) == 1


def _child_cache_size(ds, q):
    try:
        torch.set_num_threads(1)  # as a DataLoader worker does: the parent's OpenMP pool does not survive fork
        before = len(ds._decoders)
        ds[30]
        q.put((before, ds.decoder_stats.opens))
    except Exception as exc:  # report instead of leaving the parent waiting
        q.put(repr(exc))


# ------------------------------------------------------------------ image features
def test_image_feature_decodes_png_bytes(tmp_path):
    import av  # noqa: F401  (PyAV decodes the PNG bytes)

    root = tmp_path / "ds"
    build_dataset(root, SynthSpec(version="v3.0", episode_lengths=(3, 4), episodes_per_file=2, video_codec=None,
                                  video_keys=()))
    f = root / "data/chunk-000/file-000.parquet"
    t = pq.read_table(f)
    pngs = []
    for ep, fr in zip(t.column("episode_index").to_pylist(), t.column("frame_index").to_pylist()):
        out = subprocess.run(["ffmpeg", "-loglevel", "error", "-f", "rawvideo", "-pix_fmt", "rgb24", "-s", "32x48",
                              "-i", "-", "-f", "image2pipe", "-c:v", "png", "-"],
                             input=frame_pixels(ep, fr, 48, 32).tobytes(), capture_output=True, check=True).stdout
        pngs.append({"bytes": out, "path": None})
    col = pa.array(pngs, type=pa.struct([("bytes", pa.binary()), ("path", pa.string())]))
    pq.write_table(t.append_column("observation.images.wrist", col).replace_schema_metadata(None), f)
    info = json.loads((root / "meta/info.json").read_text())
    info["features"]["observation.images.wrist"] = {"dtype": "image", "shape": [48, 32, 3],
                                                    "names": ["height", "width", "channels"]}
    (root / "meta/info.json").write_text(json.dumps(info))
    ds = FrameDataset(root, cache_dir=tmp_path / "c")
    assert ds.item_spec()["observation.images.wrist"] == ("float32", (3, 48, 32))
    for s in ds.__getitems__(list(range(len(ds)))):
        img = s["observation.images.wrist"]
        assert img.shape == (3, 48, 32) and img.dtype == torch.float32
        assert frame_id(img) == (int(s["episode_index"]), int(s["frame_index"]))


# ------------------------------------------------------------------ import hygiene
def test_importing_the_package_does_not_import_torch():
    code = ("import sys, lerobot_tools, lerobot_tools.loaders, lerobot_tools.smoke, lerobot_tools.commands.smoke; "
            "heavy = [m for m in ('torch', 'torchcodec', 'datasets') if m in sys.modules]; "
            "print(heavy); sys.exit(1 if heavy else 0)")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr


# ------------------------------------------------------------------ memory map and pickling
def _mapped_rss_kb(files: set[str]) -> int:
    total, current = 0, False
    with open("/proc/self/smaps") as fh:
        for line in fh:
            head = line.split()
            if head and "-" in head[0] and len(head) >= 5 and ":" not in head[0]:
                current = len(head) >= 6 and head[5] in files
            elif current and line.startswith("Rss:"):
                total += int(head[1])
    return total


@pytest.mark.skipif(not Path("/proc/self/smaps").exists(), reason="needs Linux /proc")
def test_arrow_cache_is_memory_mapped_and_mapped_pages_are_bounded(tmp_path):
    import os

    root = tmp_path / "ds"
    build_dataset(root, SynthSpec(version="v3.0", episode_lengths=[500] * 8, episodes_per_file=4, video_codec=None,
                                  video_keys=(), extra_vector_features={"observation.noise": 256}))
    ds = FrameDataset(root, cache_dir=tmp_path / "c", decode_video=False, max_mapped_mb=None)
    files = {os.path.realpath(f["filename"]) for f in ds.hf_dataset.cache_files}
    assert files and all(f.endswith(".arrow") for f in files)
    ds.__getitems__(list(range(0, len(ds), 7)))
    before = _mapped_rss_kb(files)
    assert before > 1024  # the rows read are file-backed pages of the cache, mapped into this process
    assert ds.release_mapped_pages() > 0
    assert _mapped_rss_kb(files) < before / 4
    s = ds[1234]  # still readable after the mappings were dropped
    assert (int(s["episode_index"]), int(s["frame_index"])) == (2, 234)
    bounded = FrameDataset(root, cache_dir=tmp_path / "c", decode_video=False, max_mapped_mb=1)
    for k in range(0, len(bounded), 64):
        bounded.__getitems__(list(range(k, min(k + 64, len(bounded)))))
        assert _mapped_rss_kb(files) < 8 * 1024


@needs_ffmpeg
def test_pickled_dataset_reads_the_same_frames(v30, cache):
    import pickle

    ds = FrameDataset(v30, cache_dir=cache, frames_dtype="uint8")
    ds[3]
    clone = pickle.loads(pickle.dumps(ds))  # what a spawned DataLoader worker receives
    assert len(clone._decoders) == 0
    for i in (0, 8, 20, 34):
        assert frame_id(clone[i]["observation.images.front"]) == frame_id(ds[i]["observation.images.front"])


def test_images_written_by_lerobot_decode_as_a_container_decodes_them(tmp_path):
    """fixtures/real/images-*: PNG bytes written by lerobot 0.4.4; the reused decoder context gives the same
    pixels as opening each image as its own container."""
    import io

    import av

    root = REPO / "fixtures" / "real" / "images-pandas3"
    if not root.is_dir():
        pytest.skip("fixtures/real/images-pandas3 not present")
    ds = FrameDataset(root, cache_dir=tmp_path / "c", frames_dtype="uint8")
    keys = [k for k, v in ds.features.items() if v.get("dtype") == "image"]
    assert keys
    samples = ds.__getitems__(list(range(min(len(ds), 24))))
    t = pq.read_table(sorted((root / "data").rglob("*.parquet"))[0], columns=keys)
    for k in keys:
        for i, s in enumerate(samples[: t.num_rows]):
            with av.open(io.BytesIO(t.column(k)[i].as_py()["bytes"])) as c:
                want = next(c.decode(video=0)).to_ndarray(format="rgb24")
            np.testing.assert_array_equal(s[k].permute(1, 2, 0).numpy(), want)


@pytest.mark.parametrize("codec,pix_fmt", [("png", "rgb24"), ("mjpeg", "yuvj420p")])
def test_image_decoder_matches_a_container_decode_and_keeps_no_state(codec, pix_fmt):
    import io

    import av

    from lerobot_tools.loaders.frames import _decode_image

    def encode(img):
        buf = io.BytesIO()
        with av.open(buf, "w", format="image2pipe") as c:
            s = c.add_stream(codec)
            s.width, s.height, s.pix_fmt = 32, 48, pix_fmt
            for p in s.encode(av.VideoFrame.from_ndarray(img, format="rgb24").reformat(format=pix_fmt)):
                c.mux(p)
            for p in s.encode(None):
                c.mux(p)
        return buf.getvalue()

    imgs = [frame_pixels(e, f, 48, 32) for e, f in [(0, 0), (3, 7), (1, 2)]]
    for img in imgs * 2:  # the same images again: nothing carried over from the previous decode
        data = encode(img)
        with av.open(io.BytesIO(data)) as c:
            want = next(c.decode(video=0)).to_ndarray(format="rgb24")
        got = _decode_image(data)
        np.testing.assert_array_equal(got, want)
        assert read_frame_id(got) == read_frame_id(img)
