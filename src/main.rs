//! The `queens` binary: parses flags and calls the library. `serve` runs the server;
//! `count` and `enumerate` are clients of a running server.

mod cli;

use clap::{Args, Parser, Subcommand};
use queens::client::{self, DEFAULT_URL};
use queens::config::{Config, DEFAULT_MAX_N, MAX_SEARCH_TIME, SHUTDOWN_GRACE, TlsPem};
use queens::pb::queens_client::QueensClient;
use queens::pb::{CountRequest, EnumerateRequest, Shard, Square};
use std::io::Write;
use std::process::ExitCode;
use std::time::Duration;
use tokio::net::TcpListener;
use tonic::transport::Channel;

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
    Serve {
        /// Address to listen on (port 0 picks a free port; the log line names it).
        #[arg(long, default_value = "127.0.0.1:50051")]
        addr: String,
        /// Largest board size accepted, for Count and Enumerate alike (at most 32).
        #[arg(long, default_value_t = DEFAULT_MAX_N, value_parser = clap::value_parser!(u32).range(1..=32))]
        max_n: u32,
        /// Seconds shutdown waits for open streams to end before closing them anyway.
        #[arg(long, default_value_t = SHUTDOWN_GRACE.as_secs_f64(), value_parser = seconds)]
        shutdown_grace: f64,
        /// Most searches (streams and counts) running at once; more are refused with
        /// RESOURCE_EXHAUSTED [default: the number of cores].
        #[arg(long, value_parser = clap::value_parser!(u32).range(1..))]
        max_searches: Option<u32>,
        /// Seconds any one search may run before it ends with DEADLINE_EXCEEDED.
        #[arg(long, default_value_t = MAX_SEARCH_TIME.as_secs_f64(), value_parser = seconds)]
        max_search_seconds: f64,
        /// Serve over TLS with this PEM certificate chain (needs --tls-key).
        #[arg(long, value_name = "FILE", requires = "tls_key")]
        tls_cert: Option<std::path::PathBuf>,
        /// The PEM private key of --tls-cert.
        #[arg(long, value_name = "FILE", requires = "tls_cert")]
        tls_key: Option<std::path::PathBuf>,
    },
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
        files: Vec<std::path::PathBuf>,
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
        out: Option<std::path::PathBuf>,
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
    #[arg(long, value_name = "R,C", value_parser = parse_square)]
    fixed: Vec<Square>,
    /// Only part I of K disjoint parts of the search (parts 0..K-1 add up to the whole).
    #[arg(long, value_name = "I/K", value_parser = parse_shard)]
    shard: Option<Shard>,
    /// Connect over TLS, trusting this PEM CA certificate (the URL becomes https://).
    #[arg(long, value_name = "FILE")]
    ca_cert: Option<std::path::PathBuf>,
}

impl Common {
    /// A client connected as these flags say.
    async fn connect(&self) -> Result<QueensClient<Channel>, String> {
        let ca = match &self.ca_cert {
            Some(path) => Some(read(path)?),
            None => None,
        };
        client::connect_with(&self.addr, ca.as_deref())
            .await
            .map_err(|e| format!("cannot connect to {}: {e}", self.addr))
    }
}

/// The bytes of a file, or a message naming it.
fn read(path: &std::path::Path) -> Result<Vec<u8>, String> {
    std::fs::read(path).map_err(|e| format!("cannot read {}: {e}", path.display()))
}

/// A non-negative, finite number of seconds.
fn seconds(s: &str) -> Result<f64, String> {
    let value: f64 = s.parse().map_err(|e| format!("{e}"))?;
    if value.is_finite() && (0.0..=1e9).contains(&value) {
        Ok(value)
    } else {
        Err("expected a number of seconds between 0 and 1e9".into())
    }
}

fn parse_square(s: &str) -> Result<Square, String> {
    let (row, column) = s.split_once(',').ok_or("expected ROW,COLUMN")?;
    Ok(Square {
        row: row.trim().parse().map_err(|e| format!("row: {e}"))?,
        column: column.trim().parse().map_err(|e| format!("column: {e}"))?,
    })
}

fn parse_shard(s: &str) -> Result<Shard, String> {
    let (index, count) = s.split_once('/').ok_or("expected INDEX/COUNT, e.g. 0/4")?;
    Ok(Shard {
        index: index.trim().parse().map_err(|e| format!("index: {e}"))?,
        count: count.trim().parse().map_err(|e| format!("count: {e}"))?,
    })
}

#[tokio::main]
async fn main() -> ExitCode {
    let result = match Cli::parse().command {
        Command::Serve {
            addr,
            max_n,
            shutdown_grace,
            max_searches,
            max_search_seconds,
            tls_cert,
            tls_key,
        } => {
            let tls = match (tls_cert, tls_key) {
                (Some(cert), Some(key)) => match (read(&cert), read(&key)) {
                    (Ok(cert), Ok(key)) => Some(TlsPem { cert, key }),
                    (Err(e), _) | (_, Err(e)) => {
                        eprintln!("error: {e}");
                        return ExitCode::FAILURE;
                    }
                },
                _ => None,
            };
            let defaults = Config::default();
            let config = Config {
                max_n,
                shutdown_grace: Duration::from_secs_f64(shutdown_grace),
                max_searches: max_searches.map_or(defaults.max_searches, |m| m as usize),
                max_search_time: Duration::from_secs_f64(max_search_seconds),
                tls,
                ..defaults
            };
            serve(&addr, config).await
        }
        Command::Count {
            n,
            common,
            spread,
            local,
            json,
        } => {
            if local {
                cli::count_local(n, &common.fixed, common.shard, spread.shards, json)
            } else if !spread.endpoints.is_empty() {
                let job = cli::job(n, &common.fixed, false, &spread);
                cli::count_fanout(job, &spread.endpoints).await
            } else {
                count(n, common).await
            }
        }
        Command::Sum { files } => cli::sum(&files),
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
                let job = cli::job(n, &common.fixed, fundamental, &spread);
                return exit(cli::enumerate_fanout(job, &spread.endpoints, &dir).await);
            }
            let request = EnumerateRequest {
                n,
                fundamental,
                fixed: common.fixed.clone(),
                shard: common.shard,
                start_after,
                limit,
                batch_size,
                compact,
            };
            match common.connect().await {
                Ok(client) => enumerate(client, request).await,
                Err(e) => Err(e),
            }
        }
    };
    exit(result)
}

/// The exit code of a command, printing its error.
fn exit(result: Result<(), String>) -> ExitCode {
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("error: {message}");
            ExitCode::FAILURE
        }
    }
}

/// The text of a failed call: its status code and message.
fn status_text(status: tonic::Status) -> String {
    format!("{:?}: {}", status.code(), status.message())
}

async fn serve(addr: &str, config: Config) -> Result<(), String> {
    let listener = TcpListener::bind(addr)
        .await
        .map_err(|e| format!("cannot listen on {addr}: {e}"))?;
    let local = listener.local_addr().map_err(|e| e.to_string())?;
    let lanes = queens::solver::simd_registers().map_or("no SIMD lanes".to_string(), |r| {
        format!("Count in {r} lanes")
    });
    eprintln!(
        "queens: listening on {local} (max n {}, {lanes})",
        config.max_n
    );
    queens::server::run(listener, config, shutdown_signal())
        .await
        .map_err(|e| format!("server failed: {e}"))?;
    eprintln!("queens: stopped");
    Ok(())
}

/// Completes on SIGTERM or Ctrl-C.
async fn shutdown_signal() {
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
        .expect("SIGTERM handler");
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        _ = term.recv() => {}
    }
    eprintln!("queens: shutting down");
}

async fn count(n: u32, common: Common) -> Result<(), String> {
    let mut client = common.connect().await?;
    let request = CountRequest {
        n,
        fixed: common.fixed,
        shard: common.shard,
    };
    let mut updates = client
        .count_progress(request)
        .await
        .map_err(status_text)?
        .into_inner();
    let bar = cli::count_bar();
    let mut last = None;
    while let Some(update) = updates.message().await.map_err(status_text)? {
        if let Some(bar) = &bar {
            cli::show_count(bar, &update);
        }
        if update.done {
            last = Some(update);
        }
    }
    if let Some(bar) = bar {
        bar.finish_and_clear();
    }
    let counts = last.ok_or("the server ended the count without a result")?;
    println!("solutions: {}", counts.solutions);
    if let Some(fundamental) = counts.fundamental {
        println!("fundamental: {fundamental}");
    }
    Ok(())
}

async fn enumerate(
    mut client: QueensClient<Channel>,
    request: EnumerateRequest,
) -> Result<(), String> {
    let compact = request.compact;
    let mut stream = client
        .enumerate(request)
        .await
        .map_err(status_text)?
        .into_inner();
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    let mut first = true;
    while let Some(response) = stream.message().await.map_err(status_text)? {
        for board in &response.boards {
            let written = if compact {
                writeln!(out, "{}", client::compact(board))
            } else {
                let gap = if first { "" } else { "\n" };
                write!(out, "{gap}{}", client::classic(board))
            };
            first = false;
            if written.is_err() {
                return Ok(()); // stdout closed (e.g. `| head`): stop quietly.
            }
        }
        if out.flush().is_err() {
            return Ok(());
        }
    }
    let _ = out.flush();
    Ok(())
}
