//! Sampling for the split bit: per bit, how many words of a spread sample of a block have
//! it ([`density`]), and the bit most sampled pairs of two blocks share ([`densest`],
//! [`densest_of`]), which the sieve splits on and a key's cut in pieces is made on. The
//! counting kernel is the tiers' (`kernels/`); what the splits do with the bit is
//! `sieve.rs`'s and `narrow.rs`'s.

use super::kernels::bit_counts;
use super::word::Layout;
use crate::simd::Tier;

/// Words of each block whose bits choose its split (a spread sample), for blocks shorter
/// than [`LONG_BLOCK`].
pub(super) const SAMPLE: usize = 32;

/// Words sampled of blocks of at least [`LONG_BLOCK`] words, whose split decides more of
/// the work below it (n = 25, shard 100 of 65,536: 2-3% less CPU than 32 words; 64 from
/// 1,024 words, or 248 from 4,096, the same as this).
pub(super) const LONG_SAMPLE: usize = 128;

/// Blocks of at least this many words sample [`LONG_SAMPLE`] words.
pub(super) const LONG_BLOCK: usize = 4096;

/// The bit to split two blocks on: the one that most pairs of a spread sample of each
/// share (those pairs cannot fit), or `None` if no sampled pair shares a diagonal; sampled
/// in `tier`.
#[inline]
pub(super) fn densest(xs: &[u64], ys: &[u64], layout: Layout, tier: Tier) -> Option<u64> {
    let below = layout.diagonals();
    let (a, b) = (density(xs, below, tier), density(ys, below, tier));
    densest_of(a, b, layout.balance)
}

/// The bit below `bits` that most sampled pairs share, of two blocks' [`density`] `a` and
/// `b`, or `None` if no sampled pair shares one.
#[inline]
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
    bit_counts(&sample[..taken.next_multiple_of(8)], tier)
}
