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
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from lerobot_tools import __version__
from lerobot_tools._io import atomic_path, atomic_write_text, fsync_dir
from lerobot_tools.errors import LrtoolError

LRTOOL_DIR = ".lrtool"
BACKUP_DIR = ".lrtool/backup"
MANIFEST = "manifest.json"
FORMAT = 1


class BackupError(LrtoolError):
    """No backup to undo, a backup that cannot be read, or files changed since the repair."""


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
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


def clean_partial(root: Path) -> list[Path]:
    """Remove backup folders whose creation was interrupted (no dataset byte had changed yet) and backups whose
    deletion after an undo was interrupted (state ``undone``)."""
    base = Path(root) / BACKUP_DIR
    removed = []
    if base.is_dir():
        for p in base.iterdir():
            if not p.is_dir():
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
    return removed


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
    base = root / BACKUP_DIR
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


def read_manifest(bdir: Path) -> dict:
    """The manifest of a backup folder.

    Raises:
        BackupError: missing or not an lrtool backup manifest.
    """
    path = Path(bdir) / MANIFEST
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise BackupError(f"backup manifest cannot be read ({exc})", path) from None
    if not isinstance(doc, dict) or doc.get("lrtool_backup") != FORMAT or not isinstance(doc.get("files"), list):
        raise BackupError("not an lrtool backup manifest", path)
    return doc


def write_manifest(bdir: Path, doc: dict) -> None:
    atomic_write_text(Path(bdir) / MANIFEST, json.dumps(doc, indent=2, ensure_ascii=False) + "\n")


def list_backups(root: Path) -> list[Path]:
    """Complete backup folders of a dataset, oldest first."""
    base = Path(root) / BACKUP_DIR
    if not base.is_dir():
        return []
    return sorted(p for p in base.iterdir() if p.is_dir() and not p.name.startswith(".")
                  and (p / MANIFEST).is_file())


def latest(root: Path) -> Path | None:
    """The most recent backup that has not been undone, or None."""
    for bdir in reversed(list_backups(root)):
        try:
            if read_manifest(bdir).get("state") in ("applying", "applied"):
                return bdir
        except BackupError:
            continue
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
    safe. A backup whose repair was interrupted (``applying``) is restored unconditionally.

    Args:
        force: restore even files modified since the repair.

    Returns:
        ``{"restored": [...], "removed": [...], "moved_back": [...]}`` (relative paths).

    Raises:
        BackupError: files changed since the repair (without ``force``), or a file does not verify.
    """
    root = Path(root)
    doc = read_manifest(bdir)
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
    for d in (Path(root) / BACKUP_DIR, Path(root) / LRTOOL_DIR):
        try:
            d.rmdir()
        except OSError:
            break
