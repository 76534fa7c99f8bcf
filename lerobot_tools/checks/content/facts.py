"""What validate learns about a dataset's episodes for curation: kept with its report, never in its JSON.

:class:`CurationFacts` is filled while one target is validated (the episode list from the metadata, the
trimmable frames of Q003, the duplicate signatures, and every finding that names an episode, before findings are
grouped) and travels on :attr:`lerobot_tools.findings.DatasetReport.curation`. The keep-list writer
(:mod:`lerobot_tools.keeplist`) and the mixture-wide duplicate search (Q010) read it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class EpisodeFinding:
    """A finding that names one episode (ungrouped): ``check``, ``severity`` and its one-line ``message``."""

    episode: int
    check: str
    severity: str
    message: str


@dataclass
class CurationFacts:
    """See module docstring.

    Attributes:
        episodes: every episode index of the episode metadata, in metadata order (empty when unreadable).
        lengths: episode -> frames (metadata ``length``).
        trims: episode -> ``(head, tail)``: still frames a loader may drop at the start and at the end (Q003).
        signatures: ``(episode, Signature)`` of every episode whose content was read and that is not frozen.
        dims: the number of content dimensions the signatures cover (None: no content read).
        findings: every finding naming an episode (:class:`EpisodeFinding`), in the order raised.
        downloaded: None for a complete copy; for a copy made by ``lrtool prefetch --meta-only`` (and
            completed for some episodes since), the set of episodes whose files were fetched.
        license: the ``license:`` the dataset card (README.md front matter) states, or None.
    """

    episodes: list[int] = field(default_factory=list)
    lengths: dict[int, int] = field(default_factory=dict)
    trims: dict[int, tuple[int, int]] = field(default_factory=dict)
    signatures: list[tuple[int, Any]] = field(default_factory=list)
    dims: int | None = None
    findings: list[EpisodeFinding] = field(default_factory=list)
    downloaded: set[int] | None = None
    license: str | None = None
