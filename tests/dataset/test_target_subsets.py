"""One meaning of a target: a dataset plus an optional episode subset, honoured the same way by every command.

The targets are real datasets (parquet written by the synthetic writer, h264 videos encoded by ffmpeg) and the
subset copies a subset ``lrtool prefetch`` leaves: the metadata of every episode, the data and video files of the
requested ones only. validate checks what the subset reads, smoke loads it, ``prefetch --offline`` judges a path
entry by the files its own metadata references, diagnose-decode probes the subset's videos, and all of them (and
the mixture loader) agree on which files those are (:func:`lerobot_tools.dataset.subset.files_read`).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from lerobot_tools.cli import cli
from lerobot_tools.dataset import Dataset
from lerobot_tools.dataset.targets import resolve_target
from lerobot_tools.testing.synth import SynthSpec, build_dataset
from lerobot_tools.validate import validate

pytestmark = pytest.mark.skipif(shutil.which("ffmpeg") is None, reason="system ffmpeg not installed")

LFS = "version https://git-lfs.github.com/spec/v1\noid sha256:" + "ab" * 32 + "\nsize 9999\n"
SPECS = {
    # v2.1: one data file and one mp4 per episode; v3.0: two episodes per data file and per mp4
    "v2.1": SynthSpec(version="v2.1", episode_lengths=(6, 5, 7, 6, 5, 6), video_size=(32, 32)),
    "v3.0": SynthSpec(version="v3.0", episode_lengths=(6, 5, 7, 6, 5, 6), video_size=(32, 32), episodes_per_file=2),
}


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    base = tmp_path_factory.mktemp("subset-src")
    out = {}
    for version, spec in SPECS.items():
        build_dataset(base / version, spec)
        out[version] = base / version
    return out


def subset_copy(src: Path, dst: Path, keep: set[int]) -> Path:
    """A copy holding the files of the ``keep`` episodes only, as a subset prefetch leaves it (all of ``meta/``)."""
    shutil.copytree(src, dst)
    ds = Dataset(dst)
    for f in [*ds.data_files(), *ds.video_files()]:
        if not keep & set(f.episodes):
            (dst / f.relpath).unlink()
    return dst


def cli_run(*args) -> tuple[int, str]:
    r = CliRunner().invoke(cli, [str(a) for a in args])
    return r.exit_code, r.output


def checks(report) -> list[tuple[str, str]]:
    return sorted((f.check, f.severity) for f in report.findings if f.check not in ("R003",))


# ---------------------------------------------------------------------------------------------- validate
@pytest.mark.parametrize("version", ["v2.1", "v3.0"])
def test_validate_checks_what_the_subset_reads(built, tmp_path, version):
    root = subset_copy(built[version], tmp_path / "ds", keep={0, 1})
    mix = tmp_path / "mix.txt"
    mix.write_text("ds episodes=0-1 weight=2\n")
    code, out = cli_run("validate", mix)
    assert code == 0, out
    (r,) = validate([str(mix)])
    # the absent files are not requested: one info each for data and videos, never F001/F002 errors
    assert checks(r) == [("F001", "info"), ("F002", "info")]
    f001 = next(f for f in r.findings if f.check == "F001")
    assert f001.message == ("4 data file(s) of episodes 2-5 are absent: not requested, this target reads episodes "
                            "0 and 1 only" if version == "v2.1" else
                            "2 data file(s) of episodes 2-5 are absent: not requested, this target reads episodes "
                            "0 and 1 only")
    # named by its path, never with the line's options; the request is in the heading and in the JSON
    assert r.target == "ds" and r.subset == {"episodes": [0, 1]}
    assert out.splitlines()[0] == f"ds ({version}), episodes 0 and 1  [{mix}:1]"
    # the same folder as a whole dataset is missing files: errors, exit 1
    code, out = cli_run("validate", root)
    assert code == 1 and "F001" in out and "F002" in out
    assert [(f.check, f.severity) for f in validate([str(root)])[0].findings if f.check in ("F001", "F002")] == [
        ("F001", "error"), ("F002", "error")]


def test_a_requested_file_that_is_absent_or_a_placeholder_is_still_an_error(built, tmp_path):
    root = subset_copy(built["v2.1"], tmp_path / "ds", keep={0, 1, 2})
    (root / "data/chunk-000/episode_000002.parquet").unlink()
    (root / "videos/chunk-000/observation.images.front/episode_000001.mp4").write_text(LFS)
    (root / "videos/chunk-000/observation.images.front/episode_000004.mp4").parent.mkdir(exist_ok=True)
    shutil.copy(built["v2.1"] / "videos/chunk-000/observation.images.front/episode_000004.mp4",
                root / "videos/chunk-000/observation.images.front/episode_000004.mp4")
    (root / "videos/chunk-000/observation.images.front/episode_000004.mp4").write_text(LFS)  # not requested
    mix = tmp_path / "mix.txt"
    mix.write_text("ds episodes=0-2\n")
    (r,) = validate([str(mix)])
    assert checks(r) == [("F001", "error"), ("F001", "info"), ("F002", "info"), ("F004", "error")]
    assert next(f for f in r.findings if f.check == "F001" and f.severity == "error").path == \
        "data/chunk-000/episode_000002.parquet"
    assert next(f for f in r.findings if f.check == "F004").path == \
        "videos/chunk-000/observation.images.front/episode_000001.mp4"
    info = next(f for f in r.findings if f.check == "F002")
    assert info.message == ("3 video file(s) of episodes 3-5 are not on disk (2 absent, 1 Git LFS pointers): not "
                            "requested, this target reads episodes 0-2 only")
    assert r.has_errors


def test_opentau_excluded_episodes_are_a_subset_too(built, tmp_path):
    subset_copy(built["v3.0"], tmp_path / "ds", keep={2, 3})
    mix = tmp_path / "mix.json"
    mix.write_text(json.dumps({"dataset_mixture": {"datasets": [{"root": "ds", "excluded_episodes": [0, 1, 4, 5]}]}}))
    (r,) = validate([str(mix)])
    assert checks(r) == [("F001", "info"), ("F002", "info")] and not r.has_errors
    assert "this target reads every episode except 0, 1, 4 and 5 only" in r.findings[0].message


def test_a_selection_of_no_episode_is_an_error_as_the_loader_raises(built, tmp_path):
    mix = tmp_path / "mix.json"
    entries = [{"root": str(built["v2.1"]), "excluded_episodes": list(range(6))},
               {"root": str(built["v2.1"]), "episodes": [1, 2], "excluded_episodes": [1, 2]}]
    mix.write_text(json.dumps({"dataset_mixture": {"datasets": entries}}))
    code, out = cli_run("validate", mix)
    assert code == 1, out
    reports = validate([str(mix)])
    assert [[(f.check, f.severity) for f in r.findings if f.check.startswith("M")] for r in reports] == [
        [("M005", "error")], [("M005", "error")]]
    assert "excluded_episodes covers all 6 episode(s) of the dataset" in reports[0].findings[-1].message
    torch = pytest.importorskip("torch")  # noqa: F841
    from lerobot_tools.errors import DatasetError
    from lerobot_tools.loaders import MixtureDataset

    with pytest.raises(DatasetError, match="no episodes selected"):
        MixtureDataset(mix, decode_video=False, cache_dir=tmp_path / "c")


# ---------------------------------------------------------------------------------------------- one set of files
@pytest.mark.parametrize("version", ["v2.1", "v3.0"])
def test_every_command_reads_the_same_files_of_a_subset(built, tmp_path, version):
    pytest.importorskip("torch")
    from lerobot_tools.dataset.subset import EpisodeSubset, files_read
    from lerobot_tools.diagnose.probe import _files_for
    from lerobot_tools.loaders import FrameDataset, MixtureDataset
    from lerobot_tools.prefetch.plan import episode_files

    root = built[version]
    mix = tmp_path / "mix.txt"
    mix.write_text(f"{root} episodes=1,4\n")
    (target,) = resolve_target(str(mix))
    ds = Dataset(root)
    read = files_read(ds, EpisodeSubset.of(target))
    want_data, want_videos = {f.relpath for f in read.data}, {f.relpath for f in read.videos}
    v21 = {"data/chunk-000/episode_000001.parquet", "data/chunk-000/episode_000004.parquet"}
    v30 = {"data/chunk-000/file-000.parquet", "data/chunk-000/file-002.parquet"}
    assert want_data == (v21 if version == "v2.1" else v30)
    # diagnose-decode probes these videos, prefetch fetches these files
    assert {rel for _, rel in _files_for(ds, target, [], [], {}, "")} == want_videos
    assert episode_files(root, [EpisodeSubset.of(target)])[0] == want_data | want_videos
    # the mixture loader opens these data files, its frame loader these data files and videos
    m = MixtureDataset(mix, decode_video=False, cache_dir=tmp_path / "c").members[0]
    assert {Path(p).relative_to(root).as_posix() for p in m.data_files} == want_data
    fd = FrameDataset(root, episodes=target.episodes, cache_dir=tmp_path / "c")
    assert set(fd.data_files) == want_data
    assert {rel for paths in fd._video_paths.values() for _, rel in paths} == want_videos


# ---------------------------------------------------------------------------------------------- prefetch --offline
def test_prefetch_offline_judges_a_path_entry_by_the_files_its_metadata_references(built, tmp_path):
    whole = tmp_path / "whole"
    shutil.copytree(built["v3.0"], whole)
    shutil.rmtree(whole / "videos")  # a dataset missing all its videos is not complete
    sub = subset_copy(built["v3.0"], tmp_path / "sub", keep={0, 1})
    mix = tmp_path / "mix.txt"
    mix.write_text("whole\nsub episodes=0-1\n")
    code, out = cli_run("prefetch", mix, "--offline", "--no-lock", "--format", "json")
    assert code == 1, out
    doc = json.loads(out)
    whole_r, sub_r = doc["datasets"]
    assert (whole_r["status"], whole_r["needed"], whole_r["present"], whole_r["missing"]) == ("incomplete", 6, 3, 3)
    cam = "videos/observation.images.front/chunk-000"
    assert whole_r["problems"] == [f"3 referenced files missing: {cam}/file-000.mp4, {cam}/file-001.mp4, "
                                   f"{cam}/file-002.mp4"]
    assert (sub_r["status"], sub_r["needed"], sub_r["present"]) == ("complete", 2, 2)
    # a placeholder or an empty file the subset reads makes it incomplete too
    (sub / "videos/observation.images.front/chunk-000/file-000.mp4").write_text(LFS)
    (sub / "data/chunk-000/file-000.parquet").write_bytes(b"")
    code, out = cli_run("prefetch", mix, "--offline", "--no-lock")
    assert code == 1
    assert f"{sub}: 1 referenced files are placeholders (lfs-pointer): videos/" in out
    assert f"{sub}: 1 referenced files are placeholders (empty): data/chunk-000/file-000.parquet" in out
    # the whole subset copy fetched, and the whole dataset restored: complete, exit 0
    shutil.copytree(built["v3.0"] / "videos", whole / "videos")
    shutil.copy(built["v3.0"] / "videos/observation.images.front/chunk-000/file-000.mp4",
                sub / "videos/observation.images.front/chunk-000/file-000.mp4")
    shutil.copy(built["v3.0"] / "data/chunk-000/file-000.parquet", sub / "data/chunk-000/file-000.parquet")
    code, out = cli_run("prefetch", mix, "--offline", "--no-lock")
    assert code == 0, out


def test_prefetch_offline_names_malformed_lines_with_their_file_and_line(tmp_path):
    mix = tmp_path / "mix.txt"
    mix.write_text("# two bad lines\norg/ds episodes=zz\nsome path with spaces\n")
    code, out = cli_run("prefetch", mix, "--offline", "--no-lock")
    assert code == 1
    assert f"{mix}:2: org/ds episodes=zz: bad episode range 'zz' (expected N or A-B)" in out
    assert f"{mix}:3: some path with spaces: unexpected token 'path' (expected key=value after the dataset)" in out


# ---------------------------------------------------------------------------------------------- smoke, reshard
def test_smoke_loads_a_subset_mixture_as_validate_passes_it(built, tmp_path):
    pytest.importorskip("torch")
    pytest.importorskip("torchcodec")
    pytest.importorskip("datasets")
    subset_copy(built["v2.1"], tmp_path / "ds", keep={0, 1})
    mix = tmp_path / "mix.txt"
    mix.write_text("ds episodes=0-1\n")
    code, out = cli_run("smoke", mix, "--cache-dir", tmp_path / "c", "-n", "2", "-b", "4", "--loader", "map",
                        "--format", "json")
    assert code == 0, out[-3000:]
    doc = json.loads(out)
    assert doc["mixture"]["status"] == "pass" and doc["mixture"]["frames"] == 11  # episodes 0 and 1: 6 + 5 frames
    assert [(f["check"], f["severity"]) for f in doc["datasets"][0]["findings"] if f["check"] != "R003"] == [
        ("F001", "info"), ("F002", "info")]


def test_reshard_acts_on_the_whole_dataset_and_says_so(built, tmp_path):
    shutil.copytree(built["v2.1"], tmp_path / "ds")
    mix = tmp_path / "mix.txt"
    mix.write_text("ds episodes=0\n")
    code, out = cli_run("reshard", mix, "--dry-run", "--format", "json")
    assert code == 0, out
    (d,) = json.loads(out)["datasets"]
    assert any("episode subset is ignored: whole data files are resharded" in n for n in d["notes"])
    assert len(d["files"]) == 6  # every data file, not the one of episode 0


def test_repair_acts_on_the_whole_dataset_and_says_so(built, tmp_path):
    """A subset target's repair plans from the whole dataset's findings (the files it rewrites hold every
    episode) and says the subset is ignored; the plan equals the plan for the dataset's own folder."""
    src = subset_copy(built["v2.1"], tmp_path / "ds", keep={0, 1})
    mix = tmp_path / "mix.txt"
    mix.write_text("ds episodes=0\n")
    code_mix, out_mix = cli_run("repair", mix, "--dry-run", "--format", "json")
    code_dir, out_dir = cli_run("repair", src, "--dry-run", "--format", "json")
    (d_mix,), (d_dir,) = json.loads(out_mix)["datasets"], json.loads(out_dir)["datasets"]
    assert any("episode subset is ignored: repair checks and rewrites the whole dataset" in n for n in d_mix["notes"])
    assert "notes" not in d_dir
    # the absent files of episodes 2-5 are errors for the whole dataset, not "not requested" infos
    assert ("F001", "error") in {(f["check"], f["severity"]) for f in d_mix["findings"]}
    assert d_mix["findings"] == d_dir["findings"] and code_mix == code_dir == 1
    code, text = cli_run("repair", mix, "--dry-run")
    assert "note: the target's episode subset is ignored" in text
