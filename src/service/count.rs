//! A Count running for a call: started on the pool, raced against the call's deadline, the
//! server's time limit and shutdown, cancelled when the call goes away, and read for
//! CountProgress updates while it runs; and the `grpc-timeout` header's parser, which tonic
//! keeps private (see [`parse_grpc_timeout`]).
//!
//! Not here: the admission of the count (`admission.rs`), the clocks shared with streams
//! (`crate::stream::Cutoffs`).

use super::{Error, SearchSlot};
use crate::pb::CountUpdate;
use crate::solver::{self, CountError, CountOptions, Counts, Hold, Pool, Problem, Progress};
use crate::stream::Cutoffs;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};
use tokio::sync::oneshot;

/// How much before the call's deadline a count gives up: tonic's own timer for unary calls
/// fires at the deadline and answers CANCELLED; a hair before it, the count answers
/// DEADLINE_EXCEEDED, as the client expects.
pub(super) const DEADLINE_MARGIN: Duration = Duration::from_millis(10);

/// A count running on the pool, and what may end it early.
pub struct RunningCount {
    result: oneshot::Receiver<Result<Counts, CountError>>,
    /// Completes with the reason when the deadline, the time limit or shutdown comes first.
    ends: Pin<Box<dyn Future<Output = Error> + Send>>,
    progress: Arc<Progress>,
    started: Instant,
    /// What the count answers besides solutions.
    answers: Answers,
    /// Raised when the call ends or is dropped (the client went away): the search stops.
    _cancel: RaiseOnDrop,
    /// The call's search slot and memory, held until the count ends.
    _slot: SearchSlot,
    /// What `queens_count_subproblems_total` has been told so far.
    reported: Arc<Reported>,
}

impl Drop for RunningCount {
    fn drop(&mut self) {
        self.reported.flush();
    }
}

/// How often a running count's finished subproblems are added to
/// `queens_count_subproblems_total` (and once more when the count ends).
const REPORT_EVERY: Duration = Duration::from_secs(1);

/// A running count's finished subproblems as far as the metric has been told.
struct Reported {
    progress: Arc<Progress>,
    told: std::sync::atomic::AtomicU64,
    counter: metrics::Counter,
}

impl Reported {
    /// Starts telling the metric, every [`REPORT_EVERY`] until `cancel` is raised when
    /// `ticking` (no ticking when the process exports no metrics).
    fn start(progress: Arc<Progress>, cancel: Arc<AtomicBool>, ticking: bool) -> Arc<Reported> {
        let reported = Arc::new(Reported {
            progress,
            told: Default::default(),
            counter: metrics::counter!("queens_count_subproblems_total"),
        });
        if !ticking {
            return reported;
        }
        let ticking = reported.clone();
        tokio::spawn(async move {
            let start = tokio::time::Instant::now() + REPORT_EVERY;
            let mut ticker = tokio::time::interval_at(start, REPORT_EVERY);
            while !cancel.load(Ordering::Relaxed) {
                ticker.tick().await;
                ticking.flush();
            }
        });
        reported
    }

    /// Adds the subproblems finished since the last report.
    fn flush(&self) {
        let done = self.progress.done.load(Ordering::Relaxed);
        let before = self.told.fetch_max(done, Ordering::Relaxed);
        if done > before {
            self.counter.increment(done - before);
        }
    }
}

impl RunningCount {
    /// Starts counting `problem` on `pool` with up to `threads` threads, each engine's lists
    /// held to `per_engine` bytes (0: no cap), holding `slot` (its reservation of the join's
    /// tables, if any, kept alive with the tables) until the first of `cutoffs` (whose clocks
    /// have started). With `metrics`, its finished subproblems are added to
    /// `queens_count_subproblems_total` every second while it runs.
    pub fn start(
        problem: &Problem,
        pool: &Pool,
        (threads, per_engine): (usize, u64),
        mut cutoffs: Cutoffs,
        slot: SearchSlot,
        metrics: bool,
    ) -> RunningCount {
        let options = CountOptions {
            threads,
            work_bytes: match per_engine {
                0 => usize::MAX,
                bytes => usize::try_from(bytes).unwrap_or(usize::MAX),
            },
            hold: slot.tables().map(|tables| tables as Hold),
            ..CountOptions::default()
        };
        let (cancel, progress) = (options.cancel.clone(), options.progress.clone());
        let reported = Reported::start(progress.clone(), cancel.clone(), metrics);
        let (tx, result) = oneshot::channel();
        // Listing the subproblems takes a while on big boards: on the pool, never on the
        // runtime's threads.
        let answers = if solver::answers_turn_fixed(problem) {
            Answers::TurnFixed
        } else if problem.fixed().is_empty() {
            Answers::Classes
        } else {
            Answers::Solutions
        };
        let (problem, on) = (problem.clone(), pool.clone());
        pool.spawn(move || {
            solver::count(&problem, options, &on, move |counted| {
                let _ = tx.send(counted);
            });
        });
        let ends = Box::pin(async move { Error::from(cutoffs.reached().await) });
        RunningCount {
            result,
            ends,
            progress,
            started: Instant::now(),
            answers,
            _cancel: RaiseOnDrop(cancel),
            _slot: slot,
            reported,
        }
    }

    /// The result, or why the count ended first. Cancel-safe: may be polled again.
    pub async fn result(&mut self) -> Result<Counts, Error> {
        tokio::select! {
            counted = &mut self.result => match counted {
                Ok(counted) => Ok(counted?),
                Err(_) => Err(Error::Internal("the count failed: its search was lost".into())),
            },
            error = &mut self.ends => Err(error),
        }
    }

    /// A progress message: partial sums so far, or the exact result when `last` is given.
    pub fn update(&self, last: Option<Counts>) -> CountUpdate {
        let load = |a: &std::sync::atomic::AtomicU64| a.load(Ordering::Relaxed);
        let progress = &self.progress;
        let (solutions, classes) = match last {
            Some(c) => (c.solutions, c.fundamental.or(c.turn_fixed).unwrap_or(0)),
            None => (load(&progress.solutions), load(&progress.classes)),
        };
        CountUpdate {
            solutions,
            fundamental: (self.answers == Answers::Classes).then_some(classes),
            turn_fixed: (self.answers == Answers::TurnFixed).then_some(classes),
            subproblems_done: load(&progress.done),
            subproblems_total: load(&progress.total),
            elapsed_seconds: self.started.elapsed().as_secs_f64(),
            done: last.is_some(),
        }
    }
}

/// What a count answers besides its solutions.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Answers {
    /// Nothing more (fixed queens).
    Solutions,
    /// Its symmetry classes (`fundamental`).
    Classes,
    /// Its turn-fixed points (`turn_fixed`): a part whose classes are not its own.
    TurnFixed,
}

/// Why a `grpc-timeout` value is not one.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum TimeoutError {
    /// Not 1 to 8 ASCII digits: the gRPC spec's bound, which also keeps every unit from
    /// overflowing.
    #[error("expected 1 to 8 digits before the unit")]
    Amount,
    /// A unit other than H, M, S, m, u or n.
    #[error("expected a unit of H, M, S, m, u or n")]
    Unit,
}

/// Parses a `grpc-timeout` value (e.g. `300m`) as the gRPC over HTTP/2 spec writes it.
///
/// Kept by hand: tonic's server parses this header to enforce it on unary calls, but keeps the
/// parser and the parsed value private (`transport::service::grpc_timeout`), and
/// `Server::timeout` neither limits streams nor tells a handler its time. The service needs
/// the value itself: a count gives up a hair before the deadline to answer
/// DEADLINE_EXCEEDED, and a stream ends at it. Same rules as tonic's, so that the two never
/// disagree on whether a call has a deadline.
pub fn parse_grpc_timeout(value: &str) -> Result<Duration, TimeoutError> {
    let unit_at = value.len().checked_sub(1).ok_or(TimeoutError::Amount)?;
    let (amount, unit) = value.split_at_checked(unit_at).ok_or(TimeoutError::Unit)?;
    if amount.is_empty() || amount.len() > 8 || !amount.bytes().all(|b| b.is_ascii_digit()) {
        return Err(TimeoutError::Amount);
    }
    let amount: u64 = amount.parse().map_err(|_| TimeoutError::Amount)?;
    Ok(match unit {
        "H" => Duration::from_secs(amount * 3600),
        "M" => Duration::from_secs(amount * 60),
        "S" => Duration::from_secs(amount),
        "m" => Duration::from_millis(amount),
        "u" => Duration::from_micros(amount),
        "n" => Duration::from_nanos(amount),
        _ => return Err(TimeoutError::Unit),
    })
}

/// The call's deadline from its `grpc-timeout` header, if it has a valid one (tonic too
/// ignores one it cannot parse).
pub fn grpc_timeout(metadata: &tonic::metadata::MetadataMap) -> Option<Duration> {
    let value = metadata.get("grpc-timeout")?.to_str().ok()?;
    parse_grpc_timeout(value).ok()
}

/// Raises its flag when dropped.
struct RaiseOnDrop(Arc<AtomicBool>);

impl Drop for RaiseOnDrop {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grpc_timeouts_parse() {
        let mut m = tonic::metadata::MetadataMap::new();
        assert_eq!(grpc_timeout(&m), None);
        m.insert("grpc-timeout", "300m".parse().unwrap());
        assert_eq!(grpc_timeout(&m), Some(Duration::from_millis(300)));
        m.insert("grpc-timeout", "2S".parse().unwrap());
        assert_eq!(grpc_timeout(&m), Some(Duration::from_secs(2)));
        m.insert("grpc-timeout", "x".parse().unwrap());
        assert_eq!(grpc_timeout(&m), None);
        assert_eq!(
            parse_grpc_timeout("99999999H"),
            Ok(Duration::from_secs(99_999_999 * 3600))
        );
        assert_eq!(parse_grpc_timeout("123456789m"), Err(TimeoutError::Amount));
        assert_eq!(parse_grpc_timeout("+5m"), Err(TimeoutError::Amount));
        assert_eq!(parse_grpc_timeout("m"), Err(TimeoutError::Amount));
        assert_eq!(parse_grpc_timeout(""), Err(TimeoutError::Amount));
        assert_eq!(parse_grpc_timeout("5s"), Err(TimeoutError::Unit));
    }
}
