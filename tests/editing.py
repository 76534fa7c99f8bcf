"""Helpers the tests share to edit a dataset on disk and to fingerprint a folder (``tests.editing``)."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path


def tree(root: Path) -> dict[str, str]:
    """sha256 of every file, and every folder and symlink, below ``root`` (``.lrtool`` included)."""
    out = {}
    for p in sorted(Path(root).rglob("*")):
        rel = p.relative_to(root).as_posix()
        if p.is_symlink():
            out[rel] = "-> " + os.readlink(p)
        elif p.is_file():
            out[rel] = hashlib.sha256(p.read_bytes()).hexdigest()
        else:
            out[rel] = "dir"
    return out


def edit_v21_stats(root: Path, fn) -> None:
    """Rewrite ``meta/episodes_stats.jsonl``: ``fn(episode_index, stats)`` edits each line's stats in place."""
    path = root / "meta/episodes_stats.jsonl"
    out = []
    for line in path.read_text().splitlines():
        obj = json.loads(line)
        fn(obj["episode_index"], obj["stats"])
        out.append(json.dumps(obj))
    path.write_text("\n".join(out) + "\n")


def edit_json(path: Path, fn) -> None:
    """Rewrite a JSON file: ``fn(obj)`` edits the parsed object in place."""
    obj = json.loads(path.read_text())
    fn(obj)
    path.write_text(json.dumps(obj, indent=4))
