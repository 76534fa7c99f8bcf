"""Run a plan on datatrove: its local, SLURM and Ray executors, with lrtool's work as a ``PipelineStep``.

datatrove (``pip install 'lerobot-tools[distributed]'``; Ray also needs ``[ray]``) schedules the tasks,
retries and resumes: a task that finished leaves a completion marker ``completions/RRRRR`` in the
logging directory and a re-run with the same directory skips it (``skip_completed``). LeRobot's own
dataset-porting scripts (lerobot ``examples/port_datasets``) use the same pattern: a custom
``PipelineStep`` whose ``run(data, rank, world_size)`` processes the rank's share.

- :class:`ShardStep` runs task ``rank`` of the plan in the logging directory and writes its part.
- :class:`MergeStep` (the dependent SLURM job) merges the parts and writes ``report.txt``,
  ``report.json`` and ``exit_status`` into the logging directory (and the launching command line's output
  files); it fails while parts are missing.

datatrove facts used here are those of datatrove 0.10 (``datatrove/executor/{base,local,slurm,ray}.py``):
``LocalPipelineExecutor(pipeline, tasks, workers, logging_dir)``; ``SlurmPipelineExecutor(pipeline, tasks,
time, partition, cpus_per_task, mem_per_cpu_gb, workers, job_name, qos, env_command, venv_path,
sbatch_args, depends, run_on_dependency_fail, logging_dir)`` submits one ``sbatch --array`` job whose
tasks run ``launch_pickled_pipeline LOGGING_DIR/executor.pik``, and a dependent executor's job is
submitted with ``--dependency=afterok:ID`` (``afterany`` with ``run_on_dependency_fail``);
``RayPipelineExecutor(pipeline, tasks, workers, logging_dir, cpus_per_task, mem_per_cpu_gb)`` needs
``ray.init()`` first; ``PipelineExecutor._run_for_rank(rank, local_rank)`` runs one task (its log file, stats and
completion marker), which the local executor here calls from lrtool's own worker processes.

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

from lerobot_tools.distributed.plan import PLAN_FILE, part_path, read_plan
from lerobot_tools.distributed.rundir import JOBS_FILE, write_merged

MERGE_DIR = "merge"


def _plan_of(run_dir: str, run: str | None, request: str | None):
    """The plan in ``run_dir``, which must be the one the launching command wrote or found (its identity and
    request digest): a task never runs a plan put in the folder after the launch."""
    from lerobot_tools.errors import UsageError

    plan = read_plan(Path(run_dir) / PLAN_FILE)
    if run is not None and (plan.id, plan.request) != (run, request):
        raise UsageError(f"plan.json is not the plan of this run (run {plan.id}, launched as {run})", run_dir)
    return plan


class ShardStep(PipelineStep):
    """Run the plan in ``run_dir`` for one rank and write ``run_dir/parts/part-RRRRR.json``.

    Args:
        run_dir: absolute path of the run (logging) directory holding ``plan.json``.
        run, request: the plan's identity and request digest when the run was launched (None: not checked).

    Raises (in ``run``):
        UsageError: ``world_size`` differs from the plan's task count; the plan is not the launched one.
    """

    name = "lrtool shard"
    type = "lrtool"

    def __init__(self, run_dir: str, run: str | None = None, request: str | None = None):
        super().__init__()
        self.run_dir = str(run_dir)
        self.run_id, self.request = run, request

    def run(self, data=None, rank: int = 0, world_size: int = 1):
        from lerobot_tools.distributed.parts import run_shard
        from lerobot_tools.errors import UsageError

        plan = _plan_of(self.run_dir, self.run_id, self.request)
        if world_size != plan.world:
            raise UsageError(f"the executor runs {world_size} task(s) but the plan has {plan.world}", self.run_dir)
        part = run_shard(plan, rank, part_path(Path(self.run_dir), rank))
        self.stat_update("items", value=len(part["items"]))
        self.stat_update("bytes", value=part["bytes"], unit="task")
        return data


class MergeStep(PipelineStep):
    """Merge the parts of ``run_dir``, write ``outputs`` (the launching command line's output files, e.g.
    ``--write-baseline``) and ``report.txt``, ``report.json`` and ``exit_status`` into ``run_dir``.

    Raises (in ``run``):
        IncompleteRun: some tasks wrote no part (the merge job then fails; re-running the command retries).
        UsageError: the plan is not the launched one; a part of another run.
    """

    name = "lrtool merge"
    type = "lrtool"

    def __init__(self, run_dir: str, run: str | None = None, request: str | None = None,
                 outputs: dict | None = None):
        super().__init__()
        self.run_dir = str(run_dir)
        self.run_id, self.request = run, request
        self.outputs = dict(outputs or {})

    def run(self, data=None, rank: int = 0, world_size: int = 1):
        _plan_of(self.run_dir, self.run_id, self.request)
        write_merged(Path(self.run_dir), self.outputs)
        return data


#: the executor whose ranks :func:`_run_rank` runs in a forked worker process (set before the workers fork)
_EXECUTOR: "_LocalExecutor | None" = None


def _run_rank(rank: int) -> bool:
    """Run task ``rank`` of :data:`_EXECUTOR` (in a worker process of :func:`lerobot_tools._parallel.map_ordered`);
    True when it completed. A task that raises is left incomplete (datatrove logged its traceback to
    ``logs/task_RRRRR.log``) and the others run on."""
    from copy import deepcopy

    ex = _EXECUTOR
    assert ex is not None
    pipeline = ex.pipeline
    ex.pipeline = deepcopy(pipeline)  # a step keeps per-task stats
    try:
        ex._run_for_rank(rank, 0 if ex.workers == 1 else 1)  # local rank 0 logs INFO on the console, others errors
        return True
    except Exception:
        return False
    finally:
        ex.pipeline = pipeline


class _LocalExecutor(LocalPipelineExecutor):
    """datatrove's local executor, with lrtool's worker processes instead of datatrove's pool.

    The tasks run in :func:`lerobot_tools._parallel.map_ordered` (forked workers): a task that raises is left
    incomplete (its traceback is in ``logs/task_RRRRR.log``) while the others run on; Ctrl-C and SIGTERM reach
    this process's handler (one line, exit 130/143) and stop the workers, each unwinding the task it runs; a
    worker gets SIGTERM from the kernel when this process dies, even by SIGKILL (Linux ``PR_SET_PDEATHSIG``), so
    no task goes on writing, and nothing holds the caller's stdout/stderr, after it. datatrove's own pool
    (``multiprocess.Pool`` plus a ``Manager`` server process) has neither: a worker killed while it waits for work
    holds the task queue's lock, so ``Pool.terminate`` can wait forever, and after a SIGKILL of this process its
    workers and the manager live on. Uses ``PipelineExecutor._run_for_rank`` (logs, stats, completion marker) of
    datatrove 0.10."""

    def run(self):
        global _EXECUTOR
        from datatrove.utils.logging import logger

        from lerobot_tools._parallel import map_ordered

        self._launched = True
        ranks = self.get_incomplete_ranks(range(self.local_rank_offset, self.local_rank_offset + self.local_tasks))
        if not ranks:
            logger.info(f"Not doing anything as all {self.local_tasks} tasks have already been completed.")
            return None
        self.save_executor_as_json()
        if (skipped := self.local_tasks - len(ranks)) > 0:
            logger.info(f"Skipping {skipped} already completed tasks")
        _EXECUTOR = self
        try:
            done = map_ordered(_run_rank, ranks, jobs=max(1, min(self.workers, len(ranks))), progress=False,
                               on_worker_error=lambda rank, exc: False)
        finally:
            _EXECUTOR = None
        logger.info(f"{sum(done)}/{len(ranks)} task(s) completed in this run")
        return None


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
        run, request: identity and request digest of the plan written for this launch (tasks and the merge job
            refuse any other plan found in the folder).
        outputs: files the SLURM merge job writes outside the run folder (validate's ``--write-baseline``), from the
            launching command line.
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
    run: str | None = None
    request: str | None = None
    outputs: dict[str, str] = field(default_factory=dict)


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
    step = ShardStep(str(run_dir), opts.run, opts.request)
    workers = opts.tasks if opts.workers < 1 else min(opts.workers, opts.tasks)
    if opts.kind == "local":
        # the tasks run in forked worker processes (they inherit the imported modules; forkserver re-imports
        # pyarrow, datatrove and lrtool in every task: seconds per task on a busy 2-core machine); Ctrl-C and
        # SIGTERM are handled here as in a single-process run (see _LocalExecutor). A task interrupted that way
        # leaves no completion marker, so a re-run resumes it.
        ex = _LocalExecutor(pipeline=[step], tasks=opts.tasks, workers=workers, logging_dir=str(run_dir))
        ex.run()
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
        merge = _SlurmExecutor(pipeline=[MergeStep(str(run_dir), opts.run, opts.request, opts.outputs)], tasks=1,
                               cpus_per_task=1,
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
        ex = RayPipelineExecutor(pipeline=[step], tasks=opts.tasks, workers=opts.workers if opts.workers < 1
                                 else min(opts.workers, opts.tasks),
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
