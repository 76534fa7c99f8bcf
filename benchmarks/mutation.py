"""Mutation testing of the safety-critical modules: how many planted single-line bugs the tests catch.

Uses mutmut 3 (https://mutmut.readthedocs.io; install with ``pip install -e '.[mutation]'``). mutmut rewrites a
module into many variants ("mutants": ``<`` for ``<=``, ``and`` for ``or``, a changed constant, a removed call),
each switched on at run time, and runs the tests that execute the mutated function against each variant. A mutant
the tests fail on is *killed*; one they pass on *survived*: a bug of that shape would go unnoticed.

Each module runs in its own scratch copy of the repository (``--workdir``, default a temporary folder) with a
targeted test selection (the tests that exercise it, slow subprocess/kill tests left out), so modules do not wait
for each other's tests and the repository is never modified. Not run in CI: a module takes minutes to an hour.

Usage::

    python benchmarks/mutation.py                      # every module in MODULES
    python benchmarks/mutation.py reshard-verify sniff  # some of them
    python benchmarks/mutation.py --list
    python benchmarks/mutation.py reshard-verify --exclude tests/reshard/test_verifiers.py  # score without a test file
    python benchmarks/mutation.py sniff --survivors     # also print the diff of every surviving mutant
    python benchmarks/mutation.py checks-info --sample 100 --seed 1  # 100 mutants drawn at random: an estimate

Prints, per module: mutants, killed, survived, timeout, no tests, the score (killed + timeout over all mutants
that some test executes) and the wall time; then the overall score. ``--sample N`` runs N mutants per module drawn
at random (a module of 700 mutants whose tests take 5 s each is an hour on 2 cores): the score is then an estimate
with a binomial error of about ``sqrt(p (1 - p) / N)`` (4-5 points at N = 100); the same seed on the same code
draws the same mutants, so a run with ``--exclude`` of the new test file gives the "before" of the same sample.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

#: the tests of every check family: the per-check tests, every committed fixture, the tests written to make a
#: check fire or a threshold bite
CHECK_TESTS = ["tests/checks/test_checks.py", "tests/fixtures/test_validate_fixtures.py",
               "tests/checks/test_checks_mutants.py", "tests/checks/test_boundaries.py"]
STATS_TESTS = ["tests/checks/test_stats.py", "tests/repair/test_repair_stats.py",
               "tests/checks/test_stats_meta_mutants.py", "tests/checks/test_stats_data_mutants.py"]

SCALEOUT_TESTS = ["tests/distributed/test_scaleout_runfolder.py", "tests/distributed/test_run_mutants.py",
                  "tests/distributed/test_plan_mutants.py", "tests/distributed/test_scaleout.py", "-k",
                  "partition or plan or parts or merge or replay or cli"]

#: name -> (module file, pytest arguments selecting the tests that exercise it)
MODULES: dict[str, tuple[str, list[str]]] = {
    "reshard-verify": ("lerobot_tools/reshard/verify.py", [
        "tests/reshard/test_verifiers.py", "-k",
        "test_reshard or verification or oversize or compression or values_nan",
        "tests/reshard/test_verify_mutants.py", "tests/reshard/test_reshard.py"]),
    "repair-parquet": ("lerobot_tools/repair/parquet.py", [
        "tests/reshard/test_verifiers.py", "-k", "repair or tasks", "tests/repair/test_repair.py"]),
    "repair-backup": ("lerobot_tools/repair/backup.py", [
        "tests/reshard/test_verifiers.py", "-k", "undo or repair_backup",
        "tests/repair/test_repair_backups.py", "tests/repair/test_repair.py", "tests/repair/test_backup_mutants.py"]),
    "prefetch-local": ("lerobot_tools/prefetch/local.py", [
        "tests/reshard/test_verifiers.py", "-k", "prefetch or local", "tests/prefetch/test_local_mutants.py",
        "tests/prefetch/test_prefetch.py"]),
    "prefetch-download": ("lerobot_tools/prefetch/hub.py", [
        "tests/reshard/test_verifiers.py", "-k", "prefetch or hub", "tests/prefetch/test_hub_mutants.py",
        "tests/prefetch/test_prefetch.py"]),
    "arrow": ("lerobot_tools/_arrow_equal.py", [
        "tests/reshard/test_verifiers.py", "-k", "values or eq or nan", "tests/reshard/test_verify_mutants.py"]),
    "arrow-numpy": ("lerobot_tools/_arrow_numpy.py", ["tests/io/test_arrow_numpy.py"]),
    "memory": ("lerobot_tools/_memory.py", ["tests/io/test_memory.py"]),
    "lock": ("lerobot_tools/_lock.py", ["tests/io/test_locking.py", "tests/distributed/test_scaleout_commands.py", "-k",
                                         "shared_dataset_lock or vanished or at_once or sibling",
                                         "tests/io/test_lock_places.py"]),
    "episode-tables": ("lerobot_tools/dataset/episode_tables.py", [
        "tests/dataset/test_episode_tables.py", "tests/validate/test_unreadable_metadata.py",
        "tests/checks/test_stats_data_mutants.py", "-k",
        "blocks or tables or episode or unreadable or parquet"]),
    "footers": ("lerobot_tools/dataset/footers.py", ["tests/dataset/test_footers.py", "tests/io/test_memory.py",
                                                     "tests/checks/test_rowgroups_mutants.py",
                                                     "tests/checks/test_tasks_schema_mutants.py"]),
    "templates": ("lerobot_tools/dataset/templates.py", ["tests/dataset/test_templates.py", *CHECK_TESTS,
                                                          "tests/dataset/test_containment.py",
                                                          "tests/io/test_bounded.py"]),
    "safeout": ("lerobot_tools/_safeout.py", ["tests/io/test_safeout.py", "tests/io/test_output_hygiene.py"]),
    "io": ("lerobot_tools/_io.py", ["tests/reshard/test_verifiers.py", "tests/io/test_bounded.py",
                                     "tests/io/test_output_files.py"]),
    # symlinks out of a dataset: the shared refusal of every writer, the F013 check, the moves of --move-files
    "contain": ("lerobot_tools/_contain.py", ["tests/io/test_symlink_containment.py"]),
    "checks-symlinks": ("lerobot_tools/checks/symlinks.py", ["tests/io/test_symlink_containment.py",
                                                              "tests/fixtures/test_validate_fixtures.py"]),
    "repair-moves": ("lerobot_tools/repair/fixes/files.py", ["tests/io/test_symlink_containment.py",
                                                              "tests/repair/test_misplaced_files.py",
                                                              "tests/repair/test_moves_mutants.py",
                                                              "tests/repair/test_repair.py",
                                                              "-k", "video_path or move or layout"]),
    "mixture": ("lerobot_tools/dataset/mixture.py", ["tests/dataset/test_bounded_claims.py",
                                                      "tests/dataset/test_containment.py",
                                                      "tests/io/test_bounded.py",
                                                      "tests/dataset/test_mixture_lines.py",
                                                      "tests/dataset/test_targets.py",
                                                      "tests/checks/test_mixture_mutants.py",
                                                      "tests/dataset/test_mixture_messages.py"]),
    "sniff": ("lerobot_tools/sniff.py", ["tests/io/test_sniff.py"]),
    "sampler": ("lerobot_tools/loaders/sampler.py", ["tests/loaders/test_sampler.py",
                                                      "tests/loaders/test_sampler_mutants.py"]),
    "checks-files": ("lerobot_tools/checks/files.py", [*CHECK_TESTS, "tests/checks/test_files_mutants.py"]),
    "checks-counts": ("lerobot_tools/checks/counts.py", [*CHECK_TESTS, "tests/checks/test_info_counts_mutants.py"]),
    "checks-info": ("lerobot_tools/checks/info.py", [*CHECK_TESTS, "tests/checks/test_info_counts_mutants.py"]),
    "checks-schema": ("lerobot_tools/checks/schema.py", [*CHECK_TESTS, "tests/checks/test_tasks_schema_mutants.py"]),
    "checks-rowgroups": ("lerobot_tools/checks/rowgroups.py", [*CHECK_TESTS,
                                                                "tests/checks/test_rowgroups_mutants.py"]),
    "checks-tasks": ("lerobot_tools/checks/tasks.py", [*CHECK_TESTS, "tests/checks/test_tasks_schema_mutants.py"]),
    "checks-videos": ("lerobot_tools/checks/videos.py", [*CHECK_TESTS, "tests/checks/test_boundaries_mutants.py",
                                                          "tests/checks/test_videos_mutants.py"]),
    "checks-deep": ("lerobot_tools/checks/deep.py", [*CHECK_TESTS, "tests/checks/test_deep_mutants.py"]),
    # family X (a mixture's datasets against each other) and family M (what a mixture entry asks of its dataset)
    "checks-mixture": ("lerobot_tools/checks/mixture.py", ["tests/checks/test_mixture_checks.py",
                                                            "tests/checks/test_mixture_mutants.py"]),
    "checks-targets": ("lerobot_tools/checks/targets.py", [*CHECK_TESTS, "tests/checks/test_mixture_checks.py",
                                                            "tests/checks/test_mixture_mutants.py"]),
    # the statistics family (G001..G010): stored stats read and checked on metadata alone, recomputed with --deep,
    # and recomputed by `lrtool repair`
    "stats-meta": ("lerobot_tools/checks/stats/meta.py", [*STATS_TESTS]),
    "stats-stored": ("lerobot_tools/checks/stats/stored.py", [*STATS_TESTS]),
    "stats-blocks": ("lerobot_tools/checks/stats/blocks.py", [*STATS_TESTS]),
    "stats-compute": ("lerobot_tools/checks/stats/compute.py", [*STATS_TESTS]),
    "stats-deep": ("lerobot_tools/checks/stats/deep.py", [*STATS_TESTS]),
    # scale-out run folders: the plan, the parts and the merge, the run's state (the local-executor tests, which
    # need datatrove and take minutes, are left out)
    "distributed-plan": ("lerobot_tools/distributed/plan.py", [*SCALEOUT_TESTS]),
    "distributed-parts": ("lerobot_tools/distributed/parts.py", [*SCALEOUT_TESTS]),
    "distributed-rundir": ("lerobot_tools/distributed/rundir.py", [*SCALEOUT_TESTS]),
    "prefetch-budget": ("lerobot_tools/prefetch/budget.py", ["tests/prefetch/test_prefetch_ratelimits.py",
                                                             "tests/prefetch/test_budget_mutants.py"]),
    "loaders-weighted": ("lerobot_tools/loaders/_weighted.py", ["tests/loaders/test_sampler.py",
                                                                "tests/loaders/test_sampler_mutants.py",
                                                                "tests/loaders/test_loaders_mixture.py"]),
}

#: tests left out everywhere: subprocesses killed or signalled at random moments (racy under load), real tmpfs
#: mounts, several processes racing
#: (minutes each, and a planted bug there is caught by the faster tests or not at all).
SLOW = ("not sigkill and not sigterm and not kill_ and not workers_stop and not tmpfs and not two_processes "
        "and not real_writer and not gpu")

#: what is copied into the scratch folder
COPY = ("lerobot_tools", "tests", "fixtures", "docs", "README.md", "pyproject.toml")


def _selection(args: list[str], exclude: list[str]) -> list[str]:
    """One pytest argument list for a module: its test files minus ``exclude``, and a single ``-k`` (pytest keeps
    only the last ``-k``) in which a ``-k`` written after a file applies to that file only, slow tests left out."""
    files: list[str] = []
    keys: list[str] = []
    i = 0
    while i < len(args):
        a = args[i]
        if a == "-k":
            i += 2
            continue
        key = args[i + 2] if i + 2 < len(args) and args[i + 1] == "-k" else None
        if a not in exclude:
            files.append(a)
            if key:
                keys.append(f"({Path(a).stem} and ({key}))")
            else:
                keys.append(Path(a).stem)
        i += 1
    if not files:
        return []
    k = f"({' or '.join(keys)}) and {SLOW}"
    return [*files, "-k", k]


def _write_config(work: Path, module: str, selection: list[str]) -> None:
    lines = ["[mutmut]", "source_paths = lerobot_tools", f"only_mutate = {module}", "also_copy =",
             "    docs", "    README.md", "pytest_add_cli_args_test_selection ="]
    lines += [f"    {a}" for a in selection]
    lines += ["pytest_add_cli_args =", "    -p", "    no:cacheprovider", "    -q",
              # a mutant that loops forever is a timeout after 3x its tests' normal time + 60 s (default 15x + 1 s:
              # minutes per hanging mutant on the slower test selections). A tighter limit (2x + 10 s) let mutants
              # whose ffmpeg-backed tests merely ran slower with two children at work count as timeouts, i.e. as
              # killed, though they pass every test
              "timeout_multiplier = 3.0", "timeout_constant = 60.0",
              # each mutant's tests run in a process forked from a fresh fork server, not from mutmut's main
              # process, which has run the whole selection once: forked from that one, tests that probe videos
              # with PyAV hung until the time limit, so mutants they would not catch counted as timeouts (killed)
              "process_isolation = forkserver", "forkserver_warmup = collect",
              "debug = true", ""]  # pytest's output goes to the log: a failing baseline run is diagnosable
    (work / "setup.cfg").write_text("\n".join(lines))


def _results(work: Path) -> dict[str, str]:
    """mutant name -> status, from ``mutmut results --all true``."""
    out = subprocess.run([sys.executable, "-m", "mutmut", "results", "--all", "true"], cwd=work, text=True,
                         capture_output=True, env=_env(work)).stdout
    res = {}
    for line in out.splitlines():
        m = re.match(r"\s*(\S+): (.+)$", line)
        if m:
            res[m.group(1)] = m.group(2).strip()
    return res


def _env(work: Path) -> dict[str, str]:
    env = dict(os.environ)
    env.pop("PYTHONPATH", None)
    env["PYTHONPATH"] = str(work / "mutants")
    return env


def _sample_names(work: Path, module: str, sample: int, seed: int) -> tuple[list[str], int]:
    """Generate every mutant of ``module`` (a ``mutmut run`` whose name filter matches none, so that no test runs
    against a mutant), then draw ``sample`` of their names at random with ``seed``: the same names on the same code.
    Returns (sampled names, number of mutants)."""
    import random

    prefix = module.removesuffix(".py").replace("/", ".")
    with open(work / "mutmut.log", "a") as fh:
        subprocess.run([sys.executable, "-m", "mutmut", "run", f"{prefix}.x_no_such_function__mutmut_0"], cwd=work,
                       stdout=fh, stderr=subprocess.STDOUT, env=_env(work))
    names = sorted(_results(work))
    return sorted(random.Random(seed).sample(names, min(sample, len(names)))), len(names)


def run_module(name: str, workdir: Path, exclude: list[str], max_children: int, survivors: bool,
               sample: int | None = None, seed: int = 0) -> dict:
    module, args = MODULES[name]
    work = workdir / name
    if work.exists():
        shutil.rmtree(work)
    work.mkdir(parents=True)
    for item in COPY:
        src = REPO / item
        if src.is_dir():  # symlinks kept as symlinks: a fixture's symlink out of its dataset is its defect (F013)
            shutil.copytree(src, work / item, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"), symlinks=True)
        else:
            shutil.copy2(src, work / item)
    # mutmut copies its also_copy folders with symlinks followed; the fixtures go into its tree first, links kept
    shutil.copytree(work / "fixtures", work / "mutants" / "fixtures", symlinks=True)
    selection = _selection(args, exclude)
    _write_config(work, module, selection)
    t0 = time.perf_counter()
    log = work / "mutmut.log"
    picked: list[str] = []
    population = None
    if sample:
        picked, population = _sample_names(work, module, sample, seed)
    for attempt in (1, 2):  # the first baseline (stats) run in a fresh copy occasionally fails on a loaded
        with open(log, "a") as fh:  # machine; mutmut resumes where it stopped
            proc = subprocess.run([sys.executable, "-m", "mutmut", "run", "--max-children", str(max_children),
                                   *picked], cwd=work, stdout=fh, stderr=subprocess.STDOUT, env=_env(work))
        if proc.returncode == 0:
            break
    seconds = time.perf_counter() - t0
    res = _results(work)
    if sample:
        chosen = set(picked)
        res = {k: v for k, v in res.items() if k in chosen}
    counts: dict[str, int] = {}
    for status in res.values():
        counts[status] = counts.get(status, 0) + 1
    killed = counts.get("killed", 0)
    timeout = counts.get("timeout", 0)
    survived = counts.get("survived", 0)
    no_tests = counts.get("no tests", 0)
    executed = sum(counts.values()) - no_tests - counts.get("skipped", 0)
    row = {"module": name, "file": module, "mutants": len(res), "killed": killed, "survived": survived,
           "timeout": timeout, "no_tests": no_tests, "other": {k: v for k, v in counts.items() if k not in
                                                              ("killed", "survived", "timeout", "no tests")},
           "score": (killed + timeout) / executed if executed else None, "seconds": round(seconds, 1),
           "exit": proc.returncode, "log": str(log), "population": population, "seed": seed if sample else None}
    if survivors:
        row["survivors"] = {}
        for mutant, status in sorted(res.items()):
            if status == "survived":
                diff = subprocess.run([sys.executable, "-m", "mutmut", "show", mutant], cwd=work, text=True,
                                      capture_output=True, env=_env(work)).stdout
                row["survivors"][mutant] = diff
    return row


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("modules", nargs="*", help="names from --list (default: all)")
    ap.add_argument("--list", action="store_true", help="list the modules and their test selections")
    ap.add_argument("--exclude", action="append", default=[], help="a test file to leave out (repeatable)")
    ap.add_argument("--workdir", type=Path, default=None, help="scratch folder (default: a temporary one, kept)")
    ap.add_argument("--max-children", type=int, default=max(1, (os.cpu_count() or 2)))
    ap.add_argument("--survivors", action="store_true", help="print the diff of every surviving mutant")
    ap.add_argument("--json", type=Path, default=None, help="also write the rows to this file")
    ap.add_argument("--sample", type=int, default=None,
                    help="run only this many mutants per module, drawn at random (the score is then an estimate)")
    ap.add_argument("--seed", type=int, default=0, help="random seed of --sample (same seed, same code: same mutants)")
    a = ap.parse_args()
    if a.list:
        for name, (module, args) in MODULES.items():
            print(f"{name:18s} {module:40s} {' '.join(_selection(args, []))}")
        return 0
    try:
        import mutmut  # noqa: F401
    except ImportError:
        print("mutmut is not installed: pip install -e '.[mutation]'", file=sys.stderr)
        return 2
    names = a.modules or list(MODULES)
    unknown = [n for n in names if n not in MODULES]
    if unknown:
        print(f"unknown module(s): {', '.join(unknown)} (see --list)", file=sys.stderr)
        return 2
    workdir = a.workdir or Path(tempfile.mkdtemp(prefix="lrtool-mutation-"))
    rows = []
    print(f"{'module':18s} {'mutants':>7s} {'killed':>6s} {'surv.':>5s} {'t/o':>4s} {'no test':>7s} {'score':>6s} "
          f"{'seconds':>8s}", flush=True)
    for name in names:
        row = run_module(name, workdir, a.exclude, a.max_children, a.survivors, a.sample, a.seed)
        rows.append(row)
        score = f"{row['score']:.0%}" if row["score"] is not None else "-"
        sampled = f"  (sample of {row['mutants']} from {row['population']}, seed {row['seed']})" if a.sample else ""
        failed = f"  (mutmut exit {row['exit']}, see {row['log']})" if row["exit"] else ""
        print(f"{name:18s} {row['mutants']:7d} {row['killed']:6d} {row['survived']:5d} {row['timeout']:4d} "
              f"{row['no_tests']:7d} {score:>6s} {row['seconds']:8.0f}{sampled}{failed}", flush=True)
        for mutant, diff in row.get("survivors", {}).items():
            print(f"--- survived: {mutant}\n{diff}")
    killed = sum(r["killed"] + r["timeout"] for r in rows)
    executed = sum(r["mutants"] - r["no_tests"] - r["other"].get("skipped", 0) for r in rows)
    if executed:
        print(f"{'overall':18s} {sum(r['mutants'] for r in rows):7d} {killed:6d} "
              f"{sum(r['survived'] for r in rows):5d} {'':4s} {'':7s} {killed / executed:6.0%}")
    if a.json:
        a.json.write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
