"""The plan of a distributed run: what the command is, and which work items each task owns.

A run directory (``--logging-dir``, or the folder of ``--part-out``) holds:

- ``plan.json``: the command, its resolved targets and options (``spec``), the number of tasks
  (``world``), the launching directory (``cwd``; tasks run there, so relative dataset paths resolve the
  same on every node of a shared file system) and the assignment of work items to tasks. It is written
  once, by the first process that gets there (an atomic hard link, which fails when the file exists);
  every later task and every re-run reads that one, so the partition cannot change under a command that
  rewrites files. Its ``id`` hashes the command, spec, world and cwd: a different run pointed at the
  same directory is refused instead of mixing results.
- ``render.json``: how the launching command wanted the merged result printed (``--format``, baselines).
- ``parts/part-RRRRR.json``: one part result per task (:mod:`lerobot_tools.distributed.parts`).

Every file read here is size-capped and validated; problems raise :class:`~lerobot_tools.errors.UsageError`
with one line naming the file.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any, Callable

from lerobot_tools.dataset.targets import Target
from lerobot_tools.distributed.partition import DatasetSize, WorkItem, partition
from lerobot_tools.errors import UsageError

PLAN_FILE = "plan.json"
RENDER_FILE = "render.json"
PARTS_DIR = "parts"
PLAN_VERSION = 1
#: plan and part files above this size are refused (a 100k-file dataset's part is a few tens of MB)
MAX_JSON_BYTES = 1 << 30


@dataclass
class Plan:
    """A distributed run (see the module docstring).

    Attributes:
        command: ``"validate"``, ``"reshard"``, ... (a key of :data:`lerobot_tools.distributed.jobs.JOBS`).
        world: number of tasks.
        cwd: absolute launching directory; tasks run there.
        spec: the command's resolved targets and options (JSON, see each job module).
        assignment: per rank, the work items it owns.
        id: hex digest identifying the run (command, spec, world, cwd).
    """

    command: str
    world: int
    cwd: str
    spec: dict
    assignment: list[list[WorkItem]]
    id: str

    def to_dict(self) -> dict[str, Any]:
        return {"lrtool_plan": PLAN_VERSION, "id": self.id, "command": self.command, "world": self.world,
                "cwd": self.cwd, "spec": self.spec,
                "assignment": [[it.to_list() for it in items] for items in self.assignment],
                "bytes": [sum(it.bytes for it in items) for items in self.assignment]}


def plan_id(command: str, world: int, cwd: str, spec: dict) -> str:
    """Stable identifier of a run: SHA-256 (first 24 hex digits) of its canonical JSON."""
    raw = json.dumps([command, world, cwd, spec], sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(raw.encode("utf-8", "surrogatepass")).hexdigest()[:24]  # a non-UTF-8 file name too


def part_path(run_dir: Path, rank: int) -> Path:
    """Where task ``rank`` writes its part result: ``RUN_DIR/parts/part-RRRRR.json``."""
    return Path(run_dir) / PARTS_DIR / f"part-{rank:05d}.json"


# ---------------------------------------------------------------------- targets in JSON
_TARGET_FIELDS = [f.name for f in fields(Target)]


def target_to_dict(t: Target) -> dict[str, Any]:
    """A resolved :class:`~lerobot_tools.dataset.targets.Target` as JSON (``root`` as a string)."""
    d = {name: getattr(t, name) for name in _TARGET_FIELDS}
    d["root"] = str(t.root) if t.root is not None else None
    return d


def target_from_dict(d: dict[str, Any]) -> Target:
    """Inverse of :func:`target_to_dict`.

    Raises:
        UsageError: ``d`` is not a serialised target.
    """
    if not isinstance(d, dict) or not isinstance(d.get("spec"), str):
        raise UsageError(f"not a serialised target: {str(d)[:80]}")
    kwargs = {k: v for k, v in d.items() if k in _TARGET_FIELDS}
    if kwargs.get("root") is not None:
        kwargs["root"] = Path(kwargs["root"])
    return Target(**kwargs)


# ---------------------------------------------------------------------- sizes

def sizes_by_file(targets: list[Target], list_files: Callable[[Any], list[str]], *,
                  head: Callable[[Any], int] | None = None,
                  skip: list[bool] | None = None) -> list[DatasetSize]:
    """The :class:`DatasetSize` of each target for a command that can split a dataset by file.

    Args:
        targets: the run's resolved targets.
        list_files: the relative paths the command processes one by one, from the opened
            :class:`~lerobot_tools.dataset.model.Dataset`, in processing order.
        head: bytes of the dataset-level work (default 1).
        skip: per target, True to count it as one unsplit byte (e.g. a duplicate the command skips).

    Returns:
        One size per target: file sizes on disk (0 for a file that cannot be stat'ed) plus the head; an
        unresolved target, or one whose metadata cannot be read, counts 1 byte and is not split: sizing never
        fails a run, the task that owns the dataset reports its error.
    """
    from lerobot_tools.dataset.model import Dataset

    out = []
    for i, t in enumerate(targets):
        if (skip is not None and skip[i]) or t.error or t.root is None:
            out.append(DatasetSize(1))
            continue
        try:
            ds = Dataset(t.root)
            files = []
            for rel in list_files(ds):
                try:
                    files.append((rel, ds.path(rel).stat().st_size))
                except OSError:
                    files.append((rel, 0))
            head_bytes = head(ds) if head is not None else 1
        except Exception:
            out.append(DatasetSize(1))
            continue
        out.append(DatasetSize(sum(n for _, n in files) + head_bytes, tuple(files), max(1, head_bytes)))
    return out


# ---------------------------------------------------------------------- files

def read_json_capped(path: Path, what: str) -> Any:
    """Parse a JSON file of the run folder with :func:`lerobot_tools._io.load_json_file` (a regular file of at
    most :data:`MAX_JSON_BYTES` bytes, nested at most ``MAX_JSON_DEPTH`` levels).

    Raises:
        UsageError: missing, refused, too large, unreadable or not JSON (message names ``path`` and ``what``).
    """
    from lerobot_tools._io import load_json_file

    path = Path(path)
    try:
        return load_json_file(path, path, limit=MAX_JSON_BYTES, error=UsageError)
    except FileNotFoundError:
        raise UsageError(f"{what} not found", path) from None
    except OSError as exc:
        raise UsageError(f"{what} cannot be read ({exc.strerror or exc})", path) from None
    except UsageError as exc:
        raise UsageError(f"{what} {exc.message}", path) from None


def read_plan(path: Path) -> Plan:
    """Read and validate ``plan.json``.

    Raises:
        UsageError: missing, unreadable, or not an lrtool plan.
    """
    doc = read_json_capped(path, "plan file")
    try:
        if not isinstance(doc, dict) or doc.get("lrtool_plan") != PLAN_VERSION:
            raise ValueError("not an lrtool plan (lrtool_plan: 1)")
        world = doc["world"]
        if not isinstance(world, int) or world < 1:
            raise ValueError("world must be a positive integer")
        assignment = [[WorkItem.from_list(it) for it in items] for items in doc["assignment"]]
        if len(assignment) != world:
            raise ValueError(f"assignment has {len(assignment)} tasks, world is {world}")
        plan = Plan(str(doc["command"]), world, str(doc["cwd"]), doc["spec"], assignment, str(doc["id"]))
        if not isinstance(plan.spec, dict):
            raise ValueError("spec must be an object")
    except (KeyError, TypeError, ValueError) as exc:
        raise UsageError(f"not a valid lrtool plan file ({exc})", path) from None
    if plan_id(plan.command, plan.world, plan.cwd, plan.spec) != plan.id:
        raise UsageError("plan file was modified after it was written (its id does not match its content)", path)
    return plan


def _publish(path: Path, text: str) -> bool:
    """Create ``path`` with ``text`` unless it exists; True when this call created it.

    The content goes to a temporary file first and is hard-linked into place, so readers never see a
    partial plan and of two concurrent writers exactly one wins.
    """
    import tempfile

    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".lrtool-tmp-", suffix="-" + path.name, dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        try:
            os.link(tmp, path)
        except FileExistsError:
            return False
        return True
    finally:
        try:
            os.unlink(tmp)
        except OSError:
            pass


def load_or_create(run_dir: Path, command: str, world: int, spec: dict,
                   sizer: Callable[[dict], list[DatasetSize]], *, cwd: str | None = None) -> Plan:
    """The run's plan: the one already in ``run_dir`` when it is the same run, else a new one.

    ``sizer(spec)`` is called only when no plan exists yet. Safe when many tasks start at once: all of
    them end up with the plan of the first writer.

    Raises:
        UsageError: ``run_dir`` holds the plan of a different run (other command, targets, options, task
            count or launching directory), or it cannot be written.
    """
    run_dir = Path(run_dir)
    cwd = cwd or os.getcwd()
    pid = plan_id(command, world, cwd, spec)
    path = run_dir / PLAN_FILE
    if not path.exists():
        sizes = sizer(spec)
        plan = Plan(command, world, cwd, spec, partition(sizes, world), pid)
        try:
            _publish(path, json.dumps(plan.to_dict()) + "\n")  # ASCII: a non-UTF-8 file name round-trips
        except OSError as exc:
            raise UsageError(f"cannot write the plan ({exc.strerror or exc})", path) from None
    existing = read_plan(path)
    if existing.id != pid:
        what = ("command" if existing.command != command else "number of tasks" if existing.world != world
                else "launching directory" if existing.cwd != cwd else "targets or options")
        raise UsageError(f"holds a different run (its {what} differ); use a new --logging-dir / part folder, "
                         "or the same arguments to resume it", run_dir)
    return existing


def write_render(run_dir: Path, render: dict) -> None:
    """Record how the merged result is printed (``--format`` and command-specific options), atomically."""
    from lerobot_tools._io import atomic_write_text

    try:
        atomic_write_text(Path(run_dir) / RENDER_FILE, json.dumps(render) + "\n")
    except OSError as exc:
        raise UsageError(f"cannot write {RENDER_FILE} ({exc.strerror or exc})", run_dir) from None


def read_render(run_dir: Path) -> dict:
    """The render options recorded in ``run_dir`` (empty when none were recorded)."""
    path = Path(run_dir) / RENDER_FILE
    if not path.exists():
        return {}
    doc = read_json_capped(path, "render options file")
    return doc if isinstance(doc, dict) else {}
