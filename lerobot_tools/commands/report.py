"""``lrtool report``: the merged result of a distributed run (``--shard`` parts or an ``--executor`` run)."""

from __future__ import annotations

from pathlib import Path

import click

from lerobot_tools.commands._common import FiniteFloatRange, fail

#: exit status of ``lrtool report DIR`` while tasks are still running
NOT_COMPLETE = 3


@click.command()
@click.argument("paths", nargs=-1, required=True, metavar="[merge] PATH...")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default=None,
              help="Default: what the launching command asked for.")
@click.option("--wait", is_flag=True, help="Block until every task has written its part.")
@click.option("--timeout-s", type=FiniteFloatRange(min=0), default=86400.0, show_default=True, metavar="S",
              help="Longest --wait.")
@click.option("--poll-s", type=FiniteFloatRange(min=0.05), default=10.0, show_default=True, metavar="S",
              help="Seconds between checks while waiting.")
@click.option("--write-baseline", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="validate runs: record the merged findings here.")
@click.option("--lock", "lock_path", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="prefetch runs: write the lock file here.")
def report(paths, fmt, wait, timeout_s, poll_s, write_baseline, lock_path):
    """Print the merged report of a scale-out run, with the exit status one ordinary run gives.

    \b
    lrtool report DIR                 the run in DIR (its --logging-dir, or
                                      the folder of its --part-out files)
    lrtool report DIR --wait          ... once every task has finished
    lrtool report merge PARTS...|DIR  merge these part files (or every
                                      part-*.json in DIR) now

    Every part must belong to the run's plan.json. Files outside the run folder are written only
    when named here: --write-baseline (validate), --lock (prefetch).

    Exit status: the command's own (validate: 0 no errors, 1 errors found); 2 the tool could not run
    (unreadable or foreign parts, a task ended without its part); 3 the run is not complete yet.
    """
    from lerobot_tools.errors import LrtoolError

    merge_only = paths[0] == "merge"
    targets = [Path(p) for p in (paths[1:] if merge_only else paths)]
    if not targets:
        fail("lrtool report merge needs part files or a folder of them")
    if not merge_only:
        if len(targets) != 1:
            fail("lrtool report takes one run folder (or: lrtool report merge PARTS...)")
        _wait_for(targets[0], wait, timeout_s, poll_s)
    from lerobot_tools.commands._distributed import report_merged
    from lerobot_tools.distributed.parts import merge_parts, run_plan

    try:
        merged = merge_parts(targets)
        _, plan_dir = run_plan(targets)
    except LrtoolError as exc:
        fail(str(exc))
    folder = plan_dir or (targets[0] if targets[0].is_dir() else targets[0].parent)
    report_merged(merged, folder, {"write_baseline": write_baseline, "lock": lock_path}, fmt=fmt)


def _wait_for(run_dir: Path, wait: bool, timeout_s: float, poll_s: float) -> None:
    """Return when the run in ``run_dir`` is complete; otherwise print why not and exit (2 or 3)."""
    from lerobot_tools.distributed.plan import PLAN_FILE
    from lerobot_tools.distributed.rundir import run_state, wait_complete
    from lerobot_tools.errors import LrtoolError

    if not (run_dir / PLAN_FILE).exists():
        fail(f"{run_dir}: no {PLAN_FILE}: not a run folder (to merge part files: lrtool report merge PARTS...)")
    try:
        if wait:
            last = [-1]

            def tell(state):
                done = state.world - len(state.missing)
                if done != last[0]:
                    click.echo(f"lrtool: waiting: {done} of {state.world} task(s) done", err=True)
                    last[0] = done

            state = wait_complete(run_dir, timeout_s, poll_s=poll_s, on_poll=tell)
        else:
            state = run_state(run_dir)
    except LrtoolError as exc:
        fail(str(exc))
    if state.complete:
        return
    done = state.world - len(state.missing)
    shown = ", ".join(map(str, state.missing[:12])) + (" ..." if len(state.missing) > 12 else "")
    if state.jobs_alive is False:
        fail(f"{run_dir}: the run's SLURM jobs have ended with {done} of {state.world} task(s) done; rank(s) {shown} "
             f"wrote no part (see {run_dir}/logs/task_RRRRR.log); run the launching command again to retry them")
    waited = f" after waiting {timeout_s:g} s" if wait else ""
    fail(f"{run_dir}: not complete{waited}: {done} of {state.world} task(s) done (missing rank(s) {shown}); "
         "run again later, or with --wait", status=NOT_COMPLETE)
