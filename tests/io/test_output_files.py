"""Files lrtool writes: every rewrite is fsynced before it is renamed into place, and an output file named on the
command line (``--write-baseline``, ``--part-out``, prefetch's ``--lock``) is written only as a regular file.

A device, a FIFO, a folder or a symlink at an output path is refused with one line naming the file (exit status
2), never replaced; a missing folder, a folder below a regular file and a read-only mount are one line too, naming
the file asked for (never lrtool's temporary file). ``--baseline`` files are checked entry by entry. Everything runs
on real files, FIFOs, character devices (root) and a real read-only tmpfs (root).
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import tempfile
from pathlib import Path

import pytest
from click.testing import CliRunner

from lerobot_tools import _io
from lerobot_tools.cli import cli
from lerobot_tools.errors import LrtoolError, UsageError
from lerobot_tools.findings import Finding
from lerobot_tools.prefetch.lock import LockFile
from lerobot_tools.report import read_baseline, write_baseline

CLEAN = Path(__file__).resolve().parents[2] / "fixtures" / "datasets" / "clean_v21"
root_only = pytest.mark.skipif(os.geteuid() != 0, reason="creating a character device needs root")


def run(*args: str):
    return CliRunner().invoke(cli, list(args))


def one_line_exit_2(res, expected: str) -> None:
    """The run ended with exit status 2 and exactly the one line ``lrtool: error: <expected>``."""
    assert res.exit_code == 2, (res.exit_code, res.output, res.exception)
    assert res.output == f"lrtool: error: {expected}\n", res.output
    assert res.exception is None or isinstance(res.exception, SystemExit)


# ---------------------------------------------------------------------- atomic writes: fsync before the rename
def test_a_rewrite_is_fsynced_before_it_is_renamed_into_place_and_the_folder_after(tmp_path, monkeypatch):
    target = tmp_path / "f.json"
    target.write_text("old")
    events: list[tuple] = []
    real_fsync, real_replace = os.fsync, os.replace

    def fsync(fd):
        st = os.fstat(fd)
        events.append(("fsync", st.st_ino, stat.S_ISDIR(st.st_mode)))
        return real_fsync(fd)

    def replace(src, dst, *a, **k):
        events.append(("replace", os.stat(src).st_ino, Path(dst)))
        return real_replace(src, dst, *a, **k)

    def verify(tmp: Path) -> None:
        events.append(("verify", os.stat(tmp).st_ino))
        assert tmp.read_text() == "new"

    monkeypatch.setattr(os, "fsync", fsync)
    monkeypatch.setattr(os, "replace", replace)
    with _io.atomic_path(target, verify=verify) as tmp:
        tmp.write_text("new")
        ino = os.stat(tmp).st_ino
    assert target.read_text() == "new"
    assert events == [("fsync", ino, False), ("verify", ino), ("replace", ino, target),
                      ("fsync", os.stat(tmp_path).st_ino, True)], events


def test_a_rewrite_that_fails_verification_is_neither_renamed_nor_left_behind(tmp_path, monkeypatch):
    target = tmp_path / "f.json"
    target.write_text("old")
    replaced = []
    monkeypatch.setattr(os, "replace", lambda *a, **k: replaced.append(a))

    def verify(tmp: Path) -> None:
        raise ValueError("does not verify")

    with pytest.raises(ValueError):
        with _io.atomic_path(target, verify=verify) as tmp:
            tmp.write_text("new")
    assert replaced == [] and target.read_text() == "old" and os.listdir(tmp_path) == ["f.json"]


def test_atomic_path_names_the_target_not_its_temporary_file(tmp_path):
    target = tmp_path / "no" / "such" / "f.json"
    with pytest.raises(FileNotFoundError) as exc:
        _io.atomic_write_text(target, "x")
    assert exc.value.filename == str(target) and _io.TMP_PREFIX not in str(exc.value)


def test_atomic_path_never_replaces_a_fifo_or_a_folder_but_replaces_a_symlink_itself(tmp_path):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    (tmp_path / "dir").mkdir()
    for path, kind in ((fifo, "a FIFO"), (tmp_path / "dir", "a folder")):
        with pytest.raises(LrtoolError) as exc:
            _io.atomic_write_text(path, "x")
        assert str(exc.value) == f"{path}: is {kind}, not a regular file; lrtool replaces only regular files"
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode) and sorted(os.listdir(tmp_path)) == ["dir", "fifo"]
    # a hub snapshot's file is a link into blobs/: a rewrite replaces the link, never the blob it points to
    blob = tmp_path / "blob"
    blob.write_text("shared")
    os.symlink(blob, tmp_path / "link")
    _io.atomic_write_text(tmp_path / "link", "mine")
    assert blob.read_text() == "shared" and not (tmp_path / "link").is_symlink()
    assert (tmp_path / "link").read_text() == "mine"
    os.symlink(blob, tmp_path / "link2")
    with pytest.raises(LrtoolError, match="is a symlink"):
        with _io.atomic_path(tmp_path / "link2", regular_only=True):
            pass  # pragma: no cover
    assert blob.read_text() == "shared" and (tmp_path / "link2").is_symlink()


@root_only
def test_atomic_path_never_replaces_a_device(tmp_path):
    dev = tmp_path / "null"
    os.mknod(dev, stat.S_IFCHR | 0o666, os.makedev(1, 3))
    with pytest.raises(LrtoolError, match="is a device, not a regular file"):
        _io.atomic_write_text(dev, "x")
    assert stat.S_ISCHR(os.lstat(dev).st_mode)


def test_replaceable_problem_says_why(tmp_path):
    (tmp_path / "file").write_text("x")
    os.symlink(tmp_path / "file", tmp_path / "link")
    rp = _io.replaceable_problem
    assert rp(tmp_path / "file") is None and rp(tmp_path / "new") is None and rp(tmp_path / "link") is None
    assert rp(tmp_path / "file", regular_only=True) is None and rp(tmp_path / "new", regular_only=True) is None
    assert rp(tmp_path / "link", regular_only=True) == (f"is a symlink (to {tmp_path / 'file'}); lrtool writes this "
                                                        "file only as a regular file: give the path of a regular file")
    assert rp(tmp_path / "no" / "x") == f"cannot be written: the folder {tmp_path / 'no'} does not exist"
    assert rp(tmp_path / "file" / "x") == f"cannot be written: {tmp_path / 'file'} is not a folder"
    assert rp(tmp_path / "file" / "y" / "x") == f"cannot be written: {tmp_path / 'file' / 'y'} is not a folder"


def test_replaceable_problem_refuses_a_folder_it_cannot_write(as_nobody):
    base = Path(tempfile.mkdtemp())  # under /tmp: reachable for the unprivileged user, unlike pytest's tmp_path
    try:
        os.chmod(base, 0o755)
        folder = base / "ro"
        folder.mkdir(mode=0o555)
        with as_nobody():
            assert _io.replaceable_problem(folder / "x") == (f"cannot be written: the folder {folder} is not "
                                                             "writable (read-only or no permission)")
            assert _io.replaceable_problem(base / "x") == (f"cannot be written: the folder {base} is not "
                                                           "writable (read-only or no permission)")
    finally:
        shutil.rmtree(base)


# ---------------------------------------------------------------------- --write-baseline
@pytest.fixture
def in_tmp(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_write_baseline_into_a_missing_folder_is_one_line_exit_2(in_tmp):
    res = run("validate", str(CLEAN), "--write-baseline", "no/such/dir/b.json")
    one_line_exit_2(res, "no/such/dir/b.json: baseline file cannot be written: the folder no/such/dir does not exist")
    assert not (in_tmp / "no").exists()


def test_write_baseline_below_a_regular_file_is_one_line_exit_2(in_tmp):
    (in_tmp / "f").write_text("keep")
    res = run("validate", str(CLEAN), "--write-baseline", "f/b.json")
    one_line_exit_2(res, "f/b.json: baseline file cannot be written: f is not a folder")
    assert (in_tmp / "f").read_text() == "keep"


def test_write_baseline_onto_a_fifo_or_a_symlink_is_refused_and_left_alone(in_tmp):
    os.mkfifo("fifo")
    (in_tmp / "kept.json").write_text("keep")
    os.symlink("kept.json", "link.json")
    res = run("validate", str(CLEAN), "--write-baseline", "fifo")
    one_line_exit_2(res, "fifo: baseline file is a FIFO, not a regular file; lrtool replaces only regular files")
    res = run("validate", str(CLEAN), "--write-baseline", "link.json")
    one_line_exit_2(res, f"link.json: baseline file is a symlink (to {in_tmp / 'kept.json'}); lrtool writes this file "
                         "only as a regular file: give the path of a regular file")
    assert stat.S_ISFIFO(os.lstat("fifo").st_mode) and os.readlink("link.json") == "kept.json"
    assert (in_tmp / "kept.json").read_text() == "keep"


@root_only
def test_write_baseline_onto_a_character_device_is_refused_and_left_alone(in_tmp):
    # as root the old write replaced the device node with a regular file (/dev/full, /dev/null)
    os.mknod("full", stat.S_IFCHR | 0o666, os.makedev(1, 7))
    res = run("validate", str(CLEAN), "--write-baseline", "full")
    one_line_exit_2(res, "full: baseline file is a device, not a regular file; lrtool replaces only regular files")
    assert stat.S_ISCHR(os.lstat("full").st_mode)


def test_write_baseline_on_a_read_only_mount_is_one_line_exit_2(tmpfs):
    mnt = tmpfs(1 << 20)
    r = subprocess.run(["mount", "-o", "remount,ro", str(mnt)], capture_output=True)
    if r.returncode != 0:
        pytest.skip("cannot remount read-only")
    res = run("validate", str(CLEAN), "--write-baseline", str(mnt / "b.json"))
    one_line_exit_2(res, f"{mnt / 'b.json'}: baseline file cannot be written: the folder {mnt} is not writable "
                         "(read-only or no permission)")


def test_write_baseline_library_refuses_with_a_usage_error_and_writes_a_regular_file(tmp_path):
    f = Finding("F001", "error", "data/x.parquet", "missing")
    os.mkfifo(tmp_path / "fifo")
    with pytest.raises(UsageError) as exc:
        write_baseline(tmp_path / "fifo", [("ds", f)])
    assert exc.value.path == str(tmp_path / "fifo")
    write_baseline(tmp_path / "b.json", [("ds", f)])
    assert stat.S_ISREG(os.lstat(tmp_path / "b.json").st_mode)
    assert len(read_baseline(tmp_path / "b.json")) == 1


def test_write_output_text_names_the_file_when_the_write_itself_fails(tmp_path, monkeypatch):
    def full(*a, **k):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(Path, "write_bytes", full)
    with pytest.raises(UsageError) as exc:
        _io.write_output_text(tmp_path / "b.json", "x", "baseline file", error=UsageError)
    assert str(exc.value) == f"{tmp_path / 'b.json'}: baseline file cannot be written (No space left on device)"
    assert os.listdir(tmp_path) == []


# ---------------------------------------------------------------------- --baseline
@pytest.mark.parametrize("entry, got", [({"fingerprint": [1]}, "list"), ({"fingerprint": {"a": 1}}, "dict"),
                                        ({"check": "F001"}, "NoneType"), ("abc", "str"), (7, "int")])
def test_baseline_whose_entries_are_not_fingerprints_is_one_line_exit_2(in_tmp, entry, got):
    (in_tmp / "b.json").write_text(json.dumps({"lrtool_baseline": 1, "findings": [{"fingerprint": "x"}, entry]}))
    res = run("validate", str(CLEAN), "--baseline", "b.json")
    one_line_exit_2(res, f"b.json: findings[1] has no string fingerprint (got {got}); not a baseline written by "
                         "--write-baseline")


# ---------------------------------------------------------------------- prefetch --lock, --part-out
def test_prefetch_lock_file_is_written_only_as_a_regular_file(tmp_path):
    (tmp_path / "kept.lock").write_text("keep")
    os.symlink("kept.lock", tmp_path / "m.lock")
    lock = LockFile(tmp_path / "m.lock")
    lock.set("org/ds", "main", "a" * 40)
    with pytest.raises(UsageError) as exc:
        lock.write()
    assert str(exc.value).startswith(f"{tmp_path / 'm.lock'}: lock file is a symlink (to {tmp_path / 'kept.lock'})")
    assert os.readlink(tmp_path / "m.lock") == "kept.lock" and (tmp_path / "kept.lock").read_text() == "keep"
    lock = LockFile(tmp_path / "n.lock")
    lock.set("org/ds", "main", "a" * 40)
    assert lock.write() and LockFile.read(tmp_path / "n.lock").commit("org/ds", "main") == "a" * 40


def test_part_out_is_written_only_as_a_regular_file(in_tmp):
    (in_tmp / "kept.json").write_text("keep")
    os.symlink("kept.json", "part.json")
    res = run("validate", str(CLEAN), "--shard", "0/1", "--part-out", "part.json")
    assert res.exit_code == 2, res.output
    assert "part.json: part result is a symlink (to" in res.output and "Traceback" not in res.output
    assert os.readlink("part.json") == "kept.json" and (in_tmp / "kept.json").read_text() == "keep"


def test_prefetch_refuses_a_lock_file_it_could_not_write_before_any_request(tmp_path, isolated_hub_env):
    from lerobot_tools.prefetch import PrefetchOptions, prefetch
    from tests.hubserver import HubServer, read_folder

    (tmp_path / "kept.lock").write_text(json.dumps({"lrtool_lock": 1, "entries": {}}))
    os.symlink("kept.lock", tmp_path / "mixture.lock")  # the default lock of mixture.txt
    mix = tmp_path / "mixture.txt"
    mix.write_text("org/v21\n")
    with HubServer() as srv:
        srv.add_repo("org/v21", read_folder(CLEAN))
        opts = PrefetchOptions(local_dir_root=tmp_path / "out", endpoint=srv.url, progress=False)
        with pytest.raises(UsageError) as exc:
            prefetch(mix, opts)
        assert srv.total() == 0  # refused before the first request, not after every download
    assert str(exc.value).startswith(f"{tmp_path / 'mixture.lock'}: lock file is a symlink (to ")
    assert not (tmp_path / "out").exists() and os.readlink(tmp_path / "mixture.lock") == "kept.lock"


def test_write_output_text_refuses_a_symlink_that_appears_after_the_check(tmp_path, monkeypatch):
    # the check before the write and the write itself each refuse: a link made between the two is not followed
    (tmp_path / "kept.json").write_text("keep")
    os.symlink("kept.json", tmp_path / "b.json")
    monkeypatch.setattr(_io, "check_output_file", lambda *a, **k: None)
    with pytest.raises(UsageError) as exc:
        _io.write_output_text(tmp_path / "b.json", "x", "baseline file", error=UsageError)
    assert str(exc.value) == (f"{tmp_path / 'b.json'}: baseline file is a symlink (to {tmp_path / 'kept.json'}); "
                              "lrtool writes this file only as a regular file: give the path of a regular file")
    assert os.readlink(tmp_path / "b.json") == "kept.json" and (tmp_path / "kept.json").read_text() == "keep"
