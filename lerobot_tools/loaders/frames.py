"""``FrameDataset``: a map-style torch dataset of the frames of a LeRobot dataset (v2.0, v2.1, v3.0).

How it reads (docs/format.md#data-files, docs/format.md#videos, docs/format.md#loader-assumptions;
docs/failure-modes.md (#episode-subsets, #short-video, #decoder-leaks, #per-dataset-tolerance)):

* **Rows.** The data parquet files holding the selected episodes go, in sorted path order (the order the
  episode metadata implies), through ``datasets.load_dataset("parquet", data_files=[...])`` once per
  machine; its Arrow cache is then memory-mapped directly on every later open (:mod:`._arrow`: a warm
  open takes milliseconds and does not import ``datasets``). Resident pages are file-backed, so the
  process's anonymous memory does not grow with the data. One pass over the ``episode_index`` column
  (8 bytes a row) finds the row range of every episode; the index then maps sample ``i`` -> (selected
  episode, frame) -> Arrow row with O(episodes) memory. Rows of an episode that are missing, split or
  miscounted raise :class:`~lerobot_tools.errors.DatasetError` naming the data file instead of returning
  another episode's rows.
* **Episode subsets.** ``episodes=[5, 2, 9]`` (unsorted, sparse) selects those episodes; samples are ordered
  by ascending episode index (as lerobot v3 and OpenTau do), and every sample is taken from the rows of
  its own episode, never through ``episode_index`` arithmetic (lerobot <= 0.3 indexed by
  episode id and returned wrong rows for non-contiguous subsets, docs/failure-modes.md#episode-subsets).
* **Windows.** ``delta_timestamps={"action": [0.0, 0.1, 0.2]}`` returns, for that key, the rows at those
  offsets (seconds, multiples of 1/fps within ``tolerance_s``), clamped to the episode, stacked on a new
  first axis, plus a ``<key>_is_pad`` bool mask that is True where the offset fell outside the episode.
* **Video.** Each video key is decoded with torchcodec at the time inside its mp4: v2.x ``timestamp``;
  v3.0 ``from_timestamp + timestamp`` (for windows, the timestamps of the clamped rows), within
  ``tolerance_s``, through a bounded per-process LRU of open decoders (:mod:`.video`).
* **Tasks.** ``task`` is the label of the row's ``task_index`` in the task table. A label an episode lists
  that the task table lacks, or a ``task_index`` with no row, is tolerated: one warning per dataset and
  problem (de-duplicated across samples, DataLoader workers and dataset objects: a 392-dataset run logged
  ~3000 copies before OpenTau de-duplicated, docs/failure-modes.md#per-dataset-tolerance), and the samples
  concerned carry no ``task`` key.

torch is imported by this module, torchcodec when a dataset with video keys is opened (and pandas, which
pyarrow's ``to_numpy`` imports on first use), datasets only when an Arrow cache has to be built: all of them
in the process that constructs the dataset, so forked DataLoader workers inherit them. ``import
lerobot_tools`` never imports this module.
"""

from __future__ import annotations

import os
import warnings
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

import numpy as np
import pyarrow as pa
import torch

from lerobot_tools.dataset.model import Dataset, Episode
from lerobot_tools.errors import DatasetError
from lerobot_tools.loaders._arrow import MappedBudget, open_rows, scan_rows
from lerobot_tools.loaders.video import DecoderCache, DecoderStats, FrameTimestampError, VideoDecodeError

__all__ = ["FrameDataset", "LoaderWarning", "collate_frames", "FrameTimestampError", "VideoDecodeError"]

#: torch dtype of each ``info.json`` numeric dtype (docs/format.md#columns).
TORCH_DTYPES = {
    "float64": torch.float64, "float32": torch.float32, "float16": torch.float16,
    "int64": torch.int64, "int32": torch.int32, "int16": torch.int16, "int8": torch.int8,
    "uint8": torch.uint8, "bool": torch.bool,
}


def trim_range(ranges: Sequence[tuple[int, int]], length: int, episode: int, where: str) -> tuple[int, int]:
    """The frames ``[first, stop)`` of an episode of ``length`` frames that remain once the inclusive ``ranges``
    (at its start or end, see :class:`FrameDataset`'s ``trim``) are left out.

    Raises:
        DatasetError: a range lies past the episode, inside it (neither at the start nor at the end once the
            others are removed), or the ranges leave no frame (``where`` names the file in the message).
    """
    for a, b in ranges:
        if a < 0 or b < a or b >= length:
            raise DatasetError(f"trim of episode {episode}: frames {a}-{b} are not within its {length} frames", where)
    lo, hi = 0, length
    for a, b in sorted(ranges):  # ranges reaching the first kept frame move it on
        if a <= lo:
            lo = max(lo, b + 1)
    for a, b in sorted(ranges, key=lambda r: -r[1]):  # and from the end
        if b >= hi - 1:
            hi = min(hi, a)
    inside = [(a, b) for a, b in sorted(ranges) if a < hi and b >= lo]
    if inside and hi > lo:
        a, b = inside[0]
        raise DatasetError(f"trim of episode {episode}: frames {a}-{b} lie inside it; only its start and end can "
                           "be trimmed", where)
    if hi <= lo:
        raise DatasetError(f"trim of episode {episode} leaves none of its {length} frames", where)
    return lo, hi


class LoaderWarning(UserWarning):
    """A data problem the loaders tolerate (e.g. a task label missing from the task table)."""


_WARNED: set[str] = set()


def _warn_once(key: str, message: str, seen: set[str]) -> None:
    """Emit ``message`` once per process for ``key`` (and never again from objects that carry ``seen``)."""
    if key in _WARNED or key in seen:
        seen.add(key)
        return
    _WARNED.add(key)
    seen.add(key)
    warnings.warn(message, LoaderWarning, stacklevel=3)


class FrameDataset(torch.utils.data.Dataset):
    """Map-style dataset of the frames of one LeRobot dataset (v2.0/v2.1/v3.0), for a torch DataLoader.

    Args:
        root: dataset folder (holding ``meta/info.json``) or an open :class:`~lerobot_tools.dataset.Dataset`.
        episodes: episode indices to load (any order, duplicates ignored); None = every episode of the
            episode metadata. Samples follow ascending episode index.
        delta_timestamps: ``{key: [offset_s, ...]}``: for each key (a data column or a video key), return a
            window of frames at these offsets in seconds relative to the sample's frame, and
            ``<key>_is_pad``. Offsets must be multiples of ``1/fps`` within ``tolerance_s``.
        tolerance_s: seconds; largest accepted gap between a queried time and the decoded frame's pts
            (lerobot default 1e-4) and between an offset and a multiple of 1/fps.
        decode_video: False skips video keys entirely (samples carry only the parquet columns).
        frames_dtype: ``"float32"`` (lerobot's convention: values in [0, 1]) or ``"uint8"`` (0-255).
        cache_dir: folder of the ``datasets`` Arrow cache; None = the datasets default
            (``$HF_DATASETS_CACHE``, ``~/.cache/huggingface/datasets``).
        decoder_cache_size: most video decoders open at once per process; None =
            ``$LEROBOT_VIDEO_DECODER_CACHE_SIZE`` or 32.
        progress: show the ``datasets`` progress bars while the Arrow cache is built.
        max_mapped_mb: bound (MB, per process) on the growth of file-backed RSS from reading the
            memory-mapped Arrow cache; None = no bound. Linux maps already-cached file pages around every
            page fault (64 KiB "fault-around", or a whole large folio of up to 2 MiB), so random reads of
            small rows map the whole file within a few thousand samples and RSS grows to the data size in
            every DataLoader worker. When file-backed RSS (``/proc/self/statm``) has grown by this much,
            the mappings of the cache files are dropped with ``madvise(MADV_DONTNEED)``: the page cache
            keeps the data, the next read re-maps it with a minor fault. Only read-only mappings of this
            dataset's own cache files are touched. Linux only (elsewhere the bound is ignored).
        decoder_cache: a :class:`~lerobot_tools.loaders.DecoderCache` to share with other datasets (a
            mixture keeps one per process); None = a new one of ``decoder_cache_size``.
        mapped_budget: a :class:`~lerobot_tools.loaders._arrow.MappedBudget` to share with other
            datasets instead of one of ``max_mapped_mb`` for this dataset alone.
        keys: the data columns and video keys samples carry (None = all); the others are neither read nor
            decoded (a mixture reads only its common names).
        resample: None: ``delta_timestamps`` offsets must be multiples of ``1/fps``; ``"nearest"``: an
            offset between two frames takes the nearest frame (how a mixture resamples a dataset to its
            ``action_freq``; OpenTau's default ``vector_resample_strategy``).
        trim: episode index -> inclusive ``(first, last)`` frame ranges to leave out (a keep-list's ``trim=``,
            idle heads and tails, docs/curation.md#keep-lists); only ranges at the start or the end of an episode.
            The trimmed episode behaves as if it were recorded without them: samples, lengths and the clamping
            of windows (``<key>_is_pad``) follow the kept frames; ``frame_index`` keeps its recorded values.

    Sample (``dataset[i]``), a dict:
        * each data column: ``torch.Tensor`` of the declared dtype; shape ``()`` for a scalar column
          (declared shape ``[1]``: ``timestamp`` float32 seconds since the episode start, ``frame_index``,
          ``episode_index``, ``index``, ``task_index`` int64), else the declared shape (``action``
          float32 ``(6,)``); string columns give ``str``.
        * each video key (and ``dtype: image`` column): ``(C, H, W)`` float32 in [0, 1] (or uint8),
          the frame shown at the row's time.
        * each key of ``delta_timestamps``: a new first axis of length ``len(offsets)`` (``(T, *shape)``
          or ``(T, C, H, W)``), and ``<key>_is_pad``: bool ``(T,)``, True where the offset falls outside
          the episode (the value there repeats the episode's first/last frame).
        * ``task``: ``str``, absent when the task cannot be resolved (see module docstring).

    Attributes:
        meta: the :class:`~lerobot_tools.dataset.Dataset`.
        fps: frames per second (float).
        episodes: selected episode indices, ascending (list of int).
        episode_lengths: int64 array ``(E,)``: frames of each selected episode.
        episode_starts: int64 array ``(E,)``: dataset index of each selected episode's first frame.
        num_frames: ``len(self)``.
        cache_files: the memory-mapped Arrow cache files (absolute paths).
        hf_dataset: the same rows as a ``datasets.Dataset`` (built on first access).
        delta_indices: ``{key: int64 array of frame offsets}``.

    Raises:
        DatasetError: the dataset cannot be loaded this way (missing/unreadable data or metadata files,
            unknown episodes, rows of an episode missing or out of order, a bad ``delta_timestamps`` key).
            The message is one line naming the file.
        ValueError: bad arguments (``frames_dtype``, offsets not multiples of 1/fps).
    """

    def __init__(
        self,
        root: str | os.PathLike | Dataset,
        *,
        episodes: Iterable[int] | None = None,
        delta_timestamps: Mapping[str, Sequence[float]] | None = None,
        tolerance_s: float = 1e-4,
        decode_video: bool = True,
        frames_dtype: str = "float32",
        cache_dir: str | os.PathLike | None = None,
        decoder_cache_size: int | None = None,
        progress: bool = False,
        max_mapped_mb: float | None = 128.0,
        decoder_cache: DecoderCache | None = None,
        mapped_budget: MappedBudget | None = None,
        resample: str | None = None,
        keys: Iterable[str] | None = None,
        trim: Mapping[int, Sequence[tuple[int, int]]] | None = None,
    ):
        self.meta = root if isinstance(root, Dataset) else Dataset(root)
        self.root = self.meta.root
        if self.meta.layout not in ("v2", "v3"):
            raise DatasetError(f"unsupported codebase_version {self.meta.codebase_version!r}", "meta/info.json")
        if self.meta.fps is None:
            raise DatasetError("fps is missing or not a positive number", "meta/info.json")
        if frames_dtype not in ("float32", "uint8"):
            raise ValueError(f"frames_dtype must be 'float32' or 'uint8', got {frames_dtype!r}")
        if resample not in (None, "nearest"):
            raise ValueError(f"resample must be None or 'nearest', got {resample!r}")
        self.fps = float(self.meta.fps)
        self.tolerance_s = float(tolerance_s)
        self.frames_dtype = frames_dtype
        self.decode_video = bool(decode_video)
        self.features = self.meta.features
        self._seen_warnings: set[str] = set()

        by_index: dict[int, Episode] = {}
        for ep in self.meta.episodes:
            if ep.episode_index in by_index:
                raise DatasetError(f"episode {ep.episode_index} appears twice in the episode metadata", ep.source)
            by_index[ep.episode_index] = ep
        if episodes is None:
            selected = sorted(by_index)
        else:
            selected = sorted({int(e) for e in episodes})
            unknown = [e for e in selected if e not in by_index]
            if unknown:
                shown = ", ".join(map(str, unknown[:5])) + (" ..." if len(unknown) > 5 else "")
                raise DatasetError(f"requested episode(s) {shown} are not in the episode metadata "
                                   f"({len(by_index)} episodes)", self.root)
        if not selected:
            raise DatasetError("no episodes to load (the episode metadata is empty)", self.root)
        self.episodes: list[int] = selected
        self._ep_meta = [by_index[e] for e in selected]

        # ------------------------------------------------------------ rows
        files = self._data_files_of(self._ep_meta)
        self._file_of_episode = files
        data_files = sorted(set(files.values()))
        for rel in data_files:
            if not self.meta.path(rel).is_file():
                raise DatasetError("data file is missing", rel)
        self.data_files = data_files
        self._rows = open_rows([str(self.meta.path(r)) for r in data_files], cache_dir, progress=progress,
                               where=self.root)
        self.cache_files = self._rows.cache_files
        self._hf_dataset = None
        self._columns = list(self._rows.table.column_names)
        if "episode_index" not in self._columns:
            raise DatasetError("the data parquet has no episode_index column", data_files[0])
        runs, task_indices = scan_rows(self._rows.table, max_runs=4 * len(by_index) + 64, where=data_files[0])
        lengths = np.empty(len(selected), dtype=np.int64)
        row_starts = np.empty(len(selected), dtype=np.int64)
        for k, ep in enumerate(self._ep_meta):
            found = runs.get(ep.episode_index)
            rel = files[ep.episode_index]
            if not found:
                raise DatasetError(f"episode {ep.episode_index} has no rows", rel)
            if len(found) > 1:
                raise DatasetError(f"rows of episode {ep.episode_index} are not contiguous "
                                   f"({len(found)} separate runs): data rows are not ordered by episode", rel)
            start, n = found[0]
            if ep.length is not None and ep.length != n:
                raise DatasetError(f"episode {ep.episode_index} has {n} rows but the episode metadata says "
                                   f"length {ep.length}", rel)
            lengths[k], row_starts[k] = n, start
        self._frame_offset = np.zeros(len(selected), dtype=np.int64)
        for k, e in enumerate(selected):
            ranges = (trim or {}).get(e)
            if ranges:
                lo, hi = trim_range(ranges, int(lengths[k]), e, files[e])
                row_starts[k] += lo
                lengths[k] = hi - lo
                self._frame_offset[k] = lo
        self.episode_lengths = lengths
        self.episode_starts = np.concatenate([[0], np.cumsum(lengths)[:-1]]).astype(np.int64)
        self._row_starts = row_starts
        self.num_frames = int(lengths.sum())
        self._budget = mapped_budget if mapped_budget is not None else MappedBudget(max_mapped_mb)
        self._budget.register(self.cache_files)

        # ------------------------------------------------------------ tasks
        self._task_labels, self._taskless_episodes = self._resolve_tasks(task_indices)

        # ------------------------------------------------------------ video
        wanted = None if keys is None else set(keys)
        self.video_keys = ([k for k in self.meta.video_keys if wanted is None or k in wanted]
                           if self.decode_video else [])
        #: columns samples carry, and the columns read (those plus what indexing, video and tasks need)
        self._out_cols = [c for c in self._columns if wanted is None or c in wanted]
        self._read_cols = [c for c in self._columns if c in self._out_cols or c in ("episode_index", "task_index")
                           or (c == "timestamp" and self.video_keys)]
        self._video_paths: dict[str, list[tuple[str, str]]] = {}
        self._video_file_id: dict[str, np.ndarray] = {}
        self._video_from: dict[str, np.ndarray] = {}
        if self.video_keys and "timestamp" not in self._columns:
            raise DatasetError("the data parquet has no timestamp column, needed to locate video frames",
                               data_files[0])
        for key in self.video_keys:
            self._index_videos(key)
        self._decoders = decoder_cache if decoder_cache is not None else DecoderCache(decoder_cache_size)
        if self.video_keys:
            import torchcodec.decoders  # noqa: F401  (~1 s; imported once here, inherited by forked workers)
        self._image_cols = [c for c in self._out_cols if self.features.get(c, {}).get("dtype") == "image"]
        if self._image_cols:
            import av  # noqa: F401  (imported once here, inherited by forked workers)

        # ------------------------------------------------------------ windows
        self.delta_timestamps = {k: [float(x) for x in v] for k, v in (delta_timestamps or {}).items()}
        self.delta_indices: dict[str, np.ndarray] = {}
        for key, offsets in self.delta_timestamps.items():
            if key not in self._columns and key not in self.meta.video_keys:
                raise DatasetError(f"delta_timestamps key {key!r} is neither a data column nor a video key",
                                   "meta/info.json")
            if not offsets:
                raise ValueError(f"delta_timestamps[{key!r}] is empty")
            idx = []
            for d in offsets:
                k = round(d * self.fps)
                if resample is None and abs(d - k / self.fps) > self.tolerance_s:
                    raise ValueError(f"delta_timestamps[{key!r}] offset {d} s is not a multiple of 1/fps "
                                     f"(fps {self.fps:g}) within tolerance_s={self.tolerance_s:g}")
                idx.append(k)
            self.delta_indices[key] = np.asarray(idx, dtype=np.int64)
        self._window_cols = sorted({k for k in self.delta_indices if k in self._columns}
                                   | ({"timestamp"} if any(k in self.video_keys for k in self.delta_indices) else set()))
        # the per-episode metadata objects are not needed past construction (a mixture opens hundreds)
        self._ep_meta = []
        self.meta.forget("episodes", "tasks")

    @property
    def hf_dataset(self):
        """The rows as a memory-mapped ``datasets.Dataset`` over :attr:`cache_files` (imports ``datasets``)."""
        if self._hf_dataset is None:
            import datasets

            if not self.cache_files:
                self._hf_dataset = datasets.Dataset(self._rows.table)
            else:
                parts = [datasets.Dataset.from_file(f) for f in self.cache_files]
                self._hf_dataset = parts[0] if len(parts) == 1 else datasets.concatenate_datasets(parts)
        return self._hf_dataset

    # ================================================================ construction helpers
    def _data_files_of(self, eps: list[Episode]) -> dict[int, str]:
        return data_files_of(self.meta, eps)

    def _resolve_tasks(self, task_indices: set[int]) -> tuple[dict[int, str], set[int]]:
        tag = str(self.root)
        try:
            table = self.meta.tasks
        except DatasetError as exc:
            _warn_once(f"{tag}|tasks-file", f"{self.root}: {exc}; samples carry no task", self._seen_warnings)
            return {}, set()
        labels = table.by_index
        label_set = set(labels.values())
        taskless: set[int] = set()
        missing_labels: dict[str, list[int]] = {}
        for ep in self._ep_meta:
            for t in ep.tasks:
                ok = (t in labels) if isinstance(t, int) and not isinstance(t, bool) else (t in label_set)
                if not ok:
                    taskless.add(ep.episode_index)
                    missing_labels.setdefault(str(t), []).append(ep.episode_index)
        for label, eps in sorted(missing_labels.items()):
            shown = ", ".join(map(str, eps[:5])) + (f" and {len(eps) - 5} more" if len(eps) > 5 else "")
            _warn_once(f"{tag}|label|{label}",
                       f"{self.root}: task {label!r} listed by episode(s) {shown} is missing from {table.path}; "
                       "their samples carry no task", self._seen_warnings)
        unknown = sorted(i for i in task_indices if i not in labels)
        if unknown:
            shown = ", ".join(map(str, unknown[:5])) + (" ..." if len(unknown) > 5 else "")
            _warn_once(f"{tag}|task_index|{shown}",
                       f"{self.root}: data rows carry task_index {shown} with no row in {table.path} "
                       f"({len(labels)} tasks); those samples carry no task", self._seen_warnings)
        return labels, taskless

    def _index_videos(self, key: str) -> None:
        paths: list[tuple[str, str]] = []
        ids: dict[str, int] = {}
        file_id = np.empty(len(self._ep_meta), dtype=np.int32)
        start = np.zeros(len(self._ep_meta), dtype=np.float64)
        for k, ep in enumerate(self._ep_meta):
            if self.meta.layout == "v3":
                seg = ep.videos.get(key)
                if seg is None or seg.chunk_index is None or seg.file_index is None:
                    raise DatasetError(f"episode {ep.episode_index} has no videos/{key}/chunk_index or file_index",
                                       ep.source)
                if seg.from_timestamp is None:
                    raise DatasetError(f"episode {ep.episode_index} has no videos/{key}/from_timestamp", ep.source)
                rel = self.meta.format_video_path(key, chunk_index=seg.chunk_index, file_index=seg.file_index)
                start[k] = seg.from_timestamp
            else:
                rel = self.meta.format_video_path(key, episode_index=ep.episode_index)
            if rel not in ids:
                ids[rel] = len(paths)
                paths.append((str(self.meta.path(rel)), rel))
            file_id[k] = ids[rel]
        for abs_path, rel in paths:
            if not Path(abs_path).is_file():
                raise DatasetError("video file is missing", rel)
        self._video_paths[key] = paths
        self._video_file_id[key] = file_id
        self._video_from[key] = start

    # ================================================================ index arithmetic
    def __len__(self) -> int:
        return self.num_frames

    def _segments(self, indices: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        if indices.size and (indices.min() < 0 or indices.max() >= self.num_frames):
            bad = int(indices.min() if indices.min() < 0 else indices.max())
            raise IndexError(f"frame index {bad} out of range for a dataset of {self.num_frames} frames")
        seg = np.searchsorted(self.episode_starts, indices, side="right") - 1
        return seg, indices - self.episode_starts[seg]

    def locate(self, indices: Sequence[int] | np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(episode_index, frame_index)`` int64 arrays of dataset indices, without reading any row."""
        idx = np.asarray(indices, dtype=np.int64).reshape(-1)
        seg, frame = self._segments(idx)
        return np.asarray(self.episodes, dtype=np.int64)[seg], frame + self._frame_offset[seg]

    @property
    def decoder_stats(self) -> DecoderStats:
        """Counters of this process's video decoder cache (opens, hits, evictions, frames)."""
        self._decoders._check_pid()
        return self._decoders.stats

    def item_spec(self) -> dict[str, tuple[str, tuple[int, ...]]]:
        """What a sample holds according to ``info.json``: ``{key: (dtype, shape)}``.

        ``dtype`` is a torch dtype name (``"float32"``), ``"string"`` or ``"bool"``; shapes follow the
        sample description of the class (``()`` for declared ``[1]`` scalars, ``(C, H, W)`` for frames,
        a leading window axis for ``delta_timestamps`` keys). Used by ``lrtool smoke`` to check samples.
        """
        spec: dict[str, tuple[str, tuple[int, ...]]] = {}
        for name in self._out_cols + self.video_keys:
            ft = self.features.get(name)
            if ft is None:
                continue
            dtype, shape = ft.get("dtype"), [int(s) for s in ft.get("shape") or []]
            if dtype in ("video", "image"):
                names = ft.get("names") or []
                if len(shape) == 3 and list(names)[:1] in (["channels"], ["channel"]):
                    c, h, w = shape
                else:
                    h, w, c = shape if len(shape) == 3 else (0, 0, 0)
                spec[name] = (self.frames_dtype, (c, h, w))
            elif dtype == "string":
                spec[name] = ("string", ())
            else:
                spec[name] = (dtype, () if shape == [1] else tuple(shape))
            if name in self.delta_indices:
                d, s = spec[name]
                spec[name] = (d, (len(self.delta_indices[name]),) + s)
                spec[f"{name}_is_pad"] = ("bool", (len(self.delta_indices[name]),))
        return spec

    # ================================================================ samples
    def __getitem__(self, idx: int) -> dict[str, Any]:
        i = int(idx)
        if i < 0:
            i += self.num_frames
        return self._fetch(np.asarray([i], dtype=np.int64))[0]

    def __getitems__(self, indices: Sequence[int]) -> list[dict[str, Any]]:
        """Batched fetch (used by the DataLoader): one Arrow gather and one decode call per video file."""
        idx = np.asarray([int(i) for i in indices], dtype=np.int64)
        idx = np.where(idx < 0, idx + self.num_frames, idx)
        return self._fetch(idx)

    def _fetch(self, idx: np.ndarray) -> list[dict[str, Any]]:
        n = len(idx)
        seg, frame = self._segments(idx)
        rows = self._row_starts[seg] + frame
        table = self._rows.take(rows, self._read_cols)
        out: list[dict[str, Any]] = [dict() for _ in range(n)]
        eps = np.asarray(self.episodes, dtype=np.int64)[seg]
        got_eps = table.column("episode_index").to_numpy()
        if not np.array_equal(got_eps, eps):  # cannot happen unless the files changed under us
            bad = int(np.flatnonzero(got_eps != eps)[0])
            raise DatasetError(f"row {int(rows[bad])} belongs to episode {int(got_eps[bad])}, expected episode "
                               f"{int(eps[bad])} (the data files changed since the dataset was opened)",
                               self._file_of_episode[int(eps[bad])])
        values = {c: self._convert(c, table.column(c), n) for c in self._out_cols
                  if c not in self.delta_indices}

        # windows of data columns (and timestamps for video windows)
        window_vals: dict[str, Any] = {}
        pads: dict[str, torch.Tensor] = {}
        wrows: dict[str, np.ndarray] = {}
        for key, offs in self.delta_indices.items():
            raw = frame[:, None] + offs[None, :]
            length = self.episode_lengths[seg][:, None]
            pads[key] = torch.from_numpy((raw < 0) | (raw >= length))
            wrows[key] = self._row_starts[seg][:, None] + np.clip(raw, 0, length - 1)
        if self._window_cols:
            flat_rows = np.concatenate([wrows[k].ravel() for k in wrows])
            wtable = self._rows.take(flat_rows, self._window_cols)
            pos = 0
            for key in wrows:
                m = wrows[key].size
                part = wtable.slice(pos, m)
                pos += m
                T = wrows[key].shape[1]
                if key in self._columns:
                    window_vals[key] = _reshape_window(self._convert(key, part.column(key), m), n, T)
                if key in self.video_keys:
                    window_vals[("ts", key)] = part.column("timestamp").to_numpy().astype(np.float64).reshape(n, T)

        self._budget.check()
        frames = self._decode_videos(seg, table, window_vals) if self.video_keys else {}
        labels = self._task_labels
        task_idx = table.column("task_index").to_numpy() if "task_index" in self._columns else None
        for j in range(n):
            s = out[j]
            for c, v in values.items():
                s[c] = v[j]
            for key in self.delta_indices:
                if key in window_vals:
                    s[key] = window_vals[key][j]
                s[f"{key}_is_pad"] = pads[key][j]
            for key, v in frames.items():
                s[key] = v[j]
            if task_idx is not None and int(eps[j]) not in self._taskless_episodes:
                label = labels.get(int(task_idx[j]))
                if label is not None:
                    s["task"] = label
        return out

    def _convert(self, name: str, col: pa.ChunkedArray, n: int):
        """Arrow column of ``n`` rows -> a per-row indexable: tensor ``(n, *shape)`` or list of str."""
        arr = col.combine_chunks() if col.num_chunks != 1 else col.chunk(0)
        t = arr.type
        if name in self._image_cols:
            return self._images(name, arr)
        if pa.types.is_string(t) or pa.types.is_large_string(t):
            return arr.to_pylist()
        dims: list[int] = []
        inner = arr
        while pa.types.is_fixed_size_list(inner.type) or pa.types.is_list(inner.type) or pa.types.is_large_list(inner.type):
            if pa.types.is_fixed_size_list(inner.type):
                dims.append(inner.type.list_size)
            else:
                import pyarrow.compute as pc

                lens = pc.list_value_length(inner).to_numpy(zero_copy_only=False)
                if lens.size and (lens != lens[0]).any():
                    raise DatasetError(f"column {name!r} holds lists of different lengths "
                                       f"({sorted(set(lens.tolist()))[:5]}) where a fixed shape is declared",
                                       self.data_files[0])
                dims.append(int(lens[0]) if lens.size else 0)
            inner = inner.flatten()
        values = inner.to_numpy(zero_copy_only=False)
        if values.dtype == object:
            raise DatasetError(f"column {name!r} has type {t} which the loader cannot turn into a tensor",
                               self.data_files[0])
        values = values.reshape((n, *dims)) if dims else values
        if not values.flags.writeable:
            values = values.copy()
        return torch.from_numpy(values)

    def _images(self, name: str, arr: pa.Array) -> torch.Tensor:
        """``dtype: image`` column (struct ``{bytes, path}``, PNG/JPEG) -> ``(n, C, H, W)`` frames."""
        out = []
        for row in arr.to_pylist():
            data = row.get("bytes") if isinstance(row, dict) else None
            if data is None and isinstance(row, dict) and row.get("path"):
                data = self.meta.path(row["path"]).read_bytes()
            if data is None:
                raise DatasetError(f"image column {name!r} has a row with neither bytes nor path", self.data_files[0])
            try:
                img = _decode_image(data)
            except Exception as exc:
                raise DatasetError(f"image column {name!r} holds bytes that cannot be decoded ({exc})",
                                   self.data_files[0]) from None
            out.append(img)
        # one contiguous (N, H, W, C) copy, then a uint8 transpose: stacking N permuted (strided) views is
        # several times slower than decoding them
        return self._frames_out(torch.from_numpy(np.stack(out)).permute(0, 3, 1, 2))

    def _frames_out(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        return x.to(torch.float32).div_(255.0) if self.frames_dtype == "float32" else x

    def _decode_videos(self, seg: np.ndarray, table: pa.Table, window_vals: dict) -> dict[str, torch.Tensor]:
        n = len(seg)
        out: dict[str, torch.Tensor] = {}
        for key in self.video_keys:
            if key in self.delta_indices:
                ts = window_vals[("ts", key)]
            else:
                ts = table.column("timestamp").to_numpy().astype(np.float64).reshape(n, 1)
            T = ts.shape[1]
            t_file = ts + self._video_from[key][seg][:, None]
            fid = self._video_file_id[key][seg]
            result: torch.Tensor | None = None
            for f in np.unique(fid):
                rows = np.flatnonzero(fid == f)
                abs_path, rel = self._video_paths[key][int(f)]
                q = t_file[rows].ravel().tolist()
                eps = np.repeat(np.asarray(self.episodes, dtype=np.int64)[seg[rows]], T).tolist()
                frames = self._decoders.decode_at(abs_path, q, self.tolerance_s, display=rel, episodes=eps)
                if result is None:
                    result = torch.empty((n, T) + tuple(frames.shape[1:]), dtype=frames.dtype)
                result[torch.from_numpy(rows)] = frames.reshape((len(rows), T) + tuple(frames.shape[1:]))
            assert result is not None
            result = self._frames_out(result)
            out[key] = result if key in self.delta_indices else result[:, 0]
        return out

    def release_mapped_pages(self) -> int:
        """Drop this process's page mappings of the Arrow cache files (``madvise(MADV_DONTNEED)``).

        The data stay in the page cache and are re-mapped on the next read. Called automatically per
        ``max_mapped_mb``. Returns the number of bytes of mappings released (0 when not on Linux).
        """
        return self._budget.release()

    def __repr__(self) -> str:
        return (f"FrameDataset({str(self.root)!r}, {self.meta.codebase_version}, episodes={len(self.episodes)}, "
                f"frames={self.num_frames}, video_keys={self.video_keys})")


def data_files_of(meta: Dataset, eps: Iterable[Episode]) -> dict[int, str]:
    """``{episode_index: data file relpath}`` of episodes (v3.0: ``data/chunk_index``/``file_index``; v2: per episode).

    Raises:
        DatasetError: a v3.0 episode row lacks its data chunk/file index.
    """
    out: dict[int, str] = {}
    for ep in eps:
        if meta.layout == "v3":
            if ep.data_chunk is None or ep.data_file is None:
                raise DatasetError(f"episode {ep.episode_index} has no data/chunk_index or data/file_index", ep.source)
            out[ep.episode_index] = meta.format_data_path(chunk_index=ep.data_chunk, file_index=ep.data_file)
        else:
            out[ep.episode_index] = meta.format_data_path(episode_index=ep.episode_index)
    return out


def _decode_image(data: bytes):
    """PNG or JPEG bytes -> ``uint8 (H, W, 3)`` RGB, with PyAV.

    PNG and JPEG go straight to a new decoder context (3-4x faster than opening each image as a container,
    which probes its format); anything else through ``av.open``. A context is never reused across images:
    FFmpeg's PNG decoder keeps the previous frame (APNG) and would blend it into the next one.
    """
    import av

    name = "png" if data[:8] == b"\x89PNG\r\n\x1a\n" else "mjpeg" if data[:2] == b"\xff\xd8" else None
    if name is None:
        import io

        with av.open(io.BytesIO(data)) as c:
            return next(c.decode(video=0)).to_ndarray(format="rgb24")
    frames = av.CodecContext.create(name, "r").decode(av.Packet(data))
    if not frames:
        raise ValueError(f"no {name} frame decoded")
    return frames[0].to_ndarray(format="rgb24")


def _reshape_window(v, n: int, T: int):
    if isinstance(v, list):
        return [v[i * T:(i + 1) * T] for i in range(n)]
    return v.reshape((n, T) + tuple(v.shape[1:]))


def collate_frames(samples: list[dict[str, Any]]) -> dict[str, Any]:
    """Collate samples like ``torch.utils.data.default_collate``, tolerating keys some samples lack.

    Tensors are stacked on a new first axis (batch ``B``), strings become lists. A key missing from
    some samples (``task`` when a label cannot be resolved) becomes a list with None in their place,
    instead of the ``KeyError`` default_collate raises.
    """
    from torch.utils.data import default_collate

    keys: list[str] = []
    for s in samples:
        for k in s:
            if k not in keys:
                keys.append(k)
    out: dict[str, Any] = {}
    for k in keys:
        vals = [s.get(k) for s in samples]
        if any(v is None for v in vals):
            out[k] = vals
        else:
            out[k] = default_collate(vals)
    return out
