"""Benchmark `lrtool validate MIXTURE` on a mixture file of many lines naming few distinct datasets.

A mixture may name one dataset on many lines (one line per episode subset, per camera, or by accident when
files are concatenated). Identical entries must be resolved, validated and reported once, and the time must
grow with the number of distinct datasets, not with the number of lines.

Target: 10,000 lines naming 100 distinct small datasets validate in well under a minute (the lines cost
parsing only); a mixture repeating one dataset 10,000 times costs about as much as that one dataset.

Prints the wall time and peak RSS of `lrtool validate --format json` for each shape.

    python benchmarks/bench_mixture_lines.py [--lines 10000] [--distinct 100] [--keep DIR]
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


def make_datasets(base: Path, distinct: int) -> list[Path]:
    """``distinct`` copies of one small v2.1 dataset (3 episodes, no video) under ``base``."""
    template = base / "_template"
    if not (template / "meta" / "info.json").is_file():
        build_dataset(template, SynthSpec(version="v2.1", episode_lengths=[10, 10, 10], video_keys=(),
                                          video_codec=None))
    roots = []
    for i in range(distinct):
        dst = base / f"ds{i:04d}"
        if not dst.exists():
            shutil.copytree(template, dst)
        roots.append(dst)
    return roots


def write_mixture(path: Path, roots: list[Path], lines: int) -> Path:
    """A plain-text mixture of ``lines`` lines cycling through ``roots`` (relative paths)."""
    path.write_text("".join(f"./{roots[i % len(roots)].name}\n" for i in range(lines)))
    return path


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--lines", type=int, default=10_000)
    ap.add_argument("--distinct", type=int, default=100)
    ap.add_argument("--keep", type=Path, default=None, help="generate into this folder and keep it")
    args = ap.parse_args()
    base = args.keep or Path(tempfile.mkdtemp(prefix="lrtool-bench-mixture-lines-"))
    base.mkdir(parents=True, exist_ok=True)
    try:
        t0 = time.perf_counter()
        roots = make_datasets(base, args.distinct)
        shapes = [
            (f"{args.lines} lines, {args.distinct} distinct", write_mixture(base / "many.txt", roots, args.lines)),
            (f"{args.lines} lines, 1 distinct", write_mixture(base / "one.txt", roots[:1], args.lines)),
            (f"{args.distinct} lines, {args.distinct} distinct", write_mixture(base / "unique.txt", roots,
                                                                                args.distinct)),
        ]
        print(f"generated {args.distinct} datasets in {time.perf_counter() - t0:.1f} s")
        print(f"{'mixture':<34} {'wall s':>8} {'peak RSS MB':>12} {'exit':>5}")
        for label, mix in shapes:
            wall, rss, code = measure(lrtool("validate", str(mix), "--format", "json", "--no-progress"))
            print(f"{label:<34} {wall:>8.2f} {rss:>12.0f} {code:>5}")
    finally:
        if args.keep is None:
            shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
