"""One Ctrl-C / SIGTERM policy for every command and its worker processes.

* In the ``lrtool`` process, SIGTERM (``kill``, a batch scheduler's time limit) is raised as
  :class:`Terminated`, a :class:`KeyboardInterrupt`, so it unwinds exactly like Ctrl-C: every
  ``finally`` and every ``except BaseException`` cleanup runs (temporary files of atomic writes are removed,
  repair restores its backup), then the CLI prints one line and exits 130 (SIGINT) or 143 (SIGTERM)
  (:mod:`lerobot_tools.exitcodes`).
* Worker processes (:func:`lerobot_tools._parallel.map_ordered`: ``--jobs``, and the tasks of ``--executor local``)
  ignore SIGINT (the parent decides), stop the item they are working on when sent SIGTERM (the same unwinding,
  then they exit), exit at once when idle, and are sent SIGTERM by the kernel when the parent dies (Linux
  ``PR_SET_PDEATHSIG``, prctl(2)), so none goes on with its work, or holds its parent's stdout/stderr, after it.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
from typing import Callable, Iterator, TypeVar

from lerobot_tools import exitcodes

T = TypeVar("T")
R = TypeVar("R")


class Terminated(KeyboardInterrupt):
    """SIGTERM received: handled like Ctrl-C, exit status 143."""


def exit_status_for(exc: BaseException) -> int:
    """143 for :class:`Terminated`, 130 for any other :class:`KeyboardInterrupt`."""
    return exitcodes.TERMINATED if isinstance(exc, Terminated) else exitcodes.INTERRUPTED


#: The signal received while :func:`sigterm_raises` was active (None: none yet).
_received: int | None = None


def _raise_for(signum: int) -> None:
    raise Terminated() if signum == signal.SIGTERM else KeyboardInterrupt()


def _on_signal(signum, frame) -> None:
    global _received
    _received = signum
    _raise_for(signum)


def received() -> int | None:
    """The SIGINT/SIGTERM this process received while :func:`sigterm_raises` was active, or None."""
    return _received


def check_interrupted() -> None:
    """Raise again for a signal already received: Python drops an exception raised while a finaliser
    (``__del__``, a weakref callback) runs, so the first :class:`KeyboardInterrupt` can be lost; long loops call
    this between items so the run still stops at the next one.

    Raises:
        Terminated: SIGTERM was received.
        KeyboardInterrupt: SIGINT was received.
    """
    if _received is not None:
        _raise_for(_received)


@contextlib.contextmanager
def sigterm_raises() -> Iterator[None]:
    """While the block runs, SIGTERM raises :class:`Terminated` and SIGINT :class:`KeyboardInterrupt` in the main
    thread, and either is remembered (:func:`received`, :func:`check_interrupted`) until the block ends; then the
    previous handlers are restored and the signal forgotten, so that a later call in the same process (after a
    command run in-process, e.g. by click's CliRunner) is not stopped by it. Outside the main thread this does
    nothing (Python only allows handlers there)."""
    global _received
    try:
        _received = None
        previous = {sig: signal.signal(sig, _on_signal) for sig in (signal.SIGTERM, signal.SIGINT)}
    except ValueError:  # not the main thread
        yield
        return
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        _received = None


# ---------------------------------------------------------------------------------------------- workers
_busy = False
_stopping = False


def _worker_sigterm(signum, frame) -> None:
    global _stopping
    if _stopping:  # already unwinding: a second SIGTERM (the pool terminates the other workers when one exits)
        return     # must not interrupt the cleanup of the first
    _stopping = True
    if _busy:
        raise Terminated()  # unwind the item: its cleanups run, then the worker exits (see run_in_worker)
    os._exit(exitcodes.TERMINATED)


def init_worker(parent_pid: int) -> None:
    """Process-pool initializer: ignore SIGINT, stop on SIGTERM, get SIGTERM when the parent dies."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, _worker_sigterm)
    if sys.platform.startswith("linux"):
        with contextlib.suppress(Exception):
            import ctypes

            PR_SET_PDEATHSIG = 1
            ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)
    if os.getppid() != parent_pid:  # the parent died before the death signal was armed
        os._exit(exitcodes.TERMINATED)


def run_in_worker(fn: Callable[[T], R], item: T) -> R:
    """Run one pool item; after a SIGTERM the worker takes no further item."""
    global _busy
    if _stopping:
        os._exit(exitcodes.TERMINATED)
    _busy = True
    try:
        return fn(item)
    finally:
        _busy = False
        if _stopping:
            os._exit(exitcodes.TERMINATED)
