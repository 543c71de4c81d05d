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
//! `cargo bench --bench stream` (all cases), `cargo bench --bench stream -- 12` (one n,
//! as CI's smoke run does), or `cargo bench --bench stream -- sweep` (n = 14 compact for
//! batch sizes 1 to 65,536: the measurement behind the default batch size). No timing is asserted; the ratios are the result.

use queens::config::Config;
use queens::pb::EnumerateRequest;
use queens::solver::{self, Problem, Shard, Sink};
use std::ops::ControlFlow;
use std::time::Instant;
use tokio::net::TcpListener;
use tonic::Status;
use tonic::codec::{Codec, DecodeBuf, Decoder};
use tonic::codegen::http::uri::PathAndQuery;
use tonic::transport::Endpoint;
use tonic_prost::ProstCodec;

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
struct Seen {
    boards: u64,
    first: Vec<u8>,
    last: Vec<u8>,
}

/// Encodes the request with prost; decodes responses into [`Seen`] without building boards.
#[derive(Default)]
struct Walk(ProstCodec<EnumerateRequest, EnumerateRequest>);

/// Walks the board entries of one message.
struct WalkDecoder;

impl Codec for Walk {
    type Encode = EnumerateRequest;
    type Decode = Seen;
    type Encoder = <ProstCodec<EnumerateRequest, EnumerateRequest> as Codec>::Encoder;
    type Decoder = WalkDecoder;

    fn encoder(&mut self) -> Self::Encoder {
        self.0.encoder()
    }

    fn decoder(&mut self) -> WalkDecoder {
        WalkDecoder
    }
}

impl Decoder for WalkDecoder {
    type Item = Seen;
    type Error = Status;

    fn decode(&mut self, src: &mut DecodeBuf<'_>) -> Result<Option<Seen>, Status> {
        use prost::bytes::Buf;
        let len = src.remaining();
        // The message is one contiguous buffer: walk it in place.
        let seen = if src.chunk().len() == len {
            walk(src.chunk())
        } else {
            walk(&src.copy_to_bytes(len))
        };
        src.advance(src.remaining());
        seen.map(Some).map_err(Status::internal)
    }
}

/// Counts the `boards` entries of an `EnumerateResponse` and checks that their `columns`
/// (packed, one byte each since n <= 32) strictly increase.
fn walk(mut bytes: &[u8]) -> Result<Seen, String> {
    let mut seen = Seen {
        boards: 0,
        first: Vec::new(),
        last: Vec::new(),
    };
    let mut previous: &[u8] = &[];
    while !bytes.is_empty() {
        if bytes[0] != 0x0a {
            return Err(format!("unexpected key {:#x}", bytes[0]));
        }
        bytes = &bytes[1..];
        let len = prost::encoding::decode_varint(&mut bytes).map_err(|e| e.to_string())? as usize;
        let board = bytes.get(..len).ok_or("truncated board")?;
        bytes = &bytes[len..];
        if board.len() < 2 || board[0] != 0x0a {
            return Err("a board without packed columns first".into());
        }
        let columns = board
            .get(2..2 + usize::from(board[1]))
            .ok_or("truncated columns")?;
        if seen.boards > 0 && columns <= previous {
            return Err(format!("out of order: {columns:?} after {previous:?}"));
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

/// HTTP/2 flow-control window of the client: h2's default of 64 KiB makes the server wait
/// for a WINDOW_UPDATE every 64 KiB; 4 MiB lets a fast stream run.
const WINDOW: u32 = 4 * 1024 * 1024;

/// Boards and seconds of one Enumerate stream drained to the end by a Rust client.
async fn drain(url: &str, n: u32, compact: bool, batch_size: u32) -> (u64, f64) {
    let channel = Endpoint::from_shared(url.to_string())
        .expect("url")
        .initial_stream_window_size(WINDOW)
        .initial_connection_window_size(WINDOW)
        .connect()
        .await
        .expect("connect");
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
        .server_streaming(tonic::Request::new(request), path, Walk::default())
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
}
