//! The bitboard backtracking search (`Backtrack`): one search for enumeration (boards pushed
//! into a [`Sink`] in lexicographic order, with resume and limit) and a separate counting
//! path. Not here: the lanes plain questions take (`lockstep.rs`), the sink and the counts'
//! types (`sink.rs`, `counts.rs`).
//!
//! Rows are placed top to bottom and each row tries its columns in ascending order, so
//! boards come out in lexicographic order of their column vectors. Shards are sets of the
//! search tree's prefixes: the prefixes at a split depth, numbered in lexicographic order,
//! go round-robin to the parts. The split depth depends only on the problem, never on
//! `start_after` or `limit`, so a resumed or paged shard is the same shard.
//!
//! One piece of over 500 lines: the entry points, the visitors and the one recursive search
//! they share (its split, resume bound and prefix walk) only make sense together.

use super::counts::{CountError, Counts};
use super::geometry::{MAX, Masks, bits, full_mask};
use super::lockstep;
use super::problem::Problem;
use super::simd::{Tier, TierKind, tier};
use super::sink::Sink;
use super::symmetry::{class_size, corner_mask};
use std::ops::ControlFlow;
use std::sync::atomic::{AtomicBool, Ordering};

/// The search polls its sink (or cancel flag) once every this many nodes: often enough to
/// stop within microseconds, rarely enough to cost nothing.
const POLL_EVERY: u64 = 1 << 12;

/// Prefixes per part the shard split aims for, so that round-robin parts balance.
const PREFIXES_PER_PART: u64 = 4;

/// The split stops deepening once it has this many prefixes: enough for any useful number of
/// parts, small enough to walk for every request.
const MAX_SPLIT_PREFIXES: u64 = 1 << 16;

/// Node budget for choosing the split depth (a few milliseconds of search); past it the
/// split keeps the depth it had, so a sparse, heavily constrained tree costs little.
const SPLIT_NODE_BUDGET: u64 = 1 << 22;

/// Pushes the boards of `problem` into `sink` in lexicographic order: only those after
/// `start_after` (if given; `n` columns each below `n`), at most `limit` of them (if given).
/// Returns `Break` when the sink stopped the search.
pub fn enumerate<S: Sink>(
    problem: &Problem,
    start_after: Option<&[u8]>,
    limit: Option<u64>,
    sink: &mut S,
) -> ControlFlow<()> {
    if limit == Some(0) {
        return ControlFlow::Continue(());
    }
    let mut limited = Limited {
        sink,
        remaining: limit.unwrap_or(u64::MAX),
    };
    let flow = if plain(problem) {
        enumerate_under(problem, &[], start_after, &mut limited)
    } else {
        let mut visitor = Emit {
            sink: &mut limited,
            fundamental: problem.fundamental(),
        };
        Backtrack::new(problem, problem.fundamental()).run(start_after, &mut visitor)
    };
    // Stopped by the limit: the enumeration is complete.
    if limited.remaining == 0 {
        return ControlFlow::Continue(());
    }
    flow
}

/// A sink that passes at most `remaining` boards on, then stops the search.
struct Limited<'a, S: Sink> {
    sink: &'a mut S,
    remaining: u64,
}

impl<S: Sink> Sink for Limited<'_, S> {
    fn push(&mut self, columns: &[u8]) -> ControlFlow<()> {
        self.sink.push(columns)?;
        self.remaining -= 1;
        if self.remaining == 0 {
            return ControlFlow::Break(());
        }
        ControlFlow::Continue(())
    }

    fn poll(&mut self, at: &[u8]) -> ControlFlow<()> {
        self.sink.poll(at)
    }
}

/// Pushes the boards of `problem` whose first rows are `prefix` into `sink`, in
/// lexicographic order, only those after `start_after` (if given): one task of a search split
/// by prefixes. The boards of all prefixes of one length, in lexicographic order of the
/// prefixes, are exactly [`enumerate`]'s without a limit. Returns `Break` when the sink
/// stopped the search.
pub fn enumerate_under<S: Sink>(
    problem: &Problem,
    prefix: &[u8],
    start_after: Option<&[u8]>,
    sink: &mut S,
) -> ControlFlow<()> {
    // The lanes where the CPU has SIMD registers for them; without, the scalar search is
    // faster than the portable rounds.
    let simd = tier();
    let path = match simd.kind() {
        TierKind::Portable => Path::Scalar,
        _ => Path::Lanes(simd),
    };
    enumerate_under_by(problem, prefix, start_after, sink, path)
}

/// Which search [`enumerate_under_by`] runs for plain questions.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Path {
    /// The scalar search, for every question.
    Scalar,
    /// The lanes of `lockstep.rs` in this tier (`Portable`: the portable rounds).
    Lanes(Tier),
}

/// [`enumerate_under`] by `path`: plain questions (no fixed queens, every solution, one
/// shard) take the lanes when it says so and the board leaves them rows; the subtree a resume
/// point falls in, and every other question, take the scalar search.
pub(super) fn enumerate_under_by<S: Sink>(
    problem: &Problem,
    prefix: &[u8],
    start_after: Option<&[u8]>,
    sink: &mut S,
    path: Path,
) -> ControlFlow<()> {
    let d = prefix.len();
    let bound = match start_after {
        // A full-length prefix is one board, which must come strictly after the bound.
        Some(after) if after[..d] > *prefix || (after.len() == d && after == prefix) => {
            return ControlFlow::Continue(());
        }
        Some(after) if after[..d] == *prefix => Some(after),
        _ => None,
    };
    let n = problem.n() as usize;
    let lanes = match path {
        Path::Lanes(simd) if plain(problem) => {
            lockstep::subtree_depth(n, d).map(|depth| (simd, depth))
        }
        _ => None,
    };
    let mut search = Backtrack::new(problem, problem.fundamental());
    let Some((simd, depth)) = lanes else {
        let mut visitor = Emit {
            sink,
            fundamental: problem.fundamental(),
        };
        return search.under(0, Masks::EMPTY, prefix, bound, &mut visitor);
    };
    let Some(m) = prefix_masks(n, prefix) else {
        return ControlFlow::Continue(());
    };
    // The first subtree is searched alone, up to its end: the subtree a resume point falls
    // in, or else the task's first, whose boards then go out as they are found rather than
    // when the subtree is done (a stream's first message waits for them). The lanes take the
    // subtrees after it.
    let first = match bound {
        Some(bound) => bound[..depth].to_vec(),
        None => match lockstep::first_root(n, prefix, m, depth) {
            Some(root) => root,
            None => return ControlFlow::Continue(()),
        },
    };
    let mut visitor = Emit {
        sink: &mut *sink,
        fundamental: false,
    };
    search.under(0, Masks::EMPTY, &first, bound, &mut visitor)?;
    lockstep::enumerate_roots(n, prefix, m, depth, Some(&first), simd, sink)
}

/// Whether `problem` asks for every solution of the whole board: no fixed queens, not only
/// representatives, one shard. Only these take the lanes.
fn plain(problem: &Problem) -> bool {
    problem.fixed().is_empty() && !problem.fundamental() && problem.shard().parts() == 1
}

/// The attack masks of the row below `prefix` on an `n`×`n` board; `None` when two of its
/// queens attack each other or one is off the board.
fn prefix_masks(n: usize, prefix: &[u8]) -> Option<Masks> {
    let mut m = Masks::EMPTY;
    for &column in prefix {
        let bit = 1u32
            .checked_shl(u32::from(column))
            .filter(|_| usize::from(column) < n)?;
        if m.taken() & bit != 0 {
            return None;
        }
        m = m.child(bit, 1);
    }
    Some(m)
}

/// Counts the solutions of `problem` (and its symmetry classes when no queens are fixed)
/// without producing boards. Polls `cancel` every few thousand nodes.
pub fn count(problem: &Problem, cancel: &AtomicBool) -> Result<Counts, CountError> {
    let symmetric = problem.fixed().is_empty();
    let mut search = Backtrack::new(problem, symmetric);
    if symmetric {
        let mut visitor = Classes {
            cancel,
            solutions: 0,
            classes: 0,
            overflow: false,
        };
        let flow = search.run(None, &mut visitor);
        if visitor.overflow {
            return Err(CountError::Overflow);
        }
        if flow.is_break() {
            return Err(CountError::Cancelled);
        }
        Ok(Counts {
            solutions: visitor.solutions,
            fundamental: Some(visitor.classes),
            turn_fixed: None,
        })
    } else {
        let mut total = 0u64;
        match search.count_plain(0, Masks::EMPTY, &mut total, cancel) {
            ControlFlow::Continue(()) => Ok(Counts {
                solutions: total,
                fundamental: None,
                turn_fixed: None,
            }),
            ControlFlow::Break(()) => Err(CountError::Cancelled),
        }
    }
}

/// What the search does at a full board and at poll time.
trait Visitor {
    /// A complete board.
    fn leaf(&mut self, columns: &[u8]) -> ControlFlow<()>;
    /// Periodic check, at the node whose first rows are `at`.
    fn poll(&mut self, at: &[u8]) -> ControlFlow<()>;
}

/// Enumeration: representatives only when `fundamental` (a limit is the sink's, [`Limited`]).
struct Emit<'a, S: Sink> {
    sink: &'a mut S,
    fundamental: bool,
}

impl<S: Sink> Visitor for Emit<'_, S> {
    fn leaf(&mut self, columns: &[u8]) -> ControlFlow<()> {
        if self.fundamental && class_size(columns).is_none() {
            return ControlFlow::Continue(());
        }
        self.sink.push(columns)
    }

    fn poll(&mut self, at: &[u8]) -> ControlFlow<()> {
        self.sink.poll(at)
    }
}

/// Counting over representatives: each adds its class size to the solutions.
struct Classes<'a> {
    cancel: &'a AtomicBool,
    solutions: u64,
    classes: u64,
    overflow: bool,
}

impl Visitor for Classes<'_> {
    fn leaf(&mut self, columns: &[u8]) -> ControlFlow<()> {
        if let Some(size) = class_size(columns) {
            self.classes += 1;
            match self.solutions.checked_add(size) {
                Some(total) => self.solutions = total,
                None => {
                    self.overflow = true;
                    return ControlFlow::Break(());
                }
            }
        }
        ControlFlow::Continue(())
    }

    fn poll(&mut self, _: &[u8]) -> ControlFlow<()> {
        cancelled(self.cancel)
    }
}

/// `Break` when the flag is raised.
fn cancelled(cancel: &AtomicBool) -> ControlFlow<()> {
    if cancel.load(Ordering::Relaxed) {
        ControlFlow::Break(())
    } else {
        ControlFlow::Continue(())
    }
}

/// The state of one search: per-row allowed columns, the partial board, the shard split.
struct Backtrack {
    n: usize,
    full: u32,
    /// Allowed columns per row from the fixed queens, before symmetry pruning.
    base: [u32; MAX],
    /// Allowed columns per row now (with the corner masks of the current row-0 column).
    allowed: [u32; MAX],
    /// Whether the search is restricted to symmetry-class representatives.
    symmetric: bool,
    columns: [u8; MAX],
    nodes: u64,
    /// Depth whose prefixes are dealt to the parts (0: the root alone, all in part 0).
    split: usize,
    parts: u64,
    part: u64,
    /// Prefixes at the split depth seen so far, in lexicographic order.
    prefix: u64,
}

impl Backtrack {
    fn new(problem: &Problem, symmetric: bool) -> Backtrack {
        let n = problem.n() as usize;
        let mut base = [0u32; MAX];
        base[..n].copy_from_slice(&problem.allowed_rows());
        let mut search = Backtrack {
            n,
            full: full_mask(problem.n()),
            base,
            allowed: base,
            symmetric,
            columns: [0; MAX],
            nodes: 0,
            split: 0,
            parts: u64::from(problem.shard().parts()),
            part: u64::from(problem.shard().index),
            prefix: 0,
        };
        if symmetric {
            // Row 0 of a representative lies in the left half (its mirror would be smaller).
            search.allowed[0] &= search.full >> (n / 2);
        }
        search.split = search.choose_split();
        search
    }

    /// The shallowest depth with enough prefixes for the parts, within a node budget.
    fn choose_split(&mut self) -> usize {
        if self.parts <= 1 || self.n <= 1 {
            return 0;
        }
        let target = (self.parts * PREFIXES_PER_PART).min(MAX_SPLIT_PREFIXES);
        let mut budget = SPLIT_NODE_BUDGET;
        let mut depth = 1;
        while depth < self.n - 1 {
            match self.prefixes(0, Masks::EMPTY, depth, &mut budget) {
                Some(found) if found >= target => return depth,
                Some(_) => depth += 1,
                None => return depth - 1,
            }
        }
        depth
    }

    /// The columns row `row` may take below a node with masks `m`.
    #[inline(always)]
    fn avail(&self, row: usize, m: Masks) -> u32 {
        self.allowed[row] & !m.taken()
    }

    /// Number of nodes at `depth` below the node at `row`; `None` when the budget runs out.
    fn prefixes(&mut self, row: usize, m: Masks, depth: usize, budget: &mut u64) -> Option<u64> {
        if row == depth {
            return Some(1);
        }
        *budget = budget.checked_sub(1)?;
        let mut total = 0;
        for bit in bits(self.avail(row, m)) {
            self.place(row, bit);
            total += self.prefixes(row + 1, m.child(bit, 1), depth, budget)?;
        }
        Some(total)
    }

    /// Records the queen of `row`; at row 0 of a symmetric search, sets the corner masks.
    #[inline]
    fn place(&mut self, row: usize, bit: u32) {
        let column = bit.trailing_zeros();
        self.columns[row] = column as u8;
        if row == 0 && self.symmetric {
            for r in 1..self.n {
                self.allowed[r] =
                    self.base[r] & corner_mask(self.n as u32, column, r as u32, self.full);
            }
        }
    }

    /// Whether the node just entered at the split depth belongs to this part (and counts it).
    #[inline]
    fn in_part(&mut self) -> bool {
        let mine = self.prefix % self.parts == self.part;
        self.prefix += 1;
        mine
    }

    /// Runs the search from the root, after `start_after` when given.
    fn run<V: Visitor>(&mut self, start_after: Option<&[u8]>, v: &mut V) -> ControlFlow<()> {
        match start_after {
            Some(bound) => self.tight(0, Masks::EMPTY, bound, v),
            None => self.free(0, Masks::EMPTY, v),
        }
    }

    /// Counts a node at `row` and polls the visitor every [`POLL_EVERY`] nodes.
    #[inline]
    fn tick<V: Visitor>(&mut self, row: usize, v: &mut V) -> ControlFlow<()> {
        self.nodes += 1;
        if self.nodes.is_multiple_of(POLL_EVERY) {
            v.poll(&self.columns[..row])?;
        }
        ControlFlow::Continue(())
    }

    /// Places `bit` in `row` of the node with masks `m`, and visits every board below: the
    /// board itself when `row` is the last.
    #[inline(always)]
    fn enter<V: Visitor>(&mut self, row: usize, m: Masks, bit: u32, v: &mut V) -> ControlFlow<()> {
        self.place(row, bit);
        if row + 1 == self.n {
            v.leaf(&self.columns[..self.n])
        } else {
            self.free(row + 1, m.child(bit, 1), v)
        }
    }

    /// Visits every board below the node at `row`.
    fn free<V: Visitor>(&mut self, row: usize, m: Masks, v: &mut V) -> ControlFlow<()> {
        if row == self.split && !self.in_part() {
            return ControlFlow::Continue(());
        }
        self.tick(row, v)?;
        if row > 0 && self.split <= row && row + 2 <= self.n {
            return self.descend(row, m, v);
        }
        for bit in bits(self.avail(row, m)) {
            self.enter(row, m, bit, v)?;
        }
        ControlFlow::Continue(())
    }

    /// [`Backtrack::free`] below a node at `top` (not row 0, no split below it, two rows or
    /// more left), without recursion: an explicit stack of the columns each row has left,
    /// and the last two rows in one step (most nodes of the tree are last-row dead ends,
    /// each a mask to read here rather than a call to make). Same boards, same order, same
    /// polls at the nodes it enters.
    fn descend<V: Visitor>(&mut self, top: usize, m: Masks, v: &mut V) -> ControlFlow<()> {
        let (n, last) = (self.n, self.n - 1);
        let mut left = [0u32; MAX];
        let mut masks = [Masks::EMPTY; MAX];
        let mut row = top;
        masks[row] = m;
        left[row] = self.avail(row, m);
        loop {
            let avail = left[row];
            if avail == 0 {
                if row == top {
                    return ControlFlow::Continue(());
                }
                row -= 1;
                continue;
            }
            let bit = avail & avail.wrapping_neg();
            left[row] = avail ^ bit;
            self.columns[row] = bit.trailing_zeros() as u8;
            let child = masks[row].child(bit, 1);
            if row + 2 == n {
                for end in bits(self.allowed[last] & !child.taken()) {
                    self.columns[last] = end.trailing_zeros() as u8;
                    v.leaf(&self.columns[..n])?;
                }
                continue;
            }
            self.tick(row + 1, v)?;
            row += 1;
            masks[row] = child;
            left[row] = self.avail(row, child);
        }
    }

    /// Visits the boards below the node at `row` that come strictly after `bound`, given that
    /// rows above `row` equal `bound`'s.
    fn tight<V: Visitor>(
        &mut self,
        row: usize,
        m: Masks,
        bound: &[u8],
        v: &mut V,
    ) -> ControlFlow<()> {
        if row == self.split && !self.in_part() {
            return ControlFlow::Continue(());
        }
        self.tick(row, v)?;
        let b = u32::from(bound[row]);
        let avail = self.avail(row, m);
        if row < self.split {
            // Skipped subtrees still own prefixes at the split depth: number them.
            self.skip_prefixes(row, m, avail & ((1u32 << b) - 1));
        }
        let on = avail & (1u32 << b);
        if on != 0 && row + 1 < self.n {
            self.place(row, on);
            self.tight(row + 1, m.child(on, 1), bound, v)?;
        }
        for bit in bits(avail & !(((2u64 << b) - 1) as u32)) {
            self.enter(row, m, bit, v)?;
        }
        ControlFlow::Continue(())
    }

    /// Visits the boards below the node at `row` whose rows start with `prefix` (and come
    /// after `bound`, whose rows up to the prefix's length equal it, when given).
    fn under<V: Visitor>(
        &mut self,
        row: usize,
        m: Masks,
        prefix: &[u8],
        bound: Option<&[u8]>,
        v: &mut V,
    ) -> ControlFlow<()> {
        if row == prefix.len() {
            return match bound {
                Some(bound) => self.tight(row, m, bound, v),
                None => self.free(row, m, v),
            };
        }
        if row == self.split && !self.in_part() {
            return ControlFlow::Continue(());
        }
        self.tick(row, v)?;
        let avail = self.avail(row, m);
        let p = u32::from(prefix[row]);
        if row < self.split {
            self.skip_prefixes(row, m, avail & ((1u32 << p) - 1));
        }
        let on = avail & (1u32 << p);
        if on == 0 {
            return ControlFlow::Continue(());
        }
        self.place(row, on);
        if row + 1 == self.n {
            return v.leaf(&self.columns[..self.n]);
        }
        self.under(row + 1, m.child(on, 1), prefix, bound, v)
    }

    /// Advances the prefix numbering past the subtrees of `row`'s columns in `columns`.
    fn skip_prefixes(&mut self, row: usize, m: Masks, columns: u32) {
        let mut unlimited = u64::MAX;
        for bit in bits(columns) {
            self.place(row, bit);
            let below = self.prefixes(row + 1, m.child(bit, 1), self.split, &mut unlimited);
            self.prefix += below.unwrap_or(0);
        }
    }

    /// The counting path for problems without symmetry (fixed queens): no boards, the last
    /// row counted by its free columns.
    fn count_plain(
        &mut self,
        row: usize,
        m: Masks,
        total: &mut u64,
        cancel: &AtomicBool,
    ) -> ControlFlow<()> {
        if row == self.split && !self.in_part() {
            return ControlFlow::Continue(());
        }
        self.nodes += 1;
        if self.nodes.is_multiple_of(POLL_EVERY) {
            cancelled(cancel)?;
        }
        let avail = self.avail(row, m);
        if row + 1 == self.n {
            *total += u64::from(avail.count_ones());
            return ControlFlow::Continue(());
        }
        for bit in bits(avail) {
            self.count_plain(row + 1, m.child(bit, 1), total, cancel)?;
        }
        ControlFlow::Continue(())
    }
}
