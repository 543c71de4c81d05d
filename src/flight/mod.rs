//! The Arrow Flight service (`arrow.flight.protocol.FlightService`), read-only, served beside
//! Queens on the same port: an Enumerate question as a JSON command, its schema, its parts as
//! endpoints, and each part streamed as Arrow record batches.
//!
//! Every call goes through the Queens service itself (`GetFlightInfo` through Count,
//! `DoGet` through a packed Enumerate), so validation, search slots, deadlines,
//! cancellation, shutdown and the call's log note are exactly Enumerate's and Count's; the
//! server's gate (tokens, requests in flight, metrics, traces) sees Flight calls like any
//! other. `DoGet` turns each packed message into one record batch without copying its records.
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
pub use self::command::{Command, MAX_PARTS};

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
use tonic::{Request, Response, Status, Streaming};

/// Bytes an Arrow IPC message adds to its records (its flatbuffer header, padding, the
/// FlightData fields: a few hundred bytes), kept free under the message cap.
const IPC_HEADROOM: usize = 4096;

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
            return Err(Status::invalid_argument(
                "descriptor: this server names no paths; send a command, the JSON of an \
                 Enumerate question such as {\"n\": 8}",
            ));
        }
        let command = command::parse(&descriptor.cmd, "command").map_err(invalid)?;
        let parts = command.parts;
        if parts > 1 && command.request.shard.is_some_and(|s| s.count > 1) {
            return Err(invalid(format!(
                "parts: the command already names a shard; ask for {parts} parts of the whole"
            )));
        }
        if parts > 1 && command.request.limit > 0 {
            return Err(invalid(
                "parts: a limit applies to one stream; ask for parts without a limit",
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
        let mut endpoint =
            FlightEndpoint::new().with_ticket(Ticket::new(command::ticket(&part(command, index))));
        let count = self.advertise.len();
        for k in 0..count {
            endpoint = endpoint.with_location(&self.advertise[(index as usize + k) % count]);
        }
        endpoint
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

/// Boards `request` streams, as Count answered for its question: -1 (unknown) after a
/// `start_after`, or for classes with fixed queens or of one shard (Count gives none).
fn total_records(request: &EnumerateRequest, count: &CountResponse) -> i64 {
    // A shard's classes may be counted across parts (Count's `turn_fixed`): not its own.
    let shard = request.shard.is_some_and(|s| s.count > 1);
    if !request.start_after.is_empty() || (request.fundamental && shard) {
        return -1;
    }
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

fn invalid(message: impl Into<String>) -> Status {
    Status::invalid_argument(message)
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

    /// The schema, the total from Count, and one endpoint per part.
    async fn get_flight_info(
        &self,
        request: Request<FlightDescriptor>,
    ) -> Result<Response<FlightInfo>, Status> {
        let (metadata, extensions, descriptor) = request.into_parts();
        let command = self.command(&descriptor)?;
        let question = &command.request;
        let count = CountRequest {
            n: question.n,
            fixed: question.fixed.clone(),
            shard: question.shard,
        };
        let count = self
            .queens
            .count(Request::from_parts(metadata, extensions, count))
            .await?
            .into_inner();
        let endpoints = (0..command.parts)
            .map(|i| self.endpoint(&command, i))
            .collect();
        Ok(Response::new(FlightInfo {
            schema: schema_bytes(question.n)?,
            ..FlightInfo::new()
                .with_descriptor(descriptor)
                .with_endpoints(endpoints)
                .with_total_records(total_records(question, &count))
                .with_ordered(command.parts == 1)
        }))
    }

    async fn poll_flight_info(
        &self,
        _: Request<FlightDescriptor>,
    ) -> Result<Response<PollInfo>, Status> {
        Err(Status::unimplemented(
            "PollFlightInfo: not offered; GetFlightInfo answers once the question is counted",
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

    /// One part, as a packed Enumerate stream turned into record batches.
    async fn do_get(
        &self,
        request: Request<Ticket>,
    ) -> Result<Response<Self::DoGetStream>, Status> {
        let (metadata, extensions, ticket) = request.into_parts();
        let command = command::parse(&ticket.ticket, "ticket").map_err(invalid)?;
        if command.parts > 1 {
            return Err(invalid(
                "parts: a ticket names one part; GetFlightInfo splits a command into parts",
            ));
        }
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
        let ask = |fundamental, limit, start_after: Vec<u32>| EnumerateRequest {
            n: 8,
            fundamental,
            limit,
            start_after,
            ..EnumerateRequest::default()
        };
        assert_eq!(total_records(&ask(false, 0, vec![]), &count), 92);
        assert_eq!(total_records(&ask(true, 0, vec![]), &count), 12);
        assert_eq!(total_records(&ask(false, 50, vec![]), &count), 50);
        assert_eq!(total_records(&ask(false, 0, vec![0]), &count), -1);
        let fixed = CountResponse {
            fundamental: None,
            ..count
        };
        assert_eq!(total_records(&ask(true, 0, vec![]), &fixed), -1);
    }
}
