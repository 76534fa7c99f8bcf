"""A Hub-compatible HTTP server for tests and benchmarks: real sockets on 127.0.0.1, counted requests,
injected faults.

It serves dataset repos held in memory (filled from fixture folders or dicts) with the routes and
headers ``huggingface_hub`` 2.4 and ``lrtool prefetch`` use (docs/prefetch.md#requests):

* ``GET /api/datasets/{org}/{name}[/revision/{rev}]`` -> ``{"id", "sha", "siblings", ...}``;
  404 + ``X-Error-Code: RepoNotFound`` / ``RevisionNotFound``. ``{rev}`` may be URL-quoted.
* ``GET /api/datasets/{org}/{name}/tree/{rev}[/{path}]?recursive=true&expand=false[&cursor=N]`` ->
  JSON list of ``{"type": "file", "path", "size", "oid"[, "lfs"]}`` and ``{"type": "directory", ...}``,
  ``page_size`` entries per page, next page in ``Link: <absolute url>; rel="next"``.
* ``HEAD``/``GET /datasets/{org}/{name}/resolve/{rev}/{path}`` -> ``X-Repo-Commit``, ``ETag`` (git blob
  SHA-1), ``Content-Length``; ``Range: bytes=N-[M]`` -> 206 + ``Content-Range``. Files of at least
  ``lfs_threshold`` bytes are LFS: 302 to ``{cdn}/cdn/{sha256}`` with ``X-Linked-Etag`` /
  ``X-Linked-Size`` (the CDN may be another :class:`HubServer`, i.e. another origin).
* ``GET /cdn/{sha256}`` (with Range), ``GET /api/agent-harnesses`` (an empty registry).

Rate limits as the Hub enforces them (Hub documentation, "Hub Rate limits"): with ``rate_limits``
(e.g. ``{"api": 500, "resolvers": 3000}``, the anonymous quotas) and ``rate_window_s``, requests are
counted per bucket and per client (its ``Authorization`` header, else anonymous) in fixed windows of
``rate_window_s`` seconds: ``api`` = ``/api/...`` (info, tree pages, harness), ``resolvers`` = every
``/resolve/`` request, ``pages`` = anything else on this origin; ``/cdn/`` (another origin on the
real Hub) is not counted. Every response of a limited bucket carries
``RateLimit: "<bucket>";r=<remaining>;t=<seconds to reset>`` and
``RateLimit-Policy: "fixed window";"<bucket>";q=<quota>;w=<window>`` (unless ``advertise=False``); a
request past the quota is answered 429 with ``Retry-After: <t>`` and ``r=0``, and counts.

Branches, tags and commit SHAs: :meth:`HubServer.add_repo` / :meth:`HubServer.commit` create commits,
:meth:`HubServer.set_ref` moves a branch or tag. Every request is logged (:attr:`HubServer.log`) and
counted per route (``info``, ``tree``, ``head``, ``get``, ``cdn``, ``harness``, ``other``).
:meth:`HubServer.inject` adds faults: 429 with ``Retry-After`` and/or ``RateLimit``, any status
(5xx), a connection dropped before the response or in the middle of the body, a delay, a success
carrying ``RateLimit: ...;r=0``, a body held half-sent until the test releases it, a 200 with a body of the
test's choosing (not JSON, the wrong JSON, too large), or a normal answer with some headers replaced (a
``Content-Range`` that ignores the ``Range`` asked for, a ``Link`` that never ends), or a download body that never ends. As a proxy it
refuses every
``CONNECT`` with 403 (logged as route ``other``, method ``CONNECT``).

Use it as a context manager or through the ``hub_server`` pytest fixture (``tests/prefetch/conftest.py``); it stops
by itself.
"""

from __future__ import annotations

import hashlib
import json
import math
import shutil
import socket
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Callable
from urllib.parse import parse_qs, quote, unquote, urlsplit

ROUTES = ("info", "tree", "head", "get", "cdn", "harness", "other")
BUCKET_OF_ROUTE = {"info": "api", "tree": "api", "harness": "api", "head": "resolvers", "get": "resolvers",
                   "other": "pages", "cdn": None}


def git_blob_sha1(data: bytes) -> str:
    """The git object id of a blob (what the Hub lists as ``oid`` and sends as ``ETag``)."""
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def lfs_pointer(data: bytes) -> bytes:
    return (f"version https://git-lfs.github.com/spec/v1\noid sha256:{hashlib.sha256(data).hexdigest()}\n"
            f"size {len(data)}\n").encode()


def read_folder(root: Path) -> dict[str, bytes]:
    """All regular files below ``root`` (hidden folders such as ``.cache`` skipped) as {relpath: bytes}."""
    out: dict[str, bytes] = {}
    root = Path(root)
    for p in sorted(root.rglob("*")):
        rel = p.relative_to(root)
        if p.is_file() and not any(part.startswith(".") for part in rel.parts):
            out[rel.as_posix()] = p.read_bytes()
    return out


@dataclass
class Request:
    """One logged request. ``t`` is the server clock at arrival; ``auth`` the Authorization header; ``target`` the
    request target as sent (path and query, still URL-quoted); ``headers`` every request header (names lower-case)."""

    method: str
    route: str
    repo: str | None
    path: str | None
    rev: str | None
    status: int | None
    t: float
    auth: str | None
    range: str | None
    fault: str | None = None
    sent: dict = field(default_factory=dict)
    bucket: str | None = None
    target: str | None = None
    headers: dict = field(default_factory=dict)


@dataclass
class Fault:
    """An injected fault; see :meth:`HubServer.inject`."""

    route: str
    kind: str
    times: int = 1
    repo: str | None = None
    path: str | None = None
    skip: int = 0
    status: int = 503
    retry_after: str | None = "1"
    ratelimit: str | None = None
    policy: str | None = None
    after_bytes: int | None = None
    delay_s: float = 0.0
    body: bytes | None = None
    headers: dict[str, str] | None = None
    release: threading.Event = field(default_factory=threading.Event)
    reached: threading.Event = field(default_factory=threading.Event)
    fired: int = 0
    sent_bytes: int = 0


@dataclass
class _Repo:
    commits: dict[str, dict[str, bytes]] = field(default_factory=dict)
    refs: dict[str, str] = field(default_factory=dict)


class HubServer:
    """In-process Hub-compatible server on 127.0.0.1 (random port).

    Args:
        page_size: tree entries per page (the Hub uses 1000).
        lfs_threshold: files of at least this many bytes are served as LFS (None = no LFS).
        cdn: another HubServer to redirect LFS downloads to (a different origin); default self.
        clock: time source for :attr:`Request.t` and the rate-limit windows (tests pass a fake clock's ``now``).
        rate_limits: quota per window for each limited bucket (``api``, ``resolvers``, ``pages``); None = none.
        rate_window_s: the fixed window of those quotas (seconds; windows start when the server is created).
        auth_rate_limits: quotas for clients that send a token (default: ``rate_limits``).
        advertise: send ``RateLimit`` / ``RateLimit-Policy`` headers (False: enforce silently).
    """

    def __init__(self, *, page_size: int = 1000, lfs_threshold: int | None = None,
                 cdn: "HubServer | None" = None, clock: Callable[[], float] = time.monotonic,
                 rate_limits: dict[str, int] | None = None, rate_window_s: float = 300.0,
                 auth_rate_limits: dict[str, int] | None = None, advertise: bool = True):
        self.rate_limits = dict(rate_limits or {})
        self.auth_rate_limits = dict(auth_rate_limits) if auth_rate_limits is not None else None
        self.rate_window_s = rate_window_s
        self.advertise = advertise
        self._rate_t0 = clock()
        self._rate_counts: dict[tuple[str, str, int], int] = {}
        self.page_size = page_size
        self.lfs_threshold = lfs_threshold
        self.cdn = cdn
        self.clock = clock
        self.repos: dict[str, _Repo] = {}
        self.blobs: dict[str, bytes] = {}
        self.log: list[Request] = []
        self.faults: list[Fault] = []
        self._lock = threading.Lock()
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self._n_commits = 0

    # ------------------------------------------------------------------ lifecycle
    def start(self) -> "HubServer":
        hub = self

        class Handler(_Handler):
            server_hub = hub

        self._httpd = _QuietServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05},
                                        name="hubserver", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        with self._lock:
            for f in self.faults:
                f.release.set()
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None

    def __enter__(self) -> "HubServer":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    @property
    def url(self) -> str:
        assert self._httpd is not None, "server not started"
        host, port = self._httpd.server_address[:2]
        return f"http://{host}:{port}"

    # ------------------------------------------------------------------ content
    def add_repo(self, repo_id: str, files: dict[str, bytes] | Path, *, branch: str = "main",
                 tags: tuple[str, ...] = ()) -> str:
        """Create ``repo_id`` with one commit holding ``files`` (a dict or a folder); return its SHA."""
        with self._lock:
            self.repos.setdefault(repo_id, _Repo())
        sha = self.commit(repo_id, files, branch=branch)
        for t in tags:
            self.set_ref(repo_id, t, sha)
        return sha

    def commit(self, repo_id: str, files: dict[str, bytes] | Path, *, branch: str | None = "main",
               sha: str | None = None) -> str:
        """Add a commit whose tree is exactly ``files``; move ``branch`` to it (None: no ref). Return the SHA
        (``sha`` forces a given 40-hex id, e.g. one that looks like a number)."""
        if not isinstance(files, dict):
            files = read_folder(Path(files))
        files = dict(files)
        with self._lock:
            repo = self.repos.setdefault(repo_id, _Repo())
            self._n_commits += 1
            h = hashlib.sha1(f"{repo_id}\0{self._n_commits}".encode())
            for p in sorted(files):
                h.update(p.encode() + b"\0" + git_blob_sha1(files[p]).encode())
            sha = sha or h.hexdigest()
            repo.commits[sha] = files
            if branch is not None:
                repo.refs[branch] = sha
            for data in files.values():
                if self._is_lfs(data):
                    blob_store = self.cdn.blobs if self.cdn is not None else self.blobs
                    blob_store[hashlib.sha256(data).hexdigest()] = data
        return sha

    def set_ref(self, repo_id: str, name: str, sha: str) -> None:
        with self._lock:
            self.repos[repo_id].refs[name] = sha

    def copy_folder_repo(self, repo_id: str, folder: Path, **kw) -> str:
        """Shorthand for :meth:`add_repo` from a fixture folder."""
        return self.add_repo(repo_id, read_folder(Path(folder)), **kw)

    def _is_lfs(self, data: bytes) -> bool:
        return self.lfs_threshold is not None and len(data) >= self.lfs_threshold

    # ------------------------------------------------------------------ faults and counters
    def inject(self, route: str, kind: str, **kw) -> Fault:
        """Add a fault for requests of ``route`` (one of :data:`ROUTES`, or ``"any"``).

        Kinds: ``"429"`` (with ``retry_after`` / ``ratelimit`` / ``policy`` headers), ``"status"`` (``status``,
        e.g. 503, with optional ``retry_after`` and ``headers``, e.g. ``{"Location": ...}``), ``"drop"`` (close
        before answering), ``"drop_body"``
        (send headers and ``after_bytes`` of the body, then close), ``"delay"`` (``delay_s`` then answer
        normally), ``"ratelimit_ok"`` (answer normally with the ``ratelimit`` / ``policy`` headers), ``"hold"`` (send
        ``after_bytes``, set ``fault.reached``, wait for ``fault.release``, send the rest), ``"body"`` (answer
        200 with ``body`` bytes, as JSON, plus ``headers``), ``"headers"`` (answer normally, with ``headers`` sent
        in place of the server's own: a ``Content-Range`` or ``Link`` of the test's choosing; a value of None leaves
        that header out), ``"endless"`` (route
        ``tree``: an empty page linking to the next cursor, forever), ``"endless_body"`` (routes ``get``/``cdn``: a
        200 without ``Content-Length`` whose body repeats the file until the client hangs up, or until
        ``after_bytes`` bytes (default 64 MiB) have gone out, so a client that never stops reading still ends;
        ``fault.sent_bytes`` counts what was sent).
        ``times`` matching requests are affected (-1 = all), after letting ``skip`` through; ``repo`` and
        ``path`` narrow the match.
        """
        f = Fault(route=route, kind=kind, **kw)
        with self._lock:
            self.faults.append(f)
        return f

    def clear_faults(self) -> None:
        with self._lock:
            for f in self.faults:
                f.release.set()
            self.faults.clear()

    def reset(self) -> None:
        """Forget the request log, the faults and the rate-limit counts; windows restart now (content stays)."""
        self.clear_faults()
        with self._lock:
            self.log.clear()
            self._rate_counts.clear()
            self._rate_t0 = self.clock()

    def counts(self, repo: str | None = None) -> Counter:
        """Requests per route (optionally for one repo)."""
        with self._lock:
            return Counter(r.route for r in self.log if repo is None or r.repo == repo)

    def total(self, repo: str | None = None) -> int:
        return sum(self.counts(repo).values())

    def requests(self, route: str | None = None, repo: str | None = None) -> list[Request]:
        with self._lock:
            return [r for r in self.log if (route is None or r.route == route) and (repo is None or r.repo == repo)]

    def _pick_fault(self, route: str, repo: str | None, path: str | None) -> Fault | None:
        with self._lock:
            for f in self.faults:
                if f.route not in ("any", route):
                    continue
                if f.repo is not None and f.repo != repo:
                    continue
                if f.path is not None and f.path != path:
                    continue
                if f.skip > 0:  # let this request through untouched
                    f.skip -= 1
                    return None
                if f.times == 0:
                    continue
                if f.times > 0:
                    f.times -= 1
                f.fired += 1
                return f
        return None

    def _rate_check(self, bucket: str | None, auth: str | None) -> tuple[bool, dict[str, str]]:
        """Count one request of ``bucket`` for this client; return (allowed, rate-limit headers)."""
        limits = self.auth_rate_limits if (auth and self.auth_rate_limits is not None) else self.rate_limits
        if bucket is None or bucket not in limits:
            return True, {}
        quota, w = limits[bucket], self.rate_window_s
        with self._lock:
            elapsed = self.clock() - self._rate_t0
            window = int(elapsed // w)
            key = (bucket, auth or "anonymous", window)
            n = self._rate_counts[key] = self._rate_counts.get(key, 0) + 1
        reset = max(1, math.ceil((window + 1) * w - elapsed))
        allowed = n <= quota
        headers: dict[str, str] = {}
        if self.advertise:
            headers["RateLimit"] = f'"{bucket}";r={max(0, quota - n)};t={reset}'
            headers["RateLimit-Policy"] = f'"fixed window";"{bucket}";q={quota};w={w:g}'
        if not allowed:
            headers["Retry-After"] = str(reset)
        return allowed, headers

    def rate_limited(self, bucket: str | None = None) -> int:
        """Requests answered 429 by the quotas (not by injected faults), optionally of one bucket."""
        with self._lock:
            return sum(1 for r in self.log if r.status == 429 and r.fault == "quota"
                       and (bucket is None or r.bucket == bucket))

    def _record(self, req: Request) -> None:
        with self._lock:
            self.log.append(req)

    def resolve_rev(self, repo_id: str, rev: str) -> str | None:
        repo = self.repos.get(repo_id)
        if repo is None:
            return None
        if rev in repo.refs:
            return repo.refs[rev]
        if rev in repo.commits:
            return rev
        return None


class _QuietServer(ThreadingHTTPServer):
    """Does not print tracebacks for connections the client (or an injected fault) closed."""

    def handle_error(self, request, client_address):
        import sys

        exc = sys.exc_info()[1]
        if isinstance(exc, (ConnectionError, TimeoutError, OSError)):
            return
        super().handle_error(request, client_address)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "hubserver/1"
    timeout = 30
    disable_nagle_algorithm = True  # headers and body go out in separate writes: no 40 ms delayed-ACK stalls
    server_hub: HubServer

    def log_message(self, format, *args):  # quiet
        pass

    def do_GET(self):
        self._handle("GET")

    def do_HEAD(self):
        self._handle("HEAD")

    def do_CONNECT(self):  # a proxy that refuses every tunnel
        hub = self.server_hub
        self._rl_headers, self._replace, self._req = {}, {}, None
        hub._record(Request("CONNECT", "other", None, self.path, None, 403, hub.clock(),
                            self.headers.get("authorization"), None))
        self.close_connection = True
        self._send(403, {"Connection": "close"}, b"tunnel refused")

    def do_POST(self):
        length = int(self.headers.get("content-length") or 0)
        if length:
            self.rfile.read(length)
        self._handle("POST")

    # -------------------------------------------------------------- dispatch
    def _handle(self, method: str) -> None:
        hub = self.server_hub
        self._req: Request | None = None  # the logged request being answered (one connection serves several)
        self._replace: dict[str, str] = {}  # headers a "headers" fault sends in place of the server's own
        parts = urlsplit(self.path)
        segs = parts.path.split("/")[1:]
        query = parse_qs(parts.query)
        route, repo, rev, path = "other", None, None, None
        if segs[:2] == ["api", "agent-harnesses"]:
            route = "harness"
        elif len(segs) >= 4 and segs[:2] == ["api", "datasets"]:
            repo = f"{unquote(segs[2])}/{unquote(segs[3])}"
            rest = segs[4:]
            if not rest or rest == [""]:
                route, rev = "info", "main"
            elif rest[0] == "revision" and len(rest) >= 2:
                route, rev = "info", unquote("/".join(rest[1:]))
            elif rest[0] == "tree" and len(rest) >= 2:
                route, rev = "tree", unquote(rest[1])
                path = unquote("/".join(rest[2:])).strip("/") or None
        elif len(segs) >= 6 and segs[0] == "datasets" and segs[3] == "resolve":
            repo = f"{unquote(segs[1])}/{unquote(segs[2])}"
            rev = unquote(segs[4])
            path = unquote("/".join(segs[5:]))
            route = "head" if method == "HEAD" else "get"
        elif len(segs) == 2 and segs[0] == "cdn":
            route, path = "cdn", segs[1]
        if method == "POST":
            route = "other"
        bucket = BUCKET_OF_ROUTE[route]
        sent_headers = {k.lower(): v for k, v in self.headers.items()}
        allowed, self._rl_headers = hub._rate_check(bucket, self.headers.get("authorization"))
        if not allowed:
            req = Request(method, route, repo, path, rev, 429, hub.clock(), self.headers.get("authorization"),
                          self.headers.get("range"), "quota", dict(self._rl_headers), bucket, self.path, sent_headers)
            hub._record(req)
            return self._json(429, {"error": "Too Many Requests: you have reached your rate limit"})
        fault = hub._pick_fault(route, repo, path)
        req = Request(method, route, repo, path, rev, None, hub.clock(), self.headers.get("authorization"),
                      self.headers.get("range"), fault.kind if fault else None, bucket=bucket, target=self.path,
                      headers=sent_headers)
        hub._record(req)
        self._req = req  # its status is set before the answer goes out (a client may read the log at once)
        if fault is not None:
            if fault.kind == "delay":
                time.sleep(fault.delay_s)
            elif fault.kind == "429":
                headers = {}
                if fault.retry_after is not None:
                    headers["Retry-After"] = fault.retry_after
                if fault.ratelimit is not None:
                    headers["RateLimit"] = fault.ratelimit
                if fault.policy is not None:
                    headers["RateLimit-Policy"] = fault.policy
                req.status = 429
                req.sent = headers
                return self._json(429, {"error": "Too Many Requests"}, headers)
            elif fault.kind == "status":
                headers = {"Retry-After": fault.retry_after} if fault.retry_after is not None else {}
                headers.update(fault.headers or {})
                req.status = fault.status
                return self._json(fault.status, {"error": "injected"}, headers)
            elif fault.kind == "body":
                req.status = 200
                return self._send(200, {"Content-Type": "application/json", **(fault.headers or {})}, fault.body)
            elif fault.kind == "drop":
                req.status = -1
                return self._drop()
        extra = {}
        if fault is not None and fault.kind == "headers":
            self._replace = dict(fault.headers or {})
        if fault is not None and fault.kind == "ratelimit_ok":
            if fault.ratelimit:
                extra["RateLimit"] = fault.ratelimit
            if fault.policy:
                extra["RateLimit-Policy"] = fault.policy
        body_fault = fault if fault is not None and fault.kind in ("drop_body", "hold", "endless_body") else None
        try:
            if route == "harness":
                req.status = self._json(200, {"standardEnvVars": [], "harnesses": {}}, extra)
            elif route == "info":
                req.status = self._info(repo, rev, extra)
            elif route == "tree" and fault is not None and fault.kind == "endless":
                req.status = self._endless_tree(repo, rev, query)
            elif route == "tree":
                req.status = self._tree(repo, rev, path, query, extra)
            elif route in ("head", "get"):
                req.status = self._resolve(method, repo, rev, path, extra, body_fault)
            elif route == "cdn":
                req.status = self._cdn(method, path, extra, body_fault)
            else:
                req.status = self._json(404, {"error": "not found"}, {"X-Error-Code": "EntryNotFound"})
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True

    # -------------------------------------------------------------- responses
    def _send(self, status: int, headers: dict[str, str], body: bytes | None, *, head: bool = False) -> int:
        if getattr(self, "_req", None) is not None:
            self._req.status = status
        self.send_response(status)
        headers = {**getattr(self, "_rl_headers", {}), **headers, **getattr(self, "_replace", {})}
        for k, v in headers.items():
            if v is not None:
                self.send_header(k, v)
        if "Content-Length" not in headers:
            self.send_header("Content-Length", str(len(body or b"")))
        self.end_headers()
        if body and not head:
            self.wfile.write(body)
        return status

    def _json(self, status: int, obj, headers: dict[str, str] | None = None) -> int:
        h = {"Content-Type": "application/json"}
        h.update(headers or {})
        return self._send(status, h, json.dumps(obj).encode())

    def _drop(self) -> int:
        self.close_connection = True
        try:
            self.wfile.flush()
            self.connection.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        return -1

    def _repo_commit(self, repo_id: str, rev: str) -> tuple[str | None, int | None]:
        hub = self.server_hub
        if repo_id not in hub.repos:
            return None, self._json(404, {"error": "Repository not found"}, {"X-Error-Code": "RepoNotFound"})
        sha = hub.resolve_rev(repo_id, rev)
        if sha is None:
            return None, self._json(404, {"error": f"Invalid rev id: {rev}"}, {"X-Error-Code": "RevisionNotFound"})
        return sha, None

    def _info(self, repo_id: str, rev: str, extra) -> int:
        sha, err = self._repo_commit(repo_id, rev)
        if sha is None:
            return err
        files = self.server_hub.repos[repo_id].commits[sha]
        return self._json(200, {"_id": hashlib.md5(repo_id.encode()).hexdigest()[:24], "id": repo_id, "sha": sha,
                                "private": False, "disabled": False, "gated": False, "downloads": 0, "likes": 0,
                                "tags": [], "lastModified": "2026-01-01T00:00:00.000Z",
                                "siblings": [{"rfilename": p} for p in sorted(files)]}, extra)

    def _tree_entries(self, files: dict[str, bytes], prefix: str | None) -> list[dict]:
        hub = self.server_hub
        dirs: set[str] = set()
        out: list[dict] = []
        for p in sorted(files):
            if prefix and not p.startswith(prefix + "/"):
                continue
            parts = p.split("/")
            for i in range(1, len(parts)):
                d = "/".join(parts[:i])
                if (not prefix or d.startswith(prefix + "/")) and d not in dirs:
                    dirs.add(d)
                    out.append({"type": "directory", "oid": hashlib.sha1(d.encode()).hexdigest(), "path": d})
            data = files[p]
            if hub._is_lfs(data):
                pointer = lfs_pointer(data)
                out.append({"type": "file", "oid": git_blob_sha1(pointer), "size": len(data), "path": p,
                            "lfs": {"oid": hashlib.sha256(data).hexdigest(), "size": len(data),
                                    "pointerSize": len(pointer)}})
            else:
                out.append({"type": "file", "oid": git_blob_sha1(data), "size": len(data), "path": p})
        return out

    def _tree(self, repo_id: str, rev: str, path: str | None, query, extra) -> int:
        hub = self.server_hub
        sha, err = self._repo_commit(repo_id, rev)
        if sha is None:
            return err
        entries = self._tree_entries(hub.repos[repo_id].commits[sha], path)
        if path and not entries:
            return self._json(404, {"error": "not found"}, {"X-Error-Code": "EntryNotFound"})
        try:
            cursor = int(query.get("cursor", ["0"])[0])
        except ValueError:
            cursor = 0
        page = entries[cursor:cursor + hub.page_size]
        headers = dict(extra)
        if cursor + hub.page_size < len(entries):
            nxt = (f"{hub.url}/api/datasets/{repo_id}/tree/{quote(rev, safe='')}"
                   + (f"/{quote(path)}" if path else "")
                   + f"?recursive=true&expand=false&cursor={cursor + hub.page_size}")
            headers["Link"] = f'<{nxt}>; rel="next"'
        return self._json(200, page, headers)

    def _endless_tree(self, repo_id: str, rev: str, query) -> int:
        """An empty page whose ``Link`` names the next cursor, forever (a server that never stops paginating)."""
        try:
            cursor = int(query.get("cursor", ["0"])[0])
        except ValueError:
            cursor = 0
        nxt = f"{self.server_hub.url}/api/datasets/{repo_id}/tree/{quote(rev, safe='')}?cursor={cursor + 1}"
        return self._json(200, [], {"Link": f'<{nxt}>; rel="next"'})

    def _ranged(self, method: str, data: bytes, headers: dict[str, str], body_fault: Fault | None) -> int:
        total = len(data)
        status, start, end = 200, 0, total - 1
        rng = self.headers.get("range")
        if rng and rng.startswith("bytes="):
            a, _, b = rng[6:].partition("-")
            try:
                start = int(a) if a else 0
                end = int(b) if b else total - 1
            except ValueError:
                start, end = 0, total - 1
            if start >= total and total > 0:
                return self._send(416, {"Content-Range": f"bytes */{total}"}, b"")
            end = min(end, total - 1)
            status = 206
            headers["Content-Range"] = f"bytes {start}-{end}/{total}"
        chunk = data[start:end + 1]
        headers["Content-Length"] = str(len(chunk))
        headers.setdefault("Accept-Ranges", "bytes")
        headers.setdefault("Content-Type", "application/octet-stream")
        if method == "HEAD" or body_fault is None:
            return self._send(status, headers, chunk, head=(method == "HEAD"))
        if body_fault.kind == "endless_body":
            return self._endless_body(headers, data or b"\0", body_fault)
        # a faulty body: part of it, then cut or hold
        cut = body_fault.after_bytes if body_fault.after_bytes is not None else len(chunk) // 2
        cut = max(0, min(cut, len(chunk)))
        if getattr(self, "_req", None) is not None:
            self._req.status = status if body_fault.kind == "hold" else -status
        self.send_response(status)
        for k, v in {**getattr(self, "_rl_headers", {}), **headers, **getattr(self, "_replace", {})}.items():
            if v is not None:
                self.send_header(k, v)
        self.end_headers()
        self.wfile.write(chunk[:cut])
        self.wfile.flush()
        if body_fault.kind == "hold":
            body_fault.reached.set()
            body_fault.release.wait(timeout=30)
            self.wfile.write(chunk[cut:])
            return status
        self._drop()
        return -status

    def _endless_body(self, headers: dict[str, str], data: bytes, fault: Fault) -> int:
        """200 with no ``Content-Length`` (the body ends when the connection closes): ``data`` over and over until the
        client hangs up or ``fault.after_bytes`` (default 64 MiB) bytes are out."""
        cap = fault.after_bytes if fault.after_bytes is not None else 64 << 20
        if getattr(self, "_req", None) is not None:
            self._req.status = 200
        self.close_connection = True
        self.send_response(200)
        drop = {"Content-Length", "Content-Range"}
        for k, v in {**getattr(self, "_rl_headers", {}), **headers, "Connection": "close"}.items():
            if v is not None and k not in drop:
                self.send_header(k, v)
        self.end_headers()
        block = data * max(1, (64 << 10) // len(data))
        try:
            while fault.sent_bytes < cap:
                piece = block[:cap - fault.sent_bytes]
                self.wfile.write(piece)
                fault.sent_bytes += len(piece)
        except OSError:  # the client hung up
            pass
        return 200

    def _resolve(self, method: str, repo_id: str, rev: str, path: str, extra, body_fault) -> int:
        hub = self.server_hub
        sha, err = self._repo_commit(repo_id, rev)
        if sha is None:
            return err
        files = hub.repos[repo_id].commits[sha]
        if path not in files:
            return self._json(404, {"error": "Entry not found"}, {"X-Error-Code": "EntryNotFound", "X-Repo-Commit": sha})
        data = files[path]
        headers = {"X-Repo-Commit": sha, **extra}
        if hub._is_lfs(data):
            sha256 = hashlib.sha256(data).hexdigest()
            cdn = hub.cdn.url if hub.cdn is not None else hub.url
            headers.update({"Location": f"{cdn}/cdn/{sha256}", "X-Linked-Etag": f'"{sha256}"',
                            "X-Linked-Size": str(len(data)), "ETag": f'"{git_blob_sha1(lfs_pointer(data))}"'})
            return self._send(302, headers, b"", head=True)
        headers["ETag"] = f'"{git_blob_sha1(data)}"'
        return self._ranged(method, data, headers, body_fault)

    def _cdn(self, method: str, sha256: str, extra, body_fault) -> int:
        data = self.server_hub.blobs.get(sha256)
        if data is None:
            return self._json(404, {"error": "no such object"})
        return self._ranged(method, data, {"ETag": f'"{sha256}"', **extra}, body_fault)


def copy_fixture(src: Path, dst: Path) -> Path:
    """Copy a committed fixture dataset (tests must not modify ``fixtures/``)."""
    shutil.copytree(src, dst)
    return dst
