"""What this machine can decode with: torch, torchcodec, PyAV, their FFmpeg libraries, AV1 decoders, GPUs.

Everything is imported lazily inside :func:`collect_environment` and guarded: a missing package, a CUDA
torchcodec wheel next to a CPU torch (``libnvrtc.so.13: cannot open shared object file``), no driver,
no ``nvidia-smi`` — each becomes a one-line ``error``/note, never a traceback. Importing this module
imports only the standard library (and :mod:`lerobot_tools.errors`).

How each fact is found (sources: docs/video-decoding.md#environment, torchcodec 0.13 sources):

* torch: ``torch.__version__``, ``torch.version.cuda`` (None on a CPU build), ``torch.cuda.is_available()``;
  per device ``get_device_name``/``get_device_capability``/``get_device_properties`` (guarded: on a CPU
  build they raise ``AssertionError: Torch not compiled with CUDA enabled``).
* torchcodec: ``torchcodec.__version__`` (``"0.13.0+cpu"`` on the CPU wheel), the FFmpeg libraries it
  loaded (``torchcodec._core.get_ffmpeg_library_versions()``), and its build: version suffix ``+cpu`` /
  ``+cuXXX``, else whether the loaded core library contains the CUDA device interface. The definitive
  signal is ``VideoDecoder(path, device="cuda")`` raising ``Unsupported device: cuda`` (see
  :func:`cuda_decoder_error`).
* PyAV: ``av.__version__``, ``av.ffmpeg_version_info``, ``av.library_versions``.
* AV1 CPU decoders: in PyAV's bundled FFmpeg (:func:`lerobot_tools.video.probe.av1_decoders`) and in the
  ``libavcodec`` torchcodec loaded (``avcodec_find_decoder_by_name`` through ctypes on the mapped library).
  FFmpeg's native ``av1`` decoder decodes only through a hwaccel, so only ``libdav1d``/``libaom-av1`` count.
* GPUs: torch.cuda, else ``nvidia-smi --query-gpu`` (10 s timeout), else NVML (``pynvml``) when installed.
  MIG: a device name containing ``MIG <profile>``, ``mig.mode.current``.
* ``libnvcuvid.so.1`` (NVDEC user-space library; mounted in containers only with
  ``NVIDIA_DRIVER_CAPABILITIES`` including ``video``): ``ctypes.CDLL``.
"""

from __future__ import annotations

import ctypes
import os
import platform
import re
import shutil
import subprocess
import sys
from dataclasses import asdict, dataclass, field

from lerobot_tools._env import nvidia_driver_capabilities
from lerobot_tools.errors import one_line

_SO_RE = re.compile(r"([\w.+-]+\.so[\w.]*): cannot open shared object file")


def one_line_error(exc: BaseException, limit: int = 220) -> str:
    """A one-line summary of an exception and its causes, preferring a missing shared library.

    E.g. a CUDA torchcodec wheel with a CPU torch gives ``"cannot load libnvrtc.so.13 (cannot open shared
    object file)"`` instead of the multi-paragraph ``RuntimeError: Could not load libtorchcodec ...``.
    """
    texts = []
    seen = set()
    e: BaseException | None = exc
    while e is not None and id(e) not in seen:
        seen.add(id(e))
        texts.append(f"{type(e).__name__}: {e}")
        e = e.__cause__ or e.__context__
    blob = "\n".join(texts)
    m = _SO_RE.search(blob)
    if m:
        return f"cannot load {m.group(1)} (cannot open shared object file)"
    first = one_line(exc, None)
    first = re.sub(r"^\S*\.cpp:\d+,\s*", "", re.sub(r"^[A-Za-z]+, /\S+\.cpp:\d+, ", "", first))
    msg = f"{type(exc).__name__}: {first}"
    return msg if len(msg) <= limit else msg[: limit - 1] + "…"


@dataclass
class LibraryInfo:
    """One library as this process sees it.

    Attributes:
        name: ``"torch"``, ``"torchcodec"``, ``"PyAV"``.
        version: ``__version__`` (None when not importable; then ``installed`` may still give the dist version).
        installed: version of the installed distribution (``importlib.metadata``), None if not installed.
        build: ``"cpu"``, ``"cuda"`` or None (unknown / not applicable).
        build_evidence: how ``build`` was decided (``"version suffix +cpu"`` ...).
        cuda: CUDA version the build targets (torch only), None for CPU builds.
        ffmpeg: FFmpeg libraries loaded: ``{"ffmpeg": "5.1.9...", "libavcodec": "59.37.100", ...}``.
        error: one-line import failure, None when it imported.
    """

    name: str
    version: str | None = None
    installed: str | None = None
    build: str | None = None
    build_evidence: str | None = None
    cuda: str | None = None
    ffmpeg: dict[str, str] = field(default_factory=dict)
    error: str | None = None

    @property
    def importable(self) -> bool:
        return self.version is not None and self.error is None

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass
class GpuDevice:
    """A GPU visible to this process.

    Attributes:
        index: CUDA device index.
        name: as the driver reports it (``"NVIDIA H100 80GB HBM3"``, MIG: ``"... MIG 1g.10gb"``).
        cc: compute capability ``(major, minor)`` or None.
        memory_gb: total memory in GiB, or None.
        mig_mode: ``"Enabled"``/``"Disabled"``/None (unknown).
        mig_profile: the MIG GPU-instance profile when this device is a MIG slice.
        source: ``"torch.cuda"``, ``"nvidia-smi"`` or ``"nvml"``.
    """

    index: int
    name: str
    cc: tuple[int, int] | None = None
    memory_gb: float | None = None
    mig_mode: str | None = None
    mig_profile: str | None = None
    source: str = "torch.cuda"

    def to_dict(self) -> dict:
        d = asdict(self)
        d["cc"] = f"{self.cc[0]}.{self.cc[1]}" if self.cc else None
        return d


@dataclass
class Environment:
    """Decode-relevant facts about this machine (see module docstring for how each is read).

    Attributes:
        python: interpreter version; platform: ``platform.platform()``.
        torch, torchcodec, pyav: :class:`LibraryInfo`.
        cuda_available: ``torch.cuda.is_available()`` (None when torch is not importable).
        av1_decoders: software AV1 decoders per library: ``{"PyAV": ["libdav1d"], "torchcodec": [...]}``
            (None for a library whose FFmpeg could not be inspected).
        gpus: visible GPUs.
        driver_version: NVIDIA driver version from nvidia-smi, if any.
        nvidia_smi: path of ``nvidia-smi`` or None.
        libnvcuvid: None when ``libnvcuvid.so.1`` loads, else the one-line reason.
        driver_capabilities: ``$NVIDIA_DRIVER_CAPABILITIES`` (containers), None if unset.
        notes: other remarks (probe failures of nvidia-smi/NVML ...).
    """

    python: str
    platform: str
    torch: LibraryInfo
    torchcodec: LibraryInfo
    pyav: LibraryInfo
    cuda_available: bool | None = None
    av1_decoders: dict[str, list[str] | None] = field(default_factory=dict)
    gpus: list[GpuDevice] = field(default_factory=list)
    driver_version: str | None = None
    nvidia_smi: str | None = None
    libnvcuvid: str | None = "not checked"
    driver_capabilities: str | None = None
    notes: list[str] = field(default_factory=list)

    def device(self, index: int) -> GpuDevice | None:
        """The visible GPU with this CUDA index, or None."""
        return next((g for g in self.gpus if g.index == index), None)

    def gpu_path_problems(self, index: int = 0) -> list[str]:
        """Why ``VideoDecoder(path, device=f"cuda:{index}")`` cannot decode on that GPU; empty when it can.

        Every failing rung is listed, in order (docs/video-decoding.md#environment): torch importable -> torch CUDA
        build -> a visible CUDA device (and index in range) -> torchcodec importable -> torchcodec CUDA build ->
        ``libnvcuvid.so.1`` loadable (without it torchcodec silently decodes on CPU).
        """
        out = []
        t, tc = self.torch, self.torchcodec
        if not t.importable:
            out.append(f"torch cannot be imported ({t.error or 'not installed'})")
        else:
            if t.build == "cpu":
                out.append(f"torch {t.version} is a CPU-only build (torch.version.cuda is None)")
            if not self.cuda_available:
                smi = [g for g in self.gpus if g.source != "torch.cuda"]
                seen = f"; nvidia-smi/NVML see {len(smi)} GPU(s)" if smi else ""
                out.append(f"no CUDA GPU is visible to torch (torch.cuda.is_available() is False{seen})")
            elif self.device(index) is None:
                n = sum(1 for g in self.gpus if g.source == "torch.cuda")
                out.append(f"cuda:{index} does not exist ({n} CUDA device(s) visible)")
        if not tc.importable:
            out.append(f"torchcodec cannot be imported ({tc.error or 'not installed'})")
        elif tc.build == "cpu":
            out.append(f"torchcodec {tc.version} is a CPU-only build (VideoDecoder(device='cuda') raises "
                       "'Unsupported device: cuda'); install the CUDA build matching torch")
        if self.cuda_available and self.libnvcuvid is not None:
            out.append(f"the NVDEC library libnvcuvid.so.1 cannot be loaded ({self.libnvcuvid}); in a container set "
                       "NVIDIA_DRIVER_CAPABILITIES=compute,utility,video (torchcodec would silently decode on CPU)")
        return out

    def to_dict(self) -> dict:
        d = asdict(self)
        d["torch"], d["torchcodec"], d["pyav"] = self.torch.to_dict(), self.torchcodec.to_dict(), self.pyav.to_dict()
        d["gpus"] = [g.to_dict() for g in self.gpus]
        return d


def _dist_version(name: str) -> str | None:
    from importlib import metadata

    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None
    except Exception:  # a broken install must not stop the report
        return None


def _torch_info(env_notes: list[str]) -> tuple[LibraryInfo, bool | None, list[GpuDevice]]:
    info = LibraryInfo("torch", installed=_dist_version("torch"))
    if info.installed is None:
        info.error = "not installed"
        return info, None, []
    try:
        import torch
    except BaseException as exc:  # noqa: BLE001 - ImportError, OSError from a broken wheel, ...
        info.error = one_line_error(exc)
        return info, None, []
    info.version = str(getattr(torch, "__version__", info.installed))
    info.cuda = getattr(torch.version, "cuda", None)
    info.build, info.build_evidence = ("cuda", f"torch.version.cuda = {info.cuda}") if info.cuda else (
        "cpu", "torch.version.cuda is None")
    if getattr(torch.version, "hip", None):
        info.build, info.build_evidence = "rocm", f"torch.version.hip = {torch.version.hip}"
    gpus: list[GpuDevice] = []
    try:
        available = bool(torch.cuda.is_available())
    except Exception as exc:
        env_notes.append(f"torch.cuda.is_available() failed: {one_line_error(exc)}")
        return info, False, []
    if available:
        try:
            for i in range(torch.cuda.device_count()):
                props = torch.cuda.get_device_properties(i)
                name = str(props.name)
                m = re.search(r"MIG\s+(?:\d+c\.)?(\d+g\.\d+gb(?:\+me)?)", name, re.IGNORECASE)
                gpus.append(GpuDevice(i, name, (int(props.major), int(props.minor)),
                                      round(props.total_memory / 2**30, 1), "Enabled" if m else None,
                                      m.group(1).lower() if m else None, "torch.cuda"))
        except Exception as exc:
            env_notes.append(f"reading CUDA device properties failed: {one_line_error(exc)}")
    return info, available, gpus


def _torchcodec_build(tc) -> tuple[str | None, str | None]:
    version = str(getattr(tc, "__version__", ""))
    if "+cpu" in version:
        return "cpu", "version suffix +cpu"
    m = re.search(r"\+(cu\d+)", version)
    if m:
        return "cuda", f"version suffix +{m.group(1)}"
    lib = getattr(tc, "core_library_path", None)
    try:
        if lib and os.path.isfile(str(lib)):
            with open(str(lib), "rb") as fh:
                data = fh.read()
            if b"CudaDeviceInterface" in data:
                return "cuda", f"{os.path.basename(str(lib))} contains the CUDA device interface"
            return "cpu", f"{os.path.basename(str(lib))} has no CUDA device interface"
    except OSError:
        pass
    return None, None


def _torchcodec_info(torch_ok: bool) -> LibraryInfo:
    info = LibraryInfo("torchcodec", installed=_dist_version("torchcodec"))
    if info.installed is None:
        info.error = "not installed"
        return info
    try:
        import torchcodec
    except BaseException as exc:  # noqa: BLE001 - RuntimeError "Could not load libtorchcodec", OSError ...
        info.error = one_line_error(exc)
        if re.search(r"libnvrtc|libcudart|libnvcuvid|libcuda\.so", str(info.error)) or re.search(
                r"libnvrtc|libcudart", _chain_text(exc)):
            info.build, info.build_evidence = "cuda", "its libraries need CUDA runtime libraries"
        if not torch_ok:
            info.error += " (torch itself cannot be imported)"
        return info
    info.version = str(getattr(torchcodec, "__version__", info.installed))
    info.build, info.build_evidence = _torchcodec_build(torchcodec)
    try:
        from torchcodec import _core

        libs = _core.get_ffmpeg_library_versions()
        for k, v in libs.items():
            info.ffmpeg["ffmpeg" if k == "ffmpeg_version" else k] = ".".join(map(str, v)) if isinstance(v, (list, tuple)) else str(v)
    except Exception as exc:
        info.ffmpeg = {}
        info.build_evidence = (info.build_evidence or "") + f"; FFmpeg versions unavailable ({one_line_error(exc)})"
    return info


def _chain_text(exc: BaseException) -> str:
    parts, e, seen = [], exc, set()
    while e is not None and id(e) not in seen:
        seen.add(id(e))
        parts.append(str(e))
        e = e.__cause__ or e.__context__
    return "\n".join(parts)


def _pyav_info() -> LibraryInfo:
    info = LibraryInfo("PyAV", installed=_dist_version("av"))
    try:
        import av
    except BaseException as exc:  # noqa: BLE001
        info.error = one_line_error(exc) if info.installed else "not installed"
        return info
    info.version = str(getattr(av, "__version__", info.installed))
    ver = getattr(av, "ffmpeg_version_info", None)
    if ver:
        info.ffmpeg["ffmpeg"] = str(ver)
    for k, v in (getattr(av, "library_versions", None) or {}).items():
        if k in ("libavcodec", "libavformat", "libavutil", "libswscale"):
            info.ffmpeg[k] = ".".join(map(str, v))
    return info


def loaded_libavcodec(major: int | None = None, exclude_substring: str | None = "av.libs") -> str | None:
    """Path of a ``libavcodec`` shared library mapped into this process (Linux ``/proc/self/maps``).

    Args:
        major: wanted soname major version (e.g. 59 for FFmpeg 5.1), None for any.
        exclude_substring: skip paths containing it (PyAV bundles its own copy under ``av.libs``).
    """
    try:
        with open("/proc/self/maps") as fh:
            paths = {ln.split()[-1] for ln in fh if "libavcodec" in ln and "/" in ln}
    except OSError:
        return None
    for p in sorted(paths):
        if exclude_substring and exclude_substring in p:
            continue
        m = re.search(r"libavcodec[^/]*\.so\.(\d+)", p)
        if major is None or (m and int(m.group(1)) == major):
            return p
    return None


def libavcodec_decoders(path: str, names: list[str]) -> list[str] | None:
    """Which of ``names`` ``avcodec_find_decoder_by_name`` finds in the libavcodec at ``path`` (None on failure)."""
    try:
        lib = ctypes.CDLL(path)
        find = lib.avcodec_find_decoder_by_name
        find.restype, find.argtypes = ctypes.c_void_p, [ctypes.c_char_p]
        return [n for n in names if find(n.encode())]
    except (OSError, AttributeError):
        return None


def _nvidia_smi(env: Environment) -> None:
    exe = shutil.which("nvidia-smi")
    env.nvidia_smi = exe
    if not exe:
        return
    fields = "index,name,compute_cap,memory.total,mig.mode.current,driver_version"
    try:
        out = subprocess.run([exe, f"--query-gpu={fields}", "--format=csv,noheader,nounits"],
                             capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError) as exc:
        env.notes.append(f"nvidia-smi failed: {one_line_error(exc)}")
        return
    if out.returncode != 0:
        msg = (out.stderr or out.stdout).strip().splitlines()
        env.notes.append(f"nvidia-smi failed: {msg[0] if msg else f'exit status {out.returncode}'}")
        return
    known = {g.index for g in env.gpus}
    for line in out.stdout.strip().splitlines():
        parts = [p.strip() for p in line.split(",")]
        if len(parts) < 6:
            continue
        idx, name, cc, mem, mig, drv = parts[:6]
        env.driver_version = drv or env.driver_version
        try:
            i = int(idx)
        except ValueError:
            continue
        ccv = None
        m = re.match(r"(\d+)\.(\d+)", cc)
        if m:
            ccv = (int(m.group(1)), int(m.group(2)))
        mig_mode = mig if mig and mig not in ("[N/A]", "N/A") else None
        if i in known:
            dev = env.device(i)
            if dev and dev.mig_mode is None:
                dev.mig_mode = mig_mode
            continue
        try:
            memory_gb = round(float(mem) / 1024, 1)
        except ValueError:
            memory_gb = None
        env.gpus.append(GpuDevice(i, name, ccv, memory_gb, mig_mode, None, "nvidia-smi"))


def _nvml(env: Environment) -> None:
    try:
        import pynvml  # nvidia-ml-py
    except Exception:
        return
    try:
        pynvml.nvmlInit()
    except Exception as exc:
        env.notes.append(f"NVML unavailable: {one_line_error(exc)}")
        return
    try:
        for i in range(pynvml.nvmlDeviceGetCount()):
            h = pynvml.nvmlDeviceGetHandleByIndex(i)
            name = pynvml.nvmlDeviceGetName(h)
            name = name.decode() if isinstance(name, bytes) else str(name)
            try:
                cc = tuple(int(x) for x in pynvml.nvmlDeviceGetCudaComputeCapability(h))
            except Exception:
                cc = None
            try:
                cur, _pending = pynvml.nvmlDeviceGetMigMode(h)
                mig = "Enabled" if cur else "Disabled"
            except Exception:
                mig = None
            try:
                mem = round(pynvml.nvmlDeviceGetMemoryInfo(h).total / 2**30, 1)
            except Exception:
                mem = None
            env.gpus.append(GpuDevice(i, name, cc, mem, mig, None, "nvml"))  # type: ignore[arg-type]
    except Exception as exc:
        env.notes.append(f"NVML query failed: {one_line_error(exc)}")
    finally:
        try:
            pynvml.nvmlShutdown()
        except Exception:
            pass


def _libnvcuvid() -> str | None:
    if not sys.platform.startswith("linux"):
        return "only checked on Linux"
    try:
        ctypes.CDLL("libnvcuvid.so.1")
    except OSError as exc:
        return " ".join(str(exc).split())
    return None


def collect_environment() -> Environment:
    """Read the decode environment of this process (imports torch, torchcodec and PyAV; never raises).

    Cost: the torch and torchcodec imports (about 2-4 s cold on a 2-core machine); nvidia-smi when present.
    """
    notes: list[str] = []
    torch_info, available, gpus = _torch_info(notes)
    tc = _torchcodec_info(torch_info.importable)
    env = Environment(python=platform.python_version(), platform=platform.platform(), torch=torch_info,
                      torchcodec=tc, pyav=_pyav_info(), cuda_available=available, gpus=gpus, notes=notes,
                      driver_capabilities=nvidia_driver_capabilities())
    from lerobot_tools.video.probe import av1_decoders

    env.av1_decoders["PyAV"] = [d for d in av1_decoders() if d != "av1"] if env.pyav.importable else None
    if tc.importable:
        major = None
        m = re.match(r"(\d+)", tc.ffmpeg.get("libavcodec", ""))
        if m:
            major = int(m.group(1))
        path = loaded_libavcodec(major)
        found = libavcodec_decoders(path, ["libdav1d", "libaom-av1"]) if path else None
        env.av1_decoders["torchcodec"] = found
        if path is None:
            env.notes.append("could not locate the libavcodec torchcodec loaded; its AV1 decoders are unknown")
    else:
        env.av1_decoders["torchcodec"] = None
    _nvidia_smi(env)
    if not env.gpus:
        _nvml(env)
    env.libnvcuvid = _libnvcuvid()
    return env


def cuda_decoder_error(path: str, device: str = "cuda") -> str | None:
    """Try ``torchcodec.decoders.VideoDecoder(path, device=device)``; the one-line error, or None if it worked.

    On a CPU build of torchcodec this raises ``RuntimeError: ... Unsupported device: cuda (device type: cuda,
    variant: default)`` before touching any GPU (torchcodec ``DeviceInterface.cpp``), so it is safe and
    definitive on a machine without a GPU. No frame is decoded.
    """
    try:
        from torchcodec.decoders import VideoDecoder

        VideoDecoder(path, device=device, seek_mode="approximate")
    except BaseException as exc:  # noqa: BLE001
        text = _chain_text(exc)
        m = re.search(r"Unsupported device: [^\n]*", text)
        if m:
            return m.group(0).strip()
        return one_line_error(exc)
    return None
