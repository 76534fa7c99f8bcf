"""``lerobot_tools.repair.backup`` on its own: what a backup holds (saved bytes, sizes, the manifest word for word),
which entries of ``.lrtool/backup`` count as interrupted and are cleaned, the exact refusal of every untrusted
manifest path and saved original, what ``modified_since`` counts as an edit, and what ``restore`` puts back and
reports. Complements tests/repair/test_repair_backups.py, which goes through ``lrtool repair --undo``.

Most tests build a small tree of real files in tmp_path, back it up with :func:`backup.create`, change it the way
a repair does (rewrite, create, move, delete) and restore it; two go through the CLI on committed fixtures.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
from click.testing import CliRunner

from lerobot_tools import __version__
from lerobot_tools._io import MAX_JSON_BYTES, TMP_PREFIX
from lerobot_tools.cli import cli
from lerobot_tools.repair import backup
from lerobot_tools.repair.backup import BackupError
from tests.editing import tree

REPO = Path(__file__).resolve().parents[2]
DATASETS = REPO / "fixtures" / "datasets"
NOT_TRUSTED = "; the backup is not trusted and nothing was changed"
BIG = bytes(range(256)) * 10241  # 2.5 MiB: more than two blocks of the 1 MiB copy loop


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def dataset_tree_of(t: dict[str, str]) -> dict[str, str]:
    return {k: v for k, v in t.items() if not k.startswith(".lrtool")}


def dataset_tree(root: Path) -> dict[str, str]:
    return dataset_tree_of(tree(root))


def put(path: Path, data: bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return path


def make_root(tmp_path: Path) -> Path:
    """A small dataset-like tree: the originals a repair will rewrite, leave, delete and move."""
    root = tmp_path / "ds"
    put(root / "meta/info.json", '{"robot": "bras articulé", "fps": 30}\n'.encode())
    put(root / "data/same.bin", b"left as it was")
    put(root / "deep/er/x.bin", BIG)
    put(root / "videos/a.mp4", b"video a")
    return root


def manifest_of(bdir: Path) -> dict:
    return json.loads((bdir / "manifest.json").read_text(encoding="utf-8"))


def edit_manifest(bdir: Path, fn) -> None:
    doc = manifest_of(bdir)
    fn(doc)
    (bdir / "manifest.json").write_text(json.dumps(doc), encoding="utf-8")


FILES = ["meta/new.json", "data/same.bin", "meta/info.json", "deep/er/x.bin"]
MOVES = [{"src": "videos/a.mp4", "dst": "videos/new/deep/a.mp4"}]


def repaired(tmp_path: Path) -> tuple[Path, Path, dict[str, str]]:
    """``make_root`` backed up and changed like a repair: a file created, one left alone, one rewritten, a folder
    deleted, a file moved into new folders; state ``applied``. Returns root, backup folder, original tree."""
    root = make_root(tmp_path)
    original = tree(root)
    bdir = backup.create(root, FILES, MOVES, {"target": str(root)})
    put(root / "meta/new.json", b"{}\n")
    (root / "meta/info.json").write_bytes(b'{"fps": 30}\n')
    shutil.rmtree(root / "deep")
    put(root / "videos/new/deep/a.mp4", b"")
    os.replace(root / "videos/a.mp4", root / "videos/new/deep/a.mp4")
    backup.mark_applied(root, bdir)
    return root, bdir, original


# ---------------------------------------------------------------------------------------------- sha256_file
def test_sha256_file_hashes_a_file_larger_than_the_json_cap(tmp_path):
    """A saved original can be any size (a parquet file): the JSON size cap of open_regular does not apply."""
    big = tmp_path / "big.bin"
    with open(big, "wb") as fh:
        fh.truncate(MAX_JSON_BYTES + 1)
    assert backup.sha256_file(big) == sha(bytes(MAX_JSON_BYTES + 1))
    assert backup.sha256_file(put(tmp_path / "small", BIG)) == sha(BIG)


def test_sha256_file_refuses_a_fifo_with_a_backup_error(tmp_path):
    fifo = tmp_path / "info.json"
    os.mkfifo(fifo)
    with pytest.raises(BackupError) as exc:
        backup.sha256_file(fifo)
    assert str(exc.value) == f"{fifo}: is a FIFO, not a regular file; lrtool only reads regular files"


# ---------------------------------------------------------------------------------------------- create
def test_create_saves_every_original_and_writes_the_manifest_word_for_word(tmp_path):
    root = make_root(tmp_path)
    (root / "deep/er/x.bin").chmod(0o640)
    before = tree(root)
    info = {"target": "données/ds", "checks": ["C001"]}
    moves = [{"src": "videos/a.mp4", "dst": "videos/a2.mp4"}]
    bdir = backup.create(root, ["meta/info.json", "deep/er/x.bin", "meta/ajouté.json"], moves, info)

    assert dataset_tree(root) == before  # the dataset itself is not touched
    assert sorted(p.name for p in (root / ".lrtool/backup").iterdir()) == [bdir.name]  # no partial left
    assert bdir.parent == root / ".lrtool/backup" and re.fullmatch(r"\d{8}T\d{6}\.\d{6}Z", bdir.name)
    saved = bdir / "files"
    assert (saved / "meta/info.json").read_bytes() == (root / "meta/info.json").read_bytes()
    assert (saved / "deep/er/x.bin").read_bytes() == BIG
    assert (saved / "deep/er/x.bin").stat().st_mode & 0o777 == 0o640
    assert not (saved / "meta/ajouté.json").exists()

    doc = {
        "lrtool_backup": 1,
        "created_utc": bdir.name,
        "lrtool_version": __version__,
        "state": "applying",
        "target": "données/ds",
        "checks": ["C001"],
        "files": [
            {"path": "meta/info.json", "existed": True, "sha256": sha((root / "meta/info.json").read_bytes()),
             "size": len((root / "meta/info.json").read_bytes())},
            {"path": "deep/er/x.bin", "existed": True, "sha256": sha(BIG), "size": 2621696},
            {"path": "meta/ajouté.json", "existed": False},
        ],
        "moves": moves,
        "created_dirs": [],
    }
    text = (bdir / "manifest.json").read_text(encoding="utf-8")
    assert json.loads(text) == doc
    assert text == json.dumps(doc, indent=2, ensure_ascii=False) + "\n"
    assert '"target": "données/ds"' in text and '"path": "meta/ajouté.json"' in text
    assert backup.read_manifest(bdir) == doc


def test_create_lists_only_the_folders_the_moves_will_create(tmp_path):
    root = make_root(tmp_path)
    put(root / "videos/b.mp4", b"b")
    put(root / "top.mp4", b"t")
    moves = [
        {"src": "videos/a.mp4", "dst": "videos/new/deep/a.mp4"},   # two new folders
        {"src": "videos/b.mp4", "dst": "videos/new/deep/b.mp4"},   # the same two: listed once
        {"src": "top.mp4", "dst": "videos/top.mp4"},               # an existing folder: none
        {"src": "data/same.bin", "dst": "same.bin"},               # the root itself: none
        {"src": "meta/info.json", "dst": "meta/x/info.json"},      # one new folder beside existing ones
    ]
    bdir = backup.create(root, [], moves, {})
    assert manifest_of(bdir)["created_dirs"] == ["videos/new", "videos/new/deep", "meta/x"]
    assert not (root / "videos/new").exists() and not (root / "meta/x").exists()


class _Clock(datetime):
    """datetime whose ``now`` returns the given instants in turn (and records the timezone asked for)."""

    ticks: list[datetime] = []
    zones: list = []

    @classmethod
    def now(cls, tz=None):
        cls.zones.append(tz)
        return cls.ticks.pop(0)


def test_create_takes_a_new_timestamp_when_the_folder_exists(tmp_path, monkeypatch):
    root = make_root(tmp_path)
    taken = datetime(2026, 8, 23, 10, 15, 0, 1, tzinfo=timezone.utc)
    (root / ".lrtool/backup/20260823T101500.000001Z").mkdir(parents=True)
    monkeypatch.setattr(_Clock, "ticks", [taken, taken, taken + timedelta(microseconds=1)])
    monkeypatch.setattr(_Clock, "zones", [])
    monkeypatch.setattr(backup, "datetime", _Clock)
    bdir = backup.create(root, ["meta/info.json"], [], {})
    assert bdir.name == "20260823T101500.000002Z" and _Clock.ticks == []
    assert _Clock.zones == [timezone.utc] * 3
    assert manifest_of(bdir)["created_utc"] == "20260823T101500.000002Z"
    assert sorted(p.name for p in bdir.parent.iterdir()) == ["20260823T101500.000001Z", "20260823T101500.000002Z"]


def test_timestamp_is_utc_whatever_the_local_zone():
    old = os.environ.get("TZ")
    os.environ["TZ"] = "LRT-14"  # POSIX: local time is UTC+14
    time.tzset()
    try:
        ts = backup.timestamp()
        now = datetime.now(timezone.utc)
    finally:
        if old is None:
            del os.environ["TZ"]
        else:
            os.environ["TZ"] = old
        time.tzset()
    assert re.fullmatch(r"\d{8}T\d{6}\.\d{6}Z", ts), ts
    stamped = datetime.strptime(ts, "%Y%m%dT%H%M%S.%fZ").replace(tzinfo=timezone.utc)
    assert abs(now - stamped) < timedelta(minutes=5)


# ---------------------------------------------------------------------------------------------- interrupted backups
def _crowded_base(tmp_path: Path) -> tuple[Path, dict[str, Path]]:
    """``.lrtool/backup`` holding one of each kind of entry."""
    root = make_root(tmp_path)
    applied = backup.create(root, ["meta/info.json"], [], {})
    undone = backup.create(root, ["data/same.bin"], [], {})
    edit_manifest(undone, lambda d: d.update(state="undone"))
    base = root / ".lrtool/backup"
    elsewhere = tmp_path / "elsewhere"
    (elsewhere / "files").mkdir(parents=True)
    e = {
        "applied": applied,
        "undone": undone,
        "partial": base / ".20260101T000000.000000Z.partial",  # a backup killed while being written
        "hidden": base / ".notes",                       # hidden, not partial: neither
        "hidden_undone": base / ".kept",                 # hidden copy of an undone backup: not read, kept
        "not_hidden_partial": base / "20260101T000000.000000Z.partial",  # no manifest: not a backup, kept
        "no_manifest": base / "20260101T000000.000001Z",
        "bad_json": base / "20260101T000000.000002Z",
        "file_partial": base / ".file.partial",          # a file, not a folder
        "link_partial": base / ".link.partial",          # a symlink to a folder outside
        "link_undone": base / "20260101T000000.000003Z",  # a symlink to an undone backup outside
    }
    put(e["partial"] / "files/meta/info.json", b"half")
    (e["hidden"] / "x").mkdir(parents=True)
    shutil.copytree(undone, e["hidden_undone"])
    e["not_hidden_partial"].mkdir()
    e["no_manifest"].mkdir()
    put(e["bad_json"] / "manifest.json", b"{not json")
    e["file_partial"].write_bytes(b"")
    os.symlink(elsewhere, e["link_partial"])
    shutil.copytree(undone, elsewhere / "undone")
    os.symlink(elsewhere / "undone", e["link_undone"])
    return root, e


def test_partial_backups_are_only_hidden_partial_folders(tmp_path):
    root, e = _crowded_base(tmp_path)
    assert backup.partial_backups(root) == [e["partial"]]


def test_clean_partial_removes_partial_and_undone_backups_only(tmp_path):
    root, e = _crowded_base(tmp_path)
    outside = tree(tmp_path / "elsewhere")
    before = tree(root / ".lrtool/backup")
    removed = backup.clean_partial(root)
    assert sorted(removed) == sorted([e["partial"], e["undone"]])
    gone = (e["partial"].name, e["undone"].name)
    assert tree(root / ".lrtool/backup") == {k: v for k, v in before.items() if not k.startswith(gone)}
    assert tree(tmp_path / "elsewhere") == outside
    assert backup.clean_partial(root) == []


def test_a_discard_cut_short_leaves_an_undone_backup_that_clean_partial_removes(tmp_path, monkeypatch):
    # the manifest says "undone" before the folder goes: a deletion cut short leaves a backup that is never
    # taken for the latest one to undo, and that the next run cleans up
    root = make_root(tmp_path)
    bdir = backup.create(root, ["meta/info.json"], [], {})

    def cut_short(path, *a, **k):
        raise OSError("interrupted")

    monkeypatch.setattr(backup.shutil, "rmtree", cut_short)
    with pytest.raises(OSError):
        backup.discard(root, bdir)
    monkeypatch.undo()
    assert backup.read_manifest(bdir)["state"] == "undone"
    assert backup.clean_partial(root) == [bdir]
    assert not bdir.exists()


def test_clean_partial_skips_files_and_symlinks_in_any_order(tmp_path):
    """Many entries that are skipped (files, symlinks, hidden folders), in whatever order the folder lists them:
    every partial folder is still removed, and the last removal prunes the empty ``.lrtool``."""
    root = make_root(tmp_path)
    base = root / ".lrtool/backup"
    partials = [base / f".2026010{i}T000000.000000Z.partial" for i in range(8)]
    for p in partials:
        put(p / "files/meta/info.json", b"half")
    for i in range(8):
        put(base / f".file{i}.partial", b"")
        os.symlink(root / "meta", base / f".link{i}.partial")
    removed = backup.clean_partial(root)
    assert sorted(removed) == partials
    assert sorted(p.name for p in base.iterdir()) == sorted(
        [f".file{i}.partial" for i in range(8)] + [f".link{i}.partial" for i in range(8)])
    for i in range(8):
        (base / f".file{i}.partial").unlink()
        (base / f".link{i}.partial").unlink()
    put(base / ".last.partial/files/x", b"")
    assert backup.clean_partial(root) == [base / ".last.partial"]
    assert not (root / ".lrtool").exists()
    assert (root / "meta/info.json").is_file()


@contextlib.contextmanager
def _busy_mount(at: Path):
    """A tmpfs mounted at ``at`` (root only): a folder ``shutil.rmtree`` cannot remove (EBUSY)."""
    if os.geteuid() != 0 or shutil.which("mount") is None:
        pytest.skip("needs root to mount a tmpfs")
    at.mkdir(parents=True)
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(at)], capture_output=True)
    if r.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here ({r.stderr.decode().strip() or r.returncode})")
    try:
        yield at
    finally:
        subprocess.run(["umount", "-l", str(at)], capture_output=True)


def test_clean_partial_does_its_best_with_a_folder_it_cannot_remove(tmp_path):
    """A partial backup that cannot be removed completely does not stop the cleanup (nor the repair after it)."""
    root = make_root(tmp_path)
    base = root / ".lrtool/backup"
    stuck = base / ".20260101T000000.000000Z.partial"
    put(stuck / "files/meta/info.json", b"half")
    with _busy_mount(stuck / "files/mnt") as mnt:
        put(mnt / "inside", b"x")
        removed = backup.clean_partial(root)
        assert removed == [stuck]
        assert sorted(p.relative_to(stuck).as_posix() for p in stuck.rglob("*")) == ["files", "files/mnt"]


# ---------------------------------------------------------------------------------------------- manifest paths
@pytest.mark.parametrize("bad, shown, problem", [
    ("", "''", "is not a relative path"),
    (None, "'NoneType'", "is not a relative path"),
    (7, "'int'", "is not a relative path"),
    ("meta/a\x01b.json", "'meta/a\\x01b.json'", "contains a control character or a backslash"),
    ("meta/a\x1fb.json", "'meta/a\\x1fb.json'", "contains a control character or a backslash"),
    ("meta/a\x7fb.json", "'meta/a\\x7fb.json'", "contains a control character or a backslash"),
    ("meta\\info.json", "'meta\\\\info.json'", "contains a control character or a backslash"),
    ("/etc/hostname", "'/etc/hostname'", "is an absolute path"),
    ("meta/../../outside", "'meta/../../outside'", "has an empty, '.' or '..' component"),
    ("meta//info.json", "'meta//info.json'", "has an empty, '.' or '..' component"),
    ("./meta/info.json", "'./meta/info.json'", "has an empty, '.' or '..' component"),
    ("meta/", "'meta/'", "has an empty, '.' or '..' component"),
    (".lrtool/lock", "'.lrtool/lock'", "points into .lrtool/"),
])
def test_every_path_problem_is_refused_word_for_word(tmp_path, bad, shown, problem):
    root = make_root(tmp_path)
    bdir = backup.create(root, ["meta/info.json"], [], {})
    edit_manifest(bdir, lambda d: d["files"].append({"path": bad, "existed": False}))
    before = tree(root)
    for call in (lambda: backup.read_manifest(bdir), lambda: backup.restore(root, bdir, force=True)):
        with pytest.raises(BackupError) as exc:
            call()
        assert str(exc.value) == f"{bdir / 'manifest.json'}: files[1].path {shown} {problem}{NOT_TRUSTED}"
    assert tree(root) == before


@pytest.mark.parametrize("ok", ["meta/with space.json", "meta/ajouté ~!.json", "meta/.hidden", "meta/...", "a"])
def test_plain_relative_paths_are_accepted(tmp_path, ok):
    """The boundary of the refusals: spaces, non-ASCII, dots inside names are plain paths (the entry is a file the
    repair created; the restore removes it)."""
    root = make_root(tmp_path)
    bdir = backup.create(root, ["meta/info.json", ok], [], {})
    put(root / ok, b"created by the repair")
    assert backup.read_manifest(bdir)["files"][1] == {"path": ok, "existed": False}
    assert backup.restore(root, bdir) == {"restored": [], "removed": [ok], "moved_back": []}
    assert not (root / ok).exists()


def test_a_path_through_a_symlink_out_of_the_dataset_is_refused(tmp_path):
    root = make_root(tmp_path)
    outside = put(tmp_path / "outside/precious.txt", b"keep me").parent
    os.symlink(outside, root / "meta/out")
    bdir = backup.create(root, ["meta/info.json"], [], {})
    edit_manifest(bdir, lambda d: d.update(created_dirs=["meta/out"]))
    before, kept = tree(root), tree(outside)
    with pytest.raises(BackupError) as exc:
        backup.restore(root, bdir)
    assert str(exc.value) == (f"{bdir / 'manifest.json'}: created_dirs[0] 'meta/out' resolves outside the dataset "
                              f"(through a symlink){NOT_TRUSTED}")
    assert tree(root) == before and tree(outside) == kept


@pytest.mark.skipif(sys.version_info >= (3, 13), reason="Path.resolve raises on a symlink loop only before 3.13")
def test_a_path_through_a_symlink_loop_is_refused(tmp_path):
    root = make_root(tmp_path)
    os.symlink("loop", root / "meta/loop")
    bdir = backup.create(root, ["meta/info.json"], [], {})
    edit_manifest(bdir, lambda d: d["files"].append({"path": "meta/loop/x.json", "existed": False}))
    with pytest.raises(BackupError) as exc:
        backup.read_manifest(bdir)
    assert str(exc.value) == (f"{bdir / 'manifest.json'}: files[1].path 'meta/loop/x.json' resolves outside the "
                              f"dataset (through a symlink){NOT_TRUSTED}")


def test_file_paths_are_checked_when_there_are_moves_too(tmp_path):
    root = make_root(tmp_path)
    bdir = backup.create(root, ["meta/info.json"], MOVES, {})
    edit_manifest(bdir, lambda d: d["files"].append({"path": "../outside", "existed": False}))
    with pytest.raises(BackupError) as exc:
        backup.read_manifest(bdir)
    assert str(exc.value) == (f"{bdir / 'manifest.json'}: files[1].path '../outside' has an empty, '.' or '..' "
                              f"component{NOT_TRUSTED}")
    edit_manifest(bdir, lambda d: (d["files"].pop(), d["moves"].insert(0, {"src": "/tmp/x", "dst": "meta/x"})))
    with pytest.raises(BackupError) as exc:
        backup.read_manifest(bdir)
    assert str(exc.value) == f"{bdir / 'manifest.json'}: moves[0].src '/tmp/x' is an absolute path{NOT_TRUSTED}"


@pytest.mark.parametrize("content, message", [
    (b"{not json", "is not valid JSON: Expecting property name enclosed in double quotes at line 1 column 2"),
    (b"\xff\xfe", "is not UTF-8 text"),
])
def test_an_unreadable_manifest_is_a_backup_error(tmp_path, content, message):
    root = make_root(tmp_path)
    bdir = backup.create(root, ["meta/info.json"], [], {})
    (bdir / "manifest.json").write_bytes(content)
    with pytest.raises(BackupError) as exc:
        backup.read_manifest(bdir)
    assert str(exc.value) == f"{bdir / 'manifest.json'}: {message}"
    assert backup.clean_partial(root) == [] and bdir.is_dir()  # not a backup lrtool can read: left alone


# ---------------------------------------------------------------------------------------------- saved originals
def test_every_saved_original_is_verified_even_after_a_created_file(tmp_path):
    root = make_root(tmp_path)
    bdir = backup.create(root, ["meta/new.json", "meta/info.json"], [], {})
    (bdir / "files/meta/info.json").write_bytes(b"altered in the backup")
    (root / "meta/info.json").write_bytes(b"repaired")
    before = tree(root)
    message = (f"{bdir}: the saved original of meta/info.json does not match the SHA-256 the manifest recorded; "
               "the backup is not trusted and nothing was changed")
    with pytest.raises(BackupError) as exc:
        backup.verify_backup(root, bdir, backup.read_manifest(bdir))
    assert str(exc.value) == message
    with pytest.raises(BackupError) as exc:
        backup.restore(root, bdir, force=True)
    assert str(exc.value) == message
    assert tree(root) == before


@pytest.mark.parametrize("kind", ["fifo", "folder", "through a symlinked folder"])
def test_a_saved_original_that_is_not_a_regular_file_inside_the_backup_is_refused(tmp_path, kind):
    root = make_root(tmp_path)
    original = (root / "meta/info.json").read_bytes()
    bdir = backup.create(root, ["meta/info.json"], [], {})
    saved = bdir / "files/meta/info.json"
    saved.unlink()
    if kind == "fifo":
        os.mkfifo(saved)
    elif kind == "folder":
        saved.mkdir()
    else:  # the right bytes, but outside the backup
        elsewhere = put(tmp_path / "elsewhere/info.json", original).parent
        (bdir / "files/meta").rmdir()
        os.symlink(elsewhere, bdir / "files/meta")
    (root / "meta/info.json").write_bytes(b"repaired")
    before = tree(root)
    with pytest.raises(BackupError) as exc:
        backup.restore(root, bdir, force=True)
    assert str(exc.value) == (f"{bdir}: the saved original of meta/info.json is not a regular file inside the "
                              "backup; nothing was changed")
    assert tree(root) == before


# ---------------------------------------------------------------------------------------------- modified_since
def test_modified_since_counts_only_bytes_that_are_neither_original_nor_repaired(tmp_path):
    root, bdir, original = repaired(tmp_path)
    doc = backup.read_manifest(bdir)
    assert backup.modified_since(root, doc) == []
    # put back to the original bytes by hand: not an edit
    shutil.copyfile(bdir / "files/meta/info.json", root / "meta/info.json")
    (root / "meta/new.json").unlink()
    assert backup.modified_since(root, doc) == []
    # edited, deleted, re-created with other bytes: edits
    (root / "meta/info.json").write_bytes(b"edited by hand")
    (root / "data/same.bin").unlink()
    put(root / "meta/new.json", b"{} edited")
    assert backup.modified_since(root, doc) == ["meta/new.json", "data/same.bin", "meta/info.json"]


def test_modified_since_ignores_a_hash_on_a_created_entry(tmp_path):
    """A file the repair created has no original bytes: a ``sha256`` on its entry does not make them original."""
    root = make_root(tmp_path)
    bdir = backup.create(root, ["meta/new.json"], [], {})
    put(root / "meta/new.json", b"{}\n")
    backup.mark_applied(root, bdir)
    (root / "meta/new.json").write_bytes(b"edited by hand")
    edit_manifest(bdir, lambda d: d["files"][0].update(sha256=sha(b"edited by hand")))
    assert backup.modified_since(root, backup.read_manifest(bdir)) == ["meta/new.json"]


# ---------------------------------------------------------------------------------------------- restore
def test_restore_puts_back_every_byte_and_says_what_it_did(tmp_path):
    root, bdir, original = repaired(tmp_path)
    done = backup.restore(root, bdir)
    assert done == {"restored": ["meta/info.json", "deep/er/x.bin"], "removed": ["meta/new.json"],
                    "moved_back": ["videos/a.mp4"]}
    assert dataset_tree(root) == dataset_tree_of(original)  # folders the move created are gone, deep/er is back
    assert (root / "deep/er/x.bin").read_bytes() == BIG
    # again (a restore killed half-way is run again): nothing left to do
    assert backup.restore(root, bdir) == {"restored": [], "removed": [], "moved_back": []}
    backup.discard(root, bdir)
    assert tree(root) == original


def test_restore_refuses_files_edited_after_the_repair(tmp_path):
    root, bdir, original = repaired(tmp_path)
    (root / "meta/info.json").write_bytes(b"edited by hand")
    before = tree(root)
    with pytest.raises(BackupError) as exc:
        backup.restore(root, bdir)
    assert str(exc.value) == (f"{root}: 1 file(s) changed since the repair (e.g. meta/info.json); undoing would lose "
                              f"those edits. The originals are in {bdir / 'files'}")
    assert tree(root) == before
    assert backup.restore(root, bdir, force=True)["restored"] == ["meta/info.json", "deep/er/x.bin"]
    assert dataset_tree(root) == dataset_tree_of(original)


def test_an_interrupted_repair_is_restored_unconditionally(tmp_path):
    """State ``applying`` (killed mid-repair): no ``sha256_after`` to compare with, every file is put back."""
    root = make_root(tmp_path)
    original = tree(root)
    bdir = backup.create(root, ["meta/info.json"], [], {})
    (root / "meta/info.json").write_bytes(b"half-written")
    assert backup.restore(root, bdir) == {"restored": ["meta/info.json"], "removed": [], "moved_back": []}
    backup.discard(root, bdir)
    assert tree(root) == original


def test_restore_reports_a_move_it_cannot_reverse(tmp_path):
    root = make_root(tmp_path)
    put(root / "videos/b.mp4", b"b")
    moves = [{"src": "videos/a.mp4", "dst": "videos/a2.mp4"}, {"src": "videos/b.mp4", "dst": "videos/b2.mp4"}]
    bdir = backup.create(root, [], moves, {})
    os.replace(root / "videos/a.mp4", root / "videos/a2.mp4")
    os.replace(root / "videos/b.mp4", root / "videos/b2.mp4")
    (root / "videos/a2.mp4").unlink()  # neither where it was nor where it went
    put(root / "videos/b.mp4", b"b again")  # both places: neither is overwritten
    with pytest.raises(BackupError) as exc:
        backup.restore(root, bdir, force=True)
    assert str(exc.value) == (f"{root}: 1 file(s) could not be restored (e.g. videos/a.mp4); the originals are in "
                              f"{bdir / 'files'}")
    assert (root / "videos/b.mp4").read_bytes() == b"b again" and (root / "videos/b2.mp4").read_bytes() == b"b"


def test_restore_refuses_bytes_that_change_after_verification(tmp_path, monkeypatch):
    """The saved copy is altered between verify_backup and the copy (another process writing into the backup):
    the copy is checked against the manifest's SHA-256 before it replaces the file, so nothing is replaced."""
    root = make_root(tmp_path)
    bdir = backup.create(root, ["meta/info.json"], [], {})
    (root / "meta/info.json").write_bytes(b"repaired")
    before = tree(root)
    real = shutil.copyfile

    def racing_copyfile(src, dst, *a, **k):
        Path(src).write_bytes(b"changed after verification")
        return real(src, dst, *a, **k)

    monkeypatch.setattr(backup.shutil, "copyfile", racing_copyfile)
    with pytest.raises(BackupError) as exc:
        backup.restore(root, bdir, force=True)
    assert str(exc.value) == "meta/info.json: restored bytes do not match the backup manifest"
    assert tree(root) == {**before, f".lrtool/backup/{bdir.name}/files/meta/info.json":
                          sha(b"changed after verification")}
    assert not [p for p in (root / "meta").iterdir() if p.name.startswith(TMP_PREFIX)]


# ---------------------------------------------------------------------------------------------- manifests on disk
def test_write_manifest_is_indented_utf8_json(tmp_path):
    root = make_root(tmp_path)
    bdir = backup.create(root, ["meta/info.json"], [], {"target": "ds"})
    doc = backup.read_manifest(bdir)
    doc["target"] = "données ✓"
    backup.write_manifest(bdir, doc)
    text = (bdir / "manifest.json").read_text(encoding="utf-8")
    assert text == json.dumps(doc, indent=2, ensure_ascii=False) + "\n"
    assert '\n  "target": "données ✓",\n' in text


_KILL_IN_DISCARD = """
import os, shutil, signal, sys, types
from lerobot_tools.repair import backup
def rmtree(path, *a, **k):
    os.kill(os.getpid(), signal.SIGKILL)   # every file is restored; the backup is being deleted
backup.shutil = types.SimpleNamespace(**{**vars(shutil), "rmtree": rmtree})
from lerobot_tools.cli import main
main(["repair", "--undo", sys.argv[1]])
"""


def test_an_undo_killed_while_deleting_its_backup_leaves_it_marked_undone(tmp_path):
    root = tmp_path / "données"
    shutil.copytree(DATASETS / "broken_wrong_totals", root)
    original = tree(root)
    r = CliRunner().invoke(cli, ["repair", str(root)])
    assert r.exit_code == 0, r.output
    (bdir,) = (root / ".lrtool/backup").iterdir()
    applied = manifest_of(bdir)
    assert applied["state"] == "applied" and applied["target"] == str(root)
    proc = subprocess.run([sys.executable, "-c", _KILL_IN_DISCARD, str(root)], capture_output=True, timeout=120,
                          cwd=REPO, env={**os.environ, "PYTHONPATH": str(REPO)})
    assert proc.returncode == -signal.SIGKILL, proc.stderr.decode()
    assert dataset_tree(root) == dataset_tree_of(original)
    text = (bdir / "manifest.json").read_text(encoding="utf-8")
    assert json.loads(text) == {**applied, "state": "undone"}
    assert text == json.dumps({**applied, "state": "undone"}, indent=2, ensure_ascii=False) + "\n"
    assert f'"target": "{root}"' in text
    assert backup.latest(root) is None
    assert backup.clean_partial(root) == [bdir]
    assert not (root / ".lrtool/backup").exists()


def test_undo_of_moved_files_through_the_cli(tmp_path):
    root = tmp_path / "ds"
    shutil.copytree(DATASETS / "broken_video_path", root)
    original = tree(root)
    r = CliRunner().invoke(cli, ["repair", "--move-files", str(root)])
    assert r.exit_code == 0, r.output
    (bdir,) = (root / ".lrtool/backup").iterdir()
    old = "videos/chunk-000/observation.images.front/episode_{:06d}.mp4"
    new = "videos/observation.images.front/chunk-000/episode_{:06d}.mp4"
    doc = manifest_of(bdir)
    assert doc["moves"] == [{"src": old.format(i), "dst": new.format(i)} for i in range(3)]
    assert doc["created_dirs"] == ["videos/observation.images.front", "videos/observation.images.front/chunk-000"]
    r = CliRunner().invoke(cli, ["repair", "--undo", str(root)])
    assert r.exit_code == 0, r.output
    assert r.output.splitlines()[:6] == [
        str(root),
        f"  backup: .lrtool/backup/{bdir.name} (state: applied)",
        *[f"  moved back {old.format(i)}" for i in (2, 1, 0)],
        "  the dataset is as it was before the repair; the backup was deleted",
    ]
    assert tree(root) == original
