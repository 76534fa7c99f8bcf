"""Resharding datasets and runs: targets -> data files -> worker processes, with stale temp-file cleanup and
progress (:func:`reshard`, :func:`reshard_resolved`)."""

from __future__ import annotations

import contextlib
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable

from lerobot_tools import _io
from lerobot_tools._contain import refuse_escaping_symlinks
from lerobot_tools._lock import dataset_lock
from lerobot_tools._parallel import map_ordered
from lerobot_tools.dataset.placeholders import UnreadableFileError, describe
from lerobot_tools.dataset.subset import EpisodeSubset
from lerobot_tools.errors import DatasetError, LrtoolError, one_line
from lerobot_tools.reshard.model import DatasetResult, FileResult, ReshardOptions, ReshardRun, ShardCount
from lerobot_tools.reshard.write import reshard_file


@dataclass
class _Work:
    index: int  # dataset position
    path: str
    relpath: str
    dataset: str
    expected: list[int]
    options: ReshardOptions
    size: int


def _run_work(w: _Work) -> FileResult:
    return reshard_file(Path(w.path), w.relpath, w.options, dataset=w.dataset, expected_episodes=w.expected)


def _run_work_here(w: _Work, tick) -> FileResult:
    return reshard_file(Path(w.path), w.relpath, w.options, dataset=w.dataset, expected_episodes=w.expected,
                        progress=tick)


def _worker_failed(w: _Work, exc: BaseException) -> FileResult:
    """A worker process died (OOM-killed ...): report the file, keep going."""
    return FileResult(dataset=w.dataset, relpath=w.relpath,
                      error=f"worker process failed ({one_line(exc, typed=True)}); original left untouched")


def prepare_dataset(target, options: ReshardOptions, locks: contextlib.ExitStack | None = None, *,
                    clean_temps: bool = True) -> tuple[DatasetResult, list[tuple[str, str, list[int]]]]:
    """Open one target; return its result shell and its data files ``(abs path, relpath, episodes)``.

    Unless ``options.dry_run``, the dataset's write lock (:func:`lerobot_tools._lock.dataset_lock`) is taken on
    ``locks`` (when given) before the file list is read and stale temporary files are removed; a dataset another
    run is writing fails with a one-line error after ``options.lock_timeout`` seconds. With ``clean_temps=False``
    no temporary file is removed: a caller that reshards the files elsewhere (one task per file, holding
    :func:`lerobot_tools._lock.shared_dataset_lock`) cleans each file's own temporary files next to it. A dataset
    holding a symlink that leads out of it (F013) is refused first, before the lock is taken (dry run too):
    rewriting through it would change another folder's files under this dataset's lock
    (:func:`lerobot_tools._contain.refuse_escaping_symlinks`).
    """
    from lerobot_tools.dataset.model import Dataset

    dres = DatasetResult(target=target.spec, root=str(target.root) if target.root else None)
    if target.error:
        dres.error = target.error
        return dres, []
    if not EpisodeSubset.of(target).whole:
        dres.notes.append("the mixture's episode subset is ignored: whole data files are resharded")
    if target.origin == "hub-cache":
        dres.notes.append("hub snapshot cache: rewritten files replace their symlinks; the blobs are not modified")
    try:
        refuse_escaping_symlinks(target.root, "reshard")  # before the lock creates .lrtool/ (dry run too)
        ds = Dataset(target.root)
        if locks is not None and not options.dry_run:
            locks.enter_context(dataset_lock(target.root, timeout=options.lock_timeout, what="resharding"))
            ds = Dataset(target.root)  # re-read under the lock: another writer may just have changed it
        dres.codebase_version = ds.codebase_version
        if ds.layout is None:
            raise DatasetError(f"unknown codebase_version {ds.codebase_version!r}", "meta/info.json")
        data_files = ds.data_files()
        files = [(str(ds.path(df.relpath)), df.relpath, df.episodes) for df in data_files]
    except UnreadableFileError as exc:
        dres.error = (f"{exc.path} {describe(exc.sniffed)}" if exc.placeholder else str(exc)) + \
            ": the episodes of the data files are unknown, nothing is resharded"
        return dres, []
    except LrtoolError as exc:
        dres.error = exc.within(target.root)  # the lock's errors name the root
        return dres, []
    if not files:
        dres.error = "the episode metadata references no data files"
    if clean_temps:
        root = Path(target.root)
        dres.removed_temps = sorted(str(p.relative_to(root))
                                    for p in _io.clean_stale_temps(root, dry_run=options.dry_run))
    return dres, files


def reshard_resolved(targets: list, options: ReshardOptions | None = None, *, jobs: int = 1,
                     progress: bool | None = None) -> ReshardRun:
    """Reshard resolved targets (:func:`lerobot_tools.dataset.resolve_targets`).

    Each dataset's write lock is taken (not on a dry run) and held until every file is done, then its stale
    temporary files are removed (listed only on a dry run); then every data file is processed by
    :func:`reshard_file`, in ``jobs`` worker processes (1 = this process, 0 = one per CPU). A dataset listed
    twice (a mixture naming it twice) is processed once.

    Args:
        targets: resolved targets; unresolved ones are reported with their error.
        options: see :class:`ReshardOptions`.
        jobs: parallel files.
        progress: tqdm bar (bytes) on stderr; None = only on a terminal.

    Returns:
        A :class:`ReshardRun` (never raises for bad datasets or files; see ``error`` fields).
    """
    options = options or ReshardOptions()
    options.check()
    with contextlib.ExitStack() as locks:
        return _reshard_locked(targets, options, jobs, progress, locks)


def _reshard_locked(targets: list, options: ReshardOptions, jobs: int, progress: bool | None,
                    locks: contextlib.ExitStack) -> ReshardRun:
    t0 = time.perf_counter()
    run = ReshardRun(options=options)
    work: list[_Work] = []
    seen: dict[str, int] = {}
    for target in targets:
        key = str(Path(target.root).resolve()) if target.root else None
        if key is not None and key in seen:
            dres = DatasetResult(target=target.spec, root=str(target.root))
            dres.notes.append(f"same dataset as {run.datasets[seen[key]].target}: processed once")
            run.datasets.append(dres)
            continue
        dres, files = prepare_dataset(target, options, locks)
        if key is not None:
            seen[key] = len(run.datasets)
        run.datasets.append(dres)
        for p, rel, eps in files:
            try:
                size = os.path.getsize(p)
            except OSError:
                size = 0
            work.append(_Work(len(run.datasets) - 1, p, rel, target.spec, eps, options, size))

    results = map_ordered(_run_work, work, jobs=jobs, desc="reshard", unit="B", progress=progress,
                          weight=lambda w: w.size, inline=_run_work_here, label=lambda w: w.relpath[-40:],
                          on_worker_error=_worker_failed)
    for w, r in zip(work, results):
        assert r is not None
        run.datasets[w.index].files.append(r)
    for d in run.datasets:
        if d.error or not d.files:
            continue
        counts = [f.row_groups_after if f.row_groups_after is not None else f.row_groups_before for f in d.files]
        d.shards = ShardCount(options.world_size, len(d.files), sum(c for c in counts if c is not None),
                              sum(1 for c in counts if c is None))
    run.seconds = time.perf_counter() - t0
    return run


def reshard(target_args: Iterable[str], options: ReshardOptions | None = None, *, jobs: int = 1,
            progress: bool | None = None) -> ReshardRun:
    """Resolve TARGET arguments (folders, repo ids in the local caches, mixture files) and reshard.

    Raises:
        UsageError: bad options, or a mixture file cannot be read or parsed.
    """
    from lerobot_tools.dataset.targets import resolve_targets

    options = options or ReshardOptions()
    options.check()
    return reshard_resolved(resolve_targets(list(target_args)), options, jobs=jobs, progress=progress)
