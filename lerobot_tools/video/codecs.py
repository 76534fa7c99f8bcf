"""Video codec names: the one table that maps MP4 fourccs, encoder/decoder names and common spellings to
FFmpeg's canonical codec names, and the encoder lrtool uses for each codec it writes.

``info.json`` of a LeRobot dataset stores the codec as FFmpeg reports it for the stream (``"av1"``,
``"h264"``, ``"hevc"``: lerobot ``datasets/video_utils.py`` ``get_video_info``), while files, encoders and
users spell it many ways (``av01``, ``libsvtav1``, ``h265``). Sources: the sample-entry fourccs of
ISO/IEC 14496-15 (``avc1``..``avc4``, ``hvc1``/``hev1``), the AV1-ISOBMFF and VP-codec-ISOBMFF bindings
(``av01``, ``vp09``/``vp08``), Dolby Vision (``dvav``/``dva1``/``dvh1``/``dvhe``), QuickTime (``apch``... ProRes,
``mjpa``/``jpeg`` Motion JPEG); FFmpeg's encoder names (``ffmpeg -encoders``).
"""

from __future__ import annotations

#: MP4/MOV sample-entry fourcc -> FFmpeg canonical codec name (what the box walker reports).
FOURCC_CODECS: dict[str, str] = {
    "avc1": "h264", "avc2": "h264", "avc3": "h264", "avc4": "h264", "dvav": "h264", "dva1": "h264",
    "hvc1": "hevc", "hev1": "hevc", "dvh1": "hevc", "dvhe": "hevc",
    "av01": "av1", "vp09": "vp9", "vp08": "vp8", "mp4v": "mpeg4",
    "mjpg": "mjpeg", "jpeg": "mjpeg", "mjpa": "mjpeg", "raw ": "rawvideo",
    "apch": "prores", "apcn": "prores", "apcs": "prores", "apco": "prores", "ap4h": "prores", "ap4x": "prores",
}

#: Other spellings of a codec (encoder, decoder, fourcc, common names), lower case -> canonical name; what
#: :func:`canonical_codec` accepts in ``info.json`` ``video.codec`` and in ``--gpu``/verdict queries.
CODEC_ALIASES: dict[str, str] = {
    "libsvtav1": "av1", "libaom-av1": "av1", "libdav1d": "av1", "av01": "av1", "aom": "av1",
    "avc": "h264", "avc1": "h264", "h.264": "h264", "libx264": "h264", "x264": "h264",
    "h265": "hevc", "h.265": "hevc", "hvc1": "hevc", "hev1": "hevc", "libx265": "hevc", "x265": "hevc",
    "mp4v": "mpeg4", "mpeg-4": "mpeg4", "xvid": "mpeg4", "divx": "mpeg4",
    "vp09": "vp9", "libvpx-vp9": "vp9", "vp08": "vp8", "libvpx": "vp8",
    "mpeg2": "mpeg2video", "mpeg1": "mpeg1video",
}

#: Canonical codec -> the FFmpeg encoder lrtool writes it with (test data, re-encode advice).
ENCODERS: dict[str, str] = {"h264": "libx264", "hevc": "libx265", "av1": "libsvtav1"}


def canonical_codec(name: str | None) -> str | None:
    """FFmpeg canonical codec name for a codec, encoder, decoder or fourcc name (``"libsvtav1"`` -> ``"av1"``,
    ``"h265"`` -> ``"hevc"``, ``"avc1"`` -> ``"h264"``); lower-cased input otherwise; None stays None."""
    if name is None:
        return None
    n = str(name).strip().lower()
    return CODEC_ALIASES.get(n, n)
