//! Flight commands and tickets: an Enumerate question as a JSON object whose fields are
//! `EnumerateRequest`'s (`n`, `fundamental`, `fixed`, `shard`, `start_after`, `limit`,
//! `batch_size`; the camelCase spellings of proto3's JSON mapping are accepted too), plus
//! `parts` in a command: how many endpoints `GetFlightInfo` splits the question into.
//!
//! Every refusal is the service's [`Error::Field`]: the field at fault (the command's own
//! path, such as `fixed[1].row`, or `command`/`ticket` for the whole) and what is wrong. Not
//! here: checking the values against the server's limits (the service's `Query` does that
//! once the request is built).

use crate::pb;
use crate::service::Error;
use serde_json::{Map, Value, json};

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
}

/// The fields a command may carry, for the message about an unknown one.
const FIELDS: &str = "n, fundamental, fixed, shard, start_after, limit, batch_size, parts";

/// The refusal of `field`: `problem` is what is wrong with it.
pub fn refusal(field: impl Into<String>, problem: impl Into<String>) -> Error {
    Error::Field {
        field: field.into(),
        problem: problem.into(),
    }
}

/// Reads a command or ticket; `what` ("command" or "ticket") names it in a refusal.
pub fn parse(bytes: &[u8], what: &str) -> Result<Command, Error> {
    let value: Value = serde_json::from_slice(bytes).map_err(|e| {
        refusal(
            what,
            format!("not JSON ({e}); send an object such as {{\"n\": 8}}"),
        )
    })?;
    let Value::Object(object) = value else {
        return Err(refusal(what, "expected a JSON object such as {\"n\": 8}"));
    };
    let mut command = Command {
        request: pb::EnumerateRequest::default(),
        parts: 1,
    };
    for (key, value) in &object {
        field(&mut command, key, value)?;
    }
    Ok(command)
}

/// Sets the field `key` of `command` from `value`.
fn field(command: &mut Command, key: &str, value: &Value) -> Result<(), Error> {
    let request = &mut command.request;
    match key {
        "n" => request.n = uint(value, "n")?,
        "fundamental" => request.fundamental = boolean(value, "fundamental")?,
        "fixed" => request.fixed = squares(value)?,
        "shard" => request.shard = Some(shard(value)?),
        "start_after" | "startAfter" => request.start_after = uints(value, "start_after")?,
        "limit" => request.limit = u64_of(value, "limit")?,
        "batch_size" | "batchSize" => request.batch_size = uint(value, "batch_size")?,
        "parts" => command.parts = parts(value)?,
        other => {
            return Err(refusal(
                other,
                format!("not a field of a command ({FIELDS})"),
            ));
        }
    }
    Ok(())
}

/// The JSON ticket of `request` (one part of a question): what `DoGet` reads back.
pub fn ticket(request: &pb::EnumerateRequest) -> Vec<u8> {
    let mut object = Map::new();
    object.insert("n".into(), json!(request.n));
    if request.fundamental {
        object.insert("fundamental".into(), json!(true));
    }
    if !request.fixed.is_empty() {
        let fixed: Vec<Value> = request
            .fixed
            .iter()
            .map(|s| json!({"row": s.row, "column": s.column}))
            .collect();
        object.insert("fixed".into(), Value::Array(fixed));
    }
    if let Some(shard) = &request.shard {
        object.insert(
            "shard".into(),
            json!({"index": shard.index, "count": shard.count}),
        );
    }
    if !request.start_after.is_empty() {
        object.insert("start_after".into(), json!(request.start_after));
    }
    if request.limit > 0 {
        object.insert("limit".into(), json!(request.limit));
    }
    if request.batch_size > 0 {
        object.insert("batch_size".into(), json!(request.batch_size));
    }
    Value::Object(object).to_string().into_bytes()
}

fn u64_of(value: &Value, name: &str) -> Result<u64, Error> {
    // proto3's JSON mapping writes 64-bit integers as strings: take both.
    let parsed = match value {
        Value::Number(number) => number.as_u64(),
        Value::String(text) => text.parse().ok(),
        _ => None,
    };
    parsed.ok_or_else(|| refusal(name, format!("expected an unsigned integer, got {value}")))
}

fn uint(value: &Value, name: &str) -> Result<u32, Error> {
    value
        .as_u64()
        .and_then(|v| u32::try_from(v).ok())
        .ok_or_else(|| {
            refusal(
                name,
                format!("expected an unsigned integer below 2^32, got {value}"),
            )
        })
}

fn boolean(value: &Value, name: &str) -> Result<bool, Error> {
    value
        .as_bool()
        .ok_or_else(|| refusal(name, format!("expected true or false, got {value}")))
}

fn array<'a>(value: &'a Value, name: &str) -> Result<&'a Vec<Value>, Error> {
    value
        .as_array()
        .ok_or_else(|| refusal(name, format!("expected an array, got {value}")))
}

fn uints(value: &Value, name: &str) -> Result<Vec<u32>, Error> {
    array(value, name)?
        .iter()
        .enumerate()
        .map(|(i, v)| uint(v, &format!("{name}[{i}]")))
        .collect()
}

/// `fixed`: squares as `{"row": R, "column": C}` or `[R, C]`.
fn squares(value: &Value) -> Result<Vec<pb::Square>, Error> {
    let square = |(i, v): (usize, &Value)| {
        let name = format!("fixed[{i}]");
        let (row, column) = match v {
            Value::Array(pair) if pair.len() == 2 => (&pair[0], &pair[1]),
            Value::Object(o) => (
                o.get("row").unwrap_or(&Value::Null),
                o.get("column").unwrap_or(&Value::Null),
            ),
            _ => {
                return Err(refusal(
                    name,
                    format!("expected {{\"row\": R, \"column\": C}} or [R, C], got {v}"),
                ));
            }
        };
        Ok(pb::Square {
            row: uint(row, &format!("{name}.row"))?,
            column: uint(column, &format!("{name}.column"))?,
        })
    };
    array(value, "fixed")?
        .iter()
        .enumerate()
        .map(square)
        .collect()
}

/// `shard`: `{"index": I, "count": K}`.
fn shard(value: &Value) -> Result<pb::Shard, Error> {
    let Value::Object(o) = value else {
        return Err(refusal(
            "shard",
            format!("expected {{\"index\": I, \"count\": K}}, got {value}"),
        ));
    };
    let get = |key: &str| match o.get(key) {
        Some(v) => uint(v, &format!("shard.{key}")),
        None => Ok(0),
    };
    Ok(pb::Shard {
        index: get("index")?,
        count: get("count")?,
    })
}

fn parts(value: &Value) -> Result<u32, Error> {
    match uint(value, "parts")? {
        parts @ 1..=MAX_PARTS => Ok(parts),
        other => Err(refusal(
            "parts",
            format!("must be 1..={MAX_PARTS}, got {other}"),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_command_reads_every_field_and_its_ticket_reads_back_the_same() {
        let text = br#"{"n": 10, "fundamental": true, "fixed": [{"row": 1, "column": 3}, [2, 5]],
            "shard": {"index": 2, "count": 7}, "startAfter": [0, 2], "limit": "12",
            "batch_size": 100, "parts": 3}"#;
        let command = parse(text, "command").unwrap();
        assert_eq!(command.parts, 3);
        let r = &command.request;
        assert_eq!(
            (r.n, r.fundamental, r.limit, r.batch_size),
            (10, true, 12, 100)
        );
        assert_eq!(r.start_after, [0, 2]);
        assert_eq!((r.fixed[1].row, r.fixed[1].column), (2, 5));
        assert_eq!(r.shard.map(|s| (s.index, s.count)), Some((2, 7)));
        let again = parse(&ticket(r), "ticket").unwrap();
        assert_eq!(again.request, command.request);
        assert_eq!(again.parts, 1);
    }

    #[test]
    fn refusals_name_the_field_as_the_message_does() {
        for (text, starts) in [
            (&b"[1]"[..], "command: expected a JSON object"),
            (b"{\"n\": 8", "command: not JSON"),
            (b"{\"n\": -1}", "n: "),
            (b"{\"n\": 4294967296}", "n: "),
            (b"{\"limt\": 3}", "limt: not a field"),
            (b"{\"fixed\": [[1]]}", "fixed[0]: "),
            (b"{\"fixed\": [{\"row\": 1}]}", "fixed[0].column: "),
            (b"{\"shard\": {\"index\": \"x\"}}", "shard.index: "),
            (b"{\"start_after\": [0, true]}", "start_after[1]: "),
            (b"{\"parts\": 0}", "parts: must be 1..=4096"),
            (b"{\"parts\": 4097}", "parts: must be"),
            (b"{\"fundamental\": 1}", "fundamental: "),
            (b"{\"limit\": 1.5}", "limit: "),
        ] {
            let err = parse(text, "command").unwrap_err();
            let message = err.to_string();
            assert!(
                message.starts_with(starts),
                "{}: {message}",
                String::from_utf8_lossy(text)
            );
            // The field a client's BadRequest names is the one the message starts with.
            let Error::Field { field, .. } = err else {
                panic!("{message}: not a field's refusal");
            };
            assert!(
                starts.starts_with(&format!("{field}: ")),
                "{field}: {message}"
            );
        }
    }
}
