//! The `queens.v1.Queens` gRPC service: requests become validated solver questions, searches
//! run off the async runtime, and every error becomes a `Status` in one place ([`Error`]).
//!
//! Enumerate runs the search in a blocking task that pushes batches of boards into a bounded
//! channel, which is the response stream; the producer stops when the client goes away,
//! when the server shuts down, or at the end of the search. Count runs the counting path in
//! a blocking task with a cancel flag raised when the call is dropped, its deadline passes,
//! or the server shuts down. The listener, health, reflection and shutdown live in
//! `server.rs`.

use crate::config::Config;
use crate::pb::{Board, CountRequest, CountResponse, CountUpdate, EnumerateRequest};
use crate::produce::{self, Consumer, Plan};
use crate::solver::{self, CountError, Problem, Progress, QueryError, Shard, Sink, Square};
use crate::wire::server::queens_server::Queens;
use crate::wire::{BoardEncoder, EncodedBatch};
use std::ops::ControlFlow;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};
use tokio::runtime::Handle;
use tokio::sync::{OwnedSemaphorePermit, Semaphore, mpsc, watch};
use tokio_stream::wrappers::ReceiverStream;
use tonic::{Request, Response, Status};

/// Why a call failed; [`From<Error> for Status`](#impl-From<Error>-for-Status) is the one place
/// that decides what a client sees.
#[derive(Debug)]
pub enum Error {
    /// The request is not a valid question.
    Invalid(QueryError),
    /// The count exceeds `u64`.
    Overflow,
    /// The call was cancelled while searching.
    Cancelled,
    /// The call's deadline (`grpc-timeout`) passed.
    DeadlineExceeded,
    /// The server is shutting down.
    ShuttingDown,
    /// Every search slot is taken (`--max-searches`).
    Busy {
        /// The server's cap on concurrent searches.
        limit: usize,
    },
    /// The search ran past the server's own time limit (`--max-search-seconds`).
    TimeLimit {
        /// The limit.
        limit: Duration,
    },
    /// A search task failed (a bug: it panicked).
    Internal(String),
}

impl From<Error> for Status {
    fn from(error: Error) -> Status {
        match error {
            Error::Invalid(e) => Status::invalid_argument(e.to_string()),
            Error::Overflow => Status::out_of_range(CountError::Overflow.to_string()),
            Error::Cancelled => Status::cancelled("the call was cancelled"),
            Error::DeadlineExceeded => {
                Status::deadline_exceeded("the call's deadline passed before the search ended")
            }
            Error::ShuttingDown => Status::unavailable("server shutting down"),
            Error::Busy { limit } => Status::resource_exhausted(format!(
                "server busy: all {limit} search slots are in use (--max-searches {limit}); \
                 retry later"
            )),
            Error::TimeLimit { limit } => Status::deadline_exceeded(format!(
                "search stopped at the server's time limit of {} s (--max-search-seconds)",
                limit.as_secs_f64()
            )),
            Error::Internal(what) => Status::internal(what),
        }
    }
}

impl From<QueryError> for Error {
    fn from(e: QueryError) -> Error {
        Error::Invalid(e)
    }
}

/// The Queens service: settings, the search slots, and the server's shutdown signal.
#[derive(Clone, Debug)]
pub struct QueensService {
    config: Arc<Config>,
    /// One permit per running search, server-wide; taken before a search starts and held by
    /// its producer until the search ends (open streams included).
    searches: Arc<Semaphore>,
    stopping: watch::Receiver<bool>,
}

impl QueensService {
    /// A service with these settings that ends its calls when `stopping` turns true.
    pub fn new(config: Config, stopping: watch::Receiver<bool>) -> QueensService {
        QueensService {
            searches: Arc::new(Semaphore::new(config.max_searches)),
            config: Arc::new(config),
            stopping,
        }
    }

    /// Takes a search slot, or refuses at once: a quick RESOURCE_EXHAUSTED lets clients back
    /// off or go to another replica, where a queue would hide the overload and hold their
    /// connections.
    fn admit(&self) -> Result<OwnedSemaphorePermit, Error> {
        if *self.stopping.borrow() {
            return Err(Error::ShuttingDown);
        }
        self.searches
            .clone()
            .try_acquire_owned()
            .map_err(|_| Error::Busy {
                limit: self.config.max_searches,
            })
    }

    /// The prefix depth to produce `job` in parallel at, or `None` for the sequential search:
    /// parallel when there are several worker threads, no `shard` (whose numbering each task
    /// would have to redo), no `limit` below [`PARALLEL_MIN_LIMIT`] (a small page would
    /// waste the workers' speculative boards), on a board big enough to split.
    fn parallel_depth(&self, job: &Enumeration) -> Option<usize> {
        let big = job.limit.is_none_or(|l| l >= PARALLEL_MIN_LIMIT);
        let whole = big && job.problem.shard().parts() == 1;
        (whole && self.config.produce_threads > 1)
            .then(|| produce::task_depth(job.problem.n()))
            .flatten()
    }

    /// The validated question of a Count request.
    fn count_problem(&self, req: &CountRequest) -> Result<Problem, Error> {
        Ok(Problem::with_max_n(
            req.n,
            &squares(&req.fixed),
            false,
            shard(req.shard.as_ref()),
            self.config.max_n,
        )?)
    }

    /// The validated stream of an Enumerate request.
    fn enumeration(&self, req: &EnumerateRequest) -> Result<Enumeration, Error> {
        let problem = Problem::with_max_n(
            req.n,
            &squares(&req.fixed),
            req.fundamental,
            shard(req.shard.as_ref()),
            self.config.max_n,
        )?;
        let start_after = problem.check_start_after(&req.start_after)?;
        let per_board = BoardEncoder::new(req.n, req.compact).entry_len();
        let most = (self.config.max_message_bytes / per_board).max(1);
        let batch = match req.batch_size {
            0 => self.config.default_batch_bytes / per_board,
            asked => asked as usize,
        };
        Ok(Enumeration {
            problem,
            start_after,
            limit: (req.limit > 0).then_some(req.limit),
            batch: batch.clamp(1, most),
            compact: req.compact,
        })
    }
}

/// Smallest `limit` a stream is produced in parallel for: the workers may encode up to the
/// reorder buffer's worth of boards past the limit (4 MiB, 230,000 compact boards of
/// n = 14), which is waste next to a small page but noise next to 65,536 boards and more.
const PARALLEL_MIN_LIMIT: u64 = 1 << 16;

/// The fixed queens of a request, as the solver takes them.
pub fn squares(fixed: &[crate::pb::Square]) -> Vec<Square> {
    fixed
        .iter()
        .map(|s| Square {
            row: s.row,
            column: s.column,
        })
        .collect()
}

/// The shard of a request, as the solver takes it (absent: the whole search).
pub fn shard(shard: Option<&crate::pb::Shard>) -> Shard {
    shard.map_or(Shard::WHOLE, |s| Shard {
        index: s.index,
        count: s.count,
    })
}

/// A board as the generated types carry it (the server itself writes the same bytes
/// directly, through [`BoardEncoder`]).
pub fn board(columns: &[u8], compact: bool) -> Board {
    let rows = if compact {
        Vec::new()
    } else {
        columns
            .iter()
            .map(|&c| render_row(columns.len(), c))
            .collect()
    };
    Board {
        columns: columns.iter().map(|&c| u32::from(c)).collect(),
        rows,
    }
}

/// One row of a rendered board: `n` characters, `Q` at `column`, `.` elsewhere.
fn render_row(n: usize, column: u8) -> String {
    (0..n)
        .map(|c| if c == column as usize { 'Q' } else { '.' })
        .collect()
}

/// A validated Enumerate request.
#[derive(Debug)]
struct Enumeration {
    problem: Problem,
    start_after: Option<Vec<u8>>,
    limit: Option<u64>,
    /// Boards per response message (already within the message size cap).
    batch: usize,
    compact: bool,
}

/// Boards up to this size are counted on one thread (n = 12 takes about 10 ms).
const SMALL_COUNT_N: u32 = 12;

/// Items of the response stream.
type Item = Result<EncodedBatch, Status>;

#[tonic::async_trait]
impl Queens for QueensService {
    type EnumerateStream = ReceiverStream<Item>;

    async fn enumerate(
        &self,
        request: Request<EnumerateRequest>,
    ) -> Result<Response<Self::EnumerateStream>, Status> {
        let job = self.enumeration(request.get_ref())?;
        let permit = self.admit()?;
        let (tx, rx) = mpsc::channel(self.config.channel_messages);
        let mut sink = StreamSink {
            tx,
            handle: Handle::current(),
            stopping: self.stopping.clone(),
            encoder: BoardEncoder::new(job.problem.n(), job.compact),
            batch: Vec::new(),
            boards: 0,
            per_message: job.batch,
            flush_interval: self.config.flush_interval,
            // As if a message had just gone a flush interval ago: the first boards go out at
            // once, then batches fill up.
            last_send: Instant::now()
                .checked_sub(self.config.flush_interval)
                .unwrap_or_else(Instant::now),
            time_limit: self.config.max_search_time,
            deadline: Instant::now() + self.config.max_search_time,
            stopped: None,
            permit: Some(permit),
        };
        let parallel = self.parallel_depth(&job);
        let plan = Plan {
            threads: self.config.produce_threads,
            buffer_bytes: self.config.reorder_bytes,
            wait: self.config.flush_interval / 2,
        };
        tokio::task::spawn_blocking(move || {
            let after = job.start_after.as_deref();
            let flow = match parallel {
                Some(depth) => {
                    let encoder = sink.encoder.clone();
                    let limit = job.limit;
                    produce::produce(&job.problem, after, limit, depth, &encoder, plan, &mut sink)
                }
                None => solver::enumerate(&job.problem, after, job.limit, &mut sink),
            };
            sink.finish(flow);
        });
        Ok(Response::new(ReceiverStream::new(rx)))
    }

    async fn count(
        &self,
        request: Request<CountRequest>,
    ) -> Result<Response<CountResponse>, Status> {
        let mut running = self.start_count(&request)?;
        let counts = running.result().await?;
        Ok(Response::new(CountResponse {
            solutions: counts.solutions,
            fundamental: counts.fundamental,
        }))
    }

    type CountProgressStream = ReceiverStream<Result<CountUpdate, Status>>;

    async fn count_progress(
        &self,
        request: Request<CountRequest>,
    ) -> Result<Response<Self::CountProgressStream>, Status> {
        let mut running = self.start_count(&request)?;
        let every = self.config.progress_interval;
        let (tx, rx) = mpsc::channel(self.config.channel_messages);
        let (progress, started, fundamental) = (
            running.progress.clone(),
            running.started,
            running.fundamental,
        );
        let update = move |last: Option<solver::Counts>| {
            progress_update(&progress, started, fundamental, last)
        };
        tokio::spawn(async move {
            let mut ticker = tokio::time::interval_at(tokio::time::Instant::now() + every, every);
            loop {
                tokio::select! {
                    result = running.result() => {
                        let _ = tx.send(result.map(|c| update(Some(c))).map_err(Status::from)).await;
                        break;
                    }
                    _ = ticker.tick() => {
                        // A reader that is behind misses an update, never the result.
                        let _ = tx.try_send(Ok(update(None)));
                    }
                    // The client left: dropping `running` raises the cancel flag.
                    _ = tx.closed() => break,
                }
            }
        });
        Ok(Response::new(ReceiverStream::new(rx)))
    }
}

impl QueensService {
    /// Validates a Count request, takes a search slot and starts the count off the runtime.
    fn start_count(&self, request: &Request<CountRequest>) -> Result<RunningCount, Error> {
        let problem = self.count_problem(request.get_ref())?;
        let fundamental = problem.fixed().is_empty();
        let permit = self.admit()?;
        let deadline = grpc_timeout(request.metadata());
        let cancel = Arc::new(AtomicBool::new(false));
        let progress = Arc::new(Progress::default());
        // Small boards count in milliseconds: a thread pool would cost more than it saves.
        let threads = if problem.n() <= SMALL_COUNT_N {
            1
        } else {
            self.config.count_threads
        };
        let (flag, live) = (cancel.clone(), progress.clone());
        let task = tokio::task::spawn_blocking(move || {
            let counted = solver::count_with_progress(&problem, &flag, threads, &live);
            drop(permit);
            counted
        });
        let mut stopping = self.stopping.clone();
        let limit = self.config.max_search_time;
        let ends = Box::pin(async move {
            tokio::select! {
                _ = sleep_until(deadline) => Error::DeadlineExceeded,
                _ = tokio::time::sleep(limit) => Error::TimeLimit { limit },
                _ = stopping.wait_for(|stop| *stop) => Error::ShuttingDown,
            }
        });
        Ok(RunningCount {
            task,
            ends,
            progress,
            started: Instant::now(),
            fundamental,
            _cancel: RaiseOnDrop(cancel),
        })
    }
}

/// A count running on the blocking pool, and what may end it early.
struct RunningCount {
    task: tokio::task::JoinHandle<Result<solver::Counts, CountError>>,
    /// Completes with the reason when the deadline, the time limit or shutdown comes first.
    ends: std::pin::Pin<Box<dyn std::future::Future<Output = Error> + Send>>,
    progress: Arc<Progress>,
    started: Instant,
    /// Whether the count has a fundamental figure (no fixed queens).
    fundamental: bool,
    /// Raised when the call ends or is dropped (the client went away): the search stops.
    _cancel: RaiseOnDrop,
}

impl RunningCount {
    /// The result, or why the count ended first. Cancel-safe: may be polled again.
    async fn result(&mut self) -> Result<solver::Counts, Error> {
        tokio::select! {
            joined = &mut self.task => joined
                .map_err(|e| Error::Internal(format!("count task failed: {e}")))?
                .map_err(|e| match e {
                    CountError::Cancelled => Error::Cancelled,
                    CountError::Overflow => Error::Overflow,
                }),
            error = &mut self.ends => Err(error),
        }
    }
}

/// A progress message: partial sums so far, or the exact result when `last` is given.
fn progress_update(
    progress: &Progress,
    started: Instant,
    fundamental: bool,
    last: Option<solver::Counts>,
) -> CountUpdate {
    let load = |a: &std::sync::atomic::AtomicU64| a.load(Ordering::Relaxed);
    let (solutions, classes) = match last {
        Some(c) => (c.solutions, c.fundamental.unwrap_or(0)),
        None => (load(&progress.solutions), load(&progress.classes)),
    };
    CountUpdate {
        solutions,
        fundamental: fundamental.then_some(classes),
        subproblems_done: load(&progress.done),
        subproblems_total: load(&progress.total),
        elapsed_seconds: started.elapsed().as_secs_f64(),
        done: last.is_some(),
    }
}

/// Sleeps until the deadline, or forever without one.
async fn sleep_until(deadline: Option<Duration>) {
    match deadline {
        Some(d) => tokio::time::sleep(d).await,
        None => std::future::pending().await,
    }
}

/// The call's deadline from its `grpc-timeout` header (e.g. `300m`), if any.
fn grpc_timeout(metadata: &tonic::metadata::MetadataMap) -> Option<Duration> {
    let value = metadata.get("grpc-timeout")?.to_str().ok()?;
    let (amount, unit) = value.split_at(value.len().checked_sub(1)?);
    let amount: u64 = amount.parse().ok()?;
    Some(match unit {
        "H" => Duration::from_secs(amount.saturating_mul(3600)),
        "M" => Duration::from_secs(amount.saturating_mul(60)),
        "S" => Duration::from_secs(amount),
        "m" => Duration::from_millis(amount),
        "u" => Duration::from_micros(amount),
        "n" => Duration::from_nanos(amount),
        _ => return None,
    })
}

/// Raises its flag when dropped.
struct RaiseOnDrop(Arc<AtomicBool>);

impl Drop for RaiseOnDrop {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Relaxed);
    }
}

/// The producer's end of an Enumerate stream: batches boards and sends them through the
/// bounded channel, waiting while the client is behind, and stops the search when the client
/// has gone or the server is stopping.
struct StreamSink {
    tx: mpsc::Sender<Item>,
    handle: Handle,
    stopping: watch::Receiver<bool>,
    /// Writes each board's bytes into `batch`.
    encoder: BoardEncoder,
    /// The serialized boards of the message being filled, and how many there are.
    batch: Vec<u8>,
    boards: usize,
    per_message: usize,
    flush_interval: Duration,
    last_send: Instant,
    /// The server's limit on one search, and when this one reaches it.
    time_limit: Duration,
    deadline: Instant,
    /// Why the stream must end early, if it must.
    stopped: Option<Stop>,
    /// This search's slot; released as soon as the search ends.
    permit: Option<OwnedSemaphorePermit>,
}

/// Why a producer stopped before the search ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Stop {
    /// The client went away (the channel's receiver is gone).
    ClientGone,
    /// The server is shutting down.
    ShuttingDown,
    /// The search reached the server's time limit.
    TimeLimit,
}

impl StreamSink {
    /// Sends the current batch, waiting for room in the channel, unless the server stops.
    fn flush(&mut self) -> ControlFlow<()> {
        if self.batch.is_empty() {
            return ControlFlow::Continue(());
        }
        let full = self.per_message * self.encoder.entry_len();
        let message = EncodedBatch {
            bytes: std::mem::replace(&mut self.batch, Vec::with_capacity(full)),
        };
        self.boards = 0;
        let tx = &self.tx;
        let stopping = &mut self.stopping;
        let deadline = tokio::time::Instant::from_std(self.deadline);
        let sent = self.handle.block_on(async {
            tokio::select! {
                sent = tx.send(Ok(message)) => sent.map_err(|_| Stop::ClientGone),
                _ = stopping.wait_for(|stop| *stop) => Err(Stop::ShuttingDown),
                _ = tokio::time::sleep_until(deadline) => Err(Stop::TimeLimit),
            }
        });
        self.last_send = Instant::now();
        match sent {
            Ok(()) => ControlFlow::Continue(()),
            Err(stop) => {
                self.stopped = Some(stop);
                ControlFlow::Break(())
            }
        }
    }

    /// Ends the stream: releases the search slot, then sends the last partial batch after a
    /// complete search, or the status that says why the server stopped it.
    fn finish(mut self, flow: ControlFlow<()>) {
        self.permit = None;
        if flow.is_continue() {
            let _ = self.flush();
        }
        let error = match self.stopped {
            Some(Stop::ShuttingDown) => Error::ShuttingDown,
            Some(Stop::TimeLimit) => Error::TimeLimit {
                limit: self.time_limit,
            },
            Some(Stop::ClientGone) | None => return,
        };
        let tx = self.tx.clone();
        // The client may not be reading: wait a little for room, not forever.
        let _ = self.handle.block_on(async {
            tokio::time::timeout(Duration::from_secs(1), tx.send(Err(error.into()))).await
        });
    }
}

impl Consumer for StreamSink {
    fn take(&mut self, mut entries: &[u8]) -> ControlFlow<()> {
        let len = self.encoder.entry_len();
        while !entries.is_empty() {
            let room = (self.per_message - self.boards) * len;
            let (now, rest) = entries.split_at(room.min(entries.len()));
            self.batch.extend_from_slice(now);
            self.boards += now.len() / len;
            entries = rest;
            if self.boards >= self.per_message {
                self.flush()?;
            }
        }
        self.poll()
    }

    fn idle(&mut self) -> ControlFlow<()> {
        self.poll()
    }
}

impl Sink for StreamSink {
    fn push(&mut self, columns: &[u8]) -> ControlFlow<()> {
        self.encoder.push(columns, &mut self.batch);
        self.boards += 1;
        if self.boards >= self.per_message {
            return self.flush();
        }
        ControlFlow::Continue(())
    }

    fn poll(&mut self) -> ControlFlow<()> {
        if self.tx.is_closed() {
            self.stopped = Some(Stop::ClientGone);
            return ControlFlow::Break(());
        }
        if *self.stopping.borrow() {
            self.stopped = Some(Stop::ShuttingDown);
            return ControlFlow::Break(());
        }
        if Instant::now() >= self.deadline {
            self.stopped = Some(Stop::TimeLimit);
            return ControlFlow::Break(());
        }
        if !self.batch.is_empty() && self.last_send.elapsed() >= self.flush_interval {
            return self.flush();
        }
        ControlFlow::Continue(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_render_the_classic_way() {
        let b = board(&[1, 3, 0, 2], false);
        assert_eq!(b.rows, vec![".Q..", "...Q", "Q...", "..Q."]);
        assert_eq!(b.columns, vec![1, 3, 0, 2]);
        assert!(board(&[0], true).rows.is_empty());
    }

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
    }
}
