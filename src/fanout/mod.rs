//! Fan-out over replicas: one count or enumeration cut into shards and spread over several
//! servers, with an explicit queue so that a shard whose server fails goes to another.
//!
//! tonic's `balance_list` does not fail over from a dead endpoint, so each endpoint gets its
//! own workers (as many as it admits) that take shards from a shared queue; a retryable
//! failure (UNAVAILABLE, RESOURCE_EXHAUSTED, a broken connection) puts the shard back, up to
//! a bounded number of attempts, after the wait the server asked for (RetryInfo) or a short
//! backoff. A shard whose replica went away while running it (its connection broke under
//! the call) gets one more try, on another endpoint; lost again, it fails the run at once
//! instead of bringing down every replica in turn. A watchdog per endpoint asks it for its
//! health; an endpoint that leaves a Check unanswered (a stopped process, a socket nobody
//! reads) is given up within 10 s, its calls in flight abandoned and their shards put back.
//! Enumeration writes each shard to its own file (text, resumed from its last complete line;
//! or Parquet, written whole under a temporary name and redone if interrupted), recording
//! finished shards in a manifest, so rerunning the command finishes the job.
//!
//! The files from the bottom up (each imports only files above it in this list):
//! - `job.rs`: what is spread ([`FanoutJob`]) and its defaults.
//! - `manifest.rs`: an enumeration's file [`Format`], its shard files' names and its
//!   [`Manifest`].
//! - `error.rs`: why a run failed.
//! - `resolve.rs`: endpoint arguments to URLs, one per address of a headless Service.
//! - `failure.rs`: how a failed call is read: retryable, lost with its replica, RetryInfo.
//! - `liveness.rs`: bounded connects and the health watchdog of each endpoint.
//! - `queue.rs`: the retry queue and its workers, for any per-shard task.
//! - `count.rs`: the count task and the checked total.
//! - `enumerate.rs`: the resumable enumeration into shard files (text or Parquet).
//!
//! Local (server-less) shard counts and their summing live in `crate::batch`; printing and
//! flags in `crate::cli`; connecting in `crate::client`.

mod count;
mod enumerate;
mod error;
mod failure;
mod job;
mod liveness;
mod manifest;
mod queue;
mod resolve;

pub use self::count::{CountTotal, count};
pub use self::enumerate::enumerate;
pub use self::error::Error;
pub use self::job::{
    CONNECT_TIMEOUT, FanoutJob, MAX_ATTEMPTS, PROBE_INTERVAL, PROBE_TIMEOUT, SHARDS_PER_ENDPOINT,
};
pub use self::manifest::{Format, Manifest, shard_file};
pub use self::queue::{EndpointStats, MAX_CALLS_PER_ENDPOINT, OnShard};
pub use self::resolve::resolve;
