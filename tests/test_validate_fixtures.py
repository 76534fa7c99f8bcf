"""Every committed fixture raises exactly the checks its manifest expects; the clean ones raise nothing."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from lerobot_tools.checks.engine import ValidateOptions
from lerobot_tools.validate import validate

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
MANIFEST = json.loads((FIXTURES / "manifest.json").read_text())["fixtures"]


def _ids(report, severities=("error", "warning")):
    return {f.check for f in report.findings if f.severity in severities}


@pytest.mark.parametrize("fx", MANIFEST, ids=[f["name"] for f in MANIFEST])
def test_fixture_raises_its_checks(fx):
    root = FIXTURES / "datasets" / fx["name"]
    # camera content checks decode frames only when asked (--camera-frames): the manifest says how many
    (report,) = validate([str(root)], ValidateOptions(deep=fx["deep_only"], camera_frames=fx.get("camera_frames", 0)))
    got = _ids(report)
    assert got == set(fx["expect"]), [f"{f.check} {f.message}" for f in report.findings]
    if not fx["deep_only"]:
        # the deep-only defects are invisible without --deep, and the others do not need it
        (shallow,) = validate([str(root)])
        assert _ids(shallow) == set(fx["expect"])


@pytest.mark.parametrize("name", ["clean_v21", "clean_v30"])
def test_clean_fixtures_have_no_findings_beyond_the_native_page_index_note(name):
    # written like lerobot's native writer: one row group per episode, no page index (docs/format.md#row-groups),
    # so the only finding is the R003 info that lrtool reshard addresses, and (--deep's content checks) the Q008
    # info that their 12-25-frame episodes are shorter than a 50-action chunk
    (report,) = validate([str(FIXTURES / "datasets" / name)], ValidateOptions(deep=True, all_videos=True, world_size=1))
    assert sorted((f.check, f.severity) for f in report.findings) == [("Q008", "info"), ("R003", "info")], \
        [f"{f.check} {f.message}" for f in report.findings]
    assert report.codebase_version in ("v2.1", "v3.0")


def test_deep_only_defect_is_reported_as_not_checked_without_deep():
    (report,) = validate([str(FIXTURES / "datasets" / "broken_timestamps")])
    assert "D003" not in _ids(report)
    assert any("--deep" in n.reason for n in report.not_checked)


def _tree_hash(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file()}


def test_validate_is_read_only():
    before = _tree_hash(FIXTURES / "datasets")
    validate([str(FIXTURES / "mixture.txt"), str(FIXTURES / "datasets")] +
             [str(FIXTURES / "datasets" / f["name"]) for f in MANIFEST], ValidateOptions(deep=True, all_videos=True))
    assert _tree_hash(FIXTURES / "datasets") == before


def test_text_mixture_demo():
    reports = validate([str(FIXTURES / "mixture.txt")])
    assert [Path(r.root).name for r in reports] == [
        "clean_v21", "clean_v30", "broken_undeclared_column", "broken_missing_task_label"]
    # per dataset S002 and T002; across the mixture, the second camera of clean_v30 that the others lack (X002)
    # and the camera broken_missing_task_label lacks (X002) are left out of mixture batches; as it has no camera at
    # all, the batches carry no camera of the three others: one X012 error, on the dataset that causes it
    assert [sorted(_ids(r)) for r in reports] == [[], ["X002"], ["S002"], ["T002", "X002", "X012"]]
    assert reports[0].source.endswith("mixture.txt:4")


def test_opentau_json_mixture_with_ref():
    reports = validate([str(FIXTURES / "mixture.json")])
    assert [Path(r.root).name for r in reports] == ["clean_v21", "clean_v30"]
    assert [_ids(r) for r in reports] == [set(), {"X002"}]  # clean_v30's second camera is left out of batches


#: Subject keys a finding of these checks always carries (one of each tuple), after grouping.
SUBJECTS = {
    **{c: ("feature",) for c in ("S001", "S002", "S003", "S004", "S005", "S007", "I007", "I009", "I011", "G002",
                                 "G003", "G004", "G007", "G008", "G010", "D005", "M003")},
    **{c: ("key",) for c in ("I004", "I005", "I008", "C001", "C002", "C003", "C008", "T006")},
    **{c: ("file_kind",) for c in ("F001", "F002", "F003", "F004", "F005", "F006", "F007", "F008", "F013")},
    "I006": ("feature", "key"), "T002": ("task", "key"), "F009": ("video_key",), "F010": ("video_key",),
}


def test_every_fixture_finding_names_its_subject():
    reports = validate([str(FIXTURES / "datasets" / f["name"]) for f in MANIFEST],
                       ValidateOptions(deep=True, all_videos=True))
    seen = set()
    for r in reports:
        for f in r.findings:
            if f.check in SUBJECTS:
                seen.add(f.check)
                assert any(k in f.subject for k in SUBJECTS[f.check]), (f.check, f.message, f.subject)
            if f.check == "F009":
                assert f.subject.get("key") in ("video.codec", "video.pix_fmt", "shape", "fps"), f.subject
    assert len(seen) >= 15, seen  # the fixtures raise most of these checks
