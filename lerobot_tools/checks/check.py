"""What one catalogue entry is: :class:`Check`, and how a check states its repair (:data:`AUTO`, :data:`EXPLICIT`).

The entries themselves are in :mod:`lerobot_tools.checks.catalogue`, which re-exports these names.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Check:
    """One catalogue entry.

    Attributes:
        id: stable ID (``S002``).
        name: stable kebab-case name (``column-undeclared``).
        severity: default severity (a finding may be raised at another severity when its message says why).
        title: the one-line summary.
        what: what the check looks at.
        why: how the defect breaks training (the symptom users see).
        fix: how to fix it (``lrtool repair`` when mechanical).
        deep: True if it runs only with ``--deep`` (reads data columns, not just footers).
        repair: how it is repaired: :data:`AUTO` (``lrtool repair`` fixes it mechanically, with the fix
            ``repair_by`` names), :data:`EXPLICIT` (another command the user runs, named by ``repair_by``:
            ``lrtool reshard``), or None (not mechanical: a person decides).
        repair_by: for :data:`AUTO`, the function of :mod:`lerobot_tools.repair.fixes` that plans the fix
            (a test keeps ``fixes.FIXES`` in agreement); for :data:`EXPLICIT`, the command.
        repair_note: one line: what the repair changes (:data:`AUTO`), or why ``lrtool repair`` leaves the
            finding alone (empty: "not mechanical"). ``lrtool repair`` reports it for every finding.
    """

    id: str
    name: str
    severity: str
    title: str
    what: str
    why: str
    fix: str
    deep: bool = False
    repair: str | None = None
    repair_by: str = ""
    repair_note: str = ""


#: ``lrtool repair`` fixes the check mechanically.
AUTO = "auto"
#: Another command fixes it when the user runs it (``Check.repair_by`` names it).
EXPLICIT = "explicit"


def _auto(fix: str, note: str) -> dict:
    return {"repair": AUTO, "repair_by": fix, "repair_note": note}


def manual(note: str) -> dict:
    return {"repair": None, "repair_note": note}


#: how a mixture or target problem is repaired: by a person, not in the dataset's files
MIXTURE_REPAIR = manual("a mixture or target problem, not a problem of the dataset's files")
