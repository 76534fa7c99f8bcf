"""Output that scales: grouped headlines name every episode, identical per-file actions of reshard are one summary,
datasets are named by repo id or path, every command's JSON has one top level, and a baselined group that grows is
not "known" any more.

Real datasets: v2.1 / v3.0 parquet written by the synthetic writer, the committed fixtures (h264 and AV1 videos).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from lerobot_tools.cli import cli
from lerobot_tools.testing.synth import SynthSpec, build_dataset
from lerobot_tools.validate import validate

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
#: the top level every command's JSON document starts with (docs/output.md)
DOCUMENT_KEYS = ("command", "datasets", "summary", "exit_status")
DATASETS = FIXTURES / "datasets"


def cli_run(*args) -> tuple[int, str]:
    r = CliRunner().invoke(cli, [str(a) for a in args])
    return r.exit_code, r.output


def v2_path(e: int) -> str:
    return f"data/chunk-000/episode_{e:06d}.parquet"


@pytest.fixture(scope="module")
def sixty(tmp_path_factory):
    """v2.1, 60 episodes of 3 frames, no video: 60 data files."""
    root = tmp_path_factory.mktemp("sixty") / "ds"
    build_dataset(root, SynthSpec(version="v2.1", episode_lengths=(3,) * 60, video_keys=(), video_codec=None))
    return root


@pytest.fixture(scope="module")
def fifty_files(tmp_path_factory):
    """v3.0, 100 episodes in 50 data files of one row group each (two episodes per row group), no video."""
    root = tmp_path_factory.mktemp("fifty") / "ds"
    build_dataset(root, SynthSpec(version="v3.0", episode_lengths=(4,) * 100, episodes_per_file=2, video_keys=(),
                                  video_codec=None, row_groups="file"))
    return root


# ---------------------------------------------------------------------------------------------- headlines
def test_episode_lists_in_words():
    from lerobot_tools.findings import episode_list_text

    assert episode_list_text([47, 0, 3, 6, 9, 52, 58]) == "0, 3, 6, 9, 47 and 2 more"
    assert episode_list_text(range(3, 10)) == "3-9"
    assert episode_list_text([1, 2]) == "1 and 2"
    assert episode_list_text([5, 5]) == "5"
    assert episode_list_text([0, 1, 2, 4, 6, 7, 8, 9, 20, 30, 40]) == "0-2, 4, 6-9, 20, 30 and 1 more"
    assert episode_list_text([]) == "none"


def test_a_grouped_headline_names_every_missing_episode(sixty, tmp_path):
    root = tmp_path / "ds"
    shutil.copytree(sixty, root)
    gone = [0, 3, 6, 9, 47, 52, 58]
    for e in gone:
        (root / v2_path(e)).unlink()
    (r,) = validate([str(root)])
    (f,) = [f for f in r.findings if f.check == "F001"]
    assert f.count == 7 and f.paths == [v2_path(e) for e in gone[:3]]
    assert f.message == (f"data files are missing for episodes 0, 3, 6, 9, 47 and 2 more (7 occurrences; e.g. "
                         f"{v2_path(0)}, {v2_path(3)}, {v2_path(6)} and 4 more)")
    code, out = cli_run("validate", root)
    assert code == 1 and "F001: data files are missing for episodes 0, 3, 6, 9, 47 and 2 more" in out


# ---------------------------------------------------------------------------------------------- names
def test_datasets_are_named_by_path_never_with_the_lines_options(tmp_path):
    shutil.copytree(DATASETS / "clean_v30", tmp_path / "open_50v")
    mix = tmp_path / "mix.txt"
    mix.write_text("open_50v weight=2\n")
    for cmd in (["validate"], ["reshard", "--dry-run"], ["diagnose-decode", "--gpu", "H100", "--frames", "0"],
                ["repair", "--dry-run"]):
        code, out = cli_run(*cmd, mix)
        assert "weight=2" not in out, (cmd, out)
        code, out = cli_run(*cmd, mix, "--format", "json")
        doc = json.loads(out)
        assert [d["target"] for d in doc["datasets"]] == ["open_50v"], cmd
    code, out = cli_run("validate", mix)
    assert out.splitlines()[0] == f"open_50v (v3.0)  [{mix}:1]"


# ---------------------------------------------------------------------------------------------- one JSON top level
def test_every_commands_json_has_the_same_top_level(tmp_path):
    root = tmp_path / "ds"
    shutil.copytree(DATASETS / "clean_v21", root)
    mix = tmp_path / "mix.txt"
    mix.write_text("ds\n")
    runs = {
        "validate": ["validate", root],
        "reshard": ["reshard", "--dry-run", root],
        "diagnose-decode": ["diagnose-decode", "--gpu", "H100", "--frames", "0", root],
        "repair": ["repair", "--dry-run", root],
        "prefetch": ["prefetch", "--offline", "--no-lock", mix],
    }
    for command, args in runs.items():
        code, out = cli_run(*args, "--format", "json")
        doc = json.loads(out)
        assert tuple(doc)[:4] == DOCUMENT_KEYS, (command, list(doc))
        assert doc["command"] == command and doc["exit_status"] == code, (command, code, doc["exit_status"])
        assert isinstance(doc["datasets"], list) and len(doc["datasets"]) == 1
        assert doc["summary"]["datasets"] == 1, (command, doc["summary"])
    code, out = cli_run("repair", "--undo", "--dry-run", root, "--format", "json")
    doc = json.loads(out)
    assert tuple(doc)[:4] == DOCUMENT_KEYS and doc["command"] == "repair" and doc["undo"] is True


def test_smokes_json_has_the_same_top_level(tmp_path):
    pytest.importorskip("torch")
    pytest.importorskip("torchcodec")
    pytest.importorskip("datasets")
    mix = tmp_path / "mix.txt"
    mix.write_text(f"{DATASETS / 'mixpart_base'}\n")
    for target in (DATASETS / "mixpart_base", mix):
        code, out = cli_run("smoke", target, "--cache-dir", tmp_path / "c", "-n", "1", "--loader", "map",
                            "--format", "json")
        doc = json.loads(out)
        assert tuple(doc)[:4] == DOCUMENT_KEYS and doc["command"] == "smoke" and doc["exit_status"] == code == 0
        assert doc["summary"] == {"datasets": 1, "failed": 0, "blocked": 0}
        assert [d["target"] for d in doc["datasets"]] == [str(DATASETS / "mixpart_base")]


# ---------------------------------------------------------------------------------------------- reshard
def test_reshard_of_fifty_files_fits_a_screen_and_verbose_lists_them(fifty_files, tmp_path):
    root = tmp_path / "ds"
    shutil.copytree(fifty_files, root)
    code, dry = cli_run("reshard", "--dry-run", root)
    assert code == 0
    lines = dry.splitlines()
    assert len(lines) <= 8, dry  # was one line per file: 54 lines
    assert lines[1].startswith("  would reshard 50 files  row groups 50 -> 100  ")
    assert "(1 of 1 row group(s) span several episodes; no page index)" in lines[1]
    assert lines[2] == ("                data/chunk-000/file-000.parquet, data/chunk-000/file-001.parquet, "
                        "data/chunk-000/file-002.parquet and 47 more (--verbose lists every file)")
    code, verbose = cli_run("reshard", "--dry-run", "--verbose", root)
    assert code == 0 and sum(1 for ln in verbose.splitlines() if ln.startswith("  would reshard data/")) == 50
    code, out = cli_run("reshard", "--no-progress", root)
    assert code == 0 and len(out.splitlines()) <= 8 and "  resharded     50 files  row groups 50 -> 100" in out
    code, again = cli_run("reshard", "--no-progress", root)
    assert code == 0 and "  conforms      50 files  row groups 100  " in again and len(again.splitlines()) <= 8


def test_reshard_failures_of_one_kind_are_one_summary_and_others_stay_apart(fifty_files, tmp_path):
    root = tmp_path / "ds"
    shutil.copytree(fifty_files, root)
    for i in range(5):
        (root / f"data/chunk-000/file-{i:03d}.parquet").unlink()
    (root / "data/chunk-000/file-010.parquet").write_text(
        "version https://git-lfs.github.com/spec/v1\noid sha256:" + "ab" * 32 + "\nsize 9999\n")
    code, out = cli_run("reshard", "--dry-run", root)
    assert code == 1
    assert "  FAILED        5 files: data file is missing\n" in out
    assert ("                data/chunk-000/file-000.parquet, data/chunk-000/file-001.parquet, "
            "data/chunk-000/file-002.parquet and 2 more (--verbose lists every file)") in out
    assert "  skipped       data/chunk-000/file-010.parquet: " in out  # one of its kind: its own line
    assert "  would reshard 44 files  " in out


# ---------------------------------------------------------------------------------------------- baselines
def test_a_baselined_group_that_grows_from_3_to_50_is_new(sixty, tmp_path):
    root = tmp_path / "ds"
    shutil.copytree(sixty, root)
    for e in range(3):
        (root / v2_path(e)).unlink()
    baseline = tmp_path / "known.json"
    code, out = cli_run("validate", root, "--write-baseline", baseline)
    assert code == 1
    code, out = cli_run("validate", root, "--baseline", baseline)
    assert code == 0 and "(known)" in out  # the 3 missing files are accepted
    for e in range(3, 50):
        (root / v2_path(e)).unlink()
    code, out = cli_run("validate", root, "--baseline", baseline, "--format", "json")
    assert code == 1
    (f,) = [f for d in json.loads(out)["datasets"] for f in d["findings"] if f["check"] == "F001"]
    assert f["count"] == 50 and "known" not in f
    # and back to the three it knows: known again
    for e in range(3, 50):
        shutil.copy(sixty / v2_path(e), root / v2_path(e))
    assert cli_run("validate", root, "--baseline", baseline)[0] == 0
