"""lerobot_tools.sniff on real files: placeholders, real Parquet/MP4/Matroska/AVI, and I/O problems."""

from __future__ import annotations

import os

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


@pytest.mark.skipif(hasattr(os, "geteuid") and os.geteuid() == 0, reason="root bypasses file permissions")
def test_permission_denied(tmp_path):
    p = tmp_path / "secret.mp4"
    p.write_bytes(b"\x00\x00\x00\x18ftypisom")
    p.chmod(0)
    try:
        s = sniff(p)
    finally:
        p.chmod(0o644)
    assert s.kind == "unreadable" and "permission denied" in s.detail


def test_sniff_accepts_str_and_pathlike(placeholders):
    p = placeholders["json"]
    assert sniff(str(p)) == sniff(p)


def test_human_size():
    assert human_size(132) == "132 B"
    assert human_size(1234) == "1.2 kB"
    assert human_size(3_123_456) == "3.1 MB"
    assert human_size(999_999) == "1.0 MB"
    assert human_size(None) == "unknown size"
