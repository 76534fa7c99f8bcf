"""Whether NVENC can encode here: open the encoder once on the GPU before a run starts, so a machine without an
NVENC engine (an A100 or an H100: NVIDIA's Video Encode and Decode GPU Support Matrix lists 0 NVENC for both) fails
with one line instead of one error per file."""

from __future__ import annotations

from lerobot_tools.errors import UsageError
from lerobot_tools.reencode.settings import nvenc_gpu_index

#: what to do when NVENC cannot open, said with every such error
ADVICE = ("NVENC needs an NVIDIA GPU with an encoder engine and a driver exposing it (NVIDIA_DRIVER_CAPABILITIES "
          "with 'video' in a container); A100/A30 and H100/H200 have none: use --device cpu there, or an NVENC GPU "
          "such as an L4")


def nvenc_open_options(device: str) -> dict[str, str]:
    """The options that open an NVENC encoder on ``device`` (its GPU index), as PyAV passes them to FFmpeg.

    Raises:
        UsageError: not a CUDA device string.
    """
    return {"gpu": str(nvenc_gpu_index(device)), "rc": "constqp", "qp": "23", "bf": "0"}


def check_nvenc(encoder: str, device: str) -> None:
    """Open ``encoder`` (``h264_nvenc`` ...) on ``device`` and encode one small frame.

    Raises:
        UsageError: it cannot open or encode (one line: FFmpeg's reason and :data:`ADVICE`).
    """
    import av
    import numpy as np

    options = nvenc_open_options(device)
    try:
        ctx = av.CodecContext.create(encoder, "w")
        ctx.width, ctx.height, ctx.pix_fmt = 256, 256, "yuv420p"
        from fractions import Fraction

        ctx.time_base = Fraction(1, 30)
        ctx.options = options
        ctx.open()
        frame = av.VideoFrame.from_ndarray(np.zeros((256, 256, 3), np.uint8), format="rgb24").reformat(
            format="yuv420p")
        frame.pts = 0
        ctx.encode(frame)
        ctx.encode(None)
    except Exception as exc:  # av.error.FFmpegError (no device, no NVENC engine, driver too old)
        msg = " ".join(str(exc).split()) or type(exc).__name__
        raise UsageError(f"{encoder} cannot encode on {device} ({msg}): {ADVICE}") from None
