"""Tests of lerobot_tools.reshard and the verifications that guard every rewrite of data (reshard, repair, prefetch)."""
