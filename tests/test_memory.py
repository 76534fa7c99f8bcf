"""Parsed parquet footers are freed when their reader is done, and their pages go back to the operating system.

Real parquet files written with pyarrow; resident memory read from ``/proc/self/status`` (Linux).
"""

from __future__ import annotations

import gc
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from lerobot_tools.dataset.footers import read_footer



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
