"""What a local copy holds when ``lrtool prefetch --meta-only`` made it: the marker ``.lrtool/prefetch.json``.

``lrtool prefetch MIXTURE --meta-only`` fetches only ``meta/`` and the dataset card (``README.md``) of every
repo, so that ``lrtool validate`` can judge the episodes before terabytes are downloaded. It then writes this
marker in the copy, so that validate knows the data and videos are *not downloaded yet* (never "missing"):

.. code-block:: json

    {"lrtool_prefetch": 1, "state": "meta-only", "commit": "0123...", "episodes": []}

A later ``lrtool prefetch`` of an episode subset (a keep-list) adds the episodes whose files it fetched
(``"state": "partial"``); a whole-repo prefetch that completes removes the marker (the copy is complete). A data or
video file that is absent and holds none of the recorded episodes is then *not downloaded*, not *missing*. The
marker is a regular JSON file of at most 64 MiB (:func:`lerobot_tools._io.load_json_file`), written atomically;
an unreadable one counts as no marker (the copy is judged complete, as before it existed).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path

from lerobot_tools.errors import LrtoolError

MARKER = ".lrtool/prefetch.json"
META_ONLY = "meta-only"
PARTIAL = "partial"


@dataclass
class DownloadState:
    """A copy's download state.

    Attributes:
        state: :data:`META_ONLY` (only ``meta/`` and the card) or :data:`PARTIAL` (``episodes`` fetched too).
        commit: the snapshot commit the files came from (None when unknown).
        episodes: episodes whose data and video files were fetched.
    """

    state: str
    commit: str | None = None
    episodes: set[int] = field(default_factory=set)

    def downloaded(self, episodes: list[int]) -> bool:
        """True when a file holding ``episodes`` is expected on disk (it holds a fetched episode)."""
        return any(e in self.episodes for e in episodes)

    def describe(self) -> str:
        if self.state == META_ONLY:
            return "a copy made by `lrtool prefetch --meta-only`: only meta/ and the dataset card are downloaded"
        return (f"a partial copy (`lrtool prefetch --meta-only`, then {len(self.episodes)} episode(s) fetched): the "
                "other episodes' files are not downloaded")


def read_state(root: str | os.PathLike) -> DownloadState | None:
    """The marker of the copy at ``root``, None when there is none or it cannot be read."""
    from lerobot_tools._io import load_json_file

    path = Path(root) / MARKER
    if not path.is_file():
        return None
    try:
        doc = load_json_file(path)
        if not isinstance(doc, dict) or doc.get("lrtool_prefetch") != 1 or doc.get("state") not in (META_ONLY, PARTIAL):
            return None
        eps = doc.get("episodes") or []
        commit = doc.get("commit")
        return DownloadState(doc["state"], commit if isinstance(commit, str) else None,
                             {int(e) for e in eps if isinstance(e, int) and not isinstance(e, bool)})
    except (OSError, LrtoolError, TypeError, ValueError):
        return None


def write_state(root: str | os.PathLike, state: DownloadState) -> None:
    """Write the marker atomically (the folder ``.lrtool/`` is created).

    Raises:
        OSError: it cannot be written.
    """
    from lerobot_tools._io import atomic_write_text

    path = Path(root) / MARKER
    path.parent.mkdir(parents=True, exist_ok=True)
    doc = {"lrtool_prefetch": 1, "state": state.state, "commit": state.commit, "episodes": sorted(state.episodes)}
    atomic_write_text(path, json.dumps(doc) + "\n")


def clear_state(root: str | os.PathLike) -> None:
    """Remove the marker (the copy is complete); nothing happens when there is none."""
    try:
        (Path(root) / MARKER).unlink()
    except FileNotFoundError:
        pass
