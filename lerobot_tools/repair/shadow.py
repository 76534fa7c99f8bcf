"""A shadow of a dataset: the files a repair changes written in a scratch folder, every other file referenced.

``lrtool repair`` (dry run and real run alike) applies its whole plan to a :class:`Shadow` first and validates
the shadow, so what it reports (what is fixed, what becomes visible, which fix it will not apply and why) is the
outcome of the very bytes the repair would write, before a byte of the dataset changes.

Layout: ``<scratch>/<dataset folder name>/`` mirrors the dataset's folders; each file is a hard link to the
original where the file system allows it (same file system, permitted by ``fs.protected_hardlinks``), else a
symbolic link to its absolute path. Nothing is copied. A change is written exactly as in the dataset
(:func:`lerobot_tools.repair.writes.write_one`: a temporary file next to the target, then ``os.replace``), which
replaces the link itself, never the original it points to; a move renames the link. ``.lrtool/`` (backups) and
``.git/`` are not mirrored (validate skips hidden folders).

Where the scratch folder lives: a dry run writes nothing in the dataset, so it uses the system temporary folder
(``$TMPDIR``, :func:`tempfile.gettempdir`); a real run, which needs the same space in the dataset's file system
for its backup anyway, uses ``<dataset>/.lrtool/shadow/`` (always hard links). A killed run's leftover shadow is
removed by the next real run (:func:`clean_stale`). Beside the shadow's root, ``source.txt`` names the dataset it
mirrors (:func:`shadow_source`), so that a check resolving symbolic links can tell the shadow's links from links
out of a dataset.

The original is checked to be untouched after the shadow is gone (:meth:`Shadow.untouched`: size, mtime and
inode of every file, and the set of files): a dry run that changed the dataset is a bug, raised as such.
"""

from __future__ import annotations

import errno
import hashlib
import os
import shutil
import tempfile
from pathlib import Path

from lerobot_tools.errors import LrtoolError

#: folders never mirrored (repair's own backups; a git clone's object store)
SKIPPED_DIRS = frozenset({".lrtool", ".git"})
#: below the dataset root: where a real run keeps its shadow
SHADOW_DIR = ".lrtool/shadow"
#: the scratch folder's name starts with this (``$TMPDIR/lrtool-shadow-*``; a check that meets a dataset root
#: below such a folder is looking at a shadow, whose links stand for the dataset's own files)
PREFIX = "lrtool-shadow-"


#: a file beside the shadow's dataset root naming the dataset it mirrors (:func:`shadow_source`)
SOURCE_MARKER = "source.txt"


def shadow_source(root: Path) -> Path | None:
    """The dataset a shadow at ``root`` mirrors (its resolved path), or None when ``root`` is not a shadow's
    dataset root. A check that resolves symbolic links (containment) should count a link of a shadow that resolves
    inside this folder as the dataset's own file: a shadow links what it does not rewrite, and links symbolically
    when the scratch folder is on another file system than the dataset."""
    root = Path(root)
    marker = root.parent / SOURCE_MARKER
    if not root.parent.name.startswith(PREFIX) or not marker.is_file() or marker.is_symlink():
        return None
    try:
        text = marker.read_text(encoding="utf-8")[:4096].strip()
    except (OSError, UnicodeDecodeError):
        return None
    return Path(text) if text and Path(text).is_absolute() else None


class ShadowError(LrtoolError):
    """The shadow cannot be built (no scratch space, a folder that cannot be listed)."""


def _fingerprint(root: Path) -> dict[str, tuple[int, int, int]]:
    """rel -> (size, mtime_ns, inode) of every entry the shadow mirrors (symlinks themselves, not followed)."""
    out: dict[str, tuple[int, int, int]] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d not in SKIPPED_DIRS)
        base = Path(dirpath)
        for name in filenames + [d for d in dirnames if (base / d).is_symlink()]:
            p = base / name
            try:
                st = os.lstat(p)
            except OSError:
                continue
            out[p.relative_to(root).as_posix()] = (st.st_size, st.st_mtime_ns, st.st_ino)
    return out


def clean_stale(root: Path) -> None:
    """Remove the shadows a killed real run left in ``<root>/.lrtool/shadow`` (never followed through a symlink)."""
    base = Path(root) / SHADOW_DIR
    if base.is_symlink() or (base.parent.is_symlink()):
        return
    if base.is_dir():
        shutil.rmtree(base, ignore_errors=True)
        try:
            base.parent.rmdir()  # .lrtool, when it held nothing else
        except OSError:
            pass


class Shadow:
    """A scratch view of the dataset at ``source`` (see the module docstring). Use as a context manager; the
    scratch folder is removed on exit.

    Args:
        source: the dataset root.
        inside: put the scratch folder in ``<source>/.lrtool/shadow/`` (a real run) instead of the system
            temporary folder (a dry run).
        need_bytes: scratch space the changes will take (checked against the free space first).

    Attributes:
        root: the shadow's dataset root (validate it as the dataset).
        links: ``"hard"`` when every file is a hard link, ``"symbolic"`` when some had to be symbolic links.

    Raises:
        ShadowError: not enough free space for ``need_bytes``, or the scratch folder cannot be made.
    """

    def __init__(self, source: Path, *, inside: bool = False, need_bytes: int = 0):
        self.source = Path(source)
        self._inside = inside
        self.scratch: Path | None = None
        self._base: Path | None = None
        try:
            if inside:
                from lerobot_tools.repair import backup

                base = backup.backup_base(self.source).parent / "shadow"  # .lrtool checked to be a real folder
                base.mkdir(parents=True, exist_ok=True)
                self._base = base
            else:
                base = Path(tempfile.gettempdir())
            free = shutil.disk_usage(base).free
            if need_bytes * 1.1 > free:
                raise ShadowError(f"not enough scratch space to try the repair first ({need_bytes / 2**20:.1f} MiB "
                                  f"needed, {free / 2**20:.1f} MiB free in {base}); set TMPDIR to a larger folder")
            self.scratch = Path(tempfile.mkdtemp(prefix=PREFIX, dir=base))
        except OSError as exc:
            self.close()
            raise ShadowError(f"cannot make a scratch folder to try the repair first ({exc.strerror or exc})") from None
        except ShadowError:
            self.close()
            raise
        self.root = self.scratch / (self.source.name or "dataset")
        self.links = "hard"
        try:
            (self.scratch / SOURCE_MARKER).write_text(str(self.source.resolve()) + "\n", encoding="utf-8")
            self._before = _fingerprint(self.source)
            self._mirror()
        except OSError as exc:
            self.close()
            raise ShadowError(f"cannot mirror the dataset to try the repair first ({exc})") from None
        except BaseException:
            self.close()
            raise

    # ------------------------------------------------------------------ building
    def _mirror(self) -> None:
        src_root = self.source

        def fail(exc: OSError) -> None:  # a folder that cannot be listed would be missing from the shadow
            raise exc

        for dirpath, dirnames, filenames in os.walk(src_root, onerror=fail):
            base = Path(dirpath)
            rel_dir = base.relative_to(src_root)
            dst_dir = self.root / rel_dir
            dst_dir.mkdir(parents=True, exist_ok=True)
            keep = []
            for d in sorted(dirnames):
                if d in SKIPPED_DIRS:
                    continue
                if (base / d).is_symlink():  # os.walk does not descend into it: link it as it is
                    self._symlink(base / d, dst_dir / d)
                    continue
                keep.append(d)
            dirnames[:] = keep
            for name in filenames:
                self._link(base / name, dst_dir / name)

    def _symlink(self, src: Path, dst: Path) -> None:
        """A symbolic link at ``dst`` that resolves as ``src`` does (dangling stays dangling)."""
        if src.is_symlink():
            target = os.readlink(src)
            target = target if os.path.isabs(target) else os.path.join(os.path.dirname(src), target)
            real = os.path.realpath(src)
            os.symlink(real if os.path.exists(real) else os.path.abspath(target), dst)
        else:
            os.symlink(os.path.abspath(src), dst)
        self.links = "symbolic"

    def _link(self, src: Path, dst: Path) -> None:
        if src.is_symlink():
            self._symlink(src, dst)
            return
        try:
            os.link(src, dst, follow_symlinks=False)
        except OSError as exc:
            if exc.errno not in (errno.EXDEV, errno.EPERM, errno.EACCES, errno.EMLINK, errno.ENOTSUP,
                                 errno.EOPNOTSUPP):
                raise
            self._symlink(src, dst)

    # ------------------------------------------------------------------ after the writes
    def differs(self, rel: str) -> bool:
        """True when the shadow's ``rel`` is not the original's file (content, or existence)."""
        a, b = self.source / rel, self.root / rel
        a_ok, b_ok = a.is_file(), b.is_file()
        if a_ok != b_ok:
            return True
        if not a_ok:
            return False
        try:
            sa, sb = os.stat(a), os.stat(b)
        except OSError:
            return True
        if (sa.st_dev, sa.st_ino) == (sb.st_dev, sb.st_ino):
            return False  # still the link to the original
        if sa.st_size != sb.st_size:
            return True
        return _sha256(a) != _sha256(b)

    def untouched(self) -> list[str]:
        """Files of the original whose size, mtime or inode changed, or that appeared or disappeared, since the
        shadow was built (empty: the original is as it was). ``.lrtool/`` (where a real run's shadow lives) is
        not looked at."""
        now = _fingerprint(self.source)
        changed = [r for r in set(self._before) | set(now) if self._before.get(r) != now.get(r)]
        return sorted(changed)

    def close(self) -> None:
        """Remove the scratch folder (and, inside the dataset, ``.lrtool/shadow`` and ``.lrtool`` when empty)."""
        if self.scratch is not None:
            shutil.rmtree(self.scratch, ignore_errors=True)
        if self._base is not None:
            for d in (self._base, self._base.parent):  # .lrtool/shadow, then .lrtool, when empty
                try:
                    d.rmdir()
                except OSError:
                    break

    def __enter__(self) -> "Shadow":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()
