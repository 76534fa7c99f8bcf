"""The options every mixture command shares for scale-out, and what they do.

``@distributed_options(unit)`` adds them to validate, reshard, diagnose-decode, reencode, repair and prefetch
(:func:`scale_out_params` is their one definition):

- ``--shard RANK/WORLD --part-out FILE``: process one deterministic share of the work and write a part
  result (the low-level primitive: run it WORLD times, anywhere, then ``lrtool report merge``);
- ``--executor local|slurm|ray --tasks N [--workers W] --logging-dir DIR`` and the ``--slurm-*`` /
  ``--ray-address`` options: run the shares on datatrove.

They are hidden from each command's ``--help`` (one line, :data:`SCALE_OUT_NOTE`, points to them) and listed
once, with :data:`SCALE_OUT_HELP`, by ``lrtool help scale-out`` (:mod:`lerobot_tools.commands.help`).

The decorated command receives one ``dist`` argument: None for an ordinary run, else a
:class:`DistributedRequest`; it builds its plan spec and calls :func:`run_distributed`, which never returns.
Nothing here imports datatrove or ray unless ``--executor`` is given.
"""

from __future__ import annotations

import contextlib
import functools
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, NoReturn

import click

from lerobot_tools.commands._common import fail
from lerobot_tools.distributed.partition import MAX_TASKS
from lerobot_tools.errors import LrtoolError


@dataclass
class DistributedRequest:
    """The scale-out options of one command line (see the module docstring)."""

    shard: tuple[int, int] | None = None
    part_out: Path | None = None
    executor: str | None = None
    tasks: int | None = None
    workers: int = -1
    logging_dir: Path | None = None
    slurm: dict = field(default_factory=dict)
    ray_address: str | None = None

    @property
    def world(self) -> int:
        """Number of tasks the work is split into."""
        return self.shard[1] if self.shard else int(self.tasks or 1)

    @property
    def run_dir(self) -> Path:
        """Where the plan, the parts and the logs live (absolute)."""
        where = self.part_out.parent if self.shard else self.logging_dir
        return Path(os.path.abspath(where))


def _parse_shard(ctx, param, value):
    import re

    if value is None:
        return None
    m = re.fullmatch(r"\s*([0-9]+)\s*/\s*([0-9]+)\s*", value)
    if m is None:
        raise click.BadParameter("expected RANK/WORLD, e.g. 3/8")
    rank, world = (int(g) if len(g) <= 12 else MAX_TASKS + 1 for g in m.groups())  # no 10**20-digit parse
    if world > MAX_TASKS:
        raise click.BadParameter(f"WORLD must be at most {MAX_TASKS:,} (got {m.group(2)[:24]})")
    if world < 1 or not 0 <= rank < world:
        raise click.BadParameter(f"RANK must be in 0..WORLD-1 and WORLD >= 1 (got {value})")
    return rank, world


def _parse_kv(ctx, param, values):
    out = {}
    for v in values:
        key, sep, val = v.partition("=")
        key = key.strip().lstrip("-")
        if not sep or not key:
            raise click.BadParameter(f"expected KEY=VALUE (an sbatch option without its dashes), got {v!r}")
        out[key] = val
    return out


#: The line each command with scale-out options shows at the end of its ``--help`` (the options are listed once,
#: by ``lrtool help scale-out``).
SCALE_OUT_NOTE = "Scale-out: --shard/--executor and friends, see `lrtool help scale-out`."

#: What ``lrtool help scale-out`` says before its table of commands and its options.
SCALE_OUT_HELP = """Run a command's work as shares on many processes or machines; the merged report
and exit status are those of one ordinary run.

--shard RANK/WORLD --part-out DIR/part-RANK.json runs one share, anywhere: run
every RANK, then `lrtool report merge DIR`.

--executor local|slurm|ray --tasks N --logging-dir DIR runs every share on
datatrove (pip install 'lerobot-tools[distributed]') and prints the merged
report; slurm submits and returns (then: `lrtool report DIR --wait`). Run the
command again to retry failed tasks; completed ones are skipped."""


def scale_out_params(hidden: bool = True) -> list[click.Option]:
    """The scale-out options, new objects on every call (the one definition of their names, defaults, checks and
    help texts).

    Args:
        hidden: leave them out of the command's ``--help`` (they are listed once, by ``lrtool help scale-out``).
    """
    o = functools.partial(click.Option, hidden=hidden)
    return [
        o(["--shard"], callback=_parse_shard, metavar="RANK/WORLD",
          help="Process share RANK of WORLD and write a part result to --part-out; merge the parts with "
               "`lrtool report merge`."),
        o(["--part-out"], type=click.Path(dir_okay=False, path_type=Path), default=None,
          help="Part result file of --shard (JSON); the run's plan.json is kept in the same folder."),
        o(["--executor"], type=click.Choice(["local", "slurm", "ray"]), default=None,
          help="Run the shares on datatrove: local processes, a SLURM job array, or a Ray cluster."),
        o(["--tasks"], metavar="N", type=click.IntRange(min=1, max=MAX_TASKS), default=None,
          help=f"Number of tasks (shares) for --executor (at most {MAX_TASKS:,})."),
        o(["--workers"], metavar="N", type=click.IntRange(min=-1, max=MAX_TASKS), default=-1, show_default=True,
          help="Tasks running at the same time (-1 = all)."),
        o(["--logging-dir"], metavar="DIR", type=click.Path(file_okay=False, path_type=Path), default=None,
          help="Run folder: plan, parts, logs, completion markers. Re-running with it skips completed tasks."),
        o(["--slurm-partition"], metavar="NAME", default=None, help="SLURM partition (needed by --executor slurm)."),
        o(["--slurm-time"], metavar="TIME", default="24:00:00", show_default=True, help="SLURM time limit per task."),
        o(["--slurm-cpus-per-task"], metavar="N", type=click.IntRange(min=1), default=1, show_default=True,
          help="CPUs of each task."),
        o(["--slurm-mem-per-cpu-gb"], metavar="GB", type=click.IntRange(min=1), default=2, show_default=True,
          help="Memory per CPU, in GB."),
        o(["--slurm-qos"], metavar="NAME", default=None, help="SLURM QOS (default: the cluster's)."),
        o(["--slurm-sbatch-arg", "slurm_sbatch_args"], multiple=True, callback=_parse_kv, metavar="KEY=VALUE",
          help="Extra sbatch option, e.g. account=robots or constraint=cpu. Repeatable."),
        o(["--slurm-venv-path"], metavar="FILE", default=None,
          help="Virtualenv activate script each job sources (default: this Python's venv, if any)."),
        o(["--slurm-env-command"], metavar="CMD", default=None,
          help="Shell command that sets up each job's environment instead (e.g. 'module load ...; source ...')."),
        o(["--ray-address"], metavar="ADDRESS", default=None,
          help="Ray cluster to use (default: $RAY_ADDRESS, else a local Ray instance for this run)."),
    ]


_NAMES = [p.name for p in scale_out_params()]
_SLURM_DEFAULTS = {"slurm_time": "24:00:00", "slurm_cpus_per_task": 1, "slurm_mem_per_cpu_gb": 2}


def _request(raw: dict) -> DistributedRequest | None:
    slurm = {k: raw[k] for k in _NAMES if k.startswith("slurm_")}
    slurm_given = [k for k, v in slurm.items() if v not in (None, {}, _SLURM_DEFAULTS.get(k))]
    if raw["shard"] and raw["executor"]:
        fail("--shard and --executor exclude each other (the executor runs every shard)")
    if raw["shard"]:
        if raw["part_out"] is None:
            fail("--shard needs --part-out FILE")
        extra = [n for n in ("tasks", "logging_dir", "ray_address") if raw[n] is not None] + slurm_given
        if extra:
            fail(f"--{extra[0].replace('_', '-')} applies to --executor, not --shard")
        return DistributedRequest(shard=raw["shard"], part_out=raw["part_out"])
    if raw["executor"]:
        if raw["tasks"] is None:
            fail("--executor needs --tasks N")
        if raw["logging_dir"] is None:
            fail("--executor needs --logging-dir DIR (plan, parts, logs; re-run with it to resume)")
        if raw["part_out"] is not None:
            fail("--part-out applies to --shard; with --executor the parts go to --logging-dir/parts")
        if raw["executor"] != "slurm" and slurm_given:
            fail(f"--{slurm_given[0].replace('_', '-')} applies to --executor slurm")
        if raw["executor"] == "slurm" and not raw["slurm_partition"]:
            fail("--executor slurm needs --slurm-partition")
        if raw["executor"] != "ray" and raw["ray_address"]:
            fail("--ray-address applies to --executor ray")
        return DistributedRequest(executor=raw["executor"], tasks=raw["tasks"], workers=raw["workers"],
                                  logging_dir=raw["logging_dir"], slurm=slurm, ray_address=raw["ray_address"])
    given = [n for n in ("part_out", "tasks", "logging_dir", "ray_address") if raw[n] is not None] + slurm_given
    if given:
        fail(f"--{given[0].replace('_', '-')} needs --shard or --executor")
    return None


def distributed_options(unit: str) -> Callable[[click.Command], click.Command]:
    """Give a click command the scale-out options; its callback receives them as one ``dist`` argument.

    Applied above ``@click.command()``. The options are hidden from the command's ``--help``, which ends with
    :data:`SCALE_OUT_NOTE` instead; ``lrtool help scale-out`` lists them once, with ``unit`` (what one share of
    this command's work is, e.g. "datasets, balanced by bytes") beside the command's name.
    """

    def deco(cmd: click.Command) -> click.Command:
        run = cmd.callback

        @functools.wraps(run)
        def callback(*args, **kwargs):
            raw = {name: kwargs.pop(name) for name in _NAMES}
            return run(*args, dist=_request(raw), **kwargs)

        cmd.callback = callback
        cmd.params.extend(scale_out_params(hidden=True))
        cmd.epilog = SCALE_OUT_NOTE
        cmd.scale_out_unit = unit  # type: ignore[attr-defined]
        return cmd

    return deco


def run_distributed_targets(dist: DistributedRequest, command: str, targets, make_spec: Callable[[list], dict],
                            render: dict) -> NoReturn:
    """Resolve TARGET arguments (one-line error on an unreadable mixture), build the spec, :func:`run_distributed`."""
    from lerobot_tools.dataset.targets import resolve_targets
    from lerobot_tools.errors import LrtoolError

    try:
        resolved = resolve_targets(list(targets))
    except LrtoolError as exc:
        fail(str(exc))
    run_distributed(dist, command, make_spec(resolved), render)


def run_distributed(dist: DistributedRequest, command: str, spec: dict, render: dict,
                    outputs: dict | None = None) -> NoReturn:
    """Run ``command`` as asked by ``dist``, print what the user needs, exit.

    Args:
        dist: the parsed options.
        command: a key of :data:`lerobot_tools.distributed.jobs.JOBS`.
        spec: the command's plan spec (resolved targets, options).
        render: how to print the merged result (``format``, and the keys of
            :data:`lerobot_tools.distributed.plan.RENDER_KEYS`), recorded in the run folder.
        outputs: files the merged run writes outside the run folder (:data:`lerobot_tools.distributed.jobs.OUTPUTS`
            name -> path from this command line). Written by this process when it merges (``--executor local|ray``)
            and by the SLURM merge job; refused with ``--shard`` (the tasks only write parts: give them to
            ``lrtool report``); never recorded in the run folder.
    """
    from lerobot_tools.distributed.jobs import get_job
    from lerobot_tools.distributed.plan import load_or_create, write_render
    from lerobot_tools.errors import LrtoolError

    outputs = {k: v for k, v in (outputs or {}).items() if v is not None}
    if dist.shard and outputs.get("write_baseline") is not None:
        fail("--write-baseline with --shard: the tasks only write parts; give it to `lrtool report DIR "
             "--write-baseline FILE` once every part is written")
    job = get_job(command)
    run_dir = dist.run_dir
    try:
        plan = load_or_create(run_dir, command, dist.world, spec, job.sizes)
        write_render(run_dir, plan, render)
    except LrtoolError as exc:
        fail(str(exc))
    if dist.shard:
        from lerobot_tools.distributed.parts import run_shard

        rank, world = dist.shard
        try:
            part = run_shard(plan, rank, dist.part_out)
        except LrtoolError as exc:
            fail(str(exc))
        from lerobot_tools.sniff import human_size

        click.echo(f"lrtool: share {rank}/{world}: {len(part['items'])} work item(s), {human_size(part['bytes'])}, "
                   f"{part['seconds']:.1f} s -> {dist.part_out}; merge all {world} with: "
                   f"lrtool report merge {run_dir}", err=True)
        sys.exit(0)
    _run_executor(dist, job, run_dir, plan, outputs)


def _run_executor(dist: DistributedRequest, job, run_dir: Path, plan, outputs: dict) -> NoReturn:
    from lerobot_tools.errors import LrtoolError

    try:
        from lerobot_tools.distributed import engine
    except ImportError as exc:
        fail(f"--executor needs datatrove: pip install 'lerobot-tools[distributed]' ({exc})")
    s = dist.slurm
    opts = engine.ExecutorOptions(
        kind=dist.executor, tasks=dist.world, workers=dist.workers, logging_dir=str(run_dir),
        slurm_partition=s.get("slurm_partition"), slurm_time=s.get("slurm_time") or "24:00:00",
        slurm_cpus_per_task=s.get("slurm_cpus_per_task") or 1, slurm_mem_per_cpu_gb=s.get("slurm_mem_per_cpu_gb") or 2,
        slurm_qos=s.get("slurm_qos"), slurm_sbatch_args=s.get("slurm_sbatch_args") or {},
        slurm_venv_path=s.get("slurm_venv_path"), slurm_env_command=s.get("slurm_env_command"),
        slurm_job_name=f"lrtool-{job.command}", ray_address=dist.ray_address, run=plan.id, request=plan.request,
        outputs={k: str(Path(v).absolute()) for k, v in outputs.items()})
    try:
        launched = engine.launch(opts)
    except LrtoolError as exc:
        fail(str(exc))
    if not launched.ran:
        main_id, merge_id = launched.job_ids
        if main_id == "-1":
            click.echo(f"every task of this run is already complete ({run_dir}); nothing submitted")
        else:
            click.echo(f"submitted {dist.world} task(s) as SLURM job {main_id} (array), and merge job {merge_id} "
                       "that runs after it")
        click.echo(f"  logs:    {run_dir}/logs/task_RRRRR.log, {run_dir}/slurm_logs/")
        click.echo(f"  result:  lrtool report {run_dir}          (the merged report and its exit status, once "
                   "complete)")
        click.echo(f"           lrtool report {run_dir} --wait   (blocks until then)")
        click.echo(f"  also written by the merge job: {run_dir}/report.txt, report.json, exit_status"
                   + "".join(f", {v}" for v in outputs.values()))
        sys.exit(0)
    _print_merged(run_dir, outputs)


def _print_merged(run_dir: Path, outputs: dict) -> NoReturn:
    from lerobot_tools.distributed.parts import IncompleteRun, merge_parts

    try:
        merged = merge_parts([run_dir])
    except IncompleteRun as exc:
        fail(f"{exc.message}: those task(s) failed (tracebacks in {run_dir}/logs/task_RRRRR.log); run the same "
             "command again to retry them (completed tasks are skipped)")
    except LrtoolError as exc:
        fail(str(exc))
    report_merged(merged, run_dir, outputs)


def report_merged(merged, run_dir: Path, outputs: dict, *, fmt: str | None = None) -> NoReturn:
    """Write ``outputs`` (paths from this command line), print a merged run as its job renders it (the render
    options recorded in ``run_dir`` for this run, ``fmt`` overriding the format) and exit with the job's exit
    status; an error (unreadable render options or results, an output that cannot be written) is one line,
    exit 2."""
    from lerobot_tools._safeout import json_mode, wrap
    from lerobot_tools.distributed.jobs import get_job, write_outputs
    from lerobot_tools.distributed.jobs import unreadable_results
    from lerobot_tools.distributed.plan import read_render

    out = wrap(sys.stdout)
    try:
        job = get_job(merged.command)
        render = read_render(run_dir, merged.run, merged.request)
        if fmt is not None:
            render["format"] = fmt
        render["color"] = True
        write_outputs(job, merged, outputs, where=run_dir)
        with (json_mode(out) if render.get("format") == "json" else contextlib.nullcontext()), \
                unreadable_results(run_dir):
            status = job.report(merged.result, render, out)
    except LrtoolError as exc:
        fail(str(exc))
    sys.exit(status)
