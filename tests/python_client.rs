//! The Python example (`examples/python`) against the real `queens` binary: its pytest suite,
//! run in the tools' virtual environment with the stubs of the package `queens-client`.
//! Covers the exact n = 4 boards, n = 10 compact in batches of 64 (724 boards in order),
//! Count's uint64 and optional `fundamental`, every INVALID_ARGUMENT case as a
//! `grpc.RpcError`, downloads of n = 12 that resume to exactly 14200 distinct valid boards
//! after the client is killed and after the server is killed or shut down mid-stream, and a
//! download that waits out a busy server (`--max-searches 1`, RESOURCE_EXHAUSTED), and
//! bearer tokens against a server of its own with `--auth-tokens`: `--token` or
//! `QUEENS_TOKEN` on every call, UNAUTHENTICATED (exit status 1) without one or with a wrong
//! one. The packed form: n = 10 packed streams equal the Board streams record for record
//! with fixed queens, fundamental, shards, start_after, limit and batch sizes; numpy arrays
//! (uint8, shape (boards, n)); `.npy` downloads equal to the boards, resumed after kills.
//! The command line: `http://` addresses, `--addr`/`--token` after the command, `--limit`
//! and `--start-after` (checked locally), a server not running refused within seconds, and
//! a finished download found "already complete" without a call. A refusal's details decoded
//! with grpcio-status: a busy server's ErrorInfo (the limit its held streams fill) and
//! RetryInfo (1 s), and a bad request's BadRequest field.

use crate::common;
use crate::tools;

use std::process::Command;
use std::time::Duration;

use common::ServerProcess;

/// Runs one test file of the example with pytest; panics with its output unless every test
/// in it passed (none skipped).
fn pytest(file: &str) {
    let python = tools::python_bin().join("python");
    let server = ServerProcess::start(&[]);
    let example = tools::repo().join("examples/python");
    let scratch = tools::tools_dir().join("pytest");
    std::fs::create_dir_all(&scratch).expect("create target/tools/pytest");
    let summary = tools::pytest(
        Command::new(python)
            .current_dir(&example)
            .env("QUEENS_ADDR", server.addr.to_string())
            .env("QUEENS_BIN", env!("CARGO_BIN_EXE_queens")),
        &format!("tests/{file}"),
        &scratch.join(file.trim_end_matches(".py")),
        Duration::from_secs(300),
    );
    eprintln!("pytest {file}: {summary}");
}

#[test]
fn python_streams_and_counts() {
    pytest("test_stream_and_count.py");
}

#[test]
fn python_sees_invalid_arguments_as_rpc_errors() {
    pytest("test_errors.py");
}

#[test]
fn python_decodes_error_details() {
    pytest("test_error_details.py");
}

#[test]
fn python_download_resumes_after_interruptions() {
    pytest("test_resume.py");
}

#[test]
fn python_sends_bearer_tokens() {
    pytest("test_auth.py");
}

#[test]
fn python_packed_streams_read_into_numpy() {
    pytest("test_packed.py");
}

#[test]
fn python_command_line_as_a_newcomer_uses_it() {
    pytest("test_cli.py");
}
