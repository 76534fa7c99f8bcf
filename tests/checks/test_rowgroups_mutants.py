"""Family R (row-group layout) held to its exact counts, thresholds and messages.

Each dataset is written by :mod:`lerobot_tools.testing.synth` (real parquet, no video); the data file is then
rewritten with pyarrow into the row-group layout under test. Expected counts and sizes are read back from the
file's own footer with pyarrow, never from lrtool.
"""

from __future__ import annotations

from pathlib import Path

import pyarrow.parquet as pq
import pytest

from lerobot_tools.checks.engine import ValidateOptions
from lerobot_tools.checks.rowgroups import MB, row_group_defects
from lerobot_tools.dataset.footers import read_footer
from lerobot_tools.testing.synth import SynthSpec, build_dataset
from lerobot_tools.validate import validate

DATA = "data/chunk-000/file-000.parquet"


def _dataset(tmp_path: Path, *, row_group_size: int, page_index: bool = False, statistics: bool = True,
             name: str = "ds") -> Path:
    """One v3.0 data file of 3 episodes x 400 frames (1,200 rows), rewritten with ``row_group_size`` rows per
    row group."""
    root = build_dataset(tmp_path / name, SynthSpec(video_codec=None, video_keys=(), episode_lengths=(400, 400, 400),
                                                    extra_vector_features={"emb": 64}, episodes_per_file=3))
    path = root / DATA
    table = pq.read_table(path)
    pq.write_table(table, path, row_group_size=row_group_size, write_page_index=page_index,
                   write_statistics=statistics)
    return root


def _report(root: Path, **opts):
    (r,) = validate([str(root)], ValidateOptions(**opts))
    return r


def _findings(report, check: str):
    return [f for f in report.findings if f.check == check]


def test_row_group_defects_counts_each_defect_per_row_group(tmp_path):
    # 500-row groups over 400-frame episodes: [0, 500) spans episodes 0-1, [500, 1000) spans 1-2, [1000, 1200) is
    # episode 2 alone
    root = _dataset(tmp_path, row_group_size=500)
    footer = read_footer(root / DATA, DATA)
    sizes = [pq.ParquetFile(root / DATA).metadata.row_group(i).total_byte_size for i in range(3)]
    big, small = min(sizes[:2]), sizes[2]
    assert big > small
    # a limit whose double lies between the small and the two large groups: exactly 2 are oversize
    limit = (small + big) / 2 / 2 / MB
    assert row_group_defects(footer, limit) == {"spans": 2, "oversize": 2, "no_page_index": 3}
    # a group exactly at twice the limit is not above it; one byte under and it is
    assert row_group_defects(footer, max(sizes) / 2 / MB)["oversize"] == 0
    assert row_group_defects(footer, (big - 1) / 2 / MB)["oversize"] == 2
    with_index = _dataset(tmp_path, row_group_size=500, page_index=True, name="indexed")
    assert row_group_defects(read_footer(with_index / DATA, DATA), 1e9) == {"spans": 2, "oversize": 0,
                                                                          "no_page_index": 0}


def test_r001_r002_r003_messages(tmp_path):
    root = _dataset(tmp_path, row_group_size=500)
    md = pq.ParquetFile(root / DATA).metadata
    biggest = max(md.row_group(i).total_byte_size for i in range(md.num_row_groups))
    limit = biggest / 2 / MB * 0.75  # every group is above twice this limit except the 200-row one
    small = md.row_group(2).total_byte_size
    assert small <= 2 * limit * MB < biggest
    r = _report(root, row_group_mb=limit)
    (r001,) = _findings(r, "R001")
    assert r001.message == "2 of 3 row group(s) hold several episodes (file has 1200 rows)"
    assert r001.path == DATA and r001.severity == "warning"
    (r002,) = _findings(r, "R002")
    assert r002.message == (f"2 row group(s) above {2 * limit:g} MB uncompressed (largest {biggest / MB:.0f} MB)")
    assert r002.path == DATA
    (r003,) = _findings(r, "R003")
    assert r003.message == "no page index (column/offset index) in the footer"
    assert r003.path == DATA and r003.severity == "info"
    assert not any(n.checks.startswith("R001") for n in r.not_checked)


def test_one_episode_per_row_group_with_a_page_index_raises_nothing(tmp_path):
    root = _dataset(tmp_path, row_group_size=400, page_index=True)
    r = _report(root, row_group_mb=1e6)
    assert not [f for f in r.findings if f.check.startswith("R")]


def test_a_file_without_episode_index_statistics_is_said_not_checked_for_r001(tmp_path):
    root = _dataset(tmp_path, row_group_size=500, statistics=False)
    r = _report(root)
    assert not _findings(r, "R001")  # spans cannot be seen without min/max...
    skipped = [n for n in r.not_checked if n.checks == "R001 (partly)"]
    assert [n.reason for n in skipped] == ["1 data file(s) have no episode_index statistics in their footers"]
    # ...and a file that has them is not said to lack them
    assert not [n for n in _report(_dataset(tmp_path, row_group_size=500, name="stats")).not_checked
                if n.checks == "R001 (partly)"]


@pytest.mark.parametrize("world_size,expected", [
    (1, None),  # 1 file, 3 row groups: both divide
    (3, ("info", "1 file(s) (the streaming shard unit) do not divide across world size 3; the 3 row groups do, "
                 "so call IterableDataset.reshard() before split_dataset_by_node")),
    (2, ("warning", "1 file(s) and 3 row group(s) do not divide evenly across world size 2: "
                    "split_dataset_by_node would make every rank read every shard")),
])
def test_r004_world_size(tmp_path, world_size, expected):
    root = _dataset(tmp_path, row_group_size=400)
    r = _report(root, world_size=world_size)
    got = [(f.severity, f.message) for f in _findings(r, "R004")]
    assert got == ([] if expected is None else [expected])
    assert not [n for n in r.not_checked if n.checks == "R004"]


def test_r004_without_a_world_size_is_said_not_checked_unless_no_data_file_was_read(tmp_path):
    root = _dataset(tmp_path, row_group_size=400)
    notes = [(n.checks, n.reason) for n in _report(root).not_checked]
    assert ("R004", "--world-size not given") in notes
    (root / DATA).unlink()  # no footer read: family R does not run, so it has nothing to say about R004
    notes = [(n.checks, n.reason) for n in _report(root).not_checked]
    assert not [c for c, _ in notes if c == "R004"]


def _two_files(tmp_path: Path, *, sizes=(500, 300), statistics: bool = True) -> Path:
    """4 episodes x 400 frames in two data files (episodes 0-1 and 2-3, 800 rows each), rewritten with
    ``sizes[i]`` rows per row group: with (500, 300), file-000 has 2 row groups (1 spans episodes 0-1) and
    file-001 has 3 (1 spans episodes 2-3): 5 in all."""
    root = build_dataset(tmp_path / "two", SynthSpec(video_codec=None, video_keys=(), episode_lengths=(400,) * 4,
                                                     extra_vector_features={"emb": 2048}, episodes_per_file=2))
    for i, n in enumerate(sizes):
        path = root / f"data/chunk-000/file-00{i}.parquet"
        pq.write_table(pq.read_table(path), path, row_group_size=n, write_statistics=statistics)
    return root


def test_findings_of_two_files_group_under_their_titles(tmp_path):
    root = _two_files(tmp_path)
    md = [pq.ParquetFile(root / f"data/chunk-000/file-00{i}.parquet").metadata for i in range(2)]
    sizes = [[m.row_group(j).total_byte_size for j in range(m.num_row_groups)] for m in md]
    assert [len(s) for s in sizes] == [2, 3]
    # twice the limit just under the 300-row groups: file-000 has 2 groups above it (500 and 300 rows, largest
    # ~5 MB), file-001 2 (300 and 300 rows, largest ~3 MB); its 200-row group is not above it
    limit = min(sizes[0][1], sizes[1][0], sizes[1][1]) / 2 / MB * 0.999
    assert sizes[1][2] <= 2 * limit * MB
    r = _report(root, row_group_mb=limit)
    files = "data/chunk-000/file-000.parquet, data/chunk-000/file-001.parquet"
    (r001,) = _findings(r, "R001")
    assert r001.count == 2
    assert r001.message == ("1 of 2 row group(s) hold several episodes (file has 800 rows) "
                            f"(2 occurrences: row groups span several episodes; e.g. {files})")
    (r002,) = _findings(r, "R002")
    assert round(max(sizes[0]) / MB) != round(max(sizes[1]) / MB)  # the two messages differ: the title is shown
    assert r002.count == 2
    assert r002.message == (f"2 row group(s) above {2 * limit:g} MB uncompressed (largest {max(sizes[0]) / MB:.0f} MB) "
                            f"(2 occurrences: row groups above {2 * limit:g} MB uncompressed; e.g. {files})")
    (r003,) = _findings(r, "R003")  # the same message twice: no title needed
    assert r003.message == f"no page index (column/offset index) in the footer (2 occurrences; e.g. {files})"


@pytest.mark.parametrize("world_size,expected", [
    (2, None),  # 2 files divide across 2 ranks (5 row groups do not, but the files are the shard unit)
    (5, ("info", "2 file(s) (the streaming shard unit) do not divide across world size 5; the 5 row groups do, "
                 "so call IterableDataset.reshard() before split_dataset_by_node")),
    (3, ("warning", "2 file(s) and 5 row group(s) do not divide evenly across world size 3: "
                    "split_dataset_by_node would make every rank read every shard")),
])
def test_r004_counts_the_row_groups_of_every_file(tmp_path, world_size, expected):
    r = _report(_two_files(tmp_path), world_size=world_size)
    got = [(f.severity, f.message) for f in _findings(r, "R004")]
    assert got == ([] if expected is None else [expected])


def test_r004_ignored_is_not_said_not_checked(tmp_path):
    root = _dataset(tmp_path, row_group_size=400)
    r = _report(root, ignore={"R004"})
    assert not [n for n in r.not_checked if n.checks == "R004"]


def test_files_without_statistics_are_counted(tmp_path):
    r = _report(_two_files(tmp_path, statistics=False))
    skipped = [n.reason for n in r.not_checked if n.checks == "R001 (partly)"]
    assert skipped == ["2 data file(s) have no episode_index statistics in their footers"]
