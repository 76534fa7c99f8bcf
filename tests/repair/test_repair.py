"""`lrtool repair`: every repairable check fixed on real broken files, data unchanged, idempotent, reversible.

Each broken dataset is a copy of a committed fixture (``fixtures/datasets/broken_*``) or a variant built in
tmp_path from :mod:`lerobot_tools.testing.synth`. The "clean dataset it came from" is rebuilt with the same
:class:`SynthSpec` as ``fixtures/generate.py`` (data parquet content depends only on the spec's seed and
episodes, so it is rebuilt without videos).
"""

from __future__ import annotations

import dataclasses
import hashlib
import importlib.util
import json
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from lerobot_tools.checks.engine import ValidateOptions, validate_target
from lerobot_tools.cli import cli
from lerobot_tools.dataset.targets import resolve_targets
from lerobot_tools.repair import RepairOptions, apply as repair_apply, fixes, repair_target
from lerobot_tools.repair import hfmeta
from lerobot_tools.testing.synth import build_dataset

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "fixtures"
DATASETS = FIXTURES / "datasets"


def _load_generate():
    spec = importlib.util.spec_from_file_location("lrtool_fixture_generate", FIXTURES / "generate.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod  # dataclasses look their module up while the class is created
    spec.loader.exec_module(mod)
    return mod


GEN = _load_generate()


# ---------------------------------------------------------------------- helpers
def tree(root: Path, *, include_lrtool: bool = False) -> dict[str, str]:
    """sha256 of every file below root (the backup folder excluded unless asked)."""
    out = {}
    for p in sorted(Path(root).rglob("*")):
        rel = p.relative_to(root).as_posix()
        if p.is_file() and (include_lrtool or not rel.startswith(".lrtool")):
            out[rel] = hashlib.sha256(p.read_bytes()).hexdigest()
    return out


def copy_fixture(name: str, dest: Path) -> Path:
    root = dest / name
    shutil.copytree(DATASETS / name, root)
    return root


def report(root: Path):
    (target,) = resolve_targets([str(root)])
    return validate_target(target, ValidateOptions(deep=True, all_videos=True))


def ids(root: Path, severities=("error", "warning")) -> set[str]:
    return {f.check for f in report(root).findings if f.severity in severities}


def repair(root: Path, dry_run: bool = False, **opts):
    (target,) = resolve_targets([str(root)])
    return repair_target(target, RepairOptions(**opts), dry_run=dry_run)


def cli_run(*args):
    return CliRunner().invoke(cli, ["repair", *map(str, args)])


def backups(root: Path) -> list[Path]:
    base = root / ".lrtool" / "backup"
    return sorted(p for p in base.iterdir() if not p.name.startswith(".")) if base.is_dir() else []


def data_table(root: Path) -> pa.Table:
    """Every data parquet file of a dataset, in loader order, concatenated (schema metadata dropped)."""
    files = sorted((root / "data").glob("*/*.parquet"))
    return pa.concat_tables([pq.read_table(f).replace_schema_metadata(None) for f in files])


def info(root: Path) -> dict:
    return json.loads((root / "meta/info.json").read_text())


@pytest.fixture(scope="module")
def clean(tmp_path_factory):
    """The clean builds the broken fixtures start from (fixtures/generate.py specs), without videos."""
    base = tmp_path_factory.mktemp("clean")
    return {
        "v30": build_dataset(base / "v30", dataclasses.replace(GEN.V30, video_codec=None, video_keys=())),
        "v21": build_dataset(base / "v21", GEN.V21_NO_VIDEO),
    }


def check_cycle(root: Path, fixed: set[str], **opts):
    """Repair, assert the checks are gone and nothing new appeared, a second repair changes nothing, then undo
    restores the original bytes; re-applies the repair at the end and returns the first result."""
    original = tree(root)
    before = ids(root, ("error", "warning", "info"))
    assert fixed <= before, before
    res = repair(root, **opts)
    assert res.status == 0 and res.applied and not res.rolled_back and not res.failed, (res.failed, res.worse)
    after = ids(root, ("error", "warning", "info"))
    assert not (fixed & after), after
    assert after <= before  # nothing new
    assert "F003" not in after or "F003" in before  # the backup under .lrtool/ is no orphan
    assert len(backups(root)) == 1
    repaired = tree(root)
    assert repaired != original
    # never touch a healthy byte: every file the plan does not name is bit-identical
    named = set(res.plan.changed_files()) | {m.src for m in res.plan.moves} | {m.dst for m in res.plan.moves}
    assert {k: v for k, v in repaired.items() if k not in named} == {k: v for k, v in original.items() if k not in named}
    # idempotence: a second repair changes no byte and makes no backup
    again = repair(root, **opts)
    assert again.plan.empty and not again.applied
    assert tree(root) == repaired and len(backups(root)) == 1
    # undo restores the broken dataset byte for byte and removes the backup
    assert cli_run("--undo", root).exit_code == 0
    assert tree(root, include_lrtool=True) == original
    assert not (root / ".lrtool").exists()
    res = repair(root, **opts)
    assert res.status == 0 and tree(root) == repaired  # deterministic: the same bytes again
    return res


# ---------------------------------------------------------------------- clean datasets
def test_dataset_named_twice_is_repaired_once(tmp_path):
    root = copy_fixture("broken_wrong_totals", tmp_path)
    mix = tmp_path / "mixture.txt"
    mix.write_text(f"{root}\n{tmp_path}/../{tmp_path.name}/broken_wrong_totals\n")
    r = cli_run("--dry-run", mix, root)
    assert r.exit_code == 0, r.output
    assert "Summary: dry run of 1 dataset(s)" in r.output


@pytest.mark.parametrize("name", ["clean_v21", "clean_v30"])
def test_clean_dataset_changes_zero_bytes_and_makes_no_backup(tmp_path, name):
    root = copy_fixture(name, tmp_path)
    before = tree(root, include_lrtool=True)
    r = cli_run(root)
    assert r.exit_code == 0, r.output
    assert "nothing to repair" in r.output
    assert tree(root, include_lrtool=True) == before
    assert not (root / ".lrtool").exists()


# ---------------------------------------------------------------------- committed broken fixtures
def test_wrong_totals(tmp_path, clean):
    root = copy_fixture("broken_wrong_totals", tmp_path)
    check_cycle(root, {"C001", "C002"})
    assert (info(root)["total_episodes"], info(root)["total_frames"]) == (3, 60)
    assert data_table(root).equals(data_table(clean["v30"]))


def test_dtype_drift_redeclared_from_consistent_files(tmp_path, clean):
    root = copy_fixture("broken_dtype_drift", tmp_path)
    check_cycle(root, {"S003"})
    assert info(root)["features"]["observation.state"]["dtype"] == "float64"
    got, want = data_table(root), data_table(clean["v30"])
    i = want.schema.get_field_index("observation.state")
    want = want.set_column(i, pa.field("observation.state", got.schema.field(i).type),
                           want.column(i).cast(got.schema.field(i).type))
    assert got.equals(want)  # the values, after the intended float32 -> float64 declaration
    for f in sorted((root / "data").glob("*/*.parquet")):  # data files untouched: only info.json changed
        assert hashlib.sha256(f.read_bytes()).digest() == hashlib.sha256((DATASETS / "broken_dtype_drift" / f.relative_to(root)).read_bytes()).digest()


def test_cross_file_drift_cast_when_exact(tmp_path, clean):
    root = copy_fixture("broken_cross_file_drift", tmp_path)
    res = check_cycle(root, {"S003", "S007"})
    assert {r.check for r in res.plan.repairs} == {"S003", "S007"}
    assert data_table(root).equals(data_table(clean["v21"]))
    assert info(root) == info(DATASETS / "broken_cross_file_drift")


def test_undeclared_column_declared(tmp_path, clean):
    root = copy_fixture("broken_undeclared_column", tmp_path)
    check_cycle(root, {"S002"})
    assert info(root)["features"]["language_events"] == {"dtype": "language", "shape": [1], "names": None}
    got = data_table(root)
    assert got.drop_columns(["language_events"]).equals(data_table(clean["v30"]))
    assert got.column("language_events").equals(data_table(DATASETS / "broken_undeclared_column").column("language_events"))


def test_undeclared_column_dropped(tmp_path, clean):
    root = copy_fixture("broken_undeclared_column", tmp_path)
    check_cycle(root, {"S002"}, drop_undeclared=True)
    assert "language_events" not in info(root)["features"]
    assert data_table(root).equals(data_table(clean["v30"]))
    for f in sorted((root / "data").glob("*/*.parquet")):  # hf metadata as the clean files carry it
        other = clean["v30"] / f.relative_to(root)
        assert pq.read_schema(f).metadata[b"huggingface"] == pq.read_schema(other).metadata[b"huggingface"]
        assert pq.ParquetFile(f).metadata.num_row_groups == pq.ParquetFile(other).metadata.num_row_groups


def test_names_nested_flattened(tmp_path):
    root = copy_fixture("broken_names_nested", tmp_path)
    check_cycle(root, {"I007"})
    want = info(DATASETS / "broken_names_nested")
    want["features"]["observation.state"]["names"] = want["features"]["observation.state"]["names"][0]
    assert info(root) == want


def test_video_path_template_rewritten(tmp_path):
    root = copy_fixture("broken_video_path", tmp_path)
    check_cycle(root, {"F002"})
    assert (root / "meta/info.json").read_bytes() == (DATASETS / "clean_v21/meta/info.json").read_bytes()
    assert {k: v for k, v in tree(root).items() if k.startswith("videos/")} == \
        {k: v for k, v in tree(DATASETS / "broken_video_path").items() if k.startswith("videos/")}


def test_video_path_files_moved(tmp_path):
    root = copy_fixture("broken_video_path", tmp_path)
    original = tree(root)
    check_cycle(root, {"F002"}, move_files=True)
    now = tree(root)
    assert now["meta/info.json"] == original["meta/info.json"]  # never both: the template is untouched
    for ep in range(3):
        old = f"videos/chunk-000/observation.images.front/episode_{ep:06d}.mp4"
        new = f"videos/observation.images.front/chunk-000/episode_{ep:06d}.mp4"
        assert old not in now and now[new] == original[old]
    assert not (root / "videos/chunk-000").exists()


def test_missing_task_label_appended_v21(tmp_path, clean):
    root = copy_fixture("broken_missing_task_label", tmp_path)
    check_cycle(root, {"T002"})
    old = (DATASETS / "broken_missing_task_label/meta/tasks.jsonl").read_text()
    new = (root / "meta/tasks.jsonl").read_text()
    assert new.startswith(old)
    assert json.loads(new[len(old):]) == {"task_index": 2, "task": "pick up the red cube"}
    assert info(root)["total_tasks"] == 3
    assert data_table(root).equals(data_table(clean["v21"]))


def test_tasks_parquet_form_rewritten(tmp_path):
    import pandas as pd

    root = copy_fixture("broken_tasks_parquet_form", tmp_path)
    assert pd.read_parquet(root / "meta/tasks.parquet").index.name != "task"
    check_cycle(root, {"T004"})
    got = pd.read_parquet(root / "meta/tasks.parquet")
    want = pd.read_parquet(DATASETS / "clean_v30/meta/tasks.parquet")
    assert got.index.name == "task" and list(got.columns) == ["task_index"]
    pd.testing.assert_frame_equal(got, want)
    assert [got.iloc[i].name for i in range(len(got))] == list(GEN.V30.tasks)  # lerobot's positional lookup


def test_scalar_as_list_cast_to_scalar(tmp_path, clean):
    root = copy_fixture("broken_scalar_as_list", tmp_path)
    assert _lerobot_load(root, tmp_path) is None  # the v3 loader's cast fails before the repair
    check_cycle(root, {"S004"})
    assert data_table(root).equals(data_table(clean["v30"]))
    assert pq.read_schema(root / "data/chunk-000/file-000.parquet").metadata[b"huggingface"] == \
        pq.read_schema(clean["v30"] / "data/chunk-000/file-000.parquet").metadata[b"huggingface"]
    assert _lerobot_load(root, tmp_path) == _lerobot_load(clean["v30"], tmp_path)


def test_variable_list_and_lost_hf_metadata(tmp_path, clean):
    root = copy_fixture("broken_variable_list", tmp_path)
    check_cycle(root, {"S005", "S006"})
    assert data_table(root).equals(data_table(clean["v30"]))
    for f in sorted((root / "data").glob("*/*.parquet")):
        other = clean["v30"] / f.relative_to(root)
        got, want = pq.read_schema(f), pq.read_schema(other)
        assert json.loads(got.metadata[b"huggingface"]) == json.loads(want.metadata[b"huggingface"])
        assert b"pandas" in got.metadata  # other metadata keys are kept
        assert pq.ParquetFile(f).metadata.num_row_groups == pq.ParquetFile(other).metadata.num_row_groups
    # OpenTau's path: datasets reads the features from the files' own metadata
    datasets = pytest.importorskip("datasets")
    cache = tmp_path / "hf-cache"

    def load(r):
        files = [str(p) for p in sorted((r / "data").glob("*/*.parquet"))]
        return datasets.load_dataset("parquet", data_files=files, split="train", cache_dir=str(cache))

    a, b = load(root), load(clean["v30"])
    assert a.features == b.features and a.to_dict() == b.to_dict()
    assert _lerobot_load(root, tmp_path) == _lerobot_load(clean["v30"], tmp_path)


def test_codec_declaration_from_probed_stream(tmp_path):
    root = copy_fixture("broken_codec_mismatch", tmp_path)
    check_cycle(root, {"F009"})
    assert (root / "meta/info.json").read_bytes() == (DATASETS / "clean_v21/meta/info.json").read_bytes()


# ---------------------------------------------------------------------- variants built in tmp_path
def _edit_info(root: Path, fn) -> None:
    d = info(root)
    fn(d)
    (root / "meta/info.json").write_text(json.dumps(d, indent=4) + "\n")


@pytest.fixture
def v30(tmp_path, clean):
    root = tmp_path / "ds"
    shutil.copytree(clean["v30"], root)
    return root


@pytest.fixture
def v21(tmp_path, clean):
    root = tmp_path / "ds21"
    shutil.copytree(clean["v21"], root)
    return root


def test_fps_float_and_unknown_keys_preserved(v30):
    def edit(d):
        d["fps"] = 10.0
        d["control_mode"] = "joint"                                    # OpenTau extension
        d["videos"] = {"source_repo": "org/other", "source_revision": "v3.0"}
        d["features"]["action"]["my_note"] = {"unit": "deg"}
        d["total_episodes"] = 9
    _edit_info(v30, edit)
    check_cycle(v30, {"I005", "C001"})
    d = info(v30)
    assert d["fps"] == 10 and type(d["fps"]) is int and d["total_episodes"] == 3
    assert d["control_mode"] == "joint" and d["videos"]["source_repo"] == "org/other"
    assert d["features"]["action"]["my_note"] == {"unit": "deg"}
    assert list(d) == list(json.loads((DATASETS / "clean_v30/meta/info.json").read_text())) + ["control_mode", "videos"]


def test_v21_counters_total_videos_chunks_splits_tasks(tmp_path):
    root = copy_fixture("clean_v21", tmp_path)

    def edit(d):
        d["total_videos"], d["total_chunks"], d["total_tasks"] = 7, 2, 5
        d["splits"] = {"train": "0:40"}
    _edit_info(root, edit)
    check_cycle(root, {"C003", "C008", "T006"})
    assert (root / "meta/info.json").read_bytes() == (DATASETS / "clean_v21/meta/info.json").read_bytes()


def test_lost_hf_metadata_only_is_restored_as_datasets_writes_it(v30, clean):
    for f in sorted((v30 / "data").glob("*/*.parquet")):
        GEN.rewrite_parquet(f, lambda t: t, metadata={})
        assert pq.read_schema(f).metadata is None or b"huggingface" not in pq.read_schema(f).metadata
    check_cycle(v30, {"S006"})
    for f in sorted((v30 / "data").glob("*/*.parquet")):
        want = pq.read_schema(clean["v30"] / f.relative_to(v30)).metadata[b"huggingface"]
        assert pq.read_schema(f).metadata[b"huggingface"] == want  # byte-identical JSON
    assert data_table(v30).equals(data_table(clean["v30"]))


def test_hf_metadata_entry_disagreeing_is_updated(v30, clean):
    for f in sorted((v30 / "data").glob("*/*.parquet")):
        GEN.rewrite_parquet(f, lambda t: t, GEN.hf_with(f, {"action": GEN.hf_feature_json("float64", [6]),
                                                             "ghost": {"dtype": "int64", "_type": "Value"}}))
    check_cycle(v30, {"S006"})
    for f in sorted((v30 / "data").glob("*/*.parquet")):
        assert json.loads(pq.read_schema(f).metadata[b"huggingface"]) == \
            json.loads(pq.read_schema(clean["v30"] / f.relative_to(v30)).metadata[b"huggingface"])


def test_tasks_parquet_unsorted_rows_v30(v30):
    import pandas as pd

    df = pd.read_parquet(v30 / "meta/tasks.parquet").iloc[::-1]
    df.to_parquet(v30 / "meta/tasks.parquet")
    check_cycle(v30, {"T007"})
    got = pd.read_parquet(v30 / "meta/tasks.parquet")
    assert list(got["task_index"]) == [0, 1] and list(got.index) == list(GEN.V30.tasks)


def test_missing_task_label_appended_v30(v30):
    import pandas as pd

    path = v30 / "meta/episodes/chunk-000/file-000.parquet"
    t = pq.read_table(path)
    tasks = t.column("tasks").to_pylist()
    tasks[1] = ["wipe the table"]
    t = t.set_column(t.schema.get_field_index("tasks"), "tasks", pa.array(tasks, pa.list_(pa.string())))
    pq.write_table(t, path)
    check_cycle(v30, {"T002"})
    got = pd.read_parquet(v30 / "meta/tasks.parquet")
    assert list(got.index) == [*GEN.V30.tasks, "wipe the table"] and list(got["task_index"]) == [0, 1, 2]
    assert info(v30)["total_tasks"] == 3


def test_undeclared_variable_list_of_constant_length_declared_and_fixed(v30):
    def add(t):
        n = t.num_rows
        return t.append_column("effort", pa.array([[1.0, 2.0, 3.0]] * n, pa.list_(pa.float32())))

    for f in sorted((v30 / "data").glob("*/*.parquet")):
        GEN.rewrite_parquet(f, add, metadata="keep")
    res = check_cycle(v30, {"S002"})
    assert info(v30)["features"]["effort"] == {"dtype": "float32", "shape": [3], "names": None}
    assert pq.read_schema(v30 / "data/chunk-000/file-000.parquet").field("effort").type == \
        pa.list_(pa.field("element", pa.float32()), 3)
    assert any("fixed_size_list[3]" in r.summary for r in res.plan.repairs)


def test_scalar_stored_as_variable_one_element_list(v21, clean):
    def wrap(t):
        ts = t["frame_index"].to_pylist()
        return GEN.replace_column(t, "frame_index", pa.array([[v] for v in ts], pa.list_(pa.int64())))

    for f in sorted((v21 / "data").glob("*/*.parquet")):
        GEN.rewrite_parquet(f, wrap, metadata="keep")
    check_cycle(v21, {"S004"})
    assert data_table(v21).equals(data_table(clean["v21"]))


def test_feature_invalid_and_video_shape(tmp_path):
    root = copy_fixture("clean_v21", tmp_path)

    def edit(d):
        d["features"]["action"]["dtype"] = "floaty"
        d["features"]["observation.state"]["shape"] = 6
        cam = d["features"]["observation.images.front"]
        cam["shape"] = [32, 48, 3]
        cam["info"]["video.height"], cam["info"]["video.width"] = 32, 48
        cam["info"]["video.pix_fmt"] = "yuv444p"
        cam["info"]["video.fps"] = 30  # not a check of its own: follows the stream along with the others
    _edit_info(root, edit)
    assert {"I006", "F009"} <= ids(root)
    check_cycle(root, {"I006", "F009"})
    assert (root / "meta/info.json").read_bytes() == (DATASETS / "clean_v21/meta/info.json").read_bytes()


def test_vector_shape_redeclared_when_data_names_and_stats_agree(v30, clean):
    _edit_info(v30, lambda d: d["features"]["action"].update(shape=[7]))
    assert {"S004", "I007"} <= ids(v30)
    res = check_cycle(v30, {"S004", "I007"})
    assert info(v30)["features"]["action"]["shape"] == [6]
    assert {r.check for r in res.plan.repairs} == {"S004"}  # I007 goes with it: 6 names for shape [6]
    assert info(v30) == info(clean["v30"])


def test_v30_video_layout_needs_move_files(tmp_path):
    root = copy_fixture("clean_v30", tmp_path)
    for key in ("observation.images.front", "observation.images.top"):
        for i in range(2):
            src = root / f"videos/{key}/chunk-000/file-{i:03d}.mp4"
            dst = root / f"videos/chunk-000/{key}/file-{i:03d}.mp4"
            dst.parent.mkdir(parents=True, exist_ok=True)
            src.rename(dst)
        (root / f"videos/{key}/chunk-000").rmdir()
        (root / f"videos/{key}").rmdir()
    res = repair(root, dry_run=True)
    (d,) = [d for d in res.plan.dispositions if d.finding.check == "F002"]
    assert d.action == "not-repairable" and "--move-files" in d.todo  # a non-default v3 template is never written
    check_cycle(root, {"F002"}, move_files=True)
    assert tree(root) == tree(DATASETS / "clean_v30")


def test_video_frame_rate_mismatch_is_not_repairable(tmp_path):
    root = copy_fixture("clean_v21", tmp_path)
    _edit_info(root, lambda d: d.update(fps=20))
    res = repair(root, dry_run=True)
    (d,) = [d for d in res.plan.dispositions if d.finding.check == "F009"]
    assert d.action == "not-repairable" and "re-encode" in d.todo


# ---------------------------------------------------------------------- not repairable
@pytest.mark.parametrize("name,check", [("broken_lfs_video", "F004"), ("broken_no_footer", "F007"),
                                        ("broken_timestamps", "D003"), ("broken_missing_column", "S001"),
                                        ("broken_orphan_file", "F003"), ("broken_info_json", "I002")])
def test_not_repairable_findings_are_listed_and_nothing_written(tmp_path, name, check):
    root = copy_fixture(name, tmp_path)
    before = tree(root, include_lrtool=True)
    r = CliRunner().invoke(cli, ["repair", "--format", "json", str(root)])
    assert r.exit_code == 1, r.output
    doc = json.loads(r.output)
    (ds,) = doc["datasets"]
    found = [f for f in ds["findings"] if f["check"] == check]
    assert found and all(f["action"] == "not-repairable" and f["todo"] and f["reason"] for f in found)
    assert ds["repairs"] == [] and ds["applied"] is False and ds["backup"] is None
    assert tree(root, include_lrtool=True) == before


def test_counters_of_unreadable_data_are_never_guessed(tmp_path):
    root = copy_fixture("broken_no_footer", tmp_path)
    _edit_info(root, lambda d: d.update(total_frames=0, total_episodes=7))
    res = repair(root)
    assert info(root)["total_frames"] == 0 and info(root)["total_episodes"] == 3
    (c2,) = [d for d in res.plan.dispositions if d.finding.check == "C002"]
    assert c2.action == "not-repairable" and "unreadable" in c2.reason
    assert res.status == 1


def test_partial_problems_are_not_repairable(v30, tmp_path):
    # a variable list with one row of the wrong length (D005) is never cast; names of the wrong length (I007)
    # are not invented; a float64 column whose values float32 cannot hold is never narrowed
    def pandas_like(t):
        vals = t["action"].to_pylist()
        vals[3] = vals[3][:5]
        return GEN.replace_column(t, "action", pa.array(vals, pa.list_(pa.float32())))

    f0 = v30 / "data/chunk-000/file-000.parquet"
    GEN.rewrite_parquet(f0, pandas_like, metadata="keep")
    f1 = v30 / "data/chunk-000/file-001.parquet"

    def not_float32(t):  # float64 values 1e-12 away from the float32 ones: a cast to float32 would change them
        vals = pa.compute.add(t["observation.state"].combine_chunks().flatten().cast(pa.float64()), 1e-12)
        return GEN.replace_column(t, "observation.state", pa.FixedSizeListArray.from_arrays(vals, 6))

    GEN.rewrite_parquet(f1, not_float32, metadata="keep")
    _edit_info(v30, lambda d: d["features"]["action"].update(names=["a", "b"]))
    before = tree(v30, include_lrtool=True)
    res = repair(v30)
    disp = {d.finding.check: d for d in res.plan.dispositions}
    assert disp["S005"].action == "not-repairable" and "row(s) of 'action' do not hold 6" in disp["S005"].reason
    assert disp["I007"].action == "not-repairable"
    assert disp["S003"].action == "not-repairable" and "exactly" in disp["S003"].reason
    assert res.plan.empty and tree(v30, include_lrtool=True) == before and res.status == 1


# ---------------------------------------------------------------------- dry run, --only, output
def test_dry_run_writes_nothing_and_prints_the_diff(tmp_path):
    root = copy_fixture("broken_wrong_totals", tmp_path)
    vl = copy_fixture("broken_variable_list", tmp_path)
    before = tree(root, include_lrtool=True), tree(vl, include_lrtool=True)
    r = cli_run("--dry-run", root, vl)
    assert r.exit_code == 0, r.output
    assert (tree(root, include_lrtool=True), tree(vl, include_lrtool=True)) == before
    out = r.output
    assert "--- a/meta/info.json" in out and "+++ b/meta/info.json" in out
    assert '-    "total_episodes": 5,' in out and '+    "total_episodes": 3,' in out
    assert "action: list<element: float> -> fixed_size_list<element: float>[6]" in out
    assert "`huggingface` metadata: absent -> restored" in out


def test_json_report_and_only(tmp_path):
    root = copy_fixture("broken_variable_list", tmp_path)
    r = CliRunner().invoke(cli, ["repair", "--only", "S005", "--format", "json", str(root)])
    assert r.exit_code == 0, r.output
    (ds,) = json.loads(r.output)["datasets"]
    assert {x["check"] for x in ds["repairs"]} == {"S005"}
    assert {f["check"]: f["action"] for f in ds["findings"]}["S006"] == "not-selected"
    assert {f["check"] for f in ds["after"]["gone"]} == {"S005"}
    assert "S006" in {f["check"] for f in ds["after"]["remaining"]} and ds["after"]["new"] == []
    assert ds["backup"].startswith(".lrtool/backup/")
    p = ds["changes"]["parquet"][0]
    assert ["action", "list<element: float>"] in p["before"] and \
        ["action", "fixed_size_list<element: float>[6]"] in p["after"]
    assert b"huggingface" not in pq.read_schema(root / "data/chunk-000/file-000.parquet").metadata


def test_mixture_repairs_each_dataset_once(tmp_path):
    a = copy_fixture("broken_wrong_totals", tmp_path)
    b = copy_fixture("broken_names_nested", tmp_path)
    mix = tmp_path / "mix.txt"
    mix.write_text(f"{a}\n{b}\n{a} episodes=0-1\n")
    r = cli_run(mix)
    assert r.exit_code == 0, r.output
    assert len(backups(a)) == 1 and len(backups(b)) == 1
    assert r.output.count("repairs:") == 2


def test_usage_errors_exit_2(tmp_path):
    root = copy_fixture("broken_wrong_totals", tmp_path)
    assert cli_run("--undo", "--only", "C001", root).exit_code == 2
    assert cli_run("--only", "Z9", root).exit_code == 2
    r = cli_run("--undo", root)
    assert r.exit_code == 2 and "no repair backup" in r.output
    assert cli_run(tmp_path / "nope").exit_code == 2


def test_hub_cache_snapshots_are_refused(tmp_path):
    snap = tmp_path / "hub" / "datasets--org--ds" / "snapshots" / ("a" * 40)
    shutil.copytree(DATASETS / "broken_wrong_totals", snap)
    before = tree(snap, include_lrtool=True)
    r = cli_run(snap)
    assert r.exit_code == 2 and "snapshot cache" in r.output
    assert tree(snap, include_lrtool=True) == before


# ---------------------------------------------------------------------- safety: backup, kill, rollback
def test_backup_manifest_and_lrtool_is_invisible_to_validate_and_loaders(tmp_path):
    root = copy_fixture("broken_variable_list", tmp_path)
    original = tree(root)
    res = repair(root)
    (bdir,) = backups(root)
    m = json.loads((bdir / "manifest.json").read_text())
    assert m["state"] == "applied" and {e["path"] for e in m["files"]} == \
        {"data/chunk-000/file-000.parquet", "data/chunk-000/file-001.parquet"}
    for e in m["files"]:
        assert e["sha256"] == original[e["path"]]
        assert hashlib.sha256((bdir / "files" / e["path"]).read_bytes()).hexdigest() == e["sha256"]
    assert res.backup == bdir.relative_to(root).as_posix()
    assert not ({"F003", "F011"} & ids(root, ("error", "warning", "info")))
    assert sorted(p.relative_to(root).as_posix() for p in root.glob("data/*/*.parquet")) == \
        ["data/chunk-000/file-000.parquet", "data/chunk-000/file-001.parquet"]


def test_undo_refuses_when_files_changed_since_the_repair(tmp_path):
    root = copy_fixture("broken_wrong_totals", tmp_path)
    repair(root)
    (root / "meta/info.json").write_text((root / "meta/info.json").read_text() + " ")
    r = cli_run("--undo", root)
    assert r.exit_code == 1 and "changed since the repair" in r.output
    assert len(backups(root)) == 1


def test_undo_is_a_stack(tmp_path):
    root = copy_fixture("broken_wrong_totals", tmp_path)
    original = tree(root, include_lrtool=True)
    repair(root, only={"C001"})
    mid = tree(root)
    repair(root, only={"C002"})
    assert len(backups(root)) == 2
    assert cli_run("--undo", root).exit_code == 0 and tree(root) == mid
    assert cli_run("--undo", root).exit_code == 0 and tree(root, include_lrtool=True) == original


def test_undo_dry_run_lists_and_writes_nothing(tmp_path):
    root = copy_fixture("broken_video_path", tmp_path)
    repair(root, move_files=True)
    before = tree(root, include_lrtool=True)
    r = CliRunner().invoke(cli, ["repair", "--undo", "--dry-run", "--format", "json", str(root)])
    assert r.exit_code == 0, r.output
    (d,) = json.loads(r.output)["datasets"]
    assert d["state"] == "applied" and len(d["moved_back"]) == 3 and d["restored"] == []
    assert tree(root, include_lrtool=True) == before


def test_backup_that_cannot_be_written_changes_nothing(tmp_path, monkeypatch):
    from lerobot_tools.repair import backup

    root = copy_fixture("broken_wrong_totals", tmp_path)
    before = tree(root, include_lrtool=True)

    def no_space(*a, **k):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(backup, "create", no_space)
    res = repair(root)
    assert res.status == 2 and "nothing was changed" in res.plan.cannot_run
    assert tree(root, include_lrtool=True) == before


def test_a_failing_fix_is_reported_and_the_others_still_run(tmp_path, monkeypatch):
    root = copy_fixture("broken_wrong_totals", tmp_path)
    _edit_info(root, lambda d: d.update(fps=10.0))

    def broken_fix(rc):
        raise KeyError("boom")

    monkeypatch.setattr(fixes, "FIXES", [(("I005",), broken_fix)] + fixes.FIXES[1:])
    res = repair(root)
    disp = {d.finding.check: d for d in res.plan.dispositions}
    assert disp["I005"].action == "not-repairable" and "please report it" in disp["I005"].reason
    assert disp["C001"].action == "repair" and info(root)["total_episodes"] == 3 and info(root)["fps"] == 10.0


def test_injected_failure_between_two_writes_restores_everything(tmp_path, monkeypatch):
    root = copy_fixture("broken_variable_list", tmp_path)
    original = tree(root, include_lrtool=True)
    real = repair_apply.write_change
    calls = []

    def flaky(r, change):
        calls.append(change)
        if len(calls) == 2:
            raise OSError("disk full (injected)")
        real(r, change)

    monkeypatch.setattr(repair_apply, "write_change", flaky)
    res = repair(root)
    assert res.failed and "injected" in res.failed and "restored" in res.failed and res.status == 1
    assert tree(root, include_lrtool=True) == original  # first file restored, no backup left


def test_rollback_when_validation_gets_worse(v30, monkeypatch):
    # The plan is tried on a shadow first, so a fix that breaks something is rejected before any write (next
    # test); the rollback after the real writes stays as the safety net: here the real write of info.json (and
    # only it) also breaks total_tasks, which the shadow could not see.
    _edit_info(v30, lambda d: d.update(fps=10.0))
    before = tree(v30, include_lrtool=True)
    real = repair_apply.write_change

    def faulty_write(root, change):  # the real run's write of info.json also breaks total_tasks: T006 appears
        real(root, change)
        if getattr(change, "relpath", "") == "meta/info.json":
            _edit_info(root, lambda d: d.update(total_tasks=99))

    monkeypatch.setattr(repair_apply, "write_change", faulty_write)
    res = repair(v30)
    assert res.rolled_back and res.status == 1 and "T006/error" in res.worse
    assert [f.check for f in res.new] == ["T006"]
    assert tree(v30, include_lrtool=True) == before
    r = CliRunner().invoke(cli, ["repair", str(v30)])
    assert r.exit_code == 1 and "ROLLED BACK" in r.output


def test_a_fix_that_would_introduce_an_error_is_rejected_and_the_others_are_applied(v30, monkeypatch):
    _edit_info(v30, lambda d: d.update(fps=10.0, total_episodes=7))
    before = tree(v30, include_lrtool=True)

    def faulty_fix_fps(rc):  # fixes I005 but also breaks total_tasks: T006 appears
        rc.info["fps"] = 10
        rc.info["total_tasks"] = 99
        rc.repair("I005", "fps 10.0 -> 10 (and a bug)", ["meta/info.json"])

    monkeypatch.setattr(fixes, "FIXES", [(("I005",), faulty_fix_fps)] + fixes.FIXES[1:])
    dry = repair(v30, dry_run=True)
    assert tree(v30, include_lrtool=True) == before
    (rj,) = dry.rejected
    assert rj.group == "faulty_fix_fps" and [r.summary for r in rj.repairs] == ["fps 10.0 -> 10 (and a bug)"]
    assert rj.finding.check == "T006"
    assert rj.reason == f"it would introduce T006 error (meta/info.json): {rj.finding.message}"
    assert "total_tasks is 99" in rj.finding.message
    assert [r.check for r in dry.plan.repairs] == ["C001"]
    assert {d.finding.check: d.action for d in dry.plan.dispositions}["I005"] == "rejected"
    res = repair(v30)
    assert res.applied and not res.rolled_back and res.status == 1  # I005 is still there, and said why
    assert [r.check for r in res.plan.repairs] == ["C001"] and [r.finding.check for r in res.rejected] == ["T006"]
    assert info(v30)["fps"] == 10.0 and info(v30)["total_episodes"] == 3 and info(v30)["total_tasks"] == 2
    assert ids(v30) == {"I005"}
    r = CliRunner().invoke(cli, ["repair", "--dry-run", str(v30)])
    assert r.exit_code == 1 and "will not apply:" in r.output and "it would introduce T006 error" in r.output
    assert "ROLLED BACK" not in r.output


_KILL = """
import os, signal, sys
from lerobot_tools.repair import apply, parquet
n = 0
real_write, real_verify = apply.write_change, parquet.verify_rewrite
def write_change(root, change):
    global n
    real_write(root, change)
    n += 1
    if {mode!r} == "between" and n == 1:
        os.kill(os.getpid(), signal.SIGKILL)
def verify_rewrite(*a, **k):
    real_verify(*a, **k)
    in_dataset = ".lrtool" not in a[0].parts  # not the shadow (in .lrtool/shadow/) the plan is tried on first
    if {mode!r} == "inside" and n == 0 and in_dataset:
        os.kill(os.getpid(), signal.SIGKILL)   # the temp file is complete, the original not yet replaced
apply.write_change, parquet.verify_rewrite = write_change, verify_rewrite
from lerobot_tools.cli import main
main(["repair", sys.argv[1]])
"""


@pytest.mark.parametrize("mode", ["between", "inside"])
def test_sigkill_mid_repair_leaves_original_or_repaired_and_undo_restores(tmp_path, mode):
    ref = copy_fixture("broken_variable_list", tmp_path / "ref")
    repair(ref)
    repaired = tree(ref)
    root = copy_fixture("broken_variable_list", tmp_path)
    original = tree(root, include_lrtool=True)
    proc = subprocess.run([sys.executable, "-c", _KILL.format(mode=mode), str(root)], capture_output=True, timeout=120)
    assert proc.returncode == -signal.SIGKILL, proc.stderr.decode()
    now = tree(root)
    states = []
    for rel in original:
        if rel.startswith(".lrtool"):
            continue
        assert now[rel] in (original[rel], repaired[rel]), rel
        states.append("repaired" if now[rel] == repaired[rel] and repaired[rel] != original[rel] else "original")
    # killed after the first file was replaced: one file repaired; killed inside the first write: none
    assert states.count("repaired") == {"between": 1, "inside": 0}[mode], states
    temps = [p for p in root.rglob(".lrtool-tmp-*")]
    assert bool(temps) == (mode == "inside")
    (bdir,) = backups(root)  # the backup was complete before the first write
    assert json.loads((bdir / "manifest.json").read_text())["state"] == "applying"
    # a new repair refuses to run over an interrupted one; --undo restores the original bytes
    r = cli_run(root)
    assert r.exit_code == 2 and "interrupted" in r.output
    r = cli_run("--undo", root)
    assert r.exit_code == 0, r.output
    assert tree(root, include_lrtool=True) == original


# ---------------------------------------------------------------------- huggingface metadata JSON
def test_hf_feature_json_matches_datasets():
    pytest.importorskip("datasets")
    from datasets import Array2D, Features, Image, List, Value

    feats = {
        "s": {"dtype": "float32", "shape": [1]},
        "v": {"dtype": "int64", "shape": [6]},
        "m": {"dtype": "float32", "shape": [2, 3]},
        "img": {"dtype": "image", "shape": [8, 8, 3]},
        "txt": {"dtype": "string", "shape": [1]},
    }
    types = {"s": pa.float32(), "v": pa.list_(pa.int64(), 6), "m": pa.list_(pa.list_(pa.float32())),
             "img": pa.struct([("bytes", pa.binary()), ("path", pa.string())]), "txt": pa.string()}
    doc = {k: hfmeta.declared_feature_json(feats[k], types[k]) for k in feats}
    want = Features({"s": Value("float32"), "v": List(Value("int64"), length=6), "m": Array2D((2, 3), "float32"),
                     "img": Image(), "txt": Value("string")})
    assert Features.from_dict(doc) == want
    schema = pa.schema([("a", pa.list_(pa.float32(), 3)), ("b", pa.list_(pa.string())), ("c", pa.float64()),
                        ("d", pa.list_(pa.struct([("role", pa.string()), ("t", pa.float32())]))),
                        ("e", pa.large_string())])
    assert Features.from_dict({f.name: hfmeta.arrow_feature_json(f.type) for f in schema}) == \
        Features.from_arrow_schema(schema)


def test_import_does_not_load_torch_or_datasets():
    code = ("import sys\nimport lerobot_tools.repair, lerobot_tools.commands.repair\n"
            "bad = [m for m in ('torch', 'torchcodec', 'datasets') if m in sys.modules]\nassert not bad, bad\n")
    subprocess.run([sys.executable, "-c", code], check=True)


# ---------------------------------------------------------------------- loader helper
def _lerobot_load(root: Path, tmp_path: Path):
    """Load the data like lerobot v3 (``Dataset.from_parquet`` with Features built from info.json); returns the
    rows as Python objects, or None when the cast to the declared features fails (datasets wraps the cast's
    ``TypeError`` in ``DatasetGenerationError``); any other error propagates."""
    datasets = pytest.importorskip("datasets")
    from datasets import Features, List, Value

    feats = {}
    for name, ft in info(root)["features"].items():
        if ft["dtype"] in ("video", "image", "language", "string"):
            continue
        feats[name] = Value(ft["dtype"]) if ft["shape"] == [1] else List(Value(ft["dtype"]), length=ft["shape"][0])
    files = [str(p) for p in sorted((root / "data").glob("*/*.parquet"))]
    try:
        ds = datasets.Dataset.from_parquet(files, features=Features(feats), cache_dir=str(tmp_path / "hf-cache"))
    except datasets.exceptions.DatasetGenerationError as exc:
        if isinstance(exc.__cause__, TypeError) and "Couldn't cast" in str(exc.__cause__):
            return None
        raise
    return ds.to_dict()


def test_findings_are_matched_to_repairs_by_subject_never_by_message():
    from lerobot_tools.findings import Finding
    from lerobot_tools.repair.model import Repair, Unrepairable
    from lerobot_tools.repair.plan import _dispositions

    # the message names column 'a'; the subject says 'b': only the subject counts
    s005 = Finding("S005", "warning", "data/x.parquet", "column 'a' is a variable-length list", subject={"feature": "b"})
    s006 = Finding("S006", "warning", "data/x.parquet", "`huggingface` metadata does not describe column 'b'",
                   subject={"feature": "b"})
    f009 = Finding("F009", "warning", "videos/c.mp4", "cam: frame rate is 25.000 but info.json fps is 30",
                   subject={"video_key": "cam", "key": "fps"})
    repairs = [Repair("S005", "cast 'a'", [], {"feature": "a"}), Repair("S002", "declare 'b'", [], {"feature": "b"}),
               Repair("F009", "cam: video.codec", [], {"video_key": "cam", "key": "video.codec"})]
    d = _dispositions([s005, s006, f009], repairs, [Unrepairable("F009", "re-time", "re-encode", {"key": "fps"})],
                      RepairOptions())
    # S005 of 'b' is fixed by the declaration repair of 'b' (S002), not by the cast of 'a'
    assert [(x.action, x.repair.summary if x.repair else x.reason) for x in d] == [
        ("repair", "declare 'b'"), ("repair", "declare 'b'"), ("not-repairable", "re-time")]


def test_repair_tables_agree_with_the_catalogue():
    import re

    from lerobot_tools.checks import catalogue
    from lerobot_tools.repair.plan import REPAIRABLE

    auto = {c.id: c.repair_by for c in catalogue.CATALOGUE.values() if c.repair == catalogue.AUTO}
    triggers = {c: fn.__name__ for checks, fn in fixes.FIXES for c in checks}
    assert {c: auto.get(c) for c in triggers} == triggers  # every trigger is an auto check repaired by that fix
    assert {fn.__name__ for _, fn in fixes.FIXES} == set(auto.values())
    assert set(auto) - set(triggers) == {"S007"}  # fixed as a consequence of fix_dtype
    assert REPAIRABLE == {c: catalogue.get(c).repair_note for c in auto} and all(REPAIRABLE.values())
    explicit = {c.id for c in catalogue.CATALOGUE.values() if c.repair == catalogue.EXPLICIT}
    assert explicit == {"R001", "R002", "R003", "R004"}
    assert all(catalogue.get(c).repair_by == "lrtool reshard" for c in explicit)
    # the repair command's page (docs/commands/repair.md) has a table that lists exactly the checks repair fixes
    page = (Path(__file__).resolve().parents[2] / "docs" / "commands" / "repair.md").read_text()
    table = page.split("| check | repair |", 1)[1].split("\n\n", 1)[0]
    assert set(re.findall(r"\b[A-Z]\d{3}\b", table)) == set(auto)


# ---------------------------------------------------------------------- an internal error while validating
def _crash_family(monkeypatch, *, after_calls: int = 0) -> list[int]:
    """Make the tasks family raise RuntimeError("boom") from its ``after_calls + 1``-th run on; returns the call log."""
    from lerobot_tools.checks import tasks

    calls: list[int] = []
    real = tasks.run

    def crashing(ctx):
        calls.append(1)
        if len(calls) > after_calls:
            raise RuntimeError("boom")
        return real(ctx)

    monkeypatch.setattr(tasks, "run", crashing)
    return calls


def test_an_internal_error_in_repair_s_validation_is_one_line_not_a_traceback(tmp_path, monkeypatch):
    root = copy_fixture("broken_wrong_totals", tmp_path)
    before = {p.relative_to(root): p.read_bytes() for p in root.rglob("*") if p.is_file()}
    _crash_family(monkeypatch)
    res = cli_run(root)
    assert res.exception is None or isinstance(res.exception, SystemExit), res.exception
    assert res.exit_code != 0
    assert "lrtool failed on this dataset (RuntimeError: boom); please report it" in res.output
    assert "Traceback" not in res.output
    assert {p.relative_to(root): p.read_bytes() for p in root.rglob("*") if p.is_file()} == before


def test_an_internal_error_in_the_check_of_the_shadow_rejects_the_repair_before_any_write(tmp_path, monkeypatch):
    root = copy_fixture("broken_wrong_totals", tmp_path)
    before = tree(root, include_lrtool=True)
    calls = _crash_family(monkeypatch, after_calls=1)  # the plan's validation runs; the shadow's fails
    result = repair(root)
    assert len(calls) == 2 and not result.applied and not result.rolled_back and result.status == 1
    (rj,) = result.rejected
    assert rj.group == "fix_counters" and rj.finding.check == "M001" and "RuntimeError: boom" in rj.reason
    assert tree(root, include_lrtool=True) == before


def test_an_internal_error_in_the_check_after_a_repair_rolls_it_back(tmp_path, monkeypatch):
    root = copy_fixture("broken_wrong_totals", tmp_path)
    before = {p.relative_to(root): p.read_bytes() for p in root.rglob("*") if p.is_file() and ".lrtool" not in p.parts}
    # the plan's validation and the shadow's run; the one after the repair fails
    calls = _crash_family(monkeypatch, after_calls=2)
    result = repair(root)
    assert len(calls) == 3
    assert result.rolled_back and any("M001" in w for w in result.worse), (result.worse, result.failed)
    after = {p.relative_to(root): p.read_bytes() for p in root.rglob("*") if p.is_file() and ".lrtool" not in p.parts}
    assert after == before
