"""``lrtool diagnose-decode`` on small real datasets whose videos are encoded by ffmpeg during the tests.

Datasets: a v3.0 AV1 dataset written by :mod:`lerobot_tools.testing.synth` (LeRobot layout, 2 episodes per file), and
v2.1 datasets written by synth without videos, around clips encoded with ``tests/videoclips.py``: H.264,
HEVC 8/10-bit, HEVC 4:4:4, H.264 4:4:4, MPEG-4 Part 2; plus a broken copy (Git LFS pointer, truncated file,
missing file) and one whose info.json lies about the codec. No GPU is needed: on this machine ``--device cuda``
must fail with the exact reasons and still report the CPU probe.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from tests import videoclips

from lerobot_tools.cli import cli
from lerobot_tools.diagnose import DiagnoseOptions, compare_with_info, diagnose
from lerobot_tools.video.decode import decode_pyav, decode_test, decode_torchcodec, pick_frames, workers_needed
from lerobot_tools.video.environment import Environment, GpuDevice, LibraryInfo, collect_environment, one_line_error
from lerobot_tools.video.probe import probe_video

if videoclips.FFMPEG is None:
    pytest.skip("ffmpeg not on PATH: these tests encode real clips", allow_module_level=True)
pytest.importorskip("av", reason="PyAV is a dependency of lerobot-tools")

KEY = "observation.images.front"
FPS = 10
FRAMES = 20  # per episode (videoclips.encode default: 20 frames at 10 fps)

# name -> (encoder, pix_fmt, (W, H), expected codec, expected pix_fmt)
CLIP_DATASETS = {
    "h264": ("libx264", "yuv420p", (160, 144), "h264", "yuv420p"),
    "hevc8": ("libx265", "yuv420p", (160, 144), "hevc", "yuv420p"),
    "hevc10": ("libx265", "yuv420p10le", (160, 144), "hevc", "yuv420p10le"),
    "hevc444": ("libx265", "yuv444p", (160, 144), "hevc", "yuv444p"),
    "h264_444": ("libx264", "yuv444p", (160, 144), "h264", "yuv444p"),
    "mpeg4": ("mpeg4", "yuv420p", (160, 144), "mpeg4", "yuv420p"),
}


def _clip_dataset(root: Path, encoder: str, pix_fmt: str, size: tuple[int, int], episodes: int = 2,
                  declared_codec: str | None = None, gop: int = 2, movflags: str | None = None) -> Path:
    """A v2.1 dataset (synth, no videos) with one clip per episode encoded by tests/videoclips.py."""
    from lerobot_tools.testing.synth import SynthSpec, build_dataset

    w, h = size
    build_dataset(root, SynthSpec(version="v2.1", episode_lengths=(FRAMES,) * episodes, fps=FPS, video_keys=(KEY,),
                                  video_codec=None, video_size=(h, w)))
    for ep in range(episodes):
        out = root / f"videos/chunk-000/{KEY}/episode_{ep:06d}.mp4"
        out.parent.mkdir(parents=True, exist_ok=True)
        videoclips.encode(out, codec=encoder, size=f"{w}x{h}", frames=FRAMES, fps=FPS, pix_fmt=pix_fmt, gop=gop,
                          movflags=movflags)
    info_path = root / "meta/info.json"
    info = json.loads(info_path.read_text())
    codec = declared_codec or {"libx264": "h264", "libx265": "hevc", "mpeg4": "mpeg4"}[encoder]
    info["features"][KEY]["info"] = {"video.height": h, "video.width": w, "video.codec": codec,
                                     "video.pix_fmt": pix_fmt, "video.is_depth_map": False, "video.fps": FPS,
                                     "video.channels": 3, "has_audio": False}
    info_path.write_text(json.dumps(info, indent=4))
    return root


@pytest.fixture(scope="session")
def data(tmp_path_factory) -> dict[str, Path]:
    """All test datasets, built once per session (a few seconds)."""
    from lerobot_tools.testing.synth import SynthSpec, build_dataset

    base = tmp_path_factory.mktemp("diag")
    out: dict[str, Path] = {}
    for name, (enc, pix, size, _, _) in CLIP_DATASETS.items():
        if not videoclips.has_encoder(enc):
            continue
        out[name] = _clip_dataset(base / name, enc, pix, size)
    if videoclips.has_encoder("libsvtav1"):
        # LeRobot's default: AV1, v3.0, several episodes per file, GOP 2
        out["av1"] = build_dataset(base / "av1", SynthSpec(version="v3.0", episode_lengths=(12, 8, 10), fps=FPS,
                                                           video_codec="av1", video_size=(128, 128),
                                                           episodes_per_file=2))
    # broken: 4 episodes; 1 = Git LFS pointer, 2 = truncated (cut mid-mdat), 3 = missing
    broken = _clip_dataset(base / "broken", "libx264", "yuv420p", (160, 144), episodes=4)
    vdir = broken / f"videos/chunk-000/{KEY}"
    (vdir / "episode_000001.mp4").write_text(videoclips.LFS_POINTER)
    full = vdir / "episode_000002.mp4"
    videoclips.truncate_copy(full, vdir / "cut.tmp", keep=full.stat().st_size // 2)
    os.replace(vdir / "cut.tmp", full)
    (vdir / "episode_000003.mp4").unlink()
    out["broken"] = broken
    # info.json says AV1 / 640x480, the files are H.264 160x144
    out["liar"] = _clip_dataset(base / "liar", "libx264", "yuv420p", (160, 144), declared_codec="av1")
    info = json.loads((out["liar"] / "meta/info.json").read_text())
    info["features"][KEY]["shape"] = [480, 640, 3]
    (out["liar"] / "meta/info.json").write_text(json.dumps(info, indent=4))
    return out


def need(data, name):
    if name not in data:
        pytest.skip(f"this ffmpeg lacks the encoder for {name}")
    return data[name]


def run_cli(*args) -> tuple[int, str, str]:
    res = CliRunner().invoke(cli, ["diagnose-decode", *map(str, args)], catch_exceptions=False)
    return res.exit_code, res.stdout, res.stderr


@pytest.fixture(scope="session")
def h100(data):
    """One library run over every dataset for --gpu H100, frames=4 (shared by the verdict tests)."""
    names = [n for n in (*CLIP_DATASETS, "av1") if n in data]
    diag = diagnose([str(data[n]) for n in names], DiagnoseOptions(gpu="H100", frames=4))
    return {n: d for n, d in zip(names, diag.datasets)}, diag


# ------------------------------------------------------------------------------------------------ library

@pytest.mark.parametrize("name, decodable", [("h264", "yes"), ("hevc8", "yes"), ("hevc10", "yes"), ("hevc444", "yes"),
                                             ("h264_444", "no"), ("mpeg4", "yes"), ("av1", "no")])
def test_verdicts_for_h100(data, h100, name, decodable):
    need(data, name)
    by_name, _ = h100
    dd = by_name[name]
    assert dd.error is None and not dd.has_errors, dd.problems
    (g,) = dd.groups
    if name in CLIP_DATASETS:
        _, _, (w, h), codec, pix = CLIP_DATASETS[name]
        assert (g.codec, g.pix_fmt, g.width, g.height) == (codec, pix, w, h)
    else:
        assert (g.codec, g.pix_fmt, g.width, g.height) == ("av1", "yuv420p", 128, 128)
    assert g.verdict.decodable == decodable
    # the CPU decode test really decoded the frames and gives a worker estimate
    assert g.decode.cpu.ok and g.decode.cpu.frames == 4 and g.decode.cpu.frame_shape[0] == 3
    assert g.cpu_workers >= 1
    kinds = {p.kind for p in dd.problems}
    assert ("nvdec-unsupported" in kinds) == (decodable == "no")


def test_hevc444_carries_the_torchcodec_caveat(data, h100):
    need(data, "hevc444")
    dd = h100[0]["hevc444"]
    g = dd.groups[0]
    import torchcodec

    version = torchcodec.__version__
    if tuple(int(x) for x in version.split("+")[0].split(".")[:2]) >= (0, 17):
        assert g.verdict.library_note is None
    else:
        assert g.verdict.library_note and "0.17" in g.verdict.library_note
        assert any(p.kind == "library-fallback" for p in dd.problems)


def test_av1_advice_has_workers_reencode_and_gpus(data, h100):
    need(data, "av1")
    g = h100[0]["av1"].groups[0]
    text = "\n".join(g.actions)
    assert "CPU worker" in text and f"{g.cpu_workers} CPU worker" in text
    # the advice names lrtool reencode (every frame time kept, verified, info.json updated), not a shell loop
    assert "lrtool reencode" in text and "--codec h264 --only-undecodable --gpu H100" in text
    assert "every frame and its timestamp kept" in text and "ffmpeg -i" not in text
    assert "L4" in text and "A10G" in text


def test_reencode_command_really_produces_h264(data, h100, tmp_path):
    """Run the suggested `lrtool reencode` on a copy of the AV1 dataset: every file becomes H.264 in place, with the
    same frames, and a second diagnosis finds nothing left to re-encode."""
    import shlex

    from click.testing import CliRunner

    from lerobot_tools.cli import cli

    need(data, "av1")
    g = h100[0]["av1"].groups[0]
    assert g.reencode["codec"] == "h264" and g.reencode["files"] == 2 and g.reencode["cwd"] == str(data["av1"])
    assert any(a.startswith("re-encode") and a.endswith(g.reencode["command"]) for a in g.actions)
    copy = shutil.copytree(data["av1"], tmp_path / "av1")
    args = shlex.split(g.reencode["command"])
    assert args[:3] == ["lrtool", "reencode", str(data["av1"])]
    olds = {p: probe_video(p) for p in sorted(copy.glob(f"videos/{KEY}/chunk-*/file-???.mp4"))}
    result = CliRunner().invoke(cli, ["reencode", str(copy), *args[3:], "--no-progress"])
    assert result.exit_code == 0, result.output
    assert len(olds) == 2
    for src, old in olds.items():
        new = probe_video(src)
        assert new.ok and new.codec == "h264" and new.pix_fmt == "yuv420p"
        assert new.frame_count == old.frame_count and abs(new.duration_s - old.duration_s) < 1e-6


def test_l4_and_a10g_decode_av1(data):
    need(data, "av1")
    for gpu in ("L4", "A10G"):
        diag = diagnose([str(data["av1"])], DiagnoseOptions(gpu=gpu, frames=0))
        g = diag.datasets[0].groups[0]
        assert g.verdict.decodable == "yes" and g.decode is None and not g.actions


def test_broken_files_are_findings_not_tracebacks(data):
    diag = diagnose([str(data["broken"])], DiagnoseOptions(frames=2))
    dd = diag.datasets[0]
    by_check = {p.check: p for p in dd.problems}  # the catalogue's IDs and severities, as validate reports them
    assert by_check["F004"].paths == [f"videos/chunk-000/{KEY}/episode_000001.mp4"]
    assert "Git LFS pointer" in by_check["F004"].message and "git lfs pull" in by_check["F004"].action
    assert by_check["F008"].paths == [f"videos/chunk-000/{KEY}/episode_000002.mp4"]
    assert "truncated" in by_check["F008"].message
    assert by_check["F002"].paths == [f"videos/chunk-000/{KEY}/episode_000003.mp4"]
    assert all(by_check[k].severity == "error" for k in ("F004", "F008", "F002"))
    assert diag.summary()["unusable_files"] == 3 and diag.exit_status == 1
    # the healthy episode 0 was still probed and decoded
    assert dd.groups[0].members == [(KEY, f"videos/chunk-000/{KEY}/episode_000000.mp4")] and dd.groups[0].decode.cpu.ok


def test_all_files_reads_every_header(data):
    ds = need(data, "hevc10")
    one = diagnose([str(ds)], DiagnoseOptions(frames=0)).datasets[0]
    every = diagnose([str(ds)], DiagnoseOptions(frames=0, all_files=True)).datasets[0]
    assert len(one.streams) == 1 and len(every.streams) == 2
    assert len(every.groups) == 1 and len(every.groups[0].members) == 2  # identical streams grouped
    assert any("--all-files" in n for n in one.notes)


def test_metadata_mismatches(data):
    dd = diagnose([str(data["liar"])], DiagnoseOptions(frames=0)).datasets[0]
    fields = {m.field for s in dd.streams for m in s.mismatches}
    assert fields == {"video.codec", "shape"}
    p = next(p for p in dd.problems if p.check == "F009" and "video.codec" in p.message)
    assert p.severity == "warning" and "av1" in p.message and "h264" in p.message
    assert not dd.has_errors


def test_fragmented_mp4_gets_frames_and_gop_by_demux(tmp_path):
    ds = _clip_dataset(tmp_path / "frag", "libx264", "yuv420p", (160, 144), gop=5,
                       movflags="frag_keyframe+empty_moov")
    dd = diagnose([str(ds)], DiagnoseOptions(gpu="H100", frames=3)).datasets[0]
    g = dd.groups[0]
    assert g.frame_count == FRAMES and g.gop_max == 5 and g.decode.cpu.ok
    p = next(p for p in dd.problems if p.kind == "fragmented")
    assert p.severity == "info" and p.count == 2


def test_compare_with_info_units():
    class P:  # the probe facts compare_with_info reads
        codec, pix_fmt, width, height, fps = "hevc", "yuv420p10le", 640, 480, 30.0

    feat = {"shape": [3, 480, 640], "names": ["channels", "height", "width"],
            "info": {"video.codec": "h265", "video.pix_fmt": "yuv420p", "video.fps": 30}}
    ms = compare_with_info(feat, 15, P)
    assert {m.field for m in ms} == {"video.pix_fmt", "fps"}  # h265 == hevc; [C, H, W] shape matches


def test_mig_slice_without_nvdec(data):
    ds = need(data, "h264")
    g = diagnose([str(ds)], DiagnoseOptions(gpu="A100:1g.5gb", frames=0)).datasets[0].groups[0]
    assert g.verdict.decodable == "no" and "0 NVDEC" in g.verdict.reason
    assert any("+me" in a for a in g.actions) and not any(a.startswith("re-encode") for a in g.actions)


# ------------------------------------------------------------------------------------------------ CLI

def test_cli_gpu_h100_on_av1(data):
    ds = need(data, "av1")
    code, out, err = run_cli(ds, "--gpu", "H100", "--frames", "4")
    assert code == 0, out + err
    assert "NVDEC on H100: NOT decodable" in out and "no AV1 decoder" in out
    assert "lrtool reencode" in out and "--codec h264" in out and "CPU worker" in out
    assert "Environment" in out and "torchcodec" in out and "PyAV" in out
    assert "Summary:" in out and "0/1 stream group(s) decodable, 1 go to CPU" in out


def test_cli_gpu_l4_on_av1(data):
    ds = need(data, "av1")
    code, out, _ = run_cli(ds, "--gpu", "L4", "--frames", "0")
    assert code == 0
    assert "NVDEC on L4: decodable" in out and "NOT decodable" not in out and "lrtool reencode" not in out


def test_cli_device_cuda_without_gpu(data):
    import torch

    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU; see test_diagnose_gpu.py")
    ds = need(data, "h264")
    code, out, err = run_cli(ds, "--device", "cuda", "--frames", "3")
    assert code == 1
    assert "cannot decode on the requested device cuda:0" in out and "cannot decode on the requested device" in err
    assert "no CUDA GPU is visible to torch (torch.cuda.is_available() is False)" in out
    import torchcodec

    if torch.version.cuda is None:
        assert f"torch {torch.__version__} is a CPU-only build" in out
    if torchcodec.__version__.endswith("+cpu"):
        assert "Unsupported device: cuda" in out and "CPU-only build" in out
    # the CPU probe is complete
    assert "stream g1: h264 High yuv420p (4:2:0 8-bit) 160x144" in out
    assert "CPU decode: 3 random frames" in out
    assert err.count("\n") == 1  # one line on stderr, no traceback


def test_cli_json_parses(data):
    ds = need(data, "av1")
    code, out, _ = run_cli(ds, "--gpu", "H100", "--frames", "2", "--format", "json")
    assert code == 0
    doc = json.loads(out)
    # the top level every command shares (docs/output.md), then its own keys
    assert list(doc)[:4] == ["command", "datasets", "summary", "exit_status"] and doc["exit_status"] == 0
    assert doc["command"] == "diagnose-decode" and doc["gpu"]["model"] == "H100" and doc["gpu"]["cc"] == "9.0"
    g = doc["datasets"][0]["groups"][0]
    assert g["codec"] == "av1" and g["verdict"]["decodable"] == "no" and g["decode"]["cpu"]["frames"] == 2
    assert doc["summary"]["nvdec"]["no"] == 1 and doc["environment"]["torchcodec"]["version"]
    assert doc["datasets"][0]["streams"][0]["codec"] == "av1"


def test_repeated_defects_are_grouped_like_validate_findings(tmp_path):
    if not videoclips.has_encoder("libx264"):
        pytest.skip("ffmpeg with libx264 needed")
    ds = _clip_dataset(tmp_path / "ds", "libx264", "yuv420p", (160, 144), episodes=4)
    for ep in (1, 2, 3):
        (ds / f"videos/chunk-000/{KEY}/episode_{ep:06d}.mp4").unlink()
    dd = diagnose([str(ds)], DiagnoseOptions(frames=0)).datasets[0]
    (p,) = [p for p in dd.problems if p.check == "F002"]
    assert p.count == 3 and len(p.paths) == 3 and p.kind == "video-file-missing" and p.severity == "error"
    # the group line is the first occurrence's own message (identical for all three), count and first paths
    assert p.message.startswith(f"{KEY}: video file is missing (3 occurrences; e.g. videos/chunk-000/{KEY}/episode_000001.mp4")
    assert "group" not in p.to_dict() and p.to_dict()["check"] == "F002"


def test_cli_broken_dataset_exit_1(data):
    code, out, err = run_cli(data["broken"], "--frames", "0")
    assert code == 1 and "Traceback" not in out + err
    assert "F004" in out and "episode_000001.mp4" in out and "git lfs pull" in out
    assert "F008" in out and "truncated" in out and "episode_000002.mp4" in out
    assert "F002" in out and "missing" in out and "episode_000003.mp4" in out


def test_cli_bad_arguments_exit_2(data, tmp_path):
    ds = need(data, "h264")
    for args, msg in ((["--gpu", "Z9000"], "unknown GPU model 'Z9000'"), (["--device", "gpu"], "--device must be"),
                      (["--device", "cpu:1"], "--device must be")):
        code, out, err = run_cli(ds, *args)
        assert code == 2 and msg in err and err.count("\n") == 1 and out == ""
    bad = tmp_path / "mixture.json"
    bad.write_text("{not json")
    code, _, err = run_cli(bad)
    assert code == 2 and "mixture.json" in err
    code, _, _ = run_cli(ds, "--frames", "-1")
    assert code == 2


def test_cli_unresolved_target_exit_1(tmp_path):
    code, out, _ = run_cli(tmp_path / "nope", "--frames", "0")
    assert code == 1 and "cannot diagnose" in out


def test_mixture_jobs_1_and_2_agree(data, tmp_path):
    names = [n for n in ("h264", "mpeg4", "broken", "liar", "av1") if n in data]
    mix = tmp_path / "mix.txt"
    mix.write_text("".join(f"{data[n]}\n" for n in names))

    def strip(doc):
        for d in doc["datasets"]:
            d["seconds"] = 0
            for g in d["groups"]:
                g["decode"] = None
        return doc["datasets"]

    outs = []
    for jobs in ("1", "2"):
        code, out, _ = run_cli(mix, "--gpu", "H100", "--frames", "0", "--format", "json", "--jobs", jobs)
        assert code == 1  # the broken dataset
        outs.append(strip(json.loads(out)))
    assert outs[0] == outs[1] and [d["target"] for d in outs[0]] == [str(data[n]) for n in names]


# ------------------------------------------------------------------------------------------------ decode

def test_decoded_frames_are_the_requested_ones(tmp_path):
    """torchcodec and PyAV return exactly the frames asked for (synth frames carry their own index)."""
    import numpy as np

    from lerobot_tools.testing.synth import SynthSpec, build_dataset, read_frame_id

    root = build_dataset(tmp_path / "ds", SynthSpec(version="v2.1", episode_lengths=(30,), video_codec="h264",
                                                   video_size=(64, 64), gop=10))
    path = str(next(root.glob("videos/**/*.mp4")))
    idx = pick_frames(30, 6, seed=3)
    seen_tc, seen_av = {}, {}
    run = decode_torchcodec(path, idx, on_frame=lambda i, t: seen_tc.__setitem__(i, read_frame_id(
        np.ascontiguousarray(t.permute(1, 2, 0).numpy()))))
    assert run.ok and run.ms_per_frame > 0 and run.cpu_fallback is None
    run2 = decode_pyav(path, idx, on_frame=lambda i, a: seen_av.__setitem__(i, read_frame_id(a)))
    assert run2.ok and run2.library.startswith("PyAV")
    assert seen_tc == seen_av == {i: (0, i) for i in idx}


def test_decode_test_and_helpers(tmp_path):
    clip = videoclips.encode(tmp_path / "c.mp4", codec="libx264", frames=20)
    t = decode_test(str(clip), 20, k=5, seed=1)
    assert t.cpu.ok and t.indices == pick_frames(20, 5, seed=1) and len(set(t.indices)) == 5 and t.gpu is None
    assert pick_frames(3, 8) and sorted(pick_frames(3, 8)) == [0, 1, 2]
    bad = tmp_path / "bad.mp4"
    bad.write_bytes(b"\x00" * 64)
    r = decode_torchcodec(str(bad), [0])
    assert not r.ok and r.error and "\n" not in r.error
    assert workers_needed(3.0, 1000) == 3 and workers_needed(2.4, 1000) == 3 and workers_needed(0.01, 10) == 1
    with pytest.raises(ValueError):
        workers_needed(0, 10)


# ------------------------------------------------------------------------------------------------ environment

def test_environment_reports_this_machine():
    import av
    import torch
    import torchcodec

    env = collect_environment()
    assert env.torch.version == torch.__version__ and env.torchcodec.version == torchcodec.__version__
    assert env.pyav.version == av.__version__ and env.pyav.ffmpeg.get("libavcodec")
    assert env.torchcodec.ffmpeg.get("libavcodec")  # the FFmpeg torchcodec loaded
    assert env.torch.build == ("cpu" if torch.version.cuda is None else "cuda")
    if torchcodec.__version__.endswith("+cpu"):
        assert env.torchcodec.build == "cpu"
    assert "av1" not in (env.av1_decoders["PyAV"] or [])  # FFmpeg's native av1 decoder needs a hwaccel
    assert env.cuda_available == torch.cuda.is_available()
    json.dumps(env.to_dict())


def test_gpu_path_rungs_are_named():
    ok = LibraryInfo("torch", version="2.5.0+cu124", build="cuda", cuda="12.4")
    tc_cpu = LibraryInfo("torchcodec", version="0.13.0+cpu", build="cpu")
    tc_cuda = LibraryInfo("torchcodec", version="0.14.0", build="cuda")
    pyav = LibraryInfo("PyAV", version="18.1.0")
    gpu = GpuDevice(0, "NVIDIA H100 80GB HBM3", (9, 0))
    e = Environment("3.11", "linux", ok, tc_cuda, pyav, cuda_available=True, gpus=[gpu], libnvcuvid=None)
    assert e.gpu_path_problems(0) == []
    assert e.gpu_path_problems(1) == ["cuda:1 does not exist (1 CUDA device(s) visible)"]
    e.torchcodec = tc_cpu
    assert "torchcodec 0.13.0+cpu is a CPU-only build" in e.gpu_path_problems(0)[0]
    e.torchcodec, e.libnvcuvid = tc_cuda, "libnvcuvid.so.1: cannot open shared object file"
    assert "NVIDIA_DRIVER_CAPABILITIES" in e.gpu_path_problems(0)[0]
    broken = LibraryInfo("torchcodec", installed="0.14.0", build="cuda",
                         error="cannot load libnvrtc.so.13 (cannot open shared object file)")
    cpu_torch = LibraryInfo("torch", version="2.13.0+cpu", build="cpu")
    e2 = Environment("3.11", "linux", cpu_torch, broken, pyav, cuda_available=False, gpus=[], libnvcuvid="missing")
    problems = e2.gpu_path_problems(0)
    assert problems[0].startswith("torch 2.13.0+cpu is a CPU-only build")
    assert "torch.cuda.is_available() is False" in problems[1]
    assert "libnvrtc.so.13" in problems[2] and len(problems) == 3


def test_one_line_error_prefers_the_missing_library():
    try:
        try:
            raise OSError("libnvrtc.so.13: cannot open shared object file: No such file or directory")
        except OSError as inner:
            raise RuntimeError("Could not load libtorchcodec. Likely causes:\n 1. FFmpeg ...\n 2. ...") from inner
    except RuntimeError as exc:
        assert one_line_error(exc) == "cannot load libnvrtc.so.13 (cannot open shared object file)"
    assert one_line_error(ValueError("a\nb")) == "ValueError: a"


# ------------------------------------------------------------------------------------------------ startup

def test_help_and_validate_do_not_import_torch(data):
    ds = str(data["h264"]) if "h264" in data else str(data["broken"])
    code = ("import sys\nfrom lerobot_tools.cli import main\n"
            f"for args in (['--help'], ['diagnose-decode', '--help'], ['validate', {ds!r}]):\n"
            "    try:\n        main(args)\n    except SystemExit:\n        pass\n"
            "bad = [m for m in ('torch', 'torchcodec', 'datasets') if m in sys.modules]\n"
            "print('IMPORTED', bad)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert "IMPORTED []" in out and "diagnose-decode" in out and "Summary:" in out
