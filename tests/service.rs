//! The gRPC contract over real sockets: a server on 127.0.0.1 port 0 in this process, a tonic
//! client. OEIS counts, the exact n = 4 stream, order, batching and the 4 MiB cap, every
//! request feature alone and combined, health and reflection. The INVALID_ARGUMENT cases live in
//! `service_invalid.rs`, which uses this file's client helpers.

use crate::common;

use common::{A000170, A002562, InProcess, enumerate_request, is_solution};
use queens::client::Client;
use queens::config::Config;
use queens::pb::{Board, CountRequest, EnumerateRequest, EnumerateResponse, Shard, Square};
use queens::solver::naive;
use tonic::Code;
use tonic::transport::Channel;

pub(crate) async fn client(server: &InProcess) -> Client {
    queens::client::connect(&server.url())
        .await
        .expect("connect")
}

/// A plain channel to the server, for the health and reflection clients.
async fn channel(server: &InProcess) -> Channel {
    Channel::from_shared(server.url())
        .expect("url")
        .connect()
        .await
        .expect("connect")
}

/// All the messages of one Enumerate stream.
pub(crate) async fn messages(
    client: &mut Client,
    request: EnumerateRequest,
) -> Result<Vec<EnumerateResponse>, tonic::Status> {
    let mut stream = client.enumerate(request).await?.into_inner();
    let mut out = Vec::new();
    while let Some(message) = stream.message().await? {
        out.push(message);
    }
    Ok(out)
}

/// The column vectors of one Enumerate stream.
pub(crate) async fn columns(client: &mut Client, request: EnumerateRequest) -> Vec<Vec<u32>> {
    let all = messages(client, request).await.expect("stream");
    all.into_iter()
        .flat_map(|m| m.boards)
        .map(|b| b.columns)
        .collect()
}

/// The square at `row`, `column`.
pub(crate) fn square(row: u32, column: u32) -> Square {
    Square { row, column }
}

/// A shard of a question: `index` of `count`.
pub(crate) fn shard(index: u32, count: u32) -> Option<Shard> {
    Some(Shard { index, count })
}

/// A board's columns as the oracle takes them.
fn bytes(b: &[u32]) -> Vec<u8> {
    b.iter().map(|&c| c as u8).collect()
}

/// Whether a board is the least of its symmetry class, by the naive oracle.
fn representative(b: &[u32]) -> bool {
    naive::is_representative(&bytes(b))
}

#[tokio::test]
async fn n4_streams_exactly_the_classic_pair() {
    let server = InProcess::start().await;
    let mut c = client(&server).await;
    let boards: Vec<Board> = messages(&mut c, enumerate_request(4))
        .await
        .unwrap()
        .into_iter()
        .flat_map(|m| m.boards)
        .collect();
    let expected = vec![
        Board {
            columns: vec![1, 3, 0, 2],
            rows: vec![".Q..".into(), "...Q".into(), "Q...".into(), "..Q.".into()],
        },
        Board {
            columns: vec![2, 0, 3, 1],
            rows: vec!["..Q.".into(), "Q...".into(), "...Q".into(), ".Q..".into()],
        },
    ];
    assert_eq!(boards, expected);
    let one = columns(&mut c, enumerate_request(1)).await;
    assert_eq!(one, vec![vec![0]]);
    let rows = messages(&mut c, enumerate_request(1)).await.unwrap()[0].boards[0]
        .rows
        .clone();
    assert_eq!(rows, vec!["Q".to_string()]);
    for n in [2, 3] {
        let all = messages(&mut c, enumerate_request(n)).await.unwrap();
        assert!(all.iter().all(|m| m.boards.is_empty()), "n={n}");
        assert!(all.len() <= 1, "at most one empty message for n={n}");
    }
}

#[tokio::test]
async fn enumerate_matches_oeis_in_order_up_to_11() {
    let server = InProcess::start().await;
    let mut c = client(&server).await;
    for n in 1..=11u32 {
        let all = columns(&mut c, enumerate_request(n)).await;
        assert_eq!(all.len() as u64, A000170[n as usize - 1], "n={n}");
        assert!(
            all.windows(2).all(|w| w[0] < w[1]),
            "strictly increasing, n={n}"
        );
        assert!(all.iter().all(|b| is_solution(b)), "valid, n={n}");
        let oracle: Vec<Vec<u8>> = all.iter().map(|b| bytes(b)).collect();
        assert_eq!(
            oracle,
            naive::solutions(n as usize),
            "the oracle's boards, n={n}"
        );
        let reps = columns(
            &mut c,
            EnumerateRequest {
                n,
                fundamental: true,
                compact: true,
                ..Default::default()
            },
        )
        .await;
        assert_eq!(
            reps.len() as u64,
            A002562[n as usize - 1],
            "fundamental n={n}"
        );
        assert!(reps.windows(2).all(|w| w[0] < w[1]));
        assert!(reps.iter().all(|b| is_solution(b) && representative(b)));
    }
}

#[tokio::test]
async fn rows_render_columns() {
    let server = InProcess::start().await;
    let mut c = client(&server).await;
    for m in messages(&mut c, enumerate_request(8)).await.unwrap() {
        for b in m.boards {
            assert_eq!(b.rows.len(), 8);
            for (r, row) in b.rows.iter().enumerate() {
                let q: Vec<usize> = row.match_indices('Q').map(|(i, _)| i).collect();
                assert_eq!(q, vec![b.columns[r] as usize]);
                assert_eq!(row.len(), 8);
            }
        }
    }
}

#[tokio::test]
async fn batches_respect_batch_size_and_the_4mib_cap() {
    let server = InProcess::start().await;
    let mut c = client(&server).await;
    let all = messages(
        &mut c,
        EnumerateRequest {
            n: 8,
            batch_size: 7,
            ..Default::default()
        },
    )
    .await
    .unwrap();
    assert!(
        all.iter()
            .all(|m| !m.boards.is_empty() && m.boards.len() <= 7)
    );
    assert_eq!(all.iter().map(|m| m.boards.len()).sum::<usize>(), 92);
    assert!(all.len() > 92 / 7);

    // n = 20 with rows: a board is about 460 bytes, so 4 MiB holds about 9,000 of them.
    use prost::Message;
    let big = messages(
        &mut c,
        EnumerateRequest {
            n: 20,
            batch_size: u32::MAX,
            limit: 20_000,
            ..Default::default()
        },
    )
    .await
    .unwrap();
    assert_eq!(big.iter().map(|m| m.boards.len()).sum::<usize>(), 20_000);
    assert!(big.len() >= 2);
    for m in &big {
        assert!(
            m.encoded_len() <= 4 * 1024 * 1024,
            "{} bytes",
            m.encoded_len()
        );
    }
}

/// One stream's boards as n-byte records, and its messages' record counts: from `packed`
/// when the request is packed (then no message may carry `boards`), else from `boards`.
async fn records(c: &mut Client, request: EnumerateRequest) -> (Vec<u8>, Vec<usize>) {
    let (n, packed) = (request.n as usize, request.packed);
    let all = messages(c, request).await.expect("stream");
    let (mut records, mut sizes) = (Vec::new(), Vec::new());
    for m in &all {
        if packed {
            assert!(m.boards.is_empty(), "a packed message carried boards");
            assert!(!m.packed.is_empty() && m.packed.len() % n == 0);
            records.extend_from_slice(&m.packed);
            sizes.push(m.packed.len() / n);
        } else {
            assert!(m.packed.is_empty(), "a boards message carried packed bytes");
            for b in &m.boards {
                assert_eq!(b.columns.len(), n);
                records.extend(b.columns.iter().map(|&c| u8::try_from(c).unwrap()));
            }
            sizes.push(m.boards.len());
        }
    }
    (records, sizes)
}

#[tokio::test]
async fn packed_streams_equal_board_streams_record_for_record() {
    let server = InProcess::start().await;
    let mut c = client(&server).await;
    let cases = vec![
        enumerate_request(1),
        enumerate_request(4),
        enumerate_request(10),
        // Big enough for the parallel producer.
        enumerate_request(12),
        EnumerateRequest {
            fixed: vec![square(3, 4), square(0, 1)],
            ..enumerate_request(10)
        },
        EnumerateRequest {
            fundamental: true,
            ..enumerate_request(11)
        },
        EnumerateRequest {
            shard: shard(2, 5),
            ..enumerate_request(10)
        },
        EnumerateRequest {
            start_after: vec![4, 0, 9, 9, 9, 9, 9, 9, 9, 9],
            ..enumerate_request(10)
        },
        EnumerateRequest {
            limit: 77,
            batch_size: 10,
            ..enumerate_request(10)
        },
        EnumerateRequest {
            fundamental: true,
            shard: shard(1, 3),
            start_after: vec![1, 3, 5, 0, 0, 0, 0, 0, 0, 0, 0],
            limit: 50,
            batch_size: 7,
            compact: true,
            ..enumerate_request(11)
        },
        EnumerateRequest {
            fixed: vec![square(2, 2)],
            shard: shard(1, 3),
            start_after: vec![1, 3, 5, 0, 0, 0, 0, 0, 0, 0, 0],
            limit: 50,
            batch_size: 7,
            ..enumerate_request(11)
        },
        // Attacking fixed queens: nothing, in both forms.
        EnumerateRequest {
            fixed: vec![square(0, 0), square(1, 1)],
            ..enumerate_request(8)
        },
    ];
    for request in cases {
        let (want, want_sizes) = records(&mut c, request.clone()).await;
        let packed = EnumerateRequest {
            packed: true,
            ..request.clone()
        };
        let (got, sizes) = records(&mut c, packed).await;
        assert!(got == want, "{request:?}: packed records differ");
        if request.batch_size > 0 {
            assert!(sizes.iter().all(|&s| s <= request.batch_size as usize));
            // Same batch size, same cut into messages.
            assert_eq!(sizes, want_sizes, "{request:?}");
        }
    }
}

#[tokio::test]
async fn packed_messages_stay_under_4_mib() {
    use prost::Message;
    // A flush interval longer than the test: the messages after the first (which goes at
    // once) wait until they are full, so they are exactly at the cap.
    let server = InProcess::with_config(Config {
        flush_interval: std::time::Duration::from_secs(600),
        ..Config::default()
    })
    .await;
    let mut c = client(&server).await;
    // The 4 MiB cap at n = 20: 209,714 records a message (one more and its key and length
    // would pass 4 MiB). At n = 32 the lexicographically first boards come a few thousand a
    // second, so a full message there would take about 20 s to search; the unit tests check
    // that message (131,071 records) and the encoded length for every n. Packed and Board
    // records were compared above; here the records are checked to be solutions in strictly
    // increasing order.
    let (n, limit, most) = (20, 450_000, 209_714);
    let request = EnumerateRequest {
        n,
        limit,
        batch_size: u32::MAX,
        packed: true,
        ..Default::default()
    };
    let width = n as usize;
    let all = messages(&mut c, request).await.unwrap();
    assert!(all.len() >= 3, "{} messages", all.len());
    for m in &all {
        assert!(
            m.encoded_len() <= 4 * 1024 * 1024,
            "{} bytes",
            m.encoded_len()
        );
        assert!(m.boards.is_empty() && m.packed.len() % width == 0);
        assert!(m.packed.len() <= most * width);
    }
    // The first boards go out at once; the messages after them wait until they are full.
    assert_eq!(all[1].packed.len(), most * width, "a full message");
    let got: Vec<u8> = all.iter().flat_map(|m| m.packed.iter().copied()).collect();
    assert_eq!(got.len(), limit as usize * width);
    assert!(got.chunks_exact(width).all(naive::is_solution));
    assert!(
        got.chunks_exact(width)
            .zip(got.chunks_exact(width).skip(1))
            .all(|(a, b)| a < b),
        "records out of order"
    );
}

#[tokio::test]
async fn every_feature_agrees_with_filtering_the_full_stream() {
    let server = InProcess::start().await;
    let mut c = client(&server).await;
    let n = 9;
    let all = columns(&mut c, enumerate_request(n)).await;
    let reps: Vec<Vec<u32>> = all.iter().filter(|b| representative(b)).cloned().collect();

    // fixed queens: the boards that contain them, in order.
    let fixed = vec![
        Square {
            row: 4,
            column: all[200][4],
        },
        Square {
            row: 0,
            column: all[200][0],
        },
    ];
    let expected: Vec<Vec<u32>> = all
        .iter()
        .filter(|b| fixed.iter().all(|q| b[q.row as usize] == q.column))
        .cloned()
        .collect();
    let got = columns(
        &mut c,
        EnumerateRequest {
            n,
            fixed: fixed.clone(),
            ..Default::default()
        },
    )
    .await;
    assert!(!expected.is_empty());
    assert_eq!(got, expected);
    let counted = c
        .count(CountRequest {
            n,
            fixed: fixed.clone(),
            shard: None,
        })
        .await
        .unwrap()
        .into_inner();
    assert_eq!(counted.solutions, expected.len() as u64);
    assert_eq!(counted.fundamental, None);

    // start_after + limit: a page of the whole.
    let after = all[100].clone();
    let page = columns(
        &mut c,
        EnumerateRequest {
            n,
            start_after: after.clone(),
            limit: 17,
            compact: true,
            ..Default::default()
        },
    )
    .await;
    assert_eq!(page, all[101..118].to_vec());
    // start_after need not be a solution.
    let page = columns(
        &mut c,
        EnumerateRequest {
            n,
            start_after: vec![3, 3, 3, 3, 3, 3, 3, 3, 3],
            ..Default::default()
        },
    )
    .await;
    let rest: Vec<_> = all
        .iter()
        .filter(|b| b.as_slice() > [3u32; 9].as_slice())
        .cloned()
        .collect();
    assert_eq!(page, rest);

    // Everything at once: fundamental + shard + paging + compact + batch size.
    let parts = 5;
    let mut union = Vec::new();
    for index in 0..parts {
        let shard = Some(Shard {
            index,
            count: parts,
        });
        let request = EnumerateRequest {
            n,
            fundamental: true,
            shard,
            compact: true,
            batch_size: 3,
            ..Default::default()
        };
        let part = columns(&mut c, request.clone()).await;
        assert!(part.windows(2).all(|w| w[0] < w[1]));
        // Page through the part 4 boards at a time: the pages are the part.
        let mut paged: Vec<Vec<u32>> = Vec::new();
        loop {
            let page = columns(
                &mut c,
                EnumerateRequest {
                    limit: 4,
                    start_after: paged.last().cloned().unwrap_or_default(),
                    ..request.clone()
                },
            )
            .await;
            if page.is_empty() {
                break;
            }
            paged.extend(page);
        }
        assert_eq!(paged, part, "part {index}");
        union.extend(part);
    }
    union.sort();
    assert_eq!(union, reps);

    // Count's shards add up, and fixed queens combine with shards in Enumerate.
    let mut solutions = 0;
    let mut fundamental = 0;
    let mut fixed_union = Vec::new();
    for index in 0..3 {
        let shard = Some(Shard { index, count: 3 });
        let r = c
            .count(CountRequest {
                n,
                fixed: vec![],
                shard,
            })
            .await
            .unwrap()
            .into_inner();
        solutions += r.solutions;
        fundamental += r.fundamental.unwrap();
        fixed_union.extend(
            columns(
                &mut c,
                EnumerateRequest {
                    n,
                    fixed: fixed[..1].to_vec(),
                    shard,
                    ..Default::default()
                },
            )
            .await,
        );
    }
    assert_eq!(solutions, all.len() as u64);
    assert_eq!(fundamental, reps.len() as u64);
    fixed_union.sort();
    let with_first: Vec<_> = all
        .iter()
        .filter(|b| b[fixed[0].row as usize] == fixed[0].column)
        .cloned()
        .collect();
    assert_eq!(fixed_union, with_first);
}

#[tokio::test]
async fn attacking_fixed_queens_give_nothing_with_ok() {
    let server = InProcess::start().await;
    let mut c = client(&server).await;
    let fixed = vec![Square { row: 2, column: 1 }, Square { row: 2, column: 5 }];
    let got = columns(
        &mut c,
        EnumerateRequest {
            n: 8,
            fixed: fixed.clone(),
            ..Default::default()
        },
    )
    .await;
    assert!(got.is_empty());
    let r = c
        .count(CountRequest {
            n: 8,
            fixed,
            shard: None,
        })
        .await
        .unwrap()
        .into_inner();
    assert_eq!(r.solutions, 0);
}

#[tokio::test]
async fn health_reports_serving_and_not_found() {
    use tonic_health::pb::HealthCheckRequest;
    use tonic_health::pb::health_check_response::ServingStatus;
    use tonic_health::pb::health_client::HealthClient;
    let server = InProcess::start().await;
    let mut h = HealthClient::new(channel(&server).await);
    for service in ["", "queens.v1.Queens"] {
        let r = h
            .check(HealthCheckRequest {
                service: service.into(),
            })
            .await
            .unwrap()
            .into_inner();
        assert_eq!(r.status, ServingStatus::Serving as i32, "{service:?}");
    }
    let status = h
        .check(HealthCheckRequest {
            service: "nope.Nope".into(),
        })
        .await
        .unwrap_err();
    assert_eq!(status.code(), Code::NotFound);
}

#[tokio::test]
async fn reflection_lists_the_service_in_both_versions() {
    use tokio_stream::StreamExt;
    use tonic_reflection::pb::v1 as r1;
    use tonic_reflection::pb::v1alpha as r0;
    let server = InProcess::start().await;

    // The two versions' types differ only by module: the first reply, as Debug text.
    macro_rules! first_reply {
        ($version:ident, $request:expr) => {{
            let mut client = $version::server_reflection_client::ServerReflectionClient::new(
                channel(&server).await,
            );
            let request = $version::ServerReflectionRequest {
                host: String::new(),
                message_request: Some($request),
            };
            let mut replies = client
                .server_reflection_info(tokio_stream::once(request))
                .await
                .unwrap()
                .into_inner();
            format!("{:?}", replies.next().await.unwrap().unwrap())
        }};
    }
    let text = first_reply!(
        r1,
        r1::server_reflection_request::MessageRequest::ListServices(String::new())
    );
    assert!(text.contains("queens.v1.Queens"), "{text}");
    let text = first_reply!(
        r0,
        r0::server_reflection_request::MessageRequest::FileContainingSymbol(
            "queens.v1.Queens".into(),
        )
    );
    assert!(text.contains("FileDescriptorResponse"), "{text}");
}

#[tokio::test]
async fn boards_arrive_before_the_search_ends() {
    // n = 32 has astronomically many solutions: the first message must come at once.
    let server = InProcess::start().await;
    let mut c = client(&server).await;
    let mut stream = c
        .enumerate(EnumerateRequest {
            n: 32,
            compact: true,
            ..Default::default()
        })
        .await
        .unwrap()
        .into_inner();
    let first = tokio::time::timeout(std::time::Duration::from_secs(20), stream.message())
        .await
        .expect("a first message")
        .unwrap()
        .unwrap();
    assert!(!first.boards.is_empty());
    assert!(first.boards.iter().all(|b| is_solution(&b.columns)));
    // Dropping the stream here ends the call; the server's producer notices and stops.
}

#[tokio::test]
async fn count_progress_ends_with_the_exact_result() {
    let server = InProcess::start().await;
    let mut c = client(&server).await;
    for n in 1..=16u32 {
        let mut updates = c
            .count_progress(common::count_request(n))
            .await
            .unwrap()
            .into_inner();
        let mut seen = Vec::new();
        while let Some(u) = updates.message().await.unwrap() {
            seen.push(u);
        }
        let last = seen.last().expect("a final update");
        assert!(last.done, "n={n}");
        assert!(seen[..seen.len() - 1].iter().all(|u| !u.done));
        assert_eq!(last.solutions, A000170[n as usize - 1], "n={n}");
        assert_eq!(last.fundamental, Some(A002562[n as usize - 1]), "n={n}");
        assert_eq!(last.subproblems_done, last.subproblems_total);
        assert!(
            seen.windows(2)
                .all(|w| w[0].subproblems_done <= w[1].subproblems_done)
        );
        // Unary Count agrees.
        let r = c
            .count(common::count_request(n))
            .await
            .unwrap()
            .into_inner();
        assert_eq!(
            (r.solutions, r.fundamental),
            (last.solutions, last.fundamental)
        );
    }
    let mut updates = c
        .count_progress(CountRequest {
            n: 9,
            fixed: vec![Square { row: 0, column: 0 }],
            shard: None,
        })
        .await
        .unwrap()
        .into_inner();
    let mut last = None;
    while let Some(u) = updates.message().await.unwrap() {
        last = Some(u);
    }
    let last = last.unwrap();
    assert!(last.done);
    assert_eq!(last.fundamental, None);
    // The shards of n = 16 are counted by joining halves: each answers turn_fixed instead of
    // fundamental, in Count and CountProgress alike, and the parts make the whole's classes.
    let (mut solutions, mut turn_fixed) = (0, 0);
    for index in 0..3 {
        let request = CountRequest {
            n: 16,
            fixed: vec![],
            shard: Some(Shard { index, count: 3 }),
        };
        let r = c.count(request.clone()).await.unwrap().into_inner();
        assert_eq!(r.fundamental, None, "shard {index}");
        let mut updates = c.count_progress(request).await.unwrap().into_inner();
        let mut seen = Vec::new();
        while let Some(u) = updates.message().await.unwrap() {
            seen.push(u);
        }
        assert!(
            seen.iter()
                .all(|u| u.fundamental.is_none() && u.turn_fixed.is_some())
        );
        let last = seen.last().expect("a final update");
        assert_eq!(
            (last.solutions, last.turn_fixed),
            (r.solutions, r.turn_fixed)
        );
        solutions += r.solutions;
        turn_fixed += r.turn_fixed.expect("a shard of the join");
    }
    assert_eq!(solutions, A000170[15]);
    assert_eq!((solutions + turn_fixed) / 8, A002562[15]);
    let status = c
        .count_progress(common::count_request(0))
        .await
        .unwrap_err();
    assert_eq!(status.code(), Code::InvalidArgument);
}
