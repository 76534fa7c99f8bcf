"""Weighted epochs over a mixture: how many draws each dataset gets, and which frames, as pure functions.

An epoch of ``N`` draws (default: every frame once) is apportioned to the datasets by weight with the
largest-remainder method, so dataset ``d`` gets exactly ``q_d = floor(N w_d)`` or one more draws
(``sum q_d = N``; a dataset with no frames gets none and the others share its weight). Draw ``j`` of
dataset ``d`` (``0 <= j < q_d``) is frame ``P_{d,k}(j mod L_d)`` of its ``L_d`` frames, where
``k = j div L_d`` is the pass and ``P_{d,k}`` a keyed Feistel permutation of ``[0, L_d)``
(:class:`~lerobot_tools.loaders._feistel.FeistelPermutation` with tweak ``(d, k)``): a dataset drawn
less than its size contributes distinct frames, one drawn more cycles through all its frames before
repeating any. The epoch's draws ``[0, N)`` are laid out dataset after dataset; the samplers shuffle
that range with one more Feistel permutation, so any stretch of the order holds each dataset in
proportion to its weight (hypergeometrically), and the whole map costs O(datasets + episodes) memory.

OpenTau's ``HierarchicalSampler`` draws the dataset and then a frame independently with replacement
(multinomial); the proportions are the same in expectation, but its order is not resumable or
rank-disjoint without sharing an RNG state, and frames may repeat within an epoch even when a dataset is
drawn less often than its size.
"""

from __future__ import annotations

import numpy as np

from lerobot_tools.loaders._feistel import FeistelPermutation

_TWEAK = 0x3D  # keeps the per-dataset permutations apart from the global one


def apportion(weights: np.ndarray, capacity: np.ndarray, total: int) -> np.ndarray:
    """Draws per dataset: ``total`` split by ``weights`` (largest remainder), none where ``capacity == 0``.

    Args:
        weights: float ``(D,)``, >= 0, not all zero among datasets with capacity.
        capacity: int ``(D,)`` frames per dataset (draws may exceed it: frames then repeat).
        total: draws in the epoch (>= 0).

    Returns:
        int64 ``(D,)`` summing to ``total``.

    Raises:
        ValueError: no dataset with frames has a positive weight.
    """
    w = np.where(np.asarray(capacity) > 0, np.asarray(weights, dtype=np.float64), 0.0)
    if total > 0 and w.max(initial=0.0) <= 0:
        raise ValueError("no dataset with frames has a positive weight: nothing can be sampled")
    if total == 0:
        return np.zeros(len(w), dtype=np.int64)
    w = w / w.max()  # finite weights near 1.8e308 sum to inf; relative to the largest they cannot
    raw = total * w / w.sum()
    q = np.floor(raw).astype(np.int64)
    short = total - int(q.sum())
    if short > 0:
        frac = raw - q
        order = np.lexsort((np.arange(len(w)), -frac))  # largest remainder first, ties by position
        q[order[:short]] += 1
    return q


class WeightedPlan:
    """Draw ``s`` of an epoch -> a position in the concatenated frame space of the datasets.

    Args:
        lengths: int ``(D,)`` frames available per dataset (after any frame dropping).
        weights: float ``(D,)`` relative weights, or None: every frame exactly once (``q_d = L_d``).
        num_samples: draws per epoch; None = ``sum(lengths)``.

    Attributes:
        quotas: int64 ``(D,)`` draws per dataset per epoch.
        total: ``sum(quotas)``.
    """

    def __init__(self, lengths: np.ndarray, weights: np.ndarray | None, num_samples: int | None = None):
        self.lengths = np.asarray(lengths, dtype=np.int64)
        total_frames = int(self.lengths.sum())
        if num_samples is not None and int(num_samples) < 0:
            raise ValueError(f"num_samples must be >= 0, got {num_samples}")
        if weights is None and num_samples is None:
            self.quotas = self.lengths.copy()
        else:
            w = self.lengths.astype(np.float64) if weights is None else np.asarray(weights, dtype=np.float64)
            self.quotas = apportion(w, self.lengths, total_frames if num_samples is None else int(num_samples))
        self.total = int(self.quotas.sum())
        self._frame_off = np.concatenate([[0], np.cumsum(self.lengths)]).astype(np.int64)
        self._draw_off = np.concatenate([[0], np.cumsum(self.quotas)]).astype(np.int64)
        self._perms: dict[tuple[int, int, int, int], FeistelPermutation] = {}

    def dataset_of(self, draws: np.ndarray) -> np.ndarray:
        """Dataset position of each draw."""
        return np.searchsorted(self._draw_off, draws, side="right") - 1

    def frames(self, draws: np.ndarray, seed: int, epoch: int, shuffle: bool = True) -> np.ndarray:
        """Frame-space positions (int64) of ``draws`` (int64 in ``[0, total)``) in ``epoch``."""
        draws = np.asarray(draws, dtype=np.int64)
        d = self.dataset_of(draws)
        j = draws - self._draw_off[d]
        L = self.lengths[d]
        k = j // L
        r = j - k * L
        if shuffle and draws.size:
            key = d * (int(k.max()) + 1) + k
            order = np.argsort(key, kind="stable")
            cuts = np.flatnonzero(np.diff(key[order])) + 1
            for group in np.split(order, cuts):
                dd, kk = int(d[group[0]]), int(k[group[0]])
                perm = self._perm(int(L[group[0]]), seed, epoch, dd, kk)
                r[group] = perm(r[group])
        return self._frame_off[d] + r

    def _perm(self, n: int, seed: int, epoch: int, d: int, k: int) -> FeistelPermutation:
        key = (seed, epoch, d, k)
        p = self._perms.get(key)
        if p is None:
            if len(self._perms) > 4096:
                self._perms.clear()
            p = self._perms[key] = FeistelPermutation(n, seed, epoch, _TWEAK, d, k)
        return p
