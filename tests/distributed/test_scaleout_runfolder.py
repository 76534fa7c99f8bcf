"""Run folders that cannot be forged, and sizes that cannot be claimed: ``lrtool report`` and ``--shard`` against
a run folder edited by hand (the commands run in this process through click's runner, except those that could
allocate without bound).

A run folder is a plan (``plan.json``: the run's random identity and the digest of its request), the tasks'
parts and the render options; every part and the render file must carry the plan's identity and digest, nothing
in the folder names a file lrtool writes outside it, no file is read there through a symbolic link, every file
read is capped at 64 MiB, and no number read there (or given as ``--shard``/``--tasks``) allocates one entry per
rank beyond :data:`~lerobot_tools.distributed.partition.MAX_TASKS`. Every refusal is one line, exit 2. The
commands that could allocate without bound run in a subprocess under a 2 GiB address-space limit, so a regression
fails with a MemoryError instead of taking the machine's memory.
"""

from __future__ import annotations

import json
import resource
import shutil
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from tests.distributed.scaleout_data import REPO, env

from lerobot_tools.cli import cli

FIXTURES = REPO / "fixtures" / "datasets"
CLEAN = [FIXTURES / "clean_v21", FIXTURES / "clean_v30"]
BROKEN = [FIXTURES / "broken_wrong_totals", FIXTURES / "broken_timestamps"]


def lrtool(*args, **env_vars: str) -> SimpleNamespace:
    """``lrtool ARGS`` in this process (click's CliRunner): exit status, stdout, stderr, and the exception a
    command let escape (a traceback, for the user)."""
    from click.testing import CliRunner

    r = CliRunner(env=env_vars or None).invoke(cli, [str(a) for a in args])
    escaped = r.exception if r.exception is not None and not isinstance(r.exception, SystemExit) else None
    stderr = r.stderr + (f"Traceback: {type(escaped).__name__}: {escaped}\n" if escaped is not None else "")
    return SimpleNamespace(returncode=r.exit_code, stdout=r.stdout, stderr=stderr)


def one_line_error(r, text: str) -> None:
    assert r.returncode == 2, (r.returncode, r.stdout[-500:], r.stderr[-2000:])
    assert r.stderr.count("\n") == 1 and "Traceback" not in r.stderr, r.stderr[-2000:]
    assert r.stderr.startswith("lrtool: error: ") and text in r.stderr, r.stderr


def capped(*args, cwd: Path | None = None, timeout: float = 120) -> subprocess.CompletedProcess:
    """``lrtool ARGS`` with at most 2 GiB of address space (a list of 10**9 ranks fails at once)."""
    limit = 2 << 30

    def limit_memory() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))

    return subprocess.run([sys.executable, "-m", "lerobot_tools", *map(str, args)], cwd=cwd, env=env(),
                          capture_output=True, text=True, timeout=timeout, preexec_fn=limit_memory)


def shards(folder: Path, targets: list[Path], world: int, *, ranks=None, out: str = "part-{rank}.json") -> None:
    """``lrtool validate TARGETS --shard RANK/WORLD --part-out FOLDER/...`` for each rank."""
    for rank in (range(world) if ranks is None else ranks):
        r = lrtool("validate", *targets, "--shard", f"{rank}/{world}", "--part-out", folder / out.format(rank=rank))
        assert r.returncode == 0, r.stderr[-2000:]


def edit_json(path: Path, change) -> None:
    doc = json.loads(path.read_text())
    change(doc)
    path.write_text(json.dumps(doc))


def redigest(doc: dict) -> None:
    """What a forger does after changing a plan's or a part's request: recompute its digest."""
    from lerobot_tools.distributed.plan import request_digest

    doc["request"] = request_digest(doc["command"], doc["world"], doc["cwd"], doc["spec"])


# ------------------------------------------------------------------------------------ parts tied to their plan
def test_a_parts_folder_linked_to_another_runs_parts_is_refused(tmp_path):
    """The other run's parts would merge into the other run's report, printed as this run's with exit 0."""
    other = tmp_path / "other"
    shards(other / "parts", CLEAN, 2)
    assert lrtool("report", other / "parts").returncode == 0  # the other run: clean, exit 0
    run = tmp_path / "run"
    shards(run, BROKEN, 2, ranks=[0])
    (run / "part-0.json").unlink()  # this run: planned, no task finished yet
    (run / "parts").symlink_to(other / "parts", target_is_directory=True)
    one_line_error(lrtool("report", run), "parts folder is a symbolic link")
    one_line_error(lrtool("report", "merge", run), "parts folder is a symbolic link")


def test_a_part_file_linked_from_elsewhere_is_refused(tmp_path):
    run = tmp_path / "run"
    shards(run, CLEAN, 2)
    moved = tmp_path / "elsewhere.json"
    (run / "part-1.json").rename(moved)
    (run / "part-1.json").symlink_to(moved)
    one_line_error(lrtool("report", run), "part file is a symbolic link")
    # named on the command line, the same file is the user's choice: followed, and checked against the plan
    r = lrtool("report", "merge", run / "part-0.json", run / "part-1.json")
    assert r.returncode == 0, r.stderr[-2000:]


def test_parts_of_another_run_of_the_same_request_are_refused(tmp_path):
    """Two runs of the same command line in two folders: each has its own identity, so the parts of one are not
    those of the other (the datasets may have changed in between)."""
    a, b = tmp_path / "a", tmp_path / "b"
    shards(a, CLEAN, 2)
    shards(b, CLEAN, 2)
    pa, pb = json.loads((a / "plan.json").read_text()), json.loads((b / "plan.json").read_text())
    assert pa["request"] == pb["request"] and pa["run"] != pb["run"]
    for rank in (0, 1):
        shutil.copy(b / f"part-{rank}.json", a / f"part-{rank}.json")
    one_line_error(lrtool("report", a), "belongs to another run")
    one_line_error(lrtool("report", "merge", a / "part-0.json", b / "part-1.json"), "belongs to another run")


def test_a_part_whose_spec_was_edited_is_refused(tmp_path):
    run = tmp_path / "run"
    shards(run, CLEAN, 2)
    edit_json(run / "part-1.json", lambda d: d["spec"]["options"].update(deep=True))
    one_line_error(lrtool("report", run), "part file was modified after it was written")
    # re-digested, it is a part of another request: not the plan's
    edit_json(run / "part-1.json", redigest)
    one_line_error(lrtool("report", run), "belongs to another run")


def test_a_part_claiming_work_the_plan_gave_another_rank_is_refused(tmp_path):
    run = tmp_path / "run"
    shards(run, CLEAN, 2)
    p0, p1 = (json.loads((run / f"part-{r}.json").read_text()) for r in (0, 1))
    assert p0["items"] != p1["items"]

    def claim(doc):  # rank 1 says it did rank 0's work, with rank 0's results
        doc["items"], doc["entries"] = p0["items"], p0["entries"]

    edit_json(run / "part-1.json", claim)
    one_line_error(lrtool("report", run), "its work items are not those the plan gives rank 1")

    def mismatch(doc):  # entries that are not those of its own items
        doc["entries"] = p0["entries"]

    shutil.copy(run / "part-0.json", tmp_path / "keep.json")
    edit_json(run / "part-1.json", lambda d: d.update(items=p1["items"]))
    edit_json(run / "part-1.json", mismatch)
    one_line_error(lrtool("report", run), "its entries are not those of its work items")


def test_render_options_of_another_run_are_refused(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    shards(a, CLEAN, 1)
    shards(b, CLEAN, 1)
    shutil.copy(b / "render.json", a / "render.json")
    one_line_error(lrtool("report", a), "render options file belongs to another run")


# ---------------------------------------------------------------------- nothing in the folder names a file written
def test_a_baseline_path_recorded_in_the_run_folder_is_never_written(tmp_path):
    run = tmp_path / "run"
    victim = tmp_path / "victim.txt"
    victim.write_text("precious\n")
    shards(run, BROKEN, 2)
    edit_json(run / "render.json", lambda d: d.update(write_baseline=str(victim)))
    one_line_error(lrtool("report", run), "holds 'write_baseline', which is not a render option")
    assert victim.read_text() == "precious\n"
    # the baseline is written where the command line of `lrtool report` says
    edit_json(run / "render.json", lambda d: d.pop("write_baseline"))
    base = tmp_path / "base.json"
    r = lrtool("report", run, "--write-baseline", base)
    assert r.returncode == 1 and "recorded" in r.stderr and base.is_file(), r.stderr[-2000:]
    n = len(json.loads(base.read_text())["findings"])
    assert n > 0 and f"recorded {n} finding(s) in {base}" in r.stderr
    # ...and applies: a validate --shard run with --baseline of it reports every finding as known, exit 0
    again = tmp_path / "again"
    for rank in (0, 1):
        r = lrtool("validate", *BROKEN, "--baseline", base, "--shard", f"{rank}/2", "--part-out",
                   again / f"part-{rank}.json")
        assert r.returncode == 0, r.stderr[-2000:]
    assert str(base) not in (again / "render.json").read_text()  # its findings, not its path
    r = lrtool("report", again, "--format", "json")
    assert r.returncode == 0 and json.loads(r.stdout)["summary"]["known"] == n, r.stderr[-2000:]


def test_write_baseline_goes_to_report_not_to_the_tasks(tmp_path):
    r = lrtool("validate", *CLEAN, "--shard", "0/2", "--part-out", tmp_path / "run" / "part-0.json",
               "--write-baseline", tmp_path / "b.json")
    one_line_error(r, "--write-baseline with --shard")
    assert not (tmp_path / "run").exists() and not (tmp_path / "b.json").exists()
    shards(tmp_path / "run", CLEAN, 1)
    one_line_error(lrtool("report", tmp_path / "run", "--lock", tmp_path / "x.lock"),
                   "--lock applies to a prefetch run, this one is validate")
    assert not (tmp_path / "x.lock").exists()


@pytest.mark.usefixtures("isolated_hub_env")
def test_a_prefetch_lock_path_in_the_run_folder_is_never_written(tmp_path):
    """The lock file is written only where `lrtool report --lock` (or the launching command's --lock) says: a plan
    and parts forged to name another lock path, with their digests recomputed, make `lrtool report` write nothing
    there."""
    from tests.hubserver import HubServer, read_folder

    with HubServer() as srv:
        srv.add_repo("org/a", read_folder(FIXTURES / "clean_v21"))
        mix = tmp_path / "mixture.txt"
        mix.write_text("org/a\n")
        for rank in (0, 1):
            r = lrtool("prefetch", mix, "--local-dir-root", tmp_path / "out", "--shard", f"{rank}/2", "--part-out",
                       tmp_path / "run" / f"part-{rank}.json", HF_ENDPOINT=srv.url)
            assert r.returncode == 0, r.stderr[-2000:]
        served = srv.total()
    victim = tmp_path / "elsewhere" / "victim.lock"
    run = tmp_path / "run"

    def forge(doc):
        doc["spec"]["options"]["lock_path"] = str(victim)
        redigest(doc)

    for name in ("plan.json", "part-0.json", "part-1.json"):
        edit_json(run / name, forge)
    for name in ("render.json",):
        request = json.loads((run / "plan.json").read_text())["request"]
        edit_json(run / name, lambda d: d.update(request=request))
    r = lrtool("report", run, "--format", "json")
    assert r.returncode == 0, r.stderr[-2000:]
    assert not victim.parent.exists() and not (tmp_path / "mixture.lock").exists()
    doc = json.loads(r.stdout)
    assert doc["lock"] is None and doc["requests"] == served  # each task prefetched its repos once
    r = lrtool("report", run, "--lock", tmp_path / "mine.lock")
    assert r.returncode == 0 and (tmp_path / "mine.lock").is_file() and not victim.parent.exists()


# ---------------------------------------------------------------------------------------------- bounded reads
def test_files_of_a_run_folder_are_capped_at_64_mib(tmp_path):
    run = tmp_path / "run"
    shards(run, CLEAN, 2)
    big = run / "part-1.json"
    with open(big, "r+b") as fh:
        fh.truncate((64 << 20) + 1)  # sparse: no disk
    one_line_error(capped("report", run), "part file is 64.0 MiB, over the 64 MiB limit")
    with open(run / "plan.json", "r+b") as fh:
        fh.truncate((64 << 20) + 1)
    one_line_error(capped("report", run), "plan file is 64.0 MiB, over the 64 MiB limit")


def test_a_jobs_file_linked_to_an_endless_device_is_refused(tmp_path):
    run = tmp_path / "run"
    shards(run, CLEAN, 2, ranks=[0])  # incomplete: report looks at the SLURM jobs
    (run / "jobs.json").symlink_to("/dev/zero")
    one_line_error(capped("report", run, timeout=60), "jobs file is a symbolic link")
    (run / "jobs.json").unlink()
    (run / "jobs.json").write_text(json.dumps({"jobs": ["1; rm -rf /"]}))
    one_line_error(capped("report", run, timeout=60), "not an lrtool jobs file")


# ------------------------------------------------------------------------------------- sizes claimed, not real
@pytest.mark.parametrize("args, message", [
    (["--shard", "1/1000000000", "--part-out", "p/part.json"], "WORLD must be at most 100,000"),
    (["--shard", f"0/{10 ** 20}", "--part-out", "p/part.json"], "WORLD must be at most 100,000"),
    (["--executor", "local", "--tasks", "1000000000", "--logging-dir", "d"],
     "1000000000 is not in the range 1<=x<=100000"),
    (["--executor", "local", "--tasks", "2", "--workers", "1000000000", "--logging-dir", "d"], "--workers"),
])
def test_task_counts_are_capped_before_anything_is_allocated(tmp_path, args, message):
    r = capped("validate", *CLEAN, *args, cwd=tmp_path)
    assert r.returncode == 2 and message in r.stderr and "Traceback" not in r.stderr, r.stderr[-2000:]
    assert not (tmp_path / "p").exists() and not (tmp_path / "d").exists()


def test_a_part_claiming_a_huge_world_is_refused_without_allocating(tmp_path):
    run = tmp_path / "run"
    shards(run, CLEAN, 1)
    part = tmp_path / "forged.json"
    shutil.copy(run / "part-0.json", part)

    def huge(doc):
        doc["world"] = 10 ** 12
        redigest(doc)

    edit_json(part, huge)
    one_line_error(capped("report", "merge", part), "world must be an integer from 1 to 100,000")


def test_a_plan_assigning_a_dataset_the_run_does_not_have_is_refused(tmp_path):
    run = tmp_path / "run"
    shards(run, CLEAN[:1], 1)
    edit_json(run / "plan.json", lambda d: d.update(assignment=[[[7, "dataset", None, 10]]]))
    r = lrtool("validate", *CLEAN[:1], "--shard", "0/1", "--part-out", run / "part-0.json")
    one_line_error(r, "rank 0 is assigned dataset 7, the run has 1")
    for bad, message in (([[[0, "file", "../../etc/passwd", 1]]], "not a plain relative path"),
                         ([[[0, "dataset", None, 1], [0, "head", None, 1]]], "dataset 0 is assigned twice"),
                         ([[]], "dataset(s) [0] are assigned to no task")):
        edit_json(run / "plan.json", lambda d: d.update(assignment=bad))
        one_line_error(lrtool("report", run), message)


# ---------------------------------------------------------------------------------------- results and options
def test_a_part_result_of_the_wrong_shape_is_one_line(tmp_path):
    run = tmp_path / "run"
    shards(run, CLEAN, 1)

    def whole(result):  # the report of the dataset validated whole
        return lambda d: next(e for e in d["entries"] if e["kind"] == "dataset").update(result=result)

    edit_json(run / "part-0.json", whole({"x": 1}))
    one_line_error(lrtool("report", run), "the parts hold a result lrtool cannot read "
                                          "(TypeError: DatasetReport has no field(s) ['x'])")
    edit_json(run / "part-0.json", whole([1, 2]))
    one_line_error(lrtool("report", "merge", run), "the parts hold a result lrtool cannot read")


def test_a_missing_last_rank_is_an_incomplete_run_not_a_crash(tmp_path):
    """Whatever the rank missing (the last one included), the merge names it; this needs no datatrove."""
    from lerobot_tools.distributed.parts import IncompleteRun, merge_parts

    run = tmp_path / "run"
    shards(run, CLEAN, 3, ranks=[0, 1])
    with pytest.raises(IncompleteRun) as info:
        merge_parts([run])
    assert info.value.missing == [2] and info.value.world == 3 and info.value.path == str(run)
    assert info.value.message == "2 of 3 task(s) have written their part; missing rank(s) 2"
    r = lrtool("report", "merge", run)
    one_line_error(r, "2 of 3 task(s) have written their part; missing rank(s) 2")
    assert r.stderr == f"lrtool: error: {run}: 2 of 3 task(s) have written their part; missing rank(s) 2\n"
    r = lrtool("report", run)
    assert r.returncode == 3 and "2 of 3 task(s) done (missing rank(s) 2)" in r.stderr, r.stderr


@pytest.mark.parametrize("option", ["--timeout-s", "--poll-s"])
@pytest.mark.parametrize("value", ["nan", "inf", "-inf"])
def test_report_refuses_non_finite_waits(tmp_path, option, value):
    run = tmp_path / "run"
    run.mkdir()
    r = lrtool("report", run, "--wait", option, value)
    assert r.returncode == 2 and "is not a finite number" in r.stderr and "Traceback" not in r.stderr, r.stderr


def test_an_incomplete_run_of_many_tasks_names_the_first_twelve_missing():
    from lerobot_tools.distributed.parts import IncompleteRun

    assert IncompleteRun(list(range(1, 14)), 14).message == (
        "1 of 14 task(s) have written their part; missing rank(s) 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12 ...")
    assert IncompleteRun(list(range(1, 13)), 13).message == (
        "1 of 13 task(s) have written their part; missing rank(s) 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12")


def test_parts_that_are_missing_old_or_given_twice_differently(tmp_path):
    r = lrtool("report", "merge", tmp_path / "nothing.json")
    missing = tmp_path / "nothing.json"
    assert r.returncode == 2 and r.stderr == f"lrtool: error: {missing}: no such part file or folder\n"
    run = tmp_path / "run"
    shards(run, CLEAN, 1)
    old = tmp_path / "old.json"
    shutil.copy(run / "part-0.json", old)
    edit_json(old, lambda d: d.update(lrtool_part=1))
    one_line_error(lrtool("report", "merge", old), "written by an older lrtool (part format 1); run the task again")
    edit_json(old, lambda d: d.update(lrtool_part=3))
    one_line_error(lrtool("report", "merge", old), "not an lrtool part result (lrtool_part: 2)")
    # the same rank twice: accepted when identical, refused when the results differ
    twin = run / "parts" / "part-00000.json"
    twin.parent.mkdir()
    shutil.copy(run / "part-0.json", twin)
    assert lrtool("report", run).returncode == 0
    edit_json(twin, lambda d: d["entries"][0]["result"].update(target="elsewhere"))
    r = lrtool("report", run)
    one_line_error(r, "rank 0 is given twice with different results")
    assert r.stderr.startswith(f"lrtool: error: {twin}: rank 0")


def test_a_part_goes_where_it_is_asked_even_below_new_folders(tmp_path):
    from lerobot_tools.checks.context import ValidateOptions
    from lerobot_tools.dataset.targets import resolve_targets
    from lerobot_tools.distributed import validate_job
    from lerobot_tools.distributed.parts import read_part, run_shard
    from lerobot_tools.distributed.plan import load_or_create

    targets = resolve_targets([str(p) for p in CLEAN])
    plan = load_or_create(tmp_path / "run", "validate", 1, validate_job.make_spec(targets, ValidateOptions()),
                          validate_job.JOB.sizes)
    out = tmp_path / "a" / "b" / "part.json"
    part = run_shard(plan, 0, out)
    assert read_part(out)["entries"] == part["entries"] and part["run"] == plan.id


def test_render_options_hold_only_what_lrtool_writes_there(tmp_path):
    run = tmp_path / "run"
    shards(run, CLEAN, 1)
    good = json.loads((run / "render.json").read_text())
    assert set(good) == {"lrtool_render", "run", "request", "format"}
    for change, message in (
            ({"format": "xml"}, "render options file names format 'xml'"),
            ({"format": ["json"]}, "holds 'format', which is not a render option of lrtool"),
            ({"baseline_known": ["a" * 32, 7]},
             "render options file holds a baseline fingerprint that is not a string"),
            ({"lrtool_render": 2}, "not an lrtool render options file (lrtool_render: 1)")):
        (run / "render.json").write_text(json.dumps({**good, **change}))
        r = lrtool("report", run)
        one_line_error(r, message)
        assert r.stderr.startswith(f"lrtool: error: {run / 'render.json'}: "), r.stderr
    (run / "render.json").unlink()
    (run / "render.json").mkdir()  # the render options cannot be written
    r = lrtool("validate", *CLEAN, "--shard", "0/1", "--part-out", run / "part-0.json")
    one_line_error(r, "render.json: is a folder, not a regular file; lrtool replaces only regular files")


@pytest.mark.parametrize("path, ok", [
    ("data/chunk-000/file-000.parquet", True), ("videos/a b/episode_000001.mp4", True), ("x", True),
    ("/etc/passwd", False), ("data/../../x", False), ("..", False), ("./data/x", False), ("data//x", False),
    ("data/x/", False), ("", False), ("data\\x", False), ("\\x", False), ("/", False), ("data/\x1bx", False),
    ("data/\x1f", False), ("data/\x7f", False), (" ", True), ("data/ x", True), (None, False), (7, False),
])
def test_only_plain_relative_paths_are_work_items(path, ok):
    from lerobot_tools.distributed.plan import safe_relpath

    assert safe_relpath(path) is ok


def test_an_assignment_deals_every_dataset_exactly_once():
    from lerobot_tools.distributed.partition import WorkItem as W
    from lerobot_tools.distributed.plan import check_assignment

    check_assignment([[W(0, "dataset", None, 5)], [W(1, "head", None, 1), W(1, "file", "a", 2)],
                      [W(1, "file", "b", 3)]], 2)
    for n, bad, message in (
            (2, [[W(0, "dataset", None, 5)], [W(2, "dataset", None, 1)]],
             "rank 1 is assigned dataset 2, the run has 2"),
            (1, [[W(-1, "dataset", None, 5)]], "rank 0 is assigned dataset -1, the run has 1"),
            (1, [[W(0, "dataset", None, -1)]], "rank 0 has an item of -1 bytes"),
            (1, [[W(0, "head", None, 1), W(0, "file", "a", 1)], [W(0, "file", "a", 1)]],
             "file 'a' of dataset 0 is assigned twice"),
            (1, [[W(0, "dataset", "a", 1)]], "rank 0 has a dataset item with a path"),
            (1, [[W(0, "dataset", None, 1)], [W(0, "dataset", None, 1)]], "dataset 0 is assigned twice"),
            (1, [[W(0, "head", None, 1)], [W(0, "dataset", None, 1)]], "dataset 0 is assigned twice"),
            (2, [[W(1, "dataset", None, 1)]], "dataset(s) [0] are assigned to no task"),
            (1, [[W(0, "dataset", None, 1), W(0, "file", "a", 1)]], "dataset 0 has file items but no head item"),
            (1, [[W(0, "file", "/a", 1), W(0, "head", None, 1)]], "not a plain relative path: '/a'")):
        with pytest.raises(ValueError) as info:
            check_assignment(bad, n)
        assert message in str(info.value), (bad, str(info.value))


def test_sizes_count_a_missing_file_as_empty_and_an_unreadable_target_as_one_unsplit_byte(tmp_path):
    from lerobot_tools.checks.context import ValidateOptions
    from lerobot_tools.dataset.targets import resolve_targets
    from lerobot_tools.distributed import validate_job
    from lerobot_tools.distributed.partition import DatasetSize

    ds = tmp_path / "ds"
    shutil.copytree(CLEAN[0], ds)
    victim = sorted((ds / "data").rglob("*.parquet"))[0]
    victim.unlink()
    (tmp_path / "no_info").mkdir()
    targets = resolve_targets([str(ds), str(tmp_path / "nothing"), str(tmp_path / "no_info")])
    sizes = validate_job.JOB.sizes(validate_job.make_spec(targets, ValidateOptions()))
    files = dict(sizes[0].files)
    assert files[victim.relative_to(ds).as_posix()] == 0 and all(n > 0 for rel, n in files.items()
                                                               if rel != victim.relative_to(ds).as_posix())
    assert sizes[1] == sizes[2] == DatasetSize(1)
    # such a run still plans, runs and merges: the missing file and the unresolved targets are findings
    r = lrtool("validate", ds, tmp_path / "nothing", tmp_path / "no_info", "--shard", "0/1", "--part-out",
               tmp_path / "run" / "part-0.json")
    assert r.returncode == 0, r.stderr
    assert lrtool("report", tmp_path / "run").returncode == 1


def test_a_dataset_sized_by_file_weighs_its_files_plus_its_head():
    """reshard's dataset-level work counts one byte, validate's its metadata: the weights the partition balances."""
    from lerobot_tools.checks.context import ValidateOptions
    from lerobot_tools.dataset.targets import resolve_targets
    from lerobot_tools.distributed import reshard_job, validate_job
    from lerobot_tools.reshard.model import ReshardOptions

    targets = resolve_targets([str(CLEAN[0])])
    data = sum(p.stat().st_size for p in (CLEAN[0] / "data").rglob("*.parquet"))
    (size,) = reshard_job.JOB.sizes(reshard_job.make_spec(targets, ReshardOptions()))
    assert (size.bytes, size.head_bytes) == (data + 1, 1) and sum(n for _, n in size.files) == data
    meta = sum(p.stat().st_size for p in (CLEAN[0] / "meta").rglob("*") if p.is_file())
    (size,) = validate_job.JOB.sizes(validate_job.make_spec(targets, ValidateOptions()))
    assert size.head_bytes == meta and size.bytes == sum(n for _, n in size.files) + meta


def test_the_plan_records_its_request_digest_and_per_rank_bytes(tmp_path):
    """The digest is SHA-256 of the compact, key-sorted JSON of [command, world, cwd, spec]: plans and parts written
    by one version stay readable by the next only while that form does not change."""
    import hashlib

    from lerobot_tools.distributed.plan import request_digest

    spec = {"targets": [{"spec": "é"}], "options": {"b": 1, "a": [1.5, None]}}
    raw = '["validate",3,"/launch",{"options":{"a":[1.5,null],"b":1},"targets":[{"spec":"é"}]}]'
    assert request_digest("validate", 3, "/launch", spec) == hashlib.sha256(raw.encode()).hexdigest()
    run = tmp_path / "run"
    shards(run, CLEAN, 2)
    plan = json.loads((run / "plan.json").read_text())
    assert plan["bytes"] == [sum(it[3] for it in items) for items in plan["assignment"]] and sum(plan["bytes"]) > 0
    edit_json(run / "plan.json", lambda d: d["spec"].pop("targets"))
    edit_json(run / "plan.json", redigest)
    one_line_error(lrtool("report", run), "not a valid lrtool plan file (spec must be an object with a 'targets' list)")


@pytest.mark.parametrize("change, message", [
    (lambda d: d.update(run="zz"), "'run' or 'request' is malformed"),
    (lambda d: d.update(request="0" * 63), "'run' or 'request' is malformed"),
    (lambda d: (d.update(command="frobnicate"), redigest(d)), "unknown command 'frobnicate'"),
    (lambda d: d.update(entries=[5]), "an entry is not {dataset, kind, result}"),
    (lambda d: d.update(rank=1), "rank 1 is outside 0..0"),
    (lambda d: d.update(items=[[9, "dataset", None, 1]]), "a work item is not one of this run's"),
])
def test_a_malformed_part_is_named_with_its_problem(tmp_path, change, message):
    run = tmp_path / "run"
    shards(run, CLEAN, 1)
    part = tmp_path / "part.json"
    shutil.copy(run / "part-0.json", part)
    edit_json(part, change)
    one_line_error(lrtool("report", "merge", part), f"{part}: not a valid part file ({message}")


def test_run_shard_refuses_a_rank_outside_the_plan_and_times_its_work(tmp_path):
    import time

    from lerobot_tools.checks.context import ValidateOptions
    from lerobot_tools.dataset.targets import resolve_targets
    from lerobot_tools.distributed import validate_job
    from lerobot_tools.distributed.parts import run_shard
    from lerobot_tools.distributed.plan import load_or_create
    from lerobot_tools.errors import UsageError

    targets = resolve_targets([str(CLEAN[0])])
    plan = load_or_create(tmp_path / "run", "validate", 2, validate_job.make_spec(targets, ValidateOptions()),
                          validate_job.JOB.sizes)
    for rank in (2, -1):
        with pytest.raises(UsageError, match=rf"^rank {rank} is outside 0\.\.1$"):
            run_shard(plan, rank, tmp_path / "p.json")
    t0 = time.perf_counter()
    part = run_shard(plan, 0, tmp_path / "p.json")
    assert 0 <= part["seconds"] <= time.perf_counter() - t0 + 0.001
