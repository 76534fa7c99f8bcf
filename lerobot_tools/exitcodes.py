"""Exit statuses of every ``lrtool`` command, and the result protocol the commands end with.

The numbers follow the shell conventions: 128 + signal number for a run stopped by a signal (SIGINT = 2,
SIGTERM = 15; POSIX ``sh`` "Exit Status" and ``signal(7)``).
"""

from __future__ import annotations

from typing import IO, Any, Protocol, runtime_checkable

OK = 0
"""Nothing wrong: no error-level finding, every action done."""

FAILED = 1
"""The run completed and found errors, or an action failed (the report says which)."""

CANNOT_RUN = 2
"""The tool could not run: bad option, unreadable mixture file, missing dependency."""

INTERRUPTED = 130
"""Stopped by SIGINT (Ctrl-C): 128 + 2."""

TERMINATED = 143
"""Stopped by SIGTERM (``kill``, a batch scheduler's time limit): 128 + 15."""


@runtime_checkable
class CommandResult(Protocol):
    """What every command's library call returns (validate, reshard, diagnose-decode, prefetch, repair, smoke).

    ``exit_status`` is one of the statuses above (:data:`OK` or :data:`FAILED`; the others are set by the CLI);
    ``to_dict()`` is the ``--format json`` document; ``render_text(out)`` writes the human report.
    """

    @property
    def exit_status(self) -> int: ...

    def to_dict(self) -> dict[str, Any]: ...

    def render_text(self, out: IO[str], *, color: bool = False) -> None: ...
