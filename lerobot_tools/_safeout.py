"""What lrtool writes to the terminal is text it chose: data never sends raw control characters there.

Every command's output passes through one :class:`SafeStream` around ``sys.stdout`` and ``sys.stderr``
(installed by :meth:`lerobot_tools.cli.LazyGroup.invoke` for the whole run):

* **text** (the default): a control character that comes from data (a NUL or ESC in a mixture line, a task
  string or a file name; C0 except newline and tab, DEL, C1) is written as a visible escape ``\\x1b``; a byte
  that was not UTF-8 in a file name (Python's ``surrogateescape`` turns byte ``0xff`` into ``U+DCFF``,
  PEP 383) is written as ``\\xff``; bidirectional overrides and line/paragraph separators (``U+202A``-``U+202E``,
  ``U+2066``-``U+2069``, ``U+2028``, ``U+2029``), which can make a terminal show text in another order, are
  written as ``\\u202e``. On stderr a carriage return passes (progress bars redraw with it).
* **JSON** (``--format json``, :func:`json_mode`): the document stays valid UTF-8 JSON. ``json.dump`` already
  escapes C0 characters inside strings; a non-UTF-8 byte of a file name becomes the four characters
  ``\\xff`` of the string (written ``"\\\\xff"``), never a lone surrogate; DEL, C1 and the bidirectional
  characters become their ``\\u00XX`` JSON escape (the same character for a JSON reader).

Colours: a renderer asks for an SGR colour through :func:`sgr`, which returns private markers (the Unicode
noncharacters ``U+FDD0``/``U+FDD1``, reserved for a program's internal use by the Unicode Standard, §23.7)
when it writes to a :class:`SafeStream`; the stream turns exactly ``U+FDD0 digits U+FDD1`` into ``ESC [ digits m``
and escapes every other ESC, so a colour code in data is shown, not obeyed.
"""

from __future__ import annotations

import contextlib
import re
import sys
from typing import IO, Iterator

_MARK_ON, _MARK_OFF = "\ufdd0", "\ufdd1"
_SGR_MARK = re.compile(f"{_MARK_ON}([0-9;]{{1,16}}){_MARK_OFF}")

#: characters never written raw to a terminal (text mode); stderr lets "\r" through
_UNSAFE_TEXT = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\ud800-\udfff\u2028\u2029\u202a-\u202e\u2066-\u2069"
                          f"{_MARK_ON}{_MARK_OFF}]")
_UNSAFE_TEXT_ERR = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\ud800-\udfff\u2028\u2029\u202a-\u202e"
                              f"\u2066-\u2069{_MARK_ON}{_MARK_OFF}]")
#: characters a json.dump(ensure_ascii=False) document may hold that must not reach the output raw
_UNSAFE_JSON = re.compile("[\x7f-\x9f\ud800-\udfff\u2028\u2029\u202a-\u202e\u2066-\u2069]")


def _text_escape(m: re.Match) -> str:
    c = ord(m.group())
    if 0xDC80 <= c <= 0xDCFF:  # a non-UTF-8 byte of a file name (surrogateescape)
        return f"\\x{c - 0xDC00:02x}"
    return f"\\x{c:02x}" if c <= 0xFF else f"\\u{c:04x}"


def _json_escape(m: re.Match) -> str:
    c = ord(m.group())
    if 0xDC80 <= c <= 0xDCFF:
        return f"\\\\x{c - 0xDC00:02x}"  # the text \xff inside a JSON string
    if 0xD800 <= c <= 0xDFFF:
        return f"\\\\u{c:04x}"  # any other lone surrogate, as text
    return f"\\u{c:04x}"  # the same character, as a JSON escape


def escape_text(text: str, *, keep_cr: bool = False) -> str:
    """``text`` with every character unsafe on a terminal written as a visible escape (see module docstring).

    Newline and tab are kept; ``keep_cr`` also keeps carriage return.
    """
    return (_UNSAFE_TEXT_ERR if keep_cr else _UNSAFE_TEXT).sub(_text_escape, text)


def escape_json(document: str) -> str:
    """A JSON document from ``json.dumps(..., ensure_ascii=False)`` made safe to print: lone surrogates become the
    text ``\\xNN``, DEL/C1/bidirectional characters their ``\\u`` escape. Idempotent; the result is valid JSON
    that encodes to UTF-8."""
    return _UNSAFE_JSON.sub(_json_escape, document)


def single_line(text: str) -> str:
    """``text`` on one line: newlines and carriage returns (a file name may hold them) written as ``\\n`` / ``\\r``.
    For error lines, which must stay one line whatever the data says."""
    return text.replace("\r", "\\r").replace("\n", "\\n")


def sgr(out: IO[str], code: str) -> str:
    """The SGR colour sequence ``ESC [ code m`` to write to ``out`` (``"31"`` red, ``"0"`` reset): a private
    marker when ``out`` is a :class:`SafeStream` (which turns it into the real sequence), else the sequence."""
    return f"{_MARK_ON}{code}{_MARK_OFF}" if isinstance(out, SafeStream) else f"\x1b[{code}m"


class SafeStream:
    """A text stream that escapes what data must not send to a terminal, around ``raw``.

    Args:
        raw: the stream written to (``sys.stdout``, ``sys.stderr``).
        keep_cr: let carriage returns through (stderr: progress bars).

    ``json`` (attribute) selects the JSON rules instead of the text rules (:func:`json_mode`). Everything else
    (``isatty``, ``fileno``, ``encoding``...) is the raw stream's; there is deliberately no ``buffer``, so nothing
    (click writing bytes) goes around the escaping.
    """

    def __init__(self, raw: IO[str], *, keep_cr: bool = False):
        self.raw = raw
        self.keep_cr = keep_cr
        self.json = False

    def write(self, s: str) -> int:
        if not isinstance(s, str):
            s = str(s, "utf-8", "replace") if isinstance(s, (bytes, bytearray)) else str(s)
        if self.json:
            safe = escape_json(s)
        else:
            safe = escape_text(s, keep_cr=self.keep_cr)
            if _MARK_ON in s:  # colours requested through sgr(): only whole markers become sequences
                safe = _SGR_MARK.sub(lambda m: f"\x1b[{m.group(1)}m", _escape_outside_marks(s, self.keep_cr))
        try:
            self.raw.write(safe)
        except UnicodeEncodeError:  # a terminal that cannot show some character: never crash on output
            enc = getattr(self.raw, "encoding", None) or "ascii"
            self.raw.write(safe.encode(enc, "backslashreplace").decode(enc))
        return len(s)

    def writelines(self, lines) -> None:
        for line in lines:
            self.write(line)

    def flush(self) -> None:
        self.raw.flush()

    def isatty(self) -> bool:
        return bool(getattr(self.raw, "isatty", lambda: False)())

    def writable(self) -> bool:
        return True

    def __getattr__(self, name: str):
        if name == "buffer":
            raise AttributeError(name)
        return getattr(self.raw, name)


def _escape_outside_marks(s: str, keep_cr: bool) -> str:
    """Escape ``s`` except whole colour markers, which are kept for the caller to turn into sequences."""
    out, pos = [], 0
    for m in _SGR_MARK.finditer(s):
        out.append(escape_text(s[pos:m.start()], keep_cr=keep_cr))
        out.append(m.group())
        pos = m.end()
    out.append(escape_text(s[pos:], keep_cr=keep_cr))
    return "".join(out)


def wrap(stream: IO[str], *, keep_cr: bool = False) -> SafeStream:
    """``stream`` as a :class:`SafeStream` (itself when it already is one)."""
    return stream if isinstance(stream, SafeStream) else SafeStream(stream, keep_cr=keep_cr)


@contextlib.contextmanager
def safe_std_streams() -> Iterator[None]:
    """Route ``sys.stdout`` and ``sys.stderr`` through :class:`SafeStream` while the block runs."""
    saved = sys.stdout, sys.stderr
    if sys.stdout is not None:
        sys.stdout = wrap(sys.stdout)
    if sys.stderr is not None:
        sys.stderr = wrap(sys.stderr, keep_cr=True)
    try:
        yield
    finally:
        for s in (sys.stdout, sys.stderr):
            try:
                s.flush()
            except Exception:
                pass
        sys.stdout, sys.stderr = saved


@contextlib.contextmanager
def json_mode(stream: IO[str]) -> Iterator[None]:
    """While the block runs, ``stream`` (a :class:`SafeStream`; anything else is left alone) applies the JSON rules."""
    if not isinstance(stream, SafeStream):
        yield
        return
    before, stream.json = stream.json, True
    try:
        yield
    finally:
        stream.json = before
