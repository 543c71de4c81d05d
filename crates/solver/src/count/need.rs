//! What a count needs of memory before it starts ([`count_memory`]): the join's tables of
//! its size (shared by every count of that size at once) and each engine's working lists, or
//! the small lists of the other paths; measured, not guessed (the figures and how they were
//! taken are below). Admission reserves these bytes; the engines' lists are held to them
//! (`join/work.rs`). Not here: which path a count takes (`mod.rs`, whose rule this follows).

use super::join;
use crate::problem::Problem;

/// One MiB.
const MIB: u64 = 1 << 20;

/// Bytes a count off the join takes at most beyond the process (its subproblems' list and
/// its engines' lanes): measured as peak RSS of `queens count N --local` on one core against
/// the process alone, n = 15 whole, shards of n = 25 and 27 (then off the join), fixed
/// queens at n = 20 and 28: 0.1-3.5 MiB; 8 MiB leaves room for the largest lists of
/// fixed-queen splits (32,768 subproblems).
const OFF_JOIN: u64 = 8 * MIB;

/// Peak bytes of the join's tables while they are built, by n from 16 on: the levels the
/// tables are made from and the tables (each array rounded up to whole 2 MiB huge pages
/// from half a MiB on), as the build measures them itself (`Tables::peak_bytes`, printed by
/// the test `memory_figures`), plus the lists of where each set's entries start (under a
/// MiB at n = 25). Exact: the tables depend on n alone. A shard that holds no key builds
/// none.
const TABLES: [u64; 10] = [
    562_056,       // 16
    760_024,       // 17
    10_485_760,    // 18
    10_485_760,    // 19
    20_971_520,    // 20
    27_262_976,    // 21
    180_355_072,   // 22
    247_463_936,   // 23
    729_808_896,   // 24
    1_000_341_504, // 25
];

/// Bytes an engine's working lists took at most over a sample of each size's keys (every
/// K-th key, about 400 of them, 300 at n = 24, 121 at n = 25; AVX-512): the two lists of
/// half words, the room to sort them and the sieve's blocks (`memory_figures`). The lists
/// are what a key cannot do without; the sieve makes do with what is left of its allowance,
/// slower but exact.
const WORK_SAMPLED: [u64; 10] = [
    186_712,     // 16
    107_112,     // 17
    1_096_176,   // 18
    596_776,     // 19
    6_875_024,   // 20
    3_629_768,   // 21
    46_149_608,  // 22
    24_073_272,  // 23
    344_191_608, // 24
    183_610_448, // 25
];

/// What a count reserves: one share of the tables of its size, if it builds or shares
/// them, and its engines' working memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CountMemory {
    /// The join's tables: their size `n` and bytes, when the count uses them (one set per
    /// size in the process, however many counts share it).
    pub tables: Option<(u32, u64)>,
    /// Bytes of each engine's working lists (the allowance they are held to).
    pub per_engine: u64,
    /// Bytes of the count's own lists besides.
    pub fixed: u64,
    /// Engines the count runs.
    pub engines: usize,
}

impl CountMemory {
    /// Bytes the count takes beyond the tables.
    pub fn own(&self) -> u64 {
        self.fixed
            .saturating_add(self.per_engine.saturating_mul(self.engines as u64))
    }

    /// Bytes the count takes in all, the tables included.
    pub fn total(&self) -> u64 {
        self.own()
            .saturating_add(self.tables.map_or(0, |(_, bytes)| bytes))
    }
}

/// An engine's allowance on the join for size `n`: half again the most its lists took over
/// the sampled keys, rounded up to a MiB (the keys not sampled may have longer lists; the
/// sieve takes what is left of the allowance).
fn per_engine(n: u32) -> u64 {
    let sampled = WORK_SAMPLED[(n - 16) as usize];
    (sampled + sampled / 2).next_multiple_of(MIB)
}

/// What a count of `problem` on `threads` engines needs of memory: on the join path (plain
/// boards from n = 16 to 28, whole or a shard that holds a key) the tables of its size (none
/// past n = 25), each engine's allowance and the list of its keys; otherwise `OFF_JOIN` (8 MiB).
pub fn count_memory(problem: &Problem, threads: usize) -> CountMemory {
    let n = problem.n();
    let engines = threads.max(1);
    if !(problem.fixed().is_empty() && join::covers(n)) {
        return CountMemory {
            tables: None,
            per_engine: 0,
            fixed: OFF_JOIN,
            engines,
        };
    }
    let keys = join::keys_held(n, problem.shard());
    let wide = n > join::TABLES_MAX;
    let tables =
        (keys > 0 && !wide).then(|| (n, TABLES[(n - 16) as usize].next_multiple_of(MIB) + MIB));
    let per_engine = match (keys > 0, wide) {
        (false, _) => 0,
        (true, true) => join::engine_bytes(engines) as u64,
        (true, false) => per_engine(n),
    };
    CountMemory {
        tables,
        per_engine,
        // The list of its keys besides (n = 24 whole: about 50 MiB).
        fixed: OFF_JOIN + join::key_list_bytes(keys),
        engines,
    }
}
