"""Bounded reads and atomic, verified file replacement: the one way lrtool reads and writes files.

**Reading.** Every file lrtool parses (``meta/info.json``, JSON Lines tables, ``stats.json``, mixture files
and their ``$ref`` includes, backup manifests, baselines, ``refs/`` files) is opened with
:func:`open_regular`: it must be a regular file (a FIFO, a device or a symlink to one is refused before a
byte is read, so a ``$ref`` to ``/dev/zero`` cannot exhaust memory and a FIFO cannot hang the run) and it is
read with a size cap (:data:`MAX_JSON_BYTES`, 64 MiB, for JSON metadata). :func:`loads_json` parses JSON and
refuses documents nested deeper than :data:`MAX_JSON_DEPTH` with a one-line error (no ``RecursionError``).

**Writing.**
Every rewrite goes to a temporary file in the same folder (so the final rename stays on one
filesystem), is flushed and fsynced, optionally verified, then atomically replaces the original with
``os.replace``; the folder is fsynced so the rename survives a crash. A process killed at any moment
leaves either the original or the complete new file, plus at most a temporary file whose name starts
with :data:`TMP_PREFIX`, which :func:`clean_stale_temps` removes on the next run.
"""

from __future__ import annotations

import contextlib
import json
import os
import stat
import secrets
from pathlib import Path
from typing import IO, Any, Callable, Iterator

from lerobot_tools.errors import LrtoolError

TMP_PREFIX = ".lrtool-tmp-"

MAX_JSON_BYTES = 64 * 2**20
"""Size cap for one JSON metadata file (info.json, stats.json, a mixture, a manifest): 64 MiB. lerobot's own
metadata files are kilobytes to a few megabytes."""

MAX_JSONL_BYTES = 4 * 2**30
"""Size cap for one JSON Lines table (``episodes.jsonl``...): 4 GiB. Tables are streamed line by line, so
this bounds time, not memory; each line is capped at :data:`MAX_JSON_BYTES`."""

MAX_JSON_DEPTH = 100
"""Deepest nesting of arrays/objects accepted in a JSON document. LeRobot metadata nests 5-6 levels (image
stats are ``[[[x]], [[y]], [[z]]]`` inside a feature inside the file)."""


def _mib(n: int) -> str:
    return f"{n / 2**20:.0f} MiB" if n >= 2**20 else f"{n} bytes"


def _kind(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "a folder"
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    return "not a regular file"


def open_regular(path: str | os.PathLike, *, limit: int | None = MAX_JSON_BYTES, name: str | os.PathLike | None = None,
                 error: type[LrtoolError] = LrtoolError, what: str = "JSON metadata") -> IO[bytes]:
    """Open a regular file for reading in binary mode, refusing anything else before reading a byte.

    The file is opened non-blocking (a FIFO cannot hang the open) and checked with ``fstat`` on the open
    descriptor (no race between check and read); symlinks are followed, so a symlink to a device is refused
    as a device.

    Args:
        path: the file.
        limit: size cap in bytes (None: no cap). A larger file is refused.
        name: how messages name the file (default: ``path``).
        error: the :class:`~lerobot_tools.errors.LrtoolError` subclass raised for a refused file.
        what: what the cap is for, in messages (``"JSON metadata"``).

    Returns:
        A binary file object positioned at the start; the caller closes it.

    Raises:
        OSError: the file cannot be opened (FileNotFoundError, PermissionError...).
        ``error``: not a regular file (a folder, FIFO, socket, device), or larger than ``limit``.
    """
    label = name if name is not None else path
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_CLOEXEC", 0)
    fd = os.open(os.fspath(path), flags)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise error(f"is {_kind(st.st_mode)}, not a regular file; lrtool only reads regular files", label)
        if limit is not None and st.st_size > limit:
            raise error(f"is {st.st_size / 2**20:.1f} MiB, over the {_mib(limit)} limit for {what} files", label)
        if hasattr(os, "set_blocking"):
            os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def read_capped(path: str | os.PathLike, *, limit: int = MAX_JSON_BYTES, name: str | os.PathLike | None = None,
                error: type[LrtoolError] = LrtoolError, what: str = "JSON metadata") -> bytes:
    """The bytes of a regular file of at most ``limit`` bytes (see :func:`open_regular`).

    A file that grows past the cap while being read is refused too (at most ``limit + 1`` bytes are read).

    Raises:
        OSError: the file cannot be opened or read.
        ``error``: not a regular file, or larger than ``limit``.
    """
    with open_regular(path, limit=limit, name=name, error=error, what=what) as fh:
        data = fh.read(limit + 1)
    if len(data) > limit:
        raise error(f"is over the {_mib(limit)} limit for {what} files", name if name is not None else path)
    return data


def json_too_deep(obj: Any, limit: int = MAX_JSON_DEPTH) -> bool:
    """True when ``obj`` (parsed JSON) nests lists/dicts more than ``limit`` levels (iterative, no recursion)."""
    if not isinstance(obj, (dict, list)):
        return False
    stack: list[tuple[Any, int]] = [(obj, 1)]
    while stack:
        node, depth = stack.pop()
        children = node.values() if isinstance(node, dict) else node
        if depth > limit:
            return True
        stack.extend((c, depth + 1) for c in children if isinstance(c, (dict, list)))
    return False


def loads_json(text: str | bytes, name: str | os.PathLike | None = None, *,
               error: type[LrtoolError] = LrtoolError, depth: int = MAX_JSON_DEPTH) -> Any:
    """Parse a JSON document; every problem is one ``error`` naming ``name``.

    Raises:
        ``error``: not valid JSON (message, line, column), not UTF-8, or nested deeper than ``depth``.
    """
    try:
        obj = json.loads(text)
    except json.JSONDecodeError as exc:
        raise error(f"is not valid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}", name) from None
    except UnicodeDecodeError:
        raise error("is not UTF-8 text", name) from None
    except RecursionError:
        raise error(f"is JSON nested too deeply (more than {depth} levels)", name) from None
    except ValueError as exc:  # e.g. an integer of more than 4300 digits (sys.set_int_max_str_digits)
        raise error(f"is not valid JSON: {str(exc).splitlines()[0][:120]}", name) from None
    if isinstance(obj, (dict, list)) and json_too_deep(obj, depth):
        raise error(f"is JSON nested too deeply (more than {depth} levels)", name)
    return obj


def load_json_file(path: str | os.PathLike, name: str | os.PathLike | None = None, *, limit: int = MAX_JSON_BYTES,
                   error: type[LrtoolError] = LrtoolError) -> Any:
    """Read and parse a JSON file: a regular file, at most ``limit`` bytes, UTF-8, nested at most
    :data:`MAX_JSON_DEPTH` levels.

    Raises:
        OSError: the file cannot be opened or read (FileNotFoundError when missing).
        ``error``: refused (see :func:`open_regular`) or not valid JSON (see :func:`loads_json`).
    """
    data = read_capped(path, limit=limit, name=name, error=error)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise error("is not UTF-8 text", name if name is not None else path) from None
    return loads_json(text, name if name is not None else path, error=error)


def read_text_capped(path: str | os.PathLike, name: str | os.PathLike | None = None, *, limit: int = MAX_JSON_BYTES,
                     error: type[LrtoolError] = LrtoolError, what: str = "JSON metadata") -> str:
    """The UTF-8 text of a regular file of at most ``limit`` bytes.

    Raises:
        OSError: cannot be opened or read. ``error``: refused, or not UTF-8.
    """
    data = read_capped(path, limit=limit, name=name, error=error, what=what)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise error("is not UTF-8 text", name if name is not None else path) from None


def iter_lines_capped(fh: IO[bytes], *, line_limit: int = MAX_JSON_BYTES, name: str | os.PathLike | None = None,
                      error: type[LrtoolError] = LrtoolError) -> Iterator[tuple[int, bytes]]:
    """Yield ``(line_number, raw_line)`` from a binary file, refusing a line longer than ``line_limit``."""
    lineno = 0
    while True:
        line = fh.readline(line_limit + 1)
        if not line:
            return
        lineno += 1
        if len(line) > line_limit and not line.endswith(b"\n"):
            raise error(f"line {lineno} is over the {_mib(line_limit)} limit for one JSON line", name)
        yield lineno, line


def fsync_dir(path: Path) -> None:
    """fsync a directory so a rename inside it is durable (no-op where unsupported)."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def replaceable_problem(target: str | os.PathLike, *, regular_only: bool = False) -> str | None:
    """Why ``target`` must not be replaced by a file lrtool writes, or None (see :func:`atomic_path`).

    An existing ``target`` must be a regular file, or (unless ``regular_only``) a symlink, which is replaced
    itself, never the file it points to (a Hub snapshot's links into ``blobs/``): a device, a FIFO, a socket or a
    folder is never replaced. With ``regular_only`` (output files named on the command line) a symlink is
    refused too. A missing ``target`` needs an existing, writable folder.

    Returns:
        The problem as the end of a sentence about the file (``"is a FIFO, not a regular file; ..."``), or None.
    """
    target = Path(target)
    try:
        st = os.lstat(target)
    except (FileNotFoundError, NotADirectoryError):  # absent, or below something that is not a folder
        st = None
    except OSError as exc:
        return f"cannot be checked ({exc.strerror or exc})"
    if st is not None:
        if stat.S_ISLNK(st.st_mode):
            if regular_only:
                return (f"is a symlink (to {os.path.realpath(target)}); lrtool writes this file only as a regular "
                        "file: give the path of a regular file")
            return None
        if not stat.S_ISREG(st.st_mode):
            return f"is {_kind(st.st_mode)}, not a regular file; lrtool replaces only regular files"
        return None
    parent = target.parent
    try:
        pst = os.stat(parent)
    except FileNotFoundError:
        return f"cannot be written: the folder {parent} does not exist"
    except NotADirectoryError:
        return f"cannot be written: {parent} is not a folder"
    except OSError as exc:
        return f"cannot be written: the folder {parent} cannot be reached ({exc.strerror or exc})"
    if not stat.S_ISDIR(pst.st_mode):
        return f"cannot be written: {parent} is not a folder"
    effective = {"effective_ids": True} if os.access in os.supports_effective_ids else {}
    if not os.access(parent, os.W_OK | os.X_OK, **effective):
        return f"cannot be written: the folder {parent} is not writable (read-only or no permission)"
    return None


@contextlib.contextmanager
def atomic_path(target: Path, *, verify: Callable[[Path], None] | None = None,
                keep_mode: bool = True, regular_only: bool = False) -> Iterator[Path]:
    """Yield a temporary path next to ``target``; on success fsync, verify and atomically replace.

    The caller writes the new content to the yielded path. If the block raises, or ``verify(tmp)``
    raises, the temporary file is removed and ``target`` is left untouched.

    Args:
        target: the file to replace (it need not exist yet). An existing device, FIFO, socket or folder is never
            replaced; a symlink is replaced itself, never what it points to (:func:`replaceable_problem`).
        verify: called with the temporary path after fsync; raise to abort the replacement.
        keep_mode: copy the permission bits of an existing ``target`` to the new file.
        regular_only: refuse a ``target`` that is a symlink too (output files named on the command line).

    Raises:
        LrtoolError: ``target`` is not a file lrtool replaces (nothing written).
        OSError: the folder is not writable, the disk is full, ... (target untouched); it names ``target``, never
            the temporary file.
    """
    target = Path(target)
    tmp: Path | None = None
    if os.path.lexists(target):
        problem = replaceable_problem(target, regular_only=regular_only)
        if problem:
            raise LrtoolError(problem, target)
    try:
        # The name is set before the file exists (tempfile.mkstemp returns it only after creating the file), so
        # a Ctrl-C/SIGTERM raised at any point after the file was created finds it to remove.
        for _ in range(100):
            tmp = target.parent / f"{TMP_PREFIX}{secrets.token_hex(4)}-{target.name}"
            try:
                os.close(os.open(tmp, os.O_CREAT | os.O_EXCL | os.O_WRONLY | getattr(os, "O_CLOEXEC", 0), 0o600))
                break
            except FileExistsError:
                tmp = None
            except OSError as exc:  # no such folder, read-only, no permission: say so of the target
                tmp = None
                raise OSError(exc.errno, exc.strerror, str(target)) from None
        else:
            raise FileExistsError(f"cannot create a temporary file next to {target}")
        yield tmp
        with open(tmp, "rb+") as fh:
            os.fsync(fh.fileno())
        if verify is not None:
            verify(tmp)
        if keep_mode and target.exists():
            os.chmod(tmp, target.stat().st_mode & 0o7777)
        os.replace(tmp, target)
        fsync_dir(target.parent)
    except BaseException:
        if tmp is not None:
            with contextlib.suppress(OSError):
                tmp.unlink()
        raise


def atomic_write_bytes(target: Path, data: bytes) -> None:
    """Write ``data`` to ``target`` atomically (see :func:`atomic_path`)."""
    with atomic_path(Path(target)) as tmp:
        tmp.write_bytes(data)


def atomic_write_text(target: Path, text: str) -> None:
    """Write UTF-8 ``text`` to ``target`` atomically (see :func:`atomic_path`)."""
    atomic_write_bytes(Path(target), text.encode("utf-8"))


def check_output_file(path: str | os.PathLike, what: str, *, error: type[LrtoolError] = LrtoolError) -> None:
    """Refuse an output file named on the command line (``--write-baseline``, ``--part-out``, ``--lock``) that
    cannot be written as a regular file, before any work is done (:func:`replaceable_problem` with
    ``regular_only``).

    Args:
        path: the file.
        what: what it is, for the message (``"baseline file"``).
        error: the error raised.

    Raises:
        ``error``: one line naming the file: a device, FIFO, socket, folder or symlink there, or no writable folder.
    """
    problem = replaceable_problem(path, regular_only=True)
    if problem:
        raise error(f"{what} {problem}", path)


def write_output_text(path: str | os.PathLike, text: str, what: str, *,
                      error: type[LrtoolError] = LrtoolError) -> None:
    """Write UTF-8 ``text`` to an output file named on the command line, atomically and only as a regular file
    (:func:`check_output_file`, then :func:`atomic_path` with ``regular_only``).

    Raises:
        ``error``: one line naming ``path`` and the problem (not a regular file, no such folder, read-only,
            disk full...); the file is untouched.
    """
    check_output_file(path, what, error=error)
    try:
        with atomic_path(Path(path), regular_only=True) as tmp:
            tmp.write_bytes(text.encode("utf-8"))
    except LrtoolError as exc:
        raise error(f"{what} {exc.message}", path) from None
    except OSError as exc:
        raise error(f"{what} cannot be written ({exc.strerror or exc})", path) from None


def clean_stale_temps(root: Path, *, dry_run: bool = False) -> list[Path]:
    """Remove temporary files (:data:`TMP_PREFIX`) a killed lrtool run left below ``root``, ``.git`` excluded.

    Args:
        root: the dataset folder.
        dry_run: only list them.

    Returns:
        The files removed (listed, on a dry run).
    """
    removed: list[Path] = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames if d != ".git"]
        for name in filenames:
            if name.startswith(TMP_PREFIX):
                p = Path(dirpath, name)
                if dry_run:
                    removed.append(p)
                    continue
                with contextlib.suppress(OSError):
                    p.unlink()
                    removed.append(p)
    return removed
