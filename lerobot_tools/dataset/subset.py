"""What a target is: a dataset plus an optional episode subset, and the files that subset reads.

A mixture entry (:mod:`lerobot_tools.dataset.mixture`) may name ``episodes`` (only these; None = all) and
``excluded_episodes`` (never these); an episode is wanted when it is in the first (or the first is None) and
not in the second. A copy that holds only those episodes (what a subset ``lrtool prefetch`` leaves) is the same
target: its metadata still lists every episode, the files of the others are simply not there.

:func:`files_read` is the one answer every command gives to "which files does this target read": ``validate``
(files outside it that are absent are "not requested", never an error), ``smoke`` (through validate, then the
loaders), ``diagnose-decode`` (the videos it probes), ``prefetch`` (the files a subset fetches, and what
``--offline`` judges on disk); :class:`~lerobot_tools.loaders.MixtureDataset` reads exactly these files
(``tests/dataset/test_target_subsets.py`` holds them to it). ``reshard`` and ``repair`` rewrite whole files and act on
the dataset as a whole.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable

from lerobot_tools.findings import episode_list_text


@dataclass(frozen=True)
class EpisodeSubset:
    """The episodes one target wants.

    Attributes:
        episodes: the requested episode indices in the order given, or None for all.
        excluded: episode indices never wanted.
    """

    episodes: tuple[int, ...] | None = None
    excluded: frozenset[int] = frozenset()

    def __post_init__(self) -> None:
        # membership in O(1): wants() is asked per episode and per file of long episode lists
        object.__setattr__(self, "_requested", frozenset(self.episodes) if self.episodes is not None else None)

    @classmethod
    def of(cls, target: Any) -> EpisodeSubset:
        """The subset of a :class:`~lerobot_tools.dataset.targets.Target` (or a mixture entry): its
        ``episodes`` and ``excluded_episodes`` lists (None = not given)."""
        eps = getattr(target, "episodes", None)
        return cls(tuple(eps) if eps is not None else None, frozenset(getattr(target, "excluded_episodes", None) or ()))

    @classmethod
    def union(cls, subsets: Iterable[EpisodeSubset], available: Iterable[int]) -> EpisodeSubset:
        """One subset wanting every episode that any of ``subsets`` wants (the whole dataset when one of them is
        whole). ``available``: the dataset's episode indices, for subsets given by exclusion only."""
        subsets = list(subsets)
        if not subsets or any(s.whole for s in subsets):
            return cls()
        have = list(available)
        wanted: set[int] = set()
        for s in subsets:
            wanted.update(s.select(have))
        return cls(tuple(sorted(wanted)))

    @property
    def whole(self) -> bool:
        """True when every episode is wanted (no ``episodes`` list and nothing excluded)."""
        return self.episodes is None and not self.excluded

    def wants(self, episode_index: int) -> bool:
        """Whether ``episode_index`` is wanted."""
        if episode_index in self.excluded:
            return False
        return self._requested is None or episode_index in self._requested

    def reads(self, file_episodes: Iterable[int]) -> bool:
        """Whether a file holding ``file_episodes`` (a data parquet or an mp4, from the episode metadata) is read:
        every file when the subset is whole, else a file holding at least one wanted episode."""
        return self.whole or any(self.wants(e) for e in file_episodes)

    def select(self, available: Iterable[int]) -> list[int]:
        """The wanted episodes: the requested list (in its order) or ``available`` (all of them), minus the
        excluded ones. Requested episodes are not checked against ``available``."""
        base = self.episodes if self.episodes is not None else available
        return [e for e in base if e not in self.excluded]

    def describe(self) -> str | None:
        """The subset in words for report headings (``"episodes 0-2"``, ``"episodes 0-9 except 3"``, ``"every
        episode except 4, 7"``); None when whole."""
        if self.whole:
            return None
        if self.episodes is None:
            return f"every episode except {episode_list_text(sorted(self.excluded))}"
        text = f"episodes {episode_list_text(sorted(set(self.episodes)))}" if self.episodes else "no episodes"
        dropped = sorted(self.excluded & set(self.episodes))
        return text + (f" except {episode_list_text(dropped)}" if dropped else "")

    def to_dict(self) -> dict[str, list[int]]:
        """``{"episodes": [...], "excluded_episodes": [...]}`` (keys given only), for JSON reports."""
        out: dict[str, list[int]] = {}
        if self.episodes is not None:
            out["episodes"] = list(self.episodes)
        if self.excluded:
            out["excluded_episodes"] = sorted(self.excluded)
        return out


@dataclass
class TargetFiles:
    """The data and video files of a dataset, split by whether a target's subset reads them.

    Attributes:
        data, videos: the files read (:class:`~lerobot_tools.dataset.model.DataFile` /
            :class:`~lerobot_tools.dataset.model.VideoFile`, in the model's order).
        data_unread, videos_unread: the files the metadata references that hold no wanted episode.
    """

    data: list
    videos: list
    data_unread: list
    videos_unread: list


def files_read(ds: Any, subset: EpisodeSubset | None = None, *, data: bool = True, videos: bool = True) -> TargetFiles:
    """The files a target reads: every data and video file the episode metadata references that holds a wanted
    episode (:meth:`EpisodeSubset.reads`); v2.x has one file per episode, v3.0 one file per
    ``(chunk_index, file_index)`` listed in ``meta/episodes``. This is what lrtool's loaders open for the subset
    (:func:`lerobot_tools.loaders.frames.data_files_of` and the video index of
    :class:`~lerobot_tools.loaders.FrameDataset`).

    Args:
        ds: an opened :class:`~lerobot_tools.dataset.model.Dataset`.
        subset: the target's subset (None = the whole dataset).
        data, videos: list the data files / the video files (the other lists are left empty).

    Raises:
        DatasetError: the episode metadata cannot be read, a path template cannot be expanded, or ``video_path``
            is null while videos are declared (as :meth:`Dataset.data_files` / :meth:`Dataset.video_files`).
    """
    subset = subset or EpisodeSubset()
    out = TargetFiles([], [], [], [])
    for f in ds.data_files() if data else ():
        (out.data if subset.reads(f.episodes) else out.data_unread).append(f)
    for f in ds.video_files() if videos else ():
        (out.videos if subset.reads(f.episodes) else out.videos_unread).append(f)
    return out
