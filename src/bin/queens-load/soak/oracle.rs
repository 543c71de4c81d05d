//! What is right, from outside the server: the OEIS counts up to n = 14 and the naive
//! search's solutions up to [`ORACLE_N`], listed once per n (`queens::solver::naive`);
//! nothing of the server's own code decides what is right.
//!
//! Not here: comparing an answer with them (`outcome.rs`, `caller.rs`).

use queens::pb::Square;
use queens::solver::naive;
use std::sync::OnceLock;

/// A000170, the solutions of the n×n board, n = 1..=14.
pub(crate) const SOLUTIONS: [u64; 14] = [
    1, 0, 0, 2, 10, 4, 40, 92, 352, 724, 2680, 14200, 73712, 365596,
];
/// A002562, the symmetry classes of those solutions.
pub(super) const CLASSES: [u64; 14] = [1, 0, 0, 1, 2, 1, 6, 12, 46, 92, 341, 1787, 9233, 45752];

/// The largest board whose every solution the oracle lists.
pub(super) const ORACLE_N: u32 = 12;

/// Every solution of the n×n board in lexicographic order, listed once per n.
pub(super) fn oracle(n: u32) -> &'static [Vec<u8>] {
    static ALL: [OnceLock<Vec<Vec<u8>>>; ORACLE_N as usize] =
        [const { OnceLock::new() }; ORACLE_N as usize];
    ALL[n as usize - 1].get_or_init(|| naive::solutions(n as usize))
}

/// The oracle's answer: `fixed` held, only representatives when `fundamental`.
pub(super) fn answer(n: u32, fixed: &[Square], fundamental: bool) -> Vec<Vec<u8>> {
    let fixed: Vec<queens::solver::Square> = fixed
        .iter()
        .map(|q| queens::solver::Square {
            row: q.row,
            column: q.column,
        })
        .collect();
    naive::select(oracle(n), &fixed, fundamental)
        .cloned()
        .collect()
}
