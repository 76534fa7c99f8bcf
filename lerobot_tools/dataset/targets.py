"""Resolve command-line TARGETs to dataset roots, fully offline.

A TARGET is:

* a **dataset folder** (any existing directory);
* a **mixture file** (any existing regular file; see :mod:`lerobot_tools.dataset.mixture`), expanded
  into its entries;
* a **repo id** ``org/name[@revision]``, looked up without any network request in
  ``$HF_LEROBOT_HOME/<repo_id>`` (the layout LeRobot loaders and ``lrtool prefetch`` use) and in the
  snapshot caches ``$HF_HUB_CACHE/datasets--org--name`` and ``$HF_LEROBOT_HOME/hub/datasets--org--name``
  (lerobot v3 downloads there). In a snapshot cache, a branch or tag (``main``, ``v2.1``, ``v3.0``) is
  resolved through ``refs/<name>``; a full 40-hex commit SHA names ``snapshots/<sha>`` directly; an
  abbreviated hex SHA (7+ chars) matches a unique snapshot prefix. A revision is **never** parsed as a
  codebase version (docs/failure-modes.md#short-shas: ~10 % of short SHAs parse as PEP 440 versions).

Nothing read from a cache leaves it: a revision must be a branch/tag name or a hex SHA
(:func:`lerobot_tools.dataset.mixture.revision_problem`: no absolute path, no ``..`` component); a
``refs/`` file must resolve inside ``refs/``, be a small regular file and hold exactly a 40-hex SHA; the
snapshot folder must resolve (symlinks followed) inside the cache. Anything else is reported as an
unresolved target naming the problem.

A target that cannot be resolved is returned with ``error`` set (reported as finding ``M001``), never
raised; only an unreadable mixture file raises :class:`~lerobot_tools.errors.UsageError`.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field, replace
from pathlib import Path

from lerobot_tools import _env
from lerobot_tools._io import read_text_capped
from lerobot_tools.dataset.mixture import (
    LOOSE_REPO_ID_RE,
    REPO_ID_RE,
    SHA_RE,
    MixtureEntry,
    read_mixture,
    repo_id_problem,
    revision_problem,
    split_repo_revision,
)
from lerobot_tools.errors import LrtoolError

HEX_PREFIX_RE = re.compile(r"^[0-9a-f]{7,39}$")
MAX_REF_FILE_BYTES = 4096


@dataclass
class Target:
    """A dataset to work on, as resolved from a TARGET argument or a mixture entry.

    Attributes:
        spec: the dataset as the user named it: the argument, or the mixture entry's repo id or path (never
            with the entry's options, which are in ``episodes``, ``weight``...; see
            :attr:`lerobot_tools.dataset.mixture.MixtureEntry.spec`).
        root: the resolved dataset folder, or None when unresolved.
        repo_id, revision: as requested (revision may be None).
        commit: the snapshot commit SHA when resolved through a hub cache.
        origin: how it was found: ``"folder"``, ``"lerobot-home"``, ``"hub-cache"``.
        source: the mixture location (``file:line``) it came from, if any.
        episodes, excluded_episodes: requested subset (None = all).
        feature_mapping: OpenTau ``data_features_name_mapping`` to check against features.
        weight: the entry's relative sampling weight, if the mixture gives weights.
        trim: episode -> inclusive frame ranges a loader may leave out (a keep-list's ``trim=``), or None.
        error: why it could not be resolved (None when resolved).
        notes: informational remarks about the resolution (e.g. revision not verifiable).
        entry_index: position of its entry in the mixture file's entries (None for a plain argument).
        extras_key: the entry's other keys (``prompt_substitutions``...), as canonical JSON, for
            :func:`merge_identical`.
    """

    spec: str
    root: Path | None = None
    repo_id: str | None = None
    revision: str | None = None
    commit: str | None = None
    origin: str | None = None
    source: str | None = None
    episodes: list[int] | None = None
    excluded_episodes: list[int] | None = None
    feature_mapping: dict[str, str] | None = None
    weight: float | None = None
    trim: dict[int, list[tuple[int, int]]] | None = None
    error: str | None = None
    error_check: str = "M001"
    notes: list[str] = field(default_factory=list)
    entry_index: int | None = None
    extras_key: str | None = None

    @property
    def label(self) -> str:
        """Short name for reports: the spec, prefixed by its mixture location when it has one."""
        return self.spec


def repo_cache_dirname(repo_id: str) -> str:
    """``org/name`` -> ``datasets--org--name`` (huggingface_hub cache folder naming)."""
    return "datasets--" + repo_id.replace("/", "--")


def _inside(path: Path, root: Path) -> bool:
    """True when ``path`` resolves (symlinks followed) to ``root`` or below it."""
    try:
        real, base = path.resolve(), root.resolve()
    except (OSError, RuntimeError):
        return False
    return real == base or base in real.parents


def _snapshot(snaps: Path, cache: Path, sha: str) -> Path | None:
    """``snaps/<sha>`` when it is a folder that resolves inside ``cache``.

    Raises:
        LrtoolError: the folder exists but resolves outside the cache (a symlink out of it).
    """
    d = snaps / sha
    if not d.is_dir():
        return None
    if not _inside(d, cache):
        raise LrtoolError(f"snapshot folder {d} resolves to {d.resolve()}, outside the cache {cache}; refused")
    return d


def _read_ref(repo_dir: Path, ref: str) -> str | None:
    """The commit SHA a ``refs/<ref>`` file holds, None when there is no such ref.

    Raises:
        LrtoolError: the ref file resolves outside ``refs/``, is not a small regular file, or does not hold
            exactly a 40-hex SHA.
    """
    refs = repo_dir / "refs"
    ref_file = refs / ref
    if not ref_file.exists() and not ref_file.is_symlink():
        return None
    if not _inside(ref_file, refs):
        raise LrtoolError(f"ref {ref!r} resolves outside {refs}; refused", ref_file)
    if ref_file.is_dir():
        return None
    try:
        text = read_text_capped(ref_file, limit=MAX_REF_FILE_BYTES, what="refs/")
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise LrtoolError(f"ref file cannot be read ({exc.strerror or exc})", ref_file) from None
    sha = text.strip()
    if not SHA_RE.match(sha):
        raise LrtoolError(f"ref file does not hold a 40-hex commit SHA ({sha[:60]!r}); refused", ref_file)
    return sha


def resolve_in_hub_cache(cache: Path, repo_id: str, revision: str | None) -> tuple[Path, str] | None:
    """Find ``snapshots/<sha>`` for ``repo_id@revision`` in one hub cache, offline.

    Returns ``(snapshot_dir, commit_sha)`` or None when the cache holds no matching snapshot.
    With no revision, ``refs/main`` is used, else the only snapshot, else None.

    Raises:
        LrtoolError: the revision is not a branch/tag name or SHA, or is ambiguous (an abbreviated SHA matching
            several snapshots); a ref file or snapshot folder leads outside the cache (see module docstring).
    """
    if revision is not None:
        problem = revision_problem(revision)
        if problem:
            raise LrtoolError(problem)
    repo_dir = cache / repo_cache_dirname(repo_id)
    snaps = repo_dir / "snapshots"
    if not snaps.is_dir():
        return None
    if revision and SHA_RE.match(revision):
        d = _snapshot(snaps, cache, revision)
        return (d, revision) if d is not None else None
    ref_names = [revision] if revision else ["main"]
    for ref in ref_names:
        sha = _read_ref(repo_dir, ref)
        if sha is not None:
            d = _snapshot(snaps, cache, sha)
            if d is not None:
                return d, sha
    if revision and HEX_PREFIX_RE.match(revision):
        matches = sorted(p for p in snaps.iterdir() if p.is_dir() and p.name.startswith(revision))
        if len(matches) == 1:
            d = _snapshot(snaps, cache, matches[0].name)
            return (d, matches[0].name) if d is not None else None
        if len(matches) > 1:
            raise LrtoolError(f"abbreviated revision {revision!r} matches {len(matches)} snapshots; give the full SHA", repo_dir)
    if revision is None:
        all_snaps = sorted(p for p in snaps.iterdir() if p.is_dir())
        if len(all_snaps) == 1:
            d = _snapshot(snaps, cache, all_snaps[0].name)
            return (d, all_snaps[0].name) if d is not None else None
    return None


def resolve_repo_id(repo_id: str, revision: str | None = None) -> Target:
    """Resolve a repo id in the local caches (see module docstring), offline.

    With a revision, a hub-cache snapshot of that revision is preferred; ``$HF_LEROBOT_HOME/<repo_id>``
    holds a single unversioned copy, so it is used when no snapshot matches, with a note that the
    revision could not be checked (lerobot itself ignores the revision when a local copy loads,
    docs/failure-modes.md#local-copy-wins).
    """
    spec = repo_id + (f"@{revision}" if revision else "")
    target = Target(spec=spec, repo_id=repo_id, revision=revision)
    if revision is not None and revision_problem(revision):
        target.error, target.error_check = revision_problem(revision), "M002"
        return target
    home = _env.lerobot_home() / repo_id
    home_ok = (home / "meta" / "info.json").is_file()
    if not revision and home_ok:
        target.root, target.origin = home, "lerobot-home"
        return target
    searched = [str(home)]
    for cache in _env.hub_caches():
        searched.append(str(cache / repo_cache_dirname(repo_id)))
        try:
            found = resolve_in_hub_cache(cache, repo_id, revision)
        except LrtoolError as exc:
            target.error = str(exc)
            return target
        if found:
            target.root, target.commit = found
            target.origin = "hub-cache"
            return target
    if home_ok:
        target.root, target.origin = home, "lerobot-home"
        target.notes.append(
            f"revision {revision!r} not found in a hub cache; using the unversioned local copy {home} "
            "(its revision cannot be verified offline)"
        )
        return target
    target.error = "not found in the local caches (looked in " + ", ".join(searched) + "); run `lrtool prefetch` first"
    return target


def _from_entry(entry: MixtureEntry, index: int | None = None) -> Target:
    found = _resolve_entry(entry)
    found.entry_index = index
    if entry.extras:
        found.extras_key = json.dumps(entry.extras, sort_keys=True, default=str)
    return found


def _resolve_entry(entry: MixtureEntry) -> Target:
    base = Target(spec=entry.spec, source=entry.source, repo_id=entry.repo_id, revision=entry.revision,
                  episodes=entry.episodes, excluded_episodes=entry.excluded_episodes,
                  feature_mapping=entry.feature_mapping, weight=entry.weight, trim=entry.trim)
    if entry.error:
        base.error, base.error_check = entry.error, "M002"
        return base
    if entry.root is not None:
        return _folder_target(base, entry.root)
    assert entry.repo_id is not None
    found = resolve_repo_id(entry.repo_id, entry.revision)
    found.spec, found.source = base.spec, base.source
    found.episodes, found.excluded_episodes = base.episodes, base.excluded_episodes
    found.feature_mapping, found.weight, found.trim = base.feature_mapping, base.weight, base.trim
    return found


def _folder_target(target: Target, path: Path) -> Target:
    try:
        is_dir = path.is_dir()
        exists = is_dir or path.exists()
    except OSError as exc:  # e.g. a symlink loop on some platforms
        target.error = f"folder cannot be read ({exc.strerror or exc})"
        return target
    if not exists:
        if path.is_symlink():
            target.error = f"{path} is a dangling or looping symlink"
        else:
            target.error = f"folder {path} does not exist"
        return target
    if not is_dir:
        target.error = f"{path} is not a folder"
        return target
    target.root, target.origin = path, "folder"
    return target


def resolve_target(arg: str) -> list[Target]:
    """Resolve one TARGET argument to one or more targets (a mixture file gives one per entry).

    Raises:
        UsageError: the argument is a mixture file that cannot be read or parsed.
    """
    path = Path(arg).expanduser()
    if path.is_dir():
        return [_folder_target(Target(spec=arg), path)]
    if path.is_file():
        return [_from_entry(e, i) for i, e in enumerate(read_mixture(path))]
    repo, rev = split_repo_revision(arg)
    if REPO_ID_RE.match(repo) and not arg.startswith((".", "/", "~")):
        return [resolve_repo_id(repo, rev)]
    t = Target(spec=arg)
    if LOOSE_REPO_ID_RE.match(repo) and not arg.startswith((".", "/", "~")):
        t.error, t.error_check = repo_id_problem(repo), "M002"
    elif path.is_symlink():
        t.error = "is a dangling or looping symlink"
    else:
        t.error = "no such folder or mixture file, and not a repo id of the form org/name[@revision]"
    return [t]


def resolve_targets(args: list[str]) -> list[Target]:
    """Resolve every TARGET argument, in order (see :func:`resolve_target`)."""
    out: list[Target] = []
    for arg in args:
        out.extend(resolve_target(arg))
    return out


def duplicate_of(targets: list[Target]) -> list[int | None]:
    """For each target, the position of the first earlier target naming the same dataset, else None.

    A mixture may name one dataset several times (one entry per camera, or two episode subsets); commands
    that change files work on each dataset once. Two resolved targets are the same dataset when their roots
    are the same real folder (symlinks and ``..`` resolved); two unresolved targets when their specs are
    equal (the same request fails the same way).

    Returns:
        A list as long as ``targets``: None for a first occurrence, else the index of that occurrence.
    """
    first: dict[str, int] = {}
    out: list[int | None] = []
    for i, t in enumerate(targets):
        key = str(Path(t.root).resolve()) if t.root is not None else f"?{t.spec}"
        out.append(first.get(key))
        first.setdefault(key, i)
    return out



#: how many other locations of identical entries a report note names
MAX_DUPLICATE_SOURCES = 3


def merge_identical(targets: list[Target]) -> list[Target]:
    """``targets`` with identical entries merged: each distinct request once, in first-occurrence order.

    Two targets are identical when they name the same dataset (the same real folder, symlinks and ``..``
    resolved; or, unresolved, the same spec failing the same way) with the same request: the same ``episodes``,
    ``excluded_episodes``, ``data_features_name_mapping``, ``weight`` and other entry keys. A mixture of
    10,000 lines naming 100 datasets is then validated and reported as 100 targets. Entries that name one
    dataset with different requests (two episode subsets) stay apart: each is checked against its request.

    The kept target is a copy whose ``notes`` say how many identical entries it stands for and where the
    first of the others are; ``targets`` itself is not changed. Cost: one ``realpath`` per distinct folder
    string, then a dictionary lookup per target.
    """
    real: dict[str, str] = {}
    first: dict[tuple, int] = {}
    kept: list[Target] = []
    others: list[list[str]] = []
    for t in targets:
        if t.root is not None:
            raw = str(t.root)
            if raw not in real:
                try:
                    real[raw] = str(Path(raw).resolve())
                except (OSError, RuntimeError):
                    real[raw] = raw
            where: tuple = ("root", real[raw], t.commit)
        else:
            where = ("unresolved", t.spec, t.error)
        key = (where,
               tuple(t.episodes) if t.episodes is not None else None,
               tuple(t.excluded_episodes) if t.excluded_episodes is not None else None,
               tuple(sorted(t.feature_mapping.items())) if t.feature_mapping else None,
               t.weight, t.extras_key,
               tuple(sorted((e, tuple(r)) for e, r in t.trim.items())) if t.trim else None)
        pos = first.get(key)
        if pos is None:
            first[key] = len(kept)
            kept.append(t)
            others.append([])
        else:
            others[pos].append(t.source or t.spec)
    out = []
    for t, dups in zip(kept, others):
        if dups:
            shown = ", ".join(dups[:MAX_DUPLICATE_SOURCES]) + (
                f" and {len(dups) - MAX_DUPLICATE_SOURCES} more" if len(dups) > MAX_DUPLICATE_SOURCES else "")
            t = replace(t, notes=[*t.notes, f"named by {len(dups) + 1} identical entries; also at {shown} "
                                              "(checked and reported once)"])
        out.append(t)
    return out
