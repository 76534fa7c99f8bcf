"""Videos whose frames carry chosen presentation timestamps, for the timestamp-cause fixtures and tests.

:func:`write_timed_video` encodes the synthetic frames of an episode (:func:`~lerobot_tools.testing.synth.frame_pixels`,
so a decoded frame still says which (episode, frame) it shows) with PyAV, giving each frame the PTS asked for: a
gap (a dropped frame), two frames a tick apart (a duplicated frame), an irregular step (a variable frame rate), a
first frame later than 0 (FFmpeg's mp4 muxer writes an empty edit list for it), or B-frames in a fragmented MP4
(no edit list hides the encoder's reorder delay). Frames are encoded in PTS order, as a recorder writes them.

:data:`CASES` are the datasets ``fixtures/generate.py`` writes for each cause (dropped and duplicated frames, a
variable frame rate, B-frames in a fragmented file, an edit list, segments drifting in a concatenated v3.0 file,
wall-clock timestamps), with the findings validate must raise and the smallest ``tolerance_s`` that loads them.

PyAV is imported when a video is written.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path

import numpy as np

from lerobot_tools.testing.synth.build import build_dataset
from lerobot_tools.testing.synth.frames import frame_pixels
from lerobot_tools.testing.synth.spec import V21_VIDEO_PATH, SynthSpec

#: PyAV encoder per codec name
_ENCODERS = {"h264": "libx264", "hevc": "libx265", "av1": "libsvtav1"}


def write_timed_video(path: Path, episode: int | Sequence[int], frames: Sequence[int], ticks: Sequence[int], *,
                      timescale: int,
                      fps: int, size: tuple[int, int] = (64, 64), codec: str = "h264", gop: int = 2,
                      bframes: bool = False, fragmented: bool = False) -> Path:
    """Encode the synthetic frames ``frames`` of ``episode`` with presentation timestamps ``ticks``.

    Args:
        path: the ``.mp4`` to write (replaced).
        episode: the episode index drawn into every frame, or one per frame (a file holding several episodes).
        frames: the frame index drawn into each frame, in presentation order (repeat one for a duplicated frame).
        ticks: each frame's PTS in units of ``1 / timescale`` s, strictly increasing.
        timescale: the stream's time base denominator; the mp4 muxer keeps it as the ``mdhd`` timescale.
        fps: nominal frame rate given to the encoder.
        size: ``(H, W)``.
        codec: ``"h264"``, ``"hevc"`` or ``"av1"``.
        gop: keyframe interval.
        bframes: let the encoder use B-frames (x264's default 3; reorder delay of 2 frames); else none.
        fragmented: write a fragmented MP4 (``frag_keyframe+empty_moov+default_base_moof``: no edit list).

    Returns:
        ``path``.

    Raises:
        ValueError: ``frames`` and ``ticks`` differ in length, or ``ticks`` is not strictly increasing.
    """
    import av

    if len(frames) != len(ticks) or not len(ticks):
        raise ValueError("write_timed_video: frames and ticks must be non-empty and of one length")
    if any(b <= a for a, b in zip(ticks, ticks[1:])):
        raise ValueError("write_timed_video: ticks must increase strictly")
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    H, W = size
    episodes = [episode] * len(frames) if isinstance(episode, int) else list(episode)
    options = {"movflags": "frag_keyframe+empty_moov+default_base_moof"} if fragmented else \
        {"movflags": "+faststart", "video_track_timescale": str(timescale)}
    stream_opts = {"g": str(gop)}
    if codec == "h264":
        stream_opts["bf"] = "3" if bframes else "0"
    elif codec == "hevc":
        stream_opts["x265-params"] = "log-level=error" + ("" if bframes else ":bframes=0")
    tb = Fraction(1, timescale)
    with av.open(str(path), "w", options=options) as out:
        stream = out.add_stream(_ENCODERS[codec], rate=fps, options=stream_opts)
        stream.width, stream.height, stream.pix_fmt = W, H, "yuv420p"
        stream.time_base = tb
        stream.codec_context.time_base = tb
        for e, k, t in zip(episodes, frames, ticks):
            img = av.VideoFrame.from_ndarray(np.ascontiguousarray(frame_pixels(int(e), int(k), H, W)), format="rgb24")
            img.pts, img.time_base = int(t), tb
            for packet in stream.encode(img):
                out.mux(packet)
        for packet in stream.encode():
            out.mux(packet)
    return path


# ------------------------------------------------------------------------------------------------ the causes
@dataclass(frozen=True)
class TimingCase:
    """One timestamp cause, as a dataset: what is wrong, what validate must raise, the tolerance that would load.

    Attributes:
        name: the fixture name (``broken_frame_dropped`` ...).
        layout: ``"v2.1"`` or ``"v3.0"``.
        defect: one line for the fixture manifest.
        expect: the check IDs (errors and warnings) validate raises.
        tolerance_s: the smallest ``tolerance_s`` with which every frame query lands on its own frame (what F021
            reports), 0.0 when every query already lands, None when no value does.
        deep_only: the defect is in the ``timestamp`` column (seen with ``--deep`` only).
        build: ``build(root)`` writes the dataset.
    """

    name: str
    layout: str
    defect: str
    expect: tuple[str, ...]
    tolerance_s: float | None
    build: Callable[[Path], None]
    deep_only: bool = False


FPS = 10
TIMESCALE = 10240  # what FFmpeg's mp4 muxer picks for 10 fps (the codec rate doubled until >= 10000)
V21 = SynthSpec(version="v2.1")  # 3 episodes of 20/15/25 frames, one 64x64 h264 camera, 10 fps


def _v21_episode0(root: Path, frames: Sequence[int], ticks: Sequence[int], **kw) -> None:
    """A clean v2.1 build whose episode 0 video is rewritten with these frames and times."""
    build_dataset(root, V21)
    key = V21.video_keys[0]
    path = root / V21_VIDEO_PATH.format(episode_chunk=0, video_key=key, episode_index=0)
    write_timed_video(path, 0, frames, ticks, timescale=kw.pop("timescale", TIMESCALE), fps=FPS, **kw)


def _dropped(root: Path) -> None:
    n = V21.episode_lengths[0]
    kept = [k for k in range(n) if k != 7]
    _v21_episode0(root, kept, [k * 1024 for k in kept])


def _duplicated(root: Path) -> None:
    n = V21.episode_lengths[0]
    frames = list(range(n))
    frames.insert(8, 7)  # frame 7 written twice, the copy one tick later
    ticks = [k * 1024 for k in range(8)] + [7 * 1024 + 1] + [k * 1024 for k in range(8, n)]
    _v21_episode0(root, frames, ticks)


def _variable_rate(root: Path) -> None:
    n = V21.episode_lengths[0]
    # a camera delivering every other frame 25 ms late (256 ticks): steps of 125 and 75 ms around the 100 ms grid
    ticks = [k * 1024 + (256 if k % 2 else 0) for k in range(n)]
    _v21_episode0(root, list(range(n)), ticks)


def _bframes_fragmented(root: Path) -> None:
    n = V21.episode_lengths[0]
    _v21_episode0(root, list(range(n)), [k * 1024 for k in range(n)], bframes=True, fragmented=True, gop=12)


def _edit_list(root: Path) -> None:
    n = V21.episode_lengths[0]
    # the first frame at 0.25 s: FFmpeg's mp4 muxer delays the track with an empty edit of 250 ms
    _v21_episode0(root, list(range(n)), [2560 + k * 1024 for k in range(n)])


DRIFT_SPEC = SynthSpec(episode_lengths=(7, 8, 10, 11, 13), fps=30, episodes_per_file=5)


def _segment_drift(root: Path) -> None:
    """from/to_timestamp accumulated from each episode mp4's duration in whole milliseconds (the ``mvhd`` duration,
    or FFmpeg's ``format.duration`` printed with 3 decimals), as a converter concatenating files does."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    build_dataset(root, DRIFT_SPEC)
    key = DRIFT_SPEC.video_keys[0]
    # the file itself encoded in one go, every frame exactly on k / 30 s (as the synthetic writer's joins are too)
    eps = [e for e, n in enumerate(DRIFT_SPEC.episode_lengths) for _ in range(n)]
    ks = [k for n in DRIFT_SPEC.episode_lengths for k in range(n)]
    write_timed_video(root / "videos" / key / "chunk-000" / "file-000.mp4", eps, ks, [i * 512 for i in range(len(ks))],
                      timescale=15360, fps=DRIFT_SPEC.fps)
    for path in sorted((root / "meta/episodes").glob("*/*.parquet")):
        table = pq.read_table(path)
        rows = table.to_pylist()
        start = 0.0
        for row in rows:
            dur = int(row["length"] * 1000 / DRIFT_SPEC.fps) / 1000
            row[f"videos/{key}/from_timestamp"] = start
            row[f"videos/{key}/to_timestamp"] = start + dur
            start += dur
        pq.write_table(pa.Table.from_pylist(rows, schema=table.schema), path)


WALL_SPEC = SynthSpec(episode_lengths=(20, 15), episodes_per_file=2)


def _wallclock(root: Path) -> None:
    rng = np.random.default_rng(7)

    def hook(ep: int, cols: dict) -> None:
        n = len(cols["timestamp"])
        steps = rng.uniform(0.06, 0.25, n - 1)  # a host clock between frames of a 10 fps camera
        cols["timestamp"][:] = np.concatenate(([0.0], np.cumsum(steps))).astype(cols["timestamp"].dtype)

    build_dataset(root, WALL_SPEC, episode_hook=hook)


CASES: list[TimingCase] = [
    TimingCase("broken_frame_dropped", "v2.1", "episode 0's mp4 lacks frame 7 (a 200 ms gap in its frame timestamps): "
               "frame query 7 misses by 0.1 s and its nearest frame is frame 6", ("F020",), None, _dropped),
    TimingCase("broken_frame_duplicated", "v2.1", "episode 0's mp4 holds frame 7 twice, the copy one tick (1/10240 s) "
               "later: 21 frames for 20 rows, every query still lands", ("F020",), 0.0, _duplicated),
    TimingCase("broken_frame_rate_variable", "v2.1", "episode 0's frames come 25 ms late every other frame (steps of 125 "
               "and 75 ms at 10 fps): odd frame queries miss by 25 ms", ("F020",), 0.025, _variable_rate),
    TimingCase("broken_bframes_fragmented", "v2.1", "episode 0's mp4 is fragmented with B-frames and no edit list: its "
               "first frame is at 0.2 s (the encoder's reorder delay), every query reads the frame 2 before its own",
               ("F020",), None, _bframes_fragmented),
    TimingCase("broken_edit_list", "v2.1", "episode 0's mp4 starts at 0.25 s (an empty edit list of 250 ms): every query "
               "misses by 50 ms and its nearest frame is another frame", ("F020",), None, _edit_list),
    TimingCase("broken_segment_drift", "v3.0", "5 episodes (30 fps) in one mp4 whose from/to_timestamp were summed from "
               "millisecond durations: episodes 1-4 drift 0.3-2 ms off their frames", ("F010",), 0.002, _segment_drift),
    TimingCase("broken_wallclock_timestamps", "v3.0", "timestamp holds a host clock (steps of 60-250 ms at 10 fps) over "
               "constant-rate videos with one frame per row", ("D003",), None, _wallclock, deep_only=True),
]
