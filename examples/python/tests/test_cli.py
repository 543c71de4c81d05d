"""What a newcomer to the client program hits: http:// URLs as the Rust CLI takes
them, --addr after the command, --limit and --start-after, a server that is not running,
and running a finished download again."""

from __future__ import annotations

import pathlib
import socket
import time

import numpy
import pytest
from helpers import read_boards

N = 10
SOLUTIONS = 724  # OEIS A000170(10)
# Every run here is over in a few seconds at most; a hang fails the test.
LIMIT = 60


@pytest.fixture(scope="module")
def n10(stub, pb) -> list[list[int]]:
    """Every board of n = 10, in order, from the Board stream."""
    replies = stub.Enumerate(pb.EnumerateRequest(n=N, compact=True), timeout=LIMIT)
    return [list(b.columns) for reply in replies for b in reply.boards]


def lines(boards: list[list[int]]) -> str:
    return "".join(",".join(map(str, b)) + "\n" for b in boards)


@pytest.fixture
def dead_addr() -> str:
    """host:port of a loopback port that nothing listens on (bound, then let go)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    return f"127.0.0.1:{port}"


def test_http_urls_are_accepted(run_client, addr, n10):
    for url in (f"http://{addr}", f"http://{addr}/", f"HTTP://{addr}"):
        done = run_client("--addr", url, "count", "8", timeout=LIMIT)
        assert (done.returncode, done.stdout) == (
            0,
            "solutions: 92\nfundamental: 12\n",
        ), (
            url,
            done.stderr,
        )
        done = run_client("--addr", url, "enumerate", str(N), "--quiet", timeout=LIMIT)
        assert (done.returncode, done.stdout) == (0, lines(n10)), (url, done.stderr)


def test_https_and_other_addresses_are_refused_clearly(run_client):
    cases = [
        ("https://127.0.0.1:50051", "https:// (TLS) is not supported"),
        ("grpc://127.0.0.1:50051", "unknown scheme grpc://"),
        ("127.0.0.1", "give HOST:PORT or http://HOST:PORT"),
        ("http://127.0.0.1:50051/queens", "give HOST:PORT or http://HOST:PORT"),
    ]
    for addr, message in cases:
        for command in (["count", "8"], ["enumerate", "8", "--quiet"]):
            done = run_client("--addr", addr, *command, timeout=LIMIT)
            assert done.returncode == 2, (
                addr,
                done.stderr,
            )  # a usage error, as argparse's
            assert f"argument --addr: {addr}: {message}" in done.stderr, done.stderr
            assert done.stdout == ""


def test_addr_and_token_after_the_command(run_client, addr, n10):
    done = run_client("count", "8", "--addr", addr, timeout=LIMIT)
    assert (done.returncode, done.stdout) == (0, "solutions: 92\nfundamental: 12\n"), (
        done.stderr
    )
    done = run_client("enumerate", str(N), "--quiet", "--addr", addr, timeout=LIMIT)
    assert (done.returncode, done.stdout) == (0, lines(n10)), done.stderr
    # --token after the command is read too (this server takes any token, test_auth.py
    # checks that it is sent); after the command wins over before it, as the last flag does.
    done = run_client(
        "--addr", "127.0.0.1:1", "count", "8", "--addr", addr, "--token", "t"
    )
    assert (done.returncode, done.stdout) == (0, "solutions: 92\nfundamental: 12\n"), (
        done.stderr
    )


def test_limit_and_start_after(run_client, addr, n10):
    def enumerate_(*flags: str) -> str:
        done = run_client(
            "--addr", addr, "enumerate", str(N), "--quiet", *flags, timeout=LIMIT
        )
        assert done.returncode == 0, done.stderr
        return done.stdout

    assert enumerate_("--limit", "5") == lines(n10[:5])
    assert enumerate_("--limit", "0") == lines(n10)
    assert enumerate_("--limit", "100000") == lines(n10)
    after = ",".join(map(str, n10[99]))
    assert enumerate_("--start-after", after) == lines(n10[100:])
    assert enumerate_("--start-after", after, "--limit", "7") == lines(n10[100:107])
    # Not a solution: the boards after it in lexicographic order.
    later = [b for b in n10 if b > [5, 0, 0, 0, 0, 0, 0, 0, 0, 0]]
    assert enumerate_("--start-after", "5,0,0,0,0,0,0,0,0,0") == lines(later)
    assert enumerate_("--start-after", ",".join(map(str, n10[-1]))) == ""
    # With small batches and request features.
    assert enumerate_("--limit", "9", "--batch-size", "2", "--fixed", "0,1") == lines(
        [b for b in n10 if b[0] == 1][:9]
    )


def test_start_after_is_checked_before_any_call(run_client, dead_addr):
    """A bad --start-after is refused by the client itself (the address is dead: no server
    could have said so), naming what is wrong."""
    cases = [
        ("1,3,0", "1,3,0 has 3 columns, not n = 4"),
        ("1,3,0,2,0", "1,3,0,2,0 has 5 columns, not n = 4"),
        ("1,3,0,4", "column 4 (row 3) is not below n = 4"),
        ("1,-3,0,2", "column -3 (row 1) is not below n = 4"),
        ("1;3;0;2", "'1;3;0;2': give a column vector C,C,..., e.g. 1,3,0,2"),
        ("", "give a column vector"),
    ]
    for text, message in cases:
        done = run_client("--addr", dead_addr, "enumerate", "4", "--start-after", text)
        assert done.returncode == 2, done.stderr
        assert "argument --start-after: " in done.stderr and message in done.stderr, (
            done.stderr
        )
        assert "cannot connect" not in done.stderr
    done = run_client("--addr", dead_addr, "enumerate", "4", "--limit", "-1")
    assert done.returncode == 2 and "argument --limit: " in done.stderr, done.stderr


def test_a_server_not_running_fails_at_once(
    run_client, dead_addr, tmp_path: pathlib.Path
):
    for address in (dead_addr, f"http://{dead_addr}"):
        for command in (
            ["count", "8"],
            ["enumerate", "8", "--quiet"],
            ["enumerate", "8"],  # with the progress bar and its Count
            ["enumerate", "8", "--out", str(tmp_path / "n8.txt")],
            ["enumerate", "8", "--out", str(tmp_path / "n8.npy")],
        ):
            start = time.monotonic()
            done = run_client("--addr", address, *command, timeout=LIMIT)
            seconds = time.monotonic() - start
            assert done.returncode == 1, (command, done.stderr)
            assert seconds < 10, f"{command} took {seconds:.1f} s to fail"
            assert f"queens_download: cannot connect to {address}: " in done.stderr, (
                done.stderr
            )
            assert "Connection refused" in done.stderr, done.stderr
            assert "is the server running there?" in done.stderr, done.stderr
            assert "resuming" not in done.stderr, done.stderr
            assert done.stdout == ""
    # Nothing left behind: no partial file that would look like a started download.
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("name", ["n10.txt", "n10.npy"])
def test_a_finished_download_is_already_complete(
    run_client, addr, dead_addr, n10, tmp_path: pathlib.Path, name
):
    out = tmp_path / name
    done = run_client(
        "--addr", addr, "enumerate", str(N), "--out", str(out), timeout=LIMIT
    )
    assert done.returncode == 0, done.stderr
    assert "resuming" not in done.stderr and "already complete" not in done.stderr
    assert read(out) == n10
    before = out.read_bytes()
    # Run again, against a dead address to show that it asks no server anything.
    again = run_client("--addr", dead_addr, "enumerate", str(N), "--out", str(out))
    assert again.returncode == 0, again.stderr
    assert f"{out} is already complete ({SOLUTIONS} boards)" in again.stderr, (
        again.stderr
    )
    assert "resuming" not in again.stderr and "cannot connect" not in again.stderr
    assert out.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == [name]


@pytest.mark.parametrize("name", ["n10.txt", "n10.npy"])
def test_limit_counts_what_the_file_holds(
    run_client, addr, dead_addr, n10, tmp_path: pathlib.Path, name
):
    out = tmp_path / name
    part = tmp_path / f"{name}.part"
    # A download of 50 boards that stopped after 20 (written as the client would have).
    if name.endswith(".npy"):
        with part.open("wb") as f:
            numpy.save(f, numpy.array(n10[:20], dtype=numpy.uint8))
    else:
        part.write_text(lines(n10[:20]))
    done = run_client(
        "--addr", addr, "enumerate", str(N), "--limit", "50", "--batch-size", "8",
        "--out", str(out), "--quiet", timeout=LIMIT,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert (
        f"holds 20 boards; resuming after {','.join(map(str, n10[19]))}" in done.stderr
    )
    assert read(out) == n10[:50]
    assert not part.exists()
    # A .part that already holds the limit is finished without a call.
    out.rename(part)
    done = run_client(
        "--addr",
        dead_addr,
        "enumerate",
        str(N),
        "--limit",
        "50",
        "--out",
        str(out),
        "--quiet",
    )
    assert done.returncode == 0, done.stderr
    assert read(out) == n10[:50]


def read(path: pathlib.Path) -> list[list[int]]:
    if path.suffix == ".npy":
        return numpy.load(path).tolist()
    return read_boards(path)


def test_an_unwritable_file_is_an_error_not_a_traceback(run_client, addr, tmp_path):
    out = tmp_path / "no such folder" / "n8.txt"
    done = run_client("--addr", addr, "enumerate", "8", "--out", str(out), "--quiet")
    assert done.returncode == 1, done.stderr
    assert "queens_download: [Errno 2] No such file or directory" in done.stderr, (
        done.stderr
    )
    assert "Traceback" not in done.stderr
