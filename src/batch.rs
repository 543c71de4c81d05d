//! Batch runs on an orchestrator: count one shard in process (no server) as one JSON line,
//! and sum such lines after checking that every shard is there exactly once.
//!
//! A Kubernetes Indexed Job runs `queens count N --local --json --shards K` once per index
//! (the index comes from `JOB_COMPLETION_INDEX`); scheduling, retries and placement are the
//! orchestrator's. Fan-out over running servers lives in `fanout.rs`.

use crate::pb::CountRequest;
use crate::service::Query;
use crate::solver::{self, CountError, CountOptions, Counts, Pool, QueryError, Shard};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::time::Instant;

/// The variable a Kubernetes Indexed Job sets to each pod's index.
pub const INDEX_VARIABLE: &str = "JOB_COMPLETION_INDEX";

/// Why a shard count or a sum failed.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The question is not a valid one.
    #[error(transparent)]
    Query(#[from] QueryError),
    /// The count failed.
    #[error(transparent)]
    Count(#[from] CountError),
    /// `--shards` was given without `--shard` and the orchestrator's index is not set.
    #[error("--shards without --shard needs ${variable}")]
    NoIndex {
        /// The variable looked for.
        variable: &'static str,
    },
    /// The orchestrator's index is not a number.
    #[error("{variable}: {value:?} is not a shard index")]
    BadIndex {
        /// The variable.
        variable: &'static str,
        /// Its value.
        value: String,
    },
    /// A line is not a shard count.
    #[error("line {line}: not a shard count: {source}")]
    Line {
        /// Its number, from 1.
        line: usize,
        /// Why.
        source: serde_json::Error,
    },
    /// A line counts another board or another split than the lines before it.
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
    /// A line names a shard its split does not have.
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
    /// The total does not fit in a `u64`.
    #[error("the total does not fit in 64 bits")]
    Overflow,
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
    /// Symmetry classes in the shard (absent with fixed queens).
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub fundamental: Option<u64>,
    /// Seconds the count took.
    pub seconds: f64,
}

/// The shard a batch task counts: `shard` when given, else part `$JOB_COMPLETION_INDEX` of
/// `shards` when the number of shards is given, else the whole search.
pub fn shard_of_task(shard: Option<Shard>, shards: Option<u32>) -> Result<Shard, Error> {
    let index = |variable: &'static str| -> Result<u32, Error> {
        let value = std::env::var(variable).map_err(|_| Error::NoIndex { variable })?;
        value
            .trim()
            .parse()
            .map_err(|_| Error::BadIndex { variable, value })
    };
    Ok(match (shard, shards) {
        (Some(shard), _) => shard,
        (None, Some(count)) => Shard {
            index: index(INDEX_VARIABLE)?,
            count,
        },
        (None, None) => Shard::WHOLE,
    })
}

/// Counts the question of `request` in this process on `threads` threads (the server's
/// validation, with the core's limits).
pub fn count_local(request: &CountRequest, threads: usize) -> Result<ShardCount, Error> {
    let problem = Query::default().count(request)?;
    let started = Instant::now();
    let options = CountOptions {
        threads,
        ..CountOptions::default()
    };
    let pool = Pool::new(threads);
    let counts = solver::pool::wait(|done| solver::count(&problem, options, &pool, done))
        .unwrap_or(Err(CountError::Failed))?;
    let shard = problem.shard();
    Ok(ShardCount {
        n: problem.n(),
        shard: ShardId {
            index: shard.index,
            count: shard.parts(),
        },
        solutions: counts.solutions,
        fundamental: counts.fundamental,
        seconds: started.elapsed().as_secs_f64(),
    })
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
    /// Total symmetry classes, when every shard had them.
    pub fundamental: Option<u64>,
}

/// Sums shard lines (blank lines skipped). Fails, naming them, when shards are missing or
/// repeated, or when lines disagree on n or on the number of shards.
pub fn sum<I: IntoIterator<Item = String>>(lines: I) -> Result<Total, Error> {
    let mut seen: BTreeMap<u32, ShardCount> = BTreeMap::new();
    let mut duplicated = Vec::new();
    let mut first: Option<(u32, u32)> = None;
    for (number, line) in lines.into_iter().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let c: ShardCount = serde_json::from_str(&line).map_err(|source| Error::Line {
            line: number + 1,
            source,
        })?;
        let key = (c.n, c.shard.count);
        match first {
            None => first = Some(key),
            Some(f) if f != key => {
                return Err(Error::Mismatch {
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
            return Err(Error::NoSuchShard {
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
    let (n, shards) = first.ok_or(Error::Empty)?;
    let missing: Vec<u32> = (0..shards.max(1))
        .filter(|i| !seen.contains_key(i))
        .collect();
    if !missing.is_empty() || !duplicated.is_empty() {
        duplicated.sort_unstable();
        duplicated.dedup();
        return Err(Error::Incomplete {
            n,
            shards,
            missing,
            duplicated,
        });
    }
    let mut total = Counts {
        solutions: 0,
        fundamental: Some(0),
    };
    for c in seen.values() {
        let part = Counts {
            solutions: c.solutions,
            fundamental: c.fundamental,
        };
        total = total.checked_add(part).map_err(|_| Error::Overflow)?;
    }
    Ok(Total {
        n,
        shards,
        solutions: total.solutions,
        fundamental: total.fundamental,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(index: u32, count: u32, solutions: u64) -> String {
        serde_json::to_string(&ShardCount {
            n: 8,
            shard: ShardId { index, count },
            solutions,
            fundamental: Some(1),
            seconds: 0.0,
        })
        .unwrap()
    }

    #[test]
    fn local_shards_sum_to_the_whole() {
        let lines: Vec<String> = (0..5)
            .map(|i| {
                let request = CountRequest {
                    n: 10,
                    shard: Some(crate::pb::Shard { index: i, count: 5 }),
                    ..CountRequest::default()
                };
                let c = count_local(&request, 2).unwrap();
                serde_json::to_string(&c).unwrap()
            })
            .collect();
        let total = sum(lines).unwrap();
        assert_eq!(total.solutions, 724);
        assert_eq!(total.fundamental, Some(92));
        assert_eq!(total.shards, 5);
    }

    #[test]
    fn missing_and_duplicated_shards_are_named() {
        let err = sum(vec![line(0, 3, 1), line(2, 3, 1), line(2, 3, 1)])
            .unwrap_err()
            .to_string();
        assert!(err.contains("missing shards [1]"), "{err}");
        assert!(err.contains("duplicated shards [2]"), "{err}");
        let err = sum(vec![line(0, 2, 1), line(1, 3, 1)])
            .unwrap_err()
            .to_string();
        assert!(err.contains("earlier lines"), "{err}");
        assert!(sum(Vec::<String>::new()).is_err());
        assert!(sum(vec!["{nonsense".to_string()]).is_err());
    }
}
