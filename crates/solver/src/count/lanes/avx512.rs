//! The lanes' rounds written out in AVX-512 instructions (`burst`): the compiler keeps
//! the lanes' state in memory between rounds when it vectorizes the portable loop
//! (`CountLanes::step`), this keeps it in registers. Compiled on x86-64 only, gated once
//! by its first line (`generic.rs` takes its place elsewhere); called only from the AVX-512
//! tier's copy of the lanes' loop, through `avx512_burst!`.

#![cfg(target_arch = "x86_64")]

use super::state::{BURST, CountLanes, OFFSET};
use crate::lane::LANES;
use std::arch::x86_64::*;

/// Runs [`BURST`] rounds of every lane of the `&mut CountLanes` `$lanes` (`full`: the board's
/// columns, `u64` `$full`) in AVX-512 registers ([`burst`]): `unsafe`, the caller's block
/// arguing that the CPU has AVX-512.
macro_rules! avx512_burst {
    ($lanes:expr, $full:expr) => {
        avx512::burst($lanes, $full)
    };
}

/// Eight lanes' state in registers.
struct Group {
    at: __m512i,
    cols: __m512i,
    d1: __m512i,
    d2: __m512i,
    avail: __m512i,
    placed: __m512i,
    gaps: __m512i,
    stop: __m512i,
    found: __m512i,
}

/// Runs [`BURST`] rounds of every lane.
#[target_feature(enable = "avx512f,avx512cd")]
pub(super) fn burst(lanes: &mut CountLanes, full: u64) {
    const _: () = assert!(LANES == 16);
    let full = _mm512_set1_epi64(full as i64);
    let mut a = load(lanes, 0);
    let mut b = load(lanes, 8);
    for _ in 0..BURST {
        step(&mut a, full);
        step(&mut b, full);
    }
    store(lanes, 0, &a);
    store(lanes, 8, &b);
}

#[target_feature(enable = "avx512f")]
fn load(l: &CountLanes, at: usize) -> Group {
    let get = |a: &[u64; LANES]| {
        // SAFETY: `at + 8 <= LANES`, so the 64 bytes read lie in `a`.
        unsafe { _mm512_loadu_si512(a[at..at + 8].as_ptr().cast()) }
    };
    Group {
        at: get(&l.at),
        cols: get(&l.cols),
        d1: get(&l.d1),
        d2: get(&l.d2),
        avail: get(&l.avail),
        placed: get(&l.placed),
        gaps: get(&l.gaps),
        stop: get(&l.stop),
        found: get(&l.found),
    }
}

#[target_feature(enable = "avx512f")]
fn store(l: &mut CountLanes, at: usize, g: &Group) {
    let put = |a: &mut [u64; LANES], v: __m512i| {
        // SAFETY: `at + 8 <= LANES`, so the 64 bytes written lie in `a`.
        unsafe { _mm512_storeu_si512(a[at..at + 8].as_mut_ptr().cast(), v) }
    };
    put(&mut l.at, g.at);
    put(&mut l.cols, g.cols);
    put(&mut l.d1, g.d1);
    put(&mut l.d2, g.d2);
    put(&mut l.avail, g.avail);
    put(&mut l.placed, g.placed);
    put(&mut l.found, g.found);
}

/// One round of eight lanes, as [`CountLanes::step`].
#[inline]
#[target_feature(enable = "avx512f,avx512cd")]
fn step(g: &mut Group, full: __m512i) {
    let zero = _mm512_setzero_si512();
    let one = _mm512_set1_epi64(1);
    let four = _mm512_set1_epi64(4);
    let nibble = _mm512_set1_epi64(15);
    let low5 = _mm512_set1_epi64(31);
    let top = _mm512_set1_epi64(63);
    // Forward: the lowest column left, into the next free row.
    let bit = _mm512_and_si512(g.avail, _mm512_sub_epi64(zero, g.avail));
    let gap = _mm512_and_si512(_mm512_srlv_epi64(g.gaps, g.at), nibble);
    let fc = _mm512_or_si512(g.cols, bit);
    let shifted = _mm512_slli_epi64::<OFFSET>(bit);
    let f1 = _mm512_sllv_epi64(_mm512_or_si512(g.d1, shifted), gap);
    let f2 = _mm512_srlv_epi64(_mm512_or_si512(g.d2, shifted), gap);
    let taken = _mm512_or_si512(fc, _mm512_srli_epi64::<OFFSET>(_mm512_or_si512(f1, f2)));
    let child = _mm512_andnot_si512(taken, full);
    let has = _mm512_test_epi64_mask(g.avail, g.avail);
    let alive = has & _mm512_test_epi64_mask(child, child);
    let at_stop = _mm512_cmpeq_epi64_mask(g.at, g.stop);
    // Forward check: the row after the child's must keep a free square too.
    let gap2 = _mm512_and_si512(
        _mm512_srlv_epi64(g.gaps, _mm512_add_epi64(g.at, four)),
        nibble,
    );
    let g1 = _mm512_sllv_epi64(f1, gap2);
    let g2 = _mm512_srlv_epi64(f2, gap2);
    let gtaken = _mm512_or_si512(fc, _mm512_srli_epi64::<OFFSET>(_mm512_or_si512(g1, g2)));
    let grand = _mm512_andnot_si512(gtaken, full);
    let descend = alive & !at_stop & _mm512_test_epi64_mask(grand, grand);
    let hit = alive & at_stop;
    // Backward: undo the latest placement, keep the columns after it.
    let back = _mm512_sllv_epi64(one, _mm512_and_si512(g.placed, low5));
    let up = _mm512_sub_epi64(g.at, four);
    let bgap = _mm512_and_si512(_mm512_srlv_epi64(g.gaps, up), nibble);
    let back_shifted = _mm512_slli_epi64::<OFFSET>(back);
    let bc = _mm512_xor_si512(g.cols, back);
    let b1 = _mm512_xor_si512(_mm512_srlv_epi64(g.d1, bgap), back_shifted);
    let b2 = _mm512_xor_si512(_mm512_sllv_epi64(g.d2, bgap), back_shifted);
    let btaken = _mm512_or_si512(bc, _mm512_srli_epi64::<OFFSET>(_mm512_or_si512(b1, b2)));
    let after = _mm512_sub_epi64(zero, _mm512_slli_epi64::<1>(back));
    let bavail = _mm512_and_si512(_mm512_andnot_si512(btaken, full), after);
    let go_back = !has & _mm512_test_epi64_mask(g.at, g.at);
    // Each lane takes its move.
    let pick = |here: __m512i, ahead: __m512i, behind: __m512i| {
        _mm512_mask_mov_epi64(_mm512_mask_mov_epi64(here, descend, ahead), go_back, behind)
    };
    g.found = _mm512_mask_add_epi64(g.found, hit, g.found, one);
    g.at = pick(g.at, _mm512_add_epi64(g.at, four), up);
    g.cols = pick(g.cols, fc, bc);
    g.d1 = pick(g.d1, f1, b1);
    g.d2 = pick(g.d2, f2, b2);
    g.avail = pick(_mm512_xor_si512(g.avail, bit), child, bavail);
    let column = _mm512_sub_epi64(top, _mm512_lzcnt_epi64(bit));
    let pushed = _mm512_or_si512(_mm512_slli_epi64::<5>(g.placed), column);
    g.placed = pick(g.placed, pushed, _mm512_srli_epi64::<5>(g.placed));
}
