"""Nothing read from a cache, a mixture, a template or a backup manifest leads lrtool outside its root.

Each test builds the hostile input on real files and checks that the path is refused with one line and that
nothing outside the root is read or touched.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from lerobot_tools.cli import cli
from lerobot_tools.dataset import mixture, targets
from lerobot_tools.errors import UsageError

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
CLEAN = FIXTURES / "datasets" / "clean_v21"
SHA_A = "a" * 40


@pytest.fixture
def hub(tmp_path, monkeypatch):
    home = tmp_path / "hf"
    monkeypatch.setenv("HF_HOME", str(home))
    monkeypatch.setenv("HF_LEROBOT_HOME", str(home / "lerobot"))
    for var in ("HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE"):
        monkeypatch.delenv(var, raising=False)
    cache = home / "hub"
    repo_dir = cache / targets.repo_cache_dirname("org/ds")
    shutil.copytree(CLEAN, repo_dir / "snapshots" / SHA_A)
    (repo_dir / "refs").mkdir(parents=True)
    (repo_dir / "refs" / "main").write_text(SHA_A)
    return cache


# ---------------------------------------------------------------------- hub-cache revisions
@pytest.mark.parametrize("revision", ["../../x", "../refs/main", "{planted}", "a/../../../x", "x\\..\\y", "v1\x00",
                                      "refs/../../../x", ".", "a//b"])
def test_revision_that_is_a_path_is_refused(hub, revision):
    # files the traversal reaches, holding a SHA whose snapshot folder exists: the old lookup used them
    planted = hub / "x"
    planted.write_text(SHA_A)
    (hub / targets.repo_cache_dirname("org/ds") / "x").write_text(SHA_A)
    (t,) = targets.resolve_target(f"org/ds@{revision.format(planted=planted)}")
    assert t.root is None and t.error and "\n" not in t.error
    assert "revision" in t.error and "not found" not in t.error


def test_revision_traversal_through_mixture_is_an_entry_error(hub, tmp_path):
    (hub / "x").write_text(SHA_A)
    mix = tmp_path / "m.txt"
    mix.write_text(f"org/ds@../../x\norg/ds revision={hub / 'x'}\norg/ds@main\n")
    t1, t2, t3 = targets.resolve_targets([str(mix)])
    assert t1.root is None and t1.error_check == "M002" and "'..'" in t1.error
    assert t2.root is None and "absolute" in t2.error
    assert t3.root is not None and t3.commit == SHA_A


def test_ref_file_content_must_be_a_sha(hub):
    repo_dir = hub / targets.repo_cache_dirname("org/ds")
    other = hub.parent / "elsewhere"
    shutil.copytree(CLEAN, other)
    (repo_dir / "refs" / "evil").write_text(f"../../../../{other.name}")
    (t,) = targets.resolve_target("org/ds@evil")
    assert t.root is None and "40-hex" in t.error


def test_ref_file_symlinked_out_of_refs_is_refused(hub, tmp_path):
    repo_dir = hub / targets.repo_cache_dirname("org/ds")
    (tmp_path / "planted").write_text(SHA_A)
    os.symlink(tmp_path / "planted", repo_dir / "refs" / "v9")
    (t,) = targets.resolve_target("org/ds@v9")
    assert t.root is None and "outside" in t.error


def test_snapshot_folder_symlinked_out_of_the_cache_is_refused(hub, tmp_path):
    repo_dir = hub / targets.repo_cache_dirname("org/ds")
    other = tmp_path / "unrelated"
    shutil.copytree(CLEAN, other)
    sha = "b" * 40
    os.symlink(other, repo_dir / "snapshots" / sha)
    (repo_dir / "refs" / "v2").write_text(sha)
    for spec in ("org/ds@v2", f"org/ds@{sha}"):
        (t,) = targets.resolve_target(spec)
        assert t.root is None and "outside the cache" in t.error, spec


def test_reshard_does_not_act_on_a_folder_reached_through_a_revision(hub, tmp_path):
    # the traversal reaches a file whose content, used as a snapshot name, leads to an unrelated dataset
    other = tmp_path / "victim"
    shutil.copytree(CLEAN, other)
    (hub / "x").write_text(str(other))
    before = {p: (p.stat().st_mtime_ns, p.stat().st_size) for p in other.rglob("*")}
    res = CliRunner().invoke(cli, ["reshard", "org/ds@../../x"])
    assert res.exit_code == 1, res.output
    assert "revision" in res.output
    assert {p: (p.stat().st_mtime_ns, p.stat().st_size) for p in other.rglob("*")} == before


@pytest.mark.parametrize("repo", ["org/..", "org/.hidden", "a..b/c"])
def test_repo_id_cannot_name_a_folder_outside_lerobot_home(hub, tmp_path, repo):
    assert not mixture.REPO_ID_RE.match(repo)
    (t,) = targets.resolve_target(repo)
    assert t.root is None and "invalid repo id" in t.error
    (tmp_path / "m.txt").write_text(repo + "\n")
    (e,) = mixture.read_mixture(tmp_path / "m.txt")
    assert e.error and "invalid repo id" in e.error


# ---------------------------------------------------------------------- mixture $ref
def _json_mixture(folder: Path, ref: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    f = folder / "train.json"
    f.write_text(json.dumps({"dataset_mixture": {"datasets": [{"$ref": ref}]}}))
    return f


@pytest.mark.parametrize("ref", ["../secret.json", "/etc/passwd", "sub/../../secret.json", "~/x.json"])
def test_mixture_ref_outside_the_mixture_folder_is_refused(tmp_path, ref):
    (tmp_path / "secret.json").write_text(json.dumps({"root": "/"}))
    f = _json_mixture(tmp_path / "cfg", ref)
    with pytest.raises(UsageError) as exc:
        mixture.read_mixture(f)
    assert "$ref" in str(exc.value) and "\n" not in str(exc.value)


def test_mixture_ref_symlinked_outside_is_refused(tmp_path):
    (tmp_path / "secret.json").write_text(json.dumps({"root": "/"}))
    cfg = tmp_path / "cfg"
    cfg.mkdir()
    os.symlink(tmp_path / "secret.json", cfg / "inner.json")
    with pytest.raises(UsageError, match="outside"):
        mixture.read_mixture(_json_mixture(cfg, "inner.json"))


def test_mixture_ref_inside_still_works(tmp_path):
    cfg = tmp_path / "cfg"
    (cfg / "parts").mkdir(parents=True)
    (cfg / "parts" / "a.json").write_text(json.dumps({"repo_id": "org/ds", "revision": "v2.1"}))
    (entry,) = mixture.read_mixture(_json_mixture(cfg, "parts/a.json"))
    assert (entry.repo_id, entry.revision, entry.error) == ("org/ds", "v2.1", None)


def test_mixture_ref_cli_is_one_line_exit_2(tmp_path):
    f = _json_mixture(tmp_path / "cfg", "../../../../../../etc/hostname")
    res = CliRunner().invoke(cli, ["validate", str(f)])
    assert res.exit_code == 2
    assert "Traceback" not in res.output and len(res.output.strip().splitlines()) == 1
