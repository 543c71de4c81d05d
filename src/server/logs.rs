//! The server's log: `tracing` events written to stderr as text or JSON lines, filtered like
//! `RUST_LOG` (default `info`). One line at start (where it listens and the effective
//! settings), one per call (`queens::call`: method, peer, client, status code, duration), and
//! one per shutdown step. What the lines say is decided where they are written; this module
//! only sets up the writer.

use std::io::IsTerminal;
use tracing_subscriber::EnvFilter;

/// How log lines are written.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum LogFormat {
    /// One human-readable line per event.
    #[default]
    Text,
    /// One JSON object per line, its fields at the top level.
    Json,
}

/// Sends the process's `tracing` events to stderr in `format`, filtered by `RUST_LOG`
/// (`info` when unset or invalid). Does nothing if a subscriber is already set.
pub fn init(format: LogFormat) {
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info"));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr);
    let _ = match format {
        LogFormat::Text => builder
            .with_ansi(std::io::stderr().is_terminal())
            .try_init(),
        LogFormat::Json => builder
            .json()
            .flatten_event(true)
            .with_current_span(false)
            .try_init(),
    };
}
