//! The join's kernels on x86-64: which tier's kernel runs, and the `unsafe` of calling
//! target-feature code. `by_tier!` runs the kernel of a name in the tier a [`Tier`] token
//! names: `avx512.rs`, `avx2.rs` and `../portable.rs` have the same names and arguments (as
//! hashbrown's `Group` has the same methods in its per-target files). Compiled for x86-64
//! only, gated once by its first line (as memchr gates `arch/x86_64` once); other targets
//! compile `../generic.rs`, the portable kernels alone, in its place.
//!
//! - `avx2.rs`, `avx512.rs`: the kernels compiled for those tiers.
//! - here: the dispatch, the prefetch hint (the same in every tier, `prefetch_hint!`), and
//!   the two macros those files write their narrowed pair tests and partition passes with.
//!
//! # Soundness, once per tier
//! A kernel of `avx512.rs` or `avx2.rs` is a safe `#[target_feature]` function, and calling
//! it from here takes an `unsafe` block: sound exactly when this CPU has the features. Every
//! such call sits in the arm of a match on the kind of a [`Tier`] the caller holds, and a
//! `Tier` of kind `Avx512` (or `Avx2`) can only be made by detection that found every
//! feature its kernels are compiled with (`simd.rs`), a subset of which each kernel enables;
//! the features do not change while the process runs. The AVX-512 sampling kernel
//! (`bit_counts`) runs only for a `Tier` whose `gfni` says the CPU has its byte, VBMI,
//! BITALG and GFNI instructions too. That one argument, in `by_tier!`, is the whole of the
//! tiers' `unsafe`.
//!
//! Not here: what each kernel does and the bookkeeping around it (`../mod.rs`), the loops
//! the tiers share (`../frames.rs`).

#![cfg(target_arch = "x86_64")]

/// Writes a tier's `weighted_narrowed`, the weighted pairs of two small blocks narrowed to
/// 32 bits by `pext` ([`frames::narrowed`](super::frames::narrowed), the tier's `leaf32`
/// their pair tests), compiled with `$features`, and its `pext` (BMI2). One definition for
/// the two tiers that narrow.
macro_rules! narrowed_in {
    ($features:literal) => {
        /// Weighted fitting pairs of two small blocks narrowed to 32 bits by `pext`
        /// ([`narrowed`]), [`leaf32`] their pair tests.
        #[target_feature(enable = $features)]
        pub(crate) fn weighted_narrowed(
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

        /// `words` narrowed to the bits of `meet`, written to `out`: `true`.
        #[target_feature(enable = "bmi2")]
        pub(crate) fn pext(
            words: &[u64],
            meet: u64,
            out: &mut [std::mem::MaybeUninit<u32>],
        ) -> bool {
            for (slot, &word) in out.iter_mut().zip(words) {
                slot.write(_pext_u64(word, meet) as u32);
            }
            true
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
        pub(crate) unsafe fn $name(
            $words: &[$word],
            $bit: $word,
            $a: Option<*mut $word>,
            $b: *mut $word,
        ) -> (usize, usize) $body
    };
}

pub(super) mod avx2;
pub(super) mod avx512;

/// Runs the kernel `$kernel` of the tier `$tier` names, with the arguments given:
/// `x86_64::avx512::$kernel` or `x86_64::avx2::$kernel` in an `unsafe` block, else
/// `portable::$kernel` (the paths as `../mod.rs`, where it is used, sees them). An `unsafe`
/// kernel (a pass) is called inside its caller's `unsafe` block, which these arms' blocks
/// then stand in. Two kernels are AVX-512's alone, the other tiers running the portable
/// one: `avx512 only:` (the tails' last row), and `gfni only:` for the one that needs the
/// GFNI and AVX-512 byte instructions as well (the split bit's sample), run where the
/// tier has them ([`Tier::gfni`](crate::simd::Tier::gfni)).
macro_rules! by_tier {
    ($tier:expr, $kernel:ident($($arg:expr),* $(,)?)) => {
        match $tier.kind() {
            // SAFETY: an AVX-512 `Tier` proves the CPU has its features (see `x86_64/mod.rs`).
            $crate::simd::TierKind::Avx512 => unsafe { x86_64::avx512::$kernel($($arg),*) },
            // SAFETY: an AVX2 `Tier` proves the CPU has its features (see `x86_64/mod.rs`).
            $crate::simd::TierKind::Avx2 => unsafe { x86_64::avx2::$kernel($($arg),*) },
            $crate::simd::TierKind::Portable => portable::$kernel($($arg),*),
        }
    };
    ($tier:expr, avx512 only: $kernel:ident($($arg:expr),* $(,)?)) => {
        match $tier.kind() {
            // SAFETY: an AVX-512 `Tier` proves the CPU has its features (see `x86_64/mod.rs`).
            $crate::simd::TierKind::Avx512 => unsafe { x86_64::avx512::$kernel($($arg),*) },
            _ => portable::$kernel($($arg),*),
        }
    };
    ($tier:expr, gfni only: $kernel:ident($($arg:expr),* $(,)?)) => {
        if $tier.gfni() {
            // SAFETY: a `Tier` whose `gfni` is set proves the CPU has these features (see
            // `x86_64/mod.rs`).
            unsafe { x86_64::avx512::$kernel($($arg),*) }
        } else {
            portable::$kernel($($arg),*)
        }
    };
}

/// Asks the CPU to bring the words of the slice `$words` into its nearest cache (a hint), in
/// every tier.
macro_rules! prefetch_hint {
    ($words:expr) => {
        for line in $words.chunks(8) {
            // SAFETY: SSE is part of every x86-64 CPU; a prefetch reads nothing and cannot
            // fault.
            unsafe {
                std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(
                    line.as_ptr().cast(),
                )
            };
        }
    };
}
