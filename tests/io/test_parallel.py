"""The per-file thread pool (``_parallel.thread_map``) and what validate reads with it: results in input order,
bounded read-ahead, errors at their item, and reports identical to a single-threaded run."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

import pytest

from lerobot_tools import _parallel
from lerobot_tools._parallel import thread_map
from lerobot_tools.checks.engine import ValidateOptions
from lerobot_tools.report import render_json
from lerobot_tools.validate import validate

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "datasets"


def test_results_come_in_input_order_whatever_order_they_finish_in():
    def slow_first(i: int) -> int:
        time.sleep(0.02 if i % 3 == 0 else 0.0)
        return i * i

    assert list(thread_map(slow_first, range(40), threads=4)) == [i * i for i in range(40)]


def test_read_ahead_is_bounded():
    started: list[int] = []
    lock = threading.Lock()

    def work(i: int) -> int:
        with lock:
            started.append(i)
        return i

    it = thread_map(work, range(100), threads=3, ahead=5)
    seen = []
    for x in it:
        seen.append(x)
        time.sleep(0.002)  # let the pool run ahead as far as it may
        with lock:
            assert max(started) <= x + 5
    assert seen == list(range(100))


@pytest.mark.parametrize("depth", [1, 2])
def test_read_ahead_pulls_nothing_more_once_closed(depth):
    """Closing drains the queue so the thread can finish; an item it was blocked on may land in a freed slot, but
    the thread must not pull another one from the source (a record batch more of a 1 GB file)."""
    produced: list[int] = []

    def source():
        i = 0
        while True:
            produced.append(i)
            yield i
            i += 1

    it = _parallel.read_ahead(source(), depth)
    assert next(it) == 0
    time.sleep(0.2)  # the thread fills the queue and blocks on the next item
    assert len(produced) == 1 + depth + 1
    it.close()
    time.sleep(0.1)
    assert len(produced) == 1 + depth + 1


def test_an_error_is_raised_at_its_item_after_the_earlier_results():
    def work(i: int) -> int:
        if i == 7:
            raise ValueError("item 7 is broken")
        return i

    got = []
    with pytest.raises(ValueError, match="item 7 is broken"):
        for x in thread_map(work, range(20), threads=4):
            got.append(x)
    assert got == list(range(7))


def test_one_thread_maps_in_the_calling_thread(monkeypatch):
    monkeypatch.setattr(_parallel, "IO_THREADS", 1)
    me = threading.get_ident()
    assert set(thread_map(lambda _: threading.get_ident(), range(5))) == {me}
    assert set(thread_map(lambda _: threading.get_ident(), range(5), threads=1)) == {me}


class _Clock:
    """Virtual ``time.perf_counter`` and ``time.thread_time``: an item either computes (both advance) or waits
    (only the wall clock advances), so the window decisions do not depend on the machine's load."""

    def __init__(self, monkeypatch):
        self.wall = self.cpu = 0.0
        monkeypatch.setattr(time, "perf_counter", lambda: self.wall)
        monkeypatch.setattr(time, "thread_time", lambda: self.cpu)

    def compute(self, s: float) -> None:
        self.wall += s
        self.cpu += s

    def wait(self, s: float) -> None:
        self.wall += s


def test_io_bound_work_that_never_waits_stays_in_the_calling_thread(monkeypatch):
    clock = _Clock(monkeypatch)
    me = threading.get_ident()
    n = 3 * _parallel.PROBE_ITEMS + 5

    def work(i: int) -> tuple[int, int]:
        clock.compute(0.001)
        clock.wait(0.0009)  # waiting just under half of every item: not enough for the pool to pay
        return i, threading.get_ident()

    got = list(thread_map(work, range(n), threads=4, io_bound=True))
    assert [i for i, _ in got] == list(range(n))
    assert {t for _, t in got} == {me}


def test_io_bound_work_moves_to_the_pool_after_the_first_window_that_waits(monkeypatch):
    clock = _Clock(monkeypatch)
    me = threading.get_ident()
    n = _parallel.PROBE_ITEMS
    lock = threading.Lock()

    def work(i: int) -> tuple[int, int]:
        with lock:
            clock.compute(0.001)
            if i >= n:
                clock.wait(0.0011)  # from the second window on, each item waits just over half its time
        return i, threading.get_ident()

    got = list(thread_map(work, range(6 * n), threads=4, io_bound=True))
    assert [i for i, _ in got] == list(range(6 * n))
    threads = [t for _, t in got]
    assert set(threads[: 2 * n]) == {me}  # the waiting window is measured in the calling thread...
    assert me not in set(threads[2 * n:])  # ...and everything after it goes to the pool


def test_io_bound_items_that_really_sleep_go_to_the_pool():
    me = threading.get_ident()

    def work(i: int) -> tuple[int, int]:
        time.sleep(0.002)
        return i, threading.get_ident()

    got = list(thread_map(work, range(4 * _parallel.PROBE_ITEMS), threads=4, io_bound=True))
    assert [i for i, _ in got] == list(range(4 * _parallel.PROBE_ITEMS))
    assert me not in {t for _, t in got[_parallel.PROBE_ITEMS:]}


def test_io_bound_error_in_the_calling_thread_is_raised_at_its_item():
    def work(i: int) -> int:
        if i == 3:
            raise ValueError("item 3 is broken")
        return i

    got = []
    with pytest.raises(ValueError, match="item 3 is broken"):
        for x in thread_map(work, range(20), threads=4, io_bound=True):
            got.append(x)
    assert got == [0, 1, 2]


def _report(paths: list[Path], **opts) -> dict:
    import io

    out = io.StringIO()
    render_json(validate([str(p) for p in paths], ValidateOptions(**opts)), out)
    doc = json.loads(out.getvalue())
    doc["summary"].pop("seconds", None)
    for d in doc["datasets"]:
        d.pop("seconds", None)
    return doc


@pytest.mark.parametrize("deep", [False, True], ids=["default", "deep"])
def test_validate_reports_are_identical_with_one_thread_and_with_the_pool(monkeypatch, deep):
    # every fixture: missing, placeholder, unreadable and corrupt data and video files, in one mixture
    fixtures = sorted(p for p in FIXTURES.iterdir() if (p / "meta").is_dir())
    assert len(fixtures) > 20
    pooled = _report(fixtures, deep=deep)
    monkeypatch.setattr(_parallel, "IO_THREADS", 1)
    single = _report(fixtures, deep=deep)
    assert pooled == single
    assert sum(len(d["findings"]) for d in single["datasets"]) > 20



class _SignalInDel:
    """Sends this process SIGINT from its finaliser: Python drops the KeyboardInterrupt raised there."""

    def __del__(self):
        import os
        import signal

        os.kill(os.getpid(), signal.SIGINT)
        for _ in range(100):  # a few bytecodes for the handler to run in (still inside __del__)
            pass


def _drop_a_signal(x: int) -> int:
    if x == 1:
        obj = _SignalInDel()
        del obj
    return x


def test_a_signal_whose_exception_a_finaliser_dropped_still_stops_the_run():
    import pytest as _pytest

    from lerobot_tools._parallel import map_ordered
    from lerobot_tools._signals import received, sigterm_raises

    ran: list[int] = []

    def fn(x: int) -> int:
        ran.append(_drop_a_signal(x))
        return x

    with sigterm_raises():
        with _pytest.raises(KeyboardInterrupt):
            map_ordered(fn, [0, 1, 2, 3], jobs=1)
        assert received() is not None
    assert ran == [0, 1]  # item 1 finished (its KeyboardInterrupt was dropped), item 2 never started
    # the block is over: the signal is forgotten, a later run in this process is not stopped by it
    assert received() is None
    assert map_ordered(fn, [5, 6], jobs=1) == [5, 6]


def test_the_cli_ends_a_command_whose_interrupt_a_finaliser_dropped_with_exit_130(monkeypatch):
    """The CLI's end-of-command check: a Ctrl-C whose KeyboardInterrupt was dropped inside a finaliser (no work
    loop left to notice it) still ends `lrtool validate` as interrupted, exit 130 with the one-line note, not 0."""
    from click.testing import CliRunner

    import lerobot_tools.validate as validate_module
    from lerobot_tools.cli import cli
    from lerobot_tools.exitcodes import INTERRUPTED

    real = validate_module.validate
    calls: list[int] = []

    def validate_then_drop_a_signal(*args, **kwargs):
        reports = real(*args, **kwargs)
        calls.append(_drop_a_signal(1))  # after the last work item: only the CLI's final check can see it
        return reports

    monkeypatch.setattr(validate_module, "validate", validate_then_drop_a_signal)
    result = CliRunner().invoke(cli, ["validate", str(Path(__file__).resolve().parents[2] / "fixtures" / "datasets" / "clean_v21")])
    assert calls == [1]  # the validate ran to its end: the interrupt was really dropped
    assert result.exit_code == INTERRUPTED == 130, result.output
    assert "lrtool: interrupted" in result.output
