//! The `soak` mode of `queens-load`: mixed, partly hostile traffic against one server for a
//! given time, every answer checked, the server's RSS, open files and threads sampled from
//! `/proc`.
//!
//! Here: the run (callers spawned, outcomes tallied, samples taken). Its files from the
//! bottom up (each imports only files above it in this list):
//! - `soak/outcome.rs`: the kinds of call, how one ended, the tally.
//! - `soak/oracle.rs`: what is right: the naive search of `queens::solver::naive` (boards up
//!   to 12) and the OEIS counts (up to 14); nothing of the server's own code decides it.
//! - `soak/choices.rs`: the seeded generator and random fixed queens.
//! - `soak/hostile.rs`: the calls that misbehave as a client may.
//! - `soak/caller.rs`: one caller, each kind of call made and checked.
//! - `soak/report.rs`: the server's samples and the final report.
//!
//! Not here: the other modes and the command line (`main.rs`).

mod caller;
mod choices;
mod hostile;
mod oracle;
mod outcome;
mod report;

use self::caller::Caller;
/// The counts `latency` checks its answers against.
pub(crate) use self::oracle::SOLUTIONS;
use self::outcome::{KINDS, Kind, Outcome, Tally};
use self::report::{Sample, quiet_sample, report, settled_sample};
use queens::client::Access;
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::sync::RwLock;

/// What the soak is asked to do.
pub struct Options {
    /// The server's URL.
    pub addr: String,
    /// How long to run.
    pub period: Duration,
    /// When to take the sample later samples are held to.
    pub warm_up: Duration,
    /// Callers at once.
    pub concurrency: usize,
    /// The server's process, to sample from `/proc` (none: no samples).
    pub pid: Option<u32>,
    /// Seed of the callers' choices (each caller adds its index).
    pub seed: u64,
    /// Bearer token and TLS trust for every call.
    pub access: Access,
    /// Seconds between the samples printed while running.
    pub sample_every: Duration,
}

/// Runs the soak; prints samples while it runs and the report at the end. True when no
/// answer was wrong, no status unexpected, and (with a pid) the server stayed flat from the
/// warm-up sample to the end.
pub async fn run(options: Options) -> bool {
    let started = Instant::now();
    let until = started + options.period;
    let tally: Arc<Mutex<Tally>> = Arc::default();
    let refusals: Arc<Mutex<BTreeMap<String, u64>>> = Arc::default();
    let gate = Arc::new(RwLock::new(()));
    let with_token = options.access.token.is_some();
    let kinds: Vec<Kind> = KINDS
        .into_iter()
        .filter(|k| with_token || *k != Kind::WrongToken)
        .collect();
    let mut callers = Vec::new();
    for i in 0..options.concurrency {
        let seed = options.seed.wrapping_add(i as u64);
        let mut caller = Caller::new(options.addr.clone(), options.access.clone(), seed);
        let (tally, refusals) = (tally.clone(), refusals.clone());
        let (gate, kinds) = (gate.clone(), kinds.clone());
        callers.push(tokio::spawn(async move {
            while Instant::now() < until {
                let kind = kinds[caller.rng.range(0, kinds.len() as u64 - 1) as usize];
                let outcome = {
                    let _open = gate.read().await;
                    caller.call(kind).await
                };
                let slot = match &outcome {
                    Outcome::Right => 0,
                    Outcome::Refused(by) => {
                        *refusals
                            .lock()
                            .expect("refusals")
                            .entry(by.clone())
                            .or_default() += 1;
                        1
                    }
                    Outcome::Wrong(what) => {
                        eprintln!("soak: wrong answer ({kind:?}): {what}");
                        2
                    }
                    Outcome::Unexpected(what) => {
                        eprintln!("soak: unexpected status ({kind:?}): {what}");
                        3
                    }
                };
                tally.lock().expect("tally").entry(kind).or_default()[slot] += 1;
                if slot == 1 || slot == 3 {
                    // Refused, or no server: back off as a client should, not spin.
                    let wait = caller.rng.range(50, 250);
                    tokio::time::sleep(Duration::from_millis(wait)).await;
                }
            }
        }));
    }
    let mut warm: Option<Sample> = None;
    if let Some(pid) = options.pid {
        let mut next = started + options.sample_every;
        let mut warm_due = Some(started + options.warm_up);
        while Instant::now() < until {
            let due = warm_due.map_or(next, |w| w.min(next)).min(until);
            tokio::time::sleep_until(due.into()).await;
            let at = started.elapsed().as_secs();
            if warm_due.is_some_and(|w| Instant::now() >= w) {
                warm_due = None;
                warm = quiet_sample(&gate, pid).await;
                let shown = warm.map_or("gone".into(), |s| s.show());
                println!("soak: {at} s: warm-up sample (quiet): {shown}");
            } else if Instant::now() < until {
                next += options.sample_every;
                let shown = Sample::take(pid).map_or("gone".into(), |s| s.show());
                println!("soak: {at} s: {shown}");
            }
        }
    }
    for caller in callers {
        caller.await.expect("caller");
    }
    let end = match options.pid {
        Some(pid) => settled_sample(&gate, pid, warm).await,
        None => None,
    };
    report(
        &tally.lock().expect("tally"),
        &refusals.lock().expect("refusals"),
        started.elapsed(),
        warm,
        end,
        options.pid,
    )
}
