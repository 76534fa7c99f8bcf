"""Real video clips and download placeholders for the video tests and benchmarks.

Clips are encoded by the system ``ffmpeg`` (``testsrc2`` pattern, so frames have motion and real
bitstreams); callers decide whether to skip when :data:`FFMPEG` is None. Nothing here imports pytest.
"""

from __future__ import annotations

import functools
import os
import shutil
import struct
import subprocess
from pathlib import Path

FFMPEG = shutil.which("ffmpeg")

# name -> encode() keyword arguments. Small clips for the tests: 64x64 (libsvtav1 needs >= 64x64) or 96x64.
TEST_CLIPS: dict[str, dict] = {
    "h264": dict(codec="libx264", size="96x64", gop=5),                       # moov at end, keyframe every 5
    "h264_faststart": dict(codec="libx264", movflags="+faststart"),
    "h264_frag": dict(codec="libx264", gop=5, movflags="frag_keyframe+empty_moov"),
    "h264_444": dict(codec="libx264", pix_fmt="yuv444p"),
    "hevc8": dict(codec="libx265"),
    "hevc10": dict(codec="libx265", pix_fmt="yuv420p10le"),
    "av1": dict(codec="libsvtav1"),
    "mpeg4": dict(codec="mpeg4"),
    "vp9_mkv": dict(codec="libvpx-vp9", gop=5, ext="mkv"),
}

# Extra encoder options keeping encodes quick and quiet.
_ENCODER_OPTS = {
    "libx265": ["-x265-params", "log-level=error"],
    "libsvtav1": ["-preset", "12"],
    "libvpx-vp9": ["-deadline", "realtime", "-cpu-used", "8"],
    "mpeg4": ["-q:v", "5"],
}


@functools.lru_cache(maxsize=None)
def has_encoder(name: str) -> bool:
    """True if the system ffmpeg lists encoder ``name``."""
    if not FFMPEG:
        return False
    out = subprocess.run([FFMPEG, "-hide_banner", "-encoders"], capture_output=True, text=True).stdout
    return any(line.split()[1:2] == [name] for line in out.splitlines() if line.strip())


def encode(out: str | os.PathLike, *, codec: str = "libx264", size: str = "64x64", frames: int = 20, fps: int = 10,
           pix_fmt: str = "yuv420p", gop: int | None = None, movflags: str | None = None,
           preset: str | None = None, ext: str | None = None) -> Path:
    """Encode ``frames`` frames of ffmpeg's ``testsrc2`` into ``out`` and return its path.

    Raises:
        subprocess.CalledProcessError: ffmpeg failed (its stderr is attached).
    """
    del ext  # the extension is part of ``out``
    out = Path(out)
    cmd = [FFMPEG or "ffmpeg", "-v", "error", "-y", "-f", "lavfi", "-i", f"testsrc2=s={size}:r={fps}",
           "-frames:v", str(frames), "-c:v", codec, "-pix_fmt", pix_fmt, *_ENCODER_OPTS.get(codec, [])]
    if preset:
        cmd += ["-preset", preset]
    if gop:
        cmd += ["-g", str(gop)]
    if movflags:
        cmd += ["-movflags", movflags]
    cmd.append(str(out))
    subprocess.run(cmd, check=True, capture_output=True)
    return out


def make_test_clips(folder: str | os.PathLike, names: list[str] | None = None) -> dict[str, Path]:
    """Encode the :data:`TEST_CLIPS` (or the named subset) into ``folder``; returns name -> path."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    clips = {}
    for name in names or list(TEST_CLIPS):
        kwargs = TEST_CLIPS[name]
        clips[name] = encode(folder / f"{name}.{kwargs.get('ext', 'mp4')}", **kwargs)
    return clips


def truncate_copy(src: str | os.PathLike, dst: str | os.PathLike, keep: int) -> Path:
    """Copy the first ``keep`` bytes of ``src`` to ``dst`` (a partial download)."""
    dst = Path(dst)
    with open(src, "rb") as fh:
        dst.write_bytes(fh.read(keep))
    return dst


def top_level_boxes(path: str | os.PathLike) -> list[tuple[str, int, int]]:
    """(type, offset, size) of the top-level boxes of an MP4, by a naive independent reader (32-bit sizes)."""
    data = Path(path).read_bytes()
    boxes, off = [], 0
    while off + 8 <= len(data):
        size, typ = struct.unpack_from(">I4s", data, off)
        size = size or len(data) - off
        boxes.append((typ.decode("latin-1"), off, size))
        off += size
    return boxes


def make_largesize_mdat(src: str | os.PathLike, dst: str | os.PathLike) -> Path:
    """Rewrite ``free`` + 32-bit ``mdat`` header (ffmpeg's layout for moov-at-end files) as one 16-byte
    64-bit ``mdat`` header (size field 1 + largesize). Byte offsets of the samples do not move."""
    data = bytearray(Path(src).read_bytes())
    boxes = top_level_boxes(src)
    for (t1, o1, s1), (t2, o2, s2) in zip(boxes, boxes[1:]):
        if t1 == "free" and s1 == 8 and t2 == "mdat":
            data[o1 : o1 + 16] = struct.pack(">I4sQ", 1, b"mdat", s2 + 8)
            Path(dst).write_bytes(bytes(data))
            return Path(dst)
    raise ValueError(f"{src}: no 8-byte 'free' box before 'mdat'")


def make_size0_mdat(src: str | os.PathLike, dst: str | os.PathLike) -> Path:
    """Set the size field of a faststart file's final ``mdat`` to 0 ("extends to end of file")."""
    data = bytearray(Path(src).read_bytes())
    typ, off, _ = top_level_boxes(src)[-1]
    if typ != "mdat":
        raise ValueError(f"{src}: last box is {typ}, not mdat")
    data[off : off + 4] = b"\x00\x00\x00\x00"
    Path(dst).write_bytes(bytes(data))
    return Path(dst)


LFS_POINTER = (
    "version https://git-lfs.github.com/spec/v1\n"
    "oid sha256:4d7a214614ab2935c943f9e0ff69d22eadbb8f32b1258daaa5e2ca24d17e2393\n"
    "size 3123456\n"
)
HTML_PAGE = (
    "<!DOCTYPE html>\n<html lang=\"en\">\n<head><meta charset=\"utf-8\"><title>429 Too Many Requests</title></head>\n"
    "<body><h1>Too Many Requests</h1><p>You have been rate-limited.</p></body>\n</html>\n"
)
JSON_BODY = '{"error":"Entry not found"}'
XML_BODY = (
    '<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>AccessDenied</Code><Message>Access Denied</Message>'
    "<RequestId>ABC123</RequestId></Error>\n"
)


def make_placeholders(folder: str | os.PathLike, suffix: str = ".mp4") -> dict[str, Path]:
    """Write the placeholders partial/failed downloads leave behind, each named ``<kind><suffix>``.

    Returns kind -> path for: ``empty``, ``lfs-pointer``, ``html``, ``json``, ``xml``, ``text``, ``random``
    (4 KiB of seeded pseudo-random bytes that start like no known container).
    """
    import random

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    rng = random.Random(1234)
    random_bytes = bytes([0xA7, 0x00, 0xFF, 0x13]) + bytes(rng.getrandbits(8) for _ in range(4092))
    contents: dict[str, bytes] = {
        "empty": b"",
        "lfs-pointer": LFS_POINTER.encode(),
        "html": HTML_PAGE.encode(),
        "json": JSON_BODY.encode(),
        "xml": XML_BODY.encode(),
        "text": b"Not Found\n",
        "random": random_bytes,
    }
    out = {}
    for kind, data in contents.items():
        path = folder / f"{kind}{suffix}"
        path.write_bytes(data)
        out[kind] = path
    return out
