//! Batch runs on an orchestrator: a shard counted in process (no server) as one JSON line,
//! and the sum of such lines after checking that every shard is there exactly once.
//!
//! `queens count N --local --json` runs once per task of a batch system, which names the
//! task's shard (`orchestrator.rs`: a Kubernetes Indexed Job's or a Slurm job array's
//! variables); `count.rs` counts it, and `provenance.rs` says how and where; `sum.rs` adds
//! the lines up; `estimate.rs` prices a whole split from a timed sample of its parts (the
//! arithmetic: running the parts is the command's, in `crate::cli`); `memory.rs` turns the
//! solver's memory model into what a server's limit or a task's `--mem` must be. Fan-out over running
//! servers lives in `crate::fanout`; printing and flags in `crate::cli`. Nothing here uses
//! the service, stream or server modules: a question is validated by the solver itself.

mod count;
mod estimate;
mod memory;
mod orchestrator;
mod provenance;
mod sum;
#[cfg(test)]
mod tests;

pub use self::count::{LocalCountError, ShardCount, ShardId, count_local};
pub use self::estimate::{
    Estimate, EstimateError, Interval, Plan, PlanAsk, SampledPart, SplitMix64, sample_parts,
};
pub use self::memory::{CountNeed, CpuNeed, ask_bytes, count_need, server_limit};
pub use self::orchestrator::{
    INDEX_VARIABLE, SLURM_TASK_COUNT, SLURM_TASK_ID, SLURM_TASK_MAX, SLURM_TASK_MIN,
    SLURM_TASK_STEP, TaskShardError, shard_from, shard_of_task,
};
pub use self::provenance::{Build, Origins, Provenance, UNKNOWN, Usage, cpu_model, tally_text};
pub use self::sum::{Gaps, Indices, SumError, Summer, Total, sum};
