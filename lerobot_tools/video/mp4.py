"""Pure-Python ISO-BMFF (MP4/MOV) box walker: container facts from the headers alone.

Seeks over the top-level boxes (never reads ``mdat``), reads the ``moov`` box wherever it is (start or
end of the file) and parses only the boxes needed for the video track: ``mvhd``, ``mvex``/``mehd``/``trex``,
``tkhd``, ``edts``/``elst``, ``mdhd``, ``hdlr``, ``stsd`` (sample entry and its codec configuration record),
``stts``, ``ctts``, ``stsz``/``stz2`` and ``stss``; with ``fragments=True`` also every ``moof``
(``tfhd``/``tfdt``/``trun``). The timing boxes are kept as stored (:class:`SampleTables`);
:mod:`lerobot_tools.video.timing` turns them into every frame's presentation timestamp. A typical file costs 2-4
reads and well under a millisecond.

Sources: ISO/IEC 14496-12 (box header, 64-bit ``largesize``, ``size == 0`` = to end of file, movie/track
boxes, §8.6.1.2 ``stts``, §8.6.1.3 ``ctts``, §8.6.6 ``elst``, §8.8 movie fragments), ISO/IEC 14496-15 (``avcC``,
``hvcC``), AV1-ISOBMFF binding (``av1C``), VP-codec-ISOBMFF
binding (``vpcC``), ISO/IEC 14496-1 (``esds`` descriptors), ITU-T H.264 §7.3.2.1 (SPS syntax). Profile
names follow FFmpeg's ``libavcodec/profiles.c`` so they match what PyAV reports.
"""

from __future__ import annotations

import os
import struct
from dataclasses import dataclass, field

from lerobot_tools.errors import DatasetError
from lerobot_tools.video.codecs import FOURCC_CODECS

# MPEG-4 Systems objectTypeIndication (esds) -> codec, for ``mp4v`` sample entries.
_ESDS_OBJECT_TYPES = {0x20: "mpeg4", 0x21: "h264", 0x6A: "mpeg1video", 0x6C: "mjpeg",
                      **{oti: "mpeg2video" for oti in range(0x60, 0x66)}}

_H264_PROFILES = {66: "Baseline", 77: "Main", 88: "Extended", 100: "High", 110: "High 10",
                  122: "High 4:2:2", 144: "High 4:4:4", 244: "High 4:4:4 Predictive", 44: "CAVLC 4:4:4",
                  118: "Multiview High", 128: "Stereo High"}
_H264_HIGH_PROFILES = {100, 110, 122, 244, 44, 83, 86, 118, 128, 138, 139, 134, 135}
_HEVC_PROFILES = {1: "Main", 2: "Main 10", 3: "Main Still Picture", 4: "Rext"}
_AV1_PROFILES = {0: "Main", 1: "High", 2: "Professional"}
_CHROMA_IDC = {0: "gray", 1: "420", 2: "422", 3: "444"}

# Box types an ISO-BMFF file may start with (ISO/IEC 14496-12, QuickTime, 3GPP/DASH segments).
_FIRST_BOXES = {"ftyp", "moov", "mdat", "free", "skip", "wide", "styp", "sidx", "pnot", "uuid", "moof"}


@dataclass
class Mp4Boxes:
    """Facts about an MP4/MOV file read from its box headers (no sample data read).

    Attributes:
        top_level: top-level box types in file order, e.g. ``["ftyp", "free", "mdat", "moov"]``.
        has_moov: a ``moov`` (movie header/index) box exists.
        faststart: True if ``moov`` comes before the first ``mdat``; None if either is absent.
        fragmented: ``moof`` at top level or ``mvex`` inside ``moov`` (sample tables live in fragments).
        truncated: a box runs past end of file (partial download / cut copy).
        missing_bytes: how many bytes the last box runs past EOF (0 if not truncated).
        duration_s: video track ``mdhd`` duration / timescale in seconds (fallback ``mehd``, then ``mvhd``);
            None when unknown or zero (fragmented files with an empty ``moov``).
        frame_count: ``stsz``/``stz2`` sample_count of the video track; None when fragmented or absent.
        keyframes: 0-based sample indices from ``stss``, in decode order as ``stss`` stores them (with
            open-GOP B-frame reordering, e.g. x265 CRA pictures, a keyframe's display index can be a few
            frames later); None when there is no ``stss`` box, which per
            ISO/IEC 14496-12 means every sample is a sync sample (every frame is a keyframe). Also None
            when ``fragmented`` (then it means "unknown": demux the file to find keyframes).
        timescale: video track ``mdhd`` timescale (ticks per second).
        codec_fourcc: sample-entry type of the video track, e.g. ``"avc1"``, ``"hvc1"``, ``"av01"``.
        width, height: coded size in pixels from the visual sample entry (fallback: ``tkhd`` display size).
        fps: frame_count / duration_s when both are known.
        codec: FFmpeg canonical codec name derived from the fourcc (and ``esds`` for ``mp4v``).
        profile: profile name as FFmpeg spells it ("High", "Main 10", ...) from the codec configuration
            record (``avcC`` SPS, ``hvcC``, ``av1C``, ``vpcC``, ``esds``); None when not derivable.
        bit_depth: luma bit depth from the configuration record; None when not derivable.
        chroma: ``"420"``, ``"422"``, ``"444"`` or ``"gray"`` from the configuration record, or None.
        truncated_box: type of the box that runs past EOF (``"mdat"``, ``"moov"``, ...), or None.
        mdat_present_fraction: share (0..1) of the truncated ``mdat`` payload present on disk, else None.
        corrupt: description of a malformed box header that stopped the walk, else None.
        has_video_track: a track with handler ``vide`` was found in ``moov``.
        tables: the video track's timing tables (``stts``, ``ctts``, ``elst``, ``mdhd``/``mvhd`` timescales and,
            when :func:`walk_mp4` is asked for ``fragments``, every fragment's ``tfdt``/``trun`` records): what
            :mod:`lerobot_tools.video.timing` turns into every frame's presentation timestamp. None when the
            file has no readable video track.
    """

    top_level: list[str] = field(default_factory=list)
    has_moov: bool = False
    faststart: bool | None = None
    fragmented: bool = False
    truncated: bool = False
    missing_bytes: int = 0
    duration_s: float | None = None
    frame_count: int | None = None
    keyframes: list[int] | None = None
    timescale: int | None = None
    codec_fourcc: str | None = None
    width: int | None = None
    height: int | None = None
    fps: float | None = None
    codec: str | None = None
    profile: str | None = None
    bit_depth: int | None = None
    chroma: str | None = None
    truncated_box: str | None = None
    mdat_present_fraction: float | None = None
    corrupt: str | None = None
    has_video_track: bool = False
    tables: SampleTables | None = None


@dataclass
class FragmentRun:
    """The samples of one ``trun`` box of a fragmented MP4 (ISO/IEC 14496-12 §8.8.8), video track only.

    Attributes:
        base_dts: ``tfdt`` baseMediaDecodeTime of the fragment (media timescale), or None when the fragment
            has no ``tfdt`` (its samples then follow the previous fragment's, as FFmpeg's ``mov.c`` does).
        durations: per-sample decode durations (``trun`` sample_duration, else ``tfhd``/``trex`` default).
        offsets: per-sample composition time offsets (``trun`` 0x800; signed, as FFmpeg reads them), or None.
    """

    base_dts: int | None
    durations: list[int]
    offsets: list[int] | None


@dataclass
class SampleTables:
    """The timing boxes of the video track, as stored (no frame time computed here).

    Attributes:
        timescale: ``mdhd`` media timescale (ticks per second).
        movie_timescale: ``mvhd`` timescale (the unit of ``elst`` segment durations); None when absent.
        stts: ``stts`` runs in decode order as two int64 numpy arrays ``(sample_counts, sample_deltas)``.
        ctts: ``ctts`` runs ``(sample_counts, sample_offsets)`` (offsets read as signed 32-bit, like FFmpeg), or
            None when the box is absent (presentation order = decode order).
        elst: ``elst`` entries ``(segment_duration [movie timescale], media_time [media timescale; -1 = an
            empty edit], media_rate)``, or None without an edit list.
        sample_count: ``stsz``/``stz2`` sample count (0 in a fragmented file's empty ``moov``).
        default_duration: ``trex`` default sample duration (fragmented files), or None.
        fragments: the ``trun`` records of the video track in file order when the fragments were read
            (:func:`walk_mp4` with ``fragments=True``), else None.
        track_id: the video track's ``tkhd`` track_ID.
        file_size: bytes in the file: no table can describe more samples than that (each sample is at least a
            byte of ``mdat``), which bounds what a corrupt count can make anyone allocate.
    """

    timescale: int
    movie_timescale: int | None = None
    stts: tuple | None = None
    ctts: tuple | None = None
    elst: list[tuple[int, int, float]] | None = None
    sample_count: int = 0
    default_duration: int | None = None
    fragments: list[FragmentRun] | None = None
    track_id: int | None = None
    file_size: int = 0


#: Most ``stts``/``ctts``/``elst`` entries read from one box (a larger count in a small box is a corrupt file; the
#: count is also capped by the box's own size).
MAX_TABLE_ENTRIES = 50_000_000


def _runs(buf: bytes, start: int, end: int) -> tuple:
    """``(counts, values)`` of an ``stts``/``ctts`` payload (after version/flags come entry_count and the pairs),
    as numpy arrays (counts uint32 -> int64; values read as signed 32-bit, as FFmpeg's ``mov_read_ctts`` does, then
    int64; ``stts`` deltas are below 2**31 in any file FFmpeg plays)."""
    import numpy as np

    n = struct.unpack_from(">I", buf, start + 4)[0]
    n = max(0, min(n, (end - start - 8) // 8, MAX_TABLE_ENTRIES))
    raw = np.frombuffer(buf, dtype=">i4", count=2 * n, offset=start + 8)
    return raw[0::2].view(">u4").astype(np.int64), raw[1::2].astype(np.int64)


def _parse_elst(buf: bytes, start: int, end: int) -> list[tuple[int, int, float]]:
    version = buf[start]
    n = struct.unpack_from(">I", buf, start + 4)[0]
    size = 20 if version == 1 else 12
    n = min(n, (end - start - 8) // size)
    out = []
    off = start + 8
    for _ in range(n):
        if version == 1:
            dur, media_time, rate_int, rate_frac = struct.unpack_from(">Qqhh", buf, off)
        else:
            dur, media_time, rate_int, rate_frac = struct.unpack_from(">Iihh", buf, off)
        out.append((dur, media_time, rate_int + rate_frac / 65536))
        off += size
    return out


def _fourcc(raw: bytes) -> str:
    return raw.decode("latin-1")


def _plausible_type(raw: bytes) -> bool:
    return len(raw) == 4 and all(32 <= b < 127 for b in raw)


def _children(buf: bytes, start: int, end: int):
    """Yield ``(type, payload_start, payload_end)`` for boxes in ``buf[start:end]``; stops at a bad header."""
    off = start
    while off + 8 <= end:
        size, typ = struct.unpack_from(">I4s", buf, off)
        hdr = 8
        if size == 1:
            if off + 16 > end:
                return
            size = struct.unpack_from(">Q", buf, off + 8)[0]
            hdr = 16
        elif size == 0:
            size = end - off
        if size < hdr:
            return
        yield typ, off + hdr, min(off + size, end)
        off += size


class _Bits:
    """MSB-first bit reader with Exp-Golomb, for the H.264 SPS."""

    def __init__(self, data: bytes):
        self.data = data
        self.pos = 0

    def u(self, n: int) -> int:
        val = 0
        for _ in range(n):
            byte = self.data[self.pos >> 3]  # IndexError on overrun, caught by the caller
            val = (val << 1) | ((byte >> (7 - (self.pos & 7))) & 1)
            self.pos += 1
        return val

    def ue(self) -> int:
        zeros = 0
        while self.u(1) == 0:
            zeros += 1
            if zeros > 31:
                raise ValueError("bad Exp-Golomb code")
        return (1 << zeros) - 1 + self.u(zeros)


def _unescape_rbsp(nal: bytes) -> bytes:
    """Drop emulation-prevention bytes (00 00 03 -> 00 00), H.264 §7.4.1."""
    if b"\x00\x00\x03" not in nal:
        return nal
    out = bytearray()
    zeros = 0
    for b in nal:
        if zeros >= 2 and b == 3:
            zeros = 0
            continue
        out.append(b)
        zeros = zeros + 1 if b == 0 else 0
    return bytes(out)


def _parse_avcc(rec: bytes) -> tuple[str | None, int | None, str | None]:
    if len(rec) < 8 or (rec[5] & 0x1F) == 0:
        return None, None, None
    sps_len = struct.unpack_from(">H", rec, 6)[0]
    sps = _unescape_rbsp(rec[8 + 1 : 8 + sps_len])  # skip the 1-byte NAL header
    bits = _Bits(sps)
    profile_idc = bits.u(8)
    constraints = bits.u(8)
    bits.u(8)  # level_idc
    bits.ue()  # seq_parameter_set_id
    chroma_idc, depth = 1, 8
    if profile_idc in _H264_HIGH_PROFILES:
        chroma_idc = bits.ue()
        if chroma_idc == 3:
            bits.u(1)  # separate_colour_plane_flag
        depth = bits.ue() + 8
    name = _H264_PROFILES.get(profile_idc)
    if profile_idc == 66 and constraints & 0x40:  # constraint_set1_flag
        name = "Constrained Baseline"
    elif profile_idc in (110, 122, 244) and constraints & 0x10 and name:  # constraint_set3_flag
        name = name.replace(" Predictive", "") + " Intra"
    return name, depth, _CHROMA_IDC.get(chroma_idc)


def _parse_hvcc(rec: bytes) -> tuple[str | None, int | None, str | None]:
    if len(rec) < 19:
        return None, None, None
    profile_idc = rec[1] & 0x1F
    if profile_idc == 0:  # fall back to the first compatibility flag set, as FFmpeg does
        compat = struct.unpack_from(">I", rec, 2)[0]
        profile_idc = next((j for j in range(1, 32) if compat & (1 << (31 - j))), 0)
    return _HEVC_PROFILES.get(profile_idc), (rec[17] & 0x07) + 8, _CHROMA_IDC.get(rec[16] & 0x03)


def _parse_av1c(rec: bytes) -> tuple[str | None, int | None, str | None]:
    if len(rec) < 3 or not rec[0] & 0x80:
        return None, None, None
    seq_profile = rec[1] >> 5
    high_bitdepth, twelve_bit, mono = (rec[2] >> 6) & 1, (rec[2] >> 5) & 1, (rec[2] >> 4) & 1
    ssx, ssy = (rec[2] >> 3) & 1, (rec[2] >> 2) & 1
    depth = (12 if twelve_bit else 10) if seq_profile == 2 and high_bitdepth else (10 if high_bitdepth else 8)
    chroma = "gray" if mono else "420" if ssx and ssy else "422" if ssx else "444"
    return _AV1_PROFILES.get(seq_profile), depth, chroma


def _parse_vpcc(rec: bytes) -> tuple[str | None, int | None, str | None]:
    if len(rec) < 7 or rec[0] != 1:  # only version 1 (the one FFmpeg and libwebm write)
        return None, None, None
    profile, depth, sub = rec[4], rec[6] >> 4, (rec[6] >> 1) & 0x07
    chroma = {0: "420", 1: "420", 2: "422", 3: "444"}.get(sub)
    return (f"Profile {profile}" if profile <= 3 else None), (depth or None), chroma


def _descriptor(buf: bytes, off: int) -> tuple[int, int, int]:
    """Read an MPEG-4 descriptor header -> (tag, payload_start, payload_end)."""
    tag = buf[off]
    off += 1
    length = 0
    for _ in range(4):
        b = buf[off]
        off += 1
        length = (length << 7) | (b & 0x7F)
        if not b & 0x80:
            break
    return tag, off, off + length


def _parse_esds(rec: bytes) -> tuple[str | None, str | None, int | None, str | None]:
    """-> (codec, profile, bit_depth, chroma) from an ``esds`` payload (after version/flags)."""
    tag, start, end = _descriptor(rec, 4)
    if tag != 0x03:
        return None, None, None, None
    flags = rec[start + 2]
    off = start + 3
    if flags & 0x80:
        off += 2
    if flags & 0x40:
        off += 1 + rec[off]
    if flags & 0x20:
        off += 2
    tag, start, end = _descriptor(rec, off)
    if tag != 0x04:
        return None, None, None, None
    codec = _ESDS_OBJECT_TYPES.get(rec[start])
    if codec != "mpeg4":
        return codec, None, None, None
    profile = None
    dsi_off = start + 13
    if dsi_off < end:
        tag, dstart, dend = _descriptor(rec, dsi_off)
        vos = rec[dstart:dend].find(b"\x00\x00\x01\xb0") if tag == 0x05 else -1
        if vos >= 0 and dstart + vos + 4 < dend:
            level_ind = rec[dstart + vos + 4] >> 4
            profile = {0: "Simple Profile", 15: "Advanced Simple Profile"}.get(level_ind)
    # Simple and Advanced Simple Profile are 8-bit 4:2:0 only (ISO/IEC 14496-2 Annex N).
    return codec, profile, (8 if profile else None), ("420" if profile else None)


def _parse_sample_entry(buf: bytes, start: int, end: int, out: Mp4Boxes) -> None:
    """Parse ``stsd`` payload: the first sample entry's type, coded size and codec configuration."""
    if end - start < 16:
        return
    entry_size, entry_type = struct.unpack_from(">I4s", buf, start + 8)
    entry_start = start + 8
    entry_end = min(entry_start + entry_size, end)
    out.codec_fourcc = _fourcc(entry_type)
    out.codec = FOURCC_CODECS.get(out.codec_fourcc)
    visual = entry_start + 8 + 8  # box header, reserved(6), data_reference_index(2)
    if visual + 20 <= entry_end:
        w, h = struct.unpack_from(">HH", buf, visual + 16)
        if w and h:
            out.width, out.height = w, h
    for typ, cstart, cend in _children(buf, visual + 70, entry_end):
        rec = buf[cstart:cend]
        try:
            if typ == b"avcC":
                out.profile, out.bit_depth, out.chroma = _parse_avcc(rec)
            elif typ == b"hvcC":
                out.profile, out.bit_depth, out.chroma = _parse_hvcc(rec)
            elif typ == b"av1C":
                out.profile, out.bit_depth, out.chroma = _parse_av1c(rec)
            elif typ == b"vpcC":
                out.profile, out.bit_depth, out.chroma = _parse_vpcc(rec)
            elif typ == b"esds":
                codec, out.profile, out.bit_depth, out.chroma = _parse_esds(rec)
                out.codec = codec or out.codec
            else:
                continue
        except (IndexError, ValueError, struct.error):  # malformed record: leave the fields unknown
            pass
        break


def _full_box_times(buf: bytes, start: int) -> tuple[int, int]:
    """-> (timescale, duration) from an ``mvhd``/``mdhd`` payload (version 0 or 1)."""
    if buf[start] == 1:
        return struct.unpack_from(">IQ", buf, start + 4 + 16)
    return struct.unpack_from(">II", buf, start + 4 + 8)


def _parse_trak(buf: bytes, start: int, end: int) -> dict | None:
    """Return a dict of video-track facts, or None if this ``trak`` is not a video track."""
    info: dict = {}
    for typ, s, e in _children(buf, start, end):
        if typ == b"tkhd" and e - s >= 84:
            w, h = struct.unpack_from(">II", buf, e - 8)  # 16.16 fixed point, last two fields
            info["tkhd_size"] = (w >> 16, h >> 16)
            info["track_id"] = struct.unpack_from(">I", buf, s + (20 if buf[s] == 1 else 12))[0]
        elif typ == b"edts":
            for t2, s2, e2 in _children(buf, s, e):
                if t2 == b"elst" and e2 - s2 >= 8:
                    info["elst"] = _parse_elst(buf, s2, e2)
        elif typ == b"mdia":
            for t2, s2, e2 in _children(buf, s, e):
                if t2 == b"mdhd" and e2 - s2 >= 24:
                    info["timescale"], info["duration"] = _full_box_times(buf, s2)
                elif t2 == b"hdlr" and e2 - s2 >= 12:
                    info["handler"] = buf[s2 + 8 : s2 + 12]
                elif t2 == b"minf":
                    for t3, s3, e3 in _children(buf, s2, e2):
                        if t3 == b"stbl":
                            info["stbl"] = (s3, e3)
    if info.get("handler") != b"vide":
        return None
    return info


def _parse_moov(buf: bytes, out: Mp4Boxes) -> None:
    movie_timescale = movie_duration = fragment_duration = None
    video = None
    trex: dict[int, int] = {}  # track_ID -> default_sample_duration
    for typ, s, e in _children(buf, 0, len(buf)):
        if typ == b"mvhd" and e - s >= 20:
            movie_timescale, movie_duration = _full_box_times(buf, s)
        elif typ == b"mvex":
            out.fragmented = True
            for t2, s2, e2 in _children(buf, s, e):
                if t2 == b"mehd" and e2 - s2 >= 8:
                    fmt = ">Q" if buf[s2] == 1 and e2 - s2 >= 12 else ">I"
                    fragment_duration = struct.unpack_from(fmt, buf, s2 + 4)[0]
                elif t2 == b"trex" and e2 - s2 >= 24:
                    track, _, default_duration = struct.unpack_from(">III", buf, s2 + 4)
                    trex[track] = default_duration
        elif typ == b"trak" and video is None:
            video = _parse_trak(buf, s, e)
    if video is None:
        return
    out.has_video_track = True
    timescale, duration = video.get("timescale"), video.get("duration")
    if timescale:
        out.timescale = timescale
        out.tables = SampleTables(timescale, movie_timescale, elst=video.get("elst"), track_id=video.get("track_id"),
                                  default_duration=trex.get(video.get("track_id")))
    if "stbl" in video:
        for typ, s, e in _children(buf, *video["stbl"]):
            if out.tables is not None and typ in (b"stts", b"ctts") and e - s >= 8:
                runs = _runs(buf, s, e)
                if typ == b"stts":
                    out.tables.stts = runs
                else:
                    out.tables.ctts = runs
            if typ == b"stsd":
                _parse_sample_entry(buf, s, e, out)
            elif typ in (b"stsz", b"stz2") and e - s >= 12:
                out.frame_count = struct.unpack_from(">I", buf, s + 8)[0]
                if out.tables is not None:
                    out.tables.sample_count = out.frame_count
            elif typ == b"stss" and e - s >= 8:
                n = struct.unpack_from(">I", buf, s + 4)[0]
                n = min(n, (e - s - 8) // 4)
                out.keyframes = [k - 1 for k in struct.unpack_from(f">{n}I", buf, s + 8)]
    if out.width is None and video.get("tkhd_size", (0, 0))[0]:
        out.width, out.height = video["tkhd_size"]
    # Duration: the video track's own (mdhd), else the fragment duration (mehd) or the movie's (mvhd).
    unknown = {0, 0xFFFFFFFF, 0xFFFFFFFFFFFFFFFF}
    if timescale and duration not in unknown and duration is not None:
        out.duration_s = duration / timescale
    elif movie_timescale and fragment_duration not in unknown and fragment_duration is not None:
        out.duration_s = fragment_duration / movie_timescale
    elif movie_timescale and movie_duration not in unknown and movie_duration is not None:
        out.duration_s = movie_duration / movie_timescale


def _parse_moof(buf: bytes, track_id: int | None, default_duration: int | None, limit: int) -> list[FragmentRun]:
    """The ``trun`` records of the video track in one ``moof`` payload (ISO/IEC 14496-12 §8.8.7-8.8.12)."""
    out: list[FragmentRun] = []
    for typ, s, e in _children(buf, 0, len(buf)):
        if typ != b"traf":
            continue
        tfhd_default = None
        base = None
        mine = True
        for t2, s2, e2 in _children(buf, s, e):
            if t2 == b"tfhd" and e2 - s2 >= 8:
                flags = int.from_bytes(buf[s2 + 1 : s2 + 4], "big")
                tid = struct.unpack_from(">I", buf, s2 + 4)[0]
                mine = track_id is None or tid == track_id
                off = s2 + 8 + (8 if flags & 0x1 else 0) + (4 if flags & 0x2 else 0)
                if flags & 0x8 and off + 4 <= e2:
                    tfhd_default = struct.unpack_from(">I", buf, off)[0]
            elif t2 == b"tfdt" and e2 - s2 >= 8:
                base = struct.unpack_from(">Q" if buf[s2] == 1 else ">I", buf, s2 + 4)[0]
            elif t2 == b"trun" and e2 - s2 >= 8 and mine:
                flags = int.from_bytes(buf[s2 + 1 : s2 + 4], "big")
                n = min(struct.unpack_from(">I", buf, s2 + 4)[0], limit)
                off = s2 + 8 + (4 if flags & 0x1 else 0) + (4 if flags & 0x4 else 0)
                fields = [bit for bit in (0x100, 0x200, 0x400, 0x800) if flags & bit]
                n = min(n, (e2 - off) // (4 * len(fields))) if fields else n
                fmt = "".join("i" if (bit == 0x800) else "I" for bit in fields)
                dflt = tfhd_default if tfhd_default is not None else (default_duration or 0)
                durations, offsets = [], ([] if flags & 0x800 else None)
                rec = struct.Struct(">" + fmt) if fields else None
                for _ in range(n):
                    vals = dict(zip(fields, rec.unpack_from(buf, off))) if rec else {}
                    off += 4 * len(fields)
                    durations.append(vals.get(0x100, dflt))
                    if offsets is not None:  # signed in version 1; FFmpeg reads both versions as signed
                        offsets.append(vals[0x800])
                out.append(FragmentRun(base, durations, offsets))
                base = None  # a second trun of the same traf continues from the first
    return out


#: the largest ``moof`` box read when the fragments are parsed (a bigger one is a corrupt file)
MAX_MOOF_BYTES = 64 * 2**20


def walk_mp4(path: str | os.PathLike, *, fragments: bool = False) -> Mp4Boxes:
    """Walk the boxes of an MP4/MOV file and return what its headers say (no sample data read).

    Args:
        path: an MP4/MOV (ISO-BMFF) file.
        fragments: also read every ``moof`` box of a fragmented file (one read per fragment) and keep the
            video track's ``tfdt``/``trun`` records in ``tables.fragments``; without it a fragmented file's
            frame times stay unknown (its ``moov`` holds no sample table).

    Returns:
        :class:`Mp4Boxes`. A file cut short is reported, not raised: ``truncated`` / ``missing_bytes`` /
        ``truncated_box``, and ``has_moov=False`` when the index was never reached.

    Raises:
        DatasetError: the file cannot be opened or read, is empty, or does not start with an ISO-BMFF
            box header (one-line message naming the file).
    """
    p = os.fspath(path)
    out = Mp4Boxes()
    try:
        with open(p, "rb", buffering=0) as fh:
            file_size = os.fstat(fh.fileno()).st_size
            if file_size == 0:
                raise DatasetError("not an MP4 file: empty (0 bytes)", p)
            moov_at = mdat_at = None
            moofs: list[tuple[int, int]] = []
            off = 0
            while off < file_size:
                fh.seek(off)
                head = fh.read(16)
                if len(head) < 8:
                    out.truncated, out.missing_bytes, out.truncated_box = True, 8 - len(head), "?"
                    break
                size, raw_type = struct.unpack_from(">I4s", head)
                if not _plausible_type(raw_type):
                    if off == 0:
                        raise DatasetError(f"not an MP4 file: no ISO-BMFF box header (first bytes {head[:8].hex(' ')})", p)
                    out.corrupt = f"garbage where a box header should be at byte {off} ({head[:8].hex(' ')})"
                    break
                typ = _fourcc(raw_type)
                if off == 0 and typ not in _FIRST_BOXES:
                    raise DatasetError(f"not an MP4 file: starts with {head[:8]!r}, not an ISO-BMFF box such as 'ftyp'", p)
                hdr = 8
                if size == 1:
                    if len(head) < 16:
                        out.truncated, out.missing_bytes, out.truncated_box = True, 16 - len(head), typ
                        out.top_level.append(typ)
                        break
                    size = struct.unpack_from(">Q", head, 8)[0]
                    hdr = 16
                elif size == 0:
                    size = file_size - off
                if size < hdr:
                    if off == 0:
                        raise DatasetError(f"not an MP4 file: invalid first box size {size}", p)
                    out.corrupt = f"'{typ}' box at byte {off} has invalid size {size}"
                    break
                out.top_level.append(typ)
                end = off + size
                if typ == "moov" and not out.has_moov:
                    out.has_moov = True
                    moov_at = off
                    fh.seek(off + hdr)
                    buf = fh.read(min(end, file_size) - off - hdr)
                    try:
                        _parse_moov(buf, out)
                    except (IndexError, ValueError, struct.error) as exc:
                        out.corrupt = f"malformed moov box ({exc})"
                elif typ == "mdat" and mdat_at is None:
                    mdat_at = off
                elif typ == "moof":
                    out.fragmented = True
                    if fragments:
                        moofs.append((off + hdr, min(end, file_size) - off - hdr))
                if end > file_size:
                    out.truncated, out.missing_bytes, out.truncated_box = True, end - file_size, typ
                    if typ == "mdat":
                        out.mdat_present_fraction = max(0.0, (file_size - off - hdr) / max(1, size - hdr))
                    break
                off = end
            if out.tables is not None:
                out.tables.file_size = file_size
            if moofs and out.tables is not None:
                runs: list[FragmentRun] = []
                for start, size in moofs:
                    if size > MAX_MOOF_BYTES:
                        out.corrupt = f"a moof box of {size} bytes (over {MAX_MOOF_BYTES} bytes)"
                        break
                    fh.seek(start)
                    try:
                        runs += _parse_moof(fh.read(size), out.tables.track_id, out.tables.default_duration,
                                            max(0, file_size - sum(len(r.durations) for r in runs)))
                    except (IndexError, ValueError, struct.error) as exc:
                        out.corrupt = f"malformed moof box at byte {start} ({exc})"
                        break
                out.tables.fragments = runs
    except OSError as exc:
        raise DatasetError(f"cannot read MP4 file: {exc.strerror or exc}", p) from None
    if moov_at is not None and mdat_at is not None:
        out.faststart = moov_at < mdat_at
    if out.fragmented:  # moov's sample tables are empty; the frame index lives in the moofs
        out.frame_count = None
        out.keyframes = None
    if out.frame_count and out.duration_s:
        out.fps = out.frame_count / out.duration_s
    return out
