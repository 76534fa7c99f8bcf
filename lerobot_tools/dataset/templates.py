"""``data_path`` / ``video_path`` templates of ``meta/info.json``.

Sources: lerobot-format §2. v2.x templates use ``{episode_chunk}``, ``{episode_index}``, ``{video_key}``;
v3.0 templates use ``{chunk_index}``, ``{file_index}``, ``{video_key}``. Readers format them with
``str.format``, so a template may only use those placeholders with integer/string format specs.
"""

from __future__ import annotations

import os
import string
from pathlib import PurePosixPath

V2_DATA_PATH = "data/chunk-{episode_chunk:03d}/episode_{episode_index:06d}.parquet"
V2_VIDEO_PATH = "videos/chunk-{episode_chunk:03d}/{video_key}/episode_{episode_index:06d}.mp4"
V3_DATA_PATH = "data/chunk-{chunk_index:03d}/file-{file_index:03d}.parquet"
V3_VIDEO_PATH = "videos/{video_key}/chunk-{chunk_index:03d}/file-{file_index:03d}.mp4"
V3_EPISODES_PATH = "meta/episodes/chunk-{chunk_index:03d}/file-{file_index:03d}.parquet"

V2_FIELDS = {"episode_chunk", "episode_index", "video_key"}
V3_FIELDS = {"chunk_index", "file_index", "video_key"}


def template_fields(template: str) -> list[tuple[str, str]]:
    """Return the ``(field_name, format_spec)`` pairs of a ``str.format`` template.

    Raises:
        ValueError: the template is not a valid format string (unbalanced braces, ...).
    """
    out = []
    for _literal, field, spec, _conv in string.Formatter().parse(template):
        if field is not None:
            out.append((field, spec or ""))
    return out


def template_problems(template: object, *, layout: str, video: bool) -> list[str]:
    """List what is wrong with a path template, as one-line messages (empty list = fine).

    Args:
        template: the value of ``data_path`` or ``video_path`` from info.json.
        layout: ``"v2"`` or ``"v3"``; decides the allowed placeholders.
        video: True for ``video_path`` (which must contain ``{video_key}``).
    """
    if not isinstance(template, str):
        return [f"must be a string, got {type(template).__name__}"]
    allowed = V2_FIELDS if layout == "v2" else V3_FIELDS
    try:
        fields = template_fields(template)
    except ValueError as exc:
        return [f"is not a valid format string ({exc})"]
    problems = []
    names = [f for f, _ in fields]
    for name, spec in fields:
        if name not in allowed:
            problems.append(f"uses unknown placeholder {{{name}}} (allowed: {', '.join(sorted(allowed))})")
    if not problems:
        sample = {"episode_chunk": 0, "episode_index": 0, "chunk_index": 0, "file_index": 0, "video_key": "cam"}
        try:
            rendered = template.format(**sample)
        except (ValueError, KeyError, IndexError) as exc:
            problems.append(f"cannot be formatted ({exc})")
            rendered = None
        if rendered is not None and escapes_root(rendered):
            problems.append("points outside the dataset root")
    if video and "video_key" not in names:
        problems.append("has no {video_key} placeholder, so every camera would share one file")
    if layout == "v2" and "episode_index" not in names:
        problems.append("has no {episode_index} placeholder, so every episode would share one file")
    if layout == "v3" and not {"chunk_index", "file_index"} <= set(names):
        problems.append("must contain {chunk_index} and {file_index}")
    return problems


def escapes_root(relpath: str) -> bool:
    """True when a relative path leaves its root (absolute, or ``..`` climbing above it).

    The check is lexical on purpose: Hub snapshot folders are symlinks into ``blobs/``, so resolving
    links would wrongly flag every cached dataset.
    """
    if os.path.isabs(relpath) or relpath.startswith(("/", "\\")):
        return True
    norm = os.path.normpath(relpath)
    return norm == ".." or norm.startswith(".." + os.sep) or PurePosixPath(relpath).is_absolute()
