//! The sizes of a board the join counts, on either path ([`Sizes`]: its columns, the rows of
//! a half and of a half's two bands) and the balance of a square, which the transposes'
//! weights go by; and the sizes each path takes ([`TABLES_MAX`], [`MAX`]). Nothing here
//! builds a table or a band: the tables are `tables.rs`'s, a key's own bands `bands.rs`'s.

use super::keys::Key;

/// The largest size the join's tables take: a half's word holds the two diagonal fields of
/// n = 24 and 25 under the balances' bytes (`word.rs`), the ranks of column sets cover 25
/// columns (`keys.rs`), and a count of n = 25 stays under 4 GiB (measured in
/// `docs/performance.md`, "Memory of the join"). Past it the join takes the wide path
/// (`wide.rs`).
pub(crate) const TABLES_MAX: u32 = 25;

/// The largest size the join takes: the wide path's word holds `2n - 2` bits of diagonals
/// and two five-bit balances up to n = 28 (`word.rs`). Beyond it Count takes the border
/// constellations.
pub(crate) const MAX: u32 = 28;

/// The sizes of a board of `n` columns, as both paths split it.
pub(super) struct Sizes {
    /// The board's size.
    pub(super) n: u32,
    /// Rows in each half.
    pub(super) m: u32,
    /// Rows in the half's first band (the head); the rest of its rows are the tail.
    pub(super) head: u32,
    /// All columns: the mask of the board's `n` low bits, which the diagonals are cut to
    /// as they move from row to row.
    pub(super) full: u32,
}

impl Sizes {
    /// The sizes of a board of `n` columns.
    pub(super) fn new(n: u32) -> Sizes {
        let m = n / 2;
        Sizes {
            n,
            m,
            head: m / 2,
            full: (1u32 << n) - 1,
        }
    }

    /// The balance of `key`'s middle queen (0 on even boards).
    #[inline]
    pub(super) fn middle_balance(&self, key: &Key) -> i32 {
        key.middle.map_or(0, |q| self.balance(self.m, q))
    }

    /// +1 for a square strictly between the two long diagonals above or below the centre,
    /// -1 for one left or right of the centre, 0 on a long diagonal. Mirrors keep it; the
    /// transposes negate it.
    #[inline]
    pub(super) fn balance(&self, row: u32, column: u32) -> i32 {
        let (r, c, last) = (row as i32, column as i32, self.n as i32 - 1);
        let (main, anti) = (r - c, r + c - last);
        if main == 0 || anti == 0 {
            0
        } else if (main < 0) == (anti < 0) {
            1
        } else {
            -1
        }
    }
}
