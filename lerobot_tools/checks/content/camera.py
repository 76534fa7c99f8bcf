"""Q011-Q014 with ``--camera-frames N``: a bounded sample of decoded frames per episode and camera.

For every video file, the ``N`` frames of each of its episodes (evenly spaced, first and last included) are decoded
in one forward pass with seeks to the keyframe before a target when that is cheaper
(:func:`lerobot_tools.video.decode.decode_pyav`, one CPU thread, RGB), turned grey and subsampled to at most
:data:`THUMB` pixels wide. Per episode and camera: the mean and standard deviation of each frame (black, covered,
overexposed) and the mean absolute difference of consecutive samples (a frozen feed); per pair of cameras, the mean
absolute difference of the same samples (a duplicated stream). Thresholds are rdq 0.3.4's (``rdq/video.py``:
``BLACK_MEAN 12``, ``FLAT_STD 2``, ``FROZEN_DIFF 0.5``; overexposed from its ``--video-full`` mode: mean > 235 with
std < 10, ``rdq/rawvideo.py``).

Cost: ``N`` decoded frames per episode and camera, each a seek to the keyframe before it and a decode forward to it
(lerobot encodes with a keyframe every 2 frames: one or two frames decoded per sample). Measured on a 2-core box
(``benchmarks/bench_curation.py``): docs/curation.md#cost. Memory: the thumbnails of one video file's samples.
"""

from __future__ import annotations

import numpy as np

from lerobot_tools.checks.context import CheckContext

THUMB = 64
BLACK_MEAN = 12.0
FLAT_STD = 2.0
BRIGHT_MEAN = 235.0
BRIGHT_STD = 10.0
FROZEN_DIFF = 0.5
SAME_DIFF = 0.5

CHECKS = "Q011-Q014 (camera content)"


def _grey(img: np.ndarray) -> np.ndarray:
    step = max(1, -(-img.shape[1] // THUMB))
    return img[::step, ::step].astype(np.float32).mean(axis=2)


def sample(ctx: CheckContext, n: int) -> tuple[dict[tuple[int, str], list[np.ndarray]], list[str]]:
    """Decode ``n`` frames per episode and camera: ``{(episode, key): [grey thumbnails in time order]}`` and the
    problems met (one line each: a file that cannot be decoded)."""
    from lerobot_tools.video.decode import decode_pyav

    ds = ctx.dataset
    fps = ds.fps
    by_ep = {e.episode_index: e for e in ds.episodes}
    out: dict[tuple[int, str], list[np.ndarray]] = {}
    problems: list[str] = []
    for vf in ds.video_files():
        try:
            path = ds.path(vf.relpath)
        except Exception:
            continue
        if not path.is_file():
            continue
        targets: dict[int, list[int]] = {}
        for e in vf.episodes:
            ep = by_ep.get(e)
            if ep is None or not ep.length:
                continue
            base = 0
            if ds.layout == "v3":
                seg = ep.videos.get(vf.video_key)
                if seg is None or seg.from_timestamp is None:
                    continue
                base = int(round(seg.from_timestamp * fps))
            for p in np.unique(np.round(np.linspace(0, ep.length - 1, min(n, ep.length))).astype(int)).tolist():
                targets.setdefault(base + p, []).append(e)
        if not targets:
            continue
        got: dict[int, np.ndarray] = {}
        run = decode_pyav(str(path), sorted(targets), on_frame=lambda i, img: got.__setitem__(i, _grey(img)))
        if run.error:
            problems.append(f"{vf.relpath}: {run.error}")
        for i in sorted(got):
            for e in targets[i]:
                out.setdefault((e, vf.video_key), []).append(got[i])
    return out, problems


def judge_cameras(ctx: CheckContext, n: int, frozen: set[int]) -> None:
    """Q011-Q014 from ``n`` sampled frames per episode and camera (``frozen``: episodes Q001 reported, whose
    cameras are not judged frozen: the cause is said once)."""
    ds = ctx.dataset
    keys = ds.video_keys
    if not keys:
        return
    if n <= 0:
        ctx.skip(CHECKS, "--camera-frames not given (no frame is decoded)")
        return
    if not ctx.enabled("Q011", "Q012", "Q013", "Q014"):
        return
    samples, problems = sample(ctx, n)
    for p in problems:
        ctx.skip(f"{CHECKS} for {p.split(':', 1)[0]}", p.split(": ", 1)[-1])
    flat: set[tuple[int, str]] = set()
    for (e, key), frames in sorted(samples.items()):
        g = np.stack(frames)
        means = g.mean(axis=(1, 2))
        stds = g.std(axis=(1, 2))
        half = len(g) / 2
        if np.count_nonzero((means > BRIGHT_MEAN) & (stds < BRIGHT_STD)) >= half:
            flat.add((e, key))
            ctx.emit("Q012", f"episode {e}: {key!r} is washed out (mean grey {means.mean():.1f} of 255, spread "
                     f"{stds.mean():.1f})", None, group=f"{key!r} is overexposed in some episodes", episode=e,
                     video_key=key)
            continue
        dark = np.count_nonzero((means < BLACK_MEAN) | (stds < FLAT_STD))
        if dark >= half:
            flat.add((e, key))
            ctx.emit("Q011", f"episode {e}: {key!r} is black or covered in {dark} of {len(g)} sampled frame(s) (mean "
                     f"grey {means.mean():.1f} of 255, spread {stds.mean():.1f})", None,
                     group=f"{key!r} is black or covered in some episodes", episode=e, video_key=key)
            continue
        if len(g) >= 2 and e not in frozen:
            diffs = np.abs(np.diff(g, axis=0)).mean(axis=(1, 2))
            if (diffs < FROZEN_DIFF).all():
                ctx.emit("Q013", f"episode {e}: {key!r} shows the same picture in all {len(g)} sampled frames (largest "
                         f"change {diffs.max():.2f} grey levels) while the robot moves", None,
                         group=f"{key!r} is frozen in some episodes", episode=e, video_key=key)
    _duplicates(ctx, keys, samples, flat)


def _duplicates(ctx: CheckContext, keys: list[str], samples: dict, flat: set) -> None:
    for i, a in enumerate(keys):
        for b in keys[i + 1:]:
            same, compared = [], 0
            for (e, key), fa in sorted(samples.items()):
                if key != a or (e, b) not in samples or (e, a) in flat or (e, b) in flat:
                    continue
                fb = samples[(e, b)]
                if len(fa) != len(fb) or fa[0].shape != fb[0].shape:
                    continue
                compared += 1
                if all(np.abs(x - y).mean() < SAME_DIFF for x, y in zip(fa, fb)):
                    same.append(e)
            if not same:
                continue
            if len(same) == compared and compared >= 2:
                ctx.emit("Q014", f"{a!r} and {b!r} hold the same pictures in all {compared} sampled episodes: one "
                         "camera recorded twice, or a key mapped to the wrong device", None, video_key=b)
                continue
            for e in same:
                ctx.emit("Q014", f"episode {e}: {a!r} and {b!r} hold the same pictures", None,
                         group=f"{a!r} and {b!r} hold the same pictures in some episodes", episode=e, video_key=b)
