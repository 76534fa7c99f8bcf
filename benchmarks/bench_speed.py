"""Speed against the anchors: `lrtool validate` vs robovet `doctor`, `lrtool reshard` vs a naive copy.

Two parts, each printing figures measured in this one run and the ratio against its anchor:

* ``validate``: a real-form dataset replicated to ``--episodes`` episodes (default v2.1, 1,000 episodes: 1,000
  data files and 1,000 videos; ``--layout v3.0`` replicates lerobot's own v3.0 output instead; see
  ``_replicate.py``). Measured, alternating (A B A B ..., ``--repeat`` rounds, medians): ``lrtool validate``
  (default mode, ``--jobs 1`` and ``--jobs 2``) and ``robovet doctor`` (PyPI ``robovet`` with its ``video``
  extra, installed in a side venv by ``benchmarks/setup_robovet.sh``; never an lrtool dependency). Then, in
  one process of this tree: seconds per check family, and the footer pass per file against the floor
  (``pyarrow.parquet.read_metadata`` on every data file, warm).
  Targets: wall time at least 10x faster than robovet, with less peak RSS.
* ``reshard``: one ~1 GB data file that is a single row group (``bench_reshard.generate``). Measured,
  alternating: the naive copy (``pq.read_table`` + ``pq.write_table``, same codec), ``reshard`` with its full
  verification, and ``reshard`` without the verification (``ReshardOptions(verify=False)``, library only).
  Targets: at least 1.5x the naive copy's speed, peak RSS under 400 MB, verification at most 25 % of the
  time (``1 - no-verify / verify``).

Every measurement is a child process timed from a small launcher (``_measure.measure_usage``): wall seconds,
CPU seconds (user + sys, less sensitive to other load than wall time) and peak RSS (``os.wait4`` rusage).
``--before DIR`` also measures lrtool from another checkout (e.g. ``git worktree add /tmp/before <commit>``)
in the same alternation, so before and after are compared on the same machine state.

Usage: python benchmarks/bench_speed.py [--part validate|reshard|all] [--layout v2.1|v3.0] [--episodes 1000]
       [--repeat 5] [--robovet PATH] [--before DIR] [--workdir DIR] [--keep]
       [--reshard-episodes 250 --frames 2000 --extra 512] [--reshard-repeat 3]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))
from _measure import compile_tree, measure_usage  # noqa: E402

VALIDATE_TARGET = 10.0
RESHARD_TARGET = 1.5
RESHARD_RSS_MB = 400
VERIFY_SHARE = 0.25

# ---------------------------------------------------------------------------------------------- children

BUILD = r"""
import sys
sys.path.insert(0, sys.argv[1])
import _replicate
from pathlib import Path
print(_replicate.build(sys.argv[2], Path(sys.argv[3]), int(sys.argv[4])))
"""

# Seconds per check family and the footer pass, in one process of the tree on PYTHONPATH.
FAMILIES = r"""
import json, statistics, sys, time
t0 = time.perf_counter()
from lerobot_tools.checks import engine
from lerobot_tools.checks.context import ValidateOptions
from lerobot_tools.dataset.targets import resolve_targets
imports = time.perf_counter() - t0
orig = engine._families
times = {}
def families():
    out = []
    for letter, fn in orig():
        def timed(ctx, fn=fn, letter=letter):
            t = time.perf_counter()
            try:
                return fn(ctx)
            finally:
                key = f"{letter} {fn.__module__.rsplit('.', 1)[-1]}.{fn.__name__}"
                times[key] = times.get(key, 0.0) + time.perf_counter() - t
        out.append((letter, timed))
    return out
engine._families = families
target = resolve_targets([sys.argv[1]])[0]
t = time.perf_counter()
engine.validate_target(target, ValidateOptions())
first = time.perf_counter() - t
runs = []
for _ in range(3):
    times.clear()
    t = time.perf_counter()
    engine.validate_target(target, ValidateOptions())
    runs.append((time.perf_counter() - t, dict(times)))
warm, fam = sorted(runs, key=lambda r: r[0])[1]
import pyarrow.parquet as pq
from lerobot_tools.dataset.model import Dataset
ds = Dataset(target.root)
paths = [ds.path(df.relpath) for df in ds.data_files()]
def per_file(fn):
    best = []
    for _ in range(5):
        t = time.perf_counter()
        fn()
        best.append(time.perf_counter() - t)
    return statistics.median(best) / len(paths) * 1000
floor = per_file(lambda: [pq.read_metadata(p) for p in paths])
from lerobot_tools.checks.context import CheckContext
from lerobot_tools.checks import files
try:
    from lerobot_tools.checks.observer import FileObserver
    extra = (FileObserver(),)
except ImportError:  # an older tree: the context takes no observer
    extra = ()
def footer_pass():
    ctx = CheckContext(target, ValidateOptions(), *extra)
    ctx.dataset = ds
    ctx.episodes_ok = True
    files.run(ctx)
footer = per_file(footer_pass)
import lerobot_tools
print(json.dumps({"package": lerobot_tools.__file__, "imports": imports, "first": first, "warm": warm, "families": fam, "floor_ms": floor,
                  "footer_ms": footer, "files": len(paths)}))
"""

NAIVE = r"""
import json, sys, time
import pyarrow.parquet as pq
src, dst, codec = sys.argv[1:4]
t0 = time.perf_counter()
table = pq.read_table(src)
pq.write_table(table, dst, compression=codec)
print(json.dumps({"seconds": time.perf_counter() - t0}))
"""

RESHARD = r"""
import json, sys, time
from lerobot_tools.reshard import ReshardOptions, reshard
root, verify = sys.argv[1], sys.argv[2] == "1"
t0 = time.perf_counter()
run = reshard([root], ReshardOptions(verify=verify), progress=False)
f = run.files()[0]
print(json.dumps({"seconds": time.perf_counter() - t0, "status": f.status, "error": f.error,
                  "row_groups_after": f.row_groups_after}))
"""


def env_for(tree: Path) -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(tree)
    env.pop("PYTHONSTARTUP", None)
    return env


#: Children run here: ``python -c``/``-m`` put the working folder first on sys.path, so it must hold no
#: ``lerobot_tools`` (else every tree would import the package found there). Set by main() to the work folder.
CWD = None


def child_json(code: str, *args: str, env: dict | None = None) -> dict:
    out = subprocess.run([sys.executable, "-c", code, *args], env=env, cwd=CWD, stdout=subprocess.PIPE, text=True)
    if out.returncode != 0:
        raise SystemExit(f"child failed ({out.returncode}): {out.stdout[-2000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def alternate(variants: list[tuple[str, list[str], dict | None]], repeat: int, before_each=None) -> dict:
    """Run every variant ``repeat`` times, interleaved (A B C A B C ...); return label -> list of measurements."""
    runs: dict[str, list[dict]] = {label: [] for label, _, _ in variants}
    for r in range(repeat):
        order = variants if r % 2 == 0 else variants[::-1]  # no variant always runs right after another
        for label, cmd, env in order:
            if before_each is not None:
                before_each(label)
            runs[label].append(measure_usage(cmd, env=env, cwd=CWD))
    return runs


def med(rs: list[dict], key: str) -> float:
    return statistics.median(r[key] for r in rs)


def table(runs: dict) -> None:
    print(f"  {'':34}{'wall s':>8}{'CPU s':>8}{'peak RSS':>10}  {'exit':>4}   wall of each run (s)")
    for label, rs in runs.items():
        codes = sorted({r['exit'] for r in rs})
        print(f"  {label:34}{med(rs, 'wall'):8.2f}{med(rs, 'cpu'):8.2f}{med(rs, 'rss'):7.0f} MB  "
              f"{','.join(map(str, codes)):>4}   " + ", ".join(f"{r['wall']:.2f}" for r in rs))


def load() -> str:
    try:
        return f"load average {os.getloadavg()[0]:.1f} (1 min) on {os.cpu_count()} CPU(s)"
    except OSError:
        return ""


# ---------------------------------------------------------------------------------------------- validate

def validate_part(args, work: Path) -> None:
    robovet = args.robovet or ROOT / ".venv-robovet/bin/robovet"
    if not Path(robovet).exists():
        raise SystemExit(f"robovet not found at {robovet}: run benchmarks/setup_robovet.sh (or pass --robovet PATH)")
    t0 = time.perf_counter()
    built = subprocess.run([sys.executable, "-c", BUILD, str(HERE), args.layout, str(work), str(args.episodes)],
                           env=env_for(ROOT), cwd=CWD, stdout=subprocess.PIPE, text=True, check=True)
    ds = Path(built.stdout.strip().splitlines()[-1])
    n_data = sum(1 for _ in ds.glob("data/**/*.parquet"))
    n_vid = sum(1 for _ in ds.glob("videos/**/*.mp4"))
    size = sum(p.stat().st_size for p in ds.rglob("*") if p.is_file())
    print(f"validate: {args.layout} dataset, {args.episodes} episodes: {n_data} data files, {n_vid} videos, "
          f"{size / 1e6:.0f} MB ({ds}; ready in {time.perf_counter() - t0:.1f} s)")
    subprocess.run(["cat", *map(str, ds.rglob("*.parquet"))], stdout=subprocess.DEVNULL)  # warm the page cache

    def lrtool(tree: Path, *extra: str) -> tuple[list[str], dict]:
        return [sys.executable, "-m", "lerobot_tools", "validate", str(ds), "--no-progress", *extra], env_for(tree)

    variants = []
    for label, tree in [("lrtool", ROOT)] + ([("lrtool (before)", args.before)] if args.before else []):
        compile_tree(tree)
        cmd, env = lrtool(tree)
        variants.append((f"{label} --jobs 1", cmd, env))
        cmd, env = lrtool(tree, "--jobs", "2")
        variants.append((f"{label} --jobs 2", cmd, env))
    variants.append(("robovet doctor", [str(robovet), "doctor", str(ds)], None))
    runs = alternate(variants, args.repeat)
    print(f"\n{args.repeat} alternating rounds, medians ({load()}):")
    table(runs)
    rv = runs["robovet doctor"]
    print()
    for label in [v[0] for v in variants if v[0].startswith("lrtool")]:
        rs = runs[label]
        ratio = med(rv, "wall") / med(rs, "wall")
        print(f"  {label:30} vs robovet: {ratio:5.1f}x wall, {med(rv, 'cpu') / med(rs, 'cpu'):5.1f}x CPU, "
              f"peak RSS {med(rs, 'rss'):.0f} vs {med(rv, 'rss'):.0f} MB"
              + ("" if "before" in label else
                 f"   target >= {VALIDATE_TARGET:g}x wall with less RSS: "
                 f"{'PASS' if ratio >= VALIDATE_TARGET and med(rs, 'rss') < med(rv, 'rss') else 'FAIL'}"))
    for label, tree in [("this tree", ROOT)] + ([("before", args.before)] if args.before else []):
        f = child_json(FAMILIES, str(ds), env=env_for(tree))
        if not f["package"].startswith(str(tree)):
            raise SystemExit(f"{label}: imported {f['package']}, not the tree's package")
        print(f"\n  in one process ({label}): imports {f['imports']:.3f} s, validate_target first {f['first']:.3f} s, "
              f"warm {f['warm']:.3f} s; per family (warm):")
        print("    " + ", ".join(f"{k} {v * 1000:.0f} ms" for k, v in f["families"].items() if v >= 0.0005))
        print(f"    data-file pass (files family: sniff + footer of {f['files']} files): {f['footer_ms']:.3f} ms/file; "
              f"floor pq.read_metadata: {f['floor_ms']:.3f} ms/file ({f['footer_ms'] / f['floor_ms']:.1f}x)")


# ---------------------------------------------------------------------------------------------- reshard

def reshard_part(args, work: Path) -> None:
    src = work / f"reshard-{args.reshard_episodes}x{args.frames}x{args.extra}"
    rel = Path("data/chunk-000/file-000.parquet")
    if not (src / rel).is_file():
        shutil.rmtree(src, ignore_errors=True)
        gen = ["--episodes", str(args.reshard_episodes), "--frames", str(args.frames), "--extra", str(args.extra)]
        code = ("import sys; sys.path.insert(0, sys.argv[1]); import bench_reshard as b; "
                "b.generate(b.Path(sys.argv[2]), b.parse(sys.argv[3:]))")
        subprocess.run([sys.executable, "-c", code, str(HERE), str(src), *gen], env=env_for(ROOT), cwd=CWD, check=True)
    d = child_json("import sys, json; sys.path.insert(0, sys.argv[1]); import bench_reshard as b; "
                   "print(json.dumps(b.describe(b.Path(sys.argv[2]))))", str(HERE), str(src / rel), env=env_for(ROOT))
    print(f"\nreshard: {d['bytes'] / 1e9:.2f} GB data file ({d['codec']}), {d['rows']} rows, {d['episodes']} episodes, "
          f"{d['row_groups']} row group(s)")
    codec = {"UNCOMPRESSED": "none", "LZ4_RAW": "lz4"}.get(d["codec"], d["codec"].lower())
    copy = work / "reshard-copy"

    def fresh(label: str) -> None:
        shutil.rmtree(copy, ignore_errors=True)
        (work / "naive.parquet").unlink(missing_ok=True)
        if label.startswith("reshard"):
            shutil.copytree(src, copy)
            subprocess.run(["cat", str(copy / rel)], stdout=subprocess.DEVNULL, check=True)
        else:
            subprocess.run(["cat", str(src / rel)], stdout=subprocess.DEVNULL, check=True)
        os.sync()

    variants = [("naive copy", [sys.executable, "-c", NAIVE, str(src / rel), str(work / "naive.parquet"), codec],
                 env_for(ROOT))]
    for label, tree in [("reshard", ROOT)] + ([("reshard (before)", args.before)] if args.before else []):
        variants.append((label, [sys.executable, "-c", RESHARD, str(copy), "1"], env_for(tree)))
        variants.append((f"{label} no verify", [sys.executable, "-c", RESHARD, str(copy), "0"], env_for(tree)))
    runs = alternate(variants, args.reshard_repeat, before_each=fresh)
    fresh("")
    print(f"{args.reshard_repeat} alternating rounds, medians ({load()}):")
    table(runs)
    naive = runs["naive copy"]
    print()
    for label in [v[0] for v in variants if v[0].startswith("reshard") and not v[0].endswith("no verify")]:
        rs, nv = runs[label], runs[f"{label} no verify"]
        ratio = med(naive, "wall") / med(rs, "wall")
        share = 1 - med(nv, "wall") / med(rs, "wall")
        share_cpu = 1 - med(nv, "cpu") / med(rs, "cpu")
        rss = max(r["rss"] for r in rs)
        line = (f"  {label:18} vs naive copy: {ratio:4.2f}x wall, {med(naive, 'cpu') / med(rs, 'cpu'):4.2f}x CPU; "
                f"verification {share:.0%} of the wall time ({share_cpu:.0%} of the CPU time); "
                f"peak RSS {rss:.0f} MB (naive {med(naive, 'rss'):.0f} MB)")
        if "before" not in label:
            ok = ratio >= RESHARD_TARGET and rss < RESHARD_RSS_MB and share <= VERIFY_SHARE
            line += (f"\n  targets: >= {RESHARD_TARGET:g}x, < {RESHARD_RSS_MB} MB, verification <= "
                     f"{VERIFY_SHARE:.0%}: {'PASS' if ok else 'FAIL'}")
        print(line)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--part", choices=["validate", "reshard", "all"], default="all")
    ap.add_argument("--layout", choices=["v2.1", "v3.0"], default="v2.1")
    ap.add_argument("--episodes", type=int, default=1000)
    ap.add_argument("--repeat", type=int, default=5, help="alternating rounds for validate")
    ap.add_argument("--robovet", type=Path, default=None, help="robovet executable (default .venv-robovet/bin/robovet)")
    ap.add_argument("--before", type=Path, default=None, help="another lrtool checkout to measure alongside")
    ap.add_argument("--workdir", type=Path, default=None, help="where datasets are built and kept (default: temp)")
    ap.add_argument("--keep", action="store_true", help="keep the temp workdir")
    ap.add_argument("--reshard-episodes", type=int, default=250)
    ap.add_argument("--frames", type=int, default=2000)
    ap.add_argument("--extra", type=int, default=512)
    ap.add_argument("--reshard-repeat", type=int, default=3, help="alternating rounds for reshard")
    args = ap.parse_args()
    if args.before is not None:
        args.before = args.before.resolve()
        if not (args.before / "lerobot_tools").is_dir():
            raise SystemExit(f"--before {args.before}: no lerobot_tools package there")
    work = args.workdir or Path(tempfile.mkdtemp(prefix="lrtool-bench-speed-"))
    work.mkdir(parents=True, exist_ok=True)
    global CWD
    CWD = str(work)
    try:
        if args.part in ("validate", "all"):
            validate_part(args, work)
        if args.part in ("reshard", "all"):
            reshard_part(args, work)
    finally:
        if args.workdir is None and not args.keep:
            shutil.rmtree(work, ignore_errors=True)
        elif args.workdir is None:
            print(f"kept {work}")


if __name__ == "__main__":
    main()
