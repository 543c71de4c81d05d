//! The lines a client command prints about its results: counts on stdout, per-endpoint
//! statistics of a fan-out on stderr. Boards are written by `enumerate.rs` (through
//! `crate::render`).

use crate::fanout::EndpointStats;

/// Prints a result's counts on stdout (`turn_fixed`: a part's, whose classes are not its
/// own).
pub(super) fn print_counts(solutions: u64, fundamental: Option<u64>, turn_fixed: Option<u64>) {
    println!("solutions: {solutions}");
    if let Some(fundamental) = fundamental {
        println!("fundamental: {fundamental}");
    }
    if let Some(turn_fixed) = turn_fixed {
        println!("turn_fixed: {turn_fixed}");
    }
}

/// Per-endpoint statistics of a fan-out, on stderr, and a line for each endpoint given up.
pub(super) fn print_stats(stats: &[EndpointStats]) {
    for s in stats {
        eprintln!(
            "{}: {} shards, {} solutions, {} failed calls, {:.2} s busy",
            s.url, s.shards, s.solutions, s.failures, s.busy_seconds
        );
        if let Some(why) = &s.gave_up {
            eprintln!("gave up on {}: {why}", s.url);
        }
    }
}
