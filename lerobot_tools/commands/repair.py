"""``lrtool repair``: parse options, plan/apply (or undo) per dataset, report, exit."""

from __future__ import annotations


import click

from lerobot_tools.commands._common import fail, finish, format_option, interrupt_note, lock_timeout_option
from lerobot_tools.commands._distributed import distributed_options


@interrupt_note("a repair stopped mid-way was rolled back from its backup")
@distributed_options("datasets, each one transaction (never split)")
@click.command()
@click.argument("targets", nargs=-1, required=True, metavar="TARGET...")
@click.option("--dry-run", is_flag=True, help="Show the diffs and the outcome, tried on a shadow copy in "
              "$TMPDIR; write nothing in the dataset.")
@click.option("--only", multiple=True, metavar="IDS", help="Only repair these check IDs or prefixes, e.g. "
              "C,S005 (an info finding only when its ID is named in full). Repeatable.")
@click.option("--drop-undeclared", is_flag=True, help="S002: drop undeclared columns instead of declaring them.")
@click.option("--move-files", is_flag=True, help="F002: move the videos found elsewhere to where video_path "
              "points, instead of rewriting video_path.")
@click.option("--undo", is_flag=True, help="Restore the latest backup byte for byte (removing files the "
              "repair created), then delete it.")
@click.option("--verbose", "-v", is_flag=True, help="List every file, statistics cell, move and diff line.")
@format_option
@lock_timeout_option
def repair(targets, dry_run, only, drop_undeclared, move_files, undo, verbose, fmt, lock_timeout, dist):
    """Fix mechanically what validate finds: diff first, backup, --undo.

    TARGET is a dataset folder, a repo id found in $HF_LEROBOT_HOME, or a mixture file (not a
    huggingface_hub snapshot cache: its files are shared blobs). The plan is first tried on a shadow
    of the dataset and validated; a fix that would introduce an error is not applied. The files that
    change are backed up in .lrtool/backup/ first; every write is atomic and verified.

    Exit status: 0 every repairable finding fixed and no errors remain; 1 errors remain, or a repair
    failed or was rolled back; 2 the tool could not run; 130/143 interrupted (Ctrl-C/SIGTERM).
    """
    from lerobot_tools.checks.catalogue import expand_selection
    from lerobot_tools.errors import LrtoolError
    from lerobot_tools.repair import RepairOptions, repair_targets

    if undo and (only or drop_undeclared or move_files):
        fail("--undo cannot be combined with --only, --drop-undeclared or --move-files")
    try:
        sel = expand_selection(list(only))
    except ValueError as exc:
        fail(str(exc))
    named = {p.strip().upper() for item in only for p in item.split(",")} & (sel or set())
    options = RepairOptions(only=sel, drop_undeclared=drop_undeclared, move_files=move_files, named=named,
                            lock_timeout=lock_timeout)
    if dist is not None:
        from lerobot_tools.commands._distributed import run_distributed_targets
        from lerobot_tools.distributed.repair_job import make_spec

        run_distributed_targets(dist, "repair", targets,
                                lambda resolved: make_spec(resolved, options, dry_run=dry_run, undo=undo),
                                {"format": fmt})
    try:
        run = repair_targets(targets, options, dry_run=dry_run, undo=undo)
    except LrtoolError as exc:
        fail(str(exc))
    run.verbose = verbose
    finish(run, fmt)
