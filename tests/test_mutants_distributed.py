"""Scale-out run folders, plans and parts: the behaviour that planted single-line bugs in
``lerobot_tools/distributed/parts.py`` and ``plan.py`` went unnoticed by (``benchmarks/mutation.py``).

Each test runs real ``lrtool validate --shard`` / ``lrtool prefetch --shard`` tasks on the repository's fixtures (in
this process, through click's runner), edits the run folder the way a user or a forger could, and checks the whole
one-line error, the file it names, or the merged report. Run folders whose parts were copied elsewhere (no
``plan.json`` beside them) take the paths that only parts named on the command line take.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from pathlib import Path
from types import SimpleNamespace

import pytest

from tests.scaleout_data import REPO, comparable

from lerobot_tools.cli import cli
from lerobot_tools.errors import UsageError

FIXTURES = REPO / "fixtures" / "datasets"
CLEAN = [FIXTURES / "clean_v21", FIXTURES / "clean_v30"]


def lrtool(*args, **env_vars: str) -> SimpleNamespace:
    """``lrtool ARGS`` in this process: exit status, stdout, stderr (plus the exception a command let escape)."""
    from click.testing import CliRunner

    r = CliRunner(env=env_vars or None).invoke(cli, [str(a) for a in args])
    escaped = r.exception if r.exception is not None and not isinstance(r.exception, SystemExit) else None
    stderr = r.stderr + (f"Traceback: {type(escaped).__name__}: {escaped}\n" if escaped is not None else "")
    return SimpleNamespace(returncode=r.exit_code, stdout=r.stdout, stderr=stderr)


def shards(folder: Path, targets: list, world: int, *, ranks=None) -> None:
    for rank in (range(world) if ranks is None else ranks):
        r = lrtool("validate", *targets, "--shard", f"{rank}/{world}", "--part-out", folder / f"part-{rank}.json")
        assert r.returncode == 0, r.stderr[-2000:]


def edit_json(path: Path, change) -> None:
    doc = json.loads(path.read_text())
    change(doc)
    path.write_text(json.dumps(doc))


def redigest(doc: dict) -> None:
    from lerobot_tools.distributed.plan import request_digest

    doc["request"] = request_digest(doc["command"], doc["world"], doc["cwd"], doc["spec"])


def planless(tmp_path: Path, run: Path, ranks, name: str = "copied") -> Path:
    """The parts ``ranks`` of ``run`` copied to a new folder without its plan (as named on a command line)."""
    out = tmp_path / name
    out.mkdir()
    for rank in ranks:
        shutil.copy(run / f"part-{rank}.json", out / f"part-{rank}.json")
    return out


def error(r) -> str:
    """The one error line of a refused command (exit 2)."""
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "Traceback" not in r.stderr, r.stderr[-2000:]
    return r.stderr


# ---------------------------------------------------------------------------------------------- finding parts
def test_a_folder_without_parts_is_named(tmp_path):
    empty = tmp_path / "empty"
    empty.mkdir()
    assert error(lrtool("report", "merge", empty)) == (
        f"lrtool: error: {empty}: no part files (part-*.json) in this folder or its parts/ folder\n")


def test_parts_of_one_run_in_two_folders_merge_to_the_runs_report(tmp_path):
    run = tmp_path / "run"
    shards(run, CLEAN, 2)
    whole = lrtool("report", run, "--format", "json")
    a, b = planless(tmp_path, run, [0], "a"), planless(tmp_path, run, [1], "b")
    r = lrtool("report", "merge", a, b, "--format", "json")
    assert (r.returncode, comparable(r.stdout)) == (whole.returncode, comparable(whole.stdout)), r.stderr


def test_parts_of_two_runs_without_a_plan_name_both_runs(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    shards(a, CLEAN, 2)
    shards(b, CLEAN, 2)
    run_a, run_b = (json.loads((x / "plan.json").read_text())["run"] for x in (a, b))
    mixed = planless(tmp_path, a, [0], "mixed")
    shutil.copy(b / "part-1.json", mixed / "part-1.json")
    assert error(lrtool("report", "merge", mixed)) == (
        f"lrtool: error: {mixed / 'part-1.json'}: belongs to another run (run {run_b}, not {run_a})\n")


def test_a_part_of_another_run_is_named_with_the_plans_folder(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    shards(a, CLEAN, 2)
    shards(b, CLEAN, 2)
    run_a, run_b = (json.loads((x / "plan.json").read_text())["run"] for x in (a, b))
    shutil.copy(b / "part-1.json", a / "part-1.json")
    assert error(lrtool("report", a)) == (
        f"lrtool: error: {a / 'part-1.json'}: belongs to another run (run {run_b}, not {run_a} of {a})\n")


def test_parts_named_from_two_run_folders_are_refused_naming_both(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    shards(a, CLEAN, 2)
    shards(b, CLEAN, 2)
    assert error(lrtool("report", "merge", a / "part-0.json", b / "part-1.json")) == (
        f"lrtool: error: {b}: belongs to another run (its plan.json is not that of {a})\n")


def test_the_plan_of_any_folder_named_checks_every_part(tmp_path):
    """The first part named comes from a folder without a plan, the second from a run folder: that run's plan
    still decides which parts belong."""
    a, b = tmp_path / "a", tmp_path / "b"
    shards(a, CLEAN, 2)
    shards(b, CLEAN, 2)
    run_a, run_b = (json.loads((x / "plan.json").read_text())["run"] for x in (a, b))
    stray = planless(tmp_path, b, [0], "stray") / "part-0.json"
    assert error(lrtool("report", "merge", stray, a / "part-1.json")) == (
        f"lrtool: error: {stray}: belongs to another run (run {run_b}, not {run_a} of {a})\n")
    mine = planless(tmp_path, a, [0], "mine") / "part-0.json"
    r = lrtool("report", "merge", mine, a / "part-1.json", "--format", "json")
    whole = lrtool("report", a, "--format", "json")
    assert (r.returncode, comparable(r.stdout)) == (whole.returncode, comparable(whole.stdout)), r.stderr


def test_a_part_claiming_another_ranks_work_is_named(tmp_path):
    run = tmp_path / "run"
    shards(run, CLEAN, 2)
    p0 = json.loads((run / "part-0.json").read_text())
    edit_json(run / "part-1.json", lambda d: d.update(items=p0["items"], entries=p0["entries"]))
    assert error(lrtool("report", run)) == (
        f"lrtool: error: {run / 'part-1.json'}: its work items are not those the plan gives rank 1\n")


# ---------------------------------------------------------------------------------------------- incomplete runs
def test_an_incomplete_run_without_a_plan_is_named_by_its_folder(tmp_path):
    from lerobot_tools.distributed.parts import IncompleteRun, merge_parts

    run = tmp_path / "run"
    shards(run, CLEAN, 2)
    copied = planless(tmp_path, run, [0])
    with pytest.raises(IncompleteRun) as info:
        merge_parts([copied])
    assert (info.value.missing, info.value.world, info.value.path) == ([1], 2, str(copied))
    assert error(lrtool("report", "merge", copied / "part-0.json")) == (
        f"lrtool: error: {copied}: 1 of 2 task(s) have written their part; missing rank(s) 1\n")


def test_an_incomplete_run_with_its_parts_in_parts_is_named_by_the_run_folder(tmp_path):
    """The executors write ``RUN/parts/part-RRRRR.json``: the run folder (where plan.json is) is named."""
    from lerobot_tools.distributed.parts import IncompleteRun, merge_parts

    run = tmp_path / "run"
    shards(run, CLEAN, 2, ranks=[0])
    (run / "parts").mkdir()
    (run / "part-0.json").rename(run / "parts" / "part-00000.json")
    with pytest.raises(IncompleteRun) as info:
        merge_parts([run])
    assert info.value.path == str(run) and info.value.missing == [1]


# ---------------------------------------------------------------------------------------------- merging
def test_parts_that_do_not_cover_every_dataset_are_refused(tmp_path):
    """Without a plan, nothing but the parts says which datasets the run has: a part whose work items and entries
    were emptied (its digest does not cover them) leaves datasets without a result."""
    run = tmp_path / "run"
    shards(run, CLEAN, 2)
    copied = planless(tmp_path, run, [0, 1])
    gone = {it[0] for it in json.loads((copied / "part-1.json").read_text())["items"] if it[1] != "file"}
    assert gone
    edit_json(copied / "part-1.json", lambda d: d.update(items=[], entries=[]))
    assert error(lrtool("report", "merge", copied)) == (
        f"lrtool: error: the parts do not cover dataset(s) {sorted(gone)} of the run\n")


def test_the_gaps_of_a_run_of_many_datasets_show_the_first_eight(tmp_path):
    run = tmp_path / "run"
    shards(run, CLEAN[:1], 1)

    def ten_targets(doc):  # a forged part: ten targets, work on the first one only
        doc["spec"]["targets"] = doc["spec"]["targets"] * 10
        redigest(doc)

    edit_json(run / "part-0.json", ten_targets)
    part = planless(tmp_path, run, [0]) / "part-0.json"
    assert error(lrtool("report", "merge", part)) == (
        "lrtool: error: the parts do not cover dataset(s) [1, 2, 3, 4, 5, 6, 7, 8] of the run\n")


def test_the_merged_run_says_what_produced_it(tmp_path):
    from lerobot_tools.distributed.parts import merge_parts
    from lerobot_tools.distributed.plan import read_plan

    run = tmp_path / "run"
    shards(run, CLEAN, 2)
    plan = read_plan(run / "plan.json")
    merged = merge_parts([run])
    assert (merged.command, merged.spec, merged.world, merged.parts, merged.run, merged.request) == (
        "validate", plan.spec, 2, 2, plan.id, plan.request)
    assert [r.target for r in merged.result] == [str(p) for p in CLEAN]


@pytest.mark.parametrize("inside", [False, True])
def test_a_result_lrtool_cannot_read_names_the_run_folder(tmp_path, inside):
    """In a run folder (parts in it or in its parts/ folder) the run folder is named; parts copied elsewhere
    name their folder."""
    run = tmp_path / "run"
    shards(run, CLEAN, 1)
    edit_json(run / "part-0.json", lambda d: d["entries"][0].update(result={"x": 1}))
    expected = ("the parts hold a result lrtool cannot read (TypeError: DatasetReport has no field(s) ['x']): a part "
                "was edited, or written by another version of lrtool\n")
    if inside:
        (run / "parts").mkdir()
        (run / "part-0.json").rename(run / "parts" / "part-00000.json")
        assert error(lrtool("report", "merge", run)) == f"lrtool: error: {run}: {expected}"
    else:
        copied = planless(tmp_path, run, [0])
        assert error(lrtool("report", "merge", copied / "part-0.json")) == f"lrtool: error: {copied}: {expected}"


def test_tasks_and_merge_resolve_relative_datasets_in_the_launching_directory(tmp_path, monkeypatch):
    """A task started elsewhere (another node's home folder) and the merge both run where the run was launched,
    so a dataset named by a relative path is the same dataset for every one of them."""
    from lerobot_tools.checks.context import ValidateOptions
    from lerobot_tools.dataset.targets import resolve_targets
    from lerobot_tools.distributed import validate_job
    from lerobot_tools.distributed.parts import merge_parts, run_shard
    from lerobot_tools.distributed.plan import load_or_create, part_path
    from lerobot_tools.validate import validate_resolved

    launch, elsewhere = tmp_path / "launch", tmp_path / "elsewhere"
    shutil.copytree(FIXTURES / "broken_wrong_totals", launch / "ds")
    elsewhere.mkdir()
    monkeypatch.chdir(launch)
    targets = resolve_targets(["ds"])
    options = ValidateOptions()
    single = [{**validate_job.report_to_dict(r), "seconds": 0} for r in validate_resolved(targets, options)]
    assert single[0]["findings"]
    for world in (1, 2):  # validated whole by its task; split by file, its head validated by the merge
        monkeypatch.chdir(launch)
        run = tmp_path / f"run{world}"
        plan = load_or_create(run, "validate", world, validate_job.make_spec(targets, options), validate_job.JOB.sizes)
        assert plan.cwd == str(launch)
        assert [it.kind for b in plan.assignment for it in b][0] == ("dataset" if world == 1 else "head")
        monkeypatch.chdir(elsewhere)
        for rank in range(world):
            run_shard(plan, rank, part_path(run, rank))
        merged = merge_parts([run])
        assert os.getcwd() == str(elsewhere)
        assert [{**validate_job.report_to_dict(r), "seconds": 0} for r in merged.result] == single, world


@pytest.mark.usefixtures("isolated_hub_env")
def test_a_task_prefetches_all_its_repos_in_one_run(tmp_path):
    """One task, two repos: one prefetch with one request budget, not one per repo (which the merge would report as
    two tasks sharing the budget)."""
    from tests.hubserver import HubServer, read_folder

    with HubServer() as srv:
        srv.add_repo("org/a", read_folder(FIXTURES / "clean_v21"))
        srv.add_repo("org/b", read_folder(FIXTURES / "clean_v30"))
        mix = tmp_path / "mixture.txt"
        mix.write_text("org/a\norg/b\n")
        r = lrtool("prefetch", mix, "--local-dir-root", tmp_path / "out", "--shard", "0/1", "--part-out",
                   tmp_path / "run" / "part-0.json", HF_ENDPOINT=srv.url)
        assert r.returncode == 0, r.stderr[-2000:]
        served = srv.total()
    r = lrtool("report", tmp_path / "run", "--format", "json")
    doc = json.loads(r.stdout)
    assert r.returncode == 0 and [d["status"] for d in doc["datasets"]] == ["complete", "complete"], r.stderr
    assert doc["requests"] == served
    assert not [n for n in doc["notes"] if "shared the request budget" in n], doc["notes"]


# ---------------------------------------------------------------------------------------------- writing a part
def test_a_part_that_cannot_be_written_is_one_line(tmp_path):
    from lerobot_tools.checks.context import ValidateOptions
    from lerobot_tools.dataset.targets import resolve_targets
    from lerobot_tools.distributed import validate_job
    from lerobot_tools.distributed.parts import run_shard
    from lerobot_tools.distributed.plan import load_or_create

    plan = load_or_create(tmp_path / "run", "validate", 1,
                          validate_job.make_spec(resolve_targets([str(CLEAN[0])]), ValidateOptions()),
                          validate_job.JOB.sizes)
    (tmp_path / "file").write_text("x")
    out = tmp_path / "file" / "sub" / "part.json"
    with pytest.raises(UsageError) as info:
        run_shard(plan, 0, out)
    assert str(info.value) == f"{out}: cannot write the part result (Not a directory)"
    folder = tmp_path / "folder.json"
    folder.mkdir()
    with pytest.raises(UsageError) as info:
        run_shard(plan, 0, folder)
    assert str(info.value).startswith(f"{folder}: part result is a folder, not a regular file")
    assert list(folder.iterdir()) == []


def test_a_part_records_the_bytes_of_its_work_and_its_seconds(tmp_path):
    run = tmp_path / "run"
    shards(run, CLEAN, 2)
    plan = json.loads((run / "plan.json").read_text())
    for rank in (0, 1):
        part = json.loads((run / f"part-{rank}.json").read_text())
        assert part["bytes"] == plan["bytes"][rank] == sum(it[3] for it in part["items"]) > 0
        assert isinstance(part["seconds"], float) and part["seconds"] >= 0


# ---------------------------------------------------------------------------------------------- reading a part
LONG = "z" * 60


@pytest.mark.parametrize("change, message", [
    (lambda d: d.clear(), "not an lrtool part result (lrtool_part: 2)"),
    (lambda d: d.pop("cwd"), "'cwd' is missing or not a str"),
    (lambda d: d.update(spec=[]), "'spec' is missing or not a dict"),
    (lambda d: d.update(items={}), "'items' is missing or not a list"),
    (lambda d: d.pop("entries"), "'entries' is missing or not a list"),
    (lambda d: d.update(run=None), "'run' is missing or not a str"),
    (lambda d: d.update(command=LONG), f"unknown command '{LONG[:40]}'"),
    (lambda d: d.update(rank="x"), "rank x is outside 0..0"),
    (lambda d: d.update(rank="y" * 50), f"rank {'y' * 20} is outside 0..0"),
    (lambda d: d.update(rank=-1), "rank -1 is outside 0..0"),
    (lambda d: d.update(world=0), "world must be an integer from 1 to 100,000, got 0"),
    (lambda d: d.update(items=[[0, "file", "/" + "a" * 100, 1]]),
     "a work item is not one of this run's ([0, 'file', '/" + "a" * 66 + ")"),
    (lambda d: d.update(items=[[0, "file", "../x", 1]]),
     "a work item is not one of this run's ([0, 'file', '../x', 1])"),
    (lambda d: d.update(items=[[1, "dataset", None, 1]]), "a work item is not one of this run's ([1, 'dataset', None"),
    (lambda d: d["entries"][0].pop("kind"), "an entry is not {dataset, kind, result}"),
    (lambda d: d["entries"][0].pop("result"), "an entry is not {dataset, kind, result}"),
    (lambda d: d["entries"][0].update(dataset="0"), "an entry is not {dataset, kind, result}"),
    (lambda d: d["entries"][0].update(kind="everything"), "an entry is not {dataset, kind, result}"),
    (lambda d: d["entries"][0].update(kind="head"), "its entries are not those of its work items"),
])
def test_a_malformed_part_is_refused_with_its_problem(tmp_path, change, message):
    from lerobot_tools.distributed.parts import read_part

    run = tmp_path / "run"
    shards(run, CLEAN[:1], 1)
    part = run / "part-0.json"
    edit_json(part, change)
    with pytest.raises(UsageError) as info:
        read_part(part)
    assert str(info.value).startswith(f"{part}: not a valid part file ({message}"), str(info.value)
    assert "\n" not in str(info.value)


def test_a_part_whose_request_was_edited_says_so_in_full(tmp_path):
    from lerobot_tools.distributed.parts import read_part

    run = tmp_path / "run"
    shards(run, CLEAN[:1], 1)
    part = run / "part-0.json"
    edit_json(part, lambda d: d.update(cwd="/elsewhere"))
    with pytest.raises(UsageError) as info:
        read_part(part)
    assert str(info.value) == (f"{part}: part file was modified after it was written (its request digest does not "
                               "match its content)")


def test_a_part_file_that_is_json_but_not_an_object_is_not_a_part(tmp_path):
    from lerobot_tools.distributed.parts import read_part

    for text in ("[]", "5", '"part"'):
        (tmp_path / "part-0.json").write_text(text)
        with pytest.raises(UsageError) as info:
            read_part(tmp_path / "part-0.json")
        assert str(info.value) == (f"{tmp_path / 'part-0.json'}: not a valid part file (not an lrtool part result "
                                   "(lrtool_part: 2))")


def test_a_split_dataset_part_reads_back(tmp_path):
    """A dataset split by file over two tasks: every part (head, files) reads back and the run merges."""
    from lerobot_tools.distributed.parts import read_part

    run = tmp_path / "run"
    shards(run, CLEAN[:1], 2)
    kinds = set()
    for rank in (0, 1):
        part = read_part(run / f"part-{rank}.json")
        kinds |= {e["kind"] for e in part["entries"]}
        for e in part["entries"]:
            if e["kind"] == "files":
                assert e["files"] == [it.path for it in part["items"] if it.kind == "file"]
    assert kinds == {"head", "files"}
    assert lrtool("report", run).returncode == 0


# ---------------------------------------------------------------------------------------------- symbolic links
def test_links_in_a_run_folder_are_named_in_full(tmp_path):
    run = tmp_path / "run"
    shards(run, CLEAN, 2)
    moved = tmp_path / "elsewhere.json"
    (run / "part-1.json").rename(moved)
    (run / "part-1.json").symlink_to(moved)
    assert error(lrtool("report", run)) == (
        f"lrtool: error: {run / 'part-1.json'}: part file is a symbolic link; a run folder's files must be in it\n")
    (run / "part-1.json").unlink()
    moved.rename(run / "part-1.json")
    (run / "plan.json").rename(tmp_path / "plan.json")
    (run / "plan.json").symlink_to(tmp_path / "plan.json")
    assert error(lrtool("report", run)) == (
        f"lrtool: error: {run / 'plan.json'}: plan file is a symbolic link; a run folder's files must be in it\n")


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


def test_a_part_that_is_not_json_is_named(tmp_path):
    from lerobot_tools.distributed.parts import read_part

    (tmp_path / "part-0.json").write_text('{"lrtool_part": 2, "rank": "x"')
    with pytest.raises(UsageError) as info:
        read_part(tmp_path / "part-0.json")
    assert str(info.value) == (f"{tmp_path / 'part-0.json'}: part file is not valid JSON: Expecting ',' delimiter at "
                               "line 1 column 31")


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

    from tests.scaleout_data import env

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
