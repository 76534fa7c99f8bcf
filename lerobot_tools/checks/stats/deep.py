"""G010 (``--deep``): stored statistics against the data, computed in the deep pass's one streaming read.

The deep pass passes a :class:`StatsRequest` to :func:`lerobot_tools.checks.deep.scan_file`; while it streams
a data file's index columns, a :class:`FileStatsBuilder` also receives every numeric feature column and the
batch's runs of equal ``episode_index``, and accumulates per episode the float64 moments (count, mean, M2, min,
max; :func:`~lerobot_tools.checks.stats.compute.segment_arrays`) and, for the episodes the request samples,
how many values lie below / at-or-below each stored quantile (+- one histogram bin). The scan returns them as
plain data (:class:`FileStats`, JSON-serialisable like the rest of the scan, so a distributed run can record
and replay it). :class:`StatsComparison` then compares each file's episodes with their stored entries in
vectorised blocks (:func:`~lerobot_tools.checks.stats.compute.screen`; only disagreeing rows are examined one by
one) and merges them into per-feature totals, compared at the end with the statistics training normalises with
(``meta/stats.json``; the v2.1 aggregate).

Memory: one record batch plus, per data file, five float64 numbers per episode and dimension (the file's
episodes only). Camera statistics are not recomputed (that needs decoding frames); features of rank >= 2 are
skipped. An episode whose rows are not contiguous (D004) is not compared.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from lerobot_tools._arrow_numpy import list_lengths, list_values, numpy_values
from lerobot_tools.checks.context import CheckContext
from lerobot_tools.checks.stats import blocks as sb
from lerobot_tools.checks.stats import stored as st
from lerobot_tools.checks.stats.compute import (
    QUANTILE_BINS, Disagreement, Moments, compare, float_eps, merge_arrays, screen, segment_arrays,
)

#: decoded bytes per record batch the deep pass aims for when it reads numeric columns
BATCH_BYTES = 4 * 2**20
#: stored quantiles are verified on every k-th episode (metadata order), k chosen so that at most this many
#: values are compared (each against 10 thresholds); min/max/mean/std are always verified on every episode
QUANTILE_BUDGET_VALUES = 4 * 2**20
#: episodes whose stored statistics are looked up and compared at a time (bounds the stats blocks held)
LOOKUP_EPISODES = 1024


# ---------------------------------------------------------------------- the request and the result
@dataclass
class StatsRequest:
    """What :func:`~lerobot_tools.checks.deep.scan_file` accumulates for G010 (plain data).

    Attributes:
        columns: feature -> ``(dims, numpy dtype name)`` of the numeric columns to accumulate.
        quantiles: ``"episode/feature"`` -> ``(names, below, at_most)``: thresholds (lists of ``q`` lists of
            ``dims`` floats) of the stored quantiles to count against, for the sampled episodes.
    """

    columns: dict[str, tuple[int, str]]
    quantiles: dict[str, tuple[list[str], list, list]] = field(default_factory=dict)

    def to_dict(self) -> dict:
        return {"columns": {k: list(v) for k, v in self.columns.items()}, "quantiles": self.quantiles}


@dataclass
class FileStats:
    """Per-episode moments of one data file's numeric columns (plain data; see module docstring).

    Attributes:
        features: feature -> ``{"episodes": (E,), "n": (E,), "mean", "m2", "min", "max": (E, d)}`` numpy arrays.
        quantiles: ``"episode/feature"`` -> ``(lo, hi)`` counts, ``(q, d)`` int arrays.
        split: episodes whose rows are not contiguous in the file (not compared).
        unusable: features whose rows do not all hold the declared number of values.
    """

    features: dict[str, dict[str, np.ndarray]] = field(default_factory=dict)
    quantiles: dict[str, tuple[np.ndarray, np.ndarray]] = field(default_factory=dict)
    split: list[int] = field(default_factory=list)
    unusable: list[str] = field(default_factory=list)

    def to_dict(self) -> dict:
        """As JSON (floats written with repr precision: :meth:`from_dict` restores them exactly)."""
        return {"features": {f: {k: v.tolist() for k, v in a.items()} for f, a in self.features.items()},
                "quantiles": {k: [lo.tolist(), hi.tolist()] for k, (lo, hi) in self.quantiles.items()},
                "split": list(self.split), "unusable": list(self.unusable)}

    @classmethod
    def from_dict(cls, d: dict) -> "FileStats":
        """Inverse of :meth:`to_dict`.

        Raises:
            KeyError, TypeError, ValueError: ``d`` is not a serialised :class:`FileStats`.
        """
        feats = {}
        for f, a in d["features"].items():
            feats[f] = {k: np.asarray(v, dtype=np.int64 if k in ("episodes", "n") else np.float64) for k, v in a.items()}
        return cls(feats, {k: (np.asarray(lo, dtype=np.int64), np.asarray(hi, dtype=np.int64))
                           for k, (lo, hi) in d["quantiles"].items()}, [int(e) for e in d["split"]],
                   [str(x) for x in d["unusable"]])


class FileStatsBuilder:
    """Accumulates a :class:`FileStats` from the record batches of one data file."""

    def __init__(self, request: StatsRequest):
        self.columns = {n: (int(d), np.dtype(t)) for n, (d, t) in request.columns.items()}
        self.thresholds = {}
        for key, (names, below, at_most) in request.quantiles.items():
            feature = key.split("/", 1)[1]
            dt = self.columns.get(feature, (0, np.dtype(np.float64)))[1]
            self.thresholds[key] = (list(names), _round(np.asarray(below, dtype=np.float64), dt, down=True),
                                    _round(np.asarray(at_most, dtype=np.float64), dt, down=False))
        self.counts: dict[str, list[np.ndarray]] = {}
        self.parts: dict[str, list[tuple]] = {n: [] for n in self.columns}
        self.run_eps: list[np.ndarray] = []
        self.unusable: set[str] = set()

    @property
    def names(self) -> list[str]:
        return list(self.columns)

    def add(self, batch, run_eps: np.ndarray, starts: np.ndarray, lens: np.ndarray) -> None:
        """One record batch: ``run_eps[i]`` is the episode of rows ``starts[i] : starts[i] + lens[i]``."""
        self.run_eps.append(np.asarray(run_eps, dtype=np.int64))
        present = set(batch.schema.names)
        for name, (dims, _) in self.columns.items():
            if name in self.unusable or name not in present:
                self.parts[name].append(None)
                continue
            x = as_matrix(batch.column(name), dims)
            if x is None:
                self.unusable.add(name)
                self.parts[name].append(None)
                continue
            self.parts[name].append(segment_arrays(x, starts, lens))
            for e, a0, n in zip(run_eps.tolist(), starts.tolist(), lens.tolist()):
                t = self.thresholds.get(f"{e}/{name}")
                if t is None:
                    continue
                qnames, below, at_most = t
                seg = x[a0:a0 + n]
                lo = np.stack([np.count_nonzero(seg < below[k], axis=0) for k in range(len(qnames))])
                hi = np.stack([np.count_nonzero(seg <= at_most[k], axis=0) for k in range(len(qnames))])
                acc = self.counts.get(f"{e}/{name}")
                self.counts[f"{e}/{name}"] = [lo, hi] if acc is None else [acc[0] + lo, acc[1] + hi]

    def result(self) -> FileStats:
        """Runs merged per episode (runs of one episode are contiguous unless the file is out of order)."""
        out = FileStats(unusable=sorted(self.unusable))
        if not self.run_eps:
            return out
        eps = np.concatenate(self.run_eps)
        new_group = np.ones(len(eps), dtype=bool)
        new_group[1:] = eps[1:] != eps[:-1]
        gid = np.cumsum(new_group) - 1
        first = np.flatnonzero(new_group)
        group_eps = eps[first]
        uniq, counts = np.unique(group_eps, return_counts=True)
        split = set(uniq[counts > 1].tolist())
        out.split = sorted(split)
        keep = ~np.isin(group_eps, list(split)) if split else np.ones(len(group_eps), dtype=bool)
        for name, parts in self.parts.items():
            if name in self.unusable or any(p is None for p in parts):
                continue
            n = np.concatenate([p[0] for p in parts]).astype(np.float64)
            mean = np.concatenate([p[1] for p in parts])
            m2 = np.concatenate([p[2] for p in parts])
            mn = np.concatenate([p[3] for p in parts])
            mx = np.concatenate([p[4] for p in parts])
            gn = np.add.reduceat(n, first)
            gmean = np.add.reduceat(mean * n[:, None], first, axis=0) / gn[:, None]
            dev = mean - gmean[gid]
            gm2 = np.add.reduceat(m2 + n[:, None] * dev * dev, first, axis=0)
            out.features[name] = {
                "episodes": group_eps[keep], "n": gn[keep].astype(np.int64), "mean": gmean[keep], "m2": gm2[keep],
                "min": np.minimum.reduceat(mn, first, axis=0)[keep], "max": np.maximum.reduceat(mx, first, axis=0)[keep],
            }
        out.quantiles = {k: (v[0], v[1]) for k, v in self.counts.items() if int(k.split("/", 1)[0]) not in split}
        return out


def quantile_request(blocks: "sb.StatsBlocks | None", columns: dict[str, tuple[int, np.dtype]], episodes: list[int],
                     sampled: set[int], skip: set[tuple[int | None, str]]) -> dict[str, tuple[list[str], list, list]]:
    """The quantile thresholds of :class:`StatsRequest` for the ``sampled`` episodes among ``episodes``."""
    want = [e for e in episodes if e in sampled]
    if blocks is None or not want:
        return {}
    out = {}
    for e, (block, i) in blocks.lookup(want).items():
        for name, (dims, dt) in columns.items():
            cols = block.features.get(name)
            if not cols or (e, name) in skip or "min" not in cols or "max" not in cols:
                continue
            if not (cols["min"].ok[i] and cols["max"].ok[i]) or cols["min"].values[i].size != dims:
                continue
            qs = [q for q in st.QUANTILES if q in cols and cols[q].ok[i] and cols[q].row(i).size == dims]
            if not qs:
                continue
            lo_s = cols["min"].values[i].reshape(-1)
            hi_s = cols["max"].values[i].reshape(-1)
            scale = np.maximum(np.abs(lo_s), np.abs(hi_s))
            w = np.abs(hi_s - lo_s) / QUANTILE_BINS * 1.01 + float_eps(dt) * scale + 1e-12
            vals = np.stack([cols[q].row(i).reshape(-1) for q in qs])
            out[f"{e}/{name}"] = (qs, (vals - w).tolist(), (vals + w).tolist())
    return out


# ---------------------------------------------------------------------- comparison
@dataclass
class EpisodeResult:
    """Where one episode's stored statistics disagree with the data."""

    episode_index: int
    source: str | None
    disagreements: dict[str, list[Disagreement]]


class StatsComparison:
    """Compares each scanned file's per-episode moments with the stored statistics; keeps per-feature totals.

    Args:
        columns: feature -> ``(dims, storage dtype)`` (from the first readable data file).
        blocks: the stored per-episode statistics (None: the layout has none, e.g. v2.0).
        skip: ``(episode, feature)`` entries not to compare (they failed G003/G004).
        order: episode indices in metadata order (quantiles are verified on every k-th).
        lengths: episode -> metadata length (for the quantile budget).
    """

    def __init__(self, columns: dict[str, tuple[int, np.dtype]], blocks, skip: set[tuple[int | None, str]],
                 order: list[int], lengths: dict[int, int]):
        self.columns = columns
        self.blocks = blocks
        self.skip = skip
        values = sum(lengths.values()) * sum(d for d, _ in columns.values())
        self.quantile_every = max(1, -(-values // QUANTILE_BUDGET_VALUES))
        self.sampled = set(order[::self.quantile_every])
        if blocks is not None:
            blocks.keep_quantiles_of(self.sampled)  # the other episodes' quantiles are never read again
        self.episodes_total = len(order)
        self.results: list[EpisodeResult] = []
        self.totals: dict[str, Moments] = {}
        self.split: set[int] = set()
        self.unusable: set[str] = set()
        self.seen: set[int] = set()
        self.quantile_episodes: set[int] = set()

    @classmethod
    def for_dataset(cls, ds, schema, facts, by_ep: dict) -> "StatsComparison":
        order = [e.episode_index for e in ds.episodes]
        lengths = {e: m.length for e, m in by_ep.items() if m.length is not None}
        return cls(numeric_columns(ds, schema), facts.reader, facts.untrusted, order, lengths)

    def request(self, episodes: list[int]) -> StatsRequest:
        """The request for a data file holding ``episodes``."""
        return StatsRequest({n: (d, t.name) for n, (d, t) in self.columns.items()},
                            quantile_request(self.blocks, self.columns, episodes, self.sampled, self.skip))

    def add_file(self, fs: FileStats) -> None:
        """Compare one file's episodes (see class docstring) and merge them into the totals."""
        self.split.update(fs.split)
        self.unusable.update(fs.unusable)
        for name, a in fs.features.items():
            eps = a["episodes"]
            if not len(eps):
                continue
            dup = np.isin(eps, list(self.seen)) if self.seen else np.zeros(len(eps), dtype=bool)
            self.split.update(eps[dup].tolist())
        all_eps = sorted({int(e) for a in fs.features.values() for e in a["episodes"].tolist()})
        self.seen.update(all_eps)
        for name, a in fs.features.items():
            if name in self.columns and len(a["episodes"]):
                tot = merge_arrays(a["n"], a["mean"], a["m2"], a["min"], a["max"])
                if name in self.totals:
                    self.totals[name].merge(tot)
                else:
                    self.totals[name] = tot
        if self.blocks is None:
            return
        bad: dict[int, dict[str, list[Disagreement]]] = {}
        sources: dict[int, str | None] = {}
        for lo in range(0, len(all_eps), LOOKUP_EPISODES):  # a few stats blocks alive at a time, not the file's all
            part = all_eps[lo:lo + LOOKUP_EPISODES]
            found = self.blocks.lookup(part)
            for name, a in fs.features.items():
                if name not in self.columns:
                    continue
                rows = np.flatnonzero((a["episodes"] >= part[0]) & (a["episodes"] <= part[-1]))
                if len(rows):
                    self._compare(name, {k: v[rows] for k, v in a.items()}, fs, found, bad, sources)
        for e, per in bad.items():
            self.results.append(EpisodeResult(e, sources.get(e), per))

    def _compare(self, name: str, a: dict, fs: FileStats, found: dict, bad: dict, sources: dict) -> None:
        """Compare the episodes ``a`` (one feature's arrays, as :attr:`FileStats.features`) whose stored entries
        are in ``found``; add each disagreeing one to ``bad`` and its source file to ``sources``."""
        storage = self.columns[name][1]
        eps, cnt, mean, m2, mn, mx = a["episodes"], a["n"], a["mean"], a["m2"], a["min"], a["max"]
        dims = mean.shape[1]
        sel, stored = self._stored_rows(name, eps, found, dims)
        if not len(sel):
            return
        ok = screen(stored, cnt[sel], mean[sel], m2[sel], mn[sel], mx[sel], storage)
        need = set(sel[~ok].tolist())
        chosen = set(sel.tolist())
        row_of = None
        for key, q in fs.quantiles.items():
            e_txt, _, feature = key.partition("/")
            if feature != name:
                continue
            if row_of is None:
                row_of = {int(e): j for j, e in enumerate(eps.tolist())}
            j = row_of.get(int(e_txt))
            if j is None or j not in chosen:
                continue
            self.quantile_episodes.add(int(eps[j]))
            block, r = found[int(eps[j])]
            qs = [x for x in st.QUANTILES if x in block.features[name] and block.features[name][x].ok[r]]
            p = np.array([st.QUANTILES[x] for x in qs])[:, None]
            n = int(cnt[j])
            if len(qs) == len(q[0]) and (np.any(q[0] > np.ceil(p * n)) or np.any(q[1] < np.floor(p * n))):
                need.add(j)
        for j in sorted(need):
            e = int(eps[j])
            block, r = found[e]
            cols = block.features[name]
            entry = {s: c.row(r) for s, c in cols.items() if c.ok[r]}
            m = Moments(int(cnt[j]), mean[j], m2[j], mn[j], mx[j])
            q = fs.quantiles.get(f"{e}/{name}")
            ranks = None
            if q is not None:
                qs = [x for x in st.QUANTILES if x in entry and entry[x].size == dims]
                if len(qs) == len(q[0]):
                    ranks = {x: (q[0][k], q[1][k], m.n) for k, x in enumerate(qs)}
            d = compare(entry, m, storage, quantile_ranks=ranks)
            if d:
                bad.setdefault(e, {})[name] = d
                sources[e] = block.source_at(r)

    def _stored_rows(self, name: str, eps: np.ndarray, found: dict, dims: int) -> tuple[np.ndarray, dict]:
        """The rows of ``eps`` to compare for feature ``name`` (stored statistics found, not skipped, not split) and
        their stored min/max/mean/std, ``(rows, dims)`` float64 with NaN where a value is not stored or has another
        size; gathered one stats block at a time."""
        by_block: dict[int, tuple] = {}
        sel = []
        for j, e in enumerate(eps.tolist()):
            loc = found.get(e)
            if loc is None or (e, name) in self.skip or e in self.split:
                continue
            block, r = loc
            if not block.features.get(name):
                continue
            sel.append(j)
            by_block.setdefault(id(block), (block, [], []))
            by_block[id(block)][1].append(len(sel) - 1)
            by_block[id(block)][2].append(r)
        stored = {s: np.full((len(sel), dims), np.nan) for s in ("min", "max", "mean", "std")}
        for block, at, rows in by_block.values():
            cols = block.features[name]
            at, rows = np.asarray(at), np.asarray(rows)
            for s, out in stored.items():
                c = cols.get(s)
                if c is None:
                    continue
                vals = c.values[rows].reshape(len(rows), -1)
                if vals.shape[1] != dims:
                    continue
                ok = c.ok[rows]
                out[at[ok]] = vals[ok]
        return np.asarray(sel, dtype=np.int64), stored


def _round(v: np.ndarray, dtype: np.dtype, *, down: bool) -> np.ndarray:
    """``v`` (float64) in ``dtype`` (float kinds; integers compare in float64), rounded towards -inf (``down``) or
    +inf so that a comparison in the narrower dtype never tightens the threshold."""
    if dtype.kind != "f" or dtype.itemsize >= 8:
        return v
    r = v.astype(dtype)
    if down:
        return np.where(r.astype(np.float64) > v, np.nextafter(r, dtype.type(-np.inf)), r)
    return np.where(r.astype(np.float64) < v, np.nextafter(r, dtype.type(np.inf)), r)


def as_matrix(col, dims: int) -> np.ndarray | None:
    """A record-batch column as an ``(n, dims)`` numpy array (float32 kept, others as stored), or None when its
    rows do not all hold ``dims`` values (D005 / S004 report that)."""
    import pyarrow as pa

    t = col.type
    n = len(col)
    if pa.types.is_fixed_size_list(t) or pa.types.is_list(t) or pa.types.is_large_list(t):
        if col.null_count:
            return None
        lengths = list_lengths(col)
        if lengths is None or (len(lengths) and (lengths.min() != dims or lengths.max() != dims)):
            return None
        values = list_values(col)
        if values.null_count or len(values) != n * dims or not (pa.types.is_integer(values.type) or
                                                                 pa.types.is_floating(values.type) or
                                                                 pa.types.is_boolean(values.type)):
            return None
        arr = numpy_values(values)
    elif pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_boolean(t):
        if col.null_count or dims != 1:
            return None
        arr = numpy_values(col)
    else:
        return None
    if arr.dtype == np.bool_:
        arr = arr.astype(np.uint8)
    return arr.reshape(n, dims)


def numeric_columns(ds, schema) -> dict[str, tuple[int, np.dtype]]:
    """Declared numeric features of rank 1 (``[d]``) with a column in ``schema``: name -> (d, storage dtype)."""
    import pyarrow as pa

    out: dict[str, tuple[int, np.dtype]] = {}
    for name, feat in ds.features.items():
        if st.feature_kind(feat) != "numeric" or name not in schema.names:
            continue
        shape = feat.get("shape")
        if not (isinstance(shape, list) and len(shape) == 1 and isinstance(shape[0], int) and shape[0] >= 1):
            continue
        t = schema.field(name).type
        while pa.types.is_fixed_size_list(t) or pa.types.is_list(t) or pa.types.is_large_list(t):
            t = t.value_type
        try:
            dt = np.dtype(t.to_pandas_dtype())
        except (NotImplementedError, TypeError):
            continue
        if dt.kind not in "biuf":
            continue
        out[name] = (int(shape[0]), dt)
    return out


def batch_rows_for(schema, columns: dict[str, tuple[int, np.dtype]], default: int) -> int:
    """Record-batch rows keeping the decoded numeric ``columns`` of a file near :data:`BATCH_BYTES` (at most
    ``default``)."""
    width = sum(d * np.dtype(t).itemsize for n, (d, t) in columns.items() if n in schema.names)
    if width <= 0:
        return default
    return int(max(1024, min(default, BATCH_BYTES // width)))


# ---------------------------------------------------------------------- reporting
def report(ctx: CheckContext, scan: StatsComparison, *, complete: bool) -> None:
    """Emit G010 for the per-episode disagreements of ``scan`` and, when ``complete`` (every data file read), for
    the statistics training uses; withdraw the G005 findings the deep comparison explains."""
    facts = ctx.stats_facts
    feats = ctx.dataset.features
    by_key: dict[tuple[str, str], list[tuple[EpisodeResult, Disagreement]]] = {}
    for res in scan.results:
        if res.episode_index in scan.split:
            continue
        for name, items in res.disagreements.items():
            for d in items:
                by_key.setdefault((name, d.stat), []).append((res, d))
            earlier = facts.inconsistent.get((res.episode_index, name)) if facts is not None else None
            if earlier is not None:
                finding, stats = earlier
                if any(d.stat in stats for d in items):
                    ctx.findings[:] = [f for f in ctx.findings if f is not finding]
    for (name, stat), items in by_key.items():
        first_res, first = items[0]
        eps = sorted({r.episode_index for r, _ in items})
        key = (f"per-episode {name!r} {stat} disagrees with the data in {len(eps)} episode(s) "
               f"(first: episode {first_res.episode_index}, {first.text(name)})")
        for res, d in items:
            ctx.emit("G010", f"episode {res.episode_index}: {name!r} {d.text(name)}", res.source, group=key,
                     feature=name, episode=res.episode_index, key=stat)
    if scan.split:
        ctx.skip("G010 for episodes whose rows are not contiguous",
                 f"{len(scan.split)} episode(s) appear in more than one run of rows (D004)")
    if scan.quantile_every > 1 and scan.quantile_episodes:
        ctx.skip("G010 for stored quantiles of every episode",
                 f"quantiles verified on every {scan.quantile_every}th episode ({len(scan.quantile_episodes)} of "
                 f"{scan.episodes_total}) to bound the cost; min/max/mean/std on all")
    if scan.unusable:
        ctx.skip("G010 for " + ", ".join(sorted(scan.unusable)),
                 "rows do not all hold the declared number of values (D005/S004)")
    if facts is None or not facts.global_stats:
        return
    if not complete:
        ctx.skip("G010 for the global statistics", "not every data file could be read")
        return
    for name, m in scan.totals.items():
        g = facts.global_stats.get(name)
        if g is None or name in facts.stale or (None, name) in facts.untrusted or name not in feats:
            continue
        if name in scan.unusable:  # the totals hold only the files where its rows were usable: not the whole data
            continue
        if name in facts.miscounted and not facts.global_source.startswith("meta/"):
            continue  # the v2.1 aggregate is skewed by a wrong per-episode count: G007 states the cause
        bad = compare(g, m, scan.columns[name][1])
        if not bad:
            continue
        gross = [d for d in bad if d.gross]
        first = (gross or bad)[0]
        more = f" (and {len(bad) - 1} more)" if len(bad) > 1 else ""
        # the metadata pass's G005/G006 on the same statistic is this defect seen without the data: one finding,
        # with the severity both agree on (error for a normalised feature whose value is impossible or 2x off)
        earlier = facts.inconsistent.get((None, name))
        impossible = False
        if earlier is not None and any(d.stat in earlier[1] for d in bad):
            impossible = earlier[0].severity == "error"
            ctx.findings[:] = [f for f in ctx.findings if f is not earlier[0]]
        normalised = st.normalised(name, feats[name])
        sev = "error" if normalised and (gross or impossible) else "warning"
        if sev == "error":
            why = f"; {_impact(first)}"
        elif not normalised:
            why = f" (a warning: lerobot policies do not normalise {name!r})"
        else:
            why = ""
        ctx.emit("G010", f"{facts.global_source}: {name!r} {first.text(name)}{more} over all "
                 f"{m.n} frame(s){why}", facts.global_source if facts.global_source.startswith("meta/") else None,
                 severity=sev, feature=name, key=first.stat)


def _impact(d: Disagreement) -> str:
    """What a gross disagreement does to normalised values (lerobot 0.4.4 normalize_processor)."""
    if d.stat == "std":
        if d.stored <= 0:
            return "MEAN_STD divides that dimension by 1e-8"
        f = d.actual / d.stored
        return f"MEAN_STD scales that dimension by {f:.3g} instead of 1"
    if d.stat == "mean":
        return "MEAN_STD shifts that dimension by more than one standard deviation"
    return "MIN_MAX maps that dimension's data outside [-1, 1]"


def camera_note(ctx: CheckContext) -> None:
    """Say that camera statistics are not recomputed (when the dataset has cameras)."""
    if ctx.dataset.video_keys or ctx.dataset.image_keys:
        ctx.skip("G010 for image/video features", "camera statistics are not recomputed (that needs decoding frames); "
                 "their shapes and ranges are checked (G004, G005)")
