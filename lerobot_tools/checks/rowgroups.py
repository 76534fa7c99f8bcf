"""Family R: row-group layout of the data parquet (repaired by ``lrtool reshard``).

Sources: docs/format.md#row-groups (lerobot 0.4.4 ``LeRobotDataset._save_episode_data`` writes one row group per
episode and no page index), docs/failure-modes.md#row-groups; datasets 5.2 ``split_dataset_by_node`` (shards must
divide the world size or every rank reads every shard; a streaming parquet dataset has one shard per file, one per
row group after ``IterableDataset.reshard()``).
"""

from __future__ import annotations

from lerobot_tools.checks.context import CheckContext

MB = 1024 * 1024


def row_group_defects(footer, row_group_mb: float) -> dict[str, int]:
    """Count the defects of one file's row groups: ``spans`` (several episodes), ``oversize``
    (uncompressed > 2 x ``row_group_mb``), ``no_page_index``.

    ``spans`` needs ``episode_index`` min/max statistics; row groups without them are not counted.
    """
    spans = oversize = no_index = 0
    for rg in footer.row_groups:
        mm = rg.minmax_of("episode_index")
        if mm is not None and mm[0] != mm[1]:
            spans += 1
        if rg.uncompressed_bytes > 2 * row_group_mb * MB:
            oversize += 1
        if not rg.page_index:
            no_index += 1
    return {"spans": spans, "oversize": oversize, "no_page_index": no_index}


def run(ctx: CheckContext) -> None:
    """Family R: row groups of every readable data file.

    Emits R001-R003 per file and R004 for the dataset. Reads ``ctx.footers`` and the options
    ``row_group_mb`` and ``world_size``; sets nothing.
    """
    if not ctx.footers:
        return
    limit = ctx.options.row_group_mb
    total_groups = 0
    no_stats = 0
    for rel, footer in ctx.footers.items():
        total_groups += len(footer.row_groups)
        d = row_group_defects(footer, limit)
        if "episode_index" in footer.schema.names and \
                any(rg.minmax_of("episode_index") is None for rg in footer.row_groups):
            no_stats += 1
        if d["spans"]:
            n = len(footer.row_groups)
            ctx.emit("R001", f"{d['spans']} of {n} row group(s) hold several episodes "
                     f"(file has {footer.num_rows} rows)", rel, group="row groups span several episodes")
        if d["oversize"]:
            biggest = max(rg.uncompressed_bytes for rg in footer.row_groups) / MB
            ctx.emit("R002", f"{d['oversize']} row group(s) above {2 * limit:g} MB uncompressed (largest {biggest:.0f} MB)",
                     rel, group=f"row groups above {2 * limit:g} MB uncompressed")
        if d["no_page_index"]:
            ctx.emit("R003", "no page index (column/offset index) in the footer", rel, group="data files have no page index")
    if no_stats:
        ctx.skip("R001 (partly)", f"{no_stats} data file(s) have no episode_index statistics in their footers")
    ws = ctx.options.world_size
    if ws:
        n_files = len(ctx.footers)
        # datasets 5.2: load_dataset("parquet", streaming=True) has one shard per file;
        # IterableDataset.reshard() makes one shard per row group
        if n_files % ws and total_groups % ws:
            ctx.emit("R004", f"{n_files} file(s) and {total_groups} row group(s) do not divide evenly across "
                     f"world size {ws}: split_dataset_by_node would make every rank read every shard")
        elif n_files % ws:
            ctx.emit("R004", f"{n_files} file(s) (the streaming shard unit) do not divide across world size {ws}; "
                     f"the {total_groups} row groups do, so call IterableDataset.reshard() before "
                     "split_dataset_by_node", severity="info")
    elif ctx.enabled("R004"):
        ctx.skip("R004", "--world-size not given")
