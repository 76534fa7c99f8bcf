"""Family G (statistics): each check fails on a dataset broken in exactly one way, the math matches lerobot's, and
the real writer's conventions (population std, float32 rounding, histogram quantiles) raise nothing."""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from lerobot_tools.checks.engine import ValidateOptions
from lerobot_tools.checks.stats import compute
from lerobot_tools.checks.stats.stored import QUANTILES
from lerobot_tools.testing.synth import SynthSpec, build_dataset
from lerobot_tools.validate import validate
from tests.editing import edit_json as _edit_json, edit_v21_stats as _edit_v21

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "datasets"
SPEC_V3 = SynthSpec(episode_lengths=(20, 15, 25, 12), video_keys=(), video_codec=None)
SPEC_V21 = SynthSpec(version="v2.1", episode_lengths=(20, 15, 25), video_keys=(), video_codec=None)


def _report(root, deep=False, **kw):
    (r,) = validate([str(root)], ValidateOptions(deep=deep, **kw))
    return r


def _g(report, severities=("error", "warning", "info")):
    return sorted({f.check for f in report.findings if f.check.startswith("G") and f.severity in severities})


def _findings(report, check):
    return [f for f in report.findings if f.check == check]


# ---------------------------------------------------------------------- editing helpers
def _episodes_parquet(root: Path) -> Path:
    return root / "meta/episodes/chunk-000/file-000.parquet"


def _set_v3(root: Path, episode: int | None, column: str, fn) -> None:
    """Replace ``column`` of one episode's row (every row when ``episode`` is None), keeping row groups."""
    path = _episodes_parquet(root)
    pf = pq.ParquetFile(path)
    tables = []
    for i in range(pf.num_row_groups):
        t = pf.read_row_group(i)
        eps = t.column("episode_index").to_pylist()
        vals = t.column(column).to_pylist()
        vals = [fn(v) if episode is None or e == episode else v for e, v in zip(eps, vals)]
        idx = t.schema.get_field_index(column)
        tables.append(t.set_column(idx, t.schema.field(idx), pa.array(vals, type=t.schema.field(idx).type)))
    schema = pf.schema_arrow
    pf.close()
    with pq.ParquetWriter(path, schema) as w:
        for t in tables:
            w.write_table(t)


@pytest.fixture
def v3(tmp_path):
    return build_dataset(tmp_path / "v3", SPEC_V3)


@pytest.fixture
def v21(tmp_path):
    return build_dataset(tmp_path / "v21", SPEC_V21)


# ---------------------------------------------------------------------- clean
@pytest.mark.parametrize("spec", [SPEC_V3, SPEC_V21, SynthSpec(episode_lengths=(1, 2, 40))], ids=["v3", "v21", "tiny-episodes"])
def test_clean_synth_raises_no_stats_finding(tmp_path, spec):
    root = build_dataset(tmp_path / "ds", spec)
    assert _g(_report(root, deep=True)) == []


def test_std_zeroed_fixture_without_deep_is_g005_and_with_deep_only_g010():
    root = FIXTURES / "broken_stats_std_zeroed"
    shallow = _report(root)
    assert _g(shallow) == ["G005"]
    (f,) = _findings(shallow, "G005")
    assert "episode 1" in f.message and "'action'.std[2] = 0" in f.message and f.severity == "warning"
    deep = _report(root, deep=True)
    assert _g(deep) == ["G010"]  # the G005 symptom is withdrawn: the deep finding states the cause
    (f,) = _findings(deep, "G010")
    assert "episode 1" in f.message and "std[2] stored 0" in f.message
    assert not any("G010" in n.checks and "--deep" in n.reason for n in deep.not_checked)
    assert any("G010" in n.checks for n in shallow.not_checked)


# ---------------------------------------------------------------------- metadata checks
def test_g003_per_episode_nan(v21):
    _edit_v21(v21, lambda e, s: s["action"].update(mean=[math.nan] * 6) if e == 2 else None)
    r = _report(v21)
    assert _g(r) == ["G003"]
    assert "episode 2" in _findings(r, "G003")[0].message


def test_g004_count_shape_and_missing_normalised_feature(v3):
    _set_v3(v3, 0, "stats/observation.state/count", lambda v: v + v)
    r = _report(v3)
    assert _g(r) == ["G004"] and "(1,)" in _findings(r, "G004")[0].message
    assert _findings(r, "G004")[0].severity == "warning"  # per-episode entry
    _set_v3(v3, 0, "stats/observation.state/count", lambda v: v[:1])
    _edit_json(v3 / "meta/stats.json", lambda s: s.pop("action"))
    r = _report(v3)
    assert _g(r) == ["G004"]
    (f,) = _findings(r, "G004")
    assert f.severity == "error" and "'action'" in f.message and "unnormalised" in f.message


def test_g005_mean_outside_range_and_std_too_large(v3):
    _edit_json(v3 / "meta/stats.json", lambda s: s["observation.state"]["mean"].__setitem__(1, 1e6))
    r = _report(v3)
    assert _g(r) == ["G005"]
    assert _findings(r, "G005")[0].severity == "error"
    shutil.rmtree(v3)
    build_dataset(v3, SPEC_V3)
    _set_v3(v3, 2, "stats/action/std", lambda v: [x * 50 for x in v])
    r = _report(v3)
    assert _g(r) == ["G005"] and "larger than any" in _findings(r, "G005")[0].message


def test_g005_camera_outside_unit_range_but_zero_camera_std_is_lerobot_convention(tmp_path):
    root = build_dataset(tmp_path / "cam", SynthSpec(episode_lengths=(12, 14)))
    key = "observation.images.front"
    # lerobot 0.4.x stores a per-episode camera std of ~0 (uint8 squares wrap): not a G005 (stats.json, written
    # from the correct stds, is now stale against them: G008)
    _set_v3(root, None, f"stats/{key}/std", lambda v: [[[0.0]] for _ in v])
    r = _report(root)
    assert _g(r) == ["G008"] and key in _findings(r, "G008")[0].message
    (root / "meta/stats.json").write_text(json.dumps(_aggregate_v3(root), indent=4))
    assert _g(_report(root)) == []
    _set_v3(root, 0, f"stats/{key}/max", lambda v: [[[255.0]] for _ in v])
    r = _report(root)
    assert _g(r) == ["G005"] and "[0, 1]" in _findings(r, "G005")[0].message


def test_g006_quantiles_out_of_order(v3):
    _set_v3(v3, 3, "stats/action/q10", lambda v: [v[0] + 1000.0] + v[1:])
    r = _report(v3)
    assert _g(r) == ["G006"] and "episode 3" in _findings(r, "G006")[0].message
    _edit_json(v3 / "meta/stats.json", lambda s: s["action"].update(q99=s["action"]["q01"]))
    r = _report(v3)
    assert {f.severity for f in _findings(r, "G006")} == {"warning", "error"}


def test_g007_v20_global_count(tmp_path):
    root = build_dataset(tmp_path / "v20", SynthSpec(version="v2.1", video_keys=(), video_codec=None))
    _edit_json(root / "meta/info.json", lambda i: i.update(codebase_version="v2.0"))
    (root / "meta/episodes_stats.jsonl").unlink()
    assert _g(_report(root)) == []
    _edit_json(root / "meta/stats.json", lambda s: s["action"].update(count=[s["action"]["count"][0] - 1]))
    r = _report(root)
    assert _g(r) == ["G007"] and "total_frames" in _findings(r, "G007")[0].message


def test_g008_is_not_raised_for_a_wrong_per_episode_count(tmp_path):
    # one cause, one finding: the aggregate weights episodes by their length, so a wrong count is G007 only
    root = FIXTURES / "broken_stats_count"
    assert _g(_report(root, deep=True)) == ["G007"]


def test_g009_constant_dimension_is_a_hazard_not_a_defect(tmp_path):
    def hook(ep, cols):
        cols["action"][:, 4] = 7.5  # the gripper never moves

    root = build_dataset(tmp_path / "const", SynthSpec(episode_lengths=(20, 15, 25), video_keys=(), video_codec=None),
                         episode_hook=hook)
    r = _report(root, deep=True)
    assert _g(r) == ["G009"]
    sev = sorted({f.severity for f in _findings(r, "G009")})
    assert sev == ["info", "warning"]  # per episode: info; the statistics training uses: warning
    glob = [f for f in _findings(r, "G009") if f.severity == "warning"][0]
    assert "[4]" in glob.message and "MEAN_STD" in glob.message and "MIN_MAX" in glob.message
    # index columns (constant episode_index per episode) are never normalised: no finding about them
    assert not any("episode_index" in f.message for f in r.findings)


# ---------------------------------------------------------------------- deep: stored vs data
def test_g010_quantile_off_rank(v3):
    _set_v3(v3, 2, "stats/observation.state/q50", lambda v: [v[0] + 0.5 * 1] + v[1:])
    # small shift: still ordered (no G006) but not the median of the data any more
    r = _report(v3, deep=True)
    found = _findings(r, "G010")
    if not found:  # the half-degree shift may stay within one rank for a short episode: move further
        _set_v3(v3, 2, "stats/observation.state/q50", lambda v: [v[0] + 5.0] + v[1:])
        found = _findings(_report(v3, deep=True), "G010")
    assert found and "q50[0]" in found[0].message and "rank" in found[0].message


def test_g010_compares_a_file_in_slices_of_episodes_with_the_same_findings(v3, monkeypatch):
    """The comparison looks stored statistics up a slice of episodes at a time (bounded memory): slices of one
    episode give exactly the findings of one slice for the whole file, on several episodes and features."""
    from lerobot_tools.checks.stats import deep as stats_deep

    _set_v3(v3, 0, "stats/action/std", lambda v: [0.0] + v[1:])
    _set_v3(v3, 2, "stats/observation.state/mean", lambda v: [v[0] + 100.0] + v[1:])
    _set_v3(v3, 3, "stats/action/max", lambda v: v[:-1] + [v[-1] + 50.0])
    whole = _findings(_report(v3, deep=True), "G010")
    monkeypatch.setattr(stats_deep, "LOOKUP_EPISODES", 1)
    sliced = _findings(_report(v3, deep=True), "G010")
    text = "\n".join(f.message for f in whole)
    for e, what in ((0, "'action' std[0]"), (2, "'observation.state' mean[0]"), (3, "'action' max[")):
        assert f"episode {e}: {what}" in text
    assert sorted(f.message for f in sliced) == sorted(f.message for f in whole)


def test_deep_keeps_the_first_stored_statistics_blocks_within_its_byte_budget(v3, monkeypatch):
    """``--deep`` reads each kept block of stored statistics once (the stream, then two lookups from memory); a
    block past :data:`StatsBlocks.KEEP_BYTES` is read again; without ``--deep`` nothing is kept. The findings are
    the same whatever is kept."""
    import pyarrow.parquet as pq_mod

    from lerobot_tools.checks.stats import blocks as sblocks
    from lerobot_tools.dataset.model import Dataset

    _set_v3(v3, 0, "stats/action/std", lambda v: [0.0] + v[1:])
    _set_v3(v3, 3, "stats/observation.state/mean", lambda v: [v[0] + 100.0] + v[1:])
    ep_file = _episodes_parquet(v3)
    pq.write_table(pq.read_table(ep_file), ep_file, row_group_size=1)  # several row groups, as lerobot writes
    monkeypatch.setattr(sblocks.StatsBlocks, "BLOCK_ROWS", 1)  # one block per row group of the episodes file
    n_groups = pq.ParquetFile(ep_file).metadata.num_row_groups
    assert n_groups >= 3
    reads: list[int] = []
    real = pq_mod.ParquetFile.read_row_groups

    def counting(self, row_groups, *a, **kw):
        reads.append(len(row_groups))
        return real(self, row_groups, *a, **kw)

    monkeypatch.setattr(pq_mod.ParquetFile, "read_row_groups", counting)
    kept_all = _report(v3, deep=True)
    assert len(reads) == n_groups  # each block read once, in the stream
    reads.clear()
    budgets: list[int] = []
    real_init = sblocks.StatsBlocks.__init__

    def recording(self, *a, **kw):
        real_init(self, *a, **kw)
        budgets.append(self.keep_bytes)

    monkeypatch.setattr(sblocks.StatsBlocks, "__init__", recording)
    shallow = _report(v3)
    assert len(reads) == n_groups and budgets == [0]  # nothing will look the blocks up again: none is kept
    _report(v3, deep=True, ignore={"G010"})
    assert budgets == [0, 0]
    # a budget of one block's bytes: the first block is kept, every other one is read again in each lookup
    reader = sblocks.StatsBlocks(Dataset(v3), keep=True)
    blocks = list(reader)
    one = blocks[0].nbytes
    assert 0 < one and len(blocks) == n_groups
    assert reader._files == {}  # every block is kept: the file's parsed footer is let go after the stream
    assert reader.lookup([3])[3][0] is blocks[3]
    monkeypatch.setattr(sblocks.StatsBlocks, "KEEP_BYTES", one)
    reads.clear()
    kept_one = _report(v3, deep=True)
    assert n_groups + 1 < len(reads) <= n_groups + 2 * (n_groups - 1)
    partial = sblocks.StatsBlocks(Dataset(v3), keep=True)  # one block kept: the file stays open for the others
    assert len(list(partial)) == n_groups and list(partial._files) == [ep_file.relative_to(v3).as_posix()]
    monkeypatch.setattr(sblocks.StatsBlocks, "KEEP_BYTES", 0)
    kept_none = _report(v3, deep=True)
    g010 = sorted(f.message for f in _findings(kept_all, "G010"))
    assert any("episode 0: 'action' std[0]" in m for m in g010)
    assert any("episode 3: 'observation.state' mean[0]" in m for m in g010)
    assert sorted(f.message for f in _findings(kept_one, "G010")) == g010
    assert sorted(f.message for f in _findings(kept_none, "G010")) == g010
    assert not _findings(shallow, "G010")


def test_g010_sample_std_and_float32_rounding_are_accepted(v21):
    (v21 / "meta/stats.json").unlink()  # lerobot 0.3 writes no stats.json for v2.1

    def to_sample_std(e, s):
        n = s["action"]["count"][0]
        s["action"]["std"] = [x * math.sqrt(n / (n - 1)) for x in s["action"]["std"]]
        s["action"]["mean"] = [float(np.float32(x)) for x in s["action"]["mean"]]

    _edit_v21(v21, to_sample_std)
    assert _g(_report(v21, deep=True)) == []


def test_g010_v21_effective_global_off_by_factor_is_an_error(tmp_path):
    # the one episode's std of action[0] is a third of the truth: a per-episode warning, and the statistics
    # lerobot 0.3 aggregates at load are off by 3x: an error
    v21 = build_dataset(tmp_path / "one", SynthSpec(version="v2.1", episode_lengths=(40,), video_keys=(), video_codec=None))
    (v21 / "meta/stats.json").unlink()
    _edit_v21(v21, lambda e, s: s["action"]["std"].__setitem__(0, s["action"]["std"][0] / 3))
    r = _report(v21, deep=True)
    assert _g(r) == ["G010"]
    sev = {f.severity for f in _findings(r, "G010")}
    assert sev == {"warning", "error"}
    err = [f for f in _findings(r, "G010") if f.severity == "error"][0]
    assert "aggregate" in err.message and "MEAN_STD scales" in err.message


def _one_pass_float32(x: np.ndarray) -> dict:
    """lerobot 0.4.4's RunningQuantileStats arithmetic for one update (float32 data): sqrt(E[x^2] - E[x]^2)."""
    mean = np.mean(x, axis=0)
    msq = np.mean(x ** 2, axis=0)
    return {"mean": mean, "std": np.sqrt(np.maximum(0, msq - mean ** 2))}


def test_g010_catches_lerobot_float32_variance_cancellation(tmp_path):
    # a joint that sits near 1000 with a real std of 0.05: lerobot 0.4's float32 one-pass variance stores 0
    # or a value many times too large; both are reported
    def hook(ep, cols):
        rng = np.random.default_rng(ep)
        cols["observation.state"][:, 0] = (1000.0 + 0.05 * rng.standard_normal(len(cols["observation.state"]))).astype(np.float32)

    root = build_dataset(tmp_path / "fp32", SynthSpec(version="v2.1", episode_lengths=(400, 400), video_keys=(),
                                                      video_codec=None), episode_hook=hook)
    import pyarrow.parquet as pq_

    def rewrite(e, s):
        t = pq_.read_table(root / f"data/chunk-000/episode_{e:06d}.parquet", columns=["observation.state"])
        x = np.asarray(t.column(0).to_pylist(), dtype=np.float32)
        up = _one_pass_float32(x)
        s["observation.state"]["std"] = up["std"].astype(float).tolist()

    _edit_v21(root, rewrite)
    r = _report(root, deep=True)
    msgs = [f.message for f in _findings(r, "G010")]
    assert any("'observation.state' std disagrees" in m and "std[0] stored" in m for m in msgs), msgs
    assert all("std[0]" in m for m in msgs), msgs  # the other dimensions are accurate enough
    # the statistics lerobot 0.3 aggregates from them are wrong by more than 2x: the training-level error
    assert any(f.severity == "error" and "aggregate" in f.message for f in _findings(r, "G010")), msgs
    assert _g(r) == ["G010"]  # the G005 symptoms (std impossible for the range) are withdrawn


def _aggregate_v3(root: Path) -> dict:
    """stats.json re-aggregated from a v3.0 dataset's per-episode statistics (lerobot's aggregate_stats)."""
    t = pq.read_table(_episodes_parquet(root))
    per: dict[str, list[dict]] = {}
    for i in range(t.num_rows):
        entry: dict[str, dict] = {}
        for name in t.column_names:
            if name.startswith("stats/"):
                feat, _, stat = name[6:].rpartition("/")
                entry.setdefault(feat, {})[stat] = np.asarray(t.column(name)[i].as_py(), dtype=float)
        for feat, e in entry.items():
            per.setdefault(feat, []).append(e)
    return {f: {k: np.asarray(v).tolist() for k, v in compute.aggregate_feature_stats(es).items()} for f, es in per.items()}


# ---------------------------------------------------------------------- the math against lerobot's definitions
def test_aggregate_matches_pooled_statistics_of_the_concatenation():
    rng = np.random.default_rng(0)
    parts = [rng.normal(5, 3, size=(n, 4)) for n in (7, 30, 1, 12)]
    entries = [compute.episode_stats(p, (4,), list(QUANTILES)) for p in parts]
    agg = compute.aggregate_feature_stats(entries)
    allx = np.concatenate(parts)
    np.testing.assert_allclose(agg["mean"], allx.mean(0), rtol=1e-12)
    np.testing.assert_allclose(agg["std"], allx.std(0), rtol=1e-12)  # population std (ddof=0)
    assert agg["count"].tolist() == [50] and agg["count"].shape == (1,)
    np.testing.assert_array_equal(agg["min"], allx.min(0))
    # quantiles: count-weighted mean of the per-episode ones (lerobot 0.4.4 aggregate_feature_stats)
    w = np.array([7, 30, 1, 12], dtype=float)[:, None]
    np.testing.assert_allclose(agg["q50"], (np.stack([e["q50"] for e in entries]) * w).sum(0) / 50)
    running = compute.RunningAggregate()
    for e in entries:
        running.add(e)
    res = running.result()
    for k in agg:
        np.testing.assert_allclose(res[k], agg[k], rtol=1e-12, atol=1e-12)


def test_episode_stats_conventions():
    x = np.arange(10, dtype=np.float32).reshape(10, 1)
    s = compute.episode_stats(x, (1,), ["q01", "q50", "q99"])
    assert s["count"].tolist() == [10] and s["std"].shape == (1,)
    assert s["std"][0] == pytest.approx(np.std(np.arange(10)))  # ddof=0
    assert s["min"][0] - 1e-9 <= s["q01"][0] <= s["q50"][0] <= s["q99"][0] <= s["max"][0] + 1e-9
    one = compute.episode_stats(np.array([[3.0, 4.0]]), (2,), ["q10"])
    assert one["q10"].tolist() == [3.0, 4.0] and one["std"].tolist() == [0.0, 0.0]  # n < 2: quantiles = mean


def test_segment_moments_do_not_depend_on_batching():
    rng = np.random.default_rng(3)
    x = (rng.normal(100, 0.01, size=(1000, 3))).astype(np.float32)
    whole = compute.Moments.of(x)
    parts = compute.Moments(0, None, None, None, None)
    for s in range(0, 1000, 97):
        parts.merge(compute.Moments.of(x[s:s + 97]))
    ref = x.astype(np.float64)
    np.testing.assert_allclose(whole.std(), ref.std(0), rtol=1e-6)
    np.testing.assert_allclose(parts.std(), ref.std(0), rtol=1e-6)
    np.testing.assert_allclose(parts.mean, ref.mean(0), rtol=1e-12)


@pytest.mark.parametrize("dims,runs", [(1, 40), (3, 8), (14, 120), (96, 6), (600, 3)])
def test_segment_arrays_match_a_float64_reference(dims, runs):
    """Both reduction paths (narrow rows with many runs, wide rows) against numpy in float64, on float32 data with
    single-row runs, a constant column, a run longer than the scratch span, and a large mean with a small std (the
    hazard the float32 shift exists for)."""
    rng = np.random.default_rng(dims)
    lens = rng.integers(1, 700, runs)
    lens[1] = 1
    lens[-1] = compute.SPAN_BYTES // (4 * dims) + 37 if dims >= 64 else lens[-1]
    starts = np.concatenate(([0], np.cumsum(lens)[:-1]))
    n = int(lens.sum())
    x = (rng.normal(1000.0, 0.05, size=(n, dims)) + rng.uniform(-500, 500, size=dims)).astype(np.float32)
    x[:, 0] = 7.25  # constant column
    if dims > 1:
        x[:, 1] = rng.normal(0.0, 1.0, n).astype(np.float32)
    before = x.copy()
    cnt, mean, m2, mn, mx = compute.segment_arrays(x, starts, lens)
    np.testing.assert_array_equal(x, before)  # the caller's batch is not modified (the reductions work on copies)
    assert cnt.tolist() == lens.tolist()
    for i, (a, k) in enumerate(zip(starts.tolist(), lens.tolist())):
        ref = x[a:a + k].astype(np.float64)
        np.testing.assert_array_equal(mn[i], ref.min(0))
        np.testing.assert_array_equal(mx[i], ref.max(0))
        std = ref.std(0)
        np.testing.assert_allclose(mean[i], ref.mean(0), rtol=0, atol=1e-9 * np.abs(ref).max())
        np.testing.assert_allclose(np.sqrt(m2[i] / k), std, rtol=1e-5, atol=1e-12)
        assert m2[i][0] == 0.0  # the constant column: exactly 0, never a rounding residue
        if k == 1:
            assert not m2[i].any() and np.array_equal(mean[i], ref[0])
    # float64 and integer data go through float64 and agree with the reference to float64 rounding
    xi = rng.integers(-1000, 1000, size=(n, dims)).astype(np.int64)
    _, mean_i, m2_i, _, _ = compute.segment_arrays(xi, starts, lens)
    a, k = int(starts[2]), int(lens[2])
    np.testing.assert_allclose(mean_i[2], xi[a:a + k].mean(0), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(m2_i[2], ((xi[a:a + k] - xi[a:a + k].mean(0)) ** 2).sum(0), rtol=1e-10, atol=1e-9)


@pytest.mark.parametrize("row_group_rows", [100, 3000])
def test_deep_scan_decodes_row_groups_in_parallel_in_file_order(tmp_path, monkeypatch, row_group_rows):
    """Many small row groups are decoded by several threads (large ones stream through one): the scan sees the rows
    in file order either way, so runs, frame checks and per-episode moments equal the one-thread scan's and the
    float64 reference."""
    from lerobot_tools.checks import deep
    from lerobot_tools.checks.stats.deep import StatsRequest

    rng = np.random.default_rng(7)
    lens = rng.integers(1, 400, 30)
    lens[4] = 1
    ep = np.repeat(np.arange(30), lens)
    fi = np.concatenate([np.arange(n) for n in lens])
    n = len(ep)
    fi[500] += 1  # one D001 row, to compare the frame checks too
    act = rng.normal(50.0, 2.0, size=(n, 6)).astype(np.float32)
    table = pa.table({"episode_index": pa.array(ep, pa.int64()), "frame_index": pa.array(fi, pa.int64()),
                      "index": pa.array(np.arange(n), pa.int64()),
                      "action": pa.FixedSizeListArray.from_arrays(pa.array(act.reshape(-1)), 6)})
    path = tmp_path / "file-000.parquet"
    pq.write_table(table, path, row_group_size=row_group_rows)
    monkeypatch.setattr(deep.stats_deep, "BATCH_BYTES", 24 * 1024)  # 1024-row batches: several per file
    req = StatsRequest({"action": (6, "float32")})

    def scan(threads):
        monkeypatch.setattr(deep, "DECODE_THREADS", threads)
        return deep.scan_file(path, fps=None, tolerance_s=1e-4, index_offset=0, list_columns={}, stats=req)

    one, many = scan(1), scan(4)
    assert many.runs == one.runs == [[e, int(k)] for e, k in enumerate(lens)]
    assert many.rows == n and many.bad_index == 0
    assert {e: s.bad_frame for e, s in many.episodes.items()} == {e: s.bad_frame for e, s in one.episodes.items()}
    assert sum(s.bad_frame for s in many.episodes.values()) == 1
    a, b = many.stats.features["action"], one.stats.features["action"]
    for k in ("episodes", "n", "min", "max"):
        np.testing.assert_array_equal(a[k], b[k])
    np.testing.assert_allclose(a["mean"], b["mean"], rtol=1e-9)  # batch boundaries differ: float32 rounding
    np.testing.assert_allclose(a["m2"], b["m2"], rtol=1e-5)
    starts = np.concatenate(([0], np.cumsum(lens)[:-1]))
    for e in (0, 4, 29):
        ref = act[starts[e]:starts[e] + lens[e]].astype(np.float64)
        np.testing.assert_allclose(a["mean"][e], ref.mean(0), rtol=1e-9)
        np.testing.assert_allclose(np.sqrt(a["m2"][e] / a["n"][e]), ref.std(0), rtol=1e-5, atol=1e-12)
        np.testing.assert_array_equal(a["min"][e], ref.min(0))


def test_deep_scan_with_statistics_round_trips_through_json():
    """A distributed run records the deep scan as JSON and replays it: the per-episode moments survive exactly."""
    import json as _json

    from lerobot_tools.checks.deep import scan_file, scan_from_dict, scan_to_dict
    from lerobot_tools.checks.stats.deep import StatsRequest

    root = FIXTURES / "broken_stats_std_zeroed"
    path = sorted((root / "data").glob("*/*.parquet"))[0]
    req = StatsRequest({"action": (6, "float32"), "frame_index": (1, "int64")})
    scan = scan_file(path, fps=10.0, tolerance_s=1e-4, index_offset=0, list_columns={}, stats=req)
    back = scan_from_dict(_json.loads(_json.dumps(scan_to_dict(scan))))
    assert set(back.stats.features) == {"action", "frame_index"}
    for name, arrays in scan.stats.features.items():
        for k, v in arrays.items():
            np.testing.assert_array_equal(back.stats.features[name][k], v)
    a = scan.stats.features["action"]
    data = pq.read_table(path, columns=["episode_index", "action"])
    ep0 = np.asarray([v for e, v in zip(data.column(0).to_pylist(), data.column(1).to_pylist()) if e == a["episodes"][0]],
                     dtype=np.float64)
    np.testing.assert_allclose(a["mean"][0], ep0.mean(0), rtol=1e-9)
    np.testing.assert_allclose(np.sqrt(a["m2"][0] / a["n"][0]), ep0.std(0), rtol=1e-6)


REAL = Path(__file__).resolve().parents[2] / "fixtures" / "real"


@pytest.mark.parametrize("name", sorted(p.name for p in REAL.iterdir() if p.is_dir()) if REAL.is_dir() else [])
def test_real_writer_datasets_raise_no_stats_finding(name):
    # what lerobot 0.4.4's own writer produced (per-episode histogram quantiles, float32 E[x^2]-E[x]^2 std,
    # camera std ~0 from uint8 squares, streaming-encoder pixel counts) is never a statistics defect
    r = _report(REAL / name, deep=True)
    assert _g(r) == [], [f"{f.check} {f.message}" for f in r.findings if f.check.startswith("G")]
