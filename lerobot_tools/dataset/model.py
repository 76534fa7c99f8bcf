"""The dataset model every command shares: open a LeRobot dataset root and read it lazily.

A :class:`Dataset` reads ``meta/info.json`` eagerly (it decides the layout) and everything else on first
use: episode metadata (v2.x ``meta/episodes.jsonl``, v3.0 ``meta/episodes/*/*.parquet``), the task table
(``meta/tasks.jsonl`` / ``meta/tasks.parquet``), ``meta/stats.json``, and the data/video files each episode
lives in (expanded from the ``data_path`` / ``video_path`` templates). Format facts: docs/format.md#layouts to
docs/format.md#episodes (lerobot 0.4.4 and ``huggingface/lerobot@7427f318``, ``TensorAuto/OpenTau@0b153a92``).

Reading never writes into the dataset. Problems surface as :class:`~lerobot_tools.errors.DatasetError`
with a one-line message naming the file; the checks turn those into findings. Every metadata file is sniffed
before it is parsed (:func:`lerobot_tools.dataset.placeholders.check_metadata_file`): a Git LFS pointer, an
error page, an empty or truncated file raises
:class:`~lerobot_tools.dataset.placeholders.UnreadableFileError` saying what it is.
"""

from __future__ import annotations

import math
import os
import re
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any, Iterator

from lerobot_tools._io import MAX_JSONL_BYTES, iter_lines_capped, load_json_file, loads_json, open_regular
from lerobot_tools.dataset import templates as tpl
from lerobot_tools.dataset.episode_tables import EpisodeStatsTables, read_episode_files
from lerobot_tools.dataset.placeholders import UnreadableFileError, check_metadata_file
from lerobot_tools.errors import DatasetError, one_line

INFO_PATH = "meta/info.json"
STATS_PATH = "meta/stats.json"
V2_EPISODES_PATH = "meta/episodes.jsonl"
V2_EPISODES_STATS_PATH = "meta/episodes_stats.jsonl"
V2_TASKS_PATH = "meta/tasks.jsonl"
V3_TASKS_PATH = "meta/tasks.parquet"
V3_EPISODES_DIR = "meta/episodes"

KNOWN_VERSIONS = ("v2.0", "v2.1", "v3.0")

#: Features lerobot adds to every dataset (``create``), with their dtype; shape ``[1]``, names ``null``.
DEFAULT_FEATURES = {
    "timestamp": "float32",
    "frame_index": "int64",
    "episode_index": "int64",
    "index": "int64",
    "task_index": "int64",
}

class NotADatasetError(DatasetError):
    """The folder is not a LeRobot dataset at all: it is not a folder, or it has no ``meta/info.json``."""


MAX_FPS = 100_000
"""Highest ``fps`` taken as a frame rate. Camera and control rates of robot datasets are 1-1000 Hz; a larger value
(``1e308``) is a corrupt info.json, and computing frame grids or durations with it overflows."""


def valid_fps(value: object) -> float | None:
    """``value`` as a float frame rate when it is a finite number in ``(0, MAX_FPS]``, else None."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    try:
        f = float(value)
    except OverflowError:  # a JSON integer with hundreds of digits
        return None
    return f if math.isfinite(f) and 0 < f <= MAX_FPS else None


_VERSION_RE = re.compile(r"^v?(\d+)\.(\d+)(?:\.\d+)?([._-]?[0-9A-Za-z.]*)?$")


def parse_codebase_version(value: object) -> tuple[int, int] | None:
    """Parse ``codebase_version`` (``"v2.1"``, ``"v3.0"``, ``"3.0"``) into ``(major, minor)``.

    Returns None when the value is not a version string. Never used on revisions: a revision such as a
    commit SHA is resolved through the cache refs, not parsed (docs/failure-modes.md#short-shas).
    """
    if not isinstance(value, str):
        return None
    m = _VERSION_RE.match(value.strip())
    if not m:
        return None
    return int(m.group(1)), int(m.group(2))


@dataclass
class VideoSegment:
    """Where one episode's frames of one camera live in a v3.0 mp4 (seconds from the file start)."""

    chunk_index: int | None
    file_index: int | None
    from_timestamp: float | None
    to_timestamp: float | None


@dataclass(slots=True)  # one per episode: 14,000 and more, kept through the whole run
class Episode:
    """One row of the episode metadata.

    Attributes:
        episode_index: the episode id as stored.
        length: frames in the episode (``length`` column/key), None if absent.
        tasks: task labels as stored (strings; some ported v2.x datasets store integer indices).
        position: row position in the concatenated metadata (v3 loaders index episodes by it).
        source: metadata file (relative path) that holds the row.
        data_chunk, data_file: v3.0 ``data/chunk_index`` / ``data/file_index``.
        from_index, to_index: v3.0 ``dataset_from_index`` / ``dataset_to_index`` (half-open).
        videos: v3.0 per video key, the mp4 segment.
    """

    episode_index: int
    length: int | None
    tasks: list[Any]
    position: int
    source: str
    data_chunk: int | None = None
    data_file: int | None = None
    from_index: int | None = None
    to_index: int | None = None
    videos: dict[str, VideoSegment] = field(default_factory=dict)


@dataclass
class TaskTable:
    """The task table: task_index -> label.

    Attributes:
        path: relative path of ``tasks.jsonl`` / ``tasks.parquet``.
        rows: ``(task_index, label)`` in file order.
        form: how the file stores labels. v2: ``"jsonl"``. v3: ``"pandas-index"`` (the form lerobot
            reads: task string as the pandas index named ``task``), ``"unnamed-index"``
            (``__index_level_0__``, early converters; lerobot tolerates it), ``"plain-columns"`` (no pandas
            index: lerobot returns the row number as the task text), ``"unknown"``.
        problems: one-line descriptions of malformed rows.
    """

    path: str
    rows: list[tuple[int, str]]
    form: str
    problems: list[str] = field(default_factory=list)

    @property
    def labels(self) -> list[str]:
        return [label for _, label in self.rows]

    @property
    def by_index(self) -> dict[int, str]:
        return {i: label for i, label in self.rows}

    def __len__(self) -> int:
        return len(self.rows)


@dataclass
class DataFile:
    """A data parquet file the metadata references, with the episodes it should hold (ascending)."""

    relpath: str
    episodes: list[int]


@dataclass
class VideoFile:
    """An mp4 file the metadata references for one video key, with the episodes it should hold."""

    relpath: str
    video_key: str
    episodes: list[int]


def _int_or_none(v: Any) -> int | None:
    if v is None:
        return None
    try:
        if isinstance(v, float) and not math.isfinite(v):  # NaN, Infinity: no index
            return None
        return int(v)
    except (TypeError, ValueError, OverflowError):
        return None


def _float_or_none(v: Any) -> float | None:
    if v is None:
        return None
    try:
        f = float(v)
    except (TypeError, ValueError):
        return None
    return None if math.isnan(f) else f


def read_json(path: Path, rel: str) -> Any:
    """Read a JSON file (a regular file of at most 64 MiB, nested at most 100 levels; see
    :func:`lerobot_tools._io.load_json_file`); raise :class:`DatasetError` naming ``rel`` on any problem."""
    try:
        return load_json_file(path, rel, error=DatasetError)
    except FileNotFoundError:
        raise DatasetError("file is missing", rel) from None
    except OSError as exc:
        raise DatasetError(f"cannot be read ({exc.strerror or exc})", rel) from None


def iter_jsonl(path: Path, rel: str) -> Iterator[tuple[int, Any, str | None]]:
    """Yield ``(line_number, object_or_None, error_or_None)`` for each non-blank line of a JSON Lines file.

    The file must be a regular file of at most 4 GiB with lines of at most 64 MiB (it is streamed);
    a line nested deeper than 100 levels is a bad line, like one that does not parse.

    Raises:
        DatasetError: the file is missing, unreadable, not a regular file, over a cap, or not UTF-8.
    """
    try:
        fh = open_regular(path, limit=MAX_JSONL_BYTES, name=rel, error=DatasetError, what="JSON Lines")
    except FileNotFoundError:
        raise DatasetError("file is missing", rel) from None
    except OSError as exc:
        raise DatasetError(f"cannot be read ({exc.strerror or exc})", rel) from None
    with fh:
        for lineno, raw in iter_lines_capped(fh, name=rel, error=DatasetError):
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError:
                raise DatasetError("is not UTF-8 text", rel) from None
            if not line.strip():
                continue
            try:
                yield lineno, loads_json(line, rel, error=DatasetError), None
            except DatasetError as exc:
                yield lineno, None, f"line {lineno} {exc.message}"


class Dataset:
    """A LeRobot dataset on disk (v2.0, v2.1 or v3.0), read lazily and never written.

    Args:
        root: the dataset folder (the one holding ``meta/info.json``).

    Raises:
        NotADatasetError: ``root`` is not a folder, or ``meta/info.json`` is missing.
        UnreadableFileError: ``meta/info.json`` is a placeholder or truncated.
        DatasetError: ``meta/info.json`` is unreadable or not a JSON object. Everything else is read on
            demand and raises when first used.
    """

    def __init__(self, root: str | os.PathLike):
        self.root = Path(root)
        if not self.root.is_dir():
            raise NotADatasetError("is not a folder", self.root)
        info_file = self.root / INFO_PATH
        if not info_file.exists():
            raise NotADatasetError(f"not a LeRobot dataset: {INFO_PATH} is missing", self.root)
        check_metadata_file(info_file, INFO_PATH, "json")
        info = read_json(info_file, INFO_PATH)
        if not isinstance(info, dict):
            raise DatasetError(f"must hold a JSON object, got {type(info).__name__}", INFO_PATH)
        self.info: dict[str, Any] = info
        #: one-line descriptions of malformed episode-metadata rows, filled when :attr:`episodes` is read
        self.episode_problems: list[str] = []
        #: v3.0: statistics columns of small episodes files, decoded with :attr:`episodes` for the statistics checks
        self.stats_tables = EpisodeStatsTables()

    def forget(self, *names: str) -> None:
        """Drop the cached metadata ``names`` (``"episodes"``, ``"tasks"``, ...: the cached properties of this
        class) so their memory can be freed; the next access reads them from disk again.

        Raises:
            ValueError: a name that is not a cached property of :class:`Dataset`.
        """
        for name in names:
            if not isinstance(getattr(type(self), name, None), cached_property):
                raise ValueError(f"{name!r} is not cached metadata of a Dataset")
            vars(self).pop(name, None)

    # ------------------------------------------------------------------ info.json
    @property
    def codebase_version(self) -> str | None:
        v = self.info.get("codebase_version")
        return v if isinstance(v, str) else None

    @property
    def version(self) -> tuple[int, int] | None:
        """``(major, minor)`` of ``codebase_version`` or None when it does not parse."""
        return parse_codebase_version(self.info.get("codebase_version"))

    @property
    def layout(self) -> str | None:
        """``"v2"`` (per-episode files, v2.0/v2.1), ``"v3"`` (consolidated files) or None (unknown version)."""
        v = self.version
        if v is None:
            return None
        if v[0] == 2:
            return "v2"
        if v[0] == 3:
            return "v3"
        return None

    @property
    def fps(self) -> float | None:
        """``fps`` as a float, or None when it is not a frame rate (not a number, not finite, <= 0, or above
        :data:`MAX_FPS`): every check and loader that divides by fps then skips, and I005 says why."""
        return valid_fps(self.info.get("fps"))

    @property
    def features(self) -> dict[str, dict]:
        feats = self.info.get("features")
        if not isinstance(feats, dict):
            return {}
        return {k: v for k, v in feats.items() if isinstance(v, dict)}

    @property
    def video_keys(self) -> list[str]:
        return [k for k, v in self.features.items() if v.get("dtype") == "video"]

    @property
    def image_keys(self) -> list[str]:
        return [k for k, v in self.features.items() if v.get("dtype") == "image"]

    @property
    def data_columns(self) -> list[str]:
        """Names of the declared features that must be parquet columns (every non-video feature)."""
        return [k for k, v in self.features.items() if v.get("dtype") != "video"]

    @property
    def chunks_size(self) -> int:
        c = self.info.get("chunks_size", 1000)
        return c if isinstance(c, int) and not isinstance(c, bool) and c > 0 else 1000

    @property
    def data_path(self) -> str:
        p = self.info.get("data_path")
        if isinstance(p, str):
            return p
        return tpl.V3_DATA_PATH if self.layout == "v3" else tpl.V2_DATA_PATH

    @property
    def video_path(self) -> str | None:
        p = self.info.get("video_path")
        if isinstance(p, str):
            return p
        if p is None and "video_path" in self.info:
            return None
        if not self.video_keys:
            return None
        return tpl.V3_VIDEO_PATH if self.layout == "v3" else tpl.V2_VIDEO_PATH

    def total(self, key: str) -> int | None:
        """An integer counter of info.json (``total_episodes``...), None if absent or not an integer."""
        v = self.info.get(key)
        return v if isinstance(v, int) and not isinstance(v, bool) else None

    # ------------------------------------------------------------------ paths
    def path(self, relpath: str) -> Path:
        """The absolute path of a file inside the dataset.

        Raises:
            DatasetError: ``relpath`` leaves the dataset root (absolute path or ``..``).
        """
        if tpl.escapes_root(relpath):
            raise DatasetError("path points outside the dataset root", relpath)
        return self.root / relpath

    def format_data_path(self, *, episode_index: int | None = None, chunk_index: int | None = None,
                         file_index: int | None = None) -> str:
        """Expand ``data_path`` for a v2 episode or a v3 ``(chunk, file)``.

        Raises:
            DatasetError: the template cannot be formatted.
        """
        return self._format(self.data_path, "data_path", episode_index, chunk_index, file_index, None)

    def format_video_path(self, video_key: str, *, episode_index: int | None = None,
                          chunk_index: int | None = None, file_index: int | None = None) -> str:
        """Expand ``video_path`` for one camera (see :meth:`format_data_path`)."""
        template = self.video_path
        if template is None:
            raise DatasetError("video_path is null while video features are declared", INFO_PATH)
        return self._format(template, "video_path", episode_index, chunk_index, file_index, video_key)

    def _format(self, template: str, name: str, episode_index, chunk_index, file_index, video_key) -> str:
        values: dict[str, Any] = {"video_key": video_key}
        if episode_index is not None:
            values["episode_index"] = episode_index
            values["episode_chunk"] = episode_index // self.chunks_size
        values["chunk_index"] = chunk_index
        values["file_index"] = file_index
        try:
            return tpl.format_template(template, values, f"{name} template")
        except ValueError as exc:
            raise DatasetError(str(exc), INFO_PATH) from None

    # ------------------------------------------------------------------ episodes
    @cached_property
    def episodes(self) -> list[Episode]:
        """Episode metadata rows in the order loaders see them.

        v2.x: ``meta/episodes.jsonl`` lines (malformed lines are skipped and listed in
        :attr:`episode_problems`). v3.0: all ``meta/episodes/*/*.parquet`` concatenated in sorted path
        order, ``stats/*`` columns not read.

        Raises:
            UnreadableFileError: a metadata file is a placeholder or truncated (nothing is read from the others).
            DatasetError: the metadata file(s) are missing or unreadable, or no row of ``episodes.jsonl`` is
                an episode.
        """
        self.episode_problems = []
        if self.layout == "v3":
            return self._read_v3_episodes()
        return self._read_v2_episodes()

    def _read_v2_episodes(self) -> list[Episode]:
        out: list[Episode] = []
        check_metadata_file(self.root / V2_EPISODES_PATH, V2_EPISODES_PATH, "jsonl")
        for lineno, obj, err in iter_jsonl(self.root / V2_EPISODES_PATH, V2_EPISODES_PATH):
            if err:
                self.episode_problems.append(err)
                continue
            if not isinstance(obj, dict) or _int_or_none(obj.get("episode_index")) is None:
                self.episode_problems.append(f"line {lineno} has no integer episode_index")
                continue
            tasks = obj.get("tasks")
            if isinstance(tasks, str):
                tasks = [tasks]
            out.append(Episode(
                episode_index=int(obj["episode_index"]),
                length=_int_or_none(obj.get("length")),
                tasks=list(tasks) if isinstance(tasks, list) else [],
                position=len(out),
                source=V2_EPISODES_PATH,
            ))
        if not out and self.episode_problems:
            n = len(self.episode_problems)
            raise DatasetError(f"none of its {n} line(s) is an episode row ({self.episode_problems[0]})",
                               V2_EPISODES_PATH)
        return out

    @cached_property
    def episode_files(self) -> list[str]:
        """v3.0: relative paths of ``meta/episodes/*/*.parquet`` in the sorted order the loader uses."""
        base = self.root / V3_EPISODES_DIR
        if not base.is_dir():
            return []
        return sorted(
            p.relative_to(self.root).as_posix() for p in base.glob("*/*.parquet") if p.is_file()
        )

    def _read_v3_episodes(self) -> list[Episode]:
        files = self.episode_files
        if not files:
            raise DatasetError("no episode metadata files (meta/episodes/*/*.parquet)", V3_EPISODES_DIR)
        out: list[Episode] = []
        for rel in files:
            check_metadata_file(self.root / rel, rel, "parquet")
        for rel, table, names in read_episode_files(self.root, files, self.stats_tables):
            cols = {n: table.column(n).to_pylist() for n in names}
            if "episode_index" not in cols:
                raise DatasetError("has no episode_index column", rel)
            absent = [None] * table.num_rows  # one list of Nones for every absent column, not one per row

            def col(name: str) -> list:
                return cols.get(name, absent)

            tasks_col, length_col = col("tasks"), col("length")
            chunk_col, file_col = col("data/chunk_index"), col("data/file_index")
            from_col, to_col = col("dataset_from_index"), col("dataset_to_index")
            video_cols = [(k, cols[f"videos/{k}/chunk_index"], col(f"videos/{k}/file_index"),
                           col(f"videos/{k}/from_timestamp"), col(f"videos/{k}/to_timestamp"))
                          for k in self.video_keys if f"videos/{k}/chunk_index" in cols]
            for i in range(table.num_rows):
                ep = _int_or_none(cols["episode_index"][i])
                if ep is None:
                    self.episode_problems.append(f"{rel}: row {i} has no episode_index")
                    continue
                tasks = tasks_col[i]
                videos = {k: VideoSegment(_int_or_none(c[i]), _int_or_none(f[i]), _float_or_none(a[i]),
                                          _float_or_none(b[i]))
                          for k, c, f, a, b in video_cols}
                out.append(Episode(
                    episode_index=ep,
                    length=_int_or_none(length_col[i]),
                    tasks=list(tasks) if isinstance(tasks, (list, tuple)) else ([tasks] if isinstance(tasks, str) else []),
                    position=len(out),
                    source=rel,
                    data_chunk=_int_or_none(chunk_col[i]),
                    data_file=_int_or_none(file_col[i]),
                    from_index=_int_or_none(from_col[i]),
                    to_index=_int_or_none(to_col[i]),
                    videos=videos,
                ))
        return out

    def unreadable_episode_files(self) -> list[UnreadableFileError]:
        """Every episode-metadata file that is a placeholder or truncated (v3.0 may split the metadata over
        many files; reading stops at the first bad one, this names them all). Missing files are not listed.

        Returns:
            One :class:`~lerobot_tools.dataset.placeholders.UnreadableFileError` per bad file, in path order.
        """
        rels = self.episode_files if self.layout == "v3" else [V2_EPISODES_PATH]
        fmt = "parquet" if self.layout == "v3" else "jsonl"
        out = []
        for rel in rels:
            try:
                check_metadata_file(self.root / rel, rel, fmt)
            except UnreadableFileError as exc:
                out.append(exc)
        return out

    @property
    def episode_indices(self) -> list[int]:
        return [e.episode_index for e in self.episodes]

    # ------------------------------------------------------------------ tasks
    @cached_property
    def tasks(self) -> TaskTable:
        """The task table (v2.x ``meta/tasks.jsonl``, v3.0 ``meta/tasks.parquet``).

        Raises:
            DatasetError: the file is missing or cannot be read at all.
        """
        if self.layout == "v3":
            return self._read_v3_tasks()
        return self._read_v2_tasks()

    def _read_v2_tasks(self) -> TaskTable:
        rows: list[tuple[int, str]] = []
        problems: list[str] = []
        check_metadata_file(self.root / V2_TASKS_PATH, V2_TASKS_PATH, "jsonl")
        for lineno, obj, err in iter_jsonl(self.root / V2_TASKS_PATH, V2_TASKS_PATH):
            if err:
                problems.append(err)
                continue
            if not isinstance(obj, dict):
                problems.append(f"line {lineno} is not a JSON object")
                continue
            idx = obj.get("task_index")
            label = obj.get("task")
            if not isinstance(idx, int) or isinstance(idx, bool):
                problems.append(f"line {lineno} has no integer task_index")
                continue
            if not isinstance(label, str):
                problems.append(f"line {lineno} has no string task")
                continue
            rows.append((idx, label))
        if not rows and problems:
            raise DatasetError(f"none of its {len(problems)} line(s) is a task row ({problems[0]})", V2_TASKS_PATH)
        return TaskTable(V2_TASKS_PATH, rows, "jsonl", problems)

    def _read_v3_tasks(self) -> TaskTable:
        import pyarrow.parquet as pq

        rel = V3_TASKS_PATH
        path = self.root / rel
        if not path.exists():
            raise DatasetError("file is missing", rel)
        check_metadata_file(path, rel, "parquet")
        try:
            pf = pq.ParquetFile(path)
            table = pf.read()
        except Exception as exc:
            raise DatasetError(f"cannot be read as parquet ({one_line(exc, 160)})", rel) from None
        meta = pf.schema_arrow.metadata or {}
        index_columns: list = []
        if b"pandas" in meta:
            try:
                index_columns = loads_json(meta[b"pandas"], rel, error=DatasetError).get("index_columns", [])
            except (DatasetError, AttributeError):
                index_columns = []
            if not isinstance(index_columns, list):
                index_columns = []
        names = table.column_names
        if "task" in index_columns and "task" in names:
            form, label_col = "pandas-index", "task"
        elif "__index_level_0__" in index_columns and "__index_level_0__" in names:
            form, label_col = "unnamed-index", "__index_level_0__"
        elif "task" in names:
            form, label_col = "plain-columns", "task"
        elif "__index_level_0__" in names:
            form, label_col = "plain-columns", "__index_level_0__"
        else:
            form, label_col = "unknown", None
        problems: list[str] = []
        rows: list[tuple[int, str]] = []
        if "task_index" not in names:
            problems.append("has no task_index column")
            idx_values = list(range(table.num_rows))
        else:
            idx_values = table.column("task_index").to_pylist()
        labels = table.column(label_col).to_pylist() if label_col else [None] * table.num_rows
        for pos, (idx, label) in enumerate(zip(idx_values, labels)):
            if not isinstance(idx, int):
                problems.append(f"row {pos} has no integer task_index")
                continue
            if not isinstance(label, str):
                problems.append(f"row {pos} has no task string")
                continue
            rows.append((idx, label))
        return TaskTable(rel, rows, form, problems)

    # ------------------------------------------------------------------ stats
    def read_stats(self) -> dict | None:
        """``meta/stats.json`` as a dict, or None when the file is absent (not an error for loaders).

        Raises:
            UnreadableFileError: the file is a placeholder or truncated.
            DatasetError: the file exists but is not a JSON object.
        """
        path = self.root / STATS_PATH
        if not path.exists():
            return None
        check_metadata_file(path, STATS_PATH, "json")
        data = read_json(path, STATS_PATH)
        if not isinstance(data, dict):
            raise DatasetError("must hold a JSON object", STATS_PATH)
        return data

    # ------------------------------------------------------------------ files
    def data_files(self) -> list[DataFile]:
        """Data parquet files referenced by the episode metadata, in loader (sorted path) order.

        v2.x: one file per episode, from ``data_path``. v3.0: one entry per distinct
        ``(data/chunk_index, data/file_index)``.

        Raises:
            DatasetError: the episode metadata cannot be read or a template cannot be expanded.
        """
        files: dict[str, list[int]] = {}
        for ep in self.episodes:
            if self.layout == "v3":
                if ep.data_chunk is None or ep.data_file is None:
                    continue
                rel = self.format_data_path(chunk_index=ep.data_chunk, file_index=ep.data_file)
            else:
                rel = self.format_data_path(episode_index=ep.episode_index)
            files.setdefault(rel, []).append(ep.episode_index)
        return [DataFile(rel, sorted(eps)) for rel, eps in sorted(files.items())]

    def video_files(self) -> list[VideoFile]:
        """Video files referenced by the metadata, per video key (v2: per episode; v3: per file).

        Raises:
            DatasetError: as :meth:`data_files`, or ``video_path`` is null while videos are declared.
        """
        out: dict[tuple[str, str], list[int]] = {}
        keys = self.video_keys
        if not keys:
            return []
        for ep in self.episodes:
            for key in keys:
                if self.layout == "v3":
                    seg = ep.videos.get(key)
                    if seg is None or seg.chunk_index is None or seg.file_index is None:
                        continue
                    rel = self.format_video_path(key, chunk_index=seg.chunk_index, file_index=seg.file_index)
                else:
                    rel = self.format_video_path(key, episode_index=ep.episode_index)
                out.setdefault((key, rel), []).append(ep.episode_index)
        return [VideoFile(rel, key, sorted(eps)) for (key, rel), eps in sorted(out.items(), key=lambda kv: (kv[0][0], kv[0][1]))]

    def files_under(self, subdir: str, suffix: str) -> list[str]:
        """Relative paths of every regular file with ``suffix`` below ``subdir`` (sorted); see :func:`files_under`."""
        return files_under(self.root, subdir, suffix)

    def __repr__(self) -> str:
        return f"Dataset({str(self.root)!r}, codebase_version={self.codebase_version!r})"


def files_under(root: str | os.PathLike, subdir: str, suffix: str) -> list[str]:
    """Relative paths (from ``root``) of every regular file with ``suffix`` below ``root/subdir`` (sorted).

    Usable without a readable ``meta/info.json``. Hidden folders and hidden files are skipped: lerobot's
    ``data/*/*.parquet`` glob skips dot-files, and lrtool's own temporary files (``.lrtool-tmp-*``, left by a
    killed run) are not dataset files. Symlinked folders are not followed, and ``root/subdir`` is not walked at
    all when it resolves outside the dataset (a ``data/`` linked to ``/``: F013,
    :func:`lerobot_tools._contain.walk_root`).
    """
    from lerobot_tools._contain import walk_root

    root = Path(root)
    base = root / subdir
    out: list[str] = []
    if not walk_root(root, subdir):
        return out
    for dirpath, dirnames, filenames in os.walk(base, followlinks=False):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
        prefix = None  # the folder relative to the root, worked out once per folder
        for name in filenames:
            if name.endswith(suffix) and not name.startswith("."):
                if prefix is None:
                    prefix = Path(dirpath).relative_to(root).as_posix() + "/"
                out.append(prefix + name)
    return sorted(out)


def open_dataset(root: str | os.PathLike) -> Dataset:
    """Open a dataset root (see :class:`Dataset`)."""
    return Dataset(root)
