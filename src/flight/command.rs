//! Flight commands and tickets: an Enumerate question as a JSON object whose fields are
//! `EnumerateRequest`'s (`n`, `fundamental`, `fixed`, `shard`, `start_after`, `limit`,
//! `batch_size`; the camelCase spellings of proto3's JSON mapping are accepted too), plus
//! `compression` (`"zstd"`, `"lz4"` or `"none"`, the default: how `DoGet` compresses its
//! record batches' buffers, which the endpoints' tickets carry on), and `parts` in a command:
//! how many endpoints `GetFlightInfo` splits the question into. serde reads and writes them;
//! `serde_path_to_error` names the field a refusal is about.
//!
//! Every refusal is a [`CommandError`]: the field at fault (the command's own path, such as
//! `fixed[1].row`, or `command`/`ticket` for the whole) and what is wrong; the service's
//! [`Error::Field`] carries it to INVALID_ARGUMENT. Not here: checking the values against the
//! server's limits (the service's `Query` does that once the request is built).

use crate::pb;
use crate::service::Error;
use serde::de::{self, Deserializer, Unexpected, Visitor};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use serde_path_to_error::Segment;

/// Most endpoints one `GetFlightInfo` hands out: enough for a part per core of a large
/// cluster, few enough that the answer stays a small message (about 100 bytes a part).
pub const MAX_PARTS: u32 = 4096;

/// A parsed command or ticket.
#[derive(Clone, Debug, PartialEq)]
pub struct Command {
    /// The question, as Enumerate would be asked it.
    pub request: pb::EnumerateRequest,
    /// Parts asked for (commands only; 1 when absent).
    pub parts: u32,
    /// How `DoGet` compresses the record batches' buffers.
    pub compression: Compression,
}

/// The buffer compression of Arrow IPC that `DoGet` applies (Arrow's own, which every Arrow
/// reader undoes: pyarrow, polars and DuckDB through it, arrow-rs).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Compression {
    /// Buffers as they are (the default: what a ticket without `compression` gets).
    #[default]
    None,
    /// Zstandard (Arrow's `ZSTD`).
    Zstd,
    /// LZ4 frames (Arrow's `LZ4_FRAME`).
    Lz4,
}

/// A command or ticket refused: the field at fault and what is wrong with it.
#[derive(Debug, thiserror::Error)]
#[error("{field}: {problem}")]
pub struct CommandError {
    /// The field, as the command names it (`n`, `fixed[0].column`), or `command`/`ticket`.
    pub field: String,
    /// What is wrong with it.
    pub problem: Problem,
}

/// What is wrong with a command's field.
#[derive(Debug, thiserror::Error)]
pub enum Problem {
    /// The bytes are not JSON.
    #[error("not JSON ({0}); send an object such as {{\"n\": 8}}")]
    NotJson(#[source] serde_json::Error),
    /// JSON, but not an object.
    #[error("expected a JSON object such as {{\"n\": 8}}")]
    NotObject,
    /// A field unknown, or of the wrong type or range (serde's words).
    #[error("{0}")]
    Value(#[source] serde_json::Error),
    /// `parts` outside 1..=[`MAX_PARTS`].
    #[error("must be 1..={MAX_PARTS}, got {0}")]
    Parts(u32),
}

impl From<CommandError> for Error {
    fn from(error: CommandError) -> Error {
        Error::Field {
            field: error.field,
            problem: error.problem.to_string(),
        }
    }
}

/// The JSON form of a command or ticket: `EnumerateRequest`'s fields, and `parts`.
#[derive(Debug, Default, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
struct Json {
    n: u32,
    #[serde(skip_serializing_if = "is_false")]
    fundamental: bool,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    fixed: Vec<Square>,
    #[serde(skip_serializing_if = "Option::is_none")]
    shard: Option<Shard>,
    #[serde(alias = "startAfter", skip_serializing_if = "Vec::is_empty")]
    start_after: Vec<u32>,
    /// proto3's JSON mapping writes 64-bit integers as strings: both are read.
    #[serde(deserialize_with = "u64_or_text", skip_serializing_if = "is_zero")]
    limit: u64,
    #[serde(alias = "batchSize", skip_serializing_if = "is_zero")]
    batch_size: u32,
    #[serde(skip_serializing_if = "is_zero")]
    compression: Compression,
    #[serde(skip_serializing)]
    parts: Option<u32>,
}

/// A square of `fixed`: `{"row": R, "column": C}` or `[R, C]`.
#[derive(Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
struct Square {
    row: u32,
    column: u32,
}

/// `shard`: `{"index": I, "count": K}`, either 0 when absent.
#[derive(Debug, Default, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
struct Shard {
    index: u32,
    count: u32,
}

/// Reads a command or ticket; `what` ("command" or "ticket") names it in a refusal.
pub fn parse(bytes: &[u8], what: &str) -> Result<Command, CommandError> {
    let whole = |problem| CommandError {
        field: what.to_string(),
        problem,
    };
    let value: Value = serde_json::from_slice(bytes).map_err(|e| whole(Problem::NotJson(e)))?;
    if !value.is_object() {
        return Err(whole(Problem::NotObject));
    }
    let json: Json = serde_path_to_error::deserialize(value).map_err(|e| CommandError {
        field: field_of(e.path(), what),
        problem: Problem::Value(e.into_inner()),
    })?;
    let parts = match json.parts {
        None => 1,
        Some(parts @ 1..=MAX_PARTS) => parts,
        Some(other) => {
            return Err(CommandError {
                field: "parts".into(),
                problem: Problem::Parts(other),
            });
        }
    };
    let request = pb::EnumerateRequest {
        n: json.n,
        fundamental: json.fundamental,
        fixed: json
            .fixed
            .into_iter()
            .map(|s| pb::Square {
                row: s.row,
                column: s.column,
            })
            .collect(),
        shard: json.shard.map(|s| pb::Shard {
            index: s.index,
            count: s.count,
        }),
        start_after: json.start_after,
        limit: json.limit,
        batch_size: json.batch_size,
        ..Default::default()
    };
    Ok(Command {
        request,
        parts,
        compression: json.compression,
    })
}

/// The JSON ticket of `request` (one part of a question) streamed with `compression`: what
/// `DoGet` reads back.
pub fn ticket(request: &pb::EnumerateRequest, compression: Compression) -> Vec<u8> {
    let json = Json {
        n: request.n,
        fundamental: request.fundamental,
        fixed: request
            .fixed
            .iter()
            .map(|s| Square {
                row: s.row,
                column: s.column,
            })
            .collect(),
        shard: request.shard.map(|s| Shard {
            index: s.index,
            count: s.count,
        }),
        start_after: request.start_after.clone(),
        limit: request.limit,
        batch_size: request.batch_size,
        compression,
        parts: None,
    };
    serde_json::to_vec(&json).expect("a ticket has only numbers and lists to write")
}

/// The field a path names, as a client would write it (`fixed[0].column`); `what` for the
/// whole. A square written `[R, C]` has its coordinates named as in `{"row", "column"}`,
/// so that the field is the same whichever form the client sent.
fn field_of(path: &serde_path_to_error::Path, what: &str) -> String {
    let segments: Vec<&Segment> = path.iter().collect();
    if let [
        Segment::Map { key },
        Segment::Seq { index },
        Segment::Seq { index: at },
    ] = segments[..]
        && key == "fixed"
    {
        let coordinate = if *at == 0 { "row" } else { "column" };
        return format!("fixed[{index}].{coordinate}");
    }
    let mut field = String::new();
    for segment in segments {
        match segment {
            Segment::Seq { index } => field.push_str(&format!("[{index}]")),
            Segment::Map { key } | Segment::Enum { variant: key } => {
                if !field.is_empty() {
                    field.push('.');
                }
                field.push_str(key);
            }
            Segment::Unknown => {}
        }
    }
    if field.is_empty() {
        what.to_string()
    } else {
        field
    }
}

/// An unsigned 64-bit integer written as a number or as a string of digits.
fn u64_or_text<'de, D: Deserializer<'de>>(deserializer: D) -> Result<u64, D::Error> {
    /// Takes either form.
    struct Either;

    impl Visitor<'_> for Either {
        type Value = u64;

        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            f.write_str("an unsigned integer, as a number or a string")
        }

        fn visit_u64<E: de::Error>(self, value: u64) -> Result<u64, E> {
            Ok(value)
        }

        fn visit_str<E: de::Error>(self, text: &str) -> Result<u64, E> {
            text.parse()
                .map_err(|_| E::invalid_value(Unexpected::Str(text), &self))
        }
    }

    deserializer.deserialize_any(Either)
}

/// For `skip_serializing_if`: a ticket leaves out what is off.
fn is_false(value: &bool) -> bool {
    !value
}

/// For `skip_serializing_if`: a ticket leaves out what is zero.
fn is_zero<T: Default + PartialEq>(value: &T) -> bool {
    *value == T::default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_command_reads_every_field_and_its_ticket_reads_back_the_same() {
        let text = br#"{"n": 10, "fundamental": true, "fixed": [{"row": 1, "column": 3}, [2, 5]],
            "shard": {"index": 2, "count": 7}, "startAfter": [0, 2], "limit": "12",
            "batch_size": 100, "compression": "zstd", "parts": 3}"#;
        let command = parse(text, "command").unwrap();
        assert_eq!(command.parts, 3);
        assert_eq!(command.compression, Compression::Zstd);
        let r = &command.request;
        assert_eq!(
            (r.n, r.fundamental, r.limit, r.batch_size),
            (10, true, 12, 100)
        );
        assert_eq!(r.start_after, [0, 2]);
        assert_eq!((r.fixed[1].row, r.fixed[1].column), (2, 5));
        assert_eq!(r.shard.map(|s| (s.index, s.count)), Some((2, 7)));
        let again = parse(&ticket(r, command.compression), "ticket").unwrap();
        assert_eq!(again.request, command.request);
        assert_eq!((again.parts, again.compression), (1, Compression::Zstd));
        // Without compression a ticket is what it was before there was any to ask for.
        let plain = ticket(r, Compression::None);
        assert!(
            !String::from_utf8(plain.clone())
                .unwrap()
                .contains("compression")
        );
        assert_eq!(
            parse(&plain, "ticket").unwrap().compression,
            Compression::None
        );
        for (text, compression) in [("lz4", Compression::Lz4), ("none", Compression::None)] {
            let json = format!(r#"{{"n": 8, "compression": "{text}"}}"#);
            assert_eq!(
                parse(json.as_bytes(), "ticket").unwrap().compression,
                compression
            );
        }
    }

    #[test]
    fn refusals_name_the_field_as_the_message_does() {
        for (text, starts) in [
            (&b"[1]"[..], "command: expected a JSON object"),
            (b"{\"n\": 8", "command: not JSON"),
            (b"{\"n\": -1}", "n: "),
            (b"{\"n\": 4294967296}", "n: "),
            (b"{\"limt\": 3}", "limt: unknown field"),
            (b"{\"shard\": {\"ix\": 3}}", "shard.ix: unknown field"),
            (b"{\"fixed\": [[1]]}", "fixed[0]: "),
            (
                b"{\"fixed\": [{\"row\": 1}]}",
                "fixed[0]: missing field `column`",
            ),
            (b"{\"fixed\": [[1, true]]}", "fixed[0].column: "),
            (b"{\"fixed\": [[true, 1]]}", "fixed[0].row: "),
            (b"{\"limit\": \"x\"}", "limit: "),
            (b"{\"shard\": {\"index\": \"x\"}}", "shard.index: "),
            (b"{\"start_after\": [0, true]}", "start_after[1]: "),
            (b"{\"parts\": 0}", "parts: must be 1..=4096"),
            (b"{\"parts\": 4097}", "parts: must be"),
            (b"{\"fundamental\": 1}", "fundamental: "),
            (b"{\"limit\": 1.5}", "limit: "),
            (
                b"{\"compression\": \"gzip\"}",
                "compression: unknown variant `gzip`, expected one of",
            ),
            (b"{\"compression\": 1}", "compression: "),
        ] {
            let err = parse(text, "command").unwrap_err();
            let message = err.to_string();
            assert!(
                message.starts_with(starts),
                "{}: {message}",
                String::from_utf8_lossy(text)
            );
            // The field a client's BadRequest names is the one the message starts with.
            let Error::Field { field, .. } = Error::from(err) else {
                panic!("{message}: not a field's refusal");
            };
            assert!(
                starts.starts_with(&format!("{field}: ")),
                "{field}: {message}"
            );
        }
    }
}
