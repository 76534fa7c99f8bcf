"""Benchmark the bundled loaders: memory vs data size, decode throughput, sampler scale.

Prints (nothing is asserted; targets are printed next to the figures):

1. **FrameDataset peak RSS vs data size.** Two synthetic v3.0 datasets without video whose parquet is
   ``--small-gb`` and ``--big-gb`` (default 0.2 and 2 GB: a 1024-float noise vector per frame,
   1000-frame episodes, 25 episodes per file). Each measurement runs in a fresh process: [1] the first
   construction (datasets converts the parquet into its Arrow cache), [2] construction on that cache
   and ``--samples`` random samples read in batches of 64 with the default ``max_mapped_mb=128``,
   [3] the same with ``max_mapped_mb=None``, [4] the same reads through a naive loader,
   ``pyarrow.dataset.dataset(files).to_table()`` + ``take`` (the whole table in anonymous memory).
   Peak RSS (``VmHWM``), peak anonymous RSS (``RssAnon`` sampled every 10 ms) and the file-backed
   RSS at the end are printed; target for [2]: big - small < 200 MB.
2. **Decoded frames/s of the map-style loader** on a v3.0 video dataset (``--video-size``, h264 GOP 2 as
   lerobot encodes; 24 episodes x 100 frames, 8 episodes per mp4), random order through a DataLoader
   with 0 and 2 workers, and the stream loader (sequential within episodes) for comparison.
3. **EpisodeAwareSampler at 10^5 episodes and 10^9 frames**: construction time, memory (tracemalloc peak
   and the arrays it keeps), time to resume mid-epoch (``load_state_dict`` + first sample; median of 50),
   and iteration throughput. Targets: < 1 s, < 50 MB, < 10 ms. The stream's resume (O(position) plan
   replay) is printed at 10^7 frames for honesty.

4. **Construction and throughput, lrtool vs upstream ``LeRobotDataset``**, on the same v3.0 datasets (h264
   video, AV1 video, images stored in the parquet), each measurement in a fresh process: construction on a
   cold cache (the parquet is converted) and on a warm one (the training case: every rank and restart),
   then random samples through a DataLoader (batch 8, 2 workers): first-batch latency and samples/s.
   Both loaders are timed after their imports (torch, pandas, av, torchcodec for lrtool, which imports
   ``datasets`` only to build a cold cache; ``lerobot`` for upstream, which imports torch, pandas and
   datasets itself and torchcodec on the first decode); import times are printed separately. Upstream
   runs from the interpreter given by ``--upstream-python`` (default ``$LRTOOL_UPSTREAM_PYTHON``, else
   ``.venv-lerobot/bin/python`` of this checkout, made by ``scripts/install.sh``; lerobot 0.4.4, imported
   through ``scripts/upstream_env.py``); when it is missing its rows are skipped with the reason printed.
   Targets: construction (warm) <= upstream, samples/s >= 1.1x upstream.
5. **MixtureDataset over ``--mixture-datasets`` (default 100) small synthetic datasets** (v3.0 / v2.1
   alternating, one 32x32 h264 camera, copies of two templates), weights 1..4: construction cold and warm
   (fresh processes), first-batch latency and samples/s through a DataLoader (batch 8, 2 workers,
   weighted EpisodeAwareSampler), peak RSS of the process tree, and the RSS growth per dataset with every
   dataset opened in one process (the worst case of a worker that reads them all). Targets: warm
   construction < 10 s; growth < 2 MB per dataset.

Usage: python benchmarks/bench_loaders.py [--workdir DIR] [--small-gb 0.2] [--big-gb 2] [--samples 20000]
       [--skip-rss] [--skip-video] [--skip-sampler] [--skip-construction] [--skip-mixture]
       [--mixture-datasets 100] [--upstream-python PY] [--keep]
Needs torch, torchcodec, datasets; writes about 2 x (small + big) GB under --workdir (default $TMPDIR),
checks the free space first, and deletes everything unless --keep.
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
import threading
import time
from pathlib import Path

VECTOR = 1024  # floats per frame in the noise feature (4 KiB / row)
EP_LEN = 1000
EPS_PER_FILE = 25


# ---------------------------------------------------------------------- memory sampling (child side)
def _status_kb(field: str) -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return 0


class _AnonPeak:
    def __init__(self):
        self.peak = 0
        self._stop = threading.Event()
        self._t = threading.Thread(target=self._run, daemon=True)

    def _run(self):
        while not self._stop.is_set():
            self.peak = max(self.peak, _status_kb("RssAnon"))
            self._stop.wait(0.01)

    def __enter__(self):
        self._t.start()
        return self

    def __exit__(self, *a):
        self._stop.set()
        self._t.join()
        self.peak = max(self.peak, _status_kb("RssAnon"))


def child_rss(loader: str, root: str, cache: str, samples: int) -> dict:
    """Runs in a fresh process: build the loader, read ``samples`` random samples, report memory."""
    import numpy as np

    if loader.startswith("frame"):
        import torch  # noqa: F401  (imported before the baseline, like any training script)
        import datasets  # noqa: F401
    base_kb = _status_kb("VmRSS")
    rng = np.random.default_rng(0)
    out: dict = {"loader": loader}
    with _AnonPeak() as anon:
        t0 = time.perf_counter()
        if loader.startswith("frame"):
            from lerobot_tools.loaders import FrameDataset

            bound = None if loader == "frame-unbounded" else 128.0
            ds = FrameDataset(root, cache_dir=cache, decode_video=False, max_mapped_mb=bound)
            n = len(ds)
            out["build_s"] = time.perf_counter() - t0
            if loader == "frame-cold":
                samples = 0
            idx = rng.integers(0, n, size=samples)
            t1 = time.perf_counter()
            for k in range(0, samples, 64):
                batch = ds.__getitems__(idx[k:k + 64].tolist())
                assert len(batch) == len(idx[k:k + 64])
        else:
            import pyarrow.dataset as pads

            files = sorted(str(p) for p in Path(root, "data").rglob("*.parquet"))
            table = pads.dataset(files, format="parquet").to_table()
            n = table.num_rows
            out["build_s"] = time.perf_counter() - t0
            idx = rng.integers(0, n, size=samples)
            t1 = time.perf_counter()
            for k in range(0, samples, 64):
                part = table.take(idx[k:k + 64])
                assert part.num_rows == len(idx[k:k + 64])
        out["read_s"] = time.perf_counter() - t1
    out["frames"] = n
    out["samples_per_s"] = samples / out["read_s"] if samples else None
    out["baseline_rss_mb"] = base_kb / 1024
    # VmHWM, not ru_maxrss: Linux keeps ru_maxrss across execve, so a child would report its parent's peak
    out["peak_rss_mb"] = _status_kb("VmHWM") / 1024
    out["peak_anon_mb"] = anon.peak / 1024
    out["end_rss_file_mb"] = _status_kb("RssFile") / 1024
    return out


# ---------------------------------------------------------------------- parent side
def parquet_bytes(root: Path) -> int:
    return sum(p.stat().st_size for p in (root / "data").rglob("*.parquet"))


def build(root: Path, gb: float) -> None:
    from lerobot_tools.testing.synth import SynthSpec, build_dataset

    # ~4.8 kB of parquet per frame (1024 noise floats + state/action/index columns, measured)
    frames = int(gb * 1e9 / 4790)
    episodes = max(1, round(frames / EP_LEN))
    spec = SynthSpec(version="v3.0", episode_lengths=[EP_LEN] * episodes, episodes_per_file=EPS_PER_FILE,
                     video_codec=None, video_keys=(), extra_vector_features={"observation.noise": VECTOR})
    build_dataset(root, spec)


def run_child(*args: str) -> dict:
    r = subprocess.run([sys.executable, __file__, "_child", *args], capture_output=True, text=True)
    if r.returncode != 0:
        raise SystemExit(f"child failed: {r.stderr.strip().splitlines()[-1] if r.stderr.strip() else r.returncode}")
    return json.loads(r.stdout.strip().splitlines()[-1])


def bench_rss(work: Path, small_gb: float, big_gb: float, samples: int) -> None:
    print(f"\n== 1. FrameDataset peak RSS vs data size ({samples} random samples read, batches of 64)")
    rows = []
    for label, gb in (("small", small_gb), ("big", big_gb)):
        root = work / f"rss_{label}"
        t0 = time.perf_counter()
        build(root, gb)
        size = parquet_bytes(root)
        print(f"  generated {label}: {size / 1e9:.2f} GB parquet in {time.perf_counter() - t0:.0f} s")
        cache = work / f"cache_{label}"
        for loader in ("frame-cold", "frame", "frame-unbounded", "naive"):
            res = run_child("rss", loader, str(root), str(cache), str(samples))
            res.update(label=label, parquet_gb=size / 1e9)
            rows.append(res)
    names = {"frame-cold": "FrameDataset, cold cache [1]", "frame": "FrameDataset [2]",
             "frame-unbounded": "FrameDataset, no bound [3]", "naive": "naive pyarrow to_table() [4]"}
    print(f"  {'loader':<30} {'data':>6} {'frames':>9} {'build s':>8} {'peak RSS':>10} {'peak anon':>10} "
          f"{'RSS file':>9} {'samples/s':>10}")
    for r in rows:
        rate = f"{r['samples_per_s']:>10.0f}" if r["samples_per_s"] else f"{'-':>10}"
        print(f"  {names[r['loader']]:<30} {r['parquet_gb']:>5.2f}G {r['frames']:>9} {r['build_s']:>8.1f} "
              f"{r['peak_rss_mb']:>8.0f}MB {r['peak_anon_mb']:>8.0f}MB {r['end_rss_file_mb']:>7.0f}MB {rate}")
    for loader in names:
        s = next(r for r in rows if r["loader"] == loader and r["label"] == "small")
        b = next(r for r in rows if r["loader"] == loader and r["label"] == "big")
        growth = b["peak_rss_mb"] - s["peak_rss_mb"]
        verdict = ("  (target < 200 MB: " + ("met" if growth < 200 else "MISSED") + ")") if loader == "frame" else ""
        print(f"  {names[loader]:<30} peak RSS growth big - small = {growth:+6.0f} MB, anon "
              f"{b['peak_anon_mb'] - s['peak_anon_mb']:+6.0f} MB{verdict}")
    print("  [1] first construction: datasets converts the parquet into its Arrow cache (once per dataset and\n"
          "      machine), no reads. [2] the training case: construction on the existing cache, then the random\n"
          "      reads, default max_mapped_mb=128. [3] the same with max_mapped_mb=None: a page fault maps 64 KiB\n"
          "      (fault-around) or a whole large folio per touched Arrow buffer, so random reads map the whole\n"
          "      file (file-backed pages: RSS file at the end). [4] the whole table in anonymous memory.")


def bench_video(work: Path, size: str, batches: int) -> None:
    from torch.utils.data import DataLoader

    from lerobot_tools.testing.synth import stats as synth  # _image_stats lives (and is looked up) there
    from lerobot_tools.loaders import EpisodeAwareSampler, EpisodeShuffleStream, FrameDataset, collate_frames
    from lerobot_tools.testing.synth import SynthSpec, build_dataset

    # synth computes per-episode image statistics over full-resolution frames (~90 % of its build time at
    # 480p); the loaders never read them, so compute them on a 1/16 x 1/16 subsample here.
    full_stats = synth._image_stats
    synth._image_stats = lambda frames, quantiles: full_stats(frames[:, ::16, ::16], quantiles)
    W, H = (int(x) for x in size.lower().split("x"))
    # 25 fps: synth's stream-copy concatenation at 30 fps leaves 0.65 ms gaps between episodes
    # (docs/failure-modes.md#accumulated-durations), which the 1e-4 s tolerance rightly refuses from the second
    # episode of a file on
    print(f"\n== 2. Decoded frames/s, v3.0 h264 GOP 2 {W}x{H} 25 fps, 1 camera, 24 episodes x 100 frames, "
          "batch 32")
    root = work / "video"
    t0 = time.perf_counter()
    try:
        build_dataset(root, SynthSpec(version="v3.0", episode_lengths=[100] * 24, episodes_per_file=8, fps=25,
                                      video_codec="h264", video_size=(H, W), gop=2, state_dim=6, action_dim=6))
    finally:
        synth._image_stats = full_stats
    print(f"  generated in {time.perf_counter() - t0:.0f} s")
    ds = FrameDataset(root, cache_dir=work / "cache_video", frames_dtype="uint8")
    for kind in ("map", "stream"):
        for workers in (0, 2):
            if kind == "map":
                loader = DataLoader(ds, batch_size=32, sampler=EpisodeAwareSampler(ds, seed=0), num_workers=workers,
                                    collate_fn=collate_frames)
            else:
                loader = DataLoader(EpisodeShuffleStream(ds, batch_size=32, pool_size=8, seed=0), batch_size=32,
                                    num_workers=workers, collate_fn=collate_frames)
            it = iter(loader)
            t_first = time.perf_counter()
            next(it)
            first = time.perf_counter() - t_first
            t1 = time.perf_counter()
            n = 0
            for _ in range(batches):
                b = next(it)
                n += int(b["observation.images.front"].shape[0])
            dt = time.perf_counter() - t1
            del it
            print(f"  {kind:<6} loader, {workers} worker(s): {n / dt:7.0f} decoded frames/s "
                  f"(first batch {first * 1e3:.0f} ms; {os.cpu_count()} CPUs)")


def bench_sampler() -> None:
    import tracemalloc

    import numpy as np

    from lerobot_tools.loaders import EpisodeAwareSampler, EpisodeShuffleStream

    print("\n== 3. EpisodeAwareSampler at 10^5 episodes, 10^9 frames (rank 3 of 8)")
    lengths = np.full(100_000, 10_000, dtype=np.int64)
    tracemalloc.start()
    t0 = time.perf_counter()
    s = EpisodeAwareSampler(lengths, seed=1, rank=3, world_size=8)
    build = time.perf_counter() - t0
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    kept = sum(v.nbytes for v in vars(s).values() if isinstance(v, np.ndarray))
    t0 = time.perf_counter()
    s2 = EpisodeAwareSampler(lengths.tolist(), seed=1, rank=3, world_size=8)
    build_list = time.perf_counter() - t0
    assert s2.total == s.total == 10**9
    state = {**s.state_dict(), "position": 500_000_003}
    times = []
    for _ in range(50):
        t0 = time.perf_counter()
        s.load_state_dict(state)
        first = next(iter(s))
        times.append(time.perf_counter() - t0)
    assert first == int(s.indices(np.asarray([500_000_003 + 3]))[0])
    it = iter(s)
    t0 = time.perf_counter()
    for _ in range(200_000):
        next(it)
    rate = 200_000 / (time.perf_counter() - t0)
    print(f"  construction: {build * 1e3:.1f} ms from an int64 array, {build_list * 1e3:.1f} ms from a Python list"
          f"  (target < 1 s)")
    print(f"  memory: {peak / 2**20:.2f} MB traced peak during construction, {kept / 2**20:.2f} MB kept "
          f"(target < 50 MB; a randperm of 10^9 int64 would be 8000 MB)")
    print(f"  resume mid-epoch (load_state_dict + first sample): median {statistics.median(times) * 1e3:.2f} ms, "
          f"max {max(times) * 1e3:.2f} ms (target < 10 ms)")
    print(f"  iteration: {rate / 1e6:.2f} M indices/s")

    lengths7 = np.full(10_000, 1_000, dtype=np.int64)

    class _Src:
        episode_lengths = lengths7
        episode_starts = np.concatenate([[0], np.cumsum(lengths7)[:-1]])

        def __getitem__(self, i):
            return i

    st = EpisodeShuffleStream(_Src(), seed=1, pool_size=16)
    st.load_state_dict({**st.state_dict(), "position": 5_000_000})
    t0 = time.perf_counter()
    next(iter(st))
    print(f"  (EpisodeShuffleStream, for comparison: resume at 5x10^6 of 10^7 frames replays the plan in "
          f"{time.perf_counter() - t0:.2f} s; O(position))")


# ---------------------------------------------------------------------- 4. construction vs upstream
UPSTREAM_DEFAULT = str(Path(__file__).resolve().parents[1] / ".venv-lerobot" / "bin" / "python")


def child_construct(loader: str, root: str, cache: str, batches: int) -> dict:
    """Fresh process: import, construct (timed), then ``batches`` random batches of 8 with 2 workers."""
    out: dict = {"loader": loader}
    t0 = time.perf_counter()
    if loader == "upstream":
        sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))
        from upstream_env import load_lerobot_dataset_class  # lerobot 0.4.4 importable beside CPU torch

        LeRobotDataset = load_lerobot_dataset_class()
        out["import_s"] = time.perf_counter() - t0
        t1 = time.perf_counter()
        ds = LeRobotDataset("bench/local", root=root)
        collate = None
    else:
        import av  # noqa: F401  (images in parquet; upstream's import loads it too)
        import pandas  # noqa: F401  (pyarrow's to_numpy imports it on first use; upstream's import does too)
        import torch  # noqa: F401
        import torchcodec.decoders  # noqa: F401
        from lerobot_tools.loaders import FrameDataset, collate_frames

        out["import_s"] = time.perf_counter() - t0
        t1 = time.perf_counter()
        ds = FrameDataset(root, cache_dir=cache)
        collate = collate_frames
    out["construct_s"] = time.perf_counter() - t1
    out["frames"] = len(ds)
    if batches:
        import torch
        from torch.utils.data import DataLoader, RandomSampler

        g = torch.Generator().manual_seed(0)
        loader_ = DataLoader(ds, batch_size=8, sampler=RandomSampler(ds, generator=g), num_workers=2,
                             collate_fn=collate)
        it = iter(loader_)
        t2 = time.perf_counter()
        next(it)
        out["first_batch_s"] = time.perf_counter() - t2
        t3 = time.perf_counter()
        n = 0
        for _ in range(batches):
            try:
                b = next(it)
            except StopIteration:
                break
            n += len(b["index"])
        out["samples_per_s"] = n / (time.perf_counter() - t3)
        del it
    out["peak_rss_mb"] = _status_kb("VmHWM") / 1024
    return out


def _images_in_parquet(src: Path, dst: Path) -> None:
    """Copy a v3.0 video dataset with its camera stored as PNG images in the parquet (``dtype: image``)."""
    import io

    import av
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    from lerobot_tools.testing.synth import frame_pixels

    shutil.copytree(src, dst)
    info = json.loads((dst / "meta/info.json").read_text())
    key = next(k for k, v in info["features"].items() if v["dtype"] == "video")
    ft = info["features"][key]
    h, w = ft["shape"][0], ft["shape"][1]
    ft["dtype"] = "image"
    ft.pop("info", None)
    info["video_path"] = None
    info["total_videos"] = 0
    (dst / "meta/info.json").write_text(json.dumps(info, indent=4))
    shutil.rmtree(dst / "videos")

    def png(img: np.ndarray) -> bytes:
        frame = av.VideoFrame.from_ndarray(img, format="rgb24")
        buf = io.BytesIO()
        with av.open(buf, "w", format="image2pipe") as c:
            s = c.add_stream("png")
            s.width, s.height, s.pix_fmt = w, h, "rgb24"
            for p in s.encode(frame):
                c.mux(p)
            for p in s.encode(None):
                c.mux(p)
        return buf.getvalue()

    for f in sorted((dst / "data").rglob("*.parquet")):
        t = pq.read_table(f)
        eps, frs = t.column("episode_index").to_pylist(), t.column("frame_index").to_pylist()
        col = pa.array([{"bytes": png(frame_pixels(e, fr, h, w)), "path": None} for e, fr in zip(eps, frs)],
                       pa.struct([("bytes", pa.binary()), ("path", pa.string())]))
        t = t.append_column(key, col)
        md = dict(t.schema.metadata or {})
        hf = json.loads(md[b"huggingface"])
        hf["info"]["features"][key] = {"_type": "Image"}
        md[b"huggingface"] = json.dumps(hf).encode()
        pq.write_table(t.replace_schema_metadata(md), f)


def bench_construction(work: Path, upstream: str | None, batches: int, episodes: int) -> None:
    from lerobot_tools.testing.synth import stats as synth  # _image_stats lives (and is looked up) there
    from lerobot_tools.testing.synth import SynthSpec, build_dataset

    print("\n== 4. Construction and throughput, lrtool FrameDataset vs upstream LeRobotDataset (fresh process "
          f"each; {episodes} episodes x 100 frames, 320x240 25 fps; DataLoader batch 8, 2 workers, {batches} random "
          "batches)")
    full_stats = synth._image_stats
    synth._image_stats = lambda frames, quantiles: full_stats(frames[:, ::8, ::8], quantiles)
    try:
        spec = dict(version="v3.0", episode_lengths=[100] * episodes, episodes_per_file=5, fps=25,
                    video_size=(240, 320))
        roots = {"h264": build_dataset(work / "c_h264", SynthSpec(video_codec="h264", **spec)),
                 "av1": build_dataset(work / "c_av1", SynthSpec(video_codec="av1", **spec))}
        _images_in_parquet(roots["h264"], work / "c_images")
        roots["images"] = work / "c_images"
    finally:
        synth._image_stats = full_stats
    reason = None
    if upstream is None or not Path(upstream).exists():
        reason = f"upstream interpreter {upstream} not found (lerobot 0.4.4 side venv)"
    else:
        r = subprocess.run([upstream, "-c", "import lerobot, sys; print(lerobot.__version__)"], capture_output=True,
                           text=True, env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"})
        if r.returncode != 0:
            reason = f"{upstream} cannot import lerobot"
        else:
            print(f"  upstream: lerobot {r.stdout.strip()} ({upstream})")
    if reason:
        print(f"  upstream rows skipped: {reason}")
    print(f"  {'data':<7} {'loader':<9} {'import s':>8} {'cold s':>7} {'warm s':>7} {'1st batch s':>11} "
          f"{'samples/s':>9} {'peak RSS':>9}")
    for name, root in roots.items():
        rows = {}
        for loader in ("lrtool", "upstream"):
            if loader == "upstream" and reason:
                continue
            cache = work / f"cache_{name}_{loader}"
            env = {**os.environ, "HF_DATASETS_CACHE": str(cache), "HF_HUB_OFFLINE": "1", "PYTHONDONTWRITEBYTECODE": "1"}
            py = upstream if loader == "upstream" else sys.executable
            try:
                cold = run_child_with(py, env, "construct", loader, str(root), str(cache), "0")
                warm = run_child_with(py, env, "construct", loader, str(root), str(cache), str(batches))
            except SystemExit as exc:
                print(f"  {name:<7} {loader:<9} failed: {exc}")
                continue
            rows[loader] = warm
            print(f"  {name:<7} {loader:<9} {warm['import_s']:>8.2f} {cold['construct_s']:>7.2f} "
                  f"{warm['construct_s']:>7.3f} {warm['first_batch_s']:>11.2f} {warm['samples_per_s']:>9.1f} "
                  f"{warm['peak_rss_mb']:>7.0f}MB")
        if len(rows) == 2:
            a, b = rows["lrtool"], rows["upstream"]
            print(f"  {name:<7} lrtool/upstream: construction (warm) {a['construct_s'] / b['construct_s']:.2f}x "
                  f"(target <= 1), samples/s {a['samples_per_s'] / b['samples_per_s']:.2f}x (target >= 1.1)")


def run_child_with(python: str, env: dict, *args: str) -> dict:
    r = subprocess.run([python, __file__, "_child", *args], capture_output=True, text=True, env=env)
    if r.returncode != 0:
        raise SystemExit(r.stderr.strip().splitlines()[-1] if r.stderr.strip() else f"exit {r.returncode}")
    return json.loads(r.stdout.strip().splitlines()[-1])


# ---------------------------------------------------------------------- 5. mixture of many datasets
def child_mixture(mixture: str, cache: str, batches: int, open_all: bool) -> dict:
    """Fresh process: import, build the MixtureDataset (timed), load ``batches`` batches, or open every member."""
    import psutil
    import torch  # noqa: F401
    import torchcodec.decoders  # noqa: F401
    from torch.utils.data import DataLoader

    from lerobot_tools.loaders import EpisodeAwareSampler, MixtureDataset, collate_frames

    out: dict = {}
    base = _status_kb("VmRSS")
    t0 = time.perf_counter()
    mix = MixtureDataset(mixture, cache_dir=cache)
    out.update(construct_s=time.perf_counter() - t0, datasets=len(mix.members), cold=mix.cold_datasets,
               frames=len(mix), construct_rss_mb=(_status_kb("VmRSS") - base) / 1024)
    if open_all:
        # open every member and decode one frame of each; the first one pays one-time costs (FFmpeg and
        # torchcodec initialisation), so the growth is measured from there
        mix.__getitems__([0])
        first = _status_kb("VmRSS")
        t1 = time.perf_counter()
        cache_full = None
        for d in range(1, len(mix.members)):
            mix.__getitems__([int(mix.dataset_offsets[d])])
            if d + 1 == mix._decoders.max_open:
                cache_full = _status_kb("VmRSS")
        out["open_all_s"] = time.perf_counter() - t1
        out["open_all_rss_mb"] = (_status_kb("VmRSS") - first) / 1024
        out["decoder_lru"] = mix._decoders.max_open
        if cache_full is not None and len(mix.members) > mix._decoders.max_open:
            out["after_lru_mb_per_dataset"] = ((_status_kb("VmRSS") - cache_full) / 1024
                                               / (len(mix.members) - mix._decoders.max_open))
        return out
    proc = psutil.Process()
    peak = [0]
    stop = threading.Event()

    def sample():
        while not stop.is_set():
            tot = 0
            for p in [proc] + proc.children(recursive=True):
                try:
                    tot += p.memory_info().rss
                except psutil.Error:
                    pass
            peak[0] = max(peak[0], tot)
            stop.wait(0.02)

    th = threading.Thread(target=sample, daemon=True)
    th.start()
    sampler = EpisodeAwareSampler(mix, seed=0, num_samples=8 * (batches + 1))
    it = iter(DataLoader(mix, batch_size=8, sampler=sampler, num_workers=2, collate_fn=collate_frames))
    t2 = time.perf_counter()
    next(it)
    out["first_batch_s"] = time.perf_counter() - t2
    t3 = time.perf_counter()
    n = 0
    for b in it:
        n += len(b["dataset_index"])
    dt = time.perf_counter() - t3
    stop.set()
    th.join()
    out.update(samples_per_s=n / dt, decoded_frames_per_s=n / dt, peak_tree_rss_mb=peak[0] / 2**20)
    return out


def bench_mixture(work: Path, n: int, batches: int) -> None:
    from lerobot_tools.testing.synth import SynthSpec, build_dataset

    print(f"\n== 5. MixtureDataset over {n} small datasets (32x32 h264 camera, 40-60 frames each, weights 1..4)")
    t0 = time.perf_counter()
    templates = [build_dataset(work / "m_t30", SynthSpec(version="v3.0", episode_lengths=(20, 15, 25),
                                                          video_size=(32, 32))),
                 build_dataset(work / "m_t21", SynthSpec(version="v2.1", episode_lengths=(20, 20),
                                                          video_size=(32, 32)))]
    lines = []
    for i in range(n):
        dst = work / "mix" / f"ds{i:04d}"
        shutil.copytree(templates[i % 2], dst)
        lines.append(f"{dst} weight={1 + i % 4}")
    mixture = work / "mixture.txt"
    mixture.write_text("\n".join(lines) + "\n")
    print(f"  generated in {time.perf_counter() - t0:.0f} s")
    cache = str(work / "cache_mix")
    cold = run_child_with(sys.executable, dict(os.environ), "mixture", str(mixture), cache, "0", "0")
    warm = run_child_with(sys.executable, dict(os.environ), "mixture", str(mixture), cache, str(batches), "0")
    allopen = run_child_with(sys.executable, dict(os.environ), "mixture", str(mixture), cache, "0", "1")
    print(f"  construction: cold {cold['construct_s']:.1f} s ({cold['cold']} Arrow caches built), warm "
          f"{warm['construct_s']:.2f} s (target < 10 s); +{warm['construct_rss_mb']:.0f} MB RSS in the main process")
    print(f"  DataLoader (batch 8, 2 workers, {batches} batches): first batch {warm['first_batch_s']:.2f} s, "
          f"{warm['samples_per_s']:.0f} samples/s ({warm['decoded_frames_per_s']:.0f} decoded frames/s), "
          f"peak RSS of the process tree {warm['peak_tree_rss_mb']:.0f} MB")
    per = allopen["open_all_rss_mb"] / max(n - 1, 1)
    tail = (f"; {allopen['after_lru_mb_per_dataset']:.2f} MB per dataset once the {allopen['decoder_lru']}-decoder "
            "LRU is full" if "after_lru_mb_per_dataset" in allopen else "")
    print(f"  every dataset opened in one process (one frame decoded from each, after the first): "
          f"{allopen['open_all_s']:.1f} s, +{allopen['open_all_rss_mb']:.0f} MB RSS = {per:.2f} MB per dataset "
          f"(target < 2 MB){tail}")


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "_child":
        _, _, what, *rest = sys.argv
        if what == "rss":
            loader, root, cache, samples = rest
            print(json.dumps(child_rss(loader, root, cache, int(samples))))
        elif what == "construct":
            loader, root, cache, batches = rest
            print(json.dumps(child_construct(loader, root, cache, int(batches))))
        elif what == "mixture":
            mixture, cache, batches, open_all = rest
            print(json.dumps(child_mixture(mixture, cache, int(batches), open_all == "1")))
        return
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--workdir", type=Path, default=None)
    ap.add_argument("--small-gb", type=float, default=0.2)
    ap.add_argument("--big-gb", type=float, default=2.0)
    ap.add_argument("--samples", type=int, default=20_000)
    ap.add_argument("--video-size", default="640x480", help="WxH of the video benchmark")
    ap.add_argument("--video-batches", type=int, default=20)
    ap.add_argument("--skip-rss", action="store_true")
    ap.add_argument("--skip-video", action="store_true")
    ap.add_argument("--skip-sampler", action="store_true")
    ap.add_argument("--skip-construction", action="store_true")
    ap.add_argument("--skip-mixture", action="store_true")
    ap.add_argument("--construction-batches", type=int, default=120,
                    help="random batches per throughput run (30 gave ratios that moved by +-0.3x on a quiet machine)")
    ap.add_argument("--construction-episodes", type=int, default=20, help="episodes of 100 frames per dataset")
    ap.add_argument("--mixture-datasets", type=int, default=100)
    ap.add_argument("--mixture-batches", type=int, default=40)
    ap.add_argument("--upstream-python", default=os.environ.get("LRTOOL_UPSTREAM_PYTHON", UPSTREAM_DEFAULT))
    ap.add_argument("--keep", action="store_true")
    args = ap.parse_args()
    base = args.workdir or Path(tempfile.gettempdir())
    base.mkdir(parents=True, exist_ok=True)
    need = 2.3 * (args.small_gb + args.big_gb) * 1e9 if not args.skip_rss else 1e9
    free = shutil.disk_usage(base).free
    print(f"workdir {base}: {free / 1e9:.1f} GB free, about {need / 1e9:.1f} GB needed")
    if free < need:
        raise SystemExit(f"not enough free space under {base}; pass --workdir or smaller --big-gb")
    work = Path(tempfile.mkdtemp(prefix="bench-loaders-", dir=base))
    try:
        if not args.skip_sampler:
            bench_sampler()
        if not args.skip_video:
            bench_video(work, args.video_size, args.video_batches)
        if not args.skip_construction:
            bench_construction(work, args.upstream_python, args.construction_batches, args.construction_episodes)
        if not args.skip_mixture:
            bench_mixture(work, args.mixture_datasets, args.mixture_batches)
        if not args.skip_rss:
            bench_rss(work, args.small_gb, args.big_gb, args.samples)
    finally:
        if args.keep:
            print(f"kept {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
