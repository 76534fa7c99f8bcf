"""Benchmark `lrtool validate --deep` on one ~1 GB data file: peak RSS (target < 300 MB) and rows/s.

The dataset is generated with lerobot_tools.testing.synth (v3.0, no video, 250 episodes x 2000 frames with a 512-float
extra vector, all in one data file). --deep streams only the index/timestamp columns in record batches.

    python benchmarks/bench_deep.py [--keep DIR]
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


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--keep", type=Path, default=None)
    ap.add_argument("--episodes", type=int, default=250)
    ap.add_argument("--frames", type=int, default=2000)
    args = ap.parse_args()
    base = args.keep or Path(tempfile.mkdtemp(prefix="lrtool-bench-deep-"))
    root = base / "big"
    try:
        if not root.exists():
            t0 = time.perf_counter()
            build_dataset(root, SynthSpec(episode_lengths=[args.frames] * args.episodes, video_codec=None, video_keys=(),
                                          extra_vector_features={"observation.embedding": 512},
                                          episodes_per_file=args.episodes))
            print(f"generated in {time.perf_counter() - t0:.1f} s")
        files = sorted(root.glob("data/*/*.parquet"))
        size = sum(f.stat().st_size for f in files)
        rows = args.episodes * args.frames
        print(f"{len(files)} data file(s), {size / 1e9:.2f} GB on disk, {rows} rows")
        print(f"{'mode':<12} {'wall s':>8} {'rows/s':>12} {'peak RSS MB':>12} {'exit':>5}")
        for label, extra in [("default", []), ("--deep", ["--deep"])]:
            wall, rss, code = measure(lrtool("validate", str(root), "--no-progress", *extra))
            print(f"{label:<12} {wall:8.2f} {rows / wall:12,.0f} {rss:12.1f} {code:5d}")
        print("target: --deep peak RSS under 300 MB on a 1 GB data file")
    finally:
        if args.keep is None:
            shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
