"""Tests of lerobot_tools.smoke."""
