//! Everything between the solver and the bytes of Enumerate's responses: one pipeline from a
//! validated request to a bounded channel of encoded messages.
//!
//! [`start`] picks how the stream is produced (the one rule, [`plan`]), starts the producer's
//! workers on the shared pool and the sender as an async task, and returns the channel the
//! response is streamed from. Memory per stream is bounded (the reorder buffer's cap, a
//! message being filled, the channel's few messages) whatever the size of the result; the
//! stream ends when the client goes away, the server shuts down or the search reaches the
//! server's time limit, and the pool's threads are never held while a client is behind.
//!
//! # Layout
//! - `encode.rs`: boards written straight into response bytes ([`BoardEncoder`],
//!   [`EncodedBatch`]); the one place boards are encoded.
//! - `produce.rs`: the producer: prefix tasks run as pool slices that suspend and resume,
//!   merged in order through the reorder buffer.
//! - `send.rs`: the sender: messages of the batch size, flushing, the channel, the limit.
//! - `messages.rs`: the receiving side ([`Messages`]), where an early end's reason overtakes
//!   queued messages.
//! - `end.rs`: what may end a search early ([`End`], [`Cutoffs`]), for streams and counts.
//! - `stall.rs`: a reader that takes nothing: the stall timeout on a bounded channel.
//!
//! Not here: validating requests and mapping [`End`] to a gRPC status (the service), the
//! search itself (`crate::solver`).

mod encode;
mod end;
mod messages;
mod produce;
mod send;
mod stall;

pub use self::encode::{BoardEncoder, EncodedBatch, Form};
pub use self::end::{Cutoffs, End};
pub use self::messages::Messages;
pub use self::stall::{Behind, send_within};

use self::produce::{Producer, Production};
use self::send::Sender;
use crate::solver::{Pool, Problem};
use std::time::Duration;
use tokio::sync::{mpsc, oneshot, watch};

/// A validated Enumerate request: what to stream.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Enumeration {
    /// The question.
    pub problem: Problem,
    /// Only boards strictly after this one (`n` columns, each below `n`).
    pub start_after: Option<Vec<u8>>,
    /// At most this many boards.
    pub limit: Option<u64>,
    /// Boards per response message (within the message size cap).
    pub batch: usize,
    /// How boards are written: with rows, compact or packed.
    pub form: Form,
}

/// How the server produces and sends streams.
#[derive(Clone, Debug)]
pub struct Settings {
    /// Most pool threads one stream keeps busy at once (1: the sequential search).
    pub workers: usize,
    /// Cap on encoded bytes a parallel stream's workers hold ahead of the sender.
    pub reorder_bytes: usize,
    /// Longest a board waits in a partly filled message.
    pub flush_interval: Duration,
    /// Response messages the channel holds ahead of the client.
    pub channel_messages: usize,
    /// Longest one stream's search may run.
    pub time_limit: Duration,
    /// Longest the stream waits for its reader to take a message before it ends.
    pub stall_timeout: Duration,
}

/// Smallest `limit` a stream is produced in parallel for: the workers may encode up to the
/// reorder buffer's worth of boards past the limit (4 MiB, 230,000 compact boards of
/// n = 14), which is waste next to a small page but noise next to 65,536 boards and more.
const PARALLEL_MIN_LIMIT: u64 = 1 << 16;

/// Encoded bytes a sequential stream's producer runs ahead of its sender: two default
/// messages, so the search never waits for the sender to cut a message and the channel
/// (a few messages) carries the rest.
const SEQUENTIAL_BYTES: usize = 2 * crate::config::DEFAULT_BATCH_BYTES;

/// How one stream is produced.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Plan {
    /// Prefix length of the tasks (0: one task, the whole search).
    pub depth: usize,
    /// Most pool threads the stream keeps busy at once.
    pub workers: usize,
    /// Cap on encoded bytes produced ahead of the sender.
    pub cap: usize,
}

/// The one rule: a stream is produced in parallel, on prefix tasks of [`task_depth`], when
/// the server lets a stream use several threads, the request asks for the whole search (a
/// shard's numbering would have to be redone by every task), no `limit` below
/// `PARALLEL_MIN_LIMIT` (a small page would waste the workers' speculative boards), and
/// the board is big enough to split; otherwise by one sequential task.
pub fn plan(job: &Enumeration, settings: &Settings) -> Plan {
    let big = job.limit.is_none_or(|l| l >= PARALLEL_MIN_LIMIT);
    let whole = job.problem.shard().parts() == 1;
    match task_depth(job.problem.n()) {
        Some(depth) if big && whole && settings.workers > 1 => Plan {
            depth,
            workers: settings.workers,
            cap: settings.reorder_bytes,
        },
        _ => Plan {
            depth: 0,
            workers: 1,
            cap: SEQUENTIAL_BYTES,
        },
    }
}

/// The prefix depth of parallel tasks for board size `n`: enough tasks (hundreds to
/// thousands) that each holds a small part of the output and every worker stays busy;
/// `None` when the board is too small to be worth splitting.
pub fn task_depth(n: u32) -> Option<usize> {
    match n {
        0..=7 => None,
        8..=16 => Some(3),
        _ => Some(4),
    }
}

/// Bytes a stream of `job` holds at most, whatever the size of its result: what its
/// producer may run ahead ([`Plan::cap`]), a chunk being encoded per worker, the message
/// being filled, the channel's messages and one more on its way out, and its fixed state
/// (tasks, encoder, sender: well under 64 KiB). What admission reserves for it.
pub fn memory(job: &Enumeration, settings: &Settings) -> u64 {
    let plan = plan(job, settings);
    let entry = BoardEncoder::new(job.problem.n(), job.form).entry_len();
    let message = job.batch.max(1).saturating_mul(entry);
    let chunks = plan.workers * (produce::CHUNK_BYTES + entry);
    let messages = (settings.channel_messages.max(1) + 2).saturating_mul(message);
    (plan.cap + chunks + messages + 64 * 1024) as u64
}

/// Starts streaming `job` (its workers on `pool`, its sender on the runtime) and returns its
/// messages. `slot` (the stream's search slot) is held until the search ends; the stream
/// ends early when `stopping` turns true or `deadline` (the call's, from now) passes.
pub fn start<S: Send + 'static>(
    job: Enumeration,
    settings: &Settings,
    pool: &Pool,
    (stopping, deadline): (watch::Receiver<bool>, Option<Duration>),
    slot: S,
) -> Messages {
    let plan = plan(&job, settings);
    let encoder = BoardEncoder::new(job.problem.n(), job.form);
    let entry_len = encoder.entry_len();
    let packed = job.form.records();
    let front = encoder.front_coded().then(|| {
        (
            job.problem.n() as usize,
            crate::wire::front::FrontEncoder::default(),
        )
    });
    let produce = Production {
        problem: job.problem,
        start_after: job.start_after,
        depth: plan.depth,
        workers: plan.workers,
        cap: plan.cap,
        wait: settings.flush_interval / 2,
        limit: job.limit.filter(|_| plan.depth == 0),
    };
    let producer = Producer::new(produce, encoder, pool.clone());
    producer.start();
    let (tx, rx) = mpsc::channel(settings.channel_messages.max(1));
    let (end_tx, end) = oneshot::channel();
    let sender = Sender {
        producer,
        tx,
        end: end_tx,
        cutoffs: Cutoffs::start(stopping, settings.time_limit, deadline),
        entry_len,
        packed,
        front,
        per_message: job.batch.max(1),
        limit: job.limit,
        flush: settings.flush_interval,
        stall: settings.stall_timeout,
    };
    tokio::spawn(sender.run(slot));
    Messages::new(rx, end)
}

#[cfg(test)]
mod tests;
