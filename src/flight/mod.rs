//! The Arrow Flight service (`arrow.flight.protocol.FlightService`), read-only, served beside
//! Queens on the same port: an Enumerate question as a JSON command, its schema, its parts as
//! endpoints, and each part streamed as Arrow record batches.
//!
//! Every call goes through the Queens service itself (`DoGet` through a packed Enumerate,
//! `GetFlightInfo`'s total through Count when it counts one), so validation, search slots,
//! deadlines, cancellation, shutdown and the call's log note are exactly Enumerate's and
//! Count's; the server's gate (tokens, requests in flight, metrics, traces) sees Flight calls
//! like any other. `GetFlightInfo` is a metadata call and answers at once: it counts a total
//! only for a board small enough to count in milliseconds ([`COUNTED_TOTAL_N`]) and only when
//! the count is admitted (a small board's count takes a small search's place, which may wait
//! briefly; n = 13 and 14 need a free search slot), and says -1 (unknown) otherwise. `DoGet`
//! turns each packed message into one record batch without copying its records, its buffers
//! compressed (zstd or LZ4) when the ticket asks.
//!
//! # Layout
//! - `command.rs`: the JSON of commands and tickets.
//! - `batches.rs`: the schema and the record batches.
//! - here: the service, its answers and its refusals.
//!
//! Not here: the searches and the stream pipeline (`crate::service`, `crate::stream`).

mod batches;
mod command;

pub use self::batches::{COLUMN, schema};
pub use self::command::{Command, CommandError, Compression, MAX_PARTS, Problem};

use crate::pb::server::queens_server::Queens;
use crate::pb::{self, CountRequest, CountResponse, EnumerateRequest};
use crate::service::{Error, QueensService};
use arrow_flight::encode::FlightDataEncoderBuilder;
use arrow_flight::flight_descriptor::DescriptorType;
use arrow_flight::flight_service_server::FlightService;
use arrow_flight::{
    Action, ActionType, Criteria, Empty, FlightData, FlightDescriptor, FlightEndpoint, FlightInfo,
    HandshakeRequest, HandshakeResponse, PollInfo, PutResult, SchemaResult, Ticket,
};
use std::pin::Pin;
use tokio_stream::{Stream, StreamExt};
use tonic::metadata::MetadataMap;
use tonic::{Code, Extensions, Request, Response, Status, Streaming};

/// Bytes an Arrow IPC message adds to its records (its flatbuffer header, padding, the
/// FlightData fields: a few hundred bytes), kept free under the message cap.
const IPC_HEADROOM: usize = 4096;

/// Largest board whose total `GetFlightInfo` counts. A Count of the whole board took, on a
/// release build's server on this project's 2-core AMD EPYC (AVX-512), as its call log timed
/// 5 calls each: n = 12 2.2-2.4 ms, n = 13 5.2-5.3 ms, n = 14 11-30 ms, n = 15 147-171 ms;
/// n = 18 takes about 1 s and n = 20 36 s (docs/performance.md). Up to n = 14 a total costs
/// milliseconds; above, a metadata call would hold a search slot for a real search, so the
/// total is -1 and a client learns it from the stream.
pub const COUNTED_TOTAL_N: u32 = 14;

/// A stream of one Flight method's answers.
type Answers<T> = Pin<Box<dyn Stream<Item = Result<T, Status>> + Send>>;

/// The Flight service: the Queens service it asks, and what it hands out with the parts.
#[derive(Clone, Debug)]
pub struct FlightQueens {
    queens: QueensService,
    /// Largest response message (`Config::max_message_bytes`): record batches stay under it.
    max_message_bytes: usize,
    /// Bytes of records a batch aims for when the ticket leaves `batch_size` at 0.
    batch_bytes: usize,
    /// Flight locations handed out with the parts (`--advertise`), round-robin.
    advertise: Vec<String>,
}

impl FlightQueens {
    /// The Flight service over `queens`, its record batches aiming at `batch_bytes` of
    /// records and staying under `max_message_bytes`, handing out `advertise` as the parts'
    /// locations (none: a part is fetched from the server that was asked).
    pub fn new(
        queens: QueensService,
        max_message_bytes: usize,
        batch_bytes: usize,
        advertise: Vec<String>,
    ) -> FlightQueens {
        FlightQueens {
            queens,
            max_message_bytes,
            batch_bytes,
            advertise,
        }
    }

    /// The command of a descriptor, its request checked as Enumerate would check it.
    fn command(&self, descriptor: &FlightDescriptor) -> Result<Command, Status> {
        if descriptor.r#type() != DescriptorType::Cmd {
            return Err(invalid(
                "descriptor",
                "this server names no paths; send a command, the JSON of an Enumerate \
                 question such as {\"n\": 8}",
            ));
        }
        let command = command::parse(&descriptor.cmd, "command").map_err(Error::from)?;
        let parts = command.parts;
        if parts > 1 && command.request.shard.is_some_and(|s| s.count > 1) {
            return Err(invalid(
                "parts",
                format!("the command already names a shard; ask for {parts} parts of the whole"),
            ));
        }
        if parts > 1 && command.request.limit > 0 {
            return Err(invalid(
                "parts",
                "a limit applies to one stream; ask for parts without a limit",
            ));
        }
        self.check(&part(&command, 0))?;
        Ok(command)
    }

    /// Checks a request as Enumerate would.
    fn check(&self, request: &EnumerateRequest) -> Result<(), Status> {
        self.queens
            .query()
            .enumerate(request)
            .map(|_| ())
            .map_err(|e| Error::from(e).into())
    }

    /// The endpoint of part `index` of `command`: its ticket, and the advertised locations
    /// starting from the part's own.
    fn endpoint(&self, command: &Command, index: u32) -> FlightEndpoint {
        let ticket = command::ticket(&part(command, index), command.compression);
        let mut endpoint = FlightEndpoint::new().with_ticket(Ticket::new(ticket));
        let count = self.advertise.len();
        for k in 0..count {
            endpoint = endpoint.with_location(&self.advertise[(index as usize + k) % count]);
        }
        endpoint
    }

    /// The boards `question` streams, for `GetFlightInfo`: from a Count when
    /// [`counts_total`] allows one and the Count is admitted, else -1 (unknown). The Count
    /// goes through the Queens service with the call's metadata and extensions (its
    /// deadline, its client, its log note).
    async fn total(
        &self,
        (metadata, extensions): (MetadataMap, Extensions),
        question: &EnumerateRequest,
    ) -> Result<i64, Status> {
        if !counts_total(question) {
            return Ok(-1);
        }
        let count = CountRequest {
            n: question.n,
            fixed: question.fixed.clone(),
            shard: question.shard,
        };
        let request = Request::from_parts(metadata, extensions, count);
        match self.queens.count(request).await {
            Ok(count) => Ok(total_records(question, Some(&count.into_inner()))),
            // No slot to spare: the metadata call answers anyway, without its total.
            Err(busy) if busy.code() == Code::ResourceExhausted => Ok(-1),
            Err(status) => Err(status),
        }
    }

    /// Records per batch: the ticket's `batch_size`, else [`Self::batch_bytes`] of records,
    /// within the message cap.
    fn batch_size(&self, request: &EnumerateRequest) -> u32 {
        let n = request.n.max(1) as usize;
        let most = self.max_message_bytes.saturating_sub(IPC_HEADROOM) / n;
        let asked = match request.batch_size {
            0 => self.batch_bytes / n,
            asked => asked as usize,
        };
        asked.clamp(1, most.max(1)) as u32
    }
}

/// Part `index` of `command`'s parts (the request itself when it has one part).
fn part(command: &Command, index: u32) -> EnumerateRequest {
    let mut request = command.request.clone();
    if command.parts > 1 {
        request.shard = Some(pb::Shard {
            index,
            count: command.parts,
        });
    }
    request
}

/// Whether `GetFlightInfo` asks Count for `request`'s total: only for a board of at most
/// [`COUNTED_TOTAL_N`], and only where Count's answer is the total: not after a
/// `start_after`, not for one part of a split (Count's part i holds other boards than
/// Enumerate's part i; only the parts' sums agree), and not for classes with fixed queens
/// (Count gives none).
fn counts_total(request: &EnumerateRequest) -> bool {
    let part = request.shard.is_some_and(|s| s.count > 1);
    let classes_unknown = request.fundamental && !request.fixed.is_empty();
    request.n <= COUNTED_TOTAL_N && request.start_after.is_empty() && !part && !classes_unknown
}

/// Boards `request` streams, as Count answered for its question (`count`), at most its
/// `limit`; -1 (unknown) without an answer or without the classes asked for.
fn total_records(request: &EnumerateRequest, count: Option<&CountResponse>) -> i64 {
    let Some(count) = count else {
        return -1;
    };
    let total = if request.fundamental {
        count.fundamental
    } else {
        Some(count.solutions)
    };
    match total {
        Some(total) if request.limit > 0 => total.min(request.limit) as i64,
        Some(total) => i64::try_from(total).unwrap_or(i64::MAX),
        None => -1,
    }
}

/// The refusal of a method that would write.
fn read_only(method: &str) -> Status {
    Status::unimplemented(format!(
        "{method}: this Flight service is read-only; fetch boards with DoGet"
    ))
}

/// The INVALID_ARGUMENT of `field` (through the service's one mapping, so it carries a
/// `BadRequest` naming the field): `problem` is what is wrong with it.
fn invalid(field: &str, problem: impl Into<String>) -> Status {
    Error::Field {
        field: field.to_string(),
        problem: problem.into(),
    }
    .into()
}

/// The schema of boards of size `n` as Flight carries it (IPC bytes).
fn schema_bytes(n: u32) -> Result<bytes::Bytes, Status> {
    FlightInfo::new()
        .try_with_schema(&schema(n))
        .map(|info| info.schema)
        .map_err(|e| Status::internal(format!("schema: {e}")))
}

/// The commands `ListFlights` shows as examples.
const EXAMPLES: [&str; 2] = [r#"{"n": 8}"#, r#"{"n": 8, "fundamental": true}"#];

#[tonic::async_trait]
impl FlightService for FlightQueens {
    type HandshakeStream = Answers<HandshakeResponse>;
    type ListFlightsStream = Answers<FlightInfo>;
    type DoGetStream = Answers<FlightData>;
    type DoPutStream = Answers<PutResult>;
    type DoExchangeStream = Answers<FlightData>;
    type DoActionStream = Answers<arrow_flight::Result>;
    type ListActionsStream = Answers<ActionType>;

    async fn handshake(
        &self,
        _: Request<Streaming<HandshakeRequest>>,
    ) -> Result<Response<Self::HandshakeStream>, Status> {
        Err(Status::unimplemented(
            "Handshake: not needed; when the server takes tokens, send one on every call in \
             the authorization header (Bearer TOKEN)",
        ))
    }

    /// Lists example questions (their totals: ask GetFlightInfo).
    async fn list_flights(
        &self,
        _: Request<Criteria>,
    ) -> Result<Response<Self::ListFlightsStream>, Status> {
        let mut infos = Vec::new();
        for example in EXAMPLES {
            let descriptor = FlightDescriptor::new_cmd(example.as_bytes().to_vec());
            let command = self.command(&descriptor)?;
            infos.push(Ok(FlightInfo {
                schema: schema_bytes(command.request.n)?,
                ..FlightInfo::new()
                    .with_descriptor(descriptor)
                    .with_endpoint(self.endpoint(&command, 0))
                    .with_ordered(true)
            }));
        }
        Ok(Response::new(Box::pin(tokio_stream::iter(infos))))
    }

    /// The schema, the total where it is cheap to count (else -1), and one endpoint per part.
    async fn get_flight_info(
        &self,
        request: Request<FlightDescriptor>,
    ) -> Result<Response<FlightInfo>, Status> {
        let (metadata, extensions, descriptor) = request.into_parts();
        let command = self.command(&descriptor)?;
        let question = &command.request;
        let total = self.total((metadata, extensions), question).await?;
        let endpoints = (0..command.parts)
            .map(|i| self.endpoint(&command, i))
            .collect();
        Ok(Response::new(FlightInfo {
            schema: schema_bytes(question.n)?,
            ..FlightInfo::new()
                .with_descriptor(descriptor)
                .with_endpoints(endpoints)
                .with_total_records(total)
                .with_ordered(command.parts == 1)
        }))
    }

    async fn poll_flight_info(
        &self,
        _: Request<FlightDescriptor>,
    ) -> Result<Response<PollInfo>, Status> {
        Err(Status::unimplemented(
            "PollFlightInfo: not offered; GetFlightInfo answers at once (total_records -1 when \
             the total would take a search to count)",
        ))
    }

    /// The schema of a command's boards (no search).
    async fn get_schema(
        &self,
        request: Request<FlightDescriptor>,
    ) -> Result<Response<SchemaResult>, Status> {
        let command = self.command(request.get_ref())?;
        Ok(Response::new(SchemaResult {
            schema: schema_bytes(command.request.n)?,
        }))
    }

    /// One part, as a packed Enumerate stream turned into record batches (compressed as the
    /// ticket asks).
    async fn do_get(
        &self,
        request: Request<Ticket>,
    ) -> Result<Response<Self::DoGetStream>, Status> {
        let (metadata, extensions, ticket) = request.into_parts();
        let command = command::parse(&ticket.ticket, "ticket").map_err(Error::from)?;
        if command.parts > 1 {
            return Err(invalid(
                "parts",
                "a ticket names one part; GetFlightInfo splits a command into parts",
            ));
        }
        let options = batches::write_options(command.compression)
            .map_err(|e| Status::internal(format!("IPC options: {e}")))?;
        let mut question = command.request;
        let n = question.n;
        question.batch_size = self.batch_size(&question);
        question.packed = true;
        let messages = self
            .queens
            .enumerate(Request::from_parts(metadata, extensions, question))
            .await?
            .into_inner();
        let schema = schema(n);
        let rows = schema.clone();
        let batches = messages.map(move |message| {
            let message = message?;
            Ok(batches::record_batch(&rows, n, message.bytes)?)
        });
        let data = FlightDataEncoderBuilder::new()
            .with_options(options)
            .with_schema(schema)
            // Batches are already under the message cap: never split them.
            .with_max_flight_data_size(self.max_message_bytes)
            .build(batches)
            .map(|data| data.map_err(Status::from));
        Ok(Response::new(Box::pin(data)))
    }

    async fn do_put(
        &self,
        _: Request<Streaming<FlightData>>,
    ) -> Result<Response<Self::DoPutStream>, Status> {
        Err(read_only("DoPut"))
    }

    async fn do_exchange(
        &self,
        _: Request<Streaming<FlightData>>,
    ) -> Result<Response<Self::DoExchangeStream>, Status> {
        Err(read_only("DoExchange"))
    }

    async fn do_action(
        &self,
        request: Request<Action>,
    ) -> Result<Response<Self::DoActionStream>, Status> {
        Err(Status::unimplemented(format!(
            "DoAction: no action {:?} here (ListActions lists none)",
            request.get_ref().r#type
        )))
    }

    /// None: the service has no actions.
    async fn list_actions(
        &self,
        _: Request<Empty>,
    ) -> Result<Response<Self::ListActionsStream>, Status> {
        Ok(Response::new(Box::pin(tokio_stream::empty())))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn totals_follow_the_question() {
        let count = CountResponse {
            solutions: 92,
            fundamental: Some(12),
            ..CountResponse::default()
        };
        let ask = |fundamental, limit| EnumerateRequest {
            n: 8,
            fundamental,
            limit,
            ..EnumerateRequest::default()
        };
        assert_eq!(total_records(&ask(false, 0), Some(&count)), 92);
        assert_eq!(total_records(&ask(true, 0), Some(&count)), 12);
        assert_eq!(total_records(&ask(false, 50), Some(&count)), 50);
        assert_eq!(total_records(&ask(false, 500), Some(&count)), 92);
        assert_eq!(total_records(&ask(false, 0), None), -1);
        assert_eq!(total_records(&ask(false, 50), None), -1);
        let fixed = CountResponse {
            fundamental: None,
            ..count
        };
        assert_eq!(total_records(&ask(true, 0), Some(&fixed)), -1);
    }

    #[test]
    fn only_small_boards_with_a_known_total_are_counted() {
        let ask = |n| EnumerateRequest {
            n,
            ..EnumerateRequest::default()
        };
        assert!(counts_total(&ask(1)) && counts_total(&ask(COUNTED_TOTAL_N)));
        assert!(!counts_total(&ask(COUNTED_TOTAL_N + 1)) && !counts_total(&ask(20)));
        let resumed = EnumerateRequest {
            start_after: vec![0; 8],
            ..ask(8)
        };
        assert!(!counts_total(&resumed));
        let shard = Some(pb::Shard { index: 1, count: 4 });
        let part = EnumerateRequest { shard, ..ask(8) };
        assert!(!counts_total(&part));
        let whole = Some(pb::Shard { index: 0, count: 1 });
        assert!(counts_total(&EnumerateRequest {
            shard: whole,
            ..ask(8)
        }));
        let fixed_classes = EnumerateRequest {
            fundamental: true,
            fixed: vec![pb::Square { row: 0, column: 0 }],
            ..ask(8)
        };
        assert!(!counts_total(&fixed_classes));
        let classes = EnumerateRequest {
            fundamental: true,
            ..ask(8)
        };
        assert!(counts_total(&classes));
    }
}
