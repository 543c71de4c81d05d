//! The portable tier's kernels: plain Rust that the compiler vectorises for the baseline
//! target (SSE2 on x86-64, NEON on aarch64), each with the same name and arguments as its
//! AVX-512 and AVX2 counterparts (`x86_64/avx512.rs`, `x86_64/avx2.rs`), which fall back on
//! some of them for a block's last words. The frames they run in are `frames.rs`'s; which
//! tier runs is the dispatch's choice (`x86_64/mod.rs`, or `generic.rs` off x86-64).

use super::super::word::{Last, Layout, Tail};
use super::frames::{Free, Head, Lists, each_head, pass_scalar};
use std::mem::MaybeUninit;

/// Disjoint pairs of two small blocks: blocks big enough in [`leaf_blocked`], the rest pair
/// by pair.
#[inline(always)]
pub(super) fn leaf(xs: &[u64], ys: &[u64]) -> u64 {
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
        return leaf_blocked(outer, inner);
    }
    let mut total = 0;
    for &x in xs {
        total += ys.iter().map(|&y| u64::from(x & y == 0)).sum::<u64>();
    }
    total
}

/// Words of `inner` [`leaf_blocked`] splits into halves at a time.
const HALF_CHUNK: usize = 256;

/// The pair tests for CPUs whose baseline vectors lack a 64-bit comparison (SSE2 has only
/// 32-bit ones): a chunk of `inner` split into its low and high 32-bit halves, so that a
/// pair fits when `(x_low & y_low) | (x_high & y_high)` is zero, which 32-bit lanes test
/// (four pairs per SSE2 register, and two words of `outer` per pass over the chunk).
#[inline(never)]
fn leaf_blocked(outer: &[u64], inner: &[u64]) -> u64 {
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
/// fit ([`leaf_blocked`]'s loop; at most `HALF_CHUNK` words, so no overflow).
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

/// Disjoint pairs of two small blocks of narrowed words, compared one by one.
#[inline(always)]
pub(super) fn leaf32(xs: &[u32], ys: &[u32]) -> u64 {
    xs.iter()
        .map(|&x| ys.iter().filter(|&&y| x & y == 0).count() as u64)
        .sum::<u64>()
}

/// How many words of `words` have `bit` (vectorised by the compiler for the tier it is
/// compiled in).
#[inline(always)]
pub(super) fn having(words: &[u64], bit: u64) -> usize {
    words.iter().map(|&w| usize::from(w & bit != 0)).sum()
}

/// A partition's pass without branches: each word is written to the next slot of both
/// lists, and only the list of its kind advances (each list has room for its words and a
/// register more, so the slot after its last word is there to write).
#[inline(always)]
pub(super) fn partition(words: &[u64], bit: u64, (with, without): Lists) {
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

/// A narrowed block's partition pass ([`pass_scalar`]).
///
/// # Safety
/// `a` and `b` have room for the words of their kind.
#[inline(always)]
pub(super) unsafe fn pass32(
    words: &[u32],
    bit: u32,
    a: Option<*mut u32>,
    b: *mut u32,
) -> (usize, usize) {
    // SAFETY: the caller's promise.
    unsafe { pass_scalar(words, bit, a, b) }
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

/// Per bit, how many words of `sample` (at most 255) have it.
#[inline(always)]
pub(super) fn bit_counts(sample: &[u64]) -> [u8; 64] {
    // Byte k of `sums[j]` counts the words with bit 8j + k (at most 255, no carries).
    let mut sums = [0u64; 8];
    for &word in sample {
        for (j, sum) in sums.iter_mut().enumerate() {
            *sum += SPREAD[((word >> (8 * j)) & 0xff) as usize];
        }
    }
    std::array::from_fn(|bit| (sums[bit / 8] >> (8 * (bit % 8))) as u8)
}

/// The tails' last row placed: every slot is written, and only fitting ones advance.
pub(super) fn place(last: Last, free: &mut Free, words: &[u64], attacks: &[u64]) -> usize {
    let mut added = 0;
    for (&word, &attack) in words.iter().zip(attacks) {
        free[added].write((word | last.up).wrapping_add(last.balance));
        added += usize::from(attack & last.bit == 0);
    }
    added
}

extend_in!(#[inline(never)]);

/// One head's halves: every slot is written, and only fitting tails advance, one tail at a
/// time (eight at a time, their halves and tests first, took more instructions: without
/// SIMD registers the sixteen values spill).
#[inline(always)]
pub(super) fn extend_head(
    free: &mut Free,
    [meets, share]: Head,
    tails: &[u64],
    tail: Tail,
) -> usize {
    assert!(free.len() >= tails.len());
    let mut added = 0;
    for &word in tails {
        // SAFETY: `added` is at most the tails before this one, fewer than `tails.len()`,
        // which is at most `free.len()` (asserted above).
        unsafe { free.get_unchecked_mut(added).write(tail.half(share, word)) };
        added += usize::from(meets & word == 0);
    }
    added
}

/// The wide path's halves of one head: every slot is written, and only fitting tails
/// advance.
#[inline(always)]
pub(super) fn extend_wide(free: &mut Free, head: Head, tests: &[u64], parts: &[u64]) -> usize {
    let [test, share] = head;
    assert!(free.len() >= tests.len());
    let mut added = 0;
    for (&t, &part) in tests.iter().zip(parts) {
        // SAFETY: `added` counts the tails before this one at most, fewer than
        // `tests.len()`, within `free` (asserted above).
        unsafe {
            free.get_unchecked_mut(added)
                .write(share.wrapping_add(part))
        };
        added += usize::from(test & t == 0);
    }
    added
}

/// No narrowing in this tier (it has no `pext`): always `None`.
#[inline(always)]
pub(super) fn weighted_narrowed(_: Layout, _: i32, _: &[u64], _: &[u64]) -> Option<u64> {
    None
}

/// No `pext` in this tier: `false`, nothing written.
#[inline(always)]
pub(super) fn pext(_: &[u64], _: u64, _: &mut [MaybeUninit<u32>]) -> bool {
    false
}
