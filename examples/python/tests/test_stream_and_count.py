"""Enumerate and Count through the generated stubs and through the client program."""

from __future__ import annotations

import pathlib

from helpers import assert_complete, read_boards

N4 = [
    ([1, 3, 0, 2], [".Q..", "...Q", "Q...", "..Q."]),
    ([2, 0, 3, 1], ["..Q.", "Q...", "...Q", ".Q.."]),
]


def test_n4_gives_the_classic_boards(stub, pb):
    replies = list(stub.Enumerate(pb.EnumerateRequest(n=4), timeout=30))
    boards = [
        (list(b.columns), list(b.rows)) for reply in replies for b in reply.boards
    ]
    assert boards == N4


def test_n4_compact_leaves_rows_out(stub, pb):
    replies = stub.Enumerate(pb.EnumerateRequest(n=4, compact=True), timeout=30)
    boards = [
        (list(b.columns), list(b.rows)) for reply in replies for b in reply.boards
    ]
    assert boards == [(columns, []) for columns, _ in N4]


def test_client_prints_n4_column_vectors(run_client, addr):
    done = run_client("--addr", addr, "enumerate", "4", "--quiet")
    assert done.returncode == 0, done.stderr
    assert done.stdout == "1,3,0,2\n2,0,3,1\n"


def test_n10_compact_in_batches_of_64(stub, pb):
    replies = list(
        stub.Enumerate(
            pb.EnumerateRequest(n=10, compact=True, batch_size=64), timeout=60
        )
    )
    assert all(len(reply.boards) <= 64 for reply in replies)
    assert max(len(reply.boards) for reply in replies) == 64
    boards = [list(b.columns) for reply in replies for b in reply.boards]
    assert all(not b.rows for reply in replies for b in reply.boards)
    assert_complete(boards, 10, 724)


def test_client_downloads_n10_to_a_file(run_client, addr, tmp_path: pathlib.Path):
    out = tmp_path / "n10.txt"
    done = run_client(
        "--addr", addr, "enumerate", "10", "--batch-size", "64", "--out", str(out)
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == ""
    # The progress bar (its percentage and ETA come once the Count asked alongside is answered).
    assert "724 boards" in done.stderr or "724/724" in done.stderr, done.stderr
    assert "boards/s" in done.stderr, done.stderr
    assert_complete(read_boards(out), 10, 724)


def test_client_download_of_a_shard_and_fundamental(
    run_client, addr, tmp_path: pathlib.Path
):
    parts = []
    for index in range(3):
        out = tmp_path / f"part{index}.txt"
        done = run_client(
            "--addr",
            addr,
            "enumerate",
            "10",
            "--fundamental",
            "--shard",
            f"{index}/3",
            "--out",
            str(out),
        )
        assert done.returncode == 0, done.stderr
        parts += read_boards(out)
    # The parts are disjoint and together are the 92 fundamental boards of n = 10.
    assert_complete(sorted(parts), 10, 92)


def test_count_has_fundamental_without_fixed(stub, pb):
    reply = stub.Count(pb.CountRequest(n=8), timeout=30)
    assert (reply.solutions, reply.HasField("fundamental"), reply.fundamental) == (
        92,
        True,
        12,
    )
    # Present even when zero: n = 3 has no solution, hence no class.
    reply = stub.Count(pb.CountRequest(n=3), timeout=30)
    assert (reply.solutions, reply.HasField("fundamental"), reply.fundamental) == (
        0,
        True,
        0,
    )


def test_count_leaves_fundamental_out_with_fixed(stub, pb, queens):
    reply = stub.Count(
        pb.CountRequest(n=5, fixed=[pb.Square(row=0, column=0)]), timeout=30
    )
    assert reply.solutions == 2
    assert not reply.HasField("fundamental")
    counted = queens.count(5, fixed=[(0, 0)])
    assert (counted.solutions, counted.fundamental) == (2, None)
    counted = queens.count(8)
    assert (counted.solutions, counted.fundamental) == (92, 12)


def test_count_is_a_python_int_of_64_bits(stub, pb):
    # The sum of a whole row of shards is the whole count, as unbounded Python ints.
    whole = stub.Count(pb.CountRequest(n=12), timeout=60)
    parts = [
        stub.Count(pb.CountRequest(n=12, shard=pb.Shard(index=i, count=5)), timeout=60)
        for i in range(5)
    ]
    assert sum(p.solutions for p in parts) == whole.solutions == 14200
    assert sum(p.fundamental for p in parts) == whole.fundamental == 1787
    assert isinstance(whole.solutions, int)


def test_client_count_output(run_client, addr):
    done = run_client("--addr", addr, "count", "8")
    assert (done.returncode, done.stdout) == (0, "solutions: 92\nfundamental: 12\n"), (
        done.stderr
    )
    done = run_client("--addr", addr, "count", "5", "--fixed", "0,0")
    assert (done.returncode, done.stdout) == (0, "solutions: 2\n"), done.stderr
