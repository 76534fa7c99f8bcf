"""Every way a Hub call of ``lrtool prefetch`` gives up (lerobot_tools/prefetch/hub.py), against the real test server.

Each test makes tests/hubserver.py misbehave in one way (an answer that is not JSON, too large or without a commit,
a tree page that is not a list or never ends, a redirect without ``Location`` or in a loop, 429 or 5xx past the
retry bounds, a ``Range`` answered from the wrong offset, a body that ends early, a proxy that refuses the tunnel)
and asserts the exact one-line problem the user sees, how many requests and waits it took (on a virtual clock, so
no test sleeps), and what is left on disk: nothing for a repo whose revision or listing failed, and for a failed
download neither the file, nor its download metadata, nor a ``.lrtool-tmp-`` file: only the other files and the
``.cache/huggingface/`` bookkeeping (the cached listing, per-file locks, the metadata of the files that did arrive).
"""

from __future__ import annotations

import datetime as dt
import json
import re

import pytest
from click.testing import CliRunner

from lerobot_tools.cli import cli
from lerobot_tools.prefetch import PrefetchOptions, prefetch
from lerobot_tools.prefetch.hub import MAX_JSON_BYTES
from lerobot_tools.prefetch.lock import LockFile, default_lock_path
from tests.hubserver import HubServer
from tests.test_prefetch import FakeClock, on_disk, run, write_mixture

pytestmark = pytest.mark.usefixtures("isolated_hub_env")

REPO = "org/x"
BIG = "data/chunk-000/episode_000000.parquet"
INFO = "meta/info.json"
FILES = {INFO: b'{"codebase_version": "v2.1"}\n', BIG: bytes(range(256)) * 40}  # BIG: 10,240 bytes
UNTIL = r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC"


@pytest.fixture
def clock():
    return FakeClock()


@pytest.fixture
def srv(hub_server):
    """The test Hub with ``org/x`` (one small file, one of 10,240 bytes) on ``main``."""
    hub_server.add_repo(REPO, FILES)
    return hub_server


def prefetch_x(tmp_path, srv: HubServer, clock: FakeClock, **kw):
    """``org/x`` fetched into ``tmp_path/out`` with one worker (requests in a fixed order)."""
    tmp_path.mkdir(parents=True, exist_ok=True)
    mix = write_mixture(tmp_path, REPO)
    return run(mix, srv, tmp_path / "out", clock, max_workers=1, **kw), mix


def only_problem(rep, status: str) -> str:
    assert rep.exit_status == 1
    (res,) = rep.results
    assert res.status == status, res.to_dict()
    (msg,) = res.problems
    assert "\n" not in msg
    return msg


def assert_repo_untouched(tmp_path, mix) -> None:
    """The revision or the listing failed: no folder for the repo, no commit in the lock file."""
    assert not (tmp_path / "out" / REPO).exists()
    assert LockFile.read(default_lock_path(mix)).commit(REPO, "main") is None


def assert_not_fetched(tmp_path, path: str) -> None:
    """``path`` failed: the other files arrived; ``path``, its download metadata and any temporary file are absent
    (``on_disk`` fails on a ``.lrtool-tmp-`` file)."""
    dest = tmp_path / "out" / REPO
    assert on_disk(dest) == {p: d for p, d in FILES.items() if p != path}
    assert not (dest / ".cache/huggingface/download" / f"{path}.metadata").exists()
    assert (dest / ".cache/huggingface/download" / f"{INFO}.metadata").is_file()


def sha_of(srv: HubServer) -> str:
    return srv.resolve_rev(REPO, "main")


# ------------------------------------------------------------------------------------------- API answers
def test_revision_answer_is_capped_at_64_mib(tmp_path, srv, clock):
    """An answer of exactly 64 MiB is read; one byte more is refused before it is parsed, and not retried."""
    head = json.dumps({"sha": sha_of(srv), "pad": ""})[:-2].encode()  # '{"sha": "...", "pad": "'
    exact = head + b"x" * (MAX_JSON_BYTES - len(head) - 2) + b'"}'
    assert len(exact) == MAX_JSON_BYTES == 64 << 20
    srv.inject("info", "body", body=exact)
    rep, _ = prefetch_x(tmp_path, srv, clock)
    assert rep.exit_status == 0 and rep.results[0].commit == sha_of(srv)

    srv.reset()
    srv.inject("info", "body", body=exact[:-1] + b' }')  # the same JSON, one byte longer
    rep, mix = prefetch_x(tmp_path / "again", srv, clock)
    assert only_problem(rep, "error") == "revision 'main' of org/x: answer larger than 64 MiB"
    assert srv.counts() == {"info": 1} and clock.sleeps == []
    assert_repo_untouched(tmp_path / "again", mix)


def test_tree_page_is_capped_at_64_mib(tmp_path, srv, clock):
    big_page = json.dumps([{"type": "file", "path": INFO, "size": 1, "oid": "0" * 40, "pad": "x" * MAX_JSON_BYTES}])
    srv.inject("tree", "body", body=big_page.encode())
    rep, mix = prefetch_x(tmp_path, srv, clock)
    assert only_problem(rep, "error") == f"tree of org/x@{sha_of(srv)[:12]} (page 1): answer larger than 64 MiB"
    assert srv.counts() == {"info": 1, "tree": 1} and clock.sleeps == []  # refused, not retried as "not JSON"
    assert_repo_untouched(tmp_path, mix)


@pytest.mark.parametrize("body, error", [
    (b"<html><body>502 Bad Gateway</body></html>", "JSONDecodeError: Expecting value: line 1 column 1 (char 0)"),
    (b'{"sha": "', "JSONDecodeError: Unterminated string starting at: line 1 column 9 (char 8)"),
    (b'{"sha": "\xff"}', "UnicodeDecodeError: 'utf-8' codec can't decode byte 0xff in position 9: invalid start byte"),
])
def test_revision_answer_that_is_not_json(tmp_path, srv, clock, body, error):
    srv.inject("info", "body", body=body)
    rep, mix = prefetch_x(tmp_path, srv, clock)
    assert only_problem(rep, "error") == f"revision 'main' of org/x: answer is not JSON ({error})"
    assert srv.counts() == {"info": 1} and clock.sleeps == []  # a wrong answer is not retried
    assert_repo_untouched(tmp_path, mix)


@pytest.mark.parametrize("body", [b'{"id": "org/x"}', b'{"sha": ""}', b'{"sha": null}', b'{"sha": 40}',
                                  b'["0123456789abcdef0123456789abcdef01234567"]', b"null"])
def test_revision_answer_without_a_commit_sha(tmp_path, srv, clock, body):
    srv.inject("info", "body", body=body)
    rep, mix = prefetch_x(tmp_path, srv, clock)
    assert only_problem(rep, "error") == "revision 'main' of org/x: answer has no commit sha"
    assert srv.counts() == {"info": 1}
    assert_repo_untouched(tmp_path, mix)


@pytest.mark.parametrize("body", [b'{"error": "Invalid cursor"}', b'"files"', b"null"])
def test_tree_page_that_is_not_a_list(tmp_path, srv, clock, body):
    srv.inject("tree", "body", body=body)
    rep, mix = prefetch_x(tmp_path, srv, clock)
    assert only_problem(rep, "error") == f"tree of org/x@{sha_of(srv)[:12]} (page 1): answer is not a JSON list"
    assert srv.counts() == {"info": 1, "tree": 1} and clock.sleeps == []
    assert_repo_untouched(tmp_path, mix)


def test_tree_page_that_is_not_json_is_retried_then_given_up(tmp_path, srv, clock):
    """A page cut short by a proxy is a transient failure: retried with backoff 1, 2, 4, 8, 16 s; the sixth is final."""
    srv.inject("tree", "body", body=b'[{"type": "file", "path": "meta/info.json", "si', times=5)
    rep, _ = prefetch_x(tmp_path, srv, clock)
    assert rep.exit_status == 0 and on_disk(tmp_path / "out" / REPO) == FILES
    assert [r.status for r in srv.requests("tree")] == [200] * 6 and clock.sleeps == [1.0, 2.0, 4.0, 8.0, 16.0]

    srv.reset()
    clock.sleeps.clear()
    srv.inject("tree", "body", body=b"<html>504 Gateway Time-out</html>", times=-1)
    rep, mix = prefetch_x(tmp_path / "b", srv, clock)
    assert only_problem(rep, "error") == (
        f"tree of org/x@{sha_of(srv)[:12]} (page 1): page is not JSON "
        "(JSONDecodeError: Expecting value: line 1 column 1 (char 0)) (6 times)")
    assert srv.counts() == {"info": 1, "tree": 6} and clock.sleeps == [1.0, 2.0, 4.0, 8.0, 16.0]
    assert_repo_untouched(tmp_path / "b", mix)


def test_tree_page_linking_to_itself_stops(tmp_path, srv, clock):
    sha = sha_of(srv)
    again = f"{srv.url}/api/datasets/{REPO}/tree/{sha}?recursive=true&expand=false&cursor=0"
    srv.inject("tree", "headers", headers={"Link": f'<{again}>; rel="next"'}, times=-1)
    rep, mix = prefetch_x(tmp_path, srv, clock)
    assert only_problem(rep, "error") == (
        f"tree of org/x@{sha[:12]}: more than 10000 pages, or a page links back to an earlier one")
    assert srv.counts() == {"info": 1, "tree": 2}  # the first page, then the one that links to itself
    assert_repo_untouched(tmp_path, mix)

    srv.reset()  # a link back to the first page (its URL without the query) is caught on the second page
    srv.inject("tree", "headers", headers={"Link": f"</api/datasets/{REPO}/tree/{sha}>; rel=\"next\""}, times=-1)
    rep, mix = prefetch_x(tmp_path / "b", srv, clock)
    assert only_problem(rep, "error").endswith("more than 10000 pages, or a page links back to an earlier one")
    assert srv.counts() == {"info": 1, "tree": 1}
    assert_repo_untouched(tmp_path / "b", mix)


@pytest.mark.slow
def test_tree_that_never_stops_paginating_gives_up_after_10000_pages(tmp_path, srv, clock):
    """Every page new (cursor 1, 2, 3, ...) and empty: page 10,001 is never asked for. ~10 s of real requests."""
    srv.inject("tree", "endless", times=-1)
    rep, mix = prefetch_x(tmp_path, srv, clock, api_requests=20_000)
    assert only_problem(rep, "error") == (
        f"tree of org/x@{sha_of(srv)[:12]}: more than 10000 pages, or a page links back to an earlier one")
    assert srv.counts() == {"info": 1, "tree": 10_000} and clock.sleeps == []
    assert_repo_untouched(tmp_path, mix)


# ------------------------------------------------------------------------------------------- status codes
def test_unexpected_status_is_not_retried(tmp_path, srv, clock):
    srv.inject("info", "status", status=300, retry_after=None)
    rep, mix = prefetch_x(tmp_path, srv, clock)
    assert only_problem(rep, "error") == "revision 'main' of org/x: unexpected HTTP 300"
    assert srv.counts() == {"info": 1} and clock.sleeps == []
    assert_repo_untouched(tmp_path, mix)

    srv.reset()
    srv.inject("get", "status", status=304, retry_after=None, path=BIG)
    rep, _ = prefetch_x(tmp_path / "b", srv, clock)
    assert only_problem(rep, "incomplete") == f"org/x/{BIG}: unexpected HTTP 304"
    assert [r.status for r in srv.requests("get") if r.path == BIG] == [304]
    assert_not_fetched(tmp_path / "b", BIG)


def test_redirect_without_location(tmp_path, srv, clock):
    srv.inject("get", "status", status=302, retry_after=None, path=BIG)
    rep, _ = prefetch_x(tmp_path, srv, clock)
    assert only_problem(rep, "incomplete") == f"org/x/{BIG}: too many redirects or redirect without Location"
    assert [r.status for r in srv.requests("get") if r.path == BIG] == [302]
    assert_not_fetched(tmp_path, BIG)


def test_five_redirects_are_followed_the_sixth_is_refused(tmp_path, srv, clock):
    loop = {"Location": f"/api/datasets/{REPO}/revision/main"}  # relative: resolved against the request's URL
    srv.inject("info", "status", status=307, retry_after=None, headers=loop, times=5)
    rep, _ = prefetch_x(tmp_path, srv, clock)
    assert rep.exit_status == 0 and rep.results[0].commit == sha_of(srv)
    assert [r.status for r in srv.requests("info")] == [307] * 5 + [200]

    srv.reset()
    srv.inject("info", "status", status=307, retry_after=None, headers=loop, times=-1)
    rep, mix = prefetch_x(tmp_path / "b", srv, clock)
    assert only_problem(rep, "error") == "revision 'main' of org/x: too many redirects or redirect without Location"
    assert [r.status for r in srv.requests("info")] == [307] * 6 and clock.sleeps == []
    assert_repo_untouched(tmp_path / "b", mix)


def test_429_forever_gives_up_after_20_retries(tmp_path, srv, clock):
    srv.inject("tree", "429", retry_after="1", times=-1)
    rep, mix = prefetch_x(tmp_path, srv, clock)
    assert only_problem(rep, "error") == (
        f"tree of org/x@{sha_of(srv)[:12]} (page 1): still rate limited (HTTP 429) after 20 retries")
    assert [r.status for r in srv.requests("tree")] == [429] * 21
    assert clock.sleeps == [1.0] * 20  # each wait what the server asked for, 20 s in all
    assert_repo_untouched(tmp_path, mix)


def test_transient_status_with_a_long_retry_after_fails_at_once(tmp_path, srv, clock):
    """503 + Retry-After: the waits add up; the one that would pass --max-wait-s fails the call, without waiting."""
    srv.inject("info", "status", status=503, retry_after="5", times=2)
    rep, _ = prefetch_x(tmp_path, srv, clock, max_wait_s=10)
    assert rep.exit_status == 0 and clock.sleeps == [5.0, 5.0]  # 10 s in all: exactly the bound, allowed

    srv.reset()
    clock.sleeps.clear()
    srv.inject("info", "status", status=503, retry_after="6", times=-1)
    rep, mix = prefetch_x(tmp_path / "b", srv, clock, max_wait_s=11)
    before = dt.datetime.now(dt.timezone.utc)
    msg = only_problem(rep, "error")
    m = re.fullmatch(rf"revision 'main' of org/x: HTTP 503 asks to wait 6\.0 s \(until ({UNTIL})\), "
                     r"more than --max-wait-s 11; giving up", msg)
    assert m, msg
    until = dt.datetime.strptime(m.group(1), "%Y-%m-%d %H:%M:%S UTC").replace(tzinfo=dt.timezone.utc)
    assert abs((until - before).total_seconds() - 6) < 5  # wall-clock time of the wait that was refused
    assert [r.status for r in srv.requests("info")] == [503, 503] and clock.sleeps == [6.0]  # 6 + 6 > 11: refused
    assert_repo_untouched(tmp_path / "b", mix)


def test_transient_status_on_the_cli_names_the_option(tmp_path, srv, virtual_clock, monkeypatch):
    monkeypatch.setenv("HF_ENDPOINT", srv.url)
    srv.inject("get", "status", status=502, retry_after="120", times=-1, path=BIG)
    mix = write_mixture(tmp_path, REPO)
    res = CliRunner().invoke(cli, ["prefetch", str(mix), "--local-dir-root", str(tmp_path / "out"), "--no-progress",
                                   "--max-workers", "1", "--max-wait-s", "300"])
    assert res.exit_code == 1, res.output
    lines = [ln for ln in res.stdout.splitlines() if ln.startswith(f"{REPO}@main: ")]
    assert len(lines) == 1, res.stdout
    assert re.fullmatch(rf"org/x@main: org/x/{BIG}: HTTP 502 asks to wait 2\.0 min \(until {UNTIL}\), "
                        r"more than --max-wait-s 300; giving up", lines[0]), lines[0]
    assert [r.status for r in srv.requests("get") if r.path == BIG] == [502, 502, 502]
    assert virtual_clock == [120.0, 120.0]
    assert_not_fetched(tmp_path, BIG)


# ------------------------------------------------------------------------------------------- connections
def test_proxy_that_refuses_the_tunnel_is_not_retried(tmp_path, srv, clock, monkeypatch):
    from huggingface_hub.utils import close_session

    for var in ("HTTPS_PROXY", "https_proxy"):
        monkeypatch.setenv(var, srv.url)  # the test server, as a proxy, answers CONNECT with 403
    close_session()
    mix = write_mixture(tmp_path, REPO)
    rep = prefetch(mix, PrefetchOptions(local_dir_root=tmp_path / "out", endpoint="https://hub.lrtool-test.invalid",
                                        clock=clock, progress=False, max_workers=1))
    assert only_problem(rep, "error") == "revision 'main' of org/x: proxy error (ProxyError: 403 Forbidden)"
    assert [(r.method, r.path, r.status) for r in srv.requests()] == [
        ("CONNECT", "hub.lrtool-test.invalid:443", 403)]  # once: a proxy's refusal is not transient
    assert clock.sleeps == []
    assert_repo_untouched(tmp_path, mix)


def test_library_offline_mode_fails_the_call_with_one_line(tmp_path, srv, clock, monkeypatch):
    """huggingface_hub read HF_HUB_OFFLINE=1 when it was imported, but prefetch was asked to go online: the shared
    session's request hook refuses every request; prefetch reports it per repo (no retry, no request sent)."""
    from huggingface_hub import constants

    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
    rep, mix = prefetch_x(tmp_path, srv, clock, offline=False)
    assert only_problem(rep, "error") == (
        f"revision 'main' of org/x: OfflineModeIsEnabled: Cannot reach {srv.url}/api/datasets/org/x/revision/main: "
        "offline mode is enabled. To disable it, please unset the `HF_HUB_OFFLINE` environment variable.")
    assert srv.total() == 0 and clock.sleeps == []
    assert_repo_untouched(tmp_path, mix)


# ------------------------------------------------------------------------------------------- download bodies
def test_range_answered_from_the_wrong_offset(tmp_path, srv, clock):
    """The first body is cut after 1,000 bytes; the resume asks ``Range: bytes=1000-`` and the server answers
    206 from elsewhere: the file is refused (its bytes would be misplaced), not retried."""
    for content_range in ("bytes 0-10239/10240", "bytes 999-10239/10240", "bytes 1001-10239/10240",
                          "bytes */10240", "bytes", ""):
        srv.reset()
        srv.inject("get", "drop_body", path=BIG, after_bytes=1000)
        srv.inject("get", "headers", path=BIG, headers={"Content-Range": content_range})
        out = tmp_path / content_range.replace("/", "_").replace("*", "star").replace(" ", "_")
        rep, _ = prefetch_x(out, srv, clock)
        assert only_problem(rep, "incomplete") == f"{BIG}: server answered Range with {content_range!r}"
        assert [(r.range, r.status) for r in srv.requests("get") if r.path == BIG] == [
            (None, -200), ("bytes=1000-", 206)]
        assert_not_fetched(out, BIG)

    srv.reset()  # the same cut, answered from the right offset: resumed and complete
    srv.inject("get", "drop_body", path=BIG, after_bytes=1000)
    srv.inject("get", "headers", path=BIG, headers={"Content-Range": "bytes 1000-10239/10240"})
    rep, _ = prefetch_x(tmp_path / "ok", srv, clock)
    assert rep.exit_status == 0 and on_disk(tmp_path / "ok/out" / REPO) == FILES


def test_empty_body_is_retried_five_times_then_given_up(tmp_path, srv, clock):
    srv.inject("get", "body", body=b"", path=BIG, times=5)
    rep, _ = prefetch_x(tmp_path, srv, clock)
    assert rep.exit_status == 0 and on_disk(tmp_path / "out" / REPO) == FILES
    assert clock.sleeps == [1.0, 2.0, 4.0, 8.0, 16.0]

    srv.reset()
    clock.sleeps.clear()
    srv.inject("get", "body", body=b"", path=BIG, times=-1)
    rep, _ = prefetch_x(tmp_path / "b", srv, clock)
    assert only_problem(rep, "incomplete") == f"org/x/{BIG}: body ended after 0 of 10240 bytes (6 times)"
    assert len([r for r in srv.requests("get") if r.path == BIG]) == 6
    assert clock.sleeps == [1.0, 2.0, 4.0, 8.0, 16.0]
    assert_not_fetched(tmp_path / "b", BIG)


def test_connection_dropped_before_any_byte_six_times(tmp_path, srv, clock):
    srv.inject("get", "drop_body", path=BIG, after_bytes=0, times=-1)
    rep, _ = prefetch_x(tmp_path, srv, clock)
    assert only_problem(rep, "incomplete") == f"org/x/{BIG}: connection dropped after 0 of 10240 bytes (6 times)"
    assert [r.range for r in srv.requests("get") if r.path == BIG] == [None] * 6
    assert clock.sleeps == [1.0, 2.0, 4.0, 8.0, 16.0]
    assert_not_fetched(tmp_path, BIG)


def test_server_that_sends_100_bytes_per_connection_gives_up_after_50_attempts(tmp_path, srv, clock):
    """Every attempt makes progress (so the transient count never grows), but one call is bounded anyway."""
    srv.inject("get", "drop_body", path=BIG, after_bytes=100, times=-1)
    rep, _ = prefetch_x(tmp_path, srv, clock)
    assert only_problem(rep, "incomplete") == f"org/x/{BIG}: gave up after 50 attempts"
    ranges = [r.range for r in srv.requests("get") if r.path == BIG]
    assert ranges == [None] + [f"bytes={100 * i}-" for i in range(1, 50)]  # resumed each time, 5,000 bytes in all
    assert clock.sleeps == [1.0] * 50  # the 50th wait comes before the check that ends the call
    assert_not_fetched(tmp_path, BIG)


def test_body_that_cannot_be_decoded_fails_that_file_only(tmp_path, srv, clock):
    """A body labelled gzip that is not: not a connection problem, so not retried; the file is not written."""
    srv.inject("get", "headers", path=BIG, headers={"Content-Encoding": "gzip"})
    rep, _ = prefetch_x(tmp_path, srv, clock)
    assert only_problem(rep, "incomplete") == f"{BIG}: Error -3 while decompressing data: incorrect header check"
    assert len([r for r in srv.requests("get") if r.path == BIG]) == 1 and clock.sleeps == []
    assert_not_fetched(tmp_path, BIG)

# ------------------------------------------------------------------------------------------- redirects to nowhere
@pytest.mark.parametrize("location, error", [
    ("http://127.0.0.1:99999/api/x", "ValueError: Port out of range 0-65535"),
    ("http://127.0.0.1:port/api/x", "ValueError: Port could not be cast to integer value as 'port'"),
    ("http://[::1/api/x", "ValueError: Invalid IPv6 URL"),
])
def test_redirect_to_an_invalid_url_fails_that_repo_only(tmp_path, srv, clock, location, error):
    """A Location that is not a URL is the server's fault: one line for the repo (or the file) it was sent for;
    the other repos of the mixture are fetched and the lock file is written."""
    srv.add_repo("org/y", FILES)
    srv.inject("info", "status", status=307, retry_after=None, headers={"Location": location}, repo=REPO)
    mix = write_mixture(tmp_path, REPO, "org/y")
    rep = run(mix, srv, tmp_path / "out", clock, max_workers=1)
    assert rep.exit_status == 1
    x, y = rep.results
    assert x.status == "error" and x.problems == [f"revision 'main' of org/x: redirect to an invalid URL ({error})"]
    assert y.status == "complete" and on_disk(tmp_path / "out/org/y") == FILES
    assert [r.status for r in srv.requests("info", REPO)] == [307] and clock.sleeps == []
    assert_repo_untouched(tmp_path, mix)
    assert LockFile.read(default_lock_path(mix)).commit("org/y", "main") == srv.resolve_rev("org/y", "main")

    srv.reset()
    srv.inject("get", "status", status=302, retry_after=None, headers={"Location": location}, path=BIG)
    rep, _ = prefetch_x(tmp_path / "b", srv, clock)
    assert only_problem(rep, "incomplete") == f"org/x/{BIG}: redirect to an invalid URL ({error})"
    assert [r.status for r in srv.requests("get") if r.path == BIG] == [302]
    assert_not_fetched(tmp_path / "b", BIG)


@pytest.mark.parametrize("endpoint, problem", [
    ("http://host:99999", "not a valid URL (Port out of range 0-65535)"),
    ("http://[::1", "not a valid URL (Invalid IPv6 URL)"),
    ("ftp://host", "not an http(s) URL"),
    ("http:///path", "a URL without a host"),
])
@pytest.mark.parametrize("command", ["prefetch", "smoke"])
def test_an_unusable_hf_endpoint_is_one_line_exit_2(tmp_path, endpoint, problem, command):
    """huggingface_hub fails on import (a ValueError at module level) when HF_ENDPOINT is not a URL; lrtool says so
    in one line before importing it (prefetch: before the first request; smoke: before loading torch/datasets)."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    if command == "prefetch":
        args = ["prefetch", str(write_mixture(tmp_path, REPO)), "--local-dir-root", str(tmp_path / "dest")]
    else:
        args = ["smoke", str(root / "fixtures" / "datasets" / "clean_v21")]
    env = {**os.environ, "HF_ENDPOINT": endpoint, "PYTHONPATH": str(root)}
    env.pop("HF_HUB_OFFLINE", None)
    r = subprocess.run([sys.executable, "-m", "lerobot_tools", *args], capture_output=True, text=True, env=env,
                       timeout=120, cwd=root)
    assert r.returncode == 2, r.stderr
    assert "Traceback" not in r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and problem in lines[0] and repr(endpoint) in lines[0], r.stderr
    assert not (tmp_path / "dest").exists()
