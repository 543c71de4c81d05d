//! Count's path for plain boards from n = 16 to 28, whole or in shards: solutions counted by
//! joining half boards instead of searching whole ones. The top half's placements are listed
//! per set of columns, and the solutions are the pairs of a top half and a bottom half (the
//! mirror image of another top half) on complementary columns whose diagonals do not meet.
//!
//! Every placement of the top `m = n / 2` rows is summed up by what the rows below can see of
//! it: the diagonals it attacks on the row under it (odd n: on the middle row, whose queen is
//! part of the key). A pair of halves fits exactly when those masks, one half's against the
//! other's mirrored, have no bit in common, so a key's count is the number of disjoint pairs
//! of two lists of 64-bit words. The lists are split recursively, each block on the bit that
//! most pairs of a small sample share (pairs that share a bit are never compared; the longer
//! block is split, the shorter one goes on whole), and the small blocks left are compared
//! pair by pair, eight pairs per instruction in AVX-512 registers (sixteen where the
//! blocks are narrowed to 32-bit words, `narrow.rs`). Keys that the board's up-down and
//! left-right mirrors map onto each other are counted once, weighted; the two transposes are
//! taken out by weighing each pair by the balance between the board's four triangles
//! (`sieve.rs`), which spares about 40% of the comparisons. Symmetry classes come at the end
//! from fixed points: the solutions a half or a quarter turn maps to themselves are counted by
//! a small search of their own (`fixed.rs`). A shard takes every K-th of the same parts (the
//! turn-fixed searches, then the keys, in one fixed order that depends on n alone), so each
//! part is an independent unit of work; it answers its fixed points as they are, and the
//! parts' sum makes the classes.
//!
//! Memory: a half's words are built per key from two tables (placements of the half's first
//! rows and of its last rows, by columns), one set per size in the process shared by every
//! count of that size (`shared.rs`), into lists each engine of a count keeps from key to key
//! within an allowance (`work.rs`); what they take per size is `count/need.rs`'s.
//!
//! Past n = 25, to 28, the join takes its wide path (`wide.rs`): tables would need 5.5 to
//! 29 GiB there, so each key makes its halves from bands of its own columns instead
//! (`bands.rs`), in lists of bounded chunks, their words laid out wider (`word.rs`) for the
//! same sieve.
//!
//! # Files, top down (each imports only from files below it)
//! - `mod.rs` (here): when Count takes this path ([`covers`]), its subproblems ([`parts`])
//!   and what a part counts.
//! - `shared.rs`: one join per board size in the process, shared by its counts.
//! - `path.rs`: the one place that picks a path: the tables' or the wide one (`Join`).
//! - `wide.rs`: the wide path: a key's halves chunk by chunk against each other.
//! - `halves.rs`: the tables' path: a key's halves made from the tables and sieved.
//! - `work.rs`: what an engine is asked of a key (`Task`) and keeps from key to key (`Work`).
//! - `bands.rs`: a key's own bands on the wide path, and the halves they make.
//! - `tables.rs`: the tables of a board size, built a row at a time.
//! - `sieve.rs`: a key's pairs counted by splitting on shared bits; a key cut in pieces.
//!   `sieve/in_place.rs`: its top splits on the wide path, in place.
//! - `narrow.rs`: the sieve's subtrees on words narrowed to 32 bits.
//! - `share.rs`: sides of the sieve's splits handed to the count's engines that have no
//!   part left, so that a count's last key keeps every engine busy.
//! - `sample.rs`: the bit to split on, from a sample of each block.
//! - `kernels/`: the SIMD kernels, one dispatch for every tier (its `mod.rs` lists its
//!   files); the only code here that names an instruction set or holds a tier's `unsafe`.
//! - `sizes.rs`: a board's sizes on both paths, a square's balance, the sizes each path takes.
//! - `keys.rs`: the keys, and the ranks of column sets.
//! - `word.rs`: the layout of a half's word, the tail's word, the mirror and the sort.
//! - `memory.rs`: the tables' huge-page arrays and the engines' allowance.
//! - `fixed.rs` (aside): the search for the solutions a half or quarter turn fixes.
//! - `check.rs` (aside): the second opinion, a key's solutions by a plain search.
//!
//! Every SIMD kernel runs in the tier a [`Tier`] token names, which only detection makes
//! (`simd.rs`). Not here: Count's engines, progress and cancellation (`count/engine.rs`;
//! `count/mod.rs` picks a shard's parts and keeps fixed queens on the border
//! constellations), the backtracking searches (`count/board.rs`, `count/lanes.rs`).

mod bands;
mod check;
mod fixed;
mod halves;
mod kernels;
mod keys;
mod memory;
mod narrow;
mod path;
mod sample;
mod share;
mod shared;
mod sieve;
mod sizes;
mod tables;
mod wide;
mod word;
mod work;

#[cfg(test)]
mod tests;

pub(crate) use self::wide::engine_bytes;

use self::check::{Check, Verdict};
use self::fixed::{ticks, turn_fixed_from};
pub(crate) use self::sizes::TABLES_MAX;

use self::sizes::MAX;

use self::keys::{Key, key_count, shard_keys_into};
use self::shared::{Shared, with_tables};
use self::sieve::Piece;
use self::tables::build_steps;
use self::work::{Task, Works};
use super::board::Tally;
use super::options::{CountOptions, Hold, Progress, Recount, RecountMethod, thread_nanos};
use super::subproblem::{Partial, Subproblem};
use crate::counts::CountError;
use crate::geometry::Square;
use crate::pool::Pool;
use crate::problem::Shard;
use crate::simd::{Tier, TierKind, tier};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

/// Count takes this path for whole plain boards from this size on, where it counts faster
/// than the border constellations (measured with `cargo bench --bench count`, 2 threads:
/// n = 16 0.19 s against 0.42 s, n = 17 2.0 s against 2.4 s, n = 18 4.4 s against 19.6 s).
const FROM: u32 = 16;

const _: () = assert!(TABLES_MAX <= keys::RANK_COLUMNS);
const _: () = assert!(2 * MAX - 2 + 10 <= 64);

/// Whether Count takes the join path for a whole plain board of size `n`: on every tier,
/// since the join counts faster there than the constellations' lanes on each (AVX2 and
/// portable measured by forcing the tier, before the join's AVX2 kernels, `queens count N --local`, 2 threads, CPU seconds:
/// AVX2 n = 16 0.58 against 0.95, n = 17 4.4 against 6.7, n = 18 19.0 against 45.2;
/// portable n = 16 0.63 against 1.50, n = 17 4.9 against 10.5). It depends on `n` alone,
/// never on the CPU: the parts of one count may run on different machines.
pub(super) fn covers(n: u32) -> bool {
    (FROM..=MAX).contains(&n)
}

/// How many keys `shard` of a plain board of size `n` holds: it needs the tables when it
/// holds one (its parts are numbered as in [`parts`]: the `n` turn-fixed parts, then the
/// keys).
pub(super) fn keys_held(n: u32, shard: Shard) -> usize {
    let (parts, index) = (shard.parts() as usize, shard.index as usize);
    if index >= parts {
        return 0;
    }
    let (first, end) = (n as usize, n as usize + key_count(n));
    // The first place at or after `first` that the shard holds.
    let held = first + (index + parts - first % parts) % parts;
    if held >= end {
        0
    } else {
        (end - 1 - held) / parts + 1
    }
}

/// Bytes of a count's list of `keys` keys as parts (the keys listed, then made parts; a
/// shard of fewer keys than engines makes one part more per key, [`pieces`]).
pub(super) fn key_list_bytes(keys: usize) -> u64 {
    (keys * (size_of::<Key>() + size_of::<Part>())) as u64
}

/// The pieces each of `keys` keys of size `n` is counted in on `threads` engines: both
/// sides of a cut when the keys are fewer than the engines, so that an engine that would
/// have no key has a piece (the side without the cut's bit first: it holds about two thirds
/// of the pairs), or from [`CUT_EVERY_KEY_FROM`] on; else the whole key. A cut costs its
/// key's halves made twice: on shards of one key of n = 26 on 2 engines, 0.65 times the
/// wall time at 1.03 to 1.10 times the CPU time; with three keys on two engines it took
/// 0.82 times the wall time at 1.04 times the CPU, and with two or three keys that already
/// kept both busy 1.06 times the wall at 1.08 times the CPU (n = 26's part 100 of 2^20,
/// three keys, again with the splits in place: 1.07 times the wall at 1.12 times the CPU).
fn pieces(n: u32, keys: usize, threads: usize) -> &'static [Piece] {
    if keys < threads || (threads > 1 && n >= CUT_EVERY_KEY_FROM) {
        &[Piece::Without, Piece::With]
    } else {
        &[Piece::Whole]
    }
}

/// The size from which a count of two or more engines cuts every key in two ([`pieces`]):
/// there a part of 2^22 holds two or three keys, one of them most of its work, whose lists
/// (24 to 300 million words) pass an engine's chunk. n = 28's parts 4,072,170 and
/// 3,236,100 of 2^22 on 2 engines took 0.92 and 0.63 times the wall time at 1.06 and 1.04
/// times the CPU (1.61 and 1.80 of 2 CPUs busy, against 1.40 and 1.09).
const CUT_EVERY_KEY_FROM: u32 = 28;

/// Count's subproblems for `shard` of a plain board of size `n`, handed to `then`: of the
/// list of the turn-fixed solutions, one per column of the first row's queen, then one per
/// key, those that `shard` holds ([`Shard::holds`]; the list depends on `n` alone). The keys
/// share the process's one set of tables of size `n` ([`with_tables`]), built here (on this
/// pool thread) when no count holds them yet, and not at all when the shard holds no key;
/// `Cancelled` if the count's flag is raised while they are built, `OutOfMemory` if an
/// allocation fails. Tells the count's progress the table-building steps and the parts'
/// steps in all, and each table-building step as it is done (all at once when another count
/// built them; a turn-fixed part ticks its own steps as it runs). Each engine's lists for a
/// key grow within the options' `work_bytes` (on the wide path at most [`engine_bytes`]); the tables
/// keep the options' `hold` while they live.
pub(super) fn parts(
    n: u32,
    shard: Shard,
    options: &CountOptions,
    pool: &Pool,
    then: impl FnOnce(Result<Vec<Part>, CountError>) + Send + 'static,
) {
    let tier = tier();
    let turns: Vec<u32> = (0..n)
        .filter(|&first| shard.holds(first as usize))
        .collect();
    // Only the shard's parts are made: the rest cost no memory and no reference counts. Their
    // lists (tens of MiB at n = 24, about a GiB at n = 25 whole) are allocated once, where a
    // failure is an error.
    let held = keys_held(n, shard);
    let out_of_memory = CountError::OutOfMemory {
        bytes: key_list_bytes(held),
    };
    let mut keys = Vec::new();
    if keys.try_reserve_exact(held).is_err() {
        return then(Err(out_of_memory));
    }
    shard_keys_into(n, n as usize, shard, &mut keys);
    let progress = &options.progress;
    let build = if keys.is_empty() { 0 } else { build_steps(n) };
    let pieces = pieces(n, keys.len(), options.threads);
    // The tables' steps count as subproblems, so that progress moves while they are built
    // (n = 24: seconds), and so do a turn-fixed part's (n = 24: about 2 s each); the engines
    // add the parts to the steps done.
    // With two or more engines, each ends on a part that counts the sides of splits the
    // others offer while they still count keys (`share.rs`).
    let helpers = if options.threads > 1 {
        options.threads
    } else {
        0
    };
    let planned =
        build + turns.len() as u64 * (1 + ticks(n)) + (keys.len() * pieces.len() + helpers) as u64;
    progress.total.store(planned, Ordering::Relaxed);
    let turns: Vec<Part> = turns
        .into_iter()
        .map(|first| Part(Kind::Turns(first, progress.clone())))
        .collect();
    if keys.is_empty() {
        return then(Ok(turns));
    }
    // The wide path's engines hold at most its allowance, whatever the options allow.
    let work_bytes = if n > TABLES_MAX {
        options.work_bytes.min(engine_bytes(options.threads))
    } else {
        options.work_bytes
    };
    let works = Arc::new(Works::new(work_bytes));
    let recount = options.recount.filter(|r| r.fraction > 0.0);
    // The keys a search checks, each with its openings, which run as parts of their own
    // after the join's (they cost more than a key's join, and fill the engines' gaps).
    let searched: Vec<(Arc<Check>, usize)> = match recount {
        Some(r) if r.method == RecountMethod::Search => keys
            .iter()
            .filter(|key| chosen(key, r))
            .map(|&key| {
                let (check, openings) = Check::new(n, key, pieces.len(), tier.name());
                (Arc::new(check), openings)
            })
            .collect(),
        _ => Vec::new(),
    };
    let openings: usize = searched.iter().map(|(_, openings)| openings).sum();
    progress.total.fetch_add(openings as u64, Ordering::Relaxed);
    let recounts = progress.clone();
    let made = move |tables: Arc<Shared>| -> Result<Vec<Part>, CountError> {
        let mut parts = turns;
        if parts
            .try_reserve_exact(keys.len() * pieces.len() + openings + helpers)
            .is_err()
        {
            return Err(out_of_memory);
        }
        // Piece by piece over the keys, the larger side of each cut first: the smaller
        // ones then fill the engines' last gaps.
        let mut checks = searched.iter().peekable();
        for &piece in pieces {
            for &key in &keys {
                let check = match recount {
                    Some(r) if r.method == RecountMethod::Search => checks
                        .next_if(|(check, _)| check.key == key)
                        .map(|(check, _)| Again::Search(check.clone(), recounts.clone())),
                    Some(r) if chosen(&key, r) => {
                        Some(Again::Tier(other_tier(tier), recounts.clone()))
                    }
                    _ => None,
                };
                let (tables, works) = (tables.clone(), works.clone());
                parts.push(Part(Kind::Key(tables, key, piece, tier, works, check)));
            }
            checks = searched.iter().peekable();
        }
        for (check, _) in &searched {
            for opening in check.rows.openings() {
                let searching = Kind::Search(check.clone(), opening, recounts.clone());
                parts.push(Part(searching));
            }
        }
        for _ in 0..helpers {
            parts.push(Part(Kind::Help(works.clone())));
        }
        Ok(parts)
    };
    let wanted = Wanted {
        n,
        cancel: options.cancel.clone(),
        progress: progress.clone(),
        ticked: Arc::new(AtomicU64::new(0)),
        hold: options.hold.clone(),
        pool: pool.clone(),
    };
    wanted.tables(Box::new(move |tables| then(tables.and_then(made))));
}

/// A count that wants the tables of its size: what the build polls and ticks, what the
/// tables keep alive, and the pool to build them again on.
#[derive(Clone)]
struct Wanted {
    n: u32,
    cancel: Arc<AtomicBool>,
    progress: Arc<Progress>,
    /// The count's table-building steps ticked so far.
    ticked: Arc<AtomicU64>,
    hold: Option<Hold>,
    pool: Pool,
}

impl Wanted {
    /// Hands `then` the tables, built or shared; when they came from a build that another
    /// count gave up (it was cancelled) and this count was not, builds them again.
    fn tables(self, then: Box<dyn FnOnce(Result<Arc<Shared>, CountError>) + Send>) {
        let tick = || {
            self.ticked.fetch_add(1, Ordering::Relaxed);
            self.progress.tick();
        };
        let again = self.clone();
        with_tables(
            self.n,
            &self.cancel,
            &tick,
            self.hold.clone(),
            move |built| {
                match built {
                    Err(CountError::Cancelled) if !again.cancel.load(Ordering::Relaxed) => {
                        let pool = again.pool.clone();
                        pool.spawn(move || again.tables(then));
                    }
                    Ok(tables) => {
                        // Steps another count's build took count here as done.
                        let steps = build_steps(again.n);
                        let ticked = again.ticked.swap(steps, Ordering::Relaxed);
                        (again.progress.done)
                            .fetch_add(steps.saturating_sub(ticked), Ordering::Relaxed);
                        then(Ok(tables))
                    }
                    Err(error) => then(Err(error)),
                }
            },
        );
    }
}

/// A subproblem of Count's join path (what it holds stays inside the join).
pub(super) struct Part(Kind);

/// What a [`Part`] counts.
enum Kind {
    /// The solutions that a half turn or a quarter turn maps to themselves, with the first
    /// row's queen on this column, as fixed points for the classes (half + 2 × quarter);
    /// the count's progress, which it ticks as it goes.
    Turns(u32, Arc<Progress>),
    /// One key's solutions, or a piece's of them: its weighted pairs times the key's
    /// weight, the pair tests in this CPU's tier, its lists taken from the count's engines'
    /// ones; when the key is recounted, how ([`Again`]).
    Key(Arc<Shared>, Key, Piece, Tier, Arc<Works>, Option<Again>),
    /// One opening of a checked key's search (the queens of its first two rows, as
    /// columns' bits): none of the count's solutions (the key's join parts count them),
    /// only its share of the check, and the progress that counts the checks and their time.
    Search(Arc<Check>, [u32; 2], Arc<Progress>),
    /// The sides of splits of keys that the count's other engines offer while they count
    /// them (`share.rs`), counted on one of the count's lists: an engine's last part.
    Help(Arc<Works>),
}

/// How a recounted key is counted again.
enum Again {
    /// By the join in this other tier, right after the first count; the progress that
    /// counts the recounts (a key cut in pieces counts there once, with its side that has
    /// the bit) and their time.
    Tier(Tier, Arc<Progress>),
    /// By a search, in parts of its own: the join's pairs of the key go to this check; the
    /// progress that counts the checks that agreed.
    Search(Arc<Check>, Arc<Progress>),
}

/// Whether `recount` chooses `key`: a hash of its columns and the seed, against the
/// fraction (a SplitMix64 finaliser: every bit of the input moves every bit of the hash).
fn chosen(key: &Key, recount: Recount) -> bool {
    let middle = key.middle.map_or(u64::from(u32::MAX), u64::from);
    let mut x = (u64::from(key.top) | u64::from(key.bottom) << 32) ^ recount.seed;
    x = x.wrapping_add(middle.wrapping_mul(0x9e37_79b9_7f4a_7c15));
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^= x >> 31;
    // The top 53 bits as a fraction in [0, 1).
    ((x >> 11) as f64) * (1.0 / (1u64 << 53) as f64) < recount.fraction
}

/// The tier a part is recounted in: the portable one after a SIMD tier, else the best this
/// CPU has (the portable one again on a CPU without SIMD).
fn other_tier(tier: Tier) -> Tier {
    match tier.kind() {
        TierKind::Portable => Tier::best(),
        _ => Tier::PORTABLE,
    }
}

/// Added to every recount's answer by [`key_pairs`] in test builds: a fault the recount
/// must catch. Only the recount test sets it (no other test recounts).
#[cfg(test)]
static RECOUNT_FAULT: AtomicU64 = AtomicU64::new(0);

/// Added to every search opening's answer in test builds: a fault the check must catch.
/// Only the check's fault test sets it (no other test checks by search).
#[cfg(test)]
static SEARCH_FAULT: AtomicU64 = AtomicU64::new(0);

/// A task's weighted pairs (its piece's of its key's), counted in its tier and, when `check` names
/// another tier, again in that one (the time it took added to `progress`): `Recounted` if
/// the two differ. The first count hands `tally` its pairs as it finds them
/// (`Join::pairs_tallied`); with `share`, it offers sides of its splits to the count's
/// parked engines (`share.rs`), and its pairs are then those it kept.
fn key_pairs(
    tables: &Shared,
    task: Task,
    check: Option<(Tier, &Progress)>,
    share: bool,
    works: &Works,
    tally: Tally<'_>,
) -> Result<u64, CountError> {
    let (key, tier) = (task.key, task.tier);
    let mut work = works.take();
    let _running = works.exchange.started();
    let shared = share.then(|| (works.exchange.clone(), key.weight));
    work.sieve.share(shared);
    let mut count = |tier, tally: &mut dyn FnMut(u64)| {
        let task = Task { tier, ..task };
        tables.join.pairs_tallied(task, &mut work, tally)
    };
    let counted = count(tier, tally).and_then(|pairs| {
        let Some((other, progress)) = check else {
            return Ok(pairs);
        };
        let started = thread_nanos();
        let again = count(other, &mut |_| ())?;
        progress.spent(started);
        #[cfg(test)]
        let again = again + RECOUNT_FAULT.load(Ordering::Relaxed);
        if again != pairs {
            return Err(CountError::Recounted {
                top: key.top,
                first: pairs,
                tier: tier.name(),
                again,
                other: other.name(),
            });
        }
        Ok(pairs)
    });
    work.sieve.share(None);
    works.give(work);
    counted
}

impl Subproblem for Part {
    fn queens(&self) -> &[Square] {
        &[]
    }

    /// Never called: the parts are not laned.
    fn weigh(&self, _: u64) -> Result<Partial, CountError> {
        Err(CountError::Failed)
    }

    /// A key's pairs found before it ends (the wide path's chunk pairs) stand for its
    /// weight in solutions each; a turn-fixed part hands on none.
    fn per_completion(&self) -> u64 {
        match &self.0 {
            Kind::Turns(..) => 0,
            Kind::Key(_, key, ..) => key.weight,
            Kind::Search(..) => 0,
            Kind::Help(..) => 1,
        }
    }

    fn laned(&self) -> bool {
        false
    }

    /// A turn-fixed part ticks its own steps on the way, then ends.
    fn steps(&self, n: u32) -> u64 {
        match self.0 {
            Kind::Turns(..) => 1 + ticks(n),
            Kind::Key(..) | Kind::Search(..) | Kind::Help(..) => 1,
        }
    }

    fn alone(&self, n: u32, cancel: &AtomicBool, tally: Tally<'_>) -> Result<Partial, CountError> {
        if cancel.load(Ordering::Relaxed) {
            return Err(CountError::Cancelled);
        }
        match &self.0 {
            Kind::Turns(first, progress) => {
                let tick = || progress.tick();
                let (half, quarter) = turn_fixed_from(n, *first, cancel, &tick)?;
                let points = quarter
                    .checked_mul(2)
                    .and_then(|q| q.checked_add(half))
                    .ok_or(CountError::Overflow)?;
                Ok(Partial {
                    solutions: 0,
                    classes: points,
                })
            }
            Kind::Key(tables, key, piece, tier, works, again) => {
                let other = match again {
                    Some(Again::Tier(other, progress)) => Some((*other, &**progress)),
                    _ => None,
                };
                let (piece, tier) = (*piece, *tier);
                let task = Task {
                    key,
                    piece,
                    tier,
                    cancel,
                };
                // A key counted again keeps all of its pairs, so that both counts see them.
                let pairs = key_pairs(tables, task, other, again.is_none(), works, tally)?;
                match again {
                    Some(Again::Tier(_, progress)) if piece != Piece::Without => {
                        progress.recounted.fetch_add(1, Ordering::Relaxed);
                    }
                    Some(Again::Search(check, progress)) => {
                        let verdict = check.add(pairs, 0)?;
                        if verdict == Verdict::Agreed {
                            progress.recounted.fetch_add(1, Ordering::Relaxed);
                        }
                    }
                    _ => {}
                }
                Ok(Partial {
                    solutions: pairs.checked_mul(key.weight).ok_or(CountError::Overflow)?,
                    classes: 0,
                })
            }
            Kind::Help(works) => {
                let mut work = works.take();
                let helped = work.help(&works.exchange, cancel, tally);
                works.give(work);
                Ok(Partial {
                    solutions: helped?,
                    classes: 0,
                })
            }
            Kind::Search(check, opening, progress) => {
                let started = thread_nanos();
                let searched = check
                    .rows
                    .weighted_from(*opening, cancel)
                    .ok_or(CountError::Cancelled)?;
                #[cfg(test)]
                let searched = searched + SEARCH_FAULT.load(Ordering::Relaxed);
                progress.spent(started);
                if check.add(0, searched)? == Verdict::Agreed {
                    progress.recounted.fetch_add(1, Ordering::Relaxed);
                }
                Ok(Partial::default())
            }
        }
    }
}
