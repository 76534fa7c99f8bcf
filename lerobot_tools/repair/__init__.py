"""``lrtool repair``: fix mechanically what validate finds, show the diff first, keep a backup, never touch a
healthy byte.

Library entry points:

>>> from lerobot_tools.dataset import resolve_targets
>>> from lerobot_tools.repair import RepairOptions, repair_target, undo
>>> (t,) = resolve_targets(["fixtures/datasets/broken_wrong_totals"])   # doctest: +SKIP
>>> result = repair_target(t, RepairOptions(), dry_run=True)           # doctest: +SKIP
>>> [r.summary for r in result.plan.repairs]                            # doctest: +SKIP
['total_episodes 5 -> 3 (3 episode(s) in the metadata)', 'total_frames 50 -> 60 (60 rows in 2 data file(s))']

Modules: :mod:`.plan` (validate, map findings to repairs), :mod:`.fixes` (one function per repair),
:mod:`.judge` (try the plan on a :mod:`.shadow` of the dataset, keep or reject each fix by what it was for),
:mod:`.apply` (backup, atomic writes, re-validation, rollback, undo), :mod:`.backup`, :mod:`.parquet`
(row-group-preserving, verified parquet rewrites), :mod:`.hfmeta` (the ``huggingface`` metadata key),
:mod:`.diff` (unified diffs and reports), :mod:`.run` (:func:`repair_targets`: many targets, one result).
pyarrow/pandas/PyAV are imported inside functions.
"""

from __future__ import annotations

import contextlib
from pathlib import Path

from lerobot_tools._contain import refuse_escaping_symlinks
from lerobot_tools._lock import dataset_lock
from lerobot_tools.dataset.targets import Target
from lerobot_tools.errors import LrtoolError
from lerobot_tools.repair import apply as _apply
from lerobot_tools.repair.apply import RepairResult, UndoResult, apply_plan, prepare
from lerobot_tools.repair.model import RepairOptions, RepairPlan
from lerobot_tools.repair.plan import REPAIRABLE, cannot_run_reason, plan_repair
from lerobot_tools.repair.run import RepairRun, repair_targets

__all__ = [
    "REPAIRABLE", "RepairOptions", "RepairPlan", "RepairResult", "UndoResult",
    "plan_repair", "apply_plan", "repair_target", "undo", "RepairRun", "repair_targets",
]


def repair_target(target: Target, options: RepairOptions | None = None, *, dry_run: bool = False) -> RepairResult:
    """Plan and (unless ``dry_run``) apply the repairs of one resolved target.

    A run (real or dry) first refuses a dataset holding a symlink that leads out of it (F013: a rewrite or a
    move through it would change files that are not the dataset's), then a dataset whose previous repair was
    interrupted (its backup is still ``applying``: ``--undo`` first) or whose latest backup cannot be trusted
    (see :func:`lerobot_tools.repair.backup.read_manifest`); a real run then removes temporary files and
    incomplete backups a killed run left behind. Both then try the whole plan on a shadow of the dataset
    (:func:`lerobot_tools.repair.judge.evaluate`): the fixes that would introduce an error, or clear nothing,
    are rejected with the finding that says why; a dry run reports the shadow's outcome, a real run applies
    the fixes kept. A dry run writes nothing in the dataset (its shadow lives in ``$TMPDIR``).

    Returns:
        The :class:`RepairResult` (``.status`` is the exit status for this dataset).

    A backup that cannot be written (read-only folder, disk full) gives ``plan.cannot_run`` (exit status 2);
    nothing in the dataset has changed then. A real run holds the dataset's write lock
    (:func:`lerobot_tools._lock.dataset_lock`) from before the cleanup to the last write; another lrtool run
    still writing the dataset after ``options.lock_timeout`` seconds gives ``plan.cannot_run``.
    """
    import warnings

    options = options or RepairOptions()
    reason = cannot_run_reason(target) or _escape_reason(target, "repair")
    # NaN / infinite data is reported as findings (and refused by the statistics fix), never as numpy's
    # RuntimeWarnings on stderr (the checks' scans run in threads: numpy.errstate would not reach them)
    with contextlib.ExitStack() as lock, warnings.catch_warnings():
        warnings.filterwarnings("ignore", r"(invalid value|divide by zero|overflow) encountered", RuntimeWarning)
        if reason is None and not dry_run and (Path(target.root) / "meta" / "info.json").is_file():
            try:
                lock.enter_context(dataset_lock(target.root, timeout=options.lock_timeout, what="repairing"))
            except LrtoolError as exc:
                reason = exc.within(target.root)  # the report's heading names the dataset
        return _repair_locked(target, options, dry_run, reason)


def undo(target: Target, *, dry_run: bool = False, lock_timeout: float = 60.0) -> UndoResult:
    """Restore the latest backup of ``target`` (``lrtool repair --undo``): :func:`lerobot_tools.repair.apply.undo`,
    after refusing, before anything is touched (dry run too), a dataset holding a symlink that leads out of it
    (F013)."""
    reason = _escape_reason(target, "undo a repair") if not target.error else None
    if reason is not None:
        return UndoResult(target.spec, str(target.root), dry_run=dry_run, cannot_run=reason)
    return _apply.undo(target, dry_run=dry_run, lock_timeout=lock_timeout)


def _escape_reason(target: Target, what: str) -> str | None:
    """Why a resolved ``target`` must not be written: a symlink below it leads out of the dataset
    (:func:`lerobot_tools._contain.refuse_escaping_symlinks`), or None."""
    if target.root is None:
        return None
    try:
        refuse_escaping_symlinks(target.root, what)
    except LrtoolError as exc:
        return exc.within(target.root)
    return None


def _repair_locked(target: Target, options: RepairOptions, dry_run: bool, reason: str | None) -> RepairResult:
    from lerobot_tools.repair import backup

    if reason is None:
        root = Path(target.root)
        try:
            latest = backup.latest(root)
            state = backup.read_manifest(latest).get("state") if latest is not None else None
            if state == "applying":
                reason = (f"a previous repair of this dataset was interrupted ({latest.relative_to(root).as_posix()}); "
                          f"run `lrtool repair --undo {target.spec}` first")
            elif not dry_run:
                prepare(root)
        except backup.BackupError as exc:
            reason = f"{exc} (inspect that backup, or remove it, before repairing)"
    if reason is not None:
        plan = RepairPlan(target=target.spec, root=target.root, cannot_run=reason)
        return RepairResult(plan, dry_run=dry_run)
    from lerobot_tools.repair.judge import evaluate

    try:
        ev = evaluate(target, options, inside=not dry_run)
    except LrtoolError as exc:  # the dataset changed under the shadow
        plan = RepairPlan(target=target.spec, root=target.root, cannot_run=exc.within(target.root))
        return RepairResult(plan, dry_run=dry_run)
    plan = ev.plan
    if dry_run or plan.cannot_run or ev.unpredicted:
        result = RepairResult(plan, dry_run=dry_run, rejected=ev.rejected, dropped=ev.dropped,
                              unpredicted=ev.unpredicted)
        if not dry_run and ev.unpredicted:  # a real run never applies a plan it could not try first
            plan.cannot_run = f"{ev.unpredicted}; nothing was changed"
            return result
        if not plan.empty and not plan.cannot_run:
            from lerobot_tools.repair.diff import plan_changes

            result.changes = plan_changes(plan)
        if ev.trial is not None and ev.trial.after is not None:
            result.after, result.predicted = ev.trial.after, True
            result.take(ev.trial.judgement)
        return result
    try:
        result = apply_plan(plan, target, options)
    except (LrtoolError, OSError) as exc:  # the backup could not be written: nothing in the dataset changed
        plan.cannot_run = f"cannot write the backup, nothing was changed: {exc}"
        return RepairResult(plan)
    result.rejected, result.dropped = ev.rejected, ev.dropped
    return result
