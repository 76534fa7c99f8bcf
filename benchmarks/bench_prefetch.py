"""Benchmark: prewarming a 50-repo x 40-file mixture served locally, cold and warm.

Compares, by HTTP requests (counted by the server) and wall time:

* ``lrtool prefetch`` (the library call behind the CLI; lock file written by the cold run, used warm);
* one ``huggingface_hub.snapshot_download(repo, revision="main", local_dir=...)`` per repo, in a loop;
* a loop of ``huggingface_hub.hf_hub_download(repo, path, revision="main", local_dir=...)`` per file.

The server is ``tests/hubserver.py`` (stdlib HTTP on 127.0.0.1) running in this process; every
scenario runs in a fresh Python process with its own ``HF_HOME`` and destination, and with
``HF_HUB_DISABLE_TELEMETRY=1``. Wall time is measured inside the child around the download call
(imports excluded); ``proc s`` is the whole child process. Repos are synthetic LeRobot v2.1 datasets
(``lerobot_tools.testing.synth``, no video): 5 ``meta/`` files + 35 episode parquet files each.

Targets (issue 5): warm requests 0 with the lock; cold requests <= snapshot_download's; cold wall time
no worse than snapshot_download's.

Usage: python benchmarks/bench_prefetch.py [--repos 50] [--episodes 35] [--workdir DIR] [--keep]
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
sys.path.insert(0, str(ROOT / "tests"))

from hubserver import HubServer, read_folder  # noqa: E402

CHILD = r"""
import json, os, sys, time
kind, endpoint, mix, root, repos_json, files_json = sys.argv[1:7]
repos = json.loads(repos_json)
import huggingface_hub, httpx2  # imports outside the timed section, for every scenario
from huggingface_hub import hf_hub_download, snapshot_download
from lerobot_tools.prefetch import PrefetchOptions, prefetch
t0 = time.perf_counter()
status = "ok"
if kind == "lrtool":
    rep = prefetch(mix, PrefetchOptions(local_dir_root=root, endpoint=endpoint, progress=False))
    status = "ok" if rep.exit_status == 0 else "incomplete"
elif kind == "snapshot":
    for r in repos:
        snapshot_download(r, repo_type="dataset", revision="main", local_dir=os.path.join(root, r), endpoint=endpoint)
elif kind == "hf_hub_download":
    files = json.loads(files_json)
    for r in repos:
        for p in files[r]:
            hf_hub_download(r, p, repo_type="dataset", revision="main", local_dir=os.path.join(root, r),
                            endpoint=endpoint)
print(json.dumps({"seconds": time.perf_counter() - t0, "status": status}))
"""


def build_repos(n_repos: int, n_episodes: int, workdir: Path) -> dict[str, dict[str, bytes]]:
    from lerobot_tools.testing.synth import SynthSpec, build_dataset

    repos = {}
    for i in range(n_repos):
        d = workdir / "src" / f"repo-{i:02d}"
        build_dataset(d, SynthSpec(version="v2.1", episode_lengths=[30] * n_episodes, video_keys=(),
                                   video_codec=None, seed=i))
        repos[f"bench/repo-{i:02d}"] = read_folder(d)
    return repos


def run_child(kind: str, srv: HubServer, workdir: Path, scenario: str, mix: Path, root: Path,
              repos: dict[str, dict[str, bytes]]) -> dict:
    hf_home = workdir / "hf_home" / scenario.split()[0]
    env = dict(os.environ, HF_HOME=str(hf_home), HF_ENDPOINT=srv.url, HF_HUB_DISABLE_TELEMETRY="1",
               HF_HUB_DISABLE_PROGRESS_BARS="1", HF_HUB_DISABLE_IMPLICIT_TOKEN="1",
               NO_PROXY="127.0.0.1,localhost", no_proxy="127.0.0.1,localhost",
               HF_LEROBOT_HOME=str(workdir / "lerobot_home"))
    env.pop("HF_TOKEN", None)
    env.pop("HF_HUB_OFFLINE", None)
    files = {r: sorted(f) for r, f in repos.items()}
    srv.reset()
    t0 = time.perf_counter()
    out = subprocess.run([sys.executable, "-c", CHILD, kind, srv.url, str(mix), str(root),
                          json.dumps(sorted(repos)), json.dumps(files)],
                         env=env, capture_output=True, text=True, cwd=str(workdir))
    proc_s = time.perf_counter() - t0
    if out.returncode != 0:
        raise SystemExit(f"{scenario} failed:\n{out.stderr[-3000:]}")
    res = json.loads(out.stdout.strip().splitlines()[-1])
    c = srv.counts()
    return {"scenario": scenario, "requests": srv.total(), "info": c["info"], "tree": c["tree"],
            "head": c["head"], "get": c["get"] + c["cdn"], "other": c["other"] + c["harness"],
            "seconds": res["seconds"], "proc_s": proc_s, "status": res["status"]}


def verify(root: Path, repos: dict[str, dict[str, bytes]]) -> None:
    for r, files in repos.items():
        for p, data in files.items():
            if (root / r / p).read_bytes() != data:
                raise SystemExit(f"content mismatch in {root / r / p}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repos", type=int, default=50)
    ap.add_argument("--episodes", type=int, default=35, help="episodes per repo (files = episodes + 5)")
    ap.add_argument("--workdir", type=Path, default=None)
    ap.add_argument("--keep", action="store_true", help="keep the work folder")
    args = ap.parse_args(argv)
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="lrtool-bench-prefetch-"))
    workdir.mkdir(parents=True, exist_ok=True)
    try:
        t = time.perf_counter()
        repos = build_repos(args.repos, args.episodes, workdir)
        n_files = sum(len(f) for f in repos.values())
        total_bytes = sum(len(d) for f in repos.values() for d in f.values())
        print(f"mixture: {len(repos)} repos, {n_files} files ({n_files // len(repos)} per repo), "
              f"{total_bytes / 1e6:.1f} MB; built in {time.perf_counter() - t:.1f} s", flush=True)
        mix = workdir / "mixture.txt"
        mix.write_text("".join(f"{r}\n" for r in sorted(repos)))
        rows = []
        with HubServer() as srv:
            for r, files in repos.items():
                srv.add_repo(r, files)
            plan = [
                ("lrtool", "lrtool prefetch cold", "lrtool"),
                ("lrtool", "lrtool prefetch warm (lock)", "lrtool"),
                ("snapshot", "snapshot_download cold", "snap"),
                ("snapshot", "snapshot_download warm", "snap"),
                ("hf_hub_download", "hf_hub_download loop cold", "loop"),
                ("hf_hub_download", "hf_hub_download loop warm", "loop"),
            ]
            for kind, scenario, dest in plan:
                root = workdir / f"dest-{dest}"
                row = run_child(kind, srv, workdir, scenario, mix, root, repos)
                if "cold" in scenario:
                    verify(root, repos)
                rows.append(row)
                print(f"  {scenario:<30} {row['requests']:>6} requests  {row['seconds']:6.2f} s", flush=True)
            # lrtool warm without the lock file: one revision resolve per repo
            (workdir / "mixture.lock").rename(workdir / "mixture.lock.bak")
            rows.append(run_child("lrtool", srv, workdir, "lrtool prefetch warm (no lock)", mix,
                                  workdir / "dest-lrtool", repos))
            (workdir / "mixture.lock.bak").rename(workdir / "mixture.lock")

        print()
        hdr = f"{'scenario':<32}{'requests':>9}{'info':>6}{'tree':>6}{'HEAD':>6}{'GET':>6}{'wall s':>9}{'proc s':>9}"
        print(hdr)
        print("-" * len(hdr))
        for r in rows:
            print(f"{r['scenario']:<32}{r['requests']:>9}{r['info']:>6}{r['tree']:>6}{r['head']:>6}{r['get']:>6}"
                  f"{r['seconds']:>9.2f}{r['proc_s']:>9.2f}")
        by = {r["scenario"]: r for r in rows}
        lc, lw = by["lrtool prefetch cold"], by["lrtool prefetch warm (lock)"]
        sc = by["snapshot_download cold"]
        print()
        checks = [
            ("warm requests with lock == 0", lw["requests"] == 0, f"{lw['requests']}"),
            ("cold requests <= snapshot_download's", lc["requests"] <= sc["requests"],
             f"{lc['requests']} vs {sc['requests']}"),
            ("cold wall time <= snapshot_download's", lc["seconds"] <= sc["seconds"],
             f"{lc['seconds']:.2f} s vs {sc['seconds']:.2f} s"),
        ]
        for name, ok, detail in checks:
            print(f"{'PASS' if ok else 'FAIL'}  {name}: {detail}")
        return 0 if all(ok for _, ok, _ in checks) else 1
    finally:
        if not args.keep and args.workdir is None:
            shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
