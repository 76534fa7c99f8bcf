"""`lrtool validate` / `lrtool checks` end to end: exit codes, JSON document, selection, baselines, bad input."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

from click.testing import CliRunner

from lerobot_tools.cli import cli

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
DS = FIXTURES / "datasets"


def run(*args, env=None):
    result = CliRunner().invoke(cli, list(map(str, args)), env=env)
    return result.exit_code, result.output


def run_json(*args):
    code, out = run(*args, "--format", "json")
    return code, json.loads(out)


def test_exit_codes():
    assert run("validate", DS / "clean_v21")[0] == 0
    assert run("validate", DS / "broken_undeclared_column")[0] == 1
    assert run("validate", DS / "missing_folder_xyz")[0] == 1          # unresolved target: a finding
    assert run("validate")[0] == 2                                      # no target
    assert run("validate", DS / "clean_v21", "--select", "Z999")[0] == 2
    code, out = run("validate", "--baseline", "/nonexistent/baseline.json", DS / "clean_v21")
    assert code == 2 and "baseline file not found" in out


def test_unreadable_mixture_file_exits_2_with_one_line(tmp_path):
    bad = tmp_path / "mix.json"
    bad.write_text("{oops")
    code, out = run("validate", bad)
    assert code == 2
    assert out.strip().count("\n") == 0 and "not valid JSON" in out and "Traceback" not in out


def test_json_document_shape():
    code, doc = run_json("validate", FIXTURES / "mixture.txt")
    assert code == 1
    assert set(doc) == {"command", "datasets", "summary", "exit_status"}  # the shared top level, docs/output.md
    assert doc["command"] == "validate" and doc["exit_status"] == 1
    ds = doc["datasets"]
    assert [d["codebase_version"] for d in ds] == ["v2.1", "v3.0", "v3.0", "v2.1"]
    for d in ds:
        assert {"target", "root", "codebase_version", "findings", "not_checked"} <= set(d)
        for f in d["findings"]:
            assert {"check", "severity", "path", "message"} <= set(f)
            assert f["severity"] in ("error", "warning", "info")
    assert doc["summary"]["datasets"] == 4 and doc["summary"]["datasets_with_errors"] == 2
    assert doc["summary"]["errors"] == 3  # S002, T002 and X012 (broken_missing_task_label has no camera)


def test_grouped_finding_names_count_and_first_paths():
    code, doc = run_json("validate", DS / "broken_missing_column")
    (s001,) = [f for f in doc["datasets"][0]["findings"] if f["check"] == "S001"]
    assert s001["count"] == 3 and len(s001["paths"]) == 3 and "3 occurrences" in s001["message"]
    assert s001["subject"] == {"feature": "observation.state"}


def test_select_and_ignore():
    code, doc = run_json("validate", DS / "broken_cross_file_drift", "--select", "S007")
    assert code == 1 and {f["check"] for f in doc["datasets"][0]["findings"]} == {"S007"}
    code, doc = run_json("validate", DS / "broken_cross_file_drift", "--ignore", "S,R")
    assert code == 0 and doc["datasets"][0]["findings"] == []


def test_baseline_roundtrip(tmp_path):
    base = tmp_path / "baseline.json"
    code, _ = run("validate", FIXTURES / "mixture.txt", "--write-baseline", base)
    assert code == 1 and base.exists()
    code, doc = run_json("validate", FIXTURES / "mixture.txt", "--baseline", base)
    assert code == 0 and doc["summary"]["known"] >= 2
    assert all(f.get("known") for d in doc["datasets"] for f in d["findings"])
    # a new defect still fails the run
    broken = tmp_path / "extra"
    shutil.copytree(DS / "broken_wrong_totals", broken)
    code, doc = run_json("validate", FIXTURES / "mixture.txt", broken, "--baseline", base)
    assert code == 1
    assert {f["check"] for f in doc["datasets"][-1]["findings"] if not f.get("known")} >= {"C001", "C002"}


def test_deep_finds_timestamp_drift_and_reports_coverage():
    code, doc = run_json("validate", DS / "broken_timestamps", "--deep")
    assert code == 1
    (d003,) = [f for f in doc["datasets"][0]["findings"] if f["check"] == "D003"]
    assert "episode 0" in d003["message"]
    code, out = run("validate", DS / "broken_timestamps")
    assert code == 0 and "D001-D005, C005 per episode: --deep not given" in out


def test_checks_command_and_docs_in_sync():
    code, out = run("checks")
    assert code == 0 and "S002" in out and "column-undeclared" in out
    code, out = run("checks", "T004")
    assert code == 0 and "Why it breaks training" in out
    code, md = run("checks", "--format", "markdown")
    docs = Path(__file__).resolve().parents[2] / "docs" / "checks.md"
    assert docs.read_text() == md, "docs/checks.md is stale: run `lrtool checks --format markdown > docs/checks.md`"


# ---------------------------------------------------------------------- bad input, never a traceback
def _copy(name, tmp_path) -> Path:
    dst = tmp_path / name
    shutil.copytree(DS / name, dst)
    return dst


def test_bad_inputs_are_findings_and_other_datasets_still_run(tmp_path):
    not_dataset = tmp_path / "empty_dir"
    not_dataset.mkdir()
    corrupt = _copy("clean_v30", tmp_path)
    (corrupt / "data/chunk-000/file-001.parquet").write_bytes(b"PAR1" + os.urandom(300))
    outside = _copy("clean_v21", tmp_path)
    info = json.loads((outside / "meta/info.json").read_text())
    info["data_path"] = "../../escape/episode_{episode_index:06d}.parquet"
    (outside / "meta/info.json").write_text(json.dumps(info))
    loop = tmp_path / "loop"
    loop.symlink_to(loop)
    mix = tmp_path / "mix.txt"
    mix.write_text(f"{not_dataset}\n{corrupt}\n{outside}\n{loop}\nnobody/nothing@main\n{DS / 'clean_v21'}\n")
    code, doc = run_json("validate", mix)
    assert code == 1
    checks = [sorted({f["check"] for f in d["findings"] if f["severity"] == "error"}) for d in doc["datasets"]]
    assert checks[0] == ["I001"]
    assert "F007" in checks[1]
    assert "I008" in checks[2]
    assert checks[3] == ["M001"] and checks[4] == ["M001"]
    assert checks[5] == []
    msg = [f for f in doc["datasets"][2]["findings"] if f["check"] == "I008"][0]["message"]
    assert "outside the dataset root" in msg


def test_symlink_loop_inside_a_dataset_is_reported(tmp_path):
    ds = _copy("clean_v21", tmp_path)
    f = ds / "data/chunk-000/episode_000001.parquet"
    f.unlink()
    f.symlink_to(f)
    code, doc = run_json("validate", ds)
    assert code == 1
    assert any(x["check"] == "F007" and "episode_000001" in (x["path"] or "") for x in doc["datasets"][0]["findings"])


def test_info_json_schema_errors(tmp_path):
    ds = _copy("clean_v30", tmp_path)
    info = json.loads((ds / "meta/info.json").read_text())
    info["fps"] = 30.5
    info["total_frames"] = "many"
    info["features"]["action"]["dtype"] = "float33"
    info["features"]["action"]["shape"] = [6, "x"]
    info["codebase_version"] = "v9.9"
    (ds / "meta/info.json").write_text(json.dumps(info))
    code, doc = run_json("validate", ds)
    found = {(f["check"], f["severity"]) for f in doc["datasets"][0]["findings"]}
    assert code == 1
    assert {("I003", "error"), ("I004", "error"), ("I005", "error"), ("I006", "error")} <= found
    # an unknown version stops the layout-dependent checks and says so
    assert any("codebase_version is unknown" in n["reason"] for n in doc["datasets"][0]["not_checked"])


def test_startup_does_not_import_heavy_modules():
    probe = (
        "import sys\n"
        "from lerobot_tools.cli import main\n"
        "try:\n    main(sys.argv[1:])\nexcept SystemExit:\n    pass\n"
        "bad = [m for m in ('torch', 'torchcodec', 'datasets', 'pandas') if m in sys.modules]\n"
        "print('HEAVY', bad)\n"
    )
    for args in (["--help"], ["validate", str(DS / "clean_v30"), "--deep"]):
        out = subprocess.run([sys.executable, "-c", probe, *args], capture_output=True, text=True, check=True).stdout
        assert out.strip().endswith("HEAVY []"), out
    # the default checks of a v3.0 dataset (statistics columns included) need nothing of pyarrow.compute (~50 ms)
    probe = probe.replace("'pandas')", "'pandas', 'pyarrow.compute')")
    out = subprocess.run([sys.executable, "-c", probe, "validate", str(DS / "clean_v30")], capture_output=True,
                         text=True, check=True).stdout
    assert out.strip().endswith("HEAVY []"), out
