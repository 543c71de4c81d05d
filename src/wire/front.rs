//! The front-coded layout of packed boards (`FrontCoded` in the proto), both ways: a
//! message's `n`-byte records written without the columns each board shares with the one
//! before it ([`FrontEncoder`], the server's), and read back into the same records
//! ([`decode`], the clients'). The layout itself is specified in `proto/queens.proto`.
//!
//! Boards come in lexicographic order, so neighbours share long prefixes: at n = 16 a board
//! sends 6.9 of its 16 columns on average, plus its prefix length, in 4-bit units: about 4.1
//! bytes a board against 16. Column n-1 is never sent (a solution's columns are a
//! permutation: the last is the one the others leave free).
//!
//! Not here: which field of a response carries what (the stream's encoder, the client's
//! `records`).

/// Largest `n` whose units are 4 bits (two a byte); larger boards use a byte a unit.
pub const NIBBLE_MAX_N: usize = 16;

/// Why a `FrontCoded` message cannot be read back into boards.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FrontError {
    /// The data is shorter or longer than its prefix lengths say.
    #[error("front-coded data holds {got} bytes where its {boards} boards need {want}")]
    Length {
        /// Boards the message says it holds.
        boards: usize,
        /// Bytes the data has.
        got: usize,
        /// Bytes its prefix lengths call for.
        want: usize,
    },
    /// A sent column of n or more.
    #[error("front-coded data of n = {n} holds a column of n or more")]
    Column {
        /// Board size.
        n: usize,
    },
    /// A unit that cannot be what it stands for: a prefix longer than n - 1, a first board
    /// with a prefix, a last column (the one the others leave free) of n or more.
    #[error("front-coded data of n = {n} is malformed at board {board}")]
    Malformed {
        /// Board size.
        n: usize,
        /// The board at fault (0 = the message's first).
        board: usize,
    },
}

/// Writes messages of records as front-coded data, reusing its buffers from one message to
/// the next.
#[derive(Clone, Debug, Default)]
pub struct FrontEncoder {
    /// The units of the message being written: prefix lengths, then the columns.
    units: Vec<u8>,
}

impl FrontEncoder {
    /// Appends to `out` the `data` of the `FrontCoded` message holding `records`: whole
    /// `n`-byte records (1 <= n <= 32), each a permutation of 0 .. n-1.
    pub fn encode(&mut self, n: usize, records: &[u8], out: &mut Vec<u8>) {
        assert!(
            n >= 1 && records.len().is_multiple_of(n),
            "whole records of n = {n}"
        );
        let boards = records.len() / n;
        let units = &mut self.units;
        units.clear();
        // Prefix lengths first, counting how many boards have each.
        let mut with_prefix = [0usize; 33];
        let mut previous: &[u8] = &[];
        for record in records.chunks_exact(n) {
            let shared = if previous.is_empty() {
                0
            } else {
                shared_prefix(previous, record)
            };
            with_prefix[shared] += 1;
            units.push(shared as u8);
            previous = record;
        }
        // Column c is sent by the boards whose prefix is at most c: where each column's
        // units start.
        let mut at = [0usize; 32];
        let (mut next, mut sending) = (boards, 0);
        for (c, start) in at.iter_mut().enumerate().take(n - 1) {
            sending += with_prefix[c];
            *start = next;
            next += sending;
        }
        units.resize(next, 0);
        for (i, record) in records.chunks_exact(n).enumerate() {
            let shared = usize::from(units[i]);
            for (c, &column) in record.iter().enumerate().take(n - 1).skip(shared) {
                units[at[c]] = column;
                at[c] += 1;
            }
        }
        if n <= NIBBLE_MAX_N {
            out.reserve(units.len().div_ceil(2));
            let pairs = units.chunks_exact(2);
            let odd = pairs.remainder().first().map(|&u| u << 4);
            out.extend(pairs.map(|p| p[0] << 4 | p[1]));
            out.extend(odd);
        } else {
            out.extend_from_slice(units);
        }
    }
}

/// How many leading columns `b` shares with `a`, at most n - 1 (two different boards of n
/// columns share at most n - 2; the last column follows from the others).
#[inline]
fn shared_prefix(a: &[u8], b: &[u8]) -> usize {
    let n = a.len();
    a[..n - 1]
        .iter()
        .zip(&b[..n - 1])
        .position(|(x, y)| x != y)
        .unwrap_or(n - 1)
}

/// Appends to `out` the `boards` records of size `n` (1 <= n <= 32) that the front-coded
/// `data` holds; on an error `out` may hold part of them.
pub fn decode(n: usize, boards: usize, data: &[u8], out: &mut Vec<u8>) -> Result<(), FrontError> {
    assert!((1..=32).contains(&n), "boards have 1 to 32 rows");
    let nibbles = n <= NIBBLE_MAX_N;
    let want_bytes = |units: usize| if nibbles { units.div_ceil(2) } else { units };
    let length = |want_units: usize| FrontError::Length {
        boards,
        got: data.len(),
        want: want_bytes(want_units),
    };
    let malformed = |board| FrontError::Malformed { n, board };
    // The units, one a byte (a pass the compiler vectorises).
    let mut unpacked = Vec::new();
    let units: &[u8] = if nibbles {
        unpacked.resize(data.len() * 2, 0);
        for (pair, &byte) in unpacked.chunks_exact_mut(2).zip(data) {
            pair[0] = byte >> 4;
            pair[1] = byte & 15;
        }
        &unpacked
    } else {
        data
    };
    if boards > units.len() {
        return Err(length(boards));
    }
    let mut with_prefix = [0usize; 33];
    for (i, &shared) in units[..boards].iter().enumerate() {
        let shared = usize::from(shared);
        if shared > n - 1 || (i == 0 && shared != 0) {
            return Err(malformed(i));
        }
        with_prefix[shared] += 1;
    }
    let mut at = [0usize; 32];
    let (mut next, mut sending) = (boards, 0);
    for (c, start) in at.iter_mut().enumerate().take(n - 1) {
        sending += with_prefix[c];
        *start = next;
        next += sending;
    }
    if data.len() != want_bytes(next) {
        return Err(length(next));
    }
    if units[boards..next].iter().any(|&u| usize::from(u) >= n) {
        return Err(FrontError::Column { n });
    }
    let free: u8 = (0..n as u8).fold(0, |x, c| x ^ c);
    out.reserve(boards * n);
    // The board being read, and the running XOR of its first columns (xors[c]: of 0..c).
    let mut board = [0u8; 32];
    let mut xors = [0u8; 33];
    for (i, &shared) in units[..boards].iter().enumerate() {
        for c in usize::from(shared)..n - 1 {
            let value = units[at[c]];
            at[c] += 1;
            board[c] = value;
            xors[c + 1] = xors[c] ^ value;
        }
        let last = free ^ xors[n - 1];
        if usize::from(last) >= n {
            return Err(malformed(i));
        }
        board[n - 1] = last;
        out.extend_from_slice(&board[..n]);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::solver::{Problem, Shard, Sink, enumerate};
    use std::ops::ControlFlow;

    /// Every solution of `n`, as records in the server's order.
    fn solutions(n: u32) -> Vec<u8> {
        struct Records(Vec<u8>);
        impl Sink for Records {
            fn push(&mut self, columns: &[u8]) -> ControlFlow<()> {
                self.0.extend_from_slice(columns);
                ControlFlow::Continue(())
            }
        }
        let problem = Problem::new(n, &[], false, Shard::WHOLE).expect("valid");
        let mut sink = Records(Vec::new());
        let _ = enumerate(&problem, None, None, &mut sink);
        sink.0
    }

    fn round_trip(n: usize, records: &[u8]) -> Vec<u8> {
        let mut data = Vec::new();
        FrontEncoder::default().encode(n, records, &mut data);
        let mut back = Vec::new();
        decode(n, records.len() / n, &data, &mut back).expect("decodes");
        back
    }

    #[test]
    fn every_cut_of_the_solutions_reads_back_as_sent() {
        for n in 1..=10 {
            let all = solutions(n as u32);
            let boards = all.len() / n;
            for per in [1, 2, 3, 7, 64, boards.max(1)] {
                for message in all.chunks(per * n) {
                    assert_eq!(round_trip(n, message), message, "n = {n}, {per} a message");
                }
            }
        }
    }

    #[test]
    fn large_boards_take_a_byte_a_unit_and_small_ones_half() {
        // Permutations in increasing order, not solutions: the layout does not care.
        for n in [16usize, 17, 24, 32] {
            let mut records = Vec::new();
            for shift in 0..20 {
                let mut board: Vec<u8> = (0..n as u8).collect();
                board[n - 3..].rotate_left(shift % 3);
                board.swap(n / 2, n / 2 + shift % (n / 2 - 1));
                records.extend(board);
            }
            assert_eq!(round_trip(n, &records), records, "n = {n}");
        }
        let first: Vec<u8> = (0..16).collect();
        let mut data = Vec::new();
        FrontEncoder::default().encode(16, &first, &mut data);
        // One prefix unit (0) and 15 columns: 16 units, 8 bytes.
        assert_eq!(data, [0x00, 0x12, 0x34, 0x56, 0x78, 0x9a, 0xbc, 0xde]);
        let first: Vec<u8> = (0..17).collect();
        data.clear();
        FrontEncoder::default().encode(17, &first, &mut data);
        assert_eq!(data.len(), 17);
    }

    #[test]
    fn n_12_takes_under_a_third_of_the_records() {
        let all = solutions(12);
        let mut data = Vec::new();
        let mut encoder = FrontEncoder::default();
        for message in all.chunks(4096 * 12) {
            encoder.encode(12, message, &mut data);
        }
        let ratio = data.len() as f64 / all.len() as f64;
        assert!(ratio < 0.33, "{ratio:.3} of the records' bytes");
    }

    #[test]
    fn malformed_data_is_an_error_never_a_panic() {
        let all = solutions(8);
        let mut data = Vec::new();
        FrontEncoder::default().encode(8, &all, &mut data);
        let boards = all.len() / 8;
        let mut out = Vec::new();
        // Short, long, wrong counts.
        for (count, bytes) in [
            (boards, &data[..data.len() - 1]),
            (boards + 1, &data[..]),
            (boards - 1, &data[..]),
            (1, &[][..]),
            (usize::MAX / 2, &data[..]),
        ] {
            assert!(decode(8, count, bytes, &mut out).is_err());
        }
        assert!(matches!(
            decode(8, 0, &[], &mut out),
            Ok(()) if out.is_empty()
        ));
        // A first board with a prefix, a prefix past n - 1, a column of n or more.
        assert!(decode(8, 1, &[0x10, 0, 0, 0], &mut out).is_err());
        assert!(decode(8, 2, &[0x08, 0, 0, 0, 0], &mut out).is_err());
        assert!(decode(8, 1, &[0x09, 0, 0, 0], &mut out).is_err());
        // Every single-byte corruption decodes or fails, without panicking.
        for at in 0..data.len() {
            for flip in [1u8, 0x10, 0xff] {
                let mut bad = data.clone();
                bad[at] ^= flip;
                out.clear();
                let _ = decode(8, boards, &bad, &mut out);
            }
        }
    }
}
