"""Shared by the scale-out tests: a synthetic mixture with large multi-file datasets, and CLI helpers.

The mixture holds two datasets large enough to be split by file over a few tasks, each with defects
found only by reading particular files (so a task that skipped its files would change the report):

- ``big_v30`` (v3.0, 8 episodes in 4 data files and 4 videos): drifting timestamps in episode 3 (D003),
  frame_index out of sequence in episode 6 (D001), the video of episodes 4-5 deleted (F002), and the
  episode_index pages of data file 2 corrupted behind a valid footer (F007 "data pages cannot be read");
- ``big_v21`` (v2.1, 6 one-episode data files, no videos): drifting timestamps in episode 2 and the pages
  of episode 4's file corrupted (global index positions unknown after it);

plus three small fixtures datasets (clean v2.1, clean v3.0, a missing task label).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "fixtures" / "datasets"


def _corrupt_column_pages(path: Path, column: str) -> None:
    """Overwrite the last bytes of ``column``'s chunk in every row group; the footer stays valid."""
    import pyarrow.parquet as pq

    md = pq.ParquetFile(path).metadata
    names = [md.schema.column(i).path for i in range(md.num_columns)]
    data = bytearray(path.read_bytes())
    for rg in range(md.num_row_groups):
        col = md.row_group(rg).column(names.index(column))
        start = col.dictionary_page_offset or col.data_page_offset
        end = start + col.total_compressed_size
        data[end - 8:end] = b"\xff" * 8
    path.write_bytes(bytes(data))


def build_mixture(root: Path) -> Path:
    """Write the datasets described in the module docstring under ``root``; return the mixture file."""
    from lerobot_tools.testing.synth import SynthSpec, build_dataset

    def hook_v30(ep, cols):
        if ep == 3:
            cols["timestamp"] = cols["timestamp"] + 0.01
        if ep == 6:
            cols["frame_index"][2] = 7

    big30 = build_dataset(root / "big_v30", SynthSpec(version="v3.0", episode_lengths=[12] * 8, episodes_per_file=2,
                                                      video_size=(32, 32)), episode_hook=hook_v30)
    (big30 / "videos/observation.images.front/chunk-000/file-002.mp4").unlink()
    _corrupt_column_pages(big30 / "data/chunk-000/file-002.parquet", "episode_index")

    def hook_v21(ep, cols):
        if ep == 2:
            cols["timestamp"] = cols["timestamp"] * 1.5

    big21 = build_dataset(root / "big_v21", SynthSpec(version="v2.1", episode_lengths=[12] * 6, video_keys=(),
                                                      video_codec=None), episode_hook=hook_v21)
    _corrupt_column_pages(big21 / "data/chunk-000/episode_000004.parquet", "episode_index")
    mixture = root / "mixture.txt"
    lines = ["# synthetic scale-out mixture", str(FIXTURES / "clean_v21"), "big_v30",
             str(FIXTURES / "broken_missing_task_label"), "big_v21", str(FIXTURES / "clean_v30") + " episodes=0-1"]
    mixture.write_text("\n".join(lines) + "\n")
    return mixture


def env(**extra: str) -> dict[str, str]:
    """The environment for CLI subprocesses: this checkout's lerobot_tools first on the path."""
    e = dict(os.environ)
    e["PYTHONPATH"] = os.pathsep.join([str(REPO), e.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    e.update(extra)
    return e


def lrtool(*args, cwd: Path | None = None, timeout: float = 300, **extra_env: str) -> subprocess.CompletedProcess:
    """Run ``python -m lerobot_tools ARGS`` and return the completed process (text output)."""
    return subprocess.run([sys.executable, "-m", "lerobot_tools", *map(str, args)], cwd=cwd, env=env(**extra_env),
                          capture_output=True, text=True, timeout=timeout)


def comparable(json_text: str) -> dict:
    """A validate JSON report without its timing (``summary.seconds``)."""
    doc = json.loads(json_text)
    doc["summary"].pop("seconds", None)
    return doc
