"""Map a function over work items in worker processes, results in input order, with a progress bar; and over
files in a thread pool.

The one process pool of lrtool: validate and diagnose-decode map over datasets, reshard over data files
(weighted by size, with byte progress), ``--executor local`` over the tasks of a distributed run. Workers are forked (cheap on Linux, no re-import); results come back
in input order; the bar goes to stderr and is shown by default only on a terminal. Ctrl-C, SIGTERM or a
failing item stop the workers cleanly (:mod:`lerobot_tools._signals`); workers also stop when the parent dies.

:func:`thread_map` is the per-file thread pool (validate reads footers and probes videos with it): the reads
overlap their I/O waits, and pyarrow reads a footer without holding the GIL.
"""

from __future__ import annotations

import os
import sys
from typing import Callable, Iterable, Iterator, TypeVar

from lerobot_tools._signals import check_interrupted, init_worker, run_in_worker

T = TypeVar("T")
R = TypeVar("R")


def map_ordered(fn: Callable[[T], R], items: Iterable[T], *, jobs: int = 1, desc: str = "",
                unit: str = "dataset", progress: bool | None = None,
                weight: Callable[[T], int] | None = None,
                inline: Callable[[T, Callable[[int], None]], R] | None = None,
                label: Callable[[T], str] | None = None,
                on_worker_error: Callable[[T, BaseException], R] | None = None) -> list[R]:
    """``[fn(x) for x in items]``, in ``jobs`` worker processes when ``jobs > 1`` (0 = one per CPU).

    ``fn`` and the items must be picklable (module-level function, dataclasses). Exceptions raised by ``fn``
    propagate; callers that must not fail on one item catch inside ``fn``.

    Args:
        fn: the work, run in a worker process (or here when ``jobs == 1`` and no ``inline``).
        items: work items.
        jobs: worker processes (1 = this process, 0 = one per CPU).
        desc, unit: the progress bar's label and unit.
        progress: show the bar on stderr; None = only on a terminal, and only for several items unless
            ``weight`` is given.
        weight: progress units of an item (e.g. its size in bytes; the bar then counts with SI prefixes);
            None = 1 per item.
        inline: in this process (``jobs == 1``), ``inline(item, tick)`` runs instead of ``fn(item)`` and may
            call ``tick(n)`` to advance the bar by ``n`` units while it works (the rest of the item's weight is
            added when it returns).
        label: a short text shown next to the bar while an item runs in this process.
        on_worker_error: for an exception raised in or by a worker process (e.g. a worker killed for memory),
            the result to use instead of raising.

    Returns:
        The results, in the order of ``items``.
    """
    work = list(items)
    if jobs == 0:
        jobs = os.cpu_count() or 1
    weights = [weight(x) for x in work] if weight is not None else [1] * len(work)
    show = progress if progress is not None else ((len(work) > 1 or weight is not None) and sys.stderr.isatty())
    out: list = [None] * len(work)
    if show:
        from tqdm import tqdm
    else:  # no bar: do not pay for importing tqdm
        tqdm = _NoBar
    with tqdm(total=sum(weights), desc=desc, unit=unit, unit_scale=weight is not None, file=sys.stderr,
              disable=not show, leave=False) as bar:
        if jobs > 1 and len(work) > 1:
            import multiprocessing as mp
            from concurrent.futures import ProcessPoolExecutor, as_completed

            ctx = mp.get_context("fork") if hasattr(os, "fork") else None
            with ProcessPoolExecutor(max_workers=min(jobs, len(work)), mp_context=ctx, initializer=init_worker,
                                     initargs=(os.getpid(),)) as pool:
                try:
                    futures = {pool.submit(run_in_worker, fn, x): i for i, x in enumerate(work)}
                    for fut in as_completed(futures):
                        check_interrupted()  # a signal whose first exception a finaliser dropped
                        i = futures[fut]
                        try:
                            out[i] = fut.result()
                        except Exception as exc:
                            if on_worker_error is None:
                                raise
                            out[i] = on_worker_error(work[i], exc)
                        bar.update(weights[i])
                except BaseException:  # Ctrl-C, SIGTERM, or an item's exception: stop the workers first
                    _stop_workers(pool)
                    raise
        else:
            for i, x in enumerate(work):
                check_interrupted()
                if inline is None:
                    out[i] = fn(x)
                    bar.update(weights[i])
                    continue
                done = 0

                def tick(n: int) -> None:
                    nonlocal done
                    done += n
                    bar.update(n)

                if label is not None:
                    bar.set_postfix_str(label(x), refresh=False)
                out[i] = inline(x, tick)
                bar.update(max(0, weights[i] - done))
    return out


class _NoBar:
    """The part of ``tqdm``'s interface :func:`map_ordered` uses, doing nothing (progress bar off)."""

    def __init__(self, **_kwargs):
        pass

    def __enter__(self) -> "_NoBar":
        return self

    def __exit__(self, *exc) -> None:
        return None

    def update(self, n: int = 1) -> None:
        pass

    def set_postfix_str(self, s: str = "", refresh: bool = True) -> None:
        pass


#: Threads :func:`thread_map` uses by default: enough to overlap file reads on a local disk or a network file
#: system; more do not pay on a warm page cache, where the Python side of each read holds the GIL.
IO_THREADS = 4


#: ``io_bound`` maps: items timed in the calling thread per decision window
PROBE_ITEMS = 16
#: ``io_bound`` maps move to the pool once more than this share of a window's wall time was spent waiting (wall
#: time in ``fn`` not spent on the calling thread's CPU)
WAIT_SHARE = 0.5


def thread_map(fn: Callable[[T], R], items: Iterable[T], *, threads: int | None = None,
               ahead: int | None = None, io_bound: bool = False) -> Iterator[R]:
    """``fn(x) for x in items``, computed in a pool of ``threads`` threads, yielded in input order.

    At most ``ahead`` results (default ``2 * threads``) are computed or held ahead of the one the caller is at,
    so memory stays bounded however many items there are. An exception raised by ``fn`` is re-raised when its
    result is reached. ``threads <= 1`` (or a single item) maps in the calling thread. ``fn`` must be safe to
    call from several threads at once (reading files is).

    ``io_bound=True`` is for work that is mostly Python plus short reads (sniffing a file, reading a parquet
    footer, walking MP4 boxes): it starts in the calling thread and times each window of :data:`PROBE_ITEMS`
    items, moving the rest to the pool only once a window spent more than :data:`WAIT_SHARE` of its wall time
    waiting (``time.thread_time`` against ``time.perf_counter``): a cold page cache or a network file system.
    On a warm cache the Python side of each item holds the GIL, and the pool's hand-offs cost more than they save
    (1,000 footers: 0.20 s in one thread, 0.31 s with 2 threads, 0.35 s with 4, on a 2-core machine).

    Args:
        fn: the work for one item.
        items: work items.
        threads: pool size (default :data:`IO_THREADS`).
        ahead: results in flight beyond the current one (at least ``threads``).
        io_bound: start in the calling thread and use the pool only while items wait on I/O (above).

    Yields:
        ``fn(item)`` for each item, in the order of ``items``.
    """
    work = list(items)
    if threads is None:
        threads = IO_THREADS
    if threads <= 1 or len(work) <= 1:
        for x in work:
            yield fn(x)
        return
    if io_bound:
        import time

        done, wall, cpu = 0, 0.0, 0.0
        while done < len(work):
            t0, c0 = time.perf_counter(), time.thread_time()
            result = fn(work[done])
            wall += time.perf_counter() - t0
            cpu += time.thread_time() - c0
            done += 1
            yield result
            if done % PROBE_ITEMS == 0:
                if wall > 0 and wall - cpu > WAIT_SHARE * wall:
                    break
                wall = cpu = 0.0
        work = work[done:]
        if not work:
            return
    from collections import deque
    from concurrent.futures import ThreadPoolExecutor

    ahead = max(threads, ahead if ahead is not None else 2 * threads)
    with ThreadPoolExecutor(max_workers=threads, thread_name_prefix="lrtool-io") as pool:
        pending: deque = deque()
        it = iter(work)
        try:
            for x in it:
                pending.append(pool.submit(fn, x))
                if len(pending) >= ahead:
                    break
            while pending:
                result = pending.popleft().result()
                nxt = next(it, _END)
                if nxt is not _END:
                    pending.append(pool.submit(fn, nxt))
                yield result
        finally:
            for fut in pending:
                fut.cancel()


_END = object()


#: Seconds a worker gets to unwind its item (remove its temporary file) after SIGTERM before it is killed.
STOP_GRACE_S = 10.0


def _stop_workers(pool) -> None:
    """Cancel queued items and send every worker SIGTERM (:mod:`lerobot_tools._signals`: the item being
    processed unwinds, then the worker exits); kill a worker still alive after :data:`STOP_GRACE_S`."""
    procs = list((getattr(pool, "_processes", None) or {}).values())  # CPython keeps them here; no public API
    pool.shutdown(wait=False, cancel_futures=True)  # (drops pool._processes)
    for p in procs:
        if p.is_alive():
            p.terminate()
    for p in procs:
        p.join(STOP_GRACE_S)
        if p.is_alive():
            p.kill()
            p.join()


class _Failure:
    """An exception raised in :func:`read_ahead`'s thread, handed to the consumer."""

    def __init__(self, exc: BaseException):
        self.exc = exc


def read_ahead(items: Iterable[T], depth: int = 1, *, name: str = "lrtool-read") -> Iterator[T]:
    """Iterate ``items`` in a background thread named ``name``, at most ``depth`` items ahead (bounded memory).

    Decoding the next record batch (pyarrow releases the GIL) then overlaps with the caller's work on the current
    one (reshard's encoding and verification, the deep checks' numpy pass). Errors are re-raised in the caller;
    closing the generator stops and joins the thread, so the file the items come from can be closed safely
    afterwards.
    """
    import queue
    import threading

    q: queue.Queue = queue.Queue(maxsize=depth)
    stop = threading.Event()
    done = object()

    def put(item) -> bool:
        while not stop.is_set():
            try:
                q.put(item, timeout=0.05)
                return True
            except queue.Full:
                continue
        return False

    def work() -> None:
        try:
            for item in items:
                # a put that succeeds while the consumer drains the queue on close must not pull one item more
                if not put(item) or stop.is_set():
                    return
            put(done)
        except BaseException as exc:  # handed to the consumer
            put(_Failure(exc))

    thread = threading.Thread(target=work, name=name, daemon=True)
    thread.start()
    try:
        while True:
            item = q.get()
            if item is done:
                return
            if isinstance(item, _Failure):
                raise item.exc
            yield item
    finally:
        stop.set()
        while thread.is_alive():
            try:
                q.get(timeout=0.05)
            except queue.Empty:
                pass
        thread.join()
