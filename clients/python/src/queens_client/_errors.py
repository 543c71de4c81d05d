"""QueensError: a refused or failed call, with its gRPC status code, message and details."""

from __future__ import annotations

from typing import Any

import grpc
from google.protobuf import any_pb2
from google.protobuf.message import DecodeError

# The trailing metadata key where the server puts a google.rpc.Status with its details
# (ErrorInfo, RetryInfo, BadRequest: docs/contract.md, "Error details").
_DETAILS_KEY = "grpc-status-details-bin"


class QueensError(Exception):
    """A call the server refused or that failed on the way.

    `code` is the gRPC status (grpc.StatusCode.INVALID_ARGUMENT, UNAUTHENTICATED, ...),
    `message` the server's text (for a bad request it starts with the field at fault, e.g.
    "n: ..."), `details` the google.rpc detail messages as `google.protobuf.Any` (unpack
    them with googleapis-common-protos' `error_details_pb2`; empty when none were sent)."""

    def __init__(
        self,
        code: grpc.StatusCode,
        message: str,
        details: list[any_pb2.Any] | None = None,
    ) -> None:
        super().__init__(f"{code.name}: {message}")
        self.code = code
        self.message = message
        self.details = details or []

    @classmethod
    def from_rpc_error(cls, error: grpc.RpcError) -> QueensError:
        """The QueensError of a failed grpcio call."""
        code = error.code() if hasattr(error, "code") else grpc.StatusCode.UNKNOWN
        message = (error.details() if hasattr(error, "details") else None) or ""
        trailers: Any = (
            error.trailing_metadata() if hasattr(error, "trailing_metadata") else ()
        )
        details: list[any_pb2.Any] = []
        for key, value in trailers or ():
            if key == _DETAILS_KEY and isinstance(value, bytes):
                details = _status_details(value)
        return cls(code, message, details)


def _status_details(status: bytes) -> list[any_pb2.Any]:
    """The `details` (field 3, repeated Any) of a serialized google.rpc.Status, read from the
    wire format so that no googleapis package is needed; [] if it does not parse."""
    details: list[any_pb2.Any] = []
    position = 0
    try:
        while position < len(status):
            key, position = _varint(status, position)
            kind = key & 7
            if kind == 0:
                _, position = _varint(status, position)
            elif kind == 2:
                size, position = _varint(status, position)
                value = status[position : position + size]
                position += size
                if key >> 3 == 3:
                    details.append(any_pb2.Any.FromString(value))
            else:  # google.rpc.Status has varint and length-delimited fields only
                return []
    except (IndexError, DecodeError):  # a damaged trailer: no details
        return []
    return details


def _varint(data: bytes, position: int) -> tuple[int, int]:
    value, shift = 0, 0
    while True:
        byte = data[position]
        position += 1
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return value, position
        shift += 7
