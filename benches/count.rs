//! Counting speed: `queens::solver::count` against a plain mirror-symmetric bitboard counter
//! (the baseline, written here), in one run.
//!
//! Every answer is checked against the baseline's (a mismatch panics). Columns: the
//! baseline's CPU time; `x1`, the count on a pool of one thread, in CPU time; `xT`, the count
//! on a pool of T threads, in wall time and in CPU time of all threads. CPU times are summed
//! over the process's threads from Linux's per-thread scheduler statistics (nanoseconds), so
//! other load on the machine barely moves them; the parallel wall time does depend on it.
//! Ratios are to the baseline's CPU time.
//!
//! Each counter runs `QUEENS_BENCH_REPEAT` times (default 3) in turn, and the least time of
//! each is kept: on a shared machine the least disturbed run is the best estimate of the work.
//!
//! `cargo bench --bench count` runs n = 15, 16, 17. Pick sizes with arguments or the
//! `QUEENS_BENCH_N` variable (comma-separated), e.g. `cargo bench --bench count -- 10 11` for a
//! smoke run; `QUEENS_BENCH_THREADS` sets the parallel counter's threads (default 2).

use queens::solver::pool::wait;
use queens::solver::{CountOptions, Counts, Pool, Problem, Shard, count, simd_registers};
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
        "{:>3} {:>14} {:>9} {:>9} {:>6} {:>9} {:>6} {:>9}",
        "n",
        "solutions",
        "base cpu",
        "x1 cpu",
        "ratio",
        format!("x{threads} wall"),
        "ratio",
        format!("x{threads} cpu"),
    );
    let pools = (Pool::new(1), Pool::new(threads));
    for n in sizes {
        row(n, repeat, &pools);
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

/// Counts `problem` on `pool` with as many engines as it has threads.
fn counted(problem: &Problem, pool: &Pool) -> Counts {
    let options = CountOptions {
        threads: pool.threads(),
        ..CountOptions::default()
    };
    wait(|done| count(problem, options, pool, done))
        .expect("a result")
        .expect("count")
}

/// Runs `f`, returning its value, its wall time and the CPU time of the whole process.
fn timed<T>(f: impl FnOnce() -> T) -> (T, Duration, Duration) {
    let (started, before) = (Instant::now(), process_cpu());
    let value = std::hint::black_box(f());
    let wall = started.elapsed();
    let cpu = process_cpu()
        .zip(before)
        .map_or(wall, |(after, before)| after.saturating_sub(before));
    (value, wall, cpu)
}

/// Measures and prints one board size: every counter `repeat` times, in turn.
fn row(n: u32, repeat: usize, (one, many): &(Pool, Pool)) {
    let problem = Problem::new(n, &[], false, Shard::WHOLE).expect("a valid size");
    let mut base = Duration::MAX;
    let mut single_cpu = Duration::MAX;
    let mut parallel_wall = Duration::MAX;
    let mut parallel_cpu = Duration::MAX;
    let mut answers = None;
    for _ in 0..repeat {
        let (expected, _, t) = timed(|| baseline(n));
        base = base.min(t);
        let (single, _, t) = timed(|| counted(&problem, one));
        single_cpu = single_cpu.min(t);
        let (parallel, wall, cpu) = timed(|| counted(&problem, many));
        parallel_wall = parallel_wall.min(wall);
        parallel_cpu = parallel_cpu.min(cpu);
        answers = Some((expected, single, parallel));
    }
    let Some((expected, single, parallel)) = answers else {
        return;
    };
    for (name, got) in [("x1", single), ("parallel", parallel)] {
        check(n, name, got, expected);
    }
    assert_eq!(
        single.fundamental, parallel.fundamental,
        "n = {n}: classes differ"
    );
    // Below MIN_TIMED a ratio would be noise.
    let ratio = |d: Duration| {
        if base < MIN_TIMED {
            "-".to_string()
        } else {
            format!("{:.3}", d.as_secs_f64() / base.as_secs_f64())
        }
    };
    println!(
        "{n:>3} {expected:>14} {:>8.3}s {:>8.3}s {:>6} {:>8.3}s {:>6} {:>8.3}s",
        base.as_secs_f64(),
        single_cpu.as_secs_f64(),
        ratio(single_cpu),
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

/// CPU time of the whole process so far: the sum over its live threads of Linux's
/// `/proc/self/task/*/schedstat` (nanoseconds on the CPU first); `None` elsewhere, and the
/// bench falls back to wall time. The pools live for the whole run, so no thread's time is
/// lost between two readings.
fn process_cpu() -> Option<Duration> {
    let mut nanos = 0u64;
    for task in std::fs::read_dir("/proc/self/task").ok()? {
        let path = task.ok()?.path().join("schedstat");
        let text = std::fs::read_to_string(path).ok()?;
        nanos += text.split_whitespace().next()?.parse::<u64>().ok()?;
    }
    Some(Duration::from_nanos(nanos))
}
