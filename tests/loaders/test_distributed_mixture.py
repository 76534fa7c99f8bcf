"""Two real processes joined by torch.distributed (gloo, CPU) load one weighted mixture.

Neither the sampler nor the stream is told its rank: both read it from torch.distributed. Each rank
builds its own MixtureDataset from the mixture file, loads its share through a DataLoader with workers,
checks every decoded frame, and the ranks gather what they drew with all_gather_object. The test asserts
that the two shares are disjoint positions of one epoch order: unweighted, every frame of every dataset
exactly once; weighted, exactly the single-process epoch (same draws, each dataset's count equal to its
weighted share), split between the ranks without overlap.
"""

from __future__ import annotations

import json
import shutil
import textwrap
from collections import Counter

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("datasets")
pytest.importorskip("torchcodec")
if not torch.distributed.is_available():
    pytest.skip("torch.distributed is not available", allow_module_level=True)

from lerobot_tools.testing.synth import SynthSpec, build_dataset  # noqa: E402

LENGTHS = {"a": (6, 9, 5), "b": (7, 4)}
WEIGHTED = dict(weights=[1.0, 4.0], num_samples=60)

WORKER = textwrap.dedent("""
    import json, sys
    import torch.distributed as dist
    from torch.utils.data import DataLoader
    from lerobot_tools.loaders import EpisodeAwareSampler, EpisodeShuffleStream, MixtureDataset, collate_frames
    from lerobot_tools.testing.synth import read_frame_id

    rank, world, init, mix, cache, out = int(sys.argv[1]), int(sys.argv[2]), *sys.argv[3:7]
    weighted = json.loads(sys.argv[7])
    dist.init_process_group("gloo", init_method=init, rank=rank, world_size=world)
    ds = MixtureDataset(mix, cache_dir=cache, frames_dtype="uint8")

    def triples(loader):
        got = []
        for b in loader:
            for k in range(len(b["dataset_index"])):
                t = (int(b["dataset_index"][k]), int(b["episode_index"][k]), int(b["frame_index"][k]))
                assert read_frame_id(b["camera0"][k].numpy()) == t[1:], t
                got.append(t)
        return got

    def run(workers, **kw):
        sampler = EpisodeAwareSampler(ds, seed=3, **kw)
        stream = EpisodeShuffleStream(ds, seed=3, batch_size=4, pool_size=2, **kw)
        assert (sampler.rank, sampler.world_size) == (rank, world) == (stream.rank, stream.world_size)
        return {"map": triples(DataLoader(ds, batch_size=4, sampler=sampler, num_workers=workers[0],
                                          collate_fn=collate_frames)),
                "stream": triples(DataLoader(stream, batch_size=4, num_workers=workers[1], collate_fn=collate_frames))}

    mine = {"rank": rank, "plain": run((1, 2)), "weighted": run((0, 0), **weighted)}
    everyone = [None] * world
    dist.all_gather_object(everyone, mine)
    dist.barrier()
    dist.destroy_process_group()
    with open(out, "w") as f:
        json.dump(everyone, f)
""")


@pytest.mark.skipif(shutil.which("ffmpeg") is None, reason="system ffmpeg not installed")
def test_two_gloo_ranks_share_one_weighted_mixture_disjointly(tmp_path, run_ranks):
    build_dataset(tmp_path / "a", SynthSpec(version="v3.0", episode_lengths=LENGTHS["a"], episodes_per_file=2,
                                            video_codec="h264"))
    build_dataset(tmp_path / "b", SynthSpec(version="v2.1", episode_lengths=LENGTHS["b"], video_codec="h264",
                                            video_keys=("observation.images.wrist",), seed=4))
    mix = tmp_path / "mix.json"
    mix.write_text(json.dumps({"dataset_mixture": {"datasets": [
        {"root": "a", "data_features_name_mapping": {"camera0": "observation.images.front"}},
        {"root": "b", "data_features_name_mapping": {"camera0": "observation.images.wrist"}}]}}))
    from lerobot_tools.loaders import EpisodeAwareSampler, EpisodeShuffleStream, MixtureDataset

    single = MixtureDataset(mix, cache_dir=tmp_path / "cache", decode_video=False)  # builds the caches once
    script = tmp_path / "worker.py"
    script.write_text(WORKER)
    init = f"file://{tmp_path / 'rendezvous'}"
    run_ranks(lambda r: [script, r, "2", init, mix, tmp_path / "cache", tmp_path / f"out{r}.json",
                         json.dumps(WEIGHTED)], timeout=240,
              finished=lambda r: (tmp_path / f"out{r}.json").exists())

    views = [json.loads((tmp_path / f"out{r}.json").read_text()) for r in range(2)]
    assert views[0] == views[1]
    by_rank = {v["rank"]: v for v in views[0]}
    every_frame = sorted((d, e, f) for d, key in enumerate("ab") for e, n in enumerate(LENGTHS[key]) for f in range(n))

    def as_triples(indices):
        d, e, f = single.locate(indices)
        return sorted(zip(d.tolist(), e.tolist(), f.tolist()))

    for loader in ("map", "stream"):
        a = [tuple(x) for x in by_rank[0]["plain"][loader]]
        b = [tuple(x) for x in by_rank[1]["plain"][loader]]
        assert not set(a) & set(b), f"{loader}: ranks overlap"
        assert sorted(a + b) == every_frame, f"{loader}: ranks do not cover the mixture"
        assert abs(len(a) - len(b)) <= 1
        # weighted: the two shares together are exactly the single-process epoch (draws repeat frames of the
        # oversampled dataset, so compare multisets), and each dataset got exactly its share
        wa = [tuple(x) for x in by_rank[0]["weighted"][loader]]
        wb = [tuple(x) for x in by_rank[1]["weighted"][loader]]
        plan = (list(EpisodeAwareSampler(single, seed=3, **WEIGHTED)) if loader == "map"
                else list(EpisodeShuffleStream(single, seed=3, **WEIGHTED).plan()))
        assert sorted(wa + wb) == as_triples(plan)
        assert Counter(t[0] for t in wa + wb) == {0: 12, 1: 48}
        assert abs(len(wa) - len(wb)) <= 1
