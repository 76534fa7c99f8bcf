"""Arrow arrays to numpy without importing pandas.

pyarrow converts an array to numpy (``Array.to_numpy``, ``numpy.asarray(array)``) through its pandas conversion
layer: the C++ ``PandasWriter`` calls ``InitPandasStaticData``, which imports pandas whenever it is installed
(pyarrow ``src/arrow/python/arrow_to_pandas.cc`` and ``helpers.cc``; apache/arrow#34994, "Creating first
pyarrow is slow"). lerobot's environment always has pandas, and that first import costs 0.2-0.3 s, more than
validating a small dataset. :func:`numpy_values` reads integer and floating point arrays without nulls straight
from their data buffer (zero-copy, read-only), which is all the checks need; every other array still goes through
``to_numpy(zero_copy_only=False)``. numpy and pyarrow are imported when it is called (``lrtool --help`` stays light).
"""

from __future__ import annotations

from typing import Any


def numpy_values(arr: Any) -> Any:
    """The values of an Arrow array or chunked array as a 1-D numpy array.

    Args:
        arr: ``pyarrow.Array`` or ``pyarrow.ChunkedArray`` (chunks are combined first, a copy when there are
            several).

    Returns:
        ``(len(arr),)`` array. For an integer or floating point type without nulls: a read-only view of the
        Arrow data buffer with the matching numpy dtype (``int8`` ... ``uint64``, ``float16/32/64``). Otherwise
        what ``arr.to_numpy(zero_copy_only=False)`` returns (nulls become NaN or None; this path may import
        pandas, see the module docstring).
    """
    import numpy as np
    import pyarrow as pa

    if isinstance(arr, pa.ChunkedArray):
        arr = arr.chunk(0) if arr.num_chunks == 1 else arr.combine_chunks()
    t = arr.type
    if arr.null_count == 0 and (pa.types.is_integer(t) or pa.types.is_floating(t)):
        dtype = np.dtype(t.to_pandas_dtype())  # a numpy scalar type for these; pandas is not imported
        if len(arr) == 0:
            return np.zeros(0, dtype=dtype)
        out = np.frombuffer(arr.buffers()[1], dtype=dtype, count=len(arr), offset=arr.offset * dtype.itemsize)
        out.flags.writeable = False  # Arrow data is immutable (the buffer protocol would allow writes)
        return out
    return arr.to_numpy(zero_copy_only=False)


def list_lengths(arr: Any) -> Any:
    """The row lengths of a list, large-list or fixed-size-list Arrow array without nulls, from its offsets
    (``pyarrow.compute.list_value_length`` would import pyarrow.compute, ~9 MB and ~50 ms, for this alone).

    Returns:
        ``(len(arr),)`` int64 numpy array, or None when ``arr`` has nulls or is not of a list type.
    """
    import numpy as np
    import pyarrow as pa

    t = arr.type
    if arr.null_count:
        return None
    if pa.types.is_fixed_size_list(t):
        return np.full(len(arr), t.list_size, dtype=np.int64)
    if not (pa.types.is_list(t) or pa.types.is_large_list(t)):
        return None
    return np.diff(numpy_values(arr.offsets)).astype(np.int64, copy=False)


def list_values(arr: Any) -> Any:
    """The child values the rows of a list, large-list or fixed-size-list Arrow array cover, in row order: what
    ``arr.flatten()`` returns for an array without nulls, without importing pyarrow.compute (``.values`` alone
    ignores the array's own offset into its child).

    Raises:
        TypeError: ``arr`` is not of a list type.
    """
    import pyarrow as pa

    t = arr.type
    if pa.types.is_fixed_size_list(t):
        n = t.list_size
        return arr.values.slice(arr.offset * n, len(arr) * n)
    if not (pa.types.is_list(t) or pa.types.is_large_list(t)):
        raise TypeError(f"not a list array: {t}")
    if len(arr) == 0:
        return arr.values.slice(0, 0)
    offsets = numpy_values(arr.offsets)
    return arr.values.slice(int(offsets[0]), int(offsets[-1] - offsets[0]))
