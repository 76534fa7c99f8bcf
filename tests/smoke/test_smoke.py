"""``lrtool smoke`` end to end: exit codes, validate's findings on broken data, no tracebacks, measurements."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("torchcodec")
pytest.importorskip("datasets")

from click.testing import CliRunner  # noqa: E402

from lerobot_tools.cli import cli  # noqa: E402
from lerobot_tools.smoke import RssMonitor, loader_error_line  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "fixtures" / "datasets"
needs_ffmpeg = pytest.mark.skipif(shutil.which("ffmpeg") is None, reason="system ffmpeg not installed")


def lrtool(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONWARNINGS": "ignore::UserWarning:torch.utils.data.dataloader"}
    return subprocess.run([sys.executable, "-m", "lerobot_tools", *args], capture_output=True, text=True,
                          cwd=cwd, env=env, timeout=300)


def copy_fixture(name: str, dst: Path) -> Path:
    out = dst / name
    shutil.copytree(FIXTURES / name, out)
    return out


# ------------------------------------------------------------------ clean data
@needs_ffmpeg
def test_clean_v30_passes_with_workers_and_reports_measurements(tmp_path):
    root = copy_fixture("clean_v30", tmp_path)
    r = lrtool("smoke", str(root), "--cache-dir", str(tmp_path / "c"), "-w", "2", "-r", "3", "-n", "3", "-b", "8",
               "--format", "json")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "Traceback" not in r.stderr
    doc = json.loads(r.stdout)
    assert doc["summary"] == {"datasets": 1, "failed": 0, "blocked": 0} and doc["exit_status"] == 0
    d = doc["datasets"][0]
    assert d["status"] == "pass" and d["frames"] == 72 and d["episodes"] == 4
    assert [x["check"] for x in d["validate"]["findings"]] == ["R003"]  # validate ran first
    assert {c["check"]: c["status"] for c in d["checks"]} == {
        "map-full-epoch": "pass", "stream-full-epoch": "pass", "map-ranks": "pass", "map-same-seed": "pass",
        "stream-ranks": "pass", "stream-same-seed": "pass"}
    assert "3 simulated ranks of 24/24/24 frames" in next(c["detail"] for c in d["checks"] if c["check"] == "map-ranks")
    assert [run["loader"] for run in d["loaders"]] == ["map", "stream"]
    for run in d["loaders"]:
        assert run["error"] is None
        assert {c["check"]: c["status"] for c in run["checks"]} == {
            "shapes-dtypes": "pass", "video-decodes": "pass", "tasks-resolve": "pass", "order-and-alignment": "pass"}
        assert run["batches"] == 3 and run["samples"] == 24 and run["decoded_frames"] == 48
        assert run["samples_per_s"] > 0 and run["decoded_frames_per_s"] == pytest.approx(2 * run["samples_per_s"], rel=1e-3)
        assert run["first_batch_s"] > 0
        assert 0 < run["p50_ms"] <= run["p95_ms"] <= run["p99_ms"]
        # the process tree: the main process (torch + torchcodec + datasets, >150 MB) plus two workers
        assert run["peak_rss_bytes"] > 150 * 2**20
    assert d["peak_rss_bytes"] >= max(run["peak_rss_bytes"] for run in d["loaders"])
    if sys.platform.startswith("linux"):  # PSS comes from /proc/PID/smaps_rollup
        assert 0 < d["peak_pss_bytes"] <= d["peak_rss_bytes"]


@needs_ffmpeg
def test_clean_v21_text_report_and_episode_subset_from_a_mixture(tmp_path):
    root = copy_fixture("clean_v21", tmp_path)
    mix = tmp_path / "mix.txt"
    mix.write_text(f"{root} episodes=2,0\n")
    res = CliRunner().invoke(cli, ["smoke", str(mix), "--per-dataset", "--cache-dir", str(tmp_path / "c"),
                                   "--loader", "map", "-n", "2", "-b", "4", "--seed", "5"])
    assert res.exit_code == 0, res.output
    assert "2 episode(s), 45 frame(s), video keys: observation.images.front" in res.output
    assert "pass  map order-and-alignment: 8 samples in the planned order" in res.output
    assert "pass  map-full-epoch: 45 frames, each exactly once" in res.output
    assert "stream" not in res.output
    assert "Smoke: 1 dataset(s), 0 failed, 0 blocked by validate" in res.output


# ------------------------------------------------------------------ broken data: validate's findings, exit 1
@pytest.mark.parametrize("name,check", [("broken_lfs_video", "F004"), ("broken_undeclared_column", "S002")])
def test_blocking_defects_fail_with_the_same_findings_validate_gives(tmp_path, name, check):
    root = copy_fixture(name, tmp_path)
    v = lrtool("validate", str(root))
    s = lrtool("smoke", str(root), "--cache-dir", str(tmp_path / "c"), "-w", "2")
    assert v.returncode == 1 and s.returncode == 1
    finding = [ln for ln in v.stdout.splitlines() if f" {check}" in ln]
    assert finding and all(ln in s.stdout.splitlines() for ln in finding)
    assert f"not run: validate found errors that break loading ({check})" in s.stdout
    assert "Traceback" not in s.stdout + s.stderr
    j = lrtool("smoke", str(root), "--cache-dir", str(tmp_path / "c"), "--format", "json")
    vj = json.loads(lrtool("validate", str(root), "--format", "json").stdout)
    doc = json.loads(j.stdout)
    assert j.returncode == 1 and doc["datasets"][0]["status"] == "blocked"
    assert doc["datasets"][0]["validate"]["findings"] == vj["datasets"][0]["findings"]


def test_tolerated_task_defect_runs_the_loaders_and_fails_the_task_check(tmp_path):
    root = copy_fixture("broken_missing_task_label", tmp_path)
    r = CliRunner().invoke(cli, ["smoke", str(root), "--cache-dir", str(tmp_path / "c"), "-w", "2", "-n", "8",
                                 "-b", "8", "--loader", "map"])
    assert r.exit_code == 1, r.output
    assert "validate: not blocking: T002 (error)" in r.output
    assert "warning:" in r.output and "'pick up the red cube'" in r.output
    assert "FAIL  map tasks-resolve: 25 of 60 samples carry no task" in r.output
    assert "pass  map shapes-dtypes" in r.output and "pass  map-full-epoch: 60 frames" in r.output
    assert "Traceback" not in r.output


@needs_ffmpeg
def test_decode_error_in_a_worker_is_one_line_not_a_traceback(tmp_path):
    """Timestamps 3 ms off (validate without --deep cannot see it): the loaders fail in their workers."""
    root = copy_fixture("clean_v21", tmp_path)
    f = root / "data/chunk-000/episode_000001.parquet"
    t = pq.read_table(f)
    i = t.column_names.index("timestamp")
    t = t.set_column(i, t.schema.field(i), pa.array(t.column("timestamp").to_numpy() + np.float32(0.003), pa.float32()))
    pq.write_table(t, f)
    r = lrtool("smoke", str(root), "--cache-dir", str(tmp_path / "c"), "-w", "2", "-n", "8", "-b", "8")
    assert r.returncode == 1, r.stdout + r.stderr
    fails = [ln for ln in r.stdout.splitlines() if ln.startswith("  FAIL")]
    assert fails and all("FrameTimestampError in a DataLoader worker:" in ln for ln in fails[:2])
    assert "videos/chunk-000/observation.images.front/episode_000001.mp4: episode 1: query" in fails[0]
    assert "Traceback" not in r.stdout + r.stderr and "Original" not in r.stdout


# ------------------------------------------------------------------ cannot run: exit 2
def test_unreadable_mixture_exits_2_with_one_line(tmp_path):
    bad = tmp_path / "mix.json"
    bad.write_text('{"broken": ')
    r = lrtool("smoke", str(bad))
    assert r.returncode == 2
    assert r.stderr.strip().count("\n") == 0 and r.stderr.startswith("lrtool: error:") and "mix.json" in r.stderr
    assert lrtool("smoke", str(bad), "--batches", "0").returncode == 2  # bad option


def test_help_and_validate_do_not_import_torch():
    code = (
        "import sys\n"
        "from lerobot_tools.cli import cli\n"
        "for args in (['--help'], ['smoke', '--help'], ['validate', sys.argv[1]]):\n"
        "    try:\n"
        "        cli.main(args=args, prog_name='lrtool', standalone_mode=False)\n"
        "    except SystemExit:\n"
        "        pass\n"
        "heavy = [m for m in ('torch', 'torchcodec', 'datasets') if m in sys.modules]\n"
        "print('HEAVY', heavy)\n"
    )
    r = subprocess.run([sys.executable, "-c", code, str(FIXTURES / "clean_v30")], capture_output=True, text=True)
    assert "HEAVY []" in r.stdout, r.stdout + r.stderr
    assert "Usage: lrtool smoke [OPTIONS] TARGET" in r.stdout


# ------------------------------------------------------------------ pieces
def test_rss_monitor_counts_child_processes():
    code = "import time; b = bytearray(300 * 2**20); b[::4096] = b'x' * len(b[::4096]); time.sleep(1.5)"
    with RssMonitor(interval_s=0.02) as mon:
        base = mon.sample()[0]
        p = subprocess.Popen([sys.executable, "-c", code])
        p.wait(timeout=30)
    assert mon.peak - base > 250 * 2**20


def test_one_line_unwraps_dataloader_worker_errors():
    from torch._utils import ExceptionWrapper

    from lerobot_tools.loaders import FrameTimestampError

    try:
        raise FrameTimestampError("episode 1: query 2.1 s has no frame", "videos/x.mp4")
    except FrameTimestampError:
        wrapped = ExceptionWrapper(where="in DataLoader worker process 0")
    with pytest.raises(FrameTimestampError) as exc:
        wrapped.reraise()
    assert "Traceback" in str(exc.value)
    assert loader_error_line(exc.value) == "FrameTimestampError in a DataLoader worker: videos/x.mp4: episode 1: query 2.1 s has no frame"


@pytest.mark.parametrize("endpoint,problem", [
    ("ftp://mirror.example/", "not an http(s) URL"),
    ("http://mirror.example:99999", "not a valid URL (Port out of range 0-65535)"),
])
def test_an_endpoint_that_is_not_a_url_stops_smoke_with_one_line(tmp_path, endpoint, problem):
    """huggingface_hub (imported by datasets) raises on import for such an HF_ENDPOINT: smoke says so first."""
    env = {**os.environ, "HF_ENDPOINT": endpoint}
    r = subprocess.run([sys.executable, "-m", "lerobot_tools", "smoke", str(FIXTURES / "clean_v21"), "--cache-dir",
                        str(tmp_path / "c")], capture_output=True, text=True, env=env, timeout=300)
    assert r.returncode == 2, r.stderr
    shown = endpoint.rstrip("/")
    assert r.stderr.strip().splitlines() == [
        f"lrtool: error: HF_ENDPOINT {shown!r} is {problem}; set it to an http(s) URL or unset it"], r.stderr
