//! Enumerate's responses written straight into protobuf bytes, without building a `Board`
//! and `n` `String`s per solution.
//!
//! An `EnumerateResponse` is nothing but its boards, each one field-1 entry of a fixed length
//! for a given `n` and form: `columns` as one packed varint field (every column is below 32,
//! so one byte each) and, unless compact, `rows` as `n` length-delimited strings. So a batch
//! is the concatenation of its boards' entries, and a message of `k` boards is exactly
//! `k * entry_len` bytes. The server sends [`EncodedBatch`] through a server-only generation
//! of the service (`build.rs`, [`crate::pb::server`]); clients decode the same bytes as the
//! plain generated `EnumerateResponse`. Batching, flushing and the channel live in
//! `send.rs`.

use crate::solver::MAX_N;
use prost::bytes::{Buf, BufMut};
use prost::encoding::{DecodeContext, WireType, encode_varint, skip_field};

/// Key of field 1, length-delimited: `EnumerateResponse.boards` and packed `Board.columns`.
const KEY_1: u8 = 1 << 3 | 2;
/// Key of field 2, length-delimited: `Board.rows`.
const KEY_2: u8 = 2 << 3 | 2;

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
}

impl BoardEncoder {
    /// An encoder for boards of size `n` (1 to [`MAX_N`]), with rows unless `compact`.
    pub fn new(n: u32, compact: bool) -> BoardEncoder {
        assert!((1..=MAX_N).contains(&n), "boards have 1 to {MAX_N} rows");
        let n = n as usize;
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
        }
    }

    /// Bytes one board adds to an `EnumerateResponse` (the same for every board).
    pub fn entry_len(&self) -> usize {
        self.entry_len
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
/// impl writes the bytes as they are; the server never decodes one.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct EncodedBatch {
    /// The serialized message: whole board entries, as [`BoardEncoder`] writes them.
    pub bytes: Vec<u8>,
}

impl std::fmt::Debug for EncodedBatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "EncodedBatch({} bytes)", self.bytes.len())
    }
}

impl prost::Message for EncodedBatch {
    fn encode_raw(&self, buf: &mut impl BufMut) {
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
        self.bytes.len()
    }

    fn clear(&mut self) {
        self.bytes.clear();
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
                let encoder = BoardEncoder::new(n as u32, compact);
                let boards = samples(n);
                let mut bytes = Vec::new();
                for b in &boards {
                    encoder.push(b, &mut bytes);
                }
                let expected = EnumerateResponse {
                    boards: boards.iter().map(|b| reference(b, compact)).collect(),
                };
                assert_eq!(bytes.len(), boards.len() * encoder.entry_len());
                assert_eq!(EnumerateResponse::decode(&bytes[..]).unwrap(), expected);
                assert_eq!(
                    expected.encoded_len(),
                    bytes.len(),
                    "n={n} compact={compact}"
                );
                assert_eq!(expected.encode_to_vec(), bytes, "n={n} compact={compact}");
                let batch = EncodedBatch {
                    bytes: bytes.clone(),
                };
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
                    BoardEncoder::new(n as u32, compact).entry_len(),
                    1 + prost::encoding::encoded_len_varint(len as u64) + len
                );
            }
        }
    }
}
