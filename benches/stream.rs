//! Enumerate throughput over loopback, against the bare search in the same run.
//!
//! Starts a server in process on 127.0.0.1:0, drains Enumerate streams to the end with a
//! Rust client, and compares boards/s with the baseline: the same search, single-threaded,
//! into a counting sink, in process. Every drained count is checked against the baseline's.
//! `cargo bench --bench stream` (all cases) or `cargo bench --bench stream -- 12` (one n,
//! as CI's smoke run does). No timing is asserted; the ratios are the result.

use queens::config::Config;
use queens::pb::EnumerateRequest;
use queens::solver::{self, Problem, Shard, Sink};
use std::ops::ControlFlow;
use std::time::Instant;
use tokio::net::TcpListener;

/// Counts boards.
struct Counter(u64);

impl Sink for Counter {
    fn push(&mut self, _: &[u8]) -> ControlFlow<()> {
        self.0 += 1;
        ControlFlow::Continue(())
    }
}

/// Boards and seconds of the bare single-threaded search.
fn baseline(n: u32) -> (u64, f64) {
    let problem = Problem::new(n, &[], false, Shard::WHOLE).expect("valid n");
    let mut counter = Counter(0);
    let started = Instant::now();
    let _ = solver::enumerate(&problem, None, None, &mut counter);
    (counter.0, started.elapsed().as_secs_f64())
}

/// Boards and seconds of one Enumerate stream drained by a tonic client.
async fn drain(url: &str, n: u32, compact: bool) -> (u64, f64) {
    let mut client = queens::client::connect(url).await.expect("connect");
    let started = Instant::now();
    let mut stream = client
        .enumerate(EnumerateRequest {
            n,
            compact,
            ..Default::default()
        })
        .await
        .expect("call")
        .into_inner();
    let mut boards = 0u64;
    while let Some(message) = stream.message().await.expect("stream") {
        boards += message.boards.len() as u64;
    }
    (boards, started.elapsed().as_secs_f64())
}

fn main() {
    let wanted: Option<u32> = std::env::args().skip(1).find_map(|a| a.parse().ok());
    let cases: Vec<(u32, bool)> = match wanted {
        Some(n) => vec![(n, true), (n, false)],
        None => vec![(14, true), (16, true), (14, false)],
    };
    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    let url = runtime.block_on(async {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let url = format!("http://{}", listener.local_addr().expect("addr"));
        tokio::spawn(queens::server::run(
            listener,
            Config::default(),
            std::future::pending(),
        ));
        url
    });
    println!(
        "{:>3} {:>8} {:>12} {:>14} {:>14} {:>7}",
        "n", "form", "boards", "bare boards/s", "stream boards/s", "ratio"
    );
    for (n, compact) in cases {
        let (expected, bare_s) = baseline(n);
        let (boards, stream_s) = runtime.block_on(drain(&url, n, compact));
        assert_eq!(boards, expected, "n={n}: the stream lost or added boards");
        let bare = expected as f64 / bare_s;
        let streamed = boards as f64 / stream_s;
        println!(
            "{n:>3} {:>8} {boards:>12} {bare:>14.0} {streamed:>14.0} {:>7.2}",
            if compact { "compact" } else { "rows" },
            streamed / bare
        );
    }
}
