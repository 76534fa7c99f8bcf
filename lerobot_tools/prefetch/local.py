"""What is already on disk: tree listings, per-file download metadata, and the presence check.

lrtool keeps its bookkeeping in the same place and format as ``huggingface_hub``'s ``local_dir``
downloads (huggingface_hub ``_local_folder.py``; docs/prefetch.md#local-dir), so a folder prefetched by
lrtool is recognised as up to date by ``snapshot_download(local_dir=...)`` / ``hf_hub_download`` and
vice versa::

    <dest>/.cache/huggingface/
        .gitignore                      "*"
        trees/<commit>.json             {"format_version": 1, "files": {path: {size, blob_id[, lfs_sha256, lfs_size][, xet_hash]}}}
        download/<path>.metadata        "<commit>\\n<etag>\\n<unix time>\\n"
        download/<path>.lock            file lock held while <path> is written

A file counts as present when it exists with the listed size and either its metadata names the same
commit or the same etag (and the file was not modified after the metadata was written, with 1 s of
slack as in ``huggingface_hub._local_folder``), or, without usable metadata, its content hashes to the
listed object id (git blob SHA-1 for regular files, SHA-256 for LFS files). None of this makes a request.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from lerobot_tools._io import TMP_PREFIX, atomic_write_text
from lerobot_tools.dataset.mixture import SHA_RE
from lerobot_tools.errors import LrtoolError

TREE_CACHE_FORMAT_VERSION = 1
#: a cached listing larger than this is ignored (about 1 million files; a LeRobot repo has far fewer)
MAX_TREE_CACHE_BYTES = 256 << 20
HF_DIR = Path(".cache") / "huggingface"
_CHUNK = 1 << 20


def _whole(value, item: dict) -> int:
    """``value`` as a whole number of bytes (an int, a float without fraction, or decimal text).

    Raises:
        ValueError: ``True``/``False``, a fraction, NaN or infinity, or text that is not an integer.
        TypeError: another type (a list, an object).
    """
    what = f"tree entry {item.get('path')!r}: size {str(value)[:40]!r} is not a whole number"
    if isinstance(value, bool) or (isinstance(value, float) and not value.is_integer()):
        raise ValueError(what)
    try:
        return int(value)
    except ValueError:
        raise ValueError(what) from None
    except TypeError:
        raise TypeError(what) from None


@dataclass(frozen=True)
class TreeFile:
    """One file of a repo tree listing (``GET /api/datasets/{repo}/tree/{rev}?recursive=true``).

    Attributes:
        path: path in the repo, ``/``-separated.
        size: size in bytes of the real content (for LFS files, the LFS object size).
        blob_id: git blob SHA-1 (the tree entry's ``oid``; for LFS files, of the pointer file).
        lfs_sha256: SHA-256 of the content for LFS files (``lfs.oid``), else None.
        lfs_size: LFS object size, else None.
        xet_hash: Xet content hash when the server lists one (kept for cache compatibility only).
    """

    path: str
    size: int
    blob_id: str
    lfs_sha256: str | None = None
    lfs_size: int | None = None
    xet_hash: str | None = None

    @property
    def etag(self) -> str:
        """What the Hub sends as the file's ETag: the LFS SHA-256, else the git blob SHA-1."""
        return self.lfs_sha256 or self.blob_id

    def to_json(self) -> dict:
        info: dict = {"size": self.size, "blob_id": self.blob_id}
        if self.lfs_sha256 is not None:
            info["lfs_sha256"] = self.lfs_sha256
            info["lfs_size"] = self.lfs_size
        if self.xet_hash is not None:
            info["xet_hash"] = self.xet_hash
        return info

    @classmethod
    def from_json(cls, path: str, info: dict) -> "TreeFile":
        """Inverse of :meth:`to_json` (a cached listing).

        Raises:
            ValueError, TypeError, KeyError: a size that is not a non-negative whole number, a missing size.
        """
        size = _whole(info["size"], {"path": path})
        if size < 0:
            raise ValueError(f"cached tree entry {path!r}: negative size")
        return cls(path=path, size=size, blob_id=str(info.get("blob_id") or ""),
                   lfs_sha256=info.get("lfs_sha256"), lfs_size=info.get("lfs_size"), xet_hash=info.get("xet_hash"))

    @classmethod
    def from_api(cls, item: dict) -> "TreeFile":
        """Build from one ``{"type": "file", ...}`` item of the tree endpoint.

        Raises:
            ValueError, TypeError: the item is malformed (``lfs`` not an object, a size that is not a
                non-negative integer, an LFS ``oid`` or ``xetHash`` that is not a string).
        """
        lfs = item.get("lfs") or None
        if lfs is not None and not isinstance(lfs, dict):
            raise ValueError(f"tree entry {item.get('path')!r}: 'lfs' is not an object")
        lfs = lfs or {}
        size, lfs_size = _whole(item.get("size") or 0, item), lfs.get("size")
        lfs_size = _whole(lfs_size, item) if lfs_size is not None else None
        if size < 0 or (lfs_size is not None and lfs_size < 0):
            raise ValueError(f"tree entry {item.get('path')!r}: negative size")
        for value in (lfs.get("oid"), item.get("xetHash")):
            if value is not None and not isinstance(value, str):
                raise TypeError(f"tree entry {item.get('path')!r}: a hash is not a string")
        return cls(path=str(item["path"]), size=size, blob_id=str(item.get("oid") or ""),
                   lfs_sha256=lfs.get("oid"), lfs_size=lfs_size, xet_hash=item.get("xetHash"))


def hf_dir(dest: Path) -> Path:
    """``<dest>/.cache/huggingface`` (created on first write, with a ``.gitignore`` of ``*``)."""
    return Path(dest) / HF_DIR


def ensure_hf_dir(dest: Path) -> Path:
    """Create ``<dest>/.cache/huggingface`` with its ``.gitignore`` (as huggingface_hub does)."""
    d = hf_dir(dest)
    d.mkdir(parents=True, exist_ok=True)
    gi = d / ".gitignore"
    if not gi.exists():
        with contextlib.suppress(OSError):
            atomic_write_text(gi, "*")
    return d


def tree_cache_path(dest: Path, commit: str) -> Path:
    return hf_dir(dest) / "trees" / f"{commit}.json"


def read_tree_cache(dest: Path, commit: str) -> dict[str, TreeFile] | None:
    """The cached tree listing of ``commit`` in ``dest``, or None if absent, unreadable, of an unknown
    format, not a regular file, larger than :data:`MAX_TREE_CACHE_BYTES`, or ``commit`` is not a 40-hex SHA.

    The paths it lists are not checked here: see :func:`check_listing`.
    """
    if not SHA_RE.match(commit or ""):
        return None
    path = tree_cache_path(dest, commit)
    try:
        if not path.is_file() or path.stat().st_size > MAX_TREE_CACHE_BYTES:
            return None
        data = json.loads(path.read_text(encoding="utf-8"))
        if data.get("format_version") != TREE_CACHE_FORMAT_VERSION:
            return None
        return {p: TreeFile.from_json(p, info) for p, info in data["files"].items()}
    except FileNotFoundError:
        return None
    except (OSError, ValueError, KeyError, TypeError, AttributeError, RecursionError):
        return None


def write_tree_cache(dest: Path, commit: str, files: dict[str, TreeFile]) -> None:
    """Write the tree listing of ``commit`` atomically (a commit's listing never changes)."""
    ensure_hf_dir(dest)
    path = tree_cache_path(dest, commit)
    path.parent.mkdir(parents=True, exist_ok=True)
    data = {"format_version": TREE_CACHE_FORMAT_VERSION,
            "files": {p: files[p].to_json() for p in sorted(files)}}
    atomic_write_text(path, json.dumps(data, indent=1))


def cached_tree_commits(dest: Path) -> list[str]:
    """Commits that have a cached tree listing in ``dest``, newest file first."""
    d = hf_dir(dest) / "trees"
    if not d.is_dir():
        return []
    items = [(p.stat().st_mtime, p.stem) for p in d.glob("*.json") if p.is_file() and SHA_RE.match(p.stem)]
    return [c for _, c in sorted(items, reverse=True)]


#: top folders of a destination that prefetch never writes from a listing: lrtool's backups, and the
#: ``huggingface_hub``-compatible bookkeeping this module keeps
RESERVED_DIRS = ((".lrtool",), (".cache", "huggingface"))
_BAD_CHARS = re.compile(r"[\x00-\x1f\x7f\\]")


def path_problem(path: str) -> str | None:
    """Why the repo path ``path`` (from a tree listing) cannot name a file under a destination, else None.

    A usable path is ``/``-separated and relative, with no empty, ``.`` or ``..`` component, no
    backslash, no control character and no drive letter, at most 4096 bytes.
    """
    if not isinstance(path, str) or not path:
        return "empty path"
    if len(path.encode("utf-8", "surrogatepass")) > 4096:
        return "path longer than 4096 bytes"
    if path.startswith("/") or re.match(r"^[A-Za-z]:", path):
        return "absolute path"
    if _BAD_CHARS.search(path):
        return "backslash or control character"
    if any(part in ("", ".", "..") for part in path.split("/")):
        return "'..', '.' or empty path component"
    return None


def is_reserved(path: str) -> bool:
    """True for a repo path inside a reserved folder (``.lrtool/``, ``.cache/huggingface/``; any case)."""
    parts = path.lower().split("/")
    return any(len(parts) > len(r) and tuple(parts[:len(r)]) == r for r in RESERVED_DIRS)


def check_listing(dest: Path, tree: dict[str, "TreeFile"]) -> tuple[dict[str, "TreeFile"], list[str]]:
    """Check every path of a tree listing before anything is written for it.

    Args:
        dest: the destination folder of the repo (need not exist yet).
        tree: the listing (path -> :class:`TreeFile`), from the server or a cached listing.

    Returns:
        ``(usable, reserved)``: the listing without the entries in reserved folders, and those paths
        (sorted), which the caller skips and reports.

    Raises:
        LrtoolError: some path is unusable (:func:`path_problem`) or its folder resolves outside ``dest``
            (a symlink in the destination); the message names the first bad path, why, and how many.
    """
    bad: list[tuple[str, str]] = []
    for p in tree:
        why = path_problem(p)
        if why is not None:
            bad.append((p, why))
    if not bad:
        root = Path(dest).resolve()
        parents = sorted({p.rpartition("/")[0] for p in tree if not is_reserved(p)})
        for parent in parents:
            where = (root / parent).resolve() if parent else root
            if where != root and root not in where.parents:
                bad.append((parent + "/", f"resolves outside the destination ({where})"))
                break
    if bad:
        path, why = sorted(bad)[0]
        more = f" (and {len(bad) - 1} more)" if len(bad) > 1 else ""
        raise LrtoolError(f"the tree listing names {path!r}: {why}{more}; repo refused, nothing written")
    reserved = sorted(p for p in tree if is_reserved(p))
    if not reserved:
        return tree, []
    skip = set(reserved)
    return {p: f for p, f in tree.items() if p not in skip}, reserved


def metadata_path(dest: Path, path: str) -> Path:
    return hf_dir(dest) / "download" / f"{path}.metadata"


def lock_path(dest: Path, path: str) -> Path:
    """The file lock huggingface_hub also takes for ``path`` (``download/<path>.lock``)."""
    return hf_dir(dest) / "download" / f"{path}.lock"


@dataclass(frozen=True)
class DownloadMetadata:
    commit: str
    etag: str
    timestamp: float


def read_metadata(dest: Path, path: str) -> DownloadMetadata | None:
    try:
        lines = metadata_path(dest, path).read_text(encoding="utf-8").splitlines()
        return DownloadMetadata(lines[0].strip(), lines[1].strip(), float(lines[2].strip()))
    except (OSError, IndexError, ValueError):
        return None


def write_metadata(dest: Path, path: str, commit: str, etag: str) -> None:
    """Record that ``path`` holds ``etag`` at ``commit`` (huggingface_hub's 3-line format).

    Written to a temporary name and renamed, without fsync: this is bookkeeping, not dataset content.
    After a crash it is at worst missing or unparsable, and the file is then checked by hash instead.
    """
    mp = metadata_path(dest, path)
    mp.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=TMP_PREFIX, suffix=".metadata", dir=mp.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(f"{commit}\n{etag}\n{time.time()}\n")
        os.replace(tmp, mp)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


class ContentHasher:
    """Incremental hash of a file's content matching its tree entry.

    LFS files: SHA-256 of the content (``lfs.oid``). Regular files: git blob SHA-1, i.e. SHA-1 of
    ``b"blob <size>\\0" + content`` (the tree ``oid`` and the Hub's ETag). ``expected`` is None when
    the listing gives no usable id, and :meth:`matches` is then always True.
    """

    def __init__(self, entry: TreeFile):
        self.entry = entry
        if entry.lfs_sha256:
            self._h = hashlib.sha256()
            self.expected: str | None = entry.lfs_sha256.lower()
        elif re.fullmatch(r"[0-9a-fA-F]{40}", entry.blob_id or ""):
            self._h = hashlib.sha1()
            self._h.update(b"blob %d\0" % entry.size)
            self.expected = entry.blob_id.lower()
        else:
            self._h = hashlib.sha1()
            self.expected = None

    def reset(self) -> None:
        self.__init__(self.entry)  # type: ignore[misc]

    def update(self, data: bytes) -> None:
        self._h.update(data)

    def hexdigest(self) -> str:
        return self._h.hexdigest()

    def matches(self) -> bool:
        return self.expected is None or self._h.hexdigest() == self.expected


def hash_file_matches(path: Path, entry: TreeFile) -> bool:
    """True when the file at ``path`` hashes to ``entry``'s object id (reads the whole file)."""
    h = ContentHasher(entry)
    if h.expected is None:
        return True
    try:
        with open(path, "rb") as fh:
            while chunk := fh.read(_CHUNK):
                h.update(chunk)
    except OSError:
        return False
    return h.matches()


def check_present(dest: Path, entry: TreeFile, commit: str, *, trust_metadata: bool = True) -> tuple[bool, str]:
    """Decide, without any request, whether ``dest/entry.path`` already holds ``entry`` at ``commit``.

    Returns:
        ``(present, how)`` where ``how`` is ``"metadata"`` (size + matching metadata),
        ``"hash"`` (size + content hash), ``"missing"``, ``"size"`` (wrong size) or ``"content"``
        (right size, wrong content).
    """
    target = Path(dest) / entry.path
    try:
        st = target.stat()
    except OSError:
        return False, "missing"
    if not target.is_file():
        return False, "missing"
    if st.st_size != entry.size:
        return False, "size"
    if trust_metadata:
        meta = read_metadata(dest, entry.path)
        if meta is not None and st.st_mtime <= meta.timestamp + 1 and (
                meta.commit == commit or (meta.etag and meta.etag == entry.etag)):
            return True, "metadata"
    if hash_file_matches(target, entry):
        return True, "hash"
    return False, "content"


_TEMP_SUFFIX_RE = r"[A-Za-z0-9_]{8}-"


def remove_stale_temps(final: Path) -> int:
    """Remove temporary files a killed run left for ``final`` (call only while holding its file lock)."""
    pattern = re.compile(re.escape(TMP_PREFIX) + _TEMP_SUFFIX_RE + re.escape(final.name) + r"$")
    n = 0
    try:
        names = os.listdir(final.parent)
    except OSError:
        return 0
    for name in names:
        if pattern.match(name):
            with contextlib.suppress(OSError):
                (final.parent / name).unlink()
                n += 1
    return n
