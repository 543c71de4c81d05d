//! The `queens` binary: declares the commands and dispatches them to the library
//! (`queens::cli`, where their flags, their output and their errors live).
//! `serve` runs the server; `count` and `enumerate` are clients of a running server (or of
//! several, or count in this process); `sum` adds up local shard counts.

use clap::{Parser, Subcommand};
use queens::cli::{self, CountArgs, EnumerateArgs, ServeArgs, SumArgs};
use std::process::ExitCode;

/// N-Queens as a gRPC service, and a client for it.
#[derive(Parser, Debug)]
#[command(name = "queens", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

/// What to do.
#[derive(Subcommand, Debug)]
enum Command {
    /// Serve queens.v1.Queens (with health and reflection) until SIGTERM or Ctrl-C.
    Serve(ServeArgs),
    /// Count the solutions of an n×n board: on a running server, over several (--endpoints),
    /// or in this process (--local).
    Count(CountArgs),
    /// Sum the JSON lines of `count --local --json` (files, or stdin), checking that every
    /// shard is there exactly once.
    Sum(SumArgs),
    /// Stream the solutions of an n×n board from a running server, in lexicographic order;
    /// or, with --out, fetch them shard by shard into files, resumably (from the server, or
    /// spread over --endpoints).
    Enumerate(EnumerateArgs),
}

fn main() -> ExitCode {
    match start() {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => error.report(),
    }
}

/// Parses the command line, starts the runtime (its size from `serve --io-threads`) and
/// runs the command on it.
fn start() -> Result<(), cli::Error> {
    let command = Cli::try_parse()?.command;
    let forced = std::env::var(queens::solver::TIER_VARIABLE).ok();
    queens::solver::forced_tier(forced.as_deref()).map_err(cli::Error::Tier)?;
    let io_threads = match &command {
        Command::Serve(serve) => serve.io_threads.map(|t| t as usize),
        _ => None,
    };
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(io_threads.unwrap_or_else(queens::config::default_io_threads))
        .enable_all()
        .build()
        .map_err(cli::Error::Runtime)?
        .block_on(run(command))
}

/// Runs one command.
async fn run(command: Command) -> Result<(), cli::Error> {
    match command {
        Command::Serve(args) => cli::serve(args).await,
        Command::Count(args) => cli::count(args).await,
        Command::Sum(args) => cli::sum(args),
        Command::Enumerate(args) => cli::enumerate(args).await,
    }
}
