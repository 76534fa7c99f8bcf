"""Apply a repair plan: backup, atomic verified writes, re-validation, rollback; and ``--undo``.

Order of events for one dataset (:func:`apply_plan`, called with the plan
:func:`lerobot_tools.repair.judge.evaluate` kept after trying it on a shadow of the dataset):

1. nothing to change -> nothing is written and no backup is made;
2. the originals of every file that will change (and the move list) go to ``.lrtool/backup/<UTC>/``
   (:mod:`lerobot_tools.repair.backup`), complete before the first dataset byte changes;
3. each file is rewritten through :func:`lerobot_tools._io.atomic_path` (temp file in the same folder,
   fsync, verify, ``os.replace``): data parquet first, then the task table, moves, and ``meta/info.json``
   last. A kill at any moment leaves each file original or fully repaired, and ``--undo`` restores;
4. an error in any write, or Ctrl-C / SIGTERM, restores every file from the backup;
5. validate runs again and :func:`lerobot_tools.repair.judge.judge` sorts the findings into gone / remaining /
   now visible / vetoes. A veto (a new error the written bytes caused: the shadow did not predict it, since
   the plan kept none) restores every file from the backup.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass, field
from pathlib import Path

from lerobot_tools._io import clean_stale_temps
from lerobot_tools._lock import dataset_lock
from lerobot_tools.checks.engine import validate_contained
from lerobot_tools.dataset.targets import Target
from lerobot_tools.errors import LrtoolError
from lerobot_tools.findings import ERROR, DatasetReport, Finding
from lerobot_tools.repair import backup
from lerobot_tools.repair.model import Move, ParquetChange, RepairOptions, RepairPlan, TasksRewrite, TextChange
from lerobot_tools.repair.writes import ordered_changes, write_one


@dataclass
class RepairResult:
    """What one repair run (or dry run) did, or will do, to one dataset.

    Attributes:
        plan: the plan applied (the rejected fixes left out), with the validate report it was made from.
        dry_run: nothing was written.
        applied: the changes were written (and kept, unless ``rolled_back``).
        backup: the backup folder (relative to the dataset root) of a kept repair.
        failed: why a write failed (every file was then restored).
        rolled_back: re-validation after the writes found a new error the written bytes caused, so every file
            was restored.
        after: the validate report after the repair; in a dry run, the report of the shadow the plan was
            written to (``predicted``). None when nothing was (or would be) written.
        predicted: ``after`` is the shadow's report (a dry run).
        gone, remaining: findings of ``plan.before`` that disappeared / are still reported.
        new: findings that appeared (``visible`` and vetoes).
        visible: new findings that are no reason to reject a fix, each with why
            (:class:`~lerobot_tools.repair.judge.Visible`).
        worse: ``check/severity`` of each veto (the reason for a rollback).
        rejected: the fixes tried first and not applied, each with the finding that caused it
            (:class:`~lerobot_tools.repair.judge.Rejection`).
        dropped: repairs a fix planned that change no byte (not listed, not applied).
        unpredicted: why the plan could not be tried on a shadow first (a dry run then lists it unchecked).
    """

    plan: RepairPlan
    dry_run: bool = False
    applied: bool = False
    backup: str | None = None
    failed: str | None = None
    rolled_back: bool = False
    after: DatasetReport | None = None
    predicted: bool = False
    gone: list[Finding] = field(default_factory=list)
    remaining: list[Finding] = field(default_factory=list)
    new: list[Finding] = field(default_factory=list)
    visible: list = field(default_factory=list)
    worse: list[str] = field(default_factory=list)
    rejected: list = field(default_factory=list)
    dropped: list = field(default_factory=list)
    unpredicted: str | None = None
    #: the changes as shown to the user (:func:`lerobot_tools.repair.diff.plan_changes`, taken before writing)
    changes: dict | None = None

    def take(self, judgement) -> None:
        """Set gone / remaining / new / visible / worse from a :class:`~lerobot_tools.repair.judge.Judgement`."""
        self.gone, self.remaining = judgement.gone, judgement.remaining
        self.visible = judgement.visible
        self.new = [v.finding for v in judgement.visible] + judgement.vetoes
        self.worse = judgement.worse

    @property
    def status(self) -> int:
        """Exit status: 2 cannot run; 1 a write failed, the repair was rolled back, a planned fix is not applied,
        errors remain, or a finding the plan repairs is still reported; 0 every repairable finding fixed and no
        errors remain. A dry run says what the real run will."""
        plan = self.plan
        if plan.cannot_run:
            return 2
        if self.failed or self.rolled_back:
            return 1
        if self.dry_run and self.after is None:
            left = [d for d in plan.dispositions if d.action != "repair" and d.finding.severity == ERROR
                    and not d.finding.known]
            return 1 if left or self.rejected else 0
        report = self.after or plan.before
        if report is None or report.has_errors or self.rejected:
            return 1
        repaired = {id(d.finding) for d in plan.dispositions if d.action == "repair"}
        if any(id(f) in repaired for f in self.remaining):
            return 1
        return 0


def _key(f: Finding) -> tuple[str, str, str]:
    return f.check, f.severity, f.group or f.message


def compare(before: DatasetReport, after: DatasetReport, arrived: frozenset[str] = frozenset()
            ) -> tuple[list[Finding], list[Finding], list[Finding], list[str]]:
    """``(gone, remaining, new, worse)`` between two reports of one dataset.

    A finding is identified by check, severity and its grouping key (or message). ``worse`` lists the
    ``check/severity`` pairs whose number of occurrences grew: messages may change (a count in them), but
    more occurrences of a check means the repair broke something. Occurrences about a file in ``arrived``
    (files the repair moved into place: missing before, so the checks of their content could not run) are not
    counted as growth: the file's bytes are unchanged, and what validate now says about them it could not say
    before (a grouped finding counts one occurrence per arrived file among its example paths).
    """
    after_keys = {_key(f) for f in after.findings}
    before_keys = {_key(f) for f in before.findings}
    gone = [f for f in before.findings if _key(f) not in after_keys]
    remaining = [f for f in before.findings if _key(f) in after_keys]
    new = [f for f in after.findings if _key(f) not in before_keys]

    def counts(r: DatasetReport, discount: bool) -> dict[str, int]:
        out: dict[str, int] = {}
        for f in r.findings:
            k = f"{f.check}/{f.severity}"
            n = f.count
            if discount and arrived:
                n -= len({p for p in (f.paths or ([f.path] if f.path else [])) if p in arrived})
            out[k] = out.get(k, 0) + max(n, 0)
        return out

    cb, ca = counts(before, False), counts(after, True)
    worse = sorted(k for k, n in ca.items() if n > cb.get(k, 0))
    return gone, remaining, new, worse


# ---------------------------------------------------------------------- writes
def write_change(root: Path, change: ParquetChange | TasksRewrite | TextChange | Move) -> None:
    """Write one planned change into the dataset, atomically and verified (see module docstring): the real
    run's write (:func:`write_one`; trying the plan on a shadow calls :func:`write_one` directly).

    Raises:
        LrtoolError, OSError, ValueError: the change could not be written or did not verify (the file is then
            untouched).
    """
    write_one(root, change)


def _disk_check(root: Path, plan: RepairPlan) -> None:
    sizes = [(root / rel).stat().st_size for rel in plan.changed_files() if (root / rel).is_file()]
    need = sum(sizes) + (max(sizes) if sizes else 0)
    free = shutil.disk_usage(root).free
    if need * 1.1 > free:
        raise LrtoolError(f"not enough free disk space for the backup and a temporary copy "
                          f"({need / 2**20:.1f} MiB needed, {free / 2**20:.1f} MiB free)", root)


def prepare(root: Path) -> None:
    """Before planning a real run: remove temporary files, half-made backups and shadows a killed run left behind
    (they would otherwise look like orphan files to validate, or take space)."""
    from lerobot_tools.repair.shadow import clean_stale

    clean_stale_temps(Path(root))
    backup.clean_partial(Path(root))
    clean_stale(Path(root))


def apply_plan(plan: RepairPlan, target: Target, options: RepairOptions | None = None) -> RepairResult:
    """Back up, write every change of ``plan``, re-validate, and roll back if the writes caused a new error.

    Args:
        plan: from :func:`lerobot_tools.repair.judge.evaluate` (or :func:`lerobot_tools.repair.plan.plan_repair`)
            for the same ``target``.
        target: the resolved target (re-validated after the writes).
        options: the options the plan was made with (validation settings).

    Returns:
        The :class:`RepairResult`. Never raises for a failed write (the files are restored and ``failed`` says
        why); raises only when the backup itself cannot be written (nothing changed then) — as
        :class:`~lerobot_tools.errors.LrtoolError` / OSError — and re-raises Ctrl-C / SIGTERM after restoring
        every file.
    """
    from lerobot_tools.repair.judge import judge

    options = options or RepairOptions()
    result = RepairResult(plan)
    if not plan.empty and plan.root is not None:
        from lerobot_tools.repair.diff import plan_changes

        result.changes = plan_changes(plan)
    if plan.cannot_run or plan.empty or plan.root is None:
        return result
    root = Path(plan.root)
    _disk_check(root, plan)
    bdir = backup.create(root, plan.changed_files(), [m.to_dict() for m in plan.moves], {
        "target": plan.target,
        "checks": sorted({r.check for r in plan.repairs}),
        "repairs": [r.to_dict() for r in plan.repairs],
    })
    try:
        for change in ordered_changes(plan):
            write_change(root, change)
        backup.mark_applied(root, bdir)
    except Exception as exc:
        result.failed = _restore_after_failure(root, bdir, f"{type(exc).__name__}: {exc}" if not isinstance(exc, LrtoolError) else str(exc))
        return result
    except BaseException:
        _restore_after_failure(root, bdir, "interrupted")
        raise
    result.applied = True
    after = validate_contained(target, options.validate_options())
    result.after = after
    result.take(judge(plan.before, after, plan, frozenset(m.dst for m in plan.moves)))
    if result.worse:
        try:
            backup.restore(root, bdir, force=True)
            backup.discard(root, bdir)
            result.rolled_back = True
        except (LrtoolError, OSError) as exc:
            result.failed = f"validation got worse ({', '.join(result.worse)}) and the rollback failed: {exc}; " \
                            f"run `lrtool repair --undo {plan.target}`"
            result.backup = bdir.relative_to(root).as_posix()
        return result
    result.backup = bdir.relative_to(root).as_posix()
    return result


def _restore_after_failure(root: Path, bdir: Path, why: str) -> str:
    try:
        backup.restore(root, bdir, force=True)
        backup.discard(root, bdir)
        return f"{why}; every file was restored from the backup"
    except (LrtoolError, OSError) as exc:
        return f"{why}; restoring failed too ({exc}): run `lrtool repair --undo` on the dataset"


# ---------------------------------------------------------------------- undo
@dataclass
class UndoResult:
    """What ``--undo`` did to one dataset.

    Attributes:
        target, root: the dataset.
        backup: the backup folder restored (relative to the root), None when there was none.
        state: the backup's state before the undo (``applied``, or ``applying`` after a killed run).
        restored, removed, moved_back: files put back, files deleted (created by the repair), files moved back.
        error: why nothing (or not everything) was restored.
        cannot_run: no dataset / no backup / a backup that cannot be trusted (nothing was touched).
        dry_run: only listed what would be restored.
        partial: incomplete backups of a repair killed while writing its backup (``.lrtool/backup/.<ts>.partial``;
            no dataset file had changed), removed (or, in a dry run, to be removed).
    """

    target: str
    root: str | None
    backup: str | None = None
    state: str | None = None
    restored: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    moved_back: list[str] = field(default_factory=list)
    error: str | None = None
    cannot_run: str | None = None
    dry_run: bool = False
    partial: list[str] = field(default_factory=list)

    @property
    def status(self) -> int:
        if self.cannot_run:
            return 2
        return 1 if self.error else 0


def undo(target: Target, *, dry_run: bool = False, lock_timeout: float = 60.0) -> UndoResult:
    """Restore the latest backup of ``target`` byte for byte (``lrtool repair --undo``), then delete it.

    Files changed by hand since the repair make the undo refuse (their originals stay in the backup). A run
    killed mid-repair is undone unconditionally; a run killed while writing its backup changed nothing, and its
    incomplete backup is removed (an undo with nothing else to restore then succeeds). Undoing again restores the
    backup before that one. A manifest or backup that fails :func:`lerobot_tools.repair.backup.read_manifest` /
    :func:`~lerobot_tools.repair.backup.verify_backup` is refused before anything is touched. A real undo holds
    the dataset's write lock (:func:`lerobot_tools._lock.dataset_lock`, waiting up to ``lock_timeout`` seconds
    for another lrtool run writing it).
    """
    res = UndoResult(target.spec, str(target.root) if target.root else None, dry_run=dry_run)
    if target.error or target.root is None:
        res.cannot_run = target.error or "the target could not be resolved"
        return res
    root = Path(target.root)
    if dry_run or not (root / "meta" / "info.json").is_file():
        return _undo_locked(res, root, dry_run)
    try:
        with dataset_lock(root, timeout=lock_timeout, what="undoing a repair"):
            return _undo_locked(res, root, dry_run)
    except LrtoolError as exc:  # DatasetLocked, or .lrtool/ is a symlink
        res.cannot_run = exc.within(root)  # the report's heading names the dataset
        return res


def _undo_locked(res: UndoResult, root: Path, dry_run: bool) -> UndoResult:
    try:
        res.partial = [p.relative_to(root).as_posix() for p in backup.partial_backups(root)]
        bdir = backup.latest(root)
    except backup.BackupError as exc:
        res.cannot_run = str(exc)
        return res
    if res.partial and not dry_run:
        backup.clean_partial(root)
    if not dry_run:
        from lerobot_tools.repair.shadow import clean_stale

        clean_stale(root)  # a shadow a killed repair left (it changed nothing in the dataset)
    if bdir is None:
        if not res.partial:
            res.cannot_run = f"no repair backup to undo in {root / backup.BACKUP_DIR}"
        return res
    res.backup = bdir.relative_to(root).as_posix()
    try:
        doc = backup.read_manifest(bdir)
        res.state = doc.get("state")
        backup.verify_backup(root, bdir, doc)
    except backup.BackupError as exc:
        res.cannot_run = str(exc)
        return res
    try:
        if dry_run:
            res.restored = [e["path"] for e in doc["files"] if e.get("existed")]
            res.removed = [e["path"] for e in doc["files"] if not e.get("existed")]
            res.moved_back = [m["src"] for m in doc.get("moves", [])]
            if doc.get("state") == "applied":
                changed = backup.modified_since(root, doc)
                if changed:
                    res.error = f"{len(changed)} file(s) changed since the repair (e.g. {changed[0]}); undo would refuse"
            return res
        clean_stale_temps(root)
        done = backup.restore(root, bdir)
        res.restored, res.removed, res.moved_back = done["restored"], done["removed"], done["moved_back"]
        backup.discard(root, bdir)
    except (LrtoolError, OSError) as exc:
        res.error = str(exc)
    return res
