"""Stage 1 of the content checks: one episode's numeric columns summarised in one pass, while ``--deep`` streams.

:class:`ContentBuilder` receives the record batches :func:`lerobot_tools.checks.deep.scan_file` already reads,
with the runs of equal ``episode_index``; it keeps the rows of the episode being read (its content columns
only, as float64) and, when the episode ends, replaces them by an :class:`EpisodeSummary` of a few numbers per
dimension. Memory: one episode's content columns (``frames x dims x 8`` bytes; 2.4 MB for 10,000 frames of
30 dimensions) plus the summaries (about ``30 x dims`` bytes per episode, :meth:`EpisodeSummary.nbytes`).

What is summarised (per dimension unless said otherwise; the decisions are taken in stage 2,
:mod:`lerobot_tools.checks.content.decide`, against the whole dataset):

* non-finite values (count, first frame), range (``max - min``), min and max;
* the step scale (the larger of the 95th percentile of ``|x[t+1] - x[t]|`` and the mean of the non-zero steps:
  a gripper that jumps between two values has a scale of its full jump) and the largest step, with its frame;
* the still head and tail: frames from the start (end) whose every dimension stays within
  ``idle_rel x range`` of the first (last) frame;
* the longest run at the episode's minimum and at its maximum, outside the still head and tail;
* the action/state alignment: the correlation of the action's velocity at ``t`` with the state's at ``t + k``
  for every shift ``k`` within +- ``lag_max_frames`` (one FFT per episode);
* a duplicate signature (:mod:`lerobot_tools.checks.content.signature`).

Columns holding NaN or infinite values are summarised for Q005 only (their other numbers are NaN).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from lerobot_tools.checks.content.signature import Signature, signature_of

#: points of the still-head/tail and run computations are float64
_F = np.float64


@dataclass
class ContentRequest:
    """What :class:`ContentBuilder` reads (plain data, JSON-serialisable).

    Attributes:
        columns: feature -> ``(dims, role)`` with role ``"action"`` or ``"state"``, in column order of the
            summaries (a feature of ``d`` dimensions takes ``d`` consecutive summary columns).
        lag_pairs: ``[action column, state column]`` summary-column pairs compared for the lag (same joint).
        idle_rel: see :class:`~lerobot_tools.checks.content.options.ContentOptions`.
        lag_max_frames: shifts searched for the lag.
    """

    columns: dict[str, tuple[int, str]]
    lag_pairs: list[tuple[int, int]]
    idle_rel: float
    lag_max_frames: int

    @property
    def dims(self) -> int:
        return sum(d for d, _ in self.columns.values())

    def roles(self) -> np.ndarray:
        """``(D,)`` array of the role of each summary column (``"action"``/``"state"``)."""
        return np.array([r for d, r in self.columns.values() for _ in range(d)], dtype=object)

    def to_dict(self) -> dict:
        return {"columns": {k: [d, r] for k, (d, r) in self.columns.items()},
                "lag_pairs": [list(p) for p in self.lag_pairs], "idle_rel": self.idle_rel,
                "lag_max_frames": self.lag_max_frames}

    @classmethod
    def from_dict(cls, d: dict) -> "ContentRequest":
        """Inverse of :meth:`to_dict`. Raises KeyError, TypeError, ValueError for anything else."""
        return cls({str(k): (int(v[0]), str(v[1])) for k, v in d["columns"].items()},
                   [(int(a), int(b)) for a, b in d["lag_pairs"]], float(d["idle_rel"]), int(d["lag_max_frames"]))


#: the per-dimension arrays of a summary, in serialisation order (float32 unless named in :data:`_INT_FIELDS`)
_ARRAYS = ("bad", "rng", "vmin", "vmax", "step_scale", "max_step", "max_step_at", "run_min", "run_max")
_INT_FIELDS = ("bad", "max_step_at", "run_min", "run_max")


@dataclass
class EpisodeSummary:
    """One episode's content, a few numbers per dimension (see module docstring). Arrays are ``(D,)``.

    Attributes:
        episode: episode index. n: frames.
        bad: non-finite values per dimension (int32); first_bad: first frame holding one (-1: none).
        rng, vmin, vmax: range, minimum, maximum (NaN for a column with non-finite values).
        step_scale, max_step, max_step_at: robust step scale, largest step, and the frame it lands on (int32).
        head, tail: still frames at the start / end (the whole episode counts in ``head`` when nothing moves).
        run_min, run_max: longest run at the episode's minimum / maximum outside the still head and tail (int32).
        lag: the action/state velocity correlation at each shift ``-K..K`` (float16 ``(2K+1,)``; None: no matched
            pair moves, or the episode is too short).
        signature: the duplicate signature.
    """

    episode: int
    n: int
    bad: np.ndarray
    first_bad: int
    rng: np.ndarray
    vmin: np.ndarray
    vmax: np.ndarray
    step_scale: np.ndarray
    max_step: np.ndarray
    max_step_at: np.ndarray
    head: int
    tail: int
    run_min: np.ndarray
    run_max: np.ndarray
    lag: np.ndarray | None
    signature: Signature

    def nbytes(self) -> int:
        lag = self.lag.nbytes if self.lag is not None else 0
        return sum(getattr(self, a).nbytes for a in _ARRAYS) + self.signature.nbytes() + lag + 64

    def to_dict(self) -> dict:
        d = {a: getattr(self, a).tolist() for a in _ARRAYS}
        d.update(episode=self.episode, n=self.n, first_bad=self.first_bad, head=self.head, tail=self.tail,
                 lag=None if self.lag is None else self.lag.astype(np.float32).tolist(),
                 signature=self.signature.to_dict())
        return d

    @classmethod
    def from_dict(cls, d: dict) -> "EpisodeSummary":
        """Inverse of :meth:`to_dict` (NaN survives as JSON ``NaN``). Raises KeyError/TypeError/ValueError."""
        arrays = {a: np.asarray(d[a], dtype=np.int32 if a in _INT_FIELDS else np.float32) for a in _ARRAYS}
        return cls(episode=int(d["episode"]), n=int(d["n"]), first_bad=int(d["first_bad"]), head=int(d["head"]),
                   tail=int(d["tail"]), lag=None if d["lag"] is None else np.asarray(d["lag"], dtype=np.float16),
                   signature=Signature.from_dict(d["signature"]), **arrays)


def summarise(episode: int, x: np.ndarray, request: ContentRequest) -> EpisodeSummary:
    """Stage 1 for one episode.

    Args:
        episode: its index.
        x: ``(n, D)`` float64, the content columns in :attr:`ContentRequest.columns` order, ``n >= 1``.
        request: the request (idle tolerance, lag pairs and range).

    Returns:
        The :class:`EpisodeSummary`.
    """
    n, dims = x.shape
    finite = np.isfinite(x)
    bad = (~finite).sum(axis=0).astype(np.int32)
    first_bad = -1
    if bad.any():
        first_bad = int(np.flatnonzero((~finite).any(axis=1))[0])
        x = np.where(finite, x, np.nan)
    ok = bad == 0
    with np.errstate(invalid="ignore"):
        vmin = x.min(axis=0)
        vmax = x.max(axis=0)
    rng = vmax - vmin
    rng[~ok] = np.nan
    if n >= 2:
        steps = np.abs(np.diff(x, axis=0))
        p95 = np.quantile(steps, 0.95, axis=0, method="higher") if ok.all() else _nan_quantile(steps, ok)
        nonzero = (steps > 0).sum(axis=0)
        with np.errstate(invalid="ignore", divide="ignore"):
            mean_nz = np.where(nonzero > 0, steps.sum(axis=0) / np.maximum(nonzero, 1), 0.0)
        scale = np.maximum(p95, mean_nz)
        at = np.argmax(np.where(np.isfinite(steps), steps, -1.0), axis=0)
        max_step = steps[at, np.arange(dims)]
        max_step_at = (at + 1).astype(np.int32)
    else:
        scale = np.zeros(dims)
        max_step = np.zeros(dims)
        max_step_at = np.zeros(dims, dtype=np.int32)
    scale[~ok] = np.nan
    max_step[~ok] = np.nan
    head, tail = _still_ends(x, rng, ok, request.idle_rel)
    run_min, run_max = _extreme_runs(x, vmin, vmax, ok, head, tail)
    lag = _lag(x, ok, request.lag_pairs, request.lag_max_frames)
    return EpisodeSummary(
        episode=int(episode), n=int(n), bad=bad, first_bad=first_bad, rng=rng.astype(np.float32),
        vmin=vmin.astype(np.float32), vmax=vmax.astype(np.float32), step_scale=scale.astype(np.float32),
        max_step=max_step.astype(np.float32), max_step_at=max_step_at, head=head, tail=tail,
        run_min=run_min, run_max=run_max, lag=lag, signature=signature_of(x, ok))


def _nan_quantile(steps: np.ndarray, ok: np.ndarray) -> np.ndarray:
    out = np.full(steps.shape[1], np.nan)
    if ok.any():
        out[ok] = np.quantile(steps[:, ok], 0.95, axis=0, method="higher")
    return out


def _still_ends(x: np.ndarray, rng: np.ndarray, ok: np.ndarray, rel: float) -> tuple[int, int]:
    """Still frames at the start and at the end (see module docstring); ``(n, 0)`` when nothing moves."""
    n = len(x)
    cols = ok & (rng > 0)
    if not cols.any() or n < 2:
        return n, 0
    xs = x[:, cols]
    tol = rel * rng[cols]
    moved_head = (np.abs(xs - xs[0]) > tol).any(axis=1)
    moved_tail = (np.abs(xs - xs[-1]) > tol).any(axis=1)
    first = int(np.argmax(moved_head))  # moved_head[0] is False, and some frame moves (rng > tol)
    last = n - 1 - int(np.argmax(moved_tail[::-1]))
    # frames 0 .. first-1 are still (frame first-1 is where motion starts from); likewise at the end
    return max(0, first - 1), max(0, n - 2 - last)


def _extreme_runs(x: np.ndarray, vmin: np.ndarray, vmax: np.ndarray, ok: np.ndarray, head: int,
                  tail: int) -> tuple[np.ndarray, np.ndarray]:
    """Longest run (frames) at the episode's minimum and maximum of each column, between the still head and tail."""
    n, dims = x.shape
    lo, hi = head, n - tail
    out_min = np.zeros(dims, dtype=np.int32)
    out_max = np.zeros(dims, dtype=np.int32)
    if hi - lo < 2:
        return out_min, out_max
    part = x[lo:hi]
    for out, ext in ((out_min, vmin), (out_max, vmax)):
        at = (part == ext) & ok
        out[:] = _longest_runs(at)
    return out_min, out_max


def _longest_runs(b: np.ndarray) -> np.ndarray:
    """Per column of a ``(n, D)`` bool array, the longest run of True (int32 ``(D,)``)."""
    n, dims = b.shape
    padded = np.zeros((dims, n + 2), dtype=np.int8)
    padded[:, 1:-1] = b.T
    d = np.diff(padded, axis=1)  # +1 where a run starts, -1 one past its end
    start_col, start_at = np.nonzero(d == 1)  # row-major: by column, then position, so starts and ends pair up
    _, end_at = np.nonzero(d == -1)
    out = np.zeros(dims, dtype=np.int32)
    if len(start_col):
        np.maximum.at(out, start_col, (end_at - start_at).astype(np.int32))
    return out


def _lag(x: np.ndarray, ok: np.ndarray, pairs: list[tuple[int, int]], max_lag: int) -> np.ndarray | None:
    """The correlation of the action's velocity at ``t`` with the state's at ``t + k``, for every shift ``k`` in
    ``[-max_lag, max_lag]`` (``(2 * max_lag + 1,)`` float16).

    Each moving pair's velocities are scaled to unit RMS; the correlation at ``k`` is the mean over pairs of the
    overlapping products divided by the overlap. None when no pair moves or the episode is shorter than
    ``2 * max_lag + 4`` frames.
    """
    n = len(x)
    use = [(a, s) for a, s in pairs if ok[a] and ok[s]]
    if not use or n < 2 * max_lag + 4:
        return None
    a = np.diff(x[:, [p[0] for p in use]], axis=0)
    s = np.diff(x[:, [p[1] for p in use]], axis=0)
    ra = np.sqrt((a * a).mean(axis=0))
    rs = np.sqrt((s * s).mean(axis=0))
    keep = (ra > 0) & (rs > 0)
    if not keep.any():
        return None
    a = a[:, keep] / ra[keep]
    s = s[:, keep] / rs[keep]
    m = len(a)
    size = 1 << int(np.ceil(np.log2(2 * m)))
    cc = np.fft.irfft(np.conj(np.fft.rfft(a, size, axis=0)) * np.fft.rfft(s, size, axis=0), size, axis=0).sum(axis=1)
    lags = np.arange(-max_lag, max_lag + 1)
    return np.clip(cc[lags % size] / ((m - np.abs(lags)) * a.shape[1]), -1.0, 1.0).astype(np.float16)


#: an episode whose content columns would take more than this (float64) is not summarised: it is named in
#: :attr:`ContentBuilder.too_long` (reported as not checked) so that memory stays bounded (16M values: 128 MiB)
MAX_EPISODE_VALUES = 16 * 2**20


class ContentBuilder:
    """Collects one data file's :class:`EpisodeSummary` list from its record batches (see module docstring).

    Args:
        request: the :class:`ContentRequest`.
    """

    def __init__(self, request: ContentRequest):
        self.request = request
        self.names = list(request.columns)
        self.summaries: list[EpisodeSummary] = []
        self.unusable: set[str] = set()
        self.too_long: list[int] = []
        self._episode: int | None = None
        self._parts: list[np.ndarray] = []
        self._values = 0

    def add(self, batch, run_eps: np.ndarray, starts: np.ndarray, lens: np.ndarray) -> None:
        """One record batch: ``run_eps[i]`` is the episode of rows ``starts[i] : starts[i] + lens[i]``."""
        from lerobot_tools.checks.stats.deep import as_matrix

        present = set(batch.schema.names)
        mats = []
        for name, (dims, _) in self.request.columns.items():
            m = as_matrix(batch.column(name), dims) if name in present and name not in self.unusable else None
            if m is None:
                self.unusable.add(name)
                m = np.full((batch.num_rows, dims), np.nan)
            mats.append(m)
        x = np.concatenate(mats, axis=1) if len(mats) > 1 else mats[0]
        for e, a0, n in zip(run_eps.tolist(), starts.tolist(), lens.tolist()):
            if e != self._episode:
                self._flush()
                self._episode = e
            if self._values is None:  # this episode is past the bound: its rows are dropped
                continue
            self._values += n * x.shape[1]
            if self._values > MAX_EPISODE_VALUES:
                self.too_long.append(e)
                self._parts, self._values = [], None
                continue
            self._parts.append(np.array(x[a0:a0 + n], dtype=_F))

    def _flush(self) -> None:
        if self._episode is not None and self._parts:
            x = self._parts[0] if len(self._parts) == 1 else np.concatenate(self._parts)
            self.summaries.append(summarise(self._episode, x, self.request))
        self._parts = []
        self._episode = None
        self._values = 0

    def result(self) -> list[EpisodeSummary]:
        """The summaries of the file's episodes, in row order (an episode whose rows are not contiguous appears
        once per run of rows; stage 2 leaves such episodes out, D004 reports them)."""
        self._flush()
        return self.summaries
