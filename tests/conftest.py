"""Fixtures shared by the test areas (an area's own fixtures live in its conftest.py: ``hub_server`` in
tests/prefetch/, ``run_ranks`` in tests/loaders/).

* ``as_nobody``: a context manager that runs its block with the effective uid/gid 65534 when the tests run as root,
  so that permission bits apply (root bypasses them); a no-op for other users.
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
import subprocess
from pathlib import Path

import pytest


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
