"""``lrtool prefetch`` against olah, a Hub mirror nobody here wrote (PyPI ``olah``, serving local git
repos with ``[accessibility] offline = true``; docs/prefetch.md#servers).

olah has heavy dependencies, so it lives in its own virtual environment. The test finds its
``olah-cli`` through ``LRTOOL_OLAH_BIN``, ``PATH``, or ``.venv-olah/bin/olah-cli`` (what
``scripts/install.sh`` creates), and is skipped with the reason when none has it::

    python3 -m venv .venv-olah && .venv-olah/bin/python -m pip install olah==0.5.4
    pytest tests/prefetch/test_prefetch_olah.py          # or LRTOOL_OLAH_BIN=/path/to/olah-cli pytest ...

olah cannot count requests, so the counts asserted here are lrtool's own (per repo, per kind).
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import time
import urllib.request
from pathlib import Path

import pytest

from lerobot_tools.prefetch import PrefetchOptions, prefetch
from tests import hubserver

REPO_ROOT = Path(__file__).resolve().parents[2]
FIXTURES = REPO_ROOT / "fixtures" / "datasets"


def find_olah() -> str | None:
    """``$LRTOOL_OLAH_BIN``, else ``olah-cli`` on PATH, else ``.venv-olah/bin/olah-cli`` (scripts/install.sh)."""
    if os.environ.get("LRTOOL_OLAH_BIN"):
        return os.environ["LRTOOL_OLAH_BIN"]
    found = shutil.which("olah-cli")
    if found:
        return found
    local = REPO_ROOT / ".venv-olah" / "bin" / "olah-cli"
    return str(local) if local.is_file() else None


OLAH = find_olah()
GIT = shutil.which("git")

pytestmark = [
    pytest.mark.skipif(not OLAH or not Path(OLAH).is_file(),
                       reason="olah-cli not found (set LRTOOL_OLAH_BIN, put olah-cli on PATH, or create "
                              ".venv-olah: python3 -m venv .venv-olah && .venv-olah/bin/pip install olah)"),
    pytest.mark.skipif(GIT is None, reason="git is needed to build the repos olah serves"),
    pytest.mark.slow,
    pytest.mark.usefixtures("isolated_hub_env"),
]

GIT_ENV = {"GIT_AUTHOR_NAME": "lrtool", "GIT_AUTHOR_EMAIL": "lrtool@example.invalid",
           "GIT_COMMITTER_NAME": "lrtool", "GIT_COMMITTER_EMAIL": "lrtool@example.invalid",
           "GIT_CONFIG_NOSYSTEM": "1"}


def git(repo: Path, *args: str) -> str:
    env = dict(os.environ, **GIT_ENV, HOME=str(repo))
    out = subprocess.run([GIT, *args], cwd=repo, env=env, check=True, capture_output=True, text=True)
    return out.stdout.strip()


def git_repo(dst: Path, src: Path) -> str:
    """``git init`` a copy of the fixture ``src`` at ``dst``; return the commit SHA."""
    shutil.copytree(src, dst)
    git(dst, "init", "-q", "-b", "main")
    git(dst, "add", "-A")
    git(dst, "commit", "-q", "-m", "import fixture")
    return git(dst, "rev-parse", "HEAD")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def olah(tmp_path_factory):
    """olah serving org/v21 (tag v2.1) and org/v30 (two commits) from git repos, offline."""
    base = tmp_path_factory.mktemp("olah")
    mirrors = base / "mirrors" / "datasets" / "org"
    mirrors.mkdir(parents=True)
    (base / "repos").mkdir()
    v21 = git_repo(mirrors / "v21", FIXTURES / "clean_v21")
    git(mirrors / "v21", "tag", "v2.1")
    v30_first = git_repo(mirrors / "v30", FIXTURES / "clean_v30")
    (mirrors / "v30" / "README.md").write_text("# later commit\n")
    git(mirrors / "v30", "add", "-A")
    git(mirrors / "v30", "commit", "-q", "-m", "readme")
    port = free_port()
    config = base / "olah.toml"
    config.write_text(
        "[basic]\n"
        'host = "127.0.0.1"\n'
        f"port = {port}\n"
        f'repos-path = "{base / "repos"}"\n'
        'mirror-scheme = "http"\n'
        f'mirror-netloc = "127.0.0.1:{port}"\n'
        f'mirror-lfs-netloc = "127.0.0.1:{port}"\n'
        f'mirrors-path = ["{base / "mirrors"}"]\n'
        "[accessibility]\n"
        "offline = true\n")
    log = open(base / "olah.log", "wb")
    env = dict(os.environ, NO_PROXY="127.0.0.1,localhost", no_proxy="127.0.0.1,localhost")
    proc = subprocess.Popen([OLAH, "-c", str(config)], cwd=base, stdout=log, stderr=subprocess.STDOUT, env=env,
                            start_new_session=True)
    url = f"http://127.0.0.1:{port}"
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    deadline = time.monotonic() + 60
    try:
        while True:
            try:
                with opener.open(f"{url}/api/datasets/org/v21/revision/main", timeout=2) as r:
                    if r.status == 200:
                        break
            except OSError:
                pass
            if proc.poll() is not None or time.monotonic() > deadline:
                log.flush()
                tail = (base / "olah.log").read_text(errors="replace")[-2000:]
                pytest.fail(f"olah did not start (exit {proc.poll()}):\n{tail}")
            time.sleep(0.25)
        yield {"url": url, "v21": v21, "v30_first": v30_first}
    finally:
        try:
            os.killpg(proc.pid, signal.SIGTERM)  # the process group this fixture started
        except ProcessLookupError:
            pass
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=10)
        log.close()


def test_prefetch_through_olah(olah, tmp_path):
    root = tmp_path / "out"
    mix = tmp_path / "mixture.txt"
    mix.write_text(f"org/v21@v2.1\norg/v30@{olah['v30_first']} episodes=2\n")
    opts = PrefetchOptions(local_dir_root=root, endpoint=olah["url"], progress=False)
    rep = prefetch(mix, opts)
    assert rep.exit_status == 0, rep.to_dict()
    v21, v30 = rep.results
    want21 = hubserver.read_folder(FIXTURES / "clean_v21")
    got21 = hubserver.read_folder(root / "org/v21")
    assert got21 == want21  # every byte, verified against olah's git blob ids
    assert v21.commit == olah["v21"] and v21.commit_from == "resolved"
    # 1 resolve, the tree listing (olah adds a 307 for a trailing slash), 1 GET per file
    assert v21.stats.by_kind == {"resolve": 1, "tree": 2, "download": len(want21)}
    assert v21.stats.by_bucket == {"api": 3, "resolvers": len(want21)}  # the 307 hop is an api request too
    assert v21.stats.status.get("307") == 1

    want30 = hubserver.read_folder(FIXTURES / "clean_v30")
    subset = {p for p in want30 if p.startswith("meta/")} | {
        "data/chunk-000/file-001.parquet",
        "videos/observation.images.front/chunk-000/file-001.mp4",
        "videos/observation.images.top/chunk-000/file-001.mp4"}
    assert hubserver.read_folder(root / "org/v30") == {p: want30[p] for p in subset}
    assert v30.commit == olah["v30_first"] and v30.stats.by_kind["resolve"] == 0  # SHA: no resolve

    warm = prefetch(mix, opts)
    assert warm.exit_status == 0 and warm.requests == 0

    offline = prefetch(mix, PrefetchOptions(local_dir_root=root, offline=True, progress=False))
    assert offline.exit_status == 0 and offline.requests == 0
