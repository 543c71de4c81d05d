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
//! pair add up. A chunk's lists are split in place (`sieve/in_place.rs`), so that they can
//! take most of an engine's room. Making the halves takes about a tenth
//! of a part's time (n = 27), the sieve the rest. The words are laid out as `word.rs`'s
//! [`Layout::wide`] says (five-bit balances above `2n - 2` bits of diagonals), counted by
//! the same sieve (`sieve.rs`). Not here: the keys (`keys.rs`), the parts and their
//! plumbing (`mod.rs`), the key's bands and the halves they make (`bands.rs`), the tables'
//! path (`tables.rs`, `halves.rs`), the one mirror of both paths (`word.rs`).

use super::bands::KeyBands;
#[cfg(test)]
use super::keys::Key;
use super::memory::Allowance;
use super::sample::densest;
use super::sieve::{Piece, Sieve};
use super::sizes::Sizes;
use super::word::{Layout, mirror};
use super::work::{Task, Work};
use crate::counts::CountError;
#[cfg(test)]
use crate::simd::Tier;
#[cfg(test)]
use std::sync::atomic::AtomicBool;
use std::sync::atomic::Ordering;

/// Bytes an engine's lists may take on the wide path at most (1.75 GiB: the two lists of
/// [`CHUNK`] words, 1 GiB, the key's bands, up to about 360 MiB at n = 28, and the sieve's
/// blocks below the lists' splits in place). The allowance was set when the sieve copied
/// its top splits (at n = 28 an engine took about 1.5 GiB with chunks of 2^24 words, and
/// held to 1.5 GiB its deep splits ran short of room); two engines and their process stay
/// within 3.5 GiB besides the keys and the process.
pub(crate) const ENGINE_BYTES: usize = 7 << 28;

/// Bytes the one engine of a count that runs no other may take on the wide path (3.5 GiB,
/// what two engines take in all): its lists twice as long ([`Wide::chunk_for`]). A key's
/// chunk pairs are each sieved from the start, and a sieve of shorter lists reaches its
/// small blocks after fewer splits, so it compares more pairs that a split would have set
/// apart: n = 28's part 4,072,170 of 2^22 on one core took 146 CPU-s with chunks of 2^25
/// words copied in the sieve's top splits (2.8 GB peak) and 79 with 2^27 split in place
/// (2.8 GB), the same solutions.
pub(crate) const LONE_ENGINE_BYTES: usize = 2 * ENGINE_BYTES;

/// Bytes each engine of a count of `engines` may take on the wide path at most:
/// [`LONE_ENGINE_BYTES`] for one, [`ENGINE_BYTES`] each for more.
pub(crate) fn engine_bytes(engines: usize) -> usize {
    if engines <= 1 {
        LONE_ENGINE_BYTES
    } else {
        ENGINE_BYTES
    }
}

/// Words a wide key's list holds at most at once (2^26: 512 MiB) in an engine of
/// [`ENGINE_BYTES`]: the top halves' chunk and the bottom halves', split in place
/// (`sieve/in_place.rs`), and the bands and the sieve's copied blocks in what is left of an
/// engine's allowance; twice that in the lone engine of a count ([`LONE_ENGINE_BYTES`]).
pub(crate) const CHUNK: usize = 1 << 26;

/// Halves of each list a key's cut in pieces takes its bit from ([`Wide::cut_bit`]): the
/// first ones its bands make, the same whatever the chunks and the engine's room.
const CUT_SAMPLE: usize = 1 << 12;

/// The join of one size on the wide path: no tables, only the board's sizes and how long a
/// key's lists grow.
pub(super) struct Wide {
    /// The board's sizes.
    pub(super) sizes: Sizes,
    /// The most words a key's list holds at once.
    pub(super) chunk: usize,
}

impl Wide {
    /// The wide path for size `n`, its lists in chunks of at most `chunk` words.
    pub(super) fn new(n: u32, chunk: usize) -> Wide {
        Wide {
            sizes: Sizes::new(n),
            chunk,
        }
    }

    /// The words a key's list holds at once for an engine allowed `room` bytes: `chunk`,
    /// twice that from [`LONE_ENGINE_BYTES`] on.
    pub(super) fn chunk_for(&self, room: usize) -> usize {
        if room >= LONE_ENGINE_BYTES {
            2 * self.chunk
        } else {
            self.chunk
        }
    }

    /// The fitting pairs of the task's key's halves on the wide path (its piece's), its
    /// lists in `work` (see the module), each chunk pair's handed to `tally` as it is
    /// counted; `Cancelled` if the task's flag is raised meanwhile, `OutOfMemory` if the
    /// bands or not one half fit what `work`'s allowance has left.
    pub(super) fn pairs(
        &self,
        task: Task,
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
            .and_then(|()| match piece {
                Piece::Whole => Ok(0),
                _ => self.cut_bit(&mut top, &mut bottom, task, work),
            })
            .and_then(|bit| self.chunk_pairs(task, &mut top, &mut bottom, bit, work, tally));
        work.bands = [top, bottom];
        counted
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
        let (tops, bottoms, _, _, allowance) = work.lists();
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
        self.ready_bottoms(bottoms, Piece::Whole, 0);
        Ok(densest(tops, bottoms, Layout::wide(self.sizes.n), tier).unwrap_or(0))
    }

    /// The pairs of the halves `top` and `bottom` list, chunk by chunk (see the module), of
    /// them only those this side of the task's cut on `bit` ([`Piece`]).
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
        let chunk = self.chunk_for(work.room);
        let (tops, bottoms, _, sieve, allowance) = work.lists();
        let mut total = 0u64;
        // One chunk pair's pairs, added to the total and handed to `tally`.
        let mut count = |tops: &mut [u64],
                         bottoms: &mut [u64],
                         sieve: &mut Sieve,
                         allowance: &mut Allowance| {
            sieve.reset(self.sizes.middle_balance(key), tier, layout);
            let pairs = sieve.count_in_place(tops, bottoms, 0, cancel, allowance);
            tally(pairs);
            total = total.checked_add(pairs).ok_or(CountError::Overflow)?;
            Ok::<(), CountError>(())
        };
        // Whether `bottoms` holds all of the key's bottom halves, ready for the sieve (they
        // took one chunk); otherwise they are made again for each chunk of tops.
        let mut whole = false;
        while !top.done() {
            top.fill(chunk, tops, allowance, cancel, tier)?;
            piece.keep_tops(bit, tops);
            if tops.is_empty() {
                continue;
            }
            if whole {
                count(tops, bottoms, sieve, allowance)?;
            } else {
                bottom.restart();
                let mut first = true;
                while !bottom.done() {
                    bottom.fill(chunk, bottoms, allowance, cancel, tier)?;
                    whole = first && bottom.done();
                    first = false;
                    self.ready_bottoms(bottoms, piece, bit);
                    count(tops, bottoms, sieve, allowance)?;
                }
            }
            if cancel.load(Ordering::Relaxed) {
                return Err(CountError::Cancelled);
            }
        }
        Ok(total)
    }

    /// Makes `words` (top halves' words of a key's bottom columns) ready for the sieve:
    /// mirrored, then kept to those of `piece` (of a cut on `bit`).
    fn ready_bottoms(&self, words: &mut Vec<u64>, piece: Piece, bit: u64) {
        mirror(words, self.sizes.n, Layout::wide(self.sizes.n));
        piece.keep_bottoms(bit, words);
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
        let (_, _, _, sieve, allowance) = work.lists();
        self.ready_bottoms(&mut bottoms, Piece::Whole, 0);
        sieve.reset(self.sizes.middle_balance(key), tier, layout);
        let cancel = AtomicBool::new(false);
        Ok(sieve.count_in_place(&mut tops, &mut bottoms, 0, &cancel, allowance))
    }
}
