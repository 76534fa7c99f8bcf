"""Arrow helpers shared by the verifiers that compare a rewritten parquet file with its original (``reshard``,
``repair``).

pyarrow is imported inside the functions: importing this module costs nothing (``lrtool --help`` stays light).
"""

from __future__ import annotations

from typing import Any


def is_list_type(t: Any) -> bool:
    """True for Arrow ``list``, ``large_list``, ``fixed_size_list`` and (pyarrow >= 16) ``list_view`` types."""
    import pyarrow as pa

    return (pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t)
            or getattr(pa.types, "is_list_view", lambda _: False)(t))


def values_equal(a: Any, b: Any) -> bool:
    """Value equality of two Arrow arrays (or chunked arrays), with NaN equal to NaN whatever its payload.

    Arrow's own ``equals`` says NaN != NaN, so a column holding a NaN would never equal its faithful copy. Here the
    two are equal when they have the same type and length, nulls in the same places, the same list lengths at every
    nesting level, struct fields equal one by one, and the same leaf values (floats compared with
    ``numpy.array_equal(..., equal_nan=True)``; every other type exactly).

    Args:
        a, b: ``pyarrow.Array`` or ``pyarrow.ChunkedArray`` (chunk boundaries do not matter).

    Returns:
        True when every value is the same.
    """
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    from lerobot_tools._arrow_numpy import numpy_values

    if hasattr(a, "combine_chunks"):
        a = a.combine_chunks()
    if hasattr(b, "combine_chunks"):
        b = b.combine_chunks()
    if a.type != b.type or len(a) != len(b):
        return False
    if a.equals(b):
        return True
    if not pc.is_valid(a).equals(pc.is_valid(b)):
        return False
    while is_list_type(a.type):
        if not pc.list_value_length(a).equals(pc.list_value_length(b)):
            return False
        a, b = pc.list_flatten(a), pc.list_flatten(b)
        if not pc.is_valid(a).equals(pc.is_valid(b)):
            return False
    if pa.types.is_struct(a.type):  # field by field, so that a NaN inside a struct equals itself too
        return all(values_equal(x, y) for x, y in zip(a.flatten(), b.flatten()))
    if not pa.types.is_floating(a.type):
        return a.equals(b)
    valid = pc.is_valid(a)
    x = numpy_values(a.filter(valid))
    y = numpy_values(b.filter(valid))
    return bool(np.array_equal(x, y, equal_nan=True))
