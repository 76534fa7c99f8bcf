"""``lrtool smoke``: parse options, call :mod:`lerobot_tools.smoke`, report, exit."""

from __future__ import annotations

import click

from lerobot_tools.commands._common import FiniteFloatRange, fail, finish, format_option
from lerobot_tools.errors import LrtoolError


@click.command()
@click.argument("target", metavar="TARGET")
@click.option("--loader", "loader", type=click.Choice(["map", "stream", "all"]), default="all", show_default=True,
              help="map: FrameDataset + EpisodeAwareSampler; stream: EpisodeShuffleStream; all: both.")
@click.option("--batches", "-n", type=click.IntRange(min=1), default=10, show_default=True, help="Batches per loader (N).")
@click.option("--batch-size", "-b", type=click.IntRange(min=1), default=8, show_default=True, help="Samples per batch (B).")
@click.option("--num-workers", "-w", type=click.IntRange(min=0), default=0, show_default=True,
              help="DataLoader worker processes (W).")
@click.option("--world-size", "-r", type=click.IntRange(min=1), default=2, show_default=True,
              help="Simulated ranks for the disjoint/covering check (R).")
@click.option("--seed", type=int, default=0, show_default=True, help="Shuffle seed.")
@format_option
@click.option("--pool-size", type=click.IntRange(min=1), default=8, show_default=True,
              help="Episodes the stream interleaves.")
@click.option("--epoch-max-frames", type=click.IntRange(min=0), default=20_000, show_default=True,
              help="Read a full epoch (every frame exactly once) only on datasets up to this many frames.")
@click.option("--tolerance-s", type=FiniteFloatRange(min=0), default=1e-4, show_default=True,
              help="Allowed |query - frame pts| in seconds when decoding video.")
@click.option("--cache-dir", type=click.Path(file_okay=False), default=None,
              help="datasets Arrow cache folder (default: the datasets default, $HF_DATASETS_CACHE).")
@click.option("--per-dataset", is_flag=True,
              help="For a mixture file: smoke-test each entry on its own instead of the whole mixture.")
def smoke(target, loader, batches, batch_size, num_workers, world_size, seed, fmt, pool_size, epoch_max_frames,
          tolerance_s, cache_dir, per_dataset):
    """Run the bundled loaders over real data as an end-to-end smoke test.

    TARGET is a dataset folder, a repo id org/name[@revision] in the local caches, or a mixture file.
    validate runs first: errors that would break loading are reported as validate reports them and nothing
    is loaded. Then each loader runs through a torch DataLoader for N batches: shapes and dtypes against
    info.json, every video key decodes, task strings resolve, batches in the planned order; a full epoch
    of a small dataset covers every frame once; R simulated ranks are disjoint and cover the data; the
    same seed gives the same order. Reports samples/s, decoded frames/s, first-batch and p50/p95/p99 batch
    latency, and peak RSS of the process tree (workers included).

    A mixture file is loaded as one MixtureDataset, the way pretraining loads it: validate includes the
    cross-dataset checks, every batch is checked against the mixture's common schema, each dataset must be
    drawn in proportion to its weight, and a batch of each dataset is timed on its own. --per-dataset
    tests each entry on its own instead (with its episode subset).

    Exit status: 0 all checks passed, 1 a check failed (or validate found blocking errors), 2 could not run.
    """
    from lerobot_tools.smoke import SmokeOptions, SmokeRun, smoke as run_smoke

    options = SmokeOptions(
        loaders=("map", "stream") if loader == "all" else (loader,),
        batches=batches, batch_size=batch_size, num_workers=num_workers, world_size=world_size, seed=seed,
        pool_size=pool_size, epoch_max_frames=epoch_max_frames, tolerance_s=tolerance_s, cache_dir=cache_dir,
    )
    from lerobot_tools.smoke.mixture import is_mixture_target

    if is_mixture_target(target) and not per_dataset:
        from lerobot_tools.smoke.mixture import MixtureSmokeRun, smoke_mixture

        try:
            rep = smoke_mixture(target, options)
        except LrtoolError as exc:
            fail(str(exc))
        finish(MixtureSmokeRun(rep), fmt)
    try:
        reports = run_smoke([target], options)
    except LrtoolError as exc:
        fail(str(exc))
    finish(SmokeRun(reports), fmt)
