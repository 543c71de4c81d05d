//! Fair search slots and deadlines, against the `queens` binary over real sockets: one client (one
//! peer address) cannot take every search slot while another client is kept out; an Enumerate
//! honours the call's `grpc-timeout` and gives back its slot within a second of it; a stream whose
//! reader takes nothing for `--stall-timeout` ends and gives back its slot; a unary Count past its
//! deadline answers DEADLINE_EXCEEDED, not CANCELLED; and one client cannot fill
//! `--max-requests` with requests it holds in flight.
//!
//! Clients from another address bind their socket to 127.0.0.2 (all of 127/8 is loopback on
//! Linux). A tonic client also runs a timer of its own for `grpc-timeout` (and reports it as
//! CANCELLED "Timeout expired" when it fires first), so the unary deadline is checked with a
//! bare HTTP/2 client (the `h2` crate) that has no timer: the status seen is the server's.

use crate::common;
use crate::common::h2raw;

use common::{A000170, LONG_N, ServerProcess, count_by, count_request};
use prost::Message;
use queens::pb::EnumerateRequest;
use queens::pb::queens_client::QueensClient;
use std::time::{Duration, Instant};
use tokio::task::JoinHandle;
use tokio::time::timeout;
use tonic::transport::{Channel, Endpoint};
use tonic::{Code, Request, Status};

/// Solutions of the 10×10 board.
const SOLUTIONS_10: u64 = A000170[9];

/// A client of `url` whose connection comes from the local address `source`.
pub(crate) async fn client_from(url: &str, source: &str) -> QueensClient<Channel> {
    let channel = Endpoint::from_shared(url.to_string())
        .expect("url")
        .local_address(Some(source.parse().expect("an IP address")))
        .connect_timeout(Duration::from_secs(5))
        .connect()
        .await
        .unwrap_or_else(|e| panic!("connect from {source}: {e}"));
    QueensClient::new(channel)
}

/// Counts of the 32×32 board on `client`, one task each (they run as long as the server lets
/// them: far longer than any test).
fn start_endless_counts(
    client: &QueensClient<Channel>,
    how_many: usize,
) -> Vec<JoinHandle<Status>> {
    (0..how_many)
        .map(|_| {
            let mut client = client.clone();
            tokio::spawn(async move {
                match client.count(count_request(32)).await {
                    Ok(response) => panic!("n = 32 counted: {:?}", response.into_inner()),
                    Err(status) => status,
                }
            })
        })
        .collect()
}

/// Waits up to `limit` for `want` of `calls` to end; returns the statuses of those that did
/// (fewer than `want` if the time ran out).
async fn ended_within(
    calls: &mut [JoinHandle<Status>],
    want: usize,
    limit: Duration,
) -> Vec<Status> {
    let deadline = Instant::now() + limit;
    loop {
        if calls.iter().filter(|c| c.is_finished()).count() >= want || Instant::now() >= deadline {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let mut ended = Vec::new();
    for call in calls.iter_mut().filter(|c| c.is_finished()) {
        ended.push(call.await.expect("the call's task"));
    }
    ended
}

/// Client A (127.0.0.1) asks for every one of `max_searches` slots with endless counts; the
/// server admits A's share only, and client B (127.0.0.2) still gets a Count n = 10 answered.
async fn one_client_cannot_take_every_slot(max_searches: usize) {
    let limit = max_searches.to_string();
    let server = ServerProcess::start(&["--max-searches", &limit]);
    let per_client = (max_searches / 2).max(1);
    let a = client_from(&server.url(), "127.0.0.1").await;
    let mut calls = start_endless_counts(&a, max_searches);
    // Calls beyond A's share are refused at once; on a server without shares none ends.
    let refused = ended_within(
        &mut calls,
        max_searches - per_client,
        Duration::from_secs(5),
    )
    .await;

    let mut b = client_from(&server.url(), "127.0.0.2").await;
    let answer = timeout(Duration::from_secs(30), b.count(count_request(10)))
        .await
        .expect("B's Count n = 10 answered within 30 s");
    match answer {
        Ok(response) => assert_eq!(response.into_inner().solutions, SOLUTIONS_10),
        Err(status) => panic!(
            "B (127.0.0.2) was kept out while A (127.0.0.1) holds {} search(es): {status:?}",
            max_searches - refused.len()
        ),
    }

    assert_eq!(
        refused.len(),
        max_searches - per_client,
        "A's calls beyond its share of {per_client} were not refused within 5 s: {refused:?}"
    );
    for status in &refused {
        assert_eq!(status.code(), Code::ResourceExhausted, "{status:?}");
        assert!(
            status
                .message()
                .contains(&format!("--max-searches-per-client {per_client}")),
            "the refusal names the per-client limit: {status:?}"
        );
    }
    // A's admitted counts still run.
    assert!(calls.iter().filter(|c| !c.is_finished()).count() == per_client);
    for call in calls {
        call.abort();
    }
}

/// With `--max-searches 2` (one per client): A's second n = 32 Count is refused naming
/// `--max-searches-per-client 1`, and B's Count n = 10 from 127.0.0.2 is answered 724.
#[tokio::test]
async fn two_slots_one_client_takes_one() {
    one_client_cannot_take_every_slot(2).await;
}

/// With `--max-searches 4` (two per client): A asks for four endless counts, two run and two
/// are refused, and B's Count n = 10 from 127.0.0.2 is answered 724.
#[tokio::test]
async fn four_slots_one_client_takes_two() {
    one_client_cannot_take_every_slot(4).await;
}

/// Client A (127.0.0.1) opens `held` Count streams on a raw HTTP/2 connection and never sends
/// their request message, so the server's gate holds each as a request in flight (no search
/// starts); returns the connection and how many of them the server ended at once (refused).
fn hold_requests(server: &ServerProcess, held: u32) -> (h2raw::Conn, u64) {
    let mut conn = h2raw::Conn::open(server.addr).expect("a raw HTTP/2 connection");
    let block = h2raw::count_block(&server.addr.to_string());
    let mut buf = Vec::new();
    for i in 0..held {
        h2raw::push_headers(&mut buf, 2 * i + 1, &block, false);
    }
    conn.send(&buf).expect("send HEADERS");
    assert!(conn.barrier(Duration::from_secs(10)), "PING answered");
    // A refusal is a trailers-only response; give any late one a moment to arrive.
    std::thread::sleep(Duration::from_millis(200));
    let ended = conn.stats().ended_streams;
    (conn, ended)
}

/// The status of a Count n = 10 from `source`, answered within 30 s.
async fn count_10_from(server: &ServerProcess, source: &str) -> Result<u64, Status> {
    let mut client = client_from(&server.url(), source).await;
    timeout(Duration::from_secs(30), client.count(count_request(10)))
        .await
        .expect("a Count n = 10 answered within 30 s")
        .map(|r| r.into_inner().solutions)
}

/// `--max-requests 8 --max-requests-per-client 4`: client A (127.0.0.1) holds six requests
/// in flight; four are held and two refused at once, A's next Count is refused naming
/// `--max-requests-per-client 4`, and client B (127.0.0.2) still gets its Count n = 10
/// answered. With A's share as large as the server's bound, A fills it and B is refused: the
/// share is what keeps B in.
#[tokio::test]
async fn one_client_cannot_fill_max_requests() {
    let server = ServerProcess::start(&["--max-requests", "8", "--max-requests-per-client", "4"]);
    let (_held, refused) = hold_requests(&server, 6);
    assert_eq!(
        refused, 2,
        "of A's 6 held requests, those beyond its share of 4"
    );
    let a = count_10_from(&server, "127.0.0.1").await.unwrap_err();
    assert_eq!(a.code(), Code::ResourceExhausted, "{a:?}");
    assert!(
        a.message().contains("--max-requests-per-client 4"),
        "A's refusal names its share: {a:?}"
    );
    match count_10_from(&server, "127.0.0.2").await {
        Ok(solutions) => assert_eq!(solutions, SOLUTIONS_10),
        Err(status) => panic!("B (127.0.0.2) kept out while A holds its share: {status:?}"),
    }
    drop(server);

    let server = ServerProcess::start(&["--max-requests", "8", "--max-requests-per-client", "8"]);
    let (_held, refused) = hold_requests(&server, 8);
    assert_eq!(refused, 0, "a share as large as --max-requests holds all 8");
    let b = count_10_from(&server, "127.0.0.2").await.unwrap_err();
    assert_eq!(b.code(), Code::ResourceExhausted, "{b:?}");
    assert!(b.message().contains("(--max-requests)"), "{b:?}");
}

/// An Enumerate of n = 18, compact.
fn enumerate_18() -> EnumerateRequest {
    EnumerateRequest {
        n: 18,
        compact: true,
        ..Default::default()
    }
}

/// Sends the Enumerate `request` to a new server with `--max-searches 1`: (the server, the
/// client, when the request was sent, the stream).
async fn sent_to_one_slot(
    request: Request<EnumerateRequest>,
) -> (
    ServerProcess,
    QueensClient<Channel>,
    Instant,
    tonic::Streaming<queens::pb::EnumerateResponse>,
) {
    let server = ServerProcess::start(&["--max-searches", "1"]);
    let mut client = client_from(&server.url(), "127.0.0.1").await;
    let start = Instant::now();
    let stream = client
        .enumerate(request)
        .await
        .expect("stream opens")
        .into_inner();
    (server, client, start, stream)
}

/// Reads `stream` until it ends or until `limit` after `start`; returns how it ended (`None`:
/// still going), the bytes of the messages read, and those read after `after`.
async fn read_for(
    stream: &mut tonic::Streaming<queens::pb::EnumerateResponse>,
    start: Instant,
    limit: Duration,
    after: Instant,
) -> (Option<Result<(), Status>>, usize, usize) {
    let mut bytes = 0;
    let mut late = 0;
    let end = loop {
        let left = (start + limit).saturating_duration_since(Instant::now());
        match timeout(left, stream.message()).await {
            Err(_) => break None,
            Ok(Ok(Some(message))) => {
                let len = message.encoded_len();
                bytes += len;
                if Instant::now() > after {
                    late += len;
                }
            }
            Ok(Ok(None)) => break Some(Ok(())),
            Ok(Err(status)) => break Some(Err(status)),
        }
    };
    (end, bytes, late)
}

/// Asserts that a long search (Count n = 13, which needs the slot) is answered within a
/// second of a stream's `deadline`.
async fn slot_free_a_second_after(client: &mut QueensClient<Channel>, deadline: Instant) {
    let why = "the slot was not free 1 s after the deadline";
    count_by(client, LONG_N, deadline + Duration::from_secs(1), why).await;
}

/// Asserts that an Enumerate of n = 18 ended with DEADLINE_EXCEEDED (`end` as [`read_for`]
/// returns it); `ran_on` is the failure when it was still streaming.
fn assert_ended_by_deadline(end: Option<Result<(), Status>>, ran_on: String) {
    match end {
        Some(Err(status)) => assert_eq!(status.code(), Code::DeadlineExceeded, "{status:?}"),
        Some(Ok(())) => panic!("n = 18 cannot be enumerated in a second"),
        None => panic!("{ran_on}"),
    }
}

/// An Enumerate of n = 18 (billions of bytes) with a 1 s deadline (`Request::set_timeout`),
/// read continuously, ends with DEADLINE_EXCEEDED from the server, and with
/// `--max-searches 1` a Count n = 13 (a long search) is answered within 1 s of the deadline.
#[tokio::test]
async fn enumerate_ends_at_its_deadline_and_gives_back_its_slot() {
    let mut request = Request::new(enumerate_18());
    request.set_timeout(Duration::from_secs(1));
    let (_server, mut client, start, mut stream) = sent_to_one_slot(request).await;
    let deadline = start + Duration::from_secs(1);
    let (end, bytes, _) = read_for(&mut stream, start, Duration::from_secs(3), deadline).await;
    assert_ended_by_deadline(
        end,
        format!(
            "the stream ran on 2 s past its 1 s deadline ({} MB read)",
            bytes / 1_000_000
        ),
    );
    // The slot is free within a second of the deadline.
    slot_free_a_second_after(&mut client, deadline).await;
}

/// The same with `grpc-timeout: 1S` written into the metadata by hand (no client-side
/// deadline of any kind): the server ends the stream with DEADLINE_EXCEEDED within 2 s of the
/// request, and what arrives after the deadline is bounded (what was in flight, < 32 MB), not
/// a stream that runs on.
#[tokio::test]
async fn raw_grpc_timeout_ends_enumerate_at_the_server() {
    let mut request = Request::new(enumerate_18());
    request
        .metadata_mut()
        .insert("grpc-timeout", "1S".parse().unwrap());
    let (_server, mut client, start, mut stream) = sent_to_one_slot(request).await;
    let deadline = start + Duration::from_secs(1);
    // Bytes counted as late from a quarter second past the deadline (the server's clock
    // starts when the request arrives, a little after ours).
    let (end, bytes, late) = read_for(
        &mut stream,
        start,
        Duration::from_secs(2),
        deadline + Duration::from_millis(250),
    )
    .await;
    assert_ended_by_deadline(
        end,
        format!(
            "grpc-timeout: 1S ignored: still streaming 2 s after the request ({} MB read, \
             {} MB of it after the deadline)",
            bytes / 1_000_000,
            late / 1_000_000
        ),
    );
    assert!(
        late < 32_000_000,
        "{late} bytes arrived more than 0.25 s after the deadline ({bytes} in all)"
    );
    slot_free_a_second_after(&mut client, deadline).await;
}

/// With `--stall-timeout 2 --max-searches 1`, an Enumerate of n = 16 whose reader never takes
/// a message holds the only slot (a long Count, n = 13, is refused at once and still after
/// 1 s) until the stall timeout ends it: by 6 s after it opened, a Count n = 13 is answered.
#[tokio::test]
async fn a_stream_nobody_reads_gives_back_its_slot() {
    let server = ServerProcess::start(&["--stall-timeout", "2", "--max-searches", "1"]);
    let mut client = client_from(&server.url(), "127.0.0.1").await;
    let opened = Instant::now();
    let request = EnumerateRequest {
        n: 16,
        compact: true,
        ..Default::default()
    };
    // Opened and kept, never polled.
    let stalled = client
        .enumerate(request)
        .await
        .expect("stream opens")
        .into_inner();
    for probe in [Duration::ZERO, Duration::from_secs(1)] {
        tokio::time::sleep_until((opened + probe).into()).await;
        let status = client.count(count_request(LONG_N)).await.unwrap_err();
        assert_eq!(
            status.code(),
            Code::ResourceExhausted,
            "the unread stream holds the only slot at {probe:?}: {status:?}"
        );
    }
    count_by(
        &mut client,
        LONG_N,
        opened + Duration::from_secs(6),
        "the unread stream still held its slot 6 s after it opened (--stall-timeout 2)",
    )
    .await;
    drop(stalled);
}

/// A unary Count of n = 20 (minutes of work) with `grpc-timeout: 500m`, sent by a bare
/// HTTP/2 client that keeps no timer of its own, is answered by the server with
/// DEADLINE_EXCEEDED (grpc-status 4, not CANCELLED's 1) within about a second, and the
/// abandoned count gives back its slot.
#[tokio::test]
async fn count_past_its_deadline_answers_deadline_exceeded() {
    let server = ServerProcess::start(&[]);
    let tcp = tokio::net::TcpStream::connect(server.addr)
        .await
        .expect("connect");
    let (mut h2, connection) = h2::client::handshake(tcp).await.expect("HTTP/2");
    tokio::spawn(connection);
    for round in 0..2 {
        let request = http::Request::builder()
            .method("POST")
            .uri(format!("http://{}/queens.v1.Queens/Count", server.addr))
            .header("content-type", "application/grpc")
            .header("te", "trailers")
            .header("grpc-timeout", "500m")
            .body(())
            .unwrap();
        let start = Instant::now();
        let (response, mut body) = h2.send_request(request, false).expect("send");
        let mut message = vec![0u8; 5];
        count_request(20).encode(&mut message).unwrap();
        let len = (message.len() - 5) as u32;
        message[1..5].copy_from_slice(&len.to_be_bytes());
        body.send_data(message.into(), true).expect("body");
        let status = timeout(Duration::from_secs(5), async {
            let response = response.await.expect("response");
            if let Some(status) = response.headers().get("grpc-status") {
                return status.to_str().unwrap().to_string();
            }
            let mut body = response.into_body();
            while let Some(data) = body.data().await {
                let _ = data.expect("data");
            }
            let trailers = body
                .trailers()
                .await
                .expect("trailers")
                .expect("some trailers");
            trailers["grpc-status"].to_str().unwrap().to_string()
        })
        .await
        .unwrap_or_else(|_| panic!("round {round}: no answer within 5 s"));
        let took = start.elapsed();
        assert_eq!(
            status, "4",
            "round {round}: grpc-status {status}, not DEADLINE_EXCEEDED"
        );
        assert!(
            took < Duration::from_millis(1500),
            "round {round}: answered after {took:?}"
        );
    }
    // The abandoned counts gave back their slots.
    let mut client = client_from(&server.url(), "127.0.0.1").await;
    count_by(
        &mut client,
        LONG_N,
        Instant::now() + Duration::from_secs(1),
        "slots still held after the deadlines",
    )
    .await;
}
