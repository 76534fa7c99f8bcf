"""Mixture files held to their exact findings: family M on the dataset side (M003 feature mapping, M004 episode
lists) and every cross-dataset check of family X (X001-X011).

Each test builds small real datasets with :mod:`lerobot_tools.testing.synth` (no video files), copies and edits
them in one way, writes a real mixture file (text or OpenTau JSON, docs/mixtures.md) and runs the real
:func:`~lerobot_tools.validate.validate`. Findings are compared whole (check, severity, path, message, subject,
group): which dataset of a mixture a finding lands on (the minority of a disagreement), the majority it names,
and the boundary of every tolerance (fps against action_freq, the half of a mixture, the lists cut short).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from lerobot_tools.checks import catalogue
from lerobot_tools.checks.engine import ValidateOptions
from lerobot_tools.findings import Finding, NotChecked
from lerobot_tools.testing.synth import SynthSpec, build_dataset
from lerobot_tools.validate import validate

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "datasets"
CAM = "observation.images.front"
EFFORT = "observation.effort"
LEFT_OUT = NotChecked("X (mixture compatibility)", "the dataset or its meta/info.json could not be read; it is left "
                      "out of the cross-dataset checks")
TAIL_X001 = ("but this dataset maps none of them and has no feature of that name: collate raises KeyError on a batch "
             "mixing it with the others")
TAIL_X005 = ("and the mixture sets no action_freq: delta_timestamps windows cover different numbers of frames and "
             "actions mix control rates (set action_freq to resample)")
UNUSABLE = "statistics for the mixture's normalised features are unusable ({}): aggregating or applying them raises"
VERSIONS = "lrtool and OpenTau load both; upstream lerobot >= 0.4 loads v3.0 only"


# ---------------------------------------------------------------------------------------------- helpers
BASES = {
    "v30": {},
    "v21": {"version": "v2.1"},
    "act3": {"action_dim": 3},
    "effort": {"extra_vector_features": {"observation.effort": 2}},
    "wide": {"extra_vector_features": {"observation.effort": 2, "observation.velocity": 2, "observation.torque": 2}},
    "cam": {"video_keys": (CAM,), "video_size": (32, 32)},
    "cased": {"tasks": ("Pick up  the cube", "place the cube in the bin")},
}


@pytest.fixture(scope="module")
def bases(tmp_path_factory) -> dict[str, Path]:
    """The datasets every test copies from (built once): 2 episodes of 3 and 2 frames at 10 fps, float32
    ``action`` and ``observation.state`` of 2 values, tasks 'pick up the cube' and 'place the cube in the bin'."""
    top = tmp_path_factory.mktemp("bases")
    out = {}
    for name, kw in BASES.items():
        spec = dict(video_keys=(), video_codec=None, state_dim=2, action_dim=2, episode_lengths=(3, 2))
        spec.update(kw)
        out[name] = build_dataset(top / name, SynthSpec(**spec))
    return out


@pytest.fixture
def make(bases, tmp_path):
    """``make(name, base="v30")``: a copy of a base dataset at ``tmp_path/name`` (its own folder, its own name)."""
    def make(name: str, base: str = "v30") -> Path:
        dst = tmp_path / name
        shutil.copytree(bases[base], dst)
        return dst
    return make


def edit_json(path: Path, fn) -> None:
    doc = json.loads(path.read_text())
    fn(doc)
    path.write_text(json.dumps(doc, indent=4))


def set_info(root: Path, **keys) -> None:
    edit_json(root / "meta/info.json", lambda d: d.update(keys))


def set_feature(root: Path, name: str, **ft) -> None:
    edit_json(root / "meta/info.json", lambda d: d["features"][name].update(ft))


def mix_json(tmp_path: Path, entries: list, name: str = "mix.json", **settings) -> Path:
    """An OpenTau training config: ``dataset_mixture.datasets`` (a Path is ``{"root": path}``) plus ``settings``."""
    items = [{"root": str(e)} if isinstance(e, Path) else e for e in entries]
    path = tmp_path / name
    path.write_text(json.dumps({"dataset_mixture": {"datasets": items, **settings}}))
    return path


def mix_txt(tmp_path: Path, *lines: str, name: str = "mix.txt") -> Path:
    path = tmp_path / name
    path.write_text("".join(f"{x}\n" for x in lines))
    return path


def run(*args, **opts):
    return validate([str(a) for a in args], ValidateOptions(**opts))


def xs(reports, *checks: str) -> list[tuple[int, Finding]]:
    """``(report position, finding)`` of every X finding (or of ``checks``), in report order."""
    return [(i, f) for i, r in enumerate(reports) for f in r.findings
            if (f.check in checks if checks else f.check.startswith("X"))]


def ms(report, check: str) -> list[Finding]:
    return [f for f in report.findings if f.check == check]


def X(check: str, severity: str, message: str, path: str | None = None, **subject) -> Finding:
    return Finding(check, severity, path, message, subject=subject)


def warn_dropped(name: str, holders: int, n: int, missing_from: str) -> str:
    return (f"feature {name!r} is provided by {holders} of {n} datasets only and no mapping asks for it: mixture "
            f"batches leave it out (missing from {missing_from})")


def warn_lacks(name: str, holders: int, n: int) -> str:
    return (f"this dataset lacks {name!r}, which {holders} of {n} datasets provide: mixture batches leave it out "
            "for every dataset (map it, or add it here)")


# ============================================================================ M003: the feature mapping
def test_m003_each_role_mapped_to_an_absent_column(make, tmp_path):
    """'task' is a virtual column and an existing column is fine; an absent column is M003, once per role, and the
    role it defines is not also X001 on this dataset (it does map it)."""
    d = make("d")
    mapping = {"actions": "act", "prompt": "task", "state": "observation.state", "wrist": "observation.images.wrist"}
    (r,) = run(mix_json(tmp_path, [{"root": str(d), "data_features_name_mapping": mapping}]))
    assert ms(r, "M003") == [
        Finding("M003", "error", None, "data_features_name_mapping maps 'actions' to 'act', which is not a feature "
                "of this dataset", subject={"feature": "act"}),
        Finding("M003", "error", None, "data_features_name_mapping maps 'wrist' to 'observation.images.wrist', "
                "which is not a feature of this dataset", subject={"feature": "observation.images.wrist"})]
    assert xs([r]) == []


def test_m003_on_its_dataset_and_the_unmapped_column_dropped(make, tmp_path):
    """d1 maps 'actions' to a column it lacks: M003 there, no X001 (it asks for the role), and its own 'action',
    unmapped, is held by 1 of 2 datasets: exactly half is the minority that has it."""
    d0, d1 = make("d0"), make("d1")
    reports = run(mix_json(tmp_path, [{"root": str(d0), "data_features_name_mapping": {"actions": "action"}},
                                      {"root": str(d1), "data_features_name_mapping": {"actions": "act"}}]))
    assert [f.subject for f in ms(reports[1], "M003")] == [{"feature": "act"}] and not ms(reports[0], "M003")
    assert xs(reports) == [(1, X("X002", "warning", warn_dropped("action", 1, 2, str(d0)), feature="action"))]


# ============================================================================ M004: the episode lists
def _m004(attr: str, absent: str, n_absent: int, have: int = 2) -> Finding:
    return Finding("M004", "error", None, f"{attr} requests {n_absent} episode(s) the dataset does not have ({absent}; "
                   f"it has {have})", subject={"key": attr})


@pytest.mark.parametrize("attr", ["episodes", "excluded_episodes"])
def test_m004_lists_at_most_eight_episodes(make, tmp_path, attr):
    d = make("d")  # episodes 0 and 1

    def m004(wanted: list[int]) -> list[Finding]:
        (r,) = run(mix_json(tmp_path, [{"root": str(d), attr: wanted}]))
        return ms(r, "M004")

    assert m004([0, 1]) == []
    assert m004([0, 2]) == [_m004(attr, "2", 1)]
    assert m004([1, 5, 5, 3]) == [_m004(attr, "3, 5", 2)]  # a repeated index counts once
    assert m004(list(range(10))) == [_m004(attr, "2, 3, 4, 5, 6, 7, 8, 9", 8)]  # 8 absent: all shown
    assert m004(list(range(11))) == [_m004(attr, "2, 3, 4, 5, 6, 7, 8, 9 and 1 more", 9)]
    assert m004(list(range(12))) == [_m004(attr, "2, 3, 4, 5, 6, 7, 8, 9 and 2 more", 10)]


def test_m004_both_lists_and_the_text_form(make, tmp_path):
    d = make("d")
    (r,) = run(mix_json(tmp_path, [{"root": str(d), "episodes": [0, 7], "excluded_episodes": [8, 9, 1]}]))
    assert ms(r, "M004") == [_m004("episodes", "7", 1), _m004("excluded_episodes", "8, 9", 2)]
    (r,) = run(mix_txt(tmp_path, f"{d} episodes=1,3,3,4-5"))
    assert ms(r, "M004") == [_m004("episodes", "3, 4, 5", 3)]


def test_m004_sparse_indices_are_looked_up_not_counted(tmp_path):
    """v2.1 with episodes 0, 1, 3 (episode 2 deleted): 3 exists though there are 3 episodes."""
    root = tmp_path / "sparse"
    build_dataset(root, SynthSpec(version="v2.1", video_keys=(), video_codec=None, state_dim=2, action_dim=2,
                                  episode_lengths=(3, 2, 2, 3)))
    (root / "data/chunk-000/episode_000002.parquet").unlink()
    for name in ("episodes.jsonl", "episodes_stats.jsonl"):
        p = root / "meta" / name
        p.write_text("".join(x + "\n" for x in p.read_text().splitlines() if json.loads(x)["episode_index"] != 2))
    (r,) = run(mix_json(tmp_path, [{"root": str(root), "episodes": [0, 3], "excluded_episodes": [2, 4]}]))
    assert ms(r, "M004") == [_m004("excluded_episodes", "2, 4", 2, have=3)]


@pytest.mark.parametrize("attr", ["episodes", "excluded_episodes"])
def test_m004_not_checked_without_episode_metadata(make, tmp_path, attr):
    d = make("d")
    shutil.rmtree(d / "meta/episodes")
    (r,) = run(mix_json(tmp_path, [{"root": str(d), attr: [0, 9]}]))
    assert ms(r, "M004") == []
    assert [n for n in r.not_checked if "M004" in n.checks] == [
        NotChecked("M004, M005", "the episode metadata could not be read")]  # M005 (no episode selected) too
    (r,) = run(d)  # no list asked for: nothing to skip
    assert [n for n in r.not_checked if "M004" in n.checks] == []


# ============================================================================ X001-X002: names after the mapping
def test_x001_roles_missing_and_x002_names_dropped(make, tmp_path):
    """d0 maps 'actions' and 'grip'; d1, d2 map 'actions'; d3 maps nothing. Each lacking dataset names the roles
    it misses and who maps them (2 names, then a count); what only some datasets have goes on the minority."""
    d = [make(f"d{i}") for i in range(4)]
    maps = [{"actions": "action", "grip": "observation.state"}, {"actions": "action"}, {"actions": "action"}, None]
    entries = [{"root": str(p), **({"data_features_name_mapping": m} if m else {})} for p, m in zip(d, maps)]
    reports = run(mix_json(tmp_path, entries))
    grip = f"the mixture's feature mapping uses 'grip' (mapped by 1 of 4 datasets, e.g. {d[0]}) {TAIL_X001}"
    both = (f"the mixture's feature mapping uses 'actions', 'grip' (mapped by 3 of 4 datasets, e.g. {d[0]}, {d[1]} "
            f"and 1 more) {TAIL_X001}")
    assert xs(reports) == [
        (0, X("X002", "warning", warn_lacks("observation.state", 3, 4), feature="observation.state")),
        (1, X("X001", "error", grip, feature="grip")),
        (2, X("X001", "error", grip, feature="grip")),
        (3, X("X001", "error", both, feature=["actions", "grip"])),
        (3, X("X002", "warning", warn_dropped("action", 1, 4, f"{d[0]}, {d[1]}, {d[2]}"), feature="action")),
    ]


def test_x002_exactly_half_holding_a_feature_is_the_minority(make, tmp_path):
    d = [make(f"d{i}", base) for i, base in enumerate(["effort", "v30", "effort", "v30"])]
    assert xs(run(mix_json(tmp_path, d))) == [
        (i, X("X002", "warning", warn_dropped(EFFORT, 2, 4, f"{d[1]}, {d[3]}"), feature=EFFORT)) for i in (0, 2)]


def test_x002_one_holder_of_five_names_three_then_a_count(make, tmp_path):
    d = [make(f"d{i}", "effort" if i == 0 else "v30") for i in range(5)]
    assert xs(run(mix_json(tmp_path, d))) == [
        (0, X("X002", "warning", warn_dropped(EFFORT, 1, 5, f"{d[1]}, {d[2]}, {d[3]} and 1 more"), feature=EFFORT))]


def test_x002_on_the_one_dataset_lacking_what_the_others_hold(make, tmp_path):
    d = [make(f"d{i}", "v30" if i == 1 else "effort") for i in range(5)]
    assert xs(run(mix_json(tmp_path, d))) == [(1, X("X002", "warning", warn_lacks(EFFORT, 4, 5), feature=EFFORT))]


# ============================================================================ X003-X004: kind, shape, dtype
@pytest.mark.parametrize("mapped", [False, True])
def test_x003_shape_on_each_minority_variant(make, tmp_path, mapped):
    """Shapes (2,) (3,) (2,) (4,): the two minorities each name the majority; a role names its column."""
    d = [make("d0"), make("d1", "act3"), make("d2"), make("d3")]
    set_feature(d[3], "action", shape=[4], names=[f"a{i}" for i in range(4)])
    entries = [{"root": str(p), **({"data_features_name_mapping": {"actions": "action"}} if mapped else {})}
               for p in d]
    reports = run(mix_json(tmp_path, entries))
    name, alias = ("'actions' (its 'action')", "actions") if mapped else ("'action'", "action")
    assert xs(reports, "X003", "X004") == [
        (i, X("X003", "error", f"{name} is shape ({k},) here, shape (2,) in 2 of 4 datasets (e.g. {d[0]}, {d[2]}): "
              "collate cannot stack them", feature=alias)) for i, k in ((1, 3), (3, 4))]


def test_x003_x004_name_two_of_a_larger_majority(make, tmp_path):
    d = [make(f"d{i}", "cam") for i in range(4)]
    set_feature(d[2], CAM, shape=[48, 32, 3])
    set_feature(d[3], "action", shape=[3], names=["a0", "a1", "a2"])
    reports = run(mix_json(tmp_path, d))
    assert xs(reports, "X003", "X004") == [
        (2, X("X004", "error", f"camera '{CAM}' is 3x48x32 (CxHxW) here, 3x32x32 (CxHxW) in 3 of 4 datasets (e.g. "
              f"{d[0]}, {d[1]} and 1 more): collate cannot stack frames of different sizes", feature=CAM)),
        (3, X("X003", "error", f"'action' is shape (3,) here, shape (2,) in 3 of 4 datasets (e.g. {d[0]}, {d[1]} and "
              "1 more): collate cannot stack them", feature="action"))]


def test_x003_shape_tie_goes_to_the_first_dataset(make, tmp_path):
    d = [make("d0", "act3"), make("d1"), make("d2", "act3"), make("d3")]
    reports = run(mix_json(tmp_path, d))
    assert xs(reports, "X003") == [
        (i, X("X003", "error", f"'action' is shape (2,) here, shape (3,) in 2 of 4 datasets (e.g. {d[0]}, {d[2]}): "
              "collate cannot stack them", feature="action")) for i in (1, 3)]


@pytest.mark.parametrize("mapped", [False, True])
def test_x003_dtype_is_a_warning(make, tmp_path, mapped):
    d = [make("d0"), make("d1"), make("d2")]
    set_feature(d[1], "action", dtype="float64")
    entries = [{"root": str(p), **({"data_features_name_mapping": {"actions": "action"}} if mapped else {})}
               for p in d]
    name, alias = ("'actions' (its 'action')", "actions") if mapped else ("'action'", "action")
    assert xs(run(mix_json(tmp_path, entries))) == [
        (1, X("X003", "warning", f"{name} is float64 here, float32 in 2 of 3 datasets: batches get float64 or the "
              "first sample's dtype depending on the mix and the worker (MixtureDataset casts to one dtype)",
              feature=alias))]


def test_x003_kind_camera_beside_numeric(make, tmp_path):
    d = [make("d0", "cam"), make("d1", "cam"), make("d2")]
    maps = [{"front": CAM}, {"front": CAM}, {"front": "observation.state"}]
    reports = run(mix_json(tmp_path, [{"root": str(p), "data_features_name_mapping": m} for p, m in zip(d, maps)]))
    assert xs(reports) == [
        (2, X("X002", "warning", warn_lacks("observation.state", 2, 3), feature="observation.state")),
        (2, X("X003", "error", f"'front' (its 'observation.state') is a numeric feature here, a camera feature in 2 of "
              f"3 datasets (e.g. {d[0]}, {d[1]}): collate cannot stack them", feature="front"))]


@pytest.mark.parametrize("mapped", [False, True])
def test_x004_camera_resolution(make, tmp_path, mapped):
    d = [make("d0", "cam"), make("d1", "cam"), make("d2", "cam")]
    set_feature(d[1], CAM, shape=[64, 64, 3])
    entries = [{"root": str(p), **({"data_features_name_mapping": {"camera0": CAM}} if mapped else {})} for p in d]
    name, alias = (f"'camera0' (its '{CAM}')", "camera0") if mapped else (f"'{CAM}'", CAM)
    assert xs(run(mix_json(tmp_path, entries))) == [
        (1, X("X004", "error", f"camera {name} is 3x64x64 (CxHxW) here, 3x32x32 (CxHxW) in 2 of 3 datasets (e.g. "
              f"{d[0]}, {d[2]}): collate cannot stack frames of different sizes", feature=alias))]


def test_x004_not_for_the_same_frames_declared_channels_first(make, tmp_path):
    d = [make("d0", "cam"), make("d1", "cam")]
    set_feature(d[1], CAM, shape=[3, 32, 32], names=["channels", "height", "width"])
    assert xs(run(mix_json(tmp_path, d))) == []


# ============================================================================ X005-X006: rates
def test_x005_fps_against_the_majority_of_valid_rates(make, tmp_path):
    """fps 10, 10, 15 and one unusable fps (0, I005): the majority is counted among the 3 with a rate."""
    d = [make(f"d{i}") for i in range(4)]
    set_info(d[2], fps=15)
    set_info(d[3], fps=0)
    reports = run(mix_json(tmp_path, d))
    assert xs(reports) == [(2, X("X005", "warning", f"fps 15 here, 10 in 2 of 3 datasets, {TAIL_X005}", key="fps"))]
    assert xs(run(mix_json(tmp_path, d[:2] + d[3:]))) == []  # one rate only


def test_x005_tie_goes_to_the_first_rate(make, tmp_path):
    d = [make("d0"), make("d1")]
    set_info(d[0], fps=12.5)
    assert xs(run(mix_json(tmp_path, d))) == [
        (1, X("X005", "warning", f"fps 10 here, 12.5 in 1 of 2 datasets, {TAIL_X005}", key="fps"))]


SHALLOW = "timestamps not checked (run with --deep to check they are frame_index/fps)"
HELD = "the policy sees held actions that were never commanded at that rate"


@pytest.mark.parametrize("hz, severity, how", [
    (5, "info", f"downsampled by 2x); {SHALLOW}"),
    (4, "info", f"downsampled by 2.5x); {SHALLOW}"),
    (30, "warning", f"upsampled by 3x, each frame repeated): {HELD}"),
    (10 * (1 + 2e-9), "warning", f"upsampled by 1x, each frame repeated): {HELD}"),  # just outside rel_tol 1e-9
    (10 * (1 - 2e-9), "info", f"downsampled by 1x); {SHALLOW}"),
    (10, None, None),
    (10 * (1 + 5e-10), None, None),  # just inside
    (10 * (1 - 5e-10), None, None),
])
def test_x006_each_side_of_action_freq(make, tmp_path, hz, severity, how):
    d = make("d")
    reports = run(mix_json(tmp_path, [d], action_freq=hz))
    want = [] if how is None else [
        (0, X("X006", severity, f"resampled from 10 fps to action_freq {hz:g} Hz ({how}", key="fps"))]
    assert xs(reports) == want


def test_x006_deep_says_the_timestamps_were_checked_and_skips_unusable_fps(make, tmp_path):
    d = [make("d0"), make("d1")]
    set_info(d[1], fps=0)
    reports = run(mix_json(tmp_path, d, action_freq=5), deep=True)
    assert xs(reports) == [(0, X("X006", "info", "resampled from 10 fps to action_freq 5 Hz (downsampled by 2x); "
                                 "timestamps on the frame grid (checked with --deep)", key="fps"))]


@pytest.mark.parametrize("hz, how", [(5, "downsampled by 2x"), (30, "upsampled by 3x, each frame repeated")])
def test_x006_off_the_frame_grid_is_a_warning_either_way(tmp_path, hz, how):
    root = FIXTURES / "broken_timestamps"  # fps 10, D003 with --deep
    reports = run(mix_json(tmp_path, [root], action_freq=hz), deep=True)
    assert xs(reports) == [(0, X("X006", "warning", f"resampled from 10 fps to action_freq {hz} Hz ({how}), but its "
                                 "timestamps are not frame_index/fps (D003): resampling by time picks the wrong frames",
                                 key="fps"))]


# ============================================================================ X007: versions
def test_x007_each_minority_version_with_the_summary(make, tmp_path):
    d = [make("d0"), make("d1", "v21"), make("d2"), make("d3", "v21")]
    set_info(d[3], codebase_version="v2.0")
    summary = "(v3.0 x2, v2.1 x1, v2.0 x1)"
    assert xs(run(mix_json(tmp_path, d))) == [
        (1, X("X007", "info", f"v2.1 beside v3.0 in this mixture {summary}: {VERSIONS}", key="codebase_version")),
        (3, X("X007", "info", f"v2.0 beside v3.0 in this mixture {summary}: {VERSIONS}", key="codebase_version"))]
    assert xs(run(mix_json(tmp_path, [d[1], d[0]]))) == [
        (1, X("X007", "info", f"v3.0 beside v2.1 in this mixture (v2.1 x1, v3.0 x1): {VERSIONS}",
              key="codebase_version"))]


# ============================================================================ X008: statistics
def _no_stats(names: str, path: str = "meta/stats.json") -> str:
    return f"no readable statistics ({path}): normalising the mixture's {names} fails for this dataset"


def test_x008_no_statistics_names_the_normalised_features(make, tmp_path):
    d = [make("d0"), make("d1")]
    (d[1] / "meta/stats.json").unlink()
    reports = run(mix_json(tmp_path, [{"root": str(p), "data_features_name_mapping": {"actions": "action"}}
                                      for p in d]))
    assert xs(reports) == [(1, X("X008", "error", _no_stats("'actions', 'observation.state'"), "meta/stats.json",
                                 feature=["actions", "observation.state"]))]


@pytest.mark.parametrize("drop, shown", [
    (None, "'action', 'observation.state', 'observation.effort', 'observation.velocity' ..."),
    ("observation.torque", "'action', 'observation.state', 'observation.effort', 'observation.velocity'"),
    ("observation.velocity", "'action', 'observation.state', 'observation.effort', 'observation.torque'"),
])
def test_x008_no_statistics_shows_four_names(make, tmp_path, drop, shown):
    d = make("d", "wide")
    (d / "meta/stats.json").unlink()
    if drop:
        edit_json(d / "meta/info.json", lambda doc: doc["features"].pop(drop))
    names = [n for n in ("action", "observation.state", "observation.effort", "observation.velocity",
                         "observation.torque") if n != drop]
    assert xs(run(mix_json(tmp_path, [d]))) == [(0, X("X008", "error", _no_stats(shown), "meta/stats.json",
                                                       feature=names))]


def test_x008_stats_json_not_an_object(make, tmp_path):
    d = make("d")
    (d / "meta/stats.json").write_text("[1, 2]")
    assert xs(run(mix_json(tmp_path, [d]))) == [
        (0, X("X008", "error", _no_stats("'action', 'observation.state'"), "meta/stats.json",
              feature=["action", "observation.state"]))]


def _stats_lines(root: Path, fn) -> None:
    """Rewrite meta/episodes_stats.jsonl line by line: ``fn(i, obj)`` returns the line to write (str) or None."""
    p = root / "meta/episodes_stats.jsonl"
    lines = [json.loads(x) for x in p.read_text().splitlines()]
    p.write_text("".join(f"{x}\n" for i, o in enumerate(lines) if (x := fn(i, o)) is not None))


def test_x008_v21_reads_the_per_episode_statistics(make, tmp_path):
    """A v2.1 dataset without meta/stats.json is normalised from meta/episodes_stats.jsonl: a feature has stats when
    every episode line has them; a line that does not parse, or holds no stats object, is passed over."""
    ok, partial = make("ok", "v21"), make("partial", "v21")
    for d in (ok, partial):
        (d / "meta/stats.json").unlink()
    _stats_lines(ok, lambda i, o: "{not json\n" + json.dumps({"episode_index": 9, "stats": [1]}) + "\n" +
                 json.dumps(o) if i == 0 else json.dumps(o))

    def drop_state(i, o):
        if i == 1:
            o["stats"].pop("observation.state")
        return json.dumps(o)
    _stats_lines(partial, drop_state)
    reports = run(mix_json(tmp_path, [ok, partial]))
    assert xs(reports) == [(1, X("X008", "error", UNUSABLE.format("'observation.state' lacks mean/std/min/max"),
                                 "meta/episodes_stats.jsonl", feature="observation.state"))]


def test_x008_v21_without_usable_statistics_names_the_file_read(make, tmp_path):
    garbage, binary, neither = make("garbage", "v21"), make("binary", "v21"), make("neither", "v21")
    for d in (garbage, binary, neither):
        (d / "meta/stats.json").unlink()
    (garbage / "meta/episodes_stats.jsonl").write_text("{oops\n[1, 2]\n")
    (binary / "meta/episodes_stats.jsonl").write_bytes(b'{"episode_index": 0, "stats": {}}\n\xff\xfe\n')
    (neither / "meta/episodes_stats.jsonl").unlink()
    msg = "'action', 'observation.state'"
    feats = ["action", "observation.state"]
    assert xs(run(mix_json(tmp_path, [garbage, binary, neither]))) == [
        (0, X("X008", "error", _no_stats(msg, "meta/episodes_stats.jsonl"), "meta/episodes_stats.jsonl",
              feature=feats)),
        (1, X("X008", "error", _no_stats(msg, "meta/episodes_stats.jsonl"), "meta/episodes_stats.jsonl",
              feature=feats)),
        (2, X("X008", "error", _no_stats(msg), "meta/stats.json", feature=feats))]


def test_x008_v30_without_stats_json_does_not_read_per_episode_statistics(make, tmp_path):
    d = make("d")
    (d / "meta/stats.json").unlink()
    (d / "meta/episodes_stats.jsonl").write_text(json.dumps({"episode_index": 0, "stats": {
        k: {"mean": [0, 0], "std": [1, 1], "min": [0, 0], "max": [1, 1]} for k in ("action", "observation.state")}}))
    assert [f.path for _, f in xs(run(mix_json(tmp_path, [d])))] == ["meta/stats.json"]


def _spoil_stats(root: Path, **per_feature) -> None:
    def fn(doc):
        for name, change in per_feature.items():
            if callable(change):
                change(doc[name])
            else:
                doc[name] = change
    edit_json(root / "meta/stats.json", fn)


def test_x008_missing_statistics_one_and_two_features(make, tmp_path):
    one, two = make("one"), make("two")
    _spoil_stats(one, action=lambda s: s.pop("std"))
    _spoil_stats(two, action=lambda s: (s.pop("min"), s.pop("max")), **{"observation.state": [1, 2]})
    assert xs(run(mix_json(tmp_path, [one, two]))) == [
        (0, X("X008", "error", UNUSABLE.format("'action' lacks std"), "meta/stats.json", feature="action")),
        (1, X("X008", "error", UNUSABLE.format("'action' lacks min/max; 'observation.state' lacks mean/std/min/max"),
              "meta/stats.json", feature=["action", "observation.state"]))]


def test_x008_absent_statistics_of_a_mapped_key(make, tmp_path):
    d = [make("d0"), make("d1")]
    edit_json(d[1] / "meta/stats.json", lambda doc: doc.pop("action"))
    reports = run(mix_json(tmp_path, [{"root": str(p), "data_features_name_mapping": {"actions": "action"}}
                                      for p in d]))
    assert xs(reports) == [(1, X("X008", "error", UNUSABLE.format("'actions' (its 'action') lacks mean/std/min/max"),
                                 "meta/stats.json", feature="action"))]


@pytest.mark.parametrize("mean, got", [
    ([0.5, 1.5, 2.5], 3), ([1, 2, 3], 3), ([[0.5], [1.5], [2.5]], 3), ([0.5], 1), ([[0.5, 1.5], [2.5, 3.5]], 4),
    ([0.5, 1.5], None), ([[0.5], [1.5]], None),  # the right count, nested or not
    ([True, 1.5, 2.5], None), ([0.5, "x", 1.0, 2.0], None), ([[0.5], None, [1.0]], None), ("0.5", None),
    (0.5, 1),  # not countable, or a scalar
])
def test_x008_mean_of_another_length(make, tmp_path, mean, got):
    d = make("d")
    _spoil_stats(d, action=lambda s: s.update(mean=mean))
    reports = run(mix_json(tmp_path, [{"root": str(d), "data_features_name_mapping": {"actions": "action"}}]))
    want = [] if got is None else [(0, X("X008", "error", UNUSABLE.format(
        f"'actions' (its 'action') mean has {got} values for shape [2]"), "meta/stats.json", feature="action"))]
    assert xs(reports) == want


def test_x008_three_problems_shown_then_dots(make, tmp_path):
    three, four = make("three", "wide"), make("four", "wide")
    names = ("action", "observation.state", "observation.effort", "observation.velocity", "observation.torque")
    _spoil_stats(three, **{n: (lambda s: s.pop("mean")) for n in names[:3]})
    _spoil_stats(four, **{n: (lambda s: s.pop("mean")) for n in names[:3]}, **{names[4]: lambda s: s.update(
        mean=[0.0])})
    shown = "'action' lacks mean; 'observation.state' lacks mean; 'observation.effort' lacks mean"
    assert xs(run(mix_json(tmp_path, [three, four]))) == [
        (0, X("X008", "error", UNUSABLE.format(shown), "meta/stats.json", feature=list(names[:3]))),
        (1, X("X008", "error", UNUSABLE.format(shown + " ..."), "meta/stats.json",
              feature=[*names[:3], names[4]]))]


def test_x008_camera_needs_its_statistics_not_their_length(make, tmp_path):
    lacking, odd = make("lacking", "cam"), make("odd", "cam")
    _spoil_stats(lacking, **{CAM: lambda s: s.pop("max")})
    _spoil_stats(odd, **{CAM: lambda s: s.update(mean=[0.5] * 7)})
    assert xs(run(mix_json(tmp_path, [lacking, odd]))) == [
        (0, X("X008", "error", UNUSABLE.format(f"'{CAM}' lacks max"), "meta/stats.json", feature=CAM))]


# ============================================================================ X009-X010: tasks
def _x009(key: str, hint: str = "") -> Finding:
    return X("X009", "error", f"prompt_substitutions key {key!r} is not a task of this dataset{hint}: OpenTau raises "
             "ValueError for unknown keys", task=key)


def test_x009_unknown_keys_with_a_near_spelling(make, tmp_path):
    d = make("d")
    subs = {"pick up the cube": "grab the cube", "ＰＩＣＫ up  the Cube": "x", "stack the blocks": "y",
            "pickup the cube": "z"}
    assert xs(run(mix_json(tmp_path, [{"root": str(d), "prompt_substitutions": subs}]))) == [
        (0, _x009("ＰＩＣＫ up  the Cube", " (did you mean 'pick up the cube'?)")), (0, _x009("stack the blocks")),
        (0, _x009("pickup the cube"))]
    assert xs(run(mix_json(tmp_path, [{"root": str(d), "prompt_substitutions": ["stack the blocks"]}]))) == []


def test_x009_alone_still_reads_every_dataset(make, tmp_path):
    """With X010 not selected only datasets with substitutions are read; one without them comes first."""
    d = [make("d0"), make("d1"), make("d2", "cased")]
    entries = [{"root": str(d[0])}, {"root": str(d[1]), "prompt_substitutions": {"bogus": "x"}}, {"root": str(d[2])}]
    assert xs(run(mix_json(tmp_path, entries), select={"X009"})) == [(1, _x009("bogus"))]
    assert xs(run(mix_json(tmp_path, entries), ignore={"X010"})) == [(1, _x009("bogus"))]


def test_x009_extras_follow_merged_identical_entries(make, tmp_path):
    """Entries 0 and 1 are identical and validated once: entry 2's substitutions stay entry 2's."""
    a, b = make("a"), make("b")
    same = {"root": str(a), "prompt_substitutions": {"pick up the cube": "grab"}}
    reports = run(mix_json(tmp_path, [same, same, {"root": str(b), "prompt_substitutions": {"bogus": "x"}}]))
    assert len(reports) == 2 and xs(reports) == [(1, _x009("bogus"))]


def _x010(spelling: str, major: str, k: int) -> Finding:
    return X("X010", "info", f"task {spelling!r} is spelled {major!r} in {k} other dataset(s): the model sees two "
             "prompts for one task", task=spelling)


def test_x010_two_datasets_spelling_one_task_two_ways(make, tmp_path):
    d = [make("d0"), make("d1", "cased")]
    assert xs(run(mix_json(tmp_path, d))) == [(1, _x010("Pick up  the cube", "pick up the cube", 1))]
    d2 = make("d2", "cased")
    assert xs(run(mix_json(tmp_path, [d[1], d[0], d2]))) == [(1, _x010("pick up the cube", "Pick up  the cube", 2))]


def test_x010_alone_still_finds_the_spellings(make, tmp_path):
    d = [make("d0"), make("d1", "cased")]
    assert xs(run(mix_json(tmp_path, d), select={"X010"})) == [(1, _x010("Pick up  the cube", "pick up the cube", 1))]


def test_x010_passes_over_unreadable_tasks(make, tmp_path):
    d = [make("d0"), make("d1"), make("d2", "cased")]
    (d[1] / "meta/tasks.parquet").unlink()
    entries = [{"root": str(d[0])}, {"root": str(d[1]), "prompt_substitutions": {"bogus": "x"}}, {"root": str(d[2])}]
    assert xs(run(mix_json(tmp_path, entries))) == [(2, _x010("Pick up  the cube", "pick up the cube", 1))]
    assert xs(run(mix_json(tmp_path, entries), ignore={"X010"})) == []


# ============================================================================ X011: weights
WEIGHT0 = "weight 0: listed in the mixture but never drawn (remove it, or give it a weight)"
ALL0 = "every dataset of the mixture has weight 0: the sampler has nothing to draw (OpenTau raises ValueError)"


def test_x011_weight_zero_text_and_json(make, tmp_path):
    d = [make("d0"), make("d1"), make("d2")]
    reports = run(mix_txt(tmp_path, f"{d[0]} weight=1", f"{d[1]} weight=0", f"{d[2]} weight=0.5"))
    assert xs(reports) == [(1, X("X011", "warning", WEIGHT0, key="weight"))]
    assert xs(run(mix_json(tmp_path, d, weights=[0, 0.001, 0]))) == [
        (0, X("X011", "warning", WEIGHT0, key="weight")), (2, X("X011", "warning", WEIGHT0, key="weight"))]
    assert xs(run(mix_json(tmp_path, d, weights=[1, 2, 3]))) == [] and xs(run(mix_json(tmp_path, d))) == []


def test_x011_every_weight_zero_is_an_error_on_each(make, tmp_path):
    d = [make("d0"), make("d1")]
    assert xs(run(mix_json(tmp_path, d, weights=[0, 0]))) == [
        (i, X("X011", "error", ALL0, key="weight")) for i in (0, 1)]
    # a dataset left out of the checks does not count: the readable ones have nothing to draw
    reports = run(mix_txt(tmp_path, f"{d[0]} weight=0", f"{tmp_path / 'absent'} weight=3", f"{d[1]} weight=0"))
    assert xs(reports) == [(i, X("X011", "error", ALL0, key="weight")) for i in (0, 2)]
    assert LEFT_OUT in reports[1].not_checked


# ============================================================================ selection, and which reports
def test_select_and_ignore_pick_single_x_checks(make, tmp_path):
    d = [make("d0"), make("d1"), make("d2", "v21")]
    set_info(d[1], fps=15)
    mix = mix_json(tmp_path, d)
    fps = (1, X("X005", "warning", f"fps 15 here, 10 in 2 of 3 datasets, {TAIL_X005}", key="fps"))
    version = (2, X("X007", "info", f"v2.1 beside v3.0 in this mixture (v3.0 x2, v2.1 x1): {VERSIONS}",
                    key="codebase_version"))
    assert xs(run(mix)) == [fps, version]
    assert xs(run(mix, select={"X005"})) == [fps]
    assert xs(run(mix, ignore={"X005"})) == [version]


def test_left_out_datasets_are_noted_only_when_x_runs(make, tmp_path):
    """An absent folder (M001) and a malformed line (M002) are left out of family X, and out of its counts."""
    d = [make("d0"), make("d1")]
    set_info(d[1], fps=15)
    mix = mix_txt(tmp_path, str(d[0]), str(tmp_path / "absent"), f"{d[0]} episodes=x", str(d[1]))
    reports = run(mix)
    assert xs(reports) == [(3, X("X005", "warning", f"fps 15 here, 10 in 1 of 2 datasets, {TAIL_X005}", key="fps"))]
    assert [LEFT_OUT in r.not_checked for r in reports] == [False, True, True, False]
    assert [f.check for r in reports[1:3] for f in r.findings] == ["M001", "M002"]
    for opts in ({"select": {"M001", "M002", "I005"}}, {"ignore": set(catalogue.CATALOGUE) - {"M001", "M002"}}):
        reports = run(mix, **opts)
        assert xs(reports) == [] and not any(LEFT_OUT in r.not_checked for r in reports), opts


def test_findings_land_on_the_reports_of_their_own_mixture(make, tmp_path):
    """A folder, then two mixture files: each mixture is checked on its own datasets, its findings on its reports."""
    d = [make("d0"), make("d1"), make("d2", "v21")]
    set_info(d[1], fps=15)
    first = mix_json(tmp_path, [d[0], d[1]], name="first.json")
    second = mix_txt(tmp_path, str(d[0]), str(d[2]), name="second.txt")
    reports = run(d[1], first, second)
    assert [r.root for r in reports] == [str(d[1]), str(d[0]), str(d[1]), str(d[0]), str(d[2])]
    assert xs(reports) == [
        (2, X("X005", "warning", f"fps 15 here, 10 in 1 of 2 datasets, {TAIL_X005}", key="fps")),
        (4, X("X007", "info", f"v2.1 beside v3.0 in this mixture (v3.0 x1, v2.1 x1): {VERSIONS}",
              key="codebase_version"))]
    assert xs(run(d[0], d[1])) == []  # folders on the command line are not a mixture


@pytest.mark.parametrize("spoil", ["no info.json", "info.json not JSON", "total_episodes not a number",
                                   "unknown codebase_version"])
def test_datasets_whose_info_json_fails_are_left_out(make, tmp_path, spoil):
    d = [make("d0"), make("d1"), make("d2")]
    set_info(d[2], fps=15)
    info = d[1] / "meta/info.json"
    if spoil == "no info.json":
        info.unlink()
    elif spoil == "info.json not JSON":
        info.write_text("{")
    elif spoil == "total_episodes not a number":
        set_info(d[1], total_episodes="two")
    else:
        set_info(d[1], codebase_version="v9.0")
    reports = run(mix_json(tmp_path, d))
    assert xs(reports) == [(2, X("X005", "warning", f"fps 15 here, 10 in 1 of 2 datasets, {TAIL_X005}", key="fps"))]
    assert [LEFT_OUT in r.not_checked for r in reports] == [False, True, False]


def test_a_warning_about_info_json_does_not_leave_a_dataset_out(make, tmp_path):
    """codebase_version 'v3.1' is checked as v3.0 (I004, a warning): the dataset stays in the mixture."""
    d = [make("d0"), make("d1")]
    set_info(d[1], codebase_version="v3.1")
    reports = run(mix_json(tmp_path, d))
    assert [f.severity for f in ms(reports[1], "I004")] == ["warning"]
    assert xs(reports) == [(1, X("X007", "info", f"v3.1 beside v3.0 in this mixture (v3.0 x1, v3.1 x1): {VERSIONS}",
                                 key="codebase_version"))]


def test_an_unreadable_dataset_whose_finding_is_ignored_is_passed_over(make, tmp_path):
    """With I001 ignored a folder without meta/info.json is not marked as left out; it cannot be opened, and the
    datasets after it are still compared."""
    d = [make("d0"), make("d1"), make("d2")]
    set_info(d[2], fps=15)
    (d[1] / "meta/info.json").unlink()
    reports = run(mix_json(tmp_path, d), ignore={"I001"})
    assert xs(reports) == [(2, X("X005", "warning", f"fps 15 here, 10 in 1 of 2 datasets, {TAIL_X005}", key="fps"))]
    assert not any(LEFT_OUT in r.not_checked for r in reports)
