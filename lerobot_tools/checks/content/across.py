"""Mixture-wide curation checks, run once every dataset of a mixture file is validated: Q010 and L003.

* **Q010**: the episode signatures each dataset's ``--deep`` pass left on its report
  (:attr:`~lerobot_tools.checks.content.facts.CurationFacts.signatures`) compared across the datasets of the mixture
  (:mod:`.signature`): exact keys through one dictionary, near duplicates through the sorted-projection search, per
  number of dimensions. Only the signatures are held (about 1 KB per episode), never data: 400 datasets x 100
  episodes compare in seconds (``benchmarks/bench_curation.py``). The episode of the later entry is reported;
  the first copy stays.
* **L003**: the licences the dataset cards state (L002) grouped by their terms (:func:`terms`), reported on the
  datasets whose terms the others do not share. Never a legal judgement.

Findings go into the reports in place (grouped like the families' findings) and into their curation facts, so a
keep-list leaves the duplicates out.
"""

from __future__ import annotations

from pathlib import Path

from lerobot_tools.checks.catalogue import get as catalogue_entry
from lerobot_tools.checks.content.facts import EpisodeFinding
from lerobot_tools.checks.content.signature import SignatureTable, near_pairs
from lerobot_tools.dataset.targets import Target
from lerobot_tools.findings import DatasetReport, Finding, group_findings


def _enabled(options, check: str) -> bool:
    sel, ign = options.select, options.ignore
    return (sel is None or check in sel) and check not in ign


def check_across(groups: list[tuple[str, list[Target]]], reports: list[DatasetReport], options) -> None:
    """Q010 and L003 over every mixture-file argument of ``groups`` (``reports`` parallel to the concatenated
    targets, as :func:`lerobot_tools.checks.mixture.check_mixtures` takes them)."""
    pos = 0
    for arg, targets in groups:
        part = reports[pos:pos + len(targets)]
        pos += len(targets)
        if len(targets) < 2 or not Path(arg).expanduser().is_file():
            continue
        new: dict[int, list[Finding]] = {}
        if options.deep and options.content is not None and _enabled(options, "Q010"):
            duplicates_across(targets, part, options.content.near_duplicate, new)
        if _enabled(options, "L003"):
            license_conflicts(targets, part, new)
        for i, found in new.items():
            part[i].findings.extend(group_findings(found))


def duplicates_across(targets: list[Target], reports: list[DatasetReport], tol: float,
                      new: dict[int, list[Finding]]) -> int:
    """Q010 for one mixture: findings per report position into ``new``; returns the number of duplicates."""
    first_key: dict[str, tuple[int, int]] = {}
    flagged: dict[tuple[int, int], tuple[int, int, str]] = {}
    by_dims: dict[int, list[tuple[int, int, object]]] = {}
    for i, r in enumerate(reports):
        facts = r.curation
        if facts is None or not facts.signatures:
            continue
        for e, sig in facts.signatures:
            seen = first_key.get(sig.key)
            if seen is None:
                first_key[sig.key] = (i, e)
            elif seen[0] != i:
                flagged.setdefault((i, e), (seen[0], seen[1], "an exact copy"))
            by_dims.setdefault(sig.dims, []).append((i, e, sig))
    for items in by_dims.values():
        owners = {o for o, _, _ in items}
        if len(owners) < 2:
            continue
        table = SignatureTable.stack(items)
        for a, b in near_pairs(table, tol, across_only=True).tolist():
            oa, ob = int(table.owner[a]), int(table.owner[b])
            ea, eb = int(table.episode[a]), int(table.episode[b])
            if (oa, ea) > (ob, eb):
                oa, ea, ob, eb = ob, eb, oa, ea
            if (oa, ea) in flagged:  # its first copy is itself a copy: point at the original
                oa, ea = flagged[(oa, ea)][:2]
            flagged.setdefault((ob, eb), (oa, ea, "a near duplicate"))
    sev = catalogue_entry("Q010").severity
    for (i, e), (oi, oe, how) in sorted(flagged.items()):
        other = targets[oi].spec
        msg = (f"episode {e} is {how} of episode {oe} of {other} ({targets[oi].source or 'the mixture'}): the "
               "mixture samples it twice")
        new.setdefault(i, []).append(Finding("Q010", sev, None, msg, group=f"episodes duplicate episodes of {other}",
                                             subject={"episode": e}))
        if reports[i].curation is not None:
            reports[i].curation.findings.append(EpisodeFinding(e, "Q010", sev, msg))
    return len(flagged)


# ---------------------------------------------------------------------- licences
_SHARE_ALIKE = (("cc-by-nc-sa", "cc-by-sa"), ("cc-by-sa", "cc-by-sa"), ("agpl", "gpl"), ("lgpl", "gpl"),
                ("gpl", "gpl"), ("odbl", "odbl"), ("cdla-sharing", "cdla-sharing"))


def terms(license_id: str | None) -> dict[str, object]:
    """What a Hub licence identifier says, as far as a mixture is concerned (never a legal reading):
    ``{"stated": bool, "nc": bool, "nd": bool, "sa": family or None}``. Identifiers are the Hub's
    (https://huggingface.co/docs/hub/repositories-licenses): ``cc-by-nc-4.0``, ``cc-by-sa-4.0``, ``gpl-3.0``...."""
    lic = (license_id or "").strip().lower()
    if lic in ("", "other", "unknown", "none"):
        return {"stated": False, "nc": False, "nd": False, "sa": None}
    sa = next((fam for prefix, fam in _SHARE_ALIKE if lic.startswith(prefix)), None)
    return {"stated": True, "nc": "-nc" in lic or "noncommercial" in lic, "nd": "-nd" in lic, "sa": sa}


def license_conflicts(targets: list[Target], reports: list[DatasetReport], new: dict[int, list[Finding]]) -> int:
    """L003 for one mixture (see module docstring): findings per report position into ``new``; returns how many."""
    lic = {i: r.curation.license for i, r in enumerate(reports) if r.curation is not None and r.curation.license}
    if len(lic) < 2:
        return 0
    t = {i: terms(v) for i, v in lic.items()}
    families = {x["sa"] for x in t.values() if x["sa"]}
    sev = catalogue_entry("L003").severity
    count = 0
    for i, x in t.items():
        others = [j for j in t if j != i]
        why = []
        if x["nc"] and any(not t[j]["nc"] for j in others):
            why.append("non-commercial terms")
        if x["nd"]:
            why.append("no-derivatives terms")
        if x["sa"] and len(families) > 1:
            why.append(f"share-alike terms ({x['sa']}) beside another share-alike family "
                       f"({', '.join(sorted(f for f in families if f != x['sa']))})")
        if not why:
            continue
        shown = sorted({lic[j] for j in others})
        msg = (f"license {lic[i]!r} ({' and '.join(why)}) beside {', '.join(map(repr, shown[:4]))} in "
               f"{len(others)} other dataset(s) of the mixture: the terms may not allow the same use "
               "(reported, not judged)")
        new.setdefault(i, []).append(Finding("L003", sev, "README.md", msg, subject={"key": "license"}))
        count += 1
    return count
