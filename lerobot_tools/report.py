"""The text and JSON reporters of ``lrtool validate``, and ``--baseline`` files.

Reporters take the result of validation and report it back to the user: text grouped by dataset for
people, one JSON document for machines. Findings that repeat per file or per episode arrive grouped into
one finding naming the count and the first paths, so a mixture of 400 datasets never prints thousands of
lines. Every report ends with what was *not* checked and why, so silence never reads as a pass.

The data reported (severities, :class:`Finding`, :class:`NotChecked`, :class:`DatasetReport`,
:func:`group_findings`) lives in :mod:`lerobot_tools.findings`, below the check catalogue; it is
re-exported here.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from lerobot_tools._safeout import sgr, single_line
from lerobot_tools.errors import UsageError
from lerobot_tools.findings import (  # noqa: F401  (re-exported: the report API predates findings.py)
    ERROR, INFO, MAX_EXAMPLE_PATHS, WARNING, DatasetReport, Finding, NotChecked, group_findings,
)


# ---------------------------------------------------------------------- baseline
def fingerprint(target: str, f: Finding) -> str:
    """A stable fingerprint of an (ungrouped) finding: target, check, path and message."""
    raw = json.dumps([target, f.check, f.path, f.message], ensure_ascii=False)
    return hashlib.sha256(raw.encode("utf-8")).hexdigest()[:32]


def write_baseline(path: Path, entries: list[tuple[str, Finding]]) -> None:
    """Record today's findings (``--write-baseline``) as a JSON file, atomically, only as a regular file
    (:func:`lerobot_tools._io.write_output_text`).

    Raises:
        UsageError: one line naming ``path``: it is a device, FIFO, socket, folder or symlink, its folder does not
            exist or is not writable, or the write failed (the file is untouched).
    """
    from lerobot_tools._io import write_output_text

    doc = {
        "lrtool_baseline": 1,
        "findings": sorted(
            ({"fingerprint": fingerprint(t, f), "target": t, "check": f.check, "path": f.path, "message": f.message}
             for t, f in entries),
            key=lambda d: (d["target"], d["check"], d["path"] or "", d["message"]),
        ),
    }
    write_output_text(path, json.dumps(doc, indent=2, ensure_ascii=False) + "\n", "baseline file", error=UsageError)


def read_baseline(path: Path) -> set[str]:
    """Fingerprints recorded in a baseline file.

    Raises:
        UsageError: the file is missing, not a regular file of at most 64 MiB, not JSON, or not a baseline written
            by ``--write-baseline`` (every entry of ``findings`` an object with a string ``fingerprint``).
    """
    from lerobot_tools._io import load_json_file

    try:
        doc = load_json_file(path, error=UsageError)
    except FileNotFoundError:
        raise UsageError("baseline file not found", path) from None
    except OSError as exc:
        raise UsageError(f"baseline file cannot be read ({exc.strerror or exc})", path) from None
    if not isinstance(doc, dict) or doc.get("lrtool_baseline") != 1 or not isinstance(doc.get("findings"), list):
        raise UsageError("not an lrtool baseline file (written by --write-baseline)", path)
    out: set[str] = set()
    for i, e in enumerate(doc["findings"]):
        if not isinstance(e, dict) or not isinstance(e.get("fingerprint"), str):
            got = type(e.get("fingerprint")).__name__ if isinstance(e, dict) else type(e).__name__
            raise UsageError(f"findings[{i}] has no string fingerprint (got {got}); not a baseline written by "
                             "--write-baseline", path)
        out.add(e["fingerprint"])
    return out


# ---------------------------------------------------------------------- reporters
def summarize(reports: list[DatasetReport]) -> dict[str, Any]:
    """Totals over all datasets, as printed on the summary line and in the JSON ``summary``."""
    tot = {ERROR: 0, WARNING: 0, INFO: 0}
    known = 0
    for r in reports:
        for k, v in r.counts().items():
            tot[k] = tot.get(k, 0) + v
        known += sum(1 for f in r.findings if f.known)
    return {
        "datasets": len(reports),
        "datasets_with_errors": sum(1 for r in reports if r.has_errors),
        "errors": tot[ERROR],
        "warnings": tot[WARNING],
        "infos": tot[INFO],
        "known": known,
        "seconds": round(sum(r.seconds for r in reports), 3),
    }


def exit_status(reports: list[DatasetReport]) -> int:
    """0 when no dataset has an error outside the baseline, else 1."""
    return 1 if any(r.has_errors for r in reports) else 0


_SEV_ORDER = {ERROR: 0, WARNING: 1, INFO: 2}


def heading(r: DatasetReport) -> str:
    """A dataset's heading line: its name (repo id or path, never a mixture line's options), its codebase version,
    the episodes it reads when it is a subset, and the mixture line it comes from:
    ``"lerobot/pusht (v2.1), episodes 0-9 and 12  [mix.txt:3]"``."""
    from lerobot_tools.dataset.subset import EpisodeSubset

    version = f" ({r.codebase_version})" if r.codebase_version else ""
    sub = ""
    if r.subset:
        eps = r.subset.get("episodes")
        text = EpisodeSubset(tuple(eps) if eps is not None else None,
                             frozenset(r.subset.get("excluded_episodes") or ())).describe()
        sub = f", {text}" if text else ""
    where = f"  [{r.source}]" if r.source else ""
    return single_line(f"{r.target}{version}{sub}{where}")


def render_text(reports: list[DatasetReport], out: IO[str], *, color: bool = False) -> None:
    """Text report grouped by dataset: severity, check ID, path and message; then a summary line. What comes from
    data (a target, a file name, a task string inside a message) stays on its line: a newline in it is ``\\n``."""
    one = single_line

    def paint(text: str, sev: str) -> str:
        if not color:
            return text
        code = {ERROR: "31", WARNING: "33", INFO: "36"}.get(sev, "0")
        return f"{sgr(out, code)}{text}{sgr(out, '0')}"

    # coverage gaps shared by every dataset are printed once, after the datasets
    common = set.intersection(*({(n.checks, n.reason) for n in r.not_checked} for r in reports)) if reports else set()
    for r in reports:
        out.write(heading(r) + "\n")
        if r.root and r.root != r.target:
            out.write(f"  root: {one(r.root)}\n")
        for note in r.notes:
            out.write(f"  note: {one(note)}\n")
        for cause in r.causes:
            out.write(f"  {paint('cause', ERROR)}: {one(cause.line())}\n")
        if not r.findings:
            out.write("  no findings\n")
        for f in sorted(r.findings, key=lambda f: (_SEV_ORDER.get(f.severity, 3), f.check)):
            sev = paint(f"{f.severity:<7}", f.severity)
            path = f"  {one(f.path)}" if f.path and f.count == 1 else ""
            known = " (known)" if f.known else ""
            out.write(f"  {sev} {f.check}{path}: {one(f.message)}{known}\n")
        for n in r.not_checked:
            if (n.checks, n.reason) not in common:
                out.write(f"  not checked: {n.checks}: {one(n.reason)}\n")
        out.write("\n")
    if common:
        out.write("Not checked (all datasets):\n" if len(reports) > 1 else "Not checked:\n")
        for checks, reason in sorted(common):
            out.write(f"  {checks}: {one(reason)}\n")
        out.write("\n")
    s = summarize(reports)
    known = f", {s['known']} known from baseline" if s["known"] else ""
    out.write(
        f"Summary: {s['datasets']} dataset(s), {s['datasets_with_errors']} with errors; "
        f"{s['errors']} error(s), {s['warnings']} warning(s), {s['infos']} info{known}\n"
    )


def render_json(reports: list[DatasetReport], out: IO[str]) -> None:
    """One JSON document on ``out`` (:meth:`ValidateResult.to_dict`, docs/output.md)."""
    json.dump(ValidateResult(reports).to_dict(), out, indent=2, ensure_ascii=False)
    out.write("\n")


@dataclass
class ValidateResult:
    """What ``lrtool validate`` ends with (:class:`lerobot_tools.exitcodes.CommandResult`): one
    :class:`DatasetReport` per target."""

    reports: list[DatasetReport]

    @property
    def exit_status(self) -> int:
        """0 when no dataset has an error outside the baseline, else 1."""
        return exit_status(self.reports)

    def to_dict(self) -> dict[str, Any]:
        """The JSON document (docs/output.md): ``datasets`` (one per target), ``summary`` (:func:`summarize`)."""
        from lerobot_tools.exitcodes import document

        return document("validate", [r.to_dict() for r in self.reports], summarize(self.reports), self.exit_status)

    def render_text(self, out: IO[str], *, color: bool = False) -> None:
        """The human report (:func:`render_text`)."""
        render_text(self.reports, out, color=color)
