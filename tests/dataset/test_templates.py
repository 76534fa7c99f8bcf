"""The path templates of meta/info.json (``data_path``, ``video_path``): every rule of
lerobot_tools.dataset.templates with its exact one-line message.

A template is text from whoever published the dataset, and ``str.format`` does what it says; these are the rules
I008 reports and every reader relies on (tests/io/test_bounded.py runs hostile templates through the real commands).
"""

from __future__ import annotations

import pytest

from lerobot_tools.dataset.templates import (
    V2_DATA_PATH, V2_VIDEO_PATH, V3_DATA_PATH, V3_VIDEO_PATH, escapes_root, format_template, template_problems,
)


@pytest.mark.parametrize("template, layout, video", [
    (V2_DATA_PATH, "v2", False), (V2_VIDEO_PATH, "v2", True), (V3_DATA_PATH, "v3", False), (V3_VIDEO_PATH, "v3", True),
])
def test_lerobots_own_templates_have_no_problem(template, layout, video):
    assert template_problems(template, layout=layout, video=video) == []


@pytest.mark.parametrize("template, layout, video, problems", [
    ("data/chunk-{episode_chunk:03d}/file.parquet", "v2", False,
     ["has no {episode_index} placeholder, so every episode would share one file"]),
    ("data/chunk-{chunk_index:03d}/x.parquet", "v3", False, ["must contain {chunk_index} and {file_index}"]),
    ("videos/chunk-{chunk_index:03d}/file-{file_index:03d}.mp4", "v3", True,
     ["has no {video_key} placeholder, so every camera would share one file"]),
    ("data/{chunk_index}/{episode_index}.parquet", "v2", False,
     ["uses unknown placeholder {chunk_index} (allowed: episode_chunk, episode_index, video_key)"]),
    ("data/{episode_chunk}/{chunk_index}-{file_index}.parquet", "v3", False,
     ["uses unknown placeholder {episode_chunk} (allowed: chunk_index, file_index, video_key)"]),
    ("/etc/{chunk_index}/{file_index}.parquet", "v3", False, ["points outside the dataset root"]),
    ("\\\\server\\share\\{chunk_index}-{file_index}.parquet", "v3", False, ["points outside the dataset root"]),
    ("../{chunk_index}/{file_index}.parquet", "v3", False, ["points outside the dataset root"]),
    ("x{chunk_index}{file_index}/../..", "v3", False, ["points outside the dataset root"]),
    ("data/{episode_index.__class__}/{episode_index}.parquet", "v2", False,
     ["uses attribute or index access in {episode_index.__class__}; only plain placeholders are allowed"]),
    (5, "v2", False, ["must be a string, got int"]),
])
def test_each_rule_says_what_is_wrong(template, layout, video, problems):
    assert template_problems(template, layout=layout, video=video) == problems


def test_a_template_python_cannot_format_with_these_values_is_reported():
    template = "data/{episode_chunk}/{episode_index:s}.parquet"  # 's' is not a format for an integer
    (problem,) = template_problems(template, layout="v2", video=False)
    assert problem.startswith(f"cannot be formatted (template {template!r} cannot be expanded (ValueError: ")


def test_format_template_refuses_before_formatting():
    hostile = "data/{episode_index.__class__}"
    with pytest.raises(ValueError) as exc:
        format_template(hostile, {"episode_index": 0}, "data_path")
    assert str(exc.value) == (f"data_path {hostile!r} uses attribute or index access in {{episode_index.__class__}}; "
                              "only plain placeholders are allowed")
    with pytest.raises(ValueError) as exc:
        format_template(5, {}, "data_path")
    assert str(exc.value) == "data_path 5 is not a string"
    with pytest.raises(ValueError) as exc:
        format_template(V2_DATA_PATH, {"episode_chunk": 0}, "data_path")
    assert str(exc.value) == f"data_path {V2_DATA_PATH!r} cannot be expanded (KeyError: 'episode_index')"
    assert format_template(V2_DATA_PATH, {"episode_chunk": 1, "episode_index": 42}) == \
        "data/chunk-001/episode_000042.parquet"


@pytest.mark.parametrize("relpath, escapes", [
    ("/abs/x.parquet", True), ("\\x.parquet", True), ("..", True), ("../x", True), ("a/../../x", True),
    ("a/..", False), ("a/b/c.parquet", False), ("..x/y.parquet", False), ("a/..b", False),
])
def test_escapes_root_is_lexical(relpath, escapes):
    assert escapes_root(relpath) is escapes
