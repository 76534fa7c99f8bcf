"""Load two dataset folders with upstream lerobot's ``LeRobotDataset`` and compare every sample.

Run with ``.venv-lerobot/bin/python`` (see ``scripts/install.sh``)::

    .venv-lerobot/bin/python scripts/upstream_compare.py ORIGINAL OTHER [ORIGINAL OTHER ...]

Both folders are opened exactly as training opens a local dataset (``LeRobotDataset(repo_id, root=folder)``,
lerobot 0.4.4, its default video backend: torchcodec when installed). Every index ``0..len-1`` of both is read and
each sample's keys compared: tensors by dtype, shape and exact values (decoded video frames included, as float32
in [0, 1] with shape (C, H, W)), other values (the task string) by equality. Prints one JSON line per pair,
``{"original": ..., "other": ..., "frames": N, "keys": [...], "mismatches": [...], "identical": bool}``, or
``{"original": ..., "other": ..., "error": "..."}`` when a folder cannot be loaded; exits 0 when every pair is
identical, 1 otherwise. Several pairs share one process (importing lerobot costs seconds). The Hub is never
contacted (``HF_HUB_OFFLINE=1``).
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

os.environ["HF_HUB_OFFLINE"] = "1"
sys.path.insert(0, str(Path(__file__).resolve().parent))

from upstream_env import load_lerobot_dataset_class  # noqa: E402


def _differs(a, b) -> str | None:
    """Why two sample values differ (None when equal)."""
    import torch

    if isinstance(a, torch.Tensor) or isinstance(b, torch.Tensor):
        if not (isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor)):
            return f"{type(a).__name__} vs {type(b).__name__}"
        if a.dtype != b.dtype or a.shape != b.shape:
            return f"{a.dtype}{tuple(a.shape)} vs {b.dtype}{tuple(b.shape)}"
        if not torch.equal(a, b):
            diff = (a.double() - b.double()).abs().max().item() if a.is_floating_point() else "values"
            return f"values differ (max abs diff {diff})"
        return None
    return None if a == b else f"{a!r} vs {b!r}"


def compare(original: Path, other: Path, max_report: int = 10) -> dict:
    LeRobotDataset = load_lerobot_dataset_class()
    try:
        a = LeRobotDataset("local/original", root=original)
        b = LeRobotDataset("local/other", root=other)
    except Exception as exc:  # noqa: BLE001 - reported, the caller decides
        return {"error": f"{type(exc).__name__}: {exc}"}
    mismatches: list[str] = []
    if len(a) != len(b):
        mismatches.append(f"length {len(a)} vs {len(b)}")
    keys: set[str] = set()
    for i in range(min(len(a), len(b))):
        sa, sb = a[i], b[i]
        keys |= set(sa)
        if set(sa) != set(sb):
            mismatches.append(f"frame {i}: keys {sorted(set(sa) ^ set(sb))} not in both")
            continue
        for k in sorted(sa):
            why = _differs(sa[k], sb[k])
            if why:
                mismatches.append(f"frame {i} {k}: {why}")
    return {"frames": len(a), "keys": sorted(keys), "mismatches": mismatches[:max_report],
            "mismatch_count": len(mismatches), "identical": not mismatches}


def main() -> None:
    args = sys.argv[1:]
    if not args or len(args) % 2:
        sys.exit("usage: .venv-lerobot/bin/python scripts/upstream_compare.py ORIGINAL OTHER [ORIGINAL OTHER ...]")
    ok = True
    for original, other in zip(args[::2], args[1::2]):
        result = {"original": original, "other": other, **compare(Path(original), Path(other))}
        ok = ok and result.get("identical", False)
        print(json.dumps(result), flush=True)
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
