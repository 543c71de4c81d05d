//! The Arrow Flight service read by real data tools: `examples/flight`'s pytest suite
//! (pyarrow, polars, DuckDB) against the built `queens` binary, in its own virtual
//! environment. Covers n = 12 read into a table row for row equal to the packed Enumerate
//! stream, polars and DuckDB counting the rows, DuckDB's "queen on a1" equal to Count with
//! that queen fixed, the 5 parts of n = 14 fetched in parallel giving the whole once,
//! batches compressed with zstd and LZ4 read as the plain ones (whole and in parts), a
//! refusal naming its field, and the README's three snippets run as written.

use crate::common::ServerProcess;
use crate::tools;

use std::process::Command;
use std::time::Duration;

#[test]
#[ignore = "a system test: needs root; `cargo test --test suite system:: -- --ignored`"]
fn data_tools_read_the_flight_service() {
    let python = tools::data_tools_bin().join("python");
    // Five parts fetched at once: five searches for one client.
    let server = ServerProcess::start(&["--max-searches", "5", "--max-searches-per-client", "5"]);
    let scratch = tools::tools_dir().join("pytest-flight");
    let run = tools::run_bounded(
        Command::new(python)
            .args([
                "-m",
                "pytest",
                "tests",
                "-v",
                "-rfEs",
                "-p",
                "no:cacheprovider",
            ])
            .arg("--basetemp")
            .arg(&scratch)
            .current_dir(tools::repo().join("examples/flight"))
            .env("QUEENS_ADDR", server.addr.to_string())
            .env("PYTHONDONTWRITEBYTECODE", "1"),
        Duration::from_secs(300),
    );
    let summary = run.stdout.lines().last().unwrap_or_default().to_string();
    assert!(
        run.success() && summary.contains("6 passed") && !summary.contains("skipped"),
        "pytest examples/flight: {summary}\n{}",
        run.output()
    );
    eprintln!("pytest examples/flight: {summary}");
}
