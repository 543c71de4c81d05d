//! Compressed streams, negotiated: Enumerate's responses in each encoding the Rust client
//! accepts decode to the uncompressed stream's boards; a client that accepts none (grpcurl, a
//! raw HTTP/2 client) gets the stream it always got; Count's answers are never compressed;
//! compressed requests are read. The hostile cases: an unknown encoding advertised, a
//! message in an encoding never announced (or a compressed flag with no encoding at all),
//! bytes that are no gzip, and compressed bombs that inflate past the request cap, each
//! answered with a clear status while a stream on another connection runs on undisturbed.
//! The front-coded layout: the same records as the packed stream (every n to 11, small
//! messages, resumed, limited, sharded, fixed queens; under each encoding) in under a third of
//! the bytes; a layout the server does not know is answered with records.
//! Also a stream through a long link (the delaying proxy, `common/delay.rs`): whole and in
//! order. Its rate against no delay is measured by `benches/long_link.rs`, not asserted.

use crate::common::delay::{DelayProxy, Link};
use crate::common::{self, InProcess};
use prost::Message;
use queens::client::{Access, connect_with};
use queens::config::{Config, Encodings};
use queens::pb::{CountRequest, CountResponse, EnumerateRequest, EnumerateResponse, PackedLayout};
use std::io::{Read, Write};
use std::net::SocketAddr;
use std::time::Duration;
use tokio_stream::StreamExt;
use tonic::Code;

/// gRPC status codes as numbers, for replies read off the wire.
const INTERNAL: i32 = Code::Internal as i32;
const UNIMPLEMENTED: i32 = Code::Unimplemented as i32;
const RESOURCE_EXHAUSTED: i32 = Code::ResourceExhausted as i32;

/// A server with these encodings on offer.
async fn server_offering(offer: &str) -> InProcess {
    InProcess::with_config(Config {
        compression: offer.parse().expect("an encodings list"),
        ..Config::default()
    })
    .await
}

/// Access accepting `accept` (a list or `none`).
fn accepting(accept: &str) -> Access {
    Access {
        accept: accept.parse().expect("an encodings list"),
        ..Access::default()
    }
}

/// Every board of `request` from the Rust client with `access`, as packed records (n bytes
/// each, whatever the form asked), and the `grpc-encoding` the server answered with.
async fn boards(
    url: &str,
    access: &Access,
    request: EnumerateRequest,
) -> (Vec<u8>, Option<String>) {
    let mut client = connect_with(url, access).await.expect("connect");
    let request_n = request.n;
    let response = client.enumerate(request).await.expect("Enumerate starts");
    let encoding = response
        .metadata()
        .get("grpc-encoding")
        .map(|v| v.to_str().unwrap().to_string());
    let mut stream = response.into_inner();
    let mut records = Vec::new();
    let n = request_n as usize;
    while let Some(message) = stream.next().await {
        let message = message.expect("a whole stream");
        records.extend_from_slice(&queens::client::records(n, &message).expect("decodes"));
    }
    (records, encoding)
}

/// An Enumerate request for the whole n×n board in packed records.
fn packed(n: u32) -> EnumerateRequest {
    EnumerateRequest {
        n,
        packed: true,
        ..Default::default()
    }
}

#[tokio::test]
async fn each_encoding_decodes_to_the_uncompressed_stream() {
    let server = server_offering("zstd,gzip").await;
    for request in [packed(12), common::enumerate_request(9)] {
        let n = request.n as usize;
        let (plain, encoding) = boards(&server.url(), &accepting("none"), request.clone()).await;
        assert_eq!(encoding, None, "no compression asked, none used");
        assert_eq!(plain.len() / n, common::A000170[n - 1] as usize);
        // The client's order does not matter: the server prefers zstd.
        for (accept, used) in [
            ("zstd", "zstd"),
            ("gzip", "gzip"),
            ("zstd,gzip", "zstd"),
            ("gzip,zstd", "zstd"),
        ] {
            let (got, encoding) = boards(&server.url(), &accepting(accept), request.clone()).await;
            assert_eq!(encoding.as_deref(), Some(used), "client accepting {accept}");
            assert!(got == plain, "n = {n} in {used}: the boards differ");
        }
    }
}

#[tokio::test]
async fn the_server_compresses_only_with_what_it_offers() {
    for (offer, used) in [("gzip", Some("gzip")), ("none", None)] {
        let server = server_offering(offer).await;
        let (got, encoding) = boards(&server.url(), &Access::default(), packed(10)).await;
        assert_eq!(encoding.as_deref(), used, "server offering {offer}");
        assert_eq!(got.len(), 724 * 10);
    }
    // The client accepts compression unless told otherwise.
    assert_eq!(Access::default().accept, Encodings::ZSTD_GZIP);
}

#[tokio::test]
async fn compressed_requests_are_read() {
    use tonic::codec::CompressionEncoding;
    let server = server_offering("zstd,gzip").await;
    for encoding in [CompressionEncoding::Zstd, CompressionEncoding::Gzip] {
        let client = connect_with(&server.url(), &Access::default())
            .await
            .unwrap();
        let mut client = client.send_compressed(encoding);
        assert_eq!(common::solutions(&mut client, 8).await, 92, "{encoding}");
        let response = client.enumerate(packed(6)).await.expect("Enumerate");
        let mut stream = response.into_inner();
        let mut got = Vec::new();
        while let Some(message) = stream.next().await {
            got.extend(message.expect("a whole stream").packed);
        }
        assert_eq!(got.len(), 4 * 6, "{encoding}");
    }
}

/// One call's reply as read off the wire by a raw HTTP/2 client.
struct Reply {
    headers: http::HeaderMap,
    /// Each message: its compressed flag and its bytes.
    messages: Vec<(u8, Vec<u8>)>,
    trailers: http::HeaderMap,
}

impl Reply {
    /// Its grpc-status (from the trailers, or the headers of a trailers-only reply) and
    /// grpc-message.
    fn status(&self) -> (i32, String) {
        let field = |name| {
            self.trailers
                .get(name)
                .or_else(|| self.headers.get(name))
                .map(|v| v.to_str().unwrap().to_string())
        };
        let code = field("grpc-status")
            .expect("a grpc-status")
            .parse()
            .unwrap();
        (code, unescape(&field("grpc-message").unwrap_or_default()))
    }

    /// Its `grpc-encoding` header.
    fn encoding(&self) -> Option<&str> {
        self.headers
            .get("grpc-encoding")
            .map(|v| v.to_str().unwrap())
    }
}

/// A grpc-message with its percent-escapes decoded.
fn unescape(text: &str) -> String {
    let mut bytes = Vec::new();
    let mut rest = text.as_bytes();
    while let Some((&first, tail)) = rest.split_first() {
        let hex = tail.get(..2).and_then(|h| std::str::from_utf8(h).ok());
        match hex.and_then(|h| u8::from_str_radix(h, 16).ok()) {
            Some(byte) if first == b'%' => {
                bytes.push(byte);
                rest = &tail[2..];
            }
            _ => {
                bytes.push(first);
                rest = tail;
            }
        }
    }
    String::from_utf8_lossy(&bytes).into_owned()
}

/// Decompresses one message.
type Inflate = fn(&[u8]) -> Vec<u8>;

/// A hostile request: what it is, its extra headers, its body, the status code it gets and
/// words its message must contain.
type Hostile = (
    &'static str,
    Vec<(&'static str, &'static str)>,
    Vec<u8>,
    i32,
    &'static str,
);

/// One gRPC message frame: the compressed flag, the length, the bytes.
fn frame(flag: u8, payload: &[u8]) -> Vec<u8> {
    let mut framed = vec![flag];
    framed.extend_from_slice(&(payload.len() as u32).to_be_bytes());
    framed.extend_from_slice(payload);
    framed
}

/// Calls `path` on `addr` over a fresh HTTP/2 connection, with these extra headers and this
/// body, and reads the whole reply.
async fn raw_call(addr: SocketAddr, path: &str, extra: &[(&str, &str)], body: Vec<u8>) -> Reply {
    let tcp = tokio::net::TcpStream::connect(addr).await.unwrap();
    let (h2, connection): (h2::client::SendRequest<bytes::Bytes>, _) = h2::client::Builder::new()
        .initial_window_size(4 << 20)
        .initial_connection_window_size(4 << 20)
        .handshake(tcp)
        .await
        .expect("HTTP/2");
    tokio::spawn(connection);
    let mut h2 = h2.ready().await.unwrap();
    let mut request = http::Request::post(format!("http://{addr}{path}"))
        .header("content-type", "application/grpc")
        .header("te", "trailers");
    for (name, value) in extra {
        request = request.header(*name, *value);
    }
    let (response, mut send) = h2.send_request(request.body(()).unwrap(), false).unwrap();
    send.send_data(body.into(), true).unwrap();
    let (parts, mut body) = response.await.expect("an HTTP/2 reply").into_parts();
    let mut data = Vec::new();
    while let Some(chunk) = body.data().await {
        let chunk = chunk.expect("the reply's body");
        let _ = body.flow_control().release_capacity(chunk.len());
        data.extend_from_slice(&chunk);
    }
    let trailers = body.trailers().await.unwrap().unwrap_or_default();
    let mut messages = Vec::new();
    let mut rest = &data[..];
    while !rest.is_empty() {
        let len = u32::from_be_bytes(rest[1..5].try_into().unwrap()) as usize;
        messages.push((rest[0], rest[5..5 + len].to_vec()));
        rest = &rest[5 + len..];
    }
    Reply {
        headers: parts.headers,
        messages,
        trailers,
    }
}

const ENUMERATE: &str = "/queens.v1.Queens/Enumerate";
const COUNT: &str = "/queens.v1.Queens/Count";

/// The packed records of an uncompressed Enumerate reply (every message flagged 0).
fn plain_records(reply: &Reply) -> Vec<u8> {
    let mut records = Vec::new();
    for (flag, bytes) in &reply.messages {
        assert_eq!(*flag, 0, "an uncompressed message");
        records.extend(EnumerateResponse::decode(&bytes[..]).unwrap().packed);
    }
    records
}

#[tokio::test]
async fn a_client_that_accepts_none_gets_the_stream_it_always_got() {
    let server = server_offering("zstd,gzip").await;
    let request = frame(0, &packed(11).encode_to_vec());
    let unasked = raw_call(server.addr, ENUMERATE, &[], request.clone()).await;
    assert_eq!(unasked.status().0, 0);
    assert_eq!(unasked.encoding(), None);
    let records = plain_records(&unasked);
    assert_eq!(records.len(), 2680 * 11);
    // Names the server does not speak are passed over as if absent.
    for accept in ["br, snappy", "identity", "deflate,identity"] {
        let reply = raw_call(
            server.addr,
            ENUMERATE,
            &[("grpc-accept-encoding", accept)],
            request.clone(),
        )
        .await;
        assert_eq!(reply.status().0, 0, "accepting {accept}");
        assert_eq!(reply.encoding(), None, "accepting {accept}");
        assert!(plain_records(&reply) == records, "accepting {accept}");
    }
    // The same call accepting zstd, or gzip: every message compressed, the same boards.
    let inflaters: [(&str, Inflate); 2] =
        [("zstd", |b| zstd::decode_all(b).unwrap()), ("gzip", gunzip)];
    for (name, inflate) in inflaters {
        let reply = raw_call(
            server.addr,
            ENUMERATE,
            &[("grpc-accept-encoding", name)],
            request.clone(),
        )
        .await;
        assert_eq!(reply.encoding(), Some(name));
        let mut inflated = Vec::new();
        for (flag, bytes) in &reply.messages {
            assert_eq!(*flag, 1, "a compressed message");
            let message = inflate(bytes);
            inflated.extend(EnumerateResponse::decode(&message[..]).unwrap().packed);
        }
        assert!(inflated == records, "{name}: the boards differ");
        let wire: usize = reply.messages.iter().map(|(_, b)| b.len()).sum();
        println!(
            "n = 11 packed: {} bytes uncompressed, {wire} in {name}",
            records.len()
        );
        assert!(wire < records.len() / 2, "{name}: {wire} bytes");
    }
}

#[tokio::test]
async fn counts_are_never_compressed() {
    let server = server_offering("zstd,gzip").await;
    let request = frame(0, &common::count_request(8).encode_to_vec());
    for path in [COUNT, "/queens.v1.Queens/CountProgress"] {
        let reply = raw_call(
            server.addr,
            path,
            &[("grpc-accept-encoding", "zstd,gzip,identity")],
            request.clone(),
        )
        .await;
        assert_eq!(reply.status().0, 0, "{path}");
        assert_eq!(reply.encoding(), None, "{path}");
        let (flag, last) = reply.messages.last().expect("an answer");
        assert_eq!(*flag, 0, "{path}");
        // CountResponse and CountUpdate share field 1: the solutions.
        assert_eq!(CountResponse::decode(&last[..]).unwrap().solutions, 92);
    }
}

/// `bytes` gzipped.
fn gzip(bytes: &[u8]) -> Vec<u8> {
    let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
    encoder.write_all(bytes).unwrap();
    encoder.finish().unwrap()
}

#[tokio::test]
async fn hostile_encodings_get_a_clear_status_and_harm_no_one_else() {
    let server = server_offering("zstd,gzip").await;
    // Someone else's stream, started first and read only at the end.
    let mut bystander = connect_with(&server.url(), &Access::default())
        .await
        .unwrap();
    let mut stream = bystander
        .enumerate(packed(13))
        .await
        .expect("Enumerate")
        .into_inner();
    let first = stream.next().await.expect("a first message").unwrap();

    let count = CountRequest {
        n: 8,
        ..Default::default()
    }
    .encode_to_vec();
    // 16 MiB of one repeated count request's bytes: a valid-looking message far past the
    // 64 KiB request cap, which compresses to a few KiB (gzip) or a few hundred bytes (zstd).
    let huge: Vec<u8> = count.iter().copied().cycle().take(16 << 20).collect();
    let gzip_bomb = gzip(&huge);
    let zstd_bomb = zstd::encode_all(&huge[..], 19).unwrap();
    println!(
        "bombs of 16 MiB: {} bytes in gzip, {} in zstd",
        gzip_bomb.len(),
        zstd_bomb.len()
    );
    let cases: [Hostile; 6] = [
        (
            "an encoding never offered",
            vec![("grpc-encoding", "br")],
            frame(1, &count),
            UNIMPLEMENTED,
            "`br`",
        ),
        (
            "a plain message under an unknown encoding",
            vec![("grpc-encoding", "snappy")],
            frame(0, &count),
            UNIMPLEMENTED,
            "`snappy`",
        ),
        (
            "a compressed flag without an encoding",
            vec![],
            frame(1, &gzip(&count)),
            INTERNAL,
            "compressed-flag but no grpc-encoding",
        ),
        (
            "bytes that are no gzip",
            vec![("grpc-encoding", "gzip")],
            frame(1, b"not gzip at all"),
            INTERNAL,
            "decompressing",
        ),
        (
            "a gzip bomb",
            vec![("grpc-encoding", "gzip")],
            frame(1, &gzip_bomb),
            RESOURCE_EXHAUSTED,
            "size limit",
        ),
        (
            "a zstd bomb",
            vec![("grpc-encoding", "zstd")],
            frame(1, &zstd_bomb),
            RESOURCE_EXHAUSTED,
            "size limit",
        ),
    ];
    for (what, headers, body, code, says) in cases {
        let reply = raw_call(server.addr, COUNT, &headers, body).await;
        let (got, message) = reply.status();
        println!("{what}: {got} {message:?}");
        assert_eq!(got, code, "{what}: {got} {message}");
        assert!(message.contains(says), "{what}: {message}");
        assert!(reply.messages.is_empty(), "{what}: no answer");
    }
    // An unknown encoding's refusal names what the server reads.
    let reply = raw_call(
        server.addr,
        COUNT,
        &[("grpc-encoding", "br")],
        frame(1, &count),
    )
    .await;
    let accepts = reply
        .trailers
        .get("grpc-accept-encoding")
        .or_else(|| reply.headers.get("grpc-accept-encoding"))
        .expect("grpc-accept-encoding with the refusal");
    let accepts = accepts.to_str().unwrap();
    for name in ["zstd", "gzip", "identity"] {
        assert!(accepts.split(',').any(|a| a == name), "{accepts}");
    }

    // The bystander's stream is whole, and the server answers as before.
    let mut records = first.packed;
    while let Some(message) = stream.next().await {
        records.extend(message.expect("the bystander's stream").packed);
    }
    assert_eq!(records.len(), 73_712 * 13);
    let mut client = connect_with(&server.url(), &Access::default())
        .await
        .unwrap();
    assert_eq!(common::solutions(&mut client, 10).await, 724);
}

#[tokio::test]
async fn the_default_server_compresses_no_response_but_reads_compressed_requests() {
    let server = InProcess::start().await;
    // The Rust client accepts zstd and gzip; the default server offers neither.
    let (got, encoding) = boards(&server.url(), &Access::default(), packed(10)).await;
    assert_eq!((encoding, got.len()), (None, 724 * 10));
    let count = common::count_request(8).encode_to_vec();
    let reply = raw_call(
        server.addr,
        COUNT,
        &[("grpc-encoding", "gzip")],
        frame(1, &gzip(&count)),
    )
    .await;
    assert_eq!(reply.status().0, 0, "{:?}", reply.status());
    let reply = raw_call(
        server.addr,
        COUNT,
        &[("grpc-encoding", "snappy")],
        frame(1, &count),
    )
    .await;
    assert_eq!(reply.status().0, UNIMPLEMENTED, "{:?}", reply.status());
}

#[tokio::test]
async fn a_stream_over_a_long_link_arrives_whole() {
    let server = server_offering("zstd,gzip").await;
    // 100 ms round trip, as fast as loopback otherwise.
    let link = Link {
        one_way: Duration::from_millis(50),
        rate: None,
    };
    let proxy = DelayProxy::start(server.addr, link).await;
    for accept in ["none", "zstd"] {
        let (records, _) = boards(&proxy.url(), &accepting(accept), packed(12)).await;
        assert_eq!(records.len(), 14_200 * 12, "accepting {accept}");
        let ordered = records
            .chunks_exact(12)
            .zip(records.chunks_exact(12).skip(1))
            .all(|(a, b)| a < b);
        assert!(ordered, "accepting {accept}: boards in order");
    }
    let mut client = connect_with(&proxy.url(), &Access::default())
        .await
        .unwrap();
    assert_eq!(common::solutions(&mut client, 9).await, 352);
}

/// `bytes` gunzipped.
fn gunzip(bytes: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    flate2::read::GzDecoder::new(bytes)
        .read_to_end(&mut out)
        .unwrap();
    out
}

/// A packed request asking for the front-coded layout.
fn front_coded(request: EnumerateRequest) -> EnumerateRequest {
    EnumerateRequest {
        packed: true,
        layout: PackedLayout::FrontCoded as i32,
        ..request
    }
}

#[tokio::test]
async fn front_coded_boards_are_the_packed_records_in_fewer_bytes() {
    let server = server_offering("zstd,gzip").await;
    let none = accepting("none");
    let mut asks: Vec<EnumerateRequest> = (1..=11).map(packed).collect();
    asks.extend([
        EnumerateRequest {
            batch_size: 7,
            ..packed(10)
        },
        EnumerateRequest {
            batch_size: 1,
            ..packed(9)
        },
        EnumerateRequest {
            start_after: vec![5, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0],
            limit: 300,
            ..packed(11)
        },
        EnumerateRequest {
            shard: Some(queens::pb::Shard { index: 2, count: 5 }),
            batch_size: 100,
            ..packed(11)
        },
        EnumerateRequest {
            fundamental: true,
            ..packed(11)
        },
        EnumerateRequest {
            fixed: vec![queens::pb::Square { row: 0, column: 3 }],
            ..packed(10)
        },
    ]);
    for ask in asks {
        let (want, _) = boards(&server.url(), &none, ask.clone()).await;
        let (got, _) = boards(&server.url(), &none, front_coded(ask.clone())).await;
        assert!(got == want, "{ask:?}: the boards differ");
    }
    // Under each encoding, and in under a third of the bytes of the records.
    for accept in ["zstd", "gzip", "none"] {
        let (got, _) = boards(&server.url(), &accepting(accept), front_coded(packed(12))).await;
        let (want, _) = boards(&server.url(), &none, packed(12)).await;
        assert!(got == want, "front coded under {accept}: the boards differ");
    }
    let mut client = connect_with(&server.url(), &none).await.unwrap();
    let mut stream = client
        .enumerate(front_coded(packed(12)))
        .await
        .unwrap()
        .into_inner();
    let (mut sent, mut count) = (0, 0);
    while let Some(message) = stream.next().await {
        let message = message.unwrap();
        assert!(message.packed.is_empty() && message.boards.is_empty());
        sent += message.encoded_len();
        count += message.front_coded.expect("front coded").boards as usize;
    }
    assert_eq!(count, 14_200);
    assert!(
        sent * 3 < count * 12,
        "{sent} bytes for {count} boards of n = 12"
    );
}

#[tokio::test]
async fn a_layout_the_server_does_not_know_is_answered_with_records() {
    let server = server_offering("none").await;
    let mut client = connect_with(&server.url(), &accepting("none"))
        .await
        .unwrap();
    let ask = EnumerateRequest {
        layout: 7,
        ..packed(8)
    };
    let mut stream = client.enumerate(ask).await.unwrap().into_inner();
    let mut records = Vec::new();
    while let Some(message) = stream.next().await {
        let message = message.unwrap();
        assert!(message.front_coded.is_none());
        records.extend(message.packed);
    }
    assert_eq!(records.len(), 92 * 8);
}
