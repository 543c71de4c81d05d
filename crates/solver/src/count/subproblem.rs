//! What a count's subproblems are and what their completions weigh: [`Subproblem`] for
//! border constellations (their orbit's solutions and classes), constellations under the
//! fixed queens' symmetries, and parts of the plain split with fixed queens; [`Partial`]
//! sums. Not here: which subproblems a count has (`mod.rs`), how engines take them
//! (`engine.rs`), the join's own parts (`join/`).

use super::board::{Board, Tally};
use super::constellation::{Constellation, Weighted};
use crate::counts::CountError;
use crate::geometry::Square;
use std::sync::atomic::AtomicBool;

/// Solutions and symmetry classes found by some subproblems.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) struct Partial {
    /// Solutions.
    pub(super) solutions: u64,
    /// Symmetry classes, or fixed points on the join path.
    pub(super) classes: u64,
}

impl Partial {
    /// The sum, or `Overflow`.
    pub(super) fn add(self, other: Partial) -> Result<Partial, CountError> {
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

/// A subproblem of a count: a board with queens placed in advance, and what its
/// completions stand for.
pub(super) trait Subproblem: Send + Sync + 'static {
    /// The queens placed in advance.
    fn queens(&self) -> &[Square];

    /// The counts that `completions` completions of the board stand for.
    fn weigh(&self, completions: u64) -> Result<Partial, CountError>;

    /// The solutions one completion stands for (`weigh`'s solutions are this many per
    /// completion), so that completions found before the subproblem ends can show in
    /// progress.
    fn per_completion(&self) -> u64;

    /// Whether the lanes may count it (they find the number of completions only).
    fn laned(&self) -> bool {
        true
    }

    /// Progress steps it stands for on an `n`×`n` board: one when it ends, and any it
    /// ticks itself on the way.
    fn steps(&self, _n: u32) -> u64 {
        1
    }

    /// Its counts, by the scalar search on the calling thread, handing completions to
    /// `tally` as they are found.
    fn alone(&self, n: u32, cancel: &AtomicBool, tally: Tally<'_>) -> Result<Partial, CountError> {
        self.weigh(Board::new(n, self.queens()).count(Board::root(), cancel, tally)?)
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

    fn per_completion(&self) -> u64 {
        8 / self.stabilizer
    }

    /// Not when a half turn maps it to itself: its symmetric completions must be seen.
    fn laned(&self) -> bool {
        !self.rotational
    }

    fn alone(&self, n: u32, cancel: &AtomicBool, tally: Tally<'_>) -> Result<Partial, CountError> {
        constellation_counts(n, self, cancel, tally)
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

    fn per_completion(&self) -> u64 {
        self.orbit
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

    fn per_completion(&self) -> u64 {
        1
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
    tally: Tally<'_>,
) -> Result<Partial, CountError> {
    let board = Board::new(n, &c.queens);
    let (all, fixed_points) = if c.rotational {
        let counts = board.count_symmetric(cancel, tally)?;
        let turns = counts.half_turn.checked_add(
            counts
                .quarter_turn
                .checked_mul(2)
                .ok_or(CountError::Overflow)?,
        );
        (counts.all, turns.ok_or(CountError::Overflow)?)
    } else {
        (board.count(Board::root(), cancel, tally)?, 0)
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
