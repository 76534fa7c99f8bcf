"""Split a mixture's work into items and deal them to WORLD tasks, balanced by bytes.

A work item is a whole dataset, or, for a dataset larger than a fair share of one task, its
dataset-level part (the *head*: metadata, anything done once per dataset) and each of its data/video
files as separate items, so one 5 TB dataset spreads over many tasks. Items are dealt greedily,
largest first, each to the task with the fewest bytes so far (ties: the lowest rank); items of equal
size are taken in dataset, head-before-files, path order. The result is a pure function of the sizes,
so every task that computes it gets the same partition; :mod:`lerobot_tools.distributed.plan` stores it
once per run so that files rewritten by one task (reshard) do not move work between tasks.

Pure functions, no I/O.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass

#: most tasks a run may have (``--tasks``, ``--shard RANK/WORLD``, a ``world`` read from a run folder): every rank
#: costs a list entry in the plan, in the merge and in ``lrtool report``
MAX_TASKS = 100_000

#: a dataset is split into per-file items when it holds more than this fraction of one task's fair share
SPLIT_FRACTION = 0.25

KIND_ORDER = {"dataset": 0, "head": 1, "file": 2}


@dataclass(frozen=True)
class DatasetSize:
    """How big one target is, as its command sees it.

    Attributes:
        bytes: bytes the command will read or write for the whole dataset (file sizes on disk).
        files: ``(relpath, bytes)`` of the files that can be processed as separate items, in the order
            the command processes them; None when the dataset cannot be split (unresolved, unreadable
            metadata, or a command whose work is one transaction per dataset).
        head_bytes: bytes of the dataset-level work of a split dataset (its metadata), at least 1.
    """

    bytes: int
    files: tuple[tuple[str, int], ...] | None = None
    head_bytes: int = 1


@dataclass(frozen=True)
class WorkItem:
    """One unit of work.

    Attributes:
        dataset: position of the target in the run's resolved target list.
        kind: ``"dataset"`` (the whole dataset), ``"head"`` (the dataset-level part of a split dataset)
            or ``"file"`` (one file of a split dataset).
        path: the file's path relative to the dataset root (``kind == "file"``), else None.
        bytes: its size in bytes (the balancing weight).
    """

    dataset: int
    kind: str
    path: str | None
    bytes: int

    @property
    def order(self) -> tuple[int, int, str]:
        """Natural order: dataset, head before files, path."""
        return (self.dataset, KIND_ORDER[self.kind], self.path or "")

    def to_list(self) -> list:
        """Compact JSON form ``[dataset, kind, path, bytes]``."""
        return [self.dataset, self.kind, self.path, self.bytes]

    @classmethod
    def from_list(cls, raw: list) -> "WorkItem":
        """Inverse of :meth:`to_list`.

        Raises:
            ValueError: ``raw`` is not a work item.
        """
        if not (isinstance(raw, list) and len(raw) == 4 and type(raw[0]) is int and isinstance(raw[1], str)
                and raw[1] in KIND_ORDER and (raw[2] is None or isinstance(raw[2], str)) and type(raw[3]) is int):
            raise ValueError(f"not a work item: {str(raw)[:80]}")
        return cls(raw[0], raw[1], raw[2], raw[3])


def work_items(sizes: list[DatasetSize], world: int, *, split_fraction: float = SPLIT_FRACTION) -> list[WorkItem]:
    """The work items of a run, in natural order.

    A dataset becomes a head item plus one item per file when ``world > 1``, it has at least two files,
    and its bytes exceed ``split_fraction`` of one task's fair share (``total / world``); otherwise it is
    one ``"dataset"`` item. Duplicate file paths within a dataset are kept once.

    Args:
        sizes: one entry per target, in target order.
        world: number of tasks (>= 1).
        split_fraction: see :data:`SPLIT_FRACTION`.
    """
    if world < 1:
        raise ValueError("world must be >= 1")
    total = sum(max(0, s.bytes) for s in sizes)
    threshold = split_fraction * total / world
    items: list[WorkItem] = []
    for i, s in enumerate(sizes):
        files = s.files
        if world > 1 and files is not None and len(files) > 1 and s.bytes > threshold:
            items.append(WorkItem(i, "head", None, max(1, s.head_bytes)))
            seen: set[str] = set()
            for rel, n in files:
                if rel in seen:
                    continue
                seen.add(rel)
                items.append(WorkItem(i, "file", rel, max(0, int(n))))
        else:
            items.append(WorkItem(i, "dataset", None, max(0, int(s.bytes))))
    return items


def assign(items: list[WorkItem], world: int) -> list[list[WorkItem]]:
    """Deal ``items`` to ``world`` tasks: largest first, each to the least-loaded task (ties: lowest rank).

    Returns:
        ``world`` lists (some may be empty when there are fewer items than tasks), each in natural order.
    """
    if world < 1:
        raise ValueError("world must be >= 1")
    bins: list[list[WorkItem]] = [[] for _ in range(world)]
    heap = [(0, rank) for rank in range(world)]
    for item in sorted(items, key=lambda it: (-it.bytes, it.order)):
        load, rank = heapq.heappop(heap)
        bins[rank].append(item)
        heapq.heappush(heap, (load + item.bytes, rank))
    return [sorted(b, key=lambda it: it.order) for b in bins]


def partition(sizes: list[DatasetSize], world: int, *, split_fraction: float = SPLIT_FRACTION) -> list[list[WorkItem]]:
    """:func:`work_items` dealt by :func:`assign`: the items of each of ``world`` tasks."""
    return assign(work_items(sizes, world, split_fraction=split_fraction), world)
