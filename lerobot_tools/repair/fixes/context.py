"""What the fixes share while planning one dataset: :class:`RepairContext`, and small helpers.

The context holds the dataset, the validate report, a mutable copy of info.json that fixes edit, and the
changes planned so far; it reads each data file's footer once (only files that sniff as real parquet).
"""

from __future__ import annotations

import copy
from functools import cached_property
from typing import Any

from lerobot_tools.dataset.footers import FooterInfo, read_footer
from lerobot_tools.dataset.model import Dataset
from lerobot_tools.errors import DatasetError
from lerobot_tools.findings import DatasetReport, Finding
from lerobot_tools.repair.model import (
    ColumnOp, Move, ParquetChange, Repair, RepairOptions, Subject, TasksRewrite, Unrepairable,
)
from lerobot_tools.sniff import sniff


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
        implied: check IDs the plan's own changes call for although validate did not report them (e.g. the
            statistics whose counts a corrected ``total_frames`` contradicts): their fixes run too, so metadata
            derived from the same counts is rewritten in the same step.
        file_changes: other whole-file changes planned by a fix module: a
            :class:`~lerobot_tools.repair.model.TextChange`, or an object with ``relpath``, ``checks``,
            ``write(root)`` and ``summary()`` (the statistics fix's ``meta/episodes`` parquet cells).
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
        self.file_changes: list = []
        self.implied: set[str] = set()

    # ---------------------------------------------------------------- findings
    def findings(self, check: str) -> list[Finding]:
        return [f for f in self.report.findings if f.check == check]

    def has(self, *checks: str) -> bool:
        return any(f.check in checks for f in self.report.findings)

    def wants(self, check: str) -> bool:
        """``--only`` selects ``check``, and the report has findings of it that are not left alone (a form lerobot's
        own writer produces, see :meth:`RepairOptions.leaves_alone`) or the plan's own changes imply it
        (:attr:`implied`)."""
        if not self.options.selected(check):
            return False
        return check in self.implied or any(not self.options.leaves_alone(f) for f in self.findings(check))

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


def lengths_over_files(rc: RepairContext, name: str, files: list[str]) -> set[int] | None:
    """Distinct row lengths of list column ``name`` over ``files`` (None when a file cannot be read)."""
    from lerobot_tools.repair.parquet import distinct_list_lengths

    seen: set[int] = set()
    for rel in files:
        got = distinct_list_lengths(rc.ds.path(rel), name)
        if got is None:
            return None
        seen |= got
    return seen


def column_subject(name: str) -> dict[str, str]:
    """The subject of a repair of column / feature ``name`` (the findings of that feature)."""
    return {"feature": name}


def files_text(files: list[str]) -> str:
    """``"3 data file(s)"``, or the one file's path."""
    return f"{len(files)} data file(s)" if len(files) != 1 else files[0]
