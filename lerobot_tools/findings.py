"""Findings and per-dataset reports: the data every check produces and every reporter reads.

This module sits below the check catalogue, the check families, the reporters and ``lrtool repair``: it
imports nothing from lerobot_tools, so any of them may import it. It holds the severities, a
:class:`Finding` (one problem), :class:`NotChecked` (honest coverage),
:class:`DatasetReport` (everything found about one target) and :func:`group_findings` (findings that repeat
per file or per episode merged into one naming the count and the first paths).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

ERROR = "error"
WARNING = "warning"
INFO = "info"
SEVERITIES = (ERROR, WARNING, INFO)

MAX_EXAMPLE_PATHS = 3


@dataclass
class Finding:
    """One problem found by a check.

    Attributes:
        check: catalogue ID (``S002``).
        severity: ``"error"`` | ``"warning"`` | ``"info"``.
        path: the file concerned, relative to the dataset root (None for dataset-level findings).
        message: one line saying what is wrong.
        count: how many occurrences this finding stands for (grouped findings > 1).
        paths: up to three example paths of a grouped finding.
        known: True when the finding is in the ``--baseline`` file (then it does not fail the run).
        group: grouping key (findings of one check with the same key merge); not serialised.
    """

    check: str
    severity: str
    path: str | None
    message: str
    count: int = 1
    paths: list[str] = field(default_factory=list)
    known: bool = False
    group: str | None = None

    def to_dict(self) -> dict[str, Any]:
        d = {"check": self.check, "severity": self.severity, "path": self.path, "message": self.message}
        if self.count > 1:
            d["count"] = self.count
            d["paths"] = self.paths
        if self.known:
            d["known"] = True
        return d


@dataclass
class NotChecked:
    """A check (or family) that did not run on a dataset, and why (honest coverage)."""

    checks: str
    reason: str

    def to_dict(self) -> dict[str, str]:
        return {"checks": self.checks, "reason": self.reason}


@dataclass
class DatasetReport:
    """Everything validate found about one target."""

    target: str
    root: str | None
    codebase_version: str | None
    findings: list[Finding] = field(default_factory=list)
    not_checked: list[NotChecked] = field(default_factory=list)
    source: str | None = None
    notes: list[str] = field(default_factory=list)
    seconds: float = 0.0

    def counts(self, *, include_known: bool = False) -> dict[str, int]:
        out = {ERROR: 0, WARNING: 0, INFO: 0}
        for f in self.findings:
            if f.known and not include_known:
                continue
            out[f.severity] = out.get(f.severity, 0) + 1
        return out

    @property
    def has_errors(self) -> bool:
        return any(f.severity == ERROR and not f.known for f in self.findings)

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {
            "target": self.target,
            "root": self.root,
            "codebase_version": self.codebase_version,
            "findings": [f.to_dict() for f in self.findings],
            "not_checked": [n.to_dict() for n in self.not_checked],
        }
        if self.source:
            d["source"] = self.source
        if self.notes:
            d["notes"] = self.notes
        return d


def group_findings(findings: list[Finding]) -> list[Finding]:
    """Merge findings of the same check and ``group`` key into one with a count and example paths.

    Order is preserved (a group sits where its first member was). Ungrouped findings pass unchanged.
    """
    out: list[Finding] = []
    index: dict[tuple[str, str, str], Finding] = {}
    for f in findings:
        if f.group is None:
            out.append(f)
            continue
        key = (f.check, f.severity, f.group)
        head = index.get(key)
        if head is None:
            head = Finding(f.check, f.severity, f.path, f.message, count=1,
                           paths=[f.path] if f.path else [], known=f.known, group=f.group)
            index[key] = head
            out.append(head)
            continue
        head.count += 1
        head.known = head.known and f.known
        if f.path and len(head.paths) < MAX_EXAMPLE_PATHS:
            head.paths.append(f.path)
    for f in out:
        if f.group is not None and f.count > 1:
            shown = ", ".join(f.paths)
            more = f" and {f.count - len(f.paths)} more" if f.count > len(f.paths) else ""
            f.message = f"{f.group} ({f.count} occurrences; e.g. {shown}{more})" if shown else f"{f.group} ({f.count} occurrences)"
    return out
