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


#: The keys every command's ``--format json`` document starts with (docs/output.md).
DOCUMENT_KEYS = ("command", "datasets", "summary", "exit_status")


def document(command: str, datasets: list, summary: dict[str, Any], exit_status: int, **own: Any) -> dict[str, Any]:
    """A command's JSON document: the top level every command shares, then its own keys (docs/output.md).

    Args:
        command: the command's name as typed (``"validate"``, ``"diagnose-decode"``...).
        datasets: one JSON object per dataset (a target, a repo a prefetch fetched), in order.
        summary: totals over the datasets.
        exit_status: the status the command exits with (:data:`OK` or :data:`FAILED`...).
        own: the command's other top-level keys (``options``, ``mixture``...), after the shared ones.

    Raises:
        ValueError: ``own`` repeats a shared key (a programming error).
    """
    clash = set(own) & set(DOCUMENT_KEYS)
    if clash:
        raise ValueError(f"{sorted(clash)} are shared top-level keys, not a command's own")
    return {"command": command, "datasets": datasets, "summary": summary, "exit_status": exit_status, **own}


def status_summary(statuses: list[int]) -> dict[str, int]:
    """``summary`` of a command whose datasets each end with an exit status (repair): how many ended with
    each of :data:`OK`, :data:`FAILED` and :data:`CANNOT_RUN`."""
    return {"datasets": len(statuses), "ok": sum(1 for s in statuses if s == OK),
            "failed": sum(1 for s in statuses if s == FAILED),
            "cannot_run": sum(1 for s in statuses if s == CANNOT_RUN)}
