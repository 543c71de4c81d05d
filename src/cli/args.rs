//! The flags of every command, as clap declares them, with the conflicts and requirements
//! between them (so a misused flag is a usage error, exit code 2, before anything runs).
//! The commands themselves (`Cli`, `Command`) are declared in `src/main.rs`; what the serve
//! flags make of a `Config` is `serve.rs`'s.

use crate::client::{DEFAULT_URL, Layout, Target};
use crate::config::{
    self, DEFAULT_MAX_N, Encodings, MAX_SEARCH_TIME, ReadError, SHUTDOWN_GRACE, Seconds,
};
use crate::fanout::{FanoutJob, Format, MAX_ATTEMPTS};
use crate::server::LogFormat;
use crate::solver::{MAX_N, RecountMethod, Shard, Square};
use clap::{ArgGroup, Args};
use std::path::PathBuf;

/// The flags of `serve`.
#[derive(Args, Debug)]
pub struct ServeArgs {
    /// Address to listen on (port 0 picks a free port; the log line names it).
    #[arg(long, default_value = "127.0.0.1:50051")]
    pub addr: String,
    /// Largest board size accepted, for Count and Enumerate alike.
    #[arg(long, default_value_t = DEFAULT_MAX_N, value_parser = clap::value_parser!(u32).range(1..=i64::from(MAX_N)))]
    pub max_n: u32,
    /// Seconds shutdown waits for open streams to end before closing them anyway.
    #[arg(long, default_value_t = Seconds(SHUTDOWN_GRACE))]
    pub shutdown_grace: Seconds,
    /// Most long searches (Count and Enumerate above n = 12; small ones take no slot) running
    /// at once; more are refused with RESOURCE_EXHAUSTED [default: the number of cores].
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..))]
    pub max_searches: Option<u32>,
    /// Bytes of memory the searches running at once may reserve in all (digits, or with a
    /// unit: 1536Mi, 2Gi, 3G); a search that does not fit what is left is refused with
    /// RESOURCE_EXHAUSTED [default: the memory cgroup's limit, else the machine's memory,
    /// less a reserve of an eighth, at least 96 MiB].
    #[arg(long, value_name = "BYTES")]
    pub max_memory: Option<config::Bytes>,
    /// Seconds any one search may run before it ends with DEADLINE_EXCEEDED.
    #[arg(long, default_value_t = Seconds(MAX_SEARCH_TIME))]
    pub max_search_seconds: Seconds,
    /// Threads every search runs on, together (the search pool) [default: the number of
    /// cores].
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..))]
    pub search_threads: Option<u32>,
    /// Threads of the network side (HTTP/2, sending messages) [default: the number of
    /// cores, at most 4].
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..))]
    pub io_threads: Option<u32>,
    /// Serve over TLS with this PEM certificate chain (needs --tls-key).
    #[arg(long, value_name = "FILE", requires = "tls_key")]
    pub tls_cert: Option<PathBuf>,
    /// The PEM private key of --tls-cert.
    #[arg(long, value_name = "FILE", requires = "tls_cert")]
    pub tls_key: Option<PathBuf>,
    /// Require client certificates signed by this PEM CA (mutual TLS; needs --tls-cert).
    #[arg(long, value_name = "FILE", requires = "tls_cert")]
    pub tls_client_ca: Option<PathBuf>,
    /// Require a bearer token on every call but health checks: the file has one
    /// `NAME TOKEN` per line (tokens of 16 characters or more; # starts a comment).
    #[arg(long, value_name = "FILE")]
    pub auth_tokens: Option<PathBuf>,
    /// Streams one connection may have open at once (advertised to clients).
    #[arg(long, default_value_t = config::MAX_STREAMS_PER_CONNECTION, value_parser = clap::value_parser!(u32).range(1..))]
    pub max_streams_per_connection: u32,
    /// Connections open at once; more are closed as soon as they are accepted.
    #[arg(long, default_value_t = config::MAX_CONNECTIONS as u32, value_parser = clap::value_parser!(u32).range(1..))]
    pub max_connections: u32,
    /// Requests in flight at once, server-wide; more are answered RESOURCE_EXHAUSTED.
    #[arg(long, default_value_t = config::MAX_REQUESTS as u32, value_parser = clap::value_parser!(u32).range(1..))]
    pub max_requests: u32,
    /// Long searches one client (token, certificate or IP address) may run at once; more are
    /// answered RESOURCE_EXHAUSTED [default: half of --max-searches, at least 1].
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..))]
    pub max_searches_per_client: Option<u32>,
    /// Small searches (Count up to n = 12, Enumerate up to n = 12) running at once; they take
    /// no --max-searches slot, and wait up to --small-search-wait for a place
    /// [default: 32 per core].
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..))]
    pub max_small_searches: Option<u32>,
    /// Small searches one client (token, certificate or IP address) may run at once; more
    /// wait for one of theirs to end [default: half of --max-small-searches, at least 1].
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..))]
    pub max_small_searches_per_client: Option<u32>,
    /// Seconds a small search waits for a place (at most its call's deadline) before it is
    /// answered RESOURCE_EXHAUSTED.
    #[arg(long, default_value_t = Seconds(config::SMALL_SEARCH_WAIT))]
    pub small_search_wait: Seconds,
    /// Requests one client (token, certificate or IP address) may have in flight at once;
    /// more are answered RESOURCE_EXHAUSTED [default: a quarter of --max-requests, at least 1].
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..))]
    pub max_requests_per_client: Option<u32>,
    /// Seconds a new connection has to finish its TLS handshake and send the HTTP/2 preface
    /// (over HTTP/1.1, its first request's whole head).
    #[arg(long, default_value_t = Seconds(config::PREFACE_TIMEOUT))]
    pub preface_timeout: Seconds,
    /// Seconds a connection with no open stream is kept.
    #[arg(long, default_value_t = Seconds(config::IDLE_TIMEOUT))]
    pub idle_timeout: Seconds,
    /// Seconds after which a connection is asked to go away (GOAWAY; clients reconnect)
    /// [default: never].
    #[arg(long)]
    pub max_connection_age: Option<Seconds>,
    /// Serve Prometheus metrics at http://HOST:PORT/metrics (a listener of its own)
    /// [default: off].
    #[arg(long, value_name = "HOST:PORT")]
    pub metrics_addr: Option<std::net::SocketAddr>,
    /// Export a span per call over OTLP/gRPC to this collector (e.g. http://127.0.0.1:4317)
    /// [default: off].
    #[arg(long, value_name = "URL")]
    pub otlp_endpoint: Option<String>,
    /// How log lines are written (stderr; filter with RUST_LOG, e.g. `RUST_LOG=debug`).
    #[arg(long, value_enum, default_value_t = LogFormat::Text)]
    pub log_format: LogFormat,
    /// Seconds a stream waits for its reader to take a message before it ends with
    /// DEADLINE_EXCEEDED and gives back its search slot.
    #[arg(long, default_value_t = Seconds(config::STALL_TIMEOUT))]
    pub stall_timeout: Seconds,
    /// A Flight location (grpc://HOST:PORT or grpc+tls://HOST:PORT) handed out with the
    /// parts of a question (repeat for several replicas; parts go round-robin) [default:
    /// none: a part is fetched from the server that was asked].
    #[arg(long, value_name = "URI", value_parser = flight_location)]
    pub advertise: Vec<String>,
    /// Serve neither the page at / nor gRPC-Web, and accept HTTP/2 only: a port for gRPC
    /// clients alone [default: the page, gRPC-Web and HTTP/1.1 are served].
    #[arg(long)]
    pub no_web: bool,
    /// Let pages of this origin (scheme://host or scheme://host:port, or * for any) call the
    /// service with gRPC-Web: answers the browser's preflight and exposes grpc-status,
    /// grpc-message and grpc-status-details-bin (repeat for more origins) [default: none;
    /// the server's own page needs none].
    #[arg(long, value_name = "ORIGIN", value_parser = crate::web::cors_origin, conflicts_with = "no_web")]
    pub cors_origin: Vec<String>,
    /// Compress Enumerate's responses with the first of these encodings (zstd, gzip;
    /// comma-separated, in order of preference) that the client accepts; none: never
    /// compress. Clients that accept none get the uncompressed stream. Requests may come
    /// compressed with zstd or gzip whatever this offers.
    #[arg(long, value_name = "zstd,gzip|none", default_value_t = config::COMPRESSION)]
    pub compression: Encodings,
}

/// A `--advertise` value that is not a Flight location.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("expected grpc://HOST:PORT or grpc+tls://HOST:PORT")]
pub struct LocationError;

/// A Flight location: `grpc://`, `grpc+tcp://` or `grpc+tls://` and a `HOST:PORT`.
fn flight_location(text: &str) -> Result<String, LocationError> {
    let rest = ["grpc://", "grpc+tcp://", "grpc+tls://"]
        .iter()
        .find_map(|scheme| text.strip_prefix(scheme));
    match rest {
        Some(address)
            if address
                .rsplit_once(':')
                .is_some_and(|(h, p)| !h.is_empty() && p.parse::<u16>().is_ok()) =>
        {
            Ok(text.to_string())
        }
        _ => Err(LocationError),
    }
}

/// The flags of `count`. `--shards` needs somewhere to spread to: `--endpoints`, or
/// `--local` (for one part on one server, `--shard I/K`).
#[derive(Args, Debug)]
#[command(group(ArgGroup::new("count_over").args(["endpoints", "local"]).multiple(true)))]
#[command(group(ArgGroup::new("count_shards").arg("shards").requires("count_over")))]
pub struct CountArgs {
    /// Board size.
    pub n: u32,
    /// Where to connect and what to count.
    #[command(flatten)]
    pub client: ClientArgs,
    /// Where to spread the count.
    #[command(flatten)]
    pub spread: SpreadArgs,
    /// Count in this process, without a server (one shard: --shard I/K; or --shards K with
    /// the index from $JOB_COMPLETION_INDEX or $SLURM_ARRAY_TASK_ID, as a Kubernetes
    /// Indexed Job or a Slurm job array sets it; or, in a Slurm array 0..K-1, without
    /// --shards, shard $SLURM_ARRAY_TASK_ID of $SLURM_ARRAY_TASK_COUNT).
    #[arg(long, conflicts_with = "endpoints")]
    pub local: bool,
    /// With --local: print one JSON line for `queens sum`: n, shard, solutions, fundamental
    /// or turn_fixed, seconds (wall), and how and where it was counted (build, tier, cpu,
    /// host, cpu_seconds, peak_bytes, recount).
    #[arg(long, requires = "local")]
    pub json: bool,
    /// With --local: count this share (0 to 1) of the join's parts (n = 16 to 28) a second
    /// time (as --recount-method says) and fail if a count differs (the JSON line says how
    /// many were recounted, how, and the CPU seconds it took). The same parts on every run with
    /// the same --recount-seed.
    #[arg(long, requires = "local", value_name = "FRACTION", value_parser = fraction)]
    pub recount: Option<f64>,
    /// How --recount counts a part again: `tier` (the join again, in another SIMD tier: a
    /// broken kernel or a faulty core) or `search` (a plain row-by-row search of the part's
    /// solutions, another method than the join: also a wrong idea in the join; far slower,
    /// see docs/performance.md).
    #[arg(long, value_enum, requires = "recount", default_value_t = RecountBy::Tier)]
    pub recount_method: RecountBy,
    /// Chooses which parts --recount takes (the same seed, the same parts anywhere).
    #[arg(long, requires = "recount", value_name = "SEED", default_value_t = 0)]
    pub recount_seed: u64,
}

/// How `--recount` counts a part again.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum RecountBy {
    /// The join again, in another SIMD tier.
    Tier,
    /// A plain search of the part's solutions.
    Search,
}

impl RecountBy {
    /// The solver's method.
    pub fn method(self) -> RecountMethod {
        match self {
            RecountBy::Tier => RecountMethod::Tier,
            RecountBy::Search => RecountMethod::Search,
        }
    }
}

/// A fraction that is not a number from 0 to 1.
#[derive(Debug, thiserror::Error)]
#[error("expected a number from 0 to 1")]
pub struct FractionError;

/// A number from 0 to 1.
fn fraction(text: &str) -> Result<f64, FractionError> {
    let value: f64 = text.parse().map_err(|_| FractionError)?;
    (0.0..=1.0)
        .contains(&value)
        .then_some(value)
        .ok_or(FractionError)
}

/// The flags of `sum`.
#[derive(Args, Debug)]
pub struct SumArgs {
    /// Files of JSON lines; none reads stdin.
    pub files: Vec<PathBuf>,
    /// Sum lines counted by different builds (versions or commits; lines that name none
    /// count as the build `unknown`) instead of refusing them; the builds are listed.
    #[arg(long)]
    pub allow_mixed_builds: bool,
}

/// The flags of `memory`.
#[derive(Args, Debug)]
pub struct MemoryArgs {
    /// Board sizes [default: 16 to 28, the sizes the join counts; every other count takes
    /// the 8 MiB of its own lists].
    #[arg(value_parser = clap::value_parser!(u32).range(1..=32))]
    pub n: Vec<u32>,
    /// The split: the figures are a part's that holds the most keys (1: the whole count).
    #[arg(long, value_name = "K", default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..))]
    pub parts: u32,
    /// The CPUs (engines) a count runs on, one set of figures each.
    #[arg(long, value_name = "C,C,...", value_delimiter = ',', default_values_t = [1, 2], value_parser = clap::value_parser!(u32).range(1..=4096))]
    pub cpus: Vec<u32>,
    /// Print one JSON object per size instead of a table.
    #[arg(long)]
    pub json: bool,
}

/// The flags of `estimate`.
#[derive(Args, Debug)]
pub struct EstimateArgs {
    /// Board size.
    pub n: u32,
    /// The split to price: K parts, as `count --local --shard I/K` counts them.
    #[arg(long, value_name = "K", value_parser = clap::value_parser!(u32).range(1..))]
    pub parts: u32,
    /// Parts to time (at least 2, at most --parts), chosen at random by --seed.
    #[arg(long, value_name = "S", default_value_t = 10)]
    pub samples: u32,
    /// Chooses the sampled parts: the same seed, K and S choose the same parts anywhere.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Wall hours an average part of the suggested split should take.
    #[arg(long, value_name = "HOURS", default_value_t = 1.0, value_parser = positive_hours, allow_negative_numbers = true)]
    pub part_hours: f64,
    /// CPUs each task of the suggested split is given, and each sampled part runs on (held
    /// to that many of the CPUs here, as many parts at a time as they make sets of them)
    /// [default: the CPUs here].
    #[arg(long, value_name = "CPUS", value_parser = clap::value_parser!(u32).range(1..=4096))]
    pub cpus_per_task: Option<u32>,
    /// Most tasks in one Slurm job array (Slurm's MaxArraySize less one).
    #[arg(long, value_name = "TASKS", default_value_t = 1000, value_parser = clap::value_parser!(u32).range(1..))]
    pub array_limit: u32,
    /// Print the estimate as one JSON object instead of text.
    #[arg(long)]
    pub json: bool,
}

/// An hours value that is not a positive number of at most a year.
#[derive(Debug, thiserror::Error)]
#[error("expected a number of hours above 0 and at most 8760")]
pub struct HoursError;

/// A positive number of hours, at most a year.
fn positive_hours(text: &str) -> Result<f64, HoursError> {
    let value: f64 = text.trim().parse().map_err(|_| HoursError)?;
    (value > 0.0 && value <= 8760.0)
        .then_some(value)
        .ok_or(HoursError)
}

/// The flags of `enumerate`. `--endpoints` and `--shards` fetch an enumeration into files:
/// they need `--out DIR` (for one part of the stream, `--shard I/K`), and the flags that
/// shape one stream on stdout, which `--out` refuses, are refused beside them too (clap
/// drops a requirement that conflicts with a flag given).
#[derive(Args, Debug)]
#[command(group(
    ArgGroup::new("enumerate_spread")
        .args(["endpoints", "shards"])
        .multiple(true)
        .requires("out")
        .conflicts_with_all(["packed", "limit", "start_after", "batch_size"])
))]
pub struct EnumerateArgs {
    /// Board size.
    pub n: u32,
    /// Where to connect and what to enumerate.
    #[command(flatten)]
    pub client: ClientArgs,
    /// Where to spread the enumeration (with --out).
    #[command(flatten)]
    pub spread: SpreadArgs,
    /// Write the boards to files instead of stdout: a directory gets one file per shard
    /// and a manifest (rerunning the same command resumes and finishes the job); a path
    /// ending in .parquet gets one Parquet file, from one stream.
    #[arg(long, value_name = "DIR|FILE.parquet", conflicts_with_all = ["packed", "limit", "start_after", "batch_size"])]
    pub out: Option<PathBuf>,
    /// The format of the files of --out: column lists (text) or Parquet, one UInt8 column
    /// per row, r0 to r{n-1} [default: parquet for a path ending in .parquet, else text].
    #[arg(long, value_enum, requires = "out")]
    pub format: Option<Format>,
    /// Only one board per symmetry class (rotations and reflections): the least.
    #[arg(long)]
    pub fundamental: bool,
    /// At most this many boards (0: no limit).
    #[arg(long, default_value_t = 0)]
    pub limit: u64,
    /// Print column vectors (`1,3,0,2`), one per line, instead of rendered boards.
    #[arg(long, conflicts_with = "packed")]
    pub compact: bool,
    /// Write raw n-byte records (byte r = the column of row r's queen), no separators:
    /// the fastest form, for programs.
    #[arg(long)]
    pub packed: bool,
    /// Resume after this column vector (n comma-separated columns).
    #[arg(long, value_name = "C,C,...", value_delimiter = ',')]
    pub start_after: Vec<u32>,
    /// Boards per response message (0: the server chooses).
    #[arg(long, default_value_t = 0)]
    pub batch_size: u32,
    /// How the boards travel: records (as they are printed) or front-coded (shared
    /// prefixes left out: about a quarter of the bytes at n = 16, for links slower than
    /// about 1 Gbit/s); the output is the same.
    #[arg(long, value_enum, env = "QUEENS_LAYOUT", default_value_t = Layout::Records)]
    pub layout: Layout,
}

/// Flags that spread one search over several servers.
#[derive(Args, Debug)]
pub struct SpreadArgs {
    /// Servers to spread the work over (URLs or host:port, comma-separated; a name that
    /// resolves to several addresses counts as one endpoint per address).
    #[arg(long, value_name = "URL,URL,...", value_delimiter = ',')]
    pub endpoints: Vec<String>,
    /// Number of shards to split the work into [default: 8 per endpoint].
    #[arg(long, value_name = "K", value_parser = clap::value_parser!(u32).range(1..))]
    pub shards: Option<u32>,
    /// Attempts per shard (over any endpoints) before giving up.
    #[arg(long, default_value_t = MAX_ATTEMPTS)]
    pub max_attempts: u32,
}

/// Flags shared by the client commands: where to connect, and the part of the question
/// every client command asks alike.
#[derive(Args, Debug)]
pub struct ClientArgs {
    /// Server URL (or host:port).
    #[arg(long, default_value = DEFAULT_URL)]
    pub addr: String,
    /// A queen every solution must contain, as ROW,COLUMN (from 0); repeat for more.
    #[arg(long, value_name = "R,C")]
    pub fixed: Vec<Square>,
    /// Only part I of K disjoint parts of the search (parts 0..K-1 add up to the whole).
    #[arg(long, value_name = "I/K")]
    pub shard: Option<Shard>,
    /// Connect over TLS, trusting this PEM CA certificate (the URL becomes https://).
    #[arg(long, value_name = "FILE")]
    pub ca_cert: Option<PathBuf>,
    /// Present this PEM client certificate (to a server with --tls-client-ca; needs
    /// --tls-client-key and --ca-cert).
    #[arg(long, value_name = "FILE", requires_all = ["tls_client_key", "ca_cert"])]
    pub tls_client_cert: Option<PathBuf>,
    /// The PEM private key of --tls-client-cert.
    #[arg(long, value_name = "FILE", requires = "tls_client_cert")]
    pub tls_client_key: Option<PathBuf>,
    /// Send this bearer token with every call (to a server with --auth-tokens).
    #[arg(long, env = "QUEENS_TOKEN", hide_env_values = true)]
    pub token: Option<String>,
    /// Accept responses compressed with these encodings (zstd, gzip; comma-separated; the
    /// server picks), or none: every response uncompressed.
    #[arg(long, value_name = "zstd,gzip|none", env = "QUEENS_COMPRESSION", default_value_t = crate::client::ACCEPT)]
    pub compression: Encodings,
}

impl ClientArgs {
    /// Where the flags say to connect.
    pub fn target(&self) -> Target {
        Target {
            addr: self.addr.clone(),
            ca_cert: self.ca_cert.clone(),
            client_cert: self
                .tls_client_cert
                .clone()
                .zip(self.tls_client_key.clone()),
            token: self.token.clone(),
            accept: self.compression,
        }
    }

    /// The fixed queens, as a request carries them.
    pub fn fixed(&self) -> Vec<crate::pb::Square> {
        self.fixed.iter().map(|&s| s.into()).collect()
    }

    /// The shard, as a request carries it.
    pub fn shard(&self) -> Option<crate::pb::Shard> {
        self.shard.map(Into::into)
    }
}

impl SpreadArgs {
    /// The fan-out job of the n×n question of `client` (`fundamental`: representatives
    /// only) that these flags describe, its credentials read.
    pub fn job(
        &self,
        n: u32,
        client: &ClientArgs,
        fundamental: bool,
    ) -> Result<FanoutJob, ReadError> {
        Ok(FanoutJob::new(
            n,
            client.fixed(),
            fundamental,
            self.shards,
            self.endpoints.len(),
            self.max_attempts,
            client.target().access()?,
        ))
    }
}
