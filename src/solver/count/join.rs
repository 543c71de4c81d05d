//! Count's path for whole plain boards from n = 16 on (with AVX-512): solutions counted by
//! joining half boards instead of searching whole ones. The top half's placements are listed
//! per set of columns, and the solutions are the pairs of a top half and a bottom half (the
//! mirror image of another top half) on complementary columns whose diagonals do not meet.
//!
//! Every placement of the top `m = n / 2` rows is summed up by what the rows below can see of
//! it: the diagonals it attacks on the row under it (odd n: on the middle row, whose queen is
//! part of the key). A pair of halves fits exactly when those masks, one half's against the
//! other's mirrored, have no bit in common, so a key's count is the number of disjoint pairs
//! of two lists of 64-bit words. The lists are split recursively, each block on the bit that
//! most pairs of a small sample share (pairs that share a bit are never compared; the longer
//! block is split, the shorter one goes on whole), and the small blocks left are compared
//! pair by pair, eight pairs per instruction in AVX-512 registers. Keys that the board's up-down and
//! left-right mirrors map onto each other are counted once, weighted; the two transposes are
//! taken out by weighing each pair by the balance between the board's four triangles
//! ([`Sieve`]), which spares about 40% of the comparisons. Symmetry classes come at the end
//! from fixed points: the solutions a half or a quarter turn maps to themselves are counted by
//! a small search of their own ([`turn_fixed_from`]).
//!
//! Memory stays small: a half's words are built per key from two shared tables (placements
//! of the half's first rows and of its last rows, by columns), into lists each thread keeps
//! from key to key.
//!
//! Here: the keys, the tables, the pair counting and the turn-fixed search, as Count's
//! subproblems ([`parts`]). Not here: Count's engines, progress and cancellation (`mod.rs`,
//! which also keeps shards and fixed queens on the border constellations: a shard of keys has
//! no classes of its own), the backtracking searches (`board.rs`, `lanes.rs`).

use super::{Partial, Registers, Subproblem};
use crate::solver::CountError;
use crate::solver::geometry::Square;
use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

/// Count takes this path for whole plain boards from this size on, where it counts faster
/// than the border constellations (measured with `cargo bench --bench count`, 2 threads:
/// n = 16 0.19 s against 0.42 s, n = 17 2.0 s against 2.4 s, n = 18 4.4 s against 19.6 s).
const FROM: u32 = 16;

/// The largest size the join takes: the words would hold n = 23 (two fields of n bits under
/// the balances' bytes), but the tables grow about fourfold per size (`queens count N
/// --local`'s peak RSS: n = 21 111 MiB, n = 22 422 MiB), so n = 23 would pass 1 GiB
/// (extrapolated, not measured).
const MAX: u32 = 22;

/// Whether Count takes the join path for a whole plain board of size `n` on this CPU: only
/// with AVX-512 (the join's AVX2 and portable tiers are tested but were not measured against
/// the constellations' lanes on such CPUs).
pub(super) fn covers(n: u32) -> bool {
    (FROM..=MAX).contains(&n) && super::registers() == Some(Registers::Avx512)
}

/// Count's subproblems for a whole plain board of size `n`: the turn-fixed solutions, one
/// per column of the first row's queen, then one per key; `Cancelled` if `cancel` is raised
/// while the tables are built.
pub(super) fn parts(n: u32, cancel: &AtomicBool) -> Result<Vec<Part>, CountError> {
    let join = Arc::new(Join::new(n, cancel)?);
    let tier = tier_of(super::registers());
    let keys = join.keys();
    let mut parts = Vec::with_capacity(keys.len() + n as usize);
    parts.extend((0..n).map(Part::Turns));
    parts.extend(
        keys.into_iter()
            .map(|key| Part::Key(join.clone(), key, tier)),
    );
    Ok(parts)
}

/// A subproblem of Count's join path.
pub(super) enum Part {
    /// The solutions that a half turn or a quarter turn maps to themselves, with the first
    /// row's queen on this column, as fixed points for the classes (half + 2 × quarter).
    Turns(u32),
    /// One key's solutions: its weighted pairs times the key's weight.
    Key(Arc<Join>, Key, Tier),
}

impl Subproblem for Part {
    fn queens(&self) -> &[Square] {
        &[]
    }

    /// Never called: the parts are not laned.
    fn weigh(&self, _: u64) -> Result<Partial, CountError> {
        Err(CountError::Failed)
    }

    fn laned(&self) -> bool {
        false
    }

    fn alone(&self, n: u32, cancel: &AtomicBool) -> Result<Partial, CountError> {
        if cancel.load(Ordering::Relaxed) {
            return Err(CountError::Cancelled);
        }
        match self {
            &Part::Turns(first) => {
                let (half, quarter) = turn_fixed_from(n, first, cancel)?;
                let points = quarter
                    .checked_mul(2)
                    .and_then(|q| q.checked_add(half))
                    .ok_or(CountError::Overflow)?;
                Ok(Partial {
                    solutions: 0,
                    classes: points,
                })
            }
            Part::Key(join, key, tier) => Ok(Partial {
                solutions: join
                    .pairs(key, *tier)
                    .checked_mul(key.weight)
                    .ok_or(CountError::Overflow)?,
                classes: 0,
            }),
        }
    }
}

/// Two blocks of `x` and `y` words are compared pair by pair instead of split when
/// `x * y < SPLIT * (x + y)`: a split passes over both blocks to spare a share of their
/// pairs, which pays only while the pairs outnumber the words by enough (n = 22, three
/// shards of 1/16,000 of the keys, one thread: 96 to 256 cost the same within noise, 64
/// and below more).
const SPLIT: usize = 128;

/// Where a top half's balance field starts; a bottom half's is a byte higher, so that the
/// two never meet in a pair test. The diagonal fields end below bit 44 (n ≤ 22).
const BALANCE_SHIFT: u32 = 48;

/// Offset of a band's balance in its field (a band has at most 5 queens, a half 10).
const BAND_BIAS: i32 = 32;

/// Words of each block whose bits choose its split (a spread sample).
const SAMPLE: usize = 32;

/// How the pair tests of the blocks run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Tier {
    /// Eight pairs per instruction in AVX-512 registers.
    Avx512,
    /// The portable loop compiled for AVX2.
    Avx2,
    /// The portable loop, whatever the CPU.
    Portable,
}

/// The pair tests' tier for `registers` (`None`: the portable loop).
fn tier_of(registers: Option<Registers>) -> Tier {
    match registers {
        Some(Registers::Avx512) => Tier::Avx512,
        Some(Registers::Avx2) => Tier::Avx2,
        None => Tier::Portable,
    }
}

/// The join's solutions for `n` (4 ≤ n ≤ 22), or for one shard of its keys, on the calling
/// thread with the pair tests in `tier` (the tests' way in; Count runs the keys as its
/// subproblems).
#[cfg(test)]
fn total_in(n: u32, shard: crate::solver::Shard, tier: Tier) -> Result<u64, CountError> {
    assert!((4..=MAX).contains(&n), "the join counter covers n = 4..=22");
    let join = Join::new(n, &AtomicBool::new(false))?;
    let parts = shard.parts() as usize;
    let mut total = 0u64;
    for key in join
        .keys()
        .into_iter()
        .skip(shard.index as usize)
        .step_by(parts)
    {
        let pairs = join.pairs(&key, tier);
        let weighted = pairs.checked_mul(key.weight).ok_or(CountError::Overflow)?;
        total = total.checked_add(weighted).ok_or(CountError::Overflow)?;
    }
    Ok(total)
}

/// One key: the top half's columns, the middle queen's column on odd boards, and how many
/// keys the mirrors map onto this one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Key {
    /// Columns of the top half's queens.
    top: u32,
    /// Columns of the bottom half's queens.
    bottom: u32,
    /// The middle row's queen (odd n).
    middle: Option<u32>,
    /// Keys this one stands for (1, 2 or 4).
    weight: u64,
}

/// Placements of a band of rows that take the same columns, as two parallel lists: what
/// the other band of the half must not meet, and what the band adds to the half's word.
#[derive(Debug, Default)]
struct Band {
    /// Per placement: the word tested against the other band's.
    test: Vec<u64>,
    /// Per placement: its share of the half's word (the halves' words are ORs of shares).
    share: Vec<u64>,
}

/// A partial placement of a band's rows, for [`Join::place`].
#[derive(Clone, Copy)]
struct Placed {
    /// Rows placed.
    row: u32,
    cols: u32,
    /// Diagonals attacked on the next row.
    ld: u64,
    rd: u64,
    /// Diagonals traced back to the band's first row.
    seen: u64,
    /// Sum of the placed squares' balances.
    balance: i32,
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
    /// Placements of the head's rows, by the columns they take.
    heads: HashMap<u32, Band>,
    /// Placements of the tail's rows (alone, as if the head were empty), by columns.
    tails: HashMap<u32, Band>,
}

impl Join {
    /// The tables for size `n` (n = 22: 3.4 s); `Cancelled` if `cancel` is raised meanwhile.
    fn new(n: u32, cancel: &AtomicBool) -> Result<Join, CountError> {
        let m = n / 2;
        let head = m / 2;
        let full = (1u32 << n) - 1;
        let mut join = Join {
            n,
            m,
            head,
            full,
            heads: HashMap::new(),
            tails: HashMap::new(),
        };
        let mut heads = HashMap::new();
        join.place(0, head, cancel, &mut |cols, ld, rd, _, balance| {
            let share = join.share(ld << (m - head), rd >> (m - head), balance);
            heads
                .entry(cols)
                .or_insert_with(Band::default)
                .push(join.head_test(ld, rd), share);
        });
        let mut tails = HashMap::new();
        join.place(
            head,
            m - head,
            cancel,
            &mut |cols, ld, rd, seen, balance| {
                tails
                    .entry(cols)
                    .or_insert_with(Band::default)
                    .push(seen, join.share(ld, rd, balance));
            },
        );
        if cancel.load(Ordering::Relaxed) {
            return Err(CountError::Cancelled);
        }
        join.heads = heads;
        join.tails = tails;
        Ok(join)
    }

    /// The head's test word: the diagonals it attacks on the tail's first row.
    fn head_test(&self, ld: u64, rd: u64) -> u64 {
        let full = u64::from(self.full);
        (ld & full) | ((rd & full) << self.n)
    }

    /// A band's share of the half's word, from the diagonals it attacks on the row under
    /// the half (on odd boards the middle row), and its balance in the top byte's field (see
    /// [`combine`]). On even boards the field of the right-going diagonals is taken one row
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

    /// Calls `found` with every placement of the `rows` rows from board row `first` on, as
    /// if no row above held a queen: its columns, the diagonals it attacks on the row under
    /// it, the word of what the rows above would have to avoid (its queens' diagonals traced
    /// back to row `first`), and its balance (the sum of [`Join::balance`]). Stops early, with
    /// placements left out, once `cancel` is raised.
    fn place(
        &self,
        first: u32,
        rows: u32,
        cancel: &AtomicBool,
        found: &mut impl FnMut(u32, u64, u64, u64, i32),
    ) {
        let start = Placed {
            row: 0,
            cols: 0,
            ld: 0,
            rd: 0,
            seen: 0,
            balance: 0,
        };
        self.place_from(first, rows, start, cancel, found);
    }

    /// [`Join::place`] from a partial placement.
    fn place_from(
        &self,
        first: u32,
        rows: u32,
        at: Placed,
        cancel: &AtomicBool,
        found: &mut impl FnMut(u32, u64, u64, u64, i32),
    ) {
        let Placed {
            row,
            cols,
            ld,
            rd,
            seen,
            balance,
        } = at;
        if row == rows {
            found(cols, ld, rd, seen, balance);
            return;
        }
        // Polled on the first two rows: a few hundred times per table.
        if row <= 1 && cancel.load(Ordering::Relaxed) {
            return;
        }
        let full = u64::from(self.full);
        let mut free = self.full & !cols & !(ld as u32) & !(rd as u32);
        while free != 0 {
            let bit = free & free.wrapping_neg();
            free ^= bit;
            let b = u64::from(bit);
            // Traced back `row` rows to the band's first row: up-left and up-right.
            let up_left = (b >> row) & full;
            let up_right = (b << row) & full;
            let next = Placed {
                row: row + 1,
                cols: cols | bit,
                ld: ((ld | b) << 1) & full,
                rd: (rd | b) >> 1,
                seen: seen | up_left | (up_right << self.n),
                balance: balance + self.balance(first + row, bit.trailing_zeros()),
            };
            self.place_from(first, rows, next, cancel, found);
        }
    }

    /// The keys, one per orbit of the two mirrors, in a fixed order.
    fn keys(&self) -> Vec<Key> {
        let (n, m, full) = (self.n, self.m, self.full);
        let mirror = |columns: u32| columns.reverse_bits() >> (32 - n);
        let middles: Vec<Option<u32>> = if n.is_multiple_of(2) {
            vec![None]
        } else {
            (0..n).map(Some).collect()
        };
        let mut keys = Vec::new();
        for middle in middles {
            let taken = middle.map_or(0, |q| 1 << q);
            for top in 0..=full {
                if top.count_ones() != m || top & taken != 0 {
                    continue;
                }
                let bottom = full & !top & !taken;
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
        }
        keys
    }

    /// The fitting pairs of halves of `key`.
    fn pairs(&self, key: &Key, tier: Tier) -> u64 {
        thread_local! {
            /// Each thread's lists and sieve, kept from key to key (no allocation per key).
            static WORK: std::cell::RefCell<(Vec<u64>, Vec<u64>, Sieve)> =
                std::cell::RefCell::new((Vec::new(), Vec::new(), Sieve::new(0, Tier::Portable)));
        }
        WORK.with_borrow_mut(|(tops, bottoms, sieve)| {
            self.halves(key.top, key.middle, tier, tops);
            self.halves(key.bottom, key.middle, tier, bottoms);
            if tops.is_empty() || bottoms.is_empty() {
                return 0;
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
            tops.sort_unstable_by_key(|&x| x >> BALANCE_SHIFT);
            bottoms.sort_unstable_by_key(|&y| y >> (BALANCE_SHIFT + 8));
            sieve.middle = key.middle.map_or(0, |q| self.balance(self.m, q));
            sieve.tier = tier;
            sieve.count(tops, bottoms, 0)
        })
    }

    /// Fills `out` with the top halves on exactly `columns` (and at peace with the middle
    /// queen), as the word the rows below see: attacked diagonals on the next row, one field
    /// per direction.
    fn halves(&self, columns: u32, middle: Option<u32>, tier: Tier, out: &mut Vec<u64>) {
        out.clear();
        // A half attacks the middle queen when its word has her column in either field.
        let spare = middle.map_or(0, |q| (1u64 << q) | (1u64 << (q + self.n)));
        let mut first = columns;
        loop {
            if first.count_ones() == self.head
                && let Some(head) = self.heads.get(&first)
                && let Some(tail) = self.tails.get(&(columns & !first))
            {
                for (&test, &share) in head.test.iter().zip(&head.share) {
                    if share & spare == 0 {
                        extend(out, [test, share, spare], tail, tier);
                    }
                }
            }
            if first == 0 {
                break;
            }
            first = (first - 1) & columns;
        }
    }
}

/// Appends to `out` the halves made of one head (its test word and its share, and the
/// middle queen's bits, which no tail may have) and every tail of `tail` that fits it.
fn extend(out: &mut Vec<u64>, head: [u64; 3], tail: &Band, tier: Tier) {
    let len = tail.test.len();
    out.reserve(len);
    let start = out.len();
    let free = &mut out.spare_capacity_mut()[..len];
    let added = match tier {
        #[cfg(target_arch = "x86_64")]
        // SAFETY: the tier is only chosen on CPUs with these features (`registers()`).
        Tier::Avx512 => unsafe { extend_avx512(free, head, tail) },
        _ => extend_portable(free, head, tail),
    };
    // SAFETY: the first `added` slots after `start` were written just now.
    unsafe { out.set_len(start + added) };
}

/// [`extend`]'s loop in plain Rust: every slot is written, and only fitting tails advance.
fn extend_portable(
    free: &mut [std::mem::MaybeUninit<u64>],
    [test, share, spare]: [u64; 3],
    tail: &Band,
) -> usize {
    let mut added = 0;
    for (&seen, &rest) in tail.test.iter().zip(&tail.share) {
        free[added].write(combine(share, rest));
        added += usize::from(test & seen == 0 && rest & spare == 0);
    }
    added
}

/// A half's word from its two bands' shares: the diagonal fields ORed, the balances added.
#[inline(always)]
fn combine(head: u64, tail: u64) -> u64 {
    let low = (1u64 << BALANCE_SHIFT) - 1;
    // The diagonal fields are under 2^42 each, so their sum carries nothing into the field.
    ((head | tail) & low) | (head.wrapping_add(tail) & !low)
}

/// [`extend`]'s loop eight tails at a time, the fitting ones compressed into place.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
fn extend_avx512(
    free: &mut [std::mem::MaybeUninit<u64>],
    [test, share, spare]: [u64; 3],
    tail: &Band,
) -> usize {
    use std::arch::x86_64::*;
    let len = tail.test.len();
    let whole = len / 8 * 8;
    let (t, h, p) = (
        _mm512_set1_epi64(test as i64),
        _mm512_set1_epi64(share as i64),
        _mm512_set1_epi64(spare as i64),
    );
    let low = _mm512_set1_epi64(((1u64 << BALANCE_SHIFT) - 1) as i64);
    let mut added = 0;
    for at in (0..whole).step_by(8) {
        // SAFETY: `at + 8 <= len` for both lists; unaligned loads.
        let (seen, rest) = unsafe {
            (
                _mm512_loadu_si512(tail.test.as_ptr().add(at).cast()),
                _mm512_loadu_si512(tail.share.as_ptr().add(at).cast()),
            )
        };
        let fits = _mm512_testn_epi64_mask(t, seen) & _mm512_testn_epi64_mask(p, rest);
        // SAFETY: at most eight words go to `free[added..]`, and `added <= at`, so they
        // stay within its `len` slots.
        unsafe {
            _mm512_mask_compressstoreu_epi64(
                free.as_mut_ptr().add(added).cast(),
                fits,
                _mm512_or_si512(
                    _mm512_and_si512(_mm512_or_si512(h, rest), low),
                    _mm512_andnot_si512(low, _mm512_add_epi64(h, rest)),
                ),
            )
        };
        added += fits.count_ones() as usize;
    }
    for at in whole..len {
        let (seen, rest) = (tail.test[at], tail.share[at]);
        free[added].write(combine(share, rest));
        added += usize::from(test & seen == 0 && rest & spare == 0);
    }
    added
}

impl Band {
    /// Adds one placement.
    fn push(&mut self, test: u64, share: u64) {
        self.test.push(test);
        self.share.push(share);
    }
}

/// The bit to split two blocks on: the one that most pairs of a spread sample of each
/// share (those pairs cannot fit), or `None` if no sampled pair shares a diagonal.
fn densest(xs: &[u64], ys: &[u64], fast: bool) -> Option<u64> {
    let (a, b) = (density(xs, fast), density(ys, fast));
    let product = |bit: usize| u32::from(a[bit]) * u32::from(b[bit]);
    let best = (0..BALANCE_SHIFT as usize).max_by_key(|&bit| product(bit))?;
    (product(best) > 0).then_some(1u64 << best)
}

/// Per bit below the balances, how many words of a spread sample of `words` (at most
/// [`SAMPLE`]) have it; `fast`: with GFNI and AVX-512 byte instructions.
fn density(words: &[u64], fast: bool) -> [u8; 64] {
    let step = (words.len() / SAMPLE).max(1);
    let mut sample = [0u64; SAMPLE];
    for (slot, &word) in sample.iter_mut().zip(words.iter().step_by(step)) {
        *slot = word & ((1u64 << BALANCE_SHIFT) - 1);
    }
    #[cfg(target_arch = "x86_64")]
    if fast {
        // SAFETY: `fast` is only set on CPUs with these features (`Sieve::new`).
        return unsafe { density_gfni(&sample) };
    }
    let _ = fast;
    let mut counts = [0u8; 64];
    for mut word in sample {
        while word != 0 {
            counts[word.trailing_zeros() as usize] += 1;
            word &= word - 1;
        }
    }
    counts
}

/// [`density`]'s counts eight words at a time: the register's bytes transposed so that a
/// quadword holds one byte of each word, each 8 x 8 bit block transposed (GFNI), so that a
/// byte holds one bit of each word, and the bytes' bits counted.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw,avx512vbmi,avx512bitalg,gfni")]
fn density_gfni(sample: &[u64; SAMPLE]) -> [u8; 64] {
    use std::arch::x86_64::*;
    // Byte 8j + w of the result is byte j of word w.
    let order: [u8; 64] = std::array::from_fn(|p| ((p % 8) * 8 + p / 8) as u8);
    // SAFETY: 64 bytes read from a 64-byte array.
    let order = unsafe { _mm512_loadu_si512(order.as_ptr().cast()) };
    // Byte k is 1 << k: the affine map then reads bit k of each byte of the quadword.
    let unit = _mm512_set1_epi64(0x8040_2010_0804_0201u64 as i64);
    let mut counts = _mm512_setzero_si512();
    for eight in sample.chunks_exact(8) {
        // SAFETY: eight words read from a chunk of eight.
        let words = unsafe { _mm512_loadu_si512(eight.as_ptr().cast()) };
        let bytes = _mm512_permutexvar_epi8(order, words);
        let bits = _mm512_gf2p8affine_epi64_epi8::<0>(unit, bytes);
        counts = _mm512_add_epi8(counts, _mm512_popcnt_epi8(bits));
    }
    let mut out = [0u8; 64];
    // SAFETY: 64 bytes written to a 64-byte array.
    unsafe { _mm512_storeu_si512(out.as_mut_ptr().cast(), counts) };
    out
}

/// Counts the fitting pairs of a key's two lists, each pair weighted by the transposes: a
/// solution whose balance (the sum of its squares' [`Join::balance`], which the transposes
/// negate and the mirrors keep) is positive counts twice, zero once, negative not at all.
/// Each transpose maps the solutions with a positive balance onto those with a negative one,
/// so the weights add up to the number of solutions, and pairs that cannot fit on balance
/// alone are never compared (n = 18, a quarter of the keys: 14.4e9 pair tests instead of
/// 23.3e9 with the splits of then).
struct Sieve {
    /// The middle queen's balance (0 on even boards).
    middle: i32,
    tier: Tier,
    /// Whether the split bits are chosen with GFNI and AVX-512 byte instructions (whenever
    /// the CPU has them, whatever the tier of the pair tests).
    fast: bool,
    /// Per depth, room for a split's three blocks: the longer block's words with its bit and
    /// those without, the shorter block's words without it (kept from key to key).
    levels: Vec<[Vec<u64>; 3]>,
}

impl Sieve {
    /// A sieve for a key whose middle queen has balance `middle`, its tests in `tier`.
    fn new(middle: i32, tier: Tier) -> Sieve {
        #[cfg(target_arch = "x86_64")]
        let fast = std::arch::is_x86_feature_detected!("avx512f")
            && std::arch::is_x86_feature_detected!("avx512bw")
            && std::arch::is_x86_feature_detected!("avx512vbmi")
            && std::arch::is_x86_feature_detected!("avx512bitalg")
            && std::arch::is_x86_feature_detected!("gfni");
        #[cfg(not(target_arch = "x86_64"))]
        let fast = false;
        Sieve {
            middle,
            tier,
            fast,
            levels: Vec::new(),
        }
    }

    /// Weighted fitting pairs of `xs` and `ys` (each in order of balance): split on a bit
    /// both often have (pairs that both have it cannot fit), until the blocks are small.
    fn count(&mut self, xs: &[u64], ys: &[u64], depth: usize) -> u64 {
        if xs.is_empty() || ys.is_empty() {
            return 0;
        }
        if xs.len() * ys.len() < SPLIT * (xs.len() + ys.len()) {
            return self.weighted(xs, ys);
        }
        let Some(bit) = densest(xs, ys, self.fast) else {
            return self.weighted(xs, ys);
        };
        if self.levels.len() <= depth {
            self.levels.resize_with(depth + 1, Default::default);
        }
        // This depth's blocks, taken out while the deeper ones use theirs.
        let [mut with, mut without, mut rest] = std::mem::take(&mut self.levels[depth]);
        rest.clear();
        // The longer list is split, and the shorter one is what goes on whole to one side:
        // pairs with the bit on one side meet the other's words without it, and the words
        // without it meet all of the other list.
        let counted = if xs.len() >= ys.len() {
            split(xs, bit, Some(&mut with), &mut without, self.tier);
            split(ys, bit, None, &mut rest, self.tier);
            self.count(&with, &rest, depth + 1) + self.count(&without, ys, depth + 1)
        } else {
            split(ys, bit, Some(&mut with), &mut without, self.tier);
            split(xs, bit, None, &mut rest, self.tier);
            self.count(&rest, &with, depth + 1) + self.count(xs, &without, depth + 1)
        };
        self.levels[depth] = [with, without, rest];
        counted
    }

    /// Weighted fitting pairs of two small blocks: per run of tops of one balance, the
    /// bottoms that make the sum zero count once and those that make it positive twice.
    fn weighted(&self, xs: &[u64], ys: &[u64]) -> u64 {
        let top = |x: u64| ((x >> BALANCE_SHIFT) & 0xff) as i32;
        let bottom = |y: u64| (y >> (BALANCE_SHIFT + 8)) as i32;
        let mut total = 0;
        let mut rest = xs;
        while let Some(&first) = rest.first() {
            let field = top(first);
            let run = rest.partition_point(|&x| top(x) == field);
            // Sum of balances: field + bottom(y) - 2 * BAND_BIAS * 2 + middle.
            let zero = 4 * BAND_BIAS - self.middle - field;
            let even = ys.partition_point(|&y| bottom(y) < zero);
            let positive = ys.partition_point(|&y| bottom(y) <= zero);
            let (block, ys_even, ys_positive) =
                (&rest[..run], &ys[even..positive], &ys[positive..]);
            total += leaf(block, ys_even, self.tier) + 2 * leaf(block, ys_positive, self.tier);
            rest = &rest[run..];
        }
        total
    }
}

/// Fills `without` with the words of `words` that lack `bit` and, if given, `with` with
/// those that have it, both in order, in one pass.
fn split(
    words: &[u64],
    bit: u64,
    mut with: Option<&mut Vec<u64>>,
    without: &mut Vec<u64>,
    tier: Tier,
) {
    without.clear();
    if let Some(with) = with.as_deref_mut() {
        with.clear();
    }
    match tier {
        #[cfg(target_arch = "x86_64")]
        // SAFETY: the tier is only chosen on CPUs with these features (`registers()`).
        Tier::Avx512 => unsafe { split_avx512(words, bit, with, without) },
        _ => {
            without.extend(words.iter().filter(|&&w| w & bit == 0));
            if let Some(with) = with {
                with.extend(words.iter().filter(|&&w| w & bit != 0));
            }
        }
    }
}

/// [`split`]'s pass eight words at a time, each register compressed in place and stored
/// whole (a compressing store to memory is slow on some CPUs).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
fn split_avx512(words: &[u64], bit: u64, mut with: Option<&mut Vec<u64>>, without: &mut Vec<u64>) {
    use std::arch::x86_64::*;
    // Eight slots more: whole registers are stored.
    let room = |list: &mut Vec<u64>| {
        list.reserve(words.len() + 8);
        list.as_mut_ptr()
    };
    let b = room(without);
    let a = with.as_deref_mut().map(room);
    let bits = _mm512_set1_epi64(bit as i64);
    let (mut na, mut nb) = (0, 0);
    for at in (0..words.len()).step_by(8) {
        let count = (words.len() - at).min(8);
        let live = ((1u16 << count) - 1) as u8;
        // SAFETY: the masked load reads the `count` words left from `at`; each store writes
        // eight slots from `na` or `nb`, both at most `at`, within the capacity reserved.
        unsafe {
            let v = _mm512_maskz_loadu_epi64(live, words.as_ptr().add(at).cast());
            let has = _mm512_test_epi64_mask(v, bits);
            let lacks = live & !has;
            _mm512_storeu_si512(b.add(nb).cast(), _mm512_maskz_compress_epi64(lacks, v));
            nb += lacks.count_ones() as usize;
            if let Some(a) = a {
                _mm512_storeu_si512(a.add(na).cast(), _mm512_maskz_compress_epi64(has, v));
                na += has.count_ones() as usize;
            }
        }
    }
    // SAFETY: the first `na` and `nb` slots were written above.
    unsafe {
        without.set_len(nb);
        if let Some(with) = with {
            with.set_len(na);
        }
    }
}

/// Disjoint pairs of two small blocks, compared one by one.
fn leaf(xs: &[u64], ys: &[u64], tier: Tier) -> u64 {
    match tier {
        #[cfg(target_arch = "x86_64")]
        // SAFETY: the tier is only chosen on CPUs with these features (`registers()`).
        Tier::Avx512 => unsafe { leaf_avx512(xs, ys) },
        #[cfg(target_arch = "x86_64")]
        // SAFETY: as above.
        Tier::Avx2 => unsafe { leaf_avx2(xs, ys) },
        _ => leaf_portable(xs, ys),
    }
}

/// The pair tests in plain Rust.
#[inline(always)]
fn leaf_portable(xs: &[u64], ys: &[u64]) -> u64 {
    let mut total = 0;
    for &x in xs {
        total += ys.iter().map(|&y| u64::from(x & y == 0)).sum::<u64>();
    }
    total
}

/// The portable pair tests, compiled for AVX2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn leaf_avx2(xs: &[u64], ys: &[u64]) -> u64 {
    leaf_portable(xs, ys)
}

/// Eight pairs per instruction: four words of `xs` at a time against eight of `ys`, then
/// the last words of `xs` one at a time; the last words of `ys` in a masked load.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
fn leaf_avx512(xs: &[u64], ys: &[u64]) -> u64 {
    use std::arch::x86_64::*;
    let whole = ys.len() / 8 * 8;
    let last = (1u8 << (ys.len() - whole)) - 1;
    let one = _mm512_set1_epi64(1);
    // SAFETY (both loads): `at + 8 <= whole <= ys.len()`; the masked load reads only the
    // `ys.len() - whole` words left.
    let load = |at: usize| unsafe { _mm512_loadu_si512(ys.as_ptr().add(at).cast()) };
    let rest = unsafe { _mm512_maskz_loadu_epi64(last, ys.as_ptr().add(whole).cast()) };
    let mut acc = [_mm512_setzero_si512(); 4];
    let mut groups = xs.chunks_exact(4);
    for group in &mut groups {
        let x: [__m512i; 4] = std::array::from_fn(|k| _mm512_set1_epi64(group[k] as i64));
        for at in (0..whole).step_by(8) {
            let y = load(at);
            for k in 0..4 {
                let fits = _mm512_testn_epi64_mask(x[k], y);
                acc[k] = _mm512_mask_add_epi64(acc[k], fits, acc[k], one);
            }
        }
        for k in 0..4 {
            let fits = _mm512_mask_testn_epi64_mask(last, x[k], rest);
            acc[k] = _mm512_mask_add_epi64(acc[k], fits, acc[k], one);
        }
    }
    for &x in groups.remainder() {
        let x = _mm512_set1_epi64(x as i64);
        for at in (0..whole).step_by(8) {
            let fits = _mm512_testn_epi64_mask(x, load(at));
            acc[0] = _mm512_mask_add_epi64(acc[0], fits, acc[0], one);
        }
        let fits = _mm512_mask_testn_epi64_mask(last, x, rest);
        acc[0] = _mm512_mask_add_epi64(acc[0], fits, acc[0], one);
    }
    let sum = _mm512_add_epi64(
        _mm512_add_epi64(acc[0], acc[1]),
        _mm512_add_epi64(acc[2], acc[3]),
    );
    _mm512_reduce_add_epi64(sum) as u64
}

/// The solutions a half turn maps to themselves and those a quarter turn does (the sums of
/// [`turn_fixed_from`] over the first row's columns).
#[cfg(test)]
fn turn_fixed(n: u32, cancel: &AtomicBool) -> Result<(u64, u64), CountError> {
    let (mut half, mut quarter) = (0, 0);
    for first in 0..n {
        let (h, q) = turn_fixed_from(n, first, cancel)?;
        half += h;
        quarter += q;
    }
    Ok((half, quarter))
}

/// The solutions a half turn maps to themselves and those a quarter turn does, with the
/// first row's queen on column `first`, for the symmetry classes by counting fixed points:
/// classes = (all + half + 2 × quarter) / 8 (no solution is its own mirror image for n > 1).
/// Each is a search that places whole orbits of squares under the turns, row by row, and
/// visits far fewer boards than a count (all columns together: n = 20 a fraction of a
/// second, n = 22 8 s); it polls `cancel`.
pub(super) fn turn_fixed_from(
    n: u32,
    first: u32,
    cancel: &AtomicBool,
) -> Result<(u64, u64), CountError> {
    let half = Turns::new(n, 2, cancel).count_from(first)?;
    let quarter = Turns::new(n, 4, cancel).count_from(first)?;
    Ok((half, quarter))
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

    /// Completions of an empty board whose first row's queen is on column `first`.
    fn count_from(&mut self, first: u32) -> Result<u64, CountError> {
        let (squares, count) = self.orbit(0, first as i32);
        let squares = &squares[..count];
        if !self.fits(squares) {
            return Ok(0);
        }
        self.toggle(squares);
        self.count()
    }

    /// Completions from the first empty row on.
    fn count(&mut self) -> Result<u64, CountError> {
        let empty = !self.rows & (u32::MAX >> (32 - self.n));
        if empty == 0 {
            return Ok(1);
        }
        self.visits += 1;
        if self.visits.is_multiple_of(1 << 16) && self.cancel.load(Ordering::Relaxed) {
            return Err(CountError::Cancelled);
        }
        let row = empty.trailing_zeros() as i32;
        let mut total = 0;
        for c in 0..self.n {
            if self.cols >> c & 1 != 0 {
                continue;
            }
            let (squares, count) = self.orbit(row, c);
            let squares = &squares[..count];
            if self.fits(squares) {
                self.toggle(squares);
                let below = self.count();
                self.toggle(squares);
                total += below?;
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::solver::Shard;
    use crate::solver::count::lanes::registers;

    /// A000170, n = 0..=15.
    const A000170: [u64; 16] = [
        1, 1, 0, 0, 2, 10, 4, 40, 92, 352, 724, 2680, 14200, 73712, 365596, 2279184,
    ];

    /// Every tier this CPU can run.
    fn tiers() -> Vec<Tier> {
        match registers() {
            Some(Registers::Avx512) => vec![Tier::Portable, Tier::Avx2, Tier::Avx512],
            Some(Registers::Avx2) => vec![Tier::Portable, Tier::Avx2],
            None => vec![Tier::Portable],
        }
    }

    #[test]
    fn join_counts_a000170_on_every_tier() {
        for tier in tiers() {
            for n in 4..=13u32 {
                let got = total_in(n, Shard::WHOLE, tier).unwrap();
                assert_eq!(got, A000170[n as usize], "n = {n}, {tier:?}");
            }
        }
    }

    #[test]
    fn join_counts_14_and_15_and_its_shards_add_up() {
        for n in [14u32, 15] {
            let best = tier_of(registers());
            let whole = total_in(n, Shard::WHOLE, best).unwrap();
            assert_eq!(whole, A000170[n as usize], "n = {n}");
            let parts: u64 = (0..7)
                .map(|index| total_in(n, Shard { index, count: 7 }, best).unwrap())
                .sum();
            assert_eq!(parts, whole, "n = {n}: 7 shards");
        }
    }

    #[test]
    fn turn_fixed_solutions_match_the_oracle_and_classes_match_a002562() {
        // A002562, n = 0..=14.
        const A002562: [u64; 15] = [1, 1, 0, 0, 1, 2, 1, 6, 12, 46, 92, 341, 1787, 9233, 45752];
        // n = 1 is left out: its one board is also its own mirror image.
        for n in 2..=14u32 {
            let (half, quarter) = turn_fixed(n, &AtomicBool::new(false)).unwrap();
            if n <= 10 {
                let turned = |board: &[u8], quarter: bool| {
                    let last = n as u8 - 1;
                    (0..n as usize).all(|r| {
                        let c = board[r];
                        if quarter {
                            // (r, c) -> (c, last - r)
                            board[c as usize] == last - r as u8
                        } else {
                            board[last as usize - r] == last - c
                        }
                    })
                };
                let all = crate::solver::naive::solutions(n as usize);
                let expect_half = all.iter().filter(|b| turned(b, false)).count() as u64;
                let expect_quarter = all.iter().filter(|b| turned(b, true)).count() as u64;
                assert_eq!((half, quarter), (expect_half, expect_quarter), "n = {n}");
            }
            let sum = A000170[n as usize] + half + 2 * quarter;
            assert_eq!(sum % 8, 0, "n = {n}");
            assert_eq!(sum / 8, A002562[n as usize], "n = {n}");
        }
    }

    #[test]
    fn a_raised_flag_stops_the_tables() {
        let raised = AtomicBool::new(true);
        assert!(matches!(parts(16, &raised), Err(CountError::Cancelled)));
        assert!(parts(16, &AtomicBool::new(false)).is_ok());
    }

    #[test]
    fn join_keys_cover_every_column_split_once() {
        // Weighted, the keys stand for every (middle, top columns) pair exactly once.
        for n in 4..=11u32 {
            let join = Join::new(n, &AtomicBool::new(false)).unwrap();
            let m = n / 2;
            let total: u64 = join.keys().iter().map(|k| k.weight).sum();
            let choose = |a: u64, b: u64| (0..b).fold(1u64, |c, i| c * (a - i) / (i + 1));
            let expected = if n.is_multiple_of(2) {
                choose(u64::from(n), u64::from(m))
            } else {
                u64::from(n) * choose(u64::from(n) - 1, u64::from(m))
            };
            assert_eq!(total, expected, "n = {n}");
        }
    }

    #[test]
    fn the_sampled_bit_counts_match_with_and_without_gfni() {
        let mut state = 0x2545_f491_4f6c_dd1du64;
        let fast = Sieve::new(0, Tier::Portable).fast;
        for len in [1usize, 7, 31, 32, 33, 100, 1000] {
            let words: Vec<u64> = (0..len)
                .map(|_| {
                    state ^= state << 13;
                    state ^= state >> 7;
                    state ^= state << 17;
                    state
                })
                .collect();
            let step = (len / SAMPLE).max(1);
            let mut expected = [0u8; 64];
            for &word in words.iter().step_by(step).take(SAMPLE) {
                for (bit, count) in expected.iter_mut().enumerate().take(BALANCE_SHIFT as usize) {
                    *count += u8::from(word >> bit & 1 == 1);
                }
            }
            assert_eq!(density(&words, false), expected, "{len} words");
            if fast {
                assert_eq!(density(&words, true), expected, "{len} words, GFNI");
            }
        }
    }

    #[test]
    fn the_blocks_count_disjoint_pairs_like_the_definition() {
        // Random words with random balances, every tier, the weighted sieve against the
        // definition.
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        // Sparse words, so that some pairs are disjoint; balances -5..=5 in their fields.
        let mut word = |shift: u32| {
            let bits = next();
            let balance = 2 * BAND_BIAS as u64 - 5 + next() % 11;
            (bits & (bits >> 3) & (bits >> 6) & 0xff_ffff_ffff) | (balance << shift)
        };
        let mut xs: Vec<u64> = (0..517).map(|_| word(BALANCE_SHIFT)).collect();
        let mut ys: Vec<u64> = (0..389).map(|_| word(BALANCE_SHIFT + 8)).collect();
        let disjoint = xs
            .iter()
            .map(|&x| ys.iter().filter(|&&y| x & y == 0).count() as u64)
            .sum::<u64>();
        assert!(disjoint > 0);
        for tier in tiers() {
            assert_eq!(leaf(&xs, &ys, tier), disjoint, "{tier:?}");
        }
        xs.sort_unstable_by_key(|&x| x >> BALANCE_SHIFT);
        ys.sort_unstable_by_key(|&y| y >> (BALANCE_SHIFT + 8));
        for middle in [-1, 0, 1] {
            let weight = |x: u64, y: u64| {
                let sum = ((x >> BALANCE_SHIFT) & 0xff) as i32 + (y >> (BALANCE_SHIFT + 8)) as i32
                    - 4 * BAND_BIAS
                    + middle;
                u64::from(sum >= 0) + u64::from(sum > 0)
            };
            let expected = xs
                .iter()
                .map(|&x| {
                    ys.iter()
                        .filter(|&&y| x & y == 0)
                        .map(|&y| weight(x, y))
                        .sum::<u64>()
                })
                .sum::<u64>();
            assert!(expected > 0);
            for tier in tiers() {
                assert_eq!(
                    Sieve::new(middle, tier).count(&xs, &ys, 0),
                    expected,
                    "{tier:?}, {middle}"
                );
            }
        }
    }
}
