"""``lrtool prefetch`` and the Hub's separate rate-limit buckets, against a real HTTP server that enforces them.

tests/hubserver.py counts requests per bucket (``api``: resolves and tree pages; ``resolvers``: every
``/resolve/`` download) in fixed windows, answers 429 past the quota and advertises it in
``RateLimit`` / ``RateLimit-Policy`` as the Hub does (Hub documentation, "Hub Rate limits"). The quotas
are the Hub's anonymous ones (500 api, 3,000 resolvers) or smaller; only the window is scaled down from
5 minutes to a few seconds so the tests stay fast. Waits that must be bounded are checked on a fake clock.
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import threading
import time

import pytest
from click.testing import CliRunner

from lerobot_tools.cli import cli
from lerobot_tools.prefetch import budget as budget_mod
from lerobot_tools.prefetch.budget import BucketBudget, Budgets, Limit, WaitTooLong
from lerobot_tools.prefetch.ratelimit import (bucket_of_url, parse_ratelimit, parse_ratelimit_policy,
                                              parse_retry_after)
from tests.hubserver import HubServer
from tests.prefetch.test_prefetch import REPO_ROOT, V21, FakeClock, on_disk, run, write_mixture

pytestmark = pytest.mark.usefixtures("isolated_hub_env")

ANON = {"api": 500, "resolvers": 3000}  # the Hub's anonymous quotas per window


def tiny_repos(n: int, files: int = 3) -> dict[str, dict[str, bytes]]:
    """``n`` small synthetic repos: ``meta/info.json`` plus ``files - 1`` data files, distinct content."""
    out = {}
    for i in range(n):
        repo = {"meta/info.json": json.dumps({"codebase_version": "v2.1", "repo": i}).encode()}
        for k in range(files - 1):
            repo[f"data/chunk-000/episode_{k:06d}.parquet"] = bytes([i % 251, k]) * 64
        out[f"mix/repo-{i:03d}"] = repo
    return out


def serve(srv: HubServer, repos: dict[str, dict[str, bytes]]) -> None:
    for name, files in repos.items():
        srv.add_repo(name, files)


@pytest.fixture
def clock():
    return FakeClock()


# ----------------------------------------------------------------------------------- cold mixture at scale
def test_cold_400_repo_mixture_under_anonymous_quotas_has_no_429(tmp_path):
    """800 api calls (resolve + listing per repo) against an api quota of 500 per window: a single shared
    budget of 3,000 would hit 429 after 500; per-bucket budgets pace the api calls across windows."""
    window = 8  # the Hub's 300 s, scaled down (the first 500 api calls take ~2.5 s here under load)
    repos = tiny_repos(400, files=2)
    root = tmp_path / "out"
    mix = write_mixture(tmp_path, *repos)
    with HubServer(rate_limits=ANON, rate_window_s=window) as srv:
        serve(srv, repos)
        t0 = time.monotonic()
        rep = run(mix, srv, root, window_s=window)
        elapsed = time.monotonic() - t0
        assert rep.exit_status == 0, [r.problems for r in rep.results if r.problems][:3]
        assert srv.rate_limited() == 0 and rep.rate_limited == 0
        n_files = sum(len(f) for f in repos.values())
        # one resolve and one listing page per repo, one download per file, nothing else (no HEAD)
        assert srv.counts() == {"info": 400, "tree": 400, "get": n_files}
        assert rep.requests_by_bucket == {"api": 800, "resolvers": n_files}
        assert rep.to_dict()["requests_by_bucket"] == {"api": 800, "resolvers": n_files}
        # the api bucket really was the constraint: more than one window, and every fixed window of the
        # server held at most its quota
        assert elapsed > window and rep.budgets["api"]["waited_s"] > 0
        api_times = [r.t - srv._rate_t0 for r in srv.requests() if r.bucket == "api"]
        per_window: dict[int, int] = {}
        for t in api_times:
            per_window[int(t // window)] = per_window.get(int(t // window), 0) + 1
        assert max(per_window.values()) <= 500 and len(per_window) >= 2
        for name in list(repos)[:: 97]:
            assert on_disk(root / name) == repos[name]

        srv.reset()  # warm, with the lock: not one request
        warm = run(mix, srv, root, window_s=window)
        assert warm.exit_status == 0 and srv.total() == 0 and warm.requests == 0


def test_smaller_advertised_quotas_are_adopted(tmp_path):
    """A server that advertises (and enforces) quotas far below lrtool's defaults, on a 2 s window lrtool
    was not told about: lrtool takes the quota, the window and the remaining count from the headers."""
    repos = tiny_repos(12, files=10)
    mix = write_mixture(tmp_path, *repos)
    with HubServer(rate_limits={"api": 10, "resolvers": 40}, rate_window_s=2) as srv:
        serve(srv, repos)
        rep = run(mix, srv, tmp_path / "out", max_workers=4)
        assert rep.exit_status == 0
        assert srv.rate_limited() == 0, [(r.route, r.t) for r in srv.requests() if r.status == 429][:5]
        assert rep.requests_by_bucket == {"api": 24, "resolvers": 120}
        api, res = rep.budgets["api"], rep.budgets["resolvers"]
        assert [lim["quota"] for lim in api["limits"]] == [10] and api["limits"][0]["window_s"] == 2
        assert "advertised by the server" in api["limits"][0]["source"]
        assert [lim["quota"] for lim in res["limits"]] == [40]
        assert api["waited_s"] > 0 and res["waited_s"] > 0  # both buckets had to wait for their windows


def test_silent_quotas_are_survived_through_429_per_bucket(tmp_path):
    """A server that enforces without advertising: 429s happen, are waited out per bucket, and every file
    still arrives."""
    repos = tiny_repos(8, files=2)
    with HubServer(rate_limits={"api": 6}, rate_window_s=1, advertise=False) as srv:
        serve(srv, repos)
        rep = run(write_mixture(tmp_path, *repos), srv, tmp_path / "out", max_workers=2)
        assert rep.exit_status == 0
        assert srv.rate_limited("api") >= 1 and srv.rate_limited("resolvers") == 0
        assert rep.budgets["api"]["rate_limited"] == srv.rate_limited("api")
        assert rep.budgets["resolvers"]["rate_limited"] == 0


def test_budget_fraction_lets_two_processes_share_the_quota(tmp_path):
    """Two processes from one address, each told to take half of every bucket: no 429 together."""
    root = tmp_path / "out"
    with HubServer(rate_limits={"api": 20, "resolvers": 40}, rate_window_s=2) as srv:
        procs, mixes = [], []
        for k in range(2):
            repos = {f"p{k}/{name.split('/')[1]}": files for name, files in tiny_repos(10, files=2).items()}
            serve(srv, repos)
            mixes.append(write_mixture(tmp_path, *repos, name=f"mix{k}.txt"))
        env = dict(os.environ, HF_ENDPOINT=srv.url, PYTHONPATH=str(REPO_ROOT))
        for mix in mixes:
            procs.append(subprocess.Popen(
                [sys.executable, "-m", "lerobot_tools", "prefetch", str(mix), "--local-dir-root", str(root),
                 "--max-workers", "2", "--budget-fraction", "0.5", "--format", "json", "--no-progress"],
                env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE))
        outs = [p.communicate(timeout=120) for p in procs]
        for p, (out, err) in zip(procs, outs):
            assert p.returncode == 0, err.decode()[-2000:]
        assert srv.counts()["info"] == 20 and srv.counts()["get"] == 40
        assert srv.rate_limited() == 0
        for out, _ in outs:
            api = json.loads(out)["budgets"]["api"]
            assert api["limits"][0]["quota"] == 10 and "x0.5 share" in api["limits"][0]["source"]


# ----------------------------------------------------------------------------------- bounded waits
@pytest.mark.parametrize("retry_after", ["100000", "Fri, 01 Jan 2100 00:00:00 GMT"])
def test_a_retry_after_beyond_the_cap_gives_up_at_once(tmp_path, clock, retry_after):
    with HubServer(clock=clock.now) as srv:
        srv.add_repo("org/v21", V21)
        srv.add_repo("org/other", V21)
        srv.inject("info", "429", times=-1, retry_after=retry_after)
        rep = run(write_mixture(tmp_path, "org/v21", "org/other"), srv, tmp_path / "out", clock, max_workers=1)
        assert rep.exit_status == 1
        assert clock.sleeps == []  # never waited, let alone 27 hours or 74 years
        assert len(srv.requests("info")) == 1  # the pause stopped the other repo's request too
        for res in rep.results:
            assert res.status == "error" and len(res.problems) == 1
            msg = res.problems[0]
            assert "\n" not in msg and "giving up" in msg and "--max-wait-s 900" in msg and " UTC" in msg
        expected = "(until 2100-01-01 00:00:00 UTC)" if "2100" in retry_after else "asks to wait 27.8 h (until"
        assert expected in rep.results[0].problems[0]


def test_waits_are_announced_on_stderr_and_capped_by_the_option(tmp_path, clock, monkeypatch):
    monkeypatch.setattr(budget_mod.SYSTEM_CLOCK, "sleep", clock.sleep)  # the CLI uses the system clock
    monkeypatch.setattr(budget_mod.SYSTEM_CLOCK, "now", clock.now)
    with HubServer(clock=clock.now) as srv:
        srv.add_repo("org/v21", V21)
        monkeypatch.setenv("HF_ENDPOINT", srv.url)
        mix = write_mixture(tmp_path, "org/v21")
        srv.inject("info", "429", times=1, retry_after="7")
        res = CliRunner().invoke(cli, ["prefetch", str(mix), "--local-dir-root", str(tmp_path / "a"), "--no-progress"])
        assert res.exit_code == 0, res.output
        lines = [ln for ln in res.stderr.splitlines() if "waiting" in ln]
        assert len(lines) == 1 and lines[0].startswith("lrtool prefetch: waiting 7.0 s for the Hub's 'api'")
        assert " UTC (HTTP 429 on revision 'main' of org/v21)" in lines[0]
        assert clock.sleeps == [7.0]

        srv.inject("info", "429", times=-1, retry_after="7")
        res = CliRunner().invoke(cli, ["prefetch", str(mix), "--local-dir-root", str(tmp_path / "b"), "--no-progress",
                                       "--no-lock", "--max-wait-s", "5"])
        assert res.exit_code == 1
        assert "asks to wait 7.0 s" in res.stdout and "more than --max-wait-s 5; giving up" in res.stdout
        assert clock.sleeps == [7.0] and "Traceback" not in res.output
        res = CliRunner().invoke(cli, ["prefetch", str(mix), "--budget-fraction", "nan"])
        assert res.exit_code == 2 and "budget-fraction" in res.output


def test_a_hostile_rate_limit_policy_cannot_stall_prefetch(tmp_path, clock):
    """One request per 31 years, and 'nothing left for 31 years': the next request gives up, it does not wait."""
    with HubServer(clock=clock.now) as srv:
        srv.add_repo("org/v21", V21)
        srv.inject("info", "ratelimit_ok", ratelimit='"api";r=0;t=1000000000',
                   policy='"fixed window";"api";q=1;w=1000000000')
        rep = run(write_mixture(tmp_path, "org/v21"), srv, tmp_path / "out", clock)
        assert rep.exit_status == 1 and clock.sleeps == []
        assert srv.counts() == {"info": 1}
        (msg,) = rep.results[0].problems
        assert "'api' rate limit" in msg and "more than --max-wait-s 900; giving up" in msg


# ----------------------------------------------------------------------------------- budgets (units)
def test_buckets_are_independent_and_defaults_follow_the_token():
    c = FakeClock()
    anon = Budgets(authenticated=False, clock=c)
    auth = Budgets(authenticated=True, clock=c)
    assert [lim.quota for lim in anon.bucket("api").limits()] == [500]
    assert [lim.quota for lim in anon.bucket("resolvers").limits()] == [3000]
    assert [lim.quota for lim in auth.bucket("api").limits()] == [1000]
    assert [lim.quota for lim in auth.bucket("resolvers").limits()] == [5000]
    anon.bucket("api").pause(30, "test")
    ticket, waited = anon.acquire("resolvers")  # a paused api bucket does not hold downloads
    assert waited == 0 and c.sleeps == []
    quarter = Budgets(api_requests=100, resolve_requests=1000, window_s=60, fraction=0.25, clock=c)
    assert [(lim.quota, lim.window_s) for lim in quarter.bucket("api").limits()] == [(25, 60)]
    assert [lim.quota for lim in quarter.bucket("resolvers").limits()] == [250]
    for bad in ({"fraction": 0}, {"fraction": 1.5}, {"fraction": float("nan")}, {"window_s": 0},
                {"window_s": float("inf")}, {"api_requests": 0}, {"max_wait_s": -1}):
        with pytest.raises(ValueError):
            Budgets(**bad)


def test_server_policy_replaces_the_default_but_not_an_explicit_quota():
    c = FakeClock()
    b = Budgets(clock=c)
    b.take_headers("api", None, [], parse_ratelimit_policy({"ratelimit-policy": '"fixed window";"api";q=2500;w=300'}))
    assert [lim.quota for lim in b.bucket("api").limits()] == [2500]  # a PRO account gets its quota
    e = Budgets(api_requests=100, clock=c)
    e.take_headers("api", None, [], parse_ratelimit_policy({"ratelimit-policy": '"fixed window";"api";q=2500;w=300'}))
    assert sorted(lim.quota for lim in e.bucket("api").limits()) == [100, 2500]


def test_remaining_count_deducts_requests_the_server_had_not_seen():
    c = FakeClock()
    b = BucketBudget("api", Limit(1000, 300, "test"), clock=c)
    first, _ = b.acquire()
    later = [b.acquire()[0] for _ in range(3)]  # granted after `first`, maybe not counted in its answer
    first.done()
    b.observe(5, 10.0, first)  # the server said 5 left when it answered `first`
    for t in later:
        t.done()
    assert [b.acquire()[1] for _ in range(2)] == [0, 0]  # 5 - 3 = 2 more now ...
    assert b.acquire()[1] == 10.0  # ... then the window's reset
    assert c.sleeps == [10.0]


def test_a_fixed_window_renews_in_full_at_its_reset():
    """After the reset the server announced, a fixed window's full quota is used at once, instead of waiting
    for the sliding window to forget the requests of the previous window."""
    for fixed, expected in ((True, [4.0, 10.0]), (False, [4.0, 6.0, 10.0])):
        c = FakeClock()
        b = BucketBudget("api", Limit(500, 300, "default"), clock=c)
        b.advertise(3, 10, fixed_window=fixed)

        def take():
            ticket, waited = b.acquire()
            ticket.done()
            return ticket

        b.observe(2, 4.0, take())  # 2 left in this window, which resets in 4 s
        for _ in range(2 + 3 + 1):
            take()
        assert c.sleeps == expected, (fixed, c.sleeps)


def test_no_wait_exceeds_the_bound_and_each_is_announced_once():
    c = FakeClock()
    said: list[str] = []
    b = BucketBudget("resolvers", Limit(4, 50, "test"), clock=c, announce=said.append)

    def take():
        ticket, waited = b.acquire()
        ticket.done()
        return waited

    for _ in range(4):
        take()
    with pytest.raises(WaitTooLong) as info:
        b.acquire(max_wait=49)
    assert "would make this request wait 50 s" in str(info.value) and c.sleeps == []
    out = []
    threads = [threading.Thread(target=lambda: out.append(take())) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    assert len(out) == 4 and len([m for m in said if "waiting 50 s" in m]) == 1


# ----------------------------------------------------------------------------------- headers and buckets
def test_parsers_read_the_documented_form_like_huggingface_hub():
    from huggingface_hub.utils import parse_ratelimit_headers

    headers = {"ratelimit": '"api";r=0;t=55', "ratelimit-policy": '"fixed window";"api";q=500;w=300'}
    hf = parse_ratelimit_headers(headers)
    (item,) = parse_ratelimit(headers)
    (policy,) = parse_ratelimit_policy(headers)
    assert (item.bucket, item.remaining, item.reset_s) == (hf.resource_type, hf.remaining, hf.reset_in_seconds)
    assert (policy.bucket, policy.quota, policy.window_s) == ("api", hf.limit, hf.window_seconds)
    # lenient: several buckets, decimals, unquoted names, the older drafts
    items = parse_ratelimit({"ratelimit": '"api";r=4;t=5.5, resolvers;r=9;t=1'})
    assert [(i.bucket, i.remaining, i.reset_s) for i in items] == [("api", 4, 5.5), ("resolvers", 9, 1.0)]
    assert [(i.bucket, i.remaining, i.reset_s) for i in parse_ratelimit(
        {"ratelimit": "limit=100, remaining=0, reset=30"})] == [(None, 0, 30.0)]
    assert [(i.remaining, i.reset_s) for i in parse_ratelimit(
        {"ratelimit-remaining": "3", "ratelimit-reset": "9"})] == [(3, 9.0)]
    assert [(i.quota, i.window_s) for i in parse_ratelimit_policy({"ratelimit-policy": "500;w=300"})] == [(500, 300)]
    # never trusted: absurd or hostile values are dropped, not parsed into something
    for bad in ('"api";r=-1;t=5', '"api";r=1e999;t=inf', "x" * 5000, '"api";r=;t=', "\x00\x01", '"api"'):
        assert parse_ratelimit({"ratelimit": bad}) == []
    assert parse_ratelimit_policy({"ratelimit-policy": '"fixed window";"api";q=0;w=300'}) == []
    assert parse_ratelimit_policy({"ratelimit-policy": '"fixed window";"api";q=5;w=0'}) == []
    assert parse_retry_after("inf") is None and parse_retry_after("1e9") is None
    assert parse_retry_after("Fri, 01 Jan 2100 00:00:00 GMT", now_epoch=0) == 4102444800


def test_parsers_never_raise_on_mutated_headers():
    rng = random.Random(1234)
    seeds = ['"api";r=0;t=55', '"fixed window";"api";q=500;w=300', "limit=1, remaining=2, reset=3", "7"]
    alphabet = '";,=qrtw0123456789.-+ eE\x00\\/api'
    for _ in range(3000):
        s = list(rng.choice(seeds))
        for _ in range(rng.randint(1, 6)):
            op, pos = rng.random(), rng.randrange(len(s) + 1)
            if op < 0.4:
                s.insert(pos, rng.choice(alphabet))
            elif s and op < 0.8:
                del s[min(pos, len(s) - 1)]
            elif s:
                s[min(pos, len(s) - 1)] = rng.choice(alphabet)
        value = "".join(s)
        h = {"ratelimit": value, "ratelimit-policy": value, "ratelimit-remaining": value, "ratelimit-reset": value}
        for it in parse_ratelimit(h) + parse_ratelimit_policy(h):
            for v in (it.remaining, it.reset_s, it.quota, it.window_s):
                assert v is None or (0 <= v < 1e16)
        ra = parse_retry_after(value)
        assert ra is None or 0 <= ra < 1e16


def test_every_request_is_classified_into_its_bucket():
    hub = "https://huggingface.co"
    assert bucket_of_url(f"{hub}/api/datasets/org/name/revision/main", hub) == "api"
    assert bucket_of_url(f"{hub}/api/datasets/org/resolve/tree/abc?cursor=2", hub) == "api"  # a repo named 'resolve'
    assert bucket_of_url(f"{hub}/datasets/org/name/resolve/abc/meta/info.json", hub) == "resolvers"
    assert bucket_of_url(f"{hub}/org/model/resolve/main/config.json", hub) == "resolvers"
    assert bucket_of_url(f"{hub}/datasets/org/name", hub) == "pages"
    assert bucket_of_url("https://cas-bridge.xethub.hf.co/xet-bridge-us/abc", hub) == "cdn"
    assert bucket_of_url("http://127.0.0.1:8080/hf/api/datasets/a/b/tree/x", "http://127.0.0.1:8080/hf") == "api"
    assert bucket_of_url("http://127.0.0.1:8081/api/datasets/a/b", "http://127.0.0.1:8080") == "cdn"


def test_lfs_redirect_hops_count_as_cdn_not_resolvers(tmp_path, clock):
    with HubServer() as cdn, HubServer(lfs_threshold=2000, cdn=cdn) as srv:
        srv.add_repo("org/v21", V21)
        rep = run(write_mixture(tmp_path, "org/v21"), srv, tmp_path / "out", clock)
        assert rep.exit_status == 0
        lfs = [p for p, d in V21.items() if len(d) >= 2000]
        assert rep.requests_by_bucket == {"api": 2, "resolvers": len(V21), "cdn": len(lfs)}
        assert rep.requests == srv.total() + cdn.total()
        text = rep.to_dict()
        assert text["datasets"][0]["requests_by_bucket"] == rep.requests_by_bucket
