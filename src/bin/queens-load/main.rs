//! `queens-load`: a load driver for a running queens server (there is no ghz here).
//!
//! - `mixed`: 32 concurrent Enumerate n = 10 streams and 8 Count n = 12 calls; every call
//!   must complete correctly or be refused with RESOURCE_EXHAUSTED (exit 1 otherwise).
//! - `health`: health checks back to back for a while; each must answer SERVING within 1 s.
//! - `latency`: Count n = 8 (or another small n) at a given concurrency for a while, from one
//!   client (one source address); prints calls/s, refusals, p50 and p99. Run two at once
//!   with different `--source` addresses for two clients.
//! - `stream`: drains one Enumerate stream, decoding with the generated types as a user's
//!   client does; prints boards and boards/s.
//! - `otlp-sink`: an OTLP/gRPC trace receiver that counts the spans it is sent (a stand-in
//!   collector for measuring what `--otlp-endpoint` costs).
//! - `soak`: mixed, partly hostile traffic for a given time, every answer checked, the
//!   server's RSS, open files and threads sampled (`soak.rs`).

mod soak;

use clap::{Parser, Subcommand};
use queens::pb::{CountRequest, EnumerateRequest};
use std::time::{Duration, Instant};
use tonic::Code;
use tonic_health::pb::HealthCheckRequest;
use tonic_health::pb::health_check_response::ServingStatus;
use tonic_health::pb::health_client::HealthClient;

/// Load driver for a queens server.
#[derive(Parser, Debug)]
#[command(name = "queens-load", about)]
struct Cli {
    /// Server URL.
    #[arg(long, default_value = queens::client::DEFAULT_URL)]
    addr: String,
    #[command(subcommand)]
    mode: Mode,
}

/// What load to drive.
#[derive(Subcommand, Debug)]
enum Mode {
    /// 32 Enumerate n = 10 streams and 8 Count n = 12 calls, all at once.
    Mixed,
    /// Health checks back to back for `seconds`; each must be SERVING within 1 s.
    Health {
        /// How long to keep checking.
        #[arg(long, default_value_t = 5.0)]
        seconds: f64,
    },
    /// Count n = 8 calls from `concurrency` workers (a connection each) for `seconds`.
    Latency {
        /// Concurrent callers.
        #[arg(long, default_value_t = 8)]
        concurrency: usize,
        /// How long to run.
        #[arg(long, default_value_t = 3.0)]
        seconds: f64,
        /// Board size to count (1 to 14: every answer is checked).
        #[arg(long, default_value_t = 8, value_parser = clap::value_parser!(u32).range(1..=14))]
        n: u32,
        /// Local address the connections come from (127.0.0.2 makes a second client of a
        /// server on 127.0.0.1, as the server tells clients apart by address).
        #[arg(long)]
        source: Option<std::net::IpAddr>,
    },
    /// Drains one Enumerate n stream (compact unless --rows) and prints boards/s.
    Stream {
        /// Board size.
        n: u32,
        /// Ask for rows instead of compact boards.
        #[arg(long)]
        rows: bool,
    },
    /// Mixed, partly hostile calls for `seconds`, every answer checked; samples the server
    /// `--pid` from /proc. Exit 1 on a wrong answer, an unexpected status, or growth of more
    /// than 10 % (and 16 MiB of RSS) from the warm-up sample to the end.
    Soak {
        /// How long to run.
        #[arg(long, default_value_t = 120.0)]
        seconds: f64,
        /// When to take the quiet sample the end is held to [default: a quarter of the run,
        /// at most 600 s].
        #[arg(long)]
        warm_up: Option<f64>,
        /// Callers at once.
        #[arg(long, default_value_t = 8)]
        concurrency: usize,
        /// The server's process id, to sample its RSS, open files and threads.
        #[arg(long)]
        pid: Option<u32>,
        /// Seconds between the samples printed while running.
        #[arg(long, default_value_t = 60.0)]
        sample_every: f64,
        /// Seed of the callers' random choices.
        #[arg(long, default_value_t = 1)]
        seed: u64,
        /// Bearer token for every call (a server with --auth-tokens); adds wrong-token calls.
        #[arg(long)]
        token: Option<String>,
        /// Connect over TLS, trusting this PEM CA certificate.
        #[arg(long)]
        ca_cert: Option<std::path::PathBuf>,
    },
    /// Receives OTLP spans on `listen` and prints how many arrived, every 5 s.
    OtlpSink {
        /// Where to listen.
        #[arg(long, default_value = "127.0.0.1:4317")]
        listen: std::net::SocketAddr,
    },
}

/// How one call ended.
#[derive(Debug, PartialEq, Eq)]
enum Outcome {
    Correct,
    Refused,
    Wrong(String),
}

#[tokio::main]
async fn main() -> std::process::ExitCode {
    let cli = Cli::parse();
    let ok = match cli.mode {
        Mode::Mixed => mixed(&cli.addr).await,
        Mode::Health { seconds } => health(&cli.addr, Duration::from_secs_f64(seconds)).await,
        Mode::Latency {
            concurrency,
            seconds,
            n,
            source,
        } => {
            let load = Latency {
                concurrency,
                period: Duration::from_secs_f64(seconds),
                n,
                source,
            };
            latency(&cli.addr, load).await
        }
        Mode::Stream { n, rows } => stream(&cli.addr, n, !rows).await,
        Mode::OtlpSink { listen } => otlp_sink(listen).await,
        Mode::Soak {
            seconds,
            warm_up,
            concurrency,
            pid,
            sample_every,
            seed,
            token,
            ca_cert,
        } => {
            let ca_pem = match ca_cert.map(std::fs::read).transpose() {
                Ok(pem) => pem,
                Err(e) => {
                    eprintln!("--ca-cert: {e}");
                    return std::process::ExitCode::FAILURE;
                }
            };
            let warm_up = warm_up.unwrap_or((seconds / 4.0).min(600.0));
            soak::run(soak::Options {
                addr: cli.addr.clone(),
                period: Duration::from_secs_f64(seconds),
                warm_up: Duration::from_secs_f64(warm_up),
                concurrency: concurrency.max(1),
                pid,
                seed,
                access: queens::client::Access {
                    token,
                    ca_pem,
                    identity: None,
                    ..Default::default()
                },
                sample_every: Duration::from_secs_f64(sample_every.max(1.0)),
            })
            .await
        }
    };
    if ok {
        std::process::ExitCode::SUCCESS
    } else {
        std::process::ExitCode::FAILURE
    }
}

/// An outcome from a failed call: refusals are expected under load, anything else is wrong.
fn failed(status: tonic::Status) -> Outcome {
    if status.code() == Code::ResourceExhausted {
        Outcome::Refused
    } else {
        Outcome::Wrong(format!("{:?}: {}", status.code(), status.message()))
    }
}

async fn enumerate_10(mut client: queens::client::Client) -> Outcome {
    let request = EnumerateRequest {
        n: 10,
        compact: true,
        ..Default::default()
    };
    let mut stream = match client.enumerate(request).await {
        Ok(r) => r.into_inner(),
        Err(s) => return failed(s),
    };
    let mut boards: Vec<Vec<u32>> = Vec::new();
    loop {
        match stream.message().await {
            Ok(Some(m)) => boards.extend(m.boards.into_iter().map(|b| b.columns)),
            Ok(None) => break,
            Err(s) => return failed(s),
        }
    }
    let ordered = boards.windows(2).all(|w| w[0] < w[1]);
    if boards.len() == 724 && ordered {
        Outcome::Correct
    } else {
        Outcome::Wrong(format!("{} boards, ordered: {ordered}", boards.len()))
    }
}

async fn count_12(mut client: queens::client::Client) -> Outcome {
    let request = CountRequest {
        n: 12,
        ..Default::default()
    };
    match client.count(request).await {
        Ok(r) if r.get_ref().solutions == 14_200 => Outcome::Correct,
        Ok(r) => Outcome::Wrong(format!("{:?}", r.into_inner())),
        Err(s) => failed(s),
    }
}

/// One call of the mixed load.
#[derive(Clone, Copy)]
enum Call {
    /// Enumerate n = 10 (724 boards).
    Enumerate10,
    /// Count n = 12 (14,200 solutions).
    Count12,
}

/// Connects to `addr` and makes `call` on the new connection.
async fn connect_and(addr: String, call: Call) -> Outcome {
    let client = match queens::client::connect(&addr).await {
        Ok(c) => c,
        Err(e) => return Outcome::Wrong(format!("connect: {e}")),
    };
    match call {
        Call::Enumerate10 => enumerate_10(client).await,
        Call::Count12 => count_12(client).await,
    }
}

async fn mixed(addr: &str) -> bool {
    let started = Instant::now();
    let mut calls = Vec::new();
    for _ in 0..32 {
        calls.push(tokio::spawn(connect_and(
            addr.to_string(),
            Call::Enumerate10,
        )));
    }
    for _ in 0..8 {
        calls.push(tokio::spawn(connect_and(addr.to_string(), Call::Count12)));
    }
    let (mut correct, mut refused, mut wrong) = (0, 0, 0);
    for call in calls {
        match call.await.expect("call task") {
            Outcome::Correct => correct += 1,
            Outcome::Refused => refused += 1,
            Outcome::Wrong(what) => {
                eprintln!("wrong: {what}");
                wrong += 1;
            }
        }
    }
    println!(
        "mixed: {correct} correct, {refused} refused (RESOURCE_EXHAUSTED), {wrong} wrong in {:.2} s",
        started.elapsed().as_secs_f64()
    );
    wrong == 0
}

async fn health(addr: &str, period: Duration) -> bool {
    let channel = match tonic::transport::Channel::from_shared(addr.to_string()) {
        Ok(endpoint) => endpoint.connect_lazy(),
        Err(e) => {
            eprintln!("bad address: {e}");
            return false;
        }
    };
    let mut client = HealthClient::new(channel);
    let until = Instant::now() + period;
    let (mut checks, mut slowest, mut bad) = (0u64, Duration::ZERO, 0u64);
    while Instant::now() < until {
        let started = Instant::now();
        let request = HealthCheckRequest {
            service: "queens.v1.Queens".into(),
        };
        let answer = tokio::time::timeout(Duration::from_secs(1), client.check(request)).await;
        let took = started.elapsed();
        slowest = slowest.max(took);
        checks += 1;
        match answer {
            Ok(Ok(r)) if r.get_ref().status == ServingStatus::Serving as i32 => {}
            other => {
                eprintln!("health check failed after {took:?}: {other:?}");
                bad += 1;
            }
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    println!(
        "health: {checks} checks, {bad} failed or slower than 1 s, slowest {:.1} ms",
        slowest.as_secs_f64() * 1e3
    );
    bad == 0 && checks > 0
}

/// What `latency` drives.
struct Latency {
    concurrency: usize,
    period: Duration,
    n: u32,
    source: Option<std::net::IpAddr>,
}

/// A Queens client of `addr` whose connection comes from `source` (the CLI's client when
/// no source is asked for).
async fn latency_client(addr: &str, source: Option<std::net::IpAddr>) -> queens::client::Client {
    let Some(source) = source else {
        return queens::client::connect(addr).await.expect("connect");
    };
    let channel = tonic::transport::Endpoint::from_shared(addr.to_string())
        .expect("a URL")
        .local_address(Some(source))
        .connect()
        .await
        .unwrap_or_else(|e| panic!("connect from {source}: {e}"));
    queens::pb::queens_client::QueensClient::with_interceptor(channel, Default::default())
}

async fn latency(addr: &str, load: Latency) -> bool {
    let Latency {
        concurrency,
        period,
        n,
        source,
    } = load;
    let want = soak::SOLUTIONS[n as usize - 1];
    let until = Instant::now() + period;
    let mut workers = Vec::new();
    for _ in 0..concurrency {
        let addr = addr.to_string();
        workers.push(tokio::spawn(async move {
            let mut client = latency_client(&addr, source).await;
            let (mut times, mut refused) = (Vec::new(), 0u64);
            while Instant::now() < until {
                let started = Instant::now();
                let request = CountRequest {
                    n,
                    ..Default::default()
                };
                match client.count(request).await {
                    Ok(r) => {
                        assert_eq!(r.get_ref().solutions, want);
                        times.push(started.elapsed());
                    }
                    Err(s) if s.code() == Code::ResourceExhausted => refused += 1,
                    Err(s) => panic!("{s:?}"),
                }
            }
            (times, refused)
        }));
    }
    let started = Instant::now();
    let (mut times, mut refused) = (Vec::new(), 0);
    for w in workers {
        let (t, r) = w.await.expect("worker");
        times.extend(t);
        refused += r;
    }
    let elapsed = started.elapsed().as_secs_f64().max(period.as_secs_f64());
    times.sort();
    let pct = |p: f64| {
        times
            .get(((times.len() as f64 * p) as usize).min(times.len().saturating_sub(1)))
            .map_or(0.0, |d| d.as_secs_f64() * 1e3)
    };
    println!(
        "latency: n {n}, concurrency {concurrency}: {} calls ok ({:.0}/s), {refused} refused, p50 {:.2} ms, p99 {:.2} ms",
        times.len(),
        times.len() as f64 / elapsed,
        pct(0.50),
        pct(0.99)
    );
    !times.is_empty()
}

async fn stream(addr: &str, n: u32, compact: bool) -> bool {
    let mut client = match queens::client::connect(addr).await {
        Ok(client) => client,
        Err(e) => {
            eprintln!("connect: {e}");
            return false;
        }
    };
    let started = Instant::now();
    let request = EnumerateRequest {
        n,
        compact,
        ..Default::default()
    };
    let mut stream = match client.enumerate(request).await {
        Ok(r) => r.into_inner(),
        Err(s) => {
            eprintln!("{s:?}");
            return false;
        }
    };
    let mut boards = 0u64;
    loop {
        match stream.message().await {
            Ok(Some(message)) => boards += message.boards.len() as u64,
            Ok(None) => break,
            Err(s) => {
                eprintln!("{s:?}");
                return false;
            }
        }
    }
    let seconds = started.elapsed().as_secs_f64();
    println!(
        "stream: n {n}: {boards} boards in {seconds:.3} s ({:.0} boards/s)",
        boards as f64 / seconds
    );
    true
}

/// Counts the spans it receives.
struct Sink(std::sync::Arc<std::sync::atomic::AtomicU64>);

#[tonic::async_trait]
impl opentelemetry_proto::tonic::collector::trace::v1::trace_service_server::TraceService for Sink {
    async fn export(
        &self,
        request: tonic::Request<
            opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest,
        >,
    ) -> Result<
        tonic::Response<
            opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceResponse,
        >,
        tonic::Status,
    > {
        let spans: usize = request
            .get_ref()
            .resource_spans
            .iter()
            .flat_map(|r| &r.scope_spans)
            .map(|s| s.spans.len())
            .sum();
        self.0
            .fetch_add(spans as u64, std::sync::atomic::Ordering::Relaxed);
        Ok(tonic::Response::new(Default::default()))
    }
}

async fn otlp_sink(listen: std::net::SocketAddr) -> bool {
    use opentelemetry_proto::tonic::collector::trace::v1::trace_service_server::TraceServiceServer;
    let spans = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
    let counted = spans.clone();
    tokio::spawn(async move {
        loop {
            tokio::time::sleep(Duration::from_secs(5)).await;
            println!(
                "otlp-sink: {} spans",
                counted.load(std::sync::atomic::Ordering::Relaxed)
            );
        }
    });
    println!("otlp-sink: listening on {listen}");
    match tonic::transport::Server::builder()
        .add_service(TraceServiceServer::new(Sink(spans)))
        .serve(listen)
        .await
    {
        Ok(()) => true,
        Err(e) => {
            eprintln!("otlp-sink: {e}");
            false
        }
    }
}
