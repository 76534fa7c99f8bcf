"""Header-only video probe: what a video file is and whether it is whole, without decoding it.

Layers run cheapest first and stop early (docs/video-decoding.md#probing):

1. :func:`lerobot_tools.sniff.sniff` (size + first 512 bytes, ~0.01 ms): missing, empty, Git LFS pointer,
   HTML/XML/JSON error body, container magic.
2. :func:`lerobot_tools.video.mp4.walk_mp4` for MP4/MOV (~0.05 ms): faststart, fragmented, truncated
   (a box running past EOF, no ``moov``), exact frame count, keyframes (``stss``), codec fourcc, and
   codec/profile/bit depth/chroma from the codec configuration record.
3. PyAV ``av.open`` (opt-in with ``pyav=True``, default; 0.3-6 ms): canonical codec, profile, pix_fmt,
   bit depth, chroma, size, frame rate. ``av.open`` runs FFmpeg's ``avformat_find_stream_info``, which
   parses (for H.264/VP9 decodes) a few packets, but no frame is decoded explicitly here.
4. With ``gop="demux"``: when the header has no keyframe index (fragmented MP4, Matroska, AVI), packets
   are demuxed (not decoded) to find keyframes; this reads the whole file.

Every frame's presentation timestamp comes with layer 2 for an MP4 whose ``moov`` holds its sample tables
(:func:`lerobot_tools.video.timing.frame_times`, ~0.1 ms); with the PyAV layer also for a fragmented MP4 (its
``moof`` boxes are read) and, by a packet demux (no decoding, reads the whole file), for an edit list the box
model does not reproduce or a container that is not MP4.

PyAV is imported lazily, inside functions: ``probe_video(path, pyav=False)`` never imports ``av``.
"""

from __future__ import annotations

import os
from dataclasses import asdict, dataclass, field

from lerobot_tools.errors import DatasetError
from lerobot_tools.sniff import Sniff, human_size, sniff
from lerobot_tools.video.mp4 import Mp4Boxes, walk_mp4

GOP_MODES = ("header", "demux")

# Codec capability bits from libavcodec/codec.h: AV_CODEC_CAP_HARDWARE (1 << 18), AV_CODEC_CAP_HYBRID (1 << 19).
_CAP_HARDWARE_OR_HYBRID = (1 << 18) | (1 << 19)


@dataclass
class VideoProbe:
    """What one video file is, from its headers. Produced by :func:`probe_video`.

    Attributes:
        path: the file probed, as given.
        size: bytes on disk; None when missing or unreadable.
        status: ``"ok"``; ``"missing"`` (no such file); ``"placeholder"`` (empty, Git LFS pointer, HTML/XML/
            JSON error body or short text saved under the video's name); ``"broken"`` (truncated, no
            ``moov``, not a video, unreadable, FFmpeg cannot open it).
        problem: one-line reason when status is not ``"ok"``, e.g. ``"Git LFS pointer (real file 3.1 MB, …)"``
            or ``"truncated: no moov box (cut before the index)"``; None when ok.
        container: ``"mp4"`` (MP4/MOV), ``"matroska"`` (MKV/WebM), ``"avi"``, another FFmpeg demuxer name, or None.
        faststart: ``moov`` before ``mdat`` (MP4 only; good for HTTP range reads); None if unknown.
        fragmented: MP4 with ``moof`` fragments / ``mvex`` (no frame index in ``moov``); None if not MP4.
        truncated: a box runs past end of file (MP4 only).
        codec: FFmpeg canonical codec name, e.g. ``"av1"``, ``"h264"``, ``"hevc"``, ``"mpeg4"``, ``"vp9"``
            (``codec_context.codec.canonical_name``, not the decoder name such as ``"libdav1d"``).
        profile: profile as FFmpeg names it: ``"High"``, ``"High 4:4:4 Predictive"``, ``"Main"``,
            ``"Main 10"``, ``"Rext"``, ``"Profile 0"``, ``"Simple Profile"``…
        pix_fmt: FFmpeg pixel format, e.g. ``"yuv420p"``, ``"yuv420p10le"`` (PyAV layer only).
        bit_depth: bits per luma sample (8, 10, 12).
        chroma: chroma subsampling ``"420"``, ``"422"``, ``"444"``, ``"gray"`` (also ``"411"``/``"440"``).
        width, height: frame size in pixels.
        fps: average frames per second (MP4: frame_count / track duration; else FFmpeg's average/guessed rate).
        duration_s: video track duration in seconds.
        frame_count: number of frames (MP4 ``stsz``; PyAV ``stream.frames``; demuxed packets with gop="demux").
        gop_max: longest run of frames starting at a keyframe (about the most frames a random access
            decodes), counted in decode order (MP4 ``stss`` / demuxed packets). With open-GOP B-frame
            reordering (x265 CRA) runs can differ from the display-order interval by a few frames, e.g.
            26/30/34 for ``-g 30``; the mean is unaffected.
        gop_mean: frame_count / number of keyframes.
        warnings: non-fatal findings (fragmented, truncated-but-playable, header disagreements, …).
        codec_tag: MP4 sample-entry fourcc (``"avc1"``, ``"hev1"``, ``"av01"``…) when known.
        frame_times: every frame's presentation timestamp, as
            :meth:`lerobot_tools.video.timing.FrameTimes.to_dict` (run-length encoded steps), or None.
        frame_times_unknown: why ``frame_times`` is None for a readable file (one line), else None.
        nominal_fps: the rate the frames are spaced at (:func:`lerobot_tools.video.timing.nominal_rate`) when
            ``frame_times`` is known: a dropped or duplicated frame changes ``fps`` (an average) but not this.
    """

    path: str
    size: int | None = None
    status: str = "ok"
    problem: str | None = None
    container: str | None = None
    faststart: bool | None = None
    fragmented: bool | None = None
    truncated: bool = False
    codec: str | None = None
    profile: str | None = None
    pix_fmt: str | None = None
    bit_depth: int | None = None
    chroma: str | None = None
    width: int | None = None
    height: int | None = None
    fps: float | None = None
    duration_s: float | None = None
    frame_count: int | None = None
    gop_max: int | None = None
    gop_mean: float | None = None
    warnings: list[str] = field(default_factory=list)
    codec_tag: str | None = None
    frame_times: dict | None = None
    frame_times_unknown: str | None = None
    nominal_fps: float | None = None

    @property
    def ok(self) -> bool:
        """True when status is ``"ok"``."""
        return self.status == "ok"

    def to_dict(self) -> dict:
        """Plain JSON-serialisable dict of every field."""
        return asdict(self)

    def _fail(self, status: str, problem: str) -> None:
        if self.status == "ok":  # keep the first (most specific) problem
            self.status, self.problem = status, problem


def pyav_available() -> bool:
    """True if PyAV (``import av``) can be imported. Imports it."""
    try:
        import av  # noqa: F401
    except Exception:  # ImportError, or a broken binary wheel (OSError)
        return False
    return True


def av1_decoders() -> list[str]:
    """Names of the software AV1 decoders in PyAV's bundled FFmpeg, preferred first.

    Returns e.g. ``["libdav1d", "av1"]`` (PyAV 18.1 wheels) or with ``"libaom-av1"`` where built in.
    Hardware wrappers (``av1_cuvid``, ``av1_qsv``, ``av1_amf``; FFmpeg capability HARDWARE/HYBRID) are left
    out. Note FFmpeg's native ``"av1"`` decoder decodes only through a hwaccel; without one it fails with
    "Function not implemented" (FFmpeg ``libavcodec/av1dec.c``), so only ``libdav1d``/``libaom-av1`` decode
    on CPU. Empty list when PyAV is not importable.
    """
    try:
        import av
    except Exception:
        return []
    found = []
    for name in av.codecs_available:
        try:
            codec = av.Codec(name, "r")
        except Exception:
            continue
        if codec.type == "video" and codec.canonical_name == "av1" and not codec.capabilities & _CAP_HARDWARE_OR_HYBRID:
            found.append(name)
    order = {"libdav1d": 0, "libaom-av1": 1, "av1": 2}
    return sorted(found, key=lambda n: (order.get(n, 3), n))


def gop_stats(keyframes: list[int] | None, frame_count: int | None) -> tuple[int | None, float | None]:
    """GOP length statistics from keyframe indices.

    Args:
        keyframes: 0-based keyframe frame indices; None means every frame is a keyframe (MP4 without ``stss``).
        frame_count: total frames.

    Returns:
        ``(gop_max, gop_mean)``: the longest run of frames from one keyframe up to the next (the final run
        ends at ``frame_count``; frames before the first keyframe count as a run too), and
        ``frame_count / len(keyframes)``. ``(None, None)`` when frame_count is unknown or zero.
    """
    if not frame_count:
        return None, None
    if keyframes is None:
        return 1, 1.0
    ks = sorted({k for k in keyframes if 0 <= k < frame_count})
    if not ks:
        return frame_count, float(frame_count)
    bounds = ks + [frame_count]
    runs = [b - a for a, b in zip(bounds, bounds[1:])]
    if ks[0] > 0:
        runs.append(ks[0])
    return max(runs), frame_count / len(ks)


def chroma_of(pix_fmt: str) -> tuple[int | None, str | None]:
    """-> (bit_depth, chroma) for an FFmpeg pixel format name, via PyAV's format descriptor."""
    import av

    try:
        fmt = av.VideoFormat(pix_fmt, 64, 64)
    except Exception:
        return None, None
    comps = [c for c in fmt.components if not c.is_alpha]
    depth = comps[0].bits if comps else None
    if len(comps) == 1:
        return depth, "gray"
    if fmt.is_rgb:
        return depth, "444"
    ratio = (comps[0].width // max(1, comps[1].width), comps[0].height // max(1, comps[1].height))
    return depth, {(2, 2): "420", (2, 1): "422", (1, 1): "444", (4, 1): "411", (1, 2): "440"}.get(ratio)


def _container_name(format_name: str) -> str:
    names = format_name.split(",")
    if "mp4" in names or "mov" in names:
        return "mp4"
    if "matroska" in names or "webm" in names:
        return "matroska"
    return names[0]


def _apply_boxes(res: VideoProbe, boxes: Mp4Boxes) -> bool:
    """Fill ``res`` from the MP4 box walk. Returns False when the file is unplayable (skip PyAV)."""
    res.faststart, res.fragmented, res.truncated = boxes.faststart, boxes.fragmented, boxes.truncated
    res.codec, res.codec_tag = boxes.codec, boxes.codec_fourcc
    res.profile, res.bit_depth, res.chroma = boxes.profile, boxes.bit_depth, boxes.chroma
    res.width, res.height = boxes.width, boxes.height
    res.fps, res.duration_s, res.frame_count = boxes.fps, boxes.duration_s, boxes.frame_count
    if not boxes.fragmented:
        res.gop_max, res.gop_mean = gop_stats(boxes.keyframes, boxes.frame_count)

    cut = f"{boxes.missing_bytes} bytes past end of file"
    corrupt = f"; {boxes.corrupt}" if boxes.corrupt else ""
    if not boxes.has_moov:
        if boxes.truncated:
            extra = f"; {boxes.truncated_box} runs {cut}" if boxes.truncated_box not in (None, "?") else ""
            res._fail("broken", f"truncated: no moov box (cut before the index){extra}")
        else:
            res._fail("broken", f"no moov box: not a playable MP4{corrupt}")
        return False
    if not boxes.has_video_track:
        res._fail("broken", f"no video track in the MP4 (moov has no 'vide' handler){corrupt}")
        return False
    if boxes.truncated:
        if boxes.truncated_box == "mdat":
            where = ""
            if boxes.mdat_present_fraction is not None:
                where = f"; about {boxes.mdat_present_fraction:.0%} of the media data is present"
                if boxes.duration_s:
                    where += f", frames after ≈{boxes.mdat_present_fraction * boxes.duration_s:.1f} s are missing"
            res._fail("broken", f"truncated: mdat runs {cut} (header intact{where})")
        elif boxes.truncated_box == "moov":
            res._fail("broken", f"truncated: moov box runs {cut} (frame index incomplete)")
        elif boxes.truncated_box in ("moof", "?"):
            res._fail("broken", f"truncated: last fragment runs {cut}")
        else:
            res.warnings.append(
                f"truncated-but-playable: trailing '{boxes.truncated_box}' box runs {cut}; index and media data are intact"
            )
    if boxes.corrupt:
        res.warnings.append(f"malformed MP4 after the media data: {boxes.corrupt}")
    if boxes.fragmented:
        res.warnings.append(
            "fragmented MP4: no frame index in the header (frame count and keyframes need a demux; "
            "torchcodec seek_mode='exact' scans the whole file at open)"
        )
    if boxes.has_video_track and boxes.frame_count == 0 and not boxes.fragmented:
        res._fail("broken", "video track has 0 frames")
    return True


def _apply_pyav(res: VideoProbe, path: str, gop: str) -> None:
    import av

    try:
        container = av.open(path, mode="r", metadata_errors="replace")
    except Exception as exc:  # av.error.InvalidDataError, av.error.FFmpegError, OSError, …
        msg = " ".join(str(getattr(exc, "strerror", None) or exc).split()) or type(exc).__name__
        res._fail("broken", f"FFmpeg cannot open it: {msg}")
        return
    with container:
        if res.container is None:
            res.container = _container_name(container.format.name)
        if not container.streams.video:
            res._fail("broken", f"no video stream (streams: {', '.join(s.type for s in container.streams) or 'none'})")
            return
        stream = container.streams.video[0]
        cc = stream.codec_context
        if cc is None:  # FFmpeg has no decoder for this stream's codec id
            tag = f" (sample entry '{res.codec_tag}')" if res.codec_tag else ""
            res._fail("broken", f"FFmpeg has no decoder for this video stream{tag}")
            return
        codec = cc.codec.canonical_name if cc.codec is not None else None
        if res.codec and codec and res.codec != codec:
            res.warnings.append(f"MP4 sample entry '{res.codec_tag}' says {res.codec} but FFmpeg reads {codec}")
        res.codec = codec or res.codec
        res.profile = cc.profile or res.profile
        pix_fmt = cc.format.name if cc.format is not None else None
        if pix_fmt:
            res.pix_fmt = pix_fmt
            depth, chroma = chroma_of(pix_fmt)
            res.bit_depth, res.chroma = depth or res.bit_depth, chroma or res.chroma
        if cc.width and cc.height:
            res.width, res.height = cc.width, cc.height
        if res.fps is None:
            rate = stream.average_rate or stream.guessed_rate
            res.fps = float(rate) if rate else None
        if res.duration_s is None:
            if stream.duration and stream.time_base:
                res.duration_s = float(stream.duration * stream.time_base)
            elif container.duration:
                res.duration_s = container.duration / 1_000_000  # AV_TIME_BASE
        if res.frame_count is None and stream.frames and not res.fragmented:
            res.frame_count = stream.frames
        if gop == "demux" and res.gop_max is None:
            _demux_keyframes(res, container, stream)


def _demux_keyframes(res: VideoProbe, container, stream) -> None:
    """Read every packet of the video stream (no decode) to find keyframes; fills frame_count and GOP."""
    keyframes: list[int] = []
    n = 0
    try:
        for packet in container.demux(stream):
            if packet.size == 0:  # the flush packet PyAV yields at end of stream
                continue
            if packet.is_keyframe:
                keyframes.append(n)
            n += 1
    except Exception as exc:
        res.warnings.append(f"demux stopped after {n} packets: {' '.join(str(exc).split())}")
    if n:
        if res.frame_count is None:
            res.frame_count = n
        elif res.frame_count != n:
            res.warnings.append(f"header says {res.frame_count} frames but {n} packets were demuxed")
        res.gop_max, res.gop_mean = gop_stats(keyframes, n)
        if res.fps is None and res.duration_s:
            res.fps = n / res.duration_s


def probe_video(path: str | os.PathLike, *, pyav: bool = True, gop: str = "header",
                sniffed: Sniff | None = None) -> VideoProbe:
    """Probe one video file from its headers: sniff -> MP4 box walk -> PyAV header (-> packet demux).

    Args:
        path: the video file.
        pyav: also open the file with PyAV (FFmpeg) for canonical codec, profile, pix_fmt and frame rate;
            False keeps to the pure-Python layers (``av`` is not imported; pix_fmt stays None, and files
            that are neither MP4 nor placeholders get no codec facts).
        gop: ``"header"`` takes keyframes from the MP4 ``stss`` box only; ``"demux"`` additionally demuxes
            all packets (no decode; reads the whole file) when the header has no keyframe index
            (fragmented MP4, Matroska, AVI). ``"demux"`` needs ``pyav=True``.
        sniffed: the result of :func:`lerobot_tools.sniff.sniff` on ``path`` when the caller already has it
            (saves reading the file's head twice).

    Returns:
        A :class:`VideoProbe`. Bad files never raise: missing path, directory, 0 bytes, Git LFS pointer,
        HTML/XML/JSON error body, truncated MP4 (no ``moov`` / ``mdat`` past EOF), random bytes, a file
        FFmpeg cannot open — each gives ``status`` and a one-line ``problem``.

    Raises:
        ValueError: ``gop`` is not ``"header"``/``"demux"``, or ``gop="demux"`` with ``pyav=False``.
    """
    if gop not in GOP_MODES:
        raise ValueError(f"gop must be one of {GOP_MODES}, not {gop!r}")
    if gop == "demux" and not pyav:
        raise ValueError("gop='demux' needs PyAV (pyav=True)")
    p = os.fspath(path)
    res = VideoProbe(path=p)
    try:
        _probe(res, p, pyav, gop, sniffed)
    except Exception as exc:  # last resort: a bad file must never raise out of the probe
        res._fail("broken", f"could not probe: {type(exc).__name__}: {' '.join(str(exc).split())}")
    return res


def _probe(res: VideoProbe, p: str, pyav: bool, gop: str, sniffed: Sniff | None) -> None:
    s = sniffed if sniffed is not None else sniff(p)
    res.size = s.size
    if s.kind == "missing":
        res._fail("missing", s.detail)
        return
    if s.kind == "unreadable":
        res._fail("broken", f"unreadable: {s.detail}")
        return
    if s.is_placeholder:
        res._fail("placeholder", s.detail)
        return
    if s.magic == "parquet":
        res._fail("broken", f"a Parquet file ({human_size(s.size)}), not a video")
        return
    if s.magic == "unknown":
        # not an MP4/MOV, Matroska/WebM or AVI container (a PNG, a JPEG, random bytes): FFmpeg would still open
        # an image as a one-frame "video", so PyAV is not asked; lerobot writes every video as an MP4 container
        res._fail("broken", f"not a video: {s.detail}")
        return
    res.container = s.magic

    boxes = None
    if s.magic == "mp4":
        try:
            boxes = walk_mp4(p)
            if pyav and boxes.fragmented and boxes.has_moov and not boxes.truncated:
                boxes = walk_mp4(p, fragments=True)
        except DatasetError as exc:
            res._fail("broken", exc.message)
            return
        if not _apply_boxes(res, boxes):
            return
    if pyav:
        _apply_pyav(res, p, gop)
    if res.ok:
        try:
            _apply_times(res, p, boxes, pyav)
        except Exception as exc:  # a table that defeats the model must not make a playable file "broken"
            res.frame_times = None
            res.frame_times_unknown = f"could not compute the frame times: {type(exc).__name__}: " \
                                      f"{' '.join(str(exc).split())[:160]}"


def _apply_times(res: VideoProbe, path: str, boxes: Mp4Boxes | None, pyav: bool) -> None:
    """Fill ``frame_times`` (or ``frame_times_unknown``): from the boxes, else (``pyav``) by a packet demux."""
    from lerobot_tools.video.timing import UnknownTimes, demux_frame_times, frame_times_dict, nominal_rate

    why = "not an MP4 file: its frame times need a packet demux (--all-videos)"
    ft = None
    if boxes is not None:
        try:
            res.frame_times, res.nominal_fps = frame_times_dict(boxes)
            return
        except UnknownTimes as exc:
            why = str(exc)
    if ft is None and pyav and not (boxes is not None and boxes.fragmented):  # fragments: read already with pyav
        try:
            ft = demux_frame_times(path)
        except UnknownTimes as exc:
            why = f"{why}; demux: {exc}"
    if ft is None:
        res.frame_times_unknown = why
        return
    res.frame_times = ft.to_dict()
    res.nominal_fps = nominal_rate(ft)
