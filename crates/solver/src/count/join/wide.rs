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
//! Not here: the keys (`keys.rs`), the parts and their plumbing (`mod.rs`), the tables' path
//! (`tables.rs`, `halves.rs`), the kernel that joins a head with a group's tails
//! (`kernels.rs`).

use super::halves::sort_by_byte;
use super::kernels::extend_wide;
use super::keys::{BINOMIAL, Key, rank};
use super::memory::Allowance;
use super::sieve::{Piece, Sieve, densest};
use super::tables::Join;
use super::word::{Layout, wide_mirror};
use super::work::Work;
use crate::counts::CountError;
use crate::pool::give_way;
use crate::simd::Tier;
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

/// Halves of each list a key's cut in pieces takes its bit from ([`Join::cut_bit`]): the
/// first ones its bands make, the same whatever the chunks and the engine's room.
const CUT_SAMPLE: usize = 1 << 12;

/// A key's halves on one set of columns, made of two bands: the placements of the half's
/// first rows (the heads), in the order a search finds them, and of its last rows (the
/// tails, placed as if no head were there), grouped by the columns they leave (a group is
/// the set of columns a head takes), so that a half is a head and a tail of its group that
/// fits it; and where the next halves come from ([`Join::fill`] goes on from there). Kept
/// from key to key in an engine's [`Work`], its room within the engine's allowance.
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

impl Join {
    /// The join for size `n` on the wide path (no tables), its lists in chunks of at most
    /// `chunk` words.
    pub(super) fn wide(n: u32, chunk: usize) -> Join {
        let mut join = Join::bare(n);
        join.chunk = chunk;
        join
    }

    /// The fitting pairs of `key`'s halves on the wide path (`piece`'s of them), its lists in
    /// `work` (see the module), each chunk pair's handed to `tally` as it is counted;
    /// `Cancelled` if `cancel` is raised meanwhile, `OutOfMemory` if the bands or not one
    /// half fit what `work`'s allowance has left.
    pub(super) fn wide_pairs(
        &self,
        key: &Key,
        piece: Piece,
        tier: Tier,
        cancel: &AtomicBool,
        work: &mut Work,
        tally: &mut dyn FnMut(u64),
    ) -> Result<u64, CountError> {
        let every = [!0; 16];
        let [mut top, mut bottom] = std::mem::take(&mut work.bands);
        let mut bands = |work: &mut Work| {
            self.key_bands(&mut top, key.top, key.middle, &every, &mut work.allowance)?;
            self.key_bands(
                &mut bottom,
                key.bottom,
                key.middle,
                &every,
                &mut work.allowance,
            )
        };
        // The lists and the sieve make do with whatever room the bands leave.
        let counted = work
            .with_spare_room(&mut bands)
            .and_then(|()| match piece {
                Piece::Whole => Ok(0),
                _ => self.cut_bit(&mut top, &mut bottom, tier, cancel, work),
            })
            .and_then(|bit| {
                let (top, bottom, cut) = (&mut top, &mut bottom, (piece, bit));
                self.chunk_pairs(key, top, bottom, cut, tier, cancel, work, tally)
            });
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
        tier: Tier,
        cancel: &AtomicBool,
        work: &mut Work,
    ) -> Result<u64, CountError> {
        let sampler = Join::wide(self.n, CUT_SAMPLE);
        let Work {
            tops,
            bottoms,
            scratch,
            allowance,
            ..
        } = work;
        for (bands, list) in [(&mut *top, &mut *tops), (&mut *bottom, &mut *bottoms)] {
            bands.restart();
            sampler.fill(bands, list, allowance, cancel, tier)?;
            if list.len() < CUT_SAMPLE && !bands.done {
                return Err(CountError::OutOfMemory {
                    bytes: (CUT_SAMPLE * size_of::<u64>()) as u64,
                });
            }
            bands.restart();
        }
        self.ready_bottoms(bottoms, scratch, allowance)?;
        Ok(densest(tops, bottoms, Layout::wide(self.n), tier).unwrap_or(0))
    }

    /// The pairs of the halves `top` and `bottom` list, chunk by chunk (see the module), of
    /// them only those this side of the cut `(piece, bit)` ([`Piece`]).
    #[allow(clippy::too_many_arguments)]
    fn chunk_pairs(
        &self,
        key: &Key,
        top: &mut KeyBands,
        bottom: &mut KeyBands,
        (piece, bit): (Piece, u64),
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
            ..
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
        while !top.done {
            self.fill(top, tops, allowance, cancel, tier)?;
            if tops.is_empty() {
                continue;
            }
            sort_by_byte(tops, layout.balance, scratch, allowance)?;
            piece.keep_tops(bit, tops);
            if whole {
                count(tops, bottoms, sieve, allowance)?;
            } else {
                bottom.restart();
                let mut first = true;
                while !bottom.done {
                    self.fill(bottom, bottoms, allowance, cancel, tier)?;
                    whole = first && bottom.done;
                    first = false;
                    self.ready_bottoms(bottoms, scratch, allowance)?;
                    piece.keep_bottoms(bit, bottoms);
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

    /// Makes `bands` the two bands of the halves on exactly `columns` at peace with the
    /// middle queen on column `middle` (odd boards), row `r`'s queen on a column of
    /// `rows[r]`, grouped by the head's columns, their room grown within `allowance`.
    fn key_bands(
        &self,
        bands: &mut KeyBands,
        columns: u32,
        middle: Option<u32>,
        rows: &[u32; 16],
        allowance: &mut Allowance,
    ) -> Result<(), CountError> {
        let mut lookup = Lookup {
            open: [0; 16],
            balances: [[0; 32]; 16],
        };
        for row in 0..self.m {
            let mut avoid = 0;
            if let Some(q) = middle {
                let d = self.m - row;
                let (left, right) = (q.checked_sub(d), q + d);
                avoid = left.map_or(0, |c| 1 << c) | ((1u64 << right) as u32 & self.full);
            }
            lookup.open[row as usize] = rows[row as usize] & !avoid;
            for column in 0..self.n {
                lookup.balances[row as usize][column as usize] = self.balance(row, column) as i8;
            }
        }
        // A column's place among the key's: a head's group is the colex rank of its columns
        // so numbered.
        let mut place = [0u32; 32];
        for column in 0..self.n {
            place[column as usize] = (columns & ((1 << column) - 1)).count_ones();
        }
        let (h, m) = (self.head, self.m);
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
        bands.restart();
        let start = Placing {
            free: columns,
            ld: 0,
            rd: 0,
            back: 0,
            balance: 0,
        };
        let layout = Layout::wide(self.n);
        // A placement's share of the half's word: its diagonals moved down to the row under
        // the half (`shift` rows on), its balance plus `bias`.
        let part = |p: &Placing, shift: u32, bias: i32| {
            let (ld, rd) = ((p.ld << shift) & self.full, p.rd >> shift);
            (u64::from(ld >> 1) | (u64::from(rd) << (self.n - 1)))
                .wrapping_add(((p.balance + bias) as i64 as u64) << layout.balance)
        };
        // The heads in the order the search finds them, so that the halves of a chunk
        // share their first rows as a search's would (which spares the sieve work when a
        // key takes many chunks): counted, then listed.
        let mut heads = 0;
        self.band(&lookup, 0..h, start, &mut |_| heads += 1);
        bands.heads.clear();
        allowance.reserve(&mut bands.heads, 3 * heads)?;
        self.band(&lookup, 0..h, start, &mut |p| {
            let test = u64::from(p.ld) | (u64::from(p.rd) << self.n);
            let group = group(columns ^ p.free) as u64;
            bands.heads.extend([test, part(&p, m - h, 0), group]);
        });
        // The tails by the group of the columns they leave: counted, then put in place.
        let starts = &mut bands.tail_starts;
        starts.clear();
        starts.resize(groups + 1, 0);
        self.band(&lookup, h..m, start, &mut |p| {
            starts[group(p.free) + 1] += 1
        });
        for g in 0..groups {
            starts[g + 1] += starts[g];
        }
        let total = starts[groups] as usize;
        let mut next = starts.clone();
        for list in [&mut bands.tail_tests, &mut bands.tail_parts] {
            list.clear();
            allowance.reserve(list, total)?;
            list.resize(total, 0);
        }
        self.band(&lookup, h..m, start, &mut |p| {
            let slot = &mut next[group(p.free)];
            let at = *slot as usize;
            *slot += 1;
            bands.tail_tests[at] = p.back;
            bands.tail_parts[at] = part(&p, 0, layout.bias);
        });
        Ok(())
    }

    /// Hands `visit` every placement of the rows `rows` from `p` (its first row's queen
    /// first), each queen on a free column `lookup` leaves open that the queens above in
    /// the band do not attack.
    fn band(
        &self,
        lookup: &Lookup,
        rows: std::ops::Range<u32>,
        p: Placing,
        visit: &mut impl FnMut(Placing),
    ) {
        self.place(lookup, rows.start, rows.start, rows.end, p, visit)
    }

    /// [`Join::band`] from row `row` on (the band's first row `first`, its end `end`).
    fn place(
        &self,
        lookup: &Lookup,
        first: u32,
        row: u32,
        end: u32,
        p: Placing,
        visit: &mut impl FnMut(Placing),
    ) {
        if row == end {
            visit(p);
            return;
        }
        let mut open = p.free & !(p.ld | p.rd) & lookup.open[row as usize & 15];
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
                    + i32::from(lookup.balances[row as usize & 15][column as usize & 31]),
            };
            self.place(lookup, first, row + 1, end, next, visit);
        }
    }

    /// Fills `out` with the next halves of `bands` until it has `chunk` words or the
    /// allowance gives no more room, or every half is listed; `OutOfMemory` if not one word
    /// found room, `Cancelled` if `cancel` is raised meanwhile.
    fn fill(
        &self,
        bands: &mut KeyBands,
        out: &mut Vec<u64>,
        allowance: &mut Allowance,
        cancel: &AtomicBool,
        tier: Tier,
    ) -> Result<(), CountError> {
        out.clear();
        if cancel.load(Ordering::Relaxed) {
            return Err(CountError::Cancelled);
        }
        let limit = self.chunk;
        let heads = bands.heads.len() / 3;
        let (mut h, mut t) = bands.at;
        'heads: while h < heads {
            let head = [bands.heads[3 * h], bands.heads[3 * h + 1]];
            let group = bands.heads[3 * h + 2] as usize;
            let tails = bands.tail_starts[group] as usize..bands.tail_starts[group + 1] as usize;
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
                    &bands.tail_tests[from..from + take],
                    &bands.tail_parts[from..from + take],
                    tier,
                );
                t += take;
            }
            t = 0;
            h += 1;
        }
        bands.at = (h, t);
        bands.done = h == heads;
        give_way();
        Ok(())
    }
}

impl KeyBands {
    /// Lists its halves again from the first.
    fn restart(&mut self) {
        self.at = (0, 0);
        self.done = false;
    }

    /// Bytes its bands hold room for now.
    #[cfg(test)]
    pub(super) fn bytes(&self) -> usize {
        let words = self.heads.capacity() + self.tail_tests.capacity() + self.tail_parts.capacity();
        words * size_of::<u64>()
    }
}

#[cfg(test)]
impl Join {
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
        let layout = Layout::wide(self.n);
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
            self.key_bands(
                &mut bands,
                columns,
                key.middle,
                &fixed(rows),
                &mut work.allowance,
            )?;
            let join = Join::wide(self.n, usize::MAX);
            while !bands.done {
                let mut chunk = Vec::new();
                join.fill(
                    &mut bands,
                    &mut chunk,
                    &mut work.allowance,
                    &AtomicBool::new(false),
                    tier,
                )?;
                out.extend_from_slice(&chunk);
            }
        }
        let [mut tops, mut bottoms] = lists;
        let Work {
            scratch,
            sieve,
            allowance,
            ..
        } = &mut work;
        self.ready_bottoms(&mut bottoms, scratch, allowance)?;
        sort_by_byte(&mut tops, layout.balance, scratch, allowance)?;
        sieve.reset(self.middle_balance(key), tier, layout);
        Ok(sieve.count(&tops, &bottoms, 0, &AtomicBool::new(false), allowance))
    }
}
