//! One Enumerate stream over a long link: the delaying proxy of the tests
//! (`tests/common/delay.rs`) paced to 1 Gbit/s, at no delay and at a 100 ms round trip, drained
//! by the Rust client as it connects today (adaptive HTTP/2 windows) and by a client with
//! fixed windows (tonic's defaults: 2 MiB a stream, as before the adaptive windows), each
//! uncompressed and, for the adaptive client, in its default setting (zstd). Prints boards/s
//! per row and each delayed row as a ratio to the same client at no delay, rows alternated
//! over the rounds. No timing is asserted; the ratios are the result.
//!
//! `cargo bench --bench long_link` (n = 16, two rounds), or `-- N ROUNDS`.
//!
//! Also the shaped-link bench's proxy (`benches/link/shaped.py`): `-- proxy LISTEN UPSTREAM
//! ONE_WAY_MS [MBIT]` forwards every connection on LISTEN to UPSTREAM through the same
//! delaying proxy (paced to MBIT Mbit/s if given), until killed.

use queens::client::{Access, connect_with};
use queens::config::{Config, Encodings};
use queens::pb::EnumerateRequest;
use queens::pb::queens_client::QueensClient;
use std::net::SocketAddr;
use std::time::{Duration, Instant};
use tokio::net::TcpListener;
use tokio_stream::StreamExt;
use tonic::transport::{Channel, Endpoint};

#[path = "../tests/common/delay.rs"]
mod delay;
use delay::{DelayProxy, Link};

/// 1 Gbit/s in bytes per second.
const GIGABIT: u64 = 125_000_000;

/// How a row's client connects.
#[derive(Clone, Copy, Debug)]
enum Client {
    /// `queens::client`: adaptive windows, accepting `Encodings`.
    Adaptive(Encodings),
    /// A plain tonic channel with tonic's fixed default windows, uncompressed.
    Fixed,
}

impl Client {
    fn name(self) -> String {
        match self {
            Client::Adaptive(accept) => format!("adaptive windows, accepting {accept}"),
            Client::Fixed => "fixed windows (2 MiB), uncompressed".into(),
        }
    }
}

/// Boards of one packed stream of `n` drained through `url`, and the seconds it took.
async fn drain(url: &str, client: Client, n: u32) -> (u64, f64) {
    let request = EnumerateRequest {
        n,
        packed: true,
        ..Default::default()
    };
    let started = Instant::now();
    let mut stream = match client {
        Client::Adaptive(accept) => {
            let access = Access {
                accept,
                ..Access::default()
            };
            let mut client = connect_with(url, &access).await.expect("connect");
            client
                .enumerate(request)
                .await
                .expect("Enumerate")
                .into_inner()
        }
        Client::Fixed => {
            let channel: Channel = Endpoint::from_shared(url.to_string())
                .unwrap()
                .connect()
                .await
                .expect("connect");
            let mut client = QueensClient::new(channel);
            client
                .enumerate(request)
                .await
                .expect("Enumerate")
                .into_inner()
        }
    };
    let mut bytes = 0u64;
    while let Some(message) = stream.next().await {
        bytes += message.expect("a whole stream").packed.len() as u64;
    }
    (bytes / u64::from(n), started.elapsed().as_secs_f64())
}

/// The proxy alone, as `proxy LISTEN UPSTREAM ONE_WAY_MS [MBIT]` asks, until killed.
fn proxy(args: &[String]) {
    let usage = "proxy LISTEN UPSTREAM ONE_WAY_MS [MBIT]";
    let [listen, upstream, one_way, rest @ ..] = args else {
        panic!("usage: {usage}");
    };
    let listen: SocketAddr = listen.parse().expect(usage);
    let upstream: SocketAddr = upstream.parse().expect(usage);
    let one_way = Duration::from_millis(one_way.parse().expect(usage));
    let rate = rest
        .first()
        .map(|mbit| mbit.parse::<u64>().expect(usage) * 1_000_000 / 8);
    let runtime = tokio::runtime::Runtime::new().unwrap();
    runtime.block_on(async {
        let link = Link { one_way, rate };
        let proxy = DelayProxy::listen(listen, upstream, link)
            .await
            .expect("bind the proxy");
        println!("proxy on {} to {upstream}: {link:?}", proxy.addr);
        std::future::pending::<()>().await;
    });
}

fn main() {
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| a != "--bench")
        .collect();
    if args.first().is_some_and(|a| a == "proxy") {
        return proxy(&args[1..]);
    }
    let n: u32 = args.first().and_then(|a| a.parse().ok()).unwrap_or(16);
    let rounds: usize = args.get(1).and_then(|a| a.parse().ok()).unwrap_or(2);
    let runtime = tokio::runtime::Runtime::new().unwrap();
    runtime.block_on(async {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(queens::server::run(listener, Config::default(), async {
            std::future::pending::<()>().await;
        }));
        let links = [("no delay", Duration::ZERO), ("100 ms RTT", Duration::from_millis(50))];
        let clients = [
            Client::Adaptive(Encodings::NONE),
            Client::Fixed,
            Client::Adaptive(Encodings::ZSTD_GZIP),
        ];
        let mut proxies = Vec::new();
        for (_, one_way) in links {
            let link = Link {
                one_way,
                rate: Some(GIGABIT),
            };
            proxies.push(DelayProxy::start(addr, link).await);
        }
        // rates[client][link]: boards/s of each round.
        let mut rates = vec![vec![Vec::new(); links.len()]; clients.len()];
        for round in 0..rounds {
            for (c, &client) in clients.iter().enumerate() {
                // Alternate which link goes first.
                let order: Vec<usize> = if round % 2 == 0 { vec![0, 1] } else { vec![1, 0] };
                for l in order {
                    let (boards, seconds) = drain(&proxies[l].url(), client, n).await;
                    let rate = boards as f64 / seconds;
                    println!(
                        "round {round}: {:<45} {:<11} {boards} boards in {seconds:.2} s: {:.2} M boards/s",
                        client.name(),
                        links[l].0,
                        rate / 1e6
                    );
                    rates[c][l].push(rate);
                }
            }
        }
        println!("\nn = {n} packed through a 1 Gbit/s proxy, {rounds} rounds (mean):");
        for (c, client) in clients.iter().enumerate() {
            let mean = |v: &Vec<f64>| v.iter().sum::<f64>() / v.len() as f64;
            let (flat, long) = (mean(&rates[c][0]), mean(&rates[c][1]));
            println!(
                "{:<45} no delay {:.2} M/s, 100 ms RTT {:.2} M/s: {:.2} of no delay",
                client.name(),
                flat / 1e6,
                long / 1e6,
                long / flat
            );
        }
    });
}
