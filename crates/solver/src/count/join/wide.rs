//! The join past the tables (n = 26 to 28, the wide path): no tables, a key's halves found
//! by a search over its columns, a chunk at a time. There a band of seven rows has hundreds
//! of millions of placements (n = 26: 632 M, n = 28: 1.28 G), so tables would take 5.5 to
//! 29 GiB, and a key's lists reach tens of millions of words, so they are made and counted
//! in chunks: the search over the top halves stops when its list is full and goes on from
//! there for the next chunk; each chunk of tops meets each chunk of the bottom halves (kept
//! whole when they fit one, made again per chunk of the tops when not), and the pairs of
//! every chunk pair add up. The search takes about a quarter of a part's time (n = 26), the
//! sieve the rest. The words are laid out as `word.rs`'s [`Layout::wide`] says (five-bit
//! balances above `2n - 2` bits of diagonals), counted by the same sieve (`sieve.rs`).
//! Not here: the keys (`keys.rs`), the parts and their plumbing (`mod.rs`), the tables' path
//! (`tables.rs`, `halves.rs`).

use super::halves::sort_by_byte;
use super::keys::Key;
use super::memory::Allowance;
use super::sieve::Sieve;
use super::tables::Join;
use super::word::{Layout, wide_mirror};
use super::work::Work;
use crate::counts::CountError;
use crate::pool::give_way;
use crate::simd::Tier;
use std::sync::atomic::{AtomicBool, Ordering};

/// Bytes an engine's lists may take on the wide path at most (1.5 GiB: the three lists of
/// [`CHUNK`] words and the sieve's blocks, which took up to about 1.5 GiB per engine when
/// nothing held them, n = 28; two engines and their process stay under 4 GiB).
pub(crate) const ENGINE_BYTES: usize = 3 << 29;

/// Words a wide key's list holds at most at once (2^24: 128 MiB): the top halves' chunk,
/// the bottom halves' and the room to sort either, 384 MiB, and the sieve's blocks in what
/// is left of an engine's allowance.
pub(crate) const CHUNK: usize = 1 << 24;

/// A half's search: the rows from `row` down to the half's last one, each queen on one of
/// `free`'s columns (those of the key not yet taken) where the rows above leave it
/// unattacked (`ld`, `rd` on this row), the balances summed in `balance`.
#[derive(Clone, Copy, Default)]
struct Placing {
    row: u32,
    free: u32,
    ld: u32,
    rd: u32,
    balance: i32,
}

/// A search over a key's halves that stops when its list is full and goes on from there
/// for the next chunk: per row, the placing so far and the columns still to try on it; and
/// what it looks up on the way.
struct Walk {
    stack: [(Placing, u32); 16],
    depth: usize,
    /// Whether every half has been listed.
    done: bool,
    /// Per row, the columns whose queen would attack the middle queen (none on even boards).
    avoid: [u32; 16],
    /// Per row and column, the square's balance ([`Join::balance`]).
    balances: [[i8; 32]; 16],
}

/// Where a half's search puts its words: the list, grown within the allowance up to `limit`
/// words.
struct Sink<'a> {
    out: &'a mut Vec<u64>,
    allowance: &'a mut Allowance,
    limit: usize,
}

impl Sink<'_> {
    /// Adds `word`; false (and nothing added) when the list may not grow.
    #[inline(always)]
    fn push(&mut self, word: u64) -> bool {
        if self.out.len() == self.out.capacity() {
            let (len, limit) = (self.out.len(), self.limit);
            let more = len.clamp(1 << 12, 1 << 22).min(limit.saturating_sub(len));
            if more == 0 || self.allowance.reserve(self.out, more).is_err() {
                return false;
            }
        }
        self.out.push(word);
        true
    }
}

impl Join {
    /// The join for size `n` on the wide path (no tables), its lists in chunks of at most
    /// `chunk` words.
    pub(super) fn wide(n: u32, chunk: usize) -> Join {
        let mut join = Join::bare(n);
        join.chunk = chunk;
        join
    }

    /// The fitting pairs of `key`'s halves on the wide path, its lists in `work` (see the
    /// module), each chunk pair's handed to `tally` as it is counted; `Cancelled` if
    /// `cancel` is raised meanwhile, `OutOfMemory` if not one half fits what `work`'s
    /// allowance has left.
    pub(super) fn wide_pairs(
        &self,
        key: &Key,
        tier: Tier,
        cancel: &AtomicBool,
        work: &mut Work,
        tally: &mut dyn FnMut(u64),
    ) -> Result<u64, CountError> {
        let layout = Layout::wide(self.n);
        let Work {
            tops,
            bottoms,
            scratch,
            sieve,
            allowance,
        } = work;
        let mut total = 0u64;
        // One chunk pair's pairs, added to the total and handed to `tally`.
        let mut count =
            |tops: &[u64], bottoms: &[u64], sieve: &mut Sieve, allowance: &mut Allowance| {
                sieve.reset(self.middle_balance(key), tier, layout);
                let pairs = sieve.count(tops, bottoms, 0, cancel, allowance);
                tally(pairs);
                total = total.checked_add(pairs).ok_or(CountError::Overflow)?;
                Ok::<(), CountError>(())
            };
        // Whether `bottoms` holds all of the key's bottom halves, ready for the sieve (they
        // took one chunk); otherwise they are made again for each chunk of tops.
        let mut whole = false;
        let mut top = self.walk(key.top, key.middle);
        while !top.done {
            self.fill(&mut top, tops, allowance, cancel)?;
            if tops.is_empty() {
                continue;
            }
            sort_by_byte(tops, layout.balance, scratch, allowance)?;
            if whole {
                count(tops, bottoms, sieve, allowance)?;
            } else {
                let mut bottom = self.walk(key.bottom, key.middle);
                let mut first = true;
                while !bottom.done {
                    self.fill(&mut bottom, bottoms, allowance, cancel)?;
                    whole = first && bottom.done;
                    first = false;
                    self.ready_bottoms(bottoms, scratch, allowance)?;
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
    /// mirrored, then sorted by their balance (`scratch` lent for the sort).
    fn ready_bottoms(
        &self,
        words: &mut Vec<u64>,
        scratch: &mut Vec<u64>,
        allowance: &mut Allowance,
    ) -> Result<(), CountError> {
        let layout = Layout::wide(self.n);
        self.mirror(words);
        sort_by_byte(words, layout.balance + layout.width, scratch, allowance)
    }

    /// Turns top halves' words into bottom halves' ([`wide_mirror`]), the balance moved to
    /// the bottom's field.
    fn mirror(&self, words: &mut [u64]) {
        let layout = Layout::wide(self.n);
        let (shift, low, fields) = wide_mirror(self.n);
        for y in words.iter_mut() {
            let balance = *y >> layout.balance;
            let diagonals = *y & fields;
            *y = (diagonals >> shift)
                | ((diagonals & low) << shift)
                | (balance << (layout.balance + layout.width));
        }
    }

    /// A walk over the halves on exactly `columns` at peace with the middle queen on
    /// column `middle` (odd boards).
    fn walk(&self, columns: u32, middle: Option<u32>) -> Walk {
        let start = Placing {
            row: 0,
            free: columns,
            ..Placing::default()
        };
        let mut walk = Walk {
            stack: [(Placing::default(), 0); 16],
            depth: 0,
            done: false,
            avoid: [0; 16],
            balances: [[0; 32]; 16],
        };
        for row in 0..self.m {
            if let Some(q) = middle {
                let d = self.m - row;
                let (left, right) = (q.checked_sub(d), q + d);
                walk.avoid[row as usize] =
                    left.map_or(0, |c| 1 << c) | ((1u64 << right) as u32 & self.full);
            }
            for column in 0..self.n {
                walk.balances[row as usize][column as usize] = self.balance(row, column) as i8;
            }
        }
        walk.stack[0] = (start, self.open(&walk, start));
        walk
    }

    /// The columns a queen of `p`'s row may take: free, unattacked, at peace with the
    /// middle queen.
    #[inline(always)]
    fn open(&self, walk: &Walk, p: Placing) -> u32 {
        p.free & !(p.ld | p.rd | walk.avoid[p.row as usize])
    }

    /// Fills `out` with the next halves of `walk` until it has `chunk` words or the
    /// allowance gives no more room, or the walk is done; `OutOfMemory` if not one word found room,
    /// `Cancelled` if `cancel` is raised meanwhile.
    fn fill(
        &self,
        walk: &mut Walk,
        out: &mut Vec<u64>,
        allowance: &mut Allowance,
        cancel: &AtomicBool,
    ) -> Result<(), CountError> {
        out.clear();
        if cancel.load(Ordering::Relaxed) {
            return Err(CountError::Cancelled);
        }
        let mut sink = Sink {
            out,
            allowance,
            limit: self.chunk,
        };
        self.search(walk, &mut sink);
        if sink.out.is_empty() && !walk.done {
            return Err(CountError::OutOfMemory {
                bytes: (4096 * size_of::<u64>()) as u64,
            });
        }
        give_way();
        Ok(())
    }

    /// `p` with the queen of its row on the column `bit` (which the caller found open).
    #[inline(always)]
    fn step(&self, walk: &Walk, p: Placing, bit: u32) -> Placing {
        let column = bit.trailing_zeros() as usize;
        Placing {
            row: p.row + 1,
            free: p.free ^ bit,
            ld: ((p.ld | bit) << 1) & self.full,
            rd: (p.rd | bit) >> 1,
            balance: p.balance + i32::from(walk.balances[p.row as usize & 15][column & 31]),
        }
    }

    /// Puts into `sink` the word of each half `walk` finds from where it stood, until the
    /// sink is full (the walk then stands on the half that found no room) or the walk is
    /// done, as [`Layout::wide`] lays it out: the left-going field without its column 0
    /// from bit 0, the right-going one from bit `n - 1`, the balance biased above them.
    fn search(&self, walk: &mut Walk, sink: &mut Sink<'_>) {
        let layout = Layout::wide(self.n);
        let (last, right) = (self.m, self.n - 1);
        let mut depth = walk.depth;
        loop {
            let (p, open) = walk.stack[depth];
            if open == 0 {
                if depth == 0 {
                    walk.done = true;
                    break;
                }
                depth -= 1;
                continue;
            }
            let bit = open & open.wrapping_neg();
            let next = self.step(walk, p, bit);
            if next.row == last {
                let field = (next.balance + layout.bias) as u64;
                let word = u64::from(next.ld >> 1)
                    | (u64::from(next.rd) << right)
                    | (field << layout.balance);
                if !sink.push(word) {
                    break;
                }
                walk.stack[depth].1 = open ^ bit;
            } else {
                walk.stack[depth].1 = open ^ bit;
                depth += 1;
                walk.stack[depth & 15] = (next, self.open(walk, next));
            }
        }
        walk.depth = depth;
    }
}

#[cfg(test)]
impl Join {
    /// The fitting pairs of `key`'s top halves whose first rows hold the columns `top` and
    /// bottom halves whose last rows (from the board's last up) hold `bottom`, as the wide
    /// path counts them (the same search, words, mirror, sort and sieve), in `tier`; for
    /// tests that check a part of a large board against a search.
    pub(super) fn wide_pairs_from(
        &self,
        key: &Key,
        top: &[u32],
        bottom: &[u32],
        tier: Tier,
    ) -> Result<u64, CountError> {
        let layout = Layout::wide(self.n);
        let mut work = Work::new(usize::MAX);
        let lists = [(key.top, top), (key.bottom, bottom)];
        for ((columns, rows), out) in lists.into_iter().zip([&mut work.tops, &mut work.bottoms]) {
            // The walk from the placing of `rows`, if they are at peace (with each other
            // and the middle queen).
            let mut walk = self.walk(columns, key.middle);
            let mut p = Some(walk.stack[0].0);
            for &column in rows {
                let bit = 1 << column;
                p = p
                    .filter(|&p| self.open(&walk, p) & bit != 0)
                    .map(|p| self.step(&walk, p, bit));
            }
            let Some(p) = p else {
                continue;
            };
            walk.stack[0] = (p, self.open(&walk, p));
            let mut sink = Sink {
                out,
                allowance: &mut work.allowance,
                limit: usize::MAX,
            };
            self.search(&mut walk, &mut sink);
        }
        let Work {
            tops,
            bottoms,
            scratch,
            sieve,
            allowance,
        } = &mut work;
        self.ready_bottoms(bottoms, scratch, allowance)?;
        sort_by_byte(tops, layout.balance, scratch, allowance)?;
        sieve.reset(self.middle_balance(key), tier, layout);
        Ok(sieve.count(tops, bottoms, 0, &AtomicBool::new(false), allowance))
    }
}
