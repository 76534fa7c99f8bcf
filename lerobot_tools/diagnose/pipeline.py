"""Phases 2-5 of diagnose-decode (stream groups, NVDEC verdicts, decode tests, advice) and the entry point
:func:`diagnose`."""

from __future__ import annotations

import math
import shlex
import time
from pathlib import Path

from lerobot_tools.dataset.targets import merge_identical, resolve_targets
from lerobot_tools.diagnose.model import (
    ERROR,
    GOP_WARN,
    INFO,
    MAX_EXAMPLES,
    WARNING,
    SEV_ORDER,
    DatasetDiagnosis,
    DiagnoseOptions,
    Diagnosis,
    Problem,
    StreamGroup,
    parse_device,
)
from lerobot_tools.diagnose.probe import probe_targets
from lerobot_tools.errors import DatasetError, UsageError
from lerobot_tools.video.codecs import ENCODERS
from lerobot_tools.video.nvdec import AV1_CAPABLE, NO, UNKNOWN, YES, GpuSpec, NvdecVerdict, lookup_gpu, verdict


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
        cands.append(("h264", ENCODERS["h264"], "yuv420p", 8))
    cands.append(("hevc", ENCODERS["hevc"], "yuv420p10le" if hbd else "yuv420p", 10 if hbd else 8))
    if hbd:
        cands.append(("h264", ENCODERS["h264"], "yuv420p", 8))
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


def reencode_cli(root: str | None, codec: str, gpu: GpuSpec | None) -> str:
    """The ``lrtool reencode`` command that re-encodes a dataset's undecodable streams for ``gpu`` (all of them when
    ``gpu`` is None), shell-quoted."""
    cmd = ["lrtool", "reencode", root or ".", "--codec", codec]
    if gpu is not None:
        name = gpu.model or (f"cc{gpu.cc[0]}.{gpu.cc[1]}" if gpu.cc else gpu.name)
        if gpu.mig_profile:
            name = f"{name}:{gpu.mig_profile}"
        cmd += ["--only-undecodable", "--gpu", name]
    return " ".join(shlex.quote(c) for c in cmd)


def _reencode_action(dd: DatasetDiagnosis, g: StreamGroup, gpu: GpuSpec | None, video_path: str | None) -> str | None:
    plan = reencode_plan(g, gpu)
    if plan is None:
        return None
    codec, _enc, pix, _args = plan
    name = {"h264": "H.264", "hevc": "HEVC"}[codec]
    keys = g.video_keys
    n = g.files_in_keys or len(g.members)
    cmd = reencode_cli(dd.root, codec, gpu)
    g.reencode = {"codec": codec, "pix_fmt": pix, "files": n, "cwd": dd.root, "command": cmd}
    return (f"re-encode to {name} {pix} (the {n} file(s) of {', '.join(keys)}: every frame and its timestamp kept, "
            f"each file verified before it replaces the original, info.json updated, --undo), run: {cmd}")


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
    for g in dd.groups:
        first_key, first_rel = g.members[0]
        if gpu is not None:
            g.verdict = verdict(gpu, g.codec, g.chroma, g.bit_depth, g.width, g.height, g.profile, torchcodec_version)
        nframes = g.frame_count
        if options.frames > 0 and dd.root and not (Path(dd.root) / first_rel).is_file():
            dd.notes.append(f"{g.id}: no decode test ({first_rel} is not downloaded yet)")
        elif options.frames > 0 and dd.root:
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
                    dd.problems.append(Problem(
                        ERROR, "decode-failed", f"{first_key}: {first_rel} probes fine but {test.cpu.library} cannot "
                        f"decode frames: {test.cpu.error}", [first_rel],
                        action="re-download the file; if it persists, re-encode it from the source recording"))
                if test.cpu is not None and test.cpu.ms_per_frame:
                    g.cpu_workers = workers_needed(test.cpu.ms_per_frame, options.target_fps)
                if test.gpu is not None and test.gpu.error and test.path == str(Path(dd.root) / first_rel):
                    dd.problems.append(Problem(
                        ERROR, "decode-failed", f"{first_key}: decoding on {gpu_device} failed: {test.gpu.error}",
                        [first_rel], action="decode on CPU, or re-encode (see the group's actions)"))
                _apply_runtime(g, gpu_from_device)
        _advise(dd, g, gpu, options, video_path)
    # long GOP / fragmented, per group
    for g in dd.groups:
        if g.gop_max and g.gop_max > GOP_WARN:
            dd.problems.append(Problem(
                WARNING, "long-gop", f"{', '.join(g.video_keys)}: keyframes every {g.gop_max} frames (max): random-access "
                f"loading decodes up to {g.gop_max} frames per sample", [p for _, p in g.members][:MAX_EXAMPLES],
                len(g.members), action="re-encode with -g 30 or less (LeRobot encodes with -g 2) if training samples "
                                       "random frames"))
    dd.problems.sort(key=lambda p: SEV_ORDER.get(p.severity, 3))


def _advise(dd: DatasetDiagnosis, g: StreamGroup, gpu: GpuSpec | None, options: DiagnoseOptions,
            video_path: str | None) -> None:
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
        dd.problems.append(Problem(
            WARNING, "nvdec-unsupported", f"{keys} ({g.format}): will decode on CPU, not NVDEC, on {gpu.label}: "
            f"{v.reason}", paths, count, action=" | ".join(g.actions)))
    elif v.decodable == UNKNOWN:
        g.actions.append(cost)
        dd.problems.append(Problem(
            INFO, "nvdec-unknown", f"{keys} ({g.format}): NVDEC support on {gpu.label} unknown: {v.reason}", paths,
            count, action=cost))
    elif v.library_note:
        g.actions.append(cost)
        g.actions.append(v.library_note)
        re_enc = _reencode_action(dd, g, gpu, video_path)
        if re_enc:
            g.actions.append(re_enc)
        dd.problems.append(Problem(
            WARNING, "library-fallback", f"{keys} ({g.format}): NVDEC on {gpu.label} can decode it, but "
            f"{v.library_note}", paths, count, action=" | ".join(g.actions)))


# ----------------------------------------------------------------------------------------------


def diagnose(target_args: list[str], options: DiagnoseOptions | None = None, *, jobs: int = 1,
             progress: bool | None = None) -> Diagnosis:
    """Diagnose decoding for TARGET arguments (folders, repo ids, mixture files).

    Returns:
        A :class:`Diagnosis`; :attr:`Diagnosis.exit_status` is the CLI exit status.

    Raises:
        UsageError: bad ``device`` or ``frames``/``target_fps``, unknown ``gpu`` model, unreadable mixture file.
    """
    options = options or DiagnoseOptions()
    check_options(options)
    targets = merge_identical(resolve_targets(list(target_args)))  # identical mixture entries: decoded once
    t0 = time.perf_counter()
    datasets = probe_targets(targets, options.all_files, jobs=jobs, progress=progress)
    return analyze(datasets, options, t0=t0)


def check_options(options: DiagnoseOptions) -> None:
    """Raise :class:`UsageError` for a bad ``device``, ``frames``, ``target_fps`` or an unknown ``gpu`` model."""
    parse_device(options.device)
    if options.frames < 0:
        raise UsageError("--frames must be >= 0")
    if not (isinstance(options.target_fps, (int, float)) and math.isfinite(options.target_fps)
            and options.target_fps > 0):
        raise UsageError(f"--target-fps must be a finite number > 0, got {options.target_fps!r}")
    if options.gpu:
        lookup_gpu(options.gpu)


def analyze(datasets: list[DatasetDiagnosis], options: DiagnoseOptions, *, t0: float | None = None) -> Diagnosis:
    """Phases 2-5 over datasets probed by :func:`probe_targets` (here or elsewhere): the environment of this
    machine, the GPU verdicts are for, stream groups, decode tests and advice.

    Raises:
        UsageError: as :func:`check_options`.
    """
    t0 = time.perf_counter() if t0 is None else t0
    kind, index = parse_device(options.device)
    spec = lookup_gpu(options.gpu) if options.gpu else None

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
