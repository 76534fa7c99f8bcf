"""``data_path`` / ``video_path`` templates of ``meta/info.json``.

Sources: docs/format.md#layouts (lerobot 0.4.4 ``datasets/utils.py`` ``DEFAULT_DATA_PATH``, ``DEFAULT_VIDEO_PATH``).
v2.x templates use ``{episode_chunk}``, ``{episode_index}``, ``{video_key}``;
v3.0 templates use ``{chunk_index}``, ``{file_index}``, ``{video_key}``. Readers format them with
``str.format``, so a template may only use those placeholders with integer/string format specs.

A template comes from the dataset's info.json, i.e. from whoever published it, and ``str.format`` will do
whatever it says: ``{episode_index.__class__}`` reads attributes, ``{video_key[0]}`` indexes, and
``{episode_index:>2000000000}`` allocates gigabytes. :func:`template_error` therefore accepts only the known
placeholder names (no attribute or index access, no ``!r``/``!s`` conversion, no nested ``{}`` in a spec) and
format specs of the standard mini-language with a width and precision of at most :data:`MAX_SPEC_WIDTH`;
:func:`format_template` checks before it formats, and every lrtool reader formats through it.
"""

from __future__ import annotations

import os
import re
import string
from functools import lru_cache
from pathlib import PurePosixPath

V2_DATA_PATH = "data/chunk-{episode_chunk:03d}/episode_{episode_index:06d}.parquet"
V2_VIDEO_PATH = "videos/chunk-{episode_chunk:03d}/{video_key}/episode_{episode_index:06d}.mp4"
V3_DATA_PATH = "data/chunk-{chunk_index:03d}/file-{file_index:03d}.parquet"
V3_VIDEO_PATH = "videos/{video_key}/chunk-{chunk_index:03d}/file-{file_index:03d}.mp4"
V3_EPISODES_PATH = "meta/episodes/chunk-{chunk_index:03d}/file-{file_index:03d}.parquet"

V2_FIELDS = {"episode_chunk", "episode_index", "video_key"}
V3_FIELDS = {"chunk_index", "file_index", "video_key"}
ALL_FIELDS = V2_FIELDS | V3_FIELDS

MAX_SPEC_WIDTH = 32
"""Largest width or precision accepted in a placeholder's format spec (lerobot uses 3 and 6)."""
MAX_TEMPLATE_CHARS = 4096

# the standard format-spec mini-language (Python docs, "Format Specification Mini-Language"), without nesting
_SPEC_RE = re.compile(r"^(?:(?P<fill>[^{}])?(?P<align>[<>=^]))?(?P<sign>[-+ ])?z?#?(?P<zero>0)?(?P<width>\d+)?"
                      r"[,_]?(?:\.(?P<precision>\d+))?(?P<type>[bcdeEfFgGnosxX%])?$")


@lru_cache(maxsize=256)
def template_error(template: str, allowed: frozenset = frozenset(ALL_FIELDS)) -> str | None:
    """Why ``template`` must not be given to ``str.format``, or None when it is safe (see module docstring).

    Args:
        template: a ``data_path``/``video_path`` value.
        allowed: the placeholder names accepted.
    """
    if len(template) > MAX_TEMPLATE_CHARS:
        return f"is longer than {MAX_TEMPLATE_CHARS} characters"
    try:
        parts = list(string.Formatter().parse(template))
    except ValueError as exc:
        return f"is not a valid format string ({exc})"
    for _literal, name, spec, conv in parts:
        if name is None:
            continue
        if name not in allowed:
            if name == "" or name.isdigit():
                return f"uses a positional placeholder {{{name}}} (allowed: {', '.join(sorted(allowed))})"
            if "." in name or "[" in name:
                return f"uses attribute or index access in {{{name}}}; only plain placeholders are allowed"
            return f"uses unknown placeholder {{{name}}} (allowed: {', '.join(sorted(allowed))})"
        if conv:
            return f"uses a conversion !{conv} in {{{name}}}; only plain placeholders are allowed"
        if spec:
            m = _SPEC_RE.match(spec)
            if m is None:
                return f"has an invalid or nested format spec {{{name}:{spec}}}"
            for key in ("width", "precision"):
                if m.group(key) and (len(m.group(key)) > 3 or int(m.group(key)) > MAX_SPEC_WIDTH):
                    return f"has a {key} over {MAX_SPEC_WIDTH} in {{{name}:{spec}}}"
    return None


def format_template(template: str, values: dict, name: str = "template") -> str:
    """``template.format(**values)`` after :func:`template_error` accepted it.

    Raises:
        ValueError: the template is refused, or cannot be formatted with these values (one line naming ``name``).
    """
    problem = template_error(template) if isinstance(template, str) else "is not a string"
    if problem:
        raise ValueError(f"{name} {template!r:.80} {problem}")
    try:
        return template.format(**values)
    except (KeyError, ValueError, IndexError, TypeError, AttributeError) as exc:
        raise ValueError(f"{name} {template!r:.80} cannot be expanded ({type(exc).__name__}: {exc})") from None


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
    unsafe = template_error(template)
    if unsafe is not None:
        return [unsafe]
    fields = template_fields(template)
    problems = []
    names = [f for f, _ in fields]
    for name, spec in fields:
        if name not in allowed:
            problems.append(f"uses unknown placeholder {{{name}}} (allowed: {', '.join(sorted(allowed))})")
    if not problems:
        sample = {"episode_chunk": 0, "episode_index": 0, "chunk_index": 0, "file_index": 0, "video_key": "cam"}
        try:
            rendered = format_template(template, sample)
        except ValueError as exc:
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
