"""Bundled loaders for LeRobot datasets: the map-style :class:`FrameDataset` with its
:class:`EpisodeAwareSampler`, and the iterable :class:`EpisodeShuffleStream`.

They embody fixes large runs needed (docs/format.md#loader-assumptions; docs/failure-modes.md
(#episode-subsets, #short-video, #decoder-leaks, #per-dataset-tolerance)): rows aligned to
episodes for any episode subset, video frames located at the episode-local time with a tolerance and a
bounded decoder cache, de-duplicated warnings, shuffles whose order is a pure function of
``(seed, epoch)`` so ranks need no RNG synchronisation, O(episodes) memory, exact resume.

Example::

    from torch.utils.data import DataLoader
    from lerobot_tools.loaders import FrameDataset, EpisodeAwareSampler, collate_frames

    ds = FrameDataset("path/to/dataset", delta_timestamps={"action": [0.0, 0.1, 0.2]})
    sampler = EpisodeAwareSampler(ds, seed=0)            # rank/world_size from torch.distributed
    loader = DataLoader(ds, batch_size=32, sampler=sampler, num_workers=4, collate_fn=collate_frames)
    for epoch in range(10):
        sampler.set_epoch(epoch)
        for batch in loader:
            batch["action"]            # float32 (32, 3, action_dim)
            batch["action_is_pad"]     # bool (32, 3)

Importing this package is cheap; the names below load torch, torchcodec and datasets on first access.
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "FrameDataset": "lerobot_tools.loaders.frames",
    "LoaderWarning": "lerobot_tools.loaders.frames",
    "collate_frames": "lerobot_tools.loaders.frames",
    "FrameTimestampError": "lerobot_tools.loaders.video",
    "VideoDecodeError": "lerobot_tools.loaders.video",
    "DecoderCache": "lerobot_tools.loaders.video",
    "EpisodeAwareSampler": "lerobot_tools.loaders.sampler",
    "EpisodeShuffleStream": "lerobot_tools.loaders.stream",
    "FeistelPermutation": "lerobot_tools.loaders._feistel",
    "MixtureDataset": "lerobot_tools.loaders.mixture",
    "MixtureMember": "lerobot_tools.loaders.mixture",
    "read_mixture_members": "lerobot_tools.loaders.mixture",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'lerobot_tools.loaders' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(list(globals()) + __all__)
