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
//! (`lanes/avx512.rs`), which keeps the state in registers between rounds.
//!
//! The boards a lane takes (`Start`, `Split`) and the lanes' rounds share one state layout
//! and live together here; the rounds' AVX-512 copy is `lanes/avx512.rs`.

use crate::counts::CountError;
use crate::geometry::{Square, attack, peaceful};
use crate::lane::LANES;
use crate::simd::{PerTier, Tier};

mod state;

// Each of these two is gated once, by its first line, and defines the `avx512_burst!` the
// lanes' loop calls (so they are declared before it): `generic` off x86-64 (and in tests,
// so that a change that breaks it shows on x86-64 too), `avx512` on x86-64, declared after
// `generic` so that its macro shadows the generic one where tests compile both.
/// The portable rounds in the AVX-512 rounds' place off x86-64 (see its module).
#[macro_use]
mod generic;
/// The lanes' rounds in AVX-512 registers, on x86-64 (see its module).
#[macro_use]
mod avx512;

pub(super) use self::state::Start;
use self::state::{BURST, CountLanes, OFFSET};

/// Checks for finished lanes between calls of the pause test (tens of µs apart).
const POLL: usize = 64;

/// Most free rows a board may have in a lane: the columns of all but the last are packed,
/// 5 bits each, in one word.
const MAX_FREE_ROWS: usize = 13;

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
            // Idle lanes start as `lockstep.rs`'s do (duplicates pairs the two): the first
            // six arrays are alike, the rest are each loop's own, and one struct for both
            // would carry fields the other loop never reads through its hottest code.
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
            // SAFETY: the `AVX512` copy runs only inside `Tier::run`'s AVX-512 copy, for an
            // AVX-512 `Tier`, which proves the CPU has the features (see `simd.rs`).
            unsafe { avx512_burst!(lanes, full) };
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
