"""The request budget of ``lrtool prefetch`` (lerobot_tools/prefetch/budget.py) where a planted one-line bug went
unnoticed: ``--budget-fraction`` applied to the server's remaining count, and overlapping 429 pauses (the longest
wins). On a virtual clock (no test sleeps): the waits asked for are exact."""

from __future__ import annotations

import pytest

from lerobot_tools.prefetch.budget import BucketBudget, Budgets, Limit, WaitTooLong
from lerobot_tools.prefetch.ratelimit import parse_ratelimit
from tests.prefetch.test_prefetch import FakeClock


def _take(b: BucketBudget) -> float:
    ticket, waited = b.acquire()
    ticket.done()
    return waited


@pytest.mark.parametrize("fraction, free", [(1.0, 10), (0.5, 5), (0.25, 2), (0.05, 0)])
def test_the_budget_fraction_takes_its_share_of_the_servers_remaining_count(fraction, free):
    """The server says 10 requests are left in a window that resets in 60 s: a process given fraction F of the
    address's budget sends floor(10 F) of them, then waits for the reset (the other processes take the rest)."""
    c = FakeClock()
    b = BucketBudget("resolvers", Limit(1000, 300, "default"), fraction=fraction, clock=c)
    first, _ = b.acquire()
    first.done()
    b.observe(10, 60.0, first)
    assert [_take(b) for _ in range(free + 1)] == [0.0] * free + [60.0]
    assert c.sleeps == [60.0]


def test_the_fraction_applies_to_a_remaining_count_parsed_from_the_servers_header():
    c = FakeClock()
    budgets = Budgets(fraction=0.5, clock=c)
    first, _ = budgets.acquire("api")
    first.done()
    budgets.take_headers("api", first, parse_ratelimit({"ratelimit": '"api";r=7;t=30'}), [])
    b = budgets.bucket("api")
    assert [_take(b) for _ in range(4)] == [0.0, 0.0, 0.0, 30.0]  # floor(7 x 0.5) = 3, then the reset


def test_a_shorter_429_pause_does_not_cut_a_longer_one():
    """Two threads get 429s: one asked to wait 100 s, then one 10 s. The bucket resumes at the later time, for
    the reason of the longer pause."""
    c = FakeClock()
    b = BucketBudget("api", None, clock=c)
    b.pause(100, "Retry-After: 100 s")
    b.pause(10, "Retry-After: 10 s")
    with pytest.raises(WaitTooLong) as info:
        b.acquire(max_wait=99)
    assert info.value.seconds == 100 and info.value.reason == "Retry-After: 100 s"
    assert _take(b) == 100.0 and c.sleeps == [100.0]
    # a longer pause extends a shorter one
    b.pause(10, "Retry-After: 10 s")
    b.pause(50, "Retry-After: 50 s")
    assert _take(b) == 50.0 and c.sleeps == [100.0, 50.0]
    # a pause already over holds nothing
    b.pause(5, "Retry-After: 5 s")
    c.sleep(6)
    assert _take(b) == 0.0


@pytest.mark.parametrize("quota, fraction, share", [(1, 1.0, 1), (3, 0.5, 1), (1, 0.25, 1), (9, 0.5, 4)])
def test_an_advertised_quota_takes_the_fraction_and_at_least_one_request(quota, fraction, share):
    """A server's policy of ``quota`` per 60 s, shared with fraction F: floor(quota F) requests per window, never
    fewer than one (a process given nothing would never send)."""
    c = FakeClock()
    b = BucketBudget("api", Limit(500, 300, "default"), fraction=fraction, clock=c)
    b.advertise(quota, 60.0)
    assert [lim.quota for lim in b.limits()] == [share]
    assert [_take(b) for _ in range(share + 1)] == [0.0] * share + [60.0]
