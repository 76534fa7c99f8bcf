"""Tests of the command line as a whole: documented flags, fuzzed inputs through every command."""
