"""A mixture that names one dataset on many lines: identical entries are validated and reported once.

Functional, not timed (the time is benchmarks/bench_mixture_lines.py's). "Processed once" is observed on the
real check engine: the number of times :func:`lerobot_tools.checks.engine.validate_target` runs.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from lerobot_tools.checks import engine
from lerobot_tools.cli import cli
from lerobot_tools.dataset.targets import merge_identical, resolve_target
from lerobot_tools.testing.synth import SynthSpec, build_dataset
from lerobot_tools.validate import validate


@pytest.fixture(scope="module")
def two_datasets(tmp_path_factory) -> Path:
    base = tmp_path_factory.mktemp("mixlines")
    for name in ("a", "b"):
        build_dataset(base / name, SynthSpec(version="v2.1", episode_lengths=[4, 4], video_keys=(), video_codec=None))
    return base


def _count_runs(monkeypatch) -> list[str]:
    seen: list[str] = []
    real = engine.validate_target

    def counting(target, *args, **kwargs):
        seen.append(target.spec)
        return real(target, *args, **kwargs)

    monkeypatch.setattr("lerobot_tools.checks.engine.validate_target", counting)
    return seen


def test_identical_entries_are_validated_and_reported_once(two_datasets, monkeypatch):
    lines = ["./a", "./b", "a", "./a  # the same again", "./b", "missing/x", "missing/x"] * 50
    mix = two_datasets / "many.txt"
    mix.write_text("\n".join(lines) + "\n")
    runs = _count_runs(monkeypatch)
    reports = validate([str(mix)])
    assert len(runs) == 3  # a, b and the unresolvable entry, once each
    assert [r.target for r in reports] == ["./a", "./b", "missing/x"]
    note_a = [n for n in reports[0].notes if "identical entries" in n]
    assert len(note_a) == 1 and "named by 150 identical entries" in note_a[0] and f"{mix}:3" in note_a[0]
    # the unresolved entry is one M001, not 100
    assert sum(1 for r in reports for f in r.findings if f.check == "M001") == 1


def test_entries_with_different_requests_stay_apart(two_datasets, monkeypatch):
    mix = two_datasets / "subsets.txt"
    mix.write_text("./a episodes=0\n./a episodes=1\n./a episodes=0\n./a episodes=7\n")
    reports = validate([str(mix)])
    # named by their path, never with the line's options; the request is the report's subset
    assert [r.target for r in reports] == ["./a", "./a", "./a"]
    assert [r.subset for r in reports] == [{"episodes": [0]}, {"episodes": [1]}, {"episodes": [7]}]
    assert [f.check for f in reports[2].findings if f.check.startswith("M")] == ["M004"]


def test_weighted_and_json_entries_compare_every_key(two_datasets):
    mix = two_datasets / "weighted.txt"
    mix.write_text("./a weight=1\n./a weight=2\n./a weight=1\n")
    assert [t.weight for t in merge_identical(resolve_target(str(mix)))] == [1.0, 2.0]
    js = two_datasets / "mix.json"
    js.write_text(json.dumps({"datasets": [{"root": "a", "prompt_substitutions": {"x": "y"}}, {"root": "a"},
                                           {"root": "a", "prompt_substitutions": {"x": "y"}}]}))
    merged = merge_identical(resolve_target(str(js)))
    assert [t.entry_index for t in merged] == [0, 1]


def test_merge_leaves_the_resolved_targets_alone(two_datasets):
    """The loaders read every line (two identical lines weigh twice); only validate merges."""
    mix = two_datasets / "twice.txt"
    mix.write_text("./a\n./a\n")
    targets = resolve_target(str(mix))
    merged = merge_identical(targets)
    assert len(targets) == 2 and len(merged) == 1
    assert targets[0].notes == [] and merged[0] is not targets[0]


def test_cli_json_reports_duplicates_once(two_datasets):
    mix = two_datasets / "cli.txt"
    mix.write_text("./a\n./a\n./b\n./a\n")
    res = CliRunner().invoke(cli, ["validate", str(mix), "--format", "json"])
    doc = json.loads(res.stdout)
    assert [d["target"] for d in doc["datasets"]] == ["./a", "./b"]
    assert doc["summary"]["datasets"] == 2


def test_diagnose_decodes_identical_entries_once(tmp_path):
    """diagnose-decode on a mixture naming one (real, h264) dataset three times reports and decodes it once."""
    root = tmp_path / "ds"
    import shutil

    shutil.copytree(Path(__file__).resolve().parents[2] / "fixtures" / "datasets" / "clean_v21", root)
    mix = tmp_path / "mix.txt"
    mix.write_text("./ds\n./ds\nds\n")
    res = CliRunner().invoke(cli, ["diagnose-decode", str(mix), "--format", "json", "--frames", "1"])
    doc = json.loads(res.stdout)
    assert len(doc["datasets"]) == 1, [d.get("target") for d in doc["datasets"]]
