"""Files in the wrong place: where the referenced files that are missing actually are.

When data or video files are missing where ``data_path`` / ``video_path`` point, the same files often sit in a
layout a user or a converter produced next to the expected one: another top folder (``video/`` or
``videos_old/`` beside ``videos/``), the other codebase version's order of camera and chunk folders
(v2.1 ``videos/chunk-000/<key>/`` against v3.0 ``videos/<key>/chunk-000/``), a file-name spelling of stale
documentation (``file_000.mp4``, ``file-0000.mp4``), or another chunk folder (``chunk-001`` instead of
``chunk-000``). :func:`locate_missing` looks for every missing file under those neighbouring layouts and
says where and how many: ``"43 of the 50 expected video files are under video/…; 7 are absent everywhere"``.

Only names the dataset's own files would have are looked up (a few ``stat`` calls per missing file and
candidate layout); nothing is read. Sources: docs/format.md#layouts (the v2.1 and v3.0 templates, and the stale
spellings of lerobot's documentation).
"""

from __future__ import annotations

import os
import re
import string
from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import Any

from lerobot_tools.dataset import templates as tpl

#: Neighbouring templates per layout and file kind: the defaults, the other version's camera/chunk order,
#: no chunk folder, and the file-name spellings of stale documentation. The expected template is skipped.
NEIGHBOUR_TEMPLATES: dict[tuple[str, str], list[str]] = {
    ("v2", "video"): [
        tpl.V2_VIDEO_PATH,
        "videos/{video_key}/chunk-{episode_chunk:03d}/episode_{episode_index:06d}.mp4",
        "videos/{video_key}/episode_{episode_index:06d}.mp4",
    ],
    ("v3", "video"): [
        tpl.V3_VIDEO_PATH,
        "videos/chunk-{chunk_index:03d}/{video_key}/file-{file_index:03d}.mp4",
        "videos/{video_key}/chunk-{chunk_index:03d}/file_{file_index:03d}.mp4",
        "videos/{video_key}/chunk-{chunk_index:03d}/file-{file_index:04d}.mp4",
    ],
    ("v2", "data"): [tpl.V2_DATA_PATH, "data/episode_{episode_index:06d}.parquet"],
    ("v3", "data"): [tpl.V3_DATA_PATH, "data/chunk-{chunk_index:03d}/file_{file_index:03d}.parquet"],
}

_CHUNK_DIR = re.compile(r"^chunk-\d+$")
#: At most this many other top-level folders are tried as a replacement of the expected one.
MAX_TOP_FOLDERS = 20


@dataclass
class Expected:
    """A file the metadata references: its path and the values its template was expanded with."""

    relpath: str
    values: dict[str, Any]


@dataclass
class FoundLayout:
    """Missing files found under one neighbouring layout.

    Attributes:
        template: the layout as a template (``"video/{video_key}/chunk-{chunk_index:03d}/file-{file_index:03d}.mp4"``),
            or None for files found in another chunk folder (no one template describes them).
        where: a short description for messages (``"video/…"``, ``"videos/chunk-…/<key>/… (the v2.1 order)"``).
        pairs: ``(expected path, path where the file is)``.
    """

    template: str | None
    where: str
    pairs: list[tuple[str, str]] = field(default_factory=list)


@dataclass
class Relocation:
    """Where the missing files of one kind are.

    Attributes:
        kind: ``"data"`` or ``"video"``.
        expected: how many files the metadata references.
        missing: how many of them are missing where the template points.
        layouts: the neighbouring layouts holding some, the most files first.
        absent: expected paths found nowhere.
    """

    kind: str
    expected: int
    missing: int
    layouts: list[FoundLayout] = field(default_factory=list)
    absent: list[str] = field(default_factory=list)

    @property
    def found(self) -> int:
        return sum(len(lay.pairs) for lay in self.layouts)

    @property
    def single_template(self) -> FoundLayout | None:
        """The one layout (with a template) that holds every found file, or None."""
        if len(self.layouts) == 1 and self.layouts[0].template is not None:
            return self.layouts[0]
        return None

    def message(self, name: str = "the template") -> str:
        """Where the missing files are, in one line.

        ``"43 of the 50 expected video files are under video/… (e.g. video/cam/chunk-000/file-000.mp4); 7 are
        absent everywhere (e.g. ...)"`` when every expected file is missing where ``name`` (``video_path``)
        points; ``"10 of the 50 expected video files are missing where video_path points: 7 are under ...;
        3 are absent everywhere"`` when some are there. Files found in several layouts are listed layout by layout.
        """
        parts = []
        for i, lay in enumerate(self.layouts):
            n = len(lay.pairs)
            if i == 0 and self.missing == self.expected:
                head = (f"all {n} expected {self.kind} files are" if n == self.expected
                        else f"{n} of the {self.expected} expected {self.kind} files are")
            else:
                head = f"{n} {'is' if n == 1 else 'are'}"
            parts.append(f"{head} under {lay.where} (e.g. {lay.pairs[0][1]})")
        if self.absent:
            n = len(self.absent)
            parts.append(f"{n} {'is' if n == 1 else 'are'} absent everywhere (e.g. {self.absent[0]})")
        text = "; ".join(parts)
        if self.missing != self.expected:
            verb = "is" if self.missing == 1 else "are"
            text = (f"{self.missing} of the {self.expected} expected {self.kind} files {verb} missing where {name} "
                    f"points: {text}")
        return text


def _top(template: str) -> str | None:
    literal = next(iter(string.Formatter().parse(template)))[0]
    return literal.split("/", 1)[0] if "/" in literal else None


def _swap_top(template: str, new_top: str) -> str:
    return new_top + template[template.index("/"):]


def _describe(template: str, expected: str) -> str:
    """``"video/…"`` for another top folder, else the template with its placeholders shortened."""
    top, exp_top = _top(template), _top(expected)
    if top != exp_top and top is not None:
        return f"{top}/…"
    short = re.sub(r"\{video_key\}", "<key>", template)
    short = re.sub(r"\{(\w+)(:[^}]*)?\}", "…", short)
    order = ""
    if "{video_key}" in template and "{video_key}" in expected:
        key_first = template.index("{video_key}") < template.index("chunk-") if "chunk-" in template else None
        exp_key_first = expected.index("{video_key}") < expected.index("chunk-") if "chunk-" in expected else None
        if key_first is not None and exp_key_first is not None and key_first != exp_key_first:
            order = " (the camera and chunk folders in the other order)"
    return f"{short}{order}"


def _format(template: str, values: dict[str, Any]) -> str | None:
    try:
        rel = tpl.format_template(template, values)
    except ValueError:
        return None
    return None if tpl.escapes_root(rel) else rel


def candidate_templates(root: os.PathLike | str, expected_template: str, layout: str, kind: str) -> list[str]:
    """Neighbouring templates to look in, in the order they are tried: the known neighbours under the expected
    top folder, then each of them under every other top-level folder of the dataset (``meta`` and hidden
    folders excepted; at most :data:`MAX_TOP_FOLDERS`)."""
    base = [t for t in NEIGHBOUR_TEMPLATES.get((layout, kind), []) if t != expected_template]
    exp_top = _top(expected_template)
    # the expected template itself under another top folder comes first among the moved ones
    moved_from = [expected_template] + [t for t in base if _top(t) == _top(expected_template)]
    try:
        tops = sorted(e.name for e in os.scandir(root) if e.is_dir(follow_symlinks=False)
                      and not e.name.startswith(".") and e.name not in ("meta", exp_top, "images"))
    except OSError:
        tops = []
    out = list(base)
    for top in tops[:MAX_TOP_FOLDERS]:
        for t in moved_from:
            if _top(t) is not None:
                out.append(_swap_top(t, top))
    return list(dict.fromkeys(out))


def locate_missing(root: os.PathLike | str, expected_template: str, layout: str, kind: str,
                   expected: list[Expected], missing: list[Expected]) -> Relocation:
    """Look for ``missing`` files under the neighbouring layouts of ``expected_template``.

    Args:
        root: the dataset folder.
        expected_template: ``data_path`` or ``video_path`` as info.json has it.
        layout: ``"v2"`` or ``"v3"``.
        kind: ``"data"`` or ``"video"``.
        expected: every referenced file (for the count in messages).
        missing: the referenced files that are missing where the template points.

    Returns:
        A :class:`Relocation`: each missing file is assigned to the first candidate layout
        (:func:`candidate_templates`) where a regular file of that name exists, else to another chunk folder of
        the expected place holding it, else to ``absent``. A path that leaves the root is never looked at, and a
        file found through a symlink that leads out of the dataset (F013) is not taken.
    """
    from lerobot_tools._contain import containment_root, is_inside

    root = os.fspath(root)
    base = containment_root(root)
    result = Relocation(kind, len(expected), len(missing))
    if not missing:
        return result
    layouts: dict[str, FoundLayout] = {}
    left = list(missing)
    for cand in candidate_templates(root, expected_template, layout, kind):
        still = []
        for item in left:
            rel = _format(cand, item.values)
            if rel is not None and rel != item.relpath and os.path.isfile(os.path.join(root, rel)) \
                    and is_inside(os.path.join(root, rel), base):
                lay = layouts.setdefault(cand, FoundLayout(cand, _describe(cand, expected_template)))
                lay.pairs.append((item.relpath, rel))
            else:
                still.append(item)
        left = still
        if not left:
            break
    other_chunk = FoundLayout(None, "another chunk folder")
    for item in left:
        rel = _other_chunk(root, item.relpath)
        if rel is not None and is_inside(os.path.join(root, rel), base):
            other_chunk.pairs.append((item.relpath, rel))
        else:
            result.absent.append(item.relpath)
    result.layouts = sorted(layouts.values(), key=lambda lay: -len(lay.pairs))
    if other_chunk.pairs:
        result.layouts.append(other_chunk)
    return result


def _other_chunk(root: str, rel: str) -> str | None:
    """The same file name in a sibling ``chunk-NNN`` folder of the expected one (the first, sorted), or None."""
    parts = PurePosixPath(rel).parts
    for i, part in enumerate(parts[:-1]):
        if not _CHUNK_DIR.match(part):
            continue
        parent = os.path.join(root, *parts[:i])
        try:
            siblings = sorted(e.name for e in os.scandir(parent) if e.is_dir(follow_symlinks=False)
                              and _CHUNK_DIR.match(e.name) and e.name != part)
        except OSError:
            return None
        for sib in siblings:
            cand = PurePosixPath(*parts[:i], sib, *parts[i + 1:]).as_posix()
            if os.path.isfile(os.path.join(root, cand)):
                return cand
    return None


def expected_from_paths(template: str, relpaths: list[str], video_key: str | None = None) -> list[Expected]:
    """:class:`Expected` entries for paths a template expanded to, with the values read back from each path
    (``chunk_index``, ``file_index``, ``episode_index``, ``episode_chunk`` as integers; ``video_key``).

    Paths the template does not match are left out (a template too unusual to read back).
    """
    from lerobot_tools.dataset.ondisk import template_regex

    try:
        rx = template_regex(template, video_key)
    except ValueError:
        return []
    out = []
    for rel in relpaths:
        m = rx.match(rel)
        if m is None:
            continue
        values: dict[str, Any] = {k: int(v) for k, v in m.groupdict().items() if v is not None and k != "video_key"}
        values["video_key"] = video_key if video_key is not None else m.groupdict().get("video_key")
        out.append(Expected(rel, values))
    return out
