"""Where ``lrtool reencode`` keeps the originals, how it swaps a verified file in, and ``lrtool reencode --undo``.

Each run (each task of a distributed run) keeps its originals under ``.lrtool/reencode/<UTC time>-<pid>/files/``,
at their path relative to the dataset root, beside a small JSON record per file (its path, the SHA-256 of the
original and of the new file). The original is **moved** there without copying its bytes: it is hard-linked into
the backup folder, then the verified new file atomically replaces it (``os.replace``), so at every instant the
dataset path holds the complete original or the complete new file, and the original is never lost (where hard
links are not possible, e.g. across file systems, it is copied). ``.lrtool/`` sits outside ``videos/``, so the
loaders and validate never see it (leave it out of ``push_to_hub``).

``--undo`` restores, newest run first, every file whose current content is the one the re-encode wrote (SHA-256),
and the run's original ``info.json`` when the current one is the one the re-encode wrote; a file changed since is
refused with one line and kept. Every path read from a record must stay inside the dataset and outside ``.lrtool/``,
and every record is size-capped (:func:`lerobot_tools._io.load_json_file`).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from lerobot_tools._io import (
    atomic_path,
    atomic_write_text,
    fsync_dir,
    load_json_file,
    loads_json,
    read_capped,
    read_text_capped,
)
from lerobot_tools._lock import LRTOOL_DIR
from lerobot_tools.errors import LrtoolError

REENCODE_DIR = f"{LRTOOL_DIR}/reencode"


def sha256(path: Path, chunk: int = 4 * 2**20) -> str:
    """SHA-256 hex digest of a file, read in chunks."""
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        while True:
            b = fh.read(chunk)
            if not b:
                return h.hexdigest()
            h.update(b)


def new_run_dir(root: Path) -> Path:
    """A fresh ``.lrtool/reencode/<UTC time to the microsecond>-<pid>`` folder path (not created): names sort in
    the order the runs started, which ``--undo`` follows backwards."""
    now = time.time()
    stamp = time.strftime("%Y%m%dT%H%M%S", time.gmtime(now)) + f".{int(now % 1 * 1e6):06d}Z"
    return Path(root) / REENCODE_DIR / f"{stamp}-{os.getpid()}"


def owned_path(root: Path, rel: str | PurePosixPath) -> Path:
    """``root / rel`` for writing: every part of ``rel`` that exists is a real file or folder (no symlink), and the
    whole resolves inside the dataset, so a write or a folder made there lands in the dataset and nowhere else.

    Every path reencode writes goes through it (the videos, the backups and records under ``.lrtool/reencode/``,
    ``meta/info.json`` and its saved original, the lock beside them), as does the folder whose stale temporary files
    are removed.

    Args:
        root: the dataset folder (it may itself be reached through a symlink).
        rel: a relative path inside it (``/``-separated).

    Raises:
        LrtoolError: a part is a symlink (the message names that part), or the path leaves the dataset.
    """
    root = Path(root)
    parts = PurePosixPath(rel).parts
    if not parts or PurePosixPath(rel).is_absolute() or ".." in parts:
        raise LrtoolError(f"{rel!s} is not a path inside the dataset: not written")
    p = root
    for part in parts:
        p = p / part
        if p.is_symlink():
            raise LrtoolError(f"{p.relative_to(root).as_posix()} is a symlink: reencode writes only real files and "
                              "folders inside the dataset")
    if not p.resolve().is_relative_to(root.resolve()):
        raise LrtoolError(f"{rel!s} resolves outside the dataset: not written")
    return p


def _contained(root: Path, rel: str) -> Path:
    """``root / rel`` when ``rel`` is a plain relative path inside the dataset and outside ``.lrtool/``.

    Raises:
        LrtoolError: it is not.
    """
    p = PurePosixPath(rel)
    if p.is_absolute() or not p.parts or ".." in p.parts or p.parts[0] == LRTOOL_DIR or "\\" in rel:
        raise LrtoolError(f"a re-encode record names {rel!r}, outside the dataset's files: refusing it")
    full = Path(root) / p
    if not full.resolve().is_relative_to(Path(root).resolve()):
        raise LrtoolError(f"a re-encode record names {rel!r}, which resolves outside the dataset: refusing it")
    return full


def swap_in(root: Path, rel: str, new: Path, run_dir: Path | None, *, original_sha: str | None = None) -> str | None:
    """Replace the video ``rel`` by the verified file ``new`` (in the same folder), keeping the original under
    ``run_dir`` (None: drop it). Returns the backup's path relative to the root, or None.

    Raises:
        LrtoolError: the video or its backup would be written through a symlink (:func:`owned_path`); nothing written.
        OSError: the backup or the replacement could not be made (the original is then in place, untouched).
    """
    path = owned_path(root, rel)
    backup = None
    if run_dir is not None:
        backup = owned_path(root, (run_dir / "files" / rel).relative_to(root).as_posix())
        backup.parent.mkdir(parents=True, exist_ok=True)
        if backup.exists() and not os.path.samefile(backup, path):
            backup.unlink()
        if not backup.exists():
            try:
                os.link(path, backup)
            except OSError:
                shutil.copy2(path, backup)
        fsync_dir(backup.parent)
        record = {"path": rel, "original_sha256": original_sha or sha256(backup), "new_sha256": sha256(new),
                  "time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
        try:
            atomic_write_text(backup.with_name(backup.name + ".json"), json.dumps(record, indent=1) + "\n")
        except BaseException:
            with contextlib.suppress(OSError):
                backup.unlink()
            raise
    try:
        os.replace(new, path)
    except BaseException:
        if backup is not None:
            with contextlib.suppress(OSError):
                backup.with_name(backup.name + ".json").unlink()
                backup.unlink()
        raise
    fsync_dir(path.parent)
    return backup.relative_to(root).as_posix() if backup is not None else None


def save_info(root: Path, run_dir: Path, old_text: str, new_text: str) -> None:
    """Before ``info.json`` is rewritten by a run: keep its original text (the one ``new_text`` was made from) once
    per run, and the new text's digest, each written atomically (a run killed while saving leaves no partial original
    for ``--undo`` to restore).

    Raises:
        LrtoolError: the run folder is reached through a symlink (:func:`owned_path`).
        OSError: they cannot be written.
    """
    run_rel = run_dir.relative_to(root).as_posix()
    owned_path(root, run_rel).mkdir(parents=True, exist_ok=True)
    orig = owned_path(root, f"{run_rel}/info.json.orig")
    if not orig.exists():
        atomic_write_text(orig, old_text)
    atomic_write_text(owned_path(root, f"{run_rel}/info.json.new.sha256"),
                      hashlib.sha256(new_text.encode("utf-8")).hexdigest() + "\n")


@dataclass
class UndoReport:
    """What ``lrtool reencode --undo`` did to one dataset."""

    target: str
    root: str | None
    restored: list[str] = field(default_factory=list)
    refused: list[str] = field(default_factory=list)
    info_restored: bool = False
    runs: int = 0
    error: str | None = None

    @property
    def exit_status(self) -> int:
        return 2 if self.error and not self.runs else (1 if self.error or self.refused else 0)


def undo(root: Path, report: UndoReport) -> UndoReport:
    """Restore the originals of every re-encode run of the dataset at ``root`` (see the module docstring)."""
    base = Path(root) / REENCODE_DIR
    if base.is_symlink():
        report.error = f"{REENCODE_DIR} is a symlink: lrtool keeps its backups only in a real folder; remove it"
        return report
    runs = sorted((p for p in base.iterdir() if p.is_dir() and not p.is_symlink()), reverse=True) \
        if base.is_dir() else []
    if not runs:
        report.error = f"no re-encode to undo in {base}"
        return report
    report.runs = len(runs)
    for run in runs:
        for rec_path in sorted(run.glob("files/**/*.json")):
            try:
                rec = load_json_file(rec_path)
                rel = rec["path"]
                target = _contained(root, rel)
                backup = run / "files" / rel
                if backup.resolve() != rec_path.with_name(rec_path.name[: -len(".json")]).resolve():
                    raise LrtoolError(f"the record {rec_path.name} does not sit beside its original")
                if not backup.is_file() or backup.is_symlink():
                    raise LrtoolError(f"the original of {rel} is missing from {run.name}")
                if target.is_symlink():
                    raise LrtoolError(f"{rel} is a symlink now: not restoring through it")
                current = sha256(target) if target.is_file() else None
                if current == rec["original_sha256"]:
                    backup.unlink()
                    rec_path.unlink()
                    continue
                if current != rec["new_sha256"]:
                    report.refused.append(f"{rel}: changed since the re-encode (not the file it wrote); kept, its "
                                          f"original stays in {run.relative_to(root)}")
                    continue
                if sha256(backup) != rec["original_sha256"]:
                    raise LrtoolError(f"the saved original of {rel} does not match its record")
                os.replace(backup, target)
                fsync_dir(target.parent)
                rec_path.unlink()
                report.restored.append(rel)
            except (LrtoolError, OSError, KeyError, TypeError, ValueError) as exc:
                report.refused.append(f"{rec_path.relative_to(root)}: {exc}")
        try:
            _undo_info(root, run, report)
        except (LrtoolError, OSError, ValueError) as exc:
            report.refused.append(f"meta/info.json: {exc}; kept, its original stays in {run.relative_to(root)}")
        prune(run)
    with contextlib.suppress(OSError):
        base.rmdir()
    with contextlib.suppress(OSError):
        base.parent.rmdir()  # .lrtool/, when nothing else (a repair backup, the lock) is in it
    return report


def _undo_info(root: Path, run: Path, report: UndoReport) -> None:
    """Restore a run's original ``info.json`` when the current one is the text the run wrote: an atomic rewrite,
    verified (the saved original must parse as a JSON object, and the file must read back as it)."""
    orig, digest = run / "info.json.orig", run / "info.json.new.sha256"
    if not (orig.is_file() and digest.is_file()):
        return
    info = owned_path(root, "meta/info.json")
    written = read_text_capped(digest, digest.name, limit=1024).strip()
    current = read_capped(info, name="meta/info.json") if info.is_file() else None
    saved = read_capped(orig, name=orig.name)
    if current is not None and hashlib.sha256(current).hexdigest() == written:
        parsed = loads_json(saved, orig.name)
        if not isinstance(parsed, dict):
            raise LrtoolError(f"the saved original {orig.name} is not a JSON object")

        def verify(tmp: Path) -> None:
            if tmp.read_bytes() != saved:
                raise ValueError("meta/info.json does not read back as its saved original")

        with atomic_path(info, verify=verify) as tmp:
            tmp.write_bytes(saved)
        report.info_restored = True
    elif current != saved:
        return  # changed since the re-encode: kept, and so is the original
    orig.unlink()
    digest.unlink()


def prune(run: Path) -> None:
    """Remove the empty folders of a run (a run with a refused file keeps it)."""
    for d in sorted((p for p in run.rglob("*") if p.is_dir()), key=lambda p: len(p.parts), reverse=True):
        with contextlib.suppress(OSError):
            d.rmdir()
    with contextlib.suppress(OSError):
        run.rmdir()
