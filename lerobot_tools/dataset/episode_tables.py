"""v3.0 episode metadata files read once: the statistics columns the episode-metadata read decoded anyway.

lerobot 0.4 writes a ``meta/episodes/chunk-XXX/file-YYY.parquet`` per recording session and per aggregated source,
often hundreds of files of a few episodes and ~100 columns each (lerobot 0.4.4 ``datasets/utils.py``, the
``stats/<feature>/<stat>`` columns written by ``aggregate.py``). Opening such a file and reading its columns
costs ~1.5-2 ms, most of it per file and per column rather than per value, so reading each file once for the
episode rows (:attr:`lerobot_tools.dataset.model.Dataset.episodes`) and once more for the statistics
(:class:`lerobot_tools.checks.stats.blocks.StatsBlocks`) nearly doubled the time of both. The episode read now
decodes a small file's statistics columns with its other columns and leaves them here; the statistics stream
takes each table once.

Memory: an Arrow table of a few rows costs far more than its values (each of ~100 list columns carries its own
arrays and buffers: ~100 KB a file), so the tables of consecutive files with one schema are gathered into one
contiguous table every :data:`GATHER_FILES` files, and a file's table is handed out as a slice of it.

A table is handed over only while the file on disk is the one that was read (same size, modification time and
inode), so a file rewritten in between (``lrtool repair``) is read again.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import Any, Iterator

from lerobot_tools._parallel import thread_map
from lerobot_tools.dataset.footers import row_group_rows
from lerobot_tools.errors import DatasetError, one_line

#: files larger than this are not kept (their statistics are streamed in blocks, memory bounded)
MAX_FILE_BYTES = 4 * 2**20
#: bytes of gathered statistics tables kept at once, all files together
MAX_TOTAL_BYTES = 64 * 2**20
#: threads reading episodes files ahead of the rows being built from them (hundreds of small files)
READ_THREADS = 2
#: an episodes file whose footer is larger than this is decoded with Arrow's thread pool (thousands of episodes)
SMALL_FOOTER_BYTES = 2**20
#: the tables of this many consecutive files with one schema (or of files of MAX_FILE_BYTES together) are gathered
#: into one
GATHER_FILES = 64


def _identity(path: str | os.PathLike) -> tuple[int, int, int, int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_size, st.st_mtime_ns, st.st_ino, st.st_dev


class EpisodeStatsTables:
    """Statistics columns of small v3.0 episodes files, read with the episode rows, handed over once.

    :meth:`keep` is called by one thread (:meth:`wants` may be called by others: the budget it reads is approximate);
    :meth:`take` may be called by several threads at once.
    """

    def __init__(self) -> None:
        # rel -> (identity, group, first row in the group's table, rows, rows of each row group of the file)
        self._where: dict[str, tuple[tuple, int, int, int, list[int]]] = {}
        self._groups: dict[int, Any] = {}  # gathered tables
        self._pending: list[tuple[str, tuple, Any, list[int]]] = []
        self._next = 0
        self._bytes = 0  # gathered tables' buffers
        self._pending_bytes = 0  # the pending files' sizes on disk
        self._lock = threading.Lock()

    def __getstate__(self) -> dict:
        return {}  # a pickled Dataset (a loader's worker process) starts with nothing kept: it re-reads what it needs

    def __setstate__(self, state: dict) -> None:
        self.__init__()

    def wants(self, path: str | os.PathLike) -> tuple | None:
        """The identity of ``path`` to pass to :meth:`keep` when its statistics columns should be read and kept
        (a file of at most :data:`MAX_FILE_BYTES` while the budget lasts), else None."""
        ident = _identity(path)
        if ident is None or ident[0] > MAX_FILE_BYTES or self._bytes + self._pending_bytes >= MAX_TOTAL_BYTES:
            return None
        return ident

    def keep(self, rel: str, ident: tuple, table: Any, group_rows: list[int]) -> None:
        """Keep ``table`` (``episode_index`` and the ``stats/...`` columns of ``rel``, read whole; its row groups
        hold ``group_rows`` rows) for one :meth:`take`; ``ident`` is what :meth:`wants` returned before the file
        was read."""
        if self._pending and not table.schema.equals(self._pending[0][2].schema):
            self.flush()
        self._pending.append((rel, ident, table, group_rows))
        self._pending_bytes += ident[0]
        if len(self._pending) >= GATHER_FILES or self._pending_bytes >= MAX_FILE_BYTES:
            self.flush()

    def flush(self) -> None:
        """Gather the tables kept since the last call into one contiguous table."""
        import pyarrow as pa

        if not self._pending:
            return
        pending, self._pending, self._pending_bytes = self._pending, [], 0
        whole = pa.concat_tables([t for _, _, t, _ in pending]).combine_chunks()
        size = whole.get_total_buffer_size()
        if self._bytes + size > MAX_TOTAL_BYTES:
            return
        gid, self._next = self._next, self._next + 1
        self._groups[gid] = [whole, len(pending)]
        self._bytes += size
        row = 0
        for rel, ident, t, group_rows in pending:
            self._where[rel] = (ident, gid, row, t.num_rows, group_rows)
            row += t.num_rows

    def take(self, rel: str, path: str | os.PathLike) -> tuple[Any, list[int]] | None:
        """``(table, rows of each row group)`` kept for ``rel`` (forgotten here), or None when none was kept or the
        file on disk is no longer the one that was read."""
        with self._lock:
            if self._pending:
                self.flush()
            got = self._where.pop(rel, None)
            if got is None:
                return None
            ident, gid, row, rows, group_rows = got
            group = self._groups[gid]
            table = group[0].slice(row, rows)
            group[1] -= 1
            if group[1] == 0:  # every file of the group handed out: the slices keep what is still needed
                del self._groups[gid]
                self._bytes -= group[0].get_total_buffer_size()
        return (table, group_rows) if _identity(path) == ident else None


def read_episode_files(root: Path, files: list[str], kept: EpisodeStatsTables) -> Iterator[tuple[str, Any, list[str]]]:
    """Read v3.0 episodes files, :data:`READ_THREADS` ahead of the caller (pyarrow parses and decodes without the
    GIL), in order.

    Args:
        root: the dataset root.
        files: relative paths of ``meta/episodes/*/*.parquet``, in the loader's order.
        kept: where the ``episode_index`` and ``stats/...`` columns of small files go (:meth:`EpisodeStatsTables.keep`,
            called in the caller's thread, in file order).

    Yields:
        ``(rel, table, names)``: ``names`` are the file's columns other than ``stats/...``, all of them in
        ``table`` (which may hold the statistics columns too).

    Raises:
        DatasetError: a file cannot be read as parquet (the message names it); nothing after it is read.
    """
    import pyarrow.parquet as pq

    def read(rel: str):  # in a pool thread
        path = root / rel
        try:
            pf = pq.ParquetFile(path)
            all_names = pf.schema_arrow.names
            names = [n for n in all_names if not n.startswith("stats/")]
            ident = kept.wants(path) if "episode_index" in all_names else None
            stats = [n for n in all_names if n.startswith("stats/")] if ident else []
            # one read of a small file serves the statistics too; Arrow's own thread pool costs more than it saves
            # on a few rows of ~100 columns (these reads already run in two threads), not on a large file
            md = pf.metadata
            table = pf.read(columns=names + stats, use_threads=md.serialized_size > SMALL_FOOTER_BYTES)
        except Exception as exc:  # pyarrow raises ArrowInvalid/OSError with long texts
            return DatasetError(f"cannot be read as parquet ({one_line(exc, 160)})", rel)
        groups = row_group_rows(md) if stats else []
        return table, names, stats, ident, groups

    reads = thread_map(read, files, threads=READ_THREADS)
    try:
        for rel in files:
            got = next(reads)
            if isinstance(got, DatasetError):
                raise got
            table, names, stats, ident, groups = got
            if stats:
                kept.keep(rel, ident, table.select(["episode_index", *stats]), groups)
            yield rel, table, names
    finally:
        reads.close()  # joins the pool's threads, also when the caller stops early
