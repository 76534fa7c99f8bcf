"""The timestamp audit: every frame query a loader makes, checked against the real presentation timestamp of every
frame (F020, F021; it also completes D003 and leaves F010 to the episode metadata).

A loader decodes frame ``k`` of an episode at ``from_timestamp + timestamp[k]`` in the camera's mp4 (v3.0;
v2.x: ``timestamp[k]`` in the episode's own mp4) and takes the frame whose presentation timestamp (PTS) is
nearest, raising ``FrameTimestampError`` when it is more than ``tolerance_s`` away (lerobot 0.4.4
``datasets/lerobot_dataset.py`` ``_query_videos`` -> ``datasets/video_utils.py`` ``decode_video_frames``; the
failure reported in huggingface/lerobot#3177 and the issues docs/failure-modes.md#timestamps lists). The video
family reads every frame's PTS from the MP4 sample tables (:mod:`lerobot_tools.video.timing`); with ``--deep`` the
deep family hands over the timestamps that are off ``k / fps``. This family then asks, for every query, which frame
it lands on and how far away it is, and blames each query that misses, or that lands on another frame than its
own, on exactly one root cause:

1. the episode metadata (``from_timestamp``/``to_timestamp``/``length`` against the file's span): F010, reported
   by the video family per episode;
2. the ``timestamp`` column, when the query at ``k / fps`` would land: D003 (``--deep``), whose message this
   family completes with what the frame queries do, and whose severity drops to a warning on a v3.0 dataset whose
   every query lands on its own frame (v3.0 loaders no longer check the column at load; v2.x's
   ``check_timestamps_sync`` does, lerobot 0.3.3 ``datasets/utils.py``);
3. the video file's own frame times: F020, once per file, naming the cause (start offset and where it comes from,
   dropped or duplicated frames, variable frame rate, a time base that cannot hold 1/fps) and the first query
   it breaks (episode, frame, distance).

A file whose frames run at another rate than info.json's ``fps`` is one defect reported once, by what the loader
does: when some of its frame queries fail, F020 (error) names the rate and the failing queries; when every query
still lands on its own frame (a 20 fps file under ``fps`` 10: every other frame is read), F020 stays silent and the
video family's F009 warning (its frame rate more than 1 % off ``fps``) says so. Whenever F020 reports a file, the
F009 frame-rate finding of that file is withdrawn: F020 names what the file's times are (another rate, a variable
rate and its average, dropped frames), and said twice it would be two findings with two severities for one cause.

F021 (info, once per dataset) gives the smallest ``tolerance_s`` with which every query lands on its own frame,
and the worst query, or says that no value does (some query's nearest frame is another frame: raising the
tolerance would only hide it). A frame is a query's own when its position in the file is the query's (the file
holds exactly its episodes' frames, in order), else when its PTS lies in the query's episode segment within half a
frame period of where the writer puts frame ``k`` (``from_timestamp + k / fps``).

Cost: a few vectorised numpy operations per file on the times the probe already read (no decoding, no extra
read); files whose times are unknown (a fragmented MP4 without ``--all-videos``) are listed as not checked.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from lerobot_tools.checks.context import CheckContext
from lerobot_tools.findings import WARNING
from lerobot_tools.video.timing import FrameTimes, analyse, locate, nominal_rate

#: how many episodes a message names before "..."
_SHOWN = 4


@dataclass
class _Query:
    """The worst or first notable frame query: where it is and what it lands on."""

    episode: int
    key: str
    frame: int
    time: float
    distance: float
    pts: float
    other: str | None = None  # what it lands on when that is not its own frame


@dataclass
class _Summary:
    worst: _Query | None = None  # the largest distance among queries landing on their own frame
    wrong: list[_Query] = field(default_factory=list)  # first query per episode/camera landing on another frame
    wrong_count: int = 0
    queries: int = 0
    past_count: int = 0  # queries torchcodec maps to an index past the file's frames
    past: tuple | None = None  # (episode, camera, frame, frames in the file) of the first


def _episodes_of(ds, vf, by_ep: dict | None = None) -> list[tuple[int, float, int]]:
    """``(episode, from_timestamp, length)`` of the episodes in a video file, in file order (``by_ep``: the
    dataset's episodes by index, when the caller has it)."""
    if by_ep is None:
        by_ep = {e.episode_index: e for e in ds.episodes}
    out = []
    for ep in vf.episodes:
        e = by_ep.get(ep)
        if e is None or not e.length or e.length < 0:
            continue
        if ds.layout == "v2":
            out.append((ep, 0.0, e.length))
            continue
        seg = e.videos.get(vf.video_key)
        if seg is None or seg.from_timestamp is None:
            continue
        out.append((ep, float(seg.from_timestamp), e.length))
    out.sort(key=lambda x: x[1])
    return out


def _writer_standard(times: dict, eps: list[tuple[int, float, int]], fps: float, off: dict) -> bool:
    """True when nothing can fail, decided without numpy (the common case, a few microseconds): the file's frames are
    the grid ``k / fps`` from 0 (one run of steps of ``timescale / fps`` ticks: what lerobot's writer produces), it
    holds exactly its episodes' frames, each episode starts at its first frame's time, and no timestamp of theirs
    is off ``k / fps``. Then every query lands exactly on its own frame."""
    runs, ts, first = times.get("runs") or [], times.get("timescale"), times.get("first")
    if first != 0 or len(runs) > 1 or not ts:
        return False
    count = 1 + (runs[0][1] if runs else 0)
    if runs and runs[0][0] * fps != ts:
        return False
    start = 0
    for e, a, n in eps:
        if e in off or abs(a - start / fps) > 1e-9:
            return False
        start += n
    return start == count


def _episode_names(eps: list[int]) -> str:
    shown = ", ".join(map(str, eps[:_SHOWN]))
    return shown + (f" and {len(eps) - _SHOWN} more" if len(eps) > _SHOWN else "")


def run(ctx: CheckContext) -> None:
    """The timestamp audit (see the module docstring). Reads ``ctx.video_probes``, ``ctx.timestamps_read`` /
    ``ctx.timestamps_off`` and the F010 and D003 findings already emitted; emits F020 and F021 and completes D003.
    """
    ds = ctx.dataset
    probes = ctx.video_probes
    if not probes or not ds.video_keys:
        return
    fps = ds.fps
    if not fps:
        ctx.skip("F020, F021", "info.json fps is not a valid frame rate")
        return
    tol = ctx.options.tolerance_s
    meta_blamed = {(f.subject.get("episode"), f.subject.get("video_key")) for f in ctx.findings if f.check == "F010"}
    off = ctx.timestamps_off
    unknown: list[tuple[str, str]] = []
    summary = _Summary()
    column: dict[int, list[tuple[str, int, float, _Query]]] = {}  # episode -> (camera, misses, worst, first)
    column_ok: dict[int, bool] = {}  # episode -> every actual query lands on its own frame (all cameras)
    by_ep = {e.episode_index: e for e in ds.episodes}
    rates: dict[str, bool] = {}  # file -> F020 reported it (True), or it is at another rate and loads (False)
    for rel, (vf, probe, _header) in probes.items():
        if not probe.frame_times:
            unknown.append((rel, probe.frame_times_unknown or "frame times unknown"))
            continue
        eps = _episodes_of(ds, vf, by_ep)
        if not eps or _writer_standard(probe.frame_times, eps, fps, off):
            continue
        ft = FrameTimes.from_dict(probe.frame_times)
        if ft.count == 0:
            continue
        _audit_file(ctx, rel, vf.video_key, ft, eps, fps, tol, meta_blamed, off, summary, column, column_ok, rates)
    if ctx.timestamps_truncated:
        from lerobot_tools.checks.deep import MAX_TS_KEPT

        ctx.skip("F021, D003 frame queries (some rows)", f"over {MAX_TS_KEPT} timestamps of a data file are off "
                 "k / fps: the rows past that many were queried at k / fps")
    if unknown:
        rel, why = unknown[0]
        ctx.skip("F020, F021 (frame timestamps)", f"{len(unknown)} video file(s), e.g. {rel}: {why}")
    _complete_column_findings(ctx, column, column_ok, tol)
    _settle_rate_findings(ctx, rates)
    _report_tolerance(ctx, summary, tol)


@dataclass
class Verdicts:
    """Where every frame query of one video file lands (arrays of shape ``(Q,)``, one entry per query, episodes in
    file order and frames in order within each).

    Attributes:
        slot: int64, the episode's position in the file's episode list; ``k``: int64, the frame in its episode.
        query: float64, the query time in seconds (``from_timestamp + timestamp[k]``).
        frame: int64, the position (in presentation order) of the frame the nearest-PTS rule picks.
        distance: float64, ``|PTS - query|`` in seconds.
        own: bool, the picked frame is the query's own: at the query's position when ``positional``, else in its
            episode's segment and within half a period of ``from_timestamp + k / fps``.
        owner: int64, the slot of the episode the picked frame belongs to (-1: none).
        past: bool, torchcodec's index ``round(query x rate)`` is past the file's frame count (``IndexError``).
        starts: int64 ``(episodes,)``, each episode's first position in the file (meaningful when ``positional``).
        positional: the file holds exactly its episodes' frames, so a frame's position says whose it is.
    """

    slot: np.ndarray
    k: np.ndarray
    query: np.ndarray
    frame: np.ndarray
    distance: np.ndarray
    own: np.ndarray
    owner: np.ndarray
    past: np.ndarray
    starts: np.ndarray
    positional: bool

    def failed(self, tolerance_s: float) -> np.ndarray:
        """bool ``(Q,)``: the query raises or reads another frame than its own at ``tolerance_s``."""
        return (self.distance > tolerance_s) | ~self.own | self.past


def query_verdicts(ft: FrameTimes, eps: list[tuple[int, float, int]], fps: float,
                   timestamps: dict[int, tuple] | None = None) -> Verdicts:
    """Locate every frame query of a video file on its real frames.

    Args:
        ft: the file's frame times.
        eps: ``(episode, from_timestamp, length)`` of the episodes in the file, in file order (v2.x: one, from 0).
        fps: the dataset's frame rate: frame ``k`` is queried at ``from_timestamp + k / fps`` ...
        timestamps: ... unless this maps the episode to ``(positions, timestamps in seconds)`` of rows whose
            ``timestamp`` is not ``k / fps`` (the deep scan's ``ts_off``).

    Returns:
        :class:`Verdicts`. The picked frame is the one with the nearest PTS (:func:`lerobot_tools.video.timing.locate`,
        upstream lerobot 0.4.4 ``decode_video_frames``); torchcodec's index is ``round(query x rate)``, ``rate`` the
        rate the frames are spaced at (:func:`lerobot_tools.video.timing.nominal_rate`).
    """
    frames = ft.seconds
    lengths = np.array([n for _, _, n in eps], dtype=np.int64)
    starts = np.concatenate(([0], np.cumsum(lengths)[:-1])).astype(np.int64)
    positional = int(lengths.sum()) == ft.count
    froms = np.array([a for _, a, _ in eps], dtype=np.float64)
    slot = np.repeat(np.arange(len(eps)), lengths)
    k = np.arange(int(lengths.sum())) - np.repeat(starts, lengths)
    slot_time = froms[slot] + k / fps  # where the writer put frame k
    query = slot_time.copy()
    for i, (e, a, n) in enumerate(eps):
        got = (timestamps or {}).get(e)
        if got:
            pos = np.asarray(got[0], dtype=np.int64)
            keep = (pos >= 0) & (pos < n)
            query[starts[i] + pos[keep]] = a + np.asarray(got[1], dtype=np.float64)[keep]
    j, d = locate(frames, query)
    if positional:
        owner = np.searchsorted(starts, j, side="right") - 1
        own = j == starts[slot] + k
    else:  # the frame's PTS in the episode's segment [from, next from), within half a period of frame k's slot
        bounds = np.concatenate((froms[1:], [np.inf]))
        owner = (np.searchsorted(froms, frames, side="right") - 1)[j]
        own = (owner == slot) & (frames[j] < bounds[slot]) & (np.abs(frames[j] - slot_time) < 0.5 / fps)
    # torchcodec (lerobot's default backend) first turns a query into the index round(q x average_fps) and raises
    # IndexError past the file's frame count (0.4.4 decode_video_frames_torchcodec): a file holding fewer frames than
    # its span (dropped frames) fails its last queries whatever the tolerance
    rate = nominal_rate(ft) or fps
    past = np.rint(query * rate) >= ft.count
    return Verdicts(slot, k, query, j, d, own, owner, past, starts, positional)


def _audit_file(ctx, rel: str, key: str, ft: FrameTimes, eps, fps: float, tol: float, meta_blamed: set, off: dict,
                summary: _Summary, column: dict, column_ok: dict, rates: dict) -> None:
    frames = ft.seconds
    act = query_verdicts(ft, eps, fps, off)
    ide = query_verdicts(ft, eps, fps)  # every row at k / fps: what the writer's column would query
    slot, k, starts, positional = act.slot, act.k, act.starts, act.positional
    actual, ideal = act.query, ide.query
    j_act, d_act, own_act, owner_act, past_act = act.frame, act.distance, act.own, act.owner, act.past
    bad_act = act.failed(tol)
    good_id = ~ide.failed(tol)
    own_id = ide.own
    ep_ids = np.array([e for e, _, _ in eps])
    # the episode metadata's share (F010): a query that misses the grid j / fps of the file's span, or, in an episode
    # F010 reported, one whose nearest frame is not its own
    grid = np.rint(ideal * fps)
    ideal_miss = (np.abs(ideal - grid / fps) > tol) | (grid < 0) | (grid >= round(ft.end_s * fps))
    flagged = np.array([(e, key) in meta_blamed for e in ep_ids])[slot]
    blamed_meta = ideal_miss | (flagged & ~own_id)
    to_column = bad_act & ~blamed_meta & good_id
    to_file = bad_act & ~blamed_meta & ~good_id
    summary.queries += len(actual)
    if past_act.any():
        summary.past_count += int(past_act.sum())
        if summary.past is None:
            i = int(np.flatnonzero(past_act)[0])
            summary.past = (int(ep_ids[slot[i]]), key, int(k[i]), ft.count)
    # the summary (F021): the worst distance among queries on their own frame, the queries on another frame
    if own_act.any():
        w = int(np.argmax(np.where(own_act, d_act, -1.0)))
        if summary.worst is None or d_act[w] > summary.worst.distance:
            summary.worst = _Query(int(ep_ids[slot[w]]), key, int(k[w]), float(actual[w]), float(d_act[w]),
                                   float(frames[j_act[w]]))
    if (~own_act).any():
        summary.wrong_count += int((~own_act).sum())
        for i in np.flatnonzero(~own_act)[:1]:
            summary.wrong.append(_landing(i, ep_ids, slot, k, actual, d_act, frames, j_act, owner_act, starts,
                                          positional, key))
    # the timestamp column's share: completed into D003 afterwards
    for s in np.unique(slot):
        sel = slot == s
        e = int(ep_ids[s])
        if e in ctx.timestamps_read:
            column_ok[e] = column_ok.get(e, True) and not bool(bad_act[sel].any())
        n_col = int(to_column[sel].sum())
        if n_col:
            i = int(np.flatnonzero(sel & to_column)[0])
            first = _landing(i, ep_ids, slot, k, actual, d_act, frames, j_act, owner_act, starts, positional, key)
            column.setdefault(e, []).append((key, n_col, float(d_act[sel & to_column].max()), first))
    causes = analyse(ft, fps, tol)
    hit = np.flatnonzero(to_file)
    if causes.rate and not len(hit):
        if not bad_act.any():
            rates[rel] = False  # every query lands on its own frame: a declaration mismatch, F009's (a warning)
        return  # else its failing queries are the metadata's or the column's: F009 says the rate, unqualified
    if not causes.any and not len(hit):
        return
    rates[rel] = True  # F020 names what the file's times are: F009's frame rate of the file says it again
    names = causes.names() or ["the frames' timestamps do not follow the episodes' segments"]
    eps_hit = sorted({int(ep_ids[slot[i]]) for i in hit})
    if len(hit):
        i = int(hit[0])
        first = _landing(i, ep_ids, slot, k, actual, d_act, frames, j_act, owner_act, starts, positional, key)
        wrong = ~own_act[hit]
        past = past_act[hit] & own_act[hit]
        missed = ~wrong & ~past
        what = []
        if missed.any():
            what.append(f"{int(missed.sum())} miss their frame by up to {float(d_act[hit][missed].max()):.2e} s")
        if wrong.any():
            what.append(f"{int(wrong.sum())} land on another frame")
        if past.any():
            what.append(f"{int(past.sum())} map to a frame index past the file's {ft.count} frames (torchcodec's "
                        "IndexError)")
        msg = (f"{key}: {'; '.join(names)}: {len(hit)} of {len(actual)} frame queries of episode(s) "
               f"{_episode_names(eps_hit)} fail ({', '.join(what)}; first: {_describe(first, tol)})")
        severity = None
    else:
        msg = f"{key}: {'; '.join(names)}; every frame query still lands on its own frame within tolerance_s"
        severity = WARNING
    ctx.emit("F020", msg, rel, severity=severity, group=f"video frame times of {key} are off the 1/fps grid",
             video_key=key, episode=eps_hit[0] if len(eps_hit) == 1 else None)


def _settle_rate_findings(ctx: CheckContext, rates: dict[str, bool]) -> None:
    """A file's frame rate is reported once (module docstring): the video family's F009 ``fps`` finding of a file
    F020 reported is withdrawn (kept when F020 is not selected); that of a file at another rate whose every query
    lands on its own frame says so."""
    if not rates:
        return
    withdraw = ctx.enabled("F020")
    kept = []
    for f in ctx.findings:
        if f.check == "F009" and f.subject.get("key") == "fps" and f.path in rates:
            if rates[f.path] and withdraw:
                continue
            if not rates[f.path]:
                f.message += (f": every frame query still lands on its own frame within tolerance_s (loads; the "
                              f"frames are read at info.json's {ctx.dataset.fps:g} fps)")
                f.group = f.message
        kept.append(f)
    ctx.findings[:] = kept


def _landing(i, ep_ids, slot, k, queries, dist, frames, j, owner, starts, positional, key) -> _Query:
    e = int(ep_ids[slot[i]])
    q = _Query(e, key, int(k[i]), float(queries[i]), float(dist[i]), float(frames[j[i]]))
    if owner[i] != slot[i] and 0 <= owner[i] < len(ep_ids):
        other_e = int(ep_ids[owner[i]])
        q.other = (f"episode {other_e}'s frame {int(j[i] - starts[owner[i]])}" if positional
                   else f"a frame of episode {other_e}")
    elif positional and j[i] != starts[slot[i]] + k[i]:
        q.other = f"its own episode's frame {int(j[i] - starts[slot[i]])}"
    elif owner[i] != slot[i]:
        q.other = "a frame outside every episode"
    return q


def _above(x: float) -> str:
    """A distance as F021 states it: 6 significant digits, float noise below 1e-12 s dropped (0.025000000000000022
    is 0.025: the loaders' tolerance must be above it, lerobot 0.4.4 compares with ``<``)."""
    return f"{max(0.0, round(x, 12)):.6g}"


def _describe(q: _Query, tol: float) -> str:
    where = f"episode {q.episode} frame {q.frame} queried at {q.time:.6f} s"
    if q.other:
        return f"{where} reads {q.other} at {q.pts:.6f} s ({q.distance:.2e} s away)"
    return f"{where}, nearest frame at {q.pts:.6f} s is {q.distance:.2e} s away (tolerance {tol:g} s)"


def _complete_column_findings(ctx: CheckContext, column: dict, column_ok: dict, tol: float) -> None:
    """D003 (emitted by the deep family) gets what its episode's frame queries do; on a v3.0 dataset an episode
    whose every query lands on its own frame in every camera keeps D003 as a warning."""
    for f in ctx.findings:
        if f.check != "D003" or "episode" not in f.subject:
            continue
        e = f.subject["episode"]
        if e in column:
            parts = [f"{n} {key} frame queries miss or land on another frame, up to {worst:.2e} s away (first: "
                     f"{_describe(first, tol)})" for key, n, worst, first in column[e]]
            f.message += "; " + "; ".join(parts)
        elif column_ok.get(e) and ctx.dataset.layout == "v3":
            f.message += ("; every frame query still lands on its own frame (the videos' timestamps follow the "
                          "column): loads, but the column is not frame_index / fps")
            f.severity = WARNING


def _report_tolerance(ctx: CheckContext, s: _Summary, tol: float) -> None:
    past = ""
    if s.past_count:
        e, key, k, n = s.past
        verb = "query maps" if s.past_count == 1 else "queries map"
        past = (f"; with torchcodec (lerobot's default backend) {s.past_count} {verb} "
                f"to a frame index past the file (first: {key}, episode {e} frame {k}, a file of {n} frames): "
                "IndexError whatever the tolerance")
    if s.wrong_count:
        first = s.wrong[0]
        rest = ""
        if s.worst is not None and s.worst.distance > tol:
            rest = f"; the queries on their own frame need a tolerance_s above {_above(s.worst.distance)} s"
        ctx.emit("F021", f"no tolerance_s makes every frame query land on its own frame: {s.wrong_count} of "
                 f"{s.queries} queries read another frame (first: {first.key}, {_describe(first, tol)}); a larger "
                 f"tolerance_s only hides them{rest}{past}", None, episode=first.episode, video_key=first.key)
    elif s.worst is not None and (s.worst.distance > tol or s.past_count):
        w = s.worst
        ctx.emit("F021", f"every frame query lands on its own frame with a tolerance_s above {_above(w.distance)} s "
                 f"(worst: {w.key}, episode {w.episode} frame {w.frame}, {w.distance:.2e} s from its frame); the "
                 f"loaders use {tol:g} s (lerobot's tolerance_s, lrtool --tolerance-s){past}", None,
                 episode=w.episode, video_key=w.key)
