"""``lrtool repair`` as one library call over many targets: :func:`repair_targets` (like
:func:`lerobot_tools.reshard.reshard`), returning a :class:`RepairRun`."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import IO, Any, Iterable

from lerobot_tools import exitcodes
from lerobot_tools.errors import LrtoolError
from lerobot_tools.repair.model import RepairOptions


@dataclass
class RepairRun:
    """What ``lrtool repair`` ends with (:class:`lerobot_tools.exitcodes.CommandResult`).

    Attributes:
        results: one :class:`~lerobot_tools.repair.apply.RepairResult` (or
            :class:`~lerobot_tools.repair.apply.UndoResult` with ``undo``) per distinct dataset, in order.
        undo: the run restored backups (``--undo``).
        dry_run: nothing was written.
        verbose: the text report lists every file, cell and move (``--verbose``).
    """

    results: list = field(default_factory=list)
    undo: bool = False
    dry_run: bool = False
    verbose: bool = False

    @property
    def exit_status(self) -> int:
        """The worst per-dataset status: 0 all fixed, 1 errors remain or a repair failed, 2 could not run."""
        return max((r.status for r in self.results), default=exitcodes.OK)

    def to_dict(self) -> dict[str, Any]:
        """The JSON document (docs/output.md): ``datasets`` (:mod:`lerobot_tools.repair.diff`), ``summary``
        (:func:`~lerobot_tools.exitcodes.status_summary`), ``exit_status``, ``undo`` and ``dry_run``."""
        from lerobot_tools.repair import diff

        to = diff.undo_to_dict if self.undo else diff.result_to_dict
        return exitcodes.document("repair", [to(r) for r in self.results],
                                  exitcodes.status_summary([r.status for r in self.results]), self.exit_status,
                                  undo=self.undo, dry_run=self.dry_run)

    def render_text(self, out: IO[str], *, color: bool = False) -> None:
        """Each dataset's report (:func:`~lerobot_tools.repair.diff.render_result` / ``render_undo``), then the
        summary line."""
        from lerobot_tools.repair import diff

        for r in self.results:
            (diff.render_undo if self.undo else diff.render_result)(r, out, verbose=self.verbose)
        word = "undo" if self.undo else ("dry run" if self.dry_run else "repair")
        out.write(f"Summary: {word} of {len(self.results)} dataset(s), exit status {self.exit_status}\n")


#: said on a dataset named with an episode subset: repair rewrites whole files, for every episode
WHOLE_DATASET_NOTE = "the target's episode subset is ignored: repair checks and rewrites the whole dataset"


def whole_dataset(target):
    """``target`` without its episode subset (``episodes``/``excluded_episodes``), with
    :data:`WHOLE_DATASET_NOTE` among its notes when it had one: repair and undo act on the dataset as a whole
    (its files hold every episode), as reshard does."""
    import dataclasses

    from lerobot_tools.dataset.subset import EpisodeSubset

    if EpisodeSubset.of(target).whole:
        return target
    return dataclasses.replace(target, episodes=None, excluded_episodes=None,
                               notes=[*target.notes, WHOLE_DATASET_NOTE])


def repair_targets(target_args: Iterable[str], options: RepairOptions | None = None, *, dry_run: bool = False,
                   undo: bool = False) -> RepairRun:
    """Resolve TARGET arguments (folders, repo ids in ``$HF_LEROBOT_HOME``, mixture files) and repair (or, with
    ``undo``, restore the latest backup of) each distinct dataset once, in order.

    Raises:
        LrtoolError: a mixture file cannot be read, or a dataset could not be processed at all (the message
            starts with its TARGET); the datasets before it have been processed.
    """
    from lerobot_tools.dataset.targets import duplicate_of, resolve_targets
    from lerobot_tools.repair import repair_target, undo as undo_target

    options = options or RepairOptions()
    resolved = resolve_targets(list(target_args))
    run = RepairRun(undo=undo, dry_run=dry_run)
    for t, dup in zip(resolved, duplicate_of(resolved)):
        if dup is not None:
            continue
        t = whole_dataset(t)
        try:
            run.results.append(undo_target(t, dry_run=dry_run, lock_timeout=options.lock_timeout) if undo
                               else repair_target(t, options, dry_run=dry_run))
        except (LrtoolError, OSError) as exc:
            raise LrtoolError(f"{t.spec}: {exc}") from None
    return run
