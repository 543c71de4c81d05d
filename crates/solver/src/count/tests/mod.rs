//! The fast counter against OEIS, the plain search and the naive oracle, by subject:
//!
//! - `whole.rs`: whole boards, the join path, every thread count, shard splits.
//! - `fixed.rs`: fixed queens and the border constellations.
//! - `errors.rs`: cancellation, overflow, parts of different kinds.
//! - `rounds.rs`: the lanes' rounds against the board search.
//!
//! Here: the helpers they share (`counted`, `fast`, `plain`, `sum_of_parts`, `assert_oeis`).

mod errors;
mod fixed;
mod rounds;
mod whole;

use super::board::Board;
use super::constellation::{self, symmetries_of};
use super::lanes::{self, LaneSet};
use super::subproblem::Partial;
use super::{CountOptions, Progress, answers_turn_fixed, count};
use crate::geometry::{Symmetry, peaceful};
use crate::naive;
use crate::oeis::{A000170, A002562};
use crate::pool::{Pool, wait};
use crate::search::count as plain_count;
use crate::simd::{Tier, tier, tiers_to_test};
use crate::{CountError, Counts, PartsError, Problem, Shard, Square};
use proptest::prelude::*;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

fn never() -> AtomicBool {
    AtomicBool::new(false)
}

fn problem(n: u32, fixed: &[Square], shard: Shard) -> Problem {
    Problem::new(n, fixed, false, shard).expect("valid problem")
}

/// Counts `p` through the one entry point on a pool of `threads` threads, lanes on or off,
/// stopped by `cancel`.
fn counted(
    p: &Problem,
    threads: usize,
    lanes: bool,
    cancel: Arc<AtomicBool>,
) -> Result<Counts, CountError> {
    let pool = Pool::new(threads);
    let options = CountOptions {
        threads,
        lanes,
        cancel,
        ..CountOptions::default()
    };
    let progress = options.progress.clone();
    let got = wait(|done| count(p, options, &pool, done)).expect("a result");
    if let Ok(counts) = &got {
        assert_finished(&progress, counts);
    }
    got
}

/// A finished count's progress: every planned step done, and the solutions shown (some of
/// them while their subproblems ran) adding up to the answer.
fn assert_finished(progress: &Progress, counts: &Counts) {
    let total = progress.total.load(Ordering::Relaxed);
    assert_eq!(progress.done.load(Ordering::Relaxed), total, "steps");
    let shown = progress.solutions.load(Ordering::Relaxed);
    assert_eq!(shown, counts.solutions, "solutions shown");
}

/// The count of `p` on `threads` threads with the lanes.
fn fast(p: &Problem, threads: usize) -> Counts {
    counted(p, threads, true, Arc::default()).expect("count")
}

/// The count of `p` by the plain search, the reference.
fn plain(p: &Problem) -> Counts {
    plain_count(p, &never()).expect("count")
}

/// The parts of a split, added up into the whole's counts; each part answers classes or
/// turn-fixed points as [`answers_turn_fixed`] says.
fn sum_of_parts(n: u32, fixed: &[Square], parts: u32, threads: usize) -> Counts {
    let all: Vec<Counts> = (0..parts)
        .map(|index| {
            let p = problem(
                n,
                fixed,
                Shard {
                    index,
                    count: parts,
                },
            );
            let part = fast(&p, threads);
            let turns = answers_turn_fixed(&p);
            assert_eq!(part.turn_fixed.is_some(), turns, "n = {n}, {parts} parts");
            assert_eq!(part.fundamental.is_some(), fixed.is_empty() && !turns);
            part
        })
        .collect();
    Counts::whole(all).expect("the parts of one count")
}

/// Asserts that `got` holds both OEIS counts of the n x n board.
fn assert_oeis(n: u32, got: Counts, what: &str) {
    let i = n as usize - 1;
    assert_eq!(got.solutions, A000170[i], "n = {n}, {what}");
    assert_eq!(got.fundamental, Some(A002562[i]), "n = {n}, {what}");
}
