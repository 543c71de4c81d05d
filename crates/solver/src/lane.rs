//! What the two lockstep lane engines share: how many lanes step together ([`LANES`]). The
//! engines themselves stay apart (`lockstep.rs` enumerates boards over contiguous rows,
//! `count/lanes.rs` counts the completions of boards whose free rows have gaps); each file's
//! header says why. Each engine writes its per-lane move choice out in its own round: moved
//! into a shared function, the compiler stopped turning it into selects across the lanes, and
//! Count in AVX2 lanes ran 2.5x slower (measured with `cargo bench --bench count`).

/// Lanes stepped together: two AVX-512 registers of 64-bit words.
pub(crate) const LANES: usize = 16;
