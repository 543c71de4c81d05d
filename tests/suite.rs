//! The integration tests, as modules of one test binary (one link instead of one per file).
//! They start real servers on 127.0.0.1 port 0, in this process or as the built `queens`
//! binary, and talk to them over real sockets. `cargo test` runs the everyday suite: no root,
//! no daemon, nothing installed outside `target/` (grpcurl, the Python and Node packages and
//! the PyPI tools go under `target/tools/`). The system tests (`system/`) are compiled in but
//! ignored: root runs them with `cargo test --test suite system:: -- --ignored`, reusing the
//! everyday build. Run one module with a filter: `cargo test --test suite service::`.
//!
//! Shared helpers: `common` (servers, clients, /proc readings, the OEIS tables) and `tools`
//! (installs of the external tools, processes bounded in time).

mod common;
mod tools;

mod admission;
mod architecture;
mod auth;
mod cancellation;
mod cli;
mod compression;
mod deploy_manifests;
mod docs;
mod estimate;
mod fairness_deadlines;
mod fanout;
mod flight;
mod hardening;
mod keepalive;
mod limits;
mod load;
mod logs;
mod memory;
mod metrics;
mod node_client;
mod node_package;
mod parquet_files;
mod python_client;
mod python_package;
mod readme_grpcurl;
mod service;
mod service_invalid;
mod threads;
mod tls;
mod traces;
mod web;

mod system;
