//! The join's tables: the placements of each half's two bands of rows (the head and the
//! tail) by the columns they take ([`Join`], [`Bands`]), built a row at a time, and the
//! layout of a tail's word ([`Tail`]). The keys and the ranks of column sets live in
//! `keys.rs`, the building of a key's halves from these tables in `halves.rs`, the SIMD
//! kernels in `kernels.rs`, the pair counting in `sieve.rs`, the word layout in `word.rs`,
//! the tables' memory in `memory.rs`.

use super::TABLES_MAX;
use super::kernels::Last;
use super::keys::{BINOMIAL, Key, rank, subsets};
use super::memory::{Words, peak_from_here};
use super::wide::CHUNK;
use super::word::{BALANCE_SHIFT, BAND_BIAS, right_field};
use crate::counts::CountError;
use crate::pool::give_way;
use crate::simd::{Tier, tier};
use std::sync::atomic::{AtomicBool, Ordering};

/// The placements of one band of rows for every set of as many columns, `W` words each, in
/// one flat list cut by set: the set of colex rank r (among the sets of `k` of the board's
/// columns) has the entries `starts[r]..starts[r + 1]`. A lookup is a rank, no hashing, and a
/// count's table takes one allocation. The heads keep two words per placement side by side
/// (what a tail must not meet, and the head's share of the half's word), the tails one
/// ([`Tail`]).
#[derive(Debug, Default)]
pub(super) struct Bands<const W: usize> {
    /// Columns per set: the band's rows.
    k: u32,
    starts: Vec<u32>,
    words: Words,
}

impl<const W: usize> Bands<W> {
    /// The words of the placements on exactly the columns `set` (of `k` columns).
    #[inline]
    pub(super) fn get(&self, set: u32) -> &[u64] {
        let rank = rank(set, self.k);
        let (start, end) = (self.starts[rank] as usize, self.starts[rank + 1] as usize);
        &self.words[W * start..W * end]
    }
}

/// How a tail's one word keeps its placement, for a board of `n` columns and a tail of `t`
/// rows: its queens' diagonals traced back to the tail's first row, unmasked (those off the
/// board kept too), the up-left ones from bit 0 (shifted by `t - 1`) and the up-right ones
/// from bit `r + t`, `r` the half word's right-going field ([`right_field`]); its balance,
/// biased by [`TAIL_BIAS`], from bit `BALANCE_SHIFT + 2t`. The traces end at bit
/// `r + n + 2t - 2` (n = 24: 58, n = 25: 59, t = 6), below the balance at bit 60. A head's
/// test word marks the same traces, so the test is one AND; and the tail's share of the
/// half's word comes out of it by one shift and masks ([`Tail::half`]): the traces
/// continued down to the row under the half are the traces themselves moved by the band's
/// height. Half the bytes of a test word and a share word,
/// which matters because the tails' table is read afresh for every key.
#[derive(Clone, Copy, Debug)]
pub(super) struct Tail {
    /// Bit of the up-left traces' column 0 (`t - 1`).
    pub(super) left: u32,
    /// Bit of the up-right traces' column 0 (`r + t`, `r` the right-going field's bit).
    pub(super) right: u32,
    /// The shift that brings the up-right traces to the half word's right-going field and the
    /// balance to its balance field (`2t`).
    pub(super) shift: u32,
    /// The half word's left-going field, as the up-left traces stand.
    pub(super) low: u64,
    /// The half word's right-going field, after the shift.
    pub(super) high: u64,
}

/// Offset of a tail's balance in its word's four bits (a tail has at most 6 queens).
const TAIL_BIAS: i32 = 8;

/// The balance field's bits a tail's word brings, after [`Tail`]'s shift.
pub(super) const TAIL_BALANCE: u64 = 0xf << BALANCE_SHIFT;

impl Tail {
    /// The half word of a head's share `head` (its balance field biased for the tail's, see
    /// [`Join::new`]) and a tail's word: the diagonal fields ORed, the balances added.
    #[inline(always)]
    pub(super) fn half(self, head: u64, word: u64) -> u64 {
        let shifted = word >> self.shift;
        (head + (shifted & TAIL_BALANCE)) | (word & self.low) | (shifted & self.high)
    }

    /// A queen's diagonals on `column`, `k` rows below a band's first row, traced back to
    /// it as a tail's word keeps them (`k` is below the tail's rows, so none falls below
    /// bit 0).
    #[inline(always)]
    fn trace(self, column: u32, k: u32) -> u64 {
        (1u64 << (column + self.left - k)) | (1u64 << (self.right + column + k))
    }

    /// The middle queen's bits in a tail's word: a half whose tail has one attacks her (her
    /// left-going column `q` at bit `q - 1`, none for column 0, which no trace reaches).
    pub(super) fn spare(self, n: u32, middle: Option<u32>) -> u64 {
        middle.map_or(0, |q| {
            ((1u64 << q) >> 1) | (1u64 << (right_field(n) + q + self.shift))
        })
    }
}

/// How many times [`Join::new`] calls its `tick` for size `n`: `n` times per row of each
/// band (the head's and the tail's, `n / 2` rows in all), spread over the sets as each row is
/// placed; none on the wide path, which builds no tables.
pub(super) fn build_steps(n: u32) -> u64 {
    if n > TABLES_MAX {
        return 0;
    }
    u64::from(n) * u64::from(n / 2)
}

/// A placement of a band's first rows, as a [`Level`] keeps it (its columns are its set's).
#[derive(Clone, Copy)]
struct Placed {
    /// Diagonals traced back to the band's first row, laid out as in a [`Tail`]'s word.
    seen: u64,
    /// Diagonals attacked on the next row.
    ld: u32,
    rd: u32,
    /// Sum of the placed squares' balances.
    balance: i32,
}

/// The placements of a band's first `k` rows on every set of `k` columns, cut by set as in
/// [`Bands`]: a step of the tables' build, which makes each level from the one before.
struct Level {
    k: u32,
    starts: Vec<u32>,
    placed: Words<Placed>,
}

impl Level {
    /// No rows: one placement, on the empty set.
    fn empty() -> Result<Level, CountError> {
        let mut placed = Words::with_room(1)?;
        placed.spare()[0].write(Placed {
            seen: 0,
            ld: 0,
            rd: 0,
            balance: 0,
        });
        // SAFETY: the one slot was written just now.
        unsafe { placed.set_len(1) };
        Ok(Level {
            k: 0,
            starts: vec![0, 1],
            placed,
        })
    }

    /// The placements on exactly the columns `set` (of `k` columns).
    #[inline]
    fn get(&self, set: u32) -> &[Placed] {
        &self.placed[self.range(set)]
    }

    /// Where the placements on exactly the columns `set` lie in the level's list.
    #[inline]
    fn range(&self, set: u32) -> std::ops::Range<usize> {
        let rank = rank(set, self.k);
        self.starts[rank] as usize..self.starts[rank + 1] as usize
    }
}

/// A table's `steps` ticks spread evenly over its `sets` sets as they are built, each after
/// a poll of `cancel`.
struct Ticks<'a> {
    steps: usize,
    sets: usize,
    ticked: usize,
    cancel: &'a AtomicBool,
    tick: &'a dyn Fn(),
}

impl<'a> Ticks<'a> {
    /// None given yet.
    fn new(steps: usize, sets: usize, cancel: &'a AtomicBool, tick: &'a dyn Fn()) -> Ticks<'a> {
        Ticks {
            steps,
            sets,
            ticked: 0,
            cancel,
            tick,
        }
    }

    /// The ticks due once the set of rank `index` is built; `Cancelled` if `cancel` is
    /// raised before one of them. Gives way to other pool jobs ([`give_way`]) first.
    fn after(&mut self, index: usize) -> Result<(), CountError> {
        give_way();
        while self.ticked < (index + 1) * self.steps / self.sets {
            if self.cancel.load(Ordering::Relaxed) {
                return Err(CountError::Cancelled);
            }
            (self.tick)();
            self.ticked += 1;
        }
        Ok(())
    }
}

/// The tables one board size shares between its keys.
pub(super) struct Join {
    /// The board's size.
    pub(super) n: u32,
    /// Rows in each half.
    pub(super) m: u32,
    /// Rows in the half's first band (the head); the rest of its rows are the tail.
    pub(super) head: u32,
    /// All columns.
    pub(super) full: u32,
    /// Placements of the head's rows, by the columns they take: the traces a tail's
    /// queens must not have ([`Tail`]), and the head's share of the half's word.
    pub(super) heads: Bands<2>,
    /// Placements of the tail's rows (alone, as if the head were empty), by columns, one
    /// word each ([`Tail`]); each set's list padded with entries that fit no head to a whole
    /// number of SIMD registers.
    pub(super) tails: Bands<1>,
    /// The layout of a tail's word.
    pub(super) tail: Tail,
    /// The most bytes of arrays the build held at once (the levels it made the tables from,
    /// and the tables).
    pub(super) peak_bytes: usize,
    /// On the wide path (no tables, `wide.rs`): the most words a key's list holds at once;
    /// 0 on the tables' path.
    pub(super) chunk: usize,
}

/// A table's or a level's list of where each set's entries start, for `sets` sets: its first
/// start (0) in place, room for the others; `OutOfMemory` if the system has not got it.
fn starts_for(sets: usize) -> Result<Vec<u32>, CountError> {
    let mut starts = Vec::new();
    starts
        .try_reserve_exact(sets + 1)
        .map_err(|_| CountError::OutOfMemory {
            bytes: ((sets + 1) * size_of::<u32>()) as u64,
        })?;
    starts.push(0);
    Ok(starts)
}

impl Join {
    /// The tables for size `n`, calling `tick` [`build_steps`] times on the way (see
    /// there); `Cancelled` if `cancel` is raised meanwhile.
    pub(super) fn new(n: u32, cancel: &AtomicBool, tick: &dyn Fn()) -> Result<Join, CountError> {
        if n > TABLES_MAX {
            return Ok(Join::wide(n, CHUNK));
        }
        let mut join = Join::bare(n);
        let peak = peak_from_here();
        let heads = join.heads(cancel, tick, |p| join.head_entry(p))?;
        let tails = join.tails(cancel, tick, tier())?;
        join.heads = heads;
        join.tails = tails;
        join.peak_bytes = peak();
        Ok(join)
    }

    /// The join of size `n` without its tables: its sizes and the layout of a tail's word.
    pub(super) fn bare(n: u32) -> Join {
        let m = n / 2;
        let head = m / 2;
        let full = (1u32 << n) - 1;
        let t = m - head;
        let odd = !n.is_multiple_of(2);
        let right = right_field(n);
        let tail = Tail {
            left: t - 1,
            right: right + t,
            shift: 2 * t,
            low: u64::from(full >> 1),
            // Odd boards: the field's last column is never attacked, and its bit (n = 25:
            // bit 48) is where the balance comes to after the shift.
            high: u64::from(if odd { full >> 1 } else { full }) << right,
        };
        Join {
            n,
            m,
            head,
            full,
            heads: Bands::default(),
            tails: Bands::default(),
            tail,
            peak_bytes: 0,
            chunk: 0,
        }
    }

    /// A head's entry in the heads' table: the traces a tail's queens must not have (laid
    /// out as a [`Tail`]'s word) and the head's share of the half's word, its balance field
    /// biased for the tail's bias to make the half's (each band's balance plus BAND_BIAS).
    #[inline]
    fn head_entry(&self, p: Placed) -> [u64; 2] {
        let (ld, rd) = (u64::from(p.ld), u64::from(p.rd));
        let t = self.m - self.head;
        let share = self.share(ld << t, rd >> t, p.balance + BAND_BIAS - TAIL_BIAS);
        [(ld << self.tail.left) | (rd << self.tail.right), share]
    }

    /// The entry [`Join::head_entry`] makes of the head whose row `r` has its queen on
    /// `columns[r]`, and the set of those columns; `None` unless they are `head` columns
    /// apart and at peace. For tests that count the halves of one head.
    #[cfg(test)]
    pub(super) fn head_of(&self, columns: &[u32]) -> Option<([u64; 2], u32)> {
        let mut p = Placed {
            seen: 0,
            ld: 0,
            rd: 0,
            balance: 0,
        };
        let mut set = 0;
        for (row, &column) in columns.iter().enumerate() {
            let bit = 1u32 << column;
            if (p.ld | p.rd | set) & bit != 0 {
                return None;
            }
            set |= bit;
            p.ld = ((p.ld | bit) << 1) & self.full;
            p.rd = (p.rd | bit) >> 1;
            p.balance += self.balance(row as u32, column);
        }
        (columns.len() == self.head as usize).then(|| (self.head_entry(p), set))
    }

    /// The heads' table: the placements of the head's rows from row 0 (as if no row above
    /// held a queen) for every set of as many columns, each entry the words `entry` makes of
    /// it. The rows are placed one at a time, each level set by set from the level before
    /// ([`Join::grow`]), so that every list is written in order, in one pass.
    fn heads(
        &self,
        cancel: &AtomicBool,
        tick: &dyn Fn(),
        entry: impl Fn(Placed) -> [u64; 2],
    ) -> Result<Bands<2>, CountError> {
        let level = self.level(0, self.head - 1, cancel, tick)?;
        // A placement more: every one tried is written, and only those that fit are kept.
        let room = 2 * (self.room(&level) + 1);
        self.table(self.head, room, cancel, tick, |set, free| {
            let mut at = 0;
            self.grow(0, &level, set, |p, fits| {
                for (slot, word) in free[2 * at..2 * at + 2].iter_mut().zip(entry(p)) {
                    slot.write(word);
                }
                at += usize::from(fits);
            });
            at
        })
    }

    /// The tails' table: the placements of the tail's rows from row `head`, as for the
    /// heads, each entry its [`Tail`] word, the last row placed by a SIMD kernel in `tier`
    /// (the one part of the build that a shard of n = 19 spends a millisecond on).
    fn tails(
        &self,
        cancel: &AtomicBool,
        tick: &dyn Fn(),
        tier: Tier,
    ) -> Result<Bands<1>, CountError> {
        let (first, rows) = (self.head, self.m - self.head);
        let level = self.level(first, rows - 1, cancel, tick)?;
        let k = level.k;
        let balance_at = BALANCE_SHIFT + self.tail.shift;
        // Per placement of the rows before: its word so far, then (a list further on) the
        // columns it attacks on the last row; one allocation.
        let count = level.placed.len();
        let mut before = Words::with_room(2 * count)?;
        // In pieces, giving way between them: n = 24 has tens of millions of placements.
        const PIECE: usize = 1 << 16;
        let spare = before.spare();
        let (words, attacks) = spare.split_at_mut(count);
        for ((words, attacks), placed) in words
            .chunks_mut(PIECE)
            .zip(attacks.chunks_mut(PIECE))
            .zip(level.placed.chunks(PIECE))
        {
            for ((word, attack), p) in words.iter_mut().zip(attacks).zip(placed) {
                word.write(p.seen | (((p.balance + TAIL_BIAS) as u64) << balance_at));
                attack.write(u64::from(p.ld | p.rd));
            }
            give_way();
        }
        // SAFETY: both halves of the room were written just now.
        unsafe { before.set_len(2 * count) };
        let (starts_with, attacks) = before.split_at(count);
        // A register's worth more: the kernels store whole registers.
        let room = self.room(&level) + 8;
        self.table(rows, room, cancel, tick, |set, free| {
            let (mut at, mut rest) = (0, set);
            while rest != 0 {
                let bit = rest & rest.wrapping_neg();
                rest ^= bit;
                let column = bit.trailing_zeros();
                let last = Last {
                    bit: u64::from(bit),
                    up: self.tail.trace(column, k),
                    balance: ((self.balance(first + k, column) as i64) << balance_at) as u64,
                };
                let before = level.range(set ^ bit);
                at += last.place(
                    &mut free[at..],
                    &starts_with[before.clone()],
                    &attacks[before],
                    tier,
                );
            }
            at
        })
    }

    /// A table of `W` words per placement of `rows` rows, in `room` words: `fill` writes
    /// the placements on one set of columns to the front of the room it is given (with room
    /// for all that are left) and says how many it wrote. Calls `tick` `n` times, spread over
    /// the sets; `Cancelled` if `cancel` is raised meanwhile.
    fn table<const W: usize>(
        &self,
        rows: u32,
        room: usize,
        cancel: &AtomicBool,
        tick: &dyn Fn(),
        mut fill: impl FnMut(u32, &mut [std::mem::MaybeUninit<u64>]) -> usize,
    ) -> Result<Bands<W>, CountError> {
        let sets = BINOMIAL[self.n as usize][rows as usize] as usize;
        let mut words = Words::with_room(room)?;
        let mut starts = starts_for(sets)?;
        let mut ticks = Ticks::new(self.n as usize, sets, cancel, tick);
        let free = words.spare();
        let mut at = 0;
        for (index, set) in subsets(self.n, rows).enumerate() {
            at += fill(set, &mut free[W * at..]);
            starts.push(u32::try_from(at).map_err(|_| CountError::Overflow)?);
            ticks.after(index)?;
        }
        // SAFETY: `fill` wrote the first `at` placements' words.
        unsafe { words.set_len(W * at) };
        Ok(Bands {
            k: rows,
            starts,
            words,
        })
    }

    /// The placements of `rows` rows from board row `first` on (as if no row above held a
    /// queen) for every set of `rows` columns, a level at a time from none, calling `tick`
    /// `n` times per level; `Cancelled` if `cancel` is raised meanwhile.
    fn level(
        &self,
        first: u32,
        rows: u32,
        cancel: &AtomicBool,
        tick: &dyn Fn(),
    ) -> Result<Level, CountError> {
        let mut level = Level::empty()?;
        while level.k < rows {
            let k = level.k + 1;
            let sets = BINOMIAL[self.n as usize][k as usize] as usize;
            let mut ticks = Ticks::new(self.n as usize, sets, cancel, tick);
            let mut placed = Words::with_room(self.room(&level) + 1)?;
            let mut starts = starts_for(sets)?;
            let (free, mut at) = (placed.spare(), 0);
            for (index, set) in subsets(self.n, k).enumerate() {
                self.grow(first, &level, set, |p, fits| {
                    free[at].write(p);
                    at += usize::from(fits);
                });
                starts.push(u32::try_from(at).map_err(|_| CountError::Overflow)?);
                ticks.after(index)?;
            }
            // SAFETY: the first `at` slots were written above.
            unsafe { placed.set_len(at) };
            level = Level { k, starts, placed };
        }
        Ok(level)
    }

    /// Calls `found` with each placement of the band's first `level.k + 1` rows (from board
    /// row `first`) on exactly the columns `set`, and whether it holds: for each of the set's
    /// columns, each placement of the other columns on the rows before, the queen put on the
    /// column in the next row, where it holds if their diagonals leave it free. (Every try is
    /// handed on, so that the caller keeps the holding ones without a branch: about half of
    /// them hold, in no order a branch predictor learns.)
    #[inline]
    fn grow(&self, first: u32, level: &Level, set: u32, mut found: impl FnMut(Placed, bool)) {
        let (k, full) = (level.k, self.full);
        let mut rest = set;
        while rest != 0 {
            let bit = rest & rest.wrapping_neg();
            rest ^= bit;
            let column = bit.trailing_zeros();
            let balance = self.balance(first + k, column);
            let up = self.tail.trace(column, k);
            for p in level.get(set ^ bit) {
                let placed = Placed {
                    seen: p.seen | up,
                    ld: ((p.ld | bit) << 1) & full,
                    rd: (p.rd | bit) >> 1,
                    balance: p.balance + balance,
                };
                found(placed, (p.ld | p.rd) & bit == 0);
            }
        }
    }

    /// Placements in the level after `level`: per placement, the columns its diagonals leave
    /// free on the next row.
    fn room(&self, level: &Level) -> usize {
        let k = level.k;
        subsets(self.n, k)
            .map(|set| {
                give_way();
                level
                    .get(set)
                    .iter()
                    .map(|p| (self.full & !set & !p.ld & !p.rd).count_ones() as usize)
                    .sum::<usize>()
            })
            .sum()
    }

    /// A band's share of the half's word, from the diagonals it attacks on the row under
    /// the half (on odd boards the middle row), and its balance in the top byte's field (see
    /// [`Tail::half`]), laid out as `word.rs` says (the left-going field without its column
    /// 0, which nothing from above attacks on that row).
    fn share(&self, ld: u64, rd: u64, balance: i32) -> u64 {
        let full = u64::from(self.full);
        let field = (balance + BAND_BIAS) as u64;
        ((ld & full) >> 1) | ((rd & full) << right_field(self.n)) | (field << BALANCE_SHIFT)
    }

    /// The balance of `key`'s middle queen (0 on even boards).
    pub(super) fn middle_balance(&self, key: &Key) -> i32 {
        key.middle.map_or(0, |q| self.balance(self.m, q))
    }

    /// +1 for a square strictly between the two long diagonals above or below the centre,
    /// -1 for one left or right of the centre, 0 on a long diagonal. Mirrors keep it; the
    /// transposes negate it.
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

    /// The most halves any set of a half's columns can have before they are tested against
    /// each other: over every set of `m` columns, the sum over its head sets of the heads on
    /// them times the tails on the rest (the room [`Join::halves`] asks for its list). A
    /// bound on a key's lists, for the memory model (`memory_model.rs`).
    #[cfg(test)]
    pub(super) fn list_bound(&self) -> usize {
        let (n, head, t) = (self.n, self.head, self.m - self.head);
        let heads: Vec<usize> = subsets(n, head)
            .map(|set| self.heads.get(set).len() / 2)
            .collect();
        let tails: Vec<usize> = subsets(n, t).map(|set| self.tails.get(set).len()).collect();
        let mut most = 0;
        let mut places = [0u32; 24];
        for columns in subsets(n, self.m) {
            let mut rest = columns;
            for place in places.iter_mut().take(self.m as usize) {
                *place = rest & rest.wrapping_neg();
                rest ^= *place;
            }
            let mut sum = 0;
            for picks in subsets(self.m, head) {
                let (mut first, mut picked) = (0, picks);
                while picked != 0 {
                    first |= places[picked.trailing_zeros() as usize];
                    picked &= picked - 1;
                }
                sum += heads[rank(first, head)] * tails[rank(columns & !first, t)];
            }
            most = most.max(sum);
        }
        most
    }
}

#[cfg(test)]
mod tests {
    use super::{BALANCE_SHIFT, BAND_BIAS, Join, TAIL_BIAS};
    use std::sync::atomic::AtomicBool;

    /// A half's word from a head's share and a tail's word: at n = 24 the diagonal fields
    /// reach bit 47, where both may have a bit, kept once; only the balance fields add up.
    #[test]
    fn a_half_word_ors_the_diagonals_and_adds_the_balances() {
        let join = Join::new(24, &AtomicBool::new(false), &|| {}).unwrap();
        let tail = join.tail;
        assert_eq!((tail.left, tail.right, tail.shift), (5, 30, 12));
        let field = |balance: i32| (balance as u64) << BALANCE_SHIFT;
        // The head: left-going diagonals 0 and 22 (bit 22 holds column 23 on even boards),
        // right-going 23 (bit 47), balance 3, biased for the tail's bias.
        let head = 1 | 1 << 22 | 1 << 47 | field(3 + 2 * BAND_BIAS - TAIL_BIAS);
        // The tail: up-left traces at bits 1 and 22 (the same fields), an up-right trace at
        // bit 58 (column 22 of the right-going field, bit 46, after the shift), balance -2.
        let word = 1 << 1 | 1 << 22 | 1 << 58 | ((-2 + TAIL_BIAS) as u64) << (BALANCE_SHIFT + 12);
        assert_eq!(
            tail.half(head, word),
            1 | 1 << 1 | 1 << 22 | 1 << 46 | 1 << 47 | field(1 + 2 * BAND_BIAS)
        );
    }
}
