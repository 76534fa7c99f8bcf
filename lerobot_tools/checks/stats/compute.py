"""Statistics computed the way lerobot computes them, in float64, and the tolerances stored values are held to.

What lerobot does (0.4.4, ``lerobot/datasets/compute_stats.py``; 0.3.3 for v2.1):

* per episode, per numeric feature, over the frames axis (``get_feature_stats(array, axis=0)``): ``min``, ``max``,
  ``mean``, ``std`` (population, ddof=0: 0.3.3 ``np.std``; 0.4.4 ``sqrt(max(0, E[x^2] - E[x]^2))``), ``count``
  = ``np.array([n_frames])``; 0.4.4 adds ``q01 q10 q50 q90 q99`` read off a 5000-bin histogram spanning
  ``[min - 1e-10, max + 1e-10]``, linearly interpolated inside the bin (``RunningQuantileStats``); an episode
  of fewer than 2 frames gets every quantile equal to its mean (``_compute_basic_stats``);
* globally (``aggregate_feature_stats``): min of mins, max of maxes, count-weighted mean, the pooled variance
  ``sum(c_i * (std_i^2 + (mean_i - mean)^2)) / sum(c_i)``, summed counts, and (0.4.4) each quantile as the
  count-weighted mean of the per-episode quantiles.

lrtool accumulates in float64 with a shifted, merged (Chan et al.) variance, so its values are the exact
statistics of the stored data to ~1e-12 relative. lerobot 0.4.4 computes in the data's dtype (float32 for
robot vectors) with the one-pass ``E[x^2] - E[x]^2`` formula, which loses every digit of the variance when
``|mean|`` is a few hundred times ``std`` (a stored std of 0 for a dimension whose real std is 0.05 around
1000, the hazard this module exists for); :func:`tolerance` therefore does not excuse it. The same formula
also errs *upwards*: a float32 column that is constant (``0.907`` in every frame) gets a stored std of up to
``|x| * sqrt(k * eps32)`` (``1.3e-05`` there, ``0.0036`` around ``1.745``), the square root of the rounding of
``E[x^2] - E[x]^2``; ``np.std`` of float32 data (0.3.3) leaves ``~4.5e-07``. That noise is harmless (the values
it scales sit at the mean) and is excused up to :func:`std_noise_var`, in both directions; a std stored at half the
data's or less is never excused.
"""

from __future__ import annotations

import math
import threading
from dataclasses import dataclass

import numpy as np

from lerobot_tools.checks.stats.stored import QUANTILES, FeatureStats

#: bins of lerobot 0.4.4's quantile histogram (``RunningQuantileStats(num_quantile_bins=5000)``)
QUANTILE_BINS = 5000
#: materiality of a std or mean disagreement, relative to the actual std (see :func:`tolerance`)
RTOL_STD = 1e-2
RTOL_MEAN = 1e-2


def float_eps(dtype) -> float:
    """Machine epsilon of a column's numpy dtype; integers are exact (0.0)."""
    dt = np.dtype(dtype)
    return float(np.finfo(dt).eps) if dt.kind == "f" else 0.0


def stats_eps(dtype) -> float:
    """Relative rounding a stored statistic may carry: the column's own (:func:`float_eps`), and at least float32's
    for float64 data, whose statistics writers compute or store in float32 (GR00T's stats.json holds float64
    timestamps' max as the float32 value, 4.8e-07 off at 23.5): below float32 resolution is never a finding."""
    e = float_eps(dtype)
    return max(e, float(np.finfo(np.float32).eps)) if e else e


def accumulation_eps(dtype) -> float:
    """Epsilon of the arithmetic a writer uses on a column: float32 for float16/float32 data (numpy keeps
    the dtype), float64 for float64 and integer data (``np.mean`` of integers is float64)."""
    dt = np.dtype(dtype)
    if dt.kind == "f" and dt.itemsize <= 4:
        return float(np.finfo(np.float32).eps)
    return float(np.finfo(np.float64).eps)


# ---------------------------------------------------------------------- streaming moments
@dataclass
class Moments:
    """Per-dimension count, mean, sum of squared deviations (M2), min and max of a stream of vectors.

    All arrays have shape ``(d,)`` (float64). Blocks merge with Chan, Golub & LeVeque's pairwise update, so the
    result does not depend on how the rows were batched.
    """

    n: int
    mean: np.ndarray
    m2: np.ndarray
    min: np.ndarray
    max: np.ndarray

    @classmethod
    def of(cls, x: np.ndarray) -> "Moments":
        """Moments of the rows of ``x`` (shape ``(n, d)``, n >= 1, any real dtype)."""
        starts = np.zeros(1, dtype=np.int64)
        (m,) = segment_moments(x, starts, np.array([len(x)], dtype=np.int64))
        return m

    def merge(self, other: "Moments") -> None:
        """Add ``other``'s rows to these (in place)."""
        if other.n == 0:
            return
        if self.n == 0:
            self.n, self.mean, self.m2, self.min, self.max = other.n, other.mean, other.m2, other.min, other.max
            return
        n = self.n + other.n
        delta = other.mean - self.mean
        self.mean = self.mean + delta * (other.n / n)
        self.m2 = self.m2 + other.m2 + delta * delta * (self.n * other.n / n)
        self.min = np.minimum(self.min, other.min)
        self.max = np.maximum(self.max, other.max)
        self.n = n

    def std(self, ddof: int = 0) -> np.ndarray:
        """Standard deviation (population for ``ddof=0``, lerobot's convention)."""
        if self.n - ddof <= 0:
            return np.zeros_like(self.mean)
        return np.sqrt(np.maximum(self.m2, 0.0) / (self.n - ddof))

    def as_stats(self) -> FeatureStats:
        """``{min, max, mean, std, count}`` as lerobot stores them."""
        return {"min": self.min.copy(), "max": self.max.copy(), "mean": self.mean.copy(), "std": self.std(),
                "count": np.array([self.n], dtype=np.int64)}


#: wide rows: a pairwise sum halves the rows in the data's dtype until at most this many are left, which are summed
#: in float64 (see :func:`segment_arrays`)
PAIRWISE_ROWS = 64
#: bytes of a wide run processed at a time (each of the two scratch buffers holds this much)
SPAN_BYTES = 4 * 2**20


def segment_arrays(x: np.ndarray, starts: np.ndarray, lens: np.ndarray) -> tuple[np.ndarray, ...]:
    """Per run ``x[starts[i] : starts[i] + lens[i]]`` (runs back to back, covering ``x``, shape ``(n, d)``):
    ``(count, mean, m2, min, max)``, each ``(runs, d)`` float64 (count ``(runs,)`` int64).

    Each run is shifted by its first row (the deviations stay small, so squaring them loses nothing material) and
    the sum and sum of squares of the deviations give mean and M2. Float16/float32 data is shifted and squared in
    float32 (numpy keeps the dtype) and summed into float64; other dtypes are converted to float64 first. The
    result agrees with a float64 computation to about 1e-7 of the std (``tests/checks/test_stats.py`` holds it to a
    numpy float64 reference); the passes are vectorised and allocate no per-run temporaries:

    * wide rows (``d >= 64``, or few runs): per run, ``min`` / ``max`` along the frames axis, the deviations and
      their squares into reused scratch buffers (:data:`SPAN_BYTES` at a time), each summed pairwise in the
      data's dtype down to :data:`PAIRWISE_ROWS` rows and in float64 from there (:func:`_pairwise_sum`; summing
      every row into float64 costs a conversion per value, about three times as much);
    * narrow rows with many runs: the batch is transposed once so that every run of every dimension is contiguous,
      then ``ufunc.reduceat`` along it gives min, max and the float64 sums (``reduceat`` down the rows of a narrow
      array walks them one run and one column at a time, about twice as slow).
    """
    if x.dtype.kind == "f" and x.dtype.itemsize <= 4:
        work = x if x.dtype == np.float32 else x.astype(np.float32)
    else:
        work = x.astype(np.float64, copy=False)
    starts = np.asarray(starts, dtype=np.int64)
    lens = np.asarray(lens, dtype=np.int64)
    k = len(starts)
    d = work.shape[1]
    if k > 16 and d < 64:
        mins, maxs, shift, s, ss = _narrow_runs(work, starts, lens)
    else:
        mins, maxs, shift, s, ss = _wide_runs(work, starts, lens)
    n = lens.astype(np.float64)[:, None]
    mean_dev = s / n
    m2 = np.maximum(ss - s * mean_dev, 0.0)
    return (lens.astype(np.int64), shift.astype(np.float64) + mean_dev, m2, mins.astype(np.float64),
            maxs.astype(np.float64))


def _narrow_runs(work: np.ndarray, starts: np.ndarray, lens: np.ndarray) -> tuple[np.ndarray, ...]:
    """:func:`segment_arrays` for narrow rows: ``(min, max, shift, sum, sum of squares)`` of the deviations,
    ``(runs, d)``, computed on the transposed batch with ``reduceat`` along contiguous rows."""
    t = work.T.copy(order="C")  # (d, n), each run of each dimension contiguous; a copy: it is modified below
    mins = np.minimum.reduceat(t, starts, axis=1).T
    maxs = np.maximum.reduceat(t, starts, axis=1).T
    shift_t = t[:, starts]
    np.subtract(t, np.repeat(shift_t, lens, axis=1), out=t)
    s = np.add.reduceat(t, starts, axis=1, dtype=np.float64).T
    np.multiply(t, t, out=t)
    ss = np.add.reduceat(t, starts, axis=1, dtype=np.float64).T
    return mins, maxs, shift_t.T, s, ss


def _wide_runs(work: np.ndarray, starts: np.ndarray, lens: np.ndarray) -> tuple[np.ndarray, ...]:
    """:func:`segment_arrays` for wide rows: one run (at most :data:`SPAN_BYTES` of it) at a time, the
    deviations and their squares in reused buffers, summed pairwise (see there)."""
    k, d = len(starts), work.shape[1]
    mins = np.empty((k, d), dtype=work.dtype)
    maxs = np.empty((k, d), dtype=work.dtype)
    shift = np.empty((k, d), dtype=work.dtype)
    s = np.zeros((k, d), dtype=np.float64)
    ss = np.zeros((k, d), dtype=np.float64)
    span = max(PAIRWISE_ROWS, SPAN_BYTES // (d * work.dtype.itemsize))
    dev_buf, sq_buf = _scratch(min(span, int(lens.max(initial=0))), d, work.dtype)
    for i, (a, n) in enumerate(zip(starts.tolist(), lens.tolist())):
        seg = work[a:a + n]
        np.amin(seg, axis=0, out=mins[i])
        np.amax(seg, axis=0, out=maxs[i])
        shift[i] = seg[0]
        for b in range(0, n, span):
            part = seg[b:b + span]
            dev, sq = dev_buf[:len(part)], sq_buf[:len(part)]
            np.subtract(part, shift[i], out=dev)
            np.multiply(dev, dev, out=sq)
            s[i] += _pairwise_sum(dev)
            ss[i] += _pairwise_sum(sq)
    return mins, maxs, shift, s, ss


_SCRATCH = threading.local()
#: feature shapes whose scratch buffers :func:`_scratch` keeps (each at most 2 x :data:`SPAN_BYTES`)
SCRATCH_KEYS = 8


def _scratch(rows: int, d: int, dtype: np.dtype) -> tuple[np.ndarray, np.ndarray]:
    """Two ``(rows, d)`` buffers of ``dtype``, kept per thread and per ``(d, dtype)`` (a batch holds several
    features) and reused from one record batch to the next: a fresh multi-megabyte array costs a page fault per
    4 KiB on first touch. At most :data:`SCRATCH_KEYS` shapes are kept."""
    key = (d, np.dtype(dtype).str)
    cache = getattr(_SCRATCH, "bufs", None)
    if cache is None:
        cache = _SCRATCH.bufs = {}
    bufs = cache.get(key)
    if bufs is None or len(bufs[0]) < rows:
        if key not in cache and len(cache) >= SCRATCH_KEYS:
            cache.pop(next(iter(cache)))
        bufs = cache[key] = (np.empty((rows, d), dtype=dtype), np.empty((rows, d), dtype=dtype))
    return bufs[0][:rows], bufs[1][:rows]


def _pairwise_sum(a: np.ndarray) -> np.ndarray:
    """Column sums of ``a`` (``(n, d)``, overwritten) in float64: the second half of the rows is added onto the
    first in the data's dtype until at most :data:`PAIRWISE_ROWS` rows are left (each value goes through about
    ``log2(n / PAIRWISE_ROWS)`` additions of partial sums of similar size), then those rows are summed in float64."""
    n = len(a)
    out = np.zeros(a.shape[1], dtype=np.float64)
    while n > PAIRWISE_ROWS:
        h = n // 2
        if n % 2:
            out += a[n - 1]
        np.add(a[:h], a[h:2 * h], out=a[:h])
        n = h
    out += a[:n].sum(axis=0, dtype=np.float64)
    return out


def segment_moments(x: np.ndarray, starts: np.ndarray, lens: np.ndarray) -> list[Moments]:
    """:func:`segment_arrays` as one :class:`Moments` per run."""
    cnt, mean, m2, mn, mx = segment_arrays(x, starts, lens)
    return [Moments(int(cnt[i]), mean[i], m2[i], mn[i], mx[i]) for i in range(len(cnt))]


def merge_arrays(n: np.ndarray, mean: np.ndarray, m2: np.ndarray, mn: np.ndarray, mx: np.ndarray) -> Moments:
    """The :class:`Moments` of several disjoint parts given as arrays (``n`` (k,), the others (k, d))."""
    tot = float(n.sum())
    w = n.astype(np.float64)[:, None]
    gmean = (mean * w).sum(axis=0) / tot
    gm2 = (m2 + w * (mean - gmean) ** 2).sum(axis=0)
    return Moments(int(tot), gmean, gm2, mn.min(axis=0), mx.max(axis=0))


def screen(stored: dict[str, np.ndarray], n: np.ndarray, mean: np.ndarray, m2: np.ndarray, mn: np.ndarray,
           mx: np.ndarray, storage_dtype) -> np.ndarray:
    """Vectorised :func:`compare` without quantiles: per row (k rows, stored arrays ``(k, d)``, NaN where not
    stored), True when min/max/mean/std all agree within :func:`tolerance`. Rows that fail go through
    :func:`compare` one by one for the details."""
    scale = np.maximum(np.abs(mn), np.abs(mx))
    e_s = stats_eps(storage_dtype)
    e_a = accumulation_eps(storage_dtype)
    nn = n.astype(np.float64)[:, None]
    std = np.sqrt(np.maximum(m2, 0.0) / nn)
    std_s = np.sqrt(np.maximum(m2, 0.0) / np.maximum(nn - 1, 1))
    round_s = e_s * scale + 1e-12
    ok = np.ones(len(n), dtype=bool)
    with np.errstate(invalid="ignore"):
        if "min" in stored:
            ok &= np.all(np.abs(stored["min"] - mn) <= round_s, axis=1)
        if "max" in stored:
            ok &= np.all(np.abs(stored["max"] - mx) <= round_s, axis=1)
        if "mean" in stored:
            tol = RTOL_MEAN * std + 16.0 * np.sqrt(nn) * e_a * scale + round_s
            ok &= np.all(np.abs(stored["mean"] - mean) <= tol, axis=1)
        if "std" in stored:
            tol = RTOL_STD * std + round_s
            v = stored["std"]
            ok &= np.all((np.abs(v - std) <= tol) | (np.abs(v - std_s) <= tol + RTOL_STD * (std_s - std))
                         | std_within_noise(v, std, std_noise_var(scale, nn, storage_dtype)), axis=1)
    return ok


def rank_counts(x: np.ndarray, starts: np.ndarray, lens: np.ndarray, below: np.ndarray,
                at_most: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per run and dimension: how many values are ``< below`` and ``<= at_most``.

    ``below`` / ``at_most`` have shape ``(runs, q, d)`` (one threshold vector per run and quantile); returns
    two int64 arrays of that shape.
    """
    k, q, d = below.shape
    lo = np.zeros((k, q, d), dtype=np.int64)
    hi = np.zeros((k, q, d), dtype=np.int64)
    for i, (s, n) in enumerate(zip(starts.tolist(), lens.tolist())):
        seg = x[s:s + n]
        for j in range(q):
            lo[i, j] = np.count_nonzero(seg < below[i, j].astype(seg.dtype, copy=False), axis=0)
            hi[i, j] = np.count_nonzero(seg <= at_most[i, j].astype(seg.dtype, copy=False), axis=0)
    return lo, hi


# ---------------------------------------------------------------------- lerobot's computations
def histogram_quantiles(x: np.ndarray, probs: list[float]) -> np.ndarray:
    """Quantiles of the columns of ``x`` (``(n, d)``, n >= 2) as lerobot 0.4.4 reads them off a single-update
    ``RunningQuantileStats``: a 5000-bin histogram over ``[min - 1e-10, max + 1e-10]`` per dimension, the bin where
    the cumulative count reaches ``p * n``, linear interpolation inside it. Returns ``(len(probs), d)`` float64."""
    x = np.asarray(x, dtype=np.float64)
    n, d = x.shape
    out = np.empty((len(probs), d), dtype=np.float64)
    for j in range(d):
        col = x[:, j]
        edges = np.linspace(col.min() - 1e-10, col.max() + 1e-10, QUANTILE_BINS + 1)
        hist, _ = np.histogram(col, bins=edges)
        cumsum = np.cumsum(hist)
        for i, p in enumerate(probs):
            target = p * n
            idx = int(np.searchsorted(cumsum, target))
            if idx == 0:
                out[i, j] = edges[0]
            elif idx >= len(cumsum):
                out[i, j] = edges[-1]
            else:
                before = cumsum[idx - 1]
                in_bin = cumsum[idx] - before
                out[i, j] = edges[idx] if in_bin == 0 else edges[idx] + (target - before) / in_bin * (edges[idx + 1] - edges[idx])
    return out


def episode_stats(x: np.ndarray, shape: tuple[int, ...], quantiles: list[str]) -> FeatureStats:
    """One episode's statistics of one numeric feature, with lerobot 0.4.4's conventions, in float64.

    Args:
        x: the episode's values, ``(n, d)`` (one row per frame, the feature flattened), n >= 1.
        shape: the shape to give every statistic but ``count`` (the stored/declared statistics shape).
        quantiles: the quantile names to compute (``q01``...; empty for a v2.1-style entry).

    Returns:
        ``{min, max, mean, std, count, *quantiles}``; ``count`` is ``[n]``; with n < 2 every quantile equals the
        mean (``_compute_basic_stats``).
    """
    m = Moments.of(x)
    out = m.as_stats()
    if quantiles:
        if m.n < 2:
            qs = np.repeat(m.mean[None, :], len(quantiles), axis=0)
        else:
            qs = histogram_quantiles(x, [QUANTILES[q] for q in quantiles])
        for name, row in zip(quantiles, qs):
            out[name] = row
    return {k: (v if k == "count" else v.reshape(shape)) for k, v in out.items()}


def aggregate_feature_stats(entries: list[FeatureStats]) -> FeatureStats:
    """lerobot 0.4.4 ``aggregate_feature_stats`` in float64: min of mins, max of maxes, count-weighted mean,
    pooled variance, summed count, count-weighted mean of each quantile every entry has.

    Raises:
        ValueError: ``entries`` is empty or lacks a base statistic.
    """
    if not entries:
        raise ValueError("no statistics to aggregate")
    means = np.stack([np.asarray(s["mean"], dtype=np.float64) for s in entries])
    variances = np.stack([np.asarray(s["std"], dtype=np.float64) ** 2 for s in entries])
    counts = np.stack([np.asarray(s["count"], dtype=np.float64) for s in entries])
    total = counts.sum(axis=0)
    while counts.ndim < means.ndim:
        counts = np.expand_dims(counts, axis=-1)
    mean = (means * counts).sum(axis=0) / total  # total has shape (1,): it broadcasts, as in lerobot
    var = ((variances + (means - mean) ** 2) * counts).sum(axis=0) / total
    out: FeatureStats = {
        "min": np.min(np.stack([np.asarray(s["min"], dtype=np.float64) for s in entries]), axis=0),
        "max": np.max(np.stack([np.asarray(s["max"], dtype=np.float64) for s in entries]), axis=0),
        "mean": mean,
        "std": np.sqrt(var),
        "count": total.astype(np.int64),
    }
    for q in QUANTILES:
        if all(q in s for s in entries):
            vals = np.stack([np.asarray(s[q], dtype=np.float64) for s in entries])
            out[q] = (vals * counts).sum(axis=0) / total
    return out


class RunningAggregate:
    """:func:`aggregate_feature_stats` over a stream of per-episode entries, in O(feature size) memory.

    Equal to the batch formula (the pooled variance is exact): min/max envelopes, Chan-merged count/mean/M2
    (``M2_i = count_i * std_i^2``), and count-weighted quantile sums.
    """

    def __init__(self) -> None:
        self.moments: Moments | None = None
        self.shape: tuple[int, ...] | None = None
        self.qsum: dict[str, np.ndarray] = {}
        self.qmissing: set[str] = set()

    def add(self, entry: FeatureStats, count: int | None = None) -> None:
        """Add one episode's entry (base statistics required); ``count`` overrides its stored count."""
        mean = np.asarray(entry["mean"], dtype=np.float64)
        c = int(count if count is not None else int(np.asarray(entry["count"]).reshape(-1)[0]))
        if c <= 0:
            return
        std = np.asarray(entry["std"], dtype=np.float64)
        m = Moments(c, mean.reshape(-1), (c * std * std).reshape(-1),
                    np.asarray(entry["min"], dtype=np.float64).reshape(-1),
                    np.asarray(entry["max"], dtype=np.float64).reshape(-1))
        if self.moments is None:
            self.moments, self.shape = m, mean.shape
            self.qmissing = {q for q in QUANTILES if q not in entry}
        else:
            self.moments.merge(m)
        for q in QUANTILES:
            if q in self.qmissing:
                continue
            if q not in entry:
                self.qmissing.add(q)
                self.qsum.pop(q, None)
                continue
            v = c * np.asarray(entry[q], dtype=np.float64).reshape(-1)
            self.qsum[q] = self.qsum[q] + v if q in self.qsum else v

    def add_block(self, cols, rows: np.ndarray, counts: np.ndarray | None = None) -> None:
        """Add the ``rows`` (bool mask) of a block of entries (stat -> object with ``values`` of shape
        ``(k, *shape)``, as :class:`~lerobot_tools.checks.stats.blocks.StatColumn`); ``counts`` (k,) overrides
        the stored counts. Equal to adding the rows one by one (the block is pre-aggregated exactly)."""
        idx = np.flatnonzero(rows)
        if not len(idx):
            return
        c = (counts[idx] if counts is not None else cols["count"].values[idx, 0]).astype(np.float64)
        keep = c > 0
        idx, c = idx[keep], c[keep]
        if not len(idx):
            return
        shape = cols["mean"].values.shape[1:]
        k = len(idx)
        mean = cols["mean"].values[idx].reshape(k, -1)
        std = cols["std"].values[idx].reshape(k, -1)
        n = c.sum()
        bmean = (mean * c[:, None]).sum(axis=0) / n
        m2 = ((std * std + (mean - bmean) ** 2) * c[:, None]).sum(axis=0)
        entry = {
            "min": cols["min"].values[idx].reshape(k, -1).min(axis=0).reshape(shape),
            "max": cols["max"].values[idx].reshape(k, -1).max(axis=0).reshape(shape),
            "mean": bmean.reshape(shape),
            "std": np.sqrt(m2 / n).reshape(shape),
            "count": np.array([int(n)]),
        }
        for q in QUANTILES:
            if q in cols:
                entry[q] = ((cols[q].values[idx].reshape(k, -1) * c[:, None]).sum(axis=0) / n).reshape(shape)
        self.add(entry)

    def result(self) -> FeatureStats | None:
        """The aggregate (shaped like the entries), or None when nothing was added."""
        m = self.moments
        if m is None or self.shape is None:
            return None
        out = m.as_stats()
        for q, v in self.qsum.items():
            out[q] = v / m.n
        return {k: (v if k == "count" else v.reshape(self.shape)) for k, v in out.items()}


# ---------------------------------------------------------------------- tolerances
def std_noise_var(scale: np.ndarray, n: int | np.ndarray, dtype) -> np.ndarray:
    """Variance that a writer's rounding can add to a stored std (same shape as ``scale``).

    lerobot 0.4.4 stores ``sqrt(max(0, mean(x**2) - mean(x)**2))`` computed in the data's dtype
    (``RunningQuantileStats.get_statistics``, ``lerobot/datasets/compute_stats.py``): the two float32 means of
    n values err by a few ulps of ``x**2`` each (numpy sums pairwise: ``O(log2 n)`` ulps), so the stored variance
    may exceed the true one by up to ``16 * (log2 n + 2) * eps_acc * scale**2`` (``eps_acc``: float32 for
    float16/float32 data, float64 otherwise, :func:`accumulation_eps`). A constant float32 column of magnitude
    1.745 over 386 frames was stored with std 0.0036 (variance 1.3e-05, 36 ulps of 3.05); the bound there is
    1.1e-04.

    Args:
        scale: ``max(|min|, |max|)`` per dimension.
        n: frames the statistic is over (per row or a scalar).
        dtype: numpy dtype (or name) of the stored column; an unknown one counts as float32.
    """
    try:
        e_a = accumulation_eps(dtype)
    except TypeError:
        e_a = float(np.finfo(np.float32).eps)
    logn = np.log2(np.maximum(np.asarray(n, dtype=np.float64), 1.0))
    return 16.0 * (logn + 2.0) * e_a * np.square(scale)


def std_bounds(spread: np.ndarray, least: np.ndarray, noise_var: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(upper, lower)``: the largest and smallest std a writer can store for data whose std is at most
    ``spread`` and at least ``least``, allowing its rounding noise (``noise_var``, :func:`std_noise_var`) as
    :func:`std_within_noise` does: up to ``sqrt(spread**2 + noise_var)`` but below twice ``spread`` (any noise when
    the data is constant), down to ``sqrt(least**2 - noise_var)`` but above half ``least``."""
    noise_var = np.broadcast_to(noise_var, np.shape(spread))
    constant = spread <= np.sqrt(noise_var) * 1e-3
    upper = np.where(constant, np.maximum(np.sqrt(noise_var), spread),
                     np.minimum(np.sqrt(np.square(spread) + noise_var), 2 * spread))
    lower = np.maximum(np.sqrt(np.maximum(np.square(least) - noise_var, 0.0)), least / 2)
    return upper, lower


def std_within_noise(stored: np.ndarray, actual: np.ndarray, noise_var: np.ndarray) -> np.ndarray:
    """Elementwise: a stored std that rounding noise explains and that does not change MEAN_STD materially:
    ``|stored**2 - actual**2| <= noise_var`` (:func:`std_noise_var`), and within a factor of 2 of the data's std
    -- or any such noise when the data is constant (``actual`` negligible next to the noise): its values all sit
    at the mean, so the std scales nothing (G009 reports the hazard of that dimension). A std stored at half or
    twice the real one or beyond is reported whatever its cause: MEAN_STD then stretches or squeezes that
    dimension by 2x or more (lerobot 0.4's cancellation around ``|mean| >> std`` does exactly that)."""
    with np.errstate(invalid="ignore", over="ignore"):
        constant = actual <= np.sqrt(noise_var) * 1e-3
        return ((np.abs(np.square(stored) - np.square(actual)) <= noise_var) & (stored > actual / 2)
                & (constant | (stored < 2 * actual)))


@dataclass(frozen=True)
class Tolerance:
    """How far a stored statistic may be from the value lrtool computes from the data (per dimension).

    Attributes:
        minmax: for ``min`` / ``max``: the values come from the same data, so only the rounding of a float64
            source to the stored dtype (``eps_storage * scale``).
        mean: ``RTOL_MEAN * std + 16 * sqrt(n) * eps_acc * scale + eps_storage * scale``: material (1 % of a std,
            a shift of 0.01 in MEAN_STD-normalised units) or beyond what a float32 accumulation of n values
            can err by.
        std: ``RTOL_STD * std + eps_storage * scale``: 1 % of the std, or the float32 rounding of the data; a
            stored std is compared with both the population and the sample (ddof=1) std, and accepted if
            either is within tolerance (lerobot writes the population std; some tools write the sample std).
        std_var: a stored std is also accepted when its square is within this of the data's variance and it is
            above half the data's std (:func:`std_noise_var`: the rounding of lerobot's one-pass formula).
        bin: quantile slack: one bin of lerobot's 5000-bin histogram plus the storage rounding.
    """

    minmax: np.ndarray
    mean: np.ndarray
    std: np.ndarray
    bin: np.ndarray
    std_var: np.ndarray


def tolerance(m: Moments, storage_dtype, stored_min: np.ndarray | None = None,
              stored_max: np.ndarray | None = None) -> Tolerance:
    """The :class:`Tolerance` for comparing stored statistics with the actual moments ``m`` of a column whose
    values are stored as ``storage_dtype``."""
    scale = np.maximum(np.abs(m.min), np.abs(m.max))
    e_s = stats_eps(storage_dtype)
    e_a = accumulation_eps(storage_dtype)
    std = m.std()
    round_s = e_s * scale + 1e-12
    lo = m.min if stored_min is None else np.asarray(stored_min, dtype=np.float64).reshape(-1)
    hi = m.max if stored_max is None else np.asarray(stored_max, dtype=np.float64).reshape(-1)
    width = np.abs(hi - lo) / QUANTILE_BINS
    return Tolerance(
        minmax=round_s,
        mean=RTOL_MEAN * std + 16.0 * math.sqrt(max(m.n, 1)) * e_a * scale + round_s,
        std=RTOL_STD * std + round_s,
        bin=1.01 * width + round_s,
        std_var=std_noise_var(scale, m.n, storage_dtype),
    )


@dataclass
class Disagreement:
    """One stored statistic of one dimension that is not what the data gives.

    Attributes:
        stat: ``min`` | ``max`` | ``mean`` | ``std`` | a quantile name.
        dim: flat index into the statistic (``action[2]`` -> 2).
        stored: the stored value.
        actual: the value from the data (for a quantile: the empirical rank of the stored value, in [0, 1]).
        gross: the disagreement changes MEAN_STD/MIN_MAX-normalised values by a factor of 2 or more (std off by
            2x either way, mean off by more than one std, min/max off by more than the range).
    """

    stat: str
    dim: int
    stored: float
    actual: float
    gross: bool = False

    def text(self, feature: str) -> str:
        if self.stat in QUANTILES:
            return (f"{self.stat}[{self.dim}] stored {self.stored:.6g} sits at rank {self.actual:.3f} of the data "
                    f"(expected {QUANTILES[self.stat]:.2f})")
        return f"{self.stat}[{self.dim}] stored {self.stored:.6g}, data {self.actual:.6g}"


def compare(stored: FeatureStats, m: Moments, storage_dtype, *, quantile_ranks: dict[str, tuple] | None = None) -> list[Disagreement]:
    """Every (statistic, dimension) of ``stored`` that disagrees with the actual moments ``m`` beyond
    :func:`tolerance` (``count`` is not compared: the count check compares it with the episode length).

    Args:
        stored: the stored entry (arrays of the feature's statistics shape; flattened here).
        m: the moments of the data.
        storage_dtype: numpy dtype of the stored column.
        quantile_ranks: quantile name -> ``(lo, hi, n)``: how many values lie below ``stored - bin`` and at or
            below ``stored + bin`` (:func:`rank_counts`); a stored quantile is accepted when
            ``lo <= ceil(p n)`` and ``hi >= floor(p n)``, which holds for lerobot's histogram quantiles and for
            numpy's interpolated ones.
    """
    tol = tolerance(m, storage_dtype, stored.get("min"), stored.get("max"))
    out: list[Disagreement] = []
    std_pop = m.std()
    std_smp = m.std(ddof=1) if m.n > 1 else std_pop
    rng = m.max - m.min

    def flat(stat: str) -> np.ndarray | None:
        v = stored.get(stat)
        return None if v is None else np.asarray(v, dtype=np.float64).reshape(-1)

    for stat, actual in (("min", m.min), ("max", m.max)):
        v = flat(stat)
        if v is None or v.shape != actual.shape:
            continue
        for j in np.flatnonzero(np.abs(v - actual) > tol.minmax):
            out.append(Disagreement(stat, int(j), float(v[j]), float(actual[j]),
                                    gross=bool(abs(v[j] - actual[j]) > max(rng[j], 0.0) and rng[j] > 0)))
    v = flat("mean")
    if v is not None and v.shape == m.mean.shape:
        for j in np.flatnonzero(np.abs(v - m.mean) > tol.mean):
            out.append(Disagreement("mean", int(j), float(v[j]), float(m.mean[j]),
                                    gross=bool(abs(v[j] - m.mean[j]) > std_pop[j] and std_pop[j] > 0)))
    v = flat("std")
    if v is not None and v.shape == std_pop.shape:
        bad = (np.abs(v - std_pop) > tol.std) & (np.abs(v - std_smp) > tol.std + RTOL_STD * (std_smp - std_pop)) \
            & ~std_within_noise(v, std_pop, tol.std_var)
        for j in np.flatnonzero(bad):
            a = std_pop[j]
            gross = bool(a > 0 and (v[j] <= a / 2 or v[j] >= 2 * a))
            out.append(Disagreement("std", int(j), float(v[j]), float(a), gross=gross))
    for q, (lo, hi, n) in (quantile_ranks or {}).items():
        v = flat(q)
        if v is None:
            continue
        p = QUANTILES[q]
        lo = np.asarray(lo).reshape(-1)
        hi = np.asarray(hi).reshape(-1)
        bad = (lo > math.ceil(p * n)) | (hi < math.floor(p * n))
        for j in np.flatnonzero(bad):
            rank = float(lo[j] if lo[j] > math.ceil(p * n) else hi[j]) / max(n, 1)
            out.append(Disagreement(q, int(j), float(v[j]), rank))
    return out
