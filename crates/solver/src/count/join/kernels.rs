//! The SIMD kernels that build the join's words: the last row of the tails' table placed
//! eight placements at a time ([`Last::place`]), and a key's halves made of every fitting
//! pair of a head and a tail ([`extend`]), each in plain Rust and compiled for the AVX-512
//! and AVX2 tiers, picked by the [`Tier`] token (see `simd.rs`). The tables these loops
//! read and write live in `tables.rs`, the loops that call them in `tables.rs` and
//! `halves.rs`; the pair counting's kernels in `sieve.rs`.

#[cfg(target_arch = "x86_64")]
use super::sieve::compress_avx2;
#[cfg(target_arch = "x86_64")]
use super::tables::TAIL_BALANCE;
use super::tables::Tail;
use crate::simd::{Tier, TierKind};

/// The tail's last queen on one column, for the tails' table (`tables.rs`): her column's
/// bit, her traces in a tail's word, and her balance where the word keeps it.
#[derive(Clone, Copy)]
pub(super) struct Last {
    /// Her column's bit.
    pub(super) bit: u64,
    /// Her diagonals traced back to the tail's first row ([`Tail::trace`]).
    pub(super) up: u64,
    /// Her balance, where the tail's word keeps it.
    pub(super) balance: u64,
}

impl Last {
    /// Writes to `free` the tail words of the placements before (their words so far and the
    /// columns they attack on her row) that leave her column free, with her added, and
    /// returns how many; `free` has room for them and eight slots more.
    pub(super) fn place(
        self,
        free: &mut Free,
        words: &[u64],
        attacks: &[u64],
        tier: Tier,
    ) -> usize {
        match tier.kind() {
            #[cfg(target_arch = "x86_64")]
            // SAFETY: an AVX-512 `Tier` proves the CPU has its features (see `simd.rs`).
            TierKind::Avx512 => unsafe { self.place_avx512(free, words, attacks) },
            _ => self.place_portable(free, words, attacks),
        }
    }

    /// [`Last::place`] in plain Rust: every slot is written, and only fitting ones advance.
    fn place_portable(self, free: &mut Free, words: &[u64], attacks: &[u64]) -> usize {
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
    fn place_avx512(self, free: &mut Free, words: &[u64], attacks: &[u64]) -> usize {
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

/// Appends to `out` the halves made of a head of `heads` (its test word and share side by
/// side, but those whose share has bits of `spare[0]`, the middle queen's, which no half may
/// have) and a tail of `tails` that fits it (and has no bits of `spare[1]`, hers in a tail's
/// word); `out` has room for every pair and a register more.
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
    let added = match tier.kind() {
        #[cfg(target_arch = "x86_64")]
        // SAFETY: an AVX-512 `Tier` proves the CPU has its features (see `simd.rs`).
        TierKind::Avx512 => unsafe { each_head_avx512(free, heads, tails, spare, tail) },
        #[cfg(target_arch = "x86_64")]
        // SAFETY: an AVX2 `Tier` proves the CPU has its features (see `simd.rs`).
        TierKind::Avx2 => unsafe { each_head_avx2(free, heads, tails, spare, tail) },
        _ => each_head(free, heads, tails, spare, tail, extend_portable),
    };
    // SAFETY: the first `added` slots after `start` were written just now.
    unsafe { out.set_len(start + added) };
}

/// What a head brings to [`extend`]'s loop over the tails: the bits a fitting tail's word
/// lacks (the head's traces and the middle queen's), and the head's share.
type Head = [u64; 2];

/// The slots a kernel writes the fitting tails' halves into, ahead of their count.
type Free = [std::mem::MaybeUninit<u64>];

/// [`extend`]'s loop over the heads, each head's halves written by `one` (which writes at
/// most `tails`' length of slots, and returns how many it kept) after those kept before.
#[inline(always)]
fn each_head(
    free: &mut Free,
    heads: &[u64],
    tails: &[u64],
    [spare, spare_tail]: [u64; 2],
    tail: Tail,
    one: impl Fn(&mut Free, Head, &[u64], Tail) -> usize,
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

/// Writes `$name`, [`each_head`] compiled with the features `$features` and with the kernel
/// `$kernel` inlined: one function per tier, as `#[target_feature]` compiles one copy each.
macro_rules! each_head_in {
    ($(#[$doc:meta])* $name:ident, $features:tt, $kernel:ident) => {
        $(#[$doc])*
        #[cfg(target_arch = "x86_64")]
        #[target_feature(enable = $features)]
        fn $name(
            free: &mut Free,
            heads: &[u64],
            tails: &[u64],
            spare: [u64; 2],
            tail: Tail,
        ) -> usize {
            each_head(free, heads, tails, spare, tail, |free, head, tails, tail| {
                $kernel(free, head, tails, tail)
            })
        }
    };
}

each_head_in!(
    /// [`each_head`] with the AVX-512 kernel, compiled for it (the kernel inlined).
    each_head_avx512,
    "avx512f,popcnt",
    extend_avx512
);
each_head_in!(
    /// [`each_head`] with the AVX2 kernel, compiled for it (the kernel inlined).
    each_head_avx2,
    "avx2,popcnt",
    extend_avx2
);

/// [`extend`]'s loop in plain Rust: every slot is written, and only fitting tails advance;
/// eight tails' halves and tests at a time first (which the compiler vectorises), then
/// their slots.
#[inline(always)]
fn extend_portable(free: &mut Free, [meets, share]: Head, tails: &[u64], tail: Tail) -> usize {
    assert!(free.len() >= tails.len());
    let mut added = 0;
    let (groups, rest) = tails.as_chunks::<8>();
    for group in groups {
        let halves = group.map(|word| tail.half(share, word));
        let keep = group.map(|word| usize::from(meets & word == 0));
        for (half, keep) in halves.into_iter().zip(keep) {
            // SAFETY: `added` is at most the tails before this one, fewer than `tails.len()`,
            // which is at most `free.len()` (asserted above).
            unsafe { free.get_unchecked_mut(added).write(half) };
            added += keep;
        }
    }
    for &word in rest {
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
fn extend_avx512(free: &mut Free, [meets, share]: Head, tails: &[u64], tail: Tail) -> usize {
    use std::arch::x86_64::*;
    let len = tails.len();
    let [m, h, low, high, balance] =
        [meets, share, tail.low, tail.high, TAIL_BALANCE].map(|v| _mm512_set1_epi64(v as i64));
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

/// [`extend`]'s loop four tails at a time (each tail's half as in [`Tail::half`]), the
/// fitting ones moved to the register's front by a permutation ([`compress_avx2`]) and the
/// register stored whole.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,popcnt")]
#[inline]
fn extend_avx2(free: &mut Free, [meets, share]: Head, tails: &[u64], tail: Tail) -> usize {
    use std::arch::x86_64::*;
    let whole = tails.len() / 4 * 4;
    let [m, h, low, high, balance] =
        [meets, share, tail.low, tail.high, TAIL_BALANCE].map(|v| _mm256_set1_epi64x(v as i64));
    let shift = _mm_cvtsi32_si128(tail.shift as i32);
    let zero = _mm256_setzero_si256();
    let mut added = 0;
    for at in (0..whole).step_by(4) {
        // SAFETY: `at + 4 <= whole <= tails.len()`; an unaligned load.
        let word = unsafe { _mm256_loadu_si256(tails.as_ptr().add(at).cast()) };
        let fits = _mm256_cmpeq_epi64(_mm256_and_si256(m, word), zero);
        let fits = _mm256_movemask_pd(_mm256_castsi256_pd(fits)) as usize;
        let shifted = _mm256_srl_epi64(word, shift);
        let half = _mm256_or_si256(
            _mm256_add_epi64(h, _mm256_and_si256(shifted, balance)),
            _mm256_or_si256(_mm256_and_si256(word, low), _mm256_and_si256(shifted, high)),
        );
        let kept = compress_avx2(half, fits);
        // SAFETY: four words go to `free[added..]`, and `added <= at`, so they stay within
        // its `tails.len()` slots.
        unsafe { _mm256_storeu_si256(free.as_mut_ptr().add(added).cast(), kept) };
        added += fits.count_ones() as usize;
    }
    added + extend_portable(&mut free[added..], [meets, share], &tails[whole..], tail)
}

/// Appends to `out` the halves of the wide path (`wide.rs`) made of one head (its test word
/// and its share) and each tail of `tests` and `parts` that fits it (their test words share
/// no bit): the head's share and the tail's added (their diagonals never overlap in a
/// fitting pair, and the balances add). `out` has room for every tail and a register more.
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
    let added = match tier.kind() {
        #[cfg(target_arch = "x86_64")]
        // SAFETY: an AVX-512 `Tier` proves the CPU has its features (see `simd.rs`).
        TierKind::Avx512 => unsafe { extend_wide_avx512(free, head, tests, parts) },
        #[cfg(target_arch = "x86_64")]
        // SAFETY: an AVX2 `Tier` proves the CPU has its features (see `simd.rs`).
        TierKind::Avx2 => unsafe { extend_wide_avx2(free, head, tests, parts) },
        _ => extend_wide_portable(free, head, tests, parts),
    };
    // SAFETY: the first `added` slots after `start` were written just now.
    unsafe { out.set_len(start + added) };
}

/// [`extend_wide`] in plain Rust: every slot is written, and only fitting tails advance.
#[inline(always)]
fn extend_wide_portable(
    free: &mut Free,
    [test, share]: Head,
    tests: &[u64],
    parts: &[u64],
) -> usize {
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

/// [`extend_wide`] eight tails at a time, the fitting ones compressed in a register and
/// stored whole.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,popcnt")]
fn extend_wide_avx512(free: &mut Free, [test, share]: Head, tests: &[u64], parts: &[u64]) -> usize {
    use std::arch::x86_64::*;
    let len = tests.len();
    let [test, share] = [test, share].map(|v| _mm512_set1_epi64(v as i64));
    let mut added = 0;
    for at in (0..len).step_by(8) {
        let live = (0xffu32 >> (8 - (len - at).min(8))) as u8;
        // SAFETY: the masked loads read the (at most eight) words left from `at`; the store
        // writes eight slots from `added`, which is at most `at`, within `len + 8`.
        unsafe {
            let t = _mm512_maskz_loadu_epi64(live, tests.as_ptr().add(at).cast());
            let p = _mm512_maskz_loadu_epi64(live, parts.as_ptr().add(at).cast());
            let fits = _mm512_mask_testn_epi64_mask(live, test, t);
            let half = _mm512_add_epi64(share, p);
            _mm512_storeu_si512(
                free.as_mut_ptr().add(added).cast(),
                _mm512_maskz_compress_epi64(fits, half),
            );
            added += fits.count_ones() as usize;
        }
    }
    added
}

/// [`extend_wide`] four tails at a time, the fitting ones moved to the register's front
/// ([`compress_avx2`]) and the register stored whole; the last ones in plain Rust.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,popcnt")]
fn extend_wide_avx2(free: &mut Free, [test, share]: Head, tests: &[u64], parts: &[u64]) -> usize {
    use std::arch::x86_64::*;
    let whole = tests.len() / 4 * 4;
    let [t4, s4] = [test, share].map(|v| _mm256_set1_epi64x(v as i64));
    let zero = _mm256_setzero_si256();
    let mut added = 0;
    for at in (0..whole).step_by(4) {
        // SAFETY: `at + 4 <= whole`; the store writes four slots from `added <= at`, within
        // `tests.len() + 8`.
        unsafe {
            let t = _mm256_loadu_si256(tests.as_ptr().add(at).cast());
            let p = _mm256_loadu_si256(parts.as_ptr().add(at).cast());
            let fits = _mm256_cmpeq_epi64(_mm256_and_si256(t4, t), zero);
            let fits = _mm256_movemask_pd(_mm256_castsi256_pd(fits)) as usize;
            let half = _mm256_add_epi64(s4, p);
            _mm256_storeu_si256(
                free.as_mut_ptr().add(added).cast(),
                compress_avx2(half, fits),
            );
            added += fits.count_ones() as usize;
        }
    }
    added
        + extend_wide_portable(
            &mut free[added..],
            [test, share],
            &tests[whole..],
            &parts[whole..],
        )
}
