"""Stage 2 of the content checks: the episodes' summaries judged against the whole dataset (family Q).

Stage 1 (:mod:`.episode`) leaves a few numbers per episode and dimension; here the dataset's own distributions set
the scale of every decision (:class:`~lerobot_tools.checks.content.options.ContentOptions` documents each
threshold and its evidence). The *typical range* of a dimension is the median over the episodes of its range in
the episode; a dimension *moves* in an episode when its range there exceeds ``frozen_rel`` of that (or any range,
when the typical range is 0). Root cause first: a frozen episode (Q001) is not also reported as idle, stuck,
spiky, lagging or a duplicate; a column with NaN/Inf (Q005) is left out of the other checks.
"""

from __future__ import annotations

import math
import warnings

import numpy as np

from lerobot_tools.checks.content.episode import EpisodeSummary
from lerobot_tools.checks.content.facts import CurationFacts
from lerobot_tools.checks.content.options import ContentOptions
from lerobot_tools.checks.content.plan import ContentPlan
from lerobot_tools.checks.content.signature import SignatureTable, exact_groups, near_pairs
from lerobot_tools.checks.context import CheckContext

#: fewest episodes for a dataset-relative judgement (stuck share, the spike's dataset factor, the median lag)
MIN_EPISODES = 5
#: Q007: an episode's lag counts only when its best velocity correlation reaches this, and beats the correlation
#: at the dataset's median shift by this margin (real datasets: best 0.17-1.0, margin at most 0.064 between shifts
#: within 4 frames, docs/curation.md#evidence)
LAG_MIN_CORR = 0.3
LAG_MARGIN = 0.1
#: Q004: the largest step must also exceed this many times the median over the dataset's episodes of their largest
#: step of the dimension (a gripper or hand that always jumps is not spiking)
SPIKE_DATASET = 5.0
#: Q004 with fewer than MIN_EPISODES episodes: the episode's ratio must exceed this many times ``spike_k`` (a real
#: 3-episode dataset's fastest legitimate move is 10.9 times its episode's step scale, docs/curation.md#evidence)
SMALL_DATASET_SPIKE = 1.5


def judge(ctx: CheckContext, plan: ContentPlan, summaries: list[EpisodeSummary], opts: ContentOptions,
          facts: CurationFacts, unusable: set[str] = frozenset()) -> set[int]:
    """Emit Q001-Q007 and Q009 for ``summaries`` (one per episode, split episodes already removed), record the
    trimmable frames and the signatures in ``facts``; return the frozen episodes. Q008 is :func:`short_episodes`.
    Features in ``unusable`` (rows of the wrong length: D005/S004's finding, read as NaN here) are left out: their
    columns count neither as NaN (Q005) nor as moving."""
    if not summaries:
        return set()
    fps = ctx.dataset.fps or 0.0
    labels = plan.labels
    usable = np.array([f not in unusable for f in plan.features], dtype=bool)
    rng = np.stack([s.rng for s in summaries]).astype(np.float64)  # (E, D), NaN where a column holds NaN/Inf
    typ = _nan(np.nanmedian, np.where(np.isfinite(rng), rng, np.nan))
    typ = np.where(np.isfinite(typ), typ, 0.0)
    valid = np.isfinite(rng)
    with np.errstate(invalid="ignore"):
        moving = np.where(typ > 0, rng > opts.frozen_rel * typ, rng > 0) & valid
    frozen = ~moving.any(axis=1) & valid[:, usable].all(axis=1) & usable.any()
    many = len(summaries) >= MIN_EPISODES

    for k, s in enumerate(summaries):
        if (s.bad.astype(bool) & usable).any():
            _non_finite(ctx, plan, s, usable)
        if frozen[k]:
            what = ("every episode of the dataset" if frozen.all() else "the episode")
            ctx.emit("Q001", f"episode {s.episode}: action and state do not change over its {s.n} frame(s) "
                     f"({what} is frozen: a disconnected robot or a replayed constant)", None,
                     group="episodes are frozen: action and state never change", episode=s.episode)
    share = moving[~frozen].mean(axis=0) if (~frozen).any() else np.zeros(len(typ))
    idle_frames = max(1, math.ceil(opts.idle_s * fps)) if fps else None
    pinned_frames = max(2, math.ceil(opts.pinned_s * fps)) if fps else None
    max_step = np.stack([s.max_step for s in summaries]).astype(np.float64)
    med_step = _nan(np.nanmedian, np.where(np.isfinite(max_step), max_step, np.nan))
    vmin = np.stack([s.vmin for s in summaries]).astype(np.float64)
    vmax = np.stack([s.vmax for s in summaries]).astype(np.float64)
    spiky = np.zeros(len(summaries), dtype=bool)
    for k, s in enumerate(summaries):
        if not frozen[k]:
            spiky[k] = _spike(ctx, plan, s, k, valid, typ, med_step, many, opts)
    # the dataset's observed limits, without the episodes whose spikes or NaN would set them (Q006's reference)
    clean = (valid & ~spiky[:, None])
    ds_min = _nan(np.nanmin, np.where(clean, vmin, np.nan))
    ds_max = _nan(np.nanmax, np.where(clean, vmax, np.nan))
    for k, s in enumerate(summaries):
        if frozen[k]:
            continue
        if many:
            stuck = np.flatnonzero(valid[k] & (typ > 0) & ~moving[k] & (share >= opts.stuck_share))
            if len(stuck):
                names = ", ".join(repr(labels[d]) for d in stuck[:3]) + (" ..." if len(stuck) > 3 else "")
                ctx.emit("Q002", f"episode {s.episode}: {names} stay(s) still while the other dimensions move (they "
                         f"move in {share[stuck[0]]:.0%} of the episodes)", None,
                         group="dimensions are stuck in some episodes while others move", episode=s.episode,
                         feature=plan.features[int(stuck[0])])
        if idle_frames is not None:
            head = s.head if s.head >= idle_frames else 0
            tail = s.tail if s.tail >= idle_frames else 0
            if head or tail:
                facts.trims[s.episode] = (head, tail)
                parts = []
                if head:
                    parts.append(f"frames 0-{head - 1} at the start ({head / fps:.1f} s)")
                if tail:
                    parts.append(f"frames {s.n - tail}-{s.n - 1} at the end ({tail / fps:.1f} s)")
                ctx.emit("Q003", f"episode {s.episode}: nothing moves in " + " and ".join(parts) +
                         f"; {head + tail} of {s.n} frames are trimmable", None,
                         group="episodes start or end with still frames (trimmable)", episode=s.episode)
        if pinned_frames is not None and not spiky[k]:
            _pinned(ctx, plan, s, k, moving, ds_min, ds_max, pinned_frames, opts)
    _lag(ctx, summaries, frozen, opts)
    _duplicates(ctx, summaries, frozen, opts)
    facts.signatures = [(s.episode, s.signature) for k, s in enumerate(summaries) if not frozen[k]]
    facts.dims = len(labels)
    return {s.episode for k, s in enumerate(summaries) if frozen[k]}


def _nan(fn, a: np.ndarray) -> np.ndarray:
    """``fn(a, axis=0)`` for a NaN-aware numpy reduction, NaN (silently) for an all-NaN column."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return fn(a, axis=0)


def _non_finite(ctx: CheckContext, plan: ContentPlan, s: EpisodeSummary, usable: np.ndarray) -> None:
    per: dict[str, int] = {}
    for d in np.flatnonzero(s.bad.astype(bool) & usable):
        per[plan.features[d]] = per.get(plan.features[d], 0) + int(s.bad[d])
    text = ", ".join(f"{name!r} {n}" for name, n in per.items())
    ctx.emit("Q005", f"episode {s.episode}: NaN or infinite values ({text}; first at frame {s.first_bad}); "
             "normalised, they turn the loss into NaN", None, group="episodes hold NaN or infinite values",
             episode=s.episode, feature=next(iter(per)) if len(per) == 1 else None)


def _spike(ctx, plan, s: EpisodeSummary, k: int, valid, typ, med_step, many: bool, opts: ContentOptions) -> bool:
    """Q004 for one episode; True when it was raised."""
    step = s.max_step.astype(np.float64)
    scale = s.step_scale.astype(np.float64)
    with np.errstate(all="ignore"):
        ratio = np.where(scale > 0, step / scale, np.inf)
        # without the dataset's own largest steps to compare with, the episode's ratio must carry the evidence alone
        k_min = opts.spike_k if many else SMALL_DATASET_SPIKE * opts.spike_k
        hit = valid[k] & (typ > 0) & (ratio > k_min) & (step > opts.spike_range * typ)
        if many:
            hit &= step > SPIKE_DATASET * np.where(np.isfinite(med_step), med_step, 0.0)
    if not hit.any():
        return False
    d = int(np.flatnonzero(hit)[np.argmax((step / np.where(typ > 0, typ, 1.0))[hit])])
    more = f" (and {int(hit.sum()) - 1} more dimension(s))" if hit.sum() > 1 else ""
    at = int(s.max_step_at[d])
    ctx.emit("Q004", f"episode {s.episode}: {plan.labels[d]!r} jumps by {step[d]:.4g} at frame {at}, "
             f"{ratio[d]:.0f}x the episode's step scale and {step[d] / typ[d]:.2f}x the dimension's typical range"
             f"{more}", None, group="episodes hold spikes or jumps far beyond their step sizes", episode=s.episode,
             feature=plan.features[d])
    return True


def _pinned(ctx, plan, s: EpisodeSummary, k: int, moving, ds_min, ds_max, frames: int, opts: ContentOptions) -> None:
    best = None
    for d in np.flatnonzero(moving[k]):
        if plan.exempt[d]:
            continue
        for run, at, where in ((int(s.run_min[d]), s.vmin[d] == ds_min[d], "minimum"),
                               (int(s.run_max[d]), s.vmax[d] == ds_max[d], "maximum")):
            if at and run >= frames and run >= opts.pinned_share * s.n and (best is None or run > best[0]):
                best = (run, int(d), where)
    if best is None:
        return
    run, d, where = best
    value = s.vmin[d] if where == "minimum" else s.vmax[d]
    ctx.emit("Q006", f"episode {s.episode}: {plan.labels[d]!r} sits at the dataset's {where} ({value:.4g}) for {run} "
             f"consecutive frames ({run / s.n:.0%} of the episode) while other dimensions move: clipped or saturated?",
             None, group="dimensions sit at the dataset's limit for long runs", episode=s.episode,
             feature=plan.features[d])


def _lag(ctx: CheckContext, summaries: list[EpisodeSummary], frozen: np.ndarray, opts: ContentOptions) -> None:
    curves = [(s, np.asarray(s.lag, dtype=np.float64)) for k, s in enumerate(summaries)
              if s.lag is not None and not frozen[k] and np.isfinite(s.lag).all()]
    if len(curves) < MIN_EPISODES:
        if curves:
            ctx.skip("Q007", f"the action/state alignment of {len(curves)} episode(s) is too few to compare "
                     f"(at least {MIN_EPISODES})")
        return
    kmax = opts.lag_max_frames
    best = np.array([int(np.argmax(c)) - kmax for _, c in curves])
    corr = np.array([float(c.max()) for _, c in curves])
    trusted = corr >= LAG_MIN_CORR
    if trusted.sum() < MIN_EPISODES or np.median(corr) < LAG_MIN_CORR:
        ctx.skip("Q007", f"actions do not track the state (median best velocity correlation {np.median(corr):.2f} "
                 f"< {LAG_MIN_CORR}): delta or velocity actions, or too noisy to align")
        return
    med = int(np.round(np.median(best[trusted])))
    for (s, c), b, r in zip(curves, best, corr):
        if abs(b - med) <= opts.lag_frames or r < LAG_MIN_CORR or r - c[med + kmax] < LAG_MARGIN:
            continue
        ctx.emit("Q007", f"episode {s.episode}: the state follows the action by {b} frame(s) (velocity correlation "
                 f"{r:.2f}), the dataset's episodes by {med} ({c[med + kmax]:.2f} at that shift here): actions and "
                 "observations are paired at the wrong time", None,
                 group="episodes whose actions and states are out of step", episode=s.episode)


def _duplicates(ctx: CheckContext, summaries: list[EpisodeSummary], frozen: np.ndarray, opts: ContentOptions) -> None:
    live = [s for k, s in enumerate(summaries) if not frozen[k]]
    if len(live) < 2:
        return
    parent = list(range(len(live)))

    def find(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    copies: set[int] = set()
    for g in exact_groups([s.signature.key for s in live]):
        for i in g[1:]:
            copies.add(i)
            parent[find(i)] = find(g[0])
    by_dims: dict[int, list[int]] = {}
    for i, s in enumerate(live):
        if i not in copies:  # an exact copy joins its original's group; one of them is searched for near ones
            by_dims.setdefault(s.signature.dims, []).append(i)
    for idx in by_dims.values():
        if len(idx) < 2:
            continue
        table = SignatureTable.stack([(0, live[i].episode, live[i].signature) for i in idx])
        for a, b in near_pairs(table, opts.near_duplicate).tolist():
            parent[find(idx[b])] = find(idx[a])
    groups: dict[int, list[int]] = {}
    for i in range(len(live)):
        groups.setdefault(find(i), []).append(i)
    for members in groups.values():
        if len(members) < 2:
            continue
        members.sort(key=lambda i: live[i].episode)
        first = live[members[0]]
        for i in members[1:]:
            s = live[i]
            how = "an exact copy" if live[i].signature.key == first.signature.key else "a near duplicate"
            ctx.emit("Q009", f"episode {s.episode} is {how} of episode {first.episode} ({s.n} frames): it weighs "
                     "twice in training and leaks between train and evaluation splits", None,
                     group="episodes duplicate other episodes of the dataset", episode=s.episode)


def short_episodes(ctx: CheckContext, lengths: dict[int, int], chunk: int) -> None:
    """Q008: episodes with fewer frames than a ``chunk``-action chunk (from the metadata lengths)."""
    for e, n in lengths.items():
        if n is None or n >= chunk or n <= 0:
            continue
        padded = 1.0 - (n + 1) / (2.0 * chunk)
        ctx.emit("Q008", f"episode {e} has {n} frame(s), fewer than a {chunk}-action chunk: on average {padded:.0%} "
                 "of a sample's action targets are padding", None,
                 group=f"episodes are shorter than a {chunk}-action chunk", episode=e)
