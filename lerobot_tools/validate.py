"""Validate many targets: resolution, parallel jobs, progress, baselines.

Library entry points behind ``lrtool validate``:

>>> from lerobot_tools.validate import validate
>>> reports = validate(["fixtures/mixture.txt"])            # doctest: +SKIP
>>> [f.check for r in reports for f in r.findings]          # doctest: +SKIP
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Iterable

from lerobot_tools.checks.context import ValidateOptions
from lerobot_tools.checks.engine import validate_contained
from lerobot_tools.dataset.targets import Target, merge_identical, resolve_target
from lerobot_tools.errors import UsageError
from lerobot_tools.findings import DatasetReport, Finding
from lerobot_tools.report import fingerprint, read_baseline, write_baseline


def _validate_one(args: tuple[Target, ValidateOptions]) -> DatasetReport:
    return validate_contained(*args)  # a bug must not take down the other 399 datasets of a mixture


def check_options(options: ValidateOptions) -> None:
    """Refuse option values that would silently disable a check (a NaN tolerance compares false with everything).

    Raises:
        UsageError: ``tolerance_s`` or ``row_group_mb`` is not a finite number >= 0 (> 0 for ``row_group_mb``).
    """
    for name, value, positive in (("tolerance_s", options.tolerance_s, False), ("row_group_mb", options.row_group_mb, True)):
        ok = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value) \
            and (value > 0 if positive else value >= 0)
        if not ok:
            raise UsageError(f"--{name.replace('_', '-')} must be a finite number {'>' if positive else '>='} 0, "
                             f"got {value!r}")


def validate_resolved(targets: list[Target], options: ValidateOptions | None = None, *, jobs: int = 1,
                      progress: bool | None = None) -> list[DatasetReport]:
    """Validate resolved targets, in order, optionally in ``jobs`` worker processes.

    Args:
        targets: from :func:`lerobot_tools.dataset.resolve_targets`.
        options: check options.
        jobs: worker processes (1 = in this process; 0 = one per CPU).
        progress: show a tqdm bar on stderr (None = only for several targets on a terminal).

    Raises:
        UsageError: an option that is not a finite number in range (:func:`check_options`).
    """
    from lerobot_tools._parallel import map_ordered

    options = options or ValidateOptions()
    check_options(options)
    return map_ordered(_validate_one, [(t, options) for t in targets], jobs=jobs, desc="validate", progress=progress)


def validate(target_args: Iterable[str], options: ValidateOptions | None = None, *, jobs: int = 1,
             progress: bool | None = None, resolved: list[Target] | None = None) -> list[DatasetReport]:
    """Resolve TARGET arguments (folders, repo ids, mixture files) and validate each dataset.

    A mixture-file argument also gets the cross-dataset compatibility checks (family X), and with ``--deep`` the
    mixture-wide duplicate and licence checks (Q010, L003), once its datasets are validated. Identical entries of
    a mixture are validated and reported once (:func:`~lerobot_tools.dataset.targets.merge_identical`).

    Args:
        resolved: when given, filled with the resolved targets, parallel to the returned reports (what
            ``--write-keep`` names each dataset by).

    Raises:
        UsageError: a mixture file cannot be read or parsed, or a content option is out of range.
    """
    from lerobot_tools.checks.content.across import check_across
    from lerobot_tools.checks.mixture import check_mixtures

    options = options or ValidateOptions()
    if options.content is not None:
        options.content.check()
    groups = [(arg, merge_identical(resolve_target(arg))) for arg in target_args]
    targets = [t for _, ts in groups for t in ts]
    reports = validate_resolved(targets, options, jobs=jobs, progress=progress)
    check_mixtures(groups, reports, options)
    check_across(groups, reports, options)
    if resolved is not None:
        resolved[:] = targets
    return reports


def apply_baseline(reports: list[DatasetReport], baseline: Path) -> None:
    """Mark findings recorded in ``baseline`` as known (they no longer fail the run).

    A grouped finding is known only when every occurrence it stands for is; grouped findings are
    fingerprinted by their group key, so a group that grows does not stay hidden.
    """
    known = read_baseline(baseline)
    for r in reports:
        for f in r.findings:
            f.known = fingerprint(r.target, stable(f)) in known


def record_baseline(reports: list[DatasetReport], baseline: Path) -> int:
    """Write every finding of ``reports`` to ``baseline``; returns how many were recorded."""
    entries = [(r.target, stable(f)) for r in reports for f in r.findings]
    write_baseline(baseline, entries)
    return len(entries)


def stable(f: Finding) -> Finding:
    """The finding as fingerprinted: a grouped finding by its group key and count."""
    if f.group is not None and f.count > 1:
        return Finding(f.check, f.severity, None, f"{f.group} x{f.count}")
    return f
