"""Which repos a mixture needs, where they go, and exactly which files each one needs.

Mixture entries (:func:`lerobot_tools.dataset.mixture.read_mixture`) are grouped into one
:class:`RepoJob` per ``(repo_id, destination)``, so a repo named twice (two episode subsets, or a
subset and the whole repo) is fetched once with the union of what the entries need.

File selection works on sets of exact repo paths, never glob patterns (``snapshot_download``'s
``allow_patterns`` filter is O(files x patterns) and treats ``[`` ``?`` ``*`` in paths as wildcards;
huggingface_hub ``utils/_paths.py`` ``filter_repo_objects``; docs/prefetch.md#requests):

* whole-repo entry: every file of the tree listing;
* episode subset, v2.x (one file per episode): everything under ``meta/`` plus, for each selected
  episode, its parquet (``data_path``) and one mp4 per camera (``video_path``);
* episode subset, v3.0 (many episodes per file): everything under ``meta/`` plus the data and video
  files that ``meta/episodes`` says hold the selected episodes, each once;
* ``--meta-only``: everything under ``meta/`` and the dataset card ``README.md``, nothing else (the copy is
  marked, :mod:`lerobot_tools.dataset.downloads`, so that validate knows what is not downloaded yet).

The layout is read with the foundation :class:`~lerobot_tools.dataset.model.Dataset` model from the
``meta/`` files on disk, so subsets are planned after ``meta/`` has been fetched.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from lerobot_tools import _env
from lerobot_tools.dataset.mixture import SHA_RE, MixtureEntry, revision_reason
from lerobot_tools.dataset.subset import EpisodeSubset, files_read
from lerobot_tools.errors import LrtoolError
from lerobot_tools.prefetch.local import TreeFile

DEFAULT_REVISION = "main"
META_PREFIX = "meta/"


@dataclass
class RepoJob:
    """One repo to fetch into one destination folder.

    Attributes:
        repo_id: ``org/name``, or None for a local-folder entry (nothing to fetch).
        revision: branch, tag or 40-hex commit SHA as written (default ``main``); never parsed as a version.
        dest: destination folder (``$HF_LEROBOT_HOME/<repo_id>``, ``--local-dir-root/<repo_id>`` or the
            entry's own ``root``).
        sources: mixture locations (``file:line``) of the entries merged into this job.
        selectors: what each entry wants; any whole-repo selector makes the job whole-repo.
        error: why the job cannot run (malformed entry, conflicting revisions), else None.
    """

    repo_id: str | None
    revision: str
    dest: Path
    sources: list[str] = field(default_factory=list)
    specs: list[str] = field(default_factory=list)
    selectors: list[EpisodeSubset] = field(default_factory=list)
    error: str | None = None

    @property
    def key(self) -> str:
        """Lock-file key: ``org/name@revision``."""
        return f"{self.repo_id}@{self.revision}" if self.repo_id else str(self.dest)

    @property
    def whole(self) -> bool:
        return any(s.whole for s in self.selectors)

    @property
    def is_local(self) -> bool:
        return self.repo_id is None

    @property
    def revision_is_sha(self) -> bool:
        return bool(SHA_RE.match(self.revision))


def destination(repo_id: str, local_dir_root: Path | None) -> Path:
    """Where LeRobot loaders look for ``repo_id``: ``<root>/<repo_id>``, root = ``--local-dir-root`` or
    ``$HF_LEROBOT_HOME`` (lerobot ``HF_LEROBOT_HOME / repo_id``)."""
    base = Path(local_dir_root) if local_dir_root is not None else _env.lerobot_home()
    return base / repo_id


def plan_jobs(entries: list[MixtureEntry], local_dir_root: Path | None = None) -> list[RepoJob]:
    """Group mixture entries into :class:`RepoJob` s (first-appearance order).

    A malformed entry, an invalid revision (:func:`~lerobot_tools.dataset.mixture.revision_reason`) or a repo id
    with a ``.``/``..`` component becomes a job with ``error`` set (and no request is made for it). Two entries that put
    different revisions of a repo into the same folder conflict: the later one gets ``error``.
    """
    jobs: list[RepoJob] = []
    by_dest: dict[Path, RepoJob] = {}
    for e in entries:
        sel = EpisodeSubset.of(e)
        if e.error:
            jobs.append(RepoJob(e.repo_id, e.revision or DEFAULT_REVISION, e.root or Path(e.spec), [e.source],
                                [e.spec], [sel], error=e.error))
            continue
        if e.repo_id is None:
            assert e.root is not None
            jobs.append(RepoJob(None, e.revision or DEFAULT_REVISION, e.root, [e.source], [e.spec], [sel]))
            continue
        dest = Path(e.root) if e.root is not None else destination(e.repo_id, local_dir_root)
        revision = e.revision or DEFAULT_REVISION
        msg = None
        if (why := revision_reason(revision)) is not None:
            msg = f"invalid revision {revision!r}: {why} (a revision is a branch or tag name, or a 40-hex commit SHA)"
        elif any(part in (".", "..") for part in e.repo_id.split("/")):
            msg = f"invalid repo id {e.repo_id!r}: a '.' or '..' component"
        if msg is not None:
            jobs.append(RepoJob(e.repo_id, revision, dest, [e.source], [e.spec], [sel], error=msg))
            continue
        key = dest.absolute()
        job = by_dest.get(key)
        if job is not None and job.repo_id == e.repo_id and job.revision == revision:
            job.sources.append(e.source)
            job.specs.append(e.spec)
            job.selectors.append(sel)
            continue
        new = RepoJob(e.repo_id, revision, dest, [e.source], [e.spec], [sel])
        if job is not None:
            new.error = (f"{dest} is already the destination of {job.repo_id}@{job.revision} "
                         f"({job.sources[0]}); one folder cannot hold two revisions")
        else:
            by_dest[key] = new
        jobs.append(new)
    return jobs


def meta_files(tree: dict[str, TreeFile]) -> set[str]:
    """Every file under ``meta/`` (info, tasks, episodes, stats): what any subset needs first."""
    return {p for p in tree if p.startswith(META_PREFIX)}


#: the dataset card at the repo root (its YAML front matter states the licence; Hub "Dataset Cards" docs)
CARD = "README.md"


def meta_only_files(tree: dict[str, TreeFile]) -> set[str]:
    """What ``--meta-only`` fetches: :func:`meta_files` and the dataset card :data:`CARD` when the repo has one."""
    return meta_files(tree) | ({CARD} if CARD in tree else set())


def wanted_episodes(ds, selectors: list[EpisodeSubset]) -> tuple[set[int], list[str]]:
    """The episodes of the :class:`~lerobot_tools.dataset.model.Dataset` ``ds`` that ``selectors`` want (their
    union), and one-line problems for requested episodes the metadata does not list.

    Raises:
        DatasetError: the episode metadata cannot be read.
    """
    known = set(ds.episode_indices)
    wanted: set[int] = set()
    problems: list[str] = []
    for s in selectors:
        if s.episodes is None:
            wanted |= {i for i in known if s.wants(i)}
        else:
            missing = sorted(i for i in s.episodes if i not in known)
            if missing:
                shown = ", ".join(map(str, missing[:10])) + (" ..." if len(missing) > 10 else "")
                problems.append(f"episodes {shown} are not in the dataset's episode metadata")
            wanted |= {i for i in s.episodes if i in known and s.wants(i)}
    return wanted, problems


def episode_files(dest: Path, selectors: list[EpisodeSubset]) -> tuple[set[str], list[str]]:
    """Data and video files holding the selected episodes, read from ``dest/meta``.

    Args:
        dest: dataset root with its ``meta/`` files on disk.
        selectors: the subsets wanted (union).

    Returns:
        ``(relpaths, problems)``: the files (each once) and one-line problems (episodes that the
        metadata does not list).

    Raises:
        LrtoolError: the metadata cannot be read (missing/malformed ``meta/info.json`` or episodes),
            or the codebase version is unknown.
    """
    from lerobot_tools.dataset.model import Dataset

    ds = Dataset(dest)
    if ds.layout not in ("v2", "v3"):
        raise LrtoolError(f"codebase_version {ds.codebase_version!r} is not v2.x or v3.0; cannot map episodes to files",
                          "meta/info.json")
    wanted, problems = wanted_episodes(ds, selectors)
    read = files_read(ds, EpisodeSubset(tuple(sorted(wanted))))  # what the loaders of these entries read
    return {f.relpath for f in read.data} | {f.relpath for f in read.videos}, problems
