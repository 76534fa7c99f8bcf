"""A request budget shared by every download thread, and the clock it waits on.

The Hugging Face Hub answers HTTP 429 once a client has made about 3,000 requests in 5 minutes
(issue 5; hub-downloads reference §4). :class:`RequestBudget` keeps a sliding window of the send
times of the last requests and makes a thread wait before a request that would exceed
``max_requests`` in ``window_s`` seconds. A server that says the quota is spent (a 429 with
``Retry-After``, or an IETF ``RateLimit`` header with ``r=0;t=N``) pauses the whole budget, so every
thread waits, not only the one that got the 429.

All waiting goes through a :class:`Clock`, so tests inject a fake clock whose ``sleep`` records the
requested seconds and advances virtual time instead of sleeping.
"""

from __future__ import annotations

import collections
import threading
import time

DEFAULT_MAX_REQUESTS = 3000
DEFAULT_WINDOW_S = 300.0


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


class RequestBudget:
    """At most ``max_requests`` request starts in any ``window_s``-second window, across threads.

    Args:
        max_requests: requests allowed per window (>= 1). Default 3000, the Hub's observed limit.
        window_s: window length in seconds (> 0). Default 300 (5 minutes).
        clock: time source and sleeper (default :data:`SYSTEM_CLOCK`).

    Raises:
        ValueError: ``max_requests < 1`` or ``window_s <= 0``.

    Attributes:
        used: total requests granted so far (int).
        waited_s: total seconds threads were told to sleep by :meth:`acquire` (float, summed over
            threads, so it can exceed wall time).
    """

    def __init__(self, max_requests: int = DEFAULT_MAX_REQUESTS, window_s: float = DEFAULT_WINDOW_S,
                 clock: Clock | None = None):
        if max_requests < 1:
            raise ValueError(f"max_requests must be >= 1, got {max_requests}")
        if window_s <= 0:
            raise ValueError(f"window_s must be > 0, got {window_s}")
        self.max_requests = int(max_requests)
        self.window_s = float(window_s)
        self.clock = clock or SYSTEM_CLOCK
        self._sent: collections.deque[float] = collections.deque()
        self._paused_until = float("-inf")
        self._lock = threading.Lock()
        self.used = 0
        self.waited_s = 0.0

    def acquire(self) -> float:
        """Block until one more request may be sent, record it, and return the seconds waited.

        The wait is the longer of: the end of a server-imposed pause (:meth:`pause`), and the time
        until the oldest request in the window leaves it.
        """
        waited = 0.0
        while True:
            with self._lock:
                now = self.clock.now()
                horizon = now - self.window_s
                while self._sent and self._sent[0] <= horizon:
                    self._sent.popleft()
                wait = 0.0
                if self._paused_until > now:
                    wait = self._paused_until - now
                if len(self._sent) >= self.max_requests:
                    wait = max(wait, self._sent[0] + self.window_s - now)
                if wait <= 0:
                    self._sent.append(now)
                    self.used += 1
                    return waited
                self.waited_s += wait
            self.clock.sleep(wait)
            waited += wait

    def pause(self, seconds: float) -> None:
        """Hold every thread's next request for ``seconds`` from now (a 429 or ``RateLimit: r=0``).

        Overlapping pauses do not add up: the budget resumes at the latest requested time.
        """
        if seconds <= 0:
            return
        with self._lock:
            self._paused_until = max(self._paused_until, self.clock.now() + seconds)

    def in_window(self) -> int:
        """Requests sent within the current window (for reports and tests)."""
        with self._lock:
            horizon = self.clock.now() - self.window_s
            return sum(1 for t in self._sent if t > horizon)
