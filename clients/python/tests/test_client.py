"""The API against a real server: Count, CountProgress, Enumerate into numpy, Flight into
pyarrow, tokens, TLS, and refusals as QueensError with the gRPC code and the field."""

from __future__ import annotations

import itertools
import time

import grpc
import numpy as np
import pytest
from conftest import env
from queens_client import Client, CountResult, QueensError

N10_BOARDS = 724  # OEIS A000170(10)


def is_solution(columns: list[int]) -> bool:
    n = len(columns)
    return sorted(columns) == list(range(n)) and all(
        abs(columns[i] - columns[j]) != j - i for i in range(n) for j in range(i + 1, n)
    )


def test_count(client: Client) -> None:
    assert client.count(8) == CountResult(solutions=92, fundamental=12, turn_fixed=None)
    with_queen = client.count(8, fixed=[(0, 0)])
    assert with_queen.solutions == 4
    assert with_queen.fundamental is None  # classes only without fixed queens
    halves = [client.count(8, shard=(i, 2)).solutions for i in range(2)]
    assert sum(halves) == 92


def test_count_progress_ends_with_the_total(client: Client) -> None:
    updates = list(client.count_progress(10))
    assert updates, "no update"
    last = updates[-1]
    assert last.done and not any(u.done for u in updates[:-1])
    assert (last.solutions, last.fundamental) == (N10_BOARDS, 92)
    assert last.subproblems_done == last.subproblems_total > 0


def test_enumerate_into_numpy(client: Client) -> None:
    arrays = list(client.enumerate(10, batch_size=100))
    # One array per message, each of at most batch_size boards (the server may send less).
    assert len(arrays) >= 8
    for boards in arrays:
        assert boards.dtype == np.uint8 and boards.ndim == 2 and boards.shape[1] == 10
        assert 0 < len(boards) <= 100
        # Viewed in place on the message's bytes, not copied.
        assert not boards.flags.owndata and not boards.flags.writeable
    everything = np.concatenate(arrays)
    assert everything.shape == (N10_BOARDS, 10)
    rows = [tuple(board) for board in everything.tolist()]
    assert all(is_solution(list(board)) for board in rows)
    assert all(a < b for a, b in itertools.pairwise(rows)), "not in lexicographic order"


def test_enumerate_options(client: Client) -> None:
    board_messages = np.concatenate(list(client.enumerate(8, packed=False)))
    packed = np.concatenate(list(client.enumerate(8)))
    assert np.array_equal(board_messages, packed) and len(packed) == 92
    fundamental = np.concatenate(list(client.enumerate(8, fundamental=True)))
    assert len(fundamental) == 12
    rest = np.concatenate(
        list(client.enumerate(8, start_after=packed[9].tolist(), limit=5))
    )
    assert np.array_equal(rest, packed[10:15])
    fixed = np.concatenate(list(client.enumerate(8, fixed=[(0, 0)])))
    assert len(fixed) == 4 and (fixed[:, 0] == 0).all()


def test_leaving_a_stream_early_is_fine(client: Client) -> None:
    first = next(client.enumerate(12, batch_size=10))
    assert first.shape[1] == 12 and 0 < len(first) <= 10
    # The stream was cancelled: once the server has seen it, its search slot is free again
    # (a client may hold one search at a time on a small machine).
    deadline = time.monotonic() + 10
    while True:
        try:
            assert client.count(6).solutions == 4
            break
        except QueensError as error:
            busy = error.code == grpc.StatusCode.RESOURCE_EXHAUSTED
            if not busy or time.monotonic() > deadline:
                raise
            time.sleep(0.05)


def test_flight_into_pyarrow(client: Client) -> None:
    table = client.read_table(8)
    assert table.num_rows == 92
    assert table.column_names == ["board"]
    boards = table.column("board").combine_chunks().values.to_numpy().reshape(-1, 8)
    assert np.array_equal(boards, np.concatenate(list(client.enumerate(8))))
    assert client.read_table(8, fundamental=True).num_rows == 12
    assert client.read_table(8, fixed=[(0, 0)], limit=3).num_rows == 3


def test_invalid_n_names_the_field(client: Client) -> None:
    for call in (
        lambda: client.count(0),
        lambda: list(client.count_progress(33)),
        lambda: list(client.enumerate(0)),
    ):
        with pytest.raises(QueensError) as raised:
            call()
        assert raised.value.code == grpc.StatusCode.INVALID_ARGUMENT
        assert raised.value.message.startswith("n: "), raised.value.message
        assert "INVALID_ARGUMENT" in str(raised.value)
    # The details the server adds: a google.rpc.BadRequest naming the field.
    with pytest.raises(QueensError) as raised:
        client.count(8, fixed=[(8, 0)])
    assert raised.value.message.startswith("fixed[0]: ")
    kinds = [detail.type_url.rsplit("/", 1)[-1] for detail in raised.value.details]
    assert "google.rpc.BadRequest" in kinds, kinds
    assert (
        b"fixed[0]" in raised.value.details[kinds.index("google.rpc.BadRequest")].value
    )


def test_flight_invalid_n_names_the_field(client: Client) -> None:
    with pytest.raises(QueensError) as raised:
        client.read_table(0)
    assert raised.value.code == grpc.StatusCode.INVALID_ARGUMENT
    assert raised.value.message.startswith("n: "), raised.value.message


def assert_all_calls_find_92(queens: Client) -> None:
    """Count, Enumerate and Flight each give n = 8's 92 solutions."""
    assert queens.count(8).solutions == 92
    assert sum(len(b) for b in queens.enumerate(8)) == 92
    assert queens.read_table(8).num_rows == 92


def test_tokens() -> None:
    addr, token = env("QUEENS_AUTH_ADDR"), env("QUEENS_TOKEN")
    with Client(f"http://{addr}", token=token) as queens:
        assert_all_calls_find_92(queens)
    for wrong in ("not-" + token, None):
        with Client(addr, token=wrong) as refused:
            calls = (
                lambda: refused.count(8),
                lambda: list(refused.enumerate(8)),
                lambda: refused.read_table(8),
            )
            for call in calls:
                with pytest.raises(QueensError) as raised:
                    call()
                error = raised.value
                assert error.code == grpc.StatusCode.UNAUTHENTICATED, error


def test_tls() -> None:
    addr, ca_cert = env("QUEENS_TLS_ADDR"), env("QUEENS_CA_CERT")
    with Client(f"https://{addr}", ca_cert=ca_cert) as queens:
        assert_all_calls_find_92(queens)
    with Client(addr, tls=True) as untrusted:  # the system's roots do not know the cert
        with pytest.raises(QueensError) as raised:
            untrusted.count(8, timeout=10)
        assert raised.value.code == grpc.StatusCode.UNAVAILABLE
