"""``lrtool reencode``: re-encode a dataset's videos (e.g. AV1 to H.264 for an H100, whose NVDEC has no AV1),
keeping every frame and its timestamp, verified before each file is replaced, resumable, with ``--undo``.

Modules: :mod:`.settings` (defaults for training with their sources, encoder choice, NVENC notes), :mod:`.transcode`
(encode one file keeping every PTS; verify frame count, every timestamp, decodability and a PSNR floor),
:mod:`.backup` (originals moved into ``.lrtool/reencode/``, the atomic swap, undo), :mod:`.run` (datasets -> files
-> worker processes, ``info.json`` per camera), :mod:`.nvenc` (whether NVENC opens here), :mod:`.model` (options
and results), :mod:`.render` (the text report). docs/video-decoding.md#reencode says what it does and why.
"""

from __future__ import annotations

from lerobot_tools.reencode.model import DatasetResult, FileResult, ReencodeOptions, ReencodeRun
from lerobot_tools.reencode.run import reencode, reencode_resolved

__all__ = ["DatasetResult", "FileResult", "ReencodeOptions", "ReencodeRun", "reencode", "reencode_resolved",
           "undo_targets"]


def undo_targets(target_args: list[str]) -> list:
    """``lrtool reencode --undo``: restore every re-encode of each target (:func:`lerobot_tools.reencode.backup.undo`),
    holding the dataset's write lock. Returns one :class:`~lerobot_tools.reencode.backup.UndoReport` per target.

    Raises:
        UsageError: an unreadable mixture file.
    """
    from pathlib import Path

    from lerobot_tools._lock import dataset_lock
    from lerobot_tools.dataset.targets import resolve_targets
    from lerobot_tools.errors import LrtoolError
    from lerobot_tools.reencode.backup import UndoReport, undo

    out = []
    for t in resolve_targets(list(target_args)):
        rep = UndoReport(t.spec, str(t.root) if t.root else None)
        if t.error or t.root is None:
            rep.error = t.error or "the target could not be resolved"
        else:
            try:
                with dataset_lock(Path(t.root), what="undoing a re-encode"):
                    undo(Path(t.root), rep)
            except LrtoolError as exc:
                rep.error = exc.within(t.root)
        out.append(rep)
    return out
