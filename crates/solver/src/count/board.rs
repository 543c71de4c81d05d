//! One board with some queens placed in advance, and the bitboard search that counts its
//! completions.
//!
//! Placed queens never enter the search: their attacks are folded into one mask of blocked
//! columns per free row, and their rows are skipped (the diagonal masks shift by the gap to the
//! next free row). Which queens to place, symmetry, shards and threads live in `mod.rs` and
//! `constellation.rs`, not here.

use crate::counts::CountError;
use crate::geometry::{MAX, Masks, Square, Symmetry, bits, blocked, full_mask};
use crate::pool::give_way;
use std::sync::atomic::{AtomicBool, Ordering};

/// Subtrees with at most this many free rows are searched without polling the cancel flag and
/// with unchecked sums: such a subtree is at most a 10-queens problem (milliseconds at any n),
/// and its at most 10! completions cannot overflow. Above it, every node polls: a few
/// thousand per constellation against its millions of quiet ones.
const QUIET_ROWS: usize = 10;

/// A point in the search of one [`Board`]: the first `k` free rows hold queens.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct State {
    k: usize,
    m: Masks,
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

/// Where a count hands completions as it finds them, before it returns their sum (progress
/// reports; called once per quiet subtree, never per board).
pub(super) type Tally<'a> = &'a mut dyn FnMut(u64);

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
        let mut allowed = [full; MAX];
        let mut placed = [false; MAX];
        let mut columns = [0u8; MAX];
        for &q in queens {
            placed[q.row as usize] = true;
            columns[q.row as usize] = q.column as u8;
            for (r, mask) in allowed[..n as usize].iter_mut().enumerate() {
                *mask &= !blocked(n, q, r as u32);
            }
        }
        let n = n as usize;
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
            m: Masks::EMPTY,
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
        for bit in bits(self.avail(s)) {
            queens.push(Square {
                row: u32::from(self.rows[s.k]),
                column: bit.trailing_zeros(),
            });
            self.collect(self.child(s, bit), depth, queens, out);
            queens.pop();
        }
    }

    /// The columns the free row of `s` may take.
    #[inline]
    fn avail(&self, s: State) -> u32 {
        !(s.m.taken() | self.blocked[s.k])
    }

    /// The state after placing `bit` in the free row of `s`.
    #[inline]
    fn child(&self, s: State, bit: u32) -> State {
        State {
            k: s.k + 1,
            m: s.m.child(bit, self.shift[s.k]),
        }
    }

    /// Counts the completions below `s`, polling `cancel` above the quiet subtrees and
    /// handing each quiet subtree's completions to `tally` as they are found (for progress:
    /// the answer is what this returns).
    pub(super) fn count(
        &self,
        s: State,
        cancel: &AtomicBool,
        tally: Tally<'_>,
    ) -> Result<u64, CountError> {
        if self.dead {
            return Ok(0);
        }
        if s.k == self.free {
            return Ok(1);
        }
        self.walk(s, cancel, tally)
    }

    fn walk(&self, s: State, cancel: &AtomicBool, tally: Tally<'_>) -> Result<u64, CountError> {
        if self.free - s.k <= QUIET_ROWS {
            let found = self.quiet_from(self.free - s.k, s);
            tally(found);
            return Ok(found);
        }
        poll(cancel)?;
        let mut total = 0u64;
        for bit in bits(self.avail(s)) {
            let below = self.walk(self.child(s, bit), cancel, tally)?;
            total = total.checked_add(below).ok_or(CountError::Overflow)?;
        }
        Ok(total)
    }

    /// The hot loop: completions below free row `k`, which has `D::ROWS` free rows left
    /// (itself included). One copy per depth lets the compiler drop the depth tests and
    /// inline the shallow levels. The last two free rows are counted in place: every other
    /// row holds a queen by then, so the last row has one column left (its count is whether
    /// that column is free) and the row above it two.
    fn quiet<D: Depth>(&self, k: usize, m: Masks, avail: u32) -> u64 {
        if D::ROWS == 1 {
            return u64::from(avail != 0);
        }
        let shift = self.shift[k & (MAX - 1)];
        // `& (MAX - 1)` keeps the indices visibly in bounds (k < free <= MAX): no checks.
        let next = self.blocked[(k + 1) & (MAX - 1)];
        let mut total = 0;
        if D::ROWS == 2 {
            for bit in bits(avail) {
                total += u64::from(!(m.child(bit, shift).taken() | next) != 0);
            }
            return total;
        }
        // Children are entered only when their row has a free square and the row after
        // theirs still has one too (forward checking).
        let shift2 = self.shift[(k + 1) & (MAX - 1)];
        let after = self.blocked[(k + 2) & (MAX - 1)];
        for bit in bits(avail) {
            let child = m.child(bit, shift);
            let below = !(child.taken() | next);
            if below != 0 && !(child.child(0, shift2).taken() | after) != 0 {
                total += self.quiet::<D::Next>(k + 1, child, below);
            }
        }
        total
    }

    /// [`Board::quiet`] at state `s`, with `rows` (1 to [`QUIET_ROWS`]) free rows left.
    fn quiet_from(&self, rows: usize, s: State) -> u64 {
        let (k, m) = (s.k, s.m);
        let avail = !(m.taken() | self.blocked[k & (MAX - 1)]);
        match rows {
            1 => self.quiet::<R1>(k, m, avail),
            2 => self.quiet::<R2>(k, m, avail),
            3 => self.quiet::<R3>(k, m, avail),
            4 => self.quiet::<R4>(k, m, avail),
            5 => self.quiet::<R5>(k, m, avail),
            6 => self.quiet::<R6>(k, m, avail),
            7 => self.quiet::<R7>(k, m, avail),
            8 => self.quiet::<R8>(k, m, avail),
            9 => self.quiet::<R9>(k, m, avail),
            _ => self.quiet::<R10>(k, m, avail),
        }
    }

    /// Counts all completions and those unchanged by a half and by a quarter turn, visiting
    /// every completion (for the few constellations that a rotation maps to themselves).
    /// Completions below the board and those a half or quarter turn maps to themselves,
    /// handing the completions to `tally` as they are found, as [`Board::count`] does.
    pub(super) fn count_symmetric(
        &self,
        cancel: &AtomicBool,
        tally: Tally<'_>,
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
        self.visit(Board::root(), &mut board, &mut counts, cancel, tally)?;
        if self.free <= QUIET_ROWS {
            tally(counts.all);
        }
        Ok(counts)
    }

    fn visit(
        &self,
        s: State,
        board: &mut [u8; MAX],
        counts: &mut SymmetricCounts,
        cancel: &AtomicBool,
        tally: Tally<'_>,
    ) -> Result<(), CountError> {
        let above_quiet = self.free - s.k > QUIET_ROWS;
        if above_quiet {
            poll(cancel)?;
        }
        let before = counts.all;
        for bit in bits(self.avail(s)) {
            board[self.rows[s.k] as usize] = bit.trailing_zeros() as u8;
            if s.k + 1 == self.free {
                self.leaf(board, counts)?;
            } else {
                self.visit(self.child(s, bit), board, counts, cancel, tally)?;
            }
        }
        // The last node above the quiet rows hands on what its quiet subtrees found.
        if above_quiet && self.free - s.k - 1 <= QUIET_ROWS {
            tally(counts.all - before);
        }
        Ok(())
    }

    /// Records one complete board in `counts`.
    fn leaf(&self, board: &[u8; MAX], counts: &mut SymmetricCounts) -> Result<(), CountError> {
        let cols = &board[..self.n];
        let bump = |c: &mut u64| c.checked_add(1).ok_or(CountError::Overflow);
        counts.all = bump(&mut counts.all)?;
        if Symmetry::HALF_TURN.fixes(cols) {
            counts.half_turn = bump(&mut counts.half_turn)?;
        }
        if Symmetry::QUARTER_TURN.fixes(cols) {
            counts.quarter_turn = bump(&mut counts.quarter_turn)?;
        }
        Ok(())
    }
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

/// `Err(Cancelled)` once the flag is raised; else gives way to other pool jobs if the
/// search has had its slice ([`give_way`]).
#[inline]
fn poll(cancel: &AtomicBool) -> Result<(), CountError> {
    if cancel.load(Ordering::Relaxed) {
        Err(CountError::Cancelled)
    } else {
        give_way();
        Ok(())
    }
}
