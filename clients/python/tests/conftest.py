"""Fixtures of the package's tests: clients of the servers that tests/python_package.rs
starts, named by the environment. Run by hand, with the package installed (not from src/):

    QUEENS_ADDR=127.0.0.1:50051 python -m pytest tests

QUEENS_ADDR: a plain server. QUEENS_AUTH_ADDR and QUEENS_TOKEN: one started with
--auth-tokens and a token it accepts. QUEENS_TLS_ADDR and QUEENS_CA_CERT: one with TLS and
the certificate to trust. Tests whose server is not named fail rather than skip.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest
from queens_client import Client


def env(name: str) -> str:
    value = os.environ.get(name)
    if not value:
        pytest.fail(f"set {name} (see conftest.py)")
    return value


@pytest.fixture(scope="session")
def client() -> Iterator[Client]:
    with Client(env("QUEENS_ADDR")) as queens:
        yield queens
