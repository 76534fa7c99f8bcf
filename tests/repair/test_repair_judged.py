"""``lrtool repair`` judges each fix by what it was for, on a shadow of the dataset, and its dry run tells the truth.

The datasets are built here from :mod:`lerobot_tools.testing.synth` (real parquet, real h264 video) and broken
the way real published datasets were: statistics that are really wrong next to dimensions that are truly constant,
videos under the other layout with some absent and their declaration wrong, a truncated publish whose totals and
splits still count the lost episodes, an ``fps`` written as a float. Each test fails on the repair that rolled back
on any growth of the report (or listed a change it never wrote).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from lerobot_tools.testing.synth import SynthSpec, build_dataset
from tests.repair.test_repair import DATASETS, GEN, backups, cli_run, ids, info, repair, report, tree

CAM = "observation.images.front"


def _visible(res) -> list[tuple[str, str, str]]:
    return sorted((v.finding.check, v.finding.severity, v.why) for v in res.visible)


def _undo_restores(root: Path, original: dict) -> None:
    r = cli_run("--undo", root)
    assert r.exit_code == 0, r.output
    assert tree(root, include_lrtool=True) == original


# ---------------------------------------------------------------------- 1. wrong stds next to true zeros
def _constant_dim_with_wrong_std(root: Path, spec: SynthSpec) -> Path:
    """observation.state[0] is constant within each episode (a joint that did not move), and its stored std is
    0.073 in every episode and in stats.json: really wrong (G010), and the true value is 0 (G009 once fixed)."""
    def hook(ep, cols):
        cols["observation.state"][:, 0] = np.float32(0.25 * (ep + 1))

    build_dataset(root, spec, episode_hook=hook)
    for ep in range(len(spec.episode_lengths)):
        GEN.set_episode_stat(root, ep, "stats/observation.state/std", lambda v: [0.073] + v[1:])
    GEN.edit_json(root / "meta/stats.json", lambda s: s["observation.state"]["std"].__setitem__(0, 0.073))
    return root


def test_a_statistics_fix_is_kept_although_the_true_zeros_it_writes_raise_g009(tmp_path):
    root = _constant_dim_with_wrong_std(tmp_path / "ds", GEN.V30_STATS)
    before = report(root)
    assert {(f.check, f.severity) for f in before.findings if f.check.startswith("G")} >= {("G010", "warning")}
    assert "G009" not in {f.check for f in before.findings}
    original = tree(root, include_lrtool=True)
    res = repair(root)
    assert res.applied and not res.rolled_back and not res.rejected, (res.worse, res.rejected)
    assert "G010" not in ids(root) and any(f.check == "G010" for f in res.gone)
    assert ("G009", "info", "info") in _visible(res)  # said, and no reason to roll the fix back
    std = pq.read_table(root / "meta/episodes/chunk-000/file-000.parquet").column("stats/observation.state/std")
    assert [v[0] for v in std.to_pylist()] == [0.0] * len(GEN.V30_STATS.episode_lengths)
    _undo_restores(root, original)


# ---------------------------------------------------------------------- 4. schema fixes + statistics, G009 appears
def test_schema_fixes_and_statistics_are_kept_together_when_a_recomputed_std_becomes_zero(tmp_path):
    root = _constant_dim_with_wrong_std(tmp_path / "ds", GEN.V30_STATS)
    for p in GEN.data_files(root):  # a pandas round-trip: variable-length lists, no huggingface metadata
        GEN.rewrite_parquet(p, lambda t: pa.Table.from_pandas(t.to_pandas(), preserve_index=False), metadata="table")
    assert {"S005", "S006", "G010"} <= ids(root)
    original = tree(root, include_lrtool=True)
    dry = repair(root, dry_run=True)
    res = repair(root)
    assert res.applied and not res.rolled_back and not res.rejected and res.status == 0, res.worse
    assert {r.check for r in res.plan.repairs} >= {"S005", "S006", "G010"}
    assert not {"S005", "S006", "G010"} & ids(root)
    assert ("G009", "info", "info") in _visible(res)
    assert _visible(dry) == _visible(res) and dry.status == res.status == 0
    _undo_restores(root, original)


# ---------------------------------------------------------------------- 2. --move-files makes videos readable
def _videos_elsewhere_some_absent(root: Path) -> Path:
    """v2.1, 5 episodes: video_path names the other folder order than the files have (as lerobot-converted copies
    do), two videos are absent everywhere, and info.json declares another codec than the files have (visible only
    once they are where video_path points)."""
    build_dataset(root, SynthSpec(version="v2.1", episode_lengths=(12, 10, 11, 9, 10)))
    for ep in (3, 4):
        (root / f"videos/chunk-000/{CAM}/episode_{ep:06d}.mp4").unlink()

    def fn(d: dict) -> None:
        d["video_path"] = "videos/{video_key}/chunk-{episode_chunk:03d}/episode_{episode_index:06d}.mp4"
        d["features"][CAM]["info"]["video.codec"] = "av1"

    GEN.edit_json(root / "meta/info.json", fn)
    return root


def test_move_files_keeps_the_moves_and_reports_what_the_moved_videos_reveal(tmp_path):
    root = _videos_elsewhere_some_absent(tmp_path / "ds")
    before = report(root)
    assert [(f.check, f.severity) for f in before.findings if f.severity == "error"] == [("F002", "error")]
    assert "F009" not in {f.check for f in before.findings}  # the declaration is not compared with missing files
    original = tree(root, include_lrtool=True)
    dry = repair(root, dry_run=True, move_files=True)
    assert tree(root, include_lrtool=True) == original
    res = repair(root, move_files=True)
    assert res.applied and not res.rolled_back and not res.rejected, (res.worse, res.rejected)
    for ep in range(3):
        assert (root / f"videos/{CAM}/chunk-000/episode_{ep:06d}.mp4").is_file()
    vis = _visible(res)
    assert ("F009", "warning", "moved") in vis  # what the moved files hold: now visible, never a veto
    assert ("F002", "error", "rest") in vis  # the two absent videos, said anew
    assert res.status == 1 and _visible(dry) == vis and dry.status == res.status
    _undo_restores(root, original)


# ---------------------------------------------------------------------- 3. a truncated publish: totals and splits
def test_totals_of_a_truncated_publish_are_fixed_with_the_splits_in_one_step(tmp_path):
    root = tmp_path / "ds"
    build_dataset(root, SynthSpec(version="v2.1", episode_lengths=(12, 10, 11), video_keys=(), video_codec=None))
    # the publish lost episodes 3..6: info.json still counts 7 episodes and splits covers them
    GEN.edit_json(root / "meta/info.json", lambda d: d.update(total_episodes=7, total_frames=77,
                                                             splits={"train": "0:7"}))
    assert {"C001", "C002"} <= ids(root) and "C008" not in ids(root)
    original = tree(root, include_lrtool=True)
    res = repair(root)
    assert res.applied and not res.rolled_back and res.status == 0, (res.worse, res.rejected)
    doc = info(root)
    assert (doc["total_episodes"], doc["total_frames"], doc["splits"]) == (3, 33, {"train": "0:3"})
    (c008,) = [r for r in res.plan.repairs if r.check == "C008"]
    assert "follows the episode count" in c008.summary
    assert not {"C001", "C002", "C008"} & ids(root, ("error", "warning", "info"))
    _undo_restores(root, original)


# ---------------------------------------------------------------------- 5. fps 30.0 -> 30 really written
def test_fps_written_as_a_float_is_rewritten_as_an_integer_or_not_listed(tmp_path):
    root = tmp_path / "ds"
    build_dataset(root, SynthSpec(episode_lengths=(12, 10), video_keys=(), video_codec=None))
    GEN.edit_json(root / "meta/info.json", lambda d: d.update(fps=10.0))
    assert "I005" in ids(root)
    original = tree(root, include_lrtool=True)
    res = repair(root)
    assert [r.summary for r in res.plan.repairs] == ["fps 10.0 -> 10"]
    assert res.applied and res.status == 0 and backups(root)
    assert '"fps": 10,' in (root / "meta/info.json").read_text() and type(info(root)["fps"]) is int
    assert "I005" not in ids(root)
    _undo_restores(root, original)


def test_a_fix_whose_change_writes_nothing_is_not_listed(tmp_path, monkeypatch):
    from lerobot_tools.repair import fixes
    from lerobot_tools.repair.judge import NOTHING_TO_WRITE

    root = tmp_path / "ds"
    build_dataset(root, SynthSpec(episode_lengths=(12, 10), video_keys=(), video_codec=None))
    GEN.edit_json(root / "meta/info.json", lambda d: d.update(fps=10.0, total_episodes=5))

    def idle_fix_fps(rc):  # lists a change it does not make
        rc.repair("I005", "fps 10.0 -> 10", ["meta/info.json"])

    monkeypatch.setattr(fixes, "FIXES", [(("I005",), idle_fix_fps)] + fixes.FIXES[1:])
    for dry in (True, False):  # beside a fix that writes info.json: tried, cleared nothing, said so
        res = repair(root, dry_run=dry)
        assert [r.check for r in res.plan.repairs] == ["C001"], res.plan.repairs
        (d,) = [d for d in res.plan.dispositions if d.finding.check == "I005"]
        assert d.action == "rejected" and d.reason.startswith("it leaves I005 warning"), d.reason
    assert info(root)["fps"] == 10.0 and info(root)["total_episodes"] == 2
    original = tree(root, include_lrtool=True)
    for dry in (True, False):  # alone: the plan writes nothing, so it lists nothing
        res = repair(root, dry_run=dry)
        assert res.plan.repairs == [] and not res.applied and res.status == 0  # a warning left alone
        (d,) = [d for d in res.plan.dispositions if d.finding.check == "I005"]
        assert d.action == "not-repairable" and d.reason == NOTHING_TO_WRITE
    r = cli_run(root)
    assert "nothing to repair" in r.output and "fps 10.0 -> 10" not in r.output
    assert tree(root, include_lrtool=True) == original


# ---------------------------------------------------------------------- non-finite data: nothing listed, no warnings
def test_statistics_of_a_column_of_infinities_are_not_listed_and_numpy_stays_quiet(tmp_path):
    def hook(ep, cols):
        cols["observation.state"][:, 0] = np.inf

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the synthetic writer's own statistics of inf
        root = build_dataset(tmp_path / "ds", SynthSpec(episode_lengths=(12, 10, 11, 9), video_keys=(),
                                                       video_codec=None), episode_hook=hook)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # validate's own scans of inf (the checks' business, not repair's)
        assert "G003" in ids(root)
    original = tree(root, include_lrtool=True)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        res = repair(root)
    assert [w for w in caught if issubclass(w.category, RuntimeWarning)] == []
    assert res.plan.repairs == [] and not res.applied and res.status == 1
    g003 = [d for d in res.plan.dispositions if d.finding.check == "G003"]
    assert g003 and all("holds NaN or infinite values (dimension(s) 0)" in d.reason for d in g003)
    assert tree(root, include_lrtool=True) == original


# ---------------------------------------------------------------------- output for many files
def _fifty_files(root: Path) -> Path:
    build_dataset(root, SynthSpec(episode_lengths=(4,) * 50, episodes_per_file=1, video_keys=(), video_codec=None))
    for p in GEN.data_files(root):
        GEN.rewrite_parquet(p, lambda t: pa.Table.from_pandas(t.to_pandas(), preserve_index=False), metadata="table")
    return root


def test_a_plan_of_fifty_identical_file_changes_is_one_block_and_verbose_lists_them(tmp_path):
    root = _fifty_files(tmp_path / "ds")
    files = [p.relative_to(root).as_posix() for p in GEN.data_files(root)]
    assert len(files) == 50
    r = cli_run("--dry-run", root)
    assert r.exit_code == 0, r.output
    lines = r.output.splitlines()
    assert len(lines) < 40, r.output
    assert "50 files, each:  (S005, S006)" in r.output and f"{files[2]} and 47 more" in r.output
    assert sum(f in r.output for f in files) == 3
    rv = cli_run("--dry-run", "--verbose", root)
    assert all(f in rv.output for f in files)
    r = cli_run(root)
    assert r.exit_code == 0 and len(r.output.splitlines()) < 40, r.output
    r = cli_run("--undo", root)
    assert r.exit_code == 0, r.output
    assert len(r.output.splitlines()) < 10, r.output
    assert "restored 50 files: " in r.output and "and 47 more (--verbose lists them all)" in r.output


# ---------------------------------------------------------------------- the dry run predicts the real run
def _outcome(res) -> dict:
    key = lambda f: (f.check, f.severity, f.message)  # noqa: E731
    return {"status": res.status, "repairs": [(r.check, r.summary) for r in res.plan.repairs],
            "rejected": [(r.group, r.reason) for r in res.rejected],
            "visible": sorted(key(v.finding) + (v.why,) for v in res.visible),
            "gone": sorted(map(key, res.gone)), "remaining": sorted(map(key, res.remaining))}


BROKEN = sorted(p.name for p in DATASETS.iterdir() if p.name.startswith("broken_"))


@pytest.mark.slow
@pytest.mark.parametrize("name", BROKEN)
def test_dry_run_and_real_run_agree_and_undo_restores_every_byte(tmp_path, name):
    root = tmp_path / name
    shutil.copytree(DATASETS / name, root)
    original = tree(root, include_lrtool=True)
    opts = {"move_files": True} if name in ("broken_videos_elsewhere", "broken_data_elsewhere") else {}
    dry = repair(root, dry_run=True, **opts)
    assert tree(root, include_lrtool=True) == original
    res = repair(root, **opts)
    assert _outcome(dry) == _outcome(res)
    assert not res.rolled_back and not res.failed
    if res.applied:
        targeted = [d.finding for d in res.plan.dispositions if d.action == "repair"]
        assert not [f for f in targeted if any(f is g for g in res.remaining)]  # every targeted finding went
        _undo_restores(root, original)
    else:
        assert tree(root, include_lrtool=True) == original


def test_the_shadow_links_every_file_and_leaves_the_original_alone(tmp_path):
    from lerobot_tools.repair.shadow import Shadow

    root = tmp_path / "ds"
    shutil.copytree(DATASETS / "broken_wrong_totals", root)
    (root / ".lrtool/backup").mkdir(parents=True)
    with Shadow(root) as sh:
        mirrored = sorted(p.relative_to(sh.root).as_posix() for p in sh.root.rglob("*") if not p.is_dir())
        assert mirrored == sorted(p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file())
        inode = (root / "meta/info.json").stat().st_ino
        assert sh.links == "symbolic" or (sh.root / "meta/info.json").stat().st_ino == inode
        from lerobot_tools._io import atomic_write_text

        atomic_write_text(sh.root / "meta/info.json", "{}")
        assert sh.differs("meta/info.json") and not sh.differs("meta/tasks.parquet")
        assert (root / "meta/info.json").read_text() != "{}" and sh.untouched() == []
        (root / "meta/info.json").write_text("{}")  # the original changing under it is seen
        assert sh.untouched() == ["meta/info.json"]
        from lerobot_tools.repair.shadow import shadow_source

        assert shadow_source(sh.root) == root.resolve() and shadow_source(root) is None
    assert not sh.scratch.exists()


def test_a_shadow_left_by_a_killed_repair_is_removed_by_the_next_run_and_by_undo(tmp_path):
    root = tmp_path / "ds"
    shutil.copytree(DATASETS / "broken_wrong_totals", root)
    original = tree(root)
    for args in ((), ("--undo",)):
        stale = root / ".lrtool/shadow/lrtool-shadow-killed/ds/meta"
        stale.mkdir(parents=True)
        os.link(root / "meta/info.json", stale / "info.json")
        cli_run(*args, root)
        assert not (root / ".lrtool/shadow").exists(), args
        assert (root / "meta/info.json").is_file()
    assert tree(root) == original  # the repair, then its undo


def test_the_shadow_falls_back_to_symbolic_links_and_the_judgement_is_the_same(tmp_path, monkeypatch):
    root = tmp_path / "ds"
    shutil.copytree(DATASETS / "broken_variable_list", root)
    hard = repair(root, dry_run=True)

    def no_hard_links(*a, **k):
        raise OSError(18, "Invalid cross-device link")  # EXDEV: the scratch folder on another file system

    monkeypatch.setattr(os, "link", no_hard_links)
    soft = repair(root, dry_run=True)
    assert _outcome(soft) == _outcome(hard) and soft.predicted and soft.status == 0


# ---------------------------------------------------------------------- Ctrl-C / SIGTERM during the writes
_SIGNAL = """
import os, signal, sys
from lerobot_tools.repair import apply
n = 0
real_write = apply.write_change
def write_change(root, change):
    global n
    real_write(root, change)
    n += 1
    if n == 1:
        os.kill(os.getpid(), getattr(signal, sys.argv[2]))   # after the first file of the dataset was replaced
apply.write_change = write_change
from lerobot_tools.cli import main
main(["repair", sys.argv[1]])
"""


@pytest.mark.parametrize("sig,status", [("SIGTERM", 143), ("SIGINT", 130)])
def test_a_repair_interrupted_during_its_writes_is_rolled_back(tmp_path, sig, status):
    root = tmp_path / "ds"
    shutil.copytree(DATASETS / "broken_variable_list", root)
    original = tree(root, include_lrtool=True)
    proc = subprocess.run([sys.executable, "-c", _SIGNAL, str(root), sig], capture_output=True, timeout=300)
    assert proc.returncode == status, proc.stderr.decode()[-2000:]
    assert b"rolled back" in proc.stderr
    assert tree(root, include_lrtool=True) == original  # every file restored, no backup, no shadow left
    assert not (root / ".lrtool").exists()


# ---------------------------------------------------------------------- the rules, one by one
def _rep(*findings, not_checked=()):
    from lerobot_tools.findings import DatasetReport, NotChecked

    return DatasetReport(target="t", root=None, codebase_version="v3.0", findings=list(findings),
                         not_checked=[NotChecked(c, "why") for c in not_checked])


def _plan(repairs=(), targets=(), moves=(), changed=("meta/info.json",)):
    from lerobot_tools.repair.model import Disposition, Move, RepairPlan, TextChange

    plan = RepairPlan(target="t", root=None)
    plan.repairs = list(repairs)
    plan.dispositions = [Disposition(f, "repair", repair=r) for f, r in targets]
    plan.moves = [Move(s, d) for s, d in moves]
    plan.text_changes = [TextChange(p, "", "", []) for p in changed]
    return plan


def test_judge_sorts_new_findings_into_vetoes_and_now_visible():
    from lerobot_tools.findings import Finding as F
    from lerobot_tools.repair.judge import judge
    from lerobot_tools.repair.model import Repair

    fix = Repair("S005", "cast", ["data/a.parquet"], group="fix_variable_lists")
    s005 = F("S005", "warning", "data/a.parquet", "variable list")
    before = _rep(s005, F("F002", "error", None, "3 of 5 videos are elsewhere"), not_checked=["T002-T007"])
    after = _rep(
        F("G009", "info", "meta/stats.json", "constant in this episode"),                 # info
        F("G009", "warning", "meta/stats.json", "constant over the dataset"),              # warning
        F("F009", "warning", "videos/x.mp4", "codec differs"),                              # in a moved file
        F("F010", "error", "videos/x.mp4", "shorter than its frames"),                     # ditto, an error
        F("T002", "error", "meta/tasks.parquet", "label missing"),                         # not checked before
        F("F002", "error", None, "video of episode 4 is missing"),                         # said anew, not grown
        F("S003", "error", "data/a.parquet", "float64 where float32 is declared"),         # the written bytes
    )
    j = judge(before, after, _plan([fix], [(s005, fix)], moves=[("video/x.mp4", "videos/x.mp4")],
                                   changed=["data/a.parquet"]), frozenset({"videos/x.mp4"}))
    assert sorted((v.finding.check, v.finding.severity, v.why) for v in j.visible) == [
        ("F002", "error", "rest"), ("F009", "warning", "moved"), ("F010", "error", "moved"),
        ("G009", "info", "info"), ("G009", "warning", "warning"), ("T002", "error", "unchecked")]
    assert [(f.check, f.severity) for f in j.vetoes] == [("S003", "error")] and j.worse == ["S003/error"]
    assert [f.check for f in j.gone] == ["S005", "F002"] and j.remaining == [] and j.uncleared == {}


def test_judge_vetoes_growth_of_an_error_and_errors_of_partly_unchecked_checks():
    from lerobot_tools.findings import Finding as F
    from lerobot_tools.repair.judge import judge, unchecked_before

    # S001-S007 skipped only for unreadable files: S003 ran on the others, so a new S003 is the repair's doing
    partly = ["S001-S007, R001-R004, C002/C005 for unreadable files", "G010 for image/video features"]
    assert unchecked_before(_rep(not_checked=partly)) == set()
    assert unchecked_before(_rep(not_checked=["F002, F004-F010 (videos)", "D001-D005"])) == {
        "F002", "F004", "F005", "F006", "F007", "F008", "F009", "F010", "D001", "D002", "D003", "D004", "D005"}
    assert unchecked_before(_rep(not_checked=["all other checks"])) is None
    assert unchecked_before(_rep(not_checked=["D002 across files"]), partly=True) == {"D002"}  # files moved in
    before = _rep(F("S003", "error", "data/a.parquet", "x", group="dtype"), not_checked=partly)
    grown = F("S003", "error", "data/a.parquet", "x", count=2, paths=["data/a.parquet", "data/b.parquet"],
              group="dtype")
    j = judge(before, _rep(grown), _plan())
    assert j.vetoes == [grown] and j.visible == []
    other = F("S003", "error", "data/b.parquet", "y")  # no more S003 than before, but about another file:
    assert judge(before, _rep(other), _plan(changed=["data/b.parquet"])).vetoes == [other]  # which it wrote
    assert [v.why for v in judge(before, _rep(other), _plan()).visible] == ["rest"]  # which it did not write
    assert judge(_rep(), _rep(other), _plan()).vetoes == [other]  # the first S003 at all


def test_judge_names_a_fix_that_clears_none_of_its_targets():
    from lerobot_tools.findings import Finding as F
    from lerobot_tools.repair.judge import judge
    from lerobot_tools.repair.model import Repair

    a, b = F("I005", "warning", "meta/info.json", "fps is a float"), F("C001", "error", "meta/info.json", "total")
    ra, rb = Repair("I005", "fps", ["meta/info.json"], group="fix_fps"), Repair("C001", "n", ["meta/info.json"],
                                                                               group="fix_counters")
    j = judge(_rep(a, b), _rep(a), _plan([ra, rb], [(a, ra), (b, rb)]))
    assert j.uncleared == {"fix_fps": [a]} and j.gone == [b] and j.remaining == [a]
    fewer = F("I005", "warning", "meta/info.json", "fps is a float", count=1)
    two = F("I005", "warning", "meta/info.json", "fps is a float", count=2)
    assert judge(_rep(two), _rep(fewer), _plan([ra], [(two, ra)])).uncleared == {}  # fewer occurrences: it did


def test_without_scratch_space_the_dry_run_says_so_and_the_real_run_changes_nothing(tmp_path, monkeypatch):
    import collections

    from lerobot_tools.repair import shadow

    root = tmp_path / "ds"
    shutil.copytree(DATASETS / "broken_variable_list", root)
    original = tree(root, include_lrtool=True)
    usage = collections.namedtuple("usage", "total used free")
    monkeypatch.setattr(shadow.shutil, "disk_usage", lambda p: usage(10**9, 10**9 - 10, 10))
    dry = repair(root, dry_run=True)
    assert dry.unpredicted.startswith("not enough scratch space to try the repair first") and dry.after is None
    assert {r.check for r in dry.plan.repairs} == {"S005", "S006"}  # still shown, unchecked
    assert "not tried first: not enough scratch space" in cli_run("--dry-run", root).output
    res = repair(root)
    assert res.status == 2 and not res.applied and "nothing was changed" in res.plan.cannot_run
    assert tree(root, include_lrtool=True) == original and not (root / ".lrtool").exists()


def test_a_fix_whose_change_cannot_be_written_is_rejected_and_the_others_applied(tmp_path, monkeypatch):
    from lerobot_tools.repair import parquet as pqrw

    root = tmp_path / "ds"
    shutil.copytree(DATASETS / "broken_variable_list", root)
    GEN.edit_json(root / "meta/info.json", lambda d: d.update(total_episodes=9))
    files = tree(root)

    def refuse(old, new, ops, schema):
        raise pqrw.RewriteError("row group 0: column 'action' differs from the original (injected)", None)

    monkeypatch.setattr(pqrw, "verify_rewrite", refuse)
    dry, res = repair(root, dry_run=True), repair(root)
    assert _outcome(dry) == _outcome(res)
    assert {r.group for r in res.rejected} == {"fix_variable_lists", "fix_hf_metadata"}
    assert all(r.reason.startswith("its change to data/chunk-000/file-000.parquet cannot be written (")
               and "(injected)" in r.reason for r in res.rejected)
    assert [r.check for r in res.plan.repairs] == ["C001"] and res.applied and info(root)["total_episodes"] == 3
    assert {p: h for p, h in tree(root).items() if p.startswith("data/")} == \
        {p: h for p, h in files.items() if p.startswith("data/")}
