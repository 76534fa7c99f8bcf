"""Family X: will these datasets load *together*? Cross-dataset checks of a mixture file.

They run after every dataset of a mixture file has been validated on its own, and only for mixture-file
targets. Each finding goes on the report of the dataset that differs from the rest (the minority of a
disagreement), naming the majority, so a 400-dataset mixture says which entries to fix. What they
compare, after each dataset's OpenTau ``data_features_name_mapping``, is the common sample schema of
:mod:`lerobot_tools.dataset.mixture_schema`, which :class:`~lerobot_tools.loaders.MixtureDataset` also
enforces. Severities follow what a mixture loader does (``docs/mixtures.md``): an error where collate or
normalisation raises, a warning where data silently changes meaning, an info otherwise.

Sources: OpenTau ``datasets/dataset_mixture.py`` (weights, ``HierarchicalSampler``, stats in the
standard data format: a mapped key missing from a dataset's stats raises ``KeyError``), OpenTau
``configs/default.py`` (``DatasetMixtureConfig``: ``weights``, ``action_freq``; ``prompt_substitutions``),
docs/failure-modes.md (#shared-repo-mapping, #missing-robot-type, #per-dataset-tolerance, #prompt-substitutions).
"""

from __future__ import annotations

import math
import unicodedata
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lerobot_tools.checks import catalogue
from lerobot_tools.dataset.mixture import MixtureSpec, read_mixture_spec
from lerobot_tools.dataset.mixture_schema import MixtureSchema, mixture_schema
from lerobot_tools.dataset.model import DEFAULT_FEATURES, STATS_PATH, V2_EPISODES_STATS_PATH, Dataset, iter_jsonl
from lerobot_tools.dataset.targets import Target
from lerobot_tools.errors import DatasetError
from lerobot_tools.findings import DatasetReport, Finding, NotChecked

#: Per-dataset findings after which the dataset's features cannot be trusted for cross-dataset checks.
BLOCKING = {"M001", "M002", "I001", "I002", "I003", "I004"}
STAT_KEYS = ("mean", "std", "min", "max")
IDS = tuple(c for c in catalogue.CATALOGUE if c.startswith("X"))


@dataclass
class _Member:
    pos: int
    target: Target
    report: DatasetReport
    ds: Dataset
    extras: dict = field(default_factory=dict)
    _stats: Any = None
    _stats_read: bool = False

    @property
    def name(self) -> str:
        return self.target.spec

    def stats(self) -> tuple[dict | None, str]:
        """``({feature: stats}, file)``; None when no readable statistics exist."""
        if not self._stats_read:
            self._stats_read = True
            self._stats = _read_stats(self.ds)
        return self._stats


def _read_stats(ds: Dataset) -> tuple[dict | None, str]:
    try:
        stats = ds.read_stats()
    except DatasetError:
        return None, STATS_PATH
    if stats is not None:
        return stats, STATS_PATH
    if ds.layout != "v2" or not (ds.root / V2_EPISODES_STATS_PATH).is_file():
        return None, STATS_PATH
    # v2.1 aggregates per-episode statistics: a feature has stats when every episode line has them
    merged: dict | None = None
    try:
        for _, obj, err in iter_jsonl(ds.root / V2_EPISODES_STATS_PATH, V2_EPISODES_STATS_PATH):
            st = obj.get("stats") if isinstance(obj, dict) else None
            if err or not isinstance(st, dict):
                continue
            merged = dict(st) if merged is None else {k: v for k, v in merged.items() if k in st}
    except DatasetError:
        return None, V2_EPISODES_STATS_PATH
    return merged, V2_EPISODES_STATS_PATH


class _Emitter:
    def __init__(self, options):
        self.select, self.ignore = getattr(options, "select", None), getattr(options, "ignore", set()) or set()

    def enabled(self, check_id: str) -> bool:
        return (self.select is None or check_id in self.select) and check_id not in self.ignore

    def __call__(self, m: _Member, check_id: str, message: str, *, severity: str | None = None,
                 path: str | None = None, **subject: Any) -> None:
        if self.enabled(check_id):
            subj = {k: v for k, v in subject.items() if v is not None}
            m.report.findings.append(Finding(check_id, severity or catalogue.get(check_id).severity, path, message,
                                             subject=subj))


def _names(members: list[_Member], idx: list[int], limit: int = 3) -> str:
    shown = ", ".join(members[i].name for i in idx[:limit])
    return shown + (f" and {len(idx) - limit} more" if len(idx) > limit else "")


def check_mixtures(groups: list[tuple[str, list[Target]]], reports: list[DatasetReport], options) -> None:
    """Run family X on every mixture-file argument; findings are appended to ``reports`` in place.

    Args:
        groups: ``(argument, its resolved targets)`` in the order validated; ``reports`` is parallel to the
            concatenated targets.
        options: the :class:`~lerobot_tools.checks.engine.ValidateOptions` (``select``/``ignore``, ``deep``).
    """
    pos = 0
    for arg, targets in groups:
        part = reports[pos:pos + len(targets)]
        pos += len(targets)
        path = Path(arg).expanduser()
        if len(targets) < 1 or not path.is_file():
            continue
        emit = _Emitter(options)
        if not any(emit.enabled(c) for c in IDS):
            continue
        try:
            spec = read_mixture_spec(path)
        except Exception:  # already read once by target resolution; never fail validate here
            continue
        check_mixture(spec, targets, part, options)


def check_mixture(spec: MixtureSpec, targets: list[Target], reports: list[DatasetReport], options) -> None:
    """Family X over one mixture: ``targets`` (from ``spec``) and their ``reports``, in file order."""
    emit = _Emitter(options)
    members: list[_Member] = []
    for i, (t, r) in enumerate(zip(targets, reports)):
        at = t.entry_index if t.entry_index is not None else i  # identical entries were merged (merge_identical)
        extras = spec.entries[at].extras if at < len(spec.entries) else {}
        if t.root is None or any(f.check in BLOCKING and f.severity == "error" for f in r.findings):
            r.not_checked.append(NotChecked("X (mixture compatibility)", "the dataset or its meta/info.json could "
                                            "not be read; it is left out of the cross-dataset checks"))
            continue
        try:
            ds = Dataset(t.root)
        except DatasetError:
            continue
        members.append(_Member(len(members), t, r, ds, extras))
    if len(members) < 1:
        return
    schema = mixture_schema([(m.ds.features, m.target.feature_mapping) for m in members])
    _features(members, schema, emit)
    _cameras_lost(members, schema, emit)
    _rates(members, spec, options, emit)
    _versions(members, emit)
    _stats(members, schema, emit)
    _tasks(members, emit)
    _weights(members, spec, emit)


# ---------------------------------------------------------------------- X001-X004 features
def _features(members: list[_Member], schema: MixtureSchema, emit: _Emitter) -> None:
    n = len(members)
    for i, roles in schema.missing.items():
        m = members[i]
        own = set((m.target.feature_mapping or {}).keys())
        lacking = [r for r in roles if r not in own]  # a role it maps to an absent column is M003
        if lacking:
            users = [j for j, mm in enumerate(members) if set((mm.target.feature_mapping or {})) & set(lacking)]
            emit(m, "X001", f"the mixture's feature mapping uses {', '.join(map(repr, lacking))} (mapped by "
                 f"{len(users)} of {n} datasets, e.g. {_names(members, users, 2)}) but this dataset maps none of "
                 "them and has no feature of that name: collate raises KeyError on a batch mixing it with the others",
                 feature=lacking if len(lacking) > 1 else lacking[0])
    for name, holders in schema.dropped.items():
        others = [i for i in range(n) if i not in holders]
        minority, has = (holders, True) if len(holders) <= n / 2 else (others, False)
        for i in minority:
            if has:
                msg = (f"feature {name!r} is provided by {len(holders)} of {n} datasets only and no mapping asks "
                       f"for it: mixture batches leave it out (missing from {_names(members, others)})")
            else:
                msg = (f"this dataset lacks {name!r}, which {len(holders)} of {n} datasets provide: mixture "
                       "batches leave it out for every dataset (map it, or add it here)")
            emit(members[i], "X002", msg, feature=name)
    for d in schema.disagreements:
        camera = all(schema.per_dataset[i][d.name].kind == "camera" for idx in d.variants.values() for i in idx)
        cid = "X004" if camera and d.what == "shape" else "X003"
        majority, major_idx = d.majority, d.variants[d.majority]
        for variant, idx in list(d.variants.items())[1:]:
            for i in idx:
                col = schema.per_dataset[i][d.name].column
                alias = f" (its {col!r})" if col != d.name else ""
                if d.what == "dtype":
                    emit(members[i], "X003", f"{d.name!r}{alias} is {variant} here, {majority} in {len(major_idx)} of "
                         f"{n} datasets: batches get float64 or the first sample's dtype depending on the mix and "
                         "the worker (MixtureDataset casts to one dtype)", severity=catalogue.WARNING, feature=d.name)
                elif cid == "X004":
                    emit(members[i], "X004", f"camera {d.name!r}{alias} is {variant} here, {majority} in "
                         f"{len(major_idx)} of {n} datasets (e.g. {_names(members, major_idx, 2)}): collate "
                         "cannot stack frames of different sizes", feature=d.name)
                else:
                    emit(members[i], "X003", f"{d.name!r}{alias} is {_what(d.what, variant)} here, "
                         f"{_what(d.what, majority)} in {len(major_idx)} of {n} datasets (e.g. "
                         f"{_names(members, major_idx, 2)}): collate cannot stack them", feature=d.name)


# ---------------------------------------------------------------------- X012 cameras lost
def _cameras_lost(members: list[_Member], schema: MixtureSchema, emit: _Emitter) -> None:
    """X012: datasets with cameras none of which is common to the mixture, so batches carry none of their images.

    A *loser* has cameras (after its mapping), none common and none a role (a camera the mapping asks for is not
    dropped: a dataset without it is X001, which the loader refuses). Its *culprits* are the datasets that lack
    every one of its cameras (typically: no camera at all). The finding goes where the cause is, once: on each
    culprit when they are no more than the losers (one camera-less dataset in a mixture of 400 with cameras is
    one finding, not 399), else on each loser; the dropped camera features are X002 as well.
    """
    n = len(members)
    if n < 2:
        return
    cams_of = [[name for name, spec in feats.items() if spec.kind == "camera"] for feats in schema.per_dataset]
    losers = [i for i in range(n) if cams_of[i]
              and not any(c in schema.common or c in schema.roles for c in cams_of[i])]
    if not losers:
        return
    lack = {i: [j for j in range(n) if j != i and not any(c in schema.per_dataset[j] for c in cams_of[i])]
            for i in losers}
    culprits = sorted({j for i in losers for j in lack[i]})
    if culprits and len(culprits) <= len(losers):
        for j in culprits:
            lost = [i for i in losers if j in lack[i]]
            names = list(dict.fromkeys(c for i in lost for c in cams_of[i]))
            what = "has no camera" if not cams_of[j] else f"has none of their cameras (its own: {_cams(cams_of[j])})"
            emit(members[j], "X012", f"this dataset {what}, so the mixture's batches carry no camera of {len(lost)} "
                 f"of {n} datasets ({_cams(names)}; e.g. {_names(members, lost, 2)}): the mixture trains without "
                 "their images; map a camera of every dataset to a common role, or leave this dataset out",
                 feature=names if len(names) > 1 else names[0])
        return
    for i in losers:
        others = lack[i] or [j for j in range(n) if j != i and not all(c in schema.per_dataset[j] for c in cams_of[i])]
        why = (f"{len(lack[i])} of {n} datasets have none of them" if lack[i]
               else f"each is missing from some of the {n} datasets")
        emit(members[i], "X012", f"every camera of this dataset ({_cams(cams_of[i])}) is left out of the mixture's "
             f"batches: {why} (e.g. {_names(members, others, 2)}), so the mixture trains without its images; map a "
             "camera of every dataset to a common role", feature=cams_of[i] if len(cams_of[i]) > 1 else cams_of[i][0])


def _cams(names: list[str]) -> str:
    return ", ".join(map(repr, names[:3])) + (f" and {len(names) - 3} more" if len(names) > 3 else "")


def _what(what: str, value: str) -> str:
    return {"shape": f"shape {value}", "kind": f"a {value} feature"}.get(what, value)


# ---------------------------------------------------------------------- X005-X006 rates
def _rates(members: list[_Member], spec: MixtureSpec, options, emit: _Emitter) -> None:
    fps = {m.pos: m.ds.fps for m in members if m.ds.fps is not None}
    if not fps:
        return
    counts = Counter(fps.values())
    if spec.action_freq is None:
        if len(counts) < 2:
            return
        major, k = counts.most_common(1)[0]
        for m in members:
            f = fps.get(m.pos)
            if f is not None and f != major:
                emit(m, "X005", f"fps {f:g} here, {major:g} in {k} of {len(fps)} datasets, and the mixture sets no "
                     "action_freq: delta_timestamps windows cover different numbers of frames and actions mix "
                     "control rates (set action_freq to resample)", key="fps")
        return
    hz = spec.action_freq
    for m in members:
        f = fps.get(m.pos)
        if f is None or math.isclose(f, hz, rel_tol=1e-9):
            continue
        how = f"downsampled by {f / hz:g}x" if f > hz else f"upsampled by {hz / f:g}x, each frame repeated"
        irregular = any(x.check == "D003" for x in m.report.findings)
        if irregular:
            emit(m, "X006", f"resampled from {f:g} fps to action_freq {hz:g} Hz ({how}), but its timestamps are not "
                 "frame_index/fps (D003): resampling by time picks the wrong frames", severity=catalogue.WARNING,
                 key="fps")
        elif f < hz:
            emit(m, "X006", f"resampled from {f:g} fps to action_freq {hz:g} Hz ({how}): the policy sees held "
                 "actions that were never commanded at that rate", severity=catalogue.WARNING, key="fps")
        else:
            checked = "timestamps on the frame grid (checked with --deep)" if options.deep else \
                "timestamps not checked (run with --deep to check they are frame_index/fps)"
            emit(m, "X006", f"resampled from {f:g} fps to action_freq {hz:g} Hz ({how}); {checked}", key="fps")


# ---------------------------------------------------------------------- X007 versions
def _versions(members: list[_Member], emit: _Emitter) -> None:
    versions = Counter(m.ds.codebase_version for m in members)
    if len(versions) < 2:
        return
    major, k = versions.most_common(1)[0]
    summary = ", ".join(f"{v} x{c}" for v, c in versions.most_common())
    for m in members:
        if m.ds.codebase_version != major:
            emit(m, "X007", f"{m.ds.codebase_version} beside {major} in this mixture ({summary}): lrtool and OpenTau "
                 "load both; upstream lerobot >= 0.4 loads v3.0 only", key="codebase_version")


# ---------------------------------------------------------------------- X008 stats
def _stats(members: list[_Member], schema: MixtureSchema, emit: _Emitter) -> None:
    wanted = [n for n, s in schema.common.items() if s.kind in ("numeric", "camera") and n not in DEFAULT_FEATURES]
    if not wanted:
        return
    for m in members:
        stats, where = m.stats()
        per = schema.per_dataset[m.pos]
        if stats is None:
            emit(m, "X008", f"no readable statistics ({where}): normalising the mixture's "
                 f"{', '.join(map(repr, wanted[:4]))}{' ...' if len(wanted) > 4 else ''} fails for this dataset",
                 path=where, feature=wanted)
            continue
        problems, names = [], []
        for name in wanted:
            spec = per[name]
            alias = f" (its {spec.column!r})" if spec.column != name else ""
            entry = stats.get(spec.column)
            lacking = [k for k in STAT_KEYS if not isinstance(entry, dict) or k not in entry]
            if lacking:
                problems.append(f"{name!r}{alias} lacks {'/'.join(lacking)}")
                names.append(spec.column)
                continue
            if spec.kind == "numeric" and spec.shape:
                want = math.prod(spec.shape)
                got = _count_leaves(entry["mean"])
                if got is not None and got != want:
                    problems.append(f"{name!r}{alias} mean has {got} values for shape {list(spec.shape)}")
                    names.append(spec.column)
        if problems:
            emit(m, "X008", f"statistics for the mixture's normalised features are unusable ({'; '.join(problems[:3])}"
                 f"{' ...' if len(problems) > 3 else ''}): aggregating or applying them raises", path=where,
                 feature=names if len(names) > 1 else names[0])


def _count_leaves(v: Any) -> int | None:
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        return 1
    if isinstance(v, list):
        total = 0
        for x in v:
            c = _count_leaves(x)
            if c is None:
                return None
            total += c
        return total
    return None


# ---------------------------------------------------------------------- X009-X010 tasks
def _norm(text: str) -> str:
    return " ".join(unicodedata.normalize("NFKC", text).casefold().split())


def _tasks(members: list[_Member], emit: _Emitter) -> None:
    labels: dict[int, list[str]] = {}
    want_spelling = emit.enabled("X010")
    for m in members:
        subs = m.extras.get("prompt_substitutions")
        if not subs and not want_spelling:
            continue
        try:
            table = m.ds.tasks.labels
        except DatasetError:
            continue  # reported by the task checks (T family)
        labels[m.pos] = table
        if isinstance(subs, dict):
            have = set(table)
            by_norm = {_norm(t): t for t in table}
            for key in subs:
                if key in have:
                    continue
                near = by_norm.get(_norm(str(key)))
                hint = f" (did you mean {near!r}?)" if near is not None else ""
                emit(m, "X009", f"prompt_substitutions key {key!r} is not a task of this dataset{hint}: OpenTau "
                     "raises ValueError for unknown keys", task=str(key))
    if not want_spelling or len(labels) < 2:
        return
    spellings: dict[str, Counter] = {}
    holders: dict[tuple[str, str], list[int]] = {}
    for pos, table in labels.items():
        for t in set(table):
            spellings.setdefault(_norm(t), Counter())[t] += 1
            holders.setdefault((_norm(t), t), []).append(pos)
    for norm, c in spellings.items():
        if len(c) < 2:
            continue
        major, k = c.most_common(1)[0]
        for spelling, _ in c.most_common()[1:]:
            for pos in holders[(norm, spelling)]:
                emit(members[pos], "X010", f"task {spelling!r} is spelled {major!r} in {k} other dataset(s): the "
                     "model sees two prompts for one task", task=spelling)


# ---------------------------------------------------------------------- X011 weights
def _weights(members: list[_Member], spec: MixtureSpec, emit: _Emitter) -> None:
    if not spec.weighted:
        return
    weights = {m.pos: m.target.weight for m in members if m.target.weight is not None}
    if weights and all(w == 0 for w in weights.values()):
        for m in members:
            emit(m, "X011", "every dataset of the mixture has weight 0: the sampler has nothing to draw (OpenTau "
                 "raises ValueError)", severity=catalogue.ERROR, key="weight")
        return
    for m in members:
        if weights.get(m.pos) == 0:
            emit(m, "X011", "weight 0: listed in the mixture but never drawn (remove it, or give it a weight)",
                 key="weight")
