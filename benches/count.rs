//! Counting speed: the fast counter against a plain mirror-symmetric bitboard counter (the
//! baseline, written here) and the plain search's `count`, in one run.
//!
//! Every answer is checked against the baseline's (a mismatch panics). Single-threaded
//! counters are timed in CPU time of the running thread; parallel ones in wall time. Ratios
//! are to the baseline's CPU time.
//!
//! `cargo bench --bench count` runs n = 15, 16, 17. Pick sizes with arguments or the
//! `QUEENS_BENCH_N` variable (comma-separated), e.g. `cargo bench --bench count -- 10 11` for a
//! smoke run; `QUEENS_BENCH_THREADS` sets the parallel counter's threads (default 2).

use queens::solver::{Counts, Problem, Shard, count, count_fast, count_parallel};
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};

/// Sizes measured when none are given.
const DEFAULT_SIZES: [u32; 3] = [15, 16, 17];

fn main() {
    let sizes = sizes();
    let threads = std::env::var("QUEENS_BENCH_THREADS")
        .ok()
        .and_then(|t| t.parse().ok())
        .unwrap_or(2);
    println!(
        "{:>3} {:>14} {:>10} {:>10} {:>6} {:>10} {:>6} {:>10} {:>6}",
        "n",
        "solutions",
        "base cpu",
        "search cpu",
        "ratio",
        "fast cpu",
        "ratio",
        format!("fast×{threads} wall"),
        "ratio"
    );
    for n in sizes {
        row(n, threads);
    }
}

/// The sizes asked for on the command line or in `QUEENS_BENCH_N`, else the defaults.
fn sizes() -> Vec<u32> {
    let mut asked: Vec<u32> = std::env::args()
        .skip(1)
        .filter_map(|a| a.parse().ok())
        .collect();
    if asked.is_empty()
        && let Ok(list) = std::env::var("QUEENS_BENCH_N")
    {
        asked = list
            .split(',')
            .filter_map(|a| a.trim().parse().ok())
            .collect();
    }
    if asked.is_empty() {
        DEFAULT_SIZES.to_vec()
    } else {
        asked
    }
}

/// Measures and prints one board size.
fn row(n: u32, threads: usize) {
    let never = AtomicBool::new(false);
    let problem = Problem::new(n, &[], false, Shard::WHOLE).expect("a valid size");
    let (expected, base) = cpu_time(|| baseline(n));
    let (search, search_cpu) = cpu_time(|| count(&problem, &never).expect("search count"));
    let (fast, fast_cpu) = cpu_time(|| count_fast(&problem, &never).expect("fast count"));
    let started = Instant::now();
    let parallel = count_parallel(&problem, &never, threads).expect("parallel count");
    let parallel_wall = started.elapsed();
    for (name, got) in [("search", search), ("fast", fast), ("parallel", parallel)] {
        check(n, name, got, expected);
    }
    assert_eq!(
        search.fundamental, fast.fundamental,
        "n = {n}: classes differ"
    );
    assert_eq!(
        search.fundamental, parallel.fundamental,
        "n = {n}: classes differ"
    );
    let ratio = |d: Duration| d.as_secs_f64() / base.as_secs_f64();
    println!(
        "{n:>3} {expected:>14} {:>9.3}s {:>9.3}s {:>6.3} {:>9.3}s {:>6.3} {:>12.3}s {:>6.3}",
        base.as_secs_f64(),
        search_cpu.as_secs_f64(),
        ratio(search_cpu),
        fast_cpu.as_secs_f64(),
        ratio(fast_cpu),
        parallel_wall.as_secs_f64(),
        ratio(parallel_wall),
    );
}

/// Panics when a counter disagrees with the baseline.
fn check(n: u32, name: &str, got: Counts, expected: u64) {
    assert_eq!(
        got.solutions, expected,
        "n = {n}: {name} disagrees with the baseline"
    );
}

/// The baseline: a plain bitboard counter (Somers-style) that searches the queen of row 0 in
/// the left half of the board and doubles, plus the middle column on odd boards.
fn baseline(n: u32) -> u64 {
    let full = u32::MAX >> (32 - n);
    let mut total = 0;
    for c in 0..n / 2 {
        let bit = 1 << c;
        total += 2 * plain(full, bit, bit << 1, bit >> 1);
    }
    if n % 2 == 1 {
        let bit = 1 << (n / 2);
        total += plain(full, bit, bit << 1, bit >> 1);
    }
    total
}

/// Completions below a row with columns `cols` and diagonals `d1`, `d2` taken.
fn plain(full: u32, cols: u32, d1: u32, d2: u32) -> u64 {
    if cols == full {
        return 1;
    }
    let mut avail = full & !(cols | d1 | d2);
    let mut total = 0;
    while avail != 0 {
        let bit = avail & avail.wrapping_neg();
        avail ^= bit;
        total += plain(full, cols | bit, (d1 | bit) << 1, (d2 | bit) >> 1);
    }
    total
}

/// Runs `f`, returning its value and the CPU time the calling thread spent in it.
fn cpu_time<T>(f: impl FnOnce() -> T) -> (T, Duration) {
    let start = thread_cpu();
    let wall = Instant::now();
    let value = std::hint::black_box(f());
    let cpu = match (start, thread_cpu()) {
        (Some(a), Some(b)) => b.saturating_sub(a),
        _ => wall.elapsed(),
    };
    (value, cpu)
}

/// CPU time of the calling thread so far, from Linux's `/proc/thread-self/schedstat`
/// (nanoseconds on the CPU first); `None` elsewhere, and the bench falls back to wall time.
fn thread_cpu() -> Option<Duration> {
    let text = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    let nanos = text.split_whitespace().next()?.parse().ok()?;
    Some(Duration::from_nanos(nanos))
}
