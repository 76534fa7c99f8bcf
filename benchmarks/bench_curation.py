"""Curation: planted-defect precision and recall (lrtool beside rdq, lerobot-doctor and kalanos), and the cost.

Parts (``--part accuracy|speed|all``):

* ``accuracy``: three datasets built from the recordings upstream lerobot 0.4.4 wrote in ``fixtures/real``
  (:mod:`lerobot_tools.testing.planted`) with defects of every kind planted at known episodes: ``numeric`` (v3.0,
  30 fps, every numeric kind at 3 episodes each), ``copies`` (v3.0; 3 of its episodes copy clean episodes of
  ``numeric``, plus one more of every numeric warning kind) and ``cameras`` (v2.1, two 64x64 h264 cameras, every
  camera kind at 3 episodes). lrtool validates the mixture of the three (``--deep --camera-frames 4``); each peer
  checks each folder with its video checks on. A planted defect is *found* when the tool flags its episode with a
  finding of the defect's kind (:data:`PEER_KINDS` maps the peers' check names); a *false flag* is a flag on an
  episode without a planted defect of that kind. Printed per tool: recall and precision over the planted
  (episode, kind) pairs, the kinds found, false flags, wall time and peak RSS (``/usr/bin/time -v``).
  Peers are installed by the user in their own virtual environments, never as project dependencies
  (``--peers DIR`` holding ``rdq/``, ``doctor/``, ``kalanos/`` venvs with PyPI rdq 0.3.4, lerobot-doctor 0.2.0 and
  kalanos 0.8.2); a peer that is not there is reported as not run.
* ``speed``: (1) the content checks' share of ``validate --deep`` on the 1,000-episode dataset
  ``bench_speed.py`` builds (``--deep`` against ``--deep --ignore Q``, alternating rounds, medians; target <= +50 %,
  peak RSS < 300 MB); (2) the mixture-wide duplicate search (Q010) over 400 datasets x 100 episodes of synthetic
  signatures, in a child process (target < 10 s and < 200 MB once the signatures exist); (3) ``validate`` of a
  400-dataset mixture of ``--meta-only`` copies (target < 30 s); (4) the camera checks' cost per episode and
  camera.

Usage: python benchmarks/bench_curation.py [--part accuracy|speed|all] [--peers /work/wt/peers] [--workdir DIR]
       [--keep] [--repeat 3]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
REAL = ROOT / "fixtures" / "real"
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(HERE))

NUMERIC_KINDS = ("frozen", "stuck", "idle", "spike", "jump", "nan", "pinned", "lag", "short", "duplicate",
                 "near_duplicate")
CAMERA_KINDS = ("black", "overexposed", "frozen_camera", "duplicate_stream")
PER_KIND = 3

#: how each peer's findings name the kinds (substrings of their check names / messages), from their reports
PEER_KINDS = {
    "rdq": {"frozen": ("no_motion", "idle"), "stuck": ("dead_dimension", "stuck"), "idle": ("idle_padding",),
            "spike": ("spike",), "jump": ("spike", "jump", "trajectory_outlier"), "nan": ("non_finite",),
            "pinned": ("clip", "saturat"), "lag": ("lag",), "short": ("too_short",),
            "duplicate": ("duplicate",), "near_duplicate": ("duplicate",), "black": ("black", "dark", "covered"),
            "overexposed": ("overexpos", "bright", "washed"), "frozen_camera": ("frozen",),
            "duplicate_stream": ("duplicate", "swap", "same")},
    "lerobot-doctor": {"frozen": ("frozen",), "stuck": ("stuck", "constant"), "idle": ("idle", "static"),
                       "spike": ("jump", "outlier"), "jump": ("jump", "outlier"), "nan": ("nan",),
                       "pinned": ("clip",), "lag": ("lag",), "short": ("short", "chunk"),
                       "duplicate": ("duplicate",), "near_duplicate": ("duplicate",), "black": ("black",),
                       "overexposed": ("overexpos",), "frozen_camera": ("frozen",), "duplicate_stream": ("duplicate",)},
    "kalanos": {"frozen": ("flatline",), "stuck": ("flatline",), "idle": ("flatline", "idle"), "spike": ("spike",),
                "jump": ("spike",), "nan": ("missing",), "pinned": ("flatline", "limit"), "lag": ("lag",),
                "short": ("short", "duration"), "duplicate": ("duplicate",), "near_duplicate": ("duplicate",),
                "black": ("exposure", "blank"), "overexposed": ("exposure",), "frozen_camera": ("frozen",),
                "duplicate_stream": ("duplicate",)},
}

LRTOOL_CHILD = r"""
import json, sys
from lerobot_tools.checks.context import ValidateOptions
from lerobot_tools.validate import validate
reports = validate([sys.argv[1]], ValidateOptions(deep=True, camera_frames=4))
out = []
for r in reports:
    for f in r.curation.findings:
        out.append([r.root, f.episode, f.check])
    trims = {str(k): list(v) for k, v in r.curation.trims.items()}
    out.append([r.root, -1, json.dumps(trims)])
json.dump(out, open(sys.argv[2], "w"))
"""


# ---------------------------------------------------------------------------------------------- helpers
def timed(cmd: list[str], *, cwd: Path | None = None, env: dict | None = None,
          stdout=subprocess.DEVNULL) -> dict:
    """Run ``cmd`` under ``/usr/bin/time -v``: wall seconds, peak RSS (MB), exit status."""
    with tempfile.NamedTemporaryFile("r", suffix=".time") as tf:
        p = subprocess.run(["/usr/bin/time", "-v", "-o", tf.name, *cmd], cwd=cwd, env=env, stdout=stdout,
                           stderr=subprocess.PIPE, text=True)
        text = Path(tf.name).read_text()
    wall = re.search(r"Elapsed \(wall clock\) time \(h:mm:ss or m:ss\): (\S+)", text)
    rss = re.search(r"Maximum resident set size \(kbytes\): (\d+)", text)
    cpu = sum(float(m) for m in re.findall(r"(?:User|System) time \(seconds\): ([\d.]+)", text))
    parts = [float(x) for x in wall.group(1).split(":")] if wall else [float("nan")]
    secs = sum(x * 60 ** i for i, x in enumerate(reversed(parts)))
    return {"wall": secs, "cpu": cpu, "rss": int(rss.group(1)) / 1024 if rss else float("nan"), "exit": p.returncode,
            "stderr": p.stderr[-2000:]}


def plan_for(kinds: tuple[str, ...], episodes: int, first: int, seed: int) -> dict[int, list[str]]:
    """``PER_KIND`` episodes per kind, spread over the dataset, never episode 0-4 (the duplicates' sources)."""
    import numpy as np

    rng = np.random.default_rng(seed)
    free = [e for e in range(first, episodes)]
    rng.shuffle(free)
    plan: dict[int, list[str]] = {}
    for kind in kinds:
        for _ in range(PER_KIND):
            plan[free.pop()] = [kind]
    return plan


# ---------------------------------------------------------------------------------------------- accuracy
def build(work: Path) -> dict:
    """The three planted datasets and the truth: ``{folder: {episode: [kinds]}}``."""
    from lerobot_tools.testing.planted import base_episodes, build_planted, real_pieces

    pieces = real_pieces(REAL, 30)
    truth: dict[str, dict[int, list[str]]] = {}
    numeric_base = base_episodes(pieces, 80, seed=1)
    plan = plan_for(NUMERIC_KINDS, 80, 5, seed=1)
    build_planted(work / "numeric", REAL, plan, episodes=80, base=numeric_base, seed=1)
    truth["numeric"] = plan
    copies_base = base_episodes(pieces, 40, seed=2)
    plan2 = plan_for(("frozen", "spike", "nan", "lag", "duplicate"), 40, 8, seed=2)
    for k, src in zip((1, 3, 5), (0, 1, 2)):  # copies of numeric's clean episodes 0-2
        copies_base[k] = numeric_base[src].copy()
    build_planted(work / "copies", REAL, plan2, episodes=40, base=copies_base, seed=2)
    truth["copies"] = {**plan2, 1: ["cross_duplicate"], 3: ["cross_duplicate"], 5: ["cross_duplicate"]}
    plan3 = plan_for(CAMERA_KINDS, 24, 1, seed=3)
    build_planted(work / "cameras", REAL, plan3, episodes=24, version="v2.1", cameras=True, seed=3)
    truth["cameras"] = plan3
    (work / "mixture.txt").write_text("numeric\ncopies\ncameras\n")
    return truth


def score(flags: dict[str, dict[int, set[str]]], truth: dict, kinds_of) -> dict:
    """Recall/precision over planted (dataset, episode, kind); ``kinds_of(label)`` -> kinds a flag stands for."""
    planted = {(d, e, k) for d, plan in truth.items() for e, ks in plan.items() for k in ks}
    found, false = set(), []
    for d, eps in flags.items():
        for e, labels in eps.items():
            for label in labels:
                kinds = kinds_of(label)
                hit = [(d, e, k) for k in kinds if (d, e, k) in planted]
                if hit:
                    found.update(hit)
                else:
                    false.append((d, e, label))
    tp = len(found)
    flagged = tp + len(false)
    return {"recall": tp / len(planted), "precision": tp / flagged if flagged else 1.0, "tp": tp,
            "planted": len(planted), "false": false,
            "kinds_found": sorted({k for _, _, k in found}),
            "kinds_missed": sorted({k for _, _, k in planted} - {k for _, _, k in found})}


LR_KIND = {"Q001": ("frozen",), "Q002": ("stuck",), "Q003": ("idle",), "Q004": ("spike", "jump"), "Q005": ("nan",),
           "Q006": ("pinned",), "Q007": ("lag",), "Q008": ("short",), "Q009": ("duplicate", "near_duplicate"),
           "Q010": ("cross_duplicate",), "Q011": ("black",), "Q012": ("overexposed",), "Q013": ("frozen_camera",),
           "Q014": ("duplicate_stream",)}


def run_lrtool(work: Path, truth: dict) -> dict:
    out = work / "lrtool.json"
    m = timed([sys.executable, "-c", LRTOOL_CHILD, str(work / "mixture.txt"), str(out)], cwd=work)
    if m["exit"] != 0:
        raise SystemExit(f"lrtool child failed: {m['stderr']}")
    flags: dict[str, dict[int, set[str]]] = {}
    trims = {}
    for root, e, check in json.loads(out.read_text()):
        name = Path(root).name
        if e == -1:
            trims[name] = json.loads(check)
            continue
        if check[0] in "QL":
            flags.setdefault(name, {}).setdefault(e, set()).add(check)
    res = score(flags, truth, lambda c: LR_KIND.get(c, ()))
    res.update(m)
    res["trims"] = trims
    return res


def _peer_flags_rdq(report: dict) -> dict[int, set[str]]:
    out: dict[int, set[str]] = {}
    for f in report.get("findings", []):
        for e in f.get("episodes") or []:
            out.setdefault(int(e), set()).add(f"{f.get('check')} {f.get('message', '')}".lower())
    return out


def _peer_flags_doctor(report: dict) -> dict[int, set[str]]:
    out: dict[int, set[str]] = {}
    for c in report.get("checks", []):
        for m in c.get("messages", []):
            if m.get("severity") in ("PASS", "INFO"):
                continue
            for e in re.findall(r"[Ee]pisodes? (\d+(?:\s*,\s*\d+)*)", m.get("message", "")):
                for x in re.findall(r"\d+", e):
                    out.setdefault(int(x), set()).add(f"{c.get('name')} {m.get('message')}".lower())
    return out


def _peer_flags_kalanos(report: dict) -> dict[int, set[str]]:
    out: dict[int, set[str]] = {}
    for f in report.get("findings", []):
        m = re.search(r"episode_(\d+)", str(f.get("episode_id", "")))
        if m and f.get("severity") in ("warning", "critical", "error", "blocked"):
            out.setdefault(int(m.group(1)), set()).add(str(f.get("metric_id", "")).lower())
    for d in report.get("duplicates") or []:
        for m in re.finditer(r"episode_(\d+)", json.dumps(d)):
            out.setdefault(int(m.group(1)), set()).add("duplicate")
    return out


def run_peer(name: str, peers: Path, work: Path, truth: dict) -> dict:
    venv = {"rdq": "rdq", "lerobot-doctor": "doctor", "kalanos": "kalanos"}[name]
    exe = peers / venv / "bin" / {"rdq": "rdq", "lerobot-doctor": "lerobot-doctor", "kalanos": "kalanos"}[name]
    if not exe.is_file():
        return {"error": f"not installed ({exe} missing)"}
    flags: dict[str, dict[int, set[str]]] = {}
    wall, rss, problems = 0.0, 0.0, []
    for d in truth:
        rep = work / f"{name}-{d}.json"
        if name == "rdq":
            cmd = [str(exe), "check", d, "--json", str(rep), "--no-color"] + (["--video"] if d == "cameras" else [])
            m = timed(cmd, cwd=work)
        elif name == "lerobot-doctor":
            with open(rep, "w") as fh:
                m = timed([str(exe), "check", d, "--json"], cwd=work, stdout=fh)
        else:
            m = timed([str(exe), "grade", d, "--report", str(rep), "--no-color"], cwd=work)
        wall += m["wall"]
        rss = max(rss, m["rss"])
        try:
            report = json.loads(rep.read_text())
        except Exception as exc:
            problems.append(f"{d}: no report (exit {m['exit']}: {m['stderr'][-300:]!r}; {exc})")
            continue
        parse = {"rdq": _peer_flags_rdq, "lerobot-doctor": _peer_flags_doctor, "kalanos": _peer_flags_kalanos}[name]
        flags[d] = parse(report)
    table = PEER_KINDS[name]

    def kinds_of(label: str) -> tuple[str, ...]:
        return tuple(k for k, keys in table.items() if any(s in label for s in keys)) + \
            (("cross_duplicate",) if "duplicate" in label else ())

    res = score(flags, truth, kinds_of)
    res.update(wall=wall, rss=rss, problems=problems)
    return res


def accuracy(args, work: Path) -> None:
    t0 = time.perf_counter()
    truth = build(work)
    print(f"planted datasets built in {time.perf_counter() - t0:.0f} s under {work}: "
          + ", ".join(f"{d} {sum(len(k) for k in p.values())} defects" for d, p in truth.items()))
    results = {"lrtool": run_lrtool(work, truth)}
    for peer in ("rdq", "lerobot-doctor", "kalanos"):
        results[peer] = run_peer(peer, Path(args.peers), work, truth)
    print(f"\n{'tool':<16}{'recall':>8}{'precision':>11}{'found':>8}{'false':>7}{'wall s':>9}{'RSS MB':>8}"
          "  kinds missed")
    for name, r in results.items():
        if "error" in r:
            print(f"{name:<16}  not run: {r['error']}")
            continue
        print(f"{name:<16}{r['recall']:>8.1%}{r['precision']:>11.1%}{r['tp']:>5}/{r['planted']:<3}{len(r['false']):>6}"
              f"{r['wall']:>9.1f}{r['rss']:>8.0f}  {', '.join(r['kinds_missed']) or '-'}")
        for p in r.get("problems", []):
            print(f"    problem: {p}")
    for name, r in results.items():
        if r.get("false"):
            shown = ", ".join(f"{d}:{e} {lab[:40]!r}" for d, e, lab in r["false"][:6])
            print(f"  {name} false flags ({len(r['false'])}): {shown}")
    lr = results["lrtool"]
    planted_trims = {e: None for e, k in truth["numeric"].items() if k == ["idle"]}
    print(f"  lrtool trims on numeric (planted: 75 head / 60 tail frames at {sorted(planted_trims)}): "
          f"{lr['trims'].get('numeric')}")
    (work / "accuracy.json").write_text(json.dumps(results, indent=1, default=str))


# ---------------------------------------------------------------------------------------------- speed
SIGNATURE_CHILD = r"""
import json, resource, sys, time
import numpy as np
from lerobot_tools.checks.content.facts import CurationFacts
from lerobot_tools.checks.content.signature import signature_of
from lerobot_tools.checks.content.across import duplicates_across
from lerobot_tools.dataset.targets import Target
from lerobot_tools.findings import DatasetReport
datasets, episodes = int(sys.argv[1]), int(sys.argv[2])
rng = np.random.default_rng(0)
targets, reports = [], []
ok = np.ones(12, dtype=bool)
for d in range(datasets):
    facts = CurationFacts()
    for e in range(episodes):
        x = np.cumsum(rng.normal(size=(int(rng.integers(200, 400)), 12)), axis=0)
        facts.signatures.append((e, signature_of(x, ok)))
    # every 20th dataset republishes 5 episodes of the one before
    if d % 20 == 19:
        prev = reports[-1].curation.signatures
        facts.signatures[:5] = [(e, s) for (e, s) in prev[:5]]
    targets.append(Target(spec=f"org/ds{d}"))
    r = DatasetReport(target=f"org/ds{d}", root=None, codebase_version="v3.0")
    r.curation = facts
    reports.append(r)
rss0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
t0 = time.perf_counter()
new = {}
found = duplicates_across(targets, reports, 0.01, new)
dt = time.perf_counter() - t0
print(json.dumps({"seconds": dt, "found": found, "rss_before": rss0,
                  "rss_after": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                  "signature_bytes": sum(s.nbytes() for r in reports for _, s in r.curation.signatures)}))
"""


def speed(args, work: Path) -> None:
    import _replicate
    from _measure import lrtool

    print("\n[1] content checks inside --deep on the 1,000-episode benchmark dataset (bench_speed.py's v2.1 build)")
    ds = work / "speed_v21" / "v2.1-1000"
    if not ds.exists():
        print("   ", _replicate.build("v2.1", ds.parent, 1000))
    runs = {"--deep --ignore Q": [], "--deep": []}
    for _ in range(args.repeat):
        for label in runs:
            runs[label].append(timed(lrtool("validate", *label.split(), str(ds))))
    for what in ("wall", "cpu"):
        base = statistics.median(r[what] for r in runs["--deep --ignore Q"])
        with_q = statistics.median(r[what] for r in runs["--deep"])
        print(f"    {what}: --deep without Q {base:.2f} s, with Q {with_q:.2f} s -> +{(with_q / base - 1):.0%}")
    print(f"    peak RSS {max(r['rss'] for r in runs['--deep --ignore Q']):.0f} MB without Q, "
          f"{max(r['rss'] for r in runs['--deep']):.0f} MB with Q (target <= +50 %, RSS < 300 MB; medians of "
          f"{args.repeat} alternating rounds; exits {[r['exit'] for r in runs['--deep']]})")

    print("\n[2] Q010 across 400 datasets x 100 episodes (synthetic signatures, 12 dimensions, 200-400 frames)")
    p = subprocess.run([sys.executable, "-c", SIGNATURE_CHILD, "400", "100"], capture_output=True, text=True,
                       env=dict(os.environ, PYTHONPATH=str(ROOT)))
    if p.returncode:
        print("    failed:", p.stderr[-500:])
    else:
        r = json.loads(p.stdout.strip().splitlines()[-1])
        print(f"    search {r['seconds']:.2f} s, {r['found']} duplicate episode(s) found (100 planted: 5 in each of "
              f"20 datasets); signatures {r['signature_bytes'] / 2**20:.1f} MiB; peak RSS of the process "
              f"{r['rss_after']:.0f} MB ({r['rss_before']:.0f} MB with the signatures, before the search) "
              "(target < 10 s, < 200 MB)")

    print("\n[3] validate of a 400-dataset mixture of --meta-only copies")
    meta = work / "meta400"
    if not meta.exists():
        from lerobot_tools.dataset.downloads import META_ONLY, DownloadState, write_state

        src = work / "numeric"
        if not src.exists():
            build(work)
        for i in range(400):
            dst = meta / f"ds{i:03d}"
            shutil.copytree(src / "meta", dst / "meta")
            write_state(dst, DownloadState(META_ONLY, "0" * 40))
        (meta / "mixture.txt").write_text("".join(f"ds{i:03d}\n" for i in range(400)))
    for jobs in ("1", "2"):
        m = timed(lrtool("validate", str(meta / "mixture.txt"), "--write-keep", str(meta / "keep.txt"), "--jobs", jobs))
        kept = sum(1 for line in (meta / "keep.txt").read_text().splitlines() if line and not line.startswith("#"))
        print(f"    --jobs {jobs}: {m['wall']:.1f} s wall, {m['cpu']:.1f} s CPU, peak RSS {m['rss']:.0f} MB, exit "
              f"{m['exit']} (the planted NaN statistics are G003 errors), keep-list of {kept} lines (target < 30 s)")

    print("\n[4] camera checks: cost per episode and camera (--camera-frames 4), CPU seconds")
    for label, root, pairs in (("the 1,000-episode dataset of [1] (one 240x320 h264 camera)", ds, 1000),
                               ("the planted camera dataset (24 episodes, two 64x64 h264 cameras)", work / "cameras",
                                48)):
        if not root.exists():
            build(work)
        off = statistics.median(timed(lrtool("validate", "--deep", "--ignore", "G010", str(root)))["cpu"]
                                for _ in range(args.repeat))
        on = statistics.median(timed(lrtool("validate", "--deep", "--ignore", "G010", "--camera-frames", "4",
                                            str(root)))["cpu"] for _ in range(args.repeat))
        print(f"    {label}: {off:.2f} s without, {on:.2f} s with: {(on - off) / pairs * 1000:.1f} ms per episode and "
              "camera")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--part", choices=["accuracy", "speed", "all"], default="all")
    ap.add_argument("--peers", default="/work/wt/peers", help="folder of the peers' virtual environments")
    ap.add_argument("--workdir", type=Path, default=None)
    ap.add_argument("--keep", action="store_true", help="keep the work folder")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    work = args.workdir or Path(tempfile.mkdtemp(prefix="lrtool-curation-"))
    work.mkdir(parents=True, exist_ok=True)
    try:
        if args.part in ("accuracy", "all"):
            accuracy(args, work)
        if args.part in ("speed", "all"):
            speed(args, work)
    finally:
        if not args.keep and args.workdir is None:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
