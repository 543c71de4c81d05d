//! One board with some queens placed in advance, and the bitboard search that counts its
//! completions.
//!
//! Placed queens never enter the search: their attacks are folded into one mask of blocked
//! columns per free row, and their rows are skipped (the diagonal masks shift by the gap to the
//! next free row). Which queens to place, symmetry, shards and threads live in `mod.rs` and
//! `constellation.rs`, not here.

use crate::solver::problem::full_mask;
use crate::solver::{CountError, Square};
use std::sync::atomic::{AtomicBool, Ordering};

/// Largest board handled; matches [`crate::solver::MAX_N`].
const MAX: usize = 32;

/// Subtrees with at most this many free rows are searched without polling the cancel flag and
/// with unchecked sums: such a subtree is at most a 10-queens problem (milliseconds at any n),
/// and its at most 10! completions cannot overflow. Above it, every node polls: a few
/// thousand per constellation against its millions of quiet ones.
const QUIET_ROWS: usize = 10;

/// A point in the search of one [`Board`]: the first `k` free rows hold queens.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct State {
    k: usize,
    cols: u32,
    d1: u32,
    d2: u32,
}

/// Counts of a board's completions that a symmetric constellation needs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) struct SymmetricCounts {
    /// All completions.
    pub(super) all: u64,
    /// Completions unchanged by a half turn.
    pub(super) half_turn: u64,
    /// Completions unchanged by a quarter turn.
    pub(super) quarter_turn: u64,
}

/// A board with queens placed in advance, ready to count its completions.
pub(super) struct Board {
    n: usize,
    /// Number of free rows (rows without a placed queen).
    free: usize,
    /// The free rows, top to bottom.
    rows: [u8; MAX],
    /// Per free row: columns a placed queen attacks, plus every bit off the board.
    blocked: [u32; MAX],
    /// Per free row: rows from it to the next free row (the diagonal shift between them).
    shift: [u32; MAX],
    /// Per row: the column of its placed queen (used by symmetric leaf checks).
    columns: [u8; MAX],
    /// Some row has no column left: the placed queens attack each other.
    dead: bool,
}

impl Board {
    /// The `n`×`n` board with `queens` placed (squares on the board, none repeated).
    pub(super) fn new(n: u32, queens: &[Square]) -> Board {
        let full = full_mask(n);
        let n = n as usize;
        let mut allowed = [full; MAX];
        let mut placed = [false; MAX];
        let mut columns = [0u8; MAX];
        for q in queens {
            placed[q.row as usize] = true;
            columns[q.row as usize] = q.column as u8;
            for (r, mask) in allowed[..n].iter_mut().enumerate() {
                *mask &= !attacks(n, *q, r);
            }
        }
        let mut board = Board {
            n,
            free: 0,
            rows: [0; MAX],
            blocked: [0; MAX],
            shift: [0; MAX],
            columns,
            dead: allowed[..n].contains(&0),
        };
        for r in (0..n).filter(|&r| !placed[r]) {
            board.rows[board.free] = r as u8;
            board.blocked[board.free] = !allowed[r];
            board.free += 1;
        }
        for k in 1..board.free {
            board.shift[k - 1] = u32::from(board.rows[k] - board.rows[k - 1]);
        }
        board
    }

    /// The state before any free row is filled.
    pub(super) fn root() -> State {
        State {
            k: 0,
            cols: 0,
            d1: 0,
            d2: 0,
        }
    }

    /// Number of free rows.
    pub(super) fn free_rows(&self) -> usize {
        self.free
    }

    /// The queens of every way to fill the first `depth` free rows (`depth` below the free
    /// rows), in lexicographic order, each after the queens placed in advance, `fixed`; none
    /// when those attack each other.
    pub(super) fn placements(&self, fixed: &[Square], depth: usize) -> Vec<Vec<Square>> {
        let mut out = Vec::new();
        if !self.dead {
            self.collect(Board::root(), depth, &mut fixed.to_vec(), &mut out);
        }
        out
    }

    fn collect(
        &self,
        s: State,
        depth: usize,
        queens: &mut Vec<Square>,
        out: &mut Vec<Vec<Square>>,
    ) {
        if s.k == depth {
            out.push(queens.clone());
            return;
        }
        let mut avail = !(s.cols | s.d1 | s.d2 | self.blocked[s.k]);
        while avail != 0 {
            let bit = avail & avail.wrapping_neg();
            avail ^= bit;
            queens.push(Square {
                row: u32::from(self.rows[s.k]),
                column: bit.trailing_zeros(),
            });
            self.collect(self.child(s, bit), depth, queens, out);
            queens.pop();
        }
    }

    /// The state after placing `bit` in the free row of `s`.
    #[inline]
    fn child(&self, s: State, bit: u32) -> State {
        let shift = self.shift[s.k];
        State {
            k: s.k + 1,
            cols: s.cols | bit,
            d1: (s.d1 | bit) << shift,
            d2: (s.d2 | bit) >> shift,
        }
    }

    /// Counts the completions below `s`, polling `cancel` above the quiet subtrees.
    pub(super) fn count(&self, s: State, cancel: &AtomicBool) -> Result<u64, CountError> {
        if self.dead {
            return Ok(0);
        }
        if s.k == self.free {
            return Ok(1);
        }
        self.walk(s, cancel)
    }

    fn walk(&self, s: State, cancel: &AtomicBool) -> Result<u64, CountError> {
        if self.free - s.k <= QUIET_ROWS {
            return Ok(self.quiet_from(self.free - s.k, s.k, s.cols, s.d1, s.d2));
        }
        poll(cancel)?;
        let mut avail = !(s.cols | s.d1 | s.d2 | self.blocked[s.k]);
        let mut total = 0u64;
        while avail != 0 {
            let bit = avail & avail.wrapping_neg();
            avail ^= bit;
            let below = self.walk(self.child(s, bit), cancel)?;
            total = total.checked_add(below).ok_or(CountError::Overflow)?;
        }
        Ok(total)
    }

    /// The hot loop: completions below free row `k`, which has `D::ROWS` free rows left
    /// (itself included). One copy per depth lets the compiler drop the depth tests and
    /// inline the shallow levels. The last two free rows are counted in place: every other
    /// row holds a queen by then, so the last row has one column left (its count is whether
    /// that column is free) and the row above it two.
    fn quiet<D: Depth>(&self, k: usize, cols: u32, d1: u32, d2: u32, avail: u32) -> u64 {
        if D::ROWS == 1 {
            return u64::from(avail != 0);
        }
        let mut avail = avail;
        let shift = self.shift[k & (MAX - 1)];
        // `& (MAX - 1)` keeps the indices visibly in bounds (k < free <= MAX): no checks.
        let next = self.blocked[(k + 1) & (MAX - 1)];
        let mut total = 0;
        if D::ROWS == 2 {
            while avail != 0 {
                let bit = avail & avail.wrapping_neg();
                avail ^= bit;
                let last = !(cols | bit | (d1 | bit) << shift | (d2 | bit) >> shift | next);
                total += u64::from(last != 0);
            }
            return total;
        }
        // Children are entered only when their row has a free square and the row after
        // theirs still has one too (forward checking).
        let shift2 = self.shift[(k + 1) & (MAX - 1)];
        let after = self.blocked[(k + 2) & (MAX - 1)];
        while avail != 0 {
            let bit = avail & avail.wrapping_neg();
            avail ^= bit;
            let (c, x, y) = (cols | bit, (d1 | bit) << shift, (d2 | bit) >> shift);
            let below = !(c | x | y | next);
            if below != 0 && !(c | x << shift2 | y >> shift2 | after) != 0 {
                total += self.quiet::<D::Next>(k + 1, c, x, y, below);
            }
        }
        total
    }

    /// [`Board::quiet`] at free row `k`, with `rows` (1 to [`QUIET_ROWS`]) free rows left.
    fn quiet_from(&self, rows: usize, k: usize, cols: u32, d1: u32, d2: u32) -> u64 {
        let avail = !(cols | d1 | d2 | self.blocked[k & (MAX - 1)]);
        match rows {
            1 => self.quiet::<R1>(k, cols, d1, d2, avail),
            2 => self.quiet::<R2>(k, cols, d1, d2, avail),
            3 => self.quiet::<R3>(k, cols, d1, d2, avail),
            4 => self.quiet::<R4>(k, cols, d1, d2, avail),
            5 => self.quiet::<R5>(k, cols, d1, d2, avail),
            6 => self.quiet::<R6>(k, cols, d1, d2, avail),
            7 => self.quiet::<R7>(k, cols, d1, d2, avail),
            8 => self.quiet::<R8>(k, cols, d1, d2, avail),
            9 => self.quiet::<R9>(k, cols, d1, d2, avail),
            _ => self.quiet::<R10>(k, cols, d1, d2, avail),
        }
    }

    /// Counts all completions and those unchanged by a half and by a quarter turn, visiting
    /// every completion (for the few constellations that a rotation maps to themselves).
    pub(super) fn count_symmetric(
        &self,
        cancel: &AtomicBool,
    ) -> Result<SymmetricCounts, CountError> {
        let mut counts = SymmetricCounts::default();
        if self.dead {
            return Ok(counts);
        }
        let mut board = self.columns;
        if self.free == 0 {
            self.leaf(&board, &mut counts)?;
            return Ok(counts);
        }
        self.visit(Board::root(), &mut board, &mut counts, cancel)?;
        Ok(counts)
    }

    fn visit(
        &self,
        s: State,
        board: &mut [u8; MAX],
        counts: &mut SymmetricCounts,
        cancel: &AtomicBool,
    ) -> Result<(), CountError> {
        if self.free - s.k > QUIET_ROWS {
            poll(cancel)?;
        }
        let mut avail = !(s.cols | s.d1 | s.d2 | self.blocked[s.k]);
        while avail != 0 {
            let bit = avail & avail.wrapping_neg();
            avail ^= bit;
            board[self.rows[s.k] as usize] = bit.trailing_zeros() as u8;
            if s.k + 1 == self.free {
                self.leaf(board, counts)?;
            } else {
                self.visit(self.child(s, bit), board, counts, cancel)?;
            }
        }
        Ok(())
    }

    /// Records one complete board in `counts`.
    fn leaf(&self, board: &[u8; MAX], counts: &mut SymmetricCounts) -> Result<(), CountError> {
        let n = self.n;
        let last = (n - 1) as u8;
        let cols = &board[..n];
        let bump = |c: &mut u64| c.checked_add(1).ok_or(CountError::Overflow);
        counts.all = bump(&mut counts.all)?;
        if (0..n).all(|r| cols[n - 1 - r] == last - cols[r]) {
            counts.half_turn = bump(&mut counts.half_turn)?;
        }
        if (0..n).all(|r| cols[cols[r] as usize] == last - r as u8) {
            counts.quarter_turn = bump(&mut counts.quarter_turn)?;
        }
        Ok(())
    }
}

/// Columns of row `r` that queen `q` takes from other queens: all but its own column in its
/// own row, its column and two diagonals elsewhere.
fn attacks(n: usize, q: Square, r: usize) -> u32 {
    let (qr, qc) = (q.row as i64, q.column as i64);
    let r = r as i64;
    if r == qr {
        return !(1u32 << qc);
    }
    let d = (r - qr).abs();
    [qc, qc - d, qc + d]
        .into_iter()
        .filter(|c| (0..n as i64).contains(c))
        .fold(0, |mask, c| mask | 1u32 << c)
}

/// A number of free rows left, as a type, so that [`Board::quiet`] has one copy per depth.
trait Depth {
    /// Free rows left, the current one included.
    const ROWS: usize;
    /// One row fewer (`R1` for `R1`, never reached).
    type Next: Depth;
}

/// Declares the depth types `R1`..`R10` ([`QUIET_ROWS`] of them).
macro_rules! depths {
    ($($name:ident = $rows:literal, next $next:ident;)*) => {
        $(
            #[doc = concat!("Depth: ", stringify!($rows), " free rows left.")]
            struct $name;
            impl Depth for $name {
                const ROWS: usize = $rows;
                type Next = $next;
            }
        )*
    };
}

depths! {
    R1 = 1, next R1;
    R2 = 2, next R1;
    R3 = 3, next R2;
    R4 = 4, next R3;
    R5 = 5, next R4;
    R6 = 6, next R5;
    R7 = 7, next R6;
    R8 = 8, next R7;
    R9 = 9, next R8;
    R10 = 10, next R9;
}

/// `Err(Cancelled)` once the flag is raised.
#[inline]
fn poll(cancel: &AtomicBool) -> Result<(), CountError> {
    if cancel.load(Ordering::Relaxed) {
        Err(CountError::Cancelled)
    } else {
        Ok(())
    }
}
