"""Tests of the modules at the package root that files are read and written through: _io, _contain, _lock,
_safeout, _parallel, _memory, _env, _arrow_numpy and sniff."""
