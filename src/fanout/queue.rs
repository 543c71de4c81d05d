//! The retry queue of a fan-out: per endpoint, workers (as many as it admits) take shards
//! from one shared queue and run a [`ShardTask`] on them; a retryable failure puts the shard
//! back, a server at capacity retires the worker, an endpoint failing in a row is given up,
//! and so is one its watchdog finds hung (`liveness.rs`): its calls in flight are abandoned
//! and their shards go back to the queue. What a shard's task does (count, enumerate into a
//! file) is `count.rs`'s and `enumerate.rs`'s.

use super::error::Error;
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

/// Pause after a failure before a worker takes the next shard.
const BACKOFF: Duration = Duration::from_millis(200);

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

/// Whether a failed call may succeed on another try or another endpoint.
fn retryable(status: &tonic::Status) -> bool {
    // A server killed mid-call shows up in tonic as Unknown "h2 protocol error", or as
    // Cancelled "operation was canceled" when the connection drops under a stream (this
    // client never cancels its own calls, so Cancelled always comes from the other side).
    matches!(
        status.code(),
        Code::Unavailable
            | Code::ResourceExhausted
            | Code::Unknown
            | Code::Aborted
            | Code::Cancelled
    )
}

/// The shared queue of one run.
struct Queue<R> {
    pending: VecDeque<(u32, u32)>,
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
    let pending: VecDeque<(u32, u32)> = (0..job.shards)
        .filter(|i| !skip.contains(i))
        .map(|i| (i, 0))
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
    let (mut workers, mut watchdogs) = (Vec::new(), Vec::new());
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
            workers.push(tokio::spawn(async move {
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
            }));
        }
    }
    for w in workers {
        let _ = w.await;
    }
    for w in watchdogs {
        w.abort();
    }
    let mut q = queue.lock().expect("queue lock");
    if let Some(fatal) = q.fatal.take() {
        return Err(fatal);
    }
    if q.outstanding > 0 {
        let left = q.pending.iter().map(|&(i, _)| i).collect();
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
            q.pending.pop_front()
        };
        let Some((index, attempts)) = next else {
            // Others hold the remaining shards; one may come back.
            tokio::time::sleep(Duration::from_millis(50)).await;
            continue;
        };
        let started = Instant::now();
        let outcome = tokio::select! {
            biased;
            () = hung(found_hung.clone()) => Err(tonic::Status::unavailable(format!(
                "{url} stopped answering; the call was abandoned"
            ))),
            outcome = attempt(&mut client, (&url, &access), &task, index) => outcome,
        };
        if outcome.is_err() {
            client = None;
        }
        let next_step = record(
            &queue,
            e,
            &url,
            index,
            attempts,
            max_attempts,
            started,
            outcome,
        );
        match next_step {
            Step::Next => {}
            Step::Stop | Step::Retire => return,
            Step::Retry => {
                tokio::time::sleep(BACKOFF).await;
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
    /// The shard went back to the queue; back off first.
    Retry,
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

/// Records a call's outcome in the queue and says what the worker does next.
#[allow(clippy::too_many_arguments)]
fn record<R>(
    queue: &Mutex<Queue<R>>,
    e: usize,
    url: &str,
    index: u32,
    attempts: u32,
    max_attempts: u32,
    started: Instant,
    outcome: Result<(R, u64), tonic::Status>,
) -> Step {
    let mut q = queue.lock().expect("queue lock");
    match outcome {
        Ok((output, solutions)) => {
            q.results[index as usize] = Some(output);
            q.outstanding -= 1;
            q.failing[e] = 0;
            let s = &mut q.stats[e];
            s.shards += 1;
            s.solutions += solutions;
            s.busy_seconds += started.elapsed().as_secs_f64();
            Step::Next
        }
        Err(_) if q.stats[e].gave_up.is_some() => {
            // Given up while this call ran: its shard goes elsewhere, no attempt used.
            q.stats[e].failures += 1;
            q.pending.push_back((index, attempts));
            Step::Retire
        }
        Err(status) if status.code() == Code::ResourceExhausted && q.live[e] > 1 => {
            q.pending.push_back((index, attempts));
            Step::Retire
        }
        Err(status) if retryable(&status) => {
            q.stats[e].failures += 1;
            q.failing[e] += 1;
            if q.failing[e] >= ENDPOINT_FAILURES {
                q.stats[e].gave_up = Some(format!(
                    "{ENDPOINT_FAILURES} failed calls in a row, the last: {:?}: {}",
                    status.code(),
                    status.message()
                ));
            }
            if attempts + 1 >= max_attempts {
                q.fatal = Some(Error::Attempts {
                    index,
                    attempts: attempts + 1,
                    url: url.to_string(),
                    status: Box::new(status),
                });
                return Step::Stop;
            }
            q.pending.push_back((index, attempts + 1));
            Step::Retry
        }
        Err(status) => {
            q.fatal = Some(Error::Refused {
                index,
                url: url.to_string(),
                status: Box::new(status),
            });
            Step::Stop
        }
    }
}
