"""One function per repair, each tied to the check ID(s) it fixes.

Every fix reads the dataset itself (the validate report only says *which* checks fired; grouped findings
do not list every file) and records, on a shared :class:`RepairContext`, either planned changes plus a
:class:`~lerobot_tools.repair.model.Repair`, or an :class:`~lerobot_tools.repair.model.Unrepairable` saying
why not and what the user must do. Nothing is written here. A fix never guesses: a counter is recomputed
only from files that can be read, a declaration is taken from the data only when every data file agrees,
a list is cast to a fixed size only after every row's length was checked.

Sources of the format facts: lerobot-format §2 (templates), §3 (counters), §4 (features), §5 (physical
variants, ``huggingface`` metadata), §7 (task tables), §10.2 (video ``info`` keys); pitfalls A1-A12, B1-B6,
C11 (repair column).
"""

from __future__ import annotations

import copy
import math
from functools import cached_property, partial
from typing import Any, Callable

from lerobot_tools.checks.info import names_problem
from lerobot_tools.dataset import templates as tpl
from lerobot_tools.dataset.features import (
    column_form, compare_feature, drifted_columns, hf_entry_agrees, hf_metadata_problems, parse_hf_metadata,
)
from lerobot_tools.dataset.footers import FooterInfo, read_footer
from lerobot_tools.dataset.model import DEFAULT_FEATURES, INFO_PATH, STATS_PATH, Dataset
from lerobot_tools.errors import DatasetError
from lerobot_tools.repair import hfmeta
from lerobot_tools.repair.model import (
    ColumnOp, Move, ParquetChange, Repair, RepairOptions, Subject, TasksRewrite, Unrepairable,
)
from lerobot_tools.findings import DatasetReport, Finding
from lerobot_tools.sniff import sniff

#: Column names lerobot declares with dtype ``language`` (lerobot-format §4).
LANGUAGE_COLUMNS = ("language_persistent", "language_events")


class RepairContext:
    """What the fixes share while planning one dataset: the dataset, the validate report, a mutable copy of
    info.json, and the changes planned so far.

    Attributes:
        ds: the dataset (read-only).
        report: the validate report the plan is made from.
        options: repair options.
        info: deep copy of info.json that fixes edit.
        repairs, unrepairable: what the plan will and will not do.
        parquet: planned data-file changes by relative path.
        decl_changed: feature name -> check ID of the fix that changed its declaration.
        restore_hf: data files whose ``huggingface`` metadata is rebuilt in full (S006).
        task_rows: the final task table rows when a fix changed them (None = unchanged).
        tasks_rewrite: the planned ``tasks.parquet`` rewrite (v3.0).
        v2_task_lines: rows appended to ``meta/tasks.jsonl`` (v2.x).
        moves: planned file moves (--move-files).
    """

    def __init__(self, ds: Dataset, report: DatasetReport, options: RepairOptions):
        self.ds = ds
        self.report = report
        self.options = options
        self.info: dict = copy.deepcopy(ds.info)
        self.repairs: list[Repair] = []
        self.unrepairable: list[Unrepairable] = []
        self.parquet: dict[str, ParquetChange] = {}
        self.decl_changed: dict[str, str] = {}
        self.restore_hf: set[str] = set()
        self.task_rows: list[tuple[int, str]] | None = None
        self.tasks_rewrite: TasksRewrite | None = None
        self.v2_task_lines: list[tuple[int, str]] = []
        self.moves: list[Move] = []

    # ---------------------------------------------------------------- findings
    def findings(self, check: str) -> list[Finding]:
        return [f for f in self.report.findings if f.check == check]

    def has(self, *checks: str) -> bool:
        return any(f.check in checks for f in self.report.findings)

    def wants(self, check: str) -> bool:
        """The report has findings of ``check`` that are not left alone (a form lerobot's own writer produces,
        see :meth:`RepairOptions.leaves_alone`) and ``--only`` selects it."""
        return self.options.selected(check) and any(not self.options.leaves_alone(f) for f in self.findings(check))

    # ---------------------------------------------------------------- outcome
    def repair(self, check: str, summary: str, files: list[str], subject: Subject = None) -> None:
        """Plan a repair of the findings of ``check`` whose subject matches ``subject`` (None = all)."""
        self.repairs.append(Repair(check, summary, sorted(set(files), key=files.index), subject))

    def cannot(self, check: str, reason: str, todo: str, subject: Subject = None) -> None:
        """Record that the findings of ``check`` matching ``subject`` (None = all) are not repairable."""
        self.unrepairable.append(Unrepairable(check, reason, todo, subject))

    # ---------------------------------------------------------------- data files
    @property
    def feats(self) -> dict:
        feats = self.info.get("features")
        return feats if isinstance(feats, dict) else {}

    @cached_property
    def data_files(self) -> list:
        try:
            return self.ds.data_files()
        except DatasetError:
            return []

    @cached_property
    def _footer_scan(self) -> tuple[dict[str, FooterInfo], set[str]]:
        footers: dict[str, FooterInfo] = {}
        bad: set[str] = set()
        for df in self.data_files:
            try:
                path = self.ds.path(df.relpath)
                s = sniff(path)
                if s.kind != "ok":  # missing, unreadable, or a placeholder (LFS pointer, error page, empty)
                    bad.add(df.relpath)
                    continue
                footers[df.relpath] = read_footer(path, df.relpath)
            except DatasetError:
                bad.add(df.relpath)
        return footers, bad

    @property
    def footers(self) -> dict[str, FooterInfo]:
        """Readable referenced data files -> footer (loader order)."""
        return self._footer_scan[0]

    @property
    def bad_data_files(self) -> set[str]:
        """Referenced data files that are missing or unreadable (their content is unknown)."""
        return self._footer_scan[1]

    def add_op(self, rel: str, op: ColumnOp) -> None:
        """Plan a column operation on a data file (applied after the ones planned before it)."""
        change = self.parquet.setdefault(rel, ParquetChange(rel))
        if any((o.kind, o.column) == (op.kind, op.column) for o in change.ops):
            return
        change.ops.append(op)

    def planned_schema(self, rel: str):
        """The Arrow schema of a data file after the column operations planned so far."""
        from lerobot_tools.repair.parquet import new_schema

        footer = self.footers[rel]
        change = self.parquet.get(rel)
        return new_schema(footer.schema, change.ops if change else [], None)

    def planned_columns(self, name: str) -> dict[str, Any]:
        """rel -> planned Arrow type of column ``name`` in every readable data file that has it."""
        out = {}
        for rel in self.footers:
            schema = self.planned_schema(rel)
            if name in schema.names:
                out[rel] = schema.field(name).type
        return out



def _lengths_over_files(rc: "RepairContext", name: str, files: list[str]) -> set[int] | None:
    """Distinct row lengths of list column ``name`` over ``files`` (None when a file cannot be read)."""
    from lerobot_tools.repair.parquet import distinct_list_lengths

    seen: set[int] = set()
    for rel in files:
        got = distinct_list_lengths(rc.ds.path(rel), name)
        if got is None:
            return None
        seen |= got
    return seen

def _subject(name: str) -> dict[str, str]:
    return {"feature": name}


def _files_text(files: list[str]) -> str:
    return f"{len(files)} data file(s)" if len(files) != 1 else files[0]


# =========================================================================== I005 fps
def fix_fps(rc: RepairContext) -> None:
    """I005: ``fps`` stored as an integral float (``30.0``) is written as the integer (``30``); lerobot's
    converter casts with ``int()`` too (pitfalls A10). A fractional or non-positive fps is not mechanical."""
    fps = rc.info.get("fps")
    if isinstance(fps, float) and not isinstance(fps, bool) and fps > 0 and fps.is_integer():
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
        subject = _subject(name)
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
        subject = _subject(name)
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
        new, op, reason = feature_from_arrow(name, t, partial(_lengths_over_files, rc, name, files))
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
    """S002: a column in the data parquet that info.json does not declare (pitfalls A1). Declared from its
    Arrow type when every data file has it with one type; or, with ``--drop-undeclared``, dropped from every
    data file that has it (the backup keeps the originals)."""
    feats = rc.feats
    columns: dict[str, dict[str, Any]] = {}
    for rel, footer in rc.footers.items():
        for f in footer.schema:
            feat = feats.get(f.name)
            if not isinstance(feat, dict) or feat.get("dtype") == "video":
                columns.setdefault(f.name, {})[rel] = f.type
    for name, per_file in columns.items():
        subject = _subject(name)
        files = list(per_file)
        if rc.options.drop_undeclared:
            for rel in files:
                rc.add_op(rel, ColumnOp("drop", name, check="S002"))
            rc.repair("S002", f"drop undeclared column {name!r} from {_files_text(files)}", files, subject)
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
        feat, op, reason = feature_from_arrow(name, t, partial(_lengths_over_files, rc, name, files))
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
            extra = (f"; cast to a scalar column in {_files_text(files)}" if op.kind == "scalar" else
                     f"; cast to fixed_size_list[{op.length}] in {_files_text(files)} (every row holds {op.length})")
        rc.repair("S002", f"declare column {name!r} as {feat['dtype']} {feat['shape']} (from its Arrow type "
                  f"{t}){extra}", written, subject)


# =========================================================================== S004 shape
def fix_shape(rc: RepairContext) -> None:
    """S004: a ``[1]`` feature stored as a one-element list is cast to a scalar column (pitfalls A3; every
    row checked to hold exactly one element). A vector stored with another fixed length in every data file is
    re-declared with that shape only when its names and stats.json agree with the stored length."""
    from lerobot_tools.repair.parquet import scan_list_lengths

    for name, feat in list(rc.feats.items()):
        if not isinstance(feat, dict) or feat.get("dtype") in ("video", "image", "language"):
            continue
        per_file = rc.planned_columns(name)
        bad = {rel: t for rel, t in per_file.items()
               if any(c == "S004" for c, _, _ in compare_feature(name, feat, t))}
        if not bad:
            continue
        subject = _subject(name)
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
            rc.repair("S004", f"cast one-element list column {name!r} to a scalar column in {_files_text(list(bad))}",
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
    """S005: a fixed-length vector stored as a variable-length list (a pandas round-trip, pitfalls A4) is
    cast to ``fixed_size_list[N]`` after every row of every affected file was checked to hold N elements;
    a single row of another length makes it not repairable (D005)."""
    from lerobot_tools.repair.parquet import scan_list_lengths

    for name, feat in rc.feats.items():
        if not isinstance(feat, dict) or feat.get("dtype") in ("video", "image", "string", "language"):
            continue
        files = [rel for rel, t in rc.planned_columns(name).items()
                 if any(c == "S005" for c, _, _ in compare_feature(name, feat, t))]
        if not files:
            continue
        n = feat["shape"][0]
        subject = _subject(name)
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
        rc.repair("S005", f"cast {name!r} from a variable-length list to fixed_size_list[{n}] in {_files_text(files)} "
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
        subject = _subject(name)
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
        rc.repair("S003", f"cast {name!r} to the declared {dtype} in {_files_text(odd)} ({why}; every value converts "
                  "exactly)", odd, subject)
        if rc.has("S007"):
            rc.repair("S007", f"{name!r}: the odd file(s) now store the declared {dtype}", odd, subject)


# =========================================================================== F009 video declarations
def fix_video_declarations(rc: RepairContext) -> None:
    """F009: ``video.codec``, ``video.pix_fmt``, ``video.fps`` and the feature shape (and ``video.height`` /
    ``video.width``) follow the probed stream when every referenced file of that camera is readable and they
    all agree (lerobot writes these keys from episode 0's file only, pitfalls D7). A stream frame rate that
    differs from info.json ``fps`` is not repairable: changing fps would re-time every frame."""
    from lerobot_tools.video.compare import compare_header, declared_video_info, frame_rate_differs
    from lerobot_tools.video.probe import probe_video, pyav_available

    ds = rc.ds
    if not pyav_available():
        rc.cannot("F009", "PyAV is not installed, so the streams cannot be probed", "pip install av, then rerun")
        return
    try:
        files = ds.video_files()
    except DatasetError as exc:
        rc.cannot("F009", exc.message, "fix the episode metadata / video_path first")
        return
    info_fps = ds.fps
    for key in ds.video_keys:
        if not any(f.concerns({"video_key": key}) for f in rc.findings("F009")):
            continue
        subject = {"video_key": key}
        probes = []
        problem = None
        for vf in (v for v in files if v.video_key == key):
            p = probe_video(ds.path(vf.relpath), pyav=True)
            if not p.ok:
                problem = f"{vf.relpath} cannot be probed ({p.problem})"
                break
            probes.append(p)
        if problem or not probes:
            rc.cannot("F009", problem or f"no video file of {key} is referenced",
                      "restore the video files, then rerun", subject)
            continue
        streams = {(p.codec, p.pix_fmt, p.width, p.height) for p in probes}
        if len(streams) > 1:
            rc.cannot("F009", f"the video files of {key} are encoded differently ({len(streams)} kinds)",
                      "re-encode the odd files like the others (lerobot reads one declaration per camera)", subject)
            continue
        codec, pix_fmt, width, height = streams.pop()
        rates = [p.fps for p in probes if p.fps]
        feat = rc.feats.get(key)
        vinfo = declared_video_info(feat)  # the dict validate's F009 reads, edited in place
        mismatched = {m.field for m in compare_header(feat, info_fps, probes[0])}
        rate_ok = not any(frame_rate_differs(r, info_fps) for r in rates)
        if not rate_ok:
            rc.cannot("F009", f"{key} streams run at {rates[0]:.3f} fps but info.json fps is {info_fps:g}",
                      "re-encode the videos at the dataset fps (changing fps would re-time every frame)",
                      {"video_key": key, "key": "fps"})
        changes: list[tuple[str, str]] = []  # (what changes, info.json key: the F009 findings it fixes)
        if "video.codec" in mismatched:
            changes.append((f"video.codec {vinfo['video.codec']} -> {codec}", "video.codec"))
            vinfo["video.codec"] = codec
        if "video.pix_fmt" in mismatched:
            changes.append((f"video.pix_fmt {vinfo['video.pix_fmt']} -> {pix_fmt}", "video.pix_fmt"))
            vinfo["video.pix_fmt"] = pix_fmt
        if "shape" in mismatched:
            shape = feat["shape"]
            names = feat.get("names")
            chw = isinstance(names, list) and names[:1] == ["channels"]
            new_shape = [shape[0], height, width] if chw else [height, width, shape[2]]
            changes.append((f"shape {shape} -> {new_shape}", "shape"))
            feat["shape"] = new_shape
            for k, v in (("video.height", height), ("video.width", width)):
                if k in vinfo:
                    vinfo[k] = v
        if changes and rate_ok and rates and "video.fps" in vinfo:
            r = sum(rates) / len(rates)
            new_fps = int(round(r)) if abs(r - round(r)) < 0.01 else round(r, 3)
            if vinfo["video.fps"] != new_fps:
                changes.append((f"video.fps {vinfo['video.fps']} -> {new_fps}", "video.fps"))
                vinfo["video.fps"] = new_fps
        for text, info_key in changes:
            rc.repair("F009", f"{key}: {text} (probed in all {len(probes)} file(s))", [INFO_PATH],
                      {"video_key": key, "key": info_key})


# =========================================================================== F002/F003 video_path
#: Neighbouring video layouts recognised per layout (the defaults, the other camera/chunk nesting, and
#: the names of stale documentation, lerobot-format §2.2).
NEIGHBOUR_VIDEO_TEMPLATES = {
    "v2": [
        tpl.V2_VIDEO_PATH,
        "videos/{video_key}/chunk-{episode_chunk:03d}/episode_{episode_index:06d}.mp4",
        "videos/{video_key}/episode_{episode_index:06d}.mp4",
    ],
    "v3": [
        tpl.V3_VIDEO_PATH,
        "videos/chunk-{chunk_index:03d}/{video_key}/file-{file_index:03d}.mp4",
        "videos/{video_key}/chunk-{chunk_index:03d}/file_{file_index:03d}.mp4",
        "videos/{video_key}/chunk-{chunk_index:03d}/file-{file_index:04d}.mp4",
    ],
}


def _video_pairs(ds: Dataset, current: str, candidate: str) -> list[tuple[str, str]] | None:
    """(path under ``current``, path under ``candidate``) for every referenced video file, or None when a
    template cannot be expanded or leaves the root."""
    out: dict[str, str] = {}
    size = ds.chunks_size
    for ep in ds.episodes:
        for key in ds.video_keys:
            values: dict[str, Any] = {"video_key": key}
            if ds.layout == "v3":
                seg = ep.videos.get(key)
                if seg is None or seg.chunk_index is None or seg.file_index is None:
                    continue
                values.update(chunk_index=seg.chunk_index, file_index=seg.file_index)
            else:
                values.update(episode_index=ep.episode_index, episode_chunk=ep.episode_index // size)
            try:
                a, b = current.format(**values), candidate.format(**values)
            except (KeyError, ValueError, IndexError, TypeError):
                return None
            if tpl.escapes_root(a) or tpl.escapes_root(b):
                return None
            if out.get(a, b) != b:
                return None  # two referenced files would map to one
            out[a] = b
    if len(set(out.values())) != len(out):
        return None
    return sorted(out.items())


def fix_video_path(rc: RepairContext) -> None:
    """F002 + F003: every referenced video is missing where ``video_path`` points, while all of them sit in
    one recognisable neighbouring layout (e.g. the v2.1 default). Default: rewrite the template; with
    ``--move-files``: move the files to where the template points. Never both."""
    ds = rc.ds
    want_f002 = rc.options.selected("F002")
    if not ds.video_keys or not want_f002:
        return
    current = ds.video_path
    todo = "restore the missing video files (e.g. `lrtool prefetch`), or fix video_path by hand"
    try:
        if current is None:
            raise DatasetError("video_path is null", INFO_PATH)
        pairs0 = _video_pairs(ds, current, current)
    except DatasetError as exc:
        rc.cannot("F002", exc.message, todo)
        return
    if not pairs0:
        return
    present = [a for a, _ in pairs0 if sniff(ds.path(a)).kind != "missing"]
    matches = []
    for cand in dict.fromkeys(NEIGHBOUR_VIDEO_TEMPLATES.get(ds.layout or "", [])):
        if cand == current:
            continue
        pairs = _video_pairs(ds, current, cand)
        if pairs and all(sniff(ds.path(b)).kind != "missing" for _, b in pairs):
            matches.append((cand, pairs))
    if present or len(matches) != 1:
        why = ("some referenced video files exist where video_path points and others do not" if present and matches else
               "the missing video files are not all in one recognisable neighbouring layout")
        rc.cannot("F002", why, todo)
        return
    cand, pairs = matches[0]
    referenced_new = {b for _, b in pairs}
    orphans = {rel for rel in ds.files_under("videos", ".mp4")} - {a for a, _ in pairs}
    explained = orphans <= referenced_new
    if rc.options.move_files:
        problems = tpl.template_problems(current, layout=ds.layout, video=True)
        if problems:
            rc.cannot("F002", f"video_path {current!r} {problems[0]}", "fix video_path, or rerun without --move-files "
                      f"to point it at {cand!r}")
            return
        clash = [a for a, _ in pairs if (ds.root / a).exists()]
        if clash:
            rc.cannot("F002", f"{clash[0]} already exists", "move it away, then rerun")
            return
        for a, b in pairs:
            rc.moves.append(Move(src=b, dst=a, check="F002"))
        rc.repair("F002", f"move {len(pairs)} video file(s) from the layout {cand!r} to where video_path points "
                  f"({current!r})", [b for _, b in pairs] + [a for a, _ in pairs])
    else:
        if ds.layout == "v3" and cand != tpl.V3_VIDEO_PATH:
            rc.cannot("F002", f"the video files sit in the non-default v3.0 layout {cand!r}; lerobot tools hard-code "
                      "the default template", "rerun with --move-files to move them where video_path points")
            return
        rc.info["video_path"] = cand
        rc.repair("F002", f"video_path {current!r} -> {cand!r} (where all {len(pairs)} referenced video files are)",
                  [INFO_PATH])
    if rc.has("F003") and rc.options.selected("F003"):
        if explained:
            rc.repair("F003", "the unreferenced video files are the ones " + (
                "moved where video_path points" if rc.options.move_files else "the repaired video_path references"),
                [INFO_PATH] if not rc.options.move_files else [], {"file_kind": "video"})
        else:
            rc.cannot("F003", f"{len(orphans - referenced_new)} video file(s) stay unreferenced",
                      "delete the stray files or fix the metadata that should reference them", {"file_kind": "video"})


# =========================================================================== T004/T007/T002 task table
def fix_tasks(rc: RepairContext) -> None:
    """T004 and T007 (v3.0): ``tasks.parquet`` rewritten as lerobot writes it (pandas index ``task``, one
    ``task_index`` column, rows by position) with the same task_index -> task mapping (pitfalls B1, B2).
    T002: labels referenced by episodes but missing from the table are appended with new indices
    (``tasks.jsonl`` line / ``tasks.parquet`` row, pitfalls B4); ``total_tasks`` follows."""
    ds = rc.ds
    wants = [c for c in ("T004", "T007", "T002") if rc.wants(c)]
    if not wants:
        return
    try:
        table = ds.tasks
    except DatasetError as exc:
        for c in wants:
            rc.cannot(c, exc.message, "restore the task table (T001) first")
        return
    if table.problems:
        for c in wants:
            rc.cannot(c, f"{table.path} has malformed rows ({table.problems[0]}); a rewrite would drop them",
                      "fix the malformed rows by hand, then rerun")
        return
    rows = list(table.rows)
    indices = [i for i, _ in rows]
    positional = sorted(indices) == list(range(len(indices)))
    rewrite: list[str] = []
    if ds.layout == "v3":
        if "T004" in wants:
            if table.form == "unknown":
                rc.cannot("T004", "tasks.parquet has no column holding the task strings",
                          "rebuild meta/tasks.parquet (task string index 'task', task_index column) by hand")
            elif table.form != "pandas-index":
                rewrite.append("T004")
                rc.repair("T004", f"rewrite {table.path} from the {table.form} form to the pandas-index form "
                          f"(index 'task', column task_index), same {len(rows)} task(s)", [table.path])
        if "T007" in wants:
            if positional:
                rows.sort()
                rewrite.append("T007")
                rc.repair("T007", f"sort {table.path} rows by task_index so that task_index == row position "
                          "(mapping unchanged)", [table.path])
            else:
                rc.cannot("T007", f"task_index values {sorted(indices)[:8]} are not 0..{len(indices) - 1}",
                          "renumber the tasks and the task_index column of every data file (not mechanical)")
    elif "T007" in wants:
        rc.cannot("T007", f"task_index values in {table.path} are not 0..{len(indices) - 1}",
                  "renumber the tasks and the task_index column of every data file (not mechanical)")
    if "T002" in wants:
        _append_missing_labels(rc, table, rows, positional, rewrite)
    if rewrite and ds.layout == "v3":
        rc.tasks_rewrite = TasksRewrite(table.path, list(table.rows), rows, table.form, sorted(set(rewrite)))
    if rows != table.rows:
        rc.task_rows = rows


def _append_missing_labels(rc: RepairContext, table, rows: list[tuple[int, str]], positional: bool,
                           rewrite: list[str]) -> None:
    ds = rc.ds
    known = {label for _, label in rows}
    missing: list[str] = []
    int_refs = False
    try:
        episodes = ds.episodes
    except DatasetError as exc:
        rc.cannot("T002", exc.message, "fix the episode metadata first")
        return
    by_index = {i for i, _ in rows}
    for e in episodes:
        for t in e.tasks:
            if isinstance(t, bool):
                continue
            if isinstance(t, int):
                int_refs = True
                if t not in by_index:
                    rc.cannot("T002", f"episode {e.episode_index} references task index {t}, which has no task",
                              "give the episode its task string", {"task": t})
            elif isinstance(t, str) and t not in known and t not in missing:
                missing.append(t)
    if int_refs:
        rc.cannot("T002", "some episodes list task indices instead of task strings",
                  "replace the integers in the episodes' tasks lists with the task strings", {"key": "tasks"})
    if not missing:
        return
    if ds.layout == "v3" and not positional:
        rc.cannot("T002", f"{table.path} rows are not 0..N-1 by position, so new rows have no safe index",
                  "renumber the task table first (T007)")
        return
    nxt = (max(i for i, _ in rows) + 1) if rows else 0
    for label in missing:
        rows.append((nxt, label))
        rc.repair("T002", f"append task {label!r} as task_index {nxt} to {table.path}", [table.path], {"task": label})
        if ds.layout != "v3":
            rc.v2_task_lines.append((nxt, label))
        nxt += 1
    if ds.layout == "v3":
        rewrite.append("T002")
    total = ds.total("total_tasks")
    if total is not None and total == len(table.rows):
        rc.info["total_tasks"] = len(rows)  # the counter was right; keep it right (T006 would fire otherwise)
        rc.repair("T002", f"total_tasks {total} -> {len(rows)} (labels appended)", [INFO_PATH], {"task": missing[0]})


# =========================================================================== counters
def fix_counters(rc: RepairContext) -> None:
    """C001 ``total_episodes``, C002 ``total_frames``, T006 ``total_tasks``, C003 ``total_videos`` /
    ``total_chunks`` (v2.x) and C008 ``splits``, recomputed from what is on disk (lerobot-format §3.1,
    pitfalls B3, C11). A counter of data that cannot be read is never guessed or zeroed."""
    ds = rc.ds
    try:
        episodes = ds.episodes
        eps_ok = not ds.episode_problems and not rc.has("C004")
        eps_error = "the episode metadata has malformed rows or duplicate indices" if not eps_ok else ""
    except DatasetError as exc:
        episodes, eps_ok, eps_error = [], False, exc.message
    fix_eps = "fix the episode metadata (C004/C007) first"

    if rc.wants("C001"):
        if not eps_ok:
            rc.cannot("C001", f"episodes cannot be counted: {eps_error}", fix_eps)
        else:
            _set_counter(rc, "C001", "total_episodes", len(episodes), f"{len(episodes)} episode(s) in the metadata")

    if rc.wants("C002"):
        if not eps_ok:
            rc.cannot("C002", f"frames cannot be counted: {eps_error}", fix_eps)
        elif rc.bad_data_files or not rc.data_files:
            bad = sorted(rc.bad_data_files)
            rc.cannot("C002", f"{len(bad)} data file(s) are missing or unreadable (e.g. {bad[0]}); lrtool does not "
                      "guess the frames it cannot read" if bad else "no data file is referenced",
                      "restore the data files (F001/F007), then rerun")
        else:
            rows = sum(f.num_rows for f in rc.footers.values())
            lengths = [e.length for e in episodes]
            if all(n is not None for n in lengths) and sum(lengths) != rows:
                rc.cannot("C002", f"the data files hold {rows} rows but the episode lengths sum to {sum(lengths)}",
                          "fix the episode lengths or the data (C005) first")
            else:
                _set_counter(rc, "C002", "total_frames", rows, f"{rows} rows in {len(rc.footers)} data file(s)")

    if rc.wants("T006"):
        try:
            table = ds.tasks
            rows = rc.task_rows if rc.task_rows is not None else table.rows
            if table.problems:
                raise DatasetError(f"has malformed rows ({table.problems[0]})", table.path)
            _set_counter(rc, "T006", "total_tasks", len(rows), f"{len(rows)} task(s) in {table.path}")
        except DatasetError as exc:
            rc.cannot("T006", f"tasks cannot be counted: {exc}", "restore the task table (T001) first")

    if rc.wants("C003") and ds.layout == "v2":
        if not eps_ok:
            rc.cannot("C003", f"episodes cannot be counted: {eps_error}", fix_eps)
        else:
            n_keys = len(ds.video_keys)
            if ds.total("total_videos") is not None:
                _set_counter(rc, "C003", "total_videos", len(episodes) * n_keys,
                             f"{len(episodes)} episode(s) x {n_keys} video key(s)")
            if ds.total("total_chunks") is not None:
                _set_counter(rc, "C003", "total_chunks", math.ceil(len(episodes) / ds.chunks_size) if episodes else 0,
                             f"ceil({len(episodes)} / {ds.chunks_size})")

    if rc.wants("C008"):
        splits = rc.info.get("splits")
        if not eps_ok:
            rc.cannot("C008", f"episodes cannot be counted: {eps_error}", fix_eps)
        elif isinstance(splits, dict) and len(splits) == 1:
            key = next(iter(splits))
            new = f"0:{len(episodes)}"
            if splits[key] != new:
                rc.info["splits"] = {key: new}
                rc.repair("C008", f"splits {{{key!r}: {splits[key]!r}}} -> {{{key!r}: {new!r}}} (all {len(episodes)} "
                          "episodes, as lerobot writes it)", [INFO_PATH])
        else:
            rc.cannot("C008", "splits names several splits; which episodes belong to which is not mechanical",
                      "correct the ranges by hand ('start:end' within 0:total_episodes)")


def _set_counter(rc: RepairContext, check: str, key: str, value: int, why: str) -> None:
    old = rc.info.get(key)
    if old == value and not isinstance(old, bool):
        return
    rc.info[key] = value
    rc.repair(check, f"{key} {old!r} -> {value} ({why})", [INFO_PATH], {"key": key})


# =========================================================================== S006 huggingface metadata
def fix_hf_metadata(rc: RepairContext) -> None:
    """S006: a data file without (or with wrong) ``huggingface`` schema metadata gets it rebuilt from info.json
    as ``datasets`` writes it (pitfalls A4, lerobot-format §5.3). Runs after every declaration change."""
    files = []
    for rel, footer in rc.footers.items():
        schema = rc.planned_schema(rel)
        if hf_metadata_problems(rc.feats, schema, footer.metadata.get("huggingface"),
                                drifted=drifted_columns(rc.feats, schema)):
            files.append(rel)
    if files:
        rc.restore_hf.update(files)
        rc.repair("S006", f"restore the `huggingface` schema metadata of {_files_text(files)} from info.json", files)


def finalize(rc: RepairContext) -> None:
    """Decide the ``huggingface`` metadata of every data file the plan rewrites or whose declarations changed:
    S006 files get it rebuilt in full; other files that carry it get the entries of touched columns updated
    (so a declaration or cast never leaves the metadata contradicting info.json)."""
    for rel, footer in rc.footers.items():
        change = rc.parquet.get(rel)
        schema = rc.planned_schema(rel)
        raw = footer.metadata.get("huggingface")
        doc = parse_hf_metadata(raw)
        drifted = drifted_columns(rc.feats, schema)
        if rel in rc.restore_hf:
            base = doc if doc is not None else {"info": {"features": {}}}
            new = copy.deepcopy(base)
            new["info"]["features"] = hfmeta.rebuild_features(rc.feats, schema, base["info"]["features"], drifted)
            ch = rc.parquet.setdefault(rel, ParquetChange(rel))
            ch.hf_features = new
            ch.hf_checks.add("S006")
            continue
        if doc is None:
            continue
        touched: dict[str, str] = {}
        for op in change.ops if change else []:
            touched[op.column] = op.check
        for name in schema.names:
            if name in rc.decl_changed:
                touched.setdefault(name, rc.decl_changed[name])
        if not touched:
            continue
        old = doc["info"]["features"]
        feats = dict(old)
        checks = set()
        for name, check in touched.items():
            if name not in schema.names:
                if feats.pop(name, None) is not None:
                    checks.add(check)
                continue
            field_type = schema.field(name).type
            entry = feats.get(name)
            feat = rc.feats.get(name)
            if entry is None and not isinstance(feat, dict):
                continue
            if entry is None or not hf_entry_agrees(feat, entry) or not hfmeta.same_kind(entry, field_type):
                feats[name] = hfmeta.declared_feature_json(feat if name not in drifted else None, field_type)
                checks.add(check)
        if feats != old:
            new = copy.deepcopy(doc)
            new["info"]["features"] = feats
            ch = rc.parquet.setdefault(rel, ParquetChange(rel))
            ch.hf_features = new
            ch.hf_checks |= checks


#: The fixes in the order they run (declarations before casts before counters before metadata), with
#: the check IDs that trigger each. The catalogue states the same thing per check (``Check.repair ==
#: "auto"``, ``Check.repair_by`` = the fix's name; a test keeps them in agreement); S007 and F003 are fixed as
#: consequences of ``fix_dtype`` and ``fix_video_path`` and trigger nothing on their own.
FIXES: list[tuple[tuple[str, ...], Callable[[RepairContext], None]]] = [
    (("I005",), fix_fps),
    (("I006",), fix_feature_invalid),
    (("I007",), fix_names),
    (("S002",), fix_undeclared),
    (("S004",), fix_shape),
    (("S005",), fix_variable_lists),
    (("S003",), fix_dtype),
    (("F009",), fix_video_declarations),
    (("F002",), fix_video_path),
    (("T004", "T007", "T002"), fix_tasks),
    (("C001", "C002", "T006", "C003", "C008"), fix_counters),
    (("S006",), fix_hf_metadata),
]
