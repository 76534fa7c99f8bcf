"""Options and results of ``lrtool smoke`` (:class:`SmokeOptions`, :class:`SmokeReport` and its parts) and
which validate findings do not stop it (:data:`TOLERATED`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import IO, Any

from lerobot_tools.report import DatasetReport, Finding


#: Error-severity checks the bundled loaders do not depend on or tolerate: they do not stop the smoke run
#: (the loaders read only the files the metadata references, map rows by episode runs rather than
#: ``dataset_from_index`` or totals, read every tasks.parquet form, and load samples without a task
#: when a label is missing, which the task check then reports). Statistics (G003-G006) are read by
#: normalisation only, which the bundled loaders do not do: a statistics inconsistency never stops loading.
TOLERATED = {"T002", "T003", "T004", "T006", "T007", "C001", "C002", "C006", "F003", "G003", "G004", "G005", "G006",
             "M003"}

#: Order checks (ranks, same seed) are skipped above this many frames (they enumerate every position).
ORDER_CHECK_MAX_FRAMES = 2_000_000


@dataclass
class SmokeOptions:
    """Options of ``lrtool smoke``.

    Attributes:
        loaders: ``("map", "stream")`` or one of them.
        batches: batches per loader run (N).
        batch_size: samples per batch (B).
        num_workers: DataLoader worker processes (W).
        world_size: simulated ranks for the disjoint/covering check (R).
        seed: shuffle seed.
        pool_size: episodes interleaved by the stream.
        epoch_max_frames: the full-epoch check runs only on datasets up to this many (selected) frames.
        tolerance_s: video timestamp tolerance in seconds.
        cache_dir: ``datasets`` Arrow cache folder (None = datasets default).
    """

    loaders: tuple[str, ...] = ("map", "stream")
    batches: int = 10
    batch_size: int = 8
    num_workers: int = 0
    world_size: int = 2
    seed: int = 0
    pool_size: int = 8
    epoch_max_frames: int = 20_000
    tolerance_s: float = 1e-4
    cache_dir: str | None = None


@dataclass
class CheckResult:
    """One smoke check: ``ok`` True (passed), False (failed) or None (not run, ``detail`` says why)."""

    name: str
    ok: bool | None
    detail: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {"check": self.name, "status": {True: "pass", False: "fail", None: "skipped"}[self.ok],
                "detail": self.detail}


@dataclass
class LoaderRun:
    """Measurements and checks of one loader run through a DataLoader.

    Times in seconds, rates per second, RSS in bytes.
    """

    loader: str
    batches: int = 0
    samples: int = 0
    decoded_frames: int = 0
    seconds: float = 0.0
    first_batch_s: float | None = None
    samples_per_s: float | None = None
    decoded_frames_per_s: float | None = None
    p50_ms: float | None = None
    p95_ms: float | None = None
    p99_ms: float | None = None
    peak_rss_bytes: int | None = None
    peak_pss_bytes: int | None = None
    checks: list[CheckResult] = field(default_factory=list)
    error: str | None = None

    def to_dict(self) -> dict[str, Any]:
        d = {k: v for k, v in self.__dict__.items() if k != "checks"}
        for k in ("seconds", "first_batch_s", "samples_per_s", "decoded_frames_per_s", "p50_ms", "p95_ms", "p99_ms"):
            if d[k] is not None:
                d[k] = round(d[k], 4)
        d["checks"] = [c.to_dict() for c in self.checks]
        return d


class SmokeOutcome:
    """The verdict both smoke reports share (:class:`SmokeReport` for one dataset, ``MixtureSmokeReport`` for a
    mixture): a subclass has the fields ``blocked``, ``error``, ``runs``, ``checks``, ``warnings``,
    ``peak_rss_bytes``, ``peak_pss_bytes`` and ``seconds``, and may add failure causes in :meth:`_also_failed`."""

    @property
    def all_checks(self) -> list[CheckResult]:
        return self.checks + [c for r in self.runs for c in r.checks]

    @property
    def failed(self) -> bool:
        return (bool(self.blocked) or self.error is not None or any(r.error for r in self.runs)
                or any(c.ok is False for c in self.all_checks) or self._also_failed())

    def _also_failed(self) -> bool:
        return False

    @property
    def status(self) -> str:
        """``"blocked"`` (validate found an error the loaders would hit), ``"fail"`` or ``"pass"``."""
        if self.blocked:
            return "blocked"
        return "fail" if self.failed else "pass"

    def _measures(self) -> dict[str, Any]:
        """The tail of :meth:`to_dict` both reports share: warnings, peak memory (bytes), seconds."""
        return {"warnings": self.warnings, "peak_rss_bytes": self.peak_rss_bytes,
                "peak_pss_bytes": self.peak_pss_bytes, "seconds": round(self.seconds, 3)}


@dataclass
class SmokeReport(SmokeOutcome):
    """Everything the smoke test found about one target."""

    target: str
    root: str | None
    codebase_version: str | None
    validate: DatasetReport
    blocked: list[Finding] = field(default_factory=list)
    episodes: int | None = None
    frames: int | None = None
    video_keys: list[str] = field(default_factory=list)
    runs: list[LoaderRun] = field(default_factory=list)
    checks: list[CheckResult] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    error: str | None = None
    peak_rss_bytes: int | None = None
    peak_pss_bytes: int | None = None
    seconds: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        return {
            "target": self.target, "root": self.root, "codebase_version": self.codebase_version,
            "status": self.status, "error": self.error,
            "validate": self.validate.to_dict(),
            "episodes": self.episodes, "frames": self.frames, "video_keys": self.video_keys,
            "checks": [c.to_dict() for c in self.checks],
            "loaders": [r.to_dict() for r in self.runs],
            **self._measures(),
        }


@dataclass
class SmokeRun:
    """What ``lrtool smoke`` ends with (:class:`lerobot_tools.exitcodes.CommandResult`): one
    :class:`SmokeReport` per target."""

    reports: list[SmokeReport]

    @property
    def exit_status(self) -> int:
        """0 when every target passed, else 1."""
        from lerobot_tools.smoke.render import exit_status

        return exit_status(self.reports)

    def to_dict(self) -> dict[str, Any]:
        """The JSON document (:func:`lerobot_tools.smoke.render.to_dict`)."""
        from lerobot_tools.smoke.render import to_dict

        return to_dict(self.reports)

    def render_text(self, out: IO[str], *, color: bool = False) -> None:
        """The human report (:func:`lerobot_tools.smoke.render.render_text`; no colours)."""
        from lerobot_tools.smoke.render import render_text

        render_text(self.reports, out)
