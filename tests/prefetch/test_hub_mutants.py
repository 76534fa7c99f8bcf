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
import logging
import re
import sys

import pytest
from click.testing import CliRunner

from lerobot_tools.cli import cli
from lerobot_tools.prefetch import PrefetchOptions, prefetch
from lerobot_tools.prefetch.hub import MAX_JSON_BYTES
from lerobot_tools.prefetch.lock import LockFile, default_lock_path
from tests.hubserver import HubServer
from tests.prefetch.test_prefetch import FakeClock, on_disk, run, write_mixture

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
    ("ftp://127.0.0.1/api/x", "not an http(s) URL"),  # was retried 6 times as a connection failure (31 s)
    ("file:///etc/passwd", "not an http(s) URL"),
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

    root = Path(__file__).resolve().parents[2]
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


# ------------------------------------------------------------------------------------------- the client, request by request
# HubClient driven directly against the test server: exact requests (target, headers, Range), exact waits on the
# virtual clock, the statistics a repo's report shows (CallStats), what is logged and announced, and HubError's
# status / code.
from lerobot_tools._env import endpoint_from_env  # noqa: E402
from lerobot_tools.prefetch.budget import Budgets  # noqa: E402
from lerobot_tools.prefetch.hub import (  # noqa: E402
    CallStats, HubClient, HubError, RetryPolicy, _origin, get_token_to_send)
from lerobot_tools.prefetch.local import TreeFile  # noqa: E402
from tests.hubserver import git_blob_sha1  # noqa: E402

TOKEN = "hf_lrtoolHubClientToken0123456789"
WHAT = "revision 'main' of org/x"


def client_of(srv: HubServer, clock: FakeClock, *, token=False, max_wait_s: float = 900.0, policy=None,
              **budget_kw) -> tuple[HubClient, list[str]]:
    """A client of ``srv`` on the virtual clock, and the list of what it announces."""
    notes: list[str] = []
    budgets = Budgets(clock=clock, announce=notes.append, max_wait_s=max_wait_s, **budget_kw)
    return HubClient(srv.url, budgets, token=token, clock=clock, policy=policy), notes


def entry_of(srv: HubServer, path: str, repo: str = REPO) -> TreeFile:
    return HubClient(srv.url, Budgets(clock=FakeClock()), token=False).list_tree(repo, srv.resolve_rev(repo, "main"),
                                                                                  CallStats())[path]


def stats_of(stats: CallStats) -> tuple:
    return stats.requests, dict(stats.by_kind), dict(stats.by_bucket), dict(stats.status), stats.waited_s


def hub_logs(caplog) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == "lerobot_tools.prefetch"]


@pytest.mark.parametrize("status, code, reason", [
    (404, "RepoNotFound", "dataset not found (or private: set HF_TOKEN) [RepoNotFound]"),
    (401, "RepoNotFound", "dataset not found (or private: set HF_TOKEN) [RepoNotFound]"),
    (404, "RevisionNotFound", "revision not found [RevisionNotFound]"),
    (401, "RevisionNotFound", "revision not found [RevisionNotFound]"),
    (404, "EntryNotFound", "file not found [EntryNotFound]"),
    (403, "EntryNotFound", "file not found [EntryNotFound]"),
    (403, "GatedRepo", "gated dataset: accept its conditions on the Hub and set HF_TOKEN [GatedRepo]"),
    (401, "GatedRepo", "gated dataset: accept its conditions on the Hub and set HF_TOKEN [GatedRepo]"),
    (401, None, "access denied (HTTP 401; check HF_TOKEN)"),
    (403, None, "access denied (HTTP 403; check HF_TOKEN)"),
    (404, None, "HTTP 404"),
    (400, None, "HTTP 400"),
    (402, None, "HTTP 402"),
    (410, "Gone", "HTTP 410 [Gone]"),
])
def test_each_refusal_has_its_own_message_status_and_code(srv, clock, status, code, reason):
    """A 4xx is not retried; the message names the call and the reason huggingface_hub's classification gives, plus
    the Hub's X-Error-Code; 401/403 without a more precise reason say "access denied"."""
    srv.inject("info", "status", status=status, retry_after=None, headers={"X-Error-Code": code} if code else {})
    client, notes = client_of(srv, clock)
    stats = CallStats()
    with pytest.raises(HubError) as ei:
        client.resolve_revision(REPO, "main", stats)
    assert str(ei.value) == f"{WHAT}: {reason}"
    assert (ei.value.status, ei.value.code) == (status, code)
    assert [r.status for r in srv.requests()] == [status] and clock.sleeps == [] and notes == []
    assert stats_of(stats) == (1, {"resolve": 1}, {"api": 1}, {str(status): 1}, 0.0)


def test_refusals_from_the_server_itself(tmp_path, srv, clock):
    """No injection: the server's own 404s for a repo, a revision and a file that do not exist."""
    client, _ = client_of(srv, clock)
    stats = CallStats()
    cases = [(lambda: client.resolve_revision("org/nope", "main", stats),
              "revision 'main' of org/nope: dataset not found (or private: set HF_TOKEN) [RepoNotFound]", "RepoNotFound"),
             (lambda: client.resolve_revision(REPO, "v9", stats),
              "revision 'v9' of org/x: revision not found [RevisionNotFound]", "RevisionNotFound"),
             (lambda: client.list_tree(REPO, "0" * 40, stats),
              f"tree of org/x@{'0' * 12} (page 1): revision not found [RevisionNotFound]", "RevisionNotFound"),
             (lambda: client.download(REPO, sha_of(srv), TreeFile(path="nope.bin", size=3, blob_id=""),
                                      tmp_path / "tmp", stats),
              "org/x/nope.bin: file not found [EntryNotFound]", "EntryNotFound")]
    for call, message, code in cases:
        with pytest.raises(HubError) as ei:
            call()
        assert (str(ei.value), ei.value.status, ei.value.code) == (message, 404, code)
    assert stats_of(stats) == (4, {"resolve": 2, "tree": 1, "download": 1}, {"api": 3, "resolvers": 1},
                               {"404": 4}, 0.0)
    assert clock.sleeps == []


@pytest.mark.parametrize("retry_after, ratelimit, times, sleeps", [
    (None, None, 3, [1.0, 2.0, 4.0]),  # neither header: 1, 2, 4 s
    ("2", '"api";r=5;t=9', 1, [9.0]),  # the item naming this call's bucket wins when longer
    ("2", '"resolvers";r=3;t=20', 1, [2.0]),  # an item about another bucket, not exhausted: ignored
    (None, '"resolvers";r=0;t=6', 1, [6.0]),  # ... unless it is exhausted and none names this bucket
    ("3", None, 2, [3.0, 3.0]),
])
def test_429_waits_the_longer_of_retry_after_and_ratelimit(srv, clock, caplog, retry_after, ratelimit, times, sleeps):
    caplog.set_level(logging.INFO, logger="lerobot_tools.prefetch")
    srv.inject("info", "429", retry_after=retry_after, ratelimit=ratelimit, times=times)
    client, notes = client_of(srv, clock)
    stats = CallStats()
    assert client.resolve_revision(REPO, "main", stats) == sha_of(srv)
    assert clock.sleeps == sleeps
    assert [r.status for r in srv.requests()] == [429] * times + [200]
    assert stats_of(stats) == (times + 1, {"resolve": times + 1}, {"api": times + 1}, {"429": times, "200": 1},
                               sum(sleeps))
    assert hub_logs(caplog) == [f"{WHAT}: HTTP 429, waiting {s:.1f} s" for s in sleeps]
    assert len(notes) == times
    for note, s in zip(notes, sleeps):
        assert re.fullmatch(rf"waiting {s:.1f} s for the Hub's 'api' requests, until {UNTIL} \(HTTP 429 on {WHAT}\)",
                            note), note


def test_429_waits_add_up_to_max_wait_s(srv, clock):
    """Retry-After 5 twice fits --max-wait-s 10 exactly; Retry-After 4 three times does not: the third 429 fails the
    call at once (4 + 4 + 4 > 10), with HTTP status 429."""
    srv.inject("info", "429", retry_after="5", times=2)
    client, _ = client_of(srv, clock, max_wait_s=10)
    assert client.resolve_revision(REPO, "main", CallStats()) == sha_of(srv)
    assert clock.sleeps == [5.0, 5.0]

    srv.reset()
    clock.sleeps.clear()
    srv.inject("info", "429", retry_after="4", times=-1)
    client, _ = client_of(srv, clock, max_wait_s=10)
    stats = CallStats()
    with pytest.raises(HubError) as ei:
        client.resolve_revision(REPO, "main", stats)
    assert re.fullmatch(rf"{WHAT}: HTTP 429 from the Hub's 'api' rate limit asks to wait 4\.0 s \(until {UNTIL}\), "
                        r"more than --max-wait-s 10; giving up", str(ei.value)), str(ei.value)
    assert (ei.value.status, ei.value.code) == (429, None)
    assert clock.sleeps == [4.0, 4.0] and len(srv.requests()) == 3
    assert stats_of(stats) == (3, {"resolve": 3}, {"api": 3}, {"429": 3}, 8.0)


def test_429_past_max_429_has_status_429(srv, clock):
    srv.inject("info", "429", retry_after="1", times=-1)
    client, _ = client_of(srv, clock, policy=RetryPolicy(max_429=2))
    with pytest.raises(HubError) as ei:
        client.resolve_revision(REPO, "main", CallStats())
    assert (str(ei.value), ei.value.status) == (f"{WHAT}: still rate limited (HTTP 429) after 2 retries", 429)
    assert len(srv.requests()) == 3 and clock.sleeps == [1.0, 1.0]


def test_transient_status_backoff_and_retry_after(srv, clock, caplog):
    """408/5xx: Retry-After when given (capped at 300 s), else 1, 2, 4... s; each wait is logged, and announced from
    1 s on; past max_transient retries the call fails with the last status."""
    caplog.set_level(logging.INFO, logger="lerobot_tools.prefetch")
    srv.inject("info", "status", status=503, retry_after="7")
    srv.inject("info", "status", status=502, retry_after="400")
    srv.inject("info", "status", status=408, retry_after=None)
    client, notes = client_of(srv, clock)
    stats = CallStats()
    assert client.resolve_revision(REPO, "main", stats) == sha_of(srv)
    assert clock.sleeps == [7.0, 300.0, 4.0]  # the third transient answer of the call: 4 s
    assert hub_logs(caplog) == [f"{WHAT}: HTTP 503, retrying in 7.0 s", f"{WHAT}: HTTP 502, retrying in 300.0 s",
                                f"{WHAT}: HTTP 408, retrying in 4.0 s"]
    assert [n.split(", until ")[0] for n in notes] == [f"{WHAT}: HTTP 503; waiting 7.0 s", f"{WHAT}: HTTP 502; "
                                                       "waiting 5.0 min", f"{WHAT}: HTTP 408; waiting 4.0 s"]
    assert all(re.fullmatch(rf".*, until {UNTIL}", n) for n in notes), notes
    assert stats_of(stats) == (4, {"resolve": 4}, {"api": 4}, {"503": 1, "502": 1, "408": 1, "200": 1}, 311.0)

    srv.reset()
    clock.sleeps.clear()
    srv.inject("info", "status", status=500, retry_after=None, times=-1)
    client, notes = client_of(srv, clock, policy=RetryPolicy(max_transient=2))
    with pytest.raises(HubError) as ei:
        client.resolve_revision(REPO, "main", CallStats())
    assert (str(ei.value), ei.value.status, ei.value.code) == (f"{WHAT}: HTTP 500 after 2 retries", 500, None)
    assert clock.sleeps == [1.0, 2.0] and len(srv.requests()) == 3
    assert [n.split(", until ")[0] for n in notes] == [f"{WHAT}: HTTP 500; waiting 1.0 s",
                                                       f"{WHAT}: HTTP 500; waiting 2.0 s"]


def test_waits_under_one_second_are_not_announced(srv, clock):
    srv.inject("info", "status", status=503, retry_after=None, times=3)
    client, notes = client_of(srv, clock, policy=RetryPolicy(backoff_base_s=0.25))
    assert client.resolve_revision(REPO, "main", CallStats()) == sha_of(srv)
    assert clock.sleeps == [0.25, 0.5, 1.0]
    assert [n.split(", until ")[0] for n in notes] == [f"{WHAT}: HTTP 503; waiting 1.0 s"]  # only the 1 s one


def test_connection_failures_are_retried_counted_logged_and_announced(srv, clock, caplog):
    caplog.set_level(logging.INFO, logger="lerobot_tools.prefetch")
    srv.inject("info", "drop", times=-1)
    client, notes = client_of(srv, clock, policy=RetryPolicy(max_transient=2))
    stats = CallStats()
    with pytest.raises(HubError) as ei:
        client.resolve_revision(REPO, "main", stats)
    why = "RemoteProtocolError: Server disconnected without sending a response."
    assert (str(ei.value), ei.value.status) == (f"{WHAT}: connection failed 3 times ({why})", None)
    assert clock.sleeps == [1.0, 2.0] and [r.status for r in srv.requests()] == [-1, -1, -1]
    assert stats_of(stats) == (3, {"resolve": 3}, {"api": 3}, {"conn": 3}, 3.0)
    assert hub_logs(caplog) == [f"{WHAT}: {why}; retrying in 1.0 s", f"{WHAT}: {why}; retrying in 2.0 s"]
    assert [n.split(", until ")[0] for n in notes] == [f"{WHAT}: connection failed ({why}); waiting 1.0 s",
                                                       f"{WHAT}: connection failed ({why}); waiting 2.0 s"]


def test_read_timeout_is_a_connection_failure(srv, clock):
    """An answer slower than timeout_s is abandoned and retried (the second one comes at once)."""
    srv.inject("info", "delay", delay_s=1.0)
    client = HubClient(srv.url, Budgets(clock=clock), token=False, clock=clock, timeout_s=0.2)
    stats = CallStats()
    assert client.resolve_revision(REPO, "main", stats) == sha_of(srv)
    assert clock.sleeps == [1.0] and stats_of(stats) == (2, {"resolve": 2}, {"api": 2}, {"conn": 1, "200": 1}, 1.0)


@pytest.mark.parametrize("env, timeout_s", [(None, 30.0), ("5", 10.0), ("45", 45.0), ("soon", 30.0), ("", 30.0)])
def test_read_timeout_default(monkeypatch, env, timeout_s):
    """HF_HUB_DOWNLOAD_TIMEOUT (at least 10 s), else 30 s; an explicit timeout_s wins."""
    if env is None:
        monkeypatch.delenv("HF_HUB_DOWNLOAD_TIMEOUT", raising=False)
    else:
        monkeypatch.setenv("HF_HUB_DOWNLOAD_TIMEOUT", env)
    assert HubClient("http://127.0.0.1:9", token=False).timeout_s == timeout_s
    assert HubClient("http://127.0.0.1:9", token=False, timeout_s=2.5).timeout_s == 2.5


def test_budget_wait_is_bounded_by_what_the_call_has_left(srv, clock):
    """--max-wait-s bounds one call's waits all together: after a 5 s backoff, a call with --max-wait-s 5 cannot wait
    even 1 s more for the request budget (1 request per 6 s)."""
    srv.inject("info", "status", status=503, retry_after="5")
    client, _ = client_of(srv, clock, max_wait_s=5, api_requests=1, window_s=6)
    stats = CallStats()
    with pytest.raises(HubError) as ei:
        client.resolve_revision(REPO, "main", stats)
    assert re.fullmatch(rf"{WHAT}: the Hub's 'api' rate limit \(.+\) would make this request wait 1\.0 s "
                        rf"\(until {UNTIL}\), more than --max-wait-s 0; giving up", str(ei.value)), str(ei.value)
    assert clock.sleeps == [5.0] and len(srv.requests()) == 1

    srv.reset()  # 6 s left: the same wait of 1 s is taken, counted and announced by the budget
    clock.sleeps.clear()
    srv.inject("info", "status", status=503, retry_after="5")
    client, _ = client_of(srv, clock, max_wait_s=6, api_requests=1, window_s=6)
    stats = CallStats()
    assert client.resolve_revision(REPO, "main", stats) == sha_of(srv)
    assert clock.sleeps == [5.0, 1.0] and stats.waited_s == 6.0


def test_a_redirect_to_the_cdn_is_two_requests_and_the_token_stays_home(tmp_path, clock):
    """An LFS file: 302 from the Hub (a ``resolvers`` request, with the token), then the CDN (another origin, no
    token); both hops counted; every request says who it is and asks for the body as is."""
    from lerobot_tools import __version__
    from huggingface_hub import __version__ as hfv

    ua = f"lrtool/{__version__}; hf_hub/{hfv}; python/{sys.version_info.major}.{sys.version_info.minor}"
    with HubServer() as cdn, HubServer(lfs_threshold=2000, cdn=cdn) as srv:
        srv.add_repo(REPO, FILES)
        client, _ = client_of(srv, clock, token=TOKEN)
        stats = CallStats()
        commit = client.resolve_revision(REPO, "main", stats)
        entry = client.list_tree(REPO, commit, stats)[BIG]
        assert entry.lfs_sha256
        assert client.download(REPO, commit, entry, tmp_path / "big", stats) == len(FILES[BIG])
        assert (tmp_path / "big").read_bytes() == FILES[BIG]
        assert stats_of(stats) == (4, {"resolve": 1, "tree": 1, "download": 2}, {"api": 2, "resolvers": 1, "cdn": 1},
                                   {"200": 3, "302": 1}, 0.0)
        hub_reqs, cdn_reqs = srv.requests(), cdn.requests()
        assert [(r.route, r.status) for r in hub_reqs] == [("info", 200), ("tree", 200), ("get", 302)]
        assert [(r.route, r.status) for r in cdn_reqs] == [("cdn", 200)]
        for r in hub_reqs + cdn_reqs:
            assert r.headers["user-agent"] == ua and r.headers["accept-encoding"] == "identity"
            assert "range" not in r.headers
        assert [r.headers.get("authorization") for r in hub_reqs] == [f"Bearer {TOKEN}"] * 3
        assert "authorization" not in cdn_reqs[0].headers


def test_redirect_failures_carry_the_redirect_status(srv, clock):
    srv.inject("info", "status", status=302, retry_after=None)
    client, _ = client_of(srv, clock)
    with pytest.raises(HubError) as ei:
        client.resolve_revision(REPO, "main", CallStats())
    assert (str(ei.value), ei.value.status) == (f"{WHAT}: too many redirects or redirect without Location", 302)

    srv.reset()
    srv.inject("info", "status", status=308, retry_after=None, headers={"Location": "http://[::1/x"})
    with pytest.raises(HubError) as ei:
        client.resolve_revision(REPO, "main", CallStats())
    assert (str(ei.value), ei.value.status) == (
        f"{WHAT}: redirect to an invalid URL (ValueError: Invalid IPv6 URL)", 308)

    srv.reset()
    srv.inject("info", "status", status=304, retry_after=None)
    with pytest.raises(HubError) as ei:
        client.resolve_revision(REPO, "main", CallStats())
    assert (str(ei.value), ei.value.status) == (f"{WHAT}: unexpected HTTP 304", 304)


@pytest.mark.parametrize("url, origin", [
    ("http://Hub.Example/api", ("http", "hub.example", 80)),
    ("https://HUB.example", ("https", "hub.example", 443)),
    ("https://hub.example:8443/x", ("https", "hub.example", 8443)),
    ("http://hub.example:443/", ("http", "hub.example", 443)),
    ("file:///etc/hosts", ("file", "", None)),
])
def test_origin_has_the_scheme_default_port_and_a_lower_case_host(url, origin):
    """The token goes to the endpoint's origin only: https://hub.example and https://hub.example:443 are one
    origin, http://hub.example:443 another."""
    assert _origin(url) == origin


def test_token_sources(srv, clock, monkeypatch):
    """``token`` str: sent; False: none, whatever HF_TOKEN says; None: HF_TOKEN unless implicit tokens are disabled,
    read once per client (its budgets were sized by it)."""
    monkeypatch.setenv("HF_TOKEN", TOKEN)
    monkeypatch.delenv("HF_HUB_DISABLE_IMPLICIT_TOKEN")

    def auth_sent(token) -> list:
        srv.reset()
        client = HubClient(srv.url, Budgets(clock=clock), token=token, clock=clock)
        client.resolve_revision(REPO, "main", CallStats())
        monkeypatch.setenv("HF_TOKEN", "hf_changedInTheMeantime")
        client.resolve_revision(REPO, "main", CallStats())
        monkeypatch.setenv("HF_TOKEN", TOKEN)
        return [r.auth for r in srv.requests()]

    assert auth_sent("hf_explicit") == ["Bearer hf_explicit"] * 2
    assert auth_sent(False) == [None, None]
    assert auth_sent(None) == [f"Bearer {TOKEN}"] * 2
    monkeypatch.setenv("HF_HUB_DISABLE_IMPLICIT_TOKEN", "1")
    assert auth_sent(None) == [None, None]


@pytest.mark.parametrize("disable, sent", [(None, True), ("", True), ("0", True), ("no", True), ("1", False),
                                           ("true", False), (" TRUE ", False), ("Yes", False), ("on", False)])
def test_implicit_token_can_be_disabled(monkeypatch, disable, sent):
    monkeypatch.setenv("HF_TOKEN", TOKEN)
    if disable is None:
        monkeypatch.delenv("HF_HUB_DISABLE_IMPLICIT_TOKEN", raising=False)
    else:
        monkeypatch.setenv("HF_HUB_DISABLE_IMPLICIT_TOKEN", disable)
    assert get_token_to_send() == (TOKEN if sent else None)


def test_endpoint_trailing_slashes_and_default(srv, clock, monkeypatch):
    monkeypatch.delenv("HF_ENDPOINT", raising=False)
    assert endpoint_from_env() == "https://huggingface.co"
    monkeypatch.setenv("HF_ENDPOINT", "http://mirror.example/hubX//")
    assert endpoint_from_env() == "http://mirror.example/hubX"
    assert HubClient(token=False).endpoint == "http://mirror.example/hubX"
    assert HubClient("http://mirror.example/X/", token=False).endpoint == "http://mirror.example/X"
    monkeypatch.setenv("HF_ENDPOINT", srv.url + "/")
    client = HubClient(budgets=Budgets(clock=clock), token=False)
    assert client.endpoint == srv.url
    assert client.resolve_revision(REPO, "main", CallStats()) == sha_of(srv)
    assert [r.target for r in srv.requests()] == [f"/api/datasets/{REPO}/revision/main"]


def test_clock_comes_from_the_argument_then_the_budgets():
    from lerobot_tools.prefetch.budget import SYSTEM_CLOCK

    mine, theirs = FakeClock(), FakeClock()
    assert HubClient("http://127.0.0.1:9", Budgets(clock=theirs), clock=mine, token=False).clock is mine
    assert HubClient("http://127.0.0.1:9", Budgets(clock=theirs), token=False).clock is theirs
    assert HubClient("http://127.0.0.1:9", token=False).clock is SYSTEM_CLOCK
    assert HubClient("http://127.0.0.1:9", token=False, clock=mine).budgets.clock is mine


@pytest.mark.parametrize("headers, wait", [
    # RateLimit without a bucket name applies to the bucket of the call that got it: api
    ({"ratelimit": "r=0;t=42"}, 42.0),
    # RateLimit-Policy alone (no RateLimit) sets api's quota: the tree page waits for the window to pass
    ({"policy": '"fixed window";"api";q=1;w=60'}, 60.0),
], ids=["ratelimit-no-bucket", "policy-quota"])
def test_ratelimit_headers_on_the_revision_answer_make_the_tree_page_wait(srv, clock, headers, wait):
    srv.inject("info", "ratelimit_ok", **headers)
    client, _ = client_of(srv, clock)
    stats = CallStats()
    commit = client.resolve_revision(REPO, "main", stats)
    client.list_tree(REPO, commit, stats)
    assert clock.sleeps == [wait] and stats.waited_s == wait
    assert [r.route for r in srv.requests()] == ["info", "tree"]


def test_tree_pages_exact_requests(clock):
    """The first page asks ``recursive=true&expand=false``; later pages are the server's ``Link`` as given; a branch
    name with ``/`` is one quoted path segment, for the revision and the tree alike."""
    many = {f"d/f{i}.txt": b"%d" % i for i in range(5)}  # 6 entries with the folder: 3 pages of 2
    with HubServer(page_size=2) as srv:
        sha = srv.add_repo(REPO, many, branch="feat/x")
        client, _ = client_of(srv, clock)
        stats = CallStats()
        assert client.resolve_revision(REPO, "feat/x", stats) == sha
        files = client.list_tree(REPO, "feat/x", stats)
        assert {p: f.size for p, f in files.items()} == {p: len(d) for p, d in many.items()}
        base = f"/api/datasets/{REPO}/tree/feat%2Fx"
        assert [r.target for r in srv.requests()] == [
            f"/api/datasets/{REPO}/revision/feat%2Fx", f"{base}?recursive=true&expand=false",
            f"{base}?recursive=true&expand=false&cursor=2", f"{base}?recursive=true&expand=false&cursor=4"]
        assert all(r.range is None for r in srv.requests())
        assert stats_of(stats) == (4, {"resolve": 1, "tree": 3}, {"api": 4}, {"200": 4}, 0.0)

        srv.reset()  # page 2 fails: the message names it
        srv.inject("tree", "body", body=b'{"error": "x"}', skip=1)
        with pytest.raises(HubError) as ei:
            client.list_tree(REPO, sha, CallStats())
        assert str(ei.value) == f"tree of org/x@{sha[:12]} (page 2): answer is not a JSON list"

        srv.reset()  # a redirected first page: the Location is followed as given, the query is not added again
        loc = f"/api/datasets/{REPO}/tree/{sha}?recursive=true&expand=false&cursor=4"
        srv.inject("tree", "status", status=307, retry_after=None, headers={"Location": loc})
        assert list(client.list_tree(REPO, sha, CallStats())) == ["d/f3.txt", "d/f4.txt"]
        assert [r.target for r in srv.requests()] == [f"/api/datasets/{REPO}/tree/{sha}?recursive=true&expand=false",
                                                      loc]


@pytest.mark.parametrize("bad, why", [
    ({"type": "file", "path": "a.txt", "size": "many"}, "tree entry 'a.txt': size 'many' is not a whole number"),
    ({"type": "file", "path": "a.txt", "size": -5}, "tree entry 'a.txt': negative size"),
    ({"type": "file", "path": "a.txt", "size": 2.5}, "tree entry 'a.txt': size '2.5' is not a whole number"),
    ({"type": "file", "path": "a.txt", "size": True}, "tree entry 'a.txt': size 'True' is not a whole number"),
    ({"type": "file", "path": "c.txt", "size": 1, "lfs": "no"}, "tree entry 'c.txt': 'lfs' is not an object"),
    ({"type": "file", "path": 7}, "its path is not a string"),
])
def test_a_malformed_file_entry_makes_the_listing_an_error(srv, clock, bad, why):
    """A file entry that cannot be used (an impossible size, a path that is not text) is an error for the whole
    listing: skipping it would report the repo complete without that file. Directories are not files."""
    good = {"type": "file", "path": "b.txt", "size": 2, "oid": git_blob_sha1(b"hi")}
    page = [{"type": "directory", "path": "d"}, good, bad]
    srv.inject("tree", "body", body=json.dumps(page).encode())
    client, _ = client_of(srv, clock)
    with pytest.raises(HubError) as ei:
        client.list_tree(REPO, sha_of(srv), CallStats())
    assert str(ei.value) == f"tree of {REPO}@{sha_of(srv)[:12]} (page 1): a file entry cannot be used ({why})"
    srv.reset()
    srv.inject("tree", "body", body=json.dumps(page[:2]).encode())
    assert list(client.list_tree(REPO, sha_of(srv), CallStats())) == ["b.txt"]


@pytest.mark.parametrize("sha", ["../../etc/passwd", "A" * 40, "0123456789abcdef" * 5])
def test_revision_answer_whose_commit_is_not_a_sha(srv, clock, sha):
    srv.inject("info", "body", body=json.dumps({"sha": sha}).encode())
    client, _ = client_of(srv, clock)
    with pytest.raises(HubError) as ei:
        client.resolve_revision(REPO, "main", CallStats())
    assert str(ei.value) == f"{WHAT}: the answer's commit {sha[:60]!r} is not a 40-hex SHA"


def download_x(srv, clock, tmp, path: str = BIG, *, client=None, policy=None, stats=None):
    """``path`` of ``org/x`` into ``tmp``; returns (bytes received, the chunk sizes reported, stats)."""
    client = client or client_of(srv, clock, policy=policy)[0]
    chunks: list[int] = []
    stats = stats if stats is not None else CallStats()
    got = client.download(REPO, sha_of(srv), entry_of(srv, path), tmp, stats, on_bytes=chunks.append)
    return got, chunks, stats


def big_ranges(srv) -> list:
    return [(r.range, r.status) for r in srv.requests("get") if r.path == BIG]


@pytest.mark.parametrize("kept", [1, 1000, 10_239])
def test_download_resumes_from_the_bytes_already_in_the_temporary_file(tmp_path, srv, clock, kept):
    tmp = tmp_path / "tmp"
    tmp.write_bytes(FILES[BIG][:kept])
    got, chunks, stats = download_x(srv, clock, tmp)
    assert tmp.read_bytes() == FILES[BIG] and got == sum(chunks) == 10_240 - kept
    assert big_ranges(srv) == [(f"bytes={kept}-", 206)]
    assert stats_of(stats) == (1, {"download": 1}, {"resolvers": 1}, {"206": 1}, 0.0)


def test_download_resumes_after_a_prefix_of_more_than_one_read(tmp_path, hub_server, clock):
    data = bytes(range(251)) * 6000  # 1,506,000 bytes; the prefix is hashed in reads of 1 MiB
    hub_server.add_repo(REPO, {"big.bin": data})
    tmp = tmp_path / "tmp"
    tmp.write_bytes(data[:1_200_000])
    got, _, _ = download_x(hub_server, clock, tmp, "big.bin")
    assert got == 306_000 and tmp.read_bytes() == data
    assert [r.range for r in hub_server.requests("get")] == ["bytes=1200000-"]


def test_download_of_a_complete_or_overlong_temporary_file(tmp_path, srv, clock):
    tmp = tmp_path / "tmp"
    tmp.write_bytes(FILES[BIG])  # complete and right: verified, nothing sent
    assert download_x(srv, clock, tmp)[0] == 0 and srv.requests("get") == [] and tmp.read_bytes() == FILES[BIG]

    tmp.write_bytes(FILES[BIG] + b"stale tail")  # longer than the listing: started over, without Range
    got, _, stats = download_x(srv, clock, tmp)
    assert got == 10_240 and tmp.read_bytes() == FILES[BIG] and big_ranges(srv) == [(None, 200)]


def test_empty_and_one_byte_files(tmp_path, hub_server, clock):
    hub_server.add_repo(REPO, {"empty": b"", "one": b"1"})
    assert download_x(hub_server, clock, tmp_path / "e", "empty")[0] == 0
    assert (tmp_path / "e").read_bytes() == b"" and hub_server.requests("get") == []  # nothing to fetch
    assert download_x(hub_server, clock, tmp_path / "o", "one")[0] == 1
    assert (tmp_path / "o").read_bytes() == b"1" and [r.path for r in hub_server.requests("get")] == ["one"]


def test_cut_body_resumes_at_exactly_the_bytes_kept(tmp_path, srv, clock, caplog):
    caplog.set_level(logging.INFO, logger="lerobot_tools.prefetch")
    for kept in (1, 1000):
        srv.reset()
        caplog.clear()
        srv.inject("get", "drop_body", path=BIG, after_bytes=kept)
        client, notes = client_of(srv, clock)
        got, chunks, stats = download_x(srv, clock, tmp_path / f"t{kept}", client=client)
        assert (tmp_path / f"t{kept}").read_bytes() == FILES[BIG]
        assert got == sum(chunks) == 10_240 and chunks[0] == kept
        assert big_ranges(srv) == [(None, -200), (f"bytes={kept}-", 206)]
        assert stats_of(stats) == (2, {"download": 2}, {"resolvers": 2}, {"200": 1, "conn": 1, "206": 1}, 1.0)
        why = f"connection dropped after {kept} of 10240 bytes"
        assert hub_logs(caplog) == [f"org/x/{BIG}: {why}; resuming in 1.0 s"]
        assert [n.split(", until ")[0] for n in notes] == [f"org/x/{BIG}: {why}; waiting 1.0 s"]


def test_resume_answered_with_the_whole_file_starts_over(tmp_path, srv, clock):
    """A server that ignores Range (200 with the whole body): the kept bytes are replaced, not appended to."""
    srv.inject("get", "drop_body", path=BIG, after_bytes=1000)
    srv.inject("get", "body", path=BIG, body=FILES[BIG])
    got, chunks, _ = download_x(srv, clock, tmp_path / "tmp")
    assert (tmp_path / "tmp").read_bytes() == FILES[BIG] and got == sum(chunks) == 1000 + 10_240
    assert big_ranges(srv) == [(None, -200), ("bytes=1000-", 200)]


@pytest.mark.parametrize("content_range, shown", [(None, ""), ("bytes", "bytes")])
def test_206_without_a_usable_content_range(tmp_path, srv, clock, content_range, shown):
    """Resumed after 1 byte: a 206 without Content-Range, or with one that names no offset, is refused."""
    srv.inject("get", "drop_body", path=BIG, after_bytes=1)
    srv.inject("get", "headers", path=BIG, headers={"Content-Range": content_range})
    with pytest.raises(HubError) as ei:
        download_x(srv, clock, tmp_path / "tmp")
    assert (str(ei.value), ei.value.status) == (f"{BIG}: server answered Range with {shown!r}", 206)
    assert big_ranges(srv) == [(None, -200), ("bytes=1-", 206)]


def test_content_that_does_not_match_the_listing(tmp_path, srv, clock):
    wrong = bytes(reversed(FILES[BIG]))
    srv.inject("get", "body", path=BIG, body=wrong)
    with pytest.raises(HubError) as ei:
        download_x(srv, clock, tmp_path / "tmp")
    assert str(ei.value) == (f"{BIG}: content hash {git_blob_sha1(wrong)[:12]} does not match the listing "
                             f"({git_blob_sha1(FILES[BIG])[:12]})")

    srv.reset()
    srv.inject("get", "body", path=BIG, body=FILES[BIG] + b"more")
    with pytest.raises(HubError) as ei:
        download_x(srv, clock, tmp_path / "tmp2")
    assert str(ei.value) == f"{BIG}: got 10244 bytes, the tree listing says 10240"


def test_short_bodies_that_bring_nothing_new_are_bounded_like_drops(tmp_path, srv, clock):
    """Every answer is a complete 200 of the same first 100 bytes (the server ignores Range): each attempt starts
    again from 0 and never holds more than the first did, so it is not progress; the transient bound stops it after
    backoff 1, 2, 4, 8, 16 s (it used to run to the 50-attempt bound, 49 s of waits)."""
    srv.inject("get", "body", path=BIG, body=FILES[BIG][:100], times=-1)
    stats = CallStats()
    with pytest.raises(HubError) as ei:
        download_x(srv, clock, tmp_path / "tmp", stats=stats)
    assert str(ei.value) == f"org/x/{BIG}: body ended after 100 of 10240 bytes (6 times)"
    assert big_ranges(srv) == [(None, 200)] + [("bytes=100-", 200)] * 5
    assert clock.sleeps == [1.0, 2.0, 4.0, 8.0, 16.0]


def test_cuts_that_each_bring_more_bytes_are_bounded_by_the_attempts(tmp_path, srv, clock):
    """Every answer honours Range and is cut after 100 more bytes: real progress each time, so the transient count
    starts again and max_total_attempts is the bound."""
    srv.inject("get", "drop_body", path=BIG, after_bytes=100, times=-1)
    stats = CallStats()
    with pytest.raises(HubError) as ei:
        download_x(srv, clock, tmp_path / "tmp", policy=RetryPolicy(max_total_attempts=4), stats=stats)
    assert str(ei.value) == f"org/x/{BIG}: gave up after 4 attempts"
    assert [r for r, _ in big_ranges(srv)] == [None, "bytes=100-", "bytes=200-", "bytes=300-"]
    assert clock.sleeps == [1.0] * 4


def test_a_full_disk_fails_the_file_with_one_line_and_no_retry(tmp_path, srv, clock, tmpfs):
    """A real full disk (a 64 KiB tmpfs) while a 300,000-byte file arrives: that file fails at once with the OS
    error, not as a dropped connection retried with backoff; no temporary file is left behind."""
    big = "data/chunk-000/big.bin"
    srv.add_repo("org/big", {INFO: FILES[INFO], big: bytes(range(256)) * 1172})
    mnt = tmpfs(64 * 1024)
    mix = write_mixture(tmp_path, "org/big")  # the mixture and the lock file are on the normal disk
    rep = run(mix, srv, mnt / "out", clock, max_workers=1)
    assert rep.exit_status == 1
    (res,) = rep.results
    assert res.status == "incomplete", res.to_dict()
    assert res.problems == [f"{big}: cannot write the downloaded bytes to disk "
                            "(No space left on device (errno 28: ENOSPC))"]
    assert len([r for r in srv.requests("get") if r.path == big]) == 1 and clock.sleeps == []
    left = [p.name for p in (mnt / "out").rglob("*") if p.is_file()]
    assert not [n for n in left if ".lrtool-tmp-" in n] and "big.bin" not in left


# ----------------------------------------------------------------------------------- sizes the listing advertises
def test_a_listing_advertising_an_impossible_size_fails_the_repo(tmp_path, srv, clock):
    """A file listed with size -5 is neither dropped (the repo would be reported complete without it, exit 0) nor
    fetched: the repo fails, naming the entry, and nothing of it is written."""
    entries = [{"type": "file", "path": BIG, "size": len(FILES[BIG]), "oid": git_blob_sha1(FILES[BIG])},
               {"type": "file", "path": INFO, "size": -5, "oid": git_blob_sha1(FILES[INFO])}]
    srv.inject("tree", "body", body=json.dumps(entries).encode(), times=-1)
    rep, mix = prefetch_x(tmp_path, srv, clock)
    msg = only_problem(rep, "error")
    assert msg.endswith(f"(page 1): a file entry cannot be used (tree entry '{INFO}': negative size)"), msg
    assert srv.counts()["get"] == 0
    assert_repo_untouched(tmp_path, mix)


def test_an_endless_download_body_is_cut_at_the_advertised_size(tmp_path, srv, clock):
    """A server that never ends a file's body (no Content-Length, the file repeated forever): the download stops
    reading as soon as it holds more than the listing's size, well before the server's 32 MiB safety stop, and
    fails naming the sizes; the temporary file holds at most one read more than the listed size."""
    fault = srv.inject("get", "endless_body", path=BIG, after_bytes=32 << 20)
    entry = entry_of(srv, BIG)
    client, _ = client_of(srv, clock)
    tmp = tmp_path / "tmp"
    chunks: list[int] = []
    with pytest.raises(HubError) as ei:
        client.download(REPO, sha_of(srv), entry, tmp, CallStats(), on_bytes=chunks.append)
    assert str(ei.value).startswith(f"{BIG}: got ") and str(ei.value).endswith(
        f" bytes, the tree listing says {entry.size}"), str(ei.value)
    slack = 1 << 20  # one read of the HTTP client at most
    assert entry.size < sum(chunks) <= entry.size + slack
    assert tmp.stat().st_size == sum(chunks)
    assert fault.fired == 1 and fault.sent_bytes < 32 << 20
