"""Fixtures of the example's tests: the package's client and stubs, a server to call, and the
download program as a module and as a program.

The server comes from the environment: QUEENS_ADDR (host:port of a running server) for the
tests that only call it, QUEENS_BIN (the `queens` binary) for those that stop and restart
their own. `cargo test` sets both (tests/python_client.rs). Run by hand:

    QUEENS_ADDR=127.0.0.1:50051 QUEENS_BIN=../../target/debug/queens .venv/bin/python -m pytest tests
"""

from __future__ import annotations

import os
import pathlib
import socket
import subprocess
import threading
import sys

import pytest

EXAMPLE = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(EXAMPLE))


@pytest.fixture(scope="session")
def client_module():
    """The example program as a module (queens_download.py, built on the installed package
    queens-client, clients/python)."""
    import queens_download

    return queens_download


@pytest.fixture(scope="session")
def files():
    """The example's file forms (board_files.py: text lines, .npy)."""
    import board_files

    return board_files


@pytest.fixture(scope="session")
def pb():
    """The package's message stubs."""
    from queens_client.pb import queens_pb2

    return queens_pb2


@pytest.fixture(scope="session")
def addr() -> str:
    value = os.environ.get("QUEENS_ADDR")
    if not value:
        pytest.fail("set QUEENS_ADDR to the host:port of a running queens server")
    return value


@pytest.fixture(scope="session")
def queens(addr: str, client_module):
    """The package's Client of the server under test, as the program opens it."""
    with client_module.connect(addr) as opened:
        yield opened


@pytest.fixture(scope="session")
def stub(queens):
    """The raw calls (grpc.RpcError on failure), for the Board form and the wire's details."""
    return queens.stub


@pytest.fixture
def run_client():
    """Runs queens_download.py with arguments (and extra environment variables); returns the
    CompletedProcess (text output)."""

    def run(
        *args: str, timeout: float = 60, env: dict[str, str] | None = None
    ) -> subprocess.CompletedProcess:
        return subprocess.run(  # noqa: PLW1510 (the tests check returncode)
            [sys.executable, str(EXAMPLE / "queens_download.py"), *args],
            env={**client_env(), **(env or {})},
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=timeout,
        )

    return run


@pytest.fixture
def start_client():
    """Starts queens_download.py in the background (stderr to a file); killed at teardown."""
    started: list[subprocess.Popen] = []

    def start(*args: str, stderr: pathlib.Path) -> subprocess.Popen:
        process = subprocess.Popen(
            [sys.executable, str(EXAMPLE / "queens_download.py"), *args],
            env=client_env(),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=stderr.open("wb"),
        )
        started.append(process)
        return process

    yield start
    for process in started:
        process.kill()
        process.wait(timeout=10)


def client_env() -> dict[str, str]:
    """The tests' environment for a client program, without a QUEENS_TOKEN of the caller's
    (a test that wants one passes it)."""
    inherited = {k: v for k, v in os.environ.items() if k != "QUEENS_TOKEN"}
    return {**inherited, "PYTHONDONTWRITEBYTECODE": "1"}


def _drain(stream) -> None:
    """Reads `stream` to its end, ignoring what it says (and its closing under us)."""
    try:
        for _ in stream:
            pass
    except (OSError, ValueError):
        pass


class Server:
    """The `queens` binary serving on one fixed loopback port, so that it can be stopped and
    started again where its clients expect it."""

    def __init__(self, binary: str, port: int, flags: tuple[str, ...] = ()) -> None:
        self.binary, self.port, self.flags = binary, port, flags
        self.addr = f"127.0.0.1:{port}"
        self.process: subprocess.Popen | None = None

    def start(self) -> None:
        assert self.process is None
        self.process = subprocess.Popen(
            [self.binary, "serve", "--addr", self.addr, *self.flags],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        line = self.process.stderr.readline().decode()
        if "listening on" not in line:
            self.stop()
            raise RuntimeError(f"queens serve on {self.addr} said {line!r}")
        # The server logs a line per call: keep reading them, or a full pipe would stall it.
        threading.Thread(target=_drain, args=(self.process.stderr,), daemon=True).start()

    def stop(self, kill: bool = True) -> None:
        assert self.process is not None
        if kill:
            self.process.kill()
        else:
            self.process.terminate()  # SIGTERM: a graceful shutdown
        self.process.wait(timeout=30)
        self.process.stderr.close()
        self.process = None


@pytest.fixture
def start_server():
    """Starts servers of this test's own, each on a free port, with extra `serve` flags;
    stopped at teardown."""
    binary = os.environ.get("QUEENS_BIN")
    if not binary:
        pytest.fail(
            "set QUEENS_BIN to the queens binary (e.g. ../../target/debug/queens)"
        )
    started: list[Server] = []

    def start(*flags: str) -> Server:
        for attempt in range(5):
            with socket.socket() as probe:
                probe.bind(("127.0.0.1", 0))
                port = probe.getsockname()[1]
            server = Server(binary, port, flags)
            try:
                server.start()
                break
            except RuntimeError:  # someone took the port in between: try another
                if attempt == 4:
                    raise
        started.append(server)
        return server

    yield start
    for server in started:
        if server.process is not None:
            server.stop()


@pytest.fixture
def own_server(start_server) -> Server:
    """A server of this test's own, with the default settings."""
    return start_server()
