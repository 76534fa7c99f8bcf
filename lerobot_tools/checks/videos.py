"""Family F (video side): referenced mp4 files exist, are real videos, match info.json and cover their episodes.

Every referenced video is sniffed and its MP4 boxes walked (header only, ~0.1 ms); the PyAV header (codec, pix_fmt,
no decode) is read for the first file of each video key, or for every file with ``--deep``. Sources:
docs/format.md#videos (encoding, ``info`` keys, locating frames; lerobot 0.4.4 ``datasets/video_utils.py``),
docs/failure-modes.md (#merged-offsets, #short-video, #stream-copy-joins, #accumulated-durations,
#video-info-episode-0, #av1-decoding).
"""

from __future__ import annotations

from lerobot_tools._parallel import thread_map
from lerobot_tools.checks.context import CheckContext
from lerobot_tools.checks.files import PLACEHOLDER_CHECKS, _relocated, format_episodes, placeholder_finding
from lerobot_tools.checks.targets import not_requested, unrequested as unrequested_file
from lerobot_tools.dataset.ondisk import files_fitting, video_files_from_layout
from lerobot_tools.errors import DatasetError
from lerobot_tools.sniff import sniff
from lerobot_tools.video.compare import compare_header


def run(ctx: CheckContext) -> None:
    """Family F, video side: every referenced mp4 is sniffed, box-walked and (see module docstring) probed.

    Emits F002, F003 (orphan videos), F004-F006 (placeholders), F008, F009, F010, and I008 for a video path
    that leaves the root. Reads ``ctx.episodes_ok`` and the options ``deep``, ``all_videos`` and
    ``tolerance_s``; sets nothing.
    """
    ds = ctx.dataset
    if not ds.video_keys:
        return
    found = _video_files(ctx)
    if found is None:
        return
    files, layout = found
    from lerobot_tools.video.probe import pyav_available

    use_pyav = pyav_available()
    if not use_pyav:
        ctx.skip("F008 (decoder header), F009", "PyAV is not installed: only MP4 boxes were read")
    probe_all = ctx.options.deep or ctx.options.all_videos
    probes, missing, unrequested, pending = _probe_files(ctx, files, layout, use_pyav, probe_all)
    _report_missing(ctx, files, missing, layout)
    not_requested(ctx, "video", unrequested)
    if pending:
        ctx.skip("F002, F008-F010 for video files not downloaded",
                 f"{pending} of {len(files)} video file(s) not downloaded yet ({ctx.download.describe()})")
    # a readable file whose header was not read (not the first of its video key, or the first could not be read)
    if use_pyav and not probe_all and any(not with_header for _, _, with_header in probes.values()):
        ctx.skip("F009 (codec/pix_fmt of every file)",
                 "decoder headers read for the first file of each video key only; use --deep or --all-videos to read all")
    _report_unreferenced(ctx, files, layout)
    _check_declarations(ctx, probes)
    if layout is None:
        _check_segments(ctx, probes, {v.relpath for v in missing})
        ctx.video_probes = probes  # the timestamp audit (checks/timestamps.py) runs on them after the deep pass


def _video_files(ctx: CheckContext):
    """The video files to check, and the layout they were taken from when the episode metadata is unreadable
    (None when they come from the metadata); None (a "not checked" entry said why) when there are none to take."""
    ds = ctx.dataset
    if ctx.episodes_ok:
        try:
            return ds.video_files(), None
        except DatasetError as exc:
            ctx.skip("F002, F004-F010 (videos)", str(exc))
            return None
    try:
        layout = video_files_from_layout(ds)
    except DatasetError as exc:
        ctx.skip("F002, F004-F010 (videos)", f"the episode metadata is unreadable and {exc}")
        return None
    ctx.skip("F010, F003 for names that fit video_path", f"the episode metadata is unreadable; video files taken from {layout.source}")
    return layout.files, layout


def _probe_files(ctx: CheckContext, files: list, layout, use_pyav: bool, probe_all: bool):
    """Sniff every file, then probe those that may be videos (the decoder header of the first of each video key,
    or of all), on a thread pool, emitting in file order (I008, F004-F006, F008). Returns ``(probes, missing,
    unrequested, pending)``: relpath -> (file, probe, header read); the absent files; the absent or placeholder
    files of episodes the target does not read; how many absent files a --meta-only copy has not downloaded."""
    ds = ctx.dataset
    probes = {}
    missing = []
    unrequested = []  # absent or placeholder files of episodes the target does not read: at most info
    pending = 0  # absent files a --meta-only copy has not downloaded yet (never "missing")
    located = []
    for vf in files:
        try:
            located.append((vf, ds.path(vf.relpath)))
        except DatasetError as exc:
            located.append((vf, exc))
    sniffs = thread_map(sniff, [p for _, p in located if not isinstance(p, DatasetError)], io_bound=True)
    plan, todo, done_keys = [], [], set()
    for vf, path in located:
        if isinstance(path, DatasetError):
            plan.append((vf, path, None, False))
            continue
        s = next(sniffs)
        with_header = False
        if s.kind not in ("missing", "unreadable") and s.kind not in PLACEHOLDER_CHECKS:
            with_header = use_pyav and (probe_all or vf.video_key not in done_keys)
            if with_header:
                done_keys.add(vf.video_key)
            todo.append((vf, path, s, with_header))
        plan.append((vf, path, s, with_header))
    observer = ctx.observer
    read = thread_map(lambda t: observer.probe_video(t[0].relpath, t[1], pyav=t[3], sniffed=t[2]), todo,
                      io_bound=True)
    for vf, path, s, with_header in plan:
        if isinstance(path, DatasetError):
            ctx.emit("I008", path.message, vf.relpath, key="video_path", video_key=vf.video_key)
            continue
        if s.kind == "missing" and ctx.not_downloaded(vf.episodes):
            pending += 1
            continue
        if layout is None and unrequested_file(ctx, vf, s.kind):
            unrequested.append((vf, s.kind))
            continue
        if s.kind == "missing":
            missing.append(vf)
            continue
        if s.kind == "unreadable":
            ctx.emit("F008", f"video file cannot be read: {s.detail}", vf.relpath, group="video files cannot be read",
                     file_kind="video", video_key=vf.video_key)
            continue
        if placeholder_finding(ctx, s, vf.relpath, "video"):
            continue
        probe = next(read)
        if probe.status != "ok":
            ctx.emit("F008", f"video cannot be read: {probe.problem}", vf.relpath, group="video files cannot be read",
                     file_kind="video", video_key=vf.video_key)
            continue
        probes[vf.relpath] = (vf, probe, with_header)
    return probes, missing, unrequested, pending


def _report_missing(ctx: CheckContext, files: list, missing: list, layout) -> None:
    """F002 for the absent video files: one finding where they all are (or were moved), else one per file."""
    ds = ctx.dataset
    if missing and _relocated(ctx, "video", ds.video_path or "", [vf.relpath for vf in files],
                              [vf.relpath for vf in missing], None):
        return  # one F002 says where the missing files are and how many are absent everywhere
    if not missing:
        return
    what = "referenced" if layout is None else f"expected ({layout.source})"
    if len(missing) == len(files):
        shown = ", ".join(v.relpath for v in missing[:3])
        more = f" and {len(missing) - 3} more" if len(missing) > 3 else ""
        ctx.emit("F002", f"all {len(files)} {what} video file(s) are missing (e.g. {shown}{more})",
                 missing[0].relpath if len(missing) == 1 else None, file_kind="video")
        return
    for vf in missing:
        ctx.emit("F002", f"video file of {vf.video_key} for episode(s) {format_episodes(vf.episodes)} is missing",
                 vf.relpath, group=f"video files of {vf.video_key} are missing", file_kind="video",
                 video_key=vf.video_key, episodes=vf.episodes)


def _report_unreferenced(ctx: CheckContext, files: list, layout) -> None:
    """F003 for the mp4 files under videos/ that nothing references (nor names by video_path, when the episode
    metadata that lists the files is unreadable)."""
    ds = ctx.dataset
    referenced = {vf.relpath for vf in files}
    why = "not referenced by the episode metadata and video_path"
    if layout is not None or not ctx.episodes_complete:
        # the metadata that lists the files is unreadable: a name video_path fits is never called unreferenced
        why = "not named by video_path for any video key"
        for key in ds.video_keys:
            try:
                referenced |= set(files_fitting(ds, ds.video_path or "", key, ".mp4"))
            except DatasetError:
                pass
    for rel in ds.files_under("videos", ".mp4"):
        if rel not in referenced and rel not in ctx.relocated:
            ctx.emit("F003", f"video file is {why}", rel,
                     severity="warning", group="unreferenced video files under videos/", file_kind="video")


def _check_declarations(ctx: CheckContext, probes: dict) -> None:
    """F009: each probed header against its feature's declaration (:func:`lerobot_tools.video.compare.compare_header`)."""
    ds = ctx.dataset
    info_fps = ds.fps
    for rel, (vf, p, with_header) in probes.items():
        for m in compare_header(ds.features.get(vf.video_key, {}), info_fps, p):
            msg = f"{vf.video_key}: {m.message}"
            ctx.emit("F009", msg, rel, group=msg, video_key=vf.video_key, key=m.field)


def _lands(q: int, fps: float, frames: int | None, duration: float | None) -> bool:
    """Whether the frame query with index ``q`` (time ``q / fps`` in the file) hits a frame of the file: the file
    holds ``frames`` frames at ``k / fps`` (from the MP4 sample table), else ``duration`` seconds of them."""
    if frames is not None:
        return q <= frames - 1
    return duration is not None and (q + 1) / fps <= duration + 0.5 / fps


def _drift(segs: list, fps: float, tol: float) -> str:
    """The cause to name when a file's segments drift off its frames: from the first episode on the grid, two or
    more later ones off it, each by at least as much as the one before (durations summed in floats or rounded as
    the file is concatenated, huggingface/lerobot#3177), else ''."""
    offs = [abs(a * fps - round(a * fps)) / fps for a, _, _ in segs]
    later = [o for o in offs[1:] if o > tol]
    if offs and offs[0] <= tol and len(later) >= 2 and all(b >= a - tol for a, b in zip(later, later[1:])):
        return (f" (the segments drift off the frames along the file, up to {max(later):.2e} s: their durations were "
                "summed in floats or rounded, huggingface/lerobot#3177; `lrtool repair` re-derives from/to_timestamp "
                "from the frames' timestamps)")
    return ""


def _grid_frames(p, fps: float) -> tuple[int | None, float | None]:
    """What F010 models a file as: ``(frames, duration_s)``, its frames at ``j / fps`` for ``j < frames``, else
    covering ``duration_s``. When every frame's timestamp is known and the file's span (up to where its last frame
    ends) is not its frame count's, the span is what counts (``(None, end)``): a file whose own frame times are off
    the grid (a gap of dropped frames, a start offset) is judged by the timestamp audit (F020,
    :mod:`lerobot_tools.checks.timestamps`), not here too."""
    times = getattr(p, "frame_times", None)
    if times and times.get("timescale"):
        end = times["end"] / times["timescale"]
        if p.frame_count is None or round(end * fps) != p.frame_count:
            return None, end
    return p.frame_count, p.duration_s


def _segment_convention(d_frames: float) -> str:
    """Name the writer convention of a segment ``d_frames`` frames off ``length / fps``."""
    if abs(d_frames + 1) < 0.05:
        return "to_timestamp is the last frame's timestamp, from_timestamp + (length - 1) / fps"
    if abs(d_frames - 1) < 0.05:
        return "the segment counts one frame more than the episode, e.g. the container duration of its mp4"
    return "to_timestamp - from_timestamp is the container duration of the episode's mp4, not length / fps"


def _check_segments(ctx: CheckContext, probes: dict, missing: set[str]) -> None:
    """F010 / F012: every frame query of every episode lands on a frame of its video file.

    A loader locates frame ``k`` of an episode at ``from_timestamp + k / fps`` in the file (v2.x: ``k / fps``
    in the episode's own file) and fails unless a frame lies within ``tolerance_s`` (docs/format.md#videos).
    Per episode and camera (frames at ``j / fps``, ``j < `` the file's sample count): F010 (error) when a query
    misses (``from_timestamp`` off the frame grid, the last query past the last frame), when the episode's
    frames overlap the previous episode's (the loader silently reads the other episode's frames), when a
    file's first episode does not start at 0 or frames are skipped between segments, or when
    ``to_timestamp - from_timestamp`` is more than one frame off ``length / fps``. F012 (warning) when the
    segment is more than half a frame but at most one frame off while every query lands: a writer convention
    (``to_timestamp`` at the last frame's timestamp, or the container duration), named in the message.
    """
    ds = ctx.dataset
    fps = ds.fps
    if not fps:
        ctx.skip("F010", "info.json fps is not a valid frame rate")
        return
    half = 0.5 / fps
    frame = 1.0 / fps
    tol = ctx.options.tolerance_s
    by_ep = {e.episode_index: e for e in ds.episodes}
    unknown: list[tuple[str, bool]] = []  # files with neither a frame count nor a duration: (path, header read)
    for rel, (vf, p, with_header) in probes.items():
        n, dur = _grid_frames(p, fps)
        if dur is None and n is None:
            unknown.append((rel, with_header))
            continue
        key = vf.video_key
        if ds.layout == "v2":
            e = by_ep.get(vf.episodes[0]) if vf.episodes else None
            if e and e.length and not _lands(e.length - 1, fps, n, dur):
                held = f"holds {n} frames" if n is not None else f"lasts {dur:.3f} s"
                ctx.emit("F010", f"episode {e.episode_index} has {e.length} frames ({e.length / fps:.3f} s) but its "
                         f"{key} video {held}: the last frame queries land past the end", rel,
                         group="videos are shorter than their episodes", video_key=key, episode=e.episode_index)
            continue
        segs = []
        for ep in vf.episodes:
            e = by_ep.get(ep)
            seg = e.videos.get(key) if e else None
            if seg is None or seg.from_timestamp is None or seg.to_timestamp is None:
                continue
            segs.append((seg.from_timestamp, seg.to_timestamp, e))
        segs.sort(key=lambda s: s[0])
        drift = _drift(segs, fps, tol)
        prev_end = prev_b = None  # frame index where the previous episode's frames end; its to_timestamp
        for i, (a, b, e) in enumerate(segs):
            length = e.length
            s0 = round(a * fps)
            off = abs(a * fps - s0) / fps
            problem = convention = None
            d = (b - a) - length / fps if length is not None else None
            if off > tol:
                problem = (f"from_timestamp {a:.6f} s is {off:.2e} s off the 1/{fps:g} s frame grid: every frame of the "
                           "episode misses by more than tolerance_s") + drift
            elif length is not None and length > 0 and not _lands(s0 + length - 1, fps, n, dur):
                held = f"{n} frames" if n is not None else f"{dur:.4f} s"
                problem = (f"its last frame query (from_timestamp + {length - 1}/{fps:g} = "
                           f"{a + (length - 1) / fps:.4f} s) is past the last frame of the video ({held})")
            elif length is None and dur is not None and b > dur + half:
                problem = f"to_timestamp {b:.4f} s is past the end of the video ({dur:.4f} s)"
            elif prev_end is not None and s0 < prev_end:
                problem = (f"from_timestamp {a:.4f} s is frame {s0}, but the previous episode's frames run to frame "
                           f"{prev_end - 1}: {prev_end - s0} frame(s) are read for both episodes")
            elif i == 0 and s0 > 0:
                problem = f"the first episode in the file starts at {a:.4f} s, not 0"
            elif prev_end is not None and s0 > prev_end and abs(a - prev_b) > half:
                problem = f"from_timestamp {a:.4f} s does not follow the previous episode's to_timestamp {prev_b:.4f} s"
            elif d is not None and abs(d) > frame + tol:
                problem = f"segment lasts {b - a:.4f} s but the episode has {length} frames ({length / fps:.4f} s)"
            elif d is not None and abs(d) > half:
                convention = _segment_convention(d * fps)
            if problem:
                ctx.emit("F010", f"episode {e.episode_index} ({key}): {problem}", rel,
                         group=f"episode video segments of {key} do not fit their files", video_key=key,
                         episode=e.episode_index)
            elif convention:
                ctx.emit("F012", f"episode {e.episode_index} ({key}): to_timestamp - from_timestamp = {b - a:.4f} s is "
                         f"{d * fps:+.2f} frame off length / fps = {length / fps:.4f} s ({convention}); every frame "
                         f"query from_timestamp + k/{fps:g} lands on a frame within tolerance_s", rel,
                         group=f"episode video segments of {key} follow a one-frame-off convention", video_key=key,
                         episode=e.episode_index)
            prev_end = s0 + length if length is not None else round(b * fps)
            prev_b = b
    if missing:
        ctx.skip("F010 (missing videos)", f"{len(missing)} video file(s) missing, their segments not checked")
    if unknown:
        why = ("neither a frame count nor a duration in the MP4 header (a fragmented MP4 indexes its frames in its "
               "fragments)")
        if not all(with_header for _, with_header in unknown):
            why += "; --all-videos takes the duration from each file's decoder header"
        ctx.skip("F010 (videos of unknown length)", f"{len(unknown)} video file(s), e.g. {unknown[0][0]}: {why}")

