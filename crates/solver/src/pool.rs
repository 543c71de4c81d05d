//! The threads every search runs on: at most a fixed number of jobs run at once, taken from
//! one queue in the order they were queued.
//!
//! A job is a slice of a search. A search with more to do after a slice queues its next one
//! behind the jobs already waiting, so searches that share the pool take turns and the pool's
//! threads are the whole CPU budget of the process, however many searches run. A job whose
//! work cannot be cut into slices at a convenient point (the join's tables, one of its keys:
//! up to a second each at n = 24) calls [`give_way`] where it can stop for a moment: once it
//! has had its [`SLICE`] and jobs wait, its thread queues a resume behind them and sleeps, and
//! another thread takes the next job; the job goes on where it was when its resume comes up.
//! So no job holds a core for much more than a slice on any path, and at most the pool's
//! number of jobs run at once (a thread that gives way lets another one run in its stead, so
//! the process may have more threads than that, never more running). Jobs never block on a
//! consumer: a search whose output has nowhere to go ends its slice and is queued again when
//! there is room (`crate::stream`). What a slice does lives with its search (`count/`,
//! `crate::stream`); nothing here knows about boards.

use crate::sync::lock;
use std::cell::RefCell;
use std::collections::VecDeque;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// How long a search runs before it lets jobs that are waiting have a turn: long enough that
/// switching costs nothing (a switch is a queue push and pop, well under a microsecond, plus
/// a lost cache), short enough that a stream behind a long count sends its next message
/// within a few of them.
pub const SLICE: Duration = Duration::from_millis(20);

/// A unit of work on the pool.
type Job = Box<dyn FnOnce() + Send + 'static>;

/// How long a thread beyond the pool's number, started to stand in for one that gave way,
/// waits for work before it ends: long enough that a busy pool keeps its stand-ins.
const SPARE_IDLE: Duration = Duration::from_secs(10);

/// What the queue holds: a job to start, or a job that gave way, to go on with.
enum Entry {
    /// A job not yet started.
    Job(Job),
    /// A job whose thread sleeps in [`give_way`] until its turn comes again.
    Resume(Arc<Turn>),
}

/// A thread sleeping in [`give_way`], woken when its resume comes up.
#[derive(Default)]
struct Turn {
    now: Mutex<bool>,
    come: Condvar,
}

impl Turn {
    /// Wakes the sleeping thread: it runs again, in the place of the job just taken.
    fn grant(&self) {
        *lock(&self.now) = true;
        self.come.notify_one();
    }

    /// Sleeps until [`Turn::grant`].
    fn wait(&self) {
        let mut now = lock(&self.now);
        while !*now {
            now = self.come.wait(now).unwrap_or_else(|e| e.into_inner());
        }
    }
}

thread_local! {
    /// The job running on this thread, if it is a pool thread: its pool and when its slice
    /// ends ([`give_way`]).
    static RUNNING: RefCell<Option<(Arc<Shared>, Instant)>> = const { RefCell::new(None) };
}

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
    /// Signalled when a job is queued, a job's place frees up or the queue closes.
    ready: Condvar,
    /// Entries queued and not yet taken (read without the lock, by searches deciding whether
    /// to give way).
    waiting: AtomicUsize,
    /// Most jobs running at once.
    threads: usize,
}

/// The entries not yet taken, and the threads' bookkeeping.
struct Queue {
    entries: VecDeque<Entry>,
    /// No handle is left: threads end when the queue is empty.
    closed: bool,
    /// Jobs running now (a job sleeping in [`give_way`] is not running).
    running: usize,
    /// Threads waiting for an entry.
    idle: usize,
    /// Threads in all.
    started: usize,
}

impl Pool {
    /// A pool of `threads` threads (at least one), named `queens-search`.
    pub fn new(threads: usize) -> Pool {
        let threads = threads.max(1);
        let shared = Arc::new(Shared {
            queue: Mutex::new(Queue {
                entries: VecDeque::new(),
                closed: false,
                running: 0,
                idle: 0,
                started: 0,
            }),
            ready: Condvar::new(),
            waiting: AtomicUsize::new(0),
            threads,
        });
        for _ in 0..threads {
            shared.start_thread(&mut shared.lock());
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
        shared.lock().entries.push_back(Entry::Job(Box::new(job)));
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

    /// Starts one more thread (counted in `queue`, the locked queue).
    fn start_thread(self: &Arc<Shared>, queue: &mut Queue) {
        let shared = self.clone();
        let started = std::thread::Builder::new()
            .name("queens-search".into())
            .spawn(move || work(&shared));
        // Without a new thread, the jobs wait for one of the others to end or give way.
        if started.is_ok() {
            queue.started += 1;
        }
    }

    /// Lets the queue's next entry run in the place of the job on this thread, and sleeps
    /// until this job's turn comes again.
    fn pause(self: &Arc<Shared>) {
        let turn = Arc::new(Turn::default());
        {
            let mut queue = self.lock();
            queue.entries.push_back(Entry::Resume(turn.clone()));
            self.waiting.fetch_add(1, Ordering::Relaxed);
            queue.running -= 1;
            // Every other thread may be busy with a job: one more takes the next entry.
            if queue.idle == 0 {
                self.start_thread(&mut queue);
            }
        }
        self.ready.notify_one();
        turn.wait();
    }
}

/// Gives the core to waiting jobs if the job on this thread has had its [`SLICE`] and jobs
/// wait; returns when the job's turn comes again (at once when nothing waits, or off the
/// pool). For work that cannot end its slice where it is: it calls this where it could stop
/// for a moment, every few milliseconds or more often (the call costs a few nanoseconds while
/// the slice lasts).
pub fn give_way() {
    let over = RUNNING.with_borrow(|running| match running {
        Some((shared, until)) => (shared.waiting.load(Ordering::Relaxed) > 0
            && Instant::now() >= *until)
            .then(|| shared.clone()),
        None => None,
    });
    if let Some(shared) = over {
        shared.pause();
        RUNNING.with_borrow_mut(|running| {
            if let Some((_, until)) = running {
                *until = Instant::now() + SLICE;
            }
        });
    }
}

impl Drop for Owner {
    fn drop(&mut self) {
        self.shared.lock().closed = true;
        self.shared.ready.notify_all();
    }
}

/// A pool thread: runs jobs, at most the pool's number at once over all threads, until the
/// queue is closed and empty (or, beyond the pool's number of threads, until it has waited
/// [`SPARE_IDLE`] for work). A job that panics is a bug in its search, which notices through
/// its own guards (its state is dropped while unwinding); the thread goes on with the next
/// job.
fn work(shared: &Arc<Shared>) {
    loop {
        let entry = {
            let mut queue = shared.lock();
            loop {
                if queue.running < shared.threads
                    && let Some(entry) = queue.entries.pop_front()
                {
                    shared.waiting.fetch_sub(1, Ordering::Relaxed);
                    queue.running += 1;
                    break entry;
                }
                if queue.closed && queue.entries.is_empty() {
                    queue.started -= 1;
                    return;
                }
                queue.idle += 1;
                let (next, timeout) = shared
                    .ready
                    .wait_timeout(queue, SPARE_IDLE)
                    .unwrap_or_else(|e| e.into_inner());
                queue = next;
                queue.idle -= 1;
                if timeout.timed_out() && queue.started > shared.threads {
                    queue.started -= 1;
                    return;
                }
            }
        };
        match entry {
            Entry::Job(job) => {
                RUNNING.set(Some((shared.clone(), Instant::now() + SLICE)));
                let _ = catch_unwind(AssertUnwindSafe(job));
                RUNNING.set(None);
                shared.lock().running -= 1;
                // A place is free: a thread may take the next entry.
                shared.ready.notify_one();
            }
            // The sleeping thread runs in this entry's place; this one looks for another.
            Entry::Resume(turn) => turn.grant(),
        }
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

    /// A job that gives way lets a job queued after it run while it is not finished, and
    /// never more jobs run at once than the pool's number.
    #[test]
    fn a_job_that_gives_way_lets_the_next_one_run_first() {
        let pool = Pool::new(1);
        let (running, most) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
        let enter = {
            let (running, most) = (running.clone(), most.clone());
            move || {
                let now = running.fetch_add(1, Ordering::SeqCst) + 1;
                most.fetch_max(now, Ordering::SeqCst);
            }
        };
        let others_done = Arc::new(AtomicUsize::new(0));
        let (long, long_done) = {
            let (enter, running, others_done) =
                (enter.clone(), running.clone(), others_done.clone());
            let (tx, rx) = std::sync::mpsc::channel();
            pool.spawn(move || {
                enter();
                // Gives way until the three jobs queued behind it have run (or ten seconds,
                // which only a broken pool reaches).
                let end = Instant::now() + Duration::from_secs(10);
                while others_done.load(Ordering::SeqCst) < 3 && Instant::now() < end {
                    running.fetch_sub(1, Ordering::SeqCst);
                    give_way();
                    enter();
                }
                running.fetch_sub(1, Ordering::SeqCst);
                let _ = tx.send(others_done.load(Ordering::SeqCst));
            });
            (pool.clone(), rx)
        };
        for _ in 0..3 {
            let (enter, running, others_done) =
                (enter.clone(), running.clone(), others_done.clone());
            long.spawn(move || {
                enter();
                others_done.fetch_add(1, Ordering::SeqCst);
                running.fetch_sub(1, Ordering::SeqCst);
            });
        }
        assert_eq!(
            long_done.recv().unwrap(),
            3,
            "the later jobs ran before it ended"
        );
        assert_eq!(
            most.load(Ordering::SeqCst),
            1,
            "one job at a time on a pool of one"
        );
        // Off the pool, giving way returns at once.
        give_way();
    }

    #[test]
    fn a_dropped_callback_is_none() {
        let pool = Pool::new(2);
        let got: Option<u8> = wait(|done| pool.spawn(move || drop(done)));
        assert_eq!(got, None);
    }
}
