"""Options and results of ``lrtool reencode`` (:func:`lerobot_tools.reencode.reencode`), and their reports."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import IO, Any

from lerobot_tools.errors import UsageError
from lerobot_tools.reencode.settings import CODECS
from lerobot_tools.reencode.transcode import DEFAULT_PSNR_FLOOR


@dataclass
class ReencodeOptions:
    """Options of ``lrtool reencode``.

    Attributes:
        codec: the codec written (``h264``, ``hevc``, ``av1``).
        device: ``cpu`` (libx264 / libx265 / libsvtav1), or ``cuda`` / ``cuda:N`` (NVENC).
        pix_fmt, gop, crf, preset: override the defaults of :mod:`lerobot_tools.reencode.settings`.
        only_undecodable: touch only the streams NVDEC on ``gpu`` cannot decode (diagnose-decode's table,
            :func:`lerobot_tools.video.nvdec.verdict`).
        gpu: the GPU model for ``only_undecodable`` (``H100``, ``A100:1g.5gb``, ``cc9.0`` ...).
        psnr_floor: the lowest PSNR (dB) a sampled frame of a new file may have against the source.
        keep_originals: move each original into ``.lrtool/reencode/`` for ``--undo`` (False: delete it once the new
            file is verified and in place).
        dry_run: plan and measure; write nothing.
        lock_timeout: seconds to wait for another lrtool run writing the same dataset.
    """

    codec: str = "h264"
    device: str = "cpu"
    pix_fmt: str | None = None
    gop: int | None = None
    crf: int | None = None
    preset: str | None = None
    only_undecodable: bool = False
    gpu: str | None = None
    psnr_floor: float = DEFAULT_PSNR_FLOOR
    keep_originals: bool = True
    dry_run: bool = False
    lock_timeout: float = 60.0

    def check(self) -> None:
        """Raise :class:`~lerobot_tools.errors.UsageError` (one line) for options that cannot work together."""
        if self.codec not in CODECS:
            raise UsageError(f"--codec must be one of {', '.join(CODECS)}, not {self.codec!r}")
        if self.only_undecodable and not self.gpu:
            raise UsageError("--only-undecodable needs --gpu MODEL (the GPU whose NVDEC decides)")
        if not (math.isfinite(self.psnr_floor) and 0 <= self.psnr_floor <= 100):
            raise UsageError(f"--psnr-floor must be between 0 and 100 dB, not {self.psnr_floor}")
        if self.gop is not None and not 1 <= self.gop <= 1000:
            raise UsageError(f"--gop must be between 1 and 1000 frames, not {self.gop}")
        if self.crf is not None and not 0 <= self.crf <= 63:
            raise UsageError(f"--crf must be between 0 and 63, not {self.crf}")
        if not (self.device == "cpu" or self.device == "cuda" or
                (self.device.startswith("cuda:") and self.device[5:].isdigit())):
            raise UsageError(f"--device must be cpu, cuda or cuda:N, not {self.device!r}")


@dataclass
class FileResult:
    """What happened to one video file.

    Attributes:
        relpath: the file, relative to the dataset root.
        video_key: its camera.
        status: ``reencoded``, ``planned`` (dry run), ``skipped`` (already in the target format, or NVDEC decodes it
            with ``--only-undecodable``), ``failed`` (the original is untouched; ``reason`` says why).
        reason: why skipped or failed.
        frames: frames in the file.
        codec_before, pix_fmt_before: the source stream.
        codec_after, pix_fmt_after: what was written.
        bytes_before, bytes_after: file sizes.
        seconds: encode + verify time.
        max_pts_diff: the largest frame-time difference found by the verification (seconds).
        min_psnr: the lowest PSNR of the sampled frames (dB; None when not measured).
        backup: where the original went (relative to the root), None when dropped.
    """

    relpath: str
    video_key: str
    status: str
    reason: str | None = None
    frames: int = 0
    codec_before: str | None = None
    pix_fmt_before: str | None = None
    codec_after: str | None = None
    pix_fmt_after: str | None = None
    bytes_before: int = 0
    bytes_after: int = 0
    seconds: float = 0.0
    max_pts_diff: float | None = None
    min_psnr: float | None = None
    backup: str | None = None


@dataclass
class DatasetResult:
    """One dataset's re-encode.

    Attributes:
        target, root, codebase_version: the dataset.
        files: per video file.
        info_updated: cameras whose ``info.json`` declaration was updated (every file of the camera done).
        error: why nothing was done to it.
        notes: remarks (stale temporary files removed, a duplicate target ...).
    """

    target: str
    root: str | None = None
    codebase_version: str | None = None
    files: list[FileResult] = field(default_factory=list)
    info_updated: list[str] = field(default_factory=list)
    error: str | None = None
    notes: list[str] = field(default_factory=list)


@dataclass
class ReencodeRun:
    """A whole ``lrtool reencode`` run (the command's result).

    Attributes:
        options: as given.
        datasets: per target.
        encoder: the encoder used (``libx264`` ...), and ``notes`` about the device (no NVENC on an H100 ...).
        seconds: wall time.
        measured_fps: a dry run's measured encode+verify rate on this machine (frames/s), from a sample.
        estimate_s: a dry run's estimated time for every planned frame at that rate and ``jobs`` workers.
    """

    options: ReencodeOptions
    datasets: list[DatasetResult] = field(default_factory=list)
    encoder: str | None = None
    notes: list[str] = field(default_factory=list)
    seconds: float = 0.0
    measured_fps: float | None = None
    estimate_s: float | None = None

    def files(self) -> list[FileResult]:
        return [f for d in self.datasets for f in d.files]

    @property
    def exit_status(self) -> int:
        """0 every file re-encoded, planned or already done; 1 a file or a dataset failed."""
        return 1 if any(d.error for d in self.datasets) or any(f.status == "failed" for f in self.files()) else 0

    def error_lines(self) -> list[str]:
        out = [f"{d.target}: {d.error}" for d in self.datasets if d.error]
        out += [f"{d.root or d.target}/{f.relpath}: {f.reason}" for d in self.datasets for f in d.files
                if f.status == "failed"]
        return out

    def to_dict(self) -> dict[str, Any]:
        """The ``--format json`` document."""
        files = self.files()
        return {
            "options": asdict(self.options),
            "encoder": self.encoder,
            "notes": self.notes,
            "datasets": [asdict(d) for d in self.datasets],
            "summary": {
                "datasets": len(self.datasets),
                "files": len(files),
                **{s: sum(1 for f in files if f.status == s) for s in ("reencoded", "planned", "skipped", "failed")},
                "frames": sum(f.frames for f in files if f.status in ("reencoded", "planned")),
                "seconds": round(self.seconds, 3),
                "measured_fps": self.measured_fps,
                "estimate_s": self.estimate_s,
            },
        }

    def render_text(self, out: IO[str], *, color: bool = False) -> None:
        from lerobot_tools.reencode.render import render_text

        render_text(self, out)
