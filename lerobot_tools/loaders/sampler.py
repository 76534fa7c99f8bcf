"""``EpisodeAwareSampler``: a shuffled, sharded, resumable sampler of frames with O(episodes) memory.

* The order is a pure function of ``(seed, epoch)`` and the episode lengths: every rank evaluates the
  same keyed bijection of the frame positions (:class:`~lerobot_tools.loaders._feistel.FeistelPermutation`)
  and takes its own share, so ranks need no RNG synchronisation.
* No per-frame array exists, not even a permutation tensor (torch's ``RandomSampler`` /
  ``DistributedSampler`` materialise ``randperm(n)``: 8 GB for 10^9 frames): memory is two int64
  arrays of ``E + 1`` entries; seeking to any sample costs O(log E).
* Rank ``r`` of ``W`` takes positions ``start + r, start + r + W, ...`` of the permuted sequence: the
  shards are disjoint and together cover every frame (ranks may differ by one sample; ``drop_last``
  makes them equal by dropping at most ``W - 1`` frames of the epoch, a different set every epoch).
* ``state_dict()`` / ``load_state_dict()`` resume at the exact sample, even with another world size:
  the state records the position in the global permuted sequence (ranks in lock-step).
* ``drop_first_frames`` / ``drop_last_frames`` leave out the first/last n frames of each episode (e.g.
  frames whose action window would be mostly padding).
* **Mixtures** (a :class:`~lerobot_tools.loaders.MixtureDataset`): an epoch of ``num_samples`` draws
  (default: the mixture's frame count) is apportioned to the datasets by weight, exactly, and each
  dataset's draws walk a keyed permutation of its frames (:mod:`._weighted`); the epoch's draws are
  shuffled by the same Feistel permutation as a single dataset's frames. Order, rank shards and resume
  work exactly as above; memory is O(datasets + episodes).
"""

from __future__ import annotations

import hashlib
from typing import Any, Iterator, Sequence

import numpy as np
import torch

from lerobot_tools.loaders._feistel import FeistelPermutation
from lerobot_tools.loaders._weighted import WeightedPlan

__all__ = ["EpisodeAwareSampler", "dist_rank_world"]

_BLOCK = 4096


def dist_rank_world(rank: int | None, world_size: int | None) -> tuple[int, int]:
    """``(rank, world_size)``: the given values, else torch.distributed's when initialised, else ``(0, 1)``.

    Raises:
        ValueError: ``rank`` outside ``[0, world_size)``.
    """
    if rank is None or world_size is None:
        import torch.distributed as dist

        if dist.is_available() and dist.is_initialized():
            rank = dist.get_rank() if rank is None else rank
            world_size = dist.get_world_size() if world_size is None else world_size
    world_size = 1 if world_size is None else int(world_size)
    rank = 0 if rank is None else int(rank)
    if world_size < 1 or not 0 <= rank < world_size:
        raise ValueError(f"rank must be in [0, world_size), got rank={rank}, world_size={world_size}")
    return rank, world_size


def _lengths_and_starts(source: Any) -> tuple[np.ndarray, np.ndarray]:
    lengths = getattr(source, "episode_lengths", None)
    if lengths is not None:
        lengths = np.asarray(lengths, dtype=np.int64)
        starts = getattr(source, "episode_starts", None)
        if starts is None:
            starts = np.concatenate([[0], np.cumsum(lengths)[:-1]])
        return lengths, np.asarray(starts, dtype=np.int64)
    lengths = np.asarray(source, dtype=np.int64).reshape(-1)
    return lengths, np.concatenate([[0], np.cumsum(lengths)[:-1]]).astype(np.int64)


class EpisodeAwareSampler(torch.utils.data.Sampler[int]):
    """Shuffled, rank-sharded, resumable sampler of frame indices of a :class:`FrameDataset`.

    Args:
        source: a :class:`~lerobot_tools.loaders.FrameDataset` (anything with ``episode_lengths`` and
            ``episode_starts``), a :class:`~lerobot_tools.loaders.MixtureDataset` (weighted draws, see
            the module docstring), or a sequence of episode lengths (then dataset index = cumulative
            frame position).
        seed: int; the order is a pure function of ``(seed, epoch)``.
        shuffle: False yields the frames in dataset order (still sharded).
        rank, world_size: this process's shard; default from ``torch.distributed`` when initialised,
            else ``0`` of ``1``.
        drop_first_frames, drop_last_frames: frames left out at the start/end of every episode (>= 0);
            episodes shorter than their sum contribute nothing.
        drop_last: make every rank yield ``floor(N / world_size)`` samples (for DDP lock-step) by
            dropping the last ``N mod world_size`` samples of the permuted sequence.
        num_samples: mixtures only: draws per epoch (default: the mixture's frame count after dropping).
        weights: mixtures only: relative weight per dataset, overriding the mixture's.

    Yields:
        int dataset indices, ``len(self)`` of them per epoch (from the resume position).

    Memory is O(number of episodes); construction is O(E); seeking is O(log E).
    """

    def __init__(self, source: Any, *, seed: int = 0, shuffle: bool = True, rank: int | None = None,
                 world_size: int | None = None, drop_first_frames: int = 0, drop_last_frames: int = 0,
                 drop_last: bool = False, num_samples: int | None = None, weights: Sequence[float] | None = None):
        if drop_first_frames < 0 or drop_last_frames < 0:
            raise ValueError("drop_first_frames and drop_last_frames must be >= 0")
        lengths, starts = _lengths_and_starts(source)
        if (lengths < 0).any():
            raise ValueError("episode lengths must be >= 0")
        self.rank, self.world_size = dist_rank_world(rank, world_size)
        self.seed = int(seed)
        self.shuffle = bool(shuffle)
        self.drop_first_frames = int(drop_first_frames)
        self.drop_last_frames = int(drop_last_frames)
        self.drop_last = bool(drop_last)
        valid = np.maximum(lengths - self.drop_first_frames - self.drop_last_frames, 0)
        #: cumulative valid frames before each episode (E + 1 entries)
        self._cum = np.concatenate([[0], np.cumsum(valid)]).astype(np.int64)
        #: dataset index of each episode's first kept frame
        self._first = (starts + self.drop_first_frames).astype(np.int64)
        self.total = int(self._cum[-1])
        self._plan: WeightedPlan | None = None
        mixture = getattr(source, "dataset_offsets", None) is not None and hasattr(source, "episode_offsets")
        if mixture:
            eo = np.asarray(source.episode_offsets, dtype=np.int64)
            per_dataset = self._cum[eo[1:]] - self._cum[eo[:-1]]
            if weights is None and getattr(source, "explicit_weights", False):
                weights = source.weights
            self._plan = WeightedPlan(per_dataset, None if weights is None else np.asarray(weights, dtype=np.float64),
                                      num_samples)
            self.total = self._plan.total
        elif num_samples is not None or weights is not None:
            raise ValueError("num_samples and weights need a MixtureDataset source")
        self.epoch = 0
        self._start = 0  # global position in the permuted sequence where this epoch (re)starts
        self._yielded = 0  # samples this object has yielded in the current iteration
        h = hashlib.sha256()
        h.update(lengths.tobytes())
        h.update(starts.tobytes())
        h.update(np.asarray([self.drop_first_frames, self.drop_last_frames], dtype=np.int64).tobytes())
        if self._plan is not None:
            h.update(b"mixture")
            h.update(self._plan.quotas.tobytes())
            h.update(self._plan.lengths.tobytes())
        self._fingerprint = h.hexdigest()[:16]

    # -------------------------------------------------------------- sizes
    def _count(self, start: int) -> int:
        remaining = max(self.total - start, 0)
        if self.drop_last:
            return remaining // self.world_size
        return max(0, (remaining - self.rank + self.world_size - 1) // self.world_size)

    def __len__(self) -> int:
        return self._count(self._start)

    def set_epoch(self, epoch: int) -> None:
        """Select the epoch (the shuffle key). A different epoch also clears a pending resume position."""
        epoch = int(epoch)
        if epoch != self.epoch:
            self._start = 0
        self.epoch = epoch

    # -------------------------------------------------------------- order
    def indices(self, positions: np.ndarray, epoch: int | None = None) -> np.ndarray:
        """Dataset indices (int64) at global ``positions`` of the permuted sequence of ``epoch``."""
        epoch = self.epoch if epoch is None else int(epoch)
        pos = np.asarray(positions, dtype=np.int64)
        if self.shuffle:
            pos = FeistelPermutation(self.total, self.seed, epoch)(pos)
        return self._to_index(pos, epoch)

    def _to_index(self, pos: np.ndarray, epoch: int) -> np.ndarray:
        """Shuffled draw positions -> dataset indices (through the weighted plan for a mixture)."""
        if self._plan is not None:
            pos = self._plan.frames(pos, self.seed, epoch, self.shuffle)
        ep = np.searchsorted(self._cum, pos, side="right") - 1
        return self._first[ep] + (pos - self._cum[ep])

    def dataset_counts(self) -> np.ndarray | None:
        """Mixtures: draws per dataset in one epoch (all ranks), int64 ``(D,)``; None for a single dataset."""
        return None if self._plan is None else self._plan.quotas.copy()

    def __iter__(self) -> Iterator[int]:
        start, count, W = self._start, self._count(self._start), self.world_size
        perm = FeistelPermutation(self.total, self.seed, self.epoch) if self.shuffle else None
        self._yielded = 0
        b, block = 0, 64  # small first block: the first sample after a resume comes at once
        while b < count:
            j = np.arange(b, min(b + block, count), dtype=np.int64)
            b, block = b + len(j), min(block * 4, _BLOCK)
            pos = start + self.rank + j * W
            if perm is not None:
                pos = perm(pos)
            for i in self._to_index(pos, self.epoch).tolist():
                self._yielded += 1
                yield i

    # -------------------------------------------------------------- resume
    def state_dict(self, consumed: int | None = None) -> dict[str, Any]:
        """The position to resume from.

        Args:
            consumed: samples of this epoch this rank has consumed since the last (re)start. Default: what
                this sampler has yielded, which runs ahead of training by the DataLoader's prefetch
                (``num_workers * prefetch_factor`` batches); pass the trainer's count for an exact resume.

        Returns:
            ``{"seed", "epoch", "position", "total", "fingerprint"}``; ``position`` is the global position
            in the permuted sequence (``start + consumed * world_size``; all ranks in lock-step).
        """
        consumed = self._yielded if consumed is None else int(consumed)
        return {
            "seed": self.seed,
            "epoch": self.epoch,
            "position": min(self._start + consumed * self.world_size, self.total),
            "total": self.total,
            "fingerprint": self._fingerprint,
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Resume: the next iteration starts at ``state["position"]`` of epoch ``state["epoch"]``.

        Raises:
            ValueError: the state belongs to another dataset, episode selection or frame dropping.
        """
        if state.get("fingerprint") != self._fingerprint or int(state.get("total", -1)) != self.total:
            raise ValueError("sampler state was saved for a different dataset, episode selection or frame dropping")
        self.seed = int(state["seed"])
        self.epoch = int(state["epoch"])
        self._start = int(state["position"])
        self._yielded = 0

    def __repr__(self) -> str:
        return (f"EpisodeAwareSampler(frames={self.total}, episodes={len(self._cum) - 1}, seed={self.seed}, "
                f"epoch={self.epoch}, rank={self.rank}/{self.world_size})")

    @staticmethod
    def from_lengths(lengths: Sequence[int], **kwargs: Any) -> "EpisodeAwareSampler":
        """Build from episode lengths alone (dataset index = cumulative frame position)."""
        return EpisodeAwareSampler(np.asarray(lengths, dtype=np.int64), **kwargs)
