"""Family M (dataset side): what a mixture entry asks of its dataset.

The target-resolution findings themselves (M001, M002) are raised by the engine before a dataset opens.
Sources: OpenTau ``configs/default.py`` (``DatasetConfig``: ``data_features_name_mapping``, ``episodes``;
see docs/mixtures.md), docs/failure-modes.md#shared-repo-mapping.
"""

from __future__ import annotations

from lerobot_tools.checks.context import CheckContext
from lerobot_tools.dataset.mixture_schema import VIRTUAL_COLUMNS
from lerobot_tools.dataset.placeholders import PLACEHOLDER_CHECKS, cause_of
from lerobot_tools.findings import INFO, episode_list_text

_CAUSES = {"lfs-pointer": "Git LFS pointers", "error-page": "error pages", "empty": "empty"}


def not_requested(ctx: CheckContext, file_kind: str, absent: list) -> None:
    """One info finding for the files of episodes the target does not read that are absent or placeholders.

    A target with an episode subset reads only the files holding its episodes
    (:func:`lerobot_tools.dataset.subset.files_read`); the others may be missing (a subset prefetch never fetched
    them) or placeholders (a clone that pulled only some LFS objects) and no loader of the target opens them. They
    are reported once, as info (F001 data, F002 videos), never as the error they are for the whole dataset.

    Args:
        file_kind: ``"data"`` or ``"video"``.
        absent: ``(file, sniff kind)`` pairs: a :class:`~lerobot_tools.dataset.model.DataFile` or
            :class:`~lerobot_tools.dataset.model.VideoFile` and ``"missing"`` or a placeholder kind.
    """
    if not absent:
        return
    episodes = sorted({e for f, _ in absent for e in f.episodes})
    missing = sum(1 for _, kind in absent if kind == "missing")
    kinds: dict[str, int] = {}
    for _, kind in absent:
        if kind != "missing":
            cause = _CAUSES.get(cause_of(kind), "placeholders")
            kinds[cause] = kinds.get(cause, 0) + 1
    state = "are absent" if not kinds else "are not on disk (" + ", ".join(
        ([f"{missing} absent"] if missing else []) + [f"{n} {c}" for c, n in kinds.items()]) + ")"
    label = "data" if file_kind == "data" else "video"
    check = "F001" if file_kind == "data" else "F002"
    ctx.emit(check, f"{len(absent)} {label} file(s) of episodes {episode_list_text(episodes)} {state}: not "
             f"requested, this target reads {ctx.subset.describe()} only",
             absent[0][0].relpath if len(absent) == 1 else None, severity=INFO, file_kind=file_kind)


def unrequested(ctx: CheckContext, file, kind: str) -> bool:
    """Whether ``file`` (its sniff ``kind``) is an absent or placeholder file the target does not read."""
    return (kind == "missing" or kind in PLACEHOLDER_CHECKS) and not ctx.subset.reads(file.episodes)


def run(ctx: CheckContext) -> None:
    """Family M, dataset side: the mixture entry's feature mapping and episode lists against the dataset.

    Emits M003, M004 and M005. Reads ``ctx.target`` (``feature_mapping``, ``episodes``, ``excluded_episodes``)
    and ``ctx.episodes_ok``; sets nothing.
    """
    ds, target = ctx.dataset, ctx.target
    if target.feature_mapping:
        feats = ds.features
        for role, column in target.feature_mapping.items():
            if column not in feats and column not in VIRTUAL_COLUMNS:
                ctx.emit("M003", f"data_features_name_mapping maps {role!r} to {column!r}, which is not a feature of "
                         "this dataset", None, feature=column)
    out_of_range = False
    for attr in ("episodes", "excluded_episodes"):
        wanted = getattr(target, attr)
        if not wanted:
            continue
        if not ctx.episodes_ok:
            ctx.skip("M004, M005", "the episode metadata could not be read")
            return
        have = set(ds.episode_indices)
        absent = [e for e in wanted if e not in have]
        if absent:
            out_of_range = out_of_range or attr == "episodes"
            shown = ", ".join(map(str, absent[:8])) + (f" and {len(absent) - 8} more" if len(absent) > 8 else "")
            ctx.emit("M004", f"{attr} requests {len(absent)} episode(s) the dataset does not have ({shown}; "
                     f"it has {len(have)})", None, key=attr)
    sub = ctx.subset
    if not sub.whole and ctx.episodes_ok and not out_of_range:  # an unknown requested episode raises first (M004)
        have_list = ds.episode_indices
        if not sub.select(have_list):
            why = ("excluded_episodes leaves out every requested episode" if sub.episodes
                   else f"excluded_episodes covers all {len(have_list)} episode(s) of the dataset"
                   if sub.episodes is None else "episodes is an empty list")
            ctx.emit("M005", f"the entry selects no episode ({why}): the mixture loader raises 'no episodes "
                     "selected'", None, key="excluded_episodes" if sub.excluded else "episodes")
