//! What a count needs of memory, as the figures an operator asks for: from the solver's model
//! (`solver::count_memory`, the bytes a server reserves of its budget before a count
//! starts), the memory limit of a server whose budget holds that (the budget's reserve of
//! `config::memory_reserve` added back) and the `--mem` a batch task asks for (the model
//! plus a quarter, in steps of 128 MiB, as `queens estimate` sizes it). `queens memory`
//! prints them, so the deploy recipes quote a command rather than a copy of its figures.
//! Not here: the model itself (the solver's `count/need.rs`), the budget's rule
//! (`crate::config`), printing (`crate::cli`).

use crate::config::MIN_MEMORY_RESERVE;
use crate::solver::{self, Problem, QueryError, Shard};
use serde::Serialize;

/// One MiB.
const MIB: u64 = 1 << 20;

/// The step a task's `--mem` is rounded up to.
const ASK_STEP: u64 = 128 * MIB;

/// What one count needs on a number of CPUs (engines), in bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct CpuNeed {
    /// CPUs, and so engines, the count runs on.
    pub cpus: u32,
    /// What a server reserves of its budget for the count (`--max-memory`).
    pub reserved: u64,
    /// The least memory limit (whole MiB) of a server whose default budget, the limit less
    /// its reserve, holds `reserved`.
    pub server_limit: u64,
    /// What a batch task of the count asks for (`--mem`, a Job's request): `reserved` plus a
    /// quarter for the process, rounded up to 128 MiB.
    pub task: u64,
}

/// What a count of a size, whole or one part of a split, needs of memory.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct CountNeed {
    /// Board size.
    pub n: u32,
    /// Parts of the split (1: the whole count); the figures are those of a part that holds
    /// the most keys.
    pub parts: u32,
    /// The join's tables, when the count builds them (shared by every count of the size).
    pub tables: u64,
    /// Each engine's working lists.
    pub per_engine: u64,
    /// The count's own lists besides (8 MiB and its list of keys).
    pub own: u64,
    /// The totals on each number of CPUs asked for.
    pub by_cpus: Vec<CpuNeed>,
}

/// What a part of `parts` of a plain board of size `n` that holds the most keys needs on
/// each of `cpus` CPUs (part `n mod parts`: parts are numbered the `n` turn-fixed parts
/// first, then the keys round-robin, so that part holds the first key and as many as any).
pub fn count_need(n: u32, parts: u32, cpus: &[u32]) -> Result<CountNeed, QueryError> {
    let parts = parts.max(1);
    let shard = Shard {
        index: n % parts,
        count: parts,
    };
    let problem = Problem::new(n, &[], false, shard)?;
    let one = solver::count_memory(&problem, 1);
    let by_cpus = (cpus.iter())
        .map(|&c| {
            let reserved = solver::count_memory(&problem, c.max(1) as usize).total();
            CpuNeed {
                cpus: c,
                reserved,
                server_limit: server_limit(reserved),
                task: ask_bytes(reserved),
            }
        })
        .collect();
    Ok(CountNeed {
        n,
        parts,
        tables: one.tables.map_or(0, |(_, bytes)| bytes),
        per_engine: one.per_engine,
        own: one.fixed,
        by_cpus,
    })
}

/// Memory to ask for a task that may take `bytes`: a quarter more (the process, the
/// allocator's slack), rounded up to a step of 128 MiB (a Kubernetes request of 128Mi
/// holds a shard of n = 20 on one CPU).
pub fn ask_bytes(bytes: u64) -> u64 {
    bytes.saturating_add(bytes / 4).div_ceil(ASK_STEP) * ASK_STEP
}

/// The least limit, in whole MiB, that leaves `budget` after the budget's reserve at its
/// full size (`config::memory_reserve`: an eighth, at least [`MIN_MEMORY_RESERVE`]; a smaller
/// limit would hold the budget only by leaving the server less than that reserve).
pub fn server_limit(budget: u64) -> u64 {
    (budget.saturating_add(MIN_MEMORY_RESERVE))
        .max(budget.saturating_mul(8).div_ceil(7))
        .next_multiple_of(MIB)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::memory_reserve;

    #[test]
    fn a_server_limit_leaves_its_reserve_besides_the_budget() {
        for budget in [0, MIB, 100 * MIB, 700 * MIB, 3 * 1024 * MIB + 5] {
            let limit = server_limit(budget);
            assert!(limit - memory_reserve(limit) >= budget, "{budget}");
            assert!(limit - budget >= MIN_MEMORY_RESERVE, "{budget}");
            // Past 672 MiB the reserve is an eighth, and a MiB less would not hold the budget.
            let less = limit - MIB;
            assert!(
                budget < 672 * MIB || less - memory_reserve(less) < budget,
                "{budget}"
            );
        }
        assert_eq!(server_limit(12 * MIB), 108 * MIB);
        // 4 GiB leaves a budget of 3.5 GiB: a little more needs a little more than 4 GiB.
        assert_eq!(server_limit(7 * 512 * MIB), 4096 * MIB);
        assert!(server_limit(7 * 512 * MIB + 1) > 4096 * MIB);
    }

    #[test]
    fn a_task_asks_a_quarter_more_in_steps_of_128_mib() {
        assert_eq!(ask_bytes(0), 0);
        assert_eq!(ask_bytes(MIB), 128 * MIB);
        assert_eq!(ask_bytes(1024 * MIB), 1280 * MIB);
        assert_eq!(ask_bytes(1025 * MIB), 1408 * MIB);
    }

    #[test]
    fn the_need_follows_the_model_per_cpu() {
        let need = count_need(24, 16_384, &[1, 2]).expect("a valid split");
        assert!(need.tables > 0 && need.per_engine > 0);
        // More parts than keys: the part named still holds one.
        assert!(count_need(16, 1 << 20, &[1]).expect("valid").tables > 0);
        let [one, two] = [need.by_cpus[0], need.by_cpus[1]];
        assert_eq!(two.reserved - one.reserved, need.per_engine);
        assert_eq!(one.reserved, need.tables + need.per_engine + need.own);
        // Off the join a count takes its own lists only, whatever its CPUs.
        let small = count_need(12, 1, &[1, 4]).expect("valid");
        assert_eq!(small.by_cpus[0].reserved, small.by_cpus[1].reserved);
        assert!(count_need(0, 1, &[1]).is_err());
    }
}
