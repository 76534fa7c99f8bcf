"""Benchmark CLI start-up: `lrtool --help` must start in under 0.3 s and import no torch/torchcodec/datasets.

Prints the median of 10 runs of `lrtool --help` and `lrtool validate <clean fixture>`, and which heavy modules
each imports.
"""

from __future__ import annotations

import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PROBE = ("import sys\nfrom lerobot_tools.cli import main\ntry:\n    main(sys.argv[1:])\nexcept SystemExit:\n    pass\n"
         "print(sorted(m for m in ('torch', 'torchcodec', 'datasets', 'pandas', 'pyarrow', 'av') if m in sys.modules),"
         " file=sys.stderr)\n")


def timed(cmd: list[str], n: int = 10) -> float:
    times = []
    for _ in range(n):
        t0 = time.perf_counter()
        subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main() -> None:
    exe = shutil.which("lrtool") or str(Path(sys.executable).parent / "lrtool")
    fixture = str(ROOT / "fixtures/datasets/clean_v30")
    for label, args in [("lrtool --help", ["--help"]), ("lrtool validate clean_v30", ["validate", fixture])]:
        med = timed([exe, *args])
        mods = subprocess.run([sys.executable, "-c", PROBE, *args], capture_output=True, text=True).stderr.strip()
        print(f"{label:<28} median {med * 1000:7.1f} ms   heavy modules imported: {mods}")
    print("target: `lrtool --help` under 300 ms; never torch, torchcodec or datasets on these paths")


if __name__ == "__main__":
    main()
