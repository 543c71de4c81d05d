//! HTTP/2 keepalive: the server pings its peers and drops one that stops answering, so a
//! long Count for a dead client is noticed. A raw HTTP/2 peer that completes the handshake
//! and then never answers a PING is cut off by a server with short keepalive settings, and
//! left alone by one with long settings (the control).

use crate::common;

use common::InProcess;
use queens::config::Config;
use std::io::Write;
use std::time::{Duration, Instant};

/// Opens a connection that does the HTTP/2 handshake and then only reads (never answers a
/// PING); returns how long until the server closed it, or `None` if it stayed open for `wait`.
fn silent_peer(addr: std::net::SocketAddr, wait: Duration) -> Option<Duration> {
    let mut conn = std::net::TcpStream::connect(addr).unwrap();
    conn.write_all(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n").unwrap();
    conn.write_all(&[0, 0, 0, 4, 0, 0, 0, 0, 0]).unwrap(); // our SETTINGS (empty)
    conn.write_all(&[0, 0, 0, 4, 1, 0, 0, 0, 0]).unwrap(); // ACK of the server's SETTINGS
    common::closed_within(conn, Instant::now(), wait)
}

#[tokio::test(flavor = "multi_thread")]
async fn a_peer_that_stops_answering_pings_is_dropped() {
    let short = InProcess::with_config(Config {
        keepalive_interval: Duration::from_millis(300),
        keepalive_timeout: Duration::from_millis(300),
        ..Config::default()
    })
    .await;
    let long = InProcess::start().await; // 30 s interval by default
    let (a, b) = (short.addr, long.addr);
    let (dropped, kept) = tokio::task::spawn_blocking(move || {
        (
            silent_peer(a, Duration::from_secs(5)),
            silent_peer(b, Duration::from_secs(3)),
        )
    })
    .await
    .unwrap();
    let dropped = dropped.expect("the short-keepalive server closed the silent connection");
    assert!(dropped < Duration::from_secs(5), "{dropped:?}");
    assert_eq!(
        kept, None,
        "the control server closed a connection it had no reason to"
    );
}
