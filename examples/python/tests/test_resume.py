"""An interrupted download resumes to a file with every board of n = 12 exactly once: after
the client is killed (restarted by hand, as a user would), and after the server is killed or
shut down under it (the client resumes by itself). A busy server (every search slot taken)
is waited for; the resume point survives a torn last line. The download grows in FILE.part,
renamed to FILE when complete; run again, a complete FILE is left as it is."""

from __future__ import annotations

import pathlib
import signal
import time

import pytest
from helpers import assert_complete, read_boards, wait_for_lines

N, SOLUTIONS = 12, 14200  # OEIS A000170(12)
# The server pushes a stream as fast as the client's gRPC library takes it in, and that
# library buffers hundreds of kilobytes ahead of the program (seen here: up to ~24,000
# one-board messages of n = 13). To go away mid-stream, the server needs a stream well beyond
# that: n = 13 (1.5 MB of one-board messages).
BIG_N, BIG_SOLUTIONS = 13, 73712  # OEIS A000170(13)


def download_args(
    addr: str, out: pathlib.Path, batch_size: int = 1, n: int = N
) -> list[str]:
    # Batches of one board keep a download slow enough (~10k boards/s) to interrupt.
    return [
        "--addr",
        addr,
        "enumerate",
        str(n),
        "--batch-size",
        str(batch_size),
        "--out",
        str(out),
    ]


def test_killed_client_resumes_when_run_again(
    addr, start_client, run_client, tmp_path: pathlib.Path
):
    out = tmp_path / "n12.txt"
    part = tmp_path / "n12.txt.part"
    seen = 0
    for round_ in range(3):
        client = start_client(
            *download_args(addr, out), stderr=tmp_path / f"client{round_}.err"
        )
        seen = wait_for_lines(part, seen + 100, client)
        client.send_signal(signal.SIGKILL)
        client.wait(timeout=10)
        assert not out.exists()
        partial = read_boards_allowing_torn_tail(part)
        assert seen <= len(partial) < SOLUTIONS, (
            "the download ended before it was interrupted"
        )
        seen = len(partial)
    # A crash in the middle of a write leaves a torn last line: it must be dropped, not kept.
    with part.open("ab") as torn:
        torn.write(b"11,3,")
    done = run_client(*download_args(addr, out, batch_size=64), "--quiet")
    assert done.returncode == 0, done.stderr
    assert f"{part} holds {seen} boards; resuming after" in done.stderr, done.stderr
    assert_complete(read_boards(out), N, SOLUTIONS)
    assert not part.exists()
    # Running it once more finds nothing left to do and changes nothing.
    before = out.read_bytes()
    again = run_client(*download_args(addr, out, batch_size=64), "--quiet")
    assert again.returncode == 0, again.stderr
    assert f"{out} is already complete ({SOLUTIONS} boards)" in again.stderr, again.stderr
    assert "resuming" not in again.stderr, again.stderr
    assert out.read_bytes() == before


@pytest.mark.parametrize(
    "kill",
    [True, False],
    ids=["killed", "shut down"],  # SIGKILL, or SIGTERM: open streams end with UNAVAILABLE
)
def test_client_resumes_by_itself_when_the_server_goes_away(
    kill, own_server, start_client, tmp_path: pathlib.Path
):
    out = tmp_path / "n13.txt"
    err = tmp_path / "client.err"
    part = tmp_path / "n13.txt.part"
    client = start_client(*download_args(own_server.addr, out, n=BIG_N), stderr=err)
    wait_for_lines(part, 100, client)
    own_server.stop(kill=kill)
    assert part.read_bytes().count(b"\n") < BIG_SOLUTIONS, (
        "the download ended before the server went away"
    )
    own_server.start()
    assert client.wait(timeout=90) == 0, err.read_text()
    assert "UNAVAILABLE" in err.read_text()
    assert_complete(read_boards(out), BIG_N, BIG_SOLUTIONS)


def test_client_waits_for_a_busy_server(
    start_server, client_module, pb, start_client, tmp_path: pathlib.Path
):
    server = start_server("--max-searches", "1")
    with client_module.connect(server.addr) as queens:
        stub = queens.stub
        # Another stream holds the only search slot (n = 16 has 14.7 million boards).
        holder = stub.Enumerate(pb.EnumerateRequest(n=16, compact=True))
        next(holder)
        # n = 13 is a long search (up to n = 12 a stream is small and takes no slot).
        out = tmp_path / "n13.txt"
        err = tmp_path / "client.err"
        client = start_client(
            "--addr", server.addr, "enumerate", "13", "--out", str(out), stderr=err
        )
        deadline = time.monotonic() + 30
        while "RESOURCE_EXHAUSTED" not in err.read_text():
            assert client.poll() is None, err.read_text()
            assert time.monotonic() < deadline, "the client was never refused"
            time.sleep(0.05)
        holder.cancel()  # the slot frees up: the client gets its turn
        assert client.wait(timeout=60) == 0, err.read_text()
    assert_complete(read_boards(out), 13, 73712)


def read_boards_allowing_torn_tail(path: pathlib.Path) -> list[list[int]]:
    text = path.read_text()
    complete = text[: text.rfind("\n") + 1]
    return [[int(c) for c in line.split(",")] for line in complete.splitlines()]


def test_resume_point_of_a_file(files, tmp_path: pathlib.Path):
    path = tmp_path / "boards.txt"
    cases = [
        (b"", None, 0, b""),
        (b"1,3,", None, 0, b""),  # torn first line
        (b"1,3,0,2\n", [1, 3, 0, 2], 1, b"1,3,0,2\n"),
        (b"1,3,0,2\n2,0", [1, 3, 0, 2], 1, b"1,3,0,2\n"),
        (b"1,3,0,2\n2,0,3,1\n", [2, 0, 3, 1], 2, b"1,3,0,2\n2,0,3,1\n"),
    ]
    for content, last, done, kept in cases:
        path.write_bytes(content)
        with path.open("a+b") as out:
            assert files.read_resume_point(out, 4) == (last, done), content
            out.write(b"X")  # appends land after what was kept
        assert path.read_bytes() == kept + b"X", content
    # A long file: the last line is found across read steps.
    boards = [f"{i % 10},{i % 7},{i % 3},{i % 4}\n".encode() for i in range(5000)]
    path.write_bytes(b"".join(boards) + b"3,")
    with path.open("a+b") as out:
        assert files.read_resume_point(out, 4) == (
            [4999 % 10, 4999 % 7, 4999 % 3, 4999 % 4],
            5000,
        )
    # Boards of another n are refused rather than resumed from.
    path.write_bytes(b"1,3,0,2\n")
    with path.open("a+b") as out, pytest.raises(SystemExit):
        files.read_resume_point(out, 5)


def test_which_errors_are_retried(client_module):
    import grpc
    from queens_client import QueensError

    codes = grpc.StatusCode
    retried = [
        (codes.UNAVAILABLE, "server shutting down"),
        (codes.RESOURCE_EXHAUSTED, "all 2 search slots are busy; retry later"),
        (codes.DEADLINE_EXCEEDED, "the search ran for its time limit"),
    ]
    answers = [
        (codes.INVALID_ARGUMENT, "n: 0 is not a supported board size"),
        (codes.UNAUTHENTICATED, "no token"),
        # grpcio's own limit on a message it receives: the same again on every try.
        (
            codes.RESOURCE_EXHAUSTED,
            "Received message larger than max (4194309 vs. 4194304)",
        ),
    ]
    assert all(client_module.retryable(QueensError(*case)) for case in retried)
    assert not any(client_module.retryable(QueensError(*case)) for case in answers)
