"""Per-episode statistics and their aggregation into ``meta/stats.json``, computed the way lerobot does
(lerobot 0.4.4 ``src/lerobot/datasets/compute_stats.py``: ``compute_episode_stats``, ``aggregate_stats``)."""

from __future__ import annotations

import numpy as np

from lerobot_tools.testing.synth.frames import frame_pixels
from lerobot_tools.testing.synth.spec import SynthSpec

#: Quantile statistics written by lerobot v3 (``compute_stats.py``), name -> probability.
_QUANTILES = {"q01": 0.01, "q10": 0.10, "q50": 0.50, "q90": 0.90, "q99": 0.99}

#: Frames sampled per episode for image/video statistics (lerobot ``estimate_num_samples`` lower cap).
_IMAGE_STAT_SAMPLES = 100


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


def _sample_frames(ep: int, length: int, H: int, W: int, key: str | None = None, frame_hook=None) -> np.ndarray:
    n = min(length, _IMAGE_STAT_SAMPLES)
    idx = np.unique(np.round(np.linspace(0, length - 1, n)).astype(int))
    if frame_hook is None:
        return np.stack([frame_pixels(ep, int(i), H, W) for i in idx])
    return np.stack([frame_hook(ep, key, int(i), frame_pixels(ep, int(i), H, W)) for i in idx])


class StatsAccumulator:
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


def stats_json(stats: dict[str, dict[str, np.ndarray]]) -> dict:
    return {f: {k: np.asarray(v).tolist() for k, v in s.items()} for f, s in stats.items()}


def episode_stats(
    spec: SynthSpec, features: dict, ep: int, length: int, cols: dict, quantiles: bool, frame_hook=None
) -> dict:
    stats: dict[str, dict[str, np.ndarray]] = {}
    H, W = spec.video_size
    frames = None
    for name, ft in features.items():
        if ft["dtype"] == "video":
            if frame_hook is not None:
                stats[name] = _image_stats(_sample_frames(ep, length, H, W, name, frame_hook), quantiles)
                continue
            if frames is None:
                frames = _sample_frames(ep, length, H, W)
            stats[name] = _image_stats(frames, quantiles)
        elif name in cols:
            stats[name] = _numeric_stats(cols[name], quantiles)
    return stats
