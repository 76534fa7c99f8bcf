"""Family G, metadata only: the stored statistics checked against the feature declarations, the episode metadata
and themselves (no data read).

Checks: G001 (missing / unreadable), G002 (undeclared keys), G003 (NaN/Inf), G004 (entry incomplete or wrong
shape), G005 (an entry contradicts itself: ``min <= mean <= max``, ``std >= 0``, ``std`` possible for values
spanning ``[min, max]``, camera statistics in [0, 1]), G006 (quantiles out of order), G007 (``count`` vs the
episode length / ``total_frames``), G008 (``meta/stats.json`` vs the aggregate of the per-episode statistics),
G009 (a normalised dimension with no spread: a normalisation hazard, not a defect).

Which statistics a loader normalises with (the "effective" global statistics): ``meta/stats.json`` for v2.0 and
v3.0; for v2.1 the aggregate of ``meta/episodes_stats.jsonl`` that lerobot 0.3.3 computes at load (its
``stats.json`` is not read). Defects in the effective statistics are errors; defects in per-episode statistics
are warnings (they reach training through aggregation: v2.1 at load, v3.0 when lerobot merges, splits or
deletes episodes), and so is anything in a v2.1 ``stats.json``.

Root cause first: an entry that cannot be read or has the wrong shape is reported once (G003/G004) and skipped by
every other check, G008 runs only for features whose every entry passed, and the per-episode ``count`` used for
aggregation is the episode length (a wrong count is G007, not also G008). Per-episode statistics are streamed in
blocks of a few hundred episodes (:class:`~lerobot_tools.checks.stats.blocks.StatsBlocks`) and screened with
numpy over the whole block; only the rows that fail the screen are checked one by one (for their messages).
Memory is one block plus one running aggregate per feature.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from lerobot_tools.checks.context import CheckContext
from lerobot_tools.checks.files import report_unreadable
from lerobot_tools.checks.stats import blocks as sb
from lerobot_tools.checks.stats import stored as st
from lerobot_tools.checks.stats.compute import QUANTILE_BINS, RunningAggregate, std_bounds, std_noise_var
from lerobot_tools.dataset.model import STATS_PATH, V2_EPISODES_STATS_PATH
from lerobot_tools.dataset.placeholders import UnreadableFileError, check_metadata_file
from lerobot_tools.errors import DatasetError
from lerobot_tools.findings import ERROR

_EPS32 = float(np.finfo(np.float32).eps)
#: relative tolerance of G008 (both sides are derived from the same stored numbers in float64)
G008_RTOL = 1e-4


@dataclass
class StatsFacts:
    """What the metadata pass learnt, for the ``--deep`` pass (:mod:`lerobot_tools.checks.stats.deep`).

    Attributes:
        reader: the per-episode statistics as blocks (:class:`~lerobot_tools.checks.stats.blocks.StatsBlocks`,
            iterated once here; the deep pass looks episodes up in it), None when the layout has none.
        global_stats: parsed entries of the effective global statistics that passed G003/G004 (feature -> stats).
        global_source: where they come from (``meta/stats.json`` or the v2.1 aggregate description).
        untrusted: ``(episode_index or None for global, feature)`` entries that failed G003/G004 (deep skips them).
        inconsistent: ``(episode_index, feature) -> (finding, statistics)`` of G005 std-range and G006 findings
            (episode_index None: meta/stats.json); the deep pass withdraws the finding when it reports one of
            those statistics of the same entry against the data (one cause, one finding, one severity).
        stale: features of ``meta/stats.json`` reported by G008 (deep does not report them again).
        miscounted: features with a per-episode G007 (for v2.1 the load-time aggregate is skewed by it: deep does
            not report that aggregate again).
    """

    reader: sb.StatsBlocks | None = None
    global_stats: dict[str, st.FeatureStats] = field(default_factory=dict)
    global_source: str | None = None
    untrusted: set[tuple[int | None, str]] = field(default_factory=set)
    inconsistent: dict[tuple[int, str], tuple[object, set[str]]] = field(default_factory=dict)
    stale: set[str] = field(default_factory=set)
    miscounted: set[str] = field(default_factory=set)


def _stats_dtype(feat: dict) -> str:
    """The dtype a writer computed a feature's statistics in: the declared numeric dtype; float32 for cameras
    (pixels scaled to [0, 1]) and anything that is not a numpy dtype name."""
    dtype = feat.get("dtype")
    try:
        return str(np.dtype(dtype)) if isinstance(dtype, str) and dtype not in st.CAMERA_DTYPES else "float32"
    except TypeError:
        return "float32"


def _label(name: str, stat: str, j: int | None = None) -> str:
    return f"{name!r}.{stat}" + (f"[{j}]" if j is not None else "")


def _slack(scale: np.ndarray, n: int) -> np.ndarray:
    """Float slack for order checks: float32 rounding of the data and of a float32 mean over n values."""
    return (1e-6 + 16.0 * math.sqrt(max(n, 1)) * _EPS32) * scale + 1e-12


class _Checker:
    """Checks one entry at a time; ``where`` names the episode (``episode 3``) or the global file."""

    def __init__(self, ctx: CheckContext, feats: dict, lengths: dict[int, int]):
        self.ctx = ctx
        self.feats = feats
        self.lengths = lengths
        self.miscounted: set[str] = set()
        #: ``(finding, statistics)`` of the last entry's G005 (std vs range only) or G006 finding, which the
        #: deep pass may withdraw
        self.last_inconsistent: tuple[object, set[str]] | None = None
        #: ``(feature, problem, path)`` of stats.json entries whose only problem is their ``count``
        self.countless: list[tuple[str, str, str | None]] = []

    def report_countless(self) -> None:
        """One G004 warning for every stats.json entry whose only problem is ``count`` (one cause: the writer
        left it out), naming the features."""
        if not self.countless:
            return
        names = [n for n, _, _ in self.countless]
        first, text, path = self.countless[0]
        more = f"; so do {', '.join(repr(n) for n in names[1:4])}" + (" ..." if len(names) > 4 else "") \
            if len(names) > 1 else ""
        self.ctx.emit("G004", f"{text}{more} (only lerobot's aggregate_stats reads count, when datasets are merged "
                      "or episodes are recorded into it; loading does not)", path, severity="warning",
                      feature=names if len(names) > 1 else first)
        self.countless = []

    def entry(self, where: str | None, path: str | None, name: str, raw, *, episode: int | None, severity: str | None,
              hazard_severity: str | None, count_expected: int | None, shape_severity: str | None = None,
              frames_hint: int | None = None) -> tuple[st.FeatureStats | None, bool]:
        """Run G003-G007 and G009 on one feature's entry. Returns ``(parsed or None when untrusted, consistent)``.

        ``shape_severity`` overrides ``severity`` for G004 (a v2.1 per-episode entry: lerobot 0.3.3 aggregates
        them at load, and its ``aggregate_stats`` raises on an incomplete or misshapen one). An entry whose only
        G004 problem is its ``count`` keeps being checked (``count`` taken as ``frames_hint``, else unknown):
        only ``aggregate_stats`` reads ``count``, so for statistics used as stored (stats.json of v2.0 / v3.0)
        that G004 is a warning.
        """
        ctx, feat = self.ctx, self.feats[name]
        kind = st.feature_kind(feat)
        at = where  # _hazard adds its own ": "
        where = f"{where}: " if where else ""
        subj = {"feature": name, "episode": episode}
        scope = "per-episode statistics" if episode is not None else "statistics"
        stats, unreadable = st.parse_feature_stats(raw)
        problems: list[tuple[str, bool]] = []  # (text, about count alone)
        if not isinstance(raw, dict):
            problems = [(f"the {name!r} entry is not an object of statistics", False)]
        else:
            problems = [(f"{_label(name, s)} is not a " + ("list of whole numbers below 2**63" if s == "count" else
                                                           "rectangular list of numbers"), s == "count")
                        for s in unreadable]
            missing = [s for s in st.BASE_STATS if s not in stats and s not in unreadable]
            if missing:
                problems.append((f"{name!r} lacks {', '.join(missing)}", missing == ["count"]))
        shapes = st.accepted_shapes(feat)
        for s, v in stats.items():
            if s == "count":
                if v.shape != (1,):
                    problems.append((f"{_label(name, 'count')} has shape {v.shape}, lerobot requires (1,)", True))
            elif s in st.BASE_STATS or s in st.QUANTILES:
                if shapes and v.shape not in shapes:
                    want = " or ".join(str(t) for t in shapes)
                    extra = ""
                    if kind == "camera" and v.shape == (shapes[0][0],):
                        extra = (f": normalising a (B, {shapes[0][0]}, H, W) batch with it raises a size mismatch "
                                 "(lerobot 0.4.4 normalize_processor: (x - mean) / std)")
                    what = "camera" if kind == "camera" else f"feature of shape {tuple(feat.get('shape'))}"
                    problems.append((f"{_label(name, s)} has shape {v.shape}, expected {want} for a {what}{extra}",
                                     False))
        if not problems and "min" in stats:  # each may be a shape lerobot writes (rank >= 2: two); they must agree
            ref = stats["min"].shape
            problems = [(f"{_label(name, s)} has shape {v.shape} but {_label(name, 'min')} has shape {ref}", False)
                        for s, v in stats.items() if (s in st.BASE_STATS or s in st.QUANTILES) and s != "count"
                        and v.shape != ref]
        if problems:
            count_only = all(c for _, c in problems)
            sev = shape_severity or severity
            why = ""
            if shape_severity:
                why = " (lerobot 0.3.3 aggregates the per-episode statistics at load: aggregate_stats raises)"
            elif count_only and episode is None:
                sev = "warning"
                why = (" (only lerobot's aggregate_stats reads count, when datasets are merged or episodes are "
                       "recorded into it; loading does not)")
            text = problems[0][0] + (f" (and {len(problems) - 1} more)" if len(problems) > 1 else "")
            if count_only and episode is None and not shape_severity:
                self.countless.append((name, text, path))  # said once for all features (:meth:`report_countless`)
            else:
                ctx.emit("G004", f"{where}{text}{why}", path, severity=sev,
                         group=f"{scope} entries are incomplete or have the wrong shape", **subj)
            if not count_only or shape_severity or "count" in unreadable or not isinstance(raw, dict):
                return None, False
            stats["count"] = np.asarray([frames_hint or count_expected or -1], dtype=np.int64)
        for s, v in stats.items():
            if s != "count" and not np.all(np.isfinite(v)):
                j = int(np.flatnonzero(~np.isfinite(v.reshape(-1)))[0])
                ctx.emit("G003", f"{where}{_label(name, s, j)} is not finite", path, severity=severity,
                         group=f"{scope} hold NaN or infinite values", key=s, **subj)
                return None, False
        if count_expected is not None and kind == "numeric" and int(stats["count"][0]) != count_expected:
            self.miscounted.add(name)
            ctx.emit("G007", f"{where}{_label(name, 'count')} is {int(stats['count'][0])} but the episode has "
                     f"{count_expected} frame(s)", path, group=f"{scope} counts differ from the episode lengths", key="count", **subj)
        consistent = self._consistency(where, path, name, kind, stats, episode, severity, scope, count_expected)
        n = count_expected or int(stats["count"][0])
        if consistent and hazard_severity and st.normalised(name, feat) and (episode is None or n >= 2):
            self._hazard(at, path, name, stats, hazard_severity, episode)
        return stats, consistent

    def _consistency(self, where, path, name, kind, stats, episode, severity, scope, count_expected) -> bool:
        ctx = self.ctx
        lo = stats["min"].reshape(-1)
        hi = stats["max"].reshape(-1)
        mean = stats["mean"].reshape(-1)
        std = stats["std"].reshape(-1)
        # a count of -1 stands for a missing one (G004 reported it): as good as unbounded for the bounds on std
        c = int(stats["count"][0])
        n = c if c > 0 else (count_expected or (2**40 if c < 0 else 1))
        n_desc = "any number of values" if c < 0 and not count_expected else f"any {n} value(s)"
        if kind == "numeric" and count_expected:
            n = count_expected
        scale = np.maximum(np.abs(lo), np.abs(hi))
        slack = _slack(scale, n)
        problems: list[tuple[str, int | None]] = []
        for j in np.flatnonzero(lo > hi + slack):
            problems.append((f"{_label(name, 'min', j)} = {lo[j]:.6g} > max {hi[j]:.6g}", None))
        for j in np.flatnonzero((mean < lo - slack) | (mean > hi + slack)):
            problems.append((f"{_label(name, 'mean', j)} = {mean[j]:.6g} outside [min, max] = [{lo[j]:.6g}, {hi[j]:.6g}]", None))
        for j in np.flatnonzero(std < 0):
            problems.append((f"{_label(name, 'std', j)} = {std[j]:.6g} is negative", None))
        if kind == "camera":
            for s in ("min", "max", "mean"):
                v = stats[s].reshape(-1)
                for j in np.flatnonzero((v < -1e-6) | (v > 1 + 1e-6)):
                    problems.append((f"{_label(name, s, j)} = {v[j]:.6g} is outside [0, 1] (lerobot scales pixels to [0, 1])", None))
        rng = np.maximum(hi - lo, 0.0)
        round_std = 4 * _EPS32 * scale + 1e-12
        spread = rng / 2 * (math.sqrt(n / (n - 1)) if n > 1 else 1.0) * (1 + 1e-3)
        least = rng / math.sqrt(2 * n) * (1 - 1e-3)
        noisy_upper, noisy_lower = std_bounds(spread, least, std_noise_var(scale, n, _stats_dtype(self.feats[name])))
        upper = noisy_upper + round_std
        for j in np.flatnonzero(std > upper):
            problems.append((f"{_label(name, 'std', j)} = {std[j]:.6g} is larger than {n_desc} within "
                             f"[{lo[j]:.6g}, {hi[j]:.6g}] can have (at most {upper[j]:.6g})", int(j)))
        if kind == "numeric":  # camera std: lerobot 0.4.x squares uint8 pixels (wrapping) and stores ~0; see docs
            lower = noisy_lower - round_std
            for j in np.flatnonzero(std < lower):
                problems.append((f"{_label(name, 'std', j)} = {std[j]:.6g} is smaller than {n_desc} spanning "
                                 f"[{lo[j]:.6g}, {hi[j]:.6g}] can have (at least {lower[j]:.6g})", int(j)))
        sev, note = self._effective_severity(name, severity, episode)
        if problems:
            text, dim = problems[0]
            more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
            emitted = len(ctx.findings)
            ctx.emit("G005", f"{where}{text}{more}{note}", path, severity=sev,
                     group=f"{scope} contradict themselves", feature=name, episode=episode)
            std_only = all(d is not None for _, d in problems)
            if std_only and len(ctx.findings) > emitted:
                self.last_inconsistent = (ctx.findings[-1], {"std"})
            return False
        qs = [q for q in st.QUANTILES if q in stats]
        if qs:
            width = rng / QUANTILE_BINS * 1.01 + slack
            seq = [lo] + [stats[q].reshape(-1) for q in qs] + [hi]
            names = ["min", *qs, "max"]
            for a in range(len(seq) - 1):
                bad = np.flatnonzero(seq[a] > seq[a + 1] + width)
                if len(bad):
                    j = int(bad[0])
                    ctx.emit("G006", f"{where}{_label(name, names[a], j)} = {seq[a][j]:.6g} > "
                             f"{names[a + 1]} = {seq[a + 1][j]:.6g}: quantiles out of order{note}", path, severity=sev,
                             group=f"{scope} have quantiles out of order", feature=name, episode=episode,
                             key=names[a + 1])
                    if ctx.findings and ctx.findings[-1].check == "G006":
                        self.last_inconsistent = (ctx.findings[-1], {names[a], names[a + 1]})
                    return False
        return True

    def _effective_severity(self, name: str, severity: str | None, episode: int | None) -> tuple[str | None, str]:
        """Severity (and the note saying why) of a wrong value in the statistics training normalises with
        (``severity`` None: stats.json of v2.0 / v3.0): an error for a feature lerobot policies normalise
        (:func:`~lerobot_tools.checks.stats.stored.normalised`), a warning for any other (nothing reads it);
        per-episode entries and a v2.1 stats.json keep ``severity``. The same rule decides G010's severity."""
        if episode is not None or severity is not None:
            return severity, ""
        if st.normalised(name, self.feats[name]):
            return "error", ""
        return "warning", f" (a warning: lerobot policies do not normalise {name!r})"

    def _hazard(self, where, path, name, stats, severity, episode) -> None:
        lo, hi = stats["min"].reshape(-1), stats["max"].reshape(-1)
        flat = np.flatnonzero(hi - lo <= 0)
        if not len(flat):
            return
        dims = ", ".join(str(int(j)) for j in flat[:6]) + (", ..." if len(flat) > 6 else "")
        what = "in this episode" if episode is not None else "over the whole dataset"
        self.ctx.emit("G009", f"{where + ': ' if where else ''}{name!r} dimension(s) [{dims}] are constant {what} "
                      f"(value {lo[flat[0]]:.6g}): MEAN_STD divides by std + 1e-8 and MIN_MAX by 1e-8, so any "
                      f"other value is scaled by ~1e8", path, severity=severity,
                      group=f"{name!r} has constant dimensions" + (" in some episodes" if episode is not None else ""),
                      feature=name, episode=episode)


def run(ctx: CheckContext) -> None:
    """Family G, metadata only (see module docstring). Emits G001-G009; sets ``ctx.stats_facts``."""
    ds = ctx.dataset
    assert ds is not None
    facts = StatsFacts()
    ctx.stats_facts = facts
    src = _open_sources(ctx, facts)
    if src is None:
        return
    lengths: dict[int, int] = {}
    if ctx.episodes_ok:
        lengths = {e.episode_index: e.length for e in ds.episodes if e.length is not None}
    feats = ds.features
    chk = _Checker(ctx, feats, lengths)
    pas = _Pass(ctx, facts, chk, feats, _is_v21(ds))
    per = _episode_entries(pas, src, lengths)
    stale = _global_entries(pas, src, per)
    chk.report_countless()
    _conclude(pas, per, stale)


def _is_v21(ds) -> bool:
    """v2.1's loaders (lerobot 0.3.3) read the per-episode statistics, v2.0's and v3.0's read stats.json."""
    return ds.layout == "v2" and ds.codebase_version != "v2.0"


@dataclass
class _Pass:
    """The state the phases of :func:`run` share."""

    ctx: CheckContext
    facts: StatsFacts
    chk: "_Checker"
    feats: dict[str, dict]  # the declared features (computed once: ``Dataset.features`` builds a dict per call)
    v21: bool


@dataclass
class _Sources:
    """What :func:`run` reads the statistics from: stats.json (parsed, or None) and the per-episode stream."""

    gstats: dict | None
    global_unreadable: bool
    reader: sb.StatsBlocks
    looked_up: bool  # the deep pass looks the statistics up again (G010): keep the stream's files open


@dataclass
class _PerEpisode:
    """What the per-episode entries leave for the stats.json entries and the conclusion."""

    aggregates: dict[str, RunningAggregate]  # sound entries only (G008)
    loaded: dict[str, RunningAggregate]      # every readable, well-shaped entry (what lerobot 0.3 aggregates)
    tainted: set[str]                        # features with an entry that failed: G008 is not derived from them
    complete: bool                           # every episode has a readable entry


def _open_sources(ctx: CheckContext, facts: StatsFacts) -> _Sources | None:
    """Sniff and open the statistics files; report the ones the loader cannot read (G001). None: nothing to check."""
    ds = ctx.dataset
    episodes_stats_ok = True
    if _is_v21(ds) and (ds.root / V2_EPISODES_STATS_PATH).exists():
        # v2.1 loaders read the per-episode statistics (lerobot 0.3.3 load_episodes_stats): sniff them first
        try:
            check_metadata_file(ds.root / V2_EPISODES_STATS_PATH, V2_EPISODES_STATS_PATH, "jsonl")
        except UnreadableFileError as exc:
            report_unreadable(ctx, exc, "G001", "episodes_stats", severity=ERROR,
                              why=" (the v2.1 loader reads it to build the statistics and raises)")
            episodes_stats_ok = False
    try:
        gstats = st.read_global(ds)
    except DatasetError as exc:
        # a stats.json that exists but cannot be parsed stops the loader (lerobot 0.4.4 load_stats: json.load)
        report_unreadable(ctx, exc, "G001", "stats", severity=ERROR,
                          why=" (the file exists, so lerobot's load_stats parses it and raises)")
        gstats = None
        global_unreadable = True
    else:
        global_unreadable = False
    looked_up = ctx.options.deep and ctx.enabled("G010")  # the deep pass looks the statistics up again
    reader = sb.StatsBlocks(ds, keep=looked_up)
    if not episodes_stats_ok or (reader.kind == "parquet" and not ctx.episodes_ok):
        if reader.kind == "parquet":  # the episode metadata's own finding (C007, F004...) states the cause
            ctx.skip("G003-G008 per episode", "the episode metadata could not be read")
        reader.kind = None
    if reader.kind is not None:
        facts.reader = reader
    v21_missing = (_is_v21(ds) and reader.kind is None and episodes_stats_ok
                   and not (ds.root / V2_EPISODES_STATS_PATH).exists())
    if v21_missing:
        # lerobot 0.3.3 LeRobotDatasetMetadata.load_metadata: for codebase_version >= v2.1 it calls
        # load_episodes_stats unconditionally (stats.json is read only for v2.0), so loading raises
        # FileNotFoundError and falls back to downloading meta/ from the Hub
        also = f"{STATS_PATH} exists but is not read for v2.1" if gstats is not None or global_unreadable else \
            f"and {STATS_PATH} is missing too"
        ctx.emit("G001", f"{V2_EPISODES_STATS_PATH} is missing ({also}): lerobot 0.3.3 reads it for every v2.1 "
                 "dataset (load_episodes_stats) and raises FileNotFoundError", V2_EPISODES_STATS_PATH,
                 severity=ERROR, file_kind="episodes_stats")
        if gstats is None and not global_unreadable:
            return None
    if gstats is None and not global_unreadable and not _is_v21(ds):
        # (v2.1 needs the per-episode statistics, not stats.json: reported above)
        ctx.emit("G001", f"{STATS_PATH} is missing: no normalisation statistics", STATS_PATH)
    if global_unreadable and reader.kind is None:
        return None
    return _Sources(gstats, global_unreadable, reader, looked_up)


def _episode_entries(pas: _Pass, src: _Sources, lengths: dict[int, int]) -> _PerEpisode:
    """Check every per-episode entry (screened a block at a time, the failing rows one by one) and aggregate the
    sound ones; then report the stream's unreadable files and the episodes without an entry (G001)."""
    ctx, facts, chk, feats = pas.ctx, pas.facts, pas.chk, pas.feats
    ds = ctx.dataset
    reader = src.reader
    per = _PerEpisode({}, {}, set(), False)
    seen_eps: set[int] = set()
    for block in reader:
        seen_eps.update(block.episodes.tolist())
        lens = np.asarray([lengths.get(e, -1) for e in block.episodes.tolist()], dtype=np.int64)
        for name, cols in block.features.items():
            if name not in feats:
                for i, e in enumerate(block.episodes.tolist()):
                    if any(c.ok[i] or c.shapes.get(i) is not None for c in cols.values()):
                        ctx.emit("G002", f"episode {e}: statistics for {name!r}, which is not a declared feature",
                                 block.source_at(i), group="per-episode stats describe undeclared features",
                                 feature=name, episode=e)
                continue
            kind = st.feature_kind(feats[name])
            if kind is not None:
                _episode_feature(pas, per, block, name, cols, kind, lens)
    facts.miscounted = set(chk.miscounted)
    if not src.looked_up:
        # nothing looks the statistics up again: let go of the files the stream left open now, not with the
        # context (a 14,000-episode file's parsed footer is ~110 MB, and the deep pass parses the data's next)
        reader.close()
    for rel, msg in reader.problems:
        if rel in ctx.placeholders:  # F004-F006 already say what the file is
            ctx.skip("G003-G008 per episode", f"{rel} is not a parquet file")
            continue
        ctx.emit("G001", msg, rel, group="per-episode statistics cannot be read")
    no_stats = [e for e in lengths if e not in seen_eps] if reader.kind is not None else []
    if no_stats:
        ctx.emit("G001", f"{len(no_stats)} episode(s) have no per-episode statistics (first: episode {min(no_stats)})",
                 V2_EPISODES_STATS_PATH if reader.kind == "jsonl" else (ds.episode_files[0] if ds.episode_files else None))
    per.complete = not no_stats and not reader.problems and reader.kind is not None
    return per


def _episode_feature(pas: _Pass, per: _PerEpisode, block: sb.StatsBlock, name: str,
                     cols: dict[str, sb.StatColumn], kind: str, lens: np.ndarray) -> None:
    """One declared feature of one block of per-episode entries: screen, check the failing rows, aggregate."""
    ctx, facts, chk, feats, v21 = pas.ctx, pas.facts, pas.chk, pas.feats, pas.v21
    present = np.zeros(len(block.episodes), dtype=bool)
    for c in cols.values():
        present |= c.ok | np.asarray([c.shapes.get(i) is not None for i in range(len(c.ok))], dtype=bool)
    sound, consistent = _screen(feats[name], kind, cols, lens)
    for i in np.flatnonzero(present & ~(sound & consistent)).tolist():  # the few rows that fail: one by one
        e = int(block.episodes[i])
        chk.last_inconsistent = None
        emitted = len(ctx.findings)
        parsed, ok = chk.entry(f"episode {e}", block.source_at(i), name, _row(cols, i), episode=e,
                               severity="warning", hazard_severity="info",
                               count_expected=int(lens[i]) if lens[i] >= 0 else None,
                               shape_severity="error" if v21 else None)
        if parsed is None:
            facts.untrusted.add((e, name))
            sound[i] = False
        elif not ok and chk.last_inconsistent is not None:
            facts.inconsistent[(e, name)] = chk.last_inconsistent
        elif ok and len(ctx.findings) == emitted:
            # the screen is stricter than the checks, e.g. for an entry without quantiles (older writers):
            # an entry they found nothing in aggregates like the others
            sound[i] = consistent[i] = True
    good = present & sound & consistent
    if (present & ~good).any():
        per.tainted.add(name)
    if st.normalised(name, feats[name]):
        _hazards_block(chk, block, name, cols, good, lens)
    stored = cols["count"].values[:, 0] if "count" in cols else np.full(len(lens), -1, dtype=np.int64)
    weights = np.where(lens >= 0, lens, stored) if kind == "numeric" else None
    if good.any():
        per.aggregates.setdefault(name, RunningAggregate()).add_block(cols, good, weights)
    if v21 and (present & sound).any():
        per.loaded.setdefault(name, RunningAggregate()).add_block(cols, present & sound, None)


def _global_entries(pas: _Pass, src: _Sources, per: _PerEpisode) -> list[tuple[str, str]]:
    """Check stats.json's entries (G002, G004, G007 and the entry checks); returns the features whose entry
    disagrees with the aggregate of the per-episode entries, with a one-line detail (for G008)."""
    ctx, facts, chk, feats, v21 = pas.ctx, pas.facts, pas.chk, pas.feats, pas.v21
    ds = ctx.dataset
    gstats = src.gstats
    total_frames = ds.total("total_frames")
    stale: list[tuple[str, str]] = []
    if gstats is None:
        return stale
    g_sev = "warning" if v21 else None
    for name, raw in gstats.items():
        if name not in feats:
            ctx.emit("G002", f"stats for {name!r}, which is not a declared feature", STATS_PATH,
                     group="stats describe undeclared features", feature=name)
            continue
        if st.feature_kind(feats[name]) is None:
            continue
        count_expected = None
        if src.reader.kind is None and st.feature_kind(feats[name]) == "numeric" and total_frames is not None:
            count_expected = total_frames
        chk.last_inconsistent = None
        parsed, ok = chk.entry(None, STATS_PATH, name, raw, episode=None, severity=g_sev,
                               hazard_severity=None if v21 else "warning", count_expected=None,
                               frames_hint=total_frames)
        if parsed is not None and not ok and chk.last_inconsistent is not None and not v21:
            facts.inconsistent[(None, name)] = chk.last_inconsistent
        if parsed is None:
            if not v21:  # a v2.1 stats.json is not what the loader normalises with: the aggregate still is
                facts.untrusted.add((None, name))
            continue
        if count_expected is not None and int(parsed["count"][0]) != count_expected:
            ctx.emit("G007", f"{_label(name, 'count')} is {int(parsed['count'][0])} but total_frames is "
                     f"{count_expected}", STATS_PATH, group="stats.json counts differ from total_frames",
                     feature=name, key="count")
        if not v21:
            facts.global_stats[name] = parsed
        if ok and per.complete and name in per.aggregates and name not in per.tainted:
            detail = _stale(name, parsed, per.aggregates[name].result())
            if detail:
                stale.append((name, detail))
    for name, feat in feats.items():
        if st.normalised(name, feat) and name not in gstats and not v21:
            ctx.emit("G004", f"{STATS_PATH} has no statistics for {name!r}: lerobot leaves it unnormalised",
                     STATS_PATH, group="normalised features have no statistics", feature=name)
    if not v21:
        facts.global_source = STATS_PATH
    return stale


def _conclude(pas: _Pass, per: _PerEpisode, stale: list[tuple[str, str]]) -> None:
    """G008 for a stale stats.json; for v2.1, the aggregate lerobot 0.3 normalises with becomes the statistics
    the later checks compare against (and is checked for hazards)."""
    ctx, facts, chk, feats, v21 = pas.ctx, pas.facts, pas.chk, pas.feats, pas.v21
    if stale:
        facts.stale.update(n for n, _ in stale)
        why = "lerobot 0.3 ignores it for v2.1, other tools may not" if v21 else \
            "training normalises with it, so it describes other data than the dataset holds"
        names = ", ".join(repr(n) for n, _ in stale[:4]) + (", ..." if len(stale) > 4 else "")
        ctx.emit("G008", f"{STATS_PATH} disagrees with the aggregate of the per-episode statistics for {len(stale)} "
                 f"feature(s) ({names}); first {stale[0][0]!r}: {stale[0][1]}. Stale after episodes were added or "
                 f"removed? {why}", STATS_PATH, feature=[n for n, _ in stale])
    if v21 and per.complete:
        facts.global_source = f"the aggregate of {V2_EPISODES_STATS_PATH} (what lerobot 0.3 normalises with)"
        for name, agg in per.loaded.items():
            if any(u == name for _, u in facts.untrusted):
                continue
            res = agg.result()
            if res is not None:
                facts.global_stats[name] = res
                if st.normalised(name, feats[name]):
                    chk._hazard(f"aggregate of {V2_EPISODES_STATS_PATH}", V2_EPISODES_STATS_PATH, name, res, "warning", None)


def _row(cols: dict[str, sb.StatColumn], i: int) -> dict | None:
    """Row ``i`` of a block's feature as the stored entry it came from (for the one-by-one checks)."""
    if any(c.shapes.get(i) == st.NOT_AN_OBJECT for c in cols.values()):
        return None  # the stored entry was not an object: reported as such
    out: dict = {}
    for stat, c in cols.items():
        if c.ok[i]:
            out[stat] = c.values[i].tolist()
        else:
            shape = c.shapes.get(i)
            if shape == "unreadable":
                out[stat] = "unreadable"
            elif shape is not None:
                out[stat] = np.zeros(shape).tolist()
    return out


def _screen(feat: dict, kind: str, cols: dict[str, sb.StatColumn], lens: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Vectorised G003-G007 screen of a block: ``(sound, consistent)`` per row. A row passing both raises
    nothing; the others go through :class:`_Checker` one by one (same messages as a single entry)."""
    k = len(lens)
    sound = np.ones(k, dtype=bool)
    if any(s not in cols for s in st.BASE_STATS):
        return np.zeros(k, dtype=bool), np.zeros(k, dtype=bool)
    shapes = st.accepted_shapes(feat)
    for stat, c in cols.items():
        sound &= c.ok
        if stat == "count":
            continue
        if (stat in st.BASE_STATS or stat in st.QUANTILES) and shapes and c.values.shape[1:] not in shapes:
            sound[:] = False
        sound &= np.all(np.isfinite(c.values.reshape(k, -1)), axis=1)
    count = cols["count"].values[:, 0]
    consistent = np.ones(k, dtype=bool)
    if kind == "numeric":
        consistent &= (lens < 0) | (count == lens)
    lo = cols["min"].values.reshape(k, -1)
    hi = cols["max"].values.reshape(k, -1)
    mean = cols["mean"].values.reshape(k, -1)
    std = cols["std"].values.reshape(k, -1)
    if not (lo.shape == hi.shape == mean.shape == std.shape):
        return sound, np.zeros(k, dtype=bool)
    n = np.where((kind == "numeric") & (lens > 0), lens, np.maximum(count, 1)).astype(np.float64)[:, None]
    scale = np.maximum(np.abs(lo), np.abs(hi))
    slack = (1e-6 + 16.0 * np.sqrt(n) * _EPS32) * scale + 1e-12
    with np.errstate(invalid="ignore"):
        ok = (lo <= hi + slack) & (mean >= lo - slack) & (mean <= hi + slack) & (std >= 0)
        rng = np.maximum(hi - lo, 0.0)
        round_std = 4 * _EPS32 * scale + 1e-12
        ratio = np.where(n > 1, np.sqrt(n / np.maximum(n - 1, 1)), 1.0)
        spread = rng / 2 * ratio * (1 + 1e-3)
        least = rng / np.sqrt(2 * n) * (1 - 1e-3)
        noisy_upper, noisy_lower = std_bounds(spread, least, std_noise_var(scale, n, _stats_dtype(feat)))
        ok &= std <= noisy_upper + round_std
        if kind == "numeric":
            ok &= std >= noisy_lower - round_std
        else:
            for v in (lo, hi, mean):
                ok &= (v >= -1e-6) & (v <= 1 + 1e-6)
        qs = [q for q in st.QUANTILES if q in cols]
        if qs:
            width = rng / QUANTILE_BINS * 1.01 + slack
            seq = [lo] + [cols[q].values.reshape(k, -1) for q in qs] + [hi]
            for a in range(len(seq) - 1):
                if seq[a].shape == seq[a + 1].shape:
                    ok &= seq[a] <= seq[a + 1] + width
                else:
                    ok &= False
    consistent &= np.all(ok, axis=1)
    return sound, consistent


def _hazards_block(chk: "_Checker", block: sb.StatsBlock, name: str, cols: dict[str, sb.StatColumn],
                   good: np.ndarray, lens: np.ndarray) -> None:
    """G009 (info) for the sound, consistent rows of a normalised feature with a constant dimension."""
    k = len(good)
    lo = cols["min"].values.reshape(k, -1)
    hi = cols["max"].values.reshape(k, -1)
    # an entry without ``count`` never passes the screen (``good`` is False), so the length is enough then
    count = cols["count"].values[:, 0] if "count" in cols else np.full(k, -1, dtype=np.int64)
    n = np.where(lens >= 0, lens, count)
    flat = good & (n >= 2) & np.any(hi - lo <= 0, axis=1)
    for i in np.flatnonzero(flat).tolist():
        e = int(block.episodes[i])
        chk._hazard(f"episode {e}", block.source_at(i), name, {"min": lo[i], "max": hi[i]}, "info", e)


def stale_stats(g: st.FeatureStats, agg: st.FeatureStats) -> tuple[bool, dict[str, tuple[int, float, float]]]:
    """How a ``meta/stats.json`` entry differs from the aggregate of the per-episode entries: whether the counts
    differ, and per base statistic the first differing dimension ``(j, stored, aggregate)`` (relative tolerance
    :data:`G008_RTOL` of the data's magnitude and std)."""
    scale = np.maximum(np.abs(agg["min"]), np.abs(agg["max"])).reshape(-1)
    astd = agg["std"].reshape(-1)
    out: dict[str, tuple[int, float, float]] = {}
    for s in ("min", "max", "mean", "std"):
        gv, av = g[s].reshape(-1), agg[s].reshape(-1)
        if gv.shape != av.shape:
            out[s] = (0, math.nan, math.nan)
            continue
        tol = G008_RTOL * (scale + (astd if s in ("mean", "std") else 0.0)) + 1e-12
        bad = np.flatnonzero(np.abs(gv - av) > tol)
        if len(bad):
            j = int(bad[0])
            out[s] = (j, float(gv[j]), float(av[j]))
    return int(g["count"][0]) != int(agg["count"][0]), out


def _stale(name: str, g: st.FeatureStats, agg: st.FeatureStats | None) -> str | None:
    """G008: how ``meta/stats.json``'s entry for ``name`` disagrees with the aggregate of the per-episode entries
    (None when it agrees)."""
    if agg is None:
        return None
    count_differs, diffs = stale_stats(g, agg)
    parts = []
    if count_differs:
        parts.append(f"it counts {int(g['count'][0])} frame(s), the per-episode statistics {int(agg['count'][0])}")
    if diffs:
        s, (j, gv, av) = next(iter(diffs.items()))
        parts.append(f"{s}[{j}] {gv:.6g} vs {av:.6g}")
    return "; ".join(parts) or None
