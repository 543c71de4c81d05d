//! The Parquet files of `queens enumerate --out` read by real data tools:
//! `examples/parquet`'s pytest suite (pyarrow, polars, DuckDB, in the virtual environment
//! of `flight`'s, whose wheels are why it is here) on n = 12 written by the built binary as
//! one file and as a folder of 4 shard files: row counts against Count, the schema, the
//! same boards in both, the "queen on a1" query against Count with that queen fixed, the
//! folder as one dataset (pyarrow) and one glob (DuckDB, polars), and the README's snippet.

use crate::common::{ServerProcess, queens_cli};
use crate::tools;

use std::process::Command;
use std::time::Duration;

#[test]
#[ignore = "a system test: needs root; `cargo test --test suite system:: -- --ignored`"]
fn data_tools_read_the_parquet_files() {
    let python = tools::data_tools_bin().join("python");
    let server = ServerProcess::start(&[]);
    let url = server.url();
    let scratch = tools::scratch_dir().join(format!("parquet-tools-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&scratch);
    std::fs::create_dir_all(&scratch).expect("create the scratch folder");
    let (file, dir) = (scratch.join("n12.parquet"), scratch.join("n12"));
    for args in [
        vec!["--out", file.to_str().unwrap()],
        vec![
            "--shards",
            "4",
            "--out",
            dir.to_str().unwrap(),
            "--format",
            "parquet",
        ],
    ] {
        let (code, out, err) =
            queens_cli(&[&["enumerate", "12", "--addr", &url], &args[..]].concat());
        assert_eq!(code, 0, "{args:?}: {out}{err}");
    }
    let summary = tools::pytest(
        Command::new(python)
            .current_dir(tools::repo().join("examples/parquet"))
            .env("QUEENS_ADDR", server.addr.to_string())
            .env("QUEENS_PARQUET_FILE", &file)
            .env("QUEENS_PARQUET_DIR", &dir),
        "tests",
        &scratch.join("pytest"),
        Duration::from_secs(300),
    );
    eprintln!("pytest examples/parquet: {summary}");
    let _ = std::fs::remove_dir_all(&scratch);
}
