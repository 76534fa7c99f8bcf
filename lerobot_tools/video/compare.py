"""What a video file's header says vs what ``meta/info.json`` declares for its feature: the one comparison
behind validate's F009, diagnose-decode's metadata mismatches and repair's F009 fix.

LeRobot writes a video feature's ``info`` block (``video.codec``, ``video.pix_fmt``, ``video.height``,
``video.width``, ``video.fps``...) from the first episode's file only (lerobot ``datasets/video_utils.py``
``get_video_info``; v2.0 names the block ``video_info``), and its loaders trust ``fps`` and the feature
``shape`` (``[H, W, C]``, or ``[C, H, W]`` when ``names`` starts with ``"channels"``) when they map
timestamps to frames and allocate tensors. Compared, in this order:

* ``video.codec``: canonical names (:func:`lerobot_tools.video.codecs.canonical_codec`), so ``libsvtav1`` == ``av1``;
* ``video.pix_fmt``: exact;
* ``shape``: the declared height and width against the stream's;
* ``fps``: ``info.json``'s top-level ``fps`` against the rate the stream's frames are spaced at (its median step,
  when every frame's timestamp is known: a dropped or duplicated frame is the timestamp audit's finding, F020, not a
  different rate), else its average frame rate, with a relative tolerance of :data:`FPS_TOLERANCE`.

A fact the header does not give (None, 0) or ``info.json`` does not declare is not compared. ``video.height``,
``video.width`` and ``video.fps`` restate the facts above and are not compared on their own; repair rewrites
them along with those facts.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from lerobot_tools.video.codecs import canonical_codec

#: Relative difference between the stream frame rate and ``info.json`` ``fps`` above which they disagree
#: (1 %: 29.97 fps streams declared as 30 pass; 25 vs 30 does not).
FPS_TOLERANCE = 0.01


@dataclass(frozen=True)
class HeaderMismatch:
    """One declared fact the file header contradicts.

    Attributes:
        field: ``"video.codec"``, ``"video.pix_fmt"``, ``"shape"`` or ``"fps"``.
        declared: the value in ``info.json`` (the whole ``shape`` list for ``"shape"``).
        actual: the header's value (``(height, width)`` for ``"shape"``, frames/s as a float for ``"fps"``).
        message: one line, e.g. ``"codec is h264 but info.json says av1"``.
    """

    field: str
    declared: Any
    actual: Any
    message: str


def declared_video_info(feature: dict) -> dict:
    """The feature's ``info`` dict (``video_info`` in LeRobot v2.0); ``{}`` when it has none.

    The dict itself, not a copy: a caller that edits it edits the feature.
    """
    v = feature.get("info") or feature.get("video_info") or {}
    return v if isinstance(v, dict) else {}


def declared_hw(feature: dict) -> tuple[Any, Any] | None:
    """``(height, width)`` from a 3-dimensional feature ``shape``: ``[H, W, C]``, or ``[C, H, W]`` when
    ``names`` starts with ``"channels"``; None when the shape is not a 3-element list."""
    shape = feature.get("shape")
    if not (isinstance(shape, list) and len(shape) == 3):
        return None
    names = feature.get("names")
    if isinstance(names, list) and names[:1] == ["channels"]:
        return shape[1], shape[2]
    return shape[0], shape[1]


def frame_rate_differs(stream_fps: float | None, info_fps: float | None) -> bool:
    """True when both rates are known and differ by more than :data:`FPS_TOLERANCE` of ``info_fps``."""
    return bool(stream_fps and info_fps and abs(stream_fps - info_fps) > FPS_TOLERANCE * info_fps)


def compare_header(feature: dict, info_fps: float | None, probe: Any) -> list[HeaderMismatch]:
    """The facts of ``probe`` that contradict the feature's declaration in ``info.json`` (see module docstring).

    Args:
        feature: the ``info.json`` ``features`` entry of the video key.
        info_fps: ``info.json`` ``fps`` (None when missing or not a positive number).
        probe: header facts with ``codec``, ``pix_fmt``, ``width``, ``height`` (pixels) and ``fps`` (frames/s)
            attributes (and optionally ``nominal_fps``), e.g. a :class:`~lerobot_tools.video.probe.VideoProbe`;
            None/0 = unknown.

    Returns:
        Mismatches in the order codec, pix_fmt, shape, fps; empty when the header agrees.
    """
    vinfo = declared_video_info(feature)
    out: list[HeaderMismatch] = []
    declared = vinfo.get("video.codec")
    if probe.codec and declared and canonical_codec(declared) != probe.codec:
        out.append(HeaderMismatch("video.codec", declared, probe.codec,
                                  f"codec is {probe.codec} but info.json says {declared}"))
    declared = vinfo.get("video.pix_fmt")
    if probe.pix_fmt and declared and declared != probe.pix_fmt:
        out.append(HeaderMismatch("video.pix_fmt", declared, probe.pix_fmt,
                                  f"pix_fmt is {probe.pix_fmt} but info.json says {declared}"))
    hw = declared_hw(feature)
    if probe.width and probe.height and hw is not None and hw != (probe.height, probe.width):
        shape = feature.get("shape")
        out.append(HeaderMismatch("shape", shape, (probe.height, probe.width),
                                  f"frames are {probe.width}x{probe.height} but the feature shape is {shape}"))
    rate = getattr(probe, "nominal_fps", None) or probe.fps
    if frame_rate_differs(rate, info_fps):
        out.append(HeaderMismatch("fps", info_fps, rate, f"frame rate is {rate:.3f} but info.json fps is {info_fps:g}"))
    return out
