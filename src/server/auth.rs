//! Who a request comes from: its bearer token when the server has tokens (`--auth-tokens`;
//! health checks are exempt), else its client certificate's fingerprint, else its peer's
//! address. A request without a known token is refused UNAUTHENTICATED.
//!
//! Not here: the tokens file and the constant-time lookup (`crate::config::Tokens`), the
//! client certificates' verification (`tls.rs`), what the gate does with the answer
//! (`gate.rs`).

use super::listen::ConnInfo;
use crate::config::Tokens;
use crate::service::ClientId;
use tonic::Status;
use tonic::body::Body;

/// Paths that need no token: health checks (load balancers and probes carry none).
const OPEN_PREFIX: &str = "/grpc.health.v1.Health/";

/// The caller's identity, or UNAUTHENTICATED when `tokens` are required and the request
/// carries none that is known.
pub(super) fn identify(
    tokens: Option<&Tokens>,
    request: &http::Request<Body>,
    conn: Option<&ConnInfo>,
) -> Result<ClientId, Status> {
    if let Some(tokens) = tokens
        && !request.uri().path().starts_with(OPEN_PREFIX)
    {
        let presented = request
            .headers()
            .get(http::header::AUTHORIZATION)
            .and_then(|value| value.as_bytes().strip_prefix(b"Bearer "))
            .ok_or_else(|| {
                Status::unauthenticated(
                    "this server requires a bearer token: send metadata \
                     `authorization: Bearer TOKEN` (the CLI's --token)",
                )
            })?;
        let name = tokens.who(presented).ok_or_else(|| {
            Status::unauthenticated("the bearer token is not one this server knows")
        })?;
        return Ok(ClientId::Token(name.to_string()));
    }
    Ok(match conn {
        Some(ConnInfo {
            certificate: Some(print),
            ..
        }) => ClientId::Certificate(print.clone()),
        Some(conn) => ClientId::Address(conn.remote.ip()),
        None => ClientId::Local,
    })
}
