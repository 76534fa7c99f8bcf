"""Output hygiene: ``--format json`` is valid UTF-8 JSON whatever the file names hold, and control characters
from data (a NUL or ESC in a mixture line, a task string, a file name) never reach the terminal raw.

Real datasets (lerobot_tools.testing.synth) in folders whose names hold non-UTF-8 bytes (made with
``os.fsencode``/``surrogateescape``, PEP 383) and escape sequences; the commands run in-process through click's
CliRunner, whose stdout/stderr are strict UTF-8 byte streams, as a pipe would be.
"""

from __future__ import annotations

import io
import json
import os
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from lerobot_tools._safeout import SafeStream, escape_json, escape_text, sgr
from lerobot_tools.cli import cli
from lerobot_tools.findings import DatasetReport, Finding
from lerobot_tools.report import ValidateResult
from lerobot_tools.testing.synth import SynthSpec, build_dataset

ESC_TASK = "pick \x1b]0;pwned\x07 the \x1b[31mred\x00 cube"
RAW = ("\x1b", "\x00", "\x07", "\x9b", "\u202e")  # ESC, NUL, BEL, C1 CSI, right-to-left override


@pytest.fixture(scope="module")
def hostile(tmp_path_factory) -> dict[str, str]:
    """A dataset copied under hostile folder names, and a mixture naming it through an escape sequence."""
    base = tmp_path_factory.mktemp("hygiene")
    plain = build_dataset(base / "plain", SynthSpec(version="v2.1", episode_lengths=[4, 4], video_keys=(),
                                                    video_codec=None, tasks=(ESC_TASK, "place")))
    bad_bytes = os.fsdecode(os.fsencode(str(base)) + b"/ds\xff\xfe\x1b[2J")
    os.rename(plain, bad_bytes)
    esc_name = base / "esc\x1b[2Jds\x9b\u202e"
    shutil.copytree(bad_bytes, esc_name)
    mix = base / "mix.txt"
    mix.write_text(f"./{esc_name.name}\nnot/\x1b[2Jthere\n")
    return {"bad_bytes": bad_bytes, "esc_name": str(esc_name), "mix": str(mix), "base": str(base)}


def _strings(obj):
    if isinstance(obj, str):
        yield obj
    elif isinstance(obj, dict):
        for v in obj.values():
            yield from _strings(v)
    elif isinstance(obj, list):
        for v in obj:
            yield from _strings(v)


def _invoke(args: list[str]):
    res = CliRunner().invoke(cli, args)
    assert res.exception is None or isinstance(res.exception, SystemExit), repr(res.exception)
    return res


@pytest.mark.parametrize("command", [["validate"], ["diagnose-decode"], ["reshard", "--dry-run"],
                                     ["repair", "--dry-run"]])
def test_json_output_is_valid_utf8_with_non_utf8_file_names(hostile, command):
    res = _invoke([*command, hostile["bad_bytes"], hostile["mix"], "--format", "json"])
    assert res.exit_code in (0, 1, 2), res.output
    text = res.stdout_bytes.decode("utf-8")  # strict: a raw 0xff or a lone surrogate fails here
    doc = json.loads(text)
    assert any("ds\\xff\\xfe" in v for v in _strings(doc))  # the bytes are shown, escaped (the text \xff)
    for raw in ("\x9b", "\u202e"):
        assert raw not in text  # C1 and bidi characters only as \u escapes
    assert "Traceback" not in res.stderr


def test_validate_json_keeps_names_recognisable(hostile):
    res = _invoke(["validate", hostile["bad_bytes"], "--format", "json"])
    doc = json.loads(res.stdout_bytes.decode("utf-8"))
    assert doc["datasets"][0]["target"].endswith("/ds\\xff\\xfe\x1b[2J")  # json escapes ESC as \u001b


@pytest.mark.parametrize("command", [["validate"], ["diagnose-decode"], ["reshard", "--dry-run"],
                                     ["repair", "--dry-run"]])
def test_text_output_never_carries_raw_control_characters(hostile, command):
    res = _invoke([*command, hostile["bad_bytes"], hostile["mix"]])
    out = res.stdout_bytes.decode("utf-8")
    for raw in RAW:
        assert raw not in out, (raw, out)
        assert raw not in res.stderr
    assert "\\x1b[2J" in out  # shown, escaped


def test_task_strings_are_escaped_in_findings(tmp_path):
    """A task label with an OSC title sequence, reported by T001 (task missing from tasks.jsonl)."""
    root = build_dataset(tmp_path / "ds", SynthSpec(version="v2.1", episode_lengths=[4, 4], video_keys=(),
                                                    video_codec=None, tasks=("place", ESC_TASK)))
    tasks = root / "meta" / "tasks.jsonl"
    tasks.write_text("".join(ln + "\n" for ln in tasks.read_text().splitlines() if "pick" not in ln))
    res = _invoke(["validate", str(root)])
    assert ESC_TASK.replace("\x1b", "\\x1b").replace("\x07", "\\x07").replace("\x00", "\\x00") in res.stdout
    assert "\x1b" not in res.stdout and "\x07" not in res.stdout


def test_error_lines_on_stderr_are_escaped(tmp_path):
    mix = tmp_path / "mix.json"
    mix.write_text(json.dumps({"datasets": [{"$ref": "gone\x1b[2J\x00.json"}]}))
    res = _invoke(["validate", str(mix)])
    assert res.exit_code == 2
    err = res.stderr
    assert err.startswith("lrtool: error:") and err.count("\n") == 1
    assert "\x1b" not in err and "\x00" not in err and "\\x1b[2J" in err


def test_colours_are_ours_only():
    """With colour on, the severity is painted with a real SGR sequence; ESC from data is still escaped."""
    rep = DatasetReport(target="ds\x1b[5m", root=None, codebase_version="v2.1")
    rep.findings.append(Finding("T001", "error", None, "task 'x\x1b[31my' missing"))
    buf = io.StringIO()
    ValidateResult([rep]).render_text(SafeStream(buf), color=True)
    out = buf.getvalue()
    assert "\x1b[31merror  \x1b[0m" in out
    assert "ds\\x1b[5m" in out and "x\\x1b[31my" in out
    assert out.count("\x1b") == 2
    plain = io.StringIO()
    ValidateResult([rep]).render_text(plain, color=True)  # not a SafeStream: plain SGR, as before
    assert "\x1b[31m" in plain.getvalue() and "\ufdd0" not in plain.getvalue()
    assert sgr(plain, "0") == "\x1b[0m"


def test_escape_rules():
    assert escape_text("a\tb\nc\rd\x1be\x7f\x85\udcff\u202e") == "a\tb\nc\\x0dd\\x1be\\x7f\\x85\\xff\\u202e"
    assert escape_text("bar\r", keep_cr=True) == "bar\r"
    doc = json.dumps({"n": os.fsdecode(b"\xff") + "\x85\x1b\u2028"}, ensure_ascii=False)
    safe = escape_json(doc)
    assert json.loads(safe.encode("utf-8")) == {"n": "\\xff\x85\x1b\u2028"}
    assert escape_json(safe) == safe
    marker = "\ufdd031\ufdd1"  # data spelling our private colour marker gets no colour without SafeStream
    assert escape_text(marker) == "\\ufdd031\\ufdd1"


def test_stream_survives_an_ascii_terminal():
    raw = io.TextIOWrapper(io.BytesIO(), encoding="ascii")
    s = SafeStream(raw)
    s.write("caf\u00e9 \udcff\n")
    raw.flush()
    assert raw.buffer.getvalue() == b"caf\\xe9 \\xff\n"


def test_an_error_naming_a_file_with_a_newline_stays_one_line(tmp_path):
    """A file name may hold a newline; the error line naming it is still one line (a $ref with a newline could
    forge a second ``lrtool:`` line)."""
    mix = tmp_path / "mix.json"
    mix.write_text(json.dumps({"datasets": [{"$ref": "gone\nlrtool: fake second line.json"}]}))
    res = _invoke(["validate", str(mix)])
    assert res.exit_code == 2
    assert res.stderr.count("\n") == 1 and res.stderr.startswith("lrtool: error:")



def test_scale_out_parts_and_merged_json_survive_non_utf8_names(hostile, tmp_path):
    """A --shard part, then `lrtool report merge --format json`: the part file is written (it raised
    UnicodeEncodeError on the non-UTF-8 name) and the merged document is valid UTF-8 JSON."""
    part = tmp_path / "part.json"
    res = _invoke(["validate", hostile["bad_bytes"], "--shard", "0/1", "--part-out", str(part)])
    assert res.exit_code in (0, 1) and part.is_file()
    merged = _invoke(["report", "merge", str(part), "--format", "json"])
    doc = json.loads(merged.stdout_bytes.decode("utf-8"))
    assert doc["datasets"][0]["target"].endswith("ds\\xff\\xfe\x1b[2J")
    text = _invoke(["report", "merge", str(part)])
    assert "\x1b" not in text.stdout and "ds\\xff\\xfe\\x1b[2J" in text.stdout


def test_a_newline_in_a_file_name_or_a_task_stays_on_its_report_line(tmp_path):
    """An orphan parquet file named ``bad\\nname.parquet`` (F003) and a task label with a newline (T002): each finding
    is one line of the text report, the newline shown as ``\\n``."""
    task = "pick\nthe cube"
    root = build_dataset(tmp_path / "ds\nx", SynthSpec(version="v2.1", episode_lengths=[4, 4], video_keys=(),
                                                       video_codec=None, tasks=("place", task)))
    shutil.copy(root / "data/chunk-000/episode_000000.parquet", root / "data/chunk-000/bad\nname.parquet")
    tasks = root / "meta" / "tasks.jsonl"
    tasks.write_text("".join(ln + "\n" for ln in tasks.read_text().splitlines() if "pick" not in ln))
    res = _invoke(["validate", str(root)])
    lines = res.stdout.splitlines()
    (f003,) = [ln for ln in lines if " F003 " in ln]
    assert "data/chunk-000/bad\\nname.parquet" in f003
    (t002,) = [ln for ln in lines if " T002 " in ln]
    assert "pick\\nthe cube" in t002
    assert lines[0].startswith(str(root).replace("\n", "\\n"))
    assert not [ln for ln in lines if ln.startswith(("name.parquet", "the cube", "x"))]
