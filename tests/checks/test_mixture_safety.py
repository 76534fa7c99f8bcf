"""Mixture safety: a mixture whose batches lose every camera of a dataset fails (X012), smoke is blocked only by
errors that break loading, and weights are normalised safely (two legal weights of 1e308 each).

Real datasets: the committed fixtures (parquet and ffmpeg-encoded h264) and small synthetic ones.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from lerobot_tools.cli import cli
from lerobot_tools.testing.synth import SynthSpec, build_dataset
from lerobot_tools.validate import validate

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
DATASETS = FIXTURES / "datasets"
needs_ffmpeg = pytest.mark.skipif(shutil.which("ffmpeg") is None, reason="system ffmpeg not installed")


def cli_run(*args) -> tuple[int, str]:
    r = CliRunner().invoke(cli, [str(a) for a in args])
    return r.exit_code, r.output


def x012(reports) -> list[tuple[str, str]]:
    return [(Path(r.root).name, f.severity) for r in reports for f in r.findings if f.check == "X012"]


# ---------------------------------------------------------------------------------------------- X012
def test_a_dataset_without_camera_makes_the_mixture_lose_every_camera():
    mix = FIXTURES / "mixtures" / "cameras_lost.txt"  # clean_v21 (one camera) beside mixpart_base (none)
    reports = validate([str(mix)])
    assert x012(reports) == [("mixpart_base", "error")]
    (f,) = [f for r in reports for f in r.findings if f.check == "X012"]
    assert "this dataset has no camera" in f.message and "'observation.images.front'" in f.message
    assert f.subject == {"feature": "observation.images.front"}
    code, out = cli_run("validate", mix)
    assert code == 1 and "X012" in out


def test_a_common_camera_or_a_mapped_role_keeps_the_mixture_safe(tmp_path):
    # clean_v21 + mixpart_wrist share the front camera: the wrist camera is dropped (X002), no X012
    assert x012(validate([str(FIXTURES / "mixtures" / "feature_dropped.txt")])) == []
    # one camera each, under different names, mapped to one role: common, no X012
    mix = tmp_path / "mix.json"
    mix.write_text(json.dumps({"dataset_mixture": {"datasets": [
        {"root": str(DATASETS / "clean_v21"), "data_features_name_mapping": {"camera0": "observation.images.front"}},
        {"root": str(DATASETS / "clean_v30"), "data_features_name_mapping": {"camera0": "observation.images.top"}}]}}))
    assert x012(validate([str(mix)])) == []
    # the same two unmapped: front is common, top dropped (X002 only)
    txt = tmp_path / "mix.txt"
    txt.write_text(f"{DATASETS / 'clean_v21'}\n{DATASETS / 'clean_v30'}\n")
    assert x012(validate([str(txt)])) == []


def test_x012_goes_where_the_cause_is_once(tmp_path):
    with_cam = [DATASETS / "clean_v21", DATASETS / "mixpart_cam32", DATASETS / "mixpart_wrist"]
    mix = tmp_path / "mix.txt"
    # three datasets with cameras, one without: one finding, on the one without (not three)
    mix.write_text("".join(f"{p}\n" for p in [*with_cam, DATASETS / "mixpart_base"]))
    assert x012(validate([str(mix)])) == [("mixpart_base", "error")]
    # one with cameras among three without: on the one with cameras
    mix.write_text("".join(f"{p}\n" for p in [DATASETS / "clean_v21", DATASETS / "mixpart_base",
                                               DATASETS / "mixpart_fps15", DATASETS / "mixpart_task_case"]))
    reports = validate([str(mix)])
    assert x012(reports) == [("clean_v21", "error")]
    (f,) = [f for r in reports for f in r.findings if f.check == "X012"]
    assert "every camera of this dataset ('observation.images.front') is left out" in f.message
    assert "3 of 4 datasets have none of them" in f.message


@needs_ffmpeg
def test_smoke_fails_on_a_mixture_that_loses_its_cameras(tmp_path):
    pytest.importorskip("torch")
    pytest.importorskip("torchcodec")
    pytest.importorskip("datasets")
    code, out = cli_run("smoke", FIXTURES / "mixtures" / "cameras_lost.txt", "--cache-dir", tmp_path / "c",
                        "-n", "1", "--loader", "map")
    assert code == 1, out[-2000:]
    assert "not run: validate found errors that break loading the mixture (X012)" in out


# ---------------------------------------------------------------------------------------------- smoke blocking
def test_a_statistics_inconsistency_does_not_stop_smoke(tmp_path):
    pytest.importorskip("torch")
    pytest.importorskip("torchcodec")
    pytest.importorskip("datasets")
    root = tmp_path / "ds"
    shutil.copytree(DATASETS / "mixpart_v30", root)
    stats = json.loads((root / "meta/stats.json").read_text())
    stats["action"]["mean"][0] = stats["action"]["max"][0] + 10  # a v3.0 stats.json mean above its max: G005
    (root / "meta/stats.json").write_text(json.dumps(stats, indent=4))
    assert [(f.check, f.severity) for f in validate([str(root)])[0].findings if f.check != "R003"] == [
        ("G005", "error")]
    code, out = cli_run("smoke", root, "--cache-dir", tmp_path / "c", "-n", "2", "--loader", "map", "--format",
                        "json")
    doc = json.loads(out)
    (d,) = doc["datasets"]
    assert d["status"] == "pass" and code == 0, out[-2000:]
    assert any(f["check"] == "G005" for f in d["validate"]["findings"])  # still reported, not blocking


# ---------------------------------------------------------------------------------------------- weights
def test_weights_near_the_largest_float_are_normalised(tmp_path):
    pytest.importorskip("torch")
    from lerobot_tools.loaders import EpisodeAwareSampler, MixtureDataset
    from lerobot_tools.loaders._weighted import apportion

    assert apportion(np.array([1e308, 1e308]), np.array([10, 10]), 20).tolist() == [10, 10]
    assert apportion(np.array([1.7e308, 0.85e308, 0.0]), np.array([5, 5, 5]), 30).tolist() == [20, 10, 0]
    for name, spec in (("a", SynthSpec(version="v2.1", episode_lengths=(6, 5), video_keys=(), video_codec=None)),
                       ("b", SynthSpec(version="v3.0", episode_lengths=(4, 7), video_keys=(), video_codec=None))):
        build_dataset(tmp_path / name, spec)
    mix = tmp_path / "mix.txt"
    mix.write_text("a weight=1e308\nb weight=1e308\n")
    assert not any(r.has_errors for r in validate([str(mix)]))
    m = MixtureDataset(mix, decode_video=False, cache_dir=tmp_path / "c")
    assert m.weights.tolist() == [0.5, 0.5]
    assert list(EpisodeAwareSampler(m, seed=0, rank=0, world_size=1).dataset_counts()) == [11, 11]


def test_smoke_draws_both_datasets_of_weight_1e308(tmp_path):
    pytest.importorskip("torch")
    pytest.importorskip("torchcodec")
    pytest.importorskip("datasets")
    mix = tmp_path / "mix.txt"
    mix.write_text(f"{DATASETS / 'mixpart_base'} weight=1e308\n{DATASETS / 'mixpart_v30'} weight=1e308\n")
    code, out = cli_run("smoke", mix, "--cache-dir", tmp_path / "c", "-n", "2", "-b", "4", "--format", "json")
    assert code == 0, out[-3000:]
    doc = json.loads(out)
    assert doc["mixture"]["status"] == "pass" and doc["mixture"]["error"] is None
    assert [d["weight"] for d in doc["mixture"]["datasets"]] == [0.5, 0.5]
