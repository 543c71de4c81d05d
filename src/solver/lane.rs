//! What the two lockstep lane engines share: how many lanes step together ([`LANES`]) and
//! how a lane takes its move in a round ([`choose`]). The engines themselves stay apart
//! (`lockstep.rs` enumerates boards over contiguous rows, `count/lanes.rs` counts the
//! completions of boards whose free rows have gaps); each file's header says why.

/// Lanes stepped together: two AVX-512 registers of 64-bit words.
pub(crate) const LANES: usize = 16;

/// One field of a lane after a round, without a branch: `ahead` when the lane places its
/// next queen (`descend`), `behind` when it backs up a row (`go_back`), else `here` (the
/// column tried is dropped, or the lane has finished and stays put).
#[inline(always)]
pub(crate) fn choose(descend: bool, go_back: bool, ahead: u64, behind: u64, here: u64) -> u64 {
    if descend {
        ahead
    } else if go_back {
        behind
    } else {
        here
    }
}
