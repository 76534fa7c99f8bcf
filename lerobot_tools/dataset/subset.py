"""Which episodes of a dataset a mixture entry asks for: the one rule every command applies.

A mixture entry (:mod:`lerobot_tools.dataset.mixture`) may name ``episodes`` (only these; None = all) and
``excluded_episodes`` (never these); an episode is wanted when it is in the first (or the first is None) and
not in the second.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable


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

    @property
    def whole(self) -> bool:
        """True when every episode is wanted (no ``episodes`` list and nothing excluded)."""
        return self.episodes is None and not self.excluded

    def wants(self, episode_index: int) -> bool:
        """Whether ``episode_index`` is wanted."""
        if episode_index in self.excluded:
            return False
        return self._requested is None or episode_index in self._requested

    def select(self, available: Iterable[int]) -> list[int]:
        """The wanted episodes: the requested list (in its order) or ``available`` (all of them), minus the
        excluded ones. Requested episodes are not checked against ``available``."""
        base = self.episodes if self.episodes is not None else available
        return [e for e in base if e not in self.excluded]
