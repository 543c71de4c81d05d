//! A minimal HTTP/2 client over `std::net::TcpStream`, for tests that must send what no real
//! client would: thousands of never-finished requests, window updates that overflow, floods
//! of streams. It writes frames built by hand (HPACK literals without indexing or Huffman)
//! and a reader thread parses the server's frames, skipping their payloads but counting
//! what matters: SETTINGS values, RST_STREAMs, GOAWAY, PING acks, ended streams, the close.

#![allow(dead_code)] // each test uses part of this

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::{Shutdown, SocketAddr, TcpStream};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// The client connection preface.
pub const PREFACE: &[u8; 24] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

/// Frame types.
pub const DATA: u8 = 0x0;
pub const HEADERS: u8 = 0x1;
pub const RST_STREAM: u8 = 0x3;
pub const SETTINGS: u8 = 0x4;
pub const PING: u8 = 0x6;
pub const GOAWAY: u8 = 0x7;
pub const WINDOW_UPDATE: u8 = 0x8;

/// Frame flags.
pub const END_STREAM: u8 = 0x1;
pub const ACK: u8 = 0x1;
pub const END_HEADERS: u8 = 0x4;

/// SETTINGS identifiers.
pub const SETTINGS_MAX_CONCURRENT_STREAMS: u16 = 0x3;

/// Error codes.
pub const NO_ERROR: u32 = 0x0;
pub const PROTOCOL_ERROR: u32 = 0x1;
pub const FLOW_CONTROL_ERROR: u32 = 0x3;
pub const REFUSED_STREAM: u32 = 0x7;
pub const CANCEL: u32 = 0x8;
pub const ENHANCE_YOUR_CALM: u32 = 0xb;

/// Appends one frame.
pub fn push_frame(buf: &mut Vec<u8>, kind: u8, flags: u8, stream: u32, payload: &[u8]) {
    let len = payload.len();
    assert!(len < 1 << 24);
    buf.extend_from_slice(&[(len >> 16) as u8, (len >> 8) as u8, len as u8, kind, flags]);
    buf.extend_from_slice(&(stream & 0x7fff_ffff).to_be_bytes());
    buf.extend_from_slice(payload);
}

/// Appends an HPACK integer with an `n`-bit prefix; `first` holds the bits above the prefix.
fn hpack_int(buf: &mut Vec<u8>, n: u8, first: u8, mut value: usize) {
    let max = (1usize << n) - 1;
    if value < max {
        buf.push(first | value as u8);
        return;
    }
    buf.push(first | max as u8);
    value -= max;
    while value >= 128 {
        buf.push((value % 128) as u8 | 0x80);
        value /= 128;
    }
    buf.push(value as u8);
}

/// Appends a "literal header field without indexing — new name" (no Huffman).
fn hpack_literal(buf: &mut Vec<u8>, name: &str, value: &str) {
    buf.push(0x00);
    hpack_int(buf, 7, 0, name.len());
    buf.extend_from_slice(name.as_bytes());
    hpack_int(buf, 7, 0, value.len());
    buf.extend_from_slice(value.as_bytes());
}

/// The header block of a gRPC call to `path` (e.g. `/queens.v1.Queens/Count`).
pub fn request_block(authority: &str, path: &str) -> Vec<u8> {
    let mut block = Vec::with_capacity(128);
    hpack_literal(&mut block, ":method", "POST");
    hpack_literal(&mut block, ":scheme", "http");
    hpack_literal(&mut block, ":path", path);
    hpack_literal(&mut block, ":authority", authority);
    hpack_literal(&mut block, "content-type", "application/grpc");
    hpack_literal(&mut block, "te", "trailers");
    block
}

/// The header block of a Count call.
pub fn count_block(authority: &str) -> Vec<u8> {
    request_block(authority, "/queens.v1.Queens/Count")
}

/// A gRPC length-prefixed CountRequest{n} (field 1, varint).
pub fn count_message(n: u32) -> Vec<u8> {
    let mut proto = vec![0x08];
    let mut v = n;
    while v >= 0x80 {
        proto.push((v as u8 & 0x7f) | 0x80);
        v >>= 7;
    }
    proto.push(v as u8);
    let mut msg = vec![0];
    msg.extend_from_slice(&(proto.len() as u32).to_be_bytes());
    msg.extend_from_slice(&proto);
    msg
}

/// Appends a HEADERS frame (END_HEADERS; END_STREAM when `end`).
pub fn push_headers(buf: &mut Vec<u8>, stream: u32, block: &[u8], end: bool) {
    let flags = END_HEADERS | if end { END_STREAM } else { 0 };
    push_frame(buf, HEADERS, flags, stream, block);
}

/// Appends a DATA frame.
pub fn push_data(buf: &mut Vec<u8>, stream: u32, data: &[u8], end: bool) {
    push_frame(buf, DATA, if end { END_STREAM } else { 0 }, stream, data);
}

/// Appends a WINDOW_UPDATE frame.
pub fn push_window_update(buf: &mut Vec<u8>, stream: u32, increment: u32) {
    push_frame(buf, WINDOW_UPDATE, 0, stream, &increment.to_be_bytes());
}

/// Appends a RST_STREAM frame.
pub fn push_rst_stream(buf: &mut Vec<u8>, stream: u32, code: u32) {
    push_frame(buf, RST_STREAM, 0, stream, &code.to_be_bytes());
}

/// Appends a PING frame with this opaque value.
pub fn push_ping(buf: &mut Vec<u8>, opaque: u64) {
    push_frame(buf, PING, 0, 0, &opaque.to_be_bytes());
}

/// Appends a SETTINGS frame with these values.
pub fn push_settings(buf: &mut Vec<u8>, values: &[(u16, u32)]) {
    let mut payload = Vec::new();
    for (id, value) in values {
        payload.extend_from_slice(&id.to_be_bytes());
        payload.extend_from_slice(&value.to_be_bytes());
    }
    push_frame(buf, SETTINGS, 0, 0, &payload);
}

/// The first GOAWAY the server sent.
#[derive(Clone, Debug)]
pub struct GoAway {
    /// Its last stream id.
    pub last_stream: u32,
    /// Its error code.
    pub code: u32,
    /// Its debug data, lossily decoded.
    pub debug: String,
    /// RST_STREAM frames received before it.
    pub rst_before: u64,
    /// When it arrived, since the connection was opened.
    pub after: Duration,
}

/// How the connection ended.
#[derive(Clone, Debug)]
pub struct Closed {
    /// When, since the connection was opened.
    pub after: Duration,
    /// "eof" or the read error.
    pub how: String,
}

/// What the reader has seen so far.
#[derive(Clone, Debug, Default)]
pub struct Stats {
    /// The server's SETTINGS values (all non-ACK SETTINGS frames merged), once one arrived.
    pub settings: Option<BTreeMap<u16, u32>>,
    /// Frames received.
    pub frames: u64,
    /// RST_STREAM frames received.
    pub rst_streams: u64,
    /// RST_STREAM frames by error code.
    pub rst_codes: BTreeMap<u32, u64>,
    /// The first GOAWAY.
    pub goaway: Option<GoAway>,
    /// GOAWAY frames received.
    pub goaways: u64,
    /// Largest opaque value of a PING ACK.
    pub ping_ack: u64,
    /// PINGs (not ACKs) from the server.
    pub pings: u64,
    /// HEADERS frames received.
    pub headers: u64,
    /// Streams the server ended (HEADERS or DATA with END_STREAM).
    pub ended_streams: u64,
    /// DATA payload bytes.
    pub data_bytes: u64,
    /// Set when the connection ended (EOF or error).
    pub closed: Option<Closed>,
}

impl Stats {
    /// The advertised SETTINGS_MAX_CONCURRENT_STREAMS, if any.
    pub fn max_concurrent_streams(&self) -> Option<u32> {
        self.settings
            .as_ref()
            .and_then(|s| s.get(&SETTINGS_MAX_CONCURRENT_STREAMS).copied())
    }
}

struct Shared {
    stats: Mutex<Stats>,
    changed: Condvar,
}

/// One raw HTTP/2 connection: the caller writes, a thread reads.
pub struct Conn {
    sock: TcpStream,
    shared: Arc<Shared>,
    reader: Option<JoinHandle<()>>,
    /// When the TCP connection was made.
    pub opened: Instant,
    next_ping: u64,
}

impl Conn {
    /// Connects and starts the reader; sends nothing.
    pub fn connect(addr: SocketAddr) -> std::io::Result<Conn> {
        let sock = TcpStream::connect_timeout(&addr, Duration::from_secs(10))?;
        sock.set_nodelay(true)?;
        // A server that stops reading without closing must fail a test, not hang it.
        sock.set_write_timeout(Some(Duration::from_secs(30)))?;
        let opened = Instant::now();
        let shared = Arc::new(Shared {
            stats: Mutex::new(Stats::default()),
            changed: Condvar::new(),
        });
        let read_sock = sock.try_clone()?;
        let reader_shared = shared.clone();
        let reader = std::thread::Builder::new()
            .name("h2raw-reader".into())
            .stack_size(128 * 1024)
            .spawn(move || read_frames(read_sock, reader_shared, opened))?;
        Ok(Conn {
            sock,
            shared,
            reader: Some(reader),
            opened,
            next_ping: 0,
        })
    }

    /// Connects, sends the preface and an empty SETTINGS, waits (up to 10 s) for the server's
    /// SETTINGS and acknowledges them.
    pub fn open(addr: SocketAddr) -> std::io::Result<Conn> {
        let mut conn = Conn::connect(addr)?;
        let mut hello = PREFACE.to_vec();
        push_settings(&mut hello, &[]);
        conn.send(&hello)?;
        let got = conn.wait(Duration::from_secs(10), |s| {
            s.settings.is_some() || s.closed.is_some()
        });
        if !got || conn.stats().settings.is_none() {
            return Err(std::io::Error::other(format!(
                "no SETTINGS from the server: {:?}",
                conn.stats()
            )));
        }
        let mut ack = Vec::new();
        push_frame(&mut ack, SETTINGS, ACK, 0, &[]);
        conn.send(&ack)?;
        Ok(conn)
    }

    /// Writes these bytes (blocking until the kernel took them all).
    pub fn send(&mut self, bytes: &[u8]) -> std::io::Result<()> {
        self.sock.write_all(bytes)
    }

    /// A copy of what the reader has seen.
    pub fn stats(&self) -> Stats {
        self.shared.stats.lock().unwrap().clone()
    }

    /// Waits up to `timeout` for `done` to hold; returns whether it did.
    pub fn wait(&self, timeout: Duration, done: impl Fn(&Stats) -> bool) -> bool {
        let deadline = Instant::now() + timeout;
        let mut stats = self.shared.stats.lock().unwrap();
        loop {
            if done(&stats) {
                return true;
            }
            let now = Instant::now();
            if now >= deadline {
                return false;
            }
            stats = self
                .shared
                .changed
                .wait_timeout(stats, deadline - now)
                .unwrap()
                .0;
        }
    }

    /// Sends a PING and waits (up to `timeout`) for its ACK, which the server sends only after
    /// it has read every frame before it; returns false if it did not come (closed, or slow).
    pub fn barrier(&mut self, timeout: Duration) -> bool {
        self.next_ping += 1;
        let opaque = self.next_ping;
        let mut ping = Vec::new();
        push_ping(&mut ping, opaque);
        if self.send(&ping).is_err() {
            return false;
        }
        self.wait(timeout, |s| s.ping_ack >= opaque || s.closed.is_some());
        self.stats().ping_ack >= opaque
    }

    /// Waits up to `timeout` for the connection to end; returns when it ended (since opened).
    pub fn wait_closed(&self, timeout: Duration) -> Option<Duration> {
        self.wait(timeout, |s| s.closed.is_some());
        self.stats().closed.map(|c| c.after)
    }
}

impl Drop for Conn {
    fn drop(&mut self) {
        let _ = self.sock.shutdown(Shutdown::Both);
        if let Some(reader) = self.reader.take() {
            let _ = reader.join();
        }
    }
}

/// The reader thread: parses frames until EOF or an error.
fn read_frames(mut sock: TcpStream, shared: Arc<Shared>, opened: Instant) {
    let mut buf = vec![0u8; 64 * 1024];
    let mut pending: Vec<u8> = Vec::new();
    loop {
        let read = sock.read(&mut buf);
        let n = match read {
            Ok(0) | Err(_) => {
                let how = match read {
                    Err(e) => e.to_string(),
                    _ => "eof".to_string(),
                };
                let mut stats = shared.stats.lock().unwrap();
                stats.closed = Some(Closed {
                    after: opened.elapsed(),
                    how,
                });
                shared.changed.notify_all();
                return;
            }
            Ok(n) => n,
        };
        pending.extend_from_slice(&buf[..n]);
        let mut at = 0;
        let mut stats = shared.stats.lock().unwrap();
        while pending.len() - at >= 9 {
            let head = &pending[at..at + 9];
            let len = (head[0] as usize) << 16 | (head[1] as usize) << 8 | head[2] as usize;
            if pending.len() - at < 9 + len {
                break;
            }
            let (kind, flags) = (head[3], head[4]);
            let payload = &pending[at + 9..at + 9 + len];
            record(&mut stats, kind, flags, payload, opened);
            at += 9 + len;
        }
        drop(stats);
        pending.drain(..at);
        shared.changed.notify_all();
    }
}

fn be32(bytes: &[u8]) -> u32 {
    u32::from_be_bytes([bytes[0], bytes[1], bytes[2], bytes[3]])
}

fn record(stats: &mut Stats, kind: u8, flags: u8, payload: &[u8], opened: Instant) {
    stats.frames += 1;
    match kind {
        SETTINGS if flags & ACK == 0 => {
            let settings = stats.settings.get_or_insert_with(BTreeMap::new);
            for entry in payload.chunks_exact(6) {
                settings.insert(u16::from_be_bytes([entry[0], entry[1]]), be32(&entry[2..]));
            }
        }
        PING if payload.len() == 8 => {
            let opaque = u64::from_be_bytes(payload.try_into().unwrap());
            if flags & ACK != 0 {
                stats.ping_ack = stats.ping_ack.max(opaque);
            } else {
                stats.pings += 1;
            }
        }
        GOAWAY if payload.len() >= 8 => {
            stats.goaways += 1;
            if stats.goaway.is_none() {
                stats.goaway = Some(GoAway {
                    last_stream: be32(payload) & 0x7fff_ffff,
                    code: be32(&payload[4..]),
                    debug: String::from_utf8_lossy(&payload[8..]).into_owned(),
                    rst_before: stats.rst_streams,
                    after: opened.elapsed(),
                });
            }
        }
        RST_STREAM if payload.len() == 4 => {
            stats.rst_streams += 1;
            *stats.rst_codes.entry(be32(payload)).or_default() += 1;
        }
        HEADERS => {
            stats.headers += 1;
            if flags & END_STREAM != 0 {
                stats.ended_streams += 1;
            }
        }
        DATA => {
            stats.data_bytes += payload.len() as u64;
            if flags & END_STREAM != 0 {
                stats.ended_streams += 1;
            }
        }
        _ => {}
    }
}
