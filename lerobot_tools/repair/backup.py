"""Backups of the files a repair changes, and restoring them (``lrtool repair --undo``, rollback).

Layout, inside the dataset root (outside ``data/``, ``videos/``, ``meta/`` and ``images/``, so validate and
the loaders never see it; hidden, so the ``*`` globs of lerobot skip it)::

    .lrtool/backup/<UTC timestamp>/manifest.json
    .lrtool/backup/<UTC timestamp>/files/<relative path>     original bytes

The backup is assembled under ``.lrtool/backup/.<timestamp>.partial`` and renamed into place only when every
original is copied (fsynced) and the manifest written, so it exists completely or not at all — and it
exists before the first byte of the dataset changes. The manifest lists every file with its SHA-256 before
(and, once applied, after) the repair, the file moves of ``--move-files`` and the folders they create, and a
``state``: ``applying`` (written before the first change; a run killed mid-repair leaves it so),
``applied``, ``undone``.

A manifest is data lrtool did not necessarily write (a dataset can be downloaded with its ``.lrtool/``), so it is
trusted only after :func:`check_manifest`: it is a regular file under the JSON size cap, every path in it is
relative, has no ``.``/``..``/empty component, no backslash or control character, does not point into
``.lrtool/``, and resolves (symlinks followed) inside the dataset root; ``.lrtool/backup`` and the backup folder
are real folders inside the root, not symlinks; and (:func:`verify_backup`) every saved original is a regular
file whose SHA-256 is the one recorded. Anything else is refused with one line before a byte is restored,
moved or deleted.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import stat
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from lerobot_tools import __version__
from lerobot_tools._io import atomic_path, atomic_write_text, fsync_dir, load_json_file, open_regular
from lerobot_tools.errors import LrtoolError

LRTOOL_DIR = ".lrtool"
BACKUP_DIR = ".lrtool/backup"
MANIFEST = "manifest.json"
FORMAT = 1


class BackupError(LrtoolError):
    """No backup to undo, a backup that cannot be read, or files changed since the repair."""


_SHA256_RE = re.compile(r"^[0-9a-f]{64}$")
STATES = ("applying", "applied", "undone")


def sha256_file(path: Path) -> str:
    """SHA-256 (hex) of a regular file (a FIFO or device is refused with :class:`BackupError`, never read)."""
    h = hashlib.sha256()
    with open_regular(path, limit=None, error=BackupError, what="backup") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _copy_hashed(src: Path, dst: Path) -> tuple[str, int]:
    """Copy ``src`` to ``dst`` (fsynced), returning the SHA-256 and size of the bytes copied."""
    dst.parent.mkdir(parents=True, exist_ok=True)
    h = hashlib.sha256()
    n = 0
    with open(src, "rb") as fi, open(dst, "wb") as fo:
        for block in iter(lambda: fi.read(1 << 20), b""):
            h.update(block)
            fo.write(block)
            n += len(block)
        fo.flush()
        os.fsync(fo.fileno())
    shutil.copymode(src, dst)
    return h.hexdigest(), n


def timestamp() -> str:
    """UTC timestamp naming a backup folder, sortable: ``20260823T101500.123456Z``."""
    return datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%S.%fZ")


def backup_base(root: Path) -> Path:
    """``root/.lrtool/backup`` after checking that ``.lrtool`` and ``.lrtool/backup`` are real folders inside the
    root where they exist (a symlink there would lead backups, and their deletion, out of the dataset).

    Raises:
        BackupError: either is a symlink or not a folder.
    """
    root = Path(root)
    for rel in (LRTOOL_DIR, BACKUP_DIR):
        p = root / rel
        if p.is_symlink() or (p.exists() and not p.is_dir()):
            raise BackupError(f"{rel} is a symlink or not a folder; lrtool keeps its backups only in a real folder "
                              "inside the dataset: remove it", root)
    return root / BACKUP_DIR


def partial_backups(root: Path) -> list[Path]:
    """Backup folders whose creation was interrupted (``.lrtool/backup/.<timestamp>.partial``): the backup is
    renamed into place before the first dataset byte changes, so nothing of the dataset had changed."""
    base = backup_base(root)
    if not base.is_dir():
        return []
    return sorted(p for p in base.iterdir() if p.name.startswith(".") and p.name.endswith(".partial")
                  and p.is_dir() and not p.is_symlink())


def clean_partial(root: Path) -> list[Path]:
    """Remove backup folders whose creation was interrupted (no dataset byte had changed yet) and backups whose
    deletion after an undo was interrupted (state ``undone``).

    Raises:
        BackupError: ``.lrtool`` or ``.lrtool/backup`` is a symlink (see :func:`backup_base`).
    """
    base = backup_base(root)
    removed = []
    if base.is_dir():
        for p in base.iterdir():
            if p.is_symlink() or not p.is_dir():
                continue
            stale = p.name.startswith(".") and p.name.endswith(".partial")
            if not stale and not p.name.startswith("."):
                try:
                    stale = read_manifest(p).get("state") == "undone"
                except BackupError:
                    stale = False
            if stale:
                shutil.rmtree(p, ignore_errors=True)
                removed.append(p)
    if removed:
        _prune(root)
    return removed


def _prune(root: Path) -> None:
    """Remove ``.lrtool/backup`` and ``.lrtool`` when they are empty."""
    for d in (Path(root) / BACKUP_DIR, Path(root) / LRTOOL_DIR):
        try:
            d.rmdir()
        except OSError:
            break


def create(root: Path, files: list[str], moves: list[dict[str, str]], info: dict[str, Any]) -> Path:
    """Copy the originals of ``files`` (paths relative to ``root``) into a new backup and write its manifest.

    Args:
        root: the dataset root.
        files: every file the repair will rewrite (a file that does not exist yet is recorded as created).
        moves: ``{"src", "dst"}`` of every file the repair will move.
        info: extra manifest fields (target, checks repaired...).

    Returns:
        The backup folder (``root/.lrtool/backup/<timestamp>``).

    Raises:
        OSError: the backup cannot be written (nothing in the dataset has changed).
    """
    root = Path(root)
    base = backup_base(root)
    base.mkdir(parents=True, exist_ok=True)
    ts = timestamp()
    while (base / ts).exists():
        ts = timestamp()
    stage = base / f".{ts}.partial"
    stage.mkdir()
    entries = []
    for rel in files:
        src = root / rel
        if src.is_file():
            digest, size = _copy_hashed(src, stage / "files" / rel)
            entries.append({"path": rel, "existed": True, "sha256": digest, "size": size})
        else:
            entries.append({"path": rel, "existed": False})
    created_dirs: list[str] = []
    for m in moves:
        d = (root / m["dst"]).parent
        chain = []
        while d != root and not d.exists():
            chain.append(d.relative_to(root).as_posix())
            d = d.parent
        for c in reversed(chain):
            if c not in created_dirs:
                created_dirs.append(c)
    manifest = {
        "lrtool_backup": FORMAT,
        "created_utc": ts,
        "lrtool_version": __version__,
        "state": "applying",
        **info,
        "files": entries,
        "moves": moves,
        "created_dirs": created_dirs,
    }
    atomic_write_text(stage / MANIFEST, json.dumps(manifest, indent=2, ensure_ascii=False) + "\n")
    for dirpath, _, _ in os.walk(stage):
        fsync_dir(Path(dirpath))
    final = base / ts
    os.rename(stage, final)
    fsync_dir(base)
    return final


def _path_problem(rel: Any) -> str | None:
    """Why a manifest path is not a plain relative path inside the dataset (lexically), else None."""
    if not isinstance(rel, str) or not rel:
        return "is not a relative path"
    if any(ord(c) < 32 or c == "\x7f" for c in rel) or "\\" in rel:
        return "contains a control character or a backslash"
    if rel.startswith("/") or os.path.isabs(rel):
        return "is an absolute path"
    parts = rel.split("/")
    if any(p in ("", ".", "..") for p in parts):
        return "has an empty, '.' or '..' component"
    if parts[0] == LRTOOL_DIR:
        return f"points into {LRTOOL_DIR}/"
    return None


def _inside(path: Path, base: Path) -> bool:
    try:
        real = path.resolve()
    except (OSError, RuntimeError):
        return False
    return real != base and base in real.parents


def check_manifest(root: Path, bdir: Path, doc: Any) -> dict:
    """Check a manifest's structure and that every path in it stays inside ``root`` (see module docstring).

    Returns:
        ``doc``, now known to be safe to act on (paths only: the saved bytes are checked by :func:`verify_backup`).

    Raises:
        BackupError: one line naming the manifest, the field and the problem.
    """
    where = Path(bdir) / MANIFEST
    if not isinstance(doc, dict) or doc.get("lrtool_backup") != FORMAT or not isinstance(doc.get("files"), list):
        raise BackupError("not an lrtool backup manifest", where)
    if doc.get("state") not in STATES:
        raise BackupError(f"state {doc.get('state')!r} is not one of {', '.join(STATES)}", where)
    moves, dirs = doc.setdefault("moves", []), doc.setdefault("created_dirs", [])
    if not isinstance(moves, list) or not isinstance(dirs, list):
        raise BackupError("moves and created_dirs must be lists", where)
    real_root = Path(root).resolve()
    fields: list[tuple[str, Any]] = []
    for i, e in enumerate(doc["files"]):
        if not isinstance(e, dict) or not isinstance(e.get("existed"), bool):
            raise BackupError(f"files[{i}] is not an entry with path and existed", where)
        if e["existed"] and not (isinstance(e.get("sha256"), str) and _SHA256_RE.match(e["sha256"])):
            raise BackupError(f"files[{i}] has no SHA-256 of its original, so its backup cannot be verified", where)
        for key in ("sha256_after",):
            if e.get(key) is not None and not (isinstance(e[key], str) and _SHA256_RE.match(e[key])):
                raise BackupError(f"files[{i}].{key} is not a SHA-256", where)
        fields.append((f"files[{i}].path", e.get("path")))
    for i, m in enumerate(moves):
        if not isinstance(m, dict):
            raise BackupError(f"moves[{i}] is not an object with src and dst", where)
        fields += [(f"moves[{i}].src", m.get("src")), (f"moves[{i}].dst", m.get("dst"))]
    fields += [(f"created_dirs[{i}]", d) for i, d in enumerate(dirs)]
    for name, rel in fields:
        problem = _path_problem(rel)
        if problem is None and not _inside(real_root / rel, real_root):
            problem = "resolves outside the dataset (through a symlink)"
        if problem is not None:
            shown = rel if isinstance(rel, str) else type(rel).__name__
            raise BackupError(f"{name} {shown!r} {problem}; the backup is not trusted and nothing was changed", where)
    return doc


def read_manifest(bdir: Path) -> dict:
    """The manifest of a backup folder ``<root>/.lrtool/backup/<timestamp>``, checked by :func:`check_manifest`.

    Raises:
        BackupError: missing, not a regular file, over the size cap, not JSON, not an lrtool backup manifest, or a
            path in it that leaves the dataset.
    """
    bdir = Path(bdir)
    path = bdir / MANIFEST
    if bdir.is_symlink():
        raise BackupError("backup folder is a symlink; refused", bdir)
    try:
        doc = load_json_file(path, error=BackupError)
    except OSError as exc:
        raise BackupError(f"backup manifest cannot be read ({exc.strerror or exc})", path) from None
    return check_manifest(bdir.parent.parent.parent, bdir, doc)


def verify_backup(root: Path, bdir: Path, doc: dict) -> None:
    """Check that every saved original in ``bdir/files`` is a regular file (not a symlink) inside the backup whose
    SHA-256 is the one the manifest recorded, before anything is restored.

    Raises:
        BackupError: a saved original is missing, a symlink, altered, or outside the backup folder.
    """
    files = Path(bdir) / "files"
    real_files = files.resolve()
    for e in doc["files"]:
        if not e.get("existed"):
            continue
        saved = files / e["path"]
        try:
            st = os.lstat(saved)
        except OSError:
            raise BackupError(f"the saved original of {e['path']} is missing from the backup; nothing was changed",
                              bdir) from None
        if not stat.S_ISREG(st.st_mode) or not _inside(saved, real_files):
            raise BackupError(f"the saved original of {e['path']} is not a regular file inside the backup; "
                              "nothing was changed", bdir)
        if sha256_file(saved) != e["sha256"]:
            raise BackupError(f"the saved original of {e['path']} does not match the SHA-256 the manifest recorded; "
                              "the backup is not trusted and nothing was changed", bdir)


def write_manifest(bdir: Path, doc: dict) -> None:
    atomic_write_text(Path(bdir) / MANIFEST, json.dumps(doc, indent=2, ensure_ascii=False) + "\n")


def mark_applied(root: Path, bdir: Path) -> None:
    """Record that a repair's writes are done: each backed-up file's SHA-256 after the repair (None when the repair
    removed it) and state ``applied`` (what :func:`modified_since` and ``--undo`` compare against).

    Raises:
        BackupError: the manifest cannot be read, or a file cannot be hashed (see :func:`sha256_file`).
    """
    doc = read_manifest(bdir)
    for e in doc["files"]:
        p = root / e["path"]
        e["sha256_after"] = sha256_file(p) if p.is_file() else None
    doc["state"] = "applied"
    write_manifest(bdir, doc)


def list_backups(root: Path) -> list[Path]:
    """Backup folders of a dataset (every non-hidden entry of ``.lrtool/backup``), oldest first.

    Raises:
        BackupError: ``.lrtool`` or ``.lrtool/backup`` is a symlink (see :func:`backup_base`).
    """
    base = backup_base(root)
    if not base.is_dir():
        return []
    return sorted(p for p in base.iterdir() if not p.name.startswith("."))


def latest(root: Path) -> Path | None:
    """The most recent backup that has not been undone, or None.

    An entry of ``.lrtool/backup`` that is not a trustworthy backup (a symlink, no manifest, a manifest
    :func:`read_manifest` refuses) is not skipped for an older one: undoing an older repair first would restore
    the wrong bytes.

    Raises:
        BackupError: the most recent backup that is not ``undone`` cannot be trusted.
    """
    for bdir in reversed(list_backups(root)):
        if read_manifest(bdir).get("state") in ("applying", "applied"):
            return bdir
    return None


def modified_since(root: Path, doc: dict) -> list[str]:
    """Files changed since the repair wrote them (neither the original nor the repaired bytes): undoing would
    lose those edits. Only meaningful for an ``applied`` backup."""
    out = []
    for e in doc["files"]:
        p = Path(root) / e["path"]
        cur = sha256_file(p) if p.is_file() else None
        allowed = {e.get("sha256") if e.get("existed") else None, e.get("sha256_after")}
        if cur not in allowed:
            out.append(e["path"])
    return out


def restore(root: Path, bdir: Path, *, force: bool = False) -> dict[str, list[str]]:
    """Put every file of the backup back byte for byte, reverse its moves, remove what the repair created.

    Each restored file goes through :func:`lerobot_tools._io.atomic_path`, verified against the SHA-256 in the
    manifest; files already original are left alone, so restoring twice (or after a kill during a restore) is
    safe. A backup whose repair was interrupted (``applying``) is restored unconditionally. Nothing is touched
    unless the manifest passes :func:`read_manifest` and the saved originals :func:`verify_backup`.

    Args:
        force: restore even files modified since the repair.

    Returns:
        ``{"restored": [...], "removed": [...], "moved_back": [...]}`` (relative paths).

    Raises:
        BackupError: an untrusted manifest or backup, files changed since the repair (without ``force``), or a file
            does not verify.
    """
    root = Path(root)
    doc = read_manifest(bdir)
    verify_backup(root, bdir, doc)
    if doc.get("state") == "applied" and not force:
        changed = modified_since(root, doc)
        if changed:
            raise BackupError(f"{len(changed)} file(s) changed since the repair (e.g. {changed[0]}); undoing would "
                              f"lose those edits. The originals are in {Path(bdir) / 'files'}", root)
    done: dict[str, list[str]] = {"restored": [], "removed": [], "moved_back": []}
    for m in reversed(doc.get("moves", [])):
        src, dst = root / m["src"], root / m["dst"]
        if dst.exists() and not src.exists():
            src.parent.mkdir(parents=True, exist_ok=True)
            os.rename(dst, src)
            fsync_dir(src.parent)
            fsync_dir(dst.parent)
            done["moved_back"].append(m["src"])
    for e in doc["files"]:
        target = root / e["path"]
        if not e.get("existed"):
            if target.exists():
                target.unlink()
                done["removed"].append(e["path"])
            continue
        if target.is_file() and sha256_file(target) == e["sha256"]:
            continue
        saved = Path(bdir) / "files" / e["path"]
        target.parent.mkdir(parents=True, exist_ok=True)

        def verify(tmp: Path, want=e["sha256"], rel=e["path"]) -> None:
            if sha256_file(tmp) != want:
                raise BackupError("restored bytes do not match the backup manifest", rel)

        with atomic_path(target, verify=verify) as tmp:
            shutil.copyfile(saved, tmp)
        shutil.copymode(saved, target)
        done["restored"].append(e["path"])
    for d in reversed(doc.get("created_dirs", [])):
        p = root / d
        try:
            p.rmdir()
        except OSError:
            pass
    problems = [e["path"] for e in doc["files"]
                if (e.get("existed") and (not (root / e["path"]).is_file() or sha256_file(root / e["path"]) != e["sha256"]))
                or (not e.get("existed") and (root / e["path"]).exists())]
    problems += [m["src"] for m in doc.get("moves", []) if not (root / m["src"]).exists()]
    if problems:
        raise BackupError(f"{len(problems)} file(s) could not be restored (e.g. {problems[0]}); the originals are in "
                          f"{Path(bdir) / 'files'}", root)
    return done


def discard(root: Path, bdir: Path) -> None:
    """Delete a backup that is no longer needed (after a verified undo or rollback) and prune empty
    ``.lrtool`` folders, so the dataset tree is exactly what it was before the repair."""
    doc = read_manifest(bdir)
    doc["state"] = "undone"
    write_manifest(bdir, doc)
    shutil.rmtree(bdir)
    _prune(root)
