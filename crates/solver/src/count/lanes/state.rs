//! The lanes' state and rounds: the board a lane starts ([`Start`]), the lanes' arrays in
//! one layout ([`CountLanes`]) and their portable round ([`CountLanes::step`]), which the
//! AVX-512 rounds (`avx512.rs`) write out in registers on the same layout. Which boards the
//! lanes take and the loop that runs the rounds live in `lanes.rs`.

use crate::geometry::Square;
use crate::lane::LANES;

/// Rounds between checks for finished lanes.
pub(super) const BURST: usize = 8;

/// Where column 0 sits in the diagonal masks. Backing up shifts a mask back, so it must have
/// kept every bit that was on the board at some row since the lane's first row: columns
/// from `-span` to `n - 1 + span` for a board whose free rows span `span` rows. Both masks
/// keep columns `-OFFSET..64 - OFFSET`, so a board fits when `span <= OFFSET` and
/// `n + span + OFFSET <= 64`.
pub(super) const OFFSET: u32 = 22;

/// A board with queens placed in advance, as a lane starts it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Start {
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

impl Start {
    /// The lane's start for `queens`, whose free rows `rows` (increasing) fit a lane.
    pub(super) fn new(n: u32, queens: &[Square], rows: &[u32]) -> Start {
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
pub(super) struct CountLanes {
    /// Four times the index of the free row each lane fills next.
    pub(super) at: [u64; LANES],
    pub(super) cols: [u64; LANES],
    pub(super) d1: [u64; LANES],
    pub(super) d2: [u64; LANES],
    /// Columns still to try in the lane's row.
    pub(super) avail: [u64; LANES],
    /// The columns placed in the free rows above, the latest in the low 5 bits.
    pub(super) placed: [u64; LANES],
    pub(super) gaps: [u64; LANES],
    pub(super) stop: [u64; LANES],
    /// Completions found since the lane took its board.
    pub(super) found: [u64; LANES],
    /// The board each lane counts, `usize::MAX` when it has none.
    pub(super) job: [usize; LANES],
}

impl CountLanes {
    /// Gives lane `i` the board `start` (job number `job`).
    #[inline]
    pub(super) fn load(&mut self, i: usize, start: &Start, job: usize, full: u64) {
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
    #[inline]
    pub(super) fn idle(&mut self, i: usize) {
        self.avail[i] = 0;
        self.at[i] = 0;
        self.job[i] = usize::MAX;
    }

    /// One round: every lane places its next queen or backs up a row; a lane back at its
    /// first row with nothing left to try stays put. A child is entered only when its row
    /// and the next free row after it keep a free square (forward checking), and a child
    /// in the last free row is not entered: whether its row has a free square is its count.
    #[inline(always)]
    pub(super) fn step(&mut self, full: u64) {
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
    #[inline]
    pub(super) fn finished(&self, i: usize) -> bool {
        self.avail[i] == 0 && self.at[i] == 0
    }
}
