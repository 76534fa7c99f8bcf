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
@distributed_options('data files, balanced by bytes (a large dataset split by file)')
@click.command()
@click.argument("targets", nargs=-1, required=True, metavar="TARGET...")
@click.option("--row-group-mb", type=FiniteFloatRange(min=0, min_open=True), default=32.0, show_default=True,
              help="Row-group size limit (MiB, uncompressed); larger episodes are split into consecutive groups.")
@click.option("--compression", type=click.Choice(["keep", "zstd", "snappy"]), default="keep", show_default=True,
              help="keep = the codec each column already uses.")
@click.option("--dry-run", is_flag=True, help="Print the planned layout (row groups before/after per file); write nothing.")
@jobs_option
@click.option("--world-size", type=click.IntRange(min=1), default=None,
              help="Report whether the resulting shard count divides evenly across N ranks.")
@format_option
@click.option("--progress/--no-progress", default=None, help="Progress bar on stderr (default: on a terminal).")
@click.option("--verbose", "-v", is_flag=True,
              help="One line per file (default: more than 3 files with the same action are one summary line).")
@lock_timeout_option
def reshard(targets, row_group_mb, compression, dry_run, jobs, world_size, fmt, progress, verbose, lock_timeout,
            dist):
    """Rewrite data parquet into page-indexed row groups, one episode per row group.

    TARGET is a dataset folder, a repo id org/name[@revision] found in the local caches, or a
    mixture file. Files already episode-aligned, within --row-group-mb and page-indexed are skipped.
    Each rewrite goes to a temporary file in the same folder, is verified against the original
    (rows, schema and metadata, every column's values) and then atomically replaces it; file names,
    row order and metadata stay the same. Killed at any moment, every file is either its original
    or its complete, verified rewrite; the next run removes the temporary files and finishes.

    Exit status: 0 every file resharded or already conforming, 1 a file or dataset failed (it is
    left untouched; the others are still processed), 2 the tool could not run, 130/143 interrupted by
    Ctrl-C/SIGTERM (temporary files removed, every file its original or its verified rewrite).
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
