"""The plan of a distributed run: what the command is, and which work items each task owns.

A run directory (``--logging-dir``, or the folder of ``--part-out``) holds:

- ``plan.json``: the command, its resolved targets and options (``spec``), the number of tasks
  (``world``), the launching directory (``cwd``; tasks run there, so relative dataset paths resolve the
  same on every node of a shared file system) and the assignment of work items to tasks. It is written
  once, by the first process that gets there (an atomic hard link, which fails when the file exists);
  every later task and every re-run reads that one, so the partition cannot change under a command that
  rewrites files. It carries the run's identity (``run``: 128 random bits drawn when the plan is written)
  and the digest of its request (``request``: SHA-256 of the command, spec, world and cwd): a different
  request pointed at the same directory is refused instead of mixing results, and every part and the
  render file must carry the same two values (:mod:`lerobot_tools.distributed.parts`).
- ``render.json``: how the launching command wanted the merged result printed (``--format``, the findings of
  a ``--baseline``), for this run only.
- ``parts/part-RRRRR.json``: one part result per task (:mod:`lerobot_tools.distributed.parts`).

Nothing recorded in a run folder names a file lrtool writes outside it: an output outside the folder (a
``--write-baseline`` file, the prefetch lock file) is taken from the command line of the process that writes
it. What the plan names outside the folder (the datasets, the mixture) is read, never written, by
``lrtool report``; the tasks that write datasets (reshard, repair) run only a plan whose request digest equals
the one their own command line gives.

Every file read here is a regular file (not a symlink to one when it is found in the run folder) of at most
:data:`MAX_JSON_BYTES`, and validated; task counts are at most :data:`MAX_TASKS`; problems raise
:class:`~lerobot_tools.errors.UsageError` with one line naming the file.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any, Callable

from lerobot_tools.dataset.targets import Target
from lerobot_tools.distributed.partition import MAX_TASKS, DatasetSize, WorkItem, partition
from lerobot_tools.errors import UsageError

PLAN_FILE = "plan.json"
RENDER_FILE = "render.json"
PARTS_DIR = "parts"
PLAN_VERSION = 2
RENDER_VERSION = 1
#: plan, part and render files above this size are refused (the cap of every JSON file lrtool parses)
MAX_JSON_BYTES = 64 << 20
RUN_ID_RE = re.compile(r"[0-9a-f]{32}")
DIGEST_RE = re.compile(r"[0-9a-f]{64}")


@dataclass
class Plan:
    """A distributed run (see the module docstring).

    Attributes:
        command: ``"validate"``, ``"reshard"``, ... (a key of :data:`lerobot_tools.distributed.jobs.JOBS`).
        world: number of tasks (1 to :data:`MAX_TASKS`).
        cwd: absolute launching directory; tasks run there.
        spec: the command's resolved targets and options (JSON, see each job module).
        assignment: per rank, the work items it owns.
        id: the run's identity, 32 hex digits drawn at random when the plan was written.
        request: :func:`request_digest` of (command, world, cwd, spec), 64 hex digits.
    """

    command: str
    world: int
    cwd: str
    spec: dict
    assignment: list[list[WorkItem]]
    id: str
    request: str

    def to_dict(self) -> dict[str, Any]:
        return {"lrtool_plan": PLAN_VERSION, "run": self.id, "request": self.request, "command": self.command,
                "world": self.world, "cwd": self.cwd, "spec": self.spec,
                "assignment": [[it.to_list() for it in items] for items in self.assignment],
                "bytes": [sum(it.bytes for it in items) for items in self.assignment]}


def request_digest(command: str, world: int, cwd: str, spec: dict) -> str:
    """The digest of a run's request: SHA-256 (hex) of the canonical JSON of ``[command, world, cwd, spec]``."""
    raw = json.dumps([command, world, cwd, spec], sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(raw.encode("utf-8", "surrogatepass")).hexdigest()  # a non-UTF-8 file name too


def new_run_id() -> str:
    """A fresh run identity: 128 random bits as 32 hex digits (:func:`secrets.token_hex`)."""
    import secrets

    return secrets.token_hex(16)


def check_world(world: Any, what: str = "world") -> int:
    """``world`` as a task count: an integer from 1 to :data:`MAX_TASKS`.

    Raises:
        ValueError: anything else (the message names ``what``).
    """
    if type(world) is not int or not 1 <= world <= MAX_TASKS:
        raise ValueError(f"{what} must be an integer from 1 to {MAX_TASKS:,}, got {str(world)[:40]}")
    return world


def part_path(run_dir: Path, rank: int) -> Path:
    """Where task ``rank`` writes its part result: ``RUN_DIR/parts/part-RRRRR.json``."""
    return Path(run_dir) / PARTS_DIR / f"part-{rank:05d}.json"


def safe_relpath(path: Any) -> bool:
    """True when ``path`` is a plain relative POSIX path below its root: not empty, not absolute, no ``..``,
    ``.`` or empty component, no backslash or control character."""
    if not isinstance(path, str) or not path or path.startswith("/") or "\\" in path:
        return False
    if any(ord(c) < 32 or ord(c) == 127 for c in path):
        return False
    return all(part not in ("", ".", "..") for part in path.split("/"))


def check_assignment(assignment: list[list[WorkItem]], n_targets: int) -> None:
    """Check that an assignment deals every target exactly once: each dataset is one ``"dataset"`` item, or one
    ``"head"`` item plus ``"file"`` items with distinct safe relative paths; no dataset outside the targets.

    Raises:
        ValueError: the first problem found (one line).
    """
    whole: set[int] = set()
    heads: set[int] = set()
    files: set[tuple[int, str]] = set()
    for rank, items in enumerate(assignment):
        for it in items:
            if not 0 <= it.dataset < n_targets:
                raise ValueError(f"rank {rank} is assigned dataset {it.dataset}, the run has {n_targets}")
            if it.bytes < 0:
                raise ValueError(f"rank {rank} has an item of {it.bytes} bytes")
            if it.kind == "file":
                if not safe_relpath(it.path):
                    raise ValueError(f"rank {rank} is assigned a file path that is not a plain relative path: "
                                     f"{str(it.path)[:80]!r}")
                key = (it.dataset, it.path)
                if key in files:
                    raise ValueError(f"file {it.path!r} of dataset {it.dataset} is assigned twice")
                files.add(key)
                continue
            if it.path is not None:
                raise ValueError(f"rank {rank} has a {it.kind} item with a path")
            seen = whole if it.kind == "dataset" else heads
            if it.dataset in whole or it.dataset in heads:
                raise ValueError(f"dataset {it.dataset} is assigned twice")
            seen.add(it.dataset)
    if whole | heads != set(range(n_targets)):
        missing = sorted(set(range(n_targets)) - whole - heads)
        raise ValueError(f"dataset(s) {missing[:8]} are assigned to no task")
    stray = sorted({d for d, _ in files} - heads)
    if stray:
        raise ValueError(f"dataset {stray[0]} has file items but no head item")


def spec_targets(spec: Any) -> int:
    """The number of targets of a plan spec (its ``targets`` list).

    Raises:
        ValueError: ``spec`` is not an object with a ``targets`` list.
    """
    if not isinstance(spec, dict) or not isinstance(spec.get("targets"), list):
        raise ValueError("spec must be an object with a 'targets' list")
    return len(spec["targets"])


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

def refuse_link(path: Path, what: str) -> None:
    """Refuse a file of the run folder that is a symbolic link (it could name any file, e.g. another run's).

    Raises:
        UsageError: ``path`` is a symbolic link.
    """
    if Path(path).is_symlink():
        raise UsageError(f"{what} is a symbolic link; a run folder's files must be in it", path)


def read_json_capped(path: Path, what: str, *, limit: int = MAX_JSON_BYTES, link_ok: bool = False) -> Any:
    """Parse a JSON file of the run folder with :func:`lerobot_tools._io.load_json_file` (a regular file of at
    most ``limit`` bytes, nested at most ``MAX_JSON_DEPTH`` levels; not a symbolic link unless ``link_ok``).

    Raises:
        UsageError: missing, refused, too large, unreadable or not JSON (message names ``path`` and ``what``).
    """
    from lerobot_tools._io import load_json_file

    path = Path(path)
    if not link_ok:
        refuse_link(path, what)
    try:
        return load_json_file(path, path, limit=limit, error=UsageError)
    except FileNotFoundError:
        raise UsageError(f"{what} not found", path) from None
    except OSError as exc:
        raise UsageError(f"{what} cannot be read ({exc.strerror or exc})", path) from None
    except UsageError as exc:
        raise UsageError(f"{what} {exc.message}", path) from None


def read_plan(path: Path) -> Plan:
    """Read and validate ``plan.json``: its format, run identity, request digest (which must match its content),
    task count (at most :data:`MAX_TASKS`), command and assignment (:func:`check_assignment`).

    Raises:
        UsageError: missing, a symbolic link, unreadable, too large, or not a valid lrtool plan (one line).
    """
    from lerobot_tools.distributed.jobs import JOBS

    doc = read_json_capped(path, "plan file")
    try:
        if not isinstance(doc, dict) or doc.get("lrtool_plan") != PLAN_VERSION:
            if isinstance(doc, dict) and doc.get("lrtool_plan") == 1:
                raise ValueError("written by an older lrtool (plan format 1); start the run again in a new folder")
            raise ValueError(f"not an lrtool plan (lrtool_plan: {PLAN_VERSION})")
        world = check_world(doc.get("world"))
        for key, rx in (("run", RUN_ID_RE), ("request", DIGEST_RE)):
            if not isinstance(doc.get(key), str) or not rx.fullmatch(doc[key]):
                raise ValueError(f"{key!r} is missing or malformed")
        command, cwd = doc.get("command"), doc.get("cwd")
        if command not in JOBS:
            raise ValueError(f"unknown command {str(command)[:40]!r}")
        if not isinstance(cwd, str):
            raise ValueError("'cwd' is missing or not a string")
        n = spec_targets(doc.get("spec"))
        raw = doc.get("assignment")
        if not isinstance(raw, list) or len(raw) != world:
            raise ValueError(f"assignment must be a list of {world} task(s)")
        assignment = [[WorkItem.from_list(it) for it in items] if isinstance(items, list) else None for items in raw]
        if any(items is None for items in assignment):
            raise ValueError("an assignment entry is not a list")
        check_assignment(assignment, n)
        plan = Plan(command, world, cwd, doc["spec"], assignment, doc["run"], doc["request"])
    except (TypeError, ValueError) as exc:
        raise UsageError(f"not a valid lrtool plan file ({exc})", path) from None
    if request_digest(plan.command, plan.world, plan.cwd, plan.spec) != plan.request:
        raise UsageError("plan file was modified after it was written (its request digest does not match its "
                         "content)", path)
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
    """The run's plan: the one already in ``run_dir`` when it holds the same request, else a new one (with a new
    run identity).

    ``sizer(spec)`` is called only when no plan exists yet. Safe when many tasks start at once: all of
    them end up with the plan of the first writer.

    Raises:
        UsageError: ``world`` is not a task count; ``run_dir`` holds the plan of a different request (other
            command, targets, options, task count or launching directory), or an invalid plan; it cannot be
            written.
    """
    run_dir = Path(run_dir)
    try:
        check_world(world, "the number of tasks")
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    cwd = cwd or os.getcwd()
    digest = request_digest(command, world, cwd, spec)
    path = run_dir / PLAN_FILE
    if not os.path.lexists(path):
        sizes = sizer(spec)
        plan = Plan(command, world, cwd, spec, partition(sizes, world), new_run_id(), digest)
        try:
            _publish(path, json.dumps(plan.to_dict()) + "\n")  # ASCII: a non-UTF-8 file name round-trips
        except OSError as exc:
            raise UsageError(f"cannot write the plan ({exc.strerror or exc})", path) from None
    existing = read_plan(path)
    if existing.request != digest:
        what = ("command" if existing.command != command else "number of tasks" if existing.world != world
                else "launching directory" if existing.cwd != cwd else "targets or options")
        raise UsageError(f"holds a different run (its {what} differ); use a new --logging-dir / part folder, "
                         "or the same arguments to resume it", run_dir)
    return existing


#: what ``render.json`` may hold: ``format`` and, for validate, the fingerprints of a ``--baseline``
RENDER_KEYS = {"format": str, "baseline_known": list}


def write_render(run_dir: Path, plan: Plan, render: dict) -> None:
    """Record how the merged result is printed, for this run (its identity and request digest), atomically.

    Only :data:`RENDER_KEYS` are kept: a run folder never names a file to write.
    """
    from lerobot_tools._io import atomic_write_text

    doc = {"lrtool_render": RENDER_VERSION, "run": plan.id, "request": plan.request,
           **{k: v for k, v in render.items() if k in RENDER_KEYS and v is not None}}
    try:
        atomic_write_text(Path(run_dir) / RENDER_FILE, json.dumps(doc) + "\n")
    except OSError as exc:
        raise UsageError(f"cannot write {RENDER_FILE} ({exc.strerror or exc})", run_dir) from None


def read_render(run_dir: Path, run: str, request: str) -> dict:
    """The render options recorded in ``run_dir`` for the run ``run`` with request digest ``request`` (empty when
    none were recorded).

    Raises:
        UsageError: ``render.json`` is a symbolic link, unreadable, too large, of another run, or holds anything
            but :data:`RENDER_KEYS` of the right types.
    """
    path = Path(run_dir) / RENDER_FILE
    if not os.path.lexists(path):
        return {}
    doc = read_json_capped(path, "render options file")
    if not isinstance(doc, dict) or doc.get("lrtool_render") != RENDER_VERSION:
        raise UsageError(f"not an lrtool render options file (lrtool_render: {RENDER_VERSION})", path)
    if doc.get("run") != run or doc.get("request") != request:
        raise UsageError("render options file belongs to another run", path)
    render = {k: v for k, v in doc.items() if k not in ("lrtool_render", "run", "request")}
    for key, value in render.items():
        typ = RENDER_KEYS.get(key)
        if typ is None or not isinstance(value, typ):
            raise UsageError(f"render options file holds {key!r}, which is not a render option of lrtool", path)
    if render.get("format") not in (None, "text", "json"):
        raise UsageError(f"render options file names format {str(render['format'])[:20]!r}", path)
    if not all(isinstance(x, str) for x in render.get("baseline_known") or []):
        raise UsageError("render options file holds a baseline fingerprint that is not a string", path)
    return render
