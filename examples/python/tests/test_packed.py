"""The packed form (EnumerateRequest.packed): the same boards as the Board stream, record for
record, for every request feature; read into numpy arrays; saved as .npy files."""

from __future__ import annotations

import pathlib
import signal
import time

import numpy
import pytest
from helpers import assert_complete

N = 10
SOLUTIONS, FUNDAMENTAL = 724, 92  # OEIS A000170(10), A002562(10)
TIMEOUT = 60


def board_stream(stub, pb, **fields) -> tuple[list[list[int]], list[int]]:
    """The boards of a compact Board stream, and how many each message held."""
    replies = list(
        stub.Enumerate(pb.EnumerateRequest(compact=True, **fields), timeout=TIMEOUT)
    )
    assert all(not reply.packed for reply in replies)
    boards = [list(b.columns) for reply in replies for b in reply.boards]
    return boards, [len(reply.boards) for reply in replies]


def packed_stream(stub, pb, n: int, **fields) -> tuple[list[list[int]], list[int]]:
    """The boards of a packed stream, read from the raw bytes, and how many each message
    held; checks that no message carries Board messages."""
    replies = list(
        stub.Enumerate(pb.EnumerateRequest(n=n, packed=True, **fields), timeout=TIMEOUT)
    )
    boards, sizes = [], []
    for reply in replies:
        assert not reply.boards, "a packed response with Board messages"
        assert len(reply.packed) % n == 0, len(reply.packed)
        records = [
            list(reply.packed[i : i + n]) for i in range(0, len(reply.packed), n)
        ]
        boards += records
        sizes.append(len(records))
    return boards, sizes


def requests(pb) -> list[tuple[str, dict]]:
    """(name, request fields) for n = 10 covering every request feature, alone and mixed."""
    square = pb.Square
    return [
        ("plain", {}),
        ("fixed", {"fixed": [square(row=0, column=1)]}),
        ("two fixed", {"fixed": [square(row=2, column=3), square(row=7, column=0)]}),
        (
            "attacking fixed",
            {"fixed": [square(row=0, column=0), square(row=1, column=1)]},
        ),
        ("fundamental", {"fundamental": True}),
        *[(f"shard {i}/3", {"shard": pb.Shard(index=i, count=3)}) for i in range(3)],
        ("start_after", {"start_after": [4, 0, 3, 8, 6, 1, 9, 2, 5, 7]}),
        ("start_after not a solution", {"start_after": [5, 0, 0, 0, 0, 0, 0, 0, 0, 0]}),
        ("limit", {"limit": 100}),
        ("batch_size 7", {"batch_size": 7}),
        ("batch_size 1", {"batch_size": 1, "limit": 20}),
        (
            "fundamental, shard, start_after, limit, batch_size",
            {
                "fundamental": True,
                "shard": pb.Shard(index=1, count=2),
                "start_after": [2, 0, 5, 7, 9, 4, 8, 1, 3, 6],
                "limit": 17,
                "batch_size": 5,
            },
        ),
        (
            "fixed, shard, limit, batch_size",
            {
                "fixed": [square(row=9, column=4)],
                "shard": pb.Shard(index=0, count=4),
                "limit": 9,
                "batch_size": 2,
            },
        ),
    ]


def test_packed_equals_the_board_stream_for_every_feature(stub, pb):
    for name, fields in requests(pb):
        expected, expected_sizes = board_stream(stub, pb, n=N, **fields)
        got, sizes = packed_stream(stub, pb, N, **fields)
        assert got == expected, name
        batch = fields.get("batch_size")
        if batch:
            assert all(size <= batch for size in sizes), (name, sizes)
            assert sum(sizes) == sum(expected_sizes)
    # The cases are not vacuous: the whole result, and each part where it is known.
    everything, _ = board_stream(stub, pb, n=N)
    assert_complete(everything, N, SOLUTIONS)
    fundamental, _ = board_stream(stub, pb, n=N, fundamental=True)
    assert_complete(fundamental, N, FUNDAMENTAL)
    assert len(board_stream(stub, pb, n=N, limit=100)[0]) == 100
    attacking = dict(requests(pb))["attacking fixed"]
    assert board_stream(stub, pb, n=N, **attacking)[0] == []


def test_packed_shards_add_up_to_the_whole(stub, pb):
    parts = [
        packed_stream(stub, pb, N, shard=pb.Shard(index=i, count=3))[0]
        for i in range(3)
    ]
    assert_complete(sorted(b for part in parts for b in part), N, SOLUTIONS)


def test_the_library_reads_packed_responses_into_numpy(stub, pb, queens, client_module):
    expected, _ = board_stream(stub, pb, n=N, batch_size=100)
    arrays = list(client_module.stream(queens, N, batch_size=100))
    assert len(arrays) >= 8  # 724 boards in messages of at most 100
    for array in arrays:
        assert array.dtype == numpy.uint8
        assert array.ndim == 2 and array.shape[1] == N and 0 < len(array) <= 100
    assert numpy.concatenate(arrays).tolist() == expected

    whole = client_module.enumerate_array(queens, N)
    assert (whole.dtype, whole.shape) == (numpy.uint8, (SOLUTIONS, N))
    assert whole.flags.c_contiguous
    assert whole.tolist() == expected
    # No solution: an empty (0, n) array, not a failure.
    empty = client_module.enumerate_array(queens, 3)
    assert (empty.dtype, empty.shape) == (numpy.uint8, (0, 3))
    # Board messages (packed=False) decode to the same arrays.
    boards = client_module.enumerate_array(queens, N, packed=False)
    assert (boards.dtype, boards.tolist()) == (numpy.uint8, expected)


def test_the_library_applies_limit_and_start_after(stub, pb, queens, client_module):
    expected, _ = board_stream(stub, pb, n=N)
    start = expected[99]
    got = client_module.enumerate_array(
        queens, N, limit=50, batch_size=16, start_after=start
    )
    assert got.tolist() == expected[100:150]


def test_messages_up_to_the_cap_arrive(stub, pb, client_module):
    """A batch_size beyond the 4 MiB cap: messages up to the cap, which grpcio (4 MiB
    receive limit by default) takes. The server sends what it has whenever the reader keeps
    up, so the first messages are read slowly: behind them, batches fill up to the cap."""
    boards = 3_000_000
    request = pb.EnumerateRequest(n=16, packed=True, batch_size=1 << 20, limit=boards)
    sizes = []
    for reply in stub.Enumerate(request, timeout=TIMEOUT):
        sizes.append(len(reply.packed))
        if len(sizes) <= 3:
            time.sleep(1)
    assert sum(sizes) == boards * 16
    assert max(sizes) > 2 << 20, sizes[:20]  # large batches came
    assert all(size <= client_module.MAX_MESSAGE for size in sizes)


def test_text_lines_match_python_formatting(files):
    rng = numpy.random.default_rng(17)
    for n in (1, 4, 9, 10, 11, 16, 25, 32):
        boards = rng.integers(0, n, size=(300, n), dtype=numpy.uint8)
        expected = "".join(",".join(map(str, b)) + "\n" for b in boards.tolist())
        assert files.text_lines(boards) == expected.encode(), n
    assert files.text_lines(numpy.empty((0, 12), dtype=numpy.uint8)) == b""


def test_client_saves_npy(run_client, addr, stub, pb, tmp_path: pathlib.Path):
    out = tmp_path / "n10.npy"
    done = run_client("--addr", addr, "enumerate", str(N), "--out", str(out), "--quiet")
    assert done.returncode == 0, done.stderr
    assert done.stdout == ""
    saved = numpy.load(out)
    assert (saved.dtype, saved.shape) == (numpy.uint8, (SOLUTIONS, N))
    assert saved.tolist() == board_stream(stub, pb, n=N)[0]
    assert not (tmp_path / "n10.npy.part").exists()

    # With request features, and in small batches (one header update per batch).
    out = tmp_path / "part.npy"
    done = run_client(
        "--addr", addr, "enumerate", str(N), "--fundamental", "--shard", "1/3",
        "--batch-size", "3", "--out", str(out), "--quiet",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    expected = board_stream(
        stub, pb, n=N, fundamental=True, shard=pb.Shard(index=1, count=3)
    )[0]
    assert numpy.load(out).tolist() == expected

    # No solution: a valid empty array.
    out = tmp_path / "n3.npy"
    done = run_client("--addr", addr, "enumerate", "3", "--out", str(out), "--quiet")
    assert done.returncode == 0, done.stderr
    assert numpy.load(out).shape == (0, 3)


def test_npy_download_resumes(addr, start_client, run_client, stub, pb, tmp_path):
    """Killed twice in the middle, a torn record appended; run again it completes the file;
    a third run finds it complete."""
    n, solutions = 12, 14200
    out = tmp_path / "n12.npy"
    part = tmp_path / "n12.npy.part"
    args = ["--addr", addr, "enumerate", str(n), "--out", str(out)]
    seen = 0
    for round_ in range(2):
        # Batches of one board keep the download slow enough to interrupt.
        client = start_client(
            *args, "--batch-size", "1", stderr=tmp_path / f"c{round_}.err"
        )
        seen = wait_for_rows(part, seen + 100, n, client)
        client.send_signal(signal.SIGKILL)
        client.wait(timeout=10)
        # Killed between batches or in one: numpy reads the boards its header counts.
        held = numpy.load(part)
        assert held.shape[1] == n and seen <= len(held) + 1 and len(held) < solutions
        seen = len(held)
    with part.open("ab") as torn:
        torn.write(bytes([11, 3, 0]))
    done = run_client(*args, "--quiet")
    assert done.returncode == 0, done.stderr
    assert "boards; resuming after" in done.stderr, done.stderr
    saved = numpy.load(out)
    assert saved.dtype == numpy.uint8
    assert saved.tolist() == board_stream(stub, pb, n=n)[0]
    assert_complete(saved.tolist(), n, solutions)
    assert not part.exists()
    again = run_client(*args, "--quiet")
    assert again.returncode == 0, again.stderr
    assert f"already complete ({solutions} boards)" in again.stderr, again.stderr
    assert "resuming" not in again.stderr
    assert numpy.load(out).tolist() == saved.tolist()


def test_npy_of_another_shape_is_not_resumed(run_client, addr, tmp_path: pathlib.Path):
    part = tmp_path / "n8.npy.part"
    with part.open("wb") as f:
        numpy.save(f, numpy.zeros((3, 7), dtype=numpy.uint8))
    done = run_client(
        "--addr", addr, "enumerate", "8", "--out", str(tmp_path / "n8.npy")
    )
    assert done.returncode != 0
    assert "not boards of n = 8" in done.stderr, done.stderr
    assert numpy.load(part).shape == (3, 7)  # left as it was


def wait_for_rows(
    part: pathlib.Path, at_least: int, n: int, process, timeout=30
) -> int:
    """Waits until the .npy being written holds at least that many boards (by its size)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        size = part.stat().st_size if part.exists() else 0
        rows = max(size - 128, 0) // n
        if rows >= at_least:
            return rows
        assert process.poll() is None, f"the client exited ({process.returncode})"
        time.sleep(0.002)
    pytest.fail(f"no {at_least} boards in {part} after {timeout} s")
