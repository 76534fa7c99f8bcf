"""EpisodeAwareSampler and its keyed bijection: pure function of (seed, epoch), shards, resume, dropping."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from lerobot_tools.loaders import EpisodeAwareSampler, FeistelPermutation  # noqa: E402

LENGTHS = [13, 1, 40, 7, 0, 25, 9, 31, 2, 18]  # includes an empty and a 1-frame episode
N = sum(LENGTHS)


def run(s: EpisodeAwareSampler) -> list[int]:
    return list(iter(s))


@pytest.mark.parametrize("n", [0, 1, 2, 3, 4, 5, 7, 8, 9, 31, 32, 33, 1000, 4097, 65537])
def test_feistel_is_a_bijection(n):
    for seed, epoch in [(0, 0), (1, 0), (0, 7), (123456789, 3)]:
        p = FeistelPermutation(n, seed, epoch)(np.arange(n))
        assert sorted(p.tolist()) == list(range(n))


def test_order_is_a_pure_function_of_seed_and_epoch():
    a = run(EpisodeAwareSampler(LENGTHS, seed=3))
    b = run(EpisodeAwareSampler(LENGTHS, seed=3))
    assert a == b
    assert a != run(EpisodeAwareSampler(LENGTHS, seed=4))
    s = EpisodeAwareSampler(LENGTHS, seed=3)
    s.set_epoch(1)
    e1 = run(s)
    assert e1 != a and sorted(e1) == sorted(a) == list(range(N))
    t = EpisodeAwareSampler(LENGTHS, seed=3)
    t.set_epoch(1)
    assert run(t) == e1  # another object, no shared state, same order


def test_uniform_looking_order():
    n = 100_000
    s = EpisodeAwareSampler([n], seed=11)
    out = np.asarray(run(s))
    assert sorted(out.tolist()) == list(range(n))
    assert not np.array_equal(out, np.arange(n))
    adjacent = np.mean(np.abs(np.diff(out)) == 1)
    assert adjacent < 0.001  # a random permutation has ~2/n adjacent consecutive pairs
    # each tenth of the sequence draws evenly from the ten deciles of the index range
    counts = np.histogram2d(np.arange(n) * 10 // n, out * 10 // n, bins=10)[0]
    expected = n / 100
    chi2 = ((counts - expected) ** 2 / expected).sum()
    assert chi2 < 160  # 81 degrees of freedom: mean 81, p(chi2 > 160) < 1e-6
    # no fixed structure in the low bits: parity of consecutive outputs uncorrelated
    assert abs(np.corrcoef(out[:-1] % 2, out[1:] % 2)[0, 1]) < 0.02


@pytest.mark.parametrize("world", [1, 2, 3, 4, 7])
def test_ranks_are_disjoint_and_cover(world):
    shards = [run(EpisodeAwareSampler(LENGTHS, seed=2, rank=r, world_size=world)) for r in range(world)]
    allv = [i for sh in shards for i in sh]
    assert sorted(allv) == list(range(N))
    assert [len(sh) for sh in shards] == [len(EpisodeAwareSampler(LENGTHS, seed=2, rank=r, world_size=world))
                                          for r in range(world)]
    assert max(map(len, shards)) - min(map(len, shards)) <= 1
    # every rank sees the same permutation: interleaving the shards rebuilds the single-process order
    single = run(EpisodeAwareSampler(LENGTHS, seed=2))
    rebuilt = [shards[j % world][j // world] for j in range(N)]
    assert rebuilt == single


def test_drop_last_gives_equal_shards():
    world = 4  # N = 146 = 4 * 36 + 2
    shards = [run(EpisodeAwareSampler(LENGTHS, seed=2, rank=r, world_size=world, drop_last=True)) for r in range(world)]
    assert [len(s) for s in shards] == [N // world] * world
    flat = [i for s in shards for i in s]
    assert len(set(flat)) == len(flat) == N - N % world


def test_rank_defaults_and_bad_rank():
    s = EpisodeAwareSampler(LENGTHS)
    assert (s.rank, s.world_size) == (0, 1)
    with pytest.raises(ValueError):
        EpisodeAwareSampler(LENGTHS, rank=2, world_size=2)


def test_resume_at_the_exact_sample():
    s = EpisodeAwareSampler(LENGTHS, seed=9)
    s.set_epoch(2)
    full = run(s)
    it = iter(s)
    head = [next(it) for _ in range(37)]
    state = s.state_dict()
    assert state["position"] == 37 and state["epoch"] == 2
    fresh = EpisodeAwareSampler(LENGTHS, seed=0)  # seed and epoch come from the state
    fresh.load_state_dict(state)
    assert len(fresh) == N - 37
    tail = run(fresh)
    assert head + tail == full
    fresh.set_epoch(3)  # a new epoch starts from its beginning again
    assert len(run(fresh)) == N


def test_resume_with_explicit_consumed_count_and_another_world_size():
    """2 ranks consume 20 samples each; resume on 3 ranks: every frame exactly once overall."""
    consumed = []
    states = []
    for r in range(2):
        s = EpisodeAwareSampler(LENGTHS, seed=4, rank=r, world_size=2)
        consumed += run(s)[:20]
        states.append(s.state_dict(consumed=20))
    assert states[0] == states[1] and states[0]["position"] == 40
    rest = []
    for r in range(3):
        s = EpisodeAwareSampler(LENGTHS, seed=99, rank=r, world_size=3)
        s.load_state_dict(states[0])
        rest += run(s)
    assert sorted(consumed + rest) == list(range(N))


def test_state_from_another_dataset_is_refused():
    s = EpisodeAwareSampler(LENGTHS)
    with pytest.raises(ValueError, match="different dataset"):
        EpisodeAwareSampler(LENGTHS[:-1]).load_state_dict(s.state_dict())
    with pytest.raises(ValueError):
        EpisodeAwareSampler(LENGTHS, drop_first_frames=1).load_state_dict(s.state_dict())


def test_drop_first_and_last_frames_per_episode():
    s = EpisodeAwareSampler(LENGTHS, seed=1, drop_first_frames=2, drop_last_frames=3)
    out = run(s)
    starts = np.concatenate([[0], np.cumsum(LENGTHS)[:-1]])
    want = [int(st) + f for st, n in zip(starts, LENGTHS) for f in range(2, n - 3)]
    assert sorted(out) == sorted(want)
    assert len(out) == len(s) == sum(max(n - 5, 0) for n in LENGTHS)
    assert s.total == len(want)


def test_no_shuffle_is_dataset_order():
    assert run(EpisodeAwareSampler(LENGTHS, shuffle=False)) == list(range(N))
    assert run(EpisodeAwareSampler(LENGTHS, shuffle=False, rank=1, world_size=3)) == list(range(1, N, 3))


def test_a_billion_frames_in_o_episodes_memory_with_instant_seek():
    lengths = np.full(100_000, 10_000, dtype=np.int64)  # 10^5 episodes, 10^9 frames
    s = EpisodeAwareSampler(lengths, seed=5, rank=3, world_size=8)
    arrays = [v for v in vars(s).values() if isinstance(v, np.ndarray)]
    assert sum(a.nbytes for a in arrays) <= 2 * 8 * (len(lengths) + 1)  # two int64 arrays of E + 1
    assert s.total == 10**9 and len(s) == 10**9 // 8
    state = {**s.state_dict(), "position": 600_000_000}
    s.load_state_dict(state)
    first = next(iter(s))
    assert first == int(s.indices(np.asarray([600_000_000 + 3]))[0])
    assert 0 <= first < 10**9


def test_with_a_frame_dataset_and_episode_subset(tmp_path):
    pytest.importorskip("datasets")
    from lerobot_tools.loaders import FrameDataset
    from lerobot_tools.testing.synth import SynthSpec, build_dataset

    root = tmp_path / "ds"
    build_dataset(root, SynthSpec(version="v3.0", episode_lengths=(6, 4, 8, 5), episodes_per_file=2, video_codec=None,
                                  video_keys=()))
    ds = FrameDataset(root, episodes=[3, 0], cache_dir=tmp_path / "c", decode_video=False)
    s = EpisodeAwareSampler(ds, seed=0, drop_first_frames=1, drop_last_frames=1)
    out = run(s)
    eps, frames = ds.locate(out)
    got = sorted(zip(eps.tolist(), frames.tolist()))
    assert got == [(0, f) for f in range(1, 5)] + [(3, f) for f in range(1, 4)]
    for i in out:
        smp = ds[i]
        assert (int(smp["episode_index"]), int(smp["frame_index"])) == tuple(int(x[0]) for x in ds.locate([i]))
