"""The classes of defect real published datasets taught (fixtures/corpus_classes.py, ``benchmarks/corpus_check.py``):
each committed fixture is held to the severity, subject and wording its loader behaviour justifies, and validate,
validate --deep and diagnose-decode agree about it. Also the two survivors of planted bugs: the schema cache must
key on the ``huggingface`` metadata, and a v2.x episode count that is a multiple of ``chunks_size`` is no C003.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from lerobot_tools.checks.engine import ValidateOptions
from lerobot_tools.testing.synth import SynthSpec, build_dataset, hf_schema_metadata
from lerobot_tools.validate import validate

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "datasets"
INFO = "meta/info.json"


def _report(root: Path, **opts):
    (r,) = validate([str(root)], ValidateOptions(**opts))
    return r


def _f(report, check: str) -> list:
    return [f for f in report.findings if f.check == check]


def _sev(report) -> dict[str, set[str]]:
    out: dict[str, set[str]] = {}
    for f in report.findings:
        out.setdefault(f.check, set()).add(f.severity)
    return out


def _diagnose(root: Path) -> list[tuple[str, str]]:
    from lerobot_tools.diagnose.model import DiagnoseOptions
    from lerobot_tools.diagnose.pipeline import diagnose

    (dd,) = diagnose([str(root)], DiagnoseOptions(gpu="H100", frames=0)).datasets
    return [(p.check, p.severity) for p in dd.problems]


def _set_info(root: Path, **changes) -> None:
    info = json.loads((root / INFO).read_text())
    info.update(changes)
    (root / INFO).write_text(json.dumps(info))


# ------------------------------------------------------------------------------------------------ no data at all
@pytest.mark.parametrize("name,loader", [
    ("broken_no_data_v30", "lerobot 0.4.4 load_nested_dataset globs data/*/*.parquet and raises FileNotFoundError"),
    ("broken_info_only_v30", "lerobot 0.4.4 load_nested_dataset globs data/*/*.parquet and raises FileNotFoundError"),
    ("broken_metadata_only_v21", "lerobot 0.3.3 loads data/ with load_dataset('parquet', data_dir=...)"),
    ("broken_info_only_v21", "lerobot 0.3.3 loads data/ with load_dataset('parquet', data_dir=...)"),
])
def test_no_data_files_at_all_is_one_error_naming_the_loader(name, loader):
    r = _report(FIXTURES / name)
    (f001,) = _f(r, "F001")  # one finding, however many files the metadata names
    assert (f001.severity, f001.path, f001.subject) == ("error", "data", {"file_kind": "data"})
    assert f001.message.startswith("no data files at all: data/ does not exist") and loader in f001.message


def test_metadata_only_dataset_validate_and_diagnose_agree_on_the_videos():
    root = FIXTURES / "broken_metadata_only_v21"
    r = _report(root)
    assert _sev(r) == {"F001": {"error"}, "F002": {"error"}}
    assert ("F002", "error") in _diagnose(root)


def test_no_episode_means_no_missing_video():
    # total_episodes 0: no episode references a video file, so neither command calls one missing
    root = FIXTURES / "broken_info_only_v21"
    assert "F002" not in _sev(_report(root))
    assert [c for c, _ in _diagnose(root) if c == "F002"] == []


# --------------------------------------------------------------------------------------- past a bad template
def test_a_bad_template_is_said_once_and_the_data_behind_it_is_checked():
    root = FIXTURES / "broken_template_placeholder_v21"
    for deep in (False, True):
        r = _report(root, deep=deep)
        assert [(f.check, f.path) for f in _f(r, "I008")] == [("I008", INFO)]
        # Q008 (info): its episodes are shorter than a 50-action chunk (the content checks run with --deep)
        assert _sev(r) == {"I008": {"error"}, "S003": {"warning"}, "S005": {"warning"}, "R003": {"info"},
                           **({"Q008": {"info"}} if deep else {})}
        assert {f.subject.get("feature") for f in _f(r, "S005")} == {"action"}
        assert not _f(r, "F001") and not _f(r, "F003") and not _f(r, "D004")


# ------------------------------------------------------------------------------- what the v2.1 loader reads
def test_v21_needs_episodes_stats_v20_does_not(tmp_path):
    root = FIXTURES / "broken_no_episodes_stats_v21"
    (g001,) = _f(_report(root), "G001")
    assert (g001.severity, g001.path) == ("error", "meta/episodes_stats.jsonl")
    assert "lerobot 0.3.3 reads it for every v2.1 dataset" in g001.message
    v20 = tmp_path / "v20"
    shutil.copytree(root, v20)
    _set_info(v20, codebase_version="v2.0")  # lerobot 0.3.3 reads stats.json for v2.0
    assert _f(_report(v20), "G001") == []


def test_columns_the_loader_reads_must_be_in_the_data(tmp_path):
    r = _report(FIXTURES / "broken_loader_columns_v21")
    assert [f.subject for f in _f(r, "S001")] == [{"feature": "task_index"}]  # 0.3.3 never reads 'index'
    assert all(f.severity == "error" and "item['task_index']" in f.message for f in _f(r, "S001"))
    # v3.0: lerobot 0.4.4 reads item['index'] too
    root = build_dataset(tmp_path / "v3", SynthSpec(video_keys=(), video_codec=None))
    for p in sorted((root / "data").glob("*/*.parquet")):
        t = pq.read_table(p)
        pq.write_table(t.drop_columns(["index"]).replace_schema_metadata(t.schema.metadata), p)
    feats = json.loads((root / INFO).read_text())["features"]
    feats.pop("index")
    _set_info(root, features=feats)
    assert [f.subject for f in _f(_report(root), "S001")] == [{"feature": "index"}]


def test_files_load_dataset_would_read_under_data(tmp_path):
    r = _report(FIXTURES / "broken_foreign_files_v21")
    assert sorted((f.path, f.severity) for f in _f(r, "F003")) == [
        ("data/annotations/labels.parquet", "error"), ("data/chunk-000/notes.txt", "error")]
    # v3.0 globs data/*/*.parquet only: a parquet deeper down is nobody's data
    root = build_dataset(tmp_path / "v3", SynthSpec(video_keys=(), video_codec=None))
    (root / "data/chunk-000/extra").mkdir()
    shutil.copy(root / "data/chunk-000/file-000.parquet", root / "data/chunk-000/extra/copy.parquet")
    (root / "data/notes.txt").write_text("x")
    assert _f(_report(root), "F003") == []
    shutil.copy(root / "data/chunk-000/file-000.parquet", root / "data/chunk-000/copy.parquet")
    assert [f.path for f in _f(_report(root), "F003")] == ["data/chunk-000/copy.parquet"]


# ------------------------------------------------------------------------------------------------ statistics
def test_camera_statistics_must_broadcast_over_chw():
    (g004,) = _f(_report(FIXTURES / "broken_camera_stats_flat"), "G004")
    assert g004.severity == "error" and g004.subject == {"feature": "observation.images.front"}
    assert "normalising a (B, 3, H, W) batch with it raises a size mismatch" in g004.message


def test_float32_rounding_is_no_defect_the_constant_dimension_is_the_hazard():
    root = FIXTURES / "broken_constant_float32_noise"
    for deep in (False, True):
        r = _report(root, deep=deep)
        content = {"Q008": {"info"}} if deep else {}  # episodes shorter than a 50-action chunk (--deep)
        assert _sev(r) == {"G009": {"warning", "info"}, "R003": {"info"}, **content}, [f.message for f in r.findings]
        (g,) = [f for f in _f(r, "G009") if f.severity == "warning"]
        assert "constant over the whole dataset (value 0.907)" in g.message and g.path == "meta/stats.json"


def test_a_missing_count_is_a_warning_and_said_once():
    r = _report(FIXTURES / "broken_stats_count_missing_v30")
    (g004,) = _f(r, "G004")
    assert g004.severity == "warning" and "only lerobot's aggregate_stats reads count" in g004.message
    assert isinstance(g004.subject["feature"], list) and "action" in g004.subject["feature"]


def _std_off(tmp_path: Path, feature: str) -> Path:
    """v3.0 whose stats.json std[0] of ``feature`` is 6x the data's and more than its range allows."""
    root = build_dataset(tmp_path / feature, SynthSpec(video_keys=(), video_codec=None))
    stats = json.loads((root / "meta/stats.json").read_text())
    e = stats[feature]
    e["std"][0] = (e["max"][0] - e["min"][0]) * 3
    (root / "meta/stats.json").write_text(json.dumps(stats))
    return root


@pytest.mark.parametrize("feature,severity", [("action", "error"), ("timestamp", "warning")])
def test_one_defect_one_severity_with_and_without_the_data(tmp_path, feature, severity):
    root = _std_off(tmp_path, feature)
    shallow = [f for f in _report(root).findings if f.check in ("G005", "G010")]
    deep = [f for f in _report(root, deep=True).findings if f.check in ("G005", "G010")]
    assert [(f.check, f.severity) for f in shallow] == [("G005", severity)]
    assert [(f.check, f.severity) for f in deep] == [("G010", severity)]  # the data explains it: one finding
    if severity == "warning":  # the severity depends on the feature: the message says so
        assert all("lerobot policies do not normalise 'timestamp'" in f.message for f in shallow + deep)


# ------------------------------------------------------------------------------------------------ severities
def test_float_width_and_v2_total_frames_are_warnings(tmp_path):
    (s003,) = _f(_report(FIXTURES / "broken_dtype_drift"), "S003")
    assert s003.severity == "warning" and "loaders hand out the declared float type" in s003.message
    v21 = build_dataset(tmp_path / "v21", SynthSpec(version="v2.1", video_keys=(), video_codec=None))
    v30 = build_dataset(tmp_path / "v30", SynthSpec(video_keys=(), video_codec=None))
    for root in (v21, v30):
        _set_info(root, total_frames=61)
    assert [f.severity for f in _f(_report(v21), "C002")] == ["warning"]  # lerobot 0.3.3: len = rows loaded
    assert [f.severity for f in _f(_report(v30), "C002")] == ["error"]  # lerobot 0.4.4: len = total_frames


# ------------------------------------------------------------------------------- planted bugs that survived
def test_schema_findings_follow_each_files_huggingface_metadata(tmp_path):
    # three files with one Arrow schema; only episode 1's huggingface metadata misdescribes 'action': S006 must
    # name that file and no other (a cache keyed on the schema alone reports it for all three or none)
    root = build_dataset(tmp_path / "ds", SynthSpec(version="v2.1", video_keys=(), video_codec=None))
    p = root / "data/chunk-000/episode_000001.parquet"
    t = pq.read_table(p)
    feats = json.loads(t.schema.metadata[b"huggingface"])["info"]["features"]
    feats["action"] = {"feature": {"dtype": "float64", "_type": "Value"}, "length": 6, "_type": "Sequence"}
    pq.write_table(t.replace_schema_metadata(hf_schema_metadata(feats)), p)
    for name in ("episode_000000", "episode_000002"):  # files written after and before the odd one
        assert pq.read_schema(root / f"data/chunk-000/{name}.parquet").equals(pq.read_schema(p))
    r = _report(root)
    assert [(f.path, f.count) for f in _f(r, "S006")] == [("data/chunk-000/episode_000001.parquet", 1)]
    assert _f(r, "S006")[0].subject == {"feature": "action"}


def test_an_episode_count_that_fills_its_chunks_is_no_c003(tmp_path):
    # 4 episodes in chunks of 2: total_chunks = ceil(4 / 2) = 2 exactly
    root = build_dataset(tmp_path / "ds", SynthSpec(version="v2.1", episode_lengths=(5, 6, 7, 8), video_keys=(),
                                                    video_codec=None))
    (root / "data/chunk-001").mkdir()
    for e in (2, 3):
        (root / f"data/chunk-000/episode_{e:06d}.parquet").rename(root / f"data/chunk-001/episode_{e:06d}.parquet")
    _set_info(root, chunks_size=2, total_chunks=2)
    r = _report(root)
    assert _f(r, "C003") == [] and _f(r, "F001") == [] and _f(r, "F003") == []
    _set_info(root, total_chunks=3)
    assert [f.message for f in _f(_report(root), "C003")] == ["total_chunks is 3, expected ceil(4 / 2) = 2"]
