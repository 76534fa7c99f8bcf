"""Writing a whole dataset: :func:`build_dataset` and the v2.1 / v3.0 layout writers (data, videos, metadata)."""

from __future__ import annotations

import json
import math
import shutil
import tempfile
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from lerobot_tools.testing.synth.columns import data_schema, episode_columns, episode_table, parquet_writer
from lerobot_tools.testing.synth.frames import frame_pixels
from lerobot_tools.testing.synth.spec import (
    CHUNKS_SIZE,
    DATA_FILES_SIZE_IN_MB,
    EPISODES_BUFFER,
    V21_DATA_PATH,
    V21_VIDEO_PATH,
    V30_DATA_PATH,
    V30_EPISODES_PATH,
    V30_VIDEO_PATH,
    VIDEO_FILES_SIZE_IN_MB,
    SynthSpec,
)
from lerobot_tools.testing.synth.stats import episode_stats, StatsAccumulator, stats_json
from lerobot_tools.testing.synth.video import _ffmpeg, concat_videos, encode_video

def _write_json(path: Path, obj, indent: int | None = 4) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(obj, indent=indent, ensure_ascii=False) + ("\n" if indent else ""))


def _write_jsonl(path: Path, rows: Iterable[dict]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        for r in rows:
            f.write(json.dumps(r, ensure_ascii=False) + "\n")


EpisodeHook = Callable[[int, dict[str, np.ndarray]], None]
#: ``hook(episode_index, video_key, frame_index, frame)`` -> the ``(H, W, 3)`` uint8 frame to write instead
FrameHook = Callable[[int, str, int, np.ndarray], np.ndarray]


def build_dataset(
    root: Path, spec: SynthSpec | None = None, *, episode_hook: EpisodeHook | None = None,
    frame_hook: FrameHook | None = None,
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
        frame_hook: optional ``hook(episode_index, video_key, frame_index, frame)`` returning the frame to
            encode (and to sample for the camera statistics) instead of :func:`frame_pixels`' (used to plant
            black, frozen or duplicated camera footage); None keeps the frames (and the files) as they were.

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
                _build_v21(root, spec, Path(staging), episode_hook, frame_hook)
            else:
                _build_v30(root, spec, Path(staging), episode_hook, frame_hook)
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
        cols = episode_columns(spec, ep, length, start, task)
        if hook is not None:
            hook(ep, cols)
        yield ep, length, task, cols
        start += length


def _episode_frames(ep: int, length: int, H: int, W: int, key: str | None = None, frame_hook=None):
    for fi in range(length):
        img = frame_pixels(ep, fi, H, W)
        yield img if frame_hook is None else frame_hook(ep, key, fi, img)


def _encode_episode(path: Path, spec: SynthSpec, ep: int, length: int, key: str | None = None,
                    frame_hook=None) -> None:
    H, W = spec.video_size
    encode_video(path, _episode_frames(ep, length, H, W, key, frame_hook), spec.fps, spec.video_codec, spec.gop,
                 crf=spec.crf)


def _episode_tasks(spec: SynthSpec, cols: dict[str, np.ndarray]) -> list[str]:
    """Distinct task strings referenced by the episode's rows (indices outside the table skipped)."""
    used = sorted({int(t) for t in np.unique(cols["task_index"])})
    return [spec.tasks[t] for t in used if 0 <= t < len(spec.tasks)]


def _build_v21(root: Path, spec: SynthSpec, staging: Path, hook: EpisodeHook | None,
               frame_hook: FrameHook | None = None) -> None:
    features = spec.features()
    schema = data_schema(features)
    write_videos = spec.video_codec is not None and bool(spec.video_keys)
    episodes, ep_stats_rows, acc = [], [], StatsAccumulator()
    total = 0
    for ep, length, task, cols in _iter_episodes(spec, hook):
        chunk = ep // CHUNKS_SIZE
        path = root / V21_DATA_PATH.format(episode_chunk=chunk, episode_index=ep)
        with parquet_writer(path, schema, spec) as w:
            w.write_table(episode_table(cols, schema))
        if write_videos:
            for key in spec.video_keys:
                vpath = root / V21_VIDEO_PATH.format(episode_chunk=chunk, video_key=key, episode_index=ep)
                _encode_episode(vpath, spec, ep, length, key, frame_hook)
        stats = episode_stats(spec, features, ep, length, cols, quantiles=False, frame_hook=frame_hook)
        acc.add(stats)
        episodes.append({"episode_index": ep, "tasks": _episode_tasks(spec, cols), "length": length})
        ep_stats_rows.append({"episode_index": ep, "stats": stats_json(stats)})
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
    _write_json(meta / "stats.json", stats_json(acc.result()))
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


def _build_v30(root: Path, spec: SynthSpec, staging: Path, hook: EpisodeHook | None,
               frame_hook: FrameHook | None = None) -> None:
    features = spec.features()
    schema = data_schema(features)
    write_videos = spec.video_codec is not None and bool(spec.video_keys)
    per_file = spec.episodes_per_file

    ep_rows: list[dict] = []  # episodes-parquet rows not yet flushed (at most EPISODES_BUFFER)
    ep_writer: pq.ParquetWriter | None = None
    eschema: pa.Schema | None = None
    acc = StatsAccumulator()
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
            writer = parquet_writer(dpath, schema, spec)
        table = episode_table(cols, schema)
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
                _encode_episode(part, spec, ep, length, key, frame_hook)
                parts[key].append(part)
            row[f"videos/{key}/chunk_index"] = chunk
            row[f"videos/{key}/file_index"] = file
            row[f"videos/{key}/from_timestamp"] = file_start_frames / spec.fps
            row[f"videos/{key}/to_timestamp"] = file_start_frames / spec.fps + length / spec.fps
        stats = episode_stats(spec, features, ep, length, cols, quantiles=True, frame_hook=frame_hook)
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
            ep_writer = parquet_writer(epath, eschema, spec)
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

    _write_json(meta / "stats.json", stats_json(acc.result()))
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
