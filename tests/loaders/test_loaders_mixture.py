"""MixtureDataset and the samplers over a mixture, on real files.

Two synthetic datasets name their camera differently (mapped to one role), use different layouts and
fps; every decoded frame carries its (episode, frame) identity (lerobot_tools.testing.synth), so each test
proves the right frame of the right dataset came back.
"""

from __future__ import annotations

import json
import pickle
import shutil
from collections import Counter
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("torchcodec")
pytest.importorskip("datasets")

from lerobot_tools.errors import DatasetError  # noqa: E402
from lerobot_tools.loaders import (  # noqa: E402
    EpisodeAwareSampler,
    EpisodeShuffleStream,
    MixtureDataset,
    MixtureMember,
    collate_frames,
)
from lerobot_tools.testing.synth import SynthSpec, build_dataset, read_frame_id  # noqa: E402

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
needs_ffmpeg = pytest.mark.skipif(shutil.which("ffmpeg") is None, reason="system ffmpeg not installed")

A_LENGTHS = (5, 7, 6)  # v3.0, 10 fps, camera "observation.images.front"
B_LENGTHS = (4, 8)  # v2.1, 20 fps, camera "observation.images.wrist"


@pytest.fixture(scope="module")
def parts(tmp_path_factory):
    if shutil.which("ffmpeg") is None:
        pytest.skip("system ffmpeg not installed")
    base = tmp_path_factory.mktemp("mix")
    a = build_dataset(base / "a", SynthSpec(version="v3.0", episode_lengths=A_LENGTHS, episodes_per_file=2, fps=10,
                                            video_codec="h264"))
    b = build_dataset(base / "b", SynthSpec(version="v2.1", episode_lengths=B_LENGTHS, fps=20, video_codec="h264",
                                            video_keys=("observation.images.wrist",), seed=7))
    mix = base / "mix.json"
    mix.write_text(json.dumps({"dataset_mixture": {
        "datasets": [{"root": "a", "data_features_name_mapping": {"camera0": "observation.images.front",
                                                                  "actions": "action"}},
                     {"root": "b", "data_features_name_mapping": {"camera0": "observation.images.wrist",
                                                                  "actions": "action"}}],
        "weights": [1.0, 3.0]}}))
    return a, b, mix, base / "cache"


def rows(root: Path, column: str) -> dict[tuple[int, int], object]:
    out = {}
    for f in sorted((root / "data").rglob("*.parquet")):
        t = pq.read_table(f, columns=["episode_index", "frame_index", column])
        for e, fr, v in zip(*(t.column(c).to_pylist() for c in ("episode_index", "frame_index", column))):
            out[(e, fr)] = v
    return out


def ids(frame: torch.Tensor) -> tuple[int, int]:
    a = frame.numpy()
    return read_frame_id(a if a.dtype == np.uint8 else a * 255.0)


# ------------------------------------------------------------------ samples
@needs_ffmpeg
def test_every_sample_comes_from_its_dataset_under_the_common_names(parts):
    a, b, mix, cache = parts
    m = MixtureDataset(mix, cache_dir=cache, frames_dtype="uint8")
    assert len(m) == sum(A_LENGTHS) + sum(B_LENGTHS) and m.open_members == 0
    assert m.names[:2] == ["camera0", "actions"] and "observation.images.front" not in m.names
    np.testing.assert_allclose(m.weights, [0.25, 0.75])
    actions = [rows(a, "action"), rows(b, "action")]
    samples = m.__getitems__(list(range(len(m))))
    d_all, e_all, f_all = m.locate(np.arange(len(m)))
    for i, s in enumerate(samples):
        d, ep, fr = int(s["dataset_index"]), int(s["episode_index"]), int(s["frame_index"])
        assert (d, ep, fr) == (d_all[i], e_all[i], f_all[i])
        assert set(s) == set(m.names) | {"dataset_index"}
        assert ids(s["camera0"]) == (ep, fr)
        np.testing.assert_array_equal(s["actions"].numpy(), np.asarray(actions[d][(ep, fr)], dtype=np.float32))
    assert [int(x) for x in d_all] == [0] * sum(A_LENGTHS) + [1] * sum(B_LENGTHS)
    assert m.open_members == 2
    batch = collate_frames(samples[:8] + samples[-8:])
    assert batch["camera0"].shape == (16, 3, 64, 64) and batch["dataset_index"].tolist() == [0] * 8 + [1] * 8
    spec = m.item_spec()
    assert spec["camera0"] == ("uint8", (3, 64, 64)) and spec["dataset_index"] == ("int64", ())


@needs_ffmpeg
def test_members_open_lazily_per_process_and_are_not_pickled(parts):
    a, b, mix, cache = parts
    m = MixtureDataset(mix, cache_dir=cache)
    assert m.cold_datasets == 0  # the first test built the caches
    m[len(m) - 1]
    assert m.open_members == 1 and 1 in m._open
    clone = pickle.loads(pickle.dumps(m))
    assert clone.open_members == 0
    assert ids(clone[0]["camera0"]) == (0, 0)


@needs_ffmpeg
def test_windows_in_seconds_resampled_to_the_nearest_frame(parts):
    a, b, mix, cache = parts
    with pytest.raises(ValueError, match="not a multiple of 1/fps"):
        MixtureDataset(mix, cache_dir=cache, delta_timestamps={"actions": [0.0, 0.05]}, decode_video=False)
    m = MixtureDataset(mix, cache_dir=cache, delta_timestamps={"actions": [0.0, 0.05]}, decode_video=False,
                       action_freq=20)
    acts = [rows(a, "action"), rows(b, "action")]
    lengths = [dict(enumerate(A_LENGTHS)), dict(enumerate(B_LENGTHS))]
    for i in range(len(m)):
        s = m[i]
        d, ep, fr = int(s["dataset_index"]), int(s["episode_index"]), int(s["frame_index"])
        step = round(0.05 * (10, 20)[d])  # 0 frames at 10 fps (0.5 rounds to even), 1 at 20 fps
        nxt = min(fr + step, lengths[d][ep] - 1)
        assert s["actions"].shape == (2, 6)
        np.testing.assert_array_equal(s["actions"][1].numpy(), np.asarray(acts[d][(ep, nxt)], dtype=np.float32))
        assert s["actions_is_pad"].tolist() == [False, fr + step >= lengths[d][ep]]


def test_dtype_promoted_and_unshared_features_dropped(tmp_path):
    ds = FIXTURES / "datasets"
    m = MixtureDataset([ds / "mixpart_base", ds / "mixpart_state_float64"], cache_dir=tmp_path)
    assert m.dtypes["observation.state"] == "float64"
    for i in (0, len(m) - 1):
        assert m[i]["observation.state"].dtype == torch.float64
        assert m[i]["action"].dtype == torch.float32
    m = MixtureDataset([MixtureMember(ds / "clean_v21", episodes=[0]), ds / "mixpart_base"], cache_dir=tmp_path)
    assert "observation.images.front" not in m.names and "observation.images.front" in m.schema.dropped
    assert "observation.images.front" not in m[0]
    # a dropped camera is not even decoded, and only the common columns are read
    assert m.member(0).video_keys == [] and m.decoder_stats.frames == 0
    assert set(m.member(0)._out_cols) == set(m.names) - {"task"}


@pytest.mark.parametrize("name,match", [("action_shape.txt", "shape of 'action'"),
                                        ("camera_resolution.txt", "shape of 'observation.images.front'"),
                                        ("role_missing.json", "provides no 'camera0'")])
def test_mixtures_validate_calls_collate_errors_are_refused(tmp_path, name, match):
    with pytest.raises(DatasetError, match=match):
        MixtureDataset(FIXTURES / "mixtures" / name, cache_dir=tmp_path)


def test_bad_weights_and_unresolvable_entries_are_refused(tmp_path):
    ds = FIXTURES / "datasets"
    with pytest.raises(ValueError, match="weight 0"):
        MixtureDataset([ds / "mixpart_base", ds / "mixpart_fps15"], weights=[0, 0], cache_dir=tmp_path)
    with pytest.raises(ValueError, match="2 finite numbers"):
        MixtureDataset([ds / "mixpart_base", ds / "mixpart_fps15"], weights=[1], cache_dir=tmp_path)
    mix = tmp_path / "m.txt"
    mix.write_text(f"{ds / 'mixpart_base'}\n{tmp_path / 'nowhere'}\n")
    with pytest.raises(DatasetError, match="does not exist"):
        MixtureDataset(mix, cache_dir=tmp_path)
    m = MixtureDataset(FIXTURES / "mixtures" / "weights.txt", cache_dir=tmp_path, decode_video=False)
    assert m.weights.tolist() == [1.0, 0.0] and m.explicit_weights


# ------------------------------------------------------------------ weighted sampler
@pytest.fixture(scope="module")
def small(tmp_path_factory):
    """A 3-dataset mixture without video (order tests only read indices)."""
    ds = FIXTURES / "datasets"
    return MixtureDataset([ds / "mixpart_base", ds / "mixpart_v30", ds / "mixpart_fps15"], decode_video=False,
                          cache_dir=tmp_path_factory.mktemp("c"))


def test_unweighted_epoch_is_every_frame_once(small):
    s = EpisodeAwareSampler(small, seed=1)
    out = list(s)
    assert sorted(out) == list(range(len(small))) and s.dataset_counts().tolist() == small.dataset_lengths.tolist()


def test_weighted_epoch_draws_each_dataset_exactly_its_share(small):
    s = EpisodeAwareSampler(small, seed=2, weights=[1, 2, 5], num_samples=800)
    assert s.dataset_counts().tolist() == [100, 200, 500] and len(s) == 800
    out = np.asarray(list(s))
    d, eps, frames = small.locate(out)
    assert np.bincount(d, minlength=3).tolist() == [100, 200, 500]
    # dataset 2 (11 frames) drawn 500 times: every frame 45 or 46 times, complete passes before repeats
    c = Counter(out[d == 2].tolist())
    assert set(c) == set(range(small.dataset_offsets[2], small.dataset_offsets[3])) and max(c.values()) - min(c.values()) <= 1
    # any stretch of the order holds the datasets in proportion (no block of one dataset)
    for chunk in np.array_split(d, 8):
        assert abs(np.mean(chunk == 2) - 5 / 8) < 0.2
    # a dataset drawn fewer times than it has frames gives distinct frames
    s2 = EpisodeAwareSampler(small, seed=2, weights=[1, 1, 1], num_samples=9)
    o2 = np.asarray(list(s2))
    assert len(set(o2.tolist())) == 9


def test_weighted_order_is_pure_deterministic_and_resumes_exactly(small):
    kw = dict(weights=[1, 2, 5], num_samples=300)
    a = list(EpisodeAwareSampler(small, seed=3, **kw))
    assert a == list(EpisodeAwareSampler(small, seed=3, **kw))
    assert a != list(EpisodeAwareSampler(small, seed=4, **kw))
    s = EpisodeAwareSampler(small, seed=3, **kw)
    s.set_epoch(1)
    e1 = list(s)
    assert e1 != a and Counter(small.locate(e1)[0].tolist()) == Counter(small.locate(a)[0].tolist())
    it = iter(s)
    head = [next(it) for _ in range(77)]
    state = s.state_dict()
    fresh = EpisodeAwareSampler(small, seed=0, **kw)
    fresh.load_state_dict(state)
    assert head + list(fresh) == e1
    with pytest.raises(ValueError, match="different dataset"):
        EpisodeAwareSampler(small, seed=3, weights=[1, 1, 1], num_samples=300).load_state_dict(state)


@pytest.mark.parametrize("world", [2, 3])
def test_weighted_ranks_are_disjoint_shares_of_one_order(small, world):
    kw = dict(seed=5, weights=[3, 1, 1], num_samples=257)
    single = list(EpisodeAwareSampler(small, **kw))
    shards = [list(EpisodeAwareSampler(small, rank=r, world_size=world, **kw)) for r in range(world)]
    assert [shards[j % world][j // world] for j in range(len(single))] == single
    assert sum(map(len, shards)) == len(single)


def test_stream_over_a_weighted_mixture(small):
    st = EpisodeShuffleStream(small, seed=1, pool_size=2, weights=[1, 2, 5], num_samples=400)
    plan = list(st.plan())
    d, eps, frames = small.locate(plan)
    assert np.bincount(d, minlength=3).tolist() == [50, 100, 250] and len(st) == 400
    # frames of one episode come in order
    for key in set(zip(d.tolist(), eps.tolist())):
        mine = frames[(d == key[0]) & (eps == key[1])]
        runs = np.split(mine, np.flatnonzero(np.diff(mine) != 1) + 1)
        assert all((r == np.arange(r[0], r[0] + len(r))).all() for r in runs)
    ranks = [list(EpisodeShuffleStream(small, seed=1, weights=[1, 2, 5], num_samples=400, rank=r,
                                       world_size=3).plan()) for r in range(3)]
    assert sorted(sum(ranks, [])) == sorted(plan) and max(map(len, ranks)) - min(map(len, ranks)) <= 1
    unweighted = list(EpisodeShuffleStream(small, seed=1).plan())
    assert sorted(unweighted) == list(range(len(small)))


@needs_ffmpeg
def test_dataloader_with_workers_over_the_mixture(parts):
    a, b, mix, cache = parts
    m = MixtureDataset(mix, cache_dir=cache, frames_dtype="uint8")
    sampler = EpisodeAwareSampler(m, seed=0, num_samples=48)
    want = list(sampler)
    loader = torch.utils.data.DataLoader(m, batch_size=8, sampler=sampler, num_workers=2, collate_fn=collate_frames)
    got = []
    for batch in loader:
        for k in range(len(batch["dataset_index"])):
            ep, fr = int(batch["episode_index"][k]), int(batch["frame_index"][k])
            assert ids(batch["camera0"][k]) == (ep, fr)
            got.append((int(batch["dataset_index"][k]), ep, fr))
    d, e, f = m.locate(want)
    assert got == list(zip(d.tolist(), e.tolist(), f.tolist()))
    assert Counter(d.tolist()) == {0: 12, 1: 36}
    assert m.open_members == 0  # the workers opened the datasets, not this process
