"""lerobot_tools.sniff on real files: placeholders, real Parquet/MP4/Matroska/AVI, and I/O problems."""

from __future__ import annotations

import errno
import glob
import os
import socket

import pytest

from tests import videoclips

from lerobot_tools.sniff import HEAD_BYTES, TEXT_MAX_SIZE, Sniff, human_size, sniff

needs_ffmpeg = pytest.mark.skipif(videoclips.FFMPEG is None, reason="ffmpeg not on PATH")


@pytest.fixture
def placeholders(tmp_path):
    return videoclips.make_placeholders(tmp_path)


@pytest.mark.parametrize("kind", ["empty", "lfs-pointer", "html", "json", "xml", "text"])
def test_placeholders_are_classified(placeholders, kind):
    path = placeholders[kind]
    s = sniff(path)
    assert s.kind == kind
    assert s.is_placeholder
    assert s.size == path.stat().st_size
    assert s.magic is None
    assert "\n" not in s.detail and s.detail


def test_lfs_pointer_fields(placeholders):
    s = sniff(placeholders["lfs-pointer"])
    assert s.lfs_oid == "sha256:4d7a214614ab2935c943f9e0ff69d22eadbb8f32b1258daaa5e2ca24d17e2393"
    assert s.lfs_size == 3123456
    assert s.detail == "Git LFS pointer (real file 3.1 MB, oid sha256:4d7a2146…)"


def test_lfs_pointer_without_size_line(tmp_path):
    p = tmp_path / "x.parquet"
    p.write_text("version https://git-lfs.github.com/spec/v1\noid sha256:abcdef0123\n")
    s = sniff(p)
    assert s.kind == "lfs-pointer" and s.lfs_size is None and s.lfs_oid == "sha256:abcdef0123"
    assert "real size unknown" in s.detail


def test_error_bodies_say_what_they_are(placeholders):
    assert sniff(placeholders["html"]).detail.endswith('"429 Too Many Requests"')
    assert "AccessDenied" in sniff(placeholders["xml"]).detail
    assert '{"error":"Entry not found"}' in sniff(placeholders["json"]).detail
    assert "'Not Found'" in sniff(placeholders["text"]).detail
    assert sniff(placeholders["empty"]).detail == "empty file (0 bytes)"


def test_html_without_doctype_and_with_leading_whitespace(tmp_path):
    p = tmp_path / "a.mp4"
    p.write_bytes(b"\xef\xbb\xbf\n\n  <HTML><body>Access denied</body></HTML>")
    assert sniff(p).kind == "html"


def test_random_bytes_are_not_a_placeholder(placeholders):
    s = sniff(placeholders["random"])
    assert s.kind == "ok" and s.magic == "unknown" and not s.is_placeholder
    assert "a7 00 ff 13" in s.detail


def test_utf8_text_cut_mid_character_is_still_text(tmp_path):
    p = tmp_path / "notes.mp4"
    data = ("x" + "é" * 400).encode()  # byte 512 falls inside a 2-byte character
    assert len(data) > HEAD_BYTES
    p.write_bytes(data)
    assert sniff(p).kind == "text"


def test_large_text_file_is_left_to_the_format_reader(tmp_path):
    p = tmp_path / "big.mp4"
    p.write_bytes(b"a" * (TEXT_MAX_SIZE + 1))
    s = sniff(p)
    assert s.kind == "ok" and s.magic == "unknown"


def test_real_parquet_is_never_text(tmp_path):
    pa = pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq

    # String-heavy content: the bytes after the header are mostly printable.
    table = pa.table({"task": ["pick up the red cube " * 20] * 50, "episode_index": list(range(50))})
    p = tmp_path / "episode_000000.parquet"
    pq.write_table(table, p, compression="none")
    s = sniff(p)
    assert (s.kind, s.magic) == ("ok", "parquet")
    assert s.size == p.stat().st_size
    # A parquet cut before its footer is still recognised as parquet; pyarrow reports the damage.
    cut = videoclips.truncate_copy(p, tmp_path / "cut.parquet", 300)
    assert (sniff(cut).kind, sniff(cut).magic) == ("ok", "parquet")


@needs_ffmpeg
def test_real_containers_are_recognised(tmp_path):
    mp4 = videoclips.encode(tmp_path / "a.mp4", frames=5)
    mkv = videoclips.encode(tmp_path / "a.mkv", frames=5)
    avi = videoclips.encode(tmp_path / "a.avi", codec="mpeg4", frames=5)
    faststart = videoclips.encode(tmp_path / "fs.mp4", frames=5, movflags="+faststart")
    for path, magic in [(mp4, "mp4"), (mkv, "matroska"), (avi, "avi"), (faststart, "mp4")]:
        s = sniff(path)
        assert (s.kind, s.magic) == ("ok", magic), (path, s)
        assert s.size == path.stat().st_size and not s.is_placeholder
    # Only the first 512 bytes matter: a truncated MP4 still sniffs as MP4 (the box walker judges it).
    cut = videoclips.truncate_copy(mp4, tmp_path / "cut.mp4", 600)
    assert sniff(cut).magic == "mp4"


def test_missing_and_dangling_symlink(tmp_path):
    s = sniff(tmp_path / "nope.mp4")
    assert s == Sniff("missing", None, None, "file not found")
    link = tmp_path / "link.mp4"
    link.symlink_to(tmp_path / "gone.mp4")
    s = sniff(link)
    assert s.kind == "missing" and "dangling symlink" in s.detail and "gone.mp4" in s.detail
    s = sniff(tmp_path / "nope.mp4" / "child")
    assert s.kind == "missing"


def test_directory_symlink_loop_and_fifo_are_unreadable(tmp_path):
    assert sniff(tmp_path).kind == "unreadable"
    assert "directory" in sniff(tmp_path).detail
    a, b = tmp_path / "a", tmp_path / "b"
    a.symlink_to(b)
    b.symlink_to(a)
    s = sniff(a)
    assert (s.kind, s.detail, s.size) == ("unreadable", "symlink loop", None)
    fifo = tmp_path / "pipe.mp4"
    os.mkfifo(fifo)
    s = sniff(fifo)  # must not block waiting for a writer
    assert s.kind == "unreadable" and "FIFO" in s.detail


def test_permission_denied(tmp_path, monkeypatch, as_nobody):
    """Both places a permission error can come from: ``stat`` (a folder without search permission) and
    ``open`` (a file without read permission in a readable folder)."""
    locked = tmp_path / "locked"
    locked.mkdir()
    (locked / "a.mp4").write_bytes(b"\x00\x00\x00\x18ftypisom")
    secret = tmp_path / "secret.mp4"
    secret.write_bytes(b"\x00\x00\x00\x18ftypisom")
    tmp_path.chmod(0o755)
    locked.chmod(0)
    secret.chmod(0)
    # Relative paths: pytest's private tmp_path ancestors need no search permission for "nobody".
    monkeypatch.chdir(tmp_path)
    try:
        with as_nobody():
            behind_locked_folder = sniff(os.path.join("locked", "a.mp4"))
            unreadable_file = sniff("secret.mp4")
    finally:
        locked.chmod(0o755)
        secret.chmod(0o644)
    assert behind_locked_folder == Sniff("unreadable", None, None, "permission denied")
    assert unreadable_file == Sniff("unreadable", None, None, "permission denied")
    # The permissions, not the content, made them unreadable.
    assert sniff(secret) == sniff(locked / "a.mp4") == Sniff("ok", 12, "mp4", "MP4 (ISO-BMFF) file, 12 B")


def test_sniff_accepts_str_and_pathlike(placeholders):
    p = placeholders["json"]
    assert sniff(str(p)) == sniff(p)


def test_human_size():
    assert human_size(132) == "132 B"
    assert human_size(1234) == "1.2 kB"
    assert human_size(3_123_456) == "3.1 MB"
    assert human_size(999_999) == "1.0 MB"
    assert human_size(None) == "unknown size"


# Exact results: every field of the Sniff, for a corpus of small files written byte for byte.

LFS = "version https://git-lfs.github.com/spec/v1\n"
T60 = "Repository not found. Check the repo name and your HF token."  # 60 characters
T61 = T60 + "?"
JSON_CUT = b'{"message": "' + "é".encode() * 300 + b'"}'  # the 512-byte head ends inside an "é"
A59 = "a" * 59 + "…"  # the snippet of a long run of "a"

CORPUS = [
    # (file name, bytes, expected Sniff without its size: kind, magic, detail, lfs_oid, lfs_size)
    ("empty", b"", ("empty", None, "empty file (0 bytes)", None, None)),
    ("one-byte", b"a", ("text", None, "text file (1 B), not data: 'a'", None, None)),
    # Git LFS pointers: with an upper-case oid and a size, without oid, without either, with a bad byte.
    ("lfs-full", (LFS + "oid sha256:ABCDEF0123456789\nsize 1000000000\n").encode(),
     ("lfs-pointer", None, "Git LFS pointer (real file 1.0 GB, oid sha256:ABCDEF01…)", "sha256:ABCDEF0123456789",
      1000000000)),
    ("lfs-no-oid", (LFS + "size 5\n").encode(), ("lfs-pointer", None, "Git LFS pointer (real file 5 B)", None, 5)),
    ("lfs-bare", b"version https://hawser.github.com/spec/v1\n",
     ("lfs-pointer", None, "Git LFS pointer (real size unknown)", None, None)),
    ("lfs-bad-byte", LFS.encode() + b"x-note caf\xe9\noid sha256:abc\nsize 12\n",
     ("lfs-pointer", None, "Git LFS pointer (real file 12 B, oid sha256:abc…)", "sha256:abc", 12)),
    # HTML: doctype without <html>, upper-case title over several lines; BOM and no title; a non-UTF-8 title.
    ("html-doctype", b"<!DOCTYPE html>\n<TITLE>\n  502 Bad\n  Gateway\n</TITLE>\n",
     ("html", None, 'HTML page (53 B), not data: "502 Bad Gateway"', None, None)),
    ("html-bom-no-title", b"\xef\xbb\xbf<!doctype html><p>x</p>",
     ("html", None, "HTML page (26 B), not data", None, None)),
    ("html-latin1", b"<html><title>Fehler \xfc</title></html>",
     ("html", None, 'HTML page (36 B), not data: "Fehler \ufffd"', None, None)),
    # "<html" is looked for in the first 256 bytes after leading whitespace, not further.
    ("html-at-251", b"a" * 251 + b"<html>", ("html", None, "HTML page (257 B), not data", None, None)),
    ("html-at-252", b"a" * 252 + b"<html>", ("text", None, f"text file (258 B), not data: '{A59}'", None, None)),
    # XML error bodies: <Code> over several lines; <Error> without declaration or <Code>; a non-UTF-8 <Code>.
    ("xml-code", b'<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>\nNoSuchKey\n</Code>'
                 b"<Message>The specified key does not exist.</Message></Error>",
     ("xml", None, "XML error body (130 B), not data: NoSuchKey", None, None)),
    ("xml-no-code", b"\n<Error><Message>Rate exceeded</Message></Error>",
     ("xml", None, "XML error body (48 B), not data: <Error><Message>Rate exceeded</Message></Error>", None, None)),
    ("xml-latin1", b"<?xml version='1.0' encoding='latin-1'?><Error><Code>Verweigert \xe4</Code></Error>",
     ("xml", None, "XML error body (80 B), not data: Verweigert \ufffd", None, None)),
    # JSON: an array, an object after whitespace, an object whose head ends inside a multi-byte character.
    ("json-array", b'[{"error": "not found"}]\n',
     ("json", None, 'JSON body (25 B), not data: [{"error": "not found"}]', None, None)),
    ("json-indented", b'\r\n  {"error": "Entry not found"}',
     ("json", None, 'JSON body (32 B), not data: {"error": "Entry not found"}', None, None)),
    ("json-cut", JSON_CUT,
     ("json", None, 'JSON body (615 B), not data: {"message": "' + "é" * 46 + "…", None, None)),
    # Text: the snippet keeps 60 characters and cuts a 61st; a leading letter is not JSON.
    ("text-60", T60.encode(), ("text", None, f"text file (60 B), not data: '{T60}'", None, None)),
    ("text-61", T61.encode(), ("text", None, f"text file (61 B), not data: '{T61[:59]}…'", None, None)),
    ("text-x-bracket", b"X[1] citation needed\n",
     ("text", None, "text file (21 B), not data: 'X[1] citation needed'", None, None)),
    # UTF-8 at the 512-byte head boundary: a 4-byte character cut after 3 bytes is text, a bad byte 4 from
    # the end is binary; a head of printable text followed by binary bytes is judged by its head only.
    ("utf8-cut-4byte", b"a" * 509 + "😀".encode() + b"more",
     ("text", None, f"text file (517 B), not data: '{A59}'", None, None)),
    ("utf8-bad-byte-at-508", b"a" * 508 + b"\xff" + b"a" * 10,
     ("ok", "unknown", "unrecognised file type, 519 B (first bytes 61 61 61 61 61 61 61 61)", None, None)),
    ("text-then-binary", b"a" * HEAD_BYTES + b"\x00\x01", ("text", None, f"text file (514 B), not data: '{A59}'",
                                                           None, None)),
    ("control-char", b"abc\x01defghij",
     ("ok", "unknown", "unrecognised file type, 11 B (first bytes 61 62 63 01 64 65 66 67)", None, None)),
    # Magic numbers. MP4: box size 0 (to end of file), 1 (64-bit size follows), 8 and more are valid; 2..7 not.
    ("parquet", b"PAR1" + bytes(20), ("ok", "parquet", "Parquet file, 24 B", None, None)),
    ("mp4-size0", b"\x00\x00\x00\x00ftypisom", ("ok", "mp4", "MP4 (ISO-BMFF) file, 12 B", None, None)),
    ("mp4-size1", b"\x00\x00\x00\x01mdat" + (24).to_bytes(8, "big") + bytes(8),
     ("ok", "mp4", "MP4 (ISO-BMFF) file, 24 B", None, None)),
    ("mp4-size7", b"\x00\x00\x00\x07ftypisom",
     ("ok", "unknown", "unrecognised file type, 12 B (first bytes 00 00 00 07 66 74 79 70)", None, None)),
    ("mp4-size8-only", b"\x00\x00\x00\x08free", ("ok", "mp4", "MP4 (ISO-BMFF) file, 8 B", None, None)),
    ("mp4-7-bytes", b"\x00\x00\x00\x08fre",
     ("ok", "unknown", "unrecognised file type, 7 B (first bytes 00 00 00 08 66 72 65)", None, None)),
    ("mp4-moov", b"\x00\x00\x01\x00moov" + bytes(248), ("ok", "mp4", "MP4 (ISO-BMFF) file, 256 B", None, None)),
    ("matroska", b"\x1a\x45\xdf\xa3\x93\x42\x82\x88matroska",
     ("ok", "matroska", "Matroska/WebM file, 16 B", None, None)),
    ("avi", b"RIFF\x08\x00\x00\x00AVI LIST", ("ok", "avi", "AVI file, 16 B", None, None)),
    ("riff-wave", b"RIFF\x24\x00\x00\x00WAVEfmt ",
     ("ok", "unknown", "unrecognised file type, 16 B (first bytes 52 49 46 46 24 00 00 00)", None, None)),
]


@pytest.mark.parametrize("name,data,expected", CORPUS, ids=[c[0] for c in CORPUS])
def test_exact_sniff_of_corpus(tmp_path, name, data, expected):
    p = tmp_path / f"{name}.mp4"
    p.write_bytes(data)
    kind, magic, detail, lfs_oid, lfs_size = expected
    size = len(data)
    assert sniff(p) == Sniff(kind, size, magic, detail, lfs_oid, lfs_size)


def test_text_up_to_one_mib_is_a_placeholder(tmp_path):
    at_limit = tmp_path / "at.mp4"
    at_limit.write_bytes(b"a" * TEXT_MAX_SIZE)
    assert sniff(at_limit) == Sniff("text", TEXT_MAX_SIZE, None, f"text file (1.0 MB), not data: '{A59}'")
    over = tmp_path / "over.mp4"
    over.write_bytes(b"a" * (TEXT_MAX_SIZE + 1))
    assert sniff(over) == Sniff(
        "ok", TEXT_MAX_SIZE + 1, "unknown", "unrecognised file type, 1.0 MB (first bytes 61 61 61 61 61 61 61 61)"
    )


def test_human_size_at_unit_boundaries():
    assert human_size(0) == "0 B"
    assert human_size(999) == "999 B"
    assert human_size(1000) == "1.0 kB"
    assert human_size(999_949) == "999.9 kB"
    assert human_size(999_950) == "1.0 MB"  # would print as "1000.0 kB"
    assert human_size(10**9) == "1.0 GB"
    assert human_size(999_949_999_999) == "999.9 GB"
    assert human_size(10**12) == "1.0 TB"
    assert human_size(10**15) == "1.0 PB"
    assert human_size(10**18) == "1000.0 PB"  # PB is the largest unit


def test_exact_io_problems(tmp_path, monkeypatch):
    assert sniff(str(tmp_path) + "/a\x00b.mp4") == Sniff("unreadable", None, None, "invalid path: embedded null byte")
    assert sniff(tmp_path) == Sniff("unreadable", None, None, "is a directory, not a file")
    fifo = tmp_path / "pipe.mp4"
    os.mkfifo(fifo)
    assert sniff(fifo) == Sniff("unreadable", None, None, "not a regular file (FIFO)")
    monkeypatch.chdir(tmp_path)  # a socket path must be short: bind a relative one
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.bind("sock.mp4")
        assert sniff(tmp_path / "sock.mp4") == Sniff("unreadable", None, None, "not a regular file (socket)")
    assert sniff(os.devnull) == Sniff("unreadable", None, None, "not a regular file (device)")
    parent = tmp_path / "file.mp4"
    parent.write_bytes(b"PAR1")
    assert sniff(parent / "child.mp4") == Sniff(
        "missing", None, None, "file not found (a parent path is a file, not a folder)"
    )
    too_long = tmp_path / ("x" * 300)
    assert sniff(too_long) == Sniff(
        "unreadable", None, None, f"cannot read: {os.strerror(errno.ENAMETOOLONG)}"
    )
    link = tmp_path / "link.mp4"
    link.symlink_to("gone.mp4")
    assert sniff(link) == Sniff("missing", None, None, "dangling symlink (points to gone.mp4)")


def test_file_that_reads_shorter_than_its_stat_size_is_empty():
    """A file whose ``stat`` size promises bytes that a read does not deliver (the same as a file truncated
    between ``stat`` and ``read``) is empty. sysfs ``uevent`` attributes of bus-less devices report 4096 bytes
    and read as nothing."""
    for path in sorted(glob.glob("/sys/devices/*/uevent")):
        try:
            if os.stat(path).st_size > 0:
                with open(path, "rb") as fh:
                    if fh.read(1) == b"":
                        break
        except OSError:
            continue
    else:
        pytest.skip("no sysfs file that stats as non-empty and reads as empty")
    assert sniff(path) == Sniff("empty", 0, None, "empty file (0 bytes)")
