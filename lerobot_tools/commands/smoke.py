"""``lrtool smoke``: parse options, call :mod:`lerobot_tools.smoke`, report, exit."""

from __future__ import annotations

import click

from lerobot_tools.commands._common import FiniteFloatRange, fail, finish, format_option
from lerobot_tools.errors import LrtoolError


@click.command()
@click.argument("target", metavar="TARGET")
@click.option("--loader", "loader", type=click.Choice(["map", "stream", "all"]), default="all", show_default=True,
              help="map: FrameDataset; stream: EpisodeShuffleStream.")
@click.option("--batches", "-n", type=click.IntRange(min=1), default=10, show_default=True, metavar="N",
              help="Batches per loader.")
@click.option("--batch-size", "-b", type=click.IntRange(min=1), default=8, show_default=True, metavar="B",
              help="Samples per batch.")
@click.option("--num-workers", "-w", type=click.IntRange(min=0), default=0, show_default=True, metavar="W",
              help="DataLoader worker processes.")
@click.option("--world-size", "-r", type=click.IntRange(min=1), default=2, show_default=True, metavar="R",
              help="Simulated ranks (disjoint, covering).")
@click.option("--seed", type=int, default=0, show_default=True, help="Shuffle seed.")
@format_option
@click.option("--pool-size", type=click.IntRange(min=1), default=8, show_default=True, metavar="N",
              help="Episodes the stream mixes.")
@click.option("--epoch-max-frames", type=click.IntRange(min=0), default=20_000, show_default=True, metavar="N",
              help="Full-epoch check up to this many frames.")
@click.option("--tolerance-s", type=FiniteFloatRange(min=0), default=1e-4, show_default=True, metavar="S",
              help="Allowed |query - frame pts| (video).")
@click.option("--cache-dir", type=click.Path(file_okay=False), default=None, metavar="DIR",
              help="Arrow cache (default: $HF_DATASETS_CACHE).")
@click.option("--per-dataset", is_flag=True, help="Mixture: test each entry on its own.")
def smoke(target, loader, batches, batch_size, num_workers, world_size, seed, fmt, pool_size, epoch_max_frames,
          tolerance_s, cache_dir, per_dataset):
    """Run the bundled loaders over real data as an end-to-end smoke test.

    TARGET is a dataset folder, a repo id org/name[@revision] in the local caches, or a mixture file
    (loaded as one MixtureDataset). validate runs first; then each loader reads N batches through a
    torch DataLoader, checked against info.json and R simulated ranks, timed, with peak memory.

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
