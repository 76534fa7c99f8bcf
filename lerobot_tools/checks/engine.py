"""Run the check families over one target and collect findings.

Data flows one way: :class:`~lerobot_tools.dataset.Target` -> :class:`~lerobot_tools.dataset.Dataset` ->
check families -> :class:`~lerobot_tools.findings.DatasetReport`. Each family is a function taking a
:class:`~lerobot_tools.checks.context.CheckContext` (re-exported here with :class:`ValidateOptions` and
:class:`StopChecks`); they run in dependency order (info before anything, files before schema) and share
the footers read once per data file. A family that cannot run records *why* in ``not_checked``.
"""

from __future__ import annotations

import time
from typing import Callable

from lerobot_tools._memory import release_freed
from lerobot_tools.checks import (counts, deep, files, info, ledger, rowgroups, schema, stats, symlinks, targets,
                                 tasks, timestamps, videos)
from lerobot_tools.checks.content import run as content_run
from lerobot_tools.checks.context import CheckContext, StopChecks, ValidateOptions
from lerobot_tools.checks.observer import FileObserver
from lerobot_tools.dataset.model import INFO_PATH, Dataset, NotADatasetError
from lerobot_tools.dataset.placeholders import UnreadableFileError, shared_causes
from lerobot_tools.dataset.targets import Target
from lerobot_tools.errors import DatasetError
from lerobot_tools.findings import DatasetReport, Finding, NotChecked, group_findings

__all__ = ["CheckContext", "FileObserver", "StopChecks", "ValidateOptions", "validate_contained", "validate_target"]


Family = Callable[[CheckContext], None]


def _families() -> list[tuple[str, Family]]:
    return [
        ("I", info.run),
        ("C", counts.run_metadata),
        ("T", tasks.run),
        ("F", symlinks.run),
        ("F", files.run),
        ("T", tasks.run_data),
        ("C", counts.run_data),
        ("L", ledger.run),
        ("S", schema.run),
        ("R", rowgroups.run),
        ("F", videos.run),
        ("G", stats.run),
        ("D", deep.run),
        ("F", timestamps.run),  # after the deep pass: it reads the timestamp column's deviations
        ("M", targets.run),
    ]


def validate_target(target: Target, options: ValidateOptions | None = None, *,
                    observer: FileObserver | None = None) -> DatasetReport:
    """Validate one resolved target. Never raises for dataset problems; they become findings.

    Args:
        target: a resolved target.
        options: check options (default :class:`ValidateOptions`).
        observer: reads the per-file deep scans and video probes (default: read them from disk).

    Returns:
        The :class:`DatasetReport` with grouped findings, the causes many files share (said once, before the
        findings) and the list of what was not checked.
    """
    options = options or ValidateOptions()
    t0 = time.perf_counter()
    ctx = CheckContext(target, options, observer or FileObserver())
    report = DatasetReport(target=target.spec, root=str(target.root) if target.root else None,
                           codebase_version=None, source=target.source, notes=list(target.notes),
                           subset=ctx.subset.to_dict() or None)
    if target.error:
        ctx.emit(target.error_check, target.error)
        ctx.skip("all checks", "the target could not be resolved")
    else:
        try:
            ctx.dataset = Dataset(target.root)  # type: ignore[arg-type]
        except UnreadableFileError as exc:
            cause = files.report_unreadable(ctx, exc, "I002", "info")
            if exc.placeholder:
                files.scan_tree(ctx, target.root)  # how many files share the cause
            ctx.skip("all other checks", f"{cause}: the layout is unknown")
        except DatasetError as exc:
            ctx.emit("I001" if isinstance(exc, NotADatasetError) else "I002", exc.message, INFO_PATH)
            ctx.skip("all other checks", "meta/info.json could not be read")
        if ctx.dataset is not None:
            from lerobot_tools.dataset.downloads import read_state

            ctx.download = read_state(target.root)
            if ctx.download is not None:
                ctx.curation.downloaded = set(ctx.download.episodes)
                report.notes.append(ctx.download.describe())
            report.codebase_version = ctx.dataset.codebase_version
            for letter, fam in _families():
                if not ctx.family_enabled(letter) and letter not in ("C", "F", "I") \
                        and not (letter == "D" and (ctx.enabled("G010") or content_run.enabled(ctx))):
                    continue  # the deep pass also computes G010 and the content checks (Q)
                try:
                    fam(ctx)
                except StopChecks as stop:
                    ctx.skip("remaining checks", stop.reason)
                    break
                finally:
                    # the footers a family parsed (up to ~100 MB for a file of 14,000 row groups) are freed by
                    # now: hand their pages back before the next family parses its own
                    release_freed()
    report.causes = shared_causes(ctx.placeholders)
    report.curation = _curation(ctx)
    report.findings = group_findings(ctx.findings)
    report.not_checked = ctx.not_checked
    report.seconds = time.perf_counter() - t0
    return report


def _curation(ctx: CheckContext):
    """The target's :class:`~lerobot_tools.checks.content.facts.CurationFacts`, completed with the episode list
    and every finding that names an episode (before findings are grouped)."""
    from lerobot_tools.checks.content.facts import EpisodeFinding

    facts = ctx.curation
    if ctx.dataset is not None and ctx.episodes_ok:
        eps = ctx.dataset.episodes
        facts.episodes = [e.episode_index for e in eps]
        facts.lengths = {e.episode_index: e.length for e in eps if e.length is not None}
    facts.findings = [EpisodeFinding(int(f.subject["episode"]), f.check, f.severity, f.message)
                      for f in ctx.findings if isinstance(f.subject.get("episode"), int)]
    return facts


def validate_contained(target: Target, options: ValidateOptions | None = None, *,
                       observer: FileObserver | None = None) -> DatasetReport:
    """:func:`validate_target` with an internal error (a bug in lrtool) turned into an ``M001`` finding that asks
    for a report, so that the caller (validate over a mixture, repair's plan and its check after the repair) goes
    on with one line instead of a traceback. Never raises an ``Exception``."""
    try:
        return validate_target(target, options, observer=observer)
    except Exception as exc:
        rep = DatasetReport(target=target.spec, root=str(target.root) if target.root else None,
                            codebase_version=None, source=target.source)
        rep.findings.append(Finding("M001", "error", None,
                                    f"lrtool failed on this dataset ({type(exc).__name__}: {exc}); please report it"))
        rep.not_checked.append(NotChecked("all checks", "internal error"))
        return rep
