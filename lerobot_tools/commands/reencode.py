"""``lrtool reencode``: parse options, call :mod:`lerobot_tools.reencode`, report, exit."""

from __future__ import annotations

import click

from lerobot_tools.commands._common import FiniteFloatRange, fail, finish, format_option, interrupt_note, \
    jobs_option, lock_timeout_option
from lerobot_tools.commands._distributed import distributed_options
from lerobot_tools.errors import LrtoolError


@interrupt_note("each video file is either its original or its verified re-encode; run again to finish")
@distributed_options("video files by frames")
@click.command()
@click.argument("targets", nargs=-1, required=True, metavar="TARGET...")
@click.option("--codec", type=click.Choice(["h264", "hevc", "av1"]), default="h264", show_default=True,
              help="The codec to write.")
@click.option("--device", default="cpu", show_default=True, metavar="cpu|cuda|cuda:N",
              help="cuda[:N]: NVENC, else the CPU.")
@click.option("--only-undecodable", is_flag=True, help="Only the streams --gpu's NVDEC cannot decode.")
@click.option("--gpu", default=None, metavar="MODEL", help="GPU for --only-undecodable: H100, cc9.0...")
@click.option("--pix-fmt", default=None, metavar="FMT", help="Pixel format (default yuv420p, or yuv420p10le).")
@click.option("--gop", type=click.IntRange(1, 1000), default=None, metavar="N",
              help="Keyframe interval (default: the source's, <= 30).")
@click.option("--crf", type=click.IntRange(0, 63), default=None, metavar="N",
              help="Quality (default h264 18, hevc 22, av1 30).")
@click.option("--preset", default=None, metavar="NAME", help="Encoder preset (default: per encoder).")
@click.option("--psnr-floor", type=FiniteFloatRange(0, 100), default=35.0, show_default=True, metavar="DB",
              help="Refuse a re-encode below this PSNR.")
@click.option("--drop-originals", is_flag=True, help="Delete each original once replaced (no --undo).")
@click.option("--undo", is_flag=True, help="Restore the originals of earlier re-encodes.")
@click.option("--dry-run", is_flag=True, help="List files, frames and an estimated time.")
@jobs_option
@format_option
@click.option("--progress/--no-progress", default=None, help="Progress bar on stderr (default: on a terminal).")
@lock_timeout_option
def reencode(targets, codec, device, only_undecodable, gpu, pix_fmt, gop, crf, preset, psnr_floor, drop_originals,
             undo, dry_run, jobs, fmt, progress, lock_timeout, dist):
    """Re-encode the videos of datasets, keeping every frame and its timestamp.

    TARGET is a dataset folder, a repo id org/name[@revision] in the local caches, or a mixture file.
    Each new file is verified (frames, timestamps, --psnr-floor) before it replaces the original,
    which is kept for --undo; a re-run resumes.

    Exit status: 0 every file re-encoded, planned or already done; 1 a file or dataset failed (left
    untouched); 2 the tool could not run; 130/143 interrupted (Ctrl-C/SIGTERM).
    """
    from lerobot_tools.reencode import ReencodeOptions, undo_targets
    from lerobot_tools.reencode import reencode as run_reencode

    if undo:
        _undo(targets, fmt, undo_targets)
    options = ReencodeOptions(codec=codec, device=device, pix_fmt=pix_fmt, gop=gop, crf=crf, preset=preset,
                              only_undecodable=only_undecodable, gpu=gpu, psnr_floor=psnr_floor,
                              keep_originals=not drop_originals, dry_run=dry_run, lock_timeout=lock_timeout)
    try:
        options.check()
    except LrtoolError as exc:
        fail(str(exc))
    if dist is not None:
        from lerobot_tools.commands._distributed import run_distributed_targets
        from lerobot_tools.distributed.reencode_job import make_spec

        run_distributed_targets(dist, "reencode", targets, lambda resolved: make_spec(resolved, options),
                                {"format": fmt})
    try:
        run = run_reencode(targets, options, jobs=jobs, progress=progress)
    except LrtoolError as exc:
        fail(str(exc))
    finish(run, fmt)


def _undo(targets, fmt: str, undo_targets) -> None:
    import json
    import sys
    from dataclasses import asdict

    try:
        reports = undo_targets(list(targets))
    except LrtoolError as exc:
        fail(str(exc))
    if fmt == "json":
        click.echo(json.dumps({"undo": [asdict(r) for r in reports]}, indent=2))
    else:
        for r in reports:
            click.echo(r.target)
            if r.error:
                click.echo(f"  {r.error}")
            click.echo(f"  restored {len(r.restored)} original video file(s)"
                       + ("; meta/info.json restored" if r.info_restored else ""))
            for line in r.refused:
                click.echo(f"  refused: {line}")
    for r in reports:
        for line in ([r.error] if r.error else []) + r.refused:
            click.echo(f"lrtool: error: {r.target}: {line}", err=True)
    sys.exit(max((r.exit_status for r in reports), default=0))
