"""Import upstream lerobot's dataset code in the side environment ``.venv-lerobot`` (see ``scripts/install.sh``).

Run with ``.venv-lerobot/bin/python``; never imported by lrtool itself. ``python scripts/upstream_env.py --check``
imports ``LeRobotDataset`` and prints the versions of the stack as JSON.

Why a helper is needed: ``lerobot.datasets.video_utils`` (lerobot 0.4.4) runs ``import torchvision`` at import time,
and ``lerobot.datasets.utils`` imports ``torchvision.transforms`` (``ToTensor`` for image features). PyPI's Linux
torchvision wheels are CUDA builds; beside the CPU build of torch their C++ extension ``torchvision/_C.so`` cannot
load (it links ``libtorch_cuda.so``). torchvision tolerates that for every operator except two:
``torchvision/_meta_registrations.py`` calls ``torch.library.register_fake("torchvision::nms")`` and
``("torchvision::qnms")`` unconditionally, which raises ``RuntimeError: operator torchvision::nms does not exist``.
:func:`load_lerobot_dataset_class` declares the schemas of those two operators (as torchvision's
``csrc/ops/nms.cpp`` declares them) when, and only when, ``_C.so`` cannot be loaded, so the import succeeds. Nothing
here gives them a kernel: calling ``torchvision.ops.nms`` still raises, and lerobot's dataset reader and writer never
call it (they use torchcodec or PyAV for video and ``ToTensor``, pure Python, for images).
"""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

_TORCHVISION_SCHEMAS = {
    "nms": "nms(Tensor dets, Tensor scores, float iou_threshold) -> Tensor",
    "qnms": "qnms(Tensor dets, Tensor scores, float iou_threshold) -> Tensor",
}


def _declare_torchvision_ops_if_needed() -> bool:
    """Declare ``torchvision::nms``/``qnms`` when torchvision's C++ extension cannot load; True if it did.

    Loading ``_C.so`` first (``torch.ops.load_library``) is what torchvision itself does; when that works the real
    schemas exist and nothing is declared (declaring them twice would make the later load fail).
    """
    import torch

    spec = importlib.util.find_spec("torchvision")
    if spec is None or not spec.submodule_search_locations:
        return False
    lib = next(iter(Path(spec.submodule_search_locations[0]).glob("_C*.so")), None)
    if lib is not None:
        try:
            torch.ops.load_library(str(lib))
            return False
        except OSError:
            pass
    for name, schema in _TORCHVISION_SCHEMAS.items():
        if not _op_exists(name):
            torch.library.define(f"torchvision::{name}", schema[len(name):])
    return True


def _op_exists(name: str) -> bool:
    import torch

    try:
        getattr(torch.ops.torchvision, name)
        return True
    except (AttributeError, RuntimeError):
        return False


def load_lerobot_dataset_class():
    """Return upstream ``lerobot.datasets.lerobot_dataset.LeRobotDataset`` (lerobot 0.4.4), importable on CPU torch.

    Raises ImportError when lerobot is not installed in the running interpreter.
    """
    _declare_torchvision_ops_if_needed()
    from lerobot.datasets.lerobot_dataset import LeRobotDataset

    return LeRobotDataset


def stack_versions() -> dict[str, str]:
    """Versions of the packages that shape what the writer produces (recorded next to the fixtures)."""
    from importlib.metadata import version

    names = ["lerobot", "torch", "torchvision", "torchcodec", "datasets", "huggingface_hub", "pandas", "pyarrow",
             "numpy", "av", "pillow"]
    out = {}
    for n in names:
        try:
            out[n] = version(n)
        except Exception:  # noqa: BLE001 - a missing package is recorded as such
            out[n] = "missing"
    import av

    out["libavcodec (PyAV)"] = ".".join(str(x) for x in av.library_versions.get("libavcodec", ()))
    return out


if __name__ == "__main__":
    if sys.argv[1:] != ["--check"]:
        sys.exit("usage: .venv-lerobot/bin/python scripts/upstream_env.py --check")
    load_lerobot_dataset_class()
    print(json.dumps(stack_versions(), indent=1))
