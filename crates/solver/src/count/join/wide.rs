//! The join past the tables (n = 26 to 28, the wide path): no tables, a key's halves made
//! per key from two bands, a chunk at a time. There a band of seven rows has hundreds of
//! millions of placements (n = 26: 632 M, n = 28: 1.28 G), so tables of every key's bands
//! would take 5.5 to 29 GiB; a key's own bands are small (n = 28: a few million placements
//! each), so each key lists them itself: the placements of a half's first rows (heads) and
//! of its last rows (tails, placed as if no head were there), grouped by the columns a head
//! takes, and a half is a head and a tail of one group whose test words share no bit (the
//! head's diagonals on the tail's first row, the tail's queens' traced back to it). A key's
//! lists reach tens of millions of words (n = 28: hundreds of millions), so they are made
//! and counted in chunks: the top halves' list stops when full and goes on from there for
//! the next chunk; each chunk of tops meets each chunk of the bottom halves (kept whole when
//! they fit one, made again per chunk of the tops when not), and the pairs of every chunk
//! pair add up. Making the halves takes about a tenth of a part's time (n = 27), the sieve
//! the rest. The words are laid out as `word.rs`'s [`Layout::wide`] says (five-bit balances
//! above `2n - 2` bits of diagonals), counted by the same sieve (`sieve.rs`).
//! Not here: the keys (`keys.rs`), the parts and their plumbing (`mod.rs`), the key's bands
//! and the halves they make (`bands.rs`), the tables' path (`tables.rs`, `halves.rs`), the
//! one mirror and sort of both paths (`word.rs`).

use super::bands::KeyBands;
#[cfg(test)]
use super::keys::Key;
use super::memory::Allowance;
use super::sample::densest;
use super::share::{Ends, Help, Share, Split};
use super::sieve::{Piece, Sieve};
use super::sizes::Sizes;
use super::word::{Layout, mirror, sort_by_byte};
use super::work::{Task, Work};
use crate::counts::CountError;
use crate::pool::give_way;
use crate::simd::Tier;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

/// Bytes an engine's lists may take on the wide path at most (1.75 GiB: the three lists of
/// [`CHUNK`] words, the key's bands, up to about 360 MiB at n = 28, and the sieve's blocks).
/// At n = 28 an engine took about 1.5 GiB when nothing held it; held to 1.5 GiB, the sieve
/// ran short of room so often that shard 100 of 2^22 took over four times as long. Two
/// engines and their process took up to 3.35 GiB at n = 28 (measured); the allowances
/// bound them at 3.5 GiB besides the keys and the process.
pub(crate) const ENGINE_BYTES: usize = 7 << 28;

/// Words a wide key's list holds at most at once (2^24: 128 MiB): the top halves' chunk,
/// the bottom halves' and the room to sort either, 384 MiB, and the sieve's blocks in what
/// is left of an engine's allowance.
pub(crate) const CHUNK: usize = 1 << 24;

/// Halves of each list a key's cut in pieces takes its bit from ([`Wide::cut_bit`]): the
/// first ones its bands make, the same whatever the chunks and the engine's room.
const CUT_SAMPLE: usize = 1 << 12;

/// Top halves a shared key's last chunk holds at least for its engine to cut it in pieces
/// that engines out of parts may take ([`Split`]): below that a helper's own bands and
/// halves would cost more than it spares.
pub(super) const OFFER_MIN: usize = 1 << 16;

/// The join of one size on the wide path: no tables, only the board's sizes and how long a
/// key's lists grow.
pub(super) struct Wide {
    /// The board's sizes.
    pub(super) sizes: Sizes,
    /// The most words a key's list holds at once.
    pub(super) chunk: usize,
    /// The fewest top halves a shared key's last chunk is cut in pieces with ([`OFFER_MIN`]).
    pub(super) offer_min: usize,
}

impl Wide {
    /// The wide path for size `n`, its lists in chunks of at most `chunk` words.
    pub(super) fn new(n: u32, chunk: usize) -> Wide {
        Wide {
            sizes: Sizes::new(n),
            chunk,
            offer_min: OFFER_MIN,
        }
    }

    /// The fitting pairs of the task's key's halves on the wide path (its piece's), its
    /// lists in `work` (see the module), each chunk pair's handed to `tally` as it is
    /// counted; with the task's share, only those of the chunks this engine takes from it
    /// (and of the pieces of the last one it takes). `Cancelled` if the
    /// task's flag is raised meanwhile, `OutOfMemory` if the bands or not one half fit what
    /// `work`'s allowance has left.
    pub(super) fn pairs(
        &self,
        task: Task,
        work: &mut Work,
        tally: &mut dyn FnMut(u64),
    ) -> Result<u64, CountError> {
        let counted = self.pairs_of(task, None, work, tally);
        if let (Err(_), Some(share)) = (&counted, task.share) {
            share.settle();
        }
        counted
    }

    /// [`Wide::pairs`], or with a `split` the pairs of the pieces of that chunk this engine
    /// takes from the task's share.
    pub(super) fn pairs_of(
        &self,
        task: Task,
        split: Option<Split>,
        work: &mut Work,
        tally: &mut dyn FnMut(u64),
    ) -> Result<u64, CountError> {
        let (key, piece) = (task.key, task.piece);
        let every = [!0; 16];
        let [mut top, mut bottom] = std::mem::take(&mut work.bands);
        let mut bands = |work: &mut Work| {
            let sizes = &self.sizes;
            top.make(sizes, key.top, key.middle, &every, &mut work.allowance)?;
            bottom.make(sizes, key.bottom, key.middle, &every, &mut work.allowance)
        };
        // The lists and the sieve make do with whatever room the bands leave.
        let counted = work
            .with_spare_room(&mut bands)
            .and_then(|()| match (split, piece) {
                (Some(split), _) => {
                    self.pieces_pairs(task, [&mut top, &mut bottom], split, work, tally)
                }
                (None, Piece::Whole) => {
                    self.chunk_pairs(task, &mut top, &mut bottom, 0, work, tally)
                }
                _ => self
                    .cut_bit(&mut top, &mut bottom, task, work)
                    .and_then(|bit| {
                        self.chunk_pairs(task, &mut top, &mut bottom, bit, work, tally)
                    }),
            });
        work.bands = [top, bottom];
        counted
    }

    /// What an engine out of parts counts of the count's shared keys (`shares`): the chunks
    /// of the first that has some left to take, else pieces of a last chunk, waiting while
    /// a key has not begun or its last chunk's engine not settled whether it cuts it; their pairs times their keys' weights (handed to `tally` as counted), in
    /// `tier`, its lists in `work`. `Cancelled` if `cancel` is raised meanwhile.
    pub(super) fn help(
        &self,
        shares: &[Arc<Share>],
        tier: Tier,
        cancel: &AtomicBool,
        work: &mut Work,
        tally: &mut dyn FnMut(u64),
    ) -> Result<u64, CountError> {
        let mut solutions = 0u64;
        loop {
            if cancel.load(Ordering::Relaxed) {
                return Err(CountError::Cancelled);
            }
            let helps = || shares.iter().map(|share| (share.help(), share));
            let chosen = helps()
                .find(|(help, _)| *help == Help::Chunks)
                .or_else(|| helps().find(|(help, _)| *help == Help::Pieces));
            let Some((help, share)) = chosen else {
                if helps().any(|(help, _)| help == Help::Wait) {
                    give_way();
                    std::thread::sleep(std::time::Duration::from_micros(200));
                    continue;
                }
                return Ok(solutions);
            };
            let weight = share.key.weight;
            let task = Task {
                key: &share.key,
                piece: Piece::Whole,
                tier,
                cancel,
                share: Some(&**share),
            };
            let mut weighed = |pairs: u64| tally(pairs.saturating_mul(weight));
            let pairs = match help {
                Help::Chunks => self.pairs(task, work, &mut weighed)?,
                _ => match share.pieces() {
                    Some(split) => self.pairs_of(task, Some(split), work, &mut weighed)?,
                    None => 0,
                },
            };
            solutions = pairs
                .checked_mul(weight)
                .and_then(|more| solutions.checked_add(more))
                .ok_or(CountError::Overflow)?;
        }
    }

    /// The bit a key's cut in pieces is on: the one [`densest`] picks from the first
    /// [`CUT_SAMPLE`] halves of `top` and of `bottom` (then listed again from the first),
    /// the same for every piece whatever its engine's room; `OutOfMemory` if not all of
    /// those find room.
    fn cut_bit(
        &self,
        top: &mut KeyBands,
        bottom: &mut KeyBands,
        task: Task,
        work: &mut Work,
    ) -> Result<u64, CountError> {
        let (tier, cancel) = (task.tier, task.cancel);
        let (tops, bottoms, scratch, _, allowance) = work.lists();
        for (bands, list) in [(&mut *top, &mut *tops), (&mut *bottom, &mut *bottoms)] {
            bands.restart();
            bands.fill(CUT_SAMPLE, list, allowance, cancel, tier)?;
            if list.len() < CUT_SAMPLE && !bands.done() {
                return Err(CountError::OutOfMemory {
                    bytes: (CUT_SAMPLE * size_of::<u64>()) as u64,
                });
            }
            bands.restart();
        }
        self.ready_bottoms(bottoms, scratch, allowance)?;
        Ok(densest(tops, bottoms, Layout::wide(self.sizes.n), tier).unwrap_or(0))
    }

    /// The pairs of the halves `top` and `bottom` list, chunk by chunk (see the module), of
    /// them only those this side of the task's cut on `bit` ([`Piece`]); with the task's
    /// share, of the chunks taken from it, the last one cut in pieces that the engines on
    /// the key take one at a time.
    fn chunk_pairs(
        &self,
        task: Task,
        top: &mut KeyBands,
        bottom: &mut KeyBands,
        bit: u64,
        work: &mut Work,
        tally: &mut dyn FnMut(u64),
    ) -> Result<u64, CountError> {
        let (key, piece, tier, cancel) = (task.key, task.piece, task.tier, task.cancel);
        let layout = Layout::wide(self.sizes.n);
        let (tops, bottoms, scratch, sieve, allowance) = work.lists();
        let mut total = 0u64;
        // One chunk pair's pairs, added to the total and handed to `tally`.
        let mut count =
            |tops: &[u64], bottoms: &[u64], sieve: &mut Sieve, allowance: &mut Allowance| {
                sieve.reset(self.sizes.middle_balance(key), tier, layout);
                let pairs = sieve.count(tops, bottoms, 0, cancel, allowance);
                tally(pairs);
                total = total.checked_add(pairs).ok_or(CountError::Overflow)?;
                Ok::<(), CountError>(())
            };
        // Whether `bottoms` holds all of the key's bottom halves, ready for the sieve (they
        // took one chunk); otherwise they are made again for each chunk of tops.
        let mut whole = false;
        loop {
            // The next chunk of tops; with a share, the last one's place in the bands.
            let mut fill = |top: &mut KeyBands| top.fill(self.chunk, tops, allowance, cancel, tier);
            let last = match task.share {
                None if top.done() => break,
                None => fill(top).map(|()| None)?,
                Some(share) => match share.next_chunk(top, &mut fill)? {
                    None => break,
                    Some(chunk) => chunk.last.then_some((share, chunk)),
                },
            };
            if tops.is_empty() {
                last.inspect(|(share, _)| share.settle());
                continue;
            }
            sort_by_byte(tops, layout.balance, scratch, allowance)?;
            piece.keep_tops(bit, tops);
            if !whole {
                bottom.restart();
                let mut first = true;
                while !bottom.done() {
                    bottom.fill(self.chunk, bottoms, allowance, cancel, tier)?;
                    whole = first && bottom.done();
                    first = false;
                    self.ready_bottoms(bottoms, scratch, allowance)?;
                    piece.keep_bottoms(bit, bottoms);
                    if !whole {
                        count(tops, bottoms, sieve, allowance)?;
                    }
                }
            }
            // A shared key's last chunk, cut in pieces when the bottoms are whole (a helper
            // makes them once), the chunk is worth it and few keys are left to begin (an
            // engine out of keys may then come).
            let split = last
                .filter(|_| whole && piece == Piece::Whole && tops.len() >= self.offer_min)
                .filter(|(share, _)| share.few_left())
                .filter(|_| {
                    scratch.clear();
                    allowance
                        .reserve(scratch, tops.len().max(bottoms.len()))
                        .is_ok()
                });
            match split {
                Some((share, chunk)) => {
                    let at = (chunk.from, chunk.to);
                    let (split, ends) = Split::choose(at, tops, bottoms, scratch, (layout, tier));
                    share.split(split);
                    let mut counting =
                        |tops: &[u64], bottoms: &[u64]| count(tops, bottoms, sieve, allowance);
                    let lists = (&tops[..], &bottoms[..], &mut *scratch);
                    Self::count_pieces(share, &split, &ends, lists, &mut counting)?;
                }
                None => {
                    last.inspect(|(share, _)| share.settle());
                    if whole {
                        count(tops, bottoms, sieve, allowance)?;
                    }
                }
            }
            if cancel.load(Ordering::Relaxed) {
                return Err(CountError::Cancelled);
            }
        }
        Ok(total)
    }

    /// The pairs of the pieces of a shared key's cut last chunk (`split`) that this engine
    /// takes from the task's share, having made the chunk's tops and all of the bottom
    /// halves itself (none, and no piece taken, if its room holds not both whole: the
    /// engines on the key count them).
    fn pieces_pairs(
        &self,
        task: Task,
        [top, bottom]: [&mut KeyBands; 2],
        split: Split,
        work: &mut Work,
        tally: &mut dyn FnMut(u64),
    ) -> Result<u64, CountError> {
        let (key, tier, cancel) = (task.key, task.tier, task.cancel);
        let Some(share) = task.share else {
            return Ok(0);
        };
        let layout = Layout::wide(self.sizes.n);
        let (tops, bottoms, scratch, sieve, allowance) = work.lists();
        let mut lists = || {
            top.span(split.from, Some(split.to));
            top.fill(self.chunk, tops, allowance, cancel, tier)?;
            bottom.restart();
            bottom.fill(self.chunk, bottoms, allowance, cancel, tier)?;
            if !top.done() || !bottom.done() {
                return Ok(false);
            }
            sort_by_byte(tops, layout.balance, scratch, allowance)?;
            self.ready_bottoms(bottoms, scratch, allowance)?;
            scratch.clear();
            allowance.reserve(scratch, tops.len().max(bottoms.len()))?;
            Ok(true)
        };
        match lists() {
            Ok(true) => {}
            Ok(false) | Err(CountError::OutOfMemory { .. }) => return Ok(0),
            Err(error) => return Err(error),
        }
        let ends = split.cut(tops, scratch);
        let mut total = 0u64;
        let mut counting = |tops: &[u64], bottoms: &[u64]| {
            sieve.reset(self.sizes.middle_balance(key), tier, layout);
            let pairs = sieve.count(tops, bottoms, 0, cancel, allowance);
            tally(pairs);
            total = total.checked_add(pairs).ok_or(CountError::Overflow)?;
            Ok(())
        };
        Self::count_pieces(
            share,
            &split,
            &ends,
            (tops, bottoms, scratch),
            &mut counting,
        )?;
        Ok(total)
    }

    /// Counts the pieces of a cut chunk (its tops cut as `ends` says, all of the bottoms)
    /// that this engine takes from `share`, one at a time, by `count` (a piece's tops and
    /// its bottoms, copied into `scratch` without its bit).
    fn count_pieces(
        share: &Share,
        split: &Split,
        ends: &Ends,
        (tops, bottoms, scratch): (&[u64], &[u64], &mut Vec<u64>),
        count: &mut dyn FnMut(&[u64], &[u64]) -> Result<(), CountError>,
    ) -> Result<(), CountError> {
        while let Some(piece) = share.next_piece() {
            let (range, bit) = split.piece(piece, ends);
            if bit == 0 {
                count(&tops[range], bottoms)?;
            } else {
                scratch.clear();
                scratch.extend(bottoms.iter().filter(|&&y| y & bit == 0));
                count(&tops[range], scratch)?;
            }
        }
        Ok(())
    }

    /// Makes `words` (top halves' words of a key's bottom columns) ready for the sieve:
    /// mirrored, then sorted by their balance (`scratch` lent for the sort).
    fn ready_bottoms(
        &self,
        words: &mut Vec<u64>,
        scratch: &mut Vec<u64>,
        allowance: &mut Allowance,
    ) -> Result<(), CountError> {
        let layout = Layout::wide(self.sizes.n);
        mirror(words, self.sizes.n, layout);
        sort_by_byte(words, layout.balance + layout.width, scratch, allowance)
    }
}

#[cfg(test)]
impl Wide {
    /// The fitting pairs of `key`'s top halves whose first rows hold the columns `top` and
    /// bottom halves whose last rows (from the board's last up) hold `bottom`, as the wide
    /// path counts them (the same bands, words, mirror, sort and sieve), in `tier`; for
    /// tests that check a part of a large board against a search.
    pub(super) fn wide_pairs_from(
        &self,
        key: &Key,
        top: &[u32],
        bottom: &[u32],
        tier: Tier,
    ) -> Result<u64, CountError> {
        let layout = Layout::wide(self.sizes.n);
        let mut work = Work::new(usize::MAX);
        let fixed = |columns: &[u32]| {
            let mut rows = [!0u32; 16];
            for (row, &column) in columns.iter().enumerate() {
                rows[row] = 1 << column;
            }
            rows
        };
        let mut lists = [Vec::new(), Vec::new()];
        for ((columns, rows), out) in [(key.top, top), (key.bottom, bottom)]
            .into_iter()
            .zip(&mut lists)
        {
            let mut bands = KeyBands::default();
            let rows = fixed(rows);
            bands.make(&self.sizes, columns, key.middle, &rows, &mut work.allowance)?;
            while !bands.done() {
                let mut chunk = Vec::new();
                bands.fill(
                    usize::MAX,
                    &mut chunk,
                    &mut work.allowance,
                    &AtomicBool::new(false),
                    tier,
                )?;
                out.extend_from_slice(&chunk);
            }
        }
        let [mut tops, mut bottoms] = lists;
        let (_, _, scratch, sieve, allowance) = work.lists();
        self.ready_bottoms(&mut bottoms, scratch, allowance)?;
        sort_by_byte(&mut tops, layout.balance, scratch, allowance)?;
        sieve.reset(self.sizes.middle_balance(key), tier, layout);
        Ok(sieve.count(&tops, &bottoms, 0, &AtomicBool::new(false), allowance))
    }
}
