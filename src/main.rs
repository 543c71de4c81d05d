//! The `queens` binary: declares the commands and dispatches them to the library
//! (`queens::cli`, where their flags, their output and their errors live).
//! `serve` runs the server; `count` and `enumerate` are clients of a running server (or of
//! several, or count in this process); `sum` adds up local shard counts; `estimate` prices a
//! batch count from a sample of its parts; `memory` prints what a count needs of memory.

use clap::{Parser, Subcommand};
use queens::cli::{self, CountArgs, EnumerateArgs, EstimateArgs, MemoryArgs, ServeArgs, SumArgs};
use std::process::ExitCode;

/// N-Queens as a gRPC service, and a client for it.
#[derive(Parser, Debug)]
#[command(
    name = "queens",
    version = concat!(env!("CARGO_PKG_VERSION"), " (commit ", env!("QUEENS_COMMIT"), ")"),
    about
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

/// What to do.
#[derive(Subcommand, Debug)]
enum Command {
    /// Serve queens.v1.Queens until SIGTERM or Ctrl-C, with health, reflection, Arrow Flight
    /// and the page with gRPC-Web on the same port.
    Serve(ServeArgs),
    /// Count the solutions of an n×n board: on a running server, over several (--endpoints),
    /// or in this process (--local).
    Count(CountArgs),
    /// Sum the JSON lines of `count --local --json` (files, or stdin), checking that every
    /// shard is there exactly once.
    Sum(SumArgs),
    /// Price a batch count: time a seeded sample of the parts of a split, each in a process
    /// of its own as a batch task runs it, and estimate the whole's core-hours and solutions
    /// (95 % intervals), the memory per part, and the Slurm run to ask for.
    Estimate(EstimateArgs),
    /// Print what a count needs of memory by board size and CPUs, from the solver's model:
    /// what a server reserves for it, the memory limit of a server that admits it, and the
    /// memory a batch task asks for (Slurm's --mem, a Kubernetes Job's request and limit).
    Memory(MemoryArgs),
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

/// Parses the command line and runs the command: on a runtime (its size from
/// `serve --io-threads`) when it speaks to the network, without one when it does not (a
/// shard counted in this process is run thousands of times in a job array, and starting a
/// runtime was a part of each run's fixed cost).
fn start() -> Result<(), cli::Error> {
    let command = Cli::try_parse()?.command;
    let forced = std::env::var(queens::solver::TIER_VARIABLE).ok();
    queens::solver::forced_tier(forced.as_deref()).map_err(|e| cli::Error::Tier(e.to_string()))?;
    match command {
        Command::Sum(args) => cli::sum(args),
        Command::Estimate(args) => cli::estimate(&args),
        Command::Memory(args) => cli::memory(&args),
        Command::Count(args) if args.local => cli::count_local(&args),
        Command::Count(args) => runtime(None)?.block_on(cli::count(args)),
        Command::Enumerate(args) => runtime(None)?.block_on(cli::enumerate(args)),
        Command::Serve(args) => {
            runtime(args.io_threads.map(|t| t as usize))?.block_on(cli::serve(args))
        }
    }
}

/// A runtime of `io_threads` worker threads, or the default number.
fn runtime(io_threads: Option<usize>) -> Result<tokio::runtime::Runtime, cli::Error> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(io_threads.unwrap_or_else(queens::config::default_io_threads))
        .enable_all()
        .build()
        .map_err(cli::Error::Runtime)
}
