//! Serves the Queens service and its Arrow Flight twin on a bound listener, with gRPC health
//! and server reflection
//! (v1 and v1alpha), until a shutdown future completes; then a bounded, graceful stop.
//!
//! Taking a bound listener (not an address) lets tests bind `127.0.0.1:0` and read the port
//! back. The server owns the one pool of search threads ([`crate::solver::Pool`], sized by
//! `config.search_threads`) that every Count and Enumerate runs on. Request handling lives in
//! `crate::service`; flags live in the binary.
//!
//! # Layout
//! - `listen.rs`: accepting connections: `--max-connections`, the fd-limit backoff, the TLS
//!   handshake and preface deadline, the idle timeout.
//! - `gate.rs`: every request: `--max-requests`, the call's log line, metrics and span, and
//!   the per-call extensions the service reads.
//! - `compression.rs`: which calls get compressed responses (Enumerate's, when the client
//!   accepts one of `--compression`'s encodings), and with what.
//! - `auth.rs`: the client's identity (bearer tokens, client certificates, the peer's
//!   address); `tls.rs`: the TLS configuration (and client certificates).
//! - `logs.rs`: where log lines go and in what form; `metrics.rs`: the Prometheus exporter
//!   and the gRPC metrics the gate records; `traces.rs`: the call spans, `traceparent`, the
//!   OTLP exporter.
//! - here: HTTP settings, the layers every request passes (the web side, gRPC-Web, the
//!   gate), the services, shutdown, the open-file limit.

mod auth;
mod compression;
mod gate;
mod listen;
mod logs;
mod metrics;
mod tls;
mod traces;

pub use self::listen::ConnInfo;
pub use self::logs::{LogFormat, init as init_logs};
pub use self::tls::TlsError;
pub use self::traces::{Traces, TracesError};

use crate::config::{Config, Encodings};
use crate::flight::FlightQueens;
use crate::pb::server::queens_server::QueensServer;
use crate::service::QueensService;
use crate::solver::Pool;
use arrow_flight::flight_service_server::FlightServiceServer;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;
use tokio::net::TcpListener;
use tokio::sync::watch;
use tonic::transport::Server;
use tonic_health::ServingStatus;

/// Streams h2 accepts and the client resets before the server has seen them, per
/// connection, before it answers with GOAWAY (Rapid Reset, CVE-2023-44487): h2's default.
const MAX_PENDING_ACCEPT_RESETS: usize = 20;

/// Serves (over TLS when `config.tls` is set) until `shutdown` completes, then: health turns
/// NOT_SERVING, new connections are refused, open streams end with UNAVAILABLE "server
/// shutting down", and after at most `config.shutdown_grace` the function returns even if
/// some client never read its stream.
pub async fn run(
    listener: TcpListener,
    config: Config,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), ServeError> {
    fixed_allocator_thresholds();
    // One concrete shutdown type: the server stack is compiled once, here, rather than again
    // in every crate (test, binary, bench) that calls this with a future of its own.
    serve_until(listener, config, Box::pin(shutdown)).await
}

/// [`run`] with its shutdown future boxed.
async fn serve_until(
    listener: TcpListener,
    config: Config,
    shutdown: Pin<Box<dyn Future<Output = ()> + Send>>,
) -> Result<(), ServeError> {
    let grace = config.shutdown_grace;
    let max_request = config.max_request_bytes;
    let tls = match &config.tls {
        Some(pem) => Some(tokio_rustls::TlsAcceptor::from(tls::server_config(
            pem,
            config.client_ca.as_deref(),
            config.web,
        )?)),
        None => None,
    };
    let mut builder = Server::builder()
        .http2_keepalive_interval(Some(config.keepalive_interval))
        .http2_keepalive_timeout(Some(config.keepalive_timeout))
        // tonic passes none of these unless asked, which switches off h2's own limits.
        .max_concurrent_streams(Some(config.max_streams_per_connection))
        .http2_max_local_error_reset_streams(Some(crate::config::MAX_LOCAL_RESETS))
        .http2_max_pending_accept_reset_streams(Some(MAX_PENDING_ACCEPT_RESETS))
        // Flow-control windows sized to the link (hyper's BDP estimate, up to 16 MiB) instead
        // of fixed ones: a fixed window W over a round trip T holds a stream to W / T.
        .http2_adaptive_window(Some(true))
        // Browsers speak HTTP/1.1 to a plaintext port: the page and its gRPC-Web calls need
        // it. The listener holds an HTTP/1.1 connection to the same clocks as an HTTP/2 one.
        .accept_http1(config.web);
    if let Some(age) = config.max_connection_age {
        // GOAWAY at that age; the listener closes the connection a grace later (tonic's own
        // grace would skip the GOAWAY and only close).
        builder = builder.max_connection_age(age);
    }
    // Outermost first: the page's files and CORS preflights are answered before anything
    // else; gRPC-Web calls are then translated to gRPC, so that the gate sees every call
    // alike (tokens, limits, its status for the log line and metrics).
    let mut builder = builder
        .layer(crate::web::WebLayer::new(&config))
        .layer(tonic_web::GrpcWebLayer::new())
        .layer(gate::GateLayer::new(
            config.tokens.clone(),
            config.max_requests,
            config.requests_per_client(),
        ));
    let (health, health_service) = tonic_health::server::health_reporter();
    health.set_serving::<QueensServer<QueensService>>().await;
    health
        .set_serving::<FlightServiceServer<FlightQueens>>()
        .await;
    // The google.rpc error details too, so that a reflection client (grpcurl) decodes a
    // refusal's details instead of showing their bytes.
    let reflection = || {
        tonic_reflection::server::Builder::configure()
            .register_encoded_file_descriptor_set(crate::pb::FILE_DESCRIPTOR_SET)
            .register_encoded_file_descriptor_set(tonic_health::pb::FILE_DESCRIPTOR_SET)
            .register_encoded_file_descriptor_set(tonic_types::pb::FILE_DESCRIPTOR_SET)
    };
    let reflection_v1 = reflection()
        .build_v1()
        .expect("the embedded descriptor sets are valid");
    let reflection_v1alpha = reflection()
        .build_v1alpha()
        .expect("the embedded descriptor sets are valid");

    let closed = Arc::new(AtomicUsize::new(0));
    // TCP_NODELAY is set on every connection (listen.rs): without it, Nagle's algorithm
    // holds a stream's first small message behind its response headers until the client's
    // delayed ACK, about 40 ms.
    let (stop_tx, stop_rx) = watch::channel(false);
    let incoming = listen::incoming(
        listener,
        listen::ListenerSettings {
            max_connections: config.max_connections,
            preface_timeout: config.preface_timeout,
            idle_timeout: config.idle_timeout,
            max_age: config
                .max_connection_age
                .map(|age| age.saturating_add(config.shutdown_grace)),
            keepalive: config.keepalive_interval,
            http1: config.web,
            tls,
            closed: closed.clone(),
        },
    );
    let pool = Pool::new(config.search_threads);
    let (message_bytes, flight_batch) = (config.max_message_bytes, config.flight_batch_bytes);
    let advertise = config.advertise.clone();
    let offer = config.compression;
    let queens = QueensService::new(config, pool, stop_rx.clone(), metrics::installed());
    let budget = queens.budget().clone();
    tokio::spawn(give_back_memory(closed, budget, stop_rx.clone()));
    let flight = FlightQueens::new(queens.clone(), message_bytes, flight_batch, advertise);
    let flight = FlightServiceServer::new(flight).max_decoding_message_size(max_request);
    let mut stopped = stop_rx;
    // Requests may come compressed with either encoding whatever `--compression` offers for
    // responses (they are tiny; which responses get compressed is `compression::Negotiate`'s
    // choice). The request cap holds after decompression: tonic refuses a message that
    // inflates past it with RESOURCE_EXHAUSTED (tests/compression.rs).
    let mut queens = QueensServer::new(queens).max_decoding_message_size(max_request);
    for encoding in Encodings::ZSTD_GZIP.iter() {
        queens = queens
            .send_compressed(encoding.tonic())
            .accept_compressed(encoding.tonic());
    }
    let queens = compression::Negotiate::new(queens, offer);
    let serve = builder
        .add_service(health_service)
        .add_service(reflection_v1)
        .add_service(reflection_v1alpha)
        .add_service(queens)
        .add_service(flight)
        .serve_with_incoming_shutdown(incoming, async move {
            let _ = stopped.wait_for(|stop| *stop).await;
        });
    tokio::pin!(serve);
    tokio::select! {
        result = &mut serve => return Ok(result?),
        () = shutdown => {}
    }
    health
        .set_not_serving::<QueensServer<QueensService>>()
        .await;
    health
        .set_not_serving::<FlightServiceServer<FlightQueens>>()
        .await;
    health
        .set_service_status("", ServingStatus::NotServing)
        .await;
    let _ = stop_tx.send(true);
    match tokio::time::timeout(grace, serve).await {
        Ok(result) => Ok(result?),
        Err(_) => {
            tracing::warn!(
                "shutdown grace of {grace:?} passed with streams still open; closing them"
            );
            Ok(())
        }
    }
}

/// Why `queens serve` could not serve.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    /// The address could not be bound.
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        /// The address asked for.
        addr: String,
        /// Why.
        source: std::io::Error,
    },
    /// The server failed.
    #[error("server failed: {0}")]
    Transport(#[from] tonic::transport::Error),
    /// The metrics exporter could not start.
    #[error("--metrics-addr: {0}")]
    Metrics(metrics_exporter_prometheus::BuildError),
    /// The TLS material was refused.
    #[error(transparent)]
    Tls(#[from] TlsError),
}

/// `queens serve`: binds `addr`, logs where it listens, and serves until SIGTERM or Ctrl-C.
pub async fn serve(addr: &str, config: Config) -> Result<(), ServeError> {
    let bind = |source| ServeError::Bind {
        addr: addr.to_string(),
        source,
    };
    // A literal address binds without a name lookup (which would start a blocking thread).
    let listener = match addr.parse::<std::net::SocketAddr>() {
        Ok(socket) => TcpListener::bind(socket).await,
        Err(_) => TcpListener::bind(addr).await,
    }
    .map_err(bind)?;
    let local = listener.local_addr().map_err(bind)?;
    let lanes = crate::solver::simd_registers().map_or("no SIMD lanes".to_string(), |r| {
        format!("Count in {r} lanes")
    });
    tracing::info!(
        "listening on {local} (max n {}, {} search threads, {lanes})",
        config.max_n,
        config.search_threads
    );
    tracing::info!("{}", raise_open_files());
    if let Some(metrics) = config.metrics_addr {
        metrics::install(metrics).map_err(ServeError::Metrics)?;
        tracing::info!("metrics at http://{metrics}/metrics");
    }
    tracing::info!(config = ?config, "settings");
    run(listener, config, shutdown_signal()).await?;
    tracing::info!("stopped");
    Ok(())
}

/// How often the memory trimmer looks whether connections have ended.
const TRIM_INTERVAL: Duration = Duration::from_secs(1);

/// Gives memory freed by ended connections and searches back to the system, at most once a
/// [`TRIM_INTERVAL`] and only after connections or searches ended. glibc's malloc keeps
/// freed memory in its arenas: after four rounds of 300 connections × 100 held streams
/// (`tests/hardening.rs`) a server stayed at its peak for good, and `malloc_trim` brings it
/// back to within a few MiB of idle; mimalloc, tried instead, kept more (the figures:
/// docs/performance.md, "Limits under load"). A count's working lists of a few MiB live in
/// those arenas too.
async fn give_back_memory(
    closed: Arc<AtomicUsize>,
    budget: crate::service::Budget,
    mut stopping: watch::Receiver<bool>,
) {
    let mut seen = 0;
    loop {
        tokio::select! {
            () = tokio::time::sleep(TRIM_INTERVAL) => {}
            _ = stopping.wait_for(|stop| *stop) => return,
        }
        let now = closed.load(Ordering::Relaxed) + budget.given_back();
        if now != seen {
            seen = now;
            trim();
        }
    }
}

/// Allocations from this size on get pages of their own from the system, which go back to it
/// when they are freed: a count's working lists (MiBs to hundreds of MiBs) and the sieve's
/// larger blocks. glibc's default raises this threshold to the largest block freed so far (up
/// to 32 MiB), and the lists of a count of n = 22 then stayed in a thread's arena after the
/// count, where `malloc_trim` cannot reach the free top of a thread's heap: measured, a server
/// of 9 MiB stayed at 52 MiB after `count 22 --shard 5/2048` (peak 228 MiB). Fixed at 1 MiB
/// it came back to 12.8 MiB from 10.5 MiB warm (+22 %), at 128 KiB (glibc's own starting
/// value) to 11.0 MiB from 10.4 MiB (+6 %), and 11.1 MiB after a shard of n = 23 more.
const OWN_PAGES_FROM: usize = 128 << 10;

/// Fixes glibc's thresholds for allocations with pages of their own and for trimming a heap,
/// at [`OWN_PAGES_FROM`] and twice that, instead of letting them grow with what is freed
/// (glibc only; elsewhere the allocator decides).
fn fixed_allocator_thresholds() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        let from = OWN_PAGES_FROM as libc::c_int;
        // SAFETY: mallopt only sets the allocator's own parameters; it takes plain integers
        // and is thread-safe.
        unsafe {
            libc::mallopt(libc::M_MMAP_THRESHOLD, from);
            libc::mallopt(libc::M_TRIM_THRESHOLD, 2 * from);
        }
    }
}

/// Returns free heap memory to the system (glibc only; elsewhere the allocator decides).
fn trim() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        // SAFETY: malloc_trim only walks and shrinks the allocator's own free lists; it is
        // thread-safe and takes no pointers.
        unsafe {
            libc::malloc_trim(0);
        }
    }
}

/// Raises the soft limit on open files to the hard limit (each connection is one), and says
/// what it did.
fn raise_open_files() -> String {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes only into the struct it is given, which lives on this stack.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) } != 0 {
        return format!(
            "open-file limit unknown: {}",
            std::io::Error::last_os_error()
        );
    }
    let soft = limit.rlim_cur;
    if soft >= limit.rlim_max {
        return format!("open-file limit {soft} (the hard limit)");
    }
    let raised = libc::rlimit {
        rlim_cur: limit.rlim_max,
        rlim_max: limit.rlim_max,
    };
    // SAFETY: setrlimit reads only the struct it is given.
    if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &raised) } != 0 {
        return format!(
            "open-file limit {soft}; raising it to the hard limit {} failed: {}",
            limit.rlim_max,
            std::io::Error::last_os_error()
        );
    }
    format!(
        "raised the open-file limit from {soft} to the hard limit {}",
        limit.rlim_max
    )
}

/// Completes on SIGTERM or Ctrl-C.
async fn shutdown_signal() {
    let term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate());
    let term = async {
        match term {
            Ok(mut term) => {
                term.recv().await;
            }
            Err(_) => std::future::pending().await,
        }
    };
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        () = term => {}
    }
    tracing::info!("shutting down");
}
