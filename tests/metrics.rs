//! Prometheus metrics: after known calls (3 Counts, 1 Enumerate n = 8, 1 invalid Count) a
//! scrape of `--metrics-addr` shows exactly those calls under the go-grpc-prometheus names,
//! the service's own counters and the process metrics; a stream the client drops is counted;
//! every metric the dashboard uses is exported. A real Prometheus and `promtool` are system
//! tests (`system/prometheus.rs`), which use the helpers here.

use crate::common;
use crate::tools;

use common::{ServerProcess, count_request, free_port, http_get, open_stream};
use std::time::{Duration, Instant};

/// A server process with `--metrics-addr` on a free port: the port, the server (stopped when
/// dropped) and a client connected to it.
pub(crate) async fn metered_server() -> (u16, ServerProcess, queens::client::Client) {
    let port = free_port();
    let server = ServerProcess::start(&["--metrics-addr", &format!("127.0.0.1:{port}")]);
    let client = server.client().await;
    (port, server, client)
}

/// The body of `GET /metrics` on `port`, once `done` holds of it (or after 10 s).
pub(crate) async fn scrape_until(port: u16, done: impl Fn(&str) -> bool) -> String {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let text = http_get(port, "/metrics").expect("a scrape");
        if done(&text) || Instant::now() > deadline {
            return text;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// The value of the sample whose name and labels start as `prefix` says.
pub(crate) fn sample(text: &str, prefix: &str) -> Option<f64> {
    text.lines()
        .find(|line| line.starts_with(prefix))
        .and_then(|line| line.rsplit(' ').next())
        .and_then(|v| v.parse().ok())
}

/// A scrape of a fresh metered server once it has served a Count n = 8 and an Enumerate
/// n = 6 (read to the end).
pub(crate) async fn scrape_after_a_count_and_a_stream() -> String {
    let (port, _server, mut client) = metered_server().await;
    client.count(count_request(8)).await.expect("count");
    let mut stream = open_stream(&mut client, 6, false).await;
    while stream.message().await.expect("stream").is_some() {}
    scrape_until(port, |text| {
        text.contains(r#"grpc_method="Enumerate",grpc_type="server_stream",grpc_code="OK""#)
    })
    .await
}

/// How many subproblems the solver splits a count of an n×n board into.
fn subproblems(n: u32) -> u64 {
    let options = queens::solver::CountOptions::default();
    let progress = options.progress.clone();
    let pool = queens::solver::Pool::new(1);
    let problem = queens::solver::Problem::new(n, &[], false, queens::solver::Shard::WHOLE)
        .expect("a problem");
    queens::solver::pool::wait(|done| queens::solver::count(&problem, options, &pool, done))
        .expect("counted")
        .expect("no error");
    progress.done.load(std::sync::atomic::Ordering::Relaxed)
}

/// The known calls and their counters, exactly.
#[tokio::test]
async fn a_scrape_counts_the_calls_made() {
    let (port, _server, mut client) = metered_server().await;
    // Two boards counted at once on the call's thread, one on the pool.
    for (n, solutions) in [(8, 92), (8, 92), (9, 352)] {
        let answer = client.count(count_request(n)).await.expect("count");
        assert_eq!(answer.into_inner().solutions, solutions);
    }
    let mut stream = open_stream(&mut client, 8, false).await;
    let (mut boards, mut messages, mut bytes) = (0, 0, 0);
    while let Some(message) = stream.message().await.expect("stream") {
        use prost::Message;
        boards += message.boards.len();
        bytes += message.encoded_len();
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
    let text = scrape_until(port, |text| sample(text, &invalid) == Some(1.0)).await;
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
    // What the service sent and searched.
    assert_eq!(sample(&text, "queens_boards_sent_total "), Some(92.0));
    assert_eq!(
        sample(&text, "queens_bytes_sent_total "),
        Some(bytes as f64),
        "the protobuf payload of the Enumerate's messages"
    );
    assert_eq!(
        sample(&text, "queens_count_subproblems_total "),
        Some(2.0 + subproblems(9) as f64),
        "a board counted at once is one subproblem; {text}"
    );
    // Labels stay bounded: no peer addresses, no request values.
    assert!(!text.contains("127.0.0.1"), "{text}");
}

/// An Enumerate the client drops after its first message counts as a stream the client
/// ended, and as a Canceled call.
#[tokio::test]
async fn a_stream_the_client_drops_is_counted() {
    let (port, _server, mut client) = metered_server().await;
    let mut stream = open_stream(&mut client, 14, false).await;
    stream
        .message()
        .await
        .expect("stream")
        .expect("a first message");
    drop(stream);
    let gone = r#"queens_streams_client_gone_total{grpc_method="Enumerate"}"#;
    let text = scrape_until(port, |text| sample(text, gone) == Some(1.0)).await;
    assert_eq!(sample(&text, gone), Some(1.0), "{text}");
    let canceled = r#"grpc_server_handled_total{grpc_service="queens.v1.Queens",grpc_method="Enumerate",grpc_type="server_stream",grpc_code="Canceled"}"#;
    assert_eq!(sample(&text, canceled), Some(1.0), "{text}");
    assert!(
        sample(&text, "queens_boards_sent_total ").is_some_and(|b| b > 0.0 && b < 365_596.0),
        "part of the stream went out: {text}"
    );
}

/// Every PromQL expression of `deploy/grafana-dashboard.json`.
pub(crate) fn dashboard_exprs() -> Vec<String> {
    let path = tools::repo().join("deploy/grafana-dashboard.json");
    let text = std::fs::read_to_string(&path).expect("deploy/grafana-dashboard.json");
    let dashboard: serde_json::Value = serde_json::from_str(&text).expect("valid JSON");
    let panels = dashboard["panels"].as_array().expect("panels");
    let exprs: Vec<String> = panels
        .iter()
        .flat_map(|p| p["targets"].as_array().cloned().unwrap_or_default())
        .filter_map(|t| t["expr"].as_str().map(str::to_string))
        .collect();
    assert!(exprs.len() >= panels.len(), "every panel has a query");
    exprs
}

/// The metric names an expression uses (this project's and the go-grpc-prometheus and
/// process ones; label names such as `grpc_method` are not metric names).
fn metric_names(expr: &str) -> Vec<String> {
    expr.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == ':'))
        .filter(|t| {
            ["grpc_server_", "queens_", "process_"]
                .iter()
                .any(|p| t.starts_with(p))
        })
        .map(str::to_string)
        .collect()
}

/// Every metric the dashboard uses is in a scrape of a server that has served a Count and
/// an Enumerate; and it has the panels the operators asked for.
#[tokio::test]
async fn the_dashboard_uses_only_exported_metrics() {
    let text = scrape_after_a_count_and_a_stream().await;
    let exported: std::collections::BTreeSet<&str> = text
        .lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
        .filter_map(|l| l.split(['{', ' ']).next())
        .collect();
    let used: std::collections::BTreeSet<String> = dashboard_exprs()
        .iter()
        .flat_map(|e| metric_names(e))
        .collect();
    for name in &used {
        assert!(
            exported.contains(name.as_str()),
            "the dashboard uses {name}, which the server does not export:\n{exported:?}"
        );
    }
    for wanted in [
        "grpc_server_handled_total",
        "grpc_server_handling_seconds_bucket",
        "queens_searches_running",
        "queens_searches_refused_total",
        "queens_boards_sent_total",
        "process_resident_memory_bytes",
    ] {
        assert!(used.contains(wanted), "the dashboard lacks {wanted}");
    }
    eprintln!(
        "the dashboard uses {} metrics, all exported: {used:?}",
        used.len()
    );
}
