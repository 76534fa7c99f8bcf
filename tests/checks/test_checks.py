"""Checks without a committed fixture, each on a synthetic dataset broken in exactly one way."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from lerobot_tools.checks import catalogue
from lerobot_tools.checks.engine import ValidateOptions
from lerobot_tools.checks.info import names_problem
from lerobot_tools.dataset.features import column_form, compare_feature, hf_entry_agrees, hf_metadata_problems
from lerobot_tools.dataset.templates import template_problems
from lerobot_tools.dataset.targets import Target
from lerobot_tools.checks.engine import validate_target
from lerobot_tools.testing.synth import SynthSpec, build_dataset
from lerobot_tools.validate import validate


def _ids(report, sev=("error", "warning")):
    return {f.check for f in report.findings if f.severity in sev}


def _validate(root, **opts):
    (r,) = validate([str(root)], ValidateOptions(**opts))
    return r


def _edit_info(root: Path, fn):
    p = root / "meta/info.json"
    info = json.loads(p.read_text())
    fn(info)
    p.write_text(json.dumps(info, indent=4))


def _rewrite(path: Path, fn):
    """Rewrite a parquet file keeping one row group per episode."""
    t = pq.read_table(path)
    t = fn(t)
    eps = t.column("episode_index").to_numpy()
    with pq.ParquetWriter(path, t.schema) as w:
        for e in np.unique(eps):
            w.write_table(t.filter(pa.compute.equal(t.column("episode_index"), e)))


@pytest.fixture
def v3(tmp_path):
    return build_dataset(tmp_path / "v3", SynthSpec(video_codec=None, video_keys=()))


@pytest.fixture
def v21(tmp_path):
    return build_dataset(tmp_path / "v21", SynthSpec(version="v2.1", video_codec=None, video_keys=()))


def test_synthetic_baselines_are_clean(v3, v21):
    assert _ids(_validate(v3, deep=True)) == set()
    assert _ids(_validate(v21, deep=True)) == set()


# ---------------------------------------------------------------------- deep checks
def test_deep_frame_index_global_index_and_row_order(v3):
    f0 = v3 / "data/chunk-000/file-000.parquet"

    def bump(t):
        fi = t.column("frame_index").to_numpy().copy()
        fi[3] = 99
        idx = t.column("index").to_numpy().copy()
        idx[5] += 1000
        t = t.set_column(t.schema.get_field_index("frame_index"), "frame_index", pa.array(fi))
        return t.set_column(t.schema.get_field_index("index"), "index", pa.array(idx))

    _rewrite(f0, bump)
    r = _validate(v3, deep=True)
    assert {"D001", "D002"} <= _ids(r) and "D003" not in _ids(r)  # the timestamps are right: frame_index alone is wrong
    msg = [f.message for f in r.findings if f.check == "D001"][0]
    assert "episode 0" in msg and "99" in msg
    assert "D001" not in _ids(_validate(v3))


def test_deep_rows_not_grouped_by_episode(v3):
    f0 = v3 / "data/chunk-000/file-000.parquet"
    t = pq.read_table(f0)
    order = np.r_[0:5, 20:25, 5:20, 25:t.num_rows]      # episode 1 rows interleaved into episode 0
    pq.write_table(t.take(pa.array(order)), f0)
    r = _validate(v3, deep=True)
    assert "D004" in _ids(r)
    assert any("not contiguous" in f.message for f in r.findings if f.check == "D004")


def test_deep_episode_in_the_wrong_file_and_lengths(v3):
    # move episode 1's rows out of file-000 into file-001: row counts per file change -> C005 (footers)
    f0, f1 = v3 / "data/chunk-000/file-000.parquet", v3 / "data/chunk-000/file-001.parquet"
    t0, t1 = pq.read_table(f0), pq.read_table(f1)
    ep1 = t0.filter(pa.compute.equal(t0.column("episode_index"), 1))
    pq.write_table(t0.filter(pa.compute.equal(t0.column("episode_index"), 0)), f0)
    pq.write_table(pa.concat_tables([ep1, t1]), f1)
    shallow = _validate(v3)
    assert "C005" in _ids(shallow)
    deep = _validate(v3, deep=True)
    assert "D004" in _ids(deep)
    assert any("other episodes than the metadata" in f.message for f in deep.findings if f.check == "D004")


def test_deep_variable_list_with_wrong_row_length(v3):
    f0 = v3 / "data/chunk-000/file-000.parquet"
    t = pq.read_table(f0)
    rows = t.column("action").to_pylist()
    rows[2] = rows[2][:5]
    t = t.set_column(t.schema.get_field_index("action"), "action", pa.array(rows, pa.list_(pa.float32())))
    pq.write_table(t, f0)
    r = _validate(v3, deep=True)
    assert {"S005", "D005"} <= _ids(r)
    assert "D005" not in _ids(_validate(v3))


# ---------------------------------------------------------------------- metadata checks
def test_v3_index_ranges_and_episode_positions(v3):
    ep_file = v3 / "meta/episodes/chunk-000/file-000.parquet"
    t = pq.read_table(ep_file)
    frm = t.column("dataset_from_index").to_numpy().copy()
    frm[1] += 3
    t = t.set_column(t.schema.get_field_index("dataset_from_index"), "dataset_from_index", pa.array(frm))
    idx = t.column("episode_index").to_numpy().copy()
    idx[[1, 2]] = idx[[2, 1]]
    t = t.set_column(t.schema.get_field_index("episode_index"), "episode_index", pa.array(idx))
    pq.write_table(t, ep_file)
    assert {"C004", "C006"} <= _ids(_validate(v3))


def test_tasks_table_duplicates_indices_and_total(v21):
    (v21 / "meta/tasks.jsonl").write_text(
        '{"task_index": 0, "task": "pick up the cube"}\n{"task_index": 3, "task": "pick up the cube"}\n')
    r = _validate(v21)
    assert {"T005", "T007", "T002"} <= _ids(r)     # episodes reference the lost second task
    _edit_info(v21, lambda i: i.update(total_tasks=5))
    assert "T006" in _ids(_validate(v21))


def test_v3_tasks_parquet_out_of_position(v3):
    import pandas as pd

    df = pd.DataFrame({"task_index": [1, 0]}, index=pd.Index(["place the cube in the bin", "pick up the cube"], name="task"))
    df.to_parquet(v3 / "meta/tasks.parquet")
    assert "T007" in _ids(_validate(v3))


def test_counters_splits_and_v2_video_counters(v21):
    _edit_info(v21, lambda i: i.update(total_videos=7, total_chunks=3, splits={"train": "0:9", "val": "x"}))
    r = _validate(v21)
    assert {"C003", "C008"} <= _ids(r)
    assert all(f.severity == "warning" for f in r.findings if f.check in ("C003", "C008"))


def test_info_feature_rules(v3):
    def edit(i):
        f = i["features"]
        f["observation.state"]["names"] = ["a", "b"]                      # I007 length mismatch
        f["bad/name"] = {"dtype": "float32", "shape": [1], "names": None}  # I011 (+S001: no column)
        f["timestamp"]["dtype"] = "float64"                                # I010 (+S003)
        i["fps"] = 10.0                                                    # I005 warning
    _edit_info(v3, edit)
    r = _validate(v3)
    sev = {f.check: f.severity for f in r.findings}
    assert sev["I007"] == "warning" and sev["I011"] == "error" and sev["I010"] == "warning"
    assert sev["I005"] == "warning"


def test_camera_names_and_video_path_rules(tmp_path):
    root = build_dataset(tmp_path / "cam", SynthSpec(version="v2.1", episode_lengths=(5, 5)))
    _edit_info(root, lambda i: i["features"]["observation.images.front"].update(names=None))
    assert "I009" in _ids(_validate(root))
    _edit_info(root, lambda i: i.update(video_path=None))
    r = _validate(root)
    assert any(f.check == "I008" and "null" in f.message for f in r.findings)


def test_stats_checks(v3):
    stats = json.loads((v3 / "meta/stats.json").read_text())
    stats["action"]["mean"][0] = math.nan
    stats["removed_feature"] = {"mean": [0.0]}
    (v3 / "meta/stats.json").write_text(json.dumps(stats))
    r = _validate(v3)
    assert {"G002", "G003"} <= _ids(r)
    (v3 / "meta/stats.json").unlink()
    assert "G001" in _ids(_validate(v3))


def test_row_group_oversize_and_world_size(tmp_path):
    root = build_dataset(tmp_path / "big", SynthSpec(video_codec=None, video_keys=(), episode_lengths=(400, 400, 400),
                                                      extra_vector_features={"emb": 256}, row_groups="file"))
    r = _validate(root, row_group_mb=0.1, world_size=4)
    assert {"R001", "R002", "R004"} <= _ids(r)
    assert "R004" not in _ids(_validate(root, world_size=2))      # 2 files divide across 2 ranks


def test_placeholder_and_staging_files(v21):
    (v21 / "data/chunk-000/episode_000001.parquet").write_bytes(b"")
    (v21 / "data/chunk-000/episode_000002.parquet").write_text("<!DOCTYPE html><html>429 Too Many Requests</html>")
    (v21 / "images/observation.images.front/episode_000000").mkdir(parents=True)
    (v21 / "images/observation.images.front/episode_000000/frame_000000.png").write_bytes(b"\x89PNG")
    r = _validate(v21)
    assert {"F005", "F006", "F011"} <= _ids(r)


def test_v3_video_segment_past_end_and_off_grid(tmp_path):
    root = build_dataset(tmp_path / "vid", SynthSpec(episode_lengths=(10, 12, 8)))
    assert _ids(_validate(root)) == set()
    ep_file = root / "meta/episodes/chunk-000/file-000.parquet"
    t = pq.read_table(ep_file)
    col = "videos/observation.images.front/to_timestamp"
    to = t.column(col).to_numpy().copy()
    to[1] += 5.0
    t = t.set_column(t.schema.get_field_index(col), col, pa.array(to))
    pq.write_table(t, ep_file)
    r = _validate(root)
    # the frame queries still land (length unchanged): the segment, 5 s longer than 12 frames, is the error
    assert any(f.check == "F010" and f.severity == "error" and "but the episode has 12 frames" in f.message
               for f in r.findings)


def test_mixture_feature_mapping_and_episode_requests(tmp_path):
    root = build_dataset(tmp_path / "m", SynthSpec(video_codec=None, video_keys=()))
    mix = tmp_path / "mix.json"
    mix.write_text(json.dumps({"dataset_mixture": {"datasets": [
        {"root": str(root), "episodes": [0, 7], "data_features_name_mapping": {"state": "observation.state",
                                                                               "prompt": "task", "cam": "observation.images.top"}},
    ]}}))
    (r,) = validate([str(mix)])
    assert {"M003", "M004"} <= _ids(r)
    m003 = [f.message for f in r.findings if f.check == "M003"]
    assert len(m003) == 1 and "observation.images.top" in m003[0]


def test_unresolved_target_report():
    r = validate_target(Target(spec="org/x", error="not found", error_check="M001"))
    assert [f.check for f in r.findings] == ["M001"] and r.not_checked


# ---------------------------------------------------------------------- pure helpers
@pytest.mark.parametrize("arrow,feat,expected", [
    (pa.float32(), {"dtype": "float32", "shape": [1]}, []),
    (pa.list_(pa.float32(), 1), {"dtype": "float32", "shape": [1]}, ["S004"]),
    (pa.list_(pa.float32()), {"dtype": "float32", "shape": [1]}, ["S004"]),
    (pa.list_(pa.float32(), 6), {"dtype": "float32", "shape": [6]}, []),
    (pa.list_(pa.float32(), 7), {"dtype": "float32", "shape": [6]}, ["S004"]),
    (pa.list_(pa.float32()), {"dtype": "float32", "shape": [6]}, ["S005"]),
    (pa.large_list(pa.float64()), {"dtype": "float32", "shape": [6]}, ["S005", "S003"]),
    (pa.float64(), {"dtype": "float32", "shape": [6]}, ["S004", "S003"]),
    (pa.int32(), {"dtype": "int64", "shape": [1]}, ["S003"]),
    (pa.string(), {"dtype": "float32", "shape": [1]}, ["S003"]),
    (pa.list_(pa.list_(pa.float32())), {"dtype": "float32", "shape": [2, 3]}, []),
    (pa.list_(pa.float32()), {"dtype": "float32", "shape": [2, 3]}, ["S004"]),
    (pa.string(), {"dtype": "string", "shape": [1]}, []),
    (pa.struct([("bytes", pa.binary()), ("path", pa.string())]), {"dtype": "image", "shape": [8, 8, 3]}, []),
    (pa.float32(), {"dtype": "image", "shape": [8, 8, 3]}, ["S003"]),
    (pa.float32(), {"dtype": "video", "shape": [8, 8, 3]}, ["S002"]),
])
def test_compare_feature(arrow, feat, expected):
    assert [c for c, _, _ in compare_feature("x", feat, arrow)] == expected


def test_column_form():
    f = column_form(pa.list_(pa.list_(pa.float64(), 3)))
    assert (f.kind, f.value, f.depth, f.lengths, f.fixed) == ("list", "float64", 2, (None, 3), False)


def test_hf_metadata_problems_one_rule_for_validate_and_repair():
    schema = pa.schema([("action", pa.list_(pa.float32(), 6)), ("extra", pa.int64())])
    feats = {"action": {"dtype": "float32", "shape": [6]}, "cam": {"dtype": "video", "shape": [8, 8, 3]}}

    def kinds(raw, **kw):
        return [(p.kind, p.feature) for p in hf_metadata_problems(feats, schema, raw, **kw)]

    def doc(entries):
        return json.dumps({"info": {"features": entries}})

    good = {"feature": {"dtype": "float32", "_type": "Value"}, "length": 6, "_type": "List"}
    assert kinds(None) == [("missing", None)] and kinds(None, has_pandas=True) == [("pandas", None)]
    assert kinds("{not json") == [("unparseable", None)] and kinds('{"info": []}') == [("unparseable", None)]
    assert kinds(doc({"action": good})) == []  # an undeclared column needs no entry
    assert kinds(doc({})) == [("undescribed", "action")]
    assert kinds(doc({"action": {"dtype": "float64", "_type": "Value"}})) == [("disagrees", "action")]
    assert kinds(doc({"action": {"dtype": "float64", "_type": "Value"}}), drifted={"action"}) == []
    assert kinds(doc({"action": good, "gone": good})) == [("stale", "gone")]
    # a variable-length List entry agrees with a 1-D feature; `float` is datasets' spelling of float32
    assert hf_entry_agrees(feats["action"], {"feature": {"dtype": "float", "_type": "Value"}, "_type": "Sequence"})
    assert not hf_entry_agrees(feats["action"], {"dtype": "float32", "_type": "Value"})


def test_names_problem():
    assert names_problem("s", {"dtype": "float32", "shape": [2], "names": ["a", "b"]}) is None
    assert names_problem("s", {"dtype": "float32", "shape": [2], "names": {"motors": ["a", "b"]}}) is None
    msg, ok = names_problem("s", {"dtype": "float32", "shape": [2], "names": [["a", "b"]]})
    assert ok and "nested" in msg
    assert names_problem("s", {"dtype": "float32", "shape": [3], "names": ["a"]})[1] is False
    assert names_problem("c", {"dtype": "video", "shape": [4, 4, 3], "names": ["height", "width", "channels"]}) is None


def test_template_problems():
    assert template_problems("data/chunk-{chunk_index:03d}/file-{file_index:03d}.parquet", layout="v3", video=False) == []
    assert any("unknown placeholder" in p for p in template_problems("data/{episode}.parquet", layout="v2", video=False))
    assert any("outside" in p for p in template_problems("../x/{episode_index}.parquet", layout="v2", video=False))
    assert any("video_key" in p for p in template_problems("videos/{episode_index}.mp4", layout="v2", video=True))
    assert template_problems(12, layout="v2", video=False)


def test_catalogue_entries_are_complete():
    ids = list(catalogue.CATALOGUE)
    assert len(ids) == len(set(ids)) >= 50
    for c in catalogue.CATALOGUE.values():
        assert c.id[0] in catalogue.FAMILIES and c.severity in catalogue.SEVERITIES
        assert c.title and c.what and c.why and c.fix and c.name == c.name.lower()
    assert catalogue.expand_selection(["S", "T002"]) >= {"S001", "S007", "T002"}
    with pytest.raises(ValueError):
        catalogue.expand_selection(["Z"])


def test_findings_carry_their_subject_and_groups_keep_what_they_share():
    from lerobot_tools.findings import Finding, group_findings

    g = "episode video segments of cam do not fit their files"
    fs = [Finding("F010", "error", f"videos/{i}.mp4", f"episode {i}: ...", group=g, subject={"video_key": "cam", "episode": i})
          for i in range(3)]
    fs.append(Finding("S001", "error", None, "x", subject={"feature": ["a", "b"]}))
    head, s001 = group_findings(fs)
    assert head.count == 3 and head.subject == {"video_key": "cam"} and head.to_dict()["subject"] == {"video_key": "cam"}
    assert head.concerns({"video_key": "cam"}) and not head.concerns({"episode": 0}) and head.concerns(None)
    assert s001.concerns({"feature": "b"}) and not s001.concerns({"feature": "c"})
    assert "subject" not in Finding("R004", "warning", None, "m").to_dict()
    with pytest.raises(ValueError):
        Finding("S001", "error", None, "m", subject={"column": "a"})


def test_subjects_of_real_findings(v3):
    def edit(info):
        info.update(total_frames=1, fps=30.0)
        info["features"]["action"]["names"] = ["a"]
    _edit_info(v3, edit)
    subjects = {f.check: f.subject for f in _validate(v3).findings}
    assert subjects["C002"] == {"key": "total_frames"} and subjects["I005"] == {"key": "fps"}
    assert subjects["I007"] == {"feature": "action"}


def test_every_error_names_the_loader_code_path_that_fails():
    """Severity is a promise: an error is something a real loader raises on or silently reads wrong, and its
    doc entry says which (upstream lerobot, OpenTau, lrtool's own loaders, or torch's collate for mixtures)."""
    import re

    from lerobot_tools.checks import catalogue

    loader = re.compile(r"\blerobot\b|LeRobotDataset|OpenTau|lrtool's|loader|torchcodec|PyAV|pyarrow|"
                        r"default_collate|MixtureDataset|FrameDataset|`load_")
    vague = [c.id for c in catalogue.CATALOGUE.values() if c.severity == "error" and not loader.search(c.why)]
    assert vague == []


def test_frame_index_alone_is_a_warning_and_timestamps_are_checked_against_the_frame_position():
    from lerobot_tools.checks import catalogue

    assert catalogue.get("D001").severity == "warning" and catalogue.get("D003").severity == "error"
