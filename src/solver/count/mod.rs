//! The counting path: all eight symmetries through border constellations, split into
//! independent subproblems that engines on the shared pool take from one queue. Whole plain
//! boards from n = 16 on, on CPUs with AVX-512, take the join path instead (`join.rs`: half
//! boards listed per set of columns and matched, several times faster from n = 18 on), through
//! the same engines with one key per subproblem; shards and fixed queens stay here.
//!
//! Without fixed queens, every solution has one queen on each edge line (row 0, row n-1,
//! column 0, column n-1). The count searches the completions of one border constellation per
//! symmetry orbit (2,310 orbits at n = 15) and weighs each by its orbit's size; it searches
//! each orbit in the image its top-down search finishes fastest (bottom queen nearest a
//! corner), which walks about a third of the nodes a mirror-symmetric counter walks (n = 15:
//! 31 M against 92 M, scalar search). Symmetry classes come from the same pass: only
//! constellations a half turn maps to themselves have their completions checked one by one.
//! With fixed queens that at least four symmetries map to themselves (a centre queen, a
//! pinwheel), the same holds under those symmetries: one constellation per orbit that fits
//! the fixed queens. With other fixed queens, the fixed rows are skipped and the subproblems
//! are the placements of the first free rows. A shard is the subproblems whose index is the
//! part's index modulo the number of parts.
//!
//! A count runs as up to `threads` engines on the shared [`Pool`]. Each engine is one set of
//! lockstep lanes (`lanes.rs`, 16 boards searched at once in SIMD registers) that takes
//! subproblems from the count's queue; after a [`SLICE`](crate::solver::pool::SLICE) it gives
//! its thread to any job waiting and queues itself again, lanes and all. Boards the lanes do
//! not take (constellations a half turn maps to themselves, whose completions are checked one
//! by one, and the rare boards no split fits into a lane), and every board when the lanes are
//! off or the CPU has no SIMD registers for them, are searched alone (`board.rs`), a
//! subproblem at a time.
//!
//! Not here: boards and enumeration (`search.rs`, which also counts the boards below
//! [`MIN_N`] for this path), the searches over boards (`board.rs`, `lanes.rs`), the listing
//! of constellations (`constellation.rs`), the join of half boards (`join.rs`).

mod board;
mod constellation;
mod join;
mod lanes;

#[cfg(test)]
mod tests;

use self::board::Board;
use self::constellation::{Constellation, Weighted};
use self::lanes::{Feed, LaneSet, Outcome, Split, Start};
pub(super) use self::lanes::{Registers, registers};
use crate::solver::geometry::{Square, Symmetry};
use crate::solver::pool::{Pool, SLICE};
use crate::solver::search::count as count_by_search;
use crate::solver::{CountError, Counts, Problem, Shard};
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

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
/// reaches [`MAX_SPLIT_DEPTH`]): many more than any pool's threads, so the engines balance.
const MIN_SUBPROBLEMS: usize = 256;

/// Deepest split with fixed queens: at most 32^3 subproblems, listed in a moment.
const MAX_SPLIT_DEPTH: usize = 3;

/// The SIMD registers Count's lanes run in on this CPU ("AVX-512" or "AVX2"); `None` when
/// it has neither and every board is searched alone.
pub fn simd_registers() -> Option<&'static str> {
    lanes::registers().map(Registers::name)
}

/// How one count runs.
#[derive(Clone, Debug)]
pub struct CountOptions {
    /// Most pool threads the count keeps busy at once (its engines); at least one.
    pub threads: usize,
    /// Whether subproblems go through the SIMD lanes where the CPU has them; off, every
    /// board is searched alone, as on a CPU without AVX2 (the answers are the same).
    pub lanes: bool,
    /// Live totals, for progress reports.
    pub progress: Arc<Progress>,
    /// Raised to stop the count: it then ends with `Cancelled` within a slice.
    pub cancel: Arc<AtomicBool>,
}

impl Default for CountOptions {
    fn default() -> CountOptions {
        CountOptions {
            threads: 1,
            lanes: true,
            progress: Arc::default(),
            cancel: Arc::default(),
        }
    }
}

/// Live totals of a running count, for progress reports; each finished subproblem adds to
/// them, so readers see monotone partial sums (display only: the result is the one `done`
/// gets).
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
    /// Records one finished subproblem, and passes its counts on; its classes only when they
    /// are classes (`Classes::Summed`).
    fn add(&self, part: Partial, classes: Classes) -> Partial {
        self.solutions.fetch_add(part.solutions, Ordering::Relaxed);
        if classes == Classes::Summed {
            self.classes.fetch_add(part.classes, Ordering::Relaxed);
        }
        self.done.fetch_add(1, Ordering::Relaxed);
        part
    }
}

/// Where a count's result goes.
type Done = Box<dyn FnOnce(Result<Counts, CountError>) + Send>;

/// How a count finds its symmetry classes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Classes {
    /// Not asked (fixed queens).
    None,
    /// Each subproblem's classes, summed as they come (border constellations).
    Summed,
    /// At the end, from fixed points: (solutions + half-turn-fixed + 2 × quarter-turn-fixed)
    /// / 8, the fixed points being the subproblems' classes (the join path); progress reports
    /// none until then.
    FixedPoints,
}

/// Counts the solutions of `problem` (and its symmetry classes when no queens are fixed)
/// on `pool`, without producing boards, and hands the result to `done` on a pool thread.
/// The one entry point of counting: callers that want to block use
/// [`wait`](crate::solver::pool::wait).
pub fn count(
    problem: &Problem,
    options: CountOptions,
    pool: &Pool,
    done: impl FnOnce(Result<Counts, CountError>) + Send + 'static,
) {
    let done: Done = Box::new(done);
    let (n, shard) = (problem.n(), problem.shard());
    if n < MIN_N {
        let problem = problem.clone();
        pool.spawn(move || {
            options.progress.total.store(1, Ordering::Relaxed);
            let counted = count_by_search(&problem, &options.cancel);
            if let Ok(c) = counted {
                let part = Partial {
                    solutions: c.solutions,
                    classes: c.fundamental.unwrap_or(0),
                };
                options.progress.add(part, Classes::Summed);
            }
            done(counted);
        });
        return;
    }
    let fixed = problem.fixed();
    if fixed.is_empty() && shard.parts() == 1 && join::covers(n) && options.lanes {
        // One key at a time on each engine, no lanes. The keys and tables take a pool
        // thread 0.3 s at n = 21 and 3.4 s at n = 22, not the caller's.
        let options = CountOptions {
            lanes: false,
            ..options
        };
        let on = pool.clone();
        pool.spawn(move || match join::parts(n, &options.cancel) {
            Ok(parts) => start(n, parts, Classes::FixedPoints, options, &on, done),
            Err(error) => done(Err(error)),
        });
    } else if fixed.is_empty() {
        let all = constellation::representatives(n);
        start(
            n,
            in_shard(all, shard),
            Classes::Summed,
            options,
            pool,
            done,
        );
    } else if let Some(group) = symmetries(problem) {
        let all = constellation::representatives_under(n, fixed, &group);
        start(n, in_shard(all, shard), Classes::None, options, pool, done);
    } else {
        let parts = split(&Board::new(n, fixed), fixed);
        start(
            n,
            in_shard(parts, shard),
            Classes::None,
            options,
            pool,
            done,
        );
    }
}

/// The subproblems of `all` that make up `shard`: those whose index is the part's index
/// modulo the number of parts.
fn in_shard<T>(all: Vec<T>, shard: Shard) -> Vec<T> {
    let parts = shard.parts() as usize;
    all.into_iter()
        .skip(shard.index as usize)
        .step_by(parts)
        .collect()
}

/// The symmetries of the board that map the problem's fixed queens to themselves, when
/// there are at least [`MIN_SYMMETRIES`] of them and the fixed queens are at peace: then the
/// count goes through border constellations, one per orbit of these symmetries.
fn symmetries(problem: &Problem) -> Option<Vec<Symmetry>> {
    let group = constellation::symmetries_of(problem.n(), problem.fixed());
    let peaceful = crate::solver::geometry::peaceful(problem.fixed());
    (group.len() >= MIN_SYMMETRIES && peaceful).then_some(group)
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

/// Starts the engines of a count of the subproblems `items` on `pool`.
fn start<T: Subproblem>(
    n: u32,
    items: Vec<T>,
    classes: Classes,
    options: CountOptions,
    pool: &Pool,
    done: Done,
) {
    options
        .progress
        .total
        .store(items.len() as u64, Ordering::Relaxed);
    let engines = options.threads.clamp(1, items.len().max(1));
    let job = Arc::new(Job {
        n,
        registers: if options.lanes {
            lanes::registers()
        } else {
            None
        },
        items,
        classes,
        next: AtomicUsize::new(0),
        progress: options.progress,
        cancel: options.cancel,
        halt: AtomicBool::new(false),
        state: Mutex::new(JobState {
            sum: Partial::default(),
            engines,
            error: None,
            done: Some(done),
        }),
    });
    for _ in 0..engines {
        let engine = Engine::new(job.clone());
        let pool2 = pool.clone();
        pool.spawn(move || engine.slice(pool2));
    }
}

/// One count: its subproblems, the queue its engines take them from, and their sum.
struct Job<T> {
    n: u32,
    /// Where the lanes run; `None`: every board alone.
    registers: Option<Registers>,
    items: Vec<T>,
    /// How the result's symmetry classes are found, if at all.
    classes: Classes,
    /// The next subproblem to take.
    next: AtomicUsize,
    progress: Arc<Progress>,
    /// The caller's flag.
    cancel: Arc<AtomicBool>,
    /// Raised when an engine failed: the others stop too.
    halt: AtomicBool,
    state: Mutex<JobState>,
}

/// What the engines report to, as they end.
struct JobState {
    sum: Partial,
    /// Engines still running.
    engines: usize,
    /// The first failure.
    error: Option<CountError>,
    done: Option<Done>,
}

impl<T> Job<T> {
    /// Whether the engines must stop: the caller cancelled, or an engine failed.
    fn stopped(&self) -> bool {
        self.cancel.load(Ordering::Relaxed) || self.halt.load(Ordering::Relaxed)
    }

    /// An engine ended with the counts of its subproblems, or failed; the last one hands on
    /// the result.
    fn engine_ended(&self, result: Result<Partial, CountError>) {
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        match result.and_then(|part| state.sum.add(part)) {
            Ok(sum) => state.sum = sum,
            Err(error) => {
                self.halt.store(true, Ordering::Relaxed);
                state.error.get_or_insert(error);
            }
        }
        state.engines -= 1;
        if state.engines > 0 {
            return;
        }
        let Some(done) = state.done.take() else {
            return;
        };
        let sum = state.sum;
        let result = match (state.error, self.classes) {
            (Some(error), _) => Err(error),
            (None, Classes::None) => Ok(Counts {
                solutions: sum.solutions,
                fundamental: None,
            }),
            (None, Classes::Summed) => Ok(Counts {
                solutions: sum.solutions,
                fundamental: Some(sum.classes),
            }),
            (None, Classes::FixedPoints) => match sum.solutions.checked_add(sum.classes) {
                Some(points) if points % 8 == 0 => Ok(Counts {
                    solutions: sum.solutions,
                    fundamental: Some(points / 8),
                }),
                // Fixed points that do not make whole classes are a bug.
                Some(_) => Err(CountError::Failed),
                None => Err(CountError::Overflow),
            },
        };
        drop(state);
        done(result);
    }
}

/// One engine of a count: a set of lanes and the subproblems it is splitting into boards
/// for them, kept between the slices it runs on the pool.
struct Engine<T: Subproblem> {
    job: Arc<Job<T>>,
    /// The subproblem being split, and its boards not yet handed out.
    split: Option<(usize, Split)>,
    /// Per subproblem being counted: completions so far and boards out in the lanes.
    open: HashMap<usize, (u64, usize)>,
    /// Counts of the subproblems this engine finished.
    sum: Partial,
    lanes: Option<LaneSet>,
    /// Set once the engine reported to its job; an engine dropped before (its slice
    /// panicked) reports a failure instead.
    reported: bool,
}

impl<T: Subproblem> Engine<T> {
    fn new(job: Arc<Job<T>>) -> Engine<T> {
        Engine {
            job,
            split: None,
            open: HashMap::new(),
            sum: Partial::default(),
            lanes: None,
            reported: false,
        }
    }

    /// Runs one slice: until the work is done, or the slice is over and other jobs wait
    /// (then the engine queues itself again), or the count stops.
    fn slice(mut self, pool: Pool) {
        let job = self.job.clone();
        let until = Instant::now() + SLICE;
        let pause = || job.stopped() || (Instant::now() >= until && pool.waiting() > 0);
        let outcome = match job.registers {
            _ if job.stopped() => Ok(Outcome::Paused),
            Some(_) => self.run_lanes(&pause),
            None => self.run_alone(&pause),
        };
        let result = match outcome {
            Ok(Outcome::Paused) if !job.stopped() => {
                let pool2 = pool.clone();
                pool.spawn(move || self.slice(pool2));
                return;
            }
            Ok(Outcome::Paused) if job.cancel.load(Ordering::Relaxed) => Err(CountError::Cancelled),
            Ok(_) => Ok(self.sum),
            Err(error) => Err(error),
        };
        self.reported = true;
        job.engine_ended(result);
    }

    /// The slice in the lanes.
    fn run_lanes(&mut self, pause: &impl Fn() -> bool) -> Result<Outcome, CountError> {
        let mut lanes = self
            .lanes
            .take()
            .unwrap_or_else(|| LaneSet::new(self.job.n));
        let outcome = lanes.run(self.job.registers, self, pause);
        self.lanes = Some(lanes);
        outcome
    }

    /// The slice with every subproblem searched alone, one at a time.
    fn run_alone(&mut self, pause: &impl Fn() -> bool) -> Result<Outcome, CountError> {
        while !pause() {
            let index = self.job.next.fetch_add(1, Ordering::Relaxed);
            let Some(item) = self.job.items.get(index) else {
                return Ok(Outcome::Done);
            };
            let part = item.alone(self.job.n, &self.job.cancel)?;
            self.finish(part)?;
        }
        Ok(Outcome::Paused)
    }

    /// Adds a finished subproblem's counts.
    fn finish(&mut self, part: Partial) -> Result<(), CountError> {
        self.sum = self
            .sum
            .add(self.job.progress.add(part, self.job.classes))?;
        Ok(())
    }

    /// Finishes subproblem `index`, all of whose boards are in.
    fn close(&mut self, index: usize) -> Result<(), CountError> {
        let (all, _) = self.open.remove(&index).unwrap_or_default();
        let part = self.job.items[index].weigh(all)?;
        self.finish(part)
    }
}

impl<T: Subproblem> Drop for Engine<T> {
    fn drop(&mut self) {
        if !self.reported {
            self.job.engine_ended(Err(CountError::Failed));
        }
    }
}

impl<T: Subproblem> Feed for Engine<T> {
    fn next(&mut self) -> Result<Option<(usize, Start)>, CountError> {
        loop {
            if let Some((index, split)) = &mut self.split {
                let index = *index;
                if let Some(start) = split.next() {
                    if let Some(entry) = self.open.get_mut(&index) {
                        entry.1 += 1;
                    }
                    return Ok(Some((index, start)));
                }
                self.split = None;
                if self.open.get(&index).is_none_or(|entry| entry.1 == 0) {
                    self.close(index)?;
                }
                continue;
            }
            let index = self.job.next.fetch_add(1, Ordering::Relaxed);
            let Some(item) = self.job.items.get(index) else {
                return Ok(None);
            };
            match item
                .laned()
                .then(|| Split::new(self.job.n, item.queens()))
                .flatten()
            {
                Some(split) => {
                    self.open.insert(index, (0, 0));
                    self.split = Some((index, split));
                }
                None => {
                    let part = item.alone(self.job.n, &self.job.cancel)?;
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
        let splitting = self.split.as_ref().is_some_and(|(index, _)| *index == tag);
        if entry.1 == 0 && !splitting {
            self.close(tag)?;
        }
        Ok(())
    }
}

/// A subproblem of a count: a board with queens placed in advance, and what its
/// completions stand for.
trait Subproblem: Send + Sync + 'static {
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
