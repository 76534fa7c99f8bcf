"""Benchmark: header-only video probe cost vs CPU decode, per codec.

Encodes ~10 s 480p clips (H.264, HEVC 8/10-bit, AV1, MPEG-4, plus H.264 faststart/fragmented variants) with
the system ffmpeg into a temp dir, then prints per clip the median per-file time of

* sniff + MP4 box walk (pure Python, ``probe_video(pyav=False)`` layers),
* the full header probe (``probe_video(path)``: sniff + box walk + PyAV ``av.open``),
* PyAV sequential decode of every frame on the CPU, in frames/s (1 thread, and FFmpeg's automatic threading).

Target (lrtool docs): median full header probe < 10 ms per file.

Usage: python benchmarks/bench_probe.py [--seconds 10] [--size 640x480] [--repeat 15] [--keep DIR]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
import videoclips  # noqa: E402  (the tests' clip encoder: system ffmpeg + testsrc2)
sys.path.insert(0, str(Path(__file__).resolve().parent))
from _measure import median_ms  # noqa: E402

from lerobot_tools.sniff import sniff  # noqa: E402
from lerobot_tools.video.mp4 import walk_mp4  # noqa: E402
from lerobot_tools.video.probe import probe_video  # noqa: E402

# name -> encode() keyword arguments (size/frames/fps added from the command line)
BENCH_CLIPS = {
    "h264_420p8": dict(codec="libx264", gop=30, preset="veryfast"),
    "h264_420p8_faststart": dict(codec="libx264", gop=30, preset="veryfast", movflags="+faststart"),
    "h264_420p8_frag": dict(codec="libx264", gop=30, preset="veryfast", movflags="frag_keyframe+empty_moov"),
    "h264_444p8": dict(codec="libx264", gop=30, preset="veryfast", pix_fmt="yuv444p"),
    "hevc_420p8": dict(codec="libx265", gop=30, preset="veryfast"),
    "hevc_420p10": dict(codec="libx265", gop=30, preset="veryfast", pix_fmt="yuv420p10le"),
    "av1_420p8": dict(codec="libsvtav1", gop=30),
    "mpeg4_420p8": dict(codec="mpeg4", gop=30),
}



def decode_fps(path: Path, threads: str) -> float:
    import av

    with av.open(str(path)) as container:
        stream = container.streams.video[0]
        cc = stream.codec_context
        if threads == "1":
            cc.thread_count = 1
        else:
            cc.thread_type, cc.thread_count = "AUTO", 0
        t0 = time.perf_counter()
        n = sum(1 for _ in container.decode(stream))
        return n / (time.perf_counter() - t0)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=int, default=10)
    ap.add_argument("--fps", type=int, default=30)
    ap.add_argument("--size", default="640x480")
    ap.add_argument("--repeat", type=int, default=15, help="timed runs per clip (median reported)")
    ap.add_argument("--keep", type=Path, help="encode into this folder and keep the clips")
    args = ap.parse_args()
    if videoclips.FFMPEG is None:
        print("ffmpeg not on PATH; cannot encode benchmark clips", file=sys.stderr)
        return 2

    tmp = tempfile.TemporaryDirectory() if args.keep is None else None
    folder = Path(tmp.name) if tmp else args.keep
    folder.mkdir(parents=True, exist_ok=True)
    frames = args.seconds * args.fps
    clips: dict[str, Path] = {}
    t_enc = time.perf_counter()
    for name, kw in BENCH_CLIPS.items():
        if not videoclips.has_encoder(kw["codec"]):
            print(f"skip {name}: ffmpeg lacks {kw['codec']}")
            continue
        clips[name] = videoclips.encode(folder / f"{name}.mp4", size=args.size, frames=frames, fps=args.fps, **kw)
    print(f"encoded {len(clips)} clips of {frames} frames at {args.size} in {time.perf_counter() - t_enc:.1f} s "
          f"({os.cpu_count()} CPUs); medians of {args.repeat} warm runs")

    t0 = time.perf_counter()
    import av  # noqa: F401

    print(f"first `import av`: {(time.perf_counter() - t0) * 1000:.0f} ms (paid once per process)\n")

    header = (f"{'clip':<22} {'MB':>5} {'codec/profile':<32} {'frames':>6} {'gop':>4} "
              f"{'sniff+walk ms':>13} {'header probe ms':>15} {'decode fps 1T':>13} {'decode fps auto':>15}")
    print(header)
    print("-" * len(header))
    probe_times = []
    for name, path in clips.items():
        r = probe_video(path, gop="demux")
        walk = median_ms(lambda: (sniff(path), walk_mp4(path)), args.repeat)
        full = median_ms(lambda: probe_video(path), args.repeat)
        probe_times.append(full)
        fps1 = decode_fps(path, "1")
        fps_auto = decode_fps(path, "auto")
        desc = f"{r.codec} {r.profile} {r.pix_fmt}"
        print(f"{name:<22} {path.stat().st_size / 1e6:>5.2f} {desc:<32} {r.frame_count or 0:>6} {r.gop_max or 0:>4} "
              f"{walk:>13.3f} {full:>15.2f} {fps1:>13.0f} {fps_auto:>15.0f}")
    if probe_times:
        med = statistics.median(probe_times)
        verdict = "PASS" if med < 10 else "FAIL"
        print(f"\nmedian header probe over clips: {med:.2f} ms (max {max(probe_times):.2f} ms); target < 10 ms: {verdict}")
    if tmp:
        tmp.cleanup()
    return 0


if __name__ == "__main__":
    sys.exit(main())
