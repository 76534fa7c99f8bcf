"""``mixture.lock``: the resolved commit SHA of every mixture entry.

With the commit known, prefetch skips the revision resolve (``GET /api/datasets/{repo}/revision/{rev}``)
and, once the tree listing of that commit is cached in the destination, makes no request at all for a
complete local copy (docs/prefetch.md#requests: a commit SHA is immutable, a branch is not).

Format (JSON, keys sorted so diffs stay small)::

    {
      "lrtool_lock": 1,
      "endpoint": "https://huggingface.co",
      "entries": {
        "lerobot/pusht@main": {"repo_id": "lerobot/pusht", "revision": "main", "commit": "<40 hex>"}
      }
    }

By default the lock sits beside the mixture file with the suffix replaced: ``mixture.txt`` ->
``mixture.lock``. Delete it, or run with ``--update-lock``, to move branches and tags to their
current commits.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from lerobot_tools._io import write_output_text
from lerobot_tools.dataset.mixture import SHA_RE
from lerobot_tools.errors import UsageError

LOCK_FORMAT = 1


def default_lock_path(mixture: Path) -> Path:
    """``<mixture folder>/<mixture stem>.lock`` (``mixture.txt`` -> ``mixture.lock``)."""
    mixture = Path(mixture)
    candidate = mixture.with_suffix(".lock")
    if candidate == mixture:
        candidate = mixture.with_name(mixture.name + ".lock")
    return candidate


@dataclass(frozen=True)
class LockEntry:
    repo_id: str
    revision: str
    commit: str


class LockFile:
    """A mixture lock file in memory.

    Args:
        path: where it lives (need not exist).
        endpoint: the Hub endpoint the commits were resolved against (informational).
        entries: ``"org/name@revision"`` -> :class:`LockEntry`.
    """

    def __init__(self, path: Path, endpoint: str | None = None, entries: dict[str, LockEntry] | None = None):
        self.path = Path(path)
        self.endpoint = endpoint
        self.entries: dict[str, LockEntry] = dict(entries or {})
        self._original = self._document()

    @classmethod
    def read(cls, path: Path) -> "LockFile":
        """Read ``path``; a missing file gives an empty lock.

        Raises:
            UsageError: the file exists but is not a valid lrtool lock (one-line message naming it).
        """
        from lerobot_tools._io import load_json_file

        path = Path(path)
        try:  # a regular file of at most 64 MiB, nested at most 100 levels (a FIFO or /dev/zero is refused)
            doc = load_json_file(path, error=UsageError)
        except FileNotFoundError:
            return cls(path)
        except OSError as exc:
            raise UsageError(f"lock file cannot be read ({exc.strerror or exc})", path) from None
        except UsageError as exc:
            raise UsageError(f"lock file {exc.message}", path) from None
        if not isinstance(doc, dict) or doc.get("lrtool_lock") != LOCK_FORMAT or not isinstance(doc.get("entries"), dict):
            raise UsageError(f"not an lrtool lock file (expected {{\"lrtool_lock\": {LOCK_FORMAT}, \"entries\": {{...}}}})", path)
        entries: dict[str, LockEntry] = {}
        for key, item in doc["entries"].items():
            if not (isinstance(item, dict) and isinstance(item.get("repo_id"), str)
                    and isinstance(item.get("revision"), str) and isinstance(item.get("commit"), str)
                    and SHA_RE.match(item["commit"])):
                raise UsageError(f"lock entry {key!r} needs repo_id, revision and a 40-hex commit", path)
            entries[key] = LockEntry(item["repo_id"], item["revision"], item["commit"])
        lock = cls(path, doc.get("endpoint") if isinstance(doc.get("endpoint"), str) else None, entries)
        return lock

    @staticmethod
    def key(repo_id: str, revision: str) -> str:
        return f"{repo_id}@{revision}"

    def commit(self, repo_id: str, revision: str) -> str | None:
        """The locked commit of ``repo_id@revision``, or None."""
        e = self.entries.get(self.key(repo_id, revision))
        return e.commit if e is not None else None

    def set(self, repo_id: str, revision: str, commit: str) -> None:
        self.entries[self.key(repo_id, revision)] = LockEntry(repo_id, revision, commit)

    def retain(self, keys: set[str]) -> None:
        """Drop entries the mixture no longer names."""
        self.entries = {k: v for k, v in self.entries.items() if k in keys}

    def _document(self) -> dict:
        return {
            "lrtool_lock": LOCK_FORMAT,
            "endpoint": self.endpoint,
            "entries": {k: {"repo_id": e.repo_id, "revision": e.revision, "commit": e.commit}
                        for k, e in sorted(self.entries.items())},
        }

    @property
    def changed(self) -> bool:
        return self._document() != self._original

    def write(self) -> bool:
        """Write atomically if anything changed; return whether the file was written.

        The file is written only as a regular file (:func:`lerobot_tools._io.write_output_text`): a device,
        FIFO, folder or symlink at ``path`` is refused, never replaced.

        Raises:
            OSError: its folder cannot be created.
            UsageError: one line naming the file: not a regular file, or it cannot be written.
        """
        if not self.changed and self.path.exists():
            return False
        self.path.parent.mkdir(parents=True, exist_ok=True)
        write_output_text(self.path, json.dumps(self._document(), indent=2, sort_keys=True) + "\n", "lock file",
                          error=UsageError)
        self._original = self._document()
        return True
