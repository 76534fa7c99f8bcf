"""``lrtool prefetch`` against a real HTTP server (tests/hubserver.py on 127.0.0.1).

Every test asserts request counts or request timing as seen by the server, not only outcomes. Waits
(Retry-After, RateLimit, backoff, the request budget) go through a fake clock whose ``sleep`` records the
seconds and advances virtual time, so the tests are fast and the waits can be checked exactly.
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from click.testing import CliRunner

from lerobot_tools._io import TMP_PREFIX
from lerobot_tools.cli import cli
from lerobot_tools.prefetch import PrefetchOptions, prefetch
from lerobot_tools.prefetch import budget as budget_mod
from lerobot_tools.prefetch.budget import BucketBudget, Limit
from lerobot_tools.prefetch.hub import RetryPolicy
from lerobot_tools.prefetch.local import read_metadata, read_tree_cache
from lerobot_tools.prefetch.lock import LockFile, default_lock_path
from lerobot_tools.prefetch.ratelimit import parse_ratelimit, parse_retry_after
from tests import hubserver
from tests.hubserver import HubServer, git_blob_sha1, read_folder

REPO_ROOT = Path(__file__).resolve().parents[2]
FIXTURES = REPO_ROOT / "fixtures" / "datasets"
V21 = read_folder(FIXTURES / "clean_v21")
V30 = read_folder(FIXTURES / "clean_v30")
TOKEN = "hf_lrtoolTestSecretToken0123456789"

pytestmark = pytest.mark.usefixtures("isolated_hub_env")


class FakeClock(budget_mod.Clock):
    """Virtual time: ``sleep`` records the seconds asked for and advances ``now`` by them."""

    def __init__(self):
        self.t = 1000.0
        self.sleeps: list[float] = []
        self._lock = threading.Lock()

    def now(self) -> float:
        with self._lock:
            return self.t

    def sleep(self, seconds: float) -> None:
        with self._lock:
            self.sleeps.append(round(seconds, 6))
            if seconds > 0:
                self.t += seconds


@pytest.fixture
def clock():
    return FakeClock()


def write_mixture(tmp_path: Path, *lines: str, name: str = "mixture.txt") -> Path:
    p = tmp_path / name
    p.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return p


def run(mix: Path, server: HubServer, root: Path, clock: FakeClock | None = None, **kw):
    opts = PrefetchOptions(local_dir_root=root, endpoint=server.url, clock=clock, progress=False, **kw)
    return prefetch(mix, opts)


def on_disk(dest: Path) -> dict[str, bytes]:
    """Files of a destination, bookkeeping excluded; fails on a leftover temporary file."""
    out = {}
    for p in sorted(dest.rglob("*")):
        if p.is_file():
            assert not p.name.startswith(TMP_PREFIX), f"temporary file left behind: {p}"
            rel = p.relative_to(dest).as_posix()
            if not rel.startswith(".cache/"):
                out[rel] = p.read_bytes()
    return out


def tree_pages(files: dict[str, bytes], page_size: int) -> int:
    """Pages the server needs for ``files`` plus their folders (the listing has directory entries too)."""
    dirs = {"/".join(p.split("/")[:i]) for p in files for i in range(1, p.count("/") + 1)}
    return -(-(len(files) + len(dirs)) // page_size)


# ------------------------------------------------------------------------------------------------ counts
def test_cold_then_warm_request_counts(tmp_path, clock):
    root = tmp_path / "out"
    with HubServer(page_size=4) as srv:
        srv.add_repo("org/v21", V21)
        srv.add_repo("org/v30", V30)
        mix = write_mixture(tmp_path, "org/v21", "org/v30")

        cold = run(mix, srv, root, clock)
        assert cold.exit_status == 0, cold.to_dict()
        for repo, files in (("org/v21", V21), ("org/v30", V30)):
            c = srv.counts(repo)
            pages = tree_pages(files, 4)
            assert pages >= 3  # pagination really happened
            assert c == {"info": 1, "tree": pages, "get": len(files)}, c
            assert srv.total(repo) <= 1 + pages + 2 * len(files)
            assert on_disk(root / repo) == files
        assert cold.requests == srv.total()
        assert clock.sleeps == []  # no 429, no budget wait
        lock = LockFile.read(default_lock_path(mix))
        assert lock.commit("org/v21", "main") == srv.resolve_rev("org/v21", "main")

        srv.reset()
        warm = run(mix, srv, root, clock)
        assert warm.exit_status == 0
        assert srv.total() == 0 and warm.requests == 0
        assert all(r.present == r.needed and r.downloaded == 0 for r in warm.results)

        srv.reset()  # without the lock a branch costs exactly one resolve per repo, nothing else
        nolock = run(mix, srv, root, clock, use_lock=False)
        assert nolock.exit_status == 0
        assert srv.counts() == {"info": 2}


def test_only_missing_or_changed_files_are_fetched(tmp_path, clock):
    root = tmp_path / "out"
    with HubServer() as srv:
        srv.add_repo("org/v21", V21)
        mix = write_mixture(tmp_path, "org/v21")
        assert run(mix, srv, root, clock).exit_status == 0
        dest = root / "org/v21"
        (dest / "meta/tasks.jsonl").unlink()
        (dest / "data/chunk-000/episode_000001.parquet").unlink()
        victim = dest / "videos/chunk-000/observation.images.front/episode_000002.mp4"
        data = bytearray(victim.read_bytes())
        data[100] ^= 0xFF  # same size, different content, modified after its metadata
        victim.write_bytes(bytes(data))
        os.utime(victim, (victim.stat().st_atime, victim.stat().st_mtime + 10))
        srv.reset()
        rep = run(mix, srv, root, clock)
        assert rep.exit_status == 0
        assert srv.counts() == {"get": 3}  # lock + cached tree: no resolve, no listing
        assert {r.path for r in srv.requests("get")} == {
            "meta/tasks.jsonl", "data/chunk-000/episode_000001.parquet",
            "videos/chunk-000/observation.images.front/episode_000002.mp4"}
        assert on_disk(dest) == V21
        assert rep.results[0].present == len(V21) - 3 and rep.results[0].downloaded == 3


def test_files_without_metadata_are_verified_by_hash_not_downloaded(tmp_path, clock):
    """A copy made by other means (no .cache metadata) is checked by content hash, with zero requests."""
    root = tmp_path / "out"
    with HubServer() as srv:
        sha = srv.add_repo("org/v21", V21)
        hubserver.copy_fixture(FIXTURES / "clean_v21", root / "org/v21")
        mix = write_mixture(tmp_path, f"org/v21@{sha}")
        # the listing must come from the server once; the files themselves must not
        rep = run(mix, srv, root, clock)
        assert rep.exit_status == 0
        assert srv.counts() == {"tree": 1}
        assert rep.results[0].present == len(V21)
        assert read_metadata(root / "org/v21", "meta/info.json").commit == sha


# ------------------------------------------------------------------------------------------ episode subsets
def test_episode_subset_v21_downloads_exactly_its_files(tmp_path, clock):
    root = tmp_path / "out"
    with HubServer() as srv:
        srv.add_repo("org/v21", V21)
        mix = write_mixture(tmp_path, "org/v21 episodes=1")
        rep = run(mix, srv, root, clock)
        assert rep.exit_status == 0, rep.to_dict()
        meta = {p for p in V21 if p.startswith("meta/")}
        want = meta | {"data/chunk-000/episode_000001.parquet",
                       "videos/chunk-000/observation.images.front/episode_000001.mp4"}
        gets = [r.path for r in srv.requests("get")]
        assert sorted(gets) == sorted(want)  # each exactly once, nothing else
        assert srv.counts() == {"info": 1, "tree": 1, "get": len(want)}
        assert on_disk(root / "org/v21") == {p: V21[p] for p in want}
        assert rep.results[0].kind == "episodes" and rep.results[0].needed == len(want)

        srv.reset()  # warm subset with the lock: zero requests
        assert run(mix, srv, root, clock).exit_status == 0
        assert srv.total() == 0


def test_episode_subsets_v30_union_each_file_once(tmp_path, clock):
    root = tmp_path / "out"
    with HubServer() as srv:
        srv.add_repo("org/v30", V30)
        # episodes 0-1 live in file-000, 2-3 in file-001 (data and both cameras); two entries, one repo
        mix = write_mixture(tmp_path, "org/v30 episodes=1", "org/v30 episodes=0")
        rep = run(mix, srv, root, clock)
        assert rep.exit_status == 0, rep.to_dict()
        assert len(rep.results) == 1 and rep.results[0].sources == [f"{mix}:1", f"{mix}:2"]
        meta = {p for p in V30 if p.startswith("meta/")}
        want = meta | {"data/chunk-000/file-000.parquet",
                       "videos/observation.images.front/chunk-000/file-000.mp4",
                       "videos/observation.images.top/chunk-000/file-000.mp4"}
        assert sorted(r.path for r in srv.requests("get")) == sorted(want)
        assert on_disk(root / "org/v30") == {p: V30[p] for p in want}

        # widening to episode 3 fetches only the file-001 trio
        mix2 = write_mixture(tmp_path, "org/v30 episodes=0-1,3", name="mixture.txt")
        srv.reset()
        rep = run(mix2, srv, root, clock)
        assert rep.exit_status == 0
        assert sorted(r.path for r in srv.requests("get")) == [
            "data/chunk-000/file-001.parquet",
            "videos/observation.images.front/chunk-000/file-001.mp4",
            "videos/observation.images.top/chunk-000/file-001.mp4"]


def test_excluded_episodes_from_opentau_json(tmp_path, clock):
    root = tmp_path / "out"
    with HubServer() as srv:
        srv.add_repo("org/v30", V30)
        mix = tmp_path / "train.json"
        mix.write_text(json.dumps({"dataset_mixture": {"datasets": [
            {"repo_id": "org/v30", "excluded_episodes": [2, 3]}]}}))
        rep = run(mix, srv, root, clock)
        assert rep.exit_status == 0
        assert not (root / "org/v30/data/chunk-000/file-001.parquet").exists()
        assert (root / "org/v30/data/chunk-000/file-000.parquet").read_bytes() == V30["data/chunk-000/file-000.parquet"]
        assert default_lock_path(mix) == tmp_path / "train.lock" and (tmp_path / "train.lock").is_file()


def test_synth_repos_subsets_and_pagination(tmp_path, clock):
    """Bigger repos from lerobot_tools.testing.synth: v3.0 with 8 data files and v2.1 with 30 episodes."""
    from lerobot_tools.testing.synth import SynthSpec, build_dataset

    build_dataset(tmp_path / "s30", SynthSpec(version="v3.0", episode_lengths=[5] * 24, video_keys=(),
                                              video_codec=None, episodes_per_file=3))
    build_dataset(tmp_path / "s21", SynthSpec(version="v2.1", episode_lengths=[4] * 30, video_keys=(),
                                              video_codec=None))
    f30, f21 = read_folder(tmp_path / "s30"), read_folder(tmp_path / "s21")
    root = tmp_path / "out"
    with HubServer(page_size=7) as srv:
        srv.add_repo("synth/v30", f30)
        srv.add_repo("synth/v21", f21)
        mix = write_mixture(tmp_path, "synth/v30 episodes=7,8", "synth/v21 episodes=10-12,29")
        rep = run(mix, srv, root, clock, max_workers=4)
        assert rep.exit_status == 0, rep.to_dict()
        got30 = sorted(r.path for r in srv.requests("get", "synth/v30"))
        assert got30 == sorted({p for p in f30 if p.startswith("meta/")} | {"data/chunk-000/file-002.parquet"})
        got21 = sorted(r.path for r in srv.requests("get", "synth/v21"))
        assert got21 == sorted({p for p in f21 if p.startswith("meta/")}
                               | {f"data/chunk-000/episode_{i:06d}.parquet" for i in (10, 11, 12, 29)})
        assert srv.counts("synth/v21")["tree"] == tree_pages(f21, 7)


def test_unknown_episode_makes_the_entry_incomplete(tmp_path, clock):
    with HubServer() as srv:
        srv.add_repo("org/v21", V21)
        rep = run(write_mixture(tmp_path, "org/v21 episodes=1,9"), srv, tmp_path / "out", clock)
        assert rep.exit_status == 1
        assert any("episodes 9 are not in" in p for p in rep.results[0].problems)
        assert (tmp_path / "out/org/v21/data/chunk-000/episode_000001.parquet").is_file()


# ------------------------------------------------------------------------------------------ revisions
def test_sha_revisions_are_never_resolved_or_parsed_as_versions(tmp_path, clock):
    numeric_sha = "3000000000000000000000000000000000000000"  # packaging would parse this as a version
    root = tmp_path / "out"
    with HubServer() as srv:
        old = dict(V21)
        srv.add_repo("org/a", old)
        srv.commit("org/a", old, branch=None, sha=numeric_sha)
        new = dict(V21, **{"meta/tasks.jsonl": b'{"task_index": 0, "task": "changed"}\n'})
        srv.commit("org/a", new, branch="main")  # main moved on
        v21_tag = srv.commit("org/b", V30, branch="main")
        srv.set_ref("org/b", "v2.1", v21_tag)  # a tag that looks like a codebase version
        srv.commit("org/b", dict(V30, **{"meta/stats.json": b"{}"}), branch="main")
        mix = write_mixture(tmp_path, f"org/a@{numeric_sha}", "org/b@v2.1")
        rep = run(mix, srv, root, clock)
        assert rep.exit_status == 0, rep.to_dict()
        assert srv.counts("org/a")["info"] == 0  # a SHA is used as is
        assert {r.rev for r in srv.requests(repo="org/a")} == {numeric_sha}
        assert on_disk(root / "org/a") == old
        assert [r.rev for r in srv.requests("info", "org/b")] == ["v2.1"]  # the tag is resolved by the server
        assert on_disk(root / "org/b") == V30
        assert rep.results[0].commit == numeric_sha and rep.results[0].commit_from == "sha"
        assert rep.results[1].commit == v21_tag
        lock = LockFile.read(default_lock_path(mix))
        assert lock.commit("org/a", numeric_sha) == numeric_sha
        assert lock.commit("org/b", "v2.1") == v21_tag


def test_lock_pins_a_moving_branch_until_update_lock(tmp_path, clock):
    root = tmp_path / "out"
    with HubServer() as srv:
        first = srv.add_repo("org/a", V21)
        mix = write_mixture(tmp_path, "org/a")
        run(mix, srv, root, clock)
        changed = dict(V21, **{"meta/tasks.jsonl": b'{"task_index": 0, "task": "new"}\n'})
        second = srv.commit("org/a", changed)
        srv.reset()
        rep = run(mix, srv, root, clock)
        assert srv.total() == 0 and rep.results[0].commit == first
        srv.reset()
        rep = run(mix, srv, root, clock, update_lock=True)
        assert rep.results[0].commit == second and rep.results[0].commit_from == "resolved"
        assert srv.counts() == {"info": 1, "tree": 1, "get": 1}  # only the changed file
        assert (root / "org/a/meta/tasks.jsonl").read_bytes() == changed["meta/tasks.jsonl"]
        assert LockFile.read(default_lock_path(mix)).commit("org/a", "main") == second


# ------------------------------------------------------------------------------------------ 429 and faults
def test_429_on_revision_resolve_is_retried_after_retry_after(tmp_path, clock):
    with HubServer(clock=clock.now) as srv:
        srv.add_repo("org/v21", V21)
        srv.inject("info", "429", times=2, retry_after="7")
        rep = run(write_mixture(tmp_path, "org/v21"), srv, tmp_path / "out", clock, max_workers=1)
        assert rep.exit_status == 0
        infos = srv.requests("info")
        assert [r.status for r in infos] == [429, 429, 200]
        assert clock.sleeps == [7.0, 7.0]
        assert infos[1].t - infos[0].t >= 7 and infos[2].t - infos[1].t >= 7
        assert srv.counts()["get"] == len(V21)


def test_429_storm_every_file_arrives_and_waits_are_honoured(tmp_path, clock):
    root = tmp_path / "out"
    with HubServer(clock=clock.now, page_size=5) as srv:
        srv.add_repo("org/v21", V21)
        srv.add_repo("org/v30", V30)
        # after 4 requests, the next 25 (of any route, from 8 threads) get 429; some also carry RateLimit
        srv.inject("any", "429", skip=4, times=15, retry_after="3")
        srv.inject("any", "429", times=10, retry_after="1", ratelimit='"api";r=0;t=5')
        rep = run(write_mixture(tmp_path, "org/v21", "org/v30"), srv, root, clock, max_workers=8)
        assert rep.exit_status == 0, rep.to_dict()
        assert on_disk(root / "org/v21") == V21 and on_disk(root / "org/v30") == V30
        log = srv.requests()
        n429 = [r for r in log if r.status == 429]
        assert len(n429) == 25
        ok_gets = [r for r in log if r.route == "get" and r.status == 200]
        assert len(ok_gets) == len(V21) + len(V30)  # every file exactly once, despite the storm
        # every retry of a rate-limited URL came no earlier than the wait the server asked for:
        # max(Retry-After, RateLimit t)
        for i, r in enumerate(log):
            if r.status != 429:
                continue
            items = parse_ratelimit({k.lower(): v for k, v in r.sent.items()})
            wait = max([float(r.sent["Retry-After"])] + [it.reset_s for it in items])
            later = [x for x in log[i + 1:] if (x.route, x.repo, x.path, x.rev) == (r.route, r.repo, r.path, r.rev)]
            assert later, f"{r.route} {r.path} was never retried"
            assert later[0].t - r.t >= wait - 1e-9, (r, later[0], wait)
        assert {float(r.sent["Retry-After"]) for r in n429} == {1.0, 3.0}
        assert max(clock.sleeps) >= 5.0 and sum(clock.sleeps) >= 3.0 + 5.0


def test_429_on_downloads_waits_exactly_what_the_server_says(tmp_path, clock):
    with HubServer(clock=clock.now) as srv:
        srv.add_repo("org/v21", V21)
        srv.inject("get", "429", times=2, retry_after="2", path="meta/info.json")
        # the longer of Retry-After and RateLimit t is waited
        srv.inject("get", "429", times=1, retry_after="1", ratelimit='"api";r=0;t=4', path="meta/info.json")
        srv.inject("get", "429", times=1, retry_after=None, path="meta/tasks.jsonl")  # no header: backoff 1 s
        rep = run(write_mixture(tmp_path, "org/v21"), srv, tmp_path / "out", clock, max_workers=1)
        assert rep.exit_status == 0
        assert sorted(clock.sleeps) == [1.0, 2.0, 2.0, 4.0]
        assert [r.status for r in srv.requests("get") if r.path == "meta/info.json"] == [429, 429, 429, 200]
        assert on_disk(tmp_path / "out/org/v21") == V21
        assert rep.results[0].stats.status["429"] == 4 and rep.results[0].stats.waited_s == 9.0


def test_ratelimit_header_on_a_success_pauses_the_budget(tmp_path, clock):
    with HubServer(clock=clock.now) as srv:
        srv.add_repo("org/v21", V21)
        srv.inject("info", "ratelimit_ok", ratelimit='"api";r=0;t=42')
        rep = run(write_mixture(tmp_path, "org/v21"), srv, tmp_path / "out", clock, max_workers=1)
        assert rep.exit_status == 0
        info, tree = srv.requests("info")[0], srv.requests("tree")[0]
        assert tree.t - info.t >= 42 and clock.sleeps == [42.0]


def test_request_budget_caps_requests_per_window(tmp_path, clock):
    with HubServer(clock=clock.now) as srv:
        srv.add_repo("org/v21", V21)
        # one worker, so the server's arrival times are the budget's grant times on the virtual clock
        rep = run(write_mixture(tmp_path, "org/v21"), srv, tmp_path / "out", clock, max_workers=1,
                  api_requests=1, resolve_requests=4, window_s=10)
        assert rep.exit_status == 0
        api = sorted(r.t for r in srv.requests() if r.route in ("info", "tree"))
        gets = sorted(r.t for r in srv.requests("get"))
        assert len(api) == 2 and len(gets) == len(V21)
        assert api[1] - api[0] >= 10 - 1e-9  # the listing waited for the resolve to leave the api window
        for i in range(len(gets) - 4):
            assert gets[i + 4] - gets[i] >= 10 - 1e-9  # never 5 downloads within 10 s
        assert gets[0] - api[1] < 10  # ... but the buckets are separate: downloads did not wait for api
        assert rep.to_dict()["requests_by_bucket"] == {"api": 2, "resolvers": len(V21)}


def test_5xx_and_dropped_connections_recover_with_backoff_and_range(tmp_path, clock):
    big = "videos/chunk-000/observation.images.front/episode_000002.mp4"
    with HubServer(clock=clock.now) as srv:
        srv.add_repo("org/v21", V21)
        srv.inject("tree", "status", status=500, retry_after=None)
        srv.inject("get", "status", status=503, times=2, retry_after=None, path="meta/info.json")
        srv.inject("get", "drop", path="meta/stats.json")
        srv.inject("get", "drop_body", path=big, after_bytes=1000)
        rep = run(write_mixture(tmp_path, "org/v21"), srv, tmp_path / "out", clock, max_workers=1)
        assert rep.exit_status == 0, rep.to_dict()
        assert on_disk(tmp_path / "out/org/v21") == V21
        assert [r.status for r in srv.requests("tree")] == [500, 200]
        assert [r.status for r in srv.requests("get") if r.path == "meta/info.json"] == [503, 503, 200]
        assert [r.status for r in srv.requests("get") if r.path == "meta/stats.json"] == [-1, 200]
        body = [r for r in srv.requests("get") if r.path == big]
        assert [r.range for r in body] == [None, "bytes=1000-"]  # resumed, not restarted
        assert [r.status for r in body] == [-200, 206]
        # bounded exponential backoff: tree 1 s; info.json 1 s, 2 s; stats.json 1 s; the cut body 1 s
        assert sorted(clock.sleeps) == [1.0, 1.0, 1.0, 1.0, 2.0]


def test_a_failing_repo_does_not_abort_the_others(tmp_path, clock):
    root = tmp_path / "out"
    with HubServer(clock=clock.now) as srv:
        srv.add_repo("org/bad", V21)
        srv.add_repo("org/good", V30)
        srv.inject("get", "status", status=500, times=-1, repo="org/bad", retry_after=None)
        mix = write_mixture(tmp_path, "org/bad", "org/missing", "org/good")
        rep = run(mix, srv, root, clock, max_workers=2, policy=RetryPolicy(max_transient=2))
        assert rep.exit_status == 1
        bad, missing, good = rep.results
        assert good.status == "complete" and on_disk(root / "org/good") == V30
        assert missing.status == "error" and "not found" in missing.problems[0]
        assert bad.status == "incomplete" and bad.downloaded == 0 and bad.failed == len(V21)
        # bounded: 3 consecutive failed files trip the breaker (plus what was already in flight)
        assert srv.counts("org/bad")["get"] <= (3 + 2) * 3
        assert on_disk(root / "org/bad") == {}  # nothing partial under a final name
        assert LockFile.read(default_lock_path(mix)).commit("org/good", "main")


def test_partial_file_never_appears_under_its_final_name(tmp_path, clock):
    big = "videos/chunk-000/observation.images.front/episode_000002.mp4"
    final = tmp_path / "out/org/v21" / big
    with HubServer() as srv:
        srv.add_repo("org/v21", V21)
        hold = srv.inject("get", "hold", path=big, after_bytes=500)
        mix = write_mixture(tmp_path, "org/v21")
        box = {}
        t = threading.Thread(target=lambda: box.setdefault("rep", run(mix, srv, tmp_path / "out", clock)))
        t.start()
        assert hold.reached.wait(10)
        temps = [p for p in final.parent.iterdir() if p.name.startswith(TMP_PREFIX) and p.name.endswith(final.name)]
        assert not final.exists()
        assert len(temps) == 1  # the bytes so far live under a temporary name only
        hold.release.set()
        t.join(20)
        assert box["rep"].exit_status == 0
        assert final.read_bytes() == V21[big]
        assert on_disk(tmp_path / "out/org/v21") == V21

        # a body cut short, then a server that keeps dropping the connection: no final file
        srv.commit("org/v21", dict(V21, **{big: V21[big][::-1]}))
        srv.inject("get", "drop_body", path=big, after_bytes=100)
        srv.inject("get", "drop", path=big, times=-1)
        rep = run(mix, srv, tmp_path / "out", clock, update_lock=True, policy=RetryPolicy(max_transient=2))
        assert rep.exit_status == 1
        assert final.read_bytes() == V21[big]  # the old complete file is untouched
        assert not [p for p in final.parent.iterdir() if p.name.startswith(TMP_PREFIX)]


def test_two_processes_on_one_destination(tmp_path):
    root = tmp_path / "out"
    with HubServer() as srv:
        srv.add_repo("org/v21", V21)
        srv.add_repo("org/v30", V30)
        srv.inject("get", "delay", times=-1, delay_s=0.15)
        mix = write_mixture(tmp_path, "org/v21", "org/v30")
        env = dict(os.environ, HF_ENDPOINT=srv.url, PYTHONPATH=str(REPO_ROOT))
        cmd = [sys.executable, "-m", "lerobot_tools", "prefetch", str(mix), "--local-dir-root", str(root),
               "--max-workers", "4", "--format", "json", "--no-progress"]
        procs = [subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE) for _ in range(2)]
        outs = [p.communicate(timeout=60) for p in procs]
        for p, (out, err) in zip(procs, outs):
            assert p.returncode == 0, err.decode()
        assert on_disk(root / "org/v21") == V21 and on_disk(root / "org/v30") == V30
        # file locks: each file crossed the network once, whichever process fetched it
        assert len(srv.requests("get")) == len(V21) + len(V30)
        reports = [json.loads(o) for o, _ in outs]
        downloaded = sum(r["downloaded"] for rep in reports for r in rep["datasets"])
        assert downloaded == len(V21) + len(V30)


# ------------------------------------------------------------------------------------------ offline, dry run
def test_offline_makes_zero_requests_and_reports_completeness(tmp_path, clock, monkeypatch):
    root = tmp_path / "out"
    with HubServer() as srv:
        srv.add_repo("org/v21", V21)
        srv.add_repo("org/v30", V30)
        mix = write_mixture(tmp_path, "org/v21", "org/v30 episodes=2")
        never = write_mixture(tmp_path, "org/never", name="never.txt")
        assert run(mix, srv, root, clock).exit_status == 0
        srv.reset()
        rep = run(mix, srv, root, clock, offline=True)
        assert rep.exit_status == 0 and all(r.complete for r in rep.results)
        (root / "org/v21/meta/tasks.jsonl").unlink()
        rep = run(mix, srv, root, clock, offline=True)
        assert rep.exit_status == 1
        assert rep.results[0].missing == 1 and rep.results[1].complete
        monkeypatch.setenv("HF_HUB_OFFLINE", "1")  # the environment variable alone is enough
        res = CliRunner().invoke(cli, ["prefetch", str(mix), "--local-dir-root", str(root), "--format", "json"])
        assert res.exit_code == 1, res.output
        assert json.loads(res.output)["offline"] is True
        res = CliRunner().invoke(cli, ["prefetch", str(never), "--local-dir-root", str(root)])
        assert res.exit_code == 1 and "unknown offline" in res.output
        assert srv.total() == 0


def test_dry_run_writes_nothing(tmp_path, clock, hub_server):
    root = tmp_path / "out"
    hub_server.add_repo("org/v21", V21)
    mix = write_mixture(tmp_path, "org/v21")
    rep = run(mix, hub_server, root, clock, dry_run=True)
    assert rep.exit_status == 1
    assert rep.results[0].missing == len(V21) and rep.results[0].bytes_missing == sum(map(len, V21.values()))
    assert hub_server.counts() == {"info": 1, "tree": 1}
    assert not root.exists() and not default_lock_path(mix).exists()


# ------------------------------------------------------------------------------------------ token, LFS, CLI
def test_token_is_sent_to_the_hub_only_and_never_printed(tmp_path, monkeypatch, caplog, clock):
    monkeypatch.delenv("HF_HUB_DISABLE_IMPLICIT_TOKEN")
    monkeypatch.setenv("HF_TOKEN", TOKEN)
    monkeypatch.setattr(budget_mod.SYSTEM_CLOCK, "sleep", clock.sleep)  # the CLI uses the system clock
    monkeypatch.setattr(budget_mod.SYSTEM_CLOCK, "now", clock.now)
    caplog.set_level(logging.DEBUG)
    root = tmp_path / "out"
    with HubServer() as cdn, HubServer(lfs_threshold=2000, cdn=cdn) as srv:
        srv.add_repo("org/v21", V21)
        srv.add_repo("org/bad", V30)
        srv.inject("info", "429", times=1, retry_after="1", repo="org/v21")
        srv.inject("get", "status", status=500, times=-1, repo="org/bad", retry_after=None)
        monkeypatch.setenv("HF_ENDPOINT", srv.url)
        mix = write_mixture(tmp_path, "org/v21", "org/bad", "org/nope")
        outputs = []
        for fmt in ("text", "json"):
            res = CliRunner().invoke(cli, ["prefetch", str(mix), "--local-dir-root", str(root),
                                           "--format", fmt, "--max-workers", "2"])
            assert res.exit_code == 1, res.output
            outputs.append(res.output)
        assert on_disk(root / "org/v21") == V21
        lfs = [p for p, d in V21.items() if len(d) >= 2000]
        assert lfs and len(cdn.requests("cdn")) == len(lfs)  # LFS bodies came from the other origin
        assert all(r.auth == f"Bearer {TOKEN}" for r in srv.requests())  # sent to the Hub ...
        assert all(r.auth is None for r in cdn.requests())  # ... and never to the CDN
    text = "\n".join(outputs) + caplog.text + default_lock_path(mix).read_text()
    text += "".join(p.read_text(errors="replace") for p in root.rglob("*.json"))
    assert TOKEN not in text and "lrtoolTestSecret" not in text


def test_cli_errors_exit_2_and_conflicts_exit_1(tmp_path):
    runner = CliRunner()
    res = runner.invoke(cli, ["prefetch", str(tmp_path / "nope.txt")])
    assert res.exit_code == 2 and "mixture file not found" in res.output
    mix = write_mixture(tmp_path, "org/a")
    default_lock_path(mix).write_text("{not json")
    res = runner.invoke(cli, ["prefetch", str(mix), "--offline"])
    assert res.exit_code == 2 and "lock file is not valid JSON" in res.output and "Traceback" not in res.output
    conflict = write_mixture(tmp_path, "org/a@main", "org/a@v2.1", name="c.txt")
    res = runner.invoke(cli, ["prefetch", str(conflict), "--offline", "--no-lock"])
    assert res.exit_code == 1 and "cannot hold two revisions" in res.output


# ------------------------------------------------------------------------------------------ units
def test_budget_sliding_window_and_pause():
    c = FakeClock()
    b = BucketBudget("api", Limit(3, 10, "test"), clock=c)

    def take():
        ticket, waited = b.acquire()
        ticket.done()
        return waited

    assert [take() for _ in range(3)] == [0, 0, 0]
    assert take() == 10.0 and c.sleeps == [10.0]
    b.pause(4, "test")
    assert take() == 4.0


def test_header_parsers():
    assert parse_retry_after("120") == 120
    assert parse_retry_after("Wed, 21 Oct 2015 07:28:10 GMT", now_epoch=1445412480.0) == 10
    assert parse_retry_after("soon") is None and parse_retry_after(None) is None


def test_tree_cache_is_huggingface_hub_compatible(tmp_path, clock):
    """After prefetch, snapshot_download(revision=<sha>, local_dir=dest) makes zero requests."""
    from huggingface_hub import snapshot_download

    with HubServer() as srv:
        sha = srv.add_repo("org/v21", V21)
        root = tmp_path / "out"
        assert run(write_mixture(tmp_path, "org/v21"), srv, root, clock).exit_status == 0
        tree = read_tree_cache(root / "org/v21", sha)
        assert tree is not None and tree["meta/info.json"].blob_id == git_blob_sha1(V21["meta/info.json"])
        srv.reset()
        snapshot_download("org/v21", repo_type="dataset", revision=sha, local_dir=root / "org/v21",
                          endpoint=srv.url, cache_dir=tmp_path / "hub_cache")
        assert srv.total() == 0
