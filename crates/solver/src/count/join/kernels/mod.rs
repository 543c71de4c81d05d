//! The join's SIMD kernels, one call for every tier: each function here takes the
//! [`Tier`] token and runs the kernel of that name in the tier it names, so that the sieve,
//! the narrowed subtrees, the tables and the two paths read as algorithms over a few kernel
//! calls and never name an instruction set or a target.
//!
//! - `frames.rs`: the loops every tier's kernels run inside (the loop over a key's heads, a
//!   partition's frame, the runs of one balance, narrowing to 32-bit words).
//! - `portable.rs`: the portable kernels, which the SIMD ones fall back on for a block's
//!   last words.
//! - `x86_64/`: on x86-64, the AVX-512 and AVX2 kernels and the dispatch among the three
//!   tiers (`by_tier!`), with the `unsafe` of calling target-feature code and its soundness
//!   argued once per tier.
//! - `generic.rs`: on other targets, the dispatch to the portable kernels alone (compiled in
//!   tests on x86-64 too).
//! - here: what each kernel does, and the bookkeeping around the calls (clearing and
//!   sizing the lists they write).
//!
//! `x86_64/` and `generic.rs` are each gated once, by their first line, and each defines
//! the `by_tier!` and `prefetch_hint!` this file calls: nothing here names a target. On
//! x86-64, tests compile both, and `x86_64` is declared after `generic` so that its macros
//! shadow the generic ones (the sieve's tests would see it otherwise: AVX2 and AVX-512
//! narrow, the portable kernels do not).
//!
//! Not here: what the kernels are for (`sieve.rs`, `narrow.rs`, `tables.rs`, `halves.rs`,
//! `bands.rs`), the layout of the words they read (`word.rs`).

/// Writes a tier's `extend`, a key's halves of each head and the tails that fit it: the
/// loop over the heads ([`frames::each_head`]) with the tier's `extend_head` inlined, under
/// `$attr` (its target features; the portable tier's is a function of its own, not inlined
/// into its callers, where it took more instructions). One definition for every tier.
macro_rules! extend_in {
    ($(#[$attr:meta])*) => {
        /// A key's halves of each head and the tails that fit it (`extend_head` inlined).
        $(#[$attr])*
        pub(crate) fn extend(
            free: &mut Free,
            heads: &[u64],
            tails: &[u64],
            spare: [u64; 2],
            tail: Tail,
        ) -> usize {
            each_head(free, heads, tails, spare, tail, |free, head, tails, tail| {
                extend_head(free, head, tails, tail)
            })
        }
    };
}

mod frames;
/// The portable-only dispatch: off x86-64, and in tests (see the module).
#[macro_use]
mod generic;
mod portable;
/// The AVX-512 and AVX2 kernels and the dispatch among the tiers, on x86-64; declared after
/// `generic`, whose macros its own shadow (see the module).
#[macro_use]
mod x86_64;

pub(super) use self::frames::{Free, runs};
use super::word::{Last, Layout, Tail};
use crate::simd::{Tier, TierKind};

/// Disjoint pairs of two small blocks, compared one by one.
#[inline]
pub(super) fn leaf(xs: &[u64], ys: &[u64], tier: Tier) -> u64 {
    by_tier!(tier, leaf(xs, ys))
}

/// Disjoint pairs of two small blocks of narrowed words, compared one by one.
#[inline]
pub(super) fn leaf32(xs: &[u32], ys: &[u32], tier: Tier) -> u64 {
    by_tier!(tier, leaf32(xs, ys))
}

/// How many words of `words` have `bit`.
#[inline]
pub(super) fn having(words: &[u64], bit: u64, tier: Tier) -> usize {
    by_tier!(tier, having(words, bit))
}

/// Fills `without` with the words of `words` that lack `bit` and, if given, `with` with
/// those that have it, both in order, in one pass; each has room for its words and a
/// register ([`REGISTER`]) more.
#[inline]
pub(super) fn partition(
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
    by_tier!(tier, partition(words, bit, (with, without)))
}

/// Slots a list of 64-bit words keeps beyond its words for a partition: the SIMD passes
/// store whole registers.
pub(super) const REGISTER: usize = 8;

/// Slots a list of 32-bit words keeps beyond its words for [`pass32`] (sixteen to an
/// AVX-512 register).
pub(super) const REGISTER32: usize = 16;

/// A narrowed block's partition pass: the words of `words` with `bit` from `a` (if given),
/// those without from `b`, in order; how many of each.
///
/// # Safety
/// `a` and `b` have room for the words of their kind and [`REGISTER32`] more.
#[inline]
#[allow(unused_unsafe)] // the SIMD tiers' calls are `unsafe` blocks of their own, nested in this one
pub(super) unsafe fn pass32(
    words: &[u32],
    bit: u32,
    a: Option<*mut u32>,
    b: *mut u32,
    tier: Tier,
) -> (usize, usize) {
    // SAFETY: the room is the caller's promise.
    unsafe { by_tier!(tier, pass32(words, bit, a, b)) }
}

/// Per bit, how many words of `sample` (a multiple of eight words, at most 255) have it:
/// with GFNI and AVX-512 byte instructions where `tier` has them ([`Tier::gfni`]: the
/// AVX-512 tier only), else in plain Rust.
#[inline(always)]
pub(super) fn bit_counts(sample: &[u64], tier: Tier) -> [u8; 64] {
    by_tier!(tier, gfni only: bit_counts(sample))
}

/// Writes to `free` the tail words of the placements before `last` (their words so far and
/// the columns they attack on her row) that leave her column free, with her added, and
/// returns how many; `free` has room for them and eight slots more. AVX-512 has a kernel of
/// its own; the other tiers run the portable one.
#[inline]
pub(super) fn place(
    last: Last,
    free: &mut Free,
    words: &[u64],
    attacks: &[u64],
    tier: Tier,
) -> usize {
    by_tier!(tier, avx512 only: place(last, free, words, attacks))
}

/// Appends to `out` the halves made of a head of `heads` (its test word and share side by
/// side, but those whose share has bits of `spare[0]`, the middle queen's, which no half may
/// have) and a tail of `tails` that fits it (and has no bits of `spare[1]`, hers in a tail's
/// word); `out` has room for every pair and a register more.
#[inline]
pub(super) fn extend(
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
    let added = by_tier!(tier, extend(free, heads, tails, spare, tail));
    // SAFETY: the first `added` slots after `start` were written just now.
    unsafe { out.set_len(start + added) };
}

/// Appends to `out` the halves of the wide path made of one head (its test word and its
/// share) and each tail of `tests` and `parts` that fits it (their test words share no
/// bit): the head's share and the tail's added (their diagonals never overlap in a fitting
/// pair, and the balances add). `out` has room for every tail and a register more.
#[inline]
pub(super) fn extend_wide(
    out: &mut Vec<u64>,
    head: [u64; 2],
    tests: &[u64],
    parts: &[u64],
    tier: Tier,
) {
    assert!(out.capacity() - out.len() >= tests.len() + 8 && parts.len() == tests.len());
    let start = out.len();
    let free = &mut out.spare_capacity_mut()[..tests.len() + 8];
    let added = by_tier!(tier, extend_wide(free, head, tests, parts));
    // SAFETY: the first `added` slots after `start` were written just now.
    unsafe { out.set_len(start + added) };
}

/// Two blocks of `x` and `y` words are narrowed for their pair tests only when
/// `x * y >= NARROW_PAIRS * (x + y)`, so that the pass that narrows them pays (n = 25, shard
/// 100 of 65,536: 8, 16 and 32 the same within 1%).
const NARROW_PAIRS: usize = 32;

/// Weighted fitting pairs of tops `xs` and bottoms `ys` (laid out as `layout` says, the
/// middle queen's balance `middle`) on words narrowed to 32 bits, as [`runs`] weighs them,
/// where `tier` narrows (AVX-512; AVX2 where `pext` is fast, [`Tier::fast_pext`]), the
/// blocks have enough pairs per word to pay for it, and no more than 32 bits of them can
/// meet; else `None`.
#[inline]
pub(super) fn weighted_narrowed(
    layout: Layout,
    middle: i32,
    xs: &[u64],
    ys: &[u64],
    tier: Tier,
) -> Option<u64> {
    let (x, y) = (xs.len(), ys.len());
    if x + y > frames::NARROWED || x * y < NARROW_PAIRS * (x + y) {
        return None;
    }
    if tier.kind() == TierKind::Avx2 && !tier.fast_pext() {
        return None;
    }
    by_tier!(tier, weighted_narrowed(layout, middle, xs, ys))
}

/// Whether `tier` has `pext` to narrow words with ([`pext`]): the AVX-512 and AVX2 tiers.
#[inline]
pub(super) fn has_pext(tier: Tier) -> bool {
    matches!(tier.kind(), TierKind::Avx512 | TierKind::Avx2)
}

/// Appends `words` narrowed to the bits of `meet` (`pext`) to `out`, which has room for
/// them; `false`, and nothing written, where `tier` has no `pext` (only the AVX-512 and
/// AVX2 tiers narrow).
#[inline]
pub(super) fn pext(words: &[u64], meet: u64, out: &mut Vec<u32>, tier: Tier) -> bool {
    let start = out.len();
    let spare = &mut out.spare_capacity_mut()[..words.len()];
    if !by_tier!(tier, pext(words, meet, spare)) {
        return false;
    }
    // SAFETY: the `words.len()` slots after `start` were written just now.
    unsafe { out.set_len(start + words.len()) };
    true
}

/// Asks the CPU to bring `words` into its nearest cache (a hint; nothing off x86-64).
#[inline(always)]
pub(super) fn prefetch(words: &[u64]) {
    prefetch_hint!(words)
}
