//! The small answers the web side makes itself: a body of bytes, a line of plain text with a
//! status. Not here: which request gets which (`mod.rs`, `cors.rs`).

use bytes::Bytes;
use http::header::{self, HeaderValue};
use http::{Response, StatusCode};
use tonic::body::Body;

/// A body of these bytes.
pub(super) fn full(bytes: Bytes) -> Body {
    Body::new(http_body_util::Full::new(bytes))
}

/// A plain-text answer with this status.
pub(super) fn text(status: StatusCode, message: &'static str) -> Response<Body> {
    let mut response = Response::new(full(Bytes::from_static(message.as_bytes())));
    *response.status_mut() = status;
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    response
}
