"""Every INVALID_ARGUMENT case reaches Python as a grpc.RpcError naming the field at fault."""

from __future__ import annotations

import grpc
import pytest


def square(pb, row, column):
    return pb.Square(row=row, column=column)


# (name, request fields, the start of the message); one request per row of docs/contract.md's table.
CASES = [
    ("n zero", lambda pb: {"n": 0}, "n: "),
    ("n above the maximum", lambda pb: {"n": 33}, "n: "),
    (
        "fixed square off the board",
        lambda pb: {"n": 8, "fixed": [square(pb, 8, 0)]},
        "fixed[0]: ",
    ),
    (
        "fixed column off the board",
        lambda pb: {"n": 8, "fixed": [square(pb, 1, 2), square(pb, 0, 9)]},
        "fixed[1]: ",
    ),
    (
        "same fixed square twice",
        lambda pb: {"n": 8, "fixed": [square(pb, 1, 2), square(pb, 1, 2)]},
        "fixed[1]: ",
    ),
    (
        "shard index not below count",
        lambda pb: {"n": 8, "shard": pb.Shard(index=3, count=3)},
        "shard.index: ",
    ),
    (
        "shard index with count 1",
        lambda pb: {"n": 8, "shard": pb.Shard(index=1, count=1)},
        "shard.index: ",
    ),
    (
        "shard index with count 0",
        lambda pb: {"n": 8, "shard": pb.Shard(index=1, count=0)},
        "shard.index: ",
    ),
]
ENUMERATE_ONLY = [
    (
        "fundamental with fixed",
        lambda pb: {"n": 8, "fundamental": True, "fixed": [square(pb, 0, 0)]},
        "fundamental: ",
    ),
    (
        "start_after too short",
        lambda pb: {"n": 8, "start_after": [0, 1, 2]},
        "start_after: ",
    ),
    (
        "start_after too long",
        lambda pb: {"n": 4, "start_after": [0, 1, 2, 3, 0]},
        "start_after: ",
    ),
    (
        "start_after entry not below n",
        lambda pb: {"n": 4, "start_after": [0, 1, 4, 0]},
        "start_after[2]: ",
    ),
]


def expect_invalid(call, start: str) -> None:
    with pytest.raises(grpc.RpcError) as caught:
        call()
    error = caught.value
    assert error.code() == grpc.StatusCode.INVALID_ARGUMENT, error
    assert error.details().startswith(start), error.details()
    # Helpful: more than the field name.
    assert len(error.details()) > len(start) + 10, error.details()


@pytest.mark.parametrize(
    "fields,start",
    [c[1:] for c in CASES + ENUMERATE_ONLY],
    ids=[c[0] for c in CASES + ENUMERATE_ONLY],
)
def test_enumerate_refuses(stub, pb, fields, start):
    # A server-streaming call raises when its replies are read.
    expect_invalid(
        lambda: list(stub.Enumerate(pb.EnumerateRequest(**fields(pb)), timeout=30)),
        start,
    )


@pytest.mark.parametrize(
    "fields,start", [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_count_refuses(stub, pb, fields, start):
    expect_invalid(lambda: stub.Count(pb.CountRequest(**fields(pb)), timeout=30), start)


def test_the_client_reports_the_error(run_client, addr, tmp_path):
    out = tmp_path / "none.txt"
    done = run_client("--addr", addr, "enumerate", "33", "--out", str(out))
    assert done.returncode == 1
    assert "INVALID_ARGUMENT: n: " in done.stderr, done.stderr
    # No file, not even an empty FILE.part that a later run would take for a started download.
    assert list(tmp_path.iterdir()) == []
    done = run_client("--addr", addr, "count", "8", "--shard", "2/2")
    assert done.returncode == 1
    assert "INVALID_ARGUMENT: shard.index: " in done.stderr, done.stderr
