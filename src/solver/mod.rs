//! The N-Queens search core: validated questions in, boards or counts out.
//!
//! Pure and synchronous: no tokio, no I/O, no gRPC types. Enumeration pushes boards into a
//! [`Sink`] that can stop the search at any board or poll; counting has its own path that
//! never builds boards. Cancellation of a count is a flag the search polls. The naive oracle
//! the fast search is tested against lives in `naive.rs` (tests only).
//!
//! Two counting paths: `search::count` (the plain symmetric search, also the reference for
//! small boards) and `fast/` (border constellations weighted by symmetry, split into
//! subproblems that a pool of threads searches in SIMD lanes, with live progress). The
//! service uses `fast/`.

mod fast;
mod problem;
mod search;
mod symmetry;

#[cfg(test)]
mod naive;
#[cfg(test)]
mod tests;

pub use fast::{Progress, count_fast, count_parallel, count_with_progress, simd_registers};
pub use problem::{MAX_N, Problem, QueryError, Shard, Square};
pub use search::{CountError, Counts, Sink, count, enumerate, enumerate_under};
pub use symmetry::class_size;
