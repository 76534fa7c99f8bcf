"""Run the check families over one target and collect findings.

Data flows one way: :class:`~lerobot_tools.dataset.Target` -> :class:`~lerobot_tools.dataset.Dataset` ->
check families -> :class:`~lerobot_tools.report.DatasetReport`. Each family is a function taking a
:class:`CheckContext`; they run in dependency order (info before anything, files before schema) and share
the footers read once per data file. A family that cannot run records *why* in ``not_checked``.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Callable

from lerobot_tools.checks import catalogue
from lerobot_tools.dataset.footers import FooterInfo
from lerobot_tools.dataset.model import Dataset
from lerobot_tools.dataset.targets import Target
from lerobot_tools.errors import DatasetError
from lerobot_tools.report import DatasetReport, Finding, NotChecked, group_findings


@dataclass
class ValidateOptions:
    """Options of ``lrtool validate``.

    Attributes:
        deep: also stream the index/timestamp columns (checks D001-D005).
        tolerance_s: allowed |timestamp - frame_index/fps| in seconds (lerobot default 1e-4).
        select: check IDs to run (None = all); ignore: IDs never reported.
        row_group_mb: reshard target in MB; row groups above twice this are R002.
        world_size: number of ranks for R004 (None = not checked).
        all_videos: probe every video header with PyAV (default: the first file per video key;
            every file is still sniffed and box-walked). Implied by ``deep``.
    """

    deep: bool = False
    tolerance_s: float = 1e-4
    select: set[str] | None = None
    ignore: set[str] = field(default_factory=set)
    row_group_mb: float = 32.0
    world_size: int | None = None
    all_videos: bool = False


class CheckContext:
    """State shared by the families while validating one target."""

    def __init__(self, target: Target, options: ValidateOptions):
        self.target = target
        self.options = options
        self.dataset: Dataset | None = None
        self.findings: list[Finding] = []
        self.not_checked: list[NotChecked] = []
        #: readable data files: relpath -> footer
        self.footers: dict[str, FooterInfo] = {}
        #: data files referenced by the metadata that are missing or unreadable
        self.bad_data_files: set[str] = set()
        #: set by the episodes family: the metadata could be read
        self.episodes_ok = False
        self.tasks_ok = False
        #: data files the metadata references (set by the files family)
        self.data_files: list = []

    # -------------------------------------------------------------- selection
    def enabled(self, *check_ids: str) -> bool:
        """True if any of ``check_ids`` is selected and not ignored."""
        sel, ign = self.options.select, self.options.ignore
        return any((sel is None or c in sel) and c not in ign for c in check_ids)

    def family_enabled(self, letter: str) -> bool:
        return self.enabled(*[c for c in catalogue.CATALOGUE if c.startswith(letter)])

    # -------------------------------------------------------------- output
    def emit(self, check_id: str, message: str, path: str | None = None, *,
             severity: str | None = None, group: str | None = None) -> None:
        """Record a finding of ``check_id`` (dropped when the check is not selected).

        Args:
            message: one line, specific to this occurrence.
            path: file concerned, relative to the dataset root.
            severity: overrides the catalogue severity (the message must say why).
            group: findings of one check with the same key are merged into one (count + first paths).
        """
        if not self.enabled(check_id):
            return
        sev = severity or catalogue.get(check_id).severity
        self.findings.append(Finding(check_id, sev, path, message, group=group))

    def skip(self, checks: str, reason: str) -> None:
        """Record that ``checks`` (IDs or a family description) did not run, and why."""
        if any(n.checks == checks and n.reason == reason for n in self.not_checked):
            return
        self.not_checked.append(NotChecked(checks, reason))


Family = Callable[[CheckContext], None]


def _families() -> list[tuple[str, Family]]:
    from lerobot_tools.checks import counts, deep, files, info, rowgroups, schema, stats, tasks, targets, videos

    return [
        ("I", info.run),
        ("C", counts.run_metadata),
        ("T", tasks.run),
        ("F", files.run),
        ("T", tasks.run_data),
        ("C", counts.run_data),
        ("S", schema.run),
        ("R", rowgroups.run),
        ("F", videos.run),
        ("G", stats.run),
        ("D", deep.run),
        ("M", targets.run),
    ]


def validate_target(target: Target, options: ValidateOptions | None = None) -> DatasetReport:
    """Validate one resolved target. Never raises for dataset problems; they become findings.

    Returns:
        The :class:`DatasetReport` with grouped findings and the list of what was not checked.
    """
    options = options or ValidateOptions()
    t0 = time.perf_counter()
    ctx = CheckContext(target, options)
    report = DatasetReport(target=target.spec, root=str(target.root) if target.root else None,
                           codebase_version=None, source=target.source, notes=list(target.notes))
    if target.error:
        ctx.emit(target.error_check, target.error)
        ctx.skip("all checks", "the target could not be resolved")
    else:
        try:
            ctx.dataset = Dataset(target.root)  # type: ignore[arg-type]
        except DatasetError as exc:
            not_dataset = "not a LeRobot dataset" in exc.message or "is not a folder" in exc.message
            if not_dataset:
                ctx.emit("I001", exc.message, "meta/info.json")
            else:
                ctx.emit("I002", exc.message, "meta/info.json")
            ctx.skip("all other checks", "meta/info.json could not be read")
        if ctx.dataset is not None:
            report.codebase_version = ctx.dataset.codebase_version
            for letter, fam in _families():
                if not ctx.family_enabled(letter) and letter not in ("C", "F", "I"):
                    continue
                try:
                    fam(ctx)
                except StopChecks as stop:
                    ctx.skip("remaining checks", stop.reason)
                    break
    report.findings = group_findings(ctx.findings)
    report.not_checked = ctx.not_checked
    report.seconds = time.perf_counter() - t0
    return report


class StopChecks(Exception):
    """Raised by a family when nothing after it can run (e.g. unknown codebase_version)."""

    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason
