#!/usr/bin/env python3
"""Measures the client end to end against a running server, next to `count-ref -e N | cat`.

    .venv/bin/python bench.py [--addr HOST:PORT] [--n 16] [--rounds 3] [--batch B ...]
                              [--modes numpy,npy,text,boards,replay,flight] [--boards-rounds 1]
                              [--count-ref PATH] [--server-pid PID]

Each round times, one after the other on the same machine, `count-ref -e N | cat >
/dev/null` (the C reference enumerator writing every board as N raw bytes; built here from
benches/count-ref.c with gcc -O3 -march=native unless --count-ref names a binary),
then the client draining the same N:

- numpy: the packed stream read into numpy arrays (numpy.frombuffer per response, kept in a
  list), for each --batch (boards per message; default 0, the server's choice, as the
  client's default);
- npy: the program's download to a .npy file (queens_download.py `enumerate N --out
  FILE.npy`);
- text: the program's download to a text file (`enumerate N --out FILE`);
- boards: the old way, compact Board messages (batch 1024) decoded one board at a time into
  the same arrays; slow, so only --boards-rounds rounds (default 1);
- flight: the server's Arrow Flight service read by pyarrow into one table
  (`do_get(...).read_all()`, record batches of the server's default size); needs the data
  tools of examples/flight/requirements.txt, and only runs when named in --modes;
- replay: the client's own ceiling: the numpy drain of a stream of the same size replayed
  from memory (prebuilt packed messages, no search) by a grpcio server in another process.

It prints boards/s, the ratio to count-ref's boards/s in the same round, and the CPU seconds
of this process (and of the server, with --server-pid), then the median of every line. The
boards are checked outside the timed part: their number against Count, and the numpy
drain's strict lexicographic order. Run it against a release server (`cargo run --release --
serve`) on an otherwise idle machine.
"""

from __future__ import annotations

import argparse
import os
import pathlib
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time

import numpy
from queens_client.pb import queens_pb2 as pb

import queens_download
from board_files import NpyWriter

HERE = pathlib.Path(__file__).resolve().parent
COUNT_REF_SOURCE = HERE.parent.parent / "benches" / "count-ref.c"
MODES = ("numpy", "npy", "text", "boards", "replay", "flight")
# flight needs pyarrow (examples/flight/requirements.txt): not run unless asked.
DEFAULT_MODES = MODES[:-1]


def build_count_ref(scratch: pathlib.Path) -> pathlib.Path:
    if not COUNT_REF_SOURCE.exists():
        sys.exit(
            f"bench: no {COUNT_REF_SOURCE}; give a built count-ref with --count-ref PATH"
        )
    binary = scratch / "count-ref"
    subprocess.run(
        ["gcc", "-O3", "-march=native", "-o", str(binary), str(COUNT_REF_SOURCE)],
        check=True,
    )
    return binary


def cpu_of(pid: int | None) -> float:
    """CPU seconds (user + system) of process pid so far; 0 without one."""
    if pid is None:
        return 0.0
    fields = pathlib.Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def time_count_ref(binary: pathlib.Path, n: int) -> float:
    start = time.perf_counter()
    subprocess.run(
        f"'{binary}' -e {n} | cat > /dev/null",
        shell=True,
        check=True,
        stderr=subprocess.DEVNULL,
    )
    return time.perf_counter() - start


def check_order(arrays: list[numpy.ndarray], n: int) -> None:
    """Strictly increasing column vectors, across arrays (n <= 16: 4 bits a column)."""
    if n > 16 or not arrays:
        return
    boards = numpy.concatenate(arrays).astype(numpy.uint64)
    keys = numpy.zeros(len(boards), dtype=numpy.uint64)
    for column in range(n):
        keys = (keys << numpy.uint64(4)) | boards[:, column]
    if not numpy.all(keys[1:] > keys[:-1]):
        sys.exit("bench: the boards are not in strictly increasing order")


class Run:
    """One timed drain: boards, wall seconds, CPU seconds of this process and the server."""

    def __init__(self, server_pid: int | None) -> None:
        self.server_pid = server_pid

    def __enter__(self) -> Run:
        self.cpu = time.process_time()
        self.server = cpu_of(self.server_pid)
        self.start = time.perf_counter()
        return self

    def __exit__(self, *exc) -> None:
        self.seconds = time.perf_counter() - self.start
        self.cpu = time.process_time() - self.cpu
        self.server = cpu_of(self.server_pid) - self.server


def serve_replay(addr: str, n: int, boards: int) -> None:
    """Serves Enumerate as `boards` boards of n zero bytes, in prebuilt packed messages of
    the request's batch_size (below 4 MiB), until killed: a server that costs nothing."""
    from concurrent import futures

    import grpc

    def enumerate_(request, context):
        batch = min(request.batch_size or 4096, ((4 << 20) - 16) // n)
        full = pb.EnumerateResponse(packed=bytes(n * batch))
        for _ in range(boards // batch):
            yield full
        if boards % batch:
            yield pb.EnumerateResponse(packed=bytes(n * (boards % batch)))

    replay = grpc.unary_stream_rpc_method_handler(
        enumerate_,
        request_deserializer=pb.EnumerateRequest.FromString,
        response_serializer=pb.EnumerateResponse.SerializeToString,
    )
    handler = grpc.method_handlers_generic_handler("queens.v1.Queens", {"Enumerate": replay})

    server = grpc.server(futures.ThreadPoolExecutor(2))
    server.add_generic_rpc_handlers((handler,))
    server.add_insecure_port(addr)
    server.start()
    print("ready", flush=True)
    server.wait_for_termination()


def start_replay(n: int, boards: int) -> tuple[subprocess.Popen, str]:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        addr = f"127.0.0.1:{probe.getsockname()[1]}"
    replay = subprocess.Popen(
        [
            sys.executable,
            __file__,
            "--replay-server",
            addr,
            "--n",
            str(n),
            "--replay-boards",
            str(boards),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    if replay.stdout.readline().strip() != "ready":
        sys.exit("bench: the replay server did not start")
    return replay, addr


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--addr", default=queens_download.DEFAULT_ADDR)
    parser.add_argument("--n", type=int, default=16)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument(
        "--batch",
        type=int,
        action="append",
        help="boards per message for numpy (repeatable)",
    )
    parser.add_argument("--modes", default=",".join(DEFAULT_MODES))
    parser.add_argument("--boards-rounds", type=int, default=1)
    parser.add_argument("--count-ref", type=pathlib.Path)
    parser.add_argument(
        "--server-pid", type=int, help="report the server's CPU seconds too"
    )
    parser.add_argument("--replay-server", help=argparse.SUPPRESS)
    parser.add_argument("--replay-boards", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.replay_server:
        serve_replay(args.replay_server, args.n, args.replay_boards)
        return
    modes = args.modes.split(",")
    if unknown := set(modes) - set(MODES):
        parser.error(f"unknown modes {sorted(unknown)}; choose from {','.join(MODES)}")
    batches = args.batch or [queens_download.DEFAULT_BATCH_SIZE]
    n = args.n
    scratch = pathlib.Path(tempfile.mkdtemp(prefix="queens-bench-"))
    queens = queens_download.connect(args.addr)
    results: dict[str, list[tuple[float, float]]] = {}  # line -> [(boards/s, ratio)]
    try:
        count_ref = args.count_ref or build_count_ref(scratch)
        expected = queens.count(n).solutions
        print(
            f"n = {n}: {expected:,} boards; count-ref: {count_ref}; server at {args.addr}"
        )

        def report(line: str, run: Run, boards: int, reference: float) -> None:
            if boards != expected:
                sys.exit(f"bench: {line}: {boards} boards, not {expected}")
            rate = boards / run.seconds
            ratio = reference / run.seconds
            results.setdefault(line, []).append((rate, ratio))
            server = f", server {run.server:5.2f} CPU-s" if args.server_pid else ""
            print(
                f"  {line:<30} {run.seconds:6.2f} s {rate / 1e6:6.2f} M boards/s "
                f"{ratio:5.2f}x count-ref  (client {run.cpu:5.2f} CPU-s{server})",
                flush=True,
            )

        for round_ in range(args.rounds):
            reference = time_count_ref(count_ref, n)
            results.setdefault("count-ref -e | cat", []).append(
                (expected / reference, 1.0)
            )
            print(
                f"round {round_ + 1}: count-ref -e {n} | cat: {reference:6.2f} s "
                f"{expected / reference / 1e6:6.2f} M boards/s",
                flush=True,
            )
            if "numpy" in modes:
                for batch in batches:
                    with Run(args.server_pid) as run:
                        arrays = list(queens_download.stream(queens, n, batch_size=batch))
                        boards = sum(len(a) for a in arrays)
                    report(f"packed -> numpy, batch {batch}", run, boards, reference)
                    check_order(arrays, n)
                    del arrays
            for mode, suffix in (("npy", ".npy"), ("text", ".txt")):
                if mode not in modes:
                    continue
                path = scratch / f"boards{suffix}"
                batch = queens_download.DEFAULT_BATCH_SIZE
                with Run(args.server_pid) as run:
                    out = NpyWriter(path, n) if mode == "npy" else path.open("wb")
                    boards = queens_download.download(queens, n, out, batch_size=batch)
                    out.close()
                report(f"packed -> {mode} file", run, boards, reference)
                path.unlink()
            if "boards" in modes and round_ < args.boards_rounds:
                with Run(args.server_pid) as run:
                    arrays = list(
                        queens_download.stream(queens, n, batch_size=1024, packed=False)
                    )
                    boards = sum(len(a) for a in arrays)
                report("Board messages -> numpy", run, boards, reference)
                check_order(arrays, n)
                del arrays
            if "flight" in modes:
                import pyarrow.flight as flight

                client = flight.connect(f"grpc://{queens_download.target_of(args.addr)}")
                ticket = flight.Ticket(f'{{"n": {n}}}'.encode())
                with Run(args.server_pid) as run:
                    table = client.do_get(ticket).read_all()
                    boards = table.num_rows
                report("Flight -> pyarrow table", run, boards, reference)
                column = table.column(0).combine_chunks()
                check_order([column.values.to_numpy().reshape(-1, n)], n)
                client.close()
                del table, column
            if "replay" in modes:
                replay, replay_addr = start_replay(n, expected)
                replay_client = queens_download.connect(replay_addr)
                try:
                    for batch in batches:
                        with Run(replay.pid) as run:
                            arrays = list(
                                queens_download.stream(replay_client, n, batch_size=batch)
                            )
                            boards = sum(len(a) for a in arrays)
                        report(
                            f"replay -> numpy, batch {batch}", run, boards, reference
                        )
                        del arrays
                finally:
                    replay_client.close()
                    replay.kill()
                    replay.wait()
        print("median over the rounds:")
        for line, values in results.items():
            rates = [rate for rate, _ in values]
            ratios = [ratio for _, ratio in values]
            print(
                f"  {line:<30} {statistics.median(rates) / 1e6:6.2f} M boards/s "
                f"{statistics.median(ratios):5.2f}x count-ref  ({len(values)} runs: "
                f"{min(rates) / 1e6:.2f}-{max(rates) / 1e6:.2f} M)"
            )
    finally:
        queens.close()
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
