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
        /// Count in this process, without a server (one shard: --shard I/K; or --shards K with
        /// the index from $JOB_COMPLETION_INDEX or $SLURM_ARRAY_TASK_ID, as a Kubernetes
        /// Indexed Job or a Slurm job array sets it; or, in a Slurm array 0..K-1, without
        /// --shards, shard $SLURM_ARRAY_TASK_ID of $SLURM_ARRAY_TASK_COUNT).
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
    /// or, with --out, fetch them shard by shard into files, resumably (from the server, or
    /// spread over --endpoints).
    Enumerate {
        /// Board size.
        n: u32,
        #[command(flatten)]
        common: Common,
        #[command(flatten)]
        spread: Spread,
        /// The directory for one file of column lists per shard and a manifest; rerunning
        /// the same command resumes and finishes the job.
        #[arg(long, value_name = "DIR", conflicts_with_all = ["packed", "limit", "start_after", "batch_size"])]
        out: Option<PathBuf>,
        /// Only one board per symmetry class (rotations and reflections): the least.
        #[arg(long)]
        fundamental: bool,
        /// At most this many boards (0: no limit).
        #[arg(long, default_value_t = 0)]
        limit: u64,
        /// Print column vectors (`1,3,0,2`), one per line, instead of rendered boards.
        #[arg(long, conflicts_with = "packed")]
        compact: bool,
        /// Write raw n-byte records (byte r = the column of row r's queen), no separators:
        /// the fastest form, for programs.
        #[arg(long)]
        packed: bool,
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
    /// Require client certificates signed by this PEM CA (mutual TLS; needs --tls-cert).
    #[arg(long, value_name = "FILE", requires = "tls_cert")]
    tls_client_ca: Option<PathBuf>,
    /// Require a bearer token on every call but health checks: the file has one
    /// `NAME TOKEN` per line (tokens of 16 characters or more; # starts a comment).
    #[arg(long, value_name = "FILE")]
    auth_tokens: Option<PathBuf>,
    /// Streams one connection may have open at once (advertised to clients).
    #[arg(long, default_value_t = config::MAX_STREAMS_PER_CONNECTION, value_parser = clap::value_parser!(u32).range(1..))]
    max_streams_per_connection: u32,
    /// Connections open at once; more are closed as soon as they are accepted.
    #[arg(long, default_value_t = config::MAX_CONNECTIONS as u32, value_parser = clap::value_parser!(u32).range(1..))]
    max_connections: u32,
    /// Requests in flight at once, server-wide; more are answered RESOURCE_EXHAUSTED.
    #[arg(long, default_value_t = config::MAX_REQUESTS as u32, value_parser = clap::value_parser!(u32).range(1..))]
    max_requests: u32,
    /// Searches one client (token, certificate or IP address) may run at once; more are
    /// answered RESOURCE_EXHAUSTED [default: half of --max-searches, at least 1].
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..))]
    max_searches_per_client: Option<u32>,
    /// Seconds a new connection has to finish its TLS handshake and send the HTTP/2 preface.
    #[arg(long, default_value_t = Seconds(config::PREFACE_TIMEOUT))]
    preface_timeout: Seconds,
    /// Seconds a connection with no open stream is kept.
    #[arg(long, default_value_t = Seconds(config::IDLE_TIMEOUT))]
    idle_timeout: Seconds,
    /// Seconds after which a connection is asked to go away (GOAWAY; clients reconnect)
    /// [default: never].
    #[arg(long)]
    max_connection_age: Option<Seconds>,
    /// Serve Prometheus metrics at http://HOST:PORT/metrics (a listener of its own)
    /// [default: off].
    #[arg(long, value_name = "HOST:PORT")]
    metrics_addr: Option<std::net::SocketAddr>,
    /// Export a span per call over OTLP/gRPC to this collector (e.g. http://127.0.0.1:4317)
    /// [default: off].
    #[arg(long, value_name = "URL")]
    otlp_endpoint: Option<String>,
    /// How log lines are written (stderr; filter with RUST_LOG, e.g. `RUST_LOG=debug`).
    #[arg(long, value_enum, default_value_t = queens::server::LogFormat::Text)]
    log_format: queens::server::LogFormat,
    /// Seconds a stream waits for its reader to take a message before it ends with
    /// DEADLINE_EXCEEDED and gives back its search slot.
    #[arg(long, default_value_t = Seconds(config::STALL_TIMEOUT))]
    stall_timeout: Seconds,
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
    /// Present this PEM client certificate (to a server with --tls-client-ca; needs
    /// --tls-client-key and --ca-cert).
    #[arg(long, value_name = "FILE", requires_all = ["tls_client_key", "ca_cert"])]
    tls_client_cert: Option<PathBuf>,
    /// The PEM private key of --tls-client-cert.
    #[arg(long, value_name = "FILE", requires = "tls_client_cert")]
    tls_client_key: Option<PathBuf>,
    /// Send this bearer token with every call (to a server with --auth-tokens).
    #[arg(long, env = "QUEENS_TOKEN", hide_env_values = true)]
    token: Option<String>,
}

impl Common {
    fn target(&self) -> Target {
        Target {
            addr: self.addr.clone(),
            ca_cert: self.ca_cert.clone(),
            client_cert: self
                .tls_client_cert
                .clone()
                .zip(self.tls_client_key.clone()),
            token: self.token.clone(),
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
        // A server's failure goes to its log (in its format); a client's, or one before the
        // log was set up, to stderr.
        Err(error) if tracing::dispatcher::has_been_set() => {
            tracing::error!("{error}");
            ExitCode::FAILURE
        }
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
            let traces =
                queens::server::init_logs(serve.log_format, serve.otlp_endpoint.as_deref())?;
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
                client_ca: serve
                    .tls_client_ca
                    .as_deref()
                    .map(config::read)
                    .transpose()?,
                tokens: match &serve.auth_tokens {
                    Some(path) => {
                        let text = String::from_utf8_lossy(&config::read(path)?).into_owned();
                        let tokens = queens::server::Tokens::parse(&text)
                            .map_err(|e| format!("{}: {e}", path.display()))?;
                        Some(tokens)
                    }
                    None => None,
                },
                max_streams_per_connection: serve.max_streams_per_connection,
                max_connections: serve.max_connections as usize,
                max_requests: serve.max_requests as usize,
                max_searches_per_client: serve.max_searches_per_client.map(|m| m as usize),
                preface_timeout: serve.preface_timeout.0,
                idle_timeout: serve.idle_timeout.0,
                max_connection_age: serve.max_connection_age.map(|s| s.0),
                stall_timeout: serve.stall_timeout.0,
                metrics_addr: serve.metrics_addr,
                otlp_endpoint: serve.otlp_endpoint.clone(),
                ..defaults
            };
            let served = queens::server::serve(&serve.addr, config).await;
            if let Some(traces) = traces {
                traces.shutdown().await;
            }
            served?;
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
            if !local && spread.endpoints.is_empty() && spread.shards.is_some() {
                return Err(
                    "--shards K spreads a count over --endpoints, or splits a --local one; \
                     for one part on one server use --shard I/K"
                        .into(),
                );
            }
            if local {
                client::count_local(request, spread.shards, json)?;
            } else if !spread.endpoints.is_empty() {
                let job = job(n, &common, false, &spread)?;
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
            packed,
            start_after,
            batch_size,
            spread,
            out,
        } => {
            if let Some(dir) = out {
                let job = job(n, &common, fundamental, &spread)?;
                let endpoints = match spread.endpoints.is_empty() {
                    true => vec![common.addr.clone()],
                    false => spread.endpoints.clone(),
                };
                client::enumerate_fanout(job, &endpoints, &dir).await?;
                return Ok(());
            }
            if !spread.endpoints.is_empty() || spread.shards.is_some() {
                return Err(
                    "--endpoints and --shards fetch an enumeration into files: add \
                     --out DIR (for one part of the stream use --shard I/K)"
                        .into(),
                );
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
                packed,
            };
            let print = match (packed, compact) {
                (true, _) => client::Print::Packed,
                (false, true) => client::Print::Compact,
                (false, false) => client::Print::Classic,
            };
            client::enumerate(&common.target(), request, print).await?;
        }
    }
    Ok(())
}

/// The fan-out job the flags describe.
fn job(
    n: u32,
    common: &Common,
    fundamental: bool,
    spread: &Spread,
) -> Result<queens::fanout::Job, client::Error> {
    Ok(client::fanout_job(
        n,
        common.fixed(),
        fundamental,
        spread.shards,
        spread.endpoints.len(),
        spread.max_attempts,
        common.target().access()?,
    ))
}
