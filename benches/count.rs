//! Counting speed: `queens::solver::count` against a plain mirror-symmetric bitboard counter
//! (the baseline, written here), in one run.
//!
//! Every answer is checked against the others (a mismatch panics). Columns: the
//! baseline's CPU time; `x1`, the count on a pool of one thread, in CPU time; `xT`, the count
//! on a pool of T threads, in wall time and in CPU time of all threads. CPU times are the
//! process's, all threads, from `getrusage`, so other load on the machine barely moves them;
//! the parallel wall time does depend on it. Ratios are to the baseline's CPU time.
//!
//! Each counter runs `QUEENS_BENCH_REPEAT` times (default 3) in turn, and the least time of
//! each is kept: on a shared machine the least disturbed run is the best estimate of the work.
//! From n = 18 on every counter runs once (a run takes minutes), the baseline runs on the
//! parallel counter's threads (one first-row column at a time from a shared queue; its CPU
//! time is what the ratios use), and from n = 19 on the one-thread count is left out.
//!
//! A peer program joins the comparison when `QUEENS_PEER_CMD` holds a shell command that counts the
//! board size in place of `{n}`, e.g. `QUEENS_PEER_CMD="$KLUEV/nq{n} 2"` for a counter with the
//! size compiled in (`KLUEV` the folder holding one build per size). It runs after the other
//! counters in each round; its output must contain the solution count (else the bench panics), and
//! the last columns give its wall time, its CPU time and peak RSS (from `wait4`), and the parallel
//! count's wall time as a fraction of the peer's. `QUEENS_BENCH_NO_BASELINE=1` skips the baseline
//! (the answers are then checked against the peer's, and the baseline ratios print `-`): at n = 20
//! the baseline alone takes over an hour of CPU.
//!
//! `QUEENS_BENCH_SHARDS` adds two lines at the end: the CPU time of a count's K shards run
//! one after another over the whole count's, for K = 16 and 256, the shards' sum checked
//! against the whole; first in this process (each shard a count of its own on the same pool),
//! then as a user runs them, each a process of the `queens` binary
//! (`queens count N --local --shard I/K --json`, the whole as `--shard 0/1`). Each line runs
//! `QUEENS_BENCH_REPEAT` rounds; a round counts, for each K, the whole and right after it the
//! K shards, and the line prints the median round's ratio and every round's: on a 2-core
//! virtual machine the same processes' CPU time drifted by up to half from one minute to the
//! next (an empty shard of n = 19 took 13 to 21 ms), which a ratio of neighbouring runs
//! cancels and times from different minutes do not. Its value is the board size (e.g.
//! `QUEENS_BENCH_SHARDS=19`), or any other non-empty value but `0` for the largest size
//! benched.
//!
//! `cargo bench --bench count` runs n = 15 to 18; `cargo bench --bench count -- 19 20` adds the
//! big rows. Pick sizes with arguments or the `QUEENS_BENCH_N` variable (comma-separated), e.g.
//! `cargo bench --bench count -- 10 11` for a smoke run; `QUEENS_BENCH_THREADS` sets the
//! parallel counter's threads (default 2).

use queens::solver::pool::wait;
use queens::solver::{CountOptions, Counts, Pool, Problem, Shard, TIER_VARIABLE, count, tier_name};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

/// Baseline times below this give no ratios (the CPU clocks' resolution is about 1-10 ms).
const MIN_TIMED: Duration = Duration::from_millis(50);

/// Sizes measured when none are given.
const DEFAULT_SIZES: [u32; 4] = [15, 16, 17, 18];

/// From this size on every counter runs once and the baseline runs on all threads.
const BIG: u32 = 18;

/// From this size on the one-thread count is left out (it would take half an hour at n = 20).
const NO_SINGLE: u32 = 19;

/// What the bench was asked to run, from the command line and the environment.
struct Setup {
    /// Threads of the parallel counter (and of the baseline for big sizes).
    threads: usize,
    /// Runs of each counter for sizes below [`BIG`].
    repeat: usize,
    /// The peer's shell command, `{n}` standing for the board size.
    peer: Option<String>,
    /// Whether the mirror baseline runs.
    baseline: bool,
}

fn main() {
    let sizes = sizes();
    let setup = Setup {
        threads: env_number("QUEENS_BENCH_THREADS").unwrap_or(2).max(1),
        repeat: env_number("QUEENS_BENCH_REPEAT").unwrap_or(3).max(1),
        peer: std::env::var("QUEENS_PEER_CMD")
            .ok()
            .filter(|c| !c.trim().is_empty()),
        baseline: std::env::var("QUEENS_BENCH_NO_BASELINE")
            .map_or(true, |v| v.is_empty() || v == "0"),
    };
    let threads = setup.threads;
    println!(
        "{threads} threads for the parallel counter; least time of {} runs each below n = {BIG}, one run from n = {BIG}",
        setup.repeat
    );
    println!(
        "SIMD tier: {} (set {TIER_VARIABLE}=avx512, avx2 or portable to force one)",
        tier_name()
    );
    if let Some(peer) = &setup.peer {
        println!("peer: {peer}");
    }
    println!(
        "{:>3} {:>16} {:>9} {:>9} {:>6} {:>9} {:>6} {:>9} {:>9} {:>9} {:>8} {:>7}",
        "n",
        "solutions",
        "base cpu",
        "x1 cpu",
        "ratio",
        format!("x{threads} wall"),
        "ratio",
        format!("x{threads} cpu"),
        "peer wall",
        "peer cpu",
        "peer rss",
        "/peer",
    );
    let pools = (Pool::new(1), Pool::new(threads));
    for &n in &sizes {
        row(n, &setup, &pools);
    }
    if let Some(n) = shards_size(&sizes) {
        shard_overhead(n, &pools.1, setup.repeat);
        shard_processes(n, setup.repeat);
    }
}

/// Shard counts of the overhead line: one split of a few parts per machine, and a fine one.
const SHARD_SPLITS: [u32; 2] = [16, 256];

/// The size of the shard overhead line, from `QUEENS_BENCH_SHARDS`: a board size, or the
/// largest of `sizes` for any other value; none when unset, empty or `0`.
fn shards_size(sizes: &[u32]) -> Option<u32> {
    let value = std::env::var("QUEENS_BENCH_SHARDS").ok()?;
    let value = value.trim();
    if value.is_empty() || value == "0" {
        return None;
    }
    value
        .parse()
        .ok()
        .filter(|&n| n >= 4)
        .or_else(|| sizes.iter().copied().max())
}

/// The CPU times of one round of a shard line: for each K of [`SHARD_SPLITS`], the whole
/// count's and, right after it, the K shards'.
type Round = [(Duration, Duration); SHARD_SPLITS.len()];

/// Prints a shard line from `rounds` rounds, whose ratios compare neighbouring runs: per K,
/// the median round's ratio of the K shards' CPU over the whole's, with that round's times
/// and every round's ratio.
fn print_shard_line(label: &str, rounds: &[Round]) {
    let mut line = format!("{label}:");
    for (i, k) in SHARD_SPLITS.iter().enumerate() {
        let ratio = |r: &Round| r[i].1.as_secs_f64() / r[i].0.as_secs_f64();
        let mut sorted: Vec<&Round> = rounds.iter().collect();
        sorted.sort_by(|a, b| ratio(a).total_cmp(&ratio(b)));
        let median = sorted[sorted.len() / 2];
        let all: Vec<String> = rounds.iter().map(|r| format!("{:.3}", ratio(r))).collect();
        line += &format!(
            " {k} shards {:.3}s cpu against whole {:.3}s ({:.3}x; rounds {});",
            median[i].1.as_secs_f64(),
            median[i].0.as_secs_f64(),
            ratio(median),
            all.join(" ")
        );
    }
    println!("{}", line.trim_end_matches(';'));
}

/// Runs `rounds` rounds of a shard line of size `n` and prints it: for each K of
/// [`SHARD_SPLITS`], the whole count, then its K shards one after another, each through
/// `count` (what it found, its CPU time); `total` adds up what one or K counts found into
/// solutions and classes, and the K shards must add up to the whole.
fn shard_line<T>(
    label: &str,
    n: u32,
    rounds: usize,
    count: impl Fn(Shard) -> (T, Duration),
    total: impl Fn(Vec<T>) -> (u64, Option<u64>),
) {
    let round = || {
        SHARD_SPLITS.map(|k| {
            let (whole, whole_cpu) = count(Shard::WHOLE);
            let (parts, cpu): (Vec<T>, Vec<Duration>) =
                (0..k).map(|index| count(Shard { index, count: k })).unzip();
            assert_eq!(
                total(parts),
                total(vec![whole]),
                "n = {n}: {k} shards ({label}) do not add up to the whole"
            );
            (whole_cpu, cpu.into_iter().sum())
        })
    };
    let rounds: Vec<Round> = (0..rounds).map(|_| round()).collect();
    print_shard_line(&format!("n = {n} shards {label}"), &rounds);
}

/// The shard line of size `n` with each shard a count of its own on `pool` in this process
/// (CPU time of the process).
fn shard_overhead(n: u32, pool: &Pool, rounds: usize) {
    let count = |shard: Shard| {
        let problem = Problem::new(n, &[], false, shard).expect("a valid shard");
        let (counts, _, cpu) = timed(|| counted(&problem, pool));
        (counts, cpu)
    };
    let total = |parts: Vec<Counts>| {
        let whole = Counts::whole(parts).expect("the parts of one count");
        (whole.solutions, whole.fundamental)
    };
    shard_line("in this process", n, rounds, count, total);
}

/// The shard line of size `n` with each shard a process, as a user runs them
/// (`queens count N --local --shard I/K --json`, CPU from `wait4`), their lines added up as
/// `queens sum` adds them.
fn shard_processes(n: u32, rounds: usize) {
    let exe = env!("CARGO_BIN_EXE_queens");
    let count = |shard: Shard| {
        let (index, k) = (shard.index, shard.count);
        let run = run_peer(
            &format!("exec '{exe}' count {{n}} --local --shard {index}/{k} --json"),
            n,
        );
        (run.output, run.cpu)
    };
    let total = |lines: Vec<String>| {
        let total = queens::batch::sum(lines).expect("shard lines that add up");
        (total.solutions, total.fundamental)
    };
    shard_line("as processes", n, rounds, count, total);
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
    let cpu = process_cpu().saturating_sub(before);
    (value, wall, cpu)
}

/// One run of the peer: its wall time, CPU time, peak RSS and output.
struct PeerRun {
    /// Wall time from spawn to exit.
    wall: Duration,
    /// User and system time of the peer and its children.
    cpu: Duration,
    /// Peak resident set, in KiB.
    rss_kib: u64,
    /// Standard output.
    output: String,
}

/// Runs the peer's command for size `n` with `sh -c` and measures it.
#[allow(clippy::zombie_processes)] // reaped with wait4 (for its rusage), not through `Child`
fn run_peer(command: &str, n: u32) -> PeerRun {
    let command = command.replace("{n}", &n.to_string());
    let started = Instant::now();
    let child = Command::new("sh")
        .arg("-c")
        .arg(&command)
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap_or_else(|e| panic!("starting the peer `{command}`: {e}"));
    let pid = child.id() as libc::pid_t;
    let mut stdout = child.stdout.expect("piped stdout");
    let mut output = String::new();
    std::io::Read::read_to_string(&mut stdout, &mut output).expect("the peer's output");
    let mut status = 0;
    // SAFETY: `rusage` is plain integers and `timeval`s, for which all zero bytes are a value.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: wait4 reaps our own child and writes into the status and usage it is given;
    // std's handle is never waited on after this.
    let reaped = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
    assert_eq!(reaped, pid, "waiting for the peer `{command}`");
    let wall = started.elapsed();
    assert!(
        libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0,
        "the peer `{command}` failed (wait status {status}); its output: {output}"
    );
    let micros = |t: libc::timeval| t.tv_sec as u64 * 1_000_000 + t.tv_usec as u64;
    PeerRun {
        wall,
        cpu: Duration::from_micros(micros(usage.ru_utime) + micros(usage.ru_stime)),
        rss_kib: usage.ru_maxrss as u64,
        output,
    }
}

/// Whether `text` holds `number` as a whole run of digits (thousands separators aside).
fn mentions(text: &str, number: u64) -> bool {
    let wanted = number.to_string();
    text.split(|c: char| !(c.is_ascii_digit() || c == ',' || c == '_'))
        .any(|token| {
            token
                .chars()
                .filter(char::is_ascii_digit)
                .collect::<String>()
                == wanted
        })
}

/// Measures and prints one board size: every counter `repeat` times (once for big sizes), in
/// turn. Every answer is checked against the others: the baseline's, Count's, the join
/// counter's and the peer's printed one.
fn row(n: u32, setup: &Setup, (one, many): &(Pool, Pool)) {
    let problem = Problem::new(n, &[], false, Shard::WHOLE).expect("a valid size");
    let repeat = if n >= BIG { 1 } else { setup.repeat };
    let baseline_threads = if n >= BIG { setup.threads } else { 1 };
    let mut base = None::<Duration>;
    let mut single_cpu = None::<Duration>;
    let mut parallel = None::<(Duration, Duration)>;
    let mut peer = None::<PeerRun>;
    let least =
        |slot: &mut Option<Duration>, t: Duration| *slot = Some(slot.map_or(t, |s| s.min(t)));
    let fastest = |slot: &mut Option<(Duration, Duration)>, wall: Duration, cpu: Duration| {
        if slot.is_none_or(|(w, _)| wall < w) {
            *slot = Some((wall, cpu));
        }
    };
    // The first answer found; every later one must equal it.
    let mut solutions = None::<u64>;
    let agree = |solutions: &mut Option<u64>, who: &str, got: u64| match *solutions {
        Some(expected) => assert_eq!(got, expected, "n = {n}: {who} disagrees"),
        None => *solutions = Some(got),
    };
    let mut classes = None;
    for _ in 0..repeat {
        if setup.baseline {
            let (expected, _, t) = timed(|| baseline(n, baseline_threads));
            least(&mut base, t);
            agree(&mut solutions, "the baseline", expected);
        }
        if n < NO_SINGLE {
            let (single, _, t) = timed(|| counted(&problem, one));
            least(&mut single_cpu, t);
            agree(&mut solutions, "Count on one thread", single.solutions);
            classes.get_or_insert(single.fundamental);
        }
        let (counts, wall, cpu) = timed(|| counted(&problem, many));
        fastest(&mut parallel, wall, cpu);
        agree(&mut solutions, "Count", counts.solutions);
        assert_eq!(
            *classes.get_or_insert(counts.fundamental),
            counts.fundamental,
            "n = {n}: classes differ"
        );
        if let Some(command) = &setup.peer {
            let run = run_peer(command, n);
            let expected = solutions.expect("a counter of ours ran before the peer");
            assert!(
                mentions(&run.output, expected),
                "n = {n}: the peer's output does not contain {expected}: {}",
                run.output
            );
            if peer.as_ref().is_none_or(|p| run.wall < p.wall) {
                peer = Some(run);
            }
        }
    }
    // Below MIN_TIMED a ratio would be noise.
    let ratio = |d: Option<Duration>| match (base, d) {
        (Some(base), Some(d)) if base >= MIN_TIMED => {
            format!("{:.3}", d.as_secs_f64() / base.as_secs_f64())
        }
        _ => "-".to_string(),
    };
    let seconds =
        |d: Option<Duration>| d.map_or("-".to_string(), |d| format!("{:.3}s", d.as_secs_f64()));
    let to_peer = |wall: Option<Duration>| match (&peer, wall) {
        (Some(p), Some(wall)) => format!("{:.3}", wall.as_secs_f64() / p.wall.as_secs_f64()),
        _ => "-".to_string(),
    };
    let (parallel_wall, parallel_cpu) = (parallel.map(|p| p.0), parallel.map(|p| p.1));
    println!(
        "{n:>3} {:>16} {:>9} {:>9} {:>6} {:>9} {:>6} {:>9} {:>9} {:>9} {:>8} {:>7}",
        solutions.map_or("-".to_string(), |s| s.to_string()),
        seconds(base),
        seconds(single_cpu),
        ratio(single_cpu),
        seconds(parallel_wall),
        ratio(parallel_wall),
        seconds(parallel_cpu),
        seconds(peer.as_ref().map(|p| p.wall)),
        seconds(peer.as_ref().map(|p| p.cpu)),
        peer.as_ref().map_or("-".to_string(), |p| format!(
            "{:.0}MiB",
            p.rss_kib as f64 / 1024.0
        )),
        to_peer(parallel_wall),
    );
}

/// The baseline: a plain bitboard counter (Somers-style) that searches the queen of row 0 in
/// the left half of the board and doubles, plus the middle column on odd boards. `threads`
/// threads take the first row's columns from a shared counter.
fn baseline(n: u32, threads: usize) -> u64 {
    let full = u32::MAX >> (32 - n);
    let next = AtomicU32::new(0);
    let columns = n.div_ceil(2);
    let work = || {
        let mut total = 0;
        loop {
            let c = next.fetch_add(1, Ordering::Relaxed);
            if c >= columns {
                return total;
            }
            let bit = 1 << c;
            let weight = if n % 2 == 1 && c == n / 2 { 1 } else { 2 };
            total += weight * plain(full, bit, bit << 1, bit >> 1);
        }
    };
    if threads <= 1 {
        return work();
    }
    std::thread::scope(|scope| {
        let workers: Vec<_> = (0..threads).map(|_| scope.spawn(work)).collect();
        workers
            .into_iter()
            .map(|w| w.join().expect("a baseline thread"))
            .sum()
    })
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

/// CPU time of the whole process so far, all its threads (finished ones included), from
/// `getrusage`.
fn process_cpu() -> Duration {
    // SAFETY: `rusage` is plain integers and `timeval`s, for which all zero bytes are a value.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: getrusage writes into the struct it is given.
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut usage) };
    let micros = |t: libc::timeval| t.tv_sec as u64 * 1_000_000 + t.tv_usec as u64;
    Duration::from_micros(micros(usage.ru_utime) + micros(usage.ru_stime))
}
