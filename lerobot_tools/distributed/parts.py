"""Run one task's share of a plan into a part result, and merge the parts of a run.

A part is one JSON file per task (``parts/part-RRRRR.json``, written atomically, so it exists only
when the task finished its work)::

    {"lrtool_part": 2, "run": "<32 hex>", "request": "<64 hex>", "command": "validate", "rank": 3, "world": 8,
     "cwd": "/launch/dir", "spec": {...}, "items": [[dataset, kind, path, bytes], ...],
     "entries": [{"dataset": 0, "kind": "dataset", "result": {...}},
                 {"dataset": 5, "kind": "files", "files": ["data/chunk-000/file-003.parquet"], "result": {...}}],
     "bytes": 123456, "seconds": 4.2}

Every part carries the run's identity, its request digest and its spec, so ``lrtool report merge PARTS...``
needs nothing else; a part whose digest does not match its own command, world, cwd and spec is refused.
Merging checks that the parts belong to one run (and to the ``plan.json`` of their folder, when there is one:
same identity, same digest, the work items the plan gave that rank), that each part's entries are exactly those
of its work items, and that every rank is present, then hands each dataset's entries to the command's job
(:mod:`lerobot_tools.distributed.jobs`). A run folder's parts are read from the folder itself and its ``parts/``
folder, never through a symbolic link. A result the job cannot read (a part edited by hand) is a one-line error.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

from lerobot_tools.distributed.jobs import DatasetParts, get_job, unreadable_results
from lerobot_tools.distributed.partition import WorkItem
from lerobot_tools.distributed.plan import (DIGEST_RE, PARTS_DIR, PLAN_FILE, RUN_ID_RE, Plan, check_world,
                                            read_json_capped, read_plan, refuse_link, request_digest, safe_relpath,
                                            spec_targets)
from lerobot_tools.errors import UsageError

PART_VERSION = 2


class IncompleteRun(UsageError):
    """Some tasks of the run have not written their part yet.

    Attributes:
        missing: the ranks without a part, ascending.
        world: the run's number of tasks.
    """

    def __init__(self, missing: list[int], world: int, where: str | None = None):
        shown = ", ".join(map(str, missing[:12])) + (" ..." if len(missing) > 12 else "")
        super().__init__(f"{world - len(missing)} of {world} task(s) have written their part; missing rank(s) {shown}",
                         where)
        self.missing = missing
        self.world = world


@contextlib.contextmanager
def in_directory(path: str | None) -> Iterator[None]:
    """Run the block in ``path`` (the launching directory of the run) when it exists, then come back."""
    here = os.getcwd()
    if not path or path == here or not os.path.isdir(path):
        yield
        return
    os.chdir(path)
    try:
        yield
    finally:
        os.chdir(here)


def run_shard(plan: Plan, rank: int, out: Path) -> dict[str, Any]:
    """Run the work items of task ``rank`` and write its part to ``out`` (atomically).

    Items run in natural order; the file items one task owns in one dataset run as one call, and a job with
    ``run_datasets(spec, indices)`` runs all the task's whole datasets in one call.

    Returns:
        The part (as written).

    Raises:
        UsageError: ``rank`` is outside the plan; the part cannot be written.
        Exception: whatever the command raises for a problem it does not report as a finding (the task
            then fails and writes no part; a re-run retries it).
    """
    from lerobot_tools._io import write_output_text

    if not 0 <= rank < plan.world:
        raise UsageError(f"rank {rank} is outside 0..{plan.world - 1}")
    job = get_job(plan.command)
    items = plan.assignment[rank]
    t0 = time.perf_counter()
    entries: list[dict[str, Any]] = []
    with in_directory(plan.cwd):
        whole = [it.dataset for it in items if it.kind == "dataset"]
        batch: dict[int, Any] = {}
        if whole and hasattr(job, "run_datasets"):  # a job that runs its datasets together (shared budget)
            batch = dict(zip(whole, job.run_datasets(plan.spec, whole)))
        for ds, group in itertools.groupby(items, key=lambda it: it.dataset):
            group = list(group)
            for it in group:
                if it.kind == "dataset":
                    result = batch[ds] if ds in batch else job.run_dataset(plan.spec, ds)
                    entries.append({"dataset": ds, "kind": "dataset", "result": result})
                elif it.kind == "head":
                    entries.append({"dataset": ds, "kind": "head", "result": job.run_head(plan.spec, ds)})
            files = [it.path for it in group if it.kind == "file"]
            if files:
                entries.append({"dataset": ds, "kind": "files", "files": files,
                                "result": job.run_files(plan.spec, ds, files)})
    part = {"lrtool_part": PART_VERSION, "run": plan.id, "request": plan.request, "command": plan.command,
            "rank": rank, "world": plan.world, "cwd": plan.cwd, "spec": plan.spec,
            "items": [it.to_list() for it in items], "entries": entries, "bytes": sum(it.bytes for it in items),
            "seconds": round(time.perf_counter() - t0, 3)}
    out = Path(out)
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        # only as a regular file (a FIFO, a device, a symlink there is refused); ASCII: a non-UTF-8 name round-trips
        write_output_text(out, json.dumps(part) + "\n", "part result", error=UsageError)
    except OSError as exc:
        raise UsageError(f"cannot write the part result ({exc.strerror or exc})", out) from None
    return part


def find_parts(paths: list[Path]) -> list[Path]:
    """Part files named by ``paths``: files as given; a folder contributes its ``part-*.json`` files and
    those of its ``parts/`` subfolder (a run directory).

    Raises:
        UsageError: a path does not exist, a folder holds no part file, or a folder's ``parts/`` or one of its
            part files is a symbolic link.
    """
    out: list[Path] = []
    for p in map(Path, paths):
        if p.is_dir():
            found = folder_parts(p)
            if not found:
                raise UsageError("no part files (part-*.json) in this folder or its parts/ folder", p)
            out += found
        elif p.exists():
            out.append(p)
        else:
            raise UsageError("no such part file or folder", p)
    return out


def folder_parts(folder: Path) -> list[Path]:
    """The ``part-*.json`` regular files of a run folder and of its ``parts/`` folder, sorted.

    Raises:
        UsageError: ``parts/`` or a part file is a symbolic link (it could name another run's parts).
    """
    folder = Path(folder)
    sub = folder / PARTS_DIR
    refuse_link(sub, "the parts folder")
    files = sorted(folder.glob("part-*.json")) + (sorted(sub.glob("part-*.json")) if sub.is_dir() else [])
    out = []
    for f in files:
        refuse_link(f, "part file")
        if f.is_file():
            out.append(f)
    return out


def expected_entries(items: list[WorkItem]) -> list[tuple[int, str, list[str] | None]]:
    """``(dataset, kind, files)`` of the entries :func:`run_shard` writes for ``items`` (in natural order)."""
    out: list[tuple[int, str, list[str] | None]] = []
    for ds, group in itertools.groupby(items, key=lambda it: it.dataset):
        group = list(group)
        out += [(ds, it.kind, None) for it in group if it.kind in ("dataset", "head")]
        files = [it.path for it in group if it.kind == "file"]
        if files:
            out.append((ds, "files", files))
    return out


def read_part(path: Path, *, link_ok: bool = True) -> dict[str, Any]:
    """Read and validate one part file: its format, run identity, request digest (which must match its own
    command, world, cwd and spec), rank, work items, and entries (exactly those of its work items).

    Args:
        path: the part file.
        link_ok: follow a symbolic link (a file named on the command line); False for a run folder's parts.

    Raises:
        UsageError: unreadable, too large, or not a valid lrtool part (one line naming ``path``).
    """
    from lerobot_tools.distributed.jobs import JOBS

    doc = read_json_capped(path, "part file", link_ok=link_ok)
    try:
        if not isinstance(doc, dict) or doc.get("lrtool_part") != PART_VERSION:
            if isinstance(doc, dict) and doc.get("lrtool_part") == 1:
                raise ValueError("written by an older lrtool (part format 1); run the task again")
            raise ValueError(f"not an lrtool part result (lrtool_part: {PART_VERSION})")
        for key, typ in (("run", str), ("request", str), ("command", str), ("cwd", str), ("spec", dict),
                         ("items", list), ("entries", list)):
            if not isinstance(doc.get(key), typ):
                raise ValueError(f"{key!r} is missing or not a {typ.__name__}")
        if not RUN_ID_RE.fullmatch(doc["run"]) or not DIGEST_RE.fullmatch(doc["request"]):
            raise ValueError("'run' or 'request' is malformed")
        if doc["command"] not in JOBS:
            raise ValueError(f"unknown command {doc['command'][:40]!r}")
        world = check_world(doc.get("world"))
        rank = doc.get("rank")
        if type(rank) is not int or not 0 <= rank < world:
            raise ValueError(f"rank {str(rank)[:20]} is outside 0..{world - 1}")
        n = spec_targets(doc["spec"])
        doc["items"] = [WorkItem.from_list(it) for it in doc["items"]]
        for it in doc["items"]:
            if not 0 <= it.dataset < n or (it.kind == "file" and not safe_relpath(it.path)):
                raise ValueError(f"a work item is not one of this run's ({str(it.to_list())[:80]})")
        got = []
        for e in doc["entries"]:
            if not (isinstance(e, dict) and type(e.get("dataset")) is int
                    and e.get("kind") in ("dataset", "head", "files") and "result" in e):
                raise ValueError("an entry is not {dataset, kind, result}")
            got.append((e["dataset"], e["kind"], e.get("files") if e["kind"] == "files" else None))
        if got != expected_entries(doc["items"]):
            raise ValueError("its entries are not those of its work items")
    except (TypeError, ValueError) as exc:
        raise UsageError(f"not a valid part file ({exc})", path) from None
    if request_digest(doc["command"], world, doc["cwd"], doc["spec"]) != doc["request"]:
        raise UsageError("part file was modified after it was written (its request digest does not match its "
                         "content)", path)
    return doc


@dataclass
class Merged:
    """A merged run: the command's result object and what produced it."""

    command: str
    spec: dict
    world: int
    result: Any
    parts: int
    run: str = ""
    request: str = ""


def run_plan(paths: list[Path]) -> tuple[Plan | None, Path | None]:
    """The ``plan.json`` of the folder(s) ``paths`` come from (a folder given, or the folder of a part file
    given), and that folder; (None, None) when none has one.

    Raises:
        UsageError: an invalid plan, or plans of different runs.
    """
    plan, where = None, None
    for p in map(Path, paths):
        folder = p if p.is_dir() else p.parent
        if not os.path.lexists(folder / PLAN_FILE):
            continue
        other = read_plan(folder / PLAN_FILE)
        if plan is not None and (other.id, other.request) != (plan.id, plan.request):
            raise UsageError(f"belongs to another run (its plan.json is not that of {where})", folder)
        plan, where = plan or other, where or folder
    return plan, where


def merge_parts(paths: list[Path]) -> Merged:
    """Merge the part files of one run (see :func:`find_parts` for ``paths``) into the command's result.

    When the parts' folder holds a ``plan.json``, every part must belong to that plan (its run identity, request
    digest, and for its rank the work items of the plan), and the plan's spec is used. Runs in the run's launching
    directory when it exists here (relative dataset paths resolve as they did for the tasks).

    Raises:
        IncompleteRun: some ranks have no part.
        UsageError: unreadable parts, parts of different runs or of another plan, a rank given twice with
            different content, parts that do not cover every dataset, or results the command cannot read.
    """
    files = find_parts(paths)
    plan, plan_dir = run_plan(paths)
    given = {Path(p) for p in paths if not Path(p).is_dir()}
    parts: dict[int, dict] = {}
    first: dict | None = None
    for f in files:
        part = read_part(f, link_ok=f in given)
        ident = (part["run"], part["request"])
        if plan is not None:
            if ident != (plan.id, plan.request):
                raise UsageError(f"belongs to another run (run {part['run']}, not {plan.id} of {plan_dir})", f)
            if part["items"] != plan.assignment[part["rank"]]:
                raise UsageError(f"its work items are not those the plan gives rank {part['rank']}", f)
        if first is None:
            first = part
        elif ident != (first["run"], first["request"]):
            raise UsageError(f"belongs to another run (run {part['run']}, not {first['run']})", f)
        rank = part["rank"]
        if rank in parts and parts[rank]["entries"] != part["entries"]:
            raise UsageError(f"rank {rank} is given twice with different results", f)
        parts[rank] = part
    assert first is not None
    world = first["world"]
    if len(parts) < world:
        missing = [r for r in range(world) if r not in parts]
        raise IncompleteRun(missing, world, plan_dir or Path(files[0]).parent)
    command, spec, cwd = first["command"], first["spec"], first["cwd"]
    n = len(spec["targets"])
    datasets = [DatasetParts(i) for i in range(n)]
    covered: set[int] = set()
    for rank in range(world):
        for e in parts[rank]["entries"]:
            d = datasets[e["dataset"]]
            if e["kind"] == "dataset":
                d.whole = e["result"]
                covered.add(d.index)
            elif e["kind"] == "head":
                d.head, d.split = e["result"], True
                covered.add(d.index)
            else:
                d.files.append((list(e["files"]), e["result"]))
    gaps = [i for i in range(n) if i not in covered]
    if gaps:
        raise UsageError(f"the parts do not cover dataset(s) {gaps[:8]} of the run")
    job = get_job(command)
    where = plan_dir or Path(files[0]).parent
    with in_directory(cwd), unreadable_results(where):
        result = job.merge(spec, datasets)
    return Merged(command, spec, world, result, len(parts), first["run"], first["request"])
