"""Parsed parquet footers are freed when their reader is done, and their pages go back to the operating system.

Real parquet files written with pyarrow; resident memory read from ``/proc/self/status`` (Linux).
"""

from __future__ import annotations

import ctypes
import gc
import os
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from lerobot_tools import _memory
from lerobot_tools.checks import engine
from lerobot_tools.checks.engine import ValidateOptions
from lerobot_tools.dataset.footers import read_footer
from lerobot_tools.testing.synth import SynthSpec, build_dataset
from lerobot_tools.validate import validate



def _glibc_version() -> tuple[int, ...] | None:
    """This process's glibc version, asked of the C library itself (not through the module under test, so that
    a broken lookup there fails the tests below instead of skipping them)."""
    try:
        name, version = os.confstr("CS_GNU_LIBC_VERSION").split()
    except (AttributeError, ValueError, OSError):
        return None
    return tuple(int(x) for x in version.split(".")[:2]) if name == "glibc" else None


glibc = pytest.mark.skipif((_glibc_version() or (0,)) < (2, 33), reason="glibc >= 2.33 (mallinfo2) only")


class _MallInfo2(ctypes.Structure):
    # glibc's struct mallinfo2 (malloc.h, glibc >= 2.33): every field a size_t
    _fields_ = [(name, ctypes.c_size_t) for name in
                ("arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks", "fordblks",
                 "keepcost")]


def _heap_free_bytes() -> int:
    """Bytes of freed memory glibc's malloc holds in its heaps (``mallinfo2().fordblks``; pages already handed
    back to the kernel still count)."""
    libc = ctypes.CDLL("libc.so.6")
    libc.mallinfo2.restype = _MallInfo2
    return int(libc.mallinfo2().fordblks)


def _many_row_groups(path: Path, groups: int = 3000, columns: int = 12) -> Path:
    """A parquet file of ``groups`` one-row row groups and ``columns`` int64 columns (one with the name of an
    index column): its parsed footer is tens of MB."""
    table = pa.table({"episode_index": pa.array(range(groups), pa.int64()),
                      **{f"c{i}": pa.array(range(groups), pa.int64()) for i in range(columns - 1)}})
    pq.write_table(table, path, row_group_size=1)
    return path


def _cyclic_footers() -> int:
    """Parquet metadata objects only Python's cycle collector would free (collected here)."""
    gc.set_debug(gc.DEBUG_SAVEALL)
    try:
        gc.collect()
        found = sum(type(o).__module__ == "pyarrow._parquet" for o in gc.garbage)
    finally:
        gc.set_debug(0)
        gc.garbage.clear()
    return found


def _rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise AssertionError("no VmRSS")


def test_read_footer_leaves_no_reference_cycle_holding_the_parsed_footer(tmp_path):
    path = _many_row_groups(tmp_path / "f.parquet", groups=50)
    gc.collect()
    footer = read_footer(path, "f.parquet")
    assert _cyclic_footers() == 0  # freed by reference counting the moment read_footer returned
    # what it read is all there: the index column's min/max of every row group, found without ``md.schema``
    assert [rg.minmax["episode_index"] for rg in footer.row_groups] == [(i, i) for i in range(50)]
    # the cycle this guards against is pyarrow's own: FileMetaData.schema and its ParquetSchema refer to each
    # other (if pyarrow ever drops it, this line is the one to update)
    md = pq.read_metadata(path)
    md.schema
    del md
    assert _cyclic_footers() == 2


@glibc
def test_release_freed_hands_a_freed_footer_back_to_the_os(tmp_path):
    path = _many_row_groups(tmp_path / "big.parquet")
    _memory._libc().malloc_trim(0)  # start from a heap without free pages (not through the function under test)
    before = _rss_mb()
    md = pq.read_metadata(path)
    pin = [bytearray(1024) for _ in range(20_000)]  # allocated by malloc after the footer: it is not at the top
    grown = _rss_mb() - before
    assert grown > 20, f"the footer took only {grown:.1f} MB: the test file is too small to tell"
    del md
    assert _heap_free_bytes() > 20 << 20  # freed, but still in the heap
    resident = _rss_mb()
    assert _memory.release_freed() is True
    assert resident - _rss_mb() > grown / 2
    del pin


@glibc
def test_release_freed_hands_pyarrows_freed_pages_back(tmp_path):
    # pyarrow's pool (mimalloc by default) keeps the pages of freed buffers for reuse until asked to let go
    _memory.release_freed()
    held = []
    for _ in range(64):
        buf = pa.allocate_buffer(1 << 20, resizable=False)
        ctypes.memset(buf.address, 1, buf.size)  # touched: resident
        held.append(buf)
    grown = _rss_mb()
    del held, buf
    resident = _rss_mb()
    assert _memory.release_freed() is True
    assert resident - _rss_mb() > 32, (grown, resident, _rss_mb())


def test_validate_releases_freed_memory_after_every_family(tmp_path, monkeypatch):
    root = build_dataset(tmp_path / "ds", SynthSpec(video_codec=None, video_keys=(), episode_lengths=(20, 20)))
    calls = []
    ran = []
    original = engine._families

    def families():
        return [(letter, lambda ctx, fn=fn, letter=letter: (ran.append(letter), fn(ctx))) for letter, fn in original()]

    monkeypatch.setattr(engine, "_families", families)
    monkeypatch.setattr(engine, "release_freed", lambda: calls.append(len(ran)))
    (report,) = validate([str(root)], ValidateOptions(deep=True))
    assert not [f for f in report.findings if f.severity == "error"]
    # once after each family, the last included
    assert calls == list(range(1, len(ran) + 1))
    assert len(ran) == len(original())


def test_without_glibc_only_pyarrows_pool_is_released(monkeypatch):
    monkeypatch.setattr(_memory, "_LIBC", False)  # what the lookup leaves on macOS or musl
    assert _memory.release_freed() is False


def test_resident_bytes_follows_pages_touched_and_freed():
    before = _memory.resident_bytes()
    assert before is not None and abs(before / 2**20 - _rss_mb()) < 8
    block = bytearray(64 * 2**20)  # zero-filled: every page touched
    grown = _memory.resident_bytes()
    assert grown - before >= 60 * 2**20
    del block
    assert _memory.resident_bytes() < grown - 60 * 2**20  # a block this large is its own mapping: unmapped at once


def test_resident_bytes_is_none_where_proc_cannot_be_read(monkeypatch):
    import builtins

    real_open = builtins.open

    def no_proc(path, *a, **k):
        if str(path).startswith("/proc/"):
            raise FileNotFoundError(path)
        return real_open(path, *a, **k)

    monkeypatch.setattr(builtins, "open", no_proc)
    assert _memory.resident_bytes() is None


class _CountingPool:
    def __init__(self):
        self.releases = 0

    def release_unused(self):
        self.releases += 1


@pytest.mark.parametrize("resident,expected", [(10**12, 3), (0, 0), (None, 0)])
def test_the_statistics_scan_releases_pyarrows_pool_after_each_batch_only_above_the_ceiling(
        tmp_path, monkeypatch, resident, expected):
    from lerobot_tools.checks import deep
    from lerobot_tools.checks.stats import deep as stats_deep

    root = build_dataset(tmp_path / "ds", SynthSpec(episode_lengths=[600, 600, 600, 600], video_codec=None,
                                                    video_keys=(), episodes_per_file=4))
    monkeypatch.setattr(stats_deep, "BATCH_BYTES", 1)  # the smallest batch: 1,024 rows, so 3 batches of 2,400 rows
    pool = _CountingPool()
    monkeypatch.setattr(pa, "default_memory_pool", lambda: pool)
    for module in (engine, deep):  # between families and around the scan: not counted here
        monkeypatch.setattr(module, "release_freed", lambda: True)
    monkeypatch.setattr(deep, "resident_bytes", lambda: resident)
    monkeypatch.setattr(deep, "RELEASE_EVERY_S", 3600.0)  # where resident memory is unknown: time-gated only
    [report] = validate([str(root)], ValidateOptions(deep=True))
    assert [f.check for f in report.findings if f.severity == "error"] == []
    assert pool.releases == expected
    if resident is None:
        monkeypatch.setattr(deep, "RELEASE_EVERY_S", 0.0)
        validate([str(root)], ValidateOptions(deep=True))
        assert pool.releases == 3
