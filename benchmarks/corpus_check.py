"""Real-world corpus check: run every lrtool command on every dataset of a corpus of published LeRobot datasets
and score the findings against a hand review (``benchmarks/corpus/expectations.json``), the way ruff's ecosystem
check runs a linter over real projects.

    python benchmarks/corpus_check.py CORPUS_DIR [DATASET ...] [--only NAME] [--commands validate,deep,...]
                                      [--json OUT] [--previous OUT] [--from-json OUT] [--lrtool-python PY]
                                      [--pythonpath DIR] [--lerobot-python PY] [--lerobot-v21 DIR]

CORPUS_DIR holds one dataset folder (the one holding ``meta/info.json``) per subfolder, and optionally a
``MANIFEST.tsv`` (columns ``name``, ``github_repo``, ``commit``, ``subfolder``) naming where each was published;
each extra DATASET is one more dataset folder. Datasets are read, never written: every command that writes runs
on a scratch copy in a temporary folder. The test suite never needs a corpus.

Commands (``--commands``, comma-separated; default all), each a subprocess of the CLI (``PY -m lerobot_tools ...
--format json``) so that a traceback is caught, never raised here:

* ``validate``, ``deep`` (``validate --deep``), ``diagnose`` (``diagnose-decode --gpu H100``), ``dry``
  (``repair --dry-run``) on the dataset itself;
* ``scratch`` on a copy: ``repair``, ``validate`` of the result, ``repair --undo`` (the copy must then be byte-identical
  to the original, ``.lrtool/`` aside), a load with lrtool's ``FrameDataset`` (parquet columns, every frame up to
  3,000 evenly spaced ones, hashed), ``reshard`` and the same load again (the hashes must agree);
* ``smoke`` (``smoke -n 2 -b 4``) on the dataset;
* ``upstream``: upstream lerobot's ``LeRobotDataset`` on a copy (``--lerobot-python``, lerobot 0.4.4, for v3.0; for
  v2.x the folder given by ``--lerobot-v21`` holding a lerobot 0.3.x ``lerobot`` package, e.g. the unpacked wheel of
  ``pip download lerobot==0.3.3 --no-deps``), offline: construction, three samples, and each camera's stored
  ``mean``/``std`` broadcast against a (2, C, H, W) batch as lerobot's normaliser does. Skipped when unavailable.
  (lerobot 0.3.3 predates datasets 4: beside it, its ``torch.stack(hf_dataset["timestamp"])`` raises TypeError on
  any v2.x dataset once the files are found, so for v2.x only what fails before that stage is meaningful.)

Recorded per command: exit status, seconds, findings (check ID, severity, subject, path), the traceback if any.
``--json OUT`` writes everything; ``--from-json OUT`` rescores a saved run without running anything;
``--previous OUT`` lists findings that are new or vanished since that run.

Scoring against the review. A finding is identified by (command, check, severity, subject, path); the review
lists, per dataset (named by source repository, commit and subfolder, never by a local path), the findings that
``must_appear``, those that are ``acceptable`` (true but not required) and those that ``must_not`` appear, each
with a one-line reason. An entry matches a raised finding when the check and severity are equal, every key of
its ``subject`` equals the finding's (or is among the finding's list), and its ``path`` (an fnmatch pattern),
when given, matches the finding's path or one of its example paths; ``in`` names the commands it is about
(default ``validate`` and ``deep``).

* precision = raised findings matched by a ``must_appear`` or ``acceptable`` entry / all raised findings (each
  command's findings counted once per distinct identity; a finding the review does not list counts against it);
* recall = ``must_appear`` entries matched in every command of their ``in`` / all ``must_appear`` entries.

Also printed: every finding the review does not list (new), every ``must_appear`` entry not raised (vanished) and
every ``must_not`` entry raised; commands that crashed (a traceback, an exit status outside {0, 1, 2}, or output
that is not the JSON document); and commands that disagree (validate finds no error but smoke, lrtool's loader or
upstream's raises; diagnose-decode and validate report different video-file checks; ``--deep`` drops a default
error; repair plans one set of fixes and applies another, exits 0 with errors left, or adds an error; undo is not
byte-identical; reshard changes what the loader reads). Exit status 0 when nothing crashed, nothing disagreed,
precision >= 98 % and recall >= 95 %; 1 otherwise; 2 bad arguments.
"""

from __future__ import annotations

import argparse
import csv
import hashlib
import json
import os
import shutil
import stat
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _corpus_score import score_all, render_score, diff_runs  # noqa: E402

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
EXPECTATIONS = HERE / "corpus" / "expectations.json"
COMMANDS = ("validate", "deep", "diagnose", "dry", "scratch", "smoke", "upstream")
TIMEOUT_S = 600

_LOAD = r"""
import hashlib, json, sys, tempfile
import numpy as np
root, cache = sys.argv[1], sys.argv[2]
out = {"ok": False}
try:
    from lerobot_tools.errors import DatasetError
    from lerobot_tools.loaders import FrameDataset
    ds = FrameDataset(root, decode_video=False, cache_dir=cache)
except Exception as exc:
    expected = isinstance(exc, (DatasetError, ValueError))
    print(json.dumps({"ok": False, "stage": "construct", "error": f"{type(exc).__name__}: {exc}"[:400],
                      "expected_error": expected}))
    sys.exit(0)
n = len(ds)
idx = range(n) if n <= 3000 else np.linspace(0, n - 1, 3000).astype(int)
h = hashlib.sha256()
try:
    for i in idx:
        sample = ds[int(i)]
        for k in sorted(sample):
            v = sample[k]
            h.update(k.encode())
            if hasattr(v, "numpy"):
                h.update(f"{v.dtype}{tuple(v.shape)}".encode())
                h.update(v.numpy().tobytes())
            else:
                h.update(repr(v).encode())
except Exception as exc:
    print(json.dumps({"ok": False, "stage": f"sample {int(i)}", "error": f"{type(exc).__name__}: {exc}"[:400],
                      "expected_error": isinstance(exc, DatasetError)}))
    sys.exit(0)
print(json.dumps({"ok": True, "frames": n, "episodes": len(ds.episodes), "digest": h.hexdigest()}))
"""

_UPSTREAM = r"""
import json, os, sys
os.environ["HF_HUB_OFFLINE"] = "1"
sys.path.insert(0, sys.argv[3])
from upstream_env import load_lerobot_dataset_class
root = sys.argv[1]
def why(exc):
    msg = f"{type(exc).__name__}: {exc}".splitlines()[0][:300]
    ctx = exc.__context__
    if ctx is not None and "offline" in msg.lower():
        msg = f"{type(ctx).__name__}: {ctx}".splitlines()[0][:300] + " (then tries the Hub)"
    return msg
out = {"ok": False}
try:
    import lerobot
    out["lerobot"] = getattr(lerobot, "__version__", "?")
    LeRobotDataset = load_lerobot_dataset_class()
except Exception as exc:
    print(json.dumps({"ok": False, "stage": "import", "error": why(exc)})); sys.exit(0)
try:
    ds = LeRobotDataset("local/corpus", root=root)
except Exception as exc:
    out.update(stage="construct", error=why(exc)); print(json.dumps(out)); sys.exit(0)
n = len(ds)
out["frames"] = n
for i in sorted({0, n // 2, max(n - 1, 0)}) if n else []:
    try:
        ds[i]
    except Exception as exc:
        out.update(stage=f"sample {i}", error=why(exc)); print(json.dumps(out)); sys.exit(0)
import torch
for key, ft in ds.meta.features.items():
    if ft.get("dtype") not in ("image", "video"):
        continue
    st = (ds.meta.stats or {}).get(key) or {}
    if "mean" not in st or "std" not in st:
        continue
    shape = list(ft["shape"])
    names = ft.get("names") or []
    if len(shape) == 3 and list(names[:1]) != ["channels"] and shape[2] in (1, 3, 4):
        shape = [shape[2], shape[0], shape[1]]
    try:
        batch = torch.zeros([2, *shape])
        (batch - torch.as_tensor(st["mean"], dtype=torch.float32)) / (
            torch.as_tensor(st["std"], dtype=torch.float32) + 1e-8)
    except Exception as exc:
        out.update(stage=f"normalise {key}", error=why(exc)); print(json.dumps(out)); sys.exit(0)
out["ok"] = True
print(json.dumps(out))
"""


def find_traceback(text: str) -> str | None:
    """The last Python traceback in ``text`` (at most 30 lines), or None."""
    i = text.rfind("Traceback (most recent call last)")
    return None if i < 0 else "\n".join(text[i:].splitlines()[:30])


def run(cmd: list[str], *, env: dict | None = None, timeout: float = TIMEOUT_S, want_json: bool = True) -> dict:
    """Run ``cmd``; return exit status, seconds, the parsed JSON document (or None), a traceback, stderr's tail."""
    t0 = time.perf_counter()
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=timeout)
        rc, out, err = p.returncode, p.stdout, p.stderr
    except subprocess.TimeoutExpired as exc:
        rc, out, err = "timeout", exc.stdout or "", exc.stderr or ""
        out, err = (x.decode(errors="replace") if isinstance(x, bytes) else x for x in (out, err))
    res = {"cmd": [Path(c).name if i == 0 else c for i, c in enumerate(cmd)], "rc": rc,
           "seconds": round(time.perf_counter() - t0, 2), "stderr": err[-1500:], "traceback": find_traceback(err + out)}
    if want_json:
        try:
            res["json"] = json.loads(out)
        except ValueError:
            res["json"] = None
            res["stdout"] = out[-1500:]
    else:
        res["stdout"] = out[-3000:]
    crashed = []
    if res["traceback"]:
        crashed.append("traceback")
    if rc not in (0, 1, 2):
        crashed.append(f"exit status {rc}")
    if want_json and res["json"] is None and rc != 2:
        crashed.append("no JSON document on stdout")
    res["crashed"] = crashed
    return res


def findings_of(doc: dict | None, command: str) -> list[dict]:
    """The findings of one command's JSON document, normalised to ``{check, severity, path, paths, subject,
    message, count}`` (diagnose-decode's problems carry the catalogue's check ID, or ``DD:<kind>``)."""
    out = []
    for ds in (doc or {}).get("datasets") or []:
        items = ds.get("problems") if command == "diagnose" else ds.get("findings")
        for f in items or []:
            paths = list(f.get("paths") or ([f["path"]] if f.get("path") else []))
            check = f.get("check") or f"DD:{f.get('kind')}"
            out.append({"check": check, "severity": f.get("severity"),
                        "path": f.get("path") or (paths[:1] or [None])[0], "paths": paths,
                        "subject": f.get("subject") or {}, "count": f.get("count"),
                        "message": (f.get("message") or "")[:300]})
        if command == "diagnose" and ds.get("error"):
            out.append({"check": "DD:dataset-error", "severity": "error", "path": None, "paths": [], "subject": {},
                        "count": None, "message": str(ds["error"])[:300]})
    return out


def tree_digest(root: Path) -> dict[str, str]:
    """``{relpath: sha256 | 'link:TARGET' | 'dir'}`` of every entry under ``root`` except ``.lrtool/``."""
    out = {}
    for dirpath, dirnames, filenames in os.walk(root):
        rel_dir = Path(dirpath).relative_to(root)
        if rel_dir == Path("."):
            dirnames[:] = [d for d in dirnames if d != ".lrtool"]
        for d in dirnames:
            p = Path(dirpath) / d
            out[str(rel_dir / d)] = f"link:{os.readlink(p)}" if p.is_symlink() else "dir"
        for f in filenames:
            p = Path(dirpath) / f
            if p.is_symlink():
                out[str(rel_dir / f)] = f"link:{os.readlink(p)}"
            else:
                out[str(rel_dir / f)] = hashlib.sha256(p.read_bytes()).hexdigest()
    return out


def copy_dataset(src: Path, dst: Path) -> None:
    """Copy a dataset folder (symlinks as links), every copied file and folder writable by its owner."""
    shutil.copytree(src, dst, symlinks=True)
    for dirpath, dirnames, filenames in os.walk(dst):
        for name in dirnames + filenames:
            p = Path(dirpath) / name
            if not p.is_symlink():
                p.chmod(p.stat().st_mode | stat.S_IWUSR)
    dst.chmod(dst.stat().st_mode | stat.S_IWUSR)


class Runner:
    """Runs the commands of one corpus check (interpreters, environment, temporary folders)."""

    def __init__(self, args: argparse.Namespace):
        self.args = args
        self.py = args.lrtool_python or sys.executable
        self.env = dict(os.environ, PYTHONUNBUFFERED="1", HF_HUB_OFFLINE="1", COLUMNS="200")
        if args.pythonpath:
            self.env["PYTHONPATH"] = os.pathsep.join([args.pythonpath, self.env.get("PYTHONPATH", "")]).rstrip(":")
        self.tmp = Path(tempfile.mkdtemp(prefix="lrtool-corpus-"))
        self.cache = self.tmp / "datasets-cache"

    def cli(self, *argv: str, json_out: bool = True) -> dict:
        extra = ["--format", "json"] if json_out else []
        return run([self.py, "-m", "lerobot_tools", *argv, *extra], env=self.env)

    def load(self, root: Path) -> dict:
        res = run([self.py, "-c", _LOAD, str(root), str(self.cache)], env=self.env, want_json=False)
        try:
            res["load"] = json.loads(res["stdout"].strip().splitlines()[-1])
        except (ValueError, IndexError):
            res["load"] = {"ok": False, "stage": "run", "error": (res["stderr"] or "no output")[-300:]}
        if not res["load"].get("ok") and not res["load"].get("expected_error", True):
            res["crashed"].append(f"FrameDataset raised {res['load']['error'].split(':')[0]}")
        return res

    def upstream(self, root: Path, version: str | None) -> dict | None:
        py = self.args.lerobot_python
        if not py or not Path(py).exists():
            return None
        env = dict(self.env)
        env.pop("PYTHONPATH", None)
        if version and version.startswith("v2"):
            if not self.args.lerobot_v21:
                return None
            env["PYTHONPATH"] = self.args.lerobot_v21
        work = self.tmp / "upstream"
        shutil.rmtree(work, ignore_errors=True)
        copy_dataset(root, work)
        res = run([py, "-c", _UPSTREAM, str(work), "", str(REPO / "scripts")], env=env, want_json=False,
                  timeout=300)
        res["crashed"] = []  # upstream's tracebacks are its findings, not ours
        try:
            res["load"] = json.loads(res["stdout"].strip().splitlines()[-1])
        except (ValueError, IndexError):
            res["load"] = {"ok": False, "stage": "run", "error": (res["traceback"] or res["stderr"])[-300:]}
        shutil.rmtree(work, ignore_errors=True)
        return res

    def check(self, ds: dict, commands: set[str]) -> dict:
        root = Path(ds["root"])
        out: dict = {}
        if "validate" in commands:
            out["validate"] = self.cli("validate", str(root))
        if "deep" in commands:
            out["deep"] = self.cli("validate", "--deep", str(root))
        if "diagnose" in commands:
            out["diagnose"] = self.cli("diagnose-decode", "--gpu", "H100", str(root))
        if "dry" in commands:
            out["dry"] = self.cli("repair", "--dry-run", str(root))
        if "scratch" in commands:
            out.update(self.scratch(root))
        if "smoke" in commands:
            out["smoke"] = self.cli("smoke", "-n", "2", "-b", "4", "--epoch-max-frames", "3000",
                                    "--cache-dir", str(self.cache), str(root))
        if "upstream" in commands:
            up = self.upstream(root, ds.get("codebase_version"))
            if up is not None:
                out["upstream"] = up
        for res in out.values():
            if isinstance(res, dict) and "json" in res:
                res["findings"] = findings_of(res["json"], "diagnose" if res is out.get("diagnose") else "")
        return out

    def scratch(self, root: Path) -> dict:
        work = self.tmp / "scratch"
        shutil.rmtree(work, ignore_errors=True)
        copy_dataset(root, work)
        out: dict = {}
        try:
            before = tree_digest(work)
            out["repair"] = self.cli("repair", str(work))
            out["after_repair"] = self.cli("validate", str(work))
            out["undo"] = self.cli("repair", "--undo", str(work))
            after = tree_digest(work)
            changed = sorted(k for k in before.keys() | after.keys() if before.get(k) != after.get(k))
            out["undo_identical"] = {"ok": not changed, "differs": changed[:10], "count": len(changed)}
            out["load_before"] = self.load(work)
            out["reshard"] = self.cli("reshard", "--no-progress", str(work))
            out["load_after"] = self.load(work)
        finally:
            shutil.rmtree(work, ignore_errors=True)
        return out

    def close(self) -> None:
        shutil.rmtree(self.tmp, ignore_errors=True)


def read_manifest(corpus: Path) -> dict[str, dict]:
    """``{folder name: {repo, commit, subfolder}}`` from ``corpus/MANIFEST.tsv`` (empty when absent)."""
    path = corpus / "MANIFEST.tsv"
    if not path.is_file():
        return {}
    with path.open(newline="") as f:
        return {r["name"]: {"repo": r["github_repo"], "commit": r["commit"], "subfolder": r["subfolder"]}
                for r in csv.DictReader(f, delimiter="\t")}


def identity(root: Path, manifest: dict[str, dict]) -> dict:
    """Where a dataset was published (MANIFEST row), else its folder name and the sha256 of its info.json."""
    if root.name in manifest:
        return dict(manifest[root.name])
    info = root / "meta" / "info.json"
    digest = hashlib.sha256(info.read_bytes()).hexdigest() if info.is_file() else None
    return {"name": root.name, "info_sha256": digest}


def discover(corpus: Path, extra: list[Path]) -> list[dict]:
    """The datasets to check: every subfolder of ``corpus`` holding ``meta/info.json`` (or ``corpus`` itself when it
    is a dataset), then each extra folder; each ``{name, root, source, codebase_version}``."""
    manifest = read_manifest(corpus)
    roots = [corpus] if (corpus / "meta" / "info.json").is_file() else sorted(
        p for p in corpus.iterdir() if p.is_dir() and (p / "meta" / "info.json").is_file())
    out = []
    for root in roots + extra:
        version = None
        try:
            version = json.loads((root / "meta" / "info.json").read_text()).get("codebase_version")
        except (OSError, ValueError, AttributeError):
            pass
        out.append({"name": root.name, "root": str(root), "source": identity(root, manifest),
                    "codebase_version": version})
    return out


def disagreements(res: dict) -> list[str]:
    """Where the commands' results about one dataset contradict each other (one line each)."""
    out = []
    val = res.get("validate")
    val_errors = [f for f in (val or {}).get("findings", []) if f["severity"] == "error"]
    validate_clean = val is not None and val["rc"] == 0 and not val_errors
    smoke = res.get("smoke")
    if validate_clean and smoke and smoke.get("json"):
        for d in smoke["json"].get("datasets") or []:
            if d.get("status") != "pass":
                why = d.get("error") or "; ".join(f"{c.get('check')}: {c.get('detail')}" for r in d.get("runs") or []
                                                 for c in r.get("checks") or [] if c.get("status") == "fail")
                out.append(f"validate finds no error but smoke says {d.get('status')}: {str(why)[:200]}")
    for key in ("load_before",):
        load = (res.get(key) or {}).get("load")
        if validate_clean and load and not load.get("ok"):
            out.append(f"validate finds no error but FrameDataset raises ({load.get('stage')}): {load.get('error')}")
    up = (res.get("upstream") or {}).get("load")
    if validate_clean and up and not up.get("ok"):
        out.append(f"validate finds no error but upstream lerobot raises ({up.get('stage')}): {up.get('error')}")
    diag = res.get("diagnose")
    if diag and val and diag.get("json") and val.get("json"):
        d_checks = {f["check"] for f in diag["findings"]
                    if f["severity"] == "error" and not f["check"].startswith("DD:")}
        v_video = {f["check"] for f in val["findings"] if f["severity"] == "error"
                   and (f["check"].startswith("I") or any(str(p).startswith("videos/") for p in f["paths"]))}
        for c in sorted(d_checks - {f["check"] for f in val["findings"]}):
            out.append(f"diagnose-decode reports {c} (error), validate does not")
        for c in sorted(v_video - d_checks):
            out.append(f"validate reports {c} (error) about videos/info.json, diagnose-decode does not")
    deep = res.get("deep")
    if deep and val and deep.get("json") and val.get("json"):
        d_keys = {(f["check"], f["severity"]) for f in deep["findings"]}
        for f in val_errors:
            if (f["check"], "error") not in d_keys:
                out.append(f"validate reports {f['check']} (error), validate --deep does not")
    out += _repair_disagreements(res)
    la, lb = (res.get("load_after") or {}).get("load"), (res.get("load_before") or {}).get("load")
    if lb and lb.get("ok") and la is not None:
        if not la.get("ok"):
            out.append(f"FrameDataset loads the dataset but not its reshard ({la.get('stage')}): {la.get('error')}")
        elif la.get("digest") != lb.get("digest"):
            out.append("reshard changed what FrameDataset reads (sample hashes differ)")
    return out


def _repair_disagreements(res: dict) -> list[str]:
    out = []
    und = res.get("undo_identical")
    if und and not und["ok"]:
        out.append(f"repair --undo is not byte-identical to the original: {und['count']} path(s), e.g. "
                   f"{', '.join(und['differs'][:3])}")
    dry, rep = res.get("dry"), res.get("repair")

    def planned(r):
        return sorted({a.get("check") for d in ((r or {}).get("json") or {}).get("datasets") or []
                       for a in d.get("repairs") or []})
    if dry and rep and dry.get("json") and rep.get("json") and planned(dry) != planned(rep):
        out.append(f"repair --dry-run plans {planned(dry)}, repair applies {planned(rep)}")
    after = res.get("after_repair")
    if rep and after and after.get("json"):
        errs = [f for f in after["findings"] if f["severity"] == "error"]
        if rep["rc"] == 0 and errs:
            out.append(f"repair exits 0 but validate then finds {len(errs)} error(s): "
                       f"{', '.join(sorted({f['check'] for f in errs}))}")
        before = {(f["check"], f["severity"]) for f in (res.get("validate") or {}).get("findings", [])}
        new = sorted({f["check"] for f in errs if (f["check"], "error") not in before})
        if res.get("validate") and new:
            out.append(f"repair introduced error(s): {', '.join(new)}")
    return out


def crashes(res: dict) -> list[str]:
    """Commands that crashed: a traceback, an exit status outside {0, 1, 2}, no JSON, or an internal error that
    lrtool turned into a finding (``M001 ... please report it``)."""
    out = [f"{name}: {', '.join(r['crashed'])}" + (f"\n      {r['traceback'].splitlines()[-1]}"
                                                   if r.get("traceback") else "")
           for name, r in res.items() if isinstance(r, dict) and r.get("crashed")]
    for name, r in res.items():
        for f in (r.get("findings") or []) if isinstance(r, dict) else []:
            if f["check"] == "M001" and "please report it" in f["message"]:
                out.append(f"{name}: internal error reported as M001: {f['message'][:200]}")
    return out


def summary_line(ds: dict) -> str:
    res = ds["results"]
    parts = []
    for name in ("validate", "deep", "diagnose", "dry", "repair", "after_repair", "undo", "reshard", "smoke"):
        r = res.get(name)
        if r is None:
            continue
        errs = sum(1 for f in r.get("findings", []) if f["severity"] == "error")
        status = ""
        if name == "smoke" and r.get("json"):
            status = "/" + ",".join(d.get("status", "?") for d in r["json"].get("datasets") or [])
        parts.append(f"{name}={r['rc']}{status}" + (f"({errs}E)" if name in ("validate", "deep", "diagnose") else ""))
    for name in ("load_before", "upstream"):
        load = (res.get(name) or {}).get("load")
        if load is not None:
            parts.append(f"{name}={'ok' if load.get('ok') else 'raises'}")
    secs = sum(r.get("seconds", 0) for r in res.values() if isinstance(r, dict))
    return f"{ds['name']} ({ds['codebase_version']}, {secs:.0f} s): " + " ".join(parts)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("corpus", type=Path, nargs="?", help="folder of dataset folders (with MANIFEST.tsv)")
    ap.add_argument("datasets", type=Path, nargs="*", help="more dataset folders")
    ap.add_argument("--only", action="append", default=[], help="only datasets of this folder name (repeatable)")
    ap.add_argument("--commands", default=",".join(COMMANDS), help=f"comma-separated subset of {','.join(COMMANDS)}")
    ap.add_argument("--expectations", type=Path, default=EXPECTATIONS)
    ap.add_argument("--json", type=Path, help="write every result to this file")
    ap.add_argument("--from-json", type=Path, help="score a saved --json run instead of running")
    ap.add_argument("--previous", type=Path, help="a saved --json run: list findings new or vanished since")
    ap.add_argument("--lrtool-python", help="interpreter running lrtool (default: this one)")
    ap.add_argument("--pythonpath", help="put this folder first on PYTHONPATH (another checkout's code)")
    ap.add_argument("--lerobot-python", default=str(REPO / ".venv-lerobot" / "bin" / "python"),
                    help="interpreter with upstream lerobot (0.4.4) for the upstream command")
    ap.add_argument("--lerobot-v21", help="folder holding a lerobot 0.3.x package, for v2.x datasets upstream")
    ap.add_argument("--verbose", action="store_true", help="print every finding of every dataset")
    args = ap.parse_args(argv)
    commands = {c.strip() for c in args.commands.split(",") if c.strip()}
    if commands - set(COMMANDS):
        ap.error(f"unknown command(s): {', '.join(sorted(commands - set(COMMANDS)))}")
    expectations = json.loads(args.expectations.read_text()) if args.expectations.is_file() else {"datasets": []}

    if args.from_json:
        run_doc = json.loads(args.from_json.read_text())
    else:
        if args.corpus is None:
            ap.error("CORPUS_DIR is required (or --from-json)")
        datasets = discover(args.corpus, args.datasets)
        if args.only:
            datasets = [d for d in datasets if d["name"] in args.only]
        runner = Runner(args)
        t0 = time.perf_counter()
        try:
            for i, ds in enumerate(datasets, 1):
                ds["results"] = runner.check(ds, commands)
                print(f"[{i}/{len(datasets)}] {summary_line(ds)}", flush=True)
        finally:
            runner.close()
        run_doc = {"commands": sorted(commands), "seconds": round(time.perf_counter() - t0, 1),
                   "datasets": datasets}
        if args.json:
            args.json.write_text(json.dumps(run_doc, indent=1))
    for ds in run_doc["datasets"]:
        ds["crashes"] = crashes(ds["results"])
        ds["disagreements"] = disagreements(ds["results"])
    score = score_all(run_doc, expectations)
    render_score(run_doc, score, sys.stdout, verbose=args.verbose)
    if args.previous:
        diff_runs(json.loads(args.previous.read_text()), run_doc, sys.stdout)
    bad = (any(ds["crashes"] or ds["disagreements"] for ds in run_doc["datasets"])
           or score["precision"] < 0.98 or score["recall"] < 0.95 or score["unreviewed"])
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
