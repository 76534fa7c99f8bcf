"""``--executor local``: the tasks' worker processes die with the ``lrtool`` process, SIGKILL included, and SIGTERM
ends the run as it ends a single-process one (its handler runs: one line, exit 143).

Real processes and real signals: ``lrtool prefetch --executor local`` with two tasks in two worker processes
downloads from a real HTTP server (tests/hubserver.py) that holds one file's body half-sent, so a task is
deterministically in the middle of its work when the signal is sent; every wait is on a condition, bounded.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.hubserver import HubServer, read_folder
from tests.distributed.scaleout_data import REPO, env

pytest.importorskip("datatrove", reason="the [distributed] extra (datatrove) is not installed")
pytestmark = pytest.mark.usefixtures("isolated_hub_env")

FIXTURES = REPO / "fixtures" / "datasets"
BIG = "data/chunk-000/episode_000000.parquet"


def _group_gone(pgid: int, timeout: float = 30.0) -> bool:
    """Poll (bounded) until no process of group ``pgid`` is left."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            os.killpg(pgid, 0)
        except ProcessLookupError:
            return True
        time.sleep(0.05)
    return False


def _launch(tmp_path: Path, srv: HubServer) -> tuple[subprocess.Popen, object]:
    """Start a two-task prefetch whose first download of ``BIG`` is held half-sent; return once a task holds it."""
    files = read_folder(FIXTURES / "clean_v21")
    for repo in ("org/a", "org/b"):
        srv.add_repo(repo, files)
    hold = srv.inject("get", "hold", path=BIG, after_bytes=500)
    mix = tmp_path / "mixture.txt"
    mix.write_text("org/a\norg/b\n")
    cmd = [sys.executable, "-m", "lerobot_tools", "prefetch", str(mix), "--local-dir-root", str(tmp_path / "out"),
           "--no-progress", "--executor", "local", "--tasks", "2", "--workers", "2", "--logging-dir",
           str(tmp_path / "run")]
    proc = subprocess.Popen(cmd, env=env(HF_ENDPOINT=srv.url), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            start_new_session=True)
    if not hold.reached.wait(120):
        proc.kill()
        out, err = proc.communicate(timeout=60)
        pytest.fail(f"no task reached the held download: {err.decode()[-2000:]}")
    assert proc.poll() is None
    return proc, hold


def _children(pid: int) -> list[int]:
    """Processes whose parent is ``pid`` (from /proc)."""
    out = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                out.append(int(entry.name))
    return out


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the parent-death signal is Linux's prctl")
def test_workers_die_with_a_sigkilled_parent_and_release_its_pipes(tmp_path):
    with HubServer() as srv:
        proc, hold = _launch(tmp_path, srv)
        try:
            workers = _children(proc.pid)
            assert workers, "the tasks run in worker processes"
            proc.kill()  # SIGKILL to the lrtool process only: no handler runs there
            # nothing of the run holds the caller's stdout/stderr open: they reach end of file
            out, err = proc.communicate(timeout=60)
            assert _group_gone(proc.pid), "a process of the run outlived its parent"
            assert b"Traceback" not in err and b"BrokenPipeError" not in err, err.decode()[-2000:]
        finally:
            hold.release.set()
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass


def test_sigterm_ends_the_run_with_its_handler_and_no_process_left(tmp_path):
    with HubServer() as srv:
        proc, hold = _launch(tmp_path, srv)
        try:
            proc.send_signal(signal.SIGTERM)  # the lrtool process only: it stops its workers
            out, err = proc.communicate(timeout=90)
            text = err.decode()
            assert proc.returncode == 143, (proc.returncode, text[-2000:])
            assert "Traceback" not in text, text[-3000:]
            assert text.splitlines()[-1].startswith("lrtool: terminated (SIGTERM)"), text[-2000:]
            assert _group_gone(proc.pid), "a worker process outlived the run"
        finally:
            hold.release.set()
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
    # the interrupted task left no completion marker: the same command resumes it
    assert not (tmp_path / "run" / "completions").exists() or \
        len(list((tmp_path / "run" / "completions").iterdir())) < 2
