"""What each command does as a distributed job: size its targets, run work items, merge, report.

A job module (``validate_job``, ``reshard_job``, ...) exposes ``JOB``, an object with:

- ``sizes(spec) -> list[DatasetSize]``: per target, its bytes and (when it can be split) its files;
- ``run_dataset(spec, i)``: the whole of dataset ``i``; ``run_head(spec, i)``: the dataset-level part of a
  split dataset; ``run_files(spec, i, relpaths)``: some of its files. Each returns plain JSON;
- optionally ``run_datasets(spec, indices)``: several whole datasets in one call (prefetch: one budget);
- ``merge(spec, datasets: list[DatasetParts])``: the command's result object, exactly what the
  single-process command returns for the same targets;
- ``report(result, render, out) -> int``: print it as the command does (``render`` holds ``format`` and
  command-specific options) and return the command's exit status;
- optionally ``write_outputs(result, spec, outputs) -> list[str]``: write the files the command writes outside
  the run folder once merged (``outputs`` maps :data:`OUTPUTS` names to paths, always from a command line: validate's
  ``--write-baseline``, prefetch's lock file) and return lines to print on stderr.

``spec`` is the JSON the command stored in the plan (resolved targets and options). Job modules are
imported only when a run needs them.
"""

from __future__ import annotations

import contextlib
import importlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator, Protocol

from lerobot_tools.errors import UsageError

#: command -> module exposing ``JOB``
JOBS: dict[str, str] = {
    "validate": "lerobot_tools.distributed.validate_job",
    "reshard": "lerobot_tools.distributed.reshard_job",
    "diagnose-decode": "lerobot_tools.distributed.diagnose_job",
    "repair": "lerobot_tools.distributed.repair_job",
    "prefetch": "lerobot_tools.distributed.prefetch_job",
    "reencode": "lerobot_tools.distributed.reencode_job",
}


@dataclass
class DatasetParts:
    """What the tasks returned for one target, gathered for :meth:`Job.merge`.

    Attributes:
        index: position of the target.
        whole: the result of ``run_dataset`` when the dataset was one work item, else None.
        head: the result of ``run_head`` for a split dataset, else None.
        files: ``(relpaths, result)`` of every ``run_files`` call for a split dataset, in rank order.
        split: True when the dataset was split into a head and file items.
    """

    index: int
    whole: Any = None
    head: Any = None
    files: list[tuple[list[str], Any]] = field(default_factory=list)
    split: bool = False


class Job(Protocol):
    command: str

    def sizes(self, spec: dict) -> list: ...

    def run_dataset(self, spec: dict, index: int) -> Any: ...

    def run_head(self, spec: dict, index: int) -> Any: ...

    def run_files(self, spec: dict, index: int, relpaths: list[str]) -> Any: ...

    def merge(self, spec: dict, datasets: list[DatasetParts]) -> Any: ...

    def report(self, result: Any, render: dict, out) -> int: ...


#: output files a merged run may write, per command: name -> command (taken only from a command line)
OUTPUTS: dict[str, str] = {"write_baseline": "validate", "lock": "prefetch"}


def write_outputs(job: Job, merged: Any, outputs: dict[str, Any], *, where: Any = None) -> None:
    """Write the output files named in ``outputs`` (paths from the command line of the process that merges, never
    from a run folder) through the job's ``write_outputs``, and print its lines on stderr.

    Args:
        job: the run's job.
        merged: the :class:`~lerobot_tools.distributed.parts.Merged` run.
        outputs: :data:`OUTPUTS` name -> path or None.
        where: the run folder, named by a one-line error about the parts' results.

    Raises:
        UsageError: an output that does not apply to this command; the job's own errors (one line).
    """
    import sys

    given = {k: v for k, v in outputs.items() if v is not None}
    for name in given:
        if OUTPUTS.get(name) != job.command:
            flag = "--" + name.replace("_", "-")
            raise UsageError(f"{flag} applies to a {OUTPUTS.get(name, '?')} run, this one is {job.command}")
    writer = getattr(job, "write_outputs", None)
    if writer is None:
        return
    with unreadable_results(where):
        lines = writer(merged.result, merged.spec, given)
    for line in lines:
        print(line, file=sys.stderr)


def get_job(command: str) -> Job:
    """The job object of ``command``.

    Raises:
        UsageError: not a command that runs distributed.
    """
    module = JOBS.get(command)
    if module is None:
        raise UsageError(f"{command!r} cannot run distributed (known: {', '.join(sorted(JOBS))})")
    return importlib.import_module(module).JOB


def dataclass_from_dict(cls, d: dict[str, Any]):
    """Rebuild dataclass ``cls`` from ``dataclasses.asdict`` output: fields typed as a dataclass, a list of
    one, or an optional one are rebuilt; other values are taken as they are; unknown keys are refused.

    Raises:
        TypeError: ``d`` has keys ``cls`` does not.
    """
    import dataclasses
    import types
    import typing

    hints = typing.get_type_hints(cls)

    def coerce(tp, v):
        if v is None:
            return None
        if dataclasses.is_dataclass(tp):
            return dataclass_from_dict(tp, v)
        origin, args = typing.get_origin(tp), typing.get_args(tp)
        if origin is list and args and dataclasses.is_dataclass(args[0]):
            return [dataclass_from_dict(args[0], x) for x in v]
        if origin in (typing.Union, types.UnionType):
            inner = [a for a in args if a is not type(None)]
            if len(inner) == 1:
                return coerce(inner[0], v)
        return v

    names = {f.name for f in dataclasses.fields(cls)}
    unknown = set(d) - names
    if unknown:
        raise TypeError(f"{cls.__name__} has no field(s) {sorted(unknown)}")
    return cls(**{k: coerce(hints[k], v) for k, v in d.items()})


#: what a job raises on a result it cannot read (a part edited by hand, a wrong type where a field should be)
RESULT_ERRORS = (TypeError, ValueError, KeyError, AttributeError, IndexError)


@contextlib.contextmanager
def unreadable_results(where: Path | str | None) -> Iterator[None]:
    """Turn an error raised while a job reads the parts' results (merging or rendering them) into one line.

    Raises:
        UsageError: for any of :data:`RESULT_ERRORS` raised in the block, naming ``where`` and the error.
    """
    from lerobot_tools.errors import one_line

    try:
        yield
    except RESULT_ERRORS as exc:
        raise UsageError(f"the parts hold a result lrtool cannot read ({one_line(exc, typed=True)}): a part was "
                         "edited, or written by another version of lrtool", where) from None
