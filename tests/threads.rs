//! One CPU budget: a server pinned to 2 cores (`taskset`), `--max-searches 8`, runs 8 Counts
//! and 2 Enumerates at once, and its process never has more than the cores plus a small fixed
//! number of threads (read from `/proc/PID/status` every few milliseconds), while every answer
//! is right. A search refused with RESOURCE_EXHAUSTED (10 calls, 8 slots) is retried, as a
//! client would.

use crate::common;

use common::{A000170, A002562, ServerProcess, count_request};
use queens::pb::EnumerateRequest;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;
use tonic::Code;

/// Cores the server is pinned to.
const CORES: usize = 2;

/// Threads allowed beyond the cores' worth of search threads: the main thread, the async
/// runtime's workers (at most `CORES` here), and one spare (a blocking helper of the
/// runtime).
const FIXED: usize = 1 + CORES + 1;

/// The threads of process `pid` now.
fn threads(pid: u32) -> Option<usize> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with("Threads:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// Calls `call` until it is not refused for want of a slot.
async fn retrying<T, F: std::future::Future<Output = Result<T, tonic::Status>>>(
    mut call: impl FnMut() -> F,
) -> T {
    loop {
        match call().await {
            Ok(value) => return value,
            Err(s) if s.code() == Code::ResourceExhausted => {
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            Err(s) => panic!("call failed: {s:?}"),
        }
    }
}

#[tokio::test]
async fn ten_searches_on_two_cores_stay_within_the_thread_budget() {
    let server = ServerProcess::start_pinned("0,1", &["--max-searches", "8"]);
    let pid = server.pid();
    let url = server.url();
    let most = Arc::new(AtomicUsize::new(
        threads(pid).expect("the server's threads"),
    ));
    let done = Arc::new(AtomicBool::new(false));
    let sampler = {
        let (most, done) = (most.clone(), done.clone());
        std::thread::spawn(move || {
            while !done.load(Ordering::Relaxed) {
                if let Some(t) = threads(pid) {
                    most.fetch_max(t, Ordering::Relaxed);
                }
                std::thread::sleep(Duration::from_millis(2));
            }
        })
    };
    let mut calls = tokio::task::JoinSet::new();
    for i in 0..8u32 {
        let url = url.clone();
        calls.spawn(async move {
            let client = queens::client::connect(&url).await.expect("connect");
            let n = 13 + i % 3;
            let counts = retrying(|| {
                let mut client = client.clone();
                async move { client.count(count_request(n)).await }
            })
            .await
            .into_inner();
            assert_eq!(counts.solutions, A000170[n as usize - 1], "Count n = {n}");
            assert_eq!(counts.fundamental, Some(A002562[n as usize - 1]));
            format!("count {n}")
        });
    }
    for (n, fundamental) in [(12u32, false), (13, true)] {
        let url = url.clone();
        calls.spawn(async move {
            let client = queens::client::connect(&url).await.expect("connect");
            let request = EnumerateRequest {
                n,
                fundamental,
                compact: true,
                ..Default::default()
            };
            let mut stream = retrying(|| {
                let (mut client, request) = (client.clone(), request.clone());
                async move { client.enumerate(request).await }
            })
            .await
            .into_inner();
            let mut boards = 0u64;
            while let Some(message) = stream.message().await.expect("stream") {
                boards += message.boards.len() as u64;
            }
            let table = if fundamental { A002562 } else { A000170 };
            assert_eq!(boards, table[n as usize - 1], "Enumerate n = {n}");
            format!("enumerate {n}")
        });
    }
    let mut finished = 0;
    while let Some(result) = calls.join_next().await {
        result.expect("a call panicked");
        finished += 1;
    }
    done.store(true, Ordering::Relaxed);
    sampler.join().expect("sampler");
    assert_eq!(finished, 10);
    let most = most.load(Ordering::Relaxed);
    eprintln!("most threads at once: {most} ({CORES} cores)");
    assert!(
        most <= CORES + FIXED,
        "the server ran {most} threads at once, over {CORES} cores + {FIXED}"
    );
}
