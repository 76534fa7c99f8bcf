"""Documented CLI flags, each exercised through the CLI with its effect asserted (not only the exit status).

Flags that have boundary tests elsewhere (``--tolerance-s``, ``--row-group-mb``: tests/checks/test_boundaries.py) are
not repeated here.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from lerobot_tools.cli import cli
from lerobot_tools.prefetch.lock import LockFile
from tests.hubserver import HubServer, read_folder

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "fixtures" / "datasets"
V21 = read_folder(FIXTURES / "clean_v21")


def invoke(*args: str):
    return CliRunner().invoke(cli, [str(a) for a in args])


def test_repair_drop_undeclared_removes_the_column_only_with_the_flag(tmp_path):
    root = tmp_path / "ds"
    shutil.copytree(FIXTURES / "broken_undeclared_column", root)
    files = sorted((root / "data").rglob("*.parquet"))
    r = invoke("repair", root, "--dry-run", "--drop-undeclared")
    assert r.exit_code == 0 and "language_events" in r.output, r.output  # the plan names the column ...
    assert all("language_events" in pq.read_schema(f).names for f in files)  # ... and the dry run keeps it
    r = invoke("repair", root, "--drop-undeclared")
    assert r.exit_code == 0, r.output
    assert all("language_events" not in pq.read_schema(f).names for f in files)
    assert invoke("repair", "--undo", root).exit_code == 0
    assert all("language_events" in pq.read_schema(f).names for f in files)
    r = invoke("repair", root)  # without the flag the column is kept (declared or left, never dropped)
    assert all("language_events" in pq.read_schema(f).names for f in files), r.output


@pytest.mark.usefixtures("isolated_hub_env")
def test_prefetch_lock_file_pins_until_update_lock(tmp_path, monkeypatch):
    root, lock = tmp_path / "out", tmp_path / "pins" / "mixture.lock"
    lock.parent.mkdir()
    mix = tmp_path / "mixture.txt"
    mix.write_text("org/a\n")
    with HubServer() as srv:
        monkeypatch.setenv("HF_ENDPOINT", srv.url)
        first = srv.add_repo("org/a", V21)
        base = ["prefetch", mix, "--local-dir-root", root, "--lock", lock, "--no-progress", "--format", "json"]
        r = invoke(*base)
        assert r.exit_code == 0, r.output
        assert LockFile.read(lock).commit("org/a", "main") == first
        changed = dict(V21, **{"meta/tasks.jsonl": b'{"task_index": 0, "task": "new"}\n'})
        second = srv.commit("org/a", changed)
        srv.reset()
        r = invoke(*base)
        assert r.exit_code == 0 and srv.total() == 0  # pinned by --lock: no request at all
        assert (root / "org/a/meta/tasks.jsonl").read_bytes() == V21["meta/tasks.jsonl"]
        r = invoke(*base, "--update-lock")
        assert r.exit_code == 0, r.output
        assert LockFile.read(lock).commit("org/a", "main") == second
        assert (root / "org/a/meta/tasks.jsonl").read_bytes() == changed["meta/tasks.jsonl"]


@pytest.mark.usefixtures("isolated_hub_env")
def test_prefetch_api_requests_and_window_s_pace_the_api_calls(tmp_path, monkeypatch, virtual_clock):
    """``--api-requests 2 --window-s 50``: three repos need 6 api calls (info + tree each); calls beyond two per
    window wait for it to pass, on the (virtual) clock; without the flags nothing waits."""
    sleeps = virtual_clock
    mix = tmp_path / "mixture.txt"
    mix.write_text("org/a\norg/b\norg/c\n")
    with HubServer() as srv:
        monkeypatch.setenv("HF_ENDPOINT", srv.url)
        for name in ("org/a", "org/b", "org/c"):
            srv.add_repo(name, V21)
        base = ["prefetch", mix, "--local-dir-root", tmp_path / "out", "--no-progress", "--format", "json",
                "--dry-run"]
        r = invoke(*base)
        assert r.exit_code == 1, r.output  # dry run: files missing
        assert srv.counts() == {"info": 3, "tree": 3} and not [s for s in sleeps if s > 0]
        srv.reset()
        r = invoke(*base, "--api-requests", "2", "--window-s", "50")
        assert r.exit_code == 1, r.output
        assert srv.counts() == {"info": 3, "tree": 3}
    waits = [s for s in sleeps if s > 0]
    assert len(waits) >= 2 and all(s <= 50.0 + 1e-6 for s in waits), waits  # never longer than one window
    assert sum(waits) >= 100.0 - 1e-6, waits  # 6 calls at 2 per 50 s: at least two windows waited


def test_validate_world_size_reports_shards_that_do_not_divide(tmp_path):
    r1 = invoke("validate", FIXTURES / "clean_v30", "--format", "json")
    r3 = invoke("validate", FIXTURES / "clean_v30", "--format", "json", "--world-size", "1000")
    assert r1.exit_code == 0, r1.output
    one = {f["check"] for d in json.loads(r1.stdout)["datasets"] for f in d["findings"]}
    many = {f["check"] for d in json.loads(r3.stdout)["datasets"] for f in d["findings"]}
    assert many - one, (one, many)  # more ranks than data files: a finding appears only with the flag
