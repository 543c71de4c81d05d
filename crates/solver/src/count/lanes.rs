//! Lockstep lanes: many boards with queens placed in advance searched at once, one per lane
//! of SIMD registers (AVX-512 written out here, AVX2 left to the compiler).
//!
//! A scalar bitboard search branches on data at every queen it places (which bit next,
//! dead end or not). Here every lane takes one step of its own depth-first search per
//! round, without branching: it places its next queen, or backs up one row. Backing up needs
//! no stack of masks: the diagonal masks are wide enough that shifting them back restores
//! them, and each lane keeps only the columns it placed, 5 bits per row, in one word. A lane
//! whose board is done takes the next board. Which boards to count lives in `mod.rs`, what
//! their counts weigh in `subproblem.rs`, the engines that feed the lanes in `engine.rs`; the
//! scalar search for the rest lives in `board.rs`.
//!
//! Why this is not the enumeration's lane engine (`lockstep.rs`), though both keep the same
//! structure-of-arrays state and share `crate::lane`: a board here has fixed queens
//! between its free rows, so each lane carries its gaps and its own last row, and only the
//! number of completions comes out; the rounds are also written out in AVX-512 instructions
//! (the `avx512` module), which keeps the state in registers between rounds.
//!
//! One piece of over 500 lines: the boards a lane takes (`Start`, `Split`), the lanes'
//! rounds and their AVX-512 copy share one state layout and only make sense together.

use crate::counts::CountError;
use crate::geometry::{Square, attack, peaceful};
use crate::lane::LANES;
use crate::simd::{PerTier, Tier};

/// Rounds between checks for finished lanes.
const BURST: usize = 8;

/// Checks for finished lanes between calls of the pause test (tens of µs apart).
const POLL: usize = 64;

/// Where column 0 sits in the diagonal masks. Backing up shifts a mask back, so it must have
/// kept every bit that was on the board at some row since the lane's first row: columns
/// from `-span` to `n - 1 + span` for a board whose free rows span `span` rows. Both masks
/// keep columns `-OFFSET..64 - OFFSET`, so a board fits when `span <= OFFSET` and
/// `n + span + OFFSET <= 64`.
const OFFSET: u32 = 22;

/// Most free rows a board may have in a lane: the columns of all but the last are packed,
/// 5 bits each, in one word.
const MAX_FREE_ROWS: usize = 13;

/// A board with queens placed in advance, as a lane starts it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Start {
    /// Columns of the placed queens.
    cols: u64,
    /// Diagonals (column minus row) of the placed queens where they cross the first free row,
    /// column `c` at bit `c + OFFSET`.
    d1: u64,
    /// Anti-diagonals (column plus row) of the placed queens, as `d1`.
    d2: u64,
    /// The steps from each free row to the next, 4 bits each, the first row's lowest.
    gaps: u64,
    /// Four times the index of the free row above the last one.
    stop: u64,
}

/// The boards for the lanes whose completions are, together, those of one board: the board
/// itself when it fits a lane, else, one by one, the boards with its first few free rows
/// filled in every peaceful way, as few rows as make the rest fit.
pub(super) struct Split {
    n: u32,
    /// The board's queens, then one per split row filled so far.
    queens: Vec<Square>,
    /// How many of `queens` the board has.
    base: usize,
    /// The free rows to fill.
    split: Vec<u32>,
    /// The free rows left after them (those of every board handed out).
    rest: Vec<u32>,
    /// Per split row, the next column to try.
    column: Vec<u32>,
    /// No board is left to hand out.
    done: bool,
}

impl Split {
    /// The plan for the `n`×`n` board with `queens` placed (on the board, at most one per
    /// row); `None` when two of them attack each other or no split makes it fit a lane.
    pub(super) fn new(n: u32, queens: &[Square]) -> Option<Split> {
        if !peaceful(queens) || n + OFFSET >= 64 {
            return None;
        }
        let free: Vec<u32> = (0..n)
            .filter(|&r| queens.iter().all(|q| q.row != r))
            .collect();
        let split = (0..free.len()).find(|&k| fits(n, &free[k..]))?;
        Some(Split {
            n,
            queens: queens.to_vec(),
            base: queens.len(),
            split: free[..split].to_vec(),
            rest: free[split..].to_vec(),
            column: vec![0; split],
            done: false,
        })
    }
}

#[cfg(test)]
impl Split {
    /// How many free rows are filled before the rest fits a lane.
    pub(super) fn rows_filled(&self) -> usize {
        self.split.len()
    }
}

/// Whether a board of size `n` whose free rows are `rows` (increasing) fits a lane.
fn fits(n: u32, rows: &[u32]) -> bool {
    let (Some(first), Some(last)) = (rows.first(), rows.last()) else {
        return false;
    };
    let span = last - first;
    rows.len() >= 2
        && rows.len() <= MAX_FREE_ROWS
        && span <= OFFSET
        && n + span + OFFSET <= 64
        && rows.windows(2).all(|w| w[1] - w[0] < 16)
}

impl Iterator for Split {
    type Item = Start;

    fn next(&mut self) -> Option<Start> {
        while !self.done {
            let level = self.queens.len() - self.base;
            if level == self.split.len() {
                let start = Start::new(self.n, &self.queens, &self.rest);
                if self.split.is_empty() {
                    self.done = true;
                } else {
                    // Back to the last split row, to try its next column on the next call.
                    self.queens.pop();
                }
                return Some(start);
            }
            let row = self.split[level];
            let next = (self.column[level]..self.n).find(|&column| {
                let q = Square { row, column };
                self.queens.iter().all(|&p| !attack(p, q))
            });
            match next {
                Some(column) => {
                    self.column[level] = column + 1;
                    self.queens.push(Square { row, column });
                    if let Some(deeper) = self.column.get_mut(level + 1) {
                        *deeper = 0;
                    }
                }
                None if level == 0 => self.done = true,
                None => {
                    self.queens.pop();
                }
            }
        }
        None
    }
}

impl Start {
    /// The lane's start for `queens`, whose free rows `rows` (increasing) fit a lane.
    fn new(n: u32, queens: &[Square], rows: &[u32]) -> Start {
        let (first, last) = (i64::from(rows[0]), i64::from(rows[rows.len() - 1]));
        let (n, span) = (i64::from(n), last - first);
        let (mut cols, mut d1, mut d2) = (0u64, 0u64, 0u64);
        for q in queens {
            let (r, c) = (i64::from(q.row), i64::from(q.column));
            cols |= 1 << c;
            // Where the queen's diagonals cross the first free row; kept when they reach the
            // board within the span (`d1` moves right a column per row, `d2` left).
            let down = c - r + first;
            let up = c + r - first;
            if (-span..n).contains(&down) {
                d1 |= 1 << (down + i64::from(OFFSET));
            }
            if (0..n + span).contains(&up) {
                d2 |= 1 << (up + i64::from(OFFSET));
            }
        }
        let gaps = rows
            .windows(2)
            .enumerate()
            .fold(0, |g, (i, w)| g | u64::from(w[1] - w[0]) << (4 * i));
        Start {
            cols,
            d1,
            d2,
            gaps,
            stop: 4 * (rows.len() as u64 - 2),
        }
    }
}

/// The lanes' state, one array element per lane. Aligned to a cache line, so that the
/// AVX-512 rounds load and store each array's halves as whole lines wherever the set lives
/// (on the heap, kept between slices).
#[repr(C, align(64))]
struct CountLanes {
    /// Four times the index of the free row each lane fills next.
    at: [u64; LANES],
    cols: [u64; LANES],
    d1: [u64; LANES],
    d2: [u64; LANES],
    /// Columns still to try in the lane's row.
    avail: [u64; LANES],
    /// The columns placed in the free rows above, the latest in the low 5 bits.
    placed: [u64; LANES],
    gaps: [u64; LANES],
    stop: [u64; LANES],
    /// Completions found since the lane took its board.
    found: [u64; LANES],
    /// The board each lane counts, `usize::MAX` when it has none.
    job: [usize; LANES],
}

impl CountLanes {
    /// Gives lane `i` the board `start` (job number `job`).
    fn load(&mut self, i: usize, start: &Start, job: usize, full: u64) {
        self.at[i] = 0;
        self.cols[i] = start.cols;
        self.d1[i] = start.d1;
        self.d2[i] = start.d2;
        self.avail[i] = !(start.cols | (start.d1 | start.d2) >> OFFSET) & full;
        self.placed[i] = 0;
        self.gaps[i] = start.gaps;
        self.stop[i] = start.stop;
        self.found[i] = 0;
        self.job[i] = job;
    }

    /// Leaves lane `i` idle: done at its first row, it stays put.
    fn idle(&mut self, i: usize) {
        self.avail[i] = 0;
        self.at[i] = 0;
        self.job[i] = usize::MAX;
    }

    /// One round: every lane places its next queen or backs up a row; a lane back at its
    /// first row with nothing left to try stays put. A child is entered only when its row
    /// and the next free row after it keep a free square (forward checking), and a child
    /// in the last free row is not entered: whether its row has a free square is its count.
    #[inline(always)]
    fn step(&mut self, full: u64) {
        for i in 0..LANES {
            let (at, avail, gaps) = (self.at[i], self.avail[i], self.gaps[i]);
            let (cols, d1, d2, placed) = (self.cols[i], self.d1[i], self.d2[i], self.placed[i]);
            // Forward: the lowest column left, into the next free row.
            let bit = avail & avail.wrapping_neg();
            let gap = (gaps.wrapping_shr(at as u32) & 15) as u32;
            let fc = cols | bit;
            let f1 = (d1 | bit << OFFSET).wrapping_shl(gap);
            let f2 = (d2 | bit << OFFSET).wrapping_shr(gap);
            let child = !(fc | (f1 | f2) >> OFFSET) & full;
            // Forward check: the row after the child's must keep a free square too.
            let gap2 = (gaps.wrapping_shr(at as u32 + 4) & 15) as u32;
            let grand = !(fc | (f1.wrapping_shl(gap2) | f2.wrapping_shr(gap2)) >> OFFSET) & full;
            let forward = avail != 0;
            let descend = forward && child != 0 && grand != 0 && at != self.stop[i];
            let hit = forward && child != 0 && at == self.stop[i];
            // Backward: undo the latest placement, keep the columns after it.
            let back = 1u64.wrapping_shl((placed & 31) as u32);
            let bgap = (gaps.wrapping_shr(at.wrapping_sub(4) as u32) & 15) as u32;
            let bc = cols ^ back;
            let b1 = d1.wrapping_shr(bgap) ^ back << OFFSET;
            let b2 = d2.wrapping_shl(bgap) ^ back << OFFSET;
            let bavail = !(bc | (b1 | b2) >> OFFSET) & full & (back << 1).wrapping_neg();
            let go_back = !forward && at != 0;
            self.found[i] += u64::from(hit);
            // Written out here, not called from a shared helper: through a function the
            // compiler no longer turned these picks into selects across the lanes (Count in
            // AVX2 lanes measured 2.5x slower that way).
            let pick = |ahead: u64, behind: u64, here: u64| {
                if descend {
                    ahead
                } else if go_back {
                    behind
                } else {
                    here
                }
            };
            self.at[i] = pick(at + 4, at.wrapping_sub(4), at);
            self.cols[i] = pick(fc, bc, cols);
            self.d1[i] = pick(f1, b1, d1);
            self.d2[i] = pick(f2, b2, d2);
            self.avail[i] = pick(child, bavail, avail ^ bit);
            self.placed[i] = pick(
                placed << 5 | u64::from(bit.trailing_zeros()),
                placed >> 5,
                placed,
            );
        }
    }

    /// Whether lane `i` has finished its board.
    fn finished(&self, i: usize) -> bool {
        self.avail[i] == 0 && self.at[i] == 0
    }
}

/// Where a set of lanes gets its boards and sends their counts.
pub(super) trait Feed {
    /// The next board to count with a tag for it, or `None` when there are no more.
    fn next(&mut self) -> Result<Option<(usize, Start)>, CountError>;
    /// Reports that the board tagged `tag` has `completions` completions.
    fn done(&mut self, tag: usize, completions: u64) -> Result<(), CountError>;
}

/// How a call of [`LaneSet::run`] ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Outcome {
    /// The feed had no more boards and every lane finished its own.
    Done,
    /// The pause test said stop; the lanes keep their boards for the next call.
    Paused,
}

/// One set of lockstep lanes with the boards they are counting, kept between calls of
/// [`LaneSet::run`] so that a count can give its thread to other work and come back.
pub(super) struct LaneSet {
    lanes: CountLanes,
    /// The columns of the board, as a mask.
    full: u64,
    /// Lanes holding a board.
    busy: usize,
    /// Whether the lanes took their first boards.
    loaded: bool,
}

impl LaneSet {
    /// Idle lanes for `n`×`n` boards.
    pub(super) fn new(n: u32) -> LaneSet {
        LaneSet {
            lanes: CountLanes {
                at: [0; LANES],
                cols: [0; LANES],
                d1: [0; LANES],
                d2: [0; LANES],
                avail: [0; LANES],
                placed: [0; LANES],
                gaps: [0; LANES],
                stop: [0; LANES],
                found: [0; LANES],
                job: [usize::MAX; LANES],
            },
            full: (1u64 << n) - 1,
            busy: 0,
            loaded: false,
        }
    }

    /// Counts the completions of the boards `feed` gives, reporting each to `feed` as it
    /// finishes (in no particular order), until there are no more (`Done`) or `pause` says
    /// stop (`Paused`; it is asked every few tens of µs). The rounds run in tier `simd`
    /// (the portable rounds for `Portable`).
    pub(super) fn run(
        &mut self,
        simd: Tier,
        feed: &mut impl Feed,
        pause: &impl Fn() -> bool,
    ) -> Result<Outcome, CountError> {
        simd.run(Rounds {
            set: self,
            feed,
            pause,
        })
    }
}

/// [`count_lanes`], compiled once per tier by [`Tier::run`] (the rounds in AVX-512
/// registers in that tier's copy).
struct Rounds<'a, F, P> {
    set: &'a mut LaneSet,
    feed: &'a mut F,
    pause: &'a P,
}

impl<F: Feed, P: Fn() -> bool> PerTier for Rounds<'_, F, P> {
    type Output = Result<Outcome, CountError>;

    #[inline(always)]
    fn run<const AVX512: bool>(self) -> Self::Output {
        count_lanes::<AVX512>(self.set, self.feed, self.pause)
    }
}

/// The lanes' loop, inlined into one copy per instruction set; `AVX512` runs the rounds
/// with explicit AVX-512 instructions (only where the CPU has them).
#[inline(always)]
fn count_lanes<const AVX512: bool>(
    set: &mut LaneSet,
    feed: &mut impl Feed,
    pause: &impl Fn() -> bool,
) -> Result<Outcome, CountError> {
    let full = set.full;
    let lanes = &mut set.lanes;
    if !set.loaded {
        set.loaded = true;
        for i in 0..LANES {
            if let Some((tag, start)) = feed.next()? {
                lanes.load(i, &start, tag, full);
                set.busy += 1;
            } else {
                lanes.idle(i);
            }
        }
    }
    let mut checks = 0;
    while set.busy > 0 {
        if AVX512 {
            #[cfg(target_arch = "x86_64")]
            // SAFETY: `AVX512` copies are inlined only into `count_avx512`, which runs only
            // for an AVX-512 `Tier`, which proves the CPU has the features (see `simd.rs`).
            unsafe {
                avx512::burst(lanes, full)
            };
        } else {
            for _ in 0..BURST {
                lanes.step(full);
            }
        }
        for i in 0..LANES {
            if lanes.job[i] == usize::MAX || !lanes.finished(i) {
                continue;
            }
            feed.done(lanes.job[i], lanes.found[i])?;
            if let Some((tag, start)) = feed.next()? {
                lanes.load(i, &start, tag, full);
            } else {
                lanes.idle(i);
                set.busy -= 1;
            }
        }
        checks += 1;
        if checks % POLL == 0 && pause() {
            return Ok(Outcome::Paused);
        }
    }
    Ok(Outcome::Done)
}

/// [`CountLanes::step`] written out in AVX-512 instructions: the compiler keeps the lanes' state
/// in memory between rounds when it vectorizes the portable loop, this keeps it in registers.
#[cfg(target_arch = "x86_64")]
mod avx512 {
    use super::{BURST, CountLanes, LANES, OFFSET};
    use std::arch::x86_64::*;

    /// Eight lanes' state in registers.
    struct Group {
        at: __m512i,
        cols: __m512i,
        d1: __m512i,
        d2: __m512i,
        avail: __m512i,
        placed: __m512i,
        gaps: __m512i,
        stop: __m512i,
        found: __m512i,
    }

    /// Runs [`BURST`] rounds of every lane.
    #[target_feature(enable = "avx512f,avx512cd")]
    pub(super) fn burst(lanes: &mut CountLanes, full: u64) {
        const _: () = assert!(LANES == 16);
        let full = _mm512_set1_epi64(full as i64);
        let mut a = load(lanes, 0);
        let mut b = load(lanes, 8);
        for _ in 0..BURST {
            step(&mut a, full);
            step(&mut b, full);
        }
        store(lanes, 0, &a);
        store(lanes, 8, &b);
    }

    #[target_feature(enable = "avx512f")]
    fn load(l: &CountLanes, at: usize) -> Group {
        let get = |a: &[u64; LANES]| {
            // SAFETY: `at + 8 <= LANES`, so the 64 bytes read lie in `a`.
            unsafe { _mm512_loadu_si512(a[at..at + 8].as_ptr().cast()) }
        };
        Group {
            at: get(&l.at),
            cols: get(&l.cols),
            d1: get(&l.d1),
            d2: get(&l.d2),
            avail: get(&l.avail),
            placed: get(&l.placed),
            gaps: get(&l.gaps),
            stop: get(&l.stop),
            found: get(&l.found),
        }
    }

    #[target_feature(enable = "avx512f")]
    fn store(l: &mut CountLanes, at: usize, g: &Group) {
        let put = |a: &mut [u64; LANES], v: __m512i| {
            // SAFETY: `at + 8 <= LANES`, so the 64 bytes written lie in `a`.
            unsafe { _mm512_storeu_si512(a[at..at + 8].as_mut_ptr().cast(), v) }
        };
        put(&mut l.at, g.at);
        put(&mut l.cols, g.cols);
        put(&mut l.d1, g.d1);
        put(&mut l.d2, g.d2);
        put(&mut l.avail, g.avail);
        put(&mut l.placed, g.placed);
        put(&mut l.found, g.found);
    }

    /// One round of eight lanes, as [`CountLanes::step`].
    #[inline]
    #[target_feature(enable = "avx512f,avx512cd")]
    fn step(g: &mut Group, full: __m512i) {
        let zero = _mm512_setzero_si512();
        let one = _mm512_set1_epi64(1);
        let four = _mm512_set1_epi64(4);
        let nibble = _mm512_set1_epi64(15);
        let low5 = _mm512_set1_epi64(31);
        let top = _mm512_set1_epi64(63);
        // Forward: the lowest column left, into the next free row.
        let bit = _mm512_and_si512(g.avail, _mm512_sub_epi64(zero, g.avail));
        let gap = _mm512_and_si512(_mm512_srlv_epi64(g.gaps, g.at), nibble);
        let fc = _mm512_or_si512(g.cols, bit);
        let shifted = _mm512_slli_epi64::<OFFSET>(bit);
        let f1 = _mm512_sllv_epi64(_mm512_or_si512(g.d1, shifted), gap);
        let f2 = _mm512_srlv_epi64(_mm512_or_si512(g.d2, shifted), gap);
        let taken = _mm512_or_si512(fc, _mm512_srli_epi64::<OFFSET>(_mm512_or_si512(f1, f2)));
        let child = _mm512_andnot_si512(taken, full);
        let has = _mm512_test_epi64_mask(g.avail, g.avail);
        let alive = has & _mm512_test_epi64_mask(child, child);
        let at_stop = _mm512_cmpeq_epi64_mask(g.at, g.stop);
        // Forward check: the row after the child's must keep a free square too.
        let gap2 = _mm512_and_si512(
            _mm512_srlv_epi64(g.gaps, _mm512_add_epi64(g.at, four)),
            nibble,
        );
        let g1 = _mm512_sllv_epi64(f1, gap2);
        let g2 = _mm512_srlv_epi64(f2, gap2);
        let gtaken = _mm512_or_si512(fc, _mm512_srli_epi64::<OFFSET>(_mm512_or_si512(g1, g2)));
        let grand = _mm512_andnot_si512(gtaken, full);
        let descend = alive & !at_stop & _mm512_test_epi64_mask(grand, grand);
        let hit = alive & at_stop;
        // Backward: undo the latest placement, keep the columns after it.
        let back = _mm512_sllv_epi64(one, _mm512_and_si512(g.placed, low5));
        let up = _mm512_sub_epi64(g.at, four);
        let bgap = _mm512_and_si512(_mm512_srlv_epi64(g.gaps, up), nibble);
        let back_shifted = _mm512_slli_epi64::<OFFSET>(back);
        let bc = _mm512_xor_si512(g.cols, back);
        let b1 = _mm512_xor_si512(_mm512_srlv_epi64(g.d1, bgap), back_shifted);
        let b2 = _mm512_xor_si512(_mm512_sllv_epi64(g.d2, bgap), back_shifted);
        let btaken = _mm512_or_si512(bc, _mm512_srli_epi64::<OFFSET>(_mm512_or_si512(b1, b2)));
        let after = _mm512_sub_epi64(zero, _mm512_slli_epi64::<1>(back));
        let bavail = _mm512_and_si512(_mm512_andnot_si512(btaken, full), after);
        let go_back = !has & _mm512_test_epi64_mask(g.at, g.at);
        // Each lane takes its move.
        let pick = |here: __m512i, ahead: __m512i, behind: __m512i| {
            _mm512_mask_mov_epi64(_mm512_mask_mov_epi64(here, descend, ahead), go_back, behind)
        };
        g.found = _mm512_mask_add_epi64(g.found, hit, g.found, one);
        g.at = pick(g.at, _mm512_add_epi64(g.at, four), up);
        g.cols = pick(g.cols, fc, bc);
        g.d1 = pick(g.d1, f1, b1);
        g.d2 = pick(g.d2, f2, b2);
        g.avail = pick(_mm512_xor_si512(g.avail, bit), child, bavail);
        let column = _mm512_sub_epi64(top, _mm512_lzcnt_epi64(bit));
        let pushed = _mm512_or_si512(_mm512_slli_epi64::<5>(g.placed), column);
        g.placed = pick(g.placed, pushed, _mm512_srli_epi64::<5>(g.placed));
    }
}
