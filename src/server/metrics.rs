//! Prometheus metrics (`--metrics-addr`): the exporter on its own listener, the names that
//! go-grpc-prometheus dashboards expect (`grpc_server_started_total`,
//! `grpc_server_handled_total`, `grpc_server_msg_sent_total`, `grpc_server_handling_seconds`),
//! and process metrics (RSS, CPU, fds, threads, start time). Calls are recorded by `gate.rs`
//! through the `metrics` macros, which cost nothing when no exporter is installed.

use metrics_exporter_prometheus::{BuildError, Matcher, PrometheusBuilder};
use std::net::SocketAddr;
use std::time::Duration;

/// Bucket bounds of `grpc_server_handling_seconds`, in seconds: go-grpc-prometheus's defaults
/// (5 ms to 10 s), which existing latency panels are built on.
const BUCKETS: [f64; 12] = [
    0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 60.0,
];

/// The small searches' waits, histograms in seconds over [`WAIT_BUCKETS`]: their names and
/// what each measures.
const WAITS: [(&str, &str); 2] = [
    (
        "queens_search_wait_seconds",
        "How long small searches that waited for a place waited.",
    ),
    (
        "queens_small_count_turn_wait_seconds",
        "How long small counts waited for their turn on the CPU, taken by clients in rotation.",
    ),
];

/// Bucket bounds of the small searches' waits ([`WAITS`]), in seconds: from half a
/// millisecond (places free as fast as small searches end) to the default
/// `--small-search-wait` of 1 s and past it.
const WAIT_BUCKETS: [f64; 12] = [
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 5.0,
];

/// How often process metrics are refreshed.
const PROCESS_INTERVAL: Duration = Duration::from_secs(1);

/// Whether an exporter is installed (metrics recorded without one go nowhere).
static INSTALLED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Whether this process exports metrics: work done only to feed them can be skipped if not.
pub fn installed() -> bool {
    INSTALLED.load(std::sync::atomic::Ordering::Relaxed)
}

/// Serves `/metrics` on `addr` (a listener of its own) and starts refreshing process
/// metrics. Must run inside the Tokio runtime; at most once per process.
pub fn install(addr: SocketAddr) -> Result<(), BuildError> {
    let mut builder = PrometheusBuilder::new()
        .with_http_listener(addr)
        .set_buckets_for_metric(
            Matcher::Full("grpc_server_handling_seconds".to_string()),
            &BUCKETS,
        )?;
    for (name, _) in WAITS {
        builder = builder.set_buckets_for_metric(Matcher::Full(name.to_string()), &WAIT_BUCKETS)?;
    }
    builder.install()?;
    INSTALLED.store(true, std::sync::atomic::Ordering::Relaxed);
    metrics::describe_counter!("grpc_server_started_total", "RPCs started on the server.");
    metrics::describe_counter!(
        "grpc_server_handled_total",
        "RPCs completed on the server, whatever their status."
    );
    metrics::describe_counter!(
        "grpc_server_msg_sent_total",
        "gRPC stream messages sent by the server."
    );
    metrics::describe_histogram!(
        "grpc_server_handling_seconds",
        metrics::Unit::Seconds,
        "Time from the start of an RPC to its end."
    );
    metrics::describe_gauge!(
        "queens_searches_running",
        "Long searches holding a slot (--max-searches) now."
    );
    metrics::describe_gauge!(
        "queens_small_searches_running",
        "Small searches holding a place (--max-small-searches) now."
    );
    metrics::describe_counter!(
        "queens_searches_admitted_total",
        "Searches admitted (started), by size (small, long)."
    );
    metrics::describe_counter!(
        "queens_searches_waited_total",
        "Small searches that waited for a place, admitted or refused after the wait."
    );
    for (name, help) in WAITS {
        metrics::describe_histogram!(name, metrics::Unit::Seconds, help);
    }
    metrics::describe_counter!(
        "queens_searches_refused_total",
        "Searches refused, by size and reason (max_searches, max_searches_per_client, max_small_searches, max_small_searches_per_client, max_memory, shutting_down)."
    );
    metrics::describe_gauge!("queens_connections_open", "Connections being served now.");
    metrics::describe_gauge!(
        "queens_memory_reserved_bytes",
        metrics::Unit::Bytes,
        "Bytes of the memory budget (--max-memory) the running searches have reserved."
    );
    metrics::describe_gauge!(
        "queens_memory_limit_bytes",
        metrics::Unit::Bytes,
        "The memory budget (--max-memory)."
    );
    metrics::describe_counter!(
        "queens_connections_refused_total",
        "Connections closed before serving, by reason (max_connections, tls_handshake)."
    );
    metrics::describe_counter!(
        "queens_requests_shed_total",
        "Requests answered RESOURCE_EXHAUSTED at once, by reason (max_requests, max_requests_per_client, max_memory)."
    );
    metrics::describe_counter!(
        "queens_boards_sent_total",
        "Boards sent in Enumerate responses."
    );
    metrics::describe_counter!(
        "queens_bytes_sent_total",
        metrics::Unit::Bytes,
        "Bytes of Enumerate response messages (protobuf payload, before gRPC and HTTP/2 framing)."
    );
    metrics::describe_counter!(
        "queens_count_subproblems_total",
        "Count subproblems finished (added each second while a count runs, and at its end; a board counted at once, n <= 8, is one)."
    );
    metrics::describe_counter!(
        "queens_streams_client_gone_total",
        "Streams (Enumerate, CountProgress) ended because the client went away."
    );
    zero_series();
    let collector = metrics_process::Collector::default();
    collector.describe();
    tokio::spawn(async move {
        loop {
            collector.collect();
            tokio::time::sleep(PROCESS_INTERVAL).await;
        }
    });
    Ok(())
}

/// Creates the service's own series at zero, so that they are scraped (and `rate()` works)
/// before the first event of their kind.
fn zero_series() {
    for (size, reason) in [
        ("long", "max_searches"),
        ("long", "max_searches_per_client"),
        ("long", "max_memory"),
        ("long", "shutting_down"),
        ("small", "max_small_searches"),
        ("small", "max_small_searches_per_client"),
        ("small", "max_memory"),
        ("small", "shutting_down"),
    ] {
        metrics::counter!("queens_searches_refused_total", "reason" => reason, "size" => size)
            .absolute(0);
    }
    for size in ["small", "long"] {
        metrics::counter!("queens_searches_admitted_total", "size" => size).absolute(0);
    }
    metrics::counter!("queens_searches_waited_total", "size" => "small").absolute(0);
    metrics::gauge!("queens_small_searches_running").increment(0.0);
    for reason in ["max_connections", "tls_handshake"] {
        metrics::counter!("queens_connections_refused_total", "reason" => reason).absolute(0);
    }
    for method in ["Enumerate", "CountProgress"] {
        metrics::counter!("queens_streams_client_gone_total", "grpc_method" => method).absolute(0);
    }
    for reason in ["max_requests", "max_requests_per_client", "max_memory"] {
        metrics::counter!("queens_requests_shed_total", "reason" => reason).absolute(0);
    }
    for name in [
        "queens_boards_sent_total",
        "queens_bytes_sent_total",
        "queens_count_subproblems_total",
    ] {
        metrics::counter!(name).absolute(0);
    }
    metrics::gauge!("queens_searches_running").increment(0.0);
    metrics::gauge!("queens_connections_open").increment(0.0);
}

/// A method's metric handles, made once per method (labels are bounded, so there are few):
/// a call then costs a few atomic additions, not a registry lookup per metric.
#[derive(Debug)]
pub(super) struct Method {
    /// `grpc_service` (`unknown` for any service this server does not have).
    pub service: &'static str,
    /// `grpc_method`.
    pub method: &'static str,
    /// `grpc_type`: `unary`, `server_stream` or `bidi_stream`.
    pub kind: &'static str,
    /// `service/method`, the name of the call's span.
    pub full_name: &'static str,
    started: metrics::Counter,
    seconds: metrics::Histogram,
    sent: metrics::Counter,
    /// `grpc_server_handled_total` by code, made at the code's first use.
    handled: [std::sync::OnceLock<metrics::Counter>; 17],
}

/// A call's labels: its method's handles.
pub(super) type Labels = std::sync::Arc<Method>;

/// The labels of a call by its path `/package.Service/Method`.
pub(super) fn labels(path: &str) -> Labels {
    use std::collections::HashMap;
    use std::sync::{Arc, Mutex};
    static METHODS: Mutex<Option<HashMap<(&'static str, &'static str), Labels>>> = Mutex::new(None);
    let (service, method) = path
        .trim_start_matches('/')
        .split_once('/')
        .unwrap_or(("unknown", "unknown"));
    // Only this server's own services keep their names, and at most 64 methods get one:
    // labels (and this map) stay bounded whatever paths a client sends.
    const SERVICES: [&str; 5] = [
        "queens.v1.Queens",
        "arrow.flight.protocol.FlightService",
        "grpc.health.v1.Health",
        "grpc.reflection.v1.ServerReflection",
        "grpc.reflection.v1alpha.ServerReflection",
    ];
    let (service, method) = match SERVICES.iter().find(|s| **s == service) {
        Some(known) => (*known, method),
        None => ("unknown", "unknown"),
    };
    let mut methods = crate::sync::lock(&METHODS);
    let methods = methods.get_or_insert_with(HashMap::new);
    if let Some(found) = methods.get(&(service, method)) {
        return found.clone();
    }
    let method: &'static str = if methods.len() < 64 {
        Box::leak(method.to_string().into_boxed_str())
    } else {
        "unknown"
    };
    if let Some(found) = methods.get(&(service, method)) {
        return found.clone();
    }
    let kind = match method {
        "Enumerate" | "CountProgress" | "Watch" => "server_stream",
        "DoGet" | "ListFlights" | "DoAction" | "ListActions" => "server_stream",
        "ServerReflectionInfo" | "Handshake" | "DoPut" | "DoExchange" => "bidi_stream",
        _ => "unary",
    };
    let labels = [
        ("grpc_service", service),
        ("grpc_method", method),
        ("grpc_type", kind),
    ];
    let entry = Arc::new(Method {
        service,
        method,
        kind,
        full_name: Box::leak(format!("{service}/{method}").into_boxed_str()),
        started: metrics::counter!("grpc_server_started_total", &labels),
        seconds: metrics::histogram!("grpc_server_handling_seconds", &labels),
        sent: metrics::counter!("grpc_server_msg_sent_total", &labels),
        handled: Default::default(),
    });
    methods.insert((service, method), entry.clone());
    entry
}

/// Counts a call's start.
pub(super) fn started(labels: &Labels) {
    labels.started.increment(1);
}

/// Counts a call's end: its status code, its duration and the messages it sent.
pub(super) fn handled(labels: &Labels, code: tonic::Code, seconds: f64, messages: u64) {
    let handled = labels.handled[(code as usize).min(16)].get_or_init(|| {
        metrics::counter!("grpc_server_handled_total",
            "grpc_service" => labels.service, "grpc_method" => labels.method,
            "grpc_type" => labels.kind, "grpc_code" => go_name(code))
    });
    handled.increment(1);
    labels.seconds.record(seconds);
    if messages > 0 {
        labels.sent.increment(messages);
    }
}

/// A status code as grpc-go spells it (`OK`, `Canceled`, ...): the `grpc_code` label values
/// go-grpc-prometheus dashboards and alerts match.
fn go_name(code: tonic::Code) -> &'static str {
    use tonic::Code::*;
    match code {
        Ok => "OK",
        Cancelled => "Canceled",
        Unknown => "Unknown",
        InvalidArgument => "InvalidArgument",
        DeadlineExceeded => "DeadlineExceeded",
        NotFound => "NotFound",
        AlreadyExists => "AlreadyExists",
        PermissionDenied => "PermissionDenied",
        ResourceExhausted => "ResourceExhausted",
        FailedPrecondition => "FailedPrecondition",
        Aborted => "Aborted",
        OutOfRange => "OutOfRange",
        Unimplemented => "Unimplemented",
        Internal => "Internal",
        Unavailable => "Unavailable",
        DataLoss => "DataLoss",
        Unauthenticated => "Unauthenticated",
    }
}
