"""Benchmark: ``lrtool reshard`` throughput and peak RSS against the naive copy, on one ~1 GB data file.

Generates (``lerobot_tools.testing.synth``, no videos, a large extra float32 vector feature of standard-normal
noise, so the data is incompressible) a v3.0 dataset whose single data file holds 250 episodes x 2000
frames (~1.1 GB) in the defective layout, then measures in this one run, each in its own subprocess:

* the naive copy: ``pq.read_table`` + ``pq.write_table`` with the same codec (what a one-off script does;
  it needs the whole table in memory);
* ``reshard`` (the library call behind ``lrtool reshard``, on a fresh copy of the dataset): plan, stream,
  write one row group per episode with a page index, verify every column against the original, replace;
* ``reshard`` without the verification pass (``ReshardOptions(verify=False)``, not exposed in the CLI),
  to show what verification costs.

Printed: file facts; per measurement the seconds, MB/s (file bytes / seconds of work in the child,
imports excluded) and peak RSS of the child process (``os.wait4`` rusage, so interpreter and imports
included); the speed ratio reshard/naive (target >= 0.8) and reshard's peak RSS (target < 400 MB).
Linux carries a process's peak RSS across ``fork``/``exec``, so this parent imports nothing heavy and
generates and inspects the data in child processes too: a child's figure is then its own peak.

Layouts (``--layout``):

* ``single`` (default): ONE row group for the whole file (synth ``row_groups="file"``). Writing a true
  single row group needs the whole table in memory once, at generation time (~2.5 GB here).
* ``chunked``: a few huge row groups spanning many episodes (``--collapse-mb`` each, default 256 MB),
  written from a per-episode build with a streaming ParquetWriter (generation memory bounded by one
  row group). This is the defect as aggregation/conversion tools usually leave it.

Each variant runs ``--repeat`` times, interleaved (naive, reshard, reshard without verify, naive, ...), and
the best time of each is compared, so that load from other processes on a shared machine biases no variant.

Usage: python benchmarks/bench_reshard.py [--episodes 250] [--frames 2000] [--extra 512] [--repeat 2]
       [--layout single|chunked] [--collapse-mb 256] [--row-group-mb 32] [--workdir DIR] [--keep]
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

RSS_TARGET_MB = 400
SPEED_TARGET = 0.8

NAIVE = r"""
import json, sys, time
import pyarrow.parquet as pq
src, dst, codec = sys.argv[1:4]
t0 = time.perf_counter()
table = pq.read_table(src)
pq.write_table(table, dst, compression=codec)
print(json.dumps({"seconds": time.perf_counter() - t0, "rows": table.num_rows}))
"""

RESHARD = r"""
import json, sys, time
from lerobot_tools.reshard import ReshardOptions, reshard
root, mb, verify = sys.argv[1], float(sys.argv[2]), sys.argv[3] == "1"
t0 = time.perf_counter()
run = reshard([root], ReshardOptions(row_group_mb=mb, verify=verify), progress=False)
sec = time.perf_counter() - t0
f = run.files()[0]
print(json.dumps({"seconds": sec, "status": f.status, "error": f.error, "row_groups_after": f.row_groups_after,
                  "bytes_after": f.bytes_after, "notes": f.notes}))
"""

IMPORTS = r"""
import json
import pyarrow.parquet, tqdm, numpy
import lerobot_tools.reshard, lerobot_tools.dataset.model, lerobot_tools.dataset.targets
print(json.dumps({"seconds": 0.0}))
"""


GENERATE = r"""
import json, sys
sys.path.insert(0, sys.argv[1])
import bench_reshard as b
print(json.dumps(str(b.generate(b.Path(sys.argv[2]), b.parse(sys.argv[3:])))))
"""

DESCRIBE = r"""
import json, sys
sys.path.insert(0, sys.argv[1])
import bench_reshard as b
print(json.dumps(b.describe(b.Path(sys.argv[2]))))
"""

HERE = str(Path(__file__).resolve().parent)


def run_child(code: str, *args: str) -> tuple[dict, float]:
    """Run ``python -c code args`` and return (its JSON line, its peak RSS in MB from wait4)."""
    proc = subprocess.Popen([sys.executable, "-c", code, *args], stdout=subprocess.PIPE, text=True)
    out = proc.stdout.read()
    proc.stdout.close()
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise SystemExit(f"child failed with status {proc.returncode}: {out[-2000:]}")
    return json.loads(out.strip().splitlines()[-1]), usage.ru_maxrss / 1024  # Linux: KiB


def generate(root: Path, args) -> Path:
    from lerobot_tools.testing.synth import SynthSpec, build_dataset

    spec = SynthSpec(
        version="v3.0",
        episode_lengths=[args.frames] * args.episodes,
        extra_vector_features={"observation.extra": args.extra},
        video_keys=(),
        video_codec=None,
        episodes_per_file=args.episodes,
        row_groups="file" if args.layout == "single" else "episode",
    )
    build_dataset(root, spec)
    path = root / "data/chunk-000/file-000.parquet"
    if args.layout == "chunked":
        collapse(path, int(args.collapse_mb * 1024 * 1024))
    return path


def collapse(path: Path, group_bytes: int) -> None:
    """Rewrite ``path`` into row groups of about ``group_bytes`` each, spanning many episodes."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    tmp = path.with_name(path.name + ".collapse")
    with pq.ParquetFile(path) as pf, pq.ParquetWriter(tmp, pf.schema_arrow, compression="snappy") as w:
        pending, size = [], 0
        for i in range(pf.num_row_groups):
            t = pf.read_row_group(i)
            pending.append(t)
            size += t.nbytes
            if size >= group_bytes:
                t = pa.concat_tables(pending)
                w.write_table(t, row_group_size=t.num_rows)
                pending, size = [], 0
        if pending:
            t = pa.concat_tables(pending)
            w.write_table(t, row_group_size=t.num_rows)
    os.replace(tmp, path)


def describe(path: Path) -> dict:
    import pyarrow.parquet as pq

    md = pq.ParquetFile(path).metadata
    eps = set()
    spans = 0
    idx = md.schema.names.index("episode_index")
    for i in range(md.num_row_groups):
        st = md.row_group(i).column(idx).statistics
        spans += st.min != st.max
        eps.update(range(st.min, st.max + 1))
    return {
        "bytes": path.stat().st_size,
        "rows": md.num_rows,
        "row_groups": md.num_row_groups,
        "episodes": len(eps),
        "spanning_groups": spans,
        "uncompressed": sum(md.row_group(i).total_byte_size for i in range(md.num_row_groups)),
        "codec": md.row_group(0).column(0).compression,
    }


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--episodes", type=int, default=250)
    ap.add_argument("--frames", type=int, default=2000, help="frames per episode")
    ap.add_argument("--extra", type=int, default=512, help="length of the extra float32 vector feature")
    ap.add_argument("--layout", choices=["single", "chunked"], default="single")
    ap.add_argument("--collapse-mb", type=float, default=256.0)
    ap.add_argument("--row-group-mb", type=float, default=32.0)
    ap.add_argument("--repeat", type=int, default=2, help="interleaved repetitions; the best time of each is used")
    ap.add_argument("--workdir", type=Path, default=None, help="where to build (default: a temp dir)")
    ap.add_argument("--keep", action="store_true", help="keep the generated files")
    return ap.parse_args(argv)


def main() -> None:
    argv = sys.argv[1:]
    args = parse(argv)

    work = Path(tempfile.mkdtemp(prefix="bench-reshard-", dir=args.workdir))
    try:
        src_root = work / "source"
        t0 = time.perf_counter()
        path_s, gen_rss = run_child(GENERATE, HERE, str(src_root), *argv)
        path = Path(path_s)
        gen_s = time.perf_counter() - t0
        d, _ = run_child(DESCRIBE, HERE, str(path))
        mb = d["bytes"] / 1e6
        print(f"generated in {gen_s:.1f} s ({args.layout} layout, generator peak RSS {gen_rss:.0f} MB): "
              f"{path.relative_to(work)}")
        print(f"  {d['bytes'] / 1e9:.2f} GB on disk ({d['codec']}), {d['uncompressed'] / 1e9:.2f} GB uncompressed, "
              f"{d['rows']} rows, {d['episodes']} episodes, {d['row_groups']} row group(s), "
              f"{d['spanning_groups']} spanning several episodes")
        subprocess.run(["cat", str(path)], stdout=subprocess.DEVNULL, check=True)  # warm the page cache once

        codec = {"UNCOMPRESSED": "none", "LZ4_RAW": "lz4"}.get(d["codec"], d["codec"].lower())
        _, base_rss = run_child(IMPORTS)
        rel = path.relative_to(src_root)
        # label -> list of (seconds, peak RSS MB, child result, layout after); interleaved repeats so
        # that load from other processes hits every variant alike; the best time of each is compared
        runs: dict[str, list] = {"naive copy": [], "reshard": [], "reshard, no verify": []}
        for _ in range(args.repeat):
            naive, rss = run_child(NAIVE, str(path), str(work / "naive.parquet"), codec)
            (work / "naive.parquet").unlink()
            runs["naive copy"].append((naive["seconds"], rss, naive, None))
            for label, verify in (("reshard", "1"), ("reshard, no verify", "0")):
                copy = work / "copy"
                shutil.rmtree(copy, ignore_errors=True)
                shutil.copytree(src_root, copy)
                subprocess.run(["cat", str(copy / rel)], stdout=subprocess.DEVNULL, check=True)
                res, rss = run_child(RESHARD, str(copy), str(args.row_group_mb), verify)
                if res["status"] != "resharded":
                    raise SystemExit(f"{label}: {res['status']}: {res['error']}")
                after, _ = run_child(DESCRIBE, HERE, str(copy / rel))
                runs[label].append((res["seconds"], rss, res, after))
                shutil.rmtree(copy)

        print(f"\nbaseline: python + pyarrow + lerobot_tools imports: peak RSS {base_rss:.0f} MB")
        print(f"{'':22}{'best s':>9}{'MB/s':>9}{'peak RSS':>12}   all runs (s)")
        best = {}
        for label, rs in runs.items():
            sec = min(r[0] for r in rs)
            rss = max(r[1] for r in rs)
            best[label] = (sec, rss)
            tail = ""
            if rs[0][3] is not None:
                after, res = rs[0][3], rs[0][2]
                tail = (f"   -> {after['row_groups']} row groups, {after['spanning_groups']} spanning, "
                        f"{after['bytes'] / 1e9:.2f} GB{'; ' + '; '.join(res['notes']) if res['notes'] else ''}")
            elif label == "naive copy":
                tail = "   (read_table + write_table, same codec)"
            print(f"{label:22}{sec:9.2f}{mb / sec:9.0f}{rss:9.0f} MB   "
                  f"{', '.join(f'{r[0]:.2f}' for r in rs)}{tail}")
        ratio = best["naive copy"][0] / best["reshard"][0]
        rss = best["reshard"][1]
        print(f"\nspeed ratio reshard / naive copy (best of {args.repeat}): {ratio:.2f}x (target >= {SPEED_TARGET}x): "
              f"{'PASS' if ratio >= SPEED_TARGET else 'FAIL'}")
        print(f"reshard peak RSS: {rss:.0f} MB (target < {RSS_TARGET_MB} MB; naive copy {best['naive copy'][1]:.0f} MB): "
              f"{'PASS' if rss < RSS_TARGET_MB else 'FAIL'}")
        try:
            print(f"load average during the run: {os.getloadavg()[0]:.1f} (1 min) on {os.cpu_count()} CPU(s)")
        except OSError:
            pass
    finally:
        if args.keep:
            print(f"kept {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
