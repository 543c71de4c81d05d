//! Time to the first Enumerate message for n = 20..32 (or the sizes given as arguments),
//! against a server started in process on 127.0.0.1:0 with the default settings.
//!
//! `cargo bench --bench first_message [-- 20 24 28 32]`
//! (`QUEENS_PRODUCE_THREADS=1` for the sequential producer). For each n it prints how
//! long the first message took from the call, how many boards it held, and its first board
//! (the lexicographically first solution); then it drops the stream, which stops the
//! search (the next call waits until that search has given back its slot). The search
//! starts at once: nothing is precomputed before sending.
//!
//! A bench rather than an example so that `cargo test` does not build it.

use queens::config::Config;
use queens::pb::EnumerateRequest;
use std::time::Instant;
use tokio::net::TcpListener;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
    let sizes: Vec<u32> = std::env::args()
        .skip(1)
        .filter_map(|a| a.parse().ok())
        .collect();
    let sizes = if sizes.is_empty() {
        (20..=32).collect()
    } else {
        sizes
    };
    let listener = TcpListener::bind("127.0.0.1:0").await?;
    let url = format!("http://{}", listener.local_addr()?);
    tokio::spawn(queens::server::run(
        listener,
        Config {
            produce_threads: std::env::var("QUEENS_PRODUCE_THREADS")
                .ok()
                .and_then(|t| t.parse().ok())
                .unwrap_or_else(queens::config::default_search_threads),
            ..Config::default()
        },
        std::future::pending(),
    ));
    println!(
        "{:>3} {:>8} {:>12} {:>8}  first board",
        "n", "form", "first msg ms", "boards"
    );
    for n in sizes {
        for compact in [true, false] {
            let request = EnumerateRequest {
                n,
                compact,
                ..Default::default()
            };
            // A fresh connection per call, as a user's client would have.
            let mut client = queens::client::connect(&url).await?;
            // The previous stream's search ends at its next poll; until then its slot is taken.
            let (started, mut stream) = loop {
                let started = Instant::now();
                match client.enumerate(request.clone()).await {
                    Ok(response) => break (started, response.into_inner()),
                    Err(s) if s.code() == tonic::Code::ResourceExhausted => {
                        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
                    }
                    Err(s) => return Err(s.into()),
                }
            };
            let first = stream.message().await?.ok_or("an empty stream")?;
            let ms = started.elapsed().as_secs_f64() * 1e3;
            let mut text = Vec::new();
            queens::render::compact(&first.boards[0].columns, &mut text);
            println!(
                "{n:>3} {:>8} {ms:>12.1} {:>8}  {}",
                if compact { "compact" } else { "rows" },
                first.boards.len(),
                String::from_utf8_lossy(&text)
            );
        }
    }
    Ok(())
}
