//! Traces: an OTLP trace receiver runs in this process (a tonic server for the OTLP
//! `TraceService`, from the `opentelemetry-proto` crate); the `queens` binary, started with
//! `--otlp-endpoint` pointing at it, exports one span per call. A call carrying a W3C
//! `traceparent` arrives as a child span of that trace, named after the method, with the
//! gRPC attributes, and the call's JSON log line carries the same trace id; a call without
//! one starts a trace of its own; a gRPC-Web call is traced the same; and without an
//! exporter the log line still names the caller's trace.

use crate::common;

use common::{ServerProcess, count_request, open_stream};
use opentelemetry_proto::tonic::collector::trace::v1::trace_service_server::{
    TraceService, TraceServiceServer,
};
use opentelemetry_proto::tonic::collector::trace::v1::{
    ExportTraceServiceRequest, ExportTraceServiceResponse,
};
use opentelemetry_proto::tonic::common::v1::any_value::Value;
use opentelemetry_proto::tonic::trace::v1::Span;
use std::time::{Duration, Instant};
use tokio::sync::mpsc;

/// The trace and parent span the tests' calls claim to come from.
const TRACE_ID: &str = "4bf92f3577b34da6a3ce929d0e0e4736";
const PARENT_SPAN_ID: &str = "00f067aa0ba902b7";

/// A collector that hands every span it receives to the test, with its resource's
/// `service.name`.
struct Receiver(mpsc::UnboundedSender<(String, Span)>);

#[tonic::async_trait]
impl TraceService for Receiver {
    async fn export(
        &self,
        request: tonic::Request<ExportTraceServiceRequest>,
    ) -> Result<tonic::Response<ExportTraceServiceResponse>, tonic::Status> {
        for resource_spans in request.into_inner().resource_spans {
            let service = resource_spans
                .resource
                .iter()
                .flat_map(|r| &r.attributes)
                .find(|kv| kv.key == "service.name")
                .and_then(|kv| string(kv.value.as_ref()?.value.as_ref()?))
                .unwrap_or_default();
            for scope in resource_spans.scope_spans {
                for span in scope.spans {
                    let _ = self.0.send((service.clone(), span));
                }
            }
        }
        Ok(tonic::Response::new(ExportTraceServiceResponse::default()))
    }
}

/// A string attribute's text.
fn string(value: &Value) -> Option<String> {
    match value {
        Value::StringValue(s) => Some(s.clone()),
        _ => None,
    }
}

/// The span's attribute `key`, if set.
fn attribute(span: &Span, key: &str) -> Option<Value> {
    span.attributes
        .iter()
        .find(|kv| kv.key == key)
        .and_then(|kv| kv.value.as_ref()?.value.clone())
}

/// Starts the receiver on a free loopback port; returns its URL and the spans it receives.
async fn receiver() -> (String, mpsc::UnboundedReceiver<(String, Span)>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let url = format!("http://{}", listener.local_addr().unwrap());
    let (tx, rx) = mpsc::unbounded_channel();
    tokio::spawn(
        tonic::transport::Server::builder()
            .add_service(TraceServiceServer::new(Receiver(tx)))
            .serve_with_incoming(tokio_stream::wrappers::TcpListenerStream::new(listener)),
    );
    (url, rx)
}

/// The next span named `name` within 20 s.
async fn span_named(
    rx: &mut mpsc::UnboundedReceiver<(String, Span)>,
    name: &str,
) -> (String, Span) {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        match tokio::time::timeout(left, rx.recv()).await {
            Ok(Some((service, span))) if span.name == name => return (service, span),
            Ok(Some(_)) => continue,
            _ => panic!("no span {name:?} within 20 s"),
        }
    }
}

/// A Count request carrying `traceparent` (sampled) for [`TRACE_ID`] / [`PARENT_SPAN_ID`].
fn traced_count(n: u32) -> tonic::Request<queens::pb::CountRequest> {
    let mut request = tonic::Request::new(count_request(n));
    request.metadata_mut().insert(
        "traceparent",
        format!("00-{TRACE_ID}-{PARENT_SPAN_ID}-01")
            .parse()
            .unwrap(),
    );
    request
}

/// Lower-case hex of `bytes`.
fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// A server exporting to the in-process receiver (batches sent every 100 ms).
async fn traced_server() -> (ServerProcess, mpsc::UnboundedReceiver<(String, Span)>) {
    let (url, rx) = receiver().await;
    let server = ServerProcess::start_with_env(
        &[("OTEL_BSP_SCHEDULE_DELAY", "100")],
        &["--otlp-endpoint", &url, "--log-format", "json"],
    );
    (server, rx)
}

/// A call with `traceparent` arrives as a server span of that trace, a child of the
/// caller's span, named and labelled after the method; its log line names the trace.
#[tokio::test]
async fn a_traced_call_arrives_as_a_child_span_of_its_trace() {
    let (server, mut spans) = traced_server().await;
    let mut client = server.client().await;
    let answer = client.count(traced_count(8)).await.expect("count");
    assert_eq!(answer.into_inner().solutions, 92);

    let (service, span) = span_named(&mut spans, "queens.v1.Queens/Count").await;
    eprintln!("received span: {span:?}");
    assert_eq!(service, "queens");
    assert_eq!(hex(&span.trace_id), TRACE_ID);
    assert_eq!(hex(&span.parent_span_id), PARENT_SPAN_ID);
    assert_eq!(span.kind, 2, "SPAN_KIND_SERVER");
    assert_eq!(
        attribute(&span, "rpc.method"),
        Some(Value::StringValue("Count".into()))
    );
    assert_eq!(
        attribute(&span, "rpc.service"),
        Some(Value::StringValue("queens.v1.Queens".into()))
    );
    assert_eq!(
        attribute(&span, "rpc.system"),
        Some(Value::StringValue("grpc".into()))
    );
    assert_eq!(
        attribute(&span, "rpc.grpc.status_code"),
        Some(Value::IntValue(0))
    );
    assert!(span.end_time_unix_nano >= span.start_time_unix_nano);

    let line = server.next_log("call");
    assert_eq!(line["method"], "/queens.v1.Queens/Count", "{line}");
    assert_eq!(line["trace_id"], TRACE_ID, "{line}");

    // A failed call is a span too, with its code.
    let status = client.count(traced_count(0)).await.unwrap_err();
    assert_eq!(status.code(), tonic::Code::InvalidArgument);
    let (_, span) = span_named(&mut spans, "queens.v1.Queens/Count").await;
    assert_eq!(hex(&span.trace_id), TRACE_ID);
    assert_eq!(
        attribute(&span, "rpc.grpc.status_code"),
        Some(Value::IntValue(tonic::Code::InvalidArgument as i64))
    );
}

/// A gRPC-Web call (HTTP/1.0, as from a page) is a span like any call: of its caller's trace,
/// with its status; its log line names the trace and the protocol.
#[tokio::test]
async fn a_grpc_web_call_is_a_span_too() {
    let (server, mut spans) = traced_server().await;
    let traceparent = format!("00-{TRACE_ID}-{PARENT_SPAN_ID}-01");
    let addr = server.addr;
    let answer = tokio::task::spawn_blocking(move || {
        crate::web::grpc_web_call(
            addr,
            "Count",
            &prost::Message::encode_to_vec(&count_request(8)),
            &[("traceparent", &traceparent)],
        )
    })
    .await
    .expect("the call's thread");
    assert_eq!(answer.status, Some(0), "{}", answer.head);
    let (_, span) = span_named(&mut spans, "queens.v1.Queens/Count").await;
    assert_eq!(hex(&span.trace_id), TRACE_ID);
    assert_eq!(hex(&span.parent_span_id), PARENT_SPAN_ID);
    assert_eq!(
        attribute(&span, "rpc.grpc.status_code"),
        Some(Value::IntValue(0))
    );
    let line = server.next_log("call");
    assert_eq!(line["protocol"], "grpc-web", "{line}");
    assert_eq!(line["trace_id"], TRACE_ID, "{line}");
}

/// A call without `traceparent` starts a trace of its own, the one its log line names.
#[tokio::test]
async fn an_untraced_call_starts_a_trace() {
    let (server, mut spans) = traced_server().await;
    let mut client = server.client().await;
    let mut stream = open_stream(&mut client, 6, false).await;
    while stream.message().await.expect("stream").is_some() {}
    let (_, span) = span_named(&mut spans, "queens.v1.Queens/Enumerate").await;
    assert!(span.parent_span_id.is_empty(), "a root span: {span:?}");
    assert_eq!(span.trace_id.len(), 16);
    assert_ne!(hex(&span.trace_id), "0".repeat(32));
    let line = server.next_log("call");
    assert_eq!(line["trace_id"], hex(&span.trace_id), "{line}");
}

/// Without `--otlp-endpoint` nothing is exported, but the log line still names the caller's
/// trace, so logs and the caller's traces can be joined.
#[tokio::test]
async fn without_an_exporter_the_log_still_names_the_trace() {
    let server = ServerProcess::start(&["--log-format", "json"]);
    let mut client = server.client().await;
    client.count(traced_count(6)).await.expect("count");
    let line = server.next_log("call");
    assert_eq!(line["trace_id"], TRACE_ID, "{line}");
    client.count(count_request(6)).await.expect("count");
    let line = server.next_log("call");
    assert!(line.get("trace_id").is_none(), "no trace, no id: {line}");
}
