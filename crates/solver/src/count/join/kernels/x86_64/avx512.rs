//! The AVX-512 tier's kernels, compiled for its features (`avx512f,popcnt`, `bmi2` where
//! they narrow, and the byte, VBMI, BITALG and GFNI instructions for [`bit_counts`]): the
//! same names and arguments as `portable.rs`'s, eight 64-bit (sixteen 32-bit) words to a
//! register, what a pass keeps compressed in the register and stored whole. Compiled on
//! x86-64 only (`x86_64/mod.rs` is gated); only `x86_64/mod.rs` calls these, in
//! the arm of a match on an AVX-512 `Tier`, which proves the CPU has the features.

use super::super::frames::{Free, Head, Lists, each_head, narrowed, partition_frame};
use super::super::portable;
use crate::count::join::word::{Last, Layout, TAIL_BALANCE, Tail};
use std::arch::x86_64::*;

/// Writes a pair-test kernel for one width of word: four words of `xs` at a time against a
/// register of `ys`, then the last words of `xs` one at a time; the last words of `ys` in a
/// masked load; each lane's fitting pairs added up, then the lanes (`$sum` of the four
/// accumulators `$acc`).
macro_rules! leaf_in {
    ($(#[$doc:meta])* $name:ident, $word:ty, $signed:ty, $mask:ty, $lanes:literal, $set1:ident,
     $load:ident, $testn:ident, $mask_testn:ident, $add:ident, |$acc:ident| $sum:expr) => {
        $(#[$doc])*
        #[target_feature(enable = "avx512f")]
        pub(crate) fn $name(xs: &[$word], ys: &[$word]) -> u64 {
            let whole = ys.len() / $lanes * $lanes;
            let last = ((1u32 << (ys.len() - whole)) - 1) as $mask;
            let one = $set1(1);
            // SAFETY: `at + $lanes <= whole <= ys.len()` at every call, so the 64 bytes read
            // lie in `ys`.
            let load = |at: usize| unsafe { _mm512_loadu_si512(ys.as_ptr().add(at).cast()) };
            // SAFETY: the masked load reads only the `ys.len() - whole` words left after
            // `whole`.
            let rest = unsafe { $load(last, ys.as_ptr().add(whole).cast()) };
            // A lane counts at most one pair per word of `xs` and pass: no overflow.
            let mut $acc = [_mm512_setzero_si512(); 4];
            let mut groups = xs.chunks_exact(4);
            for group in &mut groups {
                let x: [__m512i; 4] = std::array::from_fn(|k| $set1(group[k] as $signed));
                for at in (0..whole).step_by($lanes) {
                    let y = load(at);
                    for k in 0..4 {
                        let fits = $testn(x[k], y);
                        $acc[k] = $add($acc[k], fits, $acc[k], one);
                    }
                }
                for k in 0..4 {
                    let fits = $mask_testn(last, x[k], rest);
                    $acc[k] = $add($acc[k], fits, $acc[k], one);
                }
            }
            for &x in groups.remainder() {
                let x = $set1(x as $signed);
                for at in (0..whole).step_by($lanes) {
                    let fits = $testn(x, load(at));
                    $acc[0] = $add($acc[0], fits, $acc[0], one);
                }
                let fits = $mask_testn(last, x, rest);
                $acc[0] = $add($acc[0], fits, $acc[0], one);
            }
            $sum
        }
    };
}

leaf_in!(
    /// Disjoint pairs of two small blocks: eight pairs per instruction.
    leaf,
    u64,
    i64,
    u8,
    8,
    _mm512_set1_epi64,
    _mm512_maskz_loadu_epi64,
    _mm512_testn_epi64_mask,
    _mm512_mask_testn_epi64_mask,
    _mm512_mask_add_epi64,
    |acc| {
        let sum = _mm512_add_epi64(
            _mm512_add_epi64(acc[0], acc[1]),
            _mm512_add_epi64(acc[2], acc[3]),
        );
        _mm512_reduce_add_epi64(sum) as u64
    }
);

leaf_in!(
    /// [`leaf`] for words narrowed to 32 bits: sixteen pairs per instruction.
    leaf32,
    u32,
    i32,
    u16,
    16,
    _mm512_set1_epi32,
    _mm512_maskz_loadu_epi32,
    _mm512_testn_epi32_mask,
    _mm512_mask_testn_epi32_mask,
    _mm512_mask_add_epi32,
    |acc| acc
        .iter()
        .map(|&a| _mm512_reduce_add_epi32(a) as u32 as u64)
        .sum()
);

/// How many words of `words` have `bit` ([`portable::having`] compiled for the tier).
#[target_feature(enable = "avx512f,popcnt")]
pub(crate) fn having(words: &[u64], bit: u64) -> usize {
    portable::having(words, bit)
}

/// Writes a partition's pass for one width of word (`$lanes` to a register): the words of
/// `words` with `bit` from `a` (if given), those without from `b`, each register
/// compressed in place and stored whole (a compressing store to memory is slow on some
/// CPUs); returns how many of each.
macro_rules! pass_in {
    ($(#[$doc:meta])* $name:ident, $word:ty, $mask:ty, $lanes:literal,
     $set1:ident, $load:ident, $test:ident, $compress:ident) => {
        pass_fn!($(#[$doc])* $name, $word, "avx512f,popcnt", |words, bit, a, b| {
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

pass_in!(
    /// A partition's pass eight words at a time.
    pass,
    u64,
    u8,
    8,
    _mm512_set1_epi64,
    _mm512_maskz_loadu_epi64,
    _mm512_test_epi64_mask,
    _mm512_maskz_compress_epi64
);

pass_in!(
    /// A narrowed block's partition pass sixteen 32-bit words at a time.
    pass32,
    u32,
    u16,
    16,
    _mm512_set1_epi32,
    _mm512_maskz_loadu_epi32,
    _mm512_test_epi32_mask,
    _mm512_maskz_compress_epi32
);

/// Fills the lists with the words of `words` that have `bit` and those that lack it
/// ([`pass`]).
#[target_feature(enable = "avx512f,popcnt")]
pub(crate) fn partition(words: &[u64], bit: u64, lists: Lists) {
    // SAFETY: each list has room for the words of its kind and a register more (the
    // partition's callers reserve it), and `pass` writes the first slots it counts of
    // each list, within that room.
    unsafe { partition_frame(lists, |a, b| pass(words, bit, a, b)) }
}

/// Per bit, how many words of `sample` (a multiple of eight, at most 255) have it, eight
/// words at a time: the register's bytes transposed so that a quadword holds one byte of
/// each word, each 8 x 8 bit block transposed (GFNI), so that a byte holds one bit of each
/// word, and the bytes' bits counted.
#[target_feature(enable = "avx512f,avx512bw,avx512vbmi,avx512bitalg,gfni")]
pub(crate) fn bit_counts(sample: &[u64]) -> [u8; 64] {
    debug_assert!(sample.len().is_multiple_of(8) && sample.len() < 256);
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

/// The tails' last row placed eight placements at a time: the placements before (their
/// words so far and the columns they attack on her row) that leave her column free, with
/// her added.
#[target_feature(enable = "avx512f,popcnt")]
pub(crate) fn place(last: Last, free: &mut Free, words: &[u64], attacks: &[u64]) -> usize {
    let (bit, up, balance) = (
        _mm512_set1_epi64(last.bit as i64),
        _mm512_set1_epi64(last.up as i64),
        _mm512_set1_epi64(last.balance as i64),
    );
    compress_pairs(free, words, attacks, |word, attack, live| {
        let fits = _mm512_mask_testn_epi64_mask(live, attack, bit);
        (fits, _mm512_add_epi64(_mm512_or_si512(word, up), balance))
    })
}

/// The loop of [`place`] and [`extend_wide`]: eight entries of `a` and of `b` side by side
/// at a time (whole registers in plain loads, the last few in masked ones), `keep` making of
/// each two registers (and the mask of the live lanes) the lanes to keep and their words,
/// the kept words compressed in the register and stored whole to `free` after those before;
/// returns how many were kept. `free` has room for them all and eight slots more.
#[target_feature(enable = "avx512f,popcnt")]
#[inline]
fn compress_pairs(
    free: &mut Free,
    a: &[u64],
    b: &[u64],
    keep: impl Fn(__m512i, __m512i, __mmask8) -> (__mmask8, __m512i),
) -> usize {
    let len = a.len().min(b.len());
    let whole = len / 8 * 8;
    let mut added = 0;
    // Stores the kept lanes of one register after those before.
    let mut put = |(fits, made): (__mmask8, __m512i)| {
        // SAFETY: eight slots from `added`, at most the entries read before this register,
        // within `free`'s room for all of them and eight more.
        unsafe {
            _mm512_storeu_si512(
                free.as_mut_ptr().add(added).cast(),
                _mm512_maskz_compress_epi64(fits, made),
            )
        };
        added += fits.count_ones() as usize;
    };
    for at in (0..whole).step_by(8) {
        // SAFETY: `at + 8 <= len`: eight words of both lists, unaligned loads.
        let (x, y) = unsafe {
            (
                _mm512_loadu_si512(a.as_ptr().add(at).cast()),
                _mm512_loadu_si512(b.as_ptr().add(at).cast()),
            )
        };
        put(keep(x, y, 0xff));
    }
    if whole < len {
        let live = (0xffu32 >> (8 - (len - whole))) as u8;
        // SAFETY: the masked loads read the `len - whole` words left, fewer than eight.
        let (x, y) = unsafe {
            (
                _mm512_maskz_loadu_epi64(live, a.as_ptr().add(whole).cast()),
                _mm512_maskz_loadu_epi64(live, b.as_ptr().add(whole).cast()),
            )
        };
        put(keep(x, y, live));
    }
    added
}

extend_in!(#[target_feature(enable = "avx512f,popcnt")]);

/// One head's halves eight tails at a time, the fitting ones compressed in a register and
/// stored whole.
#[target_feature(enable = "avx512f,popcnt")]
#[inline]
fn extend_head(free: &mut Free, [meets, share]: Head, tails: &[u64], tail: Tail) -> usize {
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

/// The wide path's halves of one head eight tails at a time, the fitting ones compressed in
/// a register and stored whole.
#[target_feature(enable = "avx512f,popcnt")]
pub(crate) fn extend_wide(free: &mut Free, head: Head, tests: &[u64], parts: &[u64]) -> usize {
    let [test, share] = head;
    let [test, share] = [test, share].map(|v| _mm512_set1_epi64(v as i64));
    compress_pairs(free, tests, parts, |t, p, live| {
        (
            _mm512_mask_testn_epi64_mask(live, test, t),
            _mm512_add_epi64(share, p),
        )
    })
}

narrowed_in!("avx512f,bmi2,popcnt");
