//! The join's tables and keys: the placements of each half's two bands of rows by the
//! columns they take ([`Join`]), built a row at a time, the keys (one per orbit of the two
//! mirrors, [`Key`]), and the building of a key's half words from them (with its AVX-512 and
//! AVX2 kernels). The pair counting lives in `sieve.rs`, the word layout in `word.rs`, the
//! tables' memory in `memory.rs`.

use super::memory::{Allowance, Words, peak_from_here};
#[cfg(target_arch = "x86_64")]
use super::sieve::compress_avx2;
use super::word::{BALANCE_SHIFT, BAND_BIAS};
use super::work::Work;
use crate::counts::CountError;
use crate::pool::give_way;
use crate::problem::Shard;
use crate::simd::{Tier, tier};
use std::sync::atomic::{AtomicBool, Ordering};

/// One key: the top half's columns, the middle queen's column on odd boards, and how many
/// keys the mirrors map onto this one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Key {
    /// Columns of the top half's queens.
    pub(super) top: u32,
    /// Columns of the bottom half's queens.
    bottom: u32,
    /// The middle row's queen (odd n).
    pub(super) middle: Option<u32>,
    /// Keys this one stands for (1, 2 or 4).
    pub(super) weight: u64,
}

/// The placements of one band of rows for every set of as many columns, `W` words each, in
/// one flat list cut by set: the set of colex rank r (among the sets of `k` of the board's
/// columns) has the entries `starts[r]..starts[r + 1]`. A lookup is a rank, no hashing, and a
/// count's table takes one allocation. The heads keep two words per placement side by side
/// (what a tail must not meet, and the head's share of the half's word), the tails one
/// ([`Tail`]).
#[derive(Debug, Default)]
struct Bands<const W: usize> {
    /// Columns per set: the band's rows.
    k: u32,
    starts: Vec<u32>,
    words: Words,
}

impl<const W: usize> Bands<W> {
    /// The words of the placements on exactly the columns `set` (of `k` columns).
    #[inline]
    fn get(&self, set: u32) -> &[u64] {
        let rank = rank(set, self.k);
        let (start, end) = (self.starts[rank] as usize, self.starts[rank + 1] as usize);
        &self.words[W * start..W * end]
    }
}

/// How a tail's one word keeps its placement, for a board of `n` columns and a tail of `t`
/// rows: its queens' diagonals traced back to the tail's first row, unmasked (those off the
/// board kept too), the up-left ones from bit 0 (shifted by `t` on odd boards, `t - 1` on
/// even ones) and the up-right ones from bit `n + t`; its balance, biased by [`TAIL_BIAS`],
/// from bit `BALANCE_SHIFT + 2t`. A head's test word marks the same traces, so the test is
/// one AND; and the tail's share of the half's word comes out of it by one shift and masks
/// ([`Tail::half`]): the traces continued down to the row under the half are the traces
/// themselves moved by the band's height. Half the bytes of a test word and a share word,
/// which matters because the tails' table is read afresh for every key.
#[derive(Clone, Copy, Debug)]
struct Tail {
    /// Bit of the up-left traces' column 0 (`t`, or `t - 1` on even boards).
    left: u32,
    /// Bit of the up-right traces' column 0 (`n + t`).
    right: u32,
    /// The shift that brings the up-right traces to the half word's right-going field and the
    /// balance to its balance field (`2t`).
    shift: u32,
    /// The half word's left-going field, as the up-left traces stand.
    low: u64,
    /// The half word's right-going field, after the shift.
    high: u64,
}

/// Offset of a tail's balance in its word's four bits (a tail has at most 6 queens).
const TAIL_BIAS: i32 = 8;

/// The balance field's bits a tail's word brings, after [`Tail`]'s shift.
const TAIL_BALANCE: u64 = 0xf << BALANCE_SHIFT;

impl Tail {
    /// The half word of a head's share `head` (its balance field biased for the tail's, see
    /// [`Join::new`]) and a tail's word: the diagonal fields ORed, the balances added.
    #[inline(always)]
    fn half(self, head: u64, word: u64) -> u64 {
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

    /// The middle queen's bits in a tail's word: a half whose tail has one attacks her.
    fn spare(self, n: u32, middle: Option<u32>) -> u64 {
        middle.map_or(0, |q| (1u64 << q) | (1u64 << (n + q + self.shift)))
    }
}

/// How many times [`Join::new`] calls its `tick` for size `n`: `n` times per row of each
/// band (the head's and the tail's, `n / 2` rows in all), spread over the sets as each row is
/// placed.
pub(super) fn build_steps(n: u32) -> u64 {
    u64::from(n) * u64::from(n / 2)
}

/// `BINOMIAL[p][j]` = p choose j, for the ranks of column sets (p < 32, j ≤ 12).
static BINOMIAL: [[u32; 13]; 32] = {
    let mut table = [[0u32; 13]; 32];
    let mut p = 0;
    while p < 32 {
        table[p][0] = 1;
        let mut j = 1;
        while j < 13 && j <= p {
            table[p][j] = table[p - 1][j - 1] + if j < p { table[p - 1][j] } else { 0 };
            j += 1;
        }
        p += 1;
    }
    table
};

/// `RANK_BYTES[c][j][b]`: what the bits of byte `b` add to a colex rank when it is byte `c`
/// of a set and `j` of the set's bits lie below it (the sum of `BINOMIAL[column][index]`
/// over its bits); 0 where an index would pass 12, which no band's set reaches.
static RANK_BYTES: [[[u32; 256]; 13]; 3] = {
    let mut table = [[[0u32; 256]; 13]; 3];
    let mut c = 0;
    while c < 3 {
        let mut j = 0;
        while j < 13 {
            let mut b = 0;
            while b < 256 {
                let (mut sum, mut index, mut bit) = (0, j + 1, 0);
                while bit < 8 {
                    if b & (1 << bit) != 0 {
                        if index <= 12 {
                            sum += BINOMIAL[8 * c + bit][index];
                        }
                        index += 1;
                    }
                    bit += 1;
                }
                table[c][j][b] = sum;
                b += 1;
            }
            j += 1;
        }
        c += 1;
    }
    table
};

/// The colex rank of `set` (columns below 24) among the sets of `k` columns: its place in
/// increasing order of the masks, the order [`subsets`] lists them in. Three lookups, one
/// per byte (building the tables ranks every placement twice).
#[inline]
fn rank(set: u32, k: u32) -> usize {
    debug_assert_eq!(set.count_ones(), k);
    debug_assert!(set < 1 << 24 && k <= 12);
    let (b0, b1, b2) = (set & 0xff, (set >> 8) & 0xff, set >> 16);
    let (j1, j2) = (b0.count_ones(), (set & 0xffff).count_ones());
    (RANK_BYTES[0][0][b0 as usize]
        + RANK_BYTES[1][j1 as usize][b1 as usize]
        + RANK_BYTES[2][j2 as usize][(b2 & 0xff) as usize]) as usize
}

/// The set of `k` columns whose colex rank ([`rank`]) is `rank`: column by column from the
/// highest, the highest whose sets of that many columns below it do not pass the rank.
fn unrank(mut rank: usize, k: u32) -> u32 {
    let mut set = 0;
    for j in (1..=k as usize).rev() {
        let mut column = j - 1;
        while BINOMIAL[column + 1][j] as usize <= rank {
            column += 1;
        }
        set |= 1 << column;
        rank -= BINOMIAL[column][j] as usize;
    }
    set
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

/// The tail's last queen on one column, for [`Join::tails`]: her column's bit, her traces in
/// a tail's word, and her balance where the word keeps it.
#[derive(Clone, Copy)]
struct Last {
    bit: u64,
    up: u64,
    balance: u64,
}

impl Last {
    /// Writes to `free` the tail words of the placements before (their words so far and the
    /// columns they attack on her row) that leave her column free, with her added, and
    /// returns how many; `free` has room for them and eight slots more.
    fn place(
        self,
        free: &mut [std::mem::MaybeUninit<u64>],
        words: &[u64],
        attacks: &[u64],
        tier: Tier,
    ) -> usize {
        match tier {
            #[cfg(target_arch = "x86_64")]
            // SAFETY: a join's tier comes from `tier()`, so the CPU has the AVX-512 tier's
            // features (see `simd.rs`).
            Tier::Avx512 => unsafe { self.place_avx512(free, words, attacks) },
            _ => self.place_portable(free, words, attacks),
        }
    }

    /// [`Last::place`] in plain Rust: every slot is written, and only fitting ones advance.
    fn place_portable(
        self,
        free: &mut [std::mem::MaybeUninit<u64>],
        words: &[u64],
        attacks: &[u64],
    ) -> usize {
        let mut added = 0;
        for (&word, &attack) in words.iter().zip(attacks) {
            free[added].write((word | self.up).wrapping_add(self.balance));
            added += usize::from(attack & self.bit == 0);
        }
        added
    }

    /// [`Last::place`] eight placements at a time, the fitting ones compressed in a register
    /// and stored whole.
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx512f,popcnt")]
    fn place_avx512(
        self,
        free: &mut [std::mem::MaybeUninit<u64>],
        words: &[u64],
        attacks: &[u64],
    ) -> usize {
        use std::arch::x86_64::*;
        let (bit, up, balance) = (
            _mm512_set1_epi64(self.bit as i64),
            _mm512_set1_epi64(self.up as i64),
            _mm512_set1_epi64(self.balance as i64),
        );
        let len = words.len().min(attacks.len());
        let mut added = 0;
        for at in (0..len).step_by(8) {
            let live = (0xffu32 >> (8 - (len - at).min(8))) as u8;
            // SAFETY: the masked loads read the words left from `at`, eight at most, of both
            // lists; the store writes eight slots from `added`, at most the placements kept
            // so far, within `free`'s room for all of them and eight more.
            unsafe {
                let word = _mm512_maskz_loadu_epi64(live, words.as_ptr().add(at).cast());
                let attack = _mm512_maskz_loadu_epi64(live, attacks.as_ptr().add(at).cast());
                let fits = _mm512_mask_testn_epi64_mask(live, attack, bit);
                let made = _mm512_add_epi64(_mm512_or_si512(word, up), balance);
                _mm512_storeu_si512(
                    free.as_mut_ptr().add(added).cast(),
                    _mm512_maskz_compress_epi64(fits, made),
                );
                added += fits.count_ones() as usize;
            }
        }
        added
    }
}

/// The tables one board size shares between its keys.
pub(super) struct Join {
    n: u32,
    /// Rows in each half.
    m: u32,
    /// Rows in the half's first band (the head); the rest of its rows are the tail.
    head: u32,
    /// All columns.
    full: u32,
    /// Placements of the head's rows, by the columns they take: the traces a tail's
    /// queens must not have ([`Tail`]), and the head's share of the half's word.
    heads: Bands<2>,
    /// Placements of the tail's rows (alone, as if the head were empty), by columns, one
    /// word each ([`Tail`]); each set's list padded with entries that fit no head to a whole
    /// number of SIMD registers.
    tails: Bands<1>,
    /// The layout of a tail's word.
    tail: Tail,
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

/// The sets of `k` of the `n` low bits (n < 32), in increasing order (Gosper's hack): the
/// masks of `0..2^n` with `k` bits, without walking the others.
fn subsets(n: u32, k: u32) -> impl Iterator<Item = u32> {
    let first = (1u64 << k.min(n)) - 1;
    let next = |&x: &u64| {
        let low = x & x.wrapping_neg();
        let carried = x + low;
        // `low` is 0 only for the empty set, the one set of no bits.
        // Dividing by `low` is shifting by its zeros, without a division's latency.
        (low != 0).then(|| (((carried ^ x) >> 2) >> low.trailing_zeros()) | carried)
    };
    std::iter::successors(Some(first), next)
        .take_while(move |&x| x < 1u64 << n)
        .map(|x| x as u32)
}

impl Join {
    /// The tables for size `n`, calling `tick` [`build_steps`] times on the way (see
    /// there); `Cancelled` if `cancel` is raised meanwhile.
    pub(super) fn new(n: u32, cancel: &AtomicBool, tick: &dyn Fn()) -> Result<Join, CountError> {
        let m = n / 2;
        let head = m / 2;
        let full = (1u32 << n) - 1;
        let t = m - head;
        let odd = !n.is_multiple_of(2);
        let tail = Tail {
            left: if odd { t } else { t - 1 },
            right: n + t,
            shift: 2 * t,
            low: u64::from(if odd { full } else { full >> 1 }),
            high: u64::from(full) << n,
        };
        let peak = peak_from_here();
        let mut join = Join {
            n,
            m,
            head,
            full,
            heads: Bands::default(),
            tails: Bands::default(),
            tail,
            peak_bytes: 0,
        };
        // A head's balance field is biased for the tail's bias to make the half's: each
        // band's balance plus BAND_BIAS.
        let bias = BAND_BIAS - TAIL_BIAS;
        let heads = join.heads(cancel, tick, |p| {
            let (ld, rd) = (u64::from(p.ld), u64::from(p.rd));
            let share = join.share(ld << t, rd >> t, p.balance + bias);
            [(ld << tail.left) | (rd << tail.right), share]
        })?;
        let tails = join.tails(cancel, tick, tier())?;
        join.heads = heads;
        join.tails = tails;
        join.peak_bytes = peak();
        Ok(join)
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
    /// [`Tail::half`]). On even boards the field of the right-going diagonals is taken one row
    /// up, which makes a top half's word and a mirrored top half's comparable as they are.
    fn share(&self, ld: u64, rd: u64, balance: i32) -> u64 {
        let full = u64::from(self.full);
        let ld = if self.n.is_multiple_of(2) {
            (ld & full) >> 1
        } else {
            ld & full
        };
        let field = (balance + BAND_BIAS) as u64;
        ld | ((rd & full) << self.n) | (field << BALANCE_SHIFT)
    }

    /// +1 for a square strictly between the two long diagonals above or below the centre,
    /// -1 for one left or right of the centre, 0 on a long diagonal. Mirrors keep it; the
    /// transposes negate it.
    fn balance(&self, row: u32, column: u32) -> i32 {
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

    /// The keys of size `n`, one per orbit of the two mirrors, in a fixed order (no tables
    /// needed).
    #[cfg(test)]
    pub(super) fn keys(n: u32) -> Vec<Key> {
        Join::shard_keys(n, 0, Shard::WHOLE)
    }

    /// Those of [`Join::keys`] whose place in their order, counted from `offset`, `shard`
    /// holds ([`Shard::holds`]), in that order. The keys of a middle queen left of the centre
    /// are picked by their place alone, without walking the others.
    #[cfg(test)]
    pub(super) fn shard_keys(n: u32, offset: usize, shard: Shard) -> Vec<Key> {
        let mut keys = Vec::new();
        Join::walk_keys(n, offset, shard, &mut keys);
        keys
    }

    /// [`Join::shard_keys`] into `keys`, which has room for them all (so that a count's list
    /// of keys, tens of MiB at n = 24, is allocated once, where a failure is an error).
    pub(super) fn shard_keys_into(n: u32, offset: usize, shard: Shard, keys: &mut Vec<Key>) {
        Join::walk_keys(n, offset, shard, keys);
    }

    /// How many keys size `n` has (walked once per size in the process, then remembered;
    /// n = 24: a few milliseconds, nothing allocated).
    pub(super) fn key_count(n: u32) -> usize {
        static COUNTS: std::sync::Mutex<[Option<usize>; 33]> = std::sync::Mutex::new([None; 33]);
        if let Some(count) = crate::sync::lock(&COUNTS)[n as usize] {
            return count;
        }
        // A shard that holds only the first key: the walk's end is the count.
        let first_only = Shard {
            index: 0,
            count: u32::MAX,
        };
        let count = Join::walk_keys(n, 0, first_only, &mut Vec::new());
        crate::sync::lock(&COUNTS)[n as usize] = Some(count);
        count
    }

    /// Pushes [`Join::shard_keys`] to `keys`, and says where the keys' places end (`offset`
    /// plus their number).
    fn walk_keys(n: u32, offset: usize, shard: Shard, keys: &mut Vec<Key>) -> usize {
        let (m, full) = (n / 2, (1u32 << n) - 1);
        let mirror = |columns: u32| columns.reverse_bits() >> (32 - n);
        let middles: Vec<Option<u32>> = if n.is_multiple_of(2) {
            vec![None]
        } else {
            (0..n).map(Some).collect()
        };
        let mut index = offset;
        for middle in middles {
            // The sets of m of the other columns: those of n (or n - 1) bits, the middle
            // queen's column left out by moving the bits above it up one.
            let (others, q) = middle.map_or((n, n), |q| (n - 1, q));
            // A middle queen right of the centre has a mirror image left of it, which
            // comes first: no key has her there.
            if middle.is_some_and(|q| n - 1 - q < q) {
                continue;
            }
            let below = (1u32 << q) - 1;
            let taken = middle.map_or(0, |q| 1 << q);
            let halves = |set: u32| {
                let top = (set & below) | ((set & !below) << u32::from(middle.is_some()));
                (top, full & !top & !taken)
            };
            // A top half on the highest of the other columns is larger than its bottom half
            // (its complement among them), which comes first: the sets without that column
            // are all the keys can be, in the same order.
            let size = others.saturating_sub(1);
            if middle.is_some_and(|q| q < n - 1 - q) {
                // Left of the centre every such set is a key standing for four: its images
                // have the bottom half on top, or the middle queen right of the centre.
                let sets = BINOMIAL[size as usize][m as usize] as usize;
                let parts = shard.parts() as usize;
                if (shard.index as usize) < parts {
                    let first = index + (shard.index as usize + parts - index % parts) % parts;
                    for at in (first..index + sets).step_by(parts) {
                        let (top, bottom) = halves(unrank(at - index, m));
                        keys.push(Key {
                            top,
                            bottom,
                            middle,
                            weight: 4,
                        });
                    }
                }
                index += sets;
                continue;
            }
            for set in subsets(size, m) {
                let (top, bottom) = halves(set);
                let flipped = middle.map(|q| n - 1 - q);
                let images = [
                    (middle, top),
                    (middle, bottom),
                    (flipped, mirror(top)),
                    (flipped, mirror(bottom)),
                ];
                if images.iter().any(|&image| image < (middle, top)) {
                    continue;
                }
                if shard.holds(index) {
                    let same = images
                        .iter()
                        .filter(|&&image| image == (middle, top))
                        .count();
                    keys.push(Key {
                        top,
                        bottom,
                        middle,
                        weight: (4 / same) as u64,
                    });
                }
                index += 1;
            }
        }
        index
    }

    /// The fitting pairs of halves of `key`, its lists in `work`; `Cancelled` if `cancel` is
    /// raised meanwhile, `OutOfMemory` if its two lists and the room to sort them do not fit
    /// `work`'s allowance (the sieve makes do with whatever is left: see `Sieve::count`).
    pub(super) fn pairs(
        &self,
        key: &Key,
        tier: Tier,
        cancel: &AtomicBool,
        work: &mut Work,
    ) -> Result<u64, CountError> {
        let Work {
            tops,
            bottoms,
            scratch,
            sieve,
            allowance,
        } = work;
        let mut made = self
            .halves(key.top, key.middle, tier, tops, allowance)
            .and_then(|()| self.halves(key.bottom, key.middle, tier, bottoms, allowance));
        if made.is_err() {
            // The room the sieve and the sort kept from other keys goes to this one's lists
            // first; the sieve makes do with what is left.
            sieve.release(allowance);
            allowance.release(scratch);
            made = self
                .halves(key.top, key.middle, tier, tops, allowance)
                .and_then(|()| self.halves(key.bottom, key.middle, tier, bottoms, allowance));
        }
        made?;
        if tops.is_empty() || bottoms.is_empty() {
            return Ok(0);
        }
        let n = self.n;
        let low = (1u64 << n) - 1;
        let fields = (1u64 << (2 * n)) - 1;
        for y in bottoms.iter_mut() {
            let balance = *y >> BALANCE_SHIFT;
            let diagonals = *y & fields;
            *y = (diagonals >> n) | ((diagonals & low) << n) | (balance << (BALANCE_SHIFT + 8));
        }
        // Both lists in order of balance; the splits keep that order.
        sort_by_byte(tops, BALANCE_SHIFT, scratch, allowance)?;
        sort_by_byte(bottoms, BALANCE_SHIFT + 8, scratch, allowance)?;
        sieve.reset(key.middle.map_or(0, |q| self.balance(self.m, q)), tier);
        let pairs = sieve.count(tops, bottoms, 0, cancel, allowance);
        if cancel.load(Ordering::Relaxed) {
            return Err(CountError::Cancelled);
        }
        Ok(pairs)
    }

    /// Fills `out` with the top halves on exactly `columns` (and at peace with the middle
    /// queen), as the word the rows below see: attacked diagonals on the next row, one field
    /// per direction; `out` grows within `allowance` (`OutOfMemory` past it). Gives way to
    /// other pool jobs between the head's sets ([`give_way`]).
    fn halves(
        &self,
        columns: u32,
        middle: Option<u32>,
        tier: Tier,
        out: &mut Vec<u64>,
        allowance: &mut Allowance,
    ) -> Result<(), CountError> {
        out.clear();
        // A half attacks the middle queen when its word has her column in either field: a
        // head's share or a tail's word with her bits.
        let spare = middle.map_or(0, |q| (1u64 << q) | (1u64 << (q + self.n)));
        let ends = [spare, self.tail.spare(self.n, middle)];
        // The head's sets: each of the key's columns' sets of `head` of them.
        let mut places = [0u32; 24];
        let mut rest = columns;
        for place in places.iter_mut().take(self.m as usize) {
            *place = rest & rest.wrapping_neg();
            rest ^= *place;
        }
        let mut firsts = [0u32; 924];
        let mut count = 0;
        for picks in subsets(self.m, self.head) {
            let (mut first, mut picked) = (0, picks);
            while picked != 0 {
                first |= places[picked.trailing_zeros() as usize];
                picked &= picked - 1;
            }
            firsts[count] = first;
            count += 1;
        }
        // The bands two pairs ahead are asked for while these are joined: for a key far
        // from the last one (a shard's keys are), they are in no cache near the core.
        const AHEAD: usize = 2;
        for (at, &first) in firsts[..count].iter().enumerate() {
            // Every few dozen sets (n = 24: a few milliseconds), not every one: the check
            // costs a percent in this loop.
            if at % 32 == 31 {
                give_way();
            }
            if let Some(&next) = firsts[..count].get(at + AHEAD) {
                prefetch(self.heads.get(next));
                prefetch(self.tails.get(columns & !next));
            }
            let heads = self.heads.get(first);
            if !heads.is_empty() {
                let tails = self.tails.get(columns & !first);
                if !tails.is_empty() {
                    // A register's worth more: the SIMD kernels store whole registers.
                    allowance.reserve(out, heads.len() / 2 * tails.len() + 8)?;
                    extend(out, heads, tails, ends, self.tail, tier);
                }
            }
        }
        Ok(())
    }
}

/// Asks the CPU to bring `words` into its nearest cache (a hint; nothing off x86-64).
#[inline(always)]
fn prefetch(words: &[u64]) {
    #[cfg(target_arch = "x86_64")]
    for line in words.chunks(8) {
        use std::arch::x86_64::{_MM_HINT_T0, _mm_prefetch};
        // SAFETY: SSE is part of every x86-64 CPU; a prefetch reads nothing and cannot fault.
        unsafe { _mm_prefetch::<_MM_HINT_T0>(line.as_ptr().cast()) };
    }
    let _ = words;
}

/// Sorts `words` by their byte from bit `shift` on, keeping the order of words with the same
/// byte (a counting sort: the balances take a few dozen values, and the lists are long),
/// `scratch` lent for the pass (grown within `allowance`).
fn sort_by_byte(
    words: &mut Vec<u64>,
    shift: u32,
    scratch: &mut Vec<u64>,
    allowance: &mut Allowance,
) -> Result<(), CountError> {
    let byte = |word: u64| ((word >> shift) & 0xff) as usize;
    let mut starts = [0usize; 256];
    for &word in words.iter() {
        starts[byte(word)] += 1;
    }
    let mut at = 0;
    for start in starts.iter_mut() {
        (*start, at) = (at, at + *start);
    }
    scratch.clear();
    allowance.reserve(scratch, words.len())?;
    // Every slot is written once (the starts cut the list's length into one range per
    // byte), so nothing is zeroed first.
    let free = &mut scratch.spare_capacity_mut()[..words.len()];
    for &word in words.iter() {
        let slot = &mut starts[byte(word)];
        free[*slot].write(word);
        *slot += 1;
    }
    // SAFETY: the words' slots are the ranges the starts cut `0..words.len()` into, one
    // word to a slot, so each of the first `words.len()` slots was written above.
    unsafe { scratch.set_len(words.len()) };
    std::mem::swap(words, scratch);
    Ok(())
}

/// Appends to `out` the halves made of a head of `heads` (its test word and share side by
/// side, but those whose share has bits of `spare[0]`, the middle queen's, which no half may
/// have) and a tail of `tails` that fits it (and has no bits of `spare[1]`, hers in a tail's
/// word); `out` has room for every pair and a register more.
fn extend(
    out: &mut Vec<u64>,
    heads: &[u64],
    tails: &[u64],
    spare: [u64; 2],
    tail: Tail,
    tier: Tier,
) {
    let room = heads.len() / 2 * tails.len() + 8;
    debug_assert!(out.capacity() - out.len() >= room);
    let start = out.len();
    let free = &mut out.spare_capacity_mut()[..room];
    let added = match tier {
        #[cfg(target_arch = "x86_64")]
        // SAFETY: a join's tier comes from `tier()` (tests: from `Tier::available`), so the CPU
        // has the AVX-512 tier's features (see `simd.rs`).
        Tier::Avx512 => unsafe { each_head_avx512(free, heads, tails, spare, tail) },
        #[cfg(target_arch = "x86_64")]
        // SAFETY: as for `Tier::Avx512`: the CPU has the AVX2 tier's features.
        Tier::Avx2 => unsafe { each_head_avx2(free, heads, tails, spare, tail) },
        _ => each_head(free, heads, tails, spare, tail, extend_portable),
    };
    // SAFETY: the first `added` slots after `start` were written just now.
    unsafe { out.set_len(start + added) };
}

/// What a head brings to [`extend`]'s loop over the tails: the bits a fitting tail's word
/// lacks (the head's traces and the middle queen's), and the head's share.
type Head = [u64; 2];

/// [`extend`]'s loop over the heads, each head's halves written by `one` (which writes at
/// most `tails`' length of slots, and returns how many it kept) after those kept before.
#[inline(always)]
fn each_head(
    free: &mut [std::mem::MaybeUninit<u64>],
    heads: &[u64],
    tails: &[u64],
    [spare, spare_tail]: [u64; 2],
    tail: Tail,
    one: impl Fn(&mut [std::mem::MaybeUninit<u64>], Head, &[u64], Tail) -> usize,
) -> usize {
    let mut added = 0;
    for head in heads.chunks_exact(2) {
        let (test, share) = (head[0], head[1]);
        if share & spare == 0 {
            // At most one head's worth of slots was kept per head before, so the rest of
            // `free` has room for this one's and a register more.
            added += one(&mut free[added..], [test | spare_tail, share], tails, tail);
        }
    }
    added
}

/// [`each_head`] with the AVX-512 kernel, compiled for it (the kernel inlined).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,popcnt")]
fn each_head_avx512(
    free: &mut [std::mem::MaybeUninit<u64>],
    heads: &[u64],
    tails: &[u64],
    spare: [u64; 2],
    tail: Tail,
) -> usize {
    each_head(
        free,
        heads,
        tails,
        spare,
        tail,
        |free, head, tails, tail| extend_avx512(free, head, tails, tail),
    )
}

/// [`each_head`] with the AVX2 kernel, compiled for it (the kernel inlined).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,popcnt")]
fn each_head_avx2(
    free: &mut [std::mem::MaybeUninit<u64>],
    heads: &[u64],
    tails: &[u64],
    spare: [u64; 2],
    tail: Tail,
) -> usize {
    each_head(
        free,
        heads,
        tails,
        spare,
        tail,
        |free, head, tails, tail| extend_avx2(free, head, tails, tail),
    )
}

/// [`extend`]'s loop in plain Rust: every slot is written, and only fitting tails advance.
fn extend_portable(
    free: &mut [std::mem::MaybeUninit<u64>],
    [meets, share]: Head,
    tails: &[u64],
    tail: Tail,
) -> usize {
    let mut added = 0;
    for &word in tails {
        free[added].write(tail.half(share, word));
        added += usize::from(meets & word == 0);
    }
    added
}

/// [`extend`]'s loop eight tails at a time, the fitting ones compressed in a register and
/// stored whole.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,popcnt")]
#[inline]
fn extend_avx512(
    free: &mut [std::mem::MaybeUninit<u64>],
    [meets, share]: Head,
    tails: &[u64],
    tail: Tail,
) -> usize {
    use std::arch::x86_64::*;
    let len = tails.len();
    let (m, h) = (
        _mm512_set1_epi64(meets as i64),
        _mm512_set1_epi64(share as i64),
    );
    let (low, high, balance) = (
        _mm512_set1_epi64(tail.low as i64),
        _mm512_set1_epi64(tail.high as i64),
        _mm512_set1_epi64(TAIL_BALANCE as i64),
    );
    let shift = _mm_cvtsi32_si128(tail.shift as i32);
    let whole = len / 8 * 8;
    let mut added = 0;
    let mut one = |word: __m512i, fits: __mmask8, added: usize| {
        // As in [`Tail::half`].
        let shifted = _mm512_srl_epi64(word, shift);
        let half = _mm512_or_si512(
            _mm512_add_epi64(h, _mm512_and_si512(shifted, balance)),
            _mm512_or_si512(_mm512_and_si512(word, low), _mm512_and_si512(shifted, high)),
        );
        // SAFETY: eight words go to `free[added..]`, and `added` is at most the tails
        // before these, fewer than `len`, so they stay within its `len + 8` slots (see
        // `each_head`).
        unsafe {
            _mm512_storeu_si512(
                free.as_mut_ptr().add(added).cast(),
                _mm512_maskz_compress_epi64(fits, half),
            )
        };
        fits.count_ones() as usize
    };
    for at in (0..whole).step_by(8) {
        // SAFETY: `at + 8 <= len`; an unaligned load.
        let word = unsafe { _mm512_loadu_si512(tails.as_ptr().add(at).cast()) };
        added += one(word, _mm512_testn_epi64_mask(m, word), added);
    }
    if whole < len {
        let live = (0xffu32 >> (8 - (len - whole))) as u8;
        // SAFETY: the masked load reads the `len - whole` words left, fewer than eight.
        let word = unsafe { _mm512_maskz_loadu_epi64(live, tails.as_ptr().add(whole).cast()) };
        added += one(word, _mm512_mask_testn_epi64_mask(live, m, word), added);
    }
    added
}

/// [`extend`]'s loop four tails at a time, the fitting ones moved to the register's front
/// by a permutation ([`compress_avx2`]) and the register stored whole.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,popcnt")]
#[inline]
fn extend_avx2(
    free: &mut [std::mem::MaybeUninit<u64>],
    [meets, share]: Head,
    tails: &[u64],
    tail: Tail,
) -> usize {
    use std::arch::x86_64::*;
    let len = tails.len();
    let whole = len / 4 * 4;
    let (m, h) = (
        _mm256_set1_epi64x(meets as i64),
        _mm256_set1_epi64x(share as i64),
    );
    let (low, high, balance) = (
        _mm256_set1_epi64x(tail.low as i64),
        _mm256_set1_epi64x(tail.high as i64),
        _mm256_set1_epi64x(TAIL_BALANCE as i64),
    );
    let shift = _mm_cvtsi32_si128(tail.shift as i32);
    let zero = _mm256_setzero_si256();
    let mut added = 0;
    for at in (0..whole).step_by(4) {
        // SAFETY: `at + 4 <= len`; an unaligned load.
        let word = unsafe { _mm256_loadu_si256(tails.as_ptr().add(at).cast()) };
        let fits = _mm256_cmpeq_epi64(_mm256_and_si256(m, word), zero);
        let fits = _mm256_movemask_pd(_mm256_castsi256_pd(fits)) as usize;
        // As in [`Tail::half`].
        let shifted = _mm256_srl_epi64(word, shift);
        let half = _mm256_or_si256(
            _mm256_add_epi64(h, _mm256_and_si256(shifted, balance)),
            _mm256_or_si256(_mm256_and_si256(word, low), _mm256_and_si256(shifted, high)),
        );
        // SAFETY: four words go to `free[added..]`, and `added <= at`, so they stay within
        // its `len` slots.
        unsafe {
            _mm256_storeu_si256(
                free.as_mut_ptr().add(added).cast(),
                compress_avx2(half, fits),
            )
        };
        added += fits.count_ones() as usize;
    }
    added + extend_portable(&mut free[added..], [meets, share], &tails[whole..], tail)
}

#[cfg(test)]
mod tests {
    use super::{BALANCE_SHIFT, BAND_BIAS, Join, TAIL_BIAS, rank, subsets, unrank};
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

    #[test]
    fn ranks_number_the_sets_in_the_order_they_are_listed() {
        for n in [4, 9, 16, 19, 24] {
            for k in 1..=6.min(n) {
                for (i, set) in subsets(n, k).enumerate() {
                    assert_eq!(rank(set, k), i, "n = {n}, k = {k}, set = {set:#b}");
                    assert_eq!(unrank(i, k), set, "n = {n}, k = {k}, rank = {i}");
                }
            }
        }
    }
}
