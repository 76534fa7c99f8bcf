"""Containment through symlinks: what lrtool writes into a dataset stays inside the dataset.

A dataset folder may hold symlinks. Some are normal: in a Hub snapshot cache every file of
``<cache>/datasets--org--name/snapshots/<commit>/`` is a link into ``<cache>/datasets--org--name/blobs/``
(huggingface_hub, "Manage huggingface_hub cache-system": https://huggingface.co/docs/huggingface_hub/guides/manage-cache).
Others lead out of the dataset: a ``data/`` folder linked to another dataset's ``data/``, a chunk folder or a
file linked to another disk, a ``videos/`` linked to ``/``. The loaders follow them (they open paths), so
validate reads what they read; but a rewrite through such a link changes another dataset's files, under this
dataset's lock only, and a walk through a link to ``/`` walks the whole file system.

So, with :func:`containment_root` the folder a dataset's links may lead into (the dataset's real path; for a
Hub snapshot, its repository folder, which holds ``blobs/``):

* :func:`escaping_symlinks` lists every symlink below the dataset that resolves outside it (validate reports
  each as F013, :mod:`lerobot_tools.checks.symlinks`);
* :func:`refuse_escaping_symlinks` is the one refusal every command that writes into a dataset calls before it
  changes a byte (``repair``, ``repair --undo``, ``reshard``; a future writer calls it too);
* :func:`walk_root` says whether a folder of the dataset may be walked (listed recursively): not when it
  resolves outside the dataset.

A symlink that stays inside the dataset is not reported: what it points to is one of the dataset's own files.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from lerobot_tools.errors import LrtoolError

#: folders of the root never scanned for links: version control (lerobot and lrtool never read ``.git``), and
#: lrtool's own ``.lrtool/`` (lock and backups), whose links the lock and the backup code refuse themselves
#: (:func:`lerobot_tools.repair.backup.backup_base`, :func:`lerobot_tools.repair.backup.verify_backup`)
SKIPPED_DIRS = frozenset({".git", ".lrtool"})


#: the refusal stops looking after this many links out (its message says "999+ other symlink(s)")
REFUSAL_SCAN_LIMIT = 1000


class EscapingSymlink(LrtoolError):
    """A command that writes into a dataset refused it: a symlink below the dataset leads outside it."""


@dataclass(frozen=True)
class Escape:
    """A symlink below a dataset root that resolves outside the dataset.

    Attributes:
        relpath: the link, relative to the dataset root (``"data"``, ``"data/chunk-001"``, ``"videos/a.mp4"``).
        target: the absolute path it resolves to (symlinks followed as far as they exist).
        is_dir: it resolves to a folder.
    """

    relpath: str
    target: str
    is_dir: bool

    def describe(self) -> str:
        """``"data is a symlink to /other/data, outside the dataset"``."""
        kind = "folder" if self.is_dir else "file"
        return f"{self.relpath} is a symlink to {self.target} ({kind}), outside the dataset"


def _real(path: str | os.PathLike) -> str:
    """``os.path.realpath`` (symlinks followed as far as they exist; a loop is left as it is)."""
    return os.path.realpath(os.fspath(path))


def containment_root(root: str | os.PathLike) -> Path:
    """The folder the symlinks of the dataset at ``root`` may lead into: the real path of ``root``; for a Hub
    snapshot folder (``<repo>/snapshots/<commit>`` beside ``<repo>/blobs``), the repository folder ``<repo>``.

    Returns:
        An absolute, symlink-free path.
    """
    real = Path(_real(root))
    parent = real.parent
    if parent.name == "snapshots" and (parent.parent / "blobs").is_dir():
        return parent.parent
    return real


def is_inside(path: str | os.PathLike, base: str | os.PathLike) -> bool:
    """True when ``path`` resolves (symlinks followed) to ``base`` or below it; ``base`` must be a real path."""
    real, base = _real(path), os.fspath(base)
    return real == base or real.startswith(base.rstrip(os.sep) + os.sep)


def escaping_symlinks(root: str | os.PathLike, *, limit: int | None = None) -> list[Escape]:
    """Every symlink below the dataset at ``root`` that resolves outside :func:`containment_root`, in sorted path
    order (``root`` itself may be a link: it is the dataset's location, not a file of it).

    The tree is walked without following symlinked folders (a link that stays inside leads to the dataset's own
    files, walked under their real path), ``.git`` and ``.lrtool`` at the root left out (:data:`SKIPPED_DIRS`), so
    the walk costs one ``scandir`` per real folder of the dataset and one ``realpath`` per link.

    Args:
        root: the dataset folder.
        limit: stop after this many (None: all).

    Returns:
        The :class:`Escape` of each link out.
    """
    root = Path(root)
    base = str(containment_root(root))
    out: list[Escape] = []
    for rel, entry in _walk(root):
        if entry.is_symlink() and not is_inside(entry.path, base):
            target = _real(entry.path)
            out.append(Escape(rel, target, os.path.isdir(target)))
            if limit is not None and len(out) >= limit:
                break
    return sorted(out, key=lambda x: x.relpath)


def _entries(folder: str | os.PathLike) -> list[os.DirEntry]:
    try:
        with os.scandir(folder) as it:
            return sorted(it, key=lambda e: e.name)
    except OSError:  # unreadable, or gone meanwhile: nothing to list
        return []


def _walk(root: Path):
    """``(relative path, DirEntry)`` of everything below ``root`` in depth-first name order, symlinked folders not
    entered, :data:`SKIPPED_DIRS` at the root left out."""
    stack = [("", iter([e for e in _entries(root) if e.name not in SKIPPED_DIRS]))]
    while stack:
        rel_dir, it = stack[-1]
        entry = next(it, None)
        if entry is None:
            stack.pop()
            continue
        rel = f"{rel_dir}/{entry.name}" if rel_dir else entry.name
        yield rel, entry
        if entry.is_dir(follow_symlinks=False):  # a symlinked folder is not entered
            stack.append((rel, iter(_entries(entry.path))))


def refuse_escaping_symlinks(root: str | os.PathLike, what: str) -> None:
    """Refuse to write into the dataset at ``root`` when a symlink below it leads outside it (see module docstring).

    Every command that writes into a dataset calls this before it changes a byte (before it takes the dataset's
    lock, which creates ``.lrtool/``).

    Args:
        root: the dataset folder.
        what: what the command was about to do, for the message (``"repair"``, ``"reshard"``, ``"undo a repair"``).

    Raises:
        EscapingSymlink: one line naming the first link out, where it leads, how many others there are, and what
            to do; nothing has been written.
    """
    found = escaping_symlinks(root, limit=REFUSAL_SCAN_LIMIT)
    if not found:
        return
    first = found[0]
    more = len(found) - 1
    plus = "+" if len(found) >= REFUSAL_SCAN_LIMIT else ""  # the scan stopped: there may be more
    others = f" (and {more}{plus} other symlink(s) out, e.g. {found[1].relpath})" if more else ""
    raise EscapingSymlink(f"{first.describe()}{others}; lrtool does not {what} through a symlink out of the dataset "
                          "(it would change files of another folder, under this dataset's lock only); nothing was "
                          "changed: replace the link with a copy of what it points to", root)


def walk_root(root: str | os.PathLike, sub: str | os.PathLike) -> bool:
    """True when the folder ``root/sub`` may be walked: it exists and resolves inside
    :func:`containment_root` of ``root`` (a ``data/`` linked to ``/`` is never walked)."""
    path = Path(root) / sub
    return path.is_dir() and is_inside(path, containment_root(root))
