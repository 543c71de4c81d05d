//! How the fan-out tells a hung endpoint from a busy one: connects bounded by
//! [`CONNECT_TIMEOUT`], and a watchdog per endpoint that asks it for its health every
//! [`PROBE_INTERVAL`] and reports it hung when a Check goes unanswered for
//! [`PROBE_TIMEOUT`]. A shard's call itself has no deadline (a shard of a large n takes
//! minutes); what to do with a hung endpoint's shards is `queue.rs`'s. A call abandoned
//! because its endpoint hung is not one lost with its replica: the shard gets no mark
//! against it (`failure.rs` says why).

use super::job::{CONNECT_TIMEOUT, PROBE_INTERVAL, PROBE_TIMEOUT};
use crate::client::{Access, Client, Health, connect_with, health_with};
use tonic_health::pb::HealthCheckRequest;

/// A client of `url`, or UNAVAILABLE when it cannot connect within [`CONNECT_TIMEOUT`].
pub(super) async fn connect(url: &str, access: &Access) -> Result<Client, tonic::Status> {
    match tokio::time::timeout(CONNECT_TIMEOUT, connect_with(url, access)).await {
        Ok(Ok(client)) => Ok(client),
        Ok(Err(e)) => Err(tonic::Status::unavailable(e.to_string())),
        Err(_) => Err(tonic::Status::unavailable(format!(
            "cannot connect to {url}: no connection within {} s",
            CONNECT_TIMEOUT.as_secs()
        ))),
    }
}

/// Asks `url` for its health until a Check goes unanswered for [`PROBE_TIMEOUT`]; then
/// returns why. Any answer, an error status included, and any fast failure (a refused
/// connection: the calls see those themselves) counts as not hung.
pub(super) async fn until_hung(url: &str, access: &Access) -> String {
    let mut health: Option<Health> = None;
    loop {
        let probe = async {
            if health.is_none() {
                health = health_with(url, access).await.ok();
            }
            if let Some(client) = health.as_mut() {
                let _ = client.check(HealthCheckRequest::default()).await;
            }
        };
        if tokio::time::timeout(PROBE_TIMEOUT, probe).await.is_err() {
            return format!(
                "no answer to a health check within {} s",
                PROBE_TIMEOUT.as_secs()
            );
        }
        tokio::time::sleep(PROBE_INTERVAL).await;
    }
}
