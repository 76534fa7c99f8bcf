"""Planning the new row groups of a data parquet file: episode runs read from the ``episode_index`` column,
split so each row group stays under the size limit."""

from __future__ import annotations

import math

from lerobot_tools._arrow_numpy import numpy_values
from lerobot_tools.errors import DatasetError
from lerobot_tools.reshard.model import MAX_ROWS_PER_GROUP, PLAN_MARGIN, PlannedGroup
from lerobot_tools.reshard.read import _guarded


def episode_runs(pf) -> list[tuple[int, int, int]]:
    """Maximal runs of equal ``episode_index`` values, in row order.

    Reads only the ``episode_index`` column, streamed (64 Ki rows at a time).

    Returns:
        ``[(episode_index, start_row, num_rows), ...]`` covering every row of the file.

    Raises:
        DatasetError: no ``episode_index`` column, null values, or a non-integer type.
    """
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    if "episode_index" not in pf.schema_arrow.names:
        raise DatasetError("no episode_index column: row groups cannot be aligned to episodes")
    runs: list[list[int]] = []
    pos = 0
    for batch in _guarded(pf.iter_batches(batch_size=65536, columns=["episode_index"], use_threads=False),
                          "the episode_index column"):
        col = batch.column(0)
        if pa.types.is_list(col.type) or pa.types.is_fixed_size_list(col.type) or pa.types.is_large_list(col.type):
            if col.null_count or pc.min(pc.list_value_length(col)).as_py() != 1 or pc.max(pc.list_value_length(col)).as_py() != 1:
                raise DatasetError("episode_index is a list column with other than one value per row")
            col = pc.list_flatten(col)
        if not pa.types.is_integer(col.type):
            raise DatasetError(f"episode_index has type {col.type}, not an integer")
        if col.null_count:
            raise DatasetError(f"episode_index has {col.null_count} null value(s) near row {pos}")
        a = numpy_values(col)
        if len(a) == 0:
            continue
        cuts = np.flatnonzero(a[1:] != a[:-1]) + 1
        starts = np.concatenate(([0], cuts))
        ends = np.concatenate((cuts, [len(a)]))
        for s, e in zip(starts.tolist(), ends.tolist()):
            v = int(a[s])
            if runs and runs[-1][0] == v and runs[-1][1] + runs[-1][2] == pos + s:
                runs[-1][2] += e - s
            else:
                runs.append([v, pos + s, e - s])
        pos += len(a)
    return [(r[0], r[1], r[2]) for r in runs]


def bytes_per_row(footer) -> list[tuple[int, float]]:
    """``[(first_row, uncompressed bytes per row), ...]`` of each source row group."""
    out = []
    row = 0
    for rg in footer.row_groups:
        if rg.num_rows:
            out.append((row, rg.uncompressed_bytes / rg.num_rows))
        row += rg.num_rows
    return out


def _estimate(bpr: list[tuple[int, float]], start: int, n: int) -> float:
    """Estimated uncompressed bytes of rows ``[start, start+n)`` from the source row groups' bytes/row."""
    total = 0.0
    end = start + n
    for i, (first, per_row) in enumerate(bpr):
        last = bpr[i + 1][0] if i + 1 < len(bpr) else math.inf
        lo, hi = max(first, start), min(last, end)
        if hi > lo:
            total += (hi - lo) * per_row
    return total


def plan_groups(runs: list[tuple[int, int, int]], bpr: list[tuple[int, float]], limit_bytes: int,
                scale: float = 1.0) -> list[PlannedGroup]:
    """The new row-group layout: one group per episode run, runs above the limit split evenly.

    Args:
        runs: from :func:`episode_runs`.
        bpr: from :func:`bytes_per_row` (source bytes per row, by row range).
        limit_bytes: the row-group size limit.
        scale: multiply the estimates by this (after a rewrite measured them too low).

    Returns:
        Consecutive :class:`PlannedGroup` covering every row in order; each is estimated at most
        ``PLAN_MARGIN * limit_bytes`` unless it is a single row.
    """
    target = max(1.0, PLAN_MARGIN * limit_bytes)
    out: list[PlannedGroup] = []
    for ep, start, n in runs:
        est = _estimate(bpr, start, n) * scale
        k = max(1, math.ceil(est / target), math.ceil(n / MAX_ROWS_PER_GROUP))
        k = min(k, n)
        base, extra = divmod(n, k)
        row = start
        for i in range(k):
            m = base + (1 if i < extra else 0)
            out.append(PlannedGroup(ep, row, m, int(round(_estimate(bpr, row, m) * scale))))
            row += m
    return out
