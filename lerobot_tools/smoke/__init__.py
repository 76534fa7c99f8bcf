"""``lrtool smoke``: load a dataset the way training will, check what comes out, and measure it.

For each target (a dataset folder, a repo id in the local caches, or each entry of a mixture, with its
episode subset):

1. **Validate first.** The foundation's validate runs on the target. Errors that would break loading
   (missing or LFS-pointer videos, unreadable parquet, drifted schema...; every error-severity check
   except :data:`TOLERATED` ones) stop the smoke test for that target and are reported exactly as
   ``lrtool validate`` reports them, instead of a DataLoader worker traceback.
2. **Run the loaders** (``map``: :class:`FrameDataset` + :class:`EpisodeAwareSampler`; ``stream``:
   :class:`EpisodeShuffleStream`) through a torch ``DataLoader`` for N batches, and check that every key
   has the dtype and shape ``info.json`` declares, every video key decodes, every task string
   resolves, and the batches arrive in the planned order with each sample taken from the episode and
   frame the index says.
3. **Order checks** (no decoding): a full epoch of a small dataset read through the DataLoader (parquet
   columns only) covers every frame exactly once; ``world_size`` simulated ranks are disjoint and cover
   the data; two samplers/streams with the same seed give the same order (and another seed another).
4. **Measure**: samples/s and decoded frames/s (steady state, after the first batch), first-batch
   latency (includes starting the workers), p50/p95/p99 batch latency, and the peak RSS of the whole
   process tree (workers included), sampled by a psutil thread every 20 ms.

Exit status (:func:`exit_status`): 0 all checks passed, 1 a check failed or validate found blocking
errors, 2 the smoke test could not run (e.g. torch missing; raised as :class:`~lerobot_tools.errors.UsageError`).

Modules: :mod:`.model` (options and results), :mod:`.monitor` (process-tree RSS), :mod:`.pipeline` (loader
runs, checks, :func:`smoke`), :mod:`.render` (exit status and reports).
"""

from lerobot_tools.smoke.model import (
    CheckResult,
    LoaderRun,
    ORDER_CHECK_MAX_FRAMES,
    SmokeOptions,
    SmokeReport,
    SmokeRun,
    TOLERATED,
)
from lerobot_tools.smoke.monitor import RssMonitor
from lerobot_tools.smoke.pipeline import LoaderFailed, loader_error_line, smoke, smoke_target
from lerobot_tools.smoke.render import exit_status, render_json, render_text

__all__ = [
    "CheckResult",
    "LoaderFailed",
    "LoaderRun",
    "ORDER_CHECK_MAX_FRAMES",
    "RssMonitor",
    "SmokeOptions",
    "SmokeReport",
    "SmokeRun",
    "TOLERATED",
    "exit_status",
    "loader_error_line",
    "render_json",
    "render_text",
    "smoke",
    "smoke_target",
]
