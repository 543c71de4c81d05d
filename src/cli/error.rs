//! Why a command failed, and how the binary reports it: a usage error as clap writes it
//! (exit code 2; `--help` and `--version` exit 0), anything else as one line (exit code 1),
//! on stderr, or in the server's log once `serve` has set one up.

use crate::batch::{EstimateError, LocalCountError, SumError, TaskShardError};
use crate::config::ReadError;
use crate::config::TokensError;
use crate::server::{ServeError, TracesError};
use std::path::PathBuf;
use std::process::ExitCode;

/// Exit code of a command that failed (a usage error exits with clap's 2).
const FAILURE: u8 = 1;

/// Why a command failed.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The command line is not a valid one (or asked for `--help` or `--version`).
    #[error("{0}")]
    Usage(#[from] clap::Error),
    /// The environment forces a SIMD tier that is unknown or that this CPU lacks.
    #[error("{0}")]
    Tier(String),
    /// The async runtime could not start.
    #[error("cannot start the runtime: {0}")]
    Runtime(std::io::Error),
    /// The log or the trace exporter could not be set up.
    #[error(transparent)]
    Logs(#[from] TracesError),
    /// A file named by a flag could not be read.
    #[error(transparent)]
    Read(#[from] ReadError),
    /// The tokens file of `--auth-tokens` is not a valid one.
    #[error("{}: {source}", path.display())]
    Tokens {
        /// The file.
        path: PathBuf,
        /// Why.
        source: TokensError,
    },
    /// The server failed.
    #[error(transparent)]
    Serve(#[from] ServeError),
    /// No client could be made.
    #[error(transparent)]
    Client(#[from] crate::client::Error),
    /// The server answered with an error.
    #[error("{:?}: {}", .0.code(), .0.message())]
    Status(Box<tonic::Status>),
    /// A CountProgress stream ended without its last message.
    #[error("the server ended the count without a result")]
    NoResult,
    /// A Parquet file could not be written.
    #[error(transparent)]
    File(#[from] crate::parquet_file::FileError),
    /// A fanned-out run failed.
    #[error(transparent)]
    Fanout(#[from] crate::fanout::Error),
    /// A local count's shard could not be told from the flags and the environment.
    #[error(transparent)]
    TaskShard(#[from] TaskShardError),
    /// A local count failed.
    #[error(transparent)]
    LocalCount(#[from] LocalCountError),
    /// Shard lines do not add up.
    #[error(transparent)]
    Sum(#[from] SumError),
    /// An estimate's flags do not make a sample.
    #[error(transparent)]
    Estimate(#[from] EstimateError),
    /// A sampled part of an estimate could not be counted.
    #[error("part {index}: {reason}")]
    Part {
        /// The part's index.
        index: u32,
        /// Why.
        reason: String,
    },
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

impl Error {
    /// The process's exit code for this error: clap's for a usage error (2; 0 for
    /// `--help`), else 1.
    pub fn exit_code(&self) -> ExitCode {
        match self {
            Error::Usage(e) => ExitCode::from(u8::try_from(e.exit_code()).unwrap_or(FAILURE)),
            _ => ExitCode::from(FAILURE),
        }
    }

    /// Reports the error and returns the exit code: a usage error as clap writes it; any
    /// other as one line, to the server's log when one is set up (in its format), else to
    /// stderr.
    pub fn report(&self) -> ExitCode {
        match self {
            Error::Usage(e) => {
                let _ = e.print();
            }
            _ => {
                let line = self.to_string().replace('\n', " ");
                if tracing::dispatcher::has_been_set() {
                    // The binary's target, as when main.rs logged it.
                    tracing::error!(target: "queens", "{line}");
                } else {
                    eprintln!("error: {line}");
                }
            }
        }
        self.exit_code()
    }
}
