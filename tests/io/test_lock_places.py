"""Where a dataset's write lock lives (lerobot_tools._lock), on real read-only file systems.

The lock is ``<root>/.lrtool/lock``; when the dataset root cannot hold it, beside the root
(``<parent>/.<name>.lrtool-lock``), else in the temporary folder keyed by the root's real path. Each place must
still lock a second writer of the *same* dataset out (and only that one), and a ``.lrtool`` that is a symlink
must never be followed. Read-only is a real read-only tmpfs (a remount; root only, skipped elsewhere): running as
root, file modes alone would not stop a write.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from click.testing import CliRunner

from lerobot_tools._lock import DatasetLocked, dataset_lock, shared_dataset_lock
from lerobot_tools.cli import cli
from lerobot_tools.errors import LrtoolError

REPO = Path(__file__).resolve().parents[2]
FIXTURE = REPO / "fixtures" / "datasets" / "clean_v21"

# Tries the lock with no wait in another process; prints "locked" or "free" (TMPDIR is passed through).
_TRY = """
import sys
from lerobot_tools._lock import DatasetLocked, dataset_lock
try:
    with dataset_lock(sys.argv[1], timeout=0):
        print("free")
except DatasetLocked:
    print("locked")
"""


def _try_other_process(root: Path, tmpdir: Path | None = None) -> str:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    if tmpdir is not None:
        env["TMPDIR"] = str(tmpdir)
    r = subprocess.run([sys.executable, "-c", _TRY, str(root)], cwd=REPO, env=env, capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0, r.stderr[-2000:]
    return r.stdout.strip()


def _tree(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def _remount_read_only(mnt: Path) -> None:
    r = subprocess.run(["mount", "-o", "remount,ro", str(mnt)], capture_output=True)
    if r.returncode != 0:
        pytest.skip("cannot remount read-only")


@pytest.fixture
def private_tmp(tmp_path, monkeypatch):
    """A temporary folder of this test's own (tempfile's cached choice and TMPDIR both point at it)."""
    d = tmp_path / "tmpdir"
    monkeypatch.setattr(tempfile, "tempdir", str(d))
    return d


def test_a_symlinked_lrtool_folder_is_refused_and_nothing_is_written_through_it(tmp_path):
    root, outside = tmp_path / "ds", tmp_path / "outside"
    shutil.copytree(FIXTURE, root)
    outside.mkdir()
    (root / ".lrtool").symlink_to(outside)
    before = _tree(root)
    with pytest.raises(LrtoolError) as exc:
        with dataset_lock(root, timeout=0):
            pass
    assert str(exc.value) == (f"{root}: .lrtool is a symlink; lrtool keeps its lock and backups only in a real "
                              "folder inside the dataset: remove it")
    with pytest.raises(LrtoolError, match=r"\.lrtool is a symlink"):
        with shared_dataset_lock(root, timeout=0):
            pass
    res = CliRunner().invoke(cli, ["reshard", str(root)])
    assert res.exit_code == 1 and "Traceback" not in res.stderr
    (line,) = [ln for ln in res.stderr.splitlines() if ln.startswith("lrtool: error: ")]
    assert line.startswith(f"lrtool: error: {root}: .lrtool is a symlink; ") and line.count(str(root)) == 1
    res = CliRunner().invoke(cli, ["repair", str(root)])
    assert res.exit_code == 2 and "Traceback" not in res.stderr
    # under the dataset's heading, the reason does not name the dataset again
    assert "  cannot repair: .lrtool is a symlink; lrtool keeps its lock" in res.stdout
    res = CliRunner().invoke(cli, ["repair", "--format", "json", str(root)])
    assert res.exit_code == 2 and '"error": ".lrtool is a symlink; ' in res.stdout
    res = CliRunner().invoke(cli, ["repair", "--undo", str(root)])
    assert res.exit_code == 2 and ".lrtool is a symlink; " in res.stdout and f"{root}: .lrtool" not in res.stdout
    assert list(outside.iterdir()) == []  # neither a lock nor a backup went through the link
    assert _tree(root) == before


def test_a_read_only_dataset_root_is_locked_beside_it(tmp_path, tmpfs, private_tmp):
    root = tmpfs(4 * 2**20)  # the mount point is the dataset root; its parent folder stays writable
    shutil.copytree(FIXTURE, root, dirs_exist_ok=True)
    _remount_read_only(root)
    beside = tmp_path / ".mnt.lrtool-lock"
    with dataset_lock(root, timeout=0) as path:
        assert path == beside and beside.exists()
        assert _try_other_process(root, private_tmp) == "locked"
    assert not beside.exists()  # released: no trace
    assert not private_tmp.exists()  # the temporary folder was not needed
    assert _try_other_process(root, private_tmp) == "free"


def test_with_no_writable_folder_near_the_dataset_the_lock_is_keyed_in_the_temporary_folder(tmp_path, tmpfs,
                                                                                          private_tmp):
    mnt = tmpfs(8 * 2**20)
    a, b = mnt / "parent" / "a", mnt / "parent" / "b"
    shutil.copytree(FIXTURE, a)
    shutil.copytree(FIXTURE, b)
    _remount_read_only(mnt)
    key = hashlib.sha256(os.fsencode(str(a.resolve()))).hexdigest()[:32]
    with dataset_lock(a, timeout=0) as path:
        assert path == private_tmp / "lrtool-locks" / f"{key}.lock"
        assert _try_other_process(a, private_tmp) == "locked"  # the same dataset: the same key
        assert _try_other_process(b, private_tmp) == "free"  # another dataset: its own lock
        with pytest.raises(DatasetLocked):
            with shared_dataset_lock(a, timeout=0):
                pass
    assert _try_other_process(a, private_tmp) == "free"
    assert (private_tmp / "lrtool-locks").is_dir() and list((private_tmp / "lrtool-locks").iterdir()) == []


def test_no_writable_place_at_all_is_one_error(tmp_path, tmpfs, monkeypatch):
    mnt = tmpfs(4 * 2**20)
    root = mnt / "parent" / "ds"
    shutil.copytree(FIXTURE, root)
    (mnt / "tmp").mkdir()
    _remount_read_only(mnt)
    monkeypatch.setattr(tempfile, "tempdir", str(mnt / "tmp"))
    with pytest.raises(LrtoolError) as exc:
        with dataset_lock(root, timeout=0):
            pass
    assert str(exc.value) == (f"{root}: no place to create the dataset's write lock (the dataset, its parent folder "
                              "and the temporary folder are read-only)")
