"""Findings and per-dataset reports: the data every check produces and every reporter reads.

This module sits below the check catalogue, the check families, the reporters and ``lrtool repair``: it
imports nothing from lerobot_tools, so any of them may import it. It holds the severities, a
:class:`Finding` (one problem, with its subject as data), :class:`NotChecked` (honest coverage),
:class:`DatasetReport` (everything found about one target, with the :class:`RootCause` lines many findings
share) and :func:`group_findings` (findings that repeat
per file or per episode merged into one naming the count and the first paths).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

ERROR = "error"
WARNING = "warning"
INFO = "info"
SEVERITIES = (ERROR, WARNING, INFO)

MAX_EXAMPLE_PATHS = 3

#: What a finding may name as its subject (:attr:`Finding.subject`), besides the file in ``path``:
#:
#: * ``feature``: a feature / column name (a list of names when one finding concerns several columns, S007);
#: * ``video_key``: the camera feature whose video files are concerned;
#: * ``episode``: an episode index;
#: * ``task``: a task label (str) or a task index (int);
#: * ``key``: the metadata key concerned, as written (``fps``, ``total_frames``, ``video_path``, a
#:   feature's ``video.codec``; the episodes' ``tasks``);
#: * ``file_kind``: which kind of file: ``"data"`` (data parquet), ``"video"`` (mp4), ``"episodes"``
#:   (episode metadata: ``episodes.jsonl``, ``meta/episodes/*/*.parquet``), ``"tasks"``, ``"stats"``
#:   (``stats.json``), ``"episodes_stats"``, ``"info"`` (``info.json``), ``"meta"`` (another file under
#:   ``meta/``), ``"other"``.
SUBJECT_KEYS = ("feature", "video_key", "episode", "task", "key", "file_kind")


@dataclass
class Finding:
    """One problem found by a check.

    Attributes:
        check: catalogue ID (``S002``).
        severity: ``"error"`` | ``"warning"`` | ``"info"``.
        path: the file concerned, relative to the dataset root (None for dataset-level findings).
        message: one line saying what is wrong.
        count: how many occurrences this finding stands for (grouped findings > 1).
        paths: up to three example paths (distinct files) of a grouped finding.
        known: True when the finding is in the ``--baseline`` file (then it does not fail the run).
        group: grouping key and title (findings of one check with the same key merge; the merged message
            names it when the members' messages differ); not serialised.
        subject: what the finding is about, as data (keys from :data:`SUBJECT_KEYS`), so that programs
            (``lrtool repair``, JSON consumers) never parse the message. A grouped finding keeps what all
            its occurrences share.
        episodes: the episodes this occurrence concerns (a file's episodes) when its message says nothing
            else about it; :func:`group_findings` then heads a group of them with its title and the episodes
            (``"data files are missing for episodes 0, 3, 6, 9, 47 and 2 more"``); not serialised.
    """

    check: str
    severity: str
    path: str | None
    message: str
    count: int = 1
    paths: list[str] = field(default_factory=list)
    known: bool = False
    group: str | None = None
    subject: dict[str, Any] = field(default_factory=dict)
    episodes: tuple[int, ...] = ()

    def __post_init__(self) -> None:
        self.episodes = tuple(self.episodes)  # a list when rebuilt from JSON (a scaled-out run's parts)
        unknown = set(self.subject) - set(SUBJECT_KEYS)
        if unknown:
            raise ValueError(f"unknown subject key(s) {sorted(unknown)} (known: {', '.join(SUBJECT_KEYS)})")

    def to_dict(self) -> dict[str, Any]:
        d = {"check": self.check, "severity": self.severity, "path": self.path, "message": self.message}
        if self.count > 1:
            d["count"] = self.count
            d["paths"] = self.paths
        if self.known:
            d["known"] = True
        if self.subject:
            d["subject"] = dict(self.subject)
        return d

    def concerns(self, pattern: dict[str, Any] | None) -> bool:
        """True when the subject has every ``key: value`` of ``pattern`` (a list-valued subject entry
        matches any of its members); an empty or None pattern matches every finding."""
        for k, v in (pattern or {}).items():
            have = self.subject.get(k)
            if not (have == v or (isinstance(have, list) and v in have)):
                return False
        return True


@dataclass
class NotChecked:
    """A check (or family) that did not run on a dataset, and why (honest coverage)."""

    checks: str
    reason: str

    def to_dict(self) -> dict[str, str]:
        return {"checks": self.checks, "reason": self.reason}


@dataclass
class RootCause:
    """One cause that many files of a dataset share, said once at the top of its report.

    Attributes:
        check: the check that reports each file (``F004`` Git LFS pointers...).
        count: how many files.
        title: what the files are and the likely reason.
        fix: what to do, once for all of them.
        by_folder: folder (relative to the dataset root) -> number of files.
    """

    check: str
    count: int
    title: str
    fix: str
    by_folder: dict[str, int] = field(default_factory=dict)

    def line(self) -> str:
        """``"37 files are Git LFS pointers ... (data/chunk-000/: 10, meta/: 2); fix: run `git lfs pull` ..."``"""
        folders = ", ".join(f"{d}/: {n}" for d, n in self.by_folder.items())
        return f"{self.count} files are {self.title} ({folders}); fix: {self.fix}"

    def to_dict(self) -> dict[str, Any]:
        return {"check": self.check, "count": self.count, "title": self.title, "fix": self.fix,
                "by_folder": dict(self.by_folder)}


@dataclass
class DatasetReport:
    """Everything validate found about one target.

    ``causes`` are the root causes many findings share (:class:`RootCause`), reported before the findings.
    ``subset`` is the target's episode subset (``{"episodes": [...], "excluded_episodes": [...]}``, the keys
    given), None when the target is the whole dataset.
    ``curation`` (:class:`lerobot_tools.checks.content.facts.CurationFacts`, or None) is what the keep-list writer
    reads; it is not part of the JSON document.
    """

    target: str
    root: str | None
    codebase_version: str | None
    findings: list[Finding] = field(default_factory=list)
    not_checked: list[NotChecked] = field(default_factory=list)
    source: str | None = None
    notes: list[str] = field(default_factory=list)
    seconds: float = 0.0
    causes: list[RootCause] = field(default_factory=list)
    subset: dict[str, list[int]] | None = None
    curation: Any = None

    def counts(self, *, include_known: bool = False) -> dict[str, int]:
        out = {ERROR: 0, WARNING: 0, INFO: 0}
        for f in self.findings:
            if f.known and not include_known:
                continue
            out[f.severity] = out.get(f.severity, 0) + 1
        return out

    @property
    def has_errors(self) -> bool:
        return any(f.severity == ERROR and not f.known for f in self.findings)

    def root_cause(self) -> tuple[str, Finding | None] | None:
        """The root cause that stops everything that reads the dataset, or None.

        A cause many files share (:attr:`causes`, e.g. a clone without ``git lfs pull``), else the first finding
        about a metadata file every reader needs (``info.json``, the episode metadata, the task table) that is a
        placeholder or truncated (subject ``file_kind`` ``info``/``episodes``/``tasks``).

        Returns:
            ``(one line, the finding or None)``; None when there is no such cause. ``lrtool repair`` and
            ``lrtool smoke`` refuse with it.
        """
        if self.causes:
            return self.causes[0].line(), None
        for f in self.findings:
            if f.subject.get("file_kind") in ("info", "episodes", "tasks"):
                return (f"{f.path}: {f.message}" if f.path and f.count == 1 else f.message), f
        return None

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {
            "target": self.target,
            "root": self.root,
            "codebase_version": self.codebase_version,
            "findings": [f.to_dict() for f in self.findings],
            "not_checked": [n.to_dict() for n in self.not_checked],
        }
        if self.source:
            d["source"] = self.source
        if self.subset:
            d["subset"] = dict(self.subset)
        if self.notes:
            d["notes"] = self.notes
        if self.causes:
            d["causes"] = [c.to_dict() for c in self.causes]
        return d


#: how many items (episodes or runs of consecutive episodes) :func:`episode_list_text` names before "and N more"
MAX_EPISODES_SHOWN = 5


def episode_list_text(episodes, limit: int = MAX_EPISODES_SHOWN) -> str:
    """Episode indices in words, ascending, each once: runs of three or more consecutive indices as a range, at
    most ``limit`` items, then how many episodes are left out.

    ``[0, 3, 6, 9, 47, 50, 51]`` -> ``"0, 3, 6, 9, 47 and 2 more"``; ``[3, 4, 5, 6, 7, 8, 9]`` -> ``"3-9"``;
    ``[1, 2]`` -> ``"1 and 2"``; ``[]`` -> ``"none"``.
    """
    eps = sorted(set(int(e) for e in episodes))
    if not eps:
        return "none"
    runs: list[tuple[int, int]] = []
    for e in eps:
        if runs and e == runs[-1][1] + 1:
            runs[-1] = (runs[-1][0], e)
        else:
            runs.append((e, e))
    items: list[tuple[str, int]] = []  # (text, episodes it stands for)
    for a, b in runs:
        if b - a >= 2:
            items.append((f"{a}-{b}", b - a + 1))
        else:
            items.extend((str(e), 1) for e in range(a, b + 1))
    shown = items[:limit]
    left = sum(n for _, n in items[limit:])
    texts = [t for t, _ in shown]
    if left:
        return ", ".join(texts) + f" and {left} more"
    return texts[0] if len(texts) == 1 else ", ".join(texts[:-1]) + f" and {texts[-1]}"


def _episodes_of(f: Finding) -> tuple[int, ...]:
    """The episodes an occurrence concerns: its ``episodes``, else its subject's ``episode`` (an int)."""
    if f.episodes:
        return f.episodes
    ep = f.subject.get("episode")
    return (ep,) if isinstance(ep, int) and not isinstance(ep, bool) else ()


def group_findings(findings: list[Finding]) -> list[Finding]:
    """Merge findings of the same check and ``group`` key into one with a count and example paths.

    Order is preserved (a group sits where its first member was). Ungrouped findings pass unchanged. A
    merged finding's subject is what every member's subject shares (e.g. the video key, not the episodes).

    A merged finding keeps the concrete reason: its message is the *first* member's specific message (which
    episode, which value, which limit), followed by the count, the group's title when the members' messages
    differ, and the first paths: ``"episode 3 (cam): to_timestamp 9.5 s is past the end of the video (9.4 s)
    (4 occurrences: episode video segments of cam do not fit their files; e.g. a.mp4, b.mp4, c.mp4 and 1 more)"``.
    The example paths are distinct files (several occurrences may concern one file); "and N more" counts files.

    A group whose occurrences concern different episodes names them all (:func:`episode_list_text`), never only
    the first one's: occurrences that carry ``episodes`` (their message says nothing more) are headed by the
    group's title, ``"data files are missing for episodes 0, 3, 6, 9, 47 and 2 more (7 occurrences; e.g. ...)"``;
    occurrences with an ``episode`` subject keep the first one's message and name the episodes after the title.
    """
    out: list[Finding] = []
    index: dict[tuple[str, str, str], Finding] = {}
    same_message: dict[int, bool] = {}  # id(head) -> every member's message equals the first one's
    files: dict[int, set[str]] = {}  # id(head) -> the distinct paths of its members
    episodes: dict[int, set[int]] = {}  # id(head) -> the episodes its members concern
    by_file: dict[int, bool] = {}  # id(head) -> every member carries ``episodes`` (its message says no more)
    for f in findings:
        if f.group is None:
            out.append(f)
            continue
        key = (f.check, f.severity, f.group)
        head = index.get(key)
        if head is None:
            head = Finding(f.check, f.severity, f.path, f.message, count=1,
                           paths=[f.path] if f.path else [], known=f.known, group=f.group, subject=dict(f.subject),
                           episodes=f.episodes)
            index[key] = head
            same_message[id(head)] = True
            files[id(head)] = {f.path} if f.path else set()
            episodes[id(head)] = set(_episodes_of(f))
            by_file[id(head)] = bool(f.episodes)
            out.append(head)
            continue
        head.count += 1
        episodes[id(head)].update(_episodes_of(f))
        by_file[id(head)] = by_file[id(head)] and bool(f.episodes)
        same_message[id(head)] = same_message[id(head)] and f.message == head.message
        head.known = head.known and f.known
        head.subject = {k: v for k, v in head.subject.items() if f.subject.get(k) == v}
        if f.path:
            files[id(head)].add(f.path)
            if f.path not in head.paths and len(head.paths) < MAX_EXAMPLE_PATHS:
                head.paths.append(f.path)
    for f in out:
        if f.group is not None and f.count > 1:
            shown = ", ".join(f.paths)
            n_files = len(files[id(f)])
            more = f" and {n_files - len(f.paths)} more" if n_files > len(f.paths) else ""
            eps = episodes[id(f)]
            several = len(eps) > 1
            if several:
                f.episodes = tuple(sorted(eps))
            if several and by_file[id(f)]:
                head, what = f"{f.group} for episodes {episode_list_text(eps)}", f"{f.count} occurrences"
            else:
                head = f.message
                what = f"{f.count} occurrences" if same_message[id(f)] else f"{f.count} occurrences: {f.group}"
                if several:
                    what += f", for episodes {episode_list_text(eps)}"
            f.message = f"{head} ({what}; e.g. {shown}{more})" if shown else f"{head} ({what})"
    return out
