//! The pipeline against the sequential search, encoded: every plan, caps so tight that every
//! chunk suspends its task, streams sharing one thread, limits, batches, and a client that
//! goes away.

use super::*;
use crate::solver::{Shard, Sink, Square, enumerate};
use std::ops::ControlFlow;
use std::sync::Arc;
use std::time::Instant;
use tokio_stream::StreamExt;

/// The sequential search's boards, encoded.
struct Encode<'a>(&'a BoardEncoder, Vec<u8>);

impl Sink for Encode<'_> {
    fn push(&mut self, columns: &[u8]) -> ControlFlow<()> {
        self.0.push(columns, &mut self.1);
        ControlFlow::Continue(())
    }
}

/// The bytes a stream of `job` must carry, from the sequential search.
fn expected(job: &Enumeration) -> Vec<u8> {
    let encoder = BoardEncoder::new(job.problem.n(), job.form);
    let mut sink = Encode(&encoder, Vec::new());
    let _ = enumerate(
        &job.problem,
        job.start_after.as_deref(),
        job.limit,
        &mut sink,
    );
    sink.1
}

fn settings(workers: usize, reorder_bytes: usize) -> Settings {
    Settings {
        workers,
        reorder_bytes,
        flush_interval: Duration::from_millis(5),
        channel_messages: 2,
        time_limit: Duration::from_secs(600),
        stall_timeout: Duration::from_secs(600),
    }
}

fn job(n: u32, fixed: &[Square], fundamental: bool, after: Option<Vec<u8>>) -> Enumeration {
    Enumeration {
        problem: Problem::new(n, fixed, fundamental, Shard::WHOLE).expect("valid"),
        start_after: after,
        limit: None,
        batch: 100,
        form: Form::Compact,
    }
}

/// Every message of a stream, in order, and how it ended.
async fn drain(job: Enumeration, settings: &Settings, pool: &Pool) -> (Vec<Vec<u8>>, Option<End>) {
    let (_stop, stopping) = watch::channel(false);
    let job_packed = job.form.records();
    let (n, front) = (job.problem.n() as usize, job.form == Form::FrontCoded);
    let mut rx = start(job, settings, pool, (stopping, None), ());
    let mut messages = Vec::new();
    while let Some(item) = rx.next().await {
        match item {
            Ok(batch) => {
                assert_eq!(batch.packed, job_packed);
                assert_eq!(batch.front_coded.is_some(), front);
                // Front-coded messages are compared as the records they decode to.
                let Some(boards) = batch.front_coded else {
                    messages.push(batch.bytes);
                    continue;
                };
                let mut records = Vec::new();
                crate::wire::front::decode(n, boards as usize, &batch.bytes, &mut records)
                    .expect("the stream's own front coding decodes");
                messages.push(records);
            }
            Err(end) => return (messages, Some(end)),
        }
    }
    (messages, None)
}

#[tokio::test]
async fn every_plan_streams_exactly_the_search() {
    let square = |row, column| Square { row, column };
    let cases = vec![
        job(8, &[], false, None),
        job(9, &[], true, None),
        job(10, &[square(3, 4)], false, None),
        job(10, &[], false, Some(vec![4, 0, 9, 9, 9, 9, 9, 9, 9, 9])),
        job(10, &[], true, Some(vec![1, 3, 5, 0, 0, 0, 0, 0, 0, 0])),
        job(11, &[], false, None),
        job(8, &[square(0, 0), square(1, 1)], false, None),
    ];
    let pool = Pool::new(2);
    for base in cases {
        for form in [Form::Compact, Form::Rows, Form::Packed, Form::FrontCoded] {
            let job = Enumeration {
                form,
                ..base.clone()
            };
            let want = expected(&job);
            let entry = BoardEncoder::new(job.problem.n(), form).entry_len();
            // A one-byte cap suspends every task at every chunk: the tightest order.
            for (workers, cap) in [(2, 1), (3, 64 * 1024), (1, 1)] {
                let settings = settings(workers, cap);
                let (messages, end) = drain(job.clone(), &settings, &pool).await;
                assert_eq!(end, None);
                assert!(messages.iter().all(|m| m.len() <= job.batch * entry));
                assert!(
                    messages.concat() == want,
                    "{job:?} workers={workers} cap={cap}"
                );
                // A limit cuts the same stream at that many boards.
                let limit = (want.len() / entry / 3) as u64;
                let cut = Enumeration {
                    limit: Some(limit),
                    ..job.clone()
                };
                let (messages, _) = drain(cut, &settings, &pool).await;
                assert!(messages.concat() == want[..limit as usize * entry]);
            }
        }
    }
}

/// A job that queues itself again forever (until `stop`), so the pool always has a job
/// waiting and every stream slice gives way after its time: streams suspend at polls, not
/// only at full buffers.
fn keep_busy(pool: &Pool, stop: Arc<std::sync::atomic::AtomicBool>) {
    let again = pool.clone();
    pool.spawn(move || {
        if !stop.load(std::sync::atomic::Ordering::Relaxed) {
            std::thread::sleep(Duration::from_micros(200));
            keep_busy(&again, stop);
        }
    });
}

#[tokio::test]
async fn streams_that_give_way_at_polls_lose_nothing() {
    let pool = Pool::new(1);
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    keep_busy(&pool, stop.clone());
    // Sparse streams: long searches between boards, so slices end at polls.
    let square = |row, column| Square { row, column };
    let jobs = [
        job(14, &[square(0, 6), square(13, 2)], false, None),
        job(13, &[], true, None),
        job(
            13,
            &[],
            false,
            Some(vec![6, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]),
        ),
    ];
    for workers in [1, 2] {
        let settings = settings(workers, 1 << 20);
        let streams = jobs.iter().map(|j| {
            let (job, settings, pool) = (j.clone(), settings.clone(), pool.clone());
            async move { drain(job, &settings, &pool).await }
        });
        let results = futures_join(streams).await;
        for (job, (messages, end)) in jobs.iter().zip(results) {
            assert_eq!(end, None);
            assert!(
                messages.concat() == expected(job),
                "{job:?}, {workers} workers"
            );
        }
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
}

/// Runs futures at once, returning their outputs in order.
async fn futures_join<F>(futures: impl Iterator<Item = F>) -> Vec<F::Output>
where
    F: std::future::Future + Send + 'static,
    F::Output: Send + 'static,
{
    let handles: Vec<_> = futures.map(tokio::spawn).collect();
    let mut out = Vec::new();
    for h in handles {
        out.push(h.await.expect("no panic"));
    }
    out
}

/// A stream of an n-board on two workers (the call's `deadline` if given) whose slot is
/// watched: its messages, the slot, and the switch that shuts the server down.
fn watched(
    n: u32,
    settings: &Settings,
    deadline: Option<Duration>,
) -> (Messages, Arc<()>, watch::Sender<bool>) {
    let pool = Pool::new(2);
    let slot = Arc::new(());
    let (stop, stopping) = watch::channel(false);
    let rx = start(
        job(n, &[], false, None),
        settings,
        &pool,
        (stopping, deadline),
        slot.clone(),
    );
    (rx, slot, stop)
}

/// Waits until the stream has given `slot` back, failing after 5 s.
async fn given_back(slot: &Arc<()>, what: &str) {
    let deadline = Instant::now() + Duration::from_secs(5);
    while Arc::strong_count(slot) > 1 {
        assert!(Instant::now() < deadline, "{what} kept its slot");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// The last item of a stream, read to its end.
async fn last_item(rx: &mut Messages) -> Option<Result<EncodedBatch, End>> {
    let mut last = None;
    while let Some(item) = rx.next().await {
        last = Some(item);
    }
    last
}

#[tokio::test]
async fn a_client_that_goes_away_gives_back_the_slot() {
    let (mut rx, slot, _stop) = watched(16, &settings(2, 1 << 20), None);
    assert!(rx.next().await.is_some());
    drop(rx);
    given_back(&slot, "the stream").await;
}

#[tokio::test]
async fn shutdown_ends_a_stream_with_its_reason() {
    let (mut rx, _slot, stop) = watched(16, &settings(2, 1 << 20), None);
    assert!(matches!(rx.next().await, Some(Ok(_))));
    stop.send(true).expect("a receiver");
    // A reader too slow to take the queued messages first still hears why the stream ended.
    tokio::time::sleep(Duration::from_millis(200)).await;
    let last = last_item(&mut rx).await;
    assert!(matches!(last, Some(Err(End::ShuttingDown))), "{last:?}");
}

#[tokio::test]
async fn the_calls_deadline_ends_a_stream_and_frees_its_slot() {
    let (mut rx, slot, _stop) =
        watched(18, &settings(2, 1 << 20), Some(Duration::from_millis(300)));
    let began = Instant::now();
    // A reader that keeps reading: the deadline, not the reader, ends the stream.
    let last = last_item(&mut rx).await;
    assert!(matches!(last, Some(Err(End::Deadline))), "{last:?}");
    assert!(began.elapsed() < Duration::from_secs(5));
    assert_eq!(Arc::strong_count(&slot), 1, "the slot is given back");
}

#[tokio::test]
async fn a_reader_that_takes_nothing_ends_the_stream_and_frees_its_slot() {
    let settings = Settings {
        stall_timeout: Duration::from_millis(300),
        ..settings(2, 1 << 20)
    };
    let (mut rx, slot, _stop) = watched(16, &settings, None);
    assert!(matches!(rx.next().await, Some(Ok(_))));
    // Never read again: the slot must come back within the stall timeout and a little.
    given_back(&slot, "a stalled stream").await;
    let last = last_item(&mut rx).await;
    assert!(matches!(last, Some(Err(End::Stalled { .. }))), "{last:?}");
}
