"""The real decode test: K frames at seeded random positions, on CPU and (when possible) on a CUDA device.

Decoding is done the way LeRobot's loaders do it, with torchcodec ``VideoDecoder(path, device=...,
seek_mode="approximate")`` and one ``get_frame_at(i)`` per sample, frames in random (not sorted) order,
so each one pays its seek and the decode of its GOP up to the frame (docs/video-decoding.md#decode-cost: random
access costs about GOP/2 extra decoded frames per sample). When torchcodec cannot be imported, PyAV decodes the same
frames (seek to the keyframe before each target, decode to it, convert to RGB) so a CPU cost is still measured.

For each device a warm-up decoder opens the file and decodes the first target frame (CUDA context and
library start-up are not timed); then a fresh decoder is opened (``open_ms``) and the K frames are timed
(``decode_ms``; on CUDA after ``torch.cuda.synchronize``). ``cpu_fallback`` is torchcodec's own report
(``VideoDecoder.cpu_fallback``, torchcodec >= 0.10): True when NVDEC could not take the stream and
torchcodec silently decoded on the CPU (``"[CUDA] Fallback status: Falling back due to: Video not
supported"``).

torch/torchcodec/PyAV are imported inside the functions.
"""

from __future__ import annotations

import bisect
import math
import random
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

from lerobot_tools.video.environment import one_line_error

DEFAULT_FRAMES = 8
SEEK_MODE = "approximate"


def pick_frames(num_frames: int, k: int = DEFAULT_FRAMES, seed: int = 0) -> list[int]:
    """``min(k, num_frames)`` distinct frame indices in ``[0, num_frames)``, in seeded random order.

    Raises:
        ValueError: ``num_frames`` < 1 or ``k`` < 1.
    """
    if num_frames < 1 or k < 1:
        raise ValueError(f"need num_frames >= 1 and k >= 1, got {num_frames}, {k}")
    return random.Random(seed).sample(range(num_frames), min(k, num_frames))


@dataclass
class DecodeRun:
    """K frames decoded from one file on one device.

    Attributes:
        device: ``"cpu"`` or ``"cuda:N"``.
        library: ``"torchcodec 0.13.0+cpu"`` or ``"PyAV 18.1.0"``.
        indices: the frame indices asked for, in decode order.
        frames: frames actually decoded (== len(indices) on success).
        open_ms: opening the timed decoder (milliseconds).
        decode_ms: decoding the frames (milliseconds, wall clock; CUDA synchronised).
        frame_shape: shape of one decoded frame, ``[C, H, W]`` (torchcodec, uint8 RGB) or ``[H, W, 3]`` (PyAV).
        cpu_fallback: torchcodec's ``VideoDecoder.cpu_fallback`` as a bool (None: not reported, e.g. CPU device
            or torchcodec < 0.10).
        fallback_reason: ``str(cpu_fallback)``, e.g. ``"[CUDA] Fallback status: Falling back due to: Video not supported"``.
        error: one-line failure, None on success.
    """

    device: str
    library: str
    indices: list[int] = field(default_factory=list)
    frames: int = 0
    open_ms: float | None = None
    decode_ms: float | None = None
    frame_shape: list[int] | None = None
    cpu_fallback: bool | None = None
    fallback_reason: str | None = None
    error: str | None = None

    @property
    def ok(self) -> bool:
        return self.error is None and self.frames == len(self.indices) and self.frames > 0

    @property
    def ms_per_frame(self) -> float | None:
        """Decode milliseconds per random frame (decoder already open), None when nothing was decoded."""
        if not self.frames or self.decode_ms is None:
            return None
        return self.decode_ms / self.frames

    @property
    def fps(self) -> float | None:
        """Random-access frames per second in one decoder (1000 / ms_per_frame)."""
        ms = self.ms_per_frame
        return 1000.0 / ms if ms else None

    def to_dict(self) -> dict:
        d = asdict(self)
        d["ms_per_frame"] = None if self.ms_per_frame is None else round(self.ms_per_frame, 3)
        d["fps"] = None if self.fps is None else round(self.fps, 1)
        for k in ("open_ms", "decode_ms"):
            if d[k] is not None:
                d[k] = round(d[k], 3)
        return d


def _torchcodec_version() -> str:
    import torchcodec

    return f"torchcodec {getattr(torchcodec, '__version__', '?')}"


def decode_torchcodec(path: str, indices: list[int], device: str = "cpu", seek_mode: str = SEEK_MODE,
                      on_frame: Callable[[int, Any], None] | None = None) -> DecodeRun:
    """Decode ``indices`` from ``path`` with torchcodec on ``device``; never raises (errors go to ``error``).

    Args:
        on_frame: optional ``on_frame(index, tensor)`` called with each decoded frame (uint8 ``[C, H, W]``
            on ``device``); its own cost is included in ``decode_ms`` (meant for checks, not timing).

    Returns a :class:`DecodeRun`; on CUDA devices ``cpu_fallback``/``fallback_reason`` come from torchcodec.
    """
    try:
        lib = _torchcodec_version()
        import torch
        from torchcodec.decoders import VideoDecoder
    except BaseException as exc:  # noqa: BLE001 - a broken CUDA wheel raises RuntimeError/OSError
        return DecodeRun(device, "torchcodec", list(indices), error=f"torchcodec cannot be imported: {one_line_error(exc)}")
    run = DecodeRun(device, lib, list(indices))
    cuda = device.startswith("cuda")

    def sync():
        if cuda:
            torch.cuda.synchronize(device)

    try:
        warm = VideoDecoder(path, device=device, seek_mode=seek_mode)
        warm.get_frame_at(indices[0])
        sync()
        del warm
        t0 = time.perf_counter()
        dec = VideoDecoder(path, device=device, seek_mode=seek_mode)
        sync()
        t1 = time.perf_counter()
        shape = None
        for i in indices:
            frame = dec.get_frame_at(i)
            shape = list(frame.data.shape)
            run.frames += 1
            if on_frame is not None:
                on_frame(i, frame.data)
        sync()
        t2 = time.perf_counter()
        run.open_ms, run.decode_ms, run.frame_shape = (t1 - t0) * 1000, (t2 - t1) * 1000, shape
        fb = getattr(dec, "cpu_fallback", None)
        if fb is not None and cuda:
            run.cpu_fallback, run.fallback_reason = bool(fb), str(fb)
    except Exception as exc:
        run.error = one_line_error(exc)
    return run


def decode_pyav(path: str, indices: list[int], on_frame: Callable[[int, Any], None] | None = None) -> DecodeRun:
    """Decode ``indices`` from ``path`` with PyAV on the CPU (1 thread, RGB output); never raises.

    ``on_frame(index, ndarray)`` (uint8 ``[H, W, 3]``) is called for each frame, as in :func:`decode_torchcodec`.

    Each target is reached by decoding forward from the previous one, or, when it lies behind it or past a
    keyframe (MP4 ``stss``; without an index, whenever it is not the next frames), by seeking to the keyframe
    at or before it first — the "smart" PyAV pattern (docs/video-decoding.md#decode-cost). Frame index -> timestamp
    assumes a constant frame rate.
    """
    try:
        import av
    except Exception as exc:
        return DecodeRun("cpu", "PyAV", list(indices), error=f"PyAV cannot be imported: {one_line_error(exc)}")
    run = DecodeRun("cpu", f"PyAV {av.__version__}", list(indices))
    keyframes, indexed = _mp4_keyframes(path)
    try:
        t0 = time.perf_counter()
        container = av.open(path)
        stream = container.streams.video[0]
        stream.codec_context.thread_count = 1
        rate = stream.average_rate or stream.guessed_rate
        tb = stream.time_base
        start = stream.start_time or 0
        t1 = time.perf_counter()
        with container:
            frames_iter = None
            last = -1
            for target in indices:
                if frames_iter is None or target <= last or _keyframe_between(keyframes, indexed, last, target):
                    pts = start + int(round(target / float(rate) / float(tb)))
                    container.seek(pts, stream=stream, backward=True, any_frame=False)
                    frames_iter = container.decode(stream)
                for frame in frames_iter:
                    idx = int(round((float((frame.pts or 0) - start) * float(tb)) * float(rate)))
                    last = idx
                    if idx >= target:
                        img = frame.to_ndarray(format="rgb24")
                        run.frame_shape = list(img.shape)
                        run.frames += 1
                        if on_frame is not None:
                            on_frame(target, img)
                        break
                else:
                    raise RuntimeError(f"frame {target} not found (stream ended)")
        t2 = time.perf_counter()
        run.open_ms, run.decode_ms = (t1 - t0) * 1000, (t2 - t1) * 1000
    except Exception as exc:
        run.error = one_line_error(exc)
    return run


def _mp4_keyframes(path: str) -> tuple[list[int] | None, bool]:
    """-> (keyframe indices or None = every frame, True) from the MP4 ``stss``; (None, False) when unknown."""
    try:
        from lerobot_tools.video.mp4 import walk_mp4

        boxes = walk_mp4(path)
    except Exception:
        return None, False
    if boxes.fragmented or not boxes.has_moov:
        return None, False
    return (sorted(boxes.keyframes) if boxes.keyframes is not None else None), True


def _keyframe_between(keyframes: list[int] | None, indexed: bool, last: int, target: int) -> bool:
    """True when seeking is cheaper than decoding forward from frame ``last`` to ``target`` (> last)."""
    if not indexed:
        return target > last + 1
    if keyframes is None:  # every frame is a keyframe
        return target > last + 1
    i = bisect.bisect_right(keyframes, last)
    return i < len(keyframes) and keyframes[i] <= target


@dataclass
class DecodeTest:
    """The decode test of one file: the same frames on CPU and (optionally) on a CUDA device.

    Attributes:
        path: the file decoded.
        num_frames: frames in the file (from the header probe).
        indices: the random frame indices (seeded), in decode order.
        cpu: the CPU run (torchcodec, or PyAV when torchcodec is unusable).
        gpu: the CUDA run, None when not attempted.
    """

    path: str
    num_frames: int
    indices: list[int]
    cpu: DecodeRun | None = None
    gpu: DecodeRun | None = None

    @property
    def speedup(self) -> float | None:
        """GPU frames/s divided by CPU frames/s for the same frames (None unless both ran)."""
        if self.cpu and self.gpu and self.cpu.fps and self.gpu.fps and self.gpu.ok:
            return self.gpu.fps / self.cpu.fps
        return None

    def to_dict(self) -> dict:
        return {"path": self.path, "num_frames": self.num_frames, "indices": self.indices,
                "cpu": self.cpu.to_dict() if self.cpu else None, "gpu": self.gpu.to_dict() if self.gpu else None,
                "gpu_speedup": None if self.speedup is None else round(self.speedup, 2)}


def decode_test(path: str, num_frames: int, k: int = DEFAULT_FRAMES, seed: int = 0, gpu_device: str | None = None,
                cpu: bool = True) -> DecodeTest:
    """Decode the same ``k`` random frames of ``path`` on the CPU and, if ``gpu_device`` is given, on that device.

    Args:
        path: a video file that probed ok.
        num_frames: its frame count (header); frames are drawn from ``[0, num_frames)``.
        k: frames to decode.
        seed: random seed for :func:`pick_frames`.
        gpu_device: ``"cuda"``/``"cuda:N"`` to also decode there; None for CPU only.
        cpu: run the CPU decode (torchcodec, falling back to PyAV when torchcodec cannot be imported or
            cannot open the file).

    Returns:
        A :class:`DecodeTest`. Never raises for a bad file (errors are in the runs).
    """
    indices = pick_frames(num_frames, k, seed)
    test = DecodeTest(path, num_frames, indices)
    if cpu:
        run = decode_torchcodec(path, indices, "cpu")
        if run.error and run.error.startswith("torchcodec cannot be imported"):
            alt = decode_pyav(path, indices)
            run = alt if alt.ok else run
        test.cpu = run
    if gpu_device:
        test.gpu = decode_torchcodec(path, indices, gpu_device)
    return test


def workers_needed(ms_per_frame: float, target_fps: float) -> int:
    """CPU workers (cores) needed to decode ``target_fps`` random frames per second at ``ms_per_frame`` each.

    ``ceil(target_fps * ms_per_frame / 1000)``, at least 1. Assumes one decode per worker at a time and
    no frame-level threading (as LeRobot's DataLoader workers decode).

    Raises:
        ValueError: non-positive arguments.
    """
    if ms_per_frame <= 0 or target_fps <= 0:
        raise ValueError("ms_per_frame and target_fps must be > 0")
    return max(1, math.ceil(target_fps * ms_per_frame / 1000.0 - 1e-9))
