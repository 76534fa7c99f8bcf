"""Family F (data side): referenced data files exist, are not placeholders, have footers; orphans.

Videos are checked by :mod:`lerobot_tools.checks.videos`. Sources: docs/format.md#L8, docs/format.md#L11,
docs/failure-modes.md (#orphan-files, #missing-footer, #lfs-pointers).
"""

from __future__ import annotations

from lerobot_tools._parallel import thread_map
from lerobot_tools.checks.context import CheckContext
from lerobot_tools.checks.targets import not_requested, unrequested as unrequested_file
from lerobot_tools.dataset.footers import read_footer
from lerobot_tools.dataset.model import DataFile
from lerobot_tools.dataset.ondisk import data_files_from_layout, files_fitting, loader_data_files
from lerobot_tools.dataset.placeholders import (  # noqa: F401  (re-exported)
    FILE_KIND_LABELS, PLACEHOLDER_CHECKS, UnreadableFileError, cause_of, check_metadata_file, describe,
    file_kind_of, folder_of,
)
from lerobot_tools.errors import DatasetError
from lerobot_tools.sniff import Sniff, sniff

_CAUSE_GROUPS = {"lfs-pointer": "are Git LFS pointers", "error-page": "are error pages or text, not data",
                 "empty": "are empty (0 bytes)"}


def placeholder_finding(ctx: CheckContext, s: Sniff, rel: str, file_kind: str) -> bool:
    """Emit F004/F005/F006 (:data:`PLACEHOLDER_CHECKS`) for a placeholder file; return True when ``s`` is one.

    Args:
        s: the file's sniff.
        rel: its path relative to the dataset root.
        file_kind: a key of :data:`FILE_KIND_LABELS` (``"data"``, ``"video"``, ``"episodes"``...).

    The message says what the file is (``"data file is a Git LFS pointer (object of 13,412 bytes not
    fetched)"``); findings are grouped per folder, and the sniff is kept in ``ctx.placeholders`` so that a
    cause many files share is said once at the top of the report.
    """
    check = PLACEHOLDER_CHECKS.get(s.kind)
    if check is None:
        return False
    label = FILE_KIND_LABELS.get(file_kind, "file")
    ctx.placeholders[rel] = s
    ctx.emit(check, f"{label} {describe(s)}", rel,
             group=f"{label}s under {folder_of(rel)}/ {_CAUSE_GROUPS[cause_of(s.kind)]}", file_kind=file_kind)
    return True


def report_unreadable(ctx: CheckContext, exc: DatasetError, check: str, file_kind: str, *,
                      severity: str | None = None, why: str = "") -> str:
    """Report a metadata file that could not be read: a placeholder as F004/F005/F006 (what it is), anything
    else (truncated, malformed) as ``check`` with the reader's message.

    Args:
        exc: the error raised while reading the file (an :class:`UnreadableFileError` for a placeholder).
        check: the file's own check (C007 episodes, T001 tasks, G001 stats, I002 info.json).
        file_kind: the ``file_kind`` subject of a placeholder finding.
        severity: overrides ``check``'s catalogue severity for a file that is not a placeholder.
        why: appended to ``check``'s message (why that severity: which loader raises).

    Returns:
        One line naming the file and the problem, for the "not checked" notes of what depended on it.
    """
    if isinstance(exc, UnreadableFileError) and exc.placeholder:
        placeholder_finding(ctx, exc.sniffed, exc.path or "", file_kind)
        return f"{exc.path} {describe(exc.sniffed)}"
    message = exc.message
    if message.startswith("is "):  # "is truncated: ..." reads on its own once the file's kind names it
        message = f"{FILE_KIND_LABELS.get(file_kind, 'file')} {message}"
    # a truncated or unreadable file carries its kind, like a placeholder (repair refuses on it)
    subject = {"file_kind": file_kind} if isinstance(exc, UnreadableFileError) else {}
    ctx.emit(check, f"{message}{why}", exc.path, severity=severity, **subject)
    return f"{exc.path}: {exc.message}" if exc.path else exc.message


def run(ctx: CheckContext) -> None:
    """Family F, data side: the data files the metadata references, orphans, the images/ staging folder.

    Emits F001, F003 (orphan parquet; for v2.x any other file ``load_dataset`` would read under data/), F004-F006
    (placeholders), F007 (no footer), F011, and I008 for a data path that leaves the root. Reads
    ``ctx.episodes_ok``; sets ``ctx.data_files`` (referenced data files), ``ctx.data_layout``, ``ctx.footers``
    (readable file -> footer) and ``ctx.bad_data_files`` (missing or unreadable files), which every later family
    reads.

    When the episode metadata cannot be read, the data files are taken from ``data_path`` and the folders on
    disk (:func:`lerobot_tools.dataset.ondisk.data_files_from_layout`) and checked all the same; F003 then
    reports only files whose names do not fit ``data_path``. When ``data_path`` itself cannot be expanded (I008
    says why, once), the files the loader reads without it are checked instead
    (:func:`lerobot_tools.dataset.ondisk.loader_data_files`: v3.0 globs ``data/*/*.parquet``, v2.x loads every
    file under ``data/``), so one bad template does not hide the data's own defects. A dataset whose ``data/``
    holds nothing the loader can read gets one F001 saying so (the loader raises), not one per expected file.
    """
    ds = ctx.dataset
    assert ds is not None
    layout, data_files, loader_files, from_glob = _data_files(ctx)
    ctx.data_files = data_files
    missing, unrequested, pending = _read_footers(ctx, data_files, layout)
    readable = [rel for rel in loader_files if rel.endswith(".parquet")] if ds.layout == "v3" else loader_files
    relocated = bool(missing) and _relocated(ctx, "data", ds.data_path, [df.relpath for df in data_files],
                                             [df.relpath for df in missing], None)
    # readable: what the loader's glob finds, which is not walked through a data/ linked out of the dataset (F013);
    # the referenced files read through such a link are data all the same
    if not readable and not ctx.footers and not relocated and not pending:
        _no_data(ctx, missing)
    elif missing and not relocated:
        for df in missing:
            if layout is None:
                msg = f"data file for episode(s) {format_episodes(df.episodes)} is missing"
            else:
                msg = f"data file for episode {format_episodes(df.episodes)} is missing (named by {layout.source})"
            ctx.emit("F001", msg, df.relpath, group="data files are missing", file_kind="data", episodes=df.episodes)
    not_requested(ctx, "data", unrequested)
    if pending:
        ctx.skip("F001, S001-S007, R001-R004, C002/C005, D001-D005, Q001-Q009 for data files not downloaded",
                 f"{len(pending)} of {len(data_files)} data file(s) not downloaded yet ({ctx.download.describe()})")
    if len(ctx.bad_data_files) > len(pending):
        ctx.skip("S001-S007, R001-R004, C002/C005 for unreadable files",
                 f"{len(ctx.bad_data_files) - len(pending)} of {len(data_files)} data file(s) missing or unreadable")
    _orphans(ctx, layout, loader_files, from_glob)
    _check_images(ctx)


def _data_files(ctx: CheckContext):
    """The data files to check: those the episode metadata references, else those ``data_path`` names on disk
    (``ctx.data_layout`` set), else those the loader's glob reads. Returns ``(layout, data_files, loader_files,
    from_glob)``: the on-disk layout used (None: the metadata's), the files, the loader's files, and whether the
    files came from the loader's glob."""
    ds = ctx.dataset
    layout = None
    unusable: DatasetError | None = None  # why data_path cannot name the files
    data_files = None
    if ctx.episodes_ok:
        try:
            data_files = ds.data_files()
        except DatasetError as exc:
            unusable = exc
    else:
        try:
            layout = data_files_from_layout(ds)
        except DatasetError as exc:
            unusable = DatasetError(f"the episode metadata is unreadable and {exc}")
        else:
            data_files = layout.files
            ctx.data_layout = layout
            ctx.skip("C005, F003 for names that fit data_path",
                     f"the episode metadata is unreadable; data files taken from {layout.source}")
    loader_files = loader_data_files(ds)
    from_glob = data_files is None
    if from_glob:
        data_files = [DataFile(rel, []) for rel in loader_files if rel.endswith(".parquet")]
        ctx.skip("F001 (data files named by data_path)",
                 f"{unusable}; the {len(data_files)} parquet file(s) the loader reads without it "
                 f"({'data/*/*.parquet' if ds.layout == 'v3' else 'every file under data/'}) are checked instead")
    return layout, data_files, loader_files, from_glob


def _read_footers(ctx: CheckContext, data_files: list, layout):
    """Sniff every data file and read the footers of the parquet ones on a thread pool, emitting in file order
    (I008, F004-F007); sets ``ctx.footers`` and ``ctx.bad_data_files``. Returns ``(missing, unrequested,
    pending)``: the absent files, the absent or placeholder files of episodes the target does not read, and the
    absent files a --meta-only copy has not downloaded yet."""
    ds = ctx.dataset
    missing = []
    unrequested = []  # absent or placeholder files of episodes the target does not read: at most info
    pending: list[str] = []  # absent files a --meta-only copy has not downloaded yet (never "missing")
    paths = [_locate(ds, df.relpath) for df in data_files]
    reads = thread_map(_read_data_file, [(p, df.relpath) for df, p in zip(data_files, paths)
                                         if not isinstance(p, DatasetError)], io_bound=True)
    for df, path in zip(data_files, paths):
        rel = df.relpath
        if isinstance(path, DatasetError):
            ctx.emit("I008", path.message, rel, key="data_path")
            ctx.bad_data_files.add(rel)
            continue
        s, footer = next(reads)
        if s.kind == "missing" and ctx.not_downloaded(df.episodes):
            pending.append(rel)
            ctx.bad_data_files.add(rel)
            continue
        if layout is None and unrequested_file(ctx, df, s.kind):
            unrequested.append((df, s.kind))
            ctx.bad_data_files.add(rel)
            continue
        if s.kind == "missing":
            missing.append(df)
            ctx.bad_data_files.add(rel)
            continue
        if s.kind == "unreadable":
            ctx.emit("F007", f"data file cannot be read: {s.detail}", rel, group="data files cannot be read", file_kind="data")
            ctx.bad_data_files.add(rel)
            continue
        if placeholder_finding(ctx, s, rel, "data"):
            ctx.bad_data_files.add(rel)
            continue
        if isinstance(footer, DatasetError):
            ctx.emit("F007", footer.message, rel, group="parquet files have no valid footer", file_kind="data")
            ctx.bad_data_files.add(rel)
        else:
            ctx.footers[rel] = footer
    return missing, unrequested, pending


def _no_data(ctx: CheckContext, missing: list) -> None:
    """F001, once: nothing under data/ is data the loader can read (no folder, no parquet file)."""
    ds = ctx.dataset
    what = "data/ does not exist" if not (ds.root / "data").is_dir() else "data/ holds no parquet file"
    refs = f"; the metadata names {len(missing)} data file(s)" if missing else ""
    if ds.layout == "v3":
        why = ("lerobot 0.4.4 load_nested_dataset globs data/*/*.parquet and raises FileNotFoundError "
               "(does not contain any parquet file)")
    else:
        why = "lerobot 0.3.3 loads data/ with load_dataset('parquet', data_dir=...), which finds nothing and raises"
    for df in missing:
        ctx.bad_data_files.add(df.relpath)
    ctx.emit("F001", f"no data files at all: {what}{refs}; {why}", "data", file_kind="data")


def _orphans(ctx: CheckContext, layout, loader_files: list[str], from_glob: bool) -> None:
    """F003: files the loader's glob reads that the metadata does not reference (never a file the template
    names while the metadata that lists them is unreadable), and strays under meta/episodes/ (v3.0)."""
    ds = ctx.dataset
    data_files = ctx.data_files
    if from_glob:
        referenced = {df.relpath for df in data_files}
        why = ""
    elif layout is not None or not ctx.episodes_complete:
        try:
            fitting = set(files_fitting(ds, ds.data_path, None, ".parquet"))
        except DatasetError:
            fitting = set()
        referenced = fitting | {df.relpath for df in data_files}
        why = "not named by data_path"
    else:
        referenced = {df.relpath for df in data_files}
        why = "not referenced by the episode metadata"
    for rel in loader_files:
        if rel in referenced or rel in ctx.relocated:
            continue
        if rel.endswith(".parquet"):
            ctx.emit("F003", f"parquet file under data/ is {why}; loaders that glob data/ will read its rows", rel,
                     group="unreferenced parquet files under data/", file_kind="data")
        else:  # v2.x only: load_dataset("parquet", data_dir=...) takes every file under data/
            ctx.emit("F003", "file under data/ is not a data parquet file; lerobot 0.3.3 loads every file under "
                     "data/ with load_dataset('parquet', data_dir=...), which fails on it", rel,
                     group="files under data/ that are not data", file_kind="data")
    if ds.layout == "v3":
        import re

        pat = re.compile(r"^meta/episodes/chunk-\d{3,}/file-\d{3,}\.parquet$")
        for rel in ds.files_under("meta/episodes", ".parquet"):
            if not pat.match(rel):
                ctx.emit("F003", "file under meta/episodes/ is not a chunk-XXX/file-YYY.parquet; the loader "
                         "globs meta/episodes/*/*.parquet and may read it as episodes", rel, file_kind="episodes")


def _locate(ds, rel: str):
    """``ds.path(rel)``, or the :class:`DatasetError` saying why the path is refused."""
    try:
        return ds.path(rel)
    except DatasetError as exc:
        return exc


def _read_data_file(item) -> tuple[Sniff, object]:
    """Sniff one data file and, when it may be parquet, read its footer (run in :func:`thread_map`'s threads).

    Returns:
        ``(sniff, footer)``: footer is a :class:`~lerobot_tools.dataset.footers.FooterInfo`, the
        :class:`DatasetError` :func:`read_footer` raised, or None for a missing, unreadable or placeholder file.
    """
    path, rel = item
    s = sniff(path)
    if s.kind in ("missing", "unreadable") or s.kind in PLACEHOLDER_CHECKS:
        return s, None
    try:
        return s, read_footer(path, rel)
    except DatasetError as exc:
        return s, exc


#: At most this many files are sniffed by :func:`scan_tree`.
MAX_SCANNED = 200_000


def scan_tree(ctx: CheckContext, root) -> None:
    """Sniff every file under a dataset folder whose ``meta/info.json`` is itself a placeholder, so that the
    report can still say how many files share the cause (F004-F006 per file, grouped per folder).

    Only the file types a dataset holds are looked at (``.parquet``, ``.mp4``, ``.json``, ``.jsonl``; JSON
    files with :func:`~lerobot_tools.dataset.placeholders.check_metadata_file`, so a real one is not a
    placeholder). Hidden folders and files (``.git``, ``.cache``, lrtool's ``.lrtool``) are skipped; at most
    :data:`MAX_SCANNED` files are looked at.
    """
    import os
    from pathlib import Path

    root = Path(root)
    seen = 0
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
        for name in sorted(filenames):
            if name.startswith("."):
                continue
            seen += 1
            if seen > MAX_SCANNED:
                ctx.skip("F004-F006 (other files)", f"only the first {MAX_SCANNED:,} files were sniffed")
                return
            rel = Path(dirpath, name).relative_to(root).as_posix()
            if rel == "meta/info.json":
                continue
            fmt = {".json": "json", ".jsonl": "jsonl", ".parquet": "parquet", ".mp4": "mp4"}.get(Path(name).suffix)
            if fmt is None:
                continue  # README.md, .gitattributes...: not dataset files
            kind = file_kind_of(rel)
            if fmt == "mp4":
                placeholder_finding(ctx, sniff(root / rel), rel, kind)
                continue
            try:
                check_metadata_file(root / rel, rel, fmt)  # a real JSON file is not a placeholder here
            except UnreadableFileError as exc:
                if exc.placeholder:
                    placeholder_finding(ctx, exc.sniffed, rel, kind)


def _relocated(ctx: CheckContext, kind: str, template: str, expected: list[str], missing: list[str],
               video_key: str | None) -> bool:
    """Look for missing referenced files under the neighbouring layouts
    (:func:`lerobot_tools.dataset.relocate.locate_missing`). When some are found, emit one F001 (data) or F002
    (video) finding saying where and how many (``"2 of the 3 expected video files are under video/… (e.g. ...);
    1 is absent everywhere"``), record the found files in ``ctx.relocated`` (they are not orphans) and return
    True; else return False (the caller reports the missing files one by one)."""
    from lerobot_tools.dataset.relocate import expected_from_paths, locate_missing

    ds = ctx.dataset
    if ds.layout is None or not isinstance(template, str):
        return False
    wanted = expected_from_paths(template, missing, video_key)
    if len(wanted) != len(missing):
        return False
    reloc = locate_missing(ds.root, template, ds.layout, kind, expected_from_paths(template, expected, video_key),
                           wanted)
    if not reloc.layouts:
        return False
    for lay in reloc.layouts:
        for exp, found in lay.pairs:
            ctx.relocated[found] = exp
    check = "F001" if kind == "data" else "F002"
    ctx.emit(check, reloc.message("data_path" if kind == "data" else "video_path"), None, file_kind=kind,
             video_key=video_key)
    return True


def _check_images(ctx: CheckContext) -> None:
    from lerobot_tools._contain import walk_root

    ds = ctx.dataset
    images = ds.root / "images"
    if walk_root(ds.root, "images"):  # an images/ linked out of the dataset (F013) is not walked
        n = sum(1 for p in images.rglob("*") if p.is_file())
        if n:
            ctx.emit("F011", f"images/ holds {n} staged frame file(s): the recording may have been interrupted", "images")


def format_episodes(eps: list[int]) -> str:
    """Short text for a list of episode indices: ``"0, 1, 2"`` or ``"0-499 (500)"``."""
    if len(eps) <= 4:
        return ", ".join(map(str, eps))
    return f"{eps[0]}-{eps[-1]} ({len(eps)})"
