//! The `queens` binary: declares the commands and their flags, and calls the library.
//! `serve` runs the server; `count` and `enumerate` are clients of a running server (or of
//! several, or count in this process); `sum` adds up local shard counts.

use clap::{Args, Parser, Subcommand};
use queens::client::{self, DEFAULT_URL, Target};
use queens::config::{self, Config, DEFAULT_MAX_N, MAX_SEARCH_TIME, SHUTDOWN_GRACE, Seconds};
use queens::pb::{CountRequest, EnumerateRequest};
use queens::solver::{MAX_N, Shard, Square};
use std::path::PathBuf;
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
    Serve(Serve),
    /// Count the solutions of an n×n board: on a running server, over several (--endpoints),
    /// or in this process (--local).
    Count {
        /// Board size.
        n: u32,
        #[command(flatten)]
        common: Common,
        #[command(flatten)]
        spread: Spread,
        /// Count in this process, without a server (one shard: --shard I/K, or --shards K with
        /// the index from $JOB_COMPLETION_INDEX as a Kubernetes Indexed Job sets it).
        #[arg(long, conflicts_with = "endpoints")]
        local: bool,
        /// With --local: print one JSON line (n, shard, solutions, fundamental, seconds) for
        /// `queens sum`.
        #[arg(long, requires = "local")]
        json: bool,
    },
    /// Sum the JSON lines of `count --local --json` (files, or stdin), checking that every
    /// shard is there exactly once.
    Sum {
        /// Files of JSON lines; none reads stdin.
        files: Vec<PathBuf>,
    },
    /// Stream the solutions of an n×n board from a running server, in lexicographic order;
    /// or, with --endpoints and --out, fetch them shard by shard into files, resumably.
    Enumerate {
        /// Board size.
        n: u32,
        #[command(flatten)]
        common: Common,
        #[command(flatten)]
        spread: Spread,
        /// With --endpoints: the directory for one file per shard and a manifest; rerunning
        /// the same command resumes and finishes the job.
        #[arg(long, value_name = "DIR", requires = "endpoints")]
        out: Option<PathBuf>,
        /// Only one board per symmetry class (rotations and reflections): the least.
        #[arg(long)]
        fundamental: bool,
        /// At most this many boards (0: no limit).
        #[arg(long, default_value_t = 0)]
        limit: u64,
        /// Print column vectors (`1,3,0,2`), one per line, instead of rendered boards.
        #[arg(long)]
        compact: bool,
        /// Resume after this column vector (n comma-separated columns).
        #[arg(long, value_name = "C,C,...", value_delimiter = ',')]
        start_after: Vec<u32>,
        /// Boards per response message (0: the server chooses).
        #[arg(long, default_value_t = 0)]
        batch_size: u32,
    },
}

/// The flags of `serve`.
#[derive(Args, Debug)]
struct Serve {
    /// Address to listen on (port 0 picks a free port; the log line names it).
    #[arg(long, default_value = "127.0.0.1:50051")]
    addr: String,
    /// Largest board size accepted, for Count and Enumerate alike.
    #[arg(long, default_value_t = DEFAULT_MAX_N, value_parser = clap::value_parser!(u32).range(1..=i64::from(MAX_N)))]
    max_n: u32,
    /// Seconds shutdown waits for open streams to end before closing them anyway.
    #[arg(long, default_value_t = Seconds(SHUTDOWN_GRACE))]
    shutdown_grace: Seconds,
    /// Most searches (streams and counts) running at once; more are refused with
    /// RESOURCE_EXHAUSTED [default: the number of cores].
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..))]
    max_searches: Option<u32>,
    /// Seconds any one search may run before it ends with DEADLINE_EXCEEDED.
    #[arg(long, default_value_t = Seconds(MAX_SEARCH_TIME))]
    max_search_seconds: Seconds,
    /// Threads every search runs on, together (the search pool) [default: the number of
    /// cores].
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..))]
    search_threads: Option<u32>,
    /// Threads of the network side (HTTP/2, sending messages) [default: the number of
    /// cores, at most 4].
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..))]
    io_threads: Option<u32>,
    /// Serve over TLS with this PEM certificate chain (needs --tls-key).
    #[arg(long, value_name = "FILE", requires = "tls_key")]
    tls_cert: Option<PathBuf>,
    /// The PEM private key of --tls-cert.
    #[arg(long, value_name = "FILE", requires = "tls_cert")]
    tls_key: Option<PathBuf>,
}

/// Flags that spread one search over several servers.
#[derive(Args, Debug)]
struct Spread {
    /// Servers to spread the work over (URLs or host:port, comma-separated; a name that
    /// resolves to several addresses counts as one endpoint per address).
    #[arg(long, value_name = "URL,URL,...", value_delimiter = ',')]
    endpoints: Vec<String>,
    /// Number of shards to split the work into [default: 8 per endpoint].
    #[arg(long, value_name = "K", value_parser = clap::value_parser!(u32).range(1..))]
    shards: Option<u32>,
    /// Attempts per shard (over any endpoints) before giving up.
    #[arg(long, default_value_t = queens::fanout::MAX_ATTEMPTS)]
    max_attempts: u32,
}

/// Flags shared by the client commands.
#[derive(Args, Debug)]
struct Common {
    /// Server URL (or host:port).
    #[arg(long, default_value = DEFAULT_URL)]
    addr: String,
    /// A queen every solution must contain, as ROW,COLUMN (from 0); repeat for more.
    #[arg(long, value_name = "R,C")]
    fixed: Vec<Square>,
    /// Only part I of K disjoint parts of the search (parts 0..K-1 add up to the whole).
    #[arg(long, value_name = "I/K")]
    shard: Option<Shard>,
    /// Connect over TLS, trusting this PEM CA certificate (the URL becomes https://).
    #[arg(long, value_name = "FILE")]
    ca_cert: Option<PathBuf>,
}

impl Common {
    fn target(&self) -> Target {
        Target {
            addr: self.addr.clone(),
            ca_cert: self.ca_cert.clone(),
        }
    }

    fn fixed(&self) -> Vec<queens::pb::Square> {
        self.fixed.iter().map(|&s| s.into()).collect()
    }
}

fn main() -> ExitCode {
    let command = Cli::parse().command;
    let io_threads = match &command {
        Command::Serve(serve) => serve.io_threads.map(|t| t as usize),
        _ => None,
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(io_threads.unwrap_or_else(config::default_io_threads))
        .enable_all()
        .build();
    let result = match runtime {
        Ok(runtime) => runtime.block_on(run(command)),
        Err(e) => Err(e.into()),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("error: {error}");
            ExitCode::FAILURE
        }
    }
}

/// Runs one command.
async fn run(command: Command) -> Result<(), Box<dyn std::error::Error>> {
    match command {
        Command::Serve(serve) => {
            let tls = match (&serve.tls_cert, &serve.tls_key) {
                (Some(cert), Some(key)) => Some(config::TlsPem::read(cert, key)?),
                _ => None,
            };
            let defaults = Config::default();
            let search_threads = serve
                .search_threads
                .map_or(defaults.search_threads, |t| t as usize);
            let config = Config {
                max_n: serve.max_n,
                shutdown_grace: serve.shutdown_grace.0,
                max_searches: serve
                    .max_searches
                    .map_or(defaults.max_searches, |m| m as usize),
                max_search_time: serve.max_search_seconds.0,
                search_threads,
                produce_threads: search_threads,
                count_threads: search_threads,
                tls,
                ..defaults
            };
            queens::server::serve(&serve.addr, config).await?;
        }
        Command::Count {
            n,
            common,
            spread,
            local,
            json,
        } => {
            let request = CountRequest {
                n,
                fixed: common.fixed(),
                shard: common.shard.map(Into::into),
            };
            if local {
                client::count_local(request, spread.shards, json)?;
            } else if !spread.endpoints.is_empty() {
                let job = job(n, common.fixed(), false, &spread);
                client::count_fanout(job, &spread.endpoints).await?;
            } else {
                client::count(&common.target(), request).await?;
            }
        }
        Command::Sum { files } => client::sum(&files)?,
        Command::Enumerate {
            n,
            common,
            fundamental,
            limit,
            compact,
            start_after,
            batch_size,
            spread,
            out,
        } => {
            if let Some(dir) = out {
                let job = job(n, common.fixed(), fundamental, &spread);
                client::enumerate_fanout(job, &spread.endpoints, &dir).await?;
                return Ok(());
            }
            let request = EnumerateRequest {
                n,
                fundamental,
                fixed: common.fixed(),
                shard: common.shard.map(Into::into),
                start_after,
                limit,
                batch_size,
                compact,
            };
            client::enumerate(&common.target(), request).await?;
        }
    }
    Ok(())
}

/// The fan-out job the flags describe.
fn job(
    n: u32,
    fixed: Vec<queens::pb::Square>,
    fundamental: bool,
    spread: &Spread,
) -> queens::fanout::Job {
    client::fanout_job(
        n,
        fixed,
        fundamental,
        spread.shards,
        spread.endpoints.len(),
        spread.max_attempts,
    )
}
