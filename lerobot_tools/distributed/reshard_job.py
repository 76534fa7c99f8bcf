"""``lrtool reshard`` as a distributed job.

Every data file is resharded on its own (:func:`lerobot_tools.reshard.write.reshard_file`), so a large dataset
splits naturally by file: each task rewrites the files it owns, atomically and verified, exactly as one
process would. Two rules keep tasks from touching each other's files:

- a file's stale temporary files (``.lrtool-tmp-*-<file name>`` next to it, left by a killed run) are removed
  by the task that owns the file, just before it rewrites it;
- the task owning the dataset's head removes the other stale temporary files of the dataset (those no data
  file owns) and returns the dataset's result shell (version, notes, errors) and the loader order of its files.

The tasks of a split dataset hold its write lock together (:func:`lerobot_tools._lock.shared_dataset_lock`), so
another lrtool run writing the dataset (a repair, another reshard) is locked out while any of them writes; a
dataset that is one work item takes the lock exclusively, as the single-process command does.

The merge assembles the per-dataset results in the single-process order (a dataset named twice is processed
once and noted) and recomputes the shard counts, giving the report and exit status of ``lrtool reshard``.
"""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path
from typing import IO, Any

from lerobot_tools.distributed.partition import DatasetSize
from lerobot_tools.distributed.plan import sizes_by_file, target_from_dict, target_to_dict


def make_spec(targets: list, options) -> dict[str, Any]:
    """The plan spec of a reshard run: resolved targets and :class:`~lerobot_tools.reshard.ReshardOptions`."""
    return {"targets": [target_to_dict(t) for t in targets], "options": asdict(options)}


def _options(spec: dict):
    from lerobot_tools.reshard.model import ReshardOptions

    return ReshardOptions(**spec["options"])


def _first_seen(targets: list) -> list[int | None]:
    """For each target, the earlier target with the same resolved root (what ``reshard_resolved`` skips)."""
    seen: dict[str, int] = {}
    out: list[int | None] = []
    for i, t in enumerate(targets):
        key = str(Path(t.root).resolve()) if t.root else None
        out.append(seen.get(key) if key is not None else None)
        if key is not None and key not in seen:
            seen[key] = i
    return out


def _owner(temp: Path, files: list[tuple[str, str, list[int]]]) -> str | None:
    """The data file (relpath) a temporary file was written for, if any."""
    for path, rel, _ in files:
        p = Path(path)
        if temp.parent == p.parent and temp.name.endswith("-" + p.name):
            return rel
    return None


def _remove_temps(root: Path, temps: list[Path], dry_run: bool) -> list[str]:
    import contextlib

    out = []
    for t in temps:
        if dry_run:
            out.append(str(t.relative_to(root)))
            continue
        with contextlib.suppress(OSError):
            t.unlink()
            out.append(str(t.relative_to(root)))
    return out


def _shared_lock(target, options):
    """The dataset's write lock, shared with the other tasks of this run (nothing on a dry run)."""
    import contextlib

    from lerobot_tools._lock import shared_dataset_lock

    if options.dry_run or target.root is None or not Path(target.root).is_dir():
        return contextlib.nullcontext()
    return shared_dataset_lock(target.root, timeout=options.lock_timeout, what="resharding")


def _dataset_from_dict(d: dict):
    from lerobot_tools.distributed.jobs import dataclass_from_dict
    from lerobot_tools.reshard.model import DatasetResult

    return dataclass_from_dict(DatasetResult, d)


class ReshardJob:
    """See the module docstring."""

    command = "reshard"

    def sizes(self, spec: dict) -> list[DatasetSize]:
        targets = [target_from_dict(t) for t in spec["targets"]]
        # a duplicate is skipped; a dataset's error is reported by the task that owns it
        return sizes_by_file(targets, lambda ds: [df.relpath for df in ds.data_files()],
                             skip=[dup is not None for dup in _first_seen(targets)])

    def run_dataset(self, spec: dict, index: int) -> dict | None:
        from lerobot_tools.reshard.run import reshard_resolved

        targets = [target_from_dict(t) for t in spec["targets"]]
        if _first_seen(targets)[index] is not None:
            return None  # processed with its first occurrence
        run = reshard_resolved([targets[index]], _options(spec), progress=False)
        return asdict(run.datasets[0])

    def run_head(self, spec: dict, index: int) -> dict:
        from lerobot_tools import _io
        from lerobot_tools.errors import LrtoolError
        from lerobot_tools.reshard.model import DatasetResult
        from lerobot_tools.reshard.run import prepare_dataset

        target = target_from_dict(spec["targets"][index])
        options = _options(spec)
        try:
            with _shared_lock(target, options):
                dres, files = prepare_dataset(target, options, clean_temps=False)
                removed: list[str] = []
                if target.root is not None and Path(target.root).is_dir():
                    root = Path(target.root)
                    strays = [t for t in _io.clean_stale_temps(root, dry_run=True) if _owner(t, files) is None]
                    removed = _remove_temps(root, strays, options.dry_run)
        except LrtoolError as exc:  # locked by another run: the dataset fails, as in one process
            dres = DatasetResult(target=target.spec, root=str(target.root) if target.root else None,
                                 error=exc.within(target.root))
            return {"dataset": asdict(dres), "files": [], "removed": []}
        return {"dataset": asdict(dres), "files": [rel for _, rel, _ in files], "removed": removed}

    def run_files(self, spec: dict, index: int, relpaths: list[str]) -> dict:
        from lerobot_tools.errors import LrtoolError
        from lerobot_tools.reshard.model import FileResult

        target = target_from_dict(spec["targets"][index])
        options = _options(spec)
        try:
            with _shared_lock(target, options):
                return self._rewrite(target, options, relpaths)
        except LrtoolError as exc:  # locked by another run: these files fail, untouched
            return {"results": {rel: asdict(FileResult(dataset=target.spec, relpath=rel, error=str(exc)))
                                for rel in relpaths}, "removed": []}

    def _rewrite(self, target, options, relpaths: list[str]) -> dict:
        from lerobot_tools.reshard.model import FileResult
        from lerobot_tools.reshard.run import prepare_dataset
        from lerobot_tools.reshard.write import reshard_file

        _, files = prepare_dataset(target, options, clean_temps=False)
        by_rel = {rel: (path, eps) for path, rel, eps in files}
        results: dict[str, Any] = {}
        removed: list[str] = []
        root = Path(target.root) if target.root is not None else None
        for rel in relpaths:
            if rel not in by_rel:  # the metadata changed since the plan: say so, touch nothing
                results[rel] = asdict(FileResult(dataset=target.spec, relpath=rel,
                                                 error="no longer referenced by the episode metadata"))
                continue
            path, eps = by_rel[rel]
            p = Path(path)
            mine = [t for t in p.parent.glob(".lrtool-tmp-*") if t.is_file() and t.name.endswith("-" + p.name)]
            if root is not None:
                removed += _remove_temps(root, mine, options.dry_run)
            results[rel] = asdict(reshard_file(p, rel, options, dataset=target.spec, expected_episodes=eps))
        return {"results": results, "removed": removed}

    def merge(self, spec: dict, datasets: list) -> Any:
        from lerobot_tools.reshard.model import DatasetResult, FileResult, ReshardRun, ShardCount

        options = _options(spec)
        targets = [target_from_dict(t) for t in spec["targets"]]
        first = _first_seen(targets)
        run = ReshardRun(options=options)
        for d, t, dup in zip(datasets, targets, first):
            if dup is not None:
                dres = DatasetResult(target=t.spec, root=str(t.root))
                dres.notes.append(f"same dataset as {run.datasets[dup].target}: processed once")
                run.datasets.append(dres)
                continue
            if not d.split:
                run.datasets.append(_dataset_from_dict(d.whole))
                continue
            dres = _dataset_from_dict(d.head["dataset"])
            results: dict[str, Any] = {}
            removed = list(d.head.get("removed") or [])
            for _, res in d.files:
                results.update(res["results"])
                removed += res.get("removed") or []
            dres.files = [FileResult(**results[rel]) for rel in d.head["files"] if rel in results]
            dres.removed_temps = sorted(removed)
            if not dres.error and dres.files:
                counts = [f.row_groups_after if f.row_groups_after is not None else f.row_groups_before
                          for f in dres.files]
                dres.shards = ShardCount(options.world_size, len(dres.files), sum(c for c in counts if c is not None),
                                         sum(1 for c in counts if c is None))
            run.datasets.append(dres)
        run.seconds = sum(f.seconds for f in run.files())
        return run

    def report(self, result: Any, render: dict, out: IO[str]) -> int:
        """Print as ``lrtool reshard`` does (JSON: failures also on stderr); return its exit status."""
        import sys

        from lerobot_tools.reshard import errors, exit_status, render_json, render_text

        if render.get("format") == "json":
            render_json(result, out)
            for line in errors(result):
                print(f"lrtool: error: {line}", file=sys.stderr)
        else:
            render_text(result, out, verbose=bool(render.get("verbose")))
        return exit_status(result)


JOB = ReshardJob()
