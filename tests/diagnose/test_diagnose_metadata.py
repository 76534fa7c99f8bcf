"""diagnose-decode reports a broken info.json or unreadable episode metadata as an error (exit 1), as validate does.

Every loader fails on such metadata before it decodes a frame, so "0 errors" from diagnose-decode would be a lie.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from lerobot_tools.cli import cli

DATASETS = Path(__file__).resolve().parents[2] / "fixtures" / "datasets"


def _break(root: Path, case: str) -> None:
    p = root / "meta" / "info.json"
    info = json.loads(p.read_text())
    if case == "features-null":
        info["features"] = None
    elif case == "fps-invalid":
        info["fps"] = "fast"
    elif case == "fps-zero":
        info["fps"] = 0
    elif case == "codebase-version-unknown":
        info["codebase_version"] = "v9.9"
    elif case == "chunks-size-invalid":
        info["chunks_size"] = "x"
    elif case == "chunks-size-zero":
        info["chunks_size"] = 0
    elif case == "episodes-missing":
        shutil.rmtree(root / "meta" / "episodes", ignore_errors=True)
        (root / "meta" / "episodes.jsonl").unlink(missing_ok=True)
    p.write_text(json.dumps(info))


CASES = {"features-null": "I006", "fps-invalid": "I005", "fps-zero": "I005", "codebase-version-unknown": "I004",
         "chunks-size-invalid": "I003", "chunks-size-zero": "I003", "episodes-missing": "C007"}


@pytest.mark.parametrize("name", ["clean_v21", "clean_v30"])
@pytest.mark.parametrize("case", sorted(CASES))
def test_broken_metadata_is_an_error_in_diagnose_as_in_validate(tmp_path, name, case):
    root = tmp_path / "ds"
    shutil.copytree(DATASETS / name, root)
    _break(root, case)
    val = CliRunner().invoke(cli, ["validate", str(root), "--format", "json"])
    assert val.exit_code == 1
    assert CASES[case] in {f["check"] for f in json.loads(val.output)["datasets"][0]["findings"]
                           if f["severity"] == "error"}
    res = CliRunner().invoke(cli, ["diagnose-decode", str(root), "--frames", "0", "--format", "json"])
    assert res.exit_code == 1, res.output
    assert res.exception is None or isinstance(res.exception, SystemExit)
    (dd,) = json.loads(res.output)["datasets"]
    errors = [p for p in dd["problems"] if p["severity"] == "error"]
    assert CASES[case] in {p["check"] for p in errors}, errors
    text = CliRunner().invoke(cli, ["diagnose-decode", str(root), "--frames", "0"])
    assert text.exit_code == 1 and f"error   {CASES[case]}" in text.output and "Traceback" not in text.output


def test_clean_datasets_still_pass(tmp_path):
    for name in ("clean_v21", "clean_v30"):
        res = CliRunner().invoke(cli, ["diagnose-decode", str(DATASETS / name), "--frames", "0"])
        assert res.exit_code == 0, res.output
