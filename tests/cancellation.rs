//! Work stops when nobody wants it: a client that leaves an Enumerate stream, a Count whose
//! deadline passes or whose caller gives up, and a SIGTERM with a stream nobody reads. The
//! server runs as a child process and its CPU time is read from `/proc/PID/stat`.

use crate::common;

use common::{ServerProcess, cpu_ticks};
use queens::pb::EnumerateRequest;
use std::time::Duration;
use tonic::Code;

/// A server started with `args`, a client of it, and an Enumerate stream of the n×n board
/// (`compact` or with rows) whose first message has arrived.
async fn streaming_server(
    args: &[&str],
    n: u32,
    compact: bool,
) -> (
    ServerProcess,
    queens::client::Client,
    tonic::Streaming<queens::pb::EnumerateResponse>,
) {
    let server = ServerProcess::start(args);
    let mut client = server.client().await;
    let mut stream = common::open_stream(&mut client, n, compact).await;
    assert!(stream.message().await.unwrap().is_some());
    (server, client, stream)
}

/// Asserts that, one second from now, the server stays idle for the second after that.
async fn assert_goes_idle(pid: u32, what: &str) {
    tokio::time::sleep(Duration::from_secs(1)).await;
    let before = cpu_ticks(pid);
    tokio::time::sleep(Duration::from_secs(1)).await;
    let used = cpu_ticks(pid) - before;
    // A search still running would use about 100 ticks in that second.
    assert!(
        used < 20,
        "{what}: server used {used} ticks in an idle second"
    );
}

#[tokio::test]
async fn leaving_a_stream_stops_its_producer() {
    let server = ServerProcess::start(&[]);
    let mut client = server.client().await;
    let mut stream = client
        .enumerate(EnumerateRequest {
            n: 18,
            compact: true,
            batch_size: 100,
            ..Default::default()
        })
        .await
        .unwrap()
        .into_inner();
    let mut seen = 0;
    while seen < 1_000 {
        seen += stream.message().await.unwrap().unwrap().boards.len();
    }
    // The producer is now ahead by a few messages and blocked, or searching.
    drop(stream);
    drop(client);
    assert_goes_idle(server.pid(), "after the client left").await;
}

#[tokio::test]
async fn a_count_past_its_deadline_stops() {
    let server = ServerProcess::start(&[]);
    let mut client = server.client().await;
    let mut request = tonic::Request::new(common::count_request(20));
    request.set_timeout(Duration::from_millis(300));
    let status = client.count(request).await.unwrap_err();
    // The client's own deadline fires as DEADLINE_EXCEEDED; the server answers the same, or
    // CANCELLED when the client reset the call first.
    assert!(
        matches!(status.code(), Code::DeadlineExceeded | Code::Cancelled),
        "{status:?}"
    );
    assert_goes_idle(server.pid(), "after the deadline").await;
}

#[tokio::test]
async fn a_count_abandoned_by_its_caller_stops() {
    let server = ServerProcess::start(&[]);
    let mut client = server.client().await;
    let call = client.count(common::count_request(20));
    // Give up after half a second: the call future is dropped, the client resets the stream.
    assert!(
        tokio::time::timeout(Duration::from_millis(500), call)
            .await
            .is_err()
    );
    drop(client);
    assert_goes_idle(server.pid(), "after the caller gave up").await;
}

#[tokio::test]
async fn sigterm_ends_a_stream_nobody_reads_within_the_grace() {
    // Open a stream of n = 16 with rows and never read it past the first message.
    let (mut server, _client, stream) =
        streaming_server(&["--shutdown-grace", "2"], 16, false).await;
    let status = tokio::task::spawn_blocking(move || server.terminate(Duration::from_secs(10)))
        .await
        .unwrap()
        .expect("the server exits within its grace despite the stuck stream");
    assert!(status.success(), "{status:?}");
    drop(stream);
}

#[tokio::test]
async fn sigterm_ends_a_read_stream_with_unavailable() {
    let (mut server, _client, mut stream) = streaming_server(&[], 18, true).await;
    let waiter = tokio::task::spawn_blocking(move || server.terminate(Duration::from_secs(15)));
    // Keep reading: the stream must end with UNAVAILABLE "server shutting down".
    let status = common::read_until_error(&mut stream, "the stream ended as if complete").await;
    assert_eq!(status.code(), Code::Unavailable, "{status:?}");
    assert!(status.message().contains("shutting down"), "{status:?}");
    let exit = waiter.await.unwrap().expect("exits");
    assert!(exit.success());
}

#[tokio::test]
async fn a_killed_client_process_stops_its_stream() {
    let server = ServerProcess::start(&[]);
    let mut client = std::process::Command::new(env!("CARGO_BIN_EXE_queens"))
        .args(["enumerate", "18", "--compact", "--addr", &server.url()])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    // Wait until boards flow, then kill the client outright (no goodbye on the connection).
    let mut first = [0u8; 4096];
    let stdout = client.stdout.as_mut().unwrap();
    let read = std::io::Read::read(stdout, &mut first).unwrap();
    assert!(read > 0);
    client.kill().unwrap();
    client.wait().unwrap();
    assert_goes_idle(server.pid(), "after the client process was killed").await;
}

#[tokio::test]
async fn after_sigterm_new_calls_are_refused() {
    // An open stream keeps the server in its grace period after SIGTERM.
    let (mut server, mut client, stream) =
        streaming_server(&["--shutdown-grace", "3"], 18, true).await;
    let pid = server.pid();
    let _ = std::process::Command::new("kill")
        .args(["-TERM", &pid.to_string()])
        .status();
    tokio::time::sleep(Duration::from_millis(300)).await;
    // A new call, on the existing connection or a new one, is refused.
    let refused = client.count(common::count_request(8)).await;
    assert!(refused.is_err(), "{refused:?}");
    let fresh = queens::client::connect(&server.url()).await;
    if let Ok(mut fresh) = fresh {
        let status = fresh.count(common::count_request(8)).await.unwrap_err();
        assert!(
            matches!(status.code(), Code::Unavailable | Code::Unknown),
            "{status:?}"
        );
    }
    drop(stream);
    let status = tokio::task::spawn_blocking(move || server.terminate(Duration::from_secs(10)))
        .await
        .unwrap()
        .expect("exits");
    assert!(status.success());
}

#[tokio::test]
async fn leaving_a_count_progress_stream_stops_the_count() {
    let server = ServerProcess::start(&[]);
    let mut client = server.client().await;
    let mut updates = client
        .count_progress(common::count_request(20))
        .await
        .unwrap()
        .into_inner();
    let first = updates.message().await.unwrap().unwrap();
    assert!(!first.done);
    drop(updates);
    assert_goes_idle(server.pid(), "after the progress stream was dropped").await;
}

/// CountProgress on a board of the join's tables (n = 24: they take seconds to build)
/// and on the first board past the join (n = 29, the border constellations, whose
/// subproblems take minutes): from the first second on, every second brings an update whose
/// `subproblems_done` or `solutions` has moved; leaving the stream then stops the server's
/// CPU.
#[tokio::test]
async fn count_progress_moves_every_second_and_stops_when_left() {
    for n in [24, 29] {
        let server = ServerProcess::start(&[]);
        let mut client = server.client().await;
        let started = std::time::Instant::now();
        let mut updates = client
            .count_progress(common::count_request(n))
            .await
            .unwrap()
            .into_inner();
        // The furthest `subproblems_done` + `solutions` (both only grow) seen in each of
        // the first 4 seconds.
        let mut seconds = [None::<u64>; 4];
        while started.elapsed() < Duration::from_secs(4) {
            let update = updates.message().await.unwrap().unwrap();
            assert!(!update.done, "n = {n} cannot be done in seconds");
            let second = (started.elapsed().as_secs() as usize).min(3);
            let most = seconds[second].get_or_insert(0);
            *most = (*most).max(update.subproblems_done + update.solutions);
        }
        let mut before = 0;
        for (second, most) in seconds.iter().enumerate() {
            let most = most.unwrap_or_else(|| panic!("n = {n}: no update in second {second}"));
            assert!(
                most > before,
                "n = {n}: no progress in second {second} ({seconds:?})"
            );
            before = most;
        }
        drop(updates);
        assert_goes_idle(server.pid(), &format!("after leaving CountProgress of {n}")).await;
    }
}
