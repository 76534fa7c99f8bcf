"""Can NVDEC decode this stream on that GPU? A static codec x chroma x bit-depth x GPU-generation table.

Pure Python, no imports beyond the standard library, no GPU needed: the same answer on a CPU box
preparing data and on the training node. The table is keyed by CUDA **compute capability** (not by the
marketing name) because the chip class decides NVDEC's features and names vary (``A10G``, ``H100 NVL``,
``GH200 480GB``, MIG device names), while the compute capability does not.

Sources (ids used in every cell's ``source``):

* **S1** NVIDIA Video Codec SDK 13.0, *NVDEC Application Note*, §2 table "NVDEC Hardware Capabilities"
  (docs.nvidia.com/video-technologies/video-codec-sdk/13.0/nvdec-application-note/). Columns: 1st Gen
  Maxwell · 2nd Gen Maxwell · Pascal · Volta · Turing/GA100/Hopper · GA10x and Ada · Blackwell/Jetson
  Thor. Footnote 1: "Present in select GPUs"; footnote 3: "GA10x GPUs include all GPUs based on Ampere
  architecture except GA100". The same column split appears in SDK 11.0, 12.0 and 12.2.
* **S2** NVIDIA Multi-Instance GPU User Guide, "Supported GPUs" (product -> chip -> compute capability)
  and "Supported MIG Profiles" (NVDECs per GPU-instance profile).
* **S3** ``cuvidGetDecoderCaps`` limits as printed by ``nvdecinfo`` (philipl/nv-video-info#7, GA106)
  and FFmpeg/VA-API logs: coded size limits per codec. Medium confidence; they vary by generation.
* **S4** torchcodec 0.13-0.17 sources (``BetaCudaDeviceInterface.cpp``): which streams torchcodec's
  NVDEC backend actually sends to NVDEC (library caveats, separate from the hardware verdict).
* **S9** general knowledge of product datasheets (chip, compute capability, NVDEC count of PCIe and
  consumer cards). Marked ``medium``.

Every verdict carries ``confidence``: ``high`` (an explicit S1/S2 cell), ``medium`` (S1 row silent on
the exact bit depth/chroma, S3, S9, or the data-centre Blackwell die GB100 that S1 does not separate
from GB20x), ``low`` (inferred). Nothing here was measured on a GPU; the runtime answer is
torchcodec's ``VideoDecoder(..., device="cuda").cpu_fallback`` (see :mod:`lerobot_tools.video.decode`).
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field

from lerobot_tools.errors import UsageError
from lerobot_tools.video.codecs import canonical_codec

YES, NO, UNKNOWN = "yes", "no", "unknown"
HIGH, MEDIUM, LOW = "high", "medium", "low"

S1 = "NVIDIA Video Codec SDK 13.0 NVDEC Application Note, table 'NVDEC Hardware Capabilities'"
S2 = "NVIDIA MIG User Guide, 'Supported MIG Profiles'"
S3 = "cuvidGetDecoderCaps limits (nvdecinfo on GA106, philipl/nv-video-info#7)"
S4 = "torchcodec NVDEC backend source (BetaCudaDeviceInterface.cpp, 0.13-0.17)"
S9 = "product datasheets (general knowledge)"

# ---------------------------------------------------------------------------------------------
# NVDEC classes: the S1 columns
# ---------------------------------------------------------------------------------------------

#: class key -> S1 column heading.
NVDEC_CLASSES: dict[str, str] = {
    "maxwell1": "1st Gen Maxwell",
    "maxwell2": "2nd Gen Maxwell",
    "pascal": "Pascal",
    "volta": "Volta",
    "turing": "Turing / GA100 / Hopper",
    "ga10x_ada": "GA10x and Ada",
    "blackwell": "Blackwell / Jetson Thor",
}
_ORDER = list(NVDEC_CLASSES)


def nvdec_class(cc: tuple[int, int] | None) -> str | None:
    """The S1 column (key of :data:`NVDEC_CLASSES`) of a compute capability.

    Mapping (S1 columns; compute capabilities from S2 and CUDA docs): 5.0 -> 1st Gen Maxwell (GM107/108);
    5.2, 5.3 -> 2nd Gen Maxwell; 6.x -> Pascal; 7.0, 7.2 -> Volta; 7.5 -> Turing; **8.0 -> Turing/GA100/
    Hopper** (GA100: A100, A30); 8.6, 8.7, 8.9 -> GA10x and Ada; **9.x -> Turing/GA100/Hopper** (GH100);
    10.x and above -> Blackwell (GB100 10.0, Thor, GB20x 12.0).

    Args:
        cc: ``(major, minor)``.

    Returns:
        The class key, or None for compute capabilities before Maxwell (Kepler 3.x and older) or None input.
    """
    if cc is None:
        return None
    major, minor = cc
    if major == 5:
        return "maxwell1" if minor == 0 else "maxwell2"
    if major == 6:
        return "pascal"
    if major == 7:
        return "turing" if minor >= 5 else "volta"
    if major == 8:
        return "turing" if minor == 0 else "ga10x_ada"
    if major == 9:
        return "turing"
    if major >= 10:
        return "blackwell"
    return None


# ---------------------------------------------------------------------------------------------
# GPU models
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class GpuModel:
    """A GPU product: its chip, compute capability and NVDEC engine count.

    Attributes:
        key: canonical name used by ``--gpu`` (``"H100"``).
        aliases: other spellings matched by :func:`lookup_gpu` (``"H100 NVL"``, ``"H800"``...).
        chip: GPU die, e.g. ``"GH100"``.
        cc: CUDA compute capability ``(major, minor)``.
        nvdec_count: NVDEC engines on the full GPU (None when unknown).
        count_confidence: ``"high"`` (S2) or ``"medium"`` (S9).
        source: where chip/CC come from (S2 for MIG-capable products, else S9).
    """

    key: str
    chip: str
    cc: tuple[int, int]
    nvdec_count: int | None
    count_confidence: str = MEDIUM
    aliases: tuple[str, ...] = ()
    source: str = S9


#: Known products. Chip/CC of A100, A30, H100, H200, H20, GH200, B200, GB200 and RTX PRO 6000/5000 Blackwell
#: from S2 ("Supported GPUs"); NVDEC counts of A100 (5), A30 (4), H100 (7) from S2's full-GPU profiles;
#: everything else S9 (medium).
GPU_MODELS: tuple[GpuModel, ...] = (
    GpuModel("P100", "GP100", (6, 0), None),
    GpuModel("P40", "GP102", (6, 1), None),
    GpuModel("P4", "GP104", (6, 1), None),
    GpuModel("V100", "GV100", (7, 0), 1, aliases=("V100S", "V100 SXM2", "V100 PCIE", "Quadro GV100")),
    GpuModel("T4", "TU104", (7, 5), 2, aliases=("Tesla T4", "T4G")),
    GpuModel("RTX 2080 Ti", "TU102", (7, 5), 1, aliases=("RTX 2080TI",)),
    GpuModel("A2", "GA107", (8, 6), 2),
    GpuModel("A10", "GA102", (8, 6), 2),
    GpuModel("A10G", "GA102", (8, 6), 2),
    GpuModel("A16", "GA107", (8, 6), 2),
    GpuModel("A40", "GA102", (8, 6), 2),
    GpuModel("RTX A6000", "GA102", (8, 6), 2, aliases=("A6000",)),
    GpuModel("RTX 3090", "GA102", (8, 6), 1, aliases=("RTX 3090 Ti", "RTX 3080", "RTX 3080 Ti")),
    GpuModel("A100", "GA100", (8, 0), 5, HIGH, aliases=("A100 SXM4", "A100 PCIE", "A800"), source=S2),
    GpuModel("A30", "GA100", (8, 0), 4, HIGH, source=S2),
    GpuModel("Jetson Orin", "GA10B", (8, 7), 1, aliases=("Orin", "AGX Orin")),
    GpuModel("L4", "AD104", (8, 9), 4),
    GpuModel("L40", "AD102", (8, 9), 3),
    GpuModel("L40S", "AD102", (8, 9), 3),
    GpuModel("L20", "AD102", (8, 9), None),
    GpuModel("RTX 4090", "AD102", (8, 9), 1, aliases=("RTX 4080",)),
    GpuModel("RTX 6000 Ada", "AD102", (8, 9), 3, aliases=("RTX 6000 Ada Generation",)),
    GpuModel("H100", "GH100", (9, 0), 7, HIGH, aliases=("H100 NVL", "H100 SXM5", "H100 PCIE", "H800"), source=S2),
    GpuModel("H20", "GH100", (9, 0), 7, source=S2),
    GpuModel("H200", "GH100", (9, 0), 7, aliases=("H200 NVL", "H200 SXM5"), source=S2),
    GpuModel("GH200", "GH100", (9, 0), 7, source=S2),
    GpuModel("B200", "GB100", (10, 0), 7, aliases=("HGX B200", "DGX B200"), source=S2),
    GpuModel("GB200", "GB100", (10, 0), 7, source=S2),
    GpuModel("RTX 5090", "GB202", (12, 0), 2, aliases=("RTX 5080",)),
    GpuModel("RTX PRO 6000", "GB202", (12, 0), 4,
             aliases=("RTX PRO 6000 Blackwell", "RTX PRO 6000 Blackwell Server Edition",
                      "RTX PRO 6000 Blackwell Workstation Edition"), source=S2),
    GpuModel("RTX PRO 5000", "GB202", (12, 0), None, aliases=("RTX PRO 5000 Blackwell",), source=S2),
)

#: MIG GPU-instance profile -> NVDECs in the slice, per product and memory size (S2). A profile name absent
#: here (e.g. another memory variant) falls back to the rule in :func:`mig_nvdec_count`.
MIG_NVDECS: dict[str, dict[str, int]] = {
    # A100-SXM4/PCIE-40GB (S2 table)
    "A100-40GB": {"1g.5gb": 0, "1g.5gb+me": 1, "1g.10gb": 1, "2g.10gb": 1, "3g.20gb": 2, "4g.20gb": 2, "7g.40gb": 5},
    # A100-80GB: same slices, names follow the memory proportion (S2 note); 1g.10gb is the smallest slice
    "A100-80GB": {"1g.10gb": 0, "1g.10gb+me": 1, "1g.20gb": 1, "2g.20gb": 1, "3g.40gb": 2, "4g.40gb": 2, "7g.80gb": 5},
    "A30": {"1g.6gb": 0, "1g.6gb+me": 1, "2g.12gb": 2, "2g.12gb+me": 2, "4g.24gb": 4},
    # H100 80GB (S2; every H100 profile has at least one NVDEC)
    "H100-80GB": {"1g.10gb": 1, "1g.10gb+me": 1, "1g.20gb": 1, "2g.20gb": 2, "3g.40gb": 3, "4g.40gb": 4, "7g.80gb": 7},
}

_MIG_RE = re.compile(r"(?:^|[\s:/,])(?:MIG[\s:]*)?(?:\d+c\.)?(\d+g\.\d+gb(?:\+me)?)\s*$", re.IGNORECASE)
_MEM_RE = re.compile(r"(?<![\d.])(\d{2,3})\s*GB\b", re.IGNORECASE)
_CC_RE = re.compile(r"^(?:cc|sm|compute)?[\s_:=-]*(\d{1,2})\.?(\d)$", re.IGNORECASE)
_NOISE = ("NVIDIA ", "TESLA ", "GEFORCE ", "QUADRO ")


@dataclass
class GpuSpec:
    """The GPU a verdict is for: from ``--gpu MODEL`` or from the device torch/nvidia-smi sees.

    Attributes:
        name: as given (``"H100"``) or as the driver reports it (``"NVIDIA A100-SXM4-80GB MIG 1g.10gb"``).
        model: canonical :class:`GpuModel` key, or None when only the compute capability is known.
        chip: GPU die (``"GH100"``) or None.
        cc: compute capability ``(major, minor)``; None when unknown.
        nvdec_class: key of :data:`NVDEC_CLASSES` (the S1 column) or None.
        nvdec_count: NVDEC engines available (the MIG slice's count when ``mig_profile`` is set).
        nvdec_count_confidence: ``high``/``medium``/``low``.
        mig_profile: MIG GPU-instance profile (``"1g.5gb"``) when this is a MIG slice.
        memory_gb: card memory when it could be read from the name (distinguishes A100 40/80 GB profiles).
        origin: ``"--gpu"``, ``"torch.cuda"``, ``"nvidia-smi"`` ...
        notes: remarks (ambiguous MIG profile, unknown model ...).
    """

    name: str
    model: str | None = None
    chip: str | None = None
    cc: tuple[int, int] | None = None
    nvdec_class: str | None = None
    nvdec_count: int | None = None
    nvdec_count_confidence: str = MEDIUM
    mig_profile: str | None = None
    memory_gb: int | None = None
    origin: str = "--gpu"
    notes: list[str] = field(default_factory=list)

    @property
    def label(self) -> str:
        """Short label for reports: ``H100 (GH100, compute 9.0)``."""
        base = self.model or self.name
        bits = [b for b in (self.chip, f"compute {self.cc[0]}.{self.cc[1]}" if self.cc else None) if b]
        mig = f" MIG {self.mig_profile}" if self.mig_profile else ""
        return f"{base}{mig} ({', '.join(bits)})" if bits else f"{base}{mig}"

    @property
    def class_label(self) -> str | None:
        """S1 column heading of this GPU, or None."""
        return NVDEC_CLASSES.get(self.nvdec_class or "")

    def to_dict(self) -> dict:
        """JSON-serialisable dict (cc as ``"9.0"``)."""
        d = asdict(self)
        d["cc"] = f"{self.cc[0]}.{self.cc[1]}" if self.cc else None
        d["nvdec_class_label"] = self.class_label
        d["label"] = self.label
        return d


def _norm_name(name: str) -> str:
    s = " " + name.upper().replace("-", " ").replace("_", " ") + " "
    for noise in _NOISE:
        s = s.replace(" " + noise, " ")
    return " ".join(s.split())


def _alias_table() -> list[tuple[str, GpuModel]]:
    rows = []
    for m in GPU_MODELS:
        for a in (m.key, *m.aliases):
            rows.append((_norm_name(a), m))
    rows.sort(key=lambda r: -len(r[0]))  # longest alias first: "A10G" before "A10", "L40S" before "L40"
    return rows


_ALIASES = _alias_table()


def known_gpu_models() -> list[str]:
    """Canonical names accepted by ``--gpu`` (besides compute capabilities such as ``cc8.6``)."""
    return [m.key for m in GPU_MODELS]


def _match_model(name: str) -> GpuModel | None:
    norm = _norm_name(name)
    squashed = norm.replace(" ", "")
    for alias, model in _ALIASES:
        if norm == alias or norm.startswith(alias + " ") or squashed == alias.replace(" ", ""):
            return model
    return None


def mig_nvdec_count(model: str | None, profile: str, memory_gb: int | None = None,
                    cc: tuple[int, int] | None = None) -> tuple[int | None, str, str]:
    """NVDEC engines in a MIG slice.

    Args:
        model: canonical model key (``"A100"``, ``"A30"``, ``"H100"`` ...) or None.
        profile: GPU-instance profile, e.g. ``"1g.5gb"``, ``"1g.10gb+me"``.
        memory_gb: card memory (A100 40 vs 80 GB use the same profile names for different slices).
        cc: compute capability, used when the model is unknown.

    Returns:
        ``(count, confidence, explanation)``; count None when it cannot be told (explanation says why).
        Rule when a profile is not in :data:`MIG_NVDECS`: on GA100 (A100, A30) the smallest ``1g`` slice
        without ``+me`` has 0 NVDECs; on Hopper and Blackwell every profile has at least one (S2).
    """
    profile = profile.lower()
    tables = []
    if model == "A100":
        if memory_gb in (40, 80):
            tables = [f"A100-{memory_gb}GB"]
        else:
            tables = ["A100-40GB", "A100-80GB"]
    elif model == "A30":
        tables = ["A30"]
    elif model == "H100" and memory_gb in (None, 80):
        tables = ["H100-80GB"]
    counts = {t: MIG_NVDECS[t][profile] for t in tables if profile in MIG_NVDECS[t]}
    if counts:
        values = set(counts.values())
        if len(values) == 1:
            n = values.pop()
            return n, HIGH, f"{S2}: {' / '.join(counts)} {profile} has {n} NVDEC(s)"
        detail = ", ".join(f"{n} on {t}" for t, n in counts.items())
        return None, MEDIUM, (f"{S2}: {profile} has {detail}; give the memory size (e.g. --gpu A100-80GB:{profile})")
    if model in ("A100", "A30") or cc == (8, 0):
        if profile.startswith("1g.") and not profile.endswith("+me"):
            return None, LOW, (f"{S2}: the smallest 1g slice of GA100 without +me has 0 NVDECs; "
                               f"{profile} is not in lrtool's table, so it may be one")
        return None, LOW, f"MIG profile {profile} is not in lrtool's table for GA100"
    if cc is not None and cc[0] >= 9:
        return None, MEDIUM, f"{S2}: every Hopper/Blackwell MIG profile has at least one NVDEC"
    return None, LOW, f"MIG profile {profile} is not in lrtool's table"


def lookup_gpu(name: str, *, origin: str = "--gpu", cc: tuple[int, int] | None = None,
               strict: bool = True) -> GpuSpec:
    """Resolve a GPU model name (``--gpu MODEL``) or a driver-reported device name to a :class:`GpuSpec`.

    Accepted: a model or alias from :data:`GPU_MODELS`, case- and separator-insensitive (``H100``,
    ``a10g``, ``RTX4090``, ``NVIDIA H100 80GB HBM3``, ``Tesla T4``); optionally with memory
    (``A100-80GB``) and a MIG profile after ``:``, a space or ``MIG`` (``A100:1g.5gb``,
    ``NVIDIA A100-SXM4-40GB MIG 1g.5gb``); or a bare compute capability (``cc8.6``, ``sm_90``, ``9.0``).

    Args:
        name: what to resolve.
        origin: recorded in :attr:`GpuSpec.origin`.
        cc: compute capability reported by the device; it takes precedence over the model table.
        strict: raise on an unknown model (``--gpu``); with False an unknown name gives a spec with only
            ``cc`` (used for real devices whose name is not in the table).

    Raises:
        UsageError: unknown model (strict), or an empty name.
    """
    raw = (name or "").strip()
    if not raw:
        raise UsageError("--gpu needs a GPU model name, e.g. --gpu H100")
    mig = None
    m = _MIG_RE.search(raw)
    base = raw
    if m:
        mig = m.group(1).lower()
        base = raw[: m.start()].strip(" :/,") or raw
        base = re.sub(r"\s*MIG\s*$", "", base, flags=re.IGNORECASE)
    mem = _MEM_RE.search(base)
    memory_gb = int(mem.group(1)) if mem else None
    spec = GpuSpec(name=raw, mig_profile=mig, memory_gb=memory_gb, origin=origin)
    ccm = _CC_RE.match(base.strip())
    model = None if ccm else _match_model(base)
    if ccm:
        spec.cc = (int(ccm.group(1)), int(ccm.group(2)))
    elif model is not None:
        spec.model, spec.chip, spec.cc = model.key, model.chip, model.cc
        spec.nvdec_count, spec.nvdec_count_confidence = model.nvdec_count, model.count_confidence
    elif strict and cc is None:
        raise UsageError(
            f"unknown GPU model {raw!r}; known: {', '.join(known_gpu_models())} "
            "(or give a compute capability such as cc8.6, optionally with a MIG profile: A100:1g.5gb)"
        )
    else:
        spec.notes.append(f"GPU model {base!r} is not in lrtool's table; the verdict uses its compute capability")
    if cc is not None:
        if spec.cc is not None and spec.cc != cc:
            spec.notes.append(f"the device reports compute {cc[0]}.{cc[1]}, the table says "
                              f"{spec.cc[0]}.{spec.cc[1]} for {spec.model}; using the device's")
        spec.cc = cc
    spec.nvdec_class = nvdec_class(spec.cc)
    if spec.cc is not None and spec.nvdec_class is None:
        spec.notes.append(f"compute {spec.cc[0]}.{spec.cc[1]} predates the NVDEC table (Maxwell and newer)")
    if mig:
        if spec.cc is not None and spec.cc < (8, 0):
            raise UsageError(f"{raw!r}: MIG needs compute capability 8.0 or newer (A100, A30, H100, ...)")
        n, conf, why = mig_nvdec_count(spec.model, mig, memory_gb, spec.cc)
        spec.nvdec_count, spec.nvdec_count_confidence = n, conf
        spec.notes.append(why)
    return spec


# ---------------------------------------------------------------------------------------------
# The verdict table
# ---------------------------------------------------------------------------------------------

_Y, _N, _SEL = "Y", "N", "select"


@dataclass(frozen=True)
class Row:
    """One S1 row: what NVDEC does per class. ``marks`` maps class key -> ``Y``/``N``/``select``."""

    id: str
    title: str
    marks: dict[str, str]
    confidence: str = HIGH
    source: str = S1
    note: str | None = None


def _marks(first_yes: str | None, select: tuple[str, ...] = ()) -> dict[str, str]:
    """Y from class ``first_yes`` on (None = never), ``select`` for the listed classes, else N."""
    out = {}
    start = _ORDER.index(first_yes) if first_yes else len(_ORDER)
    for i, c in enumerate(_ORDER):
        out[c] = _SEL if c in select else (_Y if i >= start else _N)
    return out


#: The table: row id -> :class:`Row`. Each cell is a column of S1 unless ``source``/``confidence`` say otherwise.
ROWS: dict[str, Row] = {r.id: r for r in (
    Row("mpeg12", "MPEG-1/MPEG-2 Simple & Main", _marks("maxwell1")),
    Row("vc1", "VC-1 Simple, Main & Advanced", _marks("maxwell1")),
    Row("mpeg4", "MPEG-4 Part 2 Simple & Advanced Simple", _marks("maxwell1")),
    Row("h264", "H.264 Baseline/Main/High (4:2:0 8-bit)", _marks("maxwell1")),
    Row("h264_hi10_422", "H.264 High 10 / High 4:2:2 (10-bit or 4:2:2)", _marks("blackwell")),
    Row("h264_444", "H.264 4:4:4 (High 4:4:4 Predictive)", _marks(None),
        note="no S1 row lists H.264 4:4:4 for any generation (Blackwell adds High10/High422 only)"),
    Row("hevc", "HEVC Main / Main 10 (4:2:0 8/10-bit)", _marks("pascal", select=("maxwell2",))),
    Row("hevc_12", "HEVC 4:2:0 12-bit (Main 12)", _marks("pascal"), MEDIUM, S9,
        note="S1 names Main/Main 10 only; 12-bit 4:2:0 from Pascal per the NVDEC programming guide"),
    Row("hevc_444", "HEVC 4:4:4 (RExt)", _marks("turing")),
    Row("hevc_444_hbd", "HEVC 4:4:4 10/12-bit (RExt)", _marks("turing"), MEDIUM,
        note="S1's 'HEVC 444 decoding' row gives no bit depth"),
    Row("hevc_422", "HEVC Main 4:2:2 10/12", _marks("blackwell")),
    Row("vp8", "VP8", {**_marks("volta"), "maxwell2": _Y, "pascal": _SEL}),
    Row("vp9", "VP9 Profile 0 (4:2:0 8-bit)", _marks("pascal", select=("maxwell2",))),
    Row("vp9_hbd", "VP9 Profile 2 (4:2:0 10/12-bit)", _marks("volta", select=("pascal",)), MEDIUM, S9,
        note="S1 lists VP9 Profile 0 only"),
    Row("vp9_444", "VP9 Profile 1/3 (4:2:2 / 4:4:4)", _marks(None), HIGH,
        note="no S1 row lists VP9 profiles 1/3"),
    Row("av1", "AV1 Main (4:2:0 8/10-bit)", {**_marks("ga10x_ada")}),
    Row("av1_high", "AV1 High / Professional (4:4:4, 4:2:2, 12-bit)", _marks(None),
        note="S1 lists AV1 Main Profile only"),
)}

#: Codecs NVDEC handles at all (S1 and the NVDEC programming guide's codec list).
NVDEC_CODECS = ("mpeg1video", "mpeg2video", "vc1", "mpeg4", "h264", "hevc", "vp8", "vp9", "av1")

#: Coded-size limits per codec: (min_w, min_h, max_w, max_h) on GA10x (S3), medium confidence.
#: Exceptions by class are applied in :func:`_size_problem` (H.264 8192 on Blackwell; HEVC/VP9 8192 only from
#: Pascal (select) / Volta, S1 rows "HEVC/VP9 8192x8192 Decoding support").
SIZE_LIMITS: dict[str, tuple[int, int, int, int]] = {
    "mpeg1video": (48, 16, 4080, 4080),
    "mpeg2video": (48, 16, 4080, 4080),
    "mpeg4": (48, 16, 2032, 2032),
    "vc1": (48, 16, 2032, 2032),
    "h264": (48, 16, 4096, 4096),
    "hevc": (144, 144, 8192, 8192),
    "vp8": (48, 16, 4096, 4096),
    "vp9": (128, 128, 8192, 8192),
    "av1": (128, 128, 8192, 8192),
}

def row_for(codec: str | None, chroma: str | None, bit_depth: int | None) -> Row | None:
    """The :data:`ROWS` entry for a stream, or None when NVDEC has no such codec.

    ``chroma`` is ``"420"``, ``"422"``, ``"444"``, ``"gray"`` (treated as 4:2:0 at the same depth; NVDEC
    decodes monochrome H.264/HEVC as 4:2:0, medium confidence) or None (assumed 4:2:0); ``bit_depth``
    None is assumed 8.
    """
    codec = canonical_codec(codec)
    chroma = "420" if chroma in (None, "gray", "420") else chroma
    depth = bit_depth or 8
    if codec in ("mpeg1video", "mpeg2video"):
        return ROWS["mpeg12"]
    if codec == "vc1":
        return ROWS["vc1"]
    if codec == "mpeg4":
        return ROWS["mpeg4"]
    if codec == "h264":
        if chroma == "444":
            return ROWS["h264_444"]
        if chroma == "422" or depth > 8:
            return ROWS["h264_hi10_422"]
        return ROWS["h264"]
    if codec == "hevc":
        if chroma == "444":
            return ROWS["hevc_444"] if depth <= 8 else ROWS["hevc_444_hbd"]
        if chroma == "422":
            return ROWS["hevc_422"]
        return ROWS["hevc"] if depth <= 10 else ROWS["hevc_12"]
    if codec == "vp8":
        return ROWS["vp8"]
    if codec == "vp9":
        if chroma in ("444", "422", "440"):
            return ROWS["vp9_444"]
        return ROWS["vp9"] if depth <= 8 else ROWS["vp9_hbd"]
    if codec == "av1":
        if chroma != "420" or depth > 10:
            return ROWS["av1_high"]
        return ROWS["av1"]
    return None


@dataclass
class NvdecVerdict:
    """Whether NVDEC on one GPU decodes one stream format.

    Attributes:
        decodable: ``"yes"``, ``"no"`` or ``"unknown"``.
        reason: one line saying why (names the GPU class, the codec/chroma/bit depth, the MIG slice ...).
        confidence: ``"high"``, ``"medium"`` or ``"low"``.
        source: where the answer comes from (an S1/S2/S3 citation, or the runtime check).
        row: the :data:`ROWS` id used, or None.
        method: ``"static table"`` or ``"torchcodec NVDEC check"`` (set by the runtime decode test).
        library_note: a torchcodec caveat: NVDEC could, but torchcodec sends the stream to the CPU (S4).
    """

    decodable: str
    reason: str
    confidence: str = HIGH
    source: str = S1
    row: str | None = None
    method: str = "static table"
    library_note: str | None = None

    def to_dict(self) -> dict:
        """JSON-serialisable dict."""
        return asdict(self)


def _fmt(codec: str | None, chroma: str | None, depth: int | None, profile: str | None) -> str:
    c = {"h264": "H.264", "hevc": "HEVC", "av1": "AV1", "vp9": "VP9", "vp8": "VP8", "mpeg4": "MPEG-4 Part 2",
         "mpeg2video": "MPEG-2", "mpeg1video": "MPEG-1", "vc1": "VC-1"}.get(codec or "", codec or "unknown codec")
    prof = f" {profile}" if profile else ""
    ch = {"420": "4:2:0", "422": "4:2:2", "444": "4:4:4", "gray": "4:0:0"}.get(chroma or "", chroma or "?")
    return f"{c}{prof} ({ch} {depth or '?'}-bit)"


def _size_problem(codec: str, cls: str, width: int | None, height: int | None) -> tuple[str, str] | None:
    """-> (decodable, reason) when the coded size is outside NVDEC's limits for this codec and class."""
    if not width or not height or codec not in SIZE_LIMITS:
        return None
    min_w, min_h, max_w, max_h = SIZE_LIMITS[codec]
    if codec == "h264" and cls == "blackwell":
        max_w = max_h = 8192  # S1: "H.264 8192x8192 Decoding support" Blackwell only
    if codec in ("hevc", "vp9"):
        if cls in ("maxwell1", "maxwell2"):
            max_w = max_h = 4096  # S1: HEVC/VP9 8192x8192 support N before Pascal
        elif cls == "pascal" and (width > 4096 or height > 4096):
            return UNKNOWN, f"{width}x{height} needs 8192x8192 support, present in select Pascal GPUs only (S1)"
    if width < min_w or height < min_h:
        return NO, (f"{width}x{height} is below NVDEC's minimum coded size {min_w}x{min_h} for {codec} "
                    f"({S3}; torchcodec and FFmpeg check it and fall back to CPU)")
    if width > max_w or height > max_h:
        return NO, f"{width}x{height} exceeds NVDEC's maximum {max_w}x{max_h} for {codec} on this generation ({S3}/S1)"
    return None


def torchcodec_caveat(codec: str | None, chroma: str | None, bit_depth: int | None,
                      torchcodec_version: str | None) -> str | None:
    """A torchcodec limitation that sends an NVDEC-decodable stream to the CPU anyway (S4), or None.

    * 4:4:4 (and 4:2:2): torchcodec's NVDEC backend before 0.17 requests only NV12 (and P016 from 0.14)
      4:2:0 surfaces, so 4:4:4 streams fall back to CPU; 0.17 adds YUV444 surfaces. 4:2:2 surfaces are
      not requested in any release read (medium confidence).
    * MPEG-1/MPEG-2/VC-1/MJPEG are commented out of torchcodec's NVDEC codec list: CPU.

    Args:
        torchcodec_version: e.g. ``"0.13.0+cpu"``; None = unknown (the caveat is stated for < 0.17).
    """
    codec = canonical_codec(codec)
    if codec in ("mpeg1video", "mpeg2video", "vc1", "mjpeg"):
        return f"torchcodec does not send {codec} to NVDEC (disabled in its NVDEC codec list); it decodes on CPU"
    ver = _version_tuple(torchcodec_version)
    if chroma == "444" and codec in ("hevc",):
        if ver is None or ver < (0, 17):
            shown = torchcodec_version or "< 0.17"
            return (f"NVDEC can decode HEVC 4:4:4, but torchcodec {shown} requests only 4:2:0 (NV12/P016) "
                    "surfaces and falls back to CPU; upgrade to torchcodec >= 0.17 or convert to 4:2:0")
    if chroma == "422" and codec in ("hevc", "h264"):
        return "torchcodec requests 4:2:0 surfaces only; a 4:2:2 stream is likely to fall back to CPU (medium confidence)"
    return None


def _version_tuple(v: str | None) -> tuple[int, ...] | None:
    if not v:
        return None
    m = re.match(r"(\d+)\.(\d+)", v)
    return (int(m.group(1)), int(m.group(2))) if m else None


#: Classes with an AV1 decoder (S1 "AV1 Main Profile decoding" row), for advice.
AV1_CAPABLE = ("A10, A10G, A16, A40, L4, L40, L40S, RTX 30xx/40xx/50xx, RTX A6000/6000 Ada, Jetson Orin, "
               "RTX PRO 6000 Blackwell; B200/GB200 (GB100) medium confidence")


def verdict(gpu: GpuSpec, codec: str | None, chroma: str | None = None, bit_depth: int | None = None,
            width: int | None = None, height: int | None = None, profile: str | None = None,
            torchcodec_version: str | None = None) -> NvdecVerdict:
    """Can NVDEC on ``gpu`` decode a stream of this format? Static answer from :data:`ROWS`.

    Order of the checks: MIG slice without NVDEC (S2) -> GPU generation unknown -> codec not an NVDEC
    codec -> the S1 row for (codec, chroma, bit depth) -> coded-size limits (S3) -> torchcodec caveat
    (recorded in ``library_note``; it does not change ``decodable``, which is about the hardware).

    Args:
        gpu: from :func:`lookup_gpu`.
        codec: FFmpeg canonical codec name (``"av1"``, ``"h264"`` ...; aliases accepted).
        chroma: ``"420"``/``"422"``/``"444"``/``"gray"``; None = assume 4:2:0.
        bit_depth: 8, 10, 12; None = assume 8.
        width, height: coded size in pixels (None skips the size check).
        profile: FFmpeg profile name, only for the message.
        torchcodec_version: for :func:`torchcodec_caveat`.

    Returns:
        An :class:`NvdecVerdict`. Never raises.
    """
    codec = canonical_codec(codec)
    what = _fmt(codec, chroma, bit_depth, profile)
    if gpu.mig_profile and gpu.nvdec_count == 0:
        return NvdecVerdict(NO, f"{gpu.label} is a MIG slice with 0 NVDEC engines: nothing decodes on NVDEC; "
                                "use a +me profile (e.g. 1g.5gb+me) or a larger slice",
                            gpu.nvdec_count_confidence, S2)
    cls = gpu.nvdec_class
    if cls is None:
        cc = f"compute {gpu.cc[0]}.{gpu.cc[1]}" if gpu.cc else "unknown compute capability"
        return NvdecVerdict(UNKNOWN, f"{gpu.label}: {cc} is outside the NVDEC table (Maxwell and newer)", LOW, S1)
    if codec is None:
        return NvdecVerdict(UNKNOWN, "the stream's codec could not be read", LOW, S1)
    row = row_for(codec, chroma, bit_depth)
    if row is None:
        return NvdecVerdict(NO, f"{codec} is not an NVDEC codec (NVDEC decodes MPEG-1/2/4 Part 2, VC-1, H.264, "
                                "HEVC, VP8, VP9, AV1)", HIGH, S1)
    mark = row.marks[cls]
    col = NVDEC_CLASSES[cls]
    conf = row.confidence
    if codec == "av1" and gpu.chip == "GB100" and mark == _Y:
        conf = MEDIUM  # S1 has one Blackwell column; the data-centre die may differ (Hopper precedent)
    lib = torchcodec_caveat(codec, chroma, bit_depth, torchcodec_version)
    if mark == _N:
        extra = ""
        if row.id == "av1":
            extra = "; AV1 needs a GA10x/Ada or Blackwell GPU"
            if cls == "turing":
                extra = ("; A100/A30 (GA100) and H100/H200/GH200 (GH100) have no AV1 decoder, AV1 needs a GA10x/Ada "
                         "or Blackwell GPU")
        elif row.id == "h264_hi10_422":
            extra = "; H.264 10-bit/4:2:2 needs Blackwell"
        elif row.id in ("hevc_444", "hevc_444_hbd"):
            extra = "; HEVC 4:4:4 needs Turing or newer"
        elif row.id in ("h264_444", "vp9_444", "av1_high"):
            extra = "; no NVIDIA GPU decodes it"
        return NvdecVerdict(NO, f"{what} is not decodable by NVDEC on {col} GPUs (S1 '{row.title}': N){extra}",
                            conf, row.source, row.id)
    if mark == _SEL:
        return NvdecVerdict(UNKNOWN, f"{what}: '{row.title}' is present in select {col} GPUs only (S1 footnote 1)",
                            MEDIUM, row.source, row.id, library_note=lib)
    size = _size_problem(codec, cls, width, height)
    if size is not None:
        dec, why = size
        return NvdecVerdict(dec, f"{what}: {why}", MEDIUM, S3, row.id, library_note=lib)
    note = f"; {row.note}" if row.note and row.confidence != HIGH else ""
    return NvdecVerdict(YES, f"{what} decodes on NVDEC on {col} GPUs (S1 '{row.title}': Y{note})", conf,
                        row.source, row.id, library_note=lib)


def table_markdown() -> str:
    """The verdict table as Markdown (rows x S1 columns, Y/N/select, confidence), for docs and ``--help``."""
    head = "| stream | " + " | ".join(NVDEC_CLASSES.values()) + " | confidence |\n"
    head += "|---" * (len(NVDEC_CLASSES) + 2) + "|\n"
    body = "".join(f"| {r.title} | " + " | ".join(r.marks[c] for c in _ORDER) + f" | {r.confidence} |\n"
                   for r in ROWS.values())
    return head + body
