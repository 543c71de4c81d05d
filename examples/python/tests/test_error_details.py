"""A refusal's details, decoded with grpcio-status: the google.rpc messages the server puts
in `grpc-status-details-bin` (docs/contract.md, "Error details"), so that a program reads the
limit, how long to wait and the field at fault without parsing the message.

Uses the server at QUEENS_ADDR, whatever its limits: it holds Enumerate streams until the
server refuses one more, so the refusal names the limit the streams reached.
"""

from __future__ import annotations

import grpc
import pytest
from google.rpc import error_details_pb2
from grpc_status import rpc_status

# Searches one client can hold before it is refused, at most: one per core of a large machine.
MOST_HELD = 512


def details(error: grpc.RpcError) -> list:
    """The status details of a refused call, each unpacked into its google.rpc message."""
    status = rpc_status.from_call(error)
    assert status is not None, f"no details in {error}"
    assert status.code == error.code().value[0]
    assert status.message == error.details()
    kinds = {
        m.DESCRIPTOR.full_name: m
        for m in (
            error_details_pb2.ErrorInfo,
            error_details_pb2.RetryInfo,
            error_details_pb2.BadRequest,
        )
    }
    unpacked = []
    for detail in status.details:
        kind = kinds[detail.TypeName()]
        message = kind()
        assert detail.Unpack(message)
        unpacked.append(message)
    return unpacked


def one(found: list, kind):
    """The one detail of this kind."""
    matching = [d for d in found if isinstance(d, kind)]
    assert len(matching) == 1, found
    return matching[0]


def test_a_busy_server_names_its_limit_and_when_to_retry(stub, pb):
    held = []
    try:
        for _ in range(MOST_HELD):
            stream = stub.Enumerate(pb.EnumerateRequest(n=18, compact=True), timeout=60)
            try:
                next(stream)  # the stream holds its search slot from here on
            except grpc.RpcError as error:
                refused = error
                break
            held.append(stream)
        else:
            pytest.fail(f"{MOST_HELD} streams held and none refused")
        assert refused.code() == grpc.StatusCode.RESOURCE_EXHAUSTED, refused
        found = details(refused)
        info = one(found, error_details_pb2.ErrorInfo)
        assert info.domain == "queens.v1"
        # The server's slots, or this client's share of them: the streams held fill it.
        flag = {
            "MAX_SEARCHES": "--max-searches",
            "MAX_SEARCHES_PER_CLIENT": "--max-searches-per-client",
        }[info.reason]
        assert dict(info.metadata) == {"flag": flag, "limit": str(len(held))}
        assert flag in refused.details()
        retry = one(found, error_details_pb2.RetryInfo)
        assert retry.retry_delay.ToTimedelta().total_seconds() == 1.0
        # A long Count (n = 13; up to 12 a count is small and takes no slot) is refused
        # the same way while the streams hold the slots.
        with pytest.raises(grpc.RpcError) as caught:
            stub.Count(pb.CountRequest(n=13), timeout=30)
        assert one(details(caught.value), error_details_pb2.ErrorInfo) == info
    finally:
        for stream in held:
            stream.cancel()


@pytest.mark.parametrize(
    "fields,field",
    [
        ({"n": 0}, "n"),
        ({"n": 8, "fixed": [(1, 2), (0, 9)]}, "fixed[1].column"),
        ({"n": 8, "fixed": [(1, 2), (1, 2)]}, "fixed[1]"),
        ({"n": 4, "start_after": [0, 1, 4, 0]}, "start_after[2]"),
        ({"n": 8, "shard": (3, 3)}, "shard.index"),
    ],
    ids=["n", "fixed column", "fixed twice", "start_after entry", "shard index"],
)
def test_a_bad_request_names_the_field(stub, pb, fields, field):
    request = dict(fields)
    if "fixed" in request:
        request["fixed"] = [pb.Square(row=r, column=c) for r, c in request["fixed"]]
    if "shard" in request:
        index, count = request["shard"]
        request["shard"] = pb.Shard(index=index, count=count)
    with pytest.raises(grpc.RpcError) as caught:
        list(stub.Enumerate(pb.EnumerateRequest(**request), timeout=30))
    error = caught.value
    assert error.code() == grpc.StatusCode.INVALID_ARGUMENT, error
    found = details(error)
    violations = one(found, error_details_pb2.BadRequest).field_violations
    assert [(v.field, v.description) for v in violations] == [(field, error.details())]
    # Waiting does not help a bad request: no RetryInfo.
    assert not [d for d in found if isinstance(d, error_details_pb2.RetryInfo)]
