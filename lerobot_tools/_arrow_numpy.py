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
