#!/usr/bin/env python3
"""Downloads the boards of the queens gRPC service (queens.v1.Queens), resumably.

    queens_download.py [CONNECTION] enumerate N [CONNECTION] [--out FILE] [--limit K]
                       [--start-after C,C,...] [--fundamental] [--fixed R,C ...] [--shard I/K] [...]
    queens_download.py [CONNECTION] count N [CONNECTION] [--fixed R,C ...] [--shard I/K]
    CONNECTION: --addr HOST:PORT|http://HOST:PORT  --token TOKEN

`enumerate` streams the boards through the package queens-client (clients/python), which asks
for the packed form and yields each response as a numpy array of shape (boards, n) without a
Python object per board. This program writes them to stdout as text, one compact column
vector per line ("1,3,0,2"), or with --out FILE to FILE: a NumPy array file when FILE ends in
".npy", that text otherwise (board_files.py). A download goes to FILE.part, which records its
progress (its last board), and is renamed to FILE when complete: running the same command
again after a crash, Ctrl-C or kill continues after the last board with `start_after`, and
once FILE exists it is complete and left as it is. A stream the server breaks off (restart,
shutdown, network, all search slots busy, its time limit) is resumed the same way without
restarting the program; a server that cannot be reached at all is an error at once. Either
way the finished file holds every board exactly once, in order.

With --token (or the environment variable QUEENS_TOKEN) every call carries the metadata
"authorization: Bearer TOKEN", for a server started with --auth-tokens.

The package is installed beside it: pip install ../../clients/python.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import pathlib
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any, BinaryIO

import grpc
import numpy
from queens_client import Boards, Client, QueensError, Shard, Square
from tqdm import tqdm

from board_files import NpyWriter, TextWriter, count_lines, npy_rows, read_resume_point

DEFAULT_ADDR = "127.0.0.1:50051"
# The default of --token: a token in the environment stays out of the process list and the
# shell history.
TOKEN_ENV = "QUEENS_TOKEN"
# The name errors and notes on stderr start with.
PROGRAM = "queens_download"
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
                f"{addr}: https:// (TLS) is not supported by this program, which speaks "
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


def connect(addr: str, token: str | None = None) -> Client:
    """The package's Client of addr ("host:port" or "http://host:port"), plaintext; with a
    token, every call carries "authorization: Bearer <token>". Raises ValueError for an
    address it cannot use (https:// among them)."""
    return Client(target_of(addr), token=token)


class Unreachable(QueensError):
    """A stream that failed with UNAVAILABLE before the server sent anything: nothing
    listens at the address (connection refused), the name does not resolve, or the server
    was going away. Raised at once rather than retried: a server that is not running is the
    usual cause, and retrying would only delay saying so."""

    def __init__(self, error: QueensError) -> None:
        super().__init__(error.code, error.message, error.details)


# ---------------------------------------------------------------------------- the stream


def stream(
    client: Client,
    n: int,
    *,
    start_after: Sequence[int] | None = None,
    limit: int = 0,
    give_up_after: float = 60.0,
    on_retry: Callable[[QueensError], None] | None = None,
    **search: Any,
) -> Iterator[Boards]:
    """Yields the boards of n after start_after, one (boards, n) uint8 array per response
    that holds any, from Client.enumerate (search: its fundamental, fixed, shard,
    batch_size, packed, timeout), with at most `limit` boards in all (0: no limit).

    On a RETRYABLE error (and after on_retry(error) heard of it) it waits a little, then
    asks again after the last board yielded, until the stream ends or no board has arrived
    for give_up_after seconds. An UNAVAILABLE before the server ever answered is raised at
    once, as Unreachable; every other error as the package's QueensError."""
    answered = False  # has the server sent boards or a status in this iteration?
    last = list(start_after) if start_after is not None else None
    yielded = 0
    failures, failed_since = 0, 0.0
    while not limit or yielded < limit:
        left = limit - yielded if limit else 0
        boards = client.enumerate(n, start_after=last, limit=left, **search)
        try:
            with contextlib.closing(boards):
                for batch in boards:
                    failures, answered = 0, True
                    last = batch[-1].tolist()
                    yielded += len(batch)
                    yield batch
            return
        except QueensError as error:
            if error.code == grpc.StatusCode.UNAVAILABLE and not answered:
                raise Unreachable(error) from None
            if not retryable(error):
                raise
            # Any other status (busy, time limit) came from the server: it is there.
            answered = answered or error.code != grpc.StatusCode.UNAVAILABLE
            if failures == 0:
                failed_since = time.monotonic()
                if on_retry is not None:
                    on_retry(error)
            elif time.monotonic() - failed_since > give_up_after:
                raise
            failures += 1
            time.sleep(min(0.1 * 2**failures, 2.0))


def retryable(error: QueensError) -> bool:
    """Whether asking again may help: a RETRYABLE code, but not grpcio's own refusal of a
    message above its receive limit (also RESOURCE_EXHAUSTED, and the same on every try;
    this server keeps every message below the 4 MiB default)."""
    return error.code in RETRYABLE and "larger than max" not in error.message


def enumerate_array(client: Client, n: int, **options: Any) -> Boards:
    """Every board of n as one (boards, n) uint8 array (see `stream` for options)."""
    parts = list(stream(client, n, **options))
    if not parts:
        return numpy.empty((0, n), dtype=numpy.uint8)
    return numpy.concatenate(parts)


def download(
    client: Client,
    n: int,
    out: BinaryIO | NpyWriter,
    *,
    on_batch: Callable[[int], None] | None = None,
    **options: Any,
) -> int:
    """Streams the boards of n into out (an NpyWriter, or a binary file taking
    "c0,c1,...\\n" lines) as they arrive, and returns how many it wrote; on_batch(k) hears
    of every k boards written. Options and retries as `stream`'s."""
    writer = out if isinstance(out, NpyWriter) else TextWriter(out)
    written = 0
    for boards in stream(client, n, **options):
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


def parse_square(text: str) -> Square:
    return parse_pair(text, ",", "ROW,COLUMN, e.g. 0,3")


def parse_shard(text: str) -> Shard:
    return parse_pair(text, "/", "INDEX/COUNT, e.g. 0/4")


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
    tqdm.write(f"{PROGRAM}: {message}", file=sys.stderr)


def run_enumerate(client: Client, args: argparse.Namespace) -> None:
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
            total = Total(client, args, bar)
            stack.callback(total.close)

        def on_batch(boards: int) -> None:
            nonlocal written
            written += boards
            bar.update(boards)
            if total is not None:
                total.ask_once()

        def on_retry(error: QueensError) -> None:
            say(f"{error.code.name} ({error.message}); resuming")

        if not finished:
            download(
                client,
                args.n,
                out,
                fundamental=args.fundamental,
                fixed=args.fixed,
                shard=args.shard,
                batch_size=args.batch_size,
                start_after=last,
                limit=args.limit - done if args.limit else 0,
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


class Total:
    """Gives a progress bar its total from a Count asked once, in the background: asked
    again a second later while the server is away (UNAVAILABLE), given up on any other
    error (the server busy, say: the bar then shows no percentage). The Count ends with
    the client's channel, so close() needs only to stop the asking."""

    def __init__(self, client: Client, args: argparse.Namespace, bar: tqdm) -> None:
        self.client = client
        self.n, self.fixed = args.n, args.fixed
        self.fundamental, self.limit = args.fundamental, args.limit
        self.bar = bar
        self.asked = False
        self.closed = False

    def ask_once(self) -> None:
        if not self.asked:
            self.asked = True
            threading.Thread(target=self.ask, daemon=True).start()

    def ask(self) -> None:
        while not self.closed:
            try:
                counted = self.client.count(self.n, fixed=self.fixed)
            except QueensError as error:
                if error.code != grpc.StatusCode.UNAVAILABLE:
                    return
                time.sleep(1.0)
                continue
            total = counted.fundamental if self.fundamental else counted.solutions
            if total is not None and not self.closed:
                self.bar.total = min(total, self.limit) if self.limit else total
            return

    def close(self) -> None:
        self.closed = True


def main(argv: Sequence[str] | None = None) -> int:
    args = arguments(argv)
    try:
        with connect(args.addr, args.token) as client:
            if args.command == "count":
                counted = client.count(args.n, fixed=args.fixed, shard=args.shard)
                print(f"solutions: {counted.solutions}")
                if counted.fundamental is not None:
                    print(f"fundamental: {counted.fundamental}")
            else:
                run_enumerate(client, args)
        return 0
    except QueensError as error:
        # Count is one call: UNAVAILABLE is no answer at all, as for a stream (Unreachable).
        if error.code == grpc.StatusCode.UNAVAILABLE:
            say(f"cannot connect to {args.addr}: {error.message}")
            say(
                "is the server running there? (start one with `queens serve`, or give "
                "another --addr)"
            )
            return 1
        say(f"{error.code.name}: {error.message}")
        if error.code == grpc.StatusCode.UNAUTHENTICATED:
            hint = "the token was refused" if args.token else "no token was given"
            say(f"{hint}; give the server's token with --token TOKEN or ${TOKEN_ENV}")
        return 1
    except KeyboardInterrupt:
        say("interrupted; run the same command again to resume")
        return 130
    except BrokenPipeError:
        return 1
    except OSError as error:  # the file of --out: no such folder, no permission, disk full
        say(str(error))
        return 1


if __name__ == "__main__":
    sys.exit(main())
