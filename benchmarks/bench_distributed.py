"""Benchmark scale-out: `lrtool validate --deep` and `lrtool reshard` on datatrove's LocalPipelineExecutor.

On a synthetic mixture (N datasets of v3.0 data with incompressible float features, default 200 x ~10 MB = 2 GB;
no videos, so the bytes are the parquet the two commands read and rewrite), prints for each command:

- the wall time of the plain single-process command, and of `--executor local` with 1, 2 and 4 tasks
  (workers = tasks), the speed-up and the parallel efficiency T(1 task) / (k * T(k tasks));
- per-task throughput (MB/s, from each part's own seconds);
- the engine's overhead: per run (datatrove start-up, the plan, the parts, the merge: 1-task executor wall minus
  the plain command's wall) and per task (4 tasks run one after another on a 4-dataset mixture, minus the plain
  command on it, divided by 4);
- the projected wall time for a 20 TB mixture on 64 nodes, from the measured per-byte cost of one task:
  overhead + 20 TB x (seconds per byte) / (64 x cores per node x efficiency at 2 tasks). Storage bandwidth is not
  modelled: the shared file system must deliver 20 TB in that time.

Target: efficiency at 2 tasks >= 0.8 for both commands on a 2-core machine.

    python benchmarks/bench_distributed.py [--datasets 200] [--episodes 10] [--frames 2000] [--cores-per-node 32]
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _measure import lrtool, measure  # noqa: E402

from lerobot_tools.testing.synth import SynthSpec, build_dataset  # noqa: E402

TB = 1e12


def make_mixture(base: Path, n: int, episodes: int, frames: int) -> tuple[Path, int]:
    """N copies of one synthetic dataset (v3.0, ``episodes`` x ``frames`` rows, 64 noise floats per row)."""
    t0 = time.perf_counter()
    tpl = build_dataset(base / "_template", SynthSpec(version="v3.0", episode_lengths=[frames] * episodes,
                                                      episodes_per_file=2, video_keys=(), video_codec=None,
                                                      extra_vector_features={"observation.noise": 64}))
    lines = []
    for i in range(n):
        dst = base / "mix" / f"org{i // 100}" / f"ds{i:04d}"
        shutil.copytree(tpl, dst)
        lines.append(str(dst.relative_to(base / "mix")))
    mix = base / "mix" / "mixture.txt"
    mix.write_text("\n".join(lines) + "\n")
    nbytes = sum(p.stat().st_size for p in (base / "mix").rglob("*.parquet"))
    print(f"generated {n} datasets, {nbytes / 1e9:.2f} GB of parquet, in {time.perf_counter() - t0:.1f} s")
    return mix, nbytes


def _copy(src: Path, dst: Path) -> Path:
    if dst.exists():
        shutil.rmtree(dst)
    shutil.copytree(src, dst)
    return dst / "mixture.txt"


def _task_seconds(run_dir: Path) -> list[float]:
    return [json.loads(p.read_text())["seconds"] for p in sorted((run_dir / "parts").glob("part-*.json"))]


def bench(command: list[str], mix_src: Path, work: Path, nbytes: int, tasks: list[int], fresh: bool) -> dict:
    """Wall times of the plain command and of the local executor with each task count."""
    out: dict = {"runs": {}}
    mix = _copy(mix_src, work / "plain") if fresh else mix_src
    wall, rss, code = measure(lrtool(*command[:1], str(mix), *command[1:], "--format", "json", "--no-progress"))
    out["plain"] = wall
    print(f"  plain single process      {wall:8.2f} s  {nbytes / 1e6 / wall:8.1f} MB/s  peak RSS {rss:6.0f} MB  exit {code}")
    for k in tasks:
        mix = _copy(mix_src, work / f"t{k}") if fresh else mix_src
        run_dir = work / f"run-{command[0]}-{k}"
        shutil.rmtree(run_dir, ignore_errors=True)
        wall, rss, code = measure(lrtool(*command[:1], str(mix), *command[1:], "--format", "json", "--no-progress",
                                         "--executor", "local", "--tasks", str(k), "--workers", str(k),
                                         "--logging-dir", str(run_dir)))
        secs = _task_seconds(run_dir)
        per_task = (nbytes / k) / 1e6 / (sum(secs) / len(secs)) if secs and sum(secs) else float("nan")
        out["runs"][k] = {"wall": wall, "task_seconds": secs}
        print(f"  --executor local --tasks {k} {wall:8.2f} s  {nbytes / 1e6 / wall:8.1f} MB/s  "
              f"per task {per_task:6.1f} MB/s  peak RSS {rss:6.0f} MB  exit {code}")
    t1 = out["runs"][tasks[0]]["wall"]
    for k in tasks[1:]:
        tk = out["runs"][k]["wall"]
        print(f"  {k} tasks: speed-up {t1 / tk:4.2f}x, efficiency {t1 / (k * tk):4.2f}")
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--datasets", type=int, default=200)
    ap.add_argument("--episodes", type=int, default=10)
    ap.add_argument("--frames", type=int, default=2000, help="frames per episode")
    ap.add_argument("--cores-per-node", type=int, default=32, help="for the 20 TB projection")
    ap.add_argument("--keep", type=Path, default=None, help="generate into this folder and keep it")
    args = ap.parse_args()
    base = args.keep or Path(tempfile.mkdtemp(prefix="lrtool-bench-distributed-"))
    base.mkdir(parents=True, exist_ok=True)
    try:
        mix, nbytes = make_mixture(base, args.datasets, args.episodes, args.frames)
        tasks = [1, 2, 4]
        print("validate --deep")
        v = bench(["validate", "--deep"], mix, base / "work", nbytes, tasks, fresh=False)
        print("reshard (every file rewritten: the synthetic files have no page index)")
        r = bench(["reshard"], mix.parent, base / "work", nbytes, tasks, fresh=True)

        # engine overhead per task: 4 tiny datasets, 4 tasks run one after another
        tiny = base / "tiny"
        tiny.mkdir(exist_ok=True)
        tpl = build_dataset(tiny / "t0", SynthSpec(version="v3.0", episode_lengths=[10, 10], video_keys=(),
                                                   video_codec=None))
        for i in range(1, 4):
            shutil.copytree(tpl, tiny / f"t{i}")
        (tiny / "mixture.txt").write_text("\n".join(f"t{i}" for i in range(4)) + "\n")
        plain, _, _ = measure(lrtool("validate", str(tiny / "mixture.txt"), "--deep", "--no-progress"))
        seq, _, _ = measure(lrtool("validate", str(tiny / "mixture.txt"), "--deep", "--no-progress", "--executor",
                                   "local", "--tasks", "4", "--workers", "1", "--logging-dir", str(tiny / "run")))
        per_run = v["runs"][1]["wall"] - v["plain"]
        per_task = (seq - plain) / 4
        print(f"engine overhead: {per_run:.2f} s per run (1-task executor minus the plain command), "
              f"{per_task:.2f} s per task (4 sequential tasks on 4 tiny datasets: {seq:.2f} s vs plain {plain:.2f} s)")

        nodes, cores = 64, args.cores_per_node
        print(f"projection: 20 TB on {nodes} nodes x {cores} cores ({nodes * cores} tasks), from one task's measured "
              "seconds per byte and the efficiency at 2 tasks")
        for name, res in (("validate --deep", v), ("reshard", r)):
            t1 = res["runs"][1]["task_seconds"][0] if res["runs"][1]["task_seconds"] else res["runs"][1]["wall"]
            s_per_byte = t1 / nbytes
            eff = min(1.0, res["runs"][1]["wall"] / (2 * res["runs"][2]["wall"]))
            proj = per_run + per_task + 20 * TB * s_per_byte / (nodes * cores * eff)
            print(f"  {name:<16} {s_per_byte * 1e9:8.3f} s/GB per task, efficiency {eff:4.2f} -> "
                  f"{proj / 3600:6.2f} h ({proj:,.0f} s); storage must deliver {20 * TB / proj / 1e9:,.1f} GB/s")
        print("target: efficiency at 2 tasks >= 0.8 for validate --deep and reshard (2-core machine)")
    finally:
        if args.keep is None:
            shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
