"""Compact per-episode signatures, and duplicate search within a dataset and across every dataset of a mixture.

A :class:`Signature` is computed from an episode's content columns (action and state) in stage 1 and is all that
the duplicate search needs, so a 400-dataset mixture is compared without holding any data:

* ``key``: BLAKE2b-128 of the values rounded to 4 decimals and stored as float32, with the frame count and the
  number of dimensions: equal keys are exact duplicates (a re-export in float64, or a copy whose float32 values
  differ in the last bits, keeps the key; robovet 0.2.2 and rdq 0.3.4 hash rounded actions the same way);
* ``shape``: each dimension resampled to :data:`POINTS` points over the episode (linear interpolation), minus
  the episode's mean of the dimension, divided by its range (a dimension that does not move is 0); above
  :data:`MAX_DIMS` dimensions, projected onto :data:`MAX_DIMS` fixed random directions (seeded by the number of
  dimensions, so every dataset of the same shape uses the same ones); float16;
* ``mean`` and ``rng``: the mean and range of each dimension (float32).

Two episodes are near duplicates (:func:`near_pairs`) when they have the same number of dimensions, lengths
within :data:`LENGTH_SLACK`, shapes within ``tol`` RMS, and means and ranges within ``tol`` of the larger range
of each dimension. kalanos 0.8.2 (``scoring/duplicates.py``) uses the same form: 32 points per channel, RMSE
0.02, lengths within 10 %. The search (:func:`near_pairs`) sorts the signatures by one dimension's mean and meets
only the neighbours the mean condition allows, screening them by every dimension's mean and range and by length
before comparing shapes (``benchmarks/bench_curation.py``: 400 datasets x 100 episodes).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

import numpy as np

POINTS = 16
MAX_DIMS = 16
LENGTH_SLACK = 0.10
_KEY_DECIMALS = 4


@dataclass
class Signature:
    """One episode's duplicate signature (see module docstring)."""

    key: str
    n: int
    dims: int
    shape: np.ndarray  # (POINTS * min(dims, MAX_DIMS),) float16
    mean: np.ndarray  # (dims,) float32
    rng: np.ndarray  # (dims,) float32

    def nbytes(self) -> int:
        return self.shape.nbytes + self.mean.nbytes + self.rng.nbytes + 48

    def to_dict(self) -> dict:
        return {"key": self.key, "n": self.n, "dims": self.dims, "shape": self.shape.astype(np.float32).tolist(),
                "mean": self.mean.tolist(), "rng": self.rng.tolist()}

    @classmethod
    def from_dict(cls, d: dict) -> "Signature":
        """Inverse of :meth:`to_dict`. Raises KeyError/TypeError/ValueError for anything else."""
        return cls(str(d["key"]), int(d["n"]), int(d["dims"]), np.asarray(d["shape"], dtype=np.float16),
                   np.asarray(d["mean"], dtype=np.float32), np.asarray(d["rng"], dtype=np.float32))


def _projection(dims: int) -> np.ndarray:
    """The fixed ``(dims, MAX_DIMS)`` projection used above :data:`MAX_DIMS` dimensions."""
    g = np.random.default_rng(dims).standard_normal((dims, MAX_DIMS))
    return g / np.sqrt(dims)


def signature_of(x: np.ndarray, ok: np.ndarray) -> Signature:
    """The :class:`Signature` of one episode's ``(n, D)`` float64 content columns (``ok``: columns without NaN/Inf;
    the others count as not moving in the shape)."""
    n, dims = x.shape
    h = hashlib.blake2b(digest_size=16)
    h.update(np.asarray([n, dims], dtype=np.int64).tobytes())
    with np.errstate(invalid="ignore"):
        h.update(np.round(x, _KEY_DECIMALS).astype(np.float32).tobytes())
    with np.errstate(invalid="ignore"):
        mean = np.where(ok, x.mean(axis=0), 0.0)  # a column with NaN/Inf (not ok) counts as still
        rng = np.where(ok, x.max(axis=0) - x.min(axis=0), 0.0)
    pos = np.linspace(0.0, n - 1, POINTS)
    i0 = np.floor(pos).astype(np.int64)
    i1 = np.minimum(i0 + 1, n - 1)
    w = (pos - i0)[:, None]
    pts = x[i0] * (1.0 - w) + x[i1] * w  # (POINTS, D)
    scale = np.where(rng > 0, rng, 1.0)
    shape = np.where(ok & (rng > 0), (pts - mean) / scale, 0.0)
    if dims > MAX_DIMS:
        shape = shape @ _projection(dims)
    return Signature(h.hexdigest(), int(n), int(dims), shape.reshape(-1).astype(np.float16),
                     mean.astype(np.float32), rng.astype(np.float32))


def exact_groups(keys: list[str]) -> list[list[int]]:
    """Positions of equal keys, groups of two or more, each in order of first appearance."""
    by: dict[str, list[int]] = {}
    for i, k in enumerate(keys):
        by.setdefault(k, []).append(i)
    return [g for g in by.values() if len(g) > 1]


@dataclass
class SignatureTable:
    """Signatures of one shape (same number of dimensions) stacked for the search.

    Attributes:
        n: ``(E,)`` frames; shape: ``(E, P)`` float32; mean, rng: ``(E, D)`` float32; owner: ``(E,)`` int32 (which
        dataset) and episode: ``(E,)`` int64, for reporting.
    """

    n: np.ndarray
    shape: np.ndarray
    mean: np.ndarray
    rng: np.ndarray
    owner: np.ndarray
    episode: np.ndarray

    @classmethod
    def stack(cls, items: list[tuple[int, int, Signature]]) -> "SignatureTable":
        """From ``(owner, episode, signature)`` triples of one ``dims``."""
        return cls(np.array([s.n for _, _, s in items], dtype=np.int64),
                   np.stack([s.shape for _, _, s in items]).astype(np.float32),
                   np.stack([s.mean for _, _, s in items]), np.stack([s.rng for _, _, s in items]),
                   np.array([o for o, _, _ in items], dtype=np.int32),
                   np.array([e for _, e, _ in items], dtype=np.int64))

    def nbytes(self) -> int:
        return sum(a.nbytes for a in (self.n, self.shape, self.mean, self.rng, self.owner, self.episode))


#: pairs compared per vectorised block of the near-duplicate search
_BLOCK_PAIRS = 1 << 17



def near_pairs(t: SignatureTable, tol: float, *, across_only: bool = False) -> np.ndarray:
    """Near-duplicate pairs of a :class:`SignatureTable` (see module docstring).

    A near pair's means differ by at most ``tol`` times the larger range in every dimension, and its ranges are
    within that share of each other, so its larger range is at most ``range / (1 - tol)`` of either. The
    signatures are sorted by the mean of the dimension whose means spread most (relative to their ranges); each
    meets only the ones after it whose mean lies within ``tol x range / (1 - tol)`` of its own (no pair is missed).
    Those candidates are screened, in blocks of :data:`_BLOCK_PAIRS`, by the second most spread dimension's mean and
    by length (one number each), then by the mean/range condition in every dimension, before their shapes are
    compared.

    Args:
        t: the signatures.
        tol: RMS shape difference, and mean/range difference as a share of the larger range.
        across_only: only pairs of different owners (datasets).

    Returns:
        ``(K, 2)`` int64 positions ``i < j`` into ``t``.
    """
    count = len(t.n)
    if count < 2:
        return np.zeros((0, 2), dtype=np.int64)
    mean, rng = t.mean.astype(np.float64), t.rng.astype(np.float64)
    spread = np.median(np.abs(mean - np.median(mean, axis=0)) / (rng + 1e-12), axis=0)
    d, d2 = (list(np.argsort(-spread, kind="stable")) + [0])[:2]
    order = np.argsort(mean[:, d], kind="stable")
    key, key2, n = mean[order, d], mean[order, d2], t.n[order]
    scale = tol / max(1e-9, 1.0 - tol)
    width, width2 = scale * rng[order, d] + 1e-9, scale * rng[order, d2] + 1e-9
    hi = np.searchsorted(key, key + width, side="right")
    span = np.maximum(hi - np.arange(count) - 1, 0)  # candidates after each position in sorted order
    ends = np.cumsum(span)
    out: list[np.ndarray] = []
    start = 0
    while start < count:
        done = ends[start - 1] if start else 0
        stop = max(int(np.searchsorted(ends, done + _BLOCK_PAIRS, side="right")), start + 1)
        total = int(ends[stop - 1] - done)
        if total:
            a = np.repeat(np.arange(start, stop), span[start:stop])
            b = a + 1 + (np.arange(total) - np.repeat(ends[start:stop] - span[start:stop] - done, span[start:stop]))
            # one-dimensional screens first (a second dimension's mean, the length), the full box on the rest
            keep = np.abs(key2[a] - key2[b]) <= np.maximum(width2[a], width2[b])
            keep &= np.abs(n[a] - n[b]) <= LENGTH_SLACK * np.maximum(n[a], n[b])
            i, j = order[a[keep]], order[b[keep]]
            keep = _box(t, i, j, tol)
            if across_only:
                keep &= t.owner[i] != t.owner[j]
            i, j = i[keep], j[keep]
            if len(i):
                near = _near(t, i, j, tol)
                if near.any():
                    ii, jj = i[near], j[near]
                    out.append(np.stack([np.minimum(ii, jj), np.maximum(ii, jj)], axis=1))
        start = stop
    if not out:
        return np.zeros((0, 2), dtype=np.int64)
    return np.concatenate(out).astype(np.int64)


def _box(t: SignatureTable, i: np.ndarray, j: np.ndarray, tol: float) -> np.ndarray:
    """Lengths within :data:`LENGTH_SLACK`, means and ranges within ``tol`` of the larger range, every dimension."""
    ni, nj = t.n[i], t.n[j]
    ok = np.abs(ni - nj) <= LENGTH_SLACK * np.maximum(ni, nj)
    big = np.maximum(t.rng[i], t.rng[j])
    lim = tol * np.where(big > 0, big, 1.0) + 1e-9
    ok &= (np.abs(t.mean[i] - t.mean[j]) <= lim).all(axis=1)
    ok &= (np.abs(t.rng[i] - t.rng[j]) <= lim).all(axis=1)
    return ok


#: pairs whose shapes are compared at once (bounds the temporary difference array: 8,192 x 256 float32, 8 MiB)
_SHAPE_PAIRS = 8192


def _near(t: SignatureTable, i: np.ndarray, j: np.ndarray, tol: float) -> np.ndarray:
    ni, nj = t.n[i], t.n[j]
    ok = np.abs(ni - nj) <= LENGTH_SLACK * np.maximum(ni, nj)
    for lo in range(0, len(i), _SHAPE_PAIRS):
        d = t.shape[i[lo:lo + _SHAPE_PAIRS]] - t.shape[j[lo:lo + _SHAPE_PAIRS]]
        ok[lo:lo + _SHAPE_PAIRS] &= np.sqrt((d * d).mean(axis=1)) <= tol
    big = np.maximum(t.rng[i], t.rng[j])
    lim = tol * np.where(big > 0, big, 1.0) + 1e-9
    ok &= (np.abs(t.mean[i] - t.mean[j]) <= lim).all(axis=1)
    ok &= (np.abs(t.rng[i] - t.rng[j]) <= lim).all(axis=1)
    return ok
