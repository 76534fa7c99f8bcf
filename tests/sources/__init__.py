"""Tests of the source tree itself: cited sources can be opened, the import layers hold."""
