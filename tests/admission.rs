//! Admission by cost, against the `queens` binary over real sockets: small searches (Count and
//! Enumerate up to n = 12) take no search slot, so one client with 32 small Counts in flight
//! is answered with none refused on the default flags, and a client flooding small calls does
//! not keep another client out; a long search (Count n = 20) from a client that already runs
//! its share is still refused at once, with a RetryInfo; and a flooding client's small calls
//! are bounded: its share of the small searches' places, and a wait bounded by its share of
//! the requests in flight and by `--small-search-wait`, after which it is refused.
//!
//! A lone client's Counts of n <= 8 are counted at once (seen in the metrics).
//!
//! Clients are told apart by address: the second client binds 127.0.0.2 (all of 127/8 is
//! loopback on Linux). Only counts of answered and refused calls are asserted, never times.

use crate::common;
use crate::fairness_deadlines::client_from;
use crate::limits::limit_details;
use crate::metrics::{metered_server, sample, scrape_until};

use common::{ServerProcess, count_request};
use queens::pb::EnumerateRequest;
use queens::pb::queens_client::QueensClient;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;
use tokio::task::JoinSet;
use tonic::transport::{Channel, Endpoint};
use tonic::{Code, Status};

/// Answers and refusals of a run of calls.
#[derive(Debug, Default)]
struct Tally {
    answered: u64,
    refused: Vec<Status>,
}

impl Tally {
    /// Adds another task's tally.
    fn add(&mut self, other: Tally) {
        self.answered += other.answered;
        self.refused.extend(other.refused);
    }
}

/// The solutions of the n×n board for the small n these tests count (A000170).
fn solutions(n: u32) -> u64 {
    match n {
        8 => 92,
        10 => 724,
        _ => panic!("no answer kept for n = {n}"),
    }
}

/// `calls` Count calls of board `n` (8 or 10) one after another on `client`, until `stop` is
/// raised if given; every answer must be right and every failure RESOURCE_EXHAUSTED.
async fn counts(
    mut client: QueensClient<Channel>,
    n: u32,
    calls: usize,
    stop: Option<Arc<AtomicBool>>,
) -> Tally {
    let mut tally = Tally::default();
    for _ in 0..calls {
        if stop.as_ref().is_some_and(|s| s.load(Ordering::Relaxed)) {
            break;
        }
        match client.count(count_request(n)).await {
            Ok(answer) => {
                assert_eq!(answer.into_inner().solutions, solutions(n));
                tally.answered += 1;
            }
            Err(status) if status.code() == Code::ResourceExhausted => tally.refused.push(status),
            Err(status) => panic!("Count n = {n}: {status:?}"),
        }
    }
    tally
}

/// `calls` Count n = 8 calls on `client`, as [`counts`].
async fn count_8s(
    client: QueensClient<Channel>,
    calls: usize,
    stop: Option<Arc<AtomicBool>>,
) -> Tally {
    counts(client, 8, calls, stop).await
}

/// `tasks` callers on `client`'s connection, each making `calls` Count calls of board `n` in
/// turn (until `stop`, if given): `tasks` calls in flight at once.
fn in_flight_of(
    client: &QueensClient<Channel>,
    n: u32,
    tasks: usize,
    calls: usize,
    stop: Option<Arc<AtomicBool>>,
) -> JoinSet<Tally> {
    let mut set = JoinSet::new();
    for _ in 0..tasks {
        set.spawn(counts(client.clone(), n, calls, stop.clone()));
    }
    set
}

/// `tasks` callers of Count n = 8, as [`in_flight_of`].
fn in_flight(
    client: &QueensClient<Channel>,
    tasks: usize,
    calls: usize,
    stop: Option<Arc<AtomicBool>>,
) -> JoinSet<Tally> {
    in_flight_of(client, 8, tasks, calls, stop)
}

/// The tallies of every task of `set`, added up.
async fn total(mut set: JoinSet<Tally>) -> Tally {
    let mut all = Tally::default();
    while let Some(tally) = set.join_next().await {
        all.add(tally.expect("a caller task"));
    }
    all
}

/// Default flags: one client with 32 Count n = 8 calls in flight on one connection, 16
/// each (512 calls), is answered every time, none refused; 32 connections from the same
/// address the same.
#[tokio::test]
async fn thirty_two_small_counts_in_flight_from_one_client_are_all_answered() {
    let server = ServerProcess::start(&[]);
    let client = client_from(&server.url(), "127.0.0.1").await;
    let tally = total(in_flight(&client, 32, 16, None)).await;
    assert_eq!(
        (tally.answered, tally.refused.len()),
        (512, 0),
        "{:?}",
        tally.refused.first()
    );
    let mut set = JoinSet::new();
    for _ in 0..32 {
        let client = client_from(&server.url(), "127.0.0.1").await;
        set.spawn(count_8s(client, 8, None));
    }
    let tally = total(set).await;
    assert_eq!((tally.answered, tally.refused.len()), (256, 0));
}

/// Default flags: while client A (127.0.0.1) keeps 32 Count n = 8 calls in flight, client B
/// (127.0.0.2) with one call at a time gets all its 50 answered; A is answered throughout
/// too, none of either refused.
#[tokio::test]
async fn a_client_flooding_small_calls_does_not_keep_another_out() {
    b_is_answered_beside_a_flood(8, 50).await;
}

/// Default flags, Count n = 10 (a small count on the pool, taking turns on the CPU, where
/// n = 8 is counted at once on the call's thread): client A keeps 32 in flight on one
/// connection while client B makes 20 calls one at a time; all of B's are answered, and all
/// of A's, none refused.
#[tokio::test]
async fn small_counts_taking_turns_are_answered_beside_a_flood() {
    b_is_answered_beside_a_flood(10, 20).await;
}

/// A server with default flags; client A (127.0.0.1) keeps 32 Count `n` calls in flight while
/// client B (127.0.0.2) makes `calls` of them one at a time: every call of both is answered,
/// none refused.
async fn b_is_answered_beside_a_flood(n: u32, calls: usize) {
    let server = ServerProcess::start(&[]);
    let a = client_from(&server.url(), "127.0.0.1").await;
    let b = client_from(&server.url(), "127.0.0.2").await;
    let stop = Arc::new(AtomicBool::new(false));
    let flood = in_flight_of(&a, n, 32, usize::MAX, Some(stop.clone()));
    let tally_b = counts(b, n, calls, None).await;
    stop.store(true, Ordering::Relaxed);
    let tally_a = total(flood).await;
    assert_eq!(
        (tally_b.answered, tally_b.refused.len()),
        (calls as u64, 0),
        "B beside A's flood: {:?}",
        tally_b.refused.first()
    );
    assert!(tally_a.answered >= 32, "A's flood was answered too");
    assert!(
        tally_a.refused.is_empty(),
        "A refused: {:?}",
        tally_a.refused.first()
    );
}

/// Default flags, metered: a client alone with 32 Count n = 8 in flight has every one
/// counted at once on the call's thread: one subproblem each, no turn taken, none refused.
/// (Whether a client crowds others is decided by the server's own count of its calls in
/// flight; the unit tests of `admission.rs` cover that rule.)
#[tokio::test]
async fn a_lone_clients_smallest_counts_are_counted_at_once() {
    let (port, server, _) = metered_server().await;
    let a = client_from(&server.url(), "127.0.0.1").await;
    let (turns, subproblems) = (
        "queens_small_count_turn_wait_seconds_count ",
        "queens_count_subproblems_total ",
    );
    let alone = total(in_flight(&a, 32, 4, None)).await;
    assert_eq!((alone.answered, alone.refused.len()), (128, 0));
    let text = scrape_until(port, |text| sample(text, subproblems) == Some(128.0)).await;
    assert_eq!(
        sample(&text, subproblems),
        Some(128.0),
        "counted at once: {text}"
    );
    assert_eq!(sample(&text, turns).unwrap_or(0.0), 0.0, "{text}");
}

/// Default flags: a client that runs its share of the search slots (half the cores', at least
/// one) with CountProgress streams of n = 32 is refused a Count n = 20 at once, with the
/// limit's ErrorInfo and a RetryInfo of 1 s; its Count n = 8, a small search, is answered
/// beside them.
#[tokio::test]
async fn a_long_search_beyond_the_clients_share_is_refused_with_retry_info() {
    let server = ServerProcess::start(&[]);
    let defaults = queens::config::Config::default();
    let share = defaults.searches_per_client();
    let mut a = client_from(&server.url(), "127.0.0.1").await;
    let mut held = Vec::new();
    for _ in 0..share {
        // The response's headers come once the count is admitted.
        let stream = a
            .count_progress(count_request(32))
            .await
            .expect("a count within the client's share");
        held.push(stream.into_inner());
    }
    let refused = a.count(count_request(20)).await.unwrap_err();
    let (reason, _, metadata, retry) = limit_details(&refused);
    // On one core the one slot is the server's whole: the server's limit is named first.
    let (want, flag) = if share == defaults.max_searches {
        ("MAX_SEARCHES", "--max-searches")
    } else {
        ("MAX_SEARCHES_PER_CLIENT", "--max-searches-per-client")
    };
    assert_eq!(reason, want, "{refused:?}");
    assert_eq!(metadata["flag"], flag);
    assert_eq!(retry, Some(Duration::from_secs(1)));
    let small = a
        .count(count_request(8))
        .await
        .expect("a small count beside");
    assert_eq!(small.into_inner().solutions, 92);
    drop(held);
}

/// A client of `url` from 127.0.0.1 whose streams' HTTP/2 windows are 1 KiB: the server
/// can send it next to nothing it does not read, so a stream it leaves unread stays open.
async fn narrow_client(url: &str) -> QueensClient<Channel> {
    let channel = Endpoint::from_shared(url.to_string())
        .expect("url")
        .local_address(Some("127.0.0.1".parse().expect("an address")))
        .initial_stream_window_size(1024)
        .connect()
        .await
        .expect("connect");
    QueensClient::new(channel)
}

/// `--max-small-searches-per-client 2 --max-requests-per-client 8 --small-search-wait 3`:
/// client A holds its two small places with two Enumerate streams of n = 12 it does not read,
/// then sends 20 Count n = 8 at once. Six of them (its 8 requests in flight less the two
/// streams) wait for a place and are refused after the wait, naming
/// `--max-small-searches-per-client 2` with a RetryInfo; the other 14 are refused at once at
/// the gate, naming `--max-requests-per-client`: none is answered, and what waits is bounded.
/// Client B is answered meanwhile, and once A's streams go, so is A.
#[tokio::test]
async fn a_flooding_clients_small_calls_are_bounded() {
    let server = ServerProcess::start(&[
        "--max-small-searches-per-client",
        "2",
        "--max-requests-per-client",
        "8",
        "--small-search-wait",
        "3",
    ]);
    let mut narrow = narrow_client(&server.url()).await;
    let mut streams = Vec::new();
    for _ in 0..2 {
        let request = EnumerateRequest {
            n: 12,
            compact: true,
            batch_size: 1,
            ..Default::default()
        };
        let stream = narrow.enumerate(request).await.expect("a small stream");
        streams.push(stream.into_inner());
    }
    let a = client_from(&server.url(), "127.0.0.1").await;
    let flood = in_flight(&a, 20, 1, None);
    let mut b = client_from(&server.url(), "127.0.0.2").await;
    let answer = b.count(count_request(8)).await.expect("B beside A's flood");
    assert_eq!(answer.into_inner().solutions, 92);
    let tally = total(flood).await;
    assert_eq!(tally.answered, 0, "A's two places are held");
    let mut reasons = std::collections::BTreeMap::new();
    for status in &tally.refused {
        let (reason, _, metadata, retry) = limit_details(status);
        assert_eq!(retry, Some(Duration::from_secs(1)), "{status:?}");
        if reason == "MAX_SMALL_SEARCHES_PER_CLIENT" {
            assert_eq!(metadata["limit"], "2", "{status:?}");
        }
        *reasons.entry(reason).or_insert(0) += 1;
    }
    assert_eq!(
        reasons,
        [
            ("MAX_REQUESTS_PER_CLIENT".to_string(), 14),
            ("MAX_SMALL_SEARCHES_PER_CLIENT".to_string(), 6)
        ]
        .into(),
        "{:?}",
        tally.refused
    );
    drop(streams);
    let mut a = a.clone();
    let until = std::time::Instant::now() + Duration::from_secs(5);
    common::count_by(&mut a, 8, until, "A's places were not given back").await;
}
