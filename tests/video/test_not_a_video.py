"""A PNG (or any non-video file) saved under a video's ``.mp4`` name is an error everywhere, not a stream.

FFmpeg opens a PNG as a one-frame "video" (its image demuxer), so the header probe must not trust FFmpeg for a
file whose first bytes are not a video container (:func:`lerobot_tools.sniff.sniff`).
"""

from __future__ import annotations

import json
import shutil
import struct
import zlib
from pathlib import Path

import pytest
from click.testing import CliRunner

from lerobot_tools.cli import cli
from lerobot_tools.video.probe import probe_video

REPO = Path(__file__).resolve().parents[2]
CLEAN = REPO / "fixtures" / "datasets" / "clean_v21"
VIDEO_DIR = "videos/chunk-000/observation.images.front"


def _png(w: int = 64, h: int = 64) -> bytes:
    def chunk(tag: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + tag + data + struct.pack(">I", zlib.crc32(tag + data))

    raw = b"".join(b"\x00" + b"\x80" * (3 * w) for _ in range(h))
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b""))


@pytest.fixture(params=["episode_000000.mp4", "episode_000001.mp4"], ids=["first-file", "later-file"])
def ds(tmp_path, request):
    root = tmp_path / "ds"
    shutil.copytree(CLEAN, root)
    (root / VIDEO_DIR / request.param).write_bytes(_png())
    return root, f"{VIDEO_DIR}/{request.param}"


def test_probe_calls_a_png_not_a_video(tmp_path):
    f = tmp_path / "x.mp4"
    f.write_bytes(_png())
    for pyav in (False, True):
        p = probe_video(f, pyav=pyav)
        assert p.status == "broken" and p.problem.startswith("not a video"), (pyav, p)


@pytest.mark.parametrize("mode", [[], ["--deep"], ["--all-videos"]])
def test_validate_reports_a_png_named_mp4_as_an_error(ds, mode):
    root, rel = ds
    res = CliRunner().invoke(cli, ["validate", str(root), "--format", "json", *mode])
    assert res.exit_code == 1, res.output
    found = json.loads(res.output)["datasets"][0]["findings"]
    hits = [f for f in found if f["severity"] == "error" and (f["path"] == rel or rel in f.get("paths", []))]
    assert hits and "not a video" in hits[0]["message"], found


@pytest.mark.parametrize("mode", [[], ["--all-files"]])
def test_diagnose_decode_reports_a_png_named_mp4_as_an_error(ds, mode):
    root, rel = ds
    res = CliRunner().invoke(cli, ["diagnose-decode", str(root), "--frames", "0", "--format", "json", *mode])
    assert res.exit_code == 1, res.output
    (dd,) = json.loads(res.output)["datasets"]
    assert "not a video" in res.output and "png" not in json.dumps(dd["groups"]).lower(), dd
