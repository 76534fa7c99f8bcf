"""Every frame's presentation timestamp (PTS), from the MP4 sample tables or a packet demux, and what is odd about it.

:func:`frame_times` computes the PTS of every frame of an MP4's video track from its boxes, without reading a byte
of sample data (the tables come from :func:`lerobot_tools.video.mp4.walk_mp4`), the way FFmpeg's mov demuxer
(``libavformat/mov.c``, default options ``advanced_editlist=1``, ``ignore_editlist=0``) presents them:

* decode times from ``stts`` (``DTS_0 = 0``; fragmented files: ``tfdt`` baseMediaDecodeTime, else the end of the
  previous fragment, with ``trun`` durations and the ``tfhd``/``trex`` defaults), ISO/IEC 14496-12 §8.6.1.2,
  §8.8.8, §8.8.12;
* plus the composition offsets of ``ctts`` / ``trun`` (§8.6.1.3; B-frame reordering);
* minus the media time of the edit list's one media segment, plus the empty edits before it converted from the
  movie timescale (``mvhd``) to the media timescale (``mdhd``) with rounding to nearest, as FFmpeg's
  ``av_rescale`` does (§8.6.6 ``elst``);
* sorted: frames are presented in PTS order.

Edit lists that FFmpeg applies by dropping or re-timing samples (several media segments, a rate other than 1, a
media segment that starts after the first frame or ends before the last one) are not modelled: such a file's
times come from :func:`demux_frame_times` (PyAV packet demux, no decoding) or stay unknown.

:func:`analyse` compares the times with the constant grid ``first + k / fps`` and names what differs: a start
offset, dropped frames (a step of several frame periods), duplicated frames (a step of less than half a period),
a variable frame rate, a time base that cannot hold ``1 / fps`` (times rounded to it). :func:`locate` finds the
frame each loader query lands on: upstream lerobot (0.4.4 ``datasets/video_utils.py``) decodes the frame whose PTS
is nearest to the query and raises ``FrameTimestampError`` when it is more than ``tolerance_s`` away.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from lerobot_tools.video.mp4 import Mp4Boxes, SampleTables

#: PTS compared with a grid point closer than this are on it (seconds): float noise of ``k / fps``
ON_GRID_S = 1e-6


@dataclass
class FrameTimes:
    """The presentation timestamps of every frame of one video track.

    Attributes:
        timescale: ticks per second of ``ticks`` (the ``mdhd`` media timescale; PyAV's ``stream.time_base``).
        ticks: int64 array of shape ``(frames,)``: every frame's PTS in ticks, in presentation order (sorted).
        end: the tick where the last frame ends (its PTS plus its duration).
        source: ``"moov"`` (the sample tables in ``moov``), ``"fragments"`` (``moof``/``trun`` records) or
            ``"demux"`` (PyAV packet timestamps).
        start_note: where a non-zero first PTS comes from (an empty edit, a fragmented file without an edit
            list hiding the encoder's reorder delay, a ``tfdt`` that does not start at 0), or None.
        reordered: the file has composition offsets (``ctts``/``trun``): B-frames, decode order differs from
            presentation order.
        edit: what the edit list did (``"media time 1024"``, ``"empty edit 333 ms"``), or None.
    """

    timescale: int
    ticks: np.ndarray
    end: int
    source: str = "moov"
    start_note: str | None = None
    reordered: bool = False
    edit: str | None = None

    @property
    def seconds(self) -> np.ndarray:
        """float64 array ``(frames,)``: every frame's PTS in seconds (``ticks / timescale``)."""
        return self.ticks / self.timescale

    @property
    def count(self) -> int:
        """Number of frames."""
        return int(len(self.ticks))

    @property
    def end_s(self) -> float:
        """Where the last frame ends, in seconds."""
        return self.end / self.timescale

    def to_dict(self) -> dict[str, Any]:
        """Compact JSON form: the steps between frames run-length encoded (one run for a constant frame rate),
        so a probe carrying it stays small; :meth:`from_dict` inverts it exactly."""
        t = self.ticks
        runs: list[list[int]] = []
        if len(t) > 1 and int(t[-1] - t[0]) == (len(t) - 1) * int(t[1] - t[0]) and (np.diff(t) == t[1] - t[0]).all():
            runs = [[int(t[1] - t[0]), len(t) - 1]]
        elif len(t) > 1:
            steps = np.diff(t)
            change = np.flatnonzero(steps[1:] != steps[:-1]) + 1
            starts = np.concatenate(([0], change))
            counts = np.diff(np.concatenate((starts, [len(steps)])))
            runs = [[int(steps[s]), int(n)] for s, n in zip(starts, counts)]
        return {"timescale": int(self.timescale), "first": int(t[0]) if len(t) else None, "runs": runs,
                "end": int(self.end), "source": self.source, "start_note": self.start_note,
                "reordered": self.reordered, "edit": self.edit}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "FrameTimes":
        """Inverse of :meth:`to_dict`.

        Raises:
            KeyError, TypeError, ValueError: ``d`` is not a serialised :class:`FrameTimes`.
        """
        first = d["first"]
        if first is None:
            ticks = np.zeros(0, dtype=np.int64)
        else:
            steps = [np.full(int(n), int(s), dtype=np.int64) for s, n in d["runs"]]
            ticks = np.concatenate(([np.int64(first)], *steps)).astype(np.int64) if steps else \
                np.array([first], dtype=np.int64)
            ticks = np.cumsum(ticks)
        return cls(int(d["timescale"]), ticks, int(d["end"]), d.get("source", "moov"), d.get("start_note"),
                   bool(d.get("reordered")), d.get("edit"))


class UnknownTimes(Exception):
    """The frame times cannot be computed from the boxes (the message says why, in one line)."""


def _rescale(value: int, num: int, den: int) -> int:
    """``value * num / den`` rounded to nearest, halves away from zero (FFmpeg ``av_rescale``)."""
    q, r = divmod(abs(value) * num, den)
    if 2 * r >= den:
        q += 1
    return q if value >= 0 else -q


def _expand(counts: np.ndarray, values: np.ndarray, n: int | None = None) -> np.ndarray:
    """``values`` repeated ``counts`` times, at most ``n`` entries (the counts are clipped before anything is
    allocated: a corrupt count never costs more than ``n``)."""
    if n is not None and int(counts.sum()) > n:
        counts = np.diff(np.minimum(np.cumsum(counts), n), prepend=0)
    return np.repeat(values, counts)


def _decode_times(tables: SampleTables) -> tuple[np.ndarray, np.ndarray, bool, str | None]:
    """``(dts, composition offsets, reordered, start note)`` per sample in decode order."""
    if tables.fragments:
        dts, offs = [], []
        t = 0
        late_start = None
        for i, run in enumerate(tables.fragments):
            if run.base_dts is not None:
                if i == 0 and run.base_dts:
                    late_start = run.base_dts
                t = run.base_dts
            d = np.asarray(run.durations, dtype=np.int64)
            starts = t + np.concatenate(([0], np.cumsum(d)[:-1])) if len(d) else np.zeros(0, np.int64)
            dts.append(starts)
            offs.append(np.asarray(run.offsets, dtype=np.int64) if run.offsets is not None
                        else np.zeros(len(d), np.int64))
            t += int(d.sum())
        dts_a = np.concatenate(dts) if dts else np.zeros(0, np.int64)
        off_a = np.concatenate(offs) if offs else np.zeros(0, np.int64)
        note = f"the first fragment's decode time (tfdt) is {late_start} ticks" if late_start else None
        return dts_a, off_a, bool(np.any(off_a)), note
    if tables.stts is None:
        raise UnknownTimes("the video track has no stts box")
    counts, deltas = tables.stts
    n = int(counts.sum())
    if tables.file_size and n > tables.file_size:
        raise UnknownTimes(f"stts describes {n} samples, more than the file's {tables.file_size} bytes can hold")
    if tables.sample_count and n != tables.sample_count:
        raise UnknownTimes(f"stts describes {n} samples but stsz holds {tables.sample_count}")
    if len(counts) == 1:  # one run of equal deltas: the common case
        dts = np.arange(n, dtype=np.int64) * int(deltas[0])
    else:
        d = _expand(counts, deltas)
        dts = np.concatenate(([0], np.cumsum(d)[:-1])).astype(np.int64) if n else np.zeros(0, np.int64)
    if tables.ctts is not None:
        ccounts, coffs = tables.ctts
        off = _expand(ccounts, coffs, n)
        if len(off) < n:
            off = np.concatenate((off, np.zeros(n - len(off), np.int64)))
    else:
        off = np.zeros(n, np.int64)
    return dts, off, tables.ctts is not None and bool(np.any(off)), None


def frame_times(boxes: Mp4Boxes) -> FrameTimes:
    """Every frame's PTS of the video track, from the boxes :func:`~lerobot_tools.video.mp4.walk_mp4` read (see the
    module docstring for the rules, ISO/IEC 14496-12 and FFmpeg ``libavformat/mov.c``).

    Args:
        boxes: a walk of the file; a fragmented file needs ``walk_mp4(path, fragments=True)``.

    Returns:
        The :class:`FrameTimes` (``source`` ``"moov"`` or ``"fragments"``).

    Raises:
        UnknownTimes: no video track or timescale, a fragmented file whose fragments were not read, tables that
            disagree, or an edit list FFmpeg applies by dropping or re-timing frames (one-line reason).
    """
    tables = boxes.tables
    if tables is None or not tables.timescale:
        raise UnknownTimes("no video track with a timescale")
    if boxes.fragmented and tables.fragments is None:
        raise UnknownTimes("fragmented MP4: the frame times are in the fragments (read them with --all-videos)")
    dts, off, reordered, note = _decode_times(tables)
    if len(dts) == 0:
        raise UnknownTimes("the video track holds no frames")
    raw = dts + off
    if tables.stts is not None and len(tables.stts[0]) == 1 and not tables.fragments:
        end_raw = int(raw.max()) + int(tables.stts[1][0])  # every sample lasts the one delta
    else:
        durations = np.diff(np.concatenate((dts, [dts[-1] + _last_duration(tables)])))
        end_raw = int((raw + durations).max())
    shift, delay, edit, start_note = _edit(tables, int(raw.min()), int(raw.max()))
    ticks = raw - shift + delay
    if reordered or (len(ticks) > 1 and (np.diff(ticks) < 0).any()):
        ticks = ticks[np.argsort(ticks, kind="stable")]
    end = end_raw - shift + delay
    if start_note is None and ticks[0] != 0:
        if boxes.fragmented and tables.elst is None and reordered:
            start_note = (f"a fragmented MP4 with B-frames and no edit list: the encoder's reorder delay "
                          f"({int(ticks[0])} ticks) is not hidden")
        else:
            start_note = note or f"the first frame's decode and composition times put it at {int(ticks[0])} ticks"
    return FrameTimes(tables.timescale, ticks.astype(np.int64), end, "fragments" if tables.fragments else "moov",
                      start_note if ticks[0] != 0 else None, reordered, edit)


def frame_times_dict(boxes: Mp4Boxes) -> tuple[dict, float | None]:
    """:meth:`FrameTimes.to_dict` of :func:`frame_times` and :func:`nominal_rate`, computed without numpy for the
    common file (one run of equal ``stts`` deltas, no composition offsets, not fragmented: every file lerobot writes
    with AV1 or without B-frames); any other file goes through :func:`frame_times`.

    Raises:
        UnknownTimes: as :func:`frame_times`.
    """
    t = boxes.tables
    if (t is not None and t.timescale and not boxes.fragmented and t.ctts is None and t.stts is not None
            and len(t.stts[0]) == 1 and int(t.stts[0][0]) > 0
            and (not t.sample_count or int(t.stts[0][0]) == t.sample_count)
            and (not t.file_size or int(t.stts[0][0]) <= t.file_size)):
        n, delta = int(t.stts[0][0]), int(t.stts[1][0])
        shift, delay, edit, note = _edit(t, 0, (n - 1) * delta)
        first = delay - shift
        d = {"timescale": int(t.timescale), "first": first, "runs": [[delta, n - 1]] if n > 1 else [],
             "end": n * delta + first, "source": "moov",
             "start_note": (note or f"the first frame's decode and composition times put it at {first} ticks")
             if first else None, "reordered": False, "edit": edit}
        return d, (t.timescale / delta if n > 1 and delta > 0 else None)
    ft = frame_times(boxes)
    d = ft.to_dict()
    if len(d["runs"]) == 1 and d["runs"][0][0] > 0:  # a constant rate (x264 with B-frames, sorted): no second pass
        return d, ft.timescale / d["runs"][0][0]
    return d, nominal_rate(ft)


def _last_duration(tables: SampleTables) -> int:
    if tables.fragments:
        for run in reversed(tables.fragments):
            if run.durations:
                return int(run.durations[-1])
        return 0
    counts, deltas = tables.stts
    return int(deltas[-1]) if len(deltas) else 0


def _edit(tables: SampleTables, raw_min: int, raw_max: int) -> tuple[int, int, str | None, str | None]:
    """``(media time subtracted, empty-edit delay added, description, start note)`` of the edit list.

    Raises:
        UnknownTimes: an edit list this model does not reproduce (see the module docstring).
    """
    if not tables.elst:
        return 0, 0, None, None
    leading_empty = 0
    media: list[tuple[int, int, float]] = []
    for dur, media_time, rate in tables.elst:
        if media_time == -1:
            if media:
                raise UnknownTimes("the edit list has an empty edit after its media segment")
            leading_empty += dur
        else:
            media.append((dur, media_time, rate))
    if len(media) > 1:
        raise UnknownTimes(f"the edit list has {len(media)} media segments (FFmpeg re-times frames across them)")
    mts = tables.movie_timescale
    if (leading_empty or (media and media[0][0])) and not mts:
        raise UnknownTimes("the edit list needs the movie timescale, but there is no mvhd box")
    delay = _rescale(leading_empty, tables.timescale, mts) if leading_empty else 0
    shift = 0
    parts = []
    if media:
        dur, shift, rate = media[0]
        if rate != 1:
            raise UnknownTimes(f"the edit list plays its media at rate {rate:g}")
        if raw_min < shift:
            raise UnknownTimes(f"the edit list starts at media time {shift}, after the first frame ({raw_min}):"
                               " FFmpeg drops or re-times the frames before it")
        if dur:
            stop = shift + _rescale(dur, tables.timescale, mts)
            if raw_max >= stop:
                raise UnknownTimes(f"the edit list ends at media time {stop}, before the last frame "
                                   f"({raw_max}): FFmpeg drops the frames after it")
        if shift:
            parts.append(f"media time {shift}")
    note = None
    if leading_empty:
        ms = leading_empty * 1000 / mts
        parts.append(f"empty edit {leading_empty}/{mts} s ({ms:g} ms)")
        exact = leading_empty * tables.timescale / mts
        rounded = "" if exact == delay else f", rounded from {exact:.2f}"
        note = f"an empty edit (edit list) delays every frame by {ms:g} ms ({delay} ticks{rounded})"
    return shift, delay, ", ".join(parts) or None, note


def demux_frame_times(path: str | os.PathLike) -> FrameTimes:
    """Every frame's PTS of the first video stream, read by demuxing its packets with PyAV (no decoding; reads
    the whole file). Packets FFmpeg marks as discarded (cut by an edit list) and packets without a PTS are left
    out, as a decoder would not present them.

    Raises:
        UnknownTimes: PyAV cannot open the file, it has no video stream, or no packet has a PTS.
    """
    import av

    try:
        container = av.open(os.fspath(path), mode="r", metadata_errors="replace")
    except Exception as exc:  # av.error.FFmpegError, OSError
        raise UnknownTimes(f"FFmpeg cannot open it: {' '.join(str(exc).split())}") from None
    with container:
        if not container.streams.video:
            raise UnknownTimes("no video stream")
        stream = container.streams.video[0]
        tb = stream.time_base
        pts, ends = [], []
        reordered = False
        try:
            for packet in container.demux(stream):
                if packet.size == 0 or packet.pts is None or getattr(packet, "is_discard", False):
                    continue
                if packet.dts is not None and packet.dts != packet.pts:
                    reordered = True
                pts.append(packet.pts)
                ends.append(packet.pts + (packet.duration or 0))
        except Exception as exc:
            raise UnknownTimes(f"demux stopped after {len(pts)} packets: {' '.join(str(exc).split())}") from None
    if not pts:
        raise UnknownTimes("no packet has a presentation timestamp")
    if tb is None or tb.numerator != 1:
        # express the times in a 1/N timescale (MP4 and Matroska time bases are 1/N already)
        scale = tb.denominator if tb is not None else 1_000_000
        pts = [round(p * (tb or 0) * scale) for p in pts]
        ends = [round(e * (tb or 0) * scale) for e in ends]
        timescale = scale
    else:
        timescale = tb.denominator
    ticks = np.sort(np.asarray(pts, dtype=np.int64))
    note = f"the first frame's PTS is {int(ticks[0])} ticks (FFmpeg's demuxer)" if ticks[0] != 0 else None
    return FrameTimes(timescale, ticks, int(max(ends)), "demux", note, reordered, None)


# ------------------------------------------------------------------------------------------------ analysis
@dataclass
class TimingCauses:
    """What differs between a file's frame times and the constant grid ``first + k / fps``.

    Attributes:
        start_s: the first frame's PTS in seconds (0 for a writer-standard file).
        start_note: where a non-zero start comes from (:attr:`FrameTimes.start_note`).
        dropped: frames missing from the grid (steps of two or more periods), and ``dropped_at`` the PTS
            (seconds) after which the first gap opens.
        duplicated: frames less than half a period after the previous one (two frames for one grid point),
            ``duplicated_at`` the PTS of the first.
        irregular: steps that are not a whole number of periods (beyond ``tolerance_s``): a variable frame rate;
            ``irregular_at`` the PTS of the first; ``steps`` the distinct steps seen (seconds, at most 5).
        rounded: the timescale cannot hold ``1 / fps`` (``timescale % fps != 0``): every time is rounded to the
            timescale, ``rounded_by`` the largest distance from the grid (seconds).
        average_fps: frames / (end - first PTS): what torchcodec's header-based ``average_fps`` estimates.
        edit: the edit list applied (:attr:`FrameTimes.edit`).
        rate: the file's frames are spaced at this rate (:func:`nominal_rate`), more than 1 % away from ``fps``
            (another frame rate altogether), or closer but at a constant step that no rounding of ``1 / fps`` to the
            timescale explains and that drifts more than ``tolerance_s`` off the grid over the file (29.97 fps
            under ``fps`` 30); the other causes are then not looked for. Frames without a common step are never
            another rate: their steps name the cause (dropped frames, a variable frame rate).
        mean_rate: frames without a common step whose least-squares rate (:func:`nominal_rate`) is more than 1 %
            away from ``fps``: said with the variable frame rate.
        fps: the dataset's frame rate the times were compared with.
    """

    start_s: float = 0.0
    start_note: str | None = None
    dropped: int = 0
    dropped_at: float | None = None
    duplicated: int = 0
    duplicated_at: float | None = None
    irregular: int = 0
    irregular_at: float | None = None
    steps: list[float] = field(default_factory=list)
    rounded: bool = False
    rounded_by: float = 0.0
    average_fps: float | None = None
    edit: str | None = None
    rate: float | None = None
    mean_rate: float | None = None
    fps: float | None = None

    @property
    def any(self) -> bool:
        """True when the file's times differ from the grid ``k / fps`` starting at 0 at all."""
        return bool(abs(self.start_s) > ON_GRID_S or self.dropped or self.duplicated or self.irregular or self.rounded
                    or self.rate)

    def names(self) -> list[str]:
        """One short phrase per cause, most fundamental first (what a report lists)."""
        out = []
        if self.rate:
            out.append(f"another frame rate: the frames are spaced at {self.rate:.3f} fps, not info.json's "
                       f"{self.fps:g}")
        if abs(self.start_s) > ON_GRID_S:
            out.append(f"start offset: the first frame is at {self.start_s:.6f} s, not 0"
                       + (f" ({self.start_note})" if self.start_note else ""))
        if self.dropped:
            out.append(f"dropped frames: {self.dropped} frame(s) missing from the 1/fps grid (first gap after "
                       f"{self.dropped_at:.4f} s)")
        if self.duplicated:
            out.append(f"duplicated frames: {self.duplicated} frame(s) less than half a period after the previous "
                       f"one (first at {self.duplicated_at:.4f} s)")
        if self.irregular:
            shown = ", ".join(f"{s * 1000:.2f}" for s in self.steps)
            mean = f", {self.mean_rate:.3f} fps on average" if self.mean_rate else ""
            out.append(f"variable frame rate: {self.irregular} step(s) are not a whole number of frame periods "
                       f"(steps seen: {shown} ms{mean}; first at {self.irregular_at:.4f} s)")
        if self.rounded:
            out.append(f"the time base cannot hold 1/fps: frame times are rounded, up to {self.rounded_by:.2e} s off "
                       "the grid")
        return out


def analyse(ft: FrameTimes, fps: float, tolerance_s: float) -> TimingCauses:
    """Compare a file's frame times with the grid ``first + k / fps`` (see :class:`TimingCauses`).

    Args:
        ft: the file's frame times.
        fps: the dataset's frame rate (info.json ``fps``).
        tolerance_s: the loader tolerance (seconds): steps within it of a whole number of periods are regular.
    """
    t = ft.seconds
    res = TimingCauses(start_s=float(t[0]) if len(t) else 0.0, start_note=ft.start_note, edit=ft.edit, fps=fps)
    span = ft.end_s - float(t[0]) if len(t) else 0.0
    res.average_fps = len(t) / span if span > 0 else None
    if len(t) < 2:
        return res
    period = 1.0 / fps
    steps = np.diff(t)
    exact_step = ft.timescale / fps
    step = _constant_step(ft)
    if step is not None:  # evenly spaced (up to a few dropped or duplicated frames): at which rate?
        rate = ft.timescale / step
        if abs(rate - fps) > 0.01 * fps:  # another frame rate altogether (validate's F009 threshold)
            res.rate = rate
            return res
        if abs(step - exact_step) >= 1 and (len(t) - 1) * abs(step / ft.timescale - period) > max(tolerance_s,
                                                                                                 ON_GRID_S):
            res.rate = rate  # a close rate: a rounding to the timescale stays within a tick of the exact step
            return res
    else:
        nominal = nominal_rate(ft)  # no common step: the least-squares rate, said with the variable rate
        res.mean_rate = nominal if nominal and abs(nominal - fps) > 0.01 * fps else None
    res.rounded = exact_step != int(exact_step)
    tol = max(tolerance_s, ON_GRID_S)
    dup = steps < period / 2
    mult = np.rint(steps / period)
    off_whole = np.abs(steps - mult * period)
    if res.rounded:
        # steps of floor/ceil(timescale / fps) ticks are the rounding, not a variable rate
        tick = 1.0 / ft.timescale
        off_whole = np.where(off_whole <= tick + ON_GRID_S, 0.0, off_whole)
        grid = float(t[0]) + np.arange(len(t)) * period
        res.rounded_by = float(np.max(np.abs(t - grid))) if not (dup.any() or (mult > 1).any()) else 0.0
        res.rounded = res.rounded_by > ON_GRID_S
    irregular = ~dup & (off_whole > tol)
    drop = ~dup & ~irregular & (mult >= 2)
    if dup.any():
        i = int(np.flatnonzero(dup)[0])
        res.duplicated, res.duplicated_at = int(dup.sum()), float(t[i + 1])
    if drop.any():
        i = int(np.flatnonzero(drop)[0])
        res.dropped, res.dropped_at = int((mult[drop] - 1).sum()), float(t[i])
    if irregular.any():
        i = int(np.flatnonzero(irregular)[0])
        res.irregular, res.irregular_at = int(irregular.sum()), float(t[i])
        res.steps = [float(s) for s in np.unique(np.round(steps, 6))[:5]]
    return res


def _constant_step(ft: FrameTimes) -> int | None:
    """The step (ticks) at least 3 in 4 of the file's steps take (a constant rate with a few dropped or duplicated
    frames), or None (fewer than two frames, or no such step)."""
    if ft.count < 2:
        return None
    steps = np.diff(ft.ticks)
    if steps[0] > 0 and (steps == steps[0]).all():  # a constant rate: the common case, without sorting
        return int(steps[0])
    values, counts = np.unique(steps, return_counts=True)
    top = int(np.argmax(counts))
    return int(values[top]) if counts[top] * 4 >= 3 * len(steps) and values[top] > 0 else None


def nominal_rate(ft: FrameTimes) -> float | None:
    """The rate a file's frames are spaced at: ``timescale / step`` for the step at least 3 in 4 steps take (a
    constant rate with a few dropped or duplicated frames), else the inverse of the least-squares slope of the
    timestamps against the frame positions (a variable rate: jitter around a rate averages out); None for fewer
    than two frames."""
    if ft.count < 2:
        return None
    step = _constant_step(ft)
    if step is not None:
        return ft.timescale / float(step)
    k = np.arange(ft.count, dtype=np.float64)
    k -= k.mean()
    t = ft.ticks.astype(np.float64)
    slope = float((k * (t - t.mean())).sum() / (k * k).sum())
    return ft.timescale / slope if slope > 0 else None


def locate(frames_s: np.ndarray, queries: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The frame each query lands on, as upstream lerobot picks it: the nearest PTS (the first of two at the same
    distance, as ``torch.argmin`` does in lerobot 0.4.4 ``decode_video_frames_torchcodec``).

    Args:
        frames_s: float64 ``(N,)`` sorted frame PTS in seconds, N >= 1.
        queries: float64 ``(Q,)`` query times in seconds.

    Returns:
        ``(index, distance)``: int64 ``(Q,)`` positions into ``frames_s`` and float64 ``(Q,)`` ``|pts - query|``.
    """
    i = np.searchsorted(frames_s, queries)
    lo = np.clip(i - 1, 0, len(frames_s) - 1)
    hi = np.clip(i, 0, len(frames_s) - 1)
    dlo = np.abs(frames_s[lo] - queries)
    dhi = np.abs(frames_s[hi] - queries)
    take_hi = dhi < dlo
    return np.where(take_hi, hi, lo).astype(np.int64), np.where(take_hi, dhi, dlo)
