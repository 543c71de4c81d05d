//! The join's kernels on targets other than x86-64: the portable kernels alone, behind the
//! same `by_tier!` and `prefetch_hint!` as `x86_64/mod.rs`, so that `mod.rs` calls one or
//! the other without naming the target. Gated once, by its first line: compiled in
//! `x86_64/`'s place, and in this crate's tests on every target, so that a change that
//! breaks it shows on x86-64 too (where `x86_64/`'s macros shadow these, see `mod.rs`).
//!
//! Not here: the kernels themselves (`portable.rs`), what each does (`mod.rs`).

#![cfg(any(not(target_arch = "x86_64"), test))]

/// Runs the portable kernel `$kernel` with the arguments given (every tier is the portable
/// one here, whichever kernels AVX-512 alone has).
#[allow(unused_macros)] // compiled in tests on x86-64, where only its test calls it
macro_rules! by_tier {
    ($tier:expr, $(avx512)? $(gfni)? only: $kernel:ident($($arg:expr),* $(,)?)) => {{
        let _: $crate::simd::Tier = $tier;
        portable::$kernel($($arg),*)
    }};
    ($tier:expr, $kernel:ident($($arg:expr),* $(,)?)) => {{
        let _: $crate::simd::Tier = $tier;
        portable::$kernel($($arg),*)
    }};
}

/// No prefetch hint here: the slice `$words` is only evaluated.
#[allow(unused_macros)] // compiled in tests on x86-64, where nothing calls it
macro_rules! prefetch_hint {
    ($words:expr) => {{
        let _: &[u64] = $words;
    }};
}

#[cfg(test)]
mod tests {
    use super::super::portable;
    use crate::simd::{Tier, TierKind};

    /// Each form of this `by_tier!` runs the portable kernel (x86-64 never calls it outside
    /// this test).
    #[test]
    fn each_form_runs_the_portable_kernel() {
        let tier = Tier::detect(TierKind::Portable).expect("every CPU has the portable tier");
        let (xs, ys) = ([0b0011u64, 0b0100, 0b1000], [0b0001u64, 0b1100]);
        let want = portable::leaf(&xs, &ys);
        assert_eq!(want, 3, "pairs with no bit in common");
        assert_eq!(by_tier!(tier, leaf(&xs, &ys)), want);
        assert_eq!(by_tier!(tier, avx512 only: leaf(&xs, &ys)), want);
        assert_eq!(by_tier!(tier, gfni only: leaf(&xs, &ys)), want);
    }
}
