"""Run a plan on datatrove: its local, SLURM and Ray executors, with lrtool's work as a ``PipelineStep``.

datatrove (``pip install 'lerobot-tools[distributed]'``; Ray also needs ``[ray]``) schedules the tasks,
retries and resumes: a task that finished leaves a completion marker ``completions/RRRRR`` in the
logging directory and a re-run with the same directory skips it (``skip_completed``). LeRobot's own
dataset-porting scripts (lerobot ``examples/port_datasets``) use the same pattern: a custom
``PipelineStep`` whose ``run(data, rank, world_size)`` processes the rank's share.

- :class:`ShardStep` runs task ``rank`` of the plan in the logging directory and writes its part.
- :class:`MergeStep` (the dependent SLURM job) merges the parts and writes ``report.txt``,
  ``report.json`` and ``exit_status`` into the logging directory; it fails while parts are missing.

datatrove facts used here are those of datatrove 0.10 (``datatrove/executor/{base,local,slurm,ray}.py``):
``LocalPipelineExecutor(pipeline, tasks, workers, logging_dir)``; ``SlurmPipelineExecutor(pipeline, tasks,
time, partition, cpus_per_task, mem_per_cpu_gb, workers, job_name, qos, env_command, venv_path,
sbatch_args, depends, run_on_dependency_fail, logging_dir)`` submits one ``sbatch --array`` job whose
tasks run ``launch_pickled_pipeline LOGGING_DIR/executor.pik``, and a dependent executor's job is
submitted with ``--dependency=afterok:ID`` (``afterany`` with ``run_on_dependency_fail``);
``RayPipelineExecutor(pipeline, tasks, workers, logging_dir, cpus_per_task, mem_per_cpu_gb)`` needs
``ray.init()`` first.

This module imports datatrove at import time: import it only to launch or run a task.
"""

from __future__ import annotations

import json
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path

from datatrove.executor.local import LocalPipelineExecutor
from datatrove.executor.slurm import SlurmPipelineExecutor
from datatrove.pipeline.base import PipelineStep
from datatrove.utils.stats import PipelineStats

from lerobot_tools.distributed.plan import PLAN_FILE, part_path, read_plan
from lerobot_tools.distributed.rundir import JOBS_FILE, write_merged

MERGE_DIR = "merge"


class ShardStep(PipelineStep):
    """Run the plan in ``run_dir`` for one rank and write ``run_dir/parts/part-RRRRR.json``.

    Args:
        run_dir: absolute path of the run (logging) directory holding ``plan.json``.

    Raises (in ``run``):
        UsageError: ``world_size`` differs from the plan's task count.
    """

    name = "lrtool shard"
    type = "lrtool"

    def __init__(self, run_dir: str):
        super().__init__()
        self.run_dir = str(run_dir)

    def run(self, data=None, rank: int = 0, world_size: int = 1):
        from lerobot_tools.distributed.parts import run_shard
        from lerobot_tools.errors import UsageError

        plan = read_plan(Path(self.run_dir) / PLAN_FILE)
        if world_size != plan.world:
            raise UsageError(f"the executor runs {world_size} task(s) but the plan has {plan.world}", self.run_dir)
        part = run_shard(plan, rank, part_path(Path(self.run_dir), rank))
        self.stat_update("items", value=len(part["items"]))
        self.stat_update("bytes", value=part["bytes"], unit="task")
        return data


class MergeStep(PipelineStep):
    """Merge the parts of ``run_dir`` and write ``report.txt``, ``report.json`` and ``exit_status`` there.

    Raises (in ``run``):
        IncompleteRun: some tasks wrote no part (the merge job then fails; re-running the command retries).
    """

    name = "lrtool merge"
    type = "lrtool"

    def __init__(self, run_dir: str):
        super().__init__()
        self.run_dir = str(run_dir)

    def run(self, data=None, rank: int = 0, world_size: int = 1):
        write_merged(Path(self.run_dir))
        return data


class _LocalExecutor(LocalPipelineExecutor):
    """datatrove's local executor, except that a task that raises is left incomplete (its traceback is in
    ``logs/task_RRRRR.log``) while the others run on; datatrove's pool would terminate them."""

    def _launch_run_for_rank(self, rank, ranks_q, completed=None, completed_lock=None):
        try:
            return super()._launch_run_for_rank(rank, ranks_q, completed, completed_lock)
        except Exception:
            return PipelineStats()


class _SlurmExecutor(SlurmPipelineExecutor):
    """datatrove's SLURM executor without its separate stats-merging job: lrtool submits its own dependent
    merge job, and datatrove's (``afterok``) would stay pending forever after a failed task."""

    def launch_merge_stats(self):
        return None


@dataclass
class ExecutorOptions:
    """How to run a plan (the ``--executor`` family of options).

    Attributes:
        kind: ``"local"``, ``"slurm"`` or ``"ray"``.
        tasks: number of tasks (the plan's world size).
        workers: tasks run at the same time (-1 = all; SLURM: the array's ``%`` limit).
        logging_dir: the run directory (absolute).
        slurm_partition, slurm_time, slurm_cpus_per_task, slurm_mem_per_cpu_gb (whole GB), slurm_qos: ``sbatch``
            options.
        slurm_sbatch_args: more ``#SBATCH --KEY=VALUE`` lines.
        slurm_venv_path: a virtualenv ``activate`` script sourced by each job; slurm_env_command: a shell
            command run instead (e.g. ``module load ...; source ...``).
        slurm_job_name: job name.
        ray_address: Ray cluster address (None: ``$RAY_ADDRESS``, else a local Ray instance for this run).
        ray_cpus_per_task, ray_mem_per_cpu_gb: Ray resources reserved per task.
    """

    kind: str
    tasks: int
    logging_dir: str
    workers: int = -1
    slurm_partition: str | None = None
    slurm_time: str = "24:00:00"
    slurm_cpus_per_task: int = 1
    slurm_mem_per_cpu_gb: int = 2
    slurm_qos: str | None = None
    slurm_sbatch_args: dict[str, str] = field(default_factory=dict)
    slurm_venv_path: str | None = None
    slurm_env_command: str | None = None
    slurm_job_name: str = "lrtool"
    ray_address: str | None = None
    ray_cpus_per_task: int = 1
    ray_mem_per_cpu_gb: float = 1


@dataclass
class Launched:
    """What :func:`launch` did. ``ran``: the tasks ran here (local, Ray); ``job_ids``: SLURM job ids
    (tasks array, merge job; ``-1`` when everything was already complete); ``failed``: one line per failure."""

    ran: bool
    job_ids: list[str] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)


def _default_venv() -> str | None:
    if sys.prefix != sys.base_prefix:
        act = Path(sys.prefix) / "bin" / "activate"
        if act.exists():
            return str(act)
    return None


def launch(opts: ExecutorOptions) -> Launched:
    """Run (local, Ray) or submit (SLURM) the plan already written in ``opts.logging_dir``.

    Local and Ray return when every task has run (or failed: see ``failed``); SLURM returns after
    ``sbatch`` with the job ids, recorded in ``LOGGING_DIR/jobs.json``.

    Raises:
        UsageError: bad options, ``sbatch`` failed, Ray cannot start.
    """
    from lerobot_tools.errors import UsageError

    run_dir = Path(opts.logging_dir)
    step = ShardStep(str(run_dir))
    if opts.kind == "local":
        # fork: the task processes inherit the imported modules (forkserver re-imports pyarrow, datatrove and
        # lrtool in every task: seconds per task on a busy 2-core machine); nothing here runs threads yet
        start = "fork" if sys.platform.startswith("linux") else "forkserver"
        ex = _LocalExecutor(pipeline=[step], tasks=opts.tasks, workers=opts.workers, logging_dir=str(run_dir),
                            start_method=start)
        # datatrove's pool ends its workers with SIGTERM (Pool.terminate): they must die at once, as Python's
        # default does, not unwind through lrtool's SIGTERM handler (a worker that unwinds while holding the
        # pool's task-queue lock leaves its sibling, and this process's join, waiting forever). A task
        # interrupted that way leaves no completion marker, so a re-run resumes it.
        import signal

        previous = signal.signal(signal.SIGTERM, signal.SIG_DFL)
        try:
            ex.run()
        finally:
            signal.signal(signal.SIGTERM, previous)
        left = ex.get_incomplete_ranks(skip_completed=True)
        return Launched(True, failed=[f"{len(left)} task(s) failed: rank(s) {left[:12]}"] if left else [])
    if opts.kind == "ray":
        return _launch_ray(opts, step)
    if opts.kind == "slurm":
        if not opts.slurm_partition:
            raise UsageError("--executor slurm needs --slurm-partition")
        common = dict(time=opts.slurm_time, partition=opts.slurm_partition, qos=opts.slurm_qos or "",
                      venv_path=opts.slurm_venv_path or (None if opts.slurm_env_command else _default_venv()),
                      env_command=opts.slurm_env_command, sbatch_args=dict(opts.slurm_sbatch_args),
                      mail_type="NONE")
        main = _SlurmExecutor(pipeline=[step], tasks=opts.tasks, workers=opts.workers,
                              cpus_per_task=opts.slurm_cpus_per_task,
                              mem_per_cpu_gb=opts.slurm_mem_per_cpu_gb, job_name=opts.slurm_job_name,
                              logging_dir=str(run_dir), **common)
        merge = _SlurmExecutor(pipeline=[MergeStep(str(run_dir))], tasks=1, cpus_per_task=1,
                               mem_per_cpu_gb=max(2, opts.slurm_mem_per_cpu_gb),
                               job_name=opts.slurm_job_name + "-merge", depends=main, run_on_dependency_fail=True,
                               logging_dir=str(run_dir / MERGE_DIR), **common)
        import subprocess

        try:
            merge.run()
        except (subprocess.CalledProcessError, FileNotFoundError) as exc:
            raise UsageError(f"sbatch failed ({exc})") from None
        ids = [str(main.job_id), str(merge.job_id)]
        from lerobot_tools._io import atomic_write_text

        atomic_write_text(run_dir / JOBS_FILE, json.dumps({"scheduler": "slurm", "jobs": ids}) + "\n")
        return Launched(False, job_ids=ids)
    raise UsageError(f"unknown executor {opts.kind!r} (local, slurm, ray)")


def _launch_ray(opts: ExecutorOptions, step: ShardStep) -> Launched:
    from lerobot_tools.errors import UsageError

    try:
        import ray
        from datatrove.executor.ray import RayPipelineExecutor
    except ImportError as exc:
        raise UsageError(f"--executor ray needs ray (pip install 'lerobot-tools[ray]'): {exc}") from None
    address = opts.ray_address or os.environ.get("RAY_ADDRESS") or None
    started_here = not ray.is_initialized()
    try:
        if started_here:
            ray.init(address=address, log_to_driver=False, include_dashboard=False)
    except Exception as exc:
        raise UsageError(f"Ray cannot start or connect ({type(exc).__name__}: {str(exc)[:200]})") from None
    failed = []
    try:
        ex = RayPipelineExecutor(pipeline=[step], tasks=opts.tasks, workers=opts.workers,
                                 logging_dir=str(opts.logging_dir), cpus_per_task=opts.ray_cpus_per_task,
                                 mem_per_cpu_gb=opts.ray_mem_per_cpu_gb)
        # datatrove's pool ends its workers with SIGTERM (Pool.terminate): they must die at once, as Python's
        # default does, not unwind through lrtool's SIGTERM handler (a worker that unwinds while holding the
        # pool's task-queue lock leaves its sibling, and this process's join, waiting forever). A task
        # interrupted that way leaves no completion marker, so a re-run resumes it.
        import signal

        previous = signal.signal(signal.SIGTERM, signal.SIG_DFL)
        try:
            ex.run()
        finally:
            signal.signal(signal.SIGTERM, previous)
        left = ex.get_incomplete_ranks(skip_completed=True)
        if left:
            failed.append(f"{len(left)} task(s) did not complete: rank(s) {left[:12]}")
    finally:
        if started_here:
            ray.shutdown()
    return Launched(True, failed=failed)
