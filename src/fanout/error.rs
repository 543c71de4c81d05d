//! Why a fanned-out run failed: endpoints that do not resolve, shards that failed for good
//! (too many attempts, a refusal, lost twice with their replicas), and the output directory
//! of an enumeration and its files.

use super::manifest::Format;
use crate::parquet_file::FileError;
use crate::solver::PartsError;
use std::path::PathBuf;

/// Why a fanned-out run failed.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// An endpoint's name did not resolve.
    #[error("cannot resolve {endpoint}: {source}")]
    Resolve {
        /// The endpoint as given.
        endpoint: String,
        /// Why.
        source: std::io::Error,
    },
    /// No endpoint was given.
    #[error("no endpoints given")]
    NoEndpoints,
    /// A shard failed with a retryable status on every attempt.
    #[error(
        "shard {index} failed {attempts} times; last from {url}: {:?}: {}",
        status.code(),
        status.message()
    )]
    Attempts {
        /// The shard.
        index: u32,
        /// Attempts made.
        attempts: u32,
        /// The endpoint of the last attempt.
        url: String,
        /// Its status.
        status: Box<tonic::Status>,
    },
    /// A shard's connection broke under its call on two endpoints in turn: what replicas
    /// killed while running it (by the kernel's OOM killer, say) look like, so no third one
    /// was given it.
    #[error(
        "shard {index} was lost twice: its server went away while running it on {first}, then \
         on {second} ({:?}: {}); not trying it on another replica, which it may bring down too",
        status.code(),
        status.message()
    )]
    Lost {
        /// The shard.
        index: u32,
        /// The endpoint where it was lost first.
        first: String,
        /// The endpoint where it was lost again.
        second: String,
        /// The status of the second loss.
        status: Box<tonic::Status>,
    },
    /// A shard failed with a status no retry can change.
    #[error("shard {index} on {url}: {:?}: {}", status.code(), status.message())]
    Refused {
        /// The shard.
        index: u32,
        /// The endpoint.
        url: String,
        /// Its status.
        status: Box<tonic::Status>,
    },
    /// Every endpoint was given up with shards left.
    #[error(
        "every endpoint failed; {} shards unfinished ({}); gave up on {}",
        left.len(),
        list(left),
        gave_up.join("; ")
    )]
    Unfinished {
        /// The shards left.
        left: Vec<u32>,
        /// Each endpoint given up, as `URL: why`.
        gave_up: Vec<String>,
    },
    /// The shards' counts do not add up to a total (too large, or split in different
    /// ways by servers of different versions).
    #[error("the shards' counts: {0}")]
    Parts(#[from] PartsError),
    /// A file or directory of the output could not be used.
    #[error("{what} {}: {source}", path.display())]
    Io {
        /// What was being done.
        what: &'static str,
        /// The path.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The manifest of the output directory could not be read.
    #[error("unreadable manifest in {}: {source}", dir.display())]
    Manifest {
        /// The directory.
        dir: PathBuf,
        /// Why.
        source: serde_json::Error,
    },
    /// The output directory holds another job's files.
    #[error(
        "{} holds another job (n {n}, {shards} shards, {format:?} files); use an empty directory",
        dir.display()
    )]
    OtherJob {
        /// The directory.
        dir: PathBuf,
        /// The other job's board size.
        n: u32,
        /// The other job's number of shards.
        shards: u32,
        /// The other job's file format.
        format: Format,
    },
    /// A Parquet shard file could not be read back.
    #[error(transparent)]
    File(#[from] FileError),
}

/// Shard numbers as `1,4,7`.
fn list(shards: &[u32]) -> String {
    let text: Vec<String> = shards.iter().map(u32::to_string).collect();
    text.join(",")
}
