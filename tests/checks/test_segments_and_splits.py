"""Severity is a promise: a segment convention loaders accept is a warning (F012), a frame query that misses is an
error (F010), checked per episode; splits that leave episodes out or point past total_episodes are flagged (C008).

Every dataset here is a copy of ``fixtures/real/multifile-pandas3`` (lerobot 0.4.4's own writer: 5 episodes of
20/24/20/16/18 frames at 30 fps, two episodes per mp4 file, the last file holding one) broken in one way, or a
committed fixture built from another dataset of ``fixtures/real/`` (``fixtures/generate.py``).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from lerobot_tools.checks.engine import ValidateOptions
from lerobot_tools.validate import validate

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
DS = FIXTURES / "datasets"
REAL = FIXTURES / "real" / "multifile-pandas3"
KEY = "videos/observation.images.front"
FPS = 30


def report(root: Path, **opts):
    (r,) = validate([str(root)], ValidateOptions(deep=True, all_videos=True, **opts))
    return r


def loud(r):
    return sorted((f.check, f.severity, f.path, f.message) for f in r.findings if f.severity in ("error", "warning"))


def copy_real(tmp_path: Path) -> Path:
    root = tmp_path / "ds"
    shutil.copytree(REAL, root)
    return root


def edit_episode(root: Path, episode: int, **cols) -> None:
    """Set columns of one episode's row in the v3.0 episode metadata (values: numbers or callables of the row)."""
    for path in sorted((root / "meta/episodes").glob("*/*.parquet")):
        table = pq.read_table(path)
        rows = table.to_pylist()
        if not any(r["episode_index"] == episode for r in rows):
            continue
        for r in rows:
            if r["episode_index"] == episode:
                for k, v in cols.items():
                    r[k] = v(r) if callable(v) else v
        pq.write_table(pa.Table.from_pylist(rows, schema=table.schema), path)


def row(root: Path, episode: int) -> dict:
    rows = [r for p in sorted((root / "meta/episodes").glob("*/*.parquet")) for r in pq.read_table(p).to_pylist()]
    return next(r for r in rows if r["episode_index"] == episode)


def test_the_real_writer_dataset_has_no_segment_finding():
    assert not {"F010", "F012"} & {f.check for f in report(REAL).findings}


# ---------------------------------------------------------------------- conventions: warning, named
def test_last_frame_timestamp_convention_is_one_grouped_warning():
    r = report(DS / "broken_segment_convention")
    assert loud(r) == [(
        "F012", "warning", "videos/observation.images.front/chunk-000/file-000.mp4",
        "episode 0 (observation.images.front): to_timestamp - from_timestamp = 0.9667 s is -1.00 frame off length / "
        "fps = 1.0000 s (to_timestamp is the last frame's timestamp, from_timestamp + (length - 1) / fps); every "
        "frame query from_timestamp + k/30 lands on a frame within tolerance_s (3 occurrences: episode video segments "
        "of observation.images.front follow a one-frame-off convention, for episodes 0-2; e.g. "
        "videos/observation.images.front/"
        "chunk-000/file-000.mp4)")]
    assert not r.has_errors


def test_segment_one_frame_longer_at_the_end_of_its_file_is_a_warning(tmp_path):
    # container duration convention: the last episode of file-000 counts one frame more; the file does not hold it,
    # but no query asks for it (queries stop at length - 1)
    root = copy_real(tmp_path)
    edit_episode(root, 1, **{f"{KEY}/to_timestamp": lambda r: r[f"{KEY}/from_timestamp"] + (r["length"] + 1) / FPS})
    r = report(root)
    assert [(f.check, f.severity, f.subject.get("episode")) for f in r.findings if f.check in ("F010", "F012")] == [
        ("F012", "warning", 1)]
    (f,) = [f for f in r.findings if f.check == "F012"]
    assert "is +1.00 frame off length / fps = 0.8000 s (the segment counts one frame more than the episode" in f.message


# ---------------------------------------------------------------------- queries that miss: error, specific
def test_overlapping_segments_are_an_error_naming_the_shared_frames(tmp_path):
    root = copy_real(tmp_path)
    edit_episode(root, 1, **{f"{KEY}/from_timestamp": lambda r: r[f"{KEY}/from_timestamp"] - 1 / FPS,
                             f"{KEY}/to_timestamp": lambda r: r[f"{KEY}/to_timestamp"] - 1 / FPS})
    assert loud(report(root)) == [(
        "F010", "error", "videos/observation.images.front/chunk-000/file-000.mp4",
        "episode 1 (observation.images.front): from_timestamp 0.6333 s is frame 19, but the previous episode's frames "
        "run to frame 19: 1 frame(s) are read for both episodes")]


def test_last_query_past_the_last_frame_is_an_error(tmp_path):
    root = copy_real(tmp_path)
    edit_episode(root, 1, length=lambda r: r["length"] + 1)  # 25 frames claimed, 24 in the file after episode 0
    r = report(root)
    f010 = [(f.severity, f.message) for f in r.findings if f.check == "F010"]
    assert f010 == [("error", "episode 1 (observation.images.front): its last frame query (from_timestamp + 24/30 = "
                              "1.4667 s) is past the last frame of the video (44 frames)")]


def test_segment_more_than_one_frame_off_is_an_error(tmp_path):
    root = copy_real(tmp_path)
    edit_episode(root, 0, **{f"{KEY}/to_timestamp": lambda r: r[f"{KEY}/from_timestamp"] + (r["length"] - 2) / FPS})
    r = report(root)
    assert [(f.check, f.severity, f.message) for f in r.findings if f.check in ("F010", "F012")] == [
        ("F010", "error", "episode 0 (observation.images.front): segment lasts 0.6000 s but the episode has 20 frames "
                          "(0.6667 s)")]


def test_off_grid_start_is_an_error(tmp_path):
    root = copy_real(tmp_path)
    edit_episode(root, 3, **{f"{KEY}/from_timestamp": lambda r: r[f"{KEY}/from_timestamp"] + 0.004,
                             f"{KEY}/to_timestamp": lambda r: r[f"{KEY}/to_timestamp"] + 0.004})
    (f,) = [f for f in report(root).findings if f.check == "F010"]
    assert f.severity == "error" and f.subject == {"video_key": "observation.images.front", "episode": 3}
    assert "is 4.00e-03 s off the 1/30 s frame grid" in f.message


# ---------------------------------------------------------------------- splits
def test_splits_that_leave_an_episode_out_and_point_past_the_end():
    r = report(DS / "broken_splits")
    assert loud(r) == [
        ("C008", "warning", "meta/info.json",
         "splits leave 1 of the 2 episode(s) of total_episodes out of every split: episode(s) 1"),
        ("C008", "warning", "meta/info.json",
         "splits['test'] = '2:4' points past the last episode (total_episodes = 2); a split-aware reader asks for "
         "episodes that do not exist"),
    ]


@pytest.mark.parametrize("total, splits, expected", [
    (6, {"train": "0:5"}, [("C001", "total_episodes is 6 but the episode metadata has 5 episode(s)")]),
    (6, {"train": "0:6"}, [("C001", "total_episodes is 6 but the episode metadata has 5 episode(s)")]),
    (5, {"train": "0:4", "val": "4:5"}, []),
    (5, {"train": "0:5", "val": "3:4"}, []),  # overlapping splits leave nothing out
])
def test_splits_agreeing_with_info_json_or_the_metadata_are_not_flagged(tmp_path, total, splits, expected):
    root = copy_real(tmp_path)
    info = json.loads((root / "meta/info.json").read_text())
    info.update(total_episodes=total, splits=splits)
    (root / "meta/info.json").write_text(json.dumps(info, indent=4))
    assert [(c, m) for c, _, _, m in loud(report(root))] == expected
