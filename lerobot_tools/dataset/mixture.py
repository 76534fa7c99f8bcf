"""Mixture files: many datasets named in one file.

Two forms are read:

* **Plain text** — one entry per line: ``repo_id[@revision]`` or a path, optionally followed by
  ``episodes=0-9,12``, ``weight=2.5`` (relative sampling weight, a non-negative number) and
  ``trim=3:0-14+281-299,7:0-29`` (frames of an episode a loader may leave out, inclusive ranges joined by ``+``;
  written by ``lrtool validate --write-keep`` for idle heads and tails, honoured by the loaders' ``trim``
  option); ``#`` starts a comment; blank lines are ignored. A relative path is taken relative to the mixture file;
  a token that is not an existing path but has the form ``org/name`` is a repo id. Either every entry gives a
  weight or none does.
* **OpenTau training-config JSON** (OpenTau ``configs/default.py`` ``DatasetMixtureConfig``, docs/mixtures.md)
  — ``dataset_mixture.datasets[*]`` (or a bare
  mixture object ``{"datasets": [...]}``, or a list of entries) with ``repo_id`` / ``root`` /
  ``revision`` / ``episodes`` / ``excluded_episodes`` / ``data_features_name_mapping``. ``{"$ref": "path"}``
  includes another file anywhere a value is expected; sibling keys deep-merge over the included object;
  paths resolve relative to the including file (after symlink resolution); cycles are errors. A ``$ref``
  must be a relative path without ``..`` that resolves (symlinks followed) inside the folder of the
  mixture file named on the command line, and every file read is a regular file of at most 64 MiB
  (:func:`lerobot_tools._io.load_json_file`); one mixture expands to at most 10,000 includes and 64 MiB of
  included files in all (:class:`RefBudget`: files that include the next twice would otherwise grow
  exponentially without a cycle). Relative ``root`` values are resolved against the file they
  are written in. The mixture-level ``dataset_mixture.weights`` (a list parallel to ``datasets``; OpenTau
  ``DatasetMixtureConfig``) and ``action_freq`` (the rate in Hz the datasets are resampled to) are read by
  :func:`read_mixture_spec`.

A revision is a branch or tag name or a commit SHA (:func:`revision_problem`); a repo id follows the Hub's
rules (``org/name``, no ``..``), so neither can name a path outside the caches it is looked up in.

Weights are relative sampling weights: dataset ``i`` is drawn with probability ``w_i / sum(w)``; no
weights at all means "proportional to each dataset's number of frames" (OpenTau: ``weights: null``).

A malformed *entry* becomes a finding (the other entries still load); a file that cannot be read or
parsed at all, or whose mixture-level ``weights`` / ``action_freq`` are malformed, raises
:class:`~lerobot_tools.errors.UsageError` (exit status 2).
"""

from __future__ import annotations

import json
import math
import os
import re
import shlex
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from lerobot_tools._io import MAX_JSON_BYTES, MAX_JSON_DEPTH, load_json_file, loads_json, read_text_capped
from lerobot_tools.errors import UsageError

#: ``org/name`` as the Hub accepts it (huggingface_hub ``validate_repo_id``: letters, digits, ``-``, ``_``,
#: ``.``; ``..`` forbidden; the name does not start with ``.``), so ``$HF_LEROBOT_HOME/<repo_id>`` stays inside
#: ``$HF_LEROBOT_HOME``.
REPO_ID_RE = re.compile(r"^(?!.*\.\.)[A-Za-z0-9][\w.\-]*/[A-Za-z0-9_\-][\w.\-]*$")
#: what looks like ``org/name`` before the rules above (``org/..``): reported as an invalid repo id
LOOSE_REPO_ID_RE = re.compile(r"^[A-Za-z0-9][\w.\-]*/[\w.\-]+$")


def repo_id_problem(repo_id: str) -> str | None:
    """The one-line message for an ``org/name`` that breaks the Hub's rules (``org/..``, ``a..b/c``), else None."""
    if REPO_ID_RE.match(repo_id):
        return None
    return f"invalid repo id {repo_id!r}: '..' or a name starting with '.' (a repo id is org/name)"
SHA_RE = re.compile(r"^[0-9a-f]{40}$")
MAX_REVISION_CHARS = 255


_REF_FORBIDDEN = re.compile(r"[\x00-\x20\x7f~^:?*\[\\]")


def revision_reason(revision: str) -> str | None:
    """Why ``revision`` is neither a 40-hex commit SHA nor a valid branch/tag name (a short phrase), else None.

    Branch and tag names follow ``git check-ref-format`` (git documentation): no ``..``, no component
    starting with ``.`` or ending with ``.lock``, no ``@{``, no space, control character or any of
    ``~^:?*[`` or a backslash, not starting or ending with ``/``, no ``//``, not ending with ``.``; at most
    255 characters. ``refs/pr/1`` and ``refs/convert/parquet`` (Hub refs) are valid. Offline the name is a
    file name under a hub cache's ``refs/``, so nothing that could leave that folder passes.
    """
    if SHA_RE.match(revision):
        return None
    if not revision:
        return "empty revision"
    if len(revision) > MAX_REVISION_CHARS:
        return f"revision longer than {MAX_REVISION_CHARS} characters"
    if revision.startswith("/") or revision.endswith("/") or "//" in revision:
        return "absolute path or empty component"
    if ".." in revision or "@{" in revision or revision == "@" or revision.endswith("."):
        return "'..', '@{' or a trailing '.'"
    if _REF_FORBIDDEN.search(revision):
        return "space, control character or one of ~^:?*[\\"
    if any(part.startswith(".") or part.endswith(".lock") for part in revision.split("/")):
        return "a component starts with '.' or ends with '.lock'"
    return None


def revision_problem(revision: str) -> str | None:
    """The one-line message for a revision that is not a branch/tag name or commit SHA
    (:func:`revision_reason`), else None."""
    why = revision_reason(revision)
    if why is None:
        return None
    return f"invalid revision {revision!r}: {why} (a revision is a branch or tag name, or a 40-hex commit SHA)"


@dataclass
class MixtureEntry:
    """One dataset named by a mixture file.

    Attributes:
        spec: the dataset as the entry names it: a text line's repo id or path (its ``episodes=``/``weight=``
            options are in the other fields, never in the name), a JSON entry's ``repo_id`` or ``root``; a
            malformed entry keeps the whole line (or a JSON summary), so the report shows what was written.
        source: ``"<file>:<line>"`` or ``"<file>:datasets[i]"``, for messages.
        repo_id: ``org/name`` if given.
        revision: branch, tag or commit SHA if given (never parsed as a version).
        root: an explicit local folder (absolute), if given.
        episodes: requested episode indices (sorted, unique) or None for all.
        excluded_episodes: episodes to leave out (OpenTau; wins over ``episodes``).
        feature_mapping: OpenTau ``data_features_name_mapping`` (role -> column), if given.
        weight: relative sampling weight (text ``weight=``, JSON ``dataset_mixture.weights[i]``), if given.
        trim: episode -> inclusive ``(first, last)`` frame ranges a loader may leave out (text ``trim=``), or None.
        error: a one-line problem when the entry is malformed (then it is reported, not resolved).
    """

    spec: str
    source: str
    repo_id: str | None = None
    revision: str | None = None
    root: Path | None = None
    episodes: list[int] | None = None
    excluded_episodes: list[int] | None = None
    feature_mapping: dict[str, str] | None = None
    weight: float | None = None
    trim: dict[int, list[tuple[int, int]]] | None = None
    error: str | None = None
    extras: dict[str, Any] = field(default_factory=dict)


MAX_EPISODES = 10_000_000
"""Most episodes one ``episodes=`` list of a text mixture may name, all its ranges together (the largest LeRobot
datasets hold tens of thousands of episodes): each is one entry in memory."""


#: at most this many frame ranges in one ``trim=`` value (a keep-list writes at most two per episode)
MAX_TRIM_RANGES = 10_000_000


def parse_trim_spec(text: str) -> dict[int, list[tuple[int, int]]]:
    """Parse ``"3:0-14+281-299,7:0-29"`` into ``{3: [(0, 14), (281, 299)], 7: [(0, 29)]}`` (inclusive ranges,
    sorted; an episode named twice has its ranges merged).

    Raises:
        ValueError: a part is not ``EPISODE:A-B[+C-D...]`` with ``A <= B``, or holds too many ranges.
    """
    out: dict[int, list[tuple[int, int]]] = {}
    count = 0
    for part in text.split(","):
        part = part.strip()
        if not part:
            continue
        m = re.fullmatch(r"(\d+)\s*:\s*(.+)", part)
        if not m:
            raise ValueError(f"bad trim {part!r} (expected EPISODE:FIRST-LAST[+FIRST-LAST])")
        ranges = out.setdefault(int(m.group(1)), [])
        for r in m.group(2).split("+"):
            rm = re.fullmatch(r"\s*(\d+)\s*-\s*(\d+)\s*", r)
            if not rm or int(rm.group(2)) < int(rm.group(1)):
                raise ValueError(f"bad trim range {r.strip()!r} in {part!r} (expected FIRST-LAST, FIRST <= LAST)")
            ranges.append((int(rm.group(1)), int(rm.group(2))))
            count += 1
            if count > MAX_TRIM_RANGES:
                raise ValueError("trim holds implausibly many ranges")
    if not out:
        raise ValueError("empty trim list")
    return {e: sorted(r) for e, r in out.items()}


def format_trim_spec(trim: dict[int, list[tuple[int, int]]]) -> str:
    """Inverse of :func:`parse_trim_spec` (episodes ascending)."""
    return ",".join(f"{e}:" + "+".join(f"{a}-{b}" for a, b in sorted(r)) for e, r in sorted(trim.items()) if r)


def parse_episode_spec(text: str) -> list[int]:
    """Parse ``"0-9,12"`` into a sorted list of unique episode indices.

    Raises:
        ValueError: a part is not ``N`` or ``A-B`` with ``A <= B``, or is negative; or the ranges together name
            more than :data:`MAX_EPISODES` episodes.
    """
    ranges: list[tuple[int, int]] = []
    for part in text.split(","):
        part = part.strip()
        if not part:
            continue
        m = re.fullmatch(r"(\d+)(?:\s*-\s*(\d+))?", part)
        if not m:
            raise ValueError(f"bad episode range {part!r} (expected N or A-B)")
        a = int(m.group(1))
        b = int(m.group(2)) if m.group(2) is not None else a
        if b < a:
            raise ValueError(f"bad episode range {part!r} (end before start)")
        ranges.append((a, b + 1))
    if not ranges:
        raise ValueError("empty episode list")
    # counted before a single index is built: the ranges' union, overlaps once
    count, end = 0, 0
    for a, b in sorted(ranges):
        count += max(0, b - max(a, end))
        end = max(end, b)
    if count > MAX_EPISODES:
        raise ValueError(f"episode list {text[:40]!r} names {count:,} episodes, more than {MAX_EPISODES:,}; "
                         "implausibly large")
    out: set[int] = set()
    for a, b in ranges:
        out.update(range(a, b))
    return sorted(out)


def split_repo_revision(token: str) -> tuple[str, str | None]:
    """Split ``org/name@revision`` into ``("org/name", "revision")``; no ``@`` gives ``(token, None)``."""
    if "@" in token:
        repo, _, rev = token.partition("@")
        return repo, (rev or None)
    return token, None


def looks_like_mixture_file(path: Path) -> bool:
    """True for an existing regular file (a dataset is a folder, so any file target is a mixture)."""
    return path.is_file()


@dataclass
class MixtureSpec:
    """A whole mixture file: its entries and the mixture-level settings.

    Attributes:
        path: the mixture file.
        entries: one :class:`MixtureEntry` per dataset, in file order (``entry.weight`` filled in).
        action_freq: OpenTau ``dataset_mixture.action_freq`` in Hz (the rate every dataset is resampled
            to), or None (each dataset at its own fps). Text mixtures have none.
        weighted: True when the file gives weights (then every well-formed entry has one).
    """

    path: Path
    entries: list[MixtureEntry]
    action_freq: float | None = None
    weighted: bool = False


def read_mixture(path: str | Path) -> list[MixtureEntry]:
    """Read a mixture file (plain text or OpenTau JSON, chosen by content): its entries.

    Raises:
        UsageError: see :func:`read_mixture_spec`.
    """
    return read_mixture_spec(path).entries


def read_mixture_spec(path: str | Path) -> MixtureSpec:
    """Read a mixture file (plain text or OpenTau JSON, chosen by content) with its weights and ``action_freq``.

    Raises:
        UsageError: the file cannot be read, is JSON that does not parse, has a ``$ref`` cycle or an
            unreadable include, has no recognisable list of datasets, or its ``weights`` (not a list of
            non-negative numbers with one per dataset) or ``action_freq`` (not a positive number) are malformed.
    """
    path = Path(path)
    try:
        text = read_text_capped(path, limit=MAX_JSON_BYTES, error=UsageError, what="mixture")
    except FileNotFoundError:
        raise UsageError("mixture file not found", path) from None
    except OSError as exc:
        raise UsageError(f"mixture file cannot be read ({exc.strerror or exc})", path) from None
    stripped = text.lstrip()
    if path.suffix.lower() == ".json" or stripped.startswith(("{", "[")):
        return _read_json_mixture(path, text)
    return _read_text_mixture(path, text)


# ---------------------------------------------------------------------- plain text
_SHLEX_SPACE = re.compile(r"[ \t\r\n]+")


def _read_text_mixture(path: Path, text: str) -> MixtureSpec:
    """Parse a plain-text mixture. A line repeated verbatim is parsed (and its path looked up) once: a mixture of
    10,000 lines naming 100 datasets costs 100 parses plus 10,000 dictionary lookups."""
    base = path.resolve().parent
    entries: list[MixtureEntry] = []
    parsed: dict[str, MixtureEntry] = {}
    for lineno, raw in enumerate(text.splitlines(), start=1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        source = f"{path}:{lineno}"
        seen = parsed.get(line)
        if seen is None:
            seen = parsed[line] = _parse_text_line(line, base)
        entries.append(_copy_entry(seen, source))
    weighted = any(e.weight is not None for e in entries)
    if weighted:
        for e in entries:
            if e.error is None and e.weight is None:
                e.error = "no weight= although other entries give one (give every entry a weight, or none)"
    return MixtureSpec(path, entries, None, weighted)


def _copy_entry(e: MixtureEntry, source: str) -> MixtureEntry:
    """A copy of a parsed line's entry for another line: nothing mutable is shared."""
    return replace(e, source=source, episodes=None if e.episodes is None else list(e.episodes),
                   excluded_episodes=None if e.excluded_episodes is None else list(e.excluded_episodes),
                   feature_mapping=None if e.feature_mapping is None else dict(e.feature_mapping),
                   trim=None if e.trim is None else {k: list(v) for k, v in e.trim.items()},
                   extras=dict(e.extras))


def _parse_text_line(line: str, base: Path) -> MixtureEntry:
    """One non-empty plain-text line (comment stripped) as an entry; ``source`` is filled in by the caller."""
    source = ""
    if "\x00" in line:  # no file name holds a NUL (the OS refuses it; os.path.expanduser raises ValueError)
        return MixtureEntry(line, source, error="contains a NUL character")
    if not any(c in line for c in "'\"\\"):
        # what shlex.split gives for a line without quotes or backslashes (its whitespace is " \t\r\n"), 20x faster
        tokens = [t for t in _SHLEX_SPACE.split(line) if t]
    else:
        try:
            tokens = shlex.split(line)
        except ValueError as exc:
            return MixtureEntry(line, source, error=f"cannot be parsed ({exc})")
    if not tokens:
        return MixtureEntry(line, source, error="cannot be parsed (no dataset named)")
    entry = MixtureEntry(line, source)
    head, options = tokens[0], tokens[1:]
    for opt in options:
        key, eq, value = opt.partition("=")
        if not eq:
            entry.error = f"unexpected token {opt!r} (expected key=value after the dataset)"
            break
        if key == "episodes":
            try:
                entry.episodes = parse_episode_spec(value)
            except ValueError as exc:
                entry.error = str(exc)
                break
        elif key == "revision":
            entry.revision = value or None
            problem = revision_problem(value) if value else None
            if problem:
                entry.error = problem
                break
        elif key == "weight":
            try:
                entry.weight = parse_weight(value)
            except ValueError as exc:
                entry.error = str(exc)
                break
        elif key == "trim":
            try:
                entry.trim = parse_trim_spec(value)
            except ValueError as exc:
                entry.error = str(exc)
                break
        else:
            entry.error = f"unknown option {key!r} (known: episodes, revision, weight, trim)"
            break
    if entry.error is None:
        entry.spec = head  # the dataset as named; its options are data (episodes, weight), never part of its name
        _assign_target(entry, head, base)
    return entry


def parse_weight(value: Any) -> float:
    """A sampling weight: a finite number >= 0 (``"2.5"`` or ``2.5``; booleans refused).

    Raises:
        ValueError: not a finite non-negative number.
    """
    if isinstance(value, bool):
        raise ValueError(f"weight must be a number >= 0, got {value!r}")
    try:
        w = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"weight must be a number >= 0, got {value!r}") from None
    if not math.isfinite(w) or w < 0:
        raise ValueError(f"weight must be a finite number >= 0, got {value!r}")
    return w


def _assign_target(entry: MixtureEntry, token: str, base: Path) -> None:
    """Decide whether ``token`` is a path (exists, or written as one) or a repo id."""
    repo, rev = split_repo_revision(token)
    as_path = Path(token).expanduser()
    if not as_path.is_absolute():
        as_path = base / as_path
    written_as_path = token.startswith(("/", "./", "../", "~")) or token in {".", ".."}
    try:
        exists = written_as_path or as_path.exists()
    except OSError:  # ENAMETOOLONG, EACCES...: a path, reported when the folder is opened
        exists = True
    if exists:
        entry.root = as_path
        return
    if REPO_ID_RE.match(repo):
        entry.repo_id = repo
        if rev is not None:
            if entry.revision is not None and entry.revision != rev:
                entry.error = f"two revisions given ({rev!r} and {entry.revision!r})"
            entry.revision = rev
            entry.error = entry.error or revision_problem(rev)
        return
    if LOOSE_REPO_ID_RE.match(repo):
        entry.repo_id, entry.error = repo, repo_id_problem(repo)
        return
    entry.root = as_path  # reported later as a missing folder


# ---------------------------------------------------------------------- OpenTau JSON
def _load_json_file(path: Path) -> Any:
    try:
        return load_json_file(path, error=UsageError)
    except FileNotFoundError:
        raise UsageError("$ref target not found", path) from None
    except OSError as exc:
        raise UsageError(f"cannot be read ({exc.strerror or exc})", path) from None


def _ref_target(ref: str, base: Path, top: Path, where: Path) -> Path:
    """The file a ``$ref`` names, after checking it stays inside ``top`` (see module docstring).

    Raises:
        UsageError: absolute, has a ``..`` component, or resolves (symlinks followed) outside ``top``.
    """
    if not ref or "\x00" in ref:
        raise UsageError(f"$ref {ref!r} is not a file name", where)
    if os.path.isabs(ref) or ref.startswith(("/", "\\", "~")):
        raise UsageError(f"$ref {ref!r} is an absolute path; a $ref must be relative to the including file", where)
    if ".." in ref.replace("\\", "/").split("/"):
        raise UsageError(f"$ref {ref!r} climbs out with '..'; a $ref must stay inside {top}", where)
    target = (base / ref).resolve()
    if target != top and top not in target.parents:
        raise UsageError(f"$ref {ref!r} resolves to {target}, outside {top}", where)
    return target


def _deep_merge(base: Any, over: dict) -> Any:
    if not isinstance(base, dict):
        return over if over else base
    out = dict(base)
    for k, v in over.items():
        if isinstance(v, dict) and isinstance(out.get(k), dict):
            out[k] = _deep_merge(out[k], v)
        else:
            out[k] = v
    return out


def _absolutize_roots(obj: Any, base: Path) -> Any:
    """Rewrite relative ``"root"`` strings of dataset entries to absolute paths against ``base``."""
    if isinstance(obj, dict):
        out = {}
        for k, v in obj.items():
            if k == "root" and isinstance(v, str) and "\x00" in v:
                out[k] = v  # refused by _json_entry (expanduser raises ValueError on a NUL)
            elif k == "root" and isinstance(v, str) and v and not Path(v).expanduser().is_absolute():
                out[k] = str(base / v)
            elif k == "root" and isinstance(v, str):
                out[k] = str(Path(v).expanduser())
            else:
                out[k] = _absolutize_roots(v, base)
        return out
    if isinstance(obj, list):
        return [_absolutize_roots(v, base) for v in obj]
    return obj


MAX_REF_DEPTH = 32
"""Longest chain of ``$ref`` includes followed (deeper chains are refused, like cycles)."""

MAX_REF_INCLUDES = 10_000
"""Most ``$ref`` includes one mixture file may expand to, all together, a file counted each time it is included:
without a cycle, files that each include the next twice expand to ``2**levels`` copies."""

MAX_REF_BYTES = MAX_JSON_BYTES
"""Most bytes of included files one mixture file may expand to, all together (64 MiB), a file counted each time it
is included: the inlined document stays within twice the size cap of one JSON file."""


class RefBudget:
    """What the ``$ref`` includes of one mixture file have used so far (:data:`MAX_REF_INCLUDES`,
    :data:`MAX_REF_BYTES`), and the files already read (each is read and parsed once, however often included).

    Args:
        mixture: the mixture file named on the command line (named by the errors).
    """

    def __init__(self, mixture: Path):
        self.mixture = mixture
        self.includes = 0
        self.bytes = 0
        self._read: dict[Path, tuple[Any, int]] = {}

    def load(self, target: Path) -> Any:
        """The parsed content of the included file ``target``, counted against the budget.

        Raises:
            UsageError: the budget is exceeded, or the file cannot be read (see :func:`_load_json_file`).
        """
        self.includes += 1
        if self.includes > MAX_REF_INCLUDES:
            raise UsageError(f"its $ref includes expand to more than {MAX_REF_INCLUDES:,} included files (a file "
                             "counted each time it is included); refused", self.mixture)
        if target not in self._read:
            doc = _load_json_file(target)
            self._read[target] = (doc, os.stat(target).st_size)
        doc, size = self._read[target]
        self.bytes += size
        if self.bytes > MAX_REF_BYTES:
            raise UsageError(f"its $ref includes expand to more than {MAX_REF_BYTES // 2**20} MiB of included files "
                             "(a file counted each time it is included); refused", self.mixture)
        return doc


def resolve_refs(obj: Any, base: Path, stack: tuple[Path, ...], top: Path | None = None, _level: int = 0,
                 budget: RefBudget | None = None) -> Any:
    """Resolve ``{"$ref": ...}`` includes recursively (see module docstring).

    Args:
        obj: parsed JSON.
        base: the folder relative ``$ref`` paths are resolved against (the including file's folder).
        stack: the chain of files being included (the first is the mixture file), for cycle detection.
        top: the folder every ``$ref`` must stay inside (default: the first file's folder).
        budget: the includes and bytes used so far (default: a new :class:`RefBudget` for ``stack[0]``).

    Raises:
        UsageError: a cycle, a chain deeper than :data:`MAX_REF_DEPTH`, a ``$ref`` outside ``top``, a missing,
            oversized, non-regular or malformed include, more than :data:`MAX_REF_INCLUDES` includes or
            :data:`MAX_REF_BYTES` of included files in all, or a document nested deeper than
            :data:`lerobot_tools._io.MAX_JSON_DEPTH` levels once its includes are inlined.
    """
    top = top if top is not None else stack[0].parent
    budget = budget if budget is not None else RefBudget(stack[0])
    if _level > MAX_JSON_DEPTH:
        raise UsageError(f"is JSON nested too deeply once its $ref includes are inlined (more than {MAX_JSON_DEPTH} "
                         "levels)", stack[0])
    if isinstance(obj, dict):
        if "$ref" in obj:
            ref = obj["$ref"]
            if not isinstance(ref, str):
                raise UsageError(f"$ref must be a string, got {type(ref).__name__}", stack[-1])
            target = _ref_target(ref, base, top, stack[-1])
            if target in stack:
                chain = " -> ".join(p.name for p in (*stack, target))
                raise UsageError(f"$ref cycle: {chain}", stack[-1])
            if len(stack) > MAX_REF_DEPTH:
                raise UsageError(f"$ref chain deeper than {MAX_REF_DEPTH} files", stack[-1])
            loaded = _absolutize_roots(budget.load(target), target.parent)
            included = resolve_refs(loaded, target.parent, (*stack, target), top, _level, budget)
            siblings = {k: resolve_refs(v, base, stack, top, _level + 1, budget) for k, v in obj.items()
                        if k != "$ref"}
            return _deep_merge(included, siblings)
        return {k: resolve_refs(v, base, stack, top, _level + 1, budget) for k, v in obj.items()}
    if isinstance(obj, list):
        return [resolve_refs(v, base, stack, top, _level + 1, budget) for v in obj]
    return obj


def _read_json_mixture(path: Path, text: str) -> MixtureSpec:
    real = path.resolve()
    raw = loads_json(text, path, error=UsageError)
    doc = resolve_refs(_absolutize_roots(raw, real.parent), real.parent, (real,), real.parent)
    datasets = None
    where = "datasets"
    settings: dict = {}
    if isinstance(doc, list):
        datasets, where = doc, ""
    elif isinstance(doc, dict):
        mix = doc.get("dataset_mixture")
        if isinstance(mix, dict) and isinstance(mix.get("datasets"), list):
            datasets, where, settings = mix["datasets"], "dataset_mixture.datasets", mix
        elif isinstance(doc.get("datasets"), list):
            datasets, settings = doc["datasets"], doc
    if datasets is None:
        raise UsageError("no dataset list found (expected dataset_mixture.datasets, datasets, or a JSON list)", path)
    entries = []
    for i, item in enumerate(datasets):
        source = f"{path}:{where}[{i}]" if where else f"{path}:[{i}]"
        entries.append(_json_entry(item, source))
    prefix = "dataset_mixture." if where.startswith("dataset_mixture") else ""
    weights = settings.get("weights")
    if weights is not None:
        if not isinstance(weights, list) or len(weights) != len(entries):
            n = len(weights) if isinstance(weights, list) else type(weights).__name__
            raise UsageError(f"{prefix}weights must be a list with one weight per dataset "
                             f"({len(entries)}), got {n}", path)
        for i, (entry, w) in enumerate(zip(entries, weights)):
            try:
                entry.weight = parse_weight(w)
            except ValueError as exc:
                raise UsageError(f"{prefix}weights[{i}]: {exc}", path) from None
    action_freq = settings.get("action_freq")
    if action_freq is not None:
        if (isinstance(action_freq, bool) or not isinstance(action_freq, (int, float))
                or not math.isfinite(action_freq) or action_freq <= 0):
            raise UsageError(f"{prefix}action_freq must be a positive number of Hz, got {action_freq!r}", path)
        action_freq = float(action_freq)
    return MixtureSpec(path, entries, action_freq, weights is not None)


def _json_entry(item: Any, source: str) -> MixtureEntry:
    if not isinstance(item, dict):
        return MixtureEntry(json.dumps(item)[:80], source, error=f"entry must be an object, got {type(item).__name__}")
    spec = item.get("repo_id") or item.get("root") or item.get("vqa") or json.dumps(item)[:80]
    entry = MixtureEntry(str(spec), source)
    repo_id, root, rev = item.get("repo_id"), item.get("root"), item.get("revision")
    if "vqa" in item and not repo_id:
        entry.error = "VQA entries are not LeRobot datasets; not validated"
        return entry
    if repo_id is not None and (not isinstance(repo_id, str) or not REPO_ID_RE.match(repo_id)):
        entry.error = f"repo_id {repo_id!r} is not of the form org/name"
        return entry
    if root is not None and not isinstance(root, str):
        entry.error = f"root must be a string, got {type(root).__name__}"
        return entry
    if root is not None and "\x00" in root:
        entry.error = "root contains a NUL character"
        return entry
    if rev is not None and not isinstance(rev, str):
        entry.error = f"revision must be a string, got {type(rev).__name__}"
        return entry
    if rev is not None and revision_problem(rev):
        entry.error = revision_problem(rev)
        return entry
    if repo_id is None and root is None:
        entry.error = "entry has neither repo_id nor root"
        return entry
    entry.repo_id = repo_id
    entry.root = Path(root) if root else None
    entry.revision = rev
    for key in ("episodes", "excluded_episodes"):
        value = item.get(key)
        if value is None:
            continue
        try:
            if isinstance(value, str):
                parsed = parse_episode_spec(value)
            elif isinstance(value, list) and all(isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in value):
                parsed = sorted(set(value))
            else:
                raise ValueError(f"{key} must be a list of non-negative integers")
        except ValueError as exc:
            entry.error = str(exc)
            return entry
        setattr(entry, key, parsed)
    mapping = item.get("data_features_name_mapping")
    if mapping is not None:
        if not isinstance(mapping, dict) or not all(isinstance(v, str) for v in mapping.values()):
            entry.error = "data_features_name_mapping must map roles to column names"
            return entry
        entry.feature_mapping = dict(mapping)
    entry.extras = {k: v for k, v in item.items() if k not in {
        "repo_id", "root", "revision", "episodes", "excluded_episodes", "data_features_name_mapping"}}
    return entry
