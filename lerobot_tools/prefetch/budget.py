"""Request budgets, one per Hub rate-limit bucket, shared by every download thread; and the clock they wait on.

The Hub counts requests in separate fixed 5-minute windows per bucket (Hub documentation, "Hub Rate
limits", https://huggingface.co/docs/hub/rate-limits; see :mod:`lerobot_tools.prefetch.ratelimit`):
``"api"`` (500 per 5 min anonymous, 1,000 for a logged-in free user) and ``"resolvers"`` (3,000 /
5,000). :class:`Budgets` keeps one :class:`BucketBudget` per bucket, with those defaults chosen by
whether a token is sent, and makes a thread wait before a request its bucket cannot take:

* **sliding window**: at most ``quota`` requests in any ``window_s`` seconds. A request occupies the
  window from the moment it is granted until ``window_s`` after its response arrived, so the count holds
  at the server whatever the network delay: any fixed window of the server is an interval of that
  length, and no interval holds more than ``quota`` arrivals;
* **server adaptation**: a ``RateLimit-Policy`` naming the bucket replaces the default quota and window
  (an explicit ``--api-requests`` / ``--resolve-requests`` still applies on top); a ``RateLimit`` with
  ``r`` remaining and ``t`` seconds to reset allows at most ``r`` more requests (minus those granted
  since the request it answers, and those in flight then) until the reset, so requests other processes
  made from the same address count too; while such a count is fresh it replaces the server's or default
  sliding window, and when the policy names a ``"fixed window"`` the full quota is taken again at each
  reset the server announced;
* **pauses**: a 429 pauses its bucket for what the server asked, for every thread;
* **cluster share**: ``fraction`` F (0 < F <= 1) takes F of every quota and every ``r``, so N processes
  given 1/N each stay within the limits together.

Every wait is bounded: a wait longer than what is left of the caller's ``max_wait`` raises
:class:`WaitTooLong` before sleeping, and every wait of 1 s or more is announced (what for, until when in
UTC) through the ``announce`` callback, once per bucket and reset time.

All waiting goes through a :class:`Clock`, so tests inject a fake clock whose ``sleep`` records the
requested seconds and advances virtual time instead of sleeping.
"""

from __future__ import annotations

import bisect
import datetime as _dt
import math
import threading
import time
from dataclasses import dataclass
from typing import Callable

from lerobot_tools.prefetch.ratelimit import API, RESOLVERS, RateLimitItem

DEFAULT_WINDOW_S = 300.0
DEFAULT_MAX_WAIT_S = 900.0
#: per-bucket defaults (requests per 5 minutes), from the Hub's rate-limits documentation
DEFAULT_QUOTAS = {"anonymous": {API: 500, RESOLVERS: 3000}, "authenticated": {API: 1000, RESOLVERS: 5000}}
ANNOUNCE_MIN_S = 1.0
_INFLIGHT_POLL_S = 0.05  # real seconds between checks while only in-flight requests hold the window


class Clock:
    """Monotonic time and sleep (seconds). Replace in tests to make waits instant and recorded."""

    def now(self) -> float:
        """Seconds on a monotonic clock (arbitrary origin)."""
        return time.monotonic()

    def sleep(self, seconds: float) -> None:
        """Block the calling thread for ``seconds`` (<= 0 returns at once)."""
        if seconds > 0:
            time.sleep(seconds)


SYSTEM_CLOCK = Clock()


def utc_after(seconds: float) -> str:
    """Wall-clock UTC time ``seconds`` from now, ``2026-05-01 12:00:42 UTC`` (or ``year 9999+ UTC``)."""
    try:
        when = _dt.datetime.now(_dt.timezone.utc) + _dt.timedelta(seconds=seconds)
    except (OverflowError, ValueError):
        return "after year 9999 UTC"
    return when.strftime("%Y-%m-%d %H:%M:%S UTC")


def human_s(seconds: float) -> str:
    """``42 s``, ``15.0 min``, ``27.8 h``, ``3.2e+07 h`` (for messages)."""
    if not math.isfinite(seconds):
        return "forever"
    if seconds < 120:
        return f"{seconds:.0f} s" if seconds >= 10 else f"{seconds:.1f} s"
    if seconds < 7200:
        return f"{seconds / 60:.1f} min"
    return f"{seconds / 3600:.1f} h" if seconds < 1e7 else f"{seconds / 3600:.1e} h"


class WaitTooLong(Exception):
    """A request would have to wait longer than the caller's bound.

    Attributes:
        bucket: the bucket waited for. seconds: the wait needed. reason: what imposes it (one line).
        until: the UTC wall-clock time the wait would end (string). max_wait_s: the bound.
    """

    def __init__(self, bucket: str, seconds: float, reason: str, max_wait_s: float):
        self.bucket, self.seconds, self.reason, self.max_wait_s = bucket, seconds, reason, max_wait_s
        self.until = utc_after(seconds)
        super().__init__(f"the Hub's {bucket!r} rate limit ({reason}) would make this request wait "
                         f"{human_s(seconds)} (until {self.until}), more than --max-wait-s {max_wait_s:g}; giving up")


@dataclass(frozen=True)
class Limit:
    """At most ``quota`` requests in any ``window_s`` seconds. ``source`` says who set it (for reports)."""

    quota: int
    window_s: float
    source: str

    def describe(self) -> str:
        return f"{self.quota} per {self.window_s:g} s ({self.source})"


class Ticket:
    """One granted request. Call :meth:`done` when its response (status and headers) has arrived, or
    when it failed; until then it counts as in flight."""

    __slots__ = ("bucket", "seq", "inflight_before", "_done")

    def __init__(self, bucket: "BucketBudget", seq: int, inflight_before: int):
        self.bucket, self.seq, self.inflight_before, self._done = bucket, seq, inflight_before, False

    def done(self) -> None:
        if not self._done:
            self._done = True
            self.bucket._complete()


class BucketBudget:
    """The budget of one bucket, shared by all threads. Create through :class:`Budgets`.

    Args:
        name: the bucket (``"api"``, ``"resolvers"``, ``"cdn"``...).
        default: the limit used until the server advertises one (None = unlimited).
        explicit: a limit the user set, kept even when the server advertises another (None = none).
        fraction: share of every quota and remaining count this process takes (0 < F <= 1).
        clock: time source and sleeper.
        announce: called with a one-line message before every wait of :data:`ANNOUNCE_MIN_S` or more.

    Attributes:
        used: requests granted. waited_s: seconds threads were told to sleep (summed over threads).
        rate_limited: HTTP 429 answers counted by the client. server_limit: the advertised limit, if any.
    """

    def __init__(self, name: str, default: Limit | None, explicit: Limit | None = None, *, fraction: float = 1.0,
                 clock: Clock | None = None, announce: Callable[[str], None] | None = None):
        self.name = name
        self.default = default
        self.explicit = explicit
        self.fraction = fraction
        self.clock = clock or SYSTEM_CLOCK
        self.announce = announce
        self.server_limit: Limit | None = None
        self._server_fixed = False
        self._done: list[float] = []  # completion times, ascending
        self._start = 0  # entries before it have left every window
        self._inflight = 0
        self._seq = 0
        self._allow: int | None = None  # from RateLimit r: requests left until _allow_reset
        self._allow_reset = float("-inf")
        self._allow_seq = -1
        self._paused_until = float("-inf")
        self._pause_reason = ""
        self._announced_until = float("-inf")
        self._lock = threading.Lock()
        self.used = 0
        self.waited_s = 0.0
        self.rate_limited = 0

    # ------------------------------------------------------------------ state
    def limits(self) -> list[Limit]:
        """The sliding-window limits: the explicit one, and the server's (advertised) or else the default."""
        return [lim for lim in (self.explicit, self.server_limit or self.default) if lim is not None]

    def _limits_now(self, now: float) -> list[Limit]:
        # While a fresh remaining count from the server is known (and this process takes the whole bucket),
        # it replaces the server's/default sliding window: it is exact, and counts other clients too.
        if self._allow is not None and now < self._allow_reset and self.fraction >= 1:
            return [self.explicit] if self.explicit is not None else []
        return self.limits()

    def _complete(self) -> None:
        with self._lock:
            self._inflight -= 1
            self._done.append(self.clock.now())

    def _trim(self, now: float) -> None:
        longest = max((lim.window_s for lim in self.limits()), default=0.0)
        cut = bisect.bisect_right(self._done, now - longest, lo=self._start)
        self._start = cut
        if self._start > 4096 and self._start * 2 > len(self._done):
            del self._done[:self._start]
            self._start = 0

    def _roll_over(self, now: float) -> None:
        """The server's window has reset. With a fixed window of known length, a new one starts with the
        full quota (less the requests in flight); otherwise the remaining count is unknown until the next
        answer, and the sliding window alone paces requests."""
        lim = self.server_limit
        if self._server_fixed and lim is not None:
            self._allow_reset += (math.floor((now - self._allow_reset) / lim.window_s) + 1) * lim.window_s
            self._allow = lim.quota - self._inflight
            self._allow_seq = self._seq + 1  # answers to requests granted before describe the old window
        else:
            self._allow = None

    def _wait_needed(self, now: float) -> tuple[float | None, str]:
        """Seconds until a request may go (0 = now; None = only when an in-flight request completes)."""
        wait, reason = 0.0, ""
        if self._paused_until > now:
            wait, reason = self._paused_until - now, self._pause_reason
        if self._allow is not None and now >= self._allow_reset:
            self._roll_over(now)
        if self._allow is not None and self._allow <= 0 and self._allow_reset - now > wait:
            wait, reason = self._allow_reset - now, "the Hub says no request is left in this window"
        blocked_inflight = False
        for lim in self._limits_now(now):
            idx = bisect.bisect_right(self._done, now - lim.window_s, lo=self._start)
            completed = len(self._done) - idx
            excess = completed + self._inflight - lim.quota + 1
            if excess <= 0:
                continue
            if excess > completed:
                blocked_inflight = True
                continue
            w = self._done[idx + excess - 1] + lim.window_s - now
            if w > wait:
                wait, reason = w, f"{lim.quota} requests per {lim.window_s:g} s, {lim.source}"
        if blocked_inflight and wait <= 0:
            return None, "requests in flight fill the window"
        return wait, reason

    # ------------------------------------------------------------------ the three operations
    def acquire(self, max_wait: float = math.inf) -> tuple[Ticket, float]:
        """Block until one more request may be sent; return its :class:`Ticket` and the seconds waited.

        Args:
            max_wait: the longest this call may wait in total (seconds).

        Raises:
            WaitTooLong: the wait needed is longer than what is left of ``max_wait`` (raised before
                sleeping it).
        """
        waited = 0.0
        while True:
            with self._lock:
                now = self.clock.now()
                self._trim(now)
                wait, reason = self._wait_needed(now)
                if wait is not None and wait <= 0:
                    if self._allow is not None:
                        self._allow -= 1
                    self._seq += 1
                    ticket = Ticket(self, self._seq, self._inflight)
                    self._inflight += 1
                    self.used += 1
                    return ticket, waited
                if wait is not None:
                    if waited + wait > max_wait:
                        raise WaitTooLong(self.name, wait, reason, max_wait)
                    self.waited_s += wait
                    if wait >= ANNOUNCE_MIN_S and now + wait > self._announced_until + ANNOUNCE_MIN_S:
                        self._announced_until = now + wait
                        message = (f"waiting {human_s(wait)} for the Hub's {self.name!r} requests, until "
                                   f"{utc_after(wait)} ({reason})")
                    else:
                        message = None
            if wait is None:  # only completions free the window: they come in real time, not on the clock
                time.sleep(_INFLIGHT_POLL_S)
                continue
            if message and self.announce is not None:
                self.announce(message)
            self.clock.sleep(wait)
            waited += wait

    def pause(self, seconds: float, reason: str) -> None:
        """Hold every thread's next request of this bucket for ``seconds`` from now (after a 429).

        Overlapping pauses do not add up: the bucket resumes at the latest requested time.
        """
        if seconds <= 0:
            return
        with self._lock:
            until = self.clock.now() + seconds
            if until > self._paused_until:
                self._paused_until, self._pause_reason = until, reason

    def note_429(self) -> None:
        """Count one HTTP 429 answer for this bucket (reports)."""
        with self._lock:
            self.rate_limited += 1

    def observe(self, remaining: int | None, reset_s: float | None, ticket: Ticket | None) -> None:
        """Take in a ``RateLimit`` item for this bucket: ``remaining`` requests until ``reset_s`` from now.

        Args:
            remaining, reset_s: the server's ``r`` and ``t`` (ignored unless both are given).
            ticket: the request it answers. The server may not have counted the requests granted after
                it nor those in flight when it was granted: both are deducted from ``remaining``. None
                (an item about another bucket): the requests in flight are deducted.
        """
        if remaining is None or reset_s is None or reset_s <= 0:
            return
        with self._lock:
            now = self.clock.now()
            seq = ticket.seq if ticket is not None else self._seq
            if seq < self._allow_seq and now < self._allow_reset:
                return  # an answer to a later request is already in
            uncounted = (self._seq - seq + ticket.inflight_before) if ticket is not None else self._inflight
            self._allow = math.floor(remaining * self.fraction) - uncounted
            self._allow_reset = now + reset_s
            self._allow_seq = seq

    def advertise(self, quota: int, window_s: float | None, fixed_window: bool = False) -> None:
        """Take in a ``RateLimit-Policy`` item for this bucket: ``quota`` per ``window_s`` (None: keep ours),
        in a fixed window (the quota renews in full at each reset) or not."""
        window = window_s if window_s is not None else (
            (self.server_limit or self.default).window_s if (self.server_limit or self.default) else DEFAULT_WINDOW_S)
        share = max(1, math.floor(quota * self.fraction))
        src = f"advertised by the server: {quota} per {window:g} s" + (
            f", x{self.fraction:g} share" if self.fraction < 1 else "")
        new = Limit(share, window, src)
        with self._lock:
            self.server_limit = new
            self._server_fixed = bool(fixed_window) and window_s is not None

    def to_dict(self) -> dict:
        """``{"used", "rate_limited", "waited_s", "limits": [...]}`` for JSON reports."""
        with self._lock:
            return {"used": self.used, "rate_limited": self.rate_limited, "waited_s": round(self.waited_s, 3),
                    "limits": [{"quota": lim.quota, "window_s": lim.window_s, "source": lim.source}
                               for lim in self.limits()]}


class Budgets:
    """One :class:`BucketBudget` per bucket, built from the options.

    Args:
        authenticated: a token is sent (free-user defaults) or not (anonymous defaults); see
            :data:`DEFAULT_QUOTAS`.
        api_requests, resolve_requests: explicit quotas per window for ``"api"`` / ``"resolvers"``
            (None: the default for ``authenticated``, replaced by what the server advertises).
        window_s: window of the defaults and of the explicit quotas (seconds, > 0; default 300).
        fraction: share of every bucket this process takes (0 < F <= 1), e.g. 1/N for N processes.
        max_wait_s: the longest one request may wait in total for its bucket (seconds, >= 0).
        clock, announce: see :class:`BucketBudget`.

    Raises:
        ValueError: a quota < 1, ``window_s <= 0``, ``fraction`` outside (0, 1], ``max_wait_s < 0`` or
            any of them not finite.
    """

    def __init__(self, *, authenticated: bool = False, api_requests: int | None = None,
                 resolve_requests: int | None = None, window_s: float = DEFAULT_WINDOW_S, fraction: float = 1.0,
                 max_wait_s: float = DEFAULT_MAX_WAIT_S, clock: Clock | None = None,
                 announce: Callable[[str], None] | None = None):
        for name, v in (("--api-requests", api_requests), ("--resolve-requests", resolve_requests)):
            if v is not None and (not isinstance(v, int) or v < 1):
                raise ValueError(f"{name} must be an integer >= 1, got {v!r}")
        if not (isinstance(window_s, (int, float)) and math.isfinite(window_s) and window_s > 0):
            raise ValueError(f"--window-s must be a finite number > 0, got {window_s!r}")
        if not (isinstance(fraction, (int, float)) and math.isfinite(fraction) and 0 < fraction <= 1):
            raise ValueError(f"--budget-fraction must be in (0, 1], got {fraction!r}")
        if not (isinstance(max_wait_s, (int, float)) and not math.isnan(max_wait_s) and max_wait_s >= 0):
            raise ValueError(f"--max-wait-s must be >= 0, got {max_wait_s!r}")
        self.authenticated = authenticated
        self.fraction = float(fraction)
        self.max_wait_s = float(max_wait_s)
        self.clock = clock or SYSTEM_CLOCK
        self.announce = announce
        who = "authenticated" if authenticated else "anonymous"
        share = f", x{fraction:g} share" if fraction < 1 else ""
        self._buckets: dict[str, BucketBudget] = {}
        self._lock = threading.Lock()
        for bucket, explicit, option in ((API, api_requests, "--api-requests"),
                                         (RESOLVERS, resolve_requests, "--resolve-requests")):
            if explicit is not None:
                default = None
                exp = Limit(max(1, math.floor(explicit * fraction)), float(window_s), f"{option}{share}")
            else:
                q = DEFAULT_QUOTAS[who][bucket]
                default = Limit(max(1, math.floor(q * fraction)), float(window_s), f"default for {who} use{share}")
                exp = None
            self._buckets[bucket] = BucketBudget(bucket, default, exp, fraction=self.fraction, clock=self.clock,
                                                 announce=announce)

    def bucket(self, name: str) -> BucketBudget:
        """The budget of bucket ``name`` (an unknown one starts unlimited until the server advertises a quota)."""
        with self._lock:
            b = self._buckets.get(name)
            if b is None:
                b = self._buckets[name] = BucketBudget(name, None, fraction=self.fraction, clock=self.clock,
                                                       announce=self.announce)
            return b

    def acquire(self, name: str, max_wait: float | None = None) -> tuple[Ticket, float]:
        """:meth:`BucketBudget.acquire` on bucket ``name``, bounded by ``max_wait`` (default :attr:`max_wait_s`)."""
        return self.bucket(name).acquire(self.max_wait_s if max_wait is None else max_wait)

    def take_headers(self, name: str, ticket: Ticket | None, limits: list[RateLimitItem],
                     policies: list[RateLimitItem]) -> None:
        """Apply the parsed ``RateLimit`` / ``RateLimit-Policy`` items of a response to bucket ``name``'s request.

        An item without a bucket name applies to ``name``; an item naming another bucket applies to that one.
        """
        for it in policies:
            if it.quota is not None:
                self.bucket(it.bucket or name).advertise(it.quota, it.window_s, it.fixed_window)
        for it in limits:
            target = it.bucket or name
            self.bucket(target).observe(it.remaining, it.reset_s, ticket if target == name else None)

    @property
    def used(self) -> int:
        """Requests granted in every bucket."""
        return sum(b.used for b in self.buckets().values())

    def buckets(self) -> dict[str, BucketBudget]:
        with self._lock:
            return dict(self._buckets)

    def to_dict(self) -> dict:
        return {name: b.to_dict() for name, b in sorted(self.buckets().items())}
