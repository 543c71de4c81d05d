//! CORS for gRPC-Web calls from pages of other origins (`--cors-origin`): which origins are
//! allowed, the answer to a browser's preflight, and the headers an allowed call's response
//! carries (so that the page can read `grpc-status` and `grpc-message`). Off unless origins
//! are named: the server's own page is same-origin and needs none of it.
//!
//! Not here: which requests are preflights or gRPC-Web calls (`mod.rs`), the flag itself
//! (`crate::cli`).

use http::header::{self, HeaderMap, HeaderValue};
use http::{Response, StatusCode};
use tonic::body::Body;

/// Request headers a gRPC-Web client sends: the content type and the gRPC-Web marker,
/// Connect's and grpc-web's user agent, the deadline, a bearer token, trace context, and the
/// compression it accepts or uses.
const ALLOWED_HEADERS: &str = "content-type, x-grpc-web, x-user-agent, grpc-timeout, \
     authorization, traceparent, tracestate, grpc-accept-encoding, grpc-encoding";

/// Response headers a page may read: the status of a call answered without a body
/// (trailers-only: a refusal, a bad request) comes in these headers, not in the body's
/// trailers frame.
const EXPOSED_HEADERS: &str = "grpc-status, grpc-message, grpc-status-details-bin";

/// How long a browser may reuse a preflight's answer, in seconds: Chromium's own cap (2 h).
const PREFLIGHT_MAX_AGE: &str = "7200";

/// Checks and normalises one `--cors-origin`: `*` (any origin), or `scheme://host[:port]`
/// as a browser sends it in `Origin` (lower case, no path, no default port).
pub fn origin(text: &str) -> Result<String, String> {
    let shape = "expected an origin such as https://example.com or http://localhost:8080 \
                 (scheme://host[:port], no path), or * for any";
    if text == "*" {
        return Ok(text.to_string());
    }
    let lower = text.to_ascii_lowercase();
    let (scheme, rest) = lower.split_once("://").ok_or(shape)?;
    if !matches!(scheme, "http" | "https") {
        return Err(format!("{shape}; the scheme must be http or https"));
    }
    let authority = rest.strip_suffix('/').unwrap_or(rest);
    // An IPv6 host is bracketed; a port follows the host's last colon.
    let (host, port) = match authority.rfind(':') {
        Some(colon) if !authority[colon..].contains(']') => {
            let port = authority[colon + 1..]
                .parse::<u16>()
                .map_err(|_| shape.to_string())?;
            (&authority[..colon], Some(port))
        }
        _ => (authority, None),
    };
    let bracketed = host.starts_with('[') && host.ends_with(']') && host.len() > 2;
    if !bracketed && host.contains(['[', ']', ':']) {
        return Err(shape.to_string());
    }
    let host_ok = !host.is_empty()
        && host
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_' | '[' | ']' | ':'));
    if !host_ok {
        return Err(shape.to_string());
    }
    let default_port = if scheme == "http" { 80 } else { 443 };
    Ok(match port {
        Some(port) if port != default_port => format!("{scheme}://{host}:{port}"),
        _ => format!("{scheme}://{host}"),
    })
}

/// The origins allowed to call from their pages.
#[derive(Clone, Debug, Default)]
pub(super) struct Cors {
    /// `*` was named: any origin.
    any: bool,
    /// The origins named, normalised as [`origin`] does.
    origins: Vec<String>,
}

impl Cors {
    /// The rules for these `--cors-origin` values (already normalised).
    pub(super) fn new(origins: &[String]) -> Cors {
        Cors {
            any: origins.iter().any(|o| o == "*"),
            origins: origins.iter().filter(|o| *o != "*").cloned().collect(),
        }
    }

    /// The `Access-Control-Allow-Origin` value for a request with these headers: `*` when
    /// any origin is allowed, its own origin when named, else none.
    pub(super) fn allow(&self, headers: &HeaderMap) -> Option<HeaderValue> {
        let origin = headers.get(header::ORIGIN)?;
        if self.any {
            return Some(HeaderValue::from_static("*"));
        }
        let text = origin.to_str().ok()?;
        self.origins
            .iter()
            .any(|o| o.eq_ignore_ascii_case(text))
            .then(|| origin.clone())
    }

    /// The answer to a preflight (`OPTIONS` with `Access-Control-Request-Method`): 204 with
    /// the allowed method, headers and exposure for an allowed origin asking for POST; 403,
    /// saying why, for any other.
    pub(super) fn preflight(&self, headers: &HeaderMap) -> Response<Body> {
        let post = headers
            .get(header::ACCESS_CONTROL_REQUEST_METHOD)
            .is_some_and(|m| m.as_bytes().eq_ignore_ascii_case(b"POST"));
        let vary = HeaderValue::from_static(
            "origin, access-control-request-method, access-control-request-headers",
        );
        let Some(allow) = self.allow(headers).filter(|_| post) else {
            let why = if post {
                "origin not allowed: name it with the server's --cors-origin"
            } else {
                "only POST is allowed (gRPC-Web)"
            };
            let mut response = super::reply::text(StatusCode::FORBIDDEN, why);
            response.headers_mut().insert(header::VARY, vary);
            return response;
        };
        let mut response = Response::new(Body::empty());
        *response.status_mut() = StatusCode::NO_CONTENT;
        let out = response.headers_mut();
        out.insert(header::ACCESS_CONTROL_ALLOW_ORIGIN, allow);
        out.insert(
            header::ACCESS_CONTROL_ALLOW_METHODS,
            HeaderValue::from_static("POST"),
        );
        out.insert(
            header::ACCESS_CONTROL_ALLOW_HEADERS,
            HeaderValue::from_static(ALLOWED_HEADERS),
        );
        out.insert(
            header::ACCESS_CONTROL_EXPOSE_HEADERS,
            HeaderValue::from_static(EXPOSED_HEADERS),
        );
        out.insert(
            header::ACCESS_CONTROL_MAX_AGE,
            HeaderValue::from_static(PREFLIGHT_MAX_AGE),
        );
        out.insert(header::VARY, vary);
        // A public page calling a server on a private address asks first (Private Network
        // Access); an origin the operator named may.
        if headers
            .get("access-control-request-private-network")
            .is_some_and(|v| v == "true")
        {
            out.insert(
                "access-control-allow-private-network",
                HeaderValue::from_static("true"),
            );
        }
        response
    }
}

/// Marks the response of an allowed origin's call readable by its page.
pub(super) fn expose(headers: &mut HeaderMap, allow: HeaderValue) {
    headers.insert(header::ACCESS_CONTROL_ALLOW_ORIGIN, allow);
    headers.insert(
        header::ACCESS_CONTROL_EXPOSE_HEADERS,
        HeaderValue::from_static(EXPOSED_HEADERS),
    );
    headers.append(header::VARY, HeaderValue::from_static("origin"));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn origins_are_normalised_or_refused() {
        assert_eq!(origin("*").unwrap(), "*");
        assert_eq!(
            origin("HTTPS://Example.com/").unwrap(),
            "https://example.com"
        );
        assert_eq!(
            origin("https://example.com:443").unwrap(),
            "https://example.com"
        );
        assert_eq!(
            origin("http://example.com:80").unwrap(),
            "http://example.com"
        );
        assert_eq!(
            origin("http://localhost:8080").unwrap(),
            "http://localhost:8080"
        );
        assert_eq!(origin("http://[::1]:8080").unwrap(), "http://[::1]:8080");
        assert_eq!(origin("http://[::1]").unwrap(), "http://[::1]");
        for bad in [
            "",
            "example.com",
            "ftp://example.com",
            "https://example.com/app",
            "https://",
            "https://example.com:99999",
            "https://exa mple.com",
            "https://ex\u{e9}.com",
        ] {
            assert!(origin(bad).is_err(), "{bad:?} was accepted");
        }
    }

    fn headers(pairs: &[(&'static str, &'static str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (name, value) in pairs {
            map.insert(*name, HeaderValue::from_static(value));
        }
        map
    }

    #[test]
    fn only_named_origins_are_allowed() {
        let cors = Cors::new(&["https://a.example".to_string()]);
        let a = headers(&[("origin", "https://a.example")]);
        let b = headers(&[("origin", "https://b.example")]);
        assert_eq!(cors.allow(&a).unwrap(), "https://a.example");
        assert!(cors.allow(&b).is_none());
        assert!(cors.allow(&HeaderMap::new()).is_none());
        assert!(Cors::default().allow(&a).is_none());
        assert_eq!(Cors::new(&["*".to_string()]).allow(&b).unwrap(), "*");
    }

    #[test]
    fn preflights_are_answered_for_allowed_origins_only() {
        let cors = Cors::new(&["https://a.example".to_string()]);
        let ok = cors.preflight(&headers(&[
            ("origin", "https://a.example"),
            ("access-control-request-method", "POST"),
            ("access-control-request-private-network", "true"),
        ]));
        assert_eq!(ok.status(), StatusCode::NO_CONTENT);
        let h = ok.headers();
        assert_eq!(h[header::ACCESS_CONTROL_ALLOW_ORIGIN], "https://a.example");
        assert!(
            h[header::ACCESS_CONTROL_ALLOW_HEADERS]
                .to_str()
                .unwrap()
                .contains("x-grpc-web")
        );
        assert_eq!(h["access-control-allow-private-network"], "true");
        for refused in [
            cors.preflight(&headers(&[
                ("origin", "https://b.example"),
                ("access-control-request-method", "POST"),
            ])),
            cors.preflight(&headers(&[
                ("origin", "https://a.example"),
                ("access-control-request-method", "DELETE"),
            ])),
        ] {
            assert_eq!(refused.status(), StatusCode::FORBIDDEN);
            assert!(
                !refused
                    .headers()
                    .contains_key(header::ACCESS_CONTROL_ALLOW_ORIGIN)
            );
        }
    }
}
