//! The tables' path: a key's top halves on its columns (and its bottom halves, mirrored),
//! made from the tables' heads and tails ([`Tables::pairs`]), sorted by balance, cut to the
//! task's piece and handed to the sieve. The tables are built in `tables.rs`, the kernels
//! that make the words are `kernels/`'s, the pair counting `sieve.rs`'s; the wide path is
//! `wide.rs`.

use super::kernels::{extend, prefetch};
use super::keys::{Key, subsets};
use super::memory::Allowance;
use super::sample::densest;
use super::sieve::Piece;
use super::tables::Tables;
use super::word::{BALANCE_SHIFT, Layout, mirror, right_field, sort_by_byte};
use super::work::{Task, Work};
use crate::counts::CountError;
use crate::pool::give_way;
use crate::simd::Tier;
#[cfg(test)]
use std::sync::atomic::AtomicBool;
use std::sync::atomic::Ordering;

impl Tables {
    /// The fitting pairs of halves of the task's key (its piece's), its lists in `work`;
    /// `Cancelled` if the task's flag is raised meanwhile, `OutOfMemory` if its two lists
    /// and the room to sort them do not fit `work`'s allowance (the sieve makes do with
    /// whatever is left: see `Sieve::count`).
    pub(super) fn pairs(&self, task: Task, work: &mut Work) -> Result<u64, CountError> {
        // The sieve makes do with whatever room the lists leave.
        work.with_spare_room(|work| self.both_halves(task.key, task.tier, work))?;
        self.sieve_pairs(task, work)
    }

    /// Fills `work`'s two lists with `key`'s top and bottom halves ([`Tables::halves`]).
    fn both_halves(&self, key: &Key, tier: Tier, work: &mut Work) -> Result<(), CountError> {
        let (tops, allowance) = (&mut work.tops, &mut work.allowance);
        self.halves(key.top, key.middle, tier, tops, allowance)?;
        self.halves(key.bottom, key.middle, tier, &mut work.bottoms, allowance)
    }

    /// The fitting pairs of one head's top halves of `key` (its entry `head` in the heads'
    /// table, on the columns `first`) and all of the key's bottom halves, its lists in
    /// `work`: [`Tables::pairs`] restricted to one head, for tests that check a part of a large
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
        let (tops, bottoms, _, _, allowance) = work.lists();
        let tails = self.tails.get(key.top & !first);
        tops.clear();
        allowance.reserve(tops, tails.len() + 8)?;
        extend(tops, &head, tails, self.spares(key.middle), self.tail, tier);
        self.halves(key.bottom, key.middle, tier, bottoms, allowance)?;
        let (piece, cancel) = (Piece::Whole, &AtomicBool::new(false));
        let task = Task {
            key,
            piece,
            tier,
            cancel,
        };
        self.sieve_pairs(task, work)
    }

    /// The fitting pairs of the top halves and bottom halves in `work` (both as top halves'
    /// words): the bottoms mirrored, both sorted by balance, cut to the task's piece and
    /// sieved.
    fn sieve_pairs(&self, task: Task, work: &mut Work) -> Result<u64, CountError> {
        let (key, piece, tier, cancel) = (task.key, task.piece, task.tier, task.cancel);
        let (tops, bottoms, scratch, sieve, allowance) = work.lists();
        if tops.is_empty() || bottoms.is_empty() {
            return Ok(0);
        }
        mirror(bottoms, self.sizes.n, Layout::NARROW);
        // Both lists in order of balance; the splits keep that order.
        sort_by_byte(tops, BALANCE_SHIFT, scratch, allowance)?;
        sort_by_byte(bottoms, BALANCE_SHIFT + 8, scratch, allowance)?;
        if piece != Piece::Whole {
            // The lists are whole here, so the cut's bit is the sieve's own first one.
            let bit = densest(tops, bottoms, Layout::NARROW, tier).unwrap_or(0);
            piece.keep_tops(bit, tops);
            piece.keep_bottoms(bit, bottoms);
        }
        sieve.reset(self.sizes.middle_balance(key), tier, Layout::NARROW);
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
        let right = right_field(self.sizes.n);
        let spare = middle.map_or(0, |q| ((1u64 << q) >> 1) | (1u64 << (q + right)));
        [spare, self.tail.spare(self.sizes.n, middle)]
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
        for place in places.iter_mut().take(self.sizes.m as usize) {
            *place = rest & rest.wrapping_neg();
            rest ^= *place;
        }
        let mut firsts = [0u32; 924];
        let mut count = 0;
        for picks in subsets(self.sizes.m, self.sizes.head) {
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
