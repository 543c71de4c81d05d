//! Which calls get compressed responses, and with what: a wrapper around the Queens service
//! ([`Negotiate`]) that leaves tonic exactly one encoding to choose for an Enumerate call, the
//! server's first (`--compression`, in its order) among those the client's
//! `grpc-accept-encoding` names, and none for every other method.
//!
//! tonic itself would take the first encoding in the client's list that the server enabled,
//! and would compress every method's responses alike: Count's and CountProgress's are a few
//! dozen bytes, where compression only costs. A client that names no encoding (grpcurl, a
//! browser's gRPC-Web) gets the uncompressed stream it always got. Decompressing requests
//! (and refusing one that inflates past `--max-request-bytes`' cap) is tonic's, configured
//! where the service is built (`mod.rs`).

use crate::config::Encodings;
use http::HeaderValue;
use std::task::{Context, Poll};
use tonic::server::NamedService;
use tower_service::Service;

/// The header a client lists the encodings it reads in.
const ACCEPT_ENCODING: &str = "grpc-accept-encoding";

/// The one method whose responses are worth compressing: Enumerate's stream of boards.
const COMPRESSED_PATH: &str = "/queens.v1.Queens/Enumerate";

/// A service whose calls see a `grpc-accept-encoding` narrowed to the encoding the server
/// chose for them (or none).
#[derive(Clone, Debug)]
pub struct Negotiate<S> {
    /// The service, with every encoding of `offer` enabled for sending and receiving.
    inner: S,
    /// The server's encodings, in its order of preference.
    offer: Encodings,
}

impl<S> Negotiate<S> {
    /// `inner`, its responses compressed with the first of `offer` the client accepts.
    pub fn new(inner: S, offer: Encodings) -> Negotiate<S> {
        Negotiate { inner, offer }
    }
}

impl<S: NamedService> NamedService for Negotiate<S> {
    const NAME: &'static str = S::NAME;
}

impl<S, B> Service<http::Request<B>> for Negotiate<S>
where
    S: Service<http::Request<B>>,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = S::Future;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, mut request: http::Request<B>) -> Self::Future {
        let path = request.uri().path() == COMPRESSED_PATH;
        narrow(request.headers_mut(), path, self.offer);
        self.inner.call(request)
    }
}

/// Replaces the client's `grpc-accept-encoding` with the one encoding of `offer` the call's
/// responses get (`compress`: the method is worth it), or removes it.
fn narrow(headers: &mut http::HeaderMap, compress: bool, offer: Encodings) {
    let accepted: Vec<&str> = headers
        .get_all(ACCEPT_ENCODING)
        .iter()
        .filter_map(|value| value.to_str().ok())
        .collect();
    let chosen = compress.then(|| offer.pick(&accepted.join(","))).flatten();
    match chosen {
        Some(encoding) => {
            headers.insert(ACCEPT_ENCODING, HeaderValue::from_static(encoding.name()));
        }
        None => {
            headers.remove(ACCEPT_ENCODING);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Encoding;

    fn narrowed(accepts: &[&str], compress: bool, offer: &str) -> Option<String> {
        let mut headers = http::HeaderMap::new();
        for accept in accepts {
            headers.append(ACCEPT_ENCODING, HeaderValue::from_str(accept).unwrap());
        }
        narrow(&mut headers, compress, offer.parse().unwrap());
        let left: Vec<_> = headers.get_all(ACCEPT_ENCODING).iter().collect();
        assert!(left.len() <= 1, "one value at most: {left:?}");
        left.first().map(|v| v.to_str().unwrap().to_string())
    }

    #[test]
    fn the_server_order_decides_among_what_the_client_reads() {
        assert_eq!(
            narrowed(&["gzip,zstd,identity"], true, "zstd,gzip"),
            Some(Encoding::Zstd.name().into())
        );
        assert_eq!(
            narrowed(&["identity,deflate,gzip"], true, "zstd,gzip"),
            Some("gzip".into())
        );
        // A header repeated counts as one list.
        assert_eq!(
            narrowed(&["identity", "gzip"], true, "zstd,gzip"),
            Some("gzip".into())
        );
        assert_eq!(
            narrowed(&["gzip", "zstd"], true, "zstd,gzip"),
            Some("zstd".into())
        );
        assert_eq!(narrowed(&["gzip"], true, "zstd"), None);
        assert_eq!(narrowed(&["zstd,gzip"], true, "none"), None);
        assert_eq!(narrowed(&["br,snappy"], true, "zstd,gzip"), None);
        assert_eq!(narrowed(&[], true, "zstd,gzip"), None);
    }

    #[test]
    fn other_methods_get_no_compression() {
        assert_eq!(narrowed(&["zstd,gzip"], false, "zstd,gzip"), None);
    }
}
