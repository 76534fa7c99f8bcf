"""``--executor slurm``: datatrove's SlurmPipelineExecutor on a real single-node SLURM cluster.

``scripts/slurm-local.sh start DIR`` starts munged (fresh key), slurmctld and slurmd with everything under
DIR; the test stops them again. The run submits a job array plus a dependent merge job; ``lrtool report DIR
--wait`` must print the single-process report with its exit status, and the merge job must write the same
report into the run folder. Skipped, with the reason, only when the daemons cannot start here (not root,
slurm-wlm/munge not installed, no permission to start daemons).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from tests.distributed.scaleout_data import REPO, comparable, lrtool

pytest.importorskip("datatrove", reason="the [distributed] extra (datatrove) is not installed")

# the single-dataset fixtures (the small mixpart_* parts of the mixture fixtures would change how the plan splits)
TARGETS = [REPO / "fixtures" / "mixture.txt",
           *sorted(p for p in (REPO / "fixtures" / "datasets").iterdir() if not p.name.startswith("mixpart_"))]
SCRIPT = REPO / "scripts" / "slurm-local.sh"


@pytest.fixture(scope="module")
def slurm():
    if os.geteuid() != 0:
        pytest.skip("the local SLURM cluster needs root (SlurmUser=root, munged as the munge user)")
    missing = [b for b in ("slurmctld", "slurmd", "munged", "sbatch") if shutil.which(b) is None]
    if missing:
        pytest.skip(f"{', '.join(missing)} not installed (scripts/install.sh installs slurm-wlm and munge)")
    state = tempfile.mkdtemp(prefix="slurm", dir="/tmp")
    r = subprocess.run([str(SCRIPT), "start", state], capture_output=True, text=True, timeout=180)
    try:
        if r.returncode != 0:
            pytest.skip(f"the SLURM daemons could not start here: {r.stderr.strip()[-600:]}")
        conf = dict(line.split("=", 1) for line in r.stdout.split() if "=" in line)
        yield {"SLURM_CONF": conf["SLURM_CONF"], "partition": conf["PARTITION"]}
    finally:
        subprocess.run([str(SCRIPT), "stop", state], capture_output=True, timeout=60)
        shutil.rmtree(state, ignore_errors=True)


def test_slurm_array_merge_job_and_report(tmp_path, slurm):
    single = lrtool("validate", *TARGETS, "--deep")
    single_json = lrtool("validate", *TARGETS, "--deep", "--format", "json")
    assert single.returncode == 1
    run = tmp_path / "run"
    t0 = time.monotonic()
    r = lrtool("validate", *TARGETS, "--deep", "--executor", "slurm", "--tasks", "4", "--slurm-partition",
               slurm["partition"], "--slurm-time", "0:10:00", "--slurm-sbatch-arg", "comment=lrtool-test",
               "--logging-dir", run, SLURM_CONF=slurm["SLURM_CONF"])
    assert r.returncode == 0, r.stderr[-3000:]
    assert "submitted 4 task(s) as SLURM job" in r.stdout and f"lrtool report {run}" in r.stdout
    script = (run / "launch_script.slurm").read_text()
    assert "#SBATCH --array=0-3" in script and "#SBATCH --partition=debug" in script
    assert "#SBATCH --comment=lrtool-test" in script and "launch_pickled_pipeline" in script
    main_id, merge_id = json.loads((run / "jobs.json").read_text())["jobs"]
    job = subprocess.run(["scontrol", "show", "job", merge_id], capture_output=True, text=True,
                         env={**os.environ, "SLURM_CONF": slurm["SLURM_CONF"]}).stdout
    assert f"Dependency=afterany:{main_id}" in job  # the merge job waits for the whole array
    rep = lrtool("report", run, "--wait", "--timeout-s", "150", "--poll-s", "1", SLURM_CONF=slurm["SLURM_CONF"])
    assert (rep.returncode, rep.stdout) == (1, single.stdout), rep.stderr[-3000:]
    assert time.monotonic() - t0 < 150
    # the dependent merge job writes the same report and exit status into the run folder
    deadline = time.monotonic() + 90
    while not (run / "exit_status").exists() and time.monotonic() < deadline:
        time.sleep(1)
    assert (run / "exit_status").read_text().strip() == "1", list((run / "merge").rglob("*.out"))
    assert (run / "report.txt").read_text() == single.stdout
    assert comparable((run / "report.json").read_text()) == comparable(single_json.stdout)


def test_slurm_failed_tasks_end_the_wait(tmp_path, slurm):
    run = tmp_path / "run"
    (run / "parts" / "part-00001.json").mkdir(parents=True)  # task 1 cannot write its part
    r = lrtool("validate", *TARGETS, "--executor", "slurm", "--tasks", "2", "--slurm-partition", slurm["partition"],
               "--slurm-time", "0:10:00", "--logging-dir", run, SLURM_CONF=slurm["SLURM_CONF"])
    assert r.returncode == 0, r.stderr[-3000:]
    rep = lrtool("report", run, "--wait", "--timeout-s", "150", "--poll-s", "1", SLURM_CONF=slurm["SLURM_CONF"])
    assert rep.returncode == 2, rep.stderr[-2000:]
    assert "the run's SLURM jobs have ended with 1 of 2 task(s) done; rank(s) 1 wrote no part" in rep.stderr
    assert not (run / "exit_status").exists()  # the merge job failed rather than report a partial result
