"""Scoring of ``benchmarks/corpus_check.py`` against the review in ``benchmarks/corpus/expectations.json``.

The rules (matching, precision, recall) are documented in ``corpus_check.py``'s docstring; this module implements
them: :func:`score_all` scores a run, :func:`render_score` prints it, :func:`diff_runs` compares two runs.
"""

from __future__ import annotations

import json
from fnmatch import fnmatch
from typing import IO

#: the commands whose findings are scored
SCORED = ("validate", "deep", "diagnose")
DEFAULT_IN = ("validate", "deep")


def finding_id(f: dict) -> tuple:
    """What identifies a finding across runs: check, severity, subject, path."""
    return f["check"], f["severity"], json.dumps(f.get("subject") or {}, sort_keys=True), f.get("path")


def matches(entry: dict, f: dict) -> bool:
    """Whether a review entry describes the raised finding ``f`` (see corpus_check's docstring)."""
    if entry["check"] != f["check"]:
        return False
    if entry.get("severity") and entry["severity"] != f["severity"]:
        return False
    for key, want in (entry.get("subject") or {}).items():
        have = (f.get("subject") or {}).get(key)
        if have != want and not (isinstance(have, list) and want in have):
            return False
    if entry.get("path"):
        paths = [p for p in [f.get("path"), *(f.get("paths") or [])] if p]
        if not any(fnmatch(p, entry["path"]) for p in paths):
            return False
    return True


def _review_of(ds: dict, expectations: dict) -> dict | None:
    for rev in expectations.get("datasets", []):
        if rev.get("source") == ds["source"]:
            return rev
    return None


def _raised(ds: dict) -> dict[str, list[dict]]:
    """Per scored command, its findings with one entry per distinct identity."""
    out = {}
    for cmd in SCORED:
        res = ds["results"].get(cmd)
        if res is None:
            continue
        seen: dict[tuple, dict] = {}
        for f in res.get("findings", []):
            seen.setdefault(finding_id(f), f)
        out[cmd] = list(seen.values())
    return out


def score_dataset(ds: dict, review: dict | None) -> dict:
    raised = _raised(ds)
    rows = []
    must = (review or {}).get("must_appear", [])
    ok_entries = must + (review or {}).get("acceptable", [])
    forbidden = (review or {}).get("must_not", [])
    for cmd, findings in raised.items():
        for f in findings:
            status = "new"
            if any(cmd in e.get("in", DEFAULT_IN) and matches(e, f) for e in must):
                status = "expected"
            elif any(cmd in e.get("in", DEFAULT_IN) and matches(e, f) for e in ok_entries):
                status = "acceptable"
            elif any(cmd in e.get("in", DEFAULT_IN) and matches(e, f) for e in forbidden):
                status = "forbidden"
            rows.append({"cmd": cmd, "finding": f, "status": status})
    missing, found = [], 0
    counted = 0
    for e in must:
        cmds = [c for c in e.get("in", DEFAULT_IN) if c in raised]
        if not cmds:
            continue
        counted += 1
        absent = [c for c in cmds if not any(matches(e, f) for f in raised[c])]
        if absent:
            missing.append({"entry": e, "commands": absent})
        else:
            found += 1
    good = sum(1 for r in rows if r["status"] in ("expected", "acceptable"))
    return {"name": ds["name"], "version": ds.get("codebase_version"), "reviewed": review is not None,
            "rows": rows, "raised": len(rows), "good": good, "must": counted, "found": found, "missing": missing}


def score_all(run_doc: dict, expectations: dict) -> dict:
    per = [score_dataset(ds, _review_of(ds, expectations)) for ds in run_doc["datasets"]]
    raised = sum(p["raised"] for p in per)
    good = sum(p["good"] for p in per)
    must = sum(p["must"] for p in per)
    found = sum(p["found"] for p in per)
    return {"datasets": per, "raised": raised, "good": good, "must": must, "found": found,
            "precision": good / raised if raised else 1.0, "recall": found / must if must else 1.0,
            "unreviewed": [p["name"] for p in per if not p["reviewed"]]}


def _fmt(f: dict) -> str:
    subj = ",".join(f"{k}={v}" for k, v in sorted((f.get("subject") or {}).items()))
    where = f.get("path") or ""
    return f"{f['check']} {f['severity']}" + (f" [{subj}]" if subj else "") + (f" {where}" if where else "") + \
        f": {f.get('message', '')[:160]}"


def _entry(e: dict) -> str:
    subj = ",".join(f"{k}={v}" for k, v in sorted((e.get("subject") or {}).items()))
    return f"{e['check']} {e.get('severity', '')}" + (f" [{subj}]" if subj else "") + \
        (f" {e['path']}" if e.get("path") else "") + f" — {e.get('reason', '')}"


def render_score(run_doc: dict, score: dict, out: IO[str], verbose: bool = False) -> None:
    out.write(f"\n{'dataset':<40} {'ver':<5} {'raised':>6} {'good':>5} {'must':>5} {'found':>5} "
              f"{'crash':>5} {'disagree':>8}\n")
    by_name = {ds["name"]: ds for ds in run_doc["datasets"]}
    for p in score["datasets"]:
        ds = by_name[p["name"]]
        out.write(f"{p['name']:<40} {str(p['version']):<5} {p['raised']:>6} {p['good']:>5} {p['must']:>5} "
                  f"{p['found']:>5} {len(ds['crashes']):>5} {len(ds['disagreements']):>8}"
                  f"{'' if p['reviewed'] else '  (not reviewed)'}\n")
    for p in score["datasets"]:
        ds = by_name[p["name"]]
        lines = []
        for r in p["rows"]:
            if r["status"] in ("new", "forbidden") or verbose:
                lines.append(f"  {r['status']:<10} {r['cmd']:<8} {_fmt(r['finding'])}")
        for m in p["missing"]:
            lines.append(f"  vanished   {'/'.join(m['commands']):<8} {_entry(m['entry'])}")
        lines += [f"  CRASH      {c}" for c in ds["crashes"]]
        lines += [f"  DISAGREE   {d}" for d in ds["disagreements"]]
        if lines:
            out.write(f"\n{p['name']} ({p['version']}):\n" + "\n".join(lines) + "\n")
    crashed = sum(len(by_name[p["name"]]["crashes"]) for p in score["datasets"])
    disagree = sum(len(by_name[p["name"]]["disagreements"]) for p in score["datasets"])
    out.write(f"\nprecision {score['good']}/{score['raised']} = {score['precision']:.1%}   "
              f"recall {score['found']}/{score['must']} = {score['recall']:.1%}   "
              f"crashes {crashed}   disagreements {disagree}   "
              f"datasets {len(score['datasets'])} ({len(score['unreviewed'])} not reviewed)\n")


def diff_runs(prev: dict, cur: dict, out: IO[str]) -> None:
    """Findings new or vanished in ``cur`` compared with ``prev`` (datasets matched by source)."""
    def index(doc):
        return {json.dumps(ds["source"], sort_keys=True): ds for ds in doc["datasets"]}
    p_idx, c_idx = index(prev), index(cur)
    out.write("\nsince the previous run:\n")
    n = 0
    for key, ds in c_idx.items():
        old = p_idx.get(key)
        if old is None:
            continue
        for cmd in SCORED:
            a = {finding_id(f): f for f in (old["results"].get(cmd) or {}).get("findings", [])}
            b = {finding_id(f): f for f in (ds["results"].get(cmd) or {}).get("findings", [])}
            if cmd not in old["results"] or cmd not in ds["results"]:
                continue
            for k in sorted(b.keys() - a.keys(), key=str):
                out.write(f"  {ds['name']}: new      {cmd:<8} {_fmt(b[k])}\n")
                n += 1
            for k in sorted(a.keys() - b.keys(), key=str):
                out.write(f"  {ds['name']}: vanished {cmd:<8} {_fmt(a[k])}\n")
                n += 1
    if not n:
        out.write("  no change\n")
