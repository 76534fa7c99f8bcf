"""Run one task's share of a plan into a part result, and merge the parts of a run.

A part is one JSON file per task (``parts/part-RRRRR.json``, written atomically, so it exists only
when the task finished its work)::

    {"lrtool_part": 1, "plan_id": "...", "command": "validate", "rank": 3, "world": 8,
     "cwd": "/launch/dir", "spec": {...}, "items": [[dataset, kind, path, bytes], ...],
     "entries": [{"dataset": 0, "kind": "dataset", "result": {...}},
                 {"dataset": 5, "kind": "files", "files": ["data/chunk-000/file-003.parquet"], "result": {...}}],
     "bytes": 123456, "seconds": 4.2}

Every part carries the run's spec, so ``lrtool report merge PARTS...`` needs nothing else. Merging
checks that the parts belong to one run and that every rank is present, then hands each dataset's
entries to the command's job (:mod:`lerobot_tools.distributed.jobs`).
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

from lerobot_tools.distributed.jobs import DatasetParts, get_job
from lerobot_tools.distributed.partition import WorkItem
from lerobot_tools.distributed.plan import PARTS_DIR, Plan, read_json_capped
from lerobot_tools.errors import UsageError

PART_VERSION = 1


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
    part = {"lrtool_part": PART_VERSION, "plan_id": plan.id, "command": plan.command, "rank": rank,
            "world": plan.world, "cwd": plan.cwd, "spec": plan.spec, "items": [it.to_list() for it in items],
            "entries": entries, "bytes": sum(it.bytes for it in items),
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
        UsageError: a path does not exist, or a folder holds no part file.
    """
    out: list[Path] = []
    for p in map(Path, paths):
        if p.is_dir():
            found = [f for f in sorted(p.glob("part-*.json")) + sorted((p / PARTS_DIR).glob("part-*.json"))
                     if f.is_file()]
            if not found:
                raise UsageError("no part files (part-*.json) in this folder or its parts/ folder", p)
            out += found
        elif p.exists():
            out.append(p)
        else:
            raise UsageError("no such part file or folder", p)
    return out


def read_part(path: Path) -> dict[str, Any]:
    """Read and validate one part file.

    Raises:
        UsageError: unreadable, too large, or not an lrtool part.
    """
    doc = read_json_capped(path, "part file")
    try:
        if not isinstance(doc, dict) or doc.get("lrtool_part") != PART_VERSION:
            raise ValueError("not an lrtool part result (lrtool_part: 1)")
        for key, typ in (("plan_id", str), ("command", str), ("rank", int), ("world", int), ("spec", dict),
                         ("items", list), ("entries", list)):
            if not isinstance(doc.get(key), typ):
                raise ValueError(f"{key!r} is missing or not a {typ.__name__}")
        if not 0 <= doc["rank"] < doc["world"]:
            raise ValueError(f"rank {doc['rank']} is outside 0..{doc['world'] - 1}")
        doc["items"] = [WorkItem.from_list(it) for it in doc["items"]]
        for e in doc["entries"]:
            if not (isinstance(e, dict) and isinstance(e.get("dataset"), int)
                    and e.get("kind") in ("dataset", "head", "files") and "result" in e):
                raise ValueError("an entry is not {dataset, kind, result}")
    except (TypeError, ValueError) as exc:
        raise UsageError(f"not a valid part file ({exc})", path) from None
    return doc


@dataclass
class Merged:
    """A merged run: the command's result object and what produced it."""

    command: str
    spec: dict
    world: int
    result: Any
    parts: int


def merge_parts(paths: list[Path]) -> Merged:
    """Merge the part files of one run (see :func:`find_parts` for ``paths``) into the command's result.

    Runs in the run's launching directory when it exists here (relative dataset paths resolve as they
    did for the tasks).

    Raises:
        IncompleteRun: some ranks have no part.
        UsageError: unreadable parts, parts of different runs, a rank given twice with different content,
            or parts that do not cover every dataset.
    """
    files = find_parts(paths)
    parts: dict[int, dict] = {}
    first: dict | None = None
    for f in files:
        part = read_part(f)
        if first is None:
            first = part
        elif part["plan_id"] != first["plan_id"]:
            raise UsageError(f"belongs to another run (plan {part['plan_id']}, not {first['plan_id']})", f)
        rank = part["rank"]
        if rank in parts and parts[rank]["entries"] != part["entries"]:
            raise UsageError(f"rank {rank} is given twice with different results", f)
        parts[rank] = part
    assert first is not None
    world = first["world"]
    missing = [r for r in range(world) if r not in parts]
    if missing:
        raise IncompleteRun(missing, world)
    spec = first["spec"]
    n = len(spec.get("targets", []))
    datasets = [DatasetParts(i) for i in range(n)]
    covered: dict[int, set[str]] = {}
    for rank in range(world):
        for e in parts[rank]["entries"]:
            i = e["dataset"]
            if not 0 <= i < n:
                raise UsageError(f"part of rank {rank} names dataset {i}, the run has {n}")
            d = datasets[i]
            if e["kind"] == "dataset":
                d.whole = e["result"]
                covered.setdefault(i, set()).add("")
            elif e["kind"] == "head":
                d.head, d.split = e["result"], True
                covered.setdefault(i, set()).add("")
            else:
                d.files.append((list(e.get("files") or []), e["result"]))
    gaps = [i for i in range(n) if "" not in covered.get(i, set())]
    if gaps:
        raise UsageError(f"the parts do not cover dataset(s) {gaps[:8]} of the run")
    job = get_job(first["command"])
    with in_directory(first.get("cwd")):
        result = job.merge(spec, datasets)
    return Merged(first["command"], spec, world, result, len(parts))
