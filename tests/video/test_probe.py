"""Header-only video probe and MP4 box walker on real clips encoded by the system ffmpeg."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests import videoclips

from lerobot_tools.errors import DatasetError
from lerobot_tools.video.mp4 import walk_mp4
from lerobot_tools.video.probe import VideoProbe, av1_decoders, gop_stats, probe_video, pyav_available

if videoclips.FFMPEG is None:
    pytest.skip("ffmpeg not on PATH: the video tests need it to encode real clips", allow_module_level=True)

av = pytest.importorskip("av", reason="PyAV is a dependency of lerobot-tools")

# name -> (codec, profile, pix_fmt, bit_depth, chroma, width, height)
EXPECTED = {
    "h264": ("h264", "High", "yuv420p", 8, "420", 96, 64),
    "h264_faststart": ("h264", "High", "yuv420p", 8, "420", 64, 64),
    "h264_frag": ("h264", "High", "yuv420p", 8, "420", 64, 64),
    "h264_444": ("h264", "High 4:4:4 Predictive", "yuv444p", 8, "444", 64, 64),
    "hevc8": ("hevc", "Main", "yuv420p", 8, "420", 64, 64),
    "hevc10": ("hevc", "Main 10", "yuv420p10le", 10, "420", 64, 64),
    "av1": ("av1", "Main", "yuv420p", 8, "420", 64, 64),
    "mpeg4": ("mpeg4", "Simple Profile", "yuv420p", 8, "420", 64, 64),
    "vp9_mkv": ("vp9", "Profile 0", "yuv420p", 8, "420", 64, 64),
}
MP4_CLIPS = [n for n in EXPECTED if not n.endswith("_mkv")]


@pytest.fixture(scope="session")
def clips(tmp_path_factory) -> dict[str, Path]:
    """All test clips, encoded once per session (about 1-2 s)."""
    folder = tmp_path_factory.mktemp("clips")
    names = [n for n, kw in videoclips.TEST_CLIPS.items() if videoclips.has_encoder(kw["codec"])]
    return videoclips.make_test_clips(folder, names)  # clips whose encoder is missing are skipped by clip()


def clip(clips, name) -> Path:
    if name not in clips:
        pytest.skip(f"this ffmpeg lacks the encoder {videoclips.TEST_CLIPS[name]['codec']}")
    return clips[name]


def decoded_frames(path) -> list[bool]:
    """Decode every frame with PyAV; returns the key_frame flag of each frame in presentation order."""
    with av.open(str(path)) as c:
        return [bool(f.key_frame) for f in c.decode(video=0)]


# --- header facts per codec ------------------------------------------------------------------------------


@pytest.mark.parametrize("name", list(EXPECTED))
def test_probe_reads_codec_facts(clips, name):
    path = clip(clips, name)
    r = probe_video(path)
    codec, profile, pix_fmt, depth, chroma, w, h = EXPECTED[name]
    assert r.status == "ok", r.problem
    assert r.problem is None
    assert (r.codec, r.profile, r.pix_fmt, r.bit_depth, r.chroma) == (codec, profile, pix_fmt, depth, chroma)
    assert (r.width, r.height) == (w, h)
    assert r.size == path.stat().st_size
    assert r.fps == pytest.approx(10.0)
    assert r.duration_s == pytest.approx(2.0, abs=0.11)
    assert r.container == ("matroska" if name.endswith("_mkv") else "mp4")
    if name == "h264_frag":
        assert r.frame_count is None  # no index in the header; gop="demux" finds it
    elif name.endswith("_mkv"):
        assert r.frame_count in (None, 20)
    else:
        assert r.frame_count == 20


@pytest.mark.parametrize("name", MP4_CLIPS)
def test_box_walk_without_pyav_matches_pyav(clips, name):
    """The pure-Python layer (avcC SPS, hvcC, av1C, esds) agrees with FFmpeg on codec/profile/depth/chroma."""
    path = clip(clips, name)
    fast, full = probe_video(path, pyav=False), probe_video(path)
    assert fast.status == "ok"
    assert fast.pix_fmt is None  # only PyAV knows the pix_fmt name
    for attr in ("codec", "profile", "bit_depth", "chroma", "width", "height", "frame_count", "faststart", "fragmented"):
        assert getattr(fast, attr) == getattr(full, attr), attr
    if name == "h264_frag":
        assert fast.fps is None and full.fps == pytest.approx(10.0)  # fragmented: rate comes from FFmpeg
    else:
        assert fast.fps == pytest.approx(full.fps)


@pytest.mark.parametrize("name", [n for n in MP4_CLIPS if n != "h264_frag"])
def test_box_walk_frame_count_and_keyframes_match_decoded_frames(clips, name):
    path = clip(clips, name)
    boxes = walk_mp4(path)
    keys = decoded_frames(path)
    assert boxes.frame_count == len(keys) == 20
    stss = boxes.keyframes if boxes.keyframes is not None else list(range(boxes.frame_count))
    # Every sync sample decodes as a key frame (stss is in decode order; these short clips have no
    # open-GOP reordering around a keyframe, so decode and display indices agree).
    assert all(keys[i] for i in stss)
    assert stss[0] == 0
    assert boxes.timescale and boxes.duration_s == pytest.approx(2.0)


def test_keyframe_interval_of_gop5_clip(clips):
    path = clip(clips, "h264")
    boxes = walk_mp4(path)
    assert boxes.keyframes == [0, 5, 10, 15]
    assert [i for i, k in enumerate(decoded_frames(path)) if k] == [0, 5, 10, 15]
    r = probe_video(path)
    assert (r.gop_max, r.gop_mean) == (5, 5.0)
    assert boxes.codec_fourcc == "avc1"


def test_single_keyframe_clip_gop_is_the_whole_clip(clips):
    r = probe_video(clip(clips, "h264_faststart"))  # x264 default keyint 250 > 20 frames
    assert (r.gop_max, r.gop_mean) == (20, 20.0)


def test_faststart_flags(clips):
    end, start = walk_mp4(clip(clips, "h264")), walk_mp4(clip(clips, "h264_faststart"))
    assert end.faststart is False and end.top_level.index("mdat") < end.top_level.index("moov")
    assert start.faststart is True and start.top_level.index("moov") < start.top_level.index("mdat")
    assert [b[0] for b in videoclips.top_level_boxes(clip(clips, "h264"))] == end.top_level
    for b in (end, start):
        assert b.has_moov and not b.fragmented and not b.truncated and b.missing_bytes == 0
    assert probe_video(clip(clips, "h264")).faststart is False
    assert probe_video(clip(clips, "h264_faststart")).faststart is True


def test_fragmented_mp4(clips):
    path = clip(clips, "h264_frag")
    boxes = walk_mp4(path)
    assert boxes.fragmented and "moof" in boxes.top_level
    assert boxes.frame_count is None and boxes.keyframes is None and boxes.fps is None
    r = probe_video(path)
    assert r.status == "ok" and r.fragmented is True
    assert r.gop_max is None and r.frame_count is None
    assert any(w.startswith("fragmented MP4") for w in r.warnings)
    d = probe_video(path, gop="demux")
    assert d.frame_count == len(decoded_frames(path)) == 20
    assert (d.gop_max, d.gop_mean) == (5, 5.0)


def test_matroska_gop_needs_demux(clips):
    path = clip(clips, "vp9_mkv")
    r = probe_video(path)
    assert r.gop_max is None and r.faststart is None and r.fragmented is None
    d = probe_video(path, gop="demux")
    keys = decoded_frames(path)
    assert d.frame_count == len(keys) == 20
    assert d.gop_max == 5 and [i for i, k in enumerate(keys) if k] == [0, 5, 10, 15]
    # Without PyAV a Matroska file is only known by its magic.
    fast = probe_video(path, pyav=False)
    assert (fast.status, fast.container, fast.codec) == ("ok", "matroska", None)
    with pytest.raises(DatasetError, match="not an MP4"):
        walk_mp4(path)


def test_largesize_and_size0_boxes(clips, tmp_path):
    big = videoclips.make_largesize_mdat(clip(clips, "h264"), tmp_path / "largesize.mp4")
    boxes = walk_mp4(big)
    assert boxes.top_level == ["ftyp", "mdat", "moov"] and not boxes.truncated
    assert boxes.frame_count == len(decoded_frames(big)) == 20  # FFmpeg plays the rewritten file too
    assert probe_video(big).status == "ok"
    to_eof = videoclips.make_size0_mdat(clip(clips, "h264_faststart"), tmp_path / "size0.mp4")
    boxes = walk_mp4(to_eof)
    assert boxes.top_level[-1] == "mdat" and not boxes.truncated and boxes.frame_count == 20


# --- damaged files -------------------------------------------------------------------------------------


def test_truncated_in_mdat_of_faststart_file(clips, tmp_path):
    src = clip(clips, "h264_faststart")
    full = src.stat().st_size
    cut = videoclips.truncate_copy(src, tmp_path / "cut.mp4", full - 3000)
    boxes = walk_mp4(cut)
    assert boxes.truncated and boxes.truncated_box == "mdat" and boxes.missing_bytes == 3000
    assert boxes.has_moov and boxes.frame_count == 20  # the index survived
    r = probe_video(cut)
    assert r.status == "broken" and r.truncated
    assert r.problem.startswith("truncated: mdat runs 3000 bytes past end of file (header intact")
    assert r.codec == "h264"  # PyAV still opens the header of a cut faststart file
    # The damage is real: decoding the cut file yields fewer frames than the header promises.
    try:
        n = len(decoded_frames(cut))
    except av.error.FFmpegError:
        n = -1
    assert n < 20


def test_truncated_before_moov_is_broken(clips, tmp_path):
    src = clip(clips, "h264")  # moov at the end
    moov_at = next(off for typ, off, _ in videoclips.top_level_boxes(src) if typ == "moov")
    cut = videoclips.truncate_copy(src, tmp_path / "cut.mp4", moov_at - 1000)
    boxes = walk_mp4(cut)
    assert not boxes.has_moov and boxes.truncated and boxes.missing_bytes == 1000 and boxes.faststart is None
    r = probe_video(cut)
    assert r.status == "broken"
    assert r.problem == "truncated: no moov box (cut before the index); mdat runs 1000 bytes past end of file"
    with pytest.raises(av.error.FFmpegError):  # FFmpeg agrees: "moov atom not found"
        av.open(str(cut)).close()


def test_truncated_inside_moov(clips, tmp_path):
    src = clip(clips, "h264")
    cut = videoclips.truncate_copy(src, tmp_path / "cut.mp4", src.stat().st_size - 10)
    r = probe_video(cut, pyav=False)
    assert r.status == "broken" and r.problem == "truncated: moov box runs 10 bytes past end of file (frame index incomplete)"


def test_truncated_trailing_box_is_playable_with_warning(clips, tmp_path):
    src = clip(clips, "h264")
    p = tmp_path / "trailing.mp4"
    p.write_bytes(src.read_bytes() + b"\x00\x00\x01\x00free" + b"\x00" * 16)  # 'free' box of 256 bytes, 24 present
    r = probe_video(p)
    assert r.status == "ok" and r.truncated
    assert r.warnings == ["truncated-but-playable: trailing 'free' box runs 232 bytes past end of file; index and media data are intact"]
    assert len(decoded_frames(p)) == 20


def test_garbage_after_boxes_is_a_warning(clips, tmp_path):
    p = tmp_path / "junk.mp4"
    p.write_bytes(clip(clips, "h264").read_bytes() + b"\x01\x02\x03\x04\x05\x06\x07\x08\x09")
    r = probe_video(p, pyav=False)
    assert r.status == "ok" and any("garbage where a box header should be" in w for w in r.warnings)


@pytest.mark.parametrize(
    "kind, status, problem_start",
    [
        ("empty", "placeholder", "empty file (0 bytes)"),
        ("lfs-pointer", "placeholder", "Git LFS pointer (real file 3.1 MB"),
        ("html", "placeholder", "HTML page"),
        ("json", "placeholder", "JSON body"),
        ("xml", "placeholder", "XML error body"),
        ("text", "placeholder", "text file"),
        ("random", "broken", "not a video: unrecognised file type"),
    ],
)
@pytest.mark.parametrize("pyav", [True, False])
def test_placeholders_and_junk_never_raise(tmp_path, kind, status, problem_start, pyav):
    path = videoclips.make_placeholders(tmp_path)[kind]
    r = probe_video(path, pyav=pyav)
    assert r.status == status
    assert r.problem.startswith(problem_start), r.problem
    assert "\n" not in r.problem
    assert r.size == path.stat().st_size
    assert r.codec is None


def test_random_bytes_are_not_handed_to_ffmpeg(tmp_path):
    # no container magic: FFmpeg is not asked (it opens images as one-frame videos), the sniffer's reason stands
    r = probe_video(videoclips.make_placeholders(tmp_path)["random"])
    assert r.problem.startswith("not a video: unrecognised file type") and "FFmpeg" not in r.problem


@pytest.mark.parametrize("kind", ["empty", "lfs-pointer", "html", "random"])
def test_walk_mp4_rejects_non_mp4(tmp_path, kind):
    path = videoclips.make_placeholders(tmp_path)[kind]
    with pytest.raises(DatasetError) as err:
        walk_mp4(path)
    assert str(path) in str(err.value) and "not an MP4" in str(err.value)


def test_walk_mp4_missing_and_directory(tmp_path):
    for path in (tmp_path / "nope.mp4", tmp_path):
        with pytest.raises(DatasetError) as err:
            walk_mp4(path)
        assert str(path) in str(err.value)


def test_missing_directory_and_parquet(tmp_path):
    r = probe_video(tmp_path / "nope.mp4")
    assert (r.status, r.problem, r.size) == ("missing", "file not found", None)
    r = probe_video(tmp_path)
    assert r.status == "broken" and "directory" in r.problem
    (tmp_path / "x.mp4").write_bytes(b"PAR1" + b"\x00" * 100)
    r = probe_video(tmp_path / "x.mp4")
    assert r.status == "broken" and "Parquet" in r.problem


def test_mp4_without_video_track(tmp_path):
    p = tmp_path / "audio.mp4"
    subprocess.run([videoclips.FFMPEG, "-v", "error", "-f", "lavfi", "-i", "sine=d=0.2", "-c:a", "aac", str(p)],
                   check=True, capture_output=True)
    r = probe_video(p)
    assert r.status == "broken" and "no video track" in r.problem


def test_mutated_files_never_raise(clips, tmp_path):
    """Seeded random byte flips and cuts in real MP4s: walk_mp4 raises only DatasetError, probe never raises."""
    import random

    rng = random.Random(20240611)
    sources = [clip(clips, n).read_bytes() for n in ("h264", "h264_faststart", "hevc10", "av1", "mpeg4")]
    statuses = set()
    for i in range(300):
        data = bytearray(rng.choice(sources))
        moov = max(0, data.find(b"moov") - 4)
        for _ in range(rng.randint(1, 8)):
            data[rng.randrange(moov, len(data))] = rng.randrange(256)
        if rng.random() < 0.2:
            data = data[: rng.randrange(len(data))]
        p = tmp_path / "mutated.mp4"
        p.write_bytes(bytes(data))
        try:
            walk_mp4(p)
        except DatasetError:
            pass
        r = probe_video(p, pyav=i % 6 == 0, gop="demux" if i % 6 == 0 else "header")
        assert r.status in {"ok", "broken"}
        assert not (r.problem or "").startswith("could not probe"), r.problem
        statuses.add(r.status)
    assert statuses == {"ok", "broken"}


def test_bad_arguments_raise():
    with pytest.raises(ValueError):
        probe_video("x.mp4", gop="fast")
    with pytest.raises(ValueError):
        probe_video("x.mp4", pyav=False, gop="demux")


# --- API details ---------------------------------------------------------------------------------------


def test_to_dict_is_json_serialisable(clips):
    r = probe_video(clip(clips, "hevc10"))
    d = r.to_dict()
    assert json.loads(json.dumps(d)) == d
    assert set(d) >= {"path", "size", "status", "problem", "container", "faststart", "fragmented", "truncated",
                      "codec", "profile", "pix_fmt", "bit_depth", "chroma", "width", "height", "fps",
                      "duration_s", "frame_count", "gop_max", "gop_mean", "warnings"}
    assert isinstance(r, VideoProbe) and r.ok


def test_probe_without_pyav_does_not_import_av(clips):
    code = (
        "import json, sys\n"
        "from lerobot_tools.video.probe import probe_video\n"
        f"r = probe_video({str(clip(clips, 'av1'))!r}, pyav=False)\n"
        f"m = probe_video({str(clip(clips, 'vp9_mkv'))!r}, pyav=False)\n"
        "print(json.dumps([r.codec, r.frame_count, m.container, 'av' in sys.modules]))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True).stdout
    assert json.loads(out) == ["av1", 20, "matroska", False]


def test_pyav_helpers():
    assert pyav_available()
    decoders = av1_decoders()
    assert decoders, "PyAV's FFmpeg should have at least one AV1 decoder"
    for name in decoders:
        codec = av.Codec(name, "r")
        assert codec.canonical_name == "av1" and codec.is_decoder
    assert not {"av1_cuvid", "av1_qsv", "av1_amf"} & set(decoders)


def test_av1_clip_decodes_with_a_listed_decoder(clips):
    path = clip(clips, "av1")
    with av.open(str(path)) as c:
        stream = c.streams.video[0]
        assert stream.codec_context.name in av1_decoders()  # the decoder FFmpeg picked by default
        assert sum(1 for _ in c.decode(stream)) == 20


def test_gop_stats():
    assert gop_stats([0, 5, 10, 15], 20) == (5, 5.0)
    assert gop_stats([0, 5, 10, 15], 18) == (5, 4.5)
    assert gop_stats([0, 30, 32], 40) == (30, 40 / 3)
    assert gop_stats(None, 10) == (1, 1.0)  # no stss box: every frame is a keyframe
    assert gop_stats([3], 10) == (7, 10.0)  # leading non-key frames form a run too
    assert gop_stats([0], 0) == (None, None)
    assert gop_stats([0], None) == (None, None)


def test_probe_is_header_only(clips, tmp_path):
    """The probe must not read the media data: zeroing the mdat payload leaves the result unchanged."""
    src = clip(clips, "h264_faststart")
    data = bytearray(src.read_bytes())
    typ, off, size = videoclips.top_level_boxes(src)[-1]
    assert typ == "mdat"
    data[off + 8 : off + size] = bytes(size - 8)
    zeroed = tmp_path / "zeroed.mp4"
    zeroed.write_bytes(bytes(data))
    a, b = probe_video(src, pyav=False).to_dict(), probe_video(zeroed, pyav=False).to_dict()
    a.pop("path"), b.pop("path")
    assert a == b
    assert os.path.getsize(zeroed) == os.path.getsize(src)
