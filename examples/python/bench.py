#!/usr/bin/env python3
"""Measures the client's download speed by batch size: boards/s of `download` for one n.

    .venv/bin/python bench.py [--addr HOST:PORT] [--n 14] [BATCH ...]   (default 1 64 1024 16384)

Run it against a release server (`cargo run --release -- serve`); boards go to a temporary
file, as with --out.
"""

import argparse
import tempfile
import time

import queens_pb2 as pb

import queens_client


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--addr", default=queens_client.DEFAULT_ADDR)
    parser.add_argument("--n", type=int, default=14)
    parser.add_argument("batches", type=int, nargs="*", default=[1, 64, 1024, 16384])
    args = parser.parse_args()
    channel, stub = queens_client.connect(args.addr)
    with channel:
        for batch in args.batches:
            request = pb.EnumerateRequest(n=args.n, compact=True, batch_size=batch)
            with tempfile.TemporaryFile() as out:
                start = time.perf_counter()
                boards = queens_client.download(stub, request, out)
                seconds = time.perf_counter() - start
            print(
                f"n = {args.n}, batch {batch:>5}: {boards} boards in {seconds:6.2f} s = {boards / seconds:9,.0f} boards/s"
            )


if __name__ == "__main__":
    main()
