"""``lrtool diagnose-decode``: parse options, call :func:`lerobot_tools.diagnose.diagnose`, report, exit.

torch and torchcodec are imported only while the command runs (by the library), never at ``lrtool --help``.
"""

from __future__ import annotations


import click

from lerobot_tools.commands._common import FiniteFloatRange, fail, finish, format_option, jobs_option
from lerobot_tools.commands._distributed import distributed_options
from lerobot_tools.errors import LrtoolError


@distributed_options('video files probed; verdicts, decode tests and advice computed once, at the merge (--gpu MODEL)')
@click.command()
@click.argument("targets", nargs=-1, required=True, metavar="TARGET...")
@click.option("--device", default="cpu", show_default=True, metavar="cpu|cuda|cuda:N",
              help="cpu: header probe, NVDEC verdicts and a CPU decode test. cuda[:N]: also decode on that GPU "
                   "(torchcodec), report cpu_fallback and GPU vs CPU frames/s.")
@click.option("--gpu", "gpu", default=None, metavar="MODEL",
              help="Give NVDEC verdicts for this GPU instead of the visible one: H100, A100, A100-80GB:1g.10gb (MIG), "
                   "L4, A10G, B200, RTX 4090, cc8.6 ...")
@click.option("--all-files", is_flag=True, help="Read the decoder header of every video file, not the first per video feature.")
@click.option("--frames", type=click.IntRange(min=0), default=8, show_default=True, metavar="K",
              help="Frames decoded per stream group at random (seeded) positions; 0 = no decode test.")
@click.option("--target-fps", type=FiniteFloatRange(min=0, min_open=True), default=1000.0, show_default=True,
              help="Random frames/s the CPU worker estimate is for.")
@format_option
@jobs_option
@click.option("--progress/--no-progress", default=None, help="Progress bar on stderr (default: for mixtures on a terminal).")
def diagnose_decode(targets, device, gpu, all_files, frames, target_fps, fmt, jobs, progress, dist):
    """Say whether each video stream decodes on a GPU's NVDEC or must go to the CPU, and why.

    TARGET is a dataset folder, a repo id org/name[@revision] found in the local caches, or a mixture file.
    Every referenced video is checked for presence and integrity; the decoder header of the first file of
    each video feature (--all-files: every file) is compared with info.json; identical streams are grouped
    and judged against NVIDIA's NVDEC table for the target GPU (--gpu MODEL, else the visible GPU); K frames
    are decoded on the CPU (and with --device cuda on the GPU) to measure the cost. Each problem comes with
    what to do: CPU workers needed, the lrtool reencode command, or a GPU generation that decodes it.

    Exit status: 0 no errors; 1 errors (the requested device cannot decode; missing, placeholder, truncated
    or undecodable videos; unreadable targets); 2 the tool could not run (bad options, unreadable mixture).
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
