//! Why a call failed, and the one place that decides what a client sees for it
//! ([`From<Error> for Status`](#impl-From<Error>-for-Status)).

use crate::solver::{CountError, QueryError};
use crate::stream::End;
use std::time::Duration;
use tonic::Status;

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
    /// A search failed (a bug: it panicked).
    #[error("{0}")]
    Internal(String),
}

impl From<Error> for Status {
    fn from(error: Error) -> Status {
        let message = error.to_string();
        match error {
            Error::Invalid(_) => Status::invalid_argument(message),
            Error::Overflow => Status::out_of_range(message),
            Error::Cancelled => Status::cancelled(message),
            Error::DeadlineExceeded | Error::TimeLimit { .. } | Error::Stalled { .. } => {
                Status::deadline_exceeded(message)
            }
            Error::ShuttingDown => Status::unavailable(message),
            Error::Busy { .. } | Error::ClientBusy { .. } => Status::resource_exhausted(message),
            Error::Internal(_) => Status::internal(message),
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
