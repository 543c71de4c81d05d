//! Which shard a batch task counts, from `--shard`, `--shards` and the variables its
//! orchestrator sets: a Kubernetes Indexed Job sets `JOB_COMPLETION_INDEX` (the number of
//! shards comes from `--shards K`), a Slurm job array sets `SLURM_ARRAY_TASK_ID` and
//! `SLURM_ARRAY_TASK_COUNT` (`--shards K` optional). Scheduling, retries and placement are
//! the orchestrator's; counting the shard is `count.rs`'s.

use crate::solver::Shard;

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

/// Why a batch task's shard could not be told from its flags and its environment.
#[derive(Debug, thiserror::Error)]
pub enum TaskShardError {
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
}

/// The shard a batch task counts, from the process's environment: see [`shard_from`].
pub fn shard_of_task(shard: Option<Shard>, shards: Option<u32>) -> Result<Shard, TaskShardError> {
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
) -> Result<Shard, TaskShardError> {
    if let Some(shard) = shard {
        return Ok(shard);
    }
    let number = |name: &'static str| -> Result<Option<u32>, TaskShardError> {
        variable(name)
            .map(|value| {
                value
                    .trim()
                    .parse()
                    .map_err(|_| TaskShardError::NotANumber {
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
            return Err(TaskShardError::Conflict { kubernetes, slurm });
        }
        (_, Some(slurm)) => (slurm, SLURM_TASK_ID),
        (Some(kubernetes), None) => (kubernetes, INDEX_VARIABLE),
        (None, None) => return Err(TaskShardError::NoIndex),
    };
    let count = match shards {
        Some(count) => count,
        None => slurm_array_count(&number)?,
    };
    if index >= count.max(1) {
        return Err(TaskShardError::IndexTooLarge {
            variable: from,
            index,
            count,
        });
    }
    Ok(Shard { index, count })
}

/// The number of tasks of this Slurm job array, when its task ids are exactly 0..count-1.
fn slurm_array_count(
    number: &impl Fn(&'static str) -> Result<Option<u32>, TaskShardError>,
) -> Result<u32, TaskShardError> {
    let count = number(SLURM_TASK_COUNT)?.ok_or(TaskShardError::NoCount)?;
    let refuse = |variable: &'static str, value: Option<u32>| {
        let value = value.map_or_else(|| "unset".to_string(), |v| v.to_string());
        Err(TaskShardError::NotShards { variable, value })
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
