"""Client: one channel to a queens server and the calls of queens.v1.Queens over it, with
typed results, boards as numpy arrays and QueensError for every failed call; read_table
hands the Flight reading to _flight.py (imported when first used: pyarrow is an extra).
Not here: the plain types (_types.py), QueensError (_errors.py)."""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

import grpc
import numpy as np

from ._errors import QueensError
from ._front import decode as _front_decode
from ._types import Boards, Shard, Square
from .pb import queens_pb2 as pb

if TYPE_CHECKING:
    import pyarrow

    from ._flight import FlightReader

# Reconnect to a restarted server within seconds, not gRPC's default of up to 2 minutes.
_CHANNEL_OPTIONS = (("grpc.max_reconnect_backoff_ms", 2000),)
# The compression algorithms grpcio accepts on a channel, as a bitset (bit 0 identity, 1
# deflate, 2 gzip): the channel advertises them in grpc-accept-encoding. Identity alone: the
# server answers uncompressed.
_IDENTITY_ONLY = ("grpc.compression_enabled_algorithms_bitset", 1)

# The calls of queens.v1.Queens (proto/queens.proto): name -> (streams its replies, request
# message, reply message).
_METHODS = {
    "Enumerate": (True, pb.EnumerateRequest, pb.EnumerateResponse),
    "Count": (False, pb.CountRequest, pb.CountResponse),
    "CountProgress": (True, pb.CountRequest, pb.CountUpdate),
}

_T = TypeVar("_T")

# Enumerate's layouts of packed boards, by the name enumerate() takes.
_LAYOUTS = {
    "records": pb.PACKED_LAYOUT_RECORDS,
    "front_coded": pb.PACKED_LAYOUT_FRONT_CODED,
}


@dataclasses.dataclass(frozen=True)
class CountResult:
    """The answer of Count. All are Python ints: a uint64 never overflows."""

    #: Solutions of the (shard of the) search.
    solutions: int
    #: Symmetry classes among them; None when queens were fixed, or on a shard whose
    #: classes are not its own (then turn_fixed is set).
    fundamental: int | None
    #: Set exactly where fundamental is None on a shard of a plain board (n = 16 to 28):
    #: over all shards, (sum of solutions + sum of turn_fixed) / 8 is the whole's classes.
    turn_fixed: int | None


@dataclasses.dataclass(frozen=True)
class Progress:
    """One update of CountProgress: partial sums while the count runs, the exact result in
    the last update (done = True)."""

    solutions: int
    fundamental: int | None
    turn_fixed: int | None
    subproblems_done: int
    subproblems_total: int
    elapsed_seconds: float
    done: bool


class Client:
    """A connection to a queens server; use it as a context manager (or call close()).

    target is "HOST:PORT", "http://HOST:PORT" (plaintext) or "https://HOST:PORT" (TLS). TLS
    is on with https://, tls=True or a ca_cert: the PEM certificate(s) to trust, as bytes or
    a file path (default: the system's roots); server_name overrides the name checked
    against the certificate. With a token, every call carries "authorization: Bearer
    <token>" (a server started with --auth-tokens). With accept_compression (the default)
    the server may compress its responses with any codec grpcio takes (gzip, deflate), which
    grpcio undoes before the arrays are made: the same boards in fewer bytes on the wire;
    accept_compression=False asks for them uncompressed (on a fast link, it saves both ends
    the CPU). Every failed call raises QueensError.
    """

    def __init__(
        self,
        target: str,
        *,
        tls: bool = False,
        ca_cert: bytes | str | os.PathLike[str] | None = None,
        token: str | None = None,
        server_name: str | None = None,
        accept_compression: bool = True,
    ) -> None:
        self.address, tls = _address_of(target, tls or ca_cert is not None)
        self.tls = tls
        self.token = token
        self.server_name = server_name
        self.root_certificates = _read_pem(ca_cert)
        options: list[tuple[str, Any]] = list(_CHANNEL_OPTIONS)
        if server_name:
            options.append(("grpc.ssl_target_name_override", server_name))
        if not accept_compression:
            options.append(_IDENTITY_ONLY)
        if tls:
            credentials = grpc.ssl_channel_credentials(self.root_certificates)
            channel = grpc.secure_channel(self.address, credentials, options)
        else:
            channel = grpc.insecure_channel(self.address, options)
        self.channel: grpc.Channel = channel
        if token:
            # An interceptor rather than call credentials: gRPC sends those over TLS only.
            channel = grpc.intercept_channel(channel, _BearerToken(token))
        #: The raw calls (grpc multi-callables), for what this class does not wrap.
        self.stub = Stub(channel)
        self._flight: FlightReader | None = None

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def close(self) -> None:
        """Closes the channel (and the Flight connection, if one was opened)."""
        if self._flight is not None:
            self._flight.close()
            self._flight = None
        self.channel.close()

    def count(
        self,
        n: int,
        *,
        fixed: Sequence[Square] = (),
        shard: Shard | None = None,
        timeout: float | None = None,
    ) -> CountResult:
        """Counts the solutions of the n×n board that hold the queens `fixed`, or of one
        shard of the search, without sending boards."""
        request = pb.CountRequest(n=n, fixed=_squares(fixed), shard=_shard(shard))
        try:
            reply = self.stub.Count(request, timeout=timeout)
        except grpc.RpcError as error:
            raise QueensError.from_rpc_error(error) from error
        return CountResult(
            solutions=reply.solutions,
            fundamental=_optional(reply, "fundamental"),
            turn_fixed=_optional(reply, "turn_fixed"),
        )

    def count_progress(
        self,
        n: int,
        *,
        fixed: Sequence[Square] = (),
        shard: Shard | None = None,
        timeout: float | None = None,
    ) -> Iterator[Progress]:
        """Counts like count(), yielding progress a few times a second; the last update has
        done = True and the exact result. Leaving the loop early cancels the count."""
        request = pb.CountRequest(n=n, fixed=_squares(fixed), shard=_shard(shard))
        yield from _stream(self.stub.CountProgress(request, timeout=timeout), _progress)

    def enumerate(
        self,
        n: int,
        *,
        fundamental: bool = False,
        fixed: Sequence[Square] = (),
        shard: Shard | None = None,
        start_after: Sequence[int] | None = None,
        limit: int = 0,
        batch_size: int = 0,
        packed: bool = True,
        layout: str = "records",
        timeout: float | None = None,
    ) -> Iterator[Boards]:
        """Streams the solutions of the n×n board in lexicographic order of their column
        vectors, one (boards, n) uint8 array per response message.

        With packed (the default) the server sends each message's boards as n-byte
        records, viewed in place by numpy (read-only arrays, no copy); packed=False asks
        for Board messages, converted one by one (slower; for servers without packed).
        fundamental: one board per symmetry class; start_after: only boards after this
        column vector (to resume); limit: at most that many boards (0: all); batch_size:
        boards per message (0: the server's choice, about 64 KiB). layout="front_coded" asks
        for packed boards without the prefix each shares with the one before (about a
        quarter of the bytes at n = 16), decoded here into the same arrays (writable, at
        about 0.1 µs a board of numpy): for links slower than that, such as 100 Mbit/s;
        "records" (the default) is the fastest on fast links. Leaving the loop early cancels
        the search."""
        if layout not in _LAYOUTS:
            raise ValueError(f"layout must be one of {', '.join(_LAYOUTS)}, not {layout!r}")
        request = pb.EnumerateRequest(
            n=n,
            fundamental=fundamental,
            fixed=_squares(fixed),
            shard=_shard(shard),
            start_after=start_after or (),
            limit=limit,
            batch_size=batch_size,
            compact=True,
            packed=packed,
            layout=_LAYOUTS[layout],
        )

        def nonempty(reply: pb.EnumerateResponse) -> Boards | None:
            boards = boards_of(reply, n)
            return boards if len(boards) else None

        yield from _stream(self.stub.Enumerate(request, timeout=timeout), nonempty)

    def read_table(
        self,
        n: int,
        *,
        fundamental: bool = False,
        fixed: Sequence[Square] = (),
        shard: Shard | None = None,
        start_after: Sequence[int] | None = None,
        limit: int = 0,
        batch_size: int = 0,
        timeout: float | None = None,
    ) -> pyarrow.Table:
        """The boards of enumerate() as a pyarrow Table, read from the server's Arrow
        Flight service (same port, same token and TLS): one column `board`,
        FixedSizeList<UInt8>[n]. `table.column("board").combine_chunks().values.to_numpy()
        .reshape(-1, n)` is the (boards, n) array. Needs the extra: pip install
        'queens-client[arrow]'."""
        from ._flight import FlightReader, command

        if self._flight is None:
            self._flight = FlightReader(
                self.address,
                tls=self.tls,
                root_certificates=self.root_certificates,
                server_name=self.server_name,
                token=self.token,
            )
        question = command(
            n,
            fundamental=fundamental,
            fixed=fixed,
            shard=shard,
            start_after=start_after,
            limit=limit,
            batch_size=batch_size,
        )
        return self._flight.read(question, timeout)


class Stub:
    """The calls of queens.v1.Queens on a channel as grpc multi-callables, like a generated
    QueensStub: `stub.Count(request, timeout=...)`, `stub.Count.future(...)`, iterate
    `stub.Enumerate(request)`. They raise grpc.RpcError, not QueensError."""

    Enumerate: grpc.UnaryStreamMultiCallable
    Count: grpc.UnaryUnaryMultiCallable
    CountProgress: grpc.UnaryStreamMultiCallable

    def __init__(self, channel: grpc.Channel) -> None:
        for name, (streams, request, reply) in _METHODS.items():
            open_call = channel.unary_stream if streams else channel.unary_unary
            method = open_call(
                f"/queens.v1.Queens/{name}",
                request_serializer=request.SerializeToString,
                response_deserializer=reply.FromString,
            )
            setattr(self, name, method)


def _stream(call: Any, convert: Callable[[Any], _T | None]) -> Iterator[_T]:
    """The replies of a streaming call, converted (None: skipped). A failure raises
    QueensError; leaving the loop early cancels the call (a no-op once it ended)."""
    try:
        for reply in call:
            item = convert(reply)
            if item is not None:
                yield item
    except grpc.RpcError as error:
        raise QueensError.from_rpc_error(error) from error
    finally:
        call.cancel()


def _progress(update: pb.CountUpdate) -> Progress:
    return Progress(
        solutions=update.solutions,
        fundamental=_optional(update, "fundamental"),
        turn_fixed=_optional(update, "turn_fixed"),
        subproblems_done=update.subproblems_done,
        subproblems_total=update.subproblems_total,
        elapsed_seconds=update.elapsed_seconds,
        done=update.done,
    )


def boards_of(reply: pb.EnumerateResponse, n: int) -> Boards:
    """The boards of one Enumerate response as a (boards, n) uint8 array. A packed response
    is viewed in place (numpy.frombuffer: no copy, read-only); front-coded boards are
    decoded; Board messages are converted one by one."""
    if reply.HasField("front_coded"):
        return _front_decode(n, reply.front_coded.boards, reply.front_coded.data)
    if reply.packed:
        if len(reply.packed) % n:
            raise ValueError(
                f"the server sent {len(reply.packed)} packed bytes, not a whole number of "
                f"{n}-byte boards"
            )
        return np.frombuffer(reply.packed, dtype=np.uint8).reshape(-1, n)
    if reply.boards:
        columns = [b.columns for b in reply.boards]
        return np.array(columns, dtype=np.uint8).reshape(-1, n)
    return np.empty((0, n), dtype=np.uint8)


def _address_of(target: str, tls: bool) -> tuple[str, bool]:
    """HOST:PORT of target and whether to use TLS (https:// asks for it)."""
    scheme, separator, rest = target.partition("://")
    if not separator:
        return target, tls
    if scheme.lower() == "https":
        return rest.rstrip("/"), True
    if scheme.lower() == "http":
        return rest.rstrip("/"), tls
    raise ValueError(f"{target}: give HOST:PORT, http://HOST:PORT or https://HOST:PORT")


def _read_pem(ca_cert: bytes | str | os.PathLike[str] | None) -> bytes | None:
    if ca_cert is None or isinstance(ca_cert, bytes):
        return ca_cert
    with open(ca_cert, "rb") as file:
        return file.read()


def _squares(fixed: Sequence[Square]) -> list[pb.Square]:
    return [pb.Square(row=row, column=column) for row, column in fixed]


def _shard(shard: Shard | None) -> pb.Shard | None:
    return None if shard is None else pb.Shard(index=shard[0], count=shard[1])


def _optional(message: Any, field: str) -> int | None:
    return getattr(message, field) if message.HasField(field) else None


class _BearerToken(grpc.UnaryUnaryClientInterceptor, grpc.UnaryStreamClientInterceptor):
    """Adds "authorization: Bearer <token>" to the metadata of every call."""

    def __init__(self, token: str) -> None:
        self.header = ("authorization", f"Bearer {token}")

    def _with_token(self, details: grpc.ClientCallDetails) -> grpc.ClientCallDetails:
        return _CallDetails(
            method=details.method,
            timeout=details.timeout,
            metadata=[*(details.metadata or ()), self.header],
            credentials=details.credentials,
            wait_for_ready=details.wait_for_ready,
            compression=details.compression,
        )

    def intercept_unary_unary(self, continuation, details, request):  # type: ignore[no-untyped-def]
        return continuation(self._with_token(details), request)

    def intercept_unary_stream(self, continuation, details, request):  # type: ignore[no-untyped-def]
        return continuation(self._with_token(details), request)


class _CallDetails(grpc.ClientCallDetails):
    """A call's details with other metadata (grpc.ClientCallDetails has no constructor)."""

    def __init__(self, **fields: Any) -> None:
        self.__dict__.update(fields)
