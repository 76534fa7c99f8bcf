"""``lerobot_tools.prefetch.local`` on its own: tree entries parsed from the Hub API's item shapes, the
containment checks of listed paths, the cached tree listing and per-file download metadata as files on disk,
content hashes of real files (git blob SHA-1, LFS SHA-256), the "already present" decision and the cleanup
of a killed run's temporary files. Complements tests/prefetch/test_prefetch.py, which goes through a whole prefetch
against a local Hub server, with exact values and refusal messages.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import pytest

from lerobot_tools._io import TMP_PREFIX, clean_stale_temps
from lerobot_tools.errors import LrtoolError
from lerobot_tools.prefetch import local
from lerobot_tools.prefetch.local import (
    ContentHasher,
    DownloadMetadata,
    TreeFile,
    cached_tree_commits,
    check_listing,
    check_present,
    ensure_hf_dir,
    hash_file_matches,
    is_reserved,
    lock_path,
    metadata_path,
    path_problem,
    read_metadata,
    read_tree_cache,
    remove_stale_temps,
    tree_cache_path,
    write_metadata,
    write_tree_cache,
)

C1 = "1" * 40
C2 = "2" * 40
C3 = "3" * 40
SHA256 = "ab" * 32
XET = "cd" * 32


def blob_sha1(data: bytes) -> str:
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


# --------------------------------------------------------------------------------------------------
# TreeFile: the Hub's tree items, the cached form


def test_from_api_regular_file():
    item = {"type": "file", "oid": "a" * 40, "size": 123, "path": "meta/info.json"}
    assert TreeFile.from_api(item) == TreeFile(path="meta/info.json", size=123, blob_id="a" * 40,
                                               lfs_sha256=None, lfs_size=None, xet_hash=None)


def test_from_api_lfs_file_with_xet_hash():
    item = {"type": "file", "oid": "b" * 40, "size": 4096, "path": "data/chunk-000/file-000.parquet",
            "lfs": {"oid": SHA256, "size": 4096, "pointerSize": 134}, "xetHash": XET}
    tf = TreeFile.from_api(item)
    assert tf == TreeFile(path="data/chunk-000/file-000.parquet", size=4096, blob_id="b" * 40,
                          lfs_sha256=SHA256, lfs_size=4096, xet_hash=XET)
    assert tf.etag == SHA256


def test_from_api_lfs_size_is_its_own_value():
    tf = TreeFile.from_api({"path": "v.mp4", "oid": "c" * 40, "size": 10, "lfs": {"oid": SHA256, "size": "7"}})
    assert (tf.size, tf.lfs_size, tf.lfs_sha256) == (10, 7, SHA256)


def test_from_api_lfs_without_size_and_without_oid():
    tf = TreeFile.from_api({"path": "x.bin", "oid": "c" * 40, "size": 10, "lfs": {"pointerSize": 1}})
    assert tf == TreeFile(path="x.bin", size=10, blob_id="c" * 40)
    assert tf.etag == "c" * 40


def test_from_api_missing_or_null_fields_default():
    assert TreeFile.from_api({"path": "a.txt"}) == TreeFile(path="a.txt", size=0, blob_id="")
    assert TreeFile.from_api({"path": "a.txt", "size": None, "oid": None, "lfs": None, "xetHash": None}) == \
        TreeFile(path="a.txt", size=0, blob_id="")
    assert TreeFile.from_api({"path": "a.txt", "lfs": {}}) == TreeFile(path="a.txt", size=0, blob_id="")


def test_from_api_zero_sizes_are_accepted():
    tf = TreeFile.from_api({"path": "empty", "oid": "e" * 40, "size": 0, "lfs": {"oid": SHA256, "size": 0}})
    assert (tf.size, tf.lfs_size) == (0, 0)


def test_from_api_without_path_is_a_key_error():
    with pytest.raises(KeyError):
        TreeFile.from_api({"oid": "a" * 40, "size": 1})


@pytest.mark.parametrize("item, exc, message", [
    ({"path": "a/b.bin", "lfs": "sha256:00"}, ValueError, "tree entry 'a/b.bin': 'lfs' is not an object"),
    ({"path": "a/b.bin", "lfs": [1]}, ValueError, "tree entry 'a/b.bin': 'lfs' is not an object"),
    ({"path": "a/b.bin", "size": -1}, ValueError, "tree entry 'a/b.bin': negative size"),
    ({"path": "a/b.bin", "size": 5, "lfs": {"oid": SHA256, "size": -1}}, ValueError,
     "tree entry 'a/b.bin': negative size"),
    ({"path": "a/b.bin", "size": 5, "lfs": {"oid": 12345, "size": 5}}, TypeError,
     "tree entry 'a/b.bin': a hash is not a string"),
    ({"path": "a/b.bin", "size": 5, "xetHash": 7}, TypeError, "tree entry 'a/b.bin': a hash is not a string"),
    ({"path": "a/b.bin", "size": 5, "xetHash": ["x"]}, TypeError, "tree entry 'a/b.bin': a hash is not a string"),
])
def test_from_api_refusals(item, exc, message):
    with pytest.raises(exc) as ei:
        TreeFile.from_api(item)
    assert type(ei.value) is exc
    assert str(ei.value) == message


def test_from_api_size_not_an_integer():
    with pytest.raises(ValueError):
        TreeFile.from_api({"path": "a", "size": "big"})
    with pytest.raises(TypeError):
        TreeFile.from_api({"path": "a", "size": 1, "lfs": {"size": [1]}})


def test_to_json_exact_dicts():
    assert TreeFile("a", 3, "a" * 40).to_json() == {"size": 3, "blob_id": "a" * 40}
    assert TreeFile("a", 3, "a" * 40, SHA256, 3).to_json() == \
        {"size": 3, "blob_id": "a" * 40, "lfs_sha256": SHA256, "lfs_size": 3}
    assert TreeFile("a", 3, "a" * 40, xet_hash=XET).to_json() == {"size": 3, "blob_id": "a" * 40, "xet_hash": XET}
    assert TreeFile("a", 3, "a" * 40, SHA256, 3, XET).to_json() == \
        {"size": 3, "blob_id": "a" * 40, "lfs_sha256": SHA256, "lfs_size": 3, "xet_hash": XET}


@pytest.mark.parametrize("tf", [
    TreeFile("meta/info.json", 3, "a" * 40),
    TreeFile("data/f.parquet", 9, "b" * 40, SHA256, 9),
    TreeFile("videos/v.mp4", 9, "b" * 40, SHA256, 9, XET),
    TreeFile("x", 0, "c" * 40, xet_hash=XET),
])
def test_to_json_from_json_round_trip(tf):
    assert TreeFile.from_json(tf.path, json.loads(json.dumps(tf.to_json()))) == tf


def test_from_json_defaults_and_coercion():
    assert TreeFile.from_json("p", {"size": "12"}) == TreeFile("p", 12, "")
    assert TreeFile.from_json("p", {"size": 1, "blob_id": None}) == TreeFile("p", 1, "")
    assert TreeFile.from_json("p", {"size": 1, "blob_id": 5}) == TreeFile("p", 1, "5")
    with pytest.raises(KeyError):
        TreeFile.from_json("p", {"blob_id": "a" * 40})


# --------------------------------------------------------------------------------------------------
# listed paths


@pytest.mark.parametrize("path, why", [
    ("", "empty path"),
    (None, "empty path"),
    (123, "empty path"),
    (b"a/b", "empty path"),
    ("/etc/passwd", "absolute path"),
    ("/", "absolute path"),
    ("C:/x", "absolute path"),
    ("c:x", "absolute path"),
    ("Z:", "absolute path"),
    ("a\\b", "backslash or control character"),
    ("a\x00b", "backslash or control character"),
    ("a\nb", "backslash or control character"),
    ("a\x1fb", "backslash or control character"),
    ("a\x7fb", "backslash or control character"),
    ("a//b", "'..', '.' or empty path component"),
    ("a/", "'..', '.' or empty path component"),
    ("a/./b", "'..', '.' or empty path component"),
    ("./a", "'..', '.' or empty path component"),
    ("a/../b", "'..', '.' or empty path component"),
    ("..", "'..', '.' or empty path component"),
    ("a" * 4097, "path longer than 4096 bytes"),
    ("\u00e9" * 2048 + "a", "path longer than 4096 bytes"),
])
def test_path_problem_refusals(path, why):
    assert path_problem(path) == why


@pytest.mark.parametrize("path", [
    "a", "meta/info.json", "a" * 4096, "\u00e9" * 2048, "a b/c d.txt", "1:x", "ab:c", "a/b:c", "...", "a/.b",
    "..a/b..", ".lrtool/x", "\x80x",
])
def test_path_problem_accepts(path):
    assert path_problem(path) is None


@pytest.mark.parametrize("path, reserved", [
    (".lrtool/backup/x", True),
    (".lrtool/x", True),
    (".LRTool/x", True),
    (".cache/huggingface/download/a.metadata", True),
    (".Cache/HuggingFace/x", True),
    (".lrtool", False),
    (".cache/huggingface", False),
    (".cache/x", False),
    (".cache", False),
    ("a/.lrtool/x", False),
    ("lrtool/x", False),
    ("data/.cache/huggingface/x", False),
])
def test_is_reserved(path, reserved):
    assert is_reserved(path) is reserved


def _tree(*paths: str) -> dict[str, TreeFile]:
    return {p: TreeFile(p, 1, "a" * 40) for p in paths}


def test_check_listing_plain_listing_is_returned_as_is(tmp_path):
    tree = _tree("meta/info.json", "data/chunk-000/file-000.parquet", "README.md")
    usable, reserved = check_listing(tmp_path / "dest", tree)
    assert usable == tree and reserved == []


def test_check_listing_splits_off_reserved_paths(tmp_path):
    tree = _tree("README.md", ".lrtool/b", ".cache/huggingface/a", ".lrtool", ".cache/x")
    usable, reserved = check_listing(tmp_path, tree)
    assert usable == _tree("README.md", ".lrtool", ".cache/x")
    assert reserved == [".cache/huggingface/a", ".lrtool/b"]


def test_check_listing_only_reserved(tmp_path):
    usable, reserved = check_listing(tmp_path, _tree(".lrtool/z", ".lrtool/a"))
    assert usable == {} and reserved == [".lrtool/a", ".lrtool/z"]


@pytest.mark.parametrize("paths, message", [
    (("ok.txt", "../x"),
     "the tree listing names '../x': '..', '.' or empty path component; repo refused, nothing written"),
    (("ok.txt", "/abs", "a/../b"),
     "the tree listing names '/abs': absolute path (and 1 more); repo refused, nothing written"),
    (("a\\b", "ok.txt", "/abs", "a/../b"),
     "the tree listing names '/abs': absolute path (and 2 more); repo refused, nothing written"),
    ((".lrtool/../../x",),
     "the tree listing names '.lrtool/../../x': '..', '.' or empty path component; repo refused, nothing written"),
])
def test_check_listing_refuses_bad_paths(tmp_path, paths, message):
    with pytest.raises(LrtoolError) as ei:
        check_listing(tmp_path / "dest", _tree(*paths))
    assert str(ei.value) == message


def test_check_listing_refuses_a_folder_that_is_a_symlink_out(tmp_path):
    dest, outside = tmp_path / "dest", tmp_path / "outside"
    dest.mkdir()
    outside.mkdir()
    (dest / "link").symlink_to(outside)
    with pytest.raises(LrtoolError) as ei:
        check_listing(dest, _tree("ok.txt", "link/f.bin"))
    assert str(ei.value) == (f"the tree listing names 'link/': resolves outside the destination ({outside}); "
                             "repo refused, nothing written")
    assert list(outside.iterdir()) == []


def test_check_listing_checks_the_whole_parent_not_its_first_component(tmp_path):
    dest, outside = tmp_path / "dest", tmp_path / "outside"
    (dest / "a").mkdir(parents=True)
    outside.mkdir()
    (dest / "a" / "b").symlink_to(outside)
    with pytest.raises(LrtoolError) as ei:
        check_listing(dest, _tree("a/x", "a/b/f.bin"))
    assert str(ei.value) == (f"the tree listing names 'a/b/': resolves outside the destination ({outside}); "
                             "repo refused, nothing written")


def test_check_listing_names_only_the_first_symlinked_folder(tmp_path):
    dest, outside = tmp_path / "dest", tmp_path / "outside"
    dest.mkdir()
    outside.mkdir()
    (dest / "b").symlink_to(outside)
    (dest / "a").symlink_to(outside)
    with pytest.raises(LrtoolError) as ei:
        check_listing(dest, _tree("b/f", "a/f"))
    assert str(ei.value) == (f"the tree listing names 'a/': resolves outside the destination ({outside}); "
                             "repo refused, nothing written")


def test_check_listing_symlink_inside_the_destination_is_fine(tmp_path):
    dest = tmp_path / "dest"
    (dest / "real").mkdir(parents=True)
    (dest / "alias").symlink_to(dest / "real")
    tree = _tree("alias/f", "real/g", "top")
    assert check_listing(dest, tree) == (tree, [])


def test_check_listing_destination_itself_a_symlink(tmp_path):
    real = tmp_path / "real"
    real.mkdir()
    (tmp_path / "dest").symlink_to(real)
    tree = _tree("f", "d/g")
    assert check_listing(tmp_path / "dest", tree) == (tree, [])


def test_check_listing_does_not_follow_reserved_folders(tmp_path):
    dest, outside = tmp_path / "dest", tmp_path / "outside"
    dest.mkdir()
    outside.mkdir()
    (dest / ".lrtool").symlink_to(outside)
    usable, reserved = check_listing(dest, _tree("top.txt", ".lrtool/x/y"))
    assert usable == _tree("top.txt") and reserved == [".lrtool/x/y"]


# --------------------------------------------------------------------------------------------------
# the bookkeeping folder and the cached listing


def test_ensure_hf_dir_creates_gitignore(tmp_path):
    d = ensure_hf_dir(tmp_path / "dest")
    assert d == tmp_path / "dest" / ".cache" / "huggingface"
    assert sorted(p.name for p in d.iterdir()) == [".gitignore"]
    assert (d / ".gitignore").read_bytes() == b"*"


def test_ensure_hf_dir_keeps_an_existing_gitignore(tmp_path):
    d = tmp_path / ".cache" / "huggingface"
    d.mkdir(parents=True)
    (d / ".gitignore").write_text("mine\n")
    assert ensure_hf_dir(tmp_path) == d
    assert (d / ".gitignore").read_text() == "mine\n"
    assert sorted(p.name for p in d.iterdir()) == [".gitignore"]


def test_ensure_hf_dir_when_gitignore_cannot_be_written(tmp_path):
    """The folder's full path leaves no room for the temporary name next to .gitignore: the folder is
    still made and returned, without a .gitignore."""
    tail = len("/.cache/huggingface/.gitignore")
    dest = tmp_path
    while len(str(dest)) + tail < 4090 - 200:
        dest = dest / ("d" * 200)
    dest = dest / ("e" * (4090 - tail - len(str(dest)) - 1))
    d = dest / ".cache" / "huggingface"
    assert len(str(d / ".gitignore")) == 4090
    assert ensure_hf_dir(dest) == d
    assert d.is_dir() and list(d.iterdir()) == []


TREE = {
    "b.txt": TreeFile("b.txt", 2, "b" * 40),
    "a/v.mp4": TreeFile("a/v.mp4", 5, "c" * 40, SHA256, 5, XET),
}


def test_write_tree_cache_exact_file(tmp_path):
    write_tree_cache(tmp_path, C1, TREE)
    path = tmp_path / ".cache" / "huggingface" / "trees" / f"{C1}.json"
    assert tree_cache_path(tmp_path, C1) == path
    assert path.read_text(encoding="utf-8") == (
        '{\n'
        ' "format_version": 1,\n'
        ' "files": {\n'
        '  "a/v.mp4": {\n'
        '   "size": 5,\n'
        f'   "blob_id": "{"c" * 40}",\n'
        f'   "lfs_sha256": "{SHA256}",\n'
        '   "lfs_size": 5,\n'
        f'   "xet_hash": "{XET}"\n'
        '  },\n'
        '  "b.txt": {\n'
        '   "size": 2,\n'
        f'   "blob_id": "{"b" * 40}"\n'
        '  }\n'
        ' }\n'
        '}')
    assert (tmp_path / ".cache" / "huggingface" / ".gitignore").read_text() == "*"
    assert read_tree_cache(tmp_path, C1) == TREE


def test_write_tree_cache_twice_and_for_two_commits(tmp_path):
    write_tree_cache(tmp_path, C1, TREE)
    write_tree_cache(tmp_path, C2, {"only": TreeFile("only", 1, "d" * 40)})
    write_tree_cache(tmp_path, C1, TREE)
    assert read_tree_cache(tmp_path, C1) == TREE
    assert read_tree_cache(tmp_path, C2) == {"only": TreeFile("only", 1, "d" * 40)}
    trees = tmp_path / ".cache" / "huggingface" / "trees"
    assert sorted(p.name for p in trees.iterdir()) == [f"{C1}.json", f"{C2}.json"]


def test_read_tree_cache_absent_or_bad_commit(tmp_path):
    assert read_tree_cache(tmp_path, C1) is None
    write_tree_cache(tmp_path, C1, TREE)
    assert read_tree_cache(tmp_path, C2) is None
    for bad in ("", None, "main", C1[:39], C1 + "0"):
        assert read_tree_cache(tmp_path, bad) is None
    hexy = "0123456789abcdef" * 2 + "01234567"
    write_tree_cache(tmp_path, hexy, TREE)
    assert read_tree_cache(tmp_path, hexy) == TREE
    assert read_tree_cache(tmp_path, hexy.upper()) is None


def test_read_tree_cache_upper_case_file_for_upper_case_commit_is_ignored(tmp_path):
    upper = "A" * 40
    p = tmp_path / ".cache" / "huggingface" / "trees" / f"{upper}.json"
    p.parent.mkdir(parents=True)
    p.write_text(json.dumps({"format_version": 1, "files": {}}))
    assert read_tree_cache(tmp_path, upper) is None


@pytest.mark.parametrize("text", [
    "not json",
    "",
    "[]",
    '"x"',
    '{"files": {}}',
    '{"format_version": 2, "files": {}}',
    '{"format_version": "1", "files": {}}',
    '{"format_version": 1}',
    '{"format_version": 1, "files": []}',
    '{"format_version": 1, "files": {"a": {"blob_id": "x"}}}',
    '{"format_version": 1, "files": {"a": {"size": "many"}}}',
    '{"format_version": 1, "files": {"a": 3}}',
    '[' * 100000 + ']' * 100000,
])
def test_read_tree_cache_corrupt(tmp_path, text):
    p = tree_cache_path(tmp_path, C1)
    p.parent.mkdir(parents=True)
    p.write_text(text, encoding="utf-8")
    assert read_tree_cache(tmp_path, C1) is None


def test_read_tree_cache_not_utf8_or_not_a_file(tmp_path):
    p = tree_cache_path(tmp_path, C1)
    p.parent.mkdir(parents=True)
    p.write_bytes(b'{"format_version": 1, "files": {"\xff": {"size": 1}}}')
    assert read_tree_cache(tmp_path, C1) is None
    p.unlink()
    p.mkdir()
    assert read_tree_cache(tmp_path, C1) is None


def test_read_tree_cache_empty_listing(tmp_path):
    p = tree_cache_path(tmp_path, C1)
    p.parent.mkdir(parents=True)
    p.write_text('{"format_version": 1, "files": {}}')
    assert read_tree_cache(tmp_path, C1) == {}


def test_read_tree_cache_size_limit_boundary(tmp_path, monkeypatch):
    write_tree_cache(tmp_path, C1, TREE)
    size = tree_cache_path(tmp_path, C1).stat().st_size
    monkeypatch.setattr(local, "MAX_TREE_CACHE_BYTES", size)
    assert read_tree_cache(tmp_path, C1) == TREE
    monkeypatch.setattr(local, "MAX_TREE_CACHE_BYTES", size - 1)
    assert read_tree_cache(tmp_path, C1) is None


def test_read_tree_cache_oversized_sparse_file(tmp_path):
    p = tree_cache_path(tmp_path, C1)
    p.parent.mkdir(parents=True)
    with open(p, "wb") as fh:
        fh.write(b'{"format_version": 1, "files": {}}')
        fh.truncate(local.MAX_TREE_CACHE_BYTES + 1)
    assert read_tree_cache(tmp_path, C1) is None


def test_cached_tree_commits_newest_first(tmp_path):
    assert cached_tree_commits(tmp_path) == []
    ensure_hf_dir(tmp_path)
    assert cached_tree_commits(tmp_path) == []
    for c in (C1, C2, C3):
        write_tree_cache(tmp_path, c, TREE)
    trees = tmp_path / ".cache" / "huggingface" / "trees"
    os.utime(trees / f"{C1}.json", (1_700_000_200, 1_700_000_200))
    os.utime(trees / f"{C2}.json", (1_700_000_100, 1_700_000_100))
    os.utime(trees / f"{C3}.json", (1_700_000_300, 1_700_000_300))
    assert cached_tree_commits(tmp_path) == [C3, C1, C2]
    os.utime(trees / f"{C2}.json", (1_700_000_400, 1_700_000_400))
    assert cached_tree_commits(tmp_path) == [C2, C3, C1]


def test_cached_tree_commits_ignores_other_entries(tmp_path):
    write_tree_cache(tmp_path, C1, TREE)
    trees = tmp_path / ".cache" / "huggingface" / "trees"
    (trees / "notes.json").write_text("{}")
    (trees / ("A" * 40 + ".json")).write_text("{}")
    (trees / (C2 + ".json.bak")).write_text("{}")
    (trees / C3).write_text("{}")
    (trees / ("4" * 40 + ".json")).mkdir()
    assert cached_tree_commits(tmp_path) == [C1]


# --------------------------------------------------------------------------------------------------
# per-file download metadata


def test_metadata_and_lock_paths(tmp_path):
    hf = tmp_path / ".cache" / "huggingface" / "download"
    assert metadata_path(tmp_path, "data/f.parquet") == hf / "data" / "f.parquet.metadata"
    assert lock_path(tmp_path, "data/f.parquet") == hf / "data" / "f.parquet.lock"


def test_write_metadata_exact_file_and_round_trip(tmp_path):
    import time
    before = time.time()
    write_metadata(tmp_path, "data/f.parquet", C1, SHA256)
    after = time.time()
    mp = metadata_path(tmp_path, "data/f.parquet")
    lines = mp.read_text(encoding="utf-8").split("\n")
    assert lines[:2] == [C1, SHA256] and lines[3:] == [""] and len(lines) == 4
    assert before <= float(lines[2]) <= after
    assert read_metadata(tmp_path, "data/f.parquet") == DownloadMetadata(C1, SHA256, float(lines[2]))
    assert sorted(p.name for p in mp.parent.iterdir()) == ["f.parquet.metadata"]
    write_metadata(tmp_path, "data/f.parquet", C2, "e" * 40)
    meta = read_metadata(tmp_path, "data/f.parquet")
    assert (meta.commit, meta.etag) == (C2, "e" * 40)
    assert sorted(p.name for p in mp.parent.iterdir()) == ["f.parquet.metadata"]


def test_write_metadata_non_ascii_etag(tmp_path):
    write_metadata(tmp_path, "f", C1, "\u00e9t\u00e9")
    assert metadata_path(tmp_path, "f").read_bytes().startswith(f"{C1}\n\u00e9t\u00e9\n".encode("utf-8"))
    assert read_metadata(tmp_path, "f").etag == "\u00e9t\u00e9"


def test_write_metadata_temporary_file_is_lrtools_and_beside_the_target(tmp_path, monkeypatch):
    """The metadata is written to a ``.lrtool-tmp-...metadata`` file in the target's folder (what a killed run
    leaves is then recognised by lrtool's temp cleanup) and renamed over the target."""
    renames: list[tuple[Path, Path]] = []
    real_replace = os.replace

    def recording_replace(src, dst):
        renames.append((Path(src), Path(dst)))
        real_replace(src, dst)

    monkeypatch.setattr(os, "replace", recording_replace)
    write_metadata(tmp_path, "a/b.bin", C1, "x")
    mp = metadata_path(tmp_path, "a/b.bin")
    assert len(renames) == 1
    src, dst = renames[0]
    assert dst == mp
    assert src.parent == mp.parent
    assert src.name.startswith(TMP_PREFIX) and src.name.endswith(".metadata")
    assert len(src.name) == len(TMP_PREFIX) + 8 + len(".metadata")


def test_write_metadata_does_not_use_the_system_temp_folder(tmp_path, monkeypatch):
    import tempfile
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "no-such-folder"))
    write_metadata(tmp_path / "dest", "f", C1, "x")
    assert read_metadata(tmp_path / "dest", "f").commit == C1


def test_write_metadata_failed_rename_leaves_no_temporary_file(tmp_path):
    mp = metadata_path(tmp_path, "f")
    mp.mkdir(parents=True)  # a folder where the metadata file should go
    with pytest.raises(IsADirectoryError):
        write_metadata(tmp_path, "f", C1, "x")
    assert sorted(p.name for p in mp.parent.iterdir()) == ["f.metadata"]
    assert clean_stale_temps(tmp_path) == []


@pytest.mark.parametrize("text, expected", [
    (f"{C1}\nabc\n1700000000.5\n", DownloadMetadata(C1, "abc", 1700000000.5)),
    (f"  {C1} \n abc \n 12 ", DownloadMetadata(C1, "abc", 12.0)),
    (f"{C1}\r\n\r\n3\r\n", DownloadMetadata(C1, "", 3.0)),
    (f"{C1}\nabc\n3\nextra\n", DownloadMetadata(C1, "abc", 3.0)),
    (f"{C1}\nabc\n", None),
    (f"{C1}\nabc\nsoon\n", None),
    ("", None),
])
def test_read_metadata(tmp_path, text, expected):
    mp = metadata_path(tmp_path, "d/f")
    mp.parent.mkdir(parents=True)
    mp.write_text(text, encoding="utf-8", newline="")
    assert read_metadata(tmp_path, "d/f") == expected


def test_read_metadata_missing_or_unreadable(tmp_path):
    assert read_metadata(tmp_path, "f") is None
    mp = metadata_path(tmp_path, "f")
    mp.mkdir(parents=True)
    assert read_metadata(tmp_path, "f") is None
    mp.rmdir()
    mp.write_bytes(b"\xff\xfe\n\n1\n")
    assert read_metadata(tmp_path, "f") is None


# --------------------------------------------------------------------------------------------------
# content hashes


CONTENT = b"hello lerobot\n" * 1000


def _file(tmp_path: Path, name: str, data: bytes) -> Path:
    p = tmp_path / name
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_bytes(data)
    return p


def test_hash_regular_file_git_blob_sha1(tmp_path):
    p = _file(tmp_path, "f.txt", CONTENT)
    sha1 = blob_sha1(CONTENT)
    assert hash_file_matches(p, TreeFile("f.txt", len(CONTENT), sha1))
    assert hash_file_matches(p, TreeFile("f.txt", len(CONTENT), sha1.upper()))
    assert not hash_file_matches(p, TreeFile("f.txt", len(CONTENT), hashlib.sha1(CONTENT).hexdigest()))
    other = _file(tmp_path, "g.txt", CONTENT[:-1] + b"!")
    assert not hash_file_matches(other, TreeFile("g.txt", len(CONTENT), sha1))
    assert not hash_file_matches(other, TreeFile("g.txt", len(CONTENT), sha1.upper()))


def test_hash_lfs_file_sha256(tmp_path):
    data = bytes(range(256)) * 5000  # over one read chunk
    p = _file(tmp_path, "v.mp4", data)
    sha256 = hashlib.sha256(data).hexdigest()
    pointer_oid = "f" * 40  # the blob id of the pointer file is not what is checked
    assert hash_file_matches(p, TreeFile("v.mp4", len(data), pointer_oid, sha256, len(data)))
    assert hash_file_matches(p, TreeFile("v.mp4", len(data), pointer_oid, sha256.upper(), len(data)))
    changed = bytearray(data)
    changed[-1] ^= 1
    q = _file(tmp_path, "w.mp4", bytes(changed))
    assert not hash_file_matches(q, TreeFile("w.mp4", len(data), pointer_oid, sha256, len(data)))


def test_hash_empty_file(tmp_path):
    p = _file(tmp_path, "e", b"")
    assert blob_sha1(b"") == "e69de29bb2d1d6434b8b29ae775ad8c2e48c5391"
    assert hash_file_matches(p, TreeFile("e", 0, "e69de29bb2d1d6434b8b29ae775ad8c2e48c5391"))
    assert not hash_file_matches(p, TreeFile("e", 0, "0" * 40))


@pytest.mark.parametrize("blob_id", ["", "abc", "g" * 40, "a" * 39, "a" * 41])
def test_hash_without_usable_id_always_matches(tmp_path, blob_id):
    p = _file(tmp_path, "f", CONTENT)
    assert hash_file_matches(p, TreeFile("f", len(CONTENT), blob_id))
    assert hash_file_matches(tmp_path / "missing", TreeFile("f", 1, blob_id))


def test_hash_unreadable_file_does_not_match(tmp_path):
    entry = TreeFile("f", len(CONTENT), blob_sha1(CONTENT))
    assert not hash_file_matches(tmp_path / "missing", entry)
    (tmp_path / "dir").mkdir()
    assert not hash_file_matches(tmp_path / "dir", entry)


def test_content_hasher_incremental_and_reset():
    entry = TreeFile("f", len(CONTENT), blob_sha1(CONTENT).upper())
    h = ContentHasher(entry)
    assert h.expected == blob_sha1(CONTENT)
    h.update(CONTENT[:10])
    assert not h.matches()
    h.update(CONTENT[10:])
    assert h.matches() and h.hexdigest() == blob_sha1(CONTENT)
    h.reset()
    assert h.hexdigest() == hashlib.sha1(b"blob %d\0" % len(CONTENT)).hexdigest()
    h.update(CONTENT)
    assert h.matches()

    lfs = ContentHasher(TreeFile("v", 3, "a" * 40, SHA256.upper(), 3))
    assert lfs.expected == SHA256
    lfs.update(b"abc")
    assert lfs.hexdigest() == hashlib.sha256(b"abc").hexdigest() and not lfs.matches()


def test_content_hasher_without_id_still_hashes():
    h = ContentHasher(TreeFile("f", 3, ""))
    assert h.expected is None and h.matches()
    h.update(b"abc")
    assert h.hexdigest() == hashlib.sha1(b"abc").hexdigest()
    assert h.matches()


# --------------------------------------------------------------------------------------------------
# already present


T0 = 1_700_000_000


def _present_setup(tmp_path: Path, data: bytes = CONTENT, *, listed: bytes = CONTENT, lfs: bool = False):
    dest = tmp_path / "dest"
    _file(dest, "data/f.bin", data)
    if lfs:
        entry = TreeFile("data/f.bin", len(listed), "f" * 40, hashlib.sha256(listed).hexdigest(), len(listed))
    else:
        entry = TreeFile("data/f.bin", len(listed), blob_sha1(listed))
    return dest, entry


def _meta(dest: Path, path: str, commit: str, etag: str, ts: float) -> None:
    mp = metadata_path(dest, path)
    mp.parent.mkdir(parents=True, exist_ok=True)
    mp.write_text(f"{commit}\n{etag}\n{ts}\n")


def _mtime(dest: Path, path: str, seconds: float) -> None:
    ns = int(round(seconds * 1e9))
    os.utime(dest / path, ns=(ns, ns))


def test_present_missing(tmp_path):
    dest, entry = _present_setup(tmp_path)
    (dest / "data/f.bin").unlink()
    assert check_present(dest, entry, C1) == (False, "missing")
    assert check_present(tmp_path / "nowhere", entry, C1) == (False, "missing")


def test_present_target_is_a_folder(tmp_path):
    dest = tmp_path / "dest"
    (dest / "data" / "f.bin").mkdir(parents=True)
    entry = TreeFile("data/f.bin", (dest / "data" / "f.bin").stat().st_size, "")
    assert check_present(dest, entry, C1) == (False, "missing")


def test_present_wrong_size(tmp_path):
    dest, entry = _present_setup(tmp_path, CONTENT + b"x")
    write_metadata(dest, entry.path, C1, entry.etag)
    assert check_present(dest, entry, C1) == (False, "size")
    dest, entry = _present_setup(tmp_path, CONTENT[:-1])
    assert check_present(dest, entry, C1) == (False, "size")


def test_present_by_hash_without_metadata(tmp_path):
    dest, entry = _present_setup(tmp_path)
    assert check_present(dest, entry, C1) == (True, "hash")
    assert check_present(dest, entry, C1, trust_metadata=False) == (True, "hash")
    dest, entry = _present_setup(tmp_path, lfs=True)
    assert check_present(dest, entry, C1) == (True, "hash")


def test_present_one_byte_different_is_content(tmp_path):
    bad = CONTENT[:-1] + b"?"
    dest, entry = _present_setup(tmp_path, bad)
    assert check_present(dest, entry, C1) == (False, "content")
    dest, entry = _present_setup(tmp_path, bad, lfs=True)
    assert check_present(dest, entry, C1) == (False, "content")


def test_present_by_metadata_commit(tmp_path):
    """Metadata naming the same commit is trusted by default, without reading the content (here wrong)."""
    dest, entry = _present_setup(tmp_path, CONTENT[:-1] + b"?")
    write_metadata(dest, entry.path, C1, "")
    assert check_present(dest, entry, C1) == (True, "metadata")
    assert check_present(dest, entry, C1, trust_metadata=True) == (True, "metadata")
    assert check_present(dest, entry, C1, trust_metadata=False) == (False, "content")
    assert check_present(dest, entry, C2) == (False, "content")


def test_present_by_metadata_commit_with_right_content(tmp_path):
    dest, entry = _present_setup(tmp_path)
    write_metadata(dest, entry.path, C1, "other")
    assert check_present(dest, entry, C1) == (True, "metadata")
    assert check_present(dest, entry, C1, trust_metadata=False) == (True, "hash")


def test_present_by_metadata_etag(tmp_path):
    dest, entry = _present_setup(tmp_path, CONTENT[:-1] + b"?", lfs=True)
    write_metadata(dest, entry.path, C2, entry.etag)
    assert check_present(dest, entry, C1) == (True, "metadata")
    write_metadata(dest, entry.path, C2, entry.blob_id)  # the pointer's blob id is not the LFS file's ETag
    assert check_present(dest, entry, C1) == (False, "content")


def test_present_empty_etag_never_matches(tmp_path):
    dest = tmp_path / "dest"
    _file(dest, "f", b"abc")
    entry = TreeFile("f", 3, "not-a-sha")  # etag "not-a-sha"; no usable id: any content passes the hash check
    _meta(dest, "f", C2, "", T0)
    _mtime(dest, "f", T0)
    assert check_present(dest, entry, C1) == (True, "hash")
    _meta(dest, "f", C2, "not-a-sha", T0)
    assert check_present(dest, entry, C1) == (True, "metadata")


@pytest.mark.parametrize("mtime, how", [
    (T0 - 100, "metadata"),
    (T0, "metadata"),
    (T0 + 1, "metadata"),
    (T0 + 1.5, "content"),
    (T0 + 2, "content"),
    (T0 + 1000, "content"),
])
def test_present_metadata_older_than_the_file_is_not_trusted(tmp_path, mtime, how):
    dest, entry = _present_setup(tmp_path, CONTENT[:-1] + b"?")
    _meta(dest, entry.path, C1, entry.etag, float(T0))
    _mtime(dest, entry.path, mtime)
    assert check_present(dest, entry, C1) == (how == "metadata", how)


def test_present_metadata_modified_file_with_right_content_is_hash(tmp_path):
    dest, entry = _present_setup(tmp_path)
    _meta(dest, entry.path, C1, entry.etag, float(T0))
    _mtime(dest, entry.path, T0 + 5)
    assert check_present(dest, entry, C1) == (True, "hash")


def test_present_unparsable_metadata_falls_back_to_hash(tmp_path):
    dest, entry = _present_setup(tmp_path, CONTENT[:-1] + b"?")
    mp = metadata_path(dest, entry.path)
    mp.parent.mkdir(parents=True)
    mp.write_text(f"{C1}\n{entry.etag}\n")
    assert check_present(dest, entry, C1) == (False, "content")


def test_present_metadata_of_another_path_is_not_used(tmp_path):
    dest, entry = _present_setup(tmp_path, CONTENT[:-1] + b"?")
    write_metadata(dest, "data/other.bin", C1, entry.etag)
    assert check_present(dest, entry, C1) == (False, "content")


# --------------------------------------------------------------------------------------------------
# temporary files of a killed run


def test_remove_stale_temps_removes_exactly_its_own(tmp_path):
    final = tmp_path / "file.parquet"
    final.write_bytes(b"final")
    mine = [f"{TMP_PREFIX}0123abcd-file.parquet", f"{TMP_PREFIX}DEAD_eef-file.parquet"]
    others = [
        "file.parquet",
        f"{TMP_PREFIX}0123abc-file.parquet",           # 7 characters
        f"{TMP_PREFIX}0123abcde-file.parquet",         # 9 characters
        f"{TMP_PREFIX}0123-bcd-file.parquet",          # not a token
        f"{TMP_PREFIX}0123abcd-file.parquet.bak",      # another name
        f"{TMP_PREFIX}0123abcd-other.parquet",
        f"{TMP_PREFIX}0123abcd-xfile.parquet",
        f"{TMP_PREFIX}0123abcd-fileXparquet",          # the dot is literal
        f"x{TMP_PREFIX}0123abcd-file.parquet",
        "0123abcd-file.parquet",
    ]
    for name in mine + others:
        (tmp_path / name).write_bytes(b"t")
    assert remove_stale_temps(final) == 2
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(others)
    assert remove_stale_temps(final) == 0


def test_remove_stale_temps_one(tmp_path):
    final = tmp_path / "a.mp4"
    (tmp_path / f"{TMP_PREFIX}abcdef12-a.mp4").write_bytes(b"")
    assert remove_stale_temps(final) == 1
    assert list(tmp_path.iterdir()) == []


def test_remove_stale_temps_does_not_count_what_it_cannot_remove(tmp_path):
    final = tmp_path / "a.mp4"
    (tmp_path / f"{TMP_PREFIX}abcdef12-a.mp4").mkdir()
    (tmp_path / f"{TMP_PREFIX}abcdef13-a.mp4").write_bytes(b"")
    assert remove_stale_temps(final) == 1
    assert [p.name for p in tmp_path.iterdir()] == [f"{TMP_PREFIX}abcdef12-a.mp4"]


def test_remove_stale_temps_missing_folder(tmp_path):
    assert remove_stale_temps(tmp_path / "nowhere" / "a.mp4") == 0
    assert remove_stale_temps(tmp_path / "a.mp4") == 0


# --------------------------------------------------------------------------------------------------
# the bookkeeping files are UTF-8 whatever the locale


@pytest.fixture
def c_locale():
    """The process's text encoding set to ASCII (the plain C locale) for the test, then restored."""
    import locale
    saved = locale.setlocale(locale.LC_CTYPE)
    locale.setlocale(locale.LC_CTYPE, "C")
    try:
        if locale.getpreferredencoding(False).lower().replace("-", "") == "utf8":
            pytest.skip("the C locale is UTF-8 here")
        yield
    finally:
        locale.setlocale(locale.LC_CTYPE, saved)


def test_tree_cache_with_non_ascii_paths_under_a_c_locale(tmp_path, c_locale):
    tree = {"donn\u00e9es/\u00e9pisode_0.parquet": TreeFile("donn\u00e9es/\u00e9pisode_0.parquet", 4, "a" * 40),
            "\u30c7\u30fc\u30bf.json": TreeFile("\u30c7\u30fc\u30bf.json", 2, "b" * 40)}
    write_tree_cache(tmp_path, C1, tree)
    assert read_tree_cache(tmp_path, C1) == tree
    tree_cache_path(tmp_path, C1).read_bytes().decode("ascii")  # non-ASCII is escaped
    # a listing written by another tool, with raw UTF-8
    raw = {"format_version": 1, "files": {p: f.to_json() for p, f in tree.items()}}
    tree_cache_path(tmp_path, C2).write_bytes(json.dumps(raw, ensure_ascii=False).encode("utf-8"))
    assert "\u00e9pisode_0".encode("utf-8") in tree_cache_path(tmp_path, C2).read_bytes()
    assert read_tree_cache(tmp_path, C2) == tree


def test_metadata_with_non_ascii_etag_under_a_c_locale(tmp_path, c_locale):
    write_metadata(tmp_path, "donn\u00e9es/f", C1, "\u00e9t\u00e9")
    assert metadata_path(tmp_path, "donn\u00e9es/f").read_bytes().startswith(f"{C1}\n\u00e9t\u00e9\n".encode())
    meta = read_metadata(tmp_path, "donn\u00e9es/f")
    assert (meta.commit, meta.etag) == (C1, "\u00e9t\u00e9")
