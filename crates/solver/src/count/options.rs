//! What a count is told ([`CountOptions`]) and what it tells while it runs ([`Progress`],
//! and how its classes are found, `Classes`). Not here: the entry point (`mod.rs`) and the
//! engines (`engine.rs`).

use super::subproblem::Partial;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

/// Whatever a count's caller wants kept alive exactly as long as the tables it built (the
/// server's reservation of their memory): the tables hold it, so it goes when they go.
pub type Hold = Arc<dyn std::any::Any + Send + Sync>;

/// How one count runs.
#[derive(Clone)]
pub struct CountOptions {
    /// Most pool threads the count keeps busy at once (its engines); at least one.
    pub threads: usize,
    /// Whether subproblems go through the SIMD lanes where the CPU has them; off, every
    /// board is searched alone, as on a CPU without AVX2 (the answers are the same).
    pub lanes: bool,
    /// Live totals, for progress reports.
    pub progress: Arc<Progress>,
    /// Raised to stop the count: it then ends with `Cancelled` within a slice.
    pub cancel: Arc<AtomicBool>,
    /// Bytes each engine's working lists may grow to on the join path; past it a key ends
    /// the count with `OutOfMemory` (`usize::MAX`: only the system's limit).
    pub work_bytes: usize,
    /// Kept alive by the join's tables if this count builds them, as long as they live (the
    /// server's reservation of their memory).
    pub hold: Option<Hold>,
    /// A sample of the join's parts counted twice, the second time in another tier, to
    /// catch a wrong count (`None`: each part once).
    pub recount: Option<Recount>,
}

/// Which of the join's parts a count recounts, and how: each key with probability
/// `fraction`, drawn from a hash of the key and `seed` (the same keys on every run with the
/// same seed), counted again as `method` says. The turn-fixed parts (a small search each)
/// are not recounted.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Recount {
    /// The share of the keys recounted, from 0 to 1.
    pub fraction: f64,
    /// Chooses which keys.
    pub seed: u64,
    /// How they are counted again.
    pub method: RecountMethod,
}

/// How a recounted key is counted again.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum RecountMethod {
    /// By the join again, in another SIMD tier: the portable one when the count runs in
    /// AVX2 or AVX-512, else the best this CPU has (on a CPU with no SIMD tier both runs are
    /// portable, which catches a fault of the machine but not of the code). Costs the key
    /// once more.
    #[default]
    Tier,
    /// By a plain backtracking search of the key's solutions, row by row (another
    /// decomposition than the join's halves, sharing none of its code but the keys): catches
    /// a wrong idea in the join as well as a faulty kernel or core. Costs far more than the
    /// join per key (`docs/performance.md`, "A second opinion"); its openings run as parts
    /// of their own, on every engine.
    Search,
}

impl RecountMethod {
    /// Its name on the command line and in a shard's line: `tier` or `search`.
    pub fn name(self) -> &'static str {
        match self {
            RecountMethod::Tier => "tier",
            RecountMethod::Search => "search",
        }
    }
}

impl Default for CountOptions {
    fn default() -> CountOptions {
        CountOptions {
            threads: 1,
            lanes: true,
            progress: Arc::default(),
            cancel: Arc::default(),
            work_bytes: usize::MAX,
            hold: None,
            recount: None,
        }
    }
}

/// Live totals of a running count, for progress reports; each finished subproblem adds to
/// them, and solutions also show as they are found within a subproblem (a board past the
/// join, n = 29, has subproblems of minutes), so readers see monotone partial sums (display
/// only: the result is the one `done` gets).
#[derive(Debug, Default)]
pub struct Progress {
    /// Steps of the count, set when it starts: its subproblems, and the steps some of them
    /// tick on the way (the join's tables and turn-fixed parts).
    pub total: AtomicU64,
    /// Steps done.
    pub done: AtomicU64,
    /// Solutions of the finished subproblems.
    pub solutions: AtomicU64,
    /// Symmetry classes of the finished subproblems; on a part whose classes are not its
    /// own, their turn-fixed points instead (see [`Counts::turn_fixed`](crate::Counts)).
    pub classes: AtomicU64,
    /// Keys counted a second time (in another tier, or by a search) and found equal
    /// ([`CountOptions::recount`]).
    pub recounted: AtomicU64,
    /// Nanoseconds of their threads' CPU time the recounts took (the second counts alone).
    pub recount_nanos: AtomicU64,
}

impl Progress {
    /// Records solutions of a subproblem still being counted (they show before it ends; its
    /// [`Progress::add`] then leaves them out).
    pub(super) fn found(&self, solutions: u64) {
        self.solutions.fetch_add(solutions, Ordering::Relaxed);
    }

    /// Adds the calling thread's CPU time since `started` ([`thread_nanos`]) to the
    /// recounts' time.
    pub(super) fn spent(&self, started: u64) {
        let nanos = thread_nanos().saturating_sub(started);
        self.recount_nanos.fetch_add(nanos, Ordering::Relaxed);
    }

    /// Records one step of a subproblem still being counted.
    pub(super) fn tick(&self) {
        self.done.fetch_add(1, Ordering::Relaxed);
    }

    /// Records one finished subproblem, of whose solutions `found` were already recorded,
    /// and passes its counts on; its classes only when they are what the count answers
    /// (`Classes::Summed`, `Classes::PassedOn`).
    pub(super) fn add(&self, part: Partial, classes: Classes, found: u64) -> Partial {
        let rest = part.solutions.saturating_sub(found);
        self.solutions.fetch_add(rest, Ordering::Relaxed);
        if matches!(classes, Classes::Summed | Classes::PassedOn) {
            self.classes.fetch_add(part.classes, Ordering::Relaxed);
        }
        self.done.fetch_add(1, Ordering::Relaxed);
        part
    }
}

/// The calling thread's CPU time (user and system) in nanoseconds, 0 where the clock does
/// not answer: what a recount costs, whatever else the machine runs meanwhile.
pub(super) fn thread_nanos() -> u64 {
    let mut time = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes one `timespec` into the one it is given, which lives here.
    let done = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut time) };
    if done != 0 {
        return 0;
    }
    (time.tv_sec.max(0) as u64)
        .saturating_mul(1_000_000_000)
        .saturating_add(time.tv_nsec.max(0) as u64)
}

/// How a count finds its symmetry classes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Classes {
    /// Not asked (fixed queens).
    None,
    /// Each subproblem's classes, summed as they come (border constellations).
    Summed,
    /// At the end, from fixed points: (solutions + half-turn-fixed + 2 × quarter-turn-fixed)
    /// / 8, the fixed points being the subproblems' classes (the join path); progress reports
    /// none until then.
    FixedPoints,
    /// The fixed points summed and answered as they are, as `turn_fixed` (a shard of the
    /// join path, whose classes are not its own); progress reports them as they come.
    PassedOn,
}
