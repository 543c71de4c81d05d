"""Compressed responses: through a proxy that counts the bytes the server sends, Enumerate of
n = 12 with the default (gzip accepted) and with accept_compression=False gives the same
boards, the first in under half the bytes of the second; the front-coded layout gives the
same arrays as the records (with and without gzip, every n to 12, cut into small messages,
resumed, limited, sharded) in under a third of their bytes; malformed front-coded data is a
ValueError. QUEENS_COMPRESS_ADDR names a server
that offers gzip (tests/python_package.rs starts it)."""

from __future__ import annotations

import os
import socket
import threading
from collections.abc import Iterator

import numpy as np
import pytest
from queens_client import Client


class CountingProxy:
    """Forwards each connection on a loopback port to `target`, counting the bytes that come
    back from it."""

    def __init__(self, target: str) -> None:
        host, port = target.rsplit(":", 1)
        self.target = (host, int(port))
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.address = "127.0.0.1:%d" % self.listener.getsockname()[1]
        self.received = 0
        self.lock = threading.Lock()
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            server = socket.create_connection(self.target)
            threading.Thread(target=self._pump, args=(client, server, False), daemon=True).start()
            threading.Thread(target=self._pump, args=(server, client, True), daemon=True).start()

    def _pump(self, source: socket.socket, sink: socket.socket, count: bool) -> None:
        try:
            while chunk := source.recv(1 << 16):
                if count:
                    with self.lock:
                        self.received += len(chunk)
                sink.sendall(chunk)
        except OSError:
            pass
        finally:
            for s in (source, sink):
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

    def close(self) -> None:
        self.listener.close()


@pytest.fixture()
def proxy() -> Iterator[CountingProxy]:
    target = os.environ.get("QUEENS_COMPRESS_ADDR")
    if not target:
        pytest.fail("set QUEENS_COMPRESS_ADDR: a server offering gzip")
    counting = CountingProxy(target)
    yield counting
    counting.close()


def drain(address: str, layout: str = "records", **options: bool) -> np.ndarray:
    with Client(address, **options) as client:
        return np.concatenate(list(client.enumerate(12, layout=layout)))


def test_compressed_responses_are_the_same_boards_in_fewer_bytes(proxy: CountingProxy) -> None:
    plain = drain(proxy.address, accept_compression=False)
    plain_bytes = proxy.received
    assert plain.shape == (14200, 12)
    assert plain_bytes >= plain.nbytes, "uncompressed: at least the records"
    compressed = drain(proxy.address)
    compressed_bytes = proxy.received - plain_bytes
    assert np.array_equal(compressed, plain)
    assert compressed_bytes * 2 < plain_bytes, (compressed_bytes, plain_bytes)


def test_front_coded_boards_are_the_records_in_under_a_third_of_the_bytes(
    proxy: CountingProxy,
) -> None:
    plain = drain(proxy.address, accept_compression=False)
    plain_bytes = proxy.received
    coded = drain(proxy.address, layout="front_coded", accept_compression=False)
    coded_bytes = proxy.received - plain_bytes
    assert coded.dtype == np.uint8 and coded.shape == plain.shape
    assert np.array_equal(coded, plain)
    assert coded_bytes * 3 < plain_bytes, (coded_bytes, plain_bytes)
    # Under gzip as well.
    assert np.array_equal(drain(proxy.address, layout="front_coded"), plain)


def test_front_coded_boards_equal_the_records_however_asked(proxy: CountingProxy) -> None:
    asks = [{"n": n} for n in range(1, 12)]
    asks += [
        {"n": 10, "batch_size": 7},
        {"n": 10, "batch_size": 1},
        {"n": 11, "start_after": [5, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0], "limit": 300},
        {"n": 11, "shard": (2, 5), "batch_size": 100},
        {"n": 11, "fundamental": True},
        {"n": 10, "fixed": [(0, 3)]},
    ]
    with Client(proxy.address, accept_compression=False) as client:
        for ask in asks:
            n = ask.pop("n")
            records = list(client.enumerate(n, **ask))
            coded = list(client.enumerate(n, layout="front_coded", **ask))
            assert [len(a) for a in coded] == [len(a) for a in records], (n, ask)
            whole = np.concatenate(records) if records else np.empty((0, n), np.uint8)
            assert np.array_equal(
                np.concatenate(coded) if coded else np.empty((0, n), np.uint8), whole
            ), (n, ask)
        with pytest.raises(ValueError, match="layout"):
            next(client.enumerate(8, layout="rows"))


def test_malformed_front_coded_data_is_a_value_error() -> None:
    from queens_client._front import decode

    # n = 4's two solutions, 1,3,0,2 and 2,0,3,1: prefixes 0 0, columns 0: 1 2, 1: 3 0,
    # 2: 0 3 (column 3 follows).
    good = bytes([0x00, 0x12, 0x30, 0x03])
    assert decode(4, 2, good).tolist() == [[1, 3, 0, 2], [2, 0, 3, 1]]
    for boards, data in [
        (2, good[:-1]),
        (3, good),
        (1, good),
        (2, bytes([0x10, 0x12, 0x30, 0x03])),  # the first board with a prefix
        (2, bytes([0x00, 0x12, 0x34, 0x03])),  # a column of n
        (1, b""),
        (0, b"\x00"),
    ]:
        with pytest.raises(ValueError):
            decode(4, boards, data)
