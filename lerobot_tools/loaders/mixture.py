"""``MixtureDataset``: one map-style dataset over a whole mixture, the way pretraining loads it.

A mixture is a mixture file (plain text or OpenTau JSON, :mod:`lerobot_tools.dataset.mixture`) or a list
of datasets. What it does (``docs/mixtures.md``):

* **One shared metadata pass** at construction: each dataset's ``meta/info.json`` and episode metadata
  are read once, and only what the mixture needs is kept: per selected episode its index and length
  (two int64 arrays), the dataset's features, fps and weight. The per-episode metadata objects are
  dropped, so construction memory is O(datasets + episodes).
* **Arrow caches made warm, not opened**: each dataset's data parquet is converted to the ``datasets``
  Arrow cache if it is not already (``cold``); a warm cache costs one ``stat`` per file. Nothing is
  memory-mapped yet.
* **Lazy members**: a dataset's :class:`~lerobot_tools.loaders.FrameDataset` opens (memory-maps its
  cache, a few milliseconds) the first time a sample of it is read *in that process*, e.g. in each
  DataLoader worker. All members of a process share one decoder LRU and one bound on mapped pages, so
  memory does not grow with the number of datasets beyond their small indexes.
* **A common sample**: after each dataset's ``data_features_name_mapping`` (role -> column), a sample
  holds exactly the mixture's common names (:mod:`lerobot_tools.dataset.mixture_schema`), numeric
  features cast to one dtype per name, plus ``dataset_index`` (int64 ``()``). A mapped role some
  dataset lacks, or a common name whose shape or kind differs between datasets, is refused at
  construction with the datasets named (the same conditions ``lrtool validate`` reports as errors).
* **Windows in seconds**: ``delta_timestamps`` use the mixture's names; each dataset turns the offsets
  into frames at its own fps. With the mixture's ``action_freq`` set, an offset between two frames takes
  the nearest one (resampling); without it, an offset that is not a multiple of a dataset's ``1/fps`` is
  refused at construction.

Sampling weights are the samplers' business (:class:`~lerobot_tools.loaders.EpisodeAwareSampler`,
:class:`~lerobot_tools.loaders.EpisodeShuffleStream` take a ``MixtureDataset`` and draw each dataset in
proportion to its weight).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np
import torch

from lerobot_tools.dataset.mixture_schema import MixtureSchema, mixture_schema
from lerobot_tools.dataset.model import Dataset
from lerobot_tools.errors import DatasetError
from lerobot_tools.loaders._arrow import MappedBudget, ensure_rows
from lerobot_tools.loaders.frames import TORCH_DTYPES, FrameDataset, data_files_of, trim_range
from lerobot_tools.loaders.video import DecoderCache, DecoderStats

__all__ = ["MixtureDataset", "MixtureMember", "read_mixture_members"]


@dataclass
class MixtureMember:
    """One dataset of a mixture, as given (before anything is read).

    Attributes:
        root: the dataset folder.
        episodes: episode indices to use (None = all).
        excluded_episodes: episode indices to leave out (wins over ``episodes``; OpenTau).
        weight: relative sampling weight (None: the mixture has no weights).
        feature_mapping: OpenTau ``data_features_name_mapping`` (role -> column), or None.
        name: label in messages and reports (the mixture entry as written; default the folder).
        trim: episode -> inclusive frame ranges to leave out (a keep-list's ``trim=``), honoured when the
            :class:`MixtureDataset` is made with ``trim=True``.
    """

    root: str | os.PathLike
    episodes: Sequence[int] | None = None
    excluded_episodes: Sequence[int] | None = None
    weight: float | None = None
    feature_mapping: Mapping[str, str] | None = None
    name: str | None = None
    trim: Mapping[int, Sequence[tuple[int, int]]] | None = None


def read_mixture_members(path: str | os.PathLike) -> tuple[list[MixtureMember], float | None]:
    """The members of a mixture file and its ``action_freq``, resolved offline like ``lrtool validate``.

    Raises:
        UsageError: the mixture file cannot be read or parsed (see :func:`~lerobot_tools.dataset.read_mixture_spec`).
        DatasetError: an entry is malformed or cannot be resolved to a local folder (one line naming it).
    """
    from lerobot_tools.dataset.mixture import read_mixture_spec
    from lerobot_tools.dataset.targets import resolve_targets

    spec = read_mixture_spec(path)
    members = []
    for t in resolve_targets([str(path)]):
        if t.error or t.root is None:
            raise DatasetError(f"mixture entry {t.spec!r} ({t.source}): {t.error}", path)
        members.append(MixtureMember(t.root, t.episodes, t.excluded_episodes, t.weight, t.feature_mapping, t.spec,
                                     t.trim))
    return members, spec.action_freq


@dataclass
class _Member:
    """What the metadata pass keeps of one dataset (no per-episode objects)."""

    name: str
    root: Path
    codebase_version: str | None
    fps: float
    features: dict
    mapping: dict[str, str]
    weight: float | None
    trim: dict | None
    episodes: np.ndarray  # selected episode indices, ascending (int64)
    lengths: np.ndarray  # their lengths (int64)
    data_files: list[str] = field(default_factory=list)  # absolute paths
    warm: bool = True
    pos: int = 0


class MixtureDataset(torch.utils.data.Dataset):
    """Map-style dataset over every frame of a mixture of LeRobot datasets, with one common sample schema.

    Args:
        source: a mixture file (text or OpenTau JSON) or a sequence of datasets, each a folder path or a
            :class:`MixtureMember`.
        weights: relative sampling weights, one per dataset (overrides the file's); None = the file's,
            else proportional to each dataset's number of selected frames (OpenTau ``weights: null``).
        action_freq: rate (Hz) the datasets are resampled to (overrides the file's ``action_freq``);
            offsets of ``delta_timestamps`` then take the nearest frame of each dataset.
        delta_timestamps: ``{common name: [offset_s, ...]}`` windows (see :class:`FrameDataset`).
        tolerance_s, decode_video, frames_dtype, cache_dir, progress: as for :class:`FrameDataset`.
        decoder_cache_size: open video decoders per process, shared by all datasets (default 32).
        max_mapped_mb: bound (MB per process, all datasets together) on mapped Arrow pages.
        trim: leave out the frames the mixture's ``trim=`` entries name (a keep-list's idle heads and tails;
            see :class:`FrameDataset`); False reads every frame of the selected episodes.

    Sample (``mixture[i]``): a dict holding every name of :attr:`names` (tensors as
    :class:`FrameDataset` returns them, numeric ones cast to :attr:`dtypes`; the task string as ``str``
    under ``task`` or the role mapped to it, absent when unresolvable), ``<name>_is_pad`` for window
    names, and ``dataset_index``: int64 ``()``, the dataset's position in the mixture.

    Attributes:
        members: per dataset, what the metadata pass kept (``name``, ``root``, ``fps``,
            ``codebase_version``, ``episodes``, ``lengths``, ``weight``).
        weights: float64 ``(D,)`` sampling probabilities (sum 1).
        explicit_weights: True when weights were given (file or argument).
        action_freq: the resample rate in Hz, or None.
        dataset_lengths: int64 ``(D,)`` selected frames per dataset; ``dataset_offsets`` ``(D + 1,)``
            their cumulative sums (mixture index of each dataset's first frame).
        episode_lengths, episode_starts: int64 ``(E,)`` over all datasets' selected episodes, in mixture
            order (what the samplers shuffle); ``episode_offsets`` ``(D + 1,)``: each dataset's first
            position in them.
        schema: the :class:`~lerobot_tools.dataset.mixture_schema.MixtureSchema`.
        names: the common names a sample carries (``dataset_index`` and windows' ``_is_pad`` aside).
        cold_datasets: how many datasets' Arrow caches had to be built during construction.

    Raises:
        DatasetError: a dataset cannot be read, an entry cannot be resolved, a mapped role is missing
            from a dataset, or datasets disagree on the shape or kind of a common name (one line naming
            the datasets).
        ValueError: bad arguments (weights not one non-negative number per dataset, all zero; a
            ``delta_timestamps`` name that is not common; an offset not a multiple of a dataset's 1/fps
            without ``action_freq``).
    """

    def __init__(self, source: str | os.PathLike | Sequence[str | os.PathLike | MixtureMember], *,
                 weights: Sequence[float] | None = None, action_freq: float | None = None,
                 delta_timestamps: Mapping[str, Sequence[float]] | None = None, tolerance_s: float = 1e-4,
                 decode_video: bool = True, frames_dtype: str = "float32",
                 cache_dir: str | os.PathLike | None = None, decoder_cache_size: int | None = None,
                 max_mapped_mb: float | None = 128.0, progress: bool = False, trim: bool = False):
        file_freq = None
        if isinstance(source, (str, os.PathLike)):
            given, file_freq = read_mixture_members(source)
        else:
            given = [m if isinstance(m, MixtureMember) else MixtureMember(m) for m in source]
        if not given:
            raise ValueError("a mixture needs at least one dataset")
        self.action_freq = float(action_freq) if action_freq is not None else file_freq
        self.tolerance_s = float(tolerance_s)
        self.decode_video = bool(decode_video)
        self.frames_dtype = frames_dtype
        self.cache_dir = cache_dir
        self.trim = bool(trim)
        self.members = [self._read_member(m) for m in given]
        for pos, m in enumerate(self.members):
            m.pos = pos
        self.cold_datasets = 0
        for m in self.members:
            m.warm = ensure_rows(m.data_files, cache_dir, progress=progress, where=m.root)
            self.cold_datasets += 0 if m.warm else 1
        self._set_weights(weights)

        self.dataset_lengths = np.asarray([int(m.lengths.sum()) for m in self.members], dtype=np.int64)
        self.dataset_offsets = np.concatenate([[0], np.cumsum(self.dataset_lengths)]).astype(np.int64)
        self.episode_lengths = np.concatenate([m.lengths for m in self.members]).astype(np.int64)
        self.episode_offsets = np.concatenate([[0], np.cumsum([len(m.lengths) for m in self.members])]).astype(np.int64)
        self.episode_starts = np.concatenate([[0], np.cumsum(self.episode_lengths)[:-1]]).astype(np.int64)
        self.num_frames = int(self.dataset_offsets[-1])

        self.schema: MixtureSchema = mixture_schema([(m.features, m.mapping) for m in self.members],
                                                    include_cameras=self.decode_video)
        self._refuse_incompatible()
        self.names = list(self.schema.common)
        self.dtypes = dict(self.schema.dtype_of)
        self._plan_windows(delta_timestamps or {})
        self._decoders = DecoderCache(decoder_cache_size)
        self._budget = MappedBudget(max_mapped_mb)
        self._open: dict[int, FrameDataset] = {}
        if self.decode_video and any(s.dtype == "video" for s in self.schema.common.values()):
            import torchcodec.decoders  # noqa: F401  (imported once here, inherited by forked workers)

    # ================================================================ construction
    def _read_member(self, given: MixtureMember) -> _Member:
        name = given.name or str(given.root)
        try:
            meta = Dataset(given.root)
            if meta.layout not in ("v2", "v3"):
                raise DatasetError(f"unsupported codebase_version {meta.codebase_version!r}", "meta/info.json")
            if meta.fps is None:
                raise DatasetError("fps is missing or not a positive number", "meta/info.json")
            by_index = {ep.episode_index: ep for ep in meta.episodes}
            selected = sorted(by_index) if given.episodes is None else sorted({int(e) for e in given.episodes})
            unknown = [e for e in selected if e not in by_index]
            if unknown:
                raise DatasetError(f"requested episode(s) {', '.join(map(str, unknown[:5]))} are not in the "
                                   f"episode metadata ({len(by_index)} episodes)", meta.root)
            if given.excluded_episodes:
                excluded = {int(e) for e in given.excluded_episodes}
                selected = [e for e in selected if e not in excluded]
            if not selected:
                raise DatasetError("no episodes selected", meta.root)
            eps = [by_index[e] for e in selected]
            files = sorted(set(data_files_of(meta, eps).values()))
            lengths = [ep.length for ep in eps]
            trim = {int(e): list(r) for e, r in given.trim.items() if int(e) in set(selected)} \
                if self.trim and given.trim else None
            if any(n is None for n in lengths):  # no length in the metadata: count the rows
                fd = FrameDataset(meta, episodes=selected, decode_video=False, cache_dir=self.cache_dir, trim=trim)
                lengths = fd.episode_lengths.tolist()
            elif trim:
                where = meta.episode_files[0] if meta.layout == "v3" and meta.episode_files else "meta/episodes.jsonl"
                for k, e in enumerate(selected):
                    if e in trim:
                        lo, hi = trim_range(trim[e], int(lengths[k]), e, where)
                        lengths[k] = hi - lo
        except DatasetError as exc:
            raise DatasetError(f"mixture dataset {name!r}: {exc}", given.root) from None
        return _Member(name, Path(given.root), meta.codebase_version, float(meta.fps), meta.features,
                       dict(given.feature_mapping or {}), given.weight, trim, np.asarray(selected, dtype=np.int64),
                       np.asarray(lengths, dtype=np.int64), [str(meta.path(f)) for f in files])

    def _set_weights(self, weights: Sequence[float] | None) -> None:
        frames = np.asarray([float(m.lengths.sum()) for m in self.members])
        if weights is None and all(m.weight is not None for m in self.members):
            weights = [m.weight for m in self.members]  # type: ignore[misc]
        self.explicit_weights = weights is not None
        if weights is None:
            w = frames
        else:
            w = np.asarray([float(x) for x in weights], dtype=np.float64)
            if w.shape != (len(self.members),) or not np.isfinite(w).all() or (w < 0).any():
                raise ValueError(f"weights must be {len(self.members)} finite numbers >= 0, got {list(weights)}")
        if w.max(initial=0.0) <= 0:
            raise ValueError("every dataset has weight 0: nothing can be sampled")
        w = w / w.max()  # finite weights up to 1.8e308 each: their sum must not overflow to inf (w / inf = 0)
        self.weights = w / w.sum()

    def _refuse_incompatible(self) -> None:
        s = self.schema
        names = [m.name for m in self.members]
        if s.missing:
            i, roles = next(iter(s.missing.items()))
            more = f" (and {len(s.missing) - 1} more dataset(s))" if len(s.missing) > 1 else ""
            raise DatasetError(f"mixture dataset {names[i]!r} provides no {', '.join(map(repr, roles))}, which "
                               f"the feature mapping of other datasets asks for{more}", self.members[i].root)
        for d in s.fatal():
            parts = [f"{v} in {', '.join(repr(names[i]) for i in idx[:3])}{' ...' if len(idx) > 3 else ''}"
                     for v, idx in d.variants.items()]
            raise DatasetError(f"mixture datasets disagree on the {d.what} of {d.name!r}: " + "; ".join(parts)
                               + " (collate cannot stack them)", self.members[next(iter(d.variants.values()))[0]].root)

    def _columns_of(self, m: _Member) -> dict[str, str]:
        """common name -> this dataset's own column (``"task"`` for the task string)."""
        return {n: self.schema.per_dataset[m.pos][n].column for n in self.schema.common}

    def _plan_windows(self, delta_timestamps: Mapping[str, Sequence[float]]) -> None:
        self.delta_timestamps = {k: [float(x) for x in v] for k, v in delta_timestamps.items()}
        for key in self.delta_timestamps:
            spec = self.schema.common.get(key)
            if spec is None or spec.kind not in ("numeric", "camera"):
                raise ValueError(f"delta_timestamps key {key!r} is not a numeric or camera name common to the "
                                 f"mixture (common: {', '.join(self.names)})")
        self._rename: list[dict[str, str]] = []
        self._member_windows: list[dict[str, list[float]]] = []
        for m in self.members:
            cols = self._columns_of(m)
            rename = {col: name for name, col in cols.items()}
            windows = {}
            for key, offsets in self.delta_timestamps.items():
                col = cols[key]
                windows[col] = offsets
                rename[f"{col}_is_pad"] = f"{key}_is_pad"
                if self.action_freq is None:
                    for d in offsets:
                        k = round(d * m.fps)
                        if abs(d - k / m.fps) > self.tolerance_s:
                            raise ValueError(f"delta_timestamps[{key!r}] offset {d} s is not a multiple of 1/fps of "
                                             f"mixture dataset {m.name!r} (fps {m.fps:g}); set the mixture's "
                                             "action_freq to resample to the nearest frame")
            self._rename.append(rename)
            self._member_windows.append(windows)
        self._casts = {name: TORCH_DTYPES[dt] for name, dt in self.dtypes.items() if dt in TORCH_DTYPES}

    # ================================================================ members
    def member(self, d: int) -> FrameDataset:
        """The :class:`FrameDataset` of dataset ``d`` in this process, opened on first use."""
        fd = self._open.get(d)
        if fd is None:
            m = self.members[d]
            try:
                fd = FrameDataset(m.root, episodes=m.episodes.tolist(), delta_timestamps=self._member_windows[d],
                                  tolerance_s=self.tolerance_s, decode_video=self.decode_video,
                                  frames_dtype=self.frames_dtype, cache_dir=self.cache_dir,
                                  decoder_cache=self._decoders, mapped_budget=self._budget,
                                  resample="nearest" if self.action_freq is not None else None,
                                  keys=[c for c in self._columns_of(m).values() if c != "task"], trim=m.trim)
            except DatasetError as exc:
                raise DatasetError(f"mixture dataset {m.name!r}: {exc}", m.root) from None
            if not np.array_equal(fd.episode_lengths, m.lengths):
                raise DatasetError(f"mixture dataset {m.name!r}: episode lengths in the data differ from the episode "
                                   "metadata read at construction (the dataset changed?)", m.root)
            self._open[d] = fd
        return fd

    @property
    def open_members(self) -> int:
        """How many datasets this process has opened."""
        return len(self._open)

    def __getstate__(self) -> dict:
        state = self.__dict__.copy()
        state["_open"] = {}  # spawned workers open their own
        return state

    # ================================================================ index arithmetic
    def __len__(self) -> int:
        return self.num_frames

    def locate(self, indices: Sequence[int] | np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(dataset_index, episode_index, frame_index)`` int64 arrays of mixture indices, without reading rows."""
        idx = np.asarray(indices, dtype=np.int64).reshape(-1)
        self._check(idx)
        d = np.searchsorted(self.dataset_offsets, idx, side="right") - 1
        g = np.searchsorted(self.episode_starts, idx, side="right") - 1
        local = g - self.episode_offsets[d]
        eps = np.asarray([self.members[int(a)].episodes[int(b)] for a, b in zip(d, local)], dtype=np.int64)
        return d, eps, idx - self.episode_starts[g]

    def _check(self, idx: np.ndarray) -> None:
        if idx.size and (idx.min() < 0 or idx.max() >= self.num_frames):
            bad = int(idx.min() if idx.min() < 0 else idx.max())
            raise IndexError(f"mixture index {bad} out of range for a mixture of {self.num_frames} frames")

    # ================================================================ samples
    def __getitem__(self, idx: int) -> dict[str, Any]:
        i = int(idx)
        return self.__getitems__([i + self.num_frames if i < 0 else i])[0]

    def __getitems__(self, indices: Sequence[int]) -> list[dict[str, Any]]:
        """Batched fetch: one batched read per dataset touched, samples in the order asked."""
        idx = np.asarray([int(i) for i in indices], dtype=np.int64)
        idx = np.where(idx < 0, idx + self.num_frames, idx)
        self._check(idx)
        d = np.searchsorted(self.dataset_offsets, idx, side="right") - 1
        out: list[dict[str, Any] | None] = [None] * len(idx)
        for k in np.unique(d).tolist():
            where = np.flatnonzero(d == k)
            samples = self.member(k).__getitems__((idx[where] - self.dataset_offsets[k]).tolist())
            rename = self._rename[k]
            tag = torch.tensor(k, dtype=torch.int64)
            for j, s in zip(where.tolist(), samples):
                o = {rename[c]: v for c, v in s.items() if c in rename}
                for name, dt in self._casts.items():
                    v = o.get(name)
                    if isinstance(v, torch.Tensor) and v.dtype != dt:
                        o[name] = v.to(dt)
                o["dataset_index"] = tag
                out[j] = o
        return out  # type: ignore[return-value]

    def item_spec(self) -> dict[str, tuple[str, tuple[int, ...]]]:
        """What every sample holds: ``{key: (dtype, shape)}`` (as :meth:`FrameDataset.item_spec`), plus
        ``dataset_index``; the task string is left out (it may be absent)."""
        spec: dict[str, tuple[str, tuple[int, ...]]] = {}
        for name, fs in self.schema.common.items():
            if fs.kind == "task":
                continue
            if fs.kind == "camera":
                dt, shape = self.frames_dtype, fs.sample_shape
            elif fs.kind == "string":
                dt, shape = "string", ()
            else:
                dt, shape = self.dtypes.get(name, fs.dtype), fs.sample_shape
            if name in self.delta_timestamps:
                T = len(self.delta_timestamps[name])
                spec[name] = (dt, (T,) + tuple(shape))
                spec[f"{name}_is_pad"] = ("bool", (T,))
            else:
                spec[name] = (dt, tuple(shape))
        spec["dataset_index"] = ("int64", ())
        return spec

    @property
    def decoder_stats(self) -> DecoderStats:
        """Counters of this process's shared video decoder cache."""
        self._decoders._check_pid()
        return self._decoders.stats

    def release_mapped_pages(self) -> int:
        """Drop this process's mappings of every opened dataset's Arrow cache (see :class:`FrameDataset`)."""
        return self._budget.release()

    def __repr__(self) -> str:
        return (f"MixtureDataset(datasets={len(self.members)}, frames={self.num_frames}, "
                f"names={self.names}, action_freq={self.action_freq})")

