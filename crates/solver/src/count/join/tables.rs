//! The join's tables for boards up to n = 25 ([`Tables`]): the placements of each half's
//! two bands of rows (the head and the tail) by the columns they take ([`Bands`]), built a
//! row at a time from levels of placements, the tails' last row placed by a SIMD kernel.
//! Not here: the layout of a tail's word (`word.rs`), the keys and the ranks of column sets
//! (`keys.rs`), a key's halves made from the tables (`halves.rs`), the kernels
//! (`kernels/`), the tables' memory (`memory.rs`); the wide path has no tables (`wide.rs`).

use super::kernels::place;
use super::keys::{BINOMIAL, rank, subsets};
use super::memory::{Words, peak_from_here};
use super::sizes::{Sizes, TABLES_MAX};
use super::word::{BALANCE_SHIFT, BAND_BIAS, Last, TAIL_BIAS, Tail, right_field};
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

/// How many times [`Tables::new`] calls its `tick` for size `n`: `n` times per row of each
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

/// The tables one board size up to [`TABLES_MAX`] shares between its keys: the placements
/// of each half's two bands of rows (the head and the tail) by the columns they take.
pub(super) struct Tables {
    /// The board's sizes.
    pub(super) sizes: Sizes,
    /// The layout of a tail's word.
    pub(super) tail: Tail,
    /// Placements of the head's rows, by the columns they take: the traces a tail's
    /// queens must not have ([`Tail`]), and the head's share of the half's word.
    pub(super) heads: Bands<2>,
    /// Placements of the tail's rows (alone, as if the head were empty), by columns, one
    /// word each ([`Tail`]); each set's list padded with entries that fit no head to a whole
    /// number of SIMD registers.
    pub(super) tails: Bands<1>,
    /// The most bytes of arrays the build held at once (the levels it made the tables from,
    /// and the tables).
    pub(super) peak_bytes: usize,
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

impl Tables {
    /// The tables for size `n` (at most [`TABLES_MAX`]), calling `tick` [`build_steps`]
    /// times on the way (see there); `Cancelled` if `cancel` is raised meanwhile.
    pub(super) fn new(n: u32, cancel: &AtomicBool, tick: &dyn Fn()) -> Result<Tables, CountError> {
        debug_assert!(n <= TABLES_MAX);
        let mut tables = Tables {
            sizes: Sizes::new(n),
            tail: Tail::new(n),
            heads: Bands::default(),
            tails: Bands::default(),
            peak_bytes: 0,
        };
        let peak = peak_from_here();
        let heads = tables.heads(cancel, tick, |p| tables.head_entry(p))?;
        let tails = tables.tails(cancel, tick, tier())?;
        tables.heads = heads;
        tables.tails = tails;
        tables.peak_bytes = peak();
        Ok(tables)
    }

    /// A head's entry in the heads' table: the traces a tail's queens must not have (laid
    /// out as a [`Tail`]'s word) and the head's share of the half's word, its balance field
    /// biased for the tail's bias to make the half's (each band's balance plus BAND_BIAS).
    #[inline]
    fn head_entry(&self, p: Placed) -> [u64; 2] {
        let (ld, rd) = (u64::from(p.ld), u64::from(p.rd));
        let t = self.sizes.m - self.sizes.head;
        let share = self.share(ld << t, rd >> t, p.balance + BAND_BIAS - TAIL_BIAS);
        [(ld << self.tail.left) | (rd << self.tail.right), share]
    }

    /// The entry [`Tables::head_entry`] makes of the head whose row `r` has its queen on
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
            p.ld = ((p.ld | bit) << 1) & self.sizes.full;
            p.rd = (p.rd | bit) >> 1;
            p.balance += self.sizes.balance(row as u32, column);
        }
        (columns.len() == self.sizes.head as usize).then(|| (self.head_entry(p), set))
    }

    /// The heads' table: the placements of the head's rows from row 0 (as if no row above
    /// held a queen) for every set of as many columns, each entry the words `entry` makes of
    /// it. The rows are placed one at a time, each level set by set from the level before
    /// ([`Tables::grow`]), so that every list is written in order, in one pass.
    fn heads(
        &self,
        cancel: &AtomicBool,
        tick: &dyn Fn(),
        entry: impl Fn(Placed) -> [u64; 2],
    ) -> Result<Bands<2>, CountError> {
        let level = self.level(0, self.sizes.head - 1, cancel, tick)?;
        // A placement more: every one tried is written, and only those that fit are kept.
        let room = 2 * (self.room(&level) + 1);
        self.table(self.sizes.head, room, cancel, tick, |set, free| {
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
        let (first, rows) = (self.sizes.head, self.sizes.m - self.sizes.head);
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
                    balance: ((self.sizes.balance(first + k, column) as i64) << balance_at) as u64,
                };
                let before = level.range(set ^ bit);
                let (words, attacks) = (&starts_with[before.clone()], &attacks[before]);
                at += place(last, &mut free[at..], words, attacks, tier);
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
        let sets = BINOMIAL[self.sizes.n as usize][rows as usize] as usize;
        let mut words = Words::with_room(room)?;
        let mut starts = starts_for(sets)?;
        let mut ticks = Ticks::new(self.sizes.n as usize, sets, cancel, tick);
        let free = words.spare();
        let mut at = 0;
        for (index, set) in subsets(self.sizes.n, rows).enumerate() {
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
            let sets = BINOMIAL[self.sizes.n as usize][k as usize] as usize;
            let mut ticks = Ticks::new(self.sizes.n as usize, sets, cancel, tick);
            let mut placed = Words::with_room(self.room(&level) + 1)?;
            let mut starts = starts_for(sets)?;
            let (free, mut at) = (placed.spare(), 0);
            for (index, set) in subsets(self.sizes.n, k).enumerate() {
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
        let (k, full) = (level.k, self.sizes.full);
        let mut rest = set;
        while rest != 0 {
            let bit = rest & rest.wrapping_neg();
            rest ^= bit;
            let column = bit.trailing_zeros();
            let balance = self.sizes.balance(first + k, column);
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
        subsets(self.sizes.n, k)
            .map(|set| {
                give_way();
                level
                    .get(set)
                    .iter()
                    .map(|p| (self.sizes.full & !set & !p.ld & !p.rd).count_ones() as usize)
                    .sum::<usize>()
            })
            .sum()
    }

    /// A band's share of the half's word, from the diagonals it attacks on the row under
    /// the half (on odd boards the middle row), and its balance in the top byte's field (see
    /// [`Tail::half`]), laid out as `word.rs` says (the left-going field without its column
    /// 0, which nothing from above attacks on that row).
    fn share(&self, ld: u64, rd: u64, balance: i32) -> u64 {
        let full = u64::from(self.sizes.full);
        let field = (balance + BAND_BIAS) as u64;
        ((ld & full) >> 1) | ((rd & full) << right_field(self.sizes.n)) | (field << BALANCE_SHIFT)
    }

    /// The most halves any set of a half's columns can have before they are tested against
    /// each other: over every set of `m` columns, the sum over its head sets of the heads on
    /// them times the tails on the rest (the room [`Tables::halves`] asks for its list). A
    /// bound on a key's lists, printed with the memory model's figures (the test
    /// `memory_figures`, `tests/parts.rs`).
    #[cfg(test)]
    pub(super) fn list_bound(&self) -> usize {
        let (n, head, t) = (
            self.sizes.n,
            self.sizes.head,
            self.sizes.m - self.sizes.head,
        );
        let heads: Vec<usize> = subsets(n, head)
            .map(|set| self.heads.get(set).len() / 2)
            .collect();
        let tails: Vec<usize> = subsets(n, t).map(|set| self.tails.get(set).len()).collect();
        let mut most = 0;
        let mut places = [0u32; 24];
        for columns in subsets(n, self.sizes.m) {
            let mut rest = columns;
            for place in places.iter_mut().take(self.sizes.m as usize) {
                *place = rest & rest.wrapping_neg();
                rest ^= *place;
            }
            let mut sum = 0;
            for picks in subsets(self.sizes.m, head) {
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
