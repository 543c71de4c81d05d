//! Why a call failed, and the one place that decides what a client sees for it
//! ([`From<Error> for Status`](#impl-From<Error>-for-Status)): the status code, the message,
//! and the details of the gRPC richer error model (`google.rpc`, as Google's API guidelines
//! use them, AIP-193) that let a program act without reading the message. Every
//! INVALID_ARGUMENT carries a `BadRequest` naming the request field at fault; every
//! RESOURCE_EXHAUSTED an `ErrorInfo` naming the limit (its `reason`, in [`DOMAIN`]) with the
//! flag and figures as metadata, and a `RetryInfo` when waiting can help.

use crate::solver::{CountError, QueryError};
use crate::stream::End;
use std::collections::HashMap;
use std::time::Duration;
use tonic::{Code, Status};
use tonic_types::{BadRequest, ErrorDetail, ErrorInfo, RetryInfo, StatusExt};

/// The `domain` of every `ErrorInfo` the server sends: the proto package, which names the
/// service that chose the `reason`.
const DOMAIN: &str = "queens.v1";

/// How long a client refused a slot (a search's, or a request's place in flight) is told to
/// wait: a second lets the many short calls (a count up to n = 16 takes milliseconds) end and
/// free their places, while a client retrying at that pace costs a busy server next to
/// nothing (a refusal is answered at once, without a search).
const RETRY_SLOT: Duration = Duration::from_secs(1);

/// How long a client refused memory that other searches hold is told to wait: the searches
/// that reserve much of the budget are the large counts (the join, n = 16 to 28),
/// which run for seconds (n = 18, about 1 s on 2 cores) to hours, so retrying each second
/// would mostly be refused again.
const RETRY_MEMORY: Duration = Duration::from_secs(5);

/// Why a call failed.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The request is not a valid question.
    #[error(transparent)]
    Invalid(#[from] QueryError),
    /// The count exceeds `u64`.
    #[error("the number of solutions does not fit in 64 bits")]
    Overflow,
    /// The call was cancelled while searching.
    #[error("the call was cancelled")]
    Cancelled,
    /// The call's deadline (`grpc-timeout`) passed.
    #[error("the call's deadline passed before the search ended")]
    DeadlineExceeded,
    /// The server is shutting down.
    #[error("server shutting down")]
    ShuttingDown,
    /// Every search slot is taken (`--max-searches`).
    #[error(
        "server busy: all {limit} search slots are in use (--max-searches {limit}); retry later"
    )]
    Busy {
        /// The server's cap on concurrent searches.
        limit: usize,
    },
    /// This client already runs its share of the slots (`--max-searches-per-client`).
    #[error(
        "server busy for this client: it already runs {limit} searches \
         (--max-searches-per-client {limit}); retry when one ends"
    )]
    ClientBusy {
        /// The cap on one client's concurrent searches.
        limit: usize,
    },
    /// Every place for small searches stayed taken for as long as the call could wait
    /// (`--max-small-searches`).
    #[error(
        "server busy: all {limit} places for small searches stayed in use for {} s \
         (--max-small-searches {limit}, --small-search-wait); retry later",
        waited.as_secs_f64()
    )]
    SmallBusy {
        /// The server's cap on concurrent small searches.
        limit: usize,
        /// How long the call waited.
        waited: Duration,
    },
    /// This client's small searches stayed at its share for as long as the call could wait
    /// (`--max-small-searches-per-client`).
    #[error(
        "server busy for this client: it ran {limit} small searches for all of {} s \
         (--max-small-searches-per-client {limit}, --small-search-wait); retry when one ends",
        waited.as_secs_f64()
    )]
    SmallClientBusy {
        /// The cap on one client's concurrent small searches.
        limit: usize,
        /// How long the call waited.
        waited: Duration,
    },
    /// A small count that held its place got no turn on the CPU for as long as the call could
    /// wait: the small counts' turns (one per core and one more) stayed taken.
    #[error(
        "server busy: no turn on the CPU came for this small search in {} s (all {turns} \
         turns for small searches stayed taken; --small-search-wait); retry later",
        waited.as_secs_f64()
    )]
    SmallTurnBusy {
        /// How many small counts run at once.
        turns: usize,
        /// How long the call waited.
        waited: Duration,
    },
    /// The search's memory is more than is free of the server's budget (`--max-memory`) now:
    /// other searches hold the rest.
    #[error(
        "server busy: this search needs {need} bytes of memory and {free} of the {limit} bytes \
         of --max-memory are free; retry when a search ends"
    )]
    MemoryBusy {
        /// Bytes the search reserves.
        need: u64,
        /// Bytes of the budget not reserved now.
        free: u64,
        /// The whole budget.
        limit: u64,
    },
    /// The search's memory is more than the server's whole budget (`--max-memory`): no retry
    /// on this server can help.
    #[error(
        "this search needs {need} bytes of memory, more than the server's whole budget \
         (--max-memory {limit})"
    )]
    MemoryLimit {
        /// Bytes the search reserves.
        need: u64,
        /// The whole budget.
        limit: u64,
    },
    /// An allocation of the search failed: the system had less memory than the budget
    /// allowed for.
    #[error("the search could not allocate {bytes} bytes of memory; it was stopped")]
    OutOfMemory {
        /// The bytes asked for.
        bytes: u64,
    },
    /// The stream's reader took nothing for the server's stall timeout (`--stall-timeout`).
    #[error(
        "stream ended: its reader took nothing for {} s (--stall-timeout)",
        after.as_secs_f64()
    )]
    Stalled {
        /// The timeout.
        after: Duration,
    },
    /// The search ran past the server's own time limit (`--max-search-seconds`).
    #[error(
        "search stopped at the server's time limit of {} s (--max-search-seconds)",
        limit.as_secs_f64()
    )]
    TimeLimit {
        /// The limit.
        limit: Duration,
    },
    /// A field of a request outside the question's own checks is wrong (a Flight command's
    /// JSON, its descriptor or ticket).
    #[error("{field}: {problem}")]
    Field {
        /// The field at fault, as the request names it (`n`, `fixed[0].row`, `parts`).
        field: String,
        /// What is wrong with it.
        problem: String,
    },
    /// The server already has its bound of requests in flight (`--max-requests`).
    #[error("server busy: {limit} requests in flight (--max-requests); retry later")]
    Requests {
        /// The server's bound on requests in flight.
        limit: usize,
    },
    /// This client already has its share of the requests in flight
    /// (`--max-requests-per-client`).
    #[error(
        "client busy: {client} has {limit} requests in flight \
         (--max-requests-per-client {limit}); retry later"
    )]
    ClientRequests {
        /// Who the client is, as the server identified it.
        client: String,
        /// The bound on one client's requests in flight.
        limit: usize,
    },
    /// A search failed (a bug: it panicked).
    #[error("{0}")]
    Internal(String),
}

impl Error {
    /// The details of the richer error model this error's status carries (none for the
    /// codes where the message is all there is to say).
    fn details(&self, message: &str) -> Vec<ErrorDetail> {
        let bad_request = |field: &str| vec![BadRequest::with_violation(field, message).into()];
        match self {
            Error::Invalid(error) => bad_request(&error.field()),
            Error::Field { field, .. } => bad_request(field),
            Error::Busy { limit } => limit_reached("MAX_SEARCHES", "--max-searches", *limit),
            Error::ClientBusy { limit } => limit_reached(
                "MAX_SEARCHES_PER_CLIENT",
                "--max-searches-per-client",
                *limit,
            ),
            Error::Requests { limit } => limit_reached("MAX_REQUESTS", "--max-requests", *limit),
            Error::ClientRequests { limit, .. } => limit_reached(
                "MAX_REQUESTS_PER_CLIENT",
                "--max-requests-per-client",
                *limit,
            ),
            Error::SmallBusy { limit, .. } => {
                limit_reached("MAX_SMALL_SEARCHES", "--max-small-searches", *limit)
            }
            Error::SmallTurnBusy { turns, .. } => vec![
                error_info("MAX_SMALL_SEARCHES", [("turns", turns.to_string())]),
                RetryInfo::new(Some(RETRY_SLOT)).into(),
            ],
            Error::SmallClientBusy { limit, .. } => limit_reached(
                "MAX_SMALL_SEARCHES_PER_CLIENT",
                "--max-small-searches-per-client",
                *limit,
            ),
            Error::MemoryBusy { need, free, limit } => vec![
                error_info(
                    "MAX_MEMORY",
                    [
                        ("flag", "--max-memory".into()),
                        ("need_bytes", need.to_string()),
                        ("free_bytes", free.to_string()),
                        ("limit_bytes", limit.to_string()),
                    ],
                ),
                RetryInfo::new(Some(RETRY_MEMORY)).into(),
            ],
            // Bigger than the whole budget: no wait helps, so no RetryInfo.
            Error::MemoryLimit { need, limit } => vec![error_info(
                "SEARCH_OVER_MAX_MEMORY",
                [
                    ("flag", "--max-memory".into()),
                    ("need_bytes", need.to_string()),
                    ("limit_bytes", limit.to_string()),
                ],
            )],
            // The budget admitted the search and the machine still lacked the memory: whether
            // waiting helps depends on what else runs there, which the server cannot tell.
            Error::OutOfMemory { bytes } => vec![error_info(
                "OUT_OF_MEMORY",
                [("alloc_bytes", bytes.to_string())],
            )],
            Error::Overflow
            | Error::Cancelled
            | Error::DeadlineExceeded
            | Error::ShuttingDown
            | Error::Stalled { .. }
            | Error::TimeLimit { .. }
            | Error::Internal(_) => Vec::new(),
        }
    }
}

/// The details of a slot refused at a count limit: an `ErrorInfo` naming the limit, its flag
/// and value, and a `RetryInfo` (slots free as calls end).
fn limit_reached(reason: &str, flag: &str, limit: usize) -> Vec<ErrorDetail> {
    vec![
        error_info(
            reason,
            [("flag", flag.to_string()), ("limit", limit.to_string())],
        ),
        RetryInfo::new(Some(RETRY_SLOT)).into(),
    ]
}

/// An `ErrorInfo` of [`DOMAIN`] with this `reason` and `metadata`.
fn error_info<const K: usize>(reason: &str, metadata: [(&str, String); K]) -> ErrorDetail {
    let metadata: HashMap<String, String> = metadata
        .into_iter()
        .map(|(key, value)| (key.to_string(), value))
        .collect();
    ErrorInfo::new(reason, DOMAIN, metadata).into()
}

impl From<Error> for Status {
    fn from(error: Error) -> Status {
        let message = error.to_string();
        let code = match error {
            Error::Invalid(_) | Error::Field { .. } => Code::InvalidArgument,
            Error::Overflow => Code::OutOfRange,
            Error::Cancelled => Code::Cancelled,
            Error::DeadlineExceeded | Error::TimeLimit { .. } | Error::Stalled { .. } => {
                Code::DeadlineExceeded
            }
            Error::ShuttingDown => Code::Unavailable,
            Error::Busy { .. }
            | Error::ClientBusy { .. }
            | Error::SmallBusy { .. }
            | Error::SmallTurnBusy { .. }
            | Error::SmallClientBusy { .. }
            | Error::Requests { .. }
            | Error::ClientRequests { .. }
            | Error::MemoryBusy { .. }
            | Error::MemoryLimit { .. }
            | Error::OutOfMemory { .. } => Code::ResourceExhausted,
            Error::Internal(_) => Code::Internal,
        };
        let details = error.details(&message);
        if details.is_empty() {
            Status::new(code, message)
        } else {
            Status::with_error_details_vec(code, message, details)
        }
    }
}

impl From<CountError> for Error {
    fn from(error: CountError) -> Error {
        match error {
            CountError::Cancelled => Error::Cancelled,
            CountError::Overflow => Error::Overflow,
            CountError::Failed => {
                Error::Internal("the count failed: a search thread panicked".into())
            }
            CountError::OutOfMemory { bytes } => Error::OutOfMemory { bytes },
            recounted @ (CountError::Recounted { .. } | CountError::Searched { .. }) => {
                Error::Internal(recounted.to_string())
            }
        }
    }
}

impl From<End> for Error {
    fn from(end: End) -> Error {
        match end {
            End::ShuttingDown => Error::ShuttingDown,
            End::TimeLimit { limit } => Error::TimeLimit { limit },
            End::Deadline => Error::DeadlineExceeded,
            End::Stalled { after } => Error::Stalled { after },
            End::ClientGone => Error::Cancelled,
            End::Failed => Error::Internal("the stream failed: a search thread panicked".into()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::solver::{Problem, Shard, Square};

    /// The reason and metadata of `status`'s ErrorInfo, and its RetryInfo's delay.
    fn limit_details(status: &Status) -> (String, HashMap<String, String>, Option<Duration>) {
        let details = status.get_error_details();
        let info = details.error_info().expect("an ErrorInfo");
        assert_eq!(info.domain, DOMAIN);
        let delay = details.retry_info().and_then(|r| r.retry_delay);
        (info.reason.clone(), info.metadata.clone(), delay)
    }

    fn map(pairs: &[(&str, &str)]) -> HashMap<String, String> {
        pairs
            .iter()
            .map(|&(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn every_resource_exhausted_names_its_limit() {
        let second = Some(RETRY_SLOT);
        let cases = [
            (
                Error::Busy { limit: 2 },
                "MAX_SEARCHES",
                map(&[("flag", "--max-searches"), ("limit", "2")]),
                second,
            ),
            (
                Error::ClientBusy { limit: 1 },
                "MAX_SEARCHES_PER_CLIENT",
                map(&[("flag", "--max-searches-per-client"), ("limit", "1")]),
                second,
            ),
            (
                Error::SmallBusy {
                    limit: 16,
                    waited: Duration::from_secs(1),
                },
                "MAX_SMALL_SEARCHES",
                map(&[("flag", "--max-small-searches"), ("limit", "16")]),
                second,
            ),
            (
                Error::SmallTurnBusy {
                    turns: 3,
                    waited: Duration::from_secs(1),
                },
                "MAX_SMALL_SEARCHES",
                map(&[("turns", "3")]),
                second,
            ),
            (
                Error::SmallClientBusy {
                    limit: 8,
                    waited: Duration::from_millis(250),
                },
                "MAX_SMALL_SEARCHES_PER_CLIENT",
                map(&[("flag", "--max-small-searches-per-client"), ("limit", "8")]),
                second,
            ),
            (
                Error::Requests { limit: 8 },
                "MAX_REQUESTS",
                map(&[("flag", "--max-requests"), ("limit", "8")]),
                second,
            ),
            (
                Error::ClientRequests {
                    client: "127.0.0.1".into(),
                    limit: 4,
                },
                "MAX_REQUESTS_PER_CLIENT",
                map(&[("flag", "--max-requests-per-client"), ("limit", "4")]),
                second,
            ),
            (
                Error::MemoryBusy {
                    need: 300,
                    free: 100,
                    limit: 1000,
                },
                "MAX_MEMORY",
                map(&[
                    ("flag", "--max-memory"),
                    ("need_bytes", "300"),
                    ("free_bytes", "100"),
                    ("limit_bytes", "1000"),
                ]),
                Some(RETRY_MEMORY),
            ),
            (
                Error::MemoryLimit {
                    need: 3000,
                    limit: 1000,
                },
                "SEARCH_OVER_MAX_MEMORY",
                map(&[
                    ("flag", "--max-memory"),
                    ("need_bytes", "3000"),
                    ("limit_bytes", "1000"),
                ]),
                None,
            ),
            (
                Error::OutOfMemory { bytes: 4096 },
                "OUT_OF_MEMORY",
                map(&[("alloc_bytes", "4096")]),
                None,
            ),
        ];
        for (error, reason, metadata, delay) in cases {
            let message = error.to_string();
            let status = Status::from(error);
            assert_eq!(status.code(), Code::ResourceExhausted);
            assert_eq!(status.message(), message, "the message is kept");
            assert_eq!(
                limit_details(&status),
                (reason.to_string(), metadata, delay)
            );
        }
    }

    #[test]
    fn every_invalid_argument_names_its_field() {
        let square = Square { row: 3, column: 9 };
        let off = Problem::new(8, &[square], false, Shard::WHOLE).unwrap_err();
        let cases = [
            (Error::Invalid(off), "fixed[0].column"),
            (
                Error::Field {
                    field: "parts".into(),
                    problem: "must be 1..=4096, got 0".into(),
                },
                "parts",
            ),
        ];
        for (error, field) in cases {
            let message = error.to_string();
            let status = Status::from(error);
            assert_eq!(status.code(), Code::InvalidArgument);
            assert_eq!(status.message(), message);
            let details = status.get_error_details();
            let violations = &details
                .bad_request()
                .expect("a BadRequest")
                .field_violations;
            assert_eq!(violations.len(), 1);
            assert_eq!(violations[0].field, field);
            assert_eq!(violations[0].description, message);
            assert!(details.error_info().is_none() && details.retry_info().is_none());
        }
    }

    #[test]
    fn other_codes_carry_no_details() {
        for error in [Error::Overflow, Error::ShuttingDown, Error::Cancelled] {
            let status = Status::from(error);
            assert!(status.details().is_empty(), "{status:?}");
        }
    }
}
