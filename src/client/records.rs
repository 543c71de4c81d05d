//! An Enumerate response's boards as packed records, whichever way the server sent them,
//! and the [`Layout`] a client asks them in. Writing them as text is `crate::render`'s.

use crate::pb::{EnumerateResponse, PackedLayout};
use crate::wire::front;
use std::borrow::Cow;

/// How a client asks Enumerate's packed boards to travel.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum Layout {
    /// Consecutive n-byte records, used as they come: the fastest where the link is faster
    /// than the search (1 Gbit/s and up on 2 cores).
    #[default]
    Records,
    /// Shared prefixes left out (about a quarter of the bytes at n = 16), decoded by the
    /// client: the form for slower links (several times the boards a second over 100 Mbit/s).
    FrontCoded,
}

impl Layout {
    /// The request's `layout` field for this layout.
    pub fn wire(self) -> i32 {
        match self {
            Layout::FrontCoded => PackedLayout::FrontCoded as i32,
            Layout::Records => PackedLayout::Records as i32,
        }
    }
}

/// The boards of one Enumerate response of size `n` as `n`-byte records (byte r = the
/// column of row r): its `packed` bytes as they are, its front-coded boards decoded, or,
/// from a server that predates `packed` and sent `Board` messages, their columns. A
/// front-coded message that does not decode is the server's fault: INTERNAL.
pub fn records(n: usize, message: &EnumerateResponse) -> Result<Cow<'_, [u8]>, tonic::Status> {
    if let Some(coded) = &message.front_coded {
        let mut records = Vec::new();
        if !(1..=32).contains(&n) {
            return Err(tonic::Status::internal(format!(
                "front-coded boards of n = {n}"
            )));
        }
        front::decode(n, coded.boards as usize, &coded.data, &mut records)
            .map_err(|e| tonic::Status::internal(format!("malformed response: {e}")))?;
        return Ok(Cow::Owned(records));
    }
    if message.boards.is_empty() {
        return Ok(Cow::Borrowed(&message.packed));
    }
    let mut records = Vec::with_capacity(message.boards.len() * n);
    for board in &message.boards {
        records.extend(board.columns.iter().map(|&c| c as u8));
    }
    Ok(Cow::Owned(records))
}
