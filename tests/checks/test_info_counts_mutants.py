"""Families I (meta/info.json) and C (counters, episode indices, lengths, index ranges, splits) held to their exact
messages, severities, paths, counts, subjects and "not checked" notes.

Each dataset is written by :mod:`lerobot_tools.testing.synth` (real parquet, no video files) and then broken in one
way by editing ``meta/info.json``, ``meta/episodes.jsonl`` or the v3.0 episodes parquet with pyarrow. The default
dataset has 3 episodes of 20, 15 and 25 frames (60 rows); in v3.0 ``data/chunk-000/file-000.parquet`` holds
episodes 0-1 (35 rows) and ``file-001.parquet`` episode 2 (25 rows); in v2.1 each episode has its own file.
Every expected value below follows from those numbers and from the edit made, as the comments say.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from lerobot_tools.checks import counts
from lerobot_tools.checks.context import CheckContext
from lerobot_tools.checks.engine import ValidateOptions
from lerobot_tools.checks.info import known_dtype, names_problem
from lerobot_tools.dataset.model import Dataset
from lerobot_tools.testing.synth import SynthSpec, build_dataset
from lerobot_tools.validate import validate

INFO = "meta/info.json"
#: the note of a v2.x C002: lerobot 0.3.3 counts the rows it loads, total_frames is only written
V2_C002 = " (a warning: lerobot 0.3.3 counts the rows it loads, not total_frames)"
EPS_V2 = "meta/episodes.jsonl"
EPS_V3 = "meta/episodes/chunk-000/file-000.parquet"
V3_DATA = ("data/chunk-000/file-000.parquet", "data/chunk-000/file-001.parquet")
V2_DATA = tuple(f"data/chunk-000/episode_{i:06d}.parquet" for i in range(3))
V3_VIDEO_PATH = "videos/{video_key}/chunk-{chunk_index:03d}/file-{file_index:03d}.mp4"

#: the "not checked" notes family C records (counts.run_metadata) and the one the engine records when family I
#: stops the run
UNREADABLE_SKIP = "C001, C003-C006, T002, D001-D005, F010"
MALFORMED_SKIP = "C001, C003, F003 for names that fit the templates"
STOP_NOTE = ("remaining checks", "codebase_version is unknown, so the file layout cannot be determined")


# ----------------------------------------------------------------------------------------------------- helpers
def _build(tmp_path: Path, version: str = "v3.0", *, name: str = "ds", **spec) -> Path:
    return build_dataset(tmp_path / name, SynthSpec(version=version, video_codec=None,
                                                    video_keys=spec.pop("video_keys", ()), **spec))


def _info(root: Path) -> dict:
    return json.loads((root / INFO).read_text())


def _set_info(root: Path, **changes) -> None:
    """Set keys of info.json; a value of ``...`` deletes the key."""
    info = _info(root)
    for k, v in changes.items():
        if v is ...:
            info.pop(k, None)
        else:
            info[k] = v
    (root / INFO).write_text(json.dumps(info))


def _v2_rows(root: Path) -> list[dict]:
    return [json.loads(line) for line in (root / EPS_V2).read_text().splitlines()]


def _write_v2_rows(root: Path, rows: list) -> None:
    (root / EPS_V2).write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows))


def _set_v3_column(root: Path, column: str, values, rel: str = EPS_V3) -> None:
    """Replace (``values`` a list; None entries are nulls) or drop (``values`` None) one column of a v3.0 episodes
    parquet file."""
    path = root / rel
    table = pq.read_table(path)
    i = table.schema.get_field_index(column)
    if values is None:
        table = table.remove_column(i)
    else:
        table = table.set_column(i, column, pa.array(values, type=table.schema.field(i).type))
    pq.write_table(table, path)


def _report(root: Path, **opts):
    (r,) = validate([str(root)], ValidateOptions(**opts))
    return r


def _found(report, *checks: str) -> list[tuple]:
    """``(check, severity, path, message)`` of every finding of ``checks``, in report order."""
    return [(f.check, f.severity, f.path, f.message) for f in report.findings if f.check in checks]


def _family(report, letter: str) -> list[tuple]:
    return [(f.check, f.severity, f.path, f.message) for f in report.findings if f.check.startswith(letter)]


def _one(report, check: str):
    (f,) = [f for f in report.findings if f.check == check]
    return f


def _notes(report) -> list[tuple[str, str]]:
    return [(n.checks, n.reason) for n in report.not_checked]


# ------------------------------------------------------------------------------------------------ pure helpers
@pytest.mark.parametrize("dtype,expected", [
    (None, False), (3, False), (["float32"], False),
    # the special dtypes numpy does not know: only the SPECIAL_DTYPES set accepts them
    ("image", True), ("video", True), ("string", True), ("language", True),
    ("float32", True), ("bool", True), ("uint8", True),
    # numpy spellings outside NUMERIC_DTYPES
    ("f4", True), ("<i8", True), ("float", True),
    ("float99", False), ("tensor", False), ("", False),
])
def test_known_dtype(dtype, expected):
    assert known_dtype(dtype) is expected


CAM = ("video", [8, 8, 3])


@pytest.mark.parametrize("feat,expected", [
    # no names, or a shape that is not a non-empty list of ints: nothing to compare
    ({"dtype": "float32", "shape": [2], "names": None}, None),
    ({"dtype": "float32", "shape": "2", "names": ["a"]}, None),
    ({"dtype": "float32", "shape": [], "names": ["a"]}, None),
    ({"dtype": "float32", "shape": [2.0], "names": ["a"]}, None),
    # dict names: one list of the right length, or lists summing to it
    ({"dtype": "float32", "shape": [2], "names": {"motors": ["a", "b"]}}, None),
    ({"dtype": "float32", "shape": [2], "names": {"x": ["a"], "y": ["b"]}}, None),
    ({"dtype": "float32", "shape": [2], "names": {"x": ["a"], "y": ["b", "c", "d"]}},
     ("names lists have [1, 3] entries, expected shape[0] = 2 names", False)),
    ({"dtype": "float32", "shape": [4, 4, 3], "names": {"x": ["a"]}},
     ("names lists have [1] entries, expected shape[0] = 4 names", False)),
    ({"dtype": "video", "shape": [4, 4, 3], "names": {"x": ["a"]}}, None),  # a camera's dict names are not counted
    ({"dtype": "video", "shape": [4, 4, 3], "names": {"x": ["a"], "y": "b"}},
     ("names is a dict whose values are not all lists", False)),
    ({"dtype": "float32", "shape": [2], "names": "ab"}, ("names must be null, a list or a dict, got str", False)),
    ({"dtype": "float32", "shape": [2], "names": 5}, ("names must be null, a list or a dict, got int", False)),
    # [[...]]: repairable only when it flattens to strings of the right number
    ({"dtype": "float32", "shape": [2], "names": [["a", "b"]]},
     ("names is a nested list [[...]] of 2 entries; expected a flat list of shape[0] = 2 names", True)),
    ({"dtype": "float32", "shape": [3], "names": [["a", "b"]]},
     ("names is a nested list [[...]] of 2 entries; expected a flat list of shape[0] = 3 names", False)),
    ({"dtype": "float32", "shape": [2], "names": [["a", 1]]},
     ("names is a nested list [[...]] of 2 entries; expected a flat list of shape[0] = 2 names", False)),
    ({"dtype": CAM[0], "shape": CAM[1], "names": [["height", "width", "channels"]]},
     ("names is a nested list [[...]] of 3 entries; expected a flat list of one name per dimension", True)),
    ({"dtype": "float32", "shape": [2], "names": [["a"], ["b"]]}, ("names must be strings", False)),
    ({"dtype": "float32", "shape": [2], "names": ["a", 1]}, ("names must be strings", False)),
    # cameras: one name per dimension, whatever the names say (I009 judges them)
    ({"dtype": "image", "shape": [8, 8, 3], "names": ["h", "w"]},
     ("names has 2 entries for a rank-3 camera shape", False)),
    ({"dtype": CAM[0], "shape": CAM[1], "names": ["a", "b", "c"]}, None),
    # vectors: shape[0] names, or one name per dimension of a rank > 1 shape
    ({"dtype": "float32", "shape": [3, 4], "names": ["rows", "cols"]}, None),
    ({"dtype": "float32", "shape": [2, 3], "names": ["a", "b", "c"]},
     ("names has 3 entries, shape [2, 3] needs 2", False)),
    ({"dtype": "float32", "shape": [2], "names": ["a"]}, ("names has 1 entries, shape [2] needs 2", False)),
    ({"dtype": "float32", "shape": [1], "names": ["a"]}, None),
    ({"shape": [2], "names": ["a", "b"]}, None),
])
def test_names_problem(feat, expected):
    assert names_problem("f", feat) == expected


# ---------------------------------------------------------------------------------------- clean datasets: silence
@pytest.mark.parametrize("version", ["v2.1", "v3.0"])
def test_a_clean_dataset_has_no_i_or_c_finding_and_no_family_c_note(tmp_path, version):
    r = _report(_build(tmp_path, version, video_keys=("cam",)))
    assert [f for f in r.findings if f.check[0] in "IC"] == []
    assert [c for c, _ in _notes(r) if c in (UNREADABLE_SKIP, MALFORMED_SKIP, "remaining checks")] == []


# ---------------------------------------------------------------------------------------------------------- I004
@pytest.mark.parametrize("version,expected", [
    (..., [("I004", "error", INFO, "codebase_version is missing")]),
    # I004 is checked before the schema (I003)
    (3, [("I004", "error", INFO, "codebase_version 3 is not a version string like 'v2.1' or 'v3.0'"),
         ("I003", "error", INFO, "codebase_version: 3 is not of type 'string'")]),
    ("banana", [("I004", "error", INFO, "codebase_version 'banana' is not a version string like 'v2.1' or 'v3.0'")]),
    ("v4.0", [("I004", "error", INFO, "codebase_version 'v4.0' is not supported (known: v2.0, v2.1, v3.0)")]),
])
def test_i004_an_unknown_version_stops_every_later_check(tmp_path, version, expected):
    root = _build(tmp_path)
    # a counter family C would report and a data_path I008 would report, were they checked
    _set_info(root, codebase_version=version, total_episodes=9, data_path="data/{bogus}.parquet")
    r = _report(root)
    assert [f for f in r.findings if f.check[0] != "I"] == []
    assert _family(r, "I") == expected
    assert _one(r, "I004").subject == {"key": "codebase_version"}
    assert _notes(r) == [STOP_NOTE]


@pytest.mark.parametrize("base,version,expected", [
    ("v3.0", "v3.1", "codebase_version 'v3.1' is not one of v2.0, v2.1, v3.0; checked as v3.0"),
    ("v3.0", "3.0", "codebase_version '3.0' is not one of v2.0, v2.1, v3.0; checked as v3.0"),
    ("v2.1", "v2.2", "codebase_version 'v2.2' is not one of v2.0, v2.1, v3.0; checked as v2.1"),
    ("v2.1", "v2.0", None),
    ("v3.0", "v3.0", None),
])
def test_i004_a_near_version_is_a_warning_and_checking_goes_on(tmp_path, base, version, expected):
    root = _build(tmp_path, base)
    _set_info(root, codebase_version=version, total_episodes=4)
    r = _report(root)
    assert _found(r, "I004") == ([] if expected is None else [("I004", "warning", INFO, expected)])
    assert [f.subject for f in r.findings if f.check == "I004"] == ([] if expected is None else
                                                                    [{"key": "codebase_version"}])
    assert STOP_NOTE not in _notes(r)
    # the later families ran
    assert _found(r, "C001") == [
        ("C001", "error", INFO, "total_episodes is 4 but the episode metadata has 3 episode(s)")]


# ---------------------------------------------------------------------------------------------------- I003/I006
def test_the_schema_is_the_one_of_the_layout(tmp_path):
    # v2.x requires total_frames and bounds total_videos; v3.0 bounds data_files_size_in_mb; the common schema
    # (unknown version) does neither
    edits = {"total_frames": ..., "total_videos": -1, "data_files_size_in_mb": 0}
    got = {}
    for version in ("v2.1", "v3.0", "v4.0"):
        root = _build(tmp_path, "v3.0" if version == "v4.0" else version, name=version)
        _set_info(root, codebase_version=version, **edits)
        r = _report(root)
        got[version] = [(f.message, f.subject) for f in r.findings if f.check == "I003"]
    assert got["v2.1"] == [("(top level): 'total_frames' is a required property", {}),
                           ("total_videos: -1 is less than the minimum of 0", {"key": "total_videos"})]
    assert got["v3.0"] == [("data_files_size_in_mb: 0 is less than or equal to the minimum of 0",
                            {"key": "data_files_size_in_mb"})]
    assert got["v4.0"] == []


@pytest.mark.parametrize("n,shown", [
    # jsonschema's message is "'<value>' is not of type 'integer'": 133 characters make it 160 long (kept),
    # 134 make it 161 (cut to 157 characters and "...")
    (133, "'" + "s" * 133 + "' is not of type 'integer'"),
    (134, ("'" + "s" * 134 + "' is not of type 'integer'")[:157] + "..."),
])
def test_i003_message_is_cut_above_160_characters(tmp_path, n, shown):
    assert len("'" + "s" * 133 + "' is not of type 'integer'") == 160
    root = _build(tmp_path)
    _set_info(root, total_episodes="s" * n)
    r = _report(root)
    f = _one(r, "I003")
    assert (f.severity, f.path, f.message, f.subject) == ("error", INFO, f"total_episodes: {shown}",
                                                         {"key": "total_episodes"})


def test_schema_errors_under_features_are_i006_with_the_feature_or_the_key(tmp_path):
    root = _build(tmp_path)
    info = _info(root)
    info["features"]["action"]["dtype"] = 5
    _set_info(root, features=info["features"], fps=...)
    r = _report(root)
    assert [(f.check, f.message, f.subject) for f in r.findings if f.check in ("I003", "I006")] == [
        ("I003", "(top level): 'fps' is a required property", {}),
        ("I006", "features/action/dtype: 5 is not of type 'string'", {"feature": "action"}),
    ]
    assert _found(r, "I005") == []  # an absent fps is the schema's to report

    root = _build(tmp_path, name="empty")
    _set_info(root, features={})
    r = _report(root)
    f = _one(r, "I006")
    assert (f.path, f.message, f.subject) == (INFO, "features: {} should be non-empty", {"key": "features"})
    # all five default features are missing: one grouped finding, whose subject keeps no feature
    g = _one(r, "I010")
    assert (g.severity, g.count, g.paths, g.subject) == ("warning", 5, [INFO], {})
    assert g.message == ("default feature 'timestamp' is not declared (5 occurrences: default features are not "
                         "declared; e.g. meta/info.json)")


# ---------------------------------------------------------------------------------------------------------- I005
@pytest.mark.parametrize("fps,expected", [
    (10, None),
    (1, None),
    (0.5, ("error", "fps 0.5 is not an integer frame rate")),  # a rate below 1 Hz is a rate (> 0)
    (True, ("error", "fps True is not a number")),
    ("10", ("error", "fps '10' is not a number")),
    (float("nan"), ("error", "fps nan is not a finite number (lerobot computes frame times with it)")),
    (float("-inf"), ("error", "fps -inf is not a finite number (lerobot computes frame times with it)")),
    (100_000, None),  # MAX_FPS itself is a frame rate
    (100_001, ("error", "fps 100001 is not a plausible frame rate (more than 100000 frames per second)")),
    (10**14, ("error", "fps 100000000000000 is not a plausible frame rate (more than 100000 frames per second)")),
    (10**15, ("error", "fps 100000000000… (16 digits) is not a plausible frame rate (more than 100000 frames per "
                       "second)")),
    (1e308, ("error", "fps 1e+308 is not a plausible frame rate (more than 100000 frames per second)")),
    (2.5e5, ("error", "fps 2.5e+05 is not a plausible frame rate (more than 100000 frames per second)")),
    (0, ("error", "fps 0 must be > 0 (lerobot raises ValueError)")),
    (0.0, ("error", "fps 0.0 must be > 0 (lerobot raises ValueError)")),
    (-5, ("error", "fps -5 must be > 0 (lerobot raises ValueError)")),
    (30.0, ("warning", "fps is the float 30.0; loaders assume an integer")),
    (100_000.0, ("warning", "fps is the float 100000.0; loaders assume an integer")),
    (29.97, ("error", "fps 29.97 is not an integer frame rate")),
    (99_999.5, ("error", "fps 99999.5 is not an integer frame rate")),
])
def test_i005(tmp_path, fps, expected):
    root = _build(tmp_path)
    _set_info(root, fps=fps)
    r = _report(root, select={"I005"})
    got = [(f.severity, f.path, f.message, f.subject) for f in r.findings]
    assert got == ([] if expected is None else [(expected[0], INFO, expected[1], {"key": "fps"})])


# ----------------------------------------------------------------------------------------- I006/I007/I009-I011
def test_feature_declarations(tmp_path):
    root = _build(tmp_path)
    info = _info(root)
    feats = info["features"]
    feats["timestamp"]["dtype"] = "float64"
    feats["index"]["shape"] = [2]
    del feats["frame_index"], feats["task_index"]
    img = {"dtype": "image", "shape": [8, 8, 3]}
    vid = {"dtype": "video", "shape": [8, 8, 3]}
    feats.update({
        "x/y": 5,  # '/' is reported before the non-dict is left to the schema
        "bad": 5,
        "f_dtype": {"dtype": "float99", "shape": [1]},
        "f_np": {"dtype": "f4", "shape": [1]},
        "rank0": {"dtype": "float32", "shape": []},
        "rank1": {"dtype": "float32", "shape": [1]},
        "rank5": {"dtype": "float32", "shape": [1] * 5},
        "rank6": {"dtype": "float32", "shape": [1] * 6},
        # a shape of booleans is not a shape: no rank is judged (the schema reports it)
        "boolshape": {"dtype": "image", "shape": [True, True], "names": ["height", "width"]},
        "a/b": {"dtype": "float32", "shape": [1]},
        "vid_rank2": {"dtype": "video", "shape": [8, 8], "names": ["height", "width"]},
        "img_rank2": {"dtype": "image", "shape": [8, 8], "names": ["height", "width"]},
        "vec_rank2": {"dtype": "float32", "shape": [8, 8], "names": ["height", "width"]},
        "img_rank6": {**img, "shape": [1] * 6, "names": None},
        "img_hwc": {**img, "names": ["height", "width", "channels"]},
        "img_chw": {**img, "names": ["channels", "height", "width"]},
        "vid_channel": {**vid, "names": ["height", "width", "channel"]},
        "vid_null": {**vid, "names": None},
        "img_null": {**img, "names": None},
        "img_xyz": {**img, "names": ["x", "y", "z"]},
        "vid_xyz": {**vid, "names": ["x", "y", "z"]},
        "img_two": {**img, "names": ["height", "width"]},
        "img_mixed": {**img, "names": ["height", 1, "channels"]},
        "img_nested": {**img, "names": [["height", "width", "channels"]]},
        # three string keys, but a dict: not judged by I009
        "img_dict": {**img, "names": {"height": ["h"], "width": ["w"], "channels": ["c"]}},
        "vec_nested": {"dtype": "float32", "shape": [2], "names": [["a", "b"]]},
        "vec_short": {"dtype": "float32", "shape": [3], "names": ["a", "b"]},
    })
    _set_info(root, features=feats, video_path=V3_VIDEO_PATH)
    r = _report(root)
    i006, i007, i009 = "I006", "I007", "I009"
    assert [(f.check, f.message, f.subject) for f in r.findings if f.check[0] == "I"] == [
        # the schema, sorted by path
        (i006, "features/bad: 5 is not of type 'object'", {"feature": "bad"}),
        (i006, "features/boolshape/shape/0: True is not of type 'integer'", {"feature": "boolshape"}),
        (i006, "features/boolshape/shape/1: True is not of type 'integer'", {"feature": "boolshape"}),
        (i006, "features/rank0/shape: [] should be non-empty", {"feature": "rank0"}),
        (i006, "features/x/y: 5 is not of type 'object'", {"feature": "x/y"}),
        # then feature by feature, in declaration order
        ("I011", "feature name 'x/y' contains '/'", {"feature": "x/y"}),
        (i006, "feature 'f_dtype': unknown dtype 'float99'", {"feature": "f_dtype"}),
        (i006, "feature 'rank0': shape [] has rank 0 (lerobot supports 1-5)", {"feature": "rank0"}),
        (i006, "feature 'rank6': shape [1, 1, 1, 1, 1, 1] has rank 6 (lerobot supports 1-5)", {"feature": "rank6"}),
        ("I011", "feature name 'a/b' contains '/'", {"feature": "a/b"}),
        (i006, "camera feature 'vid_rank2': shape [8, 8] is not rank 3 [H, W, C]", {"feature": "vid_rank2"}),
        (i006, "camera feature 'img_rank2': shape [8, 8] is not rank 3 [H, W, C]", {"feature": "img_rank2"}),
        (i006, "feature 'img_rank6': shape [1, 1, 1, 1, 1, 1] has rank 6 (lerobot supports 1-5)",
         {"feature": "img_rank6"}),
        (i009, "camera feature 'img_rank6' has names: null (dataset_to_policy_features raises TypeError)",
         {"feature": "img_rank6"}),
        # channel-first names on a channel-last shape: lerobot keeps the shape as (C, H, W) = (8, 8, 3)
        (i009, "camera feature 'img_chw' names ['channels', 'height', 'width'] say channels first but shape "
               "[8, 8, 3] does not start with a channel count; the shape will be read as CHW", {"feature": "img_chw"}),
        (i009, "camera feature 'vid_null' has names: null (dataset_to_policy_features raises TypeError)",
         {"feature": "vid_null"}),
        (i009, "camera feature 'img_null' has names: null (dataset_to_policy_features raises TypeError)",
         {"feature": "img_null"}),
        (i009, "camera feature 'img_xyz' names ['x', 'y', 'z'] are not [height, width, channels]; the shape will be "
               "read as CHW", {"feature": "img_xyz"}),
        (i009, "camera feature 'vid_xyz' names ['x', 'y', 'z'] are not [height, width, channels]; the shape will be "
               "read as CHW", {"feature": "vid_xyz"}),
        (i007, "feature 'img_two': names has 2 entries for a rank-3 camera shape", {"feature": "img_two"}),
        (i007, "feature 'img_mixed': names must be strings", {"feature": "img_mixed"}),
        (i007, "feature 'img_nested': names is a nested list [[...]] of 3 entries; expected a flat list of one name "
               "per dimension (repairable)", {"feature": "img_nested"}),
        (i007, "feature 'vec_nested': names is a nested list [[...]] of 2 entries; expected a flat list of "
               "shape[0] = 2 names (repairable)", {"feature": "vec_nested"}),
        (i007, "feature 'vec_short': names has 2 entries, shape [3] needs 3", {"feature": "vec_short"}),
        # the default features, in lerobot's order; the two undeclared ones grouped where the first was
        ("I010", "default feature 'timestamp' is float64 [1], lerobot writes float32 [1]", {"feature": "timestamp"}),
        ("I010", "default feature 'frame_index' is not declared (2 occurrences: default features are not declared; "
                 "e.g. meta/info.json)", {}),
        ("I010", "default feature 'index' is int64 [2], lerobot writes int64 [1]", {"feature": "index"}),
    ]
    sev = {f.check: f.severity for f in r.findings if f.check[0] == "I"}
    assert sev == {"I006": "error", "I007": "warning", "I009": "warning", "I010": "warning", "I011": "error"}
    assert {f.path for f in r.findings if f.check[0] == "I"} == {INFO}
    assert [f.count for f in r.findings if f.check == "I010"] == [1, 2, 1]


def test_one_undeclared_default_feature_names_it(tmp_path):
    root = _build(tmp_path)
    feats = _info(root)["features"]
    del feats["task_index"]
    _set_info(root, features=feats)
    f = _one(_report(root), "I010")
    assert (f.severity, f.path, f.message, f.count, f.subject) == (
        "warning", INFO, "default feature 'task_index' is not declared", 1, {"feature": "task_index"})


# ---------------------------------------------------------------------------------------------------------- I008
@pytest.mark.parametrize("base,data_path,expected", [
    ("v3.0", "data/{episode_index}.parquet", [
        ("error", "data_path 'data/{episode_index}.parquet' uses unknown placeholder {episode_index} (allowed: "
                  "chunk_index, file_index, video_key)"),
        ("error", "data_path 'data/{episode_index}.parquet' must contain {chunk_index} and {file_index}"),
        # no "not the v3.0 default" warning beside the errors: one template, said once
    ]),
    ("v3.0", "data/c-{chunk_index}/f-{file_index}.parquet", [
        ("warning", "data_path 'data/c-{chunk_index}/f-{file_index}.parquet' is not the v3.0 default; the v3 loader "
                    "globs data/*/*.parquet regardless"),
    ]),
    ("v3.0", 5, [("error", "data_path 5 must be a string, got int")]),  # no "not the default" for a non-string
    ("v3.0", ..., []),
    ("v2.1", "data/chunk-{episode_chunk:03d}/ep_{episode_index:06d}.parquet", []),  # v2.x: no default asked for
    ("v2.1", "data/{chunk_index}.parquet", [
        ("error", "data_path 'data/{chunk_index}.parquet' uses unknown placeholder {chunk_index} (allowed: "
                  "episode_chunk, episode_index, video_key)"),
        ("error", "data_path 'data/{chunk_index}.parquet' has no {episode_index} placeholder, so every episode "
                  "would share one file"),
    ]),
])
def test_i008_data_path(tmp_path, base, data_path, expected):
    root = _build(tmp_path, base)
    _set_info(root, data_path=data_path)
    r = _report(root)
    got = [(f.severity, f.message) for f in r.findings if f.check == "I008" and f.path == INFO]
    assert got == expected
    assert all(f.subject == {"key": "data_path"} for f in r.findings if f.check == "I008" and f.path == INFO)


@pytest.mark.parametrize("base,video_keys,video_path,expected", [
    ("v3.0", ("cam",), None, [("error", "video_path is null but video features are declared")]),
    ("v3.0", ("cam",), ..., []),
    ("v3.0", ("cam",), V3_VIDEO_PATH, []),
    ("v3.0", ("cam",), "videos/{video_key}/chunk-{chunk_index:03d}/all.mp4", [
        ("error", "video_path 'videos/{video_key}/chunk-{chunk_index:03d}/all.mp4' must contain {chunk_index} and "
                  "{file_index}"),
    ]),
    ("v3.0", ("cam",), "videos/chunk-{chunk_index:03d}/file-{file_index:03d}.mp4", [
        ("error", "video_path 'videos/chunk-{chunk_index:03d}/file-{file_index:03d}.mp4' has no {video_key} "
                  "placeholder, so every camera would share one file"),
    ]),
    ("v3.0", ("cam",), 5, [("error", "video_path 5 must be a string, got int")]),
    ("v2.1", ("cam",), "videos/chunk-{episode_chunk:03d}/{video_key}/all.mp4", [
        ("error", "video_path 'videos/chunk-{episode_chunk:03d}/{video_key}/all.mp4' has no {episode_index} "
                  "placeholder, so every episode would share one file"),
    ]),
    # no video feature: a template is noted (info), a null, a missing or a non-string one is not
    ("v3.0", (), V3_VIDEO_PATH, [("info", "video_path is set but no video feature is declared (lerobot's writer "
                                          "keeps the template; no loader uses it)")]),
    ("v3.0", (), None, []),
    ("v3.0", (), ..., []),
    ("v3.0", (), 5, []),
])
def test_i008_video_path(tmp_path, base, video_keys, video_path, expected):
    root = _build(tmp_path, base, video_keys=video_keys)
    _set_info(root, video_path=video_path)
    r = _report(root)
    found = [f for f in r.findings if f.check == "I008" and f.path == INFO]
    assert [(f.severity, f.message) for f in found] == expected
    assert all(f.subject == {"key": "video_path"} for f in found)


# ---------------------------------------------------------------------------- C007: unreadable episode metadata
def test_missing_episode_metadata_is_said_once_and_everything_derived_from_it_not_checked(tmp_path):
    root = _build(tmp_path, "v2.1")
    (root / EPS_V2).unlink()
    _set_info(root, splits={"train": "0:2"})
    r = _report(root)
    c007 = _one(r, "C007")
    assert (c007.severity, c007.path, c007.message, c007.subject) == ("error", EPS_V2, "file is missing", {})
    assert (UNREADABLE_SKIP, "meta/episodes.jsonl: file is missing: nothing is derived from it") in _notes(r)
    assert MALFORMED_SKIP not in [c for c, _ in _notes(r)]
    # the splits are still checked, against total_episodes alone
    assert _found(r, "C008") == [("C008", "warning", INFO, "splits leave 1 of the 3 episode(s) of total_episodes "
                                                           "out of every split: episode(s) 2")]
    # info.json's counters agree with the three data files data_path names
    assert _family(r, "C") == [("C007", "error", EPS_V2, "file is missing"), _found(r, "C008")[0]]


def _lfs_pointer(size: int) -> bytes:
    return (f"version https://git-lfs.github.com/spec/v1\noid sha256:{'ab' * 32}\nsize {size}\n").encode()


def test_every_unreadable_v3_episode_file_is_named(tmp_path):
    root = _build(tmp_path)
    second = "meta/episodes/chunk-000/file-001.parquet"
    (root / EPS_V3).write_bytes(_lfs_pointer(5000))
    (root / second).write_bytes(_lfs_pointer(6000))
    r = _report(root)
    f004 = _one(r, "F004")
    assert (f004.count, f004.paths) == (2, [EPS_V3, second])
    assert _family(r, "C") == []
    assert f004.message == (
        "episode metadata file is a Git LFS pointer (object of 5,000 bytes not fetched) (2 occurrences: episode "
        "metadata files under meta/episodes/chunk-000/ are Git LFS pointers; e.g. "
        "meta/episodes/chunk-000/file-000.parquet, meta/episodes/chunk-000/file-001.parquet)")
    # the first file read names the cause of everything not checked
    assert (UNREADABLE_SKIP, f"{EPS_V3} is a Git LFS pointer (object of 5,000 bytes not fetched): nothing is derived "
                             "from it") in _notes(r)


def test_a_truncated_v3_episode_file_after_a_placeholder_is_c007(tmp_path):
    root = _build(tmp_path)
    second = "meta/episodes/chunk-000/file-001.parquet"
    (root / second).write_bytes((root / EPS_V3).read_bytes()[:4000])  # a parquet file cut short: no footer
    (root / EPS_V3).write_bytes(_lfs_pointer(5000))
    r = _report(root)
    assert [(f.check, f.path, f.subject) for f in r.findings if f.check in ("F004", "C007")] == [
        ("F004", EPS_V3, {"file_kind": "episodes"}), ("C007", second, {"file_kind": "episodes"})]
    assert _one(r, "C007").message == (
        "episode metadata file is truncated: no parquet footer (the file does not end with the PAR1 magic; 4.0 kB "
        "on disk, a partial download or an interrupted write)")


# ------------------------------------------------------------------------------- C007: malformed or missing rows
def test_malformed_v2_rows_are_grouped_and_the_counts_they_would_change_not_compared(tmp_path):
    root = _build(tmp_path, "v2.1")
    rows = _v2_rows(root)
    _write_v2_rows(root, [rows[0], "not json", rows[1], {"tasks": []}, rows[2]])
    # wrong counters that family C would report if the metadata were complete
    _set_info(root, total_episodes=5, total_chunks=7, total_videos=4, splits={"train": "0:3"})
    r = _report(root)
    c007 = _one(r, "C007")
    assert (c007.severity, c007.path, c007.count) == ("error", EPS_V2, 2)
    # the first row's own message (the JSON reader's), the count and the group's title
    assert c007.message == ("line 2 is not valid JSON: Expecting value at line 1 column 1 (2 occurrences: episode "
                            "metadata rows are malformed; e.g. meta/episodes.jsonl)")
    assert (MALFORMED_SKIP, "2 episode-metadata row(s) are malformed: the episode count is incomplete") in _notes(r)
    assert UNREADABLE_SKIP not in [c for c, _ in _notes(r)]
    assert _found(r, "C001", "C003") == []
    # the splits are compared with total_episodes only (5), not with the 3 rows read: episodes 3 and 4 are left out
    assert _found(r, "C008") == [("C008", "warning", INFO, "splits leave 2 of the 5 episode(s) of total_episodes "
                                                           "out of every split: episode(s) 3, 4")]


def test_a_row_without_episode_index_is_its_own_message(tmp_path):
    root = _build(tmp_path, "v2.1")
    rows = _v2_rows(root)
    _write_v2_rows(root, [*rows, {"tasks": []}])
    r = _report(root)
    assert _found(r, "C007") == [("C007", "error", EPS_V2, "line 4 has no integer episode_index")]
    assert (MALFORMED_SKIP, "1 episode-metadata row(s) are malformed: the episode count is incomplete") in _notes(r)


def _empty_v3_metadata(tmp_path: Path) -> Path:
    root = _build(tmp_path)
    table = pq.read_table(root / EPS_V3)
    pq.write_table(table.slice(0, 0), root / EPS_V3)
    return root


C_CHECKS = {f"C00{i}" for i in range(1, 9)}


def test_v3_episode_metadata_without_rows(tmp_path):
    # family C only (the whole report: the test below)
    r = _report(_empty_v3_metadata(tmp_path), select=C_CHECKS)
    c = _family(r, "C")
    assert c[:2] == [
        ("C007", "error", "meta/episodes", "the episode metadata has no rows"),
        ("C001", "error", INFO, "total_episodes is 3 but the episode metadata has 0 episode(s)"),
    ]
    # no data file is referenced (the two on disk are readable): C002 says so, not "data files not all readable"
    assert [(k, m) for k, _, _, m in c[2:]] == [
        ("C002", "total_frames is 60 but the episode lengths sum to 0 (no data file is referenced)")]


def test_v3_episode_metadata_without_rows_is_reported_not_an_internal_error(tmp_path):
    # the statistics family raised ValueError (a reshape of 0 rows) on the empty block of stored statistics
    r = _report(_empty_v3_metadata(tmp_path))
    assert _found(r, "M001") == []


def test_v2_episode_metadata_of_blank_lines_has_no_rows(tmp_path):
    root = _build(tmp_path, "v2.1")
    (root / EPS_V2).write_text("\n" * ((1 << 20) + 1))  # over the 1 MiB "short text" limit: read as JSON Lines
    r = _report(root)
    c = _family(r, "C")
    assert ("C007", "error", EPS_V2, "the episode metadata has no rows") in c
    # 0 episodes: 0 chunks, not ceil(0 / 1000) computed on a list
    assert ("C003", "warning", INFO, "total_chunks is 1, expected ceil(0 / 1000) = 0") in c


def test_v2_length_column_missing_from_every_row_or_from_one(tmp_path):
    root = _build(tmp_path, "v2.1")
    _write_v2_rows(root, [{k: v for k, v in row.items() if k != "length"} for row in _v2_rows(root)])
    r = _report(root)
    f = _one(r, "C007")
    assert (f.path, f.message, f.subject) == (EPS_V2, "episode metadata has no length column(s)", {"key": "length"})

    root = _build(tmp_path, "v2.1", name="one")
    rows = _v2_rows(root)
    del rows[1]["length"]
    rows[2]["length"] = 26  # its file holds 25 rows
    _write_v2_rows(root, rows)
    r = _report(root)
    assert _found(r, "C007") == []
    # episode 1's file is not compared (no length); the lengths do not all exist, so they are not summed for C002
    assert [(f.check, f.path, f.message, f.subject) for f in r.findings if f.check in ("C002", "C005")] == [
        ("C005", V2_DATA[2], "episode 2 has length 26 but its file has 25 rows", {"episode": 2})]


def test_v3_columns_missing(tmp_path):
    root = _build(tmp_path, video_keys=("cam",))
    # one column of each pair is enough to make the pair unusable
    for col in ("length", "data/file_index", "dataset_to_index", "videos/cam/chunk_index", "videos/cam/file_index",
                "videos/cam/from_timestamp", "videos/cam/to_timestamp"):
        _set_v3_column(root, col, None)
    r = _report(root)
    assert [(f.path, f.message, f.subject) for f in r.findings if f.check == "C007"] == [
        (EPS_V3, "episode metadata has no length column(s)", {"key": "length"}),
        (EPS_V3, "episode metadata has no data/chunk_index, data/file_index column(s)", {"key": "data/chunk_index"}),
        (EPS_V3, "episode metadata has no dataset_from_index, dataset_to_index column(s)",
         {"key": "dataset_from_index"}),
        (EPS_V3, "episode metadata has no videos/cam/* column(s)", {"video_key": "cam"}),
    ]


CAM = "observation.images.front"
SEG_SKIP = f"F010, F020, F021 for {CAM}"


def _with_video(tmp_path: Path) -> Path:
    """v3.0, 10 fps, episodes of 20 and 15 frames in one 32x32 h264 file."""
    return build_dataset(tmp_path / "ds", SynthSpec(episode_lengths=(20, 15), episodes_per_file=2, video_size=(32, 32),
                                                    state_dim=2, action_dim=2))


def test_v3_segment_times_missing_is_one_c007_and_no_frame_query_finding(tmp_path):
    """A hand-written converter's episode metadata (each camera's chunk and file indices, no from/to_timestamp) over
    a 25 fps video in a 10 fps dataset: lerobot 0.4.4 _query_videos raises KeyError on every sample. One C007 names
    the columns; the frame queries are unknown, so F010/F020/F021 are not checked (not one finding per query); F009
    still compares the stream with its declaration. Nothing reported the missing columns before."""
    from lerobot_tools.testing.synth import encode_video, frame_pixels

    root = _with_video(tmp_path)
    for end in ("from_timestamp", "to_timestamp"):
        _set_v3_column(root, f"videos/{CAM}/{end}", None)
    video = root / f"videos/{CAM}/chunk-000/file-000.mp4"
    encode_video(video, [frame_pixels(0, k, 32, 32) for k in range(88)], 25, "h264")
    r = _report(root, all_videos=True)
    assert [(f.severity, f.path, f.message, f.subject) for f in r.findings if f.check == "C007"] == [
        ("error", EPS_V3, f"episode metadata has no videos/{CAM}/from_timestamp, videos/{CAM}/to_timestamp column(s): "
         "no frame of the camera can be located (lerobot 0.4.4 _query_videos raises KeyError)",
         {"video_key": CAM, "key": f"videos/{CAM}/from_timestamp"})]
    assert [f.check for f in r.findings if f.severity == "error"] == ["C007"]
    assert _found(r, "F010", "F020", "F021") == []
    assert [f.message for f in r.findings if f.check == "F009"] == [f"{CAM}: frame rate is 25.000 but info.json fps "
                                                                    "is 10"]
    assert (SEG_SKIP, f"2 episode(s) have no videos/{CAM}/from_timestamp: where their frame queries land is "
                      "unknown") in _notes(r)


def test_v3_to_timestamp_missing_or_a_null_from_timestamp(tmp_path):
    root = _with_video(tmp_path)
    _set_v3_column(root, f"videos/{CAM}/to_timestamp", None)  # LeRobotDataset loads; StreamingLeRobotDataset does not
    r = _report(root)
    assert _found(r, "C007") == [("C007", "error", EPS_V3, f"episode metadata has no videos/{CAM}/to_timestamp "
                                  "column(s): lerobot 0.4.4's StreamingLeRobotDataset raises KeyError (LeRobotDataset "
                                  "reads from_timestamp only)")]
    assert not [n for n, _ in _notes(r) if n == SEG_SKIP]

    root = _with_video(tmp_path / "null")
    _set_v3_column(root, f"videos/{CAM}/from_timestamp", [0.0, None])  # None + timestamp: TypeError for episode 1
    r = _report(root)
    assert _found(r, "C007") == [("C007", "error", EPS_V3, f"episode(s) 1 have no videos/{CAM}/from_timestamp value "
                                  "(null): their frames cannot be located (lerobot 0.4.4 _query_videos raises "
                                  "TypeError on None + timestamp)")]
    assert _found(r, "F010", "F020", "F021") == []
    assert (SEG_SKIP, f"1 episode(s) have no videos/{CAM}/from_timestamp: where their frame queries land is "
                      "unknown") in _notes(r)


def test_v3_columns_null_in_one_row_only(tmp_path):
    root = _build(tmp_path)
    for col in ("length", "data/chunk_index", "dataset_from_index"):
        values = pq.read_table(root / EPS_V3, columns=[col]).column(0).to_pylist()
        _set_v3_column(root, col, values[:2] + [None])
    r = _report(root)
    assert _found(r, "C007", "C006") == []


# --------------------------------------------------------------------------------------------------------- C004
def test_c004_rows_out_of_order(tmp_path):
    root = _build(tmp_path, "v2.1")
    rows = _v2_rows(root)
    _write_v2_rows(root, [rows[0], rows[2], rows[1]])
    r = _report(root)
    f = _one(r, "C004")
    assert (f.severity, f.path, f.count, f.subject) == ("error", EPS_V2, 1, {})
    assert f.message == ("2 episode row(s) have episode_index != row position (first: row 1 holds episode 2); loaders "
                         "index episodes by position")


def test_c004_a_duplicate_index(tmp_path):
    root = _build(tmp_path, "v2.1")
    rows = _v2_rows(root)
    rows[2]["episode_index"] = 1
    _write_v2_rows(root, rows)
    r = _report(root)
    assert [(f.message, f.path, f.count, f.subject) for f in r.findings if f.check == "C004"] == [
        ("episode_index 1 appears twice (rows 1 and 2)", EPS_V2, 1, {"episode": 1}),
        ("1 episode row(s) have episode_index != row position (first: row 2 holds episode 1); loaders index episodes "
         "by position", EPS_V2, 1, {}),
    ]
    assert _found(r, "C001") == []  # 3 rows, total_episodes 3


def test_c004_each_repeat_names_the_first_row(tmp_path):
    root = _build(tmp_path, "v2.1")
    rows = _v2_rows(root)
    for row in rows:
        row["episode_index"] = 0
    _write_v2_rows(root, rows)
    # run family C on its own to see the findings before they are grouped
    ctx = CheckContext(None, ValidateOptions(), None)
    ctx.dataset = Dataset(root)
    counts.run_metadata(ctx)
    assert [(f.check, f.message, f.group, f.subject) for f in ctx.findings] == [
        ("C004", "episode_index 0 appears twice (rows 0 and 1)", "duplicate episode indices", {"episode": 0}),
        ("C004", "episode_index 0 appears twice (rows 0 and 2)", "duplicate episode indices", {"episode": 0}),
        ("C004", "2 episode row(s) have episode_index != row position (first: row 1 holds episode 0); loaders index "
                 "episodes by position", None, {}),
    ]
    assert (ctx.episodes_ok, ctx.episodes_complete, ctx.episodes_cause) == (True, True, None)
    assert ctx.not_checked == []


# --------------------------------------------------------------------------------------------------------- C001
@pytest.mark.parametrize("total,expected", [
    (3, None),
    (4, "total_episodes is 4 but the episode metadata has 3 episode(s)"),
    (2, "total_episodes is 2 but the episode metadata has 3 episode(s)"),
    ("3", None),  # not an integer: the schema's to report
])
def test_c001(tmp_path, total, expected):
    root = _build(tmp_path)
    _set_info(root, total_episodes=total, splits={})
    r = _report(root)
    f = [(f.severity, f.path, f.message, f.subject) for f in r.findings if f.check == "C001"]
    assert f == ([] if expected is None else [("error", INFO, expected, {"key": "total_episodes"})])


# --------------------------------------------------------------------------------------------------------- C006
def _ranges(root: Path, spans, lengths=(20, 15, 25)) -> None:
    _set_v3_column(root, "dataset_from_index", [a for a, _ in spans])
    _set_v3_column(root, "dataset_to_index", [b for _, b in spans])
    _set_v3_column(root, "length", list(lengths))


@pytest.mark.parametrize("spans,lengths,expected", [
    ([(0, 20), (20, 35), (35, 60)], (20, 15, 25), []),
    # a gap: the next range is measured from where the shifted one ends
    ([(0, 20), (21, 36), (36, 61)], (20, 15, 25),
     ["episode 1: dataset_from_index = 21, expected 20 (ranges must be back to back from 0)"]),
    ([(1, 21), (21, 36), (36, 61)], (20, 15, 25),
     ["episode 0: dataset_from_index = 1, expected 0 (ranges must be back to back from 0)"]),
    # a range whose size is not the length; the length message wins over the start one
    ([(0, 20), (20, 36), (36, 61)], (20, 15, 25),
     ["episode 1: dataset_to_index - dataset_from_index = 16 but length = 15"]),
    ([(0, 20), (21, 37), (37, 62)], (20, 15, 25),
     ["episode 1: dataset_to_index - dataset_from_index = 16 but length = 15"]),
    # no length: only the start is checked
    ([(0, 20), (21, 36), (36, 61)], (20, None, 25),
     ["episode 1: dataset_from_index = 21, expected 20 (ranges must be back to back from 0)"]),
    # a row without a range is passed over; the next row's size is still checked
    ([(0, 20), (None, 35), (35, 61)], (20, 15, 25),
     ["episode 2: dataset_to_index - dataset_from_index = 26 but length = 25"]),
])
def test_c006(tmp_path, spans, lengths, expected):
    root = _build(tmp_path)
    _ranges(root, spans, lengths)
    r = _report(root)
    found = [f for f in r.findings if f.check == "C006"]
    assert [(f.severity, f.path, f.message) for f in found] == [("error", EPS_V3, m) for m in expected]
    assert [f.subject for f in found] == [{"episode": int(m.split()[1].rstrip(":"))} for m in expected]


def test_c006_findings_are_grouped(tmp_path):
    root = _build(tmp_path)
    _ranges(root, [(0, 21), (21, 36), (36, 62)])
    f = _one(_report(root), "C006")
    assert (f.count, f.subject, f.paths) == (2, {}, [EPS_V3])
    assert f.message == ("episode 0: dataset_to_index - dataset_from_index = 21 but length = 20 (2 occurrences: index "
                         "ranges are not contiguous, for episodes 0 and 2; e.g. "
                         "meta/episodes/chunk-000/file-000.parquet)")


# --------------------------------------------------------------------------------------------------------- C003
@pytest.mark.parametrize("keys,changes,expected", [
    ((), {}, []),
    ((), {"total_videos": 5}, [("total_videos", "total_videos is 5, expected 3 episodes x 0 video key(s) = 0")]),
    (("cam",), {"total_videos": 3}, []),
    (("cam",), {"total_videos": 2}, [("total_videos", "total_videos is 2, expected 3 episodes x 1 video key(s) = 3")]),
    ((), {"total_videos": ..., "total_chunks": ...}, []),
    ((), {"total_chunks": 2}, [("total_chunks", "total_chunks is 2, expected ceil(3 / 1000) = 1")]),
    ((), {"total_chunks": 0}, [("total_chunks", "total_chunks is 0, expected ceil(3 / 1000) = 1")]),
    # two episodes per chunk: 3 episodes need 2 chunks (rounded up, not down)
    ((), {"chunks_size": 2, "total_chunks": 1}, [("total_chunks", "total_chunks is 1, expected ceil(3 / 2) = 2")]),
    ((), {"chunks_size": 2, "total_chunks": 2}, []),
    ((), {"total_videos": 1, "total_chunks": 3}, [
        ("total_videos", "total_videos is 1, expected 3 episodes x 0 video key(s) = 0"),
        ("total_chunks", "total_chunks is 3, expected ceil(3 / 1000) = 1")]),
])
def test_c003_v2_counters(tmp_path, keys, changes, expected):
    root = _build(tmp_path, "v2.1", video_keys=keys)
    _set_info(root, **changes)
    r = _report(root)
    found = [f for f in r.findings if f.check == "C003"]
    assert [(f.subject["key"], f.message) for f in found] == expected
    assert all((f.severity, f.path) == ("warning", INFO) for f in found)


def test_c003_is_a_v2_check(tmp_path):
    root = _build(tmp_path)
    _set_info(root, total_videos=5, total_chunks=9)
    assert _found(_report(root), "C003") == []


# --------------------------------------------------------------------------------------------------------- C008
def _splits(tmp_path: Path, splits, *, name: str = "ds", lengths=(20, 15, 25), **info) -> list[str]:
    root = _build(tmp_path, name=name, episode_lengths=lengths)
    _set_info(root, splits=splits, **info)
    r = _report(root)
    found = [f for f in r.findings if f.check == "C008"]
    assert all((f.severity, f.path, f.subject) == ("warning", INFO, {"key": "splits"}) for f in found)
    return [f.message for f in found]


def test_c008_malformed_ranges(tmp_path):
    assert _splits(tmp_path, {"train": 5, "val": "abc", "test": "3:1", "all": " 0 : 3 ", "none": "2:2"}) == [
        "splits['train'] = 5 is not a 'start:end' range",
        "splits['val'] = 'abc' is not a 'start:end' range",
        "splits['test'] = '3:1' ends before it starts",
    ]
    # nothing well formed: nothing to compare with the episodes (not "3 of 3 left out")
    assert _splits(tmp_path, {"train": "abc"}, name="b") == ["splits['train'] = 'abc' is not a 'start:end' range"]
    assert _splits(tmp_path, "0:3", name="c") == []
    assert _splits(tmp_path, {}, name="d") == []


PAST = "a split-aware reader asks for episodes that do not exist"


def test_c008_ranges_past_the_last_episode(tmp_path):
    assert _splits(tmp_path, {"train": "0:3"}) == []
    assert _splits(tmp_path, {"train": " 0 : 4"}, name="b") == [
        f"splits['train'] = '0:4' points past the last episode (total_episodes = 3); {PAST}"]
    # total_episodes (4) and the metadata (3) disagree: a split is wrong only if it is wrong against both
    assert _splits(tmp_path, {"train": "0:4"}, name="c", total_episodes=4) == []
    assert _splits(tmp_path, {"train": "0:5"}, name="d", total_episodes=4) == [
        f"splits['train'] = '0:5' points past the last episode (total_episodes = 4 and 3 in the episode metadata); "
        f"{PAST}"]
    # no total_episodes: the metadata alone
    assert _splits(tmp_path, {"train": "0:4"}, name="e", total_episodes=...) == [
        f"splits['train'] = '0:4' points past the last episode (3 in the episode metadata); {PAST}"]


def test_c008_episodes_left_out_of_every_split(tmp_path):
    assert _splits(tmp_path, {"train": "0:2"}) == [
        "splits leave 1 of the 3 episode(s) of total_episodes out of every split: episode(s) 2"]
    assert _splits(tmp_path, {"a": "0:1", "b": "2:3"}, name="b") == [
        "splits leave 1 of the 3 episode(s) of total_episodes out of every split: episode(s) 1"]
    assert _splits(tmp_path, {"train": "1:3"}, name="c", total_episodes=...) == [
        "splits leave 1 of the 3 episode(s) of the episode metadata out of every split: episode(s) 0"]
    # left out of total_episodes (4) but not of the metadata (3): not reported; left out of both: said against
    # total_episodes
    assert _splits(tmp_path, {"train": "0:3"}, name="d", total_episodes=4) == []
    assert _splits(tmp_path, {"train": "0:2"}, name="e", total_episodes=4) == [
        "splits leave 2 of the 4 episode(s) of total_episodes out of every split: episode(s) 2, 3"]
    ten = (2,) * 10
    assert _splits(tmp_path, {"train": "0:5"}, name="f", lengths=ten) == [
        "splits leave 5 of the 10 episode(s) of total_episodes out of every split: episode(s) 5, 6, 7, 8, 9"]
    assert _splits(tmp_path, {"train": "0:4"}, name="g6", lengths=ten) == [
        "splits leave 6 of the 10 episode(s) of total_episodes out of every split: episode(s) 4, 5, 6, 7, 8 and 1 more"]
    assert _splits(tmp_path, {"train": "0:2"}, name="g", lengths=ten) == [
        "splits leave 8 of the 10 episode(s) of total_episodes out of every split: episode(s) 2, 3, 4, 5, 6 and 3 more"]


def test_c008_without_any_episode_count(tmp_path):
    # no total_episodes and unreadable metadata: nothing to compare a range with
    root = _build(tmp_path)
    shutil.rmtree(root / "meta/episodes")
    _set_info(root, total_episodes=..., splits={"train": "0:9"})
    r = _report(root)
    assert _found(r, "C008") == []
    assert [c for c, _ in _notes(r) if c == UNREADABLE_SKIP] == [UNREADABLE_SKIP]


# ---------------------------------------------------------------------------------------------------- C005/C002
def _lengths(tmp_path: Path, version: str, lengths, *, name: str = "ds", delete=(), **info):
    root = _build(tmp_path, version, name=name)
    if version == "v2.1":
        rows = _v2_rows(root)
        for row, n in zip(rows, lengths):
            if n is None:
                del row["length"]
            else:
                row["length"] = n
        _write_v2_rows(root, rows)
    else:
        _set_v3_column(root, "length", list(lengths))
    for rel in delete:
        (root / rel).unlink()
    _set_info(root, **info)
    r = _report(root)
    return [(f.check, f.path, f.message, f.count, f.subject) for f in r.findings if f.check in ("C002", "C005")]


def test_c005_one_episode_per_file(tmp_path):
    assert _lengths(tmp_path, "v2.1", (20, 15, 25)) == []
    assert _lengths(tmp_path, "v2.1", (20, 15, 24), name="b") == [
        ("C005", V2_DATA[2], "episode 2 has length 24 but its file has 25 rows", 1, {"episode": 2}),
        ("C002", INFO, "total_frames is 60 but the episode lengths sum to 59" + V2_C002, 1,
         {"key": "total_frames"}),
    ]
    # two files off by one each way: grouped; the lengths still sum to total_frames
    assert _lengths(tmp_path, "v2.1", (21, 15, 24), name="c") == [
        ("C005", V2_DATA[0], "episode 0 has length 21 but its file has 20 rows (2 occurrences: episode lengths "
                             "disagree with the rows in the data files, for episodes 0 and 2; e.g. "
                             "data/chunk-000/episode_000000.parquet, "
                             "data/chunk-000/episode_000002.parquet)", 2, {}),
    ]


def test_c005_several_episodes_per_file(tmp_path):
    assert _lengths(tmp_path, "v3.0", (20, 16, 25)) == [
        ("C005", V3_DATA[0], "file has 35 rows but its 2 episodes sum to 36 frames", 1, {}),
        ("C002", INFO, "total_frames is 60 but the episode lengths sum to 61", 1, {"key": "total_frames"}),
    ]
    # a file with an episode of unknown length is not compared (file-000: episodes 0 and 1); file-001 is
    assert _lengths(tmp_path, "v3.0", (None, 16, 24), name="b") == [
        ("C005", V3_DATA[1], "episode 2 has length 24 but its file has 25 rows", 1, {"episode": 2})]


def test_c002_rows_against_total_frames(tmp_path):
    assert _lengths(tmp_path, "v3.0", (20, 15, 25), total_frames=61) == [
        ("C002", INFO, "total_frames is 61 but the data files hold 60 rows", 1, {"key": "total_frames"})]
    assert _lengths(tmp_path, "v3.0", (20, 15, 25), name="b", total_frames=59) == [
        ("C002", INFO, "total_frames is 59 but the data files hold 60 rows", 1, {"key": "total_frames"})]
    # no total_frames: the per-file comparison still runs
    assert _lengths(tmp_path, "v3.0", (20, 15, 24), name="c", total_frames=...) == [
        ("C005", V3_DATA[1], "episode 2 has length 24 but its file has 25 rows", 1, {"episode": 2})]


def test_c002_when_a_data_file_is_missing(tmp_path):
    # episode 0's file is gone: the lengths are compared with total_frames instead of the rows
    assert _lengths(tmp_path, "v2.1", (20, 15, 25), delete=[V2_DATA[0]]) == []
    assert _lengths(tmp_path, "v2.1", (20, 15, 25), name="b", delete=[V2_DATA[0]], total_frames=61) == [
        ("C002", INFO, "total_frames is 61 but the episode lengths sum to 60 (data files not all readable)"
                       + V2_C002, 1, {"key": "total_frames"})]
    assert _lengths(tmp_path, "v2.1", (20, None, 25), name="c", delete=[V2_DATA[0]], total_frames=61) == []
    # the files that are there are still compared, past the missing one
    assert _lengths(tmp_path, "v2.1", (20, 15, 24), name="d", delete=[V2_DATA[0]], total_frames=59) == [
        ("C005", V2_DATA[2], "episode 2 has length 24 but its file has 25 rows", 1, {"episode": 2})]


# ------------------------------------------------------------------------ without episode metadata: C001 / C002
def _no_metadata(tmp_path: Path, version: str = "v2.1", *, name: str = "ds", lengths=(2,) * 10, delete=(),
                 **info) -> list[tuple]:
    root = _build(tmp_path, version, name=name, episode_lengths=lengths)
    if version == "v2.1":
        (root / EPS_V2).unlink()
    else:
        shutil.rmtree(root / "meta/episodes")
    for rel in delete:
        (root / rel).unlink()
    _set_info(root, splits={}, **info)
    r = _report(root)
    if version == "v2.1":
        assert ("C007", EPS_V2, "file is missing") in [(f.check, f.path, f.message) for f in r.findings]
    return [(f.check, f.severity, f.path, f.message, f.subject) for f in r.findings if f.check in ("C001", "C002")]


def test_layout_counts_v2_files_past_total_episodes(tmp_path):
    c1, c2 = {"key": "total_episodes"}, {"key": "total_frames"}
    # ten files of 2 rows, total_frames 20
    assert _no_metadata(tmp_path, total_episodes=10) == []
    assert _no_metadata(tmp_path, name="b", total_episodes=2) == [
        ("C001", "error", INFO, "total_episodes is 2 but data/ holds data files named for episode(s) 2, 3, 4, 5, 6 "
                                "and 3 more as well", c1),
        ("C002", "warning", INFO, "total_frames is 20 but the 2 data file(s) data_path names for them hold 4 rows"
                                  + V2_C002, c2),
    ]
    assert _no_metadata(tmp_path, name="c6", total_episodes=4, total_frames=8) == [
        ("C001", "error", INFO, "total_episodes is 4 but data/ holds data files named for episode(s) 4, 5, 6, 7, 8 "
                                "and 1 more as well", c1)]
    assert _no_metadata(tmp_path, name="c", total_episodes=5) == [
        ("C001", "error", INFO, "total_episodes is 5 but data/ holds data files named for episode(s) 5, 6, 7, 8, 9 "
                                "as well", c1),
        ("C002", "warning", INFO, "total_frames is 20 but the 5 data file(s) data_path names for them hold 10 rows"
                                  + V2_C002, c2),
    ]
    assert _no_metadata(tmp_path, name="d", total_episodes=9, total_frames=18) == [
        ("C001", "error", INFO, "total_episodes is 9 but data/ holds data files named for episode(s) 9 as well", c1)]


def test_layout_counts_total_frames(tmp_path):
    c2 = {"key": "total_frames"}
    assert _no_metadata(tmp_path, total_frames=21) == [
        ("C002", "warning", INFO, "total_frames is 21 but the 10 data file(s) data_path names for them hold 20 rows"
                                  + V2_C002, c2)]
    # a missing expected file: the rows cannot be counted
    assert _no_metadata(tmp_path, name="b", total_frames=21, delete=["data/chunk-000/episode_000003.parquet"]) == []
    # no total_episodes: v2.x names no file, so none is counted
    assert _no_metadata(tmp_path, name="c", total_episodes=..., total_frames=21) == []
    assert _no_metadata(tmp_path, name="d", total_frames=...) == []
    # v3.0: every file on disk that fits data_path; total_episodes is no reference for file names
    assert _no_metadata(tmp_path, "v3.0", name="e", lengths=(20, 15, 25), total_episodes=1) == []
    assert _no_metadata(tmp_path, "v3.0", name="f", lengths=(20, 15, 25), total_frames=61) == [
        ("C002", "error", INFO, "total_frames is 61 but the 2 data file(s) on disk that fit data_path hold 60 rows",
         c2)]


def test_layout_counts_without_a_usable_data_path(tmp_path):
    # data_path cannot be expanded, so no data file is known: no count is compared
    assert _no_metadata(tmp_path, data_path="data/{bogus}.parquet", total_episodes=2, total_frames=21) == []
