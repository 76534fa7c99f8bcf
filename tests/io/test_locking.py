"""One writer per dataset: reshard, repair and repair --undo take a per-dataset lock (two real processes).

The first process is slowed down inside its writes (a patched write function sleeps), the second is a real
``python -m lerobot_tools`` run started while the first holds the lock.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
DATASETS = REPO / "fixtures" / "datasets"
ENV = {**os.environ, "PYTHONPATH": str(REPO)}

# A repair whose every write waits until the file GO exists (so the test decides when it goes on).
_SLOW_REPAIR = """
import sys, time
from pathlib import Path
from lerobot_tools.repair import apply
real = apply.write_change
def write_change(root, change):
    Path(sys.argv[2], "STARTED").touch()
    while not Path(sys.argv[2], "GO").exists():
        time.sleep(0.02)
    real(root, change)
apply.write_change = write_change
from lerobot_tools.cli import main
main(["repair", sys.argv[1]])
"""

_HOLD_LOCK = """
import sys, time
from pathlib import Path
from lerobot_tools._lock import dataset_lock
with dataset_lock(sys.argv[1], timeout=0):
    Path(sys.argv[2], "STARTED").touch()
    while not Path(sys.argv[2], "GO").exists():
        time.sleep(0.02)
"""


def tree(root: Path) -> dict[str, str]:
    return {p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file()}


def lrtool(*args, **kw) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "lerobot_tools", *map(str, args)], cwd=REPO, env=ENV,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **kw)


def start(script: str, root: Path, ctl: Path) -> subprocess.Popen:
    ctl.mkdir(exist_ok=True)
    proc = subprocess.Popen([sys.executable, "-c", script, str(root), str(ctl)], cwd=REPO, env=ENV,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 120
    while not (ctl / "STARTED").exists():
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, "the first process never started writing"
        time.sleep(0.02)
    return proc


@pytest.fixture
def ds(tmp_path):
    root = tmp_path / "ds"
    shutil.copytree(DATASETS / "broken_variable_list", root)
    return root


def test_undo_waits_for_a_running_repair_instead_of_undoing_it_mid_write(ds, tmp_path):
    original = tree(ds)
    ctl = tmp_path / "ctl"
    first = start(_SLOW_REPAIR, ds, ctl)           # backup written, first dataset write pending
    second = lrtool("repair", "--undo", ds)         # must not restore while the repair is still writing
    time.sleep(2.0)
    assert second.poll() is None, second.communicate()  # still waiting for the lock
    (ctl / "GO").touch()
    out1, err1 = first.communicate(timeout=300)
    out2, err2 = second.communicate(timeout=300)
    assert first.returncode == 0, out1 + err1
    assert second.returncode == 0, out2 + err2
    assert "another lrtool run is writing this dataset" in err2
    assert tree(ds) == original  # the complete repair, then its complete undo
    assert not (ds / ".lrtool").exists()


@pytest.mark.parametrize("argv, status", [(["reshard"], 1), (["repair"], 2), (["repair", "--undo"], 2)])
def test_a_second_writer_gives_up_after_the_lock_timeout(ds, tmp_path, argv, status):
    before = tree(ds)
    holder = start(_HOLD_LOCK, ds, tmp_path / "ctl")
    try:
        t0 = time.monotonic()
        proc = lrtool(*argv, ds, "--lock-timeout", "1")
        out, err = proc.communicate(timeout=120)
        waited = time.monotonic() - t0
    finally:
        (tmp_path / "ctl" / "GO").touch()
        holder.communicate(timeout=60)
    assert proc.returncode == status, out + err
    text = out + err
    assert "another lrtool run is writing this dataset" in text and "gave up after 1 s" in text
    assert "Traceback" not in text
    assert waited < 60
    assert tree(ds) == before  # nothing written (the holder's lock file is gone with it)
    assert not (ds / ".lrtool").exists()


def test_two_reshards_one_waits_for_the_other(ds, tmp_path):
    holder = start(_HOLD_LOCK, ds, tmp_path / "ctl")
    proc = lrtool("reshard", ds, "--lock-timeout", "120")
    time.sleep(1.5)
    assert proc.poll() is None  # waiting, not writing beside the holder
    (tmp_path / "ctl" / "GO").touch()
    holder.communicate(timeout=60)
    out, err = proc.communicate(timeout=300)
    assert proc.returncode == 0, out + err
    assert "waiting for it to finish before resharding" in err


def test_lock_timeout_must_be_finite(ds):
    for bad in ("nan", "inf", "-1"):
        proc = lrtool("reshard", ds, "--lock-timeout", bad)
        out, err = proc.communicate(timeout=60)
        assert proc.returncode == 2 and "--lock-timeout" in err


def test_a_killed_holder_does_not_block_the_next_run(ds, tmp_path):
    holder = start(_HOLD_LOCK, ds, tmp_path / "ctl")
    holder.kill()
    holder.communicate(timeout=60)
    assert (ds / ".lrtool" / "lock").exists()  # the file stays, the kernel dropped the lock
    proc = lrtool("repair", "--dry-run", ds)
    proc.communicate(timeout=120)
    proc = lrtool("reshard", ds, "--lock-timeout", "0")
    out, err = proc.communicate(timeout=300)
    assert proc.returncode == 0, out + err
    assert not (ds / ".lrtool").exists()
