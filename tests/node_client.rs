//! The Node example (`examples/node`, on the package `clients/node`) against the real `queens`
//! binary: its `node --test` suite, after `npm ci` of its packages (a copy of the package and
//! its dependencies) under `target/tools/node` (found through `NODE_PATH`). Covers the n = 10 stream (724
//! boards in order, batches of 64), Count (92 and 12 for n = 8, no `fundamental` with fixed
//! queens), resuming a download file, errors, and the command line
//! (`test/client.test.js`); the packed form equal to the Board stream record for record with
//! fixed queens, fundamental, shards, start_after, limit and batch sizes, the 4 MiB cap at
//! n = 32, and the client's text and raw output from it (`test/packed.test.js`); what a
//! newcomer meets: usage errors with exit status 2 and no stack trace, `--fixed R,C` checked,
//! http:// URLs, `--limit`, `--start-after` and `--shard`, "connection refused" at once, a
//! server restarted mid-stream waited for, "already complete" (`test/cli.test.js`); https://
//! with `--ca-cert` against a server of its own with a self-signed certificate
//! (`test/tls.test.js`); and bearer tokens against a server of its own with `--auth-tokens`
//! (`test/auth.test.js`): `--token` or `QUEENS_TOKEN` on every call, UNAUTHENTICATED (exit
//! status 1) without one or with a wrong one.

use crate::common;
use crate::tools;

use std::process::Command;
use std::time::Duration;

use common::ServerProcess;

/// The suite's test files, in the order `node --test` runs them.
const TEST_FILES: [&str; 5] = [
    "test/client.test.js",
    "test/packed.test.js",
    "test/cli.test.js",
    "test/tls.test.js",
    "test/auth.test.js",
];

#[test]
fn node_client_streams_counts_and_resumes() {
    let modules = tools::node_modules();
    // Search slots to spare: the files' streams and the client's Counts beside them are never
    // refused as one client's share of a 2-core server.
    let server = ServerProcess::start(&["--max-searches", "16", "--max-searches-per-client", "16"]);
    let tls_dir = tools::target_dir().join(format!("node-tls-{}", std::process::id()));
    std::fs::create_dir_all(&tls_dir).expect("create the certificate folder");
    let (cert, key) = common::self_signed(&tls_dir);
    let passed = tools::node_test(
        Command::new("node")
            .arg("--test")
            .args(TEST_FILES)
            .current_dir(tools::repo().join("examples/node"))
            .env("NODE_PATH", modules)
            .env("QUEENS_ADDR", server.addr.to_string())
            .env("QUEENS_BIN", env!("CARGO_BIN_EXE_queens"))
            .env("QUEENS_TLS_CERT", &cert)
            .env("QUEENS_TLS_KEY", &key),
        Duration::from_secs(600),
    );
    let _ = std::fs::remove_dir_all(&tls_dir);
    eprintln!("node --test: {passed} passed");
}
