"""The memory-mapped Arrow rows behind the map-style loaders, opened in milliseconds when the cache is warm.

**Cold** (first open of a set of data files on this machine): the parquet files go through
``datasets.load_dataset("parquet", data_files=[...])``, which converts them into its Arrow cache (IPC
stream files under ``$HF_DATASETS_CACHE``, casting columns to the ``huggingface`` schema metadata the way
upstream lerobot's loader does). lrtool then records, in a small index file next to that cache
(``<cache>/lrtool_arrow_index/<key>.json``), which cache files hold those data files, keyed by each data
file's resolved path, size and modification time.

**Warm** (every later open): the index file is read, the cache files are checked (present, same size as
recorded) and memory-mapped directly with ``pyarrow.ipc.open_stream(pyarrow.memory_map(path))``, the
same zero-copy read ``datasets`` itself performs (``datasets.table.MemoryMappedTable``). This skips
``import datasets`` (about 1 s), the builder's fingerprinting, and the Hub request ``load_dataset``
makes to count downloads, which is what made construction slow: a warm open costs one JSON read and one
``stat`` per file. Any mismatch (a data file changed, a cache file deleted or rewritten) falls back to
the cold path, which rebuilds the entry.

Memory-mapped pages are file-backed: the page cache holds them and the process's anonymous memory does
not grow with the data. :class:`MappedBudget` bounds how much of them one process keeps mapped (see
:class:`~lerobot_tools.loaders.FrameDataset` ``max_mapped_mb``).

Only numpy and pyarrow are imported here; ``datasets`` is imported on the cold path only.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Sequence

import numpy as np
import pyarrow as pa

from lerobot_tools.errors import DatasetError, one_line

#: Version of the index-file layout (bumped when its meaning changes).
INDEX_VERSION = 1
INDEX_DIRNAME = "lrtool_arrow_index"
#: Index files larger than this are not read (they hold a few hundred bytes per cache file).
INDEX_MAX_BYTES = 4 * 2**20


def datasets_cache_root(cache_dir: str | os.PathLike | None) -> Path:
    """The ``datasets`` cache folder: ``cache_dir``, else ``$HF_DATASETS_CACHE``, else ``$HF_HOME/datasets``.

    Same resolution as ``datasets.config.HF_DATASETS_CACHE`` (``HF_HOME`` -> ``$XDG_CACHE_HOME/huggingface``
    -> ``~/.cache/huggingface``), computed without importing ``datasets``.
    """
    if cache_dir is not None:
        return Path(cache_dir).expanduser()
    if os.environ.get("HF_DATASETS_CACHE"):
        return Path(os.environ["HF_DATASETS_CACHE"]).expanduser()
    from lerobot_tools._env import hf_home

    return hf_home() / "datasets"


def _identity(files: Sequence[str]) -> list[list]:
    out = []
    for f in files:
        st = os.stat(f)
        out.append([os.path.realpath(f), st.st_size, st.st_mtime_ns])
    return out


def _index_path(cache_root: Path, identity: list[list]) -> Path:
    key = hashlib.sha256(json.dumps([INDEX_VERSION, identity]).encode()).hexdigest()[:32]
    return cache_root / INDEX_DIRNAME / f"{key}.json"


class ArrowRows:
    """The rows of a list of data parquet files as one memory-mapped Arrow table.

    Attributes:
        table: ``pyarrow.Table`` whose buffers are memory-mapped from the cache files (zero-copy).
        cache_files: absolute paths of the Arrow cache files, in row order.
        num_rows: rows in total.
        warm: True when the table was opened from the index without calling ``datasets``.
    """

    def __init__(self, table: pa.Table, cache_files: list[str], warm: bool):
        self.table = table
        self.cache_files = cache_files
        self.num_rows = table.num_rows
        self.warm = warm
        self._batches = table.to_batches()
        sizes = np.fromiter((b.num_rows for b in self._batches), dtype=np.int64, count=len(self._batches))
        self._offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)

    def take(self, rows: np.ndarray, columns: Sequence[str] | None = None) -> pa.Table:
        """The rows ``rows`` (int64, any order, repeats allowed) as a small in-memory table, in that order.

        One ``RecordBatch.take`` per record batch touched (no concatenation of whole columns, which
        ``Table.take`` on a many-chunk table may do), then one reordering take on the small result.
        """
        rows = np.asarray(rows, dtype=np.int64).reshape(-1)
        names = list(columns) if columns is not None else self.table.column_names
        if rows.size == 0:
            return self.table.select(names).slice(0, 0)
        b = np.searchsorted(self._offsets, rows, side="right") - 1
        order = np.argsort(b, kind="stable")
        parts = []
        for bi in np.unique(b).tolist():
            sel = rows[b == bi] - self._offsets[bi]
            batch = self._batches[bi]
            if columns is not None:
                batch = batch.select(names)
            parts.append(batch.take(pa.array(sel)))
        grouped = pa.Table.from_batches(parts).combine_chunks()
        inverse = np.empty_like(order)
        inverse[order] = np.arange(order.size)
        if np.array_equal(order, np.arange(order.size)):
            return grouped
        return grouped.take(pa.array(inverse))


def _open_cache_files(files: list[str]) -> pa.Table:
    tables = []
    for f in files:
        with pa.memory_map(f, "r") as source:
            tables.append(pa.ipc.open_stream(source).read_all())
    return tables[0] if len(tables) == 1 else pa.concat_tables(tables)


_STALE = "stale"


def _read_index(path: Path) -> list[str] | str | None:
    """Cache files recorded in an index file; None when there is no usable index; :data:`_STALE` when
    the index names cache files that are gone or changed size (the ``datasets`` cache is damaged)."""
    try:
        if path.stat().st_size > INDEX_MAX_BYTES:
            return None
        doc = json.loads(path.read_text(encoding="utf-8"))
        files = doc["cache_files"]
        if doc.get("version") != INDEX_VERSION or not isinstance(files, list) or not files:
            return None
        paths = [str(e["path"]) for e in files]
        sizes = [int(e["size"]) for e in files]
    except (OSError, ValueError, KeyError, TypeError):
        return None
    for p, size in zip(paths, sizes):
        try:
            if os.stat(p).st_size != size:
                return _STALE
        except OSError:
            return _STALE
    return paths


def _write_index(path: Path, identity: list[list], cache_files: list[str], num_rows: int) -> None:
    """Record the cache files of ``identity`` (best effort: an unwritable cache only costs speed)."""
    from lerobot_tools._io import atomic_write_text

    doc = {"version": INDEX_VERSION, "data_files": identity, "num_rows": num_rows,
           "cache_files": [{"path": f, "size": os.stat(f).st_size} for f in cache_files]}
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_text(path, json.dumps(doc))
    except OSError:
        pass


def _lookup(files: Sequence[str], cache_dir, where) -> tuple[Path, list[list], list[str] | str | None]:
    try:
        identity = _identity(files)
    except OSError as exc:
        raise DatasetError(f"data file cannot be read ({exc.strerror or exc})", exc.filename or where) from None
    index = _index_path(datasets_cache_root(cache_dir), identity)
    return index, identity, _read_index(index)


def _build(files: list[str], cache_dir, progress: bool, where, index: Path, identity: list[list],
           rebuild: bool = False):
    hf = _load_parquet(files, cache_dir, progress, where, rebuild)
    cache_files = [os.path.realpath(f["filename"]) for f in hf.cache_files]
    if cache_files:
        _write_index(index, identity, cache_files, hf.num_rows)
    return hf, cache_files


def open_rows(files: Sequence[str], cache_dir: str | os.PathLike | None, *, progress: bool = False,
              where: str | os.PathLike = "") -> ArrowRows:
    """Open the rows of the data parquet ``files`` (absolute paths, in row order), memory-mapped.

    Args:
        files: data parquet files; their rows are concatenated in this order.
        cache_dir: the ``datasets`` cache folder (None: :func:`datasets_cache_root`).
        progress: show the ``datasets`` progress bars on the cold path.
        where: named in error messages (the dataset root).

    Raises:
        DatasetError: a data file cannot be read, or ``datasets`` cannot load the parquet files (one line
            with its first message line).
    """
    files = [str(f) for f in files]
    index, identity, cached = _lookup(files, cache_dir, where)
    if isinstance(cached, list):
        try:
            return ArrowRows(_open_cache_files(cached), cached, warm=True)
        except (OSError, pa.ArrowException):
            cached = _STALE  # a cache file was damaged under us: rebuild below
    hf, cache_files = _build(files, cache_dir, progress, where, index, identity, rebuild=cached == _STALE)
    if not cache_files:  # an in-memory dataset (datasets keep_in_memory): nothing to map or record
        return ArrowRows(hf.data.table, [], warm=False)
    return ArrowRows(_open_cache_files(cache_files), cache_files, warm=False)


def ensure_rows(files: Sequence[str], cache_dir: str | os.PathLike | None, *, progress: bool = False,
                where: str | os.PathLike = "") -> bool:
    """Make sure the Arrow cache of ``files`` exists (building it if needed) without mapping it.

    Returns:
        True when it already existed (warm), False when it was built now.

    Raises:
        DatasetError: as :func:`open_rows`.
    """
    files = [str(f) for f in files]
    index, identity, cached = _lookup(files, cache_dir, where)
    if isinstance(cached, list):
        return True
    _build(files, cache_dir, progress, where, index, identity, rebuild=cached == _STALE)
    return False


def _load_parquet(files: list[str], cache_dir, progress: bool, root, rebuild: bool = False):
    """``datasets.load_dataset("parquet", data_files=files)`` (memory-mapped Arrow cache); one-line errors.

    ``rebuild`` forces ``datasets`` to convert the parquet again (``download_mode="force_redownload"``):
    used when the cache files it would reuse are known to be damaged, which ``datasets`` does not check.
    """
    import datasets

    was_enabled = datasets.is_progress_bar_enabled()
    if not progress:
        datasets.disable_progress_bars()
    try:
        return datasets.load_dataset("parquet", data_files=files, split="train",
                                     cache_dir=str(cache_dir) if cache_dir is not None else None,
                                     download_mode="force_redownload" if rebuild else None)
    except Exception as exc:
        raise DatasetError(f"datasets cannot load the data parquet files ({one_line(exc, typed=True)})",
                           root) from None
    finally:
        if was_enabled and not progress:
            datasets.enable_progress_bars()


def scan_rows(table: pa.Table, max_runs: int, where: str) -> tuple[dict[int, list[tuple[int, int]]], set[int]]:
    """One pass over ``episode_index`` (and ``task_index``): runs of equal episode and the task indices seen.

    Memory is O(runs + chunk): the columns are read one Arrow chunk at a time from the memory map. Uses
    numpy only (``pyarrow.compute`` imports pandas: seconds on a cold start).

    Returns:
        ``{episode_index: [(first_row, n_rows), ...]}`` (one run per episode when rows are grouped) and the
        set of distinct ``task_index`` values.

    Raises:
        DatasetError: more than ``max_runs`` runs (rows not grouped by episode).
    """
    runs: dict[int, list[tuple[int, int]]] = {}
    cur_ep, cur_start, pos, nruns = None, 0, 0, 0
    for chunk in table.column("episode_index").chunks:
        a = chunk.to_numpy(zero_copy_only=False)
        if a.size == 0:
            continue
        cuts = np.flatnonzero(a[1:] != a[:-1]) + 1
        starts = np.concatenate([[0], cuts])
        for s in starts.tolist():
            ep = int(a[s])
            if s == 0 and cur_ep == ep:
                continue  # the run continues across the chunk boundary
            if cur_ep is not None:
                runs.setdefault(cur_ep, []).append((cur_start, pos + s - cur_start))
                nruns += 1
                if nruns > max_runs:
                    raise DatasetError("data rows are not grouped by episode (thousands of episode_index runs)", where)
            cur_ep, cur_start = ep, pos + s
        pos += a.size
    if cur_ep is not None:
        runs.setdefault(cur_ep, []).append((cur_start, pos - cur_start))
    tasks: set[int] = set()
    if "task_index" in table.column_names:
        for chunk in table.column("task_index").chunks:
            if chunk.null_count:
                chunk = chunk.drop_null()
            tasks.update(np.unique(chunk.to_numpy(zero_copy_only=False)).astype(np.int64).tolist())
    return runs, tasks


# ---------------------------------------------------------------------- bounded mappings (Linux)
_PAGE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096
_MADV_DONTNEED = 4  # Linux <sys/mman.h>
_libc = None


def file_backed_rss() -> int | None:
    """This process's resident file-backed + shared memory in bytes (``/proc/self/statm`` field 3), or None."""
    try:
        with open("/proc/self/statm", "rb") as fh:
            return int(fh.read().split()[2]) * _PAGE
    except (OSError, ValueError, IndexError):
        return None


def release_file_mappings(files: set[str]) -> int:
    """``madvise(MADV_DONTNEED)`` every read-only mapping of ``files`` in /proc/self/maps (Linux only).

    Safe for read-only file mappings: later accesses re-read the pages from the page cache / the file
    (madvise(2)). Returns the bytes of address space advised.
    """
    global _libc
    if not files or not os.path.exists("/proc/self/maps"):
        return 0
    if _libc is None:
        import ctypes

        _libc = ctypes.CDLL(None, use_errno=True)
        _libc.madvise.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
        _libc.madvise.restype = ctypes.c_int
    released = 0
    with open("/proc/self/maps") as fh:
        for line in fh:
            parts = line.split(maxsplit=5)
            if len(parts) < 6 or "w" in parts[1]:
                continue
            if parts[5].strip() not in files:
                continue
            lo, hi = (int(x, 16) for x in parts[0].split("-"))
            if _libc.madvise(lo, hi - lo, _MADV_DONTNEED) == 0:
                released += hi - lo
    return released


class MappedBudget:
    """Bound on the growth of this process's file-backed RSS caused by reading memory-mapped cache files.

    Linux maps already-cached file pages around every page fault (64 KiB "fault-around", or a whole large
    folio of up to 2 MiB), so random reads of small rows map whole files within a few thousand samples and
    RSS grows to the data size in every DataLoader worker. :meth:`check` reads file-backed RSS
    (``/proc/self/statm``, a few microseconds); once it has grown by ``limit_mb`` since the last release,
    the mappings of the registered cache files are dropped with ``madvise(MADV_DONTNEED)``: the page
    cache keeps the data and the next read re-maps it with a minor fault. Only read-only mappings of the
    registered files are touched. One budget can serve many datasets (a mixture shares one per process).

    Args:
        limit_mb: MB of growth allowed; None = unbounded (``check`` does nothing).
    """

    def __init__(self, limit_mb: float | None):
        self.limit = None if limit_mb is None else int(limit_mb * 2**20)
        self.files: set[str] = set()
        self._base: tuple[int, int] | None = None  # (pid, file-backed RSS after the last release)

    def register(self, files: Sequence[str]) -> None:
        """Add cache files whose mappings :meth:`release` may drop."""
        self.files.update(os.path.realpath(f) for f in files)

    def check(self) -> None:
        """Release the mappings when file-backed RSS grew by the limit since the last release (per process)."""
        if self.limit is None:
            return
        now = file_backed_rss()
        if now is None:
            return
        pid = os.getpid()
        if self._base is None or self._base[0] != pid:
            self._base = (pid, now)
            return
        if now - self._base[1] >= self.limit:
            self.release()

    def release(self) -> int:
        """Drop this process's mappings of the registered files now; returns the bytes advised."""
        released = release_file_mappings(self.files)
        now = file_backed_rss()
        self._base = None if now is None else (os.getpid(), now)
        return released
