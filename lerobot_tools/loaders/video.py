"""Video frames by timestamp through a bounded LRU of open torchcodec decoders.

Facts used (docs/format.md#videos, docs/failure-modes.md (#short-video, #decoder-leaks),
docs/video-decoding.md#decode-cost):

* A frame is located by its time in the file: v2.x ``timestamp`` (one mp4 per episode, starting at 0);
  v3.0 ``episodes[ep]["videos/<key>/from_timestamp"] + timestamp`` (many episodes per mp4).
* torchcodec (lerobot's default) opens with ``seek_mode="approximate"`` (no full-file scan at
  open, docs/video-decoding.md#decode-cost) and fetches frame
  ``round(t * average_fps)`` with ``get_frames_at``. Each query must then lie within ``tolerance_s``
  (default 1e-4 s, ``<=`` as lerobot since ``e081bbdeb``) of the pts of the closest decoded frame, or
  :class:`FrameTimestampError` is raised. An index past the end of the file is an error too (upstream
  torchcodec raises ``IndexError``; OpenTau clamps, which hides a short consolidated video,
  docs/failure-modes.md#short-video).
* Open decoders hold FFmpeg contexts and buffers: an unbounded per-worker cache reached ~30 GB on datasets
  with thousands of mp4 files (D9, lerobot ``dfdc48a7f``, now an LRU of 100 set by
  ``LEROBOT_VIDEO_DECODER_CACHE_SIZE``). :class:`DecoderCache` is bounded, per process, and never reuses
  a decoder inherited through ``fork`` (decoding in a parent and its DataLoader workers at the same time
  is the documented segfault of D9).

torch and torchcodec are imported when the first decoder opens.
"""

from __future__ import annotations

import os
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

from lerobot_tools._env import VIDEO_DECODER_CACHE_SIZE, video_decoder_cache_size
from lerobot_tools.errors import DatasetError, one_line

#: Environment variable lerobot reads for its decoder cache size; honoured here too.
CACHE_SIZE_ENV = VIDEO_DECODER_CACHE_SIZE
#: Default number of open decoders per process (lerobot uses 100; a decoder of a 480p stream holds a
#: few MB of FFmpeg buffers, so 32 bounds a worker to roughly 100-300 MB while covering a pool of 16
#: episodes x 2 cameras).
DEFAULT_CACHE_SIZE = 32


class FrameTimestampError(DatasetError, ValueError):
    """A queried timestamp has no decoded frame within ``tolerance_s`` (or lies past the end of the file).

    Same meaning as lerobot's ``FrameTimestampError`` (a ``ValueError``); the message is one line naming
    the file, the episode, the query and the closest frame found.
    """


class VideoDecodeError(DatasetError):
    """A video file cannot be opened or decoded by torchcodec (one line naming the file)."""


def default_cache_size() -> int:
    """``LEROBOT_VIDEO_DECODER_CACHE_SIZE`` if set to a positive int, else :data:`DEFAULT_CACHE_SIZE`."""
    return video_decoder_cache_size() or DEFAULT_CACHE_SIZE


@dataclass
class DecoderStats:
    """Counters of one :class:`DecoderCache` (per process).

    Attributes:
        opens: decoders opened (cache misses).
        hits: lookups served by an open decoder.
        evictions: decoders closed to respect the bound.
        frames: frames decoded (returned to callers).
    """

    opens: int = 0
    hits: int = 0
    evictions: int = 0
    frames: int = 0


class DecoderCache:
    """A bounded LRU of open ``torchcodec.decoders.VideoDecoder`` objects, keyed by file path.

    Args:
        max_open: most decoders kept open at once (>= 1). Default :func:`default_cache_size`.
        num_ffmpeg_threads: threads per decoder (1: DataLoader workers provide the parallelism).

    The cache belongs to the process that created it: used from another process (a forked DataLoader
    worker), it starts empty instead of touching the parent's decoders; pickling it (spawned workers)
    drops the open decoders.
    """

    def __init__(self, max_open: int | None = None, num_ffmpeg_threads: int = 1):
        max_open = default_cache_size() if max_open is None else int(max_open)
        if max_open < 1:
            raise ValueError(f"decoder cache size must be >= 1, got {max_open}")
        self.max_open = max_open
        self.num_ffmpeg_threads = num_ffmpeg_threads
        self.stats = DecoderStats()
        self._pid = os.getpid()
        self._decoders: OrderedDict[str, object] = OrderedDict()

    def __getstate__(self) -> dict:
        state = self.__dict__.copy()
        state["_decoders"] = OrderedDict()
        state["stats"] = DecoderStats()
        return state

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        self._pid = os.getpid()

    def __len__(self) -> int:
        self._check_pid()
        return len(self._decoders)

    def _check_pid(self) -> None:
        if self._pid != os.getpid():  # forked: the parent's decoders are not ours to use or close
            self._decoders = OrderedDict()
            self.stats = DecoderStats()
            self._pid = os.getpid()

    def get(self, path: str | Path, display: str | None = None):
        """The open decoder of ``path``, opening it (and evicting the least recently used) if needed.

        Raises:
            VideoDecodeError: torchcodec cannot open the file (one line naming ``display`` or ``path``).
        """
        self._check_pid()
        key = str(path)
        dec = self._decoders.get(key)
        if dec is not None:
            self._decoders.move_to_end(key)
            self.stats.hits += 1
            return dec
        from torchcodec.decoders import VideoDecoder

        try:
            dec = VideoDecoder(key, seek_mode="approximate", dimension_order="NCHW",
                               num_ffmpeg_threads=self.num_ffmpeg_threads)
        except Exception as exc:  # torchcodec raises RuntimeError/ValueError with FFmpeg texts
            raise VideoDecodeError(f"torchcodec cannot open it ({one_line(exc)})", display or key) from None
        self.stats.opens += 1
        self._decoders[key] = dec
        while len(self._decoders) > self.max_open:
            self._decoders.popitem(last=False)
            self.stats.evictions += 1
        return dec

    def clear(self) -> None:
        """Close (drop) every open decoder of this process."""
        self._check_pid()
        self._decoders.clear()

    def decode_at(self, path: str | Path, times_s: Sequence[float], tolerance_s: float, *,
                  display: str | None = None, episodes: Sequence[int] | None = None):
        """Decode the frames shown at ``times_s`` (seconds from the start of the file).

        Args:
            path: mp4 file.
            times_s: query times in seconds (any order, duplicates allowed).
            tolerance_s: largest accepted ``|pts - query|`` in seconds (``<=``).
            display: name used in error messages (e.g. the path relative to the dataset root).
            episodes: the episode of each query, named in error messages.

        Returns:
            ``uint8`` tensor of shape ``(len(times_s), C, H, W)``, frames in query order.

        Raises:
            FrameTimestampError: a query lies past the end of the file or has no frame within tolerance.
            VideoDecodeError: the file cannot be opened or decoded.
        """
        import torch

        name = display or str(path)
        dec = self.get(path, name)
        md = dec.metadata
        fps = md.average_fps
        n = md.num_frames
        def where(k: int) -> str:
            return f"episode {episodes[k]}: " if episodes is not None else ""

        if not fps or not n:
            raise VideoDecodeError("the stream header gives no frame rate or frame count", name)
        wanted = [int(round(float(t) * fps)) for t in times_s]
        uniq = sorted(set(wanted))
        if uniq and (uniq[0] < 0 or uniq[-1] >= n):
            bad = uniq[-1] if uniq[-1] >= n else uniq[0]
            k = wanted.index(bad)
            t_bad = times_s[k]
            raise FrameTimestampError(
                f"{where(k)}query {float(t_bad):.4f} s is frame {bad} but the video holds frames 0-{n - 1} "
                f"({n / fps:.4f} s at {fps:g} fps): the video is shorter than its metadata", name)
        try:
            batch = dec.get_frames_at(uniq)
        except Exception as exc:
            raise VideoDecodeError(f"decoding frames {uniq[0]}-{uniq[-1]} failed ({one_line(exc)})", name) from None
        # closest decoded frame to every query (lerobot compares every query with every loaded frame)
        q = torch.tensor([float(t) for t in times_s], dtype=torch.float64)
        pts = batch.pts_seconds.to(torch.float64)
        dist = (q[:, None] - pts[None, :]).abs()
        best, order = dist.min(dim=1)
        worst = int(best.argmax()) if len(q) else 0
        if len(q) and float(best[worst]) > tolerance_s:
            t, p = float(q[worst]), float(pts[order[worst]])
            raise FrameTimestampError(
                f"{where(worst)}query {t:.6f} s has no frame within tolerance_s={tolerance_s:g} s "
                f"(closest decoded frame at {p:.6f} s, {abs(p - t):.6f} s away)", name)
        self.stats.frames += len(times_s)
        return batch.data.index_select(0, order)


