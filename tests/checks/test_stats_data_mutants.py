"""The statistics data layer held to exact values: how stored statistics are read (``stats/stored.py``: JSON and
parquet, malformed values, streaming blocks and lookups across blocks), the arithmetic and tolerances they are held
to (``stats/compute.py``, against numpy references computed here), and G010 with ``--deep`` (``stats/deep.py``:
per-episode moments, their JSON form, quantile thresholds, the exact findings, notes and wording).

Datasets are written by :mod:`lerobot_tools.testing.synth` (real parquet, no video files) and edited with
pyarrow / json. The default v3.0 dataset has 4 episodes of 20, 15, 25 and 12 frames; its per-episode statistics
are one row per episode in ``meta/episodes/chunk-000/file-000.parquet``. The v2.1 one has 3 episodes of 20, 15
and 25 frames, one line per episode in ``meta/episodes_stats.jsonl`` (no quantiles). ``StatsBlocks.BLOCK_ROWS``
and ``BLOCK_LINES`` are lowered with monkeypatch where a test needs several blocks (configuration, not mocking).
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from lerobot_tools.checks.engine import ValidateOptions
from lerobot_tools.checks.stats import compute
from lerobot_tools.checks.stats import deep as sd
from lerobot_tools.checks.stats import blocks as sb
from lerobot_tools.checks.stats import stored as st
from lerobot_tools.dataset.model import Dataset
from lerobot_tools.errors import DatasetError
from lerobot_tools.testing.synth import SynthSpec, build_dataset
from lerobot_tools.validate import validate
from tests.editing import edit_json as _edit_json, edit_v21_stats as _edit_v21

EPS_V3 = "meta/episodes/chunk-000/file-000.parquet"
STATS_JSONL = "meta/episodes_stats.jsonl"
V3_LENGTHS = (20, 15, 25, 12)
V21_LENGTHS = (20, 15, 25)
EPS32 = float(np.finfo(np.float32).eps)
EPS64 = float(np.finfo(np.float64).eps)
STATE_FEAT = {"dtype": "float32", "shape": [6]}
CAM_FEAT = {"dtype": "video", "shape": [64, 64, 3], "names": ["height", "width", "channels"]}


# ----------------------------------------------------------------------------------------------------- helpers
def _v3(tmp_path: Path, lengths=V3_LENGTHS, name: str = "v3", **kw) -> Path:
    return build_dataset(tmp_path / name, SynthSpec(episode_lengths=lengths, video_keys=kw.pop("video_keys", ()),
                                                    video_codec=None, **kw))


def _v21(tmp_path: Path, lengths=V21_LENGTHS, name: str = "v21", **kw) -> Path:
    return build_dataset(tmp_path / name, SynthSpec(version="v2.1", episode_lengths=lengths, video_keys=(),
                                                    video_codec=None, **kw))


def _report(root: Path, deep: bool = True, **kw):
    (r,) = validate([str(root)], ValidateOptions(deep=deep, **kw))
    return r


def _findings(report, check: str):
    return [f for f in report.findings if f.check == check]


def _notes(report) -> dict[str, str]:
    return {n.checks: n.reason for n in report.not_checked}


def _set_v3(root: Path, episode: int | None, column: str, fn, rel: str = EPS_V3) -> None:
    """Replace ``column`` of one episode's row (every row when ``episode`` is None), keeping the row groups and
    the column type."""
    path = root / rel
    pf = pq.ParquetFile(path)
    schema = pf.schema_arrow
    tables = []
    for i in range(pf.num_row_groups):
        t = pf.read_row_group(i)
        eps = t.column("episode_index").to_pylist()
        vals = [fn(v) if episode is None or e == episode else v for e, v in zip(eps, t.column(column).to_pylist())]
        idx = t.schema.get_field_index(column)
        tables.append(t.set_column(idx, t.schema.field(idx), pa.array(vals, type=t.schema.field(idx).type)))
    pf.close()
    with pq.ParquetWriter(path, schema) as w:
        for t in tables:
            w.write_table(t)


def _retype_v3(root: Path, column: str, values: list, typ: pa.DataType, rel: str = EPS_V3) -> None:
    """Replace ``column`` of the episodes file by ``values`` of Arrow type ``typ`` (one row group per row)."""
    path = root / rel
    t = pq.read_table(path)
    i = t.schema.get_field_index(column)
    t = t.set_column(i, pa.field(column, typ), pa.array(values, type=typ))
    pq.write_table(t, path, row_group_size=1)


def _stats_v3(root: Path, feature: str, stat: str) -> list:
    return pq.read_table(root / EPS_V3, columns=[f"stats/{feature}/{stat}"]).column(0).to_pylist()


def _episode_data(root: Path, feature: str) -> dict[int, np.ndarray]:
    """episode -> the feature's rows (float64, ``(n, d)``) read back from every data file."""
    out: dict[int, list] = {}
    for p in sorted((root / "data").glob("*/*.parquet")):
        t = pq.read_table(p, columns=["episode_index", feature])
        for e, v in zip(t.column(0).to_pylist(), t.column(1).to_pylist()):
            out.setdefault(e, []).append(v if isinstance(v, list) else [v])
    return {e: np.asarray(v, dtype=np.float64) for e, v in out.items()}


# ======================================================================================== stored.py: pure parts
@pytest.mark.parametrize("feat,kind,normalised_as", [
    ({"dtype": "video", "shape": [8, 8, 3]}, "camera", False),
    ({"dtype": "image", "shape": [3, 8, 8]}, "camera", False),
    ({"dtype": "string", "shape": [1]}, None, False),
    ({"dtype": "language", "shape": [1]}, None, False),
    ({"shape": [1]}, None, False),
    ({"dtype": 7, "shape": [1]}, None, False),
    ({"dtype": "float32", "shape": [6]}, "numeric", True),
    ({"dtype": "bool", "shape": [1]}, "numeric", True),
])
def test_feature_kind_and_which_features_lerobot_normalises(feat, kind, normalised_as):
    assert st.feature_kind(feat) == kind
    assert st.normalised("observation.state", feat) is normalised_as
    assert st.normalised("action", feat) is normalised_as
    assert st.normalised("actions.extra", feat) is normalised_as  # any action* key
    for name in ("timestamp", "index", "next.reward", "episode_index", "my.observation"):
        assert st.normalised(name, feat) is False


@pytest.mark.parametrize("feat,channels", [
    ({"shape": [64, 48, 4], "names": ["height", "width", "channels"]}, 4),
    ({"shape": [64, 48, 1], "names": ["h", "w", "channel"]}, 1),
    ({"shape": [4, 64, 48], "names": ["channels", "height", "width"]}, 4),
    ({"shape": [2, 64, 48], "names": None}, 2),
    ({"shape": [5, 64, 48, 7], "names": ["a", "b", "channels", "d"]}, 5),  # 4 names: not [h, w, c]
    ({"shape": [64, 48], "names": ["height", "width", "channels"]}, 64),  # names fit, shape does not
    ({"names": ["height", "width", "channels"]}, 3),
    ({"shape": None}, 3),
    ({"shape": []}, 3),
])
def test_camera_channels(feat, channels):
    assert st.camera_channels(feat) == channels


@pytest.mark.parametrize("feat,shapes", [
    ({"dtype": "float32", "shape": [6]}, [(6,)]),
    ({"dtype": "float32", "shape": [1]}, [(1,)]),
    ({"dtype": "float64", "shape": [2, 3]}, [(2, 3), (3,)]),
    ({"dtype": "int64", "shape": [4, 2, 5]}, [(4, 2, 5), (5,)]),
    (CAM_FEAT, [(3, 1, 1)]),
    ({"dtype": "image", "shape": [4, 32, 32], "names": ["channel", "height", "width"]}, [(4, 1, 1)]),
    ({"dtype": "string", "shape": [1]}, []),
    ({"dtype": "float32", "shape": []}, []),
    ({"dtype": "float32", "shape": None}, []),
    ({"dtype": "float32", "shape": "6"}, []),
    ({"dtype": "float32", "shape": [True]}, []),
    ({"dtype": "float32", "shape": [6, "2"]}, []),
    ({"dtype": "float32", "shape": [6.0]}, []),
    ({"shape": [6]}, []),
])
def test_accepted_shapes(feat, shapes):
    assert st.accepted_shapes(feat) == shapes


@pytest.mark.parametrize("value,stat,expected", [
    ([1, 2.5], "mean", np.array([1.0, 2.5])),
    ([[0.25], [0.5], [1.0]], "std", np.array([[0.25], [0.5], [1.0]])),
    (3, "min", np.array(3.0)),
    ([20], "count", np.array([20], dtype=np.int64)),
    ([20.0], "count", np.array([20], dtype=np.int64)),
    ([1, math.nan], "max", np.array([1.0, math.nan])),  # read; G003 says it is not finite
    ([1, None], "max", np.array([1.0, math.nan])),  # JSON null inside a list: not a number, read as NaN
    (None, "mean", None),
    (True, "mean", None),
    (False, "count", None),
    ("abc", "mean", None),
    ("1.5", "mean", None),  # text that numpy would parse: not a number for a loader
    (["1.5", 2], "mean", None),
    ([[1, "2"], [3, 4]], "mean", None),
    (["1", None], "max", None),
    (["20"], "count", None),
    ([b"12"], "mean", None),
    ({"a": 1}, "mean", None),
    ([[1, 2], [3]], "mean", None),  # not rectangular
    ([[1, [2]], [3, 4]], "mean", None),
    ([20.5], "count", None),
    ([math.nan], "count", None),
    ([math.inf], "count", None),
    ([None], "count", None),
])
def test_to_array(value, stat, expected):
    got = st.to_array(value, stat)
    if expected is None:
        assert got is None
        return
    assert got.dtype == expected.dtype and got.shape == expected.shape
    np.testing.assert_array_equal(got, expected)


def test_parse_feature_stats_names_what_cannot_be_read():
    stats, bad = st.parse_feature_stats({"min": [0.0, 1.0], "max": "x", "mean": None, "std": [[1], [2, 3]],
                                         "count": [2.5], "q50": [0.5, 1.5], 7: [1]})
    assert bad == ["max", "mean", "std", "count"]
    assert list(stats) == ["min", "q50", "7"]
    assert stats["min"].dtype == np.float64 and stats["min"].tolist() == [0.0, 1.0]
    assert stats["7"].tolist() == [1.0]
    good, none_bad = st.parse_feature_stats({"count": [12], "mean": [1]})
    assert none_bad == [] and good["count"].dtype == np.int64 and good["count"].tolist() == [12]
    assert good["mean"].dtype == np.float64
    assert st.parse_feature_stats([1, 2]) == ({}, ["(not an object)"])
    assert st.parse_feature_stats(None) == ({}, ["(not an object)"])


def test_read_global_reads_up_to_the_size_cap(tmp_path, monkeypatch):
    root = _v3(tmp_path)
    ds = Dataset(root)
    on_disk = json.loads((root / "meta/stats.json").read_text())
    assert st.read_global(ds) == on_disk
    monkeypatch.setattr(st, "MAX_STATS_JSON_BYTES", 2**20)
    text = json.dumps(on_disk)
    (root / "meta/stats.json").write_text("{" + " " * (2**20 - len(text)) + text[1:])  # exactly at the cap: read
    assert st.read_global(ds) == on_disk
    (root / "meta/stats.json").write_text("{" + " " * (3 * 2**20 - len(text) + 1) + text[1:])  # 3 MiB + 1 byte
    with pytest.raises(DatasetError) as exc:
        st.read_global(ds)
    assert exc.value.message == "is 3 MiB, over the 1 MiB lrtool reads"
    assert exc.value.path == "meta/stats.json"
    (root / "meta/stats.json").write_text("[1, 2]")
    with pytest.raises(DatasetError):
        st.read_global(ds)
    (root / "meta/stats.json").unlink()
    assert st.read_global(ds) is None


# ======================================================================================== stored.py: readers
def test_readers_pick_the_layouts_per_episode_statistics(tmp_path):
    v3, v21 = _v3(tmp_path), _v21(tmp_path)
    assert st.EpisodeStatsReader(Dataset(v3)).kind == "parquet"
    assert sb.StatsBlocks(Dataset(v3)).kind == "parquet"
    assert st.EpisodeStatsReader(Dataset(v21)).kind == "jsonl"
    assert sb.StatsBlocks(Dataset(v21)).kind == "jsonl"
    (v21 / STATS_JSONL).unlink()
    (v21 / STATS_JSONL).mkdir()  # not a file: no per-episode statistics
    assert st.EpisodeStatsReader(Dataset(v21)).kind is None
    assert sb.StatsBlocks(Dataset(v21)).kind is None
    assert list(st.EpisodeStatsReader(Dataset(v21))) == [] and list(sb.StatsBlocks(Dataset(v21))) == []
    assert sb.StatsBlocks(Dataset(v21)).lookup([0, 1]) == {}
    (v3 / EPS_V3).unlink()
    assert st.EpisodeStatsReader(Dataset(v3)).kind is None and sb.StatsBlocks(Dataset(v3)).kind is None
    _edit_json(v3 / "meta/info.json", lambda i: i.update(codebase_version="v9.0"))
    assert sb.StatsBlocks(Dataset(v3)).kind is None


def _with_mean(line: bytes, mean: list) -> bytes:
    obj = json.loads(line)
    obj["stats"]["action"]["mean"] = mean
    return json.dumps(obj).encode() + b"\n"


def _jsonl_lines(root: Path) -> list[bytes]:
    """The v2.1 lines of episodes 0-2, then every kind of line that is not an entry."""
    good = (root / STATS_JSONL).read_bytes().splitlines(keepends=True)
    assert len(good) == 3
    return [good[0],
            b"\n",                                        # line 2: blank, skipped silently
            b"{not json\n",                               # line 3
            b'{"a": "\xff"}\n',                           # line 4: not UTF-8
            b"[1, 2]\n",                                  # line 5: not an object
            b'{"episode_index": true, "stats": {}}\n',    # line 6: a bool is not an index
            b'{"episode_index": 7, "stats": [1]}\n',      # line 7: stats not an object
            b'{"stats": {}}\n',                           # line 8
            good[1],                                      # line 9: episode 1
            _with_mean(good[0], [0.0] * 6),               # line 10: episode 0 again, other values
            good[2].rstrip(b"\n")]                        # line 11: episode 2, no final newline


JSONL_PROBLEMS = [
    (STATS_JSONL, "line 3 is not valid JSON (Expecting property name enclosed in double quotes)"),
    (STATS_JSONL, "line 4 is not valid JSON ('utf-8' codec can't decode byte 0xff in position 7: invalid start byte)"),
    (STATS_JSONL, "line 5 has no integer episode_index and stats object"),
    (STATS_JSONL, "line 6 has no integer episode_index and stats object"),
    (STATS_JSONL, "line 7 has no integer episode_index and stats object"),
    (STATS_JSONL, "line 8 has no integer episode_index and stats object"),
]


def test_episode_stats_reader_jsonl_rows_problems_and_lookups(tmp_path):
    root = _v21(tmp_path)
    lines = _jsonl_lines(root)
    (root / STATS_JSONL).write_bytes(b"".join(lines))
    truth = {json.loads(ln)["episode_index"]: json.loads(ln)["stats"] for ln in (lines[0], lines[8], lines[10])}
    reader = st.EpisodeStatsReader(Dataset(root))
    rows = list(reader)
    assert [(r.episode_index, r.source, r.where) for r in rows] == [
        (0, STATS_JSONL, "line 1"), (1, STATS_JSONL, "line 9"), (0, STATS_JSONL, "line 10"),
        (2, STATS_JSONL, "line 11")]
    assert rows[0].stats == truth[0] and rows[1].stats == truth[1] and rows[3].stats == truth[2]
    assert rows[2].stats["action"]["mean"] == [0.0] * 6 != truth[0]["action"]["mean"]
    assert reader.problems == JSONL_PROBLEMS
    # a lookup reads the episode's first line again at its recorded offset
    for e in (2, 0, 1):
        row = reader.get(e)
        assert (row.episode_index, row.source, row.stats) == (e, STATS_JSONL, truth[e])
    assert reader.get(3) is None and reader.get(-1) is None
    assert reader.problems == JSONL_PROBLEMS  # lookups of good lines add nothing
    (root / STATS_JSONL).unlink()
    assert reader.get(1) is None  # the file went away: nothing, no exception


def test_episode_stats_reader_parquet_rows_across_row_groups_and_files(tmp_path):
    root = _v3(tmp_path, lengths=(20, 15, 25, 12, 9))
    t = pq.read_table(root / EPS_V3)
    # action std of episode 1 is null (not stored); a column without a feature part is ignored
    std = t.column("stats/action/std").to_pylist()
    std[1] = None
    t = t.set_column(t.schema.get_field_index("stats/action/std"), "stats/action/std",
                     pa.array(std, type=pa.list_(pa.float64())))
    t = t.append_column("stats/orphan", pa.array([[1.0]] * 5))
    pq.write_table(t.slice(0, 3), root / EPS_V3, row_group_size=2)  # row groups: [0, 1], [2]
    second = "meta/episodes/chunk-000/file-001.parquet"
    again = t.slice(0, 1)  # episode 0 once more, with other values: lookups give its first row
    again = again.set_column(again.schema.get_field_index("stats/action/mean"), "stats/action/mean",
                             pa.array([[0.0] * 6], type=pa.list_(pa.float64())))
    pq.write_table(pa.concat_tables([t.slice(3), again]), root / second, row_group_size=1)  # [3], [4], [0]
    # a third file of one row group: episode 1 twice (the first row counts), and a row without an index
    third = "meta/episodes/chunk-000/file-002.parquet"
    twice = pa.concat_tables([t.slice(1, 1), again.set_column(0, "episode_index", pa.array([1])), t.slice(2, 1)])
    twice = twice.set_column(0, "episode_index", pa.array([1, 1, None], pa.int64()))
    pq.write_table(twice, root / third)
    reader = st.EpisodeStatsReader(Dataset(root))
    rows = list(reader)
    assert [(r.episode_index, r.source, r.where) for r in rows] == [
        (0, EPS_V3, "row 0"), (1, EPS_V3, "row 1"), (2, EPS_V3, "row 2"), (3, second, "row 0"), (4, second, "row 1"),
        (0, second, "row 2"), (1, third, "row 0")]
    assert rows[5].stats["action"]["mean"] == [0.0] * 6 != rows[0].stats["action"]["mean"]
    assert rows[6].stats["action"]["mean"] == rows[1].stats["action"]["mean"]
    assert reader.problems == []
    assert set(rows[0].stats) == {"action", "observation.state", "timestamp", "frame_index", "episode_index",
                                  "index", "task_index"}
    assert "std" not in rows[1].stats["action"]
    assert rows[1].stats["action"]["mean"] == t.column("stats/action/mean")[1].as_py()
    assert rows[4].stats["observation.state"]["q50"] == t.column("stats/observation.state/q50")[4].as_py()
    assert rows[2].stats["action"]["count"] == [25]
    # lookups: in any order, across row groups and files, each the row as streamed
    for e in (4, 0, 2, 3, 1, 0):
        got = reader.get(e)
        assert (got.episode_index, got.source, got.where, got.stats) == \
            (e, rows[e].source, rows[e].where, rows[e].stats)
    assert reader.get(9) is None
    (root / second).write_bytes(b"PAR1 gone")
    assert reader.get(4) is None  # the file cannot be read any more: nothing


def test_episode_stats_reader_parquet_problems(tmp_path, as_nobody):
    root = _v3(tmp_path / ("d" * 120))
    second = "meta/episodes/chunk-000/file-001.parquet"
    third = "meta/episodes/chunk-000/file-002.parquet"
    pq.write_table(pa.table({"stats/action/mean": pa.array([[1.0]])}), root / second)  # no episode_index: skipped
    (root / third).write_bytes(b"PAR1 not really")
    reader = st.EpisodeStatsReader(Dataset(root))
    assert [r.episode_index for r in reader] == [0, 1, 2, 3]
    assert reader.problems == [(third, "stats columns cannot be read (Parquet magic bytes not found in footer. Either "
                                       "the file is corrupted or this is not a parquet file.)")]
    # an error message longer than 160 characters (here it names the long path) is cut to one short line
    blocked = st.EpisodeStatsReader(Dataset(root))  # info.json and the file list are read here
    (root / EPS_V3).chmod(0)
    try:
        with as_nobody():
            assert list(blocked) == []
    finally:
        (root / EPS_V3).chmod(0o644)
    (rel, msg), *_ = blocked.problems
    inner = msg[len("stats columns cannot be read ("):-1]
    assert rel == EPS_V3 and msg.startswith("stats columns cannot be read (") and msg.endswith("…)")
    assert len(inner) == 160


def test_numbers_written_as_text_and_fractional_counts_are_g004_in_every_layout(tmp_path):
    """A statistic written as text ("1.5") is not a number to a loader, and a count of 15.5 or NaN is no count:
    G004 names the statistic, whether it comes from stats.json, episodes_stats.jsonl or a parquet column."""
    v3 = _v3(tmp_path)
    _edit_json(v3 / "meta/stats.json", lambda s: s["action"].update(mean=[str(x) for x in s["action"]["mean"]]))
    means = [[str(x) for x in m] for m in _stats_v3(v3, "action", "mean")]
    _retype_v3(v3, "stats/action/mean", means, pa.list_(pa.string()))
    counts = [[c[0] + {1: 0.5, 2: 1e30, 3: math.nan}.get(e, 0)]  # 1e30: a whole number no int64 holds
              for e, c in enumerate(_stats_v3(v3, "observation.state", "count"))]
    _retype_v3(v3, "stats/observation.state/count", counts, pa.list_(pa.float64()))
    r = _report(v3, deep=False)
    assert [(f.message, f.path, f.severity) for f in _findings(r, "G004")] == [
        ("episode 0: 'action'.mean is not a rectangular list of numbers (7 occurrences: per-episode statistics "
         f"entries are incomplete or have the wrong shape, for episodes 0-3; e.g. {EPS_V3})", EPS_V3, "warning"),
        ("'action'.mean is not a rectangular list of numbers", "meta/stats.json", "error")]
    g004 = []
    st_rows = sb.StatsBlocks(Dataset(v3))
    for block in st_rows:
        for name in ("action", "observation.state"):
            for stat, c in block.features[name].items():
                g004 += [(int(block.episodes[i]), name, stat, s) for i, s in sorted(c.shapes.items())]
    assert g004 == [(e, "action", "mean", "unreadable") for e in range(4)] + \
        [(e, "observation.state", "count", "unreadable") for e in (1, 2, 3)]
    assert [f.subject.get("episode") for f in _findings(r, "G007")] == []  # no count read as 15 or -2**63
    v21 = _v21(tmp_path)
    _edit_v21(v21, lambda e, s: s["action"].update(mean=[str(x) for x in s["action"]["mean"]]) if e == 1 else None)
    r = _report(v21, deep=False)
    # v2.1: lerobot 0.3.3 aggregates the per-episode statistics when it loads the dataset: an error there
    assert [(f.message, f.path, f.severity) for f in _findings(r, "G004")] == [
        ("episode 1: 'action'.mean is not a rectangular list of numbers (lerobot 0.3.3 aggregates the per-episode "
         "statistics at load: aggregate_stats raises)", STATS_JSONL, "error")]


# ======================================================================================== stored.py: columns
def _col(c: sb.StatColumn) -> tuple[list, list, dict]:
    return c.values.tolist(), c.ok.tolist(), c.shapes


def test_column_from_values_rectangular_rows():
    c = sb.column_from_values([[1, 2.5], [3, 4]], "mean", {"dtype": "float32", "shape": [2]})
    assert c.values.dtype == np.float64 and _col(c) == ([[1.0, 2.5], [3.0, 4.0]], [True, True], {})
    cam = sb.column_from_values([[[[0.1]], [[0.2]], [[0.3]]]] * 2, "std", CAM_FEAT)
    assert cam.values.shape == (2, 3, 1, 1) and cam.ok.tolist() == [True, True] and cam.shapes == {}
    c = sb.column_from_values([[20], [15]], "count", STATE_FEAT)
    assert c.values.dtype == np.int64 and _col(c) == ([[20], [15]], [True, True], {})
    # counts that are not whole numbers: 0 and not ok, "unreadable"
    c = sb.column_from_values([[20], [15.5], [math.nan], [12.0]], "count", STATE_FEAT)
    assert c.values.dtype == np.int64
    assert _col(c) == ([[20], [0], [0], [12]], [True, False, False, True], {1: "unreadable", 2: "unreadable"})
    # counts of the wrong shape in every row
    c = sb.column_from_values([[20, 20], [15, 15]], "count", STATE_FEAT)
    assert c.values.dtype == np.int64 and _col(c) == ([[0], [0]], [False, False], {0: (2,), 1: (2,)})
    # no declared shape: any rectangular shape is taken as it is
    c = sb.column_from_values([[1, 2, 3]], "max", None)
    assert _col(c) == ([[1.0, 2.0, 3.0]], [True], {})


def test_column_from_values_row_by_row():
    feat = {"dtype": "float32", "shape": [2]}
    c = sb.column_from_values([[1, 2], None, [1, 2, 3], "x", [[1, 2]], [5, 6]], "mean", feat)
    assert c.values.dtype == np.float64 and c.values.shape == (6, 2)
    assert c.ok.tolist() == [True, False, False, False, False, True]
    assert c.shapes == {1: None, 2: (3,), 3: "unreadable", 4: (1, 2)}
    assert c.values[0].tolist() == [1.0, 2.0] and c.values[5].tolist() == [5.0, 6.0]
    assert np.isnan(c.values[1:5]).all()
    # the accepted shape most rows have wins; without a declared shape, the most common one
    c = sb.column_from_values([[1], [2, 3], [4, 5], None], "min", None)
    assert _col(c)[1:] == ([False, True, True, False], {0: (1,), 3: None})
    assert c.values[1:3].tolist() == [[2.0, 3.0], [4.0, 5.0]]
    # no row has the declared shape: the first row's shape is used (G004 reports the shape)
    c = sb.column_from_values([[1, 2, 3], None, [4, 5, 6]], "min", feat)
    assert c.values.shape == (3, 3) and _col(c)[1:] == ([True, False, True], {1: None})
    # scalars (0-d): one value per row
    c = sb.column_from_values([1.5, 2.5], "mean", {"dtype": "float32", "shape": [1]})
    assert c.values.shape == (2,) and _col(c) == ([1.5, 2.5], [True, True], {})
    # numbers written as text are not numbers
    c = sb.column_from_values([["1.5", "2"], [1.0, 2.0], [None, 3.0]], "mean", feat)
    assert _col(c)[1:] == ([False, True, True], {0: "unreadable"}) and np.isnan(c.values[2, 0])
    # nothing stored at all
    c = sb.column_from_values([None, None], "std", feat)
    assert c.values.shape == (2, 1) and np.isnan(c.values).all() and _col(c)[1:] == ([False, False], {0: None, 1: None})
    # counts row by row: always (1,), int64, 0 where not ok
    c = sb.column_from_values([[20], None, [1.5], [3, 4], "n"], "count", STATE_FEAT)
    assert c.values.dtype == np.int64
    assert _col(c) == ([[20], [0], [0], [0], [0]], [True, False, False, False, False],
                       {1: None, 2: "unreadable", 3: (2,), 4: "unreadable"})


def test_arrow_column_fast_path_and_fallbacks():
    f32 = np.arange(12, dtype=np.float32).reshape(2, 6) / 3
    col = pa.FixedSizeListArray.from_arrays(pa.array(f32.reshape(-1)), 6)
    c = sb.arrow_column(col, "mean", STATE_FEAT)
    assert c.values.dtype == np.float64 and c.ok.tolist() == [True, True] and c.shapes == {}
    np.testing.assert_array_equal(c.values, f32.astype(np.float64))
    c = sb.arrow_column(pa.chunked_array([pa.array([[1.0, 2.0]], pa.large_list(pa.float64())),
                                                     pa.array([[3.0, 4.0]], pa.large_list(pa.float64()))]),
                         "max", {"dtype": "float32", "shape": [2]})
    assert _col(c) == ([[1.0, 2.0], [3.0, 4.0]], [True, True], {})
    cam = pa.array([[[[0.1]], [[0.2]], [[0.3]]], [[[0.4]], [[0.5]], [[0.6]]]],
                   type=pa.list_(pa.list_(pa.list_(pa.float64()))))
    c = sb.arrow_column(cam, "mean", CAM_FEAT)
    assert c.values.shape == (2, 3, 1, 1) and c.ok.all() and c.values[1].reshape(-1).tolist() == [0.4, 0.5, 0.6]
    c = sb.arrow_column(pa.array([[20], [15]], type=pa.list_(pa.int64())), "count", STATE_FEAT)
    assert c.values.dtype == np.int64 and _col(c) == ([[20], [15]], [True, True], {})
    # slices (an array's offset, chunks of a table read in pieces): only the rows' own values, at every level
    cams = pa.array([[[[float(10 * r + i)]] for i in range(3)] for r in range(4)],
                    type=pa.list_(pa.list_(pa.list_(pa.float64()))))
    c = sb.arrow_column(pa.chunked_array([cams.slice(1, 2), cams.slice(3, 1)]), "mean", CAM_FEAT)
    assert c.ok.all() and c.values.reshape(3, 3).tolist() == [[10, 11, 12], [20, 21, 22], [30, 31, 32]]
    c = sb.arrow_column(cams.slice(2, 2), "mean", CAM_FEAT)
    assert c.ok.all() and c.values.reshape(2, 3).tolist() == [[20, 21, 22], [30, 31, 32]]
    fixed = pa.FixedSizeListArray.from_arrays(pa.array(np.arange(8, dtype=np.float64)), 2)
    assert _col(sb.arrow_column(fixed.slice(1, 2), "max", {"dtype": "float32", "shape": [2]})) == (
        [[2.0, 3.0], [4.0, 5.0]], [True, True], {})
    # counts of two values in every row: the shape is recorded for each row
    c = sb.arrow_column(pa.array([[20, 20], [15, 15], [3, 3]], type=pa.list_(pa.int64())), "count", STATE_FEAT)
    assert _col(c) == ([[0], [0], [0]], [False, False, False], {0: (2,), 1: (2,), 2: (2,)})
    # a null inside one row's count: that row cannot be read, the others can
    c = sb.arrow_column(pa.array([[20], [None], [25]], type=pa.list_(pa.int64())), "count", STATE_FEAT)
    assert _col(c) == ([[20], [0], [25]], [True, False, True], {1: "unreadable"})
    # a null row, rows of other lengths, and a shape other than the declared one
    c = sb.arrow_column(pa.array([[1.0, 2.0], None, [1.0, 2.0, 3.0]], type=pa.list_(pa.float64())), "min",
                         {"dtype": "float32", "shape": [2]})
    assert c.ok.tolist() == [True, False, False] and c.shapes == {1: None, 2: (3,)}
    c = sb.arrow_column(pa.array([[1.0, 2.0, 3.0]] * 2, type=pa.list_(pa.float64())), "min",
                         {"dtype": "float32", "shape": [2]})
    assert _col(c) == ([[1.0, 2.0, 3.0]] * 2, [True, True], {})
    # text is not a number, not even "1.5"
    c = sb.arrow_column(pa.array([["a"], ["1.5"]], type=pa.list_(pa.string())), "mean",
                         {"dtype": "float32", "shape": [1]})
    assert c.ok.tolist() == [False, False] and c.shapes == {0: "unreadable", 1: "unreadable"}
    # counts stored as floats: whole numbers are counts, others are not (as in JSON)
    c = sb.arrow_column(pa.array([[20.0], [15.5], [math.nan], [12.0]], type=pa.list_(pa.float64())), "count",
                         STATE_FEAT)
    assert c.values.dtype == np.int64
    assert _col(c) == ([[20], [0], [0], [12]], [True, False, False, True], {1: "unreadable", 2: "unreadable"})
    c = sb.arrow_column(pa.array([[20.0], [15.0]], type=pa.list_(pa.float32())), "count", STATE_FEAT)
    assert c.values.dtype == np.int64 and _col(c) == ([[20], [15]], [True, True], {})
    c = sb.arrow_column(pa.array([], type=pa.list_(pa.float64())), "mean", STATE_FEAT)
    assert c.values.shape[0] == 0 and c.ok.tolist() == []


# ======================================================================================== stored.py: StatsBlocks
SECOND_EPS = "meta/episodes/chunk-000/file-001.parquet"


def _split_episodes_v3(root: Path) -> pa.Table:
    """Episodes 0-2 in ``file-000`` (row groups of 1 row), 3, 4 and 0 again in ``file-001`` (one row group), an
    empty ``file-002`` and a ``file-003`` without episode_index. Returns the original table."""
    t = pq.read_table(root / EPS_V3)
    assert t.num_rows == 5
    t = t.append_column("stats/orphan", pa.array([[1.0]] * 5))  # no feature part: ignored
    pq.write_table(t.slice(0, 3), root / EPS_V3, row_group_size=1)
    again = t.slice(0, 1)  # episode 0 once more at the end of file-001, with other values
    again = again.set_column(again.schema.get_field_index("stats/action/mean"), "stats/action/mean",
                             pa.array([[0.0] * 6], type=pa.list_(pa.float64())))
    pq.write_table(pa.concat_tables([t.slice(3), again]), root / SECOND_EPS)
    pq.write_table(t.slice(0, 0), root / "meta/episodes/chunk-000/file-002.parquet")
    pq.write_table(pa.table({"stats/action/mean": pa.array([[1.0]])}),
                   root / "meta/episodes/chunk-000/file-003.parquet")
    return t


def test_stats_blocks_gather_files_whose_fields_differ_only_in_nullability_and_metadata(tmp_path):
    # file-001 written with every statistics field declared non-nullable and other schema metadata (as another
    # writer version may): the same column types, so both files make one block with every value in place
    root = _v3(tmp_path, lengths=(20, 15, 25, 12, 9))
    t = pq.read_table(root / EPS_V3)
    strict = pa.schema([f.with_nullable(not f.name.startswith("stats/")) for f in t.schema],
                       metadata={b"writer": b"another"})
    pq.write_table(t.slice(0, 2), root / EPS_V3)
    pq.write_table(t.slice(2).cast(strict), root / SECOND_EPS)
    assert not pq.read_schema(root / SECOND_EPS).field("stats/action/mean").nullable
    blocks = list(sb.StatsBlocks(Dataset(root)))
    assert [(b.episodes.tolist(), b.spans) for b in blocks] == [([0, 1, 2, 3, 4], ((0, EPS_V3), (2, SECOND_EPS)))]
    assert blocks[0].features["action"]["mean"].values.tolist() == t.column("stats/action/mean").to_pylist()
    assert blocks[0].features["action"]["count"].values[:, 0].tolist() == [20, 15, 25, 12, 9]


def test_stats_blocks_parquet_stream_and_lookup_across_blocks_and_files(tmp_path, monkeypatch):
    root = _v3(tmp_path, lengths=(20, 15, 25, 12, 9))
    t = _split_episodes_v3(root)
    # file-000: row groups [0, 1], then [2], one episode short of BLOCK_ROWS, read together with file-001's rows
    # (same statistics columns); file-002 has no rows and file-003 no episode_index: no block
    monkeypatch.setattr(sb.StatsBlocks, "BLOCK_ROWS", 2)
    reader = sb.StatsBlocks(Dataset(root))
    blocks = list(reader)
    assert [(b.source, b.first_row, b.episodes.tolist(), b.where_kind, b.spans) for b in blocks] == [
        (EPS_V3, 0, [0, 1], "row", ()), (EPS_V3, 2, [2, 3, 4, 0], "row", ((0, EPS_V3), (1, SECOND_EPS)))]
    assert [blocks[1].source_at(i) for i in range(4)] == [EPS_V3, SECOND_EPS, SECOND_EPS, SECOND_EPS]
    assert [blocks[0].source_at(i) for i in range(2)] == [EPS_V3, EPS_V3]
    assert reader.problems == []
    assert blocks[0].episodes.dtype == np.int64 and blocks[1].where(2) == "episode 4"
    assert set(blocks[0].features) == {"action", "observation.state", "timestamp", "frame_index", "episode_index",
                                       "index", "task_index"}
    mean = t.column("stats/action/mean").to_pylist()
    assert blocks[1].features["action"]["mean"].values.tolist() == [mean[2], mean[3], mean[4], [0.0] * 6]
    col = blocks[0].features["action"]["mean"]
    assert col.ok.all() and col.values.tolist() == [mean[e] for e in blocks[0].episodes.tolist()]
    for b in blocks:
        lengths = [(20, 15, 25, 12, 9)[e] for e in b.episodes.tolist()]
        assert b.features["action"]["count"].values[:, 0].tolist() == lengths
        assert b.nbytes == b.episodes.nbytes + sum(c.values.nbytes + c.ok.nbytes for s in b.features.values()
                                                   for c in s.values())
    found = reader.lookup([4, 0, 2, 9, 1])
    assert sorted(found) == [0, 1, 2, 4]
    for e, (block, i) in found.items():
        assert int(block.episodes[i]) == e and block.features["action"]["mean"].values[i].tolist() == mean[e]
    assert found[0][0] is found[1][0] and found[0][0] is not found[2][0]
    reader.close()
    block, i = reader.lookup([3])[3]  # read again after close()
    assert (i, block.source_at(i)) == (1, SECOND_EPS)
    assert block.features["observation.state"]["q50"].values[i].tolist() == t.column("stats/observation.state/q50")[3].as_py()
    reader.close()
    (root / SECOND_EPS).unlink()  # gone since the stream: the episodes of the block it is in are not found
    assert sorted(reader.lookup([3, 4, 1])) == [1]


def test_stats_blocks_gather_small_files_with_the_same_columns_and_findings_name_each_file(tmp_path):
    root = _v3(tmp_path)
    t = pq.read_table(root / EPS_V3)
    files = [f"meta/episodes/chunk-000/file-{i:03d}.parquet" for i in range(4)]
    for i, rel in enumerate(files):  # one episode per file, as a resumed or aggregated recording writes them
        pq.write_table(t.slice(i, 1), root / rel)
    blocks = list(sb.StatsBlocks(Dataset(root)))
    assert [(b.source, b.episodes.tolist(), b.spans) for b in blocks] == [
        (files[0], [0, 1, 2, 3], tuple((i, rel) for i, rel in enumerate(files)))]
    mean = t.column("stats/action/mean").to_pylist()
    assert blocks[0].features["action"]["mean"].values.tolist() == mean

    # another statistic type in file-002 (float32 lists): it cannot share a block with its neighbours
    col = "stats/action/mean"
    _retype_v3(root, col, [mean[2]], pa.list_(pa.float32()), rel=files[2])
    blocks = list(sb.StatsBlocks(Dataset(root)))
    assert [(b.source, b.first_row, b.episodes.tolist()) for b in blocks] == [
        (files[0], 0, [0, 1]), (files[2], 0, [2]), (files[3], 0, [3])]
    assert blocks[1].features["action"]["mean"].values[0].tolist() == \
        np.asarray(mean[2], dtype=np.float32).astype(np.float64).tolist()

    # a finding about a row read from the second file of a block names that file
    for rel in files[:2]:
        _set_v3(root, None, "stats/action/std", lambda v: [-1.0] * len(v), rel=rel)
    (g005,) = _findings(_report(root, deep=False), "G005")
    assert (g005.count, g005.path, g005.paths) == (2, files[0], files[:2])


def test_stats_blocks_parquet_problems_and_row_groups_read_together(tmp_path, monkeypatch):
    root = _v3(tmp_path)
    (root / SECOND_EPS).write_bytes(b"PAR1 not a parquet file")
    t = pq.read_table(root / EPS_V3)
    pq.write_table(t, root / EPS_V3, row_group_size=1)
    monkeypatch.setattr(sb.StatsBlocks, "BLOCK_ROWS", 3)
    reader = sb.StatsBlocks(Dataset(root))
    # 4 row groups of 1 episode: the first 3 are read together (3 >= BLOCK_ROWS), then the last one
    assert [(b.first_row, b.episodes.tolist()) for b in reader] == [(0, [0, 1, 2]), (3, [3])]
    assert reader.problems == [(SECOND_EPS, "stats columns cannot be read (Parquet magic bytes not found in footer. "
                                            "Either the file is corrupted or this is not a parquet file.)")]
    assert reader.lookup([7]) == {}


def _count_opens(monkeypatch) -> list[str]:
    """The names of the files ``pyarrow.parquet.ParquetFile`` opens from now on, in order."""
    opened: list[str] = []
    real = pq.ParquetFile

    class Counting(real):
        def __init__(self, source, *a, **kw):
            opened.append(Path(source).name)
            super().__init__(source, *a, **kw)

    monkeypatch.setattr(pq, "ParquetFile", Counting)
    return opened


def _count_reads(monkeypatch) -> list[list[int]]:
    """The row groups of each ``ParquetFile.read_row_groups`` call from now on, in order."""
    reads: list[list[int]] = []
    real = pq.ParquetFile.read_row_groups

    def counting(self, row_groups, *a, **kw):
        reads.append(list(row_groups))
        return real(self, row_groups, *a, **kw)

    monkeypatch.setattr(pq.ParquetFile, "read_row_groups", counting)
    return reads


def test_stats_blocks_open_each_file_once(tmp_path, monkeypatch):
    root = _v3(tmp_path)
    pq.write_table(pq.read_table(root / EPS_V3), root / EPS_V3, row_group_size=1)
    monkeypatch.setattr(sb.StatsBlocks, "BLOCK_ROWS", 1)
    opened = _count_opens(monkeypatch)
    reads = _count_reads(monkeypatch)
    reader = sb.StatsBlocks(Dataset(root))
    assert [b.episodes.tolist() for b in reader] == [[0], [1], [2], [3]]
    assert reads == [[0], [1], [2], [3]]
    found = reader.lookup([2, 3])  # the last two blocks read are still held
    assert {e: int(b.episodes[i]) for e, (b, i) in found.items()} == {2: 2, 3: 3} and len(reads) == 4
    found = reader.lookup([1, 3, 0])  # blocks 0 and 1 were let go: read again (the file is still open)
    assert {e: int(b.episodes[i]) for e, (b, i) in found.items()} == {0: 0, 1: 1, 3: 3}
    assert reads[4:] == [[1], [0]]
    assert opened == ["file-000.parquet"]


def test_stats_blocks_let_go_of_files_read_in_one_piece(tmp_path, monkeypatch):
    root = _v3(tmp_path)
    t = pq.read_table(root / EPS_V3)
    files = [f"meta/episodes/chunk-000/file-{i:03d}.parquet" for i in range(4)]
    for i, rel in enumerate(files):
        pq.write_table(t.slice(i, 1), root / rel)
    monkeypatch.setattr(sb.StatsBlocks, "BLOCK_ROWS", 1)
    opened = _count_opens(monkeypatch)
    reader = sb.StatsBlocks(Dataset(root))
    assert [b.episodes.tolist() for b in reader] == [[0], [1], [2], [3]]
    # hundreds of small files would otherwise each hold a parsed footer until the end; the files are opened ahead
    # of the stream by a pool of threads, so in any order, each exactly once
    assert sorted(opened) == [Path(rel).name for rel in files] and reader._files == {}
    found = reader.lookup([0, 3])  # block 3 is still held; block 0 is read again, its file opened again
    assert {e: int(b.episodes[i]) for e, (b, i) in found.items()} == {0: 0, 3: 3}
    assert opened[4:] == ["file-000.parquet"]


@pytest.mark.parametrize("spare", [0, -1])
def test_stats_blocks_keep_exactly_the_byte_budget(tmp_path, monkeypatch, spare):
    """``keep=True`` keeps blocks while their bytes total at most KEEP_BYTES: a budget of exactly every block's
    bytes keeps them all (the file is let go after the stream); with one byte less the last is only cached, so
    the file stays open for reading it again."""
    root = _v3(tmp_path)
    pq.write_table(pq.read_table(root / EPS_V3), root / EPS_V3, row_group_size=1)
    monkeypatch.setattr(sb.StatsBlocks, "BLOCK_ROWS", 1)
    total = sum(b.nbytes for b in sb.StatsBlocks(Dataset(root)))
    monkeypatch.setattr(sb.StatsBlocks, "KEEP_BYTES", total + spare)
    reads = _count_reads(monkeypatch)
    reader = sb.StatsBlocks(Dataset(root), keep=True)
    assert sb.StatsBlocks(Dataset(root)).keep_bytes == 0
    assert reader.keep_bytes == total + spare
    blocks = list(reader)
    assert reads == [[0], [1], [2], [3]]
    found = reader.lookup([0, 1, 2, 3])
    assert reads == [[0], [1], [2], [3]] and all(found[e][0] is blocks[e] for e in range(4))
    assert list(reader._files) == ([] if spare == 0 else [EPS_V3])
    reader.close()
    assert reader._kept_bytes == 0


def test_stats_blocks_jsonl_stream_and_lookup(tmp_path, monkeypatch):
    root = _v21(tmp_path, lengths=(20, 15, 25, 12, 9))
    lines = (root / STATS_JSONL).read_text().splitlines()
    objs = [json.loads(ln) for ln in lines]
    objs[2]["stats"]["action"]["count"] = [25.5]  # not a whole number
    objs[3]["stats"]["observation.state"] = [1, 2]  # not an object, while episode 2's is
    objs[4]["stats"]["action"] = "oops"  # the only row of its block: nothing to take a shape from
    text = [json.dumps(o) for o in objs]
    again = json.loads(text[0])
    again["stats"]["action"]["mean"] = [0.0] * 6
    dups = [json.dumps(again), text[1]]  # lines 6-7: episodes 0 and 1 again (lookups read the first line)
    (root / STATS_JSONL).write_text("\n".join([text[0], text[1], "{oops", text[2], text[3], *dups, text[4]]) + "\n")
    monkeypatch.setattr(sb.StatsBlocks, "BLOCK_LINES", 2)
    reader = sb.StatsBlocks(Dataset(root))
    blocks = list(reader)
    assert [(b.source, b.first_row, b.episodes.tolist(), b.where_kind) for b in blocks] == [
        (STATS_JSONL, 1, [0, 1], "line"), (STATS_JSONL, 4, [2, 3], "line"), (STATS_JSONL, 6, [0, 1], "line"),
        (STATS_JSONL, 8, [4], "line")]
    assert reader.problems == [
        (STATS_JSONL, "line 3 is not valid JSON (Expecting property name enclosed in double quotes)")]
    a0 = blocks[0].features["action"]
    assert a0["count"].values.dtype == np.int64 and _col(a0["count"]) == ([[20], [15]], [True, True], {})
    assert a0["mean"].values.tolist() == [objs[0]["stats"]["action"]["mean"], objs[1]["stats"]["action"]["mean"]]
    c = blocks[1].features["action"]["count"]
    assert _col(c) == ([[0], [12]], [False, True], {0: "unreadable"})
    s = blocks[1].features["observation.state"]
    assert set(s) == {"min", "max", "mean", "std", "count"}
    assert all(c.ok.tolist() == [True, False] and c.shapes == {1: st.NOT_AN_OBJECT} for c in s.values())
    bad = blocks[3].features["action"]
    assert sorted(bad) == sorted(st.BASE_STATS)  # nothing to take the statistics' names from: the base ones
    assert all(_col(c)[1:] == ([False], {0: st.NOT_AN_OBJECT}) for c in bad.values())
    # lookups: one block of the requested episodes, in the order asked, each from its first line
    found = reader.lookup([4, 0, 9, 3])
    assert sorted(found) == [0, 3, 4]
    (block, _), = {id(b): (b, i) for b, i in found.values()}.values()
    assert (block.source, block.first_row, block.episodes.tolist(), block.where_kind) == \
        (STATS_JSONL, 8, [4, 0, 3], "line")
    assert {e: i for e, (_, i) in found.items()} == {4: 0, 0: 1, 3: 2}
    assert block.features["action"]["mean"].values[1].tolist() == objs[0]["stats"]["action"]["mean"]
    assert block.features["action"]["mean"].ok.tolist() == [False, True, True]
    assert reader.lookup([9]) == {}
    (root / STATS_JSONL).unlink()
    assert reader.lookup([0, 1]) == {}


def test_stats_jsonl_lines_cap_each_line(tmp_path, monkeypatch):
    root = _v21(tmp_path, lengths=(20, 15, 25))
    monkeypatch.setattr(st, "MAX_JSONL_LINE_BYTES", 2**20)
    good = (root / STATS_JSONL).read_text().splitlines()
    at_cap = "{" + " " * (2**20 - len(good[0]) - 1) + good[0][1:]  # with its newline: exactly 1 MiB
    over = "{" + " " * (2**20 - len(good[1])) + good[1][1:]  # 1 MiB + 1 byte
    far_over = "{" + " " * (3 * 2**20) + good[2][1:]
    (root / STATS_JSONL).write_text("\n".join([at_cap, over, far_over, good[1], good[2]]) + "\n")
    problems: list = []
    got = [(off, n, len(line)) for off, n, line in st.stats_jsonl_lines(root, problems)]
    offsets = np.cumsum([0] + [len(x) + 1 for x in (at_cap, over, far_over, good[1])]).tolist()
    assert got == [(0, 1, 2**20), (offsets[3], 4, len(good[1]) + 1), (offsets[4], 5, len(good[2]) + 1)]
    assert problems == [(STATS_JSONL, "line 2 is longer than 1 MiB"), (STATS_JSONL, "line 3 is longer than 1 MiB")]
    reader = sb.StatsBlocks(Dataset(root))
    assert [b.episodes.tolist() for b in reader] == [[0, 1, 2]]
    assert reader.problems == problems
    assert list(st.stats_jsonl_lines(tmp_path / "nowhere", problems)) == []
    assert problems[-1] == (STATS_JSONL, "cannot be read (No such file or directory)")


# ======================================================================================== compute.py
@pytest.mark.parametrize("dtype,storage,acc", [
    (np.float16, float(np.finfo(np.float16).eps), EPS32), (np.float32, EPS32, EPS32), (np.float64, EPS64, EPS64),
    (np.int64, 0.0, EPS64), (np.uint8, 0.0, EPS64), (np.bool_, 0.0, EPS64),
])
def test_epsilons_of_storage_and_accumulation(dtype, storage, acc):
    assert compute.float_eps(dtype) == storage
    assert compute.float_eps(np.dtype(dtype).name) == storage
    assert compute.accumulation_eps(dtype) == acc


def test_moments_of_merge_std_and_as_stats():
    rng = np.random.default_rng(5)
    x = rng.normal(3.0, 2.0, size=(50, 3))
    m = compute.Moments.of(x)
    assert m.n == 50
    np.testing.assert_allclose(m.mean, x.mean(0), rtol=1e-13)
    np.testing.assert_allclose(m.m2, ((x - x.mean(0)) ** 2).sum(0), rtol=1e-11)
    np.testing.assert_array_equal(m.min, x.min(0))
    np.testing.assert_array_equal(m.max, x.max(0))
    np.testing.assert_allclose(m.std(), x.std(0), rtol=1e-12)
    np.testing.assert_allclose(m.std(ddof=1), x.std(0, ddof=1), rtol=1e-12)
    # merged in parts of 1, 20 and 29 rows: the moments of the whole
    acc = compute.Moments(0, None, None, None, None)
    for a, b in ((0, 1), (1, 21), (21, 50)):
        acc.merge(compute.Moments.of(x[a:b]))
    assert acc.n == 50
    np.testing.assert_allclose(acc.mean, x.mean(0), rtol=1e-13)
    np.testing.assert_allclose(acc.m2, m.m2, rtol=1e-11)
    np.testing.assert_array_equal(acc.min, x.min(0))
    np.testing.assert_array_equal(acc.max, x.max(0))
    before = (acc.n, acc.mean.copy(), acc.m2.copy())
    acc.merge(compute.Moments(0, None, None, None, None))  # nothing to add
    assert acc.n == before[0] and np.array_equal(acc.mean, before[1]) and np.array_equal(acc.m2, before[2])
    one = compute.Moments.of(x[:1])
    assert one.n == 1 and one.std().tolist() == [0.0] * 3 and one.std(ddof=1).tolist() == [0.0] * 3
    assert compute.Moments(2, np.zeros(1), np.array([8.0]), np.zeros(1), np.ones(1)).std(ddof=2).tolist() == [0.0]
    assert compute.Moments(2, np.zeros(1), np.array([-1e-18]), np.zeros(1), np.ones(1)).std().tolist() == [0.0]
    s = m.as_stats()
    assert list(s) == ["min", "max", "mean", "std", "count"]
    assert s["count"].dtype == np.int64 and s["count"].tolist() == [50]
    np.testing.assert_allclose(s["std"], x.std(0), rtol=1e-12)
    s["min"][0] = s["max"][0] = s["mean"][0] = 1e9  # a copy: the moments are not changed
    assert m.min[0] == x.min(0)[0] and m.max[0] == x.max(0)[0] and m.mean[0] != 1e9


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64, np.int32, np.uint8, np.bool_])
@pytest.mark.parametrize("runs,d", [(3, 2), (17, 2), (16, 3), (4, 70)])
def test_segment_arrays_any_dtype_and_width(dtype, runs, d):
    """Both reduction paths (more than 16 narrow runs; otherwise one run at a time), odd run lengths above the
    pairwise threshold, any real dtype: count, mean, M2, min, max of each run against numpy in float64."""
    rng = np.random.default_rng(runs * d)
    lens = np.array([1, 65, 129, 7, 200, 2][:runs] + [int(v) for v in rng.integers(1, 40, max(0, runs - 6))])
    starts = np.concatenate(([0], np.cumsum(lens)[:-1]))
    n = int(lens.sum())
    if dtype == np.bool_:
        x = rng.integers(0, 2, size=(n, d)).astype(np.bool_)
    elif np.dtype(dtype).kind in "iu":
        x = rng.integers(0, 100, size=(n, d)).astype(dtype)
    else:
        x = (rng.normal(10.0, 3.0, size=(n, d))).astype(dtype)
    cnt, mean, m2, mn, mx = compute.segment_arrays(x, starts, lens)
    assert cnt.dtype == np.int64 and cnt.tolist() == lens.tolist()
    assert mean.dtype == m2.dtype == mn.dtype == mx.dtype == np.float64
    assert mean.shape == m2.shape == mn.shape == mx.shape == (runs, d)
    rtol = 1e-12 if np.dtype(dtype).itemsize >= 8 or np.dtype(dtype).kind in "iub" else 1e-6
    for i, (a, k) in enumerate(zip(starts.tolist(), lens.tolist())):
        ref = x[a:a + k].astype(np.float64)
        np.testing.assert_array_equal(mn[i], ref.min(0))
        np.testing.assert_array_equal(mx[i], ref.max(0))
        np.testing.assert_allclose(mean[i], ref.mean(0), rtol=rtol)
        np.testing.assert_allclose(m2[i], ((ref - ref.mean(0)) ** 2).sum(0), rtol=max(rtol, 1e-10) * 10, atol=1e-9)
    moments = compute.segment_moments(x, starts, lens)
    assert [m.n for m in moments] == lens.tolist() and np.array_equal(moments[1].m2, m2[1])


def test_merge_arrays_is_the_moments_of_the_concatenation():
    rng = np.random.default_rng(2)
    parts = [rng.normal(5.0, 1.0 + i, size=(k, 2)) for i, k in enumerate((3, 1, 10))]
    ms = [compute.Moments.of(p) for p in parts]
    got = compute.merge_arrays(np.array([m.n for m in ms]), np.stack([m.mean for m in ms]),
                               np.stack([m.m2 for m in ms]), np.stack([m.min for m in ms]),
                               np.stack([m.max for m in ms]))
    allx = np.concatenate(parts)
    assert got.n == 14 and isinstance(got.n, int)
    np.testing.assert_allclose(got.mean, allx.mean(0), rtol=1e-13)
    np.testing.assert_allclose(got.m2, ((allx - allx.mean(0)) ** 2).sum(0), rtol=1e-12)
    np.testing.assert_array_equal(got.min, allx.min(0))
    np.testing.assert_array_equal(got.max, allx.max(0))


def test_rank_counts():
    x = np.array([[1.0, 10.0], [2.0, 20.0], [3.0, 30.0], [4.0, 40.0], [5.0, 50.0]])
    below = np.array([[[2.5, 25.0], [1.0, 60.0]], [[5.0, 5.0], [0.0, 0.0]]])
    at_most = np.array([[[3.0, 20.0], [1.0, 60.0]], [[5.0, 50.0], [4.0, 40.0]]])
    lo, hi = compute.rank_counts(x, np.array([0, 2]), np.array([2, 3]), below, at_most)
    assert lo.dtype == hi.dtype == np.int64
    # run 0 = rows 0-1 ([1, 2], [10, 20]); run 1 = rows 2-4 ([3, 4, 5], [30, 40, 50])
    assert lo.tolist() == [[[2, 2], [0, 2]], [[2, 0], [0, 0]]]
    assert hi.tolist() == [[[2, 2], [1, 2]], [[3, 3], [2, 2]]]


def test_histogram_quantiles_as_lerobot_reads_them():
    # 1000 values 0..999: 5000 bins of width w = (999 + 2e-10) / 5000 from -1e-10; the median (target 500) is read
    # in the bin of 499 (bin 2497: 2497 w <= 499 + 1e-10 < 2498 w), one value in it: edges[2497] + (500 - 499) w
    x = np.arange(1000, dtype=np.float64)[:, None]
    w = (999 + 2e-10) / 5000
    q = compute.histogram_quantiles(x, [0.5, 0.001, 1.0])
    assert q.shape == (3, 1) and q.dtype == np.float64
    assert q[0, 0] == pytest.approx(-1e-10 + 2498 * w, rel=1e-12)
    assert q[1, 0] == -1e-10  # target 1 is reached in the first bin: its left edge
    assert q[2, 0] == pytest.approx(999 + 1e-10, rel=1e-12)  # last value: the end of its bin
    # two values in one bin: linear interpolation inside it
    x2 = np.array([[0.0, 6.0], [3.14159, 7.0], [3.14159, 7.0], [10.0, 9.0]])
    q2 = compute.histogram_quantiles(x2, [0.5, 0.75])
    w0, w1 = (10 + 2e-10) / 5000, (3 + 2e-10) / 5000
    b0, b1 = 1570, 1666  # the bins of 3.14159 and of 7.0
    assert b0 * w0 - 1e-10 <= 3.14159 < (b0 + 1) * w0 - 1e-10 and 6 + b1 * w1 - 1e-10 <= 7.0 < 6 + (b1 + 1) * w1 - 1e-10
    assert q2[0, 0] == pytest.approx(-1e-10 + b0 * w0 + 0.5 * w0, rel=1e-12)  # target 2: (2 - 1) / 2 into the bin
    assert q2[1, 0] == pytest.approx(-1e-10 + (b0 + 1) * w0, rel=1e-12)  # target 3: the end of the bin
    assert q2[0, 1] == pytest.approx(6 - 1e-10 + b1 * w1 + 0.5 * w1, rel=1e-12)
    assert q2[1, 1] == pytest.approx(6 - 1e-10 + (b1 + 1) * w1, rel=1e-12)


def test_episode_stats_conventions():
    x = np.array([[1.0, 10.0], [3.0, 30.0], [2.0, 50.0]], dtype=np.float32)
    s = compute.episode_stats(x, (2,), ["q10", "q90"])
    assert list(s) == ["min", "max", "mean", "std", "count", "q10", "q90"]
    assert s["count"].tolist() == [3] and s["count"].dtype == np.int64
    np.testing.assert_allclose(s["std"], x.astype(np.float64).std(0), rtol=1e-7)
    np.testing.assert_array_equal(s["q90"], compute.histogram_quantiles(x, [0.9])[0])
    grid = compute.episode_stats(x.reshape(3, 2), (1, 2), [])
    assert set(grid) == {"min", "max", "mean", "std", "count"}
    assert grid["mean"].shape == (1, 2) and grid["count"].shape == (1,)
    one = compute.episode_stats(np.array([[3.0, -4.0]]), (2,), ["q01", "q99"])
    assert one["q01"].tolist() == one["q99"].tolist() == [3.0, -4.0] and one["count"].tolist() == [1]


def _entry(mean, std, count, lo, hi, **q):
    return {"min": np.asarray(lo, float), "max": np.asarray(hi, float), "mean": np.asarray(mean, float),
            "std": np.asarray(std, float), "count": np.asarray([count]),
            **{k: np.asarray(v, float) for k, v in q.items()}}


def _camera(entry: dict) -> dict:
    """An entry shaped as a camera's: (3, 1, 1) statistics, count (1,)."""
    return {k: (v if k == "count" else v.reshape(3, 1, 1)) for k, v in entry.items()}


def test_aggregate_feature_stats_pools_and_weights():
    a = _entry([1.0, 2.0], [1.0, 0.5], 2, [0.0, 1.0], [2.0, 3.0], q50=[1.0, 2.0], q10=[0.5, 1.5])
    b = _entry([4.0, 2.0], [2.0, 1.0], 6, [-1.0, 0.0], [9.0, 4.0], q50=[5.0, 2.5])
    agg = compute.aggregate_feature_stats([a, b])
    assert agg["count"].dtype == np.int64 and agg["count"].tolist() == [8]
    assert agg["min"].tolist() == [-1.0, 0.0] and agg["max"].tolist() == [9.0, 4.0]
    assert agg["mean"].tolist() == pytest.approx([(2 * 1 + 6 * 4) / 8, 2.0])
    var0 = (2 * (1 + (1 - 3.25) ** 2) + 6 * (4 + (4 - 3.25) ** 2)) / 8
    var1 = (2 * 0.25 + 6 * 1.0) / 8
    assert agg["std"].tolist() == pytest.approx([math.sqrt(var0), math.sqrt(var1)])
    assert agg["q50"].tolist() == pytest.approx([(2 * 1 + 6 * 5) / 8, (2 * 2 + 6 * 2.5) / 8])
    assert "q10" not in agg  # one entry lacks it
    with pytest.raises(ValueError, match="no statistics to aggregate"):
        compute.aggregate_feature_stats([])
    cam = compute.aggregate_feature_stats([_camera(_entry([0.1, 0.2, 0.3], [0.1] * 3, 4, [0.0] * 3, [1.0] * 3)),
                                           _camera(_entry([0.3, 0.2, 0.1], [0.1] * 3, 4, [0.0] * 3, [1.0] * 3))])
    assert cam["mean"].shape == cam["std"].shape == (3, 1, 1)
    assert cam["mean"].reshape(-1).tolist() == pytest.approx([0.2] * 3)


def test_running_aggregate_equals_the_batch_formula():
    a = _entry([1.0, 2.0], [1.0, 0.5], 2, [0.0, 1.0], [2.0, 3.0], q50=[1.0, 2.0], q10=[0.5, 1.5])
    b = _entry([4.0, 2.0], [2.0, 1.0], 6, [-1.0, 0.0], [9.0, 4.0], q50=[5.0, 2.5])
    c = _entry([0.0, 0.0], [0.0, 0.0], 3, [0.0, 0.0], [0.0, 0.0], q50=[0.0, 0.0], q10=[0.0, 0.0])
    assert compute.RunningAggregate().result() is None
    run = compute.RunningAggregate()
    for e in (a, b, c):
        run.add(e)
    res, ref = run.result(), compute.aggregate_feature_stats([a, b, c])
    assert set(res) == set(ref) == {"min", "max", "mean", "std", "count", "q50"}  # q10 dropped: b lacks it
    for k in ref:
        np.testing.assert_allclose(res[k], ref[k], rtol=1e-12, atol=1e-15)
    assert res["count"].dtype == np.int64
    # a count given explicitly replaces the stored one; an entry weighing nothing is left out
    run = compute.RunningAggregate()
    run.add(b, count=2)
    run.add(a)
    run.add(c, count=0)
    b2 = dict(b, count=np.array([2]))
    ref = compute.aggregate_feature_stats([b2, a])
    res = run.result()
    for k in ref:
        np.testing.assert_allclose(res[k], ref[k], rtol=1e-12)
    assert "q10" not in res  # b came first without it: never collected
    # an entry weighing nothing does not decide which quantiles are collected either
    run = compute.RunningAggregate()
    run.add({k: v for k, v in c.items() if k != "q10"}, count=0)
    run.add(a)
    assert set(run.result()) == {"min", "max", "mean", "std", "count", "q10", "q50"}
    assert run.result()["q10"].tolist() == [0.5, 1.5] and run.result()["count"].tolist() == [2]
    # camera entries keep their (3, 1, 1) shape
    cams = [_camera(_entry(m, [0.1, 0.2, 0.3], n, [0.0] * 3, [1.0] * 3))
            for m, n in (([0.1, 0.2, 0.3], 4), ([0.5, 0.4, 0.3], 2))]
    run = compute.RunningAggregate()
    for e in cams:
        run.add(e)
    res, ref = run.result(), compute.aggregate_feature_stats(cams)
    for k in ref:
        assert res[k].shape == ref[k].shape
        np.testing.assert_allclose(res[k], ref[k], rtol=1e-12)


def _cols(entries: list[dict]) -> dict[str, sb.StatColumn]:
    k = len(entries)
    out = {}
    for s in entries[0]:
        vals = np.stack([np.asarray(e[s]) for e in entries])
        out[s] = sb.StatColumn(vals.astype(np.int64 if s == "count" else np.float64), np.ones(k, dtype=bool), {})
    return out


def test_running_aggregate_add_block_equals_adding_rows():
    rng = np.random.default_rng(9)
    entries = [compute.episode_stats(rng.normal(i, 1 + i, size=(n, 2)), (2,), ["q01", "q50"])
               for i, n in enumerate((5, 9, 2, 30))]
    rows = np.array([True, False, True, True])
    block = compute.RunningAggregate()
    block.add_block(_cols(entries), rows)
    one = compute.RunningAggregate()
    for e, r in zip(entries, rows):
        if r:
            one.add(e)
    got, ref = block.result(), one.result()
    assert set(got) == set(ref) == {"min", "max", "mean", "std", "count", "q01", "q50"}
    for k in ref:
        np.testing.assert_allclose(got[k], ref[k], rtol=1e-12)
    # counts given per row replace the stored ones; rows weighing 0 are left out
    block = compute.RunningAggregate()
    block.add_block(_cols(entries), np.ones(4, bool), np.array([5, 0, 4, 30]))
    one = compute.RunningAggregate()
    for e, n in zip(entries, (5, 0, 4, 30)):
        one.add(e, count=n)
    for k, v in one.result().items():
        np.testing.assert_allclose(block.result()[k], v, rtol=1e-12)
    assert block.result()["count"].tolist() == [39]
    empty = compute.RunningAggregate()
    empty.add_block(_cols(entries), np.zeros(4, bool))
    empty.add_block(_cols(entries), np.ones(4, bool), np.zeros(4, dtype=np.int64))
    assert empty.result() is None
    # camera blocks keep the (3, 1, 1) shape
    cams = [_camera(_entry(m, [0.1, 0.2, 0.3], n, [0.0] * 3, [1.0] * 3))
            for m, n in (([0.1, 0.2, 0.3], 4), ([0.5, 0.4, 0.3], 2))]
    cam = compute.RunningAggregate()
    cam.add_block(_cols(cams), np.ones(2, bool))
    res, ref = cam.result(), compute.aggregate_feature_stats(cams)
    for k in ref:
        assert res[k].shape == ref[k].shape
        np.testing.assert_allclose(res[k], ref[k], rtol=1e-12)


def test_tolerance_components():
    m = compute.Moments(100, np.array([1.0, -2.0]), np.array([25.0, 0.0]), np.array([-10.0, -2.0]),
                        np.array([20.0, -2.0]))
    tol = compute.tolerance(m, np.float32)
    scale = np.array([20.0, 2.0])
    std = np.array([0.5, 0.0])
    round_s = EPS32 * scale + 1e-12
    np.testing.assert_allclose(tol.minmax, round_s, rtol=1e-15)
    np.testing.assert_allclose(tol.mean, 0.01 * std + 16 * 10 * EPS32 * scale + round_s, rtol=1e-15)
    np.testing.assert_allclose(tol.std, 0.01 * std + round_s, rtol=1e-15)
    np.testing.assert_allclose(tol.bin, 1.01 * np.array([30.0, 0.0]) / 5000 + round_s, rtol=1e-15)
    # the quantile bin spans the stored range when one is given
    tol = compute.tolerance(m, np.float32, np.array([-20.0, -3.0]), None)
    np.testing.assert_allclose(tol.bin, 1.01 * np.array([40.0, 1.0]) / 5000 + round_s, rtol=1e-15)
    tol = compute.tolerance(m, np.float32, None, np.array([[30.0], [2.0]]))
    np.testing.assert_allclose(tol.bin, 1.01 * np.array([40.0, 4.0]) / 5000 + round_s, rtol=1e-15)
    # integers are stored exactly and summed in float64
    tol = compute.tolerance(m, np.int64)
    np.testing.assert_allclose(tol.minmax, [1e-12, 1e-12], rtol=1e-15)
    np.testing.assert_allclose(tol.mean, 0.01 * std + 160 * EPS64 * scale + 1e-12, rtol=1e-15)
    # float64 data: summed in float64, but its statistics are held to float32 resolution (writers store float32)
    empty = compute.tolerance(compute.Moments(0, np.zeros(1), np.zeros(1), np.zeros(1), np.ones(1)), np.float64)
    np.testing.assert_allclose(empty.mean, 16 * EPS64 * 1.0 + EPS32 + 1e-12, rtol=1e-15)  # sqrt(max(n, 1))
    np.testing.assert_allclose(empty.minmax, EPS32 + 1e-12, rtol=1e-15)
    # the rounding lerobot's float32 one-pass variance leaves on a std: 16 (log2 n + 2) eps32 scale^2
    tol = compute.tolerance(m, np.int64)  # integers: np.mean sums them in float64
    np.testing.assert_allclose(tol.std_var, 16 * (math.log2(100) + 2) * EPS64 * scale ** 2, rtol=1e-12)
    tol = compute.tolerance(m, np.float32)
    np.testing.assert_allclose(tol.std_var, 16 * (math.log2(100) + 2) * EPS32 * scale ** 2, rtol=1e-12)


def test_disagreement_text():
    assert compute.Disagreement("q50", 2, 1.2345678, 0.25).text("a") == \
        "q50[2] stored 1.23457 sits at rank 0.250 of the data (expected 0.50)"
    assert compute.Disagreement("q01", 0, -3.0, 1.0).text("a") == \
        "q01[0] stored -3 sits at rank 1.000 of the data (expected 0.01)"
    assert compute.Disagreement("std", 0, 0.0, 0.0512345678).text("a") == "std[0] stored 0, data 0.0512346"
    assert compute.Disagreement("max", 11, 1234567.0, 1e-7).text("a") == "max[11] stored 1.23457e+06, data 1e-07"


def _screen(stored: dict, m: compute.Moments, dtype) -> bool:
    (ok,) = compute.screen({k: np.asarray(v, dtype=np.float64).reshape(1, -1) for k, v in stored.items()},
                           np.array([m.n]), m.mean[None], m.m2[None], m.min[None], m.max[None], dtype)
    return bool(ok)


def _verdicts(stored: dict, m: compute.Moments, dtype) -> tuple[bool, list]:
    """(screen passes the row, compare's disagreements as (stat, dim, gross))."""
    return _screen(stored, m, dtype), [(d.stat, d.dim, d.gross) for d in compute.compare(stored, m, dtype)]


def test_min_max_are_held_to_the_storage_rounding_exactly():
    # dim 0 spans [0, 1000], dim 1 [-1000, 0]: both scales are 1000, so the allowance is eps32 * 1000 + 1e-12
    m = compute.Moments(10, np.array([500.0, -500.0]), np.array([10.0, 10.0]), np.array([0.0, -1000.0]),
                        np.array([1000.0, 0.0]))
    allowed = compute.tolerance(m, np.float32).minmax
    assert allowed.tolist() == [EPS32 * 1000 + 1e-12] * 2
    base = {"mean": m.mean, "std": m.std()}
    assert _verdicts({**base, "min": [allowed[0], -1000.0], "max": [1000.0, allowed[1]]}, m, np.float32) == (True, [])
    over = np.nextafter(allowed, np.inf)
    assert _verdicts({**base, "min": [over[0], -1000.0], "max": [1000.0, 0.0]}, m, np.float32) == \
        (False, [("min", 0, False)])
    assert _verdicts({**base, "min": [0.0, -1000.0], "max": [1000.0, over[1]]}, m, np.float32) == \
        (False, [("max", 1, False)])
    assert _verdicts({**base, "min": [0.0, -1000.0], "max": [1000.0, -over[1]]}, m, np.float32) == \
        (False, [("max", 1, False)])
    # off by more than the range: gross
    assert _verdicts({**base, "min": [-1000.5, -1000.0], "max": [1000.0, 0.0]}, m, np.float32) == \
        (False, [("min", 0, True)])
    assert _verdicts({**base, "min": [0.0, -1000.0], "max": [2000.0, 0.0]}, m, np.float32)[1] == [("max", 0, False)]
    # a constant dimension (range 0) is never a gross min/max disagreement
    flat = compute.Moments(4, np.array([5.0]), np.array([0.0]), np.array([5.0]), np.array([5.0]))
    assert _verdicts({"min": [-100.0], "max": [5.0], "mean": [5.0], "std": [0.0]}, flat, np.float64) == \
        (False, [("min", 0, False)])


def test_mean_is_held_to_one_percent_of_a_std_plus_float32_accumulation_exactly():
    m = compute.Moments(100, np.array([0.0, 0.0]), np.array([400.0, 25.0]), np.array([-8.0, -1.0]),
                        np.array([8.0, 1.5]))
    tol = compute.tolerance(m, np.float32).mean
    # 1 % of the std (2 and 0.5), 16 sqrt(100) eps32 times the scale, and the float32 rounding of the scale
    np.testing.assert_allclose(tol, 0.01 * np.array([2.0, 0.5]) + (160 + 1) * EPS32 * np.array([8.0, 1.5]) + 1e-12,
                               rtol=1e-14)
    base = {"min": m.min, "max": m.max, "std": m.std()}
    assert _verdicts({**base, "mean": tol}, m, np.float32) == (True, [])
    assert _verdicts({**base, "mean": -tol}, m, np.float32) == (True, [])
    over = np.nextafter(tol, np.inf)
    assert _verdicts({**base, "mean": [over[0], 0.0]}, m, np.float32) == (False, [("mean", 0, False)])
    assert _verdicts({**base, "mean": [0.0, -over[1]]}, m, np.float32) == (False, [("mean", 1, False)])
    # gross beyond one std; a mean far from 0 does not make a small shift gross
    assert _verdicts({**base, "mean": [2.0, 0.0]}, m, np.float32)[1] == [("mean", 0, False)]
    assert _verdicts({**base, "mean": [2.01, -0.51]}, m, np.float32)[1] == [("mean", 0, True), ("mean", 1, True)]
    far = compute.Moments(100, np.array([100.0]), np.array([100.0]), np.array([95.0]), np.array([105.0]))
    assert _verdicts({"min": [95.0], "max": [105.0], "std": [1.0], "mean": [100.5]}, far, np.float64)[1] == \
        [("mean", 0, False)]


def _std_at_the_edge(n: int, dtype) -> tuple[compute.Moments, float]:
    """Moments of n values and a stored std exactly one allowance (1 % of the std plus the storage rounding) above
    the population std, in floating point (so that ``|stored - std| == allowance`` holds exactly)."""
    for k in range(1, 5000):
        m = compute.Moments(n, np.array([0.0]), np.array([n * (1.0 + k * 1e-3) ** 2]), np.array([-3.0]),
                            np.array([3.0]))
        std = float(m.std()[0])
        allowed = float(compute.tolerance(m, dtype).std[0])
        v = std + allowed
        if abs(v - std) == allowed:
            return m, v
    raise AssertionError("no exact edge found")


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_std_is_held_to_one_percent_exactly_population_or_sample(dtype):
    m, edge = _std_at_the_edge(2, dtype)  # n = 2: the sample std is sqrt(2) times the population std
    base = {"min": m.min, "max": m.max, "mean": m.mean}
    assert _verdicts({**base, "std": [edge]}, m, dtype) == (True, [])
    assert _verdicts({**base, "std": [np.nextafter(edge, np.inf)]}, m, dtype) == (False, [("std", 0, False)])
    std, smp = float(m.std()[0]), float(m.std(ddof=1)[0])
    assert _verdicts({**base, "std": [smp]}, m, dtype) == (True, [])  # the sample std is accepted too
    assert _verdicts({**base, "std": [smp * 1.005]}, m, dtype) == (True, [])
    assert _verdicts({**base, "std": [smp * 1.03]}, m, dtype) == (False, [("std", 0, False)])
    assert _verdicts({**base, "std": [std * 0.98]}, m, dtype) == (False, [("std", 0, False)])
    # gross: half or less, twice or more
    assert _verdicts({**base, "std": [std / 2]}, m, dtype)[1] == [("std", 0, True)]
    assert _verdicts({**base, "std": [std * 0.51]}, m, dtype)[1] == [("std", 0, False)]
    assert _verdicts({**base, "std": [std * 2]}, m, dtype)[1] == [("std", 0, True)]
    assert _verdicts({**base, "std": [0.0]}, m, dtype)[1] == [("std", 0, True)]
    # one value: the population std (0) is all there is
    one = compute.Moments(1, np.array([2.0]), np.array([0.0]), np.array([2.0]), np.array([2.0]))
    assert _verdicts({"min": [2.0], "max": [2.0], "mean": [2.0], "std": [0.0]}, one, dtype) == (True, [])
    assert _verdicts({"min": [2.0], "max": [2.0], "mean": [2.0], "std": [0.5]}, one, dtype) == \
        (False, [("std", 0, False)])


def test_screen_rows_and_missing_statistics():
    rng = np.random.default_rng(4)
    x = rng.normal(0.0, 1.0, size=(30, 2))
    starts, lens = np.array([0, 10, 20]), np.array([10, 10, 10])
    n, mean, m2, mn, mx = compute.segment_arrays(x, starts, lens)
    std = np.sqrt(m2 / 10)
    stored = {"min": mn.copy(), "max": mx.copy(), "mean": mean.copy(), "std": std.copy()}
    assert compute.screen(stored, n, mean, m2, mn, mx, np.float64).tolist() == [True, True, True]
    for stat in ("min", "max", "mean", "std"):  # one bad value fails its own row only
        bad = {k: v.copy() for k, v in stored.items()}
        bad[stat][1, 1] += 0.5
        assert compute.screen(bad, n, mean, m2, mn, mx, np.float64).tolist() == [True, False, True], stat
    nan = {k: v.copy() for k, v in stored.items()}
    nan["std"][2, 0] = np.nan  # not stored (NaN): the row goes to compare
    assert compute.screen(nan, n, mean, m2, mn, mx, np.float64).tolist() == [True, True, False]
    assert compute.screen({"mean": mean}, n, mean, m2, mn, mx, np.float64).tolist() == [True, True, True]
    assert compute.screen({}, n, mean, m2, mn, mx, np.float64).tolist() == [True, True, True]


def test_compare_order_shapes_and_quantile_ranks():
    x = np.array([[1.0, 10.0, 5.0], [2.0, 20.0, 5.0], [3.0, 30.0, 5.0], [4.0, 40.0, 5.0]])
    m = compute.Moments.of(x)
    good = m.as_stats()
    assert compute.compare(good, m, np.float64) == []
    assert compute.compare({}, m, np.float64) == []
    # a statistic of another size is not compared here (G004 reports the shape)
    assert compute.compare({"mean": [9.0] * 4, "std": [9.0], "max": [[4.0, 40.0, 5.0]], "min": [[1.0], [10.0], [5.0]]},
                           m, np.float64) == []
    bad = {"min": [1.0, 0.0, 5.0], "max": [4.0, 40.0, 6.0], "mean": [2.5, 0.0, 5.0], "std": [0.0, 11.18034, 5.0]}
    got = compute.compare(bad, m, np.float64)
    assert [(d.stat, d.dim, d.stored, d.gross) for d in got] == [
        ("min", 1, 0.0, False), ("max", 2, 6.0, False), ("mean", 1, 0.0, True), ("std", 0, 0.0, True),
        ("std", 2, 5.0, False)]  # dimension 2 is constant: nothing is gross against a spread of 0
    assert [d.actual for d in got] == [10.0, 5.0, 25.0, pytest.approx(math.sqrt(1.25)), 0.0]
    # quantiles: accepted while lo <= ceil(p n) and hi >= floor(p n); the rank reported is lo / n or hi / n
    q = {**good, "q10": [1.0, 10.0, 5.0], "q50": [2.0, 25.0, 5.0], "q90": [9.0, 40.0, 5.0]}
    ranks = {"q10": ([1, 0, 0], [1, 1, 4], 4),   # ceil(0.4) = 1, floor(0.4) = 0: fine
             "q50": ([2, 3, 0], [2, 3, 4], 4),   # ceil(2) = 2: lo 3 is too many below
             "q90": ([4, 3, 0], [4, 3, 2], 4)}   # floor(3.6) = 3: hi 2 is too few at or below
    got = compute.compare(q, m, np.float64, quantile_ranks=ranks)
    assert [(d.stat, d.dim, d.stored, d.actual, d.gross) for d in got] == [
        ("q50", 1, 25.0, 0.75, False), ("q90", 2, 5.0, 0.5, False)]
    assert compute.compare(good, m, np.float64, quantile_ranks={"q99": ([9, 9, 9], [0, 0, 0], 4)}) == []  # not stored


# ======================================================================================== deep.py: pure parts
def test_file_stats_round_trip_through_json_exactly():
    fs = sd.FileStats(
        features={"action": {"episodes": np.array([3, 5], dtype=np.int64), "n": np.array([7, 1], dtype=np.int64),
                             "mean": np.array([[0.1, 1 / 3], [2.0 ** -40, -7.0]]),
                             "m2": np.array([[1e-300, 2.5], [0.0, 0.0]]),
                             "min": np.array([[-1e308, 0.2], [5e-324, -7.0]]),
                             "max": np.array([[math.pi, 0.7], [1.0, -7.0]])}},
        quantiles={"3/action": (np.array([[0, 1], [3, 7]]), np.array([[1, 2], [7, 7]]))},
        split=[9, 11], unusable=["observation.state"])
    d = json.loads(json.dumps(fs.to_dict()))
    assert d["split"] == [9, 11] and d["unusable"] == ["observation.state"]
    assert d["quantiles"] == {"3/action": [[[0, 1], [3, 7]], [[1, 2], [7, 7]]]}
    back = sd.FileStats.from_dict(d)
    assert back.split == [9, 11] and back.unusable == ["observation.state"]
    for k, v in fs.features["action"].items():
        got = back.features["action"][k]
        assert got.dtype == (np.int64 if k in ("episodes", "n") else np.float64), k
        assert got.tobytes() == v.astype(got.dtype).tobytes(), k  # bit for bit
    lo, hi = back.quantiles["3/action"]
    assert lo.dtype == hi.dtype == np.int64 and lo.tolist() == [[0, 1], [3, 7]] and hi.tolist() == [[1, 2], [7, 7]]
    empty = sd.FileStats.from_dict(json.loads(json.dumps(sd.FileStats().to_dict())))
    assert (empty.features, empty.quantiles, empty.split, empty.unusable) == ({}, {}, [], [])
    with pytest.raises(KeyError):
        sd.FileStats.from_dict({"features": {}})
    req = sd.StatsRequest({"action": (6, "float32")}, {"0/action": (["q50"], [[0.5] * 6], [[0.6] * 6])})
    assert json.loads(json.dumps(req.to_dict())) == {"columns": {"action": [6, "float32"]},
                                                     "quantiles": {"0/action": [["q50"], [[0.5] * 6], [[0.6] * 6]]}}


def test_round_thresholds_to_the_column_dtype_never_tighten():
    v = np.array([0.1, 1.0, -0.1, 1e-50])
    down = sd._round(v, np.dtype(np.float32), down=True)
    up = sd._round(v, np.dtype(np.float32), down=False)
    assert down.dtype == up.dtype == np.float32
    assert np.all(down.astype(np.float64) <= v) and np.all(up.astype(np.float64) >= v)
    # 0.1 is not a float32: the nearest float32 on each side; 1.0 is: kept as it is
    assert down[0] == np.float32(0.1) or down[0] == np.nextafter(np.float32(0.1), np.float32(-1))
    assert float(up[0]) > 0.1 > float(down[0]) and np.nextafter(down[0], np.float32(1)) == up[0]
    assert down[1] == up[1] == np.float32(1.0)
    assert np.nextafter(down[2], np.float32(1)) == up[2] and float(down[2]) < -0.1 < float(up[2])
    assert down[3] == 0.0 and up[3] == np.nextafter(np.float32(0), np.float32(1))
    for dt in (np.float64, np.int64, np.uint8):
        assert sd._round(v, np.dtype(dt), down=True) is v and sd._round(v, np.dtype(dt), down=False) is v
    half = sd._round(np.array([0.1]), np.dtype(np.float16), down=False)
    assert half.dtype == np.float16 and float(half[0]) > 0.1 > float(np.nextafter(half[0], np.float16(0)))


def test_as_matrix_accepts_only_rows_of_the_declared_width():
    fixed = pa.FixedSizeListArray.from_arrays(pa.array([1.0, 2.0, 3.0, 4.0], pa.float32()), 2)
    m = sd.as_matrix(fixed, 2)
    assert m.dtype == np.float32 and m.tolist() == [[1.0, 2.0], [3.0, 4.0]]
    assert sd.as_matrix(fixed, 3) is None
    var = pa.array([[1, 2], [3, 4], [5, 6]], pa.list_(pa.int16()))
    assert sd.as_matrix(var, 2).dtype == np.int16 and sd.as_matrix(var, 2).tolist() == [[1, 2], [3, 4], [5, 6]]
    assert sd.as_matrix(pa.array([[1.0, 2.0]], pa.large_list(pa.float64())), 2).tolist() == [[1.0, 2.0]]
    assert sd.as_matrix(pa.array([[1, 2], [3]], pa.list_(pa.int64())), 2) is None
    assert sd.as_matrix(pa.array([[1, 2], [3, 4, 5]], pa.list_(pa.int64())), 2) is None  # 5 values, wrong rows
    assert sd.as_matrix(pa.array([[1, 2], None], pa.list_(pa.int64())), 2) is None
    assert sd.as_matrix(pa.array([[1, None]], pa.list_(pa.int64())), 2) is None
    assert sd.as_matrix(pa.array([["a", "b"]], pa.list_(pa.string())), 2) is None
    assert sd.as_matrix(pa.array([[[1], [2]]], pa.list_(pa.list_(pa.int64()))), 2) is None
    flags = sd.as_matrix(pa.array([[True, False]], pa.list_(pa.bool_())), 2)
    assert flags.dtype == np.uint8 and flags.tolist() == [[1, 0]]
    assert sd.as_matrix(pa.array([], pa.list_(pa.float32())), 2).shape == (0, 2)
    # scalar columns: one value per row
    assert sd.as_matrix(pa.array([1.5, 2.5], pa.float64()), 1).tolist() == [[1.5], [2.5]]
    assert sd.as_matrix(pa.array([7, 8], pa.int64()), 1).dtype == np.int64
    b = sd.as_matrix(pa.array([True, False, True]), 1)
    assert b.dtype == np.uint8 and b.tolist() == [[1], [0], [1]]
    assert sd.as_matrix(pa.array([1.5, None]), 1) is None
    assert sd.as_matrix(pa.array([1.5, 2.5]), 2) is None
    assert sd.as_matrix(pa.array(["a"]), 1) is None


def test_numeric_columns_and_batch_rows(tmp_path):
    root = _v3(tmp_path, video_keys=("observation.images.front",))
    _edit_json(root / "meta/info.json", lambda i: i["features"].update({
        "grid": {"dtype": "float32", "shape": [2, 3]}, "flag": {"dtype": "bool", "shape": [1]},
        "label": {"dtype": "string", "shape": [1]}, "absent": {"dtype": "float32", "shape": [4]},
        "empty": {"dtype": "float32", "shape": [0]}, "odd": {"dtype": "float32", "shape": ["4"]},
        "txt": {"dtype": "float32", "shape": [1]}, "rec": {"dtype": "float32", "shape": [1]},
        "half": {"dtype": "float16", "shape": [2]}}))
    schema = pa.schema([("action", pa.list_(pa.float32(), 6)), ("observation.state", pa.list_(pa.float64())),
                        ("timestamp", pa.float32()), ("frame_index", pa.int64()), ("episode_index", pa.int64()),
                        ("index", pa.int64()), ("task_index", pa.int64()), ("grid", pa.list_(pa.float32())),
                        ("flag", pa.bool_()), ("label", pa.string()), ("empty", pa.list_(pa.float32())),
                        ("odd", pa.list_(pa.float32())),
                        ("observation.images.front", pa.struct([("path", pa.string())])),
                        ("txt", pa.string()), ("rec", pa.struct([("x", pa.float32())])),
                        ("half", pa.list_(pa.float16(), 2))])
    cols = sd.numeric_columns(Dataset(root), schema)
    assert cols == {"action": (6, np.dtype(np.float32)), "observation.state": (6, np.dtype(np.float64)),
                    "timestamp": (1, np.dtype(np.float32)), "frame_index": (1, np.dtype(np.int64)),
                    "episode_index": (1, np.dtype(np.int64)), "index": (1, np.dtype(np.int64)),
                    "task_index": (1, np.dtype(np.int64)), "flag": (1, np.dtype(np.bool_)),
                    "half": (2, np.dtype(np.float16))}
    # 6 float32 + 6 float64 + float32 + 4 int64 + bool + 2 float16 = 24 + 48 + 4 + 32 + 1 + 4 = 113 bytes a row
    assert sd.batch_rows_for(schema, cols, 100_000) == 4 * 2**20 // 113
    assert sd.batch_rows_for(schema, cols, 5000) == 5000
    assert sd.batch_rows_for(schema, {"action": (100_000, np.dtype(np.float64))}, 65_536) == 1024
    assert sd.batch_rows_for(schema, {"nowhere": (6, np.dtype(np.float64))}, 777) == 777


def _batch(eps, action, flag=None) -> pa.RecordBatch:
    cols = {"episode_index": pa.array(eps, pa.int64()),
            "action": pa.FixedSizeListArray.from_arrays(pa.array(np.asarray(action, np.float32).reshape(-1)), 2)}
    if flag is not None:
        cols["flag"] = pa.array(flag)
    return pa.RecordBatch.from_pydict(cols)


def _runs(eps) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    eps = np.asarray(eps)
    starts = np.flatnonzero(np.r_[True, eps[1:] != eps[:-1]])
    lens = np.diff(np.r_[starts, len(eps)])
    return eps[starts], starts, lens


def test_file_stats_builder_merges_runs_across_batches_and_leaves_split_episodes_out():
    rng = np.random.default_rng(11)
    eps = [0] * 5 + [1] * 9 + [2] * 4 + [0] * 2 + [3] * 6  # episode 0 comes back: not contiguous
    x = rng.normal(100.0, 3.0, size=(len(eps), 2)).astype(np.float32)
    flag = [bool(v) for v in rng.integers(0, 2, len(eps))]
    cuts = [0, 8, 11, 26]  # batch boundaries inside episode 1 (twice)
    q = np.float64(100.1)
    req = sd.StatsRequest({"absent": (1, "float64"), "action": (2, "float32"), "flag": (1, "bool")},
                          {"1/action": (["q10", "q50"], [[q, q], [99.0, 101.0]], [[q, q], [99.5, 101.5]]),
                           "0/action": (["q50"], [[100.0, 100.0]], [[100.0, 100.0]]),
                           "2/nowhere": (["q50"], [[0.1]], [[0.1]])})
    b = sd.FileStatsBuilder(req)
    assert b.names == ["absent", "action", "flag"]
    for a, z in zip(cuts, cuts[1:]):
        b.add(_batch(eps[a:z], x[a:z], flag[a:z]), *_runs(eps[a:z]))
    fs = b.result()
    assert fs.split == [0] and fs.unusable == []
    assert set(fs.features) == {"action", "flag"}  # "absent" is in no batch
    a = fs.features["action"]
    assert a["episodes"].tolist() == [1, 2, 3] and a["n"].tolist() == [9, 4, 6]
    assert a["episodes"].dtype == a["n"].dtype == np.int64
    e = np.asarray(eps)
    for row, ep in enumerate((1, 2, 3)):
        ref = x[e == ep].astype(np.float64)
        np.testing.assert_allclose(a["mean"][row], ref.mean(0), rtol=1e-12)
        np.testing.assert_allclose(a["m2"][row], ((ref - ref.mean(0)) ** 2).sum(0), rtol=1e-6)
        assert a["min"][row].tolist() == ref.min(0).tolist() and a["max"][row].tolist() == ref.max(0).tolist()
    fl = fs.features["flag"]
    np.testing.assert_allclose(fl["mean"][:, 0], [np.mean(np.asarray(flag)[e == ep]) for ep in (1, 2, 3)], rtol=1e-12)
    # quantile counts of episode 1, summed over its three runs; episode 0 is split: left out
    assert list(fs.quantiles) == ["1/action"]
    lo, hi = fs.quantiles["1/action"]
    x1 = x[e == 1]
    t_lo = sd._round(np.array([[q, q], [99.0, 101.0]]), np.dtype(np.float32), down=True)
    t_hi = sd._round(np.array([[q, q], [99.5, 101.5]]), np.dtype(np.float32), down=False)
    assert lo.tolist() == [np.count_nonzero(x1 < t_lo[k], axis=0).tolist() for k in range(2)]
    assert hi.tolist() == [np.count_nonzero(x1 <= t_hi[k], axis=0).tolist() for k in range(2)]
    assert b.thresholds["1/action"][0] == ["q10", "q50"]
    assert b.thresholds["2/nowhere"][1].dtype == np.float64 and b.thresholds["2/nowhere"][1].tolist() == [[0.1]]
    below, at_most = b.thresholds["1/action"][1:]
    assert below.dtype == at_most.dtype == np.float32 and below[0, 0] < q < at_most[0, 0]
    assert sd.FileStatsBuilder(req).result().features == {}


def test_file_stats_builder_gives_up_a_column_with_rows_of_another_width():
    req = sd.StatsRequest({"vec": (2, "float64"), "episode_index": (1, "int64")})
    b = sd.FileStatsBuilder(req)
    good = pa.RecordBatch.from_pydict({"episode_index": pa.array([0, 0]), "vec": pa.array([[1.0, 2.0], [3.0, 4.0]])})
    bad = pa.RecordBatch.from_pydict({"episode_index": pa.array([1, 1]), "vec": pa.array([[1.0, 2.0], [3.0]])})
    b.add(good, *_runs([0, 0]))
    b.add(bad, *_runs([1, 1]))
    b.add(good, *_runs([0, 0]))
    fs = b.result()
    assert fs.unusable == ["vec"] and "vec" not in fs.features and fs.split == [0]
    assert fs.features["episode_index"]["episodes"].tolist() == [1]
    assert fs.features["episode_index"]["mean"].tolist() == [[1.0]]


def test_quantile_request_thresholds_one_bin_around_each_stored_quantile(tmp_path):
    root = _v3(tmp_path)
    _set_v3(root, 2, "stats/observation.state/q90", lambda v: None)  # not stored: not requested
    _set_v3(root, 0, "stats/action/min", lambda v: v[:5])  # 5 values for 6 dimensions: not requested
    _set_v3(root, 1, "stats/frame_index/max", lambda v: None)
    t = pq.read_table(root / EPS_V3)
    pq.write_table(t.drop_columns(["stats/task_index/max"]), root / EPS_V3)  # no max at all: nothing to request
    blocks = sb.StatsBlocks(Dataset(root))
    list(blocks)
    columns = {"action": (6, np.dtype(np.float32)), "observation.state": (6, np.dtype(np.float32)),
               "frame_index": (1, np.dtype(np.int64)), "nowhere": (1, np.dtype(np.float64)),
               "task_index": (1, np.dtype(np.int64))}
    req = sd.quantile_request(blocks, columns, [0, 1, 2, 3], {0, 1, 2, 3, 7}, {(3, "action")})
    assert sorted(req) == ["0/frame_index", "0/observation.state", "1/action", "1/observation.state",
                           "2/action", "2/frame_index", "2/observation.state", "3/frame_index", "3/observation.state"]
    t = pq.read_table(root / EPS_V3)

    def stored(feature, stat, e):
        return np.asarray(t.column(f"stats/{feature}/{stat}")[e].as_py(), dtype=np.float64)

    for key, (names, below, at_most) in req.items():
        e, feature = int(key.split("/")[0]), key.split("/")[1]
        want = ["q01", "q10", "q50", "q99"] if key == "2/observation.state" else ["q01", "q10", "q50", "q90", "q99"]
        assert names == want, key
        lo, hi = stored(feature, "min", e), stored(feature, "max", e)
        eps = EPS32 if feature != "frame_index" else 0.0
        w = np.abs(hi - lo) / 5000 * 1.01 + eps * np.maximum(np.abs(lo), np.abs(hi)) + 1e-12
        vals = np.stack([stored(feature, q, e) for q in names])
        np.testing.assert_allclose(below, vals - w, rtol=1e-15, atol=0)
        np.testing.assert_allclose(at_most, vals + w, rtol=1e-15, atol=0)
    assert sd.quantile_request(blocks, columns, [0, 1], {2, 3}, set()) == {}
    assert sd.quantile_request(None, columns, [0, 1], {0, 1}, set()) == {}
    assert sorted(sd.quantile_request(blocks, columns, [3], {3}, set())) == ["3/action", "3/frame_index",
                                                                            "3/observation.state"]
    assert sd.quantile_request(blocks, {"action": (5, np.dtype(np.float32))}, [1], {1}, set()) == {}


def test_kept_blocks_keep_the_quantiles_of_the_sampled_episodes_only(tmp_path):
    root = _v3(tmp_path)
    blocks = sb.StatsBlocks(Dataset(root), keep=True)
    list(blocks)
    columns = {"action": (6, np.dtype(np.float32)), "observation.state": (6, np.dtype(np.float32)),
               "frame_index": (1, np.dtype(np.int64))}
    eps = [0, 1, 2, 3]
    before = sd.quantile_request(blocks, columns, eps, set(eps), set())
    bases = {e: {f: {s: c.row(i).copy() for s, c in block.features[f].items() if s in ("min", "max", "mean", "std")}
                 for f in columns} for e, (block, i) in blocks.lookup(eps).items()}
    held = blocks._kept_bytes
    blocks.keep_quantiles_of({1, 3})
    assert blocks._kept_bytes < held
    after = sd.quantile_request(blocks, columns, eps, set(eps), set())
    assert after == {k: v for k, v in before.items() if k.split("/")[0] in ("1", "3")} and after
    for e, (block, i) in blocks.lookup(eps).items():
        for f in columns:
            cols = block.features[f]
            for q in ("q01", "q10", "q50", "q90", "q99"):
                assert bool(cols[q].ok[i]) == (e in (1, 3)), (e, f, q)
                if e in (1, 3):
                    assert cols[q].values.shape[0] == 2  # the values of two rows are held, not of four
            for stat, v in bases[e][f].items():  # every other statistic is untouched
                np.testing.assert_array_equal(cols[stat].row(i), v)
    blocks.keep_quantiles_of({0})  # once dropped, a quantile is not read back: later calls change nothing
    assert sd.quantile_request(blocks, columns, eps, set(eps), set()) == after


def test_stats_comparison_quantile_sampling_duplicates_and_totals(monkeypatch):
    cols = {"a": (2, np.dtype(np.float64))}
    lengths = {0: 10, 1: 10, 2: 5, 3: 5}  # 30 frames x 2 values = 60 values
    order = [3, 0, 2, 1]
    for budget, every in ((60, 1), (59, 2), (20, 3), (1, 60)):
        monkeypatch.setattr(sd, "QUANTILE_BUDGET_VALUES", budget)
        sc = sd.StatsComparison(cols, None, set(), order, lengths)
        assert sc.quantile_every == every and sc.sampled == set(order[::every]) and sc.episodes_total == 4
    rng = np.random.default_rng(1)
    x1, x2 = rng.normal(size=(12, 2)), rng.normal(size=(6, 2))

    def file_stats(eps, x):
        b = sd.FileStatsBuilder(sd.StatsRequest({"a": (2, "float64")}))
        b.add(pa.RecordBatch.from_pydict({"a": pa.array(x.tolist())}), *_runs(eps))
        return b.result()

    sc = sd.StatsComparison(cols, None, set(), order, lengths)
    assert sc.request([0, 1]).to_dict() == {"columns": {"a": [2, "float64"]}, "quantiles": {}}
    sc.add_file(file_stats([0] * 7 + [1] * 5, x1))
    assert sc.split == set() and sc.seen == {0, 1}
    sc.add_file(file_stats([1] * 2 + [2] * 4, x2))  # episode 1 again, in another file: split
    assert sc.split == {1} and sc.seen == {0, 1, 2} and sc.results == []
    tot = sc.totals["a"]
    allx = np.concatenate([x1, x2])
    assert tot.n == 18
    np.testing.assert_allclose(tot.mean, allx.mean(0), rtol=1e-12)
    np.testing.assert_allclose(tot.m2, ((allx - allx.mean(0)) ** 2).sum(0), rtol=1e-12)
    np.testing.assert_array_equal(tot.min, allx.min(0))


@pytest.mark.parametrize("d,text", [
    (compute.Disagreement("std", 0, 0.0, 2.0, True), "MEAN_STD divides that dimension by 1e-8"),
    (compute.Disagreement("std", 0, -1.0, 2.0, True), "MEAN_STD divides that dimension by 1e-8"),
    (compute.Disagreement("std", 0, 0.5, 2.0, True), "MEAN_STD scales that dimension by 4 instead of 1"),
    (compute.Disagreement("std", 0, 3.0, 1.0, True), "MEAN_STD scales that dimension by 0.333 instead of 1"),
    (compute.Disagreement("mean", 0, 3.0, 1.0, True),
     "MEAN_STD shifts that dimension by more than one standard deviation"),
    (compute.Disagreement("min", 0, 3.0, 1.0, True), "MIN_MAX maps that dimension's data outside [-1, 1]"),
    (compute.Disagreement("max", 0, 3.0, 1.0, True), "MIN_MAX maps that dimension's data outside [-1, 1]"),
])
def test_impact_wording(d, text):
    assert sd._impact(d) == text


# ======================================================================================== deep.py: G010 end to end
def _g(report) -> list[str]:
    return sorted({f.check for f in report.findings if f.check.startswith("G")})


def test_g010_per_episode_findings_word_for_word(tmp_path):
    root = _v3(tmp_path)
    act, state = _episode_data(root, "action"), _episode_data(root, "observation.state")
    _set_v3(root, 0, "stats/action/std", lambda v: [0.0] + v[1:])
    _set_v3(root, 1, "stats/action/std", lambda v: [0.0] + v[1:])
    shift = 0.5 * state[2][:, 1].std()  # within [min, max] (no G005), beyond 1 % of a std
    _set_v3(root, 2, "stats/observation.state/mean", lambda v: [v[0], v[1] + shift] + v[2:])
    _set_v3(root, 3, "stats/action/max", lambda v: v[:5] + [v[5] + 0.25])
    r = _report(root)
    assert _g(r) == ["G008", "G010"]  # the zero std's G005 is withdrawn (G010 states the cause)
    g010 = _findings(r, "G010")
    s_mean = _stats_v3(root, "observation.state", "mean")[2][1]
    s_max = _stats_v3(root, "action", "max")[3][5]
    first = f"std[0] stored 0, data {act[0][:, 0].std():.6g}"
    assert [(f.message, f.path, f.severity, f.count, f.subject) for f in g010] == [
        (f"episode 0: 'action' {first} (2 occurrences: per-episode 'action' std disagrees with the data in 2 "
         f"episode(s) (first: episode 0, {first}), for episodes 0 and 1; e.g. {EPS_V3})", EPS_V3, "warning", 2,
         {"feature": "action", "key": "std"}),
        (f"episode 3: 'action' max[5] stored {s_max:.6g}, data {act[3][:, 5].max():.6g}", EPS_V3, "warning", 1,
         {"feature": "action", "episode": 3, "key": "max"}),
        (f"episode 2: 'observation.state' mean[1] stored {s_mean:.6g}, data {state[2][:, 1].mean():.6g}", EPS_V3,
         "warning", 1, {"feature": "observation.state", "episode": 2, "key": "mean"}),
    ]
    # stats.json is right about the data: no G010 for it (G008 says it disagrees with the edited entries)
    assert not any("stats.json" in f.message for f in g010)
    notes = _notes(r)
    assert not any(k.startswith("G010") for k in notes)
    # the same findings when the stored statistics come in blocks of one episode, looked up two at a time
    pq.write_table(pq.read_table(root / EPS_V3), root / EPS_V3, row_group_size=1)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(sb.StatsBlocks, "BLOCK_ROWS", 1)
        mp.setattr(sd, "LOOKUP_EPISODES", 2)
        small = _report(root)
    assert [(f.message, f.path, f.count, f.subject) for f in _findings(small, "G010")] == \
        [(f.message, f.path, f.count, f.subject) for f in g010]
    # without --deep nothing is compared
    shallow = _report(root, deep=False)
    assert "G010" not in _g(shallow)
    assert _notes(shallow)["G010 (stored statistics against the data)"] == "--deep not given"


def _noise_hook(ep, cols):
    """action[1]: noise around 5 in every episode (the spread lies within episodes, not between them)."""
    cols["action"][:, 1] = np.random.default_rng(ep).normal(5.0, 2.0, len(cols["action"])).astype(np.float32)


def test_g010_v21_entries_and_the_aggregate_lerobot_loads(tmp_path):
    root = build_dataset(tmp_path / "v21", SynthSpec(version="v2.1", episode_lengths=V21_LENGTHS, video_keys=(),
                                                     video_codec=None), episode_hook=_noise_hook)
    (root / "meta/stats.json").unlink()  # lerobot 0.3 writes none for v2.1
    act = _episode_data(root, "action")
    _edit_v21(root, lambda e, s: s["action"]["std"].__setitem__(1, s["action"]["std"][1] / 4))
    r = _report(root)
    assert _g(r) == ["G010"]
    g010 = _findings(r, "G010")
    stored = [json.loads(ln)["stats"]["action"]["std"][1] for ln in (root / STATS_JSONL).read_text().splitlines()]
    first = f"std[1] stored {stored[0]:.6g}, data {act[0][:, 1].std():.6g}"
    allx = np.concatenate([act[e] for e in range(3)])
    entries = [json.loads(ln)["stats"]["action"] for ln in (root / STATS_JSONL).read_text().splitlines()]
    agg = compute.aggregate_feature_stats([{k: np.asarray(v, float) for k, v in e.items()} for e in entries])
    src = "the aggregate of meta/episodes_stats.jsonl (what lerobot 0.3 normalises with)"
    ratio = allx[:, 1].std() / agg["std"][1]
    assert [(f.message, f.path, f.severity, f.count, f.subject) for f in g010] == [
        (f"episode 0: 'action' {first} (3 occurrences: per-episode 'action' std disagrees with the data in 3 "
         f"episode(s) (first: episode 0, {first}), for episodes 0-2; e.g. {STATS_JSONL})", STATS_JSONL, "warning", 3,
         {"feature": "action", "key": "std"}),
        (f"{src}: 'action' std[1] stored {agg['std'][1]:.6g}, data {allx[:, 1].std():.6g} over all 60 frame(s); "
         f"MEAN_STD scales that dimension by {ratio:.3g} instead of 1", None, "error", 1,
         {"feature": "action", "key": "std"}),
    ]


def test_g010_v21_aggregate_skewed_by_a_wrong_count_is_left_to_g007(tmp_path):
    root = build_dataset(tmp_path / "v21", SynthSpec(version="v2.1", episode_lengths=V21_LENGTHS, video_keys=(),
                                                     video_codec=None), episode_hook=_noise_hook)
    (root / "meta/stats.json").unlink()

    def edit(e, s):
        s["action"]["std"][1] /= 4
        if e == 1:
            s["action"]["count"] = [99]

    _edit_v21(root, edit)
    r = _report(root)
    assert _g(r) == ["G007", "G010"]
    assert [f.severity for f in _findings(r, "G010")] == ["warning"]  # per episode only
    assert _findings(r, "G010")[0].count == 3


def _drop_episode_stats(root: Path, features) -> None:
    t = pq.read_table(root / EPS_V3)
    keep = [c for c in t.column_names if not any(c.startswith(f"stats/{f}/") for f in features)]
    pq.write_table(t.select(keep), root / EPS_V3)


def test_g010_stats_json_against_all_the_data(tmp_path):
    """The statistics training normalises with, against every frame: an error (with what it does to normalised
    values) when a normalised feature is grossly off, a warning otherwise; the first gross disagreement is named
    and the others counted."""
    root = _v3(tmp_path, extra_vector_features={"observation.extra": 2})
    feats = ("action", "observation.state", "observation.extra", "timestamp", "frame_index")
    _drop_episode_stats(root, feats)  # no per-episode entries to compare stats.json with (no G008)
    data = {f: np.concatenate(list(_episode_data(root, f).values())) for f in feats}
    std = {f: data[f].std(0) for f in data}

    def edit(s):
        s["action"]["std"][2] = std["action"][2] / 2.5  # gross
        s["action"]["mean"][0] += 0.2 * std["action"][0]  # off, not gross
        s["observation.state"]["mean"][3] += 1.5 * std["observation.state"][3]
        extra = data["observation.extra"][:, 1]
        s["observation.extra"]["max"][1] += 3 * (extra.max() - extra.min())
        s["timestamp"]["std"][0] /= 3  # gross, not a normalised feature
        s["frame_index"]["mean"][0] += 0.5 * std["frame_index"][0]

    _edit_json(root / "meta/stats.json", edit)
    g = json.loads((root / "meta/stats.json").read_text())
    r = _report(root)
    got = {f.subject["feature"]: (f.message, f.path, f.severity, f.subject) for f in _findings(r, "G010")}
    head = "meta/stats.json: "
    assert got == {
        "action": (f"{head}'action' std[2] stored {g['action']['std'][2]:.6g}, data {std['action'][2]:.6g} "
                   f"(and 1 more) over all 72 frame(s); MEAN_STD scales that dimension by "
                   f"{std['action'][2] / g['action']['std'][2]:.3g} instead of 1", "meta/stats.json", "error",
                   {"feature": "action", "key": "std"}),
        "observation.state": (f"{head}'observation.state' mean[3] stored {g['observation.state']['mean'][3]:.6g}, "
                              f"data {data['observation.state'][:, 3].mean():.6g} over all 72 frame(s); MEAN_STD "
                              f"shifts that dimension by more than one standard deviation", "meta/stats.json", "error",
                              {"feature": "observation.state", "key": "mean"}),
        "observation.extra": (f"{head}'observation.extra' max[1] stored {g['observation.extra']['max'][1]:.6g}, data "
                              f"{data['observation.extra'][:, 1].max():.6g} over all 72 frame(s); MIN_MAX maps that "
                              f"dimension's data outside [-1, 1]", "meta/stats.json", "error",
                              {"feature": "observation.extra", "key": "max"}),
        "timestamp": (f"{head}'timestamp' std[0] stored {g['timestamp']['std'][0]:.6g}, data {std['timestamp'][0]:.6g} "
                      f"over all 72 frame(s) (a warning: lerobot policies do not normalise 'timestamp')",
                      "meta/stats.json", "warning", {"feature": "timestamp", "key": "std"}),
        "frame_index": (f"{head}'frame_index' mean[0] stored {g['frame_index']['mean'][0]:.6g}, data "
                        f"{data['frame_index'][:, 0].mean():.6g} over all 72 frame(s) (a warning: lerobot policies do "
                        "not normalise 'frame_index')", "meta/stats.json", "warning",
                        {"feature": "frame_index", "key": "mean"}),
    }


V3_DATA = ("data/chunk-000/file-000.parquet", "data/chunk-000/file-001.parquet")


def test_g010_leaves_out_episodes_whose_rows_are_not_contiguous(tmp_path):
    root = _v3(tmp_path)
    path = root / V3_DATA[0]  # episodes 0 (20 rows) and 1 (15 rows)
    t = pq.read_table(path)
    pq.write_table(t.take(list(range(0, 10)) + list(range(20, 35)) + list(range(10, 20))), path)
    state = _episode_data(root, "observation.state")
    _set_v3(root, 0, "stats/action/mean", lambda v: [v[0] + 40.0] + v[1:])  # episode 0 is split: not compared
    _set_v3(root, 1, "stats/observation.state/mean", lambda v: [v[0] + 0.5 * float(state[1][:, 0].std())] + v[1:])
    _edit_json(root / "meta/stats.json", lambda s: s["action"]["std"].__setitem__(0, 0.0))
    r = _report(root)
    msgs = [f.message for f in _findings(r, "G010")]
    assert len(msgs) == 1 and msgs[0].startswith("episode 1: 'observation.state' mean[0] stored ")
    assert _findings(r, "D004")
    notes = _notes(r)
    assert notes["G010 for episodes whose rows are not contiguous"] == \
        "1 episode(s) appear in more than one run of rows (D004)"
    assert notes["G010 for the global statistics"] == "not every data file could be read"


def test_g010_leaves_out_an_episode_found_in_two_files(tmp_path):
    """Episode 1's last 5 rows moved to the front of the next data file: each file holds it contiguously, but
    its moments in the first file are of 10 of its 15 rows; it is not compared (no G010 for its right entry)."""
    root = _v3(tmp_path)
    a, b = pq.read_table(root / V3_DATA[0]), pq.read_table(root / V3_DATA[1])
    pq.write_table(a.slice(0, 30), root / V3_DATA[0])
    pq.write_table(pa.concat_tables([a.slice(30), b]), root / V3_DATA[1])
    r = _report(root)
    assert _findings(r, "G010") == []
    assert _notes(r)["G010 for episodes whose rows are not contiguous"] == \
        "1 episode(s) appear in more than one run of rows (D004)"


def test_g010_skips_entries_metadata_checks_cannot_trust(tmp_path):
    root = _v3(tmp_path)
    _set_v3(root, 1, "stats/action/mean", lambda v: v[:5])  # G004: 5 values for 6 dimensions
    _set_v3(root, 1, "stats/action/std", lambda v: [x / 3 for x in v])  # wrong too, but the entry is untrusted
    r = _report(root)
    assert [f.message for f in _findings(r, "G004")] == [
        "episode 1: 'action'.mean has shape (5,), expected (6,) for a feature of shape (6,)"]
    assert _findings(r, "G010") == []


@pytest.mark.parametrize("miscount", [False, True])
def test_g010_global_left_to_g008_when_stats_json_is_stale(tmp_path, miscount):
    """stats.json that disagrees with the per-episode entries is G008's (stale); when an entry contradicts itself
    G008 cannot judge, and for v3.0 stats.json is compared with the data, a wrong per-episode count (G007)
    notwithstanding (only the v2.1 aggregate is skewed by it)."""
    root = _v3(tmp_path)
    if miscount:
        _set_v3(root, 1, "stats/action/count", lambda v: [99])
        _set_v3(root, 2, "stats/action/std", lambda v: [0.0] + v[1:])  # G005 (withdrawn: G010 for episode 2)
    _edit_json(root / "meta/stats.json", lambda s: s["action"]["std"].__setitem__(1, s["action"]["std"][1] / 3))
    r = _report(root)
    if miscount:
        assert _g(r) == ["G007", "G010"]
        glob = [f for f in _findings(r, "G010") if f.path == "meta/stats.json"]
        assert [(f.severity, f.message.startswith("meta/stats.json: 'action' std[1] stored ")) for f in glob] == \
            [("error", True)]
    else:
        assert [f.subject for f in _findings(r, "G008")] == [{"feature": ["action"]}]
        assert _findings(r, "G010") == []


def test_g010_incomplete_data_skips_the_global_comparison(tmp_path):
    root = _v3(tmp_path)
    _edit_json(root / "meta/stats.json", lambda s: s["action"]["std"].__setitem__(0, 0.0))
    whole = _report(root)
    assert [f.subject for f in _findings(whole, "G010")] == [{"feature": "action", "key": "std"}]
    (root / V3_DATA[1]).unlink()
    r = _report(root)
    assert _findings(r, "G010") == []
    assert _notes(r)["G010 for the global statistics"] == "not every data file could be read"
    # a stats.json entry that cannot be trusted (G003) is not compared either
    (root / V3_DATA[1]).parent.mkdir(exist_ok=True)
    root2 = _v3(tmp_path, name="nan")
    _edit_json(root2 / "meta/stats.json", lambda s: s["action"].update(std=[float("nan")] * 6))
    r = _report(root2)
    assert "G003" in _g(r) and _findings(r, "G010") == []


def test_g010_notes_a_column_with_rows_of_another_width(tmp_path):
    root = _v3(tmp_path)
    path = root / V3_DATA[1]  # episodes 2 and 3
    t = pq.read_table(path)
    i = t.schema.get_field_index("action")
    vals = t.column("action").to_pylist()
    vals[3] = vals[3][:5]
    t = t.set_column(i, pa.field("action", pa.list_(pa.float32())), pa.array(vals, pa.list_(pa.float32())))
    pq.write_table(t, path)
    _edit_json(root / "meta/stats.json", lambda s: s["observation.state"]["std"].__setitem__(0, 0.0))
    r = _report(root)
    assert _notes(r)["G010 for action"] == "rows do not all hold the declared number of values (D005/S004)"
    # the other features are still compared with stats.json over all 72 frames; action, whose totals would hold
    # only the 35 rows of the readable file, is not (stats.json describes all 72)
    assert [(f.subject, f.message.split(" stored")[0], f.message.endswith("over all 72 frame(s); MEAN_STD divides "
                                                                          "that dimension by 1e-8"))
            for f in _findings(r, "G010")] == [({"feature": "observation.state", "key": "std"},
                                                "meta/stats.json: 'observation.state' std[0]", True)]


def test_g010_notes_cameras_are_not_recomputed(tmp_path):
    root = _v3(tmp_path, video_keys=("observation.images.front",))
    r = _report(root, select={"G010"})
    assert _notes(r)["G010 for image/video features"] == (
        "camera statistics are not recomputed (that needs decoding frames); their shapes and ranges are checked "
        "(G004, G005)")
    assert "G010 for image/video features" not in _notes(_report(_v3(tmp_path, name="nocam"), select={"G010"}))


def test_g010_quantiles_on_sampled_episodes_and_which_g006_it_withdraws(tmp_path, monkeypatch):
    """Quantiles are verified on every k-th episode (k from the value budget); a G006 (quantiles out of order) is
    withdrawn only when G010 reports one of the same statistics of the same entry."""
    root = _v3(tmp_path)
    act, state = _episode_data(root, "action"), _episode_data(root, "observation.state")

    for e in (1, 2):  # q10 and q50 of action[0] swapped: G006
        q10, q50 = _stats_v3(root, "action", "q10")[e], _stats_v3(root, "action", "q50")[e]
        _set_v3(root, e, "stats/action/q10", lambda v, q=q50: [q[0]] + v[1:])
        _set_v3(root, e, "stats/action/q50", lambda v, q=q10: [q[0]] + v[1:])
    shift = 0.5 * float(act[1][:, 2].std())
    _set_v3(root, 1, "stats/action/mean", lambda v: v[:2] + [v[2] + shift] + v[3:])
    # episode 0: observation.state q90 not stored, q50 moved up next to q90 (still in order, at the wrong rank)
    q90 = _stats_v3(root, "observation.state", "q90")[0]
    _set_v3(root, 0, "stats/observation.state/q90", lambda v: None)
    _set_v3(root, 0, "stats/observation.state/q50", lambda v: [q90[0]] + v[1:])
    # 72 frames x 17 values = 1224 values; half the budget: every 2nd episode (0 and 2) has its quantiles verified
    monkeypatch.setattr(sd, "QUANTILE_BUDGET_VALUES", 612)
    r = _report(root)
    assert _notes(r)["G010 for stored quantiles of every episode"] == (
        "quantiles verified on every 2th episode (2 of 4) to bound the cost; min/max/mean/std on all")
    g006 = _findings(r, "G006")
    assert [f.message for f in g006] == [f"episode 1: 'action'.q10[0] = {_stats_v3(root, 'action', 'q10')[1][0]:.6g} > "
                                         f"q50 = {_stats_v3(root, 'action', 'q50')[1][0]:.6g}: quantiles out of order"]

    def rank(x, q, below):
        lo_s, hi_s = x.min(), x.max()
        w = abs(hi_s - lo_s) / 5000 * 1.01 + EPS32 * max(abs(lo_s), abs(hi_s)) + 1e-12
        return (np.count_nonzero(x < q - w) if below else np.count_nonzero(x <= q + w)) / len(x)

    s_q10 = _stats_v3(root, "action", "q10")[2][0]
    s_q50 = _stats_v3(root, "action", "q50")[2][0]
    s_st = _stats_v3(root, "observation.state", "q50")[0][0]
    got = [(f.message, f.subject) for f in _findings(r, "G010")]
    assert got == [
        (f"episode 1: 'action' mean[2] stored {_stats_v3(root, 'action', 'mean')[1][2]:.6g}, data "
         f"{act[1][:, 2].mean():.6g}", {"feature": "action", "episode": 1, "key": "mean"}),
        (f"episode 0: 'observation.state' q50[0] stored {s_st:.6g} sits at rank "
         f"{rank(state[0][:, 0], s_st, False):.3f} of the data (expected 0.50)",
         {"feature": "observation.state", "episode": 0, "key": "q50"}),
        (f"episode 2: 'action' q10[0] stored {s_q10:.6g} sits at rank {rank(act[2][:, 0], s_q10, True):.3f} of the "
         f"data (expected 0.10)", {"feature": "action", "episode": 2, "key": "q10"}),
        (f"episode 2: 'action' q50[0] stored {s_q50:.6g} sits at rank {rank(act[2][:, 0], s_q50, False):.3f} of the "
         f"data (expected 0.50)", {"feature": "action", "episode": 2, "key": "q50"}),
    ]
    # with the whole budget every episode is verified: no note, and episode 1's swap is reported (its G006 withdrawn)
    monkeypatch.setattr(sd, "QUANTILE_BUDGET_VALUES", 1224)
    r = _report(root)
    assert "G010 for stored quantiles of every episode" not in _notes(r) and _findings(r, "G006") == []
    assert {(f.subject.get("episode"), f.subject["key"]) for f in _findings(r, "G010")} == \
        {(1, "mean"), (0, "q50"), (None, "q10"), (None, "q50")}
