"""Plan a repair: validate the dataset, map every finding to a planned change or to "not repairable".

:func:`plan_repair` runs :func:`lerobot_tools.checks.engine.validate_contained` (deep, every video header), then
the fixes of :mod:`lerobot_tools.repair.fixes` in dependency order on an in-memory copy of info.json, and
returns a :class:`~lerobot_tools.repair.model.RepairPlan` whose concrete changes are fully computed (new
JSON text, parquet column operations and metadata, task-table rows, moves) but not yet written. A dataset
that validates clean of every repairable check gives an empty plan: nothing is written, no backup is made.
"""

from __future__ import annotations

import json
from pathlib import Path

from lerobot_tools.checks import catalogue
from lerobot_tools.checks.engine import validate_contained
from lerobot_tools.dataset.model import INFO_PATH, V2_TASKS_PATH, Dataset
from lerobot_tools.dataset.targets import Target
from lerobot_tools.errors import DatasetError
from lerobot_tools.findings import Finding
from lerobot_tools.repair import fixes
from lerobot_tools.repair.model import (
    Disposition, RepairOptions, RepairPlan, TextChange, Unrepairable, dump_like,
)

#: check ID -> the repair lrtool applies, from the catalogue (``Check.repair == "auto"``, ``repair_note``).
REPAIRABLE: dict[str, str] = {c.id: c.repair_note for c in catalogue.CATALOGUE.values() if c.repair == catalogue.AUTO}

#: Repairs that need info.json only (they run even when the layout is unknown).
INFO_ONLY = {"I005", "I007"}

#: What to do about a fix repair tried first and did not apply (:mod:`lerobot_tools.repair.judge`).
REJECTED_TODO = ("fix it by hand (the reason names what the planned change would break), or report it if "
                 "lrtool's change is wrong")


def _hub_cache_root(root: Path) -> bool:
    """True for a folder inside a huggingface_hub snapshot cache (files are symlinks into shared blobs)."""
    parts = Path(root).absolute().parts
    return "snapshots" in parts and any(p.startswith("datasets--") for p in parts)


def cannot_run_reason(target: Target) -> str | None:
    """Why repair must not touch ``target`` at all (unresolved; inside a hub snapshot cache), or None."""
    if target.error or target.root is None:
        return target.error or "the target could not be resolved"
    if target.origin == "hub-cache" or _hub_cache_root(target.root):
        return ("refusing to repair inside a huggingface_hub snapshot cache (its files are shared blobs); "
                "copy the dataset out (snapshot_download(local_dir=...)) and repair the copy")
    return None


def _lower(text: str) -> str:
    return text[:1].lower() + text[1:]


def refusal_reason(report) -> str | None:
    """Why no repair may be planned for a dataset, or None: its root cause
    (:meth:`~lerobot_tools.findings.DatasetReport.root_cause`: a cause many files share, such as a clone without
    ``git lfs pull``, or a metadata file every repair reads that is a placeholder or truncated), with its fix. A
    repair computed without that content could write wrong counts or drop rows: the cause is fixed first."""
    found = report.root_cause()
    if found is None:
        return None
    line, finding = found
    return f"{line}; fix: {_lower(_todo(finding.check))}" if finding is not None else line


def plan_repair(target: Target, options: RepairOptions | None = None, *, report=None,
                exclude: dict[str, str] | None = None) -> RepairPlan:
    """Validate ``target`` and plan the repairs of every repairable finding.

    Args:
        target: a resolved target (:func:`lerobot_tools.dataset.resolve_targets`).
        options: repair options (``--only``, ``--drop-undeclared``, ``--move-files``).
        report: the validate report to plan from (None: validate now). Planning again with fixes excluded
            reuses the first report.
        exclude: fix group (:attr:`~lerobot_tools.repair.model.Repair.group`) -> why it is not applied: those
            fixes are not run, and the findings they would fix are marked rejected with that reason
            (:mod:`lerobot_tools.repair.judge` decides which).

    Returns:
        The plan; ``plan.cannot_run`` is set (and nothing planned) when the target is unresolved or lives in
        a hub snapshot cache; ``plan.refused`` (and nothing planned) when content the repairs read is not on
        disk (:func:`refusal_reason`). Never raises for dataset problems.
    """
    options = options or RepairOptions()
    plan = RepairPlan(target=target.spec, root=target.root)
    plan.cannot_run = cannot_run_reason(target)
    if plan.cannot_run:
        return plan
    if report is None:
        report = validate_contained(target, options.validate_options())
    exclude = exclude or {}
    plan.before = report
    plan.codebase_version = report.codebase_version
    plan.refused = refusal_reason(report)
    if plan.refused:
        plan.dispositions = dispositions(report.findings, [], [], options)
        return plan
    try:
        ds = Dataset(target.root)
    except DatasetError:
        plan.dispositions = dispositions(report.findings, [], [], options)
        return plan
    rc = fixes.RepairContext(ds, report, options)
    for checks, fix in fixes.FIXES:
        if not (any(rc.has(c) or c in rc.implied for c in checks) and any(options.selected(c) for c in checks)):
            continue
        group = fix.__name__
        if group in exclude:
            for c in checks:
                if rc.has(c) and options.selected(c):
                    rc.unrepairable.append(Unrepairable(c, exclude[group], REJECTED_TODO, rejected=True))
            continue
        if ds.layout is None and not set(checks) <= INFO_ONLY:
            for c in checks:
                rc.cannot(c, "codebase_version is unknown, so the file layout is unknown",
                          "set codebase_version (I004), then rerun")
            continue
        first = len(rc.repairs)
        try:
            fix(rc)
        except Exception as exc:  # a bug in one fix must not take down the plan (or the other datasets)
            for c in checks:
                rc.cannot(c, f"lrtool failed while planning this repair ({type(exc).__name__}: {exc}); please report it",
                          _todo(c))
        for r in rc.repairs[first:]:
            r.group = group
    fixes.finalize(rc)
    plan.repairs = rc.repairs
    plan.unrepairable = rc.unrepairable
    _changes(plan, rc)
    plan.dispositions = dispositions(report.findings, rc.repairs, rc.unrepairable, options)
    return plan


# ---------------------------------------------------------------------- concrete changes
def same_json(a, b) -> bool:
    """True when ``a`` and ``b`` serialise to the same JSON text (keys in order, ``30`` is not ``30.0``): Python's
    ``==`` calls ``{"fps": 30} == {"fps": 30.0}`` equal, and a change it cannot see would be listed but never
    written."""
    return json.dumps(a, sort_keys=False) == json.dumps(b, sort_keys=False)


def keys_preserved(old, new, where: str = "") -> None:
    """Raise ValueError when a key of a JSON object in ``old`` is missing at the same place in ``new``
    (recursively through objects): repair never drops an info.json key, known or unknown."""
    if isinstance(old, dict):
        if not isinstance(new, dict):
            raise ValueError(f"{where or 'top level'} is no longer an object")
        for k, v in old.items():
            if k not in new:
                raise ValueError(f"key {where + '/' if where else ''}{k} was dropped")
            if isinstance(v, dict):
                keys_preserved(v, new[k], f"{where}/{k}" if where else k)


def _changes(plan: RepairPlan, rc: fixes.RepairContext) -> None:
    ds = rc.ds
    root = ds.root
    if not same_json(rc.info, ds.info):
        old_text = (root / INFO_PATH).read_text(encoding="utf-8")
        new_text = dump_like(old_text, rc.info)
        expected = json.loads(json.dumps(rc.info))
        original = ds.info

        def verify_info(text: str, expected=expected, original=original) -> None:
            obj = json.loads(text)
            if not same_json(obj, expected):
                raise ValueError("info.json does not read back as planned")
            keys_preserved(original, obj)

        checks = sorted({r.check for r in rc.repairs if INFO_PATH in r.files})
        plan.text_changes.append(TextChange(INFO_PATH, old_text, new_text, checks, verify_info))
    if rc.v2_task_lines:
        old_text = (root / V2_TASKS_PATH).read_text(encoding="utf-8")
        sep = "" if not old_text or old_text.endswith("\n") else "\n"
        added = "".join(json.dumps({"task_index": i, "task": label}, ensure_ascii=False) + "\n"
                        for i, label in rc.v2_task_lines)
        new_text = old_text + sep + added

        def verify_tasks(text: str, old_text=old_text, n=len(rc.v2_task_lines)) -> None:
            if not text.startswith(old_text.rstrip("\n")):
                raise ValueError("the existing task lines changed")
            tail = [json.loads(line) for line in text[len(old_text):].splitlines() if line.strip()]
            if len(tail) != n:
                raise ValueError("the appended task lines do not read back")

        plan.text_changes.append(TextChange(V2_TASKS_PATH, old_text, new_text, ["T002"], verify_tasks))
    plan.tasks_rewrite = rc.tasks_rewrite
    for rel in sorted(rc.parquet):
        change = rc.parquet[rel]
        if change.ops or change.hf_features is not None:
            plan.parquet_changes.append(change)
    plan.moves = list(rc.moves)
    for change in rc.file_changes:
        (plan.text_changes if isinstance(change, TextChange) else plan.rewrites).append(change)


# ---------------------------------------------------------------------- dispositions
#: Repairs that change a column's declaration or its stored type: a schema finding of the same feature is
#: fixed by them as a consequence (e.g. the S005 of a column that the S002 repair declares and casts).
DECLARATION_REPAIRS = {"I006", "S002", "S003", "S004", "S005", "S007"}


def dispositions(findings: list[Finding], repairs, unrepairable: list[Unrepairable],
                  options: RepairOptions) -> list[Disposition]:
    """Map each finding to what the plan does about it: not selected by --only, or a writer form left alone; not
    repairable (a specific reason from a fix, else the catalogue's); or the repair that fixes it. Findings are
    matched by check ID and subject (:meth:`~lerobot_tools.findings.Finding.concerns`), never by their message text."""
    out = []
    for f in findings:
        if not options.selected(f.check):
            out.append(Disposition(f, "not-selected", reason="not selected by --only"))
            continue
        if options.leaves_alone(f):
            on_request = (f"`lrtool repair --only {f.check}` rewrites it on request" if f.check in REPAIRABLE
                          else "nothing to do")
            out.append(Disposition(f, "not-selected",
                                   reason=f"the form lerobot's own writer produces, not a defect; {on_request}"))
            continue
        u = next((u for u in unrepairable if u.check == f.check and f.concerns(u.subject)), None)
        if u is not None:
            out.append(Disposition(f, "rejected" if u.rejected else "not-repairable", reason=u.reason, todo=u.todo))
            continue
        r = next((r for r in repairs if r.check == f.check and f.concerns(r.subject)), None)
        if r is None and f.check.startswith("S") and "feature" in f.subject:
            # a schema finding fixed as a consequence of a declaration repair of the same column (I006, S002...)
            r = next((r for r in repairs if r.check in DECLARATION_REPAIRS and r.subject and "feature" in r.subject
                      and f.concerns({"feature": r.subject["feature"]})), None)
        if r is not None:
            out.append(Disposition(f, "repair", repair=r))
            continue
        out.append(Disposition(f, "not-repairable", reason=_default_reason(f.check), todo=_todo(f.check)))
    return out


_dispositions = dispositions  # the name tests and callers used before it was public


def _default_reason(check: str) -> str:
    """Why a finding no repair covers is left alone: the catalogue's note, or, for a check repair fixes
    mechanically in general, that no safe change was found this time."""
    c = catalogue.CATALOGUE.get(check)
    if c is None:
        return "not mechanical"
    if c.repair == catalogue.AUTO:
        return "no change found that fixes it without guessing"
    return c.repair_note or "not mechanical"


def _todo(check: str) -> str:
    try:
        return catalogue.get(check).fix
    except KeyError:
        return "see `lrtool checks`"
