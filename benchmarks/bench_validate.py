"""Benchmark `lrtool validate` on a synthetic mixture of N datasets x 20 data files (default mode: metadata,
parquet footers, file sniffing, MP4 box walks, one PyAV header per video key).

Target: 400 datasets x 20 data files validate in under 20 s on a 2-core machine.
Prints datasets/s and peak RSS, for --jobs 1 and --jobs 2.

    python benchmarks/bench_validate.py [--datasets 400] [--keep DIR]
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _measure import lrtool, measure  # noqa: E402

from lerobot_tools.testing.synth import SynthSpec, build_dataset  # noqa: E402


def make_mixture(base: Path, n: int) -> Path:
    t0 = time.perf_counter()
    lengths = [30] * 20
    templates = {
        # v2.1: one parquet + one mp4 per episode -> 20 data files, 20 videos
        "v21": build_dataset(base / "_t21", SynthSpec(version="v2.1", episode_lengths=lengths, video_size=(32, 32))),
        # v3.0: one episode per data file -> 20 data files, 20 videos per camera
        "v30": build_dataset(base / "_t30", SynthSpec(version="v3.0", episode_lengths=lengths, episodes_per_file=1,
                                                       video_size=(32, 32))),
    }
    lines = []
    for i in range(n):
        kind = "v21" if i % 2 == 0 else "v30"
        dst = base / f"org{i // 100}" / f"ds{i:04d}"
        shutil.copytree(templates[kind], dst)
        lines.append(str(dst))
    mix = base / "mixture.txt"
    mix.write_text("\n".join(lines) + "\n")
    n_parquet = sum(1 for _ in base.glob("org*/*/data/**/*.parquet"))
    n_mp4 = sum(1 for _ in base.glob("org*/*/videos/**/*.mp4"))
    print(f"generated {n} datasets ({n_parquet} data files, {n_mp4} videos) in {time.perf_counter() - t0:.1f} s")
    return mix


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--datasets", type=int, default=400)
    ap.add_argument("--keep", type=Path, default=None, help="generate into this folder and keep it")
    args = ap.parse_args()
    base = args.keep or Path(tempfile.mkdtemp(prefix="lrtool-bench-validate-"))
    try:
        mix = make_mixture(base, args.datasets) if not (base / "mixture.txt").exists() else base / "mixture.txt"
        print(f"{'mode':<28} {'wall s':>8} {'datasets/s':>11} {'peak RSS MB':>12} {'exit':>5}")
        for label, extra in [("default, --jobs 1", ["--jobs", "1"]), ("default, --jobs 2", ["--jobs", "2"]),
                             ("--deep, --jobs 2", ["--deep", "--jobs", "2"])]:
            wall, rss, code = measure(lrtool("validate", str(mix), "--format", "json", "--no-progress", *extra))
            print(f"{label:<28} {wall:8.2f} {args.datasets / wall:11.1f} {rss:12.1f} {code:5d}")
        print("target: default mode under 20 s for 400 datasets x 20 data files (exit 0 = the mixture validated clean "
              "of errors)")
    finally:
        if args.keep is None:
            shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
