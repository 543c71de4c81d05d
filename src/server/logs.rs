//! The server's log: `tracing` events written to stderr as text or JSON lines, filtered like
//! `RUST_LOG` (default `info`). One line at start (where it listens and the effective
//! settings), one per call (`queens::call`: method, peer, client, status code, duration,
//! trace id), and one per shutdown step. What the lines say is decided where they are
//! written; this module only sets up the writer, and beside it the OTLP span exporter
//! (`traces.rs`) when `--otlp-endpoint` is given.

use super::traces::{self, Traces, TracesError};
use std::io::IsTerminal;
use tracing_subscriber::filter::{EnvFilter, LevelFilter, Targets};
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;
use tracing_subscriber::{Layer, Registry};

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
/// (`info` when unset or invalid), and call spans to `otlp_endpoint` when given (then it
/// must run inside the Tokio runtime). Does nothing if a subscriber is already set.
pub fn init(format: LogFormat, otlp_endpoint: Option<&str>) -> Result<Option<Traces>, TracesError> {
    let filter = EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| EnvFilter::new("info"))
        // Call spans are for the exporter; the log has one line per call instead.
        .add_directive(
            format!("{}=off", traces::TARGET)
                .parse()
                .expect("a directive"),
        );
    let lines: Box<dyn Layer<Registry> + Send + Sync> = match format {
        LogFormat::Text => tracing_subscriber::fmt::layer()
            .with_writer(std::io::stderr)
            .with_ansi(std::io::stderr().is_terminal())
            .boxed(),
        LogFormat::Json => tracing_subscriber::fmt::layer()
            .with_writer(std::io::stderr)
            .json()
            .flatten_event(true)
            .with_current_span(false)
            .with_span_list(false)
            .boxed(),
    };
    let registry = tracing_subscriber::registry().with(lines.with_filter(filter));
    let Some(endpoint) = otlp_endpoint else {
        let _ = registry.try_init();
        return Ok(None);
    };
    let (spans, exporter) = traces::exporter(endpoint)?;
    // Only the call spans go out, whatever RUST_LOG lets through to the log.
    let only_calls = Targets::new().with_target(traces::TARGET, LevelFilter::INFO);
    let _ = registry.with(spans.with_filter(only_calls)).try_init();
    Ok(Some(exporter))
}
