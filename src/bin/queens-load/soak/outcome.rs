//! The soak's vocabulary: the kinds of call it makes, how one call ended, the tally of
//! outcomes by kind, and the small rules that turn a status or an answer into an outcome.
//!
//! Not here: making the calls (`caller.rs`, `hostile.rs`), the oracle (`oracle.rs`).

use std::collections::BTreeMap;
use tonic::Code;

/// The kinds of call the soak makes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(super) enum Kind {
    /// Count, n ≤ 14, no fixed queens: both OEIS numbers.
    Count,
    /// Count with up to three fixed queens, n ≤ 12: the oracle's number.
    CountFixed,
    /// Count in K parts: the parts add up to the whole.
    CountParts,
    /// Enumerate with random fundamental, fixed queens, limit, batch size, packed or not.
    Enumerate,
    /// Enumerate in K shards: together, the whole once.
    Shards,
    /// Enumerate resumed after a board (or after a vector that is no solution).
    Resume,
    /// A stream read a little and left, or a Count dropped before its answer.
    Cancel,
    /// A Count with a deadline too short for it: DEADLINE_EXCEEDED.
    Deadline,
    /// A stream read with pauses between messages, then left.
    SlowReader,
    /// A stream read once, not read for seconds, then left.
    StalledReader,
    /// A connection dropped mid-stream, or a TCP connection with half a preface.
    Disconnect,
    /// A request with a bad field: INVALID_ARGUMENT naming it.
    Invalid,
    /// A call with a wrong token (only when a token is set): UNAUTHENTICATED.
    WrongToken,
}

/// Every kind, in the order of the report.
pub(super) const KINDS: [Kind; 13] = [
    Kind::Count,
    Kind::CountFixed,
    Kind::CountParts,
    Kind::Enumerate,
    Kind::Shards,
    Kind::Resume,
    Kind::Cancel,
    Kind::Deadline,
    Kind::SlowReader,
    Kind::StalledReader,
    Kind::Disconnect,
    Kind::Invalid,
    Kind::WrongToken,
];

/// How one call ended.
pub(super) enum Outcome {
    /// As expected.
    Right,
    /// RESOURCE_EXHAUSTED: refused by the server's limits, which is allowed; the flag the
    /// refusal names (`--max-searches-per-client`, ...), or its whole message.
    Refused(String),
    /// An answer that is not the oracle's.
    Wrong(String),
    /// A status this call should not get.
    Unexpected(String),
}

/// Calls so far, by kind: right, refused, wrong, unexpected.
pub(super) type Tally = BTreeMap<Kind, [u64; 4]>;

/// The outcome of a call that failed with `status` when it should have succeeded.
pub(super) fn failed(status: &tonic::Status) -> Outcome {
    if status.code() == Code::ResourceExhausted {
        Outcome::Refused(refused_by(status.message()))
    } else {
        Outcome::Unexpected(format!("{:?}: {}", status.code(), status.message()))
    }
}

/// The flag a refusal's message names in parentheses (`(--max-searches 6)`), else the
/// message.
fn refused_by(message: &str) -> String {
    message
        .split_once("(--")
        .and_then(|(_, rest)| rest.split([' ', ')']).next())
        .map_or_else(|| message.to_string(), |flag| format!("--{flag}"))
}

/// `Right` when `got` is `want`, else what differs.
pub(super) fn compare(what: &str, got: &[Vec<u8>], want: &[Vec<u8>]) -> Outcome {
    if got == want {
        return Outcome::Right;
    }
    let first = got.iter().zip(want).position(|(a, b)| a != b);
    Outcome::Wrong(format!(
        "{what}: {} boards, expected {}; first difference at {first:?}",
        got.len(),
        want.len()
    ))
}
