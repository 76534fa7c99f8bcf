"""``lrtool reencode`` end to end on real videos: AV1 and H.264 fixtures and lerobot-written datasets re-encoded with
every frame time kept; each verification failure (a dropped frame, a shifted timestamp, a truncated output, a PSNR
below the floor) makes it refuse the file; SIGKILL mid-file leaves the original or the verified new file; a re-run
resumes; info.json changes only when a camera is complete; --undo restores; the distributed shares give the
single-process result; upstream lerobot 0.4.4 loads a re-encoded lerobot dataset with frames above the PSNR floor."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from lerobot_tools._lock import dataset_lock
from lerobot_tools.checks.engine import ValidateOptions
from lerobot_tools.cli import cli
from lerobot_tools.errors import UsageError
from lerobot_tools.reencode import ReencodeOptions, reencode, undo_targets
from lerobot_tools.reencode import settings as rs
from lerobot_tools.reencode import transcode
from lerobot_tools.testing.synth import SynthSpec, build_dataset
from lerobot_tools.validate import validate
from lerobot_tools.video.mp4 import walk_mp4
from lerobot_tools.video.probe import probe_video
from lerobot_tools.video.timing import frame_times

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "fixtures"
LEROBOT_PY = REPO / ".venv-lerobot" / "bin" / "python"


def _copy(src: Path, tmp_path: Path, name: str | None = None) -> Path:
    return Path(shutil.copytree(src, tmp_path / (name or src.name)))


def _videos(root: Path) -> list[Path]:
    return sorted(p for p in (root / "videos").rglob("*.mp4") if ".lrtool" not in p.parts)


def _sha(p: Path) -> str:
    return hashlib.sha256(p.read_bytes()).hexdigest()


def _tree(root: Path) -> dict[str, str]:
    return {p.relative_to(root).as_posix(): _sha(p) for p in sorted(root.rglob("*"))
            if p.is_file() and ".lrtool" not in p.parts}


def _times(p: Path) -> list[int]:
    ft = frame_times(walk_mp4(p, fragments=True))
    return [ft.timescale, *ft.ticks.tolist()]


def _cli(*args) -> tuple[int, str]:
    r = CliRunner().invoke(cli, ["reencode", *map(str, args), "--no-progress"])
    return r.exit_code, r.output


def _non_info(root: Path) -> list[str]:
    (r,) = validate([str(root)], ValidateOptions(deep=True, all_videos=True))
    return [f"{f.check} {f.message}" for f in r.findings if f.severity != "info" or f.check == "F021"]


# ---------------------------------------------------------------------------------------------- end to end
@pytest.mark.parametrize("src, codec", [("datasets/clean_v30", "h264"), ("datasets/clean_v21", "hevc"),
                                        ("real/av1-pandas3", "h264"), ("real/multifile-pandas2", "h264"),
                                        ("real/h264-pandas3", "av1")])
def test_reencode_keeps_every_frame_time_and_validates_clean(src, codec, tmp_path):
    root = _copy(FIXTURES / src, tmp_path)
    before = {p: (_times(p), probe_video(p).frame_count) for p in _videos(root)}
    originals = _tree(root)
    code, out = _cli(root, "--codec", codec)
    assert code == 0, out
    for p, (times, frames) in before.items():
        new = probe_video(p)
        assert new.ok and new.codec == codec and new.frame_count == frames
        assert _times(p) == times  # every frame at the same tick of the same timescale
    info = json.loads((root / "meta/info.json").read_text())
    keys = {vf_key for vf_key, feat in info["features"].items() if feat["dtype"] == "video"}
    assert {info["features"][k]["info"]["video.codec"] for k in keys} == {codec}
    assert _non_info(root) == []  # no F009, no timestamp finding
    assert "re-encoded" in out and "every frame time kept" in out
    (rep,) = undo_targets([str(root)])
    assert rep.exit_status == 0 and rep.info_restored and len(rep.restored) == len(before)
    assert _tree(root) == originals and not (root / ".lrtool").exists()


def test_dry_run_writes_nothing_and_estimates(tmp_path):
    root = _copy(FIXTURES / "datasets/clean_v30", tmp_path)
    before = _tree(root)
    run = reencode([str(root)], ReencodeOptions(dry_run=True))
    assert _tree(root) == before and not (root / ".lrtool").exists()
    d = run.to_dict()["summary"]
    assert d["planned"] == 4 and d["frames"] == 144 and d["measured_fps"] > 0 and d["estimate_s"] > 0


def test_only_undecodable_follows_diagnose_decodes_table(tmp_path):
    h264 = _copy(FIXTURES / "datasets/clean_v21", tmp_path)
    run = reencode([str(h264)], ReencodeOptions(codec="hevc", only_undecodable=True, gpu="H100", dry_run=True))
    assert {f.status for f in run.files()} == {"skipped"}
    assert all(f.reason.startswith("NVDEC on H100") for f in run.files())
    assert any("has no NVENC encoder" in n for n in run.notes)
    av1 = _copy(FIXTURES / "datasets/clean_v30", tmp_path)
    run = reencode([str(av1)], ReencodeOptions(only_undecodable=True, gpu="H100", dry_run=True))
    assert {f.status for f in run.files()} == {"planned"}
    # an L4 decodes AV1, from 128x128 on (NVDEC's minimum coded size): the 64x64 fixture goes to the CPU anyway
    assert {f.status for f in reencode([str(av1)], ReencodeOptions(only_undecodable=True, gpu="L4",
                                                                   dry_run=True)).files()} == {"planned"}
    big = build_dataset(tmp_path / "big", SynthSpec(episode_lengths=(4,), video_codec="av1", video_size=(128, 128)))
    run = reencode([str(big)], ReencodeOptions(only_undecodable=True, gpu="L4", dry_run=True))
    assert {f.status for f in run.files()} == {"skipped"} and run.files()[0].reason.startswith("NVDEC on L4")


# ---------------------------------------------------------------------------------------------- refusals
def _remux(src: Path, dst: Path, *, drop_last: bool = False, shift: int = 0) -> None:
    """Copy the packets of ``src`` into ``dst`` (no re-encode), dropping the last or shifting every timestamp."""
    import av

    with av.open(str(src)) as inp, av.open(str(dst), "w", format="mp4") as out:
        ist = inp.streams.video[0]
        ost = out.add_stream_from_template(ist)
        packets = [p for p in inp.demux(ist) if p.size]
        if drop_last:
            packets = packets[:-1]
        for p in packets:
            p.pts, p.dts = p.pts + shift, (p.dts + shift if p.dts is not None else None)
            p.stream = ost
            out.mux(p)


@pytest.mark.parametrize("fault", ["dropped frame", "shifted timestamp", "truncated output", "low PSNR"])
def test_a_new_file_that_does_not_verify_is_refused_and_the_original_kept(fault, tmp_path, monkeypatch):
    root = _copy(FIXTURES / "datasets/clean_v30", tmp_path)
    before = _tree(root)
    real = transcode.encode_file

    def faulty(src, dst, settings, **kw):
        res = real(src, dst, settings, **kw)
        good = dst.with_name("good-" + dst.name)
        os.replace(dst, good)
        if fault == "dropped frame":
            _remux(good, dst, drop_last=True)
        elif fault == "shifted timestamp":
            _remux(good, dst, shift=1)  # one tick of 1/15360 s: 65 us
        elif fault == "truncated output":
            data = good.read_bytes()
            dst.write_bytes(data[: len(data) * 2 // 3])
        else:
            os.replace(good, dst)
            res.samples = {k: 255 - v for k, v in res.samples.items()}  # the source frames, inverted
        good.unlink(missing_ok=True)
        return res

    monkeypatch.setattr(transcode, "encode_file", faulty)
    run = reencode([str(root)], ReencodeOptions())
    reasons = {f.reason for f in run.files()}
    assert {f.status for f in run.files()} == {"failed"} and run.exit_status == 1
    want = {"dropped frame": "frames, the source ", "shifted timestamp": "apart, more than 1e-06 s",
            "truncated output": "truncated", "low PSNR": "below the floor of 35 dB"}[fault]
    assert all(want in r for r in reasons), reasons
    assert all(r.startswith("the new file does not verify, the original is kept") for r in reasons)
    assert _tree(root) == before  # originals, info.json untouched; no temporary file left
    assert not list(root.rglob(".lrtool-tmp-*"))


def test_refusals_before_any_write(tmp_path):
    root = _copy(FIXTURES / "datasets/clean_v30", tmp_path)
    victim = _videos(root)[0]
    elsewhere = tmp_path / "elsewhere.mp4"
    shutil.move(victim, elsewhere)
    victim.symlink_to(elsewhere)
    run = reencode([str(root)], ReencodeOptions())
    # the dataset is refused before anything is written (the refusal repair, undo and reshard share)
    assert run.files() == [] and "is a symlink to " in run.datasets[0].error and "nothing was changed" in \
        run.datasets[0].error
    assert elsewhere.read_bytes() and victim.is_symlink()
    # another run holds the dataset: one line, nothing written
    root2 = _copy(FIXTURES / "datasets/clean_v21", tmp_path)
    before = _tree(root2)
    with dataset_lock(root2):
        run = reencode([str(root2)], ReencodeOptions(lock_timeout=0))
    assert run.datasets[0].error and "another lrtool run is writing this dataset" in run.datasets[0].error
    assert _tree(root2) == before


def _listing(folder: Path) -> dict[str, str]:
    return {p.relative_to(folder).as_posix(): _sha(p) for p in sorted(folder.rglob("*")) if p.is_file()}


def test_no_write_through_a_symlinked_folder(tmp_path):
    """Every path reencode writes is reached without a symlink: a .lrtool/reencode/ linked to another folder used to
    receive the originals (hard links) and their records; a meta/ linked elsewhere had its info.json rewritten there;
    a videos/ linked elsewhere had that folder's lrtool temporary files removed."""
    # .lrtool/reencode -> elsewhere: no backup can be kept inside the dataset, so no file is replaced
    root = _copy(FIXTURES / "datasets/clean_v21", tmp_path)
    outside = tmp_path / "outside-backups"
    outside.mkdir()
    (root / ".lrtool").mkdir()
    (root / ".lrtool/reencode").symlink_to(outside)
    before = _tree(root)
    run = reencode([str(root)], ReencodeOptions(codec="hevc"))
    reasons = {f.reason for f in run.files()}
    assert {f.status for f in run.files()} == {"failed"} and len(reasons) == 1, reasons
    assert reasons == {".lrtool/reencode is a symlink: reencode writes only real files and folders inside the dataset"}
    assert _listing(outside) == {} and _tree(root) == before

    # meta/ or videos/ -> elsewhere: the dataset is refused before anything is written or swept, as repair and
    # reshard refuse it (lerobot_tools._contain.refuse_escaping_symlinks)
    for folder in ("meta", "videos"):
        root = _copy(FIXTURES / "datasets/clean_v21", tmp_path / folder)
        elsewhere = tmp_path / f"outside-{folder}"
        shutil.move(root / folder, elsewhere)
        (root / folder).symlink_to(elsewhere)
        if folder == "videos":
            (elsewhere / ".lrtool-tmp-0badf00d-someone-elses.mp4").write_bytes(b"not ours")
        kept, before = _listing(elsewhere), _tree(root)
        for dry in (True, False):
            run = reencode([str(root)], ReencodeOptions(codec="hevc", dry_run=dry))
            assert run.files() == [] and run.exit_status != 0
            err = run.datasets[0].error
            assert err.startswith(f"{folder} is a symlink to ") and "lrtool does not re-encode through a " \
                "symlink out of the dataset" in err and "nothing was changed" in err, err
        assert _listing(elsewhere) == kept and _tree(root) == before and not (root / ".lrtool").exists()


def test_undo_restores_info_json_only_from_a_whole_saved_original(tmp_path):
    """The saved original info.json is written atomically and restored by a verified atomic rewrite: a saved
    original that is not a JSON object (cut short) is refused and the current info.json kept (it was restored as
    is: a truncated info.json)."""
    root = _copy(FIXTURES / "datasets/clean_v21", tmp_path)
    info0 = (root / "meta/info.json").read_bytes()
    assert reencode([str(root)], ReencodeOptions(codec="hevc")).exit_status == 0
    (orig,) = (root / ".lrtool/reencode").glob("*/info.json.orig")
    assert orig.read_bytes() == info0  # the text info.json was rewritten from
    now = (root / "meta/info.json").read_bytes()
    orig.write_bytes(info0[: len(info0) // 2])
    (rep,) = undo_targets([str(root)])
    assert rep.exit_status == 1 and not rep.info_restored and len(rep.restored) == 3
    (refused,) = rep.refused
    assert refused.startswith("meta/info.json: info.json.orig: ") and "kept, its original stays in" in refused
    assert (root / "meta/info.json").read_bytes() == now


# ---------------------------------------------------------------------------------------------- resume, info.json
def test_a_rerun_resumes_and_info_json_changes_only_when_a_camera_is_complete(tmp_path, monkeypatch):
    root = _copy(FIXTURES / "datasets/clean_v30", tmp_path)
    info0 = (root / "meta/info.json").read_text()
    real = transcode.encode_file
    top = "observation.images.top"

    def fail_one(src, dst, settings, **kw):
        if src.parts[-3] == top and src.name == "file-001.mp4":
            raise OSError("disk full (simulated)")
        return real(src, dst, settings, **kw)

    monkeypatch.setattr(transcode, "encode_file", fail_one)
    run = reencode([str(root)], ReencodeOptions())
    assert [f.status for f in run.files()].count("failed") == 1
    info = json.loads((root / "meta/info.json").read_text())
    assert run.datasets[0].info_updated == ["observation.images.front"]
    assert info["features"]["observation.images.front"]["info"]["video.codec"] == "h264"
    assert info["features"][top]["info"]["video.codec"] == "av1"  # one of its files is still AV1
    monkeypatch.setattr(transcode, "encode_file", real)
    run = reencode([str(root)], ReencodeOptions())
    assert sorted(f.status for f in run.files()) == ["reencoded", "skipped", "skipped", "skipped"]
    assert run.datasets[0].info_updated == [top]
    assert _non_info(root) == []
    (rep,) = undo_targets([str(root)])  # two runs, undone newest first: every original and info.json back
    assert rep.exit_status == 0 and len(rep.restored) == 4 and rep.runs == 2
    assert (root / "meta/info.json").read_text() == info0


def test_undo_refuses_a_file_changed_since(tmp_path):
    root = _copy(FIXTURES / "datasets/clean_v21", tmp_path)
    assert reencode([str(root)], ReencodeOptions(codec="hevc")).exit_status == 0
    changed = _videos(root)[0]
    changed.write_bytes(changed.read_bytes() + b"\0")
    (rep,) = undo_targets([str(root)])
    assert rep.exit_status == 1 and len(rep.restored) == 2
    assert len(rep.refused) == 1 and "changed since the re-encode" in rep.refused[0]
    assert probe_video(changed).codec == "hevc"  # kept as it is; its original stays in .lrtool/reencode/


def test_drop_originals_keeps_nothing(tmp_path):
    root = _copy(FIXTURES / "datasets/clean_v21", tmp_path)
    code, out = _cli(root, "--drop-originals", "--codec", "hevc")
    assert code == 0, out
    assert not (root / ".lrtool").exists()
    assert _cli(root, "--undo")[0] == 2


@pytest.mark.slow
def test_sigkill_mid_file_leaves_the_original_or_the_verified_file(tmp_path):
    root = build_dataset(tmp_path / "ds", SynthSpec(version="v2.1", episode_lengths=(400,), video_size=(240, 320)))
    video = _videos(root)[0]
    original, times = _sha(video), _times(video)
    env = dict(os.environ, PYTHONPATH=str(REPO))
    proc = subprocess.Popen([sys.executable, "-m", "lerobot_tools", "reencode", str(root), "--codec", "hevc",
                             "--preset", "slow", "--no-progress"], env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 120
    while not list(video.parent.glob(".lrtool-tmp-*")) and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.02)
    assert proc.poll() is None, "the re-encode finished before it could be killed"
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)
    assert _sha(video) == original  # mid-encode: the original, untouched
    assert list(video.parent.glob(".lrtool-tmp-*"))  # what the kill left
    code, out = _cli(root, "--codec", "hevc")
    assert code == 0, out
    assert not list(root.rglob(".lrtool-tmp-*")) and probe_video(video).codec == "hevc" and _times(video) == times


# ---------------------------------------------------------------------------------------------- scale-out
def test_shards_give_the_single_process_result(tmp_path):
    a = _copy(FIXTURES / "real/multifile-pandas3", tmp_path)
    b = _copy(FIXTURES / "datasets/clean_v30", tmp_path)
    run_dir = tmp_path / "run"
    r = CliRunner()
    for rank in (0, 1):
        res = r.invoke(cli, ["reencode", str(a), str(b), "--shard", f"{rank}/2", "--part-out",
                             str(run_dir / f"part-{rank}.json")])
        assert res.exit_code == 0, res.output
    res = r.invoke(cli, ["report", "merge", str(run_dir), "--format", "json"])
    assert res.exit_code == 0, res.output
    doc = json.loads(res.output)
    assert doc["summary"]["reencoded"] == 7 and doc["summary"]["failed"] == 0
    assert sorted(doc["datasets"][1]["info_updated"]) == ["observation.images.front", "observation.images.top"]
    for root in (a, b):
        assert {probe_video(p).codec for p in _videos(root)} == {"h264"} and _non_info(root) == []


# ---------------------------------------------------------------------------------------------- settings, NVENC
def test_settings_defaults_and_their_bounds():
    assert rs.gop_for(2, None) == 2 and rs.gop_for(250, None) == rs.MAX_GOP and rs.gop_for(None, None) == 2
    assert rs.gop_for(250, 5) == 5
    assert rs.pixel_format("h264", None, 10) == "yuv420p" and rs.pixel_format("hevc", None, 10) == "yuv420p10le"
    s = rs.settings_for("h264", encoder="libx264", pix_fmt="yuv420p", gop=2)
    assert s.options == {"g": "2", "crf": "18", "preset": "fast"} and not s.nvenc
    s = rs.settings_for("hevc", encoder="hevc_nvenc", pix_fmt="yuv420p", gop=10, crf=25, device="cuda:1")
    assert s.nvenc and s.options == {"g": "10", "rc": "constqp", "qp": "25", "preset": "p4", "bf": "0", "gpu": "1"}
    with pytest.raises(UsageError):
        rs.settings_for("h264", encoder="libx265", pix_fmt="yuv420p", gop=2)
    with pytest.raises(UsageError):
        ReencodeOptions(only_undecodable=True).check()
    with pytest.raises(UsageError):
        ReencodeOptions(device="gpu").check()


def test_nvenc_choice_and_the_no_nvenc_gpus():
    from lerobot_tools.video.nvdec import lookup_gpu

    assert rs.choose_encoder("h264", "cuda") == "h264_nvenc" and rs.choose_encoder("hevc", "cuda:0") == "hevc_nvenc"
    assert rs.choose_encoder("av1", "cpu") == "libsvtav1"
    for model in ("H100", "A100", "H200"):
        assert "has no NVENC encoder" in rs.nvenc_note(lookup_gpu(model))
    assert rs.nvenc_note(lookup_gpu("L4")) is None


def _cuda_nvenc() -> bool:
    from lerobot_tools.reencode.nvenc import check_nvenc

    try:
        check_nvenc("h264_nvenc", "cuda")
    except UsageError:
        return False
    return True


def test_without_an_nvenc_gpu_the_cuda_device_falls_back_to_the_cpu_and_says_so(tmp_path):
    if _cuda_nvenc():
        pytest.skip("this machine has an NVENC GPU")
    root = _copy(FIXTURES / "datasets/clean_v21", tmp_path)
    times = {p: _times(p) for p in _videos(root)}
    code, out = _cli(root, "--device", "cuda", "--codec", "hevc")
    assert code == 0, out
    assert "re-encode to hevc with libx265" in out and "hevc_nvenc cannot encode on cuda" in out
    assert "A100/A30 and H100/H200 have none" in out and "encoding on the CPU with libx265 instead" in out
    assert all(probe_video(p).codec == "hevc" and _times(p) == t for p, t in times.items())


@pytest.mark.gpu
def test_nvenc_reencode_keeps_every_frame_time(tmp_path):
    if not _cuda_nvenc():
        pytest.skip("needs a CUDA GPU with NVENC (an A100/H100 has none)")
    root = _copy(FIXTURES / "datasets/clean_v30", tmp_path)
    before = {p: _times(p) for p in _videos(root)}
    code, out = _cli(root, "--device", "cuda")
    assert code == 0, out
    assert all(_times(p) == t and probe_video(p).codec == "h264" for p, t in before.items())


# ---------------------------------------------------------------------------------------------- upstream
def _lerobot_python() -> Path:
    if LEROBOT_PY.exists():
        return LEROBOT_PY
    if os.environ.get("CI"):
        pytest.fail("CI must run the upstream check, but .venv-lerobot is missing: run scripts/install.sh")
    pytest.skip(".venv-lerobot is missing: run scripts/install.sh to create it")


@pytest.mark.slow
def test_upstream_lerobot_loads_a_reencoded_lerobot_dataset_within_the_psnr_floor(tmp_path):
    """A dataset lerobot 0.4.4 wrote with AV1 videos, re-encoded to H.264: upstream LeRobotDataset returns, for
    every sample, a frame within the PSNR floor of the original's; validate finds no F009 and no timestamp finding."""
    original = FIXTURES / "real/av1-pandas3"
    root = _copy(original, tmp_path, "reencoded")
    code, out = _cli(root, "--codec", "h264")
    assert code == 0, out
    assert _non_info(root) == []
    env = dict(os.environ, HF_HOME=str(tmp_path / "hf-home"), HF_HUB_OFFLINE="1")
    env.pop("PYTHONPATH", None)
    proc = subprocess.run([str(_lerobot_python()), str(REPO / "scripts" / "upstream_frames.py"), str(tmp_path / "f"),
                           str(original), str(root)], capture_output=True, text=True, env=env, timeout=900)
    lines = [json.loads(x) for x in proc.stdout.splitlines() if x.startswith("{")]
    assert len(lines) == 2 and all(not x.get("errors") and "error" not in x for x in lines), proc.stderr[-2000:]
    a, b = np.load(tmp_path / "f" / "0.npz"), np.load(tmp_path / "f" / "1.npz")
    cams = [k for k in a.files if k.startswith("0|") and k not in ("0|episode_index", "0|frame_index")]
    assert cams and set(a.files) == set(b.files)
    n = lines[0]["read"]
    assert n == json.loads((original / "meta/info.json").read_text())["total_frames"]
    for i in range(n):
        for cam in (c.split("|", 1)[1] for c in cams):
            assert transcode.psnr(a[f"{i}|{cam}"], b[f"{i}|{cam}"]) >= transcode.DEFAULT_PSNR_FLOOR, (i, cam)
