"""``lrtool diagnose-decode``: parse options, call :func:`lerobot_tools.diagnose.diagnose`, report, exit.

torch and torchcodec are imported only while the command runs (by the library), never at ``lrtool --help``.
"""

from __future__ import annotations


import click

from lerobot_tools.commands._common import FiniteFloatRange, fail, finish, format_option, jobs_option
from lerobot_tools.commands._distributed import distributed_options
from lerobot_tools.errors import LrtoolError


@distributed_options("video files probed; verdicts and decode tests at the merge")
@click.command()
@click.argument("targets", nargs=-1, required=True, metavar="TARGET...")
@click.option("--device", default="cpu", show_default=True, metavar="cpu|cuda|cuda:N",
              help="cuda[:N]: also decode on that GPU (torchcodec).")
@click.option("--gpu", "gpu", default=None, metavar="MODEL",
              help="Judge for this GPU: H100, A100-80GB:1g.10gb, L4, cc8.6...")
@click.option("--all-files", is_flag=True, help="Read every video file's header, not one per feature.")
@click.option("--frames", type=click.IntRange(min=0), default=8, show_default=True, metavar="K",
              help="Frames decoded per stream group (0: none).")
@click.option("--target-fps", type=FiniteFloatRange(min=0, min_open=True), default=1000.0, show_default=True,
              metavar="FPS", help="Frames/s the CPU worker estimate is for.")
@format_option
@jobs_option
@click.option("--progress/--no-progress", default=None, help="Progress bar (default: mixtures on a terminal).")
def diagnose_decode(targets, device, gpu, all_files, frames, target_fps, fmt, jobs, progress, dist):
    """Say whether each video stream decodes on a GPU's NVDEC or must go to the CPU, why, and what to do.

    TARGET is a dataset folder, a repo id org/name[@revision] in the local caches, or a mixture file.
    Streams are judged against NVIDIA's NVDEC table for --gpu MODEL (else the visible GPU); K frames
    of each are decoded to measure the cost.

    Exit status: 0 no errors; 1 errors (the device cannot decode; missing, truncated or undecodable
    videos; unreadable targets); 2 the tool could not run.
    """
    from lerobot_tools.diagnose import DiagnoseOptions, diagnose, parse_device
    from lerobot_tools.video.nvdec import lookup_gpu

    try:
        parse_device(device)
        if gpu:
            lookup_gpu(gpu)  # unknown models fail before any probing
        options = DiagnoseOptions(device=device, gpu=gpu, all_files=all_files, frames=frames, target_fps=target_fps)
        if dist is not None:
            from lerobot_tools.commands._distributed import run_distributed_targets
            from lerobot_tools.distributed.diagnose_job import make_spec

            run_distributed_targets(dist, "diagnose-decode", targets, lambda resolved: make_spec(resolved, options),
                                    {"format": fmt})
        diag = diagnose(list(targets), options, jobs=jobs, progress=progress)
    except LrtoolError as exc:
        fail(str(exc))
    finish(diag, fmt)
