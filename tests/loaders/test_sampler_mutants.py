"""EpisodeAwareSampler in detail: argument refusals and their messages, sources with their own episode starts,
exact orders and shard sizes at the boundaries, resume state round trips and refusals, rank and world size
read from a real two-process gloo group, and weighted mixtures built from the fixture datasets."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from lerobot_tools.loaders import EpisodeAwareSampler  # noqa: E402
from lerobot_tools.loaders.sampler import dist_rank_world  # noqa: E402

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
LENGTHS = [13, 1, 40, 7, 0, 25, 9, 31, 2, 18]  # 146 frames, an empty and a 1-frame episode
N = sum(LENGTHS)
STARTS = [int(x) for x in np.concatenate([[0], np.cumsum(LENGTHS)[:-1]])]
#: fingerprint of LENGTHS without frame dropping: pinned, since a checkpoint's sampler state must keep loading
FP_LENGTHS = "ec2df38f434e477e"


def error(fn, *args, **kwargs) -> str:
    with pytest.raises(ValueError) as e:
        fn(*args, **kwargs)
    return str(e.value)


def frames(lengths, starts, first=0, last=0) -> list[int]:
    """The kept dataset indices in dataset order, computed without the sampler."""
    return [s + f for s, n in zip(starts, lengths) for f in range(first, n - last)]


# ------------------------------------------------------------------ arguments
def test_invalid_arguments_are_refused_with_exact_messages():
    drop = "drop_first_frames and drop_last_frames must be >= 0"
    assert error(EpisodeAwareSampler, LENGTHS, drop_first_frames=-1) == drop
    assert error(EpisodeAwareSampler, LENGTHS, drop_last_frames=-1) == drop
    assert error(EpisodeAwareSampler, [3, -1, 2]) == "episode lengths must be >= 0"
    mix = "num_samples and weights need a MixtureDataset source"
    assert error(EpisodeAwareSampler, LENGTHS, num_samples=10) == mix
    assert error(EpisodeAwareSampler, LENGTHS, weights=[1.0]) == mix
    assert error(EpisodeAwareSampler, LENGTHS, rank=2, world_size=2) == \
        "rank must be in [0, world_size), got rank=2, world_size=2"
    assert error(EpisodeAwareSampler, LENGTHS, rank=-1, world_size=2) == \
        "rank must be in [0, world_size), got rank=-1, world_size=2"
    assert error(EpisodeAwareSampler, LENGTHS, world_size=0) == \
        "rank must be in [0, world_size), got rank=0, world_size=0"
    assert error(EpisodeAwareSampler, LENGTHS, rank=1) == "rank must be in [0, world_size), got rank=1, world_size=1"


def test_defaults_seed_0_shuffled_rank_0_of_1_every_frame():
    s = EpisodeAwareSampler(LENGTHS)
    assert s.state_dict() == {"seed": 0, "epoch": 0, "position": 0, "total": N, "fingerprint": FP_LENGTHS}
    out = list(s)
    assert s.state_dict()["position"] == N
    assert out == list(EpisodeAwareSampler(LENGTHS, seed=0))
    assert out != list(EpisodeAwareSampler(LENGTHS, seed=1))
    assert out != list(range(N)) and sorted(out) == list(range(N)) and len(s) == N
    assert repr(s) == "EpisodeAwareSampler(frames=146, episodes=10, seed=0, epoch=0, rank=0/1)"
    assert repr(EpisodeAwareSampler(LENGTHS, seed=7, rank=2, world_size=3)) == \
        "EpisodeAwareSampler(frames=146, episodes=10, seed=7, epoch=0, rank=2/3)"
    assert s.dataset_counts() is None


def test_rank_and_world_without_a_process_group():
    assert dist_rank_world(None, None) == (0, 1)
    assert dist_rank_world(None, 3) == (0, 3)
    assert dist_rank_world(2, 5) == (2, 5)
    assert dist_rank_world(np.int64(1), 2.0) == (1, 2)
    assert error(dist_rank_world, 2, None) == "rank must be in [0, world_size), got rank=2, world_size=1"


def test_yields_python_ints_and_indices_gives_int64():
    for src in (LENGTHS, np.asarray(LENGTHS, dtype=np.int32),
                SimpleNamespace(episode_lengths=LENGTHS, episode_starts=STARTS)):
        s = EpisodeAwareSampler(src, seed=3, drop_first_frames=1)
        out = list(s)
        assert all(type(i) is int for i in out)
        assert sorted(out) == frames(LENGTHS, STARTS, first=1)
    s = EpisodeAwareSampler(LENGTHS, shuffle=False)
    got = s.indices(np.arange(0, N, 7, dtype=np.uint64))
    assert got.dtype == np.int64 and got.tolist() == list(range(0, N, 7))


# ------------------------------------------------------------------ sources
def test_a_source_with_its_own_episode_starts():
    """Episodes of a source need not be contiguous or in dataset order: its episode_starts are used."""
    src = SimpleNamespace(episode_lengths=[3, 0, 2, 4], episode_starts=[10, 13, 20, 5])
    assert list(EpisodeAwareSampler(src, shuffle=False)) == [10, 11, 12, 20, 21, 5, 6, 7, 8]
    assert list(EpisodeAwareSampler(src, shuffle=False, drop_first_frames=1)) == [11, 12, 21, 6, 7, 8]
    assert list(EpisodeAwareSampler(src, shuffle=False, drop_last_frames=1)) == [10, 11, 20, 5, 6, 7]
    s = EpisodeAwareSampler(src, seed=4)
    out = list(s)
    assert sorted(out) == [5, 6, 7, 8, 10, 11, 12, 20, 21] and out != sorted(out) and len(s) == 9
    # the starts are part of the layout: a contiguous source of the same lengths is another dataset
    with pytest.raises(ValueError, match="different dataset"):
        EpisodeAwareSampler([3, 0, 2, 4]).load_state_dict(s.state_dict())


def test_a_source_without_episode_starts_is_contiguous():
    src = SimpleNamespace(episode_lengths=LENGTHS)
    assert list(EpisodeAwareSampler(src, shuffle=False)) == list(range(N))
    assert list(EpisodeAwareSampler(src, shuffle=False, drop_first_frames=2, drop_last_frames=3)) == \
        frames(LENGTHS, STARTS, 2, 3)
    assert list(EpisodeAwareSampler(src, seed=5)) == list(EpisodeAwareSampler(LENGTHS, seed=5))
    assert EpisodeAwareSampler(src).state_dict()["fingerprint"] == FP_LENGTHS


def test_the_layout_fingerprint_does_not_depend_on_integer_types():
    """A state saved over a dataset loads into a sampler over the same layout given as int32 arrays or lists."""
    i32 = np.asarray(LENGTHS, dtype=np.int32)
    sources = [LENGTHS, i32, list(map(np.int16, LENGTHS)), i32.reshape(-1, 1),
               SimpleNamespace(episode_lengths=LENGTHS, episode_starts=STARTS),
               SimpleNamespace(episode_lengths=i32, episode_starts=np.asarray(STARTS, dtype=np.int32)),
               SimpleNamespace(episode_lengths=i32)]
    full = list(EpisodeAwareSampler(LENGTHS, seed=6))
    for src in sources:
        s = EpisodeAwareSampler(src, seed=6)
        assert s.state_dict()["fingerprint"] == FP_LENGTHS
        it = iter(s)
        head = [next(it) for _ in range(50)]
        for other in sources:
            fresh = EpisodeAwareSampler(other)
            fresh.load_state_dict(s.state_dict())
            assert head + list(fresh) == full
    assert EpisodeAwareSampler.from_lengths(i32, seed=6).state_dict()["fingerprint"] == FP_LENGTHS
    assert list(EpisodeAwareSampler.from_lengths(LENGTHS, seed=6)) == full
    assert list(EpisodeAwareSampler.from_lengths(LENGTHS, shuffle=False, rank=1, world_size=2)) == list(range(1, N, 2))
    dropped = EpisodeAwareSampler(LENGTHS, drop_first_frames=2, drop_last_frames=3).state_dict()["fingerprint"]
    assert dropped == "ac5be73be1092f26"


def test_a_source_with_only_one_mixture_attribute_is_a_plain_dataset():
    src = SimpleNamespace(episode_lengths=[4, 2], episode_starts=[0, 4], dataset_offsets=[0, 6])
    s = EpisodeAwareSampler(src, shuffle=False)
    assert list(s) == list(range(6)) and s.dataset_counts() is None
    assert error(EpisodeAwareSampler, src, num_samples=3) == "num_samples and weights need a MixtureDataset source"


# ------------------------------------------------------------------ sizes and boundaries
def test_shard_sizes_when_the_world_does_not_divide_the_frames():
    sizes = [len(EpisodeAwareSampler(LENGTHS, rank=r, world_size=4)) for r in range(4)]
    assert sizes == [37, 37, 36, 36]  # 146 = 4 * 36 + 2
    assert [len(list(EpisodeAwareSampler(LENGTHS, rank=r, world_size=4))) for r in range(4)] == sizes
    assert [len(EpisodeAwareSampler(LENGTHS, rank=r, world_size=4, drop_last=True)) for r in range(4)] == [36] * 4
    # unshuffled, drop_last leaves out the last N mod W positions: frames 144 and 145
    for r in range(4):
        assert list(EpisodeAwareSampler(LENGTHS, shuffle=False, rank=r, world_size=4, drop_last=True)) == \
            list(range(r, 144, 4))
    assert len(EpisodeAwareSampler(LENGTHS, drop_last=True)) == N  # one rank drops nothing
    assert len(EpisodeAwareSampler(LENGTHS, world_size=146, rank=145, drop_last=True)) == 1
    assert len(EpisodeAwareSampler(LENGTHS, world_size=147, rank=146)) == 0
    assert len(EpisodeAwareSampler(LENGTHS, world_size=147, rank=146, drop_last=True)) == 0


def test_fewer_frames_than_ranks_and_empty_datasets():
    assert [list(EpisodeAwareSampler([2], shuffle=False, rank=r, world_size=3)) for r in range(3)] == [[0], [1], []]
    assert [len(EpisodeAwareSampler([2], rank=r, world_size=3)) for r in range(3)] == [1, 1, 0]
    assert [len(EpisodeAwareSampler([2], rank=r, world_size=3, drop_last=True)) for r in range(3)] == [0, 0, 0]
    for lengths in ([], [0, 0], [3, 2]):
        s = EpisodeAwareSampler(lengths, drop_first_frames=2, drop_last_frames=1)
        assert len(s) == 0 and list(s) == [] and s.total == 0
    one = EpisodeAwareSampler([1], seed=9)
    assert list(one) == [0] and len(one) == 1
    assert list(EpisodeAwareSampler([0, 0, 1], seed=9)) == [0]  # the last episode's only frame


def test_last_frame_of_the_last_episode_and_drops_at_the_edges():
    s = EpisodeAwareSampler(LENGTHS, shuffle=False, drop_first_frames=17)
    out = list(s)
    assert out == frames(LENGTHS, STARTS, first=17) and out[-1] == N - 1 and len(s) == 23 + 8 + 14 + 1
    assert list(EpisodeAwareSampler(LENGTHS, shuffle=False, drop_last_frames=39)) == [STARTS[2]]


# ------------------------------------------------------------------ order
def test_indices_of_another_epoch_match_that_epochs_iteration():
    s = EpisodeAwareSampler(LENGTHS, seed=8)
    e0 = list(s)
    s1 = EpisodeAwareSampler(LENGTHS, seed=8)
    s1.set_epoch(1)
    e1 = list(s1)
    assert e0 != e1
    pos = np.arange(N)
    assert s.indices(pos).tolist() == e0
    assert s.indices(pos, epoch=1).tolist() == e1
    assert s.indices(pos, epoch=np.int64(1)).tolist() == e1
    assert s.epoch == 0
    assert s.indices([5, 0, 145]).tolist() == [e0[5], e0[0], e0[145]]


# ------------------------------------------------------------------ resume
def test_state_round_trips_without_iterating():
    s = EpisodeAwareSampler(LENGTHS, seed=2, rank=1, world_size=3)
    assert s.state_dict()["position"] == 0
    assert s.state_dict(consumed=5)["position"] == 15
    assert s.state_dict(consumed=100)["position"] == N  # clamped to the epoch
    state = {**s.state_dict(), "position": 60, "epoch": 4, "seed": 11}
    fresh = EpisodeAwareSampler(LENGTHS, rank=1, world_size=3)
    fresh.load_state_dict(state)
    assert fresh.state_dict() == state  # nothing yielded since the load
    assert (fresh.seed, fresh.epoch) == (11, 4) and len(fresh) == 29  # positions 61, 64, ..., 145
    it = iter(fresh)
    next(it)
    assert fresh.state_dict()["position"] == 63
    fresh.load_state_dict(state)
    assert fresh.state_dict()["position"] == 60


def test_a_state_at_the_end_of_the_epoch_yields_nothing():
    s = EpisodeAwareSampler(LENGTHS, seed=3)
    list(s)
    end = s.state_dict()
    assert end["position"] == N
    for world in (1, 2):
        fresh = EpisodeAwareSampler(LENGTHS, world_size=world, rank=world - 1)
        fresh.load_state_dict(end)
        assert len(fresh) == 0 and list(fresh) == []
        fresh.load_state_dict({**end, "position": N + 5})
        assert len(fresh) == 0 and list(fresh) == []


def test_foreign_or_damaged_states_are_refused_with_the_exact_message():
    msg = "sampler state was saved for a different dataset, episode selection or frame dropping"
    state = EpisodeAwareSampler([3, 5], seed=1).state_dict()
    assert error(EpisodeAwareSampler([5, 3]).load_state_dict, state) == msg  # same frame count, other layout
    target = EpisodeAwareSampler([3, 5])
    assert error(target.load_state_dict, {**state, "total": 9}) == msg
    assert error(target.load_state_dict, {k: v for k, v in state.items() if k != "total"}) == msg
    assert error(target.load_state_dict, {k: v for k, v in state.items() if k != "fingerprint"}) == msg
    one = EpisodeAwareSampler([1])
    assert error(one.load_state_dict, {k: v for k, v in one.state_dict().items() if k != "total"}) == msg
    target.load_state_dict(state)  # the genuine state loads
    assert target.seed == 1


# ------------------------------------------------------------------ torch.distributed
WORKER = textwrap.dedent("""
    import json, sys
    import torch.distributed as dist
    from lerobot_tools.loaders import EpisodeAwareSampler
    from lerobot_tools.loaders.sampler import dist_rank_world

    rank, init, out = int(sys.argv[1]), sys.argv[2], sys.argv[3]
    lengths = json.loads(sys.argv[4])
    dist.init_process_group("gloo", init_method=init, rank=rank, world_size=2)
    got = {}
    for name, args in {"none": (None, None), "world5": (None, 5), "rank0": (0, None), "rank1": (1, None),
                       "both": (3, 4), "rank2": (2, None)}.items():
        try:
            got[name] = list(dist_rank_world(*args))
        except ValueError as e:
            got[name] = str(e)
    s = EpisodeAwareSampler(lengths, seed=2)
    got["sampler"] = [s.rank, s.world_size]
    got["order"] = list(s)
    got["explicit"] = list(EpisodeAwareSampler(lengths, seed=2, rank=0, world_size=1))
    dist.barrier()
    dist.destroy_process_group()
    with open(out, "w") as f:
        json.dump(got, f)
""")


def test_rank_and_world_come_from_an_initialised_gloo_group(tmp_path, run_ranks):
    if not torch.distributed.is_available() or not torch.distributed.is_gloo_available():
        pytest.skip("torch.distributed with gloo is not available")
    assert dist_rank_world(None, None) == (0, 1)  # this process has no group
    script = tmp_path / "worker.py"
    script.write_text(WORKER)
    init = f"file://{tmp_path / 'rendezvous'}"
    run_ranks(lambda r: [script, r, init, tmp_path / f"out{r}.json", json.dumps(LENGTHS)], timeout=120,
              finished=lambda r: (tmp_path / f"out{r}.json").exists())
    got = [json.loads((tmp_path / f"out{r}.json").read_text()) for r in range(2)]
    for r in range(2):
        assert got[r]["none"] == [r, 2]  # both from the group
        assert got[r]["world5"] == [r, 5]  # rank from the group, the given world size
        assert got[r]["rank0"] == [0, 2] and got[r]["rank1"] == [1, 2]  # the given rank, the group's world size
        assert got[r]["both"] == [3, 4]  # both given: the group is not consulted
        assert got[r]["rank2"] == "rank must be in [0, world_size), got rank=2, world_size=2"
        assert got[r]["sampler"] == [r, 2]
    single = list(EpisodeAwareSampler(LENGTHS, seed=2))
    assert got[0]["explicit"] == got[1]["explicit"] == single
    a, b = got[0]["order"], got[1]["order"]
    assert [len(a), len(b)] == [73, 73] and not set(a) & set(b) and sorted(a + b) == list(range(N))
    assert [(a, b)[j % 2][j // 2] for j in range(N)] == single


# ------------------------------------------------------------------ mixtures
MIX_PARTS = ("mixpart_base", "mixpart_v30", "mixpart_fps15")  # 11 frames each, episodes of 6 and 5


@pytest.fixture(scope="module")
def mixtures(tmp_path_factory):
    """(unweighted, weighted 1:2:5) mixtures of the three fixture datasets, without video."""
    pytest.importorskip("datasets")
    from lerobot_tools.loaders import MixtureDataset

    cache = tmp_path_factory.mktemp("mixcache")
    parts = [FIXTURES / "datasets" / p for p in MIX_PARTS]
    plain = MixtureDataset(parts, decode_video=False, cache_dir=cache)
    weighted = MixtureDataset(parts, weights=[1, 2, 5], decode_video=False, cache_dir=cache)
    assert plain.episode_lengths.tolist() == [6, 5] * 3 and not plain.explicit_weights and weighted.explicit_weights
    return plain, weighted


def walk(quotas, kept) -> list[int]:
    """Unshuffled draws of a weighted epoch: dataset after dataset, cycling through each one's kept frames."""
    return [ks[j % len(ks)] for q, ks in zip(quotas, kept) for j in range(q)]


def test_mixture_without_weights_is_every_frame_once(mixtures):
    plain, _ = mixtures
    s = EpisodeAwareSampler(plain, seed=1)
    out = list(s)
    assert s.dataset_counts().tolist() == [11, 11, 11] and len(s) == s.total == 33
    assert sorted(out) == list(range(33)) and out != list(range(33))
    assert all(type(i) is int for i in out)
    assert list(EpisodeAwareSampler(plain, shuffle=False)) == list(range(33))
    counts = s.dataset_counts()
    counts[0] = 99  # a copy
    assert s.dataset_counts().tolist() == [11, 11, 11]
    assert s.state_dict()["fingerprint"] == "37974e534bbcdbca"  # pinned: saved states keep loading


def test_mixture_with_frames_dropped_per_episode(mixtures):
    plain, _ = mixtures
    starts = plain.episode_starts.tolist()
    kept = frames([6, 5] * 3, starts, first=1, last=1)
    s = EpisodeAwareSampler(plain, shuffle=False, drop_first_frames=1, drop_last_frames=1)
    assert s.dataset_counts().tolist() == [7, 7, 7]
    assert list(s) == kept
    w = EpisodeAwareSampler(plain, shuffle=False, drop_first_frames=1, drop_last_frames=1, weights=[1, 1, 2],
                            num_samples=40)
    assert w.dataset_counts().tolist() == [10, 10, 20]
    assert list(w) == walk([10, 10, 20], [kept[0:7], kept[7:14], kept[14:21]])


def test_mixture_weights_and_num_samples(mixtures):
    plain, weighted = mixtures
    by_dataset = [list(range(0, 11)), list(range(11, 22)), list(range(22, 33))]
    assert EpisodeAwareSampler(plain, num_samples=6).dataset_counts().tolist() == [2, 2, 2]
    assert EpisodeAwareSampler(plain, weights=[1, 2, 5]).dataset_counts().tolist() == [4, 8, 21]
    s = EpisodeAwareSampler(plain, weights=[1, 2, 5], num_samples=16, shuffle=False)
    assert s.dataset_counts().tolist() == [2, 4, 10] and len(s) == 16
    assert list(s) == walk([2, 4, 10], by_dataset)
    s = EpisodeAwareSampler(plain, weights=[1, 1, 2], num_samples=40, shuffle=False)
    assert list(s) == walk([10, 10, 20], by_dataset)  # the third dataset cycles: 22..32, then 22..30
    # the mixture's own explicit weights apply unless weights are given
    assert EpisodeAwareSampler(weighted).dataset_counts().tolist() == [4, 8, 21]
    assert EpisodeAwareSampler(weighted, weights=[1, 1, 1]).dataset_counts().tolist() == [11, 11, 11]
    assert EpisodeAwareSampler(weighted, num_samples=16).dataset_counts().tolist() == [2, 4, 10]


def test_mixture_draws_a_different_subset_of_each_dataset_every_epoch(mixtures):
    plain, _ = mixtures
    subsets = []
    for epoch in range(4):
        s = EpisodeAwareSampler(plain, seed=3, weights=[1, 1, 1], num_samples=6)
        s.set_epoch(epoch)
        out = list(s)
        assert len(out) == 6 and len(set(out)) == 6
        assert [sum(1 for i in out if 11 * d <= i < 11 * (d + 1)) for d in range(3)] == [2, 2, 2]
        assert s.indices(np.arange(6)).tolist() == out
        subsets.append(sorted(out))
    assert len({tuple(x) for x in subsets}) > 1
    assert subsets != [[0, 1, 11, 12, 22, 23]] * 4
    again = EpisodeAwareSampler(plain, seed=3, weights=[1, 1, 1], num_samples=6)
    assert sorted(again.indices(np.arange(6), epoch=2).tolist()) == subsets[2]


def test_mixture_resume_and_state_refusals(mixtures):
    plain, weighted = mixtures
    kw = dict(weights=[1, 2, 5], num_samples=40)
    s = EpisodeAwareSampler(plain, seed=5, rank=1, world_size=2, **kw)
    s.set_epoch(2)
    whole = list(s)
    assert len(whole) == 20
    it = iter(s)
    head = [next(it) for _ in range(7)]
    fresh = EpisodeAwareSampler(plain, rank=1, world_size=2, **kw)
    fresh.load_state_dict(s.state_dict())
    assert head + list(fresh) == whole
    msg = "sampler state was saved for a different dataset, episode selection or frame dropping"
    unweighted = EpisodeAwareSampler(plain, num_samples=33).state_dict()
    assert error(EpisodeAwareSampler(plain, weights=[1, 2, 5], num_samples=33).load_state_dict, unweighted) == msg
    assert error(EpisodeAwareSampler(plain).load_state_dict,
                 EpisodeAwareSampler(plain.episode_lengths).state_dict()) == msg  # same frames, not a mixture
    EpisodeAwareSampler(weighted).load_state_dict(EpisodeAwareSampler(plain, weights=[1, 2, 5]).state_dict())


def test_a_mixture_like_source_without_explicit_weights_draws_every_frame_once():
    src = SimpleNamespace(episode_lengths=[2, 3], episode_starts=[0, 2], episode_offsets=[0, 1, 2],
                          dataset_offsets=[0, 2, 5], weights=[0.9, 0.1])
    s = EpisodeAwareSampler(src, shuffle=False)
    assert s.dataset_counts().tolist() == [2, 3] and list(s) == [0, 1, 2, 3, 4]
    assert EpisodeAwareSampler(src, num_samples=10).dataset_counts().tolist() == [4, 6]
    explicit = SimpleNamespace(**vars(src), explicit_weights=True)
    assert EpisodeAwareSampler(explicit).dataset_counts().tolist() == [5, 0]


def test_a_mixture_member_with_no_frames_left_is_never_drawn(tmp_path_factory):
    """Frame dropping can leave a dataset of the mixture without a frame (its episodes all shorter than the frames
    dropped): its weight goes to the others, however large it is, and no draw ever lands on it (a draw of a dataset
    of 0 frames divides by zero and lands on another dataset's frame)."""
    import warnings

    pytest.importorskip("datasets")
    from lerobot_tools.loaders import MixtureDataset, MixtureMember

    cache = tmp_path_factory.mktemp("nofit")
    parts = [FIXTURES / "datasets" / p for p in MIX_PARTS]
    # the first member keeps only its 5-frame episode: dropping 3 + 2 frames leaves nothing of it
    mix = MixtureDataset([MixtureMember(parts[0], episodes=[1]), parts[1], parts[2]], weights=[50, 1, 1],
                         decode_video=False, cache_dir=cache)
    assert mix.episode_lengths.tolist() == [5, 6, 5, 6, 5]
    kept = {int(mix.episode_starts[e]) + 3 for e in (1, 3)}  # the one frame left of each 6-frame episode
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # numpy's division by zero would only warn
        for shuffle in (False, True):
            s = EpisodeAwareSampler(mix, seed=5, shuffle=shuffle, drop_first_frames=3, drop_last_frames=2)
            assert s.dataset_counts().tolist() == [0, 1, 1] and len(s) == 2
            assert set(s) == kept
            many = EpisodeAwareSampler(mix, seed=5, shuffle=shuffle, drop_first_frames=3, drop_last_frames=2,
                                       num_samples=40)
            assert many.dataset_counts().tolist() == [0, 20, 20]
            got = list(many)
            assert len(got) == 40 and set(got) == kept
            assert 0 not in set(mix.locate(got)[0].tolist())
