"""``lrtool validate`` and ``lrtool checks``: parse options, call the library, report, exit."""

from __future__ import annotations

from pathlib import Path

import click

from lerobot_tools.commands._common import FiniteFloatRange, fail, finish, format_option, jobs_option
from lerobot_tools.commands._distributed import distributed_options
from lerobot_tools.errors import LrtoolError


@distributed_options("datasets by bytes (a large one split by file)")
@click.command()
@click.argument("targets", nargs=-1, required=True, metavar="TARGET...")
@click.option("--deep", is_flag=True, help="Also scan timestamps (D001-D005) and all videos.")
@format_option
@click.option("--select", multiple=True, metavar="IDS", help="Only these check IDs or prefixes, e.g. S,T002.")
@click.option("--ignore", multiple=True, metavar="IDS", help="Never report these check IDs or prefixes.")
@jobs_option
@click.option("--tolerance-s", type=FiniteFloatRange(min=0), default=1e-4, show_default=True, metavar="S",
              help="Allowed |timestamp - k/fps| of frame k (--deep).")
@click.option("--row-group-mb", type=FiniteFloatRange(min=0.001), default=32.0, show_default=True, metavar="MB",
              help="Row-group size limit (R002).")
@click.option("--world-size", type=click.IntRange(min=1), default=None, metavar="N",
              help="Check the shard count divides across N ranks (R004).")
@click.option("--all-videos", is_flag=True, help="Read every video's header, not one per key.")
@click.option("--baseline", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Known findings: reported, not failing the run.")
@click.option("--write-baseline", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Record today's findings in this file.")
@click.option("--progress/--no-progress", default=None, help="Progress bar (default: mixtures on a terminal).")
@click.option("--chunk-size", type=click.IntRange(min=1), default=50, show_default=True, metavar="N",
              help="Action chunk of the policy to train (Q008).")
@click.option("--camera-frames", type=click.IntRange(min=0, max=64), default=0, show_default=True, metavar="N",
              help="Frames decoded per episode and camera for Q011-Q014 (--deep).")
@click.option("--threshold", "thresholds", multiple=True, metavar="NAME=VALUE",
              help="Set a content-check threshold, e.g. spike_k=20.")
@click.option("--write-keep", type=click.Path(dir_okay=False, path_type=Path), default=None, metavar="FILE",
              help="Write the episodes that pass as a mixture file.")
@click.option("--exclude", multiple=True, metavar="IDS",
              help="Findings that drop an episode from --write-keep.")
def validate(targets, deep, fmt, select, ignore, jobs, tolerance_s, row_group_mb, world_size, all_videos,
             baseline, write_baseline, progress, chunk_size, camera_frames, thresholds, write_keep, exclude, dist):
    """Check datasets for drift between info.json, parquet, tasks and files. Offline and read-only.

    TARGET is a dataset folder, a repo id org/name[@revision] in the local caches, or a mixture file.
    The IDS and NAME=VALUE options can be repeated.

    Exit status: 0 no errors, 1 errors found, 2 the tool could not run.
    """
    from lerobot_tools.checks.catalogue import expand_selection
    from lerobot_tools.checks.engine import ValidateOptions
    from lerobot_tools.report import ValidateResult
    from lerobot_tools.validate import apply_baseline, record_baseline, validate as run_validate

    try:
        sel = expand_selection(list(select))
        ign = expand_selection(list(ignore)) or set()
        excl = expand_selection(list(exclude))
        content = _content_options(chunk_size, thresholds)
    except ValueError as exc:
        fail(str(exc))
    options = ValidateOptions(deep=deep, tolerance_s=tolerance_s, select=sel, ignore=ign,
                              row_group_mb=row_group_mb, world_size=world_size, all_videos=all_videos,
                              content=content, camera_frames=camera_frames)
    if write_baseline is not None:  # refused before the run, not after it (a FIFO, a device, no such folder)
        from lerobot_tools._io import check_output_file

        try:
            check_output_file(write_baseline, "baseline file")
        except LrtoolError as exc:
            fail(str(exc))
    if dist is not None:
        if write_keep is not None:
            fail("--write-keep needs every dataset's episodes in one process; it cannot be used with --shard or "
                 "--executor")
        _run_distributed(dist, targets, options, fmt, baseline, write_baseline)
    try:
        resolved: list = []
        reports = run_validate(targets, options, jobs=jobs, progress=progress, resolved=resolved)
        if write_keep is not None:
            from lerobot_tools.keeplist import write_keep as write_keep_list

            try:
                kept, dropped = write_keep_list(write_keep, resolved, reports,
                                                frozenset(excl) if excl is not None else None)
            except OSError as exc:
                fail(f"{write_keep}: cannot be written ({exc.strerror or exc})")
            click.echo(f"wrote {write_keep}: {kept} episode(s) kept, {dropped} excluded", err=True)
        if write_baseline is not None:
            n = record_baseline(reports, write_baseline)
            click.echo(f"recorded {n} finding(s) in {write_baseline}", err=True)
        if baseline is not None:
            apply_baseline(reports, baseline)
    except LrtoolError as exc:
        fail(str(exc))
    finish(ValidateResult(reports), fmt)


def _content_options(chunk_size: int, thresholds: tuple[str, ...]):
    """The :class:`~lerobot_tools.checks.content.options.ContentOptions` of ``--chunk-size`` and ``--threshold``.

    Raises:
        ValueError: a ``--threshold`` that is not ``NAME=VALUE`` with a known name and a number in range.
    """
    from dataclasses import fields, replace

    from lerobot_tools.checks.content.options import ContentOptions
    from lerobot_tools.errors import UsageError

    known = {f.name: f.type for f in fields(ContentOptions)}
    values: dict = {"chunk_size": chunk_size}
    for item in thresholds:
        name, eq, raw = item.partition("=")
        name = name.strip().replace("-", "_")
        if not eq or name not in known or name == "chunk_size":
            raise ValueError(f"--threshold {item!r}: expected NAME=VALUE with NAME one of "
                             f"{', '.join(n for n in known if n != 'chunk_size')}")
        try:
            values[name] = int(raw) if known[name] in ("int", int) else float(raw)
        except ValueError:
            raise ValueError(f"--threshold {item!r}: {raw!r} is not a number") from None
    opts = replace(ContentOptions(), **values)
    try:
        opts.check()
    except UsageError as exc:
        raise ValueError(f"--threshold: {exc}") from None
    return opts


def _run_distributed(dist, targets, options, fmt, baseline, write_baseline):
    import os

    from lerobot_tools.commands._distributed import run_distributed
    from lerobot_tools.dataset.targets import merge_identical, resolve_target
    from lerobot_tools.distributed.validate_job import make_spec

    try:
        groups = [(arg, merge_identical(resolve_target(arg))) for arg in targets]
    except LrtoolError as exc:
        fail(str(exc))
    resolved = [t for _, ts in groups for t in ts]
    known = None
    if baseline is not None:  # its findings go into the run folder, never its path
        from lerobot_tools.report import read_baseline

        try:
            known = sorted(read_baseline(baseline))
        except LrtoolError as exc:
            fail(str(exc))
    render = {"format": fmt, "baseline_known": known}
    outputs = {"write_baseline": os.path.abspath(write_baseline) if write_baseline else None}
    run_distributed(dist, "validate", make_spec(resolved, options, [(a, len(ts)) for a, ts in groups]), render,
                    outputs)


@click.command()
@click.option("--format", "fmt", type=click.Choice(["text", "json", "markdown"]), default="text", show_default=True)
@click.argument("ids", nargs=-1)
def checks(fmt, ids):
    """List the check catalogue, or document the given check IDs (e.g. `lrtool checks S002`)."""
    from lerobot_tools.checks import catalogue

    try:
        wanted = catalogue.expand_selection(list(ids))
    except ValueError as exc:
        fail(str(exc))
    entries = [c for c in catalogue.CATALOGUE.values() if wanted is None or c.id in wanted]
    if fmt == "markdown":
        click.echo(catalogue.markdown(), nl=False)
    elif fmt == "json":
        import json

        click.echo(json.dumps([c.__dict__ for c in entries], indent=2))
    elif ids:
        for c in entries:
            click.echo(f"{c.id} {c.name} [{c.severity}{', --deep' if c.deep else ''}]\n  {c.title}\n"
                       f"  What: {c.what}\n  Why it breaks training: {c.why}\n  Fix: {c.fix}\n")
    else:
        for c in entries:
            click.echo(f"{c.id}  {c.severity:<7}  {c.name:<26} {c.title}{' (--deep)' if c.deep else ''}")
