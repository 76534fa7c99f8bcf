"""`lrtool repair --undo` trusts only a backup it can verify, and interrupted repairs are recognised.

A backup manifest is data from the dataset folder, which may have been downloaded from anywhere: every path in it
must stay inside the dataset and every saved original must match the SHA-256 recorded at backup time, or the undo
is refused with one line and nothing (inside or outside the dataset) is touched.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from lerobot_tools.cli import cli
from tests.editing import tree

REPO = Path(__file__).resolve().parents[2]
DATASETS = REPO / "fixtures" / "datasets"


def cli_run(*args):
    return CliRunner().invoke(cli, ["repair", *map(str, args)])


@pytest.fixture
def repaired(tmp_path):
    """A repaired copy of broken_wrong_totals (its backup holds meta/info.json), and a sentinel folder beside it."""
    root = tmp_path / "ds"
    shutil.copytree(DATASETS / "broken_wrong_totals", root)
    r = cli_run(root)
    assert r.exit_code == 0, r.output
    sentinel = tmp_path / "outside"
    (sentinel / "empty").mkdir(parents=True)
    (sentinel / "precious.txt").write_text("keep me")
    (bdir,) = (root / ".lrtool" / "backup").iterdir()
    return root, bdir, sentinel


def edit_manifest(bdir: Path, fn) -> None:
    doc = json.loads((bdir / "manifest.json").read_text())
    fn(doc)
    (bdir / "manifest.json").write_text(json.dumps(doc))


def assert_refused(root: Path, sentinel: Path, *args: str, words: str = "") -> None:
    before, outside = tree(root), tree(sentinel)
    for extra in ([], ["--dry-run"]):
        r = cli_run("--undo", *extra, *args, root)
        assert r.exit_code == 2, r.output
        assert "Traceback" not in r.output and words in r.output, r.output
        assert tree(root) == before and tree(sentinel) == outside


@pytest.mark.parametrize("bad", ["../outside/precious.txt", "{abs}/precious.txt", "meta/../../outside/precious.txt",
                                 ".lrtool/backup/x", "meta//info.json", "meta/./info.json", "a\\..\\b"])
def test_undo_refuses_a_manifest_path_outside_the_dataset(repaired, bad):
    root, bdir, sentinel = repaired
    bad = bad.format(abs=sentinel)
    # an entry the repair "created": the old undo deleted it, wherever it was
    edit_manifest(bdir, lambda d: d["files"].append({"path": bad, "existed": False}))
    assert_refused(root, sentinel, words="not trusted")


def test_undo_refuses_a_restore_through_a_symlink_out_of_the_dataset(repaired):
    root, bdir, sentinel = repaired
    os.symlink(sentinel, root / "meta" / "escape")
    saved = bdir / "files" / "meta" / "escape"
    saved.mkdir(parents=True)
    (saved / "precious.txt").write_bytes(b"overwritten")
    digest = hashlib.sha256(b"overwritten").hexdigest()
    edit_manifest(bdir, lambda d: d["files"].append(
        {"path": "meta/escape/precious.txt", "existed": True, "sha256": digest, "size": 11}))
    assert_refused(root, sentinel, words="outside the dataset")


@pytest.mark.parametrize("field", ["src", "dst", "created_dirs"])
def test_undo_refuses_moves_and_folders_outside(repaired, field):
    root, bdir, sentinel = repaired

    def hostile(d):
        if field == "created_dirs":
            d["created_dirs"] = [f"../{sentinel.name}/empty"]  # the old undo rmdir-ed it
        else:
            move = {"src": "meta/tasks.jsonl", "dst": "meta/tasks2.jsonl"}
            move[field] = f"../{sentinel.name}/precious.txt"
            d["moves"] = [move]
    edit_manifest(bdir, hostile)
    assert_refused(root, sentinel, words="outside" if field == "created_dirs" else "'..'")


def test_undo_refuses_an_altered_or_symlinked_backup_copy(repaired):
    root, bdir, sentinel = repaired
    saved = bdir / "files" / "meta" / "info.json"
    good = saved.read_bytes()
    saved.write_bytes(good.replace(b"total", b"TOTAL", 1))
    assert_refused(root, sentinel, words="does not match the SHA-256")
    saved.unlink()
    os.symlink(sentinel / "precious.txt", saved)
    assert_refused(root, sentinel, words="not a regular file")
    saved.unlink()
    saved.write_bytes(good)
    assert cli_run("--undo", root).exit_code == 0


def test_undo_refuses_an_entry_without_a_hash(repaired):
    root, bdir, sentinel = repaired
    edit_manifest(bdir, lambda d: d["files"][0].pop("sha256"))
    assert_refused(root, sentinel, words="SHA-256")


def test_a_hostile_newer_backup_is_not_skipped_for_an_older_one(repaired):
    root, bdir, sentinel = repaired
    newer = bdir.parent / "29990101T000000.000000Z"
    shutil.copytree(bdir, newer)
    edit_manifest(newer, lambda d: d["files"].append({"path": "/etc/hostname", "existed": False}))
    assert_refused(root, sentinel, words="absolute")
    r = cli_run("--dry-run", root)
    assert r.exit_code == 2 and "not trusted" in r.output


def test_lrtool_folder_symlinked_out_of_the_dataset_is_refused(tmp_path):
    root = tmp_path / "ds"
    shutil.copytree(DATASETS / "broken_wrong_totals", root)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    os.symlink(elsewhere, root / ".lrtool")
    before = tree(root)
    r = cli_run(root)
    assert r.exit_code == 2 and "symlink" in r.output, r.output
    assert list(elsewhere.iterdir()) == [] and tree(root) == before
    r = cli_run("--undo", root)
    assert r.exit_code == 2 and "symlink" in r.output


def test_manifest_that_is_a_fifo_or_huge_is_refused_without_hanging(repaired):
    root, bdir, sentinel = repaired
    (bdir / "manifest.json").unlink()
    os.mkfifo(bdir / "manifest.json")
    proc = subprocess.run([sys.executable, "-m", "lerobot_tools", "repair", "--undo", str(root)], cwd=REPO,
                          env={**os.environ, "PYTHONPATH": str(REPO)}, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2 and "FIFO" in proc.stdout + proc.stderr


# ---------------------------------------------------------------------- interrupted repairs
_KILL_IN_BACKUP = """
import os, signal, sys
from lerobot_tools.repair import backup
real = backup._copy_hashed
def copy(src, dst):
    out = real(src, dst)
    os.kill(os.getpid(), signal.SIGKILL)   # the backup is being assembled: nothing in the dataset changed yet
backup._copy_hashed = copy
from lerobot_tools.cli import main
main(["repair", sys.argv[1]])
"""


def _kill_during_backup(root: Path) -> None:
    proc = subprocess.run([sys.executable, "-c", _KILL_IN_BACKUP, str(root)], capture_output=True, timeout=120,
                          cwd=REPO, env={**os.environ, "PYTHONPATH": str(REPO)})
    assert proc.returncode == -signal.SIGKILL, proc.stderr.decode()
    (partial,) = (root / ".lrtool" / "backup").iterdir()
    assert partial.name.startswith(".") and partial.name.endswith(".partial")


def test_undo_recognises_and_removes_a_partial_backup(tmp_path):
    root = tmp_path / "ds"
    shutil.copytree(DATASETS / "broken_wrong_totals", root)
    original = tree(root)
    _kill_during_backup(root)
    r = cli_run("--undo", "--dry-run", root)
    assert r.exit_code == 0 and "would remove the incomplete backup" in r.output, r.output
    r = cli_run("--undo", root)
    assert r.exit_code == 0 and "removed the incomplete backup" in r.output, r.output
    assert tree(root) == original  # the dataset was never changed; the partial backup (and .lrtool/) are gone


def test_next_repair_removes_a_partial_backup_and_runs(tmp_path):
    root = tmp_path / "ds"
    shutil.copytree(DATASETS / "broken_wrong_totals", root)
    _kill_during_backup(root)
    r = cli_run(root)
    assert r.exit_code == 0, r.output
    names = [p.name for p in (root / ".lrtool" / "backup").iterdir()]
    assert len(names) == 1 and not names[0].startswith(".")


def test_dry_run_after_an_interrupted_repair_refuses_like_repair(repaired):
    root, bdir, _ = repaired
    edit_manifest(bdir, lambda d: d.update(state="applying"))
    for extra in ([], ["--dry-run"]):
        r = cli_run(*extra, root)
        assert r.exit_code == 2 and "interrupted" in r.output and "--undo" in r.output, (extra, r.output)


# ------------------------------------------------------------------- every refusal of the manifest check, exactly
def _refusal(r, bdir: Path, message: str) -> None:
    assert r.exit_code == 2, r.output
    assert f"{bdir / 'manifest.json'}: {message}" in r.output, r.output


@pytest.mark.parametrize("edit, message", [
    (lambda d: d.update(lrtool_backup=2), "not an lrtool backup manifest"),
    (lambda d: d.pop("lrtool_backup"), "not an lrtool backup manifest"),
    (lambda d: d.update(files={"meta/info.json": {}}), "not an lrtool backup manifest"),
    (lambda d: d.update(state="done"), "state 'done' is not one of applying, applied, undone"),
    (lambda d: d.pop("state"), "state None is not one of applying, applied, undone"),
    (lambda d: d.update(moves={"src": "a", "dst": "b"}), "moves and created_dirs must be lists"),
    (lambda d: d.update(created_dirs="meta"), "moves and created_dirs must be lists"),
    (lambda d: d["files"].append("meta/info.json"), "files[1] is not an entry with path and existed"),
    (lambda d: d["files"].append({"path": "meta/x.json", "existed": 1}),
     "files[1] is not an entry with path and existed"),
    (lambda d: d["files"][0].update(sha256="AB" * 32), "files[0] has no SHA-256 of its original"),
    (lambda d: d["files"][0].update(sha256_after="0" * 63), "files[0].sha256_after is not a SHA-256"),
    (lambda d: d["files"][0].update(sha256_after=7), "files[0].sha256_after is not a SHA-256"),
    (lambda d: d.update(moves=[["meta/a", "meta/b"]]), "moves[0] is not an object with src and dst"),
    (lambda d: d.update(moves=[{"src": "meta/tasks.jsonl", "dst": 5}]), "moves[0].dst 'int'"),
])
def test_undo_names_each_malformed_manifest_field(repaired, edit, message):
    """Each structural refusal of a manifest, word for word, and nothing touched in or outside the dataset."""
    root, bdir, sentinel = repaired
    edit_manifest(bdir, edit)
    assert_refused(root, sentinel, words=message)
    _refusal(cli_run("--undo", root), bdir, message)


def test_undo_accepts_a_manifest_without_the_optional_lists(repaired):
    """The boundary of the refusals above: ``moves``/``created_dirs`` absent mean none; the undo restores."""
    root, bdir, sentinel = repaired
    original = (bdir / "files" / "meta" / "info.json").read_bytes()

    def ok(d):
        d.pop("moves", None)
        d.pop("created_dirs", None)
    edit_manifest(bdir, ok)
    r = cli_run("--undo", root)
    assert r.exit_code == 0, r.output
    assert (root / "meta" / "info.json").read_bytes() == original


def test_undo_refuses_when_a_file_changed_after_the_repair(repaired):
    """A well-formed ``sha256_after`` that the file no longer has: undoing would lose later edits, so nothing is
    restored (exit 1) and the message says where the originals are."""
    root, bdir, sentinel = repaired
    edit_manifest(bdir, lambda d: d["files"][0].update(sha256_after="ab" * 32))
    before = tree(root)
    r = cli_run("--undo", root)
    assert r.exit_code == 1, r.output
    assert "1 file(s) changed since the repair (e.g. meta/info.json); undoing would lose those edits" in r.output
    assert tree(root) == before


def test_undo_refuses_a_backup_folder_that_is_a_symlink(repaired, tmp_path):
    root, bdir, sentinel = repaired
    moved = tmp_path / "elsewhere-backup"
    shutil.move(str(bdir), moved)
    os.symlink(moved, bdir)
    before = tree(root)
    r = cli_run("--undo", root)
    assert r.exit_code == 2, r.output
    assert f"{bdir}: backup folder is a symlink; refused" in r.output, r.output
    assert tree(root) == before


def test_undo_refuses_a_backup_without_its_manifest_or_a_saved_original(repaired):
    root, bdir, sentinel = repaired
    manifest = bdir / "manifest.json"
    text = manifest.read_text()
    manifest.unlink()
    before = tree(root)
    r = cli_run("--undo", root)
    assert r.exit_code == 2, r.output
    assert f"{manifest}: backup manifest cannot be read (No such file or directory)" in r.output, r.output
    assert tree(root) == before
    manifest.write_text(text)
    (bdir / "files" / "meta" / "info.json").unlink()
    assert_refused(root, sentinel, words=f"{bdir}: the saved original of meta/info.json is missing from the backup; "
                                         "nothing was changed")


@pytest.mark.parametrize("what", ["symlink", "file"])
def test_repair_refuses_a_backup_folder_that_is_a_symlink_or_a_file(tmp_path, what):
    """``.lrtool/backup`` itself (not only ``.lrtool``) must be a real folder inside the dataset."""
    root = tmp_path / "ds"
    shutil.copytree(DATASETS / "broken_wrong_totals", root)
    (root / ".lrtool").mkdir()
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    if what == "symlink":
        os.symlink(elsewhere, root / ".lrtool" / "backup")
    else:
        (root / ".lrtool" / "backup").write_text("not a folder")
    before = tree(root)
    for args in ([root], ["--undo", root]):
        r = cli_run(*args)
        assert r.exit_code == 2, r.output
        assert (f"{root}: .lrtool/backup is a symlink or not a folder; lrtool keeps its backups only in a real "
                "folder inside the dataset: remove it") in r.output, r.output
        assert tree(root) == before and list(elsewhere.iterdir()) == []
