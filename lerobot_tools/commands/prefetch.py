"""``lrtool prefetch``: parse options, call :func:`lerobot_tools.prefetch.prefetch`, report, exit."""

from __future__ import annotations

from pathlib import Path

import click

from lerobot_tools.commands._common import FiniteFloatRange, fail, finish, format_option, interrupt_note
from lerobot_tools.commands._distributed import distributed_options


@interrupt_note("files already renamed into place are complete; partial downloads were discarded")
@distributed_options('repos, never split; each task takes --budget-fraction / tasks at once; lock file written at the merge')
@click.command()
@click.argument("mixture", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--local-dir-root", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Put each repo in DIR/<repo_id> (default: $HF_LEROBOT_HOME/<repo_id>, where LeRobot loaders look).")
@click.option("--max-workers", type=click.IntRange(min=1), default=16, show_default=True,
              help="Download threads.")
@click.option("--dry-run", is_flag=True, help="Resolve and list only: report what is missing, write and download nothing.")
@click.option("--meta-only", is_flag=True,
              help="Fetch only meta/ and the dataset card (README.md) of every repo and mark the copy, so that "
                   "`lrtool validate --write-keep` can decide which episodes to download (docs/curation.md).")
@click.option("--offline", is_flag=True,
              help="Make no request (also when HF_HUB_OFFLINE=1): report whether each local copy is complete "
                   "against its cached tree listing.")
@click.option("--lock", "lock_path", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Lock file with the resolved commit of every entry (default: beside the mixture, "
                   "mixture.txt -> mixture.lock).")
@click.option("--no-lock", is_flag=True, help="Neither read nor write a lock file.")
@click.option("--update-lock", is_flag=True, help="Resolve branches and tags again even if the lock has their commit.")
@click.option("--api-requests", type=click.IntRange(min=1), default=None,
              help="Requests per window for the Hub's \"api\" bucket (revision resolves, tree listing pages). "
                   "Default 500 anonymous, 1000 with a token, or what the server advertises.")
@click.option("--resolve-requests", type=click.IntRange(min=1), default=None,
              help="Requests per window for the Hub's \"resolvers\" bucket (file downloads). "
                   "Default 3000 anonymous, 5000 with a token, or what the server advertises.")
@click.option("--window-s", type=FiniteFloatRange(min=0, min_open=True, max=86400), default=300.0, show_default=True,
              help="Length of the rate-limit window of those quotas, in seconds (the Hub's is 5 minutes).")
@click.option("--budget-fraction", type=FiniteFloatRange(min=0, min_open=True, max=1), default=1.0,
              show_default=True,
              help="Share of every bucket this process takes, e.g. 0.25 when 4 processes prefetch at once "
                   "from one address or token.")
@click.option("--max-wait-s", type=FiniteFloatRange(min=0, max=7 * 86400), default=900.0, show_default=True,
              help="Longest one request may wait for rate limits and retries; a server asking for more "
                   "makes that request fail with a clear message.")
@format_option
@click.option("--progress/--no-progress", default=None,
              help="Progress bars for files and bytes on stderr (default: when stderr is a terminal).")
def prefetch(mixture, local_dir_root, max_workers, dry_run, meta_only, offline, lock_path, no_lock, update_lock,
             api_requests, resolve_requests, window_s, budget_fraction, max_wait_s, fmt, progress, dist):
    """Download every dataset MIXTURE names into the local layout, skipping what is already on disk.

    MIXTURE is a mixture file (lines `org/name[@revision] [episodes=0-9,12]`, or OpenTau JSON).
    Revisions may be a branch, a tag (v2.1, v3.0) or a 40-hex commit SHA. Episode subsets fetch only
    meta/ and the data/video files that hold those episodes; --meta-only fetches meta/ and the card only
    (decide with `lrtool validate MIXTURE --write-keep keep.txt`, then `lrtool prefetch keep.txt`). The endpoint is HF_ENDPOINT (default
    https://huggingface.co); the token is HF_TOKEN or the stored one, sent but never printed.

    Requests are paced per Hub rate-limit bucket ("api": resolves and listings; "resolvers": downloads),
    adapting to the RateLimit / RateLimit-Policy headers the server sends; waits are announced on stderr
    and bounded by --max-wait-s.

    Exit status: 0 every entry complete, 1 some entry incomplete, 2 the tool could not run, 130/143
    interrupted by Ctrl-C/SIGTERM.
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
