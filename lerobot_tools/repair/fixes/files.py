"""File fixes: F001 data files found in a neighbouring layout moved to where ``data_path`` points
(``--move-files``), and :func:`plan_moves`, which the video fix (F002) shares.

Why data files are moved rather than ``data_path`` rewritten: lerobot 0.4.4's v3.0 loader reads every
``data/*/*.parquet`` whatever ``data_path`` says (``src/lerobot/datasets/lerobot_dataset.py``,
``LeRobotDataset.load_hf_dataset`` calling ``src/lerobot/datasets/utils.py``, ``load_nested_dataset``), while
readers that follow ``data_path`` (lrtool's own loaders, v2.1 readers such as OpenTau's) look only where it
points; a template pointing at another top folder would satisfy the second and not the first.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Callable

from lerobot_tools._contain import containment_root, is_inside
from lerobot_tools.dataset import templates as tpl
from lerobot_tools.dataset.relocate import Relocation, expected_from_paths, locate_missing
from lerobot_tools.errors import DatasetError
from lerobot_tools.repair.fixes.context import RepairContext
from lerobot_tools.repair.model import Move
from lerobot_tools.sniff import sniff


def fix_data_files(rc: RepairContext) -> None:
    """F001: referenced data files missing where ``data_path`` points, found under a neighbouring layout
    (another top folder, another chunk folder: the same search as validate,
    :func:`lerobot_tools.dataset.relocate.locate_missing`). With ``--move-files`` every file found is moved to
    where ``data_path`` points; without it nothing is planned and the repair says to rerun with it. Files absent
    everywhere stay missing (a data file cannot be recreated)."""
    ds = rc.ds
    if not rc.options.selected("F001") or not rc.findings("F001"):
        return
    todo = "restore the missing data files (re-download them: `lrtool prefetch` or `hf download`)"
    found = find_elsewhere(rc, "F001", "data", ds.data_path, ds.data_files, todo)
    if found is None:
        return
    template, reloc, _ = found
    if not rc.options.move_files:
        rc.cannot("F001", f"{reloc.found} of the {reloc.missing} missing data file(s) are under "
                  f"{', '.join(lay.where for lay in reloc.layouts)}; loaders read data files only where data_path "
                  "points", "rerun with --move-files to move them there")
        return
    plan_moves(rc, "F001", "data", template, reloc)


def find_elsewhere(rc: RepairContext, check: str, kind: str, template: object, list_files: Callable[[], list],
                   todo: str) -> tuple[str, Relocation, int] | None:
    """The referenced ``kind`` files (``"data"`` / ``"video"``) missing where ``template`` points, looked for
    under the neighbouring layouts (:func:`~lerobot_tools.dataset.relocate.locate_missing`).

    Args:
        check: ``"F001"`` / ``"F002"``, the check a refusal is recorded for.
        template: ``data_path`` / ``video_path`` as info.json has it.
        list_files: the dataset's referenced files (objects with ``relpath``), e.g. ``ds.data_files``.
        todo: what the user must do when nothing can be planned.

    Returns:
        ``(template, relocation, expected count)`` when some missing files were found elsewhere; None when
        nothing is missing or nothing was found (then a refusal saying why is recorded on ``rc``).
    """
    name = "video_path" if kind == "video" else "data_path"
    if not isinstance(template, str):
        rc.cannot(check, f"{name} is not set", todo)
        return None
    try:
        files = list_files()
    except DatasetError as exc:
        rc.cannot(check, exc.message, todo)
        return None
    expected = expected_from_paths(template, [f.relpath for f in files])
    if len(expected) != len(files):
        rc.cannot(check, f"{name} {template!r} cannot be read back from the referenced paths", todo)
        return None
    missing = [e for e in expected if sniff(rc.ds.path(e.relpath)).kind == "missing"]
    if not missing:
        return None
    reloc = locate_missing(rc.ds.root, template, rc.ds.layout or "", kind, expected, missing)
    if not reloc.layouts:
        rc.cannot(check, f"the {len(missing)} missing {kind} file(s) are in no neighbouring layout",
                  f"restore the missing {kind} files (re-download them: `lrtool prefetch` or `hf download`)")
        return None
    return template, reloc, len(expected)


def plan_moves(rc: RepairContext, check: str, kind: str, template: str, reloc: Relocation) -> None:
    """``--move-files``: plan moving every file ``reloc`` found (any neighbouring layout, partial finds
    included) to where ``template`` (``data_path`` / ``video_path``) points, as one repair of ``check``; files
    absent everywhere stay missing and are named in the summary. Refused (nothing planned) when the template
    itself is invalid, a destination already exists, or a move would take a symlink or leave the dataset
    (:func:`_move_problem`)."""
    name = "video_path" if kind == "video" else "data_path"
    problems = tpl.template_problems(template, layout=rc.ds.layout, video=kind == "video")
    if problems:
        rc.cannot(check, f"{name} {template!r} {problems[0]}", f"fix {name}, then rerun")
        return
    pairs = [pair for lay in reloc.layouts for pair in lay.pairs]
    clash = [a for a, _ in pairs if os.path.lexists(rc.ds.root / a)]  # a dangling symlink there is taken too
    if clash:
        rc.cannot(check, f"{clash[0]} already exists", "move it away, then rerun")
        return
    problem = _move_problem(rc.ds.root, pairs)
    if problem:
        rc.cannot(check, problem, "replace the link with the file it points to, then rerun")
        return
    for a, b in pairs:
        rc.moves.append(Move(src=b, dst=a, check=check))
    rest = (f"; {len(reloc.absent)} absent everywhere stay missing (e.g. {reloc.absent[0]})" if reloc.absent else "")
    where = ", ".join(lay.where for lay in reloc.layouts)
    rc.repair(check, f"move {len(pairs)} {kind} file(s) from {where} to where {name} points ({template!r}){rest}",
              [b for _, b in pairs] + [a for a, _ in pairs])


def _move_problem(root: Path, pairs: list[tuple[str, str]]) -> str | None:
    """Why the moves ``(destination, source)`` must not be made, or None: a source is itself a symlink (moving the
    link elsewhere changes what a relative link points to; the file it stands for is not the dataset's to move), or
    a source or a destination resolves outside the dataset (a chunk folder linked out: the file would leave the
    dataset)."""
    base = containment_root(root)
    for dst, src in pairs:
        if os.path.islink(root / src):
            return f"{src} is a symlink, not a file; lrtool moves only regular files"
        if not is_inside(root / src, base):
            return f"{src} resolves outside the dataset (through a symlink)"
        if not is_inside(root / dst, base):  # the folders on the way that exist are resolved, links followed
            return f"{dst} would be written outside the dataset (it resolves to {os.path.realpath(root / dst)})"
    return None
