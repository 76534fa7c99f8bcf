"""lerobot_tools._env: the one place environment variables are read."""

from __future__ import annotations

import pytest

from lerobot_tools import _env


@pytest.mark.parametrize("raw,want", [("12", 12), (" 7 ", 7), ("0", None), ("-3", None), ("many", None), ("", None)])
def test_video_decoder_cache_size(monkeypatch, raw, want):
    monkeypatch.setenv(_env.VIDEO_DECODER_CACHE_SIZE, raw)
    assert _env.video_decoder_cache_size() == want


def test_video_decoder_cache_size_unset_and_driver_capabilities(monkeypatch):
    monkeypatch.delenv(_env.VIDEO_DECODER_CACHE_SIZE, raising=False)
    monkeypatch.setenv("NVIDIA_DRIVER_CAPABILITIES", "compute,video,utility")
    assert _env.video_decoder_cache_size() is None
    assert _env.nvidia_driver_capabilities() == "compute,video,utility"
