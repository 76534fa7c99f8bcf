"""Scale-out: the partition, ``--shard`` parts, ``lrtool report``, and datatrove's LocalPipelineExecutor.

The merged report of a distributed run must be exactly the single-process one (datasets, findings,
exit status) on the repository's fixtures and on a synthetic mixture whose large datasets are split by
file over the tasks (tests/distributed/scaleout_data.py). Ray and SLURM have their own test files.
"""

from __future__ import annotations

import importlib.util
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.distributed.scaleout_data import REPO, build_mixture, comparable, env, lrtool

from lerobot_tools.checks.context import ValidateOptions
from lerobot_tools.checks.observer import FileObserver
from lerobot_tools.dataset.targets import resolve_targets
from lerobot_tools.distributed import validate_job
from lerobot_tools.distributed.parts import merge_parts, run_shard
from lerobot_tools.distributed.partition import DatasetSize, WorkItem, assign, partition, work_items
from lerobot_tools.distributed.plan import load_or_create, part_path, read_plan
from lerobot_tools.errors import UsageError
from lerobot_tools.validate import validate_resolved

FIXTURE_MIXTURE = REPO / "fixtures" / "mixture.txt"


@pytest.fixture(scope="module")
def mixture(tmp_path_factory) -> Path:
    return build_mixture(tmp_path_factory.mktemp("scaleout"))


@pytest.fixture(scope="module")
def single(mixture) -> dict:
    """``lrtool validate MIXTURE --deep`` in one process: exit status, text and JSON output."""
    text = lrtool("validate", mixture, "--deep")
    doc = lrtool("validate", mixture, "--deep", "--format", "json")
    assert text.returncode == doc.returncode == 1
    return {"rc": 1, "text": text.stdout, "json": comparable(doc.stdout)}


def _dicts(reports) -> list[dict]:
    """The reports as plain data (seconds zeroed), and their text rendering (which needs real objects)."""
    import io

    from lerobot_tools.report import render_text

    buf = io.StringIO()
    render_text(reports, buf)
    return [{**validate_job.report_to_dict(r), "seconds": 0} for r in reports] + [buf.getvalue()]


def _sharded(targets, options: ValidateOptions, world: int, run_dir: Path):
    """Plan, run every rank through the library, merge: the merged reports and the plan."""
    plan = load_or_create(run_dir, "validate", world, validate_job.make_spec(targets, options), validate_job.JOB.sizes)
    for rank in range(world):
        run_shard(plan, rank, part_path(run_dir, rank))
    return merge_parts([run_dir]).result, plan


# ---------------------------------------------------------------------- partition
def test_partition_is_balanced_by_bytes_and_spreads_a_huge_dataset():
    small = [DatasetSize(10 * 2**30) for _ in range(40)]                           # 40 x 10 GB
    huge_files = tuple((f"data/chunk-{i // 1000:03d}/file-{i % 1000:03d}.parquet", 2**30) for i in range(5000))
    sizes = small[:20] + [DatasetSize(5000 * 2**30, huge_files, 2**20)] + small[20:]  # one 5 TB dataset
    bins = partition(sizes, 64)
    loads = [sum(it.bytes for it in b) for b in bins]
    total = sum(loads)
    assert total == 40 * 10 * 2**30 + 5000 * 2**30 + 2**20
    assert max(loads) - min(loads) <= 10 * 2**30                                    # within the largest item
    assert max(loads) <= total / 64 * 1.03
    huge = [it for b in bins for it in b if it.dataset == 20]
    assert len(huge) == 5001 and sum(it.kind == "head" for it in huge) == 1
    assert sum(1 for b in bins if any(it.dataset == 20 for it in b)) == 64          # spread over every task
    flat = sorted((it.order for b in bins for it in b))
    assert len(flat) == len(set(flat)) == 40 + 5001                                 # every item exactly once
    assert partition(sizes, 64) == bins                                             # deterministic
    # balanced by bytes, not by count: one 30 GB dataset weighs as much as three 10 GB ones
    b2 = partition([DatasetSize(30), DatasetSize(10), DatasetSize(10), DatasetSize(10)], 2)
    assert sorted(sum(it.bytes for it in b) for b in b2) == [30, 30]
    assert [[it.dataset for it in b] for b in b2] == [[0], [1, 2, 3]]


def test_partition_small_runs_and_edge_cases():
    assert partition([DatasetSize(5, (("a", 2), ("b", 3)))], 1) == [[WorkItem(0, "dataset", None, 5)]]
    bins = assign(work_items([DatasetSize(1)], 3), 3)
    assert [len(b) for b in bins] == [1, 0, 0]
    # equal sizes: ties go to the lowest rank, items in natural order
    bins = partition([DatasetSize(7) for _ in range(4)], 2)
    assert [[it.dataset for it in b] for b in bins] == [[0, 2], [1, 3]]
    items = work_items([DatasetSize(100, (("x", 50), ("x", 50), ("y", 50)), 3)], 2)
    assert [(it.kind, it.path) for it in items] == [("head", None), ("file", "x"), ("file", "y")]
    with pytest.raises(ValueError):
        partition([DatasetSize(1)], 0)
    with pytest.raises(ValueError):
        WorkItem.from_list([0, "nope", None, 1])


def test_plan_is_written_once_and_a_different_run_is_refused(tmp_path):
    calls = []

    def sizer(spec):
        calls.append(1)
        return [DatasetSize(10), DatasetSize(20)]

    spec = {"targets": [{}, {}], "options": {}}
    p1 = load_or_create(tmp_path, "validate", 2, spec, sizer)
    p2 = load_or_create(tmp_path, "validate", 2, spec, lambda s: [DatasetSize(20), DatasetSize(10)])
    assert p1.id == p2.id and p2.assignment == p1.assignment and len(calls) == 1  # the stored plan wins
    with pytest.raises(UsageError, match="number of tasks"):
        load_or_create(tmp_path, "validate", 3, spec, sizer)
    with pytest.raises(UsageError, match="targets or options"):
        load_or_create(tmp_path, "validate", 2, {**spec, "options": {"deep": True}}, sizer)
    # a plan edited by hand is refused rather than trusted
    doc = json.loads((tmp_path / "plan.json").read_text())
    doc["spec"]["options"] = {"deep": True}
    (tmp_path / "plan.json").write_text(json.dumps(doc))
    with pytest.raises(UsageError, match="modified"):
        read_plan(tmp_path / "plan.json")


# ---------------------------------------------------------------------- --shard parts, library level
@pytest.mark.parametrize("deep", [False, True])
def test_parts_merge_to_the_single_process_report_on_the_fixtures(tmp_path, deep):
    targets = resolve_targets([str(FIXTURE_MIXTURE)] + sorted(str(p) for p in (REPO / "fixtures/datasets").iterdir()))
    options = ValidateOptions(deep=deep)
    single = _dicts(validate_resolved(targets, options))
    for world in (1, 3, 5):
        merged, plan = _sharded(targets, options, world, tmp_path / f"w{world}")
        assert _dicts(merged) == single, world
        if world == 5:  # 26 small datasets over 5 tasks: some are split by file
            assert any(it.kind == "head" for b in plan.assignment for it in b)


@pytest.mark.parametrize("deep", [False, True])
def test_parts_merge_to_the_single_process_report_on_split_datasets(tmp_path, mixture, deep):
    targets = resolve_targets([str(mixture)])
    options = ValidateOptions(deep=deep)
    single = _dicts(validate_resolved(targets, options))
    assert {f["check"] for d in single[:-1] for f in d["findings"]} >= ({"F002", "F007", "D001", "D003"} if deep else {"F002"})
    for world in (2, 4):
        merged, plan = _sharded(targets, options, world, tmp_path / f"w{world}")
        heads = {it.dataset for b in plan.assignment for it in b if it.kind == "head"}
        assert {1, 3} <= heads                                           # big_v30 and big_v21 split by file
        owners = {r for r, b in enumerate(plan.assignment) for it in b if it.dataset == 1 and it.kind == "file"}
        assert len(owners) > 1                                           # spread over several tasks
        assert _dicts(merged) == single, world


def test_merge_replays_what_the_tasks_read(tmp_path, mixture, monkeypatch):
    """The expensive per-file reads of a split dataset happen in its tasks: the merge must not redo them."""
    targets = resolve_targets([str(mixture)])
    options = ValidateOptions(deep=True)
    single = _dicts(validate_resolved(targets, options))
    plan = load_or_create(tmp_path, "validate", 3, validate_job.make_spec(targets, options), validate_job.JOB.sizes)
    for rank in range(3):
        run_shard(plan, rank, part_path(tmp_path, rank))

    def forbidden(*a, **k):
        raise AssertionError("the merge read a file the tasks had read")

    monkeypatch.setattr(FileObserver, "scan_file", forbidden)
    monkeypatch.setattr(FileObserver, "probe_video", forbidden)
    assert _dicts(merge_parts([tmp_path]).result) == single


def test_replay_reads_what_was_not_recorded(mixture):
    from lerobot_tools.checks.engine import validate_contained

    target = resolve_targets([str(mixture)])[1]
    options = ValidateOptions(deep=True)
    replayer = validate_job.Replayer({})
    assert _dicts([validate_contained(target, options, observer=replayer)]) == _dicts([validate_contained(target, options)])
    assert replayer.misses == 4 + 3  # 4 data files scanned, 3 videos probed (the 4th is missing)


# ---------------------------------------------------------------------- CLI: --shard, lrtool report
def test_cli_shard_parts_and_report_merge(tmp_path, mixture, single):
    parts = tmp_path / "parts"
    for rank in (2, 0):
        r = lrtool("validate", mixture, "--deep", "--shard", f"{rank}/3", "--part-out", parts / f"part-{rank}.json")
        assert r.returncode == 0 and f"share {rank}/3" in r.stderr and r.stdout == "", r.stderr
    # incomplete: report says so (or waits, bounded); merge refuses
    t0 = time.monotonic()
    r = lrtool("report", parts, "--wait", "--timeout-s", "1", "--poll-s", "0.2")
    assert r.returncode == 3 and time.monotonic() - t0 < 30, r.stderr
    assert "not complete after waiting 1 s: 2 of 3 task(s) done (missing rank(s) 1)" in r.stderr
    r = lrtool("report", "merge", parts)
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "missing rank(s) 1" in r.stderr, r.stderr
    r = lrtool("validate", mixture, "--deep", "--shard", "1/3", "--part-out", parts / "part-1.json")
    assert r.returncode == 0
    r = lrtool("report", parts)
    assert (r.returncode, r.stdout) == (single["rc"], single["text"])
    r = lrtool("report", "merge", *sorted(parts.glob("part-*.json")), "--format", "json")
    assert r.returncode == single["rc"] and comparable(r.stdout) == single["json"]
    # a part of another run, or a broken part, is refused in one line
    other = tmp_path / "other"
    lrtool("validate", FIXTURE_MIXTURE, "--shard", "0/3", "--part-out", other / "part-0.json")
    (tmp_path / "part-9.json").write_text('{"lrtool_part": 1, "rank": "x"')
    (tmp_path / "part-8.json").write_text("[" * 5000 + "]" * 5000)  # json.loads alone: RecursionError
    for bad, message in ((other / "part-0.json", "belongs to another run"), (tmp_path / "part-9.json", "not valid JSON"),
                         (tmp_path / "part-8.json", "part file is JSON nested too deeply")):
        r = lrtool("report", "merge", parts / "part-0.json", parts / "part-1.json", bad)
        assert r.returncode == 2 and message in r.stderr and r.stderr.count("\n") == 1, r.stderr
    # the same --part-out folder with other arguments is refused (its plan belongs to another run)
    r = lrtool("validate", mixture, "--shard", "1/3", "--part-out", parts / "part-1.json")
    assert r.returncode == 2 and "holds a different run" in r.stderr


@pytest.mark.parametrize("args, message", [
    (["--shard", "1/3"], "--shard needs --part-out"),
    (["--shard", "3/3", "--part-out", "p.json"], "RANK must be in 0..WORLD-1"),
    (["--shard", "a/b", "--part-out", "p.json"], "expected RANK/WORLD"),
    (["--part-out", "p.json"], "--part-out needs --shard or --executor"),
    (["--executor", "local", "--logging-dir", "d"], "--executor needs --tasks"),
    (["--executor", "local", "--tasks", "2"], "--executor needs --logging-dir"),
    (["--executor", "local", "--tasks", "2", "--logging-dir", "d", "--slurm-partition", "p"], "applies to --executor slurm"),
    (["--executor", "slurm", "--tasks", "2", "--logging-dir", "d"], "--executor slurm needs --slurm-partition"),
    (["--executor", "local", "--tasks", "2", "--logging-dir", "d", "--shard", "0/2", "--part-out", "p"], "exclude each other"),
    (["--executor", "slurm", "--tasks", "2", "--logging-dir", "d", "--slurm-partition", "p",
      "--slurm-sbatch-arg", "novalue"], "expected KEY=VALUE"),
])
def test_cli_scaleout_option_errors(tmp_path, args, message):
    r = lrtool("validate", FIXTURE_MIXTURE, *args, cwd=tmp_path)
    assert r.returncode == 2 and message in r.stderr and "Traceback" not in r.stderr, r.stderr
    assert not (tmp_path / "d").exists()


def test_startup_does_not_import_datatrove_or_ray(tmp_path):
    lrtool("validate", FIXTURE_MIXTURE, "--shard", "0/1", "--part-out", tmp_path / "part-0.json")
    probe = (
        "import sys\n"
        "from lerobot_tools.cli import main\n"
        "try:\n    main(sys.argv[1:])\nexcept SystemExit:\n    pass\n"
        "bad = [m for m in ('datatrove', 'ray', 'torch', 'torchcodec', 'datasets') if m in sys.modules]\n"
        "print('HEAVY', bad)\n"
    )
    for args in (["--help"], ["validate", str(FIXTURE_MIXTURE), "--deep"], ["validate", "--help"],
                 ["report", "merge", str(tmp_path)]):
        out = subprocess.run([sys.executable, "-c", probe, *args], capture_output=True, text=True, env=env()).stdout
        assert out.strip().endswith("HEAVY []"), (args, out)


# ---------------------------------------------------------------------- datatrove LocalPipelineExecutor
needs_datatrove = pytest.mark.skipif(importlib.util.find_spec("datatrove") is None,
                                     reason="the [distributed] extra (datatrove) is not installed")


@needs_datatrove
def test_local_executor_equals_single_process(tmp_path, mixture, single):
    run = tmp_path / "run"
    r = lrtool("validate", mixture, "--deep", "--format", "json", "--executor", "local", "--tasks", "3",
               "--workers", "2", "--logging-dir", run)
    assert r.returncode == single["rc"], r.stderr[-2000:]
    assert comparable(r.stdout) == single["json"]
    assert sorted(p.name for p in (run / "completions").iterdir()) == ["00000", "00001", "00002"]
    text = lrtool("report", run, "--format", "text")
    assert (text.returncode, text.stdout) == (single["rc"], single["text"])


@needs_datatrove
def test_local_executor_killed_then_resumed(tmp_path, mixture, single):
    run = tmp_path / "run"
    cmd = [sys.executable, "-m", "lerobot_tools", "validate", str(mixture), "--deep",
           "--executor", "local", "--tasks", "4", "--workers", "1", "--logging-dir", str(run)]
    proc = subprocess.Popen(cmd, env=env(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)
    try:
        deadline = time.monotonic() + 120
        while not (run / "completions" / "00000").exists():
            assert proc.poll() is None, "the run ended before it could be killed"
            assert time.monotonic() < deadline
            time.sleep(0.01)
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    done = sorted(p.name for p in (run / "completions").iterdir())
    assert "00000" in done and len(done) < 4, done
    kept = {p.name: p.stat().st_mtime_ns for p in (run / "parts").glob("part-*.json")}
    r = subprocess.run(cmd, env=env(), capture_output=True, text=True, timeout=300)
    assert (r.returncode, r.stdout) == (single["rc"], single["text"]), r.stderr[-2000:]
    assert f"Skipping {len(done)} already completed tasks" in r.stderr
    for rank in done:  # completed tasks were not run again
        name = f"part-{rank}.json"
        assert (run / "parts" / name).stat().st_mtime_ns == kept[name]


@needs_datatrove
def test_local_executor_failed_task_is_reported_then_resumed(tmp_path, mixture, single):
    run = tmp_path / "run"
    blocker = run / "parts" / "part-00001.json"
    blocker.mkdir(parents=True)  # task 1 cannot write its part: it fails, task 0 completes
    cmd = ["validate", mixture, "--deep", "--executor", "local", "--tasks", "2", "--logging-dir", run]
    r = lrtool(*cmd)
    assert r.returncode == 2 and "1 of 2 task(s) have written their part; missing rank(s) 1" in r.stderr, r.stderr
    assert "run the same command again" in r.stderr and r.stdout == ""
    blocker.rmdir()
    r = lrtool(*cmd)
    assert (r.returncode, r.stdout) == (single["rc"], single["text"]), r.stderr[-2000:]
    assert "Skipping 1 already completed tasks" in r.stderr
