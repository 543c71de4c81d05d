//! The Node example (`examples/node`, @grpc/grpc-js loading `proto/queens.proto` at run time)
//! against the real `queens` binary: its `node --test` suite, after `npm ci`. Covers the
//! n = 10 stream (724 boards in order, batches of 64), Count (92 and 12 for n = 8, no
//! `fundamental` with fixed queens), resuming a download file, errors, and the command line;
//! and bearer tokens against a server of its own with `--auth-tokens` (`test/auth.test.js`):
//! `--token` or `QUEENS_TOKEN` on every call, UNAUTHENTICATED (exit status 1) without one or
//! with a wrong one.

mod common;
mod tools;

use std::process::Command;
use std::time::Duration;

use common::ServerProcess;

#[test]
fn node_client_streams_counts_and_resumes() {
    let example = tools::node_example();
    let server = ServerProcess::start(&[]);
    let run = tools::run_bounded(
        Command::new("node")
            .args(["--test", "test/client.test.js", "test/auth.test.js"])
            .current_dir(example)
            .env("QUEENS_ADDR", server.addr.to_string())
            .env("QUEENS_BIN", env!("CARGO_BIN_EXE_queens")),
        Duration::from_secs(180),
    );
    let count = |label: &str| {
        run.stdout
            .lines()
            .find_map(|l| l.strip_prefix(&format!("# {label} ")))
            .and_then(|n| n.trim().parse::<u32>().ok())
    };
    assert!(
        run.success()
            && count("pass").is_some_and(|n| n > 0)
            && count("fail") == Some(0)
            && count("skipped") == Some(0),
        "node --test: exit {}\n{}",
        run.code(),
        run.output()
    );
    eprintln!("node --test: {} passed", count("pass").unwrap_or(0));
}
