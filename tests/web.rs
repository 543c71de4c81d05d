//! The web side of the port, against the real `queens` binary: the committed page is what
//! its sources build to (the pinned tools of `web/package-lock.json`, installed under
//! `target/tools/web`) and is what the server serves; gRPC-Web checked on the wire from
//! Node (`web/test/wire.test.mjs`: framing over HTTP/1.1 and HTTP/2, the text variant,
//! errors, deadlines, CORS, tokens); an HTTP/1.1 connection held to the listener's clocks and
//! connection limit; gRPC-Web calls through the gate (search slots, metrics, the call log)
//! and a search cancelled when its HTTP/1.1 connection closes; `--no-web`. The page in a real
//! browser is a system test (`system/browser.rs`).

use crate::common;
use crate::metrics::{sample, scrape_until};
use crate::tools;

use common::{ServerProcess, closed_within, cpu_ticks, free_port, http_get};
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::process::Command;
use std::time::{Duration, Instant};

#[test]
fn the_committed_page_is_built_from_its_sources() {
    let modules = tools::web_modules();
    let out = tools::scratch_dir().join(format!("web-build-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&out);
    let run = tools::run_bounded(
        Command::new("node")
            .arg(tools::repo().join("web/build.mjs"))
            .arg(&out)
            .env("QUEENS_WEB_MODULES", modules)
            // buf's cache stays under target/ too.
            .env("BUF_CACHE_DIR", tools::tools_dir().join("buf-cache")),
        Duration::from_secs(300),
    );
    assert!(run.success(), "node web/build.mjs: {}", run.output());
    let built = std::fs::read(out.join("app.js")).expect("the built script");
    let committed = std::fs::read(tools::repo().join("web/dist/app.js")).expect("web/dist");
    assert!(
        built == committed,
        "web/dist/app.js ({} bytes) is not what web/ builds to ({} bytes): rebuild it with \
         `cd web && npm ci && npm run build` and commit web/dist/app.js",
        committed.len(),
        built.len()
    );
    let _ = std::fs::remove_dir_all(&out);
}

#[test]
fn the_server_serves_the_committed_page() {
    let server = ServerProcess::start(&[]);
    let port = server.addr.port();
    for (path, file) in [
        ("/", "web/src/index.html"),
        ("/app.js", "web/dist/app.js"),
        ("/app.css", "web/src/app.css"),
    ] {
        let served = http_get(port, path).unwrap_or_else(|| panic!("GET {path}"));
        let committed = std::fs::read_to_string(tools::repo().join(file)).expect("a page file");
        assert!(served == committed, "GET {path} is not {file}");
    }
    assert_eq!(
        http_get(port, "/settings.json").as_deref(),
        Some(r#"{"max_n":32,"tokens":false}"#)
    );
    assert_eq!(http_get(port, "/missing"), None);
}

#[test]
fn grpc_web_on_the_wire_from_node() {
    let server = ServerProcess::start(&["--cors-origin", "http://allowed.example"]);
    let token = "wire-test-token-0123456789";
    let guarded = common::token_server("wire", token, &[]);
    let passed = tools::node_test(
        Command::new("node")
            .args(["--test", "test/wire.test.mjs"])
            .current_dir(tools::repo().join("web"))
            .env("QUEENS_ADDR", server.addr.to_string())
            .env("QUEENS_TOKEN_ADDR", guarded.addr.to_string())
            .env("QUEENS_TOKEN", token),
        Duration::from_secs(120),
    );
    eprintln!("gRPC-Web wire tests: {passed} passed");
}

/// A gRPC-Web request over HTTP/1.0 (so that the answer ends with the connection, never
/// chunked) for `method` with the encoded `message` and extra `headers`.
fn grpc_web_request(method: &str, message: &[u8], headers: &[(&str, &str)]) -> Vec<u8> {
    let mut body = vec![0];
    body.extend_from_slice(&(message.len() as u32).to_be_bytes());
    body.extend_from_slice(message);
    let extra: String = headers
        .iter()
        .map(|(name, value)| format!("{name}: {value}\r\n"))
        .collect();
    let mut request = format!(
        "POST /queens.v1.Queens/{method} HTTP/1.0\r\nHost: 127.0.0.1\r\n\
         Content-Type: application/grpc-web+proto\r\nX-Grpc-Web: 1\r\n{extra}\
         Content-Length: {}\r\n\r\n",
        body.len()
    )
    .into_bytes();
    request.extend_from_slice(&body);
    request
}

/// A gRPC-Web answer read to its end: the head (lower case), the message frames' payloads,
/// and the grpc-status (from the trailers frame, or the head of a trailers-only answer).
pub(crate) struct Answer {
    pub head: String,
    pub messages: Vec<Vec<u8>>,
    pub status: Option<i32>,
}

/// Sends `method(message)` as gRPC-Web over HTTP/1.0 to `addr`, with extra `headers`, and
/// reads the answer.
pub(crate) fn grpc_web_call(
    addr: SocketAddr,
    method: &str,
    message: &[u8],
    headers: &[(&str, &str)],
) -> Answer {
    let mut tcp = TcpStream::connect(addr).expect("connect");
    tcp.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    tcp.write_all(&grpc_web_request(method, message, headers))
        .unwrap();
    let mut bytes = Vec::new();
    tcp.read_to_end(&mut bytes).expect("an answer");
    let split = bytes
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .expect("a head");
    let head = String::from_utf8_lossy(&bytes[..split]).to_lowercase();
    let mut body = &bytes[split + 4..];
    let mut messages = Vec::new();
    let mut status = head
        .lines()
        .find_map(|l| l.strip_prefix("grpc-status: "))
        .and_then(|s| s.trim().parse().ok());
    while body.len() >= 5 {
        let len = u32::from_be_bytes(body[1..5].try_into().unwrap()) as usize;
        let payload = &body[5..5 + len];
        if body[0] & 0x80 != 0 {
            let text = String::from_utf8_lossy(payload).to_lowercase();
            status = text
                .lines()
                .find_map(|l| l.strip_prefix("grpc-status:"))
                .and_then(|s| s.trim().parse().ok());
        } else {
            messages.push(payload.to_vec());
        }
        body = &body[5 + len..];
    }
    Answer {
        head,
        messages,
        status,
    }
}

/// The bytes of a request message with n (field 1) and, if `packed`, packed (field 9).
fn request_bytes(n: u32, packed: bool) -> Vec<u8> {
    use prost::Message;
    let request = queens::pb::EnumerateRequest {
        n,
        packed,
        ..Default::default()
    };
    request.encode_to_vec()
}

/// How long after `since` the process `pid` first spends a 200 ms window idle (at most 2
/// clock ticks, a tenth of a core); `None` if it is busy until `limit`.
fn idle_after(pid: u32, since: Instant, limit: Duration) -> Option<Duration> {
    while since.elapsed() < limit {
        let start = since.elapsed();
        let before = cpu_ticks(pid);
        std::thread::sleep(Duration::from_millis(200));
        if cpu_ticks(pid) - before <= 2 {
            return Some(start);
        }
    }
    None
}

/// How long `pid` takes to spend `ticks` CPU ticks from now, if it does within `limit`.
fn busy_ticks(pid: u32, ticks: u64, limit: Duration) -> Option<Duration> {
    let (before, start) = (cpu_ticks(pid), Instant::now());
    while start.elapsed() < limit {
        if cpu_ticks(pid) - before >= ticks {
            return Some(start.elapsed());
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    None
}

/// With one search slot: a gRPC-Web Count is answered and logged as gRPC-Web; a gRPC-Web
/// Enumerate n = 20 read over HTTP/1.1 holds the slot, so a long Count (n = 13) is refused
/// RESOURCE_EXHAUSTED; closing that connection stops the search within 1 s; the scrape
/// counts every one of these calls with its code.
#[test]
fn grpc_web_calls_pass_the_gate_and_stop_with_their_connection() {
    let port = free_port();
    let metrics = format!("127.0.0.1:{port}");
    let server = ServerProcess::start(&[
        "--metrics-addr",
        &metrics,
        "--log-format",
        "json",
        "--max-searches",
        "1",
    ]);
    let counted = grpc_web_call(
        server.addr,
        "Count",
        &prost::Message::encode_to_vec(&common::count_request(8)),
        &[],
    );
    assert!(counted.head.starts_with("http/1.0 200"), "{}", counted.head);
    assert!(
        counted
            .head
            .contains("content-type: application/grpc-web+proto")
    );
    assert_eq!(counted.status, Some(0));
    let answer: queens::pb::CountResponse =
        prost::Message::decode(&counted.messages[0][..]).expect("a CountResponse");
    assert_eq!((answer.solutions, answer.fundamental), (92, Some(12)));
    let line = server.next_log("call");
    assert_eq!(line["method"], "/queens.v1.Queens/Count", "{line}");
    assert_eq!(line["protocol"], "grpc-web", "{line}");
    assert_eq!(line["code"], "Ok", "{line}");

    // A stream read as fast as it comes, on a thread, until the connection is shut.
    let mut held = TcpStream::connect(server.addr).expect("connect");
    held.write_all(&grpc_web_request(
        "Enumerate",
        &request_bytes(20, true),
        &[],
    ))
    .unwrap();
    let mut reader = held.try_clone().unwrap();
    let read = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let reading = read.clone();
    let drained = std::thread::spawn(move || {
        let mut buf = vec![0u8; 1 << 16];
        while let Ok(got) = reader.read(&mut buf) {
            if got == 0 {
                break;
            }
            reading.fetch_add(got, std::sync::atomic::Ordering::Relaxed);
        }
        reading.load(std::sync::atomic::Ordering::Relaxed)
    });
    // The stream is under way once it has sent a good deal (on a busy machine the server may
    // take a few seconds of its own to get there; an idle one takes well under one).
    let started = Instant::now();
    while read.load(std::sync::atomic::Ordering::Relaxed) < 100_000
        && started.elapsed() < Duration::from_secs(20)
    {
        std::thread::sleep(Duration::from_millis(20));
    }
    let refused = grpc_web_call(
        server.addr,
        "Count",
        &prost::Message::encode_to_vec(&common::count_request(common::LONG_N)),
        &[],
    );
    assert_eq!(refused.status, Some(8), "{}", refused.head);
    assert!(refused.head.contains("--max-searches"), "{}", refused.head);
    let busy = busy_ticks(server.pid(), 10, Duration::from_secs(20));
    let closed = Instant::now();
    held.shutdown(std::net::Shutdown::Both).unwrap();
    let bytes = drained.join().unwrap();
    let idle = idle_after(server.pid(), closed, Duration::from_secs(5));
    eprintln!(
        "gRPC-Web Enumerate n = 20 over HTTP/1.0: {bytes} bytes read, 10 CPU ticks in {busy:?} \
         while streaming; idle {idle:?} after the connection closed"
    );
    assert!(
        bytes > 100_000,
        "the stream sent only {bytes} bytes in 20 s"
    );
    assert!(
        busy.is_some(),
        "the search was not running: fewer than 10 CPU ticks in 20 s"
    );
    let idle = idle.expect("the server was still busy 5 s after the connection closed");
    assert!(
        idle <= Duration::from_secs(1),
        "the search ran on for {idle:?} after its connection closed"
    );

    let q = r#"grpc_service="queens.v1.Queens""#;
    let handled = |method: &str, kind: &str, code: &str| {
        format!(
            r#"grpc_server_handled_total{{{q},grpc_method="{method}",grpc_type="{kind}",grpc_code="{code}"}}"#
        )
    };
    let enumerate = handled("Enumerate", "server_stream", "Canceled");
    let text = tokio_free_scrape(port, |text| sample(text, &enumerate) == Some(1.0));
    for (what, expected) in [
        (handled("Count", "unary", "OK"), 1.0),
        (handled("Count", "unary", "ResourceExhausted"), 1.0),
        (enumerate.clone(), 1.0),
    ] {
        assert_eq!(sample(&text, &what), Some(expected), "{what}\n{text}");
    }
}

/// [`scrape_until`] from a plain test (no runtime of its own).
fn tokio_free_scrape(port: u16, done: impl Fn(&str) -> bool) -> String {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime")
        .block_on(scrape_until(port, done))
}

/// `--preface-timeout 2 --idle-timeout 2`: an HTTP/1.1 connection that sends its request
/// line and never ends its head is closed after about 2 s (not at once, not after 8 s); one
/// that sends a whole request is answered and then closed about 2 s after, idle.
#[test]
fn http1_connections_keep_the_listener_clocks() {
    let server = ServerProcess::start(&["--preface-timeout", "2", "--idle-timeout", "2"]);
    let addr = server.addr;
    let partial = std::thread::spawn(move || {
        let mut tcp = TcpStream::connect(addr).unwrap();
        let since = Instant::now();
        tcp.write_all(b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n")
            .unwrap();
        closed_within(tcp, since, Duration::from_secs(8))
    });
    let mut whole = TcpStream::connect(addr).unwrap();
    whole
        .write_all(b"GET /settings.json HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        .unwrap();
    let mut answer = [0u8; 512];
    whole
        .set_read_timeout(Some(Duration::from_secs(5)))
        .unwrap();
    let got = whole.read(&mut answer).expect("an answer");
    let answered = Instant::now();
    assert!(
        answer[..got].starts_with(b"HTTP/1.1 200"),
        "{}",
        String::from_utf8_lossy(&answer[..got])
    );
    let idle = closed_within(whole, answered, Duration::from_secs(8));
    let partial = partial.join().unwrap();
    eprintln!(
        "HTTP/1.1: an unfinished request head closed after {partial:?}; a kept-alive \
         connection closed {idle:?} after its answer"
    );
    let partial = partial.expect("the unfinished request was open at 8 s");
    assert!(
        partial >= Duration::from_millis(1500),
        "the unfinished request was closed after only {partial:?}"
    );
    let idle = idle.expect("the idle HTTP/1.1 connection was open 8 s after its answer");
    assert!(
        idle >= Duration::from_secs(1) && idle <= Duration::from_secs(6),
        "the idle HTTP/1.1 connection was closed {idle:?} after its answer, not about 2 s"
    );
}

/// `--max-connections 3`: three kept-alive HTTP/1.1 connections fill it, a fourth is closed
/// at once; when they go, a new one is served.
#[test]
fn http1_connections_count_against_max_connections() {
    let server = ServerProcess::start(&["--max-connections", "3"]);
    let get = b"GET /settings.json HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n";
    let held: Vec<TcpStream> = (0..3)
        .map(|_| {
            let mut tcp = TcpStream::connect(server.addr).unwrap();
            tcp.write_all(get).unwrap();
            tcp.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
            let mut answer = [0u8; 256];
            let got = tcp.read(&mut answer).expect("an answer");
            assert!(answer[..got].starts_with(b"HTTP/1.1 200"));
            tcp
        })
        .collect();
    let fourth = TcpStream::connect(server.addr).unwrap();
    let closed = closed_within(fourth, Instant::now(), Duration::from_secs(3));
    assert!(
        closed.is_some_and(|c| c < Duration::from_secs(2)),
        "a fourth connection past --max-connections 3 was not closed at once: {closed:?}"
    );
    drop(held);
    let deadline = Instant::now() + Duration::from_secs(5);
    while http_get(server.addr.port(), "/settings.json").is_none() {
        assert!(
            Instant::now() < deadline,
            "no connection served once the three went"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// `--no-web`: no page and no HTTP/1.1 (the connection gets no answer), gRPC-Web refused with
/// 415 over HTTP/2, gRPC served as always; `--cors-origin` with it, or a malformed origin, is
/// a usage error.
#[tokio::test]
async fn no_web_leaves_a_grpc_only_port() {
    let server = ServerProcess::start(&["--no-web"]);
    assert_eq!(http_get(server.addr.port(), "/"), None);
    let mut client = server.client().await;
    assert_eq!(common::solutions(&mut client, 8).await, 92);

    let tcp = tokio::net::TcpStream::connect(server.addr).await.unwrap();
    let (mut h2, connection) = h2::client::handshake(tcp).await.expect("HTTP/2");
    tokio::spawn(connection);
    let request = http::Request::post(format!("http://{}/queens.v1.Queens/Count", server.addr))
        .header("content-type", "application/grpc-web+proto")
        .body(())
        .unwrap();
    let (response, mut body) = h2.send_request(request, false).unwrap();
    // One message frame: Count n = 8.
    body.send_data(bytes::Bytes::from_static(&[0, 0, 0, 0, 2, 8, 8]), true)
        .unwrap();
    let response = response.await.expect("an HTTP/2 answer");
    assert_eq!(response.status(), http::StatusCode::UNSUPPORTED_MEDIA_TYPE);

    for (args, says) in [
        (
            &["serve", "--no-web", "--cors-origin", "http://a.example"][..],
            "cannot be used with",
        ),
        (&["serve", "--cors-origin", "ftp://a.example"][..], "scheme"),
        (
            &["serve", "--cors-origin", "https://a.example/app"][..],
            "no path",
        ),
    ] {
        let (code, _, stderr) = common::queens_cli(args);
        assert_eq!(code, 2, "{args:?}: {stderr}");
        assert!(stderr.contains(says), "{args:?}: {stderr}");
    }
}

/// Over TLS, ALPN offers HTTP/1.1 besides h2: a client that speaks only HTTP/1.1 (a browser
/// without HTTP/2) completes its handshake and gets the page's settings.
#[tokio::test]
async fn tls_offers_http1_for_the_page() {
    use rustls_pki_types::pem::PemObject;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let (dir, cert, server) = common::tls_server("web-tls");
    let mut roots = rustls::RootCertStore::empty();
    for der in rustls_pki_types::CertificateDer::pem_file_iter(&cert).expect("the certificate") {
        roots.add(der.expect("a certificate")).expect("a root");
    }
    let provider = std::sync::Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .expect("TLS versions")
        .with_root_certificates(roots)
        .with_no_client_auth();
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    let connector = tokio_rustls::TlsConnector::from(std::sync::Arc::new(config));
    let tcp = tokio::net::TcpStream::connect(server.addr).await.unwrap();
    let name = rustls_pki_types::ServerName::try_from("localhost").unwrap();
    let mut tls = connector
        .connect(name, tcp)
        .await
        .expect("a TLS handshake offering only HTTP/1.1");
    assert_eq!(tls.get_ref().1.alpn_protocol(), Some(&b"http/1.1"[..]));
    tls.write_all(b"GET /settings.json HTTP/1.0\r\nHost: localhost\r\n\r\n")
        .await
        .unwrap();
    let mut answer = Vec::new();
    let _ = tls.read_to_end(&mut answer).await;
    let answer = String::from_utf8_lossy(&answer);
    let _ = std::fs::remove_dir_all(&dir);
    assert!(answer.starts_with("HTTP/1.0 200"), "{answer}");
    assert!(
        answer.ends_with(r#"{"max_n":32,"tokens":false}"#),
        "{answer}"
    );
}
