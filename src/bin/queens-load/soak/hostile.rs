//! The soak's calls that misbehave as a client may: a stream read a little (slowly, or
//! stalled) and left, half an HTTP/2 preface, and requests with one bad field.
//!
//! Not here: the well-behaved calls (`caller.rs`), which kind of call comes next (`soak.rs`).

use super::choices::Rng;
use super::outcome::{Outcome, failed};
use queens::client::Client;
use queens::pb::{CountRequest, EnumerateRequest, Shard, Square};
use queens::solver::naive;
use std::time::Duration;
use tonic::Code;

/// Opens an Enumerate n stream, checks up to `messages` messages (solutions in increasing
/// order) with `pause` between reads and `stall` after the first, then leaves.
pub(super) async fn read_and_leave(
    client: &mut Client,
    n: u32,
    messages: u64,
    pause: Duration,
    stall: Duration,
) -> Outcome {
    let request = EnumerateRequest {
        n,
        packed: true,
        batch_size: 256,
        ..Default::default()
    };
    let mut stream = match client.enumerate(request).await {
        Ok(r) => r.into_inner(),
        Err(s) => return failed(&s),
    };
    let mut last: Option<Vec<u8>> = None;
    for i in 0..messages {
        match stream.message().await {
            Ok(Some(m)) => {
                for b in m.packed.chunks_exact(n as usize) {
                    if !naive::is_solution(b) || last.as_deref().is_some_and(|l| l >= b) {
                        return Outcome::Wrong(format!("n = {n}: {b:?} is not the next solution"));
                    }
                    last = Some(b.to_vec());
                }
            }
            Ok(None) => break,
            Err(s) => return failed(&s),
        }
        tokio::time::sleep(if i == 0 { stall } else { pause }).await;
    }
    Outcome::Right
}

/// A TCP connection that sends half the HTTP/2 preface and goes: nothing to check but the
/// server's health afterwards (the other calls).
pub(super) async fn half_preface(addr: &str) -> Outcome {
    use tokio::io::AsyncWriteExt;
    let host = addr
        .trim_start_matches("http://")
        .trim_start_matches("https://")
        .trim_end_matches('/');
    match tokio::net::TcpStream::connect(host).await {
        Ok(mut sock) => {
            let _ = sock.write_all(b"PRI * HTTP/2.0\r\n").await;
            Outcome::Right
        }
        Err(e) => Outcome::Unexpected(format!("connect {host}: {e}")),
    }
}

/// A request with one bad field: INVALID_ARGUMENT whose message starts with that field.
pub(super) async fn invalid(client: &mut Client, rng: &mut Rng) -> Outcome {
    let enumerate = |request: EnumerateRequest| {
        let mut client = client.clone();
        async move {
            let mut stream = client.enumerate(request).await?.into_inner();
            while stream.message().await?.is_some() {}
            Ok::<(), tonic::Status>(())
        }
    };
    let (field, result) = match rng.range(0, 4) {
        0 => {
            let n = [0, 33, 1000, u32::MAX][rng.range(0, 3) as usize];
            let request = CountRequest {
                n,
                ..Default::default()
            };
            ("n:", client.clone().count(request).await.map(drop))
        }
        1 => {
            let request = CountRequest {
                n: 8,
                fixed: vec![Square { row: 8, column: 0 }],
                ..Default::default()
            };
            ("fixed[0]:", client.clone().count(request).await.map(drop))
        }
        2 => {
            let request = EnumerateRequest {
                n: 8,
                shard: Some(Shard { index: 5, count: 3 }),
                ..Default::default()
            };
            ("shard", enumerate(request).await)
        }
        3 => {
            let request = EnumerateRequest {
                n: 8,
                start_after: vec![1, 2, 3],
                ..Default::default()
            };
            ("start_after:", enumerate(request).await)
        }
        _ => {
            let request = EnumerateRequest {
                n: 8,
                fundamental: true,
                fixed: vec![Square { row: 0, column: 0 }],
                ..Default::default()
            };
            ("fundamental:", enumerate(request).await)
        }
    };
    match result {
        Err(s) if s.code() == Code::InvalidArgument && s.message().starts_with(field) => {
            Outcome::Right
        }
        Err(s) => failed(&s),
        Ok(()) => Outcome::Unexpected(format!("a request with a bad {field} was answered")),
    }
}
