//! The Arrow Flight service against a real server over loopback, read with arrow-flight's own
//! client: a question split into parts (each in lexicographic order, together the whole,
//! once), record batches equal to the packed Enumerate stream, `total_records` from Count
//! up to n = 14 (when that Count is admitted) and -1 above, answered at once, the schema, the
//! examples of ListFlights, every refusal naming its field (in its message and its
//! BadRequest), the methods a read-only service does not offer, a stream left early giving
//! its search slot back, the largest batches under the 4 MiB cap, DoGet's call log line (n,
//! boards), bearer tokens, and batches compressed with zstd or LZ4 when the ticket (or the
//! command, through its endpoints' tickets) asks: the same records in fewer bytes. The data tools (pyarrow, polars, DuckDB) are the system suite's.

use crate::common::{self, InProcess};

use arrow_array::{Array, FixedSizeListArray, RecordBatch, UInt8Array};
use arrow_flight::error::FlightError;
use arrow_flight::{Action, FlightClient, FlightDescriptor, FlightInfo, Ticket};
use queens::config::{Config, Tokens};
use std::time::{Duration, Instant};
use tokio_stream::StreamExt;

/// A Flight client of the server at `addr`.
async fn flight(addr: std::net::SocketAddr) -> FlightClient {
    let channel = tonic::transport::Endpoint::from_shared(format!("http://{addr}"))
        .expect("endpoint")
        .connect()
        .await
        .expect("connect");
    FlightClient::new(channel)
}

fn command(json: &str) -> FlightDescriptor {
    FlightDescriptor::new_cmd(json.as_bytes().to_vec())
}

/// The boards of a batch's one column, as n-byte records.
fn records(batch: &RecordBatch) -> Vec<u8> {
    assert_eq!(batch.num_columns(), 1);
    let boards = batch
        .column(0)
        .as_any()
        .downcast_ref::<FixedSizeListArray>()
        .expect("a FixedSizeList column");
    assert_eq!(boards.null_count(), 0);
    let values = boards.values();
    let values = values
        .as_any()
        .downcast_ref::<UInt8Array>()
        .expect("UInt8 items");
    let start = boards.offset() * boards.value_length() as usize;
    values.values()[start..start + boards.len() * boards.value_length() as usize].to_vec()
}

/// Every record a ticket streams, and its batches' sizes.
async fn fetch(client: &mut FlightClient, ticket: Ticket) -> (Vec<u8>, Vec<usize>) {
    let mut stream = client.do_get(ticket).await.expect("DoGet opens");
    let (mut all, mut sizes) = (Vec::new(), Vec::new());
    while let Some(batch) = stream.next().await {
        let batch = batch.expect("a record batch");
        sizes.push(batch.num_rows());
        all.extend(records(&batch));
    }
    (all, sizes)
}

/// The packed records of Enumerate for `request`.
async fn enumerate_packed(
    addr: std::net::SocketAddr,
    mut request: queens::pb::EnumerateRequest,
) -> Vec<u8> {
    let mut client = queens::client::connect(&format!("http://{addr}"))
        .await
        .expect("connect");
    request.packed = true;
    let mut stream = client
        .enumerate(request)
        .await
        .expect("Enumerate")
        .into_inner();
    let mut all = Vec::new();
    while let Some(message) = stream.message().await.expect("a message") {
        all.extend(message.packed);
    }
    all
}

fn status(error: FlightError) -> tonic::Status {
    match error {
        FlightError::Tonic(status) => *status,
        other => panic!("expected a status, got {other:?}"),
    }
}

fn sorted_records(all: &[u8], n: usize) -> bool {
    all.chunks(n).zip(all.chunks(n).skip(1)).all(|(a, b)| a < b)
}

#[tokio::test]
async fn the_parts_of_a_question_are_the_whole_once_each_in_order() {
    let server = InProcess::start().await;
    let mut client = flight(server.addr).await;
    let info: FlightInfo = client
        .get_flight_info(command(r#"{"n": 10, "parts": 4}"#))
        .await
        .expect("GetFlightInfo");
    assert_eq!(info.total_records, 724);
    assert_eq!(info.endpoint.len(), 4);
    assert!(
        !info.ordered,
        "round-robin parts do not concatenate in order"
    );
    let mut union = Vec::new();
    for endpoint in &info.endpoint {
        assert!(
            endpoint.location.is_empty(),
            "no --advertise: fetch from this server"
        );
        let (part, _) = fetch(&mut client, endpoint.ticket.clone().expect("a ticket")).await;
        assert!(
            sorted_records(&part, 10),
            "each part in lexicographic order"
        );
        assert!(!part.is_empty());
        union.extend(part);
    }
    let mut union: Vec<&[u8]> = union.chunks(10).collect();
    union.sort();
    let whole = enumerate_packed(server.addr, common::enumerate_request(10)).await;
    assert_eq!(union.concat(), whole, "the parts are the whole, once");
}

#[tokio::test]
async fn record_batches_equal_the_packed_stream_and_totals_come_from_count() {
    let server = InProcess::start().await;
    let mut client = flight(server.addr).await;
    let info = client
        .get_flight_info(command(r#"{"n": 12}"#))
        .await
        .expect("info");
    assert_eq!(info.total_records, common::A000170[11] as i64);
    assert!(info.ordered);
    let schema = info.clone().try_decode_schema().expect("a schema");
    assert_eq!(schema.field(0).name(), "board");
    assert!(matches!(
        schema.field(0).data_type(),
        arrow_schema::DataType::FixedSizeList(_, 12)
    ));
    let ticket = info.endpoint[0].ticket.clone().expect("ticket");
    let (all, sizes) = fetch(&mut client, ticket).await;
    let whole = enumerate_packed(server.addr, common::enumerate_request(12)).await;
    assert_eq!(all, whole, "Flight's records are Enumerate's, in order");
    assert!(
        sizes.iter().all(|&s| s <= (1 << 20) / 12),
        "batches within 1 MiB: {sizes:?}"
    );

    let classes = client
        .get_flight_info(command(r#"{"n": 12, "fundamental": true}"#))
        .await
        .expect("info");
    assert_eq!(classes.total_records, common::A002562[11] as i64);
    let fixed = r#"{"n": 12, "fixed": [[0, 0]], "batch_size": 7, "limit": 30}"#;
    let info = client.get_flight_info(command(fixed)).await.expect("info");
    assert_eq!(info.total_records, 30);
    let (all, sizes) = fetch(&mut client, info.endpoint[0].ticket.clone().unwrap()).await;
    assert_eq!(all.len(), 30 * 12);
    assert!(all.chunks(12).all(|board| board[0] == 0));
    assert!(
        sizes.iter().all(|&s| s <= 7),
        "batch_size honoured: {sizes:?}"
    );
    let resumed = r#"{"n": 12, "start_after": [5, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]}"#;
    let info = client
        .get_flight_info(command(resumed))
        .await
        .expect("info");
    assert_eq!(info.total_records, -1, "unknown after start_after");
    // Count's part 1 of 4 holds other boards than Enumerate's (3,348 against 3,553 at n = 12):
    // only the whole's total is Count's.
    let part = r#"{"n": 12, "shard": {"index": 1, "count": 4}}"#;
    let info_part = client.get_flight_info(command(part)).await.expect("info");
    assert_eq!(
        info_part.total_records, -1,
        "unknown for one part of a split"
    );
    let (all, _) = fetch(&mut client, info.endpoint[0].ticket.clone().unwrap()).await;
    assert!(all.chunks(12).all(|board| board[0] >= 5) && !all.is_empty());

    let schema = client
        .get_schema(command(r#"{"n": 7}"#))
        .await
        .expect("schema");
    let arrow_schema::DataType::FixedSizeList(item, 7) = schema.field(0).data_type() else {
        panic!("FixedSizeList[7]: {schema:?}");
    };
    assert_eq!(item.data_type(), &arrow_schema::DataType::UInt8);
    assert!(!item.is_nullable() && !schema.field(0).is_nullable());
    // An empty result is a schema and no rows.
    let (none, _) = fetch(&mut client, Ticket::new(r#"{"n": 3}"#)).await;
    assert!(none.is_empty());
}

/// The bytes of the IPC bodies a ticket streams (what the wire carries, less framing).
async fn body_bytes(client: &mut FlightClient, ticket: &str) -> usize {
    let mut stream = client
        .inner_mut()
        .do_get(Ticket::new(ticket.to_string()))
        .await
        .expect("DoGet opens")
        .into_inner();
    let mut bytes = 0;
    while let Some(data) = stream.next().await {
        bytes += data.expect("flight data").data_body.len();
    }
    bytes
}

#[tokio::test]
async fn compressed_batches_are_the_same_records_in_fewer_bytes() {
    let server = InProcess::start().await;
    let mut client = flight(server.addr).await;
    let (plain, _) = fetch(&mut client, Ticket::new(r#"{"n": 12}"#)).await;
    assert_eq!(plain.len(), 14_200 * 12);
    let plain_bytes = body_bytes(&mut client, r#"{"n": 12}"#).await;
    assert!(plain_bytes >= plain.len(), "uncompressed: {plain_bytes}");
    // At most this share of the plain bytes: LZ4 compresses these records less (about 0.68
    // of them at n = 12), zstd to under a half.
    for (codec, most) in [("zstd", 0.5), ("lz4", 0.8)] {
        let ticket = format!(r#"{{"n": 12, "compression": "{codec}"}}"#);
        let (all, _) = fetch(&mut client, Ticket::new(ticket.clone())).await;
        assert!(all == plain, "{codec}: the records of the plain stream");
        let bytes = body_bytes(&mut client, &ticket).await;
        let share = bytes as f64 / plain_bytes as f64;
        assert!(share < most, "{codec}: {bytes} of {plain_bytes}");
        // A command's compression goes on into each of its endpoints' tickets.
        let parts = format!(r#"{{"n": 12, "compression": "{codec}", "parts": 2}}"#);
        let info = client.get_flight_info(command(&parts)).await.expect("info");
        let mut union = Vec::new();
        for endpoint in &info.endpoint {
            let ticket = endpoint.ticket.clone().expect("a ticket");
            let text = String::from_utf8(ticket.ticket.to_vec()).expect("JSON");
            assert!(
                text.contains(&format!(r#""compression":"{codec}""#)),
                "{text}"
            );
            union.extend(fetch(&mut client, ticket).await.0);
        }
        let mut union: Vec<&[u8]> = union.chunks(12).collect();
        union.sort();
        assert!(union.concat() == plain, "{codec}: the parts are the whole");
    }
    let none = r#"{"n": 12, "compression": "none"}"#;
    assert_eq!(body_bytes(&mut client, none).await, plain_bytes);
    let brotli = Ticket::new(r#"{"n": 12, "compression": "brotli"}"#);
    let Err(refused) = client.do_get(brotli).await else {
        panic!("an unknown codec is refused");
    };
    let refused = status(refused);
    assert_eq!(refused.code(), tonic::Code::InvalidArgument);
    assert_eq!(bad_field(&refused), "compression", "{refused:?}");
}

#[tokio::test]
async fn the_examples_and_the_methods_not_offered() {
    let server = InProcess::start().await;
    let mut client = flight(server.addr).await;
    let examples: Vec<FlightInfo> = client
        .list_flights("")
        .await
        .expect("ListFlights")
        .map(|info| info.expect("an example"))
        .collect()
        .await;
    assert_eq!(examples.len(), 2);
    let (all, _) = fetch(&mut client, examples[0].endpoint[0].ticket.clone().unwrap()).await;
    assert_eq!(all.len(), 92 * 8);
    let (all, _) = fetch(&mut client, examples[1].endpoint[0].ticket.clone().unwrap()).await;
    assert_eq!(all.len(), 12 * 8);
    let actions: Vec<_> = client
        .list_actions()
        .await
        .expect("ListActions")
        .collect()
        .await;
    assert!(actions.is_empty());
    let refused = status(
        client
            .do_action(Action::new("drop", ""))
            .await
            .err()
            .unwrap(),
    );
    assert_eq!(refused.code(), tonic::Code::Unimplemented);
    assert!(refused.message().starts_with("DoAction:"), "{refused:?}");
    let refused = status(client.handshake("").await.unwrap_err());
    assert_eq!(refused.code(), tonic::Code::Unimplemented);
    let put = tokio_stream::iter(Vec::<Result<arrow_flight::FlightData, FlightError>>::new());
    let refused = match client.do_put(put).await {
        Ok(mut answers) => status(answers.next().await.expect("an answer").unwrap_err()),
        Err(error) => status(error),
    };
    assert_eq!(refused.code(), tonic::Code::Unimplemented);
    assert!(refused.message().contains("read-only"), "{refused:?}");
}

/// The field an INVALID_ARGUMENT's BadRequest names (its one violation, described by the
/// status's message).
fn bad_field(refused: &tonic::Status) -> String {
    use tonic_types::StatusExt;
    assert_eq!(refused.code(), tonic::Code::InvalidArgument, "{refused:?}");
    let details = refused.get_error_details();
    let violations = &details
        .bad_request()
        .unwrap_or_else(|| panic!("no BadRequest: {refused:?}"))
        .field_violations;
    assert_eq!(violations.len(), 1, "{refused:?}");
    assert_eq!(violations[0].description, refused.message());
    violations[0].field.clone()
}

/// Each refusal's message starts with the field at fault, and its BadRequest names the field
/// (exactly, down to the coordinate of a square).
#[tokio::test]
async fn refusals_name_the_field() {
    let server = InProcess::start().await;
    let mut client = flight(server.addr).await;
    for (json, field, starts) in [
        (r#"{"n": 0}"#, "n", "n"),
        (r#"{"n": 40}"#, "n", "n"),
        (r#"{"n": 8, "fixed": [[9, 0]]}"#, "fixed[0].row", "fixed[0]"),
        (
            r#"{"n": 8, "fixed": [[1, true]]}"#,
            "fixed[0].column",
            "fixed[0].column",
        ),
        (
            r#"{"n": 8, "start_after": [1]}"#,
            "start_after",
            "start_after",
        ),
        (
            r#"{"n": 8, "shard": {"index": 3, "count": 2}}"#,
            "shard.index",
            "shard.index",
        ),
        (r#"{"n": 8, "limt": 3}"#, "limt", "limt"),
        (r#"{"n": 8, "parts": 2, "limit": 5}"#, "parts", "parts"),
        (
            r#"{"n": 8, "parts": 2, "shard": {"index": 0, "count": 2}}"#,
            "parts",
            "parts",
        ),
        ("n = 8", "command", "command"),
    ] {
        let refused = status(client.get_flight_info(command(json)).await.unwrap_err());
        assert_eq!(bad_field(&refused), field, "{json}");
        assert!(
            refused.message().starts_with(&format!("{starts}: ")),
            "{json}: {refused:?}"
        );
        if json.starts_with('{') && !json.contains("parts") {
            let refused = status(
                client
                    .do_get(Ticket::new(json.to_string()))
                    .await
                    .err()
                    .unwrap(),
            );
            assert_eq!(bad_field(&refused), field, "DoGet {json}");
            assert!(
                refused.message().starts_with(&format!("{starts}: ")),
                "DoGet {json}: {refused:?}"
            );
        }
    }
    let path = FlightDescriptor::new_path(vec!["boards".into()]);
    let refused = status(client.get_flight_info(path).await.unwrap_err());
    assert_eq!(bad_field(&refused), "descriptor");
    assert!(refused.message().starts_with("descriptor:"), "{refused:?}");
    let refused = status(
        client
            .do_get(Ticket::new(r#"{"n": 8, "parts": 2}"#))
            .await
            .err()
            .unwrap(),
    );
    assert_eq!(bad_field(&refused), "parts");
    assert!(refused.message().starts_with("parts:"), "{refused:?}");
    let refused = status(client.do_get(Ticket::new("[8]")).await.err().unwrap());
    assert_eq!(bad_field(&refused), "ticket");
}

/// A server of one search slot, taken by a DoGet of n = 18 that has sent its first batch:
/// the server, the Flight client, the open stream and a Queens client whose Count of n = 13
/// (a long search) was just refused for want of a slot.
async fn slot_held_by_a_stream() -> (
    InProcess,
    FlightClient,
    arrow_flight::decode::FlightRecordBatchStream,
    queens::client::Client,
) {
    let server = InProcess::with_config(Config {
        max_searches: 1,
        max_searches_per_client: Some(1),
        ..Config::default()
    })
    .await;
    let mut client = flight(server.addr).await;
    let mut stream = client
        .do_get(Ticket::new(r#"{"n": 18}"#))
        .await
        .expect("DoGet");
    let first = stream.next().await.expect("a batch").expect("a batch");
    assert!(first.num_rows() > 0);
    let mut queens = queens::client::connect(&server.url())
        .await
        .expect("connect");
    let busy = queens
        .count(common::count_request(common::LONG_N))
        .await
        .unwrap_err();
    assert_eq!(
        busy.code(),
        tonic::Code::ResourceExhausted,
        "the stream holds the slot"
    );
    (server, client, stream, queens)
}

#[tokio::test]
async fn a_stream_left_early_gives_its_search_slot_back() {
    let (_server, _client, stream, mut queens) = slot_held_by_a_stream().await;
    drop(stream);
    let until = Instant::now() + Duration::from_secs(5);
    let why = "the slot was not given back";
    common::count_by(&mut queens, common::LONG_N, until, why).await;
}

/// GetFlightInfo of the command `json`, answered within 10 s.
async fn info(client: &mut FlightClient, json: &str) -> FlightInfo {
    tokio::time::timeout(
        Duration::from_secs(10),
        client.get_flight_info(command(json)),
    )
    .await
    .expect("GetFlightInfo answers within 10 s")
    .expect("GetFlightInfo")
}

/// GetFlightInfo counts no search: on a server of one search slot, taken by a DoGet, it
/// answers n = 20 (whose Count takes 36 s on 2 cores) with -1, one endpoint per part and the
/// schema, and n = 13 with -1 too (a long search: no slot to spare), while a small board's
/// total (n = 8, counted beside the slots) comes at once; with the slot free again, the total
/// of n = 13 and 14, and still -1 above n = 14.
#[tokio::test]
async fn flight_info_takes_no_search_slot_and_counts_only_small_boards() {
    let (_server, mut client, stream, mut queens) = slot_held_by_a_stream().await;
    let big = info(&mut client, r#"{"n": 20}"#).await;
    assert_eq!(big.total_records, -1);
    assert_eq!(big.endpoint.len(), 1);
    let schema = big.try_decode_schema().expect("a schema");
    assert!(matches!(
        schema.field(0).data_type(),
        arrow_schema::DataType::FixedSizeList(_, 20)
    ));
    let parts = info(&mut client, r#"{"n": 20, "parts": 4}"#).await;
    assert_eq!((parts.total_records, parts.endpoint.len()), (-1, 4));
    assert_eq!(
        info(&mut client, r#"{"n": 13}"#).await.total_records,
        -1,
        "no slot to spare"
    );
    assert_eq!(
        info(&mut client, r#"{"n": 8}"#).await.total_records,
        92,
        "a small count needs no slot"
    );
    drop(stream);
    let until = Instant::now() + Duration::from_secs(5);
    let why = "the slot was not given back";
    common::count_by(&mut queens, common::LONG_N, until, why).await;
    assert_eq!(
        info(&mut client, r#"{"n": 13}"#).await.total_records,
        common::A000170[12] as i64
    );
    assert_eq!(
        info(&mut client, r#"{"n": 14}"#).await.total_records,
        common::A000170[13] as i64
    );
    assert_eq!(info(&mut client, r#"{"n": 15}"#).await.total_records, -1);
    assert_eq!(
        info(&mut client, r#"{"n": 20, "limit": 10}"#)
            .await
            .total_records,
        -1
    );
    assert_eq!(
        info(&mut client, r#"{"n": 14, "limit": 10}"#)
            .await
            .total_records,
        10
    );
}

#[tokio::test]
async fn the_largest_batches_stay_under_4_mib_and_calls_are_logged() {
    // Batches are cut by size only (no flush within the test), so one of them is full.
    let server = InProcess::with_config(Config {
        flush_interval: Duration::from_secs(600),
        ..Config::default()
    })
    .await;
    let mut client = flight(server.addr).await;
    // tonic's client, like every mainstream one, refuses messages over 4 MiB.
    let ticket = r#"{"n": 20, "batch_size": 4294967295, "limit": 250000}"#;
    let (all, sizes) = fetch(&mut client, Ticket::new(ticket)).await;
    assert_eq!(all.len(), 250_000 * 20);
    assert!(sorted_records(&all, 20));
    let most = (queens::config::MAX_MESSAGE_BYTES - 4096) / 20;
    // (The first message goes out early, with what is ready.)
    assert_eq!(
        sizes.iter().max(),
        Some(&most),
        "a full batch, none bigger: {sizes:?}"
    );

    let server = common::ServerProcess::start(&["--log-format", "json"]);
    let mut client = flight(server.addr).await;
    let (all, _) = fetch(&mut client, Ticket::new(r#"{"n": 20, "limit": 250000}"#)).await;
    assert_eq!(all.len(), 250_000 * 20);
    let line = server.next_log("call");
    assert_eq!(
        line["method"], "/arrow.flight.protocol.FlightService/DoGet",
        "{line}"
    );
    assert_eq!(line["code"], "Ok", "{line}");
    assert_eq!(line["n"], 20, "{line}");
    assert_eq!(line["boards"], 250_000, "{line}");
}

#[tokio::test]
async fn flight_calls_need_the_bearer_token() {
    let server = InProcess::with_config(Config {
        tokens: Some(Tokens::parse("reader flight-token-0123456789\n").expect("tokens")),
        ..Config::default()
    })
    .await;
    let mut client = flight(server.addr).await;
    let refused = status(
        client
            .get_flight_info(command(r#"{"n": 8}"#))
            .await
            .unwrap_err(),
    );
    assert_eq!(refused.code(), tonic::Code::Unauthenticated);
    let refused = status(
        client
            .do_get(Ticket::new(r#"{"n": 8}"#))
            .await
            .err()
            .unwrap(),
    );
    assert_eq!(refused.code(), tonic::Code::Unauthenticated);
    client
        .add_header("authorization", "Bearer flight-token-0123456789")
        .expect("header");
    let info = client
        .get_flight_info(command(r#"{"n": 8}"#))
        .await
        .expect("info");
    assert_eq!(info.total_records, 92);
    let (all, _) = fetch(&mut client, Ticket::new(r#"{"n": 8}"#)).await;
    assert_eq!(all.len(), 92 * 8);
}
