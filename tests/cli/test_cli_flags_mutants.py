"""Documented CLI flags that no other test exercises through the CLI, each asserted on its effect (not only the exit
status): ``validate --all-videos / --deep`` (every decoder header), ``validate --jobs`` (worker processes),
``validate --progress``, ``diagnose-decode --target-fps``, ``prefetch --resolve-requests``,
``smoke --epoch-max-frames / --batch-size / --batches / --pool-size``, ``reshard`` and ``diagnose-decode
--progress``, and the ``--slurm-*`` options that shape the job script.
"""

from __future__ import annotations

import json
import math
import os
import shutil
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from lerobot_tools import validate as validate_mod
from lerobot_tools.cli import cli
from lerobot_tools.testing.synth import SynthSpec, build_dataset, encode_video, frame_pixels
from tests.hubserver import HubServer, read_folder

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "fixtures" / "datasets"
KEY = "observation.images.front"
needs_ffmpeg = pytest.mark.skipif(shutil.which("ffmpeg") is None, reason="system ffmpeg not installed")


def invoke(*args):
    return CliRunner().invoke(cli, [str(a) for a in args])


# ---------------------------------------------------------------------------------------- validate --all-videos
@needs_ffmpeg
def test_validate_all_videos_and_deep_read_the_header_of_every_video_file(tmp_path):
    """Episode 1's file is yuv444p where info.json says yuv420p: only the decoder header (PyAV) says so, and it is
    read for the first file of a video key unless every header is asked for."""
    root = build_dataset(tmp_path / "ds", SynthSpec(version="v2.1", episode_lengths=(6, 5), state_dim=2,
                                                   action_dim=2))
    mp4 = root / f"videos/chunk-000/{KEY}/episode_000001.mp4"
    encode_video(mp4, np.stack([frame_pixels(1, k, 64, 64) for k in range(5)]), fps=10, codec="h264",
                 pix_fmt="yuv444p")

    def run(*flags):
        r = invoke("validate", root, "--format", "json", *flags)
        assert r.exit_code in (0, 1), r.output
        (d,) = json.loads(r.stdout)["datasets"]
        f009 = [(f["path"], f["message"]) for f in d["findings"] if f["check"] == "F009"]
        gap = [n["checks"] for n in d["not_checked"] if n["checks"].startswith("F009")]
        return f009, gap

    f009, gap = run()
    assert f009 == [] and gap == ["F009 (codec/pix_fmt of every file)"], (f009, gap)
    want = [(f"videos/chunk-000/{KEY}/episode_000001.mp4",
             f"{KEY}: pix_fmt is yuv444p but info.json says yuv420p")]
    for flag in ("--all-videos", "--deep"):
        f009, gap = run(flag)
        assert f009 == want and gap == [], (flag, f009, gap)


# --------------------------------------------------------------------------------------------- validate --jobs
_PIDS: Path | None = None
_ORIGINAL = validate_mod._validate_one
_TEST_PROCESS = os.getpid()


def _recording_validate_one(item):
    """Module level, so the worker processes can unpickle it: records the process that validated a target. In a
    worker, the item waits (bounded) until two processes have taken one: on a loaded machine one worker could
    otherwise take all three before the other has started, and the test would not learn whether two ran."""
    import time

    with open(_PIDS, "a") as fh:
        fh.write(f"{os.getpid()}\n")
    if os.getpid() != _TEST_PROCESS:
        deadline = time.monotonic() + 120
        while len(set(_PIDS.read_text().split())) < 2 and time.monotonic() < deadline:
            time.sleep(0.01)
    return _ORIGINAL(item)


def test_validate_jobs_runs_targets_in_worker_processes_with_the_same_report(tmp_path, monkeypatch):
    global _PIDS
    _PIDS = tmp_path / "pids"
    monkeypatch.setattr(validate_mod, "_validate_one", _recording_validate_one)
    targets = [FIXTURES / n for n in ("clean_v21", "broken_wrong_totals", "broken_timestamps")]

    def run(jobs: str) -> tuple[list, set[int]]:
        _PIDS.write_text("")
        r = invoke("validate", *targets, "--format", "json", "--jobs", jobs)
        assert r.exit_code == 1, r.output
        doc = json.loads(r.stdout)
        reports = [(d["target"], [(f["check"], f["message"]) for f in d["findings"]]) for d in doc["datasets"]]
        return reports, {int(x) for x in _PIDS.read_text().split()}

    serial, pids1 = run("1")
    parallel, pids2 = run("2")
    assert pids1 == {os.getpid()}, pids1
    assert len(pids2) == 2 and os.getpid() not in pids2, pids2  # two workers, none of it in this process
    assert parallel == serial and [t for t, _ in serial] == [str(t) for t in targets]


def test_validate_progress_bar_only_with_progress(tmp_path):
    targets = [FIXTURES / "clean_v21", FIXTURES / "clean_v30"]
    on = CliRunner().invoke(cli, ["validate", *map(str, targets), "--progress"])
    off = CliRunner().invoke(cli, ["validate", *map(str, targets), "--no-progress"])
    assert on.exit_code == off.exit_code == 0, on.output
    assert "validate:" in on.stderr and "0/2" in on.stderr, on.stderr  # the bar (cleared when done)
    assert off.stderr == "", off.stderr
    assert on.stdout == off.stdout or on.stdout.splitlines()[:-1] == off.stdout.splitlines()[:-1]


# ----------------------------------------------------------------------------------- diagnose-decode --target-fps
def test_diagnose_decode_target_fps_sets_the_cpu_worker_estimate():
    """CPU workers = ceil(target_fps x measured ms per frame / 1000): 1 at 1 frame/s, hundreds at 2 million."""
    def run(fps: str) -> tuple[int, float, dict]:
        r = invoke("diagnose-decode", FIXTURES / "clean_v21", "--gpu", "H100", "--frames", "4", "--target-fps", fps,
                   "--format", "json")
        assert r.exit_code == 0, r.output
        doc = json.loads(r.stdout)
        (g,) = doc["datasets"][0]["groups"]
        return g["cpu_workers"], g["decode"]["cpu"]["ms_per_frame"], doc

    low, _, doc = run("1")
    assert low == 1 and doc["options"]["target_fps"] == 1.0
    high, ms, doc = run("2000000")
    assert doc["options"]["target_fps"] == 2e6
    expect = 2e6 * ms / 1000  # ms is rounded to 3 decimals in the report
    assert high > 1 and math.ceil(expect * 0.99) <= high <= math.ceil(expect * 1.01) + 1, (high, ms)


# ------------------------------------------------------------------------------------ prefetch --resolve-requests
@pytest.mark.usefixtures("isolated_hub_env")
def test_prefetch_resolve_requests_paces_the_downloads(tmp_path, monkeypatch, virtual_clock):
    """``--resolve-requests 3 --window-s 40``: the repo's files are downloaded at most three per 40 s window (on the
    virtual clock); without the flag nothing waits."""
    sleeps = virtual_clock
    files = read_folder(FIXTURES / "clean_v21")
    mix = tmp_path / "mixture.txt"
    mix.write_text("org/a\n")
    with HubServer() as srv:
        monkeypatch.setenv("HF_ENDPOINT", srv.url)
        srv.add_repo("org/a", files)
        base = ["prefetch", mix, "--no-progress", "--format", "json", "--max-workers", "1"]
        r = invoke(*base, "--local-dir-root", tmp_path / "free")
        assert r.exit_code == 0, r.output
        downloads = srv.counts()["get"]
        assert downloads == len(files) and not [s for s in sleeps if s > 0], (srv.counts(), sleeps)
        srv.reset()
        sleeps.clear()
        r = invoke(*base, "--local-dir-root", tmp_path / "paced", "--resolve-requests", "3", "--window-s", "40")
        assert r.exit_code == 0, r.output
        assert srv.counts()["get"] == downloads
    assert (tmp_path / "paced/org/a/meta/info.json").read_bytes() == files["meta/info.json"]
    waits = [s for s in sleeps if s > 0]
    windows = math.ceil(downloads / 3) - 1  # the first three go at once
    assert all(s <= 40.0 + 1e-6 for s in waits), waits
    assert sum(waits) >= 40.0 * windows - 1e-6, (downloads, waits)


# ------------------------------------------------------------------------------------------------------- smoke
@needs_ffmpeg
def test_smoke_epoch_max_frames_boundary_and_batch_flags(tmp_path):
    """clean_v21 has 60 frames: the full-epoch check runs with --epoch-max-frames 60, not with 59; --batches and
    --batch-size set the samples drawn."""
    def run(limit: str) -> dict:
        r = invoke("smoke", FIXTURES / "clean_v21", "--loader", "map", "--batches", "2", "--batch-size", "3",
                   "--num-workers", "0", "--epoch-max-frames", limit, "--cache-dir", tmp_path / "c", "--format", "json")
        assert r.exit_code == 0, r.output
        (d,) = json.loads(r.stdout)["datasets"]
        assert d["frames"] == 60
        return d

    d = run("60")
    epoch = {c["check"]: c for c in d["checks"]}["map-full-epoch"]
    assert epoch["status"] == "pass" and epoch["detail"] == "60 frames, each exactly once", epoch
    (run_map,) = d["loaders"]
    assert (run_map["loader"], run_map["batches"], run_map["samples"]) == ("map", 2, 6), run_map
    d = run("59")
    epoch = {c["check"]: c for c in d["checks"]}["map-full-epoch"]
    assert epoch["status"] == "skipped" and epoch["detail"] == "60 frames > --epoch-max-frames 59", epoch


# ------------------------------------------------------------------------------------------------- --slurm-*
@pytest.mark.skipif(shutil.which("sbatch") is None, reason="sbatch not installed (slurm-wlm)")
def test_slurm_options_shape_the_job_script(tmp_path):
    """datatrove writes the job script, then sbatch runs; here sbatch refuses an empty slurm.conf, so the command
    fails with one line and the script it would have submitted shows where each option went."""
    pytest.importorskip("datatrove", reason="the [distributed] extra (datatrove) is not installed")
    conf = tmp_path / "slurm.conf"
    conf.write_text("")

    def script(run: Path, *flags: str) -> str:
        r = CliRunner(env={"SLURM_CONF": str(conf)}).invoke(cli, [
            "validate", str(FIXTURES / "clean_v21"), "--executor", "slurm", "--tasks", "2", "--slurm-partition",
            "p1", "--slurm-time", "0:07:00", "--logging-dir", str(run), *flags])
        assert r.exit_code == 2 and "sbatch failed" in r.output, r.output
        return (run / "launch_script.slurm").read_text()

    s = script(tmp_path / "run1", "--slurm-cpus-per-task", "3", "--slurm-mem-per-cpu-gb", "5", "--slurm-qos", "highq",
               "--slurm-env-command", "echo lrtool-env-ready")
    lines = s.splitlines()
    for want in ("#SBATCH --cpus-per-task=3", "#SBATCH --mem-per-cpu=5G", "#SBATCH --qos=highq",
                 "#SBATCH --partition=p1", "#SBATCH --time=0:07:00", "#SBATCH --array=0-1", "echo lrtool-env-ready"):
        assert want in lines, (want, s)
    s = script(tmp_path / "run2", "--slurm-venv-path", "/opt/lrtool-venv/bin/activate")
    assert "source /opt/lrtool-venv/bin/activate" in s.splitlines(), s
    assert "#SBATCH --cpus-per-task=1" in s.splitlines() and "--qos" not in s, s  # the defaults


# ------------------------------------------------------------------------------------- --progress elsewhere
def test_reshard_and_diagnose_decode_progress_bars_only_with_progress(tmp_path):
    for flag in ("--progress", "--no-progress"):
        root = tmp_path / flag.strip("-") / "ds"
        shutil.copytree(FIXTURES / "broken_collapsed_row_group", root)
        r = CliRunner().invoke(cli, ["reshard", str(root), flag])
        assert r.exit_code == 0, r.output
        assert ("reshard:" in r.stderr and "B/s" in r.stderr) == (flag == "--progress"), r.stderr
        assert (flag == "--progress") or r.stderr == "", r.stderr
        r = CliRunner().invoke(cli, ["diagnose-decode", str(FIXTURES / "clean_v21"), "--frames", "0", flag])
        assert r.exit_code == 0, r.output
        assert ("probe:" in r.stderr and "dataset/s" in r.stderr) == (flag == "--progress"), r.stderr
        assert (flag == "--progress") or r.stderr == "", r.stderr


@needs_ffmpeg
def test_smoke_pool_size_reaches_every_stream_it_builds(tmp_path, monkeypatch):
    """``--pool-size`` is the number of episodes each EpisodeShuffleStream of the run interleaves (the real stream
    is built; its constructor is wrapped to see the streams the run builds)."""
    import lerobot_tools.loaders as loaders

    real = loaders.EpisodeShuffleStream
    built: list = []

    def recording(*a, **kw):
        s = real(*a, **kw)
        built.append(s)
        return s

    monkeypatch.setattr(loaders, "EpisodeShuffleStream", recording)

    def run(*flags) -> list:
        built.clear()
        r = invoke("smoke", FIXTURES / "clean_v21", "--loader", "stream", "-n", "2", "-b", "4",
                   "--cache-dir", tmp_path / "c", "--format", "json", *flags)
        assert r.exit_code == 0, r.output
        assert built, "no stream was built"
        return built[:]

    one = run("--pool-size", "1")
    assert {s.pool_size for s in one} == {1}, [s.pool_size for s in one]
    default = run()
    assert {s.pool_size for s in default} == {8}, [s.pool_size for s in default]
