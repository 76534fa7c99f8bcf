"""Read sampled frames of dataset folders with upstream lerobot's ``LeRobotDataset`` and save the decoded images.

Run with ``.venv-lerobot/bin/python`` (see ``scripts/install.sh``)::

    .venv-lerobot/bin/python scripts/upstream_frames.py OUT_DIR FOLDER[:i,j,k] [FOLDER[:...] ...]

Each folder is opened as training opens a local dataset (``LeRobotDataset(repo_id, root=folder)``, lerobot 0.4.4,
its default video backend: torchcodec when installed). For each index given (default: every index) the sample is
read and every camera's frame saved as uint8 ``(H, W, 3)`` in ``OUT_DIR/<n>.npz`` (``n`` the folder's position on
the command line), keys ``<index>|<camera>``, with its ``episode_index`` and ``frame_index`` under
``<index>|episode_index`` / ``<index>|frame_index``. An index whose read raises is recorded as
``{"index": i, "error": "FrameTimestampError: ..."}`` in the JSON line printed per folder:
``{"folder": ..., "out": ..., "read": N, "errors": [...]}`` (or ``{"folder": ..., "error": ...}`` when the folder does
not load). The caller (the main environment) reads the frames back and checks them. The Hub is never contacted.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

os.environ["HF_HUB_OFFLINE"] = "1"
sys.path.insert(0, str(Path(__file__).resolve().parent))

from upstream_env import load_lerobot_dataset_class  # noqa: E402


def read(folder: Path, indices: list[int] | None, out: Path) -> dict:
    import numpy as np

    LeRobotDataset = load_lerobot_dataset_class()
    try:
        ds = LeRobotDataset("local/frames", root=folder)
    except Exception as exc:  # noqa: BLE001 - reported, the caller decides
        return {"error": f"{type(exc).__name__}: {exc}"}
    cams = list(ds.meta.camera_keys)
    arrays: dict[str, np.ndarray] = {}
    errors = []
    for i in indices if indices is not None else range(len(ds)):
        try:
            item = ds[i]
        except Exception as exc:  # noqa: BLE001 - FrameTimestampError, IndexError: recorded per index
            errors.append({"index": i, "error": f"{type(exc).__name__}: {str(exc).splitlines()[0][:300]}"})
            continue
        for cam in cams:
            img = item[cam]
            arrays[f"{i}|{cam}"] = (img.permute(1, 2, 0).clamp(0, 1).numpy() * 255).round().astype(np.uint8)
        arrays[f"{i}|episode_index"] = np.asarray(int(item["episode_index"]))
        arrays[f"{i}|frame_index"] = np.asarray(int(item["frame_index"]))
    np.savez(out, **arrays)
    return {"read": sum(1 for k in arrays if k.endswith("|episode_index")), "errors": errors}


def main() -> None:
    args = sys.argv[1:]
    if len(args) < 2:
        sys.exit("usage: .venv-lerobot/bin/python scripts/upstream_frames.py OUT_DIR FOLDER[:i,j,k] ...")
    out_dir = Path(args[0])
    out_dir.mkdir(parents=True, exist_ok=True)
    for n, spec in enumerate(args[1:]):
        folder, _, idx = spec.partition(":")
        indices = [int(x) for x in idx.split(",")] if idx else None
        out = out_dir / f"{n}.npz"
        print(json.dumps({"folder": folder, "out": str(out), **read(Path(folder), indices, out)}), flush=True)


if __name__ == "__main__":
    main()
