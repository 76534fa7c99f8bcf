"""Scale-out of reshard, diagnose-decode, repair and prefetch: ``--shard`` parts (and, for reshard,
datatrove's LocalPipelineExecutor) merge into the single-process report and exit status.

Commands that change files run twice on identical copies of the fixtures (one copy single-process, one
distributed) from the copy's own folder, so the reports name the same relative targets; what legitimately
differs (seconds, backup timestamps, the copy's absolute folder) is normalised before comparing.
"""

from __future__ import annotations

import importlib.util
import json
import re
import shutil
from pathlib import Path

import pytest

from tests.hubserver import HubServer, read_folder
from tests.distributed.scaleout_data import REPO, lrtool

FIXTURES = REPO / "fixtures" / "datasets"
TARGETS = ["mixture.txt", "datasets/clean_v30", "datasets/clean_v21", "datasets/broken_undeclared_column"]


def _copies(tmp_path: Path, *names: str) -> list[Path]:
    out = []
    for name in names:
        d = tmp_path / name
        shutil.copytree(FIXTURES, d / "datasets")
        shutil.copy(REPO / "fixtures" / "mixture.txt", d / "mixture.txt")
        out.append(d)
    return out


def _zero_seconds(o):
    if isinstance(o, dict):
        return {k: 0 if k == "seconds" else _zero_seconds(v) for k, v in o.items()}
    if isinstance(o, list):
        return [_zero_seconds(x) for x in o]
    return o


def _shards(cwd: Path, world: int, *args, **env: str) -> None:
    for rank in range(world):
        r = lrtool(*args, "--shard", f"{rank}/{world}", "--part-out", f"parts/part-{rank}.json", cwd=cwd, **env)
        assert r.returncode == 0, r.stderr[-2000:]


def test_reshard_shards_equal_single_process_and_every_file_conforms(tmp_path):
    single, dist = _copies(tmp_path, "single", "dist")
    # a stale temporary file of a data file and one of no data file: both removed, once
    for d in (single, dist):
        (d / "datasets/clean_v21/data/chunk-000/.lrtool-tmp-x-episode_000001.parquet").write_bytes(b"partial")
        (d / "datasets/clean_v21/meta/.lrtool-tmp-y-info.json").write_bytes(b"partial")
    args = ["reshard", *TARGETS, "--row-group-mb", "0.004", "--format", "json"]
    a = lrtool(*args, cwd=single)
    _shards(dist, 3, *args)
    plan = json.loads((dist / "parts" / "plan.json").read_text())
    assert any(it[1] == "head" for items in plan["assignment"] for it in items)  # some datasets split by file
    b = lrtool("report", "parts", cwd=dist)
    assert a.returncode == b.returncode == 0, b.stderr[-2000:]
    da, db = (json.dumps(_zero_seconds(json.loads(r.stdout))).replace(str(d), "COPY") for r, d in ((a, single), (b, dist)))
    assert da == db
    doc = json.loads(b.stdout)
    assert doc["summary"]["resharded"] > 0 and doc["summary"]["failed"] == 0
    clean = next(d for d in doc["datasets"] if d["target"] == "datasets/clean_v21")
    assert clean["removed_temps"] == ["data/chunk-000/.lrtool-tmp-x-episode_000001.parquet",
                                      "meta/.lrtool-tmp-y-info.json"]
    v = lrtool("validate", *TARGETS[1:], "--select", "R001,R002,R003", "--row-group-mb", "0.004", "--format", "json",
               cwd=dist)
    assert [f for d in json.loads(v.stdout)["datasets"] for f in d["findings"]] == []


@pytest.mark.skipif(importlib.util.find_spec("datatrove") is None, reason="the [distributed] extra is not installed")
def test_reshard_through_the_local_executor_leaves_every_file_conforming(tmp_path):
    single, dist = _copies(tmp_path, "single", "dist")
    args = ["reshard", *TARGETS, "--row-group-mb", "0.004", "--format", "json"]
    a = lrtool(*args, cwd=single)
    b = lrtool(*args, "--executor", "local", "--tasks", "3", "--workers", "2", "--logging-dir", "run", cwd=dist)
    assert a.returncode == b.returncode == 0, b.stderr[-2000:]
    assert (json.dumps(_zero_seconds(json.loads(a.stdout))).replace(str(single), "COPY")
            == json.dumps(_zero_seconds(json.loads(b.stdout))).replace(str(dist), "COPY"))
    v = lrtool("validate", *TARGETS[1:], "--select", "R001,R002,R003", "--row-group-mb", "0.004", "--format", "json",
               cwd=dist)
    assert [f for d in json.loads(v.stdout)["datasets"] for f in d["findings"]] == []
    again = lrtool(*args, "--executor", "local", "--tasks", "3", "--logging-dir", "run2", cwd=dist)
    assert again.returncode == 0 and json.loads(again.stdout)["summary"]["resharded"] == 0  # all conform now


def test_diagnose_shards_equal_single_process(tmp_path):
    targets = [str(REPO / "fixtures" / "mixture.txt"), *sorted(str(p) for p in FIXTURES.iterdir())]
    args = ["diagnose-decode", *targets, "--frames", "0", "--gpu", "A10G", "--all-files"]
    a = lrtool(*args, "--format", "json")
    _shards(tmp_path, 4, *args)
    plan = json.loads((tmp_path / "parts" / "plan.json").read_text())
    assert any(it[1] == "head" for items in plan["assignment"] for it in items)  # videos split by file
    b = lrtool("report", tmp_path / "parts", "--format", "json")
    assert a.returncode == b.returncode == 1, b.stderr[-2000:]
    assert _zero_seconds(json.loads(a.stdout)) == _zero_seconds(json.loads(b.stdout))


def test_repair_shards_equal_single_process(tmp_path):
    single, dist = _copies(tmp_path, "single", "dist")
    names = ["broken_undeclared_column", "broken_missing_task_label", "broken_wrong_totals", "clean_v21"]
    names = [n for n in names if (FIXTURES / n).is_dir()]
    args = ["repair", *(f"datasets/{n}" for n in names), f"datasets/{names[0]}"]  # one named twice: once
    a = lrtool(*args, cwd=single)
    _shards(dist, 3, *args)
    b = lrtool("report", "parts", cwd=dist)
    stamp = re.compile(r"\d{8}T\d{6}(\.\d+)?Z|\d{4}-\d\d-\d\dT[\d:.]+Z?")
    assert a.returncode == b.returncode, b.stderr[-2000:]
    assert stamp.sub("T", a.stdout) == stamp.sub("T", b.stdout)
    assert f"repair of {len(names)} dataset(s)" in b.stdout


@pytest.mark.usefixtures("isolated_hub_env")
def test_prefetch_shards_split_the_budget_and_write_the_lock_once(tmp_path):
    v21, v30 = read_folder(FIXTURES / "clean_v21"), read_folder(FIXTURES / "clean_v30")
    with HubServer() as srv:
        repos = {"org/a": v21, "org/b": v30, "org/c": v21, "org/d": v30}
        for repo, files in repos.items():
            srv.add_repo(repo, files)
        mix = tmp_path / "mixture.txt"
        mix.write_text("\n".join(repos) + "\n")
        root = tmp_path / "out"
        common = ["prefetch", mix, "--local-dir-root", root, "--resolve-requests", "1000"]
        _shards(tmp_path, 2, *common, HF_ENDPOINT=srv.url)
        assert not (tmp_path / "mixture.lock").exists()  # tasks never write the lock
        # nor does `lrtool report` at a path read from the run folder: only at one named on its command line
        r = lrtool("report", tmp_path / "parts", "--format", "json")
        assert r.returncode == 0 and not (tmp_path / "mixture.lock").exists(), r.stderr[-2000:]
        assert any("--lock FILE" in n for n in json.loads(r.stdout)["notes"])
        r = lrtool("report", tmp_path / "parts", "--format", "json", "--lock", tmp_path / "mixture.lock")
        assert r.returncode == 0, r.stderr[-2000:]
        doc = json.loads(r.stdout)
        assert [x["repo_id"] for x in doc["datasets"]] == list(repos)
        assert all(x["status"] == "complete" for x in doc["datasets"])
        assert doc["requests"] == srv.total()
        assert doc["budgets"]["resolvers"]["limits"][0]["quota"] == 500  # each task took half of 1000
        for repo, files in repos.items():
            got = {p.relative_to(root / repo).as_posix(): p.read_bytes() for p in (root / repo).rglob("*")
                   if p.is_file() and ".cache" not in p.parts}
            assert got == files
        lock = json.loads((tmp_path / "mixture.lock").read_text())
        assert len(json.dumps(lock)) > 0 and all(repo in json.dumps(lock) for repo in repos)
        srv.reset()
        warm = lrtool(*common, "--format", "json", HF_ENDPOINT=srv.url)
        assert warm.returncode == 0 and srv.total() == 0  # the merged lock pins every repo: no request at all


def test_shared_dataset_lock_admits_the_tasks_of_a_run_and_locks_out_other_writers(tmp_path):
    from lerobot_tools._lock import DatasetLocked, dataset_lock, shared_dataset_lock

    root = tmp_path / "ds"
    root.mkdir()
    with shared_dataset_lock(root, timeout=0), shared_dataset_lock(root, timeout=0):  # two tasks of one run
        with pytest.raises(DatasetLocked):
            with dataset_lock(root, timeout=0):  # a repair or another reshard waits, then gives up
                pass
    assert not (root / ".lrtool").exists()  # the last task out leaves no trace
    with dataset_lock(root, timeout=0):
        with pytest.raises(DatasetLocked):
            with shared_dataset_lock(root, timeout=0.2):
                pass
    with shared_dataset_lock(root, timeout=0):  # after an exclusive holder unlinked its file
        with pytest.raises(DatasetLocked):
            with dataset_lock(root, timeout=0):
                pass


def test_a_split_reshard_is_locked_out_by_another_writer(tmp_path):
    from lerobot_tools._lock import dataset_lock

    (copy,) = _copies(tmp_path, "c")
    data = sorted((copy / "datasets/clean_v21/data").rglob("*.parquet"))
    before = {p: p.read_bytes() for p in data}
    with dataset_lock(copy / "datasets/clean_v21", timeout=0):  # a repair is writing this dataset
        _shards(copy, 3, "reshard", "datasets/clean_v21", "--lock-timeout", "0")
    plan = json.loads((copy / "parts" / "plan.json").read_text())
    assert sum(it[1] == "file" for items in plan["assignment"] for it in items) == 3  # split by file
    r = lrtool("report", "parts", "--format", "json", cwd=copy)
    assert r.returncode == 1
    doc = json.loads(r.stdout)["datasets"][0]
    assert "another lrtool run is writing this dataset" in (doc["error"] or "")
    assert {p: p.read_bytes() for p in data} == before  # nothing written


def _vanish_lock_folder(monkeypatch, vanish) -> list:
    """Make the lock's ``_prepare_dir`` remove the folder it just made on the calls ``vanish(n)`` picks (n counts
    from 1; the first call finds the lock's place, the next ones come just before the lock file is opened), as
    the last holder's release does at the worst moment. Returns the list of calls."""
    from lerobot_tools import _lock

    real, calls = _lock._prepare_dir, []

    def prepare_then_vanish(path, in_dataset, root_):
        ok = real(path, in_dataset, root_)
        calls.append(path)
        if vanish(len(calls)):
            path.parent.rmdir()
        return ok

    monkeypatch.setattr(_lock, "_prepare_dir", prepare_then_vanish)
    return calls


def test_a_task_whose_lock_folder_vanished_under_it_makes_it_again(tmp_path, monkeypatch):
    """The last task out removes the empty ``.lrtool/`` after a sibling made it and before the sibling opened the
    lock file in it: the sibling makes the folder again instead of failing (a task of a CI run did)."""
    from lerobot_tools import _lock

    root = tmp_path / "ds"
    root.mkdir()
    calls = _vanish_lock_folder(monkeypatch, lambda n: n == 2)
    with _lock.shared_dataset_lock(root, timeout=0) as path:
        assert path.exists() and len(calls) >= 3
    assert not (root / ".lrtool").exists()


def test_a_lock_folder_that_keeps_vanishing_is_one_error_not_a_loop(tmp_path, monkeypatch):
    from lerobot_tools import _lock
    from lerobot_tools.errors import LrtoolError

    root = tmp_path / "ds"
    root.mkdir()
    calls = _vanish_lock_folder(monkeypatch, lambda n: n >= 2)
    with pytest.raises(LrtoolError) as exc:
        with _lock.shared_dataset_lock(root, timeout=0):
            pass
    assert str(exc.value).startswith(f"{root}: the lock file's folder {root / '.lrtool'} disappeared 1000 times")
    assert len(calls) == 1001


_TAKE_SHARED = """
import sys
from lerobot_tools._lock import shared_dataset_lock
for _ in range(int(sys.argv[2])):
    with shared_dataset_lock(sys.argv[1], timeout=60):
        pass
"""


def test_tasks_taking_and_leaving_the_shared_lock_at_once_never_fail(tmp_path):
    """Three real processes take and release one dataset's shared lock in a tight loop, as the tasks of a
    reshard run over datasets that already conform do: every take succeeds and no trace is left."""
    import subprocess
    import sys

    root = tmp_path / "ds"
    root.mkdir()
    procs = [subprocess.Popen([sys.executable, "-c", _TAKE_SHARED, str(root), "1000"], cwd=REPO,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(3)]
    for p in procs:
        out, err = p.communicate(timeout=300)
        assert p.returncode == 0, err[-2000:]
    assert not (root / ".lrtool").exists()


@pytest.mark.parametrize("held_s, told", [(0.2, False), (1.5, True)])
def test_a_shared_holder_says_it_waits_only_past_a_sibling_leaving(tmp_path, capsys, held_s, told):
    """A task leaving holds the lock exclusively for an instant; a sibling that meets that waits without saying
    another run is writing. An exclusive holder for longer than the quiet time is reported."""
    import fcntl
    import os
    import threading
    import time

    from lerobot_tools import _lock

    root = tmp_path / "ds"
    root.mkdir()
    (root / ".lrtool").mkdir()
    fd = os.open(root / ".lrtool" / "lock", os.O_RDWR | os.O_CREAT, 0o644)
    fcntl.flock(fd, fcntl.LOCK_EX)
    t = threading.Timer(held_s, lambda: fcntl.flock(fd, fcntl.LOCK_UN))
    t.start()
    began = time.monotonic()
    with _lock.shared_dataset_lock(root, timeout=30):
        waited = time.monotonic() - began
    t.join()
    os.close(fd)
    said = "another lrtool run is writing this dataset" in capsys.readouterr().err
    assert waited >= held_s - 0.05
    if told:
        assert said
    elif waited < _lock._QUIET_S:  # (a loaded machine may stretch the short hold past the quiet time)
        assert not said  # a sibling leaving: nothing on stderr
