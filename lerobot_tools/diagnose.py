"""``diagnose-decode`` as a library: will each video stream decode on a GPU's NVDEC, or go to the CPU, and why.

Pipeline (behind ``lrtool diagnose-decode``; decision logic from lrtool's video-decode survey §6):

1. **Probe** (parallel over ``jobs`` worker processes, one target per task; PyAV only, no torch): for each
   target (folder, cached repo id, mixture entry; :func:`lerobot_tools.dataset.resolve_targets`) and each
   video feature, every referenced file is checked for presence and integrity (sniff + MP4 box walk, about
   0.1 ms per file: missing, Git LFS pointer, HTML/JSON error page, empty, truncated), and the decoder
   header (:func:`lerobot_tools.video.probe.probe_video`, no decode) is read for the first healthy file of
   each video feature, or for every file with ``all_files``. Header facts are compared with ``info.json``
   (``video.codec``, ``video.pix_fmt``, ``video.height``/``video.width``, the feature ``shape``, ``fps``).
2. **Environment** (:func:`lerobot_tools.video.environment.collect_environment`): torch/torchcodec/PyAV
   builds, FFmpeg libraries, AV1 decoders, GPUs, MIG, ``libnvcuvid``.
3. **Verdict** per group of identical streams (codec, profile, pix_fmt, bit depth, chroma, size) for the
   target GPU (``--gpu MODEL``, else the visible device): :func:`lerobot_tools.video.nvdec.verdict`.
4. **Decode test** (:mod:`lerobot_tools.video.decode`): K random frames of the group's first file on the
   CPU (per-frame cost -> CPU workers for a target frames/s) and, with ``device="cuda[:N]"``, on that GPU
   (``cpu_fallback``, GPU vs CPU frames/s). A runtime answer overrides the static table.
5. **Advice** per problem: decode on CPU (with a worker estimate), the exact ffmpeg re-encode command, or an
   AV1-capable GPU generation; re-download for missing/placeholder/truncated files.

Results are dataclasses with ``to_dict`` (JSON) and :func:`render_text`.
Exit status (:meth:`Diagnosis.exit_status`): 1 when the requested device cannot decode (no GPU, CPU-only
torch or torchcodec ...), when a target cannot be read, or when a video is missing/placeholder/truncated/
undecodable; else 0. NVDEC "not decodable" verdicts are warnings (the data still loads, on the CPU).
"""

from __future__ import annotations

import re
import shlex
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import IO, Any

from lerobot_tools.dataset.targets import Target, resolve_targets
from lerobot_tools.errors import DatasetError, UsageError
from lerobot_tools.video.nvdec import (
    AV1_CAPABLE,
    NO,
    UNKNOWN,
    YES,
    GpuSpec,
    NvdecVerdict,
    canonical_codec,
    lookup_gpu,
    verdict,
)

ERROR, WARNING, INFO = "error", "warning", "info"
_SEV_ORDER = {ERROR: 0, WARNING: 1, INFO: 2}

#: Keyframe interval above which random-access training decodes many frames per sample (survey §6.1).
GOP_WARN = 60
DEFAULT_TARGET_FPS = 1000.0
MAX_EXAMPLES = 3

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
        kind: ``"target"``, ``"missing"``, ``"placeholder"``, ``"broken"``, ``"decode-failed"``,
            ``"metadata-mismatch"``, ``"nvdec-unsupported"``, ``"nvdec-unknown"``, ``"library-fallback"``,
            ``"gpu-fallback"``, ``"long-gop"``, ``"fragmented"``, ``"probe-warning"``.
        message: one line.
        paths: up to three example paths (relative to the dataset root).
        count: how many files it stands for.
        action: what to do about it, or None.
    """

    severity: str
    kind: str
    message: str
    paths: list[str] = field(default_factory=list)
    count: int = 1
    action: str | None = None

    def to_dict(self) -> dict:
        return asdict(self)


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

    def exit_status(self) -> int:
        """1 when the requested device cannot decode or any dataset has an error-level problem, else 0."""
        return 1 if self.device_problem or any(d.has_errors for d in self.datasets) else 0

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
                if p.kind in ("missing", "placeholder", "broken", "decode-failed"):
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
        return {
            "lrtool": "diagnose-decode",
            "options": asdict(self.options),
            "environment": self.environment.to_dict() if self.environment is not None else None,
            "gpu": self.gpu.to_dict() if self.gpu else None,
            "gpu_note": self.gpu_note,
            "device_problem": self.device_problem,
            "cuda_probe_error": self.cuda_probe_error,
            "datasets": [d.to_dict() for d in self.datasets],
            "summary": self.summary(),
        }


# ----------------------------------------------------------------------------------------------
# Phase 1: probe (worker processes)
# ----------------------------------------------------------------------------------------------


def _declared_hw(feat: dict) -> tuple[int, int] | None:
    shape = feat.get("shape")
    if not (isinstance(shape, list) and len(shape) == 3 and all(isinstance(x, int) for x in shape)):
        return None
    names = feat.get("names")
    if isinstance(names, list) and names[:1] == ["channels"]:
        return shape[1], shape[2]
    return shape[0], shape[1]


def compare_with_info(feat: dict, info_fps: float | None, probe) -> list[Mismatch]:
    """Header facts of ``probe`` that disagree with the feature entry of ``info.json`` (and its ``fps``).

    Compared: ``info["video.codec"]`` (canonical names, so ``libsvtav1`` == ``av1``), ``video.pix_fmt``,
    ``video.height``/``video.width``, the feature ``shape`` (``[H, W, C]``, or ``[C, H, W]`` when ``names``
    starts with ``channels``), ``info.json`` ``fps`` and ``video.fps`` (1 % tolerance). Facts the probe
    could not read are not compared. (LeRobot v2.0 spells the dict ``video_info``.)
    """
    vinfo = feat.get("info") or feat.get("video_info") or {}
    if not isinstance(vinfo, dict):
        vinfo = {}
    out: list[Mismatch] = []
    declared = vinfo.get("video.codec")
    if declared and probe.codec and canonical_codec(declared) != probe.codec:
        out.append(Mismatch("video.codec", declared, probe.codec))
    declared = vinfo.get("video.pix_fmt")
    if declared and probe.pix_fmt and str(declared) != probe.pix_fmt:
        out.append(Mismatch("video.pix_fmt", declared, probe.pix_fmt))
    for key, actual in (("video.height", probe.height), ("video.width", probe.width)):
        v = vinfo.get(key)
        if isinstance(v, int) and actual and v != actual:
            out.append(Mismatch(key, v, actual))
    hw = _declared_hw(feat)
    if hw and probe.height and probe.width and hw != (probe.height, probe.width):
        out.append(Mismatch("shape", feat.get("shape"), f"{probe.height}x{probe.width} (HxW)"))
    for key, fps in (("fps", info_fps), ("video.fps", vinfo.get("video.fps"))):
        if isinstance(fps, (int, float)) and not isinstance(fps, bool) and fps > 0 and probe.fps:
            if abs(probe.fps - fps) > 0.01 * fps:
                out.append(Mismatch(key, fps, round(probe.fps, 3)))
    return out


def _placeholder_action(problem: str, fetch: str) -> str:
    low = problem.lower()
    if "lfs" in low:
        return f"fetch the real file: `git lfs pull` in the dataset repo, or re-download without excluding *.mp4 ({fetch})"
    if any(w in low for w in ("html", "json", "xml", "error")):
        return "re-download: the server returned an error page (check the token and rate limits)"
    return "re-download the file"


def _category(status: str, problem: str | None) -> str:
    text = (problem or status).lower()
    for word, cat in (("lfs", "Git LFS pointer"), ("html", "HTML page"), ("json", "JSON body"), ("xml", "XML body"),
                      ("empty", "empty file"), ("0 bytes", "empty file"), ("truncated", "truncated"),
                      ("no moov", "no moov box"), ("not a video", "not a video"), ("ffmpeg cannot open", "unreadable")):
        if word in text:
            return cat
    return status


def _add_grouped(problems: list[Problem], index: dict, key: tuple, make) -> None:
    """Merge problems with the same ``key``: count and up to three example paths."""
    head = index.get(key)
    new = make()
    if head is None:
        index[key] = new
        problems.append(new)
        return
    head.count += new.count
    for p in new.paths:
        if len(head.paths) < MAX_EXAMPLES:
            head.paths.append(p)


def _files_for(ds, target: Target, notes: list[str]) -> list[tuple[str, str]]:
    """``(video_key, relpath)`` of the referenced video files, honouring a mixture's episode subset."""
    try:
        files = ds.video_files()
    except DatasetError as exc:
        notes.append(f"episode metadata unreadable ({exc}); using the .mp4 files found under videos/")
        out = []
        for rel in ds.files_under("videos", ".mp4"):
            key = next((k for k in sorted(ds.video_keys, key=len, reverse=True) if f"/{k}/" in f"/{rel}"), None)
            if key:
                out.append((key, rel))
        return out
    if target.episodes is not None or target.excluded_episodes:
        want = set(target.episodes) if target.episodes is not None else None
        excl = set(target.excluded_episodes or [])
        kept = [vf for vf in files if any((want is None or e in want) and e not in excl for e in vf.episodes)]
        notes.append(f"episode subset from the mixture: {len(kept)} of {len(files)} video files")
        files = kept
    return [(vf.video_key, vf.relpath) for vf in files]


def probe_target(target: Target, all_files: bool = False) -> DatasetDiagnosis:
    """Phase 1 for one target: resolve, list video files, check every file, read headers, compare with info.json.

    Never raises for bad data: an unresolved target, a missing ``info.json`` or bad files become problems.
    Uses PyAV (when importable) and pure-Python layers only; does not import torch.
    """
    from lerobot_tools.dataset.model import Dataset
    from lerobot_tools.video.probe import probe_video, pyav_available

    t0 = time.perf_counter()
    dd = DatasetDiagnosis(target=target.spec, source=target.source,
                          root=str(target.root) if target.root else None)
    dd.notes.extend(target.notes)
    if target.error:
        dd.error = target.error
        dd.problems.append(Problem(ERROR, "target", f"cannot diagnose: {target.error}"))
        return dd
    try:
        ds = Dataset(target.root)
        dd.codebase_version = ds.codebase_version
        keys = ds.video_keys
    except DatasetError as exc:
        dd.error = str(exc)
        dd.problems.append(Problem(ERROR, "target", f"cannot diagnose: {exc}"))
        return dd
    dd.video_keys = keys
    if not keys:
        dd.notes.append("no video features in info.json: nothing to decode")
        return dd
    files = _files_for(ds, target, dd.notes)
    use_pyav = pyav_available()
    if not use_pyav:
        dd.notes.append("PyAV is not importable: headers come from the MP4 boxes only (no pix_fmt)")
    info_fps = ds.fps
    features = ds.features
    fetch = (f"`lrtool prefetch {target.repo_id}`" if target.repo_id
             else "e.g. `huggingface-cli download REPO_ID --repo-type dataset`")
    headed: set[str] = set()
    index: dict = {}
    light = 0  # healthy files checked without reading their decoder header
    for key, rel in files:
        dd.files_per_key[key] = dd.files_per_key.get(key, 0) + 1
        try:
            path = ds.path(rel)
        except DatasetError as exc:
            why = exc.message
            _add_grouped(dd.problems, index, ("broken", "path"), lambda: Problem(
                ERROR, "broken", f"video path leaves the dataset folder: {why}", [rel]))
            continue
        want_header = all_files or key not in headed
        header = use_pyav and want_header
        pr = probe_video(path, pyav=header, gop="demux" if header else "header")
        if pr.status == "missing":
            _add_grouped(dd.problems, index, ("missing", key), lambda: Problem(
                ERROR, "missing", f"{key}: video file is missing", [rel],
                action=f"re-download the dataset's videos ({fetch})"))
            continue
        if pr.status == "placeholder":
            cat = _category(pr.status, pr.problem)
            _add_grouped(dd.problems, index, ("placeholder", key, cat), lambda: Problem(
                ERROR, "placeholder", f"{key}: not a video: {pr.problem}", [rel],
                action=_placeholder_action(pr.problem or "", fetch)))
            continue
        if pr.status != "ok":
            cat = _category(pr.status, pr.problem)
            _add_grouped(dd.problems, index, ("broken", key, cat), lambda: Problem(
                ERROR, "broken", f"{key}: {pr.problem}", [rel],
                action="re-download this file (a partial download or a corrupt copy)"))
            continue
        for w in pr.warnings:
            sev = WARNING if w.startswith("truncated") else INFO
            kind = "fragmented" if w.startswith("fragmented") else "probe-warning"
            _add_grouped(dd.problems, index, ("warn", key, w.split(":")[0]), lambda: Problem(
                sev, kind, f"{key}: {w}", [rel]))
        if not want_header:
            light += 1
            continue
        headed.add(key)
        sp = StreamProbe(key, rel, pr, compare_with_info(features.get(key, {}), info_fps, pr))
        dd.streams.append(sp)
        for m in sp.mismatches:
            _add_grouped(dd.problems, index, ("mismatch", key, m.field, str(m.declared), str(m.actual)), lambda: Problem(
                WARNING, "metadata-mismatch", f"{key}: {m.message}", [rel],
                action=f"trust the file: correct features[\"{key}\"] in meta/info.json (tools and loaders that read "
                       "info.json are misled)"))
    for key in keys:
        if key not in dd.files_per_key:
            dd.notes.append(f"{key}: no video file is referenced by the episode metadata")
    if light:
        dd.notes.append(f"decoder headers read for the first healthy file of each video feature ({len(dd.streams)} "
                        f"of {len(dd.streams) + light} healthy files; the others were checked for presence and "
                        "integrity only); use --all-files to read every header")
    dd.seconds = time.perf_counter() - t0
    return dd


def _probe_one(args: tuple[Target, bool]) -> DatasetDiagnosis:
    target, all_files = args
    try:
        return probe_target(target, all_files)
    except Exception as exc:  # a bug must not take down the other 399 datasets of a mixture
        dd = DatasetDiagnosis(target=target.spec, source=target.source,
                              root=str(target.root) if target.root else None)
        dd.error = f"lrtool failed on this dataset ({type(exc).__name__}: {exc}); please report it"
        dd.problems.append(Problem(ERROR, "target", dd.error))
        return dd


def probe_targets(targets: list[Target], all_files: bool = False, jobs: int = 1,
                  progress: bool | None = None) -> list[DatasetDiagnosis]:
    """Phase 1 over many targets, in order, in ``jobs`` worker processes (0 = one per CPU; 1 = in-process).

    Workers are forked (where available) before torch is imported by the later phases.
    """
    from lerobot_tools._parallel import map_ordered

    return map_ordered(_probe_one, [(t, all_files) for t in targets], jobs=jobs, desc="probe", progress=progress)


# ----------------------------------------------------------------------------------------------
# Phases 2-5: groups, verdicts, decode tests, advice
# ----------------------------------------------------------------------------------------------


def group_streams(dd: DatasetDiagnosis) -> list[StreamGroup]:
    """Group the header-probed files of a dataset by (codec, profile, pix_fmt, bit depth, chroma, width, height)."""
    groups: dict[tuple, StreamGroup] = {}
    for sp in dd.streams:
        p = sp.probe
        key = (p.codec, p.profile, p.pix_fmt, p.bit_depth, p.chroma, p.width, p.height)
        g = groups.get(key)
        if g is None:
            count = p.frame_count
            if not count and p.duration_s and p.fps:  # no frame index (Matroska, fragmented MP4): stay inside
                count = max(1, int(p.duration_s * p.fps) - 1)
            g = StreamGroup(f"g{len(groups) + 1}", *key, fps=p.fps, gop_max=p.gop_max, frame_count=count)
            groups[key] = g
        elif p.gop_max and (g.gop_max is None or p.gop_max > g.gop_max):
            g.gop_max = p.gop_max
        g.members.append((sp.video_key, sp.path))
    for g in groups.values():
        g.files_in_keys = sum(dd.files_per_key.get(k, 0) for k in g.video_keys)
    return list(groups.values())


def _glob_for(video_path: str | None, key: str) -> str | None:
    if not video_path or not re.fullmatch(r"[\w.-]+", key):
        return None
    glob = video_path.replace("{video_key}", key)
    glob = re.sub(r"\{[^}]*\}", "*", glob)
    return glob if "*" in glob and "{" not in glob else None


def reencode_plan(g: StreamGroup, gpu: GpuSpec | None) -> tuple[str, str, str, list[str]] | None:
    """The stream format to re-encode a group to so NVDEC on ``gpu`` decodes it, or None if none would.

    Candidates, first that :func:`~lerobot_tools.video.nvdec.verdict` accepts on ``gpu`` (any when ``gpu`` is
    None): H.264 High 4:2:0 8-bit (libx264; the most portable, up to 4096x4096 before Blackwell), HEVC Main 10
    4:2:0 (libx265; keeps 10-bit, up to 8192x8192, min 144x144), HEVC Main 4:2:0 8-bit, H.264 8-bit (dropping
    10-bit). Keyframe interval: the source's (``gop_max``) when <= 60, else 30.

    Returns:
        ``(codec, encoder, pix_fmt, encoder_args)`` or None.
    """
    hbd = (g.bit_depth or 8) > 8
    cands = []
    if not hbd:
        cands.append(("h264", "libx264", "yuv420p", 8))
    cands.append(("hevc", "libx265", "yuv420p10le" if hbd else "yuv420p", 10 if hbd else 8))
    if hbd:
        cands.append(("h264", "libx264", "yuv420p", 8))
    for codec, enc, pix, depth in cands:
        if gpu is None or verdict(gpu, codec, "420", depth, g.width, g.height).decodable == YES:
            gop = g.gop_max if g.gop_max and g.gop_max <= GOP_WARN else 30
            args = ["-c:v", enc, "-preset", "medium", "-crf", "18" if enc == "libx264" else "20", "-pix_fmt", pix,
                    "-g", str(gop)]
            if enc == "libx265":
                args += ["-tag:v", "hvc1", "-x265-params", "log-level=error"]
            return codec, enc, pix, args
    return None


def reencode_command(src: str, dst: str, args: list[str], *, quoted: bool = False) -> str:
    """``ffmpeg -i SRC -map 0:v:0 ARGS -fps_mode passthrough -an -movflags +faststart DST`` for a POSIX shell.

    ``-fps_mode passthrough`` keeps every frame's timestamp (FFmpeg >= 5.1; older: ``-vsync passthrough``),
    so LeRobot's ``from_timestamp``/``to_timestamp`` stay valid in v3.0 files holding many episodes.

    Args:
        src, dst: input and output paths; shell-quoted here unless ``quoted`` (already shell words, e.g.
            ``"$f"`` inside a loop).
        args: encoder arguments (from :func:`reencode_plan`).
    """
    q = (lambda x: x) if quoted else shlex.quote
    mid = " ".join(shlex.quote(a) for a in ["-map", "0:v:0", *args, "-fps_mode", "passthrough", "-an",
                                             "-movflags", "+faststart"])
    return f"ffmpeg -i {q(src)} {mid} {q(dst)}"


def _reencode_action(dd: DatasetDiagnosis, g: StreamGroup, gpu: GpuSpec | None, video_path: str | None) -> str | None:
    plan = reencode_plan(g, gpu)
    if plan is None:
        return None
    codec, _enc, pix, args = plan
    name = {"h264": "H.264", "hevc": "HEVC"}[codec]
    keys = g.video_keys
    n = g.files_in_keys or len(g.members)
    src = g.members[0][1]
    dst = re.sub(r"\.mp4$", "", src) + f".{codec}.mp4"
    fix_meta = (f"check the new files, replace the originals and set \"video.codec\": \"{codec}\", "
                f"\"video.pix_fmt\": \"{pix}\" in the info of {', '.join(keys)} in meta/info.json")
    globs = [_glob_for(video_path, k) for k in keys] if n > 1 else [None]
    if all(globs):
        inner = reencode_command('"$f"', f'"${{f%.mp4}}.{codec}.mp4"', args, quoted=True)
        cmd = f"for f in {' '.join(globs)}; do {inner}; done"  # type: ignore[arg-type]
        where = f"all {n} files of {', '.join(keys)}"
    else:
        cmd = reencode_command(src, dst, args)
        where = f"{src}" + (f" (and likewise the other {n - 1} file(s) of {', '.join(keys)})" if n > 1 else "")
    g.reencode = {"codec": codec, "pix_fmt": pix, "files": n, "cwd": dd.root, "command": cmd}
    root = f" in {dd.root}" if dd.root else ""
    return f"re-encode to {name} {pix} ({where}; then {fix_meta}), run{root}: {cmd}"


def _gpu_advice(v: NvdecVerdict, gpu: GpuSpec) -> str | None:
    row = v.row or ""
    if gpu.mig_profile and gpu.nvdec_count == 0:
        return "use a MIG profile with NVDEC engines (a +me profile such as 1g.5gb+me, or 2g and larger)"
    if row == "av1":
        return f"or run on an AV1-capable GPU: {AV1_CAPABLE}"
    if row == "h264_hi10_422":
        return "or run on a Blackwell GPU (B200/GB200, RTX 50xx, RTX PRO 6000 Blackwell): H.264 10-bit/4:2:2"
    if row in ("hevc_444", "hevc_444_hbd"):
        return "or run on a Turing or newer GPU (T4, A10/A100, L4, H100 ...): HEVC 4:4:4"
    return None


def _apply_runtime(g: StreamGroup, gpu_from_device: bool) -> None:
    """Let the GPU decode test (torchcodec's ``cpu_fallback``) override the static verdict."""
    run = g.decode.gpu if g.decode is not None else None
    if run is None or run.error is not None or run.cpu_fallback is None or not gpu_from_device:
        return
    static = g.verdict
    if run.cpu_fallback:
        reason = f"torchcodec fell back to CPU on this GPU: {run.fallback_reason}"
        if static is not None and static.decodable == YES:
            reason += f" (the static table expected NVDEC to decode it: {static.reason})"
        g.verdict = NvdecVerdict(NO, reason, "high", "torchcodec VideoDecoder.cpu_fallback", static.row if static else None,
                                 "torchcodec NVDEC check", static.library_note if static else None)
    else:
        reason = "torchcodec decoded it on NVDEC (cpu_fallback is False)"
        if static is not None and static.decodable != YES:
            reason += f"; the static table said {static.decodable}: {static.reason}"
        g.verdict = NvdecVerdict(YES, reason, "high", "torchcodec VideoDecoder.cpu_fallback", static.row if static else None,
                                 "torchcodec NVDEC check")


def analyze_dataset(dd: DatasetDiagnosis, gpu: GpuSpec | None, options: DiagnoseOptions, *,
                    gpu_device: str | None = None, gpu_from_device: bool = False,
                    torchcodec_version: str | None = None, cache: dict | None = None) -> None:
    """Phases 3-5 for one probed dataset, in place: groups, verdicts, decode tests, problems and actions.

    Args:
        dd: from :func:`probe_target`.
        gpu: the GPU verdicts are for (None: no verdicts).
        options: frames, target_fps, seed.
        gpu_device: ``"cuda:N"`` to run the GPU decode test there (None: CPU only).
        gpu_from_device: ``gpu`` describes ``gpu_device`` itself, so a runtime ``cpu_fallback`` overrides the table.
        torchcodec_version: for the torchcodec caveats.
        cache: shared between datasets: decode tests are reused for streams with the same codec, pix_fmt,
            size and GOP (a 400-dataset mixture decodes each distinct format once).
    """
    from lerobot_tools.video.decode import decode_test, workers_needed

    cache = {} if cache is None else cache
    dd.groups = group_streams(dd)
    video_path = None
    if dd.root:
        try:
            from lerobot_tools.dataset.model import Dataset

            video_path = Dataset(dd.root).video_path
        except DatasetError:
            video_path = None
    index: dict = {}
    for g in dd.groups:
        first_key, first_rel = g.members[0]
        if gpu is not None:
            g.verdict = verdict(gpu, g.codec, g.chroma, g.bit_depth, g.width, g.height, g.profile, torchcodec_version)
        nframes = g.frame_count
        if options.frames > 0 and dd.root:
            if not nframes:
                dd.notes.append(f"{g.id}: frame count unknown (no frame index and no duration); no decode test")
            else:
                ckey = (g.codec, g.pix_fmt, g.width, g.height, g.gop_max, gpu_device)
                test = cache.get(ckey)
                if test is None or test.cpu is None or not test.cpu.ok:  # reuse only a successful measurement
                    test = decode_test(str(Path(dd.root) / first_rel), nframes, options.frames, options.seed,
                                       gpu_device=gpu_device)
                    cache[ckey] = test
                g.decode = test
                if test.cpu is not None and not test.cpu.ok and test.path == str(Path(dd.root) / first_rel):
                    _add_grouped(dd.problems, index, ("decode", first_rel), lambda: Problem(
                        ERROR, "decode-failed", f"{first_key}: {first_rel} probes fine but {test.cpu.library} cannot "
                        f"decode frames: {test.cpu.error}", [first_rel],
                        action="re-download the file; if it persists, re-encode it from the source recording"))
                if test.cpu is not None and test.cpu.ms_per_frame:
                    g.cpu_workers = workers_needed(test.cpu.ms_per_frame, options.target_fps)
                if test.gpu is not None and test.gpu.error and test.path == str(Path(dd.root) / first_rel):
                    _add_grouped(dd.problems, index, ("gpudecode", first_rel), lambda: Problem(
                        ERROR, "decode-failed", f"{first_key}: decoding on {gpu_device} failed: {test.gpu.error}",
                        [first_rel], action="decode on CPU, or re-encode (see the group's actions)"))
                _apply_runtime(g, gpu_from_device)
        _advise(dd, g, gpu, options, video_path, index)
    # long GOP / fragmented, per group
    for g in dd.groups:
        if g.gop_max and g.gop_max > GOP_WARN:
            _add_grouped(dd.problems, index, ("gop", g.id), lambda: Problem(
                WARNING, "long-gop", f"{', '.join(g.video_keys)}: keyframes every {g.gop_max} frames (max): random-access "
                f"loading decodes up to {g.gop_max} frames per sample", [p for _, p in g.members][:MAX_EXAMPLES],
                len(g.members), action="re-encode with -g 30 or less (LeRobot encodes with -g 2) if training samples "
                                       "random frames"))
    dd.problems.sort(key=lambda p: _SEV_ORDER.get(p.severity, 3))


def _advise(dd: DatasetDiagnosis, g: StreamGroup, gpu: GpuSpec | None, options: DiagnoseOptions,
            video_path: str | None, index: dict) -> None:
    v = g.verdict
    if v is None or gpu is None:
        return
    keys = ", ".join(g.video_keys)
    paths = [p for _, p in g.members][:MAX_EXAMPLES]
    count = g.files_in_keys or len(g.members)
    cpu = g.decode.cpu if g.decode is not None else None
    if cpu is not None and cpu.ok and g.cpu_workers:
        cost = (f"decode on CPU: ≈{g.cpu_workers} CPU worker(s) for {options.target_fps:g} random frames/s "
                f"({cpu.ms_per_frame:.2f} ms per random frame at {g.width}x{g.height}, GOP {g.gop_max or '?'}, "
                f"measured with {cpu.library} on 1 core; add DataLoader workers accordingly)")
    else:
        cost = "decode on CPU (cost not measured: run with --frames K to measure it)"
    if v.decodable == NO:
        g.actions.append(cost)
        re_enc = _reencode_action(dd, g, gpu, video_path)
        if re_enc and not (gpu.mig_profile and gpu.nvdec_count == 0) and "below NVDEC's minimum" not in v.reason:
            g.actions.append(re_enc)
        adv = _gpu_advice(v, gpu)
        if adv:
            g.actions.append(adv)
        _add_grouped(dd.problems, index, ("nvdec", g.id), lambda: Problem(
            WARNING, "nvdec-unsupported", f"{keys} ({g.format}): will decode on CPU, not NVDEC, on {gpu.label}: "
            f"{v.reason}", paths, count, action=" | ".join(g.actions)))
    elif v.decodable == UNKNOWN:
        g.actions.append(cost)
        _add_grouped(dd.problems, index, ("nvdec", g.id), lambda: Problem(
            INFO, "nvdec-unknown", f"{keys} ({g.format}): NVDEC support on {gpu.label} unknown: {v.reason}", paths,
            count, action=cost))
    elif v.library_note:
        g.actions.append(cost)
        g.actions.append(v.library_note)
        re_enc = _reencode_action(dd, g, gpu, video_path)
        if re_enc:
            g.actions.append(re_enc)
        _add_grouped(dd.problems, index, ("lib", g.id), lambda: Problem(
            WARNING, "library-fallback", f"{keys} ({g.format}): NVDEC on {gpu.label} can decode it, but "
            f"{v.library_note}", paths, count, action=" | ".join(g.actions)))


# ----------------------------------------------------------------------------------------------
# Entry point
# ----------------------------------------------------------------------------------------------


def diagnose(target_args: list[str], options: DiagnoseOptions | None = None, *, jobs: int = 1,
             progress: bool | None = None) -> Diagnosis:
    """Diagnose decoding for TARGET arguments (folders, repo ids, mixture files).

    Returns:
        A :class:`Diagnosis`; :meth:`Diagnosis.exit_status` gives the CLI exit status.

    Raises:
        UsageError: bad ``device`` or ``frames``/``target_fps``, unknown ``gpu`` model, unreadable mixture file.
    """
    options = options or DiagnoseOptions()
    kind, index = parse_device(options.device)
    if options.frames < 0:
        raise UsageError("--frames must be >= 0")
    if not options.target_fps or options.target_fps <= 0:
        raise UsageError("--target-fps must be > 0")
    spec = lookup_gpu(options.gpu) if options.gpu else None
    targets = resolve_targets(list(target_args))
    t0 = time.perf_counter()
    datasets = probe_targets(targets, options.all_files, jobs=jobs, progress=progress)

    from lerobot_tools.video.environment import collect_environment, cuda_decoder_error

    env = collect_environment()
    diag = Diagnosis(options=options, environment=env, datasets=datasets)
    gpu_device = f"cuda:{index}" if kind == "cuda" else None
    visible = env.device(index if index is not None else 0) or (env.gpus[0] if env.gpus else None)
    from_device = False
    if spec is not None:
        diag.gpu = spec
        diag.gpu_note = "from --gpu"
    elif visible is not None:
        diag.gpu = lookup_gpu(visible.name, origin=visible.source, cc=visible.cc, strict=False)
        diag.gpu_note = f"the GPU visible here (device {visible.index}, via {visible.source})"
        from_device = visible.source == "torch.cuda"
    else:
        diag.gpu_note = ("no GPU visible here and no --gpu MODEL given: NVDEC verdicts skipped "
                         "(e.g. --gpu H100 to check for an H100 node)")
    if kind == "cuda":
        problems = env.gpu_path_problems(index or 0)
        first = _first_stream_path(datasets)
        if first is not None and env.torchcodec.importable:
            diag.cuda_probe_error = cuda_decoder_error(first, gpu_device or "cuda")
            if diag.cuda_probe_error and "Unsupported device" in diag.cuda_probe_error:
                problems = [p for p in problems if not p.startswith("torchcodec ")]
                problems.append(f"torchcodec {env.torchcodec.version} is a CPU-only build: VideoDecoder(device="
                                f"'{gpu_device}') raises '{diag.cuda_probe_error}'")
        if diag.gpu is not None and diag.gpu.mig_profile and diag.gpu.nvdec_count == 0 and from_device:
            problems.append(f"this GPU is a MIG slice ({diag.gpu.mig_profile}) with 0 NVDEC engines")
        if problems:
            diag.device_problem = f"cannot decode on the requested device {gpu_device}: " + "; ".join(problems)
            gpu_device = None
    cache: dict = {}
    for dd in datasets:
        analyze_dataset(dd, diag.gpu, options, gpu_device=gpu_device, gpu_from_device=from_device and spec is None,
                        torchcodec_version=env.torchcodec.version, cache=cache)
    diag.seconds = time.perf_counter() - t0
    return diag


def _first_stream_path(datasets: list[DatasetDiagnosis]) -> str | None:
    for dd in datasets:
        if dd.root and dd.streams:
            return str(Path(dd.root) / dd.streams[0].path)
    return None


# ----------------------------------------------------------------------------------------------
# Reporters
# ----------------------------------------------------------------------------------------------


def _lib_line(lib) -> str:
    if not lib.importable:
        extra = f" (installed {lib.installed})" if lib.installed and lib.error != "not installed" else ""
        build = f"; {lib.build} build" if lib.build else ""
        return f"not usable: {lib.error}{extra}{build}"
    parts = [lib.version]
    if lib.build:
        parts.append(f"{lib.build.upper()} build" + (f", CUDA {lib.cuda}" if lib.cuda else ""))
    ff = lib.ffmpeg.get("ffmpeg")
    if ff:
        parts.append(f"FFmpeg {ff} (libavcodec {lib.ffmpeg.get('libavcodec', '?')})")
    return "; ".join(parts)


def render_text(diag: Diagnosis, out: IO[str], *, color: bool = False) -> None:
    """Human report: environment, target GPU, per dataset its stream groups, verdicts, costs, problems and actions."""
    def paint(text: str, sev: str) -> str:
        if not color:
            return text
        code = {ERROR: "31", WARNING: "33", INFO: "36"}.get(sev, "0")
        return f"\x1b[{code}m{text}\x1b[0m"

    o = diag.options
    env = diag.environment
    out.write(f"lrtool diagnose-decode: {len(diag.datasets)} target(s), device {o.device}, "
              f"{o.frames} frame(s) per decode test\n")
    if diag.gpu is not None:
        g = diag.gpu
        cls = f"; NVDEC class {g.class_label}" if g.class_label else ""
        cnt = f"; {g.nvdec_count} NVDEC" if g.nvdec_count is not None else ""
        out.write(f"NVDEC verdicts for: {g.label}{cls}{cnt} [{diag.gpu_note}]\n")
        for n in g.notes:
            out.write(f"  note: {n}\n")
    else:
        out.write(f"NVDEC verdicts: none — {diag.gpu_note}\n")
    if env is not None:
        out.write("\nEnvironment\n")
        ca = "" if env.cuda_available is None else f"; torch.cuda.is_available() = {env.cuda_available}"
        out.write(f"  torch         {_lib_line(env.torch)}{ca}\n")
        out.write(f"  torchcodec    {_lib_line(env.torchcodec)}\n")
        out.write(f"  PyAV          {_lib_line(env.pyav)}\n")
        av1 = "; ".join(f"{k}: {', '.join(v) if v else 'none'}" if v is not None else f"{k}: unknown"
                        for k, v in env.av1_decoders.items())
        out.write(f"  AV1 on CPU    {av1}\n")
        if env.gpus:
            for d in env.gpus:
                cc = f"compute {d.cc[0]}.{d.cc[1]}" if d.cc else "compute ?"
                mig = f", MIG {d.mig_mode}" if d.mig_mode else ""
                mig += f" ({d.mig_profile})" if d.mig_profile else ""
                out.write(f"  GPU {d.index}         {d.name} ({cc}{mig}; via {d.source})\n")
        else:
            smi = "nvidia-smi found but lists none" if env.nvidia_smi else "nvidia-smi not found"
            out.write(f"  GPUs          none visible ({smi})\n")
        nv = "loadable" if env.libnvcuvid is None else f"not loadable ({env.libnvcuvid})"
        out.write(f"  libnvcuvid    {nv}\n")
        for n in env.notes:
            out.write(f"  note: {n}\n")
    if diag.device_problem:
        out.write(f"\n{paint('error', ERROR)}   {diag.device_problem}\n")
        if diag.datasets:
            out.write("        (the CPU probe below is complete)\n")
    for dd in diag.datasets:
        version = f" ({dd.codebase_version})" if dd.codebase_version else ""
        where = f"  [{dd.source}]" if dd.source else ""
        out.write(f"\n{dd.target}{version}{where}\n")
        if dd.root and dd.root != dd.target:
            out.write(f"  root: {dd.root}\n")
        for g in dd.groups:
            keys = ", ".join(f"{k} ({dd.files_per_key.get(k, 0)} file(s))" for k in g.video_keys)
            fps = f" {g.fps:g} fps" if g.fps else ""
            gop = f" GOP {g.gop_max}" if g.gop_max else ""
            out.write(f"  stream {g.id}: {g.format}{fps}{gop} — {keys}\n")
            v = g.verdict
            if v is not None and diag.gpu is not None:
                word = {YES: "decodable", NO: "NOT decodable", UNKNOWN: "unknown"}[v.decodable]
                sev = {YES: INFO, NO: WARNING, UNKNOWN: INFO}[v.decodable]
                out.write(f"    NVDEC on {diag.gpu.model or diag.gpu.name}: {paint(word, sev)} — {v.reason} "
                          f"[{v.method}, confidence {v.confidence}]\n")
                if v.library_note and v.decodable == YES:
                    out.write(f"    torchcodec: {v.library_note}\n")
            t = g.decode
            if t is not None and t.cpu is not None:
                c = t.cpu
                if c.ok:
                    w = f" -> ≈{g.cpu_workers} worker(s) for {o.target_fps:g} frames/s" if g.cpu_workers else ""
                    out.write(f"    CPU decode: {c.frames} random frames, {c.ms_per_frame:.2f} ms/frame "
                              f"({c.fps:.0f} frames/s on 1 core, {c.library}){w}\n")
                else:
                    out.write(f"    CPU decode: failed ({c.error})\n")
            if t is not None and t.gpu is not None:
                r = t.gpu
                if r.ok:
                    fb = "" if r.cpu_fallback is None else f", cpu_fallback={r.cpu_fallback}"
                    why = f" ({r.fallback_reason})" if r.cpu_fallback else ""
                    sp = f", {t.speedup:.1f}x CPU" if t.speedup else ""
                    out.write(f"    GPU decode on {r.device}: {r.frames} frames, {r.ms_per_frame:.2f} ms/frame "
                              f"({r.fps:.0f} frames/s{sp}{fb}){why}\n")
                else:
                    out.write(f"    GPU decode on {r.device}: failed ({r.error})\n")
            if g.actions:
                out.write("    what to do:\n")
                for a in g.actions:
                    out.write(f"      - {a}\n")
        for p in dd.problems:
            if p.kind in ("nvdec-unsupported", "library-fallback", "nvdec-unknown"):
                continue  # shown with its stream group above
            more = ""
            if p.count > 1:
                more = f" ({p.count} files; e.g. {', '.join(p.paths)})"
            where = f" {p.paths[0]}" if p.count == 1 and p.paths else ""
            out.write(f"  {paint(f'{p.severity:<7}', p.severity)} {p.kind}{where}: {p.message}{more}\n")
            if p.action:
                out.write(f"          fix: {p.action}\n")
        for n in dd.notes:
            out.write(f"  note: {n}\n")
        if not dd.groups and not dd.problems and not dd.error:
            out.write("  nothing to decode\n")
    s = diag.summary()
    out.write("\n")
    if s["formats"] and len(diag.datasets) > 1:
        out.write("Formats across targets\n")
        for f in s["formats"]:
            nv = f", NVDEC: {f['nvdec']}" if f["nvdec"] else ""
            ms = f", {f['cpu_ms_per_frame']:.2f} ms/frame on CPU" if f["cpu_ms_per_frame"] else ""
            out.write(f"  {f['format']}: {f['datasets']} dataset(s), {f['files']} file(s){nv}{ms}\n")
        out.write("\n")
    out.write(summary_line(diag) + "\n")


def summary_line(diag: Diagnosis) -> str:
    """``Summary: GPU decode on H100: 1/3 stream group(s) ... ; 2 unusable file(s); 1 error(s), 2 warning(s)``."""
    s = diag.summary()
    parts = [f"{s['datasets']} dataset(s)"]
    nv = s["nvdec"]
    judged = nv[YES] + nv[NO] + nv[UNKNOWN]
    if diag.gpu is not None and judged:
        txt = f"NVDEC on {diag.gpu.model or diag.gpu.name}: {nv[YES]}/{judged} stream group(s) decodable"
        if nv[NO]:
            txt += f", {nv[NO]} go to CPU"
        if nv[UNKNOWN]:
            txt += f", {nv[UNKNOWN]} unknown"
        parts.append(txt)
    if s["max_cpu_workers"]:
        parts.append(f"CPU decode needs ≈{s['max_cpu_workers']} worker(s) per stream for {s['target_fps']:g} frames/s")
    if s["unusable_files"]:
        parts.append(f"{s['unusable_files']} unusable video file(s)")
    if diag.device_problem:
        parts.append("cannot decode on the requested device")
    parts.append(f"{s['errors']} error(s), {s['warnings']} warning(s), {s['infos']} info")
    return "Summary: " + "; ".join(parts)


def render_json(diag: Diagnosis, out: IO[str]) -> None:
    """One JSON document (:meth:`Diagnosis.to_dict`) on ``out``."""
    import json

    json.dump(diag.to_dict(), out, indent=2, ensure_ascii=False, default=str)
    out.write("\n")
