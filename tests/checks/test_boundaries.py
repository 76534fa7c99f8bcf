"""Tolerances and thresholds, through the CLI flag that sets them: a value just inside passes, just outside fails.

Datasets are built with :mod:`lerobot_tools.testing.synth` (real parquet) and then given one measured defect, so
each boundary is placed half a unit of that defect away.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from click.testing import CliRunner

from lerobot_tools.cli import cli
from lerobot_tools.testing.synth import SynthSpec, build_dataset

MB = 1024 * 1024


def checks(*args: str) -> dict[str, list[str]]:
    """``lrtool validate ARGS --format json``: check ID -> messages."""
    r = CliRunner().invoke(cli, ["validate", *args, "--format", "json"])
    assert r.exit_code in (0, 1), r.output
    out: dict[str, list[str]] = {}
    for ds in json.loads(r.stdout)["datasets"]:  # a report without datasets is a failure, not "no findings"
        for f in ds.get("findings", []):
            out.setdefault(f["check"], []).append(f["message"])
    return out


def no_video(root: Path, **kw) -> Path:
    spec = dict(video_keys=(), video_codec=None)
    spec.update(kw)
    return build_dataset(root, SynthSpec(**spec))


def data_files(root: Path) -> list[Path]:
    return sorted((root / "data").rglob("*.parquet"))


def test_d003_tolerance_s_boundary(tmp_path):
    root = no_video(tmp_path / "ds", episode_lengths=(20, 15))
    f = data_files(root)[0]
    t = pq.read_table(f)
    i = t.schema.get_field_index("timestamp")
    ts = t.column(i).to_numpy().copy()
    ts[5] = ts[5] + np.float32(0.05)
    t = t.set_column(i, t.schema.field(i), pa.array(ts, t.schema.field(i).type))
    pq.write_table(t, f)
    err = float(abs(np.float64(ts[5]) - t.column("frame_index").to_numpy()[5] / 10))
    assert "D003" in checks(str(root), "--deep")  # default 1e-4
    assert "D003" not in checks(str(root), "--deep", "--tolerance-s", repr(err + 5e-6))
    found = checks(str(root), "--deep", "--tolerance-s", repr(err - 5e-6))
    assert len(found.get("D003", [])) == 1 and "episode 0: 1 of 20 timestamp(s)" in found["D003"][0], found
    assert "D003" not in checks(str(root), "--tolerance-s", "0")  # D003 is a --deep check


def test_r002_row_group_mb_boundary(tmp_path):
    root = no_video(tmp_path / "ds", episode_lengths=(400, 300), state_dim=32, action_dim=32)
    md = pq.ParquetFile(data_files(root)[0]).metadata
    biggest = max(md.row_group(i).total_byte_size for i in range(md.num_row_groups))
    assert biggest > 2 * 0.001 * MB  # above the smallest limit the flag accepts
    inside = (biggest + 0.5) / (2 * MB)
    outside = (biggest - 0.5) / (2 * MB)
    assert "R002" not in checks(str(root), "--row-group-mb", repr(inside))
    found = checks(str(root), "--row-group-mb", repr(outside))
    assert found.get("R002") and found["R002"][0].startswith("1 row group(s) above"), found


def test_i005_plausible_fps_upper_bound(tmp_path):
    """fps up to MAX_FPS (100000) is a frame rate; one more is not (a corrupted or mistyped value)."""
    root = no_video(tmp_path / "ds", episode_lengths=(5, 4))
    info_path = root / "meta/info.json"
    info = json.loads(info_path.read_text())
    info["fps"] = 100_000
    info_path.write_text(json.dumps(info, indent=4))
    assert "I005" not in checks(str(root))
    info["fps"] = 100_001
    info_path.write_text(json.dumps(info, indent=4))
    assert checks(str(root)).get("I005") == [
        "fps 100001 is not a plausible frame rate (more than 100000 frames per second)"]


def test_g008_relative_tolerance_boundary(tmp_path):
    """meta/stats.json max[0] of ``action`` moved by 0.9x / 1.1x the G008 tolerance (1e-4 of the dimension's
    magnitude max(|min|, |max|) of the per-episode aggregate): the first is rounding, the second is stale."""
    root = no_video(tmp_path / "ds")
    path = root / "meta/stats.json"
    stats = json.loads(path.read_text())
    assert "G008" not in checks(str(root))
    a = stats["action"]
    tol = 1e-4 * max(abs(a["min"][0]), abs(a["max"][0])) + 1e-12
    original = a["max"][0]
    for factor, stale in ((0.9, False), (1.1, True), (-0.9, False), (-1.1, True)):
        a["max"][0] = original + factor * tol
        path.write_text(json.dumps(stats, indent=4))
        found = checks(str(root))
        assert ("G008" in found) == stale, (factor, found)
        if stale:
            assert len(found["G008"]) == 1 and "'action'" in found["G008"][0] and "max[0]" in found["G008"][0], found
