//! An Enumerate stream beside another client's big Count on the same server: how long the
//! stream's reader waits between two messages, and how many messages and boards it gets,
//! alone and while the Count runs.
//!
//! One client reads an Enumerate stream (n = 17, compact, the server's default batch) for a
//! fixed window (12 s): first alone, then beside another client's CountProgress of n = 23,
//! then beside one of n = 24 (the join's biggest tables and keys of about a second each),
//! then alone again (the drift of the machine over the run). For a row beside a Count, the
//! Count starts first; once its first progress update has come (a quarter of a second in,
//! its tables' build under way, so the window covers the rest of the build and then the
//! keys) the stream is called and read for the window, and then the Count is cancelled by
//! dropping its call. The table's last lines give the Count's progress (its steps: the
//! tables' build first) when the window opened and when it closed. The Count comes
//! from another loopback address (127.0.0.2), so the server sees two clients, each within
//! its share of the search slots. Each row gives the wait from the call to the first
//! message, the largest of the waits between two messages (or from the last one to the
//! window's end) and when in the window it began, their 99th percentile, messages/s
//! and boards/s over the window, boards/s as a ratio to the mean of the two alone rows,
//! and the load average over the last minute when the row started. No timing is asserted.
//!
//! The server is started in this process on 127.0.0.1:0 with the default settings (search
//! threads: the machine's cores; at least two search slots), its runtime apart from the
//! client's. `QUEENS_BENCH_ADDR` (e.g. `http://127.0.0.1:50051`) points the same client at a
//! server already running instead, such as an older build's `queens serve`; on a
//! non-loopback address the Count cannot come from another address, and that server needs
//! `--max-searches-per-client 2`.
//!
//! The answers are checked: every board of every message is a solution (bit masks, and each
//! message's first and last board by the naive oracle too), the boards strictly increase
//! across the stream, the first message's first and last board are the solver's (in this
//! process), and a stream that ends within the window (a small n) had A000170(n) boards (up
//! to n = 17) and ended on the mirror of its first board; it is then called again, and the
//! wait for the new stream's first message counts as a wait between two messages. A Count's
//! result is not checked: it is cancelled before it ends.
//!
//! `cargo bench --bench neighbours` (n = 17 beside 23 and 24, 12 s windows, about a
//! minute); `cargo bench --bench neighbours -- smoke` (n = 15 beside 19 and 20, 2 s windows,
//! under 15 s: CI's smoke run); or sizes as arguments, the stream's first and then the
//! Counts', e.g. `cargo bench --bench neighbours -- 16 22 24`. `QUEENS_BENCH_SECONDS` sets
//! the window.

use queens::config::Config;
use queens::pb::queens_client::QueensClient;
use queens::pb::{CountRequest, CountUpdate, EnumerateRequest};
use queens::solver::{self, Problem, Shard, Sink, naive};
use std::net::{IpAddr, Ipv4Addr};
use std::ops::ControlFlow;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::net::TcpListener;
use tokio::task::JoinHandle;
use tokio::time::{Instant, sleep, timeout_at};
use tonic::codec::Streaming;
use tonic::codegen::http::uri::PathAndQuery;
use tonic::transport::{Channel, Endpoint};
use tonic::{Code, Status};

#[path = "shared/client.rs"]
mod client;
use client::InPlace;

/// The OEIS counts the tests check against: the stream's total when it ends within a window.
#[allow(dead_code)]
mod oeis {
    include!("../crates/solver/src/oeis_table.rs");
}

/// What a run measures when no sizes are given: a stream that lasts well beyond the window
/// (n = 17 is about 96 M boards, 28 s alone on a 2-core machine), beside the join's two
/// biggest counts.
const DEFAULT_SIZES: [u32; 3] = [17, 23, 24];

/// The smoke run's sizes: a stream that ends and is called again within a window, beside
/// counts that outlast it.
const SMOKE_SIZES: [u32; 3] = [15, 19, 20];

/// The default window: long enough for over 10,000 messages alone, so the 99th percentile
/// is well defined, and for the rest of n = 24's tables and many of its keys.
const DEFAULT_SECONDS: f64 = 12.0;

/// The smoke run's window.
const SMOKE_SECONDS: f64 = 2.0;

/// The unreported stream read before the first row, so that it does not pay for the
/// server's and the client's first allocations and connections.
const WARM_UP: Duration = Duration::from_secs(1);

/// How long a dropped search gets to stop before the next row: a stream's or a cancelled
/// Count's jobs stop at their next poll, within a slice (20 ms), but the tables of n = 24
/// are most of a GiB to give back, and a call made while the search still holds its slot
/// would be refused.
const SETTLE: Duration = Duration::from_secs(1);

/// How long a call may be refused RESOURCE_EXHAUSTED (the previous row's search still
/// giving back its slot) before the bench gives up.
const ADMISSION_WAIT: Duration = Duration::from_secs(30);

/// The boards the solver gives first, against which every stream's first message is
/// checked: more than any default batch holds (3,000-odd boards of n = 17 in 64 KiB).
const FIRST_BOARDS: u64 = 1 << 16;

fn main() {
    let smoke = std::env::args().any(|a| a == "smoke");
    let sizes: Vec<u32> = std::env::args()
        .skip(1)
        .filter_map(|a| a.parse().ok())
        .collect();
    let sizes = match sizes.len() {
        0 if smoke => SMOKE_SIZES.to_vec(),
        0 => DEFAULT_SIZES.to_vec(),
        1 => [sizes, DEFAULT_SIZES[1..].to_vec()].concat(),
        _ => sizes,
    };
    let (stream_n, counts) = (sizes[0], &sizes[1..]);
    let seconds = std::env::var("QUEENS_BENCH_SECONDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(if smoke {
            SMOKE_SECONDS
        } else {
            DEFAULT_SECONDS
        });
    let window = Duration::from_secs_f64(seconds);
    let expected = Expected::new(stream_n);

    // The server in process has a runtime of its own, as the binary does; the client runs
    // on this thread, as a client process of one thread would.
    let (url, _server) = match std::env::var("QUEENS_BENCH_ADDR") {
        Ok(addr) if !addr.is_empty() => {
            println!("server: external, {addr}");
            (addr, None)
        }
        _ => {
            let (url, runtime, config) = start_server();
            println!(
                "server: in process, {} search threads (the machine's cores), {} search slots",
                config.search_threads, config.max_searches
            );
            (url, Some(runtime))
        }
    };
    let client = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("the client's runtime");
    println!(
        "stream: n = {stream_n}, compact, the server's batch, read for {seconds} s per row; \
         load average {}",
        load_average().join(" ")
    );
    let rows = client.block_on(run(&url, stream_n, counts, window, &expected));
    print_rows(&rows);
}

/// Starts a server on 127.0.0.1:0 with the default settings (at least two search slots) on
/// a runtime of its own: its URL, the runtime (the server lives as long as it), its settings.
fn start_server() -> (String, tokio::runtime::Runtime, Config) {
    let defaults = Config::default();
    let config = Config {
        max_searches: defaults.max_searches.max(2),
        ..defaults
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(queens::config::default_io_threads())
        .enable_all()
        .build()
        .expect("the server's runtime");
    let listener = runtime
        .block_on(TcpListener::bind("127.0.0.1:0"))
        .expect("bind");
    let url = format!("http://{}", listener.local_addr().expect("addr"));
    runtime.spawn(queens::server::run(
        listener,
        config.clone(),
        std::future::pending(),
    ));
    (url, runtime, config)
}

/// One row of the table: what was beside the stream, and what its reader saw.
struct Row {
    /// What ran beside the stream.
    label: String,
    /// What the reader saw in the window.
    seen: Window,
    /// The Count's progress when the window opened and when it closed (rows beside one).
    progress: Option<(CountUpdate, CountUpdate)>,
}

/// Reads the stream alone, beside each Count in turn, and alone again.
async fn run(url: &str, n: u32, counts: &[u32], window: Duration, expected: &Expected) -> Vec<Row> {
    let channel = client::connect(url).await;
    read_window(&channel, n, WARM_UP.min(window), expected).await;
    sleep(SETTLE).await;
    let mut rows = vec![Row {
        label: "alone".into(),
        seen: read_window(&channel, n, window, expected).await,
        progress: None,
    }];
    for &count_n in counts {
        let neighbour = Neighbour::start(url, count_n).await;
        let opened = neighbour.latest();
        let seen = read_window(&channel, n, window, expected).await;
        let closed = neighbour.latest();
        drop(neighbour);
        rows.push(Row {
            label: format!("beside Count n = {count_n}"),
            seen,
            progress: Some((opened, closed)),
        });
        sleep(SETTLE).await;
    }
    rows.push(Row {
        label: "alone again".into(),
        seen: read_window(&channel, n, window, expected).await,
        progress: None,
    });
    rows
}

/// Prints the table, then the Counts' progress over their windows.
fn print_rows(rows: &[Row]) {
    println!();
    println!(
        "{:<22} {:>5} {:>9} {:>9} {:>6} {:>8} {:>10} {:>9} {:>7} {:>6}",
        "",
        "load",
        "first ms",
        "max gap",
        "at s",
        "p99 gap",
        "messages/s",
        "M boards/s",
        "/alone",
        "ended"
    );
    // Alone, before the Counts and after them: their mean cancels a steady drift of the
    // machine's other load over the run.
    let alone: Vec<f64> = rows
        .iter()
        .filter(|r| r.progress.is_none())
        .map(|r| r.seen.boards_per_second())
        .collect();
    let alone = alone.iter().sum::<f64>() / alone.len() as f64;
    for row in rows {
        let seen = &row.seen;
        println!(
            "{:<22} {:>5.2} {:>9.1} {:>9.1} {:>6.2} {:>8.1} {:>10.0} {:>9.3} {:>7.2} {:>6}",
            row.label,
            seen.load,
            ms(seen.first),
            ms(seen.largest.1),
            seen.largest.0.as_secs_f64(),
            ms(seen.percentile_gap(0.99)),
            seen.messages as f64 / seen.seconds,
            seen.boards_per_second() / 1e6,
            seen.boards_per_second() / alone,
            seen.ended,
        );
    }
    println!();
    println!(
        "gaps in ms: the largest wait between two messages (or from the last to the window's \
         end), and when in the window it began; the 99th percentile of the waits; /alone: \
         boards/s over the mean of the alone rows'"
    );
    for row in rows {
        if let Some((opened, closed)) = &row.progress {
            println!(
                "{}: steps {}/{} at {:.2} s when the window opened, {}/{} at {:.2} s when it closed{}",
                row.label,
                opened.subproblems_done,
                opened.subproblems_total,
                opened.elapsed_seconds,
                closed.subproblems_done,
                closed.subproblems_total,
                closed.elapsed_seconds,
                if closed.done {
                    " (done: it ended within the window)"
                } else {
                    ", then cancelled"
                },
            );
        }
    }
}

/// Milliseconds of a duration.
fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// The load average over 1, 5 and 15 minutes, as `/proc/loadavg` gives it.
fn load_average() -> Vec<String> {
    std::fs::read_to_string("/proc/loadavg")
        .map(|l| l.split_whitespace().take(3).map(String::from).collect())
        .unwrap_or_else(|_| vec!["?".into(); 3])
}

/// What every stream of `n` must give: its first boards (the solver's, in this process), its
/// last board and its number of boards (when known).
struct Expected {
    /// The first [`FIRST_BOARDS`] boards, in order.
    first: Vec<Vec<u8>>,
    /// The lexicographically last board: the mirror image of the first.
    last: Vec<u8>,
    /// A000170(n), for n up to 17.
    total: Option<u64>,
}

/// Keeps the first boards pushed into it.
struct Collect(Vec<Vec<u8>>);

impl Sink for Collect {
    fn push(&mut self, columns: &[u8]) -> ControlFlow<()> {
        self.0.push(columns.to_vec());
        ControlFlow::Continue(())
    }
}

impl Expected {
    /// The solver's first boards of `n`, checked by the naive oracle.
    fn new(n: u32) -> Expected {
        let problem = Problem::new(n, &[], false, Shard::WHOLE).expect("a valid n");
        let mut first = Collect(Vec::new());
        let _ = solver::enumerate(&problem, None, Some(FIRST_BOARDS), &mut first);
        let first = first.0;
        assert!(!first.is_empty(), "n = {n} has no solution to stream");
        assert!(first.iter().all(|b| naive::is_solution(b)));
        let last = first[0].iter().map(|&c| n as u8 - 1 - c).collect();
        let total = oeis::A000170.get(n as usize - 1).copied();
        Expected { first, last, total }
    }

    /// Checks a stream's first message against the solver's first boards.
    fn check_first(&self, message: &Message) {
        assert_eq!(
            message.first, self.first[0],
            "the stream's first board is not the solver's"
        );
        if let Some(board) = self.first.get(message.boards as usize - 1) {
            assert_eq!(
                &message.last, board,
                "the first message's last board is not the solver's"
            );
        }
    }

    /// Checks a stream that ended: all its boards, ending on the last.
    fn check_whole(&self, boards: u64, last: &[u8]) {
        assert_eq!(last, self.last, "the stream did not end on the last board");
        if let Some(total) = self.total {
            assert_eq!(boards, total, "the stream lost or added boards");
        }
    }
}

/// What the reader of one stream saw in one window.
struct Window {
    /// Load average over the last minute when the window opened.
    load: f64,
    /// From the first call to its first message (the window's length when none came).
    first: Duration,
    /// The waits between two messages (a new stream's first message after the last of the
    /// one that ended included).
    gaps: Vec<Duration>,
    /// The largest wait between two messages or from the last one to the window's end, and
    /// when in the window it began.
    largest: (Duration, Duration),
    /// Messages read.
    messages: u64,
    /// Boards read.
    boards: u64,
    /// Length of the window in seconds.
    seconds: f64,
    /// Streams that ended within the window.
    ended: u32,
}

impl Window {
    /// Notes a wait of `length` that began `at` into the window, keeping the largest.
    fn note_wait(&mut self, at: Duration, length: Duration) {
        if length > self.largest.1 {
            self.largest = (at, length);
        }
    }

    /// The `p`-quantile of the waits between two messages (nearest rank).
    fn percentile_gap(&self, p: f64) -> Duration {
        let mut gaps = self.gaps.clone();
        gaps.sort();
        let rank = (p * gaps.len() as f64).ceil() as usize;
        gaps.get(rank.saturating_sub(1))
            .copied()
            .unwrap_or_default()
    }

    /// Boards per second over the window.
    fn boards_per_second(&self) -> f64 {
        self.boards as f64 / self.seconds
    }
}

/// Reads Enumerate streams of `n` on `channel` for `length`, checking every message; a
/// stream that ends is checked whole and called again.
async fn read_window(channel: &Channel, n: u32, length: Duration, expected: &Expected) -> Window {
    let load = load_average()[0].parse().unwrap_or(f64::NAN);
    let started = Instant::now();
    let deadline = started + length;
    let mut seen = Window {
        load,
        first: length,
        gaps: Vec::new(),
        largest: (Duration::ZERO, Duration::ZERO),
        messages: 0,
        boards: 0,
        seconds: length.as_secs_f64(),
        ended: 0,
    };
    let mut last = started;
    'streams: loop {
        let Ok(mut stream) = timeout_at(deadline, enumerate(channel, n)).await else {
            break;
        };
        let (mut boards, mut previous) = (0u64, Vec::new());
        loop {
            let Ok(next) = timeout_at(deadline, stream.message()).await else {
                break 'streams;
            };
            let now = Instant::now();
            let Some(message) = next.unwrap_or_else(|s| panic!("the stream failed: {s}")) else {
                expected.check_whole(boards, &previous);
                seen.ended += 1;
                continue 'streams;
            };
            if seen.messages == 0 {
                seen.first = now - started;
            } else {
                seen.gaps.push(now - last);
                seen.note_wait(last - started, now - last);
            }
            last = now;
            if boards == 0 {
                expected.check_first(&message);
            } else {
                assert!(message.first > previous, "messages out of order");
            }
            boards += message.boards;
            previous = message.last;
            seen.messages += 1;
            seen.boards += message.boards;
        }
    }
    seen.note_wait(last - started, deadline.saturating_duration_since(last));
    seen
}

/// Calls Enumerate for `n` (compact, the server's batch), waiting while the server refuses
/// it for want of a slot.
async fn enumerate(channel: &Channel, n: u32) -> Streaming<Message> {
    let request = EnumerateRequest {
        n,
        compact: true,
        ..Default::default()
    };
    admitted(|| {
        let mut grpc = tonic::client::Grpc::new(channel.clone());
        let request = request.clone();
        async move {
            grpc.ready()
                .await
                .map_err(|e| Status::unavailable(e.to_string()))?;
            let path = PathAndQuery::from_static("/queens.v1.Queens/Enumerate");
            let n = n as usize;
            let codec = InPlace::new(move |bytes: &[u8]| check_message(n, bytes));
            grpc.server_streaming(tonic::Request::new(request), path, codec)
                .await
        }
    })
    .await
    .into_inner()
}

/// The answer of `call`, called again every 20 ms while the server answers
/// RESOURCE_EXHAUSTED (for up to [`ADMISSION_WAIT`]); any other error panics.
async fn admitted<T, F, C>(mut call: C) -> T
where
    C: FnMut() -> F,
    F: Future<Output = Result<T, Status>>,
{
    let until = Instant::now() + ADMISSION_WAIT;
    loop {
        match call().await {
            Ok(answer) => return answer,
            Err(s) if s.code() == Code::ResourceExhausted && Instant::now() < until => {
                sleep(Duration::from_millis(20)).await;
            }
            Err(s) => panic!("the call was refused: {s}"),
        }
    }
}

/// Another client's Count, running on the server: its latest progress update; dropping it
/// drops the call, which cancels the count.
struct Neighbour {
    /// The latest update, kept by `reader`.
    latest: Arc<Mutex<CountUpdate>>,
    /// Reads the updates as they come.
    reader: JoinHandle<()>,
}

impl Neighbour {
    /// Calls CountProgress for `n` from another address and waits for its first update.
    async fn start(url: &str, n: u32) -> Neighbour {
        let source = other_address(url);
        if source.is_none() {
            println!("{url} is not a loopback address: the Count comes from this client's own");
        }
        let channel = Endpoint::from_shared(url.to_string())
            .expect("a URL")
            .local_address(source)
            .connect()
            .await
            .unwrap_or_else(|e| panic!("connect to {url} from {source:?}: {e}"));
        let client = QueensClient::new(channel);
        let mut updates = admitted(|| {
            let mut client = client.clone();
            async move {
                let request = CountRequest {
                    n,
                    ..Default::default()
                };
                client.count_progress(request).await
            }
        })
        .await
        .into_inner();
        let first = updates
            .message()
            .await
            .unwrap_or_else(|s| panic!("the Count failed: {s}"))
            .expect("the Count ended without an update");
        let latest = Arc::new(Mutex::new(first));
        let keep = latest.clone();
        let reader = tokio::spawn(async move {
            while let Ok(Some(update)) = updates.message().await {
                *keep.lock().expect("not poisoned") = update;
            }
        });
        Neighbour { latest, reader }
    }

    /// The latest progress update.
    fn latest(&self) -> CountUpdate {
        *self.latest.lock().expect("not poisoned")
    }
}

impl Drop for Neighbour {
    fn drop(&mut self) {
        self.reader.abort();
    }
}

/// A loopback address other than the server's, for a second client on the same machine
/// (all of 127/8 is loopback on Linux); none when the server is not on a loopback address.
fn other_address(url: &str) -> Option<IpAddr> {
    let host = url.split("://").last()?.rsplit_once(':')?.0;
    let ip: Ipv4Addr = match host {
        "localhost" => Ipv4Addr::LOCALHOST,
        host => host.parse().ok()?,
    };
    let other = if ip == Ipv4Addr::new(127, 0, 0, 2) {
        Ipv4Addr::new(127, 0, 0, 3)
    } else {
        Ipv4Addr::new(127, 0, 0, 2)
    };
    ip.is_loopback().then_some(IpAddr::V4(other))
}

/// One checked message: its number of boards and its first and last column vectors.
#[derive(Default)]
struct Message {
    /// Boards in the message.
    boards: u64,
    /// The first board's columns.
    first: Vec<u8>,
    /// The last board's columns.
    last: Vec<u8>,
}

/// Why an `EnumerateResponse` is not the compact, ordered solutions [`check_message`] expects.
#[derive(Debug, thiserror::Error)]
enum Malformed {
    /// No bytes where a field should start.
    #[error("an empty field")]
    Empty,
    /// A field other than 1 (length-delimited), by its key.
    #[error("unexpected key {0:#x}")]
    Key(u8),
    /// A length prefix that is not a varint.
    #[error("a length prefix: {0}")]
    Length(prost::DecodeError),
    /// A field shorter than its length says.
    #[error("a truncated field")]
    Truncated,
    /// A compact board with a field after its columns.
    #[error("a compact board holds more than its columns")]
    MoreThanColumns,
    /// Columns that are not a solution of the board.
    #[error("not a solution: {0:?}")]
    NotASolution(Vec<u8>),
    /// A board's columns not after the previous board's.
    #[error("out of order: {columns:?} after {previous:?}")]
    OutOfOrder { columns: Vec<u8>, previous: Vec<u8> },
    /// The naive oracle rejects the message's first or last board.
    #[error("the naive oracle disagrees")]
    Oracle,
}

/// The boards of an `EnumerateResponse` of compact boards (each a `Board` of packed
/// `columns` only): every one a solution of the n×n board, each after the one before.
fn check_message(n: usize, mut bytes: &[u8]) -> Result<Message, Malformed> {
    let mut message = Message::default();
    let mut previous: &[u8] = &[];
    while !bytes.is_empty() {
        let mut board = field(&mut bytes)?;
        let columns = field(&mut board)?;
        if !board.is_empty() {
            return Err(Malformed::MoreThanColumns);
        }
        if !is_solution(n, columns) {
            return Err(Malformed::NotASolution(columns.to_vec()));
        }
        if message.boards == 0 {
            message.first = columns.to_vec();
        } else if columns <= previous {
            return Err(Malformed::OutOfOrder {
                columns: columns.to_vec(),
                previous: previous.to_vec(),
            });
        }
        previous = columns;
        message.boards += 1;
    }
    message.last = previous.to_vec();
    if !naive::is_solution(&message.first) || !naive::is_solution(&message.last) {
        return Err(Malformed::Oracle);
    }
    Ok(message)
}

/// Takes field 1 (length-delimited: `boards` of a response, `columns` of a board) off the
/// front of `bytes`; its values are one byte each when it is a board's columns (all below
/// 32).
fn field<'a>(bytes: &mut &'a [u8]) -> Result<&'a [u8], Malformed> {
    let (&key, rest) = bytes.split_first().ok_or(Malformed::Empty)?;
    if key != 0x0a {
        return Err(Malformed::Key(key));
    }
    *bytes = rest;
    let len = prost::encoding::decode_varint(bytes).map_err(Malformed::Length)? as usize;
    let value = bytes.get(..len).ok_or(Malformed::Truncated)?;
    *bytes = &bytes[len..];
    Ok(value)
}

/// Whether `columns` is a solution of the n×n board: n queens, each on the board, no two
/// sharing a column or a diagonal. Bit masks, a few operations per row, so that the client
/// checks every board at the stream's pace.
fn is_solution(n: usize, columns: &[u8]) -> bool {
    if columns.len() != n {
        return false;
    }
    let (mut used, mut up, mut down) = (0u64, 0u64, 0u64);
    for (r, &c) in columns.iter().enumerate() {
        let c = usize::from(c);
        if c >= n {
            return false;
        }
        // n <= 32: r + c and r + n - c are below 64.
        let (column, rising, falling) = (1u64 << c, 1u64 << (r + c), 1u64 << (r + n - c));
        if (used & column) | (up & rising) | (down & falling) != 0 {
            return false;
        }
        used |= column;
        up |= rising;
        down |= falling;
    }
    true
}
