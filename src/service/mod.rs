//! The `queens.v1.Queens` gRPC service: thin handlers that turn a request into a validated
//! question, take a search slot, start the work and map every error to a `Status`.
//!
//! # Layout
//! - `query.rs`: request to validated question ([`Query`]); shared with the CLI and the
//!   fuzz target.
//! - `error.rs`: why a call failed ([`Error`]) and the one mapping to `Status`.
//! - `call.rs`: what the service knows of a call beyond its request (who, when it arrived,
//!   the note for its log line); the server's gate fills these in.
//! - `admission.rs`: admission by cost: which searches are small ([`Size`]), the long
//!   searches' slots (`--max-searches`), and the memory every search reserves.
//! - `lane.rs`: the small searches' places (`--max-small-searches`), waited for briefly.
//! - `turns.rs`: small counts' turns on the CPU, taken by clients in rotation.
//! - `budget.rs`: the memory budget (`--max-memory`): reservations, the join's tables
//!   reserved once per size.
//! - `shares.rs`: each client's share of a bounded resource (search slots, and the server's
//!   requests in flight).
//! - `count.rs`: a running Count: deadline, time limit, shutdown, progress.
//!
//! Not here: the Enumerate pipeline (`crate::stream`), the searches (`crate::solver`), the
//! listener, health, reflection and shutdown (the server).

mod admission;
mod budget;
mod call;
mod count;
mod error;
mod lane;
mod query;
mod shares;
mod turns;

pub use self::admission::{Admission, SearchSlot, Size};
pub use self::budget::{Budget, Need, Reservation, Reserved};
pub use self::call::{Arrived, CallNote, Calls, ClientId};
pub use self::count::{RunningCount, grpc_timeout};
pub use self::error::Error;
pub use self::lane::{Lane, Place, Waited};
pub use self::query::Query;
pub use self::shares::{Share, Shares};
pub use self::turns::{Turn, Turns};

use self::count::DEADLINE_MARGIN;
use crate::config::{CROWDED_TURN, Config};
use crate::pb::server::queens_server::Queens;
use crate::pb::{CountRequest, CountResponse, CountUpdate, EnumerateRequest};
use crate::solver::{self, Pool};
use crate::stream::{self, Behind, Cutoffs, EncodedBatch};
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use tokio::sync::{mpsc, watch};
use tokio_stream::wrappers::ReceiverStream;
use tokio_stream::{Stream, StreamExt};
use tonic::{Request, Response, Status};

/// The Queens service: settings, the search slots, the pool searches run on, and the server's
/// shutdown signal.
#[derive(Clone, Debug)]
pub struct QueensService {
    config: Arc<Config>,
    query: Query,
    streams: stream::Settings,
    admission: Admission,
    pool: Pool,
    stopping: watch::Receiver<bool>,
    /// Whether the process exports metrics: work done only to feed them (a running count's
    /// subproblems, every second) is skipped if not.
    metrics: bool,
}

impl QueensService {
    /// A service with these settings whose searches run on `pool`, ending its calls when
    /// `stopping` turns true; `metrics` says whether the process exports metrics.
    pub fn new(
        config: Config,
        pool: Pool,
        stopping: watch::Receiver<bool>,
        metrics: bool,
    ) -> QueensService {
        QueensService {
            query: Query {
                max_n: config.max_n,
                max_message_bytes: config.max_message_bytes,
                default_batch_bytes: config.default_batch_bytes,
            },
            streams: stream::Settings {
                workers: config.produce_threads,
                reorder_bytes: config.reorder_bytes,
                flush_interval: config.flush_interval,
                channel_messages: config.channel_messages,
                time_limit: config.max_search_time,
                stall_timeout: config.stall_timeout,
            },
            admission: Admission::new(
                (config.max_searches, config.searches_per_client()),
                Lane::new(
                    config.max_small_searches,
                    config.small_searches_per_client(),
                    config.small_search_wait,
                    config.small_search_turns(),
                ),
                config.max_memory,
                stopping.clone(),
            ),
            config: Arc::new(config),
            pool,
            stopping,
            metrics,
        }
    }

    /// The memory budget the searches reserve from.
    pub fn budget(&self) -> &Budget {
        self.admission.budget()
    }

    /// The limits requests are checked against.
    pub fn query(&self) -> Query {
        self.query
    }

    /// Validates a Count request and admits it: a slot, or a small search's place and, for a
    /// count on the pool, its turn on the CPU. With `now`, a board [`solver::count_now`]
    /// takes is admitted to be counted on the spot (its memory a few words, no turn: it runs
    /// within one poll of the call, microseconds on the thread that serves the call). A
    /// client that crowds others (`Lane::crowds`) waits for a turn first, parked, and its
    /// turn lasts at least [`CROWDED_TURN`]: its flood leaves the CPU to the others.
    async fn admit_count(
        &self,
        request: &Request<CountRequest>,
        now: bool,
    ) -> Result<AdmittedCount, Error> {
        if let Some(note) = note(request) {
            note.n.store(request.get_ref().n, Ordering::Relaxed);
        }
        let problem = self.query.count(request.get_ref())?;
        // Small boards count in milliseconds: more engines would cost more than they save.
        let size = Size::of_count(&problem);
        // A client with more calls in flight than its turns, beside others, takes turns.
        let crowds = size == Size::Small && self.admission.crowds(client(request), calls(request));
        let now = now && solver::counts_now(&problem);
        let threads = match size {
            Size::Small => 1,
            Size::Long => self.config.count_threads,
        };
        let memory = solver::count_memory(&problem, threads);
        let need = if now {
            Need::default()
        } else {
            Need {
                own: memory.fixed,
                per_engine: memory.per_engine,
                engines: threads,
                tables: memory.tables,
            }
        };
        let left = deadline(request).map(|d| d.saturating_sub(DEADLINE_MARGIN));
        let mut slot = self
            .admission
            .admit(client(request), size, need, left)
            .await?;
        if size == Size::Small && (crowds || !now) {
            // Clients take turns on the CPU: a small count waits here for its turn, within
            // what its deadline leaves now, after the wait for its place.
            let left = deadline(request).map(|d| d.saturating_sub(DEADLINE_MARGIN));
            let turn = self.admission.turn(client(request), left).await?;
            slot.hold(if crowds {
                turn.lasting(CROWDED_TURN)
            } else {
                turn
            });
        }
        Ok(AdmittedCount {
            problem,
            slot,
            per_engine: memory.per_engine,
            now,
        })
    }

    /// Starts an admitted count on the pool.
    fn start_count(
        &self,
        request: &Request<CountRequest>,
        admitted: AdmittedCount,
    ) -> RunningCount {
        let AdmittedCount {
            problem,
            slot,
            per_engine,
            ..
        } = admitted;
        // As many engines as the budget holds now, down to one.
        let threads = slot.engines();
        // The clocks start now, not when the count is first polled (a wait for a place
        // counts against the deadline).
        let cutoffs = Cutoffs::start(
            self.stopping.clone(),
            self.config.max_search_time,
            deadline(request).map(|d| d.saturating_sub(DEADLINE_MARGIN)),
        );
        RunningCount::start(
            &problem,
            &self.pool,
            (threads, per_engine),
            cutoffs,
            slot,
            self.metrics,
        )
    }
}

/// A Count's problem, admitted: what it holds, each engine's cap on memory, and whether it
/// was admitted to be counted at once.
struct AdmittedCount {
    problem: solver::Problem,
    slot: SearchSlot,
    per_engine: u64,
    now: bool,
}

/// Who a call comes from (set by the server's gate; [`ClientId::Local`] in process).
fn client<T>(request: &Request<T>) -> &ClientId {
    request
        .extensions()
        .get::<ClientId>()
        .unwrap_or(&ClientId::Local)
}

/// How many requests the call's client had in flight when it arrived (set by the server's
/// gate; one in process).
fn calls<T>(request: &Request<T>) -> usize {
    request
        .extensions()
        .get::<Calls>()
        .map_or(1, |calls| calls.0)
}

/// The call's log note (set by the server's gate; none in process).
fn note<T>(request: &Request<T>) -> Option<&Arc<CallNote>> {
    request.extensions().get::<Arc<CallNote>>()
}

/// Time left before the call's deadline (`grpc-timeout`, counted from the request's arrival
/// when the server's gate noted it), if it has one.
fn deadline<T>(request: &Request<T>) -> Option<std::time::Duration> {
    let timeout = grpc_timeout(request.metadata())?;
    Some(match request.extensions().get::<Arrived>() {
        Some(Arrived(at)) => timeout.saturating_sub(at.elapsed()),
        None => timeout,
    })
}

/// The response stream of Enumerate.
pub type EnumerateStream = Pin<Box<dyn Stream<Item = Result<EncodedBatch, Status>> + Send>>;

#[tonic::async_trait]
impl Queens for QueensService {
    type EnumerateStream = EnumerateStream;

    async fn enumerate(
        &self,
        request: Request<EnumerateRequest>,
    ) -> Result<Response<EnumerateStream>, Status> {
        let note = note(&request).cloned();
        if let Some(note) = &note {
            note.n.store(request.get_ref().n, Ordering::Relaxed);
        }
        let job = self
            .query
            .enumerate(request.get_ref())
            .map_err(Error::from)?;
        let entry = stream::BoardEncoder::new(job.problem.n(), job.form).entry_len() as u64;
        let need = Need::bytes(stream::memory(&job, &self.streams));
        let size = Size::of_enumeration(&job);
        let slot = self
            .admission
            .admit(client(&request), size, need, deadline(&request))
            .await?;
        // After any wait for a place: the stream has what is left.
        let deadline = deadline(&request);
        let messages = stream::start(
            job,
            &self.streams,
            &self.pool,
            (self.stopping.clone(), deadline),
            slot,
        );
        let (boards_sent, bytes_sent) = (
            metrics::counter!("queens_boards_sent_total"),
            metrics::counter!("queens_bytes_sent_total"),
        );
        let items = messages.map(move |item| {
            if let Ok(batch) = &item {
                let bytes = prost::Message::encoded_len(batch) as u64;
                let boards = batch.boards(entry as usize);
                boards_sent.increment(boards);
                bytes_sent.increment(bytes);
                if let Some(note) = &note {
                    note.boards.fetch_add(boards, Ordering::Relaxed);
                    note.messages.fetch_add(1, Ordering::Relaxed);
                }
            }
            item.map_err(|end| Error::from(end).into())
        });
        Ok(Response::new(Box::pin(items)))
    }

    async fn count(
        &self,
        request: Request<CountRequest>,
    ) -> Result<Response<CountResponse>, Status> {
        let admitted = self.admit_count(&request, true).await?;
        let now = admitted.now.then(|| solver::count_now(&admitted.problem));
        let counts = match now.flatten() {
            // The smallest boards: counted here, in microseconds, holding the place.
            Some(counted) => {
                metrics::counter!("queens_count_subproblems_total").increment(1);
                counted.map_err(Error::from)?
            }
            None => self.start_count(&request, admitted).result().await?,
        };
        if let Some(note) = note(&request) {
            note.solutions.store(counts.solutions, Ordering::Relaxed);
        }
        Ok(Response::new(CountResponse::from(counts)))
    }

    type CountProgressStream = ReceiverStream<Result<CountUpdate, Status>>;

    async fn count_progress(
        &self,
        request: Request<CountRequest>,
    ) -> Result<Response<Self::CountProgressStream>, Status> {
        let admitted = self.admit_count(&request, false).await?;
        let mut running = self.start_count(&request, admitted);
        let every = self.config.progress_interval;
        let (tx, rx) = mpsc::channel(self.config.channel_messages);
        let stall = self.config.stall_timeout;
        let note = note(&request).cloned();
        tokio::spawn(async move {
            let mut ticker = tokio::time::interval_at(tokio::time::Instant::now() + every, every);
            let mut behind = Behind::new(stall);
            let last = loop {
                tokio::select! {
                    result = running.result() => {
                        break Some(result.map(|c| running.update(Some(c))).map_err(Status::from));
                    }
                    _ = ticker.tick() => {
                        // A reader that is behind misses an update, never the result; one
                        // that takes nothing for the stall timeout loses its count.
                        match behind.offer(&tx, Ok(running.update(None))) {
                            Ok(true) => {
                                if let Some(note) = &note {
                                    note.messages.fetch_add(1, Ordering::Relaxed);
                                }
                            }
                            Ok(false) => {}
                            Err(end) => break Some(Err(Error::from(end).into())),
                        }
                    }
                    // The client left: dropping `running` raises the cancel flag.
                    () = tx.closed() => {
                        metrics::counter!("queens_streams_client_gone_total", "grpc_method" => "CountProgress")
                            .increment(1);
                        break None;
                    }
                }
            };
            // The search is over: its slot goes back before the last word, which waits for
            // a reader that takes nothing at most the stall timeout.
            drop(running);
            if let (Some(Ok(update)), Some(note)) = (&last, &note) {
                note.solutions.store(update.solutions, Ordering::Relaxed);
            }
            if let Some(last) = last
                && let ok = last.is_ok()
                && let Ok(()) = stream::send_within(&tx, last, stall).await
                && ok
                && let Some(note) = &note
            {
                note.messages.fetch_add(1, Ordering::Relaxed);
            }
        });
        Ok(Response::new(ReceiverStream::new(rx)))
    }
}
