"""What a synthetic dataset holds (:class:`SynthSpec`) and the format constants the writers use.

Path templates, chunk size and file-size targets are lerobot 0.4.4's defaults (``src/lerobot/datasets/utils.py``:
``DEFAULT_DATA_PATH``, ``DEFAULT_VIDEO_PATH``, ``DEFAULT_CHUNK_SIZE``, ``DEFAULT_DATA_FILE_SIZE_IN_MB``,
``DEFAULT_VIDEO_FILE_SIZE_IN_MB``); the v2.1 templates are those lerobot <= 0.3 wrote.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field

from lerobot_tools.video.codecs import ENCODERS, canonical_codec

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
