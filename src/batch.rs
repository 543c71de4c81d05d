//! Batch runs on an orchestrator: count one shard in process (no server) as one JSON line,
//! and sum such lines after checking that every shard is there exactly once.
//!
//! A Kubernetes Indexed Job runs `queens count N --local --json --shards K` once per index
//! (the index comes from `JOB_COMPLETION_INDEX`); scheduling, retries and placement are the
//! orchestrator's. Fan-out over running servers lives in `fanout.rs`.

use crate::solver::{self, Problem, Shard, Square};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::sync::atomic::AtomicBool;
use std::time::Instant;

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

/// Counts one shard in this process, on every core it may use.
pub fn count_local(n: u32, fixed: &[Square], shard: Shard) -> Result<ShardCount, String> {
    let problem = Problem::new(n, fixed, false, shard).map_err(|e| e.to_string())?;
    let started = Instant::now();
    let threads = crate::config::default_max_searches();
    let counts = solver::count_parallel(&problem, &AtomicBool::new(false), threads)
        .map_err(|e| e.to_string())?;
    Ok(ShardCount {
        n,
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
pub fn sum<I: IntoIterator<Item = String>>(lines: I) -> Result<Total, String> {
    let mut seen: BTreeMap<u32, ShardCount> = BTreeMap::new();
    let mut duplicated = Vec::new();
    let mut first: Option<(u32, u32)> = None;
    for (number, line) in lines.into_iter().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let c: ShardCount = serde_json::from_str(&line)
            .map_err(|e| format!("line {}: not a shard count: {e}", number + 1))?;
        let key = (c.n, c.shard.count);
        match first {
            None => first = Some(key),
            Some(f) if f != key => {
                return Err(format!(
                    "line {}: n {} with {} shards, but earlier lines have n {} with {} shards",
                    number + 1,
                    c.n,
                    c.shard.count,
                    f.0,
                    f.1
                ));
            }
            Some(_) => {}
        }
        if c.shard.index >= c.shard.count.max(1) {
            return Err(format!(
                "line {}: shard {} of {} does not exist",
                number + 1,
                c.shard.index,
                c.shard.count
            ));
        }
        match seen.entry(c.shard.index) {
            std::collections::btree_map::Entry::Occupied(_) => duplicated.push(c.shard.index),
            std::collections::btree_map::Entry::Vacant(slot) => {
                slot.insert(c);
            }
        }
    }
    let (n, shards) = first.ok_or("no shard counts given")?;
    let missing: Vec<u32> = (0..shards.max(1))
        .filter(|i| !seen.contains_key(i))
        .collect();
    if !missing.is_empty() || !duplicated.is_empty() {
        duplicated.sort_unstable();
        duplicated.dedup();
        return Err(format!(
            "n {n} with {shards} shards: missing shards {missing:?}, duplicated shards {duplicated:?}"
        ));
    }
    let overflow = || "the total does not fit in 64 bits".to_string();
    let mut solutions = 0u64;
    let mut fundamental = Some(0u64);
    for c in seen.values() {
        solutions = solutions.checked_add(c.solutions).ok_or_else(overflow)?;
        fundamental = match (fundamental, c.fundamental) {
            (Some(a), Some(b)) => Some(a.checked_add(b).ok_or_else(overflow)?),
            _ => None,
        };
    }
    Ok(Total {
        n,
        shards,
        solutions,
        fundamental,
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
                let c = count_local(10, &[], Shard { index: i, count: 5 }).unwrap();
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
        let err = sum(vec![line(0, 3, 1), line(2, 3, 1), line(2, 3, 1)]).unwrap_err();
        assert!(err.contains("missing shards [1]"), "{err}");
        assert!(err.contains("duplicated shards [2]"), "{err}");
        let err = sum(vec![line(0, 2, 1), line(1, 3, 1)]).unwrap_err();
        assert!(err.contains("earlier lines"), "{err}");
        assert!(sum(Vec::<String>::new()).is_err());
        assert!(sum(vec!["{nonsense".to_string()]).is_err());
    }
}
