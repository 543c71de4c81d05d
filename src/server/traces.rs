//! Traces: one `tracing` span per call (`rpc.system = grpc`, service, method, status code),
//! a child of the caller's span when the request carries a W3C `traceparent`, and, with
//! `--otlp-endpoint`, exported over OTLP/gRPC by the SDK's batch processor (a thread of its
//! own, sending through a tonic channel whose connection lives on the server's runtime). The trace id goes into the call's log line whether or not spans are exported.
//!
//! Not here: the log writer (`logs.rs`), where the call's span is opened and closed
//! (`gate.rs`).

use opentelemetry::propagation::{Extractor, TextMapPropagator};
use opentelemetry::trace::{TraceContextExt, TracerProvider as _};
use opentelemetry_otlp::WithExportConfig;
use opentelemetry_sdk::propagation::TraceContextPropagator;
use opentelemetry_sdk::trace::SdkTracerProvider;
use tracing_opentelemetry::OpenTelemetrySpanExt;

/// Why the OTLP exporter could not be set up.
#[derive(Debug, thiserror::Error)]
#[error("--otlp-endpoint: {0}")]
pub struct TracesError(#[from] opentelemetry_otlp::ExporterBuildError);

/// The span exporter while it runs; [`Traces::shutdown`] sends what is still queued.
#[derive(Debug)]
pub struct Traces {
    provider: SdkTracerProvider,
}

impl Traces {
    /// Exports the spans still queued and stops the exporter (waits at most a few seconds
    /// for the collector).
    pub async fn shutdown(self) {
        let provider = self.provider;
        // Shutting down blocks until the last batch is sent, and sending needs the runtime:
        // wait from a blocking thread, never a runtime one.
        let stopped = tokio::task::spawn_blocking(move || {
            provider.shutdown_with_timeout(std::time::Duration::from_secs(5))
        })
        .await;
        if let Ok(Err(error)) = stopped {
            tracing::warn!("traces: the last spans were not exported: {error}");
        }
    }
}

/// Whether call spans are exported (set once an exporter is installed): without an exporter
/// no span is made at all, and the trace id comes from the caller's `traceparent`.
static EXPORTING: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// The name of the spans' target, for the filter that passes only call spans to OTLP.
pub(super) const TARGET: &str = "queens::span";

/// The `tracing` layer that turns call spans into OpenTelemetry spans.
pub(super) type CallSpans<S> =
    tracing_opentelemetry::OpenTelemetryLayer<S, opentelemetry_sdk::trace::SdkTracer>;

/// An OTLP/gRPC exporter to `endpoint` (e.g. `http://127.0.0.1:4317`) and the `tracing`
/// layer that feeds it. Must run inside the Tokio runtime (the exporter's connection is a
/// task on it). Resource attributes follow the `OTEL_*` environment variables
/// (`OTEL_SERVICE_NAME` overrides `queens`); the batch delay `OTEL_BSP_SCHEDULE_DELAY`.
pub(super) fn exporter<S>(endpoint: &str) -> Result<(CallSpans<S>, Traces), TracesError>
where
    S: tracing::Subscriber + for<'a> tracing_subscriber::registry::LookupSpan<'a>,
{
    let exporter = opentelemetry_otlp::SpanExporter::builder()
        .with_tonic()
        .with_endpoint(endpoint)
        .build()?;
    // The SDK's batch processor: spans go into a bounded queue and a thread of its own
    // wakes once per batch (the runtime-task variant woke a task per span: measured 8-10 %
    // more CPU per call at Count n = 8).
    let processor = opentelemetry_sdk::trace::BatchSpanProcessor::builder(exporter).build();
    let mut resource = opentelemetry_sdk::Resource::builder();
    if std::env::var_os("OTEL_SERVICE_NAME").is_none() {
        resource = resource.with_service_name("queens");
    }
    let provider = SdkTracerProvider::builder()
        .with_span_processor(processor)
        .with_resource(resource.build())
        .build();
    let tracer = provider.tracer("queens");
    EXPORTING.store(true, std::sync::atomic::Ordering::Relaxed);
    let layer = tracing_opentelemetry::layer()
        .with_tracer(tracer)
        .with_tracked_inactivity(false)
        .with_location(false)
        .with_threads(false);
    Ok((layer, Traces { provider }))
}

/// A call's span and the trace it belongs to.
pub(super) struct CallSpan {
    /// The span, open until the call's response ends.
    pub span: tracing::Span,
    /// The trace id (32 hex digits): the span's own when spans are exported, else the
    /// caller's from `traceparent`, else none.
    pub trace_id: Option<String>,
}

/// Opens the span of a call to the method `labels` names, a child of the trace in `headers`
/// (`traceparent`, `tracestate`) if they carry one.
pub(super) fn call_span(labels: &super::metrics::Method, headers: &http::HeaderMap) -> CallSpan {
    let parent = headers
        .contains_key("traceparent")
        .then(|| TraceContextPropagator::new().extract(&Headers(headers)));
    if !EXPORTING.load(std::sync::atomic::Ordering::Relaxed) {
        let trace_id = parent
            .map(|p| p.span().span_context().clone())
            .filter(|c| c.is_valid())
            .map(|c| c.trace_id().to_string());
        return CallSpan {
            span: tracing::Span::none(),
            trace_id,
        };
    }
    let span = tracing::info_span!(
        target: TARGET,
        "call",
        otel.name = labels.full_name,
        otel.kind = "server",
        rpc.system = "grpc",
        rpc.service = labels.service,
        rpc.method = labels.method,
        rpc.grpc.status_code = tracing::field::Empty,
        otel.status_code = tracing::field::Empty,
    );
    if let Some(parent) = parent {
        // Cannot fail: the span is new and the exporter's layer is installed.
        let _ = span.set_parent(parent);
    }
    let own = span.context().span().span_context().clone();
    let trace_id = own.is_valid().then(|| own.trace_id().to_string());
    CallSpan { span, trace_id }
}

/// Records how the call ended on its span; server errors mark the span as failed.
pub(super) fn finish(span: &tracing::Span, code: tonic::Code) {
    use tonic::Code::*;
    span.record("rpc.grpc.status_code", code as i64);
    // The OpenTelemetry conventions: only these codes are the server's fault.
    if matches!(
        code,
        Unknown | DeadlineExceeded | Unimplemented | Internal | Unavailable | DataLoss
    ) {
        span.record("otel.status_code", "ERROR");
    }
}

/// Request headers as the propagator reads them.
struct Headers<'a>(&'a http::HeaderMap);

impl Extractor for Headers<'_> {
    fn get(&self, key: &str) -> Option<&str> {
        self.0.get(key).and_then(|v| v.to_str().ok())
    }

    fn keys(&self) -> Vec<&str> {
        self.0.keys().map(|k| k.as_str()).collect()
    }
}
