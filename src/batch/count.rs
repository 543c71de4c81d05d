//! One shard counted in this process, without a server, as the JSON line
//! `queens count --local --json` prints: validated by the solver's own checks (the same
//! messages a server gives, with the core's limits), counted on a pool of its own; the line
//! says how and where it was counted (`provenance.rs`).

use super::provenance::Provenance;
use crate::solver::{self, CountOptions, Pool, Problem, QueryError, Recount, Shard, Square};
use serde::{Deserialize, Serialize};
use std::sync::atomic::Ordering;
use std::time::Instant;

/// Why a local shard count failed.
#[derive(Debug, thiserror::Error)]
pub enum LocalCountError {
    /// The question is not a valid one.
    #[error(transparent)]
    Query(#[from] QueryError),
    /// The count failed.
    #[error(transparent)]
    Count(#[from] solver::CountError),
}

/// Which shard a line counts.
#[derive(Clone, Copy, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct ShardId {
    /// The shard's index.
    pub index: u32,
    /// The number of shards.
    pub count: u32,
}

/// One shard's count: the JSON line `queens count --local --json` prints.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct ShardCount {
    /// Board size.
    pub n: u32,
    /// Which shard.
    pub shard: ShardId,
    /// Solutions in the shard.
    pub solutions: u64,
    /// Symmetry classes in the shard (absent with fixed queens, and when `turn_fixed` is
    /// there).
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub fundamental: Option<u64>,
    /// The shard's turn-fixed points, on a shard whose classes are not its own (see
    /// [`Counts::turn_fixed`](crate::solver::Counts)): `queens sum` finds the whole's
    /// classes from them.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub turn_fixed: Option<u64>,
    /// Parts counted a second time and found equal (with `--recount`; how: the
    /// provenance's `recount_method`).
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub recounted: Option<u64>,
    /// Wall seconds the count took (its tables included).
    pub seconds: f64,
    /// How and where it was counted (absent from lines of older versions).
    #[serde(flatten)]
    pub provenance: Provenance,
}

/// Counts shard `shard` of the n×n board with the queens `fixed` in this process on
/// `threads` threads, after the solver's checks (the core's limits, the messages a server
/// gives for the same request); with `recount`, that share of the join's parts counted
/// again as it says ([`Recount`]).
pub fn count_local(
    n: u32,
    fixed: &[Square],
    shard: Shard,
    threads: usize,
    recount: Option<Recount>,
) -> Result<ShardCount, LocalCountError> {
    let problem = Problem::new(n, fixed, false, shard)?;
    let started = Instant::now();
    let options = CountOptions {
        threads,
        recount,
        ..CountOptions::default()
    };
    let progress = options.progress.clone();
    let pool = Pool::new(threads);
    let counts = solver::pool::wait(|done| solver::count(&problem, options, &pool, done))
        .unwrap_or(Err(solver::CountError::Failed))?;
    let shard = problem.shard();
    Ok(ShardCount {
        n: problem.n(),
        shard: ShardId {
            index: shard.index,
            count: shard.parts(),
        },
        solutions: counts.solutions,
        fundamental: counts.fundamental,
        turn_fixed: counts.turn_fixed,
        recounted: recount.map(|_| progress.recounted.load(Ordering::Relaxed)),
        seconds: started.elapsed().as_secs_f64(),
        provenance: Provenance::here(threads, recount, Some(&progress)),
    })
}
