//! The lanes' rounds off x86-64, in `avx512.rs`'s place (the gate is on its `mod` line in
//! `lanes.rs`): the portable rounds, never run there, since no AVX-512 `Tier` can be made
//! off x86-64; they keep `lanes.rs`'s call free of any target.

use super::state::{BURST, CountLanes};

/// Runs [`BURST`] rounds of every lane.
///
/// # Safety
/// None needed here; `unsafe` only to match `avx512.rs`'s `burst`.
pub(super) unsafe fn burst(lanes: &mut CountLanes, full: u64) {
    for _ in 0..BURST {
        lanes.step(full);
    }
}
