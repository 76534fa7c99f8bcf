"""Write small datasets with upstream lerobot's own writer into ``fixtures/real/`` (committed as fixtures).

Run with the side environment made by ``scripts/install.sh``::

    .venv-lerobot/bin/python scripts/write_real_fixtures.py            # every dataset, both pandas generations
    .venv-lerobot/bin/python scripts/write_real_fixtures.py --only av1  # names starting with av1

What upstream lerobot writes is lrtool's standard for "not a defect": these datasets are produced exactly as
``lerobot-record`` produces them (lerobot 0.4.4, ``src/lerobot/scripts/lerobot_record.py``): features from
``hw_to_dataset_features`` (joint vectors with names, ``(H, W, 3)`` cameras named height/width/channels),
``LeRobotDataset.create`` (codebase v3.0), ``add_frame`` per frame with no explicit timestamp, ``save_episode``
per episode, ``finalize()`` at the end, and for a resumed recording ``LeRobotDataset(repo_id, root=...)`` reopened
and appended to, which starts new data, video and episode-metadata files. Content is deterministic (seeded NumPy);
the bytes depend on the writer stack, recorded per dataset in ``fixtures/real/manifest.json``, and a few are not
reproducible at all: ``datasets`` stamps a random fingerprint into image datasets' parquet metadata, and the H.264
encoder's output for the second camera, encoded while upstream's threaded image writer runs, varies slightly from
run to run (lossy-coding differences of the same frames).

``meta/tasks.parquet`` is written through pandas (``DataFrame.to_parquet``), so its form differs between pandas 2
and pandas 3: each dataset is written once per generation (``*-pandas2``, ``*-pandas3``). The pandas 3 generation
runs this script again in a child process with pandas 3 installed in ``.venv-lerobot/overlay-pandas3`` (created on
first use with ``pip install --target``) ahead of the environment's pandas 2 on ``sys.path``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
OUT = REPO / "fixtures" / "real"
PANDAS3 = "pandas==3.0.6"
OVERLAY = REPO / ".venv-lerobot" / "overlay-pandas3"

JOINTS = ["shoulder_pan.pos", "shoulder_lift.pos", "elbow_flex.pos", "wrist_flex.pos", "wrist_roll.pos",
          "gripper.pos"]
H, W = 48, 64   # camera frames (height, width), pixels

# name -> how the dataset is recorded. sessions: one list of (task, frames) per recording session; a session after
# the first reopens the dataset (lerobot-record --resume=true).
SPECS: dict[str, dict] = {
    "av1": {"fps": 30, "cameras": ["front"], "video": True, "vcodec": "libsvtav1",
            "sessions": [[("Pick the cube and place it in the bin", 30)] * 3]},
    "h264": {"fps": 15, "cameras": ["front", "wrist"], "video": True, "vcodec": "h264",
             "sessions": [[("Open the drawer", 20), ("Close the drawer", 18), ("Open the drawer", 22)]]},
    "images": {"fps": 10, "cameras": ["front"], "video": False, "vcodec": "libsvtav1",
               "sessions": [[("Push the block to the line", 16), ("Push the block to the line", 12)]]},
    "multifile": {"fps": 30, "cameras": ["front"], "video": True, "vcodec": "libsvtav1",
                  "sessions": [[("Stack the red cube", 20), ("Stack the blue cube", 24)],
                               [("Stack the blue cube", 20), ("Unstack the cubes", 16)],
                               [("Stack the red cube", 18)]]},
    # no camera at all, recorded with the default use_videos=True: info.json keeps a video_path template
    "nocamera": {"fps": 50, "cameras": [], "video": True, "vcodec": "libsvtav1",
                 "sessions": [[("Wave", 25), ("Wave", 25)]]},
    # --dataset.streaming_encoding=true: frames go to the encoder while recording, no PNG round trip
    "streaming": {"fps": 30, "cameras": ["front"], "video": True, "vcodec": "libsvtav1", "streaming": True,
                  "sessions": [[("Pour the water", 24), ("Pour the water", 20)]]},
}


def features(spec: dict) -> dict:
    """The features lerobot-record derives from an SO-101 follower with the spec's cameras."""
    feats = {
        "action": {"dtype": "float32", "shape": (len(JOINTS),), "names": list(JOINTS)},
        "observation.state": {"dtype": "float32", "shape": (len(JOINTS),), "names": list(JOINTS)},
    }
    for cam in spec["cameras"]:
        feats[f"observation.images.{cam}"] = {"dtype": "video" if spec["video"] else "image",
                                              "shape": (H, W, 3), "names": ["height", "width", "channels"]}
    return feats


def frame(rng, spec: dict, episode: int, i: int, task: str) -> dict:
    """One deterministic frame: smooth joint trajectories, and camera images with a moving square and a gradient
    (smooth content keeps PNG and video small)."""
    import numpy as np

    t = i / spec["fps"]
    phase = np.arange(len(JOINTS), dtype=np.float32)
    state = (np.sin(t + phase + episode) * 40.0 + rng.normal(0.0, 0.5, len(JOINTS))).astype(np.float32)
    out = {"observation.state": state, "action": (state + 1.5).astype(np.float32), "task": task}
    yy, xx = np.mgrid[0:H, 0:W]
    for c, cam in enumerate(spec["cameras"]):
        img = np.empty((H, W, 3), dtype=np.uint8)
        img[..., 0] = (xx * 4 + 10 * c) % 256
        img[..., 1] = (yy * 5 + 7 * episode) % 256
        img[..., 2] = 60 + 40 * c
        x0 = (4 + 2 * i + 5 * c) % (W - 12)
        y0 = (6 + i + 3 * episode) % (H - 12)
        img[y0:y0 + 12, x0:x0 + 12] = (250, 250 - 30 * c, 40)
        out[f"observation.images.{cam}"] = img
    return out


def write(name: str, spec: dict, root: Path, seed: int) -> None:
    """Record ``spec`` into ``root`` (which must not exist) with upstream's writer."""
    import numpy as np

    sys.path.insert(0, str(HERE))
    from upstream_env import load_lerobot_dataset_class

    LeRobotDataset = load_lerobot_dataset_class()
    rng = np.random.default_rng(seed)
    repo_id = f"lrtool/{name}"
    episode = 0
    for s, session in enumerate(spec["sessions"]):
        if s == 0:
            ds = LeRobotDataset.create(repo_id, spec["fps"], features(spec), root=root, robot_type="so101_follower",
                                       use_videos=spec["video"], vcodec=spec["vcodec"],
                                       image_writer_threads=4 * len(spec["cameras"]),
                                       streaming_encoding=spec.get("streaming", False))
        else:  # lerobot-record --resume=true
            ds = LeRobotDataset(repo_id, root=root, vcodec=spec["vcodec"],
                                streaming_encoding=spec.get("streaming", False))
            ds.start_image_writer(num_processes=0, num_threads=4 * len(spec["cameras"]))
        for task, n in session:
            for i in range(n):
                ds.add_frame(frame(rng, spec, episode, i, task))
            ds.save_episode()
            episode += 1
        ds.finalize()
        ds.stop_image_writer()


def run_generation(generation: str, only: list[str]) -> dict:
    """Write every selected dataset for the pandas generation running in this process; return manifest entries."""
    sys.path.insert(0, str(HERE))
    from upstream_env import stack_versions

    import pandas

    if not pandas.__version__.startswith(generation[-1]):
        raise SystemExit(f"pandas {pandas.__version__} is running, {generation} was asked for")
    entries = {}
    for base, spec in SPECS.items():
        name = f"{base}-{generation}"
        if only and not any(name.startswith(o) for o in only):
            continue
        dest = OUT / name
        with tempfile.TemporaryDirectory(prefix="lrtool-real-") as tmp:
            root = Path(tmp) / name
            write(name, spec, root, seed=sum(map(ord, base)))   # same content in both generations
            if dest.exists():
                shutil.rmtree(dest)
            shutil.copytree(root, dest)
        entries[name] = {"spec": {k: v for k, v in spec.items()}, "writer": stack_versions()}
        print(f"wrote {dest.relative_to(REPO)}", flush=True)
    return entries


def ensure_overlay() -> None:
    """Install pandas 3 into the overlay folder once (no dependencies: the environment has numpy and dateutil)."""
    if (OVERLAY / "pandas").is_dir():
        return
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--disable-pip-version-check", "--no-deps",
                    "--target", str(OVERLAY), PANDAS3], check=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--only", action="append", default=[], help="write only datasets whose name starts with this")
    ap.add_argument("--generation", choices=["pandas2", "pandas3"], help=argparse.SUPPRESS)
    args = ap.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")   # nothing here needs the Hub; never wait on it
    if args.generation:   # child process: write, print the manifest entries as JSON on the last line
        print(json.dumps(run_generation(args.generation, args.only)))
        return
    OUT.mkdir(parents=True, exist_ok=True)
    manifest_path = OUT / "manifest.json"
    manifest = json.loads(manifest_path.read_text()) if manifest_path.exists() else {}
    ensure_overlay()
    for generation in ("pandas2", "pandas3"):
        env = dict(os.environ, PYTHONHASHSEED="0")   # the writer builds stats.json from sets: stable key order
        if generation == "pandas3":
            env["PYTHONPATH"] = os.pathsep.join([str(OVERLAY), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
        only = sum((["--only", o] for o in args.only), [])
        proc = subprocess.run([sys.executable, __file__, "--generation", generation, *only], env=env,
                              stdout=subprocess.PIPE, text=True, check=True)
        lines = proc.stdout.strip().splitlines()
        print("\n".join(lines[:-1]))
        manifest.update(json.loads(lines[-1]))
    manifest_path.write_text(json.dumps(dict(sorted(manifest.items())), indent=1) + "\n")


if __name__ == "__main__":
    main()
