//! The join's kernels on targets other than x86-64: the portable kernels alone, with the
//! same functions as `x86_64/mod.rs` (a kernel's arguments and the [`Tier`] token, always
//! the portable tier here) so that `mod.rs` calls one or the other without naming the
//! target. Declared in `x86_64/mod.rs`'s place (the gate is on its `mod` line); also
//! compiled in this crate's tests on every target, so a change that breaks it shows on
//! x86-64 too.
//!
//! Not here: the kernels themselves (`portable.rs`), what each does (`mod.rs`).

use super::frames::{Free, Head, Lists};
use super::portable;
use crate::count::join::word::{Last, Layout, Tail};
use crate::simd::Tier;

/// Writes, for each kernel named, a function of the same name and arguments and the tier
/// last that runs `portable::$name`.
macro_rules! portable_only {
    ($($name:ident($($arg:ident: $ty:ty),*) -> $out:ty;)*) => {$(
        #[doc = concat!("[`", stringify!($name), "`](super::", stringify!($name), ") in the portable kernel.")]
        #[inline(always)]
        pub(super) fn $name($($arg: $ty,)* _tier: Tier) -> $out {
            portable::$name($($arg),*)
        }
    )*};
}

portable_only! {
    leaf(xs: &[u64], ys: &[u64]) -> u64;
    leaf32(xs: &[u32], ys: &[u32]) -> u64;
    having(words: &[u64], bit: u64) -> usize;
    partition(words: &[u64], bit: u64, lists: Lists) -> ();
    extend(free: &mut Free, heads: &[u64], tails: &[u64], spare: [u64; 2], tail: Tail) -> usize;
    extend_wide(free: &mut Free, head: Head, tests: &[u64], parts: &[u64]) -> usize;
    bit_counts(sample: &[u64]) -> [u8; 64];
    place(last: Last, free: &mut Free, words: &[u64], attacks: &[u64]) -> usize;
}

/// [`pass32`](super::pass32) in the portable kernel.
///
/// # Safety
/// `a` and `b` have room for the words of their kind and a register more.
#[inline(always)]
pub(super) unsafe fn pass32(
    words: &[u32],
    bit: u32,
    a: Option<*mut u32>,
    b: *mut u32,
    _tier: Tier,
) -> (usize, usize) {
    // SAFETY: the room is the caller's promise.
    unsafe { portable::pass32(words, bit, a, b) }
}

/// No narrowing without `pext`: always `None`.
#[inline(always)]
pub(super) fn weighted_narrowed(
    _layout: Layout,
    _middle: i32,
    _xs: &[u64],
    _ys: &[u64],
    _tier: Tier,
) -> Option<u64> {
    None
}

/// No `pext` here: always `false`.
#[inline(always)]
pub(super) fn has_pext(_tier: Tier) -> bool {
    false
}

/// No `pext` here: `false`, nothing written.
#[inline(always)]
pub(super) fn pext(
    _words: &[u64],
    _meet: u64,
    _out: &mut [std::mem::MaybeUninit<u32>],
    _tier: Tier,
) -> bool {
    false
}

/// No prefetch hint here: nothing.
#[inline(always)]
pub(super) fn prefetch(_words: &[u64]) {}
