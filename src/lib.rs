//! `queens`: N-Queens as a gRPC service (`queens.v1.Queens`), with a CLI client.
//!
//! # Layout
//! - [`solver`]: the search core. Pure (no tokio, no I/O, no gRPC): validated questions
//!   ([`solver::Problem`]), enumeration into a stoppable [`solver::Sink`] in lexicographic
//!   order, a separate counting path, the pool of threads searches run on, and the naive
//!   oracle its tests use.
//! - [`stream`]: Enumerate's pipeline from the solver to response bytes: the one rule that
//!   picks sequential or parallel production, the producer on the pool with its reorder
//!   buffer, the encoder, the sender and its bounded channel.
//! - [`service`]: the gRPC service: thin handlers, request validation ([`service::Query`]),
//!   admission, running counts, and the one mapping of errors to `Status`.
//! - [`flight`]: the Arrow Flight service beside Queens: Enumerate questions as JSON
//!   commands, their parts as endpoints, each part streamed as Arrow record batches.
//! - [`web`]: the web side of the port: the page at `/` (embedded static files; the page
//!   draws boards from `packed` records itself), gRPC-Web calls marked for tonic-web, CORS
//!   for other origins' pages.
//! - [`server`]: `run(listener, config, shutdown)`: the search pool, health, reflection,
//!   bounded shutdown; the listener's connection limits and clocks, TLS (and client
//!   certificates), bearer tokens, the bound on requests in flight.
//! - [`config`]: every server knob and its default, with the reason for each value.
//! - [`client`]: the client side's bottom: connecting (address or URL, TLS, bearer token,
//!   a refused connection said plainly), the flags' files read into credentials, and an
//!   Enumerate response's packed records. Shared by the fan-out, the CLI and the tests.
//! - [`fanout`]: one count or enumeration spread over several servers by shards: the retry
//!   queue, the count task, the resumable enumeration into per-shard files.
//! - [`parquet_file`]: boards as Parquet files (one `UInt8` column per row), written in
//!   bounded row groups under a temporary name and renamed when complete; the footer read
//!   back. Used by the fan-out's shard files and the CLI's single file.
//! - [`batch`]: a shard counted in process as a JSON line (its index from an orchestrator's
//!   environment: a Kubernetes Indexed Job or a Slurm array), and the checked sum of such
//!   lines.
//! - [`cli`]: the commands of the binary: their flags, the serve flags made into a
//!   [`config::Config`], what the client commands print (boards, counts, progress bars,
//!   fan-out statistics), and the one error type with its exit codes.
//! - [`render`]: how a board is written as text.
//! - [`sync`]: the poison-tolerant lock every layer uses.
//! - [`wire`]: field-by-field conversions between the [`pb`] messages and the solver's types.
//! - [`pb`]: the code generated from `proto/queens.proto` and its descriptor set.
//!
//! The binary (`src/main.rs`) only declares the commands and dispatches them to [`cli`];
//! `src/bin/queens-load/` is a load driver.

#![warn(missing_docs)]

pub use queens_solver as solver;
pub use queens_solver::sync;

pub mod batch;
pub mod cli;
pub mod client;
pub mod config;
pub mod fanout;
pub mod flight;
pub mod parquet_file;
pub mod render;
pub mod server;
pub mod service;
pub mod stream;
pub mod web;
pub mod wire;

/// Messages and service stubs generated from `proto/queens.proto` (package `queens.v1`).
#[allow(missing_docs)]
pub mod pb {
    tonic::include_proto!("queens.v1");

    /// The encoded descriptor set of `proto/queens.proto`, served by reflection.
    pub const FILE_DESCRIPTOR_SET: &[u8] =
        include_bytes!(concat!(env!("OUT_DIR"), "/queens_descriptor.bin"));

    /// The server side of `queens.v1.Queens`, generated with
    /// [`crate::stream::EncodedBatch`] as Enumerate's response, whose bytes the server
    /// writes directly (see `build.rs`).
    #[allow(missing_docs, unreachable_pub)]
    pub mod server {
        include!(concat!(env!("OUT_DIR"), "/encoded/queens.v1.rs"));
    }
}
