"""``lrtool reencode`` as a distributed job.

Work items are video files, weighed by their frame count (the MP4 sample count, read from the box headers; the file
size where it is unknown), so a task gets about as many frames to encode as the others. Each file is re-encoded,
verified and swapped in by the task that owns it, exactly as one process does
(:func:`lerobot_tools.reencode.run.reencode_one`; each file's own stale temporary files are removed just before).
The tasks of a split dataset hold its write lock together (:func:`lerobot_tools._lock.shared_dataset_lock`), so
another lrtool run writing the dataset waits; each task, once its files are done, updates ``info.json`` for every
camera whose files are now all done (:func:`lerobot_tools.reencode.run.update_info`: idempotent, under a lock of its
own), so the last task to finish a camera updates it. The merge assembles the per-dataset results in the
single-process order.
"""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path
from typing import IO, Any

from lerobot_tools.distributed.partition import DatasetSize
from lerobot_tools.distributed.plan import target_from_dict, target_to_dict


def make_spec(targets: list, options) -> dict[str, Any]:
    """The plan spec of a reencode run: resolved targets and :class:`~lerobot_tools.reencode.ReencodeOptions`."""
    return {"targets": [target_to_dict(t) for t in targets], "options": asdict(options)}


def _options(spec: dict):
    from lerobot_tools.reencode.model import ReencodeOptions

    return ReencodeOptions(**spec["options"])


def _frames(path: Path) -> int:
    from lerobot_tools.video.mp4 import walk_mp4

    try:
        n = walk_mp4(path).frame_count
        return int(n) if n else max(1, path.stat().st_size // 4096)
    except Exception:  # noqa: BLE001 - sizing never fails a run: the owning task reports the file
        return 1


def _dataset_from_dict(d: dict):
    from lerobot_tools.distributed.jobs import dataclass_from_dict
    from lerobot_tools.reencode.model import DatasetResult

    return dataclass_from_dict(DatasetResult, d)


class ReencodeJob:
    """See the module docstring."""

    command = "reencode"

    def sizes(self, spec: dict) -> list[DatasetSize]:
        from lerobot_tools.dataset.model import Dataset

        out = []
        seen: set[str] = set()
        for raw in spec["targets"]:
            t = target_from_dict(raw)
            key = str(Path(t.root).resolve()) if t.root else None
            if t.error or t.root is None or key in seen:
                out.append(DatasetSize(1))
                continue
            seen.add(key)
            try:
                ds = Dataset(t.root)
                files = tuple((vf.relpath, _frames(ds.path(vf.relpath))) for vf in ds.video_files())
            except Exception:  # noqa: BLE001 - the task that owns the dataset reports it
                out.append(DatasetSize(1))
                continue
            out.append(DatasetSize(sum(n for _, n in files) + 1, files, 1))
        return out

    def run_dataset(self, spec: dict, index: int) -> dict | None:
        from lerobot_tools.reencode.run import reencode_resolved

        targets = [target_from_dict(t) for t in spec["targets"]]
        t = targets[index]
        if t.root is not None and any(o.root is not None and Path(o.root).resolve() == Path(t.root).resolve()
                                      for o in targets[:index]):
            return None  # processed with its first occurrence
        run = reencode_resolved([t], _options(spec), progress=False)
        return {"dataset": asdict(run.datasets[0]), "encoder": run.encoder, "notes": run.notes}

    def run_head(self, spec: dict, index: int) -> dict:
        from lerobot_tools.reencode.model import DatasetResult

        t = target_from_dict(spec["targets"][index])
        dres = DatasetResult(target=t.spec, root=str(t.root) if t.root else None)
        return {"dataset": asdict(dres)}

    def run_files(self, spec: dict, index: int, relpaths: list[str]) -> dict:
        import contextlib

        from lerobot_tools._lock import shared_dataset_lock
        from lerobot_tools.errors import LrtoolError
        from lerobot_tools.reencode.backup import new_run_dir
        from lerobot_tools.reencode.model import FileResult, ReencodeRun
        from lerobot_tools.reencode.run import _gpu, tidy, pick_encoder, plan_dataset, reencode_one, update_info

        t = target_from_dict(spec["targets"][index])
        shell = ReencodeRun(options=_options(spec))
        gpu = _gpu(shell.options, shell)
        options = pick_encoder(shell)
        encoder = shell.encoder
        lock = contextlib.nullcontext() if options.dry_run or t.root is None else \
            shared_dataset_lock(t.root, timeout=options.lock_timeout, what="re-encoding")
        results: dict[str, Any] = {}
        updated: list[str] = []
        try:
            with lock:
                run_dir = new_run_dir(Path(t.root)) if t.root is not None and options.keep_originals else None
                dres, work = plan_dataset(t, options, encoder, gpu, index, None, run_dir, only=set(relpaths),
                                          clean=False)
                for f in dres.files:
                    results[f.relpath] = asdict(f)
                if not options.dry_run:
                    for w in work:
                        results[w.relpath] = asdict(reencode_one(w))
                    if t.root is not None and not dres.error:
                        updated = update_info(Path(t.root), options, run_dir)
                    tidy(run_dir)
                if dres.error:
                    for rel in relpaths:
                        results.setdefault(rel, asdict(FileResult(rel, "", "failed", reason=dres.error)))
        except LrtoolError as exc:  # locked by another run: these files fail, untouched
            for rel in relpaths:
                results[rel] = asdict(FileResult(rel, "", "failed", reason=exc.within(t.root)))
        return {"results": results, "info_updated": updated, "encoder": encoder, "notes": shell.notes}

    def merge(self, spec: dict, datasets: list) -> Any:
        from lerobot_tools.reencode.model import DatasetResult, FileResult, ReencodeRun

        options = _options(spec)
        targets = [target_from_dict(t) for t in spec["targets"]]
        run = ReencodeRun(options=options)
        for d, t in zip(datasets, targets):
            if not d.split:
                if d.whole is None:
                    run.datasets.append(DatasetResult(target=t.spec, root=str(t.root),
                                                      notes=["same dataset as an earlier target: processed once"]))
                    continue
                run.datasets.append(_dataset_from_dict(d.whole["dataset"]))
                run.encoder = run.encoder or d.whole.get("encoder")
                run.notes = run.notes or d.whole.get("notes") or []
                continue
            dres = _dataset_from_dict(d.head["dataset"])
            results: dict[str, Any] = {}
            for relpaths, res in d.files:
                results.update(res["results"])
                dres.info_updated = sorted(set(dres.info_updated) | set(res.get("info_updated") or []))
                run.encoder = run.encoder or res.get("encoder")
                run.notes = run.notes or res.get("notes") or []
            order = [rel for relpaths, _ in d.files for rel in relpaths]
            dres.files = [FileResult(**results[rel]) for rel in sorted(order) if rel in results]
            run.datasets.append(dres)
        run.seconds = sum(f.seconds for f in run.files())
        return run

    def report(self, result: Any, render: dict, out: IO[str]) -> int:
        """Print as ``lrtool reencode`` does; return its exit status."""
        import json
        import sys

        if render.get("format") == "json":
            json.dump(result.to_dict(), out, indent=2, ensure_ascii=False, default=str)
            out.write("\n")
        else:
            result.render_text(out)
        for line in result.error_lines():
            print(f"lrtool: error: {line}", file=sys.stderr)
        return result.exit_status


JOB = ReencodeJob()
