"""Work and memory bounded by what is on disk, not by what a file claims.

A number read from a file (``total_episodes: 10**30``, a ``splits`` end, a ``task_index`` of 10**12, an
``episodes=`` range) is valid JSON or text; lrtool never allocates one entry per unit of it, and says in one finding
which field claims what. ``$ref`` includes expand to a bounded number of files and bytes, however they fan out.
The commands run in a subprocess under an address-space cap and a timeout: before, these inputs ran out of memory
(MemoryError reported as "lrtool failed on this dataset ... please report it") or ran for minutes to hours.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from lerobot_tools.checks.counts import uncovered
from lerobot_tools.dataset import mixture
from lerobot_tools.errors import UsageError

REPO = Path(__file__).resolve().parents[2]
CLEAN = REPO / "fixtures" / "datasets" / "clean_v21"
HUGE = 10**30


def lrtool_json(*args: str, timeout: float = 120, mem_mb: int = 2048) -> tuple[int, dict, str]:
    """``lrtool ARGS --format json`` in a subprocess under an address-space cap: (exit status, document, stderr)."""
    def limit() -> None:  # pragma: no cover (runs in the child)
        import resource

        resource.setrlimit(resource.RLIMIT_AS, (mem_mb * 2**20, mem_mb * 2**20))

    env = {**os.environ, "PYTHONPATH": str(REPO)}
    res = subprocess.run([sys.executable, "-m", "lerobot_tools", *args, "--format", "json"], capture_output=True,
                         text=True, timeout=timeout, env=env, preexec_fn=limit, cwd=REPO)
    assert "Traceback" not in res.stderr, res.stderr
    return res.returncode, json.loads(res.stdout), res.stderr


def findings(doc: dict) -> list[tuple[str, str | None, str]]:
    (ds,) = doc["datasets"]
    out = [(f["check"], f.get("path"), f["message"]) for f in ds["findings"]]
    assert not [f for f in out if "please report" in f[2]], out
    return out


@pytest.fixture
def alarm():
    """Fail (instead of running for an hour) when an in-process call takes 30 s."""
    import signal

    def ring(signum, frame):
        raise TimeoutError("ran for 30 s")

    old = signal.signal(signal.SIGALRM, ring)
    signal.alarm(30)
    yield
    signal.alarm(0)
    signal.signal(signal.SIGALRM, old)


@pytest.fixture
def ds(tmp_path):
    root = tmp_path / "ds"
    shutil.copytree(CLEAN, root)
    return root


def edit_info(root: Path, **changes) -> None:
    p = root / "meta" / "info.json"
    info = json.loads(p.read_text())
    info.update(changes)
    p.write_text(json.dumps(info))


# ---------------------------------------------------------------------- splits
def test_splits_with_a_huge_total_episodes_are_counted_as_ranges(ds):
    edit_info(ds, total_episodes=HUGE, splits={"train": "0:3"})
    status, doc, _ = lrtool_json("validate", str(ds))
    got = findings(doc)
    assert status == 1
    assert ("C001", "meta/info.json", f"total_episodes is {HUGE} but the episode metadata has 3 episode(s)") in got
    # the split covers every episode the metadata has: wrong against total_episodes only, so no C008
    assert [f for f in got if f[0] == "C008"] == []
    # without episode metadata total_episodes is the only reference: the episodes left out are counted as ranges
    (ds / "meta" / "episodes.jsonl").unlink()
    status, doc, _ = lrtool_json("validate", str(ds))
    assert ("C008", "meta/info.json", f"splits leave {HUGE - 3} of the {HUGE} episode(s) of total_episodes out of "
                                      f"every split: episode(s) 3, 4, 5, 6, 7 and {HUGE - 8} more") in findings(doc)


def test_a_split_ending_past_a_huge_number_is_named_without_counting_it(ds):
    edit_info(ds, splits={"train": f"0:{HUGE}"})
    _, doc, _ = lrtool_json("validate", str(ds))
    assert [f for f in findings(doc) if f[0] == "C008"] == [
        ("C008", "meta/info.json", f"splits['train'] = '0:{HUGE}' points past the last episode (total_episodes = 3); "
                                   "a split-aware reader asks for episodes that do not exist")]


@pytest.mark.parametrize("ranges, n, gaps", [
    ([], 3, [(0, 3)]), ([(0, 3)], 3, []), ([(0, 1), (2, 4)], 3, [(1, 2)]), ([(1, 2)], 3, [(0, 1), (2, 3)]),
    ([(2, 4), (0, 1)], 5, [(1, 2), (4, 5)]), ([(0, 2), (1, 5)], 5, []), ([(0, 5), (1, 2)], 6, [(5, 6)]),
    ([(3, 9)], 3, [(0, 3)]), ([(0, 1)], 0, []), ([(0, HUGE)], HUGE, []), ([(0, 3)], HUGE, [(3, HUGE)]),
    ([(1, 1)], 2, [(0, 2)]),
])
def test_uncovered_episode_ranges(ranges, n, gaps):
    assert uncovered(ranges, n) == gaps


# ---------------------------------------------------------------------- total_episodes without episode metadata
def test_v21_without_episode_metadata_names_at_most_a_thousand_more_files_than_on_disk(ds):
    # total_episodes names every file of a v2.x dataset whose episodes.jsonl is gone: 10**30 of them
    (ds / "meta" / "episodes.jsonl").unlink()
    edit_info(ds, total_episodes=HUGE)
    t0 = time.perf_counter()
    status, doc, _ = lrtool_json("validate", str(ds), timeout=120)
    assert time.perf_counter() - t0 < 120
    (report,) = doc["datasets"]
    got = findings(doc)
    assert status == 1
    assert ("C001", "meta/info.json", f"total_episodes is {HUGE} but only 3 data file(s) on disk fit data_path: the "
                                      f"files of its first 1003 episode(s) are checked, the other {HUGE - 1003} are "
                                      "not looked for") in got
    (missing,) = [f for f in report["findings"] if f["check"] == "F001"]
    assert missing["count"] == 1000  # episodes 3 .. 1002, not one per claimed episode


def test_v21_total_episodes_within_the_files_on_disk_plus_a_thousand_names_every_file(ds):
    (ds / "meta" / "episodes.jsonl").unlink()
    edit_info(ds, total_episodes=1003)
    from lerobot_tools.dataset.model import Dataset
    from lerobot_tools.dataset.ondisk import data_files_from_layout

    layout = data_files_from_layout(Dataset(ds))
    assert (layout.named, layout.unnamed, len(layout.expected)) == (1003, 0, 1003)
    edit_info(ds, total_episodes=1004)
    layout = data_files_from_layout(Dataset(ds))
    assert (layout.named, layout.unnamed, len(layout.expected)) == (1003, 1, 1003)


# ---------------------------------------------------------------------- task_index
def test_a_huge_task_index_in_the_task_table_allocates_nothing_per_index(ds):
    with (ds / "meta" / "tasks.jsonl").open("a") as fh:
        fh.write(json.dumps({"task_index": 10**12, "task": "far away"}) + "\n")
    status, doc, _ = lrtool_json("validate", str(ds))
    got = findings(doc)
    assert not [f for f in got if f[0] == "M001"], got


def test_task_index_values_outside_a_gap_in_the_table_are_still_found(tmp_path):
    # task indices 0 and 2 (no 1): the footer's min/max (0..1) is not enough, the column is read
    import pyarrow.parquet as pq

    root = tmp_path / "ds"
    shutil.copytree(CLEAN, root)
    (root / "meta" / "tasks.jsonl").write_text(json.dumps({"task_index": 0, "task": "pick up the cube"}) + "\n" +
                                               json.dumps({"task_index": 2, "task": "place"}) + "\n")
    from lerobot_tools.checks.engine import ValidateOptions, validate_target
    from lerobot_tools.dataset import resolve_targets

    (t,) = resolve_targets([str(root)])
    rep = validate_target(t, ValidateOptions())
    t003 = [f for f in rep.findings if f.check == "T003"]
    values = {v for p in sorted((root / "data").rglob("*.parquet")) for v in pq.read_table(p)["task_index"].to_pylist()}
    assert values == {0, 1} and t003 and "[1]" in t003[0].message, [f.message for f in rep.findings]


# ---------------------------------------------------------------------- $ref fan-out
def fan_out(folder: Path, levels: int, width: int = 2) -> Path:
    """Files f0 .. f<levels>: each includes the next ``width`` times (no cycle); the mixture includes f0."""
    for i in range(levels):
        (folder / f"f{i}.json").write_text(json.dumps([{"$ref": f"f{i + 1}.json"}] * width))
    (folder / f"f{levels}.json").write_text(json.dumps({"repo_id": "org/x"}))
    mix = folder / "mix.json"
    mix.write_text(json.dumps({"dataset_mixture": {"datasets": [{"$ref": "f0.json"}]}}))
    return mix


def test_ref_fan_out_is_refused_once_it_passes_the_include_budget(tmp_path, alarm):
    mix = fan_out(tmp_path, 24)  # 2**24 includes: about an hour before
    t0 = time.perf_counter()
    with pytest.raises(UsageError) as exc:
        mixture.read_mixture(mix)
    assert time.perf_counter() - t0 < 10
    assert str(exc.value) == (f"{mix.resolve()}: its $ref includes expand to more than 10,000 included files (a file "
                              "counted each time it is included); refused")


def test_ref_fan_out_within_the_budget_expands_and_reads_each_file_once(tmp_path, monkeypatch):
    mix = fan_out(tmp_path, 3)  # 8 leaves
    reads: list[Path] = []
    real = mixture._load_json_file
    monkeypatch.setattr(mixture, "_load_json_file", lambda p: reads.append(p) or real(p))
    assert len(mixture.read_mixture(mix)) == 1  # one entry (a list of 8 objects: refused as an entry, not a file)
    assert sorted(p.name for p in reads) == ["f0.json", "f1.json", "f2.json", "f3.json"]


def test_ref_budget_counts_includes_up_to_the_limit(tmp_path, monkeypatch):
    monkeypatch.setattr(mixture, "MAX_REF_INCLUDES", 6)
    (tmp_path / "leaf.json").write_text(json.dumps({"repo_id": "org/x"}))
    (tmp_path / "six.json").write_text(json.dumps({"datasets": [{"$ref": "leaf.json"}] * 6}))
    (tmp_path / "seven.json").write_text(json.dumps({"datasets": [{"$ref": "leaf.json"}] * 7}))
    assert [e.repo_id for e in mixture.read_mixture(tmp_path / "six.json")] == ["org/x"] * 6
    with pytest.raises(UsageError, match="more than 6 included files"):
        mixture.read_mixture(tmp_path / "seven.json")


def test_ref_budget_counts_bytes_each_time_a_file_is_included(tmp_path, alarm):
    # one 2 MiB file included 40 times: 80 MiB of includes, more than the 64 MiB a mixture may expand to
    (tmp_path / "big.json").write_text(json.dumps({"repo_id": "org/x", "pad": "x" * (2 * 2**20)}))
    mix = tmp_path / "mix.json"
    mix.write_text(json.dumps({"datasets": [{"$ref": "big.json"}] * 40}))
    with pytest.raises(UsageError) as exc:
        mixture.read_mixture(mix)
    assert str(exc.value) == (f"{mix.resolve()}: its $ref includes expand to more than 64 MiB of included files (a "
                              "file counted each time it is included); refused")
    few = tmp_path / "few.json"
    few.write_text(json.dumps({"datasets": [{"$ref": "big.json"}] * 31}))  # 62 MiB: within the budget
    assert len(mixture.read_mixture(few)) == 31


def test_ref_fan_out_cli_is_one_line_exit_2(tmp_path):
    mix = fan_out(tmp_path, 24)
    for args in (["validate", str(mix)], ["prefetch", "--offline", str(mix)]):
        res = subprocess.run([sys.executable, "-m", "lerobot_tools", *args], capture_output=True, text=True,
                             timeout=60, env={**os.environ, "PYTHONPATH": str(REPO)}, cwd=REPO)
        assert res.returncode == 2, (args, res.stderr)
        assert res.stderr == (f"lrtool: error: {mix.resolve()}: its $ref includes expand to more than 10,000 "
                              "included files (a file counted each time it is included); refused\n"), res.stderr


# ---------------------------------------------------------------------- episodes= lists
def test_episode_list_is_counted_before_it_is_built(monkeypatch):
    monkeypatch.setattr(mixture, "MAX_EPISODES", 100)
    assert mixture.parse_episode_spec("0-49,40-99") == list(range(100))  # overlaps counted once
    assert mixture.parse_episode_spec("0-99") == list(range(100))
    for spec, n in (("0-100", 101), ("0-60,100-160", 122), (f"0-{HUGE}", HUGE + 1)):
        with pytest.raises(ValueError) as exc:
            mixture.parse_episode_spec(spec)
        assert str(exc.value) == (f"episode list {spec[:40]!r} names {n:,} episodes, more than 100; implausibly "
                                  "large")


def test_episode_list_of_a_mixture_line_is_an_entry_error_not_an_allocation(tmp_path):
    mix = tmp_path / "m.txt"
    mix.write_text(f"{CLEAN} episodes=0-6000000,7000000-12000000\n")
    (entry,) = mixture.read_mixture(mix)
    assert entry.episodes is None and "names 11,000,002 episodes, more than 10,000,000" in entry.error
