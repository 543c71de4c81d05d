"""Fixtures of the data-tools tests: the server's address (QUEENS_ADDR, host:port, set by the
system suite's tests/system/flight.rs) and a client of the package queens-client
(clients/python), for the packed Enumerate stream and the Count the Flight results are
checked against. Run by hand:

    QUEENS_ADDR=127.0.0.1:50051 .venv/bin/python -m pytest tests
"""

from __future__ import annotations

import os

import pytest
from queens_client import Client


@pytest.fixture(scope="session")
def addr() -> str:
    """host:port of the server under test."""
    return os.environ["QUEENS_ADDR"]


@pytest.fixture(scope="session")
def queens(addr: str):
    """The package's Client of the server under test."""
    with Client(addr) as client:
        yield client
