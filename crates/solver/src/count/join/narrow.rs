//! The sieve's subtrees on 32-bit words: once no more than 32 bits of two blocks can meet
//! (those both have somewhere), both are narrowed to those bits once (`pext`), their
//! balances kept beside them as runs of one balance ([`Block`]), and the splits below work
//! on the narrow words: sixteen words per AVX-512 register (eight per AVX2 one) instead of
//! eight (four), and the pair tests need no narrowing of their own. Only the tiers whose
//! pair tests narrow (`Tier::fast_pext`) take this path. The wide words' splits are
//! `sieve.rs`'s, what chooses a split's bit `sample.rs`'s, the passes and pair tests the
//! kernels' (`kernels/`).

use super::kernels::{REGISTER32, has_pext, leaf32, pass32, pext};
use super::memory::Allowance;
use super::sample::{densest_of, density};
use super::word::Layout;
use crate::pool::give_way;
use crate::simd::Tier;
use std::sync::atomic::{AtomicBool, Ordering};

/// Splits shallower than this poll for cancellation and give way (as the wide words' do).
const POLL_DEPTH: usize = 8;

/// A run of words of one balance (biased, as `Layout` reads it) in a narrowed block.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Run {
    /// The balance of its words: a top half's for tops, a bottom half's for bottoms.
    balance: i32,
    /// How many words it has.
    len: u32,
}

/// A block of narrowed words and their runs of one balance, in order.
#[derive(Clone, Copy)]
struct Block<'a> {
    /// The words, each a wide word's bits that can meet, `pext`ed.
    words: &'a [u32],
    /// Their balances: the runs' lengths add up to the words'.
    runs: &'a [Run],
}

/// Room for one narrowed block.
#[derive(Default)]
struct Room {
    /// Its words (and a register more).
    words: Vec<u32>,
    /// Its runs.
    runs: Vec<Run>,
}

impl Room {
    /// The block it holds.
    fn block(&self) -> Block<'_> {
        Block {
            words: &self.words,
            runs: &self.runs,
        }
    }

    /// Emptied, with room for `words` words and `runs` runs within `allowance`; `false` if
    /// there is none.
    fn make_room(&mut self, words: usize, runs: usize, allowance: &mut Allowance) -> bool {
        self.words.clear();
        self.runs.clear();
        allowance
            .reserve(&mut self.words, words + REGISTER32)
            .is_ok()
            && allowance.reserve(&mut self.runs, runs).is_ok()
    }

    /// Gives its room back to `allowance`.
    fn release(&mut self, allowance: &mut Allowance) {
        allowance.release(&mut self.words);
        allowance.release(&mut self.runs);
    }

    /// Bytes it holds room for.
    #[cfg(test)]
    fn bytes(&self) -> usize {
        self.words.capacity() * size_of::<u32>() + self.runs.capacity() * size_of::<Run>()
    }
}

/// The narrowed subtrees' room, kept from key to key: the two blocks a subtree starts
/// from, and per depth below it a split's three blocks (as the wide sieve's).
#[derive(Default)]
pub(super) struct Narrowed {
    /// The tops and the bottoms narrowed.
    roots: [Room; 2],
    /// Per depth, the longer block's words with the split's bit and those without, and the
    /// shorter block's words without it.
    levels: Vec<[Room; 3]>,
}

/// What a narrowed subtree's splits and pair tests go by.
#[derive(Clone, Copy)]
pub(super) struct Subtree<'a> {
    /// Where the wide words keep their balances.
    pub(super) layout: Layout,
    /// Twice a half's bias less the middle queen's balance: a top of balance `t` and a
    /// bottom of balance `b` sum to zero when `t + b` is this.
    pub(super) zero: i32,
    /// The pairs per word below which two blocks are compared rather than split.
    pub(super) split: usize,
    /// The tier of the splits and pair tests.
    pub(super) tier: Tier,
    /// Raised to give up (polled at the shallow splits).
    pub(super) cancel: &'a AtomicBool,
}

impl Narrowed {
    /// Bytes its blocks hold room for.
    #[cfg(test)]
    pub(super) fn bytes(&self) -> usize {
        self.roots
            .iter()
            .chain(self.levels.iter().flatten())
            .map(Room::bytes)
            .sum()
    }

    /// Gives back the room of every block, to `allowance`.
    pub(super) fn release(&mut self, allowance: &mut Allowance) {
        for room in self
            .roots
            .iter_mut()
            .chain(self.levels.iter_mut().flatten())
        {
            room.release(allowance);
        }
    }

    /// [`Sieve::count`](super::sieve::Sieve::count) of `xs` and `ys` (tops and bottoms, in
    /// order of balance, laid out as `how.layout` says) narrowed to the bits of `meet` (at
    /// most 32) from `depth` on: `None`, and nothing counted, if `allowance` has no room for
    /// the narrow words.
    pub(super) fn count(
        &mut self,
        xs: &[u64],
        ys: &[u64],
        meet: u64,
        how: Subtree,
        depth: usize,
        allowance: &mut Allowance,
    ) -> Option<u64> {
        debug_assert!(meet.count_ones() <= 32);
        let layout = how.layout;
        let [mut tops, mut bottoms] = std::mem::take(&mut self.roots);
        let counted = (narrow(xs, meet, |x| layout.top(x), &mut tops, how.tier, allowance)
            && narrow(
                ys,
                meet,
                |y| layout.bottom(y),
                &mut bottoms,
                how.tier,
                allowance,
            ))
        .then(|| self.sieve(tops.block(), bottoms.block(), how, depth, allowance));
        self.roots = [tops, bottoms];
        counted
    }

    /// Weighted fitting pairs of narrowed tops `xs` and bottoms `ys`: split as the wide
    /// words are (on the bit most sampled pairs share) until the blocks are small, then
    /// compared. Where a split finds no room (after the deeper depths' is given back), the
    /// two blocks are compared whole: slower, never wrong.
    fn sieve(
        &mut self,
        xs: Block,
        ys: Block,
        how: Subtree,
        depth: usize,
        allowance: &mut Allowance,
    ) -> u64 {
        let (x, y) = (xs.words.len(), ys.words.len());
        if x == 0 || y == 0 {
            return 0;
        }
        if depth < POLL_DEPTH {
            if how.cancel.load(Ordering::Relaxed) {
                return 0;
            }
            give_way();
        }
        if x * y < how.split * (x + y) {
            return weighted(xs, ys, how);
        }
        let tier = how.tier;
        let below = u64::from(u32::MAX);
        let Some(bit) = densest_of(
            density(xs.words, below, tier),
            density(ys.words, below, tier),
            32,
        ) else {
            return weighted(xs, ys, how);
        };
        let bit = bit as u32;
        if self.levels.len() <= depth {
            self.levels.resize_with(depth + 1, Default::default);
        }
        let [mut with, mut without, mut rest] = std::mem::take(&mut self.levels[depth]);
        let xs_longer = x >= y;
        let (longer, shorter) = if xs_longer { (xs, ys) } else { (ys, xs) };
        let room = |with: &mut Room, without: &mut Room, rest: &mut Room, a: &mut _| {
            with.make_room(longer.words.len(), longer.runs.len(), a)
                && without.make_room(longer.words.len(), longer.runs.len(), a)
                && rest.make_room(shorter.words.len(), shorter.runs.len(), a)
        };
        let mut fits = room(&mut with, &mut without, &mut rest, allowance);
        if !fits {
            for room in self.levels[depth + 1..].iter_mut().flatten() {
                room.release(allowance);
            }
            fits = room(&mut with, &mut without, &mut rest, allowance);
        }
        let counted = if fits {
            partition(longer, bit, Some(&mut with), &mut without, tier);
            partition(shorter, bit, None, &mut rest, tier);
            let (with_block, without_block, rest_block) =
                (with.block(), without.block(), rest.block());
            if xs_longer {
                self.sieve(with_block, rest_block, how, depth + 1, allowance)
                    + self.sieve(without_block, ys, how, depth + 1, allowance)
            } else {
                self.sieve(rest_block, with_block, how, depth + 1, allowance)
                    + self.sieve(xs, without_block, how, depth + 1, allowance)
            }
        } else {
            weighted(xs, ys, how)
        };
        self.levels[depth] = [with, without, rest];
        counted
    }
}

/// Weighted fitting pairs of two narrowed blocks, per run of tops of one balance: the
/// bottoms that make the sum zero count once and those that make it positive twice.
fn weighted(xs: Block, ys: Block, how: Subtree) -> u64 {
    let mut total = 0;
    let mut at = 0;
    for run in xs.runs {
        let zero = how.zero - run.balance;
        let (mut even, mut positive) = (0, 0);
        for bottoms in ys.runs {
            if bottoms.balance < zero {
                even += bottoms.len as usize;
            }
            if bottoms.balance <= zero {
                positive += bottoms.len as usize;
            }
        }
        let len = run.len as usize;
        let tops = &xs.words[at..at + len];
        let (evens, positives) = ys.words[even..].split_at(positive - even);
        total += leaf32(tops, evens, how.tier) + 2 * leaf32(tops, positives, how.tier);
        at += len;
    }
    total
}

/// Fills `room` with `words` narrowed to the bits of `meet` and their runs of one
/// `balance`, within `allowance`; `false` if there is no room, or `tier` has no `pext`
/// (only the AVX-512 and AVX2 tiers narrow).
fn narrow(
    words: &[u64],
    meet: u64,
    balance: impl Fn(u64) -> i32,
    room: &mut Room,
    tier: Tier,
    allowance: &mut Allowance,
) -> bool {
    if !has_pext(tier) {
        return false;
    }
    if !room.make_room(words.len(), runs_of(words, &balance).count(), allowance) {
        return false;
    }
    room.runs.extend(runs_of(words, &balance));
    pext(words, meet, &mut room.words, tier)
}

/// The runs of one `balance` of `words` (in order of balance), in order.
fn runs_of(words: &[u64], balance: impl Fn(u64) -> i32) -> impl Iterator<Item = Run> {
    let mut rest = words;
    std::iter::from_fn(move || {
        let field = balance(*rest.first()?);
        let len = rest.partition_point(|&w| balance(w) == field);
        rest = &rest[len..];
        Some(Run {
            balance: field,
            len: len as u32,
        })
    })
}

/// Fills `without` with the words of `block` that lack `bit` and, if given, `with` with
/// those that have it, both in order and with their runs (a run left empty is dropped);
/// each has room for the block's words and a register more.
fn partition(block: Block, bit: u32, mut with: Option<&mut Room>, without: &mut Room, tier: Tier) {
    let (mut na, mut nb) = (0, 0);
    let mut at = 0;
    for run in block.runs {
        let words = &block.words[at..at + run.len as usize];
        at += words.len();
        let a = with.as_deref_mut().map(|with| {
            // SAFETY: `na` words were written so far, within the room.
            unsafe { with.words.as_mut_ptr().add(na) }
        });
        // SAFETY: likewise for `nb`.
        let b = unsafe { without.words.as_mut_ptr().add(nb) };
        // Each list has room for all of the block's words and a register more, and the
        // pass writes at most this run's words of each kind and a register from `a` and `b`.
        // SAFETY: as above.
        let (ka, kb) = unsafe { pass32(words, bit, a, b, tier) };
        if let Some(with) = with.as_deref_mut()
            && ka > 0
        {
            with.runs.push(Run {
                balance: run.balance,
                len: ka as u32,
            });
        }
        if kb > 0 {
            without.runs.push(Run {
                balance: run.balance,
                len: kb as u32,
            });
        }
        (na, nb) = (na + ka, nb + kb);
    }
    // SAFETY: the first `na` and `nb` slots of each were written above.
    unsafe {
        without.words.set_len(nb);
        if let Some(with) = with {
            with.words.set_len(na);
        }
    }
}
