"""Exceptions shared by every command.

Each carries a one-line, user-facing message that names the file and the problem; the CLI prints it
without a traceback.
"""

from __future__ import annotations

from pathlib import Path


class LrtoolError(Exception):
    """Base class: a problem the user can act on, reported as one line.

    Args:
        message: what went wrong, in one line.
        path: the file or folder concerned, if any; prefixed to the message when printed.
    """

    def __init__(self, message: str, path: str | Path | None = None):
        super().__init__(message)
        self.message = message
        self.path = str(path) if path is not None else None

    def __str__(self) -> str:
        return f"{self.path}: {self.message}" if self.path else self.message


class UsageError(LrtoolError):
    """The tool cannot run with these arguments (exit status 2): bad option, unreadable mixture file."""


class DatasetError(LrtoolError):
    """A dataset file could not be read or has the wrong structure (missing, malformed, corrupt)."""
