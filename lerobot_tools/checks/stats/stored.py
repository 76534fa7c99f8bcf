"""Stored normalisation statistics: where each layout keeps them, what lerobot writes, and how lrtool reads them.

Facts, from lerobot 0.4.4 (``lerobot/datasets/compute_stats.py``, ``lerobot/datasets/utils.py``,
``lerobot/datasets/lerobot_dataset.py``) and lerobot 0.3.3 (the last release that loads v2.1):

* **Global** statistics: ``meta/stats.json``, ``{feature: {stat: nested list}}``. The v3.0 loader (0.4.x) and the
  v2.0 loader (0.3.x) normalise with it. The v2.1 loader (0.3.x) does *not* read it: it aggregates the
  per-episode statistics at load time (``aggregate_stats(list(episodes_stats.values()))``), also for an episode
  subset.
* **Per-episode** statistics: v2.1 ``meta/episodes_stats.jsonl``, one line ``{"episode_index": i, "stats": {...}}``;
  v3.0 the columns ``stats/<feature>/<stat>`` of ``meta/episodes/*/*.parquet`` (one row per episode). v2.0 has none.
* Each feature's entry holds ``min``, ``max``, ``mean``, ``std`` (population, ``np.std`` / ``sqrt(E[x^2]-E[x]^2)``,
  i.e. ddof=0), ``count`` (a one-element list) and, since lerobot 0.4, the quantiles ``q01 q10 q50 q90 q99``.
* Shapes: a numeric feature of shape ``(d,)`` has ``(d,)`` statistics (``(1,)`` for scalars); a camera (``image``
  / ``video``) has ``(3, 1, 1)`` per-channel statistics scaled to [0, 1]; ``count`` is ``(1,)``. lerobot's
  ``aggregate_stats`` raises ``ValueError`` for a ``count`` that is not ``(1,)``, a 0-d value, or a camera
  statistic that is not ``(3, 1, 1)`` (``_assert_type_and_shape``).
* Strings (``string`` / ``language``) have no statistics.

Nothing here judges the values; :mod:`.meta` and :mod:`.deep` do. Everything read is size-capped: ``stats.json``
at :data:`MAX_STATS_JSON_BYTES`, each ``episodes_stats.jsonl`` line at :data:`MAX_JSONL_LINE_BYTES`; per-episode
statistics are streamed (one JSON line or one parquet row group at a time), never held for the whole dataset.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

import numpy as np

from lerobot_tools.dataset.model import STATS_PATH, V2_EPISODES_STATS_PATH, Dataset
from lerobot_tools.errors import DatasetError, one_line

#: quantile statistic name -> probability (lerobot 0.4.4 ``DEFAULT_QUANTILES`` / ``RunningQuantileStats``)
QUANTILES: dict[str, float] = {"q01": 0.01, "q10": 0.10, "q50": 0.50, "q90": 0.90, "q99": 0.99}
#: the statistics every lerobot version writes
BASE_STATS = ("min", "max", "mean", "std", "count")
#: :attr:`StatColumn.shapes` of every statistic of a row whose entry for the feature is not an object (e.g. ``5``)
NOT_AN_OBJECT = "not an object"
#: feature dtypes whose statistics are per-channel image statistics
CAMERA_DTYPES = ("image", "video")
#: feature dtypes without statistics
TEXT_DTYPES = ("string", "language")

#: a stored count at or beyond this (in absolute value) is no count: int64, which lerobot's counts are, cannot hold it
MAX_COUNT = 2.0**63
MAX_STATS_JSON_BYTES = 256 * 2**20
MAX_JSONL_LINE_BYTES = 64 * 2**20


def whole_counts(a: np.ndarray) -> np.ndarray:
    """Elementwise: the value can be a stored ``count`` (finite, a whole number, below :data:`MAX_COUNT` in absolute
    value). ``a``: any shape of numbers; returns a bool array of the same shape."""
    return np.isfinite(a) & (a == np.round(a)) & (np.abs(a) < MAX_COUNT)


#: ``{stat: array}`` of one feature (float64; ``count`` int64)
FeatureStats = dict[str, np.ndarray]


def feature_kind(feat: dict) -> str | None:
    """``"camera"`` (image/video), ``"numeric"`` (any other declared dtype), or None (text: no statistics)."""
    dtype = feat.get("dtype")
    if dtype in CAMERA_DTYPES:
        return "camera"
    if dtype in TEXT_DTYPES or not isinstance(dtype, str):
        return None
    return "numeric"


def normalised(name: str, feat: dict) -> bool:
    """True for a non-camera feature that lerobot policies normalise with the statistics.

    lerobot 0.4.4 ``dataset_to_policy_features`` (``lerobot/datasets/utils.py``) turns ``observation.*`` keys into
    STATE/ENV features and ``action*`` keys into ACTION features; the other columns (``timestamp``, ``index``,
    ``episode_index``, ``frame_index``, ``task_index``, ``next.*``) are never normalised.
    """
    return feature_kind(feat) == "numeric" and (name.startswith("observation") or name.startswith("action"))


#: channel counts a camera can have (grey, RGB, RGBA)
CHANNEL_COUNTS = (1, 3, 4)


def camera_channels(feat: dict) -> int:
    """Channels of a camera feature: ``shape[2]`` for ``[height, width, channels]`` names, ``shape[0]`` for
    ``[channels, height, width]``; without such names, the axis whose size is a channel count (1, 3, 4), the
    last one first (lerobot writes ``[height, width, channels]``)."""
    return camera_channel_options(feat)[0]


def camera_channel_options(feat: dict) -> list[int]:
    """The channel counts a camera feature's statistics may have (:func:`camera_channels` first): one when the
    names say which axis holds the channels, else each end of the shape that is a channel count."""
    shape = [s for s in (feat.get("shape") or []) if isinstance(s, int) and not isinstance(s, bool)]
    names = feat.get("names")
    if len(shape) != 3:
        return [int(shape[0])] if shape else [3]
    if isinstance(names, list) and len(names) == 3:
        if names[2] in ("channel", "channels"):
            return [int(shape[2])]
        if names[0] in ("channel", "channels"):
            return [int(shape[0])]
    out = [int(s) for s in (shape[2], shape[0]) if s in CHANNEL_COUNTS]
    return list(dict.fromkeys(out)) or [int(shape[0])]


def accepted_shapes(feat: dict) -> list[tuple[int, ...]]:
    """Shapes lerobot writes for the statistics (not ``count``) of a feature; empty when unknown.

    Numeric: the feature shape; for rank >= 2 also ``(shape[-1],)``, which lerobot 0.4.x writes (its
    ``RunningQuantileStats`` flattens every axis but the last). Camera: ``(channels, 1, 1)``, for each axis that may
    hold the channels (:func:`camera_channel_options`).
    """
    shape = feat.get("shape")
    if not isinstance(shape, list) or not shape or not all(isinstance(s, int) and not isinstance(s, bool) for s in shape):
        return []
    kind = feature_kind(feat)
    if kind == "camera":
        return [(c, 1, 1) for c in camera_channel_options(feat)]
    if kind == "numeric":
        out = [tuple(shape)]
        if len(shape) >= 2:
            out.append((shape[-1],))
        return out
    return []


def to_array(value: Any, stat: str) -> np.ndarray | None:
    """A stored statistic as a numpy array (``count`` int64, others float64), or None when it is not a
    rectangular nested list of numbers (a numeric string such as ``"1.5"`` is not a number: lerobot's loaders
    keep it a string, which no tensor can be made of)."""
    if isinstance(value, (bool, str, bytes)) or value is None:
        return None
    try:
        raw = np.asarray(value)  # what the value holds: a float64 conversion would parse the text "1.5" as a number
        if raw.dtype.kind in ("U", "S"):
            return None
        if raw.dtype.kind == "O" and any(isinstance(v, (str, bytes)) for v in raw.reshape(-1)):
            return None  # text among None
        arr = raw.astype(np.float64)
    except (TypeError, ValueError):
        return None
    if stat == "count":
        if not np.all(whole_counts(arr)):
            return None
        return arr.astype(np.int64)
    return arr


def parse_feature_stats(raw: Any) -> tuple[FeatureStats, list[str]]:
    """``{stat: array}`` of one feature's stored entry, and the statistics that could not be read."""
    out: FeatureStats = {}
    bad: list[str] = []
    if not isinstance(raw, dict):
        return out, ["(not an object)"]
    for stat, value in raw.items():
        arr = to_array(value, stat)
        if arr is None:
            bad.append(str(stat))
        else:
            out[str(stat)] = arr
    return out, bad


# ---------------------------------------------------------------------- global
def read_global(ds: Dataset) -> dict | None:
    """``meta/stats.json`` as a dict (None when absent).

    Raises:
        DatasetError: the file is larger than :data:`MAX_STATS_JSON_BYTES`, is not JSON, or not an object.
    """
    path = ds.root / STATS_PATH
    if not path.exists():
        return None
    try:
        size = path.stat().st_size
    except OSError as exc:
        raise DatasetError(f"cannot be read ({exc.strerror or exc})", STATS_PATH) from None
    if size > MAX_STATS_JSON_BYTES:
        raise DatasetError(f"is {size / 2**20:.0f} MiB, over the {MAX_STATS_JSON_BYTES // 2**20} MiB lrtool reads", STATS_PATH)
    return ds.read_stats()


# ---------------------------------------------------------------------- per episode
@dataclass
class EpisodeStatsRow:
    """The stored statistics of one episode.

    Attributes:
        episode_index: as stored.
        source: the file holding them (relative path).
        where: ``line N`` (v2.1) or ``row N`` (v3.0, row in the file).
        stats: feature -> the raw stored entry (lists, as JSON / Arrow gave them).
    """

    episode_index: int
    source: str
    where: str
    stats: dict[str, dict]


@dataclass
class EpisodeStatsReader:
    """Streams a dataset's per-episode statistics as Python rows, and looks one episode up again on demand (the
    form ``lrtool repair`` rewrites; the checks read :class:`.blocks.StatsBlocks`).

    Attributes:
        kind: ``"jsonl"`` (v2.1), ``"parquet"`` (v3.0) or None (no per-episode statistics).
        problems: ``(path, message)`` for lines / files that could not be read (filled while iterating).
    """

    ds: Dataset
    kind: str | None = None
    problems: list[tuple[str, str]] = field(default_factory=list)
    _offsets: dict[int, int] = field(default_factory=dict)
    _rows: dict[int, tuple[str, int, int]] = field(default_factory=dict)
    _cache_key: tuple[str, int] | None = None
    _cache: dict[int, EpisodeStatsRow] = field(default_factory=dict)
    _open: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.ds.layout == "v3":
            self.kind = "parquet" if self.ds.episode_files else None
        elif self.ds.layout == "v2" and (self.ds.root / V2_EPISODES_STATS_PATH).is_file():
            self.kind = "jsonl"

    # ------------------------------------------------------------------ streaming
    def __iter__(self) -> Iterator[EpisodeStatsRow]:
        """Every episode's stored statistics, in file order; records offsets/row groups for :meth:`get`."""
        if self.kind == "jsonl":
            yield from self._iter_jsonl()
        elif self.kind == "parquet":
            yield from self._iter_parquet()

    def _iter_jsonl(self) -> Iterator[EpisodeStatsRow]:
        for offset, lineno, line in stats_jsonl_lines(self.ds.root, self.problems):
            row = self._parse_line(line, lineno)
            if row is not None:
                self._offsets.setdefault(row.episode_index, offset)
                yield row

    def _parse_line(self, line: bytes, lineno: int) -> EpisodeStatsRow | None:
        rel = V2_EPISODES_STATS_PATH
        if not line.strip():
            return None
        try:
            obj = json.loads(line)
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            self.problems.append((rel, f"line {lineno} is not valid JSON ({getattr(exc, 'msg', exc)})"))
            return None
        ep = obj.get("episode_index") if isinstance(obj, dict) else None
        stats = obj.get("stats") if isinstance(obj, dict) else None
        if not isinstance(ep, int) or isinstance(ep, bool) or not isinstance(stats, dict):
            self.problems.append((rel, f"line {lineno} has no integer episode_index and stats object"))
            return None
        return EpisodeStatsRow(ep, rel, f"line {lineno}", {k: v for k, v in stats.items()})

    def _iter_parquet(self) -> Iterator[EpisodeStatsRow]:
        import pyarrow.parquet as pq

        for rel in self.ds.episode_files:
            try:
                pf = pq.ParquetFile(self.ds.root / rel)
                cols = [n for n in pf.schema_arrow.names if n.startswith("stats/")]
                if "episode_index" not in pf.schema_arrow.names:
                    continue  # C007 reports it
                row0 = 0
                for rg in range(pf.num_row_groups):
                    rows = self._read_row_group(pf, rel, rg, cols, row0)
                    for r in rows.values():
                        yield r
                    row0 += pf.metadata.row_group(rg).num_rows
            except DatasetError as exc:
                self.problems.append((rel, exc.message))
            except Exception as exc:  # pyarrow: corrupt file; C007 reports unreadable metadata
                self.problems.append((rel, f"stats columns cannot be read ({one_line(exc, 160)})"))

    def _read_row_group(self, pf, rel: str, rg: int, cols: list[str], row0: int) -> dict[int, EpisodeStatsRow]:
        table = pf.read_row_group(rg, columns=["episode_index", *cols])
        eps = table.column("episode_index").to_pylist()
        per_col = {c: table.column(c).to_pylist() for c in cols}
        out: dict[int, EpisodeStatsRow] = {}
        for i, ep in enumerate(eps):
            if not isinstance(ep, int):
                continue
            stats: dict[str, dict] = {}
            for c in cols:
                feature, _, stat = c[len("stats/"):].rpartition("/")
                if not feature:
                    continue
                value = per_col[c][i]
                if value is None:
                    continue
                stats.setdefault(feature, {})[stat] = value
            self._rows.setdefault(ep, (rel, rg, row0 + i))
            out.setdefault(ep, EpisodeStatsRow(ep, rel, f"row {row0 + i}", stats))
        return out

    # ------------------------------------------------------------------ lookup
    def get(self, episode_index: int) -> EpisodeStatsRow | None:
        """One episode's stored statistics (after a full iteration; None when it has none).

        v2.1 reads one line at its recorded offset; v3.0 reads the episode's row group (the last one read is
        cached, so looking episodes up in order reads each row group once).
        """
        if self.kind == "jsonl":
            off = self._offsets.get(episode_index)
            if off is None:
                return None
            try:
                with (self.ds.root / V2_EPISODES_STATS_PATH).open("rb") as fh:
                    fh.seek(off)
                    line = fh.readline(MAX_JSONL_LINE_BYTES + 1)
            except OSError:
                return None
            return self._parse_line(line, 0)
        if self.kind == "parquet":
            loc = self._rows.get(episode_index)
            if loc is None:
                return None
            rel, rg, _ = loc
            if self._cache_key != (rel, rg):
                import pyarrow.parquet as pq

                try:
                    if rel not in self._open:
                        self._open.clear()
                        self._open[rel] = pq.ParquetFile(self.ds.root / rel)
                    pf = self._open[rel]
                    cols = [n for n in pf.schema_arrow.names if n.startswith("stats/")]
                    row0 = sum(pf.metadata.row_group(i).num_rows for i in range(rg))
                    self._cache = self._read_row_group(pf, rel, rg, cols, row0)
                except Exception:
                    self._cache = {}
                self._cache_key = (rel, rg)
            return self._cache.get(episode_index)
        return None



def stats_jsonl_lines(root: Path, problems: list[tuple[str, str]]) -> Iterator[tuple[int, int, bytes]]:
    """``(byte offset, line number, raw line)`` of ``meta/episodes_stats.jsonl``, streamed line by line.

    A line over :data:`MAX_JSONL_LINE_BYTES` is skipped, and it or an unreadable file is recorded in
    ``problems`` as ``(relpath, message)``; reading goes on with the next line.
    """
    rel = V2_EPISODES_STATS_PATH
    try:
        fh = (root / rel).open("rb")
    except OSError as exc:
        problems.append((rel, f"cannot be read ({exc.strerror or exc})"))
        return
    with fh:
        lineno = 0
        while True:
            offset = fh.tell()
            line = fh.readline(MAX_JSONL_LINE_BYTES + 1)
            if not line:
                return
            lineno += 1
            if len(line) > MAX_JSONL_LINE_BYTES:
                problems.append((rel, f"line {lineno} is longer than {MAX_JSONL_LINE_BYTES // 2**20} MiB"))
                while line and not line.endswith(b"\n"):  # skip the rest of the line
                    line = fh.readline(MAX_JSONL_LINE_BYTES)
                continue
            yield offset, lineno, line
