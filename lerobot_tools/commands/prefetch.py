"""``lrtool prefetch``: parse options, call :func:`lerobot_tools.prefetch.prefetch`, report, exit."""

from __future__ import annotations

from pathlib import Path

import click

from lerobot_tools.commands._common import FiniteFloatRange, fail, finish, format_option, interrupt_note
from lerobot_tools.commands._distributed import distributed_options


@interrupt_note("files already renamed into place are complete; partial downloads were discarded")
@distributed_options("repos, never split; a task takes --budget-fraction / tasks at once; lock written at "
                     "the merge")
@click.command()
@click.argument("mixture", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--local-dir-root", type=click.Path(file_okay=False, path_type=Path), default=None, metavar="DIR",
              help="Root of the copies (default: $HF_LEROBOT_HOME).")
@click.option("--max-workers", type=click.IntRange(min=1), default=16, show_default=True, metavar="N",
              help="Download threads.")
@click.option("--dry-run", is_flag=True, help="List what is missing; download nothing.")
@click.option("--meta-only", is_flag=True, help="Fetch only meta/ and the card (README.md).")
@click.option("--offline", is_flag=True, help="No requests: check local copies are complete.")
@click.option("--lock", "lock_path", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Commit lock file (default: MIXTURE with .lock).")
@click.option("--no-lock", is_flag=True, help="Neither read nor write a lock file.")
@click.option("--update-lock", is_flag=True, help="Resolve branches and tags again.")
@click.option("--api-requests", type=click.IntRange(min=1), default=None, metavar="N",
              help="Requests per window, \"api\" bucket.")
@click.option("--resolve-requests", type=click.IntRange(min=1), default=None, metavar="N",
              help="Requests per window, \"resolvers\" bucket.")
@click.option("--window-s", type=FiniteFloatRange(min=0, min_open=True, max=86400), default=300.0, show_default=True,
              metavar="S", help="Quota window.")
@click.option("--budget-fraction", type=FiniteFloatRange(min=0, min_open=True, max=1), default=1.0,
              show_default=True, metavar="F", help="Share of the quotas this process takes.")
@click.option("--max-wait-s", type=FiniteFloatRange(min=0, max=7 * 86400), default=900.0, show_default=True,
              metavar="S", help="Longest wait of one request.")
@format_option
@click.option("--progress/--no-progress", default=None, help="Progress bars (default: on a terminal).")
def prefetch(mixture, local_dir_root, max_workers, dry_run, meta_only, offline, lock_path, no_lock, update_lock,
             api_requests, resolve_requests, window_s, budget_fraction, max_wait_s, fmt, progress, dist):
    """Download every dataset MIXTURE names into the local layout, skipping what is already on disk.

    MIXTURE: lines `org/name[@revision] [episodes=0-9,12]`, or OpenTau JSON. Requests are paced
    within the Hub's rate limits (HF_ENDPOINT, HF_TOKEN); waits are announced on stderr.

    Exit status: 0 every entry complete, 1 some entry incomplete, 2 the tool could not run, 130/143
    interrupted (Ctrl-C/SIGTERM).
    """
    from lerobot_tools.errors import LrtoolError
    from lerobot_tools.prefetch.report import render_text
    from lerobot_tools.prefetch.run import PrefetchOptions, prefetch as run_prefetch

    if not mixture.is_file():
        fail(f"{mixture}: mixture file not found")
    options = PrefetchOptions(local_dir_root=local_dir_root, max_workers=max_workers, dry_run=dry_run,
                              offline=True if offline else None, lock_path=lock_path, use_lock=not no_lock,
                              update_lock=update_lock, api_requests=api_requests,
                              resolve_requests=resolve_requests, window_s=window_s, budget_fraction=budget_fraction,
                              max_wait_s=max_wait_s, progress=progress, meta_only=meta_only)
    if dist is not None:
        from lerobot_tools.commands._distributed import run_distributed
        from lerobot_tools.distributed.prefetch_job import make_spec

        concurrent = dist.world if dist.shard or dist.workers < 1 else min(dist.workers, dist.world)
        try:
            spec = make_spec(mixture, options, concurrent)
        except LrtoolError as exc:
            fail(str(exc))
        from lerobot_tools.prefetch.lock import default_lock_path

        lock = (lock_path if lock_path is not None else default_lock_path(mixture)) if not no_lock else None
        run_distributed(dist, "prefetch", spec, {"format": fmt}, {"lock": None if dist.shard else lock})
    try:
        report = run_prefetch(mixture, options)
    except LrtoolError as exc:
        fail(str(exc))
    finish(report, fmt, render=render_text)
