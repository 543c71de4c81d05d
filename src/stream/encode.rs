//! Enumerate's responses written straight into protobuf bytes, without building a `Board`
//! and `n` `String`s per solution.
//!
//! An `EnumerateResponse` is nothing but its boards, each one field-1 entry of a fixed length
//! for a given `n` and form: `columns` as one packed varint field (every column is below 32,
//! so one byte each) and, unless compact, `rows` as `n` length-delimited strings. So a batch
//! is the concatenation of its boards' entries, and a message of `k` boards is exactly
//! `k * entry_len` bytes. A packed request's boards are bare `n`-byte records, and the
//! message is their concatenation as one field-2 (`packed`) value: a key and a length ahead
//! of the records, written when the message goes out. A front-coded request's boards are
//! produced as the same records; the sender rewrites each whole message as front-coded data
//! (`crate::wire::front`), sent as the field-3 (`front_coded`) message. The server sends [`EncodedBatch`] through a server-only generation
//! of the service (`build.rs`, [`crate::pb::server`]); clients decode the same bytes as the
//! plain generated `EnumerateResponse`. Batching, flushing and the channel live in
//! `send.rs`.

use crate::solver::MAX_N;
use prost::bytes::{Buf, BufMut};
use prost::encoding::{DecodeContext, WireType, encode_varint, skip_field};

/// Key of field 1, length-delimited: `EnumerateResponse.boards` and packed `Board.columns`.
const KEY_1: u8 = 1 << 3 | 2;
/// Key of field 2, length-delimited: `Board.rows`, `EnumerateResponse.packed` and
/// `FrontCoded.data`.
const KEY_2: u8 = 2 << 3 | 2;
/// Key of field 3, length-delimited: `EnumerateResponse.front_coded`.
const KEY_3: u8 = 3 << 3 | 2;
/// Key of field 1, varint: `FrontCoded.boards`.
const KEY_1_VARINT: u8 = 1 << 3;

/// How boards are written into Enumerate's responses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Form {
    /// `Board` messages with `columns` and rendered `rows`.
    Rows,
    /// `Board` messages with `columns` only.
    Compact,
    /// Raw `n`-byte records in `EnumerateResponse.packed`.
    Packed,
    /// The records of each message front coded, in `EnumerateResponse.front_coded`.
    FrontCoded,
}

impl Form {
    /// The form a request's `compact` and `packed` flags and its `layout` ask for (a
    /// front-coded layout wins, then `packed`; a layout this server does not know falls
    /// back to `packed` and `compact`, as on a server that predates the field).
    pub fn of(compact: bool, packed: bool, layout: i32) -> Form {
        if layout == crate::pb::PackedLayout::FrontCoded as i32 {
            return Form::FrontCoded;
        }
        match (compact, packed) {
            (_, true) => Form::Packed,
            (true, false) => Form::Compact,
            (false, false) => Form::Rows,
        }
    }

    /// Whether boards are produced as bare `n`-byte records.
    pub fn records(self) -> bool {
        matches!(self, Form::Packed | Form::FrontCoded)
    }
}

/// Writes boards of one size and form as `EnumerateResponse.boards` entries.
#[derive(Clone, Debug)]
pub struct BoardEncoder {
    /// Key, board length, then the key and length of the packed columns.
    header: Vec<u8>,
    /// Per column `c`: the rendered row with its key and length (`n + 2` bytes); empty when
    /// compact.
    rows: Vec<u8>,
    /// Bytes of one rendered row with its key and length.
    row_len: usize,
    /// Bytes one board adds to a message.
    entry_len: usize,
    /// Whether boards are packed records.
    packed: bool,
    /// Whether messages go out front coded.
    front_coded: bool,
}

impl BoardEncoder {
    /// An encoder for boards of size `n` (1 to [`MAX_N`]) in `form`.
    pub fn new(n: u32, form: Form) -> BoardEncoder {
        assert!((1..=MAX_N).contains(&n), "boards have 1 to {MAX_N} rows");
        let n = n as usize;
        if form.records() {
            return BoardEncoder {
                header: Vec::new(),
                rows: Vec::new(),
                row_len: 0,
                entry_len: n,
                packed: true,
                front_coded: form == Form::FrontCoded,
            };
        }
        let compact = form == Form::Compact;
        let row_len = n + 2;
        let mut rows = Vec::new();
        if !compact {
            for column in 0..n {
                rows.extend_from_slice(&[KEY_2, n as u8]);
                crate::render::row(n, column, &mut rows);
            }
        }
        let board_len = 2 + n + if compact { 0 } else { n * row_len };
        let mut header = vec![KEY_1];
        encode_varint(board_len as u64, &mut header);
        header.extend_from_slice(&[KEY_1, n as u8]);
        BoardEncoder {
            entry_len: header.len() + n + if compact { 0 } else { n * row_len },
            header,
            rows,
            row_len,
            packed: false,
            front_coded: false,
        }
    }

    /// Bytes one board adds to an `EnumerateResponse` (the same for every board).
    pub fn entry_len(&self) -> usize {
        self.entry_len
    }

    /// Bytes a message of this form adds around its boards, at most: the key and length of
    /// `packed` (of `front_coded`, and its own two fields' keys and lengths, when front
    /// coded, whose data is never longer than the records), nothing for `Board` messages.
    pub fn message_overhead(&self) -> usize {
        match (self.packed, self.front_coded) {
            (_, true) => 3 * (1 + 5),
            (true, false) => 1 + 5,
            (false, false) => 0,
        }
    }

    /// Whether messages go out front coded.
    pub fn front_coded(&self) -> bool {
        self.front_coded
    }

    /// The message that carries `bytes`, whole entries this encoder wrote (for a
    /// front-coded form: records, sent as they are; the sender codes them).
    pub fn batch(&self, bytes: Vec<u8>) -> EncodedBatch {
        EncodedBatch {
            bytes,
            packed: self.packed,
            front_coded: None,
        }
    }

    /// Appends the entry of the board `columns` (each below `n`) to `out`.
    #[inline]
    pub fn push(&self, columns: &[u8], out: &mut Vec<u8>) {
        out.reserve(self.entry_len);
        out.extend_from_slice(&self.header);
        out.extend_from_slice(columns);
        if !self.rows.is_empty() {
            for &c in columns {
                let at = usize::from(c) * self.row_len;
                out.extend_from_slice(&self.rows[at..at + self.row_len]);
            }
        }
    }
}

/// An `EnumerateResponse` already serialized: the server's response type. Its `Message`
/// impl writes the bytes as they are (behind the key and length of `packed` when packed,
/// inside a `FrontCoded` message when front coded); the server never decodes one.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct EncodedBatch {
    /// The boards: whole entries, as [`BoardEncoder`] writes them, or front-coded data.
    pub bytes: Vec<u8>,
    /// The entries are packed records, sent as the `packed` field.
    pub packed: bool,
    /// With front-coded data in `bytes`: how many boards it holds.
    pub front_coded: Option<u32>,
}

impl EncodedBatch {
    /// Boards in the message, whose entries (when not front coded) are `entry_len` bytes.
    pub fn boards(&self, entry_len: usize) -> u64 {
        match self.front_coded {
            Some(boards) => u64::from(boards),
            None => (self.bytes.len() / entry_len.max(1)) as u64,
        }
    }

    /// Bytes of the `FrontCoded` message inside, when front coded (a field at its default,
    /// 0 boards or no data, is left out, as protobuf does).
    fn front_coded_len(&self) -> Option<usize> {
        let boards = self.front_coded?;
        let count = if boards == 0 {
            0
        } else {
            1 + prost::encoding::encoded_len_varint(u64::from(boards))
        };
        let data = if self.bytes.is_empty() {
            0
        } else {
            1 + prost::encoding::encoded_len_varint(self.bytes.len() as u64) + self.bytes.len()
        };
        Some(count + data)
    }
}

impl std::fmt::Debug for EncodedBatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "EncodedBatch({} bytes)", self.bytes.len())
    }
}

impl prost::Message for EncodedBatch {
    fn encode_raw(&self, buf: &mut impl BufMut) {
        if let (Some(boards), Some(len)) = (self.front_coded, self.front_coded_len()) {
            buf.put_u8(KEY_3);
            encode_varint(len as u64, buf);
            if boards > 0 {
                buf.put_u8(KEY_1_VARINT);
                encode_varint(u64::from(boards), buf);
            }
            if !self.bytes.is_empty() {
                buf.put_u8(KEY_2);
                encode_varint(self.bytes.len() as u64, buf);
            }
        } else if self.packed {
            buf.put_u8(KEY_2);
            encode_varint(self.bytes.len() as u64, buf);
        }
        buf.put_slice(&self.bytes);
    }

    fn merge_field(
        &mut self,
        tag: u32,
        wire_type: WireType,
        buf: &mut impl Buf,
        ctx: DecodeContext,
    ) -> Result<(), prost::DecodeError> {
        skip_field(wire_type, tag, buf, ctx)
    }

    fn encoded_len(&self) -> usize {
        if let Some(len) = self.front_coded_len() {
            return 1 + prost::encoding::encoded_len_varint(len as u64) + len;
        }
        let head = if self.packed {
            1 + prost::encoding::encoded_len_varint(self.bytes.len() as u64)
        } else {
            0
        };
        head + self.bytes.len()
    }

    fn clear(&mut self) {
        self.bytes.clear();
        self.packed = false;
        self.front_coded = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pb::{Board, EnumerateResponse};
    use prost::Message;

    /// The board as the generated types build it: the reference the bytes must match.
    fn reference(columns: &[u8], compact: bool) -> Board {
        let n = columns.len();
        let row = |c: u8| {
            let mut text = Vec::new();
            crate::render::row(n, usize::from(c), &mut text);
            String::from_utf8(text).expect("ASCII")
        };
        Board {
            columns: columns.iter().map(|&c| u32::from(c)).collect(),
            rows: if compact {
                Vec::new()
            } else {
                columns.iter().map(|&c| row(c)).collect()
            },
        }
    }

    /// A few column vectors of size `n` (not necessarily solutions: the encoding does not care).
    fn samples(n: usize) -> Vec<Vec<u8>> {
        vec![
            (0..n as u8).collect(),
            (0..n as u8).rev().collect(),
            vec![0; n],
            vec![(n - 1) as u8; n],
            (0..n).map(|i| ((i * 7 + 3) % n) as u8).collect(),
        ]
    }

    #[test]
    fn written_bytes_decode_to_the_generated_message() {
        for n in [1usize, 2, 4, 8, 11, 14, 16, 20, 31, 32] {
            for compact in [false, true] {
                let encoder = BoardEncoder::new(n as u32, Form::of(compact, false, 0));
                let boards = samples(n);
                let mut bytes = Vec::new();
                for b in &boards {
                    encoder.push(b, &mut bytes);
                }
                let expected = EnumerateResponse {
                    boards: boards.iter().map(|b| reference(b, compact)).collect(),
                    packed: Vec::new(),
                    front_coded: None,
                };
                assert_eq!(bytes.len(), boards.len() * encoder.entry_len());
                assert_eq!(EnumerateResponse::decode(&bytes[..]).unwrap(), expected);
                assert_eq!(
                    expected.encoded_len(),
                    bytes.len(),
                    "n={n} compact={compact}"
                );
                assert_eq!(expected.encode_to_vec(), bytes, "n={n} compact={compact}");
                let batch = encoder.batch(bytes.clone());
                assert_eq!(batch.encode_to_vec(), bytes);
                assert_eq!(batch.encoded_len(), bytes.len());
            }
        }
    }

    #[test]
    fn entry_length_matches_the_generated_encoding() {
        for n in 1..=MAX_N as usize {
            for compact in [false, true] {
                let board = reference(&vec![0; n], compact);
                let len = board.encoded_len();
                assert_eq!(
                    BoardEncoder::new(n as u32, Form::of(compact, false, 0)).entry_len(),
                    1 + prost::encoding::encoded_len_varint(len as u64) + len
                );
            }
        }
    }

    #[test]
    fn packed_records_decode_to_the_generated_message() {
        for n in [1usize, 4, 8, 16, 32] {
            let encoder = BoardEncoder::new(n as u32, Form::Packed);
            assert_eq!(encoder.entry_len(), n);
            let boards = samples(n);
            let mut bytes = Vec::new();
            for b in &boards {
                encoder.push(b, &mut bytes);
            }
            assert_eq!(bytes, boards.concat());
            let batch = encoder.batch(bytes.clone());
            let expected = EnumerateResponse {
                boards: Vec::new(),
                packed: bytes.clone(),
                front_coded: None,
            };
            assert_eq!(batch.encode_to_vec(), expected.encode_to_vec(), "n={n}");
            assert_eq!(batch.encoded_len(), expected.encoded_len());
            assert!(batch.encoded_len() <= bytes.len() + encoder.message_overhead());
            assert_eq!(
                EnumerateResponse::decode(&batch.encode_to_vec()[..]).unwrap(),
                expected
            );
        }
        // The largest message: the length takes four varint bytes.
        let encoder = BoardEncoder::new(32, Form::Packed);
        let batch = encoder.batch(vec![0; 4 * 1024 * 1024 - 32]);
        let expected = EnumerateResponse {
            boards: Vec::new(),
            packed: batch.bytes.clone(),
            front_coded: None,
        };
        assert_eq!(batch.encoded_len(), expected.encoded_len());
        assert_eq!(batch.encode_to_vec(), expected.encode_to_vec());
    }

    #[test]
    fn front_coded_messages_decode_to_the_generated_message() {
        use crate::pb::FrontCoded;
        for (boards, data_len) in [
            (0u32, 0usize),
            (1, 0),
            (0, 3),
            (127, 9),
            (128, 200),
            (16_384, 70_000),
        ] {
            let batch = EncodedBatch {
                bytes: (0..data_len).map(|i| i as u8).collect(),
                packed: true,
                front_coded: Some(boards),
            };
            let expected = EnumerateResponse {
                front_coded: Some(FrontCoded {
                    boards,
                    data: batch.bytes.clone(),
                }),
                ..Default::default()
            };
            assert_eq!(batch.encode_to_vec(), expected.encode_to_vec());
            assert_eq!(batch.encoded_len(), expected.encoded_len());
            assert_eq!(batch.boards(16), u64::from(boards));
            let overhead = BoardEncoder::new(16, Form::FrontCoded).message_overhead();
            assert!(batch.encoded_len() <= data_len + overhead);
        }
    }
}
