//! The retry queue of a fan-out: per endpoint, workers (as many as it admits) take shards
//! from one shared queue and run a [`ShardTask`] on them; a retryable failure puts the shard
//! back, a server at capacity retires the worker, an endpoint failing in a row is given up,
//! and so is one its watchdog finds hung (`liveness.rs`): its calls in flight are abandoned
//! and their shards go back to the queue. A server's RetryInfo sets how long that endpoint
//! waits before it is given the shard again. A shard whose connection broke under its call
//! (`failure.rs`: its replica went away while holding it, as one the OOM killer ends) is
//! tried once more, on another endpoint while the run has one; lost a second time, it stops
//! the run, naming it and both endpoints, rather than bring down replica after replica. A
//! failed run stops at once: the calls still running are dropped. What a shard's task does
//! (count, enumerate into a file) is `count.rs`'s and `enumerate.rs`'s.
//!
//! Every shard in flight on a replica that goes away is lost with it, not only the one that
//! brought it down: each of them goes to another endpoint, and the first of them to be lost
//! a second time stops the run and is the one named.

use super::error::Error;
use super::failure;
use super::job::FanoutJob;
use super::liveness;
use crate::client::{Access, Client};
use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::sync::watch;
use tonic::Code;

/// Most calls one endpoint gets at once. Each endpoint starts this many workers; a worker
/// whose call is refused with RESOURCE_EXHAUSTED while others of its endpoint still work
/// retires (its shard goes back to the queue, no retry used), so every endpoint ends up with
/// as many calls as it admits (its `--max-searches`), up to this cap.
pub const MAX_CALLS_PER_ENDPOINT: usize = 16;

/// Consecutive failed calls after which an endpoint is given up.
const ENDPOINT_FAILURES: u32 = 3;

/// Pause after a failure before a worker takes the next shard, unless the server said how
/// long to wait (RetryInfo, `failure.rs`).
const BACKOFF: Duration = Duration::from_millis(200);

/// How often a worker with nothing it may take looks at the queue again.
const IDLE_POLL: Duration = Duration::from_millis(50);

/// Per-endpoint statistics of a run.
#[derive(Clone, Debug, Default)]
pub struct EndpointStats {
    /// The endpoint's URL.
    pub url: String,
    /// Shards it finished.
    pub shards: u64,
    /// Solutions (or boards) of those shards.
    pub solutions: u64,
    /// Calls that failed on it.
    pub failures: u64,
    /// Seconds spent in successful calls.
    pub busy_seconds: f64,
    /// Why the endpoint was given up during the run, if it was.
    pub gave_up: Option<String>,
}

/// Called as shards finish: shards done, shards in all, solutions so far.
pub type OnShard = Arc<dyn Fn(u64, u64, u64) + Send + Sync>;

/// A shard waiting in the queue, with what its earlier calls left it.
#[derive(Clone, Copy, Debug)]
struct Queued {
    /// Its index.
    index: u32,
    /// Its failed calls that used an attempt.
    attempts: u32,
    /// The endpoint whose connection broke under its call, if one did: it is given to
    /// another endpoint while the run has one, and a second loss stops the run.
    lost_on: Option<usize>,
    /// An endpoint that asked (RetryInfo) not to be given it before an instant.
    wait: Option<(usize, Instant)>,
}

/// The shared queue of one run.
struct Queue<R> {
    pending: VecDeque<Queued>,
    results: Vec<Option<R>>,
    outstanding: usize,
    fatal: Option<Error>,
    stats: Vec<EndpointStats>,
    /// Workers still running, per endpoint.
    live: Vec<usize>,
    /// Failed calls in a row, per endpoint (any of its workers); at [`ENDPOINT_FAILURES`]
    /// the endpoint is given up, so a dead one burns few of its shards' attempts.
    failing: Vec<u32>,
}

/// What a worker does with one shard; `Err` carries the status of a failed call.
pub(super) trait ShardTask: Clone + Send + Sync + 'static {
    type Output: Send + 'static;
    /// Runs shard `index` on `client`; returns its output and its number of solutions.
    fn run(
        &self,
        client: Client,
        index: u32,
    ) -> impl std::future::Future<Output = Result<(Self::Output, u64), tonic::Status>> + Send;
}

/// Runs every shard of `job` not in `skip` over `urls`; returns the outputs by shard index.
pub(super) async fn run_shards<T: ShardTask>(
    job: &FanoutJob,
    urls: &[String],
    skip: &[u32],
    task: T,
    progress: Option<OnShard>,
) -> Result<(Vec<Option<T::Output>>, Vec<EndpointStats>), Error> {
    let pending: VecDeque<Queued> = (0..job.shards)
        .filter(|i| !skip.contains(i))
        .map(|index| Queued {
            index,
            attempts: 0,
            lost_on: None,
            wait: None,
        })
        .collect();
    let total = job.shards as u64;
    let queue = Arc::new(Mutex::new(Queue {
        outstanding: pending.len(),
        pending,
        results: (0..job.shards).map(|_| None).collect(),
        fatal: None,
        live: vec![MAX_CALLS_PER_ENDPOINT; urls.len()],
        failing: vec![0; urls.len()],
        stats: urls
            .iter()
            .map(|u| EndpointStats {
                url: u.clone(),
                ..Default::default()
            })
            .collect(),
    }));
    let done_before = skip.len() as u64;
    let (mut workers, mut watchdogs) = (tokio::task::JoinSet::new(), Vec::new());
    for (e, url) in urls.iter().enumerate() {
        let (hung_tx, hung) = watch::channel(false);
        let (queue_w, url_w, access_w) = (queue.clone(), url.clone(), job.access.clone());
        watchdogs.push(tokio::spawn(async move {
            let why = liveness::until_hung(&url_w, &access_w).await;
            give_up(&queue_w, e, why);
            let _ = hung_tx.send(true);
        }));
        for _ in 0..MAX_CALLS_PER_ENDPOINT {
            let (queue, url, task) = (queue.clone(), url.clone(), task.clone());
            let (progress, max_attempts) = (progress.clone(), job.max_attempts);
            let (access, hung) = (job.access.clone(), hung.clone());
            workers.spawn(async move {
                worker(
                    e,
                    (url, access, hung),
                    queue,
                    task,
                    max_attempts,
                    total,
                    done_before,
                    progress,
                )
                .await
            });
        }
    }
    // A failed run stops at once: the calls still running are dropped (cancelled on the wire).
    while workers.join_next().await.is_some() {
        if queue.lock().expect("queue lock").fatal.is_some() {
            workers.abort_all();
        }
    }
    for w in watchdogs {
        w.abort();
    }
    let mut q = queue.lock().expect("queue lock");
    if let Some(fatal) = q.fatal.take() {
        return Err(fatal);
    }
    if q.outstanding > 0 {
        let left = q.pending.iter().map(|shard| shard.index).collect();
        let gave_up = q
            .stats
            .iter()
            .filter_map(|s| Some(format!("{}: {}", s.url, s.gave_up.as_ref()?)))
            .collect();
        return Err(Error::Unfinished { left, gave_up });
    }
    let results = std::mem::take(&mut q.results);
    Ok((results, std::mem::take(&mut q.stats)))
}

/// Gives up endpoint `e` for `why`, unless it was given up already.
fn give_up<R>(queue: &Mutex<Queue<R>>, e: usize, why: String) {
    let mut q = queue.lock().expect("queue lock");
    q.stats[e].gave_up.get_or_insert(why);
}

/// Resolves once the endpoint's watchdog has found it hung (never, if it does not).
async fn hung(mut found: watch::Receiver<bool>) {
    if found.wait_for(|&hung| hung).await.is_err() {
        std::future::pending::<()>().await;
    }
}

/// One attempt at shard `index`: connects when `client` holds no connection, then runs
/// the task.
async fn attempt<T: ShardTask>(
    client: &mut Option<Client>,
    (url, access): (&str, &Access),
    task: &T,
    index: u32,
) -> Result<(T::Output, u64), tonic::Status> {
    let connected = match client.take() {
        Some(c) => c,
        None => liveness::connect(url, access).await?,
    };
    *client = Some(connected.clone());
    task.run(connected, index).await
}

/// One worker of one endpoint: takes shards until the queue is empty, the run failed, or
/// its endpoint was given up ([`ENDPOINT_FAILURES`] failed calls in a row, or found hung:
/// then the call in flight is dropped and its shard goes back to the queue).
#[allow(clippy::too_many_arguments)]
async fn worker<T: ShardTask>(
    e: usize,
    (url, access, found_hung): (String, Access, watch::Receiver<bool>),
    queue: Arc<Mutex<Queue<T::Output>>>,
    task: T,
    max_attempts: u32,
    total: u64,
    done_before: u64,
    progress: Option<OnShard>,
) {
    let _live = Live {
        queue: queue.clone(),
        endpoint: e,
    };
    let mut client: Option<Client> = None;
    loop {
        let next = {
            let mut q = queue.lock().expect("queue lock");
            if q.fatal.is_some() || q.outstanding == 0 || q.stats[e].gave_up.is_some() {
                return;
            }
            q.take(e, Instant::now())
        };
        let Some(shard) = next else {
            // Others hold the remaining shards (one may come back), or those left are not
            // this endpoint's to take yet.
            tokio::time::sleep(IDLE_POLL).await;
            continue;
        };
        let started = Instant::now();
        let outcome = tokio::select! {
            biased;
            () = hung(found_hung.clone()) => Err(tonic::Status::unavailable(format!(
                "{url} stopped answering; the call was abandoned"
            ))),
            outcome = attempt(&mut client, (&url, &access), &task, shard.index) => outcome,
        };
        if outcome.is_err() {
            client = None;
        }
        let next_step = {
            let mut q = queue.lock().expect("queue lock");
            match outcome {
                Ok((output, solutions)) => q.finished(e, shard.index, output, solutions, started),
                Err(status) => q.failed(e, shard, status, max_attempts),
            }
        };
        match next_step {
            Step::Next => {}
            Step::Stop | Step::Retire => return,
            Step::Retry(pause) => {
                tokio::time::sleep(pause).await;
            }
        }
        if let (Some(p), Step::Next) = (&progress, next_step) {
            let q = queue.lock().expect("queue lock");
            let done = done_before + q.stats.iter().map(|s| s.shards).sum::<u64>();
            let found = q.stats.iter().map(|s| s.solutions).sum();
            drop(q);
            p(done, total, found);
        }
    }
}

/// What a worker does after a call.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Step {
    /// Take the next shard.
    Next,
    /// The shard went back to the queue; pause this long first.
    Retry(Duration),
    /// The run failed.
    Stop,
    /// The endpoint is at capacity with other workers, or was given up: leave it.
    Retire,
}

/// Counts a worker as live for its endpoint until dropped.
struct Live<R> {
    queue: Arc<Mutex<Queue<R>>>,
    endpoint: usize,
}

impl<R> Drop for Live<R> {
    fn drop(&mut self) {
        if let Ok(mut q) = self.queue.lock() {
            q.live[self.endpoint] -= 1;
        }
    }
}

impl<R> Queue<R> {
    /// Whether an endpoint other than `e` still has workers and was not given up.
    fn open_besides(&self, e: usize) -> bool {
        (0..self.live.len()).any(|o| o != e && self.live[o] > 0 && self.stats[o].gave_up.is_none())
    }

    /// Takes the first pending shard endpoint `e` may run now: not one whose connection
    /// broke on `e` while another endpoint is open (with none, `e` is the only one left to
    /// try it: a restarted replica, or another behind the same address), and not one `e`
    /// asked to be given later.
    fn take(&mut self, e: usize, now: Instant) -> Option<Queued> {
        let elsewhere = self.open_besides(e);
        let position = self.pending.iter().position(|shard| {
            let lost_here = shard.lost_on == Some(e) && elsewhere;
            let waiting = shard.wait.is_some_and(|(w, until)| w == e && now < until);
            !lost_here && !waiting
        })?;
        self.pending.remove(position)
    }

    /// Records shard `index`'s output, finished by endpoint `e` in a call begun at `started`.
    fn finished(
        &mut self,
        e: usize,
        index: u32,
        output: R,
        solutions: u64,
        started: Instant,
    ) -> Step {
        self.results[index as usize] = Some(output);
        self.outstanding -= 1;
        self.failing[e] = 0;
        let s = &mut self.stats[e];
        s.shards += 1;
        s.solutions += solutions;
        s.busy_seconds += started.elapsed().as_secs_f64();
        Step::Next
    }

    /// Records a failed call of `shard` on endpoint `e` and says what the worker does next.
    fn failed(
        &mut self,
        e: usize,
        shard: Queued,
        status: tonic::Status,
        max_attempts: u32,
    ) -> Step {
        let lost = failure::lost(&status);
        if let (true, Some(first)) = (lost, shard.lost_on) {
            self.stats[e].failures += 1;
            self.fatal = Some(Error::Lost {
                index: shard.index,
                first: self.stats[first].url.clone(),
                second: self.stats[e].url.clone(),
                status: Box::new(status),
            });
            return Step::Stop;
        }
        let wait = failure::retry_delay(&status);
        let shard = Queued {
            lost_on: if lost { Some(e) } else { shard.lost_on },
            wait: wait.map(|d| (e, Instant::now() + d)).or(shard.wait),
            ..shard
        };
        if self.stats[e].gave_up.is_some() {
            // Given up while this call ran: its shard goes elsewhere, no attempt used.
            self.stats[e].failures += 1;
            self.pending.push_back(shard);
            return Step::Retire;
        }
        if status.code() == Code::ResourceExhausted && self.live[e] > 1 {
            self.pending.push_back(shard);
            return Step::Retire;
        }
        if !failure::retryable(&status) {
            self.fatal = Some(Error::Refused {
                index: shard.index,
                url: self.stats[e].url.clone(),
                status: Box::new(status),
            });
            return Step::Stop;
        }
        self.stats[e].failures += 1;
        self.failing[e] += 1;
        if self.failing[e] >= ENDPOINT_FAILURES {
            self.stats[e].gave_up = Some(format!(
                "{ENDPOINT_FAILURES} failed calls in a row, the last: {:?}: {}",
                status.code(),
                status.message()
            ));
        }
        if shard.attempts + 1 >= max_attempts {
            self.fatal = Some(Error::Attempts {
                index: shard.index,
                attempts: shard.attempts + 1,
                url: self.stats[e].url.clone(),
                status: Box::new(status),
            });
            return Step::Stop;
        }
        self.pending.push_back(Queued {
            attempts: shard.attempts + 1,
            ..shard
        });
        Step::Retry(wait.unwrap_or(BACKOFF))
    }
}
