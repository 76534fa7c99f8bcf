"""Family G: meta/stats.json presence, keys and finiteness.

Sources: lerobot-format §9 (stats.json layout; v2.1 aggregates episodes_stats.jsonl; v3.0 uses stats.json),
pitfalls G1-G3.
"""

from __future__ import annotations

import math

from lerobot_tools.checks.context import CheckContext
from lerobot_tools.checks.files import report_unreadable
from lerobot_tools.dataset.placeholders import UnreadableFileError, check_metadata_file
from lerobot_tools.findings import ERROR
from lerobot_tools.dataset.model import STATS_PATH, V2_EPISODES_STATS_PATH
from lerobot_tools.errors import DatasetError


def _nonfinite(value, path: str = "") -> str | None:
    """Path of the first NaN/Inf leaf under ``value`` (``"mean[2]"``), or None."""
    if isinstance(value, float):
        return path if not math.isfinite(value) else None
    if isinstance(value, list):
        for i, v in enumerate(value):
            hit = _nonfinite(v, f"{path}[{i}]")
            if hit is not None:
                return hit
    if isinstance(value, dict):
        for k, v in value.items():
            hit = _nonfinite(v, f"{path}.{k}" if path else str(k))
            if hit is not None:
                return hit
    return None


def run(ctx: CheckContext) -> None:
    """Family G: meta/stats.json (v2.1: meta/episodes_stats.jsonl presence).

    Emits G001-G003. Reads ``ctx.dataset`` only; sets nothing.
    """
    ds = ctx.dataset
    if ds.layout == "v2" and ds.codebase_version != "v2.0":
        # v2.1 loaders read the per-episode statistics (lerobot <= 0.3 load_episodes_stats): sniff them too
        try:
            check_metadata_file(ds.root / V2_EPISODES_STATS_PATH, V2_EPISODES_STATS_PATH, "jsonl")
        except UnreadableFileError as exc:
            report_unreadable(ctx, exc, "G001", "episodes_stats", severity=ERROR,
                              why=" (the v2.1 loader reads it to build the statistics and raises)")
    try:
        stats = ds.read_stats()
    except DatasetError as exc:
        # a stats.json that exists but cannot be parsed stops the loader (lerobot 0.4.4 load_stats: json.load)
        report_unreadable(ctx, exc, "G001", "stats", severity=ERROR,
                          why=" (the file exists, so lerobot's load_stats parses it and raises)")
        return
    if stats is None:
        if ds.layout == "v2" and ds.codebase_version != "v2.0":
            if not (ds.root / V2_EPISODES_STATS_PATH).exists():
                ctx.emit("G001", f"neither {STATS_PATH} nor {V2_EPISODES_STATS_PATH} exists: no normalisation statistics",
                         V2_EPISODES_STATS_PATH)
        else:
            ctx.emit("G001", f"{STATS_PATH} is missing: no normalisation statistics", STATS_PATH)
        return
    feats = ds.features
    for key, value in stats.items():
        if key not in feats:
            ctx.emit("G002", f"stats for {key!r}, which is not a declared feature", STATS_PATH,
                     group="stats describe undeclared features", feature=key)
        hit = _nonfinite(value)
        if hit is not None:
            ctx.emit("G003", f"stats[{key!r}].{hit} is not finite", STATS_PATH, feature=key)
