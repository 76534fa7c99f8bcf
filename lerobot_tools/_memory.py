"""Give the heap memory a phase freed back to the operating system before the next phase allocates its own.

Parsing a parquet footer allocates a C++ object per row group and column chunk: the footer of a v3.0 data file
with 14,000 row groups takes ~100 MB in memory for 12 MB on disk, that of a 14,000-episode ``meta/episodes`` file
~110 MB. When such a footer is freed, glibc's malloc keeps the pages in the process's heap (it returns memory on
its own only from the top of the heap, and objects still alive sit above the freed ones), and the next footer
or array is rarely laid out so that it reuses them: the process's resident memory then counts every large footer
it ever read, not the largest. ``malloc_trim(0)`` hands every whole free page of every arena back to the kernel
(glibc ``malloc_trim(3)``: since glibc 2.8 it releases free pages anywhere in the heap, not only at the top);
Dask's workers call it for the same reason (Dask distributed documentation, "Worker Memory Management: Memory
not released back to the OS"). pyarrow's allocator (mimalloc by default) keeps freed pages for reuse in the same
way; :meth:`pyarrow.MemoryPool.release_unused` hands them back.

On a platform without glibc (macOS, musl) only pyarrow's pool is released.
"""

from __future__ import annotations

import ctypes
import sys

#: Trim only when at least this much freed memory sits in glibc's heap (bytes): below it a trim saves little.
MIN_FREE_BYTES = 16 << 20


class _MallInfo2(ctypes.Structure):
    # glibc's struct mallinfo2 (malloc.h, glibc >= 2.33): every field a size_t
    _fields_ = [(name, ctypes.c_size_t) for name in
                ("arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks", "fordblks",
                 "keepcost")]


_LIBC: object = None  # None: not looked up yet; False: no glibc here


def _libc():
    global _LIBC
    if _LIBC is None:
        _LIBC = False
        if sys.platform.startswith("linux"):
            try:
                libc = ctypes.CDLL("libc.so.6")
                libc.malloc_trim.argtypes = [ctypes.c_size_t]
                libc.malloc_trim.restype = ctypes.c_int
                if hasattr(libc, "mallinfo2"):  # glibc >= 2.33; without it every call trims
                    libc.mallinfo2.restype = _MallInfo2
                _LIBC = libc
            except (OSError, AttributeError):  # musl, or a libc without malloc_trim
                pass
    return _LIBC


def heap_free_bytes() -> int | None:
    """Bytes of freed memory glibc's malloc holds in its heaps (``mallinfo2().fordblks``), or None where that
    cannot be asked (no glibc, or glibc older than 2.33)."""
    libc = _libc()
    if not libc or not hasattr(libc, "mallinfo2"):
        return None
    return int(libc.mallinfo2().fordblks)


def release_freed(min_free_bytes: int = MIN_FREE_BYTES) -> bool:
    """Hand memory the process has freed back to the operating system: glibc's heap when it holds at least
    ``min_free_bytes`` of free memory (:func:`heap_free_bytes`; always where that cannot be asked), and pyarrow's
    default memory pool when pyarrow is already imported (it is not imported here).

    Costs ~30 µs when there is little to release, a few ms per 100 MB released.

    Returns:
        True when glibc's heap was trimmed.
    """
    pa = sys.modules.get("pyarrow")
    if pa is not None:
        pa.default_memory_pool().release_unused()
    libc = _libc()
    if not libc:
        return False
    free = heap_free_bytes()
    if free is not None and free < min_free_bytes:
        return False
    libc.malloc_trim(0)
    return True
