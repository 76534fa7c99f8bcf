"""``EpisodeShuffleStream``: an iterable dataset that reads episodes sequentially, shuffled per epoch.

Sequential reads within an episode are what video decoding and row-group reads are cheapest at
(a random frame costs about half a keyframe interval of extra decoded frames, docs/video-decoding.md#decode-cost),
while a pool of interleaved episodes keeps each batch mixed. The plan, for epoch ``e``:

1. **Episode order**: a permutation of the episodes keyed by ``(seed, e)`` (natural order if
   ``shuffle=False``).
2. **Ranks**: the frames of the episodes in that order, concatenated, are cut into ``world_size``
   contiguous ranges of equal size (+-1 frame); an episode on a boundary is split between two ranks.
   Ranks are disjoint and cover every frame.
3. **Rank sequence**: each rank keeps a pool of ``pool_size`` open episodes and repeatedly takes the next
   frame of one of them, chosen by a generator keyed by ``(seed, e, rank)``; an exhausted episode is
   replaced by the next one. Frames within an episode stay in order.
4. **DataLoader workers**: worker ``w`` of ``W`` produces batches ``w, w + W, w + 2W, ...`` of the rank
   sequence (batches of ``batch_size`` samples). The DataLoader collects worker batches round-robin, so
   the loader returns exactly the rank sequence, in order, whatever the number of workers: no duplicates,
   no gaps, and the same order with 0, 2 or 8 workers. Every worker replays the plan (integer
   bookkeeping only) and reads only its own samples.

Mixtures (a :class:`~lerobot_tools.loaders.MixtureDataset`): each epoch, dataset ``d`` contributes exactly
its weighted share ``q_d`` of ``num_samples`` frames (:func:`~lerobot_tools.loaders._weighted.apportion`)
as whole episodes taken in an order keyed by ``(seed, epoch, d)`` (cycling through all its episodes
before repeating one; the last episode is cut to fit the share), and step 1 shuffles those episode
pieces of all datasets together. Steps 2-4 are unchanged.

Resume: ``state_dict(consumed)`` records the position in the rank sequence; after ``load_state_dict``
the next iteration starts there (replaying the plan up to it costs O(position) integer steps, no I/O).
"""

from __future__ import annotations

import hashlib
from collections import deque
from typing import Any, Iterator

import numpy as np
import torch

from lerobot_tools.loaders._weighted import apportion
from lerobot_tools.loaders.sampler import dist_rank_world

__all__ = ["EpisodeShuffleStream"]

_DRAWS = 8192


class EpisodeShuffleStream(torch.utils.data.IterableDataset):
    """Iterable dataset over a map-style frame dataset: episodes shuffled per epoch, frames in order.

    Args:
        dataset: a :class:`~lerobot_tools.loaders.FrameDataset` (anything with ``episode_lengths``,
            ``episode_starts`` and ``__getitem__``; ``__getitems__`` is used for batches when present).
        batch_size: the DataLoader's ``batch_size`` (1 when the DataLoader does not batch). With another
            value every frame is still read exactly once, but batches no longer follow the rank sequence
            and a resume is not exact.
        pool_size: episodes interleaved at once per rank (>= 1); 1 = one episode after another.
        seed: the order is a pure function of ``(seed, epoch)``.
        shuffle: False keeps the natural episode order and reads one episode at a time.
        rank, world_size: this process's shard (default from ``torch.distributed``, else 0 of 1).
        drop_last: give every rank exactly ``floor(N / world_size)`` frames (DDP lock-step) by dropping
            the last ``N mod world_size`` frames of the epoch's order.
        num_samples: mixtures only: frames per epoch (default: the mixture's frame count).
        weights: mixtures only: relative weight per dataset, overriding the mixture's.

    Yields:
        the dataset's samples (dicts, see :class:`FrameDataset`); ``len(self)`` per epoch for this rank.
    """

    def __init__(self, dataset: Any, *, batch_size: int = 1, pool_size: int = 8, seed: int = 0,
                 shuffle: bool = True, rank: int | None = None, world_size: int | None = None,
                 drop_last: bool = False, num_samples: int | None = None, weights: Any = None):
        if batch_size < 1 or pool_size < 1:
            raise ValueError("batch_size and pool_size must be >= 1")
        self.dataset = dataset
        self.batch_size = int(batch_size)
        self.pool_size = int(pool_size)
        self.seed = int(seed)
        self.shuffle = bool(shuffle)
        self.drop_last = bool(drop_last)
        self.rank, self.world_size = dist_rank_world(rank, world_size)
        self._lengths = np.asarray(dataset.episode_lengths, dtype=np.int64)
        self._starts = np.asarray(getattr(dataset, "episode_starts", None)
                                  if getattr(dataset, "episode_starts", None) is not None
                                  else np.concatenate([[0], np.cumsum(self._lengths)[:-1]]), dtype=np.int64)
        self.total = int(self._lengths.sum())
        self._quotas: np.ndarray | None = None
        if getattr(dataset, "dataset_offsets", None) is not None and hasattr(dataset, "episode_offsets"):
            self._eo = np.asarray(dataset.episode_offsets, dtype=np.int64)
            per = np.add.reduceat(self._lengths, self._eo[:-1]) if len(self._lengths) else np.zeros(0, np.int64)
            if weights is None and getattr(dataset, "explicit_weights", False):
                weights = dataset.weights
            if weights is None and num_samples is None:
                self._quotas = per.astype(np.int64)
            else:
                w = per.astype(np.float64) if weights is None else np.asarray(weights, dtype=np.float64)
                self._quotas = apportion(w, per, int(per.sum()) if num_samples is None else int(num_samples))
            self.total = int(self._quotas.sum())
        elif num_samples is not None or weights is not None:
            raise ValueError("num_samples and weights need a MixtureDataset")
        self.epoch = 0
        self._start = 0
        self._yielded = 0
        h = hashlib.sha256(self._lengths.tobytes())
        h.update(self._starts.tobytes())
        if self._quotas is not None:
            h.update(b"mixture" + self._quotas.tobytes())
        self._fingerprint = h.hexdigest()[:16]

    # -------------------------------------------------------------- plan
    def _rank_bounds(self, rank: int) -> tuple[int, int]:
        W = self.world_size
        if self.drop_last:
            per = self.total // W
            return rank * per, (rank + 1) * per
        return self.total * rank // W, self.total * (rank + 1) // W

    def __len__(self) -> int:
        lo, hi = self._rank_bounds(self.rank)
        return max(hi - lo - self._start, 0)

    def dataset_counts(self) -> np.ndarray | None:
        """Mixtures: frames drawn from each dataset per epoch (all ranks), int64 ``(D,)``; None otherwise."""
        return None if self._quotas is None else self._quotas.copy()

    def set_epoch(self, epoch: int) -> None:
        """Select the epoch (the shuffle key). A different epoch also clears a pending resume position."""
        epoch = int(epoch)
        if epoch != self.epoch:
            self._start = 0
        self.epoch = epoch

    def _epoch_pieces(self, epoch: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The epoch's ``(episode position, first frame, end frame)`` pieces in epoch order (arrays). O(E)."""
        E = len(self._lengths)
        if self._quotas is None:
            order = (np.random.default_rng([self.seed, epoch, 0x5EED]).permutation(E) if self.shuffle
                     else np.arange(E))
            return order, np.zeros(E, dtype=np.int64), self._lengths[order]
        eps: list[np.ndarray] = []
        ends: list[np.ndarray] = []
        for d, quota in enumerate(self._quotas.tolist()):
            lo, hi = int(self._eo[d]), int(self._eo[d + 1])
            k = 0
            while quota > 0:
                order = (np.random.default_rng([self.seed, epoch, d, k, 0xD5]).permutation(hi - lo) if self.shuffle
                         else np.arange(hi - lo)) + lo
                lens = self._lengths[order]
                cum = np.cumsum(lens)
                n = int(np.searchsorted(cum, quota, side="left")) + 1 if cum[-1] >= quota else len(order)
                take, part = order[:n], lens[:n].copy()
                part[-1] -= max(int(cum[n - 1]) - quota, 0)
                eps.append(take)
                ends.append(part)
                quota -= int(part.sum())
                k += 1
        e, t = np.concatenate(eps), np.concatenate(ends)
        keep = t > 0
        e, t = e[keep], t[keep]
        order = (np.random.default_rng([self.seed, epoch, 0x5EED]).permutation(len(e)) if self.shuffle
                 else np.arange(len(e)))
        return e[order], np.zeros(len(e), dtype=np.int64), t[order]

    def _pieces(self, epoch: int, rank: int) -> list[tuple[int, int, int]]:
        """This rank's ``(episode position, first frame, end frame)`` pieces in epoch order. O(E)."""
        order, first, last = self._epoch_pieces(epoch)
        lo, hi = self._rank_bounds(rank)
        sizes = last - first
        ends = np.cumsum(sizes)
        begins = ends - sizes
        k0 = int(np.searchsorted(ends, lo, side="right"))
        pieces = []
        for k in range(k0, len(order)):
            b, e = int(begins[k]), int(ends[k])
            if b >= hi:
                break
            s, t = max(b, lo) - b, min(e, hi) - b
            if t > s:
                f = int(first[k])
                pieces.append((int(order[k]), f + s, f + t))
        return pieces

    def plan(self, epoch: int | None = None, rank: int | None = None) -> Iterator[int]:
        """The rank sequence of dataset indices for ``epoch`` (no sample is read). O(E) memory."""
        epoch = self.epoch if epoch is None else int(epoch)
        rank = self.rank if rank is None else int(rank)
        queue = deque(self._pieces(epoch, rank))
        starts = self._starts
        if not self.shuffle:
            for e, s, t in queue:
                base = int(starts[e])
                yield from range(base + s, base + t)
            return
        rng = np.random.default_rng([self.seed, epoch, rank, 0x9001])
        pool: list[list[int]] = []  # [dataset index of next frame, dataset index of end]
        while queue and len(pool) < self.pool_size:
            e, s, t = queue.popleft()
            pool.append([int(starts[e]) + s, int(starts[e]) + t])
        draws: list[int] = []
        k = 0
        while pool:
            if k == len(draws):
                draws, k = rng.integers(0, 1 << 62, size=_DRAWS).tolist(), 0
            slot = pool[draws[k] % len(pool)]
            k += 1
            yield slot[0]
            slot[0] += 1
            if slot[0] == slot[1]:
                if queue:
                    e, s, t = queue.popleft()
                    slot[0], slot[1] = int(starts[e]) + s, int(starts[e]) + t
                else:
                    pool.remove(slot)

    def __iter__(self) -> Iterator[Any]:
        info = torch.utils.data.get_worker_info()
        wid, nw = (info.id, info.num_workers) if info is not None else (0, 1)
        start, B = self._start, self.batch_size
        if info is None:
            self._yielded = 0
        mine: list[int] = []
        getitems = getattr(self.dataset, "__getitems__", None)
        for pos, idx in enumerate(self.plan()):
            if pos < start:
                continue
            b = (pos - start) // B
            if b % nw != wid:
                continue
            mine.append(idx)
            if len(mine) == B or (pos - start) % B == B - 1:
                yield from self._read(mine, getitems, info is None)
                mine = []
        if mine:
            yield from self._read(mine, getitems, info is None)

    def _read(self, indices: list[int], getitems, count: bool) -> Iterator[Any]:
        samples = getitems(indices) if getitems is not None else [self.dataset[i] for i in indices]
        for s in samples:
            if count:
                self._yielded += 1
            yield s

    # -------------------------------------------------------------- resume
    def state_dict(self, consumed: int | None = None) -> dict[str, Any]:
        """The position to resume from.

        Args:
            consumed: samples this rank has consumed since the last (re)start of the epoch. Default: what
                this object yielded when iterated in this process (with DataLoader workers the main
                process cannot count; pass the trainer's ``steps * batch_size``).

        Returns:
            ``{"seed", "epoch", "position", "world_size", "rank", "total", "fingerprint"}``.
        """
        consumed = self._yielded if consumed is None else int(consumed)
        return {"seed": self.seed, "epoch": self.epoch, "position": self._start + consumed,
                "world_size": self.world_size, "rank": self.rank, "total": self.total,
                "fingerprint": self._fingerprint}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Resume at ``state["position"]`` of the rank sequence of ``state["epoch"]``.

        Raises:
            ValueError: the state belongs to another dataset or world size.
        """
        if state.get("fingerprint") != self._fingerprint or int(state.get("total", -1)) != self.total:
            raise ValueError("stream state was saved for a different dataset or episode selection")
        if int(state.get("world_size", -1)) != self.world_size:
            raise ValueError(f"stream state was saved with world_size={state.get('world_size')}, "
                             f"not {self.world_size}: the rank sequences differ")
        self.seed = int(state["seed"])
        self.epoch = int(state["epoch"])
        self._start = int(state["position"])
        self._yielded = 0

    def __repr__(self) -> str:
        return (f"EpisodeShuffleStream(frames={self.total}, episodes={len(self._lengths)}, pool={self.pool_size}, "
                f"seed={self.seed}, epoch={self.epoch}, rank={self.rank}/{self.world_size})")
