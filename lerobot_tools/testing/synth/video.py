"""Video encoding with the system ``ffmpeg``: one episode per mp4 (:func:`encode_video`); stream-copy joins with
PyAV, as lerobot does (:func:`concat_videos`)."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterable, Sequence
from pathlib import Path

import numpy as np

from lerobot_tools.errors import LrtoolError
from lerobot_tools.video.codecs import ENCODERS, canonical_codec

def _ffmpeg(ffmpeg: str) -> str:
    exe = shutil.which(ffmpeg)
    if exe is None:
        raise LrtoolError(
            f"the '{ffmpeg}' executable was not found on PATH; install FFmpeg (with libx264, "
            "libsvtav1, libx265) to write videos, or set video_codec=None"
        )
    return exe


def _run_ffmpeg(cmd: list[str], out: Path, stdin_chunks: Iterable[bytes] | None = None) -> None:
    """Run ffmpeg, feeding ``stdin_chunks``; raise LrtoolError with ffmpeg's last stderr line."""
    with tempfile.TemporaryFile() as err:
        proc = subprocess.Popen(
            cmd,
            stdin=subprocess.PIPE if stdin_chunks is not None else subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=err,
        )
        broken = False
        try:
            if stdin_chunks is not None:
                assert proc.stdin is not None
                try:
                    for chunk in stdin_chunks:
                        proc.stdin.write(chunk)
                except BrokenPipeError:
                    broken = True
                finally:
                    try:
                        proc.stdin.close()
                    except BrokenPipeError:
                        broken = True
            rc = proc.wait()
        except BaseException:
            proc.kill()
            proc.wait()
            raise
        if rc != 0 or broken or not out.is_file():
            err.seek(0)
            lines = [ln for ln in err.read().decode("utf-8", "replace").splitlines() if ln.strip()]
            last = lines[-1].strip() if lines else f"exit status {rc}"
            raise LrtoolError(f"ffmpeg failed to write the video: {last}", out)


def encode_video(
    path: Path,
    frames: np.ndarray | Iterable[np.ndarray],
    fps: int,
    codec: str,
    gop: int = 2,
    pix_fmt: str = "yuv420p",
    crf: int = 30,
    ffmpeg: str = "ffmpeg",
) -> None:
    """Encode RGB frames into an mp4 with the system ``ffmpeg`` (raw RGB piped to its stdin).

    Encoder settings follow lerobot's defaults (``VideoEncoderConfig``): ``g=gop``, ``crf``,
    ``pix_fmt``; SVT-AV1 at ``preset 12``; ``+faststart``. One video stream, no audio, constant
    frame rate ``fps`` (time base ``1/fps`` on input).

    Args:
        path: output ``.mp4`` path; parent folders are created; an existing file is replaced.
        frames: ``uint8`` array ``(T, H, W, 3)``, or an iterable of ``(H, W, 3)`` / ``(t, H, W, 3)``
            arrays (streamed, so long videos need not be held in memory).
        fps: frames per second (int > 0).
        codec: ``"h264"``, ``"av1"`` or ``"hevc"``, in any spelling :func:`~lerobot_tools.video.codecs.canonical_codec`
            knows (``"libx264"``, ``"h265"`` ...); encoded with :data:`~lerobot_tools.video.codecs.ENCODERS`.
        gop: keyframe interval in frames.
        pix_fmt: output pixel format (``yuv420p``).
        crf: constant rate factor.
        ffmpeg: the ffmpeg executable.

    Raises:
        ValueError: unknown codec, empty input, or frames that are not uint8 RGB of one size.
        LrtoolError: ffmpeg is missing or fails (message = ffmpeg's last error line).
    """
    encoder = ENCODERS.get(canonical_codec(codec) or "")
    if encoder is None:
        raise ValueError(f"encode_video: unknown codec {codec!r}; use one of {sorted(ENCODERS)} (any spelling, "
                         "e.g. libx264)")
    exe = _ffmpeg(ffmpeg)
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)

    if isinstance(frames, np.ndarray):
        if frames.ndim != 4:
            raise ValueError(f"encode_video: frames must be (T, H, W, 3), got {frames.shape}")
        it: Iterable[np.ndarray] = [frames]
    else:
        it = frames
    it = iter(it)
    first = next(it, None)
    if first is None:
        raise ValueError("encode_video: no frames")
    first = first if first.ndim == 4 else first[None]
    if first.dtype != np.uint8 or first.shape[-1] != 3 or first.shape[0] == 0:
        raise ValueError(f"encode_video: frames must be uint8 RGB, got {first.dtype} {first.shape}")
    H, W = first.shape[1:3]

    def chunks():
        yield np.ascontiguousarray(first).tobytes()
        for arr in it:
            arr = arr if arr.ndim == 4 else arr[None]
            if arr.dtype != np.uint8 or arr.shape[1:] != (H, W, 3):
                raise ValueError(f"encode_video: frame of shape {arr.shape} after frames of {(H, W, 3)}")
            yield np.ascontiguousarray(arr).tobytes()

    codec_args = ["-c:v", encoder, "-crf", str(crf), "-g", str(gop)]
    if encoder == "libsvtav1":
        codec_args += ["-preset", "12"]
    elif encoder == "libx265":
        codec_args += ["-x265-params", "log-level=error"]
    cmd = [
        exe, "-hide_banner", "-loglevel", "error", "-y",
        "-f", "rawvideo", "-pix_fmt", "rgb24", "-s", f"{W}x{H}", "-r", str(int(fps)), "-i", "-",
        *codec_args, "-pix_fmt", pix_fmt, "-an", "-movflags", "+faststart", str(path),
    ]  # fmt: skip
    _run_ffmpeg(cmd, path, chunks())


def concat_videos(out: Path, parts: Sequence[Path]) -> None:
    """Join mp4 files by stream copy through PyAV's concat demuxer, as lerobot 0.4.4 ``concatenate_video_files``
    (``datasets/video_utils.py``) does.

    The parts must share codec, resolution and pix_fmt. Each part keeps its own keyframes, so every part starts on a
    keyframe in the output, and part *k* starts at the summed durations of parts ``0 … k-1``. The FFmpeg that PyAV
    carries (libavformat 62, FFmpeg 8) keeps every packet's timestamp in the stream's own time base, so an episode of
    ``n`` frames at an integer ``fps`` moves the next one by exactly ``n`` frame periods (the system FFmpeg 5.1's
    concat demuxer rounds each part's start to microseconds: steps of 33.66 ms at the joins of a 30 fps file).
    The output is written to a temporary file beside ``out`` and renamed over it.

    Raises:
        ValueError: no parts.
        LrtoolError: a part cannot be read or the output cannot be written (PyAV's message).
    """
    import av  # lazily: only v3.0 videos need it

    out = Path(out)
    if not parts:
        raise ValueError("concat_videos: no parts")
    out.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.NamedTemporaryFile("w", suffix=".ffconcat", delete=False, dir=out.parent) as f:
        f.write("ffconcat version 1.0\n")
        for p in parts:
            q = str(Path(p).resolve()).replace("'", "'\\''")
            f.write(f"file '{q}'\n")
        listing = f.name
    tmp = out.with_name(f".{out.name}.concat.mp4")
    try:
        with av.open(listing, "r", format="concat", options={"safe": "0"}) as src, \
                av.open(str(tmp), "w", format="mp4", options={"movflags": "faststart"}) as dst:
            streams = {}
            for s in src.streams:
                if s.type == "video":
                    streams[s.index] = dst.add_stream_from_template(template=s, opaque=True)
                    streams[s.index].time_base = s.time_base
            for packet in src.demux():
                if packet.dts is None or packet.stream.index not in streams:  # flush packets, other streams
                    continue
                packet.stream = streams[packet.stream.index]
                dst.mux(packet)
        os.replace(tmp, out)
    except (av.FFmpegError, OSError) as exc:
        raise LrtoolError(f"joining {len(parts)} episode videos failed: {exc}", out) from exc
    finally:
        os.unlink(listing)
        tmp.unlink(missing_ok=True)
