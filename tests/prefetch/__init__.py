"""Tests of lerobot_tools.prefetch against a real HTTP server (tests/hubserver.py) and olah."""
