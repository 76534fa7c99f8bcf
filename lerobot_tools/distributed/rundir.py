"""The state of a run directory: which tasks are done, waiting (bounded) for the rest, the merged report.

Does not import datatrove: ``lrtool report`` works wherever the run directory is readable.
"""

from __future__ import annotations

import json
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
        UsageError: no readable plan in ``run_dir``.
    """
    run_dir = Path(run_dir)
    plan = read_plan(run_dir / PLAN_FILE)
    done = _ranks_done(run_dir, plan.id)
    missing = [r for r in range(plan.world) if r not in done]
    return RunState(plan.command, plan.world, missing, slurm_jobs_alive(run_dir) if missing else None)


def _ranks_done(run_dir: Path, plan_id: str) -> set[int]:
    """Ranks with a part in ``run_dir/parts`` or ``run_dir``: from the name ``part-<rank>.json``; other
    part files are read to learn their rank."""
    import re

    from lerobot_tools.distributed.parts import find_parts, read_part
    from lerobot_tools.errors import UsageError

    try:
        files = find_parts([run_dir])
    except UsageError:
        return set()
    done = set()
    for f in files:
        m = re.fullmatch(r"part-(\d+)\.json", f.name)
        if m:
            done.add(int(m.group(1)))
            continue
        try:
            part = read_part(f)
        except UsageError:
            continue
        if part["plan_id"] == plan_id:
            done.add(part["rank"])
    return done


def wait_complete(run_dir: Path, timeout_s: float, *, poll_s: float = 5.0,
                  on_poll: Callable[[RunState], None] | None = None) -> RunState:
    """Poll until every task has written its part, at most ``timeout_s`` seconds.

    Returns early (incomplete) when the run's SLURM jobs have all ended: nothing more will come.
    """
    deadline = time.monotonic() + max(0.0, timeout_s)
    while True:
        state = run_state(run_dir)
        if state.complete or state.jobs_alive is False or time.monotonic() >= deadline:
            return state
        if on_poll is not None:
            on_poll(state)
        time.sleep(max(0.05, min(poll_s, deadline - time.monotonic())))


def write_merged(run_dir: Path) -> int:
    """Merge the parts of ``run_dir``; write the report as text and JSON and the exit status; return it."""
    import io

    from lerobot_tools._io import atomic_write_text
    from lerobot_tools.distributed.jobs import get_job
    from lerobot_tools.distributed.parts import merge_parts

    merged = merge_parts([run_dir])
    job = get_job(merged.command)
    render = {**read_render(run_dir), "color": False}
    texts = {}
    for fmt in ("text", "json"):
        buf = io.StringIO()
        status = job.report(merged.result, {**render, "format": fmt, "write_baseline": None}, buf)
        texts[fmt] = buf.getvalue()
    atomic_write_text(run_dir / REPORT_TEXT, texts["text"])
    atomic_write_text(run_dir / REPORT_JSON, texts["json"])
    atomic_write_text(run_dir / EXIT_STATUS, f"{status}\n")
    return status


def slurm_jobs_alive(run_dir: Path) -> bool | None:
    """Whether any SLURM job recorded in ``run_dir/jobs.json`` is still queued or running (None: unknown,
    e.g. no ``squeue`` here or no SLURM jobs recorded)."""
    import shutil
    import subprocess

    path = Path(run_dir) / JOBS_FILE
    if not path.exists() or shutil.which("squeue") is None:
        return None
    try:
        doc = json.loads(path.read_text(encoding="utf-8")[:10000])
        ids = [j for j in doc.get("jobs", []) if j and j != "-1"]
    except (OSError, ValueError, AttributeError):
        return None
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
