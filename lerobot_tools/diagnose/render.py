"""Text and JSON reports of a :class:`~lerobot_tools.diagnose.model.Diagnosis`.

The functions read the model's objects (:mod:`lerobot_tools.diagnose.model`) by attribute and import nothing from it:
the model imports this module lazily to render itself, so the two do not import each other.
"""


from __future__ import annotations

from typing import IO, Any

from lerobot_tools._safeout import sgr
from lerobot_tools.findings import ERROR, INFO, WARNING
from lerobot_tools.video.nvdec import NO, UNKNOWN, YES


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


def render_text(diag: Any, out: IO[str], *, color: bool = False) -> None:
    """Human report: environment, target GPU, per dataset its stream groups, verdicts, costs, problems and actions."""
    def paint(text: str, sev: str) -> str:
        if not color:
            return text
        code = {ERROR: "31", WARNING: "33", INFO: "36"}.get(sev, "0")
        return f"{sgr(out, code)}{text}{sgr(out, '0')}"

    _render_header(diag, out)
    if diag.environment is not None:
        _render_environment(diag.environment, out)
    if diag.device_problem:
        out.write(f"\n{paint('error', ERROR)}   {diag.device_problem}\n")
        if diag.datasets:
            out.write("        (the CPU probe below is complete)\n")
    for dd in diag.datasets:
        _render_dataset(diag, dd, out, paint)
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


def _render_header(diag: Any, out: IO[str]) -> None:
    o = diag.options
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


def _render_environment(env: Any, out: IO[str]) -> None:
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


def _render_dataset(diag: Any, dd: Any, out: IO[str], paint) -> None:
    version = f" ({dd.codebase_version})" if dd.codebase_version else ""
    where = f"  [{dd.source}]" if dd.source else ""
    out.write(f"\n{dd.target}{version}{where}\n")
    if dd.root and dd.root != dd.target:
        out.write(f"  root: {dd.root}\n")
    for c in dd.causes:
        out.write(f"  {paint('cause', ERROR)}: {c.line()}\n")
    for g in dd.groups:
        _render_stream_group(diag, dd, g, out, paint)
    for p in dd.problems:
        if p.kind in ("nvdec-unsupported", "library-fallback", "nvdec-unknown"):
            continue  # shown with its stream group above
        more = ""
        if p.count > 1 and p.group is None:  # a grouped problem's message already counts its files
            more = f" ({p.count} files; e.g. {', '.join(p.paths)})"
        where = f" {p.paths[0]}" if p.count == 1 and p.paths else ""
        out.write(f"  {paint(f'{p.severity:<7}', p.severity)} {p.check or p.kind}{where}: {p.message}{more}\n")
        if p.action:
            out.write(f"          fix: {p.action}\n")
    for n in dd.notes:
        out.write(f"  note: {n}\n")
    if not dd.groups and not dd.problems and not dd.error:
        out.write("  nothing to decode\n")


def _render_stream_group(diag: Any, dd: Any, g: Any, out: IO[str], paint) -> None:
    o = diag.options
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


def summary_line(diag: Any) -> str:
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


def render_json(diag: Any, out: IO[str]) -> None:
    """One JSON document (:meth:`Diagnosis.to_dict`) on ``out``."""
    import json

    json.dump(diag.to_dict(), out, indent=2, ensure_ascii=False, default=str)
    out.write("\n")
