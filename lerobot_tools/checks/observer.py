"""How the check families read the two expensive per-file facts, so a caller can record or replay them.

The families call ``ctx.observer.scan_file(...)`` (the ``--deep`` column scan of a data file) and
``ctx.observer.probe_video(...)`` (a video's header probe) instead of reading directly; the engine passes a
:class:`FileObserver`, which reads from disk. :mod:`lerobot_tools.distributed.validate_job` subclasses it to
record these facts in the task that owns a file and to replay them when the parts of a dataset split across
tasks are merged, so the merged report is exactly the one a single process gives.
"""

from __future__ import annotations

from lerobot_tools.checks.deep import scan_file
from lerobot_tools.video.probe import probe_video


class FileObserver:
    """How the families read the two expensive per-file facts: the ``--deep`` column scan of a data file
    and the header probe of a video file.

    This default calls :func:`lerobot_tools.checks.deep.scan_file` and
    :func:`lerobot_tools.video.probe.probe_video` directly (see the module docstring).
    """

    def scan_file(self, rel: str, path, **kwargs):
        """The deep scan of data file ``rel`` (``kwargs`` as :func:`~lerobot_tools.checks.deep.scan_file`).

        Raises:
            Exception: what the scan raises for unreadable data pages (the caller reports it).
        """
        return scan_file(path, **kwargs)

    def probe_video(self, rel: str, path, *, pyav: bool, sniffed):
        """The :class:`~lerobot_tools.video.probe.VideoProbe` of video file ``rel`` (never raises)."""
        return probe_video(path, pyav=pyav, sniffed=sniffed)
