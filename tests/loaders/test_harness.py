"""The test harness's own rules: what ``run_ranks`` lets through and what it fails on (real child processes)."""

from __future__ import annotations

import textwrap

import pytest

from tests.loaders.conftest import GLOO_TEARDOWN_ABORT

# a "rank" that writes its output (unless told not to), then dies of SIGABRT, printing the message or not
RANK = textwrap.dedent("""
    import os, signal, sys
    out, write, message = sys.argv[1], sys.argv[2] == "1", sys.argv[3] == "1"
    if write:
        open(out, "w").write("done")
    if message:
        print(%r, file=sys.stderr, flush=True)
    os.kill(os.getpid(), signal.SIGABRT)
""" % GLOO_TEARDOWN_ABORT)


@pytest.fixture
def rank_script(tmp_path):
    script = tmp_path / "rank.py"
    script.write_text(RANK)
    return script


def _argv(script, tmp_path, write: bool, message: bool):
    return lambda r: [script, tmp_path / f"out{r}", int(write), int(message)]


def test_run_ranks_lets_through_the_gloo_teardown_abort_after_the_work_is_done(tmp_path, rank_script, run_ranks):
    with pytest.warns(UserWarning, match="finished its work, then aborted at interpreter exit"):
        run_ranks(_argv(rank_script, tmp_path, True, True), finished=lambda r: (tmp_path / f"out{r}").exists())


@pytest.mark.parametrize("write,message,finished", [
    (False, True, True),    # died before its work was written
    (True, False, True),    # another abort (no gloo teardown message)
    (True, True, False),    # the caller did not opt in
], ids=["unfinished", "other-abort", "not-opted-in"])
def test_run_ranks_fails_on_any_other_abort(tmp_path, rank_script, run_ranks, write, message, finished):
    check = (lambda r: (tmp_path / f"out{r}").exists()) if finished else None
    with pytest.raises(AssertionError):
        run_ranks(_argv(rank_script, tmp_path, write, message), finished=check)
