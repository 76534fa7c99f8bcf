"""What ``lrtool reencode`` encodes with: the default settings for training, the encoder for a codec and a device,
and what NVENC can and cannot do on a given GPU.

Defaults, and why (each overridable on the command line):

* **pix_fmt yuv420p** (8-bit 4:2:0): what lerobot writes (0.4.4 ``VideoEncoderConfig``/``encode_video_frames``,
  ``pix_fmt="yuv420p"``) and what every NVDEC generation decodes for H.264 and HEVC (NVIDIA NVDEC Application Note,
  "NVDEC Hardware Capabilities"; docs/video-decoding.md#nvdec-support). A 10-bit source keeps 10 bits with HEVC
  (``yuv420p10le``), which H.264's NVDEC cannot decode before Blackwell.
* **GOP = the source's keyframe interval, at most** :data:`MAX_GOP`: random access decodes on average half a GOP
  of extra frames per sample (docs/video-decoding.md#decode-cost); lerobot writes ``g=2`` for that reason, and a
  re-encode keeps the access cost the dataset had.
* **CRF**: H.264 18 (FFmpeg's H.264 encoding guide, trac.ffmpeg.org/wiki/Encode/H.264: "18 is considered visually
  lossless or nearly so"), HEVC 22 (the same guide for H.265 maps x264's 23 to x265's 28: 18 -> ~23), AV1 30
  (lerobot's default ``crf=30`` for libsvtav1). **Preset**: x264/x265 ``fast`` (the encode is the cost of a
  terabyte re-encode; ``medium`` is x264's default), SVT-AV1 12 (lerobot's ``preset=12``).
* **No B-frames for NVENC** (``bf=0``): NVENC B-frames have given FFmpeg-based pipelines wrong timestamps
  (obs-studio PR 8582, livepeer/lpms#247), and the re-encode must keep every frame time.

NVENC: the A100 (GA100) and the H100 / H200 (GH100) have **no NVENC** (NVIDIA "Video Encode and Decode GPU Support
Matrix", developer.nvidia.com/video-encode-and-decode-gpu-support-matrix-new: 0 NVENC for A100 and H100); AV1
encoding needs Ada or newer (NVENC Application Note, Video Codec SDK 13.0). On such nodes the re-encode runs on
the CPU encoders, or on an NVENC GPU such as an L4. :func:`nvenc_note` says so in the plan.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from lerobot_tools.errors import UsageError
from lerobot_tools.video.codecs import canonical_codec

#: the codecs ``lrtool reencode --codec`` writes
CODECS = ("h264", "hevc", "av1")
#: the CPU encoder of each codec (PyAV's wheels carry them: libx264, libx265, libsvtav1)
CPU_ENCODERS = {"h264": "libx264", "hevc": "libx265", "av1": "libsvtav1"}
#: the NVENC encoder of each codec
NVENC_ENCODERS = {"h264": "h264_nvenc", "hevc": "hevc_nvenc", "av1": "av1_nvenc"}
DEFAULT_CRF = {"h264": 18, "hevc": 22, "av1": 30}
DEFAULT_PRESET = {"libx264": "fast", "libx265": "fast", "libsvtav1": "12", "h264_nvenc": "p4", "hevc_nvenc": "p4",
                  "av1_nvenc": "p4"}
#: the longest keyframe interval the re-encode writes by default (frames)
MAX_GOP = 30
#: GPUs by compute capability major.minor that have no NVENC (GA100: A100/A30 8.0; GH100: H100/H200 9.0)
NO_NVENC_CC = {(8, 0), (9, 0)}


@dataclass(frozen=True)
class EncoderSettings:
    """How one file is encoded.

    Attributes:
        codec: canonical codec written (``h264``, ``hevc``, ``av1``).
        encoder: the FFmpeg encoder (``libx264`` ... ``h264_nvenc``).
        pix_fmt: output pixel format.
        gop: keyframe interval in frames.
        crf: quality (CRF for the CPU encoders; constant QP for NVENC, as lerobot maps ``crf`` to ``qp``).
        preset: encoder preset.
        options: the encoder options passed to PyAV (strings).
    """

    codec: str
    encoder: str
    pix_fmt: str
    gop: int
    crf: int
    preset: str
    options: dict[str, str] = field(default_factory=dict)

    @property
    def nvenc(self) -> bool:
        return self.encoder.endswith("_nvenc")


def pixel_format(codec: str, requested: str | None, source_bit_depth: int | None) -> str:
    """The output pixel format: ``requested``, else yuv420p, or yuv420p10le for a >8-bit source written as HEVC or
    AV1 (H.264 10-bit does not decode on NVDEC before Blackwell).

    Raises:
        UsageError: a requested format that is not 4:2:0 for NVENC-decodable output is not refused here; an
            unknown codec is.
    """
    if codec not in CODECS:
        raise UsageError(f"--codec must be one of {', '.join(CODECS)}, not {codec!r}")
    if requested:
        return requested
    if (source_bit_depth or 8) > 8 and codec in ("hevc", "av1"):
        return "yuv420p10le"
    return "yuv420p"


def gop_for(source_gop: int | None, requested: int | None) -> int:
    """The keyframe interval: ``requested``, else the source's (its longest run of frames from a keyframe), at
    most :data:`MAX_GOP`; 2 (lerobot's ``g``) when the source's is unknown."""
    if requested:
        return int(requested)
    if source_gop and source_gop > 0:
        return max(1, min(int(source_gop), MAX_GOP))
    return 2


def settings_for(codec: str, *, encoder: str, pix_fmt: str, gop: int, crf: int | None = None,
                 preset: str | None = None, device: str = "cpu") -> EncoderSettings:
    """The :class:`EncoderSettings` of ``encoder`` with the defaults above, and the PyAV options they mean.

    Raises:
        UsageError: an encoder that does not write ``codec``.
    """
    codec = canonical_codec(codec) or codec
    if encoder not in (CPU_ENCODERS.get(codec), NVENC_ENCODERS.get(codec)):
        raise UsageError(f"encoder {encoder} does not write {codec}")
    crf = DEFAULT_CRF[codec] if crf is None else int(crf)
    preset = preset or DEFAULT_PRESET[encoder]
    opts = {"g": str(gop)}
    if encoder == "libx264":
        opts.update(crf=str(crf), preset=preset)
    elif encoder == "libx265":
        opts.update(crf=str(crf), preset=preset, **{"x265-params": "log-level=error"})
    elif encoder == "libsvtav1":
        opts.update(crf=str(crf), preset=preset)
    else:  # NVENC: constant QP as lerobot's VideoEncoderConfig maps crf; no B-frames (timestamps); the GPU index
        opts.update(rc="constqp", qp=str(crf), preset=preset, bf="0", gpu=str(nvenc_gpu_index(device)))
    return EncoderSettings(codec, encoder, pix_fmt, gop, crf, preset, opts)


def encoder_available(name: str) -> bool:
    """True when PyAV's FFmpeg has the encoder ``name`` (it may still fail to open: NVENC needs a GPU)."""
    try:
        import av

        av.Codec(name, "w")
    except Exception:
        return False
    return True


def choose_encoder(codec: str, device: str) -> str:
    """The encoder for ``codec`` on ``device`` (``"cpu"`` or ``"cuda"``/``"cuda:N"``).

    Raises:
        UsageError: an unknown codec, or ``cuda`` asked and PyAV has no NVENC encoder for the codec.
    """
    codec = canonical_codec(codec) or codec
    if codec not in CODECS:
        raise UsageError(f"--codec must be one of {', '.join(CODECS)}, not {codec!r}")
    if device == "cpu":
        name = CPU_ENCODERS[codec]
        if not encoder_available(name):
            raise UsageError(f"PyAV's FFmpeg has no {name} encoder for {codec}")
        return name
    if not device.startswith("cuda"):
        raise UsageError(f"--device must be cpu, cuda or cuda:N, not {device!r}")
    name = NVENC_ENCODERS[codec]
    if not encoder_available(name):
        raise UsageError(f"PyAV's FFmpeg has no {name} encoder: use --device cpu")
    return name


def nvenc_gpu_index(device: str) -> int:
    """The GPU index of ``cuda`` / ``cuda:N`` (0 for plain ``cuda``).

    Raises:
        UsageError: not a CUDA device string.
    """
    if device == "cuda":
        return 0
    head, _, n = device.partition(":")
    if head != "cuda" or not n.isdigit():
        raise UsageError(f"--device must be cpu, cuda or cuda:N, not {device!r}")
    return int(n)


def nvenc_note(gpu) -> str | None:
    """What the plan says about encoding on ``gpu`` (a :class:`lerobot_tools.video.nvdec.GpuSpec`, or None): that an
    A100 / H100 / H200 has no NVENC, so the re-encode runs on the CPU (or on an NVENC GPU such as an L4); None for a
    GPU with NVENC or an unknown one."""
    if gpu is None or gpu.cc is None:
        return None
    if tuple(gpu.cc[:2]) in NO_NVENC_CC:
        return (f"{gpu.label} has no NVENC encoder (NVIDIA's Video Encode and Decode GPU Support Matrix: 0 NVENC on "
                "A100/A30 and H100/H200): the re-encode runs on the CPU encoders; an NVENC GPU such as an L4 can "
                "do it with --device cuda")
    return None
