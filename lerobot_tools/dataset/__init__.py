"""The dataset model shared by every command: targets -> :class:`Dataset`.

* :mod:`.targets` resolves TARGET arguments (folders, repo ids in the local caches, mixture files).
* :mod:`.mixture` reads mixture files (plain text and OpenTau JSON with ``$ref``).
* :mod:`.model` opens a dataset root and reads info.json, episodes, tasks, stats and file lists lazily.
* :mod:`.subset` is the episode-subset rule of a mixture entry (``episodes`` minus ``excluded_episodes``).
* :mod:`.templates` validates and expands ``data_path`` / ``video_path``.
"""

from lerobot_tools.dataset.model import (
    DEFAULT_FEATURES,
    Dataset,
    DataFile,
    Episode,
    TaskTable,
    VideoFile,
    VideoSegment,
    open_dataset,
    parse_codebase_version,
)
from lerobot_tools.dataset.mixture import MixtureEntry, MixtureSpec, parse_episode_spec, read_mixture, read_mixture_spec
from lerobot_tools.dataset.subset import EpisodeSubset
from lerobot_tools.dataset.targets import Target, resolve_repo_id, resolve_target, resolve_targets

__all__ = [
    "DEFAULT_FEATURES", "Dataset", "DataFile", "Episode", "TaskTable", "VideoFile", "VideoSegment",
    "open_dataset", "parse_codebase_version", "MixtureEntry", "MixtureSpec", "parse_episode_spec", "read_mixture",
    "read_mixture_spec", "EpisodeSubset", "Target", "resolve_repo_id", "resolve_target", "resolve_targets",
]
