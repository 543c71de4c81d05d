//! The server's own limits and its resistance to bad input, over real sockets: the cap on
//! concurrent searches, the per-search time limit, the request size limit, garbage bytes,
//! truncated protobufs, unknown methods, and flat memory under a slow reader; and the details
//! of the richer error model its refusals carry (the limit's ErrorInfo and RetryInfo, the
//! field's BadRequest), as a client decodes them.

use crate::common;

use common::{ServerProcess, rss_kib};
use queens::pb::{CountRequest, Square};
use std::collections::HashMap;
use std::io::Write;
use std::time::{Duration, Instant};
use tonic::{Code, Status};
use tonic_types::StatusExt;

/// A RESOURCE_EXHAUSTED's details as a client decodes them: its ErrorInfo's reason, domain
/// and metadata, and its RetryInfo's delay.
pub(crate) fn limit_details(
    status: &Status,
) -> (String, String, HashMap<String, String>, Option<Duration>) {
    assert_eq!(status.code(), Code::ResourceExhausted, "{status:?}");
    let details = status
        .check_error_details()
        .unwrap_or_else(|e| panic!("undecodable details ({e}): {status:?}"));
    let info = details
        .error_info()
        .unwrap_or_else(|| panic!("no ErrorInfo: {status:?}"));
    let delay = details.retry_info().and_then(|r| r.retry_delay);
    (
        info.reason.clone(),
        info.domain.clone(),
        info.metadata.clone(),
        delay,
    )
}

/// The metadata `{flag: FLAG, limit: LIMIT}` of a count limit's ErrorInfo.
fn flag_and_limit(flag: &str, limit: &str) -> HashMap<String, String> {
    HashMap::from([
        ("flag".to_string(), flag.to_string()),
        ("limit".to_string(), limit.to_string()),
    ])
}

/// The field paths and descriptions of an INVALID_ARGUMENT's BadRequest.
fn field_violations(status: &Status) -> Vec<(String, String)> {
    assert_eq!(status.code(), Code::InvalidArgument, "{status:?}");
    let details = status.check_error_details().expect("decodable details");
    let request = details
        .bad_request()
        .unwrap_or_else(|| panic!("no BadRequest: {status:?}"));
    request
        .field_violations
        .iter()
        .map(|v| (v.field.clone(), v.description.clone()))
        .collect()
}

#[tokio::test]
async fn searches_beyond_the_cap_are_refused_at_once() {
    let server = ServerProcess::start(&["--max-searches", "1"]);
    let mut client = server.client().await;
    let mut stream = common::open_stream(&mut client, 18, true).await;
    assert!(stream.message().await.unwrap().is_some());
    // The open stream holds the only slot, even while its producer waits for the reader: a
    // long search (n = 13) finds none.
    let started = Instant::now();
    let status = client
        .count(common::count_request(common::LONG_N))
        .await
        .unwrap_err();
    assert_eq!(status.code(), Code::ResourceExhausted, "{status:?}");
    assert!(status.message().contains("--max-searches 1"), "{status:?}");
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "refused at once"
    );
    // A program reads the limit, and how long to wait, without parsing the message.
    let busy = (
        "MAX_SEARCHES".to_string(),
        "queens.v1".to_string(),
        flag_and_limit("--max-searches", "1"),
        Some(Duration::from_secs(1)),
    );
    assert_eq!(limit_details(&status), busy);
    let status = client
        .enumerate(common::enumerate_request(common::LONG_N))
        .await
        .unwrap_err();
    assert_eq!(limit_details(&status), busy);
    // A small search takes no slot: Count n = 8 and an Enumerate of n = 4 are answered.
    assert_eq!(common::solutions(&mut client, 8).await, 92);
    let mut small = client
        .enumerate(common::enumerate_request(4))
        .await
        .expect("a small stream beside the held slot")
        .into_inner();
    let mut boards = 0;
    while let Some(message) = small.message().await.expect("the small stream") {
        boards += message.boards.len();
    }
    assert_eq!(boards, 2);
    // Invalid requests are still told what is wrong, without a slot.
    let status = client.count(common::count_request(0)).await.unwrap_err();
    assert_eq!(
        field_violations(&status),
        [("n".to_string(), status.message().to_string())]
    );
    assert!(status.message().starts_with("n: 0 "), "{status:?}");
    // Leaving the stream frees the slot.
    drop(stream);
    let deadline = Instant::now() + Duration::from_secs(5);
    common::count_by(&mut client, common::LONG_N, deadline, "slot not freed").await;
}

/// Requests shed at the gate (`--max-requests`, `--max-requests-per-client`) carry the limit
/// and a RetryInfo, like a busy search slot: a held stream is the one request in flight.
#[tokio::test]
async fn shed_requests_carry_their_limit_and_a_retry_delay() {
    for (flag, reason) in [
        ("--max-requests", "MAX_REQUESTS"),
        ("--max-requests-per-client", "MAX_REQUESTS_PER_CLIENT"),
    ] {
        let server = ServerProcess::start(&[flag, "1"]);
        let mut client = server.client().await;
        let mut stream = common::open_stream(&mut client, 18, true).await;
        assert!(stream.message().await.unwrap().is_some());
        let status = client.count(common::count_request(8)).await.unwrap_err();
        assert!(status.message().contains(flag), "{status:?}");
        assert_eq!(
            limit_details(&status),
            (
                reason.to_string(),
                "queens.v1".to_string(),
                flag_and_limit(flag, "1"),
                Some(Duration::from_secs(1))
            ),
            "{flag}"
        );
        drop(stream);
        let deadline = Instant::now() + Duration::from_secs(5);
        common::count_by(&mut client, 8, deadline, "request not given back").await;
    }
}

#[tokio::test]
async fn searches_end_at_the_servers_time_limit() {
    let server = ServerProcess::start(&["--max-search-seconds", "0.5"]);
    let mut client = server.client().await;
    let status = client.count(common::count_request(20)).await.unwrap_err();
    assert_eq!(status.code(), Code::DeadlineExceeded, "{status:?}");
    assert!(
        status.message().contains("--max-search-seconds"),
        "{status:?}"
    );
    let mut stream = common::open_stream(&mut client, 18, true).await;
    let status =
        common::read_until_error(&mut stream, "n = 18 cannot finish in half a second").await;
    assert_eq!(status.code(), Code::DeadlineExceeded, "{status:?}");
    // Both slots are free again.
    assert_eq!(common::solutions(&mut client, 8).await, 92);
}

#[tokio::test]
async fn a_million_fixed_squares_are_refused_unread() {
    let server = ServerProcess::start(&[]);
    let mut client = server
        .client()
        .await
        .max_encoding_message_size(64 * 1024 * 1024);
    let fixed: Vec<Square> = (0..1_000_000)
        .map(|i| Square {
            row: i % 8,
            column: (i / 8) % 8,
        })
        .collect();
    let status = client
        .count(CountRequest {
            n: 8,
            fixed,
            shard: None,
        })
        .await
        .unwrap_err();
    assert!(
        matches!(status.code(), Code::OutOfRange | Code::ResourceExhausted),
        "{status:?}"
    );
    assert!(
        rss_kib(server.pid()) < 64 * 1024,
        "the request was not buffered"
    );
    assert_eq!(common::solutions(&mut client, 8).await, 92);
}

#[tokio::test]
async fn garbage_truncated_messages_and_unknown_methods_do_no_harm() {
    let server = ServerProcess::start(&[]);
    // Raw garbage, and an HTTP/1 request, on the gRPC port.
    for junk in [
        &b"\x00\x01\x02garbage\xff\xfe not http/2 at all"[..],
        &b"GET / HTTP/1.1\r\nHost: x\r\n\r\n"[..],
    ] {
        let mut raw = std::net::TcpStream::connect(server.addr).unwrap();
        raw.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        let _ = raw.write_all(junk);
        let mut sink = Vec::new();
        let _ = std::io::Read::read_to_end(&mut raw, &mut sink);
    }
    let channel = tonic::transport::Channel::from_shared(server.url())
        .unwrap()
        .connect()
        .await
        .unwrap();
    let mut grpc = tonic::client::Grpc::new(channel);
    // A truncated protobuf (a length-delimited field that runs past the end).
    let truncated = raw_call(
        &mut grpc,
        "/queens.v1.Queens/Count",
        vec![0x08, 0x08, 0x12, 0x10, 0x08],
    )
    .await;
    assert!(truncated.is_err(), "{truncated:?}");
    let code = truncated.unwrap_err().code();
    assert!(
        matches!(code, Code::Internal | Code::InvalidArgument),
        "{code:?}"
    );
    // An unknown method.
    let unknown = raw_call(&mut grpc, "/queens.v1.Queens/Solve", vec![0x08, 0x08]).await;
    assert_eq!(unknown.unwrap_err().code(), Code::Unimplemented);
    // A valid request through the same raw path still works: the server is unharmed.
    let reply = raw_call(&mut grpc, "/queens.v1.Queens/Count", vec![0x08, 0x08])
        .await
        .unwrap();
    use prost::Message;
    let counted = queens::pb::CountResponse::decode(reply.as_slice()).unwrap();
    assert_eq!(counted.solutions, 92);
}

/// Sends `body` as the raw protobuf bytes of a unary call to `path`.
async fn raw_call(
    grpc: &mut tonic::client::Grpc<tonic::transport::Channel>,
    path: &'static str,
    body: Vec<u8>,
) -> Result<Vec<u8>, tonic::Status> {
    grpc.ready().await.unwrap();
    let path = http::uri::PathAndQuery::from_static(path);
    grpc.unary(tonic::Request::new(body), path, RawCodec)
        .await
        .map(|r| r.into_inner())
}

/// A codec that passes message bytes through untouched.
#[derive(Clone, Copy, Default)]
struct RawCodec;

impl tonic::codec::Codec for RawCodec {
    type Encode = Vec<u8>;
    type Decode = Vec<u8>;
    type Encoder = RawCodec;
    type Decoder = RawCodec;
    fn encoder(&mut self) -> RawCodec {
        RawCodec
    }
    fn decoder(&mut self) -> RawCodec {
        RawCodec
    }
}

impl tonic::codec::Encoder for RawCodec {
    type Item = Vec<u8>;
    type Error = tonic::Status;
    fn encode(
        &mut self,
        item: Vec<u8>,
        dst: &mut tonic::codec::EncodeBuf<'_>,
    ) -> Result<(), tonic::Status> {
        use bytes::BufMut;
        dst.put_slice(&item);
        Ok(())
    }
}

impl tonic::codec::Decoder for RawCodec {
    type Item = Vec<u8>;
    type Error = tonic::Status;
    fn decode(
        &mut self,
        src: &mut tonic::codec::DecodeBuf<'_>,
    ) -> Result<Option<Vec<u8>>, tonic::Status> {
        use bytes::Buf;
        let mut out = vec![0; src.remaining()];
        src.copy_to_slice(&mut out);
        Ok(Some(out))
    }
}

#[tokio::test]
async fn a_slow_reader_keeps_memory_flat() {
    let server = ServerProcess::start(&[]);
    let pid = server.pid();
    let idle = rss_kib(pid);
    let mut client = server.client().await;
    let mut stream = common::open_stream(&mut client, 16, false).await;
    let mut peak = idle;
    let until = Instant::now() + Duration::from_secs(5);
    while Instant::now() < until {
        assert!(stream.message().await.unwrap().is_some());
        peak = peak.max(rss_kib(pid));
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    println!("idle RSS {idle} KiB, peak under a slow reader {peak} KiB");
    assert!(
        peak - idle < 64 * 1024,
        "RSS grew from {idle} to {peak} KiB"
    );
}
