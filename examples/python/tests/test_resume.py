"""An interrupted download resumes to a file with every board of n = 12 exactly once: after
the client is killed (restarted by hand, as a user would), and after the server is killed or
shut down under it (the client resumes by itself)."""

from __future__ import annotations

import pathlib
import signal

from helpers import assert_complete, read_boards, wait_for_lines

N, SOLUTIONS = 12, 14200  # OEIS A000170(12)


def download_args(addr: str, out: pathlib.Path, batch_size: int = 1) -> list[str]:
    # Batches of one board keep a download slow enough (~10k boards/s) to interrupt.
    return ["--addr", addr, "enumerate", str(N), "--batch-size", str(batch_size), "--out", str(out)]


def test_killed_client_resumes_when_run_again(addr, start_client, run_client, tmp_path: pathlib.Path):
    out = tmp_path / "n12.txt"
    seen = 0
    for round_ in range(3):
        client = start_client(*download_args(addr, out), stderr=tmp_path / f"client{round_}.err")
        seen = wait_for_lines(out, seen + 100, client)
        client.send_signal(signal.SIGKILL)
        client.wait(timeout=10)
        partial = read_boards_allowing_torn_tail(out)
        assert seen <= len(partial) < SOLUTIONS, "the download ended before it was interrupted"
        seen = len(partial)
    # A crash in the middle of a write leaves a torn last line: it must be dropped, not kept.
    with out.open("ab") as torn:
        torn.write(b"11,3,")
    done = run_client(*download_args(addr, out, batch_size=64), "--quiet")
    assert done.returncode == 0, done.stderr
    assert f"holds {seen} boards; resuming after" in done.stderr, done.stderr
    assert_complete(read_boards(out), N, SOLUTIONS)
    # Running it once more finds nothing left to do and changes nothing.
    again = run_client(*download_args(addr, out, batch_size=64), "--quiet")
    assert again.returncode == 0, again.stderr
    assert_complete(read_boards(out), N, SOLUTIONS)


def test_client_resumes_by_itself_when_the_server_is_killed(own_server, start_client, tmp_path: pathlib.Path):
    out = tmp_path / "n12.txt"
    err = tmp_path / "client.err"
    client = start_client(*download_args(own_server.addr, out), stderr=err)
    wait_for_lines(out, 100, client)
    own_server.stop(kill=True)
    lines = out.read_bytes().count(b"\n")
    assert lines < SOLUTIONS, "the download ended before the server was killed"
    own_server.start()
    assert client.wait(timeout=60) == 0, err.read_text()
    assert "UNAVAILABLE" in err.read_text()
    # The bar got its total from Count (long answered: this download takes seconds).
    assert "14.2k/14.2k" in err.read_text()
    assert_complete(read_boards(out), N, SOLUTIONS)


def test_client_resumes_by_itself_when_the_server_shuts_down(own_server, start_client, tmp_path: pathlib.Path):
    out = tmp_path / "n12.txt"
    err = tmp_path / "client.err"
    client = start_client(*download_args(own_server.addr, out), stderr=err)
    wait_for_lines(out, 100, client)
    own_server.stop(kill=False)  # SIGTERM: open streams end with UNAVAILABLE
    assert out.read_bytes().count(b"\n") < SOLUTIONS, "the download ended before the shutdown"
    own_server.start()
    assert client.wait(timeout=60) == 0, err.read_text()
    assert "UNAVAILABLE" in err.read_text()
    assert_complete(read_boards(out), N, SOLUTIONS)


def read_boards_allowing_torn_tail(path: pathlib.Path) -> list[list[int]]:
    text = path.read_text()
    complete = text[: text.rfind("\n") + 1]
    return [[int(c) for c in line.split(",")] for line in complete.splitlines()]
