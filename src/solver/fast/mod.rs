#![allow(dead_code, clippy::collapsible_if)]
//! The fast counting path: all eight symmetries through border constellations, split into
//! independent subproblems that a work-stealing pool runs on several threads.
//!
//! Without fixed queens, every solution has one queen on each edge line (row 0, row n-1,
//! column 0, column n-1). The count searches the completions of one border constellation per
//! symmetry orbit (about n^4 / 8 of them) and weighs each by its orbit's size, so it walks an
//! eighth of the tree instead of the half a mirror-symmetric counter walks; symmetry classes
//! come from the same pass (only constellations a half turn maps to themselves need their
//! completions checked one by one). With fixed queens, the fixed rows are skipped and the
//! subproblems are the placements of the first free rows. A shard is the subproblems whose
//! index is the part's index modulo the number of parts. Boards and enumeration live in
//! `search.rs`, which also counts the smallest boards for this path.

mod board;
mod constellation;

#[cfg(test)]
mod tests;

use self::board::{Board, State};
use self::constellation::{Constellation, Subproblem};
use crate::solver::{CountError, Counts, Problem, count as count_by_search};
use rayon::prelude::*;
use std::sync::atomic::{AtomicBool, Ordering};

/// Boards below this size are counted by the plain search: constellations need distinct
/// edge lines, and such boards take microseconds anyway.
const MIN_N: u32 = 6;

/// With fixed queens, the subproblem split deepens until it has this many subproblems (or
/// reaches [`MAX_SPLIT_DEPTH`]): many more than any pool's threads, so work stealing balances.
const MIN_SUBPROBLEMS: usize = 256;

/// Deepest split with fixed queens: at most 32^3 subproblems, listed in a moment.
const MAX_SPLIT_DEPTH: usize = 3;

/// Counts like [`crate::solver::count`], on the calling thread.
pub fn count_fast(problem: &Problem, cancel: &AtomicBool) -> Result<Counts, CountError> {
    count_parallel(problem, cancel, 1)
}

/// Counts like [`crate::solver::count`], on a work-stealing pool of `threads` threads (the
/// calling thread alone when `threads` is 0 or 1). Every worker polls `cancel`.
pub fn count_parallel(
    problem: &Problem,
    cancel: &AtomicBool,
    threads: usize,
) -> Result<Counts, CountError> {
    if problem.n() < MIN_N {
        return count_by_search(problem, cancel);
    }
    let shard = problem.shard();
    let mine = |i: usize| i % shard.parts() as usize == shard.index as usize;
    if problem.fixed().is_empty() {
        let all = constellation::representatives(problem.n());
        let jobs: Vec<&Constellation> = all
            .iter()
            .enumerate()
            .filter(|(i, _)| mine(*i))
            .map(|(_, c)| c)
            .collect();
        let total = run(&jobs, threads, cancel, |c| {
            constellation_counts(problem.n(), c, cancel)
        })?;
        Ok(Counts {
            solutions: total.solutions,
            fundamental: Some(total.classes),
        })
    } else {
        let board = Board::new(problem.n(), problem.fixed());
        let jobs: Vec<State> = split(&board)
            .into_iter()
            .enumerate()
            .filter(|(i, _)| mine(*i))
            .map(|(_, s)| s)
            .collect();
        let total = run(&jobs, threads, cancel, |s| {
            Ok(Partial {
                solutions: board.count(*s, cancel)?,
                classes: 0,
            })
        })?;
        Ok(Counts {
            solutions: total.solutions,
            fundamental: None,
        })
    }
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
    if threads > 1 {
        if let Ok(pool) = rayon::ThreadPoolBuilder::new().num_threads(threads).build() {
            return pool.install(|| {
                jobs.par_iter()
                    .with_max_len(1)
                    .map(&job)
                    .try_reduce(Partial::default, Partial::add)
            });
        }
    }
    jobs.iter()
        .try_fold(Partial::default(), |sum, j| sum.add(job(j)?))
}

/// The solutions and classes of one subproblem.
fn subproblem_counts(n: u32, s: &Subproblem, cancel: &AtomicBool) -> Result<Partial, CountError> {
    match s {
        Subproblem::Alone(c) => constellation_counts(n, c, cancel),
        Subproblem::Group { queens, bottom } => {
            let mut board = Board::new(n, queens);
            board.restrict(n as usize - 1, *bottom);
            let all = board.count(Board::root(), cancel)?;
            Ok(Partial {
                solutions: all.checked_mul(8).ok_or(CountError::Overflow)?,
                classes: all,
            })
        }
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
    let orbit = 8 / c.stabilizer;
    let incidences = all.checked_add(fixed_points).ok_or(CountError::Overflow)?;
    debug_assert_eq!(incidences % c.stabilizer, 0);
    Ok(Partial {
        solutions: all.checked_mul(orbit).ok_or(CountError::Overflow)?,
        classes: incidences / c.stabilizer,
    })
}

/// The subproblems of a board with fixed queens: the states with the first few free rows
/// filled, deep enough for [`MIN_SUBPROBLEMS`] when the board has them. Depends only on the
/// board, so shards are stable.
fn split(board: &Board) -> Vec<State> {
    let mut states = vec![Board::root()];
    let mut depth = 0;
    while depth < MAX_SPLIT_DEPTH && depth + 1 < board.free_rows() && states.len() < MIN_SUBPROBLEMS
    {
        depth += 1;
        states = board.states(depth);
    }
    states
}

/// TEMP
pub fn fast_nodes(n: u32) -> Vec<u64> {
    use crate::solver::Square;
    let subs = constellation::representatives(n);
    let l = n - 1;
    let mut sums = vec![0u64; 5];
    for c in &subs {
        let b = Board::new(n, &c.queens);
        sums[0] += b.nodes(0, 0, 0, 0);
        for e in 0..n {
            for f in 0..n {
                let mut q = c.queens.clone();
                for x in [
                    Square { row: e, column: 1 },
                    Square {
                        row: f,
                        column: l - 1,
                    },
                ] {
                    if !q.contains(&x) {
                        q.push(x);
                    }
                }
                let b = Board::new(n, &q);
                // valid only if col1 and col l-1 each has exactly that queen: blocked ensures others can't use col 1
                sums[1] += b.nodes(0, 0, 0, 0) + 1;
            }
        }
        for f in 0..n {
            let mut q = c.queens.clone();
            for x in [Square {
                row: l - 1,
                column: f,
            }] {
                if !q.contains(&x) {
                    q.push(x);
                }
            }
            sums[2] += Board::new(n, &q).nodes(0, 0, 0, 0) + 1;
        }
        for e in 0..n {
            let mut q = c.queens.clone();
            for x in [Square { row: e, column: 1 }] {
                if !q.contains(&x) {
                    q.push(x);
                }
            }
            sums[3] += Board::new(n, &q).nodes(0, 0, 0, 0) + 1;
        }
    }
    sums
}
