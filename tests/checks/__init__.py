"""Tests of lerobot_tools.checks (the check families, the catalogue, the engine, checks/stats).

A ``test_<family>_mutants.py`` holds one family to its exact findings (written to kill the mutants of that module).
"""
