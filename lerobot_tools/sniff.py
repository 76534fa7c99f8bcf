"""File sniffer: is this a real data file, or a placeholder saved under its name?

Reads ``os.stat`` and at most the first 512 bytes of a file, imports nothing heavy, and never raises
for I/O problems. It recognises the placeholders that partial or failed downloads leave behind (empty
files, Git LFS pointers, HTML/XML/JSON error bodies, short text) and the magic numbers of the
containers a LeRobot dataset holds (Parquet, MP4/MOV, Matroska/WebM, AVI). Whether a file that *looks*
right is complete (a Parquet footer, an MP4 ``moov`` box) is for the format readers to decide
(pyarrow; :mod:`lerobot_tools.video.mp4`).

Sources: Git LFS pointer format (https://github.com/git-lfs/git-lfs/blob/main/docs/spec.md:
``version https://git-lfs.github.com/spec/v1``,
``oid sha256:<hex>``, ``size <bytes>``); ISO/IEC 14496-12 box header (4-byte size, 4-byte type);
Matroska EBML magic ``1A 45 DF A3``; Parquet files begin and end with ``PAR1``; RIFF/AVI header.
"""

from __future__ import annotations

import errno
import os
import re
import stat
from dataclasses import dataclass

HEAD_BYTES = 512
"""How many leading bytes :func:`sniff` reads."""

TEXT_MAX_SIZE = 1 << 20
"""Files of printable text up to this size (1 MiB) are classed as ``"text"`` placeholders; a larger file
that merely *starts* with text is left as ``kind="ok", magic="unknown"`` for the format reader to judge."""

PLACEHOLDER_KINDS = frozenset({"empty", "lfs-pointer", "html", "xml", "json", "text"})

_LFS_PREFIXES = (b"version https://git-lfs.github.com/spec/", b"version https://hawser.github.com/spec/")
# Top-level ISO-BMFF box types a file may start with (ISO/IEC 14496-12, QuickTime, 3GPP segments).
_MP4_FIRST_BOXES = frozenset(
    {b"ftyp", b"moov", b"mdat", b"free", b"skip", b"wide", b"styp", b"sidx", b"pnot", b"uuid", b"moof"}
)


@dataclass(frozen=True)
class Sniff:
    """What the first bytes of a file say it is.

    Attributes:
        kind: ``"ok"`` (a non-placeholder file, see ``magic``), ``"missing"`` (no such path or a
            dangling symlink), ``"unreadable"`` (directory, permission denied, symlink loop, FIFO or
            other non-regular file), or a placeholder kind: ``"empty"`` (0 bytes), ``"lfs-pointer"``,
            ``"html"``, ``"xml"``, ``"json"``, ``"text"``.
        size: bytes on disk; None when missing or unreadable.
        magic: when ``kind == "ok"``: ``"parquet"``, ``"mp4"`` (ISO-BMFF, includes MOV), ``"matroska"``
            (includes WebM), ``"avi"`` or ``"unknown"``; None otherwise.
        detail: one-line human description, e.g. ``"Git LFS pointer (real file 1.2 MB, oid sha256:ab12cd34…)"``.
        lfs_oid: ``"sha256:<hex>"`` from a Git LFS pointer, else None.
        lfs_size: size in bytes of the real file a Git LFS pointer stands for, else None.
    """

    kind: str
    size: int | None
    magic: str | None
    detail: str
    lfs_oid: str | None = None
    lfs_size: int | None = None

    @property
    def is_placeholder(self) -> bool:
        """True for files that exist but hold no real data: empty/lfs-pointer/html/xml/json/text."""
        return self.kind in PLACEHOLDER_KINDS


def human_size(n: int | None) -> str:
    """Format a byte count with decimal units, as the Hugging Face Hub does: ``132 B``, ``1.2 MB``."""
    if n is None:
        return "unknown size"
    if n < 1000:
        return f"{n} B"
    value = float(n)
    for unit in ("kB", "MB", "GB", "TB", "PB"):
        value /= 1000.0
        if value < 999.95 or unit == "PB":
            return f"{value:.1f} {unit}"
    raise AssertionError("unreachable")


def _stat_problem(path: str, exc: OSError) -> Sniff:
    if isinstance(exc, FileNotFoundError):
        if os.path.islink(path):
            try:
                target = os.readlink(path)
            except OSError:
                target = "?"
            return Sniff("missing", None, None, f"dangling symlink (points to {target})")
        return Sniff("missing", None, None, "file not found")
    if exc.errno == errno.ELOOP:
        return Sniff("unreadable", None, None, "symlink loop")
    if isinstance(exc, PermissionError):
        return Sniff("unreadable", None, None, "permission denied")
    if isinstance(exc, NotADirectoryError):
        return Sniff("missing", None, None, "file not found (a parent path is a file, not a folder)")
    return Sniff("unreadable", None, None, f"cannot read: {exc.strerror or exc}")


def _snippet(text: str, limit: int = 60) -> str:
    one_line = " ".join(text.split())
    return one_line if len(one_line) <= limit else one_line[: limit - 1] + "…"


def _is_printable_text(head: bytes) -> str | None:
    """Decode ``head`` as UTF-8 text of printable characters, or return None if it is binary."""
    try:
        text = head.decode("utf-8")
    except UnicodeDecodeError as exc:
        # A multi-byte character cut by the 512-byte limit is still text.
        if exc.start < len(head) - 3:
            return None
        text = head[: exc.start].decode("utf-8")
    for ch in text:
        if not (ch.isprintable() or ch in "\t\n\r\f\v"):
            return None
    return text


def _parse_lfs(head: bytes, size: int) -> Sniff:
    text = head.decode("utf-8", "replace")
    oid_m = re.search(r"^oid (\w+:[0-9a-fA-F]+)\s*$", text, re.MULTILINE)
    size_m = re.search(r"^size (\d+)\s*$", text, re.MULTILINE)
    oid = oid_m.group(1) if oid_m else None
    lfs_size = int(size_m.group(1)) if size_m else None
    parts = [f"real file {human_size(lfs_size)}" if lfs_size is not None else "real size unknown"]
    if oid:
        algo, _, digest = oid.partition(":")
        parts.append(f"oid {algo}:{digest[:8]}…")
    return Sniff("lfs-pointer", size, None, f"Git LFS pointer ({', '.join(parts)})", oid, lfs_size)


def _magic(head: bytes) -> str | None:
    if head[:4] == b"PAR1":
        return "parquet"
    if len(head) >= 8 and head[4:8] in _MP4_FIRST_BOXES:
        box_size = int.from_bytes(head[:4], "big")
        if box_size in (0, 1) or box_size >= 8:
            return "mp4"
    if head[:4] == b"\x1a\x45\xdf\xa3":
        return "matroska"
    if head[:4] == b"RIFF" and head[8:12] == b"AVI ":
        return "avi"
    return None


def sniff(path: str | os.PathLike) -> Sniff:
    """Classify a file from its size and first :data:`HEAD_BYTES` (512) bytes.

    Args:
        path: file to look at. Symlinks are followed.

    Returns:
        A :class:`Sniff`. Binary container magic (Parquet ``PAR1``, MP4 box header, Matroska EBML,
        RIFF/AVI) is checked before any text rule, so a real Parquet or MP4 file is never classed as text.

    Never raises for I/O problems: a missing path or dangling symlink gives ``kind="missing"``; a directory,
    permission error, symlink loop, FIFO/socket/device gives ``kind="unreadable"``; ``detail`` says which.
    """
    p = os.fspath(path)
    try:
        st = os.stat(p)
    except OSError as exc:
        return _stat_problem(p, exc)
    except ValueError as exc:  # embedded NUL byte in the path
        return Sniff("unreadable", None, None, f"invalid path: {exc}")
    if stat.S_ISDIR(st.st_mode):
        return Sniff("unreadable", None, None, "is a directory, not a file")
    if not stat.S_ISREG(st.st_mode):
        what = "FIFO" if stat.S_ISFIFO(st.st_mode) else "socket" if stat.S_ISSOCK(st.st_mode) else "device"
        return Sniff("unreadable", None, None, f"not a regular file ({what})")
    size = st.st_size
    if size == 0:
        return Sniff("empty", 0, None, "empty file (0 bytes)")
    try:
        with open(p, "rb") as fh:
            head = fh.read(HEAD_BYTES)
    except OSError as exc:
        found = _stat_problem(p, exc)
        return Sniff(found.kind, None, None, found.detail)
    if not head:  # the file shrank between stat and read
        return Sniff("empty", 0, None, "empty file (0 bytes)")

    magic = _magic(head)
    if magic is not None:
        names = {"parquet": "Parquet", "mp4": "MP4 (ISO-BMFF)", "matroska": "Matroska/WebM", "avi": "AVI"}
        return Sniff("ok", size, magic, f"{names[magic]} file, {human_size(size)}")

    if head.startswith(_LFS_PREFIXES):
        return _parse_lfs(head, size)

    stripped = head.lstrip(b"\xef\xbb\xbf \t\r\n")
    lowered = stripped[:256].lower()
    if lowered.startswith(b"<!doctype html") or b"<html" in lowered:
        text = head.decode("utf-8", "replace")
        title = re.search(r"<title[^>]*>(.*?)</title>", text, re.IGNORECASE | re.DOTALL)
        what = f': "{_snippet(title.group(1))}"' if title and title.group(1).strip() else ""
        return Sniff("html", size, None, f"HTML page ({human_size(size)}), not data{what}")
    if lowered.startswith(b"<?xml") or lowered.startswith(b"<error"):
        text = head.decode("utf-8", "replace")
        code = re.search(r"<Code>(.*?)</Code>", text, re.DOTALL)
        what = f": {_snippet(code.group(1))}" if code else f": {_snippet(text)}"
        return Sniff("xml", size, None, f"XML error body ({human_size(size)}), not data{what}")
    if stripped[:1] in (b"{", b"[") and _is_printable_text(head) is not None:
        text = head.decode("utf-8", "replace")
        return Sniff("json", size, None, f"JSON body ({human_size(size)}), not data: {_snippet(text)}")

    text = _is_printable_text(head)
    if text is not None and size <= TEXT_MAX_SIZE:
        return Sniff("text", size, None, f"text file ({human_size(size)}), not data: {_snippet(text)!r}")
    return Sniff("ok", size, "unknown", f"unrecognised file type, {human_size(size)} (first bytes {head[:8].hex(' ')})")
