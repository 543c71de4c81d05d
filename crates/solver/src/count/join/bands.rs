//! A key's own bands on the wide path ([`KeyBands`]): the placements of a half's first rows
//! (heads) and of its last rows (tails, placed as if no head were there) on exactly the
//! key's columns, found by a small search ([`Lookup::band`]), the tails grouped by the
//! columns a head takes; and the halves they make, listed a chunk at a time
//! ([`KeyBands::fill`]) by the wide kernel (`kernels/`). What is done with the chunks is
//! `wide.rs`'s; the tables' path makes its halves from tables instead (`tables.rs`).

use super::kernels::extend_wide;
use super::keys::{BINOMIAL, rank};
use super::memory::Allowance;
use super::sizes::Sizes;
use super::word::Layout;
use crate::counts::CountError;
use crate::pool::give_way;
use crate::simd::Tier;
use std::sync::atomic::{AtomicBool, Ordering};

/// A key's halves on one set of columns, made of two bands: the placements of the half's
/// first rows (the heads), in the order a search finds them, and of its last rows (the
/// tails, placed as if no head were there), grouped by the columns they leave (a group is
/// the set of columns a head takes), so that a half is a head and a tail of its group that
/// fits it; and where the next halves come from ([`KeyBands::fill`] goes on from there). Kept
/// from key to key in an engine's `Work` (`work.rs`), its room within the engine's allowance.
#[derive(Default)]
pub(super) struct KeyBands {
    /// Each head's test word (the diagonals it attacks on the tail's first row), its share
    /// of the half's word and its group (the colex rank of its columns among the key's), in
    /// threes.
    heads: Vec<u64>,
    /// Per group, where its tails start in `tail_tests` and `tail_parts`, and where they
    /// end after the last.
    tail_starts: Vec<u32>,
    /// Each tail's test word: its queens' diagonals traced back to its first row.
    tail_tests: Vec<u64>,
    /// Each tail's share of the half's word (its balance biased).
    tail_parts: Vec<u64>,
    /// The head and the tail within its group's the next halves come from.
    at: (usize, usize),
    /// Whether every half has been listed.
    done: bool,
}

/// What a band's search looks up: per row, the columns the band may take (all but where a
/// test fixes them) less those whose queen would attack the middle queen, and each square's
/// balance.
struct Lookup {
    /// The board's size and all of its columns.
    n: u32,
    full: u32,
    open: [u32; 16],
    balances: [[i8; 32]; 16],
}

/// A band's search so far: the columns of the key not yet taken, the diagonals the queens
/// attack on the next row, the same traced back to the band's first row (a tail's test
/// word), the balances summed.
#[derive(Clone, Copy)]
struct Placing {
    free: u32,
    ld: u32,
    rd: u32,
    back: u64,
    balance: i32,
}

impl KeyBands {
    /// Lists its halves again from the first.
    pub(super) fn restart(&mut self) {
        self.at = (0, 0);
        self.done = false;
    }

    /// Bytes its bands hold room for now.
    #[cfg(test)]
    pub(super) fn bytes(&self) -> usize {
        let words = self.heads.capacity() + self.tail_tests.capacity() + self.tail_parts.capacity();
        words * size_of::<u64>()
    }

    /// Whether every half has been listed.
    pub(super) fn done(&self) -> bool {
        self.done
    }
    /// Makes these the two bands of the halves on exactly `columns` at peace with the
    /// middle queen on column `middle` (odd boards), row `r`'s queen on a column of
    /// `rows[r]`, grouped by the head's columns, their room grown within `allowance`.
    pub(super) fn make(
        &mut self,
        sizes: &Sizes,
        columns: u32,
        middle: Option<u32>,
        rows: &[u32; 16],
        allowance: &mut Allowance,
    ) -> Result<(), CountError> {
        let mut lookup = Lookup {
            n: sizes.n,
            full: sizes.full,
            open: [0; 16],
            balances: [[0; 32]; 16],
        };
        for row in 0..sizes.m {
            let mut avoid = 0;
            if let Some(q) = middle {
                let d = sizes.m - row;
                let (left, right) = (q.checked_sub(d), q + d);
                avoid = left.map_or(0, |c| 1 << c) | ((1u64 << right) as u32 & sizes.full);
            }
            lookup.open[row as usize] = rows[row as usize] & !avoid;
            for column in 0..sizes.n {
                lookup.balances[row as usize][column as usize] = sizes.balance(row, column) as i8;
            }
        }
        // A column's place among the key's: a head's group is the colex rank of its columns
        // so numbered.
        let mut place = [0u32; 32];
        for column in 0..sizes.n {
            place[column as usize] = (columns & ((1 << column) - 1)).count_ones();
        }
        let (h, m) = (sizes.head, sizes.m);
        let group = |set: u32| {
            let mut local = 0;
            let mut rest = set;
            while rest != 0 {
                local |= 1 << place[rest.trailing_zeros() as usize];
                rest &= rest - 1;
            }
            rank(local, h)
        };
        let groups = BINOMIAL[m as usize][h as usize] as usize;
        self.restart();
        let start = Placing {
            free: columns,
            ld: 0,
            rd: 0,
            back: 0,
            balance: 0,
        };
        let layout = Layout::wide(sizes.n);
        // A placement's share of the half's word: its diagonals moved down to the row under
        // the half (`shift` rows on), its balance plus `bias`.
        let part = |p: &Placing, shift: u32, bias: i32| {
            let (ld, rd) = ((p.ld << shift) & sizes.full, p.rd >> shift);
            (u64::from(ld >> 1) | (u64::from(rd) << (sizes.n - 1)))
                .wrapping_add(((p.balance + bias) as i64 as u64) << layout.balance)
        };
        // The heads in the order the search finds them, so that the halves of a chunk
        // share their first rows as a search's would (which spares the sieve work when a
        // key takes many chunks): counted, then listed.
        let mut heads = 0;
        lookup.band(0..h, start, &mut |_| heads += 1);
        self.heads.clear();
        allowance.reserve(&mut self.heads, 3 * heads)?;
        lookup.band(0..h, start, &mut |p| {
            let test = u64::from(p.ld) | (u64::from(p.rd) << sizes.n);
            let group = group(columns ^ p.free) as u64;
            self.heads.extend([test, part(&p, m - h, 0), group]);
        });
        // The tails by the group of the columns they leave: counted, then put in place.
        let starts = &mut self.tail_starts;
        starts.clear();
        starts.resize(groups + 1, 0);
        lookup.band(h..m, start, &mut |p| starts[group(p.free) + 1] += 1);
        for g in 0..groups {
            starts[g + 1] += starts[g];
        }
        let total = starts[groups] as usize;
        let mut next = starts.clone();
        for list in [&mut self.tail_tests, &mut self.tail_parts] {
            list.clear();
            allowance.reserve(list, total)?;
            list.resize(total, 0);
        }
        lookup.band(h..m, start, &mut |p| {
            let slot = &mut next[group(p.free)];
            let at = *slot as usize;
            *slot += 1;
            self.tail_tests[at] = p.back;
            self.tail_parts[at] = part(&p, 0, layout.bias);
        });
        Ok(())
    }

    /// Fills `out` with the next halves of these bands until it has `chunk` words or the
    /// allowance gives no more room, or every half is listed; `OutOfMemory` if not one word
    /// found room, `Cancelled` if `cancel` is raised meanwhile.
    pub(super) fn fill(
        &mut self,
        chunk: usize,
        out: &mut Vec<u64>,
        allowance: &mut Allowance,
        cancel: &AtomicBool,
        tier: Tier,
    ) -> Result<(), CountError> {
        out.clear();
        if cancel.load(Ordering::Relaxed) {
            return Err(CountError::Cancelled);
        }
        let limit = chunk;
        let heads = self.heads.len() / 3;
        let (mut h, mut t) = self.at;
        'heads: while h < heads {
            let head = [self.heads[3 * h], self.heads[3 * h + 1]];
            let group = self.heads[3 * h + 2] as usize;
            let tails = self.tail_starts[group] as usize..self.tail_starts[group + 1] as usize;
            while tails.start + t < tails.end {
                let room = limit - out.len();
                let take = (tails.end - tails.start - t).min(room);
                if take == 0 {
                    break 'heads;
                }
                if out.capacity() - out.len() < take + 8 {
                    let more = out.len().clamp(1 << 12, 1 << 22).max(take + 8);
                    if allowance.reserve(out, more).is_err()
                        && allowance.reserve(out, take + 8).is_err()
                    {
                        if out.is_empty() {
                            return Err(CountError::OutOfMemory {
                                bytes: ((take + 8) * size_of::<u64>()) as u64,
                            });
                        }
                        break 'heads;
                    }
                }
                let from = tails.start + t;
                extend_wide(
                    out,
                    head,
                    &self.tail_tests[from..from + take],
                    &self.tail_parts[from..from + take],
                    tier,
                );
                t += take;
            }
            t = 0;
            h += 1;
        }
        self.at = (h, t);
        self.done = h == heads;
        give_way();
        Ok(())
    }
}

impl Lookup {
    /// Hands `visit` every placement of the rows `rows` from `p` (its first row's queen
    /// first), each queen on a free column the lookup leaves open that the queens above in
    /// the band do not attack.
    fn band(&self, rows: std::ops::Range<u32>, p: Placing, visit: &mut impl FnMut(Placing)) {
        self.place(rows.start, rows.start, rows.end, p, visit)
    }

    /// [`Lookup::band`] from row `row` on (the band's first row `first`, its end `end`).
    fn place(&self, first: u32, row: u32, end: u32, p: Placing, visit: &mut impl FnMut(Placing)) {
        if row == end {
            visit(p);
            return;
        }
        let mut open = p.free & !(p.ld | p.rd) & self.open[row as usize & 15];
        let k = row - first;
        while open != 0 {
            let bit = open & open.wrapping_neg();
            open ^= bit;
            let column = bit.trailing_zeros();
            // Her diagonals traced back to the band's first row (those that leave the board
            // there meet no queen above).
            let left = column.checked_sub(k).map_or(0, |c| 1u64 << c);
            let right = if column + k < self.n {
                1u64 << (column + k + self.n)
            } else {
                0
            };
            let next = Placing {
                free: p.free ^ bit,
                ld: ((p.ld | bit) << 1) & self.full,
                rd: (p.rd | bit) >> 1,
                back: p.back | left | right,
                balance: p.balance
                    + i32::from(self.balances[row as usize & 15][column as usize & 31]),
            };
            self.place(first, row + 1, end, next, visit);
        }
    }
}
