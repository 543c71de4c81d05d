//! Enumerate throughput over loopback, against the bare search in the same run.
//!
//! Starts a server in process on 127.0.0.1:0, drains Enumerate streams to the end with a
//! Rust client, and compares boards/s with the baseline: the same search, single-threaded,
//! into a counting sink, in process. Every drained count is checked against the baseline's,
//! and the boards' order (strictly increasing column vectors) across the whole stream.
//!
//! The client is a cheap consumer: a pass-through codec walks each message's board entries
//! in place (counting them and comparing their columns) instead of building a `Board` and `n`
//! `String`s per board, as a program that only forwards or stores boards would.
//! Then the yardstick, paired in alternating rounds: `count-ref -e n | cat`
//! (`benches/count-ref.c`, built here with gcc) against a `queens serve` process
//! drained by a plain tonic client decoding the generated types (packed and compact), the
//! server's CPU per packed board, and `queens enumerate n --packed|--compact > file`; it
//! prints each as a ratio to count-ref (n = 16 by default, else the n asked for).
//! `cargo bench --bench stream` (all cases), `cargo bench --bench stream -- 12` (one n,
//! as CI's smoke run does), or `cargo bench --bench stream -- sweep` (n = 14 compact for
//! batch sizes 1 to 65,536: the measurement behind the default batch size). No timing is asserted; the ratios are the result.

use queens::config::Config;
use queens::pb::EnumerateRequest;
use queens::pb::queens_client::QueensClient;
use queens::solver::{self, Problem, Shard, Sink};
use std::io::Read;
use std::ops::ControlFlow;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Instant;
use tokio::net::TcpListener;
use tonic::codegen::http::uri::PathAndQuery;

#[path = "shared/client.rs"]
mod client;
use client::InPlace;

/// Counts boards.
struct Counter(u64);

impl Sink for Counter {
    fn push(&mut self, _: &[u8]) -> ControlFlow<()> {
        self.0 += 1;
        ControlFlow::Continue(())
    }
}

/// Boards and seconds of the bare single-threaded search.
fn baseline(n: u32) -> (u64, f64) {
    let problem = Problem::new(n, &[], false, Shard::WHOLE).expect("valid n");
    let mut counter = Counter(0);
    let started = Instant::now();
    let _ = solver::enumerate(&problem, None, None, &mut counter);
    (counter.0, started.elapsed().as_secs_f64())
}

/// What one message held: its number of boards and its first and last column vectors.
#[derive(Default)]
struct Seen {
    boards: u64,
    first: Vec<u8>,
    last: Vec<u8>,
}

/// Why an `EnumerateResponse`'s bytes are not the packed, ordered boards [`walk`] expects.
#[derive(Debug, thiserror::Error)]
enum Malformed {
    /// A field other than 1 (length-delimited), by its key.
    #[error("unexpected key {0:#x}")]
    Key(u8),
    /// A length prefix that is not a varint.
    #[error("a length prefix: {0}")]
    Length(prost::DecodeError),
    /// A board or its columns shorter than their length says.
    #[error("truncated {0}")]
    Truncated(&'static str),
    /// A board whose first field is not its packed columns.
    #[error("a board without packed columns first")]
    NoColumns,
    /// A board's columns not after the previous board's.
    #[error("out of order: {columns:?} after {previous:?}")]
    OutOfOrder { columns: Vec<u8>, previous: Vec<u8> },
}

/// Counts the `boards` entries of an `EnumerateResponse` and checks that their `columns`
/// (packed, one byte each since n <= 32) strictly increase.
fn walk(mut bytes: &[u8]) -> Result<Seen, Malformed> {
    let mut seen = Seen::default();
    let mut previous: &[u8] = &[];
    while !bytes.is_empty() {
        if bytes[0] != 0x0a {
            return Err(Malformed::Key(bytes[0]));
        }
        bytes = &bytes[1..];
        let len = prost::encoding::decode_varint(&mut bytes).map_err(Malformed::Length)? as usize;
        let board = bytes.get(..len).ok_or(Malformed::Truncated("board"))?;
        bytes = &bytes[len..];
        if board.len() < 2 || board[0] != 0x0a {
            return Err(Malformed::NoColumns);
        }
        let columns = board
            .get(2..2 + usize::from(board[1]))
            .ok_or(Malformed::Truncated("columns"))?;
        if seen.boards > 0 && columns <= previous {
            return Err(Malformed::OutOfOrder {
                columns: columns.to_vec(),
                previous: previous.to_vec(),
            });
        }
        if seen.boards == 0 {
            seen.first = columns.to_vec();
        }
        previous = columns;
        seen.boards += 1;
    }
    seen.last = previous.to_vec();
    Ok(seen)
}

/// Boards and seconds of one Enumerate stream drained to the end by a Rust client.
async fn drain(url: &str, n: u32, compact: bool, batch_size: u32) -> (u64, f64) {
    let channel = client::connect(url).await;
    let mut grpc = tonic::client::Grpc::new(channel);
    let started = Instant::now();
    grpc.ready().await.expect("ready");
    let request = EnumerateRequest {
        n,
        compact,
        batch_size,
        ..Default::default()
    };
    let path = PathAndQuery::from_static("/queens.v1.Queens/Enumerate");
    let mut stream = grpc
        .server_streaming(tonic::Request::new(request), path, InPlace::new(walk))
        .await
        .expect("call")
        .into_inner();
    let mut boards = 0u64;
    let mut last: Vec<u8> = Vec::new();
    while let Some(seen) = stream.message().await.expect("stream") {
        assert!(
            boards == 0 || seen.first > last,
            "n={n}: messages out of order"
        );
        boards += seen.boards;
        last = seen.last;
    }
    (boards, started.elapsed().as_secs_f64())
}

/// The server's settings: the defaults, with `QUEENS_PRODUCE_THREADS` overriding the worker
/// threads of a stream (1: the sequential producer) and `QUEENS_CHANNEL_MESSAGES` the
/// messages a stream buffers, to compare them.
fn config() -> Config {
    let defaults = Config::default();
    let var = |name: &str| std::env::var(name).ok().and_then(|v| v.parse().ok());
    Config {
        produce_threads: var("QUEENS_PRODUCE_THREADS").unwrap_or(defaults.produce_threads),
        channel_messages: var("QUEENS_CHANNEL_MESSAGES").unwrap_or(defaults.channel_messages),
        ..defaults
    }
}

/// Drained boards/s of n = 14 compact for batch sizes 1 to 65,536, and the server's default.
fn sweep(runtime: &tokio::runtime::Runtime, url: &str) {
    let (expected, _) = baseline(14);
    println!("{:>10} {:>14}", "batch", "boards/s");
    for batch in [1, 16, 64, 256, 1024, 4096, 16384, 65536, 0] {
        let (boards, seconds) = runtime.block_on(drain(url, 14, true, batch));
        assert_eq!(
            boards, expected,
            "batch {batch}: the stream lost or added boards"
        );
        let label = if batch == 0 {
            "default".to_string()
        } else {
            batch.to_string()
        };
        println!("{label:>10} {:>14.0}", boards as f64 / seconds);
    }
}

/// `benches/count-ref.c` built with `gcc -O3 -march=native` under `target/peers/`
/// (the yardstick: a plain single-threaded C enumerator); `None` when there is
/// no source or no compiler, said on stderr.
fn count_ref() -> Option<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let source = root.join("benches/count-ref.c");
    let binary = root.join("target/peers/count-ref");
    if !source.exists() {
        eprintln!("no {}: the peer rows are left out", source.display());
        return None;
    }
    std::fs::create_dir_all(binary.parent()?).ok()?;
    let built = Command::new("gcc")
        .args(["-O3", "-march=native", "-o"])
        .arg(&binary)
        .arg(&source)
        .status();
    match built {
        Ok(status) if status.success() => Some(binary),
        other => {
            eprintln!("building count-ref failed ({other:?}): the peer rows are left out");
            None
        }
    }
}

/// CPU seconds (user + system) of this process's waited-for children so far.
fn children_cpu() -> f64 {
    // SAFETY: `rusage` is plain integers and `timeval`s, for which all zero bytes are a value.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: getrusage writes into the struct it is given.
    unsafe { libc::getrusage(libc::RUSAGE_CHILDREN, &mut usage) };
    let seconds = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 * 1e-6;
    seconds(usage.ru_utime) + seconds(usage.ru_stime)
}

/// CPU seconds (user + system) process `pid` has used so far, from `/proc`.
fn process_cpu(pid: u32) -> f64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).expect("read /proc stat");
    let fields: Vec<&str> = stat[stat.rfind(')').expect("stat") + 2..]
        .split(' ')
        .collect();
    let ticks: f64 = fields[11].parse::<f64>().unwrap() + fields[12].parse::<f64>().unwrap();
    // SAFETY: sysconf only reads a constant of the system; it takes no pointers.
    let per_second = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    ticks / per_second as f64
}

/// `count-ref -e n | cat`: its boards (16 bytes each at n = 16), wall seconds and
/// count-ref's own CPU seconds. The bench reads the pipe as `cat` would.
fn run_count_ref(binary: &Path, n: u32) -> (u64, f64, f64) {
    let cpu = children_cpu();
    let started = Instant::now();
    let mut child = Command::new(binary)
        .args(["-e", &n.to_string()])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("run count-ref");
    let mut out = child.stdout.take().expect("pipe");
    let mut buffer = vec![0u8; 1 << 16];
    let mut bytes = 0u64;
    loop {
        match out.read(&mut buffer) {
            Ok(0) => break,
            Ok(read) => bytes += read as u64,
            Err(e) => panic!("count-ref's pipe: {e}"),
        }
    }
    assert!(child.wait().expect("wait").success());
    (
        bytes / u64::from(n),
        started.elapsed().as_secs_f64(),
        children_cpu() - cpu,
    )
}

/// A `queens serve` process (the release binary) on a free loopback port, killed on drop.
struct Server {
    child: Child,
    url: String,
}

impl Server {
    fn start() -> Server {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("a free port")
            .port();
        let child = Command::new(env!("CARGO_BIN_EXE_queens"))
            .args(["serve", "--addr", &format!("127.0.0.1:{port}")])
            .stderr(Stdio::null())
            .spawn()
            .expect("start queens serve");
        let until = Instant::now() + std::time::Duration::from_secs(20);
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(Instant::now() < until, "the server did not start listening");
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        Server {
            child,
            url: format!("http://127.0.0.1:{port}"),
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// One Enumerate stream drained by a plain tonic client decoding the generated types:
/// boards, wall seconds.
async fn drain_generated(url: &str, n: u32, packed: bool) -> (u64, f64) {
    let channel = client::connect(url).await;
    let mut client = QueensClient::new(channel);
    let started = Instant::now();
    let request = EnumerateRequest {
        n,
        compact: !packed,
        packed,
        ..Default::default()
    };
    let mut stream = client.enumerate(request).await.expect("call").into_inner();
    let (mut boards, mut check) = (0u64, 0u64);
    while let Some(message) = stream.message().await.expect("stream") {
        if packed {
            boards += (message.packed.len() / n as usize) as u64;
            check = check.wrapping_add(u64::from(*message.packed.last().unwrap_or(&0)));
        } else {
            boards += message.boards.len() as u64;
            if let Some(board) = message.boards.last() {
                check = check.wrapping_add(u64::from(board.columns[n as usize - 1]));
            }
        }
    }
    std::hint::black_box(check);
    (boards, started.elapsed().as_secs_f64())
}

/// `queens enumerate n --compact|--packed > file` against `url`: wall seconds; checks the
/// file's size.
fn run_cli(url: &str, n: u32, form: &str, boards: u64) -> f64 {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/peers/enumerate.out");
    let file = std::fs::File::create(&path).expect("create the output file");
    let started = Instant::now();
    let status = Command::new(env!("CARGO_BIN_EXE_queens"))
        .args(["enumerate", &n.to_string(), form, "--addr", url])
        .stdout(file)
        .status()
        .expect("run queens enumerate");
    let seconds = started.elapsed().as_secs_f64();
    assert!(status.success());
    let size = std::fs::metadata(&path).expect("output").len();
    if form == "--packed" {
        assert_eq!(size, boards * u64::from(n), "{form}: wrong output size");
    } else {
        assert!(size > boards * u64::from(n), "{form}: output too small");
    }
    let _ = std::fs::remove_file(&path);
    seconds
}

/// The median of some seconds.
fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

/// The ratios against `count-ref -e n | cat`, measured in rounds that alternate the
/// peer and every one of ours (medians of `rounds`): a tonic client decoding the generated
/// types (packed, and compact as before), the server's CPU per board (packed), and the CLI
/// writing a file (compact, packed).
fn against_count_ref(runtime: &tokio::runtime::Runtime, n: u32, rounds: usize) {
    let Some(peer) = count_ref() else {
        return;
    };
    let server = Server::start();
    let pid = server.child.id();
    let mut rows: Vec<(&str, Vec<f64>)> = [
        "count-ref -e | cat, wall",
        "count-ref -e, CPU",
        "client packed, wall",
        "client compact, wall",
        "server CPU, packed",
        "CLI --packed > file, wall",
        "CLI --compact > file, wall",
    ]
    .into_iter()
    .map(|label| (label, Vec::new()))
    .collect();
    let mut boards = 0;
    for _ in 0..rounds {
        let (peer_boards, wall, cpu) = run_count_ref(&peer, n);
        boards = peer_boards;
        rows[0].1.push(wall);
        rows[1].1.push(cpu);
        let cpu = process_cpu(pid);
        let (got, wall) = runtime.block_on(drain_generated(&server.url, n, true));
        rows[4].1.push(process_cpu(pid) - cpu);
        assert_eq!(got, boards, "packed: the stream lost or added boards");
        rows[2].1.push(wall);
        let (got, wall) = runtime.block_on(drain_generated(&server.url, n, false));
        assert_eq!(got, boards, "compact: the stream lost or added boards");
        rows[3].1.push(wall);
        rows[5].1.push(run_cli(&server.url, n, "--packed", boards));
        rows[6].1.push(run_cli(&server.url, n, "--compact", boards));
    }
    let peer_wall = median(rows[0].1.clone());
    let peer_cpu = median(rows[1].1.clone());
    println!();
    println!("n = {n}, {boards} boards, medians of {rounds} alternating rounds");
    println!(
        "{:<28} {:>9} {:>14} {:>22}",
        "", "seconds", "boards/s", "vs count-ref"
    );
    for (i, (label, values)) in rows.iter().enumerate() {
        let seconds = median(values.clone());
        let rate = boards as f64 / seconds;
        let ratio = match i {
            0 | 1 => "1.00".to_string(),
            // Throughput: ours over the peer's (higher is better).
            2 | 3 => format!("{:.2}x boards/s", peer_wall / seconds),
            // CPU per board: ours over the peer's (lower is better); /proc counts in clock
            // ticks (10 ms), too coarse for a small n.
            4 if seconds < 0.1 => "- (under 0.1 CPU-s)".to_string(),
            4 => format!("{:.2}x CPU/board", seconds / peer_cpu),
            // Wall time: ours over the peer's (lower is better).
            _ => format!("{:.2}x wall", seconds / peer_wall),
        };
        println!("{label:<28} {seconds:>9.3} {rate:>14.0} {ratio:>22}");
    }
}

fn main() {
    let wanted: Option<u32> = std::env::args().skip(1).find_map(|a| a.parse().ok());
    let sweeping = std::env::args().any(|a| a == "sweep");
    let cases: Vec<(u32, bool)> = match wanted {
        Some(n) => vec![(n, true), (n, false)],
        None => vec![(14, true), (16, true), (14, false)],
    };
    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    let url = runtime.block_on(async {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let url = format!("http://{}", listener.local_addr().expect("addr"));
        tokio::spawn(queens::server::run(
            listener,
            config(),
            std::future::pending(),
        ));
        url
    });
    if sweeping {
        return sweep(&runtime, &url);
    }
    let peer_n = wanted.unwrap_or(16);
    let rounds = if wanted.is_some_and(|n| n < 14) { 1 } else { 3 };
    println!(
        "{:>3} {:>8} {:>12} {:>14} {:>14} {:>7}",
        "n", "form", "boards", "bare boards/s", "stream boards/s", "ratio"
    );
    for (n, compact) in cases {
        let (expected, bare_s) = baseline(n);
        let (boards, stream_s) = runtime.block_on(drain(&url, n, compact, 0));
        assert_eq!(boards, expected, "n={n}: the stream lost or added boards");
        let bare = expected as f64 / bare_s;
        let streamed = boards as f64 / stream_s;
        println!(
            "{n:>3} {:>8} {boards:>12} {bare:>14.0} {streamed:>14.0} {:>7.2}",
            if compact { "compact" } else { "rows" },
            streamed / bare
        );
    }
    against_count_ref(&runtime, peer_n, rounds);
}
