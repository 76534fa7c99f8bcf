"""Family G on metadata alone (:mod:`lerobot_tools.checks.stats.meta`) held to its exact findings: message,
severity, file, group and subject of every G001-G009 finding, the v2.0 / v2.1 / v3.0 paths, the boundaries of each
tolerance (a value just inside raises nothing, just outside is reported), root cause first, and the facts the
metadata pass hands to ``--deep``.

Each dataset is written by :mod:`lerobot_tools.testing.synth` (real parquet, no video files): 3 episodes of 4, 3
and 5 frames (12 frames), ``action`` of 3 and ``observation.state`` of 2 float32 dimensions. Its statistics are then
edited: ``meta/stats.json`` and the v2.1 ``meta/episodes_stats.jsonl`` as JSON, the v3.0 ``stats/<feature>/<stat>``
columns of ``meta/episodes/chunk-000/file-000.parquet`` with pyarrow. Severities: a per-episode entry is a warning,
the statistics a loader normalises with (``stats.json`` for v2.0 / v3.0) an error, a v2.1 ``stats.json`` a warning.

The "canary" recurs: ``meta/stats.json`` re-aggregated from the per-episode statistics, then its ``action`` count
raised by one (13 instead of 12). G008 runs only for features whose every per-episode entry passed, so a G008 that
names exactly ``'action'`` shows that the edited entry counted as sound (its value on the right side of the
tolerance), and its absence that the entry was reported.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from lerobot_tools.checks import counts
from lerobot_tools.checks.context import CheckContext
from lerobot_tools.checks.engine import ValidateOptions
from lerobot_tools.checks.stats import compute, meta
from lerobot_tools.checks.stats.blocks import StatsBlocks
from lerobot_tools.dataset.model import Dataset
from lerobot_tools.testing.synth import SynthSpec, build_dataset
from lerobot_tools.validate import validate

INFO = "meta/info.json"
STATS = "meta/stats.json"
EPS_STATS = "meta/episodes_stats.jsonl"
EPS_V2 = "meta/episodes.jsonl"
EPS_V3 = "meta/episodes/chunk-000/file-000.parquet"
LENGTHS = (4, 3, 5)
CAM = "observation.images.cam"
Q = ("q01", "q10", "q50", "q90", "q99")
EPS32 = float(np.finfo(np.float32).eps)

WHY_V3 = "training normalises with it, so it describes other data than the dataset holds"
WHY_V21 = "lerobot 0.3 ignores it for v2.1, other tools may not"
V21_SOURCE = "the aggregate of meta/episodes_stats.jsonl (what lerobot 0.3 normalises with)"
HAZARD = "MEAN_STD divides by std + 1e-8 and MIN_MAX by 1e-8, so any other value is scaled by ~1e8"
EP_GROUPS = {  # group titles of the per-episode findings
    "G003": "per-episode statistics hold NaN or infinite values",
    "G004": "per-episode statistics entries are incomplete or have the wrong shape",
    "G005": "per-episode statistics contradict themselves",
    "G006": "per-episode statistics have quantiles out of order",
    "G007": "per-episode statistics counts differ from the episode lengths",
}


def _g008(shown: str, n: int, first: str, detail: str, why: str) -> str:
    return (f"meta/stats.json disagrees with the aggregate of the per-episode statistics for {n} feature(s) ({shown}); "
            f"first {first!r}: {detail}. Stale after episodes were added or removed? {why}")


CANARY_DETAIL = "it counts 13 frame(s), the per-episode statistics 12"
CANARY_V3 = ("G008", "warning", STATS, _g008("'action'", 1, "action", CANARY_DETAIL, WHY_V3))
CANARY_V21 = ("G008", "warning", STATS, _g008("'action'", 1, "action", CANARY_DETAIL, WHY_V21))


# ----------------------------------------------------------------------------------------------------- building
def _build(tmp_path: Path, version: str = "v2.1", *, name: str = "ds", hook=None, **spec) -> Path:
    kw = {"episode_lengths": LENGTHS, "state_dim": 2, "action_dim": 3, "video_keys": (), "video_codec": None}
    kw.update(spec)
    return build_dataset(tmp_path / name, SynthSpec(version=version, **kw), episode_hook=hook)


def _v20(tmp_path: Path, **spec) -> Path:
    """A v2.0 dataset: ``meta/stats.json`` only (no per-episode statistics)."""
    root = _build(tmp_path, "v2.1", **spec)
    _edit_json(root / INFO, lambda i: i.update(codebase_version="v2.0"))
    (root / EPS_STATS).unlink()
    return root


def _edit_json(path: Path, fn) -> None:
    obj = json.loads(path.read_text())
    fn(obj)
    path.write_text(json.dumps(obj))


def _edit_v21(root: Path, fn) -> None:
    """``fn(episode_index, stats)`` on every line of ``meta/episodes_stats.jsonl`` (edits ``stats`` in place)."""
    lines = [json.loads(x) for x in (root / EPS_STATS).read_text().splitlines()]
    for obj in lines:
        fn(obj["episode_index"], obj["stats"])
    (root / EPS_STATS).write_text("".join(json.dumps(o) + "\n" for o in lines))


def _set_v21(root: Path, episode: int, feature: str, entry) -> None:
    _edit_v21(root, lambda e, s: s.__setitem__(feature, entry) if e == episode else None)


def _set_v3(root: Path, episode: int, column: str, value) -> None:
    """Set one cell of the v3.0 episodes parquet (the column is added, as list<double>, when absent)."""
    path = root / EPS_V3
    t = pq.read_table(path)
    eps = t.column("episode_index").to_pylist()
    if column in t.column_names:
        i = t.schema.get_field_index(column)
        vals = t.column(column).to_pylist()
        vals[eps.index(episode)] = value
        t = t.set_column(i, t.schema.field(i), pa.array(vals, type=t.schema.field(i).type))
    else:
        vals = [value if e == episode else None for e in eps]
        t = t.append_column(column, pa.array(vals, type=pa.list_(pa.float64())))
    pq.write_table(t, path)


def _set_v3_entry(root: Path, episode: int, feature: str, entry: dict) -> None:
    for stat, value in entry.items():
        _set_v3(root, episode, f"stats/{feature}/{stat}", value)


def _per_episode(root: Path) -> dict[str, list[dict]]:
    """feature -> the per-episode entries as arrays, in episode order (either layout)."""
    per: dict[str, list[dict]] = {}
    if (root / EPS_V3).exists():
        t = pq.read_table(root / EPS_V3)
        for i in range(t.num_rows):
            entry: dict[str, dict] = {}
            for c in t.column_names:
                if c.startswith("stats/"):
                    feat, _, stat = c[6:].rpartition("/")
                    if t.column(c)[i].as_py() is not None:
                        entry.setdefault(feat, {})[stat] = np.asarray(t.column(c)[i].as_py(), dtype=float)
            for feat, e in entry.items():
                per.setdefault(feat, []).append(e)
    else:
        for line in (root / EPS_STATS).read_text().splitlines():
            for feat, e in json.loads(line)["stats"].items():
                per.setdefault(feat, []).append({k: np.asarray(v, dtype=float) for k, v in e.items()})
    return per


def _aggregate(root: Path) -> dict[str, dict]:
    return {f: compute.aggregate_feature_stats(es) for f, es in _per_episode(root).items()}


def _reaggregate(root: Path, *, canary: bool = True) -> None:
    """``meta/stats.json`` := the aggregate of the per-episode statistics; with ``canary``, 'action' counts 13."""
    stats = {f: {k: np.asarray(v).tolist() for k, v in agg.items()} for f, agg in _aggregate(root).items()}
    if canary:
        stats["action"]["count"] = [13]
    (root / STATS).write_text(json.dumps(stats))


# ----------------------------------------------------------------------------------------------------- running
def _report(root: Path, **opts):
    (r,) = validate([str(root)], ValidateOptions(**opts))
    return r


def _g(root: Path, **opts) -> list[tuple]:
    """``(check, severity, path, message)`` of every G finding of the engine's (grouped) report."""
    return [(f.check, f.severity, f.path, f.message) for f in _report(root, **opts).findings if f.check.startswith("G")]


def _run(root: Path, **opts) -> CheckContext:
    """Families C (episode metadata) and G-metadata on their own: the findings before grouping, and the facts."""
    ctx = CheckContext(None, ValidateOptions(**opts), None)
    ctx.dataset = Dataset(root)
    counts.run_metadata(ctx)
    meta.run(ctx)
    return ctx


def _found(ctx: CheckContext) -> list[tuple]:
    """``(check, severity, path, message, group, subject)`` of every G finding, ungrouped, in emission order."""
    return [(f.check, f.severity, f.path, f.message, f.group, f.subject) for f in ctx.findings
            if f.check.startswith("G")]


#: a v2.1 per-episode entry that lerobot 0.3.3 cannot aggregate at load is an error, and says why
AGGREGATE_RAISES = " (lerobot 0.3.3 aggregates the per-episode statistics at load: aggregate_stats raises)"


def _ep(check: str, episode: int, message: str, *, path: str = EPS_V3, feature: str = "action", **extra) -> tuple:
    """An ungrouped per-episode finding (warning) as :func:`_found` lists it; a v2.1 G004 is an error (lerobot 0.3.3
    aggregates ``meta/episodes_stats.jsonl`` when it loads the dataset, and ``aggregate_stats`` raises on it)."""
    subject = {**extra, "feature": feature, "episode": episode}
    if check == "G004" and path == EPS_STATS:
        return (check, "error", path, f"episode {episode}: {message}{AGGREGATE_RAISES}", EP_GROUPS[check], subject)
    return (check, "warning", path, f"episode {episode}: {message}", EP_GROUPS[check], subject)


def _hazard(episode: int | None, dims: str, value: str, *, feature: str = "action", path: str = EPS_V3,
            severity: str = "info", prefix: str | None = None) -> tuple:
    """A G009 finding: per episode (``episode`` given) or over the whole dataset."""
    if episode is not None:
        return ("G009", severity, path, f"episode {episode}: {feature!r} dimension(s) [{dims}] are constant in this "
                f"episode (value {value}): {HAZARD}", f"{feature!r} has constant dimensions in some episodes",
                {"feature": feature, "episode": episode})
    lead = f"{prefix}: " if prefix else ""
    return ("G009", severity, path, f"{lead}{feature!r} dimension(s) [{dims}] are constant over the whole dataset "
            f"(value {value}): {HAZARD}", f"{feature!r} has constant dimensions", {"feature": feature})


# ----------------------------------------------------------------------------------------------------- entries
#: a hand-made ``action`` dimension: 0..2, mean 1, a plausible std, ordered quantiles
BASE_DIM = {"min": 0.0, "max": 2.0, "mean": 1.0, "std": 0.9,
            "q01": 0.02, "q10": 0.2, "q50": 1.0, "q90": 1.8, "q99": 1.98}


def _const(v: float) -> dict:
    return {"min": v, "max": v, "mean": v, "std": 0.0, **{q: v for q in Q}}


def _entry(n: int, dim1: dict | None = None, *, quantiles: bool = True) -> dict:
    """A 3-dimensional ``action`` entry of ``n`` frames: dimensions 0 and 2 are :data:`BASE_DIM`, dimension 1 is
    :data:`BASE_DIM` updated with ``dim1``."""
    d1 = {**BASE_DIM, **(dim1 or {})}
    stats = ("min", "max", "mean", "std", *(Q if quantiles else ()))
    out: dict = {s: [BASE_DIM[s], d1[s], BASE_DIM[s]] for s in stats}
    out["count"] = [n]
    return out


def _slack(n: int, scale: float) -> float:
    """The documented order slack: float32 rounding of the data and of a float32 mean over n values."""
    return (1e-6 + 16.0 * math.sqrt(n) * EPS32) * scale + 1e-12


def _round_std(scale: float) -> float:
    return 4 * EPS32 * scale + 1e-12


# ============================================================================================ pure helpers
def test_label_names_the_statistic_and_the_dimension():
    assert meta._label("action", "std", 3) == "'action'.std[3]"
    assert meta._label("action", "std", 0) == "'action'.std[0]"
    assert meta._label("action", "std") == "'action'.std"
    assert meta._label("observation.state", "q50", 12) == "'observation.state'.q50[12]"


def _agg(**over) -> dict:
    """A 3-dimensional aggregate: scales (max |min|, |max|) 4, 1, 0.5; std 1, 0.25, 0.1."""
    base = {"min": [-2.0, 0.0, 0.5], "max": [4.0, 1.0, 0.5], "mean": [1.0, 0.5, 0.5], "std": [1.0, 0.25, 0.1],
            "count": [10]}
    base.update(over)
    return {k: np.asarray(v, dtype=np.int64 if k == "count" else np.float64) for k, v in base.items()}


def test_stale_stats_identical_entries_and_counts():
    assert meta.stale_stats(_agg(), _agg()) == (False, {})
    assert meta.stale_stats(_agg(count=[11]), _agg()) == (True, {})
    assert meta.stale_stats(_agg(), _agg(count=[9])) == (True, {})
    zeros = {"min": [0.0], "max": [0.0], "mean": [0.0], "std": [0.0], "count": [1]}
    assert meta.stale_stats(_agg(**zeros), _agg(**zeros)) == (False, {})


@pytest.mark.parametrize("stat,dim,tol", [
    ("min", 0, 4e-4),    # 1e-4 of the magnitude (4) only: min/max come from the same values
    ("max", 0, 4e-4),
    ("mean", 0, 5e-4),   # 1e-4 of (magnitude + std) = 1e-4 * (4 + 1)
    ("std", 0, 5e-4),
    ("min", 1, 1e-4),
    ("mean", 1, 1.25e-4),  # 1e-4 * (1 + 0.25)
    ("std", 2, 6e-5),      # 1e-4 * (0.5 + 0.1)
    ("max", 2, 5e-5),
])
def test_stale_stats_relative_tolerance_per_statistic(stat, dim, tol):
    agg = _agg()
    for factor, reported in ((0.9, False), (1.1, True)):
        g = _agg()
        g[stat] = g[stat].copy()
        g[stat][dim] += factor * tol
        count_differs, diffs = meta.stale_stats(g, agg)
        assert count_differs is False
        if reported:
            assert diffs == {stat: (dim, float(g[stat][dim]), float(agg[stat][dim]))}
        else:
            assert diffs == {}


def test_stale_stats_reports_the_first_differing_dimension_of_each_statistic():
    g = _agg(min=[-2.0, 0.5, 0.0], std=[1.0, 0.25, 0.3], mean=[2.0, 0.5, 0.5])
    count_differs, diffs = meta.stale_stats(g, _agg())
    assert count_differs is False
    assert diffs == {"min": (1, 0.5, 0.0), "mean": (0, 2.0, 1.0), "std": (2, 0.3, 0.1)}
    assert list(diffs) == ["min", "mean", "std"]


def test_stale_stats_shape_mismatch_and_the_absolute_floor():
    count_differs, diffs = meta.stale_stats(_agg(mean=[1.0, 0.5], std=[1.0, 0.25, 0.5]), _agg())
    assert count_differs is False and list(diffs) == ["mean", "std"]  # the statistics after it are still compared
    j, gv, av = diffs["mean"]
    assert j == 0 and math.isnan(gv) and math.isnan(av)
    assert diffs["std"] == (2, 0.5, 0.1)
    zeros = {"min": [0.0], "max": [0.0], "mean": [0.0], "std": [0.0], "count": [1]}
    assert meta.stale_stats(_agg(**{**zeros, "mean": [5e-13]}), _agg(**zeros)) == (False, {})
    assert meta.stale_stats(_agg(**{**zeros, "mean": [3e-12]}), _agg(**zeros)) == (False, {"mean": (0, 3e-12, 0.0)})


def test_stale_stats_camera_channels_are_held_to_their_own_magnitude():
    # (3, 1, 1) camera statistics; channel magnitudes 1, 0.1, 0.5: the min of channel 2 is off by 7e-5, over its
    # own tolerance (5e-5) but under channel 0's (1e-4)
    def cam(mins):
        return {"min": np.asarray(mins).reshape(3, 1, 1), "max": np.asarray([1.0, 0.1, 0.5]).reshape(3, 1, 1),
                "mean": np.full((3, 1, 1), 0.05), "std": np.zeros((3, 1, 1)), "count": np.asarray([100])}

    agg = cam([0.0, 0.0, 0.0])
    assert meta.stale_stats(cam([0.0, 0.0, 0.0]), agg) == (False, {})
    assert meta.stale_stats(cam([0.0, 0.0, 7e-5]), agg) == (False, {"min": (2, 7e-5, 0.0)})
    assert meta.stale_stats(cam([0.0, 0.0, 4e-5]), agg) == (False, {})


# ============================================================================================ G001
def test_g001_v3_without_stats_json_and_the_per_episode_checks_still_run(tmp_path):
    root = _build(tmp_path, "v3.0")
    (root / STATS).unlink()
    _set_v3(root, 1, "stats/action/mean", [0.0, math.nan, 0.0])
    ctx = _run(root)
    assert _found(ctx) == [
        ("G001", "warning", STATS, "meta/stats.json is missing: no normalisation statistics", None, {}),
        _ep("G003", 1, "'action'.mean[1] is not finite", key="mean"),
    ]
    assert ctx.stats_facts.global_source is None and ctx.stats_facts.global_stats == {}


def test_g001_v20_without_stats_json(tmp_path):
    root = _v20(tmp_path)
    (root / STATS).unlink()
    assert _g(root) == [("G001", "warning", STATS, "meta/stats.json is missing: no normalisation statistics")]


V21_NEEDS = ("lerobot 0.3.3 reads it for every v2.1 dataset (load_episodes_stats) and raises FileNotFoundError")


def test_g001_v21_needs_the_per_episode_statistics_not_stats_json(tmp_path):
    root = _build(tmp_path)
    (root / STATS).unlink()  # lerobot 0.3 writes no stats.json for v2.1: it aggregates the per-episode ones
    ctx = _run(root)
    assert _found(ctx) == []
    assert ctx.stats_facts.global_source == V21_SOURCE
    (root / EPS_STATS).unlink()  # and it cannot load a v2.1 dataset without them
    assert _g(root) == [("G001", "error", EPS_STATS, f"{EPS_STATS} is missing (and {STATS} is missing too): "
                         f"{V21_NEEDS}")]


def test_g001_v21_stats_json_without_per_episode_statistics_is_checked_against_total_frames(tmp_path):
    root = _build(tmp_path)
    (root / EPS_STATS).unlink()
    g001 = ("G001", "error", EPS_STATS,
            f"{EPS_STATS} is missing ({STATS} exists but is not read for v2.1): {V21_NEEDS}", None,
            {"file_kind": "episodes_stats"})
    assert _found(_run(root)) == [g001]
    _edit_json(root / STATS, lambda s: s["action"].update(count=[11]))
    ctx = _run(root)
    assert _found(ctx) == [g001, ("G007", "warning", STATS, "'action'.count is 11 but total_frames is 12",
                                  "stats.json counts differ from total_frames", {"feature": "action", "key": "count"})]
    assert ctx.stats_facts.reader is None and ctx.stats_facts.global_source is None


@pytest.mark.parametrize("text,message,subject", [
    ("{not json}", "statistics file is not valid JSON: Expecting property name enclosed in double quotes at line 1 "
                   "column 2", {}),
    ('{"action": {"min": [1', "statistics file is truncated: the JSON document stops before its closing bracket "
                              "(21 B on disk, a partial download or an interrupted write)", {"file_kind": "stats"}),
    ("[1, 2]", "must hold a JSON object", {}),
], ids=["invalid", "truncated", "not-an-object"])
def test_g001_unreadable_stats_json_is_an_error_and_the_per_episode_checks_go_on(tmp_path, text, message, subject):
    root = _build(tmp_path, "v3.0")
    (root / STATS).write_text(text)
    _set_v3(root, 2, "stats/action/std", [1.0, -1.0, 1.0])
    ctx = _run(root)
    found = _found(ctx)
    assert found[0] == ("G001", "error", STATS, f"{message} (the file exists, so lerobot's load_stats parses it and "
                        "raises)", None, subject)
    assert [f[:3] for f in found[1:]] == [("G005", "warning", EPS_V3)]
    assert found[1][3].startswith("episode 2: 'action'.std[1] = -1 is negative")
    assert ctx.stats_facts.reader is not None and ctx.stats_facts.global_source is None


def test_g001_unreadable_stats_json_of_v20_stops_there(tmp_path):
    root = _v20(tmp_path)
    (root / STATS).write_text("[1, 2]")
    assert _g(root) == [("G001", "error", STATS, "must hold a JSON object (the file exists, so lerobot's load_stats "
                         "parses it and raises)")]


def test_g001_stats_json_placeholder_is_reported_as_what_it_is(tmp_path):
    root = _build(tmp_path, "v3.0")
    (root / STATS).write_text("version https://git-lfs.github.com/spec/v1\noid sha256:" + "a" * 64 + "\nsize 123\n")
    r = _report(root)
    assert [(f.check, f.path, f.subject) for f in r.findings if f.path == STATS] == \
        [("F004", STATS, {"file_kind": "stats"})]
    assert [f for f in r.findings if f.check.startswith("G")] == []


def test_g001_truncated_episodes_stats_of_v21_is_an_error(tmp_path):
    root = _build(tmp_path)
    text = (root / EPS_STATS).read_text()
    (root / EPS_STATS).write_text(text[:-30])
    _edit_json(root / STATS, lambda s: s["action"].update(count=[13]))  # stale, but nothing to compare it with
    ctx = _run(root)
    found = _found(ctx)
    assert found[0][:3] + found[0][4:] == ("G001", "error", EPS_STATS, None, {"file_kind": "episodes_stats"})
    assert found[0][3].startswith("per-episode statistics file is truncated: its last line is cut off (")
    assert found[0][3].endswith(" on disk, a partial download or an interrupted write) (the v2.1 loader reads it to "
                                "build the statistics and raises)")
    assert found[1:] == [
        ("G007", "warning", STATS, "'action'.count is 13 but total_frames is 12",
         "stats.json counts differ from total_frames", {"feature": "action", "key": "count"}),
    ]
    assert ctx.stats_facts.reader is None and ctx.not_checked == []
    (root / STATS).unlink()  # no "neither file exists": the per-episode file exists, and is reported
    assert [f[0] for f in _found(_run(root))] == ["G001"]


def test_g001_episodes_stats_placeholder_is_reported_as_what_it_is(tmp_path):
    root = _build(tmp_path)
    (root / EPS_STATS).write_text("version https://git-lfs.github.com/spec/v1\noid sha256:" + "a" * 64 + "\nsize 123\n")
    r = _report(root)
    assert [(f.check, f.path, f.subject) for f in r.findings if f.path == EPS_STATS] == \
        [("F004", EPS_STATS, {"file_kind": "episodes_stats"})]
    assert [f for f in r.findings if f.check.startswith("G")] == []


def test_g001_v20_does_not_sniff_episodes_stats_it_never_loads(tmp_path):
    # v2.0 loaders do not read meta/episodes_stats.jsonl: a truncated one is not the loader-stopping error, only
    # lines that cannot be read
    root = _build(tmp_path)
    _edit_json(root / INFO, lambda i: i.update(codebase_version="v2.0"))
    text = (root / EPS_STATS).read_text()
    (root / EPS_STATS).write_text(text[:-30])
    found = _found(_run(root))
    assert [f[:3] for f in found] == [("G001", "warning", EPS_STATS), ("G001", "warning", EPS_STATS)]
    assert found[0][3].startswith("line 3 is not valid JSON (")
    assert found[0][4] == "per-episode statistics cannot be read"
    assert found[1][3:] == ("1 episode(s) have no per-episode statistics (first: episode 2)", None, {})


def test_g001_unreadable_lines_and_episodes_without_statistics(tmp_path):
    def hook(ep, cols):
        cols["action"][:, 1] = 7.5

    root = _build(tmp_path, hook=hook)
    lines = (root / EPS_STATS).read_text().splitlines()
    (root / EPS_STATS).write_text("\n".join([lines[0], "{oops", lines[2]]) + "\n")
    _edit_json(root / STATS, lambda s: s["action"].update(count=[13]))
    ctx = _run(root)
    # incomplete per-episode statistics: no G008, no aggregate (nor its G009); the readable episodes are checked
    assert _found(ctx) == [
        _hazard(0, "1", "7.5", path=EPS_STATS),
        _hazard(2, "1", "7.5", path=EPS_STATS),
        ("G001", "warning", EPS_STATS, "line 2 is not valid JSON (Expecting property name enclosed in double quotes)",
         "per-episode statistics cannot be read", {}),
        ("G001", "warning", EPS_STATS, "1 episode(s) have no per-episode statistics (first: episode 1)", None, {}),
    ]
    assert ctx.stats_facts.global_source is None and ctx.stats_facts.global_stats == {}
    (root / EPS_STATS).write_text(lines[1] + "\n")
    assert _found(_run(root)) == [
        _hazard(1, "1", "7.5", path=EPS_STATS),
        ("G001", "warning", EPS_STATS, "2 episode(s) have no per-episode statistics (first: episode 0)", None, {}),
    ]


def test_g001_an_unreadable_line_leaves_the_statistics_incomplete(tmp_path):
    # every episode has its line, but one more line cannot be read: no G008, no aggregate
    root = _build(tmp_path, hook=_constant_action)
    lines = (root / EPS_STATS).read_text().splitlines()
    (root / EPS_STATS).write_text("\n".join([lines[0], "[1, 2]", *lines[1:]]) + "\n")
    _edit_json(root / STATS, lambda s: s["action"].update(count=[13]))
    ctx = _run(root)
    assert _found(ctx) == [
        *[_hazard(e, "1", "7.5", path=EPS_STATS) for e in (0, 1, 2)],
        ("G001", "warning", EPS_STATS, "line 2 has no integer episode_index and stats object",
         "per-episode statistics cannot be read", {}),
    ]
    assert ctx.stats_facts.global_source is None


def test_g001_line_without_an_episode_index(tmp_path):
    root = _build(tmp_path)
    lines = (root / EPS_STATS).read_text().splitlines()
    lines[1] = '{"episode_index": "1", "stats": {}}'
    (root / EPS_STATS).write_text("\n".join(lines) + "\n")
    assert _g(root) == [
        ("G001", "warning", EPS_STATS, "line 2 has no integer episode_index and stats object"),
        ("G001", "warning", EPS_STATS, "1 episode(s) have no per-episode statistics (first: episode 1)"),
    ]


def test_v3_unreadable_episode_metadata_skips_the_per_episode_checks(tmp_path):
    root = _build(tmp_path, "v3.0")
    path = root / EPS_V3
    path.write_bytes(path.read_bytes()[:-100])
    _edit_json(root / STATS, lambda s: s["action"].update(count=[11]))
    r = _report(root)
    assert [(f.check, f.severity, f.path, f.message) for f in r.findings if f.check.startswith("G")] == [
        ("G007", "warning", STATS, "'action'.count is 11 but total_frames is 12")]
    notes = [(n.checks, n.reason) for n in r.not_checked]
    assert ("G003-G008 per episode", "the episode metadata could not be read") in notes


def test_v21_unreadable_episode_metadata_still_checks_the_per_episode_statistics(tmp_path):
    # no episode lengths: no G007 per episode, and the aggregate weighs each episode by its stored count
    root = _build(tmp_path)
    (root / EPS_V2).write_text((root / EPS_V2).read_text()[:-10])
    _set_v21(root, 1, "action", _entry(9, {"std": 0.9}, quantiles=False))
    _set_v21(root, 2, "observation.state", {"min": [0.0, 0.0], "max": [1.0, 1.0], "mean": [0.5, 0.5], "std": [-1.0, 0.5],
                                            "count": [5]})
    _reaggregate(root, canary=False)  # by the stored counts: 4 + 9 + 5
    ctx = _run(root)
    assert ctx.episodes_ok is False
    assert _found(ctx) == [_ep("G005", 2, "'observation.state'.std[0] = -1 is negative (and 1 more)", path=EPS_STATS,
                               feature="observation.state")]
    assert [n.checks for n in ctx.not_checked if n.checks.startswith("G")] == []


# ============================================================================================ G002
def test_g002_undeclared_feature_per_episode_v21_only_where_present(tmp_path):
    root = _build(tmp_path)
    _set_v21(root, 0, "observation.ghost", {"mean": "oops"})  # unreadable, still there
    _set_v21(root, 2, "observation.ghost", {"mean": [1.0]})
    assert _found(_run(root)) == [
        ("G002", "warning", EPS_STATS, f"episode {e}: statistics for 'observation.ghost', which is not a declared feature",
         "per-episode stats describe undeclared features", {"feature": "observation.ghost", "episode": e}) for e in (0, 2)]


def test_g002_undeclared_feature_per_episode_v3_and_in_stats_json(tmp_path):
    root = _build(tmp_path, "v3.0")
    _set_v3(root, 1, "stats/ghost/mean", [1.0, 2.0])
    _edit_json(root / STATS, lambda s: s.update(phantom={"min": [0.0]}))
    assert _found(_run(root)) == [
        ("G002", "warning", EPS_V3, "episode 1: statistics for 'ghost', which is not a declared feature",
         "per-episode stats describe undeclared features", {"feature": "ghost", "episode": 1}),
        ("G002", "warning", STATS, "stats for 'phantom', which is not a declared feature",
         "stats describe undeclared features", {"feature": "phantom"}),
    ]


def test_text_features_have_no_statistics_to_check(tmp_path):
    # a string feature: whatever its stored statistics hold, nothing is reported (nor its absence)
    root = _build(tmp_path)
    _edit_json(root / INFO, lambda i: i["features"].update(note={"dtype": "string", "shape": [1], "names": None}))
    bad = {"min": [5.0], "max": [1.0], "mean": [9.0], "std": [-1.0], "count": [99]}
    _set_v21(root, 1, "note", bad)
    _edit_json(root / STATS, lambda s: s.update(note=bad))
    assert _g(root) == []


# ============================================================================================ G003
def test_g003_per_episode_first_non_finite_value_and_nothing_else_about_the_entry(tmp_path):
    root = _build(tmp_path)
    # max[1] infinite and max[2] NaN: the first is named; the negative std is not reported too: root cause first
    _edit_v21(root, lambda e, s: s["action"].update(max=[1.0, math.inf, math.nan], std=[-1.0, -1.0, -1.0])
              if e == 2 else None)
    _edit_json(root / STATS, lambda s: s["action"].update(count=[13]))  # stale, but 'action' is not compared
    ctx = _run(root)
    assert _found(ctx) == [_ep("G003", 2, "'action'.max[1] is not finite", path=EPS_STATS, key="max")]
    assert ctx.stats_facts.untrusted == {(2, "action")}
    assert "action" not in ctx.stats_facts.global_stats  # the v2.1 aggregate of an untrusted feature is not trusted
    assert set(ctx.stats_facts.global_stats) == {"observation.state", "timestamp", "frame_index", "episode_index",
                                                 "index", "task_index"}


def test_g003_v3_per_episode_and_global(tmp_path):
    root = _build(tmp_path, "v3.0")
    _set_v3(root, 0, "stats/observation.state/std", [0.5, math.inf])
    _edit_json(root / STATS, lambda s: s["action"].update(std=[1.0, 1.0, math.inf]))
    ctx = _run(root)
    assert _found(ctx) == [
        _ep("G003", 0, "'observation.state'.std[1] is not finite", feature="observation.state", key="std"),
        ("G003", "error", STATS, "'action'.std[2] is not finite", "statistics hold NaN or infinite values",
         {"key": "std", "feature": "action"}),
    ]
    assert ctx.stats_facts.untrusted == {(0, "observation.state"), (None, "action")}
    assert "action" not in ctx.stats_facts.global_stats and "observation.state" in ctx.stats_facts.global_stats


def test_g003_v21_stats_json_is_a_warning(tmp_path):
    root = _build(tmp_path)
    _edit_json(root / STATS, lambda s: s["action"].update(mean=[math.nan, 0.0, 0.0]))
    assert _found(_run(root)) == [("G003", "warning", STATS, "'action'.mean[0] is not finite",
                                   "statistics hold NaN or infinite values", {"key": "mean", "feature": "action"})]


# ============================================================================================ G004
@pytest.mark.parametrize("edit,message", [
    (lambda a: a.update(mean="oops"), "'action'.mean is not a rectangular list of numbers"),
    (lambda a: a.update(mean=[[1.0, 2.0], [3.0]]), "'action'.mean is not a rectangular list of numbers"),
    (lambda a: a.update(count=[3.5]), "'action'.count is not a list of whole numbers below 2**63"),
    (lambda a: a.update(count=[10**30]), "'action'.count is not a list of whole numbers below 2**63"),
    (lambda a: a.update(count=[2**63]), "'action'.count is not a list of whole numbers below 2**63"),
    (lambda a: (a.pop("std"), a.pop("count")), "'action' lacks std, count"),
    (lambda a: a.pop("min"), "'action' lacks min"),
    (lambda a: a.update(count=[3, 3]), "'action'.count has shape (2,), lerobot requires (1,)"),
    (lambda a: a.update(min=[0.0, 1.0]), "'action'.min has shape (2,), expected (3,) for a feature of shape (3,)"),
    (lambda a: a.update(q50=[[0.0, 1.0, 2.0]]), "'action'.q50 has shape (1, 3), expected (3,) for a feature of shape (3,)"),
    (lambda a: a.update(mean="oops", max=[1.0], std=[1.0]),
     "'action'.mean is not a rectangular list of numbers (and 2 more)"),
    (lambda a: (a.pop("count"), a.update(std=[1.0])), "'action' lacks count (and 1 more)"),
], ids=["unreadable", "ragged", "count-fraction", "count-huge", "count-2-63", "lacks-two", "lacks-min", "count-shape",
        "shape", "quantile-shape", "three-problems", "missing-then-shape"])
def test_g004_per_episode_v21(tmp_path, edit, message):
    root = _build(tmp_path)
    _edit_v21(root, lambda e, s: edit(s["action"]) if e == 1 else None)
    ctx = _run(root)
    assert _found(ctx) == [_ep("G004", 1, message, path=EPS_STATS)]
    assert ctx.stats_facts.untrusted == {(1, "action")}


def test_g004_every_entry_of_the_wrong_length(tmp_path):
    # every episode's 'action' statistics have 2 dimensions instead of 3: each entry is reported
    root = _build(tmp_path)
    _edit_v21(root, lambda e, s: s["action"].update({k: v[:2] for k, v in s["action"].items() if k != "count"}))
    assert _found(_run(root)) == [_ep("G004", e, "'action'.max has shape (2,), expected (3,) for a feature of shape (3,) "
                                      "(and 3 more)", path=EPS_STATS) for e in (0, 1, 2)]


def test_g004_is_the_only_finding_about_a_malformed_entry(tmp_path):
    # wrong shape and a mean far outside [min, max] and a wrong count: the shape is reported, nothing else; the
    # feature is left out of G008 (the canary names no feature) and of the aggregate
    root = _build(tmp_path)
    _set_v21(root, 1, "action", {"min": [0.0, 0.0], "max": [1.0, 1.0, 1.0], "mean": [50.0, 50.0, 50.0],
                                 "std": [1.0, 1.0, 1.0], "count": [99]})
    _edit_json(root / STATS, lambda s: s["action"].update(count=[13]))
    assert _g(root) == [("G004", "error", EPS_STATS, "episode 1: 'action'.min has shape (2,), expected (3,) for a "
                         "feature of shape (3,)" + AGGREGATE_RAISES)]


def test_g004_per_episode_v3_row_of_another_shape(tmp_path):
    root = _build(tmp_path, "v3.0")
    _set_v3(root, 2, "stats/action/max", [1.0, 2.0])
    _set_v3(root, 0, "stats/observation.state/count", [4, 4])
    assert _found(_run(root)) == [
        _ep("G004", 2, "'action'.max has shape (2,), expected (3,) for a feature of shape (3,)"),
        _ep("G004", 0, "'observation.state'.count has shape (2,), lerobot requires (1,)", feature="observation.state"),
    ]


def test_g004_per_episode_block_without_a_base_statistic(tmp_path):
    # no episode has a std for 'action': every entry is reported (grouped: one finding, 3 occurrences)
    root = _build(tmp_path, "v3.0")
    t = pq.read_table(root / EPS_V3)
    pq.write_table(t.drop_columns(["stats/action/std"]), root / EPS_V3)
    ctx = _run(root)
    assert _found(ctx) == [_ep("G004", e, "'action' lacks std") for e in (0, 1, 2)]
    assert ctx.stats_facts.untrusted == {(0, "action"), (1, "action"), (2, "action")}
    assert _g(root) == [("G004", "warning", EPS_V3, "episode 0: 'action' lacks std (3 occurrences: per-episode statistics "
                         f"entries are incomplete or have the wrong shape, for episodes 0-2; e.g. {EPS_V3})")]


@pytest.mark.parametrize("episodes", [(1,), (0, 1, 2)], ids=["one", "every"])
def test_g004_v21_per_episode_entry_that_is_not_an_object(tmp_path, episodes):
    # the entry of one episode (or of every episode, so the block has no statistics' names at all) is a number:
    # G004 for each such episode, nothing derived from it (no G008 from an aggregate that misses them), no crash
    root = _build(tmp_path)
    _edit_v21(root, lambda e, s: s.__setitem__("action", 5) if e in episodes else None)
    ctx = _run(root)
    assert _found(ctx) == [_ep("G004", e, "the 'action' entry is not an object of statistics", path=EPS_STATS)
                           for e in episodes]
    assert {(e, "action") for e in episodes} <= ctx.stats_facts.untrusted


@pytest.mark.parametrize("feature,entry,message", [
    ("action", 5, "the 'action' entry is not an object of statistics"),
    (CAM, {"min": [0.1, 0.2, 0.3], "max": [[[1.0]]] * 3, "mean": [[[0.5]]] * 3, "std": [[[0.2]]] * 3, "count": [12]},
     f"'{CAM}'.min has shape (3,), expected (3, 1, 1) for a camera: normalising a (B, 3, H, W) batch with it raises a "
     "size mismatch (lerobot 0.4.4 normalize_processor: (x - mean) / std)"),
    ("observation.grid", {"min": [0.0] * 4, "max": [1.0] * 3, "mean": [0.5] * 3, "std": [0.3] * 3, "count": [12]},
     "'observation.grid'.min has shape (4,), expected (2, 3) or (3,) for a feature of shape (2, 3)"),
], ids=["not-an-object", "camera", "rank-2"])
def test_g004_stats_json_is_an_error(tmp_path, feature, entry, message):
    root = _build(tmp_path, "v3.0", video_keys=(CAM,))
    _edit_json(root / INFO, lambda i: i["features"].update({"observation.grid": {"dtype": "float32", "shape": [2, 3],
                                                                                 "names": None}}))
    ok_grid = {"min": [0.0] * 3, "max": [1.0] * 3, "mean": [0.5] * 3, "std": [0.3] * 3, "count": [12]}
    _edit_json(root / STATS, lambda s: s.update({"observation.grid": ok_grid}))
    assert _g(root) == []  # statistics over the last axis of a rank-2 feature, as lerobot 0.4 writes them
    _edit_json(root / STATS, lambda s: s.update({feature: entry}))
    ctx = _run(root)
    assert _found(ctx) == [("G004", "error", STATS, message, "statistics entries are incomplete or have the wrong shape",
                            {"feature": feature})]
    assert ctx.stats_facts.untrusted == {(None, feature)} and feature not in ctx.stats_facts.global_stats


def test_g004_stats_json_without_count_is_a_warning_and_still_checked(tmp_path):
    # lerobot 0.4.4 normalises with mean/std/min/max as stored; only aggregate_stats (merging, recording more
    # episodes) reads count: a warning, and the entry's values are checked all the same (here: G008, they are not
    # the data's; and G005 with the frame count of total_frames standing in for the missing count)
    root = _build(tmp_path, "v3.0")
    _edit_json(root / STATS, lambda s: s["action"].pop("count"))
    ctx = _run(root)
    assert _found(ctx) == [("G004", "warning", STATS, "'action' lacks count (only lerobot's aggregate_stats reads "
                            "count, when datasets are merged or episodes are recorded into it; loading does not)",
                            None, {"feature": "action"})]
    assert "action" in ctx.stats_facts.global_stats and (None, "action") not in ctx.stats_facts.untrusted
    _edit_json(root / STATS, lambda s: s["action"].update(std=[5.0, 5.0, 5.0]))
    assert [f[0] for f in _found(_run(root))] == ["G005", "G004"]  # the count is said once, after the entries
    # several entries without count: one finding naming them (one cause, the writer left count out)
    _edit_json(root / STATS, lambda s: [v.pop("count", None) for v in s.values()])
    (g004,) = [f for f in _found(_run(root)) if f[0] == "G004"]
    assert g004[3].startswith("'action' lacks count; so do 'observation.state', 'timestamp', 'frame_index' ...") \
        and g004[1] == "warning" and len(g004[5]["feature"]) == 7


def test_g004_entries_whose_statistics_disagree_on_the_shape(tmp_path):
    # each statistic has a shape lerobot writes for a rank-2 feature ((2, 3) or (3,)), but not the same one: they
    # cannot be compared (min <= mean <= max) nor combined
    root = _build(tmp_path, "v3.0")
    _edit_json(root / INFO, lambda i: i["features"].update({"observation.grid": {"dtype": "float32", "shape": [2, 3],
                                                                                 "names": None}}))
    grid = {"min": [0.0] * 3, "max": [1.0] * 3, "mean": [0.5] * 3, "std": [0.3] * 3, "count": [12]}
    _edit_json(root / STATS, lambda s: s.update({"observation.grid": grid}))
    assert _g(root) == []
    _edit_json(root / STATS, lambda s: s["observation.grid"].update(min=[[0.0] * 3] * 2))
    assert _found(_run(root)) == [("G004", "error", STATS, "'observation.grid'.max has shape (3,) but 'observation.grid'."
                                   "min has shape (2, 3) (and 2 more)",
                                   "statistics entries are incomplete or have the wrong shape", {"feature": "observation.grid"})]
    _edit_json(root / STATS, lambda s: s["observation.grid"].update(min=[0.0] * 3, q50=[[0.5] * 3] * 2))
    assert _found(_run(root)) == [("G004", "error", STATS, "'observation.grid'.q50 has shape (2, 3) but "
                                   "'observation.grid'.min has shape (3,)",
                                   "statistics entries are incomplete or have the wrong shape", {"feature": "observation.grid"})]
    # a feature whose shape is not declared: its statistics must still agree with each other
    root2 = _build(tmp_path, name="undeclared")
    _edit_json(root2 / INFO, lambda i: i["features"]["action"].pop("shape"))
    _set_v21(root2, 1, "action", {**_entry(3, quantiles=False), "mean": [1.0, 1.0]})
    assert _found(_run(root2)) == [_ep("G004", 1, "'action'.mean has shape (2,) but 'action'.min has shape (3,)",
                                       path=EPS_STATS)]
    # ... also when every entry has the same disagreement (a mean, or a quantile, of another length)
    _edit_v21(root2, lambda e, s: s["action"].update(mean=s["action"]["mean"][:2]))
    assert _found(_run(root2)) == [_ep("G004", e, "'action'.mean has shape (2,) but 'action'.min has shape (3,)",
                                       path=EPS_STATS) for e in (0, 1, 2)]
    _edit_v21(root2, lambda e, s: s["action"].update(mean=s["action"]["min"], q50=s["action"]["min"][:2]))
    assert _found(_run(root2)) == [_ep("G004", e, "'action'.q50 has shape (2,) but 'action'.min has shape (3,)",
                                       path=EPS_STATS) for e in (0, 1, 2)]


def test_g004_v21_stats_json_is_a_warning_and_normalised_features_may_be_absent(tmp_path):
    root = _build(tmp_path)
    _edit_json(root / STATS, lambda s: (s.pop("observation.state"), s["action"].pop("max")))
    assert _found(_run(root)) == [("G004", "warning", STATS, "'action' lacks max",
                                   "statistics entries are incomplete or have the wrong shape", {"feature": "action"})]


def test_g004_normalised_feature_missing_from_stats_json(tmp_path):
    root = _build(tmp_path, "v3.0")
    _edit_json(root / STATS, lambda s: [s.pop(k) for k in ("observation.state", "timestamp", "index")])
    assert _found(_run(root)) == [
        ("G004", "error", STATS, "meta/stats.json has no statistics for 'observation.state': lerobot leaves it "
         "unnormalised", "normalised features have no statistics", {"feature": "observation.state"})]


# ============================================================================================ G005
def _v20_entry(tmp_path, entry: dict) -> list[tuple]:
    """The G findings of a v2.0 dataset whose ``stats.json`` 'action' entry is ``entry`` (n = its count)."""
    root = _v20(tmp_path)
    _edit_json(root / STATS, lambda s: s.update(action=entry))
    return _found(_run(root))


def _g005(message: str) -> tuple:
    return ("G005", "error", STATS, message, "statistics contradict themselves", {"feature": "action"})


@pytest.mark.parametrize("dim1,message", [
    ({"min": 3.0}, "'action'.min[1] = 3 > max 2 (and 2 more)"),
    ({"mean": 2.5}, "'action'.mean[1] = 2.5 outside [min, max] = [0, 2]"),
    ({"mean": -0.5}, "'action'.mean[1] = -0.5 outside [min, max] = [0, 2]"),
    ({"std": -0.5}, "'action'.std[1] = -0.5 is negative (and 1 more)"),
    ({"std": 1.2}, "'action'.std[1] = 1.2 is larger than any 12 value(s) within [0, 2] can have (at most 1.04553)"),
    ({"std": 0.3}, "'action'.std[1] = 0.3 is smaller than any 12 value(s) spanning [0, 2] can have "
                   "(at least 0.407787)"),
], ids=["min-over-max", "mean-over-max", "mean-under-min", "std-negative", "std-too-large", "std-too-small"])
def test_g005_messages_of_stats_json(tmp_path, dim1, message):
    assert _v20_entry(tmp_path, _entry(12, {**dim1}, quantiles=False)) == [_g005(message)]


def test_g005_first_problem_and_the_count_of_the_others(tmp_path):
    entry = _entry(12, quantiles=False)
    entry["mean"] = [2.5, 1.0, -1.0]
    entry["std"] = [0.5, 1.5, 0.5]
    assert _v20_entry(tmp_path, entry) == [_g005("'action'.mean[0] = 2.5 outside [min, max] = [0, 2] (and 2 more)")]


@pytest.mark.parametrize("count,std,message", [
    # one value: no sample correction, and the least std of values spanning [0, 2] is 2 / sqrt(2)
    (1, 1.0005, "'action'.std[1] = 1.0005 is smaller than any 1 value(s) spanning [0, 2] can have (at least 1.41279)"),
    (1, 1.0015, "'action'.std[1] = 1.0015 is larger than any 1 value(s) within [0, 2] can have (at most 1.00101) "
                "(and 1 more)"),
    # a count of 0 is held to one value
    (0, 1.0015, "'action'.std[1] = 1.0015 is larger than any 1 value(s) within [0, 2] can have (at most 1.00101) "
                "(and 1 more)"),
    # two values: up to a sample std of 2 / 2 * sqrt(2)
    (2, math.sqrt(2) * 1.0005, None),
    (2, math.sqrt(2) * 1.0015, "'action'.std[1] = 1.41633 is larger than any 2 value(s) within [0, 2] can have "
                               "(at most 1.41564)"),
], ids=["one-low", "one-high", "zero", "two-inside", "two-outside"])
def test_g005_std_bounds_for_tiny_counts(tmp_path, count, std, message):
    entry = _entry(count, {"std": std}, quantiles=False)
    for s in ("min", "max", "mean", "std"):  # dimensions 0 and 2 constant: they fit a single value
        entry[s][0] = entry[s][2] = _const(1.0)[s]
    found = [f for f in _v20_entry(tmp_path, entry) if f[0] == "G005"]
    assert found == ([_g005(message)] if message else [])


S12 = _slack(12, 2.0)
RS2 = _round_std(2.0)


def _noisy_bounds(n: int, rng: float, scale: float) -> tuple[float, float]:
    """The std bounds of values spanning ``rng`` (magnitude ``scale``, n of them, float32): the range's bounds
    (sample-std convention, 1e-3 margin) widened by the rounding of lerobot's float32 one-pass variance
    (:func:`compute.std_noise_var`, :func:`compute.std_bounds`)."""
    spread = rng / 2 * (math.sqrt(n / (n - 1)) if n > 1 else 1.0) * 1.001
    least = rng / math.sqrt(2 * n) * 0.999
    up, low = compute.std_bounds(np.asarray([spread]), np.asarray([least]),
                                 compute.std_noise_var(np.asarray([scale]), n, "float32"))
    return float(up[0]), float(low[0])


UP12 = _noisy_bounds(12, 2.0, 2.0)[0] + RS2
LOW12 = _noisy_bounds(12, 2.0, 2.0)[1] - RS2
#: a constant float32 dimension at 1.0: the std its rounding can leave (lerobot's E[x^2] - E[x]^2), n = 12 / 5
NOISE12 = _noisy_bounds(12, 0.0, 1.0)[0] + _round_std(1.0)
NOISE5 = _noisy_bounds(5, 0.0, 1.0)[0] + _round_std(1.0)


@pytest.mark.parametrize("dim1_in,dim1_out,message", [
    ({"mean": 2 + 0.98 * S12}, {"mean": 2 + 1.02 * S12}, "'action'.mean[1] = 2.00002 outside [min, max] = [0, 2]"),
    ({"mean": -0.98 * S12}, {"mean": -1.02 * S12}, "'action'.mean[1] = -1.55188e-05 outside [min, max] = [0, 2]"),
    ({"std": UP12 - 0.1 * RS2}, {"std": UP12 + 0.1 * RS2},
     f"'action'.std[1] = {UP12 + 0.1 * RS2:.6g} is larger than any 12 value(s) within [0, 2] can have (at most "
     f"{UP12:.6g})"),
    ({"std": math.sqrt(12 / 11) * 1.0009}, {"std": math.sqrt(12 / 11) * 1.0011},
     f"'action'.std[1] = 1.04561 is larger than any 12 value(s) within [0, 2] can have (at most {UP12:.6g})"),
    ({"std": LOW12 + 0.1 * RS2}, {"std": LOW12 - 0.1 * RS2},
     f"'action'.std[1] = {LOW12 - 0.1 * RS2:.6g} is smaller than any 12 value(s) spanning [0, 2] can have (at least "
     f"{LOW12:.6g})"),
    ({"std": 2 / math.sqrt(24) * 0.9991}, {"std": 2 / math.sqrt(24) * 0.9985},
     f"'action'.std[1] = 0.407636 is smaller than any 12 value(s) spanning [0, 2] can have (at least {LOW12:.6g})"),
], ids=["mean-over-max", "mean-under-min", "std-upper-abs", "std-upper-rel", "std-lower-abs", "std-lower-rel"])
def test_g005_tolerances_of_stats_json(tmp_path, dim1_in, dim1_out, message):
    inside = _v20_entry(tmp_path / "in", _entry(12, dim1_in, quantiles=False))
    assert inside == []
    assert _v20_entry(tmp_path / "out", _entry(12, dim1_out, quantiles=False)) == [_g005(message)]


@pytest.mark.parametrize("dim1_in,dim1_out,message,value", [
    ({**_const(2.0), "min": 2 + 0.98 * S12}, {**_const(2.0), "min": 2 + 1.02 * S12},
     "'action'.min[1] = 2.00002 > max 2 (and 1 more)", "2.00001"),
    # a constant float32 dimension's std: up to the rounding of lerobot's one-pass variance, not an inconsistency
    (_const(1.0) | {"std": 0.9 * NOISE12}, _const(1.0) | {"std": 1.1 * NOISE12},
     f"'action'.std[1] = {1.1 * NOISE12:.6g} is larger than any 12 value(s) within [1, 1] can have (at most "
     f"{NOISE12:.6g})", "1"),
    (_const(1.0), _const(1.0) | {"std": -1e-9}, "'action'.std[1] = -1e-09 is negative", "1"),
    (_const(0.0) | {"mean": 5e-13}, _const(0.0) | {"mean": 1.5e-12}, "'action'.mean[1] = 1.5e-12 outside [min, max] = "
                                                                     "[0, 0]", "0"),
    (_const(0.0) | {"std": 5e-13}, _const(0.0) | {"std": 1.5e-12}, "'action'.std[1] = 1.5e-12 is larger than any 12 "
                                                                   "value(s) within [0, 0] can have (at most 1e-12)", "0"),
], ids=["min-over-max", "round-std", "std-negative", "zero-scale-mean", "zero-scale-std"])
def test_g005_tolerances_of_a_constant_stats_json_dimension(tmp_path, dim1_in, dim1_out, message, value):
    # just inside: a constant dimension, the normalisation hazard G009 (a warning: the statistics v2.0 trains with)
    inside = _v20_entry(tmp_path / "in", _entry(12, dim1_in, quantiles=False))
    assert inside == [_hazard(None, "1", value, path=STATS, severity="warning")]
    assert _v20_entry(tmp_path / "out", _entry(12, dim1_out, quantiles=False)) == [_g005(message)]


def test_g005_slack_of_a_single_value(tmp_path):
    # a count of 1 (G007 against total_frames aside): the float slack of one value, here on a constant dimension
    s1 = _slack(1, 2.0)
    entry = {s: [_const(2.0)[s]] * 3 for s in ("min", "max", "mean", "std")}
    entry["count"] = [1]
    entry["mean"] = [2.0, 2 + 0.98 * s1, 2.0]
    assert [f[0] for f in _v20_entry(tmp_path / "in", entry)] == ["G009", "G007"]
    entry["mean"] = [2.0, 2 + 1.02 * s1, 2.0]
    assert [f for f in _v20_entry(tmp_path / "out", entry) if f[0] != "G007"] == [
        _g005("'action'.mean[1] = 2.00001 outside [min, max] = [2, 2]")]


def test_g005_v21_stats_json_is_a_warning(tmp_path):
    root = _build(tmp_path)
    _edit_json(root / STATS, lambda s: s["action"].update(std=[-1.0, 1.0, 1.0]))
    ctx = _run(root)
    found = _found(ctx)
    assert [f[:3] + f[4:] for f in found] == [("G005", "warning", STATS, "statistics contradict themselves",
                                              {"feature": "action"})]
    assert found[0][3].startswith("'action'.std[0] = -1 is negative")
    assert ctx.stats_facts.inconsistent == {}  # only per-episode findings are handed to the deep pass


def test_g005_per_episode_count_is_the_episode_length(tmp_path):
    # episode 1 has 3 frames but its entry counts 9: a std of 1.1 over [0, 2] is possible for 3 values (at most
    # 1.22597), not for 9 (1.06): the count is reported (G007), not the std
    root = _build(tmp_path)
    _set_v21(root, 1, "action", _entry(9, {"std": 1.1}, quantiles=False))
    ctx = _run(root)
    assert _found(ctx) == [_ep("G007", 1, "'action'.count is 9 but the episode has 3 frame(s)", path=EPS_STATS,
                               key="count")]
    assert ctx.stats_facts.miscounted == {"action"}
    # what lerobot 0.3 aggregates (the v2.1 effective statistics) weighs the entries by their stored counts
    assert ctx.stats_facts.global_stats["action"]["count"].tolist() == [18]
    _set_v21(root, 1, "action", _entry(3, {"std": 1.3}, quantiles=False))
    assert _found(_run(root)) == [_ep("G005", 1, "'action'.std[1] = 1.3 is larger than any 3 value(s) within [0, 2] can "
                                      "have (at most 1.22598)", path=EPS_STATS)]


# the canary tests: episode 2 (5 frames) of a v3.0 dataset holds a hand-made 'action' entry whose dimension 1 sits
# just inside a tolerance (stats.json re-aggregated: only the canary G008) or just outside (a per-episode finding
# and no G008: root cause first)
S5 = _slack(5, 2.0)
W5 = 2.0 / compute.QUANTILE_BINS * 1.01 + S5
UP5 = _noisy_bounds(5, 2.0, 2.0)[0] + RS2
LOW5 = _noisy_bounds(5, 2.0, 2.0)[1] - RS2


def _v3_canary(tmp_path: Path, dim1: dict) -> list[tuple]:
    root = _build(tmp_path, "v3.0")
    _set_v3_entry(root, 2, "action", _entry(5, dim1))
    _reaggregate(root)
    return _found(_run(root))


def _canary() -> tuple:
    return CANARY_V3 + (None, {"feature": ["action"]})


@pytest.mark.parametrize("dim1_in,dim1_out,check,message", [
    ({"std": UP5 - 0.1 * RS2}, {"std": UP5 + 0.1 * RS2}, "G005",
     f"'action'.std[1] = {UP5 + 0.1 * RS2:.6g} is larger than any 5 value(s) within [0, 2] can have (at most "
     f"{UP5:.6g})"),
    ({"std": math.sqrt(5 / 4) * 1.0009}, {"std": math.sqrt(5 / 4) * 1.0011}, "G005",
     f"'action'.std[1] = 1.11926 is larger than any 5 value(s) within [0, 2] can have (at most {UP5:.6g})"),
    ({"std": LOW5 + 0.1 * RS2}, {"std": LOW5 - 0.1 * RS2}, "G005",
     f"'action'.std[1] = {LOW5 - 0.1 * RS2:.6g} is smaller than any 5 value(s) spanning [0, 2] can have (at least "
     f"{LOW5:.6g})"),
    ({"std": 2 / math.sqrt(10) * 0.9991}, {"std": 2 / math.sqrt(10) * 0.9989}, "G005",
     f"'action'.std[1] = 0.63176 is smaller than any 5 value(s) spanning [0, 2] can have (at least {LOW5:.6g})"),
    ({"mean": 2 + 0.98 * S5}, {"mean": 2 + 1.02 * S5}, "G005", "'action'.mean[1] = 2.00001 outside [min, max] = [0, 2]"),
    ({"mean": -0.98 * S5}, {"mean": -1.02 * S5}, "G005", "'action'.mean[1] = -1.07405e-05 outside [min, max] = [0, 2]"),
    ({"q10": 1.0 + 0.997 * W5}, {"q10": 1.0 + 1.003 * W5}, ("G006", "q50"),
     "'action'.q10[1] = 1.00042 > q50 = 1: quantiles out of order"),
    ({"q01": -0.997 * W5}, {"q01": -1.003 * W5}, ("G006", "q01"),
     "'action'.min[1] = 0 > q01 = -0.000415774: quantiles out of order"),
    ({"q99": 2.0 + 0.997 * W5}, {"q99": 2.0 + 1.003 * W5}, ("G006", "max"),
     "'action'.q99[1] = 2.00042 > max = 2: quantiles out of order"),
    ({"q90": 1.0 - 0.997 * W5}, {"q90": 1.0 - 1.003 * W5}, ("G006", "q90"),
     "'action'.q50[1] = 1 > q90 = 0.999584: quantiles out of order"),
], ids=["std-upper-abs", "std-upper-rel", "std-lower-abs", "std-lower-rel", "mean-over-max", "mean-under-min",
        "q10-q50", "min-q01", "q99-max", "q50-q90"])
def test_per_episode_tolerances(tmp_path, dim1_in, dim1_out, check, message):
    assert _v3_canary(tmp_path / "in", dim1_in) == [_canary()]
    check, key = (check, None) if isinstance(check, str) else check
    assert _v3_canary(tmp_path / "out", dim1_out) == [_ep(check, 2, message, **({"key": key} if key else {}))]


@pytest.mark.parametrize("dim1_in,dim1_out,message,value", [
    ({**_const(2.0), "min": 2 + 0.98 * S5}, {**_const(2.0), "min": 2 + 1.02 * S5},
     "'action'.min[1] = 2.00001 > max 2 (and 1 more)", "2.00001"),
    (_const(1.0) | {"std": 0.9 * NOISE5}, _const(1.0) | {"std": 1.1 * NOISE5},
     f"'action'.std[1] = {1.1 * NOISE5:.6g} is larger than any 5 value(s) within [1, 1] can have (at most "
     f"{NOISE5:.6g})", "1"),
    (_const(1.0), _const(1.0) | {"std": -1e-9}, "'action'.std[1] = -1e-09 is negative", "1"),
    (_const(0.0) | {"mean": 5e-13}, _const(0.0) | {"mean": 1.5e-12}, "'action'.mean[1] = 1.5e-12 outside [min, max] = "
                                                                     "[0, 0]", "0"),
    (_const(0.0) | {"std": 5e-13}, _const(0.0) | {"std": 1.5e-12}, "'action'.std[1] = 1.5e-12 is larger than any 5 "
                                                                   "value(s) within [0, 0] can have (at most 1e-12)", "0"),
], ids=["min-over-max", "round-std", "std-negative", "zero-scale-mean", "zero-scale-std"])
def test_per_episode_tolerances_of_a_constant_dimension(tmp_path, dim1_in, dim1_out, message, value):
    assert _v3_canary(tmp_path / "in", dim1_in) == [_hazard(2, "1", value), _canary()]
    assert _v3_canary(tmp_path / "out", dim1_out) == [_ep("G005", 2, message)]


def test_per_episode_sample_std_of_two_frames_is_accepted(tmp_path):
    # two values 0 and 2: population std 1, sample std sqrt(2) (ddof=1); both are possible, a little more is not
    root = _build(tmp_path, "v3.0", episode_lengths=(4, 3, 2, 3))  # 12 frames

    def two(std1: float) -> list[tuple]:
        entry = _entry(2, {"std": std1})
        entry["std"] = [1.0, std1, 1.0]
        _set_v3_entry(root, 2, "action", entry)
        _reaggregate(root)
        return _found(_run(root))

    assert two(math.sqrt(2) * 1.0009) == [_canary()]
    assert two(1.0) == [_canary()]
    _set_v3_entry(root, 2, "action", {**_entry(2), "std": [1.0, math.sqrt(2) * 1.0011, 1.0]})
    assert _found(_run(root)) == [_ep("G005", 2, "'action'.std[1] = 1.41577 is larger than any 2 value(s) within [0, 2] "
                                      "can have (at most 1.41564)")]


def test_per_episode_g005_std_findings_are_handed_to_the_deep_pass(tmp_path):
    root = _build(tmp_path)
    _set_v21(root, 0, "action", _entry(4, {"std": 1.4}, quantiles=False))   # std only: deep may withdraw it
    _set_v21(root, 2, "action", _entry(5, {"mean": 3.0, "std": 1.4}, quantiles=False))  # also the mean: never withdrawn
    _set_v21(root, 1, "observation.state", {"min": [0.0, 0.0], "max": [1.0, 1.0], "mean": [0.5, 0.5], "std": [0.5, 0.1],
                                            "count": [3]})
    ctx = _run(root)
    found = _found(ctx)
    assert found == [
        _ep("G005", 0, "'action'.std[1] = 1.4 is larger than any 4 value(s) within [0, 2] can have (at most 1.15587)",
            path=EPS_STATS),
        _ep("G005", 2, "'action'.mean[1] = 3 outside [min, max] = [0, 2] (and 1 more)", path=EPS_STATS),
        _ep("G005", 1, "'observation.state'.std[1] = 0.1 is smaller than any 3 value(s) spanning [0, 1] can have "
            "(at least 0.407831)", path=EPS_STATS, feature="observation.state"),
    ]
    inconsistent = ctx.stats_facts.inconsistent
    assert set(inconsistent) == {(0, "action"), (1, "observation.state")}
    g005 = [f for f in ctx.findings if f.check == "G005"]
    assert inconsistent[(0, "action")] == (g005[0], {"std"})
    assert inconsistent[(1, "observation.state")] == (g005[2], {"std"})
    assert ctx.stats_facts.untrusted == set()


def test_camera_statistics_in_unit_range_any_std_and_their_own_counts(tmp_path):
    # camera statistics: min / max / mean in [0, 1] (1e-6 slack), std not bounded below (lerobot 0.4.x stores ~0),
    # the count is the stored one (pixels sampled, not frames): no G007, the aggregate weighs by it, n for the std
    root = _build(tmp_path, "v3.0", video_keys=(CAM,))

    def cam(ch1: dict, count: int = 1000) -> dict:
        base = {"min": 0.1, "max": 0.9, "mean": 0.5, "std": 0.0}
        out = {s: [[[base[s]]], [[ch1.get(s, base[s])]], [[base[s]]]] for s in base}
        out["count"] = [count]
        for q, v in zip(Q, (0.1, 0.2, 0.5, 0.8, 0.9)):
            out[q] = [[[v]], [[ch1.get(q, v)]], [[v]]]
        return out

    def found(ch1: dict, count: int = 1000, *, outside: bool = False) -> list[tuple]:
        # inside: stats.json re-aggregated, only the canary; outside: the camera's stats.json entry is left as it
        # was (the camera is reported per episode and left out of G008), the canary stays
        _set_v3_entry(root, 2, CAM, cam(ch1, count))
        if not outside:
            _reaggregate(root)
        return _found(_run(root))

    ok = [_canary()]
    assert found({"max": 1 + 0.5e-6, "q99": 1.0}) == ok
    assert found({"min": -0.5e-6, "q01": 0.0}) == ok
    assert found({"min": 0.3, "max": 0.3, "mean": 0.3, **{q: 0.3 for q in Q}}) == ok  # a constant channel: no G009
    assert found({"std": 0.4 * math.sqrt(1000 / 999) * 1.0009}) == ok
    assert found({"std": 0.4 * 1.0009}, count=1) == ok
    msg = "'observation.images.cam'.{} = {} is outside [0, 1] (lerobot scales pixels to [0, 1])"
    assert found({"max": 1 + 2e-6, "q99": 1.0}, outside=True) == [
        _ep("G005", 2, msg.format("max[1]", "1"), feature=CAM), _canary()]
    assert found({"min": -2e-6, "q01": 0.0}, outside=True) == [
        _ep("G005", 2, msg.format("min[1]", "-2e-06"), feature=CAM), _canary()]
    assert found({"mean": 1 + 2e-6, "max": 1.0, "q99": 1.0}, outside=True) == [
        _ep("G005", 2, msg.format("mean[1]", "1"), feature=CAM), _canary()]
    assert found({"mean": 1.5, "max": 1.5, "q99": 1.0}, outside=True) == [
        _ep("G005", 2, msg.format("max[1]", "1.5") + " (and 1 more)", feature=CAM), _canary()]
    assert found({"std": 0.4 * 1.0011}, count=1, outside=True) == [
        _ep("G005", 2, "'observation.images.cam'.std[1] = 0.40044 is larger than any 1 value(s) within [0.1, 0.9] can "
            "have (at most 0.400404)", feature=CAM), _canary()]


# ============================================================================================ G006
def test_g006_stats_json_and_the_deep_pass_facts(tmp_path):
    root = _build(tmp_path, "v3.0")
    _set_v3(root, 1, "stats/action/q90", [5000.0, 5000.0, 5000.0])
    # out of order (and stale): reported, not compared with the aggregate
    _edit_json(root / STATS, lambda s: s["observation.state"].update(q10=s["observation.state"]["q90"], count=[13]))
    ctx = _run(root)
    found = _found(ctx)
    assert [f[:3] + f[4:] for f in found] == [
        ("G006", "warning", EPS_V3, EP_GROUPS["G006"], {"key": "q99", "feature": "action", "episode": 1}),
        ("G006", "error", STATS, "statistics have quantiles out of order", {"key": "q50", "feature": "observation.state"}),
    ]
    assert found[0][3].startswith("episode 1: 'action'.q90[0] = 5000 > q99 = ")
    assert found[1][3].startswith("'observation.state'.q10[0] = ") and found[1][3].endswith(": quantiles out of order")
    g006 = [f for f in ctx.findings if f.check == "G006"]
    # stats.json's G006 is handed over too (None: the global entry): deep withdraws it if it reports those quantiles
    assert ctx.stats_facts.inconsistent == {(1, "action"): (g006[0], {"q90", "q99"}),
                                            (None, "observation.state"): (g006[1], {"q10", "q50"})}
    assert "observation.state" in ctx.stats_facts.global_stats  # out of order, but well-formed: deep compares it


def test_g006_only_the_quantiles_present_and_never_after_g005(tmp_path):
    # v2.1 entries may hold a subset of the quantiles; an entry that contradicts itself is not also G006
    root = _build(tmp_path)
    _edit_json(root / STATS, lambda s: s["action"].update(q50=[s["action"]["max"][0] + 1.0, 0.0, 0.0]))
    found = _found(_run(root))
    assert [(f[0], f[1], f[5]) for f in found] == [("G006", "warning", {"key": "max", "feature": "action"})]
    assert found[0][3].startswith("'action'.q50[0] = ") and " > max = " in found[0][3]
    _edit_json(root / STATS, lambda s: s["action"].update(mean=[1e9, 0.0, 0.0]))
    assert [f[0] for f in _found(_run(root))] == ["G005"]


# ============================================================================================ G007
def test_g007_per_episode_v3_not_for_cameras(tmp_path):
    root = _build(tmp_path, "v3.0", video_keys=(CAM,))
    _set_v3(root, 2, "stats/observation.state/count", [6])
    _set_v3(root, 2, f"stats/{CAM}/count", [6])
    _reaggregate(root, canary=False)  # the camera's aggregate (by its stored counts) is what stats.json says
    ctx = _run(root)
    assert _found(ctx) == [_ep("G007", 2, "'observation.state'.count is 6 but the episode has 5 frame(s)",
                               feature="observation.state", key="count")]
    assert ctx.stats_facts.miscounted == {"observation.state"}


def test_g007_stats_json_of_v20_against_total_frames(tmp_path):
    root = _v20(tmp_path, video_keys=(CAM,))
    _edit_json(root / STATS, lambda s: (s["action"].update(count=[11]), s[CAM].update(count=[999])))
    assert _found(_run(root)) == [("G007", "warning", STATS, "'action'.count is 11 but total_frames is 12",
                                   "stats.json counts differ from total_frames", {"feature": "action", "key": "count"})]
    _edit_json(root / INFO, lambda i: i.pop("total_frames"))
    assert [f for f in _found(_run(root)) if f[0] == "G007"] == []


def test_episode_without_metadata_is_aggregated_by_its_stored_count(tmp_path):
    # episode 7 has statistics but no episode metadata: no length to hold its count to (no G007), and its
    # stored count weighs it in the aggregate: stats.json, which does not include it, is stale
    root = _build(tmp_path)
    lines = (root / EPS_STATS).read_text().splitlines()
    extra = json.loads(lines[0])
    extra["episode_index"] = 7
    (root / EPS_STATS).write_text("\n".join([*lines, json.dumps(extra)]) + "\n")
    found = _g(root)
    assert found == [("G008", "warning", STATS, _g008(
        "'action', 'observation.state', 'timestamp', 'frame_index', ...", 7, "action",
        "it counts 12 frame(s), the per-episode statistics 16; mean[0] -5.20693 vs 0.0485016", WHY_V21))]


# ============================================================================================ G008
def test_g008_v3_exact_message_and_subject(tmp_path):
    root = _build(tmp_path, "v3.0")
    _reaggregate(root)
    r = _report(root)
    (f,) = [f for f in r.findings if f.check.startswith("G")]
    assert (f.check, f.severity, f.path, f.message, f.subject, f.group) == CANARY_V3 + ({"feature": ["action"]}, None)
    ctx = _run(root)
    assert ctx.stats_facts.stale == {"action"}


def test_g008_v21_says_the_loader_ignores_it(tmp_path):
    root = _build(tmp_path)
    _reaggregate(root)
    assert _g(root) == [CANARY_V21]


def test_g008_detail_names_the_count_and_the_first_differing_statistic(tmp_path):
    root = _build(tmp_path, "v3.0")
    agg = _aggregate(root)["action"]
    _reaggregate(root, canary=False)
    assert _g(root) == []
    _edit_json(root / STATS, lambda s: s["action"].update(std=[s["action"]["std"][0] * 1.05] + s["action"]["std"][1:]))
    detail = f"std[0] {agg['std'][0] * 1.05:.6g} vs {agg['std'][0]:.6g}"
    assert _g(root) == [("G008", "warning", STATS, _g008("'action'", 1, "action", detail, WHY_V3))]
    _edit_json(root / STATS, lambda s: s["action"].update(min=[s["action"]["min"][0], s["action"]["min"][1] - 1.0,
                                                               s["action"]["min"][2]], count=[20]))
    detail = (f"it counts 20 frame(s), the per-episode statistics 12; min[1] {agg['min'][1] - 1.0:.6g} vs "
              f"{agg['min'][1]:.6g}")
    assert _g(root) == [("G008", "warning", STATS, _g008("'action'", 1, "action", detail, WHY_V3))]


@pytest.mark.parametrize("n,shown", [
    (4, "'action', 'observation.state', 'timestamp', 'frame_index'"),
    (5, "'action', 'observation.state', 'timestamp', 'frame_index', ..."),
    (7, "'action', 'observation.state', 'timestamp', 'frame_index', ..."),
])
def test_g008_names_four_features_at_most(tmp_path, n, shown):
    root = _build(tmp_path, "v3.0")
    names = list(json.loads((root / STATS).read_text()))[:n]
    _edit_json(root / STATS, lambda s: [s[k].update(count=[13]) for k in names])
    ctx = _run(root)
    assert _found(ctx) == [("G008", "warning", STATS, _g008(shown, n, "action", "it counts 13 frame(s), the "
                            "per-episode statistics 12", WHY_V3), None, {"feature": names})]
    assert ctx.stats_facts.stale == set(names)


def test_g008_is_not_derived_from_failing_or_missing_entries(tmp_path):
    root = _build(tmp_path)
    names = list(json.loads((root / STATS).read_text()))
    _edit_json(root / STATS, lambda s: [s[k].update(count=[13]) for k in names])
    # 'observation.state' of episode 1 contradicts itself: that feature is left out of G008, the others are not
    _set_v21(root, 1, "observation.state", {"min": [0.0, 0.0], "max": [1.0, 1.0], "mean": [0.5, 2.0], "std": [0.5, 0.5],
                                            "count": [3]})
    found = _g(root)
    assert [f[0] for f in found] == ["G005", "G008"]
    assert found[1][3] == _g008("'action', 'timestamp', 'frame_index', 'episode_index', ...", 6, "action",
                                "it counts 13 frame(s), the per-episode statistics 12", WHY_V21)
    # stats.json itself contradicts itself: it is reported, not compared
    root = _build(tmp_path, "v3.0", name="v3")
    _reaggregate(root)
    _edit_json(root / STATS, lambda s: s["action"].update(mean=[1e6, 0.0, 0.0]))
    assert [f[0] for f in _g(root)] == ["G005"]


def test_g008_counts_episodes_whose_entries_have_no_quantiles(tmp_path):
    # episodes written before quantiles existed (e.g. converted from v2.1, then merged with new ones) have null
    # q01..q99 cells: their entries pass every check, so they are aggregated and G008 still compares stats.json
    root = _build(tmp_path, "v3.0")
    _reaggregate(root)
    for q in Q:
        _set_v3(root, 1, f"stats/action/{q}", None)
    r = _report(root)
    assert [(f.check, f.severity, f.path, f.message) for f in r.findings if f.check.startswith("G")] == [CANARY_V3[:4]]


def test_g008_weighs_a_camera_by_its_stored_count(tmp_path):
    # camera counts are pixel counts, not frames: the aggregate weighs each episode by its stored count, as lerobot
    root = _build(tmp_path, "v3.0", video_keys=(CAM,))
    for e, c in ((0, 400), (1, 30), (2, 5000)):
        _set_v3(root, e, f"stats/{CAM}/count", [c])
    _set_v3(root, 2, f"stats/{CAM}/mean", [[[0.2]], [[0.2]], [[0.2]]])
    _reaggregate(root)
    assert _g(root) == [CANARY_V3]


# ============================================================================================ G009
def _constant_action(ep, cols):
    cols["action"][:, 1] = 7.5


def test_g009_v3_per_episode_info_and_stats_json_warning(tmp_path):
    # one task: task_index is constant too, but it is never normalised
    root = _build(tmp_path, "v3.0", hook=_constant_action, tasks=("pick",))
    assert _found(_run(root)) == [
        *[_hazard(e, "1", "7.5") for e in (0, 1, 2)],
        _hazard(None, "1", "7.5", path=STATS, severity="warning"),
    ]
    r = _report(root)
    assert [(f.check, f.severity, f.message) for f in r.findings if f.check == "G009"] == [
        ("G009", "info", f"episode 0: 'action' dimension(s) [1] are constant in this episode (value 7.5): {HAZARD} "
                         f"(3 occurrences: 'action' has constant dimensions in some episodes, for episodes 0-2; "
                         f"e.g. {EPS_V3})"),
        ("G009", "warning", f"'action' dimension(s) [1] are constant over the whole dataset (value 7.5): {HAZARD}"),
    ]


def test_g009_v21_warns_on_the_aggregate_the_loader_normalises_with(tmp_path):
    root = _build(tmp_path, hook=_constant_action, tasks=("pick",))
    ctx = _run(root)
    assert _found(ctx) == [
        *[_hazard(e, "1", "7.5", path=EPS_STATS) for e in (0, 1, 2)],
        _hazard(None, "1", "7.5", path=EPS_STATS, severity="warning", prefix="aggregate of meta/episodes_stats.jsonl"),
    ]
    assert ctx.stats_facts.global_source == V21_SOURCE
    np.testing.assert_allclose(ctx.stats_facts.global_stats["action"]["mean"], _aggregate(root)["action"]["mean"],
                               rtol=1e-12)


def test_g009_v21_aggregate_is_kept_when_the_unread_stats_json_entry_is_broken(tmp_path):
    # a v2.1 stats.json entry that cannot be read is a warning (the loader never reads it): the aggregate of the
    # per-episode statistics, which the loader normalises with, is still computed, checked and handed to --deep
    root = _build(tmp_path, hook=_constant_action, tasks=("pick",))
    _edit_json(root / STATS, lambda d: d["action"].update(mean=[math.nan] * 3))
    ctx = _run(root)
    found = _found(ctx)
    assert [f[:3] for f in found if f[0] == "G003"] == [("G003", "warning", STATS)]
    assert _hazard(None, "1", "7.5", path=EPS_STATS, severity="warning",
                   prefix="aggregate of meta/episodes_stats.jsonl") in found
    np.testing.assert_allclose(ctx.stats_facts.global_stats["action"]["mean"], _aggregate(root)["action"]["mean"],
                               rtol=1e-12)


def test_g009_v21_aggregate_of_every_trusted_feature(tmp_path):
    # 'action' of episode 0 cannot be read (its aggregate is not trusted): the other features are still aggregated
    def hook(ep, cols):
        cols["observation.state"][:, 0] = 0.25

    root = _build(tmp_path, hook=hook)
    _edit_v21(root, lambda e, s: s["action"].update(mean=[math.nan] * 3) if e == 0 else None)
    ctx = _run(root)
    assert _found(ctx) == [
        _ep("G003", 0, "'action'.mean[0] is not finite", path=EPS_STATS, key="mean"),
        *[_hazard(e, "0", "0.25", path=EPS_STATS, feature="observation.state") for e in (0, 1, 2)],
        _hazard(None, "0", "0.25", path=EPS_STATS, severity="warning", prefix="aggregate of meta/episodes_stats.jsonl",
                feature="observation.state"),
    ]
    assert "action" not in ctx.stats_facts.global_stats and "observation.state" in ctx.stats_facts.global_stats


def test_g009_lists_six_dimensions_then_an_ellipsis(tmp_path):
    def hook(ep, cols):
        cols["action"][:, :] = 0.25
        cols["observation.state"][:, :7] = -3.0

    root = _build(tmp_path, "v3.0", hook=hook, action_dim=6, state_dim=8, episode_lengths=(4,))
    assert _found(_run(root)) == [
        _hazard(0, "0, 1, 2, 3, 4, 5", "0.25"),
        _hazard(0, "0, 1, 2, 3, 4, 5, ...", "-3", feature="observation.state"),
        _hazard(None, "0, 1, 2, 3, 4, 5", "0.25", path=STATS, severity="warning"),
        _hazard(None, "0, 1, 2, 3, 4, 5, ...", "-3", path=STATS, severity="warning", feature="observation.state"),
    ]


def test_g009_needs_two_frames_and_no_spread_at_all(tmp_path):
    # an episode of one frame has no spread by nature; a dimension spanning 1e-9 is not constant
    def hook(ep, cols):
        cols["action"][:, 1] = 7.5
        cols["action"][:, 2] = 3.0

    root = _build(tmp_path, "v3.0", hook=hook, episode_lengths=(1, 2, 4))
    high = pq.read_table(root / EPS_V3).column("stats/action/max").to_pylist()[2]
    _set_v3(root, 2, "stats/action/max", [high[0], 7.5, 3.0 + 1e-9])
    _reaggregate(root, canary=False)
    assert _found(_run(root)) == [
        _hazard(1, "1, 2", "7.5"),
        _hazard(2, "1", "7.5"),
        _hazard(None, "1", "7.5", path=STATS, severity="warning"),
    ]


def test_g009_of_an_entry_checked_on_its_own(tmp_path):
    # episode 1's count is wrong: its entry is checked one by one (G007), and its constant dimension is the
    # same G009 as the other episodes'
    root = _build(tmp_path, hook=_constant_action)
    _edit_v21(root, lambda e, s: s["action"].update(count=[9]) if e == 1 else None)
    assert _found(_run(root)) == [
        _ep("G007", 1, "'action'.count is 9 but the episode has 3 frame(s)", path=EPS_STATS, key="count"),
        _hazard(1, "1", "7.5", path=EPS_STATS),
        _hazard(0, "1", "7.5", path=EPS_STATS),
        _hazard(2, "1", "7.5", path=EPS_STATS),
        _hazard(None, "1", "7.5", path=EPS_STATS, severity="warning", prefix="aggregate of meta/episodes_stats.jsonl"),
    ]


def test_g009_of_miscounted_short_episodes(tmp_path):
    # entries checked one by one (wrong counts) are held to the episode length: 1 frame has no spread to lose,
    # 2 frames do
    root = _build(tmp_path, hook=_constant_action, episode_lengths=(1, 2, 4))
    _edit_v21(root, lambda e, s: s["action"].update(count=[{0: 3, 1: 5, 2: 4}[e]]))
    assert _found(_run(root)) == [
        _ep("G007", 0, "'action'.count is 3 but the episode has 1 frame(s)", path=EPS_STATS, key="count"),
        _ep("G007", 1, "'action'.count is 5 but the episode has 2 frame(s)", path=EPS_STATS, key="count"),
        _hazard(1, "1", "7.5", path=EPS_STATS),
        _hazard(2, "1", "7.5", path=EPS_STATS),
        _hazard(None, "1", "7.5", path=EPS_STATS, severity="warning", prefix="aggregate of meta/episodes_stats.jsonl"),
    ]


def test_g009_not_for_contradictory_entries_nor_v21_stats_json(tmp_path):
    root = _build(tmp_path, "v3.0", hook=_constant_action)
    _edit_json(root / STATS, lambda s: s["action"].update(mean=[1e6] + s["action"]["mean"][1:]))
    _set_v3(root, 0, "stats/action/std", [1.0, 1.0, -1.0])
    assert [(f[0], f[1], f[5].get("episode")) for f in _found(_run(root))] == [
        ("G005", "warning", 0), ("G009", "info", 1), ("G009", "info", 2), ("G005", "error", None)]
    root = _build(tmp_path, hook=_constant_action, name="v21")
    (root / EPS_STATS).unlink()  # the stats.json of v2.1 is not what the loader normalises with: no G009 for it
    assert [f[0] for f in _g(root)] == ["G001"]  # (only that the loader cannot do without the per-episode ones)


# ============================================================================================ facts for --deep
def test_facts_of_a_clean_v3_dataset(tmp_path):
    root = _build(tmp_path, "v3.0")
    ctx = _run(root)
    facts = ctx.stats_facts
    assert _found(ctx) == []
    assert facts.global_source == STATS
    stored = json.loads((root / STATS).read_text())
    assert set(facts.global_stats) == set(stored)
    np.testing.assert_array_equal(facts.global_stats["action"]["std"], stored["action"]["std"])
    assert (facts.untrusted, facts.inconsistent, facts.stale, facts.miscounted) == (set(), {}, set(), set())
    assert facts.reader is not None and facts.reader.kind == "parquet" and facts.reader.keep_bytes == 0
    assert _run(root, deep=True).stats_facts.reader.keep_bytes == StatsBlocks.KEEP_BYTES
    assert _run(root, deep=True, ignore={"G010"}).stats_facts.reader.keep_bytes == 0


def test_the_statistics_family_lets_go_of_the_files_it_streamed_unless_deep_looks_them_up(tmp_path, monkeypatch):
    # the episodes file in 3 row groups read in 3 pieces (BLOCK_ROWS 1): a file read in several pieces stays open
    # while a block of it may be read again
    root = _build(tmp_path, "v3.0")
    pq.write_table(pq.read_table(root / EPS_V3), root / EPS_V3, row_group_size=1)
    monkeypatch.setattr(StatsBlocks, "BLOCK_ROWS", 1)
    # nothing looks the statistics up again (no --deep, or --deep without G010): the family lets go of the file
    # (and its parsed footer) when it ends, not with the context
    for opts in ({}, {"deep": True, "ignore": {"G010"}}):
        ctx = _run(root, **opts)
        assert _found(ctx) == []
        assert ctx.stats_facts.reader.kind == "parquet" and ctx.stats_facts.reader._files == {}
    # --deep looks them up: blocks that are not kept are read again from the file, which stays open
    monkeypatch.setattr(StatsBlocks, "KEEP_BYTES", 0)
    reader = _run(root, deep=True).stats_facts.reader
    assert list(reader._files) == [EPS_V3]


def test_facts_of_v20_and_v21(tmp_path):
    ctx = _run(_v20(tmp_path / "a"))
    assert ctx.stats_facts.reader is None and ctx.stats_facts.global_source == STATS
    assert "action" in ctx.stats_facts.global_stats
    root = _build(tmp_path / "b")
    ctx = _run(root)
    assert ctx.stats_facts.reader.kind == "jsonl"
    # the v2.1 effective statistics: the aggregate, not stats.json (made different here)
    _edit_json(root / STATS, lambda s: s["action"].update(mean=[0.0, 0.0, 0.0]))
    facts = _run(root).stats_facts
    np.testing.assert_allclose(facts.global_stats["action"]["mean"], _aggregate(root)["action"]["mean"], rtol=1e-12)
    assert facts.global_stats["action"]["count"].tolist() == [12]


def test_facts_v21_aggregate_includes_contradictory_entries(tmp_path):
    # lerobot 0.3 aggregates every readable entry, also one that contradicts itself
    root = _build(tmp_path)
    _set_v21(root, 1, "action", _entry(3, {"mean": 5.0}, quantiles=False))
    ctx = _run(root)
    assert [f[0] for f in _found(ctx)] == ["G005"]
    np.testing.assert_allclose(ctx.stats_facts.global_stats["action"]["mean"], _aggregate(root)["action"]["mean"],
                               rtol=1e-12)
