//! The memory budget (`--max-memory`) over real sockets: a count whose tables do not fit is
//! refused at once naming the bytes and the flag; two counts of one size share one set of
//! the join's tables (a budget that holds one set runs both, and refuses a third size while
//! they run); a shard that holds no key builds no tables, so it runs under a budget smaller
//! than them; and a failed allocation (the server under an address-space limit below what
//! its budget allows) ends that call with RESOURCE_EXHAUSTED while the server goes on.

use crate::common;

use common::{A000170, InProcess, ServerProcess, count_request};
use queens::config::Config;
use queens::pb::{CountRequest, Shard as ShardMessage};
use queens::solver::{Problem, Shard, count_memory};
use tonic::{Code, Status};
use tonic_types::StatusExt;

/// OEIS A000170 at n = 18 (the shared table stops at 17).
const SOLUTIONS_18: u64 = 666_090_624;

/// A Count request for part `index` of `count` of the n×n board.
fn shard_request(n: u32, index: u32, count: u32) -> CountRequest {
    CountRequest {
        shard: Some(ShardMessage { index, count }),
        ..count_request(n)
    }
}

/// What the server's model says a count of `n` (part `index` of `count`) takes on one
/// engine: in all, and beyond the tables.
fn model(n: u32, index: u32, count: u32) -> (u64, u64) {
    let problem = Problem::new(n, &[], false, Shard { index, count }).expect("a valid question");
    let memory = count_memory(&problem, 1);
    (memory.total(), memory.own())
}

/// A server in this process with `bytes` of budget, one engine per count, and search slots
/// enough that only memory limits what runs at once.
async fn server(bytes: u64) -> InProcess {
    InProcess::with_config(Config {
        max_memory: bytes,
        count_threads: 1,
        max_searches: 8,
        max_searches_per_client: Some(8),
        ..Config::default()
    })
    .await
}

/// The reason of `status`'s ErrorInfo and its metadata value `key`.
fn reason_and(status: &Status, key: &str) -> (String, Option<String>) {
    let details = status.check_error_details().expect("decodable details");
    let info = details.error_info().expect("an ErrorInfo");
    (info.reason.clone(), info.metadata.get(key).cloned())
}

#[tokio::test]
async fn a_count_whose_tables_do_not_fit_is_refused_naming_the_bytes_and_the_flag() {
    let budget = 100 << 20;
    let server = server(budget).await;
    let mut client = queens::client::connect(&server.url()).await.unwrap();
    let (need, _) = model(22, 0, 1);
    assert!(need > budget);
    let refused = client.count(count_request(22)).await.unwrap_err();
    assert_eq!(refused.code(), Code::ResourceExhausted, "{refused:?}");
    let message = refused.message();
    assert!(
        message.contains("--max-memory") && message.contains(&need.to_string()),
        "{message}"
    );
    let (reason, bytes) = reason_and(&refused, "need_bytes");
    assert_eq!(reason, "SEARCH_OVER_MAX_MEMORY");
    assert_eq!(bytes, Some(need.to_string()));
    // What fits runs.
    let small = client.count(count_request(12)).await.unwrap().into_inner();
    assert_eq!(small.solutions, A000170[11]);
}

/// A whole count of n = 18 runs; while it does, a shard of the same size is admitted on a
/// budget that holds one set of tables and not two, and a count of another size that would
/// need its own tables is refused (MAX_MEMORY, with a delay to retry after).
#[tokio::test]
async fn two_counts_of_one_size_share_one_set_of_tables() {
    let (whole, _) = model(18, 0, 1);
    let (shard, shard_own) = model(18, 5, 64);
    let (other, _) = model(19, 3, 64);
    let budget = whole + shard_own + (512 << 10);
    assert!(
        budget < whole + shard,
        "a budget that holds one set of tables only"
    );
    assert!(other < budget, "the other size fits an idle server");
    let server = server(budget).await;
    let mut client = queens::client::connect(&server.url()).await.unwrap();
    let mut progress = client
        .count_progress(count_request(18))
        .await
        .unwrap()
        .into_inner();
    let first = progress.message().await.unwrap().expect("an update");
    assert!(!first.done, "the whole count runs");
    let part = client.count(shard_request(18, 5, 64)).await;
    let part = part.expect("the shard shares the running count's tables");
    assert!(part.into_inner().solutions > 0);
    let refused = client.count(shard_request(19, 3, 64)).await.unwrap_err();
    let (reason, need) = reason_and(&refused, "need_bytes");
    assert_eq!(
        (reason.as_str(), need),
        ("MAX_MEMORY", Some(other.to_string()))
    );
    let delay = refused.check_error_details().unwrap().retry_info().cloned();
    assert!(delay.and_then(|r| r.retry_delay).is_some(), "{refused:?}");
    // The whole count was still running after both: they ran at once.
    let next = progress.message().await.unwrap().expect("an update");
    assert!(
        !next.done,
        "the whole count outlasted the shard and the refusal"
    );
    let mut last = next;
    while let Some(update) = progress.message().await.unwrap() {
        last = update;
    }
    assert!(last.done);
    assert_eq!(last.solutions, SOLUTIONS_18);
}

/// Parts are numbered n turn-fixed parts first, then the keys: a shard of a million holds no
/// key at index 0 or 999,999, and needs no tables; one that holds a key does.
#[tokio::test]
async fn a_shard_that_holds_no_key_builds_no_tables() {
    let budget = 64 << 20;
    let (tables_and_all, _) = model(22, 30, 1_000_000);
    assert!(tables_and_all > budget);
    let server = server(budget).await;
    let mut client = queens::client::connect(&server.url()).await.unwrap();
    for index in [999_999, 0] {
        let empty = client.count(shard_request(22, index, 1_000_000)).await;
        let empty = empty
            .unwrap_or_else(|s| panic!("shard {index}: {s:?}"))
            .into_inner();
        assert_eq!(empty.solutions, 0, "shard {index}");
    }
    let keyed = client
        .count(shard_request(22, 30, 1_000_000))
        .await
        .unwrap_err();
    assert_eq!(reason_and(&keyed, "need_bytes").0, "SEARCH_OVER_MAX_MEMORY");
}

/// The server under an address-space limit (`ulimit -v`) far below what `--max-memory` lets a
/// count reserve: the join's tables of n = 22 cannot be allocated, the call ends with
/// RESOURCE_EXHAUSTED naming the allocation, and the server answers the next call.
#[tokio::test]
async fn a_failed_allocation_ends_the_call_and_the_server_serves_the_next() {
    // The idle server maps about 290 MiB (threads' stacks, the allocator's arenas); the
    // tables of n = 22 take 180 MiB more.
    let server = ServerProcess::start_in_address_space(420 << 20, &["--max-memory", "8Gi"]);
    let mut client = server.client().await;
    let failed = client.count(count_request(22)).await.unwrap_err();
    assert_eq!(failed.code(), Code::ResourceExhausted, "{failed:?}");
    assert!(
        failed.message().contains("could not allocate"),
        "{failed:?}"
    );
    assert_eq!(reason_and(&failed, "alloc_bytes").0, "OUT_OF_MEMORY");
    let next = client.count(count_request(12)).await.unwrap().into_inner();
    assert_eq!(next.solutions, A000170[11]);
    let again = client.count(count_request(16)).await.unwrap().into_inner();
    assert_eq!(again.solutions, A000170[15]);
}
