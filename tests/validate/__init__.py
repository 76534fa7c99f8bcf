"""Tests of validate as a whole: lerobot_tools.validate, report.py (rendering, baselines) and findings.py (grouping)."""
