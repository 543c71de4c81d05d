"""The server's Arrow Flight service read by pyarrow, polars and DuckDB: n = 12 row for row
against the packed Enumerate stream, a DuckDB query against Count with that queen fixed, the
parts of n = 14 fetched in parallel giving the whole once, batches compressed with zstd and
LZ4 read as the plain ones, and the README's snippets as written (with this server's
address)."""

from __future__ import annotations

import concurrent.futures
import json
import pathlib
import re

import duckdb
import numpy
import polars
import pyarrow
import pyarrow.flight as flight

README = pathlib.Path(__file__).resolve().parents[3] / "README.md"


def boards(table: pyarrow.Table, n: int) -> numpy.ndarray:
    """The table's one column as a (boards, n) uint8 array, without a copy per board."""
    column = table.column("board").combine_chunks()
    return column.values.to_numpy().reshape(-1, n)


def command(**question) -> flight.FlightDescriptor:
    return flight.FlightDescriptor.for_command(json.dumps(question).encode())


def test_pyarrow_reads_n12_row_for_row_as_enumerate_streams_it(addr, queens):
    client = flight.connect(f"grpc://{addr}")
    info = client.get_flight_info(command(n=12))
    assert info.total_records == 14200
    item = pyarrow.field("item", pyarrow.uint8(), nullable=False)
    assert info.schema.field("board").type == pyarrow.list_(item, 12)
    table = client.do_get(info.endpoints[0].ticket).read_all()
    assert table.num_rows == 14200
    expected = numpy.concatenate(list(queens.enumerate(12)))
    assert numpy.array_equal(boards(table, 12), expected)


def test_polars_and_duckdb_count_the_rows_and_answer_a_query_as_count_does(addr, queens):
    client = flight.connect(f"grpc://{addr}")
    t = client.do_get(flight.Ticket(b'{"n": 12}')).read_all()
    frame = polars.from_arrow(t)
    assert frame.height == 14200
    assert frame.schema["board"] == polars.Array(polars.UInt8, 12)
    assert duckdb.sql("SELECT count(*) FROM t").fetchall()[0][0] == 14200
    # a1: row 0, column 0. DuckDB's lists count from 1.
    on_a1 = duckdb.sql("SELECT count(*) FROM t WHERE board[1] = 0").fetchall()[0][0]
    solutions = queens.count(12, fixed=[(0, 0)]).solutions
    assert on_a1 == solutions and solutions > 0
    assert frame.filter(polars.col("board").arr.get(0) == 0).height == solutions


def test_the_parts_of_n14_fetched_in_parallel_are_the_whole_once(addr):
    client = flight.connect(f"grpc://{addr}")
    info = client.get_flight_info(command(n=14, parts=5))
    assert info.total_records == 365596 and len(info.endpoints) == 5

    def fetch(endpoint: flight.FlightEndpoint) -> numpy.ndarray:
        return boards(flight.connect(f"grpc://{addr}").do_get(endpoint.ticket).read_all(), 14)

    with concurrent.futures.ThreadPoolExecutor(max_workers=5) as pool:
        parts = list(pool.map(fetch, info.endpoints))
    assert all(len(part) > 0 for part in parts)
    whole = numpy.concatenate(parts)
    assert len(whole) == 365596
    assert len(numpy.unique(whole, axis=0)) == 365596, "no board twice"
    assert all(is_solution(board) for board in whole[::997])


def test_compressed_batches_read_as_the_plain_ones(addr):
    client = flight.connect(f"grpc://{addr}")
    plain = client.do_get(flight.Ticket(b'{"n": 12}')).read_all()
    for codec in ("zstd", "lz4"):
        ticket = json.dumps({"n": 12, "compression": codec}).encode()
        reader = client.do_get(flight.Ticket(ticket))
        t = reader.read_all()
        assert t.equals(plain), codec
        assert polars.from_arrow(t).height == 14200
        on_a1 = duckdb.sql("SELECT count(*) FROM t WHERE board[1] = 0").fetchall()[0][0]
        assert on_a1 == polars.from_arrow(plain).filter(polars.col("board").arr.get(0) == 0).height
        # The parts of a command keep its compression.
        info = client.get_flight_info(command(n=12, compression=codec, parts=3))
        parts = [client.do_get(e.ticket).read_all() for e in info.endpoints]
        assert all(json.loads(e.ticket.ticket)["compression"] == codec for e in info.endpoints)
        whole = numpy.concatenate([boards(part, 12) for part in parts])
        assert len(numpy.unique(whole, axis=0)) == 14200


def is_solution(board: numpy.ndarray) -> bool:
    rows = range(len(board))
    return (
        len(set(board)) == len(board)
        and len({int(c) - r for r, c in zip(rows, board)}) == len(board)
        and len({int(c) + r for r, c in zip(rows, board)}) == len(board)
    )


def test_a_refusal_is_a_flight_error_naming_the_field(addr):
    client = flight.connect(f"grpc://{addr}")
    try:
        client.get_flight_info(command(n=0))
    except flight.FlightServerError as error:  # INVALID_ARGUMENT arrives as this class
        assert "n:" in str(error) or "n " in str(error), error
    except pyarrow.ArrowInvalid as error:
        assert "n" in str(error), error
    else:
        raise AssertionError("n = 0 was accepted")


def test_the_readmes_snippets_run_as_written(addr):
    section = README.read_text().split("## From data tools", 1)[1].split("\n## ", 1)[0]
    snippets = re.findall(r"```python\n(.*?)```", section, re.S)
    assert len(snippets) == 3, "pyarrow, polars and DuckDB"
    scope: dict = {}
    for snippet in snippets:
        exec(snippet.replace("127.0.0.1:50051", addr), scope)
    assert scope["boards"].num_rows == 14200
    assert scope["frame"].height == 14200
    assert scope["on_a1"] > 0
