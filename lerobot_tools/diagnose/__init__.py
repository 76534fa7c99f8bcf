"""``diagnose-decode`` as a library: will each video stream decode on a GPU's NVDEC, or go to the CPU, and why.

Pipeline (behind ``lrtool diagnose-decode``; decision logic: docs/video-decoding.md#decision):

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
5. **Advice** per problem: decode on CPU (with a worker estimate), the ``lrtool reencode`` command, or an
   AV1-capable GPU generation; re-download for missing/placeholder/truncated files.

Results are dataclasses with ``to_dict`` (JSON) and :func:`render_text`.
Exit status (:attr:`Diagnosis.exit_status`): 1 when the requested device cannot decode (no GPU, CPU-only
torch or torchcodec ...), when a target cannot be read, or when a video is missing/placeholder/truncated/
undecodable; else 0. NVDEC "not decodable" verdicts are warnings (the data still loads, on the CPU).

Modules: :mod:`.model` (options and results), :mod:`.probe` (phase 1, worker processes), :mod:`.pipeline`
(phases 2-5 and :func:`diagnose`), :mod:`.render` (text and JSON reports).
"""

from lerobot_tools.diagnose.model import (
    DEFAULT_TARGET_FPS,
    DatasetDiagnosis,
    DiagnoseOptions,
    Diagnosis,
    ERROR,
    GOP_WARN,
    INFO,
    MAX_EXAMPLES,
    Mismatch,
    Problem,
    StreamGroup,
    StreamProbe,
    WARNING,
    parse_device,
)
from lerobot_tools.diagnose.probe import compare_with_info, probe_target, probe_targets
from lerobot_tools.diagnose.pipeline import (
    analyze_dataset,
    diagnose,
    group_streams,
    reencode_command,
    reencode_plan,
)
from lerobot_tools.diagnose.render import render_json, render_text, summary_line

__all__ = [
    "DEFAULT_TARGET_FPS",
    "DatasetDiagnosis",
    "DiagnoseOptions",
    "Diagnosis",
    "ERROR",
    "GOP_WARN",
    "INFO",
    "MAX_EXAMPLES",
    "Mismatch",
    "Problem",
    "StreamGroup",
    "StreamProbe",
    "WARNING",
    "analyze_dataset",
    "compare_with_info",
    "diagnose",
    "group_streams",
    "parse_device",
    "probe_target",
    "probe_targets",
    "reencode_command",
    "reencode_plan",
    "render_json",
    "render_text",
    "summary_line",
]
