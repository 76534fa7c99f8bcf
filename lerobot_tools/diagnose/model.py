"""Result types of ``lrtool diagnose-decode`` (:class:`Diagnosis` and its parts), its options, severities
and ``--device`` parsing."""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field
from typing import IO, Any

from lerobot_tools.errors import UsageError
from lerobot_tools.findings import MAX_EXAMPLE_PATHS
from lerobot_tools.video.nvdec import NO, UNKNOWN, YES, GpuSpec, NvdecVerdict


ERROR, WARNING, INFO = "error", "warning", "info"
SEV_ORDER = {ERROR: 0, WARNING: 1, INFO: 2}

#: Keyframe interval above which random-access training decodes many frames per sample
#: (docs/video-decoding.md#decision).
GOP_WARN = 60
DEFAULT_TARGET_FPS = 1000.0
MAX_EXAMPLES = MAX_EXAMPLE_PATHS  # example paths per grouped problem, as in validate's findings

_DEVICE_RE = re.compile(r"^(cpu|cuda)(?::(\d+))?$")


def parse_device(device: str) -> tuple[str, int | None]:
    """``"cpu"`` -> ``("cpu", None)``; ``"cuda"`` -> ``("cuda", 0)``; ``"cuda:1"`` -> ``("cuda", 1)``.

    Raises:
        UsageError: anything else.
    """
    m = _DEVICE_RE.match((device or "").strip().lower())
    if not m:
        raise UsageError(f"--device must be cpu, cuda or cuda:N, not {device!r}")
    if m.group(1) == "cpu":
        if m.group(2) is not None:
            raise UsageError(f"--device must be cpu, cuda or cuda:N, not {device!r}")
        return "cpu", None
    return "cuda", int(m.group(2) or 0)


@dataclass
class DiagnoseOptions:
    """Options of :func:`diagnose`.

    Attributes:
        device: ``"cpu"`` (probe, verdicts, CPU decode test) or ``"cuda"``/``"cuda:N"`` (also decode on that GPU).
        gpu: GPU model to give verdicts for (``"H100"``, ``"A100:1g.5gb"``, ``"cc8.6"``); None = the visible GPU.
        all_files: read the decoder header of every video file (default: first file per video feature).
        frames: K frames per decode test (0 = no decode test: header probe and table only).
        target_fps: random frames/s the CPU worker estimate is for.
        seed: seed of the random frame positions.
    """

    device: str = "cpu"
    gpu: str | None = None
    all_files: bool = False
    frames: int = 8
    target_fps: float = DEFAULT_TARGET_FPS
    seed: int = 0


@dataclass
class Mismatch:
    """A header fact that disagrees with ``meta/info.json``.

    Attributes:
        field: the info.json field (``"video.codec"``, ``"video.pix_fmt"``, ``"shape"``, ``"fps"`` ...).
        declared: what info.json says; actual: what the file header says.
    """

    field: str
    declared: Any
    actual: Any

    @property
    def message(self) -> str:
        return f"info.json says {self.field} = {self.declared} but the file is {self.actual}"

    def to_dict(self) -> dict:
        return {"field": self.field, "declared": self.declared, "actual": self.actual, "message": self.message}


@dataclass
class StreamProbe:
    """One video file whose decoder header was read.

    Attributes:
        video_key: the video feature (``observation.images.front``).
        path: file path relative to the dataset root.
        probe: the :class:`~lerobot_tools.video.probe.VideoProbe`.
        mismatches: header facts that disagree with info.json.
    """

    video_key: str
    path: str
    probe: Any
    mismatches: list[Mismatch] = field(default_factory=list)

    def to_dict(self) -> dict:
        d = {"video_key": self.video_key, "path": self.path}
        p = self.probe.to_dict()
        p.pop("path", None)
        d.update(p)
        d["mismatches"] = [m.to_dict() for m in self.mismatches]
        return d


@dataclass
class Problem:
    """Something that will make decoding fail, fall back to the CPU, or cost more than expected.

    Attributes:
        severity: ``"error"`` (exit 1), ``"warning"`` or ``"info"``.
        kind: for a file defect the catalogue name of ``check`` (``"video-file-missing"``, ``"lfs-pointer"``,
            ``"error-page"``, ``"empty-file"``, ``"video-unreadable"``, ``"video-codec-mismatch"``,
            ``"path-template"``...); otherwise ``"target"``, ``"decode-failed"``, ``"nvdec-unsupported"``,
            ``"nvdec-unknown"``, ``"library-fallback"``, ``"long-gop"``, ``"fragmented"`` or ``"probe-warning"``.
        message: one line.
        paths: up to three example paths (relative to the dataset root).
        count: how many files it stands for.
        action: what to do about it, or None.
        check: the catalogue ID of a file defect (``F002``, ``F004``-``F006``, ``F008``, ``F009``, ``I008``, or the
            target's ``M001``/``M002``), with the catalogue's severity (``docs/checks.md``); None for decode
            problems the catalogue does not cover.
        group: grouping key: problems with the same check (or kind), severity and group merge into one
            (:func:`lerobot_tools.diagnose.probe.group_problems`); not serialised.
    """

    severity: str
    kind: str
    message: str
    paths: list[str] = field(default_factory=list)
    count: int = 1
    action: str | None = None
    check: str | None = None
    group: str | None = None

    def to_dict(self) -> dict:
        d = asdict(self)
        d.pop("group")
        return d


#: File defects that leave a video unusable (counted as ``unusable_files`` in :meth:`Diagnosis.summary`).
UNUSABLE_CHECKS = frozenset({"F002", "F004", "F005", "F006", "F008", "I008"})


@dataclass
class StreamGroup:
    """Identical streams of one dataset (same codec, profile, pix_fmt, bit depth, chroma and size).

    Attributes:
        id: ``"g1"``, ``"g2"`` ... within the dataset.
        codec ... height: the shared format; fps and gop_max: of the first member (gop_max: the largest).
        members: ``(video_key, path)`` of every header-probed file in the group.
        files_in_keys: files referenced by the group's video features (header-probed or not).
        verdict: NVDEC verdict for the target GPU (None without one).
        decode: the decode test of the first member (None when not run).
        cpu_workers: CPU workers for ``target_fps`` from the measured per-frame CPU cost.
        actions: what to do, when the stream does not decode on NVDEC.
        reencode: the suggested re-encode: ``{"codec", "pix_fmt", "files", "cwd", "command"}`` (a POSIX shell
            command to run in ``cwd``, the dataset root), or None.
    """

    id: str
    codec: str | None
    profile: str | None
    pix_fmt: str | None
    bit_depth: int | None
    chroma: str | None
    width: int | None
    height: int | None
    fps: float | None = None
    gop_max: int | None = None
    frame_count: int | None = None
    members: list[tuple[str, str]] = field(default_factory=list)
    files_in_keys: int = 0
    verdict: NvdecVerdict | None = None
    decode: Any = None
    cpu_workers: int | None = None
    actions: list[str] = field(default_factory=list)
    reencode: dict | None = None

    @property
    def video_keys(self) -> list[str]:
        return sorted({k for k, _ in self.members})

    @property
    def format(self) -> str:
        """``av1 Main yuv420p (4:2:0 8-bit) 640x480``."""
        ch = {"420": "4:2:0", "422": "4:2:2", "444": "4:4:4", "gray": "4:0:0"}.get(self.chroma or "", self.chroma or "?")
        size = f"{self.width}x{self.height}" if self.width and self.height else "?x?"
        parts = [self.codec or "unknown", self.profile, self.pix_fmt, f"({ch} {self.bit_depth or '?'}-bit)", size]
        return " ".join(p for p in parts if p)

    def to_dict(self) -> dict:
        return {
            "id": self.id, "format": self.format, "codec": self.codec, "profile": self.profile,
            "pix_fmt": self.pix_fmt, "bit_depth": self.bit_depth, "chroma": self.chroma, "width": self.width,
            "height": self.height, "fps": self.fps, "gop_max": self.gop_max, "video_keys": self.video_keys,
            "files": [p for _, p in self.members], "files_in_keys": self.files_in_keys,
            "verdict": self.verdict.to_dict() if self.verdict else None,
            "decode": self.decode.to_dict() if self.decode else None,
            "cpu_workers": self.cpu_workers, "actions": self.actions, "reencode": self.reencode,
        }


@dataclass
class DatasetDiagnosis:
    """Everything diagnose-decode found about one target.

    Attributes:
        target: the TARGET as given (or mixture entry spec); source: its mixture location, if any.
        root: the dataset folder; codebase_version: from info.json.
        error: why the target could not be diagnosed at all (unresolved, no info.json ...), else None.
        video_keys: video features declared in info.json.
        files_per_key: referenced video files per feature.
        streams: header-probed files; groups: identical streams grouped.
        problems: what goes wrong, each with what to do.
        notes: remarks (subset of episodes, metadata fallback ...); seconds: probe time.
        causes: causes many files share (:class:`lerobot_tools.findings.RootCause`: Git LFS pointers of a clone
            without ``git lfs pull``, saved error pages), said once before the problems.
    """

    target: str
    source: str | None = None
    root: str | None = None
    codebase_version: str | None = None
    error: str | None = None
    video_keys: list[str] = field(default_factory=list)
    files_per_key: dict[str, int] = field(default_factory=dict)
    streams: list[StreamProbe] = field(default_factory=list)
    groups: list[StreamGroup] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    seconds: float = 0.0
    causes: list = field(default_factory=list)

    @property
    def has_errors(self) -> bool:
        return any(p.severity == ERROR for p in self.problems)

    def to_dict(self) -> dict:
        return {
            "target": self.target, "source": self.source, "root": self.root,
            "codebase_version": self.codebase_version, "error": self.error, "video_keys": self.video_keys,
            "files_per_key": self.files_per_key, "streams": [s.to_dict() for s in self.streams],
            "groups": [g.to_dict() for g in self.groups], "problems": [p.to_dict() for p in self.problems],
            "notes": self.notes, "seconds": round(self.seconds, 4),
            **({"causes": [c.to_dict() for c in self.causes]} if self.causes else {}),
        }


@dataclass
class Diagnosis:
    """The whole run: environment, target GPU, per-dataset results.

    Attributes:
        options: the :class:`DiagnoseOptions` used.
        environment: :class:`~lerobot_tools.video.environment.Environment` (None if not collected).
        gpu: the GPU verdicts are for (None when no ``--gpu`` and no GPU visible).
        gpu_note: why there are no verdicts, or where the GPU came from.
        device_problem: ``"cannot decode on the requested device cuda:0: ..."`` when ``--device cuda`` cannot
            work here (exit 1), else None.
        cuda_probe_error: what ``VideoDecoder(path, device="cuda")`` raised on a real file, if tried.
        datasets: per target.
    """

    options: DiagnoseOptions
    environment: Any = None
    gpu: GpuSpec | None = None
    gpu_note: str | None = None
    device_problem: str | None = None
    cuda_probe_error: str | None = None
    datasets: list[DatasetDiagnosis] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def exit_status(self) -> int:
        """1 when the requested device cannot decode or any dataset has an error-level problem, else 0."""
        return 1 if self.device_problem or any(d.has_errors for d in self.datasets) else 0

    def render_text(self, out: IO[str], *, color: bool = False) -> None:
        """The human report (:func:`lerobot_tools.diagnose.render.render_text`)."""
        from lerobot_tools.diagnose.render import render_text

        render_text(self, out, color=color)

    def error_lines(self) -> list[str]:
        """The one line for stderr: why the requested device cannot decode, if it cannot."""
        return [self.device_problem] if self.device_problem else []

    def summary(self) -> dict:
        """Totals: datasets, stream groups by verdict, unusable files, problems by severity, formats."""
        groups = [g for d in self.datasets for g in d.groups]
        by_verdict = {YES: 0, NO: 0, UNKNOWN: 0, "not judged": 0}
        for g in groups:
            by_verdict[g.verdict.decodable if g.verdict else "not judged"] += 1
        sev = {ERROR: 0, WARNING: 0, INFO: 0}
        unusable = 0
        for d in self.datasets:
            for p in d.problems:
                sev[p.severity] = sev.get(p.severity, 0) + 1
                video_file = bool(p.paths) and not p.paths[0].startswith("meta/")  # not an unreadable metadata file
                if (p.check in UNUSABLE_CHECKS and video_file) or p.kind == "decode-failed":
                    unusable += p.count
        formats: dict[str, dict] = {}
        for d in self.datasets:
            for g in d.groups:
                f = formats.setdefault(g.format, {"format": g.format, "datasets": 0, "files": 0,
                                                  "nvdec": g.verdict.decodable if g.verdict else None,
                                                  "cpu_ms_per_frame": None})
                f["datasets"] += 1
                f["files"] += g.files_in_keys
                if g.decode is not None and g.decode.cpu is not None and g.decode.cpu.ms_per_frame:
                    f["cpu_ms_per_frame"] = round(g.decode.cpu.ms_per_frame, 3)
        workers = [g.cpu_workers for g in groups if g.cpu_workers and (g.verdict is None or g.verdict.decodable != YES)]
        return {
            "datasets": len(self.datasets),
            "datasets_with_errors": sum(1 for d in self.datasets if d.has_errors),
            "stream_groups": len(groups),
            "nvdec": by_verdict,
            "unusable_files": unusable,
            "errors": sev[ERROR], "warnings": sev[WARNING], "infos": sev[INFO],
            "max_cpu_workers": max(workers) if workers else None,
            "target_fps": self.options.target_fps,
            "formats": sorted(formats.values(), key=lambda f: (-f["datasets"], f["format"])),
            "device_problem": self.device_problem,
            "seconds": round(self.seconds, 3),
        }

    def to_dict(self) -> dict:
        """The JSON document (docs/output.md): ``datasets``, ``summary``, ``exit_status``, then the options, the
        environment probed and the GPU the verdicts are for."""
        from lerobot_tools.exitcodes import document

        return document("diagnose-decode", [d.to_dict() for d in self.datasets], self.summary(), self.exit_status, **{
            "options": asdict(self.options),
            "environment": self.environment.to_dict() if self.environment is not None else None,
            "gpu": self.gpu.to_dict() if self.gpu else None,
            "gpu_note": self.gpu_note,
            "device_problem": self.device_problem,
            "cuda_probe_error": self.cuda_probe_error,
        })
