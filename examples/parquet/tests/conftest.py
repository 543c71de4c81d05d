"""Fixtures of the Parquet tests: the server's address (QUEENS_ADDR, host:port) for Count,
and what the system suite's tests/system/parquet.rs wrote with `queens enumerate` for n = 12:
one file (QUEENS_PARQUET_FILE) and a folder of 4 shard files (QUEENS_PARQUET_DIR). Run by
hand, after writing those with the commands in README.md:

    QUEENS_ADDR=127.0.0.1:50051 QUEENS_PARQUET_FILE=n12.parquet QUEENS_PARQUET_DIR=n12 \\
        .venv/bin/python -m pytest tests
"""

from __future__ import annotations

import os
import pathlib

import pytest


@pytest.fixture(scope="session")
def queens():
    """A queens-client connected to the server under test."""
    from queens_client import Client

    with Client(os.environ["QUEENS_ADDR"], token=None) as client:
        yield client


@pytest.fixture(scope="session")
def single() -> pathlib.Path:
    """The one file of n = 12 (`--out n12.parquet`)."""
    return pathlib.Path(os.environ["QUEENS_PARQUET_FILE"])


@pytest.fixture(scope="session")
def folder() -> pathlib.Path:
    """The folder of n = 12's 4 shard files (`--shards 4 --out n12 --format parquet`)."""
    return pathlib.Path(os.environ["QUEENS_PARQUET_DIR"])
