"""Data types of a repair: options, planned repairs, findings that cannot be repaired, and file changes.

A :class:`RepairPlan` is what :func:`lerobot_tools.repair.plan.plan_repair` returns: the validate report the
plan was made from, one :class:`Repair` per mechanical fix (each tied to the check ID it fixes), one
:class:`Unrepairable` per finding that needs a person, and the concrete file changes (new JSON text,
parquet column operations, a task-table rewrite, file moves). Nothing here touches the disk.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from lerobot_tools.findings import INFO, DatasetReport, Finding

#: Checks whose info-severity findings describe a form upstream lerobot's own writer produces (their entries in
#: docs/checks.md say which): never a defect, so repair rewrites such a finding only when ``--only`` names the
#: check in full (``--only T004``, not a prefix such as ``--only T``).
WRITER_FORMS = frozenset({"T004", "I008"})

#: Which findings of a check a repair (or an unrepairable note) is about: a pattern of subject entries
#: (:attr:`lerobot_tools.findings.Finding.subject`, e.g. ``{"feature": "action"}``) that a finding must
#: carry (:meth:`~lerobot_tools.findings.Finding.concerns`); None = every finding of the check.
Subject = dict[str, Any] | None


@dataclass
class RepairOptions:
    """Options of ``lrtool repair``.

    Attributes:
        only: check IDs whose repairs may run (None = every repairable check). Validation still runs every
            check, so a repair that makes another check fail is caught.
        drop_undeclared: fix S002 by dropping undeclared columns from every data file instead of declaring
            them in info.json.
        move_files: fix F002 by moving video files to where ``video_path`` points instead of rewriting
            the template.
        tolerance_s: timestamp tolerance of the validation runs (lerobot default 1e-4 s).
        named: check IDs written in full in ``--only`` (not reached through a prefix): the explicit request
            needed to rewrite a form upstream lerobot's writer produces (:data:`WRITER_FORMS`). None (library
            use) means ``only`` itself.
        lock_timeout: seconds to wait for another lrtool run writing the same dataset
            (:func:`lerobot_tools._lock.dataset_lock`) before refusing.
    """

    only: set[str] | None = None
    drop_undeclared: bool = False
    move_files: bool = False
    tolerance_s: float = 1e-4
    named: set[str] | None = None
    lock_timeout: float = 60.0

    def validate_options(self):
        """The :class:`~lerobot_tools.checks.context.ValidateOptions` repair validates with: ``deep`` (row-level
        checks, so non-monotonic timestamps and list lengths are seen) and every video header read (F009
        must see every file before a declaration is rewritten); without the episode content checks (family Q:
        nothing there is repaired mechanically)."""
        from lerobot_tools.checks.context import ValidateOptions

        return ValidateOptions(deep=True, all_videos=True, tolerance_s=self.tolerance_s, content=None)

    def selected(self, check_id: str) -> bool:
        return self.only is None or check_id in self.only

    def leaves_alone(self, finding: Finding) -> bool:
        """True for a finding about a form upstream lerobot's writer produces that ``--only`` did not name."""
        named = self.named if self.named is not None else (self.only or set())
        return finding.check in WRITER_FORMS and finding.severity == INFO and finding.check not in named


@dataclass
class Repair:
    """One mechanical fix, tied to the check ID it fixes.

    Attributes:
        check: catalogue ID fixed (``S005``).
        summary: one line saying what changes (``cast 'action' list<float> -> fixed_size_list<float>[6]``).
        files: paths (relative to the dataset root) the fix writes.
        subject: which findings of ``check`` this fixes (:data:`Subject`, e.g. ``{"feature": "action"}``);
            None = every finding of ``check``. Never matched against message text.
        group: the fix that planned it (a :data:`lerobot_tools.repair.fixes.FIXES` function's name, e.g.
            ``fix_counters``): the smallest set of changes that is applied or rejected together.
    """

    check: str
    summary: str
    files: list[str] = field(default_factory=list)
    subject: Subject = None
    group: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {"check": self.check, "summary": self.summary, "files": self.files}


@dataclass
class Unrepairable:
    """A finding (or part of one) that repair leaves alone, with why and what the user must do.

    Attributes:
        check: catalogue ID.
        reason: why it is not mechanical (one line).
        todo: what the user must do (one line).
        subject: as :attr:`Repair.subject`.
        rejected: the fix was planned, and not applied because trying it first showed it would make the dataset
            worse or change nothing (:mod:`lerobot_tools.repair.judge`); ``reason`` says which finding.
    """

    check: str
    reason: str
    todo: str
    subject: Subject = None
    rejected: bool = False


@dataclass
class Disposition:
    """What the plan does about one finding of the validate report."""

    finding: Finding
    action: str  # "repair" | "rejected" | "not-repairable" | "not-selected"
    repair: Repair | None = None
    reason: str | None = None
    todo: str | None = None

    def to_dict(self) -> dict[str, Any]:
        d = self.finding.to_dict()
        d["action"] = self.action
        if self.repair is not None:
            d["repair"] = self.repair.summary
        if self.reason:
            d["reason"] = self.reason
        if self.todo:
            d["todo"] = self.todo
        return d


@dataclass
class TextChange:
    """A JSON / JSON Lines file rewritten in full (``meta/info.json``, ``meta/tasks.jsonl``)."""

    relpath: str
    old_text: str
    new_text: str
    checks: list[str]
    #: verification of the new text beyond "it parses" (raises ValueError)
    verify: Callable[[str], None] | None = None


@dataclass(frozen=True)
class ColumnOp:
    """One column operation on a data parquet file.

    Attributes:
        kind: ``"fixed"`` (variable list -> ``fixed_size_list[length]``, every row verified to have ``length``
            elements), ``"scalar"`` (one-element list -> its element), ``"dtype"`` (element type -> ``dtype``,
            every value verified to convert exactly), ``"drop"`` (remove the column).
        column: column name.
        length: list length for ``"fixed"``.
        check: the check ID this operation fixes.
        dtype: numpy dtype name for ``"dtype"``.
    """

    kind: str
    column: str
    length: int | None = None
    check: str = ""
    dtype: str | None = None


@dataclass
class ParquetChange:
    """A data parquet file rewritten row group by row group (same rows, codec, row groups and page index).

    Attributes:
        relpath: the file.
        ops: column operations.
        hf_features: the ``huggingface`` metadata ``info.features`` to write (None = leave the key as it is).
        hf_checks: check IDs that need the metadata rewritten.
        drop_pandas_columns: columns whose entries are removed from the ``pandas`` metadata (dropped columns).
    """

    relpath: str
    ops: list[ColumnOp] = field(default_factory=list)
    hf_features: dict | None = None
    hf_checks: set[str] = field(default_factory=set)

    @property
    def checks(self) -> list[str]:
        return sorted({op.check for op in self.ops} | self.hf_checks)


@dataclass
class TasksRewrite:
    """``meta/tasks.parquet`` rewritten in the form lerobot reads: a pandas DataFrame indexed by the task
    string (index named ``task``) with one ``task_index`` column, rows in ``task_index`` order (0..N-1)."""

    relpath: str
    old_rows: list[tuple[int, str]]
    rows: list[tuple[int, str]]
    old_form: str
    checks: list[str]


@dataclass
class Move:
    """A file moved from ``src`` to ``dst`` (both relative to the dataset root), for ``--move-files``."""

    src: str
    dst: str
    check: str = "F002"

    def to_dict(self) -> dict[str, str]:
        return {"src": self.src, "dst": self.dst}


@dataclass
class RepairPlan:
    """Everything one repair run will do to one dataset.

    Attributes:
        target: the TARGET as written.
        root: the dataset folder (None when unresolved).
        codebase_version: from info.json.
        before: the validate report the plan was made from.
        repairs: mechanical fixes, in the order they were planned.
        unrepairable: what needs a person.
        dispositions: per finding of ``before``: repaired, not repairable, or not selected by ``--only``.
        text_changes, parquet_changes, tasks_rewrite, moves: the concrete changes.
        rewrites: other whole-file rewrites that write themselves (``relpath``, ``checks``, ``write(root)``,
            ``summary()``), such as the statistics fix's ``meta/episodes`` parquet cells.
        cannot_run: why nothing can be done (unresolved target, hub cache, ...); then exit status 2.
        refused: the root cause for which no repair is planned (Git LFS pointers, error pages, unreadable
            metadata the repairs read), said once; the findings stay listed (exit status 1).
    """

    target: str
    root: Path | None
    codebase_version: str | None = None
    before: DatasetReport | None = None
    repairs: list[Repair] = field(default_factory=list)
    unrepairable: list[Unrepairable] = field(default_factory=list)
    dispositions: list[Disposition] = field(default_factory=list)
    text_changes: list[TextChange] = field(default_factory=list)
    parquet_changes: list[ParquetChange] = field(default_factory=list)
    tasks_rewrite: TasksRewrite | None = None
    moves: list[Move] = field(default_factory=list)
    rewrites: list = field(default_factory=list)
    cannot_run: str | None = None
    refused: str | None = None

    @property
    def empty(self) -> bool:
        """True when the plan changes nothing on disk."""
        return not (self.text_changes or self.parquet_changes or self.tasks_rewrite or self.moves or self.rewrites)

    def changed_files(self) -> list[str]:
        """Every file whose content the plan rewrites (moves excluded), data files first, info.json last."""
        out = [c.relpath for c in self.parquet_changes]
        if self.tasks_rewrite is not None:
            out.append(self.tasks_rewrite.relpath)
        out += [c.relpath for c in self.rewrites]
        texts = sorted(self.text_changes, key=lambda c: c.relpath == "meta/info.json")
        out += [c.relpath for c in texts]
        return out


def dump_like(old_text: str, obj) -> str:
    """Serialise ``obj`` as JSON in the style of ``old_text``: its indent (lerobot writes 4 spaces), whether
    non-ASCII was escaped, and whether it ended with a newline. Key order is the dict's (unchanged keys stay
    where they were)."""
    lines = old_text.splitlines()
    indent = None
    if len(lines) > 1:
        second = lines[1]
        n = len(second) - len(second.lstrip(" "))
        indent = n if n > 0 else ("\t" if second.startswith("\t") else None)
    ascii_only = "\\u" in old_text and all(ord(c) < 128 for c in old_text)
    text = json.dumps(obj, indent=indent, ensure_ascii=ascii_only)
    if old_text.endswith("\n"):
        text += "\n"
    return text
