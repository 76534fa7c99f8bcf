"""lerobot_tools._safeout, rule by rule: which characters from data reach a terminal raw, which as an escape,
at the edges of every range, and what a SafeStream does around real text streams (io.StringIO, a TextIOWrapper
over ASCII). tests/io/test_output_hygiene.py runs hostile names through the real commands."""

from __future__ import annotations

import io
import json
import sys

import pytest

from lerobot_tools._safeout import SafeStream, escape_json, escape_text, json_mode, safe_std_streams, sgr, \
    single_line, wrap


@pytest.mark.parametrize("char, shown", [
    ("\x00", "\\x00"), ("\x08", "\\x08"), ("\x0b", "\\x0b"), ("\x1b", "\\x1b"), ("\x1f", "\\x1f"),
    ("\x7f", "\\x7f"), ("\x80", "\\x80"), ("\x9f", "\\x9f"), ("\r", "\\x0d"),
    ("\udc80", "\\x80"), ("\udcff", "\\xff"),  # bytes 0x80 and 0xff of a file name that was not UTF-8
    ("\udc7f", "\\udc7f"), ("\udd00", "\\udd00"), ("\ud800", "\\ud800"), ("\udfff", "\\udfff"),  # other surrogates
    ("\u2028", "\\u2028"), ("\u2029", "\\u2029"), ("\u202a", "\\u202a"), ("\u202e", "\\u202e"),
    ("\u2066", "\\u2066"), ("\u2069", "\\u2069"), ("\ufdd0", "\\ufdd0"), ("\ufdd1", "\\ufdd1"),
    ("\t", "\t"), ("\n", "\n"), (" ", " "), ("~", "~"), ("\xa0", "\xa0"), ("\xff", "\xff"), ("é", "é"),
    ("\u200f", "\u200f"), ("\u2065", "\u2065"), ("\u206a", "\u206a"), ("\ue000", "\ue000"),
])
def test_text_rules_at_the_edges_of_each_range(char, shown):
    assert escape_text(f"a{char}b") == f"a{shown}b"


def test_stderr_keeps_carriage_return_and_nothing_else_more():
    assert escape_text("50%\r", keep_cr=True) == "50%\r"
    assert escape_text("\x1b[2K\r\x00", keep_cr=True) == "\\x1b[2K\r\\x00"


@pytest.mark.parametrize("char, shown", [
    ("\udc80", "\\\\x80"), ("\udcff", "\\\\xff"),  # the text \x80 inside the JSON string
    # any other lone surrogate, as text
    ("\ud800", "\\\\ud800"), ("\udfff", "\\\\udfff"), ("\udc7f", "\\\\udc7f"), ("\udd00", "\\\\udd00"),
    ("\x7f", "\\u007f"), ("\x85", "\\u0085"), ("\u202e", "\\u202e"), ("\u2028", "\\u2028"),  # a JSON escape
    ("\ue000", "\ue000"), ("é", "é"),
])
def test_json_rules(char, shown):
    assert escape_json(f'"a{char}b"') == f'"a{shown}b"'


def test_a_json_document_stays_valid_utf8_json():
    doc = json.dumps({"file": "a\udcffb\u202ec\x85"}, ensure_ascii=False)
    safe = escape_json(doc)
    safe.encode("utf-8")  # no lone surrogate left
    assert json.loads(safe) == {"file": "a\\xffb\u202ec\x85"}
    assert escape_json(safe) == safe  # idempotent


def test_single_line():
    assert single_line("a\r\nb\nc") == "a\\r\\nb\\nc"


def test_a_stream_escapes_what_it_is_given_and_returns_its_length():
    raw = io.StringIO()
    s = SafeStream(raw)
    assert s.write("x\x1b[31my") == 7
    assert s.write(b"caf\xc3\xa9 \xff") == 6  # bytes: decoded as UTF-8, a bad byte replaced
    assert s.write(5) == 1
    s.writelines(["\r", "\u202e"])
    s.flush()
    assert raw.getvalue() == "x\\x1b[31mycafé \ufffd5\\x0d\\u202e"
    assert s.writable() and not s.isatty() and not s.json and not s.keep_cr


def test_json_mode_switches_the_rules_for_the_block_only():
    raw = io.StringIO()
    s = wrap(raw)
    with json_mode(s):
        s.write('"\udcff\x7f"')
    s.write("\x7f")
    assert raw.getvalue() == '"\\\\xff\\u007f"\\x7f'
    plain = io.StringIO()
    with json_mode(plain):  # not a SafeStream: left alone
        plain.write("\x7f")
    assert plain.getvalue() == "\x7f"


def test_colours_only_through_sgr_and_data_escapes_stay_escaped():
    raw = io.StringIO()
    s = SafeStream(raw)
    assert sgr(raw, "31") == "\x1b[31m" and sgr(s, "31") == "\ufdd031\ufdd1"
    s.write("a" + sgr(s, "31") + "red\x1b[0m" + sgr(s, "0") + "\ufdd0x\ufdd1z")
    assert raw.getvalue() == "a\x1b[31mred\\x1b[0m\x1b[0m\\ufdd0x\\ufdd1z"
    err_raw = io.StringIO()
    err = wrap(err_raw, keep_cr=True)
    err.write("\r" + sgr(err, "1") + "50%\r")
    assert err_raw.getvalue() == "\r\x1b[1m50%\r"


class _AsciiOnly:
    """A stream with no ``encoding`` attribute that cannot write non-ASCII (as some redirected consoles)."""

    def __init__(self):
        self.parts: list[str] = []

    def write(self, s: str) -> int:
        s.encode("ascii")
        self.parts.append(s)
        return len(s)

    def flush(self) -> None:
        pass


def test_a_terminal_that_cannot_show_a_character_gets_an_escape_not_a_crash():
    buf = io.BytesIO()
    raw = io.TextIOWrapper(buf, encoding="ascii")
    SafeStream(raw).write("café")
    raw.flush()
    assert buf.getvalue() == b"caf\\xe9"
    buf = io.BytesIO()
    raw = io.TextIOWrapper(buf, encoding="latin-1")  # the stream's own encoding, not ASCII, for what it can show
    SafeStream(raw).write("\u20ac\xe9")
    raw.flush()
    assert buf.getvalue() == b"\\u20ac\xe9"
    bare = _AsciiOnly()
    SafeStream(bare).write("é")
    assert bare.parts == ["\\xe9"]


def test_the_raw_streams_attributes_pass_but_not_its_buffer():
    class Tty(io.StringIO):
        def isatty(self):
            return True

    s = SafeStream(Tty())
    assert s.isatty() and s.getvalue() == ""
    assert not SafeStream(_AsciiOnly()).isatty()
    with pytest.raises(AttributeError):
        s.buffer  # noqa: B018
    with pytest.raises(AttributeError):  # even where the raw stream has one: nothing goes around the escaping
        SafeStream(io.TextIOWrapper(io.BytesIO(), encoding="utf-8")).buffer  # noqa: B018
    assert SafeStream(io.TextIOWrapper(io.BytesIO(), encoding="utf-8")).encoding == "utf-8"
    assert wrap(s) is s


def test_safe_std_streams_wraps_stdout_and_stderr_for_the_block(capsys):
    before = sys.stdout, sys.stderr
    with safe_std_streams():
        assert isinstance(sys.stdout, SafeStream) and not sys.stdout.keep_cr
        assert isinstance(sys.stderr, SafeStream) and sys.stderr.keep_cr
        print("out\x1b\r")
        print("err\x1b\r", file=sys.stderr)
    assert (sys.stdout, sys.stderr) == before
    got = capsys.readouterr()
    assert got.out == "out\\x1b\\x0d\n" and got.err == "err\\x1b\r\n"
