"""Benchmark: a cold 400-repo mixture served under the Hub's per-bucket rate limits, lrtool vs snapshot_download.

The server is ``tests/hubserver.py`` (stdlib HTTP on 127.0.0.1) running in this process, enforcing the Hub's
anonymous quotas per bucket (Hub documentation, "Hub Rate limits": ``api`` 500 and ``resolvers`` 3,000 requests
per window) in fixed windows, answering 429 past them and advertising them in ``RateLimit`` /
``RateLimit-Policy``. Only the window is scaled down (default 10 s instead of 300 s) so a run takes a minute,
not an hour; both clients are told nothing about it and must cope with what the server says.

Scenarios, each in a fresh Python process with its own ``HF_HOME`` and destination, with fresh quota windows:

* ``lrtool prefetch`` cold (the library call behind the CLI; ``--window-s`` set to the scaled window, the
  quotas left at their anonymous defaults), then warm with the lock file it wrote;
* one ``huggingface_hub.snapshot_download(repo, revision="main", local_dir=...)`` per repo, in a loop, cold;
  a repo whose call raises (e.g. a 429 it does not retry) is counted as failed and the loop goes on.

Printed per scenario: requests per bucket (counted by the server), 429 answers per bucket, repos that failed,
and wall time (inside the child, imports excluded). Repos are small synthetic LeRobot-v2.1-shaped repos
(``meta/info.json`` plus ``--files - 1`` episode parquet names with a few hundred bytes each): the figures
are about requests and rate limits, not bandwidth.

Usage: python benchmarks/bench_prefetch.py [--repos 400] [--files 6] [--window-s 10] [--workdir DIR] [--keep]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))

from tests.hubserver import HubServer  # noqa: E402

ANON = {"api": 500, "resolvers": 3000}

CHILD = r"""
import json, os, sys, time
kind, endpoint, mix, root, repos_json, window_s = sys.argv[1:7]
repos = json.loads(repos_json)
import huggingface_hub, httpx2  # imports outside the timed section, for every scenario
from huggingface_hub import snapshot_download
from lerobot_tools.prefetch import PrefetchOptions, prefetch
t0 = time.perf_counter()
failed, first_error = 0, None
if kind == "lrtool":
    rep = prefetch(mix, PrefetchOptions(local_dir_root=root, endpoint=endpoint, progress=False,
                                        window_s=float(window_s), announce=lambda m: None))
    failed = sum(not r.complete for r in rep.results)
    bad = [p for r in rep.results for p in r.problems]
    first_error = bad[0] if bad else None
elif kind == "snapshot":
    for r in repos:
        try:
            snapshot_download(r, repo_type="dataset", revision="main", local_dir=os.path.join(root, r),
                              endpoint=endpoint)
        except Exception as exc:
            failed += 1
            first_error = first_error or f"{type(exc).__name__}: {str(exc).splitlines()[0][:160]}"
print(json.dumps({"seconds": time.perf_counter() - t0, "failed": failed, "first_error": first_error}))
"""


def build_repos(n_repos: int, n_files: int) -> dict[str, dict[str, bytes]]:
    """``n_repos`` synthetic repos: ``meta/info.json`` plus ``n_files - 1`` small episode parquet names."""
    repos = {}
    for i in range(n_repos):
        files = {"meta/info.json": json.dumps({"codebase_version": "v2.1", "total_episodes": n_files - 1,
                                               "seed": i}).encode()}
        for k in range(n_files - 1):
            files[f"data/chunk-000/episode_{k:06d}.parquet"] = bytes([i % 251, k % 251]) * 200
        repos[f"bench/repo-{i:03d}"] = files
    return repos


def run_child(kind: str, srv: HubServer, workdir: Path, scenario: str, mix: Path, root: Path,
              repos: dict[str, dict[str, bytes]], window_s: float) -> dict:
    hf_home = workdir / "hf_home" / kind
    env = dict(os.environ, HF_HOME=str(hf_home), HF_ENDPOINT=srv.url, HF_HUB_DISABLE_TELEMETRY="1",
               HF_HUB_DISABLE_PROGRESS_BARS="1", HF_HUB_DISABLE_IMPLICIT_TOKEN="1",
               NO_PROXY="127.0.0.1,localhost", no_proxy="127.0.0.1,localhost",
               HF_LEROBOT_HOME=str(workdir / "lerobot_home"), PYTHONPATH=str(ROOT))
    for var in ("HF_TOKEN", "HF_HUB_OFFLINE"):
        env.pop(var, None)
    srv.reset()  # fresh quota windows for every scenario
    t0 = time.perf_counter()
    out = subprocess.run([sys.executable, "-c", CHILD, kind, srv.url, str(mix), str(root),
                          json.dumps(sorted(repos)), str(window_s)],
                         env=env, capture_output=True, text=True, cwd=str(workdir))
    proc_s = time.perf_counter() - t0
    if out.returncode != 0:
        raise SystemExit(f"{scenario} failed:\n{out.stderr[-3000:]}")
    res = json.loads(out.stdout.strip().splitlines()[-1])
    by_bucket: dict[str, int] = {}
    for r in srv.requests():
        by_bucket[r.bucket or "cdn"] = by_bucket.get(r.bucket or "cdn", 0) + 1
    return {"scenario": scenario, "requests": srv.total(), "api": by_bucket.get("api", 0),
            "resolvers": by_bucket.get("resolvers", 0), "head": srv.counts()["head"],
            "429_api": srv.rate_limited("api"), "429_resolvers": srv.rate_limited("resolvers"),
            "failed": res["failed"], "first_error": res["first_error"], "seconds": res["seconds"], "proc_s": proc_s}


def complete(root: Path, repos: dict[str, dict[str, bytes]]) -> int:
    """Repos whose every file is on disk with the right bytes."""
    ok = 0
    for r, files in repos.items():
        try:
            ok += all((root / r / p).read_bytes() == data for p, data in files.items())
        except OSError:
            pass
    return ok


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repos", type=int, default=400)
    ap.add_argument("--files", type=int, default=6, help="files per repo (meta/info.json + episodes)")
    ap.add_argument("--window-s", type=float, default=10.0, help="the server's rate-limit window (Hub: 300)")
    ap.add_argument("--workdir", type=Path, default=None)
    ap.add_argument("--keep", action="store_true", help="keep the work folder")
    args = ap.parse_args(argv)
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="lrtool-bench-prefetch-"))
    workdir.mkdir(parents=True, exist_ok=True)
    try:
        repos = build_repos(args.repos, args.files)
        n_files = sum(len(f) for f in repos.values())
        print(f"mixture: {len(repos)} repos, {n_files} files; server quotas per {args.window_s:g} s window: "
              f"api {ANON['api']}, resolvers {ANON['resolvers']} (the Hub's anonymous quotas, window scaled "
              f"from 300 s)", flush=True)
        mix = workdir / "mixture.txt"
        mix.write_text("".join(f"{r}\n" for r in sorted(repos)))
        rows = []
        with HubServer(rate_limits=ANON, rate_window_s=args.window_s) as srv:
            for r, files in repos.items():
                srv.add_repo(r, files)
            for kind, scenario, dest in (("lrtool", "lrtool prefetch cold", "lrtool"),
                                         ("lrtool", "lrtool prefetch warm (lock)", "lrtool"),
                                         ("snapshot", "snapshot_download cold", "snap")):
                root = workdir / f"dest-{dest}"
                row = run_child(kind, srv, workdir, scenario, mix, root, repos, args.window_s)
                row["complete"] = complete(root, repos)
                rows.append(row)
                print(f"  {scenario:<30} {row['requests']:>6} requests, {row['429_api'] + row['429_resolvers']:>5} "
                      f"x 429, {row['seconds']:7.1f} s", flush=True)
        print()
        hdr = (f"{'scenario':<30}{'api':>6}{'resolvers':>10}{'(HEAD)':>8}{'429 api':>9}{'429 res':>9}"
               f"{'complete':>10}{'wall s':>9}{'proc s':>9}")
        print(hdr)
        print("-" * len(hdr))
        for r in rows:
            print(f"{r['scenario']:<30}{r['api']:>6}{r['resolvers']:>10}{r['head']:>8}{r['429_api']:>9}"
                  f"{r['429_resolvers']:>9}{r['complete']:>6}/{len(repos):<3}{r['seconds']:>9.1f}{r['proc_s']:>9.1f}")
        for r in rows:
            if r["first_error"]:
                print(f"{r['scenario']}: {r['failed']} repo(s) failed; first: {r['first_error']}")
        by = {r["scenario"]: r for r in rows}
        lc, lw = by["lrtool prefetch cold"], by["lrtool prefetch warm (lock)"]
        print()
        checks = [
            ("lrtool cold: zero 429", lc["429_api"] + lc["429_resolvers"] == 0,
             f"{lc['429_api']} api, {lc['429_resolvers']} resolvers"),
            ("lrtool cold: every repo complete", lc["complete"] == len(repos), f"{lc['complete']}/{len(repos)}"),
            ("lrtool warm with lock: 0 requests", lw["requests"] == 0, f"{lw['requests']}"),
        ]
        for name, ok, detail in checks:
            print(f"{'PASS' if ok else 'FAIL'}  {name}: {detail}")
        return 0 if all(ok for _, ok, _ in checks) else 1
    finally:
        if not args.keep and args.workdir is None:
            shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
