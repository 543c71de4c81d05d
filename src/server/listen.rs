//! The listener: accepts TCP connections and hands the server only those it may serve.
//!
//! One task accepts: past `--max-connections` a new connection is closed at once; at the fd
//! limit (or out of memory for sockets) it backs off, 10 ms doubling to 1 s, instead of
//! retrying at full speed. Each accepted connection gets its TLS handshake (when TLS is on)
//! and then its opening within `--preface-timeout`: the HTTP/2 preface, or, where HTTP/1.1
//! is accepted (the web side), the whole head of its first request; it is closed once it has
//! had no open stream for `--idle-timeout` (an HTTP/1.1 connection between requests too). [`Conn`] carries that per-connection state
//! ([`ConnInfo`]); `gate.rs` counts the open streams into it.
//!
//! Not here: HTTP/2 itself (hyper, configured in `mod.rs`), which calls are allowed
//! (`gate.rs`), the TLS configuration (`tls.rs`).

use crate::sync::lock;
use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Waker};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{OwnedSemaphorePermit, Semaphore, mpsc};
use tokio::time::{Instant, Sleep};
use tokio_rustls::TlsAcceptor;
use tokio_rustls::server::TlsStream;
use tokio_stream::wrappers::ReceiverStream;

/// The HTTP/2 client preface.
const PREFACE: &[u8; 24] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

/// First and longest pause of the accept loop when the process is out of file descriptors.
const BACKOFF: (Duration, Duration) = (Duration::from_millis(10), Duration::from_secs(1));

/// What the listener enforces, and what it needs to do so (TLS, the count of ended
/// connections).
#[derive(Clone)]
pub(super) struct ListenerSettings {
    /// Connections open at once.
    pub max_connections: usize,
    /// Time for the TLS handshake and, after it, the HTTP/2 preface (or an HTTP/1.1
    /// request's head).
    pub preface_timeout: Duration,
    /// HTTP/1.1 is accepted besides HTTP/2.
    pub http1: bool,
    /// Time a connection may have no open stream.
    pub idle_timeout: Duration,
    /// Age at which a connection is closed, streams or not (`--max-connection-age` and a
    /// grace after its GOAWAY).
    pub max_age: Option<Duration>,
    /// TCP keepalive interval.
    pub keepalive: Duration,
    /// TLS, when on.
    pub tls: Option<TlsAcceptor>,
    /// Counts connections that ended (the memory trimmer watches it).
    pub closed: Arc<AtomicUsize>,
}

/// What the server knows of one connection; every request on it carries a clone.
#[derive(Clone, Debug)]
pub struct ConnInfo {
    /// The peer's address.
    pub remote: SocketAddr,
    /// The client certificate's fingerprint (hex), under mutual TLS.
    pub certificate: Option<String>,
    /// Open streams and idle time, shared with the connection.
    pub(super) state: Arc<ConnState>,
}

/// A connection's open streams, and when it last had none.
#[derive(Debug)]
pub(super) struct ConnState {
    open: AtomicUsize,
    idle_since: Mutex<Instant>,
    /// The connection's reader, woken when its last stream ends (to start the idle clock).
    reader: Mutex<Option<Waker>>,
}

impl ConnState {
    fn new() -> ConnState {
        ConnState {
            open: AtomicUsize::new(0),
            idle_since: Mutex::new(Instant::now()),
            reader: Mutex::new(None),
        }
    }

    /// A stream opened; it counts until the returned guard is dropped.
    pub(super) fn opened(self: &Arc<ConnState>) -> StreamGuard {
        self.open.fetch_add(1, Ordering::AcqRel);
        StreamGuard(self.clone())
    }
}

/// One open stream of a connection.
#[derive(Debug)]
pub(super) struct StreamGuard(Arc<ConnState>);

impl Drop for StreamGuard {
    fn drop(&mut self) {
        if self.0.open.fetch_sub(1, Ordering::AcqRel) == 1 {
            *lock(&self.0.idle_since) = Instant::now();
            if let Some(waker) = lock(&self.0.reader).take() {
                waker.wake();
            }
        }
    }
}

/// The connections the server may serve, as tonic's `serve_with_incoming` wants them. The
/// accept loop runs until the stream is dropped.
pub(super) fn incoming(
    listener: TcpListener,
    settings: ListenerSettings,
) -> ReceiverStream<Result<Conn, io::Error>> {
    let (tx, rx) = mpsc::channel(64);
    tokio::spawn(accept_loop(listener, settings, tx));
    ReceiverStream::new(rx)
}

/// Accepts until the receiving side goes away.
async fn accept_loop(
    listener: TcpListener,
    settings: ListenerSettings,
    tx: mpsc::Sender<Result<Conn, io::Error>>,
) {
    let slots = Arc::new(Semaphore::new(settings.max_connections));
    let mut backoff = BACKOFF.0;
    loop {
        let accepted = tokio::select! {
            accepted = listener.accept() => accepted,
            () = tx.closed() => return,
        };
        let (tcp, remote) = match accepted {
            Ok(accepted) => {
                backoff = BACKOFF.0;
                accepted
            }
            Err(error) if out_of_resources(&error) => {
                // The pending connection stays in the backlog: retrying at once would spin.
                tokio::time::sleep(backoff).await;
                backoff = (backoff * 2).min(BACKOFF.1);
                continue;
            }
            // The peer gave up before it was accepted, and the like: next one.
            Err(_) => continue,
        };
        let Ok(slot) = slots.clone().try_acquire_owned() else {
            // Over --max-connections: closed at once (dropping it closes the socket).
            drop(tcp);
            metrics::counter!("queens_connections_refused_total", "reason" => "max_connections")
                .increment(1);
            continue;
        };
        let _ = tcp.set_nodelay(true);
        let keepalive = socket2::TcpKeepalive::new().with_time(settings.keepalive);
        let _ = socket2::SockRef::from(&tcp).set_tcp_keepalive(&keepalive);
        let (settings, tx) = (settings.clone(), tx.clone());
        tokio::spawn(async move {
            match handshake(tcp, remote, &settings, slot).await {
                Some(conn) => {
                    metrics::gauge!("queens_connections_open").increment(1.0);
                    let _ = tx.send(Ok(conn)).await;
                }
                None => {
                    metrics::counter!("queens_connections_refused_total", "reason" => "tls_handshake")
                        .increment(1);
                }
            }
        });
    }
}

/// Whether an accept error means the process or the system ran out of something (file
/// descriptors, socket buffers, memory): the backlog will not shrink by retrying at once.
fn out_of_resources(error: &io::Error) -> bool {
    matches!(
        error.raw_os_error(),
        Some(libc::EMFILE | libc::ENFILE | libc::ENOBUFS | libc::ENOMEM)
    )
}

/// The connection ready for HTTP/2, after its TLS handshake (if any) within the preface
/// timeout; `None` when it failed or took too long (the socket is then closed).
async fn handshake(
    tcp: TcpStream,
    remote: SocketAddr,
    settings: &ListenerSettings,
    slot: OwnedSemaphorePermit,
) -> Option<Conn> {
    let deadline = Instant::now() + settings.preface_timeout;
    let (io, certificate) = match &settings.tls {
        None => (Io::Plain(tcp), None),
        Some(acceptor) => {
            let tls = tokio::time::timeout_at(deadline, acceptor.accept(tcp))
                .await
                .ok()?
                .ok()?;
            let certificate = tls
                .get_ref()
                .1
                .peer_certificates()
                .and_then(|certs| certs.first())
                .map(|cert| fingerprint(cert.as_ref()));
            (Io::Tls(Box::new(tls)), certificate)
        }
    };
    let state = Arc::new(ConnState::new());
    Some(Conn {
        io,
        info: ConnInfo {
            remote,
            certificate,
            state,
        },
        preface: Some((
            Opening::new(settings.http1),
            Box::pin(tokio::time::sleep_until(deadline)),
        )),
        idle_timeout: settings.idle_timeout,
        idle: Box::pin(tokio::time::sleep(settings.idle_timeout)),
        too_old: settings
            .max_age
            .map(|age| Box::pin(tokio::time::sleep(age))),
        _slot: slot,
        closed: settings.closed.clone(),
    })
}

/// What a connection has sent of its opening: the HTTP/2 preface, or (where HTTP/1.1 is
/// accepted) the head of an HTTP/1.1 request, up to its empty line. Either must be complete
/// within the preface timeout, so a client that trickles its request line or headers is
/// closed like one that trickles the preface.
#[derive(Debug)]
struct Opening {
    /// HTTP/1.1 is accepted.
    http1: bool,
    /// Bytes seen so far.
    seen: usize,
    /// Of them, the leading bytes that match the HTTP/2 preface.
    matched: usize,
    /// The last four bytes seen (the end of a request head is `\r\n\r\n`).
    tail: u32,
}

impl Opening {
    fn new(http1: bool) -> Opening {
        Opening {
            http1,
            seen: 0,
            matched: 0,
            tail: 0,
        }
    }

    /// Takes the next bytes read; true once the opening is complete. Without HTTP/1.1 any
    /// 24 bytes complete it (hyper checks them); with it, the bytes decide: the preface, or
    /// a request head.
    fn feed(&mut self, bytes: &[u8]) -> bool {
        for &byte in bytes {
            if self.matched == self.seen && PREFACE.get(self.seen) == Some(&byte) {
                self.matched += 1;
            }
            self.seen += 1;
            self.tail = (self.tail << 8) | u32::from(byte);
            if self.matched == PREFACE.len() {
                return true;
            }
            let http2 = self.matched == self.seen;
            if !self.http1 && self.seen >= PREFACE.len() {
                return true;
            }
            if self.http1 && !http2 && (self.tail == 0x0d0a_0d0a || self.tail & 0xffff == 0x0a0a) {
                return true;
            }
        }
        false
    }
}

/// A short stable name for a client certificate: 64 bits of a hash of its DER bytes, in hex.
fn fingerprint(der: &[u8]) -> String {
    use std::hash::{Hash, Hasher};
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    der.hash(&mut hasher);
    format!("cert:{:016x}", hasher.finish())
}

/// The byte stream under a connection.
enum Io {
    Plain(TcpStream),
    Tls(Box<TlsStream<TcpStream>>),
}

/// An accepted connection: its bytes, what is known of it, and its clocks.
pub(super) struct Conn {
    io: Io,
    info: ConnInfo,
    /// The opening as far as it has come, and when it must be complete.
    preface: Option<(Opening, Pin<Box<Sleep>>)>,
    idle_timeout: Duration,
    /// Fires `idle_timeout` after the connection's last stream ended.
    idle: Pin<Box<Sleep>>,
    /// Fires at the connection's largest age, if it has one.
    too_old: Option<Pin<Box<Sleep>>>,
    /// The connection's place under `--max-connections`.
    _slot: OwnedSemaphorePermit,
    /// Counted up when the connection ends.
    closed: Arc<AtomicUsize>,
}

impl Drop for Conn {
    fn drop(&mut self) {
        metrics::gauge!("queens_connections_open").decrement(1.0);
        self.closed.fetch_add(1, Ordering::Relaxed);
    }
}

impl Conn {
    /// Checks the clocks: an error when the preface is late or the connection idle too long.
    fn check_clocks(&mut self, cx: &mut Context<'_>) -> io::Result<()> {
        if let Some((_, late)) = &mut self.preface
            && late.as_mut().poll(cx).is_ready()
        {
            return Err(io::Error::new(
                io::ErrorKind::TimedOut,
                "no HTTP/2 preface or HTTP/1.1 request head in time",
            ));
        }
        if let Some(old) = &mut self.too_old
            && old.as_mut().poll(cx).is_ready()
        {
            return Err(io::Error::new(
                io::ErrorKind::TimedOut,
                "connection past its largest age",
            ));
        }
        let state = &self.info.state;
        if state.open.load(Ordering::Acquire) > 0 {
            return Ok(());
        }
        *lock(&state.reader) = Some(cx.waker().clone());
        let due = *lock(&state.idle_since) + self.idle_timeout;
        if self.idle.deadline() != due {
            self.idle.as_mut().reset(due);
        }
        // Checked again after the waker is stored: a stream that opened meanwhile counts.
        if self.idle.as_mut().poll(cx).is_ready() && state.open.load(Ordering::Acquire) == 0 {
            return Err(io::Error::new(io::ErrorKind::TimedOut, "connection idle"));
        }
        Ok(())
    }
}

impl AsyncRead for Conn {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let before = buf.filled().len();
        let read = match &mut this.io {
            Io::Plain(tcp) => Pin::new(tcp).poll_read(cx, buf),
            Io::Tls(tls) => Pin::new(tls.as_mut()).poll_read(cx, buf),
        };
        if let Poll::Ready(Ok(())) = read {
            if let Some((opening, _)) = &mut this.preface
                && opening.feed(&buf.filled()[before..])
            {
                this.preface = None;
            }
            return Poll::Ready(Ok(()));
        }
        if read.is_pending() {
            this.check_clocks(cx)?;
        }
        read
    }
}

impl AsyncWrite for Conn {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        match &mut self.get_mut().io {
            Io::Plain(tcp) => Pin::new(tcp).poll_write(cx, buf),
            Io::Tls(tls) => Pin::new(tls.as_mut()).poll_write(cx, buf),
        }
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        match &mut self.get_mut().io {
            Io::Plain(tcp) => Pin::new(tcp).poll_write_vectored(cx, bufs),
            Io::Tls(tls) => Pin::new(tls.as_mut()).poll_write_vectored(cx, bufs),
        }
    }

    fn is_write_vectored(&self) -> bool {
        match &self.io {
            Io::Plain(tcp) => tcp.is_write_vectored(),
            Io::Tls(tls) => tls.is_write_vectored(),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match &mut self.get_mut().io {
            Io::Plain(tcp) => Pin::new(tcp).poll_flush(cx),
            Io::Tls(tls) => Pin::new(tls.as_mut()).poll_flush(cx),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match &mut self.get_mut().io {
            Io::Plain(tcp) => Pin::new(tcp).poll_shutdown(cx),
            Io::Tls(tls) => Pin::new(tls.as_mut()).poll_shutdown(cx),
        }
    }
}

impl tonic::transport::server::Connected for Conn {
    type ConnectInfo = ConnInfo;

    fn connect_info(&self) -> ConnInfo {
        self.info.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Feeds `bytes` in pieces of `step`; true once the opening is complete.
    fn complete(http1: bool, bytes: &[u8], step: usize) -> bool {
        let mut opening = Opening::new(http1);
        bytes.chunks(step).any(|piece| opening.feed(piece))
    }

    #[test]
    fn an_opening_is_the_preface_or_a_request_head() {
        for http1 in [false, true] {
            for step in [1, 5, 100] {
                assert!(complete(http1, PREFACE, step));
                assert!(!complete(http1, &PREFACE[..23], step));
                assert!(!complete(http1, &PREFACE[..12], step));
            }
        }
        let head = b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n";
        for step in [1, 3, 100] {
            assert!(complete(true, head, step));
            // The request line alone, or a head without its empty line, is not enough.
            assert!(!complete(true, b"GET / HTTP/1.1\r\n", step));
            assert!(!complete(true, &head[..head.len() - 2], step));
            assert!(complete(true, b"GET / HTTP/1.0\n\n", step));
        }
        // Without HTTP/1.1, any 24 bytes complete it (hyper refuses what is not a preface).
        assert!(complete(false, &head[..24], 1));
        assert!(!complete(false, &head[..23], 1));
        // A POST starts like the preface and then is not one.
        assert!(complete(
            true,
            b"POST /queens.v1.Queens/Count HTTP/1.1\r\nHost: x\r\n\r\n",
            2
        ));
    }
}
