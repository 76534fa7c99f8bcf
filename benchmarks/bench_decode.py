"""Benchmark for ``lrtool diagnose-decode``: header probe cost, CPU decode frames/s by codec, mixture probing.

Prints

1. per clip and overall, the median per-file header probe time (``probe_video``: sniff + MP4 box walk + PyAV
   header, no decode) — target: median under 10 ms per file;
2. CPU decode frames/s by codec, one core, RGB output, for torchcodec and PyAV: random access (the
   diagnose-decode decode test: K seeded random frames, one decoder, ``get_frame_at`` per frame) and
   sequential (every frame in order);
3. phase-1 probe throughput (every referenced file checked, first header per video feature) over a synthetic
   mixture of N datasets (one v3.0 dataset with 2 cameras copied N times), with ``--jobs 1`` and ``--jobs 2``.

Clips are ``testsrc2`` encoded by the system ffmpeg (``tests/videoclips.py``), keyframe interval 30.

Usage: python benchmarks/bench_decode.py [--seconds 5] [--size 640x480] [--repeat 9] [--frames 32]
                                         [--datasets 400] [--mixture-runs 3] [--keep DIR]
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
import videoclips  # noqa: E402  (the tests' clip encoder: system ffmpeg + testsrc2)
sys.path.insert(0, str(Path(__file__).resolve().parent))
from _measure import median_ms  # noqa: E402

from lerobot_tools.video.probe import probe_video  # noqa: E402

CLIPS = {
    "h264_420p8": dict(codec="libx264", pix_fmt="yuv420p", preset="veryfast"),
    "h264_444p8": dict(codec="libx264", pix_fmt="yuv444p", preset="veryfast"),
    "hevc_420p8": dict(codec="libx265", pix_fmt="yuv420p", preset="veryfast"),
    "hevc_420p10": dict(codec="libx265", pix_fmt="yuv420p10le", preset="veryfast"),
    "av1_420p8": dict(codec="libsvtav1", pix_fmt="yuv420p"),
    "mpeg4_420p8": dict(codec="mpeg4", pix_fmt="yuv420p"),
}



def seq_fps_pyav(path: Path) -> float:
    import av

    with av.open(str(path)) as c:
        s = c.streams.video[0]
        s.codec_context.thread_count = 1
        t0 = time.perf_counter()
        n = sum(1 for f in c.decode(s) if f.to_ndarray(format="rgb24") is not None)
        return n / (time.perf_counter() - t0)


def seq_fps_torchcodec(path: Path, n: int) -> float:
    from torchcodec.decoders import VideoDecoder

    dec = VideoDecoder(str(path), seek_mode="approximate", num_ffmpeg_threads=1)
    t0 = time.perf_counter()
    for i in range(n):
        dec.get_frame_at(i)
    return n / (time.perf_counter() - t0)


def bench_clips(args, folder: Path) -> None:
    from lerobot_tools.video.decode import decode_pyav, decode_torchcodec, pick_frames

    w, h = args.size.split("x")
    nframes = args.seconds * args.fps
    print(f"clips: {args.size}, {nframes} frames at {args.fps} fps, GOP 30 (testsrc2); repeat {args.repeat}\n")
    print(f"{'clip':<14} {'MB':>5} {'probe ms':>9} | {'random fps TC':>13} {'random fps PyAV':>15} | "
          f"{'seq fps TC':>10} {'seq fps PyAV':>12}")
    all_probe = []
    for name, kw in CLIPS.items():
        if not videoclips.has_encoder(kw["codec"]):
            print(f"{name:<14} skipped: ffmpeg lacks {kw['codec']}")
            continue
        path = folder / f"{name}.mp4"
        if not path.exists():
            videoclips.encode(path, size=f"{w}x{h}", frames=nframes, fps=args.fps, gop=30, **kw)
        probe = probe_video(path)
        assert probe.ok, probe.problem
        pm = median_ms(lambda: probe_video(path), args.repeat)
        all_probe.append(pm)
        idx = pick_frames(nframes, args.frames, seed=0)
        tc = min((decode_torchcodec(str(path), idx) for _ in range(3)), key=lambda r: r.decode_ms or 1e9)
        pa = min((decode_pyav(str(path), idx) for _ in range(3)), key=lambda r: r.decode_ms or 1e9)
        stc = max(seq_fps_torchcodec(path, nframes) for _ in range(2))
        spa = max(seq_fps_pyav(path) for _ in range(2))
        print(f"{name:<14} {path.stat().st_size / 1e6:>5.2f} {pm:>9.2f} | {tc.fps or 0:>13.0f} {pa.fps or 0:>15.0f} | "
              f"{stc:>10.0f} {spa:>12.0f}")
    if all_probe:
        print(f"\nmedian header probe over {len(all_probe)} clips: {statistics.median(all_probe):.2f} ms per file "
              f"(target < 10 ms)")
    print(f"random fps = {args.frames} seeded random frames in one open decoder (the diagnose-decode decode test); "
          "seq fps = every frame in order; 1 thread, RGB output")


def bench_mixture(args, folder: Path) -> None:
    from lerobot_tools.dataset.targets import resolve_targets
    from lerobot_tools.diagnose import probe_targets
    from lerobot_tools.testing.synth import SynthSpec, build_dataset

    base = folder / "mixture"
    if base.exists():
        shutil.rmtree(base)
    base.mkdir(parents=True)
    one = build_dataset(base / "ds_0000", SynthSpec(version="v3.0", episode_lengths=(10,) * 6, video_codec="h264",
                                                    video_keys=("observation.images.front", "observation.images.wrist"),
                                                    video_size=(64, 64), episodes_per_file=2))
    for i in range(1, args.datasets):
        shutil.copytree(one, base / f"ds_{i:04d}")
    mix = base / "mixture.txt"
    mix.write_text("".join(f"ds_{i:04d}\n" for i in range(args.datasets)))
    targets = resolve_targets([str(mix)])
    files = sum(1 for _ in base.glob("ds_*/videos/**/*.mp4"))
    print(f"\nmixture: {len(targets)} datasets, {files} video files (2 cameras x 3 files each), "
          "every file checked, first header per video feature")
    results: dict[int, list[float]] = {1: [], 2: []}
    probe_targets(targets[: min(8, len(targets))], jobs=1, progress=False)  # warm-up (imports, page cache)
    for _ in range(args.mixture_runs):  # alternate, so load from other processes hits both alike
        for jobs in (1, 2):
            t0 = time.perf_counter()
            out = probe_targets(targets, jobs=jobs, progress=False)
            results[jobs].append(time.perf_counter() - t0)
            assert len(out) == len(targets) and not any(d.has_errors for d in out)
    for jobs, times in results.items():
        dt = min(times)
        print(f"  --jobs {jobs}: {dt:6.2f} s best of {len(times)} (median {statistics.median(times):.2f} s)  "
              f"{len(targets) / dt:6.1f} datasets/s, {files / dt:7.1f} files/s, {dt / len(targets) * 1000:.1f} ms per dataset")
    print(f"  speed-up jobs 2 vs 1 (best runs): {min(results[1]) / min(results[2]):.2f}x")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=int, default=5)
    ap.add_argument("--fps", type=int, default=30)
    ap.add_argument("--size", default="640x480")
    ap.add_argument("--repeat", type=int, default=9, help="timed probe runs per clip (median reported)")
    ap.add_argument("--frames", type=int, default=32, help="random frames per decode test")
    ap.add_argument("--datasets", type=int, default=400, help="datasets in the synthetic mixture")
    ap.add_argument("--mixture-runs", type=int, default=3, help="timed runs per --jobs value (best reported)")
    ap.add_argument("--keep", type=Path, help="work in this folder and keep the clips")
    args = ap.parse_args()
    if videoclips.FFMPEG is None:
        print("ffmpeg not on PATH; cannot encode benchmark clips", file=sys.stderr)
        return 2
    if args.keep:
        args.keep.mkdir(parents=True, exist_ok=True)
        bench_clips(args, args.keep)
        bench_mixture(args, args.keep)
    else:
        with tempfile.TemporaryDirectory(prefix="lrtool-bench-decode-") as tmp:
            bench_clips(args, Path(tmp))
            bench_mixture(args, Path(tmp))
    return 0


if __name__ == "__main__":
    sys.exit(main())
