"""Run a prefetch: plan the mixture, check the disk, fetch what is missing on a thread pool, report.

Order of work for each repo job (see :mod:`lerobot_tools.prefetch.plan` for the grouping):

1. commit: the revision itself when it is a 40-hex SHA, else the lock file's commit, else one
   revision resolve request;
2. tree listing: ``<dest>/.cache/huggingface/trees/<commit>.json`` when cached, else the paginated
   tree listing (then cached);
3. the files needed (whole repo, or ``meta/`` + the episode files), each checked on disk *before any
   download request* (:func:`lerobot_tools.prefetch.local.check_present`);
4. the missing ones are downloaded on a shared thread pool: per-file lock (the same
   ``download/<path>.lock`` huggingface_hub takes, so a second lrtool or a ``hf_hub_download`` on the
   same folder waits), check again under the lock, stream into a ``.lrtool-tmp-`` file in the target
   folder, verify size and hash, fsync, atomic rename, record metadata.

A warm run with a lock file therefore makes zero requests; a cold run makes at most 1 resolve + the
tree pages (Hub ``"api"`` bucket) + 1 request per missing file (``"resolvers"`` bucket; plus one to the
CDN when the server redirects an LFS file there), and never a per-file metadata (HEAD) request. Every
request waits for its bucket's budget (:mod:`lerobot_tools.prefetch.budget`). A repo whose
calls keep failing is marked incomplete after bounded retries (and, after 3 consecutive failed files,
its remaining files are not attempted); the other repos carry on.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sys
import threading
import time
from concurrent.futures import CancelledError, Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from lerobot_tools import _env
from lerobot_tools._io import atomic_path, check_output_file
from lerobot_tools.dataset.mixture import read_mixture
from lerobot_tools.errors import LrtoolError, UsageError
from lerobot_tools.prefetch import local
from lerobot_tools.prefetch.budget import DEFAULT_MAX_WAIT_S, DEFAULT_WINDOW_S, Budgets, Clock
from lerobot_tools.prefetch.hub import HubClient, HubError, RetryPolicy, get_token_to_send
from lerobot_tools.prefetch.local import TreeFile
from lerobot_tools.prefetch.lock import LockFile, default_lock_path
from lerobot_tools.prefetch.offline import judge_local, offline_job
from lerobot_tools.prefetch.plan import RepoJob, episode_files, meta_files, meta_only_files, plan_jobs, wanted_episodes
from lerobot_tools.prefetch.report import (PrefetchReport, RepoResult, new_result, screen_listing,
                                           summarise_paths)

log = logging.getLogger("lerobot_tools.prefetch")

FILE_LOCK_TIMEOUT_S = 3600.0


@dataclass
class PrefetchOptions:
    """How to run a prefetch (the CLI options, plus hooks for tests).

    Attributes:
        local_dir_root: destination root (default ``$HF_LEROBOT_HOME``); each repo goes to ``<root>/<repo_id>``.
        max_workers: download threads (>= 1). Default 16.
        dry_run: resolve and list only; write nothing, download nothing.
        offline: make no request; report completeness against cached tree listings. None = ``HF_HUB_OFFLINE``.
        lock_path: the lock file (default beside the mixture: ``mixture.txt`` -> ``mixture.lock``).
        use_lock: read and write the lock file at all.
        update_lock: resolve branches/tags again even when the lock has a commit.
        api_requests, resolve_requests: requests per window for the Hub's ``"api"`` and ``"resolvers"``
            buckets (None: 500 / 3,000 anonymous, 1,000 / 5,000 with a token; replaced by what the
            server advertises in ``RateLimit-Policy``). An explicit value also caps what the server allows.
        window_s: the window of those quotas in seconds (default 300, the Hub's 5 minutes).
        budget_fraction: share of every bucket this process takes, 0 < F <= 1 (e.g. 1/N for N processes
            prefetching from one address or token at once).
        max_wait_s: the longest one request may wait for rate limits and retries, in total (seconds,
            default 900); a longer wait asked for fails that request with a one-line message.
        announce: called with a one-line message before each wait of 1 s or more (default: stderr).
        endpoint: Hub endpoint (default ``HF_ENDPOINT`` or https://huggingface.co).
        progress: progress bars on stderr (None = when stderr is a terminal).
        token: token override (None = ``HF_TOKEN``/stored token; False = none).
        clock, policy: time source and retry bounds (tests).
        max_consecutive_failures: failed files in a row after which a repo's remaining files are skipped.
        meta_only: fetch only ``meta/`` and the dataset card of every repo, and mark the copy
            (:mod:`lerobot_tools.dataset.downloads`): decide from the metadata before downloading the data.
    """

    local_dir_root: Path | None = None
    max_workers: int = 16
    dry_run: bool = False
    offline: bool | None = None
    lock_path: Path | None = None
    use_lock: bool = True
    update_lock: bool = False
    api_requests: int | None = None
    resolve_requests: int | None = None
    window_s: float = DEFAULT_WINDOW_S
    budget_fraction: float = 1.0
    max_wait_s: float = DEFAULT_MAX_WAIT_S
    announce: Callable[[str], None] | None = None
    endpoint: str | None = None
    progress: bool | None = None
    token: str | bool | None = None
    clock: Clock | None = None
    policy: RetryPolicy | None = None
    max_consecutive_failures: int = 3
    meta_only: bool = False



# ---------------------------------------------------------------------------------------------- online
class _Bars:
    """Two tqdm bars (files, bytes) on stderr, totals growing as repos are planned."""

    def __init__(self, enabled: bool):
        self.enabled = enabled
        self._lock = threading.Lock()
        if enabled:
            from tqdm import tqdm

            self.files = tqdm(total=0, unit="file", desc="files", position=0, dynamic_ncols=True, leave=True)
            self.bytes = tqdm(total=0, unit="B", unit_scale=True, unit_divisor=1024, desc="bytes", position=1,
                              dynamic_ncols=True, leave=True)

    def add(self, files: int, nbytes: int) -> None:
        if not self.enabled:
            return
        with self._lock:
            self.files.total += files
            self.bytes.total += nbytes
            self.files.refresh()
            self.bytes.refresh()

    def file_done(self) -> None:
        if self.enabled:
            self.files.update(1)

    def got_bytes(self, n: int) -> None:
        if self.enabled:
            self.bytes.update(n)

    def announce(self, message: str) -> None:
        """One line on stderr (above the bars when they are shown)."""
        line = f"lrtool prefetch: {message}"
        if self.enabled:
            from tqdm import tqdm

            tqdm.write(line, file=sys.stderr)
        else:
            sys.stderr.write(line + "\n")
            sys.stderr.flush()

    def close(self) -> None:
        if self.enabled:
            self.files.close()
            self.bytes.close()


class _Runner:
    def __init__(self, options: PrefetchOptions, lock: LockFile | None, client: HubClient, bars: _Bars):
        self.o = options
        self.lock = lock
        self.client = client
        self.bars = bars
        self._futures: list[Future] = []
        self._flock = threading.Lock()
        self.stopping = False
        self.files_pool = ThreadPoolExecutor(max_workers=options.max_workers, thread_name_prefix="lrtool-file")

    # -- per job
    def prepare(self, job: RepoJob, res: RepoResult) -> None:
        res._t0 = time.perf_counter()
        try:
            if job.error:
                res.status = "error"
                res.problems.append(job.error)
                return
            if job.is_local:  # nothing to fetch: judged by the files its metadata references, as --offline does
                judge_local(job, res)
                return
            commit = self._commit(job, res)
            res.commit = commit
            tree = self._tree(job, res, commit)
            if self.o.meta_only:
                res.kind = "meta-only"
                needed = sorted(meta_only_files(tree))
                if not meta_files(tree):
                    raise LrtoolError("the repo has no meta/ files; not a LeRobot dataset", job.repo_id)
            elif job.whole:
                needed = sorted(tree)
            else:
                meta = meta_files(tree)
                if not meta:
                    raise LrtoolError("the repo has no meta/ files; not a LeRobot dataset", job.repo_id)
                missing_meta = self._check(job, res, commit, tree, sorted(meta))
                if missing_meta and self.o.dry_run:
                    res.missing += len(missing_meta)
                    res.bytes_missing += sum(tree[p].size for p in missing_meta)
                    res.notes.append("meta/ is not on disk: the episode files are planned once it is fetched")
                    return
                if missing_meta:
                    futs = self._submit(job, res, commit, tree, missing_meta)
                    # Future.result, not concurrent.futures.wait: a future cancelled by Ctrl-C wakes it
                    if not all([f.result() for f in futs]):
                        raise LrtoolError("meta/ files could not be fetched; the episode subset cannot be planned",
                                          job.repo_id)
                files, probs = episode_files(job.dest, job.selectors)
                for p in probs:
                    res.problem(p)
                upstream = sorted(files - set(tree))
                if upstream:
                    with res._lock:
                        res.missing_upstream += len(upstream)
                    res.problem(summarise_paths("files the metadata references are not in the repo", upstream))
                needed = sorted((files & set(tree)) - meta)
            missing = self._check(job, res, commit, tree, needed)
            if self.o.dry_run:
                res.missing += len(missing)
                res.bytes_missing += sum(tree[p].size for p in missing)
                return
            self._submit(job, res, commit, tree, missing)
        except HubError as exc:
            res.status = "error"
            hint = ""
            if res.commit_from == "lock" and exc.code == "RevisionNotFound":
                hint = " (the locked commit is gone upstream; run with --update-lock)"
            res.problem(str(exc) + hint)
        except LrtoolError as exc:
            res.status = "error"
            res.problem(str(exc))
        except CancelledError:
            res.status = "error"
            res.problem("interrupted")
        finally:
            with res._lock:
                res._t1 = max(res._t1, time.perf_counter())

    def _commit(self, job: RepoJob, res: RepoResult) -> str:
        if job.revision_is_sha:
            res.commit_from = "sha"
            return job.revision
        if self.lock is not None and not self.o.update_lock:
            c = self.lock.commit(job.repo_id, job.revision)
            if c:
                res.commit_from = "lock"
                return c
        res.commit_from = "resolved"
        return self.client.resolve_revision(job.repo_id, job.revision, res.stats)

    def _tree(self, job: RepoJob, res: RepoResult, commit: str) -> dict[str, TreeFile]:
        """The listing of ``commit`` (cached, else one paginated listing, then cached), every path checked
        before anything is written (:func:`~lerobot_tools.prefetch.report.screen_listing`)."""
        tree = local.read_tree_cache(job.dest, commit)
        if tree is not None:
            return screen_listing(job, res, tree)
        tree = self.client.list_tree(job.repo_id, commit, res.stats)
        usable = screen_listing(job, res, tree)  # raises before the cache (or anything) is written
        if not self.o.dry_run:
            try:
                local.write_tree_cache(job.dest, commit, tree)
            except OSError as exc:
                res.notes.append(f"tree listing not cached ({exc.strerror or exc})")
        return usable

    def _check(self, job: RepoJob, res: RepoResult, commit: str, tree: dict[str, TreeFile],
               paths: list[str]) -> list[str]:
        """On-disk check (no request); returns the paths to download and counts the present ones."""
        missing: list[str] = []
        for p in paths:
            ok, how = local.check_present(job.dest, tree[p], commit)
            if ok:
                if how == "hash" and not self.o.dry_run:
                    try:
                        local.write_metadata(job.dest, p, commit, tree[p].etag)
                    except OSError:
                        pass
            else:
                missing.append(p)
        with res._lock:
            res.needed += len(paths)
            res.present += len(paths) - len(missing)
        return missing

    def _submit(self, job: RepoJob, res: RepoResult, commit: str, tree: dict[str, TreeFile],
                paths: list[str]) -> list[Future]:
        if paths:
            local.ensure_hf_dir(job.dest)
        self.bars.add(len(paths), sum(tree[p].size for p in paths))
        futs = [self.files_pool.submit(self._fetch, job, res, commit, tree[p]) for p in paths]
        with self._flock:
            self._futures.extend(futs)
        return futs

    # -- per file
    def _fetch(self, job: RepoJob, res: RepoResult, commit: str, entry: TreeFile) -> bool:
        try:
            with res._lock:
                skip = res._consecutive_failures >= self.o.max_consecutive_failures
            if skip or self.stopping:
                with res._lock:
                    res._skipped += 1
                ok = False
            else:
                ok = self._fetch_locked(job, res, commit, entry)
        except Exception as exc:  # one file's failure must never take the run down
            log.debug("fetch of %s failed", entry.path, exc_info=True)
            res.problem(f"{entry.path}: {exc}")
            ok = False
        with res._lock:
            if ok:
                res._consecutive_failures = 0
            else:
                res.failed += 1
                res._consecutive_failures += 1
            res._t1 = max(res._t1, time.perf_counter())
        self.bars.file_done()
        return ok

    def _fetch_locked(self, job: RepoJob, res: RepoResult, commit: str, entry: TreeFile) -> bool:
        from filelock import FileLock, SoftFileLock

        final = job.dest / entry.path
        final.parent.mkdir(parents=True, exist_ok=True)
        lp = local.lock_path(job.dest, entry.path)
        lp.parent.mkdir(parents=True, exist_ok=True)
        flock = FileLock(str(lp), timeout=FILE_LOCK_TIMEOUT_S, mode=0o664)
        try:
            flock.acquire()
        except NotImplementedError:  # filesystem without flock (some network mounts)
            flock = SoftFileLock(str(lp), timeout=FILE_LOCK_TIMEOUT_S)
            flock.acquire()
        try:
            ok, how = local.check_present(job.dest, entry, commit)
            if ok:  # another process (or an earlier entry) finished it meanwhile
                if how == "hash":
                    local.write_metadata(job.dest, entry.path, commit, entry.etag)
                with res._lock:
                    res.present += 1
                return True
            local.remove_stale_temps(final)
            nbytes = 0
            with atomic_path(final) as tmp:
                nbytes = self.client.download(job.repo_id, commit, entry, tmp, res.stats,
                                              on_bytes=self.bars.got_bytes)
            local.write_metadata(job.dest, entry.path, commit, entry.etag)
            with res._lock:
                res.downloaded += 1
                res.bytes_downloaded += nbytes
            return True
        except HubError as exc:
            res.problem(str(exc))
            return False
        except OSError as exc:
            res.problem(f"{entry.path}: cannot be written ({exc.strerror or exc})")
            return False
        finally:
            flock.release()

    def wait_all(self) -> None:
        """Wait for every submitted download (including ones submitted while waiting)."""
        while True:
            with self._flock:
                pending = [f for f in self._futures if not f.done()]
            if not pending:
                return
            for f in pending:
                with contextlib.suppress(CancelledError):
                    f.result()

    def close(self) -> None:
        self.files_pool.shutdown(wait=True)

    def cancel(self) -> None:
        """Ctrl-C: drop queued downloads; the ones in flight finish or leave only temporary files."""
        self.stopping = True
        self.files_pool.shutdown(wait=False, cancel_futures=True)


def _finish(res: RepoResult, dry_run: bool) -> None:
    """Set the final status and wall time of a job whose files are all done."""
    if res._t1:
        res.seconds = max(0.0, res._t1 - res._t0)
    if res._skipped:
        res.problems.append(f"{res._skipped} file(s) not attempted after repeated failures in this repo")
    if res.status == "error":
        return
    still_missing = res.missing if dry_run else 0
    ok = res.failed == 0 and res.missing_upstream == 0 and still_missing == 0 and not res.problems
    res.status = "complete" if ok else "incomplete"


def _record_state(job: RepoJob, res: RepoResult, meta_only: bool) -> None:
    """Keep the copy's download marker (:mod:`lerobot_tools.dataset.downloads`) true after a complete job: a
    ``--meta-only`` fetch marks a copy that holds no data yet; an episode subset adds its episodes to a marked
    copy; a whole repo clears the mark."""
    from lerobot_tools.dataset.downloads import META_ONLY, PARTIAL, DownloadState, clear_state, read_state, write_state
    from lerobot_tools.dataset.model import Dataset

    state = read_state(job.dest)
    try:
        if meta_only:
            if state is None and any((job.dest / d).is_dir() and any((job.dest / d).rglob("*.*"))
                                     for d in ("data", "videos")):
                return  # an existing copy with data: a meta-only fetch says nothing about it
            write_state(job.dest, state or DownloadState(META_ONLY, res.commit))
        elif job.whole:
            clear_state(job.dest)
        elif state is not None:
            wanted, _ = wanted_episodes(Dataset(job.dest), job.selectors)
            write_state(job.dest, DownloadState(PARTIAL, res.commit, state.episodes | wanted))
    except (OSError, LrtoolError) as exc:
        res.notes.append(f"download state not recorded in {job.dest}/.lrtool ({exc})")


def prefetch(mixture: str | Path, options: PrefetchOptions | None = None, *, only: list[int] | None = None,
             write_lock: bool = True) -> PrefetchReport:
    """Prewarm the local copies of every dataset a mixture names.

    Args:
        mixture: a mixture file (plain text or OpenTau JSON; :func:`lerobot_tools.dataset.mixture.read_mixture`).
        options: see :class:`PrefetchOptions`.
        only: positions (in :func:`~lerobot_tools.prefetch.plan.plan_jobs` order) of the repo jobs to run; the
            others are left out of the report (one task of a distributed run).
        write_lock: update the lock file (a distributed run writes it once, when the parts are merged).

    Returns:
        a :class:`PrefetchReport` (one :class:`RepoResult` per repo job, in mixture order).

    Raises:
        UsageError: the mixture or the lock file cannot be read, or an option is out of range
            (the CLI exits 2).
    """
    o = options or PrefetchOptions()
    if o.max_workers < 1:
        raise UsageError(f"--max-workers must be >= 1, got {o.max_workers}")
    mixture = Path(mixture)
    t0 = time.perf_counter()
    entries = read_mixture(mixture)
    jobs = plan_jobs(entries, o.local_dir_root)
    if only is not None:
        jobs = [jobs[i] for i in only]
    offline = _env.hub_offline() if o.offline is None else bool(o.offline)
    lock_path = (Path(o.lock_path) if o.lock_path is not None else default_lock_path(mixture)) if o.use_lock else None
    lock = LockFile.read(lock_path) if lock_path is not None else None
    if lock_path is not None and write_lock and not o.dry_run and not offline and os.path.lexists(lock_path):
        check_output_file(lock_path, "lock file", error=UsageError)  # a FIFO, device, symlink: refused up front

    if offline:
        results = [offline_job(job, lock) for job in jobs]
        return PrefetchReport(mixture, results, None, True, o.dry_run, lock_path, False, 0,
                              time.perf_counter() - t0)

    endpoint = (o.endpoint or _env.endpoint_from_env()).rstrip("/")
    problem = _env.endpoint_problem(endpoint)  # before huggingface_hub is imported: it fails on import for a bad URL
    if problem:
        raise UsageError(f"Hub endpoint {endpoint!r} is {problem} (set HF_ENDPOINT to an http(s) URL)")
    token = o.token if isinstance(o.token, str) else (None if o.token is False else get_token_to_send())
    progress = o.progress if o.progress is not None else sys.stderr.isatty()
    bars = _Bars(progress)
    try:
        budgets = Budgets(authenticated=bool(token), api_requests=o.api_requests,
                          resolve_requests=o.resolve_requests, window_s=o.window_s, fraction=o.budget_fraction,
                          max_wait_s=o.max_wait_s, clock=o.clock, announce=o.announce or bars.announce)
    except ValueError as exc:
        bars.close()
        raise UsageError(str(exc)) from None
    client = HubClient(endpoint, budgets, token=token or False, clock=o.clock, policy=o.policy)
    runner = _Runner(o, lock, client, bars)
    results = [new_result(job) for job in jobs]
    prep_pool = ThreadPoolExecutor(max_workers=max(1, min(o.max_workers, len(jobs))), thread_name_prefix="lrtool-repo")
    try:
        for fut in [prep_pool.submit(runner.prepare, job, res) for job, res in zip(jobs, results)]:
            fut.result()
        runner.wait_all()
    except KeyboardInterrupt:
        runner.cancel()  # queued downloads are dropped; a repo waiting on them stops (CancelledError)
        prep_pool.shutdown(wait=False, cancel_futures=True)
        raise
    finally:
        prep_pool.shutdown(wait=True)
        runner.close()
        bars.close()
    for job, res in zip(jobs, results):
        _finish(res, o.dry_run)
        if not o.dry_run and res.status == "complete" and job.repo_id:
            _record_state(job, res, o.meta_only)

    report = PrefetchReport(mixture, results, endpoint, False, o.dry_run, lock_path,
                            requests=budgets.used, seconds=time.perf_counter() - t0, budgets=budgets.to_dict())
    if lock is not None and not o.dry_run and write_lock:
        keys = {job.key for job in jobs if job.repo_id}
        lock.retain(keys)
        for job, res in zip(jobs, results):
            if job.repo_id and res.commit and res.status != "error":
                lock.set(job.repo_id, job.revision, res.commit)
        lock.endpoint = endpoint
        try:
            report.lock_written = lock.write()
        except OSError as exc:
            report.notes.append(f"lock file {lock.path} not written ({exc.strerror or exc})")
        except UsageError as exc:
            report.notes.append(f"lock file {lock.path} not written ({exc.message})")
    return report
