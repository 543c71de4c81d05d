//! The join's kernels on x86-64: which tier's kernel runs, and the `unsafe` of calling
//! target-feature code. Each function here has the name and arguments of a kernel of
//! `avx512.rs`, `avx2.rs` and `../portable.rs` (as hashbrown's `Group` has the same
//! methods in its per-target files), plus the [`Tier`] token, and runs the kernel of the
//! tier the token names. Declared for x86-64 only (the gate is on its `mod` line in
//! `../mod.rs`, as memchr gates `arch/x86_64`); other targets compile `../generic.rs`,
//! the portable kernels alone, in its place.
//!
//! - `avx2.rs`, `avx512.rs`: the kernels compiled for those tiers.
//! - here: the dispatch, and the two macros those files write their narrowed pair tests
//!   and partition passes with.
//!
//! # Soundness, once per tier
//! A kernel of `avx512.rs` or `avx2.rs` is a safe `#[target_feature]` function, and calling
//! it from here takes an `unsafe` block: sound exactly when this CPU has the features. Every
//! such call sits in the arm of a match on the kind of a [`Tier`] the caller holds, and a
//! `Tier` of kind `Avx512` (or `Avx2`) can only be made by detection that found every
//! feature its kernels are compiled with (`simd.rs`), a subset of which each kernel enables;
//! the features do not change while the process runs. The AVX-512 sampling kernel
//! ([`bit_counts`]) runs only for a `Tier` whose `gfni` says the CPU has its byte, VBMI,
//! BITALG and GFNI instructions too. That one argument, in `by_tier!` and the few
//! matches below it, is the whole of the tiers' `unsafe`.
//!
//! Not here: what each kernel does and the bookkeeping around it (`../mod.rs`), the loops
//! the tiers share (`../frames.rs`).

use super::frames::{Free, Head, Lists};
use super::portable;
use crate::count::join::word::{Last, Layout, Tail};
use crate::simd::{Tier, TierKind};

/// Writes a tier's `weighted_narrowed`, the weighted pairs of two small blocks narrowed to
/// 32 bits by `pext` ([`frames::narrowed`](super::frames::narrowed), the tier's `leaf32`
/// their pair tests), compiled with `$features`, and its `pext` (BMI2). One definition for
/// the two tiers that narrow.
macro_rules! narrowed_in {
    ($features:literal) => {
        /// Weighted fitting pairs of two small blocks narrowed to 32 bits by `pext`
        /// ([`narrowed`]), [`leaf32`] their pair tests.
        #[target_feature(enable = $features)]
        pub(super) fn weighted_narrowed(
            layout: Layout,
            middle: i32,
            xs: &[u64],
            ys: &[u64],
        ) -> Option<u64> {
            narrowed(
                layout,
                middle,
                xs,
                ys,
                |word, meet| _pext_u64(word, meet) as u32,
                |xs, ys, evens| {
                    let (even, positive) = ys.split_at(evens);
                    leaf32(xs, even) + 2 * leaf32(xs, positive)
                },
            )
        }

        /// `words` narrowed to the bits of `meet`, written to `out`.
        #[target_feature(enable = "bmi2")]
        pub(super) fn pext(words: &[u64], meet: u64, out: &mut [std::mem::MaybeUninit<u32>]) {
            for (slot, &word) in out.iter_mut().zip(words) {
                slot.write(_pext_u64(word, meet) as u32);
            }
        }
    };
}

/// Writes a tier's partition pass `$name(words, bit, a, b)`, compiled with `$features`:
/// the words of `words` with `bit` from `a` (if given), those without from `b`, in order;
/// returns how many of each. One signature and contract for the SIMD tiers' passes.
macro_rules! pass_fn {
    ($(#[$doc:meta])* $name:ident, $word:ty, $features:literal,
     |$words:ident, $bit:ident, $a:ident, $b:ident| $body:block) => {
        $(#[$doc])*
        ///
        /// # Safety
        /// `a` and `b` have room for the words of their kind and a register more.
        #[target_feature(enable = $features)]
        pub(super) unsafe fn $name(
            $words: &[$word],
            $bit: $word,
            $a: Option<*mut $word>,
            $b: *mut $word,
        ) -> (usize, usize) $body
    };
}

mod avx2;
mod avx512;

/// Writes, for each kernel named, its dispatch: a function of the same name and arguments
/// and the tier last, that runs `avx512::$name` or `avx2::$name` in an `unsafe` block, else
/// `portable::$name`.
macro_rules! by_tier {
    ($($name:ident($($arg:ident: $ty:ty),*) -> $out:ty;)*) => {$(
        #[doc = concat!("[`", stringify!($name), "`](super::", stringify!($name), ") in `tier`'s kernel.")]
        #[inline(always)]
        pub(super) fn $name($($arg: $ty,)* tier: Tier) -> $out {
            match tier.kind() {
                // SAFETY: an AVX-512 `Tier` proves the CPU has its features (see the module).
                TierKind::Avx512 => unsafe { avx512::$name($($arg),*) },
                // SAFETY: an AVX2 `Tier` proves the CPU has its features (see the module).
                TierKind::Avx2 => unsafe { avx2::$name($($arg),*) },
                TierKind::Portable => portable::$name($($arg),*),
            }
        }
    )*};
}

by_tier! {
    leaf(xs: &[u64], ys: &[u64]) -> u64;
    leaf32(xs: &[u32], ys: &[u32]) -> u64;
    having(words: &[u64], bit: u64) -> usize;
    partition(words: &[u64], bit: u64, lists: Lists) -> ();
    extend(free: &mut Free, heads: &[u64], tails: &[u64], spare: [u64; 2], tail: Tail) -> usize;
    extend_wide(free: &mut Free, head: Head, tests: &[u64], parts: &[u64]) -> usize;
}

/// [`pass32`](super::pass32) in `tier`'s kernel.
///
/// # Safety
/// `a` and `b` have room for the words of their kind and a register more.
#[inline(always)]
pub(super) unsafe fn pass32(
    words: &[u32],
    bit: u32,
    a: Option<*mut u32>,
    b: *mut u32,
    tier: Tier,
) -> (usize, usize) {
    // SAFETY: the room is the caller's promise; the tiers as in `by_tier!`.
    unsafe {
        match tier.kind() {
            TierKind::Avx512 => avx512::pass32(words, bit, a, b),
            TierKind::Avx2 => avx2::pass32(words, bit, a, b),
            TierKind::Portable => portable::pass32(words, bit, a, b),
        }
    }
}

/// [`bit_counts`](super::bit_counts) with GFNI and AVX-512 byte instructions where `tier`
/// has them ([`Tier::gfni`]), else in plain Rust.
#[inline(always)]
pub(super) fn bit_counts(sample: &[u64], tier: Tier) -> [u8; 64] {
    if tier.gfni() {
        // SAFETY: a `Tier` whose `gfni` is set proves the CPU has these features (see the
        // module).
        return unsafe { avx512::bit_counts(sample) };
    }
    portable::bit_counts(sample)
}

/// [`place`](super::place): AVX-512 has a kernel of its own; the other tiers run the
/// portable one.
#[inline(always)]
pub(super) fn place(
    last: Last,
    free: &mut Free,
    words: &[u64],
    attacks: &[u64],
    tier: Tier,
) -> usize {
    match tier.kind() {
        // SAFETY: an AVX-512 `Tier` proves the CPU has its features (see the module).
        TierKind::Avx512 => unsafe { avx512::place(last, free, words, attacks) },
        _ => portable::place(last, free, words, attacks),
    }
}

/// [`weighted_narrowed`](super::weighted_narrowed) in `tier`'s kernel, where it narrows
/// (AVX-512; AVX2 where `pext` is fast, [`Tier::fast_pext`]); else `None`.
#[inline(always)]
pub(super) fn weighted_narrowed(
    layout: Layout,
    middle: i32,
    xs: &[u64],
    ys: &[u64],
    tier: Tier,
) -> Option<u64> {
    match tier.kind() {
        // SAFETY: an AVX-512 `Tier` proves the CPU has its features (see the module).
        TierKind::Avx512 => unsafe { avx512::weighted_narrowed(layout, middle, xs, ys) },
        // SAFETY: an AVX2 `Tier` proves the CPU has its features (see the module).
        TierKind::Avx2 if tier.fast_pext() => unsafe {
            avx2::weighted_narrowed(layout, middle, xs, ys)
        },
        _ => None,
    }
}

/// Whether `tier` has `pext` to narrow words with: the AVX-512 and AVX2 tiers.
#[inline(always)]
pub(super) fn has_pext(tier: Tier) -> bool {
    matches!(tier.kind(), TierKind::Avx512 | TierKind::Avx2)
}

/// [`pext`](super::pext) into `out` where `tier` has it (`true`); else `false`, nothing
/// written.
#[inline(always)]
pub(super) fn pext(
    words: &[u64],
    meet: u64,
    out: &mut [std::mem::MaybeUninit<u32>],
    tier: Tier,
) -> bool {
    match tier.kind() {
        // SAFETY: an AVX-512 `Tier` proves the CPU has BMI2 (see the module).
        TierKind::Avx512 => unsafe { avx512::pext(words, meet, out) },
        // SAFETY: an AVX2 `Tier` proves the CPU has BMI2 (see the module).
        TierKind::Avx2 => unsafe { avx2::pext(words, meet, out) },
        TierKind::Portable => return false,
    }
    true
}

/// Asks the CPU to bring `words` into its nearest cache (a hint).
#[inline(always)]
pub(super) fn prefetch(words: &[u64]) {
    use std::arch::x86_64::{_MM_HINT_T0, _mm_prefetch};
    for line in words.chunks(8) {
        // SAFETY: SSE is part of every x86-64 CPU; a prefetch reads nothing and cannot fault.
        unsafe { _mm_prefetch::<_MM_HINT_T0>(line.as_ptr().cast()) };
    }
}
