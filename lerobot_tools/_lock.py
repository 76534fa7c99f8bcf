"""One writer per dataset: an advisory lock every command that writes into a dataset takes first.

``lrtool reshard``, ``lrtool repair`` and ``lrtool repair --undo`` hold :func:`dataset_lock` from before they
clean up a killed run's leftovers until their last write, so two of them on one dataset never interleave (one
deleting the other's live temporary file, an undo restoring files a repair is still writing). A second run
waits a bounded time (``timeout``, default :data:`DEFAULT_LOCK_TIMEOUT_S`), saying on stderr what it waits for,
then gives up with :class:`DatasetLocked` (one line).

The lock is an OS file lock (``flock``) taken with the `filelock <https://py-filelock.readthedocs.io>`_ library
(:class:`filelock.FileLock`) on ``<root>/.lrtool/lock``; when that folder cannot be created (a read-only dataset
root), beside the root (``<parent>/.<name>.lrtool-lock``), else in the temporary folder keyed by the root's real
path. The kernel drops the lock when the holder dies, so a killed run never leaves a stale lock. On release the
holder unlinks the lock file while still holding it, and removes an empty ``.lrtool/``, so a dataset that was
not changed keeps no trace; a waiter that then wins the lock on the unlinked file sees that (``filelock``
checks the link count) and retries on the new one.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Iterator

from lerobot_tools.errors import LrtoolError

LRTOOL_DIR = ".lrtool"
LOCK_NAME = "lock"
DEFAULT_LOCK_TIMEOUT_S = 60.0
"""How long a second writer waits for the dataset lock by default (seconds)."""
_QUIET_S = 0.5
"""How long a shared holder waits before saying so (seconds): a sibling task leaving holds the lock exclusively
for an instant, which is not another run writing."""


class DatasetLocked(LrtoolError):
    """Another lrtool run holds the dataset's write lock and did not release it within the timeout."""


def _candidates(root: Path) -> list[tuple[Path, bool]]:
    """Lock file locations, in order of preference, with whether the folder holding it is ``root/.lrtool``."""
    real = root.resolve()
    key = hashlib.sha256(os.fsencode(str(real))).hexdigest()[:32]
    return [
        (root / LRTOOL_DIR / LOCK_NAME, True),
        (real.parent / f".{real.name}.lrtool-lock", False),
        (Path(tempfile.gettempdir()) / "lrtool-locks" / f"{key}.lock", False),
    ]


def _prepare_dir(path: Path, in_dataset: bool, root: Path) -> bool:
    """Create the folder of a lock file; False when it cannot be created or written (try the next location)."""
    folder = path.parent
    if in_dataset and folder.is_symlink():
        raise LrtoolError(f"{LRTOOL_DIR} is a symlink; lrtool keeps its lock and backups only in a real folder inside "
                          "the dataset: remove it", root)
    try:
        folder.mkdir(parents=not in_dataset, exist_ok=True)
    except OSError:
        return False
    return os.access(folder, os.W_OK | os.X_OK)


def _lock_path(root: Path) -> tuple[Path, bool]:
    for path, in_dataset in _candidates(root):
        if _prepare_dir(path, in_dataset, root):
            return path, in_dataset
    raise LrtoolError("no place to create the dataset's write lock (the dataset, its parent folder and the temporary "
                      "folder are read-only)", root)


def _acquire(lock, path: Path, in_dataset: bool, root: Path, deadline: float) -> None:
    import filelock

    while True:
        _prepare_dir(path, in_dataset, root)  # a releasing holder may just have removed an empty .lrtool/
        try:
            lock.acquire(timeout=max(0.0, deadline - time.monotonic()), poll_interval=0.05)
            return
        except FileNotFoundError:
            if time.monotonic() >= deadline:
                raise filelock.Timeout(str(path)) from None


@contextlib.contextmanager
def dataset_lock(root: str | os.PathLike, *, timeout: float = DEFAULT_LOCK_TIMEOUT_S,
                 what: str = "writing") -> Iterator[Path]:
    """Hold the write lock of the dataset at ``root`` for the duration of the block.

    Args:
        root: the dataset folder.
        timeout: seconds to wait for another run to finish (0: do not wait). Must be finite and >= 0.
        what: what this run is about to do, for the waiting message (``"resharding"``).

    Yields:
        The lock file's path.

    Raises:
        DatasetLocked: another run still holds the lock after ``timeout`` seconds.
        LrtoolError: ``root/.lrtool`` is a symlink, or no lock file can be created anywhere.
    """
    import filelock

    root = Path(root)
    path, in_dataset = _lock_path(root)
    lock = filelock.FileLock(str(path), thread_local=False)
    deadline = time.monotonic() + timeout
    try:
        _acquire(lock, path, in_dataset, root, time.monotonic())
    except filelock.Timeout:
        if timeout > 0:
            until = time.strftime("%H:%M:%S", time.localtime(time.time() + timeout))
            print(f"lrtool: {root}: another lrtool run is writing this dataset; waiting for it to finish before "
                  f"{what} (until {until}, --lock-timeout {timeout:g} s)", file=sys.stderr, flush=True)
        try:
            _acquire(lock, path, in_dataset, root, deadline)
        except filelock.Timeout:
            raise DatasetLocked(f"another lrtool run is writing this dataset (lock {path} held); gave up after "
                                f"{timeout:g} s: run again when it has finished, or raise --lock-timeout",
                                root) from None
    try:
        ident = os.stat(path)
    except OSError:
        ident = None
    try:
        yield path
    finally:
        with contextlib.suppress(OSError):  # unlink while still holding it (see module docstring)
            now = os.stat(path)
            if ident is not None and (now.st_dev, now.st_ino) == (ident.st_dev, ident.st_ino):
                os.unlink(path)
        lock.release()
        if in_dataset:
            with contextlib.suppress(OSError):
                path.parent.rmdir()  # only when empty: backups stay


@contextlib.contextmanager
def shared_dataset_lock(root: str | os.PathLike, *, timeout: float = DEFAULT_LOCK_TIMEOUT_S,
                        what: str = "writing") -> Iterator[Path]:
    """Hold the dataset's write lock in shared mode for the duration of the block.

    For the tasks of one distributed run that each write *different* files of one dataset (``lrtool reshard
    --shard``/``--executor``, one task per data file): they hold the lock together, while every exclusive holder
    (:func:`dataset_lock`: another reshard, a repair, an undo) is locked out as long as any of them writes, and
    they wait while an exclusive holder writes. It is ``flock(LOCK_SH)`` on the same lock file
    :func:`dataset_lock` uses (``filelock`` takes ``flock(LOCK_EX)``). An exclusive holder unlinks the file when
    it releases, so a lock won on an unlinked file is retried on the new one. The last shared holder to leave
    removes the lock file (and an empty ``.lrtool/``) when it can take it exclusively without waiting; a sibling
    that meets that instant waits silently (a waiter says on stderr what it waits for after :data:`_QUIET_S`),
    and one whose ``.lrtool/`` that holder just removed makes it again.

    Raises:
        DatasetLocked: an exclusive holder still holds the lock after ``timeout`` seconds.
        LrtoolError: as :func:`dataset_lock`; or the lock's folder vanished 1,000 times in a row before the lock
            file could be created in it.
    """
    import fcntl

    root = Path(root)
    path, in_dataset = _lock_path(root)
    start = time.monotonic()
    deadline = start + timeout
    told = False
    vanished = 0
    while True:
        _prepare_dir(path, in_dataset, root)
        try:
            fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        except FileNotFoundError:
            # the last holder out removed the empty .lrtool/ just after _prepare_dir made it: make it again
            vanished += 1
            if vanished < 1000:
                continue
            raise LrtoolError(f"the lock file's folder {path.parent} disappeared 1000 times in a row while lrtool "
                              "tried to create the lock in it", root) from None
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            if time.monotonic() >= deadline:
                raise DatasetLocked(f"another lrtool run is writing this dataset (lock {path} held); gave up after "
                                    f"{timeout:g} s: run again when it has finished, or raise --lock-timeout",
                                    root) from None
            # a sibling task leaving takes the lock exclusively for an instant (below): say nothing for that
            if not told and timeout > 0 and time.monotonic() - start >= _QUIET_S:
                until = time.strftime("%H:%M:%S", time.localtime(time.time() + timeout))
                print(f"lrtool: {root}: another lrtool run is writing this dataset; waiting for it to finish before "
                      f"{what} (until {until}, --lock-timeout {timeout:g} s)", file=sys.stderr, flush=True)
                told = True
            time.sleep(0.05)
            continue
        if os.fstat(fd).st_nlink == 0:  # an exclusive holder unlinked it on release: lock the new file
            os.close(fd)
            continue
        break
    try:
        yield path
    finally:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # nobody else holds it: leave no trace
            with contextlib.suppress(OSError):
                st, now = os.fstat(fd), os.stat(path)
                if (st.st_dev, st.st_ino) == (now.st_dev, now.st_ino):
                    os.unlink(path)
            last = True
        except OSError:
            last = False
        os.close(fd)
        if last and in_dataset:
            with contextlib.suppress(OSError):
                path.parent.rmdir()
