//! Counting speed: the fast counter against a plain mirror-symmetric bitboard counter (the
//! baseline, written here) and the plain search's `count`, in one run.
//!
//! Every answer is checked against the baseline's (a mismatch panics). Columns: the
//! baseline's CPU time; `plain`, the search path's `queens::solver::count`; `fast`,
//! `count_fast` on one thread; `xT`, `count_parallel` on T threads, in wall time and in CPU
//! time of all threads. Single-threaded counters are timed in CPU time of the running thread,
//! so other load on the machine barely moves them; the parallel wall time does depend on it.
//! Ratios are to the baseline's CPU time.
//!
//! Each counter runs `QUEENS_BENCH_REPEAT` times (default 3) in turn, and the least time of
//! each is kept: on a shared machine the least disturbed run is the best estimate of the work.
//!
//! `cargo bench --bench count` runs n = 15, 16, 17. Pick sizes with arguments or the
//! `QUEENS_BENCH_N` variable (comma-separated), e.g. `cargo bench --bench count -- 10 11` for a
//! smoke run; `QUEENS_BENCH_THREADS` sets the parallel counter's threads (default 2).

use queens::solver::{Counts, Problem, Shard, count, count_fast, count_parallel, simd_registers};
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};

/// Baseline times below this give no ratios (the CPU clocks' resolution is about 1-10 ms).
const MIN_TIMED: Duration = Duration::from_millis(50);

/// Sizes measured when none are given.
const DEFAULT_SIZES: [u32; 3] = [15, 16, 17];

fn main() {
    let sizes = sizes();
    let threads = env_number("QUEENS_BENCH_THREADS").unwrap_or(2);
    let repeat = env_number("QUEENS_BENCH_REPEAT").unwrap_or(3).max(1);
    println!("{threads} threads for the parallel counter; least time of {repeat} runs each");
    match simd_registers() {
        Some(registers) => println!("Count's lanes run in {registers} registers"),
        None => println!("no SIMD registers for Count's lanes: it searches every board alone"),
    }
    println!(
        "{:>3} {:>14} {:>9} {:>9} {:>6} {:>9} {:>6} {:>9} {:>6} {:>9}",
        "n",
        "solutions",
        "base cpu",
        "plain cpu",
        "ratio",
        "fast cpu",
        "ratio",
        format!("x{threads} wall"),
        "ratio",
        format!("x{threads} cpu"),
    );
    for n in sizes {
        row(n, threads, repeat);
    }
}

/// A number from the environment variable `name`, if set and valid.
fn env_number(name: &str) -> Option<usize> {
    std::env::var(name).ok().and_then(|t| t.parse().ok())
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

/// Measures and prints one board size: every counter `repeat` times, in turn.
fn row(n: u32, threads: usize, repeat: usize) {
    let never = AtomicBool::new(false);
    let problem = Problem::new(n, &[], false, Shard::WHOLE).expect("a valid size");
    let mut base = Duration::MAX;
    let mut search_cpu = Duration::MAX;
    let mut fast_cpu = Duration::MAX;
    let mut parallel_wall = Duration::MAX;
    let mut parallel_cpu = Duration::MAX;
    let mut answers = None;
    for _ in 0..repeat {
        let (expected, t) = cpu_time(|| baseline(n));
        base = base.min(t);
        let (search, t) = cpu_time(|| count(&problem, &never).expect("search count"));
        search_cpu = search_cpu.min(t);
        let (fast, t) = cpu_time(|| count_fast(&problem, &never).expect("fast count"));
        fast_cpu = fast_cpu.min(t);
        let (started, process_before) = (Instant::now(), process_cpu());
        let parallel = count_parallel(&problem, &never, threads).expect("parallel count");
        parallel_wall = parallel_wall.min(started.elapsed());
        let cpu = process_cpu()
            .zip(process_before)
            .map_or(Duration::ZERO, |(after, before)| {
                after.saturating_sub(before)
            });
        parallel_cpu = parallel_cpu.min(cpu);
        answers = Some((expected, search, fast, parallel));
    }
    let Some((expected, search, fast, parallel)) = answers else {
        return;
    };
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
    // CPU clocks tick in milliseconds: below MIN_TIMED a ratio would be noise.
    let ratio = |d: Duration| {
        if base < MIN_TIMED {
            "-".to_string()
        } else {
            format!("{:.3}", d.as_secs_f64() / base.as_secs_f64())
        }
    };
    println!(
        "{n:>3} {expected:>14} {:>8.3}s {:>8.3}s {:>6} {:>8.3}s {:>6} {:>8.3}s {:>6} {:>8.3}s",
        base.as_secs_f64(),
        search_cpu.as_secs_f64(),
        ratio(search_cpu),
        fast_cpu.as_secs_f64(),
        ratio(fast_cpu),
        parallel_wall.as_secs_f64(),
        ratio(parallel_wall),
        parallel_cpu.as_secs_f64(),
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

/// CPU time of the whole process (all threads) so far, from Linux's `/proc/self/stat`
/// (user and system clock ticks, fields 14 and 15, at the usual 100 ticks per second).
fn process_cpu() -> Option<Duration> {
    let text = std::fs::read_to_string("/proc/self/stat").ok()?;
    let after_name = &text[text.rfind(')')? + 2..];
    let fields: Vec<&str> = after_name.split_whitespace().collect();
    let ticks: u64 = fields.get(11)?.parse::<u64>().ok()? + fields.get(12)?.parse::<u64>().ok()?;
    Some(Duration::from_millis(ticks * 10))
}

/// CPU time of the calling thread so far, from Linux's `/proc/thread-self/schedstat`
/// (nanoseconds on the CPU first); `None` elsewhere, and the bench falls back to wall time.
fn thread_cpu() -> Option<Duration> {
    let text = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    let nanos = text.split_whitespace().next()?.parse().ok()?;
    Some(Duration::from_nanos(nanos))
}
