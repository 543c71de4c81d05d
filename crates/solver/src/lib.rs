#![doc = include_str!("../README.md")]
//!
//! # What lives here
//!
//! Validated questions in, boards or counts out. Pure: no tokio, no I/O, no gRPC types.
//! Enumeration pushes boards into a [`Sink`] that can stop the search at any board or poll;
//! counting has its own path that never builds boards and runs on a shared [`Pool`] of
//! threads, stopped by a flag it polls.
//!
//! # Layout
//! - `geometry.rs`: the one base every engine uses: [`MAX_N`], [`Square`], the attack rule,
//!   the eight [`Symmetry`] maps, the bitboard step from a row to the next.
//! - `problem.rs`: a validated question ([`Problem`]) and why one is refused ([`QueryError`]).
//! - `sink.rs`: where enumerated boards go ([`Sink`]).
//! - `counts.rs`: what a count answers ([`Counts`]), why it may fail ([`CountError`]), and how
//!   parts make a whole ([`Counts::whole`], [`PartsError`]).
//! - `search.rs`: the enumeration in lexicographic order, with resume points, limits and
//!   shards ([`enumerate`], [`enumerate_under`]); also the plain count of small boards.
//! - `lockstep.rs`: the same enumeration for plain questions, subtrees searched in SIMD
//!   lanes and handed over in order (chosen by `search.rs`).
//! - `simd.rs`: the one SIMD tier (AVX-512, AVX2 or portable) the lanes and the join run
//!   in, detected once, as a token only detection makes ([`Tier`], named by [`TierKind`]),
//!   and why calling their target-feature code is sound ([`simd_registers`]).
//! - `lane.rs`: what the two lockstep lane engines (`lockstep.rs`, `count/lanes.rs`) share.
//! - `tasks.rs`: the search split into prefix tasks ([`Tasks`]) for parallel streams.
//! - `symmetry.rs`: symmetry classes ([`class_size`]) and the pruning masks of
//!   representatives.
//! - `count/`: the counting path ([`count()`]): border constellations weighted by symmetry,
//!   searched in SIMD lanes by engines on the pool; whole boards from n = 16 to 28
//!   by joining half boards.
//! - `pool.rs`: the threads searches run on, in slices ([`Pool`]).
//! - `naive.rs`: the naive oracle every engine is tested against (tests, and the `testing`
//!   feature for integration tests and the fuzz target).
//! - `oeis.rs` (tests only): the OEIS counts the unit tests check against (`oeis_table.rs`,
//!   shared with the workspace's integration tests).
//! - `sync.rs`: the poison-tolerant lock every layer of the workspace uses.

#![warn(missing_docs)]

mod count;
mod counts;
mod geometry;
mod lane;
mod lockstep;
pub mod pool;
mod problem;
mod search;
mod simd;
mod sink;
mod symmetry;
mod tasks;

pub mod sync;

pub mod naive;
#[cfg(test)]
mod oeis;
#[cfg(test)]
mod tests;

pub use count::{
    CountMemory, CountOptions, Hold, NOW_MAX_N, Progress, Recount, RecountMethod,
    answers_turn_fixed, count, count_memory, count_now, counts_now,
};
pub use counts::{CountError, Counts, PartsError};
pub use geometry::{MAX_N, Square, Symmetry, attack, peaceful, peaceful_columns};
pub use pool::Pool;
pub use problem::{ParseError, Problem, QueryError, Shard};
pub use search::{enumerate, enumerate_under};
pub use simd::{TIER_VARIABLE, Tier, TierError, TierKind, forced_tier, simd_registers, tier_name};
pub use sink::Sink;
pub use symmetry::class_size;
pub use tasks::Tasks;
