//! Prefix tasks: one search split by the columns of its first rows, so that several threads
//! can produce one lexicographically ordered stream.
//!
//! Task `i` is the `i`-th column prefix of a fixed depth in lexicographic order (the digits
//! of `i` in base `n`); its boards are [`super::enumerate_under`]'s for that prefix, and the
//! boards of all tasks in task order are exactly [`super::enumerate`]'s. Depth 0 is one task,
//! the whole search. Which depth to use and how the tasks' output is merged live in the
//! stream pipeline (`crate::stream`), not here.

use super::geometry::peaceful_columns;

/// The task space of one search: prefixes of length `depth` over `n` columns, numbered
/// lexicographically, without those wholly at or before a resume point.
#[derive(Clone, Debug)]
pub struct Tasks {
    n: u64,
    depth: usize,
    total: u64,
    /// Prefixes before this one are wholly at or before `start_after`: skipped.
    first: Vec<u8>,
}

impl Tasks {
    /// The tasks of prefix length `depth` (at most `n`) on an `n`×`n` board, skipping those
    /// wholly at or before `start_after` (`n` columns, each below `n`).
    pub fn new(n: u32, depth: usize, start_after: Option<&[u8]>) -> Tasks {
        Tasks {
            n: u64::from(n),
            depth,
            total: u64::from(n).pow(depth as u32),
            first: start_after.map_or_else(Vec::new, |a| a[..depth].to_vec()),
        }
    }

    /// Number of task numbers, wanted or not.
    pub fn total(&self) -> u64 {
        self.total
    }

    /// The prefix of task `i`.
    pub fn prefix(&self, mut i: u64) -> Vec<u8> {
        let mut prefix = vec![0u8; self.depth];
        for slot in prefix.iter_mut().rev() {
            *slot = (i % self.n) as u8;
            i /= self.n;
        }
        prefix
    }

    /// Whether task `i` can hold boards: its queens do not attack each other and it is not
    /// before the resume point.
    pub fn wanted(&self, i: u64) -> bool {
        let p = self.prefix(i);
        p >= self.first && peaceful_columns(&p)
    }

    /// The first wanted task at or after `i` ([`Tasks::total`] when none is left).
    pub fn next_wanted(&self, mut i: u64) -> u64 {
        while i < self.total && !self.wanted(i) {
            i += 1;
        }
        i
    }
}
