"""Re-encode one video file keeping every frame and its presentation timestamp, and verify the result.

:func:`encode_file` decodes the source with PyAV and encodes every decoded frame with its own PTS, in the source's
time base (the mp4 muxer keeps it as the track timescale, ``video_track_timescale``), so the new file's frame times
are the source's tick for tick: every ``from_timestamp``/``to_timestamp`` and ``timestamp`` stays valid
(docs/video-timestamps.md). The muxer hides the encoder's B-frame reorder delay with an edit list, as it does for
lerobot's own files. A few frames spread over the file are kept for the quality check.

:func:`verify_file` checks the new file before it may replace the source: its frame count and every frame's PTS
(from its sample tables, :mod:`lerobot_tools.video.timing`) against the source's within :data:`PTS_TOLERANCE_S`, that
every frame decodes (a full decode with PyAV), and that the kept frames' PSNR against the source's is at least the
floor (:data:`DEFAULT_PSNR_FLOOR`). Any failure raises :class:`VerifyError` with one line saying what differs.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path
from typing import Callable

import numpy as np

from lerobot_tools.reencode.settings import EncoderSettings
from lerobot_tools.video.mp4 import walk_mp4
from lerobot_tools.video.timing import FrameTimes, UnknownTimes, demux_frame_times, frame_times

#: the largest difference between a frame's PTS in the source and in the new file (seconds)
PTS_TOLERANCE_S = 1e-6
#: the default quality floor (dB): x264 at CRF 18 gives 40-50 dB on camera frames; a frame from another time, a
#: garbled or grey frame scores below 25 dB, so 35 dB refuses a broken encode and passes a good one
DEFAULT_PSNR_FLOOR = 35.0
#: frames kept for the PSNR check, spread evenly over the file (first and last included)
SAMPLES = 8


class VerifyError(Exception):
    """The new file does not reproduce the source (one line: what differs)."""


@dataclass
class Encoded:
    """What :func:`encode_file` did.

    Attributes:
        frames: frames encoded.
        samples: position (presentation order) -> the source frame there, uint8 ``(H, W, 3)`` RGB.
        seconds: encode time.
    """

    frames: int = 0
    samples: dict[int, np.ndarray] = field(default_factory=dict)
    seconds: float = 0.0


def source_times(path: Path) -> FrameTimes:
    """Every frame's PTS of the source (its sample tables; a packet demux when they are not enough).

    Raises:
        VerifyError: the times cannot be read at all.
    """
    try:
        return frame_times(walk_mp4(path, fragments=True))
    except Exception:  # noqa: BLE001 - UnknownTimes, or a table that defeats the model: ask FFmpeg
        pass
    try:
        return demux_frame_times(path)
    except UnknownTimes as exc:
        raise VerifyError(f"the source's frame times cannot be read: {exc}") from None


def sample_positions(count: int, n: int = SAMPLES) -> list[int]:
    """``n`` positions spread evenly over ``0..count-1`` (first and last included)."""
    if count <= 0:
        return []
    return sorted({round(i * (count - 1) / max(1, n - 1)) for i in range(min(n, count))})


def _open_output(dst: Path, settings: EncoderSettings, width: int, height: int, time_base: Fraction, rate):
    import av

    out = av.open(str(dst), "w", format="mp4", options={"movflags": "+faststart",
                                                           "video_track_timescale": str(time_base.denominator)})
    stream = out.add_stream(settings.encoder, rate=rate, options=dict(settings.options))
    stream.width, stream.height, stream.pix_fmt = width, height, settings.pix_fmt
    stream.time_base = time_base
    stream.codec_context.time_base = time_base
    stream.codec_context.thread_count = 0  # the encoder's own threads (x264: frame threads)
    return out, stream


def encode_file(src: Path, dst: Path, settings: EncoderSettings, *, count: int,
                tick: Callable[[int], None] | None = None, every: int = 64, limit: int | None = None) -> Encoded:
    """Encode every frame of ``src``'s first video stream into ``dst`` with ``settings``, each with its own PTS.

    Args:
        src: the source video.
        dst: the file to write (created; replaced if it exists).
        settings: the encoder and its options.
        count: the source's frame count (the sampled positions come from it).
        tick: called with a number of frames every ``every`` frames (progress).
        limit: stop after this many frames (a dry run's speed sample).

    Returns:
        :class:`Encoded`.

    Raises:
        VerifyError: a decoded frame has no timestamp (its time cannot be kept).
        av.error.FFmpegError, OSError: the source cannot be decoded or the output written.
    """
    import time

    import av
    from av.video.frame import PictureType

    t0 = time.perf_counter()
    res = Encoded()
    wanted = set(sample_positions(count))
    with av.open(str(src), mode="r", metadata_errors="replace") as inp:
        ist = inp.streams.video[0]
        ist.thread_type = "AUTO"
        tb = ist.time_base or Fraction(1, 90000)
        rate = ist.average_rate or ist.guessed_rate or 30
        cc = ist.codec_context
        out, ost = _open_output(dst, settings, cc.width, cc.height, Fraction(tb.numerator, tb.denominator), rate)
        pending = 0
        with out:
            for frame in inp.decode(ist):
                if limit is not None and res.frames >= limit:
                    break
                if frame.pts is None:
                    raise VerifyError(f"frame {res.frames} of the source has no timestamp: its time cannot be kept")
                if res.frames in wanted:
                    res.samples[res.frames] = frame.to_ndarray(format="rgb24")
                pts = frame.pts
                if frame.format.name != settings.pix_fmt:
                    frame = frame.reformat(format=settings.pix_fmt)
                frame.pts, frame.time_base = pts, tb
                frame.pict_type = PictureType.NONE  # the encoder decides the frame types (GOP)
                for packet in ost.encode(frame):
                    out.mux(packet)
                res.frames += 1
                pending += 1
                if tick is not None and pending >= every:
                    tick(pending)
                    pending = 0
            for packet in ost.encode():
                out.mux(packet)
        if tick is not None and pending:
            tick(pending)
    res.seconds = time.perf_counter() - t0
    return res


def psnr(a: np.ndarray, b: np.ndarray) -> float:
    """PSNR in dB of two uint8 images of one shape (``inf`` when identical)."""
    if a.shape != b.shape:
        return 0.0
    mse = float(np.mean((a.astype(np.float64) - b.astype(np.float64)) ** 2))
    return math.inf if mse == 0 else 10 * math.log10(255.0 ** 2 / mse)


@dataclass
class Verified:
    """What :func:`verify_file` established: frames, the largest PTS difference (s) and the lowest sampled PSNR."""

    frames: int
    max_pts_diff: float
    min_psnr: float


def verify_file(new: Path, src_times: FrameTimes, samples: dict[int, np.ndarray], *,
                psnr_floor: float = DEFAULT_PSNR_FLOOR) -> Verified:
    """Check ``new`` against the source (see the module docstring).

    Args:
        new: the re-encoded file.
        src_times: the source's frame times.
        samples: position -> source frame (RGB) for the PSNR check.
        psnr_floor: the lowest acceptable PSNR (dB) of a sampled frame.

    Returns:
        :class:`Verified`.

    Raises:
        VerifyError: truncated or unreadable, another frame count, a frame time off by more than
            :data:`PTS_TOLERANCE_S`, a frame that does not decode, or a sampled frame below the floor.
    """
    import av

    boxes = walk_mp4(new)
    if boxes.truncated or not boxes.has_moov:
        raise VerifyError(f"the new file is truncated ({boxes.truncated_box or 'no moov'} box cut short)")
    try:
        times = frame_times(boxes)
    except UnknownTimes:
        try:
            times = demux_frame_times(new)
        except UnknownTimes as exc:
            raise VerifyError(f"the new file's frame times cannot be read: {exc}") from None
    if times.count != src_times.count:
        raise VerifyError(f"the new file holds {times.count} frames, the source {src_times.count}")
    diff = np.abs(times.seconds - src_times.seconds)
    worst = float(diff.max()) if len(diff) else 0.0
    if worst > PTS_TOLERANCE_S:
        i = int(np.argmax(diff))
        raise VerifyError(f"frame {i} is at {times.seconds[i]:.6f} s in the new file, {src_times.seconds[i]:.6f} s in "
                          f"the source ({worst:.2e} s apart, more than {PTS_TOLERANCE_S:g} s)")
    decoded = 0
    low = math.inf
    try:
        with av.open(str(new), mode="r") as c:
            s = c.streams.video[0]
            s.thread_type = "AUTO"
            for frame in c.decode(s):
                if decoded in samples:
                    p = psnr(samples[decoded], frame.to_ndarray(format="rgb24"))
                    low = min(low, p)
                    if p < psnr_floor:
                        raise VerifyError(f"frame {decoded} has a PSNR of {p:.1f} dB against the source, below the "
                                          f"floor of {psnr_floor:g} dB")
                decoded += 1
    except VerifyError:
        raise
    except Exception as exc:  # av.error.FFmpegError ...
        raise VerifyError(f"the new file does not decode after {decoded} frames: {' '.join(str(exc).split())}") \
            from None
    if decoded != times.count:
        raise VerifyError(f"{decoded} of the new file's {times.count} frames decode")
    return Verified(decoded, worst, low)


def remove_quietly(path: Path) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass
