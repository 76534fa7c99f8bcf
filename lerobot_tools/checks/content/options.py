"""The thresholds of the episode content checks (family Q), with the evidence each default comes from.

Every threshold is a ratio to a scale the data sets itself (the episode's own step sizes, the dataset's typical
per-episode range of the dimension), so one default fits joints in degrees, in radians and grippers in 0..1.
The defaults were set on the distributions measured on real data, recorded in docs/curation.md#evidence: 12
real published datasets (SO-100/SO-101 arms, Unitree G1, Reachy 2, a humanoid and an arm in Isaac Sim, Push-T,
an MPC single integrator; 1 to 100 episodes each, 12 to 36,000 frames) and the 12 datasets written by upstream
lerobot 0.4.4 in ``fixtures/real``. On them the warnings flag only what the evidence names as recording faults (one
dataset frozen throughout, three glitching episodes of another) and nothing on ``fixtures/real``; the planted
defects of ``benchmarks/bench_curation.py`` are all found. Peer tools' thresholds are quoted beside each (rdq 0.3.4
``rdq/checks.py`` ``Thresholds``; lerobot-doctor 0.2.0 ``lerobot_doctor/checks/*.py``; kalanos 0.8.2
``kalanos/assets/policies/default.yaml``; all on PyPI).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, fields

from lerobot_tools.errors import UsageError

#: The action chunk of the common policies (lerobot ``src/lerobot/policies/*/configuration_*.py``): pi0, pi0.5,
#: pi0-FAST and SmolVLA ``chunk_size = 50`` (also openpi ``src/openpi/models/pi0_config.py`` ``action_horizon
#: 50``); ACT ``chunk_size = 100``; GR00T N1.7 in lerobot >= 0.6 ``chunk_size = 40``; Diffusion ``horizon = 64``
#: since lerobot 0.6 (16 before). 50 is the most common default, and the one of the VLA policies a mixture of
#: hundreds of datasets is usually pretrained for.
DEFAULT_CHUNK_SIZE = 50


@dataclass(frozen=True)
class ContentOptions:
    """Thresholds of the Q checks (``lrtool validate --deep``; the CLI option of each is named in docs/checks.md).

    Attributes:
        chunk_size: Q008: an episode with fewer frames than this is mostly padding for a policy predicting
            ``chunk_size`` actions per step (:data:`DEFAULT_CHUNK_SIZE`).
        frozen_rel: Q001/Q002: a dimension *moves* in an episode when its range exceeds this share of the
            dimension's typical range (the median over the dataset's episodes of their range). Real datasets:
            the smallest range of a dimension that moves in an episode is >= 3 % of its typical range.
        stuck_share: Q002: a dimension still in an episode is *stuck* only when it moves in at least this share
            of the dataset's episodes (a joint a task never uses is not stuck).
        idle_rel: Q003: a frame is *still* when every dimension is within this share of the episode's range of
            that dimension from the first (head) or last (tail) frame; openpi's DROID filter uses 1e-3 of the
            range per step, rdq 0.25 x the 20th percentile of step norms.
        idle_s: Q003: heads and tails of still frames at least this long (seconds) are reported as trimmable.
        spike_k: Q004: a step is a spike when it exceeds this many times the episode's robust step scale of the
            dimension (the larger of its 95th percentile and the mean of its non-zero steps; 1.5 times this in a
            dataset of fewer than 5 episodes, where the dataset's own largest steps cannot be compared)...
        spike_range: Q004: ... and this share of the dimension's typical range (rdq: 6x the jitter and 30 % of
            the range; lerobot-doctor: 8 standard deviations of the steps).
        pinned_s: Q006: a run at the dataset's observed minimum or maximum of a dimension, while other
            dimensions move, of at least this many seconds...
        pinned_share: Q006: ... and this share of the episode (lerobot-doctor warns from 50 % of samples at an
            extreme; lerobot-lint 30 %).
        lag_frames: Q007: an episode whose best action/state alignment differs from the dataset's median by more
            than this many frames (rdq: 4 frames, within +-15).
        lag_max_frames: Q007: shifts searched, +- frames.
        near_duplicate: Q009/Q010: two episodes whose shapes (16 points per dimension, each dimension scaled to
            its range) differ by at most this RMS, with ranges and means within the same share, are near
            duplicates (kalanos: RMSE 0.02 over 32 points).
    """

    chunk_size: int = DEFAULT_CHUNK_SIZE
    frozen_rel: float = 0.005
    stuck_share: float = 0.8
    idle_rel: float = 0.02
    idle_s: float = 1.0
    spike_k: float = 10.0
    spike_range: float = 0.5
    pinned_s: float = 2.0
    pinned_share: float = 0.5
    lag_frames: int = 4
    lag_max_frames: int = 15
    near_duplicate: float = 0.01

    def check(self) -> None:
        """Refuse values that would silently disable or misdirect a check.

        Raises:
            UsageError: a value is not a finite number in its range (shares in [0, 1], counts >= 1).
        """
        for f in fields(self):
            v = getattr(self, f.name)
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
                raise UsageError(f"content option {f.name} must be a finite number, got {v!r}")
            if f.name in ("chunk_size", "lag_max_frames") and (int(v) != v or v < 1):
                raise UsageError(f"content option {f.name} must be an integer >= 1, got {v!r}")
            if f.name == "lag_frames" and (int(v) != v or v < 0):
                raise UsageError(f"content option {f.name} must be an integer >= 0, got {v!r}")
            if f.name in ("frozen_rel", "stuck_share", "idle_rel", "pinned_share", "spike_range", "near_duplicate") \
                    and not 0 <= v <= 1:
                raise UsageError(f"content option {f.name} must be within [0, 1], got {v!r}")
            if f.name in ("idle_s", "pinned_s", "spike_k") and v < 0:
                raise UsageError(f"content option {f.name} must be >= 0, got {v!r}")

    def to_dict(self) -> dict:
        return asdict(self)
