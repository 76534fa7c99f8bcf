"""Test and benchmark helpers shipped with lrtool: synthetic LeRobot datasets (:mod:`.synth`).

Not used by any command; the test suite, ``fixtures/generate.py`` and ``benchmarks/`` build their datasets here.
"""
