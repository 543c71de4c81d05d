"""Reads the server's Arrow Flight service (the extra queens-client[arrow]): the question as
a JSON command ticket, DoGet into a pyarrow Table, Flight's errors as QueensError. It knows
the server by its address and connection settings, not by the Client (_client.py) that
imports this module."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import grpc

from ._errors import QueensError

if TYPE_CHECKING:
    import pyarrow

    from ._types import Shard, Square

try:
    import pyarrow
    import pyarrow.flight as flight
except ImportError as missing:  # pragma: no cover (the tests install the extra)
    raise ImportError(
        "reading Arrow Flight needs pyarrow: pip install 'queens-client[arrow]'"
    ) from missing

# pyarrow's exception classes for the gRPC codes the server answers with (pyarrow maps
# INVALID_ARGUMENT to ArrowInvalid and UNIMPLEMENTED to ArrowNotImplementedError).
_CODES: tuple[tuple[type[Exception], grpc.StatusCode], ...] = (
    (flight.FlightUnauthenticatedError, grpc.StatusCode.UNAUTHENTICATED),
    (flight.FlightUnauthorizedError, grpc.StatusCode.PERMISSION_DENIED),
    (flight.FlightTimedOutError, grpc.StatusCode.DEADLINE_EXCEEDED),
    (flight.FlightCancelledError, grpc.StatusCode.CANCELLED),
    (flight.FlightUnavailableError, grpc.StatusCode.UNAVAILABLE),
    (flight.FlightInternalError, grpc.StatusCode.INTERNAL),
    (pyarrow.ArrowInvalid, grpc.StatusCode.INVALID_ARGUMENT),
    (pyarrow.ArrowNotImplementedError, grpc.StatusCode.UNIMPLEMENTED),
)


def command(
    n: int,
    *,
    fundamental: bool,
    fixed: Sequence[Square],
    shard: Shard | None,
    start_after: Sequence[int] | None,
    limit: int,
    batch_size: int,
) -> bytes:
    """The Flight ticket of an Enumerate question: its JSON, default fields left out."""
    question: dict[str, Any] = {"n": n}
    if fundamental:
        question["fundamental"] = True
    if fixed:
        question["fixed"] = [[row, column] for row, column in fixed]
    if shard is not None:
        question["shard"] = {"index": shard[0], "count": shard[1]}
    if start_after is not None:
        question["start_after"] = list(start_after)
    if limit:
        question["limit"] = limit
    if batch_size:
        question["batch_size"] = batch_size
    return json.dumps(question).encode()


class FlightReader:
    """One Flight connection to a server (HOST:PORT), with its TLS settings and token."""

    def __init__(
        self,
        address: str,
        *,
        tls: bool,
        root_certificates: bytes | None,
        server_name: str | None,
        token: str | None,
    ) -> None:
        scheme = "grpc+tls" if tls else "grpc+tcp"
        options: dict[str, Any] = {}
        if root_certificates is not None:
            options["tls_root_certs"] = root_certificates
        if server_name:
            options["override_hostname"] = server_name
        self.connection = flight.FlightClient(f"{scheme}://{address}", **options)
        self.headers = []
        if token:
            self.headers.append((b"authorization", f"Bearer {token}".encode()))

    def read(self, ticket: bytes, timeout: float | None) -> pyarrow.Table:
        """Every record batch of DoGet(ticket) as one table."""
        options = flight.FlightCallOptions(headers=self.headers, timeout=timeout)
        try:
            return self.connection.do_get(flight.Ticket(ticket), options).read_all()
        except pyarrow.ArrowException as error:
            raise _queens_error(error) from error

    def close(self) -> None:
        self.connection.close()


def _queens_error(error: Exception) -> QueensError:
    """The QueensError of a failed Flight call: its code from the exception's class, its
    message the server's (pyarrow prefixes and suffixes its own words)."""
    code = next(
        (code for kind, code in _CODES if isinstance(error, kind)),
        grpc.StatusCode.UNKNOWN,
    )
    message = str(error)
    marker = "with message: "
    if marker in message:
        message = message.split(marker, 1)[1]
    message = message.split(". Detail:", 1)[0].split("\ngRPC client debug context", 1)[
        0
    ]
    return QueensError(code, message.strip())
