"""Offline target resolution: folders, repo ids in HF_LEROBOT_HOME and hub snapshot caches, mixtures."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from lerobot_tools.dataset import mixture, targets
from lerobot_tools.errors import UsageError

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
CLEAN = FIXTURES / "datasets" / "clean_v21"
SHA_A = "a" * 40
SHA_B = "0123456789abcdef0123456789abcdef01234567"


@pytest.fixture
def caches(tmp_path, monkeypatch):
    home = tmp_path / "hf"
    monkeypatch.setenv("HF_HOME", str(home))
    monkeypatch.delenv("HF_HUB_CACHE", raising=False)
    monkeypatch.delenv("HUGGINGFACE_HUB_CACHE", raising=False)
    monkeypatch.delenv("HF_LEROBOT_HOME", raising=False)
    return home


def _snapshot(cache: Path, repo: str, sha: str, refs: dict[str, str] | None = None) -> Path:
    repo_dir = cache / targets.repo_cache_dirname(repo)
    snap = repo_dir / "snapshots" / sha
    shutil.copytree(CLEAN, snap)
    for name, value in (refs or {}).items():
        ref = repo_dir / "refs" / name
        ref.parent.mkdir(parents=True, exist_ok=True)
        ref.write_text(value)
    return snap


def test_lerobot_home(caches):
    dest = caches / "lerobot" / "org" / "ds"
    shutil.copytree(CLEAN, dest)
    (t,) = targets.resolve_target("org/ds")
    assert t.error is None and t.root == dest and t.origin == "lerobot-home"


def test_hub_cache_branch_tag_and_sha(caches):
    hub = caches / "hub"
    snap_a = _snapshot(hub, "org/ds", SHA_A, {"main": SHA_A, "v2.1": SHA_A})
    snap_b = _snapshot(hub, "org/ds", SHA_B, {"v3.0": SHA_B})
    assert targets.resolve_target("org/ds")[0].root == snap_a            # refs/main
    assert targets.resolve_target("org/ds@v2.1")[0].root == snap_a       # tag through refs/
    t = targets.resolve_target("org/ds@v3.0")[0]
    assert (t.root, t.commit, t.origin) == (snap_b, SHA_B, "hub-cache")
    assert targets.resolve_target(f"org/ds@{SHA_B}")[0].root == snap_b   # full SHA used directly
    assert targets.resolve_target("org/ds@0123456")[0].root == snap_b    # unique short SHA prefix
    missing = targets.resolve_target("org/ds@" + "f" * 40)[0]
    assert missing.root is None and "not found in the local caches" in missing.error


def test_sha_that_parses_as_a_version_is_not_treated_as_one(caches):
    # "1234567" is a valid PEP 440 version; it must still be looked up as a commit prefix
    sha = "1234567" + "0" * 33
    snap = _snapshot(caches / "hub", "org/ds", sha)
    (t,) = targets.resolve_target("org/ds@1234567")
    assert t.root == snap and t.commit == sha


def test_ambiguous_short_sha_is_a_finding(caches):
    _snapshot(caches / "hub", "org/ds", "abcdef1" + "0" * 33)
    _snapshot(caches / "hub", "org/ds", "abcdef1" + "1" * 33)
    (t,) = targets.resolve_target("org/ds@abcdef1")
    assert t.root is None and "matches 2 snapshots" in t.error


def test_lerobot_hub_cache_is_searched(caches):
    snap = _snapshot(caches / "lerobot" / "hub", "org/ds", SHA_A, {"main": SHA_A})
    assert targets.resolve_target("org/ds")[0].root == snap


def test_revision_falls_back_to_unversioned_local_copy_with_a_note(caches):
    dest = caches / "lerobot" / "org" / "ds"
    shutil.copytree(CLEAN, dest)
    (t,) = targets.resolve_target("org/ds@v2.1")
    assert t.root == dest and t.notes and "cannot be verified" in t.notes[0]


def test_unresolvable_targets_are_findings_not_crashes(caches, tmp_path):
    assert "not found" in targets.resolve_target("nobody/nothing")[0].error
    assert "not a repo id" in targets.resolve_target(str(tmp_path / "nope"))[0].error
    loop = tmp_path / "loop"
    loop.symlink_to(loop)
    assert "symlink" in targets.resolve_target(str(loop))[0].error


def test_text_mixture_parsing(tmp_path, caches):
    shutil.copytree(CLEAN, tmp_path / "local")
    f = tmp_path / "mix.txt"
    f.write_text(
        "# comment\n\n"
        "local episodes=0-1  # trailing comment\n"
        f"org/ds@{SHA_A} episodes=0-9,12\n"
        "org/other@v2.1\n"
        "org/bad episodes=3-1\n"
        "org/bad2 colour=red\n"
    )
    entries = mixture.read_mixture(f)
    assert entries[0].root == (tmp_path / "local") and entries[0].episodes == [0, 1]
    assert (entries[1].repo_id, entries[1].revision) == ("org/ds", SHA_A)
    assert entries[1].episodes == list(range(10)) + [12]
    assert (entries[2].repo_id, entries[2].revision, entries[2].episodes) == ("org/other", "v2.1", None)
    assert "end before start" in entries[3].error
    assert "unknown option" in entries[4].error
    assert entries[3].source == f"{f}:6"
    resolved = targets.resolve_targets([str(f)])
    assert resolved[0].root == tmp_path / "local"
    assert resolved[3].error_check == "M002"


def test_json_mixture_refs_merge_and_relative_roots(tmp_path):
    sub = tmp_path / "configs" / "parts"
    sub.mkdir(parents=True)
    (sub / "part.json").write_text(json.dumps({"root": "../../data/ds", "episodes": [0, 2], "revision": "main"}))
    (tmp_path / "configs" / "train.json").write_text(json.dumps({
        "dataset_mixture": {"datasets": [
            {"$ref": "parts/part.json", "episodes": [1]},
            {"repo_id": "org/x", "data_features_name_mapping": {"camera0": "observation.images.front"}},
            {"repo_id": "not a repo"},
            {"vqa": "something"},
        ]}
    }))
    entries = mixture.read_mixture(tmp_path / "configs" / "train.json")
    assert entries[0].root == (tmp_path / "configs" / "parts" / "../../data/ds")
    assert entries[0].episodes == [1]                  # sibling keys deep-merge over the include
    assert entries[0].revision == "main"
    assert entries[1].feature_mapping == {"camera0": "observation.images.front"}
    assert "org/name" in entries[2].error
    assert "VQA" in entries[3].error


def test_json_mixture_ref_cycle_and_missing_ref_are_usage_errors(tmp_path):
    (tmp_path / "a.json").write_text(json.dumps({"datasets": [{"$ref": "b.json"}]}))
    (tmp_path / "b.json").write_text(json.dumps({"$ref": "a.json"}))
    with pytest.raises(UsageError, match="cycle"):
        mixture.read_mixture(tmp_path / "a.json")
    (tmp_path / "c.json").write_text(json.dumps({"datasets": [{"$ref": "missing.json"}]}))
    with pytest.raises(UsageError, match="not found"):
        mixture.read_mixture(tmp_path / "c.json")
    (tmp_path / "d.json").write_text("{not json")
    with pytest.raises(UsageError, match="not valid JSON"):
        mixture.read_mixture(tmp_path / "d.json")


def test_episode_spec():
    assert mixture.parse_episode_spec("0-3,7, 9-9") == [0, 1, 2, 3, 7, 9]
    for bad in ("", "a", "3-1", "-1"):
        with pytest.raises(ValueError):
            mixture.parse_episode_spec(bad)


def test_duplicate_of_names_the_first_occurrence_of_each_dataset(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir(), b.mkdir()
    (tmp_path / "link").symlink_to(a)
    ts = targets.resolve_targets([str(a), str(b), str(tmp_path / "link"), str(b / ".." / "a"), "no/such@x",
                                  "no/such@x", "other/repo"])
    assert targets.duplicate_of(ts) == [None, None, 0, 0, None, 4, None]


def test_episode_subset_is_episodes_minus_excluded():
    from lerobot_tools.dataset import EpisodeSubset, Target

    whole = EpisodeSubset.of(Target("x"))
    assert whole.whole and whole.wants(7) and whole.select([0, 1, 2]) == [0, 1, 2]
    assert EpisodeSubset.of(Target("x", excluded_episodes=[])).whole
    sub = EpisodeSubset.of(Target("x", episodes=[5, 2, 9], excluded_episodes=[9]))
    assert not sub.whole and sub.wants(2) and not sub.wants(9) and not sub.wants(3)
    assert sub.select([0, 1, 2, 3]) == [5, 2]  # the requested order; not checked against the dataset
    excl = EpisodeSubset.of(Target("x", excluded_episodes=[1]))
    assert not excl.whole and excl.select([0, 1, 2]) == [0, 2]
