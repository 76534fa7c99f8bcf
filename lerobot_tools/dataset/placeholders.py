"""Unreadable files: placeholders and truncated metadata, described as what they are, and their shared cause.

Every metadata file (``meta/info.json``, ``episodes.jsonl``, ``episodes_stats.jsonl``, ``tasks.jsonl``,
``tasks.parquet``, ``meta/episodes/*/*.parquet``, ``stats.json``) is sniffed before it is parsed, exactly as
data and video files are (:mod:`lerobot_tools.sniff`): a Git LFS pointer, an HTML/XML/JSON error page, an
empty or truncated file is reported as what it is (``meta/episodes.jsonl is a Git LFS pointer (object of
1,890 bytes not fetched)``), never as "malformed rows" or "not valid JSON". :func:`check_metadata_file` does
the sniffing and raises :class:`UnreadableFileError`.

When many files share one cause (a ``git clone`` without ``git lfs pull`` leaves every LFS-tracked file a
pointer; a download script that saved the server's error responses leaves HTML or JSON bodies), the cause
is said once: :func:`shared_causes` groups sniff results by cause and by folder, with the fix.

Sources: Git LFS pointer format (https://github.com/git-lfs/git-lfs/blob/main/docs/spec.md); the Hugging Face
Hub answers a missing or
gated file with a JSON body ``{"error": "..."}`` and a rate-limited request with an HTML or JSON body
(docs/prefetch.md#requests); a parquet file ends with the 4-byte magic ``PAR1`` (Apache
Parquet format specification); JSON documents end with their closing bracket (RFC 8259).
"""

from __future__ import annotations

import os
import re
from pathlib import Path, PurePosixPath

from lerobot_tools._io import open_regular
from lerobot_tools.errors import DatasetError
from lerobot_tools.findings import RootCause
from lerobot_tools.sniff import PLACEHOLDER_KINDS, Sniff, human_size, sniff

#: Placeholder kinds of :func:`lerobot_tools.sniff.sniff` -> the check that reports them (F004 Git LFS
#: pointer, F005 error page or text, F006 empty).
PLACEHOLDER_CHECKS = {"empty": "F006", "lfs-pointer": "F004", "html": "F005", "xml": "F005", "json": "F005",
                      "text": "F005"}

#: What :func:`check_metadata_file` expects a file to hold.
FORMATS = ("json", "jsonl", "parquet")

_TAIL_BYTES = 64
_JSON_ERROR_BODY = re.compile(rb'^\s*\{\s*"(error|errors|message|detail)"\s*:')


#: ``file_kind`` subject value -> how a message names such a file.
FILE_KIND_LABELS = {
    "data": "data file", "video": "video file", "episodes": "episode metadata file", "tasks": "task table",
    "stats": "statistics file", "episodes_stats": "per-episode statistics file", "info": "info.json",
    "meta": "metadata file", "other": "file",
}


def file_kind_of(rel: str) -> str:
    """The ``file_kind`` subject of a dataset file from its path (``data/...`` -> ``"data"``,
    ``meta/tasks.parquet`` -> ``"tasks"``...; ``"other"`` outside the known places)."""
    top = rel.split("/", 1)[0]
    if top == "data":
        return "data"
    if top == "videos":
        return "video"
    if top != "meta":
        return "other"
    if rel.startswith("meta/episodes/") or rel == "meta/episodes.jsonl":
        return "episodes"
    return {"meta/tasks.parquet": "tasks", "meta/tasks.jsonl": "tasks", "meta/stats.json": "stats",
            "meta/episodes_stats.jsonl": "episodes_stats", "meta/info.json": "info"}.get(rel, "meta")


class UnreadableFileError(DatasetError):
    """A file exists but holds no usable content: a placeholder (Git LFS pointer, error page, empty file,
    text) or a truncated file.

    Attributes:
        kind: a placeholder kind of :data:`PLACEHOLDER_CHECKS` (``"lfs-pointer"``, ``"html"``, ``"xml"``,
            ``"json"``, ``"text"``, ``"empty"``), ``"truncated"``, ``"not-parquet"`` or ``"unreadable"``
            (a folder, a FIFO, permission denied).
        sniffed: the :class:`~lerobot_tools.sniff.Sniff` of the file.
    """

    def __init__(self, message: str, path: str, kind: str, sniffed: Sniff):
        super().__init__(message, path)
        self.kind = kind
        self.sniffed = sniffed

    @property
    def placeholder(self) -> bool:
        """True for a placeholder (reported by F004/F005/F006), False for a truncated or unreadable file."""
        return self.kind in PLACEHOLDER_KINDS

    @property
    def check(self) -> str | None:
        """The catalogue ID that reports a placeholder (F004/F005/F006), else None (the file's own check)."""
        return PLACEHOLDER_CHECKS.get(self.kind)


def describe(s: Sniff) -> str:
    """What a placeholder is, as the predicate of a sentence naming the file (``"is a Git LFS pointer
    (object of 1,890 bytes not fetched)"``).

    Args:
        s: a sniff whose ``kind`` is a placeholder kind; other kinds get ``"is <detail>"``.
    """
    if s.kind == "lfs-pointer":
        what = f"object of {s.lfs_size:,} bytes" if s.lfs_size is not None else "object of unknown size"
        return f"is a Git LFS pointer ({what} not fetched)"
    if s.kind == "empty":
        return "is empty (0 bytes)"
    if s.kind in ("html", "xml"):
        return f"is an {s.detail}"  # "an HTML page (1.2 kB), not data: \"429 Too Many Requests\""
    if s.kind == "json":
        return f"is a {s.detail.replace('JSON body', 'JSON error body', 1)}"
    if s.kind == "text":
        return f"is a {s.detail}"
    return f"is {s.detail}"


def _tail(path: Path, n: int = _TAIL_BYTES) -> bytes:
    with open_regular(path, limit=None, error=DatasetError) as fh:
        fh.seek(0, os.SEEK_END)
        size = fh.tell()
        fh.seek(max(0, size - n))
        return fh.read(n)


def check_metadata_file(path: str | os.PathLike, rel: str, fmt: str) -> Sniff:
    """Sniff a metadata file before it is parsed; raise when it is a placeholder or truncated.

    Reads at most 512 leading and 64 trailing bytes.

    Args:
        path: the file.
        rel: its path relative to the dataset root (named in messages).
        fmt: ``"json"`` (one JSON document: info.json, stats.json), ``"jsonl"`` (JSON Lines:
            episodes.jsonl, tasks.jsonl, episodes_stats.jsonl) or ``"parquet"``.

    Returns:
        The sniff (``kind == "missing"`` for a file that does not exist: callers decide what absence means).

    Raises:
        UnreadableFileError: a Git LFS pointer, an HTML/XML error page, a JSON error body (``{"error": ...}``),
            plain text where JSON or parquet is expected, an empty file, a truncated file (a JSON document
            without its closing bracket, a JSON Lines file whose last line is cut, a parquet file without the
            ``PAR1`` footer magic), or a file that cannot be read at all.
        ValueError: ``fmt`` is not one of :data:`FORMATS`.
    """
    if fmt not in FORMATS:
        raise ValueError(f"unknown metadata format {fmt!r}")
    s = sniff(path)
    if s.kind == "missing":
        return s
    if s.kind == "unreadable":
        raise UnreadableFileError(f"cannot be read: {s.detail}", rel, "unreadable", s)
    try:
        return _check_sniffed(Path(path), rel, fmt, s)
    except OSError as exc:  # the file changed between the sniff and the read
        raise UnreadableFileError(f"cannot be read ({exc.strerror or exc})", rel, "unreadable", s) from None


def _check_sniffed(path: Path, rel: str, fmt: str, s: Sniff) -> Sniff:
    if fmt == "parquet":
        if s.is_placeholder:
            raise UnreadableFileError(describe(s), rel, s.kind, s)
        if s.magic != "parquet":
            raise UnreadableFileError(f"is not a parquet file ({s.detail})", rel, "not-parquet", s)
        if _tail(path, 4) != b"PAR1":
            raise UnreadableFileError(
                f"is truncated: no parquet footer (the file does not end with the PAR1 magic; {human_size(s.size)} "
                "on disk, a partial download or an interrupted write)", rel, "truncated", s)
        return s
    # JSON and JSON Lines are text: sniff classes a real one as "json"; the placeholder kinds that are not
    # JSON, and a JSON error body, are placeholders here
    if s.kind in ("lfs-pointer", "empty", "html", "xml", "text"):
        raise UnreadableFileError(describe(s), rel, s.kind, s)
    with open_regular(path, limit=None, error=DatasetError) as fh:
        head = fh.read(512)
    if _JSON_ERROR_BODY.match(head) and not _looks_like_metadata(head):
        raise UnreadableFileError(describe(s), rel, "json", s)
    if s.kind != "json":
        return s  # binary or unrecognised: the JSON parser reports it
    tail = _tail(path).rstrip()
    if b"\0" in tail:
        return s  # binary bytes at the end (a file extended with zeros...): the reader reports it
    if not tail.endswith((b"}", b"]")):
        what = ("the JSON document stops before its closing bracket" if fmt == "json" else "its last line is cut off")
        raise UnreadableFileError(f"is truncated: {what} ({human_size(s.size)} on disk, a partial download or an "
                                  "interrupted write)", rel, "truncated", s)
    return s


def _looks_like_metadata(head: bytes) -> bool:
    # a real LeRobot metadata file never starts with an "error"/"message" key, but stay safe: an object that
    # also names a metadata key is not an error body
    return any(k in head for k in (b'"codebase_version"', b'"episode_index"', b'"task_index"', b'"features"'))


# ---------------------------------------------------------------------------------------------- causes
_CAUSES = {
    "lfs-pointer": ("F004", "Git LFS pointers whose content was never fetched (a git clone without `git lfs pull`)",
                    "run `git lfs pull` in the dataset folder (or re-download it: `lrtool prefetch`, `hf download`)"),
    "error-page": ("F005", "error pages or text saved in place of the files (a download that saved the server's "
                   "error responses)", "re-download the files (check the token, access to a gated dataset, and "
                   "rate limits): `lrtool prefetch` or `hf download`"),
    "empty": ("F006", "empty files (an interrupted download or copy)", "re-download the files"),
}


def cause_of(kind: str) -> str | None:
    """The cause group of a placeholder kind: ``"lfs-pointer"``, ``"error-page"`` or ``"empty"``; None for
    other kinds."""
    if kind == "lfs-pointer":
        return "lfs-pointer"
    if kind in ("html", "xml", "json", "text"):
        return "error-page"
    if kind == "empty":
        return "empty"
    return None


def folder_of(rel: str) -> str:
    """The folder a file is counted under in a cause line: its parent folder (``videos/cam/chunk-000``),
    ``.`` for a file at the root."""
    parent = PurePosixPath(rel).parent.as_posix()
    return parent


def shared_causes(sniffs: dict[str, Sniff], *, min_files: int = 2) -> list[RootCause]:
    """Group sniff results by cause; a cause that at least ``min_files`` files share is returned.

    Args:
        sniffs: relative path -> sniff, for every file looked at (data, video, metadata).
        min_files: how many files must share a cause for it to be said once at the top (a single
            placeholder is its own finding).

    Returns:
        Causes, the most files first, each with the count per folder (folders in the order of their files).
    """
    groups: dict[str, list[str]] = {}
    for rel, s in sniffs.items():
        c = cause_of(s.kind)
        if c is not None:
            groups.setdefault(c, []).append(rel)
    out = []
    for cause, files in groups.items():
        if len(files) < min_files:
            continue
        check, title, fix = _CAUSES[cause]
        by_folder: dict[str, int] = {}
        for rel in sorted(files):
            d = folder_of(rel)
            by_folder[d] = by_folder.get(d, 0) + 1
        out.append(RootCause(check, len(files), title, fix, by_folder))
    out.sort(key=lambda c: (-c.count, c.check))
    return out
