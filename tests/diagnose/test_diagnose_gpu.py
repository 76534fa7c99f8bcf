"""The CUDA decode path of ``diagnose-decode`` (marked ``gpu``): torchcodec on a real GPU, ``cpu_fallback``,
GPU vs CPU frames/s, and the runtime answer agreeing with the static NVDEC table.

Skipped cleanly, with the reason, when no CUDA GPU is visible to torch or torchcodec is a CPU build.
"""

from __future__ import annotations

import pytest

from tests import videoclips

pytestmark = pytest.mark.gpu


def _skip_reason() -> str | None:
    try:
        import torch
    except Exception as exc:  # pragma: no cover - depends on the machine
        return f"torch cannot be imported: {exc}"
    if not torch.cuda.is_available():
        return f"no CUDA GPU visible (torch {torch.__version__}, torch.cuda.is_available() is False)"
    from lerobot_tools.video.environment import collect_environment

    env = collect_environment()
    if not env.torchcodec.importable:
        return f"torchcodec cannot be imported: {env.torchcodec.error}"
    if env.torchcodec.build == "cpu":
        return f"torchcodec {env.torchcodec.version} is a CPU build"
    if videoclips.FFMPEG is None:
        return "ffmpeg not on PATH"
    return None


_REASON = _skip_reason()
if _REASON:
    pytest.skip(_REASON, allow_module_level=True)

from lerobot_tools.diagnose import DiagnoseOptions, diagnose  # noqa: E402
from lerobot_tools.testing.synth import SynthSpec, build_dataset, read_frame_id  # noqa: E402
from lerobot_tools.video.decode import decode_torchcodec, pick_frames  # noqa: E402


@pytest.fixture(scope="module")
def datasets(tmp_path_factory):
    base = tmp_path_factory.mktemp("gpu")
    out = {"h264": build_dataset(base / "h264", SynthSpec(version="v2.1", episode_lengths=(40,), video_codec="h264",
                                                         video_size=(256, 256), gop=10))}
    if videoclips.has_encoder("libsvtav1"):
        out["av1"] = build_dataset(base / "av1", SynthSpec(version="v3.0", episode_lengths=(40,), video_codec="av1",
                                                          video_size=(256, 256), gop=2))
    return out


def test_gpu_decode_returns_the_requested_frames(datasets):
    import numpy as np

    path = str(next(datasets["h264"].glob("videos/**/*.mp4")))
    idx = pick_frames(40, 6, seed=5)
    seen = {}
    run = decode_torchcodec(path, idx, "cuda:0", on_frame=lambda i, t: seen.__setitem__(
        i, read_frame_id(np.ascontiguousarray(t.permute(1, 2, 0).cpu().numpy()))))
    assert run.ok, run.error
    assert run.cpu_fallback is not None  # torchcodec >= 0.10 reports it on CUDA
    assert seen == {i: (0, i) for i in idx}


@pytest.mark.parametrize("name", ["h264", "av1"])
def test_diagnose_device_cuda(datasets, name):
    if name not in datasets:
        pytest.skip("this ffmpeg lacks libsvtav1")
    diag = diagnose([str(datasets[name])], DiagnoseOptions(device="cuda", frames=8))
    assert diag.device_problem is None, diag.device_problem
    g = diag.datasets[0].groups[0]
    gpu_run, cpu_run = g.decode.gpu, g.decode.cpu
    assert cpu_run.ok and gpu_run.ok, gpu_run.error
    assert gpu_run.indices == cpu_run.indices  # the same frames on both devices
    assert isinstance(gpu_run.cpu_fallback, bool)
    assert g.decode.speedup is not None and g.verdict.method == "torchcodec NVDEC check"
    # the runtime answer agrees with the static table for this GPU (a disagreement is a table bug to report)
    from lerobot_tools.video.nvdec import verdict

    static = verdict(diag.gpu, g.codec, g.chroma, g.bit_depth, g.width, g.height)
    assert (g.verdict.decodable == "yes") == (not gpu_run.cpu_fallback)
    if static.confidence == "high":
        assert static.decodable == g.verdict.decodable, (static.reason, gpu_run.fallback_reason)
