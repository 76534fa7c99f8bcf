"""Frame content that survives lossy coding: :func:`frame_pixels` draws it, :func:`read_frame_id` reads it back."""

from __future__ import annotations

import numpy as np

#: Grid geometry of :func:`frame_pixels`: 4 x 4 flat blocks, each one base-4 digit.
_GRID = 4

_DIGITS = 8  # per number; episode = rows 0-1, frame = rows 2-3 (most significant digit first)

_LEVELS = np.array([32, 96, 160, 224], dtype=np.int32)  # grey value of digit 0..3 (spacing 64)

_ID_LIMIT = 4**_DIGITS  # 65536


class FrameIdError(ValueError):
    """A decoded frame does not carry a readable :func:`frame_pixels` code."""


def _block_edges(n: int) -> np.ndarray:
    return np.linspace(0, n, _GRID + 1).round().astype(int)


def frame_pixels(episode_index: int, frame_index: int, H: int, W: int) -> np.ndarray:
    """Deterministic RGB frame that encodes ``(episode_index, frame_index)``.

    The frame is a 4 x 4 grid of flat grey blocks (R = G = B, so chroma subsampling is harmless).
    Each block is one base-4 digit drawn at grey level 32, 96, 160 or 224 (64 apart, so a decoder
    error of up to +/-31 levels in a block's centre is still read correctly). Blocks are numbered
    row-major; blocks 0-7 hold ``episode_index`` and blocks 8-15 hold ``frame_index``, most
    significant digit first. Flat blocks aligned to the codec's 8/16-pixel transform grid are coded
    almost losslessly by x264/x265/SVT-AV1 at crf 30 even at 64x64.

    Args:
        episode_index: 0 <= value < 65536.
        frame_index: 0 <= value < 65536.
        H, W: frame height and width in pixels, each >= 16.

    Returns:
        ``uint8`` array of shape ``(H, W, 3)``.

    Raises:
        ValueError: an index is out of range or the frame is smaller than 16x16.
    """
    if not (0 <= episode_index < _ID_LIMIT and 0 <= frame_index < _ID_LIMIT):
        raise ValueError(f"frame_pixels: episode/frame index must be in [0, {_ID_LIMIT})")
    if H < 16 or W < 16:
        raise ValueError("frame_pixels: frame must be at least 16x16")
    digits = _digits(episode_index) + _digits(frame_index)
    ys, xs = _block_edges(H), _block_edges(W)
    img = np.empty((H, W, 3), dtype=np.uint8)
    for b, d in enumerate(digits):
        r, c = divmod(b, _GRID)
        img[ys[r] : ys[r + 1], xs[c] : xs[c + 1], :] = _LEVELS[d]
    return img


def _digits(v: int) -> list[int]:
    return [(v >> (2 * (_DIGITS - 1 - i))) & 3 for i in range(_DIGITS)]


def read_frame_id(img: np.ndarray, tolerance: float = 24.0) -> tuple[int, int]:
    """Read ``(episode_index, frame_index)`` back from a decoded :func:`frame_pixels` frame.

    The mean grey value of the central half of each block is compared with the 4 levels; the
    nearest level is the digit.

    Args:
        img: decoded frame, ``uint8`` (or float in 0-255) of shape ``(H, W, 3)``, ``(3, H, W)`` or
            ``(H, W)``.
        tolerance: largest accepted distance (grey levels, 0-255 scale) between a block's mean and
            the nearest level; lossy coding of these frames stays well below 8.

    Returns:
        ``(episode_index, frame_index)``.

    Raises:
        FrameIdError: a block is further than ``tolerance`` from every level (not a synthetic frame,
            or badly damaged).
    """
    a = np.asarray(img, dtype=np.float64)
    if a.ndim == 3 and a.shape[0] in (1, 3) and a.shape[-1] not in (1, 3):
        a = np.moveaxis(a, 0, -1)
    if a.ndim == 3:
        a = a.mean(axis=-1)
    if a.ndim != 2:
        raise FrameIdError(f"read_frame_id: expected an image, got shape {np.shape(img)}")
    H, W = a.shape
    ys, xs = _block_edges(H), _block_edges(W)
    digits = []
    for b in range(_GRID * _GRID):
        r, c = divmod(b, _GRID)
        y0, y1, x0, x1 = ys[r], ys[r + 1], xs[c], xs[c + 1]
        qy, qx = max((y1 - y0) // 4, 0), max((x1 - x0) // 4, 0)
        v = a[y0 + qy : y1 - qy, x0 + qx : x1 - qx].mean()
        d = int(np.argmin(np.abs(_LEVELS - v)))
        if abs(_LEVELS[d] - v) > tolerance:
            raise FrameIdError(
                f"read_frame_id: block {b} has mean grey {v:.1f}, more than {tolerance} from any level"
            )
        digits.append(d)
    ep = fr = 0
    for d in digits[:_DIGITS]:
        ep = ep * 4 + d
    for d in digits[_DIGITS:]:
        fr = fr * 4 + d
    return ep, fr
