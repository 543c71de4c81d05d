//! Batch runs on an orchestrator: count one shard in process (no server) as one JSON line,
//! and sum such lines after checking that every shard is there exactly once.
//!
//! `queens count N --local --json` runs once per task of a batch system, which names the
//! task's shard: a Kubernetes Indexed Job sets `JOB_COMPLETION_INDEX` (the number of shards
//! comes from `--shards K`), a Slurm job array sets `SLURM_ARRAY_TASK_ID` and
//! `SLURM_ARRAY_TASK_COUNT` (`--shards K` optional). Scheduling, retries and placement are the
//! orchestrator's. Fan-out over running servers lives in `fanout.rs`.

use crate::pb::CountRequest;
use crate::service::Query;
use crate::solver::{self, CountError, CountOptions, Counts, Pool, QueryError, Shard};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::time::Instant;

/// The variable a Kubernetes Indexed Job sets to each pod's index.
pub const INDEX_VARIABLE: &str = "JOB_COMPLETION_INDEX";

/// The variable Slurm sets to the id of each task of a job array.
pub const SLURM_TASK_ID: &str = "SLURM_ARRAY_TASK_ID";

/// The variable Slurm sets to the number of tasks of a job array.
pub const SLURM_TASK_COUNT: &str = "SLURM_ARRAY_TASK_COUNT";

/// The variable Slurm sets to a job array's lowest task id.
pub const SLURM_TASK_MIN: &str = "SLURM_ARRAY_TASK_MIN";

/// The variable Slurm sets to a job array's highest task id.
pub const SLURM_TASK_MAX: &str = "SLURM_ARRAY_TASK_MAX";

/// The variable Slurm sets to the step between a job array's task ids (`--array=0-30:2`).
pub const SLURM_TASK_STEP: &str = "SLURM_ARRAY_TASK_STEP";

/// Why a shard count or a sum failed.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The question is not a valid one.
    #[error(transparent)]
    Query(#[from] QueryError),
    /// The count failed.
    #[error(transparent)]
    Count(#[from] CountError),
    /// `--shards` was given without `--shard` and no orchestrator's index is set.
    #[error("--shards without --shard needs ${INDEX_VARIABLE} or ${SLURM_TASK_ID}")]
    NoIndex,
    /// An orchestrator's variable is not a number.
    #[error("${variable} is {value:?}, not a number")]
    NotANumber {
        /// The variable.
        variable: &'static str,
        /// Its value.
        value: String,
    },
    /// Both orchestrators' indices are set, to different shards.
    #[error(
        "${INDEX_VARIABLE} is {kubernetes} but ${SLURM_TASK_ID} is {slurm}: which shard is \
         this task's? Unset one, or give --shard I/K"
    )]
    Conflict {
        /// `JOB_COMPLETION_INDEX`.
        kubernetes: u32,
        /// `SLURM_ARRAY_TASK_ID`.
        slurm: u32,
    },
    /// A Slurm array task without `--shards`, and `SLURM_ARRAY_TASK_COUNT` is not set.
    #[error("${SLURM_TASK_ID} without --shards needs ${SLURM_TASK_COUNT}")]
    NoCount,
    /// The Slurm array's task ids are not exactly 0..K-1, so they are not the shards of K.
    #[error(
        "${variable} is {value}, but the task ids of a job array are the shards only when \
         they are 0 to K-1 (sbatch --array=0-<K-1>); give --shards K to take them as shard \
         indices of K as they are"
    )]
    NotShards {
        /// The variable that shows it.
        variable: &'static str,
        /// Its value (`unset` when it is missing).
        value: String,
    },
    /// The index is not one of the shards.
    #[error("${variable} is {index}, but there are {count} shards (0 to {last})", last = count.saturating_sub(1))]
    IndexTooLarge {
        /// Where the index came from.
        variable: &'static str,
        /// The index.
        index: u32,
        /// The number of shards.
        count: u32,
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

/// The shard a batch task counts, from the process's environment: see [`shard_from`].
pub fn shard_of_task(shard: Option<Shard>, shards: Option<u32>) -> Result<Shard, Error> {
    shard_from(shard, shards, |name| {
        std::env::var_os(name).map(|value| value.to_string_lossy().into_owned())
    })
}

/// The shard a batch task counts, given `--shard` (`shard`), `--shards` (`shards`) and the
/// orchestrators' variables (`variable(name)`, None when unset):
///
/// - `--shard I/K`: that shard, whatever the variables say.
/// - Else the index is `$SLURM_ARRAY_TASK_ID` or `$JOB_COMPLETION_INDEX` (both set: they must
///   agree), and the number of shards is `--shards K`, else `$SLURM_ARRAY_TASK_COUNT` in a
///   Slurm array task. The array's count is taken only when its task ids are exactly 0 to
///   K-1 (`SLURM_ARRAY_TASK_MIN` 0, `SLURM_ARRAY_TASK_MAX` K-1, no `SLURM_ARRAY_TASK_STEP`
///   but 1);
///   any other array (`--array=1-16`, `--array=0-30:2`, `--array=0,1,5`) is refused naming
///   the variable, since counting its ids as shards of K would miss some shards and count
///   others that no task was meant for. With `--shards K` the ids are taken as they are
///   (e.g. `--array=3,7 … --shards 16` reruns shards 3 and 7), and must be below K.
/// - Neither `--shards` nor a Slurm array task: the whole search.
pub fn shard_from(
    shard: Option<Shard>,
    shards: Option<u32>,
    variable: impl Fn(&str) -> Option<String>,
) -> Result<Shard, Error> {
    if let Some(shard) = shard {
        return Ok(shard);
    }
    let number = |name: &'static str| -> Result<Option<u32>, Error> {
        variable(name)
            .map(|value| {
                value.trim().parse().map_err(|_| Error::NotANumber {
                    variable: name,
                    value,
                })
            })
            .transpose()
    };
    let slurm = number(SLURM_TASK_ID)?;
    if shards.is_none() && slurm.is_none() {
        return Ok(Shard::WHOLE);
    }
    let (index, from) = match (number(INDEX_VARIABLE)?, slurm) {
        (Some(kubernetes), Some(slurm)) if kubernetes != slurm => {
            return Err(Error::Conflict { kubernetes, slurm });
        }
        (_, Some(slurm)) => (slurm, SLURM_TASK_ID),
        (Some(kubernetes), None) => (kubernetes, INDEX_VARIABLE),
        (None, None) => return Err(Error::NoIndex),
    };
    let count = match shards {
        Some(count) => count,
        None => slurm_array_count(&number)?,
    };
    if index >= count.max(1) {
        return Err(Error::IndexTooLarge {
            variable: from,
            index,
            count,
        });
    }
    Ok(Shard { index, count })
}

/// The number of tasks of this Slurm job array, when its task ids are exactly 0..count-1.
fn slurm_array_count(
    number: &impl Fn(&'static str) -> Result<Option<u32>, Error>,
) -> Result<u32, Error> {
    let count = number(SLURM_TASK_COUNT)?.ok_or(Error::NoCount)?;
    let refuse = |variable: &'static str, value: Option<u32>| {
        let value = value.map_or_else(|| "unset".to_string(), |v| v.to_string());
        Err(Error::NotShards { variable, value })
    };
    if count == 0 {
        return refuse(SLURM_TASK_COUNT, Some(count));
    }
    match number(SLURM_TASK_MIN)? {
        Some(0) => {}
        other => return refuse(SLURM_TASK_MIN, other),
    }
    // Redundant with the checks of the lowest and highest ids, but the clearer message.
    match number(SLURM_TASK_STEP)? {
        Some(step) if step != 1 && count > 1 => return refuse(SLURM_TASK_STEP, Some(step)),
        _ => {}
    }
    match number(SLURM_TASK_MAX)? {
        Some(max) if max == count - 1 => Ok(count),
        other => refuse(SLURM_TASK_MAX, other),
    }
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

    /// The shard `shard_from` picks with only these variables set.
    fn shard_with(
        shard: Option<Shard>,
        shards: Option<u32>,
        variables: &[(&str, &str)],
    ) -> Result<Shard, Error> {
        shard_from(shard, shards, |name| {
            variables
                .iter()
                .find(|(n, _)| *n == name)
                .map(|(_, v)| v.to_string())
        })
    }

    /// A Slurm array task's variables: task `id` of `--array=min-max` (`count` tasks).
    fn slurm(
        id: &'static str,
        count: &'static str,
        min: &'static str,
        max: &'static str,
    ) -> Vec<(&'static str, &'static str)> {
        vec![
            (SLURM_TASK_ID, id),
            (SLURM_TASK_COUNT, count),
            (SLURM_TASK_MIN, min),
            (SLURM_TASK_MAX, max),
            (SLURM_TASK_STEP, "1"),
        ]
    }

    fn shard(index: u32, count: u32) -> Shard {
        Shard { index, count }
    }

    #[test]
    fn kubernetes_index_with_shards() {
        let k = [(INDEX_VARIABLE, "3")];
        assert_eq!(shard_with(None, Some(8), &k).unwrap(), shard(3, 8));
        // Without --shards an Indexed Job's index alone means nothing, as before.
        assert_eq!(shard_with(None, None, &k).unwrap(), Shard::WHOLE);
        assert_eq!(shard_with(None, None, &[]).unwrap(), Shard::WHOLE);
        let err = shard_with(None, Some(8), &[]).unwrap_err().to_string();
        assert!(
            err.contains("JOB_COMPLETION_INDEX or $SLURM_ARRAY_TASK_ID"),
            "{err}"
        );
        let err = shard_with(None, Some(8), &[(INDEX_VARIABLE, "x")])
            .unwrap_err()
            .to_string();
        assert_eq!(err, r#"$JOB_COMPLETION_INDEX is "x", not a number"#);
        let err = shard_with(None, Some(8), &[(INDEX_VARIABLE, "8")])
            .unwrap_err()
            .to_string();
        assert_eq!(
            err,
            "$JOB_COMPLETION_INDEX is 8, but there are 8 shards (0 to 7)"
        );
    }

    #[test]
    fn slurm_array_gives_index_and_count() {
        // sbatch --array=0-15: task 5 counts shard 5 of 16, with or without --shards 16.
        let array = slurm("5", "16", "0", "15");
        assert_eq!(shard_with(None, None, &array).unwrap(), shard(5, 16));
        assert_eq!(shard_with(None, Some(16), &array).unwrap(), shard(5, 16));
        // --shard wins over everything.
        assert_eq!(
            shard_with(Some(shard(1, 2)), None, &array).unwrap(),
            shard(1, 2)
        );
        // Whitespace around a number is fine; one task is the whole search.
        let one = slurm(" 0 ", "1", "0", "0");
        assert_eq!(shard_with(None, None, &one).unwrap(), shard(0, 1));
        // No STEP variable (older Slurm) is no problem when the ids are 0..K-1.
        let mut no_step = array.clone();
        no_step.retain(|(n, _)| *n != SLURM_TASK_STEP);
        assert_eq!(shard_with(None, None, &no_step).unwrap(), shard(5, 16));
    }

    #[test]
    fn slurm_and_kubernetes_must_agree() {
        let mut both = slurm("5", "16", "0", "15");
        both.push((INDEX_VARIABLE, "5"));
        assert_eq!(shard_with(None, None, &both).unwrap(), shard(5, 16));
        both.pop();
        both.push((INDEX_VARIABLE, "6"));
        let err = shard_with(None, None, &both).unwrap_err();
        assert!(
            matches!(
                err,
                Error::Conflict {
                    kubernetes: 6,
                    slurm: 5
                }
            ),
            "{err:?}"
        );
        let err = err.to_string();
        assert!(
            err.starts_with("$JOB_COMPLETION_INDEX is 6 but $SLURM_ARRAY_TASK_ID is 5"),
            "{err}"
        );
        // --shard settles it.
        assert_eq!(
            shard_with(Some(shard(2, 4)), None, &both).unwrap(),
            shard(2, 4)
        );
    }

    #[test]
    fn slurm_arrays_that_are_not_0_to_k_minus_1_are_refused() {
        let refused = |variables: &[(&str, &str)], variable: &str, value: &str| {
            let err = shard_with(None, None, variables).unwrap_err();
            match &err {
                Error::NotShards {
                    variable: v,
                    value: x,
                } => {
                    assert_eq!((*v, x.as_str()), (variable, value), "{err}")
                }
                _ => panic!("{err:?}"),
            }
            let text = err.to_string();
            assert!(
                text.starts_with(&format!("${variable} is {value}, ")),
                "{text}"
            );
            assert!(text.contains("--shards K"), "{text}");
        };
        // --array=1-16: ids from 1.
        refused(&slurm("1", "16", "1", "16"), SLURM_TASK_MIN, "1");
        // --array=0-30:2: a step.
        let mut stepped = slurm("2", "16", "0", "30");
        stepped.retain(|(n, _)| *n != SLURM_TASK_STEP);
        stepped.push((SLURM_TASK_STEP, "2"));
        refused(&stepped, SLURM_TASK_STEP, "2");
        // --array=0,1,5: a gap (Slurm says step 1).
        refused(&slurm("5", "3", "0", "5"), SLURM_TASK_MAX, "5");
        // The variables that show the shape are missing.
        let mut bare = slurm("5", "16", "0", "15");
        bare.retain(|(n, _)| *n == SLURM_TASK_ID || *n == SLURM_TASK_COUNT);
        refused(&bare, SLURM_TASK_MIN, "unset");
        bare.push((SLURM_TASK_MIN, "0"));
        refused(&bare, SLURM_TASK_MAX, "unset");
        refused(&slurm("0", "0", "0", "0"), SLURM_TASK_COUNT, "0");
        let err = shard_with(None, None, &[(SLURM_TASK_ID, "5")]).unwrap_err();
        assert!(matches!(err, Error::NoCount), "{err:?}");
        let err = shard_with(None, None, &slurm("5", "sixteen", "0", "15")).unwrap_err();
        assert_eq!(
            err.to_string(),
            r#"$SLURM_ARRAY_TASK_COUNT is "sixteen", not a number"#
        );
    }

    #[test]
    fn slurm_ids_with_shards_are_taken_as_they_are() {
        // sbatch --array=3,7 … --shards 16 reruns shards 3 and 7 of 16.
        let rerun = slurm("7", "2", "3", "7");
        assert_eq!(shard_with(None, Some(16), &rerun).unwrap(), shard(7, 16));
        let err = shard_with(None, Some(4), &rerun).unwrap_err().to_string();
        assert_eq!(
            err,
            "$SLURM_ARRAY_TASK_ID is 7, but there are 4 shards (0 to 3)"
        );
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
