//! CORS for gRPC-Web calls from pages of other origins (`--cors-origin`): tower-http's
//! [`CorsLayer`] with our rules (the origins named, POST, the headers a gRPC-Web client sends,
//! `grpc-status`, `grpc-message` and `grpc-status-details-bin` exposed), the flag's parser, and two small corrections to
//! what the layer answers. Off unless origins are named: the server's own page is
//! same-origin and needs none of it.
//!
//! Kept by hand, because tower-http does otherwise:
//! - [`origin`]: the flag checked and normalised as a browser sends `Origin` (tower-http
//!   compares bytes and parses nothing), so that a typo is a usage error, not a silent refusal.
//! - [`preflight`]: tower-http answers every preflight 200 and leaves the browser to refuse;
//!   we answer 204 to an allowed origin asking for POST and 403, saying why, to any other, so
//!   that a misconfigured page shows the reason in its network log.
//! - [`call`]: tower-http adds `Access-Control-Expose-Headers` to every response; a response
//!   an origin may not read carries no CORS header at all.
//!
//! Not here: which requests are preflights or gRPC-Web calls (`mod.rs`), the flag itself
//! (`crate::cli`).

use http::header::{self, HeaderMap, HeaderName, HeaderValue};
use http::{Method, Response, StatusCode, Uri};
use std::time::Duration;
use tonic::body::Body;
use tower_http::cors::{AllowOrigin, CorsLayer};

/// Request headers a gRPC-Web client sends: the content type and the gRPC-Web marker,
/// Connect's and grpc-web's user agent, the deadline, a bearer token, trace context, and the
/// compression it accepts or uses.
const ALLOWED_HEADERS: [&str; 9] = [
    "content-type",
    "x-grpc-web",
    "x-user-agent",
    "grpc-timeout",
    "authorization",
    "traceparent",
    "tracestate",
    "grpc-accept-encoding",
    "grpc-encoding",
];

/// Response headers a page may read: the status of a call answered without a body
/// (trailers-only: a refusal, a bad request) comes in these headers, not in the body's
/// trailers frame.
const EXPOSED_HEADERS: [&str; 3] = ["grpc-status", "grpc-message", "grpc-status-details-bin"];

/// How long a browser may reuse a preflight's answer: Chromium's own cap (2 h).
const PREFLIGHT_MAX_AGE: Duration = Duration::from_secs(7200);

/// What an origin should look like, for every refusal of one.
const SHAPE: &str = "expected an origin such as https://example.com or http://localhost:8080 \
                     (scheme://host[:port], no path), or * for any";

/// Why a `--cors-origin` value is not an origin.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum OriginError {
    /// Not `scheme://host[:port]` at all.
    #[error("{SHAPE}")]
    Shape,
    /// A scheme other than http or https.
    #[error("{SHAPE}; the scheme must be http or https")]
    Scheme,
    /// A path, query or user name after the host.
    #[error("{SHAPE}; an origin has no path, query or user name")]
    Path,
}

/// Checks and normalises one `--cors-origin`: `*` (any origin), or `scheme://host[:port]`
/// as a browser sends it in `Origin` (lower case, no path, no default port).
pub fn origin(text: &str) -> Result<String, OriginError> {
    if text == "*" {
        return Ok(text.to_string());
    }
    let uri: Uri = text
        .to_ascii_lowercase()
        .parse()
        .map_err(|_| OriginError::Shape)?;
    let (Some(scheme), Some(authority)) = (uri.scheme_str(), uri.authority()) else {
        return Err(OriginError::Shape);
    };
    if !matches!(scheme, "http" | "https") {
        return Err(OriginError::Scheme);
    }
    if !matches!(uri.path(), "" | "/") || uri.query().is_some() || authority.as_str().contains('@')
    {
        return Err(OriginError::Path);
    }
    // `Uri` takes sub-delimiters and percent-escapes in a host; a browser's origin has none.
    let host = authority.host();
    let host_ok = !host.is_empty()
        && host
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_' | '[' | ']' | ':'));
    // What follows the host: nothing, or `:` and a port (`Authority::port` hides one
    // beyond 65535).
    let port = match &authority.as_str()[host.len()..] {
        "" => None,
        rest => Some(
            rest.strip_prefix(':')
                .and_then(|p| p.parse::<u16>().ok())
                .ok_or(OriginError::Shape)?,
        ),
    };
    if !host_ok {
        return Err(OriginError::Shape);
    }
    let default_port = if scheme == "http" { 80 } else { 443 };
    Ok(match port {
        Some(port) if port != default_port => format!("{scheme}://{host}:{port}"),
        _ => format!("{scheme}://{host}"),
    })
}

/// The CORS layer for these `--cors-origin` values (already normalised by [`origin`]).
pub(super) fn layer(origins: &[String]) -> CorsLayer {
    let allow = if origins.iter().any(|o| o == "*") {
        AllowOrigin::any()
    } else {
        // A normalised origin is printable ASCII: every one is a header value.
        AllowOrigin::list(origins.iter().filter_map(|o| HeaderValue::from_str(o).ok()))
    };
    CorsLayer::new()
        .allow_origin(allow)
        .allow_methods([Method::POST])
        .allow_headers(ALLOWED_HEADERS.map(HeaderName::from_static))
        .expose_headers(EXPOSED_HEADERS.map(HeaderName::from_static))
        .max_age(PREFLIGHT_MAX_AGE)
        // A public page calling a server on a private address asks first (Private Network
        // Access); an origin the operator named may.
        .allow_private_network(true)
}

/// Whether a preflight asks for POST, the only method gRPC-Web uses.
pub(super) fn asks_for_post(headers: &HeaderMap) -> bool {
    headers
        .get(header::ACCESS_CONTROL_REQUEST_METHOD)
        .is_some_and(|m| m.as_bytes().eq_ignore_ascii_case(b"POST"))
}

/// The answer to a preflight, from the layer's (`answer`): 204 for an allowed origin asking
/// for POST (`post`); 403, saying why, for any other.
pub(super) fn preflight(mut answer: Response<Body>, post: bool) -> Response<Body> {
    let allowed = answer
        .headers()
        .contains_key(header::ACCESS_CONTROL_ALLOW_ORIGIN);
    if allowed && post {
        *answer.status_mut() = StatusCode::NO_CONTENT;
        return answer;
    }
    let why = if post {
        "origin not allowed: name it with the server's --cors-origin"
    } else {
        "only POST is allowed (gRPC-Web)"
    };
    let mut refusal = super::reply::text(StatusCode::FORBIDDEN, why);
    if let Some(vary) = answer.headers().get(header::VARY) {
        refusal.headers_mut().insert(header::VARY, vary.clone());
    }
    refusal
}

/// Leaves a call's CORS headers only if its origin may read the response.
pub(super) fn call(headers: &mut HeaderMap) {
    if headers.contains_key(header::ACCESS_CONTROL_ALLOW_ORIGIN) {
        return;
    }
    let added: Vec<HeaderName> = headers
        .keys()
        .filter(|name| name.as_str().starts_with("access-control-"))
        .cloned()
        .collect();
    for name in added {
        headers.remove(name);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::Request;
    use std::convert::Infallible;
    use std::task::{Context, Poll};
    use tower_layer::Layer;
    use tower_service::Service;

    #[test]
    fn origins_are_normalised_or_refused() {
        for (given, normalised) in [
            ("*", "*"),
            ("HTTPS://Example.com/", "https://example.com"),
            ("https://example.com:443", "https://example.com"),
            ("http://example.com:80", "http://example.com"),
            ("http://localhost:8080", "http://localhost:8080"),
            ("http://[::1]:8080", "http://[::1]:8080"),
            ("http://[::1]", "http://[::1]"),
        ] {
            assert_eq!(origin(given).unwrap(), normalised, "{given:?}");
        }
        assert_eq!(origin("ftp://example.com"), Err(OriginError::Scheme));
        assert_eq!(origin("https://example.com/app"), Err(OriginError::Path));
        assert_eq!(origin("https://u@example.com"), Err(OriginError::Path));
        for bad in [
            "",
            "example.com",
            "https://",
            "https://example.com:99999",
            "https://exa mple.com",
            "https://ex\u{e9}.com",
            "https://ex!ample.com",
        ] {
            assert!(origin(bad).is_err(), "{bad:?} was accepted");
        }
        assert!(OriginError::Path.to_string().contains("no path"));
    }

    /// Asserts that the header `name` of `h` is there and lists `item`.
    fn assert_lists(h: &http::HeaderMap, name: http::HeaderName, item: &str) {
        let value = h[&name].to_str().unwrap();
        assert!(value.contains(item), "{name}: {value:?} lacks {item:?}");
    }

    /// What the layer for `origins`, then [`preflight`] or [`call`], answers a request with
    /// these headers.
    fn answer(origins: &[&str], method: Method, pairs: &[(&'static str, &str)]) -> Response<Body> {
        let origins: Vec<String> = origins.iter().map(|o| o.to_string()).collect();
        let mut cors = layer(&origins).layer(Empty);
        let mut request = Request::builder().method(method.clone());
        for (name, value) in pairs {
            request = request.header(*name, *value);
        }
        let request = request.body(Body::empty()).unwrap();
        let post = asks_for_post(request.headers());
        let runtime = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        let mut response = runtime.block_on(cors.call(request)).unwrap();
        if method == Method::OPTIONS {
            return preflight(response, post);
        }
        call(response.headers_mut());
        response
    }

    /// The service behind the layer: an empty answer to every call.
    #[derive(Clone)]
    struct Empty;

    impl Service<Request<Body>> for Empty {
        type Response = Response<Body>;
        type Error = Infallible;
        type Future = std::future::Ready<Result<Response<Body>, Infallible>>;

        fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
            Poll::Ready(Ok(()))
        }

        fn call(&mut self, _: Request<Body>) -> Self::Future {
            std::future::ready(Ok(Response::new(Body::empty())))
        }
    }

    #[test]
    fn only_named_origins_may_read_a_call() {
        let a = [("origin", "https://a.example")];
        let b = [("origin", "https://b.example")];
        let named = ["https://a.example"];
        let read = answer(&named, Method::POST, &a);
        let h = read.headers();
        assert_eq!(h[header::ACCESS_CONTROL_ALLOW_ORIGIN], "https://a.example");
        assert_lists(h, header::ACCESS_CONTROL_EXPOSE_HEADERS, "grpc-message");
        for (origins, pairs) in [(&named[..], &b[..]), (&named, &[]), (&[], &a)] {
            let refused = answer(origins, Method::POST, pairs);
            assert!(
                !refused
                    .headers()
                    .keys()
                    .any(|k| k.as_str().starts_with("access-control-")),
                "{:?}",
                refused.headers()
            );
        }
        let any = answer(&["*"], Method::POST, &b);
        assert_eq!(any.headers()[header::ACCESS_CONTROL_ALLOW_ORIGIN], "*");
    }

    #[test]
    fn preflights_are_answered_for_allowed_origins_only() {
        let named = ["https://a.example"];
        let ok = answer(
            &named,
            Method::OPTIONS,
            &[
                ("origin", "https://a.example"),
                ("access-control-request-method", "POST"),
                ("access-control-request-private-network", "true"),
            ],
        );
        assert_eq!(ok.status(), StatusCode::NO_CONTENT);
        let h = ok.headers();
        assert_eq!(h[header::ACCESS_CONTROL_ALLOW_ORIGIN], "https://a.example");
        assert_eq!(h[header::ACCESS_CONTROL_ALLOW_METHODS], "POST");
        assert_eq!(h[header::ACCESS_CONTROL_MAX_AGE], "7200");
        assert_lists(h, header::ACCESS_CONTROL_ALLOW_HEADERS, "x-grpc-web");
        assert_eq!(h["access-control-allow-private-network"], "true");
        for (origin, method) in [
            ("https://b.example", "POST"),
            ("https://a.example", "DELETE"),
        ] {
            let refused = answer(
                &named,
                Method::OPTIONS,
                &[
                    ("origin", origin),
                    ("access-control-request-method", method),
                ],
            );
            assert_eq!(refused.status(), StatusCode::FORBIDDEN);
            assert!(
                !refused
                    .headers()
                    .contains_key(header::ACCESS_CONTROL_ALLOW_ORIGIN)
            );
        }
    }
}
