//! How the fan-out reads a failed call: whether another try can help, whether the call's
//! connection broke under it (its replica went away while holding the shard), and how long
//! the server asked to be left alone (`google.rpc.RetryInfo`). What the queue does with each
//! answer is `queue.rs`'s.
//!
//! # A lost call
//! tonic 0.14 makes a `Status` in two ways. One it reads from the `grpc-status` the server
//! sent: that one has no [`source`](std::error::Error::source). The other it makes from a
//! transport error, which it keeps as the source. Seen over loopback with a replica
//! SIGKILLed while counting (the way the kernel's OOM killer ends one), every call on it
//! ended the second way, with code Unknown: a unary Count as "transport error" (tonic's
//! transport error over hyper's "connection error" over an I/O error, a broken pipe), an
//! Enumerate stream as "h2 protocol error: error reading a body from connection" (over h2's
//! broken pipe), and a call sent on the dead connection before the client noticed as
//! "transport error" over a connection reset. That, Unknown with a source, is what this
//! module calls lost. The other transport failures mean that the call never ran on the
//! replica, or went silent rather than broke, and are not losses: tonic gives Unavailable
//! with a source when a (re)connect fails ("tcp connect error", connection refused), when
//! the HTTP/2 keepalive ping goes unanswered, or when the server refuses the stream
//! (REFUSED_STREAM), and Cancelled with a source when hyper never handed the request to a
//! connection ("connection closed"). A status the server sent (UNAVAILABLE while shutting
//! down, RESOURCE_EXHAUSTED when busy) and the statuses the fan-out makes itself (a connect
//! that timed out, a call abandoned by the hung-endpoint watchdog) have no source, so they
//! are never losses either.
//!
//! The watchdog's abandoned calls are not losses on purpose: a replica that stops answering
//! (SIGSTOP, a swapping machine, a network partition) has not shown that the shard brings it
//! down, and a hung replica is often a sick machine rather than a poisonous shard, so its
//! shards go back to the queue as they always did, without using an attempt.

use std::time::Duration;
use tonic::Code;
use tonic_types::StatusExt;

/// Longest wait a server's RetryInfo can impose before a shard is tried again on it. A
/// refusal that waiting helps (memory held by the searches running now) clears when one of
/// those ends, and a whole count of n = 20 takes 36 s on both cores of this project's 2-core
/// machine (docs/performance.md), so its shards end well within 30 s of each other: asking
/// again after at most that long never leaves a freed replica idle for a whole shard. The
/// cap also bounds what a server's mistake (a delay of days) can cost; every refusal still
/// uses one of the shard's attempts.
pub(super) const MAX_RETRY_DELAY: Duration = Duration::from_secs(30);

/// Whether a failed call may succeed on another try or another endpoint.
pub(super) fn retryable(status: &tonic::Status) -> bool {
    // Unknown covers a lost call (see the module's docs); Cancelled a request hyper never
    // sent because its connection had closed (this client never cancels its own calls).
    matches!(
        status.code(),
        Code::Unavailable
            | Code::ResourceExhausted
            | Code::Unknown
            | Code::Aborted
            | Code::Cancelled
    )
}

/// Whether the call's connection broke under it: no status from the server, but tonic's
/// Unknown over the transport error that ended the call (see the module's docs).
pub(super) fn lost(status: &tonic::Status) -> bool {
    status.code() == Code::Unknown && std::error::Error::source(status).is_some()
}

/// How long the server asked the client to wait before trying again (the `RetryInfo` of the
/// status's details), at most [`MAX_RETRY_DELAY`]; `None` when it did not say.
pub(super) fn retry_delay(status: &tonic::Status) -> Option<Duration> {
    let delay = status.get_details_retry_info()?.retry_delay?;
    Some(delay.min(MAX_RETRY_DELAY))
}

#[cfg(test)]
mod tests {
    use super::*;
    use tonic_types::ErrorDetails;

    /// A status as tonic makes it from a transport error.
    fn from_transport(kind: std::io::ErrorKind) -> tonic::Status {
        tonic::Status::from_error(Box::new(std::io::Error::new(kind, "stream closed")))
    }

    #[test]
    fn only_a_broken_connection_is_a_loss() {
        let broken = from_transport(std::io::ErrorKind::BrokenPipe);
        assert_eq!(broken.code(), Code::Unknown);
        assert!(lost(&broken) && retryable(&broken));
        assert!(lost(&from_transport(std::io::ErrorKind::ConnectionReset)));
        // What a server sends, and what the fan-out makes itself, carry no source.
        for status in [
            tonic::Status::unknown("sent by the server"),
            tonic::Status::unavailable("server shutting down"),
            tonic::Status::resource_exhausted("server busy"),
            tonic::Status::cancelled("operation was canceled"),
        ] {
            assert!(!lost(&status), "{status:?}");
        }
        // A failed connect has a source, and is Unavailable: the call never ran.
        let mut refused = tonic::Status::unavailable("tcp connect error");
        refused.set_source(std::sync::Arc::new(std::io::Error::from(
            std::io::ErrorKind::ConnectionRefused,
        )));
        assert!(!lost(&refused));
    }

    #[test]
    fn retry_info_sets_the_wait_up_to_the_cap() {
        let asking = |delay| {
            tonic::Status::with_error_details(
                Code::ResourceExhausted,
                "memory busy",
                ErrorDetails::with_retry_info(Some(delay)),
            )
        };
        let wait = Duration::from_millis(1500);
        assert_eq!(retry_delay(&asking(wait)), Some(wait));
        assert_eq!(
            retry_delay(&asking(Duration::from_secs(86_400))),
            Some(MAX_RETRY_DELAY)
        );
        assert_eq!(
            retry_delay(&tonic::Status::resource_exhausted("busy")),
            None
        );
        let no_delay = tonic::Status::with_error_details(
            Code::ResourceExhausted,
            "busy",
            ErrorDetails::with_retry_info(None),
        );
        assert_eq!(retry_delay(&no_delay), None);
    }
}
