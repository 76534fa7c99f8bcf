"""Two real processes joined by torch.distributed (gloo, CPU) each run the sampler and the stream.

Neither loader is told its rank: both read it from torch.distributed. The processes gather what they
loaded with all_gather_object; the test asserts the two ranks' frames are disjoint and cover the dataset,
for the map-style loader and for the stream, and that every decoded video frame is the right one.
"""

from __future__ import annotations

import json
import shutil
import textwrap

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("datasets")
pytest.importorskip("torchcodec")
if not torch.distributed.is_available():
    pytest.skip("torch.distributed is not available", allow_module_level=True)

from lerobot_tools.testing.synth import SynthSpec, build_dataset  # noqa: E402

LENGTHS = (8, 5, 11, 6, 9, 7)  # 46 frames: ranks of 23

WORKER = textwrap.dedent("""
    import json, sys
    import torch.distributed as dist
    from torch.utils.data import DataLoader
    from lerobot_tools.loaders import EpisodeAwareSampler, EpisodeShuffleStream, FrameDataset, collate_frames
    from lerobot_tools.testing.synth import read_frame_id

    rank, world, init, root, cache, out = int(sys.argv[1]), int(sys.argv[2]), *sys.argv[3:]
    dist.init_process_group("gloo", init_method=init, rank=rank, world_size=world)
    ds = FrameDataset(root, cache_dir=cache, frames_dtype="uint8")

    def pairs(loader):
        got = []
        for b in loader:
            for k in range(len(b["index"])):
                pair = (int(b["episode_index"][k]), int(b["frame_index"][k]))
                assert read_frame_id(b["observation.images.front"][k].numpy()) == pair, pair
                got.append(pair)
        return got

    sampler = EpisodeAwareSampler(ds, seed=3)
    stream = EpisodeShuffleStream(ds, seed=3, batch_size=4, pool_size=3)
    assert (sampler.rank, sampler.world_size) == (rank, world)
    assert (stream.rank, stream.world_size) == (rank, world)
    mine = {
        "rank": rank,
        "map": pairs(DataLoader(ds, batch_size=4, sampler=sampler, num_workers=1, collate_fn=collate_frames)),
        "stream": pairs(DataLoader(stream, batch_size=4, num_workers=2, collate_fn=collate_frames)),
    }
    everyone = [None] * world
    dist.all_gather_object(everyone, mine)
    dist.barrier()
    dist.destroy_process_group()
    with open(out, "w") as f:
        json.dump(everyone, f)
""")


@pytest.mark.skipif(shutil.which("ffmpeg") is None, reason="system ffmpeg not installed")
def test_two_gloo_ranks_split_the_dataset_disjointly_and_completely(tmp_path, run_ranks):
    root = tmp_path / "ds"
    build_dataset(root, SynthSpec(version="v3.0", episode_lengths=LENGTHS, episodes_per_file=3, video_codec="h264"))
    from lerobot_tools.loaders import FrameDataset

    FrameDataset(root, cache_dir=tmp_path / "cache", decode_video=False)  # build the shared Arrow cache once
    script = tmp_path / "worker.py"
    script.write_text(WORKER)
    init = f"file://{tmp_path / 'rendezvous'}"
    run_ranks(lambda r: [script, r, "2", init, root, tmp_path / "cache", tmp_path / f"out{r}.json"], timeout=180,
              finished=lambda r: (tmp_path / f"out{r}.json").exists())

    views = [json.loads((tmp_path / f"out{r}.json").read_text()) for r in range(2)]
    assert views[0] == views[1]  # both ranks gathered the same picture
    by_rank = {v["rank"]: v for v in views[0]}
    everything = sorted((e, f) for e, n in enumerate(LENGTHS) for f in range(n))
    for loader in ("map", "stream"):
        a = [tuple(x) for x in by_rank[0][loader]]
        b = [tuple(x) for x in by_rank[1][loader]]
        assert len(a) == len(set(a)) and len(b) == len(set(b))
        assert not set(a) & set(b), f"{loader}: ranks overlap"
        assert sorted(a + b) == everything, f"{loader}: ranks do not cover the dataset"
        assert abs(len(a) - len(b)) <= 1
