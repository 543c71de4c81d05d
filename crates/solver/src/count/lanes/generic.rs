//! The lanes' rounds off x86-64, in `avx512.rs`'s place: the portable rounds, never run
//! there, since no AVX-512 `Tier` can be made off x86-64; they keep `lanes.rs`'s call free
//! of any target. Gated once, by its first line: compiled off x86-64, and in tests on every
//! target (where, on x86-64, `avx512.rs`'s macro shadows this one, see `lanes.rs`).

#![cfg(any(not(target_arch = "x86_64"), test))]

use super::state::{BURST, CountLanes};

/// Runs [`BURST`] portable rounds of every lane of the `&mut CountLanes` `$lanes` (`full`:
/// the board's columns, `u64` `$full`): [`burst`], in `avx512.rs`'s macro's place.
#[allow(unused_macros)] // compiled in tests on x86-64, where nothing calls it
macro_rules! avx512_burst {
    ($lanes:expr, $full:expr) => {
        generic::burst($lanes, $full)
    };
}

/// Runs [`BURST`] rounds of every lane.
///
/// # Safety
/// None needed here; `unsafe` only to match `avx512.rs`'s `burst`.
#[allow(dead_code)] // compiled in tests on x86-64, where nothing calls it
pub(super) unsafe fn burst(lanes: &mut CountLanes, full: u64) {
    for _ in 0..BURST {
        lanes.step(full);
    }
}
