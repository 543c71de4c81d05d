"""Bearer tokens: against a server started with --auth-tokens, the client sends the token of
--token, or of QUEENS_TOKEN when the flag is absent, as "authorization: Bearer TOKEN" on
every call it makes; without one, or with a wrong one, it fails at once with UNAUTHENTICATED
and says how to give one."""

from __future__ import annotations

import pathlib

import grpc
import pytest
from helpers import assert_complete

ALICE = "alice-token-0123456789abcdef"
BOB = "bob-token-fedcba9876543210"
WRONG = "mallory-token-0000000000000000"
TOKENS_FILE = f"""# tokens of the client tests
alice {ALICE}

# a second client
bob {BOB}
"""
COUNT_8 = "solutions: 92\nfundamental: 12\n"
N6_BOARDS = 4  # OEIS A000170(6)
# Every run of the client here is over in well under a second; a hang fails the test.
LIMIT = 30


@pytest.fixture
def auth_server(start_server, tmp_path: pathlib.Path):
    tokens = tmp_path / "tokens"
    tokens.write_text(TOKENS_FILE)
    return start_server("--auth-tokens", str(tokens))


@pytest.fixture
def client(auth_server, run_client):
    """Runs the client against auth_server, with extra environment variables."""

    def run(*args: str, env: dict[str, str] | None = None):
        return run_client("--addr", auth_server.addr, *args, env=env, timeout=LIMIT)

    return run


def boards_of(text: str) -> list[list[int]]:
    assert text == "" or text.endswith("\n"), text
    return [[int(c) for c in line.split(",")] for line in text.splitlines()]


def assert_refused(run, hint: str) -> None:
    """Exit status 1 at once, nothing on stdout, UNAUTHENTICATED and how to give a token
    on stderr, and no retrying."""
    assert run.returncode == 1, run.stderr
    assert run.stdout == ""
    assert "queens_download: UNAUTHENTICATED: " in run.stderr, run.stderr
    assert hint in run.stderr, run.stderr
    assert "--token TOKEN or $QUEENS_TOKEN" in run.stderr, run.stderr
    assert "resuming" not in run.stderr, run.stderr
    assert ALICE not in run.stderr and BOB not in run.stderr  # never printed


def test_without_a_token_the_client_is_refused(client):
    for command in (["count", "8"], ["enumerate", "6", "--quiet"], ["enumerate", "6"]):
        assert_refused(client(*command), "no token was given")
    # An empty QUEENS_TOKEN is no token.
    assert_refused(client("count", "8", env={"QUEENS_TOKEN": ""}), "no token was given")


def test_a_wrong_token_is_refused(client):
    # Unknown, a known one cut short, one with a character changed, a known one's name.
    for token in (WRONG, ALICE[:-1], ALICE[:-1] + "g", "alice"):
        for command in (["count", "8"], ["enumerate", "6", "--quiet"]):
            assert_refused(client("--token", token, *command), "the token was refused")
    run = client("count", "8", env={"QUEENS_TOKEN": WRONG})
    assert_refused(run, "the token was refused")


def test_the_token_of_the_flag_is_accepted(client):
    for token in (ALICE, BOB):  # every token of the file, comments and blank lines skipped
        run = client("--token", token, "count", "8")
        assert (run.returncode, run.stdout) == (0, COUNT_8), run.stderr
    run = client("--token", ALICE, "enumerate", "6", "--quiet")
    assert run.returncode == 0, run.stderr
    assert_complete(boards_of(run.stdout), 6, N6_BOARDS)
    # After the command as well as before it.
    run = client("count", "8", "--token", BOB)
    assert (run.returncode, run.stdout) == (0, COUNT_8), run.stderr
    run = client("enumerate", "6", "--quiet", "--token", ALICE)
    assert run.returncode == 0, run.stderr
    assert_complete(boards_of(run.stdout), 6, N6_BOARDS)
    assert_refused(client("count", "8", "--token", WRONG), "the token was refused")


def test_the_token_of_the_environment_is_accepted(client, tmp_path: pathlib.Path):
    env = {"QUEENS_TOKEN": ALICE}
    run = client("count", "8", env=env)
    assert (run.returncode, run.stdout) == (0, COUNT_8), run.stderr
    # With the progress bar (its total comes from a Count beside the stream), to a file.
    out = tmp_path / "n6.txt"
    run = client("enumerate", "6", "--out", str(out), env=env)
    assert run.returncode == 0, run.stderr
    assert_complete(boards_of(out.read_text()), 6, N6_BOARDS)
    assert ALICE not in run.stderr


def test_the_flag_wins_over_the_environment(client):
    run = client("--token", ALICE, "count", "8", env={"QUEENS_TOKEN": WRONG})
    assert (run.returncode, run.stdout) == (0, COUNT_8), run.stderr
    run = client("--token", WRONG, "count", "8", env={"QUEENS_TOKEN": ALICE})
    assert_refused(run, "the token was refused")


def test_every_kind_of_call_carries_the_token(auth_server, client_module, pb):
    """The library: Count (blocking and as a future), CountProgress and Enumerate."""
    request = pb.CountRequest(n=8)
    with client_module.connect(auth_server.addr, ALICE) as queens:
        stub = queens.stub
        assert queens.count(8, timeout=LIMIT).solutions == 92
        assert stub.Count.future(request, timeout=LIMIT).result().solutions == 92
        updates = list(stub.CountProgress(request, timeout=LIMIT))
        assert updates[-1].done and updates[-1].solutions == 92
        boards = [
            list(board.columns)
            for reply in stub.Enumerate(
                pb.EnumerateRequest(n=6, compact=True), timeout=LIMIT
            )
            for board in reply.boards
        ]
        assert_complete(boards, 6, N6_BOARDS)
    for token in (None, WRONG):
        with client_module.connect(auth_server.addr, token) as queens:
            stub = queens.stub
            calls = [
                lambda: stub.Count(request, timeout=LIMIT),
                lambda: stub.Count.future(request, timeout=LIMIT).result(),
                lambda: list(stub.CountProgress(request, timeout=LIMIT)),
                lambda: list(
                    stub.Enumerate(pb.EnumerateRequest(n=6, compact=True), timeout=LIMIT)
                ),
            ]
            for call in calls:
                with pytest.raises(grpc.RpcError) as refused:
                    call()
                assert refused.value.code() == grpc.StatusCode.UNAUTHENTICATED, token


def test_a_server_without_tokens_ignores_one(addr, run_client):
    run = run_client("--addr", addr, "--token", ALICE, "count", "8", timeout=LIMIT)
    assert (run.returncode, run.stdout) == (0, COUNT_8), run.stderr
