"""Tests of lerobot_tools.dataset: targets and subsets, mixtures, path templates, parquet footers, episode tables."""
