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

    def within(self, root: str | Path | None) -> str:
        """The one line for a report that already names the folder ``root`` (a dataset's heading): ``str(self)``
        without ``root`` in front when it is the path concerned; a file inside it keeps its path."""
        if self.path is not None and root is not None and Path(self.path) == Path(root):
            return self.message
        return str(self)


class UsageError(LrtoolError):
    """The tool cannot run with these arguments (exit status 2): bad option, unreadable mixture file."""


class DatasetError(LrtoolError):
    """A dataset file could not be read or has the wrong structure (missing, malformed, corrupt)."""


def one_line(exc: BaseException, limit: int | None = 200, *, typed: bool = False) -> str:
    """One line describing ``exc``, for a report line or an error message.

    pyarrow, torch and FFmpeg messages can run to many lines (C++ backtraces, hints); lrtool prints one line
    per problem. This is the one place that rule lives.

    Args:
        exc: any exception.
        limit: longest message part in characters; a longer one is cut to ``limit - 1`` characters plus
            ``"…"``. None: no limit.
        typed: prefix the exception's class name (``"ArrowInvalid: ..."``); the prefix is not counted in ``limit``.

    Returns:
        The first non-blank line of ``str(exc)``, stripped, or the class name when the message is empty.
    """
    text = next((ln.strip() for ln in str(exc).splitlines() if ln.strip()), "") or type(exc).__name__
    if limit is not None and len(text) > limit:
        text = text[: limit - 1] + "…"
    return f"{type(exc).__name__}: {text}" if typed else text


def os_error_text(exc: OSError) -> str:
    """``No space left on device (errno 28: ENOSPC)`` from an OSError raised by Python or by pyarrow (whose errors
    carry the code only in their text: ``"[Errno 28] Error writing bytes to file. Detail: [errno 28] ..."``);
    :func:`one_line` of it when no code can be found."""
    import errno
    import os
    import re

    code = exc.errno
    if code is None:
        m = re.search(r"\[errno (\d+)\]", str(exc), re.IGNORECASE)
        code = int(m.group(1)) if m else None
    if code:
        return f"{os.strerror(code)} (errno {code}: {errno.errorcode.get(code, '?')})"
    return one_line(exc)
