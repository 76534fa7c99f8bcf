"""Family D (``validate --deep``, :mod:`lerobot_tools.checks.deep`) held to its exact findings: check, severity,
file, message, count, group and subject, and the "not checked" notes.

Each dataset is written by :mod:`lerobot_tools.testing.synth` (real parquet, no video files) and then broken in
one way by rewriting a data file with pyarrow. The default v3.0 dataset has 3 episodes of 20, 15 and 25 frames at
10 fps: ``data/chunk-000/file-000.parquet`` holds episodes 0-1 (rows 0-19 and 20-34, one row group each) and
``file-001.parquet`` episode 2 (global index 35-59); in v2.1 each episode has its own file. Every expected value
follows from those numbers and from the edit made, as the comments say.

The scan reads the file three ways: plain record batches of :data:`~lerobot_tools.checks.deep.BATCH_ROWS` rows
(G010 not selected), one read-ahead thread, or consecutive row groups decoded by several threads
(:func:`~lerobot_tools.checks.deep._decode_ahead`, when G010 is selected). ``BATCH_ROWS`` and ``DECODE_THREADS``
are set with ``monkeypatch`` to take each way and to put batch boundaries inside episodes; every way must give
the same findings.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from lerobot_tools.checks import deep
from lerobot_tools.checks.engine import ValidateOptions, validate_target
from lerobot_tools.checks.stats.deep import StatsRequest
from lerobot_tools.dataset.targets import resolve_target
from lerobot_tools.distributed.validate_job import Recorder, Replayer
from lerobot_tools.testing.synth import SynthSpec, build_dataset
from lerobot_tools.validate import validate

INFO = "meta/info.json"
EPS_V3 = "meta/episodes/chunk-000/file-000.parquet"
D0, D1 = "data/chunk-000/file-000.parquet", "data/chunk-000/file-001.parquet"
V2 = tuple(f"data/chunk-000/episode_{i:06d}.parquet" for i in range(3))

#: the checks of the deep pass (C005 also has a footer-level form in family C; F007 also covers footers)
DEEP = frozenset({"C005", "D001", "D002", "D003", "D004", "D005", "F007"})
DEEP_NOTE = ("D001-D005, C005 per episode", "--deep not given (footers only)")
G010_NOTE = ("G010 (stored statistics against the data)", "--deep not given")
NO_EPISODES_NOTE = ("D001-D005", "no readable episode metadata or data files")
ACROSS_NOTE = ("D002 across files",
               "some data files are missing or unreadable, so global index positions are unknown")

G_D001 = "frame_index does not run 0..length-1"
G_D002 = "the global index is not contiguous"
G_D003 = "timestamps are not k / fps"
G_HOLDS = "data files hold other episodes than the metadata says"
G_C005 = "episode lengths disagree with the rows in the data files"
G_SPLIT = "episode rows are not contiguous"
G_ORDER = "episodes are not in ascending order"


# ----------------------------------------------------------------------------------------------------- helpers
def _build(tmp_path: Path, version: str = "v3.0", *, name: str = "ds", **spec) -> Path:
    return build_dataset(tmp_path / name, SynthSpec(version=version, video_codec=None, video_keys=(), **spec))


def _write(path: Path, table: pa.Table, row_groups=None) -> None:
    """Write ``table`` with one row group per entry of ``row_groups`` (sizes; 0 writes an empty row group), or
    one row group for the whole table."""
    with pq.ParquetWriter(path, table.schema) as w:
        start = 0
        for n in row_groups if row_groups is not None else [table.num_rows]:
            w.write_table(table.slice(start, n), row_group_size=max(n, 1))
            start += n
    assert start == table.num_rows


def _edit(root: Path, rel: str, *, types: dict | None = None, row_groups=None, **columns) -> None:
    """Rewrite data file ``rel``: each ``columns[name]`` maps the column's Python values to new ones (stored with
    ``types[name]`` or the old type); ``row_groups`` as :func:`_write`."""
    path = root / rel
    t = pq.read_table(path)
    for name, fn in columns.items():
        i = t.schema.get_field_index(name)
        typ = (types or {}).get(name, t.schema.field(i).type)
        t = t.set_column(i, name, pa.array(fn(t.column(name).to_pylist()), type=typ))
    _write(path, t, row_groups)


def _at(changes: dict):
    """A column edit setting ``values[row] = v`` for each ``row: v`` of ``changes``."""
    def fn(values):
        for row, v in changes.items():
            values[row] = v
        return values
    return fn


def _lengths(changes: dict):
    """A list-column edit giving row ``row`` ``n`` values (cut, or padded with zeros), for each ``row: n``."""
    def fn(values):
        for row, n in changes.items():
            values[row] = (values[row] + [0.0] * n)[:n]
        return values
    return fn


VAR_LIST = pa.list_(pa.float32())


def _set_info(root: Path, **changes) -> None:
    info = json.loads((root / INFO).read_text())
    info.update(changes)
    (root / INFO).write_text(json.dumps(info))


def _set_v3_column(root: Path, column: str, values) -> None:
    t = pq.read_table(root / EPS_V3)
    i = t.schema.get_field_index(column)
    pq.write_table(t.set_column(i, column, pa.array(values, type=t.schema.field(i).type)), root / EPS_V3)


def _report(root: Path, *, stats: bool = False, select=DEEP, **opts):
    """``validate --deep`` of the deep checks; ``stats`` also selects G010, so the scan reads the numeric columns
    through :func:`~lerobot_tools.checks.deep._decode_ahead`."""
    opts.setdefault("deep", True)
    sel = None if select is None else set(select) | ({"G010"} if stats else set())
    (r,) = validate([str(root)], ValidateOptions(select=sel, **opts))
    return r


def _deep(report) -> list[tuple]:
    """``(check, severity, path, message, count, group, subject)`` of every deep-pass finding, in report order."""
    return [(f.check, f.severity, f.path, f.message, f.count, f.group, f.subject) for f in report.findings
            if f.check in DEEP]


def _checks(report) -> list[str]:
    return [f.check for f in report.findings]


def _notes(report) -> list[tuple[str, str]]:
    return [(n.checks, n.reason) for n in report.not_checked]


def _deep_notes(report) -> list[tuple[str, str]]:
    """The notes of the deep pass (D001-D005, C005, G010)."""
    return [n for n in _notes(report) if n[0].startswith(("D0", "C005", "G010"))]


def _d001(path, e, n, row, got, want, count=1):
    return ("D001", "warning", path, f"episode {e}: {n} row(s) with frame_index out of sequence (first at row {row} "
            f"of the episode: {got}, expected {want})", count, G_D001, {"episode": e})


def _d002(path, n, row, got, want):
    return ("D002", "error", path, f"{n} row(s) with index out of sequence (first at row {row} of the file: {got}, "
            f"expected {want})", 1, G_D002, {})


def _d003(path, e, n, rows, err, tol="0.0001"):
    return ("D003", "error", path, f"episode {e}: {n} of {rows} timestamp(s) differ from k/fps (the k-th frame's time) "
            f"by up to {err} s (tolerance {tol} s)", 1, G_D003, {"episode": e})


def _d005(path, name, n):
    return ("D005", "error", path, f"column {name!r}: {n} row(s) do not have the declared length", 1,
            f"column {name!r} has rows of the wrong length", {"feature": name})


def _c005(path, e, rows, length):
    return ("C005", "error", path, f"episode {e} has {rows} rows but length {length}", 1, G_C005, {"episode": e})


def _d004(path, message, group):
    return ("D004", "error", path, message, 1, group, {})


# -------------------------------------------------------------------------------------------------- clean side
@pytest.mark.parametrize("version", ["v2.1", "v3.0"])
@pytest.mark.parametrize("stats", [False, True])
def test_a_clean_dataset_has_no_deep_finding_and_no_deep_note(tmp_path, version, stats):
    r = _report(_build(tmp_path, version), stats=stats)
    assert _checks(r) == []
    assert _deep_notes(r) == []


def test_without_deep_both_passes_are_said_not_checked(tmp_path):
    root = _build(tmp_path)
    assert _deep_notes(_report(root, deep=False, select=None)) == [DEEP_NOTE, G010_NOTE]
    assert _deep_notes(_report(root, deep=False, select={"D001", "G010"})) == [DEEP_NOTE, G010_NOTE]
    # G010 not selected, or ignored (the other statistics checks still run): only the deep checks are missing
    assert _deep_notes(_report(root, deep=False, select={"D001"})) == [DEEP_NOTE]
    assert _deep_notes(_report(root, deep=False, select=None, ignore={"G010"})) == [DEEP_NOTE]


def test_without_episode_metadata_the_deep_pass_is_said_not_checked(tmp_path):
    root = _build(tmp_path)
    (root / EPS_V3).unlink()
    r = _report(root)
    assert NO_EPISODES_NOTE in _notes(r)
    assert [c for c in _checks(r) if c[0] == "D"] == []


# ------------------------------------------------------------------------------------- one finding of each check
def test_d001_counts_the_rows_and_names_the_first(tmp_path):
    root = _build(tmp_path)
    # episode 0 is rows 0-19 of file-000: rows 3 and 5 (expected 3 and 5) are wrong
    _edit(root, D0, frame_index=_at({3: 99, 5: 98}))
    assert _deep(_report(root)) == [_d001(D0, 0, 2, 3, 99, 3)]


def test_d002_names_the_first_row_and_the_index_it_should_hold(tmp_path):
    root = _build(tmp_path)
    # file-001 starts at global index 35: its row 4 should hold 39, row 9 44
    _edit(root, D1, index=_at({4: 999, 9: 0}))
    assert _deep(_report(root)) == [_d002(D1, 2, 4, 999, 39)]


@pytest.mark.parametrize("tol,expected", [
    # frame 0 of episode 0 is at 0.5 s instead of 0: an error of exactly 0.5 s (exact in float32) is allowed
    (0.5, []),
    (0.25, [_d003(D0, 0, 1, 20, "5.00e-01", "0.25")]),
    (0.4999, [_d003(D0, 0, 1, 20, "5.00e-01", "0.4999")]),
])
def test_d003_tolerance_is_inclusive(tmp_path, tol, expected):
    root = _build(tmp_path)
    _edit(root, D0, timestamp=_at({0: 0.5}))
    assert _deep(_report(root, tolerance_s=tol)) == expected


@pytest.mark.parametrize("tol,expected", [
    # float64 timestamps (as pandas writes them): frame k=4 of episode 0 at 0.1 s, 0.3 s early. In float64
    # |0.1 - 4/10| is 0.30000000000000004: the 1e-9 s slack keeps rounding from failing a tolerance of 0.3 s
    (0.3, []),
    (0.25, [_d003(D0, 0, 1, 20, "3.00e-01", "0.25")]),
])
def test_d003_early_float64_timestamps(tmp_path, tol, expected):
    root = _build(tmp_path)
    _edit(root, D0, types={"timestamp": pa.float64()},
          timestamp=lambda v: [0.1 if i == 4 else (i if i < 20 else i - 20) / 10 for i in range(len(v))])
    assert _deep(_report(root, tolerance_s=tol)) == expected


@pytest.mark.parametrize("fps", [..., 0, None])
def test_without_a_usable_fps_timestamps_are_not_checked_but_frame_indices_are(tmp_path, fps):
    root = _build(tmp_path)
    info = json.loads((root / INFO).read_text())
    if fps is ...:
        del info["fps"]
    else:
        info["fps"] = fps
    (root / INFO).write_text(json.dumps(info))
    _edit(root, D0, frame_index=_at({3: 0}), timestamp=_at({5: 9.0}))
    r = _report(root)
    assert _deep(r) == [_d001(D0, 0, 1, 3, 0, 3)]
    assert ("D003", "info.json has no usable fps, so the time of the k-th frame is unknown") in _deep_notes(r)


def test_with_a_usable_fps_there_is_no_d003_note(tmp_path):
    root = _build(tmp_path)
    assert not [n for n in _deep_notes(_report(root)) if n[0] == "D003"]


def test_d003_without_a_frame_index_column(tmp_path):
    """The time of an episode's k-th row is k / fps whatever frame_index holds, so a data file without that column
    (a schema finding of its own) still has its timestamps checked."""
    root = _build(tmp_path)
    t = pq.read_table(root / D0)
    t = t.drop_columns(["frame_index"])
    i = t.schema.get_field_index("timestamp")
    ts = t.column("timestamp").to_pylist()
    ts[22] += 0.25
    _write(root / D0, t.set_column(i, "timestamp", pa.array(ts, type=t.schema.field(i).type)))
    assert _deep(_report(root)) == [_d003(D0, 1, 1, 15, "2.50e-01")]


def test_d003_counts_per_episode_and_keeps_the_largest_error(tmp_path):
    root = _build(tmp_path)
    # episode 1 (rows 20-34, k = row - 20): k=2 off by 0.25 s, k=14 off by 0.125 s; episode 0 untouched
    _edit(root, D0, timestamp=_at({22: 0.2 + 0.25, 34: 1.4 + 0.125}))
    assert _deep(_report(root)) == [_d003(D0, 1, 2, 15, "2.50e-01")]


def test_a_file_holding_another_episode_than_the_metadata_says(tmp_path):
    root = _build(tmp_path)
    # the last 5 rows of file-001 claim episode 3 (frame_index 20-24, timestamps 2.0-2.4): episode 2 is 5 rows
    # short, episode 3 is not in the metadata at all (so it has no length to compare)
    _edit(root, D1, episode_index=_at({r: 3 for r in range(20, 25)}))
    assert _deep(_report(root)) == [
        _d004(D1, "file holds episode(s) [3] the metadata places elsewhere", G_HOLDS),
        _c005(D1, 2, 20, 25),
        _d001(D1, 3, 5, 0, 20, 0),
        _d003(D1, 3, 5, 5, "2.00e+00"),
    ]


def test_a_file_holding_an_episode_placed_elsewhere_and_lacking_its_own(tmp_path):
    root = _build(tmp_path)
    # file-001's 25 rows claim episode 1 (placed in file-000): no C005 for an episode the metadata places elsewhere
    _edit(root, D1, episode_index=lambda v: [1] * len(v))
    assert _deep(_report(root)) == [_d004(
        D1, "file holds episode(s) [1] the metadata places elsewhere and lacks episode(s) [2] the metadata places "
            "here", G_HOLDS)]


def test_an_empty_file_lacks_its_episodes(tmp_path):
    root = _build(tmp_path)
    t = pq.read_table(root / D1)
    _write(root / D1, t.slice(0, 0), [0])
    r = _report(root)
    assert [f for f in _deep(r) if f[0] == "D004"] == [
        _d004(D1, "file lacks episode(s) [2] the metadata places here", G_HOLDS)]


def test_a_file_lacking_eight_episodes_shows_six(tmp_path):
    root = _build(tmp_path, episode_lengths=(2,) * 9, episodes_per_file=8, state_dim=0, action_dim=0)
    t = pq.read_table(root / D0)
    _write(root / D0, t.slice(0, 0), [0])
    # file-000 should hold episodes 0-7 (16 rows); after it, file-001's index should start at 0, not 16
    assert _deep(_report(root)) == [
        ("C005", "error", D0, "file has 0 rows but its 8 episodes sum to 16 frames", 1, G_C005, {}),
        _d004(D0, "file lacks episode(s) [0, 1, 2, 3, 4, 5] the metadata places here", G_HOLDS),
        _d002(D1, 2, 0, 16, 0),
    ]


def test_a_long_list_of_episodes_placed_elsewhere_shows_six(tmp_path):
    root = _build(tmp_path)
    # file-001's rows claim episodes 10..17 (3 rows each, the last one 4)
    _edit(root, D1, episode_index=lambda v: [10 + min(i // 3, 7) for i in range(len(v))],
          frame_index=lambda v: [i - 3 * min(i // 3, 7) for i in range(len(v))])
    found = [f for f in _deep(_report(root)) if f[0] == "D004"]
    assert found == [_d004(D1, "file holds episode(s) [10, 11, 12, 13, 14, 15] the metadata places elsewhere and "
                               "lacks episode(s) [2] the metadata places here", G_HOLDS)]


@pytest.mark.parametrize("runs,shown", [
    # file-000's 35 rows cut into `runs` runs of 35 // runs rows (the last one takes the rest), alternating
    # episodes 0 and 1
    (8, "0, 1, 0, 1, 0, 1, 0, 1"),
    (9, "0, 1, 0, 1, 0, 1, 0, 1, ..."),
    (2, None),
])
def test_d004_rows_of_an_episode_not_contiguous(tmp_path, runs, shown):
    root = _build(tmp_path)
    size = 35 // runs
    _edit(root, D0, episode_index=lambda v: [min(i // size, runs - 1) % 2 for i in range(len(v))])
    found = [f for f in _deep(_report(root)) if f[0] == "D004"]
    if shown is None:  # two runs, 0 then 1: contiguous and ascending
        assert found == []
    else:
        assert found == [_d004(D0, f"rows of an episode are not contiguous (episode_index sequence {shown})",
                               G_SPLIT)]


def test_d004_episodes_in_descending_order_within_a_file(tmp_path):
    root = _build(tmp_path)
    t = pq.read_table(root / D0)
    _write(root / D0, pa.concat_tables([t.slice(20, 15), t.slice(0, 20)]), [15, 20])
    found = [f for f in _deep(_report(root)) if f[0] == "D004"]
    assert found == [_d004(D0, "episodes are not in ascending order (1, 0)", G_ORDER)]


def test_d004_episodes_in_descending_order_across_files(tmp_path):
    root = _build(tmp_path)
    # the metadata places episode 2 in file-000 and episodes 0-1 in file-001, and the files say so: each file
    # holds what the metadata says, but file-001 starts below the last episode of file-000
    a, b = (root / D0).read_bytes(), (root / D1).read_bytes()
    (root / D0).write_bytes(b)
    (root / D1).write_bytes(a)
    _set_v3_column(root, "data/file_index", [1, 1, 0])
    found = [f for f in _deep(_report(root)) if f[0] == "D004"]
    assert found == [_d004(D1, "episodes are not in ascending order (0, 1)", G_ORDER)]


def test_c005_from_the_rows_of_each_episode(tmp_path):
    root = _build(tmp_path)
    # the last row of episode 0 claims episode 1: the file still has 35 rows (no footer-level C005), episode 0 has
    # 19 rows and episode 1 16, so every row of episode 1 is one frame late: frame_index 19, 0, 1, ... and
    # timestamps 1.9, 0.0, 0.1, ... for k = 0, 1, 2, ...; the two C005 merge under their group's title
    _edit(root, D0, episode_index=_at({19: 1}))
    assert _deep(_report(root)) == [
        ("C005", "error", D0, "episode 0 has 19 rows but length 20 (2 occurrences: " + G_C005 + ", for episodes 0 and "
         "1; e.g. " + D0 + ")",
         2, G_C005, {}),
        _d001(D0, 1, 16, 0, 19, 0),
        _d003(D0, 1, 16, 16, "1.90e+00"),
    ]


@pytest.mark.parametrize("column,typ,value,expected", [
    # each column holds one wrong value at row 3 of file-000 (episode 0, k=3, global index 3)
    ("frame_index", pa.int32(), 0, [_d001(D0, 0, 1, 3, 0, 3)]),
    ("index", pa.int32(), 0, [_d002(D0, 1, 3, 0, 3)]),
    ("timestamp", pa.float64(), 0.0, [_d003(D0, 0, 1, 20, "3.00e-01")]),
    # a column of a type the loader cannot use as that index is another check's finding (S-family): not read
    ("frame_index", pa.float64(), 0.0, []),
    ("index", pa.float64(), 0.0, []),
    ("timestamp", pa.int64(), 0, []),
    ("frame_index", pa.string(), "0", []),
])
def test_index_columns_are_read_only_when_their_type_is_usable(tmp_path, column, typ, value, expected):
    root = _build(tmp_path)
    cast = str if pa.types.is_string(typ) else int if pa.types.is_integer(typ) else float
    _edit(root, D0, types={column: typ}, **{column: lambda v: [cast(x) for x in _at({3: value})(v)]})
    assert _deep(_report(root)) == expected


@pytest.mark.parametrize("typ", [pa.float64(), pa.list_(pa.int64()), None])
def test_a_file_without_a_usable_episode_index_is_not_read(tmp_path, typ):
    root = _build(tmp_path)
    t = pq.read_table(root / D1)
    i = t.schema.get_field_index("episode_index")
    if typ is None:
        t = t.remove_column(i)
    else:
        values = t.column(i).to_pylist()
        t = t.set_column(i, "episode_index", pa.array([[v] for v in values] if pa.types.is_list(typ) else values,
                                                       type=typ))
    _write(root / D1, t)
    # nothing of file-001 is read: its episode is missing from it, and nothing else is said about it
    assert _deep(_report(root)) == [_d004(D1, "file lacks episode(s) [2] the metadata places here", G_HOLDS)]


# --------------------------------------------------------------------------------------------------------- D005
def test_d005_counts_the_rows_of_a_variable_length_list_column_in_each_file(tmp_path):
    root = _build(tmp_path)
    # action is declared [6]; written as variable-length lists with 2 short rows in file-000 and 1 long in file-001
    _edit(root, D0, types={"action": VAR_LIST}, action=_lengths({0: 5, 30: 0}))
    _edit(root, D1, types={"action": VAR_LIST}, action=_lengths({24: 7}))
    # the two files' findings merge under the column's group
    expected = [("D005", "error", D0, "column 'action': 2 row(s) do not have the declared length (2 occurrences: "
                 f"column 'action' has rows of the wrong length; e.g. {D0}, {D1})", 2,
                 "column 'action' has rows of the wrong length", {"feature": "action"})]
    assert _deep(_report(root)) == expected
    assert _deep(_report(root, stats=True)) == expected


def test_d005_counts_null_list_rows_as_wrong_with_and_without_statistics(tmp_path):
    root = _build(tmp_path)
    # a null row has no length: the lengths come from pyarrow.compute then (the offsets alone would say 0 values),
    # and the row counts as one of the wrong length; with G010 the column's statistics are not recomputed

    def null_rows(values):
        values[3] = None
        values[20] = None
        return values

    _edit(root, D0, types={"action": VAR_LIST}, action=null_rows)
    expected = [("D005", "error", D0, "column 'action': 2 row(s) do not have the declared length", 1, None,
                 {"feature": "action"})]
    got = [(c, sev, p, m, n, None, subj) for c, sev, p, m, n, _, subj in _deep(_report(root))]
    assert got == expected
    r = _report(root, stats=True)
    assert [(f.check, f.path) for f in r.findings if f.check in ("D005", "G010")] == [("D005", D0)]
    assert ("G010 for action", "rows do not all hold the declared number of values (D005/S004)") in _notes(r)


def test_a_feature_with_rows_of_the_wrong_length_in_one_file_gets_no_global_g010(tmp_path):
    root = _build(tmp_path)
    # one short row of action in file-000 only: its statistics are not recomputed anywhere (D005 is the cause);
    # the totals of file-001 alone must not be compared with meta/stats.json (they are not the whole data)
    _edit(root, D0, types={"action": VAR_LIST}, action=_lengths({0: 5}))
    r = _report(root, stats=True)
    assert [(f.check, f.path) for f in r.findings if f.check in ("D005", "G010")] == [("D005", D0)]
    assert ("G010 for action", "rows do not all hold the declared number of values (D005/S004)") in _notes(r)


def test_d005_is_not_checked_for_fixed_size_lists_nor_right_lengths(tmp_path):
    root = _build(tmp_path)
    # variable-length lists of the declared length; observation.state stays a fixed-size list
    _edit(root, D0, types={"action": VAR_LIST}, action=lambda v: v)
    assert _deep(_report(root)) == []


def test_d005_skips_features_whose_shape_or_dtype_says_no_length(tmp_path):
    root = _build(tmp_path)
    t = pq.read_table(root / D0)
    n = t.num_rows
    # every extra column is a variable-length list whose rows all have 3 values; only "vec" (declared [2]) is
    # checked: a [1] shape, string-like dtypes and shapes that are not [int] are other checks' business
    extra = {
        "one": (pa.list_(pa.float32()), [[0.0] * 3] * n, {"dtype": "float32", "shape": [1]}),
        "text": (pa.list_(pa.string()), [["a"] * 3] * n, {"dtype": "string", "shape": [2]}),
        "lang": (pa.list_(pa.string()), [["a"] * 3] * n, {"dtype": "language", "shape": [2]}),
        "nulls": (pa.list_(pa.float32()), [[0.0] * 3] * n, {"dtype": "float32", "shape": [None]}),
        "strs": (pa.list_(pa.float32()), [[0.0] * 3] * n, {"dtype": "float32", "shape": ["2"]}),
        "flag": (pa.list_(pa.float32()), [[0.0] * 3] * n, {"dtype": "float32", "shape": [True]}),
        "vec": (pa.list_(pa.float32()), [[0.0] * 3] * n, {"dtype": "float32", "shape": [2]}),
    }
    for name, (typ, values, _) in extra.items():
        t = t.append_column(name, pa.array(values, type=typ))
    _write(root / D0, t)
    info = json.loads((root / INFO).read_text())
    feats = info["features"]
    for name, (_, _, feat) in extra.items():
        feats[name] = dict(feat, names=None)
    # declared, list-shaped, but in no data file
    feats["missing"] = {"dtype": "float32", "shape": [4], "names": None}
    _set_info(root, features=feats)
    r = _report(root)
    assert "M001" not in _checks(r)
    assert _deep(r) == [_d005(D0, "vec", n)]


def test_scan_file_skips_a_list_column_the_file_does_not_have(tmp_path):
    root = _build(tmp_path)
    _edit(root, D0, types={"action": VAR_LIST}, action=_lengths({0: 5}))
    scan = deep.scan_file(root / D0, fps=10, tolerance_s=1e-4, index_offset=0,
                          list_columns={"absent": 3, "action": 6})
    assert scan.list_bad == {"action": 1}
    assert (scan.rows, scan.runs, scan.bad_index) == (35, [[0, 20], [1, 15]], 0)


# --------------------------------------------------------------------------------------- batches and the read paths
def _many_defects(tmp_path: Path) -> Path:
    """The default dataset with one defect of every per-file check, placed so that batches of a few rows cut
    through them; :data:`MANY` lists the findings (one per check and group, so none merge)."""
    root = _build(tmp_path)
    # file-000: episode 1 (rows 20-34, k = row - 20) has frame_index 7 at k=1 and 0 at k=13, and timestamps off by
    # 0.25 s at k=2 and by 0.125 s at k=14; action rows 19 (episode 0's last) and 20 (episode 1's first) are short
    _edit(root, D0, types={"action": VAR_LIST}, action=_lengths({19: 5, 20: 1}),
          frame_index=_at({21: 7, 33: 0}), timestamp=_at({22: 0.45, 34: 1.525}))
    # file-001: global index wrong at row 10 (should be 45); its last row claims episode 3 (as its first frame)
    _edit(root, D1, types={"action": VAR_LIST}, action=lambda v: v, index=_at({10: 0}),
          episode_index=_at({24: 3}), frame_index=_at({24: 0}), timestamp=_at({24: 0.0}))
    return root


MANY = [
    _d001(D0, 1, 2, 1, 7, 1),
    _d003(D0, 1, 2, 15, "2.50e-01"),
    _d005(D0, "action", 2),
    _d004(D1, "file holds episode(s) [3] the metadata places elsewhere", G_HOLDS),
    _c005(D1, 2, 24, 25),
    _d002(D1, 1, 10, 0, 45),
]


@pytest.mark.parametrize("batch_rows", [1, 2, 3, 17, 20, 34, 35, 65_536])
def test_batches_of_any_size_give_the_same_findings(tmp_path, monkeypatch, batch_rows):
    root = _many_defects(tmp_path)
    monkeypatch.setattr(deep, "BATCH_ROWS", batch_rows)
    assert _deep(_report(root)) == MANY


@pytest.mark.parametrize("threads", [1, 3])
def test_the_statistics_read_gives_the_same_findings(tmp_path, monkeypatch, threads):
    root = _many_defects(tmp_path)
    monkeypatch.setattr(deep, "DECODE_THREADS", threads)
    r = _report(root, stats=True)
    assert _deep(r) == MANY
    assert "G010" in _checks(r)  # the statistics pass ran


def test_an_episode_of_one_row(tmp_path):
    root = _build(tmp_path, "v2.1", episode_lengths=(1, 2, 1))
    assert _checks(_report(root)) == []
    _edit(root, V2[2], frame_index=_at({0: 1}))
    assert _deep(_report(root)) == [_d001(V2[2], 2, 1, 0, 1, 0)]


def test_more_than_a_thousand_bad_frame_indices_in_one_batch_are_counted_per_episode(tmp_path):
    # one batch of 1200 + 1300 rows (episodes 0 and 1 of file-000)
    root = _build(tmp_path, episode_lengths=(1200, 1300, 5), state_dim=0, action_dim=0)
    # frame_index counting on across episodes (the file's row number): every row of episode 1 is wrong
    _edit(root, D0, frame_index=lambda v: list(range(len(v))))
    assert _deep(_report(root)) == [_d001(D0, 1, 1300, 0, 1200, 0)]
    # frame_index 9 everywhere: every row but k=9 is wrong in both episodes
    _edit(root, D0, frame_index=lambda v: [9] * len(v))
    scan = deep.scan_file(root / D0, fps=10, tolerance_s=1e-4, index_offset=0, list_columns={})
    assert [(e, st.bad_frame, st.first_bad_frame) for e, st in scan.episodes.items()] == [
        (0, 1199, (0, 9, 0)), (1, 1299, (0, 9, 0))]
    r = _report(root)
    assert "M001" not in _checks(r)
    assert _deep(r) == [("D001", "warning", D0, "episode 0: 1199 row(s) with frame_index out of sequence (first at row 0 "
                         f"of the episode: 9, expected 0) (2 occurrences: {G_D001}, for episodes 0 and 1; e.g. {D0})",
                         2, G_D001, {})]
    # frame_index wrapping at 1000: episode 0 is wrong from k=1000 on (200 rows), episode 1 everywhere
    _edit(root, D0, frame_index=lambda v: [i % 1000 for i in range(len(v))])
    scan = deep.scan_file(root / D0, fps=10, tolerance_s=1e-4, index_offset=0, list_columns={})
    assert [(e, st.bad_frame, st.first_bad_frame) for e, st in scan.episodes.items()] == [
        (0, 200, (1000, 0, 1000)), (1, 1300, (0, 200, 0))]


# -------------------------------------------------------------------------------------------------- across files
def test_v2_index_runs_on_across_files(tmp_path):
    root = _build(tmp_path, "v2.1")
    # episode 1 (lengths 20, 15, 25) starts at global index 20; shifted by one
    _edit(root, V2[1], index=lambda v: [x + 1 for x in v])
    assert _deep(_report(root)) == [_d002(V2[1], 15, 0, 21, 20)]


def test_v2_after_a_missing_file_the_global_index_is_not_checked_but_the_rest_is(tmp_path):
    root = _build(tmp_path, "v2.1")
    (root / V2[0]).unlink()
    # file 2's index is off (not reportable: its position is unknown) and so is a frame_index (reportable)
    _edit(root, V2[2], index=lambda v: [x + 7 for x in v], frame_index=_at({3: 0}))
    r = _report(root)
    assert _deep(r) == [_d001(V2[2], 2, 1, 3, 0, 3)]
    assert ACROSS_NOTE in _notes(r)


def test_v3_after_an_unreadable_file_the_metadata_says_where_the_next_starts(tmp_path):
    root = _build(tmp_path)
    (root / D0).write_bytes(b"not parquet")
    _edit(root, D1, index=_at({3: 0}))
    r = _report(root)
    assert [f for f in _deep(r) if f[0] != "F007"] == [_d002(D1, 1, 3, 0, 38)]
    assert ACROSS_NOTE in _notes(r)


def _zero_column_chunk(path: Path, column: str) -> None:
    """Overwrite the bytes of ``column``'s chunk in row group 0 with zeros (the footer stays valid)."""
    rg = pq.ParquetFile(path).metadata.row_group(0)
    (c,) = [rg.column(i) for i in range(rg.num_columns) if rg.column(i).path_in_schema == column]
    start = c.dictionary_page_offset if c.has_dictionary_page else c.data_page_offset
    b = bytearray(path.read_bytes())
    b[start:start + c.total_compressed_size] = bytes(c.total_compressed_size)
    path.write_bytes(bytes(b))


def _read_error(path: Path) -> str:
    with pytest.raises(Exception) as exc:
        pq.read_table(path, columns=["episode_index"])
    lines = [ln.strip() for ln in str(exc.value).splitlines() if ln.strip()]
    assert len(lines) > 1  # a multi-line pyarrow message: the finding keeps the first line
    return lines[0]


@pytest.mark.parametrize("version,expected_after", [
    # v3.0: file-001's position comes from the metadata (global index 35), so its wrong index is reported
    ("v3.0", [_d002(D1, 1, 3, 0, 38)]),
    # v2.1: the next file's position is unknown after unreadable pages
    ("v2.1", []),
])
def test_f007_unreadable_data_pages_behind_a_valid_footer(tmp_path, version, expected_after):
    root = _build(tmp_path, version)
    first, second = (D0, D1) if version == "v3.0" else V2[:2]
    _zero_column_chunk(root / first, "episode_index")
    _edit(root, second, index=_at({3: 0}))
    r = _report(root)
    f007 = ("F007", "error", first, f"data pages cannot be read ({_read_error(root / first)})", 1, None,
            {"file_kind": "data"})
    assert _deep(r) == [f007] + expected_after
    assert ACROSS_NOTE not in _notes(r)  # the footer was read


# -------------------------------------------------------------------------------------------- distributed scans
def test_the_recording_observer_is_asked_for_each_file_by_name(tmp_path):
    root = _many_defects(tmp_path)
    (target,) = resolve_target(str(root))
    rec = Recorder([D0, D1])
    r = validate_target(target, ValidateOptions(deep=True, select=set(DEEP)), observer=rec)
    assert _deep(r) == MANY
    assert sorted({json.loads(k)[1] for k in rec.memo}) == [D0, D1]


@pytest.mark.parametrize("stats", [False, True])
def test_recorded_scans_replay_to_the_same_report(tmp_path, stats):
    root = _many_defects(tmp_path)
    (target,) = resolve_target(str(root))
    opts = ValidateOptions(deep=True, select=set(DEEP) | ({"G010"} if stats else set()))
    rec = Recorder([D0, D1])
    recorded = validate_target(target, opts, observer=rec)
    rep = Replayer(json.loads(json.dumps(rec.memo)))  # as the memo travels between processes
    replayed = validate_target(target, opts, observer=rep)
    assert rep.misses == 0
    assert _deep(replayed) == _deep(recorded) == MANY
    assert [(f.check, f.path, f.message, f.count, f.subject) for f in replayed.findings] == \
        [(f.check, f.path, f.message, f.count, f.subject) for f in recorded.findings]
    assert _notes(replayed) == _notes(recorded)


# ------------------------------------------------------------------------------------------ G010 through the scan
GLOBAL_NOTE = ("G010 for the global statistics", "not every data file could be read")


def test_the_global_statistics_need_every_file_read(tmp_path):
    root = _build(tmp_path)
    assert GLOBAL_NOTE not in _notes(_report(root, stats=True))
    _zero_column_chunk(root / D1, "episode_index")
    assert GLOBAL_NOTE in _notes(_report(root, stats=True))


def test_the_global_statistics_need_every_column_in_every_file(tmp_path):
    root = _build(tmp_path)
    t = pq.read_table(root / D1)
    _write(root / D1, t.remove_column(t.schema.get_field_index("observation.state")))
    r = _report(root, stats=True)
    assert GLOBAL_NOTE in _notes(r)
    assert "M001" not in _checks(r)


def test_the_global_statistics_of_a_clean_dataset_agree(tmp_path):
    # a changed stored global maximum is found only when every file was read (the comparison is complete)
    root = _build(tmp_path)
    stats = json.loads((root / "meta/stats.json").read_text())
    stats["frame_index"]["max"] = [99]
    (root / "meta/stats.json").write_text(json.dumps(stats))
    r = _report(root, stats=True)
    assert [(f.check, f.path, f.subject) for f in r.findings if f.check == "G010"] == [
        ("G010", "meta/stats.json", {"feature": "frame_index", "key": "max"})]


def test_no_readable_data_file_leaves_nothing_to_scan(tmp_path):
    root = _build(tmp_path)
    (root / D0).write_bytes(b"not parquet")
    (root / D1).write_bytes(b"not parquet")
    r = _report(root, stats=True)
    assert "M001" not in _checks(r)
    assert [c for c in _checks(r) if c[0] in "DG" or c == "C005"] == []
    assert ACROSS_NOTE in _notes(r)


# ------------------------------------------------------------------------------------ the decode-ahead generator
def _index_file(path: Path, sizes: list[int], *, extra: bool = True) -> list[str]:
    """A data file of ``sum(sizes)`` rows of one episode (clean index columns), row groups of ``sizes``; with
    ``extra`` also an unrequested column. Returns the index columns."""
    n = sum(sizes)
    cols = {"episode_index": pa.array(np.zeros(n, dtype=np.int64)),
            "frame_index": pa.array(np.arange(n, dtype=np.int64)),
            "index": pa.array(np.arange(n, dtype=np.int64)),
            "timestamp": pa.array((np.arange(n) / 10).astype(np.float32))}
    if extra:
        cols["other"] = pa.array(np.ones(n, dtype=np.int64))
    _write(path, pa.table(cols), sizes)
    return ["episode_index", "frame_index", "index", "timestamp"]


def _decoded(path: Path, cols: list[str], batch_rows: int) -> list[tuple[int, list[str]]]:
    pf = pq.ParquetFile(path, pre_buffer=False)
    gen = deep._decode_ahead(path, pf, cols, batch_rows)
    try:
        out = [(b.num_rows, b.schema.names) for b in gen]
    finally:
        gen.close()
    return out


@pytest.mark.parametrize("threads,sizes,batch_rows,expected", [
    # several threads: consecutive row groups up to batch_rows rows make one batch; empty row groups add nothing
    (3, [500, 500, 500, 0, 300, 1200], 1000, [1000, 800, 1200]),
    (3, [0, 400, 400, 0], 1000, [800]),
    (3, [1000, 1, 999], 1000, [1000, 1000]),
    (3, [1000, 1], 1000, [1000, 1]),
    (2, [600, 600, 600], 1000, [600, 600, 600]),
    (3, [100, 2000], 1000, [100, 2000]),
    # a row group over 2 * batch_rows: streamed in batches of batch_rows
    (3, [100, 2001], 1000, [1000, 1000, 101]),
    (3, [2001], 1000, [1000, 1000, 1]),
    # one thread or one row group: streamed
    (1, [600, 600, 600], 1000, [1000, 800]),
    (3, [1500], 1000, [1000, 500]),
])
def test_decode_ahead_batches(tmp_path, monkeypatch, threads, sizes, batch_rows, expected):
    monkeypatch.setattr(deep, "DECODE_THREADS", threads)
    path = tmp_path / "f.parquet"
    cols = _index_file(path, sizes)
    got = _decoded(path, cols, batch_rows)
    assert [n for n, _ in got] == expected
    assert all(names == cols for _, names in got)  # only the requested columns, in their order


def test_decode_ahead_decodes_a_group_as_one_batch_whatever_its_size(tmp_path, monkeypatch):
    # two row groups of 40,000 rows and batch_rows 100,000: one group, one batch of 80,000 rows
    monkeypatch.setattr(deep, "DECODE_THREADS", 2)
    path = tmp_path / "f.parquet"
    _write(path, pa.table({"episode_index": pa.array(np.zeros(80_000, dtype=np.int64))}), [40_000, 40_000])
    assert _decoded(path, ["episode_index"], 100_000) == [(80_000, ["episode_index"])]


def _scan(path: Path, **kw) -> dict:
    return deep.scan_to_dict(deep.scan_file(path, fps=10, tolerance_s=1e-4, index_offset=0, **kw))


def test_every_read_path_gives_the_same_scan_of_a_file_of_many_row_groups(tmp_path, monkeypatch):
    # 6 episodes of 7 rows in 42 rows, row groups of 5 (so groups and batches cut episodes), with one defect of
    # each kind; the statistics request holds no column, so batch_rows is BATCH_ROWS
    n = 42
    ep = np.repeat(np.arange(6), 7)
    fi = np.tile(np.arange(7), 6)
    fi[15] = 40  # episode 2, k=1
    idx = np.arange(n)
    idx[30] = 3
    idx[36] = 0
    ts = (np.tile(np.arange(7), 6) / 10).astype(np.float32)
    ts[8] = 0.9  # episode 1, k=1: off by 0.8 s
    vals = [[0.0, 1.0]] * n
    vals[41] = [0.0]
    path = tmp_path / "f.parquet"
    t = pa.table({"episode_index": pa.array(ep), "frame_index": pa.array(fi), "index": pa.array(idx),
                  "timestamp": pa.array(ts), "v": pa.array(vals, type=VAR_LIST)})
    _write(path, t, [5, 5, 0, 5, 5, 5, 5, 5, 5, 2])
    expected = {
        "runs": [[e, 7] for e in range(6)],
        "episodes": [[0, 7, 0, None, 0, 0.0], [1, 7, 0, None, 1, pytest.approx(0.8)],
                     [2, 7, 1, [1, 40, 1], 0, 0.0], [3, 7, 0, None, 0, 0.0], [4, 7, 0, None, 0, 0.0],
                     [5, 7, 0, None, 0, 0.0]],
        "bad_index": 2, "first_bad_index": [30, 3, 30], "list_bad": [["v", 1]], "rows": 42,
        # the off-grid timestamp kept for the timestamp audit, whatever the read path
        "ts_off": [[1, [1], [pytest.approx(0.9)]]], "ts_off_truncated": False,
    }
    scans = {}
    for threads in (1, 3):
        for batch_rows in (4, 7, 12, 1000):
            monkeypatch.setattr(deep, "DECODE_THREADS", threads)
            monkeypatch.setattr(deep, "BATCH_ROWS", batch_rows)
            for stats in (None, StatsRequest(columns={})):
                s = _scan(path, list_columns={"v": 2}, stats=stats)
                s.pop("stats")
                scans[(threads, batch_rows, stats is not None)] = s
    for key, s in scans.items():
        assert s == expected, key


def test_the_statistics_of_a_list_column_come_through_the_threaded_read(tmp_path, monkeypatch):
    # a numeric column not among the index columns must be read by every path: its moments are in the scan
    path = tmp_path / "f.parquet"
    n = 3000
    t = pa.table({"episode_index": pa.array(np.repeat([0, 1], 1500)), "frame_index": pa.array(np.tile(np.arange(1500), 2)),
                  "index": pa.array(np.arange(n)), "timestamp": pa.array((np.tile(np.arange(1500), 2) / 10).astype(np.float32)),
                  "v": pa.array(np.arange(n, dtype=np.float32))})
    _write(path, t, [700, 700, 700, 900])
    monkeypatch.setattr(deep, "BATCH_ROWS", 1024)
    for threads in (1, 3):
        monkeypatch.setattr(deep, "DECODE_THREADS", threads)
        s = deep.scan_file(path, fps=10, tolerance_s=1e-4, index_offset=0, list_columns={},
                           stats=StatsRequest(columns={"v": (1, "float32")}))
        v = s.stats.features["v"]
        assert v["episodes"].tolist() == [0, 1]
        assert v["n"].tolist() == [1500, 1500]
        assert v["min"].ravel().tolist() == [0.0, 1500.0] and v["max"].ravel().tolist() == [1499.0, 2999.0]
        assert np.allclose(v["mean"].ravel(), [749.5, 2249.5])
        assert (s.rows, s.runs, s.bad_index, s.episodes[0].bad_frame) == (3000, [[0, 1500], [1, 1500]], 0, 0)
