"""Benchmark the statistics pass of `lrtool validate --deep` (G010) on ~1 GB data files: extra time and peak RSS.

Targets: the statistics pass adds at most 50 % to the `--deep` time without it, and peak RSS stays under 300 MB.
Two datasets are generated with lerobot_tools.testing.synth (v3.0, no video, one data file each):

* ``robot``: 14,000 episodes x 500 frames, float32 state and action of 14 values (a bimanual arm), ~1.2 GB;
* ``embedding``: 250 episodes x 2,000 frames with a 512-float vector besides state/action (bench_deep's), ~1.2 GB.

Each round runs, in alternation, ``--deep --ignore G010`` (the deep pass without statistics: the work `--deep`
did before G010 existed) and ``--deep``; with ``--old-src DIR`` (a checkout of the code before G010) it also runs
that code's ``--deep``. Each run reports wall and CPU seconds (user + system, all threads): on a shared, noisy
machine compare the ratios of the medians, not absolute seconds; CPU seconds drift less with the load than wall
time but count the parallel decoding threads' work in full.

    python benchmarks/bench_stats.py [--keep DIR] [--rounds 3] [--old-src DIR] [--only robot|embedding]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _measure import compile_tree, lrtool, measure_usage  # noqa: E402

from lerobot_tools.testing.synth import SynthSpec, build_dataset  # noqa: E402

REPO = Path(__file__).resolve().parent.parent

SPECS = {
    "robot": SynthSpec(episode_lengths=[500] * 14_000, state_dim=14, action_dim=14, video_codec=None, video_keys=(),
                       episodes_per_file=14_000),
    "embedding": SynthSpec(episode_lengths=[2000] * 250, video_codec=None, video_keys=(),
                           extra_vector_features={"observation.embedding": 512}, episodes_per_file=250),
}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--keep", type=Path, default=None, help="generate into / reuse this folder")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--old-src", type=Path, default=None, help="checkout of the code before the statistics pass")
    ap.add_argument("--only", choices=sorted(SPECS), default=None)
    args = ap.parse_args()
    base = args.keep or Path(tempfile.mkdtemp(prefix="lrtool-bench-stats-"))
    compile_tree(REPO)
    if args.old_src:
        compile_tree(args.old_src)
    new_env = dict(os.environ, PYTHONPATH=str(REPO))
    old_env = dict(os.environ, PYTHONPATH=str(args.old_src)) if args.old_src else None
    try:
        for name, spec in SPECS.items():
            if args.only and name != args.only:
                continue
            root = base / name
            if not root.exists():
                t0 = time.perf_counter()
                build_dataset(root, spec)
                print(f"[{name}] generated in {time.perf_counter() - t0:.1f} s")
            size = sum(f.stat().st_size for f in root.glob("data/*/*.parquet"))
            rows = sum(spec.episode_lengths)
            print(f"[{name}] {size / 1e9:.2f} GB of data, {rows} rows, {len(spec.episode_lengths)} episodes")
            modes = [("deep without stats", ["--ignore", "G010"], new_env), ("deep with stats", [], new_env)]
            if old_env is not None:
                modes.append(("deep, old code", [], old_env))
            walls: dict[str, list[float]] = {m: [] for m, _, _ in modes}
            cpus: dict[str, list[float]] = {m: [] for m, _, _ in modes}
            rss: dict[str, float] = {m: 0.0 for m, _, _ in modes}
            for r in range(args.rounds):
                order = modes if r % 2 == 0 else modes[::-1]  # alternate, so load drifts hit both sides
                for label, extra, env in order:
                    # run from the data folder: `python -m` puts the working folder first on sys.path, and the
                    # checkout this script lives in would shadow --old-src
                    u = measure_usage(lrtool("validate", str(root), "--deep", "--no-progress", *extra), env=env,
                                      cwd=str(base))
                    walls[label].append(u["wall"])
                    cpus[label].append(u["cpu"])
                    rss[label] = max(rss[label], u["rss"])
                    print(f"[{name}] round {r + 1} {label:<20} {u['wall']:8.2f} s wall {u['cpu']:8.2f} s CPU "
                          f"{u['rss']:8.1f} MB exit {u['exit']}", flush=True)
            med = {m: statistics.median(v) for m, v in walls.items()}
            cpu = {m: statistics.median(v) for m, v in cpus.items()}
            base_label = "deep without stats"
            print(f"[{name}] medians: " + ", ".join(
                f"{m} {med[m]:.2f} s wall, {cpu[m]:.2f} s CPU (peak RSS {rss[m]:.0f} MB)" for m in med))
            print(f"[{name}] statistics pass adds {100 * (med['deep with stats'] / med[base_label] - 1):+.0f} % wall "
                  f"(target <= +50 %), {100 * (cpu['deep with stats'] / cpu[base_label] - 1):+.0f} % CPU; "
                  f"peak RSS {rss['deep with stats']:.0f} MB (target < 300 MB)")
            if old_env is not None:
                print(f"[{name}] against the old code's --deep: "
                      f"{100 * (med['deep with stats'] / med['deep, old code'] - 1):+.0f} % wall, "
                      f"{100 * (cpu['deep with stats'] / cpu['deep, old code'] - 1):+.0f} % CPU")
        print("note: timings on a shared machine are noisy; the modes alternate and the ratios of medians are the "
              "figure")
    finally:
        if args.keep is None:
            shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
