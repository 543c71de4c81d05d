//! The sieve's top levels for lists too long to copy (a wide key's chunks, `wide.rs`): the
//! two lists split in place, unsorted, on the bit most sampled pairs share (the words with
//! the bit moved to the front), until two blocks are short enough to copy out, sorted by
//! balance, into the sieve's own blocks ([`GATHER`]) for the splits below (`sieve.rs`). The
//! sieve's splits copy their blocks, which took about as much room again as the lists at
//! the top (n = 28: chunks of 2^25 words, 256 MiB each, took 2.8 GB with their sort's
//! room); in place, a key's lists are most of an engine's room, so they are cut into fewer
//! chunks, and the pairs of fewer chunk pairs are sieved apart. Not here: the splits on
//! copied blocks and the pair tests (`sieve.rs`), the bit's sampling (`sample.rs`), the
//! sort (`word.rs`), the chunks (`wide.rs`).

use super::{POLL_DEPTH, Sieve};
use crate::count::join::memory::Allowance;
use crate::count::join::sample::densest;
use crate::count::join::word::copy_sorted_by_byte;
use crate::pool::give_way;
use std::sync::atomic::{AtomicBool, Ordering};

/// Blocks of two lists split in place of at most this many words in all (2^22, 32 MiB) are
/// copied out, sorted, into the sieve's blocks, whose splits take a vector pass and no
/// swaps.
pub(super) const GATHER: usize = 1 << 22;

/// Moves the words of `words` that have `bit` to its front, in no particular order, and
/// returns how many there are: blocks of words are scanned from both ends for those on the
/// wrong side (no branch per word), and swapped in pairs; what is left in the middle a word
/// at a time.
fn split_in_place(words: &mut [u64], bit: u64) -> usize {
    const BLOCK: usize = 64;
    let (mut low, mut high) = (0, words.len());
    // Offsets of the words on the wrong side, in the block at `low` (lacking the bit) and
    // the one ending at `high` (having it), and how many of each were swapped already.
    let (mut lows, mut highs) = ([0u8; BLOCK], [0u8; BLOCK]);
    let (mut low_done, mut low_found, mut high_done, mut high_found) = (0, 0, 0, 0);
    while high - low > 2 * BLOCK {
        if low_done == low_found {
            (low_done, low_found) = (0, 0);
            for (at, &word) in words[low..low + BLOCK].iter().enumerate() {
                lows[low_found] = at as u8;
                low_found += usize::from(word & bit == 0);
            }
        }
        if high_done == high_found {
            (high_done, high_found) = (0, 0);
            for (at, &word) in words[high - BLOCK..high].iter().rev().enumerate() {
                highs[high_found] = at as u8;
                high_found += usize::from(word & bit != 0);
            }
        }
        let swaps = (low_found - low_done).min(high_found - high_done);
        for k in 0..swaps {
            let a = low + usize::from(lows[low_done + k]);
            let b = high - 1 - usize::from(highs[high_done + k]);
            words.swap(a, b);
        }
        low_done += swaps;
        high_done += swaps;
        if low_done == low_found {
            low += BLOCK;
        }
        if high_done == high_found {
            high -= BLOCK;
        }
    }
    let mut front = low;
    for at in low..high {
        if words[at] & bit != 0 {
            words.swap(front, at);
            front += 1;
        }
    }
    front
}

impl Sieve {
    /// [`Sieve::count`] of two unsorted lists, `xs` (tops) and `ys` (mirrored bottoms):
    /// split in place (see the module) until they are short enough to copy out; where no
    /// sampled pair shares a bit, the longer list in halves. The words are left in another
    /// order. Polls `cancel` and gives way as `count` does; takes no room but the copied
    /// blocks' and theirs below, and where it finds none goes on in place (down to pair
    /// tests of unsorted words).
    pub(in crate::count::join) fn count_in_place(
        &mut self,
        xs: &mut [u64],
        ys: &mut [u64],
        depth: usize,
        cancel: &AtomicBool,
        allowance: &mut Allowance,
    ) -> u64 {
        let (x, y) = (xs.len(), ys.len());
        if x == 0 || y == 0 {
            return 0;
        }
        if depth < POLL_DEPTH {
            if cancel.load(Ordering::Relaxed) {
                return 0;
            }
            give_way();
        }
        if x + y <= self.gather {
            if let Some(count) = self.gathered(xs, ys, depth, cancel, allowance) {
                return count;
            }
            // No room to copy them: short ones are compared as they are.
            if x * y < self.split_pairs() * (x + y) {
                return self.weighted_unsorted(xs, ys);
            }
        }
        let bit = densest(xs, ys, self.layout, self.tier);
        if bit.is_none() && x == 1 && y == 1 {
            return self.weighted_unsorted(xs, ys);
        }
        let mut count = |xs: &mut [u64], ys: &mut [u64], depth: usize| {
            self.count_in_place(xs, ys, depth, cancel, allowance)
        };
        let Some(bit) = bit else {
            // No split to make: the longer list in halves (no pair is compared twice).
            return if x >= y {
                let (a, b) = xs.split_at_mut(x / 2);
                count(a, ys, depth) + count(b, ys, depth)
            } else {
                let (a, b) = ys.split_at_mut(y / 2);
                count(xs, a, depth) + count(xs, b, depth)
            };
        };
        // As `count` splits: the longer list's words with the bit meet the shorter one's
        // without it, and its words without the bit meet all of the shorter one.
        let (x_with, y_with) = (split_in_place(xs, bit), split_in_place(ys, bit));
        if x >= y {
            let (with, without) = xs.split_at_mut(x_with);
            count(with, &mut ys[y_with..], depth + 1) + count(without, ys, depth + 1)
        } else {
            let (with, without) = ys.split_at_mut(y_with);
            count(&mut xs[x_with..], with, depth + 1) + count(xs, without, depth + 1)
        }
    }

    /// [`Sieve::count`] of two unsorted lists, copied out in order of balance (after the
    /// room of the sieve's blocks is given back, if it takes that); `None`, and nothing
    /// counted, if there is no room to copy them.
    fn gathered(
        &mut self,
        xs: &[u64],
        ys: &[u64],
        depth: usize,
        cancel: &AtomicBool,
        allowance: &mut Allowance,
    ) -> Option<u64> {
        let layout = self.layout;
        let [mut tops, mut bottoms] = std::mem::take(&mut self.gathered);
        let mut copied = |allowance: &mut Allowance| {
            let mut copy = |words: &[u64], shift: u32, out: &mut Vec<u64>| {
                out.clear();
                let room = allowance.reserve(out, words.len()).is_ok();
                if room {
                    copy_sorted_by_byte(words, shift, out);
                }
                room
            };
            copy(xs, layout.balance, &mut tops)
                && copy(ys, layout.balance + layout.width, &mut bottoms)
        };
        let mut room = copied(allowance);
        if !room {
            // The copies are taken out, so this gives back the blocks below them.
            self.release(allowance);
            room = copied(allowance);
        }
        let counted = room.then(|| self.count(&tops, &bottoms, depth, cancel, allowance));
        self.gathered = [tops, bottoms];
        counted
    }

    /// Weighted fitting pairs of two unsorted lists, pair by pair (where there is no room
    /// to sort them).
    fn weighted_unsorted(&self, xs: &[u64], ys: &[u64]) -> u64 {
        let (layout, zero) = (self.layout, 2 * self.layout.bias - self.middle);
        let mut total = 0;
        for &x in xs {
            for &y in ys {
                if x & y & layout.diagonals() == 0 {
                    let sum = layout.top(x) + layout.bottom(y) - zero;
                    total += u64::from(sum >= 0) + u64::from(sum > 0);
                }
            }
        }
        total
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::count::join::word::Layout;
    use crate::simd::tiers_to_test;

    /// Words from a xorshift generator seeded with `state`.
    fn words(len: usize, mut state: u64) -> Vec<u64> {
        (0..len)
            .map(|_| {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                state
            })
            .collect()
    }

    #[test]
    fn a_split_in_place_moves_the_words_with_the_bit_to_the_front() {
        for len in [0usize, 1, 5, 64, 128, 129, 200, 1000, 4097] {
            for bit in [1u64, 1 << 17, 1 << 63] {
                let before = words(len, 0x9e37_79b9_7f4a_7c15 ^ len as u64);
                let mut after = before.clone();
                let with = split_in_place(&mut after, bit);
                assert_eq!(with, before.iter().filter(|&&w| w & bit != 0).count());
                assert!(after[..with].iter().all(|&w| w & bit != 0), "{len}, {bit}");
                assert!(after[with..].iter().all(|&w| w & bit == 0), "{len}, {bit}");
                let (mut a, mut b) = (before, after);
                a.sort_unstable();
                b.sort_unstable();
                assert_eq!(a, b, "the same words, {len}");
            }
        }
    }

    #[test]
    fn lists_split_in_place_count_the_pairs_of_the_definition() {
        // Sparse words of the wide layout (n = 20: 38 bits of diagonals, five-bit balances
        // -5..=5 above them), unsorted, the weighted pairs against the definition, every
        // tier; the lists copied out at once, after a few splits in place, or never (split
        // in place down to the pair tests), with all the room wanted, a little, or none.
        let tiers = tiers_to_test("lists_split_in_place_count_the_pairs_of_the_definition");
        let layout = Layout::wide(20);
        let word = |bits: u64, balance: u64, shift: u32| {
            let balance = layout.bias as u64 - 5 + balance % 11;
            (bits & (bits >> 3) & (bits >> 6) & layout.diagonals()) | (balance << shift)
        };
        let make = |len, seed, shift| -> Vec<u64> {
            let (bits, balances) = (words(len, seed), words(len, !seed));
            (bits.iter().zip(&balances))
                .map(|(&b, &w)| word(b, w, shift))
                .collect()
        };
        let xs = make(3001, 0x1234_5678_9abc_def1, layout.balance);
        let ys = make(2503, 0x0fed_cba9_8765_4321, layout.balance + layout.width);
        for middle in [-1, 0, 1] {
            let weight = |x: u64, y: u64| {
                let sum = layout.top(x) + layout.bottom(y) - 2 * layout.bias + middle;
                u64::from(sum >= 0) + u64::from(sum > 0)
            };
            let expected: u64 = (xs.iter())
                .map(|&x| {
                    (ys.iter())
                        .filter(|&&y| x & y & layout.diagonals() == 0)
                        .map(|&y| weight(x, y))
                        .sum::<u64>()
                })
                .sum();
            assert!(expected > 0);
            for &tier in &tiers {
                for gather in [usize::MAX, 2000, 0] {
                    for room in [usize::MAX, 8 * 1000, 0] {
                        let (mut x, mut y) = (xs.clone(), ys.clone());
                        let mut sieve = Sieve::new(middle, tier);
                        sieve.reset(middle, tier, layout);
                        sieve.gather = gather;
                        let (cancel, mut allowance) =
                            (AtomicBool::new(false), Allowance::new(room));
                        let count =
                            sieve.count_in_place(&mut x, &mut y, 0, &cancel, &mut allowance);
                        assert_eq!(
                            count,
                            expected,
                            "{}, {middle}, {gather}, {room}",
                            tier.name()
                        );
                    }
                }
            }
        }
    }
}
