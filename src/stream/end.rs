//! What may end a search early, modelled once for Enumerate's streams and for Counts: the
//! reasons ([`End`]) and the clocks and signal that raise the common ones ([`Cutoffs`]: the
//! server's shutdown, its time limit on one search, the call's deadline).
//!
//! Not here: how a stream or a count reacts (`send.rs`, the service), what a client
//! sees for each reason (the service's `Error`), a reader that stalls (`stall.rs`), the
//! solver's own stop reasons (cancellation, overflow), which the solver reports itself.

use std::time::{Duration, Instant};
use tokio::sync::watch;

/// Why a search ended before its last result.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum End {
    /// The server is shutting down.
    ShuttingDown,
    /// The search ran past the server's time limit.
    TimeLimit {
        /// The limit.
        limit: Duration,
    },
    /// The call's deadline (`grpc-timeout`) passed.
    Deadline,
    /// The reader took nothing for the stall timeout.
    Stalled {
        /// The timeout.
        after: Duration,
    },
    /// The client went away (a stream then ends silently: nobody is left to tell).
    ClientGone,
    /// A search thread failed (a bug: it panicked).
    Failed,
}

/// The server's shutdown signal, its time limit on one search and the call's deadline, with
/// their clocks started: [`Cutoffs::reached`] completes with the first to come.
#[derive(Clone, Debug)]
pub struct Cutoffs {
    /// Turns true when the server shuts down.
    stopping: watch::Receiver<bool>,
    /// The server's limit on one search, and when this search reaches it.
    time_limit: Duration,
    limit_at: Instant,
    /// When the call's deadline passes, if it has one.
    deadline_at: Option<Instant>,
}

impl Cutoffs {
    /// Starts the clocks now: the search may run `time_limit`, and the call has `deadline`
    /// left (none: no deadline); both end early when `stopping` turns true.
    pub fn start(
        stopping: watch::Receiver<bool>,
        time_limit: Duration,
        deadline: Option<Duration>,
    ) -> Cutoffs {
        Cutoffs {
            stopping,
            time_limit,
            limit_at: instant_after(time_limit),
            deadline_at: deadline.map(instant_after),
        }
    }

    /// Completes with the reason when the server shuts down, the search reaches the time
    /// limit or the call's deadline passes. Cancel-safe: may be polled again.
    pub async fn reached(&mut self) -> End {
        let deadline_at = self.deadline_at;
        let call = async {
            match deadline_at {
                Some(at) => tokio::time::sleep_until(at.into()).await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            _ = self.stopping.wait_for(|stop| *stop) => End::ShuttingDown,
            () = tokio::time::sleep_until(self.limit_at.into()) => End::TimeLimit { limit: self.time_limit },
            () = call => End::Deadline,
        }
    }
}

/// The instant `after` from now, capped at a year from now (so a huge setting or one beyond
/// the clock's range stays a valid timer).
fn instant_after(after: Duration) -> Instant {
    let year = Duration::from_secs(365 * 24 * 3600);
    let now = Instant::now();
    now.checked_add(after.min(year)).unwrap_or(now)
}
