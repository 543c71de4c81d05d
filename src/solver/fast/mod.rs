//! The fast counting path: all eight symmetries through border constellations, split into
//! independent subproblems that a pool of threads takes from one queue.
//!
//! Without fixed queens, every solution has one queen on each edge line (row 0, row n-1,
//! column 0, column n-1). The count searches the completions of one border constellation per
//! symmetry orbit (2,310 orbits at n = 15) and weighs each by its orbit's size; it searches
//! each orbit in the image its top-down search finishes fastest (bottom queen nearest a
//! corner), which walks about a third of the nodes a mirror-symmetric counter walks (n = 15:
//! 31 M against 92 M, scalar search). Symmetry classes come from the same pass: only constellations a half
//! turn maps to themselves have their completions checked one by one. With fixed queens that
//! at least four symmetries map to themselves (a centre queen, a pinwheel), the same holds
//! under those symmetries: one constellation per orbit that fits the fixed queens. With other
//! fixed queens, the fixed rows are skipped and the subproblems are the placements of the
//! first free rows. A shard is the subproblems whose index is the part's index modulo the
//! number of parts.
//!
//! Each thread of the pool runs one set of lockstep lanes (`lanes.rs`, 16 boards searched at
//! once in SIMD registers), and the sets take subproblems from one shared queue. Boards the
//! lanes do not take (constellations a half turn maps to themselves, whose completions are
//! checked one by one, and the rare boards no split fits into a lane) are searched
//! alone (`board.rs`).
//!
//! Not here: boards and enumeration (`search.rs`, which also counts the boards below
//! [`MIN_N`] for this path), the searches over boards (`board.rs`, `lanes.rs`), the listing
//! of constellations (`constellation.rs`).

mod board;
mod constellation;
mod lanes;

#[cfg(test)]
mod tests;

use self::board::Board;
use self::constellation::{Constellation, Weighted};
use self::lanes::{Feed, Plan, Start};
use crate::solver::{CountError, Counts, Problem, Shard, Square, count as count_by_search};
use rayon::prelude::*;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};

/// Boards below this size are counted by the plain search: they take microseconds, and
/// below it a board has next to no constellations to split the work into.
const MIN_N: u32 = 6;

/// Fixed queens that this many symmetries map to themselves are counted through border
/// constellations, one per orbit of those symmetries. Measured with the scalar search: a
/// centre queen (8 symmetries) counts 2.5x (n = 15) and 4.7x (n = 17) faster so; sets with 2
/// symmetries gained nothing (9% faster, 5-11% slower, and 2.7x slower on a set the plain
/// split counts in 4 ms, n = 15), so those keep the plain split. With the lanes: centre queen
/// n = 17 4.5x (0.19 against 0.85 CPU s); three 2-symmetry sets at n = 15, 16 the same within
/// the 10 ms clock either way.
const MIN_SYMMETRIES: usize = 4;

/// With fixed queens, the subproblem split deepens until it has this many subproblems (or
/// reaches [`MAX_SPLIT_DEPTH`]): many more than any pool's threads, so work stealing balances.
const MIN_SUBPROBLEMS: usize = 256;

/// Deepest split with fixed queens: at most 32^3 subproblems, listed in a moment.
const MAX_SPLIT_DEPTH: usize = 3;

/// The SIMD registers Count's lanes run in on this CPU ("AVX-512" or "AVX2"); `None` when
/// it has neither and every board is searched alone.
pub fn simd_registers() -> Option<&'static str> {
    lanes::registers().map(lanes::Registers::name)
}

/// Counts like [`crate::solver::count`], on the calling thread.
pub fn count_fast(problem: &Problem, cancel: &AtomicBool) -> Result<Counts, CountError> {
    count_parallel(problem, cancel, 1)
}

/// Counts like [`crate::solver::count`], on a pool of `threads` threads (the calling thread
/// alone when `threads` is 0 or 1). Every worker polls `cancel`.
pub fn count_parallel(
    problem: &Problem,
    cancel: &AtomicBool,
    threads: usize,
) -> Result<Counts, CountError> {
    count_with_progress(problem, cancel, threads, &Progress::default())
}

/// Live totals of a running count, for progress reports; each finished subproblem adds to
/// them, so readers see monotone partial sums (display only: the result is the return value).
#[derive(Debug, Default)]
pub struct Progress {
    /// Subproblems of the count, set when it starts.
    pub total: AtomicU64,
    /// Subproblems finished.
    pub done: AtomicU64,
    /// Solutions of the finished subproblems.
    pub solutions: AtomicU64,
    /// Symmetry classes of the finished subproblems.
    pub classes: AtomicU64,
}

impl Progress {
    /// Records one finished subproblem, and passes its counts on.
    fn add(&self, part: Partial) -> Result<Partial, CountError> {
        self.solutions.fetch_add(part.solutions, Ordering::Relaxed);
        self.classes.fetch_add(part.classes, Ordering::Relaxed);
        self.done.fetch_add(1, Ordering::Relaxed);
        Ok(part)
    }
}

/// Like [`count_parallel`], reporting each finished subproblem in `progress`.
pub fn count_with_progress(
    problem: &Problem,
    cancel: &AtomicBool,
    threads: usize,
    progress: &Progress,
) -> Result<Counts, CountError> {
    if problem.n() < MIN_N {
        progress.total.store(1, Ordering::Relaxed);
        let counts = count_by_search(problem, cancel)?;
        progress.add(Partial {
            solutions: counts.solutions,
            classes: counts.fundamental.unwrap_or(0),
        })?;
        return Ok(counts);
    }
    let (n, shard) = (problem.n(), problem.shard());
    let total = if problem.fixed().is_empty() {
        let all = constellation::representatives(n);
        count_boards(n, &in_shard(&all, shard), threads, cancel, progress)?
    } else if let Some(group) = symmetries(problem) {
        let all = constellation::representatives_under(n, problem.fixed(), &group);
        count_boards(n, &in_shard(&all, shard), threads, cancel, progress)?
    } else {
        let parts = split(&Board::new(n, problem.fixed()), problem.fixed());
        count_boards(n, &in_shard(&parts, shard), threads, cancel, progress)?
    };
    Ok(Counts {
        solutions: total.solutions,
        fundamental: problem.fixed().is_empty().then_some(total.classes),
    })
}

/// The subproblems of `all` that make up `shard`: those whose index is the part's index
/// modulo the number of parts.
fn in_shard<T>(all: &[T], shard: Shard) -> Vec<&T> {
    let parts = shard.parts() as usize;
    all.iter()
        .skip(shard.index as usize)
        .step_by(parts)
        .collect()
}

/// The symmetries of the board that map the problem's fixed queens to themselves, when
/// there are at least [`MIN_SYMMETRIES`] of them and the fixed queens are at peace: then the
/// count goes through border constellations, one per orbit of these symmetries.
fn symmetries(problem: &Problem) -> Option<Vec<u8>> {
    let group = constellation::symmetries_of(problem.n(), problem.fixed());
    (group.len() >= MIN_SYMMETRIES && constellation::peaceful(problem.fixed())).then_some(group)
}

/// Solutions and symmetry classes found by some subproblems.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Partial {
    solutions: u64,
    classes: u64,
}

impl Partial {
    /// The sum, or `Overflow`.
    fn add(self, other: Partial) -> Result<Partial, CountError> {
        Ok(Partial {
            solutions: self
                .solutions
                .checked_add(other.solutions)
                .ok_or(CountError::Overflow)?,
            classes: self
                .classes
                .checked_add(other.classes)
                .ok_or(CountError::Overflow)?,
        })
    }
}

/// Runs `job` on every item, on `threads` threads, and adds up the results; checks `cancel`
/// before each job (the jobs poll it too while they run). The sum of
/// non-negative parts overflows in some order exactly when it overflows in every order, so
/// the answer does not depend on the schedule.
fn run<J, F>(jobs: &[J], threads: usize, cancel: &AtomicBool, job: F) -> Result<Partial, CountError>
where
    J: Sync,
    F: Fn(&J) -> Result<Partial, CountError> + Sync,
{
    let job = |j: &J| {
        if cancel.load(Ordering::Relaxed) {
            return Err(CountError::Cancelled);
        }
        job(j)
    };
    if threads > 1
        && let Ok(pool) = rayon::ThreadPoolBuilder::new().num_threads(threads).build()
    {
        return pool.install(|| {
            jobs.par_iter()
                .with_max_len(1)
                .map(&job)
                .try_reduce(Partial::default, Partial::add)
        });
    }
    jobs.iter()
        .try_fold(Partial::default(), |sum, j| sum.add(job(j)?))
}

/// The counts of the subproblems `items` (each recorded in `progress` as it finishes), on
/// `threads` threads. Each thread runs one set of lockstep lanes, and the sets take items
/// from one queue, so no thread idles while items are left; an item the lanes cannot take
/// is searched alone by the thread that took it. Without SIMD registers for the lanes,
/// every item is searched alone, on a work-stealing pool.
fn count_boards<T: Subproblem>(
    n: u32,
    items: &[&T],
    threads: usize,
    cancel: &AtomicBool,
    progress: &Progress,
) -> Result<Partial, CountError> {
    progress.total.store(items.len() as u64, Ordering::Relaxed);
    if lanes::registers().is_none() || search_alone() {
        return run(items, threads, cancel, |item| {
            progress.add(item.alone(n, cancel)?)
        });
    }
    let queue = AtomicUsize::new(0);
    let engines = vec![(); threads.max(1)];
    run(&engines, threads, cancel, |()| {
        let mut feed = BoardFeed {
            n,
            items,
            queue: &queue,
            cancel,
            progress,
            plan: None,
            open: HashMap::new(),
            total: Partial::default(),
        };
        lanes::count(n, &mut feed, cancel)?;
        Ok(feed.total)
    })
}

/// A subproblem of a count: a board with queens placed in advance, and what its
/// completions stand for.
trait Subproblem: Sync {
    /// The queens placed in advance.
    fn queens(&self) -> &[Square];

    /// The counts that `completions` completions of the board stand for.
    fn weigh(&self, completions: u64) -> Result<Partial, CountError>;

    /// Whether the lanes may count it (they find the number of completions only).
    fn laned(&self) -> bool {
        true
    }

    /// Its counts, by the scalar search on the calling thread.
    fn alone(&self, n: u32, cancel: &AtomicBool) -> Result<Partial, CountError> {
        self.weigh(Board::new(n, self.queens()).count(Board::root(), cancel)?)
    }
}

/// A border constellation stands for its orbit's solutions and classes.
impl Subproblem for Constellation {
    fn queens(&self) -> &[Square] {
        &self.queens
    }

    fn weigh(&self, completions: u64) -> Result<Partial, CountError> {
        orbit_counts(self, completions, 0)
    }

    /// Not when a half turn maps it to itself: its symmetric completions must be seen.
    fn laned(&self) -> bool {
        !self.rotational
    }

    fn alone(&self, n: u32, cancel: &AtomicBool) -> Result<Partial, CountError> {
        constellation_counts(n, self, cancel)
    }
}

/// A constellation under the symmetries of the fixed queens stands for its orbit.
impl Subproblem for Weighted {
    fn queens(&self) -> &[Square] {
        &self.queens
    }

    fn weigh(&self, completions: u64) -> Result<Partial, CountError> {
        Ok(Partial {
            solutions: completions
                .checked_mul(self.orbit)
                .ok_or(CountError::Overflow)?,
            classes: 0,
        })
    }
}

/// A part of the plain split with fixed queens stands for its own completions.
impl Subproblem for Vec<Square> {
    fn queens(&self) -> &[Square] {
        self
    }

    fn weigh(&self, completions: u64) -> Result<Partial, CountError> {
        Ok(Partial {
            solutions: completions,
            classes: 0,
        })
    }
}

/// Set by tests to count without lanes, as on a CPU without AVX2 (the answers are the same
/// either way, so tests running meanwhile are not disturbed).
#[cfg(test)]
static SEARCH_ALONE: AtomicBool = AtomicBool::new(false);

/// Whether [`count_boards`] must search every board alone (only tests ask).
fn search_alone() -> bool {
    #[cfg(test)]
    {
        SEARCH_ALONE.load(Ordering::Relaxed)
    }
    #[cfg(not(test))]
    {
        false
    }
}

/// One set of lanes' view of [`count_boards`]: takes items from the shared queue, splits
/// each into boards for the lanes, and adds up each item's counts once all its boards are in.
struct BoardFeed<'a, T> {
    n: u32,
    items: &'a [&'a T],
    queue: &'a AtomicUsize,
    cancel: &'a AtomicBool,
    progress: &'a Progress,
    /// The item being split, and its boards not yet handed out.
    plan: Option<(usize, Plan)>,
    /// Per item being counted: completions so far and boards out in the lanes.
    open: HashMap<usize, (u64, usize)>,
    /// Counts of the items this set finished.
    total: Partial,
}

impl<T: Subproblem> BoardFeed<'_, T> {
    /// Adds a finished item's counts.
    fn finish(&mut self, part: Partial) -> Result<(), CountError> {
        self.total = self.total.add(self.progress.add(part)?)?;
        Ok(())
    }

    /// Finishes item `index`, all of whose boards are in.
    fn close(&mut self, index: usize) -> Result<(), CountError> {
        let (all, _) = self.open.remove(&index).unwrap_or_default();
        let part = self.items[index].weigh(all)?;
        self.finish(part)
    }
}

impl<T: Subproblem> Feed for BoardFeed<'_, T> {
    fn next(&mut self) -> Result<Option<(usize, Start)>, CountError> {
        loop {
            if let Some((index, plan)) = &mut self.plan {
                let index = *index;
                if let Some(start) = plan.next() {
                    if let Some(entry) = self.open.get_mut(&index) {
                        entry.1 += 1;
                    }
                    return Ok(Some((index, start)));
                }
                self.plan = None;
                if self.open.get(&index).is_none_or(|entry| entry.1 == 0) {
                    self.close(index)?;
                }
                continue;
            }
            let index = self.queue.fetch_add(1, Ordering::Relaxed);
            let Some(&item) = self.items.get(index) else {
                return Ok(None);
            };
            match item
                .laned()
                .then(|| Plan::new(self.n, item.queens()))
                .flatten()
            {
                Some(plan) => {
                    self.open.insert(index, (0, 0));
                    self.plan = Some((index, plan));
                }
                None => {
                    let part = item.alone(self.n, self.cancel)?;
                    self.finish(part)?;
                }
            }
        }
    }

    fn done(&mut self, tag: usize, completions: u64) -> Result<(), CountError> {
        let Some(entry) = self.open.get_mut(&tag) else {
            return Ok(());
        };
        entry.0 = entry
            .0
            .checked_add(completions)
            .ok_or(CountError::Overflow)?;
        entry.1 -= 1;
        let splitting = self.plan.as_ref().is_some_and(|(index, _)| *index == tag);
        if entry.1 == 0 && !splitting {
            self.close(tag)?;
        }
        Ok(())
    }
}

/// The solutions with a border constellation in `c`'s orbit, and their symmetry classes.
///
/// The orbit has 8 / s members for a stabilizer of size s, each with as many completions as
/// `c`. A completion's own stabilizer lies in `c`'s and holds only rotations (no solution is
/// its own mirror image), so by counting fixed points the orbit's solutions fall into
/// (all + half-turn-fixed + 2 * quarter-turn-fixed) / s classes.
fn constellation_counts(
    n: u32,
    c: &Constellation,
    cancel: &AtomicBool,
) -> Result<Partial, CountError> {
    let board = Board::new(n, &c.queens);
    let (all, fixed_points) = if c.rotational {
        let counts = board.count_symmetric(cancel)?;
        let turns = counts.half_turn.checked_add(
            counts
                .quarter_turn
                .checked_mul(2)
                .ok_or(CountError::Overflow)?,
        );
        (counts.all, turns.ok_or(CountError::Overflow)?)
    } else {
        (board.count(Board::root(), cancel)?, 0)
    };
    orbit_counts(c, all, fixed_points)
}

/// The solutions and classes of `c`'s orbit, from `all` completions of `c` of which
/// `fixed_points` (counted with multiplicity) a rotation maps to themselves.
fn orbit_counts(c: &Constellation, all: u64, fixed_points: u64) -> Result<Partial, CountError> {
    let orbit = 8 / c.stabilizer;
    let incidences = all.checked_add(fixed_points).ok_or(CountError::Overflow)?;
    debug_assert_eq!(incidences % c.stabilizer, 0);
    Ok(Partial {
        solutions: all.checked_mul(orbit).ok_or(CountError::Overflow)?,
        classes: incidences / c.stabilizer,
    })
}

/// The subproblems of `board`, which has the queens `fixed` placed: the queens of each way to
/// fill its first few free rows, `fixed` included, deep enough for [`MIN_SUBPROBLEMS`] when
/// the board has them. Depends only on the board, so shards are stable.
fn split(board: &Board, fixed: &[Square]) -> Vec<Vec<Square>> {
    let mut parts = vec![fixed.to_vec()];
    let mut depth = 0;
    while depth < MAX_SPLIT_DEPTH && depth + 1 < board.free_rows() && parts.len() < MIN_SUBPROBLEMS
    {
        depth += 1;
        parts = board.placements(fixed, depth);
    }
    parts
}
