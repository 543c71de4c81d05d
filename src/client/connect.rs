//! Connecting to a server: the URL from a plain `host:port`, TLS from PEM bytes, the bearer
//! token on every call, HTTP/2 keepalive pings while a call is open, flow-control windows
//! sized to the link, the compressed responses the client reads, and a connection failure
//! said the way the Python and Node clients say it (`cannot connect to URL: connection
//! refused (is the server running?)`). Reading the PEM files is `target.rs`'s; bounding how
//! long a connect or a silent server may take is the fan-out's (`crate::fanout`).

use crate::config::{Encodings, KEEPALIVE_INTERVAL, KEEPALIVE_TIMEOUT};
use crate::pb::queens_client::QueensClient;
use tonic::metadata::{Ascii, MetadataValue};
use tonic::service::Interceptor;
use tonic::service::interceptor::InterceptedService;
use tonic::transport::{Certificate, Channel, ClientTlsConfig, Identity};
use tonic_health::pb::health_client::HealthClient;

/// A connected Queens client that sends the caller's credentials with every call.
pub type Client = QueensClient<InterceptedService<Channel, Bearer>>;

/// A connected `grpc.health.v1.Health` client with the same credentials, for asking whether
/// a server still answers.
pub type Health = HealthClient<InterceptedService<Channel, Bearer>>;

/// Default address of a local server.
pub const DEFAULT_URL: &str = "http://127.0.0.1:50051";

/// Puts `authorization: Bearer TOKEN` on every call, when there is a token.
#[derive(Clone, Debug, Default)]
pub struct Bearer(Option<MetadataValue<Ascii>>);

impl Interceptor for Bearer {
    fn call(
        &mut self,
        mut request: tonic::Request<()>,
    ) -> Result<tonic::Request<()>, tonic::Status> {
        if let Some(value) = &self.0 {
            request
                .metadata_mut()
                .insert("authorization", value.clone());
        }
        Ok(request)
    }
}

/// How a client proves who it is and whom it trusts (all optional), and the compressed
/// responses it reads.
#[derive(Clone, Debug)]
pub struct Access {
    /// The bearer token to send (a server's `--auth-tokens`).
    pub token: Option<String>,
    /// Trust this PEM CA certificate and connect over TLS.
    pub ca_pem: Option<Vec<u8>>,
    /// The client's own certificate chain and key (PEM), for servers that require one.
    pub identity: Option<(Vec<u8>, Vec<u8>)>,
    /// Encodings of responses the client reads, announced in `grpc-accept-encoding` (the
    /// server chooses among them); none: every response uncompressed.
    pub accept: Encodings,
}

/// What a client accepts unless told otherwise: zstd and gzip.
pub const ACCEPT: Encodings = Encodings::ZSTD_GZIP;

impl Default for Access {
    /// No token, no TLS, compressed responses accepted ([`ACCEPT`]).
    fn default() -> Access {
        Access {
            token: None,
            ca_pem: None,
            identity: None,
            accept: ACCEPT,
        }
    }
}

/// Why no connection was made to `url`: a token that cannot be sent, a malformed URL, TLS
/// material refused, or no server answering there.
#[derive(Debug, thiserror::Error)]
#[error("cannot connect to {url}: {why}")]
pub struct ConnectError {
    /// The URL dialed (the address as given, with `http://` or `https://` when it had none).
    pub url: String,
    /// What went wrong.
    why: Why,
}

/// What kept a connection from being made.
#[derive(Debug, thiserror::Error)]
enum Why {
    /// The token cannot travel in a header.
    #[error("the token must be printable ASCII without spaces")]
    Token,
    /// The address is not a URL.
    #[error("{0}")]
    Url(tonic::codegen::http::uri::InvalidUri),
    /// tonic refused the TLS material, or the connection failed.
    #[error("{}", reason(.0))]
    Transport(tonic::transport::Error),
}

/// A transport error in words: "connection refused (is the server running?)" when nothing
/// listens there, else the innermost cause (tonic's own text is only "transport error").
fn reason(error: &tonic::transport::Error) -> String {
    let mut innermost: &(dyn std::error::Error + 'static) = error;
    while let Some(cause) = innermost.source() {
        innermost = cause;
    }
    let refused = std::iter::successors(Some(error as &(dyn std::error::Error + 'static)), |e| {
        e.source()
    })
    .filter_map(|e| e.downcast_ref::<std::io::Error>())
    .any(|io| io.kind() == std::io::ErrorKind::ConnectionRefused);
    if refused {
        "connection refused (is the server running?)".to_string()
    } else {
        innermost.to_string()
    }
}

/// Connects to a server at `addr`: a URL (`http://host:port`) or a bare `host:port`.
pub async fn connect(addr: &str) -> Result<Client, ConnectError> {
    connect_with(addr, &Access::default()).await
}

/// Connects to `addr` with `access`: over TLS (`https://`) when it names a CA, sending its
/// token with every call.
pub async fn connect_with(addr: &str, access: &Access) -> Result<Client, ConnectError> {
    let (channel, bearer) = open(addr, access).await?;
    let mut client = QueensClient::with_interceptor(channel, bearer);
    for encoding in access.accept.iter() {
        client = client.accept_compressed(encoding.tonic());
    }
    Ok(client)
}

/// A health client connected to `addr` with `access`, as [`connect_with`] connects.
pub async fn health_with(addr: &str, access: &Access) -> Result<Health, ConnectError> {
    let (channel, bearer) = open(addr, access).await?;
    Ok(HealthClient::with_interceptor(channel, bearer))
}

/// The channel to `addr` and the interceptor carrying `access`'s token. While a call is
/// open the channel pings the server as the server pings its clients (every 30 s, 10 s to
/// answer), so a call whose connection died without a word (a NAT that dropped it) fails
/// instead of waiting for ever; idle connections are not pinged.
async fn open(addr: &str, access: &Access) -> Result<(Channel, Bearer), ConnectError> {
    let scheme = if access.ca_pem.is_some() {
        "https"
    } else {
        "http"
    };
    let url = if addr.contains("://") {
        addr.to_string()
    } else {
        format!("{scheme}://{addr}")
    };
    let fail = |why| ConnectError {
        url: url.clone(),
        why,
    };
    let token = match &access.token {
        Some(token) => Some(
            format!("Bearer {token}")
                .parse()
                .map_err(|_| fail(Why::Token))?,
        ),
        None => None,
    };
    let transport = |e| fail(Why::Transport(e));
    let mut endpoint = Channel::from_shared(url.clone())
        .map_err(|e| fail(Why::Url(e)))?
        .http2_keep_alive_interval(KEEPALIVE_INTERVAL)
        .keep_alive_timeout(KEEPALIVE_TIMEOUT)
        .keep_alive_while_idle(false)
        // Windows that grow with the link's bandwidth-delay product (hyper's estimate, up to
        // 16 MiB): a fixed 2 MiB window over a 100 ms round trip held a stream to 20 MB/s.
        .http2_adaptive_window(true);
    if access.ca_pem.is_some() || access.identity.is_some() {
        let mut tls = ClientTlsConfig::new();
        if let Some(ca) = &access.ca_pem {
            tls = tls.ca_certificate(Certificate::from_pem(ca));
        }
        if let Some((cert, key)) = &access.identity {
            tls = tls.identity(Identity::from_pem(cert, key));
        }
        endpoint = endpoint.tls_config(tls).map_err(transport)?;
    }
    let channel = endpoint.connect().await.map_err(transport)?;
    Ok((channel, Bearer(token)))
}
