"""Tests of lerobot_tools.testing (the synthetic dataset writer)."""
