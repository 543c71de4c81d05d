//! Parallel production of one Enumerate stream: the search split into prefix tasks that
//! worker threads run and encode, merged back into lexicographic order through a bounded
//! reorder buffer.
//!
//! Task `i` is the `i`-th column prefix of a fixed depth in lexicographic order (the digits
//! of `i` in base `n`); workers claim tasks in that order, and the merger hands the head
//! task's bytes to the consumer as they come, then the next task's. A worker ahead of the
//! head may buffer its encoded boards only while the whole buffer is under its byte cap; the
//! head task may always publish one chunk, so the stream never stalls and memory stays at
//! the cap plus a chunk per worker, whatever the size of the result or the speed of the
//! client. What a consumer does with the bytes (batching, sending) lives in `service.rs`;
//! the encoding in `wire.rs`; the search in `solver`.

use crate::solver::{self, Problem, Sink};
use crate::wire::BoardEncoder;
use std::collections::{BTreeMap, VecDeque};
use std::ops::ControlFlow;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// Bytes a worker encodes before publishing them: big enough to make the lock rare (hundreds
/// of boards), small enough that the head's boards reach the consumer without delay.
const CHUNK_BYTES: usize = 16 * 1024;

/// Takes the merged stream's bytes: whole board entries, in order.
pub trait Consumer {
    /// Takes the next entries; `Break` ends the stream.
    fn take(&mut self, entries: &[u8]) -> ControlFlow<()>;
    /// Called when no bytes came for `wait` (or a worker stalls): a chance to flush a partial
    /// message or notice the client is gone.
    fn idle(&mut self) -> ControlFlow<()>;
}

/// How one stream is produced.
#[derive(Clone, Copy, Debug)]
pub struct Plan {
    /// Worker threads.
    pub threads: usize,
    /// Cap on encoded bytes buffered by the workers (the reorder buffer).
    pub buffer_bytes: usize,
    /// Longest a worker holds found boards before publishing them, and the merger's idle tick.
    pub wait: Duration,
}

/// The prefix depth of the tasks for board size `n`: enough tasks (hundreds to thousands)
/// that each holds a small part of the output and the two workers stay busy; `None` when the
/// board is too small to be worth splitting.
pub fn task_depth(n: u32) -> Option<usize> {
    match n {
        0..=7 => None,
        8..=16 => Some(3),
        _ => Some(4),
    }
}

/// Pushes the boards of `problem` after `start_after` into `consumer` as encoded entries, in
/// lexicographic order, at most `limit` of them (if given), produced by `plan.threads`
/// workers on prefix tasks of length `depth`. Returns `Break` when the consumer stopped the
/// stream.
pub fn produce<C: Consumer>(
    problem: &Problem,
    start_after: Option<&[u8]>,
    limit: Option<u64>,
    depth: usize,
    encoder: &BoardEncoder,
    plan: Plan,
    consumer: &mut C,
) -> ControlFlow<()> {
    let tasks = Tasks::new(problem.n(), depth, start_after);
    let shared = Shared {
        state: Mutex::new(State {
            slots: BTreeMap::new(),
            head: tasks.next_wanted(0),
            buffered: 0,
        }),
        changed: Condvar::new(),
        stop: AtomicBool::new(false),
        next: AtomicU64::new(0),
        cap: plan.buffer_bytes,
        wait: plan.wait,
    };
    std::thread::scope(|scope| {
        for _ in 0..plan.threads.max(1) {
            scope.spawn(|| work(problem, start_after, &tasks, encoder, &shared));
        }
        let out = Output {
            entry_len: encoder.entry_len(),
            remaining: limit.unwrap_or(u64::MAX),
        };
        let flow = merge(&tasks, &shared, out, consumer);
        shared.stop.store(true, Ordering::Relaxed);
        shared.changed.notify_all();
        flow
    })
}

/// The task space: prefixes of length `depth` over `n` columns, numbered lexicographically.
struct Tasks {
    n: u64,
    depth: usize,
    total: u64,
    /// Prefixes before this one are wholly at or before `start_after`: skipped.
    first: Vec<u8>,
}

impl Tasks {
    fn new(n: u32, depth: usize, start_after: Option<&[u8]>) -> Tasks {
        Tasks {
            n: u64::from(n),
            depth,
            total: u64::from(n).pow(depth as u32),
            first: start_after.map_or_else(Vec::new, |a| a[..depth].to_vec()),
        }
    }

    /// The prefix of task `i`.
    fn prefix(&self, mut i: u64) -> Vec<u8> {
        let mut prefix = vec![0u8; self.depth];
        for slot in prefix.iter_mut().rev() {
            *slot = (i % self.n) as u8;
            i /= self.n;
        }
        prefix
    }

    /// Whether task `i` can hold boards: its queens do not attack each other and it is not
    /// before the resume point.
    fn wanted(&self, i: u64) -> bool {
        let p = self.prefix(i);
        if p < self.first {
            return false;
        }
        (0..p.len()).all(|r| {
            (0..r).all(|s| {
                let (a, b) = (i64::from(p[r]), i64::from(p[s]));
                a != b && (a - b).abs() != (r - s) as i64
            })
        })
    }

    /// The first wanted task at or after `i` (`total` when none is left).
    fn next_wanted(&self, mut i: u64) -> u64 {
        while i < self.total && !self.wanted(i) {
            i += 1;
        }
        i
    }
}

/// State shared by the workers and the merger.
struct Shared {
    state: Mutex<State>,
    /// Signalled whenever a slot gains bytes or ends, the head moves, or bytes are freed.
    changed: Condvar,
    /// Raised when the stream ends, for whatever reason: workers stop at their next poll.
    stop: AtomicBool,
    /// Tasks claimed so far.
    next: AtomicU64,
    cap: usize,
    wait: Duration,
}

/// The reorder buffer.
struct State {
    /// Started tasks not yet fully handed on, by number.
    slots: BTreeMap<u64, Slot>,
    /// The task whose bytes the consumer takes now.
    head: u64,
    /// Bytes in all slots.
    buffered: usize,
}

/// One task's published, not yet consumed, bytes.
#[derive(Default)]
struct Slot {
    chunks: VecDeque<Vec<u8>>,
    done: bool,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        // A poisoned lock means a worker panicked; the state is still consistent enough to
        // end the stream.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Claims the next wanted task, if any is left.
    fn claim(&self, tasks: &Tasks) -> Option<u64> {
        loop {
            let i = self.next.fetch_add(1, Ordering::Relaxed);
            if i >= tasks.total || self.stop.load(Ordering::Relaxed) {
                return None;
            }
            if tasks.wanted(i) {
                return Some(i);
            }
        }
    }
}

/// A worker: claims tasks until none is left or the stream stops.
fn work(
    problem: &Problem,
    start_after: Option<&[u8]>,
    tasks: &Tasks,
    encoder: &BoardEncoder,
    shared: &Shared,
) {
    while let Some(task) = shared.claim(tasks) {
        shared.lock().slots.insert(task, Slot::default());
        let mut sink = TaskSink {
            shared,
            encoder,
            task,
            chunk: Vec::with_capacity(CHUNK_BYTES + encoder.entry_len()),
            // A task's first boards are published at its first poll: the stream's first
            // message never waits for a chunk to fill.
            published: Instant::now()
                .checked_sub(shared.wait)
                .unwrap_or_else(Instant::now),
        };
        let flow = solver::enumerate_under(problem, &tasks.prefix(task), start_after, &mut sink);
        if flow.is_break() || sink.publish(true).is_break() {
            return;
        }
    }
}

/// Encodes one task's boards and publishes them to its slot in chunks.
struct TaskSink<'a> {
    shared: &'a Shared,
    encoder: &'a BoardEncoder,
    task: u64,
    chunk: Vec<u8>,
    published: Instant,
}

impl TaskSink<'_> {
    /// Moves the chunk into the task's slot (ending it when `done`), waiting while the buffer
    /// is full unless this is the head task with nothing left unconsumed.
    fn publish(&mut self, done: bool) -> ControlFlow<()> {
        let shared = self.shared;
        let mut state = shared.lock();
        loop {
            if shared.stop.load(Ordering::Relaxed) {
                return ControlFlow::Break(());
            }
            let head_ready = state.head == self.task
                && state
                    .slots
                    .get(&self.task)
                    .is_some_and(|s| s.chunks.is_empty());
            if head_ready || state.buffered + self.chunk.len() <= shared.cap {
                break;
            }
            state = shared
                .changed
                .wait_timeout(state, shared.wait)
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
        let chunk = std::mem::replace(
            &mut self.chunk,
            Vec::with_capacity(CHUNK_BYTES + self.encoder.entry_len()),
        );
        state.buffered += chunk.len();
        let slot = state.slots.entry(self.task).or_default();
        if !chunk.is_empty() {
            slot.chunks.push_back(chunk);
        }
        slot.done |= done;
        drop(state);
        shared.changed.notify_all();
        self.published = Instant::now();
        ControlFlow::Continue(())
    }
}

impl Sink for TaskSink<'_> {
    fn push(&mut self, columns: &[u8]) -> ControlFlow<()> {
        self.encoder.push(columns, &mut self.chunk);
        if self.chunk.len() >= CHUNK_BYTES {
            return self.publish(false);
        }
        ControlFlow::Continue(())
    }

    fn poll(&mut self) -> ControlFlow<()> {
        if self.shared.stop.load(Ordering::Relaxed) {
            return ControlFlow::Break(());
        }
        if !self.chunk.is_empty() && self.published.elapsed() >= self.shared.wait {
            return self.publish(false);
        }
        ControlFlow::Continue(())
    }
}

/// What the merger still hands on.
struct Output {
    /// Bytes of one board's entry.
    entry_len: usize,
    /// Boards left before the limit.
    remaining: u64,
}

/// The merger: hands the head task's chunks to the consumer in order until every task is
/// done, the limit is reached, or the consumer stops.
fn merge<C: Consumer>(
    tasks: &Tasks,
    shared: &Shared,
    mut out: Output,
    consumer: &mut C,
) -> ControlFlow<()> {
    // When the consumer last got bytes or an idle call: other workers' publishes wake the
    // merger too, and must not postpone the idle call while the head task is quiet.
    let mut active = Instant::now();
    loop {
        let mut state = shared.lock();
        let chunk = loop {
            let head = state.head;
            if head >= tasks.total {
                return ControlFlow::Continue(());
            }
            if let Some(slot) = state.slots.get_mut(&head) {
                if let Some(chunk) = slot.chunks.pop_front() {
                    state.buffered -= chunk.len();
                    break chunk;
                }
                if slot.done {
                    state.slots.remove(&head);
                    state.head = tasks.next_wanted(head + 1);
                    shared.changed.notify_all();
                    continue;
                }
            }
            let wait = shared.wait.saturating_sub(active.elapsed());
            state = shared
                .changed
                .wait_timeout(state, wait)
                .unwrap_or_else(|e| e.into_inner())
                .0;
            if active.elapsed() >= shared.wait {
                drop(state);
                consumer.idle()?;
                active = Instant::now();
                state = shared.lock();
            }
        };
        drop(state);
        shared.changed.notify_all();
        let boards = (chunk.len() / out.entry_len) as u64;
        if boards >= out.remaining {
            let end = out.remaining as usize * out.entry_len;
            return consumer.take(&chunk[..end]);
        }
        out.remaining -= boards;
        consumer.take(&chunk)?;
        active = Instant::now();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::solver::{Shard, Square};

    /// Collects the merged bytes.
    struct Collect(Vec<u8>);

    impl Consumer for Collect {
        fn take(&mut self, entries: &[u8]) -> ControlFlow<()> {
            self.0.extend_from_slice(entries);
            ControlFlow::Continue(())
        }
        fn idle(&mut self) -> ControlFlow<()> {
            ControlFlow::Continue(())
        }
    }

    /// The sequential search's boards, encoded.
    struct Encode<'a>(&'a BoardEncoder, Vec<u8>);

    impl Sink for Encode<'_> {
        fn push(&mut self, columns: &[u8]) -> ControlFlow<()> {
            self.0.push(columns, &mut self.1);
            ControlFlow::Continue(())
        }
    }

    /// A question: n, fixed queens, fundamental, resume point.
    type Case = (u32, Vec<Square>, bool, Option<Vec<u8>>);

    #[test]
    fn parallel_output_equals_the_sequential_search() {
        let cases: Vec<Case> = vec![
            (8, vec![], false, None),
            (9, vec![], true, None),
            (10, vec![Square { row: 3, column: 4 }], false, None),
            (10, vec![], false, Some(vec![4, 0, 9, 9, 9, 9, 9, 9, 9, 9])),
            (10, vec![], true, Some(vec![1, 3, 5, 0, 0, 0, 0, 0, 0, 0])),
            (11, vec![], false, None),
            (
                8,
                vec![Square { row: 0, column: 0 }, Square { row: 1, column: 1 }],
                false,
                None,
            ),
        ];
        for (n, fixed, fundamental, after) in cases {
            let problem = Problem::new(n, &fixed, fundamental, Shard::WHOLE).unwrap();
            for compact in [true, false] {
                let encoder = BoardEncoder::new(n, compact);
                let mut expected = Encode(&encoder, Vec::new());
                let _ = solver::enumerate(&problem, after.as_deref(), None, &mut expected);
                // A one-byte cap makes every worker ahead of the head wait: the tightest order.
                for (threads, cap) in [(2, 1), (3, 64 * 1024), (1, 1)] {
                    let plan = Plan {
                        threads,
                        buffer_bytes: cap,
                        wait: Duration::from_millis(5),
                    };
                    let mut got = Collect(Vec::new());
                    let depth = task_depth(n).unwrap();
                    let after = after.as_deref();
                    let flow = produce(&problem, after, None, depth, &encoder, plan, &mut got);
                    assert!(flow.is_continue());
                    // A limit cuts the same stream at that many boards.
                    let limit = (expected.1.len() / encoder.entry_len() / 3) as u64;
                    let mut cut = Collect(Vec::new());
                    let flow = produce(
                        &problem,
                        after,
                        Some(limit),
                        depth,
                        &encoder,
                        plan,
                        &mut cut,
                    );
                    assert!(flow.is_continue());
                    assert!(cut.0 == expected.1[..limit as usize * encoder.entry_len()]);
                    assert!(
                        got.0 == expected.1,
                        "n={n} fixed={fixed:?} fundamental={fundamental} after={after:?} \
                         compact={compact} threads={threads} cap={cap}"
                    );
                }
            }
        }
    }

    #[test]
    fn a_consumer_that_stops_ends_the_workers() {
        struct StopAfter(usize);
        impl Consumer for StopAfter {
            fn take(&mut self, _: &[u8]) -> ControlFlow<()> {
                self.0 = self.0.saturating_sub(1);
                if self.0 == 0 {
                    ControlFlow::Break(())
                } else {
                    ControlFlow::Continue(())
                }
            }
            fn idle(&mut self) -> ControlFlow<()> {
                ControlFlow::Continue(())
            }
        }
        let problem = Problem::new(14, &[], false, Shard::WHOLE).unwrap();
        let plan = Plan {
            threads: 2,
            buffer_bytes: 1024,
            wait: Duration::from_millis(5),
        };
        let encoder = BoardEncoder::new(14, true);
        let flow = produce(&problem, None, None, 3, &encoder, plan, &mut StopAfter(3));
        assert!(flow.is_break());
    }
}
