//! Every INVALID_ARGUMENT of the gRPC contract over real sockets: its message and its
//! BadRequest's one field violation, from Enumerate and Count alike, and `max_n` lowering the
//! limit. The rest of the contract (OEIS counts, streams, features, health, reflection) and
//! the client helpers live in `service.rs`.

use crate::common::{InProcess, enumerate_request};
use crate::service::{client, columns, messages, shard, square};
use queens::client::Client;
use queens::config::Config;
use queens::pb::{CountRequest, EnumerateRequest};
use tonic::Code;

/// Asserts that `status` is INVALID_ARGUMENT with `needle` in its message, and a BadRequest
/// whose one violation names `field`, described by the message.
fn assert_refused(status: &tonic::Status, field: &str, needle: &str) {
    use tonic_types::StatusExt;
    assert_eq!(status.code(), Code::InvalidArgument, "{needle}: {status:?}");
    assert!(
        status.message().contains(needle),
        "{:?} lacks {needle:?}",
        status.message()
    );
    let details = status.get_error_details();
    let violations = &details
        .bad_request()
        .unwrap_or_else(|| panic!("{needle}: no BadRequest in {status:?}"))
        .field_violations;
    let named: Vec<(&str, &str)> = violations
        .iter()
        .map(|v| (v.field.as_str(), v.description.as_str()))
        .collect();
    assert_eq!(named, [(field, status.message())], "{needle}");
}

/// Asserts INVALID_ARGUMENT from both RPCs (where the field exists) with `needle` in the
/// message and `field` in the BadRequest.
async fn assert_invalid(
    c: &mut Client,
    e: EnumerateRequest,
    count_too: bool,
    (field, needle): (&str, &str),
) {
    let status = messages(c, e.clone()).await.expect_err(needle);
    assert_refused(&status, field, needle);
    if count_too {
        let status = c
            .count(CountRequest {
                n: e.n,
                fixed: e.fixed,
                shard: e.shard,
            })
            .await
            .expect_err(needle);
        assert_refused(&status, field, needle);
    }
}

#[tokio::test]
async fn every_invalid_argument_names_the_field() {
    let server = InProcess::start().await;
    let mut c = client(&server).await;
    let cases: Vec<(EnumerateRequest, bool, (&str, &str))> = vec![
        (enumerate_request(0), true, ("n", "n: 0")),
        (enumerate_request(33), true, ("n", "n: 33")),
        (
            EnumerateRequest {
                n: 8,
                fixed: vec![square(8, 1)],
                ..Default::default()
            },
            true,
            ("fixed[0].row", "fixed[0]: square (row 8, column 1) is off"),
        ),
        (
            EnumerateRequest {
                n: 8,
                fixed: vec![square(1, 1), square(2, 3), square(1, 1)],
                ..Default::default()
            },
            true,
            (
                "fixed[2]",
                "fixed[2]: square (row 1, column 1) is listed twice",
            ),
        ),
        (
            EnumerateRequest {
                n: 8,
                fixed: vec![square(1, 1)],
                fundamental: true,
                ..Default::default()
            },
            false,
            ("fundamental", "fundamental: "),
        ),
        (
            EnumerateRequest {
                n: 8,
                shard: shard(4, 4),
                ..Default::default()
            },
            true,
            ("shard.index", "shard.index: 4"),
        ),
        (
            EnumerateRequest {
                n: 8,
                shard: shard(1, 1),
                ..Default::default()
            },
            true,
            ("shard.index", "shard.index: 1"),
        ),
        (
            EnumerateRequest {
                n: 8,
                shard: shard(2, 0),
                ..Default::default()
            },
            true,
            ("shard.index", "shard.index: 2"),
        ),
        (
            EnumerateRequest {
                n: 4,
                start_after: vec![0, 1, 2],
                ..Default::default()
            },
            false,
            ("start_after", "start_after: has 3 entries"),
        ),
        (
            EnumerateRequest {
                n: 4,
                start_after: vec![0, 1, 4, 0],
                ..Default::default()
            },
            false,
            ("start_after[2]", "start_after[2]: 4"),
        ),
        // A long fixed list (under the request size limit) is refused, not searched.
        (
            EnumerateRequest {
                n: 8,
                fixed: (0..2_000).map(|i| square(i % 8, i / 8)).collect(),
                ..Default::default()
            },
            true,
            ("fixed[64].column", "fixed[64]: "),
        ),
    ];
    for (request, count_too, needle) in cases {
        assert_invalid(&mut c, request, count_too, needle).await;
    }
    // The server is still fine afterwards.
    assert_eq!(columns(&mut c, enumerate_request(4)).await.len(), 2);
}

#[tokio::test]
async fn max_n_lowers_the_limit_for_both_rpcs() {
    let server = InProcess::with_config(Config {
        max_n: 10,
        ..Config::default()
    })
    .await;
    let mut c = client(&server).await;
    assert_invalid(
        &mut c,
        enumerate_request(11),
        true,
        (
            "n",
            "n: 11 is not a supported board size; n must be between 1 and 10",
        ),
    )
    .await;
    assert_eq!(columns(&mut c, enumerate_request(10)).await.len(), 724);
}
