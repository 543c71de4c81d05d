//! The producing side of one stream: the search's prefix tasks run as slices on the shared
//! pool, each encoding its boards into chunks, merged back into lexicographic order through a
//! bounded reorder buffer.
//!
//! Workers take tasks in order and publish their encoded boards to the task's output; the
//! sender (`send.rs`) takes the head task's chunks as they come, then the next task's. No
//! worker ever waits: once the buffer holds its cap, a worker publishes what it has and
//! suspends its task at the last board it pushed, and the task is resumed from there (a
//! resume point, like a client's `start_after`) when the sender has made room. The head task
//! may always run while its output is empty, so the stream never stalls. A worker that has had
//! its slice while other jobs wait suspends the same way, at the node it is about to search,
//! and queues itself behind them. So memory stays at the cap plus a chunk per worker,
//! whatever the size of the result or the speed of the client, and the pool's threads are
//! never held by a stream that cannot send.

use super::encode::BoardEncoder;
use crate::solver::pool::{Pool, SLICE};
use crate::solver::{Problem, Sink, Tasks, enumerate_under};
use std::collections::{BTreeMap, VecDeque};
use std::ops::ControlFlow;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};
use tokio::sync::Notify;

/// Bytes a worker encodes before publishing them: big enough to make the lock rare (hundreds
/// of boards), small enough that the head's boards reach the sender without delay.
pub(super) const CHUNK_BYTES: usize = 16 * 1024;

/// What one stream produces and how.
pub(super) struct Production {
    /// The question.
    pub(super) problem: Problem,
    /// Boards up to this one are not wanted.
    pub(super) start_after: Option<Vec<u8>>,
    /// Prefix length of the tasks (0: one task, the whole search).
    pub(super) depth: usize,
    /// Most slices of this stream on the pool at once.
    pub(super) workers: usize,
    /// Cap on encoded bytes published and not yet taken by the sender.
    pub(super) cap: usize,
    /// Longest a worker holds encoded boards before publishing them.
    pub(super) wait: Duration,
    /// With one task: boards it produces at most (the request's limit), so the search stops
    /// there. With several, the sender cuts the stream.
    pub(super) limit: Option<u64>,
}

/// One stream's producer, shared by its workers and its sender.
pub(super) struct Producer {
    production: Production,
    tasks: Tasks,
    encoder: BoardEncoder,
    pool: Pool,
    state: Mutex<State>,
    /// Raised when the stream ends, for whatever reason: workers stop at their next poll.
    stop: AtomicBool,
    /// Woken when the head task publishes or ends, or the producer fails.
    pub(super) wake: Notify,
}

/// The reorder buffer and the task queue.
#[derive(Default)]
struct State {
    /// Started tasks not yet fully taken, by number.
    outputs: BTreeMap<u64, TaskOutput>,
    /// The task whose bytes the sender takes now.
    head: u64,
    /// Bytes in all outputs.
    buffered: usize,
    /// The first task number not yet started.
    next: u64,
    /// Started tasks waiting to be resumed, with the resume point of each.
    suspended: BTreeMap<u64, Vec<u8>>,
    /// Slices of this stream queued or running on the pool.
    running: usize,
    /// A worker panicked: the stream ends with an error.
    failed: bool,
}

/// One task's published, not yet taken, bytes.
#[derive(Default)]
struct TaskOutput {
    chunks: VecDeque<Vec<u8>>,
    /// Boards the task has published so far (for the one-task limit).
    boards: u64,
    done: bool,
}

/// What the sender finds at the head of the stream.
pub(super) enum Take {
    /// The next encoded boards, in order.
    Bytes(Vec<u8>),
    /// Nothing yet: wait for [`Producer::wake`].
    Empty,
    /// Every task is done and taken.
    Done,
    /// A worker failed.
    Failed,
}

/// How a task's run ended.
enum Run {
    /// Its search ended.
    Finished,
    /// It stopped at this resume point (boards strictly after it are still to come).
    Suspended(Vec<u8>),
    /// The stream stopped.
    Stopped,
}

impl Producer {
    /// A producer for `production` whose workers run on `pool`, not yet started.
    pub(super) fn new(production: Production, encoder: BoardEncoder, pool: Pool) -> Arc<Producer> {
        let tasks = Tasks::new(
            production.problem.n(),
            production.depth,
            production.start_after.as_deref(),
        );
        let head = tasks.next_wanted(0);
        Arc::new(Producer {
            production,
            tasks,
            encoder,
            pool,
            state: Mutex::new(State {
                head,
                next: head,
                ..State::default()
            }),
            stop: AtomicBool::new(false),
            wake: Notify::new(),
        })
    }

    /// Starts the first workers.
    pub(super) fn start(self: &Arc<Self>) {
        let mut state = self.lock();
        self.schedule(&mut state);
    }

    /// Ends the stream's production: workers stop at their next poll.
    pub(super) fn stop(&self) {
        self.stop.store(true, Ordering::Relaxed);
    }

    fn stopped(&self) -> bool {
        self.stop.load(Ordering::Relaxed)
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // A poisoned lock means a worker panicked mid-update; `failed` ends the stream.
        crate::sync::lock(&self.state)
    }

    /// Takes the head task's next chunk, moving the head on past finished tasks.
    pub(super) fn take(self: &Arc<Self>) -> Take {
        let mut state = self.lock();
        let taken = loop {
            if state.failed {
                return Take::Failed;
            }
            let head = state.head;
            if head >= self.tasks.total() {
                return Take::Done;
            }
            let Some(output) = state.outputs.get_mut(&head) else {
                break Take::Empty;
            };
            if let Some(chunk) = output.chunks.pop_front() {
                state.buffered -= chunk.len();
                break Take::Bytes(chunk);
            }
            if !output.done {
                break Take::Empty;
            }
            state.outputs.remove(&head);
            state.head = self.tasks.next_wanted(head + 1);
        };
        self.schedule(&mut state);
        taken
    }

    /// Whether the head task is waiting to be resumed while the sender has none of its bytes.
    fn head_starved(&self, state: &State) -> bool {
        state.suspended.contains_key(&state.head)
            && state
                .outputs
                .get(&state.head)
                .is_none_or(|s| s.chunks.is_empty())
    }

    /// Whether a worker would find a task to run.
    fn runnable(&self, state: &mut State) -> bool {
        if self.head_starved(state) {
            return true;
        }
        state.next = self.tasks.next_wanted(state.next);
        state.buffered < self.production.cap
            && (!state.suspended.is_empty() || state.next < self.tasks.total())
    }

    /// Queues workers on the pool while tasks are runnable and the stream has fewer than its
    /// workers.
    fn schedule(self: &Arc<Self>, state: &mut State) {
        while !self.stopped() && state.running < self.production.workers && self.runnable(state) {
            state.running += 1;
            let me = self.clone();
            self.pool.spawn(move || me.work());
        }
    }

    /// The task a worker runs next, with its resume point: the head when it starves, else
    /// (while the buffer has room) the first suspended task, else the next new one.
    fn pick(&self, state: &mut State) -> Option<(u64, Option<Vec<u8>>)> {
        if self.head_starved(state) {
            let head = state.head;
            return state.suspended.remove(&head).map(|at| (head, Some(at)));
        }
        if state.buffered >= self.production.cap {
            return None;
        }
        if let Some((task, at)) = state.suspended.pop_first() {
            return Some((task, Some(at)));
        }
        let task = self.tasks.next_wanted(state.next);
        if task >= self.tasks.total() {
            return None;
        }
        state.next = task + 1;
        state.outputs.insert(task, TaskOutput::default());
        Some((task, None))
    }

    /// A worker's slice: runs tasks until none is runnable, one is suspended, or the slice
    /// is over while other jobs wait.
    fn work(self: Arc<Self>) {
        let guard = Worker(&self);
        let until = Instant::now() + SLICE;
        while !self.stopped() {
            let Some((task, at)) = self.pick(&mut self.lock()) else {
                break;
            };
            match self.run(task, at, until) {
                Run::Finished => {
                    let mut state = self.lock();
                    if let Some(output) = state.outputs.get_mut(&task) {
                        output.done = true;
                    }
                    drop(state);
                    self.wake.notify_one();
                }
                Run::Suspended(at) => {
                    self.lock().suspended.insert(task, at);
                    break;
                }
                Run::Stopped => break,
            }
            if Instant::now() >= until && self.pool.waiting() > 0 {
                break;
            }
        }
        drop(guard);
        let mut state = self.lock();
        state.running -= 1;
        self.schedule(&mut state);
    }

    /// Runs task `task` from the resume point `at` (else from the stream's start).
    fn run(&self, task: u64, at: Option<Vec<u8>>, until: Instant) -> Run {
        let prefix = self.tasks.prefix(task);
        let bound = at.or_else(|| self.production.start_after.clone());
        let boards = self.lock().outputs.get(&task).map_or(0, |s| s.boards);
        let mut sink = TaskSink {
            producer: self,
            task,
            chunk: Vec::with_capacity(CHUNK_BYTES + self.encoder.entry_len()),
            // A task's first boards are published at its first poll: the stream's first
            // message never waits for a chunk to fill.
            published: Instant::now()
                .checked_sub(self.production.wait)
                .unwrap_or_else(Instant::now),
            until,
            from: bound.clone(),
            left: self.production.limit.map(|l| l.saturating_sub(boards)),
            pushed: 0,
            end: None,
        };
        if sink.left == Some(0) {
            return Run::Finished;
        }
        let flow = enumerate_under(
            &self.production.problem,
            &prefix,
            bound.as_deref(),
            &mut sink,
        );
        let end = sink.end.take();
        if sink.publish().is_break() {
            return Run::Stopped;
        }
        match (flow, end) {
            (ControlFlow::Continue(()), _) | (_, Some(Run::Finished)) => Run::Finished,
            (ControlFlow::Break(()), Some(end)) => end,
            (ControlFlow::Break(()), None) => Run::Stopped,
        }
    }
}

/// Marks the stream failed when a worker's slice unwinds (a bug in the search).
struct Worker<'a>(&'a Producer);

impl Drop for Worker<'_> {
    fn drop(&mut self) {
        if std::thread::panicking() {
            let mut state = self.0.lock();
            state.failed = true;
            state.running -= 1;
            drop(state);
            self.0.wake.notify_one();
        }
    }
}

/// Encodes one task's boards and publishes them to its output in chunks.
struct TaskSink<'a> {
    producer: &'a Producer,
    task: u64,
    chunk: Vec<u8>,
    published: Instant,
    /// When the slice is over.
    until: Instant,
    /// The resume point this run started from.
    from: Option<Vec<u8>>,
    /// Boards the task may still push (the one-task limit).
    left: Option<u64>,
    /// Boards pushed into `chunk`.
    pushed: u64,
    /// Why the sink stopped the search, when it did.
    end: Option<Run>,
}

impl TaskSink<'_> {
    /// Moves the chunk into the task's output; `Break` when the stream stopped.
    fn publish(&mut self) -> ControlFlow<()> {
        let producer = self.producer;
        if producer.stopped() {
            return ControlFlow::Break(());
        }
        self.published = Instant::now();
        if self.chunk.is_empty() {
            return ControlFlow::Continue(());
        }
        let chunk = std::mem::replace(
            &mut self.chunk,
            Vec::with_capacity(CHUNK_BYTES + producer.encoder.entry_len()),
        );
        let mut state = producer.lock();
        state.buffered += chunk.len();
        let head = state.head == self.task;
        let output = state.outputs.entry(self.task).or_default();
        output.boards += std::mem::take(&mut self.pushed);
        output.chunks.push_back(chunk);
        drop(state);
        if head {
            producer.wake.notify_one();
        }
        ControlFlow::Continue(())
    }

    /// Stops the search, to resume after `at`.
    fn suspend(&mut self, at: Vec<u8>) -> ControlFlow<()> {
        self.end = Some(Run::Suspended(at));
        ControlFlow::Break(())
    }
}

impl Sink for TaskSink<'_> {
    fn push(&mut self, columns: &[u8]) -> ControlFlow<()> {
        self.producer.encoder.push(columns, &mut self.chunk);
        self.pushed += 1;
        if let Some(left) = &mut self.left {
            *left -= 1;
            if *left == 0 {
                self.end = Some(Run::Finished);
                return ControlFlow::Break(());
            }
        }
        if self.chunk.len() < CHUNK_BYTES {
            return ControlFlow::Continue(());
        }
        self.publish()?;
        if self.producer.lock().buffered >= self.producer.production.cap {
            return self.suspend(columns.to_vec());
        }
        ControlFlow::Continue(())
    }

    fn poll(&mut self, at: &[u8]) -> ControlFlow<()> {
        let producer = self.producer;
        if producer.stopped() {
            return ControlFlow::Break(());
        }
        if !self.chunk.is_empty() && self.published.elapsed() >= producer.production.wait {
            self.publish()?;
        }
        // Every board before `at`'s subtree is pushed, so the search resumes from the least
        // vector under `at` (or from where this run started, when that is later: `at` is then
        // on the way down to it); with two rows or more left that vector is no solution (two
        // queens in column 0), so "strictly after" it loses nothing.
        let n = producer.production.problem.n() as usize;
        if at.len() + 2 <= n && Instant::now() >= self.until && producer.pool.waiting() > 0 {
            let mut resume = at.to_vec();
            resume.resize(n, 0);
            if let Some(from) = self.from.as_ref().filter(|from| **from > resume) {
                resume = from.clone();
            }
            return self.suspend(resume);
        }
        ControlFlow::Continue(())
    }
}
