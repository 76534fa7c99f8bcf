"""What the check families share while validating one target: options, the context, and the stop signal.

:class:`ValidateOptions` are the options of ``lrtool validate``; :class:`CheckContext` holds the dataset,
the findings and the coverage gaps recorded so far, and the facts one family establishes for the next
(footers read once per data file, which files are unreadable, whether the episode and task metadata could be
read); :class:`StopChecks` is raised by a family when nothing after it can run. The families and the engine
(:mod:`lerobot_tools.checks.engine`) import this module; it imports no family.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from lerobot_tools.checks import catalogue
from lerobot_tools.checks.content.facts import CurationFacts
from lerobot_tools.checks.content.options import ContentOptions
from lerobot_tools.dataset.footers import FooterInfo
from lerobot_tools.dataset.model import Dataset
from lerobot_tools.dataset.subset import EpisodeSubset
from lerobot_tools.dataset.targets import Target
from lerobot_tools.findings import Finding, NotChecked
from lerobot_tools.sniff import Sniff


@dataclass
class ValidateOptions:
    """Options of ``lrtool validate``.

    Attributes:
        deep: also stream the index/timestamp columns (checks D001-D005).
        tolerance_s: allowed |timestamp - k/fps| for the k-th frame of an episode, in seconds (lerobot default 1e-4).
        select: check IDs to run (None = all); ignore: IDs never reported.
        row_group_mb: reshard target in MB; row groups above twice this are R002.
        world_size: number of ranks for R004 (None = not checked).
        all_videos: probe every video header with PyAV (default: the first file per video key;
            every file is still sniffed and box-walked). Implied by ``deep``.
        content: thresholds of the episode content checks (family Q, with ``deep``); None leaves the family out
            (``lrtool repair`` validates without it: nothing there is repaired mechanically).
        camera_frames: decoded frames sampled per episode and camera for Q011-Q014 (0: not run).
    """

    deep: bool = False
    tolerance_s: float = 1e-4
    select: set[str] | None = None
    ignore: set[str] = field(default_factory=set)
    row_group_mb: float = 32.0
    world_size: int | None = None
    all_videos: bool = False
    content: ContentOptions | None = field(default_factory=ContentOptions)
    camera_frames: int = 0


class CheckContext:
    """State shared by the families while validating one target."""

    def __init__(self, target: Target, options: ValidateOptions, observer: Any):
        self.target = target
        self.options = options
        #: reads the deep scans and video probes: a :class:`lerobot_tools.checks.observer.FileObserver`
        self.observer = observer
        self.dataset: Dataset | None = None
        self.findings: list[Finding] = []
        self.not_checked: list[NotChecked] = []
        #: readable data files: relpath -> footer
        self.footers: dict[str, FooterInfo] = {}
        #: data files referenced by the metadata that are missing or unreadable
        self.bad_data_files: set[str] = set()
        #: set by the episodes family: the metadata could be read
        self.episodes_ok = False
        #: False when some episode-metadata rows are malformed (counts derived from the rows are incomplete)
        self.episodes_complete = True
        #: why the episode metadata cannot be used (one line naming the file), for "not checked" notes
        self.episodes_cause: str | None = None
        self.tasks_ok = False
        #: data files the metadata references (set by the files family)
        self.data_files: list = []
        #: without episode metadata: the data files found from data_path and the folders on disk
        #: (:class:`lerobot_tools.dataset.ondisk.LayoutFiles`), else None
        self.data_layout: Any = None
        #: every placeholder file seen (relpath -> sniff), for the causes said once at the top of the report
        self.placeholders: dict[str, Sniff] = {}
        #: set by the statistics family: what the deep pass needs to compare stored statistics with the data
        #: (:class:`lerobot_tools.checks.stats.meta.StatsFacts`), None when it did not run
        self.stats_facts = None
        #: set by the video family: readable video files, relpath -> (VideoFile, VideoProbe, header read)
        self.video_probes: dict = {}
        #: set by the deep family for the timestamp audit: episodes whose timestamp column was read, and per
        #: episode the rows whose timestamp is off k / fps (positions, seconds); whether some were not kept
        self.timestamps_read: set[int] = set()
        self.timestamps_off: dict[int, tuple[list[int], list[float]]] = {}
        self.timestamps_truncated = False
        #: missing referenced files found under a neighbouring layout (found path -> expected path): they are
        #: named by F001/F002, never reported again as unreferenced (F003)
        self.relocated: dict[str, str] = {}
        #: the episodes the target reads (:class:`lerobot_tools.dataset.subset.EpisodeSubset`): files of the others
        #: that are absent or placeholders are "not requested" (:func:`lerobot_tools.checks.targets.not_requested`)
        self.subset = EpisodeSubset.of(target)
        #: what the keep-list writer and the mixture-wide duplicate search need (set by the content family and
        #: the engine), carried on the report
        self.curation = CurationFacts()
        #: the copy's download marker (:mod:`lerobot_tools.dataset.downloads`), None for a complete copy
        self.download = None

    def not_downloaded(self, episodes: list[int]) -> bool:
        """True when a file holding ``episodes`` is absent because the copy is marked as not downloaded yet
        (``lrtool prefetch --meta-only``) and it holds none of the episodes fetched since."""
        return self.download is not None and not self.download.downloaded(episodes)

    # -------------------------------------------------------------- selection
    def enabled(self, *check_ids: str) -> bool:
        """True if any of ``check_ids`` is selected and not ignored."""
        sel, ign = self.options.select, self.options.ignore
        return any((sel is None or c in sel) and c not in ign for c in check_ids)

    def family_enabled(self, letter: str) -> bool:
        return self.enabled(*[c for c in catalogue.CATALOGUE if c.startswith(letter)])

    # -------------------------------------------------------------- output
    def emit(self, check_id: str, message: str, path: str | None = None, *,
             severity: str | None = None, group: str | None = None, episodes: Any = (), **subject: Any) -> None:
        """Record a finding of ``check_id`` (dropped when the check is not selected).

        Args:
            message: one line, specific to this occurrence.
            path: file concerned, relative to the dataset root.
            severity: overrides the catalogue severity (the message must say why).
            group: findings of one check with the same key are merged into one (count + first paths).
            episodes: the episodes this occurrence concerns when its message says nothing else (a file's
                episodes): a group of them is headed by its title and every episode it concerns
                (:attr:`lerobot_tools.findings.Finding.episodes`).
            subject: what the finding is about (``feature=``, ``video_key=``, ``episode=``, ``task=``,
                ``key=``, ``file_kind=``; see :data:`lerobot_tools.findings.SUBJECT_KEYS`); None values are
                left out.

        Raises:
            ValueError: an unknown subject key (a programming error).
        """
        if not self.enabled(check_id):
            return
        sev = severity or catalogue.get(check_id).severity
        subj = {k: v for k, v in subject.items() if v is not None}
        self.findings.append(Finding(check_id, sev, path, message, group=group, subject=subj,
                                     episodes=tuple(episodes or ())))

    def skip(self, checks: str, reason: str) -> None:
        """Record that ``checks`` (IDs or a family description) did not run, and why."""
        if any(n.checks == checks and n.reason == reason for n in self.not_checked):
            return
        self.not_checked.append(NotChecked(checks, reason))


class StopChecks(Exception):
    """Raised by a family when nothing after it can run (e.g. unknown codebase_version)."""

    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason
