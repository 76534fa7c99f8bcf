"""The NVDEC verdict table against the documented cells (NVIDIA Video Codec SDK 13.0 NVDEC Application Note,
MIG User Guide), GPU name resolution, MIG slices and the torchcodec caveats. Pure Python, no GPU needed."""

from __future__ import annotations

import pytest

from lerobot_tools.errors import UsageError
from lerobot_tools.video.nvdec import (
    NO,
    NVDEC_CLASSES,
    ROWS,
    UNKNOWN,
    YES,
    canonical_codec,
    lookup_gpu,
    nvdec_class,
    row_for,
    table_markdown,
    torchcodec_caveat,
    verdict,
)

SD = dict(width=640, height=480)  # a size every codec accepts


def v(gpu: str, codec: str, chroma: str = "420", depth: int = 8, **kw):
    return verdict(lookup_gpu(gpu), codec, chroma, depth, **{**SD, **kw})


# --- GPU models -> chip / compute capability (MIG User Guide "Supported GPUs", datasheets) ---------------------

@pytest.mark.parametrize("name, model, chip, cc, cls", [
    ("V100", "V100", "GV100", (7, 0), "volta"),
    ("T4", "T4", "TU104", (7, 5), "turing"),
    ("A10", "A10", "GA102", (8, 6), "ga10x_ada"),
    ("A10G", "A10G", "GA102", (8, 6), "ga10x_ada"),
    ("A16", "A16", "GA107", (8, 6), "ga10x_ada"),
    ("A40", "A40", "GA102", (8, 6), "ga10x_ada"),
    ("A100", "A100", "GA100", (8, 0), "turing"),
    ("A30", "A30", "GA100", (8, 0), "turing"),
    ("L4", "L4", "AD104", (8, 9), "ga10x_ada"),
    ("L40", "L40", "AD102", (8, 9), "ga10x_ada"),
    ("L40S", "L40S", "AD102", (8, 9), "ga10x_ada"),
    ("RTX 3090", "RTX 3090", "GA102", (8, 6), "ga10x_ada"),
    ("RTX 4090", "RTX 4090", "AD102", (8, 9), "ga10x_ada"),
    ("RTX 5090", "RTX 5090", "GB202", (12, 0), "blackwell"),
    ("H100", "H100", "GH100", (9, 0), "turing"),
    ("H200", "H200", "GH100", (9, 0), "turing"),
    ("GH200", "GH200", "GH100", (9, 0), "turing"),
    ("B200", "B200", "GB100", (10, 0), "blackwell"),
    ("GB200", "GB200", "GB100", (10, 0), "blackwell"),
    ("RTX PRO 6000", "RTX PRO 6000", "GB202", (12, 0), "blackwell"),
    # driver-reported names and loose spellings
    ("NVIDIA H100 80GB HBM3", "H100", "GH100", (9, 0), "turing"),
    ("NVIDIA A100-SXM4-80GB", "A100", "GA100", (8, 0), "turing"),
    ("Tesla T4", "T4", "TU104", (7, 5), "turing"),
    ("NVIDIA A10G", "A10G", "GA102", (8, 6), "ga10x_ada"),
    ("NVIDIA GeForce RTX 4090", "RTX 4090", "AD102", (8, 9), "ga10x_ada"),
    ("rtx4090", "RTX 4090", "AD102", (8, 9), "ga10x_ada"),
    ("a10g", "A10G", "GA102", (8, 6), "ga10x_ada"),
    ("NVIDIA L40S", "L40S", "AD102", (8, 9), "ga10x_ada"),
    ("NVIDIA H100 NVL", "H100", "GH100", (9, 0), "turing"),
    ("NVIDIA GH200 480GB", "GH200", "GH100", (9, 0), "turing"),
    ("NVIDIA RTX PRO 6000 Blackwell Server Edition", "RTX PRO 6000", "GB202", (12, 0), "blackwell"),
])
def test_gpu_models(name, model, chip, cc, cls):
    g = lookup_gpu(name)
    assert (g.model, g.chip, g.cc, g.nvdec_class) == (model, chip, cc, cls)


def test_compute_capability_only():
    g = lookup_gpu("cc8.6")
    assert g.model is None and g.cc == (8, 6) and g.nvdec_class == "ga10x_ada"
    assert lookup_gpu("sm_90").nvdec_class == "turing"
    assert lookup_gpu("12.0").nvdec_class == "blackwell"


def test_unknown_gpu_model_is_a_clear_usage_error():
    with pytest.raises(UsageError) as exc:
        lookup_gpu("Z9000")
    msg = str(exc.value)
    assert "unknown GPU model 'Z9000'" in msg and "H100" in msg and "cc8.6" in msg and "\n" not in msg
    with pytest.raises(UsageError):
        lookup_gpu("")
    # a real device whose name is not in the table is judged by its compute capability
    g = lookup_gpu("NVIDIA Future GPU", origin="torch.cuda", cc=(8, 9), strict=False)
    assert g.nvdec_class == "ga10x_ada" and g.notes


def test_nvdec_class_boundaries():
    # S1 footnote 3: GA10x = every Ampere chip except GA100 (8.0); GH100 (9.0) shares the Turing/GA100 column
    assert nvdec_class((8, 0)) == "turing" and nvdec_class((9, 0)) == "turing"
    assert nvdec_class((8, 6)) == nvdec_class((8, 7)) == nvdec_class((8, 9)) == "ga10x_ada"
    assert nvdec_class((7, 0)) == "volta" and nvdec_class((7, 5)) == "turing"
    assert nvdec_class((10, 0)) == nvdec_class((12, 0)) == "blackwell"
    assert nvdec_class((5, 0)) == "maxwell1" and nvdec_class((5, 2)) == "maxwell2" and nvdec_class((6, 1)) == "pascal"
    assert nvdec_class((3, 7)) is None and nvdec_class(None) is None
    assert list(NVDEC_CLASSES) == ["maxwell1", "maxwell2", "pascal", "volta", "turing", "ga10x_ada", "blackwell"]


# --- AV1: the A100/H100/H200 question -------------------------------------------------------------------------

@pytest.mark.parametrize("gpu", ["A100", "A30", "H100", "H200", "GH200", "T4", "V100"])
def test_av1_not_on_turing_ga100_hopper_volta(gpu):
    r = v(gpu, "av1")
    assert r.decodable == NO and r.row == "av1"
    assert v(gpu, "av1", depth=10).decodable == NO


def test_av1_reason_names_the_chips():
    r = v("H100", "av1")
    assert r.confidence == "high" and "GA100" in r.reason and "GH100" in r.reason and "Video Codec SDK 13.0" in r.source


@pytest.mark.parametrize("gpu", ["L4", "A10G", "A10", "A16", "A40", "L40S", "RTX 3090", "RTX 4090", "RTX 5090",
                                 "RTX PRO 6000"])
def test_av1_on_ga10x_ada_blackwell(gpu):
    assert v(gpu, "av1").decodable == YES
    assert v(gpu, "av1", depth=10).decodable == YES


def test_av1_on_b200_is_yes_with_medium_confidence():
    r = v("B200", "av1")
    assert r.decodable == YES and r.confidence == "medium"  # S1 does not separate GB100 from GB20x


@pytest.mark.parametrize("gpu", ["L4", "RTX 5090", "H100"])
def test_av1_444_and_12bit_nowhere(gpu):
    assert v(gpu, "av1", chroma="444").decodable == NO
    assert v(gpu, "av1", depth=12).decodable == NO


# --- H.264 ----------------------------------------------------------------------------------------------------

ALL = ["V100", "T4", "A100", "A10G", "L4", "H100", "H200", "B200", "RTX 5090"]


@pytest.mark.parametrize("gpu", ALL)
def test_h264_444_no_everywhere(gpu):
    r = v(gpu, "h264", chroma="444")
    assert r.decodable == NO and r.row == "h264_444"


@pytest.mark.parametrize("gpu", ALL)
def test_h264_8bit_420_everywhere(gpu):
    assert v(gpu, "h264").decodable == YES


@pytest.mark.parametrize("gpu, expected", [("V100", NO), ("T4", NO), ("A100", NO), ("L4", NO), ("H100", NO),
                                           ("H200", NO), ("B200", YES), ("RTX 5090", YES), ("RTX PRO 6000", YES)])
def test_h264_10bit_only_blackwell(gpu, expected):
    assert v(gpu, "h264", depth=10).decodable == expected
    assert v(gpu, "h264", chroma="422").decodable == expected


# --- HEVC -----------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("gpu, expected", [("V100", NO), ("T4", YES), ("A100", YES), ("A10G", YES), ("L4", YES),
                                           ("H100", YES), ("B200", YES)])
def test_hevc_444_from_turing_not_v100(gpu, expected):
    assert v(gpu, "hevc", chroma="444").decodable == expected


@pytest.mark.parametrize("gpu", ["V100", "T4", "A100", "H100", "L4"])
def test_hevc_420_8_and_10_bit(gpu):
    assert v(gpu, "hevc").decodable == YES and v(gpu, "hevc", depth=10).decodable == YES


def test_hevc_422_blackwell_only():
    assert v("H100", "hevc", chroma="422", depth=10).decodable == NO
    assert v("B200", "hevc", chroma="422", depth=10).decodable == YES


def test_medium_confidence_cells_say_so():
    assert v("H100", "hevc", chroma="444", depth=10).confidence == "medium"  # S1 row gives no bit depth
    assert v("H100", "vp9", depth=10).confidence == "medium"  # S1 lists VP9 Profile 0 only
    assert v("H100", "hevc", chroma="444").confidence == "high"


# --- other codecs ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("gpu", ALL)
def test_mpeg4_part2_everywhere(gpu):
    assert v(gpu, "mpeg4").decodable == YES


def test_vp9_and_non_nvdec_codecs():
    assert v("H100", "vp9").decodable == YES
    assert v("H100", "vp9", chroma="444").decodable == NO
    for codec in ("mjpeg", "prores", "ffv1", "rawvideo"):
        r = v("H100", codec)
        assert r.decodable == NO and "not an NVDEC codec" in r.reason


def test_select_gpus_are_unknown():
    # S1: HEVC on 2nd-gen Maxwell "present in select GPUs"
    r = verdict(lookup_gpu("cc5.2"), "hevc", "420", 8, 640, 480)
    assert r.decodable == UNKNOWN and "select" in r.reason
    assert verdict(lookup_gpu("cc5.0"), "hevc", "420", 8, 640, 480).decodable == NO
    assert verdict(lookup_gpu("cc3.7"), "h264", "420", 8, 640, 480).decodable == UNKNOWN


# --- sizes (cuvidGetDecoderCaps limits) -----------------------------------------------------------------------

def test_size_limits():
    assert v("H100", "hevc", width=64, height=64).decodable == NO  # HEVC minimum 144x144
    assert v("H100", "hevc", width=144, height=144).decodable == YES
    assert v("L4", "av1", width=64, height=64).decodable == NO  # AV1 minimum 128x128
    assert v("H100", "h264", width=64, height=64).decodable == YES  # H.264 minimum 48x16
    assert v("H100", "h264", width=7680, height=4320).decodable == NO  # H.264 max 4096 before Blackwell
    assert v("B200", "h264", width=7680, height=4320).decodable == YES
    assert v("H100", "hevc", width=7680, height=4320).decodable == YES
    r = v("H100", "hevc", width=64, height=64)
    assert "144x144" in r.reason and r.confidence == "medium"


# --- MIG ------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["A100:1g.5gb", "A100 1g.5gb", "NVIDIA A100-SXM4-40GB MIG 1g.5gb",
                                  "A100-80GB:1g.10gb", "A30:1g.6gb"])
def test_mig_slices_without_nvdec(name):
    g = lookup_gpu(name)
    assert g.mig_profile is not None and g.nvdec_count == 0
    for codec in ("h264", "hevc", "mpeg4"):
        r = verdict(g, codec, "420", 8, 640, 480)
        assert r.decodable == NO and "0 NVDEC" in r.reason and "+me" in r.reason


@pytest.mark.parametrize("name, count", [("A100:1g.5gb+me", 1), ("A100:7g.40gb", 5), ("A100-40GB:1g.10gb", 1),
                                         ("A30:4g.24gb", 4), ("H100:1g.10gb", 1), ("H100:7g.80gb", 7)])
def test_mig_slices_with_nvdec(name, count):
    g = lookup_gpu(name)
    assert g.nvdec_count == count
    assert verdict(g, "h264", "420", 8, 640, 480).decodable == YES


def test_mig_ambiguous_a100_1g10gb():
    # 1g.10gb is the smallest (0 NVDEC) slice on A100-80GB but has 1 NVDEC on A100-40GB
    g = lookup_gpu("A100:1g.10gb")
    assert g.nvdec_count is None and any("A100-80GB" in n for n in g.notes)
    assert verdict(g, "h264", "420", 8, 640, 480).decodable == YES  # the hardware cell; the count is unknown


def test_mig_needs_ampere():
    with pytest.raises(UsageError):
        lookup_gpu("V100:1g.5gb")


# --- torchcodec caveats (S4) ----------------------------------------------------------------------------------

def test_torchcodec_444_caveat_before_0_17():
    r = verdict(lookup_gpu("H100"), "hevc", "444", 8, 640, 480, torchcodec_version="0.13.0+cpu")
    assert r.decodable == YES and r.library_note and "0.17" in r.library_note
    assert torchcodec_caveat("hevc", "444", 8, "0.17.0") is None
    assert torchcodec_caveat("hevc", "444", 8, None) is not None
    assert torchcodec_caveat("h264", "420", 8, "0.13.0") is None
    assert "does not send" in torchcodec_caveat("mpeg2video", "420", 8, "0.17.0")


# --- helpers --------------------------------------------------------------------------------------------------

def test_canonical_codec_names():
    assert canonical_codec("libsvtav1") == canonical_codec("av01") == "av1"
    assert canonical_codec("h265") == canonical_codec("hvc1") == "hevc"
    assert canonical_codec("avc1") == canonical_codec("libx264") == "h264"
    assert canonical_codec("mp4v") == "mpeg4" and canonical_codec(None) is None


def test_rows_and_markdown_cover_every_class():
    for row in ROWS.values():
        assert set(row.marks) == set(NVDEC_CLASSES)
    md = table_markdown()
    assert md.count("\n") == len(ROWS) + 2 and "AV1 Main" in md
    assert row_for("h264", "gray", 8).id == "h264" and row_for("hevc", None, None).id == "hevc"
    assert row_for("mjpeg", "420", 8) is None
