//! The threads every search runs on: a fixed set of threads taking jobs from one queue, in
//! the order they were queued.
//!
//! A job is a slice of a search. A search with more to do after a slice queues its next one
//! behind the jobs already waiting, so searches that share the pool take turns and the pool's
//! threads are the whole CPU budget of the process, however many searches run. Jobs never
//! block on a consumer: a search whose output has nowhere to go ends its slice and is queued
//! again when there is room (`crate::stream`). What a slice does lives with its search
//! (`count/`, `crate::stream`); nothing here knows about boards.

use crate::sync::lock;
use std::collections::VecDeque;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::Duration;

/// How long a search runs before it lets jobs that are waiting have a turn: long enough that
/// switching costs nothing (a switch is a queue push and pop, well under a microsecond, plus
/// a lost cache), short enough that a stream behind a long count sends its next message
/// within a few of them.
pub const SLICE: Duration = Duration::from_millis(20);

/// A unit of work on the pool.
type Job = Box<dyn FnOnce() + Send + 'static>;

/// A handle on a pool of search threads; clones share the pool. The threads end once every
/// handle is gone and the queue is empty.
#[derive(Clone)]
pub struct Pool(Arc<Owner>);

impl std::fmt::Debug for Pool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "Pool {{ threads: {}, waiting: {} }}",
            self.threads(),
            self.waiting()
        )
    }
}

/// Closes the queue when the last handle goes.
struct Owner {
    shared: Arc<Shared>,
}

/// What the threads and the handles share.
struct Shared {
    queue: Mutex<Queue>,
    /// Signalled when a job is queued or the queue closes.
    ready: Condvar,
    /// Jobs queued and not yet taken (read without the lock, by searches deciding whether to
    /// give way).
    waiting: AtomicUsize,
    threads: usize,
}

/// The jobs not yet taken.
struct Queue {
    jobs: VecDeque<Job>,
    /// No handle is left: threads end when the queue is empty.
    closed: bool,
}

impl Pool {
    /// A pool of `threads` threads (at least one), named `queens-search`.
    pub fn new(threads: usize) -> Pool {
        let threads = threads.max(1);
        let shared = Arc::new(Shared {
            queue: Mutex::new(Queue {
                jobs: VecDeque::new(),
                closed: false,
            }),
            ready: Condvar::new(),
            waiting: AtomicUsize::new(0),
            threads,
        });
        for _ in 0..threads {
            let shared = shared.clone();
            std::thread::Builder::new()
                .name("queens-search".into())
                .spawn(move || work(&shared))
                .expect("the system can start a search thread");
        }
        Pool(Arc::new(Owner { shared }))
    }

    /// Number of threads.
    pub fn threads(&self) -> usize {
        self.0.shared.threads
    }

    /// Queues `job` behind the jobs already waiting.
    pub fn spawn(&self, job: impl FnOnce() + Send + 'static) {
        let shared = &self.0.shared;
        shared.lock().jobs.push_back(Box::new(job));
        shared.waiting.fetch_add(1, Ordering::Relaxed);
        shared.ready.notify_one();
    }

    /// Number of jobs queued and not yet started: a search that has had its slice gives way
    /// only when this is above zero.
    pub fn waiting(&self) -> usize {
        self.0.shared.waiting.load(Ordering::Relaxed)
    }
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, Queue> {
        // Jobs run outside the lock, so a poisoned lock only means a push or pop panicked
        // (out of memory): the queue itself is still whole.
        lock(&self.queue)
    }
}

impl Drop for Owner {
    fn drop(&mut self) {
        self.shared.lock().closed = true;
        self.shared.ready.notify_all();
    }
}

/// A pool thread: runs jobs until the queue is closed and empty. A job that panics is a bug
/// in its search, which notices through its own guards (its state is dropped while
/// unwinding); the thread goes on with the next job.
fn work(shared: &Shared) {
    loop {
        let job = {
            let mut queue = shared.lock();
            loop {
                if let Some(job) = queue.jobs.pop_front() {
                    shared.waiting.fetch_sub(1, Ordering::Relaxed);
                    break job;
                }
                if queue.closed {
                    return;
                }
                queue = shared.ready.wait(queue).unwrap_or_else(|e| e.into_inner());
            }
        };
        let _ = catch_unwind(AssertUnwindSafe(job));
    }
}

/// Starts work that reports its result through the callback it is given, and blocks the
/// calling thread until the result comes; `None` when the callback was dropped without being
/// called (the work panicked). For synchronous callers (the CLI, tests, benches), never
/// inside async code or on the pool itself.
pub fn wait<T: Send + 'static>(start: impl FnOnce(Box<dyn FnOnce(T) + Send>)) -> Option<T> {
    let (tx, rx) = std::sync::mpsc::sync_channel(1);
    start(Box::new(move |value| {
        let _ = tx.send(value);
    }));
    rx.recv().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jobs_run_in_order_on_one_thread_and_survive_a_panic() {
        let pool = Pool::new(1);
        let seen = Arc::new(Mutex::new(Vec::new()));
        for i in 0..5 {
            let seen = seen.clone();
            pool.spawn(move || {
                assert!(i != 2, "a job that panics");
                seen.lock().unwrap().push(i);
            });
        }
        let last = wait(|done| pool.spawn(move || done(())));
        assert_eq!(last, Some(()));
        assert_eq!(*seen.lock().unwrap(), vec![0, 1, 3, 4]);
        assert_eq!(pool.waiting(), 0);
    }

    #[test]
    fn a_dropped_callback_is_none() {
        let pool = Pool::new(2);
        let got: Option<u8> = wait(|done| pool.spawn(move || drop(done)));
        assert_eq!(got, None);
    }
}
