//! A wide key shared by a count's engines ([`Share`]): where its next chunk of top halves
//! starts, one cursor per key that every engine on the key fills its chunks from, and the
//! side of its last chunk that the engine counting it offers to an engine out of parts
//! ([`Offer`]). An engine only joins a key when it has no part left to take (`mod.rs`'s
//! helping parts come after every key), so a key that no one joins costs one uncontended
//! lock per chunk. What is counted with the chunks is `wide.rs`'s; the bands they come from
//! `bands.rs`'s.

use super::bands::KeyBands;
use super::keys::Key;
use crate::sync::lock;
use std::sync::Mutex;

/// One wide key's count, shared by the engines that take its chunks.
pub(super) struct Share {
    /// The key.
    pub(super) key: Key,
    /// Its cursor and offer.
    state: Mutex<State>,
}

/// Where a shared key's count stands.
#[derive(Default)]
struct State {
    /// Where its next chunk of top halves starts, once an engine has begun it.
    next: Option<(usize, usize)>,
    /// Whether every chunk of its top halves has been taken.
    taken: bool,
    /// The side of the last chunk offered and not yet taken.
    offer: Option<Offer>,
    /// Whether the engine that took the last chunk has offered its side or will not.
    settled: bool,
}

/// The side of a chunk with a cut's bit (`Piece::With`): the chunk's top halves from one
/// place of the key's bands to another ([`KeyBands::span`]) and the bit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Offer {
    /// Where the chunk's top halves start.
    pub(super) from: (usize, usize),
    /// Where they end.
    pub(super) to: (usize, usize),
    /// The cut's bit.
    pub(super) bit: u64,
}

/// A chunk an engine took from a [`Share`]: where its top halves start and end, and
/// whether it is the key's last.
#[derive(Clone, Copy)]
pub(super) struct Chunk {
    /// Where its top halves start.
    pub(super) from: (usize, usize),
    /// Where they end.
    pub(super) to: (usize, usize),
    /// Whether it is the key's last: its engine must [`Share::offer`] or [`Share::settle`].
    pub(super) last: bool,
}

/// What an engine out of parts may do for a [`Share`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Help {
    /// Take chunks of its top halves.
    Chunks,
    /// Take the offered side of its last chunk.
    Offered,
    /// Wait: its engine has not begun it yet, or not settled whether it offers.
    Wait,
    /// Nothing: it is over for helpers.
    Nothing,
}

impl Share {
    /// A share of `key`, not begun.
    pub(super) fn new(key: Key) -> Share {
        Share {
            key,
            state: Mutex::default(),
        }
    }

    /// Takes the key's next chunk: sets `top` (bands of this key) to go on from where the
    /// last chunk ended and runs `fill` on it, holding the cursor meanwhile; `None` when
    /// every chunk is taken (`fill`'s error as it is, the cursor where it was).
    pub(super) fn next_chunk<E>(
        &self,
        top: &mut KeyBands,
        fill: impl FnOnce(&mut KeyBands) -> Result<(), E>,
    ) -> Result<Option<Chunk>, E> {
        let mut state = lock(&self.state);
        if state.taken {
            return Ok(None);
        }
        let from = state.next.unwrap_or((0, 0));
        top.span(from, None);
        fill(top)?;
        state.next = Some(top.at());
        state.taken = top.done();
        Ok(Some(Chunk {
            from,
            to: top.at(),
            last: top.done(),
        }))
    }

    /// Offers a side of the last chunk (its engine counts the other side meanwhile).
    pub(super) fn offer(&self, offer: Offer) {
        let mut state = lock(&self.state);
        state.offer = Some(offer);
        state.settled = true;
    }

    /// Takes the offered side back: whether no helper took it (its engine then counts it).
    pub(super) fn take_back(&self) -> bool {
        lock(&self.state).offer.take().is_some()
    }

    /// Says the last chunk's side will not be offered; also when an engine on the key
    /// failed, so that no helper waits for it.
    pub(super) fn settle(&self) {
        let mut state = lock(&self.state);
        state.taken = true;
        state.settled = true;
    }

    /// What an engine out of parts may do for this key now.
    pub(super) fn help(&self) -> Help {
        let state = lock(&self.state);
        match (state.next, state.taken, state.offer, state.settled) {
            (None, false, ..) => Help::Wait,
            (_, false, ..) => Help::Chunks,
            (_, true, Some(_), _) => Help::Offered,
            (_, true, None, false) => Help::Wait,
            (_, true, None, true) => Help::Nothing,
        }
    }

    /// Takes the offered side, if it is still there.
    pub(super) fn take_offer(&self) -> Option<Offer> {
        lock(&self.state).offer.take()
    }
}
