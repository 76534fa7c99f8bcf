"""Families T (task table) and S (features against the parquet schema) held to their exact messages, counts,
severities, grouping and "not checked" notes.

Each dataset is written by :mod:`lerobot_tools.testing.synth` (real parquet, no video) and then broken in one
way with pyarrow or a JSON edit. Expected values come from what the test wrote: the task rows, the episode task
lists, the columns added, dropped or cast.
"""

from __future__ import annotations

import json
import shutil
import struct
from collections.abc import Callable
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from lerobot_tools.checks.engine import ValidateOptions
from lerobot_tools.checks.schema import _signature
from lerobot_tools.checks.tasks import _distinct_task_indices
from lerobot_tools.testing.synth import SynthSpec, build_dataset
from lerobot_tools.testing.synth.columns import hf_feature_json
from lerobot_tools.validate import validate

TASKS = ("pick up the cube", "place the cube in the bin")  # SynthSpec's default task table
V2_TASKS = "meta/tasks.jsonl"
V3_TASKS = "meta/tasks.parquet"
V2_EPISODES = "meta/episodes.jsonl"
S_IDS = {f"S00{i}" for i in range(1, 8)}


# ------------------------------------------------------------------ helpers
def _v3(tmp_path: Path, name: str = "v3", **kw) -> Path:
    """v3.0: by default episodes of 20/15/25 frames, tasks 0/1/0, data file-000 (episodes 0-1) and file-001
    (episode 2)."""
    return build_dataset(tmp_path / name, SynthSpec(**{"video_codec": None, "video_keys": (), **kw}))


def _v2(tmp_path: Path, name: str = "v2", **kw) -> Path:
    """v2.1: one data file per episode; episode i has task i % 2 by default."""
    return build_dataset(tmp_path / name, SynthSpec(**{"version": "v2.1", "video_codec": None, "video_keys": (), **kw}))


def _v2_file(i: int) -> str:
    return f"data/chunk-000/episode_{i:06d}.parquet"


def _v3_file(i: int) -> str:
    return f"data/chunk-000/file-{i:03d}.parquet"


def _report(root: Path, **opts):
    (r,) = validate([str(root)], ValidateOptions(**opts))
    assert not [f for f in r.findings if f.check == "M001"], [f.message for f in r.findings]
    return r


def _got(report, prefix: str) -> list[tuple]:
    """(check, severity, path, message, count, subject) of the findings whose check starts with ``prefix``."""
    return [(f.check, f.severity, f.path, f.message, f.count, f.subject)
            for f in report.findings if f.check.startswith(prefix)]


def _notes(report) -> list[tuple[str, str]]:
    return [(n.checks, n.reason) for n in report.not_checked]


def _write_jsonl(path: Path, rows) -> None:
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows))


def _tasks_jsonl(root: Path, rows: list[tuple]) -> None:
    _write_jsonl(root / V2_TASKS, [{"task_index": i, "task": t} for i, t in rows])


def _tasks_parquet(root: Path, indices: list[int], labels: list[str]) -> None:
    """tasks.parquet in the form lerobot writes: the labels as the pandas index named ``task``."""
    df = pd.DataFrame({"task_index": pd.array(indices, dtype="int64")}, index=pd.Index(labels, name="task"))
    df.to_parquet(root / V3_TASKS)


def _episodes_tasks(root: Path, tasks_per_episode: list[list]) -> None:
    """Rewrite each line of a v2.1 episodes.jsonl with the given ``tasks`` list."""
    path = root / V2_EPISODES
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    assert len(rows) == len(tasks_per_episode)
    for row, tasks in zip(rows, tasks_per_episode):
        row["tasks"] = tasks
    _write_jsonl(path, rows)


def _edit_info(root: Path, fn) -> None:
    path = root / "meta/info.json"
    info = json.loads(path.read_text())
    fn(info)
    path.write_text(json.dumps(info, indent=4))


def _rewrite(root: Path, rel: str, fn, **write_kw) -> None:
    """Read a data file, transform the table with ``fn``, write it back (schema metadata kept unless ``fn``
    replaces it)."""
    path = root / rel
    pq.write_table(fn(pq.read_table(path)), path, **write_kw)


def _set_column(table: pa.Table, name: str, array: pa.Array) -> pa.Table:
    return table.set_column(table.schema.get_field_index(name), name, array)


def _task_index(values) -> Callable[[pa.Table], pa.Table]:
    return lambda t: _set_column(t, "task_index", pa.array(values, pa.int64()))


def _hf_metadata(table: pa.Table, changes: dict[str, dict | None]) -> dict[bytes, bytes]:
    """The table's ``huggingface`` metadata with feature entries replaced (a None value removes the entry)."""
    doc = json.loads(table.schema.metadata[b"huggingface"])
    for name, entry in changes.items():
        if entry is None:
            doc["info"]["features"].pop(name)
        else:
            doc["info"]["features"][name] = entry
    return {b"huggingface": json.dumps(doc).encode()}


# ================================================================== family T: the task table
@pytest.mark.parametrize("version", ["v2.1", "v3.0"])
def test_a_clean_task_table_raises_nothing_and_skips_nothing(tmp_path, version):
    root = build_dataset(tmp_path / "ds", SynthSpec(version=version, video_codec=None, video_keys=()))
    r = _report(root)
    assert _got(r, "T") == []
    assert [n for n in _notes(r) if "T0" in n[0]] == []  # tasks_ok is set: T003 ran


@pytest.mark.parametrize("version,rel", [("v3.0", V3_TASKS), ("v2.1", V2_TASKS)])
def test_a_missing_task_table_is_t001_and_t002_to_t007_are_not_checked(tmp_path, version, rel):
    root = build_dataset(tmp_path / "ds", SynthSpec(version=version, video_codec=None, video_keys=()))
    (root / rel).unlink()
    r = _report(root)
    # a plain DatasetError ("file is missing"): T001 with the reader's message, no file_kind subject
    assert _got(r, "T") == [("T001", "error", rel, "file is missing", 1, {})]
    notes = _notes(r)
    assert ("T002-T007", f"the task table could not be read ({rel}: file is missing)") in notes
    assert ("T003", "the task table could not be read") in notes  # run_data: tasks_ok was never set


def test_a_truncated_tasks_parquet_is_named_as_the_task_table(tmp_path):
    root = _v3(tmp_path)
    path = root / V3_TASKS
    path.write_bytes(path.read_bytes()[:-10])  # the PAR1 magic is gone
    r = _report(root)
    (t001,) = _got(r, "T")
    assert t001[:3] == ("T001", "error", V3_TASKS)
    # report_unreadable puts the label of file_kind "tasks" before an "is ..." message
    assert t001[3].startswith("task table is truncated: no parquet footer")
    assert t001[5] == {"file_kind": "tasks"}
    (note,) = [n for n in _notes(r) if n[0] == "T002-T007"]
    assert note[1].startswith(f"the task table could not be read ({V3_TASKS}: is truncated: no parquet footer")


def test_a_task_table_that_is_an_lfs_pointer_is_f004_of_file_kind_tasks(tmp_path):
    root = _v3(tmp_path)
    (root / V3_TASKS).write_text("version https://git-lfs.github.com/spec/v1\noid sha256:" + "a" * 64
                                 + "\nsize 1234\n")
    r = _report(root)
    assert _got(r, "T") == []
    assert _got(r, "F004") == [("F004", "error", V3_TASKS, "task table is a Git LFS pointer (object of 1,234 bytes "
                                "not fetched)", 1, {"file_kind": "tasks"})]
    assert ("T002-T007", f"the task table could not be read ({V3_TASKS} is a Git LFS pointer (object of 1,234 "
            "bytes not fetched))") in _notes(r)


def test_t001_malformed_rows_are_grouped_under_their_title(tmp_path):
    root = _v2(tmp_path)
    good = [{"task_index": i, "task": t} for i, t in enumerate(TASKS)]
    _write_jsonl(root / V2_TASKS, good + [{"task_index": "2", "task": "x"}, "[1, 2]"])
    r = _report(root)
    # two different messages: the first one, the count and the group's title
    assert _got(r, "T") == [("T001", "error", V2_TASKS, "line 3 has no integer task_index (2 occurrences: task "
                             "table rows are malformed; e.g. meta/tasks.jsonl)", 2, {})]
    assert not [n for n in _notes(r) if n[0].startswith("T")]


def test_t001_one_malformed_row_is_its_own_message(tmp_path):
    root = _v2(tmp_path)
    _write_jsonl(root / V2_TASKS, [{"task_index": 0, "task": TASKS[0]}, {"task_index": 1}, {"task_index": 1,
                                                                                          "task": TASKS[1]}])
    assert _got(_report(root), "T") == [("T001", "error", V2_TASKS, "line 2 has no string task", 1, {})]


PLAIN = ("tasks.parquet has the task string as a plain column, not the pandas index; lerobot would return the row "
         "number as each sample's task text")
UNKNOWN = "tasks.parquet has no task string column (expected the pandas index named 'task')"
UNNAMED = ("tasks.parquet stores the task strings in an unnamed pandas index (__index_level_0__), as lerobot's own "
           "writer does; lerobot reads it, a reader that looks for a 'task' column does not")


@pytest.mark.parametrize("form,expected", [
    ("pandas-index", None),
    ("plain-columns", ("error", PLAIN)),
    ("unknown", ("error", UNKNOWN)),
    ("unnamed-index", ("info", UNNAMED)),  # lerobot's own writer: only info
])
def test_t004_each_tasks_parquet_form(tmp_path, form, expected):
    root = _v3(tmp_path)
    path = root / V3_TASKS
    if form == "plain-columns":
        pq.write_table(pa.table({"task_index": pa.array([0, 1], pa.int64()), "task": list(TASKS)}), path)
    elif form == "unknown":
        pq.write_table(pa.table({"task_index": pa.array([0, 1], pa.int64()), "name": list(TASKS)}), path)
    elif form == "unnamed-index":
        pd.DataFrame({"task_index": [0, 1]}, index=pd.Index(list(TASKS))).to_parquet(path)
    r = _report(root)
    got = [(f.severity, f.path, f.message) for f in r.findings if f.check == "T004"]
    assert got == ([] if expected is None else [(expected[0], V3_TASKS, expected[1])])
    if form != "unknown":  # the labels were read: nothing else of family T
        assert [f.check for f in r.findings if f.check.startswith("T")] == (["T004"] if expected else [])


def test_t007_v3_counts_the_rows_off_their_position_and_names_the_first(tmp_path):
    root = _v3(tmp_path)
    _tasks_parquet(root, [0, 2, 1], [*TASKS, "third"])  # rows 1 and 2 swapped
    r = _report(root)
    assert _got(r, "T007") == [("T007", "error", V3_TASKS, "2 row(s) have task_index != row position (first: row 1 "
                                "has task_index 2); lerobot looks tasks up by position", 1, {})]
    # total_tasks still says 2: T006 compares it with the 3 rows
    assert _got(r, "T006") == [("T006", "error", "meta/info.json", "total_tasks is 2 but meta/tasks.parquet has 3 "
                                "task(s)", 1, {"key": "total_tasks"})]


@pytest.mark.parametrize("indices,expected", [
    ([1, 0], None),  # v2.1 looks tasks up by task_index, not position: a permutation is fine
    # 7 once, then 0..5 twice: duplicates are the indices seen more than once, the first 5 shown
    ([7, 0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5], "task_index values are not 0..12 (duplicates [0, 1, 2, 3, 4])"),
    ([1, 2, 3, 4, 5, 6, 7, 8, 9], "task_index values are not 0..8 (values [1, 2, 3, 4, 5, 6, 7, 8])"),
    ([0, 2], "task_index values are not 0..1 (values [0, 2])"),
])
def test_t007_v2_indices_must_be_0_to_n_minus_1(tmp_path, indices, expected):
    root = _v2(tmp_path)
    _tasks_jsonl(root, [(i, f"task {n}") for n, i in enumerate(indices)])
    r = _report(root)
    assert _got(r, "T007") == ([] if expected is None else [("T007", "error", V2_TASKS, expected, 1, {})])


def test_t005_one_duplicated_label_names_its_task(tmp_path):
    root = _v2(tmp_path)
    _tasks_jsonl(root, [(0, TASKS[0]), (1, TASKS[1]), (2, TASKS[0])])
    _edit_info(root, lambda info: info.update(total_tasks=3))
    r = _report(root)
    # TASKS[1] appears once: not reported
    assert _got(r, "T") == [("T005", "warning", V2_TASKS, f"task {TASKS[0]!r} appears 2 times", 1,
                             {"task": TASKS[0]})]


def test_t005_several_duplicated_labels_group_and_keep_each_count(tmp_path):
    root = _v2(tmp_path)
    labels = [TASKS[0], TASKS[1], TASKS[1], TASKS[0], TASKS[1], "once"]
    _tasks_jsonl(root, list(enumerate(labels)))
    _edit_info(root, lambda info: info.update(total_tasks=6))
    r = _report(root)
    # TASKS[0] twice, TASKS[1] three times: two messages, grouped under the title; the tasks differ, so the
    # grouped finding names none
    assert _got(r, "T") == [("T005", "warning", V2_TASKS, f"task {TASKS[0]!r} appears 2 times (2 occurrences: task "
                             "labels are duplicated; e.g. meta/tasks.jsonl)", 2, {})]


@pytest.mark.parametrize("total,expected", [
    (5, "total_tasks is 5 but meta/tasks.jsonl has 2 task(s)"),
    (2, None),
    ("missing", None),  # no counter to compare
    ("2", None),  # not an integer: I-family's business, not T006's
])
def test_t006_total_tasks(tmp_path, total, expected):
    root = _v2(tmp_path)
    if total == "missing":
        _edit_info(root, lambda info: info.pop("total_tasks"))
    else:
        _edit_info(root, lambda info: info.update(total_tasks=total))
    r = _report(root)
    assert _got(r, "T006") == ([] if expected is None else
                               [("T006", "error", "meta/info.json", expected, 1, {"key": "total_tasks"})])


def test_t002_labels_missing_from_the_table_and_integer_references(tmp_path):
    root = _v2(tmp_path, episode_lengths=(2,) * 7)
    # "gone" in episodes 0-5 (6: one past the 5 shown), "lost" in episodes 0-4 (exactly 5); episode 6 holds a
    # bool, a float and a null (none of them a label or an index: passed over, and the references after them
    # still read), then integer references (1 is a task, 9 is not)
    _episodes_tasks(root, [["gone", "lost", TASKS[0]]] * 5 + [["gone"], [True, 1.5, None, TASKS[1], 1, 9]])
    r = _report(root)
    assert _got(r, "T") == [
        ("T002", "error", V2_EPISODES, "task 'gone' of episode(s) 0, 1, 2, 3, 4 and 1 more is not in "
         "meta/tasks.jsonl", 1, {"task": "gone"}),
        ("T002", "error", V2_EPISODES, "task 'lost' of episode(s) 0, 1, 2, 3, 4 is not in meta/tasks.jsonl", 1,
         {"task": "lost"}),
        ("T002", "error", V2_EPISODES, "task 'task index 9' of episode(s) 6 is not in meta/tasks.jsonl", 1,
         {"task": 9}),
        # 1 and 9 are integers; True is a bool and is not counted
        ("T002", "warning", V2_EPISODES, "2 episode task reference(s) are integers, not task strings (ported data; "
         "lerobot expects strings)", 1, {"key": "tasks"}),
    ]


def test_t002_with_a_single_episode(tmp_path):
    root = _v2(tmp_path, episode_lengths=(3,))
    _episodes_tasks(root, [["gone", 0]])
    r = _report(root)
    # the path is the first episode's metadata file (there is only one episode here)
    assert _got(r, "T") == [
        ("T002", "error", V2_EPISODES, "task 'gone' of episode(s) 0 is not in meta/tasks.jsonl", 1,
         {"task": "gone"}),
        ("T002", "warning", V2_EPISODES, "1 episode task reference(s) are integers, not task strings (ported data; "
         "lerobot expects strings)", 1, {"key": "tasks"}),
    ]


def test_t002_is_not_run_on_unreadable_episode_metadata(tmp_path):
    root = _v2(tmp_path)
    _write_jsonl(root / V2_EPISODES, ["not json", "{also not"])
    _tasks_jsonl(root, [(0, "other"), (1, "labels")])  # every episode's label would be missing
    r = _report(root)  # no M001: the unreadable episodes are never read for T002
    assert _got(r, "T") == []
    notes = _notes(r)
    assert [c for c, _ in notes if "T002" in c] == ["C001, C003-C006, T002, D001-D005, F010"]  # counts says why


# ------------------------------------------------------------------ T003: data task_index values
T003_GROUP = "data rows carry task_index values with no task"


def test_t003_shows_the_first_six_bad_values_and_groups_files(tmp_path):
    root = _v3(tmp_path)
    _rewrite(root, _v3_file(0), _task_index([i % 10 for i in range(35)]))  # 35 rows: values 0..9, 2..9 bad
    _rewrite(root, _v3_file(1), _task_index([5] * 25))
    r = _report(root)
    assert _got(r, "T003") == [("T003", "error", _v3_file(0),
                                "task_index value(s) [2, 3, 4, 5, 6, 7] have no task (the table has 2) (2 occurrences: "
                                f"{T003_GROUP}; e.g. {_v3_file(0)}, {_v3_file(1)})", 2, {})]


def test_t003_one_file(tmp_path):
    root = _v3(tmp_path)
    _rewrite(root, _v3_file(1), _task_index([3, 2] * 12 + [1]))
    assert _got(_report(root), "T003") == [
        ("T003", "error", _v3_file(1), "task_index value(s) [2, 3] have no task (the table has 2)", 1, {})]


def test_t003_values_between_the_indices_of_a_table_with_a_gap(tmp_path):
    # indices {0, 2}: min/max 0..2 but 1 is no task; the data of episode 1 holds task_index 1
    root = _v2(tmp_path)
    _tasks_jsonl(root, [(0, TASKS[0]), (2, TASKS[1])])
    r = _report(root)
    assert _got(r, "T003") == [("T003", "error", _v2_file(1), "task_index value(s) [1] have no task (the table has 2)",
                                1, {})]


def test_t003_values_below_the_lowest_index(tmp_path):
    # indices 1, 2; file-000 holds episodes 0 (task_index 0) and 1 (task_index 1): its min is below the table, its
    # max is inside it
    root = _v3(tmp_path)
    _tasks_parquet(root, [1, 2], list(TASKS))
    r = _report(root)
    msg = "task_index value(s) [0] have no task (the table has 2)"
    assert _got(r, "T003") == [("T003", "error", _v3_file(0), f"{msg} (2 occurrences; e.g. {_v3_file(0)}, "
                                f"{_v3_file(1)})", 2, {})]


def test_t003_values_above_the_highest_index(tmp_path):
    # one task (index 0); file-000 holds task_index 0 and 1: its min is inside the table, its max above it
    root = _v3(tmp_path, tasks=(TASKS[0],), episode_task=(0, 0, 0))
    _rewrite(root, _v3_file(0), _task_index([0] * 20 + [1] * 15))
    assert _got(_report(root), "T003") == [
        ("T003", "error", _v3_file(0), "task_index value(s) [1] have no task (the table has 1)", 1, {})]


def test_t003_reads_the_column_of_a_file_without_statistics(tmp_path):
    root = _v3(tmp_path)
    _rewrite(root, _v3_file(1), _task_index([0] * 24 + [4]), write_statistics=False)
    assert _got(_report(root), "T003") == [
        ("T003", "error", _v3_file(1), "task_index value(s) [4] have no task (the table has 2)", 1, {})]


def _forge_task_index(path: Path, real: int) -> tuple[int, int]:
    """Rewrite a data file whose task_index holds two values ``lo < hi`` so that its footer still says min ``lo``,
    max ``hi`` while the rows hold ``real`` where they held ``hi`` (the dictionary page of the column is patched).
    Returns ``(lo, hi)``."""
    table = pq.read_table(path)
    lo, hi = sorted(set(table.column("task_index").to_pylist()))
    pq.write_table(table, path, compression="none", use_dictionary=True)
    md = pq.ParquetFile(path).metadata
    assert md.num_row_groups == 1
    index = table.schema.get_field_index("task_index")
    col = md.row_group(0).column(index)
    data = bytearray(path.read_bytes())
    start = col.dictionary_page_offset
    at = data.find(struct.pack("<qq", lo, hi), start, start + col.total_compressed_size)  # the dictionary
    assert at > 0
    data[at + 8:at + 16] = struct.pack("<q", real)
    path.write_bytes(bytes(data))
    assert sorted(set(pq.read_table(path).column("task_index").to_pylist())) == [lo, real]
    stats = pq.ParquetFile(path).metadata.row_group(0).column(index).statistics
    assert (stats.min, stats.max) == (lo, hi)
    return lo, hi


def test_t003_trusts_footer_statistics_that_lie_within_a_gapless_table(tmp_path):
    # family T reads task_index from the footer min/max and only reads the column when they fall outside the
    # table (or the table has a gap): a footer saying 0..1 over the table 0..1 is taken at its word
    root = _v3(tmp_path)
    assert _forge_task_index(root / _v3_file(0), 7) == (0, 1)
    assert _got(_report(root), "T003") == []
    # the same file against a table of one task: 0..1 is outside it, the column is read and shows the 7
    one = _v3(tmp_path, "one", tasks=(TASKS[0],), episode_task=(0, 0, 0))
    shutil.copy(root / _v3_file(0), one / _v3_file(0))
    assert _got(_report(one), "T003") == [
        ("T003", "error", _v3_file(0), "task_index value(s) [7] have no task (the table has 1)", 1, {})]


def test_t003_trusts_footer_statistics_equal_to_the_bounds_of_a_table_not_starting_at_0(tmp_path):
    # the table holds indices 1 and 2 (T007 in v3); file-000 says 1..2 in its footer but holds 1 and 9
    root = _v3(tmp_path)
    _tasks_parquet(root, [1, 2], list(TASKS))
    _rewrite(root, _v3_file(0), _task_index([1] * 20 + [2] * 15))
    _rewrite(root, _v3_file(1), _task_index([2] * 25))
    assert _forge_task_index(root / _v3_file(0), 9) == (1, 2)
    assert _got(_report(root), "T003") == []


def test_t003_goes_on_past_files_it_cannot_judge(tmp_path):
    # file-000 has no task_index column, file-001 a float one (values out of range, not integers: S003's), file-002
    # integer values with no task: only the last is T003
    root = _v3(tmp_path, episodes_per_file=1)
    _rewrite(root, _v3_file(0), lambda t: t.drop_columns(["task_index"]))
    _rewrite(root, _v3_file(1), lambda t: _set_column(t, "task_index", pa.array([5.0] * 15, pa.float64())))
    _rewrite(root, _v3_file(2), _task_index([0] * 24 + [6]))
    assert _got(_report(root), "T003") == [
        ("T003", "error", _v3_file(2), "task_index value(s) [6] have no task (the table has 2)", 1, {})]


def test_t003_against_an_empty_task_table(tmp_path):
    root = _v3(tmp_path)
    _tasks_parquet(root, [], [])
    r = _report(root)
    assert _got(r, "T003") == [
        ("T003", "error", _v3_file(0), "task_index value(s) [0, 1] have no task (the table has 0) (2 occurrences: "
         f"{T003_GROUP}; e.g. {_v3_file(0)}, {_v3_file(1)})", 2, {})]


def test_t003_is_not_said_not_checked_when_only_the_data_files_are_missing(tmp_path):
    root = _v3(tmp_path)
    shutil.rmtree(root / "data")
    r = _report(root)
    assert _got(r, "T") == []
    assert [n for n in _notes(r) if n[0].startswith("T")] == []


def test_distinct_task_indices(tmp_path):
    path = tmp_path / "t.parquet"
    pq.write_table(pa.table({"task_index": pa.array([3, None, 1, 3], pa.int64())}), path)
    assert _distinct_task_indices(path) == {1, 3}  # nulls are no value
    pq.write_table(pa.table({"task_index": pa.array([2, 2], pa.int32())}), path)
    assert _distinct_task_indices(path) == {2}
    pq.write_table(pa.table({"task_index": pa.array([2.0], pa.float64())}), path)
    assert _distinct_task_indices(path) is None  # not an integer column
    pq.write_table(pa.table({"other": pa.array([2], pa.int64())}), path)
    assert _distinct_task_indices(path) is None  # no such column
    assert _distinct_task_indices(tmp_path / "absent.parquet") is None


def test_distinct_task_indices_reads_only_that_column(tmp_path):
    # another column's pages are garbage: the whole table cannot be read, task_index still can
    path = tmp_path / "t.parquet"
    pq.write_table(pa.table({"task_index": pa.array([0, 4, 2], pa.int64()), "x": pa.array([0.5, 1.5, 2.5])}), path)
    col = pq.ParquetFile(path).metadata.row_group(0).column(1)
    start = col.dictionary_page_offset if col.has_dictionary_page else col.data_page_offset
    data = bytearray(path.read_bytes())
    data[start:start + col.total_compressed_size] = b"\xff" * col.total_compressed_size
    path.write_bytes(bytes(data))
    with pytest.raises(OSError):
        pq.read_table(path)
    assert _distinct_task_indices(path) == {0, 2, 4}


# ================================================================== family S: features against the schema
def test_signature_is_the_sorted_names_and_arrow_types():
    schema = pa.schema([("b", pa.int64()), ("a", pa.list_(pa.float32(), 2)), ("c", pa.float64())])
    assert _signature(schema) == (("a", "fixed_size_list<item: float>[2]"), ("b", "int64"), ("c", "double"))
    assert _signature(pa.schema([])) == ()


def _s_dataset(tmp_path: Path, n: int = 3, name: str = "s", **kw) -> Path:
    """v2.1, ``n`` episodes of 2 frames (one data file each); features observation.state (float32 [2]) and the
    5 defaults."""
    return _v2(tmp_path, name, episode_lengths=(2,) * n, state_dim=2, action_dim=0, **kw)


def test_a_clean_schema_raises_no_s_finding(tmp_path):
    r = _report(_s_dataset(tmp_path))
    assert _got(r, "S") == []
    assert [n for n in _notes(r) if n[0].startswith("S")] == []


def test_s001_s002_s003_of_one_file_in_report_order(tmp_path):
    # a camera is declared (dtype video): it has no column and that is right
    root = _s_dataset(tmp_path, video_keys=("observation.images.front",))

    def mangle(t: pa.Table) -> pa.Table:
        t = t.drop_columns(["frame_index"])
        t = _set_column(t, "timestamp", t.column("timestamp").cast(pa.float64()))
        t = t.add_column(0, "extra", pa.array([7, 8], pa.int64()))  # undeclared, first in the file
        # the metadata describes the file as it is (as datasets writes it): the drifted timestamp is left to S003
        return t.replace_schema_metadata(_hf_metadata(t, {"timestamp": hf_feature_json("float64", [1]),
                                                          "frame_index": None}))

    _rewrite(root, _v2_file(0), mangle)
    r = _report(root)
    f0 = _v2_file(0)
    assert _got(r, "S") == [
        ("S001", "error", f0, "declared feature 'frame_index' has no column in the data (datasets fills it with None)",
         1, {"feature": "frame_index"}),
        ("S002", "error", f0, "column 'extra' (int64) is not declared in info.json features", 1,
         {"feature": "extra"}),
        # after the undeclared column the others are still compared
        # a float width loads everywhere (each loader hands out the declared float type): a warning
        ("S003", "warning", f0, "column 'timestamp' stores float64 (double) but info.json declares float32 (a "
                                "warning: loaders hand out the declared float type, lerobot 0.4.4 through datasets' "
                                "cast to the features, lerobot 0.3.3 through torch.tensor of Python floats)", 1,
         {"feature": "timestamp"}),
        ("S007", "error", f0, "1 data file(s) differ from the schema of the other 2: extra column 'extra'; no column "
         "'frame_index'; 'timestamp' is double (others: float)", 1,
         {"feature": ["extra", "frame_index", "timestamp"]}),
    ]


def test_s002_of_files_with_one_schema_is_one_grouped_finding(tmp_path):
    root = _s_dataset(tmp_path)
    for i in range(3):
        _rewrite(root, _v2_file(i), lambda t: t.append_column("extra", pa.array([1, 2], pa.int32())))
    r = _report(root)
    files = ", ".join(_v2_file(i) for i in range(3))
    assert _got(r, "S") == [("S002", "error", _v2_file(0), "column 'extra' (int32) is not declared in info.json "
                             f"features (3 occurrences; e.g. {files})", 3, {"feature": "extra"})]


def test_s004_and_s005_keep_their_severities(tmp_path):
    root = _s_dataset(tmp_path, n=1)
    state = pa.array([[0.0, 1.0], [2.0, 3.0]], pa.list_(pa.float32()))  # variable-length: S005, a warning
    stamp = pa.array([[0.0], [0.1]], pa.list_(pa.float32(), 1))  # a one-element list for shape [1]: S004
    _rewrite(root, _v2_file(0), lambda t: _set_column(_set_column(t, "observation.state", state), "timestamp", stamp))
    r = _report(root)
    f0 = _v2_file(0)
    assert _got(r, "S") == [
        # parquet names a list's items "element": that is the type pyarrow reads back
        ("S005", "warning", f0, "column 'observation.state' is a variable-length list (list<element: float>) where "
         "shape [2] declares fixed_size_list[2]", 1, {"feature": "observation.state"}),
        ("S004", "error", f0, "column 'timestamp' is a one-element list (fixed_size_list<element: float>[1]) but "
         "shape [1] declares a scalar: the cast fails (TypeError: Couldn't cast array of type ... to float32)", 1,
         {"feature": "timestamp"}),
    ]


def test_s006_missing_metadata_is_info_and_a_pandas_round_trip_a_warning(tmp_path):
    # two files with one schema and no `huggingface` key; the second has a `pandas` key: each gets its own S006
    root = _s_dataset(tmp_path, n=2)
    _rewrite(root, _v2_file(0), lambda t: t.replace_schema_metadata(None))
    _rewrite(root, _v2_file(1), lambda t: t.replace_schema_metadata({b"pandas": b'{"index_columns": []}'}))
    r = _report(root)
    assert _got(r, "S") == [
        ("S006", "info", _v2_file(0), "no `huggingface` schema metadata", 1, {}),
        ("S006", "warning", _v2_file(1), "no `huggingface` schema metadata: replaced by `pandas` metadata (a pandas "
         "round-trip)", 1, {}),
    ]


def test_s006_is_worked_out_per_metadata_not_only_per_schema(tmp_path):
    # one schema, two metadata: file 0 as written, file 1 with an entry for no column and a wrong dtype
    root = _s_dataset(tmp_path, n=2)
    stale = {"dtype": "float32", "_type": "Value"}
    _rewrite(root, _v2_file(1), lambda t: t.replace_schema_metadata(_hf_metadata(
        t, {"gone": stale, "observation.state": hf_feature_json("float64", [2])})))
    r = _report(root)
    assert _got(r, "S") == [
        ("S006", "warning", _v2_file(1), "`huggingface` metadata describes 'observation.state' as float64 [2], "
         "info.json declares float32 [2]", 1, {"feature": "observation.state"}),
        ("S006", "warning", _v2_file(1), "`huggingface` metadata describes 'gone', which is neither declared nor a "
         "column", 1, {"feature": "gone"}),
    ]


def test_s006_ignored_leaves_the_other_s_findings(tmp_path):
    root = _s_dataset(tmp_path, n=1)
    _rewrite(root, _v2_file(0), lambda t: t.append_column("extra", pa.array([1, 2], pa.int64()))
             .replace_schema_metadata(None))
    r = _report(root, ignore={"S006"})
    assert [f.check for f in r.findings if f.check.startswith("S")] == ["S002"]
    assert [f.check for f in _report(root).findings if f.check.startswith("S")] == ["S002", "S006"]


# ------------------------------------------------------------------ S007: files that differ from the majority
def _cast(name: str, typ: pa.DataType):
    return lambda t: _set_column(t, name, t.column(name).cast(typ))


def test_s007_names_the_minority_files_and_at_most_four_differences(tmp_path):
    root = _s_dataset(tmp_path, n=5)

    def five(t: pa.Table) -> pa.Table:  # 5 differences, in name order: episode_index, extra, frame_index, index,
        t = _cast("episode_index", pa.int32())(t)  # timestamp
        t = _cast("index", pa.int32())(_cast("timestamp", pa.float64())(t))
        return t.drop_columns(["frame_index"]).append_column("extra", pa.array([1, 2], pa.int64()))

    for i in (3, 4):
        _rewrite(root, _v2_file(i), five)
    r = _report(root, select={"S007"})
    assert _got(r, "S") == [
        ("S007", "error", _v2_file(3), "2 data file(s) differ from the schema of the other 3: 'episode_index' is int32 "
         "(others: int64); extra column 'extra'; no column 'frame_index'; 'index' is int32 (others: int64); ...", 1,
         {"feature": ["episode_index", "extra", "frame_index", "index", "timestamp"]}),
    ]


def test_s007_four_differences_are_all_shown(tmp_path):
    root = _s_dataset(tmp_path, n=3)
    _rewrite(root, _v2_file(2), lambda t: _cast("index", pa.int32())(_cast("timestamp", pa.float64())(
        _cast("episode_index", pa.int32())(t))).drop_columns(["frame_index"]))
    r = _report(root, select={"S007"})
    assert _got(r, "S") == [
        ("S007", "error", _v2_file(2), "1 data file(s) differ from the schema of the other 2: 'episode_index' is int32 "
         "(others: int64); no column 'frame_index'; 'index' is int32 (others: int64); 'timestamp' is double (others: "
         "float)", 1, {"feature": ["episode_index", "frame_index", "index", "timestamp"]}),
    ]


def test_s007_two_files_each_its_own_schema_the_first_is_the_reference(tmp_path):
    root = _s_dataset(tmp_path, n=2)
    _rewrite(root, _v2_file(1), _cast("index", pa.int32()))
    r = _report(root, select={"S007"})
    assert _got(r, "S") == [("S007", "error", _v2_file(1), "1 data file(s) differ from the schema of the other 1: "
                             "'index' is int32 (others: int64)", 1, {"feature": ["index"]})]


def test_s007_each_minority_schema_is_its_own_finding(tmp_path):
    root = _s_dataset(tmp_path, n=4)
    _rewrite(root, _v2_file(1), _cast("index", pa.int32()))
    _rewrite(root, _v2_file(3), _cast("frame_index", pa.int32()))
    r = _report(root, select={"S007"})
    assert _got(r, "S") == [
        ("S007", "error", _v2_file(1), "1 data file(s) differ from the schema of the other 2: 'index' is int32 "
         "(others: int64)", 1, {"feature": ["index"]}),
        ("S007", "error", _v2_file(3), "1 data file(s) differ from the schema of the other 2: 'frame_index' is int32 "
         "(others: int64)", 1, {"feature": ["frame_index"]}),
    ]


def test_s007_ignored_or_a_single_file(tmp_path):
    root = _s_dataset(tmp_path, n=2)
    _rewrite(root, _v2_file(1), _cast("index", pa.int32()))
    assert _got(_report(root, ignore={"S007"}), "S") == [
        ("S003", "error", _v2_file(1), "column 'index' stores int32 (int32) but info.json declares int64", 1,
         {"feature": "index"})]
    one = _s_dataset(tmp_path, n=1, name="one")
    _rewrite(one, _v2_file(0), _cast("index", pa.int32()))
    assert [f.check for f in _report(one).findings if f.check.startswith("S")] == ["S003"]


# ------------------------------------------------------------------ S: "not checked"
NO_DATA = ("S001-S007", "the metadata references no data files")


def test_s_is_said_not_checked_when_the_metadata_references_no_data_file(tmp_path):
    root = _v3(tmp_path)
    path = root / "meta/episodes/chunk-000/file-000.parquet"
    pq.write_table(pq.read_table(path).slice(0, 0), path)  # readable, no episode
    shutil.rmtree(root / "data")
    r = _report(root, select=S_IDS)
    assert NO_DATA in _notes(r)


def test_s_is_not_said_not_checked_for_that_when_the_data_files_are_missing(tmp_path):
    root = _v3(tmp_path)
    shutil.rmtree(root / "data")
    notes = _notes(_report(root))
    assert NO_DATA not in notes
    assert ("S001-S007, R001-R004, C002/C005 for unreadable files",
            "2 of 2 data file(s) missing or unreadable") in notes  # the files family says it, not S


def test_s_is_not_said_not_checked_for_that_when_the_episode_metadata_is_unreadable(tmp_path):
    # v3.0 without episode metadata: the data files are those on disk that fit data_path, here none; nothing
    # says the metadata references no data file, since it could not be read
    root = _v3(tmp_path)
    shutil.rmtree(root / "meta/episodes")
    shutil.rmtree(root / "data")
    r = _report(root, select=S_IDS)
    assert NO_DATA not in _notes(r)
    assert _got(r, "S") == []
