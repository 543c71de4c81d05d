//! The counting path: all eight symmetries through border constellations, split into
//! independent subproblems that engines on the shared pool take from one queue. Plain boards
//! (no fixed queens) from n = 16 to 28, whole or in shards, on every CPU, take the join path
//! instead (`join/`: half boards listed per set of columns and matched, several times faster
//! from n = 18 on), through the same engines with one key per subproblem; fixed queens stay
//! here. A shard of the join cannot know its own symmetry classes: it answers its turn-fixed
//! points ([`Counts::turn_fixed`]) instead, from which the sum of all parts finds the whole's.
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
//! part's index modulo the number of parts, on either path.
//!
//! A count runs as up to `threads` engines on the shared [`Pool`]. Each engine is one set of
//! lockstep lanes (`lanes.rs`, 16 boards searched at once in SIMD registers) that takes
//! subproblems from the count's queue; after a [`SLICE`](crate::pool::SLICE) it gives
//! its thread to any job waiting and queues itself again, lanes and all. Boards the lanes do
//! not take (constellations a half turn maps to themselves, whose completions are checked one
//! by one, and the rare boards no split fits into a lane), and every board when the lanes are
//! off or the CPU has no SIMD registers for them, are searched alone (`board.rs`), a
//! subproblem at a time.
//!
//! Here: the entry point ([`count()`]), the shortcut for the smallest boards on the caller's
//! thread ([`count_now`]), and which subproblems a count has. Not here: the
//! engines and their queue (`engine.rs`), what a subproblem's completions weigh
//! (`subproblem.rs`), the options and progress (`options.rs`), boards and enumeration
//! (`search.rs`, which also counts the boards below [`MIN_N`] for this path), the searches
//! over boards (`board.rs`, `lanes.rs`), the listing of constellations (`constellation.rs`),
//! the join of half boards (`join/`).

mod board;
mod constellation;
mod engine;
mod join;
mod lanes;
mod need;
mod options;
mod subproblem;

#[cfg(test)]
mod tests;

pub use self::need::{CountMemory, count_memory};
pub use self::options::{CountOptions, Hold, Progress, Recount, RecountMethod};

use self::board::Board;
use self::engine::{Done, start};
use self::options::Classes;
use self::subproblem::Partial;
use crate::counts::{CountError, Counts};
use crate::geometry::{Square, Symmetry, peaceful};
use crate::pool::Pool;
use crate::problem::{Problem, Shard};
use crate::search::count as count_by_search;
use std::sync::atomic::{AtomicBool, Ordering};

/// Boards below this size are counted by the plain search: they take microseconds, and
/// below it a board has next to no constellations to split the work into.
const MIN_N: u32 = 6;

/// Largest board [`count_now`] counts on the caller's thread: a whole board of n = 8 takes
/// the plain search a few microseconds, less than handing it to a pool thread and back.
pub const NOW_MAX_N: u32 = 8;

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

/// Counts the solutions of `problem` (and its symmetry classes when no queens are fixed)
/// on `pool`, without producing boards, and hands the result to `done` on a pool thread.
/// The one entry point of counting: callers that want to block use
/// [`wait`](crate::pool::wait).
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
                options.progress.add(part, Classes::Summed, 0);
            }
            done(counted);
        });
        return;
    }
    let fixed = problem.fixed();
    let joined = answers_turn_fixed(problem);
    if joined || (fixed.is_empty() && join::covers(n) && options.lanes) {
        // One key at a time on each engine, no lanes. The keys and tables take a pool
        // thread (about a second at n = 22), not the caller's. A shard's classes are not
        // its own: it passes its fixed points on.
        let classes = if joined {
            Classes::PassedOn
        } else {
            Classes::FixedPoints
        };
        let options = CountOptions {
            lanes: false,
            ..options
        };
        let on = pool.clone();
        pool.spawn(move || {
            let (settings, pool) = (options.clone(), on.clone());
            join::parts(n, shard, &settings, &pool, move |made| match made {
                Ok(parts) => start(n, parts, classes, options, &on, done),
                Err(error) => done(Err(error)),
            })
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
        let parts = fixed_parts(&Board::new(n, fixed), fixed);
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

/// Counts `problem` at once on the caller's thread when it is a whole board of at most
/// [`NOW_MAX_N`] (fixed queens or not): microseconds of work and a few words of memory, the
/// same answer [`count()`] gives. None for any other problem: those go through [`count()`].
pub fn count_now(problem: &Problem) -> Option<Result<Counts, CountError>> {
    counts_now(problem).then(|| count_by_search(problem, &AtomicBool::new(false)))
}

/// Whether [`count_now`] counts `problem`.
pub fn counts_now(problem: &Problem) -> bool {
    problem.shard().parts() == 1 && problem.n() <= NOW_MAX_N
}

/// Whether a count of `problem` answers turn-fixed points ([`Counts::turn_fixed`]) instead
/// of symmetry classes: a shard of a whole plain board the join counts, whose classes are
/// not its own. Depends on the problem alone, never on the CPU or the options, so that the
/// parts of one count, wherever they run, split the same list.
pub fn answers_turn_fixed(problem: &Problem) -> bool {
    problem.fixed().is_empty() && problem.shard().parts() > 1 && join::covers(problem.n())
}

/// The subproblems of `all` that make up `shard` ([`Shard::holds`]).
fn in_shard<T>(all: Vec<T>, shard: Shard) -> Vec<T> {
    all.into_iter()
        .enumerate()
        .filter_map(|(index, item)| shard.holds(index).then_some(item))
        .collect()
}

/// The symmetries of the board that map the problem's fixed queens to themselves, when
/// there are at least [`MIN_SYMMETRIES`] of them and the fixed queens are at peace: then the
/// count goes through border constellations, one per orbit of these symmetries.
fn symmetries(problem: &Problem) -> Option<Vec<Symmetry>> {
    let group = constellation::symmetries_of(problem.n(), problem.fixed());
    let peaceful = peaceful(problem.fixed());
    (group.len() >= MIN_SYMMETRIES && peaceful).then_some(group)
}

/// The subproblems of `board`, which has the queens `fixed` placed: the queens of each way to
/// fill its first few free rows, `fixed` included, deep enough for [`MIN_SUBPROBLEMS`] when
/// the board has them. Depends only on the board, so shards are stable.
fn fixed_parts(board: &Board, fixed: &[Square]) -> Vec<Vec<Square>> {
    let mut parts = vec![fixed.to_vec()];
    let mut depth = 0;
    while depth < MAX_SPLIT_DEPTH && depth + 1 < board.free_rows() && parts.len() < MIN_SUBPROBLEMS
    {
        depth += 1;
        parts = board.placements(fixed, depth);
    }
    parts
}
