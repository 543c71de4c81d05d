#!/usr/bin/env python3
"""A small client of the queens gRPC service (queens.v1.Queens).

    queens_client.py [CONNECTION] enumerate N [CONNECTION] [--out FILE] [--limit K]
                     [--start-after C,C,...] [--fundamental] [--fixed R,C ...] [--shard I/K] [...]
    queens_client.py [CONNECTION] count N [CONNECTION] [--fixed R,C ...] [--shard I/K]
    CONNECTION: --addr HOST:PORT|http://HOST:PORT  --token TOKEN

`enumerate` asks for the packed form (each response's boards as consecutive n-byte records) and
reads every response into a numpy array of shape (boards, n) without a Python object per board.
It writes them to stdout as text, one compact column vector per line ("1,3,0,2"), or with
--out FILE to FILE: a NumPy array file when FILE ends in ".npy", that text otherwise. A download
goes to FILE.part, which records its progress (its last board), and is renamed to FILE when
complete: running the same command again after a crash, Ctrl-C or kill continues after the
last board with `start_after`, and once FILE exists it is complete and left as it is. A stream
the server breaks off (restart, shutdown, network, all search slots busy, its time limit) is
resumed the same way without restarting the program; a server that cannot be reached at all
is an error at once. Either way the finished file holds every board exactly once, in order.

With --token (or the environment variable QUEENS_TOKEN) every call carries the metadata
"authorization: Bearer TOKEN", for a server started with --auth-tokens.

Built on the package queens-client (clients/python: the stubs, the channel, the token and
the numpy view of packed records), installed beside it: pip install ../../clients/python.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.machinery
import importlib.util
import os
import pathlib
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from typing import BinaryIO

import grpc
import numpy
from tqdm import tqdm


def _installed_package():
    """The installed package queens-client. This program has the package's import name,
    queens_client, and Python looks in a script's own folder first, so `import
    queens_client` here would find this file: the package is looked up on the path without
    this folder and loaded under another name (its own imports are relative)."""
    name = "queens_client_package"
    if name in sys.modules:
        return sys.modules[name]
    here = pathlib.Path(__file__).resolve().parent
    path = [p for p in sys.path if pathlib.Path(p or ".").resolve() != here]
    found = importlib.machinery.PathFinder.find_spec("queens_client", path)
    if found is None or not found.submodule_search_locations:
        sys.exit(
            "queens_client.py needs the package queens-client: "
            "pip install ../../clients/python (see README.md)"
        )
    spec = importlib.util.spec_from_file_location(
        name, found.origin, submodule_search_locations=found.submodule_search_locations
    )
    package = importlib.util.module_from_spec(spec)
    sys.modules[name] = package
    spec.loader.exec_module(package)
    return package


package = _installed_package()
pb = package.pb.queens_pb2

DEFAULT_ADDR = "127.0.0.1:50051"
# The default of --token: a token in the environment stays out of the process list and the
# shell history.
TOKEN_ENV = "QUEENS_TOKEN"
# Boards per response message; 0 lets the server choose (about 64 KiB of boards: 4096 boards
# of n = 16). Measured against a release server, n = 16 packed into numpy (README.md,
# "Speed"): 4096 boards a message and the server's choice were the fastest, 1024 and 65536
# (1 MiB messages) 20-25% slower; the client's own cost is small at every size (0.4-1.5
# CPU-s for 14.8 M boards), the server's search and sending are the limit.
DEFAULT_BATCH_SIZE = 0
# Every response stays below this (the server's cap, and grpcio's default receive limit).
MAX_MESSAGE = 4 << 20
# A stream that fails with one of these is asked again from its last board: the server
# restarting or shutting down or the connection breaking (UNAVAILABLE), the server's search
# slots all busy ("retry later": RESOURCE_EXHAUSTED), or the server's time limit on one search
# ending a long stream (DEADLINE_EXCEEDED). Anything else, such as INVALID_ARGUMENT, is an
# answer and is raised. So is UNAVAILABLE before the server sent anything (see Unreachable).
RETRYABLE = frozenset(
    {
        grpc.StatusCode.UNAVAILABLE,
        grpc.StatusCode.RESOURCE_EXHAUSTED,
        grpc.StatusCode.DEADLINE_EXCEEDED,
    }
)


def target_of(addr: str) -> str:
    """The gRPC target of an address given as "HOST:PORT" or "http://HOST:PORT" (the form
    the Rust CLI takes); raises ValueError, saying why, for anything else."""
    rest = addr
    if "://" in addr:
        scheme, rest = addr.split("://", 1)
        if scheme.lower() == "https":
            raise ValueError(
                f"{addr}: https:// (TLS) is not supported by this client, which speaks "
                "plaintext only; give http://HOST:PORT or HOST:PORT of a server without "
                "--tls-cert"
            )
        if scheme.lower() != "http":
            raise ValueError(
                f"{addr}: unknown scheme {scheme}://; give http://HOST:PORT or HOST:PORT"
            )
        rest = rest.removesuffix("/")
    host, _, port = rest.rpartition(":")
    if not host or "/" in rest or not port.isdigit() or not 0 < int(port) < 65536:
        raise ValueError(
            f"{addr}: give HOST:PORT or http://HOST:PORT, e.g. {DEFAULT_ADDR}"
        )
    return rest


def connect(
    addr: str, token: str | None = None
) -> tuple[grpc.Channel, package.Stub]:
    """Opens an insecure channel to addr ("host:port" or "http://host:port") and its Queens
    stub (the package's Client); with a token, every call made through them carries
    "authorization: Bearer <token>". Raises ValueError for an address it cannot use
    (https:// among them)."""
    client = package.Client(target_of(addr), token=token)
    return client.channel, client.stub


class Unreachable(grpc.RpcError):
    """A stream that failed with UNAVAILABLE before the server sent anything: nothing
    listens at the address (connection refused), the name does not resolve, or the server
    was going away. Raised at once rather than retried: a server that is not running is the
    usual cause, and retrying would only delay saying so. Its code() and details() are the
    failed call's."""

    def __init__(self, error: grpc.RpcError) -> None:
        super().__init__(error.details())
        self.error = error

    def code(self) -> grpc.StatusCode:
        return self.error.code()

    def details(self) -> str:
        return self.error.details()


def count(
    stub: package.Stub,
    n: int,
    fixed: Sequence[pb.Square] = (),
    shard: pb.Shard | None = None,
    timeout: float | None = None,
) -> tuple[int, int | None]:
    """Returns (solutions, fundamental); fundamental is None when the server leaves it out
    (it does when queens are fixed). Both are Python ints, so uint64 never overflows."""
    reply = stub.Count(pb.CountRequest(n=n, fixed=fixed, shard=shard), timeout=timeout)
    fundamental = reply.fundamental if reply.HasField("fundamental") else None
    return reply.solutions, fundamental


# ---------------------------------------------------------------------------- the stream


# The boards of one response as a (boards, n) uint8 array: a packed response viewed in place
# (numpy.frombuffer, no copy), Board messages converted one by one.
boards_of = package.boards_of


def stream(
    stub: package.Stub,
    request: pb.EnumerateRequest,
    *,
    start_after: Sequence[int] | None = None,
    give_up_after: float = 60.0,
    on_retry: Callable[[grpc.RpcError], None] | None = None,
    timeout: float | None = None,
    packed: bool = True,
) -> Iterator[numpy.ndarray]:
    """Yields the boards of request after start_after, one (boards, n) uint8 array per
    response that holds any. With packed (the default) it asks for the packed form (and
    compact, for a server that predates packed); packed=False sends request as it is, so
    that the boards come as Board messages, decoded one by one (for comparison).

    request.limit, if set, caps the boards of the whole iteration. On a RETRYABLE error
    (and after on_retry(error) heard of it) it waits a little, then asks again after the last
    board yielded, until the stream ends or no board has arrived for give_up_after seconds.
    An UNAVAILABLE before the server ever answered is raised at once, as Unreachable."""
    n = request.n
    answered = False  # has the server sent a reply or a status in this iteration?
    last = list(start_after) if start_after is not None else None
    yielded = 0
    failures, failed_since = 0, 0.0
    while True:
        resumed = pb.EnumerateRequest()
        resumed.CopyFrom(request)
        if packed:
            resumed.packed = True
            resumed.compact = True  # irrelevant to a server that knows packed
        if request.limit:
            if yielded >= request.limit:
                return
            resumed.limit = request.limit - yielded
        if last is not None:
            resumed.start_after[:] = last
        try:
            for reply in stub.Enumerate(resumed, timeout=timeout):
                failures, answered = 0, True
                boards = boards_of(reply, n)
                if not len(boards):
                    continue
                last = boards[-1].tolist()
                yielded += len(boards)
                yield boards
            return
        except grpc.RpcError as error:
            if error.code() == grpc.StatusCode.UNAVAILABLE and not answered:
                raise Unreachable(error) from None
            if not retryable(error):
                raise
            # Any other status (busy, time limit) came from the server: it is there.
            answered = answered or error.code() != grpc.StatusCode.UNAVAILABLE
            if failures == 0:
                failed_since = time.monotonic()
                if on_retry is not None:
                    on_retry(error)
            elif time.monotonic() - failed_since > give_up_after:
                raise
            failures += 1
            time.sleep(min(0.1 * 2**failures, 2.0))


def retryable(error: grpc.RpcError) -> bool:
    """Whether asking again may help: a RETRYABLE code, but not grpcio's own refusal of a
    message above its receive limit (also RESOURCE_EXHAUSTED, and the same on every try;
    this server keeps every message below the 4 MiB default)."""
    return error.code() in RETRYABLE and "larger than max" not in (
        error.details() or ""
    )


def enumerate_array(
    stub: package.Stub, request: pb.EnumerateRequest, **options
) -> numpy.ndarray:
    """Every board of request as one (boards, n) uint8 array (see `stream` for options)."""
    parts = list(stream(stub, request, **options))
    if not parts:
        return numpy.empty((0, request.n), dtype=numpy.uint8)
    return numpy.concatenate(parts)


# ---------------------------------------------------------------------------- text form


def _cells(end: bytes) -> numpy.ndarray:
    """For each column c < 32: the text of c (one or two digits) then `end`, padded with 0
    bytes to 4 and read as one uint32, so that a lookup gives a whole cell of text."""
    table = numpy.zeros((32, 4), dtype=numpy.uint8)
    for c in range(32):
        text = str(c).encode() + end
        table[c, : len(text)] = numpy.frombuffer(text, dtype=numpy.uint8)
    return table.view(numpy.uint32).reshape(32)


_COMMA = _cells(b",")
_NEWLINE = _cells(b"\n")


def text_lines(boards: numpy.ndarray) -> bytes:
    """The boards of a (boards, n) array as "c0,c1,...\\n" lines, built with array
    operations and no Python object per board: a table lookup gives each column's text as a
    4-byte cell, then one pass (bytes.translate) drops the padding. n = 16: about 4 M boards/s
    here, against about 0.5 M/s joining strings per board."""
    count, n = boards.shape
    if count == 0:
        return b""
    if n <= 10:  # one digit per column: fixed width, no padding
        cells = numpy.empty((count, n, 2), dtype=numpy.uint8)
        cells[:, :, 0] = boards + ord("0")
        cells[:, :, 1] = ord(",")
        cells[:, -1, 1] = ord("\n")
        return cells.tobytes()
    cells = _COMMA[boards]
    cells[:, -1] = _NEWLINE[boards[:, -1]]
    return cells.tobytes().translate(None, b"\0")


def read_resume_point(out: BinaryIO, n: int) -> tuple[list[int] | None, int]:
    """Inspects a text download opened "a+b": returns (its last complete board, how many
    boards it holds), after cutting off a partial last line that a crash may have left."""
    out.seek(0)
    boards, size = 0, 0
    while chunk := out.read(1 << 20):
        boards += chunk.count(b"\n")
        size += len(chunk)
    # Only lines ending in "\n" were written completely; drop whatever follows the last one.
    tail = b""
    position = size
    while position > 0:
        step = min(4096, position)
        out.seek(position - step)
        tail = out.read(step) + tail
        position -= step
        if tail.count(b"\n") >= 2 or (position == 0 and b"\n" in tail):
            break
    complete = tail[: tail.rfind(b"\n") + 1]
    if len(complete) < len(tail):
        out.truncate(size - (len(tail) - len(complete)))
    out.seek(0, os.SEEK_END)
    if not complete:
        return None, 0
    last = complete[:-1].rsplit(b"\n", 1)[-1]
    columns = [int(c) for c in last.split(b",")]
    if len(columns) != n:
        raise SystemExit(f"the file's boards have {len(columns)} columns, not n = {n}")
    return columns, boards


class TextWriter:
    """Writes boards as text lines to a binary file, flushed after every batch."""

    def __init__(self, out: BinaryIO) -> None:
        self.out = out

    def write(self, boards: numpy.ndarray) -> None:
        self.out.write(text_lines(boards))
        self.out.flush()


# ---------------------------------------------------------------------------- .npy form


class NpyWriter:
    """A growing NumPy array file (format 1.0) of uint8 boards, shape (rows, n), that can be
    resumed. The header is rewritten in place after every batch, so the file is a valid .npy
    of the boards written so far at every batch boundary; after a crash between a batch and
    its header the data after the header's count is ignored by numpy.load and kept by a
    resume, which counts the rows from the file's size."""

    HEADER = 128  # the size numpy.save gives a 2-D uint8 array's header

    def __init__(self, path: os.PathLike | str, n: int) -> None:
        self.n = n
        self.file = open(path, "r+b" if os.path.exists(path) else "w+b")  # noqa: SIM115
        try:
            self.offset, self.rows, self.last = self._resume_point()
        except BaseException:
            self.file.close()
            raise

    def _resume_point(self) -> tuple[int, int, list[int] | None]:
        f, n = self.file, self.n
        size = f.seek(0, os.SEEK_END)
        if size == 0:
            self._write_header(self.HEADER, 0)
            f.seek(self.HEADER)
            return self.HEADER, 0, None
        f.seek(0)
        try:
            version = numpy.lib.format.read_magic(f)
            if version == (1, 0):
                shape, fortran, dtype = numpy.lib.format.read_array_header_1_0(f)
            else:
                shape, fortran, dtype = numpy.lib.format.read_array_header_2_0(f)
        except ValueError as error:
            raise SystemExit(
                f"{f.name} is not a NumPy array file to resume: {error}"
            ) from None
        offset = f.tell()
        if dtype != numpy.uint8 or fortran or len(shape) != 2 or shape[1] != n:
            raise SystemExit(
                f"{f.name} holds a {dtype} array of shape {shape}, not boards of n = {n} "
                "(uint8, shape (boards, n))"
            )
        rows = (size - offset) // n
        f.truncate(offset + rows * n)  # a board cut short by a crash
        self._write_header(offset, rows)
        last = None
        if rows:
            f.seek(offset + (rows - 1) * n)
            last = list(f.read(n))
        f.seek(0, os.SEEK_END)
        return offset, rows, last

    def _write_header(self, size: int, rows: int) -> None:
        """Writes a format 1.0 header of exactly `size` bytes for (rows, n) at offset 0."""
        text = (
            f"{{'descr': '|u1', 'fortran_order': False, 'shape': ({rows}, {self.n}), }}"
        )
        padding = size - 10 - len(text) - 1
        if padding < 0 or size - 10 > 0xFFFF:
            raise SystemExit(
                f"{self.file.name}: no room for the header of {rows} boards"
            )
        header = text + " " * padding + "\n"
        data = (
            b"\x93NUMPY\x01\x00" + (size - 10).to_bytes(2, "little") + header.encode()
        )
        os.pwrite(self.file.fileno(), data, 0)

    def write(self, boards: numpy.ndarray) -> None:
        self.write_packed(
            numpy.ascontiguousarray(boards, dtype=numpy.uint8).data, len(boards)
        )

    def write_packed(self, packed, rows: int) -> None:
        """Appends rows boards given as packed bytes (the wire form is the file's form)."""
        self.file.write(packed)
        self.file.flush()
        self.rows += rows
        self._write_header(self.offset, self.rows)

    def sync(self) -> None:
        os.fsync(self.file.fileno())

    def close(self) -> None:
        self.file.close()


def npy_rows(path: os.PathLike | str) -> int:
    """How many boards a finished .npy holds (from its header)."""
    with open(path, "rb") as f:
        version = numpy.lib.format.read_magic(f)
        read = (
            numpy.lib.format.read_array_header_1_0
            if version == (1, 0)
            else numpy.lib.format.read_array_header_2_0
        )
        return read(f)[0][0]


def download(
    stub: package.Stub,
    request: pb.EnumerateRequest,
    out: BinaryIO | NpyWriter,
    *,
    start_after: Sequence[int] | None = None,
    on_batch: Callable[[int], None] | None = None,
    give_up_after: float = 60.0,
    on_retry: Callable[[grpc.RpcError], None] | None = None,
) -> int:
    """Streams request's boards after start_after into out (an NpyWriter, or a binary file
    taking "c0,c1,...\\n" lines) as they arrive, and returns how many it wrote; on_batch(k)
    hears of every k boards written. Retries as `stream` does."""
    writer = out if isinstance(out, NpyWriter) else TextWriter(out)
    written = 0
    for boards in stream(
        stub,
        request,
        start_after=start_after,
        give_up_after=give_up_after,
        on_retry=on_retry,
    ):
        writer.write(boards)
        written += len(boards)
        if on_batch is not None:
            on_batch(len(boards))
    return written


# ---------------------------------------------------------------------------- the program


def parse_pair(text: str, separator: str, form: str) -> tuple[int, int]:
    """Two integers written with `separator` between them; an argparse error showing `form`
    otherwise."""
    try:
        first, second = (int(part) for part in text.split(separator))
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: give {form}") from None
    return first, second


def parse_square(text: str) -> pb.Square:
    row, column = parse_pair(text, ",", "ROW,COLUMN, e.g. 0,3")
    return pb.Square(row=row, column=column)


def parse_shard(text: str) -> pb.Shard:
    index, count_ = parse_pair(text, "/", "INDEX/COUNT, e.g. 0/4")
    return pb.Shard(index=index, count=count_)


def parse_addr(text: str) -> str:
    try:
        target_of(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None
    return text


def parse_columns(text: str) -> list[int]:
    try:
        return [int(part) for part in text.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{text!r}: give a column vector C,C,..., e.g. 1,3,0,2"
        ) from None


def non_negative(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = -1
    if value < 0:
        raise argparse.ArgumentTypeError(f"{text!r}: give a whole number, 0 or more")
    return value


def arguments(argv: Sequence[str] | None) -> argparse.Namespace:
    # --addr and --token are taken before the command and after it. After it their default
    # is SUPPRESSed (left unset), so that a value given before is not undone.
    def connection(parser: argparse.ArgumentParser, before: bool) -> None:
        parser.add_argument(
            "--addr",
            type=parse_addr,
            default=DEFAULT_ADDR if before else argparse.SUPPRESS,
            metavar="HOST:PORT",
            help=f"the server: HOST:PORT or http://HOST:PORT (default {DEFAULT_ADDR}); "
            "plaintext only, no https://",
        )
        parser.add_argument(
            "--token",
            default=(os.environ.get(TOKEN_ENV) or None)
            if before
            else argparse.SUPPRESS,
            help=f"bearer token sent with every call (default: ${TOKEN_ENV}, if set)",
        )

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    connection(parser, before=True)
    commands = parser.add_subparsers(dest="command", required=True)

    enumerate_ = commands.add_parser("enumerate", help="stream the boards, resumably")
    connection(enumerate_, before=False)
    enumerate_.add_argument("n", type=int)
    enumerate_.add_argument(
        "--out",
        metavar="FILE",
        help="download to FILE: a NumPy array file (uint8, shape (boards, n)) if FILE ends "
        "in .npy, text lines otherwise; resumable (default: text on stdout)",
    )
    enumerate_.add_argument(
        "--limit",
        type=non_negative,
        default=0,
        metavar="K",
        help="at most K boards in all (default 0: every board)",
    )
    enumerate_.add_argument(
        "--start-after",
        type=parse_columns,
        metavar="C,C,...",
        help="only the boards after this column vector (n entries below n, e.g. 1,3,0,2)",
    )
    enumerate_.add_argument(
        "--batch-size",
        type=non_negative,
        default=DEFAULT_BATCH_SIZE,
        metavar="B",
        help="boards per message (default 0: the server's choice, about 64 KiB; the server "
        "keeps every message below 4 MiB)",
    )
    enumerate_.add_argument(
        "--fundamental", action="store_true", help="one board per symmetry class"
    )
    enumerate_.add_argument(
        "--fixed",
        type=parse_square,
        action="append",
        default=[],
        metavar="R,C",
        help="a queen every board contains",
    )
    enumerate_.add_argument(
        "--shard", type=parse_shard, metavar="I/K", help="only part I of K"
    )
    enumerate_.add_argument("--quiet", action="store_true", help="no progress bar")
    enumerate_.add_argument(
        "--give-up-after",
        type=float,
        default=60.0,
        metavar="SECONDS",
        help="stop retrying after this long without a board (default 60)",
    )

    count_ = commands.add_parser("count", help="count the solutions")
    connection(count_, before=False)
    count_.add_argument("n", type=int)
    count_.add_argument(
        "--fixed", type=parse_square, action="append", default=[], metavar="R,C"
    )
    count_.add_argument("--shard", type=parse_shard, metavar="I/K")
    args = parser.parse_args(argv)
    if args.command == "enumerate" and args.start_after is not None:
        columns = args.start_after
        if len(columns) != args.n:
            enumerate_.error(
                f"argument --start-after: {','.join(map(str, columns))} has "
                f"{len(columns)} columns, not n = {args.n}"
            )
        for row, column in enumerate(columns):
            if not 0 <= column < args.n:
                enumerate_.error(
                    f"argument --start-after: column {column} (row {row}) is not below "
                    f"n = {args.n}"
                )
    return args


def say(message: str) -> None:
    tqdm.write(f"queens_client: {message}", file=sys.stderr)


def run_enumerate(stub: package.Stub, args: argparse.Namespace) -> None:
    request = pb.EnumerateRequest(
        n=args.n,
        fundamental=args.fundamental,
        fixed=args.fixed,
        shard=args.shard,
        batch_size=args.batch_size,
        packed=True,
    )
    written = 0  # boards written by this run
    with contextlib.ExitStack() as stack:
        out: BinaryIO | NpyWriter = sys.stdout.buffer
        last, done, path, part = args.start_after, 0, None, None
        if args.out is not None:
            path = pathlib.Path(args.out)
            part = path.with_name(path.name + ".part")
            npy = path.suffix.lower() == ".npy"
            if path.exists():
                boards = npy_rows(path) if npy else count_lines(path)
                say(
                    f"{path} is already complete ({boards} boards); nothing to do "
                    "(delete it to download again)"
                )
                return
            if not part.exists():
                # Made by this run: if the run fails before its first board (a bad request,
                # no server), it goes again rather than staying behind empty.
                stack.callback(lambda: part.exists() and not written and part.unlink())
            if npy:
                out = stack.enter_context(contextlib.closing(NpyWriter(part, args.n)))
                held, done = out.last, out.rows
            else:
                out = stack.enter_context(open(part, "a+b"))
                held, done = read_resume_point(out, args.n)
            if held is not None:
                last = held
                say(
                    f"{part} holds {done} boards; resuming after {','.join(map(str, last))}"
                )
        # The limit is the whole download's: what the file holds counts against it.
        finished = bool(args.limit) and done >= args.limit
        if args.limit and not finished:
            request.limit = args.limit - done
        bar = stack.enter_context(
            tqdm(
                initial=done,
                unit=" boards",
                unit_scale=True,
                file=sys.stderr,
                disable=args.quiet,
                dynamic_ncols=True,
            )
        )
        # The total, for a percentage and an ETA, comes from a Count asked once the stream
        # runs (so that the stream has its search slot first). Not for a shard (Count's part
        # i need not hold the same boards as Enumerate's part i), nor from --start-after.
        total = None
        if args.shard is None and args.start_after is None and not args.quiet:
            count_request = pb.CountRequest(n=args.n, fixed=args.fixed)
            total = Total(stub, count_request, bar, args.fundamental, args.limit)
            stack.callback(total.close)

        def on_batch(boards: int) -> None:
            nonlocal written
            written += boards
            bar.update(boards)
            if total is not None:
                total.ask_once()

        def on_retry(error: grpc.RpcError) -> None:
            say(f"{error.code().name} ({error.details()}); resuming")

        if not finished:
            download(
                stub,
                request,
                out,
                start_after=last,
                on_batch=on_batch,
                give_up_after=args.give_up_after,
                on_retry=on_retry,
            )
        if part is not None:
            if isinstance(out, NpyWriter):
                out.sync()
            else:
                os.fsync(out.fileno())
            os.replace(part, path)


def count_lines(path: pathlib.Path) -> int:
    lines = 0
    with path.open("rb") as f:
        while chunk := f.read(1 << 20):
            lines += chunk.count(b"\n")
    return lines


class Total:
    """Gives a progress bar its total from a Count in the background; asks again a second
    later if the server went away before answering, and gives up on any other error (the
    server busy, say: the bar then shows no percentage)."""

    def __init__(
        self,
        stub: package.Stub,
        request: pb.CountRequest,
        bar: tqdm,
        fundamental: bool,
        limit: int = 0,
    ) -> None:
        self.stub = stub
        self.request = request
        self.bar = bar
        self.fundamental = fundamental
        self.limit = limit
        self.future: grpc.Future | None = None
        self.closed = False

    def ask_once(self) -> None:
        if self.future is None:
            self.ask()

    def ask(self) -> None:
        if self.closed:
            return
        # wait_for_ready: while the server is down, the call waits for it instead of failing.
        self.future = self.stub.Count.future(self.request, wait_for_ready=True)
        self.future.add_done_callback(self.answered)

    def answered(self, future: grpc.Future) -> None:
        if self.closed or future.cancelled():
            return
        error = future.exception()
        if error is None:
            reply = future.result()
            total = reply.fundamental if self.fundamental else reply.solutions
            self.bar.total = min(total, self.limit) if self.limit else total
        elif error.code() == grpc.StatusCode.UNAVAILABLE:
            retry = threading.Timer(1.0, self.ask)
            retry.daemon = True
            retry.start()

    def close(self) -> None:
        self.closed = True
        if self.future is not None:
            self.future.cancel()


def main(argv: Sequence[str] | None = None) -> int:
    args = arguments(argv)
    channel, stub = connect(args.addr, args.token)
    try:
        with channel:
            if args.command == "count":
                solutions, fundamental = count(stub, args.n, args.fixed, args.shard)
                print(f"solutions: {solutions}")
                if fundamental is not None:
                    print(f"fundamental: {fundamental}")
            else:
                run_enumerate(stub, args)
        return 0
    except grpc.RpcError as error:
        # Count is one call: UNAVAILABLE is no answer at all, as for a stream (Unreachable).
        if (
            isinstance(error, Unreachable)
            or error.code() == grpc.StatusCode.UNAVAILABLE
        ):
            print(
                f"queens_client: cannot connect to {args.addr}: {error.details()}",
                file=sys.stderr,
            )
            print(
                "queens_client: is the server running there? (start one with `queens serve`, "
                "or give another --addr)",
                file=sys.stderr,
            )
            return 1
        print(f"queens_client: {error.code().name}: {error.details()}", file=sys.stderr)
        if error.code() == grpc.StatusCode.UNAUTHENTICATED:
            hint = "the token was refused" if args.token else "no token was given"
            print(
                f"queens_client: {hint}; give the server's token with --token TOKEN or ${TOKEN_ENV}",
                file=sys.stderr,
            )
        return 1
    except KeyboardInterrupt:
        print(
            "queens_client: interrupted; run the same command again to resume",
            file=sys.stderr,
        )
        return 130
    except BrokenPipeError:
        return 1
    except (
        OSError
    ) as error:  # the file of --out: no such folder, no permission, disk full
        print(f"queens_client: {error}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
