"""Checks shared by the tests."""

from __future__ import annotations

import itertools
import pathlib
import subprocess
import time

import pytest


def wait_for_lines(
    path: pathlib.Path, at_least: int, process: subprocess.Popen, timeout: float = 30
) -> int:
    """Waits until the file holds at least that many lines (while process runs)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        lines = path.read_bytes().count(b"\n") if path.exists() else 0
        if lines >= at_least:
            return lines
        assert process.poll() is None, (
            f"the client exited ({process.returncode}) before writing {at_least} boards"
        )
        time.sleep(0.002)
    pytest.fail(f"no {at_least} boards in {path} after {timeout} s")


def is_solution(columns: list[int]) -> bool:
    n = len(columns)
    return all(0 <= c < n for c in columns) and all(
        columns[i] != columns[j] and abs(columns[i] - columns[j]) != j - i
        for i in range(n)
        for j in range(i + 1, n)
    )


def read_boards(path: pathlib.Path) -> list[list[int]]:
    text = path.read_text()
    assert text == "" or text.endswith("\n"), "the file ends in a partial line"
    return [[int(c) for c in line.split(",")] for line in text.splitlines()]


def assert_complete(boards: list[list[int]], n: int, expected: int) -> None:
    """Exactly `expected` distinct valid boards of size n, in strictly increasing order."""
    assert len(boards) == expected
    assert all(len(b) == n and is_solution(b) for b in boards)
    assert all(a < b for a, b in itertools.pairwise(boards)), "not strictly increasing"
    assert len({tuple(b) for b in boards}) == expected
