"""Fixtures of the data-tools tests: the server's address (QUEENS_ADDR, host:port, set by the
system suite's tests/system/flight.rs) and the Python example's client (stubs from the package queens-client), for
the packed Enumerate stream the Flight results are checked against. Run by hand:

    QUEENS_ADDR=127.0.0.1:50051 .venv/bin/python -m pytest tests
"""

from __future__ import annotations

import os
import pathlib
import sys

import pytest

EXAMPLES = pathlib.Path(__file__).resolve().parent.parent.parent
sys.path.insert(0, str(EXAMPLES / "python"))


@pytest.fixture(scope="session")
def addr() -> str:
    """host:port of the server under test."""
    return os.environ["QUEENS_ADDR"]


@pytest.fixture(scope="session")
def queens():
    """The Python example's client module (its stubs those of the installed package
    queens-client)."""
    import queens_client

    return queens_client
