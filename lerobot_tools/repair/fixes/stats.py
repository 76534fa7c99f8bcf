"""Fix family G (statistics): recompute from the data what ``lrtool validate --deep`` found wrong.

:func:`fix_stats` (checks G003-G008, G010) reads every data file once, one episode at a time, and recomputes the
statistics of every numeric feature of rank 1 the way lerobot 0.4.4 does (``lerobot/datasets/compute_stats.py``:
``get_feature_stats`` over the frames axis, population std, ``count = [n]``, quantiles from a 5000-bin histogram;
:func:`lerobot_tools.checks.stats.compute.episode_stats`), in float64. A stored per-episode entry is replaced
only when it is unreadable, misshapen, non-finite, miscounted, or disagrees with the data beyond the tolerance of
G010 (:func:`lerobot_tools.checks.stats.compute.compare`); every other entry is kept byte for byte. A global
``meta/stats.json`` entry is replaced by lerobot's ``aggregate_feature_stats`` of the (repaired) per-episode
entries when any of them changed or it disagrees with their aggregate (G008); v2.0 (no per-episode statistics)
aggregates the recomputed episodes directly. Camera statistics are never recomputed (that needs decoding frames);
a camera entry is only re-aggregated into ``stats.json``.

Writes: ``meta/stats.json`` and v2.1 ``meta/episodes_stats.jsonl`` as :class:`~lerobot_tools.repair.model.TextChange`
(only the changed entries / lines differ), v3.0 ``meta/episodes/*/*.parquet`` as a :class:`StatsCellsRewrite`
(the changed ``stats/<feature>/<stat>`` cells; schema, metadata, row groups and every other cell kept and
verified). Data files are never written.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from lerobot_tools._arrow_numpy import numpy_values
from lerobot_tools.checks.stats import stored as st
from lerobot_tools.checks.stats.compute import (
    QUANTILE_BINS, Moments, RunningAggregate, compare, episode_stats, float_eps,
)
from lerobot_tools.checks.stats.deep import as_matrix, numeric_columns
from lerobot_tools.checks.stats.meta import stale_stats
from lerobot_tools.dataset.footers import row_group_rows
from lerobot_tools.dataset.model import STATS_PATH, V2_EPISODES_STATS_PATH
from lerobot_tools.repair.model import TextChange, dump_like

#: the checks this fix answers
STATS_CHECKS = ("G003", "G004", "G005", "G006", "G007", "G008", "G010")
#: the longest episode held in memory while its statistics are recomputed (bytes of decoded numeric columns)
MAX_EPISODE_BYTES = 512 * 2**20


# ---------------------------------------------------------------------- the v3.0 change
@dataclass
class StatsCellsRewrite:
    """New values for some ``stats/<feature>/<stat>`` cells of one v3.0 ``meta/episodes`` parquet file.

    Attributes:
        relpath: the file.
        cells: row in the file -> column -> new value (nested lists, as Arrow stores them).
        episodes: row -> episode index (for the diff).
        old: row -> column -> old value (for the diff).
        checks: the check IDs this fixes.
    """

    relpath: str
    cells: dict[int, dict[str, Any]] = field(default_factory=dict)
    episodes: dict[int, int] = field(default_factory=dict)
    old: dict[int, dict[str, Any]] = field(default_factory=dict)
    checks: list[str] = field(default_factory=list)

    def write(self, root: Path) -> None:
        """Rewrite the file atomically: same schema (and key-value metadata), codec and row groups; the planned
        cells replaced. Verified before it replaces the original: every other cell equal, the new cells as planned.

        Raises:
            ValueError, OSError: the rewrite did not verify or could not be written (original untouched).
        """
        import pyarrow as pa
        import pyarrow.parquet as pq

        from lerobot_tools._io import atomic_path
        from lerobot_tools.repair.parquet import writer_options

        path = Path(root) / self.relpath
        pf = pq.ParquetFile(path)
        schema = pf.schema_arrow
        opts = writer_options(pf)
        sizes = row_group_rows(pf.metadata)

        def new_table(i: int, row0: int):
            t = pf.read_row_group(i)
            rows = {r - row0: c for r, c in self.cells.items() if row0 <= r < row0 + t.num_rows}
            if not rows:
                return t
            cols = {c for cs in rows.values() for c in cs}
            for c in cols:
                idx = schema.get_field_index(c)
                vals = t.column(c).to_pylist()
                for r, cs in rows.items():
                    if c in cs:
                        vals[r] = cs[c]
                t = t.set_column(idx, schema.field(idx), pa.array(vals, type=schema.field(idx).type))
            return t

        def verify(tmp: Path) -> None:
            new = pq.ParquetFile(tmp)
            if not new.schema_arrow.equals(schema, check_metadata=True):
                raise ValueError(f"{self.relpath}: the rewritten schema differs")
            if row_group_rows(new.metadata) != sizes:
                raise ValueError(f"{self.relpath}: the row groups changed")
            row0 = 0
            for i in range(pf.num_row_groups):
                a, b = pf.read_row_group(i), new.read_row_group(i)
                for c in schema.names:
                    x, y = a.column(c).to_pylist(), b.column(c).to_pylist()
                    for r in range(len(x)):
                        want = self.cells.get(row0 + r, {}).get(c, x[r]) if c in self._columns else x[r]
                        if not _same(y[r], want):
                            raise ValueError(f"{self.relpath}: row {row0 + r} column {c} does not read back as planned")
                row0 += a.num_rows

        with atomic_path(path, verify=verify) as tmp:
            with pq.ParquetWriter(str(tmp), schema, **opts) as w:
                row0 = 0
                for i in range(pf.num_row_groups):
                    t = new_table(i, row0)
                    w.write_table(t, row_group_size=max(t.num_rows, 1))
                    row0 += t.num_rows
        pf.close()

    @property
    def _columns(self) -> set[str]:
        return {c for cs in self.cells.values() for c in cs}

    def summary(self) -> dict[str, Any]:
        """The change as plain data (``lrtool repair --format json``)."""
        return {"path": self.relpath, "checks": self.checks, "cells": [
            {"episode": self.episodes.get(r), "row": r, "column": c, "before": self.old.get(r, {}).get(c), "after": v}
            for r in sorted(self.cells) for c, v in self.cells[r].items()]}


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    if isinstance(a, float) and isinstance(b, float) and a != a and b != b:
        return True
    return a == b


# ---------------------------------------------------------------------- planning
@dataclass
class _Feature:
    name: str
    dims: int
    storage: np.dtype
    shape: tuple[int, ...]
    integer: bool


def _plain(entry: st.FeatureStats, integer: bool) -> dict[str, Any]:
    """An entry as lerobot serialises it (``serialize_dict``: ``ndarray.tolist()``; integer min/max stay ints)."""
    out: dict[str, Any] = {}
    for k, v in entry.items():
        if k == "count":
            out[k] = [int(x) for x in np.asarray(v).reshape(-1)]
        elif integer and k in ("min", "max"):
            out[k] = np.asarray(v).astype(np.int64).tolist()
        else:
            out[k] = np.asarray(v, dtype=np.float64).tolist()
    return out


def _keep_close(new: Any, old: Any) -> Any:
    """``new`` with every number that equals ``old``'s to float noise (1e-9 relative) replaced by ``old``'s, so a
    recomputed entry differs from the stored one only where it is really different (a small diff)."""
    if isinstance(new, list) and isinstance(old, list) and len(new) == len(old):
        return [_keep_close(a, b) for a, b in zip(new, old)]
    if isinstance(new, (int, float)) and isinstance(old, (int, float)) and not isinstance(old, bool) \
            and type(new) is type(old) and abs(new - old) <= 1e-9 * max(abs(new), abs(old)) + 1e-12:
        return old
    return new


def _sound(raw: Any, feat: dict, length: int | None) -> st.FeatureStats | None:
    """The parsed entry when it is readable, complete, well shaped, finite and (numeric) counts ``length``."""
    stats, bad = st.parse_feature_stats(raw)
    if bad or any(s not in stats for s in st.BASE_STATS):
        return None
    shapes = st.accepted_shapes(feat)
    for s, v in stats.items():
        if s == "count":
            if v.shape != (1,):
                return None
        elif (s in st.BASE_STATS or s in st.QUANTILES) and (shapes and v.shape not in shapes or not np.all(np.isfinite(v))):
            return None
    if length is not None and st.feature_kind(feat) == "numeric" and int(stats["count"][0]) != length:
        return None
    return stats


def _ranks(x: np.ndarray, entry: st.FeatureStats, storage) -> dict[str, tuple]:
    """For :func:`compare`: per stored quantile, values below / at-or-below it +- one histogram bin."""
    out = {}
    if "min" not in entry or "max" not in entry:
        return out
    lo_s, hi_s = entry["min"].reshape(-1), entry["max"].reshape(-1)
    if lo_s.size != x.shape[1]:
        return out
    scale = np.maximum(np.abs(lo_s), np.abs(hi_s))
    w = np.abs(hi_s - lo_s) / QUANTILE_BINS * 1.01 + float_eps(storage) * scale + 1e-12
    xf = x.astype(np.float64)
    for q in st.QUANTILES:
        v = entry.get(q)
        if v is None or v.size != x.shape[1]:
            continue
        v = v.reshape(-1)
        out[q] = (np.count_nonzero(xf < v - w, axis=0), np.count_nonzero(xf <= v + w, axis=0), len(x))
    return out


def fix_stats(rc) -> None:
    """G003-G008, G010: recompute the wrong statistics (see module docstring). Plans changes on ``rc``."""
    job = _prepare(rc)
    if job is None or not _recompute(job):
        return
    _aggregate(job)
    summaries: dict[str, list[str]] = {}
    files: dict[str, list[str]] = {}
    _plan_episode_changes(job, summaries, files)
    _plan_global_change(job, summaries, files)
    if not summaries:
        job.cannot("the stored statistics agree with the data within tolerance; nothing to recompute",
                   "see the finding: camera statistics and declarations are not recomputed")
        return
    _report(job, summaries, files)


@dataclass
class _StatsJob:
    """What the phases of :func:`fix_stats` share: the repair context, the stored statistics' layout and what
    the recomputation found."""

    rc: Any
    wanted: list[str]
    episodes: list
    lengths: dict[int, int]
    features: dict[str, _Feature]              # the numeric features lrtool recomputes
    reader: Any                                # st.EpisodeStatsReader over the per-episode statistics
    quantile_sets: dict[str, list[str]]        # which quantiles each feature stores
    gstats: dict | None                        # stats.json, parsed (None: absent)
    replaced: dict[int, dict[str, dict[str, Any]]] = field(default_factory=dict)  # episode -> feature -> entry
    totals: dict[str, RunningAggregate] = field(default_factory=dict)  # the data's own moments per feature
    nonfinite: dict[str, set[int]] = field(default_factory=dict)       # feature -> dimensions holding NaN/inf
    aggregates: dict[str, RunningAggregate | None] = field(default_factory=dict)

    def cannot(self, reason: str, todo: str) -> None:
        for c in self.wanted:
            self.rc.cannot(c, reason, todo, None)


def _prepare(rc) -> _StatsJob | None:
    """Check the preconditions of a recomputation and read the stored statistics' layout; None (every wanted
    check told why) when the statistics cannot be recomputed."""
    ds = rc.ds
    feats = rc.feats
    wanted = [c for c in STATS_CHECKS if rc.wants(c)]

    def cannot(reason: str, todo: str) -> None:
        for c in wanted:
            rc.cannot(c, reason, todo, None)

    if ds.layout is None or not rc.data_files:
        cannot("the episode metadata or the data files cannot be read", "fix the episode metadata first")
        return None
    if rc.bad_data_files:
        cannot("some data files are missing or unreadable, so their statistics cannot be recomputed",
               "restore the data files (F001-F007), then rerun")
        return None
    if rc.has("C005", "D004", "D005", "F007", "S001", "S004", "C004"):
        cannot("the episode rows disagree with the metadata, so per-episode statistics would be wrong",
               "fix C005/D004/D005/S004 first, then rerun")
        return None
    try:
        episodes = ds.episodes
    except Exception:
        cannot("the episode metadata cannot be read", "fix C007 first")
        return None
    lengths = {e.episode_index: e.length for e in episodes if e.length is not None}
    first = next(iter(rc.footers.values()))
    cols = numeric_columns(ds, first.schema)
    features = {n: _Feature(n, d, t, (d,), t.kind in "iub") for n, (d, t) in cols.items()
                if st.feature_kind(feats.get(n, {})) == "numeric"}
    reader = st.EpisodeStatsReader(ds)
    quantile_sets: dict[str, list[str]] = {}
    for row in reader:  # index the rows (offsets / row groups) and learn which quantiles each feature stores
        for name, raw in row.stats.items():
            if name in features and isinstance(raw, dict):
                qs = [q for q in st.QUANTILES if q in raw]
                if len(qs) > len(quantile_sets.get(name, [])):
                    quantile_sets[name] = qs
    if reader.problems:
        rel, msg = reader.problems[0]
        cannot(f"{rel}: {msg}", "restore the per-episode statistics file")
        return None
    gstats = None
    try:
        gstats = st.read_global(ds)
    except Exception as exc:
        cannot(f"{STATS_PATH} cannot be read ({exc})", "restore or delete it, then rerun")
        return None
    if reader.kind is None and gstats is not None:
        for name, raw in gstats.items():
            if name in features and isinstance(raw, dict):
                quantile_sets[name] = [q for q in st.QUANTILES if q in raw]
    return _StatsJob(rc, wanted, episodes, lengths, features, reader, quantile_sets, gstats)


def _recompute(job: _StatsJob) -> bool:
    """Recompute every episode's statistics from the data files, episode by episode (at most
    :data:`MAX_EPISODE_BYTES` of one episode's numeric data held); False (told why) when an episode is too large."""
    import pyarrow.parquet as pq

    rc, ds, features = job.rc, job.rc.ds, job.features
    for df in rc.data_files:
        pf = pq.ParquetFile(ds.path(df.relpath))
        names = [n for n in features if n in pf.schema_arrow.names]
        width = sum(features[n].dims * features[n].storage.itemsize for n in names) or 1
        buf: dict[int, dict[str, list[np.ndarray]]] = {}
        rows: dict[int, int] = {}
        for batch in pf.iter_batches(batch_size=max(1024, min(65536, (16 * 2**20) // width)),
                                     columns=["episode_index", *names]):
            ep = numpy_values(batch.column("episode_index"))
            mats = {n: as_matrix(batch.column(n), features[n].dims) for n in names}
            for e in np.unique(ep).tolist():
                sel = np.flatnonzero(ep == e)
                rows[e] = rows.get(e, 0) + len(sel)
                if rows[e] * width > MAX_EPISODE_BYTES:
                    job.cannot(f"episode {e} holds more than {MAX_EPISODE_BYTES // 2**20} MiB of numeric data",
                               "recompute its statistics with lerobot")
                    return False
                for n, m in mats.items():
                    if m is not None:
                        buf.setdefault(e, {}).setdefault(n, []).append(m[sel])
                if rows[e] == job.lengths.get(e):
                    _episode_of(job, e, buf.pop(e, {}))
        for e in list(buf):
            _episode_of(job, e, buf.pop(e))
        pf.close()
    return True


def _episode_of(job: _StatsJob, e: int, parts: dict[str, list[np.ndarray]]) -> None:
    _episode(job.reader, e, parts, job.features, job.quantile_sets, job.rc.feats, job.lengths, job.replaced,
             job.totals, job.nonfinite)


def _aggregate(job: _StatsJob) -> None:
    """The aggregate of the per-episode statistics as they will be (the replaced entries, the others as stored);
    features whose data holds non-finite values are not recomputed at all (told why)."""
    feats, reader, replaced = job.rc.feats, job.reader, job.replaced
    aggregates: dict[str, RunningAggregate | None] = {}
    if reader.kind is not None:
        for row in reader:
            for name, raw in row.stats.items():
                if name not in feats or st.feature_kind(feats[name]) is None:
                    continue
                new = replaced.get(row.episode_index, {}).get(name)
                entry = st.parse_feature_stats(new)[0] if new is not None else _sound(raw, feats[name], None)
                if entry is None:
                    aggregates[name] = None  # a camera entry lrtool cannot recompute: no aggregate
                    continue
                agg = aggregates.setdefault(name, RunningAggregate())
                if agg is not None:
                    agg.add(entry)
    else:
        aggregates = job.totals
    for name, dims in sorted(job.nonfinite.items()):
        aggregates[name] = None  # never re-aggregated from statistics that cannot be right
        for e in list(replaced):
            replaced[e].pop(name, None)
        shown = ", ".join(map(str, sorted(dims)[:6])) + (", ..." if len(dims) > 6 else "")
        for c in job.wanted:
            job.rc.cannot(c, f"the data of {name!r} holds NaN or infinite values (dimension(s) {shown}): statistics "
                          "of it cannot be finite, so recomputing them fixes nothing",
                          "replace or drop the non-finite values in the data, then rerun", {"feature": name})
    _drop_unchanged(reader, replaced)
    job.aggregates = aggregates


def _plan_episode_changes(job: _StatsJob, summaries: dict[str, list[str]], files: dict[str, list[str]]) -> None:
    """Plan the rewrite of the per-episode entries that change (episodes_stats.jsonl, or the v3.0 cells)."""
    rc, ds, replaced = job.rc, job.rc.ds, job.replaced
    if not replaced:
        return
    per_feature: dict[str, int] = {}
    for entries in replaced.values():
        for n in entries:
            per_feature[n] = per_feature.get(n, 0) + 1
    if job.reader.kind == "jsonl":
        changes = [jsonl_change(ds, replaced, job.wanted)]
    else:
        changes = parquet_changes(ds, job.reader, replaced, job.wanted)
        written = {(c.episodes[r], col[len("stats/"):col.rindex("/")])
                   for c in changes for r, cols in c.cells.items() for col in cols}
        per_feature = {}
        for e, n in written:
            per_feature[n] = per_feature.get(n, 0) + 1
    for change in changes:
        rc.file_changes.append(change)
    for n, k in per_feature.items():
        summaries.setdefault(n, []).append(
            f"recompute {k} per-episode entr{'y' if k == 1 else 'ies'} from the data (lerobot's compute_stats)")
        files.setdefault(n, []).extend(c.relpath for c in changes)


def _plan_global_change(job: _StatsJob, summaries: dict[str, list[str]], files: dict[str, list[str]]) -> None:
    """Plan the rewrite of stats.json's entries that change (re-aggregated as lerobot's aggregate_stats does)."""
    rc, ds, gstats, aggregates = job.rc, job.rc.ds, job.gstats, job.aggregates
    if gstats is None:
        return
    flagged = {n for c in job.wanted for f in rc.findings(c) if STATS_PATH in (f.paths or [f.path])
               for n in _features_of(f)}
    for n in flagged:  # its stats.json entry is reported against the data: take the data's own moments (the
        if aggregates.get(n) is not None and n in job.totals:  # stored per-episode means carry float32
            aggregates[n] = job.totals[n]  # noise that pools into a spurious std)
    new_global, global_changed = _global(ds, gstats, aggregates, rc.feats, flagged)
    if not global_changed:
        return
    old_text = (ds.root / STATS_PATH).read_text(encoding="utf-8")
    new_text = dump_like(old_text if old_text.strip() else "{\n    }", new_global)
    expected = json.loads(json.dumps(new_global))

    def verify(text: str, expected=expected) -> None:
        if json.loads(text) != expected:
            raise ValueError(f"{STATS_PATH} does not read back as planned")

    rc.file_changes.append(TextChange(STATS_PATH, old_text, new_text, list(job.wanted), verify))
    for n in global_changed:
        summaries.setdefault(n, []).append(f"re-aggregate the {STATS_PATH} entry (lerobot's aggregate_stats)")
        files.setdefault(n, []).append(STATS_PATH)


def _report(job: _StatsJob, summaries: dict[str, list[str]], files: dict[str, list[str]]) -> None:
    """One repair line per finding's feature, or per group of features whose changes read the same."""
    rc = job.rc
    for c in job.wanted:
        found = rc.findings(c)
        # a finding grouped over several features names none: the changes of every feature answer it
        whole = (c in rc.implied and not found) or any(not _features_of(f) for f in found)
        named = set(summaries) if whole else {n for f in found for n in _features_of(f)}
        if not whole:
            for n in sorted(named & set(summaries)):
                rc.repair(c, f"{n!r}: " + "; ".join(summaries[n]), files[n], {"feature": n})
            continue
        alike: dict[str, list[str]] = {}  # features whose changes read the same: one line
        for n in sorted(named & set(summaries)):
            alike.setdefault("; ".join(summaries[n]), []).append(n)
        for text, names in alike.items():
            shown = ", ".join(map(repr, names[:3])) + (f" and {len(names) - 3} more" if len(names) > 3 else "")
            rc.repair(c, f"{shown}: {text}", sorted({p for n in names for p in files[n]}), None)


def _features_of(f) -> list[str]:
    v = f.subject.get("feature")
    return v if isinstance(v, list) else [v] if v is not None else []


def _drop_unchanged(reader, replaced: dict[int, dict[str, dict[str, Any]]]) -> None:
    """Forget replacement entries equal to the stored ones (nothing to write: not listed either)."""
    for e in list(replaced):
        row = reader.get(e) if reader.kind is not None else None
        stored = row.stats if row is not None else {}
        for name in list(replaced[e]):
            if _same(replaced[e][name], stored.get(name)):
                del replaced[e][name]
        if not replaced[e]:
            del replaced[e]


def _wrong_stats(raw: dict, feat: dict, length: int | None) -> tuple[st.FeatureStats, set[str]]:
    """The readable, well-shaped, finite statistics of a stored entry, and the names of the others (missing base
    statistics included; a numeric ``count`` other than ``length`` is wrong)."""
    parsed, bad = st.parse_feature_stats(raw)
    wrong = set(bad) | {s for s in st.BASE_STATS if s not in parsed}
    shapes = st.accepted_shapes(feat)
    for s, v in parsed.items():
        if s == "count":
            if v.shape != (1,) or (length is not None and st.feature_kind(feat) == "numeric" and int(v[0]) != length):
                wrong.add(s)
        elif s in st.BASE_STATS or s in st.QUANTILES:
            if (shapes and v.shape not in shapes) or not np.all(np.isfinite(v)):
                wrong.add(s)
    return {s: v for s, v in parsed.items() if s not in wrong}, wrong


def _merge(raw: dict, new: dict[str, Any], wrong: set[str]) -> dict[str, Any]:
    """``raw`` with the ``wrong`` statistics replaced by ``new``'s (kept in place; new ones appended). ``min`` and
    ``max`` are the data's own values, so they are written exactly (G010 compares them exactly); the other
    statistics keep a stored number that equals the new one to float noise (:func:`_keep_close`)."""
    out = dict(raw)
    for s in wrong:
        if s in new:
            out[s] = new[s] if s in ("min", "max") else _keep_close(new[s], raw.get(s))
    return out


def _episode(reader, e, parts, features, quantile_sets, feats, lengths, replaced, totals, nonfinite) -> None:
    """Recompute one episode's statistics; plan replacing the stored statistics that are wrong (per statistic:
    unreadable, misshapen, non-finite, miscounted, or disagreeing with the data beyond G010's tolerance). A
    feature whose data holds NaN or infinite values is noted in ``nonfinite`` (name -> dimensions) instead:
    statistics of such data cannot be finite, so recomputing them fixes nothing."""
    row = reader.get(e) if reader.kind is not None else None
    for name, f in features.items():
        chunks = parts.get(name)
        if not chunks:
            continue
        x = np.concatenate(chunks) if len(chunks) > 1 else chunks[0]
        bad = ~np.isfinite(x.astype(np.float64)) if x.dtype.kind == "f" else None
        if bad is not None and bad.any():
            nonfinite.setdefault(name, set()).update(np.flatnonzero(bad.any(axis=0)).tolist())
            continue
        raw = row.stats.get(name) if row is not None else None
        shapes = st.accepted_shapes(feats[name])
        sound, wrong = _wrong_stats(raw, feats[name], lengths.get(e)) if isinstance(raw, dict) else ({}, set())
        shape = sound["mean"].shape if "mean" in sound else f.shape
        if shapes and shape not in shapes:
            shape = f.shape
        qs = [q for q in st.QUANTILES if q in raw] if isinstance(raw, dict) else quantile_sets.get(name, [])
        new = episode_stats(x.astype(np.float64), shape, qs)
        totals.setdefault(name, RunningAggregate()).add(new)
        if row is None:
            continue
        plain = _plain(new, f.integer)
        if not isinstance(raw, dict):
            replaced.setdefault(e, {})[name] = plain
            continue
        m = Moments.of(x.astype(np.float64))
        wrong |= {d.stat for d in compare(sound, m, f.storage, quantile_ranks=_ranks(x, sound, f.storage))}
        if wrong:
            replaced.setdefault(e, {})[name] = _merge(raw, plain, wrong)


def jsonl_change(ds, replaced: dict[int, dict[str, dict]], checks: list[str]) -> TextChange:
    """v2.1: the lines of the replaced episodes re-serialised (``json.dumps``), every other line kept."""
    old_text = (ds.root / V2_EPISODES_STATS_PATH).read_text(encoding="utf-8")
    lines = old_text.splitlines(keepends=True)
    expected: dict[int, dict] = {}
    for k, line in enumerate(lines):
        if not line.strip():
            continue
        obj = json.loads(line)
        e = obj.get("episode_index")
        if e in replaced:
            for name, entry in replaced[e].items():
                obj["stats"][name] = entry
            end = "\n" if line.endswith("\n") else ""
            lines[k] = json.dumps(obj, ensure_ascii=False) + end
            expected[e] = json.loads(json.dumps(obj))
    new_text = "".join(lines)

    def verify(text: str) -> None:
        new_lines = text.splitlines()
        if len(new_lines) != len(old_text.splitlines()):
            raise ValueError(f"{V2_EPISODES_STATS_PATH}: the number of lines changed")
        for line in new_lines:
            if line.strip():
                obj = json.loads(line)
                if obj.get("episode_index") in expected and obj != expected[obj["episode_index"]]:
                    raise ValueError(f"{V2_EPISODES_STATS_PATH}: episode {obj['episode_index']} does not read back")

    return TextChange(V2_EPISODES_STATS_PATH, old_text, new_text, list(checks), verify)


def parquet_changes(ds, reader, replaced, checks) -> list[StatsCellsRewrite]:
    """v3.0: one :class:`StatsCellsRewrite` per ``meta/episodes`` file holding a replaced episode."""
    import pyarrow.parquet as pq

    out: dict[str, StatsCellsRewrite] = {}
    for e, entries in sorted(replaced.items()):
        loc = reader._rows.get(e)
        if loc is None:
            continue
        rel, _, row = loc
        ch = out.setdefault(rel, StatsCellsRewrite(rel, checks=list(checks)))
        names = set(pq.read_schema(ds.root / rel).names)
        old = reader.get(e)
        for name, entry in entries.items():
            before = (old.stats.get(name) or {}) if old else {}
            for stat, value in entry.items():
                col = f"stats/{name}/{stat}"
                if col in names and not _same(value, before.get(stat)):
                    ch.cells.setdefault(row, {})[col] = value
                    ch.old.setdefault(row, {})[col] = before.get(stat)
        ch.episodes[row] = e
    return [c for c in out.values() if c.cells]


def _global(ds, gstats: dict, aggregates: dict, feats: dict,
            flagged: set[str] = frozenset()) -> tuple[dict, list[str]]:
    """The new ``stats.json`` object (keys in their order) and the features whose entry changes.

    An entry whose count differs from the aggregate's (stale: episodes were added or removed) is replaced in full
    by lerobot's aggregate (quantiles as count-weighted means, 0.4.4); otherwise only its statistics that are
    unreadable, misshapen, non-finite or differ from the aggregate (G008's tolerance) are. For a feature in
    ``flagged`` (its ``stats.json`` entry is what a G003-G006/G010 finding names) every base statistic that is
    not the aggregate's (to float noise) is replaced: G008's tolerance lets through what those checks report
    (e.g. a std of 3e-07 where the data is constant)."""
    new = dict(gstats)
    changed_names: list[str] = []
    for name, raw in gstats.items():
        agg = aggregates.get(name)
        if agg is None or name not in feats or not isinstance(raw, dict):
            continue
        res = agg.result()
        if res is None:
            continue
        sound, wrong = _wrong_stats(raw, feats[name], None)
        shape = sound["mean"].shape if "mean" in sound else res["mean"].shape
        res = {k: (v if k == "count" else np.asarray(v).reshape(shape)) for k, v in res.items()}
        if all(s in sound for s in st.BASE_STATS):
            count_differs, diffs = stale_stats(sound, res)
            wrong |= set(diffs)
            if count_differs:
                wrong |= set(raw) & (set(res) | set(st.BASE_STATS))
        else:
            wrong |= set(st.BASE_STATS)
        integer = _integer_entry(raw)
        plain = _plain({k: v for k, v in res.items() if k in raw or k in st.BASE_STATS}, integer)
        if name in flagged:
            wrong |= {s for s in st.BASE_STATS if s in plain and not _same(_keep_close(plain[s], raw.get(s)), raw.get(s))}
        if not wrong:
            continue
        new[name] = _merge(raw, plain, wrong)
        changed_names.append(name)
    return new, changed_names


def _integer_entry(raw: dict) -> bool:
    """True when a stored entry's ``min`` holds integers (lerobot writes integer features' min/max as ints)."""
    v = raw.get("min")
    flat = np.asarray(v, dtype=object).reshape(-1) if isinstance(v, list) else []
    return len(flat) > 0 and all(isinstance(x, int) and not isinstance(x, bool) for x in flat)
