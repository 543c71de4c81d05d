//! A long link on loopback: a TCP proxy that delivers every byte a fixed delay after it
//! arrived, each direction on its own, optionally paced to a line rate, as a wide-area link
//! with that one-way latency and bandwidth would (these kernels have no `netem`). Test and
//! bench code only; self-contained (tokio alone), so a bench includes it by `#[path]`.
//!
//! Bytes in flight are held in memory, without bound: a sender that respects its peer's
//! flow control (HTTP/2 windows) never has more than its window in flight, and that is
//! exactly the quantity a long link exposes.

use std::net::SocketAddr;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tokio::time::Instant;

/// Bytes read from a socket at once.
const CHUNK: usize = 64 * 1024;

/// A running proxy; it stops accepting when dropped (connections already open run on until
/// either side closes).
pub struct DelayProxy {
    /// Where clients connect.
    pub addr: SocketAddr,
    accept: JoinHandle<()>,
}

impl Drop for DelayProxy {
    fn drop(&mut self) {
        self.accept.abort();
    }
}

/// The shape of the link: its one-way delay and, if paced, its rate in bytes per second.
#[derive(Clone, Copy, Debug)]
pub struct Link {
    /// Delay of every byte, each way (half the round trip).
    pub one_way: Duration,
    /// Line rate in bytes per second; `None`: as fast as loopback.
    pub rate: Option<u64>,
}

impl DelayProxy {
    /// Listens on 127.0.0.1:0 and forwards every connection to `upstream` over `link`.
    pub async fn start(upstream: SocketAddr, link: Link) -> DelayProxy {
        let listener = TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind the proxy");
        let addr = listener.local_addr().expect("the proxy's address");
        let accept = tokio::spawn(async move {
            while let Ok((client, _)) = listener.accept().await {
                tokio::spawn(async move {
                    let Ok(server) = TcpStream::connect(upstream).await else {
                        return;
                    };
                    let _ = client.set_nodelay(true);
                    let _ = server.set_nodelay(true);
                    let (client_read, client_write) = client.into_split();
                    let (server_read, server_write) = server.into_split();
                    tokio::spawn(carry(client_read, server_write, link));
                    tokio::spawn(carry(server_read, client_write, link));
                });
            }
        });
        DelayProxy { addr, accept }
    }

    /// Its URL for gRPC clients.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }
}

/// Carries one direction: each chunk leaves the link's queue at the pace of its rate and is
/// written `link.one_way` later; the end of the stream travels the same way.
async fn carry(
    mut from: tokio::net::tcp::OwnedReadHalf,
    mut to: tokio::net::tcp::OwnedWriteHalf,
    link: Link,
) {
    let (tx, mut rx) = mpsc::unbounded_channel::<(Instant, Vec<u8>)>();
    let writer = tokio::spawn(async move {
        while let Some((due, bytes)) = rx.recv().await {
            tokio::time::sleep_until(due).await;
            // An empty chunk is the end of the stream.
            if bytes.is_empty() || to.write_all(&bytes).await.is_err() {
                break;
            }
        }
        let _ = to.shutdown().await;
    });
    // When the link is next free to put a byte on the wire.
    let mut free = Instant::now();
    let mut buf = vec![0u8; CHUNK];
    loop {
        let read = from.read(&mut buf).await.unwrap_or(0);
        let now = Instant::now();
        let start = free.max(now);
        let on_wire = link.rate.map_or(Duration::ZERO, |rate| {
            Duration::from_secs_f64(read as f64 / rate as f64)
        });
        free = start + on_wire;
        if tx
            .send((free + link.one_way, buf[..read].to_vec()))
            .is_err()
            || read == 0
        {
            break;
        }
    }
    let _ = writer.await;
}
