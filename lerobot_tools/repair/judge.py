"""Judge each fix by what it was for, on a shadow of the dataset, before a byte of the dataset changes.

:func:`evaluate` plans the repair, writes the whole plan into a :class:`~lerobot_tools.repair.shadow.Shadow` and
validates the shadow; a dry run reports that outcome and a real run applies exactly the plan it kept, so the two
agree. :func:`judge` compares the report before with the report after:

* **gone / remaining**: findings of the report before that disappeared / are still reported.
* **now visible** (:class:`Visible`): findings that appear and never veto a fix: info findings; warnings (the data
  still loads; e.g. a dimension whose true spread the recomputed statistics show to be 0); findings about files
  the repair moved into place (their bytes did not change: what they hold could not be checked before); findings
  of a check validate could not run at all before (a table the repair made readable), or, when files are moved in,
  could run only on the files that were there (``D002 across files``); an error about no file the
  plan writes or moves, of a check that has no more occurrences than before (said anew) or that the plan fixes
  (the rest of a finding fixed in part, e.g. the videos absent everywhere after the others were moved in).
* **vetoes**: every other new error (or an error whose occurrences grew): the written bytes caused it, so the fix
  that wrote them (:func:`attribute`: by the files and features it names, else by trying the plan without each
  candidate) is rejected, with that finding's message as the reason, and the others are tried again without it.

A fix is kept when it introduced no veto and some finding it targeted is gone (or has fewer occurrences); a fix
whose every target is still reported is rejected too ("it did not clear ..."). A fix whose files the shadow shows
unchanged is not listed at all (nothing to write). The unit kept or rejected is one fix of
:data:`lerobot_tools.repair.fixes.FIXES` (its :attr:`~lerobot_tools.repair.model.Repair.group`): the changes it
plans belong together (e.g. every counter of info.json, or every statistic recomputed from the data).
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lerobot_tools.findings import INFO, WARNING, DatasetReport, Finding
from lerobot_tools.repair.model import Repair, RepairOptions, RepairPlan, Unrepairable

#: why a new finding does not veto (:attr:`Visible.why`)
VISIBLE_WHY = {
    "info": "info (layout or performance)",
    "warning": "a warning: the data loads (e.g. a true zero spread the recomputed statistics show)",
    "moved": "about files moved into place (their bytes are unchanged; their content was not checked before)",
    "unchecked": "validate could not run this check before the repair",
    "rest": "the rest of a finding of this check, said anew (no more occurrences, or about files not written)",
}

#: a fix that writes nothing is not listed: its findings are left alone with this reason
NOTHING_TO_WRITE = "the planned change leaves every file it names as it is (nothing to write)"


@dataclass
class Visible:
    """A finding the repair makes visible (or leaves said anew) that is no reason to reject a fix."""

    finding: Finding
    why: str  # a key of VISIBLE_WHY

    def to_dict(self) -> dict[str, Any]:
        d = self.finding.to_dict()
        d["why"] = VISIBLE_WHY[self.why]
        return d


@dataclass
class Rejection:
    """A fix that was planned and is not applied.

    Attributes:
        group: the fix (:attr:`~lerobot_tools.repair.model.Repair.group`).
        repairs: what it planned.
        reason: one line: the finding it would introduce (check, file, message), or the target it did not clear,
            or why it could not be written.
        finding: the finding that caused the rejection (None when none did).
    """

    group: str
    repairs: list[Repair]
    reason: str
    finding: Finding | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"fix": self.group, "checks": sorted({r.check for r in self.repairs}),
                "repairs": [r.summary for r in self.repairs], "reason": self.reason,
                "finding": self.finding.to_dict() if self.finding is not None else None}


@dataclass
class Judgement:
    """:func:`judge`'s verdict on a report after the repair (see the module docstring)."""

    gone: list[Finding] = field(default_factory=list)
    remaining: list[Finding] = field(default_factory=list)
    visible: list[Visible] = field(default_factory=list)
    vetoes: list[Finding] = field(default_factory=list)
    #: fix group -> its targets still reported with no fewer occurrences (a group listed only when all are)
    uncleared: dict[str, list[Finding]] = field(default_factory=dict)

    @property
    def worse(self) -> list[str]:
        """``check/severity`` of every veto (the reason a real run rolls back)."""
        return sorted({f"{f.check}/{f.severity}" for f in self.vetoes})


def _key(f: Finding) -> tuple[str, str, str]:
    return f.check, f.severity, f.group or f.message


def _paths(f: Finding) -> set[str]:
    return set(f.paths or ([f.path] if f.path else []))


_ID = re.compile(r"([A-Z])(\d{3})(?:\s*[-\u2013]\s*([A-Z]?)(\d{3}))?")
_WHOLE = ("all checks", "all other checks", "remaining checks")
_FAMILY_NOTES = ("", "(videos)", "(data files)")


def unchecked_before(report: DatasetReport, *, partly: bool = False) -> set[str] | None:
    """Check IDs validate skipped entirely in ``report`` (``not_checked`` entries naming only IDs, ranges and a
    family note such as ``(videos)``); None when every check was skipped. Entries with a narrower scope
    (``S001-S007 ... for unreadable files``, ``D002 across files``) count only with ``partly`` (the repair moves
    missing files into place, which is what such a scope waits for): otherwise the check did run on the rest."""
    out: set[str] = set()
    for nc in report.not_checked:
        text = nc.checks.strip()
        if text in _WHOLE:
            return None
        rest = " ".join(_ID.sub(" ", text).replace(",", " ").replace("/", " ").split())
        if rest not in _FAMILY_NOTES and not partly:
            continue
        for m in _ID.finditer(text):
            letter, a = m.group(1), int(m.group(2))
            b = int(m.group(4)) if m.group(4) else a
            out.update(f"{letter}{i:03d}" for i in range(a, b + 1))
    return out


def _counts(r: DatasetReport, moved: frozenset[str]) -> dict[str, int]:
    out: dict[str, int] = {}
    for f in r.findings:
        n = f.count - len(_paths(f) & moved) if moved else f.count
        out[f"{f.check}/{f.severity}"] = out.get(f"{f.check}/{f.severity}", 0) + max(n, 0)
    return out


def judge(before: DatasetReport, after: DatasetReport, plan: RepairPlan,
          moved: frozenset[str] = frozenset()) -> Judgement:
    """Sort the findings of ``after`` (the dataset, or its shadow, with ``plan`` written) against ``before``.

    Args:
        before: the report the plan was made from.
        after: the report after the plan's changes.
        plan: the plan (its dispositions say which findings each fix targets).
        moved: destination paths of the files the plan moved into place.
    """
    j = Judgement()
    after_by = {}
    for f in after.findings:
        after_by.setdefault(_key(f), f)
    before_by = {}
    for f in before.findings:
        before_by.setdefault(_key(f), f)
    for f in before.findings:
        (j.remaining if _key(f) in after_by else j.gone).append(f)
    cb, ca = _counts(before, frozenset()), _counts(after, moved)
    grown = {k for k, n in ca.items() if n > cb.get(k, 0)}
    skipped = unchecked_before(before, partly=bool(moved))
    targeted = {d.finding.check for d in plan.dispositions if d.action == "repair"}
    written = set(plan.changed_files()) | {p for m in plan.moves for p in (m.src, m.dst)}
    for f in after.findings:
        prior = before_by.get(_key(f))
        if prior is not None and f.count <= prior.count:
            continue
        paths = _paths(f)
        if f.severity == INFO:
            why = "info"
        elif moved and paths and paths <= moved:
            why = "moved"
        elif skipped is None or f.check in skipped:
            why = "unchecked"
        elif f.severity == WARNING:
            why = "warning"
        elif not paths & written and (f"{f.check}/{f.severity}" not in grown or (f.check in targeted and paths)):
            why = "rest"  # re-worded, or what the fix of this check left (files it did not touch)
        else:
            j.vetoes.append(f)
            continue
        j.visible.append(Visible(f, why))
    targets: dict[str, list[Finding]] = {}
    for d in plan.dispositions:
        if d.action == "repair" and d.repair is not None:
            targets.setdefault(d.repair.group, []).append(d.finding)
    for group, found in targets.items():
        left = []
        for f in found:
            now = after_by.get(_key(f))
            k = f"{f.check}/{f.severity}"
            if now is not None and now.count >= f.count and ca.get(k, 0) >= cb.get(k, 0):
                left.append(f)
        if left and len(left) == len(found):
            j.uncleared[group] = left
    return j


def describe(f: Finding) -> str:
    """``"T006 error (meta/info.json): total_tasks is 99 but ..."``: a finding in one line, for a reason."""
    where = f" ({f.path})" if f.path and f.count == 1 and f.path not in f.message else ""
    return f"{f.check} {f.severity}{where}: {f.message}"


# ---------------------------------------------------------------------- evaluation
@dataclass
class Trial:
    """One plan written to a shadow and validated."""

    plan: RepairPlan
    after: DatasetReport | None = None
    judgement: Judgement | None = None
    changed: dict[str, bool] = field(default_factory=dict)  # file named by a repair -> its bytes changed
    failed: tuple[str, str] | None = None  # (path, why) of a change that could not be written
    links: str | None = None


@dataclass
class Evaluation:
    """What :func:`evaluate` decided for one dataset.

    Attributes:
        plan: the plan to apply (the rejected fixes left out, their findings marked rejected).
        trial: the kept plan's trial (its shadow report is the predicted outcome); None when the plan writes
            nothing or the shadow could not be made.
        rejected: the fixes not applied, and why.
        dropped: repairs a fix listed whose files it leaves unchanged (not listed, not applied).
        unpredicted: why the shadow could not be made (then the plan is applied unchecked by a dry run; a real
            run refuses).
    """

    plan: RepairPlan
    trial: Trial | None = None
    rejected: list[Rejection] = field(default_factory=list)
    dropped: list[Repair] = field(default_factory=list)
    unpredicted: str | None = None


def _groups(plan: RepairPlan) -> list[str]:
    out: list[str] = []
    for r in plan.repairs:
        if r.group not in out:
            out.append(r.group)
    return out


def _group_files(plan: RepairPlan, group: str) -> set[str]:
    return {p for r in plan.repairs if r.group == group for p in r.files}


def _need_bytes(plan: RepairPlan) -> int:
    root = Path(plan.root)
    total = 0
    for rel in plan.changed_files():
        try:
            total += (root / rel).stat().st_size
        except OSError:
            pass
    return total


def try_plan(target, plan: RepairPlan, options: RepairOptions, *, inside: bool) -> Trial:
    """Write ``plan`` into a fresh shadow of the dataset, validate the shadow and judge it against
    ``plan.before``.

    Raises:
        ShadowError: the shadow cannot be made (scratch space).
        LrtoolError: the original dataset changed while the shadow existed (a bug: it must never happen).
    """
    from lerobot_tools.checks.engine import validate_contained
    from lerobot_tools.errors import LrtoolError
    from lerobot_tools.repair.writes import ordered_changes, write_one
    from lerobot_tools.repair.model import Move
    from lerobot_tools.repair.shadow import Shadow, ShadowError

    trial = Trial(plan)
    shadow = Shadow(Path(plan.root), inside=inside, need_bytes=_need_bytes(plan))
    try:
        trial.links = shadow.links
        for change in ordered_changes(plan):
            try:
                write_one(shadow.root, change)
            except OSError as exc:
                if getattr(exc, "errno", None) in (28, 122):  # ENOSPC, EDQUOT: the scratch folder, not the plan
                    raise ShadowError(f"the scratch folder ran out of space while trying the repair ({exc})") from None
                trial.failed = (change.src if isinstance(change, Move) else change.relpath, str(exc))
                return trial
            except Exception as exc:  # RewriteError, ValueError, LrtoolError: the change does not verify
                trial.failed = (change.src if isinstance(change, Move) else change.relpath,
                                f"{type(exc).__name__}: {exc}" if not isinstance(exc, LrtoolError) else str(exc))
                return trial
        shadow_target = dataclasses.replace(target, root=shadow.root, origin=target.origin)
        after = validate_contained(shadow_target, _shadow_options(options))
        trial.after = _as_original(after, target, shadow.root)
        try:
            trial.changed = {rel: shadow.differs(rel) for r in plan.repairs for rel in r.files}
        except OSError as exc:
            raise ShadowError(f"cannot compare the shadow with the dataset ({exc})") from None
    finally:
        shadow.close()
        touched = shadow.untouched()
        if touched:
            raise LrtoolError(f"the dataset changed while repair tried its changes on a shadow ({touched[0]}): another "
                              "program is writing it (or this is a bug in lrtool: please report it)", plan.root)
    moved = frozenset(m.dst for m in plan.moves)
    trial.judgement = judge(plan.before, trial.after, plan, moved)
    return trial


def _as_original(report: DatasetReport, target, shadow_root: Path) -> DatasetReport:
    """The shadow's report as if made on the dataset: its root, and messages naming the shadow's folder."""
    old, new = str(shadow_root), str(target.root)
    for f in report.findings:
        if old in f.message:
            f.message = f.message.replace(old, new)
    report.root = str(target.root) if target.root else None
    report.target = target.spec
    return report


def evaluate(target, options: RepairOptions | None = None, *, inside: bool = False) -> Evaluation:
    """Plan the repair of ``target``, try it on a shadow, reject the fixes that would make it worse or change
    nothing, and return the plan to apply with its predicted outcome (see the module docstring).

    Args:
        target: a resolved target.
        options: repair options.
        inside: a real run (the shadow lives in the dataset's ``.lrtool/``); a dry run uses ``$TMPDIR``.

    Returns:
        The :class:`Evaluation`; ``unpredicted`` is set when no shadow could be made.
    """
    from lerobot_tools.repair.plan import plan_repair
    from lerobot_tools.repair.shadow import ShadowError

    options = options or RepairOptions()
    plan = plan_repair(target, options)
    ev = Evaluation(plan)
    if plan.cannot_run or plan.refused or plan.root is None:
        return ev
    if plan.empty:
        _drop_unwritten(ev, options)
        return ev
    before = plan.before
    exclude: dict[str, str] = {}
    planned: dict[str, list[Repair]] = {}

    def replan() -> RepairPlan:
        return plan_repair(target, options, report=before, exclude=exclude)

    def reject(group: str, reason: str, finding: Finding | None) -> None:
        exclude[group] = reason
        ev.rejected.append(Rejection(group, planned.get(group, []), reason, finding))

    for _ in range(64):  # each round rejects at least one fix; there are far fewer
        for g in _groups(plan):
            planned.setdefault(g, [r for r in plan.repairs if r.group == g])
        if plan.empty:
            break
        try:
            trial = try_plan(target, plan, options, inside=inside)
        except ShadowError as exc:
            ev.plan, ev.unpredicted = plan, str(exc)
            return ev
        if trial.failed is not None:
            rel, why = trial.failed
            culprits = [g for g in _groups(plan) if rel in _group_files(plan, g)] or _groups(plan)
            for g in culprits:
                reject(g, f"its change to {rel} cannot be written ({why})", None)
            plan = replan()
            continue
        j = trial.judgement
        if j.vetoes:
            veto = j.vetoes[0]
            for g in attribute(veto, plan, lambda without: _still_vetoed(
                    veto, target, options, before, {**exclude, **{w: "" for w in without}}, inside)):
                reject(g, f"it would introduce {describe(veto)}", veto)
            plan = replan()
            continue
        idle = [g for g in _groups(plan) if g in j.uncleared]
        if idle:
            for g in idle:
                reject(g, f"it leaves {describe(j.uncleared[g][0])}", j.uncleared[g][0])
            plan = replan()
            continue
        ev.plan, ev.trial = plan, trial
        _drop_unwritten(ev, options)
        return ev
    ev.plan = plan
    _drop_unwritten(ev, options)
    return ev


def _still_vetoed(veto: Finding, target, options, before, exclude, inside) -> bool:
    """True when the plan without the fixes in ``exclude`` still shows ``veto`` among its vetoes."""
    from lerobot_tools.repair.plan import plan_repair

    plan = plan_repair(target, options, report=before, exclude=exclude)
    if plan.empty:
        return False
    trial = try_plan(target, plan, options, inside=inside)
    if trial.failed is not None or trial.judgement is None:
        return True
    return any(_key(v) == _key(veto) or (v.check, v.severity) == (veto.check, veto.severity)
               for v in trial.judgement.vetoes)


def attribute(veto: Finding, plan: RepairPlan, still_vetoed) -> list[str]:
    """The fix groups that caused ``veto``: the one group whose files (and features) the finding names; else,
    among the candidates, the first (latest planned) whose removal clears it (``still_vetoed(groups)`` tries the
    plan without ``groups``); else every candidate together."""
    groups = _groups(plan)
    paths = _paths(veto)
    by_files = [g for g in groups if paths & _group_files(plan, g)]
    by_subject = [g for g in groups if any(r.group == g and _shares_subject(r, veto) for r in plan.repairs)]
    both = [g for g in by_files if g in by_subject]
    cands = both or by_files or by_subject or groups
    if len(cands) == 1:
        return cands
    for g in reversed(cands):
        if not still_vetoed([g]):
            return [g]
    return cands


def _shares_subject(r: Repair, f: Finding) -> bool:
    """True when the repair and the finding name the same feature, camera, key, task or episode."""
    return any(k in f.subject and f.concerns({k: v}) for k, v in (r.subject or {}).items())


def _drop_unwritten(ev: Evaluation, options: RepairOptions) -> None:
    """Repairs whose files the trial shows unchanged (every repair, when the plan writes nothing) are not listed;
    their findings are left alone with :data:`NOTHING_TO_WRITE`."""
    from lerobot_tools.repair.plan import dispositions

    plan = ev.plan
    changed = ev.trial.changed if ev.trial is not None else {}
    dropped = [r for r in plan.repairs if not any(changed.get(p, False) for p in r.files)]
    if not dropped:
        return
    ev.dropped = dropped
    plan.repairs = [r for r in plan.repairs if r not in dropped]
    plan.unrepairable += [Unrepairable(r.check, NOTHING_TO_WRITE, "nothing to do", r.subject) for r in dropped]
    plan.dispositions = dispositions(plan.before.findings, plan.repairs, plan.unrepairable, options)


def _shadow_options(options):
    """What a shadow is validated with: the repair's own options without F013. A shadow links what it does not
    rewrite, symbolically when its scratch folder is on another file system than the dataset, so its links lead
    out of it by construction; the dataset itself was refused before its shadow was made if a link of its own
    leads out (:func:`lerobot_tools._contain.refuse_escaping_symlinks`)."""
    vopts = options.validate_options()
    vopts.ignore = set(vopts.ignore) | {"F013"}
    return vopts
