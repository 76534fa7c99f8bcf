"""Synthetic LeRobot datasets, written on disk the way the native writers lay them out.

Used by the test-suite, the committed fixtures (``fixtures/generate.py``) and the benchmarks. A dataset
is described by a :class:`SynthSpec` and written by :func:`build_dataset`, one episode at a time, so
memory is bounded by one episode whatever the number of episodes (measured: 250 episodes x 2000 frames
with a 512-float extra vector, 1.2 GB of parquet, build in ~25 s on 2 cores at ~235 MB peak RSS, the
same as for 25 such episodes).

What is reproduced, per codebase version (sources: docs/format.md, derived from
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
  by stream copy through PyAV's concat demuxer, as lerobot does, so every episode starts on a
  keyframe and every frame on exactly ``k / fps``), ``meta/episodes/chunk-000/file-000.parquet`` (``pa.Table.from_pydict`` types, one row
  group per 10 episodes, ``stats/<feature>/<stat>`` columns), ``meta/tasks.parquet`` written by pandas
  (task string as the index named ``task``), ``meta/stats.json``.

Frame content is synthetic and machine-readable: :func:`frame_pixels` draws a grid of flat grey
blocks that encode (episode, frame) and survives lossy coding; :func:`read_frame_id` reads it back
from a decoded frame.

Importing this module loads numpy and pyarrow only; pandas is imported when ``tasks.parquet`` is
written. Videos need the ``ffmpeg`` executable (encoders libx264, libsvtav1, libx265); v3.0 joins need PyAV.

Modules: :mod:`.spec` (:class:`SynthSpec`, path templates and defaults), :mod:`.frames` (frame content),
:mod:`.video` (ffmpeg encoding, PyAV joins), :mod:`.columns` (data columns, Arrow schema, ``huggingface`` metadata,
parquet writer), :mod:`.stats` (per-episode and aggregated statistics), :mod:`.build` (:func:`build_dataset` and
the v2.1 / v3.0 layout writers). Everything public is importable from this package.
"""

from __future__ import annotations

from lerobot_tools.testing.synth.build import build_dataset
from lerobot_tools.testing.synth.columns import hf_feature_json, hf_schema_metadata
from lerobot_tools.testing.synth.frames import FrameIdError, frame_pixels, read_frame_id
from lerobot_tools.testing.synth.spec import (
    DEFAULT_FEATURES,
    V21_DATA_PATH,
    V21_VIDEO_PATH,
    V30_DATA_PATH,
    V30_EPISODES_PATH,
    V30_VIDEO_PATH,
    SynthSpec,
)
from lerobot_tools.testing.synth.video import concat_videos, encode_video

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
