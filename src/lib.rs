//! `queens`: N-Queens as a gRPC service (`queens.v1.Queens`), with a CLI client.
//!
//! # Layout
//! - [`solver`]: the search core. Pure and synchronous (no tokio, no I/O, no gRPC): validated
//!   questions ([`solver::Problem`]), enumeration into a stoppable [`solver::Sink`] in
//!   lexicographic order, a separate counting path, and the naive oracle its tests use.
//! - [`service`]: the gRPC service. Maps requests to solver questions, runs searches off the
//!   runtime with a bounded channel back to the client, maps errors to `Status` in one place.
//! - [`wire`]: Enumerate's response bytes written directly from column vectors, and the
//!   server-only generation of the service that sends them.
//! - [`produce`]: one stream produced by several threads on prefix tasks, merged back into
//!   lexicographic order through a bounded reorder buffer.
//! - [`server`]: `run(listener, config, shutdown)`: health, reflection, bounded shutdown.
//! - [`config`]: every server knob and its default, with the reason for each value.
//! - [`client`]: a thin client shared by the CLI and the tests.
//! - [`fanout`]: one count or enumeration spread over several servers by shards, with an
//!   explicit retry queue and resumable per-shard files.
//! - [`batch`]: a shard counted in process as a JSON line, and the checked sum of such lines
//!   (for orchestrators such as a Kubernetes Indexed Job).
//! - [`pb`]: the code generated from `proto/queens.proto` and its descriptor set.
//!
//! The binary (`src/main.rs`, with its presentation glue in `src/cli.rs`) only parses flags
//! and calls these; `src/bin/queens-load.rs` is a load driver.

#![warn(missing_docs)]

pub mod batch;
pub mod client;
pub mod config;
pub mod fanout;
pub mod produce;
pub mod server;
pub mod service;
pub mod solver;
pub mod wire;

/// Messages and service stubs generated from `proto/queens.proto` (package `queens.v1`).
#[allow(missing_docs)]
pub mod pb {
    tonic::include_proto!("queens.v1");

    /// The encoded descriptor set of `proto/queens.proto`, served by reflection.
    pub const FILE_DESCRIPTOR_SET: &[u8] =
        include_bytes!(concat!(env!("OUT_DIR"), "/queens_descriptor.bin"));
}
