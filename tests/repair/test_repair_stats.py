"""``lrtool repair`` of the statistics (G003-G008, G010): recomputed from the data as lerobot computes them, only
where wrong; round trip (repair, validate --deep clean, undo byte-identical); data files never written; upstream
lerobot loads the result."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from lerobot_tools.testing.synth import SynthSpec, build_dataset
from tests.checks.test_stats import _edit_v21, _episodes_parquet, _g, _one_pass_float32, _report

# ---------------------------------------------------------------------- repair


@pytest.mark.parametrize("name,fixed", [("broken_stats_std_zeroed", {"G010"}), ("broken_stats_stale", {"G008"}),
                                        ("broken_stats_count", {"G007"}), ("broken_stats_shape", {"G004"})])
def test_repair_round_trip(tmp_path, name, fixed):
    from tests.repair.test_repair import check_cycle, copy_fixture

    root = copy_fixture(name, tmp_path)
    res = check_cycle(root, fixed)
    # statistics only: no data file is ever written
    assert res.plan.changed_files() and all(p.startswith("meta/") for p in res.plan.changed_files())
    assert _g(_report(root, deep=True)) == []


def test_repair_replaces_only_the_wrong_statistic(tmp_path):
    from tests.repair.test_repair import copy_fixture

    root = copy_fixture("broken_stats_std_zeroed", tmp_path)
    before = pq.read_table(_episodes_parquet(root))
    from lerobot_tools.dataset.targets import resolve_targets
    from lerobot_tools.repair import RepairOptions, repair_target

    (target,) = resolve_targets([str(root)])
    res = repair_target(target, RepairOptions())
    assert res.status == 0 and res.applied
    (change,) = res.plan.rewrites
    assert set(change.cells) == {1} and list(change.cells[1]) == ["stats/action/std"]
    after = pq.read_table(_episodes_parquet(root))
    assert after.schema.equals(before.schema, check_metadata=True)
    for col in before.column_names:
        if col != "stats/action/std":
            assert after.column(col).equals(before.column(col)), col
    std = after.column("stats/action/std").to_pylist()
    data = pa.concat_tables([pq.read_table(p, columns=["episode_index", "action"]) for p in sorted((root / "data").glob("*/*.parquet"))])
    ep1 = np.asarray([v for e, v in zip(data.column(0).to_pylist(), data.column(1).to_pylist()) if e == 1], dtype=np.float64)
    np.testing.assert_allclose(std[1], ep1.std(0), rtol=1e-9)  # population std, as lerobot writes
    assert std[0] == before.column("stats/action/std").to_pylist()[0]


def test_repair_fixes_lerobot_float32_variance_cancellation_v21(tmp_path):
    def hook(ep, cols):
        rng = np.random.default_rng(ep)
        cols["observation.state"][:, 0] = (1000.0 + 0.05 * rng.standard_normal(len(cols["observation.state"]))).astype(np.float32)

    root = build_dataset(tmp_path / "fp32", SynthSpec(version="v2.1", episode_lengths=(300, 200), video_keys=(),
                                                      video_codec=None), episode_hook=hook)

    def rewrite(e, s):
        t = pq.read_table(root / f"data/chunk-000/episode_{e:06d}.parquet", columns=["observation.state"])
        s["observation.state"]["std"] = _one_pass_float32(np.asarray(t.column(0).to_pylist(), dtype=np.float32))["std"].astype(float).tolist()

    _edit_v21(root, rewrite)
    assert "G010" in _g(_report(root, deep=True))
    from tests.repair.test_repair import check_cycle

    res = check_cycle(root, {"G010"})
    # synth wrote stats.json from the true stds, so it agrees with the repaired episodes and stays as it is
    assert set(res.plan.changed_files()) == {"meta/episodes_stats.jsonl"}
    assert _g(_report(root, deep=True)) == []


def test_repair_refuses_when_a_data_file_is_missing(tmp_path):
    from tests.repair.test_repair import copy_fixture, tree
    from lerobot_tools.dataset.targets import resolve_targets
    from lerobot_tools.repair import RepairOptions, repair_target

    root = copy_fixture("broken_stats_count", tmp_path)
    (root / "data/chunk-000/episode_000002.parquet").unlink()
    before = tree(root)
    (target,) = resolve_targets([str(root)])
    res = repair_target(target, RepairOptions())
    g007 = [d for d in res.plan.dispositions if d.finding.check == "G007"]
    assert g007 and all(d.action == "not-repairable" and "missing or unreadable" in d.reason for d in g007)
    assert tree(root) == before


@pytest.mark.slow
def test_upstream_lerobot_loads_the_repaired_statistics(tmp_path):
    """The repaired datasets (v3.0 synthetic, and a lerobot 0.4.4 real-writer one) load in upstream lerobot's
    LeRobotDataset, whose normalisation statistics are then exactly the repaired stats.json."""
    import shutil
    import subprocess

    from tests.fixtures.test_real_writer import _lerobot_python
    from tests.repair.test_repair import copy_fixture
    from lerobot_tools.dataset.targets import resolve_targets
    from lerobot_tools.repair import RepairOptions, repair_target

    py = _lerobot_python()
    roots = [copy_fixture("broken_stats_stale", tmp_path)]
    real = Path(__file__).resolve().parents[2] / "fixtures" / "real" / "nocamera-pandas3"
    if real.is_dir():
        root = tmp_path / "real"
        shutil.copytree(real, root)
        stats = json.loads((root / "meta/stats.json").read_text())
        stats["action"]["count"] = [stats["action"]["count"][0] + 7]  # stale: G008
        (root / "meta/stats.json").write_text(json.dumps(stats, indent=4))
        roots.append(root)
    scripts = Path(__file__).resolve().parents[2] / "scripts"
    code = (
        "import json, sys\n"
        f"sys.path.insert(0, {str(scripts)!r})\n"
        "from upstream_env import load_lerobot_dataset_class\n"  # the side venv's torchvision workaround
        "LeRobotDataset = load_lerobot_dataset_class()\n"
        "for root in sys.argv[1:]:\n"
        "    ds = LeRobotDataset('local/stats', root=root)\n"
        "    ds[len(ds) - 1]\n"
        "    print(json.dumps({k: {s: v.tolist() for s, v in ds.meta.stats[k].items()} for k in ('action',)}))\n"
    )
    for root in roots:
        (target,) = resolve_targets([str(root)])
        res = repair_target(target, RepairOptions())
        assert res.status == 0 and res.applied, (res.failed, [d.to_dict() for d in res.plan.dispositions])
    env = {"HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "PATH": "/usr/bin:/bin", "HOME": str(tmp_path),
           "HF_HOME": str(tmp_path / "hf-home")}
    out = subprocess.run([str(py), "-c", code, *map(str, roots)], capture_output=True, text=True, timeout=600, env=env)
    assert out.returncode == 0, out.stderr[-3000:]
    loaded = [json.loads(line) for line in out.stdout.splitlines() if line.startswith("{")]
    assert len(loaded) == len(roots)
    for root, got in zip(roots, loaded):
        want = json.loads((root / "meta/stats.json").read_text())["action"]
        for s, v in want.items():
            np.testing.assert_allclose(got["action"][s], v, rtol=1e-12)


def test_repair_round_trip_on_a_real_writer_dataset(tmp_path):
    """lerobot 0.4.4's own meta/episodes parquet (pandas metadata, several files) takes the cell rewrite."""
    from tests.repair.test_repair import check_cycle

    src = Path(__file__).resolve().parents[2] / "fixtures" / "real" / "multifile-pandas3"
    if not src.is_dir():
        pytest.skip("fixtures/real/multifile-pandas3 is not in this checkout")
    import shutil

    root = tmp_path / "real"
    shutil.copytree(src, root)
    rel = sorted((root / "meta/episodes").glob("*/*.parquet"))[-1]
    t = pq.read_table(rel)
    vals = t.column("stats/action/std").to_pylist()
    vals[0] = [0.0] + vals[0][1:]
    i = t.schema.get_field_index("stats/action/std")
    pq.write_table(t.set_column(i, t.schema.field(i), pa.array(vals, type=t.schema.field(i).type)), rel)
    assert "G010" in _g(_report(root, deep=True))
    res = check_cycle(root, {"G010"})
    assert res.plan.changed_files() == [rel.relative_to(root).as_posix()]
    assert _g(_report(root, deep=True)) == []
