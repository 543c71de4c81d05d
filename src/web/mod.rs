//! The web side of the server's port: the page at `/` (static files embedded in the binary;
//! the page draws the boards itself from `packed` records), its settings at
//! `/settings.json`, gRPC-Web calls marked and passed on (tonic-web translates them), and
//! CORS for pages of other origins (`--cors-origin`). One tower layer, outermost, so that a
//! page's files and a browser's preflight are answered before the gate: they need no token
//! and run no search.
//!
//! With the web side off (`--no-web`) every request passes untouched, except gRPC-Web calls,
//! refused with 415; the server then accepts HTTP/2 only.
//!
//! # Layout
//! - `assets.rs`: the page's files, built from `web/` and committed under `web/dist/`.
//! - `cors.rs`: the CORS rules (tower-http's layer), the `--cors-origin` parser, the
//!   preflight's status.
//! - `reply.rs`: the small answers made here (bytes, a line of text).
//! - here: which request is which, and the answers made here.
//!
//! Not here: HTTP/1.1 and the connection clocks (`crate::server`), the gRPC-Web framing
//! (the `tonic-web` crate), the gate every call passes (`crate::server`).

mod assets;
mod cors;
mod reply;

pub use self::cors::{OriginError, origin as cors_origin};

use self::reply::{full, text};
use crate::config::Config;
use bytes::Bytes;
use http::header::{self, HeaderValue};
use http::{Method, Request, Response, StatusCode};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use tonic::body::Body;
use tower_http::cors::Cors;

/// The page's Content-Security-Policy: its own script, style and calls only, nothing inline,
/// never framed.
const PAGE_POLICY: &str = "default-src 'none'; script-src 'self'; style-src 'self'; \
     connect-src 'self'; img-src 'self' data: blob:; base-uri 'none'; form-action 'none'; \
     frame-ancestors 'none'";

/// Marks a request as a gRPC-Web call (for its log line); set before the call reaches the
/// gate.
#[derive(Clone, Copy, Debug)]
pub struct GrpcWeb;

/// The web side's settings, shared by every connection.
#[derive(Clone, Debug)]
pub struct WebLayer {
    shared: Arc<Shared>,
}

#[derive(Debug)]
struct Shared {
    /// The page and gRPC-Web are served (`--no-web` turns them off).
    on: bool,
    /// Which other origins' pages may call: wraps every connection's services, but only
    /// preflights and gRPC-Web calls pass through it.
    cors: tower_http::cors::CorsLayer,
    /// `/settings.json`: what the page needs to know of the server.
    settings: Bytes,
}

impl WebLayer {
    /// The web side `config` asks for.
    pub fn new(config: &Config) -> WebLayer {
        let settings = serde_json::json!({
            "max_n": config.max_n,
            "tokens": config.tokens.is_some(),
        });
        WebLayer {
            shared: Arc::new(Shared {
                on: config.web,
                cors: cors::layer(&config.cors_origins),
                settings: Bytes::from(settings.to_string()),
            }),
        }
    }
}

impl<S> tower_layer::Layer<S> for WebLayer {
    type Service = Web<S>;

    fn layer(&self, inner: S) -> Web<S> {
        Web {
            inner: tower_layer::Layer::layer(&self.shared.cors, inner),
            shared: self.shared.clone(),
        }
    }
}

/// The web side in front of one connection's services.
#[derive(Clone, Debug)]
pub struct Web<S> {
    /// The services behind, in the CORS layer (`get_mut` reaches past it).
    inner: Cors<S>,
    shared: Arc<Shared>,
}

impl<S> tower_service::Service<Request<Body>> for Web<S>
where
    S: tower_service::Service<Request<Body>, Response = Response<Body>>,
    S::Future: Send + 'static,
    S::Error: Send + 'static,
{
    type Response = Response<Body>;
    type Error = S::Error;
    type Future = Pin<Box<dyn Future<Output = Result<Response<Body>, S::Error>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), S::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, mut request: Request<Body>) -> Self::Future {
        let answer = |response| -> Self::Future { Box::pin(std::future::ready(Ok(response))) };
        let shared = &self.shared;
        let grpc_web = is_grpc_web(request.headers());
        if !shared.on {
            if grpc_web {
                let why = "gRPC-Web is off on this server (--no-web)";
                return answer(text(StatusCode::UNSUPPORTED_MEDIA_TYPE, why));
            }
            return Box::pin(self.inner.get_mut().call(request));
        }
        let method = request.method();
        if method == Method::OPTIONS
            && request
                .headers()
                .contains_key(header::ACCESS_CONTROL_REQUEST_METHOD)
        {
            let post = cors::asks_for_post(request.headers());
            let preflight = self.inner.call(request);
            return Box::pin(async move { Ok(cors::preflight(preflight.await?, post)) });
        }
        if method == Method::GET || method == Method::HEAD {
            return answer(shared.file(request.uri().path(), method == Method::HEAD));
        }
        if !grpc_web {
            return Box::pin(self.inner.get_mut().call(request));
        }
        request.extensions_mut().insert(GrpcWeb);
        let response = self.inner.call(request);
        Box::pin(async move {
            let mut response = response.await?;
            cors::call(response.headers_mut());
            Ok(response)
        })
    }
}

impl Shared {
    /// The answer to `GET path` (headers only for `HEAD`): a file of the page, the
    /// settings, or 404.
    fn file(&self, path: &str, head: bool) -> Response<Body> {
        let (bytes, content_type) = match assets::find(path) {
            Some(asset) => (Bytes::from_static(asset.bytes), asset.content_type),
            None if path == "/settings.json" => (self.settings.clone(), "application/json"),
            None => return text(StatusCode::NOT_FOUND, "not found"),
        };
        let length = bytes.len();
        let mut response = Response::new(if head { Body::empty() } else { full(bytes) });
        let headers = response.headers_mut();
        headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
        headers.insert(header::CONTENT_LENGTH, HeaderValue::from(length));
        // The files change with the binary: a browser asks again each time (cheap on the
        // loopback and small elsewhere), so a new server never runs an old page.
        headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
        headers.insert(
            header::X_CONTENT_TYPE_OPTIONS,
            HeaderValue::from_static("nosniff"),
        );
        headers.insert(
            header::REFERRER_POLICY,
            HeaderValue::from_static("no-referrer"),
        );
        if content_type.starts_with("text/html") {
            headers.insert(
                header::CONTENT_SECURITY_POLICY,
                HeaderValue::from_static(PAGE_POLICY),
            );
        }
        response
    }
}

/// Whether a request is a gRPC-Web call, by its content type (`application/grpc-web`,
/// `-text`, with or without `+proto`): the types tonic-web translates.
fn is_grpc_web(headers: &http::HeaderMap) -> bool {
    headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| {
            matches!(
                v,
                "application/grpc-web"
                    | "application/grpc-web+proto"
                    | "application/grpc-web-text"
                    | "application/grpc-web-text+proto"
            )
        })
}
