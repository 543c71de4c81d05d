//! The one place that picks a path ([`Join`]): the tables' path for boards up to
//! [`TABLES_MAX`] (`tables.rs`, `halves.rs`), the wide path past it (`wide.rs`). What a
//! count does with a key is the same on both (`mod.rs`); how each path makes a key's halves
//! is its own.

use super::super::board::Tally;
#[cfg(test)]
use super::keys::Key;
#[cfg(test)]
use super::sieve::Piece;
#[cfg(test)]
use super::sizes::Sizes;
use super::sizes::TABLES_MAX;
use super::tables::Tables;
use super::wide::{CHUNK, Wide};
use super::work::{Task, Work};
use crate::counts::CountError;
#[cfg(test)]
use crate::simd::Tier;
use std::sync::atomic::AtomicBool;

/// The join of one board size: its tables, or the wide path, which has none.
pub(super) enum Join {
    /// The tables' path (n up to [`TABLES_MAX`]).
    Tables(Tables),
    /// The wide path (past it).
    Wide(Wide),
}

impl Join {
    /// The join for size `n`: its tables built (calling `tick` `build_steps` times on the
    /// way; `Cancelled` if `cancel` is raised meanwhile), or past [`TABLES_MAX`] the wide
    /// path, which builds nothing.
    pub(super) fn new(n: u32, cancel: &AtomicBool, tick: &dyn Fn()) -> Result<Join, CountError> {
        if n > TABLES_MAX {
            return Ok(Join::Wide(Wide::new(n, CHUNK)));
        }
        Tables::new(n, cancel, tick).map(Join::Tables)
    }

    /// The fitting pairs of halves of the task's key (its piece's), its lists in `work`,
    /// handing `tally` the pairs of each chunk pair as it is counted on the wide path (a key
    /// of n = 28 takes minutes), so that they show in progress; the tables' path (a key in
    /// under a second) hands on nothing. `Cancelled` if the task's flag is raised meanwhile,
    /// `OutOfMemory` if a key's lists find no room in `work`'s allowance.
    pub(super) fn pairs_tallied(
        &self,
        task: Task,
        work: &mut Work,
        tally: Tally<'_>,
    ) -> Result<u64, CountError> {
        match self {
            Join::Tables(tables) => tables.pairs(task, work),
            Join::Wide(wide) => wide.pairs(task, work, tally),
        }
    }
}

#[cfg(test)]
impl Join {
    /// The board's sizes.
    pub(super) fn sizes(&self) -> &Sizes {
        match self {
            Join::Tables(tables) => &tables.sizes,
            Join::Wide(wide) => &wide.sizes,
        }
    }

    /// The wide path for size `n`, its lists in chunks of at most `chunk` words, whatever
    /// `n` (the tests run it at small sizes too).
    pub(super) fn wide(n: u32, chunk: usize) -> Join {
        Join::Wide(Wide::new(n, chunk))
    }

    /// All of `key`'s fitting pairs ([`Join::pairs_tallied`], nothing tallied).
    pub(super) fn pairs(
        &self,
        key: &Key,
        tier: Tier,
        cancel: &AtomicBool,
        work: &mut Work,
    ) -> Result<u64, CountError> {
        self.whole_tallied(key, tier, cancel, work, &mut |_| ())
    }

    /// All of `key`'s fitting pairs, each chunk pair's handed to `tally` on the wide path
    /// ([`Join::pairs_tallied`] of the whole key).
    pub(super) fn whole_tallied(
        &self,
        key: &Key,
        tier: Tier,
        cancel: &AtomicBool,
        work: &mut Work,
        tally: Tally<'_>,
    ) -> Result<u64, CountError> {
        let piece = Piece::Whole;
        let task = Task {
            key,
            piece,
            tier,
            cancel,
        };
        self.pairs_tallied(task, work, tally)
    }

    /// Its tables (a test's join of a size that has them).
    pub(super) fn as_tables(&self) -> &Tables {
        match self {
            Join::Tables(tables) => tables,
            Join::Wide(_) => panic!("the wide path has no tables"),
        }
    }

    /// Its wide path (a test's join made by [`Join::wide`]).
    pub(super) fn as_wide(&self) -> &Wide {
        match self {
            Join::Wide(wide) => wide,
            Join::Tables(_) => panic!("not the wide path"),
        }
    }
}
