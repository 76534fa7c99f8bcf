"""Nothing a Hub server, a cached listing, a hub cache or a mixture revision says can make ``lrtool prefetch``
write (or read a listing) outside the dataset folder.

A tree listing path that is absolute, climbs with ``..``, carries a backslash or a control character, or
lands under a symlink pointing elsewhere refuses the whole repo with one line, and nothing is written;
entries under ``.lrtool/`` (lrtool's backups) and ``.cache/huggingface/`` (download bookkeeping) are
skipped and reported. A revision must be a branch/tag name or a 40-hex SHA; a commit a server or a
``refs/`` file gives must be a 40-hex SHA.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from lerobot_tools.cli import cli
from lerobot_tools.prefetch.local import check_listing, tree_cache_path
from lerobot_tools.prefetch.lock import LockFile, default_lock_path
from lerobot_tools.dataset.mixture import revision_reason
from tests.hubserver import HubServer
from tests.prefetch.test_prefetch import V21, FakeClock, on_disk, run, write_mixture

pytestmark = pytest.mark.usefixtures("isolated_hub_env")


@pytest.fixture
def clock():
    return FakeClock()


def all_files(root: Path) -> list[str]:
    return sorted(p.relative_to(root).as_posix() for p in root.rglob("*")) if root.exists() else []


@pytest.mark.parametrize("bad", ["../escape.txt", "meta/../../escape.txt", "/tmp/lrtool-abs-escape.txt",
                                 "meta\\..\\..\\escape.txt", "meta/./info2.json", "meta//x.json",
                                 "meta/evil\x1b[2J.json", "C:/escape.txt"])
def test_a_listing_path_that_leaves_the_folder_refuses_the_repo(tmp_path, clock, bad):
    root = tmp_path / "out"
    with HubServer() as srv:
        srv.add_repo("org/evil", dict(V21, **{bad: b"x"}))
        srv.add_repo("org/good", V21)
        rep = run(write_mixture(tmp_path, "org/evil", "org/good"), srv, root, clock)
        evil, good = rep.results
        assert rep.exit_status == 1 and evil.status == "error" and good.status == "complete"
        (msg,) = evil.problems
        assert "repo refused, nothing written" in msg and "\n" not in msg and "\x1b" not in msg
        assert not (root / "org/evil").exists()  # not a file, not even the tree cache
        assert not (tmp_path / "escape.txt").exists() and not (root / "escape.txt").exists()
        assert not Path("/tmp/lrtool-abs-escape.txt").exists()
        assert not [r for r in srv.requests("get") if r.repo == "org/evil"]
        assert LockFile.read(default_lock_path(tmp_path / "mixture.txt")).commit("org/good", "main")


def test_a_symlink_in_the_destination_cannot_redirect_writes(tmp_path, clock):
    root = tmp_path / "out"
    outside = tmp_path / "outside"
    outside.mkdir()
    (root / "org/v21").mkdir(parents=True)
    (root / "org/v21/data").symlink_to(outside, target_is_directory=True)
    with HubServer() as srv:
        srv.add_repo("org/v21", V21)
        rep = run(write_mixture(tmp_path, "org/v21"), srv, root, clock)
        assert rep.exit_status == 1
        (msg,) = rep.results[0].problems
        assert "'data/chunk-000/': resolves outside the destination" in msg
        assert list(outside.iterdir()) == [] and srv.counts("org/v21").get("get", 0) == 0


def test_reserved_folders_are_skipped_and_reported(tmp_path, clock):
    root = tmp_path / "out"
    extra = {".lrtool/backup/20260101T000000/manifest.json": b'{"files": [{"path": "../../x"}]}',
             ".LRTOOL/other.json": b"{}",
             ".cache/huggingface/download/meta/info.json.metadata": b"0" * 40 + b"\nx\n9999999999\n"}
    with HubServer() as srv:
        srv.add_repo("org/v21", dict(V21, **extra))
        rep = run(write_mixture(tmp_path, "org/v21"), srv, root, clock)
        assert rep.exit_status == 0
        res = rep.results[0]
        assert res.needed == len(V21) and res.downloaded == len(V21)
        assert any("3 listed files in folders reserved" in n and ".lrtool/backup" in n for n in res.notes)
        assert on_disk(root / "org/v21") == V21
        assert not (root / "org/v21/.lrtool").exists() and not (root / "org/v21/.LRTOOL").exists()
        assert {r.path for r in srv.requests("get")} == set(V21)
        meta = (root / "org/v21/.cache/huggingface/download/meta/info.json.metadata").read_text()
        assert meta.startswith(res.commit)  # lrtool's own bookkeeping, not the repo's copy


def test_a_tampered_cached_listing_is_refused_online_and_offline(tmp_path, clock):
    root = tmp_path / "out"
    mix = write_mixture(tmp_path, "org/v21")
    with HubServer() as srv:
        sha = srv.add_repo("org/v21", V21)
        assert run(mix, srv, root, clock).exit_status == 0
        cache = tree_cache_path(root / "org/v21", sha)
        doc = json.loads(cache.read_text())
        doc["files"]["../../../planted.txt"] = {"size": 1, "blob_id": "0" * 40}
        cache.write_text(json.dumps(doc))
        srv.reset()
        rep = run(mix, srv, root, clock)
        assert rep.exit_status == 1 and "'../../../planted.txt'" in rep.results[0].problems[0]
        assert srv.total() == 0 and not (tmp_path / "planted.txt").exists()
        off = run(mix, srv, root, clock, offline=True)
        assert off.exit_status == 1 and "repo refused" in off.results[0].problems[0]


@pytest.mark.parametrize("revision", ["../../../x", "/etc", "main/../../x", "a:b", "a~1", ".hidden", "x.lock", "@{1}"])
def test_a_revision_that_is_not_a_ref_name_or_sha_is_refused_before_any_request(tmp_path, clock, revision):
    root = tmp_path / "out"
    mix = write_mixture(tmp_path, f"org/v21@{revision}")
    with HubServer() as srv:
        srv.add_repo("org/v21", V21)
        for offline in (False, True):
            rep = run(mix, srv, root, clock, offline=offline)
            assert rep.exit_status == 1
            (msg,) = rep.results[0].problems
            assert msg.startswith(f"invalid revision {revision!r}") and "40-hex commit SHA" in msg
        assert srv.total() == 0 and not root.exists()
    res = CliRunner().invoke(cli, ["prefetch", str(mix), "--offline", "--no-lock"])
    assert res.exit_code == 1 and "invalid revision" in res.output and "Traceback" not in res.output


def test_valid_revisions_pass():
    for ok in ("main", "v2.1", "refs/pr/3", "refs/convert/parquet", "feature/x-y_z", "a" * 40, "0" * 40):
        assert revision_reason(ok) is None, ok


def test_a_repo_id_with_a_dot_dot_component_is_refused(tmp_path, clock):
    with HubServer() as srv:
        rep = run(write_mixture(tmp_path, "org/.."), srv, tmp_path / "out" / "deep", clock)
        assert rep.exit_status == 1 and "invalid repo id 'org/..'" in rep.results[0].problems[0]
        assert srv.total() == 0


def test_a_commit_from_the_server_must_be_a_sha(tmp_path, clock):
    root = tmp_path / "out"
    with HubServer() as srv:
        srv.commit("org/v21", V21, sha="../../../../planted")
        rep = run(write_mixture(tmp_path, "org/v21"), srv, root, clock)
        assert rep.exit_status == 1
        assert "is not a 40-hex SHA" in rep.results[0].problems[0]
        assert srv.counts() == {"info": 1} and all_files(tmp_path / "out") == []


def test_a_refs_file_must_hold_a_sha(tmp_path, clock, monkeypatch):
    """Offline, ``refs/main`` of a hub cache names the commit; a path in it must not pick a file."""
    root = tmp_path / "out"
    dest = root / "org/v21"
    hub_cache = tmp_path / "hf_home" / "hub"
    ref = hub_cache / "datasets--org--v21" / "refs" / "main"
    ref.parent.mkdir(parents=True)
    ref.write_text("../planted")
    # what trees/<ref content>.json would reach: a listing that says the (empty) folder is complete
    planted = dest / ".cache/huggingface/planted.json"
    (dest / ".cache/huggingface/trees").mkdir(parents=True)  # so that trees/../planted.json exists
    planted.write_text(json.dumps({"format_version": 1, "files": {}}))
    mix = write_mixture(tmp_path, "org/v21")
    with HubServer() as srv:
        rep = run(mix, srv, root, clock, offline=True, use_lock=False)
        assert rep.exit_status == 1 and rep.results[0].commit is None
        assert "unknown offline" in rep.results[0].problems[0]
        ref.write_text("a" * 40 + "\n")  # a real SHA is used, with its cached listing
        (dest / ".cache/huggingface/trees" / ("a" * 40 + ".json")).write_text(
            json.dumps({"format_version": 1, "files": {}}))
        rep = run(mix, srv, root, clock, offline=True, use_lock=False)
        assert rep.results[0].commit == "a" * 40 and rep.results[0].commit_from == "hub-cache-ref"


def test_check_listing_unit(tmp_path):
    from lerobot_tools.errors import LrtoolError
    from lerobot_tools.prefetch.local import TreeFile

    tf = {p: TreeFile(p, 1, "0" * 40) for p in ("meta/info.json", ".lrtool/x", ".cache/huggingface/y")}
    usable, reserved = check_listing(tmp_path / "d", tf)
    assert list(usable) == ["meta/info.json"] and reserved == [".cache/huggingface/y", ".lrtool/x"]
    with pytest.raises(LrtoolError, match=r"'\.\./a'.*and 1 more"):
        check_listing(tmp_path / "d", {p: TreeFile(p, 1, "") for p in ("../a", "/b", "ok")})
