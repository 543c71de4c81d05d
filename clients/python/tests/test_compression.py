"""Compressed responses: through a proxy that counts the bytes the server sends, Enumerate of
n = 12 with the default (gzip accepted) and with accept_compression=False gives the same
boards, the first in under half the bytes of the second. QUEENS_COMPRESS_ADDR names a server
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


def drain(address: str, **options: bool) -> np.ndarray:
    with Client(address, **options) as client:
        return np.concatenate(list(client.enumerate(12)))


def test_compressed_responses_are_the_same_boards_in_fewer_bytes(proxy: CountingProxy) -> None:
    plain = drain(proxy.address, accept_compression=False)
    plain_bytes = proxy.received
    assert plain.shape == (14200, 12)
    assert plain_bytes >= plain.nbytes, "uncompressed: at least the records"
    compressed = drain(proxy.address)
    compressed_bytes = proxy.received - plain_bytes
    assert np.array_equal(compressed, plain)
    assert compressed_bytes * 2 < plain_bytes, (compressed_bytes, plain_bytes)
