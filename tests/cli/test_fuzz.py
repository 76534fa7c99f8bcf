"""Property-based fuzzing (hypothesis) of everything lrtool reads from outside: info.json, the jsonl tables,
mixture files (text and JSON with ``$ref``), path templates, backup manifests (``repair --undo``) and Hub HTTP
responses (``prefetch`` against the local test server, tests/hubserver.py).

Inputs are generated, or mutated from the real fixtures (fixtures/datasets/clean_v21, clean_v30,
broken_wrong_totals): keys dropped, types swapped, numbers replaced by NaN / Infinity / 1e308 / negatives / 2**70,
strings given control characters, ``..``, absolute paths and format specs, lines truncated mid-byte.

The properties, for every example:

* through the CLI (click's CliRunner, in-process): no exception escapes; the exit status is one of the documented
  ones (0, 1, 2); no ``Traceback`` anywhere; every stderr line is lrtool's own (``lrtool: ...``), so an error is
  one line; a report never carries validate's internal-error finding ("please report it");
* through the library (prefetch): nothing but :class:`lerobot_tools.errors.LrtoolError` is raised;
* nothing changes outside the dataset: the folder holding it (and a canary file beside it) is snapshotted
  before and after; read-only commands change nothing inside it either.

CI cost is bounded: each test runs a fixed, derandomized set of examples (``max_examples`` below, about 60 s for
the file on a 2-core machine). ``LRTOOL_FUZZ_SCALE=10`` multiplies the examples and draws fresh ones each run,
for a longer local campaign.
"""

from __future__ import annotations

import copy
import itertools
import json
import math
import os
import shutil
import tempfile
import traceback
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lerobot_tools.cli import cli
from lerobot_tools.errors import LrtoolError

REPO = Path(__file__).resolve().parents[2]
DATASETS = REPO / "fixtures" / "datasets"
SCALE = float(os.environ.get("LRTOOL_FUZZ_SCALE", "1"))
ALLOWED_EXIT = {0, 1, 2}


def fuzz_settings(n: int):
    """A bounded, reproducible run of ``n`` examples (more, and random, with LRTOOL_FUZZ_SCALE)."""
    return settings(max_examples=max(1, int(n * SCALE)), deadline=None, derandomize=SCALE == 1, database=None,
                    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow,
                                           HealthCheck.data_too_large, HealthCheck.filter_too_much])


# ------------------------------------------------------------------------------------------- strategies
HOSTILE_STRINGS = ["", ".", "..", "../x", "../../outside/canary.txt", "/etc/passwd", "/dev/zero", "C:/x", "a\\..\\b",
                   "\x00", "\x1b[2J", "\x1b]0;t\x07", "\u202e", "\udcff", "v2.0", "v2.1", "v3.0", "v9", "nan", "1e308",
                   "{episode_index}", "{episode_index:>2000000000}", "{episode_index.__class__}", "{video_key[0]}",
                   "{0}", "{}", "{{", "}", "%s", "x" * 300, ".lrtool/backup", "meta/info.json", "org/name",
                   "org/name@../../x", "org/name@/abs"]
SPECIAL_NUMBERS = [math.nan, math.inf, -math.inf, 1e308, -1e308, -1, 0, 2**70, -(2**63), 0.5, 1e-300, 10**6]

hostile_text = st.one_of(st.sampled_from(HOSTILE_STRINGS),
                         st.text(st.characters(min_codepoint=0, max_codepoint=0x2FFF, exclude_categories=["Cs"]),
                                 max_size=24))
json_leaf = st.one_of(st.none(), st.booleans(), st.sampled_from(SPECIAL_NUMBERS),
                      st.integers(min_value=-(2**70), max_value=2**70),
                      st.floats(allow_nan=True, allow_infinity=True), hostile_text)
json_value = st.recursive(json_leaf, lambda inner: st.one_of(st.lists(inner, max_size=4),
                                                             st.dictionaries(hostile_text, inner, max_size=4)),
                          max_leaves=10)


def _slots(doc, path=()):
    """Every (container path, key) of a JSON document, the root's children first."""
    if isinstance(doc, dict):
        for k, v in doc.items():
            yield path, k
            yield from _slots(v, path + (k,))
    elif isinstance(doc, list):
        for i, v in enumerate(doc):
            yield path, i
            yield from _slots(v, path + (i,))


def _at(doc, path):
    for k in path:
        doc = doc[k]
    return doc


def mutate(data, doc, max_ops: int = 4):
    """A mutated deep copy of ``doc``: 1..max_ops of drop / replace / special number / type swap / control char."""
    doc = copy.deepcopy(doc)
    for _ in range(data.draw(st.integers(1, max_ops), label="ops")):
        slots = list(_slots(doc))
        if not slots:
            return data.draw(json_value)
        path, key = data.draw(st.sampled_from(slots), label="slot")
        parent = _at(doc, path)
        op = data.draw(st.sampled_from(["drop", "replace", "number", "swap", "text"]), label="op")
        value = parent[key]
        if op == "drop":
            del parent[key]
        elif op == "replace":
            parent[key] = data.draw(json_value, label="value")
        elif op == "number":
            parent[key] = data.draw(st.sampled_from(SPECIAL_NUMBERS), label="number")
        elif op == "swap":  # the same content, another JSON type
            parent[key] = [value] if not isinstance(value, list) else {"0": value}
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                parent[key] = data.draw(st.sampled_from([str(value), [value], {"v": value}, bool(value)]))
        else:
            tail = data.draw(st.sampled_from(["\x00", "\x1b[31m", "\n", "/../..", "\udcff"]), label="tail")
            parent[key] = value + tail if isinstance(value, str) else data.draw(hostile_text)
    return doc


def dumps(doc) -> str:
    """JSON text as a careless writer makes it: NaN/Infinity tokens allowed, lone surrogates kept."""
    return json.dumps(doc, allow_nan=True, ensure_ascii=False)


def write_text(path: Path, text: str) -> None:
    """``text`` as UTF-8; a lone surrogate is written as its (invalid) three-byte form, as a broken writer would."""
    path.write_bytes(text.encode("utf-8", "surrogatepass"))


# ------------------------------------------------------------------------------------------- properties
def snapshot(folder: Path, skip: Path | None = None) -> dict[str, tuple]:
    """Every entry below ``folder`` (not following symlinks) with its type, size and mtime; ``skip`` left out."""
    out = {}
    for dirpath, dirnames, filenames in os.walk(folder):
        d = Path(dirpath)
        if skip is not None and (d == skip or skip in d.parents):
            dirnames[:] = []
            continue
        for name in dirnames + filenames:
            p = d / name
            if skip is not None and p == skip:
                continue
            st_ = p.lstat()
            out[str(p.relative_to(folder))] = (st_.st_mode, st_.st_size if not p.is_dir() else 0, st_.st_mtime_ns)
    return out


def run_cli(args: list[str]):
    """Invoke lrtool in-process and check the properties every run must have."""
    res = CliRunner().invoke(cli, [str(a) for a in args])
    if res.exception is not None and not isinstance(res.exception, SystemExit):
        raise AssertionError(f"lrtool {args} raised {res.exception!r}:\n"
                             + "".join(traceback.format_exception(*res.exc_info)))
    assert res.exit_code in ALLOWED_EXIT, (args, res.exit_code, res.stderr[-2000:])
    assert "Traceback" not in res.stdout and "Traceback" not in res.stderr, (args, res.stderr[-2000:])
    stray = [ln for ln in res.stderr.splitlines() if ln.strip() and not ln.startswith("lrtool:")]
    assert not stray, (args, stray[:5])
    if res.exit_code == 2:  # the tool could not run: it says why (an error line, or the command's report)
        assert res.stdout.strip() or any(ln.startswith("lrtool: error: ") for ln in res.stderr.splitlines()), args
    assert "please report it" not in res.stdout, (args, [ln for ln in res.stdout.splitlines() if "report it" in ln])
    return res


@pytest.fixture(scope="module")
def work(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("fuzz")


def fresh_copy(src: Path, parent: Path, name: str = "ds") -> tuple[Path, Path]:
    """``src`` copied to ``parent/name``, and a canary folder beside it (what must never change)."""
    root = parent / name
    shutil.copytree(src, root, symlinks=True)
    canary = parent / "outside"
    canary.mkdir(exist_ok=True)
    (canary / "canary.txt").write_text("keep me")
    return root, canary


READ_ONLY_COMMANDS = [["validate"], ["validate", "--deep"], ["reshard", "--dry-run"], ["repair", "--dry-run"],
                      ["diagnose-decode", "--frames", "1"]]


# ------------------------------------------------------------------------------------------- info.json
@fuzz_settings(40)
@given(data=st.data())
def test_fuzz_info_json(work, data):
    src = data.draw(st.sampled_from(["clean_v21", "clean_v30"]), label="fixture")
    info = json.loads((DATASETS / src / "meta" / "info.json").read_text())
    with tempfile.TemporaryDirectory(dir=work) as tmp:
        parent = Path(tmp)
        root, _ = fresh_copy(DATASETS / src, parent)
        text = dumps(mutate(data, info))
        if data.draw(st.booleans(), label="truncate"):
            text = text[: data.draw(st.integers(0, len(text)), label="cut")]
        write_text(root / "meta" / "info.json", text)
        cmd = data.draw(st.sampled_from(READ_ONLY_COMMANDS), label="command")
        before = snapshot(parent)
        run_cli([*cmd, root])
        assert snapshot(parent) == before


# ------------------------------------------------------------------------------------------- jsonl tables
def _mutate_lines(data, lines: list[str]) -> list[str]:
    lines = list(lines)
    for _ in range(data.draw(st.integers(1, 3), label="line ops")):
        i = data.draw(st.integers(0, max(0, len(lines) - 1)), label="line")
        op = data.draw(st.sampled_from(["mutate", "truncate", "garbage", "drop", "dup", "ctrl"]), label="line op")
        if not lines:
            lines.append("")
        if op == "mutate":
            try:
                lines[i] = dumps(mutate(data, json.loads(lines[i]), max_ops=2))
            except ValueError:
                lines[i] = dumps(data.draw(json_value))
        elif op == "truncate":
            lines[i] = lines[i][: data.draw(st.integers(0, len(lines[i])))]
        elif op == "garbage":
            lines[i] = dumps(data.draw(json_value))
        elif op == "drop":
            del lines[i]
        elif op == "dup":
            lines.insert(i, lines[i])
        else:
            lines[i] = lines[i].replace('"', '"\x1b[2J\x00', 2)
    return lines


@fuzz_settings(30)
@given(data=st.data())
def test_fuzz_jsonl_tables(work, data):
    table = data.draw(st.sampled_from(["episodes.jsonl", "tasks.jsonl", "episodes_stats.jsonl"]), label="table")
    src = DATASETS / "clean_v21"
    lines = (src / "meta" / table).read_text().splitlines()
    with tempfile.TemporaryDirectory(dir=work) as tmp:
        parent = Path(tmp)
        root, _ = fresh_copy(src, parent)
        write_text(root / "meta" / table, "\n".join(_mutate_lines(data, lines)) + data.draw(st.sampled_from(["\n", ""])))
        cmd = data.draw(st.sampled_from(READ_ONLY_COMMANDS[:4]), label="command")
        before = snapshot(parent)
        run_cli([*cmd, root])
        assert snapshot(parent) == before


# ------------------------------------------------------------------------------------------- mixtures
TEXT_HEADS = ["./ds", "ds", "../outside", "/dev/zero", "/", ".", "..", "org/name", "org/name@main", "org/..",
              "org/name@../../x", "org/name@" + "a" * 40, "./ds/meta/info.json", "./missing", "~", "-x", "'./ds'",
              '"unterminated', "./d\\s"]
TEXT_OPTS = ["weight=1", "weight=0", "weight=nan", "weight=-1", "weight=1e308", "episodes=0-1", "episodes=0-99999999",
             "episodes=2-1", "episodes=", "revision=main", "revision=../x", "foo=bar", "bare", "# comment", "\x00",
             "episodes=0,0,1"]


@st.composite
def text_mixture(draw) -> str:
    lines = []
    for _ in range(draw(st.integers(0, 8))):
        head = draw(st.one_of(st.sampled_from(TEXT_HEADS), hostile_text.filter(lambda s: "\n" not in s and "\r" not in s)))
        opts = draw(st.lists(st.sampled_from(TEXT_OPTS), max_size=3))
        lines.append(" ".join([head, *opts]) + draw(st.sampled_from(["", "  # note", "\x00", "\t"])))
    return "\n".join(lines)


def _json_entry():
    return st.fixed_dictionaries({}, optional={
        "repo_id": st.sampled_from(["org/name", "org/..", "x", 3]) | hostile_text,
        "root": st.sampled_from(["ds", "./ds", "../outside", "/dev/zero", "/etc", None, 1]) | hostile_text,
        "revision": st.sampled_from(["main", "../../x", "/abs", None]),
        "episodes": st.sampled_from([[0, 1], [-1], [2**70], "0-1", None, [math.nan]]),
        "excluded_episodes": st.sampled_from([[0], "x", None]),
        "data_features_name_mapping": st.sampled_from([{"action": "action"}, {"a": 1}, [], None]),
        "prompt_substitutions": st.sampled_from([{"x": "y"}, [], None]),
        "$ref": st.sampled_from(["part.json", "../outside/canary.txt", "/dev/zero", "missing.json", "self.json",
                                 "loop.json", "deep.json", 7]),
    })


@st.composite
def json_mixture(draw):
    entries = draw(st.lists(_json_entry() | json_value, max_size=5))
    shape = draw(st.sampled_from(["opentau", "bare", "list", "garbage"]))
    weights = draw(st.sampled_from([None, [1] * len(entries), [math.nan] * len(entries), [1], "x", [-1] * len(entries)]))
    freq = draw(st.sampled_from([None, 30, 0, -5, math.nan, math.inf, "x"]))
    if shape == "opentau":
        doc = {"dataset_mixture": {"datasets": entries, "weights": weights, "action_freq": freq}}
    elif shape == "bare":
        doc = {"datasets": entries}
    elif shape == "list":
        doc = entries
    else:
        doc = draw(json_value)
    if draw(st.booleans()):
        doc = {"$ref": draw(st.sampled_from(["part.json", "loop.json", "../outside/canary.txt"])), "extra": doc}
    return doc


def _mixture_folder(parent: Path) -> None:
    (parent / "part.json").write_text(json.dumps({"datasets": [{"root": "ds"}]}))
    (parent / "loop.json").write_text(json.dumps({"$ref": "loop.json"}))
    (parent / "self.json").write_text(json.dumps([{"$ref": "self.json"}]))
    (parent / "deep.json").write_text("[" * 5000 + '{"root": "ds"}' + "]" * 5000)


@fuzz_settings(40)
@given(data=st.data())
def test_fuzz_mixture_files(work, data):
    with tempfile.TemporaryDirectory(dir=work) as tmp:
        parent = Path(tmp)
        root, _ = fresh_copy(DATASETS / "clean_v21", parent)
        _mixture_folder(parent)
        kind = data.draw(st.sampled_from(["text", "json", "bytes"]), label="kind")
        if kind == "text":
            mix = parent / "mix.txt"
            write_text(mix, data.draw(text_mixture(), label="text"))
        elif kind == "json":
            mix = parent / "mix.json"
            write_text(mix, dumps(data.draw(json_mixture(), label="json")))
        else:
            mix = parent / "mix.txt"
            mix.write_bytes(data.draw(st.binary(max_size=200), label="bytes"))
        cmd = data.draw(st.sampled_from([["validate"], ["validate", "--deep"], ["reshard", "--dry-run"],
                                         ["diagnose-decode", "--frames", "1"]]), label="command")
        before = snapshot(parent)
        run_cli([*cmd, mix])
        assert snapshot(parent) == before


# ------------------------------------------------------------------------------------------- path templates
PLACEHOLDERS = ["episode_chunk", "episode_index", "video_key", "chunk_index", "file_index", "0", "", "x",
                "episode_index.real", "episode_index[0]", "video_key.__class__"]
SPECS = ["", ":03d", ":06d", ":>2000000000", ":.999999999f", ":x", ":s", ":!r", "!r", "!s:>5", ":{episode_index}",
         ":%", ":,", ":_>9"]


@st.composite
def path_template(draw) -> str:
    parts = []
    for _ in range(draw(st.integers(1, 6))):
        kind = draw(st.sampled_from(["lit", "sep", "ph", "hostile"]))
        if kind == "lit":
            parts.append(draw(st.sampled_from(["data", "videos", "chunk-", "episode_", ".parquet", ".mp4", "..", ".",
                                               "file-", "{{", "}}", "%s"])))
        elif kind == "sep":
            parts.append(draw(st.sampled_from(["/", "//", "\\", "/../"])))
        elif kind == "ph":
            parts.append("{" + draw(st.sampled_from(PLACEHOLDERS)) + draw(st.sampled_from(SPECS)) + "}")
        else:
            parts.append(draw(hostile_text))
    return "".join(parts)


@fuzz_settings(40)
@given(data=st.data())
def test_fuzz_path_templates(work, data):
    src = data.draw(st.sampled_from(["clean_v21", "clean_v30"]), label="fixture")
    with tempfile.TemporaryDirectory(dir=work) as tmp:
        parent = Path(tmp)
        root, _ = fresh_copy(DATASETS / src, parent)
        info = json.loads((root / "meta" / "info.json").read_text())
        key = data.draw(st.sampled_from(["data_path", "video_path", "both"]), label="key")
        for k in (["data_path", "video_path"] if key == "both" else [key]):
            info[k] = data.draw(path_template(), label=k)
        write_text(root / "meta" / "info.json", dumps(info))
        cmd = data.draw(st.sampled_from([["validate"], ["validate", "--deep"], ["reshard"], ["repair"],
                                         ["repair", "--dry-run"], ["diagnose-decode", "--frames", "1"]]),
                        label="command")
        before = snapshot(parent, skip=root)
        run_cli([*cmd, root])
        assert snapshot(parent, skip=root) == before


# ------------------------------------------------------------------------------------------- backup manifests
@pytest.fixture(scope="module")
def repaired_template(work) -> Path:
    """broken_wrong_totals after a real repair: its .lrtool/backup holds a manifest lrtool wrote."""
    root = work / "repaired"
    shutil.copytree(DATASETS / "broken_wrong_totals", root)
    res = CliRunner().invoke(cli, ["repair", str(root)])
    assert res.exit_code == 0, res.output
    return root


def _manifest(root: Path) -> Path:
    (bdir,) = (root / ".lrtool" / "backup").iterdir()
    return bdir / "manifest.json"


@fuzz_settings(40)
@given(data=st.data())
def test_fuzz_backup_manifests(repaired_template, work, data):
    with tempfile.TemporaryDirectory(dir=work) as tmp:
        parent = Path(tmp)
        root, canary = fresh_copy(repaired_template, parent)
        manifest = _manifest(root)
        doc = json.loads(manifest.read_text())
        how = data.draw(st.sampled_from(["mutate", "paths", "raw"]), label="how")
        if how == "mutate":
            text = dumps(mutate(data, doc))
        elif how == "paths":  # every path field pointed somewhere hostile
            hostile = data.draw(st.sampled_from(["../outside/canary.txt", str(canary / "canary.txt"), "../outside",
                                                 ".lrtool/backup", "meta/../../outside/canary.txt", "", ".",
                                                 "meta\\..\\..\\x", "meta/\x00x", "data"]), label="path")
            text = dumps(json.loads(json.dumps(doc).replace('"meta/info.json"', json.dumps(hostile))))
        else:
            raw = dumps(doc)
            text = raw[: data.draw(st.integers(0, len(raw)), label="cut")]
        write_text(manifest, text)
        if data.draw(st.booleans(), label="tamper original"):
            saved = next(p for p in manifest.parent.rglob("*") if p.is_file() and p.name != "manifest.json")
            saved.write_bytes(saved.read_bytes()[:-1] + b"!")
        before = snapshot(parent, skip=root)
        run_cli(["repair", "--undo", root, *data.draw(st.sampled_from([[], ["--format", "json"]]), label="fmt")])
        assert snapshot(parent, skip=root) == before
        assert (canary / "canary.txt").read_text() == "keep me"


# ------------------------------------------------------------------------------------------- HTTP (prefetch)
STATUSES = [200, 204, 301, 302, 304, 400, 401, 403, 404, 408, 409, 410, 413, 416, 429, 500, 502, 503, 504, 599]
RETRY_AFTER = ["0", "1", "-5", "1.5", "100000", "99999999999999999999", "nan", "inf", "", " ", "soon", "\x00",
               "Fri, 31 Dec 2100 23:59:59 GMT", "Thu, 01 Jan 1970 00:00:00 GMT", "Mon, 99 Foo 2026 99:99:99 GMT", None]
HOSTILE_PATHS = ["../escape.txt", "/tmp/lrtool-fuzz-abs.txt", "meta/../../escape.txt", ".lrtool/backup/x/manifest.json",
                 ".LRTOOL/x", ".cache/huggingface/download/x.metadata", "meta\\..\\..\\x", "meta/\x1b[2J.json",
                 "meta//x", "meta/./x", "", "C:/x", "data/" + "a" * 300, "meta/\x00x"]


@st.composite
def tree_entry(draw):
    base = {"type": draw(st.sampled_from(["file", "directory", "symlink", 3, None])),
            "path": draw(st.one_of(st.sampled_from(HOSTILE_PATHS + ["meta/info.json", "data"]), hostile_text,
                                   st.integers(), st.none())),
            "size": draw(st.sampled_from([0, 1, -1, 2**70, math.nan, "1", None])),
            "oid": draw(st.sampled_from(["0" * 40, "zz", None, 5]))}
    if draw(st.booleans()):
        base["lfs"] = draw(st.sampled_from([{"oid": "0" * 64, "size": 1, "pointerSize": 1}, {}, None, "x", [1]]))
    drop = draw(st.lists(st.sampled_from(list(base)), max_size=2))
    return {k: v for k, v in base.items() if k not in drop}


@pytest.fixture(scope="module")
def hub(tmp_path_factory):
    from tests.hubserver import HubServer

    with HubServer(page_size=1000) as srv:
        yield srv


_repo_ids = itertools.count()


@fuzz_settings(40)
@given(data=st.data())
def test_fuzz_prefetch_http(hub, work, monkeypatch, data):
    from lerobot_tools.prefetch.run import PrefetchOptions, prefetch
    from tests.hubserver import _Handler
    from tests.prefetch.test_prefetch import V21, FakeClock

    with tempfile.TemporaryDirectory(dir=work) as tmp:
        parent = Path(tmp)
        for var, sub in (("HF_HOME", "hf_home"), ("HF_LEROBOT_HOME", "lerobot_home")):
            monkeypatch.setenv(var, str(parent / sub))
        for var in ("HF_TOKEN", "HUGGING_FACE_HUB_TOKEN", "HF_HUB_OFFLINE", "HF_ENDPOINT"):
            monkeypatch.delenv(var, raising=False)
        monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
        monkeypatch.setenv("HF_HUB_DISABLE_IMPLICIT_TOKEN", "1")
        repo = f"org/fuzz{next(_repo_ids)}"
        files = dict(V21)
        for p in data.draw(st.lists(st.sampled_from(HOSTILE_PATHS), max_size=2), label="hostile files"):
            if p:
                files[p] = b"x"
        hub.reset()
        hub.add_repo(repo, files)
        how = data.draw(st.sampled_from(["faults", "tree", "both"]), label="how")
        if how in ("faults", "both"):
            for _ in range(data.draw(st.integers(1, 3), label="faults")):
                route = data.draw(st.sampled_from(["info", "tree", "head", "get", "any"]), label="route")
                status = data.draw(st.sampled_from(STATUSES), label="status")
                retry = data.draw(st.sampled_from(RETRY_AFTER), label="retry-after")
                times = data.draw(st.sampled_from([1, 3, -1]), label="times")
                if status == 429:
                    hub.inject(route, "429", retry_after=retry, times=times)
                elif data.draw(st.booleans(), label="drop"):
                    hub.inject(route, data.draw(st.sampled_from(["drop", "drop_body"])), times=times, after_bytes=3)
                else:
                    hub.inject(route, "status", status=status, retry_after=retry, times=times)
        if how in ("tree", "both"):
            listing = data.draw(st.lists(tree_entry(), min_size=1, max_size=6), label="listing")
            if data.draw(st.booleans(), label="keep real entries"):
                monkeypatch.setattr(_Handler, "_tree_entries",
                                    lambda self, f, prefix, _orig=_Handler._tree_entries: _orig(self, f, prefix) + listing)
            else:
                monkeypatch.setattr(_Handler, "_tree_entries", lambda self, f, prefix: listing)
        mix = parent / "mixture.txt"
        mix.write_text(f"{repo}\n")
        dest = parent / "out"
        canary = parent / "outside"
        canary.mkdir()
        (canary / "canary.txt").write_text("keep me")
        before = snapshot(parent, skip=dest)
        try:
            try:
                rep = prefetch(mix, PrefetchOptions(local_dir_root=dest, endpoint=hub.url, clock=FakeClock(),
                                                    progress=False, max_workers=2, announce=lambda line: None,
                                                    max_wait_s=data.draw(st.sampled_from([0.0, 5.0, 900.0]))))
            except LrtoolError as exc:
                assert "\n" not in str(exc)
            else:
                assert rep.exit_status in ALLOWED_EXIT
                json.dumps(rep.to_dict(), default=str)
        finally:
            monkeypatch.undo()
            hub.reset()
        after = snapshot(parent, skip=dest)
        after.pop("mixture.lock", None)  # prefetch's own lock file beside the mixture (documented)
        before.pop("mixture.lock", None)
        assert after == before
        assert not Path("/tmp/lrtool-fuzz-abs.txt").exists()
        if dest.exists():  # everything written is inside <dest>/<repo>, never in .lrtool/
            for p in dest.rglob("*"):
                rel = p.relative_to(dest).as_posix()
                assert rel == "org" or rel.startswith(f"{repo}") or rel.startswith(".cache"), rel
                assert ".lrtool" not in p.relative_to(dest).parts, rel
                assert p.resolve().is_relative_to(dest.resolve()), rel


# ------------------------------------------------------------------------------------------- regressions
def test_regression_tree_entry_with_a_non_object_lfs_is_an_error(hub, work, monkeypatch):
    """Found by test_fuzz_prefetch_http: a listing entry ``"lfs": "x"`` raised AttributeError out of prefetch. It is
    an error of that repo, naming the entry (skipping it reported the repo complete without the file)."""
    from lerobot_tools.prefetch.local import TreeFile
    from lerobot_tools.prefetch.run import PrefetchOptions, prefetch
    from tests.hubserver import _Handler
    from tests.prefetch.test_prefetch import V21, FakeClock

    for bad in ({"lfs": "x"}, {"lfs": [1]}, {"size": -1}, {"lfs": {"oid": 5}}, {"xetHash": 3}):
        with pytest.raises((TypeError, ValueError)):
            TreeFile.from_api({"type": "file", "path": "a", "size": 1, "oid": "0" * 40, **bad})
    with tempfile.TemporaryDirectory(dir=work) as tmp:
        parent = Path(tmp)
        monkeypatch.setenv("HF_HOME", str(parent / "hf_home"))
        monkeypatch.setenv("HF_LEROBOT_HOME", str(parent / "lerobot_home"))
        monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
        hub.reset()
        hub.add_repo("org/lfsx", V21)
        monkeypatch.setattr(_Handler, "_tree_entries", lambda self, f, prefix, _orig=_Handler._tree_entries:
                            _orig(self, f, prefix) + [{"type": "file", "path": "meta/extra.json", "size": 1,
                                                       "oid": "0" * 40, "lfs": "x"}])
        (parent / "mixture.txt").write_text("org/lfsx\n")
        rep = prefetch(parent / "mixture.txt", PrefetchOptions(local_dir_root=parent / "out", endpoint=hub.url,
                                                                clock=FakeClock(), progress=False))
        assert rep.exit_status == 1
        (res,) = rep.results
        assert res.status == "error" and len(res.problems) == 1, res.to_dict()
        assert res.problems[0].endswith("a file entry cannot be used (tree entry 'meta/extra.json': 'lfs' is not an "
                                        "object)"), res.problems
        assert not (parent / "out/org/lfsx/meta/extra.json").exists()


@pytest.mark.parametrize("kind", ["fifo", "dev-zero", "deep", "huge"])
def test_regression_prefetch_lock_file_is_a_capped_regular_file(tmp_path, kind, monkeypatch):
    """The prefetch lock file (``mixture.lock``, data beside a mixture that may come from anywhere) was read with
    a plain read_text: a FIFO there hung prefetch, a symlink to /dev/zero read until memory ran out, deep JSON
    raised RecursionError. It is read like every other JSON file lrtool parses now (lerobot_tools._io)."""
    monkeypatch.setenv("HF_LEROBOT_HOME", str(tmp_path / "home"))
    mix = tmp_path / "mixture.txt"
    mix.write_text("org/name\n")
    lock = tmp_path / "mixture.lock"
    if kind == "fifo":
        os.mkfifo(lock)
    elif kind == "dev-zero":
        lock.symlink_to("/dev/zero")
    elif kind == "deep":
        lock.write_text("[" * 100_000 + "]" * 100_000)
    else:
        with open(lock, "wb") as fh:
            fh.truncate(65 * 2**20)  # sparse: over the 64 MiB cap without using the disk
    res = run_cli(["prefetch", mix, "--offline"])
    assert res.exit_code == 2
    (line,) = [ln for ln in res.stderr.splitlines() if ln.startswith("lrtool: error:")]
    assert "mixture.lock" in line and "lock file" in line


@pytest.mark.parametrize("value", [None, "1", True])
@pytest.mark.parametrize("command", [["validate", "--deep"], ["repair", "--dry-run"]])
def test_regression_a_non_integer_scalar_shape_is_a_finding_not_a_crash(tmp_path, value, command):
    """Found by test_fuzz_info_json: ``features.episode_index.shape = [null]`` (or ``["1"]``) raised TypeError in the
    deep checks: validate --deep said "lrtool failed on this dataset ... please report it", repair --dry-run
    printed a traceback. It is I006 (the JSON Schema), once."""
    root, _ = fresh_copy(DATASETS / "clean_v21", tmp_path)
    info = json.loads((root / "meta/info.json").read_text())
    info["features"]["episode_index"]["shape"] = [value]
    (root / "meta/info.json").write_text(json.dumps(info))
    res = run_cli([*command, root])  # no exception, no "please report it"
    if command[0] == "validate":
        assert res.exit_code == 1 and "I006" in res.stdout


@pytest.mark.parametrize("text", ["~\x00\n", "./ds\x00 weight=1\n", '{"datasets": [{"root": "~\\u0000"}]}'])
def test_regression_a_nul_in_a_mixture_entry_is_an_entry_error(tmp_path, text):
    """Found by test_fuzz_mixture_files: a line ``~<NUL>`` raised ValueError (embedded null byte) out of
    os.path.expanduser, a traceback. A NUL in an entry is that entry's M002 now; the others still load."""
    fresh_copy(DATASETS / "clean_v21", tmp_path)
    mix = tmp_path / ("mix.json" if text.startswith("{") else "mix.txt")
    mix.write_text(text)
    res = run_cli(["validate", mix, "--format", "json"])
    assert res.exit_code == 1
    (ds,) = json.loads(res.stdout)["datasets"]
    assert [f["check"] for f in ds["findings"]] == ["M002"] and "NUL" in ds["findings"][0]["message"]


def test_regression_a_mixture_line_too_long_for_a_file_name(tmp_path):
    """Found by test_fuzz_mixture_files: a 300-character name raised OSError (ENAMETOOLONG) out of Path.exists."""
    mix = tmp_path / "mix.txt"
    mix.write_text("x" * 300 + "\n" + "./" + "y/" * 3000 + "\n")
    res = run_cli(["validate", mix, "--format", "json"])
    assert res.exit_code == 1
    assert [f["check"] for d in json.loads(res.stdout)["datasets"] for f in d["findings"]] == ["M001", "M001"]


@pytest.mark.parametrize("value", ["Infinity", "-Infinity", "1e400"])
@pytest.mark.parametrize("command", [["validate"], ["reshard", "--dry-run"]])
def test_regression_an_infinite_episode_index_in_episodes_jsonl(tmp_path, value, command):
    """Found by test_fuzz_jsonl_tables: ``"episode_index": Infinity`` in episodes.jsonl raised OverflowError: validate
    said "please report it", reshard --dry-run printed a traceback."""
    root, _ = fresh_copy(DATASETS / "clean_v21", tmp_path)
    table = root / "meta/episodes.jsonl"
    lines = table.read_text().splitlines()
    lines[0] = lines[0].replace('"episode_index": 0', f'"episode_index": {value}', 1)
    assert value in lines[0]
    table.write_text("\n".join(lines) + "\n")
    res = run_cli([*command, root])
    if command[0] == "validate":
        assert res.exit_code == 1
