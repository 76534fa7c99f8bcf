"""Tests of lerobot_tools.diagnose (lrtool diagnose-decode)."""
