"""`lrtool reencode` against a plain `ffmpeg -c:v libx264` with the same settings, and the timestamp audit's cost.

Two parts, each printing figures measured in this one run:

* ``reencode``: a source like lerobot's default encode (ffmpeg ``testsrc2``, ``--size`` 640x480, 30 fps,
  ``--frames`` 600, libsvtav1 preset 12, ``g=2``, CRF 30, yuv420p) placed in a copy of a lerobot 0.4.4 v3.0
  dataset (``fixtures/real/av1-pandas3``). Measured, alternating (A B A B ..., ``--repeat`` rounds, medians, each a
  child process timed by ``_measure.measure_usage``: wall, CPU, peak RSS): ``ffmpeg -i SRC -map 0:v:0 -c:v
  libx264 -preset fast -crf 18 -g 2 -pix_fmt yuv420p -fps_mode passthrough -an -movflags +faststart OUT`` (lrtool's
  defaults for this source) and ``lrtool reencode DATASET --codec h264`` on a fresh copy (encode, the full
  verification, the swap, info.json). Target: lrtool's frames/s at least 0.9x ffmpeg's, verification included;
  peak RSS per worker printed. Then, in one process, the split of lrtool's time into encode and verification.
* ``audit``: the timestamp audit's cost per file in validate's default mode: the MP4 box walk alone (what
  validate did before), the box walk plus every frame's PTS in the probe's form (``timing.frame_times_dict``), and
  with the cause analysis a file off the grid gets (``frame_times`` + ``analyse``), on every video of the 1,000-episode v2.1 benchmark dataset (``_replicate.build``, as
  ``bench_speed.py`` builds it); target < 2 ms per file. Then ``validate`` on that dataset in one process with the
  seconds of each check family, and the audit's share: its family plus the PTS part of the probes.

Usage: python benchmarks/bench_reencode.py [--part reencode|audit|all] [--frames 600] [--size 640x480]
       [--repeat 3] [--episodes 1000] [--workdir DIR] [--keep]
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
sys.path.insert(0, str(ROOT))
from _measure import measure_usage  # noqa: E402

TARGET_RATIO = 0.9
AUDIT_BUDGET_MS = 2.0
VIDEO = "videos/observation.images.front/chunk-000/file-000.mp4"


def load() -> str:
    try:
        return f"load average {os.getloadavg()[0]:.1f} (1 min) on {os.cpu_count()} CPU(s)"
    except OSError:
        return ""


def med(rs: list[dict], key: str) -> float:
    return statistics.median(r[key] for r in rs)


# ---------------------------------------------------------------------------------------------- reencode
def make_source(path: Path, frames: int, size: str) -> None:
    env = dict(os.environ, SVT_LOG="1")  # SVT-AV1's banner off (errors only)
    subprocess.run(["ffmpeg", "-v", "error", "-y", "-f", "lavfi", "-i", f"testsrc2=s={size}:r=30", "-frames:v",
                    str(frames), "-c:v", "libsvtav1", "-preset", "12", "-g", "2", "-crf", "30", "-pix_fmt", "yuv420p",
                    "-movflags", "+faststart", str(path)], check=True, env=env)


def reencode_part(args, work: Path) -> None:
    from lerobot_tools.video.probe import probe_video

    src = work / "src.mp4"
    make_source(src, args.frames, args.size)
    template = work / "ds-template"
    shutil.copytree(ROOT / "fixtures" / "real" / "av1-pandas3", template)
    shutil.copy(src, template / VIDEO)
    frames = probe_video(src, pyav=False).frame_count
    ds = work / "ds"
    out = work / "ffmpeg-out.mp4"
    ffmpeg = ["ffmpeg", "-v", "error", "-y", "-i", str(src), "-map", "0:v:0", "-c:v", "libx264", "-preset", "fast",
              "-crf", "18", "-g", "2", "-pix_fmt", "yuv420p", "-fps_mode", "passthrough", "-an", "-movflags",
              "+faststart", str(out)]
    lrtool = [sys.executable, "-m", "lerobot_tools", "reencode", str(ds), "--codec", "h264", "--no-progress"]
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    runs: dict[str, list[dict]] = {"ffmpeg -c:v libx264": [], "lrtool reencode": []}
    print(f"reencode: {frames} frames {args.size} AV1 (libsvtav1 preset 12, g=2) -> H.264 (libx264 fast, CRF 18, g=2); "
          f"{load()}")
    for r in range(args.repeat):
        order = list(runs) if r % 2 == 0 else list(runs)[::-1]
        for label in order:
            if label == "lrtool reencode":
                shutil.rmtree(ds, ignore_errors=True)
                shutil.copytree(template, ds)
                m = measure_usage(lrtool, env=env, cwd=str(work))
                assert probe_video(ds / VIDEO).codec == "h264", "lrtool did not re-encode"
            else:
                m = measure_usage(ffmpeg, cwd=str(work))
            runs[label].append(m)
    print(f"  {'':24}{'wall s':>8}{'CPU s':>8}{'frames/s':>10}{'peak RSS':>11}   wall of each run (s)")
    fps = {}
    for label, rs in runs.items():
        fps[label] = frames / med(rs, "wall")
        print(f"  {label:24}{med(rs, 'wall'):8.2f}{med(rs, 'cpu'):8.2f}{fps[label]:10.0f}{med(rs, 'rss'):8.0f} MB   "
              + ", ".join(f"{r['wall']:.2f}" for r in rs))
    ratio = fps["lrtool reencode"] / fps["ffmpeg -c:v libx264"]
    cpu = med(runs["ffmpeg -c:v libx264"], "cpu") / med(runs["lrtool reencode"], "cpu")
    print(f"  lrtool / ffmpeg frames/s: {ratio:.2f}x by wall time (target >= {TARGET_RATIO}x, verification included): "
          f"{'met' if ratio >= TARGET_RATIO else 'NOT met'}; {cpu:.2f}x by CPU time (frames per CPU second, less "
          "sensitive to other load)")
    split(template / VIDEO, work, frames)


def split(src: Path, work: Path, frames: int) -> None:
    """Encode and verify once in this process: where lrtool's time goes."""
    from lerobot_tools.reencode.settings import choose_encoder, settings_for
    from lerobot_tools.reencode.transcode import encode_file, source_times, verify_file

    s = settings_for("h264", encoder=choose_encoder("h264", "cpu"), pix_fmt="yuv420p", gop=2)
    out = work / "split.mp4"
    t0 = time.perf_counter()
    times = source_times(src)
    enc = encode_file(src, out, s, count=times.count)
    t1 = time.perf_counter()
    v = verify_file(out, times, enc.samples)
    t2 = time.perf_counter()
    print(f"  in one process: encode {t1 - t0:.2f} s ({frames / (t1 - t0):.0f} frames/s), verification {t2 - t1:.2f} s "
          f"({(t2 - t1) / (t2 - t0):.0%} of encode + verify); lowest sampled PSNR {v.min_psnr:.1f} dB, every frame "
          f"time equal (largest difference {v.max_pts_diff:.1e} s)")


# ---------------------------------------------------------------------------------------------- audit
AUDIT = r"""
import json, statistics, sys, time
from pathlib import Path
from lerobot_tools.video.mp4 import walk_mp4
from lerobot_tools.video.timing import analyse, frame_times, frame_times_dict
from lerobot_tools.dataset.model import Dataset
ds = Dataset(sys.argv[1])
paths = [ds.path(vf.relpath) for vf in ds.video_files()]
def per_file(fn, repeat=5):
    fn()
    best = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        best.append(time.perf_counter() - t)
    return statistics.median(best) / len(paths) * 1000
walk = per_file(lambda: [walk_mp4(p) for p in paths])
probe = per_file(lambda: [frame_times_dict(walk_mp4(p)) for p in paths])
def off_grid():
    for p in paths:
        ft = frame_times(walk_mp4(p))
        ft.to_dict()
        analyse(ft, ds.fps, 1e-4)
full = per_file(off_grid)
print(json.dumps({"files": len(paths), "walk_ms": walk, "walk_and_pts_ms": probe, "full_ms": full}))
"""

FAMILIES = r"""
import json, sys, time
from lerobot_tools.checks import engine
from lerobot_tools.checks.context import ValidateOptions
from lerobot_tools.dataset.targets import resolve_targets
from lerobot_tools.video import probe as probe_mod
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
                key = f"{fn.__module__.rsplit('.', 1)[-1]}"
                times[key] = times.get(key, 0.0) + time.perf_counter() - t
        out.append((letter, timed))
    return out
engine._families = families
pts = [0.0]
real_apply = probe_mod._apply_times
def apply_times(*a, **k):
    t = time.perf_counter()
    try:
        return real_apply(*a, **k)
    finally:
        pts[0] += time.perf_counter() - t
probe_mod._apply_times = apply_times
target = resolve_targets([sys.argv[1]])[0]
engine.validate_target(target, ValidateOptions())
runs = []
for _ in range(3):
    times.clear()
    pts[0] = 0.0
    t = time.perf_counter()
    engine.validate_target(target, ValidateOptions())
    runs.append((time.perf_counter() - t, dict(times), pts[0]))
warm, fam, pts_s = sorted(runs, key=lambda r: r[0])[1]
print(json.dumps({"warm": warm, "families": fam, "pts": pts_s}))
"""


def audit_part(args, work: Path) -> None:
    import _replicate

    root = _replicate.build("v2.1", work, args.episodes)
    env = dict(os.environ, PYTHONPATH=str(ROOT))

    def child(code: str) -> dict:
        out = subprocess.run([sys.executable, "-c", code, str(root)], env=env, cwd=str(work), stdout=subprocess.PIPE,
                             text=True, check=True)
        return json.loads(out.stdout.strip().splitlines()[-1])

    a = child(AUDIT)
    print(f"audit: {a['files']} video files of the {args.episodes}-episode v2.1 benchmark dataset; {load()}")
    extra = a["walk_and_pts_ms"] - a["walk_ms"]
    print(f"  per file: box walk {a['walk_ms']:.3f} ms; box walk + every frame's PTS as the probe keeps it "
          f"{a['walk_and_pts_ms']:.3f} ms (the audit adds {extra:.3f} ms; target < {AUDIT_BUDGET_MS} ms per file: "
          f"{'met' if a['walk_and_pts_ms'] < AUDIT_BUDGET_MS else 'NOT met'}); with the cause analysis a file off "
          f"the grid gets {a['full_ms']:.3f} ms")
    f = child(FAMILIES)
    audit_s = f["families"].get("timestamps", 0.0) + f["pts"]
    print(f"  validate (default mode, one process, warm): {f['warm']:.2f} s; timestamp audit {audit_s * 1000:.0f} ms "
          f"= {audit_s / f['warm']:.1%} (its family {f['families'].get('timestamps', 0.0) * 1000:.0f} ms, the PTS in "
          f"the probes {f['pts'] * 1000:.0f} ms)")
    top = sorted(f["families"].items(), key=lambda kv: -kv[1])[:6]
    print("  families: " + ", ".join(f"{k} {v * 1000:.0f} ms" for k, v in top))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--part", choices=["reencode", "audit", "all"], default="all")
    ap.add_argument("--frames", type=int, default=600)
    ap.add_argument("--size", default="640x480")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--episodes", type=int, default=1000)
    ap.add_argument("--workdir", type=Path, default=None)
    ap.add_argument("--keep", action="store_true")
    args = ap.parse_args()
    work = args.workdir or Path(tempfile.mkdtemp(prefix="lrtool-bench-reencode-"))
    work.mkdir(parents=True, exist_ok=True)
    try:
        if args.part in ("reencode", "all"):
            reencode_part(args, work)
        if args.part in ("audit", "all"):
            audit_part(args, work)
    finally:
        if not args.keep and args.workdir is None:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
