"""Atomic, verified file replacement: the one way lrtool writes into a dataset.

Every rewrite goes to a temporary file in the same folder (so the final rename stays on one
filesystem), is flushed and fsynced, optionally verified, then atomically replaces the original with
``os.replace``; the folder is fsynced so the rename survives a crash. A process killed at any moment
leaves either the original or the complete new file, plus at most a temporary file whose name starts
with :data:`TMP_PREFIX`, which :func:`clean_stale_temps` removes on the next run.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path
from typing import Callable, Iterator

TMP_PREFIX = ".lrtool-tmp-"


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


@contextlib.contextmanager
def atomic_path(target: Path, *, verify: Callable[[Path], None] | None = None,
                keep_mode: bool = True) -> Iterator[Path]:
    """Yield a temporary path next to ``target``; on success fsync, verify and atomically replace.

    The caller writes the new content to the yielded path. If the block raises, or ``verify(tmp)``
    raises, the temporary file is removed and ``target`` is left untouched.

    Args:
        target: the file to replace (it need not exist yet).
        verify: called with the temporary path after fsync; raise to abort the replacement.
        keep_mode: copy the permission bits of an existing ``target`` to the new file.

    Raises:
        OSError: the folder is not writable, the disk is full, ... (target untouched).
    """
    target = Path(target)
    fd, name = tempfile.mkstemp(prefix=TMP_PREFIX, suffix="-" + target.name, dir=target.parent)
    os.close(fd)
    tmp = Path(name)
    try:
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
