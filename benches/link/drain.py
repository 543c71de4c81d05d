"""The shaped-link bench's Python clients (`shaped.py` runs them):

- `python`: the package queens-client's Enumerate into numpy arrays (packed), with or
  without compressed responses (gzip), or in the front-coded layout (front);
- `flight`: the server's Arrow Flight DoGet into one pyarrow table, with the ticket's
  `compression` (none, zstd, lz4).

Each client prints one JSON line: boards received, and the first and last board. Not here:
the measuring (CPU, bytes, time: `shaped.py`), the delaying proxy (`benches/long_link.rs`).
"""

from __future__ import annotations

import argparse
import json


def drain_python(addr: str, n: int, compression: str) -> dict:
    from queens_client import Client

    boards, first, last = 0, None, None
    options = {} if compression == "today" else {"accept_compression": compression == "gzip"}
    asked = {"layout": "front_coded"} if compression == "front" else {}
    with Client(addr, **options) as client:
        for array in client.enumerate(n, **asked):
            if first is None:
                first = array[0].tolist()
            boards += len(array)
            last = array[-1]
    return {"boards": boards, "first": first, "last": None if last is None else last.tolist()}


def drain_flight(addr: str, n: int, compression: str) -> dict:
    import pyarrow.flight as flight

    question = {"n": n}
    if compression not in ("none", "today"):
        question["compression"] = compression
    client = flight.connect(f"grpc://{addr}")
    table = client.do_get(flight.Ticket(json.dumps(question).encode())).read_all()
    values = table.column("board").combine_chunks().values.to_numpy().reshape(-1, n)
    return {"boards": len(values), "first": values[0].tolist(), "last": values[-1].tolist()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("mode", choices=["python", "flight"])
    parser.add_argument("--addr", help="HOST:PORT of the server")
    parser.add_argument("--n", type=int, default=16)
    parser.add_argument("--compression", default="none")
    args = parser.parse_args()
    drain = drain_python if args.mode == "python" else drain_flight
    print(json.dumps(drain(args.addr, args.n, args.compression)))


if __name__ == "__main__":
    main()
