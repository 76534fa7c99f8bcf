"""Tests of lerobot_tools.video: the header probe, frame timestamps, the NVDEC table, files that are not videos."""
