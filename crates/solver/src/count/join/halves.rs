//! A key's halves and their pairs: the top halves on a key's columns (and the bottom
//! halves, mirrored), made from the tables' heads and tails ([`Join::pairs`]), sorted by
//! balance and handed to the sieve. The tables live in `tables.rs`, the kernels that make
//! the words in `kernels.rs`, the pair counting in `sieve.rs`.

use super::kernels::extend;
use super::keys::{Key, subsets};
use super::memory::Allowance;
use super::sieve::{Piece, densest};
use super::tables::Join;
use super::word::{BALANCE_SHIFT, Layout, mirror_masks, right_field};
use super::work::Work;
use crate::counts::CountError;
use crate::pool::give_way;
use crate::simd::Tier;
use std::sync::atomic::{AtomicBool, Ordering};

impl Join {
    /// The fitting pairs of halves of `key`, its lists in `work`; `Cancelled` if `cancel` is
    /// raised meanwhile, `OutOfMemory` if its two lists and the room to sort them do not fit
    /// `work`'s allowance (the sieve makes do with whatever is left: see `Sieve::count`).
    #[cfg(test)]
    pub(super) fn pairs(
        &self,
        key: &Key,
        tier: Tier,
        cancel: &AtomicBool,
        work: &mut Work,
    ) -> Result<u64, CountError> {
        self.pairs_tallied(key, Piece::Whole, tier, cancel, work, &mut |_| ())
    }

    /// [`Join::pairs`], handing `tally` the pairs of each chunk pair as it is counted on the
    /// wide path (a key of n = 28 takes minutes), so that they show in progress; the tables'
    /// path (a key in under a second) hands on nothing; only `piece`'s pairs.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn pairs_tallied(
        &self,
        key: &Key,
        piece: Piece,
        tier: Tier,
        cancel: &AtomicBool,
        work: &mut Work,
        tally: &mut dyn FnMut(u64),
    ) -> Result<u64, CountError> {
        if self.chunk > 0 {
            return self.wide_pairs(key, piece, tier, cancel, work, tally);
        }
        // The sieve makes do with whatever room the lists leave.
        work.with_spare_room(|work| self.both_halves(key, tier, work))?;
        self.sieve_pairs(key, piece, tier, cancel, work)
    }

    /// Fills `work`'s two lists with `key`'s top and bottom halves ([`Join::halves`]).
    fn both_halves(&self, key: &Key, tier: Tier, work: &mut Work) -> Result<(), CountError> {
        let (tops, allowance) = (&mut work.tops, &mut work.allowance);
        self.halves(key.top, key.middle, tier, tops, allowance)?;
        self.halves(key.bottom, key.middle, tier, &mut work.bottoms, allowance)
    }

    /// The fitting pairs of one head's top halves of `key` (its entry `head` in the heads'
    /// table, on the columns `first`) and all of the key's bottom halves, its lists in
    /// `work`: [`Join::pairs`] restricted to one head, for tests that check a part of a large
    /// board against a search.
    #[cfg(test)]
    pub(super) fn pairs_of_head(
        &self,
        key: &Key,
        head: [u64; 2],
        first: u32,
        tier: Tier,
        work: &mut Work,
    ) -> Result<u64, CountError> {
        let Work {
            tops,
            bottoms,
            allowance,
            ..
        } = work;
        let tails = self.tails.get(key.top & !first);
        tops.clear();
        allowance.reserve(tops, tails.len() + 8)?;
        extend(tops, &head, tails, self.spares(key.middle), self.tail, tier);
        self.halves(key.bottom, key.middle, tier, bottoms, allowance)?;
        self.sieve_pairs(key, Piece::Whole, tier, &AtomicBool::new(false), work)
    }

    /// The fitting pairs of the top halves and bottom halves in `work` (both as top halves'
    /// words): the bottoms mirrored, both sorted by balance, cut to `piece`'s and sieved.
    fn sieve_pairs(
        &self,
        key: &Key,
        piece: Piece,
        tier: Tier,
        cancel: &AtomicBool,
        work: &mut Work,
    ) -> Result<u64, CountError> {
        let Work {
            tops,
            bottoms,
            scratch,
            sieve,
            allowance,
            ..
        } = work;
        if tops.is_empty() || bottoms.is_empty() {
            return Ok(0);
        }
        let n = self.n;
        let (low, fields) = mirror_masks(n);
        for y in bottoms.iter_mut() {
            let balance = *y >> BALANCE_SHIFT;
            let diagonals = *y & fields;
            *y = (diagonals >> n) | ((diagonals & low) << n) | (balance << (BALANCE_SHIFT + 8));
        }
        // Both lists in order of balance; the splits keep that order.
        sort_by_byte(tops, BALANCE_SHIFT, scratch, allowance)?;
        sort_by_byte(bottoms, BALANCE_SHIFT + 8, scratch, allowance)?;
        if piece != Piece::Whole {
            // The lists are whole here, so the cut's bit is the sieve's own first one.
            let bit = densest(tops, bottoms, Layout::NARROW, tier).unwrap_or(0);
            piece.keep_tops(bit, tops);
            piece.keep_bottoms(bit, bottoms);
        }
        sieve.reset(self.middle_balance(key), tier, Layout::NARROW);
        let pairs = sieve.count(tops, bottoms, 0, cancel, allowance);
        if cancel.load(Ordering::Relaxed) {
            return Err(CountError::Cancelled);
        }
        Ok(pairs)
    }

    /// The bits of the middle queen (if any) in a head's share and in a tail's word: a half
    /// attacks her when its word has her column in either field (her left-going column `q`
    /// at bit `q - 1`, none for column 0: see `word.rs`).
    fn spares(&self, middle: Option<u32>) -> [u64; 2] {
        let right = right_field(self.n);
        let spare = middle.map_or(0, |q| ((1u64 << q) >> 1) | (1u64 << (q + right)));
        [spare, self.tail.spare(self.n, middle)]
    }

    /// Fills `out` with the top halves on exactly `columns` (and at peace with the middle
    /// queen), as the word the rows below see: attacked diagonals on the next row, one field
    /// per direction; `out` grows within `allowance` (`OutOfMemory` past it). Gives way to
    /// other pool jobs between the head's sets ([`give_way`]).
    fn halves(
        &self,
        columns: u32,
        middle: Option<u32>,
        tier: Tier,
        out: &mut Vec<u64>,
        allowance: &mut Allowance,
    ) -> Result<(), CountError> {
        out.clear();
        let ends = self.spares(middle);
        // The head's sets: each of the key's columns' sets of `head` of them.
        let mut places = [0u32; 24];
        let mut rest = columns;
        for place in places.iter_mut().take(self.m as usize) {
            *place = rest & rest.wrapping_neg();
            rest ^= *place;
        }
        let mut firsts = [0u32; 924];
        let mut count = 0;
        for picks in subsets(self.m, self.head) {
            let (mut first, mut picked) = (0, picks);
            while picked != 0 {
                first |= places[picked.trailing_zeros() as usize];
                picked &= picked - 1;
            }
            firsts[count] = first;
            count += 1;
        }
        // The bands two pairs ahead are asked for while these are joined: for a key far
        // from the last one (a shard's keys are), they are in no cache near the core.
        const AHEAD: usize = 2;
        for (at, &first) in firsts[..count].iter().enumerate() {
            // Every few dozen sets (n = 24: a few milliseconds), not every one: the check
            // costs a percent in this loop.
            if at % 32 == 31 {
                give_way();
            }
            if let Some(&next) = firsts[..count].get(at + AHEAD) {
                prefetch(self.heads.get(next));
                prefetch(self.tails.get(columns & !next));
            }
            let heads = self.heads.get(first);
            if !heads.is_empty() {
                let tails = self.tails.get(columns & !first);
                if !tails.is_empty() {
                    // A register's worth more: the SIMD kernels store whole registers.
                    allowance.reserve(out, heads.len() / 2 * tails.len() + 8)?;
                    extend(out, heads, tails, ends, self.tail, tier);
                }
            }
        }
        Ok(())
    }
}

/// Asks the CPU to bring `words` into its nearest cache (a hint; nothing off x86-64).
#[inline(always)]
fn prefetch(words: &[u64]) {
    #[cfg(target_arch = "x86_64")]
    for line in words.chunks(8) {
        use std::arch::x86_64::{_MM_HINT_T0, _mm_prefetch};
        // SAFETY: SSE is part of every x86-64 CPU; a prefetch reads nothing and cannot fault.
        unsafe { _mm_prefetch::<_MM_HINT_T0>(line.as_ptr().cast()) };
    }
    let _ = words;
}

/// Sorts `words` by their byte from bit `shift` on, keeping the order of words with the same
/// byte (a counting sort: the balances take a few dozen values, and the lists are long),
/// `scratch` lent for the pass (grown within `allowance`).
pub(super) fn sort_by_byte(
    words: &mut Vec<u64>,
    shift: u32,
    scratch: &mut Vec<u64>,
    allowance: &mut Allowance,
) -> Result<(), CountError> {
    let byte = |word: u64| ((word >> shift) & 0xff) as usize;
    let mut starts = [0usize; 256];
    for &word in words.iter() {
        starts[byte(word)] += 1;
    }
    let mut at = 0;
    for start in starts.iter_mut() {
        (*start, at) = (at, at + *start);
    }
    scratch.clear();
    allowance.reserve(scratch, words.len())?;
    // Every slot is written once (the starts cut the list's length into one range per
    // byte), so nothing is zeroed first.
    let free = &mut scratch.spare_capacity_mut()[..words.len()];
    for &word in words.iter() {
        let slot = &mut starts[byte(word)];
        free[*slot].write(word);
        *slot += 1;
    }
    // SAFETY: the words' slots are the ranges the starts cut `0..words.len()` into, one
    // word to a slot, so each of the first `words.len()` slots was written above.
    unsafe { scratch.set_len(words.len()) };
    std::mem::swap(words, scratch);
    Ok(())
}
