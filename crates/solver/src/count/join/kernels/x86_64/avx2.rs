//! The AVX2 tier's kernels, compiled for its features (`avx2,popcnt`, `bmi2` where they
//! narrow): the same names and arguments as `portable.rs`'s, four 64-bit (eight 32-bit)
//! words to a register; AVX2 has no compressing instruction, so what a pass keeps is moved
//! to the register's front by a permutation from a table ([`compress`], [`compress32`]).
//! The tails' last row has no AVX2 kernel (the portable one runs). Compiled on x86-64 only
//! (`x86_64/mod.rs` is gated); only `x86_64/mod.rs` calls these, in the arm of
//! a match on an AVX2 `Tier`, which proves the CPU has the features.

use super::super::frames::{Free, Head, Lists, each_head, narrowed, partition_frame, pass_scalar};
use super::super::portable;
use crate::count::join::word::{Layout, TAIL_BALANCE, Tail};
use std::arch::x86_64::*;

/// Writes a pair-test kernel for one width of word: four words of `xs` at a time against a
/// register of `ys`, then the last words of `xs` one at a time, each fitting pair
/// subtracting -1 (all ones) from its lane; the lanes added up (`$sum` of the four
/// accumulators `$acc`) and the last words of `ys` counted by `$rest`.
macro_rules! leaf_in {
    ($(#[$doc:meta])* $name:ident, $word:ty, $signed:ty, $lanes:literal, $set1:ident,
     $cmpeq:ident, $sub:ident, $rest:path, |$acc:ident| $sum:expr) => {
        $(#[$doc])*
        #[target_feature(enable = "avx2")]
        pub(crate) fn $name(xs: &[$word], ys: &[$word]) -> u64 {
            let whole = ys.len() / $lanes * $lanes;
            let zero = _mm256_setzero_si256();
            // SAFETY: `at + $lanes <= whole <= ys.len()` at every call, so the 32 bytes read
            // lie in `ys`.
            let load = |at: usize| unsafe { _mm256_loadu_si256(ys.as_ptr().add(at).cast()) };
            // At most one pair per word of `xs` and pass in a lane: no overflow.
            let mut $acc = [zero; 4];
            let (groups, remainder) = xs.as_chunks::<4>();
            for group in groups {
                let x = group.map(|word| $set1(word as $signed));
                for at in (0..whole).step_by($lanes) {
                    let y = load(at);
                    for k in 0..4 {
                        let fits = $cmpeq(_mm256_and_si256(x[k], y), zero);
                        $acc[k] = $sub($acc[k], fits);
                    }
                }
            }
            for &x in remainder {
                let x = $set1(x as $signed);
                for at in (0..whole).step_by($lanes) {
                    let fits = $cmpeq(_mm256_and_si256(x, load(at)), zero);
                    $acc[0] = $sub($acc[0], fits);
                }
            }
            let sum: u64 = $sum;
            sum + $rest(xs, &ys[whole..])
        }
    };
}

leaf_in!(
    /// Disjoint pairs of two small blocks: four pairs per instruction.
    leaf,
    u64,
    i64,
    4,
    _mm256_set1_epi64x,
    _mm256_cmpeq_epi64,
    _mm256_sub_epi64,
    portable::leaf,
    |acc| {
        let sum = _mm256_add_epi64(
            _mm256_add_epi64(acc[0], acc[1]),
            _mm256_add_epi64(acc[2], acc[3]),
        );
        let mut lanes = [0u64; 4];
        // SAFETY: 32 bytes written to a 32-byte array.
        unsafe { _mm256_storeu_si256(lanes.as_mut_ptr().cast(), sum) };
        lanes.iter().sum::<u64>()
    }
);

leaf_in!(
    /// [`leaf`] for words narrowed to 32 bits: eight pairs per instruction.
    leaf32,
    u32,
    i32,
    8,
    _mm256_set1_epi32,
    _mm256_cmpeq_epi32,
    _mm256_sub_epi32,
    portable::leaf32,
    |acc| {
        let mut total = 0;
        for sum in acc {
            let mut lanes = [0u32; 8];
            // SAFETY: 32 bytes written to a 32-byte array.
            unsafe { _mm256_storeu_si256(lanes.as_mut_ptr().cast(), sum) };
            total += lanes.iter().map(|&lane| u64::from(lane)).sum::<u64>();
        }
        total
    }
);

/// How many words of `words` have `bit` ([`portable::having`] compiled for the tier).
#[target_feature(enable = "avx2,popcnt")]
pub(crate) fn having(words: &[u64], bit: u64) -> usize {
    portable::having(words, bit)
}

/// For each mask of `LANES` lanes of `8 / LANES` 32-bit words each, the 32-bit lane order
/// that moves the masked lanes of an AVX2 register to its front, in order (the lanes after
/// them are left as they come).
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
static COMPRESS: [[u32; 8]; 16] = compress_orders::<4, 16>();

/// [`compress_orders`] for eight 32-bit lanes.
static COMPRESS32: [[u32; 8]; 256] = compress_orders::<8, 256>();

/// The 64-bit lanes of `words` that `mask` (bit k: lane k) selects, moved to the front in
/// order, by a permutation from a table.
#[target_feature(enable = "avx2")]
#[inline]
fn compress(words: __m256i, mask: usize) -> __m256i {
    // SAFETY: 32 bytes read from one of the table's 32-byte rows (`mask & 15` picks one).
    let order = unsafe { _mm256_loadu_si256(COMPRESS[mask & 15].as_ptr().cast()) };
    _mm256_permutevar8x32_epi32(words, order)
}

/// The 32-bit lanes of `words` that `mask` (bit k: lane k) selects, moved to the front in
/// order, by a permutation from a table.
#[target_feature(enable = "avx2")]
#[inline]
fn compress32(words: __m256i, mask: usize) -> __m256i {
    // SAFETY: 32 bytes read from one of the table's 32-byte rows (`mask & 255` picks one).
    let order = unsafe { _mm256_loadu_si256(COMPRESS32[mask & 255].as_ptr().cast()) };
    _mm256_permutevar8x32_epi32(words, order)
}

/// Writes a partition's pass for one width of word (`$lanes` to a register): the words of
/// `words` with `bit` from `a` (if given), those without from `b`, each register
/// compressed by `$compress` and stored whole, the last words one at a time; returns how
/// many of each.
macro_rules! pass_in {
    ($(#[$doc:meta])* $name:ident, $word:ty, $lanes:literal, $set1:ident, $cmpeq:ident,
     $movemask:ident, $cast:ident, $compress:ident) => {
        pass_fn!($(#[$doc])* $name, $word, "avx2,popcnt", |words, bit, a, b| {
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

pass_in!(
    /// A partition's pass four words at a time ([`compress`]).
    pass,
    u64,
    4,
    _mm256_set1_epi64x,
    _mm256_cmpeq_epi64,
    _mm256_movemask_pd,
    _mm256_castsi256_pd,
    compress
);

pass_in!(
    /// A narrowed block's partition pass eight 32-bit words at a time ([`compress32`]).
    pass32,
    u32,
    8,
    _mm256_set1_epi32,
    _mm256_cmpeq_epi32,
    _mm256_movemask_ps,
    _mm256_castsi256_ps,
    compress32
);

/// Fills the lists with the words of `words` that have `bit` and those that lack it
/// ([`pass`]).
#[target_feature(enable = "avx2,popcnt")]
pub(crate) fn partition(words: &[u64], bit: u64, lists: Lists) {
    // SAFETY: each list has room for the words of its kind and a register more (the
    // partition's callers reserve it), and `pass` writes the first slots it counts of
    // each list, within that room.
    unsafe { partition_frame(lists, |a, b| pass(words, bit, a, b)) }
}

extend_in!(#[target_feature(enable = "avx2,popcnt")]);

/// One head's halves four tails at a time (each tail's half as in [`Tail::half`]), the
/// fitting ones moved to the register's front ([`compress`]) and the register stored
/// whole; the last ones in plain Rust.
#[target_feature(enable = "avx2,popcnt")]
#[inline]
fn extend_head(free: &mut Free, [meets, share]: Head, tails: &[u64], tail: Tail) -> usize {
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
        let kept = compress(half, fits);
        // SAFETY: four words go to `free[added..]`, and `added <= at`, so they stay within
        // its `tails.len()` slots.
        unsafe { _mm256_storeu_si256(free.as_mut_ptr().add(added).cast(), kept) };
        added += fits.count_ones() as usize;
    }
    added + portable::extend_head(&mut free[added..], [meets, share], &tails[whole..], tail)
}

/// The wide path's halves of one head four tails at a time, the fitting ones moved to the
/// register's front ([`compress`]) and the register stored whole; the last ones in plain
/// Rust.
#[target_feature(enable = "avx2,popcnt")]
pub(crate) fn extend_wide(free: &mut Free, head: Head, tests: &[u64], parts: &[u64]) -> usize {
    let [test, share] = head;
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
            _mm256_storeu_si256(free.as_mut_ptr().add(added).cast(), compress(half, fits));
            added += fits.count_ones() as usize;
        }
    }
    added
        + portable::extend_wide(
            &mut free[added..],
            [test, share],
            &tests[whole..],
            &parts[whole..],
        )
}

narrowed_in!("avx2,bmi2,popcnt");
