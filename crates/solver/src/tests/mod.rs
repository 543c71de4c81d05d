//! The core against the naive oracle on every request feature, for small n, with random
//! fixed sets, shards, resume points and limits (property tests: a failure prints the
//! smallest case proptest finds), by subject:
//!
//! - `oracle.rs`: boards, fixed queens, resume points, limits, shards and tasks.
//! - `requests.rs`: the largest board, and the errors of invalid questions.
//! - `lanes.rs`: the enumeration's lanes against the scalar search.
//!
//! Here: the helpers they share (`problem`, `boards`, the strategies).

mod lanes;
mod oracle;
mod requests;

use super::naive;
use super::oeis::{A000170, A002562};
use super::search::count as plain_count;
use super::*;
use proptest::prelude::*;
use std::ops::ControlFlow;
use std::sync::atomic::AtomicBool;

/// Collects boards.
#[derive(Default)]
struct Collect(Vec<Vec<u8>>);

impl Sink for Collect {
    fn push(&mut self, columns: &[u8]) -> ControlFlow<()> {
        self.0.push(columns.to_vec());
        ControlFlow::Continue(())
    }
}

fn problem(n: u32, fixed: &[Square], fundamental: bool, shard: Shard) -> Problem {
    Problem::new(n, fixed, fundamental, shard).expect("valid problem")
}

fn boards(p: &Problem, after: Option<&[u8]>, limit: Option<u64>) -> Vec<Vec<u8>> {
    let mut sink = Collect::default();
    assert!(enumerate(p, after, limit, &mut sink).is_continue());
    sink.0
}

fn never() -> AtomicBool {
    AtomicBool::new(false)
}

/// Up to three distinct squares of an n×n board.
fn fixed_set(n: u32) -> impl Strategy<Value = Vec<Square>> {
    proptest::collection::btree_set((0..n, 0..n), 0..=3).prop_map(|set| {
        set.into_iter()
            .map(|(row, column)| Square { row, column })
            .collect()
    })
}

/// A size (1 to 9), and either `fundamental` or some fixed queens (never both).
fn query() -> impl Strategy<Value = (u32, bool, Vec<Square>)> {
    (1u32..=9).prop_flat_map(|n| {
        prop_oneof![
            1 => Just((n, true, Vec::new())),
            2 => fixed_set(n).prop_map(move |fixed| (n, false, fixed)),
        ]
    })
}

/// A column vector of size `n` (not necessarily a solution).
fn vector(n: u32) -> impl Strategy<Value = Vec<u8>> {
    proptest::collection::vec(0..n as u8, n as usize)
}

/// A query with a resume point: a random vector, or one of the answer's boards.
fn query_after() -> impl Strategy<Value = ((u32, bool, Vec<Square>), Vec<u8>, prop::sample::Index)>
{
    query().prop_flat_map(|q| {
        let n = q.0;
        (Just(q), vector(n), any::<prop::sample::Index>())
    })
}
