"""Family M (dataset side): what a mixture entry asks of its dataset.

The target-resolution findings themselves (M001, M002) are raised by the engine before a dataset opens.
Sources: OpenTau ``configs/default.py`` (``DatasetConfig``: ``data_features_name_mapping``, ``episodes``;
see docs/mixtures.md), docs/failure-modes.md#shared-repo-mapping.
"""

from __future__ import annotations

from lerobot_tools.checks.context import CheckContext
from lerobot_tools.dataset.mixture_schema import VIRTUAL_COLUMNS


def run(ctx: CheckContext) -> None:
    """Family M, dataset side: the mixture entry's feature mapping and episode lists against the dataset.

    Emits M003 and M004. Reads ``ctx.target`` (``feature_mapping``, ``episodes``, ``excluded_episodes``) and
    ``ctx.episodes_ok``; sets nothing.
    """
    ds, target = ctx.dataset, ctx.target
    if target.feature_mapping:
        feats = ds.features
        for role, column in target.feature_mapping.items():
            if column not in feats and column not in VIRTUAL_COLUMNS:
                ctx.emit("M003", f"data_features_name_mapping maps {role!r} to {column!r}, which is not a feature of "
                         "this dataset", None, feature=column)
    for attr in ("episodes", "excluded_episodes"):
        wanted = getattr(target, attr)
        if not wanted:
            continue
        if not ctx.episodes_ok:
            ctx.skip("M004", "the episode metadata could not be read")
            return
        have = set(ds.episode_indices)
        absent = [e for e in wanted if e not in have]
        if absent:
            shown = ", ".join(map(str, absent[:8])) + (f" and {len(absent) - 8} more" if len(absent) > 8 else "")
            ctx.emit("M004", f"{attr} requests {len(absent)} episode(s) the dataset does not have ({shown}; "
                     f"it has {len(have)})", None, key=attr)
