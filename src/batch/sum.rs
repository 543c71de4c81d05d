//! The sum of shard lines (`queens sum`): every shard of one sharding there exactly once,
//! the lines agreeing on the board and the number of shards, the total in checked
//! arithmetic, the classes from the lines' turn-fixed points where they have those.

use super::count::ShardCount;
use crate::solver::{Counts, PartsError};
use std::collections::BTreeMap;

/// Why shard lines do not add up to a total.
#[derive(Debug, thiserror::Error)]
pub enum SumError {
    /// A line is not a shard count.
    #[error("line {line}: not a shard count: {source}")]
    Line {
        /// Its number, from 1.
        line: usize,
        /// Why.
        source: serde_json::Error,
    },
    /// A line counts another board or another number of shards than the lines before it.
    #[error(
        "line {line}: n {n} with {count} shards, but earlier lines have n {first_n} with \
         {first_count} shards"
    )]
    Mismatch {
        /// Its number, from 1.
        line: usize,
        /// Its board size.
        n: u32,
        /// Its number of shards.
        count: u32,
        /// The earlier lines' board size.
        first_n: u32,
        /// The earlier lines' number of shards.
        first_count: u32,
    },
    /// A line names a shard beyond its number of shards.
    #[error("line {line}: shard {index} of {count} does not exist")]
    NoSuchShard {
        /// Its number, from 1.
        line: usize,
        /// The shard's index.
        index: u32,
        /// The number of shards.
        count: u32,
    },
    /// No line was given.
    #[error("no shard counts given")]
    Empty,
    /// Shards are missing or repeated.
    #[error(
        "n {n} with {shards} shards: missing shards {missing:?}, duplicated shards {duplicated:?}"
    )]
    Incomplete {
        /// Board size.
        n: u32,
        /// Number of shards.
        shards: u32,
        /// Shards without a line.
        missing: Vec<u32>,
        /// Shards with more than one.
        duplicated: Vec<u32>,
    },
    /// The lines' counts do not add up to a total (too large, or parts split in different
    /// ways: some with `fundamental`, others with `turn_fixed`).
    #[error("n {n} with {shards} shards: {source}")]
    Parts {
        /// Board size.
        n: u32,
        /// Number of shards.
        shards: u32,
        /// Why.
        source: PartsError,
    },
}

/// The total of a complete set of shard lines.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Total {
    /// Board size.
    pub n: u32,
    /// Number of shards summed.
    pub shards: u32,
    /// Total solutions.
    pub solutions: u64,
    /// Total symmetry classes, when every shard had them or every shard had turn-fixed
    /// points (then found from those).
    pub fundamental: Option<u64>,
}

/// Sums shard lines (blank lines skipped). Fails, naming them, when shards are missing or
/// repeated, or when lines disagree on n or on the number of shards.
pub fn sum<I: IntoIterator<Item = String>>(lines: I) -> Result<Total, SumError> {
    let mut seen: BTreeMap<u32, ShardCount> = BTreeMap::new();
    let mut duplicated = Vec::new();
    let mut first: Option<(u32, u32)> = None;
    for (number, line) in lines.into_iter().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let c: ShardCount = serde_json::from_str(&line).map_err(|source| SumError::Line {
            line: number + 1,
            source,
        })?;
        let key = (c.n, c.shard.count);
        match first {
            None => first = Some(key),
            Some(f) if f != key => {
                return Err(SumError::Mismatch {
                    line: number + 1,
                    n: c.n,
                    count: c.shard.count,
                    first_n: f.0,
                    first_count: f.1,
                });
            }
            Some(_) => {}
        }
        if c.shard.index >= c.shard.count.max(1) {
            return Err(SumError::NoSuchShard {
                line: number + 1,
                index: c.shard.index,
                count: c.shard.count,
            });
        }
        match seen.entry(c.shard.index) {
            std::collections::btree_map::Entry::Occupied(_) => duplicated.push(c.shard.index),
            std::collections::btree_map::Entry::Vacant(slot) => {
                slot.insert(c);
            }
        }
    }
    let (n, shards) = first.ok_or(SumError::Empty)?;
    let missing: Vec<u32> = (0..shards.max(1))
        .filter(|i| !seen.contains_key(i))
        .collect();
    if !missing.is_empty() || !duplicated.is_empty() {
        duplicated.sort_unstable();
        duplicated.dedup();
        return Err(SumError::Incomplete {
            n,
            shards,
            missing,
            duplicated,
        });
    }
    let parts = seen.values().map(|c| Counts {
        solutions: c.solutions,
        fundamental: c.fundamental,
        turn_fixed: c.turn_fixed,
    });
    let total = Counts::whole(parts).map_err(|source| SumError::Parts { n, shards, source })?;
    Ok(Total {
        n,
        shards,
        solutions: total.solutions,
        fundamental: total.fundamental,
    })
}
