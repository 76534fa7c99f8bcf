"""Checks and report parts no other test makes fire: G003 for an infinity (not only NaN), I005 for fps 0, M004 for
a dataset whose episode indices are sparse, D004 for episodes out of order across two data files, the summary
totals (text and JSON) and the shared "Not checked" section of the text report.

Each dataset is written by :mod:`lerobot_tools.testing.synth` (real parquet, no video) and broken in one way.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from lerobot_tools.checks.engine import ValidateOptions
from lerobot_tools.cli import cli
from lerobot_tools.testing.synth import SynthSpec, build_dataset
from lerobot_tools.validate import validate

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "fixtures" / "datasets"


def no_video(root: Path, **kw) -> Path:
    spec = dict(video_keys=(), video_codec=None, state_dim=2, action_dim=2)
    spec.update(kw)
    return build_dataset(root, SynthSpec(**spec))


def run(*targets, **opts):
    return validate([str(t) for t in targets], ValidateOptions(**opts))


def found(report, check: str) -> list:
    return [f for f in report.findings if f.check == check]


def edit_json(path: Path, fn) -> None:
    doc = json.loads(path.read_text())
    fn(doc)
    path.write_text(json.dumps(doc, indent=4))  # allow_nan: Infinity / NaN literals, as Python's json writes them


# ------------------------------------------------------------------------------------------------------ G003
@pytest.mark.parametrize("value", [float("inf"), float("-inf")])
def test_g003_infinity_in_stats_json_is_an_error(tmp_path, value):
    root = no_video(tmp_path / "ds")
    (r,) = run(root)
    assert not found(r, "G003")

    def spoil(s):
        s["action"]["max"][1] = value
    edit_json(root / "meta/stats.json", spoil)
    assert "Infinity" in (root / "meta/stats.json").read_text() and "NaN" not in (root / "meta/stats.json").read_text()
    (r,) = run(root)
    g = found(r, "G003")
    assert len(g) == 1 and g[0].severity == "error" and g[0].path == "meta/stats.json", r.findings
    assert "'action'" in g[0].message and g[0].message.endswith("max[1] is not finite"), g[0].message


def test_g003_infinity_in_per_episode_statistics_is_a_warning(tmp_path):
    """v3.0 per-episode statistics (episode metadata parquet) holding +inf: a warning naming the episode."""
    root = no_video(tmp_path / "ds")
    f = next((root / "meta/episodes").rglob("*.parquet"))
    t = pq.read_table(f)
    name = "stats/observation.state/min"
    i = t.column_names.index(name)
    rows = t.column(i).to_pylist()
    rows[1] = [rows[1][0], float("inf")]
    t = t.set_column(i, t.schema.field(i), pa.array(rows, t.schema.field(i).type))
    pq.write_table(t, f)
    (r,) = run(root)
    g = found(r, "G003")
    assert len(g) == 1 and g[0].severity == "warning", r.findings
    assert "episode 1" in g[0].message and "min[1] is not finite" in g[0].message, g[0].message


# ------------------------------------------------------------------------------------------------------ I005
@pytest.mark.parametrize("fps,expect", [(1, None), (0, "fps 0 must be > 0"), (-1, "fps -1 must be > 0")])
def test_i005_fps_zero_and_negative_are_errors_one_is_not(tmp_path, fps, expect):
    root = no_video(tmp_path / "ds", episode_lengths=(5, 4))
    edit_json(root / "meta/info.json", lambda i: i.__setitem__("fps", fps))
    (r,) = run(root)
    got = [(f.severity, f.message) for f in found(r, "I005")]
    assert got == ([] if expect is None else [("error", f"{expect} (lerobot raises ValueError)")]), got


# ------------------------------------------------------------------------------------------------------ M004
def _sparse_v21(root: Path) -> Path:
    """v2.1 with episodes 0, 1, 3 (episode 2 deleted without renumbering): indices are sparse."""
    no_video(root, version="v2.1", episode_lengths=(5, 4, 6, 3))
    (root / "data/chunk-000/episode_000002.parquet").unlink()
    for name in ("episodes.jsonl", "episodes_stats.jsonl"):
        p = root / "meta" / name
        p.write_text("".join(x + "\n" for x in p.read_text().splitlines() if json.loads(x)["episode_index"] != 2))
    return root


@pytest.mark.parametrize("attr", ["episodes", "excluded_episodes"])
def test_m004_sparse_episode_indices(tmp_path, attr):
    root = _sparse_v21(tmp_path / "ds")
    mix = tmp_path / "mix.json"

    def m004(wanted: list[int]) -> list[str]:
        mix.write_text(json.dumps({"dataset_mixture": {"datasets": [{"root": str(root), attr: wanted}]}}))
        (r,) = run(mix)
        return [f.message for f in found(r, "M004")]

    assert m004([0, 3]) == []  # 3 exists though there are only 3 episodes
    assert m004([0, 2]) == [f"{attr} requests 1 episode(s) the dataset does not have (2; it has 3)"]
    assert m004([4]) == [f"{attr} requests 1 episode(s) the dataset does not have (4; it has 3)"]


# ------------------------------------------------------------------------------------------------------ D004
def test_d004_episodes_out_of_order_across_two_data_files(tmp_path):
    """file-000 holds episodes 2, 3 and file-001 episodes 0, 1 (the metadata agrees): each file is in order, the
    dataset is not. Only --deep reads the rows."""
    root = no_video(tmp_path / "ds", episode_lengths=(5, 4, 6, 3), episodes_per_file=2)
    d = root / "data/chunk-000"
    f0, f1 = d / "file-000.parquet", d / "file-001.parquet"
    b0, b1 = f0.read_bytes(), f1.read_bytes()
    f0.write_bytes(b1)
    f1.write_bytes(b0)
    ep = next((root / "meta/episodes").rglob("*.parquet"))
    t = pq.read_table(ep)
    i = t.column_names.index("data/file_index")
    t = t.set_column(i, t.schema.field(i), pa.array([1, 1, 0, 0], t.schema.field(i).type))
    pq.write_table(t, ep)
    (r,) = run(root, deep=True)
    d004 = found(r, "D004")
    assert [(f.path, f.message) for f in d004] == [
        ("data/chunk-000/file-001.parquet", "episodes are not in ascending order (0, 1)")], r.findings
    (shallow,) = run(root)
    assert not found(shallow, "D004")


def test_d004_in_order_across_files_is_clean(tmp_path):
    root = no_video(tmp_path / "ds", episode_lengths=(5, 4, 6, 3), episodes_per_file=2)
    (r,) = run(root, deep=True)
    assert not found(r, "D004"), r.findings


# ------------------------------------------------------------------------------------- summary and "Not checked"
def _two_broken(tmp_path: Path) -> list[Path]:
    """Three datasets: a (2 errors: C002, G003; 1 warning: I005 float fps), b (1 warning: G002), c (no findings
    but R003's info, as every synth dataset)."""
    a = no_video(tmp_path / "a")
    edit_json(a / "meta/info.json", lambda i: i.update(total_frames=i["total_frames"] + 7, fps=10.0))
    edit_json(a / "meta/stats.json", lambda s: s["action"]["mean"].__setitem__(0, float("inf")))
    b = no_video(tmp_path / "b")
    edit_json(b / "meta/stats.json", lambda s: s.__setitem__("gone", {"mean": [0.0]}))
    c = no_video(tmp_path / "c")
    return [a, b, c]


def _count(findings: list[dict]) -> dict[str, int]:
    out = {"error": 0, "warning": 0, "info": 0}
    for f in findings:
        out[f["severity"]] += 1
    return out


def test_summary_totals_in_json_and_text(tmp_path):
    targets = [str(p) for p in _two_broken(tmp_path)]
    rj = CliRunner().invoke(cli, ["validate", *targets, "--format", "json"])
    assert rj.exit_code == 1, rj.output
    doc = json.loads(rj.stdout)
    per = [_count(d["findings"]) for d in doc["datasets"]]
    checks = [sorted({f["check"] for f in d["findings"] if f["severity"] != "info"}) for d in doc["datasets"]]
    assert checks == [["C002", "G003", "I005"], ["G002"], []], checks
    assert [p["error"] for p in per] == [2, 0, 0] and [p["warning"] for p in per] == [1, 1, 0], per
    infos = sum(p["info"] for p in per)
    assert infos >= 3  # R003 in each
    s = doc["summary"]
    assert (s["datasets"], s["datasets_with_errors"], s["errors"], s["warnings"], s["infos"], s["known"]) == \
        (3, 1, 2, 2, infos, 0), s
    rt = CliRunner().invoke(cli, ["validate", *targets])
    assert rt.exit_code == 1, rt.output
    last = rt.output.strip().splitlines()[-1]
    assert last == f"Summary: 3 dataset(s), 1 with errors; 2 error(s), 2 warning(s), {infos} info", last


def test_summary_counts_findings_known_from_a_baseline_apart(tmp_path):
    a, b, _ = _two_broken(tmp_path)
    base = tmp_path / "baseline.json"
    r = CliRunner().invoke(cli, ["validate", str(a), "--write-baseline", str(base)])
    assert base.is_file(), r.output
    r = CliRunner().invoke(cli, ["validate", str(a), str(b), "--baseline", str(base), "--format", "json"])
    s = json.loads(r.stdout)["summary"]
    assert r.exit_code == 0, r.output  # a's errors are all known
    assert s["datasets_with_errors"] == 0 and s["known"] >= 3, s
    r = CliRunner().invoke(cli, ["validate", str(a), str(b), "--baseline", str(base)])
    assert re.search(rf", {s['known']} known from baseline$", r.output.strip().splitlines()[-1]), r.output


def _not_checked_lines(text: str) -> tuple[dict[str, list[str]], list[str]]:
    """(dataset header -> its "not checked:" lines, lines of the shared section)."""
    per: dict[str, list[str]] = {}
    shared: list[str] = []
    current = None
    section = False
    for line in text.splitlines():
        if line.startswith("Not checked"):
            section = True
            continue
        if section:
            if not line.strip():
                section = False
            else:
                shared.append(line.strip())
            continue
        if line and not line.startswith(" ") and not line.startswith("Summary"):
            current = line.split(" (")[0]
            per[current] = []
        elif line.startswith("  not checked: ") and current:
            per[current].append(line[len("  not checked: "):])
    return per, shared


def test_not_checked_shared_by_all_datasets_is_printed_once(tmp_path):
    a = no_video(tmp_path / "a")
    b = FIXTURES / "clean_v21"  # with video: the decoder header of its second file is not read (F009 gap)
    r = CliRunner().invoke(cli, ["validate", str(a), str(b), "--format", "json"])
    nc = [{(n["checks"], n["reason"]) for n in d["not_checked"]} for d in json.loads(r.stdout)["datasets"]]
    common = nc[0] & nc[1]
    assert common and nc[0] != nc[1], nc  # the JSON lists every gap under every dataset
    rt = CliRunner().invoke(cli, ["validate", str(a), str(b)])
    per, shared = _not_checked_lines(rt.output)
    assert "Not checked (all datasets):" in rt.output
    assert sorted(shared) == sorted(f"{c}: {why}" for c, why in common), (shared, common)
    assert sorted(per[str(a)]) == sorted(f"{c}: {why}" for c, why in nc[0] - common), rt.output
    assert sorted(per[str(b)]) == sorted(f"{c}: {why}" for c, why in nc[1] - common), rt.output
    # --deep and --world-size close two of the shared gaps
    rd = CliRunner().invoke(cli, ["validate", str(a), str(b), "--deep", "--world-size", "1"])
    _, shared_deep = _not_checked_lines(rd.output)
    assert not any(x.startswith(("D001-D005", "R004")) for x in shared_deep), rd.output
    assert any(x.startswith("D001-D005") for x in shared) and any(x.startswith("R004") for x in shared), shared


def test_not_checked_of_a_single_dataset_has_its_own_heading(tmp_path):
    a = no_video(tmp_path / "a")
    r = CliRunner().invoke(cli, ["validate", str(a)])
    assert "Not checked:\n" in r.output and "(all datasets)" not in r.output and "  not checked:" not in r.output
    _, shared = _not_checked_lines(r.output)
    assert "R004: --world-size not given" in shared, r.output


# ------------------------------------------------------------------------------------------------------ F007
def test_f007_names_a_path_that_is_not_utf8_as_the_cause(tmp_path):
    """pyarrow cannot open a path holding a byte that is not UTF-8 (Python keeps it as a surrogate escape): F007
    says that, not a codec traceback, for every data file under such a folder."""
    import os
    import shutil

    root = Path(os.fsdecode(bytes(tmp_path) + b"/ds\xff"))
    shutil.copytree(FIXTURES / "clean_v21", root)
    (report,) = run(root)
    (f007,) = found(report, "F007")  # one finding for the three data files
    assert f007.count == 3 and f007.severity == "error"
    assert f007.message.startswith("path is not valid UTF-8, so pyarrow (and every loader built on it, lerobot's "
                                   "included) cannot open the file; rename the folder or file (3 occurrences")
    renamed = tmp_path / "ds"
    root.rename(renamed)
    assert not found(run(renamed)[0], "F007")
