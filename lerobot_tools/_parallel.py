"""Map a function over per-dataset work items in worker processes, in order, with a progress bar.

Used by the commands that process mixtures dataset by dataset (validate, diagnose-decode). Workers are forked
(cheap on Linux, no re-import); results come back in input order; the bar goes to stderr and is shown by
default only for several items on a terminal.
"""

from __future__ import annotations

import os
import sys
from typing import Callable, Iterable, TypeVar

T = TypeVar("T")
R = TypeVar("R")


def map_ordered(fn: Callable[[T], R], items: Iterable[T], *, jobs: int = 1, desc: str = "",
                unit: str = "dataset", progress: bool | None = None) -> list[R]:
    """``[fn(x) for x in items]``, in ``jobs`` worker processes when ``jobs > 1`` (0 = one per CPU).

    ``fn`` and the items must be picklable (module-level function, dataclasses). Exceptions raised by ``fn``
    propagate; callers that must not fail on one item catch inside ``fn``.
    """
    from tqdm import tqdm

    work = list(items)
    if jobs == 0:
        jobs = os.cpu_count() or 1
    show = progress if progress is not None else (len(work) > 1 and sys.stderr.isatty())
    out: list[R] = []
    with tqdm(total=len(work), desc=desc, unit=unit, file=sys.stderr, disable=not show, leave=False) as bar:
        if jobs > 1 and len(work) > 1:
            import multiprocessing as mp
            from concurrent.futures import ProcessPoolExecutor

            ctx = mp.get_context("fork") if hasattr(os, "fork") else None
            with ProcessPoolExecutor(max_workers=min(jobs, len(work)), mp_context=ctx) as pool:
                for res in pool.map(fn, work, chunksize=max(1, len(work) // (jobs * 8))):
                    out.append(res)
                    bar.update(1)
        else:
            for item in work:
                out.append(fn(item))
                bar.update(1)
    return out
