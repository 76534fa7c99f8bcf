"""``lrtool smoke MIXTURE``: the whole mixture through one MixtureDataset, checked and measured."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("torchcodec")
pytest.importorskip("datasets")

from lerobot_tools.smoke.mixture import _weights_check  # noqa: E402
from lerobot_tools.testing.synth import SynthSpec, build_dataset  # noqa: E402

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"


def lrtool(*args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONWARNINGS": "ignore::UserWarning:torch.utils.data.dataloader"}
    return subprocess.run([sys.executable, "-m", "lerobot_tools", *args], capture_output=True, text=True, env=env,
                          timeout=600)


@pytest.mark.skipif(shutil.which("ffmpeg") is None, reason="system ffmpeg not installed")
def test_a_weighted_mixture_with_mapped_cameras_passes_and_is_measured(tmp_path):
    build_dataset(tmp_path / "a", SynthSpec(version="v3.0", episode_lengths=(8, 6, 7), video_codec="h264",
                                            video_size=(32, 32)))
    build_dataset(tmp_path / "b", SynthSpec(version="v2.1", episode_lengths=(9, 5), video_codec="h264",
                                            video_size=(32, 32), video_keys=("observation.images.wrist",), seed=3))
    mix = tmp_path / "mix.json"
    mix.write_text(json.dumps({"dataset_mixture": {"datasets": [
        {"root": "a", "data_features_name_mapping": {"camera0": "observation.images.front"}},
        {"root": "b", "data_features_name_mapping": {"camera0": "observation.images.wrist"}}], "weights": [1, 3]}}))
    r = lrtool("smoke", str(mix), "--cache-dir", str(tmp_path / "c"), "-w", "2", "-n", "4", "-b", "8", "-r", "3",
               "--format", "json")
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    assert "Traceback" not in r.stderr
    doc = json.loads(r.stdout)["mixture"]
    assert doc["status"] == "pass" and doc["frames"] == 35 and doc["cold_datasets"] == 2
    assert doc["names"][0] == "camera0" and doc["construct_s"] > 0
    assert [run["loader"] for run in doc["loaders"]] == ["map", "stream"]
    for run in doc["loaders"]:
        checks = {c["check"]: c["status"] for c in run["checks"]}
        assert set(checks.values()) == {"pass"}, run["checks"]
        assert {"schema", "video-decodes", "tasks-resolve", "order-and-alignment"} <= set(checks)
        assert run["samples"] == 32 and run["decoded_frames"] == 32 and run["samples_per_s"] > 0
        assert 0 < run["p50_ms"] <= run["p95_ms"] <= run["p99_ms"] and run["peak_rss_bytes"] > 150 * 2**20
    assert "weights-in-batches" in {c["check"] for c in doc["loaders"][0]["checks"]}
    assert {c["check"]: c["status"] for c in doc["checks"]} == {
        f"{k}-{c}": "pass" for k in ("map", "stream") for c in ("weights-per-epoch", "full-epoch", "ranks", "same-seed")}
    per = doc["datasets"]
    assert [d["weight"] for d in per] == [0.25, 0.75]
    assert all(d["samples_per_s"] > 0 and d["decoded_frames_per_s"] == d["samples_per_s"] for d in per)
    assert sum(d["drawn"] for d in per) == 32
    if sys.platform == "linux":  # psutil reads PSS from /proc/PID/smaps_rollup: known here, never None
        assert doc["peak_pss_bytes"] is not None and 0 < doc["peak_pss_bytes"] <= doc["peak_rss_bytes"], doc
    # the same, as text
    t = lrtool("smoke", str(mix), "--cache-dir", str(tmp_path / "c"), "-n", "2", "--loader", "map")
    assert t.returncode == 0 and "(mixture)" in t.stdout and "pass  map weights-in-batches" in t.stdout
    assert "Smoke: mixture of 2 dataset(s): passed" in t.stdout


def test_a_mixture_validate_refuses_is_blocked_with_validates_own_lines(tmp_path):
    target = str(FIXTURES / "mixtures" / "action_shape.txt")
    v = lrtool("validate", target)
    s = lrtool("smoke", target, "--cache-dir", str(tmp_path / "c"))
    assert v.returncode == 1 and s.returncode == 1
    x003 = [ln for ln in v.stdout.splitlines() if " X003" in ln]
    assert x003 and all(ln in s.stdout.splitlines() for ln in x003)
    assert "not run: validate found errors that break loading the mixture (X003)" in s.stdout
    assert "Traceback" not in s.stdout + s.stderr


def test_stats_and_prompt_errors_do_not_block_loading(tmp_path):
    s = lrtool("smoke", str(FIXTURES / "mixtures" / "stats.txt"), "--cache-dir", str(tmp_path / "c"), "-n", "2",
               "--loader", "map", "--format", "json")
    top = json.loads(s.stdout)
    doc = top["mixture"]
    assert doc["status"] == "pass", s.stdout[-2000:]
    # validate's report of each dataset is the document's datasets (docs/output.md)
    assert any(f["check"] == "X008" for r in top["datasets"] for f in r["findings"])


def test_weights_check_fails_when_draws_drift():
    probs = np.asarray([0.25, 0.75])
    assert _weights_check("w", np.asarray([25, 75]), probs, ["a", "b"], exact=True).ok
    assert not _weights_check("w", np.asarray([27, 73]), probs, ["a", "b"], exact=True).ok
    assert _weights_check("w", np.asarray([30, 70]), probs, ["a", "b"], exact=False).ok  # within 4 sigma + 1
    bad = _weights_check("w", np.asarray([60, 40]), probs, ["a", "b"], exact=False)
    assert not bad.ok and "a drawn 60 times, expected 25.0" in bad.detail
