//! The client side, shared by the CLI and the tests: connecting to a server from a plain
//! address or URL, and what each client command prints (`output.rs`: boards, counts,
//! progress bars, fan-out reports).
//!
//! No retry or fan-out logic lives here (that is `crate::fanout`), and no flags (that is the
//! binary): callers pass plain values and get a typed [`Error`].

mod output;

pub use self::output::{
    Print, Target, count, count_fanout, count_local, enumerate, enumerate_fanout, fanout_job, sum,
};

use crate::pb::EnumerateResponse;
use crate::pb::queens_client::QueensClient;
use std::borrow::Cow;
use tonic::metadata::{Ascii, MetadataValue};
use tonic::service::Interceptor;
use tonic::service::interceptor::InterceptedService;
use tonic::transport::{Certificate, Channel, ClientTlsConfig, Identity};

/// A connected Queens client that sends the caller's credentials with every call.
pub type Client = QueensClient<InterceptedService<Channel, Bearer>>;

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

/// How a client proves who it is and whom it trusts: all optional.
#[derive(Clone, Debug, Default)]
pub struct Access {
    /// The bearer token to send (a server's `--auth-tokens`).
    pub token: Option<String>,
    /// Trust this PEM CA certificate and connect over TLS.
    pub ca_pem: Option<Vec<u8>>,
    /// The client's own certificate chain and key (PEM), for servers that require one.
    pub identity: Option<(Vec<u8>, Vec<u8>)>,
}

/// Why a connection could not be made: a malformed URL, bad TLS material, or the transport.
pub type ConnectError = Box<dyn std::error::Error + Send + Sync>;

/// Default address of a local server.
pub const DEFAULT_URL: &str = "http://127.0.0.1:50051";

/// Why a client command failed.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// No connection to the server.
    #[error("cannot connect to {addr}: {source}")]
    Connect {
        /// The address asked for.
        addr: String,
        /// Why.
        source: ConnectError,
    },
    /// A file (a CA certificate, a shard file) could not be read.
    #[error(transparent)]
    Read(#[from] crate::config::ReadError),
    /// The server answered with an error.
    #[error("{:?}: {}", .0.code(), .0.message())]
    Status(Box<tonic::Status>),
    /// A CountProgress stream ended without its last message.
    #[error("the server ended the count without a result")]
    NoResult,
    /// A fanned-out run failed.
    #[error(transparent)]
    Fanout(#[from] crate::fanout::Error),
    /// A local count or a sum failed.
    #[error(transparent)]
    Batch(#[from] crate::batch::Error),
    /// Standard input could not be read.
    #[error("stdin: {0}")]
    Stdin(std::io::Error),
    /// A result could not be written as JSON.
    #[error(transparent)]
    Json(#[from] serde_json::Error),
}

impl From<tonic::Status> for Error {
    fn from(status: tonic::Status) -> Error {
        Error::Status(Box::new(status))
    }
}

/// The boards of one Enumerate response of size `n` as `n`-byte records (byte r = the
/// column of row r): its `packed` bytes as they are, or, from a server that predates
/// `packed` and sent `Board` messages, their columns.
pub fn records(n: usize, message: &EnumerateResponse) -> Cow<'_, [u8]> {
    if message.boards.is_empty() {
        return Cow::Borrowed(&message.packed);
    }
    let mut records = Vec::with_capacity(message.boards.len() * n);
    for board in &message.boards {
        records.extend(board.columns.iter().map(|&c| c as u8));
    }
    Cow::Owned(records)
}

/// Connects to a server at `addr`: a URL (`http://host:port`) or a bare `host:port`.
pub async fn connect(addr: &str) -> Result<Client, ConnectError> {
    connect_with(addr, &Access::default()).await
}

/// Connects to `addr` with `access`: over TLS (`https://`) when it names a CA, sending its
/// token with every call.
pub async fn connect_with(addr: &str, access: &Access) -> Result<Client, ConnectError> {
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
    let token =
        match &access.token {
            Some(token) => Some(format!("Bearer {token}").parse().map_err(|_| {
                ConnectError::from("the token must be printable ASCII without spaces")
            })?),
            None => None,
        };
    let mut endpoint = Channel::from_shared(url)?;
    if access.ca_pem.is_some() || access.identity.is_some() {
        let mut tls = ClientTlsConfig::new();
        if let Some(ca) = &access.ca_pem {
            tls = tls.ca_certificate(Certificate::from_pem(ca));
        }
        if let Some((cert, key)) = &access.identity {
            tls = tls.identity(Identity::from_pem(cert, key));
        }
        endpoint = endpoint.tls_config(tls)?;
    }
    let channel = endpoint.connect().await?;
    Ok(QueensClient::with_interceptor(channel, Bearer(token)))
}
