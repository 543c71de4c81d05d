"""The shaped-link bench's Python clients and its delaying proxy (`shaped.py` runs them):

- `python`: the package queens-client's Enumerate into numpy arrays (packed), with or
  without compressed responses (gzip), or in the front-coded layout (front);
- `flight`: the server's Arrow Flight DoGet into one pyarrow table, with the ticket's
  `compression` (none, zstd, lz4);
- `proxy`: a TCP proxy that holds every chunk it forwards for a fixed delay each way (a long
  round trip on loopback, where the kernel has no netem), until killed.

Each client prints one JSON line: boards received, and the first and last board. Not here:
the measuring (CPU, bytes, time: `shaped.py`).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time


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


async def proxy(listen: str, to: str, delay: float) -> None:
    """Forwards connections on `listen` to `to`, each chunk `delay` seconds late."""

    async def pump(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        queue: asyncio.Queue = asyncio.Queue()

        async def send() -> None:
            while True:
                due, chunk = await queue.get()
                if chunk is None:
                    break
                wait = due - time.monotonic()
                if wait > 0:
                    await asyncio.sleep(wait)
                writer.write(chunk)
                await writer.drain()
            writer.close()

        sender = asyncio.create_task(send())
        try:
            while chunk := await reader.read(1 << 18):
                queue.put_nowait((time.monotonic() + delay, chunk))
        finally:
            queue.put_nowait((0.0, None))
            await sender

    async def accept(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        host, port = to.rsplit(":", 1)
        up_reader, up_writer = await asyncio.open_connection(host, int(port))
        await asyncio.gather(
            pump(reader, up_writer), pump(up_reader, writer), return_exceptions=True
        )

    host, port = listen.rsplit(":", 1)
    server = await asyncio.start_server(accept, host, int(port))
    async with server:
        await server.serve_forever()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("mode", choices=["python", "flight", "proxy"])
    parser.add_argument("--addr", help="HOST:PORT of the server (proxy: where to forward)")
    parser.add_argument("--n", type=int, default=16)
    parser.add_argument("--compression", default="none")
    parser.add_argument("--listen", help="proxy: HOST:PORT to listen on")
    parser.add_argument("--delay-ms", type=float, default=50.0, help="proxy: each way")
    args = parser.parse_args()
    if args.mode == "proxy":
        asyncio.run(proxy(args.listen, args.addr, args.delay_ms / 1000))
        return
    drain = drain_python if args.mode == "python" else drain_flight
    print(json.dumps(drain(args.addr, args.n, args.compression)))


if __name__ == "__main__":
    main()
