"""``--executor ray``: datatrove's RayPipelineExecutor on a real local Ray cluster started by this test.

The cluster is ``ray start --head --block`` in its own process group (so the test stops exactly what it
started); ``lrtool validate --executor ray --ray-address ...`` must print the single-process report and
exit with its status. Skipped, with the reason, only when ray is not installed or the cluster cannot start.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from tests.distributed.scaleout_data import REPO, comparable, env, lrtool

pytest.importorskip("datatrove", reason="the [distributed] extra (datatrove) is not installed")
pytest.importorskip("ray", reason="the [ray] extra (ray) is not installed")

# the demo mixture and a fixed set of single-dataset fixtures (a set that grows with every new fixture would change
# how the plan splits: with 60 small datasets over 4 tasks none is split)
TARGETS = [REPO / "fixtures" / "mixture.txt",
           *(REPO / "fixtures" / "datasets" / n for n in ("clean_v21", "clean_v30", "broken_truncated_episodes",
                                                           "broken_wrong_totals", "broken_missing_column",
                                                           "broken_lfs_video"))]
#: the same for the cluster and its clients: no usage stats; no token authentication (a token a local Ray
#: instance once saved in ~/.ray would otherwise be required by one side and not sent by the other)
RAY_ENV = {"RAY_USAGE_STATS_ENABLED": "0", "RAY_AUTH_MODE": "disabled"}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def ray_cluster():
    ray_bin = Path(sys.executable).with_name("ray")
    if not ray_bin.exists():
        pytest.skip(f"no ray executable next to {sys.executable}")
    port = _free_port()
    tmp = tempfile.mkdtemp(prefix="ray", dir="/tmp")  # short: Ray's unix socket paths must fit in 107 bytes
    log = open(Path(tmp) / "ray-start.log", "w")
    proc = subprocess.Popen([str(ray_bin), "start", "--head", f"--port={port}", "--num-cpus=2", f"--temp-dir={tmp}",
                             "--include-dashboard=false", "--disable-usage-stats", "--block"],
                            env=env(**RAY_ENV), stdout=log, stderr=subprocess.STDOUT,
                            start_new_session=True)
    try:
        deadline = time.monotonic() + 120
        started = False
        while time.monotonic() < deadline and proc.poll() is None:
            if "Ray runtime started" in Path(log.name).read_text(errors="replace"):
                started = True
                break
            time.sleep(0.5)
        if not started:
            tail = Path(log.name).read_text(errors="replace")[-800:]
            pytest.skip(f"the Ray cluster could not start here: {tail}")
        yield f"127.0.0.1:{port}"
    finally:
        for sig, wait in ((signal.SIGTERM, 5), (signal.SIGKILL, 5)):
            try:
                os.killpg(proc.pid, sig)
            except ProcessLookupError:
                break
            try:
                proc.wait(timeout=wait)
            except subprocess.TimeoutExpired:
                continue
        log.close()


def test_ray_executor_equals_single_process(tmp_path, ray_cluster):
    single = lrtool("validate", *TARGETS, "--deep", "--format", "json")
    run = tmp_path / "run"
    r = lrtool("validate", *TARGETS, "--deep", "--format", "json", "--executor", "ray", "--tasks", "4",
               "--ray-address", ray_cluster, "--logging-dir", run, **RAY_ENV)
    assert r.returncode == single.returncode == 1, r.stderr[-3000:]
    assert r.stdout.startswith("{"), (r.stdout[:3000], r.stderr[-3000:])
    assert comparable(r.stdout) == comparable(single.stdout)
    assert sorted(p.name for p in (run / "completions").iterdir()) == ["00000", "00001", "00002", "00003"]
    # datasets were split by file over the tasks, and the merged report is still the same
    import json

    plan = json.loads((run / "plan.json").read_text())
    assert sum(1 for items in plan["assignment"] for it in items if it[1] == "head") >= 2
    # a re-run with the same logging dir has nothing left to do and prints the same report
    r2 = lrtool("validate", *TARGETS, "--deep", "--executor", "ray", "--tasks", "4", "--ray-address", ray_cluster,
                "--logging-dir", run, **RAY_ENV)
    assert r2.returncode == 1 and r2.stdout == lrtool("validate", *TARGETS, "--deep").stdout
    assert "appear to be completed already" in r2.stderr
