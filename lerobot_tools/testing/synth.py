"""Synthetic LeRobot datasets, written on disk the way the native writers lay them out.

Used by the test-suite, the committed fixtures (``fixtures/generate.py``) and the benchmarks. A dataset
is described by a :class:`SynthSpec` and written by :func:`build_dataset`, one episode at a time, so
memory is bounded by one episode whatever the number of episodes (measured: 250 episodes x 2000 frames
with a 512-float extra vector, 1.2 GB of parquet, build in ~25 s on 2 cores at ~235 MB peak RSS, the
same as for 25 such episodes).

What is reproduced, per codebase version (sources: the lrtool format notes, derived from
``huggingface/lerobot`` at 7427f318 for v3.0 and at ``f55c6e89f^`` / OpenTau for v2.1):

* ``meta/info.json``: 4-space indent, key order of ``DatasetInfo.to_dict`` (v3.0) or of the v2.1
  ``create`` (v2.1); features = user features (``action``, ``observation.state``, extra vectors,
  cameras) followed by the 5 default features ``timestamp`` float32 [1], ``frame_index``,
  ``episode_index``, ``index``, ``task_index`` int64 [1]. Video features carry ``info`` with the real
  stream codec name (``h264``, ``av1``, ``hevc``).
* data parquet: one row per frame, columns = non-video features in declaration order,
  ``fixed_size_list<float>[N]`` for vectors and plain scalar columns for ``[1]`` features, the
  ``huggingface`` schema-metadata key (``{"info": {"features": ...}}`` as ``datasets`` >= 4 writes it),
  snappy compression, dictionary encoding, one row group per episode written by one
  ``pq.ParquetWriter.write_table`` call per episode (v3.0 ``DatasetWriter._save_episode_data``). No page
  index unless asked for (pyarrow's default, which the native writer keeps).
* v2.1: ``data/chunk-XXX/episode_XXXXXX.parquet``, ``videos/chunk-XXX/<key>/episode_XXXXXX.mp4``,
  ``meta/episodes.jsonl``, ``meta/episodes_stats.jsonl``, ``meta/tasks.jsonl``, ``meta/stats.json``.
* v3.0: ``data/chunk-XXX/file-YYY.parquet`` and ``videos/<key>/chunk-XXX/file-YYY.mp4`` holding
  ``episodes_per_file`` episodes each (each episode is encoded on its own and the episodes are joined
  with the ffmpeg concat demuxer by stream copy, as lerobot does, so every episode starts on a
  keyframe), ``meta/episodes/chunk-000/file-000.parquet`` (``pa.Table.from_pydict`` types, one row
  group per 10 episodes, ``stats/<feature>/<stat>`` columns), ``meta/tasks.parquet`` written by pandas
  (task string as the index named ``task``), ``meta/stats.json``.

Frame content is synthetic and machine-readable: :func:`frame_pixels` draws a grid of flat grey
blocks that encode (episode, frame) and survives lossy coding; :func:`read_frame_id` reads it back
from a decoded frame.

Importing this module loads numpy and pyarrow only; pandas is imported when ``tasks.parquet`` is
written. Videos need the ``ffmpeg`` executable (encoders libx264, libsvtav1, libx265).
"""

from __future__ import annotations

import json
import math
import os
import shutil
import subprocess
import tempfile
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from lerobot_tools.errors import LrtoolError
from lerobot_tools.video.codecs import ENCODERS, canonical_codec

__all__ = [
    "SynthSpec",
    "build_dataset",
    "encode_video",
    "concat_videos",
    "frame_pixels",
    "read_frame_id",
    "hf_feature_json",
    "hf_schema_metadata",
    "DEFAULT_FEATURES",
    "V21_DATA_PATH",
    "V21_VIDEO_PATH",
    "V30_DATA_PATH",
    "V30_VIDEO_PATH",
    "V30_EPISODES_PATH",
    "FrameIdError",
]

# ----------------------------------------------------------------------------------------------
# Format constants (lerobot ``datasets/utils.py``; v2.1 defaults from lerobot <= 0.3 / OpenTau)
# ----------------------------------------------------------------------------------------------

V21_DATA_PATH = "data/chunk-{episode_chunk:03d}/episode_{episode_index:06d}.parquet"
V21_VIDEO_PATH = "videos/chunk-{episode_chunk:03d}/{video_key}/episode_{episode_index:06d}.mp4"
V30_DATA_PATH = "data/chunk-{chunk_index:03d}/file-{file_index:03d}.parquet"
V30_VIDEO_PATH = "videos/{video_key}/chunk-{chunk_index:03d}/file-{file_index:03d}.mp4"
V30_EPISODES_PATH = "meta/episodes/chunk-{chunk_index:03d}/file-{file_index:03d}.parquet"

CHUNKS_SIZE = 1000
DATA_FILES_SIZE_IN_MB = 100
VIDEO_FILES_SIZE_IN_MB = 200
#: Episodes per row group / flush in the v3.0 episodes parquet (lerobot ``metadata_buffer_size``).
EPISODES_BUFFER = 10

#: The 5 features ``LeRobotDatasetMetadata.create`` adds to every dataset, in lerobot's order.
DEFAULT_FEATURES: dict[str, dict] = {
    "timestamp": {"dtype": "float32", "shape": [1], "names": None},
    "frame_index": {"dtype": "int64", "shape": [1], "names": None},
    "episode_index": {"dtype": "int64", "shape": [1], "names": None},
    "index": {"dtype": "int64", "shape": [1], "names": None},
    "task_index": {"dtype": "int64", "shape": [1], "names": None},
}

#: SO-100/SO-101 motor names (lerobot ``so101_follower``), used for 6-D state/action vectors.
SO101_MOTORS = [
    "shoulder_pan.pos",
    "shoulder_lift.pos",
    "elbow_flex.pos",
    "wrist_flex.pos",
    "wrist_roll.pos",
    "gripper.pos",
]

#: Quantile statistics written by lerobot v3 (``compute_stats.py``), name -> probability.
_QUANTILES = {"q01": 0.01, "q10": 0.10, "q50": 0.50, "q90": 0.90, "q99": 0.99}

#: Frames sampled per episode for image/video statistics (lerobot ``estimate_num_samples`` lower cap).
_IMAGE_STAT_SAMPLES = 100


# ----------------------------------------------------------------------------------------------
# Spec
# ----------------------------------------------------------------------------------------------


@dataclass
class SynthSpec:
    """What :func:`build_dataset` writes.

    Attributes:
        version: ``"v3.0"`` (consolidated files) or ``"v2.1"`` (one parquet / mp4 per episode).
        episode_lengths: frames per episode; every length must be > 0.
        fps: frames per second (int > 0) of every stream; ``timestamp = frame_index / fps``.
        tasks: task strings, unique; ``task_index`` = position in this list.
        episode_task: task index of each episode (one task per episode); default ``i % len(tasks)``.
        state_dim: length of the float32 ``observation.state`` vector (0 = no such feature).
        action_dim: length of the float32 ``action`` vector (0 = no such feature).
        extra_vector_features: name -> length of additional float32 vector features filled with
            standard-normal noise (incompressible; used to make large files for benchmarks).
        video_keys: camera feature names (dtype ``video``, shape ``[H, W, 3]``).
        video_codec: ``"h264"`` (libx264), ``"av1"`` (libsvtav1), ``"hevc"`` (libx265) or ``None``
            to write no mp4 files (camera features are still declared, without an ``info`` dict,
            unless ``video_keys`` is empty).
        video_size: ``(H, W)`` of every camera; SVT-AV1 needs at least 64x64.
        gop: keyframe interval in frames (lerobot encodes with ``g=2``).
        crf: constant rate factor passed to the encoder (lerobot default 30).
        episodes_per_file: v3.0 only: episodes per data file and per video file (each camera).
        row_groups: ``"episode"`` (native: one row group per episode) or ``"file"`` (one collapsed
            row group per data file, as ``delete_episodes``/converter/pandas rewrites produce).
        write_page_index: write the parquet page index. The native writer does not (pyarrow's
            default ``False``); ``Dataset.to_parquet`` in datasets >= 4.8 does.
        robot_type: ``info.json`` ``robot_type``.
        seed: seed of the numpy generators; data values depend only on ``(seed, episode_index)``.
    """

    version: str = "v3.0"
    episode_lengths: Sequence[int] = (20, 15, 25)
    fps: int = 10
    tasks: Sequence[str] = ("pick up the cube", "place the cube in the bin")
    episode_task: Sequence[int] | None = None
    state_dim: int = 6
    action_dim: int = 6
    extra_vector_features: dict[str, int] = field(default_factory=dict)
    video_keys: Sequence[str] = ("observation.images.front",)
    video_codec: str | None = "h264"
    video_size: tuple[int, int] = (64, 64)
    gop: int = 2
    crf: int = 30
    episodes_per_file: int = 2
    row_groups: str = "episode"
    write_page_index: bool = False
    robot_type: str | None = "so101_follower"
    seed: int = 0

    # -- derived ---------------------------------------------------------------------------

    def validate(self) -> None:
        """Raise ``ValueError`` (one line, naming the field) if the spec cannot be written."""
        if self.version not in ("v2.1", "v3.0"):
            raise ValueError(f"SynthSpec.version must be 'v2.1' or 'v3.0', got {self.version!r}")
        if not self.episode_lengths or any(int(n) <= 0 for n in self.episode_lengths):
            raise ValueError("SynthSpec.episode_lengths must be a non-empty list of positive ints")
        if int(self.fps) != self.fps or self.fps <= 0:
            raise ValueError(f"SynthSpec.fps must be a positive int, got {self.fps!r}")
        if not self.tasks or len(set(self.tasks)) != len(self.tasks):
            raise ValueError("SynthSpec.tasks must be a non-empty list of unique strings")
        et = self.task_of_episodes()
        if any(not 0 <= t < len(self.tasks) for t in et):
            raise ValueError("SynthSpec.episode_task holds an index outside [0, len(tasks))")
        names = list(self.user_vector_features()) + list(self.video_keys)
        if len(set(names)) != len(names) or set(names) & set(DEFAULT_FEATURES):
            raise ValueError(f"SynthSpec feature names collide: {names}")
        if any("/" in n for n in names):
            raise ValueError("SynthSpec feature names must not contain '/' (lerobot _validate_feature_names)")
        if self.video_codec is not None and canonical_codec(self.video_codec) not in ENCODERS:
            raise ValueError(f"SynthSpec.video_codec must be one of {sorted(ENCODERS)} (any spelling, e.g. libx264) "
                             "or None")
        h, w = self.video_size
        if h < 16 or w < 16:
            raise ValueError("SynthSpec.video_size must be at least 16x16")
        if canonical_codec(self.video_codec) == "av1" and (h < 64 or w < 64):
            raise ValueError("SynthSpec.video_size must be at least 64x64 for SVT-AV1")
        if self.gop < 1 or self.episodes_per_file < 1:
            raise ValueError("SynthSpec.gop and episodes_per_file must be >= 1")
        if self.row_groups not in ("episode", "file"):
            raise ValueError("SynthSpec.row_groups must be 'episode' or 'file'")

    def task_of_episodes(self) -> list[int]:
        """Task index of each episode."""
        if self.episode_task is None:
            return [i % len(self.tasks) for i in range(len(self.episode_lengths))]
        if len(self.episode_task) != len(self.episode_lengths):
            raise ValueError("SynthSpec.episode_task must have one entry per episode")
        return [int(t) for t in self.episode_task]

    def user_vector_features(self) -> dict[str, int]:
        """Non-default numeric features, name -> vector length, in declaration order."""
        out: dict[str, int] = {}
        if self.action_dim:
            out["action"] = int(self.action_dim)
        if self.state_dim:
            out["observation.state"] = int(self.state_dim)
        for k, n in self.extra_vector_features.items():
            out[k] = int(n)
        return out

    def codec_name(self) -> str | None:
        """Stream codec name as probed from the files (``h264``/``av1``/``hevc``), or None."""
        return canonical_codec(self.video_codec)

    def features(self) -> dict[str, dict]:
        """The ``info.json`` ``features`` dict (user features, cameras, then the 5 defaults)."""
        feats: dict[str, dict] = {}
        for name, n in self.user_vector_features().items():
            if name in ("action", "observation.state") and n == len(SO101_MOTORS):
                names = list(SO101_MOTORS)
            else:
                names = [f"{name.rsplit('.', 1)[-1]}_{i}" for i in range(n)]
            feats[name] = {"dtype": "float32", "shape": [n], "names": names}
        h, w = self.video_size
        for key in self.video_keys:
            ft: dict = {"dtype": "video", "shape": [h, w, 3], "names": ["height", "width", "channels"]}
            if self.video_codec is not None:
                ft["info"] = {
                    "video.height": h,
                    "video.width": w,
                    "video.codec": self.codec_name(),
                    "video.pix_fmt": "yuv420p",
                    "video.is_depth_map": False,
                    "video.fps": int(self.fps),
                    "video.channels": 3,
                    "has_audio": False,
                }
            feats[key] = ft
        for name, ft in DEFAULT_FEATURES.items():
            feats[name] = json.loads(json.dumps(ft))
        return feats


# ----------------------------------------------------------------------------------------------
# Frame content that survives lossy coding
# ----------------------------------------------------------------------------------------------

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


# ----------------------------------------------------------------------------------------------
# Video encoding (system ffmpeg)
# ----------------------------------------------------------------------------------------------


def _ffmpeg(ffmpeg: str) -> str:
    exe = shutil.which(ffmpeg)
    if exe is None:
        raise LrtoolError(
            f"the '{ffmpeg}' executable was not found on PATH; install FFmpeg (with libx264, "
            "libsvtav1, libx265) to write videos, or set video_codec=None"
        )
    return exe


def _run_ffmpeg(cmd: list[str], out: Path, stdin_chunks: Iterable[bytes] | None = None) -> None:
    """Run ffmpeg, feeding ``stdin_chunks``; raise LrtoolError with ffmpeg's last stderr line."""
    with tempfile.TemporaryFile() as err:
        proc = subprocess.Popen(
            cmd,
            stdin=subprocess.PIPE if stdin_chunks is not None else subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=err,
        )
        broken = False
        try:
            if stdin_chunks is not None:
                assert proc.stdin is not None
                try:
                    for chunk in stdin_chunks:
                        proc.stdin.write(chunk)
                except BrokenPipeError:
                    broken = True
                finally:
                    try:
                        proc.stdin.close()
                    except BrokenPipeError:
                        broken = True
            rc = proc.wait()
        except BaseException:
            proc.kill()
            proc.wait()
            raise
        if rc != 0 or broken or not out.is_file():
            err.seek(0)
            lines = [ln for ln in err.read().decode("utf-8", "replace").splitlines() if ln.strip()]
            last = lines[-1].strip() if lines else f"exit status {rc}"
            raise LrtoolError(f"ffmpeg failed to write the video: {last}", out)


def encode_video(
    path: Path,
    frames: np.ndarray | Iterable[np.ndarray],
    fps: int,
    codec: str,
    gop: int = 2,
    pix_fmt: str = "yuv420p",
    crf: int = 30,
    ffmpeg: str = "ffmpeg",
) -> None:
    """Encode RGB frames into an mp4 with the system ``ffmpeg`` (raw RGB piped to its stdin).

    Encoder settings follow lerobot's defaults (``VideoEncoderConfig``): ``g=gop``, ``crf``,
    ``pix_fmt``; SVT-AV1 at ``preset 12``; ``+faststart``. One video stream, no audio, constant
    frame rate ``fps`` (time base ``1/fps`` on input).

    Args:
        path: output ``.mp4`` path; parent folders are created; an existing file is replaced.
        frames: ``uint8`` array ``(T, H, W, 3)``, or an iterable of ``(H, W, 3)`` / ``(t, H, W, 3)``
            arrays (streamed, so long videos need not be held in memory).
        fps: frames per second (int > 0).
        codec: ``"h264"``, ``"av1"`` or ``"hevc"``, in any spelling :func:`~lerobot_tools.video.codecs.canonical_codec`
            knows (``"libx264"``, ``"h265"`` ...); encoded with :data:`~lerobot_tools.video.codecs.ENCODERS`.
        gop: keyframe interval in frames.
        pix_fmt: output pixel format (``yuv420p``).
        crf: constant rate factor.
        ffmpeg: the ffmpeg executable.

    Raises:
        ValueError: unknown codec, empty input, or frames that are not uint8 RGB of one size.
        LrtoolError: ffmpeg is missing or fails (message = ffmpeg's last error line).
    """
    encoder = ENCODERS.get(canonical_codec(codec) or "")
    if encoder is None:
        raise ValueError(f"encode_video: unknown codec {codec!r}; use one of {sorted(ENCODERS)} (any spelling, "
                         "e.g. libx264)")
    exe = _ffmpeg(ffmpeg)
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)

    if isinstance(frames, np.ndarray):
        if frames.ndim != 4:
            raise ValueError(f"encode_video: frames must be (T, H, W, 3), got {frames.shape}")
        it: Iterable[np.ndarray] = [frames]
    else:
        it = frames
    it = iter(it)
    first = next(it, None)
    if first is None:
        raise ValueError("encode_video: no frames")
    first = first if first.ndim == 4 else first[None]
    if first.dtype != np.uint8 or first.shape[-1] != 3 or first.shape[0] == 0:
        raise ValueError(f"encode_video: frames must be uint8 RGB, got {first.dtype} {first.shape}")
    H, W = first.shape[1:3]

    def chunks():
        yield np.ascontiguousarray(first).tobytes()
        for arr in it:
            arr = arr if arr.ndim == 4 else arr[None]
            if arr.dtype != np.uint8 or arr.shape[1:] != (H, W, 3):
                raise ValueError(f"encode_video: frame of shape {arr.shape} after frames of {(H, W, 3)}")
            yield np.ascontiguousarray(arr).tobytes()

    codec_args = ["-c:v", encoder, "-crf", str(crf), "-g", str(gop)]
    if encoder == "libsvtav1":
        codec_args += ["-preset", "12"]
    elif encoder == "libx265":
        codec_args += ["-x265-params", "log-level=error"]
    cmd = [
        exe, "-hide_banner", "-loglevel", "error", "-y",
        "-f", "rawvideo", "-pix_fmt", "rgb24", "-s", f"{W}x{H}", "-r", str(int(fps)), "-i", "-",
        *codec_args, "-pix_fmt", pix_fmt, "-an", "-movflags", "+faststart", str(path),
    ]  # fmt: skip
    _run_ffmpeg(cmd, path, chunks())


def concat_videos(out: Path, parts: Sequence[Path], ffmpeg: str = "ffmpeg") -> None:
    """Join mp4 files by stream copy with the ffmpeg concat demuxer (lerobot ``concatenate_video_files``).

    The parts must share codec, resolution and pix_fmt. Each part keeps its own keyframes, so every
    part starts on a keyframe in the output, and part *k* starts at the summed durations of parts
    ``0 … k-1``.

    Raises:
        LrtoolError: ffmpeg is missing or fails.
    """
    exe = _ffmpeg(ffmpeg)
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False, dir=out.parent) as f:
        for p in parts:
            q = str(Path(p).resolve()).replace("'", "'\\''")
            f.write(f"file '{q}'\n")
        listing = f.name
    try:
        cmd = [
            exe, "-hide_banner", "-loglevel", "error", "-y", "-f", "concat", "-safe", "0",
            "-i", listing, "-c", "copy", "-movflags", "+faststart", str(out),
        ]  # fmt: skip
        _run_ffmpeg(cmd, out)
    finally:
        os.unlink(listing)


# ----------------------------------------------------------------------------------------------
# HF `datasets` feature JSON (schema metadata key "huggingface")
# ----------------------------------------------------------------------------------------------


def hf_feature_json(dtype: str, shape: Sequence[int]) -> dict:
    """Feature JSON as ``datasets`` >= 4 writes it into the ``huggingface`` parquet metadata.

    ``[1]`` -> ``{"dtype": dtype, "_type": "Value"}``; ``[N]`` -> ``{"feature": {...}, "length": N,
    "_type": "List"}`` (format notes §5.3, verified with datasets 4.8.5).
    """
    value = {"dtype": dtype, "_type": "Value"}
    if list(shape) == [1]:
        return value
    if len(shape) != 1:
        raise ValueError(f"hf_feature_json: only 1-D shapes are supported, got {list(shape)}")
    return {"feature": value, "length": int(shape[0]), "_type": "List"}


def hf_schema_metadata(hf_features: dict[str, dict]) -> dict[bytes, bytes]:
    """Parquet key-value metadata ``{b"huggingface": b'{"info": {"features": ...}}'}``."""
    return {b"huggingface": json.dumps({"info": {"features": hf_features}}).encode()}


def _arrow_type(dtype: str, shape: Sequence[int]) -> pa.DataType:
    value = pa.from_numpy_dtype(np.dtype(dtype))
    return value if list(shape) == [1] else pa.list_(value, int(shape[0]))


def _data_schema(features: dict[str, dict]) -> pa.Schema:
    cols = {k: v for k, v in features.items() if v["dtype"] not in ("video", "image", "string")}
    fields = [pa.field(k, _arrow_type(v["dtype"], v["shape"])) for k, v in cols.items()]
    hf = {k: hf_feature_json(v["dtype"], v["shape"]) for k, v in cols.items()}
    return pa.schema(fields, metadata=hf_schema_metadata(hf))


def _to_arrow(col: np.ndarray, typ: pa.DataType) -> pa.Array:
    if pa.types.is_fixed_size_list(typ):
        flat = pa.array(np.ascontiguousarray(col).reshape(-1), type=typ.value_type)
        return pa.FixedSizeListArray.from_arrays(flat, typ.list_size)
    return pa.array(col, type=typ)


# ----------------------------------------------------------------------------------------------
# Episode content and statistics
# ----------------------------------------------------------------------------------------------


def _episode_columns(
    spec: SynthSpec, ep: int, length: int, start_index: int, task: int
) -> dict[str, np.ndarray]:
    """Data columns of one episode (numpy), values depending only on (seed, episode)."""
    rng = np.random.default_rng([int(spec.seed), ep])
    cols: dict[str, np.ndarray] = {}
    vec = spec.user_vector_features()
    state = None
    if "observation.state" in vec or "action" in vec:
        d = max(spec.state_dim, spec.action_dim)
        # a smooth joint trajectory in degrees: random start + random walk
        start = rng.uniform(-60.0, 60.0, size=d)
        walk = np.cumsum(rng.normal(0.0, 0.8, size=(length + 1, d)), axis=0)
        state = start + walk
    for name, n in vec.items():
        if name == "action":
            # the commanded position leads the measured one by a frame, plus command noise
            cols[name] = (state[1:, :n] + rng.normal(0.0, 0.2, size=(length, n))).astype(np.float32)
        elif name == "observation.state":
            cols[name] = state[:-1, :n].astype(np.float32)
        else:
            cols[name] = rng.standard_normal((length, n), dtype=np.float32)
    fi = np.arange(length, dtype=np.int64)
    cols["timestamp"] = (fi / spec.fps).astype(np.float32)
    cols["frame_index"] = fi
    cols["episode_index"] = np.full(length, ep, dtype=np.int64)
    cols["index"] = np.arange(start_index, start_index + length, dtype=np.int64)
    cols["task_index"] = np.full(length, task, dtype=np.int64)
    return cols


def _numeric_stats(x: np.ndarray, quantiles: bool) -> dict[str, np.ndarray]:
    """min/max/mean/std/count (+ quantiles) over axis 0; scalars give 1-element arrays."""
    a = x.reshape(len(x), -1)
    f = a.astype(np.float64)
    out = {
        "min": a.min(axis=0),
        "max": a.max(axis=0),
        "mean": f.mean(axis=0),
        "std": f.std(axis=0),
        "count": np.array([len(a)], dtype=np.int64),
    }
    if quantiles:
        qs = np.quantile(f, list(_QUANTILES.values()), axis=0)
        for name, row in zip(_QUANTILES, qs):
            out[name] = row
    return out


def _image_stats(frames: np.ndarray, quantiles: bool) -> dict[str, np.ndarray]:
    """Per-channel stats of sampled frames (n, H, W, 3) scaled to [0, 1], shaped (3, 1, 1)."""
    px = frames.reshape(-1, 3).astype(np.float64) / 255.0
    out = {
        "min": px.min(axis=0),
        "max": px.max(axis=0),
        "mean": px.mean(axis=0),
        "std": px.std(axis=0),
    }
    if quantiles:
        qs = np.quantile(px, list(_QUANTILES.values()), axis=0)
        for name, row in zip(_QUANTILES, qs):
            out[name] = row
    out = {k: v.reshape(3, 1, 1) for k, v in out.items()}
    out["count"] = np.array([len(frames)], dtype=np.int64)
    return {k: out[k] for k in ["min", "max", "mean", "std", "count", *(_QUANTILES if quantiles else [])]}


def _sample_frames(ep: int, length: int, H: int, W: int) -> np.ndarray:
    n = min(length, _IMAGE_STAT_SAMPLES)
    idx = np.unique(np.round(np.linspace(0, length - 1, n)).astype(int))
    return np.stack([frame_pixels(ep, int(i), H, W) for i in idx])


class _StatsAccumulator:
    """Running combination of per-episode stats (lerobot ``aggregate_stats``), O(features) memory.

    min/max: element-wise envelope; mean: count-weighted; std: pooled variance around the global
    mean (``sum c*(std^2 + mean^2) / N - mean^2``); count: sum; quantiles below/above the median:
    min/max envelope (lerobot ``31fedfd9d``); q50: count-weighted mean. A quantile is kept only if
    every episode has it.
    """

    def __init__(self) -> None:
        self._acc: dict[str, dict[str, np.ndarray]] = {}

    def add(self, stats: dict[str, dict[str, np.ndarray]]) -> None:
        for feat, st in stats.items():
            c = float(st["count"][0])
            mean = np.asarray(st["mean"], dtype=np.float64)
            sq = np.asarray(st["std"], dtype=np.float64) ** 2 + mean**2
            a = self._acc.get(feat)
            if a is None:
                a = self._acc[feat] = {"n": 0.0, "sum": 0.0, "sumsq": 0.0, "min": st["min"], "max": st["max"]}
                for q in _QUANTILES:
                    if q in st:
                        a[q] = np.asarray(st[q], dtype=np.float64) * (c if q == "q50" else 1.0)
            else:
                a["min"] = np.minimum(a["min"], st["min"])
                a["max"] = np.maximum(a["max"], st["max"])
                for q, p in _QUANTILES.items():
                    if q not in a:
                        continue
                    if q not in st:
                        del a[q]
                    elif p < 0.5:
                        a[q] = np.minimum(a[q], st[q])
                    elif p > 0.5:
                        a[q] = np.maximum(a[q], st[q])
                    else:
                        a[q] = a[q] + c * np.asarray(st[q], dtype=np.float64)
            a["n"] += c
            a["sum"] = a["sum"] + c * mean
            a["sumsq"] = a["sumsq"] + c * sq

    def result(self) -> dict[str, dict[str, np.ndarray]]:
        out: dict[str, dict[str, np.ndarray]] = {}
        for feat, a in self._acc.items():
            n = a["n"]
            mean = a["sum"] / n
            var = np.maximum(a["sumsq"] / n - mean**2, 0.0)
            agg = {
                "min": a["min"],
                "max": a["max"],
                "mean": mean,
                "std": np.sqrt(var),
                "count": np.array([int(n)], dtype=np.int64),
            }
            for q in _QUANTILES:
                if q in a:
                    agg[q] = a[q] / n if q == "q50" else a[q]
            out[feat] = agg
        return out


def _stats_json(stats: dict[str, dict[str, np.ndarray]]) -> dict:
    return {f: {k: np.asarray(v).tolist() for k, v in s.items()} for f, s in stats.items()}


# ----------------------------------------------------------------------------------------------
# Writers
# ----------------------------------------------------------------------------------------------


def _write_json(path: Path, obj, indent: int | None = 4) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(obj, indent=indent, ensure_ascii=False) + ("\n" if indent else ""))


def _write_jsonl(path: Path, rows: Iterable[dict]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        for r in rows:
            f.write(json.dumps(r, ensure_ascii=False) + "\n")


def _parquet_writer(path: Path, schema: pa.Schema, spec: SynthSpec) -> pq.ParquetWriter:
    path.parent.mkdir(parents=True, exist_ok=True)
    return pq.ParquetWriter(
        str(path), schema, compression="snappy", use_dictionary=True, write_page_index=spec.write_page_index
    )


def _episode_table(cols: dict[str, np.ndarray], schema: pa.Schema) -> pa.Table:
    return pa.Table.from_arrays([_to_arrow(cols[f.name], f.type) for f in schema], schema=schema)


EpisodeHook = Callable[[int, dict[str, np.ndarray]], None]


def build_dataset(
    root: Path, spec: SynthSpec | None = None, *, episode_hook: EpisodeHook | None = None
) -> Path:
    """Write a synthetic LeRobot dataset under ``root`` and return ``root``.

    Episodes are generated, written and forgotten one at a time (data parquet row group, videos,
    per-episode stats), so memory is bounded by the largest episode (plus one data file's episodes
    when ``row_groups="file"``). Layout and metadata per the module docstring.

    Args:
        root: dataset folder; created; must not exist or be empty (lerobot ``create`` refuses an
            existing folder too).
        spec: what to write; default ``SynthSpec()`` (v3.0, 3 episodes of 20/15/25 frames, one
            64x64 h264 camera).
        episode_hook: optional ``hook(episode_index, columns)`` called with the episode's data
            columns (name -> numpy array, ``(L,)`` or ``(L, N)``) before statistics are computed and
            the episode is written; it may change values in place (used by fixtures to inject value
            defects such as drifting timestamps with consistent statistics).

    Returns:
        ``root`` as a ``Path``.

    Raises:
        ValueError: invalid spec.
        FileExistsError: ``root`` exists and is not empty.
        LrtoolError: ffmpeg missing or failing (only when videos are written).
    """
    spec = spec or SynthSpec()
    spec.validate()
    root = Path(root)
    if root.exists() and (not root.is_dir() or any(root.iterdir())):
        raise FileExistsError(f"{root}: already exists and is not empty")
    if spec.video_codec is not None and spec.video_keys:
        _ffmpeg("ffmpeg")
    created = not root.exists()
    root.mkdir(parents=True, exist_ok=True)
    try:
        with tempfile.TemporaryDirectory(prefix=".synth-", dir=root) as staging:
            if spec.version == "v2.1":
                _build_v21(root, spec, Path(staging), episode_hook)
            else:
                _build_v30(root, spec, Path(staging), episode_hook)
    except BaseException:
        # never leave a half-written dataset behind (the folder was empty or absent on entry)
        if created:
            shutil.rmtree(root, ignore_errors=True)
        else:
            for child in root.iterdir():
                shutil.rmtree(child, ignore_errors=True) if child.is_dir() else child.unlink()
        raise
    return root


def _iter_episodes(spec: SynthSpec, hook: EpisodeHook | None):
    """Yield (ep, length, task, columns) for every episode."""
    start = 0
    for ep, (length, task) in enumerate(zip(spec.episode_lengths, spec.task_of_episodes())):
        length = int(length)
        cols = _episode_columns(spec, ep, length, start, task)
        if hook is not None:
            hook(ep, cols)
        yield ep, length, task, cols
        start += length


def _episode_stats(
    spec: SynthSpec, features: dict, ep: int, length: int, cols: dict, quantiles: bool
) -> dict:
    stats: dict[str, dict[str, np.ndarray]] = {}
    H, W = spec.video_size
    frames = None
    for name, ft in features.items():
        if ft["dtype"] == "video":
            if frames is None:
                frames = _sample_frames(ep, length, H, W)
            stats[name] = _image_stats(frames, quantiles)
        elif name in cols:
            stats[name] = _numeric_stats(cols[name], quantiles)
    return stats


def _episode_frames(ep: int, length: int, H: int, W: int):
    for fi in range(length):
        yield frame_pixels(ep, fi, H, W)


def _encode_episode(path: Path, spec: SynthSpec, ep: int, length: int) -> None:
    H, W = spec.video_size
    encode_video(path, _episode_frames(ep, length, H, W), spec.fps, spec.video_codec, spec.gop, crf=spec.crf)


def _episode_tasks(spec: SynthSpec, cols: dict[str, np.ndarray]) -> list[str]:
    """Distinct task strings referenced by the episode's rows (indices outside the table skipped)."""
    used = sorted({int(t) for t in np.unique(cols["task_index"])})
    return [spec.tasks[t] for t in used if 0 <= t < len(spec.tasks)]


def _build_v21(root: Path, spec: SynthSpec, staging: Path, hook: EpisodeHook | None) -> None:
    features = spec.features()
    schema = _data_schema(features)
    write_videos = spec.video_codec is not None and bool(spec.video_keys)
    episodes, ep_stats_rows, acc = [], [], _StatsAccumulator()
    total = 0
    for ep, length, task, cols in _iter_episodes(spec, hook):
        chunk = ep // CHUNKS_SIZE
        path = root / V21_DATA_PATH.format(episode_chunk=chunk, episode_index=ep)
        with _parquet_writer(path, schema, spec) as w:
            w.write_table(_episode_table(cols, schema))
        if write_videos:
            for key in spec.video_keys:
                vpath = root / V21_VIDEO_PATH.format(episode_chunk=chunk, video_key=key, episode_index=ep)
                _encode_episode(vpath, spec, ep, length)
        stats = _episode_stats(spec, features, ep, length, cols, quantiles=False)
        acc.add(stats)
        episodes.append({"episode_index": ep, "tasks": _episode_tasks(spec, cols), "length": length})
        ep_stats_rows.append({"episode_index": ep, "stats": _stats_json(stats)})
        total += length

    n_eps = len(spec.episode_lengths)
    info = {
        "codebase_version": "v2.1",
        "robot_type": spec.robot_type,
        "total_episodes": n_eps,
        "total_frames": total,
        "total_tasks": len(spec.tasks),
        "total_videos": n_eps * len(spec.video_keys),
        "total_chunks": math.ceil(n_eps / CHUNKS_SIZE),
        "chunks_size": CHUNKS_SIZE,
        "fps": int(spec.fps),
        "splits": {"train": f"0:{n_eps}"},
        "data_path": V21_DATA_PATH,
        "video_path": V21_VIDEO_PATH if spec.video_keys else None,
        "features": features,
    }
    meta = root / "meta"
    _write_jsonl(meta / "tasks.jsonl", ({"task_index": i, "task": t} for i, t in enumerate(spec.tasks)))
    _write_jsonl(meta / "episodes.jsonl", episodes)
    _write_jsonl(meta / "episodes_stats.jsonl", ep_stats_rows)
    _write_json(meta / "stats.json", _stats_json(acc.result()))
    _write_json(meta / "info.json", info)


def _update_chunk_file(chunk: int, file: int) -> tuple[int, int]:
    """lerobot ``update_chunk_file_indices``: next file, rolling over to a new chunk."""
    if file == CHUNKS_SIZE - 1:
        return chunk + 1, 0
    return chunk, file + 1


def _episodes_schema(features: dict, video_keys: Sequence[str], stats_example: dict) -> pa.Schema:
    fields = [
        pa.field("episode_index", pa.int64()),
        pa.field("tasks", pa.list_(pa.string())),
        pa.field("length", pa.int64()),
        pa.field("data/chunk_index", pa.int64()),
        pa.field("data/file_index", pa.int64()),
        pa.field("dataset_from_index", pa.int64()),
        pa.field("dataset_to_index", pa.int64()),
    ]
    for key in video_keys:
        fields += [
            pa.field(f"videos/{key}/chunk_index", pa.int64()),
            pa.field(f"videos/{key}/file_index", pa.int64()),
            pa.field(f"videos/{key}/from_timestamp", pa.float64()),
            pa.field(f"videos/{key}/to_timestamp", pa.float64()),
        ]
    for feat, st in stats_example.items():
        video = features[feat]["dtype"] == "video"
        for name, arr in st.items():
            if name == "count" or (name in ("min", "max") and np.asarray(arr).dtype.kind in "iu"):
                typ = pa.list_(pa.int64())
            elif video:
                typ = pa.list_(pa.list_(pa.list_(pa.float64())))
            else:
                typ = pa.list_(pa.float64())
            fields.append(pa.field(f"stats/{feat}/{name}", typ))
    fields += [
        pa.field("meta/episodes/chunk_index", pa.int64()),
        pa.field("meta/episodes/file_index", pa.int64()),
    ]
    return pa.schema(fields)


def _flush_episode_rows(writer: pq.ParquetWriter, schema: pa.Schema, rows: list[dict]) -> None:
    """One ``write_table`` (= one row group) per buffer, as ``_flush_metadata_buffer`` does."""
    table = pa.Table.from_pydict({f.name: [r[f.name] for r in rows] for f in schema}, schema=schema)
    writer.write_table(table)
    rows.clear()


def _build_v30(root: Path, spec: SynthSpec, staging: Path, hook: EpisodeHook | None) -> None:
    features = spec.features()
    schema = _data_schema(features)
    write_videos = spec.video_codec is not None and bool(spec.video_keys)
    per_file = spec.episodes_per_file

    ep_rows: list[dict] = []  # episodes-parquet rows not yet flushed (at most EPISODES_BUFFER)
    ep_writer: pq.ParquetWriter | None = None
    eschema: pa.Schema | None = None
    acc = _StatsAccumulator()
    chunk, file = 0, 0
    writer: pq.ParquetWriter | None = None
    file_tables: list[pa.Table] = []  # row_groups == "file": this data file's episodes
    in_file = 0  # episodes in the current data/video file
    file_start_frames = 0  # frames before this episode within the current video file
    parts: dict[str, list[Path]] = {k: [] for k in spec.video_keys}
    total = 0

    def close_file() -> None:
        nonlocal writer, file_tables
        if writer is not None:
            if file_tables:
                t = pa.concat_tables(file_tables).combine_chunks()
                writer.write_table(t, row_group_size=max(t.num_rows, 1))
                file_tables = []
            writer.close()
            writer = None
        for key, ps in parts.items():
            if ps:
                out = root / V30_VIDEO_PATH.format(video_key=key, chunk_index=chunk, file_index=file)
                concat_videos(out, ps)
                for p in ps:
                    p.unlink()
                ps.clear()

    for ep, length, task, cols in _iter_episodes(spec, hook):
        if in_file == per_file:
            close_file()
            chunk, file = _update_chunk_file(chunk, file)
            in_file, file_start_frames = 0, 0
        if writer is None:
            dpath = root / V30_DATA_PATH.format(chunk_index=chunk, file_index=file)
            writer = _parquet_writer(dpath, schema, spec)
        table = _episode_table(cols, schema)
        if spec.row_groups == "episode":
            writer.write_table(table)
        else:
            file_tables.append(table)
        del table
        row: dict = {
            "episode_index": ep,
            "tasks": _episode_tasks(spec, cols),
            "length": length,
            "data/chunk_index": chunk,
            "data/file_index": file,
            "dataset_from_index": total,
            "dataset_to_index": total + length,
        }
        for key in spec.video_keys:
            if write_videos:
                part = staging / key / f"episode_{ep:06d}.mp4"
                _encode_episode(part, spec, ep, length)
                parts[key].append(part)
            row[f"videos/{key}/chunk_index"] = chunk
            row[f"videos/{key}/file_index"] = file
            row[f"videos/{key}/from_timestamp"] = file_start_frames / spec.fps
            row[f"videos/{key}/to_timestamp"] = file_start_frames / spec.fps + length / spec.fps
        stats = _episode_stats(spec, features, ep, length, cols, quantiles=True)
        acc.add(stats)
        for feat, st in stats.items():
            for name, arr in st.items():
                row[f"stats/{feat}/{name}"] = np.asarray(arr).tolist()
        row["meta/episodes/chunk_index"] = 0
        row["meta/episodes/file_index"] = 0
        ep_rows.append(row)
        if ep_writer is None:
            eschema = _episodes_schema(features, spec.video_keys, stats)
            epath = root / V30_EPISODES_PATH.format(chunk_index=0, file_index=0)
            ep_writer = _parquet_writer(epath, eschema, spec)
        if len(ep_rows) == EPISODES_BUFFER:
            _flush_episode_rows(ep_writer, eschema, ep_rows)
        in_file += 1
        file_start_frames += length
        total += length
    close_file()

    meta = root / "meta"
    if ep_rows:
        _flush_episode_rows(ep_writer, eschema, ep_rows)
    ep_writer.close()

    import pandas as pd  # lazily: only tasks.parquet needs it

    tasks_df = pd.DataFrame(
        {"task_index": np.arange(len(spec.tasks), dtype=np.int64)},
        index=pd.Index(list(spec.tasks), name="task"),
    )
    tasks_df.to_parquet(meta / "tasks.parquet")

    _write_json(meta / "stats.json", _stats_json(acc.result()))
    n_eps = len(spec.episode_lengths)
    info = {
        "codebase_version": "v3.0",
        "fps": int(spec.fps),
        "features": features,
        "total_episodes": n_eps,
        "total_frames": total,
        "total_tasks": len(spec.tasks),
        "chunks_size": CHUNKS_SIZE,
        "data_files_size_in_mb": DATA_FILES_SIZE_IN_MB,
        "video_files_size_in_mb": VIDEO_FILES_SIZE_IN_MB,
        "data_path": V30_DATA_PATH,
        "video_path": V30_VIDEO_PATH if spec.video_keys else None,
        "robot_type": spec.robot_type,
        "splits": {"train": f"0:{n_eps}"},
    }
    _write_json(meta / "info.json", info)
