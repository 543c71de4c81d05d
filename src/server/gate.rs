//! The gate every request passes before it reaches a service: the server-wide bound on
//! requests in flight (`--max-requests`) and each client's share of it
//! (`--max-requests-per-client`), the caller's identity (`auth.rs`), the call's log
//! line (with its protocol: gRPC, or gRPC-Web as the web side marked it), metrics and span,
//! and the per-call extensions the service reads (the types are the
//! service's: `ClientId`, `Arrived`, `Calls`, `CallNote`). Each request counts as an open stream of its
//! connection until its response body ends.
//!
//! Not here: the connection limits and clocks (`listen.rs`), how a caller is identified
//! (`auth.rs`), the search slots themselves (`crate::service`).

use super::auth;
use super::listen::{ConnInfo, StreamGuard};
use crate::config::Tokens;
use crate::service::{Arrived, CallNote, Calls, ClientId, Error, Share, Shares};
use crate::web::GrpcWeb;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tonic::Status;
use tonic::body::Body;

/// The gate's settings, shared by every connection.
#[derive(Clone, Debug)]
pub(super) struct GateLayer {
    inner: Arc<Shared>,
}

#[derive(Debug)]
struct Shared {
    tokens: Option<Tokens>,
    in_flight: Arc<Semaphore>,
    max_requests: usize,
    /// Requests in flight per client: no client holds more than its share of `in_flight`.
    shares: Shares,
}

impl GateLayer {
    /// A gate admitting `max_requests` at once, at most `per_client` of them from one client,
    /// checking `tokens` when given.
    pub(super) fn new(tokens: Option<Tokens>, max_requests: usize, per_client: usize) -> GateLayer {
        GateLayer {
            inner: Arc::new(Shared {
                tokens,
                in_flight: Arc::new(Semaphore::new(max_requests)),
                max_requests,
                shares: Shares::new(per_client),
            }),
        }
    }
}

impl<S> tower_layer::Layer<S> for GateLayer {
    type Service = Gate<S>;

    fn layer(&self, inner: S) -> Gate<S> {
        Gate {
            inner,
            shared: self.inner.clone(),
        }
    }
}

/// The gate in front of one connection's services.
#[derive(Clone, Debug)]
pub(super) struct Gate<S> {
    inner: S,
    shared: Arc<Shared>,
}

/// What a request holds while it is in flight: its place under `--max-requests`, its place in
/// its client's share, and its count as an open stream of its connection.
struct Held {
    _permit: OwnedSemaphorePermit,
    _share: Share,
    _stream: Option<StreamGuard>,
    /// The call's log line, written when the call ends.
    log: CallLog,
}

/// What the log line of one call says (written at INFO when the call ends).
struct CallLog {
    method: String,
    /// `grpc`, or `grpc-web` for a call the web side marked.
    protocol: &'static str,
    peer: Option<std::net::SocketAddr>,
    client: ClientId,
    started: std::time::Instant,
    /// The call's gRPC status code, once seen (in the response headers or the trailers).
    code: Option<tonic::Code>,
    /// What the service noted.
    note: Arc<CallNote>,
    /// The call's metric labels, worked out once at its start.
    labels: super::metrics::Labels,
    /// The call's span (closed when the log line is written) and its trace.
    span: super::traces::CallSpan,
}

impl CallLog {
    /// Notes the status code if `headers` carry one.
    fn see(&mut self, headers: &http::HeaderMap) {
        if let Some(code) = headers
            .get("grpc-status")
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.parse::<i32>().ok())
        {
            self.code = Some(tonic::Code::from_i32(code));
        }
    }
}

impl Drop for CallLog {
    fn drop(&mut self) {
        use std::sync::atomic::Ordering::Relaxed;
        // A body dropped before its trailers: the client went away.
        let code = self.code.unwrap_or(tonic::Code::Cancelled);
        let note = &self.note;
        let n = Some(note.n.load(Relaxed)).filter(|&n| n > 0);
        let solutions = Some(note.solutions.load(Relaxed)).filter(|&s| s != u64::MAX);
        let boards = Some(note.boards.load(Relaxed))
            .filter(|_| self.method.ends_with("/Enumerate") || self.method.ends_with("/DoGet"));
        let seconds = self.started.elapsed().as_secs_f64();
        let kind = self.labels.kind;
        let messages = match (kind, code) {
            ("unary", tonic::Code::Ok) => 1,
            ("unary", _) => 0,
            _ => note.messages.load(Relaxed),
        };
        super::metrics::handled(&self.labels, code, seconds, messages);
        super::traces::finish(&self.span.span, code);
        tracing::info!(
            target: "queens::call",
            method = %self.method,
            protocol = self.protocol,
            peer = %self.peer.map_or("-".to_string(), |p| p.to_string()),
            client = %self.client,
            code = ?code,
            duration_ms = seconds * 1e3,
            n,
            solutions,
            boards,
            trace_id = self.span.trace_id.as_deref(),
            "call"
        );
    }
}

impl<S> tower_service::Service<http::Request<Body>> for Gate<S>
where
    S: tower_service::Service<http::Request<Body>, Response = http::Response<Body>>,
    S::Future: Send + 'static,
    S::Error: Send + 'static,
{
    type Response = http::Response<Body>;
    type Error = S::Error;
    type Future = Pin<Box<dyn Future<Output = Result<Self::Response, S::Error>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), S::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, mut request: http::Request<Body>) -> Self::Future {
        request
            .extensions_mut()
            .insert(Arrived(std::time::Instant::now()));
        let conn = request.extensions().get::<ConnInfo>().cloned();
        let protocol = match request.extensions().get::<GrpcWeb>() {
            Some(GrpcWeb) => "grpc-web",
            None => "grpc",
        };
        let labels = super::metrics::labels(request.uri().path());
        super::metrics::started(&labels);
        // Counted first: even a refused request is an open stream until its answer is sent.
        let stream = conn.as_ref().map(|c| c.state.opened());
        let permit = match self.shared.in_flight.clone().try_acquire_owned() {
            Ok(permit) => permit,
            Err(_) => {
                let limit = self.shared.max_requests;
                return shed(&request, &labels, "max_requests", Error::Requests { limit });
            }
        };
        let client = match auth::identify(self.shared.tokens.as_ref(), &request, conn.as_ref()) {
            Ok(client) => client,
            Err(status) => {
                tracing::info!(
                    target: "queens::call",
                    method = request.uri().path(),
                    protocol,
                    peer = %conn.as_ref().map_or("-".to_string(), |c| c.remote.to_string()),
                    code = ?status.code(),
                    "refused: {}",
                    status.message()
                );
                super::metrics::handled(&labels, status.code(), 0.0, 0);
                return refuse(status);
            }
        };
        let Some(share) = self.shared.shares.take(&client) else {
            let refusal = Error::ClientRequests {
                client: client.to_string(),
                limit: self.shared.shares.per_client(),
            };
            return shed(&request, &labels, "max_requests_per_client", refusal);
        };
        if let Some(conn) = &conn {
            // `Request::remote_addr` reads this.
            request
                .extensions_mut()
                .insert(tonic::transport::server::TcpConnectInfo {
                    local_addr: None,
                    remote_addr: Some(conn.remote),
                });
        }
        let note = Arc::new(CallNote::default());
        let span = super::traces::call_span(&labels, request.headers());
        let log = CallLog {
            method: request.uri().path().to_string(),
            protocol,
            peer: conn.as_ref().map(|c| c.remote),
            client: client.clone(),
            started: std::time::Instant::now(),
            code: None,
            note: note.clone(),
            labels,
            span,
        };
        request
            .extensions_mut()
            .insert(Calls(self.shared.shares.held_by(&client)));
        request.extensions_mut().insert(client);
        request.extensions_mut().insert(note);
        let mut held = Held {
            _permit: permit,
            _share: share,
            _stream: stream,
            log,
        };
        let response = {
            let _entered = held.log.span.span.enter();
            self.inner.call(request)
        };
        let response = tracing::Instrument::instrument(response, held.log.span.span.clone());
        Box::pin(async move {
            let response = response.await?;
            held.log.see(response.headers());
            Ok(response.map(|body| Body::new(Guarded { body, held })))
        })
    }
}

/// A request shed at once for `why` (RESOURCE_EXHAUSTED, its details from the service's one
/// mapping): counted under `reason` and in the gRPC metrics, and logged at DEBUG only (a flood
/// would write a line per refused stream).
fn shed<B, E: Send + 'static>(
    request: &http::Request<B>,
    labels: &super::metrics::Labels,
    reason: &'static str,
    why: Error,
) -> Pin<Box<dyn Future<Output = Result<http::Response<Body>, E>> + Send>> {
    tracing::debug!(method = request.uri().path(), reason, "shed: {why}");
    metrics::counter!("queens_requests_shed_total", "reason" => reason).increment(1);
    let status = Status::from(why);
    super::metrics::handled(labels, status.code(), 0.0, 0);
    refuse(status)
}

/// A refusal as a complete gRPC response (trailers only).
fn refuse<E: Send + 'static>(
    status: Status,
) -> Pin<Box<dyn Future<Output = Result<http::Response<Body>, E>> + Send>> {
    Box::pin(std::future::ready(Ok(status.into_http())))
}

/// A response body that holds the request's place until the body ends.
struct Guarded<B> {
    body: B,
    held: Held,
}

impl<B: http_body::Body + Unpin> http_body::Body for Guarded<B> {
    type Data = B::Data;
    type Error = B::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<http_body::Frame<B::Data>, B::Error>>> {
        let this = self.get_mut();
        let frame = Pin::new(&mut this.body).poll_frame(cx);
        if let Poll::Ready(Some(Ok(frame))) = &frame
            && let Some(trailers) = frame.trailers_ref()
        {
            this.held.log.see(trailers);
        }
        frame
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.body.size_hint()
    }
}
