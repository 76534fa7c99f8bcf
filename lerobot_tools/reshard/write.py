"""Writing one data parquet file in the planned layout to a temporary file, verifying it and atomically
replacing the original (:func:`reshard_file`)."""

from __future__ import annotations

import contextlib
import os
import stat
import time
from pathlib import Path
from typing import Callable, Iterable

from lerobot_tools import _io
from lerobot_tools.errors import DatasetError, LrtoolError, one_line, os_error_text
from lerobot_tools.reshard.model import (
    BATCH_BYTES,
    MAX_ATTEMPTS,
    MB,
    FileResult,
    PlannedGroup,
    ReshardOptions,
    VerifyError,
    Oversize,
)
from lerobot_tools.reshard.plan import bytes_per_row, episode_runs, plan_groups
from lerobot_tools.reshard.read import (
    _guarded,
    _open,
    _prefetched,
    writer_options,
    file_conformance,
)
from lerobot_tools.reshard.verify import verify_rewrite


def _batch_rows(footer) -> int:
    per_row = max((rg.uncompressed_bytes / rg.num_rows for rg in footer.row_groups if rg.num_rows), default=1.0)
    return int(max(1, min(65536, BATCH_BYTES // max(per_row, 1.0))))


def _write_layout(src: Path, tmp: Path, groups: list[PlannedGroup], writer_kwargs: dict, batch_rows: int,
                  progress: Callable[[int], None] | None, bytes_total: int) -> None:
    """Stream ``src`` into ``tmp``, one ``write_table`` call (= one row group) per planned group."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    with _open(src) as pf, pq.ParquetWriter(tmp, pf.schema_arrow, **writer_kwargs) as writer, \
            contextlib.closing(_prefetched(_guarded(pf.iter_batches(batch_size=batch_rows, use_threads=True),
                                         "the data pages"))) as batches:
        schema = pf.schema_arrow
        num_rows = pf.metadata.num_rows
        gi = 0
        need = groups[0].num_rows if groups else 0
        pieces: list = []
        for batch in batches:
            off = 0
            while off < batch.num_rows:
                if gi >= len(groups):
                    raise DatasetError("file has more rows than its row groups declared while it was read")
                take = min(need, batch.num_rows - off)
                pieces.append(batch.slice(off, take))
                off += take
                need -= take
                if need == 0:
                    table = pa.Table.from_batches(pieces, schema=schema)
                    writer.write_table(table, row_group_size=max(1, table.num_rows))
                    if progress is not None and num_rows:
                        progress(int(bytes_total * table.num_rows / num_rows))
                    pieces = []
                    gi += 1
                    need = groups[gi].num_rows if gi < len(groups) else 0
        if gi != len(groups):
            raise DatasetError("file has fewer rows than its footer declares")


def _write_problem(path: Path) -> str | None:
    """A one-line reason ``path`` must not be replaced (read-only file or folder), else None.

    Permission *bits* are honoured even for root (who could override them): a file the user made
    read-only is not rewritten.
    """
    try:
        st = path.stat()
    except OSError as exc:
        return os_error_text(exc)
    if not st.st_mode & (stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH):
        return "file is read-only (no write permission)"
    parent = path.parent
    try:
        pst = parent.stat()
        vfs = os.statvfs(parent)
    except OSError as exc:
        return os_error_text(exc)
    if vfs.f_flag & os.ST_RDONLY:
        return "the file system is mounted read-only (Read-only file system); the file cannot be replaced"
    if not pst.st_mode & (stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH):
        return f"folder {parent.name}/ is read-only; the file cannot be replaced"
    if not os.access(parent, os.W_OK | os.X_OK):
        return f"no write permission on folder {parent.name}/; the file cannot be replaced"
    return None


def reshard_file(path: Path, relpath: str, options: ReshardOptions, *, dataset: str = "",
                 expected_episodes: Iterable[int] | None = None,
                 progress: Callable[[int], None] | None = None) -> FileResult:
    """Reshard one data parquet file in place (see the module docstring). Never raises for bad input.

    Args:
        path: the file.
        relpath: its path relative to the dataset root (used in messages).
        options: limit, compression, dry run.
        dataset: the TARGET it belongs to (copied into the result).
        expected_episodes: the episodes the metadata says the file holds; a difference is noted
            (never changed).
        progress: called with byte increments while the file is written (for a progress bar).

    Returns:
        A :class:`FileResult`; ``status == "skipped"`` with a one-line ``error`` naming what the file is when it
        is a placeholder (Git LFS pointer, error page, empty); ``status == "failed"`` with a one-line ``error`` when the file is
        missing, not parquet, corrupt, read-only, the disk is full, or verification fails; the
        original is then untouched.
    """
    from lerobot_tools.dataset.footers import read_footer
    from lerobot_tools.dataset.placeholders import describe
    from lerobot_tools.sniff import sniff

    t0 = time.perf_counter()
    res = FileResult(dataset=dataset, relpath=relpath)
    try:
        s = sniff(path)
        if s.kind == "missing":
            raise DatasetError("data file is missing")
        if s.is_placeholder:  # a Git LFS pointer, an error page, an empty file: nothing to reshard
            res.status = "skipped"
            res.error = f"data file {describe(s)}; skipped (restore its content, then rerun)"
            return res
        if s.kind != "ok":
            raise DatasetError(f"not a parquet file: {s.detail}")
        res.bytes_before = s.size
        footer = read_footer(path, relpath)
        res.rows = footer.num_rows
        res.row_groups_before = len(footer.row_groups)
        res.compression_before = footer.compression
        reasons = file_conformance(footer, options)
        res.reasons = reasons
        if not reasons:
            res.status = "conforms"
            res.row_groups_after = res.row_groups_before
            res.bytes_after = res.bytes_before
            res.compression_after = res.compression_before
            return res
        if reasons == ["no episode_index column"]:
            raise DatasetError("no episode_index column: row groups cannot be aligned to episodes")
        problem = _write_problem(path)  # also on a dry run: say now what the real run would hit
        if problem:
            raise DatasetError(problem)
        if path.is_symlink():
            res.notes.append("was a symlink (hub cache blob): replaced by a regular file, the blob is left untouched")
        bpr = bytes_per_row(footer)
        with _open(path) as pf:
            runs = episode_runs(pf)
            sample = next(_guarded(pf.iter_batches(batch_size=_batch_rows(footer), use_threads=True),
                                   "the data pages"), None)
            writer_kwargs = writer_options(pf, options, sample)
            del sample
        found = {r[0] for r in runs}
        res.episodes = len(found)
        _note_episodes(res, runs, found, expected_episodes)
        groups = plan_groups(runs, bpr, options.limit_bytes)
        res.layout = [[g.episode_index, g.num_rows] for g in groups]
        if options.dry_run:
            res.status = "planned"
            res.row_groups_after = len(groups)
            res.compression_after = (res.compression_before if options.compression == "keep"
                                     else options.compression.upper())
            return res
        batch_rows = _batch_rows(footer)
        scale = 1.0
        for attempt in range(1, MAX_ATTEMPTS + 1):
            try:
                def check(tmp: Path, groups=groups) -> None:
                    if options.verify:
                        verify_rewrite(path, tmp, groups, options, writer_kwargs, batch_rows)

                with _io.atomic_path(path, verify=check) as tmp:
                    _write_layout(path, tmp, groups, writer_kwargs, batch_rows,
                                  progress if attempt == 1 else None, res.bytes_before or 0)
                break
            except Oversize as over:
                if attempt == MAX_ATTEMPTS:
                    raise VerifyError(f"row groups still above {options.row_group_mb:g} MB after {attempt} "
                                      f"attempts (largest {over.worst / MB:.2f} MB)") from None
                scale *= over.ratio * 1.05
                groups = plan_groups(runs, bpr, options.limit_bytes, scale)
                res.notes.append(f"rewritten again: measured row groups were {over.ratio:.2f}x the estimate")
        res.layout = [[g.episode_index, g.num_rows] for g in groups]
        res.status = "resharded"
        res.row_groups_after = len(groups)
        res.bytes_after = path.stat().st_size
        after = read_footer(path, relpath)
        res.compression_after = after.compression
    except LrtoolError as exc:
        res.status = "failed"
        res.error = exc.message + ("; original left untouched" if res.reasons else "")
    except OSError as exc:  # creating, writing, fsyncing or renaming the temporary file
        res.status = "failed"
        res.error = f"cannot write the new file: {os_error_text(exc)}; original left untouched"
    except Exception as exc:  # pyarrow refusing to write what it read: a bug worth reporting
        res.status = "failed"
        res.error = f"cannot rewrite ({one_line(exc, typed=True)}); original left untouched"
    finally:
        res.seconds = round(time.perf_counter() - t0, 3)
    return res


def _note_episodes(res: FileResult, runs, found: set[int], expected: Iterable[int] | None) -> None:
    if len(runs) != len(found):
        from collections import Counter

        split = sorted(ep for ep, n in Counter(r[0] for r in runs).items() if n > 1)
        res.notes.append(f"episode(s) {_fmt(split)} appear in several separate row ranges "
                         "(each range gets its own row group; row order is kept)")
    if expected is None:
        return
    exp = set(int(e) for e in expected)
    extra, missing = sorted(found - exp), sorted(exp - found)
    if extra:
        res.notes.append(f"holds episode(s) not listed for it in the metadata: {_fmt(extra)}")
    if missing:
        res.notes.append(f"lacks episode(s) the metadata lists for it: {_fmt(missing)}")


def _fmt(eps: list[int], limit: int = 8) -> str:
    s = ", ".join(str(e) for e in eps[:limit])
    return s + (f" ... ({len(eps)} in all)" if len(eps) > limit else "")
