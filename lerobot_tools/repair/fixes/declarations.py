"""Fixes that edit info.json declarations: I005 ``fps``, I007 ``names``, I006 malformed dtype/shape, and S002
undeclared columns (declared from their Arrow type, or dropped with ``--drop-undeclared``).
"""

from __future__ import annotations

from functools import partial
from typing import Any, Callable

from lerobot_tools.checks.info import names_problem
from lerobot_tools.dataset.features import column_form
from lerobot_tools.dataset.model import INFO_PATH, valid_fps
from lerobot_tools.repair.fixes.context import RepairContext, column_subject, files_text, lengths_over_files
from lerobot_tools.repair.model import ColumnOp

#: Column names lerobot declares with dtype ``language`` (docs/format.md#features).
LANGUAGE_COLUMNS = ("language_persistent", "language_events")


# =========================================================================== I005 fps
def fix_fps(rc: RepairContext) -> None:
    """I005: ``fps`` stored as an integral float (``30.0``) is written as the integer (``30``); lerobot's
    converter casts with ``int()`` too (docs/failure-modes.md#fractional-fps). A fractional or non-positive fps is
    not mechanical."""
    fps = rc.info.get("fps")
    if isinstance(fps, float) and valid_fps(fps) is not None and fps.is_integer():
        rc.info["fps"] = int(fps)
        rc.repair("I005", f"fps {fps!r} -> {int(fps)}", [INFO_PATH])
    else:
        rc.cannot("I005", f"fps {fps!r} is not an integral frame rate",
                  "set fps to the integer rate the data was recorded at (timestamps = frame_index / fps); "
                  "re-encode the videos if they run at another rate")


# =========================================================================== I007 names
def fix_names(rc: RepairContext) -> None:
    """I007: a singly nested ``names`` list of the right length (``[[...6 names...]]``) is flattened. Any
    length mismatch is reported: lrtool does not invent names."""
    for name, feat in rc.feats.items():
        if not isinstance(feat, dict):
            continue
        problem = names_problem(name, feat)
        if problem is None:
            continue
        msg, repairable = problem
        subject = column_subject(name)
        if repairable:
            feat["names"] = list(feat["names"][0])
            rc.repair("I007", f"feature {name!r}: names [[...]] -> flat list of {len(feat['names'])}", [INFO_PATH], subject)
        else:
            rc.cannot("I007", f"feature {name!r}: {msg}",
                      "give one name per element of shape[0] (or set names to null); lrtool does not invent names",
                      subject)


# =========================================================================== I006 malformed declarations
def _malformed(feat: dict) -> str | None:
    from lerobot_tools.checks.info import known_dtype

    dtype, shape = feat.get("dtype"), feat.get("shape")
    if not isinstance(dtype, str) or not known_dtype(dtype):
        return f"dtype {dtype!r}"
    if not isinstance(shape, list) or not shape or not all(isinstance(n, int) and not isinstance(n, bool) and n >= 0
                                                           for n in shape) or not 1 <= len(shape) <= 5:
        return f"shape {shape!r}"
    return None


def fix_feature_invalid(rc: RepairContext) -> None:
    """I006: a non-camera feature whose dtype is unknown or whose shape is malformed gets both from its column
    when every data file holds it with one Arrow type (as an undeclared column would be declared). Cameras,
    and features without a consistent column, are not repairable."""
    for name, feat in list(rc.feats.items()):
        if not isinstance(feat, dict):
            continue
        what = _malformed(feat)
        if what is None:
            continue
        subject = column_subject(name)
        if feat.get("dtype") in ("image", "video"):
            rc.cannot("I006", f"camera feature {name!r} has {what}", "declare [height, width, channels] by hand (F009 "
                      "takes video shapes from the stream once the shape is rank 3)", subject)
            continue
        per_file = rc.planned_columns(name)
        if rc.bad_data_files or not per_file or len(per_file) != len(rc.footers) \
                or len({str(t) for t in per_file.values()}) != 1:
            rc.cannot("I006", f"feature {name!r} has {what} and no column that every data file stores alike",
                      "correct dtype/shape by hand", subject)
            continue
        files = list(per_file)

        t = next(iter(per_file.values()))
        new, op, reason = feature_from_arrow(name, t, partial(lengths_over_files, rc, name, files))
        if new is None:
            rc.cannot("I006", f"feature {name!r} has {what}, and {reason}", "correct dtype/shape by hand", subject)
            continue
        problem = names_problem(name, {**feat, "dtype": new["dtype"], "shape": new["shape"]})
        if problem is not None and not problem[1]:
            rc.cannot("I006", f"feature {name!r} has {what}; its column has shape {new['shape']} but {problem[0]}",
                      "correct dtype, shape and names by hand", subject)
            continue
        old = (feat.get("dtype"), feat.get("shape"))
        feat["dtype"], feat["shape"] = new["dtype"], new["shape"]
        rc.decl_changed[name] = "I006"
        written = [INFO_PATH]
        if op is not None:
            for rel in files:
                rc.add_op(rel, ColumnOp(op.kind, name, op.length, check="I006"))
            written += files
        rc.repair("I006", f"feature {name!r}: dtype/shape {old[0]!r} {old[1]!r} -> {new['dtype']} {new['shape']} "
                  f"(from its column, {t}, the same in every data file)", written, subject)


# =========================================================================== S002 undeclared columns
def feature_from_arrow(name: str, t: Any, lengths: Callable[[], set[int] | None]) -> tuple[dict | None, ColumnOp | None, str]:
    """The info.json declaration for an undeclared column of Arrow type ``t``.

    Args:
        name: the column.
        t: its Arrow type (the same in every data file).
        lengths: returns the distinct row lengths of a variable-length list column over every data file
            (None when they cannot be read); called only for such columns.

    Returns:
        ``(feature, op, reason)``: the feature dict (None when no LeRobot dtype fits, ``reason`` says why) and
        the column operation the declaration needs (a variable list of constant length is cast to
        ``fixed_size_list``; a one-element list to a scalar), or None.
    """
    form = column_form(t)
    if form.kind == "scalar":
        return {"dtype": form.value, "shape": [1], "names": None}, None, ""
    if form.kind == "string":
        return {"dtype": "string", "shape": [1], "names": None}, None, ""
    if name in LANGUAGE_COLUMNS and form.kind in ("list", "struct"):
        return {"dtype": "language", "shape": [1], "names": None}, None, ""
    if form.kind == "list" and form.value not in (None, "string"):
        if form.depth == 1:
            n = form.lengths[0]
            if n is None:
                seen = lengths()
                if seen is None:
                    return None, None, "its row lengths cannot be read"
                if len(seen) != 1:
                    shown = sorted(seen)[:5]
                    return None, None, (f"it is a variable-length list whose rows hold {shown} elements; a feature "
                                        "needs one fixed shape")
                n = seen.pop()
                if n < 1:
                    return None, None, "every row is an empty list"
                op = ColumnOp("scalar", name, check="S002") if n == 1 else ColumnOp("fixed", name, n, check="S002")
                return {"dtype": form.value, "shape": [n], "names": None}, op, ""
            if n == 1:
                return {"dtype": form.value, "shape": [1], "names": None}, ColumnOp("scalar", name, check="S002"), ""
            return {"dtype": form.value, "shape": [n], "names": None}, None, ""
        if form.fixed and 2 <= form.depth <= 5:
            return {"dtype": form.value, "shape": list(form.lengths), "names": None}, None, ""
        return None, None, f"it is a nested variable-length list ({form.arrow}) with no fixed shape"
    return None, None, f"no LeRobot dtype describes {form.arrow}"


def fix_undeclared(rc: RepairContext) -> None:
    """S002: a column in the data parquet that info.json does not declare (docs/failure-modes.md#undeclared-column).
    Declared from its Arrow type when every data file has it with one type; or, with ``--drop-undeclared``, dropped
    from every data file that has it (the backup keeps the originals)."""
    feats = rc.feats
    columns: dict[str, dict[str, Any]] = {}
    for rel, footer in rc.footers.items():
        for f in footer.schema:
            feat = feats.get(f.name)
            if not isinstance(feat, dict) or feat.get("dtype") == "video":
                columns.setdefault(f.name, {})[rel] = f.type
    for name, per_file in columns.items():
        subject = column_subject(name)
        files = list(per_file)
        if rc.options.drop_undeclared:
            for rel in files:
                rc.add_op(rel, ColumnOp("drop", name, check="S002"))
            rc.repair("S002", f"drop undeclared column {name!r} from {files_text(files)}", files, subject)
            continue
        if isinstance(feats.get(name), dict):
            rc.cannot("S002", f"column {name!r} holds data for a video feature (its frames belong in mp4 files)",
                      "drop the column with --drop-undeclared, or rename it and declare it", subject)
            continue
        if rc.bad_data_files:
            rc.cannot("S002", f"{len(rc.bad_data_files)} data file(s) cannot be read, so whether they hold {name!r} "
                      "and with which type is unknown", "restore the unreadable data files first, or drop the column "
                      "with --drop-undeclared", subject)
            continue
        lacking = [rel for rel in rc.footers if rel not in per_file]
        if lacking:
            rc.cannot("S002", f"column {name!r} is in {len(per_file)} of {len(rc.footers)} data files; declaring it "
                      f"would leave {lacking[0]} without it", "drop it with --drop-undeclared, or add it to every file",
                      subject)
            continue
        types = {str(t) for t in per_file.values()}
        if len(types) > 1:
            rc.cannot("S002", f"data files store {name!r} with different types ({', '.join(sorted(types))})",
                      "rewrite the files with one type, or drop it with --drop-undeclared", subject)
            continue
        t = next(iter(per_file.values()))
        feat, op, reason = feature_from_arrow(name, t, partial(lengths_over_files, rc, name, files))
        if feat is None:
            rc.cannot("S002", f"column {name!r}: {reason}",
                      "declare it by hand in info.json features (dtype, shape, names), or drop it with --drop-undeclared",
                      subject)
            continue
        others = [f for f in feats.values() if isinstance(f, dict) and f.get("dtype") != "video"]
        if others and all("fps" in f for f in others) and feat["dtype"] != "language":
            feat["fps"] = others[0]["fps"]  # v2.1->v3.0 converted datasets carry fps on every data feature
        feats[name] = feat
        rc.decl_changed[name] = "S002"
        written = [INFO_PATH]
        extra = ""
        if op is not None:
            for rel in files:
                rc.add_op(rel, op)
            written += files
            extra = (f"; cast to a scalar column in {files_text(files)}" if op.kind == "scalar" else
                     f"; cast to fixed_size_list[{op.length}] in {files_text(files)} (every row holds {op.length})")
        rc.repair("S002", f"declare column {name!r} as {feat['dtype']} {feat['shape']} (from its Arrow type "
                  f"{t}){extra}", written, subject)
