"""Data and video files found from the path templates and the folders on disk, without episode metadata.

When the episode metadata cannot be read (a Git LFS pointer, an error page, a truncated file), the files it
would reference can still be listed and checked: v2.x names one data file and one mp4 per camera per
episode (``data_path`` / ``video_path`` with ``{episode_index}``), so ``info.json``'s ``total_episodes``
names every expected file; v3.0 names files by ``{chunk_index}`` / ``{file_index}``, which only the episode
metadata lists, so the files on disk whose names fit the template are taken. Nothing here reads the episode
metadata, so no count derived from it can leak into a finding.

Sources: docs/format.md#layouts (templates and their placeholders), docs/format.md#info-json (``total_episodes``).
"""

from __future__ import annotations

import re
import string
from dataclasses import dataclass

from lerobot_tools.dataset import templates as tpl
from lerobot_tools.dataset.model import DataFile, Dataset, VideoFile
from lerobot_tools.errors import DatasetError

#: At most this many files are named from ``total_episodes`` (a corrupt counter must not run away).
MAX_EXPECTED = 1_000_000
#: ... and at most this many more than the files on disk that fit the template: ``total_episodes`` is a number read
#: from a file (``10**30`` is valid JSON), so the files it names beyond what exists are not listed one by one
#: (:attr:`LayoutFiles.unnamed` counts them).
MAX_MISSING_NAMED = 1_000

_NUM_FIELDS = {"episode_index", "episode_chunk", "chunk_index", "file_index"}


def template_regex(template: str, video_key: str | None = None) -> re.Pattern[str]:
    """A regex matching every path a ``str.format`` template can expand to.

    Integer placeholders (``{episode_index:06d}``, ``{chunk_index:03d}``, ...) match runs of digits (at least
    the zero-padded width) and are captured under their name; ``{video_key}`` matches ``video_key`` literally
    when given, else one path component, captured as ``video_key``.

    Raises:
        ValueError: the template is not a valid format string or uses another placeholder.
    """
    problem = tpl.template_error(template)
    if problem:
        raise ValueError(f"template {template!r:.80} {problem}")
    out = ["^"]
    seen: set[str] = set()
    for literal, field, spec, _conv in string.Formatter().parse(template):
        out.append(re.escape(literal))
        if field is None:
            continue
        if field == "video_key":
            out.append(re.escape(video_key) if video_key is not None else r"(?P<video_key>[^/]+)")
            continue
        if field not in _NUM_FIELDS:
            raise ValueError(f"unknown placeholder {{{field}}}")
        m = re.fullmatch(r"0?(\d*)d?", spec or "")
        width = int(m.group(1)) if m and m.group(1) else 1
        digits = rf"\d{{{width},}}"
        if field in seen:
            out.append(rf"(?P={field})")
        else:
            out.append(rf"(?P<{field}>{digits})")
            seen.add(field)
    out.append("$")
    return re.compile("".join(out))


def _top_folder(template: str) -> str:
    """The fixed leading folder of a template (``data``, ``videos``), or ``""`` when it starts with a field."""
    literal = next(iter(string.Formatter().parse(template)))[0]
    return literal.split("/", 1)[0] if "/" in literal else ""


@dataclass
class LayoutFiles:
    """Files of one kind found without the episode metadata.

    Attributes:
        files: data or video files to check (``episodes`` holds ``[i]`` for a v2.x file named for episode
            ``i``, ``[]`` for a v3.0 file, whose episodes only the metadata knows).
        expected: relative paths the template names for ``range(total_episodes)`` (v2.x), else empty.
        on_disk: relative paths on disk whose names fit the template.
        source: how the list was made, for messages (``"data_path and info.json total_episodes = 4"``).
        unnamed: v2.x: episodes of ``range(total_episodes)`` whose files were not named (beyond
            :data:`MAX_MISSING_NAMED` more than the files on disk, or :data:`MAX_EXPECTED` in all); 0 otherwise.
        named: v2.x: how many episodes' files were named (``expected`` may hold fewer paths when two episodes'
            paths coincide); 0 otherwise.
    """

    files: list
    expected: set[str]
    on_disk: set[str]
    source: str
    unnamed: int = 0
    named: int = 0


def data_files_from_layout(ds: Dataset) -> LayoutFiles:
    """The data files ``data_path`` names, without reading the episode metadata.

    v2.x: one per episode ``0 .. total_episodes - 1`` (info.json; at most :data:`MAX_MISSING_NAMED` more than the
    files on disk that fit the template, see :attr:`LayoutFiles.unnamed`), plus files on disk that fit the
    template. v3.0: the files on disk under the template's top folder that fit the template.

    Raises:
        DatasetError: the template cannot be expanded or parsed.
    """
    template = ds.data_path
    on_disk = files_fitting(ds, template, None, ".parquet")
    return _layout(ds, template, on_disk, lambda ep: DataFile(ds.format_data_path(episode_index=ep), [ep]),
                   lambda rel, m: DataFile(rel, _episode_of(m)), "data_path")


def video_files_from_layout(ds: Dataset) -> LayoutFiles:
    """The video files ``video_path`` names for every video key, without reading the episode metadata
    (see :func:`data_files_from_layout`).

    Raises:
        DatasetError: the template cannot be expanded or parsed, or is null while videos are declared.
    """
    keys = ds.video_keys
    template = ds.video_path
    if not keys:
        return LayoutFiles([], set(), set(), "video_path")
    if template is None:
        raise DatasetError("video_path is null while video features are declared", "meta/info.json")
    files: list = []
    expected: set[str] = set()
    on_disk: set[str] = set()
    source = ""
    for key in keys:
        fitting = files_fitting(ds, template, key, ".mp4")
        part = _layout(ds, template, fitting,
                       lambda ep, key=key: VideoFile(ds.format_video_path(key, episode_index=ep), key, [ep]),
                       lambda rel, m, key=key: VideoFile(rel, key, _episode_of(m)), "video_path")
        files += part.files
        expected |= part.expected
        on_disk |= part.on_disk
        source = part.source
    return LayoutFiles(files, expected, on_disk, source)


def _episode_of(m: re.Match) -> list[int]:
    ep = m.groupdict().get("episode_index")
    return [int(ep)] if ep is not None else []


def files_fitting(ds: Dataset, template: str, video_key: str | None, suffix: str) -> dict[str, re.Match]:
    """Files on disk (below the template's top folder, with ``suffix``) whose relative path fits ``template``
    (``video_key`` fixed when given), each with its match (the placeholders' values).

    Raises:
        DatasetError: the template cannot be parsed.
    """
    try:
        rx = template_regex(template, video_key)
    except ValueError as exc:
        raise DatasetError(f"template {template!r} cannot be parsed ({exc})", "meta/info.json") from None
    top = _top_folder(template)
    candidates = ds.files_under(top, suffix) if top else []
    return {rel: m for rel in candidates if (m := rx.match(rel))}


def _layout(ds: Dataset, template: str, on_disk: dict[str, re.Match], by_episode, by_match, name: str) -> LayoutFiles:
    files: dict[str, object] = {}
    expected: set[str] = set()
    total = ds.total("total_episodes")
    named = unnamed = 0
    if ds.layout == "v2" and total is not None and total >= 0 and "episode_index" in template:
        named = min(total, MAX_EXPECTED, len(on_disk) + MAX_MISSING_NAMED)
        unnamed = total - named
        for ep in range(named):
            f = by_episode(ep)
            if tpl.escapes_root(f.relpath):
                raise DatasetError(f"{name} {template!r} points outside the dataset root", "meta/info.json")
            files[f.relpath] = f
            expected.add(f.relpath)
        source = f"{name} and info.json total_episodes = {total}"
    else:
        source = f"the files on disk that fit {name}"
    for rel, m in sorted(on_disk.items()):
        files.setdefault(rel, by_match(rel, m))
    return LayoutFiles([files[k] for k in sorted(files)], expected, set(on_disk), source, unnamed, named)


#: names ``datasets`` never takes as data files (``datasets.data_files.FILES_TO_IGNORE``, datasets 4.x)
DATASETS_IGNORED = frozenset({"README.md", "config.json", "dataset_info.json", "dataset_infos.json",
                              "dummy_data.zip", "dataset_dict.json"})


def loader_data_files(ds: Dataset) -> list[str]:
    """The files under ``data/`` that the real loader reads when it loads the whole dataset, whatever the metadata
    says (relative paths, sorted).

    * v3.0, lerobot 0.4.4 ``load_nested_dataset``: ``sorted((root / "data").glob("*/*.parquet"))``; none raises
      ``FileNotFoundError: Provided directory does not contain any parquet file``.
    * v2.x, lerobot 0.3.3 ``LeRobotDataset.load_hf_dataset``: ``load_dataset("parquet", data_dir=root / "data")``,
      whose default pattern ``**`` takes every file below ``data/`` (any name, any depth) except hidden ones,
      those in folders starting with ``__`` and :data:`DATASETS_IGNORED` (datasets ``data_files.py``); the
      parquet builder then fails on any file that is not parquet.
    """
    if ds.layout == "v3":
        return [rel for rel in ds.files_under("data", ".parquet") if rel.count("/") == 2]
    out = []
    for rel in ds.files_under("data", ""):
        parts = rel.split("/")
        if parts[-1] in DATASETS_IGNORED or any(p.startswith("__") for p in parts[1:-1]):
            continue
        out.append(rel)
    return out

