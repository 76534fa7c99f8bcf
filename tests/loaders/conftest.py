"""Fixtures of the loader tests.

* ``run_ranks``: runs one process per rank (a real multi-process group) and returns their output.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import warnings

import pytest


#: what torch prints when a gloo process group's C++ threads are torn down during interpreter finalization
GLOO_TEARDOWN_ABORT = "terminate called without an active exception"


def _run_ranks(argv_of_rank, world: int = 2, *, timeout: float = 120, finished=None) -> list[str]:
    """Start ``python argv_of_rank(r)`` for every rank ``r < world`` at once (the ranks of one group meet at start),
    wait for all, fail the test if one runs past ``timeout`` seconds (all are killed) or exits non-zero; return
    each rank's combined stdout/stderr.

    ``finished(r)`` (e.g. "its output file exists", written as the worker's last statement, after
    ``destroy_process_group``) lets one known torch defect through: a rank that finished its work and then died
    of SIGABRT with :data:`GLOO_TEARDOWN_ABORT` while the interpreter shut down (gloo's threads torn down during
    finalization; pytorch/pytorch#190489, #179291). It is reported as a warning. Any other exit, or that abort
    before the work was finished, fails the test."""
    env = {**os.environ, "PYTHONWARNINGS": "ignore"}
    procs = [subprocess.Popen([sys.executable, *map(str, argv_of_rank(r))], stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True, env=env) for r in range(world)]
    logs = []
    for p in procs:
        try:
            logs.append(p.communicate(timeout=timeout)[0])
        except subprocess.TimeoutExpired:
            for q in procs:
                q.kill()
            pytest.fail("distributed worker timed out")
    codes = []
    for r, (p, log) in enumerate(zip(procs, logs)):
        if (p.returncode == -signal.SIGABRT and finished is not None and finished(r)
                and GLOO_TEARDOWN_ABORT in log):
            warnings.warn(f"rank {r} finished its work, then aborted at interpreter exit ({GLOO_TEARDOWN_ABORT}; "
                          "pytorch/pytorch#190489)")
            codes.append(0)
        else:
            codes.append(p.returncode)
    assert codes == [0] * world, "\n".join(logs)
    return logs


@pytest.fixture
def run_ranks():
    """``run_ranks(lambda r: [script, r, ...], world=2, timeout=120)``: see :func:`_run_ranks`."""
    return _run_ranks
