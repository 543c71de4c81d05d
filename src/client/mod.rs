//! The client side, shared by the CLI and the tests: connecting to a server from a plain
//! address or URL, and what each client command prints (`output.rs`: boards, counts,
//! progress bars, fan-out reports).
//!
//! No retry or fan-out logic lives here (that is `crate::fanout`), and no flags (that is the
//! binary): callers pass plain values and get a typed [`Error`].

mod output;

pub use self::output::{
    Target, count, count_fanout, count_local, enumerate, enumerate_fanout, fanout_job, sum,
};

use crate::pb::queens_client::QueensClient;
use tonic::transport::{Certificate, Channel, ClientTlsConfig};

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

/// Connects to a server at `addr`: a URL (`http://host:port`) or a bare `host:port`.
pub async fn connect(addr: &str) -> Result<QueensClient<Channel>, ConnectError> {
    connect_with(addr, None).await
}

/// Connects to `addr`; with `ca_pem`, over TLS (`https://`) trusting that CA certificate.
pub async fn connect_with(
    addr: &str,
    ca_pem: Option<&[u8]>,
) -> Result<QueensClient<Channel>, ConnectError> {
    let scheme = if ca_pem.is_some() { "https" } else { "http" };
    let url = if addr.contains("://") {
        addr.to_string()
    } else {
        format!("{scheme}://{addr}")
    };
    let mut endpoint = Channel::from_shared(url)?;
    if let Some(ca) = ca_pem {
        let tls = ClientTlsConfig::new().ca_certificate(Certificate::from_pem(ca));
        endpoint = endpoint.tls_config(tls)?;
    }
    Ok(QueensClient::new(endpoint.connect().await?))
}
