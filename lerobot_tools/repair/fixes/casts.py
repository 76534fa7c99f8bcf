"""Fixes of a column stored otherwise than declared: S004 shape, S005 variable-length lists, S003 dtype (and
the S007 cross-file drift it causes). Each either casts the data files (every row checked first) or
re-declares the feature when every data file agrees.
"""

from __future__ import annotations

from typing import Any

from lerobot_tools.dataset.features import column_form, compare_feature
from lerobot_tools.dataset.model import DEFAULT_FEATURES, INFO_PATH, STATS_PATH
from lerobot_tools.errors import DatasetError
from lerobot_tools.repair.fixes.context import RepairContext, column_subject, files_text
from lerobot_tools.repair.model import ColumnOp, Subject


# =========================================================================== S004 shape
def fix_shape(rc: RepairContext) -> None:
    """S004: a ``[1]`` feature stored as a one-element list is cast to a scalar column
    (docs/failure-modes.md#scalar-as-list; every row checked to hold exactly one element). A vector stored with
    another fixed length in every data file is re-declared with that shape only when its names and stats.json agree
    with the stored length."""
    from lerobot_tools.repair.parquet import scan_list_lengths

    for name, feat in list(rc.feats.items()):
        if not isinstance(feat, dict) or feat.get("dtype") in ("video", "image", "language"):
            continue
        per_file = rc.planned_columns(name)
        bad = {rel: t for rel, t in per_file.items()
               if any(c == "S004" for c, _, _ in compare_feature(name, feat, t))}
        if not bad:
            continue
        subject = column_subject(name)
        shape = feat.get("shape")
        if shape == [1]:
            problem = None
            for rel, t in bad.items():
                form = column_form(t)
                if form.kind != "list" or form.depth != 1 or form.lengths[0] not in (1, None):
                    problem = f"{rel} stores {name!r} as {t}, not a one-element list"
                    break
                if form.lengths[0] is None:
                    n_bad, _ = scan_list_lengths(rc.ds.path(rel), name, 1)
                    if n_bad:
                        problem = f"{n_bad} row(s) of {name!r} in {rel} do not hold exactly one element"
                        break
            if problem:
                rc.cannot("S004", problem, "fix those rows, or declare the shape that is really stored", subject)
                continue
            for rel in bad:
                rc.add_op(rel, ColumnOp("scalar", name, check="S004"))
            rc.repair("S004", f"cast one-element list column {name!r} to a scalar column in {files_text(list(bad))}",
                      list(bad), subject)
            continue
        _redeclare_shape(rc, name, feat, per_file, subject)


def _redeclare_shape(rc: RepairContext, name: str, feat: dict, per_file: dict[str, Any], subject: Subject) -> None:
    shape = feat.get("shape")
    todo = "re-export the column with the declared shape, or correct the declaration, names and stats together"
    if rc.bad_data_files or len(per_file) != len(rc.footers):
        rc.cannot("S004", f"not every data file can be read or holds {name!r}, so the stored shape is not known "
                  "to be the same everywhere", todo, subject)
        return
    types = {str(t) for t in per_file.values()}
    form = column_form(next(iter(per_file.values())))
    if len(types) != 1 or form.kind != "list" or not form.fixed or not 1 <= form.depth <= 5 \
            or list(form.lengths) == [1] or form.value in (None, "string"):
        rc.cannot("S004", f"{name!r} is stored as {', '.join(sorted(types))}; declared shape {shape}", todo, subject)
        return
    new_shape = list(form.lengths)
    names = feat.get("names")
    if isinstance(names, list) and len(names) != new_shape[0]:
        rc.cannot("S004", f"{name!r} is stored with shape {new_shape} but names lists {len(names)} entries "
                  f"(declared shape {shape})", todo, subject)
        return
    try:
        stats = rc.ds.read_stats() or {}
    except DatasetError:
        stats = {}
    mean = (stats.get(name) or {}).get("mean") if isinstance(stats.get(name), dict) else None
    if isinstance(mean, list) and len(mean) != new_shape[0]:
        rc.cannot("S004", f"{name!r} is stored with shape {new_shape} but {STATS_PATH} describes {len(mean)} "
                  "elements", "recompute the statistics after fixing the declaration", subject)
        return
    feat["shape"] = new_shape
    rc.decl_changed[name] = "S004"
    rc.repair("S004", f"declare {name!r} shape {shape} -> {new_shape} (stored so in every data file)", [INFO_PATH], subject)


# =========================================================================== S005 variable-length lists
def fix_variable_lists(rc: RepairContext) -> None:
    """S005: a fixed-length vector stored as a variable-length list (a pandas round-trip,
    docs/failure-modes.md#variable-lists) is cast to ``fixed_size_list[N]`` after every row of every affected file
    was checked to hold N elements; a single row of another length makes it not repairable (D005)."""
    from lerobot_tools.repair.parquet import scan_list_lengths

    for name, feat in rc.feats.items():
        if not isinstance(feat, dict) or feat.get("dtype") in ("video", "image", "string", "language"):
            continue
        files = [rel for rel, t in rc.planned_columns(name).items()
                 if any(c == "S005" for c, _, _ in compare_feature(name, feat, t))]
        if not files:
            continue
        n = feat["shape"][0]
        subject = column_subject(name)
        wrong: list[tuple[str, int]] = []
        for rel in files:
            n_bad, _ = scan_list_lengths(rc.ds.path(rel), name, n)
            if n_bad:
                wrong.append((rel, n_bad))
        if wrong:
            total = sum(b for _, b in wrong)
            rc.cannot("S005", f"{total} row(s) of {name!r} do not hold {n} elements (e.g. {wrong[0][0]}); a fixed-size "
                      "cast would fail", "fix or drop those rows, or declare the shape that is stored", subject)
            continue
        for rel in files:
            rc.add_op(rel, ColumnOp("fixed", name, n, check="S005"))
        rc.repair("S005", f"cast {name!r} from a variable-length list to fixed_size_list[{n}] in {files_text(files)} "
                  f"(every row checked to hold {n})", files, subject)


# =========================================================================== S003 dtype
def fix_dtype(rc: RepairContext) -> None:
    """S003 (and the S007 it causes): a column whose element type differs from the declared dtype.

    * every data file stores the same type -> the declaration follows the data (info.json edited, no data
      touched); except for the default features (``timestamp``, ``index``...), which keep lerobot's dtype
      (re-declaring them would trip I010);
    * otherwise (files disagree, or a default feature) -> the odd files are cast to the declared dtype, only
      when every value converts exactly (checked on every row before planning, and again on the written file).
    """
    import numpy as np

    from lerobot_tools.repair.parquet import scan_exact

    for name, feat in rc.feats.items():
        if not isinstance(feat, dict) or feat.get("dtype") == "video":
            continue
        per_file = rc.planned_columns(name)
        bad = [rel for rel, t in per_file.items() if any(c == "S003" for c, _, _ in compare_feature(name, feat, t))]
        if not bad:
            continue
        subject = column_subject(name)
        dtype = feat.get("dtype")
        todo = "rewrite the data files with the declared dtype, or declare what they store"
        if dtype in ("image", "string", "language"):
            rc.cannot("S003", f"{name!r} is declared {dtype} but stored as {per_file[bad[0]]}", todo, subject)
            continue
        if rc.bad_data_files or len(per_file) != len(rc.footers):
            rc.cannot("S003", f"not every data file can be read or holds {name!r}, so it is unknown whether every file "
                      "stores the same type", "restore the unreadable files first, then rerun", subject)
            continue
        values = {rel: column_form(t).value for rel, t in per_file.items()}
        distinct = set(values.values())
        if None in distinct or "string" in distinct:
            rc.cannot("S003", f"{name!r} holds {per_file[bad[0]]} values; no numeric dtype describes them", todo, subject)
            continue
        if len(distinct) == 1 and name not in DEFAULT_FEATURES:
            stored = distinct.pop()
            feat["dtype"] = stored
            rc.decl_changed[name] = "S003"
            rc.repair("S003", f"declare {name!r} dtype {dtype} -> {stored} (stored so in every data file)", [INFO_PATH],
                      subject)
            continue
        try:
            canonical = np.dtype(dtype).name
        except TypeError:
            canonical = None
        if canonical != dtype:
            rc.cannot("S003", f"{name!r} is declared with dtype {dtype!r}, which is not a numpy dtype name", todo, subject)
            continue
        odd = [rel for rel, v in values.items() if v != dtype]
        inexact = [rel for rel in odd if scan_exact(rc.ds.path(rel), name, dtype)]
        why = ("data files store it with different element types "
               f"({', '.join(sorted(str(v) for v in distinct))})" if len(distinct) > 1 else
               f"default feature {name!r} is stored as {next(iter(distinct))}; lerobot writes {dtype}")
        if inexact:
            rc.cannot("S003", f"{why}, and {inexact[0]} holds values {dtype} cannot represent exactly",
                      "rewrite the odd files in the majority schema by hand (a cast would change values)", subject)
            if rc.has("S007"):
                rc.cannot("S007", f"{name!r}: {why}; the values do not convert exactly", "rewrite the odd files by hand",
                          subject)
            continue
        for rel in odd:
            rc.add_op(rel, ColumnOp("dtype", name, check="S003", dtype=dtype))
        rc.repair("S003", f"cast {name!r} to the declared {dtype} in {files_text(odd)} ({why}; every value converts "
                  "exactly)", odd, subject)
        if rc.has("S007"):
            rc.repair("S007", f"{name!r}: the odd file(s) now store the declared {dtype}", odd, subject)
