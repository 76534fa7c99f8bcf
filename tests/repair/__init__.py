"""Tests of lerobot_tools.repair: the fixes, backups and --undo, judging a fix on a shadow, moved files, timestamps."""
