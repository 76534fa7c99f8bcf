"""A thin, budgeted, 429-safe client for the three Hub calls prefetch needs.

What comes from ``huggingface_hub`` (docs/prefetch.md#requests): the shared HTTP client
(:func:`huggingface_hub.utils.get_session`, so user-configured proxies/certificates and the library's
offline guard apply), download URLs (:func:`huggingface_hub.hf_hub_url`), error classification
(:func:`huggingface_hub.utils.hf_raise_for_status`: ``RepoNotFound``, ``RevisionNotFound``,
``GatedRepo``...) and the token lookup (:func:`huggingface_hub.get_token`, ``HF_TOKEN`` then the
stored token).

What this layer adds, because the library lacks it (docs/prefetch.md#rate-limits):

* every request, including the revision resolve, each tree page and each redirect hop, is classified
  into its Hub rate-limit bucket (:func:`~lerobot_tools.prefetch.ratelimit.bucket_of_url`: ``"api"``,
  ``"resolvers"``, or ``"cdn"`` for another origin) and first takes a slot from that bucket's budget
  (:class:`~lerobot_tools.prefetch.budget.Budgets`), shared by all threads; the ``RateLimit`` /
  ``RateLimit-Policy`` headers of every response feed the budget of the bucket they name;
* HTTP 429 on *any* call (the library does not retry the revision resolve at all) waits
  ``max(Retry-After, RateLimit t)`` seconds (integer seconds or an HTTP-date; exactly, not +1 s)
  and pauses that bucket for every thread;
* 408/5xx and dropped connections: bounded exponential backoff (1, 2, 4, 8, 16 s, capped at 30 s;
  ``Retry-After`` wins when given, up to 300 s), and a body cut off mid-way resumes with ``Range: bytes=N-``;
* every wait is bounded: one call never waits more than ``max_wait_s`` in total (default 15 min); a
  longer wait asked for (a ``Retry-After`` of 100,000 s, an HTTP date in 2100) fails the call at once
  with a one-line :class:`HubError`, and every wait of 1 s or more is announced (what for, until when);
* download bodies are hashed while streamed and checked against the tree listing (size, git blob
  SHA-1 or LFS SHA-256) before the caller renames the file into place.

Headers are built here rather than with ``build_hf_headers`` because building the library's
user-agent may fetch ``/api/agent-harnesses`` (docs/prefetch.md#environment): one request outside the
budget in every process. The token goes only to the endpoint's origin (never to a CDN a download
redirects to) and never into a message, a log record or a report.
"""

from __future__ import annotations

import json
import logging
import os
import sys
import threading
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable
from urllib.parse import quote, urljoin, urlsplit

from lerobot_tools._env import endpoint_from_env, endpoint_problem
from lerobot_tools.dataset.mixture import SHA_RE
from lerobot_tools.errors import one_line, os_error_text
from lerobot_tools.prefetch.budget import SYSTEM_CLOCK, Budgets, Clock, Ticket, WaitTooLong, human_s, utc_after
from lerobot_tools.prefetch.local import ContentHasher, TreeFile
from lerobot_tools.prefetch.ratelimit import bucket_of_url, parse_ratelimit, parse_ratelimit_policy, parse_retry_after

log = logging.getLogger("lerobot_tools.prefetch")

REDIRECT_CODES = (301, 302, 303, 307, 308)
TRANSIENT_CODES = (408, 500, 502, 503, 504)
_CHUNK = 1 << 16
MAX_JSON_BYTES = 64 << 20  # one API answer (a revision, a tree page of 1,000 entries is ~0.3 MB)
MAX_TREE_PAGES = 10_000  # 10 million files at the Hub's 1,000 entries per page


def _read_json(resp, what: str) -> Any:
    """The JSON body of ``resp``, read up to :data:`MAX_JSON_BYTES`.

    Raises:
        HubError: the body is larger. ValueError: it is not JSON (the caller decides).
    """
    buf = bytearray()
    for chunk in resp.iter_bytes():
        buf += chunk
        if len(buf) > MAX_JSON_BYTES:
            raise HubError(f"{what}: answer larger than {MAX_JSON_BYTES >> 20} MiB")
    return json.loads(bytes(buf))


class HubError(Exception):
    """A Hub call that failed for good (after retries, or a 4xx that retrying cannot fix).

    Args:
        message: one line, naming the call and the reason; never contains the token.
        status: the HTTP status when there was a response, else None.
        code: the Hub's ``X-Error-Code`` (``RepoNotFound``, ``RevisionNotFound``, ``EntryNotFound``...) if any.
    """

    def __init__(self, message: str, status: int | None = None, code: str | None = None):
        super().__init__(message)
        self.status = status
        self.code = code


@dataclass
class RetryPolicy:
    """Retry bounds (counts are retries after the first attempt; seconds are waits).

    Attributes:
        max_transient: retries on 408/5xx/network errors without progress in between (default 5,
            waits 1, 2, 4, 8, 16 s).
        backoff_base_s, backoff_max_s: first backoff and its cap.
        max_429: retries on HTTP 429 per call (default 20; each waits what the server says).
        default_429_wait_s: wait on a 429 that gives neither ``Retry-After`` nor ``RateLimit`` (doubles per retry).
        max_total_attempts: hard stop for one call, progress or not (default 50).
        max_redirects: redirect hops followed per call (default 5).
    """

    max_transient: int = 5
    backoff_base_s: float = 1.0
    backoff_max_s: float = 30.0
    max_429: int = 20
    default_429_wait_s: float = 1.0
    max_total_attempts: int = 50
    max_redirects: int = 5


@dataclass
class CallStats:
    """Requests made on behalf of one repo (thread-safe counters).

    Attributes:
        requests: total HTTP requests sent (every attempt and redirect hop).
        by_kind: requests per kind: ``resolve``, ``tree``, ``download``.
        by_bucket: requests per Hub rate-limit bucket: ``api``, ``resolvers``, ``cdn`` (another origin).
        status: responses per HTTP status (``"conn"`` for a connection that failed or dropped).
        waited_s: seconds waited on 429/RateLimit pauses and backoff by this repo's calls.
    """

    requests: int = 0
    by_kind: Counter = field(default_factory=Counter)
    by_bucket: Counter = field(default_factory=Counter)
    status: Counter = field(default_factory=Counter)
    waited_s: float = 0.0
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def sent(self, kind: str, bucket: str) -> None:
        with self._lock:
            self.requests += 1
            self.by_kind[kind] += 1
            self.by_bucket[bucket] += 1

    def answered(self, status: int | str) -> None:
        with self._lock:
            self.status[str(status)] += 1

    def waited(self, seconds: float) -> None:
        with self._lock:
            self.waited_s += seconds


class _Transient(Exception):
    """A failure worth retrying after a backoff (connection error, body cut short)."""

    def __init__(self, reason: str, progressed: bool = False):
        super().__init__(reason)
        self.reason = reason
        self.progressed = progressed


def get_token_to_send() -> str | None:
    """The token huggingface_hub would send: ``HF_TOKEN`` or the stored token, unless
    ``HF_HUB_DISABLE_IMPLICIT_TOKEN`` is set (read at call time). Never logged."""
    if os.environ.get("HF_HUB_DISABLE_IMPLICIT_TOKEN", "").strip().lower() in {"1", "true", "yes", "on"}:
        return None
    from huggingface_hub import get_token

    try:
        return get_token()
    except Exception:  # e.g. an OIDC exchange that fails: download anonymously rather than crash
        return None


def _origin(url: str) -> tuple[str, str, int | None]:
    parts = urlsplit(url)
    port = parts.port or {"http": 80, "https": 443}.get(parts.scheme)
    return parts.scheme, (parts.hostname or "").lower(), port


class HubClient:
    """Budgeted Hub client for dataset repos.

    Args:
        endpoint: base URL (default ``HF_ENDPOINT`` or https://huggingface.co).
        budgets: the per-bucket budgets shared by all threads (default: :class:`Budgets` with the
            defaults for anonymous or authenticated use, by whether a token is sent).
        token: token to send; default :func:`get_token_to_send`. Pass ``False`` to send none.
        clock: sleeps and time (tests inject a fake one).
        policy: retry bounds.
        timeout_s: read timeout per request in seconds (default ``HF_HUB_DOWNLOAD_TIMEOUT`` or 30).
    """

    def __init__(self, endpoint: str | None = None, budgets: Budgets | None = None, *,
                 token: str | bool | None = None, clock: Clock | None = None,
                 policy: RetryPolicy | None = None, timeout_s: float | None = None):
        self.endpoint = (endpoint or endpoint_from_env()).rstrip("/")
        problem = endpoint_problem(self.endpoint)
        if problem:
            raise ValueError(f"Hub endpoint {self.endpoint!r} is {problem}")
        self.clock = clock or (budgets.clock if budgets is not None else SYSTEM_CLOCK)
        self._budgets = budgets
        self.policy = policy or RetryPolicy()
        if timeout_s is None:
            try:
                timeout_s = max(10.0, float(os.environ.get("HF_HUB_DOWNLOAD_TIMEOUT") or 30))
            except ValueError:
                timeout_s = 30.0
        self.timeout_s = timeout_s
        self._token_arg = token
        self._token: str | None = None
        self._token_loaded = False
        self._origin = _origin(self.endpoint)
        self._ua = None

    @property
    def budgets(self) -> Budgets:
        """The per-bucket budgets (created on first use from whether a token is sent)."""
        if self._budgets is None:
            self._budgets = Budgets(authenticated=self.authenticated, clock=self.clock)
        return self._budgets

    @property
    def authenticated(self) -> bool:
        """Whether a token is sent to the endpoint."""
        return bool(self._auth_token())

    # ------------------------------------------------------------------ plumbing
    def _auth_token(self) -> str | None:
        if not self._token_loaded:
            if isinstance(self._token_arg, str):
                self._token = self._token_arg
            elif self._token_arg is False:
                self._token = None
            else:
                self._token = get_token_to_send()
            self._token_loaded = True
        return self._token

    def _headers(self, url: str) -> dict[str, str]:
        if self._ua is None:
            from lerobot_tools import __version__

            try:
                from huggingface_hub import __version__ as hfv
            except ImportError:  # pragma: no cover
                hfv = "?"
            self._ua = (f"lrtool/{__version__}; hf_hub/{hfv}; "
                        f"python/{sys.version_info.major}.{sys.version_info.minor}")
        headers = {"user-agent": self._ua, "accept-encoding": "identity"}
        token = self._auth_token()
        if token and _origin(url) == self._origin:
            headers["authorization"] = f"Bearer {token}"
        return headers

    def _session(self):
        from huggingface_hub.utils import get_session

        return get_session()

    def _note_ratelimit(self, resp, bucket: str, ticket: Ticket) -> list:
        """Feed the response's ``RateLimit`` / ``RateLimit-Policy`` to the budgets; return the ``RateLimit`` items."""
        try:
            items, policies = parse_ratelimit(resp.headers), parse_ratelimit_policy(resp.headers)
        except Exception:  # lenient parsers; a malformed header must never fail a download
            return []
        if items or policies:
            self.budgets.take_headers(bucket, ticket, items, policies)
        return items

    def _wait_429(self, resp, n: int, bucket: str, items: list) -> float:
        """Seconds a 429 asks for: the longer of ``Retry-After`` and the ``t`` of the ``RateLimit`` item for
        ``bucket`` (or of any exhausted item when none names it); without either, 1, 2, 4... s (<= 30 s)."""
        ra = parse_retry_after(resp.headers.get("retry-after"))
        own = [it.reset_s for it in items if it.bucket in (bucket, None) and it.reset_s is not None]
        if not own:
            own = [it.reset_s for it in items if it.remaining == 0 and it.reset_s is not None]
        waits = [w for w in (ra, *own) if w is not None]
        if waits:
            return max(waits)
        return min(self.policy.default_429_wait_s * (2 ** (n - 1)), self.policy.backoff_max_s)

    def _sleep(self, seconds: float, what: str, why: str, waited: float) -> float:
        """Sleep ``seconds`` for a retry (announced when >= 1 s); return the new total waited by the call.

        Raises:
            HubError: the call would wait more than ``max_wait_s`` in total.
        """
        cap = self.budgets.max_wait_s
        if waited + seconds > cap:
            raise HubError(f"{what}: {why} asks to wait {human_s(seconds)} (until {utc_after(seconds)}), "
                           f"more than --max-wait-s {cap:g}; giving up")
        if seconds >= 1 and self.budgets.announce is not None:
            self.budgets.announce(f"{what}: {why}; waiting {human_s(seconds)}, until {utc_after(seconds)}")
        self.clock.sleep(seconds)
        return waited + seconds

    def _backoff(self, n: int, resp=None) -> float:
        if resp is not None:
            ra = parse_retry_after(resp.headers.get("retry-after"))
            if ra is not None:
                return min(ra, 300.0)
        return min(self.policy.backoff_base_s * (2 ** (n - 1)), self.policy.backoff_max_s)

    def call(self, method: str, url: str, *, kind: str, stats: CallStats, what: str,
             params: dict | None = None, range_start: Callable[[], int] | None = None,
             consume: Callable[[Any], Any]) -> Any:
        """Send one logical call with the per-bucket budgets, redirects, 429 waits and transient retries.

        Args:
            method: ``GET`` or ``HEAD``.
            url: absolute URL.
            kind: what the call is for, in stats (``resolve``/``tree``/``download``); the rate-limit
                bucket of each hop is found from its URL.
            stats: per-repo counters to update.
            what: short description for error messages (e.g. ``"tree of org/name"``).
            params: query parameters of the first hop.
            range_start: returns the byte offset to resume from (sends ``Range`` when > 0).
            consume: called with a 2xx streamed response; may raise :class:`_Transient` to retry.

        Returns:
            what ``consume`` returns.

        Raises:
            HubError: a 4xx other than 408/429, retries exhausted, a redirect without a usable ``Location``
                (none, too many hops, not a URL), or a wait longer than what is left of ``max_wait_s`` (the
                message says what asked for it and until when).
        """
        import httpx2

        session = self._session()
        n_transient = n_429 = n_redirects = attempts = 0
        waited = 0.0  # seconds this call has waited, all causes together: bounded by max_wait_s
        while True:
            attempts += 1
            if attempts > self.policy.max_total_attempts:
                raise HubError(f"{what}: gave up after {attempts - 1} attempts")
            bucket = bucket_of_url(url, self.endpoint)
            try:
                ticket, w = self.budgets.acquire(bucket, max(0.0, self.budgets.max_wait_s - waited))
            except WaitTooLong as exc:
                raise HubError(f"{what}: {exc}") from None
            if w:
                stats.waited(w)
                waited += w
            stats.sent(kind, bucket)
            try:
                try:
                    headers = self._headers(url)
                    offset = range_start() if range_start is not None else 0
                    if offset > 0:
                        headers["range"] = f"bytes={offset}-"
                    request = session.build_request(method, url, params=params, headers=headers,
                                                    timeout=httpx2.Timeout(self.timeout_s, connect=10.0))
                    resp = session.send(request, stream=True, follow_redirects=False)
                finally:
                    ticket.done()  # the response (or the failure) is in: the request left the server's queue
            except httpx2.TransportError as exc:
                if isinstance(exc, httpx2.ProxyError):
                    raise HubError(f"{what}: proxy error ({one_line(exc, typed=True)})") from None
                stats.answered("conn")
                n_transient += 1
                if n_transient > self.policy.max_transient:
                    raise HubError(f"{what}: connection failed {n_transient} times "
                                   f"({one_line(exc, typed=True)})") from None
                wait = self._backoff(n_transient)
                log.info("%s: %s; retrying in %.1f s", what, one_line(exc, typed=True), wait)
                waited = self._sleep(wait, what, f"connection failed ({one_line(exc, typed=True)})", waited)
                stats.waited(wait)
                continue
            except Exception as exc:  # OfflineModeIsEnabled from the library's request hook, ...
                raise HubError(f"{what}: {one_line(exc, typed=True)}") from None
            try:
                code = resp.status_code
                stats.answered(code)
                items = self._note_ratelimit(resp, bucket, ticket)
                if code in REDIRECTS_SET:
                    location = resp.headers.get("location")
                    n_redirects += 1
                    if not location or n_redirects > self.policy.max_redirects:
                        raise HubError(f"{what}: too many redirects or redirect without Location", code)
                    try:  # a Location such as http://host:99999/ or http://[::1/ is the server's fault, not a crash
                        url = urljoin(str(resp.url), location)
                        _origin(url)
                    except ValueError as exc:
                        raise HubError(f"{what}: redirect to an invalid URL ({one_line(exc, typed=True)})",
                                       code) from None
                    problem = endpoint_problem(url)  # ftp://, file://: httpx cannot send it; retrying cannot help
                    if problem:
                        raise HubError(f"{what}: redirect to an invalid URL ({problem})", code)
                    params = None
                    continue
                if code == 429:
                    n_429 += 1
                    budget = self.budgets.bucket(bucket)
                    budget.note_429()
                    if n_429 > self.policy.max_429:
                        raise HubError(f"{what}: still rate limited (HTTP 429) after {n_429 - 1} retries", 429)
                    wait = self._wait_429(resp, n_429, bucket, items)
                    log.info("%s: HTTP 429, waiting %.1f s", what, wait)
                    # the whole bucket waits (every thread); this call then waits in acquire, bounded there
                    budget.pause(wait, f"HTTP 429 on {what}")
                    cap = self.budgets.max_wait_s
                    if waited + wait > cap:
                        raise HubError(f"{what}: HTTP 429 from the Hub's {bucket!r} rate limit asks to wait "
                                       f"{human_s(wait)} (until {utc_after(wait)}), more than --max-wait-s "
                                       f"{cap:g}; giving up", 429)
                    continue
                if code in TRANSIENT_CODES:
                    n_transient += 1
                    if n_transient > self.policy.max_transient:
                        raise HubError(f"{what}: HTTP {code} after {n_transient - 1} retries", code)
                    wait = self._backoff(n_transient, resp)
                    log.info("%s: HTTP %d, retrying in %.1f s", what, code, wait)
                    waited = self._sleep(wait, what, f"HTTP {code}", waited)
                    stats.waited(wait)
                    continue
                if code >= 400:
                    raise _http_error(resp, what)
                if not 200 <= code < 300:
                    raise HubError(f"{what}: unexpected HTTP {code}", code)
                try:
                    return consume(resp)
                except _Transient as exc:
                    if exc.progressed:
                        n_transient = 0
                    n_transient += 1
                    stats.answered("conn")
                    if n_transient > self.policy.max_transient:
                        raise HubError(f"{what}: {exc.reason} ({n_transient} times)") from None
                    wait = self._backoff(n_transient)
                    log.info("%s: %s; resuming in %.1f s", what, exc.reason, wait)
                    waited = self._sleep(wait, what, exc.reason, waited)
                    stats.waited(wait)
                    continue
            finally:
                resp.close()

    # ------------------------------------------------------------------ the three calls
    def resolve_revision(self, repo_id: str, revision: str, stats: CallStats) -> str:
        """Commit SHA of ``revision`` (branch or tag) of dataset ``repo_id``.

        ``GET {endpoint}/api/datasets/{repo_id}/revision/{revision}`` (revision URL-quoted with
        ``safe=""``); the JSON answer's ``sha`` is the commit (docs/prefetch.md#requests). Retried on 429/5xx,
        unlike ``HfApi.dataset_info``.

        Raises:
            HubError: repo or revision not found, access denied, no ``sha`` in the answer, retries exhausted.
        """
        url = f"{self.endpoint}/api/datasets/{repo_id}/revision/{quote(revision, safe='')}"

        def consume(resp):
            try:
                data = _read_json(resp, f"revision {revision!r} of {repo_id}")
            except HubError:
                raise
            except Exception as exc:
                raise HubError(f"revision {revision!r} of {repo_id}: answer is not JSON "
                               f"({one_line(exc, typed=True)})") from None
            sha = data.get("sha") if isinstance(data, dict) else None
            if not isinstance(sha, str) or not sha:
                raise HubError(f"revision {revision!r} of {repo_id}: answer has no commit sha")
            if not SHA_RE.match(sha):  # it names cache files: never a path
                raise HubError(f"revision {revision!r} of {repo_id}: the answer's commit {sha[:60]!r} is not a "
                               "40-hex SHA")
            return sha

        return self.call("GET", url, kind="resolve", stats=stats, what=f"revision {revision!r} of {repo_id}",
                         consume=consume)

    def list_tree(self, repo_id: str, commit: str, stats: CallStats) -> dict[str, TreeFile]:
        """All files of ``repo_id`` at ``commit``: ``GET .../tree/{commit}?recursive=true&expand=false``,
        following ``Link: <...>; rel="next"`` pages (1000 entries per page on the Hub, docs/prefetch.md#requests).

        Returns:
            path -> :class:`TreeFile` (directories dropped).

        Raises:
            HubError: as :meth:`resolve_revision`, a page that is not a JSON list, or a file entry that cannot be
                used (no string path, a negative or non-integer size, a hash that is not a string).
        """
        url: str | None = f"{self.endpoint}/api/datasets/{repo_id}/tree/{quote(commit, safe='')}"
        params: dict | None = {"recursive": "true", "expand": "false"}
        files: dict[str, TreeFile] = {}
        page = 0
        seen: set[str] = set()
        while url:
            page += 1
            if page > MAX_TREE_PAGES or url in seen:
                raise HubError(f"tree of {repo_id}@{commit[:12]}: more than {MAX_TREE_PAGES} pages, or a page "
                               "links back to an earlier one")
            seen.add(url)
            what = f"tree of {repo_id}@{commit[:12]} (page {page})"

            def consume(resp, what=what):
                try:
                    items = _read_json(resp, what)
                except HubError:
                    raise
                except Exception as exc:
                    raise _Transient(f"page is not JSON ({one_line(exc, typed=True)})") from None
                if not isinstance(items, list):
                    raise HubError(f"{what}: answer is not a JSON list")
                nxt = resp.links.get("next", {}).get("url")
                return items, (urljoin(str(resp.url), nxt) if nxt else None)

            items, url = self.call("GET", url, kind="tree", stats=stats, what=what, params=params, consume=consume)
            params = None
            for item in items:
                if not (isinstance(item, dict) and item.get("type") == "file"):
                    continue  # a directory (or a kind this client does not fetch)
                try:
                    if not isinstance(item.get("path"), str):
                        raise ValueError("its path is not a string")
                    tf = TreeFile.from_api(item)
                except (TypeError, ValueError) as exc:
                    # an impossible entry (a size of -5, a hash that is not a string) makes the whole listing
                    # untrustworthy: dropping the file would report the repo complete without it
                    raise HubError(f"{what}: a file entry cannot be used ({one_line(exc)})") from None
                files[tf.path] = tf
        return files

    def file_url(self, repo_id: str, commit: str, path: str) -> str:
        """``{endpoint}/datasets/{repo_id}/resolve/{commit}/{path}`` via :func:`huggingface_hub.hf_hub_url`."""
        from huggingface_hub import hf_hub_url

        return hf_hub_url(repo_id, path, repo_type="dataset", revision=commit, endpoint=self.endpoint)

    def download(self, repo_id: str, commit: str, entry: TreeFile, tmp: Path, stats: CallStats,
                 on_bytes: Callable[[int], None] | None = None) -> int:
        """Stream ``entry`` at ``commit`` into ``tmp`` (resuming with ``Range`` after a cut), and verify it.

        ``tmp`` may hold a prefix from an earlier attempt; it is hashed first and resumed from. On
        return ``tmp`` holds exactly ``entry.size`` bytes whose hash matches the tree listing.

        Returns:
            bytes received over the network (int).

        Raises:
            HubError: the server refuses, retries are exhausted, or the content does not match the
                listing (size or hash); ``tmp`` is then left for the caller to delete.
        """
        url = self.file_url(repo_id, commit, entry.path)
        hasher = ContentHasher(entry)
        received = 0
        with open(tmp, "ab+") as fh:
            fh.seek(0)
            have = 0
            while chunk := fh.read(_CHUNK * 16):
                hasher.update(chunk)
                have += len(chunk)
            if have > entry.size:
                fh.truncate(0)
                hasher.reset()
                have = 0
        # "best": the most bytes any attempt has held; an attempt that ends below or at it made no progress (a
        # server that ignores Range and keeps sending the same short 200 restarts from 0 every time)
        state = {"have": have, "best": have}

        def range_start() -> int:
            return state["have"] if 0 < state["have"] < entry.size else 0

        def consume(resp):
            nonlocal received
            start = 0
            if resp.status_code == 206:
                cr = resp.headers.get("content-range", "")
                try:
                    start = int(cr.split()[1].split("-")[0])
                except (IndexError, ValueError):
                    start = -1
                if start != state["have"]:
                    raise HubError(f"{entry.path}: server answered Range with {cr!r}", 206)
            with open(tmp, "r+b" if start else "wb") as out:
                if start:
                    out.seek(start)
                    out.truncate(start)
                else:
                    hasher.reset()
                    state["have"] = 0
                try:
                    for chunk in resp.iter_bytes():  # as received, so a cut keeps every byte that arrived
                        try:
                            out.write(chunk)
                        except OSError as exc:  # a full disk, a quota, an I/O error: not the connection's fault
                            raise HubError(f"{entry.path}: cannot write the downloaded bytes to disk "
                                           f"({os_error_text(exc)})") from None
                        hasher.update(chunk)
                        state["have"] += len(chunk)
                        received += len(chunk)
                        if on_bytes is not None:
                            on_bytes(len(chunk))
                        if state["have"] > entry.size:
                            break
                except Exception as exc:  # httpx2 RemoteProtocolError/ReadError/ReadTimeout mid-body
                    import httpx2

                    if isinstance(exc, (httpx2.TransportError, httpx2.StreamError, OSError)):
                        out.flush()
                        raise _Transient(f"connection dropped after {state['have']} of {entry.size} bytes",
                                         gained()) from None
                    raise
            if state["have"] < entry.size:
                raise _Transient(f"body ended after {state['have']} of {entry.size} bytes", gained())
            return None

        def gained() -> bool:
            """The attempt holds more bytes than any before it (and records that)."""
            if state["have"] > state["best"]:
                state["best"] = state["have"]
                return True
            return False

        if entry.size == 0:
            Path(tmp).write_bytes(b"")
        elif state["have"] < entry.size:
            self.call("GET", url, kind="download", stats=stats, what=f"{repo_id}/{entry.path}",
                      range_start=range_start, consume=consume)
        size = Path(tmp).stat().st_size
        if size != entry.size:
            raise HubError(f"{entry.path}: got {size} bytes, the tree listing says {entry.size}")
        if not hasher.matches():
            raise HubError(f"{entry.path}: content hash {hasher.hexdigest()[:12]} does not match the listing "
                           f"({(hasher.expected or '')[:12]})")
        return received


REDIRECTS_SET = frozenset(REDIRECT_CODES)


def _http_error(resp, what: str) -> HubError:
    """Turn a 4xx into a one-line :class:`HubError` using huggingface_hub's classification."""
    from huggingface_hub import errors as hf_errors
    from huggingface_hub.utils import hf_raise_for_status

    code = resp.headers.get("x-error-code")
    try:
        resp.read()
    except Exception:
        pass
    reason = f"HTTP {resp.status_code}"
    try:
        hf_raise_for_status(resp)
    except hf_errors.RevisionNotFoundError:
        reason = "revision not found"
    except hf_errors.GatedRepoError:
        reason = "gated dataset: accept its conditions on the Hub and set HF_TOKEN"
    except hf_errors.RepositoryNotFoundError:
        reason = "dataset not found (or private: set HF_TOKEN)"
    except hf_errors.RemoteEntryNotFoundError:
        reason = "file not found"
    except hf_errors.HfHubHTTPError:
        pass
    except Exception:
        pass
    if resp.status_code in (401, 403) and "not found" not in reason and "gated" not in reason:
        reason = f"access denied (HTTP {resp.status_code}; check HF_TOKEN)"
    return HubError(f"{what}: {reason}" + (f" [{code}]" if code else ""), resp.status_code, code)
