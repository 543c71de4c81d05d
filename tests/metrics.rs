//! Prometheus metrics (issue 14, in part): after known calls (3 Counts, 1 Enumerate n = 8,
//! 1 invalid Count) a scrape of `--metrics-addr` shows exactly those calls under the
//! go-grpc-prometheus names, and the process metrics are there.

mod common;

use common::{ServerProcess, count_request};
use std::io::{Read, Write};
use std::time::{Duration, Instant};

/// A free loopback port (bound and let go: the server binds it next).
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .expect("bind")
        .local_addr()
        .unwrap()
        .port()
}

/// The body of `GET /metrics` on `port`.
fn scrape(port: u16) -> String {
    let mut tcp = std::net::TcpStream::connect(("127.0.0.1", port)).expect("metrics listener");
    tcp.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    write!(
        tcp,
        "GET /metrics HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut response = String::new();
    tcp.read_to_string(&mut response).expect("response");
    assert!(response.starts_with("HTTP/1.1 200"), "{response}");
    response
}

/// The value of the sample whose name and labels start as `prefix` says.
fn sample(text: &str, prefix: &str) -> Option<f64> {
    text.lines()
        .find(|line| line.starts_with(prefix))
        .and_then(|line| line.rsplit(' ').next())
        .and_then(|v| v.parse().ok())
}

/// The known calls and their counters, exactly.
#[tokio::test]
async fn a_scrape_counts_the_calls_made() {
    let port = free_port();
    let server = ServerProcess::start(&["--metrics-addr", &format!("127.0.0.1:{port}")]);
    let mut client = queens::client::connect(&server.url())
        .await
        .expect("connect");
    for _ in 0..3 {
        let answer = client.count(count_request(8)).await.expect("count");
        assert_eq!(answer.into_inner().solutions, 92);
    }
    let mut stream = client
        .enumerate(queens::pb::EnumerateRequest {
            n: 8,
            ..Default::default()
        })
        .await
        .expect("enumerate")
        .into_inner();
    let (mut boards, mut messages) = (0, 0);
    while let Some(message) = stream.message().await.expect("stream") {
        boards += message.boards.len();
        messages += 1;
    }
    assert_eq!(boards, 92);
    let status = client.count(count_request(0)).await.unwrap_err();
    assert_eq!(status.code(), tonic::Code::InvalidArgument);

    // A call's counters move when its response has gone out: wait for the last one.
    let q = r#"grpc_service="queens.v1.Queens""#;
    let invalid = format!(
        r#"grpc_server_handled_total{{{q},grpc_method="Count",grpc_type="unary",grpc_code="InvalidArgument"}}"#
    );
    let deadline = Instant::now() + Duration::from_secs(10);
    let text = loop {
        let text = scrape(port);
        if sample(&text, &invalid) == Some(1.0) || Instant::now() > deadline {
            break text;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    let count = format!(r#"{q},grpc_method="Count",grpc_type="unary""#);
    let enumerate = format!(r#"{q},grpc_method="Enumerate",grpc_type="server_stream""#);
    let expect = [
        (format!("grpc_server_started_total{{{count}}}"), 4.0),
        (
            format!(r#"grpc_server_handled_total{{{count},grpc_code="OK"}}"#),
            3.0,
        ),
        (invalid.clone(), 1.0),
        (format!("grpc_server_msg_sent_total{{{count}}}"), 3.0),
        (
            format!("grpc_server_handling_seconds_count{{{count}}}"),
            4.0,
        ),
        (format!("grpc_server_started_total{{{enumerate}}}"), 1.0),
        (
            format!(r#"grpc_server_handled_total{{{enumerate},grpc_code="OK"}}"#),
            1.0,
        ),
        (
            format!("grpc_server_msg_sent_total{{{enumerate}}}"),
            messages as f64,
        ),
        (
            format!("grpc_server_handling_seconds_count{{{enumerate}}}"),
            1.0,
        ),
        (
            format!(r#"grpc_server_handling_seconds_bucket{{{enumerate},le="+Inf"}}"#),
            1.0,
        ),
    ];
    for (name, value) in expect {
        assert_eq!(sample(&text, &name), Some(value), "{name} in:\n{text}");
    }
    for name in [
        "process_resident_memory_bytes",
        "process_cpu_seconds_total",
        "process_open_fds",
        "process_threads",
        "process_start_time_seconds",
    ] {
        assert!(sample(&text, name).is_some(), "{name} missing:\n{text}");
    }
    // The service's own: no search is running now, the client's connection is open.
    assert_eq!(
        sample(&text, "queens_searches_running "),
        Some(0.0),
        "{text}"
    );
    assert!(
        sample(&text, "queens_connections_open ").is_some_and(|c| c >= 1.0),
        "{text}"
    );
    // Labels stay bounded: no peer addresses, no request values.
    assert!(!text.contains("127.0.0.1"), "{text}");
}
