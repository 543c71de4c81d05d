//! Every knob of the server and its default, in one place, each with the reason for its value.
//!
//! The binary fills a [`Config`] from its flags; tests build one directly. Nothing here does
//! any work, and nothing here takes from the layers above (stream, service, server): they read
//! these settings.
//!
//! # Layout
//! - here: the defaults and their reasons, [`Config`], [`Seconds`], the TLS files.
//! - `tokens.rs`: the bearer tokens file ([`Tokens`]) and the lookup of a presented token.
//! - `compression.rs`: the message encodings a side offers ([`Encodings`]): the server's
//!   `--compression`, the clients' `--compression`.
//! - `memory.rs`: the memory budget's rule ([`default_max_memory`]: the cgroup's limit or
//!   the machine's memory, less a reserve) and sizes from the command line ([`Bytes`]).

mod compression;
mod memory;
mod tokens;

pub use self::compression::{Encoding, Encodings, EncodingsError};
pub use self::memory::{
    Bytes, BytesError, LimitSource, MIN_MEMORY_RESERVE, MemoryLimit, cgroup_limit,
    default_max_memory, memory_limit, memory_reserve,
};
pub use self::tokens::{Tokens, TokensError};

use std::time::Duration;

/// Largest board a server answers for by default: the core's limit (`u32` row masks).
pub const DEFAULT_MAX_N: u32 = crate::solver::MAX_N;

/// Largest serialized response message: 4 MiB, the default receive limit of every
/// mainstream gRPC client (grpc-go, grpcio, grpc-js, tonic). Batches shrink to stay under it.
pub const MAX_MESSAGE_BYTES: usize = 4 * 1024 * 1024;

/// Bytes a response message aims for when the request leaves `batch_size` at 0: 64 KiB
/// amortises per-message costs (framing, a channel hop, a syscall) over hundreds to
/// thousands of boards, while each message stays small enough to arrive promptly.
///
/// Measured, n = 14 compact drained over loopback (`cargo bench --bench stream -- sweep`),
/// boards/s: Rust client, batch 1: 0.14 M, 64: 1.7 M, 1,024: 2.4 M, 4,096: 2.5 M,
/// 16,384: 2.5 M, 65,536: 2.1 M; Python grpcio (`examples/python/bench.py`, writing the
/// boards to a file), batch 1: 15 k, 64: 209 k, 1,024: 282 k, 4,096: 253 k, 16,384: 270 k,
/// 65,536: 286 k.
/// Throughput is flat from about a thousand boards, and the Rust client's falls off past
/// tens of thousands (big messages are copied and parsed whole before a client sees a
/// board). 64 KiB is 3,640 compact boards of n = 14 and 270 with rows: inside the plateau
/// for both clients, at 1/64 of the 4 MiB cap.
pub const DEFAULT_BATCH_BYTES: usize = 64 * 1024;

/// Bytes of records an Arrow Flight record batch aims for (`DoGet` without `batch_size`):
/// 65,536 boards of n = 16. Bigger than Enumerate's default because an Arrow reader pays per
/// batch (a record batch object, its buffers) where a protobuf reader pays per message and per
/// board alike; the stream's memory stays bounded at the channel's few batches. Measured, n = 16
/// read by pyarrow (`read_all`) from a release server on 2 cores, two runs each: 4,096 boards
/// a batch (64 KiB) 5.50 and 6.22 M boards/s, 65,536 (1 MiB) 6.45 and 6.37 M.
pub const FLIGHT_BATCH_BYTES: usize = 1024 * 1024;

/// Messages the producer may run ahead of the client. Small, because each holds up to
/// [`DEFAULT_BATCH_BYTES`] (or 4 MiB with a large `batch_size`): memory per stream stays
/// bounded at a few messages whatever the size of the result. Four default messages
/// (256 KiB) cover a few milliseconds of the fastest stream, enough to ride out scheduling
/// jitter on either side; a parallel stream's reorder buffer ([`REORDER_BYTES`]) absorbs
/// the rest. Swept with `QUEENS_CHANNEL_MESSAGES=C cargo bench --bench stream` on an idle
/// machine, C = 1, 2, 4, 8, 16, 64: compact n = 16 drained at 1.68-1.79x the bare search and
/// rows n = 14 at 1.05-1.53 M boards/s for every C, with no trend (run-to-run noise), so the
/// channel only buys jitter tolerance and a deeper one would only add memory.
pub const CHANNEL_MESSAGES: usize = 4;

/// Bytes of encoded boards a parallel stream's workers may hold ahead of the one the client
/// is being sent (the reorder buffer): 4 MiB is dozens of prefix tasks at n = 16 (a task is
/// about 130 KiB compact, 2 MiB with rows), so a worker rarely waits for the other, and it
/// keeps a stream's memory flat whatever the size of the result or the speed of the client.
pub const REORDER_BYTES: usize = 4 * 1024 * 1024;

/// The cores this process may use (its CPU affinity), at least 1.
pub fn cores() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// Threads of the server's search pool by default: one per core. Every Count and every
/// Enumerate runs on this pool, in slices, so it is the whole CPU budget of the searches
/// however many run at once.
pub fn default_search_threads() -> usize {
    cores()
}

/// Threads of the async runtime by default (network I/O, HTTP/2, sending messages): one per
/// core up to 4. Boards are encoded on the search pool, so the runtime's work per message is
/// framing and a copy; a few threads carry any stream this machine can produce.
pub fn default_io_threads() -> usize {
    cores().min(4)
}

/// Longest a found board waits in a partly filled batch: sparse searches (fixed queens,
/// huge boards) still show their boards within a fraction of a second.
pub const FLUSH_INTERVAL: Duration = Duration::from_millis(50);

/// How long shutdown waits for open streams after asking them to end; a client that never
/// reads cannot hold the process beyond it.
pub const SHUTDOWN_GRACE: Duration = Duration::from_secs(10);

/// Longest one search may run, streams included (the server's own limit, whatever the
/// client's deadline): an hour is generous for any interactive call, and a batch job splits
/// bigger work into shards.
pub const MAX_SEARCH_TIME: Duration = Duration::from_secs(3600);

/// Largest request message accepted: the largest valid request (n = 32, all 1,024 squares
/// fixed, a resume point) is under 8 KiB, so 64 KiB refuses absurd ones (a million fixed
/// squares) before they are read, without ever limiting a real one.
pub const MAX_REQUEST_BYTES: usize = 64 * 1024;

/// HTTP/2 keepalive: a ping every 30 s, and a peer that does not answer within 10 s is
/// dropped, so a long Count to a dead client is noticed and its search cancelled. The
/// clients ping their servers the same way while a call is open (`crate::client`).
pub const KEEPALIVE_INTERVAL: Duration = Duration::from_secs(30);

/// How long a keepalive ping may go unanswered.
pub const KEEPALIVE_TIMEOUT: Duration = Duration::from_secs(10);

/// Concurrent searches by default: one per core the process may use, since each search
/// keeps a core busy; more would only slow every search down.
pub fn default_max_searches() -> usize {
    cores()
}

/// Largest board a Count (or CountProgress) of which is a small search: admitted beside the
/// long-search slots (`--max-searches`), in the small searches' places, instead of taking a
/// slot. A Count's work is bounded by its `n` alone (fixed queens and shards only cut it), and
/// up to n = 12 it is milliseconds on one thread (2.2-2.4 ms at n = 12, 5.2-5.3 at n = 13,
/// 11-30 at n = 14 on 2 cores, as the call log timed it; docs/performance.md, "Small
/// searches"), about what the call around it costs: a client may have dozens in flight, as gRPC clients multiplex unary calls,
/// while a count of n = 20 holds a core for half a minute and keeps the slot rule.
pub const SMALL_COUNT_N: u32 = 12;

/// Largest board an Enumerate of which is a small search: the whole stream of n = 12 is
/// 14,200 boards, about 6 ms at the 2.3 M boards/s a compact stream drains at; a
/// `limit` only cuts that. A limit alone does not make a bigger board's stream small:
/// with fixed queens or a shard, the first board can be hours of search away, so the
/// server cannot bound the stream's cost before running it.
pub const SMALL_ENUMERATE_N: u32 = 12;

/// Small searches running at once, server-wide, per core by default: half of them (one
/// client's share) is 32 on 2 cores, so a client with 32 calls in flight, as a web backend's
/// or a notebook's thread pool has, never waits for a place, even on a machine so loaded that
/// calls take hundreds of milliseconds (measured: with 8 per core, 24 of 2,200 such calls
/// waited out the second and were refused there). A newcomer still queues behind at most a
/// share of milliseconds-long searches.
pub const SMALL_SEARCHES_PER_CORE: usize = 32;

/// Longest a small search waits for a place before it is refused (at most its call's
/// deadline): places free in milliseconds, so a second means the server is overloaded, and a
/// client refused then backs off as from a busy slot. A waiting call is a request in flight,
/// so the waiters are bounded by `--max-requests-per-client` and `--max-requests`.
pub const SMALL_SEARCH_WAIT: Duration = Duration::from_secs(1);

/// How recently another client must have started a small count for a client with more
/// calls in flight than its turns to be crowding it: such a client's small counts then wait
/// for turns, each lasting at least [`CROWDED_TURN`] (`service::Lane::crowds`). A second
/// covers a client that calls once a second, and a flood goes back to full speed a second
/// after the others have gone.
pub const SMALL_COUNT_COMPANY: Duration = Duration::from_secs(1);

/// Shortest turn of a crowding client's small count: a count of n <= 8 takes microseconds,
/// and turns that short let a flood of them keep both cores busy, the calls around them
/// being the cost. Measured on 2 cores (Count n = 8, client and server on the same cores):
/// beside a client with 32 calls in flight, another client's p99 was 2.9-3.5x its latency
/// alone with the flood's counts taking turns on the pool, 1.4-1.5x with them counted on
/// the call's thread after turns of at least this; the flood then ran 1,000 to 1,700 counts a
/// second (tokio's timer ends a turn on the millisecond tick after it is due).
pub const CROWDED_TURN: Duration = Duration::from_millis(1);

/// Small searches running at once by default: [`SMALL_SEARCHES_PER_CORE`] per core.
pub fn default_max_small_searches() -> usize {
    SMALL_SEARCHES_PER_CORE * cores()
}

/// Streams one connection may have open at once, advertised in SETTINGS_MAX_CONCURRENT_STREAMS
/// (tonic passes none, which switches off h2's own default of 200): a client needs a handful,
/// a fan-out of this CLI 16; 100 is grpc-go's default too. Each open stream costs the server
/// about 8 KiB before it does any work.
pub const MAX_STREAMS_PER_CONNECTION: u32 = 100;

/// Streams the server resets because of a client's protocol errors before it ends that
/// connection with GOAWAY: h2's own default, which tonic switches off (CVE-2025-8671,
/// "MadeYouReset"); no real client comes near it.
pub const MAX_LOCAL_RESETS: usize = 1024;

/// Connections open at once, server-wide; more are closed as soon as they are accepted. An
/// idle HTTP/2 connection costs tens of KiB, so 1,024 stay far inside the Deployment's
/// 256 MiB, and it is more than a replica's real clients.
pub const MAX_CONNECTIONS: usize = 1024;

/// Requests in flight at once, server-wide (every stream a client has opened, whatever its
/// state); more are answered RESOURCE_EXHAUSTED at once, so a flood of held streams over many
/// connections cannot grow the server past its memory limit. Measured (`tests/hardening.rs`,
/// 300 connections × 100 held Count streams, four rounds): peak RSS 56-66 MiB, against
/// 278-408 MiB without the bound.
pub const MAX_REQUESTS: usize = 2048;

/// The part of `--max-requests` one client may hold by default: a quarter, so that a client
/// holding its whole share leaves three quarters for everyone else, and still far more than
/// any real client keeps open (a fan-out of this CLI holds 16 streams, a browser six
/// connections' worth).
pub const REQUESTS_SHARE_DIVISOR: usize = 4;

/// How long a new connection has to send the HTTP/2 preface (after its TLS handshake, and
/// for the handshake itself): a real client sends it at once, and 10 s covers any network.
pub const PREFACE_TIMEOUT: Duration = Duration::from_secs(10);

/// How long a connection with no open stream is kept: long enough that a client reusing it
/// between calls keeps it, short enough that abandoned ones are given back.
pub const IDLE_TIMEOUT: Duration = Duration::from_secs(120);

/// How long a stream may go without its reader taking a message before it ends and gives
/// back its search slot: a reader that is merely slow takes something every few seconds.
pub const STALL_TIMEOUT: Duration = Duration::from_secs(60);

/// CountProgress sends an update this often: a few per second is smooth for a progress bar
/// and costs nothing next to the count.
pub const PROGRESS_INTERVAL: Duration = Duration::from_millis(250);

/// What the server compresses Enumerate's responses with when the client accepts it: nothing
/// by default, since on 2 cores compressing costs more server CPU than a fast link saves
/// (measured: docs/performance.md, "Compression over loopback"); `--compression zstd,gzip`
/// for slow links.
pub const COMPRESSION: Encodings = Encodings::NONE;

/// The server's settings.
#[derive(Clone, Debug)]
pub struct Config {
    /// Largest `n` accepted by Count and Enumerate (at most the core's 32).
    pub max_n: u32,
    /// Largest serialized response message.
    pub max_message_bytes: usize,
    /// Target message size when the client does not choose a batch size.
    pub default_batch_bytes: usize,
    /// Response messages buffered per stream.
    pub channel_messages: usize,
    /// Longest a board waits in a partial batch.
    pub flush_interval: Duration,
    /// Threads of the search pool that every Count and Enumerate runs on.
    pub search_threads: usize,
    /// Most pool threads one Enumerate stream without limit or shards keeps busy (1: the
    /// sequential search).
    pub produce_threads: usize,
    /// Cap on the encoded bytes a parallel stream's workers hold ahead of the client.
    pub reorder_bytes: usize,
    /// Longest shutdown waits for streams to end.
    pub shutdown_grace: Duration,
    /// Cap on concurrent searches (Enumerate streams and Counts), server-wide.
    pub max_searches: usize,
    /// Bytes the searches running at once may reserve in all (`--max-memory`); a search
    /// that does not fit what is left is refused.
    pub max_memory: u64,
    /// Longest one search may run.
    pub max_search_time: Duration,
    /// Largest request message accepted.
    pub max_request_bytes: usize,
    /// Interval of HTTP/2 keepalive pings.
    pub keepalive_interval: Duration,
    /// How long a keepalive ping may go unanswered.
    pub keepalive_timeout: Duration,
    /// Most pool threads one Count keeps busy (its engines share its subproblems).
    pub count_threads: usize,
    /// Interval between CountProgress updates.
    pub progress_interval: Duration,
    /// Serve over TLS with this certificate and key (PEM); plaintext when `None`.
    pub tls: Option<TlsPem>,
    /// With TLS: require a client certificate signed by this CA (PEM).
    pub client_ca: Option<Vec<u8>>,
    /// Bearer tokens that calls must carry (health is exempt); none: no authentication.
    pub tokens: Option<Tokens>,
    /// Streams one connection may have open at once.
    pub max_streams_per_connection: u32,
    /// Connections open at once, server-wide.
    pub max_connections: usize,
    /// Requests in flight at once, server-wide.
    pub max_requests: usize,
    /// Searches one client may run at once (`None`: half of `max_searches`, at least one).
    pub max_searches_per_client: Option<usize>,
    /// Requests one client may have in flight at once (`None`: a quarter of `max_requests`,
    /// at least one).
    pub max_requests_per_client: Option<usize>,
    /// Small searches (see [`SMALL_COUNT_N`], [`SMALL_ENUMERATE_N`]) running at once,
    /// server-wide; they take no long-search slot.
    pub max_small_searches: usize,
    /// Small searches one client may run at once (`None`: half of `max_small_searches`, at
    /// least one).
    pub max_small_searches_per_client: Option<usize>,
    /// Longest a small search waits for a place (at most its call's deadline) before it is
    /// refused.
    pub small_search_wait: Duration,
    /// How long a new connection has to finish its TLS handshake and send the preface.
    pub preface_timeout: Duration,
    /// How long a connection with no open stream is kept.
    pub idle_timeout: Duration,
    /// Connections are closed (gracefully) after this long, if set.
    pub max_connection_age: Option<Duration>,
    /// How long a stream may go without its reader taking a message.
    pub stall_timeout: Duration,
    /// Serve Prometheus metrics on this address (`serve` installs the exporter).
    pub metrics_addr: Option<std::net::SocketAddr>,
    /// Where call spans are exported over OTLP (set up with the log writer, before serving;
    /// here so the startup line shows it).
    pub otlp_endpoint: Option<String>,
    /// Bytes of records an Arrow Flight record batch aims for.
    pub flight_batch_bytes: usize,
    /// Flight locations (`grpc://HOST:PORT`, `grpc+tls://HOST:PORT`) handed out with the
    /// parts of a question, round-robin; none: parts are fetched from the server asked.
    pub advertise: Vec<String>,
    /// The web side of the port: the page at `/`, gRPC-Web and HTTP/1.1 (`--no-web` turns
    /// all three off, leaving gRPC over HTTP/2 only).
    pub web: bool,
    /// Origins (`scheme://host[:port]`, or `*` for any) whose pages may call the service
    /// with gRPC-Web (CORS); none: only the server's own page.
    pub cors_origins: Vec<String>,
    /// What Enumerate's responses may be compressed with, in order of preference, when the
    /// client accepts it; also what requests may arrive compressed with.
    pub compression: Encodings,
}

impl Config {
    /// Searches one client may run at once: the setting, else half the slots (at least one).
    pub fn searches_per_client(&self) -> usize {
        self.max_searches_per_client
            .unwrap_or(self.max_searches / 2)
            .clamp(1, self.max_searches.max(1))
    }

    /// Small counts running at once, whoever's: one per core, and one more kept for a client
    /// running none (clients take these turns in rotation, `service::Turns`). Measured on 2
    /// cores (docs/performance.md, "Small searches"): with 2 turns for a flooding client and
    /// 1 kept, another client's p99 beside it fell from 14-23x its latency alone to 2.2-2.9x;
    /// with 3 and 1 kept it was 4-5x, with 8 and none kept 8-9x.
    pub fn small_search_turns(&self) -> usize {
        cores() + 1
    }

    /// Small searches one client may run at once: the setting, else half of
    /// `max_small_searches` (at least one, at most `max_small_searches`).
    pub fn small_searches_per_client(&self) -> usize {
        self.max_small_searches_per_client
            .unwrap_or(self.max_small_searches / 2)
            .clamp(1, self.max_small_searches.max(1))
    }

    /// Requests one client may have in flight at once: the setting, else a quarter of
    /// `max_requests` (at least one, at most `max_requests`).
    pub fn requests_per_client(&self) -> usize {
        self.max_requests_per_client
            .unwrap_or(self.max_requests / REQUESTS_SHARE_DIVISOR)
            .clamp(1, self.max_requests.max(1))
    }
}

/// A number of seconds from the command line: finite, from 0 to 1e9.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Seconds(pub Duration);

/// Why a text is not a number of [`Seconds`].
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("expected a number of seconds between 0 and 1e9")]
pub struct SecondsError;

impl std::str::FromStr for Seconds {
    type Err = SecondsError;

    fn from_str(text: &str) -> Result<Seconds, SecondsError> {
        let value: f64 = text.trim().parse().map_err(|_| SecondsError)?;
        if value.is_finite() && (0.0..=1e9).contains(&value) {
            Ok(Seconds(Duration::from_secs_f64(value)))
        } else {
            Err(SecondsError)
        }
    }
}

impl std::fmt::Display for Seconds {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.0.as_secs_f64())
    }
}

/// A server certificate chain and its private key, both PEM.
#[derive(Clone)]
pub struct TlsPem {
    /// The certificate chain.
    pub cert: Vec<u8>,
    /// The private key.
    pub key: Vec<u8>,
}

impl TlsPem {
    /// Reads the certificate chain and the key from their files.
    pub fn read(cert: &std::path::Path, key: &std::path::Path) -> Result<TlsPem, ReadError> {
        Ok(TlsPem {
            cert: read(cert)?,
            key: read(key)?,
        })
    }
}

/// A file that could not be read, named.
#[derive(Debug, thiserror::Error)]
#[error("cannot read {}: {source}", path.display())]
pub struct ReadError {
    /// The file.
    pub path: std::path::PathBuf,
    /// Why.
    pub source: std::io::Error,
}

/// The bytes of the file at `path`.
pub fn read(path: &std::path::Path) -> Result<Vec<u8>, ReadError> {
    std::fs::read(path).map_err(|source| ReadError {
        path: path.to_path_buf(),
        source,
    })
}

impl std::fmt::Debug for TlsPem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never print the key.
        write!(
            f,
            "TlsPem {{ cert: {} bytes, key: <redacted> }}",
            self.cert.len()
        )
    }
}

impl Default for Config {
    fn default() -> Config {
        Config {
            max_n: DEFAULT_MAX_N,
            max_message_bytes: MAX_MESSAGE_BYTES,
            default_batch_bytes: DEFAULT_BATCH_BYTES,
            channel_messages: CHANNEL_MESSAGES,
            flush_interval: FLUSH_INTERVAL,
            search_threads: default_search_threads(),
            produce_threads: default_search_threads(),
            reorder_bytes: REORDER_BYTES,
            shutdown_grace: SHUTDOWN_GRACE,
            max_searches: default_max_searches(),
            max_memory: default_max_memory(),
            max_search_time: MAX_SEARCH_TIME,
            max_request_bytes: MAX_REQUEST_BYTES,
            keepalive_interval: KEEPALIVE_INTERVAL,
            keepalive_timeout: KEEPALIVE_TIMEOUT,
            count_threads: default_search_threads(),
            progress_interval: PROGRESS_INTERVAL,
            tls: None,
            client_ca: None,
            tokens: None,
            max_streams_per_connection: MAX_STREAMS_PER_CONNECTION,
            max_connections: MAX_CONNECTIONS,
            max_requests: MAX_REQUESTS,
            max_searches_per_client: None,
            max_requests_per_client: None,
            max_small_searches: default_max_small_searches(),
            max_small_searches_per_client: None,
            small_search_wait: SMALL_SEARCH_WAIT,
            preface_timeout: PREFACE_TIMEOUT,
            idle_timeout: IDLE_TIMEOUT,
            max_connection_age: None,
            stall_timeout: STALL_TIMEOUT,
            metrics_addr: None,
            otlp_endpoint: None,
            flight_batch_bytes: FLIGHT_BATCH_BYTES,
            advertise: Vec::new(),
            web: true,
            cors_origins: Vec::new(),
            compression: COMPRESSION,
        }
    }
}
