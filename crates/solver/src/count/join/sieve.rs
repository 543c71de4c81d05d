//! The join's pair counting: a key's two lists of half words, split recursively on the bit
//! most sampled pairs share ([`Sieve`]), the small blocks left compared pair by pair (as
//! 32-bit words of the bits they can meet on, where the tier narrows them) and weighed by
//! the transposes' balance; and a key's count cut in two [`Piece`]s on the sieve's first
//! bit, so that two engines can share a key; and a split's side offered to an engine that
//! has no part left (`share.rs`). The words come from either path (`halves.rs`,
//! `bands.rs`), their layout from `word.rs`; the split bit is `sample.rs`'s, the subtrees of
//! splits that work on narrow words are `narrow.rs`'s, the top splits of lists too long to
//! copy are made in place (`sieve/in_place.rs`), the partitions and pair tests are the
//! tiers' kernels (`kernels/`).

mod in_place;

use super::kernels::{REGISTER, having, leaf, partition, runs, weighted_narrowed};
use super::memory::Allowance;
use super::narrow::{Narrowed, Subtree};
use super::sample::densest;
use super::share::{Branch, Exchange};
use super::word::Layout;
use crate::counts::CountError;
use crate::pool::give_way;
use crate::simd::Tier;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

/// Two blocks of `x` and `y` words are compared pair by pair instead of split when
/// `x * y < split * (x + y)`, `split` this where the pair tests do not narrow their words:
/// a split passes over both blocks to spare a share of their pairs, which pays only while
/// the pairs outnumber the words by enough (n = 22, three shards of 1/16,000 of the keys,
/// one thread: 96 to 256 cost the same within noise, 64 and below more).
const SPLIT: usize = 128;

/// [`SPLIT`] in the tiers whose pair tests narrow their words ([`Sieve::narrowed`]: AVX-512,
/// and AVX2 where `pext` is fast), which takes half the instructions (n = 25, shard 100 of
/// 65,536, 2 threads, CPU seconds: AVX-512 128 33.1-33.9, 192 32.6-33.3, 256 32.6-33.9, 320
/// 34.0-35.0, 384 34.9, 512 37.9; AVX2 128 44.9, 256 39.6).
const SPLIT_NARROWED: usize = 256;

/// Splits shallower than this poll for cancellation and give way to other pool jobs
/// ([`give_way`]): a key of n = 24 takes about a second, and its first levels of splits cut
/// it into a few hundred pieces.
const POLL_DEPTH: usize = 8;

/// A split reserves its blocks exactly only for lists longer than this (16,384 words):
/// below it, room for all of the list's words in each spares a pass that counts them
/// (n = 26, shard 100 of 2^20: 3% of the time), and takes at most 0.4 MiB per depth.
const EXACT: usize = 1 << 14;

/// A block gives its room back before a split that needs less than half of it, when it is
/// more than this (2^20 words, 8 MiB) beyond what the split needs.
const SHRINK: usize = 1 << 20;

/// Which of a key's pairs a part counts: all of them, or one side of a cut on one bit of
/// the half words (chosen from the key's halves alone, [`densest`]): the pairs whose top
/// half has the bit, against the bottom halves that lack it, or those whose top half lacks
/// it, against all. The two sides add up to the key's count (a pair whose halves both have
/// the bit cannot fit), as the two sides of the sieve's first split do, so a key cut in two
/// costs its two engines the sieve's work once, and its halves' making twice.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Piece {
    /// Every pair.
    Whole,
    /// The pairs whose top half has the cut's bit.
    With,
    /// The pairs whose top half lacks it.
    Without,
}

impl Piece {
    /// Keeps of `tops` the words this side of a cut on `bit` pairs, in their order.
    pub(super) fn keep_tops(self, bit: u64, tops: &mut Vec<u64>) {
        match self {
            Piece::Whole => {}
            Piece::With => tops.retain(|&x| x & bit != 0),
            Piece::Without => tops.retain(|&x| x & bit == 0),
        }
    }

    /// Keeps of `bottoms` (mirrored onto the tops' bits) the words this side of a cut on
    /// `bit` pairs, in their order.
    pub(super) fn keep_bottoms(self, bit: u64, bottoms: &mut Vec<u64>) {
        if self == Piece::With {
            bottoms.retain(|&y| y & bit == 0);
        }
    }
}

/// Counts the fitting pairs of a key's two lists, each pair weighted by the transposes: a
/// solution whose balance (the sum of its squares' balances, `Sizes::balance`, which the transposes
/// negate and the mirrors keep) is positive counts twice, zero once, negative not at all.
/// Each transpose maps the solutions with a positive balance onto those with a negative one,
/// so the weights add up to the number of solutions, and pairs that cannot fit on balance
/// alone are never compared (n = 18, a quarter of the keys: 14.4e9 pair tests instead of
/// 23.3e9 with the splits of then).
pub(super) struct Sieve {
    /// The middle queen's balance (0 on even boards).
    middle: i32,
    /// Where the words keep their balances.
    layout: Layout,
    /// The tier of its sampling, partitions and pair tests.
    tier: Tier,
    /// Per depth, room for a split's three blocks: the longer block's words with its bit and
    /// those without, the shorter block's words without it (kept from key to key, grown
    /// within an engine's [`Allowance`]).
    levels: Vec<[Vec<u64>; 3]>,
    /// The room of the subtrees narrowed to 32-bit words (`narrow.rs`).
    narrowed: Narrowed,
    /// Room for two blocks of lists kept in place, copied out for the splits below
    /// (`in_place.rs`).
    gathered: [Vec<u64>; 2],
    /// Blocks of lists kept in place of at most this many words in all are copied out
    /// (`in_place.rs`'s `GATHER`; less in tests).
    gather: usize,
    /// Where it offers sides of its splits to idle engines (`share.rs`), and the weight of
    /// the key's pairs; `None`: it counts every side itself.
    share: Option<(Arc<Exchange>, u64)>,
}

impl Sieve {
    /// A sieve for a key whose middle queen has balance `middle`, its tests in `tier`.
    pub(super) fn new(middle: i32, tier: Tier) -> Sieve {
        Sieve {
            middle,
            layout: Layout::NARROW,
            tier,
            levels: Vec::new(),
            narrowed: Narrowed::default(),
            gathered: Default::default(),
            gather: in_place::GATHER,
            share: None,
        }
    }

    /// Offers sides of its splits on `exchange` from now on, each pair standing for
    /// `weight` solutions (`None`: counts every side itself).
    pub(super) fn share(&mut self, share: Option<(Arc<Exchange>, u64)>) {
        self.share = share;
    }

    /// Whether an idle engine took the side of `xs` and `ys` (`share.rs`): then it counts
    /// them, not this sieve.
    fn offered(&self, xs: &[u64], ys: &[u64]) -> bool {
        self.share.as_ref().is_some_and(|(exchange, weight)| {
            let branch = Branch {
                middle: self.middle,
                layout: self.layout,
                tier: self.tier,
                weight: *weight,
            };
            exchange.offer(xs, ys, branch)
        })
    }

    /// The sieve, its room kept, for a key whose middle queen has balance `middle`, its tests
    /// in `tier`, its words laid out as `layout` says.
    pub(super) fn reset(&mut self, middle: i32, tier: Tier, layout: Layout) {
        self.middle = middle;
        self.layout = layout;
        self.tier = tier;
    }

    /// Bytes its blocks hold room for now.
    #[cfg(test)]
    pub(super) fn bytes(&self) -> usize {
        let words: usize = (self.levels.iter().flatten())
            .chain(&self.gathered)
            .map(Vec::capacity)
            .sum();
        words * size_of::<u64>() + self.narrowed.bytes()
    }

    /// Bytes its narrowed subtrees' blocks hold room for now.
    #[cfg(test)]
    pub(super) fn narrowed_bytes(&self) -> usize {
        self.narrowed.bytes()
    }

    /// Gives back the room of every block, to `allowance`.
    pub(super) fn release(&mut self, allowance: &mut Allowance) {
        for list in self.levels.iter_mut().flatten().chain(&mut self.gathered) {
            allowance.release(list);
        }
        self.narrowed.release(allowance);
    }

    /// The pairs per word below which two blocks are compared rather than split: [`SPLIT`],
    /// or [`SPLIT_NARROWED`] where the tier narrows its pair tests.
    fn split_pairs(&self) -> usize {
        if self.tier.fast_pext() {
            SPLIT_NARROWED
        } else {
            SPLIT
        }
    }

    /// Weighted fitting pairs of `xs` and `ys` (each in order of balance): split on a bit
    /// both often have (pairs that both have it cannot fit), until the blocks are small.
    /// Polls `cancel` at the shallow splits (a few hundred times per key at most) and gives
    /// up with 0 once it is raised: the caller checks it again and discards the count; gives
    /// way to other pool jobs there too. Blocks grow within `allowance`; where a split finds
    /// no room for them (after the deeper depths' room is given back), the longer list is
    /// counted in halves instead, which need no room of their own: slower, never wrong, and
    /// never more memory.
    pub(super) fn count(
        &mut self,
        xs: &[u64],
        ys: &[u64],
        depth: usize,
        cancel: &AtomicBool,
        allowance: &mut Allowance,
    ) -> u64 {
        if xs.is_empty() || ys.is_empty() {
            return 0;
        }
        if depth < POLL_DEPTH {
            if cancel.load(Ordering::Relaxed) {
                return 0;
            }
            give_way();
        }
        let split = self.split_pairs();
        if xs.len() * ys.len() < split * (xs.len() + ys.len()) {
            return self.weighted(xs, ys);
        }
        // Where few enough bits can meet, the subtree below works on narrow words.
        if self.tier.fast_pext() && xs.len() + ys.len() <= NARROW_TREE {
            let or = |words: &[u64]| words.iter().fold(0, |or, &w| or | w);
            let meet = or(xs) & or(ys) & self.layout.diagonals();
            if meet.count_ones() <= 32 {
                let subtree = Subtree {
                    layout: self.layout,
                    zero: 2 * self.layout.bias - self.middle,
                    split,
                    tier: self.tier,
                    cancel,
                };
                let narrowed = self.narrowed.count(xs, ys, meet, subtree, depth, allowance);
                if let Some(count) = narrowed {
                    return count;
                }
            }
        }
        let Some(bit) = densest(xs, ys, self.layout, self.tier) else {
            return self.weighted(xs, ys);
        };
        if self.levels.len() <= depth {
            self.levels.resize_with(depth + 1, Default::default);
        }
        // This depth's blocks, taken out while the deeper ones use theirs.
        let [mut with, mut without, mut rest] = std::mem::take(&mut self.levels[depth]);
        // The longer list is split, and the shorter one is what goes on whole to one side:
        // pairs with the bit on one side meet the other's words without it, and the words
        // without it meet all of the other list.
        let xs_longer = xs.len() >= ys.len();
        let (longer, shorter) = if xs_longer { (xs, ys) } else { (ys, xs) };
        let mut blocks = [&mut with, &mut without, &mut rest];
        let mut split = self.split(longer, shorter, bit, &mut blocks, allowance);
        if split.is_err() {
            // The deeper depths' room is free while this depth splits.
            for list in self.levels[depth + 1..].iter_mut().flatten() {
                allowance.release(list);
            }
            split = self.split(longer, shorter, bit, &mut blocks, allowance);
        }
        let counted = match split {
            Ok(()) => {
                // The side of the longer list's words with the bit, then the side without
                // it; an idle engine may take the first (`share.rs`).
                let ((xa, ya), (xb, yb)) = if xs_longer {
                    ((&with[..], &rest[..]), (&without[..], ys))
                } else {
                    ((&rest[..], &with[..]), (xs, &without[..]))
                };
                let first = if self.offered(xa, ya) {
                    0
                } else {
                    self.count(xa, ya, depth + 1, cancel, allowance)
                };
                first + self.count(xb, yb, depth + 1, cancel, allowance)
            }
            Err(_) => {
                // No room: the longer list in halves, each split (or compared) on its own.
                self.levels[depth] = [with, without, rest];
                let (a, b) = longer.split_at(longer.len() / 2);
                return if xs_longer {
                    self.count(a, ys, depth, cancel, allowance)
                        + self.count(b, ys, depth, cancel, allowance)
                } else {
                    self.count(xs, a, depth, cancel, allowance)
                        + self.count(xs, b, depth, cancel, allowance)
                };
            }
        };
        self.levels[depth] = [with, without, rest];
        counted
    }

    /// Fills a split's blocks: `with` and `without` the words of `longer` that have `bit`
    /// and those that lack it, `rest` the words of `shorter` that lack it, each given room
    /// for its words (and a register) within `allowance`; `OutOfMemory` if there is none.
    fn split(
        &self,
        longer: &[u64],
        shorter: &[u64],
        bit: u64,
        [with, without, rest]: &mut [&mut Vec<u64>; 3],
        allowance: &mut Allowance,
    ) -> Result<(), CountError> {
        // The blocks of a longer list than `EXACT` are reserved exactly (a pass to count
        // them costs less than twice its room); of a shorter one at its length (no pass:
        // their room is kept from key to key); the shorter list's block at most its length.
        let (has, lacks) = if longer.len() > EXACT {
            let has = having(longer, bit, self.tier);
            (has, longer.len() - has)
        } else {
            (longer.len(), longer.len())
        };
        for (list, words) in [
            (&mut **with, has),
            (&mut **without, lacks),
            (&mut **rest, shorter.len()),
        ] {
            list.clear();
            // A block whose room is far more than this split needs (kept from a larger one)
            // gives it back first, so that the depths' room follows the splits in hand
            // rather than the largest each depth ever had (n = 28: that exhausted an
            // engine's allowance and left deep splits without room).
            if list.capacity() > 2 * (words + REGISTER) + SHRINK {
                allowance.release(list);
            }
            allowance.reserve(list, words + REGISTER)?;
        }
        partition(longer, bit, Some(with), without, self.tier);
        partition(shorter, bit, None, rest, self.tier);
        Ok(())
    }

    /// Weighted fitting pairs of two small blocks: per run of tops of one balance, the
    /// bottoms that make the sum zero count once and those that make it positive twice.
    fn weighted(&self, xs: &[u64], ys: &[u64]) -> u64 {
        let (layout, middle, tier) = (self.layout, self.middle, self.tier);
        if let Some(count) = weighted_narrowed(layout, middle, xs, ys, tier) {
            return count;
        }
        // The tables' layout with its fields' places as constants (the common case, and the
        // one measured against the build before the wide path), else the one in hand.
        const NARROW: Layout = Layout::NARROW;
        let leaf = |run: &[u64], ys: &[u64], evens: usize| {
            let (even, positive) = ys.split_at(evens);
            leaf(run, even, tier) + 2 * leaf(run, positive, tier)
        };
        if layout == NARROW {
            runs(NARROW, middle, xs, ys, leaf)
        } else {
            runs(layout, middle, xs, ys, leaf)
        }
    }
}

/// Most words two blocks may have in all for their subtree of splits to be narrowed to
/// 32-bit words (`narrow.rs`), where the tier narrows: the narrow words of larger ones
/// would take more room, for no less time (n = 25, shard 100 of 65,536, 2 threads, user CPU
/// seconds: 2^14 28.8, 2^16 28.3, 2^18 28.5, 2^20 29.0; 32.9 without such subtrees; n = 28,
/// shard 100 of 2^22, CPU seconds: 2^16 350, 2^20 363).
const NARROW_TREE: usize = 1 << 16;
