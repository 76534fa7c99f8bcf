"""Scale-out run folders and parts: the behaviour that planted single-line bugs in
``lerobot_tools/distributed/parts.py`` went unnoticed by (``benchmarks/mutation.py``); ``plan.py``'s are in
``tests/distributed/test_plan_mutants.py``, which uses the helpers here.

Each test runs real ``lrtool validate --shard`` / ``lrtool prefetch --shard`` tasks on the repository's fixtures (in
this process, through click's runner), edits the run folder the way a user or a forger could, and checks the whole
one-line error, the file it names, or the merged report. Run folders whose parts were copied elsewhere (no
``plan.json`` beside them) take the paths that only parts named on the command line take.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from types import SimpleNamespace

import pytest

from tests.distributed.scaleout_data import REPO, comparable

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


def test_a_part_that_is_not_json_is_named(tmp_path):
    from lerobot_tools.distributed.parts import read_part

    (tmp_path / "part-0.json").write_text('{"lrtool_part": 2, "rank": "x"')
    with pytest.raises(UsageError) as info:
        read_part(tmp_path / "part-0.json")
    assert str(info.value) == (f"{tmp_path / 'part-0.json'}: part file is not valid JSON: Expecting ',' delimiter at "
                               "line 1 column 31")


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
