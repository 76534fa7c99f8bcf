"""Tests of lerobot_tools.reencode."""
