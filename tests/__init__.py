"""lrtool's test suite (a package so that its helper modules import as ``tests.hubserver`` and ``tests.videoclips``)."""
