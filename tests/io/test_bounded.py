"""Bounded resources: every parsed file is a regular file under a size cap, JSON nesting is bounded, and no
hostile file makes lrtool hang, allocate gigabytes or print a traceback.

The commands run in a subprocess with a timeout (a FIFO used to hang the read forever) and an address-space
limit (a ``$ref`` to ``/dev/zero`` used to read until memory ran out).
"""

from __future__ import annotations

import errno
import itertools
import json
import os
import resource
import shutil
import socket
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from lerobot_tools import _io
from lerobot_tools.cli import cli
from lerobot_tools.dataset import mixture
from lerobot_tools.dataset.model import Dataset, read_json
from lerobot_tools.errors import DatasetError, LrtoolError, UsageError

REPO = Path(__file__).resolve().parents[2]
CLEAN = REPO / "fixtures" / "datasets" / "clean_v21"
CLEAN_V30 = REPO / "fixtures" / "datasets" / "clean_v30"
DEEP = "[" * 5000 + "]" * 5000
MAX_JSON_BYTES = 64 * 2**20  # the documented cap for JSON metadata files


def lrtool(*args: str, timeout: float = 60, mem_mb: int = 2048) -> subprocess.CompletedProcess:
    """Run ``python -m lerobot_tools`` from this tree with a wall-clock timeout and an address-space cap."""
    def limit() -> None:  # pragma: no cover (runs in the child)
        import resource

        resource.setrlimit(resource.RLIMIT_AS, (mem_mb * 2**20, mem_mb * 2**20))

    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.run([sys.executable, "-m", "lerobot_tools", *args], capture_output=True, text=True,
                          timeout=timeout, env=env, preexec_fn=limit, cwd=REPO)


def one_line_error(res: subprocess.CompletedProcess | object) -> None:
    """No traceback, no internal error: only lrtool's own one-line errors (CliRunner results: no exception
    escaped the command)."""
    exc = getattr(res, "exception", None)
    assert exc is None or isinstance(exc, SystemExit), repr(exc)
    out = getattr(res, "stderr", "") + getattr(res, "stdout", getattr(res, "output", ""))
    assert "Traceback" not in out and "RecursionError" not in out and "please report" not in out, out


@pytest.fixture
def alarm():
    """Fail (instead of hanging forever) when an in-process read blocks for 30 s."""
    import signal

    def ring(signum, frame):
        raise TimeoutError("blocked for 30 s: the read hung")

    old = signal.signal(signal.SIGALRM, ring)
    signal.alarm(30)
    yield
    signal.alarm(0)
    signal.signal(signal.SIGALRM, old)


@pytest.fixture
def ds(tmp_path):
    root = tmp_path / "ds"
    shutil.copytree(CLEAN, root)
    return root


# ---------------------------------------------------------------------- the helper itself
def test_read_capped_refuses_devices_fifos_folders_and_big_files(tmp_path, alarm):
    from lerobot_tools._io import load_json_file, read_capped

    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    link = tmp_path / "zero.json"
    os.symlink("/dev/zero", link)
    big = tmp_path / "big.json"
    with open(big, "wb") as fh:
        fh.truncate(MAX_JSON_BYTES + 1)  # sparse: costs no disk
    for path, words in ((fifo, "FIFO"), (link, "device"), (tmp_path, "folder"), (big, "64 MiB")):
        with pytest.raises(LrtoolError) as exc:
            read_capped(path)
        assert words in str(exc.value) and str(path) in str(exc.value)
    (tmp_path / "ok.json").write_text('{"a": 1}')
    assert load_json_file(tmp_path / "ok.json") == {"a": 1}


def test_deep_json_is_one_error_naming_the_file():
    from lerobot_tools._io import MAX_JSON_DEPTH, loads_json

    for text in (DEEP, "[" * (MAX_JSON_DEPTH + 1) + "]" * (MAX_JSON_DEPTH + 1),
                 '{"a":' * 3000 + "1" + "}" * 3000):
        with pytest.raises(DatasetError, match="nested too deeply") as exc:
            loads_json(text, "meta/info.json", error=DatasetError)
        assert str(exc.value).startswith("meta/info.json:")
    assert loads_json("[" * MAX_JSON_DEPTH + "]" * MAX_JSON_DEPTH) is not None


# ---------------------------------------------------------------------- _io, function by function
NOT_REGULAR = "not a regular file; lrtool only reads regular files"


def test_open_regular_names_each_kind_of_refused_file(tmp_path, alarm):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    folder = tmp_path / "folder"
    folder.mkdir()
    kinds = {fifo: "a FIFO", folder: "a folder", Path("/dev/null"): "a device"}
    for target, kind in list(kinds.items()):  # symlinks are followed: a link is refused as what it points to
        link = tmp_path / f"link-to-{target.name}"
        link.symlink_to(target)
        kinds[link] = kind
    for path, kind in kinds.items():
        with pytest.raises(LrtoolError) as exc:
            _io.open_regular(path)
        assert type(exc.value) is LrtoolError
        assert (exc.value.message, exc.value.path) == (f"is {kind}, {NOT_REGULAR}", str(path))
        with pytest.raises(DatasetError) as exc:
            _io.open_regular(path, name="meta/info.json", error=DatasetError, limit=None, what="stats")
        assert str(exc.value) == f"meta/info.json: is {kind}, {NOT_REGULAR}"


def test_open_regular_refuses_a_block_device(tmp_path):
    dev = tmp_path / "loop"
    try:
        os.mknod(dev, stat.S_IFBLK | 0o600, os.makedev(7, 0))
    except PermissionError:
        pytest.skip("creating a device node needs CAP_MKNOD")
    with pytest.raises(UsageError) as exc:
        _io.open_regular(dev, error=UsageError)
    assert str(exc.value) == f"{dev}: is a device, {NOT_REGULAR}"


def test_open_regular_cannot_open_a_socket(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # a short relative name: socket paths are limited to 108 bytes
    with socket.socket(socket.AF_UNIX) as srv:
        srv.bind("sock")
        with pytest.raises(OSError) as exc:  # Linux refuses to open() a socket (ENXIO): an OSError, not ``error``
            _io.open_regular("sock")
        assert exc.value.errno == errno.ENXIO and not isinstance(exc.value, LrtoolError)


def test_kind_names_every_file_type():
    # sockets cannot be opened at all on Linux and symlinks are followed, so these are only reachable by mode
    assert [_io._kind(m) for m in (stat.S_IFDIR, stat.S_IFIFO, stat.S_IFSOCK, stat.S_IFCHR, stat.S_IFBLK,
                                   stat.S_IFLNK)] == [
        "a folder", "a FIFO", "a socket", "a device", "a device", "not a regular file"]


def test_open_regular_size_cap_is_inclusive_and_reported_in_bytes_or_mib(tmp_path):
    def sized(name: str, size: int) -> Path:
        path = tmp_path / name
        with open(path, "wb") as fh:
            fh.truncate(size)  # sparse
        return path

    at = sized("at", 10)
    with _io.open_regular(at, limit=10) as fh:
        assert fh.read() == b"\0" * 10
    with _io.open_regular(sized("huge", 3 * 2**30), limit=None) as fh:
        assert fh.read(4) == b"\0" * 4
    cases = [  # (size, limit, keyword arguments, message)
        (11, 10, {}, "is 0.0 MiB, over the 10 bytes limit for JSON metadata files"),
        (2**20, 2**20 - 1, {}, "is 1.0 MiB, over the 1048575 bytes limit for JSON metadata files"),
        (3 * 2**20 + 1, 2**20, {"what": "stats"}, "is 3.0 MiB, over the 1 MiB limit for stats files"),
        (MAX_JSON_BYTES + 1, None, {}, "is 64.0 MiB, over the 64 MiB limit for JSON metadata files"),
    ]
    for size, limit, kwargs, message in cases:
        path = sized(f"f{size}", size)
        with pytest.raises(LrtoolError) as exc:
            if limit is None:
                _io.open_regular(path, **kwargs)  # the default cap
            else:
                _io.open_regular(path, limit=limit, **kwargs)
        assert type(exc.value) is LrtoolError and (exc.value.message, exc.value.path) == (message, str(path))
    with pytest.raises(DatasetError) as exc:
        _io.open_regular(sized("named", 11), limit=10, name="meta/stats.json", error=DatasetError)
    assert str(exc.value) == "meta/stats.json: is 0.0 MiB, over the 10 bytes limit for JSON metadata files"


def test_open_regular_returns_a_blocking_file_at_the_start(tmp_path):
    path = tmp_path / "f.json"
    path.write_bytes(b"[1]")
    with _io.open_regular(path) as fh:
        assert os.get_blocking(fh.fileno()) and not os.get_inheritable(fh.fileno())
        assert fh.read() == b"[1]"


def test_open_regular_never_makes_a_terminal_the_controlling_terminal(alarm):
    """A session leader without a controlling terminal that opens a terminal acquires it unless O_NOCTTY is
    given; a ``$ref`` to a terminal must be refused without that side effect. Checked in a forked child that
    starts its own session, so the test process's own session is never touched."""
    master, slave = os.openpty()
    tty = os.ttyname(slave)
    os.close(slave)
    try:
        with pytest.raises(LrtoolError, match="is a device"):
            _io.open_regular(tty)
        pid = os.fork()
        if pid == 0:  # pragma: no cover (runs in the child)
            code = 2
            try:
                os.setsid()
                try:
                    _io.open_regular(tty)
                except LrtoolError:
                    try:
                        os.close(os.open("/dev/tty", os.O_RDONLY))
                        code = 1  # the terminal became the child's controlling terminal
                    except OSError:
                        code = 0
            finally:
                os._exit(code)
        _, status = os.waitpid(pid, 0)
        assert os.waitstatus_to_exitcode(status) == 0
    finally:
        os.close(master)


def test_read_capped_reads_exactly_up_to_the_limit(tmp_path):
    path = tmp_path / "f.json"
    path.write_bytes(b"0123456789")
    assert _io.read_capped(path, limit=10) == b"0123456789"
    with pytest.raises(LrtoolError) as exc:
        _io.read_capped(path, limit=9)
    assert type(exc.value) is LrtoolError
    assert str(exc.value) == f"{path}: is 0.0 MiB, over the 9 bytes limit for JSON metadata files"
    with pytest.raises(DatasetError) as exc:
        _io.read_capped(path, limit=9, name="meta/stats.json", error=DatasetError, what="stats")
    assert str(exc.value) == "meta/stats.json: is 0.0 MiB, over the 9 bytes limit for stats files"


def test_read_capped_refuses_a_file_longer_than_its_size(tmp_path):
    """/proc files are regular files that report size 0: the size check passes, the read itself is capped."""
    status = Path("/proc/self/status")
    if not status.exists() or status.stat().st_size != 0:
        pytest.skip("needs Linux /proc")
    with pytest.raises(LrtoolError) as exc:
        _io.read_capped(status, limit=64)
    assert type(exc.value) is LrtoolError
    assert str(exc.value) == f"{status}: is over the 64 bytes limit for JSON metadata files"
    with pytest.raises(DatasetError) as exc:
        _io.read_capped(status, limit=64, name="meta/info.json", error=DatasetError, what="stats")
    assert str(exc.value) == "meta/info.json: is over the 64 bytes limit for stats files"


def test_read_capped_reads_at_most_limit_plus_one_bytes():
    """/proc/self/pagemap reports size 0 and holds 8 bytes per page of address space (hundreds of GiB): reading
    it whole would exhaust memory (the address space is capped meanwhile so a regression fails, not the host)."""
    pagemap = Path("/proc/self/pagemap")
    if not pagemap.exists() or pagemap.stat().st_size != 0:
        pytest.skip("needs Linux /proc/self/pagemap")
    with open("/proc/self/status") as fh:
        vm_kib = int(next(ln for ln in fh if ln.startswith("VmSize:")).split()[1])
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    cap = vm_kib * 1024 + 2**30
    resource.setrlimit(resource.RLIMIT_AS, (cap if hard == resource.RLIM_INFINITY else min(cap, hard), hard))
    try:
        with pytest.raises(LrtoolError) as exc:
            _io.read_capped(pagemap, limit=2**20 - 1)
    finally:
        resource.setrlimit(resource.RLIMIT_AS, (soft, hard))
    assert str(exc.value) == f"{pagemap}: is over the 1048575 bytes limit for JSON metadata files"


def test_json_too_deep_counts_arrays_and_objects():
    for scalar in (1, "x", None, 1.5, True):
        assert _io.json_too_deep(scalar) is False and _io.json_too_deep(scalar, 0) is False
    arrays = json.loads("[1, [2, [3]]]")  # 3 levels
    objects = json.loads('{"a": {"b": {"c": 1}}, "d": 2}')
    mixed = json.loads('{"a": [{"b": 1}], "c": []}')
    for doc in (arrays, objects, mixed):
        assert _io.json_too_deep(doc, 3) is False and _io.json_too_deep(doc, 2) is True
    assert _io.json_too_deep(json.loads("[" * 100 + "]" * 100)) is False
    assert _io.json_too_deep(json.loads("[" * 101 + "]" * 101)) is True
    assert _io.json_too_deep(json.loads('{"a":' * 101 + "1" + "}" * 101)) is True


def test_loads_json_messages_name_the_file():
    def error(text, name=None, **kwargs) -> LrtoolError:
        with pytest.raises(LrtoolError) as exc:
            _io.loads_json(text, name, **kwargs)
        return exc.value

    cases = [
        ('{"a": }', "is not valid JSON: Expecting value at line 1 column 7"),
        ('{\n"a": }', "is not valid JSON: Expecting value at line 2 column 6"),
        (b'"\xff"', "is not UTF-8 text"),
        ("[" * 101 + "]" * 101, "is JSON nested too deeply (more than 100 levels)"),
    ]
    for text, message in cases:
        exc = error(text)
        assert type(exc) is LrtoolError and (exc.message, exc.path, str(exc)) == (message, None, message)
        exc = error(text, "meta/info.json", error=DatasetError)
        assert type(exc) is DatasetError and str(exc) == f"meta/info.json: {message}"
    # an integer too long to convert: Python's own message, first line, cut to 120 characters
    exc = error("1" * 5000, "meta/stats.json", error=UsageError)
    assert type(exc) is UsageError and exc.path == "meta/stats.json"
    assert exc.message.startswith("is not valid JSON: Exceeds the limit (4300")
    assert len(exc.message) == len("is not valid JSON: ") + 120
    # the depth argument
    assert _io.loads_json("[[[]]]", depth=3) == [[[]]]
    exc = error("[[[[]]]]", "m.json", depth=3)
    assert str(exc) == "m.json: is JSON nested too deeply (more than 3 levels)"


def test_load_json_file_messages_name_the_file(tmp_path):
    good = tmp_path / "good.json"
    good.write_text('{"a": [1, "é"]}', encoding="utf-8")
    assert _io.load_json_file(good) == {"a": [1, "é"]}
    with pytest.raises(DatasetError) as exc:
        _io.load_json_file(good, "meta/info.json", limit=5, error=DatasetError)
    assert str(exc.value) == "meta/info.json: is 0.0 MiB, over the 5 bytes limit for JSON metadata files"
    assert _io.load_json_file(good, limit=good.stat().st_size) == {"a": [1, "é"]}

    bad_utf8 = tmp_path / "latin1.json"
    bad_utf8.write_bytes(b'{"a": "\xe9"}')
    bad_json = tmp_path / "bad.json"
    bad_json.write_text('{"a": }')
    for path, message in ((bad_utf8, "is not UTF-8 text"),
                          (bad_json, "is not valid JSON: Expecting value at line 1 column 7")):
        with pytest.raises(LrtoolError) as exc:
            _io.load_json_file(path)
        assert type(exc.value) is LrtoolError and (exc.value.message, exc.value.path) == (message, str(path))
        with pytest.raises(DatasetError) as exc:
            _io.load_json_file(path, "meta/info.json", error=DatasetError)
        assert str(exc.value) == f"meta/info.json: {message}"


def test_read_text_capped(tmp_path):
    path = tmp_path / "t.txt"
    path.write_text("héllo", encoding="utf-8")  # 6 bytes
    assert _io.read_text_capped(path, limit=6) == "héllo"
    with pytest.raises(LrtoolError) as exc:
        _io.read_text_capped(path, limit=5)
    assert type(exc.value) is LrtoolError
    assert str(exc.value) == f"{path}: is 0.0 MiB, over the 5 bytes limit for JSON metadata files"
    with pytest.raises(UsageError) as exc:
        _io.read_text_capped(path, "mix.txt", limit=5, error=UsageError, what="mixture")
    assert str(exc.value) == "mix.txt: is 0.0 MiB, over the 5 bytes limit for mixture files"

    latin1 = tmp_path / "latin1.txt"
    latin1.write_bytes("héllo".encode("latin-1"))
    with pytest.raises(LrtoolError) as exc:
        _io.read_text_capped(latin1)
    assert type(exc.value) is LrtoolError
    assert (exc.value.message, exc.value.path) == ("is not UTF-8 text", str(latin1))
    with pytest.raises(UsageError) as exc:
        _io.read_text_capped(latin1, "mix.txt", error=UsageError)
    assert str(exc.value) == "mix.txt: is not UTF-8 text"


def test_iter_lines_capped(tmp_path):
    def lines(data: bytes, **kwargs) -> list:
        path = tmp_path / "t.jsonl"
        path.write_bytes(data)
        with open(path, "rb") as fh:  # at most 100 lines: a broken end-of-file test fails instead of looping
            return list(itertools.islice(_io.iter_lines_capped(fh, **kwargs), 100))

    assert lines(b"") == []
    assert lines(b"a\nbb\n\nccc") == [(1, b"a\n"), (2, b"bb\n"), (3, b"\n"), (4, b"ccc")]
    # a line of exactly the cap (its newline not counted), and a last line of exactly the cap without one
    assert lines(b"abcd\nefgh", line_limit=4) == [(1, b"abcd\n"), (2, b"efgh")]
    for data, lineno in ((b"ok\nabcde\n", 2), (b"ok\nabcdefghij\nok\n", 2), (b"abcde", 1)):
        with pytest.raises(LrtoolError) as exc:
            lines(data, line_limit=4)
        assert type(exc.value) is LrtoolError
        assert (exc.value.message, exc.value.path) == (f"line {lineno} is over the 4 bytes limit for one JSON line",
                                                       None)
        with pytest.raises(DatasetError) as exc:
            lines(data, line_limit=4, name="meta/episodes.jsonl", error=DatasetError)
        assert str(exc.value) == f"meta/episodes.jsonl: line {lineno} is over the 4 bytes limit for one JSON line"
    with pytest.raises(DatasetError) as exc:
        lines(b"x" * (2**20 + 1), line_limit=2**20, name="t.jsonl", error=DatasetError)
    assert str(exc.value) == "t.jsonl: line 1 is over the 1 MiB limit for one JSON line"


def test_clean_stale_temps_removes_only_temp_files_outside_git(tmp_path):
    root = tmp_path / "ds"
    stale = [root / ".lrtool-tmp-0a1b2c3d-info.json", root / "meta" / ".lrtool-tmp-1-episodes.jsonl",
             root / "meta" / ".lrtool-tmp-2-tasks.jsonl", root / "data" / "chunk-000" / ".lrtool-tmp-3-x.parquet",
             root / ".lrtool-tmp-folder" / ".lrtool-tmp-4"]
    kept = [root / "meta" / "info.json", root / "x.lrtool-tmp-5", root / "meta" / "lrtool-tmp-6",
            root / ".git" / ".lrtool-tmp-7", root / ".git" / "objects" / ".lrtool-tmp-8",
            root / "data" / ".git" / ".lrtool-tmp-9", root / ".lrtool-tmp-folder" / "keep.txt",
            root / ".GIT" / "keep.txt"]
    for path in stale + kept:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(path.name.encode())
    (root / ".GIT" / ".lrtool-tmp-10").write_bytes(b"")  # only ".git" itself is skipped
    stale.append(root / ".GIT" / ".lrtool-tmp-10")

    listed = _io.clean_stale_temps(root, dry_run=True)
    assert sorted(listed) == sorted(stale) and all(p.exists() for p in stale + kept)
    assert sorted(_io.clean_stale_temps(root)) == sorted(stale)
    assert not any(p.exists() for p in stale) and all(p.read_bytes() == p.name.encode() for p in kept)
    assert (root / ".lrtool-tmp-folder").is_dir()  # a folder named like a temp file is not removed
    assert _io.clean_stale_temps(root) == [] and _io.clean_stale_temps(root, dry_run=True) == []


def test_clean_stale_temps_skips_a_temp_it_cannot_remove(tmp_path, monkeypatch, as_nobody):
    root = tmp_path / "ds"
    (root / "locked").mkdir(parents=True)
    (root / "open").mkdir()
    (root / "locked" / ".lrtool-tmp-a").write_bytes(b"a")
    (root / "open" / ".lrtool-tmp-b").write_bytes(b"b")
    tmp_path.chmod(0o755)
    root.chmod(0o755)
    (root / "locked").chmod(0o555)
    (root / "open").chmod(0o777)
    # Relative paths: pytest's private tmp_path ancestors need no search permission for "nobody".
    monkeypatch.chdir(tmp_path)
    try:
        with as_nobody():
            removed = _io.clean_stale_temps(Path("ds"))
    finally:
        (root / "locked").chmod(0o755)
    assert removed == [Path("ds", "open", ".lrtool-tmp-b")]
    assert (root / "locked" / ".lrtool-tmp-a").read_bytes() == b"a" and not (root / "open" / ".lrtool-tmp-b").exists()


def test_atomic_write_text_writes_utf8_and_replaces(tmp_path):
    target = tmp_path / "info.json"
    target.write_text("old")
    _io.atomic_write_text(target, "naïve ✓")
    assert target.read_bytes() == "naïve ✓".encode("utf-8")
    _io.atomic_write_bytes(target, b"\x00\xff")
    assert target.read_bytes() == b"\x00\xff" and [p.name for p in tmp_path.iterdir()] == ["info.json"]


# ---------------------------------------------------------------------- dataset metadata
def test_info_json_fifo_does_not_hang_validate(ds):
    (ds / "meta" / "info.json").unlink()
    os.mkfifo(ds / "meta" / "info.json")
    res = lrtool("validate", str(ds), timeout=60)
    assert res.returncode == 1, res.stderr
    assert "I002" in res.stdout and "FIFO" in res.stdout
    one_line_error(res)


def test_info_json_symlink_to_dev_zero_is_refused_not_read(ds):
    (ds / "meta" / "info.json").unlink()
    os.symlink("/dev/zero", ds / "meta" / "info.json")
    res = lrtool("validate", str(ds), timeout=60, mem_mb=1024)
    assert res.returncode == 1, res.stderr
    assert "I002" in res.stdout and "device" in res.stdout
    one_line_error(res)


def test_oversized_info_json_is_refused_naming_the_cap(ds):
    with open(ds / "meta" / "info.json", "r+b") as fh:
        fh.truncate(MAX_JSON_BYTES + 10)
    with pytest.raises(DatasetError, match="over the 64 MiB limit"):
        Dataset(ds)


def test_episodes_jsonl_fifo_does_not_hang(ds):
    (ds / "meta" / "episodes.jsonl").unlink()
    os.mkfifo(ds / "meta" / "episodes.jsonl")
    res = lrtool("validate", str(ds), timeout=60)
    assert res.returncode == 1, res.stderr
    assert "FIFO" in res.stdout
    one_line_error(res)


@pytest.mark.parametrize("rel", ["meta/info.json", "meta/stats.json", "meta/episodes.jsonl", "meta/tasks.jsonl"])
def test_deeply_nested_metadata_is_a_finding_not_a_crash(ds, rel):
    path = ds / rel
    if rel == "meta/info.json":
        path.write_text(DEEP)
    elif rel == "meta/stats.json":
        stats = json.loads(path.read_text())
        stats["action"]["mean"] = json.loads("[" * 900 + "1" + "]" * 900)  # parses, too deep to process
        path.write_text(json.dumps(stats))
    else:
        path.write_text(path.read_text() + DEEP + "\n")
    res = CliRunner().invoke(cli, ["validate", str(ds), "--deep", "--format", "json"])
    one_line_error(res)
    # every one is an error: lerobot parses a stats.json that exists (load_stats) and numpy refuses 900 levels
    assert res.exit_code == 1, res.output
    doc = json.loads(res.output)
    msgs = [f["message"] for f in doc["datasets"][0]["findings"]]
    assert any("nested too deeply" in m for m in msgs), msgs


def test_diagnose_decode_deep_info_json_is_one_line_exit_1(ds):
    (ds / "meta" / "info.json").write_text(DEEP)
    res = CliRunner().invoke(cli, ["diagnose-decode", str(ds), "--frames", "0"])
    one_line_error(res)
    assert res.exit_code == 1 and "nested too deeply" in res.output


# ---------------------------------------------------------------------- mixtures
def test_mixture_ref_to_dev_zero_is_refused(tmp_path):
    os.symlink("/dev/zero", tmp_path / "zero.json")
    (tmp_path / "m.json").write_text(json.dumps({"datasets": [{"$ref": "zero.json"}]}))
    res = lrtool("validate", str(tmp_path / "m.json"), timeout=60, mem_mb=1024)
    assert res.returncode == 2, res.stderr
    assert "zero.json" in res.stderr and ("device" in res.stderr or "outside" in res.stderr)
    one_line_error(res)


def test_mixture_ref_to_fifo_does_not_hang(tmp_path):
    os.mkfifo(tmp_path / "pipe.json")
    (tmp_path / "m.json").write_text(json.dumps({"datasets": [{"$ref": "pipe.json"}]}))
    res = lrtool("validate", str(tmp_path / "m.json"), timeout=60)
    assert res.returncode == 2 and "FIFO" in res.stderr
    one_line_error(res)


def test_mixture_file_itself_must_be_regular_and_capped(tmp_path, alarm):
    os.mkfifo(tmp_path / "m.txt")
    with pytest.raises(UsageError, match="FIFO"):
        mixture.read_mixture(tmp_path / "m.txt")
    big = tmp_path / "big.txt"
    with open(big, "wb") as fh:
        fh.truncate(MAX_JSON_BYTES + 1)
    with pytest.raises(UsageError, match="64 MiB"):
        mixture.read_mixture(big)


@pytest.mark.parametrize("doc", [DEEP, '{"datasets": ' + DEEP + "}"])
def test_deep_mixture_json_is_usage_error(tmp_path, doc):
    f = tmp_path / "m.json"
    f.write_text(doc)
    res = CliRunner().invoke(cli, ["validate", str(f)])
    assert res.exit_code == 2 and "nested too deeply" in res.output
    one_line_error(res)


def test_deep_nesting_spread_over_ref_includes_is_refused(tmp_path):
    # each file is shallow enough on its own; inlined, they nest past the limit
    n = 12
    for i in range(n):
        inner = {"$ref": f"p{i + 1}.json"} if i + 1 < n else {"root": "x"}
        (tmp_path / f"p{i}.json").write_text(json.dumps(json.loads("[" * 60 + json.dumps(inner) + "]" * 60)))
    (tmp_path / "m.json").write_text(json.dumps({"datasets": [{"$ref": "p0.json"}]}))
    with pytest.raises(UsageError, match="nested too deeply"):
        mixture.read_mixture(tmp_path / "m.json")


def test_read_json_refuses_fifo_quickly(tmp_path, alarm):
    os.mkfifo(tmp_path / "info.json")
    with pytest.raises(DatasetError, match="FIFO"):
        read_json(tmp_path / "info.json", "meta/info.json")


# ---------------------------------------------------------------------- non-finite and absurd numbers
@pytest.mark.parametrize("layout", [CLEAN, CLEAN_V30], ids=["v21", "v30"])
@pytest.mark.parametrize("fps", ["NaN", "Infinity", "-Infinity", "1e308", "1e400", "1" + "0" * 400])
def test_absurd_fps_is_a_finding_in_every_command(tmp_path, layout, fps):
    root = tmp_path / "ds"
    shutil.copytree(layout, root)
    info = json.loads((root / "meta" / "info.json").read_text())
    info["fps"] = "FPS"
    (root / "meta" / "info.json").write_text(json.dumps(info).replace('"FPS"', fps))
    res = CliRunner().invoke(cli, ["validate", str(root), "--deep", "--format", "json"])
    one_line_error(res)
    assert res.exit_code == 1, res.output
    found = {f["check"]: f for f in json.loads(res.output)["datasets"][0]["findings"]}
    assert found["I005"]["severity"] == "error" and "M001" not in found, found
    for argv in (["reshard", "--dry-run"], ["repair", "--dry-run"], ["diagnose-decode", "--frames", "0"]):
        res = CliRunner().invoke(cli, [*argv, str(root)])
        one_line_error(res)
        assert res.exit_code in (0, 1, 2), (argv, res.output)


@pytest.mark.parametrize("argv", [
    ["validate", "{ds}", "--tolerance-s"], ["validate", "{ds}", "--row-group-mb"], ["reshard", "{ds}", "--row-group-mb"],
    ["diagnose-decode", "{ds}", "--target-fps"], ["smoke", "{ds}", "--tolerance-s"],
    ["prefetch", "{mix}", "--max-wait-s"], ["repair", "{ds}", "--lock-timeout"],
])
@pytest.mark.parametrize("value", ["nan", "inf", "-inf", "-1"])
def test_non_finite_or_negative_option_is_a_usage_error(tmp_path, argv, value):
    mix = tmp_path / "m.txt"
    mix.write_text("org/ds\n")
    args = [a.format(ds=CLEAN, mix=mix) for a in argv] + [value]
    res = CliRunner().invoke(cli, args)
    assert res.exit_code == 2, (args, res.output)
    assert "Traceback" not in res.output and argv[-1] in res.output


def test_library_refuses_a_nan_tolerance_instead_of_disabling_d003():
    from lerobot_tools.checks.context import ValidateOptions
    from lerobot_tools.validate import validate

    with pytest.raises(UsageError, match="tolerance-s"):
        validate([str(CLEAN)], ValidateOptions(deep=True, tolerance_s=float("nan")))


# ---------------------------------------------------------------------- path templates
@pytest.mark.parametrize("template", [
    "data/chunk-{episode_chunk:03d}/episode_{episode_index:>2000000000}.parquet",
    "data/chunk-{episode_chunk:03d}/episode_{episode_index:.999999999f}.parquet",
    "data/{episode_index.__class__.__init__.__globals__}/x.parquet",
    "data/{episode_index[0]}/{episode_chunk}.parquet",
    "data/{episode_index!r}/{episode_chunk}.parquet",
    "data/{episode_index:{episode_chunk}}/x.parquet",
    "data/{}/{episode_index}.parquet",
])
def test_hostile_path_template_is_refused_before_formatting(tmp_path, template):
    root = tmp_path / "ds"
    shutil.copytree(CLEAN, root)
    info = json.loads((root / "meta" / "info.json").read_text())
    info["data_path"] = template
    (root / "meta" / "info.json").write_text(json.dumps(info))
    res = lrtool("validate", str(root), "--format", "json", timeout=120, mem_mb=1024)
    assert res.returncode == 1, res.stderr
    found = json.loads(res.stdout)["datasets"][0]["findings"]
    assert any(f["check"] == "I008" and "data_path" in f["message"] for f in found), found
    assert not any(f["check"] == "M001" for f in found), found
    one_line_error(res)
    for argv in (["reshard", "--dry-run"], ["repair", "--dry-run"]):
        res = lrtool(*argv, str(root), timeout=120, mem_mb=1024)
        assert res.returncode in (1, 2), (argv, res.stdout, res.stderr)
        one_line_error(res)


def test_template_rules():
    from lerobot_tools.dataset.templates import V2_DATA_PATH, V2_VIDEO_PATH, V3_DATA_PATH, V3_VIDEO_PATH, template_error

    for ok in (V2_DATA_PATH, V2_VIDEO_PATH, V3_DATA_PATH, V3_VIDEO_PATH, "data/{episode_index:>8}.parquet"):
        assert template_error(ok) is None, ok
    for bad in ("{episode_index:>33}", "{episode_index:.40f}", "{video_key[0]}", "{video_key.upper}", "{video_key!s}",
                "{0}", "{}", "{episode_index:{file_index}}", "{nope}", "{", "x" * 5000):
        assert template_error(bad) is not None, bad
