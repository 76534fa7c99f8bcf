"""Run a command as a child process and measure wall time and peak RSS.

Peak RSS comes from ``os.wait4`` rusage (``ru_maxrss``: the largest of the child and the descendants it
waited for, e.g. DataLoader or pool workers). Linux carries the *parent's* RSS high-water mark into a child
across fork+exec, so the command is started from a fresh, small launcher process; otherwise a benchmark
that has just generated a 1 GB dataset would see its own peak in every measurement.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

_LAUNCHER = r"""
import json, os, subprocess, sys, time
quiet = sys.argv[1] == "1"
out = subprocess.DEVNULL if quiet else None
t0 = time.perf_counter()
p = subprocess.Popen(sys.argv[2:], stdout=out, stderr=out)
_, status, usage = os.wait4(p.pid, 0)
print(json.dumps([time.perf_counter() - t0, usage.ru_maxrss / 1024.0, os.waitstatus_to_exitcode(status)]))
"""


def measure(cmd: list[str], *, env: dict | None = None, quiet: bool = True) -> tuple[float, float, int]:
    """Return ``(wall_seconds, peak_rss_mb, exit_status)`` of ``cmd`` (Linux: ru_maxrss in KiB)."""
    res = subprocess.run([sys.executable, "-c", _LAUNCHER, "1" if quiet else "0", *cmd], env=env,
                         stdout=subprocess.PIPE, text=True, check=True)
    wall, rss, code = json.loads(res.stdout.strip().splitlines()[-1])
    return wall, rss, code


def lrtool(*args: str) -> list[str]:
    """The command line running lrtool with this interpreter."""
    return [sys.executable, "-m", "lerobot_tools", *args]


def median_ms(fn, repeat: int) -> float:
    """Median wall time of ``fn()`` over ``repeat`` calls after one warm-up call (page cache, lazy imports), in ms."""
    import statistics
    import time

    fn()
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times) * 1000


_USAGE_LAUNCHER = r"""
import json, os, subprocess, sys, time
t0 = time.perf_counter()
p = subprocess.Popen(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
_, status, usage = os.wait4(p.pid, 0)
print(json.dumps({"wall": time.perf_counter() - t0, "cpu": usage.ru_utime + usage.ru_stime,
                  "rss": usage.ru_maxrss / 1024.0, "exit": os.waitstatus_to_exitcode(status)}))
"""


def measure_usage(cmd: list[str], *, env: dict | None = None, cwd: str | None = None) -> dict:
    """Run ``cmd`` (output discarded) from a fresh launcher in ``cwd``; return ``wall`` and ``cpu`` seconds (user +
    sys of the child and the descendants it waited for), ``rss`` (peak, MB) and ``exit`` (status), from
    ``os.wait4`` rusage. (``python -m``/``-c`` put the working folder first on ``sys.path``: run a command that
    must import a package from ``PYTHONPATH`` from a folder that holds no such package.)"""
    res = subprocess.run([sys.executable, "-c", _USAGE_LAUNCHER, *cmd], env=env, cwd=cwd, stdout=subprocess.PIPE,
                         text=True, check=True)
    return json.loads(res.stdout.strip().splitlines()[-1])


def compile_tree(tree) -> None:
    """Byte-compile ``tree``'s package, as ``pip install`` does for an installed package (and did for robovet's):
    with ``PYTHONDONTWRITEBYTECODE`` set, a source tree on ``PYTHONPATH`` would be compiled again in every run
    (about 0.15 s of lrtool's validate)."""
    import compileall

    compileall.compile_dir(os.path.join(str(tree), "lerobot_tools"), quiet=1)
