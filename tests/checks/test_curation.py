"""Curation: the episode content checks (Q), keep-lists through every command and loader, and deciding before
downloading (``prefetch --meta-only``, family L), on fixtures built from lerobot-written recordings."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from lerobot_tools.checks.context import ValidateOptions
from lerobot_tools.cli import cli
from lerobot_tools.dataset.mixture import read_mixture
from lerobot_tools.validate import validate

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
DS = FIXTURES / "datasets"
MANIFEST = json.loads((FIXTURES / "manifest.json").read_text())


def cli_run(*args):
    r = CliRunner().invoke(cli, [str(a) for a in args])
    return r.exit_code, r.output


def flagged(report, *checks):
    """Episode -> checks of the (ungrouped) findings naming an episode."""
    out: dict[int, set[str]] = {}
    for f in report.curation.findings:
        if not checks or f.check in checks:
            out.setdefault(f.episode, set()).add(f.check)
    return out


def deep(path, **kw):
    (r,) = validate([str(path)], ValidateOptions(deep=True, **kw))
    return r


# ---------------------------------------------------------------------- the checks, at their planted episodes
#: broken_episode_content's planted defects (fixtures/generate.py CONTENT_PLAN) and the check each raises
PLANTED = {2: {"Q002"}, 3: {"Q001"}, 4: {"Q005"}, 5: {"Q004"}, 6: {"Q007"}, 7: {"Q006"}, 8: {"Q004"},
           9: {"Q009"}, 10: {"Q009"}, 11: {"Q003"}, 12: {"Q008"}}
CONTENT = {f"Q00{i}" for i in range(1, 10)}


def test_each_planted_defect_is_found_at_its_episode_and_nowhere_else():
    r = deep(DS / "broken_episode_content")
    got = {e: c & CONTENT for e, c in flagged(r).items() if c & CONTENT}
    assert got == PLANTED, [f.message for f in r.findings]
    # the planted idle padding is 2.5 s at the start and 2 s at the end, at 10 fps
    assert r.curation.trims == {11: (25, 20)}
    # root cause first: the frozen episode is not also idle, stuck or a duplicate of another frozen one
    assert flagged(r)[3] & CONTENT == {"Q001"}


def test_real_recordings_raise_no_content_warning():
    for root in sorted((FIXTURES / "real").glob("*-pandas2")):
        r = deep(root)
        assert [f.check for f in r.findings if f.check[0] in "QL" and f.severity != "info"] == [], root.name


def test_content_thresholds_are_options():
    from lerobot_tools.checks.content.options import ContentOptions

    r = deep(DS / "broken_episode_content", content=ContentOptions(spike_k=1000.0))
    assert "Q004" not in {f.check for f in r.findings} and "Q001" in {f.check for f in r.findings}
    code, out = cli_run("validate", "--deep", "--threshold", "spike_k=1000", DS / "broken_episode_content")
    assert code == 1 and "Q004" not in out and "Q001" in out  # exit 1: the NaN statistics (G003)
    code, out = cli_run("validate", "--threshold", "nope=1", DS / "broken_episode_content")
    assert code == 2 and "--threshold 'nope=1'" in out
    code, out = cli_run("validate", "--threshold", "frozen_rel=2", DS / "broken_episode_content")
    assert code == 2 and "within [0, 1]" in out
    code, out = cli_run("validate", "--deep", "--chunk-size", "10", DS / "broken_episode_content")
    assert "Q008" not in out  # 30 frames is not shorter than a 10-action chunk


def test_without_deep_the_family_says_it_did_not_run():
    (r,) = validate([str(DS / "broken_episode_content")])
    assert "Q001" not in {f.check for f in r.findings}
    assert any(n.checks.startswith("Q001-Q009") and "--deep" in n.reason for n in r.not_checked)


def test_cameras_from_sampled_frames():
    r = deep(DS / "broken_camera_content")
    assert not [f for f in r.findings if f.check in ("Q011", "Q012", "Q013", "Q014")]
    assert any(n.checks.startswith("Q011-Q014") and "--camera-frames" in n.reason for n in r.not_checked)
    r = deep(DS / "broken_camera_content", camera_frames=4)
    assert flagged(r, "Q011", "Q012", "Q013", "Q014") == {1: {"Q011"}, 3: {"Q012"}, 5: {"Q013"}, 6: {"Q014"}}
    assert [f for f in r.findings if f.check.startswith("Q") and f.check not in ("Q008",)
            and not f.check.startswith("Q01")] == []


def test_duplicates_across_the_datasets_of_a_mixture():
    reports = validate([str(FIXTURES / "curation/duplicates.txt")], ValidateOptions(deep=True))
    assert [Path(r.root).name for r in reports] == ["broken_episode_content", "mixpart_dup_b"]
    assert flagged(reports[0], "Q010") == {}
    assert flagged(reports[1], "Q010") == {1: {"Q010"}, 2: {"Q010"}}
    (q010,) = [f for f in reports[1].findings if f.check == "Q010"]
    assert q010.count == 2 and "episode 0 of ../datasets/broken_episode_content" in q010.message
    # without --deep there are no signatures: nothing is compared
    assert not [f for r in validate([str(FIXTURES / "curation/duplicates.txt")]) for f in r.findings
                if f.check == "Q010"]


def test_curation_mixture_fixtures_raise_their_findings():
    for mx in MANIFEST["curation_mixtures"]:
        opts = ValidateOptions(deep=mx["file"].endswith("duplicates.txt"))
        got = sorted((Path(r.root).name, f.check, f.severity) for r in validate([str(FIXTURES / mx["file"])], opts)
                     for f in r.findings if f.check in ("Q010", "L002", "L003"))
        assert got == sorted(map(tuple, mx["expect"])), mx["file"]


def test_near_duplicate_search_finds_what_brute_force_finds():
    from lerobot_tools.checks.content.signature import SignatureTable, near_pairs, signature_of

    rng = np.random.default_rng(3)
    sigs = []
    for k in range(300):
        x = np.cumsum(rng.normal(size=(int(rng.integers(40, 60)), 4)), axis=0)
        sigs.append((k % 7, k, signature_of(x, np.ones(4, dtype=bool))))
    for k in range(0, 300, 25):  # copies with a little noise, some in another owner
        x = np.cumsum(np.random.default_rng(k).normal(size=(50, 4)), axis=0)
        sigs[k] = (0, k, signature_of(x, np.ones(4, dtype=bool)))
        sigs.append((1, 1000 + k, signature_of(x + rng.normal(0, 1e-3, x.shape), np.ones(4, dtype=bool))))
    t = SignatureTable.stack(sigs)
    got = {tuple(p) for p in near_pairs(t, 0.01).tolist()}
    from lerobot_tools.checks.content.signature import _near

    i, j = np.triu_indices(len(sigs), 1)
    want = {(int(a), int(b)) for a, b in zip(i[_near(t, i, j, 0.01)], j[_near(t, i, j, 0.01)])}
    assert got == want and len(want) >= 12
    across = {tuple(p) for p in near_pairs(t, 0.01, across_only=True).tolist()}
    assert across == {p for p in want if t.owner[p[0]] != t.owner[p[1]]}


# ---------------------------------------------------------------------- keep-lists
def test_write_keep_lists_the_passing_episodes_with_every_reason(tmp_path):
    keep = tmp_path / "keep.txt"
    code, out = cli_run("validate", "--deep", DS / "broken_episode_content", "--write-keep", keep)
    assert code == 1, out  # G003: the NaN episode's statistics
    text = keep.read_text()
    (entry,) = read_mixture(keep)
    # the warnings and the error naming an episode exclude it; the infos (2, 7, 11, 12) do not
    assert entry.error is None and entry.episodes == [0, 1, 2, 7, 11, 12, 13]
    assert "#   episode 9 excluded: Q009 episode 9 is an exact copy of episode 0" in text
    assert "#   episode 10 excluded: Q009 episode 10 is a near duplicate of episode 0" in text
    assert "#   episode 4 excluded: Q005 NaN or infinite values" in text
    # the idle head and tail are recorded as trimmable frames
    assert list(entry.trim) == [11]
    (a0, b0), (a1, b1) = entry.trim[11]
    assert (a0, b0) == (0, 24) and b1 - a1 + 1 == 20
    # --exclude replaces the rule: Q008 (short) and Q002 (stuck) now leave their episodes out, nothing else
    code, _ = cli_run("validate", "--deep", DS / "broken_episode_content", "--write-keep", keep, "--exclude",
                      "Q008,Q002")
    (entry,) = read_mixture(keep)
    assert entry.episodes == [e for e in range(14) if e not in (2, 12)]


def test_keep_list_of_a_dataset_with_no_passing_episode_and_an_unresolved_entry(tmp_path):
    frozen = tmp_path / "frozen"
    shutil.copytree(DS / "broken_episode_content", frozen)
    mix = tmp_path / "mix.txt"
    mix.write_text(f"{frozen} weight=2\norg/not-here weight=1\n")
    keep = tmp_path / "keep.txt"
    code, out = cli_run("validate", "--deep", mix, "--write-keep", keep, "--exclude", "Q001,Q008,R003")
    text = keep.read_text()
    entries = read_mixture(keep)
    assert [e.repo_id for e in entries] == [None, "org/not-here"] and entries[1].weight == 1
    assert entries[0].episodes == [e for e in range(14) if e not in (3, 12)] and entries[0].weight == 2
    assert "org/not-here: not judged" in text
    code, _ = cli_run("validate", "--deep", frozen, "--write-keep", keep, "--chunk-size", "1000", "--exclude", "Q008")
    assert "# no episode passes:" in keep.read_text() and read_mixture(keep) == []


def test_keep_list_round_trips_through_every_command_and_both_loaders(tmp_path):
    from lerobot_tools.loaders import FrameDataset, MixtureDataset

    root = tmp_path / "content"
    shutil.copytree(DS / "broken_episode_content", root)
    keep = tmp_path / "keep.txt"
    assert cli_run("validate", "--deep", root, "--write-keep", keep)[0] == 1  # G003 (the NaN episode's statistics)
    (entry,) = read_mixture(keep)
    assert entry.episodes == [0, 1, 2, 7, 11, 12, 13] and entry.trim[11][0] == (0, 24)
    head, tail = 25, 20
    code, out = cli_run("validate", keep)  # the keep-list itself is a mixture every command reads
    assert "warning Q0" not in out and "M00" not in out
    assert cli_run("diagnose-decode", keep)[0] == 0
    code, out = cli_run("prefetch", "--offline", keep)
    assert code == 0, out
    code, out = cli_run("smoke", keep)
    assert code == 0 and "passed" in out, out
    fd = FrameDataset(root, decode_video=False)
    lengths = dict(zip(fd.episodes, fd.episode_lengths.tolist()))
    full = MixtureDataset(keep, decode_video=False)
    trimmed = MixtureDataset(keep, decode_video=False, trim=True)
    kept = sum(n for e, n in lengths.items() if e in entry.episodes)
    assert len(full) == kept and len(trimmed) == kept - head - tail
    ft = FrameDataset(root, decode_video=False, episodes=entry.episodes, trim=entry.trim)
    k = ft.episodes.index(11)
    first = int(ft.episode_starts[k])
    assert int(ft[first]["frame_index"]) == head and int(ft.locate([first])[1][0]) == head
    assert int(ft[first + int(ft.episode_lengths[k]) - 1]["frame_index"]) == lengths[11] - tail - 1


def test_trim_syntax_and_what_a_loader_refuses(tmp_path):
    from lerobot_tools.errors import DatasetError
    from lerobot_tools.loaders import FrameDataset

    mix = tmp_path / "mix.txt"
    mix.write_text(f"{DS / 'broken_episode_content'} trim=5:9-3\n")
    (r,) = validate([str(mix)])
    assert [f.check for f in r.findings] == ["M002"] and "bad trim range" in r.findings[0].message
    with pytest.raises(DatasetError, match="lie inside it"):
        FrameDataset(DS / "broken_episode_content", decode_video=False, trim={5: [(10, 20)]})
    with pytest.raises(DatasetError, match="not within its"):
        FrameDataset(DS / "broken_episode_content", decode_video=False, trim={5: [(0, 10_000)]})


def test_write_keep_is_refused_with_a_distributed_run(tmp_path):
    code, out = cli_run("validate", DS / "broken_episode_content", "--write-keep", tmp_path / "k.txt", "--shard", "0/2",
                        "--part-out", tmp_path / "p.json")
    assert code == 2 and "--write-keep" in out


# ---------------------------------------------------------------------- decide before downloading
@pytest.fixture
def served(tmp_path, monkeypatch):
    from tests.hubserver import HubServer

    monkeypatch.setenv("HF_HUB_DISABLE_TELEMETRY", "1")
    monkeypatch.setenv("HF_HUB_DISABLE_IMPLICIT_TOKEN", "1")
    for var in ("HF_TOKEN", "HF_HUB_OFFLINE", "HF_ENDPOINT"):
        monkeypatch.delenv(var, raising=False)
    src = tmp_path / "src"
    shutil.copytree(DS / "broken_camera_content", src)
    (src / "README.md").write_text("---\nlicense: cc-by-4.0\n---\n")
    with HubServer() as srv:
        srv.add_repo("org/cams", src)
        yield srv, src


def test_meta_only_then_keep_downloads_exactly_the_kept_episodes_files(tmp_path, served, monkeypatch):
    from lerobot_tools.prefetch import PrefetchOptions, prefetch

    srv, src = served
    home = tmp_path / "home"
    monkeypatch.setenv("HF_LEROBOT_HOME", str(home))
    mix = tmp_path / "mix.txt"
    mix.write_text("org/cams\n")
    opts = dict(local_dir_root=home, endpoint=srv.url, progress=False)
    rep = prefetch(mix, PrefetchOptions(meta_only=True, **opts))
    assert rep.exit_status == 0 and rep.results[0].kind == "meta-only"
    got = sorted(r.path for r in srv.requests("get"))
    assert got == sorted(p.relative_to(src).as_posix() for p in src.rglob("*")
                         if p.is_file() and (p.name == "README.md" or p.relative_to(src).parts[0] == "meta"))
    copy = home / "org/cams"
    assert json.loads((copy / ".lrtool/prefetch.json").read_text())["state"] == "meta-only"

    keep = tmp_path / "keep.txt"
    code, out = cli_run("validate", mix, "--write-keep", keep)
    assert code == 0, out
    assert "error   F00" not in out and "not downloaded yet" in out
    # the stored image statistics show the black (1) and washed-out (3) front camera and the duplicated stream (6);
    # the frozen camera (5) needs the frames
    (entry,) = read_mixture(keep)
    assert entry.repo_id == "org/cams" and entry.episodes == [0, 2, 4, 5]
    # diagnose-decode judges the cameras by what info.json declares: h264 decodes on an H100's NVDEC
    code, out = cli_run("diagnose-decode", "--gpu", "H100", mix, "--format", "json")
    doc = json.loads(out)
    (ds,) = doc["datasets"]
    assert code == 0 and not [p for p in ds["problems"] if p.get("check") == "F002"], out
    assert any("not downloaded yet" in n for n in ds["notes"])
    assert {g["codec"] for g in ds["groups"]} == {"h264"} and all(g["verdict"]["decodable"] == "yes"
                                                                   for g in ds["groups"])

    srv.reset()
    rep = prefetch(keep, PrefetchOptions(**opts))
    assert rep.exit_status == 0
    fetched = sorted(r.path for r in srv.requests("get"))
    want = sorted(p for e in entry.episodes for p in (
        f"data/chunk-000/episode_{e:06d}.parquet",
        f"videos/chunk-000/observation.images.front/episode_{e:06d}.mp4",
        f"videos/chunk-000/observation.images.wrist/episode_{e:06d}.mp4"))
    assert fetched == want
    state = json.loads((copy / ".lrtool/prefetch.json").read_text())
    assert state["state"] == "partial" and state["episodes"] == entry.episodes

    # validate now reads the kept episodes' data; the others are still not downloaded, never missing
    (r,) = validate([str(copy)], ValidateOptions(deep=True, camera_frames=4))
    assert not [f for f in r.findings if f.check in ("F001", "F002")]
    assert flagged(r, "Q013") == {5: {"Q013"}}
    # a file of a fetched episode that disappears is missing again
    (copy / "data/chunk-000/episode_000002.parquet").unlink()
    (r,) = validate([str(copy)])
    assert [f.check for f in r.findings if f.check == "F001"] == ["F001"]
    # a whole-repo prefetch completes the copy and clears the mark
    srv.reset()
    whole = tmp_path / "whole.txt"
    whole.write_text("org/cams\n")
    assert prefetch(whole, PrefetchOptions(**opts)).exit_status == 0
    assert not (copy / ".lrtool/prefetch.json").exists()


def test_license_of_the_card_and_ledger_on_a_meta_only_copy(tmp_path):
    from lerobot_tools.dataset.downloads import META_ONLY, DownloadState, read_state, write_state

    copy = tmp_path / "copy"
    shutil.copytree(DS / "broken_episode_content", copy, ignore=shutil.ignore_patterns("data"))
    (r,) = validate([str(copy)])
    assert "F001" in {f.check for f in r.findings}  # unmarked: the data is missing
    write_state(copy, DownloadState(META_ONLY, "0" * 40))
    assert read_state(copy).state == META_ONLY
    (r,) = validate([str(copy)])
    assert "F001" not in {f.check for f in r.findings}
    assert flagged(r, "Q001") == {3: {"Q001"}}  # from the stored statistics (max == min everywhere)
    (copy / ".lrtool/prefetch.json").write_text("{not json")
    assert read_state(copy) is None


def test_scan_with_content_survives_serialisation():
    from lerobot_tools.checks.content.plan import plan_for
    from lerobot_tools.checks.content.options import ContentOptions
    from lerobot_tools.checks.deep import scan_file, scan_from_dict, scan_to_dict
    from lerobot_tools.dataset.footers import read_footer
    from lerobot_tools.dataset.model import Dataset

    ds = Dataset(DS / "broken_episode_content")
    rel = ds.data_files()[0].relpath
    plan = plan_for(ds, read_footer(ds.path(rel), rel).schema, ContentOptions())
    scan = scan_file(ds.path(rel), fps=ds.fps, tolerance_s=1e-4, index_offset=0, list_columns={},
                     content=plan.request)
    back = scan_from_dict(json.loads(json.dumps(scan_to_dict(scan))))
    assert json.dumps([s.to_dict() for s in back.content]) == json.dumps([s.to_dict() for s in scan.content])
    assert any(s.bad.any() for s in back.content)


def test_an_episode_past_the_memory_bound_is_named_not_judged(monkeypatch):
    from lerobot_tools.checks.content import episode

    monkeypatch.setattr(episode, "MAX_EPISODE_VALUES", 12 * 60)  # 60 frames of 12 values
    r = deep(DS / "broken_episode_content")
    notes = [n for n in r.not_checked if n.checks.startswith("Q001-Q007, Q009 for very long")]
    assert notes and "episode(s)" in notes[0].reason
    lengths = r.curation.lengths
    judged = {s for s, _ in r.curation.signatures}
    assert judged and all(lengths[e] <= 60 for e in judged)


def test_duplicates_across_a_mixture_survive_a_sharded_run(tmp_path):
    parts = tmp_path / "parts"
    parts.mkdir()
    mix = FIXTURES / "curation/duplicates.txt"
    for rank in range(2):
        code, out = cli_run("validate", mix, "--deep", "--shard", f"{rank}/2", "--part-out",
                            parts / f"part-{rank}.json")
        assert code in (0, 1), out
    code, out = cli_run("report", "merge", parts, "--format", "json")
    doc = json.loads(out)
    q010 = [f for d in doc["datasets"] for f in d["findings"] if f["check"] == "Q010"]
    assert [f["count"] for f in q010] == [2] and doc["datasets"][1]["findings"][-1]["check"] == "Q010"


def test_rows_of_the_wrong_length_are_d005s_not_nan(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    root = tmp_path / "ds"
    shutil.copytree(DS / "broken_episode_content", root)
    path = root / "data/chunk-000/file-001.parquet"  # episodes 10-13: no NaN planted there
    t = pq.read_table(path)
    state = t.column("observation.state").to_pylist()
    state[3] = state[3][:5]
    t = t.set_column(t.schema.get_field_index("observation.state"), "observation.state",
                     pa.array(state, type=pa.list_(pa.float32())))
    pq.write_table(t, path)
    r = deep(root)
    assert "D005" in {f.check for f in r.findings}
    assert set(flagged(r, "Q005")) == {4}  # only the planted NaN episode; the short row is D005's
    assert any(n.checks == "Q001-Q009 for observation.state" for n in r.not_checked)


def test_a_license_file_beside_a_card_without_license_states_the_terms(tmp_path):
    """A dataset kept in a git repository states its terms in LICENSE: no L002 then (the card alone would raise it)."""
    ds = tmp_path / "ds"
    shutil.copytree(DS / "broken_camera_content", ds)
    (ds / "README.md").write_text("# a dataset\n")
    l002 = lambda: [f for f in validate([str(ds)])[0].findings if f.check == "L002"]  # noqa: E731
    assert len(l002()) == 1
    (ds / "LICENSE").mkdir()  # a folder named LICENSE is not a licence file
    assert len(l002()) == 1
    (ds / "LICENSE").rmdir()
    (ds / "LICENSE").write_text("MIT License\n")
    assert l002() == []
    (ds / "LICENSE").unlink()
    (ds / "Licence.txt").write_text("CC-BY-4.0\n")
    assert l002() == []
