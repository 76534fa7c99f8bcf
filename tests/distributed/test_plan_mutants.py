"""Scale-out plans and render options: the behaviour that planted single-line bugs in
``lerobot_tools/distributed/plan.py`` went unnoticed by (``benchmarks/mutation.py``).

As in ``tests/distributed/test_run_mutants.py`` (whose helpers this file uses): real ``lrtool validate --shard`` runs on
the repository's fixtures, plan and render files edited the way a user or a forger could, and the whole one-line
error, the file it names, or the plan written checked.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from pathlib import Path

import pytest

from tests.distributed.scaleout_data import comparable
from tests.distributed.test_run_mutants import CLEAN, LONG, edit_json, error, lrtool, shards

from lerobot_tools.errors import UsageError


# ---------------------------------------------------------------------------------------------- reading a plan
@pytest.mark.parametrize("change, message", [
    (lambda d: d.update(lrtool_plan=1),
     "written by an older lrtool (plan format 1); start the run again in a new folder"),
    (lambda d: d.update(lrtool_plan=3), "not an lrtool plan (lrtool_plan: 2)"),
    (lambda d: d.update(world=0), "world must be an integer from 1 to 100,000, got 0"),
    (lambda d: d.update(world=True), "world must be an integer from 1 to 100,000, got True"),
    (lambda d: d.update(run="zz"), "'run' is missing or malformed"),
    (lambda d: d.pop("run"), "'run' is missing or malformed"),
    (lambda d: d.update(request="0" * 63), "'request' is missing or malformed"),
    (lambda d: d.update(command=LONG), f"unknown command '{LONG[:40]}'"),
    (lambda d: d.update(cwd=7), "'cwd' is missing or not a string"),
    (lambda d: d.pop("spec"), "spec must be an object with a 'targets' list"),
    (lambda d: d.pop("assignment"), "assignment must be a list of 1 task(s)"),
    (lambda d: d.update(assignment={"0": []}), "assignment must be a list of 1 task(s)"),
    (lambda d: d.update(assignment=[[], []]), "assignment must be a list of 1 task(s)"),
    (lambda d: d.update(assignment=[5]), "an assignment entry is not a list"),
    (lambda d: d.update(assignment=[[[0, "dataset", None, 1], [0, "head", None, 1]]]), "dataset 0 is assigned twice"),
])
def test_a_malformed_plan_is_refused_with_its_problem(tmp_path, change, message):
    from lerobot_tools.distributed.plan import read_plan

    run = tmp_path / "run"
    shards(run, CLEAN[:1], 1)
    edit_json(run / "plan.json", change)
    with pytest.raises(UsageError) as info:
        read_plan(run / "plan.json")
    assert str(info.value) == f"{run / 'plan.json'}: not a valid lrtool plan file ({message})"


def test_a_plan_that_is_missing_unreadable_edited_or_not_an_object_is_named(tmp_path):
    from lerobot_tools.distributed.plan import read_plan

    def refusal(path: Path) -> str:
        with pytest.raises(UsageError) as info:
            read_plan(path)
        return str(info.value)

    missing = tmp_path / "nothing" / "plan.json"
    assert refusal(missing) == f"{missing}: plan file not found"
    (tmp_path / "file").write_text("x")
    below = tmp_path / "file" / "plan.json"
    assert refusal(below) == f"{below}: plan file cannot be read (Not a directory)"
    run = tmp_path / "run"
    shards(run, CLEAN[:1], 1)
    edit_json(run / "plan.json", lambda d: d.update(cwd="/elsewhere"))
    assert refusal(run / "plan.json") == (f"{run / 'plan.json'}: plan file was modified after it was written (its "
                                          "request digest does not match its content)")
    (run / "plan.json").write_text("[]")
    assert refusal(run / "plan.json") == (f"{run / 'plan.json'}: not a valid lrtool plan file (not an lrtool plan "
                                          "(lrtool_plan: 2))")
    (run / "plan.json").unlink()
    (run / "plan.json").mkdir()
    assert refusal(run / "plan.json") == (f"{run / 'plan.json'}: plan file is a folder, not a regular file; lrtool "
                                          "only reads regular files")


# ---------------------------------------------------------------------------------------------- creating a plan
def _spec(n: int = 2) -> dict:
    return {"targets": [{} for _ in range(n)], "options": {}}


def _sizer(spec: dict):
    from lerobot_tools.distributed.partition import DatasetSize

    return [DatasetSize(10 * (i + 1)) for i in range(len(spec["targets"]))]


def test_the_number_of_tasks_is_checked_before_anything_is_written(tmp_path):
    from lerobot_tools.distributed.plan import load_or_create

    def sizer(spec):
        raise AssertionError("sized a run whose task count is refused")

    for world, shown in ((0, "0"), (100_001, "100001"), ("2", "2"), (True, "True"), ("w" * 100, "w" * 40)):
        with pytest.raises(UsageError) as info:
            load_or_create(tmp_path / "run", "validate", world, _spec(), sizer)
        assert str(info.value) == f"the number of tasks must be an integer from 1 to 100,000, got {shown}"
    assert not (tmp_path / "run").exists()
    for world in (1, 100_000):  # the bounds are task counts
        assert load_or_create(tmp_path / f"run{world}", "validate", world, _spec(), _sizer).world == world


def test_a_different_request_in_the_same_folder_names_what_differs(tmp_path):
    from lerobot_tools.distributed.plan import load_or_create, read_plan

    run = tmp_path / "run"
    plan = load_or_create(run, "validate", 2, _spec(), _sizer, cwd="/launch")
    assert plan.cwd == read_plan(run / "plan.json").cwd == "/launch"
    tail = "; use a new --logging-dir / part folder, or the same arguments to resume it"
    for change, what in (({"command": "reshard"}, "command"), ({"world": 3}, "number of tasks"),
                         ({"cwd": "/elsewhere"}, "launching directory"),
                         ({"spec": {**_spec(), "options": {"deep": True}}}, "targets or options")):
        a = {"command": "validate", "world": 2, "spec": _spec(), "cwd": "/launch", **change}
        with pytest.raises(UsageError) as info:
            load_or_create(run, a["command"], a["world"], a["spec"], _sizer, cwd=a["cwd"])
        assert str(info.value) == f"{run}: holds a different run (its {what} differ){tail}"
    assert load_or_create(run, "validate", 2, _spec(), _sizer, cwd="/launch") == plan  # the same request resumes it
    here = load_or_create(tmp_path / "here", "validate", 2, _spec(), _sizer)
    assert here.cwd == os.getcwd() and here.id != plan.id and here.request != plan.request


def test_a_plan_is_written_below_new_folders_whatever_the_system_temp_folder(tmp_path, monkeypatch):
    """A cluster node's temporary folder may be missing or full: the plan is written through a temporary file in
    the run folder itself, which is then hard-linked into place and removed."""
    import tempfile

    from lerobot_tools.distributed.plan import load_or_create, read_plan

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "no-such-tmp"))
    run = tmp_path / "a" / "b" / "run"
    plan = load_or_create(run, "validate", 2, _spec(), _sizer)
    assert read_plan(run / "plan.json") == plan and [p.name for p in run.iterdir()] == ["plan.json"]
    assert plan.to_dict()["bytes"] == [sum(it.bytes for it in b) for b in plan.assignment] == [20, 10]
    (tmp_path / "file").write_text("x")
    with pytest.raises(UsageError) as info:
        load_or_create(tmp_path / "file" / "run", "validate", 2, _spec(), _sizer)
    assert str(info.value) == f"{tmp_path / 'file' / 'run' / 'plan.json'}: cannot write the plan (Not a directory)"


def test_a_dataset_with_a_non_utf8_name_plans_runs_and_merges(tmp_path):
    """A folder name that is not UTF-8 (it reaches Python as a lone surrogate) is part of the request digest; the
    merged report is the single-process one (F007: pyarrow cannot open such a path)."""
    from lerobot_tools.distributed.plan import request_digest

    ds = tmp_path / os.fsdecode(b"ds-\xff")
    shutil.copytree(CLEAN[0], ds)
    run = tmp_path / "run"
    shards(run, [ds], 1)
    single = lrtool("validate", ds, "--format", "json")
    merged = lrtool("report", run, "--format", "json")
    assert (merged.returncode, comparable(merged.stdout)) == (single.returncode, comparable(single.stdout)) and (
        single.returncode == 1), merged.stderr
    raw = '["validate",1,"/launch",{"targets":[{"spec":"ds-\udcff"}]}]'
    assert request_digest("validate", 1, "/launch", {"targets": [{"spec": "ds-\udcff"}]}) == (
        hashlib.sha256(raw.encode("utf-8", "surrogatepass")).hexdigest())


# ---------------------------------------------------------------------------------------------- assignments, sizes
def test_an_assignment_may_hold_an_empty_file_and_every_item_of_a_rank_is_checked():
    from lerobot_tools.distributed.partition import WorkItem as W
    from lerobot_tools.distributed.plan import check_assignment

    check_assignment([[W(0, "head", None, 1), W(0, "file", "a", 0)]], 1)  # a missing file is sized 0 bytes
    long = "/" + "p" * 200
    for n, bad, message in (
            (1, [[W(0, "head", None, 1), W(0, "file", "a", 1), W(1, "dataset", None, 1)]],
             "rank 0 is assigned dataset 1, the run has 1"),
            (10, [[]], "dataset(s) [0, 1, 2, 3, 4, 5, 6, 7] are assigned to no task"),
            (1, [[W(0, "head", None, 1), W(0, "file", long, 1)]],
             f"rank 0 is assigned a file path that is not a plain relative path: '{long[:80]}'")):
        with pytest.raises(ValueError) as info:
            check_assignment(bad, n)
        assert str(info.value) == message


def test_task_counts_run_from_one_to_the_maximum():
    from lerobot_tools.distributed.plan import check_world

    assert [check_world(w) for w in (1, 2, 100_000)] == [1, 2, 100_000]
    for bad, shown in ((0, "0"), (-1, "-1"), (100_001, "100001"), (2.0, "2.0"), (None, "None"), ("x" * 100, "x" * 40)):
        with pytest.raises(ValueError) as info:
            check_world(bad, "WORLD")
        assert str(info.value) == f"WORLD must be an integer from 1 to 100,000, got {shown}"


def test_targets_round_trip_through_a_plan(tmp_path):
    from lerobot_tools.dataset.targets import resolve_targets
    from lerobot_tools.distributed.plan import target_from_dict, target_to_dict

    resolved, unresolved = resolve_targets([str(CLEAN[0]), str(tmp_path / "nothing")])
    assert resolved.root is not None and unresolved.root is None and unresolved.error
    for t in (resolved, unresolved):
        d = json.loads(json.dumps(target_to_dict(t)))
        assert target_from_dict(d) == t and target_from_dict({**d, "added_later": 1}) == t
    assert target_to_dict(resolved)["root"] == str(resolved.root) and target_to_dict(unresolved)["root"] is None
    for bad, shown in ((5, "5"), ({"spec": 5}, "{'spec': 5}"), ({"root": "r" * 200}, "{'root': '" + "r" * 70)):
        with pytest.raises(UsageError) as info:
            target_from_dict(bad)
        assert str(info.value) == f"not a serialised target: {shown}"


def test_targets_that_cannot_be_listed_or_are_skipped_weigh_one_unsplit_byte(tmp_path):
    from lerobot_tools.dataset.targets import Target, resolve_targets
    from lerobot_tools.distributed.partition import DatasetSize
    from lerobot_tools.distributed.plan import sizes_by_file

    shutil.copytree(CLEAN[1], tmp_path / "ds")
    (tmp_path / "ds" / "meta" / "episodes" / "chunk-000" / "file-000.parquet").write_bytes(b"garbage")
    (good,) = resolve_targets([str(CLEAN[1])])
    (unlisted,) = resolve_targets([str(tmp_path / "ds")])
    assert unlisted.error is None
    failed = Target(spec="x", root=CLEAN[1], error="the entry's episodes are out of range")

    def data(ds):
        return [f.relpath for f in ds.data_files()]

    files = tuple((rel, (CLEAN[1] / rel).stat().st_size) for rel in sorted(
        p.relative_to(CLEAN[1]).as_posix() for p in (CLEAN[1] / "data").rglob("*.parquet")))
    real = DatasetSize(sum(n for _, n in files) + 1, files, 1)
    assert sizes_by_file([unlisted, good, failed, good], data) == [DatasetSize(1), real, DatasetSize(1), real]
    assert sizes_by_file([good, good], data, skip=[True, False]) == [DatasetSize(1), real]
    assert sizes_by_file([good], data, head=lambda ds: 0) == [DatasetSize(real.bytes - 1, files, 1)]


# ---------------------------------------------------------------------------------------------- render options
def test_render_options_refusals_name_the_file_in_full(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    shards(a, CLEAN, 1)
    shards(b, CLEAN, 1)
    render = a / "render.json"
    good = json.loads(render.read_text())
    shutil.copy(b / "render.json", render)
    assert error(lrtool("report", a)) == f"lrtool: error: {render}: render options file belongs to another run\n"
    for change, message in (
            ({"format": "f" * 50}, f"render options file names format '{'f' * 20}'"),
            ({"baseline_known": [7]}, "render options file holds a baseline fingerprint that is not a string"),
            ({"lrtool_render": 2}, "not an lrtool render options file (lrtool_render: 1)"),
            ({"lock": "/tmp/x.lock"}, "render options file holds 'lock', which is not a render option of lrtool")):
        render.write_text(json.dumps({**good, **change}))
        assert error(lrtool("report", a)) == f"lrtool: error: {render}: {message}\n"
    render.write_text("[]")
    assert error(lrtool("report", a)) == (
        f"lrtool: error: {render}: not an lrtool render options file (lrtool_render: 1)\n")


def test_render_options_keep_only_what_is_set_and_known(tmp_path):
    from lerobot_tools.distributed.plan import load_or_create, read_render, write_render

    plan = load_or_create(tmp_path, "validate", 2, _spec(), _sizer)
    write_render(tmp_path, plan, {"format": None, "baseline_known": ["f" * 32], "write_baseline": "/tmp/b.json"})
    assert json.loads((tmp_path / "render.json").read_text()) == {
        "lrtool_render": 1, "run": plan.id, "request": plan.request, "baseline_known": ["f" * 32]}
    assert read_render(tmp_path, plan.id, plan.request) == {"baseline_known": ["f" * 32]}
    assert read_render(tmp_path / "nothing", plan.id, plan.request) == {}


def test_the_format_the_launching_command_asked_for_is_the_reports(tmp_path):
    run = tmp_path / "run"
    for rank in (0, 1):
        r = lrtool("validate", *CLEAN, "--format", "json", "--shard", f"{rank}/2", "--part-out",
                   run / f"part-{rank}.json")
        assert r.returncode == 0, r.stderr
    assert json.loads((run / "render.json").read_text())["format"] == "json"
    single = lrtool("validate", *CLEAN, "--format", "json")
    r = lrtool("report", run)
    assert (r.returncode, comparable(r.stdout)) == (single.returncode, comparable(single.stdout)), r.stderr


def test_render_options_that_cannot_be_written_are_one_line_and_keep_the_old_ones(tmp_path):
    """The file system refuses the write (here: a file size limit, as a full disk or quota would): one line naming the
    run folder, exit 2; the render options already there and the part are untouched, no temporary file is left."""
    import resource
    import signal
    import subprocess
    import sys

    from tests.distributed.scaleout_data import env

    run = tmp_path / "run"
    shards(run, CLEAN[:1], 1)
    before = {p.name: p.read_bytes() for p in run.iterdir()}

    def small_files() -> None:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # EFBIG instead of the signal
        resource.setrlimit(resource.RLIMIT_FSIZE, (16, 16))

    r = subprocess.run([sys.executable, "-m", "lerobot_tools", "validate", str(CLEAN[0]), "--format", "json",
                        "--shard", "0/1", "--part-out", str(run / "part-0.json")], env=env(), capture_output=True,
                       text=True, timeout=120, preexec_fn=small_files)
    assert (r.returncode, r.stdout, r.stderr) == (2, "", f"lrtool: error: {run}: cannot write render.json (File too "
                                                        "large)\n")
    assert {p.name: p.read_bytes() for p in run.iterdir()} == before
