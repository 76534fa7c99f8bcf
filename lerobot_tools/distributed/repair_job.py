"""``lrtool repair`` as a distributed job.

A repair is one transaction per dataset (validate, plan, one backup, atomic verified writes, validate again,
roll back if worse; ``--undo`` restores that backup), so a dataset is never split across tasks: work items
are whole datasets, balanced by bytes. A dataset named twice is repaired once (as the single-process command
does). Each task renders its datasets' reports as the command prints them; the merge prints them in target
order, then the summary line, and exits with the worst status.

One difference with the single-process run, on purpose: that run stops at the first dataset it cannot process
(exit 2) and never touches the later ones, while the tasks of a distributed run have already processed every
dataset; the merged report shows all of them, then the first such error, and still exits 2.
"""

from __future__ import annotations

from dataclasses import asdict
from typing import IO, Any

from lerobot_tools.distributed.partition import DatasetSize
from lerobot_tools.distributed.plan import target_from_dict, target_to_dict


def make_spec(targets: list, options, *, dry_run: bool, undo: bool) -> dict[str, Any]:
    """The plan spec: the unique resolved targets (first occurrences), repair options, dry run, undo."""
    from lerobot_tools.dataset.targets import duplicate_of

    unique = [t for t, dup in zip(targets, duplicate_of(targets)) if dup is None]
    opts = {k: sorted(v) if isinstance(v, (set, frozenset)) else v for k, v in asdict(options).items()}
    return {"targets": [target_to_dict(t) for t in unique], "options": opts, "dry_run": dry_run, "undo": undo}


def _options(spec: dict):
    from lerobot_tools.repair import RepairOptions

    from dataclasses import fields

    sets = {f.name for f in fields(RepairOptions) if "set" in str(f.type)}
    d = {k: set(v) if k in sets and v is not None else v for k, v in spec["options"].items()}
    return RepairOptions(**d)


def _du(root) -> int:
    import os

    total = 0
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames if d not in (".git", ".lrtool")]
        for n in filenames:
            try:
                total += os.lstat(os.path.join(dirpath, n)).st_size
            except OSError:
                pass
    return total


class RepairJob:
    """See the module docstring."""

    command = "repair"

    def sizes(self, spec: dict) -> list[DatasetSize]:
        out = []
        for raw in spec["targets"]:
            t = target_from_dict(raw)
            out.append(DatasetSize(max(1, _du(t.root)) if t.root is not None and not t.error else 1))
        return out

    def run_dataset(self, spec: dict, index: int) -> dict:
        import io

        from lerobot_tools.errors import LrtoolError
        from lerobot_tools.repair import diff, repair_target, undo

        t = target_from_dict(spec["targets"][index])
        try:
            if spec["undo"]:
                res = undo(t, dry_run=spec["dry_run"], lock_timeout=_options(spec).lock_timeout)
                doc, render = diff.undo_to_dict(res), diff.render_undo
            else:
                res = repair_target(t, _options(spec), dry_run=spec["dry_run"])
                doc, render = diff.result_to_dict(res), diff.render_result
        except (LrtoolError, OSError) as exc:
            return {"fatal": f"{t.spec}: {exc}"}
        buf = io.StringIO()
        render(res, buf)
        return {"status": res.status, "json": doc, "text": buf.getvalue()}

    def run_head(self, spec: dict, index: int) -> None:  # never split (see the module docstring)
        return None

    def run_files(self, spec: dict, index: int, relpaths: list[str]) -> None:
        return None

    def merge(self, spec: dict, datasets: list) -> dict:
        return {"undo": spec["undo"], "dry_run": spec["dry_run"], "datasets": [d.whole for d in datasets]}

    def report(self, result: dict, render: dict, out: IO[str]) -> int:
        """Print as ``lrtool repair`` does; the first dataset that could not be processed ends it with exit 2."""
        import sys

        from lerobot_tools.exitcodes import document, status_summary
        from lerobot_tools.repair import diff

        done = [d for d in result["datasets"] if "fatal" not in d]
        fatal = next((d["fatal"] for d in result["datasets"] if "fatal" in d), None)
        status = max([d["status"] for d in done], default=0)
        if render.get("format") == "json":
            if fatal is None:
                summary = status_summary([d["status"] for d in done])
                out.write(diff.dumps(document("repair", [d["json"] for d in done], summary, status,
                                              undo=result["undo"], dry_run=result["dry_run"])))
        else:
            for d in done:
                out.write(d["text"])
            if fatal is None:
                word = "undo" if result["undo"] else ("dry run" if result["dry_run"] else "repair")
                out.write(f"Summary: {word} of {len(done)} dataset(s), exit status {status}\n")
        if fatal is not None:
            print(f"lrtool: error: {fatal}", file=sys.stderr)
            return 2
        return status


JOB = RepairJob()
