//! A thin typed client of the Queens service, shared by the CLI and the tests: connecting
//! from a plain address or URL, and rendering boards the way the CLI prints them.
//!
//! No retry or fan-out logic lives here; callers decide what to do with a `Status`.

use crate::pb::Board;
use crate::pb::queens_client::QueensClient;
use tonic::transport::{Certificate, Channel, ClientTlsConfig};

/// Why a connection could not be made: a malformed URL, bad TLS material, or the transport.
pub type ConnectError = Box<dyn std::error::Error + Send + Sync>;

/// Default address of a local server.
pub const DEFAULT_URL: &str = "http://127.0.0.1:50051";

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

/// A board in the classic form: one line of `.` and `Q` per row.
pub fn classic(board: &Board) -> String {
    let n = board.columns.len();
    let mut out = String::with_capacity(n * (n + 1));
    for &column in &board.columns {
        for c in 0..n as u32 {
            out.push(if c == column { 'Q' } else { '.' });
        }
        out.push('\n');
    }
    out
}

/// A board's column vector as `1,3,0,2`: the form `--start-after` takes back.
pub fn compact(board: &Board) -> String {
    let columns: Vec<String> = board.columns.iter().map(u32::to_string).collect();
    columns.join(",")
}
