"""The Parquet files of `queens enumerate --out` read by pyarrow, polars and DuckDB: the one
file and the folder of shards (as one dataset) have Count's rows, the schema r0..r11 of
uint8 with n in the footer, the same boards; "a queen on a1" (row 0, column 0: r0 = 0) is
Count with that queen fixed; and the README's snippet runs as written."""

from __future__ import annotations

import pathlib
import re

import duckdb
import numpy
import polars
import pyarrow
import pyarrow.dataset
import pyarrow.parquet

N = 12
README = pathlib.Path(__file__).resolve().parents[3] / "README.md"


def boards(table: pyarrow.Table) -> numpy.ndarray:
    """A table's columns r0..r{n-1} as a (boards, n) uint8 array."""
    return numpy.column_stack([table.column(f"r{r}").to_numpy() for r in range(N)])


def sorted_rows(array: numpy.ndarray) -> numpy.ndarray:
    return array[numpy.lexsort(array.T[::-1])]


def test_pyarrow_reads_the_file_and_the_folder_as_count_says(queens, single, folder):
    solutions = queens.count(N).solutions
    table = pyarrow.parquet.read_table(single)
    assert table.num_rows == solutions
    assert table.schema.names == [f"r{r}" for r in range(N)]
    assert all(field.type == pyarrow.uint8() for field in table.schema)
    assert table.schema.metadata[b"queens.n"] == b"12"
    assert pyarrow.parquet.ParquetFile(single).metadata.metadata[b"queens.n"] == b"12"
    one = boards(table)
    assert (numpy.diff(one.astype(int), axis=0) != 0).any(axis=1).all(), "no board twice"
    # An unfinished shard, as a running or killed job leaves it, is not part of the dataset.
    (folder / ".shard-00004-of-00005.parquet.tmp").write_bytes(b"PAR1 torn")
    dataset = pyarrow.dataset.dataset(folder, format="parquet")
    assert len(dataset.files) == 4, dataset.files
    shards = dataset.to_table()
    assert shards.num_rows == solutions
    assert numpy.array_equal(sorted_rows(boards(shards)), one), "the same boards"


def test_duckdb_counts_and_answers_the_a1_query_as_count_does(queens, single, folder):
    solutions = queens.count(N).solutions
    on_a1 = queens.count(N, fixed=[(0, 0)]).solutions
    assert on_a1 > 0
    file, glob = str(single), f"{folder}/*.parquet"
    assert duckdb.sql(f"SELECT count(*) FROM '{file}'").fetchall()[0][0] == solutions
    assert duckdb.sql(f"SELECT count(*) FROM '{glob}'").fetchall()[0][0] == solutions
    assert duckdb.sql(f"SELECT count(*) FROM '{file}' WHERE r0 = 0").fetchall()[0][0] == on_a1
    assert duckdb.sql(f"SELECT count(*) FROM '{glob}' WHERE r0 = 0").fetchall()[0][0] == on_a1
    types = duckdb.sql(f"DESCRIBE SELECT * FROM '{file}'").fetchall()
    assert [(name, kind) for name, kind, *_ in types] == [(f"r{r}", "UTINYINT") for r in range(N)]


def test_polars_scans_the_file_and_the_folder_as_count_does(queens, single, folder):
    solutions = queens.count(N).solutions
    on_a1 = queens.count(N, fixed=[(0, 0)]).solutions
    for source in (single, f"{folder}/*.parquet"):
        frame = polars.scan_parquet(source)
        assert frame.select(polars.len()).collect().item() == solutions
        assert frame.filter(polars.col("r0") == 0).select(polars.len()).collect().item() == on_a1
        assert frame.collect_schema()["r0"] == polars.UInt8


def test_the_readmes_parquet_snippet_runs_as_written(queens, single, folder, monkeypatch):
    section = README.read_text().split("## Into Parquet files", 1)[1].split("\n## ", 1)[0]
    snippets = re.findall(r"```python\n(.*?)```", section, re.S)
    assert len(snippets) == 1, "one DuckDB snippet"
    monkeypatch.chdir(single.parent)
    code = snippets[0].replace("n12.parquet", single.name).replace("'n12/", f"'{folder.name}/")
    scope: dict = {}
    exec(code, scope)
    assert scope["on_a1"] == queens.count(N, fixed=[(0, 0)]).solutions
    assert scope["rows"] == queens.count(N).solutions
