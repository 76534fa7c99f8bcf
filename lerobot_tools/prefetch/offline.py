"""``--offline`` (or ``HF_HUB_OFFLINE=1``): report completeness against cached tree listings, with no request."""

from __future__ import annotations

import time
from pathlib import Path

from lerobot_tools import _env
from lerobot_tools.dataset.mixture import SHA_RE
from lerobot_tools.dataset.targets import repo_cache_dirname
from lerobot_tools.errors import LrtoolError
from lerobot_tools.prefetch import local
from lerobot_tools.prefetch.lock import LockFile
from lerobot_tools.prefetch.plan import RepoJob, episode_files, meta_files
from lerobot_tools.prefetch.report import RepoResult, new_result, screen_listing, summarise_paths


MAX_REF_BYTES = 1024


def read_ref(path: Path) -> str | None:
    """The commit a hub-cache ``refs/<name>`` file names: a regular file of at most :data:`MAX_REF_BYTES`
    holding a 40-hex SHA (huggingface_hub writes the bare SHA); anything else gives None."""
    try:
        if not path.is_file():
            return None
        with open(path, "rb") as fh:
            data = fh.read(MAX_REF_BYTES + 1)
    except OSError:
        return None
    if len(data) > MAX_REF_BYTES:
        return None
    sha = data.decode("ascii", "replace").strip()
    return sha if SHA_RE.match(sha) else None


def _offline_commit(job: RepoJob, lock: LockFile | None, res: RepoResult) -> str | None:
    if job.revision_is_sha:
        res.commit_from = "sha"
        return job.revision
    if lock is not None and (c := lock.commit(job.repo_id, job.revision)):
        res.commit_from = "lock"
        return c
    for cache in _env.hub_caches():
        # job.revision is a checked branch/tag name (plan.revision_problem): it stays under refs/
        sha = read_ref(cache / repo_cache_dirname(job.repo_id) / "refs" / job.revision)
        if sha and local.read_tree_cache(job.dest, sha) is not None:
            res.commit_from = "hub-cache-ref"
            return sha
    commits = local.cached_tree_commits(job.dest)
    if commits:
        res.commit_from = "tree-cache"
        if len(commits) > 1:
            res.notes.append(f"no lock entry: checked against the newest of {len(commits)} cached tree listings")
        return commits[0]
    return None


def judge_local(job: RepoJob, res: RepoResult) -> None:
    """Judge a local-folder entry (a path in the mixture: nothing to fetch) by the files its own metadata references.

    The entry is complete when ``meta/info.json``, the episode metadata and the task table read, and every data and
    video file the entries' episodes read (:func:`lerobot_tools.dataset.subset.files_read`, the union of the
    entries' subsets: what validate, smoke and the loaders read) is on disk, non-empty and not a placeholder (a Git
    LFS pointer, an error page). Sets ``res.status`` (``complete`` or ``incomplete``), ``needed``/``present``/
    ``missing`` (in files) and one problem line per kind of absence; reads the first bytes of each file only.
    """
    from lerobot_tools.dataset.model import Dataset
    from lerobot_tools.dataset.placeholders import PLACEHOLDER_CHECKS
    from lerobot_tools.dataset.subset import EpisodeSubset, files_read
    from lerobot_tools.errors import DatasetError
    from lerobot_tools.sniff import sniff

    try:
        ds = Dataset(job.dest)
        if ds.layout not in ("v2", "v3"):
            raise DatasetError(f"codebase_version {ds.codebase_version!r} is not v2.x or v3.0: the files it "
                               "references are unknown", "meta/info.json")
        ds.tasks  # noqa: B018  (every loader reads the task table: a missing or placeholder one is incomplete)
        read = files_read(ds, EpisodeSubset.union(job.selectors, ds.episode_indices))
    except LrtoolError as exc:
        res.status = "incomplete"
        res.problems.append(f"local folder {job.dest}: {exc}")
        return
    rels = [f.relpath for f in (*read.data, *read.videos)]
    by_state: dict[str, list[str]] = {}
    for rel in rels:
        try:
            s = sniff(ds.path(rel))
        except DatasetError as exc:  # the template leads outside the dataset
            by_state.setdefault(f"files refused ({exc.message})", []).append(rel)
            continue
        if s.kind == "missing":
            by_state.setdefault("referenced files missing", []).append(rel)
        elif s.kind in PLACEHOLDER_CHECKS:
            by_state.setdefault(f"referenced files are placeholders ({s.kind})", []).append(rel)
        elif s.kind != "ok":
            by_state.setdefault("referenced files unreadable", []).append(rel)
    bad = sum(len(v) for v in by_state.values())
    res.needed, res.present, res.missing = len(rels), len(rels) - bad, bad
    for label, paths in by_state.items():
        res.problems.append(summarise_paths(label, paths))
    res.status = "incomplete" if bad else "complete"
    what = f"{len(read.data)} data and {len(read.videos)} video file(s)"
    res.notes.append(f"local folder: nothing to fetch; {what} its metadata references checked on disk"
                     + ("" if not bad else f", {bad} not usable"))


def offline_job(job: RepoJob, lock: LockFile | None) -> RepoResult:
    res = new_result(job)
    t0 = time.perf_counter()
    try:
        if job.error:
            res.status = "error"
            res.problems.append(job.error)
            return res
        if job.is_local:
            judge_local(job, res)
            return res
        commit = _offline_commit(job, lock, res)
        if commit is None:
            res.status = "incomplete"
            res.problems.append(f"commit of {job.revision!r} unknown offline: no lock entry and no cached tree "
                                f"listing in {local.hf_dir(job.dest)}; run prefetch online once")
            return res
        res.commit = commit
        tree = local.read_tree_cache(job.dest, commit)
        if tree is None:
            res.status = "incomplete"
            res.problems.append(f"no cached tree listing for commit {commit[:12]} in {local.hf_dir(job.dest)}; "
                                "run prefetch online once")
            return res
        tree = screen_listing(job, res, tree)
        if job.whole:
            needed = set(tree)
        else:
            meta = meta_files(tree)
            missing_meta = [p for p in sorted(meta) if not local.check_present(job.dest, tree[p], commit)[0]]
            if missing_meta:
                res.needed = len(meta)
                res.present = len(meta) - len(missing_meta)
                res.missing = len(missing_meta)
                res.bytes_missing = sum(tree[p].size for p in missing_meta)
                res.status = "incomplete"
                res.problems.append(summarise_paths("meta files missing (the episode files cannot be planned)",
                                                     missing_meta))
                return res
            files, probs = episode_files(job.dest, job.selectors)
            res.problems.extend(probs)
            upstream = sorted(files - set(tree))
            if upstream:
                res.missing_upstream = len(upstream)
                res.problems.append(summarise_paths("files the metadata references are not in the repo", upstream))
            needed = meta | (files & set(tree))
        res.needed = len(needed)
        missing = [p for p in sorted(needed) if not local.check_present(job.dest, tree[p], commit)[0]]
        res.present = res.needed - len(missing)
        res.missing = len(missing)
        res.bytes_missing = sum(tree[p].size for p in missing)
        if missing:
            res.problems.append(summarise_paths("files missing or not matching the listing", missing))
        res.status = "complete" if not res.problems else "incomplete"
        return res
    except LrtoolError as exc:
        res.status = "incomplete"
        res.problems.append(str(exc))
        return res
    finally:
        res.seconds = time.perf_counter() - t0

