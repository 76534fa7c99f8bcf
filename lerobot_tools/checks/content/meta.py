"""The content checks the stored per-episode statistics allow, for episodes whose data is not downloaded yet.

On a copy made by ``lrtool prefetch --meta-only`` (:mod:`lerobot_tools.dataset.downloads`) the data and videos
are absent; the per-episode statistics lerobot stores (v2.1 ``meta/episodes_stats.jsonl``, v3.0 the ``stats/*``
columns of ``meta/episodes``; lerobot 0.4.4 ``compute_stats.py``) still show:

* **Q001** a frozen episode: ``max == min`` on every action and state dimension;
* **Q004** a spike (v3.0, which stores quantiles): a few extreme frames, i.e. ``max - q99`` (or ``q01 - min``)
  above :data:`BRIEF` times ``q99 - q01`` and above :data:`SPIKE_RANGES` typical ranges of the dimension (the
  median over the episodes of ``max - min``); grippers and hands (by name) are exempt, as in Q006. On the stored
  statistics of 7 real v3.0 datasets this flags 2 episodes of one bimanual dataset, the episodes its data shows
  jumping; a persistent jump (an encoder wrap) moves the quantiles too and is left to the data tier;
* **Q008** an episode shorter than the chunk (its ``length``);
* **Q011/Q012** a black or washed-out camera: the episode's image ``mean`` (per channel, in [0, 1]) below 0.05
  with a ``std`` below 0.01, or above 0.92 with a ``std`` below 0.04 (lerobot samples 100-10,000 frames per
  episode for them);
* **Q014** two cameras with equal image statistics (every channel's mean and std within 1e-6) in an episode.

Frozen cameras, idle ends, lag, NaN inside the data, duplicates and stuck joints need the data: they are listed as
not checked until the episodes are downloaded.
"""

from __future__ import annotations

import numpy as np

from lerobot_tools.checks.content.decide import short_episodes
from lerobot_tools.checks.content.plan import role_of
from lerobot_tools.checks.context import CheckContext

SPIKE_RANGES = 1.0
BRIEF = 2.0
BLACK_MEAN, BLACK_STD = 0.05, 0.01
BRIGHT_MEAN, BRIGHT_STD = 0.92, 0.04
SAME = 1e-6


def judge_stats(ctx: CheckContext, episodes: set[int]) -> None:
    """Q001, Q004, Q008, Q011, Q012, Q014 from the stored statistics of ``episodes`` (see module docstring)."""
    ds = ctx.dataset
    opts = ctx.options.content
    short_episodes(ctx, {e.episode_index: e.length for e in ds.episodes
                         if e.episode_index in episodes and e.length is not None}, opts.chunk_size)
    feats = ds.features
    numeric = [n for n, f in feats.items() if role_of(n) is not None and f.get("dtype") not in
               ("video", "image", "string", "language") and isinstance(f.get("shape"), list) and len(f["shape"]) == 1]
    cams = [k for k in ds.video_keys + ds.image_keys]
    stats = ("min", "max", "q01", "q99")
    rows: dict[str, dict[str, list]] = {n: {k: [] for k in ("e",) + stats} for n in numeric}
    cam_rows: dict[int, dict[str, tuple[np.ndarray, np.ndarray]]] = {}
    wanted = {n: stats for n in numeric} | {k: ("mean", "std") for k in cams}
    for block in _blocks(ds, wanted):
        for i, e in enumerate(block.episodes.tolist()):
            for n in numeric:
                cols = block.features.get(n, {})
                if all(k in cols and cols[k].ok[i] for k in ("min", "max")):
                    rows[n]["e"].append(int(e))
                    for k in stats:
                        ok = k in cols and cols[k].ok[i]
                        rows[n][k].append(np.asarray(cols[k].row(i), dtype=np.float64).reshape(-1) if ok else None)
            if int(e) not in episodes:
                continue
            for k in cams:
                cols = block.features.get(k, {})
                if "mean" in cols and "std" in cols and cols["mean"].ok[i] and cols["std"].ok[i]:
                    cam_rows.setdefault(int(e), {})[k] = (np.asarray(cols["mean"].row(i)).reshape(-1),
                                                        np.asarray(cols["std"].row(i)).reshape(-1))
    _numeric(ctx, rows, episodes, {n: _exempt(feats[n]) for n in numeric})
    _cameras(ctx, cams, cam_rows)


def _blocks(ds, wanted: dict[str, tuple[str, ...]]):
    """The per-episode statistics as :class:`~lerobot_tools.checks.stats.blocks.StatsBlock` s: v3.0 reads only the
    ``stats/<feature>/<stat>`` columns of ``wanted`` from each ``meta/episodes`` file (a few of its ~100 columns);
    v2.1 streams ``episodes_stats.jsonl`` (:class:`~lerobot_tools.checks.stats.blocks.StatsBlocks`)."""
    from lerobot_tools.checks.stats.blocks import StatsBlock, StatsBlocks, arrow_column

    if ds.layout != "v3":
        blocks = StatsBlocks(ds)
        try:
            yield from blocks
        finally:
            blocks.close()
        return
    import pyarrow.parquet as pq

    from lerobot_tools._arrow_numpy import numpy_values

    feats = ds.features
    for rel in ds.episode_files:
        try:
            pf = pq.ParquetFile(ds.path(rel))
            names = set(pf.schema_arrow.names)
            cols = [f"stats/{f}/{s}" for f, stats in wanted.items() for s in stats if f"stats/{f}/{s}" in names]
            if "episode_index" not in names or not cols:
                continue
            table = pf.read(columns=["episode_index", *cols])
        except Exception:  # an unreadable episodes file is C007's finding
            continue
        features: dict = {}
        for c in cols:
            f, _, stat = c[len("stats/"):].rpartition("/")
            features.setdefault(f, {})[stat] = arrow_column(table.column(c), stat, feats.get(f))
        yield StatsBlock(rel, 0, numpy_values(table.column("episode_index")).astype(np.int64), features)


def _exempt(feat: dict) -> np.ndarray:
    from lerobot_tools.checks.content.plan import element_names

    dims = feat["shape"][0] if isinstance(feat["shape"][0], int) else 0
    return np.array([("gripper" in x.lower() or "hand" in x.lower()) for x in element_names(feat, dims)], dtype=bool)


def _numeric(ctx: CheckContext, rows: dict[str, dict[str, list]], episodes: set[int],
             exempt: dict[str, np.ndarray]) -> None:
    per_ep: dict[int, list[bool]] = {}
    spikes: dict[int, tuple[str, int, float]] = {}
    quantiles = False
    for name, r in rows.items():
        if not r["e"]:
            continue
        try:
            mn, mx = np.stack(r["min"]), np.stack(r["max"])
        except ValueError:  # shapes differ between episodes (G004 reports it)
            continue
        if not (np.isfinite(mn).all() and np.isfinite(mx).all()):
            continue  # G003 reports non-finite statistics
        rng = mx - mn
        typ = np.median(rng, axis=0)
        ex = exempt.get(name)
        ex = ex if ex is not None and ex.shape == typ.shape else np.zeros(typ.shape, dtype=bool)
        for k, e in enumerate(r["e"]):
            if e not in episodes:
                continue
            per_ep.setdefault(e, []).append(bool((rng[k] <= 0).all()))
            q1, q9 = r["q01"][k], r["q99"][k]
            if q1 is None or q9 is None or q1.shape != typ.shape or q9.shape != typ.shape:
                continue
            quantiles = True
            with np.errstate(invalid="ignore", divide="ignore"):
                out = np.maximum(mx[k] - q9, q1 - mn[k])
                brief = out / np.where(q9 - q1 > 0, q9 - q1, np.inf)
                far = out / np.where(typ > 0, typ, np.inf)
            hit = (brief > BRIEF) & (far > SPIKE_RANGES) & ~ex
            if hit.any():
                d = int(np.flatnonzero(hit)[np.argmax(far[hit])])
                if e not in spikes or far[d] > spikes[e][2]:
                    spikes[e] = (name, d, float(far[d]))
    if rows and not quantiles and any(r["e"] for r in rows.values()):
        ctx.skip("Q004 from the stored statistics", "they hold no quantiles (v2.1): spikes are found once the data is "
                 "downloaded")
    for e in sorted(per_ep):
        if all(per_ep[e]):
            ctx.emit("Q001", f"episode {e}: its stored statistics show no change in any action or state dimension "
                     "(max == min): frozen", None, group="episodes are frozen (per-episode statistics)", episode=e)
        elif e in spikes:
            name, d, x = spikes[e]
            ctx.emit("Q004", f"episode {e}: a few frames of {name!r}[{d}] lie {x:.1f} typical ranges beyond the "
                     "episode's 1st-99th percentiles (per-episode statistics): a spike", None,
                     group="episodes hold spikes (per-episode statistics)", episode=e, feature=name)


def _cameras(ctx: CheckContext, cams: list[str], cam_rows: dict) -> None:
    same: dict[tuple[str, str], list[int]] = {}
    for e in sorted(cam_rows):
        got = cam_rows[e]
        for k, (mean, std) in got.items():
            if mean.mean() < BLACK_MEAN and std.mean() < BLACK_STD:
                ctx.emit("Q011", f"episode {e}: {k!r} is black or covered (stored image mean {mean.mean():.3f}, std "
                         f"{std.mean():.3f})", None, group=f"{k!r} is black or covered (per-episode statistics)",
                         episode=e, video_key=k)
            elif mean.mean() > BRIGHT_MEAN and std.mean() < BRIGHT_STD:
                ctx.emit("Q012", f"episode {e}: {k!r} is washed out (stored image mean {mean.mean():.3f}, std "
                         f"{std.mean():.3f})", None, group=f"{k!r} is overexposed (per-episode statistics)",
                         episode=e, video_key=k)
        keys = sorted(got)
        for i, a in enumerate(keys):
            for b in keys[i + 1:]:
                (ma, sa), (mb, sb) = got[a], got[b]
                if ma.shape == mb.shape and np.abs(ma - mb).max() <= SAME and np.abs(sa - sb).max() <= SAME \
                        and sa.mean() >= BLACK_STD:
                    same.setdefault((a, b), []).append(e)
    for (a, b), eps in same.items():
        both = [e for e in cam_rows if a in cam_rows[e] and b in cam_rows[e]]
        if len(eps) == len(both) and len(eps) >= 2:
            ctx.emit("Q014", f"{a!r} and {b!r} have equal image statistics in all {len(eps)} episodes: one camera "
                     "recorded twice, or a key mapped to the wrong device", None, video_key=b)
            continue
        for e in eps:
            ctx.emit("Q014", f"episode {e}: {a!r} and {b!r} have equal image statistics", None,
                     group=f"{a!r} and {b!r} have equal image statistics in some episodes", episode=e, video_key=b)
