"""Fixtures of the prefetch tests.

* ``hub_server``: a started :class:`tests.hubserver.HubServer` (real sockets on 127.0.0.1), stopped after the test.
"""

from __future__ import annotations

import pytest

from tests.hubserver import HubServer


@pytest.fixture
def hub_server():
    """A started :class:`HubServer` (page size 1000, no LFS), stopped after the test."""
    srv = HubServer().start()
    try:
        yield srv
    finally:
        srv.stop()
