"""The state of a run directory: which tasks are done, waiting (bounded) for the rest, the merged report.

Does not import datatrove: ``lrtool report`` works wherever the run directory is readable.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from lerobot_tools.distributed.plan import PLAN_FILE, read_plan, read_render

REPORT_TEXT = "report.txt"
REPORT_JSON = "report.json"
EXIT_STATUS = "exit_status"
JOBS_FILE = "jobs.json"


@dataclass
class RunState:
    """Progress of a run.

    Attributes:
        command: the command the run executes.
        world: its number of tasks.
        missing: ranks that have not written their part yet.
        jobs_alive: for a SLURM run, whether any of its jobs is still queued or running (None: unknown).
    """

    command: str
    world: int
    missing: list[int]
    jobs_alive: bool | None = None

    @property
    def complete(self) -> bool:
        return not self.missing


def run_state(run_dir: Path) -> RunState:
    """Read ``plan.json`` and list the ranks without a part.

    Raises:
        UsageError: no readable plan in ``run_dir``; its ``parts/`` folder or a part file is a symbolic link; an
            unreadable ``jobs.json``.
    """
    run_dir = Path(run_dir)
    plan = read_plan(run_dir / PLAN_FILE)
    done = _ranks_done(run_dir, plan)
    missing = [r for r in range(plan.world) if r not in done]
    return RunState(plan.command, plan.world, missing, slurm_jobs_alive(run_dir) if missing else None)


def _ranks_done(run_dir: Path, plan) -> set[int]:
    """Ranks with a part in ``run_dir/parts`` or ``run_dir``: from the name ``part-<rank>.json``; other
    part files are read to learn their rank (the merge checks every part against the plan)."""
    import re

    from lerobot_tools.distributed.parts import folder_parts, read_part
    from lerobot_tools.errors import UsageError

    done = set()
    for f in folder_parts(run_dir):
        m = re.fullmatch(r"part-(\d{1,9})\.json", f.name)
        if m:
            done.add(int(m.group(1)))
            continue
        try:
            part = read_part(f, link_ok=False)
        except UsageError:
            continue
        if (part["run"], part["request"]) == (plan.id, plan.request):
            done.add(part["rank"])
    return done


def wait_complete(run_dir: Path, timeout_s: float, *, poll_s: float = 5.0,
                  on_poll: Callable[[RunState], None] | None = None) -> RunState:
    """Poll until every task has written its part, at most ``timeout_s`` seconds (finite, >= 0).

    Returns early (incomplete) when the run's SLURM jobs have all ended: nothing more will come.

    Raises:
        ValueError: ``timeout_s`` or ``poll_s`` is not a finite number.
    """
    import math

    if not (math.isfinite(timeout_s) and math.isfinite(poll_s)):
        raise ValueError(f"timeout_s and poll_s must be finite, got {timeout_s!r} and {poll_s!r}")
    deadline = time.monotonic() + max(0.0, timeout_s)
    while True:
        state = run_state(run_dir)
        if state.complete or state.jobs_alive is False or time.monotonic() >= deadline:
            return state
        if on_poll is not None:
            on_poll(state)
        time.sleep(max(0.05, min(poll_s, deadline - time.monotonic())))


def write_merged(run_dir: Path, outputs: dict | None = None) -> int:
    """Merge the parts of ``run_dir``; write ``outputs`` (files named on the launching command line, see
    :func:`lerobot_tools.distributed.jobs.write_outputs`); write the report as text and JSON and the exit status
    into ``run_dir``; return the status."""
    import io

    from lerobot_tools._io import atomic_write_text
    from lerobot_tools.distributed.jobs import get_job, write_outputs
    from lerobot_tools.distributed.jobs import unreadable_results
    from lerobot_tools.distributed.parts import merge_parts

    merged = merge_parts([run_dir])
    job = get_job(merged.command)
    write_outputs(job, merged, outputs or {}, where=run_dir)
    render = {**read_render(run_dir, merged.run, merged.request), "color": False}
    texts = {}
    for fmt in ("text", "json"):
        buf = io.StringIO()
        with unreadable_results(run_dir):
            status = job.report(merged.result, {**render, "format": fmt}, buf)
        texts[fmt] = buf.getvalue()
    atomic_write_text(run_dir / REPORT_TEXT, texts["text"])
    atomic_write_text(run_dir / REPORT_JSON, texts["json"])
    atomic_write_text(run_dir / EXIT_STATUS, f"{status}\n")
    return status


#: ``jobs.json`` (two SLURM job ids) above this size is refused
MAX_JOBS_FILE_BYTES = 64 << 10


def slurm_jobs_alive(run_dir: Path) -> bool | None:
    """Whether any SLURM job recorded in ``run_dir/jobs.json`` is still queued or running (None: unknown,
    e.g. no ``squeue`` here or no SLURM jobs recorded).

    Raises:
        UsageError: ``jobs.json`` is a symbolic link, not a regular file, over :data:`MAX_JOBS_FILE_BYTES`, not
            JSON, or holds a job id that is not a SLURM job id (digits, ``N_M`` for an array task).
    """
    import re
    import shutil
    import subprocess

    from lerobot_tools.distributed.plan import read_json_capped
    from lerobot_tools.errors import UsageError

    path = Path(run_dir) / JOBS_FILE
    if not os.path.lexists(path):
        return None
    doc = read_json_capped(path, "jobs file", limit=MAX_JOBS_FILE_BYTES)
    jobs = doc.get("jobs") if isinstance(doc, dict) else None
    if not isinstance(jobs, list) or not all(isinstance(j, str) and re.fullmatch(r"-1|\d{1,20}(_\d{1,20})?", j)
                                             for j in jobs):
        raise UsageError("not an lrtool jobs file (a list of SLURM job ids)", path)
    if shutil.which("squeue") is None:
        return None
    ids = [j for j in jobs if j != "-1"]
    if not ids:
        return False
    try:
        res = subprocess.run(["squeue", "-h", "-o", "%i", "-j", ",".join(ids)], capture_output=True, text=True,
                             timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return None
    if res.returncode != 0:
        return None if "Invalid job id" not in res.stderr else False
    return bool(res.stdout.strip())
