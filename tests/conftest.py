"""Fixtures shared by several test modules.

* ``hub_server``: a started :class:`tests.hubserver.HubServer` (real sockets on 127.0.0.1), stopped after the test.
* ``as_nobody``: a context manager that runs its block with the effective uid/gid 65534 when the tests run as root,
  so that permission bits apply (root bypasses them); a no-op for other users.
* ``run_ranks``: runs one process per rank (a real multi-process group) and returns their output.
* ``tmpfs``: mounts a real tmpfs of a given size at ``tmp_path/mnt`` (root only, skipped otherwise) and unmounts it
  after the test: a real full disk.
* ``isolated_hub_env``: a per-test Hugging Face environment (``HF_HOME`` and ``HF_LEROBOT_HOME`` under ``tmp_path``,
  no proxy for 127.0.0.1, no token, no telemetry, online), for tests that talk to a local Hub server; request it
  with ``pytestmark = pytest.mark.usefixtures("isolated_hub_env")``.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

from tests.hubserver import HubServer


@pytest.fixture
def hub_server():
    """A started :class:`HubServer` (page size 1000, no LFS), stopped after the test."""
    srv = HubServer().start()
    try:
        yield srv
    finally:
        srv.stop()


@pytest.fixture
def isolated_hub_env(monkeypatch, tmp_path):
    """Per-test HF_HOME / HF_LEROBOT_HOME, no proxy for 127.0.0.1, no token, no telemetry, online."""
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf_home"))
    monkeypatch.setenv("HF_LEROBOT_HOME", str(tmp_path / "lerobot_home"))
    no_proxy = ",".join(x for x in ("127.0.0.1", "localhost", os.environ.get("NO_PROXY", "")) if x)
    monkeypatch.setenv("NO_PROXY", no_proxy)
    monkeypatch.setenv("no_proxy", no_proxy)
    monkeypatch.setenv("HF_HUB_DISABLE_TELEMETRY", "1")
    monkeypatch.setenv("HF_HUB_DISABLE_IMPLICIT_TOKEN", "1")
    for var in ("HF_TOKEN", "HUGGING_FACE_HUB_TOKEN", "HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "HF_ENDPOINT"):
        monkeypatch.delenv(var, raising=False)
    from huggingface_hub.utils import close_session

    close_session()  # the shared httpx client re-reads the proxy environment
    yield
    close_session()


@pytest.fixture
def virtual_clock(monkeypatch) -> list[float]:
    """prefetch's rate-limit clock made virtual: ``sleep(s)`` advances ``now()`` by ``s`` at once. Returns the
    list of every sleep asked for, in seconds (0 or negative for "no wait")."""
    from lerobot_tools.prefetch import budget as budget_mod

    sleeps: list[float] = []
    t = [1000.0]

    def sleep(s: float) -> None:
        sleeps.append(s)
        t[0] += max(0.0, s)

    monkeypatch.setattr(budget_mod.SYSTEM_CLOCK, "sleep", sleep)
    monkeypatch.setattr(budget_mod.SYSTEM_CLOCK, "now", lambda: t[0])
    return sleeps


@contextlib.contextmanager
def _as_nobody():
    if os.geteuid() != 0:
        yield
        return
    os.setegid(65534)
    os.seteuid(65534)
    try:
        yield
    finally:  # the saved set-user-ID stays 0, so root can be taken back
        os.seteuid(0)
        os.setegid(0)


@pytest.fixture
def as_nobody():
    """``with as_nobody(): ...`` runs the block as user/group 65534 when root (permission bits do not stop root),
    then takes root back; a no-op for other users, whom the permission bits already stop."""
    return _as_nobody


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


@pytest.fixture
def tmpfs(tmp_path):
    """A real tmpfs mount (root only); yields (mountpoint, mount(size) function)."""
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    mounted = []

    def mount(size: int, *extra: str) -> Path:
        r = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(mnt)], capture_output=True)
        if r.returncode != 0:
            pytest.skip(f"cannot mount a tmpfs here ({r.stderr.decode().strip() or r.returncode})")
        mounted.append(mnt)
        return mnt

    if os.geteuid() != 0 or shutil.which("mount") is None:
        pytest.skip("needs root to mount a tmpfs")
    yield mount
    for m in mounted:
        subprocess.run(["umount", "-l", str(m)], capture_output=True)
