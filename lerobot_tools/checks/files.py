"""Family F (data side): referenced data files exist, are not placeholders, have footers; orphans.

Videos are checked by :mod:`lerobot_tools.checks.videos`. Sources: lerobot-format §14 I8/I11,
pitfalls C8 (orphans), E1 (no footer), E3 (LFS pointers).
"""

from __future__ import annotations

from lerobot_tools.checks.context import CheckContext
from lerobot_tools.dataset.footers import read_footer
from lerobot_tools.errors import DatasetError
from lerobot_tools.sniff import Sniff, sniff


#: Placeholder kinds of :func:`lerobot_tools.sniff.sniff` -> the check that reports them.
PLACEHOLDER_CHECKS = {"empty": "F006", "lfs-pointer": "F004", "html": "F005", "xml": "F005", "json": "F005", "text": "F005"}


def placeholder_finding(ctx: CheckContext, s: Sniff, rel: str, file_kind: str) -> bool:
    """Emit F004/F005/F006 (:data:`PLACEHOLDER_CHECKS`) for a placeholder file of ``file_kind`` (``"data"`` or
    ``"video"``); return True when ``s`` is one."""
    what = f"{file_kind} file"
    check = PLACEHOLDER_CHECKS.get(s.kind)
    if check == "F006":
        ctx.emit("F006", f"{what} is empty (0 bytes)", rel, group=f"{what}s are empty (0 bytes)", file_kind=file_kind)
    elif check == "F004":
        ctx.emit("F004", f"{what} is a Git LFS pointer: {s.detail}", rel, group=f"{what}s are Git LFS pointers",
                 file_kind=file_kind)
    elif check == "F005":
        ctx.emit("F005", f"{what} is not binary data but {s.detail}", rel,
                 group=f"{what}s are {s.kind.upper()} error pages / text", file_kind=file_kind)
    else:
        return False
    return True


def run(ctx: CheckContext) -> None:
    """Family F, data side: the data files the metadata references, orphans, the images/ staging folder.

    Emits F001, F003 (orphan parquet), F004-F006 (placeholders), F007 (no footer), F011, and I008 for a data
    path that leaves the root. Reads ``ctx.episodes_ok``; sets ``ctx.data_files`` (referenced data files),
    ``ctx.footers`` (readable file -> footer) and ``ctx.bad_data_files`` (missing or unreadable files), which
    every later family reads.
    """
    ds = ctx.dataset
    assert ds is not None
    if not ctx.episodes_ok:
        ctx.skip("F001, F003-F007 (data files)", "the episode metadata could not be read, so the data files are unknown")
        _check_images(ctx)
        return
    try:
        data_files = ds.data_files()
    except DatasetError as exc:
        ctx.skip("F001, F003-F007 (data files)", str(exc))
        return
    ctx.data_files = data_files
    for df in data_files:
        rel = df.relpath
        try:
            path = ds.path(rel)
        except DatasetError as exc:
            ctx.emit("I008", exc.message, rel, key="data_path")
            ctx.bad_data_files.add(rel)
            continue
        s = sniff(path)
        if s.kind == "missing":
            ctx.emit("F001", f"data file for episode(s) {format_episodes(df.episodes)} is missing", rel,
                     group="data files are missing", file_kind="data")
            ctx.bad_data_files.add(rel)
            continue
        if s.kind == "unreadable":
            ctx.emit("F007", f"data file cannot be read: {s.detail}", rel, group="data files cannot be read", file_kind="data")
            ctx.bad_data_files.add(rel)
            continue
        if placeholder_finding(ctx, s, rel, "data"):
            ctx.bad_data_files.add(rel)
            continue
        try:
            ctx.footers[rel] = read_footer(path, rel)
        except DatasetError as exc:
            ctx.emit("F007", exc.message, rel, group="parquet files have no valid footer", file_kind="data")
            ctx.bad_data_files.add(rel)
    if ctx.bad_data_files:
        ctx.skip("S001-S007, R001-R004, C002/C005 for unreadable files",
                 f"{len(ctx.bad_data_files)} of {len(data_files)} data file(s) missing or unreadable")

    # F003 orphans under data/
    referenced = {df.relpath for df in data_files}
    for rel in ds.files_under("data", ".parquet"):
        if rel not in referenced:
            ctx.emit("F003", "parquet file under data/ is not referenced by the episode metadata; loaders that "
                     "glob data/ will read its rows", rel, group="unreferenced parquet files under data/", file_kind="data")
    if ds.layout == "v3":
        import re

        pat = re.compile(r"^meta/episodes/chunk-\d{3,}/file-\d{3,}\.parquet$")
        for rel in ds.files_under("meta/episodes", ".parquet"):
            if not pat.match(rel):
                ctx.emit("F003", "file under meta/episodes/ is not a chunk-XXX/file-YYY.parquet; the loader "
                         "globs meta/episodes/*/*.parquet and may read it as episodes", rel, file_kind="episodes")
    _check_images(ctx)


def _check_images(ctx: CheckContext) -> None:
    ds = ctx.dataset
    images = ds.root / "images"
    if images.is_dir():
        n = sum(1 for p in images.rglob("*") if p.is_file())
        if n:
            ctx.emit("F011", f"images/ holds {n} staged frame file(s): the recording may have been interrupted", "images")


def format_episodes(eps: list[int]) -> str:
    """Short text for a list of episode indices: ``"0, 1, 2"`` or ``"0-499 (500)"``."""
    if len(eps) <= 4:
        return ", ".join(map(str, eps))
    return f"{eps[0]}-{eps[-1]} ({len(eps)})"
