//! The join's turn-fixed search: the solutions a half turn or a quarter turn maps to
//! themselves, the fixed points from which the join's symmetry classes come. Nothing else of
//! the join lives here.

use crate::counts::CountError;
use crate::pool::give_way;
use std::sync::atomic::{AtomicBool, Ordering};

/// The solutions a half turn maps to themselves and those a quarter turn does, with the
/// first row's queen on column `first`, for the symmetry classes by counting fixed points:
/// classes = (all + half + 2 × quarter) / 8 (no solution is its own mirror image for n > 1).
/// Each is a search that places whole orbits of squares under the turns, row by row, and
/// visits far fewer boards than a count (all columns together: n = 20 a fraction of a
/// second, n = 22 8 s, n = 24 about 40 s); it polls `cancel` (and gives way to other pool
/// jobs there, [`give_way`]), and calls `tick` [`ticks`]`(n)`
/// times on the way (once per column of the second row's queen in the half-turn search), so
/// that progress moves within a column's search (n = 24: about 2 s).
pub(super) fn turn_fixed_from(
    n: u32,
    first: u32,
    cancel: &AtomicBool,
    tick: &dyn Fn(),
) -> Result<(u64, u64), CountError> {
    let half = Turns::new(n, 2, cancel).count_from(first, tick)?;
    let quarter = Turns::new(n, 4, cancel).count_from(first, &|| ())?;
    Ok((half, quarter))
}

/// How many times [`turn_fixed_from`] calls its `tick` for size `n`.
pub(super) const fn ticks(n: u32) -> u64 {
    n as u64
}

/// A search for the solutions that turns by a quarter of `4 / turns` map to themselves.
struct Turns<'a> {
    n: i32,
    /// 2: half turns; 4: quarter turns.
    turns: u32,
    /// Rows, columns and diagonals (r + c, r - c + n - 1) taken.
    rows: u32,
    cols: u32,
    sums: u64,
    differences: u64,
    /// Rows tried so far, for polling `cancel`.
    visits: u64,
    /// Ticks given so far.
    ticked: u64,
    cancel: &'a AtomicBool,
}

impl<'a> Turns<'a> {
    /// An empty board.
    fn new(n: u32, turns: u32, cancel: &'a AtomicBool) -> Turns<'a> {
        Turns {
            n: n as i32,
            turns,
            rows: 0,
            cols: 0,
            sums: 0,
            differences: 0,
            visits: 0,
            ticked: 0,
            cancel,
        }
    }

    /// The distinct images of a square under the turns (one for the centre), and how many.
    fn orbit(&self, r: i32, c: i32) -> ([(i32, i32); 4], usize) {
        let last = self.n - 1;
        let quarter = |(r, c): (i32, i32)| (c, last - r);
        let images = if self.turns == 2 {
            [(r, c), (last - r, last - c), (r, c), (r, c)]
        } else {
            let once = quarter((r, c));
            [(r, c), once, quarter(once), quarter(quarter(once))]
        };
        let mut distinct = [(r, c); 4];
        let mut count = 1;
        for &image in &images[1..] {
            if !distinct[..count].contains(&image) {
                distinct[count] = image;
                count += 1;
            }
        }
        (distinct, count)
    }

    /// Completions of an empty board whose first row's queen is on column `first`, calling
    /// `tick` once per column of the next row (`n` times in all).
    fn count_from(&mut self, first: u32, tick: &dyn Fn()) -> Result<u64, CountError> {
        let (squares, count) = self.orbit(0, first as i32);
        let squares = &squares[..count];
        let mut total = 0;
        if self.fits(squares) {
            self.toggle(squares);
            total = self.count(Some(tick))?;
        }
        for _ in self.ticked..self.n as u64 {
            tick();
        }
        Ok(total)
    }

    /// Completions from the first empty row on, calling `tick` (if any) after each column
    /// of that row.
    fn count(&mut self, tick: Option<&dyn Fn()>) -> Result<u64, CountError> {
        let empty = !self.rows & (u32::MAX >> (32 - self.n));
        if empty == 0 {
            return Ok(1);
        }
        self.visits += 1;
        if self.visits.is_multiple_of(1 << 16) {
            if self.cancel.load(Ordering::Relaxed) {
                return Err(CountError::Cancelled);
            }
            give_way();
        }
        let row = empty.trailing_zeros() as i32;
        let mut total = 0;
        for c in 0..self.n {
            if self.cols >> c & 1 == 0 {
                let (squares, count) = self.orbit(row, c);
                let squares = &squares[..count];
                if self.fits(squares) {
                    self.toggle(squares);
                    let below = self.count(None);
                    self.toggle(squares);
                    total += below?;
                }
            }
            if let Some(tick) = tick {
                tick();
                self.ticked += 1;
            }
        }
        Ok(total)
    }

    /// Whether distinct squares can all take a queen: free rows, columns and diagonals,
    /// none shared among them.
    fn fits(&self, squares: &[(i32, i32)]) -> bool {
        let (mut rows, mut cols, mut sums, mut differences) =
            (self.rows, self.cols, self.sums, self.differences);
        for &(r, c) in squares {
            let (row, col) = (1u32 << r, 1u32 << c);
            let (sum, difference) = (1u64 << (r + c), 1u64 << (r - c + self.n - 1));
            if rows & row != 0
                || cols & col != 0
                || sums & sum != 0
                || differences & difference != 0
            {
                return false;
            }
            rows |= row;
            cols |= col;
            sums |= sum;
            differences |= difference;
        }
        true
    }

    /// Places the queens of `squares`, or takes them away.
    fn toggle(&mut self, squares: &[(i32, i32)]) {
        for &(r, c) in squares {
            self.rows ^= 1 << r;
            self.cols ^= 1 << c;
            self.sums ^= 1 << (r + c);
            self.differences ^= 1 << (r - c + self.n - 1);
        }
    }
}
