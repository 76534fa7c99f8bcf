"""``lrtool reshard``: parse options, call :mod:`lerobot_tools.reshard`, report, exit."""

from __future__ import annotations


import click

from lerobot_tools.commands._common import (
    FiniteFloatRange,
    fail,
    finish,
    format_option,
    interrupt_note,
    jobs_option,
    lock_timeout_option,
)
from lerobot_tools.commands._distributed import distributed_options
from lerobot_tools.errors import LrtoolError


@interrupt_note("each data file is either its original or its complete, verified rewrite; run again to finish")
@distributed_options("data files by bytes (a large dataset split by file)")
@click.command()
@click.argument("targets", nargs=-1, required=True, metavar="TARGET...")
@click.option("--row-group-mb", type=FiniteFloatRange(min=0, min_open=True), default=32.0, show_default=True,
              metavar="MB", help="Row-group size limit (MiB, uncompressed).")
@click.option("--compression", type=click.Choice(["keep", "zstd", "snappy"]), default="keep", show_default=True,
              metavar="CODEC", help="keep (each column's own), zstd or snappy.")
@click.option("--dry-run", is_flag=True, help="Print the planned row groups; write nothing.")
@jobs_option
@click.option("--world-size", type=click.IntRange(min=1), default=None, metavar="N",
              help="Say if the shard count divides across N ranks.")
@format_option
@click.option("--progress/--no-progress", default=None, help="Progress bar on stderr (default: on a terminal).")
@click.option("--verbose", "-v", is_flag=True, help="One line per file (default: alike files grouped).")
@lock_timeout_option
def reshard(targets, row_group_mb, compression, dry_run, jobs, world_size, fmt, progress, verbose, lock_timeout,
            dist):
    """Rewrite data parquet into page-indexed row groups, one episode per row group.

    TARGET is a dataset folder, a repo id org/name[@revision] in the local caches, or a mixture file.
    Conforming files are skipped. Each rewrite is verified against the original, then atomically
    replaces it: killed at any moment, every file is its original or its verified rewrite.

    Exit status: 0 every file resharded or already conforming, 1 a file or dataset failed (left
    untouched), 2 the tool could not run, 130/143 interrupted (Ctrl-C/SIGTERM).
    """
    from lerobot_tools.reshard import ReshardOptions
    from lerobot_tools.reshard import reshard as run_reshard

    options = ReshardOptions(row_group_mb=row_group_mb, compression=compression, dry_run=dry_run,
                             world_size=world_size, lock_timeout=lock_timeout)
    if dist is not None:
        from lerobot_tools.commands._distributed import run_distributed_targets
        from lerobot_tools.distributed.reshard_job import make_spec

        try:
            options.check()
        except LrtoolError as exc:
            fail(str(exc))
        run_distributed_targets(dist, "reshard", targets, lambda resolved: make_spec(resolved, options),
                                {"format": fmt, "verbose": verbose})
    try:
        run = run_reshard(targets, options, jobs=jobs, progress=progress)
    except LrtoolError as exc:
        fail(str(exc))
    finish(run, fmt, render=lambda result, out: result.render_text(out, verbose=verbose))
