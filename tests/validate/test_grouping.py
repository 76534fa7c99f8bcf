"""Grouped findings keep the concrete reason: the group line carries the first occurrence's own message."""

from __future__ import annotations

import json
from pathlib import Path

from lerobot_tools.checks.engine import ValidateOptions
from lerobot_tools.findings import Finding, group_findings
from lerobot_tools.testing.synth import SynthSpec, build_dataset
from lerobot_tools.validate import validate


def test_group_line_is_the_first_specific_message_with_count_title_and_paths():
    g = "episode video segments of cam do not fit their files"
    fs = [Finding("F010", "error", f"videos/{i}.mp4", f"episode {i} (cam): to_timestamp {9 + i}.5 s is past the end",
                  group=g) for i in range(5)]
    (head,) = group_findings(fs)
    assert head.count == 5 and head.paths == ["videos/0.mp4", "videos/1.mp4", "videos/2.mp4"]
    assert head.message == ("episode 0 (cam): to_timestamp 9.5 s is past the end (5 occurrences: "
                            f"{g}; e.g. videos/0.mp4, videos/1.mp4, videos/2.mp4 and 2 more)")


def test_group_of_identical_messages_does_not_repeat_the_title():
    fs = [Finding("R003", "info", f"data/{i}.parquet", "no page index", group="data files have no page index")
          for i in range(2)]
    (head,) = group_findings(fs)
    assert head.message == "no page index (2 occurrences; e.g. data/0.parquet, data/1.parquet)"


def test_grouped_episode_lengths_name_the_first_episode_and_its_numbers(tmp_path: Path):
    root = build_dataset(tmp_path / "v21", SynthSpec(version="v2.1", video_codec=None, video_keys=()))
    p = root / "meta/episodes.jsonl"
    rows = [json.loads(line) for line in p.read_text().splitlines()]
    rows[0]["length"] += 1  # 20 -> 21
    rows[2]["length"] -= 2  # 25 -> 23
    p.write_text("".join(json.dumps(r) + "\n" for r in rows))
    (rep,) = validate([str(root)], ValidateOptions())
    (c005,) = [f for f in rep.findings if f.check == "C005"]
    assert c005.count == 2 and c005.severity == "error"
    assert c005.message.startswith("episode 0 has length 21 but its file has 20 rows (2 occurrences: ")
    assert c005.paths == ["data/chunk-000/episode_000000.parquet", "data/chunk-000/episode_000002.parquet"]
