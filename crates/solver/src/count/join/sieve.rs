//! The join's pair counting: a key's two lists of half words, split recursively on the bit
//! most sampled pairs share ([`Sieve`]), the small blocks left compared pair by pair (as
//! 32-bit words of the bits they can meet on, where the tier narrows them) and weighed by
//! the transposes' balance; the SIMD kernels of these passes (AVX-512 compressing
//! partitions and pair tests, and GFNI bit sampling where the AVX-512 tier has it; AVX2
//! partitions and pair tests); and a key's count cut in two [`Piece`]s on the sieve's first
//! bit, so that two engines can share a key. The words come from `halves.rs`, their layout
//! from `word.rs`; the subtrees of splits that work on narrow words are `narrow.rs`'s.

use super::memory::Allowance;
use super::narrow::{Narrowed, Subtree};
use super::word::Layout;
use crate::counts::CountError;
use crate::pool::give_way;
use crate::simd::{Tier, TierKind};
use std::sync::atomic::{AtomicBool, Ordering};

/// Two blocks of `x` and `y` words are compared pair by pair instead of split when
/// `x * y < split * (x + y)`, `split` this where the pair tests do not narrow their words:
/// a split passes over both blocks to spare a share of their pairs, which pays only while
/// the pairs outnumber the words by enough (n = 22, three shards of 1/16,000 of the keys,
/// one thread: 96 to 256 cost the same within noise, 64 and below more).
const SPLIT: usize = 128;

/// [`SPLIT`] in the tiers whose pair tests narrow their words ([`Sieve::narrowed`]: AVX-512,
/// and AVX2 where `pext` is fast), which takes half the instructions (n = 25, shard 100 of
/// 65,536, 2 threads, CPU seconds: AVX-512 128 33.1-33.9, 192 32.6-33.3, 256 32.6-33.9, 320
/// 34.0-35.0, 384 34.9, 512 37.9; AVX2 128 44.9, 256 39.6).
const SPLIT_NARROWED: usize = 256;

/// Splits shallower than this poll for cancellation and give way to other pool jobs
/// ([`give_way`]): a key of n = 24 takes about a second, and its first levels of splits cut
/// it into a few hundred pieces.
const POLL_DEPTH: usize = 8;

/// A split reserves its blocks exactly only for lists longer than this (16,384 words):
/// below it, room for all of the list's words in each spares a pass that counts them
/// (n = 26, shard 100 of 2^20: 3% of the time), and takes at most 0.4 MiB per depth.
const EXACT: usize = 1 << 14;

/// A block gives its room back before a split that needs less than half of it, when it is
/// more than this (2^20 words, 8 MiB) beyond what the split needs.
const SHRINK: usize = 1 << 20;

/// Slots a block keeps beyond its words: the SIMD partitions store whole registers.
const REGISTER: usize = 8;

/// Words of each block whose bits choose its split (a spread sample), for blocks shorter
/// than [`LONG_BLOCK`].
pub(super) const SAMPLE: usize = 32;

/// Words sampled of blocks of at least [`LONG_BLOCK`] words, whose split decides more of
/// the work below it (n = 25, shard 100 of 65,536: 2-3% less CPU than 32 words; 64 from
/// 1,024 words, or 248 from 4,096, the same as this).
pub(super) const LONG_SAMPLE: usize = 128;

/// Blocks of at least this many words sample [`LONG_SAMPLE`] words.
pub(super) const LONG_BLOCK: usize = 4096;

/// `tier`'s arm of the three: `$avx512` or `$avx2` in an `unsafe` block (each calls a
/// kernel compiled for its tier), else `$portable`.
macro_rules! by_tier {
    ($tier:expr, $avx512:expr, $avx2:expr, $portable:expr $(,)?) => {
        match $tier.kind() {
            #[cfg(target_arch = "x86_64")]
            // SAFETY: an AVX-512 `Tier` proves the CPU has its features (see `simd.rs`).
            TierKind::Avx512 => unsafe { $avx512 },
            #[cfg(target_arch = "x86_64")]
            // SAFETY: an AVX2 `Tier` proves the CPU has its features (see `simd.rs`).
            TierKind::Avx2 => unsafe { $avx2 },
            _ => $portable,
        }
    };
}

/// Which of a key's pairs a part counts: all of them, or one side of a cut on one bit of
/// the half words (chosen from the key's halves alone, [`densest`]): the pairs whose top
/// half has the bit, against the bottom halves that lack it, or those whose top half lacks
/// it, against all. The two sides add up to the key's count (a pair whose halves both have
/// the bit cannot fit), as the two sides of the sieve's first split do, so a key cut in two
/// costs its two engines the sieve's work once, and its halves' making twice.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Piece {
    /// Every pair.
    Whole,
    /// The pairs whose top half has the cut's bit.
    With,
    /// The pairs whose top half lacks it.
    Without,
}

impl Piece {
    /// Keeps of `tops` the words this side of a cut on `bit` pairs, in their order.
    pub(super) fn keep_tops(self, bit: u64, tops: &mut Vec<u64>) {
        match self {
            Piece::Whole => {}
            Piece::With => tops.retain(|&x| x & bit != 0),
            Piece::Without => tops.retain(|&x| x & bit == 0),
        }
    }

    /// Keeps of `bottoms` (mirrored onto the tops' bits) the words this side of a cut on
    /// `bit` pairs, in their order.
    pub(super) fn keep_bottoms(self, bit: u64, bottoms: &mut Vec<u64>) {
        if self == Piece::With {
            bottoms.retain(|&y| y & bit == 0);
        }
    }
}

/// The bit to split two blocks on: the one that most pairs of a spread sample of each
/// share (those pairs cannot fit), or `None` if no sampled pair shares a diagonal; sampled
/// in `tier`.
pub(super) fn densest(xs: &[u64], ys: &[u64], layout: Layout, tier: Tier) -> Option<u64> {
    let below = layout.diagonals();
    let (a, b) = (density(xs, below, tier), density(ys, below, tier));
    densest_of(a, b, layout.balance)
}

/// The bit below `bits` that most sampled pairs share, of two blocks' [`density`] `a` and
/// `b`, or `None` if no sampled pair shares one.
pub(super) fn densest_of(a: [u8; 64], b: [u8; 64], bits: u32) -> Option<u64> {
    let product = |bit: usize| u32::from(a[bit]) * u32::from(b[bit]);
    let best = (0..bits as usize).max_by_key(|&bit| product(bit))?;
    (product(best) > 0).then_some(1u64 << best)
}

/// Per bit of `below` (the diagonal fields), how many words of a spread sample of `words`
/// (at most [`SAMPLE`]) have it; with GFNI and AVX-512 byte instructions where `tier` has
/// them ([`Tier::gfni`]: the AVX-512 tier only), else in plain Rust.
pub(super) fn density<T: Copy + Into<u64>>(words: &[T], below: u64, tier: Tier) -> [u8; 64] {
    let size = if words.len() >= LONG_BLOCK {
        LONG_SAMPLE
    } else {
        SAMPLE
    };
    let step = (words.len() / size).max(1);
    // Zeros beyond the words sampled count nothing; GFNI takes eight words at a time.
    let mut sample = [0u64; LONG_SAMPLE];
    let mut taken = 0usize;
    for (slot, &word) in sample.iter_mut().zip(words.iter().step_by(step)).take(size) {
        *slot = word.into() & below;
        taken += 1;
    }
    let sample = &sample[..taken.next_multiple_of(8)];
    #[cfg(target_arch = "x86_64")]
    if tier.gfni() {
        // SAFETY: a `Tier` whose `gfni` is set proves the CPU has these features (see
        // `simd.rs`).
        return unsafe { density_gfni(sample) };
    }
    let _ = tier;
    // Byte k of `sums[j]` counts the words with bit 8j + k (at most LONG_SAMPLE, no carries).
    let mut sums = [0u64; 8];
    for &word in sample {
        for (j, sum) in sums.iter_mut().enumerate() {
            *sum += SPREAD[((word >> (8 * j)) & 0xff) as usize];
        }
    }
    std::array::from_fn(|bit| (sums[bit / 8] >> (8 * (bit % 8))) as u8)
}

/// Per byte value, its bits spread one to a byte (bit k to byte k): adding these counts
/// eight bit positions of many words at once.
static SPREAD: [u64; 256] = {
    let mut table = [0u64; 256];
    let mut value = 0;
    while value < 256 {
        let mut k = 0;
        while k < 8 {
            if value >> k & 1 != 0 {
                table[value] |= 1 << (8 * k);
            }
            k += 1;
        }
        value += 1;
    }
    table
};

/// [`density`]'s counts eight words at a time: the register's bytes transposed so that a
/// quadword holds one byte of each word, each 8 x 8 bit block transposed (GFNI), so that a
/// byte holds one bit of each word, and the bytes' bits counted.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw,avx512vbmi,avx512bitalg,gfni")]
fn density_gfni(sample: &[u64]) -> [u8; 64] {
    debug_assert!(sample.len().is_multiple_of(8) && sample.len() <= LONG_SAMPLE);
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
pub(super) struct Sieve {
    /// The middle queen's balance (0 on even boards).
    middle: i32,
    /// Where the words keep their balances.
    layout: Layout,
    /// The tier of its sampling, partitions and pair tests.
    tier: Tier,
    /// Per depth, room for a split's three blocks: the longer block's words with its bit and
    /// those without, the shorter block's words without it (kept from key to key, grown
    /// within an engine's [`Allowance`]).
    levels: Vec<[Vec<u64>; 3]>,
    /// The room of the subtrees narrowed to 32-bit words (`narrow.rs`).
    narrowed: Narrowed,
}

impl Sieve {
    /// A sieve for a key whose middle queen has balance `middle`, its tests in `tier`.
    pub(super) fn new(middle: i32, tier: Tier) -> Sieve {
        Sieve {
            middle,
            layout: Layout::NARROW,
            tier,
            levels: Vec::new(),
            narrowed: Narrowed::default(),
        }
    }

    /// The sieve, its room kept, for a key whose middle queen has balance `middle`, its tests
    /// in `tier`, its words laid out as `layout` says.
    pub(super) fn reset(&mut self, middle: i32, tier: Tier, layout: Layout) {
        self.middle = middle;
        self.layout = layout;
        self.tier = tier;
    }

    /// Bytes its blocks hold room for now.
    #[cfg(test)]
    pub(super) fn bytes(&self) -> usize {
        let words: usize = self.levels.iter().flatten().map(Vec::capacity).sum();
        words * size_of::<u64>() + self.narrowed.bytes()
    }

    /// Bytes its narrowed subtrees' blocks hold room for now.
    #[cfg(test)]
    pub(super) fn narrowed_bytes(&self) -> usize {
        self.narrowed.bytes()
    }

    /// Gives back the room of every block, to `allowance`.
    pub(super) fn release(&mut self, allowance: &mut Allowance) {
        for list in self.levels.iter_mut().flatten() {
            allowance.release(list);
        }
        self.narrowed.release(allowance);
    }

    /// Weighted fitting pairs of `xs` and `ys` (each in order of balance): split on a bit
    /// both often have (pairs that both have it cannot fit), until the blocks are small.
    /// Polls `cancel` at the shallow splits (a few hundred times per key at most) and gives
    /// up with 0 once it is raised: the caller checks it again and discards the count; gives
    /// way to other pool jobs there too. Blocks grow within `allowance`; where a split finds
    /// no room for them (after the deeper depths' room is given back), the longer list is
    /// counted in halves instead, which need no room of their own: slower, never wrong, and
    /// never more memory.
    pub(super) fn count(
        &mut self,
        xs: &[u64],
        ys: &[u64],
        depth: usize,
        cancel: &AtomicBool,
        allowance: &mut Allowance,
    ) -> u64 {
        if xs.is_empty() || ys.is_empty() {
            return 0;
        }
        if depth < POLL_DEPTH {
            if cancel.load(Ordering::Relaxed) {
                return 0;
            }
            give_way();
        }
        let split = if self.tier.fast_pext() {
            SPLIT_NARROWED
        } else {
            SPLIT
        };
        if xs.len() * ys.len() < split * (xs.len() + ys.len()) {
            return self.weighted(xs, ys);
        }
        // Where few enough bits can meet, the subtree below works on narrow words.
        if self.tier.fast_pext() && xs.len() + ys.len() <= NARROW_TREE {
            let or = |words: &[u64]| words.iter().fold(0, |or, &w| or | w);
            let meet = or(xs) & or(ys) & self.layout.diagonals();
            if meet.count_ones() <= 32 {
                let subtree = Subtree {
                    layout: self.layout,
                    zero: 2 * self.layout.bias - self.middle,
                    split,
                    tier: self.tier,
                    cancel,
                };
                let narrowed = self.narrowed.count(xs, ys, meet, subtree, depth, allowance);
                if let Some(count) = narrowed {
                    return count;
                }
            }
        }
        let Some(bit) = densest(xs, ys, self.layout, self.tier) else {
            return self.weighted(xs, ys);
        };
        if self.levels.len() <= depth {
            self.levels.resize_with(depth + 1, Default::default);
        }
        // This depth's blocks, taken out while the deeper ones use theirs.
        let [mut with, mut without, mut rest] = std::mem::take(&mut self.levels[depth]);
        // The longer list is split, and the shorter one is what goes on whole to one side:
        // pairs with the bit on one side meet the other's words without it, and the words
        // without it meet all of the other list.
        let xs_longer = xs.len() >= ys.len();
        let (longer, shorter) = if xs_longer { (xs, ys) } else { (ys, xs) };
        let mut blocks = [&mut with, &mut without, &mut rest];
        let mut split = self.split(longer, shorter, bit, &mut blocks, allowance);
        if split.is_err() {
            // The deeper depths' room is free while this depth splits.
            for list in self.levels[depth + 1..].iter_mut().flatten() {
                allowance.release(list);
            }
            split = self.split(longer, shorter, bit, &mut blocks, allowance);
        }
        let counted = match split {
            Ok(()) if xs_longer => {
                self.count(&with, &rest, depth + 1, cancel, allowance)
                    + self.count(&without, ys, depth + 1, cancel, allowance)
            }
            Ok(()) => {
                self.count(&rest, &with, depth + 1, cancel, allowance)
                    + self.count(xs, &without, depth + 1, cancel, allowance)
            }
            Err(_) => {
                // No room: the longer list in halves, each split (or compared) on its own.
                self.levels[depth] = [with, without, rest];
                let (a, b) = longer.split_at(longer.len() / 2);
                return if xs_longer {
                    self.count(a, ys, depth, cancel, allowance)
                        + self.count(b, ys, depth, cancel, allowance)
                } else {
                    self.count(xs, a, depth, cancel, allowance)
                        + self.count(xs, b, depth, cancel, allowance)
                };
            }
        };
        self.levels[depth] = [with, without, rest];
        counted
    }

    /// Fills a split's blocks: `with` and `without` the words of `longer` that have `bit`
    /// and those that lack it, `rest` the words of `shorter` that lack it, each given room
    /// for its words (and a register) within `allowance`; `OutOfMemory` if there is none.
    fn split(
        &self,
        longer: &[u64],
        shorter: &[u64],
        bit: u64,
        [with, without, rest]: &mut [&mut Vec<u64>; 3],
        allowance: &mut Allowance,
    ) -> Result<(), CountError> {
        // The blocks of a longer list than `EXACT` are reserved exactly (a pass to count
        // them costs less than twice its room); of a shorter one at its length (no pass:
        // their room is kept from key to key); the shorter list's block at most its length.
        let (has, lacks) = if longer.len() > EXACT {
            let has = having(longer, bit, self.tier);
            (has, longer.len() - has)
        } else {
            (longer.len(), longer.len())
        };
        for (list, words) in [
            (&mut **with, has),
            (&mut **without, lacks),
            (&mut **rest, shorter.len()),
        ] {
            list.clear();
            // A block whose room is far more than this split needs (kept from a larger one)
            // gives it back first, so that the depths' room follows the splits in hand
            // rather than the largest each depth ever had (n = 28: that exhausted an
            // engine's allowance and left deep splits without room).
            if list.capacity() > 2 * (words + REGISTER) + SHRINK {
                allowance.release(list);
            }
            allowance.reserve(list, words + REGISTER)?;
        }
        partition(longer, bit, Some(with), without, self.tier);
        partition(shorter, bit, None, rest, self.tier);
        Ok(())
    }

    /// Weighted fitting pairs of two small blocks: per run of tops of one balance, the
    /// bottoms that make the sum zero count once and those that make it positive twice.
    fn weighted(&self, xs: &[u64], ys: &[u64]) -> u64 {
        if let Some(count) = self.weighted_narrowed(xs, ys) {
            return count;
        }
        // The tables' layout with its fields' places as constants (the common case, and the
        // one measured against the build before the wide path), else the one in hand.
        const NARROW: Layout = Layout::NARROW;
        let tier = self.tier;
        let leaf = |run: &[u64], ys: &[u64], evens: usize| {
            let (even, positive) = ys.split_at(evens);
            leaf(run, even, tier) + 2 * leaf(run, positive, tier)
        };
        if self.layout == NARROW {
            self.runs(NARROW, xs, ys, leaf)
        } else {
            self.runs(self.layout, xs, ys, leaf)
        }
    }

    /// [`Sieve::weighted`] on words narrowed to 32 bits ([`Sieve::narrowed`]), where this
    /// sieve's tier narrows (AVX-512; AVX2 where `pext` is fast, [`Tier::fast_pext`]) and
    /// [`narrows`] these blocks, else `None`.
    pub(super) fn weighted_narrowed(&self, xs: &[u64], ys: &[u64]) -> Option<u64> {
        if !narrows(xs, ys) {
            return None;
        }
        match self.tier.kind() {
            #[cfg(target_arch = "x86_64")]
            // SAFETY: an AVX-512 `Tier` proves the CPU has its features (see `simd.rs`).
            TierKind::Avx512 => unsafe { self.narrowed_avx512(xs, ys) },
            #[cfg(target_arch = "x86_64")]
            // SAFETY: an AVX2 `Tier` proves the CPU has its features (see `simd.rs`).
            TierKind::Avx2 if self.tier.fast_pext() => unsafe { self.narrowed_avx2(xs, ys) },
            _ => None,
        }
    }

    /// [`Sieve::narrowed`] in the AVX-512 tier: sixteen pairs per instruction.
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx512f,bmi2,popcnt")]
    fn narrowed_avx512(&self, xs: &[u64], ys: &[u64]) -> Option<u64> {
        use std::arch::x86_64::_pext_u64;
        self.narrowed(
            xs,
            ys,
            |word, meet| _pext_u64(word, meet) as u32,
            |xs, ys, evens| {
                let (even, positive) = ys.split_at(evens);
                leaf32_avx512(xs, even) + 2 * leaf32_avx512(xs, positive)
            },
        )
    }

    /// [`Sieve::narrowed`] in the AVX2 tier: eight pairs per instruction.
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2,bmi2,popcnt")]
    fn narrowed_avx2(&self, xs: &[u64], ys: &[u64]) -> Option<u64> {
        use std::arch::x86_64::_pext_u64;
        self.narrowed(
            xs,
            ys,
            |word, meet| _pext_u64(word, meet) as u32,
            |xs, ys, evens| {
                let (even, positive) = ys.split_at(evens);
                leaf32_avx2(xs, even) + 2 * leaf32_avx2(xs, positive)
            },
        )
    }

    /// [`Sieve::weighted`] on words narrowed to 32 bits if no more than 32 bits of the
    /// blocks can meet (those both blocks have somewhere: below the sieve's first splits
    /// most of a word's bits are decided on one side), else `None`. Each word keeps those
    /// bits (`narrow`, a `pext` by the bits that meet), so a pair meets in the narrow words
    /// exactly where it meets in the whole ones, and `leaf` counts a run's disjoint pairs
    /// in twice the words per register (`leaf(run, bottoms, evens)`, weighed as
    /// [`Sieve::runs`] says).
    #[inline(always)]
    fn narrowed(
        &self,
        xs: &[u64],
        ys: &[u64],
        narrow: impl Fn(u64, u64) -> u32,
        leaf: impl Fn(&[u32], &[u32], usize) -> u64,
    ) -> Option<u64> {
        use std::mem::MaybeUninit;
        let meet = xs.iter().fold(0, |or, &x| or | x) & ys.iter().fold(0, |or, &y| or | y);
        if meet.count_ones() > 32 || xs.len() + ys.len() > NARROWED {
            return None;
        }
        // Not zeroed: only the slots written below are read.
        let mut words = [const { MaybeUninit::<u32>::uninit() }; NARROWED];
        let (narrow_x, narrow_y) = words.split_at_mut(xs.len());
        for (slot, &word) in narrow_x.iter_mut().zip(xs) {
            slot.write(narrow(word, meet));
        }
        for (slot, &word) in narrow_y.iter_mut().zip(ys) {
            slot.write(narrow(word, meet));
        }
        // SAFETY: the first `xs.len() + ys.len()` slots (at most `NARROWED`, checked above)
        // were written just now.
        let words: &[u32] = unsafe { &*(&raw const words[..xs.len() + ys.len()] as *const [u32]) };
        let (narrow_xs, narrow_ys) = words.split_at(xs.len());
        let base = (xs.as_ptr() as usize, ys.as_ptr() as usize);
        Some(self.runs(
            self.layout,
            xs,
            ys,
            |run: &[u64], bottoms: &[u64], evens| {
                // The same words of the narrow blocks as `run` and `bottoms` are of the whole.
                let at = (run.as_ptr() as usize - base.0) / size_of::<u64>();
                let from = (bottoms.as_ptr() as usize - base.1) / size_of::<u64>();
                leaf(
                    &narrow_xs[at..at + run.len()],
                    &narrow_ys[from..from + bottoms.len()],
                    evens,
                )
            },
        ))
    }

    /// The weighted pairs of `xs` and `ys` laid out as `layout` says, per run of tops of one
    /// balance: `leaf(run, bottoms, evens)` counts the disjoint pairs of the run and the
    /// bottoms that make the sum zero or positive, the first `evens` of them (zero) once and
    /// the rest twice.
    #[inline(always)]
    fn runs(
        &self,
        layout: Layout,
        xs: &[u64],
        ys: &[u64],
        mut leaf: impl FnMut(&[u64], &[u64], usize) -> u64,
    ) -> u64 {
        let (top, bottom) = (|x| layout.top(x), |y| layout.bottom(y));
        let mut total = 0;
        let mut rest = xs;
        while let Some(&first) = rest.first() {
            let field = top(first);
            let run = rest.partition_point(|&x| top(x) == field);
            // Sum of balances: field + bottom(y) - 2 * bias + middle.
            let zero = 2 * layout.bias - self.middle - field;
            let even = ys.partition_point(|&y| bottom(y) < zero);
            let positive = ys.partition_point(|&y| bottom(y) <= zero);
            total += leaf(&rest[..run], &ys[even..], positive - even);
            rest = &rest[run..];
        }
        total
    }
}

/// Most words two blocks may have in all for their subtree of splits to be narrowed to
/// 32-bit words (`narrow.rs`), where the tier narrows: the narrow words of larger ones
/// would take more room, for no less time (n = 25, shard 100 of 65,536, 2 threads, user CPU
/// seconds: 2^14 28.8, 2^16 28.3, 2^18 28.5, 2^20 29.0; 32.9 without such subtrees; n = 28,
/// shard 100 of 2^22, CPU seconds: 2^16 350, 2^20 363).
const NARROW_TREE: usize = 1 << 16;

/// Most words two blocks may have in all to be narrowed to 32 bits for their pair tests
/// (their narrow words are kept on the stack: 32 KiB).
const NARROWED: usize = 8192;

/// Two blocks of `x` and `y` words are narrowed for their pair tests only when
/// `x * y >= NARROW_PAIRS * (x + y)`, so that the pass that narrows them pays (n = 25, shard
/// 100 of 65,536: 8, 16 and 32 the same within 1%).
const NARROW_PAIRS: usize = 32;

/// Whether two blocks are narrowed for their pair tests, where the tier can: when they fit
/// [`NARROWED`] and have [`NARROW_PAIRS`] pairs per word.
fn narrows(xs: &[u64], ys: &[u64]) -> bool {
    xs.len() + ys.len() <= NARROWED && xs.len() * ys.len() >= NARROW_PAIRS * (xs.len() + ys.len())
}

/// How many words of `words` have `bit`.
fn having(words: &[u64], bit: u64, tier: Tier) -> usize {
    by_tier!(
        tier,
        having_avx512(words, bit),
        having_avx2(words, bit),
        having_portable(words, bit),
    )
}

/// [`having`] in plain Rust (vectorised by the compiler for the tier it is compiled in).
#[inline(always)]
fn having_portable(words: &[u64], bit: u64) -> usize {
    words.iter().map(|&w| usize::from(w & bit != 0)).sum()
}

/// [`having`] compiled for the AVX-512 tier.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,popcnt")]
fn having_avx512(words: &[u64], bit: u64) -> usize {
    having_portable(words, bit)
}

/// [`having`] compiled for the AVX2 tier.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,popcnt")]
fn having_avx2(words: &[u64], bit: u64) -> usize {
    having_portable(words, bit)
}

/// Fills `without` with the words of `words` that lack `bit` and, if given, `with` with
/// those that have it, both in order, in one pass; each has room for its words and a
/// register ([`REGISTER`]) more.
fn partition(
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
    debug_assert!(without.capacity() >= words.iter().filter(|&&w| w & bit == 0).count() + REGISTER);
    by_tier!(
        tier,
        partition_avx512(words, bit, (with, without)),
        partition_avx2(words, bit, (with, without)),
        partition_portable(words, bit, (with, without)),
    )
}

/// [`partition`]'s pass in plain Rust, without branches: each word is written to the next
/// slot of both lists, and only the list of its kind advances (each list has room for its
/// words and a register more, so the slot after its last word is there to write).
#[inline(always)]
fn partition_portable(words: &[u64], bit: u64, (with, without): Lists) {
    let nb = match with {
        Some(with) => {
            let (a, b) = (with.spare_capacity_mut(), without.spare_capacity_mut());
            assert!(!a.is_empty() && !b.is_empty());
            let (mut na, mut nb) = (0, 0);
            for &word in words {
                let has = usize::from(word & bit != 0);
                // SAFETY: `na` counts the words with the bit so far, at most all of them,
                // and `a` has room for them and one more (the caller's room); `b` and `nb`
                // likewise.
                unsafe {
                    a.get_unchecked_mut(na).write(word);
                    b.get_unchecked_mut(nb).write(word);
                }
                na += has;
                nb += 1 - has;
            }
            // SAFETY: the first `na` slots of `with`'s room hold its words, written above.
            unsafe { with.set_len(na) };
            nb
        }
        None => {
            let b = without.spare_capacity_mut();
            assert!(!b.is_empty());
            let mut nb = 0;
            for &word in words {
                // SAFETY: as above.
                unsafe { b.get_unchecked_mut(nb).write(word) };
                nb += usize::from(word & bit == 0);
            }
            nb
        }
    };
    // SAFETY: the first `nb` slots of `without`'s room hold its words, written above.
    unsafe { without.set_len(nb) };
}

/// The lists a partition fills: those with the bit, if wanted, and those without it.
type Lists<'a> = (Option<&'a mut Vec<u64>>, &'a mut Vec<u64>);

/// [`partition`]'s frame around one tier's pass, inlined into it: `pass` gets where the
/// words with the bit go (if wanted) and where those without it go, writes them there in
/// order, and returns how many of each; the lists are then cut to those lengths.
///
/// # Safety
/// `pass` must have written the first slots it counts of each list, within their room.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
unsafe fn partition_frame(
    (mut with, without): Lists,
    pass: impl FnOnce(Option<*mut u64>, *mut u64) -> (usize, usize),
) {
    // Each list has room for its words and a register more: whole registers are stored.
    let (na, nb) = pass(
        with.as_deref_mut().map(|with| with.as_mut_ptr()),
        without.as_mut_ptr(),
    );
    // SAFETY: the first `na` and `nb` slots were written by `pass` (the caller's promise).
    unsafe {
        without.set_len(nb);
        if let Some(with) = with {
            with.set_len(na);
        }
    }
}

/// Writes a partition's pass: `$name(words, bit, a, b)` writes the words of `words` with
/// `bit` from `a` (if given), those without from `b`, in order, in the tier of `$features`,
/// and returns how many of each.
#[cfg(target_arch = "x86_64")]
macro_rules! pass_fn {
    ($(#[$doc:meta])* $name:ident, $word:ty, $features:literal,
     |$words:ident, $bit:ident, $a:ident, $b:ident| $body:block) => {
        $(#[$doc])*
        ///
        /// # Safety
        /// `a` and `b` have room for the words of their kind and a register more.
        #[cfg(target_arch = "x86_64")]
        #[target_feature(enable = $features)]
        pub(super) unsafe fn $name(
            $words: &[$word],
            $bit: $word,
            $a: Option<*mut $word>,
            $b: *mut $word,
        ) -> (usize, usize) $body
    };
}

/// A partition's pass one word at a time, in plain Rust: the words of `words` with `bit` from
/// `a` (if given), those without from `b`, in order; how many of each.
///
/// # Safety
/// `a` and `b` have room for the words of their kind.
#[inline(always)]
pub(super) unsafe fn pass_scalar<T: Copy + Into<u64>>(
    words: &[T],
    bit: T,
    a: Option<*mut T>,
    b: *mut T,
) -> (usize, usize) {
    let (mut na, mut nb) = (0, 0);
    for &word in words {
        // SAFETY: `na` and `nb` stay below the words of their kind, within the room.
        unsafe {
            if word.into() & bit.into() == 0 {
                b.add(nb).write(word);
                nb += 1;
            } else if let Some(a) = a {
                a.add(na).write(word);
                na += 1;
            }
        }
    }
    (na, nb)
}

/// Writes a partition's pass in AVX-512 for one width of word (`$lanes` to a register): the
/// words of `words` with `bit` from `a` (if given), those without from `b`, each register
/// compressed in place and stored whole (a compressing store to memory is slow on some CPUs);
/// returns how many of each.
#[cfg(target_arch = "x86_64")]
macro_rules! partition_avx512 {
    ($(#[$doc:meta])* $name:ident, $word:ty, $mask:ty, $lanes:literal,
     $set1:ident, $load:ident, $test:ident, $compress:ident) => {
        pass_fn!($(#[$doc])* $name, $word, "avx512f,popcnt", |words, bit, a, b| {
            use std::arch::x86_64::*;
            let bits = $set1(bit as _);
            let (mut na, mut nb) = (0, 0);
            for at in (0..words.len()).step_by($lanes) {
                let count = (words.len() - at).min($lanes);
                let live = ((1u32 << count) - 1) as $mask;
                // SAFETY: the masked load reads the `count` words left from `at`; each store
                // writes a register's slots from `na` or `nb`, at most the words of its kind
                // before `at`, within the room for all of them and a register more.
                unsafe {
                    let v = $load(live, words.as_ptr().add(at).cast());
                    let has = $test(v, bits);
                    let lacks = live & !has;
                    _mm512_storeu_si512(b.add(nb).cast(), $compress(lacks, v));
                    nb += lacks.count_ones() as usize;
                    if let Some(a) = a {
                        _mm512_storeu_si512(a.add(na).cast(), $compress(has, v));
                        na += has.count_ones() as usize;
                    }
                }
            }
            (na, nb)
        });
    };
}

#[cfg(target_arch = "x86_64")]
partition_avx512!(
    /// [`partition`]'s pass eight words at a time.
    pass_avx512,
    u64,
    u8,
    8,
    _mm512_set1_epi64,
    _mm512_maskz_loadu_epi64,
    _mm512_test_epi64_mask,
    _mm512_maskz_compress_epi64
);

#[cfg(target_arch = "x86_64")]
partition_avx512!(
    /// A narrowed block's partition (`narrow.rs`) sixteen 32-bit words at a time.
    pass32_avx512,
    u32,
    u16,
    16,
    _mm512_set1_epi32,
    _mm512_maskz_loadu_epi32,
    _mm512_test_epi32_mask,
    _mm512_maskz_compress_epi32
);

/// [`partition`]'s pass in AVX-512 ([`pass_avx512`]).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,popcnt")]
fn partition_avx512(words: &[u64], bit: u64, lists: Lists) {
    // SAFETY: each list has room for the words of its kind and a register more (the
    // partition's callers reserve it), and `pass_avx512` writes the first slots it counts of
    // each list, within that room.
    unsafe { partition_frame(lists, |a, b| pass_avx512(words, bit, a, b)) }
}

/// Disjoint pairs of two small blocks of narrowed words, compared one by one.
pub(super) fn leaf32(xs: &[u32], ys: &[u32], tier: Tier) -> u64 {
    by_tier!(
        tier,
        leaf32_avx512(xs, ys),
        leaf32_avx2(xs, ys),
        xs.iter()
            .map(|&x| ys.iter().filter(|&&y| x & y == 0).count() as u64)
            .sum::<u64>()
    )
}

/// Disjoint pairs of two small blocks, compared one by one.
pub(super) fn leaf(xs: &[u64], ys: &[u64], tier: Tier) -> u64 {
    by_tier!(
        tier,
        leaf_avx512(xs, ys),
        leaf_avx2(xs, ys),
        leaf_portable(xs, ys)
    )
}

/// The pair tests in plain Rust: blocks big enough in [`leaf_portable_blocked`], the rest
/// pair by pair.
#[inline(always)]
fn leaf_portable(xs: &[u64], ys: &[u64]) -> u64 {
    // The counts are the same either way round: the shorter block is the one split into
    // halves (once per pass over the longer), unless it is too short for whole registers.
    let (outer, inner) = if xs.len() >= ys.len() {
        (xs, ys)
    } else {
        (ys, xs)
    };
    let (outer, inner) = if inner.len() >= 16 {
        (outer, inner)
    } else {
        (inner, outer)
    };
    if outer.len() >= 2 && inner.len() >= 16 {
        return leaf_portable_blocked(outer, inner);
    }
    let mut total = 0;
    for &x in xs {
        total += ys.iter().map(|&y| u64::from(x & y == 0)).sum::<u64>();
    }
    total
}

/// Words of `inner` [`leaf_portable_blocked`] splits into halves at a time.
const HALF_CHUNK: usize = 256;

/// The pair tests for CPUs whose baseline vectors lack a 64-bit comparison (SSE2 has only
/// 32-bit ones): a chunk of `inner` split into its low and high 32-bit halves, so that a
/// pair fits when `(x_low & y_low) | (x_high & y_high)` is zero, which 32-bit lanes test
/// (four pairs per SSE2 register, and two words of `outer` per pass over the chunk). Plain
/// Rust that the compiler vectorises for the baseline target (SSE2 on x86-64, NEON on
/// aarch64).
#[inline(never)]
fn leaf_portable_blocked(outer: &[u64], inner: &[u64]) -> u64 {
    // Not zeroed: only the slots a chunk writes are read (a memset per call cost 2% of n = 18).
    let mut low = [const { std::mem::MaybeUninit::<u32>::uninit() }; HALF_CHUNK];
    let mut high = [const { std::mem::MaybeUninit::<u32>::uninit() }; HALF_CHUNK];
    let mut total = 0u64;
    for chunk in inner.chunks(HALF_CHUNK) {
        for ((l, h), &y) in low.iter_mut().zip(high.iter_mut()).zip(chunk) {
            l.write(y as u32);
            h.write((y >> 32) as u32);
        }
        // SAFETY: the first `chunk.len()` slots of each were written just now.
        let (low, high): (&[u32], &[u32]) = unsafe {
            (
                &*(&raw const low[..chunk.len()] as *const [u32]),
                &*(&raw const high[..chunk.len()] as *const [u32]),
            )
        };
        // At most `HALF_CHUNK` per count: no overflow.
        let (fours, rest) = outer.as_chunks::<4>();
        let (pairs, last) = rest.as_chunks::<2>();
        for xs in fours {
            total += halves_fit(xs, low, high);
        }
        for xs in pairs {
            total += halves_fit(xs, low, high);
        }
        for xs in last.as_chunks::<1>().0 {
            total += halves_fit(xs, low, high);
        }
    }
    total
}

/// How many pairs of one of `xs` and one of the words split into `low` and `high` halves
/// fit ([`leaf_portable_blocked`]'s loop; at most `HALF_CHUNK` words, so no overflow).
#[inline(always)]
fn halves_fit<const K: usize>(xs: &[u64; K], low: &[u32], high: &[u32]) -> u64 {
    let x_low = xs.map(|x| x as u32);
    let x_high = xs.map(|x| (x >> 32) as u32);
    let mut count = 0u32;
    for (&l, &h) in low.iter().zip(high) {
        for k in 0..K {
            count += u32::from((l & x_low[k]) | (h & x_high[k]) == 0);
        }
    }
    u64::from(count)
}

/// Four pairs per instruction: four words of `xs` at a time against four of `ys`, then the
/// last words of `xs` one at a time; the last words of `ys` in plain Rust.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn leaf_avx2(xs: &[u64], ys: &[u64]) -> u64 {
    use std::arch::x86_64::*;
    let whole = ys.len() / 4 * 4;
    let zero = _mm256_setzero_si256();
    // SAFETY: `at + 4 <= whole <= ys.len()` at every call, so the 32 bytes read lie in `ys`.
    let load = |at: usize| unsafe { _mm256_loadu_si256(ys.as_ptr().add(at).cast()) };
    // Each fitting pair subtracts -1 (all ones) from its lane.
    let mut acc = [zero; 4];
    let (groups, remainder) = xs.as_chunks::<4>();
    for group in groups {
        let x = group.map(|word| _mm256_set1_epi64x(word as i64));
        for at in (0..whole).step_by(4) {
            let y = load(at);
            for k in 0..4 {
                let fits = _mm256_cmpeq_epi64(_mm256_and_si256(x[k], y), zero);
                acc[k] = _mm256_sub_epi64(acc[k], fits);
            }
        }
    }
    for &x in remainder {
        let x = _mm256_set1_epi64x(x as i64);
        for at in (0..whole).step_by(4) {
            let fits = _mm256_cmpeq_epi64(_mm256_and_si256(x, load(at)), zero);
            acc[0] = _mm256_sub_epi64(acc[0], fits);
        }
    }
    let sum = _mm256_add_epi64(
        _mm256_add_epi64(acc[0], acc[1]),
        _mm256_add_epi64(acc[2], acc[3]),
    );
    let mut lanes = [0u64; 4];
    // SAFETY: 32 bytes written to a 32-byte array.
    unsafe { _mm256_storeu_si256(lanes.as_mut_ptr().cast(), sum) };
    lanes.iter().sum::<u64>() + leaf_portable(xs, &ys[whole..])
}

/// For each mask of `LANES` lanes of `8 / LANES` 32-bit words each, the 32-bit lane order
/// that moves the masked lanes of an AVX2 register to its front, in order (the lanes after
/// them are left as they come): AVX2 has no compressing instruction, so a permutation from
/// such a table stands in.
#[cfg(target_arch = "x86_64")]
const fn compress_orders<const LANES: usize, const MASKS: usize>() -> [[u32; 8]; MASKS] {
    let width = 8 / LANES;
    let mut table = [[0u32; 8]; MASKS];
    let mut mask = 0;
    while mask < MASKS {
        let (mut out, mut lane) = (0, 0);
        while lane < LANES {
            if mask >> lane & 1 != 0 {
                let mut part = 0;
                while part < width {
                    table[mask][out * width + part] = (lane * width + part) as u32;
                    part += 1;
                }
                out += 1;
            }
            lane += 1;
        }
        mask += 1;
    }
    table
}

/// [`compress_orders`] for four 64-bit lanes.
#[cfg(target_arch = "x86_64")]
static COMPRESS: [[u32; 8]; 16] = compress_orders::<4, 16>();

/// [`compress_orders`] for eight 32-bit lanes.
#[cfg(target_arch = "x86_64")]
static COMPRESS32: [[u32; 8]; 256] = compress_orders::<8, 256>();

/// The 64-bit lanes of `words` that `mask` (bit k: lane k) selects, moved to the front in
/// order: AVX2 has no compressing instruction, so a permutation from a table stands in.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
#[inline]
pub(super) fn compress_avx2(
    words: std::arch::x86_64::__m256i,
    mask: usize,
) -> std::arch::x86_64::__m256i {
    use std::arch::x86_64::*;
    // SAFETY: 32 bytes read from one of the table's 32-byte rows (`mask & 15` picks one).
    let order = unsafe { _mm256_loadu_si256(COMPRESS[mask & 15].as_ptr().cast()) };
    _mm256_permutevar8x32_epi32(words, order)
}

/// Writes a partition's pass in AVX2 for one width of word (`$lanes` to a register): the
/// words of `words` with `bit` from `a` (if given), those without from `b`, each register
/// compressed by `$compress` and stored whole, the last words in plain Rust; returns how
/// many of each.
#[cfg(target_arch = "x86_64")]
macro_rules! partition_avx2 {
    ($(#[$doc:meta])* $name:ident, $word:ty, $lanes:literal, $set1:ident, $cmpeq:ident,
     $movemask:ident, $cast:ident, $compress:ident) => {
        pass_fn!($(#[$doc])* $name, $word, "avx2,popcnt", |words, bit, a, b| {
            use std::arch::x86_64::*;
            let bits = $set1(bit as _);
            let zero = _mm256_setzero_si256();
            let whole = words.len() / $lanes * $lanes;
            let all = (1usize << $lanes) - 1;
            let (mut na, mut nb) = (0, 0);
            for at in (0..whole).step_by($lanes) {
                // SAFETY: the load reads a register's words from `at`, within `words`; each
                // store writes a register's slots from `na` or `nb`, at most the words of its
                // kind before `at`, within the room for all of them and a register more.
                unsafe {
                    let v = _mm256_loadu_si256(words.as_ptr().add(at).cast());
                    let lacks = $cmpeq(_mm256_and_si256(v, bits), zero);
                    let lacks = $movemask($cast(lacks)) as usize;
                    _mm256_storeu_si256(b.add(nb).cast(), $compress(v, lacks));
                    nb += lacks.count_ones() as usize;
                    if let Some(a) = a {
                        let has = !lacks & all;
                        _mm256_storeu_si256(a.add(na).cast(), $compress(v, has));
                        na += has.count_ones() as usize;
                    }
                }
            }
            // SAFETY: the last words go after those written, within the same room.
            let (ka, kb) = unsafe {
                pass_scalar(&words[whole..], bit, a.map(|a| a.add(na)), b.add(nb))
            };
            (na + ka, nb + kb)
        });
    };
}

#[cfg(target_arch = "x86_64")]
partition_avx2!(
    /// [`partition`]'s pass four words at a time ([`compress_avx2`]).
    pass_avx2,
    u64,
    4,
    _mm256_set1_epi64x,
    _mm256_cmpeq_epi64,
    _mm256_movemask_pd,
    _mm256_castsi256_pd,
    compress_avx2
);

#[cfg(target_arch = "x86_64")]
partition_avx2!(
    /// A narrowed block's partition (`narrow.rs`) eight 32-bit words at a time
    /// ([`compress32_avx2`]).
    pass32_avx2,
    u32,
    8,
    _mm256_set1_epi32,
    _mm256_cmpeq_epi32,
    _mm256_movemask_ps,
    _mm256_castsi256_ps,
    compress32_avx2
);

/// [`partition`]'s pass in AVX2 ([`pass_avx2`]).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,popcnt")]
fn partition_avx2(words: &[u64], bit: u64, lists: Lists) {
    // SAFETY: each list has room for the words of its kind and a register more (the
    // partition's callers reserve it), and `pass_avx2` writes the first slots it counts of
    // each list, within that room.
    unsafe { partition_frame(lists, |a, b| pass_avx2(words, bit, a, b)) }
}

/// The 32-bit lanes of `words` that `mask` (bit k: lane k) selects, moved to the front in
/// order, by a permutation from a table.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
#[inline]
fn compress32_avx2(words: std::arch::x86_64::__m256i, mask: usize) -> std::arch::x86_64::__m256i {
    use std::arch::x86_64::*;
    // SAFETY: 32 bytes read from one of the table's 32-byte rows (`mask & 255` picks one).
    let order = unsafe { _mm256_loadu_si256(COMPRESS32[mask & 255].as_ptr().cast()) };
    _mm256_permutevar8x32_epi32(words, order)
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
    // SAFETY: `at + 8 <= whole <= ys.len()` at every call, so the 64 bytes read lie in `ys`.
    let load = |at: usize| unsafe { _mm512_loadu_si512(ys.as_ptr().add(at).cast()) };
    // SAFETY: the masked load reads only the `ys.len() - whole` words left after `whole`.
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

/// [`leaf_avx512`] for words narrowed to 32 bits: sixteen pairs per instruction, four words
/// of `xs` at a time against sixteen of `ys`, then the last words of `xs` one at a time; the
/// last words of `ys` in a masked load.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
fn leaf32_avx512(xs: &[u32], ys: &[u32]) -> u64 {
    use std::arch::x86_64::*;
    let whole = ys.len() / 16 * 16;
    let last = ((1u32 << (ys.len() - whole)) - 1) as u16;
    let one = _mm512_set1_epi32(1);
    // SAFETY: `at + 16 <= whole <= ys.len()` at every call, so the 64 bytes read lie in `ys`.
    let load = |at: usize| unsafe { _mm512_loadu_si512(ys.as_ptr().add(at).cast()) };
    // SAFETY: the masked load reads only the `ys.len() - whole` words left after `whole`.
    let rest = unsafe { _mm512_maskz_loadu_epi32(last, ys.as_ptr().add(whole).cast()) };
    // A lane counts at most one pair per word of `xs` and pass: no overflow below 2^32.
    let mut acc = [_mm512_setzero_si512(); 4];
    let mut groups = xs.chunks_exact(4);
    for group in &mut groups {
        let x: [__m512i; 4] = std::array::from_fn(|k| _mm512_set1_epi32(group[k] as i32));
        for at in (0..whole).step_by(16) {
            let y = load(at);
            for k in 0..4 {
                let fits = _mm512_testn_epi32_mask(x[k], y);
                acc[k] = _mm512_mask_add_epi32(acc[k], fits, acc[k], one);
            }
        }
        for k in 0..4 {
            let fits = _mm512_mask_testn_epi32_mask(last, x[k], rest);
            acc[k] = _mm512_mask_add_epi32(acc[k], fits, acc[k], one);
        }
    }
    for &x in groups.remainder() {
        let x = _mm512_set1_epi32(x as i32);
        for at in (0..whole).step_by(16) {
            let fits = _mm512_testn_epi32_mask(x, load(at));
            acc[0] = _mm512_mask_add_epi32(acc[0], fits, acc[0], one);
        }
        let fits = _mm512_mask_testn_epi32_mask(last, x, rest);
        acc[0] = _mm512_mask_add_epi32(acc[0], fits, acc[0], one);
    }
    acc.iter()
        .map(|&a| _mm512_reduce_add_epi32(a) as u32 as u64)
        .sum()
}

/// [`leaf_avx2`] for words narrowed to 32 bits: eight pairs per instruction, four words of
/// `xs` at a time against eight of `ys`, then the last words of `xs` one at a time; the last
/// words of `ys` in plain Rust.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn leaf32_avx2(xs: &[u32], ys: &[u32]) -> u64 {
    use std::arch::x86_64::*;
    let whole = ys.len() / 8 * 8;
    let zero = _mm256_setzero_si256();
    // SAFETY: `at + 8 <= whole <= ys.len()` at every call, so the 32 bytes read lie in `ys`.
    let load = |at: usize| unsafe { _mm256_loadu_si256(ys.as_ptr().add(at).cast()) };
    // Each fitting pair subtracts -1 (all ones) from its lane: at most one per word of `xs`
    // and pass, no overflow below 2^32.
    let mut acc = [zero; 4];
    let (groups, remainder) = xs.as_chunks::<4>();
    for group in groups {
        let x = group.map(|word| _mm256_set1_epi32(word as i32));
        for at in (0..whole).step_by(8) {
            let y = load(at);
            for k in 0..4 {
                let fits = _mm256_cmpeq_epi32(_mm256_and_si256(x[k], y), zero);
                acc[k] = _mm256_sub_epi32(acc[k], fits);
            }
        }
    }
    for &x in remainder {
        let x = _mm256_set1_epi32(x as i32);
        for at in (0..whole).step_by(8) {
            let fits = _mm256_cmpeq_epi32(_mm256_and_si256(x, load(at)), zero);
            acc[0] = _mm256_sub_epi32(acc[0], fits);
        }
    }
    let mut total = 0;
    for sum in acc {
        let mut lanes = [0u32; 8];
        // SAFETY: 32 bytes written to a 32-byte array.
        unsafe { _mm256_storeu_si256(lanes.as_mut_ptr().cast(), sum) };
        total += lanes.iter().map(|&lane| u64::from(lane)).sum::<u64>();
    }
    let tail = &ys[whole..];
    total
        + xs.iter()
            .map(|&x| tail.iter().filter(|&&y| x & y == 0).count() as u64)
            .sum::<u64>()
}
