//! The soak's server samples (RSS, open files, threads from `/proc`) and its final report:
//! the calls by kind and outcome, and whether the server stayed flat.
//!
//! Not here: the calls and how each is checked (`caller.rs`), the run (`soak.rs`).

use super::outcome::Tally;
use std::collections::BTreeMap;
use std::time::{Duration, Instant};
use tokio::sync::RwLock;

/// Growth of the server's RSS (KiB) that counts as flat whatever 10 % of it is.
const RSS_SLACK_KIB: u64 = 16 * 1024;

/// The server's resident memory (KiB), open files and threads, from `/proc/PID`.
#[derive(Clone, Copy, Debug)]
pub(super) struct Sample {
    rss_kib: u64,
    fds: u64,
    threads: u64,
}

impl Sample {
    /// Reads the figures of process `pid`, if it is there.
    pub(super) fn take(pid: u32) -> Option<Sample> {
        let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
        let field = |name: &str| {
            status
                .lines()
                .find_map(|l| l.strip_prefix(name))
                .and_then(|v| v.split_whitespace().next()?.parse().ok())
        };
        let fds = std::fs::read_dir(format!("/proc/{pid}/fd")).ok()?.count() as u64;
        Some(Sample {
            rss_kib: field("VmRSS:")?,
            fds,
            threads: field("Threads:")?,
        })
    }

    /// The figures as one line of the log.
    pub(super) fn show(&self) -> String {
        format!(
            "RSS {:.1} MiB, {} open files, {} threads",
            self.rss_kib as f64 / 1024.0,
            self.fds,
            self.threads
        )
    }

    /// Whether every figure of `self` is within 10 % of `base`, or within [`RSS_SLACK_KIB`]
    /// of its RSS and 2 of the small counts (what a quiet sample still holds of the calls
    /// just paused varies by several MiB: a 5 s run sampled 18 to 65 MiB at its warm-up).
    fn flat_since(&self, base: &Sample) -> bool {
        let within = |now: u64, then: u64, slack: u64| now <= then + (then / 10).max(slack);
        within(self.rss_kib, base.rss_kib, RSS_SLACK_KIB)
            && within(self.fds, base.fds, 2)
            && within(self.threads, base.threads, 2)
    }
}

/// Waits for the calls in flight (new ones wait too), lets the server settle for a second and
/// samples it quiet.
pub(super) async fn quiet_sample(gate: &RwLock<()>, pid: u32) -> Option<Sample> {
    let _quiet = gate.write().await;
    tokio::time::sleep(Duration::from_secs(1)).await;
    Sample::take(pid)
}

/// How long the end's sample is taken again while it is not flat since the warm-up: the
/// pool's stand-in threads, started while jobs gave way, end after 10 s without work (a run
/// here ended at 11 threads against 8 after its warm-up, one second after its last calls).
const SETTLE: Duration = Duration::from_secs(12);

/// A quiet sample at the end, taken again each second for up to [`SETTLE`] while it is not
/// flat since `warm`: threads and memory the last calls left go in that time, a leak stays.
pub(super) async fn settled_sample(
    gate: &RwLock<()>,
    pid: u32,
    warm: Option<Sample>,
) -> Option<Sample> {
    let until = Instant::now() + SETTLE;
    loop {
        let end = quiet_sample(gate, pid).await;
        match (end, warm) {
            (Some(now), Some(warm)) if !now.flat_since(&warm) && Instant::now() < until => {}
            _ => return end,
        }
    }
}

/// Prints the calls by kind and the samples; true when the soak passed.
pub(super) fn report(
    tally: &Tally,
    refusals: &BTreeMap<String, u64>,
    took: Duration,
    warm: Option<Sample>,
    end: Option<Sample>,
    pid: Option<u32>,
) -> bool {
    let mut totals = [0u64; 4];
    println!(
        "soak: {:.0} s; calls by kind: right, refused, wrong, unexpected",
        took.as_secs_f64()
    );
    for (kind, [right, refused, wrong, unexpected]) in tally {
        println!(
            "  {kind:?}: {right} right, {refused} refused, {wrong} wrong, {unexpected} unexpected"
        );
        for (t, v) in totals.iter_mut().zip([right, refused, wrong, unexpected]) {
            *t += v;
        }
    }
    let [right, refused, wrong, unexpected] = totals;
    println!(
        "soak: {} calls: {right} right, {refused} refused (RESOURCE_EXHAUSTED), {wrong} wrong, {unexpected} unexpected",
        right + refused + wrong + unexpected
    );
    if !refusals.is_empty() {
        let by: Vec<String> = refusals.iter().map(|(f, k)| format!("{f} {k}")).collect();
        println!("soak: refusals by the limit they name: {}", by.join(", "));
    }
    let mut ok = wrong == 0 && unexpected == 0 && right > 0;
    if pid.is_some() {
        match (warm, end) {
            (Some(warm), Some(end)) => {
                let flat = end.flat_since(&warm);
                println!(
                    "soak: server after warm-up: {}; at the end: {}; {}",
                    warm.show(),
                    end.show(),
                    if flat {
                        "flat within 10 % (or 16 MiB)"
                    } else {
                        "GREW more than 10 % and 16 MiB"
                    }
                );
                ok &= flat;
            }
            _ => {
                println!(
                    "soak: the server was not there to sample (gone, or the soak ended before its warm-up)"
                );
                ok = false;
            }
        }
    }
    println!("soak: {}", if ok { "PASS" } else { "FAIL" });
    ok
}
