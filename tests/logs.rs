//! The server's log: `--log-format json` writes one JSON object per line, and every call gets one
//! line at INFO naming its method, peer, client, status code and duration; refused calls are logged
//! with their code too.

use crate::common;

use common::{ServerProcess, count_request};

/// A Count n = 8, an Enumerate n = 6 and an invalid Count n = 0 each leave one JSON line with
/// the call's fields (n, and the solutions counted or the boards sent).
#[tokio::test]
async fn each_call_is_one_json_line() {
    let server = ServerProcess::start(&["--log-format", "json"]);
    let mut client = server.client().await;
    let answer = client.count(count_request(8)).await.expect("count");
    assert_eq!(answer.into_inner().solutions, 92);
    let line = server.next_log("call");
    assert_eq!(line["level"], "INFO", "{line}");
    assert_eq!(line["target"], "queens::call", "{line}");
    assert_eq!(line["method"], "/queens.v1.Queens/Count", "{line}");
    assert_eq!(line["protocol"], "grpc", "{line}");
    assert_eq!(line["code"], "Ok", "{line}");
    assert_eq!(line["client"], "127.0.0.1", "{line}");
    let peer: std::net::SocketAddr = line["peer"].as_str().unwrap().parse().expect("peer");
    assert!(peer.ip().is_loopback(), "{line}");
    let took = line["duration_ms"].as_f64().expect("duration_ms");
    assert!((0.0..10_000.0).contains(&took), "{line}");
    assert_eq!(line["n"], 8, "{line}");
    assert_eq!(line["solutions"], 92, "{line}");

    let mut stream = client
        .enumerate(queens::pb::EnumerateRequest {
            n: 6,
            compact: true,
            ..Default::default()
        })
        .await
        .expect("enumerate")
        .into_inner();
    let mut boards = 0;
    while let Some(message) = stream.message().await.expect("stream") {
        boards += message.boards.len();
    }
    assert_eq!(boards, 4);
    let line = server.next_log("call");
    assert_eq!(line["method"], "/queens.v1.Queens/Enumerate", "{line}");
    assert_eq!(line["code"], "Ok", "{line}");
    assert_eq!(line["n"], 6, "{line}");
    assert_eq!(line["boards"], 4, "{line}");

    let status = client.count(count_request(0)).await.unwrap_err();
    assert_eq!(status.code(), tonic::Code::InvalidArgument);
    let line = server.next_log("call");
    assert_eq!(line["code"], "InvalidArgument", "{line}");
    assert!(line.get("n").is_none(), "n = 0 is no board size: {line}");
}
