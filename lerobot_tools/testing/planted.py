"""Datasets built from real recordings with planted content defects at known episodes (family Q's accuracy).

The motion comes from the datasets upstream lerobot 0.4.4 wrote in ``fixtures/real`` (SO-101 ``action`` and
``observation.state``, 6 joints each, recorded through ``LeRobotDataset.add_frame``): :func:`real_pieces` reads
every episode of their pandas-2 generation (the pandas-3 one holds the same values). :func:`build_planted` makes
episode ``k`` from piece ``k mod P`` played back and forth to the episode's length, scaled and offset per episode
(so no two clean episodes are alike), writes the dataset with :func:`lerobot_tools.testing.synth.build_dataset`
(lerobot's v2.1 or v3.0 layout, statistics computed from the planted values) and plants the defects the plan
names. It returns the truth: ``{episode: [kind, ...]}``.

Kinds (:data:`KINDS`) and how each is planted (``d`` a joint chosen per episode, ``t`` a frame inside it):

* ``frozen``: every action and state value of the episode replaced by its first frame's;
* ``stuck``: one state dimension held at its first value;
* ``idle``: 2.5 s of the first frame prepended and 2 s of the last frame appended (``trim`` in the truth);
* ``spike``: one frame of one state dimension moved by 3 typical ranges of the dimension, then back;
* ``jump``: one state dimension offset by 3 typical ranges from frame ``t`` on (an encoder wrap);
* ``nan``: three values of one action dimension set to NaN;
* ``pinned``: one state dimension held, over 70 % of the episode (10-frame ramps in and out), just above the
  dataset's largest value of it;
* ``lag``: the action 10 frames ahead of where it belongs (the state follows it 10 frames late);
* ``short``: the episode cut to 30 frames;
* ``duplicate``: an exact copy of an earlier clean episode; ``near_duplicate``: a copy plus noise of 0.1 % of
  each dimension's range;
* cameras (two video keys; the second shows the inverted picture of the first camera's unplanted picture):
  ``black`` (the first camera all 0), ``overexposed`` (all 250), ``frozen_camera`` (the first camera repeats its
  first frame) and ``duplicate_stream`` (the second camera shows the first camera's picture).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

KINDS = ("frozen", "stuck", "idle", "spike", "jump", "nan", "pinned", "lag", "short", "duplicate", "near_duplicate",
         "black", "overexposed", "frozen_camera", "duplicate_stream")
CAMERA_KINDS = ("black", "overexposed", "frozen_camera", "duplicate_stream")
#: the check each kind must raise (Q010 is planted across datasets by the benchmark)
EXPECTED_CHECK = {"frozen": "Q001", "stuck": "Q002", "idle": "Q003", "spike": "Q004", "jump": "Q004", "nan": "Q005",
                  "pinned": "Q006", "lag": "Q007", "short": "Q008", "duplicate": "Q009", "near_duplicate": "Q009",
                  "black": "Q011", "overexposed": "Q012", "frozen_camera": "Q013", "duplicate_stream": "Q014",
                  "cross_duplicate": "Q010"}
LAG_FRAMES = 10
SHORT_FRAMES = 30
#: spikes and jumps move a dimension by this many of its typical ranges (a dropout to 0 or an encoder wrap of
#: 360 degrees is 2-12 typical ranges of a joint in a task)
SPIKE_RANGES = 3.0
JOINTS = 6


def real_pieces(real_dir: str | Path, fps: int = 30) -> list[np.ndarray]:
    """Every episode of the ``*-pandas2`` datasets under ``real_dir`` as a ``(n, 12)`` float64 array (action then
    observation.state), resampled from its dataset's fps to ``fps`` (linear interpolation in time), in dataset and
    episode order.

    Raises:
        FileNotFoundError: no such dataset under ``real_dir``.
    """
    import json

    import pyarrow.parquet as pq

    out = []
    for root in sorted(Path(real_dir).glob("*-pandas2")):
        src_fps = float(json.loads((root / "meta" / "info.json").read_text())["fps"])
        for f in sorted((root / "data").rglob("*.parquet")):
            t = pq.read_table(f, columns=["action", "observation.state", "episode_index"])
            a = np.asarray(t.column("action").to_pylist(), dtype=np.float64)
            s = np.asarray(t.column("observation.state").to_pylist(), dtype=np.float64)
            ep = np.asarray(t.column("episode_index").to_pylist())
            for e in np.unique(ep):
                x = np.concatenate([a[ep == e], s[ep == e]], axis=1)
                t_src = np.arange(len(x)) / src_fps
                t_new = np.arange(int(t_src[-1] * fps) + 1) / fps
                out.append(np.stack([np.interp(t_new, t_src, x[:, j]) for j in range(x.shape[1])], axis=1))
    if not out:
        raise FileNotFoundError(f"{real_dir}: no *-pandas2 dataset with data files")
    return out


def _pingpong(piece: np.ndarray, length: int, start: int) -> np.ndarray:
    n = len(piece)
    period = max(1, 2 * n - 2)
    pos = (np.arange(length) + start) % period
    idx = np.where(pos < n, pos, period - pos)
    return piece[idx]


def base_episodes(pieces: list[np.ndarray], count: int, seed: int, lengths: tuple[int, int] = (80, 140),
                  speed: float = 1.0) -> list[np.ndarray]:
    """``count`` clean ``(n, 12)`` episodes from the real pieces (see module docstring); ``speed`` < 1 plays every
    piece slower (linear interpolation; the recordings are 0.4-1 s long: at 10 fps a piece is 4-10 frames, a
    joint then crosses its whole range in two or three frames, which no arm does in a task)."""
    rng = np.random.default_rng(seed)
    out = []
    for k in range(count):
        piece = pieces[k % len(pieces)]
        if speed != 1.0:
            t = np.arange(0.0, len(piece) - 1 + 1e-9, speed)
            piece = np.stack([np.interp(t, np.arange(len(piece)), piece[:, j]) for j in range(piece.shape[1])], axis=1)
        length = int(rng.integers(*lengths))
        x = _pingpong(piece, length, int(rng.integers(0, len(piece))))
        scale = 1.0 + 0.3 * rng.uniform(-1, 1, JOINTS)
        offset = rng.normal(0.0, 8.0, JOINTS)
        y = np.empty_like(x)
        y[:, :JOINTS] = x[:, :JOINTS] * scale + offset
        y[:, JOINTS:] = x[:, JOINTS:] * scale + offset
        out.append(y)
    return out


def plant(episodes: list[np.ndarray], plan: dict[int, list[str]], fps: int, seed: int) -> dict[int, dict]:
    """Plant the numeric defects of ``plan`` into ``episodes`` (in place); returns per episode what was planted
    (``{"kinds": [...], "trim": (head, tail), "copy_of": e}``). Camera kinds are planted by :func:`frame_hook`."""
    rng = np.random.default_rng(seed + 1)
    typ = np.median(np.stack([x.max(axis=0) - x.min(axis=0) for x in episodes]), axis=0)
    top = np.max(np.stack([x.max(axis=0) for x in episodes]), axis=0)
    truth: dict[int, dict] = {}
    for e in sorted(plan):
        kinds = plan[e]
        info: dict = {"kinds": list(kinds)}
        x = episodes[e]
        n = len(x)
        d = JOINTS + int(rng.integers(0, JOINTS - 1))  # a state joint, never the gripper (the last one)
        t = int(rng.integers(n // 4, 3 * n // 4))
        for kind in kinds:
            if kind == "frozen":
                x[:] = x[0]
            elif kind == "stuck":
                x[:, d] = x[0, d]
            elif kind == "idle":
                head, tail = int(2.5 * fps), int(2 * fps)
                x = np.concatenate([np.repeat(x[:1], head, axis=0), x, np.repeat(x[-1:], tail, axis=0)])
                info["trim"] = (head, tail)
            elif kind == "spike":
                x[t, d] += SPIKE_RANGES * typ[d]
            elif kind == "jump":
                x[t:, d] += SPIKE_RANGES * typ[d]
            elif kind == "nan":
                x[t:t + 3, int(rng.integers(0, JOINTS))] = np.nan
            elif kind == "pinned":
                c = top[d] + 0.1 * typ[d]
                a, b = n // 8, n // 8 + int(0.7 * n)
                ramp = min(10, a)
                x[a - ramp:a, d] = np.linspace(x[a - ramp, d], c, ramp + 1)[1:]
                x[a:b, d] = c
                back = min(10, n - b)
                if back:
                    x[b:b + back, d] = np.linspace(c, x[b + back - 1, d], back + 1)[1:]
            elif kind == "lag":
                x[:, :JOINTS] = x[np.minimum(np.arange(n) + LAG_FRAMES, n - 1), :JOINTS]
            elif kind == "short":
                x = x[:SHORT_FRAMES].copy()
            elif kind in ("duplicate", "near_duplicate"):
                src = next(j for j in range(e) if j not in plan)
                x = episodes[src].copy()
                if kind == "near_duplicate":
                    x = x + rng.normal(0.0, 1e-3, x.shape) * (x.max(axis=0) - x.min(axis=0))
                info["copy_of"] = src
        episodes[e] = x
        truth[e] = info
    return truth


def frame_hook(plan: dict[int, list[str]], keys: tuple[str, str]):
    """The :func:`~lerobot_tools.testing.synth.build_dataset` frame hook planting the camera kinds of ``plan``;
    the second camera shows the inverted picture of the first, except where ``duplicate_stream`` is planted."""
    first, second = keys

    def hook(ep: int, key: str, fi: int, img: np.ndarray) -> np.ndarray:
        from lerobot_tools.testing.synth import frame_pixels

        kinds = plan.get(ep, [])
        if key == second:
            return img if "duplicate_stream" in kinds else 255 - img
        h, w = img.shape[:2]
        if "frozen_camera" in kinds:
            img = frame_pixels(ep, 0, h, w)
        if "black" in kinds:
            img = np.zeros_like(img)
        if "overexposed" in kinds:
            img = np.full_like(img, 250)
        return img

    return hook


def build_planted(root: str | Path, real_dir: str | Path, plan: dict[int, list[str]], *, episodes: int,
                  version: str = "v3.0", cameras: bool = False, fps: int = 30, seed: int = 0,
                  codec: str = "h264", size: tuple[int, int] = (64, 64),
                  base: list[np.ndarray] | None = None) -> dict[int, dict]:
    """Write a dataset of ``episodes`` episodes with the defects of ``plan`` (episode -> kinds) under ``root``.

    Args:
        base: the clean episodes to plant into (default :func:`base_episodes` of the real pieces); the caller may
            pass another dataset's to plant copies across datasets.

    Returns:
        The truth (see :func:`plant`).
    """
    from lerobot_tools.testing.synth import SynthSpec, build_dataset

    eps = [x.copy() for x in (base or base_episodes(real_pieces(real_dir, fps), episodes, seed))]
    truth = plant(eps, {e: k for e, k in plan.items() if any(x not in CAMERA_KINDS for x in k)}, fps, seed)
    for e, kinds in plan.items():
        truth.setdefault(e, {"kinds": []})
        truth[e]["kinds"] = list(kinds)
    keys = ("observation.images.front", "observation.images.wrist")
    spec = SynthSpec(version=version, episode_lengths=[len(x) for x in eps], fps=fps, state_dim=JOINTS,
                     action_dim=JOINTS, video_keys=keys if cameras else (), video_codec=codec if cameras else None,
                     video_size=size, episodes_per_file=2 if cameras else 10,
                     tasks=("Pick the cube and place it in the bin",),
                     seed=seed)

    def columns(ep: int, cols: dict) -> None:
        cols["action"] = eps[ep][:, :JOINTS].astype(np.float32)
        cols["observation.state"] = eps[ep][:, JOINTS:].astype(np.float32)

    build_dataset(Path(root), spec, episode_hook=columns, frame_hook=frame_hook(plan, keys) if cameras else None)
    return truth
