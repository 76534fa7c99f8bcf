"""The Hub's rate-limit buckets: which bucket a request falls in, and what the server says about each.

The Hub counts requests in separate fixed 5-minute windows, one per bucket (Hub documentation, "Hub Rate
limits", https://huggingface.co/docs/hub/rate-limits):

* ``"api"``: the Hub API (``/api/...``): revision resolve, tree listing (each page is one request),
  repo info. 500 requests per 5 minutes per IP address anonymously, 1,000 for a free user, 2,500 PRO.
* ``"resolvers"``: every ``/resolve/`` file URL (a file download). 3,000 / 5,000 / 12,000.
* ``"pages"``: web pages. prefetch never requests one.

A redirect to another origin (an LFS/Xet CDN) is not a Hub request; lrtool counts it as ``"cdn"``.

Responses carry the IETF rate-limit headers (draft-ietf-httpapi-ratelimit-headers) naming the bucket::

    RateLimit: "api";r=487;t=212                 remaining requests, seconds until the window resets
    RateLimit-Policy: "fixed window";"api";q=500;w=300    quota per window, window length in seconds

(the form huggingface_hub 2.4 parses in ``huggingface_hub.utils.parse_ratelimit_headers``). The parsers
here are lenient: several comma-separated items, the bucket named by any quoted string or bare token of
an item (for the policy, the last one: ``"fixed window"`` is the kind of window), decimal seconds, and
the older forms ``RateLimit: limit=.., remaining=.., reset=..`` and ``RateLimit-Remaining`` /
``RateLimit-Reset`` / ``RateLimit-Limit`` / ``RateLimit-Policy: 500;w=300``. An item without a bucket
name applies to the bucket of the request it answers. Numbers that are negative, not finite, or absurd
(quota 0, window 0) are ignored, never trusted.
"""

from __future__ import annotations

import email.utils
import math
import re
import time
from dataclasses import dataclass
from urllib.parse import urlsplit

API = "api"
RESOLVERS = "resolvers"
PAGES = "pages"
CDN = "cdn"
HUB_BUCKETS = (API, RESOLVERS, PAGES)

_MAX_HEADER = 4096  # longer header values are ignored, not parsed
_NUM = r"(\d+(?:\.\d+)?)"


@dataclass(frozen=True)
class RateLimitItem:
    """What one ``RateLimit`` / ``RateLimit-Policy`` item says about one bucket.

    Attributes:
        bucket: ``"api"``, ``"resolvers"``, ``"pages"``, another name the server used (lower case), or
            None when the item names none (it then applies to the bucket of the request).
        remaining: requests left in the current window (``r``), or None.
        reset_s: seconds until the window resets (``t``), or None.
        quota: requests allowed per window (``q``), or None.
        window_s: window length in seconds (``w``), or None.
        fixed_window: the policy names a fixed window (``"fixed window"``): the quota renews in full
            at each reset.
    """

    bucket: str | None
    remaining: int | None = None
    reset_s: float | None = None
    quota: int | None = None
    window_s: float | None = None
    fixed_window: bool = False


def bucket_of_url(url: str, endpoint: str) -> str:
    """The bucket a request to ``url`` counts in, for a Hub at ``endpoint``.

    ``{endpoint}/api/...`` -> ``"api"``; ``{endpoint}/datasets/{org}/{name}/resolve/...`` (or a model's
    ``{org}/{name}/resolve/...``) -> ``"resolvers"``; any other path on the endpoint's origin ->
    ``"pages"``; another origin (a CDN a download was redirected to) -> ``"cdn"``. A path prefix in the
    endpoint (a mirror at ``https://host/hf``) is honoured.
    """
    u, e = urlsplit(url), urlsplit(endpoint)
    port = {"http": 80, "https": 443}
    if ((u.scheme, (u.hostname or "").lower(), u.port or port.get(u.scheme))
            != (e.scheme, (e.hostname or "").lower(), e.port or port.get(e.scheme))):
        return CDN
    path = u.path
    prefix = e.path.rstrip("/")
    if prefix and (path == prefix or path.startswith(prefix + "/")):
        path = path[len(prefix):]
    segs = [s for s in path.split("/") if s]
    if segs[:1] == ["api"]:
        return API
    if (len(segs) >= 4 and segs[0] in ("datasets", "spaces") and segs[3] == "resolve") or (
            len(segs) >= 3 and segs[2] == "resolve"):
        return RESOLVERS
    return PAGES


def normalise_bucket(name: str | None) -> str | None:
    """Map a server's bucket/policy name to ours: ``"api"``, ``"resolvers"`` (``resolve``...), ``"pages"``,
    else the name in lower case; None stays None."""
    if not name:
        return None
    n = name.strip().lower()
    if n in HUB_BUCKETS:
        return n
    if "resolve" in n:
        return RESOLVERS
    if n.startswith("api") or n.endswith("api"):
        return API
    if n.startswith("page"):
        return PAGES
    return n


def _split_items(value: str) -> list[str]:
    """Split a structured-field list on commas outside double quotes."""
    items, cur, quoted = [], [], False
    for ch in value:
        if ch == '"':
            quoted = not quoted
        if ch == "," and not quoted:
            items.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
    items.append("".join(cur))
    return [i.strip() for i in items if i.strip()]


def _params(item: str) -> tuple[list[str], dict[str, str]]:
    """``'"fixed window";"api";q=500;w=300'`` -> (['fixed window', 'api'], {'q': '500', 'w': '300'})."""
    names: list[str] = []
    params: dict[str, str] = {}
    for part in re.findall(r'"[^"]*"|[^;]+', item):
        part = part.strip()
        if not part:
            continue
        if part.startswith('"'):
            names.append(part.strip('"'))
        elif "=" in part:
            k, _, v = part.partition("=")
            params.setdefault(k.strip().lower(), v.strip().strip('"'))
        elif re.fullmatch(r"[A-Za-z][\w.\-]*", part):
            names.append(part)
    return names, params


def _bucket_name(names: list[str]) -> str | None:
    """The bucket an item names: its last name that is not a kind of window (``"fixed window"``)."""
    name = next((n for n in reversed(names) if "window" not in n.lower()), None)
    return normalise_bucket(name)


def _remaining_item(name: str | None, p: dict[str, str]) -> RateLimitItem | None:
    """The item, or None when it gives neither ``r`` nor ``t``, or gives one that is not a valid number."""
    raw_r, raw_t = p.get("r", p.get("remaining")), p.get("t", p.get("reset"))
    remaining, reset = _int(raw_r), _seconds(raw_t)
    if (raw_r is not None and remaining is None) or (raw_t is not None and reset is None):
        return None
    if remaining is None and reset is None:
        return None
    return RateLimitItem(name, remaining, reset)


def _int(v: str | None) -> int | None:
    if v is None or not re.fullmatch(r"\d{1,15}", v):
        return None
    return int(v)


def _seconds(v: str | None) -> float | None:
    if v is None or not re.fullmatch(_NUM, v) or len(v) > 20:
        return None
    x = float(v)
    return x if math.isfinite(x) else None


def parse_ratelimit(headers) -> list[RateLimitItem]:
    """Every item of ``RateLimit`` (and the older ``RateLimit-Remaining``/``-Reset``) in ``headers``.

    Args:
        headers: a case-insensitive mapping (httpx headers) or a dict with lower-case keys.

    Returns:
        a list of :class:`RateLimitItem` with ``remaining`` and/or ``reset_s`` set; empty when the
        headers are absent or unreadable.
    """
    out: list[RateLimitItem] = []
    raw = _get(headers, "ratelimit")
    if raw and len(raw) <= _MAX_HEADER:
        unnamed: dict[str, str] = {}  # the older form "limit=100, remaining=0, reset=30" is one item
        for item in _split_items(raw):
            names, p = _params(item)
            name = _bucket_name(names)
            if name is None:
                for k, v in p.items():
                    unnamed.setdefault(k, v)
                continue
            if (it := _remaining_item(name, p)) is not None:
                out.append(it)
        if unnamed and (it := _remaining_item(None, unnamed)) is not None:
            out.append(it)
    if not out:
        remaining = _int(_get(headers, "ratelimit-remaining"))
        reset = _seconds(_get(headers, "ratelimit-reset"))
        if remaining is not None or reset is not None:
            out.append(RateLimitItem(None, remaining, reset))
    return out


def parse_ratelimit_policy(headers) -> list[RateLimitItem]:
    """Every item of ``RateLimit-Policy`` (or the older ``RateLimit-Limit``) with a usable quota.

    Returns:
        a list of :class:`RateLimitItem` with ``quota`` (>= 1) and ``window_s`` (> 0, or None when the
        server gives none) set.
    """
    out: list[RateLimitItem] = []
    raw = _get(headers, "ratelimit-policy")
    if raw and len(raw) <= _MAX_HEADER:
        for item in _split_items(raw):
            names, p = _params(item)
            quota = _int(p.get("q"))
            if quota is None:  # the older form "500;w=300": the bare number is the quota
                m = re.match(r"\s*(\d{1,15})\s*(?:;|$)", item)
                quota = int(m.group(1)) if m else None
            window = _seconds(p.get("w"))
            if quota is None or quota < 1 or ("w" in p and (window is None or window <= 0)):
                continue
            fixed = any("fixed" in n.lower() for n in names)
            out.append(RateLimitItem(_bucket_name(names), quota=quota, window_s=window, fixed_window=fixed))
    if not out:
        quota = _int(_get(headers, "ratelimit-limit"))
        if quota is not None and quota >= 1:
            out.append(RateLimitItem(None, quota=quota))
    return out


def parse_retry_after(value: str | None, now_epoch: float | None = None) -> float | None:
    """Seconds to wait from a ``Retry-After`` value: delay-seconds or an HTTP-date (RFC 9110 §10.2.3).

    Returns None when absent or unparsable; never negative, never infinite (a date in year 9999 gives
    its distance in seconds; the caller caps the wait).
    """
    if value is None:
        return None
    value = value.strip()
    if not value or len(value) > 64:
        return None
    if re.fullmatch(_NUM, value):
        x = float(value)
        return x if math.isfinite(x) else None
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError, OverflowError):
        return None
    if when is None:
        return None
    try:
        stamp = when.timestamp()
    except (OverflowError, ValueError, OSError):
        return None
    now = time.time() if now_epoch is None else now_epoch
    return max(0.0, stamp - now)


def _get(headers, key: str) -> str | None:
    try:
        v = headers.get(key)
    except Exception:
        return None
    return v if isinstance(v, str) else None
