//! A wide key shared by a count's engines ([`Share`]): where its next chunk of top halves
//! starts, one cursor per key that every engine on the key fills its chunks from, and its
//! last chunk cut in pieces on the sieve's first bits ([`Split`]), which the engines on it
//! take one at a time from a second cursor, largest first. An engine only joins a key when
//! it has no part left to take (`mod.rs`'s helping parts come after every key), so a key
//! that no one joins costs an uncontended lock per chunk and per piece. What is counted with
//! the chunks is `wide.rs`'s; the bands they come from `bands.rs`'s.

use super::bands::KeyBands;
use super::keys::Key;
use super::sample::densest;
use super::word::Layout;
use crate::simd::Tier;
use crate::sync::lock;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

/// Cuts a shared key's last chunk is split on at most: its pieces hold about 1/3, 2/9,
/// 4/27, ... of its pairs and the rest (2/3)^6, about 9%, so that the engines on it end
/// within a small piece of each other.
pub(super) const CUTS: usize = 6;

/// Where each cut's rest of a [`Split`] chunk's top halves ends (`[0]`: all of them):
/// piece 0 is `..ends[cuts]`, piece `i` is `ends[i]..ends[i - 1]`.
pub(super) type Ends = [usize; CUTS + 1];

/// One wide key's count, shared by the engines that take its chunks.
pub(super) struct Share {
    /// The key.
    pub(super) key: Key,
    /// Its cursors.
    state: Mutex<State>,
    /// The count's shared keys no engine has begun yet.
    keys: Arc<Unstarted>,
}

/// How many of a count's shared keys no engine has begun, and how many engines it has.
pub(super) struct Unstarted {
    /// The keys not begun.
    left: AtomicUsize,
    /// The count's engines.
    engines: usize,
}

impl Unstarted {
    /// `keys` keys not begun, on `engines` engines.
    pub(super) fn new(keys: usize, engines: usize) -> Unstarted {
        Unstarted {
            left: AtomicUsize::new(keys),
            engines,
        }
    }
}

/// Where a shared key's count stands.
#[derive(Default)]
struct State {
    /// Where its next chunk of top halves starts, once an engine has begun it.
    next: Option<(usize, usize)>,
    /// Whether every chunk of its top halves has been taken.
    taken: bool,
    /// The last chunk's pieces, once cut.
    split: Option<Split>,
    /// Of them, how many have been taken.
    pieces_taken: usize,
    /// Whether the engine that took the last chunk has cut it or will not.
    settled: bool,
}

/// A chunk cut in pieces on the bits the sieve would split it on first: its top halves
/// from one place of the key's bands to another ([`KeyBands::span`]) and the cuts. Piece 0
/// is the tops with none of the cuts' bits, paired with every bottom half; piece `i` the
/// tops with bit `i - 1` and none before it, paired with the bottoms without it (those with
/// it cannot fit), so the pieces' pairs add up to the chunk's.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Split {
    /// Where the chunk's top halves start.
    pub(super) from: (usize, usize),
    /// Where they end.
    pub(super) to: (usize, usize),
    /// The cuts' bits, in the order they were chosen.
    bits: [u64; CUTS],
    /// How many cuts.
    cuts: usize,
    /// The pieces in the order they are taken: the largest (tops times bottoms) first.
    order: [usize; CUTS + 1],
}

/// A chunk an engine took from a [`Share`]: where its top halves start and end, and
/// whether it is the key's last.
#[derive(Clone, Copy)]
pub(super) struct Chunk {
    /// Where its top halves start.
    pub(super) from: (usize, usize),
    /// Where they end.
    pub(super) to: (usize, usize),
    /// Whether it is the key's last: its engine must [`Share::split`] or [`Share::settle`].
    pub(super) last: bool,
}

/// What an engine out of parts may do for a [`Share`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Help {
    /// Take chunks of its top halves.
    Chunks,
    /// Take pieces of its last chunk.
    Pieces,
    /// Wait: its engine has not begun it yet, or not settled whether it cuts the last chunk.
    Wait,
    /// Nothing: it is over for helpers.
    Nothing,
}

impl Share {
    /// A share of `key`, not begun, one of the count's keys that `keys` counts.
    pub(super) fn new(key: Key, keys: Arc<Unstarted>) -> Share {
        Share {
            key,
            state: Mutex::default(),
            keys,
        }
    }

    /// Whether fewer of the count's shared keys than it has engines are left to begin:
    /// only then may an engine soon run out of keys and join this one, so only then does
    /// cutting its last chunk pay (a part of n = 27 in 2^20 holds about 67 keys).
    pub(super) fn few_left(&self) -> bool {
        self.keys.left.load(Ordering::Relaxed) < self.keys.engines
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
        let from = state.next.unwrap_or_else(|| {
            let begun = |left: usize| left.checked_sub(1);
            let _ = (self.keys.left).fetch_update(Ordering::Relaxed, Ordering::Relaxed, begun);
            (0, 0)
        });
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

    /// Hands the last chunk's pieces to the engines on the key.
    pub(super) fn split(&self, split: Split) {
        let mut state = lock(&self.state);
        state.split = Some(split);
        state.settled = true;
    }

    /// Takes the next piece of the last chunk, if one is left.
    pub(super) fn next_piece(&self) -> Option<usize> {
        let mut state = lock(&self.state);
        let split = state.split?;
        let piece = *split.order[..=split.cuts].get(state.pieces_taken)?;
        state.pieces_taken += 1;
        Some(piece)
    }

    /// Says the last chunk will not be cut; also when an engine on the key failed, so that
    /// no helper waits for it.
    pub(super) fn settle(&self) {
        let mut state = lock(&self.state);
        state.taken = true;
        state.settled = true;
    }

    /// What an engine out of parts may do for this key now.
    pub(super) fn help(&self) -> Help {
        let state = lock(&self.state);
        let left = state.split.filter(|split| state.pieces_taken <= split.cuts);
        match (state.next, state.taken, left, state.settled) {
            (None, false, ..) => Help::Wait,
            (_, false, ..) => Help::Chunks,
            (_, true, Some(_), _) => Help::Pieces,
            (_, true, None, false) => Help::Wait,
            (_, true, None, true) => Help::Nothing,
        }
    }

    /// The last chunk's cut, while pieces of it are left to take.
    pub(super) fn pieces(&self) -> Option<Split> {
        let state = lock(&self.state);
        state.split.filter(|split| state.pieces_taken <= split.cuts)
    }
}

impl Split {
    /// Cuts the chunk of `tops` (sorted; the key's halves from `from` to `to`) against
    /// `bottoms` (all of the key's, ready): on the bit most sampled pairs of the rest share,
    /// up to [`CUTS`] times, each cut's tops moved after the rest in their order (`scratch`
    /// lent, with room for them); and the pieces ordered by their tops times bottoms.
    pub(super) fn choose(
        (from, to): ((usize, usize), (usize, usize)),
        tops: &mut [u64],
        bottoms: &[u64],
        scratch: &mut Vec<u64>,
        (layout, tier): (Layout, Tier),
    ) -> (Split, Ends) {
        let mut split = Split {
            from,
            to,
            bits: [0; CUTS],
            cuts: 0,
            order: [0; CUTS + 1],
        };
        let mut ends = [tops.len(); CUTS + 1];
        while split.cuts < CUTS {
            let rest = &mut tops[..ends[split.cuts]];
            let Some(bit) = densest(rest, bottoms, layout, tier) else {
                break;
            };
            split.bits[split.cuts] = bit;
            split.cuts += 1;
            ends[split.cuts] = partition(rest, bit, scratch);
        }
        let mut sizes = [0u64; CUTS + 1];
        for (piece, size) in sizes.iter_mut().enumerate().take(split.cuts + 1) {
            let (tops, bit) = split.piece(piece, &ends);
            let fitting = bottoms.iter().filter(|&&y| y & bit == 0).count();
            *size = tops.len() as u64 * fitting as u64;
        }
        for (place, slot) in split.order.iter_mut().enumerate() {
            *slot = place;
        }
        split.order[..=split.cuts].sort_by_key(|&piece| std::cmp::Reverse(sizes[piece]));
        (split, ends)
    }

    /// Cuts `tops` (the chunk's, sorted) as [`Split::choose`] cut them, on its bits.
    pub(super) fn cut(&self, tops: &mut [u64], scratch: &mut Vec<u64>) -> Ends {
        let mut ends = [tops.len(); CUTS + 1];
        for cut in 0..self.cuts {
            ends[cut + 1] = partition(&mut tops[..ends[cut]], self.bits[cut], scratch);
        }
        ends
    }

    /// Piece `piece`'s tops in the chunk cut as `ends` says, and the bit its bottoms must
    /// not have (none for piece 0).
    pub(super) fn piece(&self, piece: usize, ends: &Ends) -> (std::ops::Range<usize>, u64) {
        match piece {
            0 => (0..ends[self.cuts], 0),
            _ => (ends[piece]..ends[piece - 1], self.bits[piece - 1]),
        }
    }
}

/// Moves the words of `words` with `bit` after those without it, each in their order
/// (`scratch` lent, with room for them); where those with it start.
fn partition(words: &mut [u64], bit: u64, scratch: &mut Vec<u64>) -> usize {
    scratch.clear();
    let mut kept = 0;
    for at in 0..words.len() {
        let word = words[at];
        if word & bit == 0 {
            words[kept] = word;
            kept += 1;
        } else {
            scratch.push(word);
        }
    }
    words[kept..].copy_from_slice(scratch);
    kept
}
