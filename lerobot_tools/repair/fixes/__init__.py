"""One function per repair, each tied to the check ID(s) it fixes.

Every fix reads the dataset itself (the validate report only says *which* checks fired; grouped findings
do not list every file) and records, on a shared :class:`RepairContext`, either planned changes plus a
:class:`~lerobot_tools.repair.model.Repair`, or an :class:`~lerobot_tools.repair.model.Unrepairable` saying
why not and what the user must do. Nothing is written here. A fix never guesses: a counter is recomputed
only from files that can be read, a declaration is taken from the data only when every data file agrees,
a list is cast to a fixed size only after every row's length was checked.

Modules, one per fix family: :mod:`.context` (:class:`RepairContext`), :mod:`.declarations` (I005, I006, I007,
S002), :mod:`.casts` (S003, S004, S005, S007), :mod:`.files` (F001, and the file moves F002 shares), :mod:`.videos` (F002, F009), :mod:`.tasks` (T002, T004,
T007), :mod:`.counters` (C001-C003, C008, T006), :mod:`.metadata` (S006 and the final metadata update),
:mod:`.stats` (G003-G008, G010: statistics recomputed from the data), :mod:`.timestamps` (F010 segments and the D003
timestamp column re-derived from the videos' frame timestamps).
:data:`FIXES` lists them in the order they run.

Sources of the format facts: docs/format.md#layouts (templates), docs/format.md#info-json (counters),
docs/format.md#features, docs/format.md#columns (physical variants, ``huggingface`` metadata), docs/format.md#tasks
(task tables), docs/format.md#videos (video ``info`` keys); the failure modes each fix addresses are in
docs/failure-modes.md, and each check's repair in docs/checks.md.
"""

from __future__ import annotations

from typing import Callable

from lerobot_tools.repair.fixes.casts import fix_dtype, fix_shape, fix_variable_lists
from lerobot_tools.repair.fixes.context import RepairContext
from lerobot_tools.repair.fixes.counters import fix_counters
from lerobot_tools.repair.fixes.files import fix_data_files
from lerobot_tools.repair.fixes.declarations import (
    LANGUAGE_COLUMNS, feature_from_arrow, fix_feature_invalid, fix_fps, fix_names, fix_undeclared,
)
from lerobot_tools.repair.fixes.metadata import finalize, fix_hf_metadata
from lerobot_tools.repair.fixes.stats import STATS_CHECKS, fix_stats
from lerobot_tools.repair.fixes.tasks import fix_tasks
from lerobot_tools.repair.fixes.timestamps import fix_segment_times, fix_timestamp_column
from lerobot_tools.repair.fixes.videos import NEIGHBOUR_VIDEO_TEMPLATES, fix_video_declarations, fix_video_path

__all__ = [
    "FIXES", "LANGUAGE_COLUMNS", "fix_data_files", "NEIGHBOUR_VIDEO_TEMPLATES", "RepairContext", "feature_from_arrow", "finalize",
    "fix_counters", "fix_dtype", "fix_feature_invalid", "fix_fps", "fix_hf_metadata", "fix_names", "fix_shape",
    "fix_segment_times", "fix_stats", "fix_timestamp_column",
    "fix_tasks", "fix_undeclared", "fix_variable_lists", "fix_video_declarations", "fix_video_path",
]

#: The fixes in the order they run (declarations before casts before counters before metadata), with
#: the check IDs that trigger each. The catalogue states the same thing per check (``Check.repair ==
#: "auto"``, ``Check.repair_by`` = the fix's name; a test keeps them in agreement); S007 is fixed as a
#: consequence of ``fix_dtype`` and triggers nothing on its own.
FIXES: list[tuple[tuple[str, ...], Callable[[RepairContext], None]]] = [
    (("I005",), fix_fps),
    (("I006",), fix_feature_invalid),
    (("I007",), fix_names),
    (("S002",), fix_undeclared),
    (("S004",), fix_shape),
    (("S005",), fix_variable_lists),
    (("S003",), fix_dtype),
    (("F009",), fix_video_declarations),
    (("F001",), fix_data_files),
    (("F002",), fix_video_path),
    (("T004", "T007", "T002"), fix_tasks),
    (("C001", "C002", "T006", "C003", "C008"), fix_counters),
    (("S006",), fix_hf_metadata),
    (STATS_CHECKS, fix_stats),
    (("F010",), fix_segment_times),  # after the statistics: both may rewrite cells of one meta/episodes file
    (("D003",), fix_timestamp_column),
]
