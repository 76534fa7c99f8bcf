"""Keep-lists: the episodes worth training on, written as a plain-text mixture every command reads.

``lrtool validate ... --write-keep keep.txt`` writes one line per validated dataset, in validate's order:

.. code-block:: text

    # lrtool keep-list: 2 dataset(s), 47 of 50 episodes kept
    # excluded on: Q001 Q004 Q005 Q007 Q009-Q014 warnings and every error naming an episode (--exclude changes it)
    # trim=: still frames at the start/end of an episode (Q003); loaders leave them out with trim=True
    org/pick@0123456789abcdef0123456789abcdef01234567 episodes=0-3,5-9 trim=2:0-14
    #   episode 4 excluded: Q001 action and state do not change over its 230 frame(s) ...
    ../local/place episodes=0-36 weight=2

The line names the dataset as the mixture did (``repo_id@revision``, pinned to the snapshot commit when the copy
came from a hub cache; a folder as an absolute path, or relative to the keep-list's folder when it lies below
it), keeps the entry's ``weight=``, and lists the episodes that pass in ``episodes=`` (the entry's own subset, if
it had one, minus the excluded episodes). Every excluded episode has a comment with every reason. A dataset none
of whose episodes pass is written as a comment (a mixture line cannot name zero episodes); an unresolved entry is
kept as written, with a comment, so ``lrtool prefetch`` can still fetch it. ``prefetch``, ``validate``, ``smoke``,
``diagnose-decode``, :class:`~lerobot_tools.loaders.MixtureDataset` and :func:`~lerobot_tools.loaders.FrameDataset`
read the file unchanged (lerobot's own ``--dataset.episodes`` takes the ``episodes=`` list of a line). No data file
is rewritten. The file is written atomically (a temporary file renamed into place).
"""

from __future__ import annotations

import os
import shlex
from dataclasses import dataclass, field
from pathlib import Path

from lerobot_tools.checks.catalogue import CATALOGUE, WARNING
from lerobot_tools.dataset.mixture import format_trim_spec
from lerobot_tools.dataset.subset import EpisodeSubset
from lerobot_tools.dataset.targets import Target
from lerobot_tools.findings import ERROR, DatasetReport

#: the Q checks whose findings exclude an episode by default: every content warning (the infos, Q002 stuck
#: dimension, Q003 idle ends, Q006 pinned, Q008 short, only with ``--exclude``)
DEFAULT_EXCLUDE = frozenset(c.id for c in CATALOGUE.values() if c.id.startswith("Q") and c.severity == WARNING)


def format_episodes(episodes: list[int]) -> str:
    """``[0, 1, 2, 3, 5, 7, 8]`` -> ``"0-3,5,7-8"`` (sorted, unique)."""
    eps = sorted(set(episodes))
    parts: list[str] = []
    i = 0
    while i < len(eps):
        j = i
        while j + 1 < len(eps) and eps[j + 1] == eps[j] + 1:
            j += 1
        parts.append(str(eps[i]) if i == j else f"{eps[i]}-{eps[j]}")
        i = j + 1
    return ",".join(parts)


@dataclass
class KeepLine:
    """What the keep-list says about one dataset.

    Attributes:
        name: the dataset as a mixture line names it.
        kept: episodes that pass (None: the target could not be read, the line is kept as written).
        excluded: episode -> reasons (``"Q001 <message>"``).
        trims: kept episode -> inclusive frame ranges a loader may leave out.
        weight: the entry's weight.
        notes: comment lines about the dataset (errors found, unresolved).
    """

    name: str
    kept: list[int] | None
    excluded: dict[int, list[str]] = field(default_factory=dict)
    trims: dict[int, list[tuple[int, int]]] = field(default_factory=dict)
    weight: float | None = None
    notes: list[str] = field(default_factory=list)

    def lines(self) -> list[str]:
        out = [f"# {_comment(n)}" for n in self.notes]
        if self.kept is None:
            out.append(self._entry(None))
        elif not self.kept:
            out.append(f"# no episode passes: {self._entry(None)}")
        else:
            out.append(self._entry(self.kept))
        for e in sorted(self.excluded):
            out.append(f"#   episode {e} excluded: " + "; ".join(self.excluded[e]))
        return out

    def _entry(self, kept: list[int] | None) -> str:
        parts = [shlex.quote(self.name) if any(c.isspace() or c in "#'\"\\" for c in self.name) else self.name]
        if kept is not None:
            parts.append(f"episodes={format_episodes(kept)}")
            trims = {e: r for e, r in self.trims.items() if e in set(kept)}
            if trims:
                parts.append(f"trim={format_trim_spec(trims)}")
        if self.weight is not None:
            parts.append(f"weight={self.weight:g}")
        return " ".join(parts)


def _comment(text: str) -> str:
    """Text safe inside a ``#`` comment line: one line, control characters shown as escapes."""
    from lerobot_tools._safeout import escape_text, single_line

    return escape_text(single_line(text))


def _name(t: Target, base: Path) -> str:
    if t.repo_id:
        rev = t.commit or t.revision
        return f"{t.repo_id}@{rev}" if rev else t.repo_id
    if t.root is None:
        return t.spec
    root = Path(t.root).absolute()
    try:
        return "./" + root.relative_to(base.absolute()).as_posix()
    except ValueError:
        return str(root)


def _excluding(check: str, severity: str, exclude: frozenset[str] | None) -> bool:
    if exclude is None:
        return check in DEFAULT_EXCLUDE or severity == ERROR
    return check in exclude


def keep_lines(targets: list[Target], reports: list[DatasetReport], base: Path,
               exclude: frozenset[str] | None = None) -> list[KeepLine]:
    """One :class:`KeepLine` per target (``reports`` parallel to ``targets``).

    Args:
        base: the folder the keep-list is written in (folders below it are named relative to it).
        exclude: check IDs whose findings naming an episode exclude it; None: :data:`DEFAULT_EXCLUDE` and every
            error naming an episode.
    """
    out = []
    for t, r in zip(targets, reports):
        line = KeepLine(_name(t, base), None, weight=t.weight)
        facts = r.curation
        if t.root is None or facts is None or not facts.episodes:
            why = t.error or "the episode metadata could not be read"
            line.notes.append(f"{line.name}: not judged ({why}); kept as written")
            line.kept = None if t.root is None or facts is None else None
            out.append(line)
            continue
        wanted = EpisodeSubset.of(t).select(facts.episodes)
        wanted_set = set(wanted)
        for f in facts.findings:
            if f.episode in wanted_set and _excluding(f.check, f.severity, exclude):
                msg = f.message.removeprefix(f"episode {f.episode}: ")
                line.excluded.setdefault(f.episode, []).append(f"{f.check} {_comment(msg)}")
        line.kept = [e for e in wanted if e not in line.excluded]
        for e in line.kept:
            head, tail = facts.trims.get(e, (0, 0))
            n = facts.lengths.get(e)
            ranges = []
            if head:
                ranges.append((0, head - 1))
            if tail and n:
                ranges.append((n - tail, n - 1))
            if ranges:
                line.trims[e] = ranges
        errors = sorted({f.check for f in r.findings if f.severity == ERROR and f.check not in
                         {x.check for x in facts.findings}})
        if errors:
            line.notes.append(f"validate found errors in {line.name} beyond single episodes: {' '.join(errors)}")
        if facts.downloaded is not None:
            line.notes.append(f"{line.name}: judged from its metadata where its data is not downloaded yet")
        out.append(line)
    return out


def render(lines: list[KeepLine], exclude: frozenset[str] | None) -> str:
    """The keep-list text (see module docstring)."""
    judged = [k for k in lines if k.kept is not None]
    kept = sum(len(k.kept) for k in judged)
    total = kept + sum(len(k.excluded) for k in judged)
    rule = (" ".join(sorted(DEFAULT_EXCLUDE)) + " warnings and every error naming an episode (--exclude changes it)"
            if exclude is None else " ".join(sorted(exclude)))
    head = [f"# lrtool keep-list: {len(lines)} dataset(s), {kept} of {total} judged episodes kept",
            f"# excluded on: {rule}"]
    if any(k.trims for k in lines):
        head.append("# trim=: still frames at the start/end of an episode (Q003); loaders leave them out with "
                    "trim=True")
    body = [line for k in lines for line in k.lines()]
    return "\n".join(head + body) + "\n"


def write_keep(path: str | os.PathLike, targets: list[Target], reports: list[DatasetReport],
               exclude: frozenset[str] | None = None) -> tuple[int, int]:
    """Write the keep-list of ``targets`` (validated into ``reports``) to ``path``, atomically.

    Returns:
        ``(kept, excluded)`` episode counts.

    Raises:
        OSError: the file cannot be written.
    """
    from lerobot_tools._io import atomic_write_text

    path = Path(path)
    lines = keep_lines(targets, reports, path.absolute().parent, exclude)
    atomic_write_text(path, render(lines, exclude))
    kept = sum(len(k.kept) for k in lines if k.kept)
    return kept, sum(len(k.excluded) for k in lines)
