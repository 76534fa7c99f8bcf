"""Tests of scale-out (lerobot_tools.distributed and every command's --shard / --executor)."""
