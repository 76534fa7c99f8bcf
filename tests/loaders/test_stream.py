"""EpisodeShuffleStream: shuffled episodes, sequential frames, pool interleaving, DataLoader workers, resume."""

from __future__ import annotations

import shutil
from collections import Counter

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("datasets")

from torch.utils.data import DataLoader  # noqa: E402

from lerobot_tools.loaders import EpisodeShuffleStream, FrameDataset, collate_frames  # noqa: E402
from lerobot_tools.testing.synth import SynthSpec, build_dataset, read_frame_id  # noqa: E402

LENGTHS = (9, 4, 12, 7, 10, 3, 8, 11, 6, 5)  # 75 frames


@pytest.fixture(scope="module")
def ds(tmp_path_factory) -> FrameDataset:
    base = tmp_path_factory.mktemp("stream")
    root = base / "ds"
    build_dataset(root, SynthSpec(version="v3.0", episode_lengths=LENGTHS, episodes_per_file=4, video_codec=None,
                                  video_keys=()))
    return FrameDataset(root, cache_dir=base / "cache", decode_video=False)


def pairs(batches) -> list[tuple[int, int]]:
    return [(int(e), int(f)) for b in batches for e, f in zip(b["episode_index"], b["frame_index"])]


def test_plan_covers_every_frame_once_with_frames_in_order(ds):
    st = EpisodeShuffleStream(ds, seed=1, pool_size=3)
    plan = list(st.plan())
    assert sorted(plan) == list(range(len(ds)))
    eps, frames = ds.locate(plan)
    for e in set(eps.tolist()):
        assert frames[eps == e].tolist() == list(range(LENGTHS[e]))  # sequential within the episode
    # the pool interleaves episodes: the first 12 samples come from at least 3 episodes
    assert len(set(eps[:12].tolist())) >= 3
    # but never more than pool_size at a time: any window of 3 distinct episodes... count open episodes
    open_eps, max_open = set(), 0
    remaining = Counter(eps.tolist())
    for e in eps.tolist():
        open_eps.add(e)
        max_open = max(max_open, len(open_eps))
        remaining[e] -= 1
        if remaining[e] == 0:
            open_eps.discard(e)
    assert max_open <= 3


def test_episode_order_is_shuffled_per_epoch_and_a_pure_function_of_seed(ds):
    def first_frames(seed, epoch):
        st = EpisodeShuffleStream(ds, seed=seed, pool_size=1)
        st.set_epoch(epoch)
        eps, _ = ds.locate(list(st.plan()))
        return [int(e) for k, e in enumerate(eps) if k == 0 or e != eps[k - 1]]

    e0 = first_frames(0, 0)
    assert sorted(e0) == list(range(len(LENGTHS)))  # pool 1: one episode after another
    assert e0 == first_frames(0, 0)
    assert e0 != first_frames(0, 1)
    assert e0 != first_frames(1, 0)
    assert e0 != list(range(len(LENGTHS)))
    assert list(EpisodeShuffleStream(ds, shuffle=False).plan()) == list(range(len(ds)))


@pytest.mark.parametrize("world", [2, 3])
def test_ranks_are_disjoint_and_cover(ds, world):
    plans = [list(EpisodeShuffleStream(ds, seed=4, rank=r, world_size=world).plan()) for r in range(world)]
    flat = [i for p in plans for i in p]
    assert sorted(flat) == list(range(len(ds)))
    assert max(map(len, plans)) - min(map(len, plans)) <= 1
    assert [len(p) for p in plans] == [len(EpisodeShuffleStream(ds, seed=4, rank=r, world_size=world))
                                       for r in range(world)]
    eq = [list(EpisodeShuffleStream(ds, seed=4, rank=r, world_size=world, drop_last=True).plan()) for r in range(world)]
    assert [len(p) for p in eq] == [len(ds) // world] * world
    assert len({i for p in eq for i in p}) == len(ds) // world * world


@pytest.mark.parametrize("workers", [0, 2])
def test_dataloader_workers_deliver_the_rank_sequence_exactly(ds, workers):
    for rank in (0, 1):
        st = EpisodeShuffleStream(ds, seed=7, pool_size=4, batch_size=4, rank=rank, world_size=2)
        plan = list(st.plan())
        loader = DataLoader(st, batch_size=4, num_workers=workers, collate_fn=collate_frames)
        got = pairs(loader)
        want = list(zip(*[a.tolist() for a in ds.locate(plan)]))
        assert got == want  # same order as the plan: no duplicates, no gaps
        assert len(loader) == (len(plan) + 3) // 4


def test_mismatched_batch_size_still_reads_every_frame_once(ds):
    st = EpisodeShuffleStream(ds, seed=7, batch_size=3)
    got = pairs(DataLoader(st, batch_size=5, num_workers=2, collate_fn=collate_frames))
    assert sorted(got) == sorted((e, f) for e, n in enumerate(LENGTHS) for f in range(n))


def test_resume_with_workers_mid_batch(ds):
    st = EpisodeShuffleStream(ds, seed=3, pool_size=4, batch_size=4)
    st.set_epoch(5)
    plan = list(st.plan())
    loader = DataLoader(st, batch_size=4, num_workers=2, collate_fn=collate_frames)
    it = iter(loader)
    consumed = pairs([next(it) for _ in range(4)])  # 16 samples
    del it
    state = st.state_dict(consumed=len(consumed) - 2)  # the trainer used 14 of them
    assert state["position"] == 14 and state["epoch"] == 5
    fresh = EpisodeShuffleStream(ds, seed=0, pool_size=4, batch_size=4)
    fresh.load_state_dict(state)
    assert len(fresh) == len(plan) - 14
    rest = pairs(DataLoader(fresh, batch_size=4, num_workers=2, collate_fn=collate_frames))
    want = list(zip(*[a.tolist() for a in ds.locate(plan)]))
    assert consumed[:14] + rest == want


def test_resume_in_process_counts_what_it_yielded(ds):
    st = EpisodeShuffleStream(ds, seed=8, pool_size=2)
    full = [int(s["index"]) for s in st]
    it = iter(st)
    head = [int(next(it)["index"]) for _ in range(10)]
    fresh = EpisodeShuffleStream(ds, seed=8, pool_size=2)
    fresh.load_state_dict(st.state_dict())
    assert head + [int(s["index"]) for s in fresh] == full


def test_state_for_another_world_size_is_refused(ds):
    st = EpisodeShuffleStream(ds, rank=0, world_size=2)
    with pytest.raises(ValueError, match="world_size=2"):
        EpisodeShuffleStream(ds, rank=0, world_size=3).load_state_dict(st.state_dict())


@pytest.mark.skipif(shutil.which("ffmpeg") is None, reason="system ffmpeg not installed")
def test_stream_of_video_frames_v21(tmp_path):
    root = tmp_path / "v21"
    build_dataset(root, SynthSpec(version="v2.1", episode_lengths=(6, 5, 7), video_codec="h264"))
    ds = FrameDataset(root, cache_dir=tmp_path / "c", frames_dtype="uint8")
    st = EpisodeShuffleStream(ds, seed=2, pool_size=2, batch_size=3)
    seen = []
    for b in DataLoader(st, batch_size=3, num_workers=2, collate_fn=collate_frames):
        for k in range(len(b["index"])):
            pair = (int(b["episode_index"][k]), int(b["frame_index"][k]))
            assert read_frame_id(b["observation.images.front"][k].numpy()) == pair
            seen.append(pair)
    assert sorted(seen) == [(e, f) for e, n in enumerate((6, 5, 7)) for f in range(n)]
