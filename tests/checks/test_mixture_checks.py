"""Mixture files: weights and action_freq, and the cross-dataset compatibility checks (family X).

Each committed mixture fixture (fixtures/mixtures/*) combines datasets that are clean on their own and
disagree in exactly one way; validate must raise exactly the X finding its manifest lists, on the
dataset that differs. The loader-side twin: MixtureDataset refuses exactly the mixtures whose X findings
are collate errors.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from lerobot_tools.checks import catalogue
from lerobot_tools.checks.engine import ValidateOptions
from lerobot_tools.dataset.mixture import read_mixture_spec
from lerobot_tools.dataset.mixture_schema import mixture_schema
from lerobot_tools.errors import UsageError
from lerobot_tools.validate import validate

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
MIXTURES = json.loads((FIXTURES / "manifest.json").read_text())["mixtures"]


def _x(reports):
    return sorted((Path(r.root).name, f.check, f.severity) for r in reports for f in r.findings
                  if f.check.startswith("X"))


@pytest.mark.parametrize("mx", MIXTURES, ids=[m["file"] for m in MIXTURES])
def test_mixture_fixture_raises_exactly_its_cross_dataset_finding(mx):
    reports = validate([str(FIXTURES / mx["file"])])
    assert _x(reports) == sorted(map(tuple, mx["expect"])), [f.message for r in reports for f in r.findings]
    # the datasets are clean on their own: nothing else above info
    assert [(f.check, f.message) for r in reports for f in r.findings
            if not f.check.startswith("X") and f.severity != "info"] == []


def test_every_mixture_finding_names_its_subject():
    for mx in MIXTURES:
        for r in validate([str(FIXTURES / mx["file"])]):
            for f in r.findings:
                if f.check.startswith("X"):
                    assert f.subject and set(f.subject) <= {"feature", "key", "task"}, (f.check, f.subject)


def test_every_mixture_check_has_a_fixture():
    covered = {e[1] for m in MIXTURES for e in m["expect"]}
    assert covered == {c for c in catalogue.CATALOGUE if c.startswith("X")}


def test_checks_run_only_for_mixture_files_and_respect_ignore():
    folders = [str(FIXTURES / "datasets" / n) for n in ("mixpart_base", "mixpart_action8")]
    assert _x(validate(folders)) == []  # two folders on the command line are not a mixture
    assert _x(validate([str(FIXTURES / "mixtures/action_shape.txt")], ValidateOptions(ignore={"X003"}))) == []
    only = validate([str(FIXTURES / "mixtures/action_shape.txt")], ValidateOptions(select={"X003"}))
    assert _x(only) == [("mixpart_action8", "X003", "error")]


def test_messages_name_the_majority_and_the_difference():
    reports = validate([str(FIXTURES / "mixtures/action_shape.txt")])
    (f,) = [f for r in reports for f in r.findings if f.check == "X003"]
    assert "(8,)" in f.message and "(6,)" in f.message and "2 of 3" in f.message
    reports = validate([str(FIXTURES / "mixtures/camera_resolution.txt")])
    (f,) = [f for r in reports for f in r.findings if f.check == "X004"]
    assert "3x32x32" in f.message and "3x64x64" in f.message
    reports = validate([str(FIXTURES / "mixtures/prompt_substitutions.json")])
    (f,) = [f for r in reports for f in r.findings if f.check == "X009"]
    assert "did you mean 'pick up the cube'" in f.message


def test_resample_warns_when_timestamps_are_off_the_grid(tmp_path):
    mix = tmp_path / "m.json"
    entries = [{"root": str(FIXTURES / "datasets" / "mixpart_base")},
               {"root": str(FIXTURES / "datasets" / "broken_timestamps")}]
    mix.write_text(json.dumps({"dataset_mixture": {"datasets": entries, "action_freq": 5}}))
    shallow = {(Path(r.root).name, f.check, f.severity) for r in validate([str(mix)]) for f in r.findings
               if f.check == "X006"}
    assert shallow == {("mixpart_base", "X006", "info"), ("broken_timestamps", "X006", "info")}
    deep = validate([str(mix)], ValidateOptions(deep=True))
    got = {(Path(r.root).name, f.severity) for r in deep for f in r.findings if f.check == "X006"}
    assert got == {("mixpart_base", "info"), ("broken_timestamps", "warning")}
    (msg,) = [f.message for r in deep for f in r.findings if f.check == "X006" and f.severity == "warning"]
    assert "D003" in msg


def test_upsampling_is_a_warning(tmp_path):
    mix = tmp_path / "m.json"
    mix.write_text(json.dumps({"datasets": [{"root": str(FIXTURES / "datasets" / "mixpart_base")}], "action_freq": 30}))
    (r,) = validate([str(mix)])
    assert [(f.check, f.severity) for f in r.findings if f.check == "X006"] == [("X006", "warning")]


def test_all_weights_zero_is_an_error(tmp_path):
    mix = tmp_path / "m.txt"
    base = FIXTURES / "datasets" / "mixpart_base"
    mix.write_text(f"{base} weight=0\n{base} episodes=0 weight=0\n")
    assert {(f.check, f.severity) for r in validate([str(mix)]) for f in r.findings if f.check == "X011"} == \
        {("X011", "error")}


def test_an_unreadable_dataset_is_left_out_not_a_crash(tmp_path):
    mix = tmp_path / "m.txt"
    mix.write_text(f"{FIXTURES / 'datasets' / 'mixpart_base'}\n{FIXTURES / 'datasets' / 'broken_info_json'}\n"
                   f"{tmp_path / 'absent'}\n{FIXTURES / 'datasets' / 'mixpart_action8'}\n")
    reports = validate([str(mix)])
    assert [r.findings[0].check for r in reports[1:3]] == ["I002", "M001"]
    assert any("mixture compatibility" in n.checks for n in reports[1].not_checked)
    assert _x(reports) == [("mixpart_action8", "X003", "error")]  # 1 of 2 readable datasets: a tie, the later one


# ---------------------------------------------------------------------- mixture files: weights, action_freq
def test_text_weights(tmp_path):
    f = tmp_path / "m.txt"
    f.write_text("lerobot/a weight=2\nlerobot/b episodes=0-1 weight=0.5\n")
    spec = read_mixture_spec(f)
    assert spec.weighted and [e.weight for e in spec.entries] == [2.0, 0.5] and spec.action_freq is None
    f.write_text("lerobot/a weight=2\nlerobot/b\nlerobot/c weight=-1\nlerobot/d weight=x\n")
    errors = [e.error for e in read_mixture_spec(f).entries]
    assert errors[0] is None and "no weight=" in errors[1]
    assert "weight must be" in errors[2] and "weight must be" in errors[3]


def test_json_weights_and_action_freq(tmp_path):
    f = tmp_path / "m.json"
    mix = {"datasets": [{"repo_id": "a/b"}, {"repo_id": "c/d"}], "weights": [3, 1], "action_freq": 10}
    f.write_text(json.dumps({"dataset_mixture": mix}))
    spec = read_mixture_spec(f)
    assert [e.weight for e in spec.entries] == [3.0, 1.0] and spec.action_freq == 10.0 and spec.weighted
    for bad, msg in [({"weights": [1]}, "one weight per dataset"), ({"weights": [1, -2]}, "weights[1]"),
                     ({"weights": [1, True]}, "weights[1]"), ({"action_freq": 0}, "action_freq"),
                     ({"action_freq": "10"}, "action_freq")]:
        f.write_text(json.dumps({"dataset_mixture": {**mix, **bad}}))
        with pytest.raises(UsageError, match=msg.replace("[", r"\[").replace("]", r"\]")):
            read_mixture_spec(f)


def test_schema_semantics_of_the_name_mapping():
    a = {"action": {"dtype": "float32", "shape": [6]}, "cam": {"dtype": "video", "shape": [8, 8, 3]}}
    b = {"act": {"dtype": "float64", "shape": [6]}, "front": {"dtype": "image", "shape": [3, 8, 8],
                                                               "names": ["channels", "height", "width"]}}
    s = mixture_schema([(a, {"actions": "action", "camera0": "cam", "prompt": "task"}),
                        (b, {"actions": "act", "camera0": "front", "prompt": "task"})])
    assert set(s.common) == {"actions", "camera0", "prompt"}
    assert s.fatal() == [] and s.dtype_of["actions"] == "float64" and s.missing == {} and s.dropped == {}
    s = mixture_schema([(a, {"actions": "action"}), (b, None)])
    assert s.missing == {1: ["actions"]} and set(s.dropped) == {"cam", "act", "front"}
