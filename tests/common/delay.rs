//! A long link on loopback: a TCP proxy that delivers every byte a fixed delay after it
//! arrived, each direction on its own, optionally paced to a line rate, as a wide-area link
//! with that one-way latency and bandwidth would (these kernels have no `netem`). Test and
//! bench code only; self-contained (tokio alone), so a bench includes it by `#[path]`.
//!
//! Each direction is pipelined: one task reads continuously and stamps every chunk with the
//! time it is due, another writes each chunk when due, so the delay costs no throughput.
//! What is in flight is bounded by the link's bandwidth-delay product (rate × one-way delay,
//! plus a few chunks): past it the reader stops reading and TCP pushes back on the sender,
//! as a full link would. Not here: shaping the rate of a real interface (`tc`, in the
//! shaped-link bench).

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{Semaphore, mpsc};
use tokio::task::JoinHandle;
use tokio::time::Instant;

/// Bytes read from a socket at once.
const CHUNK: usize = 64 * 1024;
/// Bytes in flight each way when the link has no rate to size them by.
const UNPACED_IN_FLIGHT: usize = 64 << 20;

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

impl Link {
    /// Bytes one direction holds at most: what the rate puts on the wire in one delay (the
    /// bandwidth-delay product), plus four chunks for the reads and writes under way.
    fn in_flight(self) -> usize {
        let product = self.rate.map_or(UNPACED_IN_FLIGHT, |rate| {
            (rate as f64 * self.one_way.as_secs_f64()) as usize
        });
        product + 4 * CHUNK
    }
}

impl DelayProxy {
    /// Listens on 127.0.0.1:0 and forwards every connection to `upstream` over `link`.
    pub async fn start(upstream: SocketAddr, link: Link) -> DelayProxy {
        let listen = SocketAddr::from(([127, 0, 0, 1], 0));
        DelayProxy::listen(listen, upstream, link)
            .await
            .expect("bind the proxy")
    }

    /// Listens on `listen` and forwards every connection to `upstream` over `link`.
    pub async fn listen(
        listen: SocketAddr,
        upstream: SocketAddr,
        link: Link,
    ) -> std::io::Result<DelayProxy> {
        let listener = TcpListener::bind(listen).await?;
        let addr = listener.local_addr()?;
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
        Ok(DelayProxy { addr, accept })
    }

    /// Its URL for gRPC clients.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }
}

/// Carries one direction: each chunk leaves the link's queue at the pace of its rate and is
/// written `link.one_way` later; the end of the stream travels the same way. The reader
/// takes a permit per byte before it queues a chunk and the writer gives them back once
/// written, which bounds the bytes held to `link.in_flight()`.
async fn carry(
    mut from: tokio::net::tcp::OwnedReadHalf,
    mut to: tokio::net::tcp::OwnedWriteHalf,
    link: Link,
) {
    let room = Arc::new(Semaphore::new(link.in_flight()));
    let (tx, mut rx) = mpsc::unbounded_channel::<(Instant, Vec<u8>)>();
    let freed = Arc::clone(&room);
    let writer = tokio::spawn(async move {
        while let Some((due, bytes)) = rx.recv().await {
            tokio::time::sleep_until(due).await;
            // An empty chunk is the end of the stream.
            if bytes.is_empty() || to.write_all(&bytes).await.is_err() {
                break;
            }
            freed.add_permits(bytes.len());
        }
        // Stops the reader if it waits for room that will never come.
        freed.close();
        let _ = to.shutdown().await;
    });
    // When the link is next free to put a byte on the wire.
    let mut free = Instant::now();
    let mut buf = vec![0u8; CHUNK];
    loop {
        let read = from.read(&mut buf).await.unwrap_or(0);
        // `CHUNK` is under the bound, so a read always fits once the writer catches up.
        match room.acquire_many(read as u32).await {
            Ok(permits) => permits.forget(),
            Err(_) => break,
        }
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
