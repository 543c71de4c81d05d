//! An Enumerate response's boards as packed records, whichever way the server sent them.
//! Writing them as text is `crate::render`'s.

use crate::pb::EnumerateResponse;
use std::borrow::Cow;

/// The boards of one Enumerate response of size `n` as `n`-byte records (byte r = the
/// column of row r): its `packed` bytes as they are, or, from a server that predates
/// `packed` and sent `Board` messages, their columns.
pub fn records(n: usize, message: &EnumerateResponse) -> Cow<'_, [u8]> {
    if message.boards.is_empty() {
        return Cow::Borrowed(&message.packed);
    }
    let mut records = Vec::with_capacity(message.boards.len() * n);
    for board in &message.boards {
        records.extend(board.columns.iter().map(|&c| c as u8));
    }
    Cow::Owned(records)
}
